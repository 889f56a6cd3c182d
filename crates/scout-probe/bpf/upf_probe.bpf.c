// SPDX-License-Identifier: (MIT OR GPL-2.0)
//
// Scout's UPF probe: TC-BPF programs on a UPF's N3 and N6 interfaces (clsact ingress and egress).
// Each sees a packet on its side, computes the packet's identity (the same 32-bit-word hash as
// `identity` in crates/scout-wire/src/ip.rs), and pairs the two sightings of one packet
// in `pending`, a set-associative table with least-recently-inserted replacement per set (an LRU
// table in the sense of a CPU cache; see docs/probe.md for why not BPF_MAP_TYPE_LRU_HASH). A pair
// goes to user space through a ring buffer, or, in histogram mode, only into a per-CPU log2
// histogram of the delay. Every sighting, pair, duplicate, parse failure, sighting given up
// (expired, evicted, set busy) and ring-buffer reservation failure is counted in a per-CPU block.
// Programs never change or drop a packet (TC_ACT_UNSPEC).
//
// Compiled with clang -target bpf -mcpu=v3 -g (BTF); only UAPI structures are read (struct
// __sk_buff and the packet), so the object runs on any kernel with BTF, TC clsact, ring buffers
// and BPF atomics (5.12+).

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define SIDE_N3 0
#define SIDE_N6 1

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8

// Counters (indexes into `struct counters`), mirrored in COUNTERS in crates/scout-probe/src/lib.rs.
enum {
	ST_N3_SIGHTINGS,
	ST_N6_SIGHTINGS,
	ST_PAIRS,
	ST_RINGBUF_FULL,
	ST_DUPLICATES,
	ST_NOT_IP,
	ST_NOT_GTPU,
	ST_GTPU_NOT_GPDU,
	ST_MALFORMED,
	// A waiting sighting given up, per side of the sighting (N3, then N6):
	ST_EXPIRED_N3, // older than the window when its set was next used for it
	ST_EXPIRED_N6,
	ST_EVICTED_N3, // its set was full and it was the oldest there
	ST_EVICTED_N6,
	ST_BUSY_N3, // the set's lock could not be taken (the sighting was not stored or paired)
	ST_BUSY_N6,
	ST_MAX,
};

// Settings, fixed when the object is loaded (read-only data: the verifier removes the code that
// a setting switches off).
const volatile __u32 histogram_only = 0;
const volatile __u32 gtp_port = 2152;
const volatile __u32 set_mask = 1023; // sets in a table, less one (a power of two)
// Pairing on the CPU that saw the first sighting only (--pairing same-cpu, for a UPF that forwards
// in the kernel, where a packet leaves on the CPU it arrived on): each CPU has a table of its own,
// `pending` sets [cpu << cpu_shift, ...), and no lock is taken, since the programs of one CPU never
// interrupt one another (ingress runs in softirq, egress with bottom halves disabled).
const volatile __u32 per_cpu = 0;
const volatile __u32 cpu_shift = 10;
// A set's occupancy word is word `set << occ_shift` of `occupancy`: 0 with a table per CPU (the
// words of eight sets share a cache line, which only their CPU uses), 3 with a shared table (a
// line to each set, so that a CPU taking one set's lock does not take the line from a CPU
// working on another).
const volatile __u32 occ_shift = 0;
const volatile __u64 window_ns = 2000000000ULL;

// The pending table. A set is one cache line of tags — 16 bits of the key of each of its 28 ways —
// followed by the ways' sightings, 32 bytes each, two to a line. Which ways hold a sighting, and on
// which side, is not in the set but in its word of `occupancy` (below): a set's lines are read only
// when a sighting may have its twin there, and written otherwise.
#define WAYS 28
#define TAG_WORDS (WAYS / 4)

struct slot {
	__u64 key;
	__u64 t_ns;
	__u32 teid;
	__u32 bytes;
	__u16 seq;
	__u8 side;
	__u8 qfi;
	__u8 has_seq;
	__u8 pad[3];
};

struct set {
	union {
		__u64 tags[TAG_WORDS]; // four 16-bit tags each, way 4i + l in bits 16l..16l+15 of word i
		__u16 tag[WAYS];
	};
	__u64 pad;
	struct slot slot[WAYS];
};

_Static_assert(sizeof(struct slot) == 32, "two sightings to a cache line");
_Static_assert(sizeof(struct set) == 15 * 64, "a set is fifteen cache lines");

// A set's occupancy word, one per set in `occupancy` (8 bytes a set: 2 KiB for the default table,
// so it stays in the nearest caches while the sets' own lines do not): the ways that hold a
// sighting, which of those are N6 sightings, the hand (the next way a full set gives up: round
// robin, so nearly the oldest insert), and, with a shared table, the set's lock.
#define OCC_MASK ((1ULL << WAYS) - 1) // bits 0-27: the way holds a sighting
#define HAND_SHIFT 28		      // bits 28-32: the hand
#define N6_SHIFT 33		      // bits 33-60: the way's sighting is an N6 one
#define LOCKED (1ULL << 63)

// A pair, for user space.
struct pair {
	__u64 key;
	__u64 t_first;
	__u64 t_second;
	__u32 teid;
	__u32 bytes_first;
	__u32 bytes_second;
	__u8 first_side;
	__u8 qfi;
	__u8 v6;
	__u8 proto;
	__u8 src[16];
	__u8 dst[16];
	__u16 sport;
	__u16 dport;
	__u16 gtp_seq;
	__u8 has_seq;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	// Mappable: the values start on a page boundary, so each set is cache-line aligned.
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 256); // set at load time (--table-sets)
	__type(key, __u32);
	__type(value, struct set);
} pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256); // as `pending`
	__type(key, __u32);
	__type(value, __u64);
} occupancy SEC(".maps");

// Four ring buffers: a CPU writes to ring `cpu % 4`, so CPUs do not take one ring's lock in turn.
// (Map-in-map would give one per CPU; the loader used cannot create it.) Sized at load time.
#define RING(name)                                                                                         \
	struct {                                                                                           \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                                                        \
		__uint(max_entries, 1 << 22);                                                              \
	} name SEC(".maps")
RING(pairs0);
RING(pairs1);
RING(pairs2);
RING(pairs3);

// A CPU's pairs are staged here and go to its ring BATCH at a time, or when the first of them has
// waited `flush_ns`: one ring-buffer reservation (a lock, and a wait for the record's cold cache
// lines) for 32 pairs instead of one for each. Each CPU has its own batch, and the programs of one
// CPU never interrupt one another, so no lock is needed. What is staged when the probe stops is
// read by user space after the programs are detached.
#define BATCH 32

struct batch {
	__u32 n;
	__u32 pad;
	__u64 t_first; // when the first staged pair was made
	struct pair rec[BATCH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch);
} staged SEC(".maps");

const volatile __u64 flush_ns = 1000000ULL;

struct counters {
	__u64 c[ST_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} stats SEC(".maps");

// Histogram mode: [direction (0 UL = N3 first, 1 DL)][log2 of the delay in ns].
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

// The identity hash: see `identity` in crates/scout-wire/src/ip.rs. Two lanes, A and
// B: the IP header's words go alternately into A and B (the first into A), then the four words
// after it the same way, so that the two chains of multiplies run side by side.
struct key2 {
	__u64 a;
	__u64 b;
};

#define KEY2_INIT {.a = 0xcbf29ce484222325ULL, .b = 0x6a09e667f3bcc908ULL}

static __always_inline __u64 mix(__u64 h, __u32 w)
{
	h = (h ^ (__u64)w) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

static __always_inline __u64 finish(struct key2 *k)
{
	__u64 h = k->a ^ ((k->b << 32) | (k->b >> 32));
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	return h ^ (h >> 33);
}

// The inner IP packet of a sighting: its identity, addresses and transport ports. (Copying the
// addresses from the frame only when a pair is made would need the header's offset, whose exact
// value per parse path then multiplies the states the verifier walks through the set lock's loop.)
struct inner {
	__u64 key;
	__u8 v6;
	__u8 proto;
	__u16 sport;
	__u16 dport;
	__u8 src[16];
	__u8 dst[16];
};

// Mixes the IP header at `h` into the identity key (20 readable bytes for IPv4, 40 for IPv6) and
// fills the packet's addresses and protocol; `*hl` is the header length that precedes the 16
// identity bytes, `*avail` how many bytes the packet has after it. Returns -1 when not IP.
static __always_inline int ip_header(const __u8 *h, struct inner *in, struct key2 *k, __u32 *hl, __u32 *avail)
{
	if ((h[0] >> 4) == 4) {
		__u32 ihl = (h[0] & 0x0f) * 4;
		__u32 total = ((__u32)h[2] << 8) | h[3];
		if (ihl < 20 || total < ihl)
			return -1;
		k->a = mix(k->a, *(__u32 *)&h[0]);
		k->b = mix(k->b, *(__u32 *)&h[4]);
		k->a = mix(k->a, (__u32)h[9]);
		k->b = mix(k->b, *(__u32 *)&h[12]);
		k->a = mix(k->a, *(__u32 *)&h[16]);
		in->v6 = 0;
		in->proto = h[9];
		__builtin_memset(in->src, 0, 32);
		__builtin_memcpy(in->src, &h[12], 4);
		__builtin_memcpy(in->dst, &h[16], 4);
		*hl = ihl;
		*avail = total - ihl;
		return 0;
	}
	if ((h[0] >> 4) == 6) {
		__u32 plen = ((__u32)h[4] << 8) | h[5];
		k->a = mix(k->a, *(__u32 *)&h[0]);
		k->b = mix(k->b, *(__u32 *)&h[4] & 0x00ffffff);
#pragma unroll
		for (int i = 8; i < 40; i += 8) {
			k->a = mix(k->a, *(__u32 *)&h[i]);
			k->b = mix(k->b, *(__u32 *)&h[i + 4]);
		}
		in->v6 = 1;
		in->proto = h[6];
		__builtin_memcpy(in->src, &h[8], 16);
		__builtin_memcpy(in->dst, &h[24], 16);
		*hl = 40;
		*avail = plen;
		return 0;
	}
	return -1;
}

// Mixes the 16 bytes after the IP header into the key — zero beyond the packet's own length
// (Ethernet padding is not part of it) — and finishes it; takes the ports from them.
static __always_inline void l4_words(struct inner *in, struct key2 *k, __u32 *w, __u32 avail)
{
	__u8 *wb = (__u8 *)w;
#pragma unroll
	for (int i = 0; i < 16; i++) {
		if (i >= avail)
			wb[i] = 0;
	}
	k->a = mix(k->a, w[0]);
	k->b = mix(k->b, w[1]);
	k->a = mix(k->a, w[2]);
	k->b = mix(k->b, w[3]);
	in->key = finish(k);
	in->sport = 0;
	in->dport = 0;
	if (in->proto == 6 || in->proto == 17 || in->proto == 132) {
		in->sport = bpf_ntohs((__u16)(w[0] & 0xffff));
		in->dport = bpf_ntohs((__u16)(w[0] >> 16));
	}
}

// Parses the IP packet at `off` with bpf_skb_load_bytes and computes its identity. Returns 0 on
// success.
static __always_inline int identify(struct __sk_buff *skb, __u32 off, struct inner *in)
{
	__u8 h[40];
	__u32 w[4] = {0, 0, 0, 0};
	struct key2 k = KEY2_INIT;
	__u32 hl, avail;

	if (bpf_skb_load_bytes(skb, off, h, 20) < 0)
		return -1;
	if ((h[0] >> 4) == 6 && bpf_skb_load_bytes(skb, off, h, 40) < 0)
		return -1;
	if (ip_header(h, in, &k, &hl, &avail) < 0)
		return -1;
	// Byte by byte when fewer than 16 bytes follow in the frame.
	__u32 l4 = off + hl;
	__u8 *wb = (__u8 *)w;
	if (bpf_skb_load_bytes(skb, l4, w, 16) < 0) {
		for (int i = 0; i < 16; i++) {
			if (bpf_skb_load_bytes(skb, l4 + i, &wb[i], 1) < 0)
				break;
		}
	}
	l4_words(in, &k, w, avail);
	return 0;
}

// The offset of the IP header and its ethertype, after Ethernet and up to two VLAN tags
// (`l2` = 0: a layer-3 device such as a TUN, whose packets start with the IP header).
static __always_inline int l3_offset(struct __sk_buff *skb, int l2, __u32 *off)
{
	if (!l2) {
		*off = 0;
		return 0;
	}
	__u16 et;
	if (bpf_skb_load_bytes(skb, 12, &et, 2) < 0)
		return -1;
	__u32 o = ETH_HLEN;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (et == bpf_htons(ETH_P_8021Q) || et == bpf_htons(ETH_P_8021AD)) {
			if (bpf_skb_load_bytes(skb, o + 2, &et, 2) < 0)
				return -1;
			o += 4;
		}
	}
	if (et != bpf_htons(ETH_P_IP) && et != bpf_htons(ETH_P_IPV6))
		return -1;
	*off = o;
	return 0;
}

struct gtp_info {
	__u32 teid;
	__u16 seq;
	__u8 qfi;
	__u8 has_seq;
};

// Parses with bpf_skb_load_bytes (any skb: paged data too). Returns 0, or -(counter + 1). A
// subprogram of its own (a BPF-to-BPF call), so that its code, rarely run, stays out of the
// common path's instruction-cache lines.
static __noinline int parse_slow(struct __sk_buff *skb, int side, int l2, struct inner *inp,
				 struct gtp_info *gi)
{
	__u32 off;
	struct inner in = {};
	__u32 teid = 0;
	__u8 qfi = 0xff, has_seq = 0;
	__u16 seq = 0;

	if (l3_offset(skb, l2, &off) < 0) {
		return -(ST_NOT_IP + 1);
	}
	if (side == SIDE_N3) {
		// Outer IP, UDP to or from the GTP-U port, GTP-U (TS 29.281 §5).
		__u8 v;
		if (bpf_skb_load_bytes(skb, off, &v, 1) < 0) {
			return -(ST_NOT_IP + 1);
		}
		__u32 udp;
		__u8 proto;
		if ((v >> 4) == 4) {
			if (bpf_skb_load_bytes(skb, off + 9, &proto, 1) < 0)
				return -(ST_MALFORMED + 1);
			udp = off + (v & 0x0f) * 4;
		} else if ((v >> 4) == 6) {
			if (bpf_skb_load_bytes(skb, off + 6, &proto, 1) < 0)
				return -(ST_MALFORMED + 1);
			udp = off + 40;
		} else {
			return -(ST_NOT_IP + 1);
		}
		__u16 ports[2];
		if (proto != 17 || bpf_skb_load_bytes(skb, udp, ports, 4) < 0 ||
		    (ports[0] != bpf_htons((__u16)gtp_port) && ports[1] != bpf_htons((__u16)gtp_port))) {
			return -(ST_NOT_GTPU + 1);
		}
		__u8 g[12];
		__u32 o = udp + 8;
		if (bpf_skb_load_bytes(skb, o, g, 8) < 0 || (g[0] >> 5) != 1 || !(g[0] & 0x10)) {
			return -(ST_NOT_GTPU + 1);
		}
		if (g[1] != 255) {
			return -(ST_GTPU_NOT_GPDU + 1);
		}
		teid = ((__u32)g[4] << 24) | ((__u32)g[5] << 16) | ((__u32)g[6] << 8) | g[7];
		__u8 next = 0;
		if (g[0] & 0x07) {
			if (bpf_skb_load_bytes(skb, o + 8, &g[8], 4) < 0) {
				return -(ST_MALFORMED + 1);
			}
			if (g[0] & 0x02) {
				seq = ((__u16)g[8] << 8) | g[9];
				has_seq = 1;
			}
			next = (g[0] & 0x04) ? g[11] : 0;
			o += 12;
		} else {
			o += 8;
		}
		// Extension headers (§5.2): at most 4, the PDU Session Container (0x85) gives the QFI.
		for (int i = 0; i < 4; i++) {
			if (!next)
				break;
			__u8 e[4];
			if (bpf_skb_load_bytes(skb, o, e, 4) < 0 || e[0] == 0) {
				return -(ST_MALFORMED + 1);
			}
			__u32 n = (__u32)e[0] * 4;
			if (next == 0x85)
				qfi = e[2] & 0x3f;
			if (bpf_skb_load_bytes(skb, o + n - 1, &next, 1) < 0) {
				return -(ST_MALFORMED + 1);
			}
			o += n;
		}
		if (next) {
			return -(ST_MALFORMED + 1);
		}
		if (identify(skb, o, &in) < 0) {
			return -(ST_MALFORMED + 1);
		}
	} else {
		if (identify(skb, off, &in) < 0) {
			return -(ST_NOT_IP + 1);
		}
	}
	gi->teid = teid;
	gi->seq = seq;
	gi->qfi = qfi;
	gi->has_seq = has_seq;
	*inp = in;
	return 0;
}

// Identity of the IP packet at `off`, reading the packet directly. Returns 1 when the bytes are
// not all in the linear data (the caller then uses the helper path), -1 when not IP.
static __always_inline int identify_direct(void *data, void *end, __u32 off, struct inner *in)
{
	struct key2 k = KEY2_INIT;
	__u8 *h = data + off;
	__u32 hl, avail;
	__u32 w[4];

	if ((void *)(h + 40) > end)
		return 1;
	if (ip_header(h, in, &k, &hl, &avail) < 0)
		return -1;
	hl &= 0x7f;
	__u8 *t = h + hl;
	if ((void *)(t + 16) > end)
		return 1;
	__builtin_memcpy(w, t, 16);
	l4_words(in, &k, w, avail);
	return 0;
}

// The common case read directly from the packet: Returns 0, 1 (use the helper path), or
// -(counter + 1).
static __always_inline int parse_direct(struct __sk_buff *skb, int side, int l2, struct inner *in,
					struct gtp_info *gi)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 off = 0;

	if (l2) {
		__u8 *e = data;
		if ((void *)(e + 22) > end)
			return 1;
		__u16 et = *(__u16 *)&e[12];
		off = 14;
		if (et == bpf_htons(ETH_P_8021Q) || et == bpf_htons(ETH_P_8021AD)) {
			et = *(__u16 *)&e[16];
			off = 18;
			if (et == bpf_htons(ETH_P_8021Q)) {
				et = *(__u16 *)&e[20];
				off = 22;
			}
		}
		if (et != bpf_htons(ETH_P_IP) && et != bpf_htons(ETH_P_IPV6))
			return -(ST_NOT_IP + 1);
	}
	if (side == SIDE_N6) {
		int r = identify_direct(data, end, off, in);
		return r < 0 ? -(ST_NOT_IP + 1) : r;
	}
	__u8 *ip = data + off;
	if ((void *)(ip + 40) > end)
		return 1;
	__u32 udp;
	if ((ip[0] >> 4) == 4) {
		if (ip[9] != 17)
			return -(ST_NOT_GTPU + 1);
		udp = off + (ip[0] & 0x0f) * 4;
	} else if ((ip[0] >> 4) == 6) {
		if (ip[6] != 17)
			return -(ST_NOT_GTPU + 1);
		udp = off + 40;
	} else {
		return -(ST_NOT_IP + 1);
	}
	udp &= 0xff;
	__u8 *u = data + udp;
	if ((void *)(u + 20) > end)
		return 1;
	if (*(__u16 *)&u[0] != bpf_htons((__u16)gtp_port) && *(__u16 *)&u[2] != bpf_htons((__u16)gtp_port))
		return -(ST_NOT_GTPU + 1);
	__u8 *g = u + 8;
	if ((g[0] >> 5) != 1 || !(g[0] & 0x10))
		return -(ST_NOT_GTPU + 1);
	if (g[1] != 255)
		return -(ST_GTPU_NOT_GPDU + 1);
	gi->teid = bpf_ntohl(*(__u32 *)&g[4]);
	__u32 o = udp + 16;
	__u8 next = 0;
	if (g[0] & 0x07) {
		if (g[0] & 0x02) {
			gi->seq = ((__u16)g[8] << 8) | g[9];
			gi->has_seq = 1;
		}
		next = (g[0] & 0x04) ? g[11] : 0;
		o += 4;
	}
	for (int i = 0; i < 4 && next; i++) {
		o &= 0x1ff;
		__u8 *x = data + o;
		if ((void *)(x + 4) > end)
			return 1;
		__u32 n = (__u32)x[0] * 4;
		if (n == 0 || n > 64)
			return -(ST_MALFORMED + 1);
		if (next == 0x85)
			gi->qfi = x[2] & 0x3f;
		__u8 *nx = data + ((o + n - 1) & 0x3ff);
		if ((void *)(nx + 1) > end)
			return 1;
		next = *nx;
		o += n;
	}
	if (next)
		return -(ST_MALFORMED + 1);
	int r = identify_direct(data, end, o & 0x3ff, in);
	return r < 0 ? -(ST_MALFORMED + 1) : r;
}

// Takes a set's lock (a shared table): compare-and-swap on its occupancy word `o`, reading first
// while another CPU holds it; `*v` is then the word, unlocked. Gives up after LOCK_TRIES reads (a
// holder preempted with its vCPU, on a virtual machine): the sighting is then counted as busy
// rather than the softirq stalled. Both hooks run with bottom halves disabled, so no holder is
// ever interrupted by another of these programs on its own CPU.
#define LOCK_TRIES 1024

static __always_inline int set_lock(__u64 *o, __u64 *v)
{
	if (per_cpu) {
		*v = *o;
		return 0;
	}
	for (int i = 0; i < LOCK_TRIES; i++) {
		__u64 x = *(volatile __u64 *)o;
		if (!(x & LOCKED) && __sync_val_compare_and_swap(o, x, x | LOCKED) == x) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

// Writes the set's new occupancy word `v` (unlocked): releases the lock after the set's writes.
static __always_inline void set_unlock(__u64 *o, __u64 v)
{
	if (per_cpu) {
		*o = v;
		return;
	}
#if defined(__TARGET_ARCH_x86)
	// x86 keeps stores in order (TSO): a plain store releases the lock after the set's writes,
	// without the locked instruction's wait for the store buffer to drain.
	*(volatile __u64 *)o = v;
#else
	__sync_lock_test_and_set(o, v);
#endif
}

static __always_inline void store(struct set *s, __u32 w, __u64 key, __u64 t, struct gtp_info *gi, __u32 bytes,
				  int side)
{
	if (w >= WAYS)
		return;
	struct slot *o = &s->slot[w];
	o->key = key;
	o->t_ns = t;
	o->teid = gi->teid;
	o->bytes = bytes;
	o->seq = gi->seq;
	o->side = side;
	o->qfi = gi->qfi;
	o->has_seq = gi->has_seq;
}

// A key's tag: its top 16 bits (the set index comes from the bottom ones), never 0.
static __always_inline __u64 tag_of(__u64 key)
{
	__u64 t = key >> 48;
	return t ? t : 1;
}

#define LANES_ONE 0x0001000100010001ULL
#define LANES_HIGH 0x8000800080008000ULL
// The top bit of each 16-bit lane of x that may be zero: none when no lane is, and the lowest one
// marked always is (a lane above a zero lane can be marked too: candidates, which the full key
// then decides).
#define ZERO_LANES(x) (((x) - LANES_ONE) & ~(x) & LANES_HIGH)

// The four lane marks of ZERO_LANES as bits 0-3, without a loop: the marks, shifted down to bits
// 0, 16, 32 and 48, multiplied into a constant that lands them on bits 45-48 (no two partial
// products share a bit, so nothing carries).
static __always_inline __u64 lane_bits(__u64 z)
{
	return (((z >> 15) * 0x0000200040008001ULL) >> 45) & 0xf;
}

// The bits set in x (SWAR).
static __always_inline __u64 popcount(__u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (x * 0x0101010101010101ULL) >> 56;
}

// The index of the lowest bit set in m (nonzero): the bits below it, counted.
static __always_inline __u32 lowest_way(__u64 m)
{
	return (__u32)popcount((m & -m) - 1);
}

// Among the ways in `cand` (their tags matched), the one holding `key` with the earliest time, or
// -1; the others holding `key` (the same packet seen again on that side: a retransmission with
// identical bytes, or two capture points) go to `*dups`. A subprogram of its own: the common case,
// one candidate, is decided inline.
static __noinline int find_all(struct set *s, __u64 cand, __u64 key, __u64 *dups)
{
	int best = -1;
	__u64 bt = 0, d = 0;
	for (int n = 0; n < WAYS && cand; n++) {
		__u32 w = lowest_way(cand);
		cand &= cand - 1;
		if (w >= WAYS)
			break;
		struct slot *o = &s->slot[w];
		if (o->key != key)
			continue;
		if (best < 0 || (__s64)(o->t_ns - bt) < 0) {
			if (best >= 0)
				d |= 1ULL << best;
			best = w;
			bt = o->t_ns;
		} else {
			d |= 1ULL << w;
		}
	}
	*dups = d;
	return best;
}

static __always_inline void histogram(__u64 d, int first_side)
{
	__u32 b = 0;
#pragma unroll
	for (int i = 32; i > 0; i >>= 1) {
		if (d >= (1ULL << i)) {
			d >>= i;
			b += i;
		}
	}
	__u32 idx = (first_side == SIDE_N3 ? 0 : 64) + (b & 63);
	__u64 *h = bpf_map_lookup_elem(&hist, &idx);
	if (h)
		*h += 1;
}

// Sends a CPU's staged pairs to its ring (`cpu % 4`); returns 0, or -1 when the ring was full.
static __always_inline int flush(struct batch *b)
{
	__u32 n = b->n;
	if (n > BATCH)
		n = BATCH;
	__u64 size = (__u64)n * sizeof(struct pair);
	long r;
	switch (bpf_get_smp_processor_id() & 3) {
	case 0:
		r = bpf_ringbuf_output(&pairs0, b->rec, size, BPF_RB_NO_WAKEUP);
		break;
	case 1:
		r = bpf_ringbuf_output(&pairs1, b->rec, size, BPF_RB_NO_WAKEUP);
		break;
	case 2:
		r = bpf_ringbuf_output(&pairs2, b->rec, size, BPF_RB_NO_WAKEUP);
		break;
	default:
		r = bpf_ringbuf_output(&pairs3, b->rec, size, BPF_RB_NO_WAKEUP);
		break;
	}
	b->n = 0;
	return r < 0 ? -1 : 0;
}

static __always_inline int handle(struct __sk_buff *skb, int side, int l2, int ingress)
{
	// The sighting's time. At ingress it is taken first, so that parsing is not in it: the
	// packet has arrived. At egress the packet leaves only when this program returns, so the time
	// is taken as late as it can be: after the table's work, right before the pair is committed
	// (the program's own work — cold cache lines after a pause cost microseconds — is part of the
	// packet's stay, as it is of what the UPF's own transmit timestamp sees). One clock read per
	// sighting either way.
	__u64 now = ingress ? bpf_ktime_get_ns() : 0;
	__u32 zero = 0;
	struct counters *c = bpf_map_lookup_elem(&stats, &zero);
	if (!c)
		return TC_ACT_UNSPEC;
	struct inner in;
	struct gtp_info gi = {.qfi = 0xff};
	__u32 bytes = skb->len;

	int r = parse_direct(skb, side, l2, &in, &gi);
	if (r == 1) {
		gi = (struct gtp_info){.qfi = 0xff};
		r = parse_slow(skb, side, l2, &in, &gi);
	}
	if (r < 0) {
		__u32 k = -r - 1;
		if (k < ST_MAX)
			c->c[k] += 1;
		return TC_ACT_UNSPEC;
	}
	c->c[side] += 1;
	__u32 idx = (__u32)in.key & set_mask;
	if (per_cpu)
		idx |= bpf_get_smp_processor_id() << cpu_shift;
	struct set *s = bpf_map_lookup_elem(&pending, &idx);
	__u32 oidx = idx << occ_shift;
	__u64 *ow = bpf_map_lookup_elem(&occupancy, &oidx);
	if (!s || !ow) {
		// A CPU beyond the tables made at load time (CPUs brought online since): not stored.
		c->c[ST_BUSY_N3 + side] += 1;
		return TC_ACT_UNSPEC;
	}
	__u64 v;
	if (set_lock(ow, &v) < 0) {
		c->c[ST_BUSY_N3 + side] += 1;
		return TC_ACT_UNSPEC;
	}
	__u64 held = v & OCC_MASK, n6 = (v >> N6_SHIFT) & OCC_MASK;
	// This sighting's twin can only be among the set's sightings of the other side. When there
	// are none — the usual case for a packet's first sighting — the set's lines are not read at
	// all, only written (stores do not wait for a line to come from memory). When there is one —
	// the usual case for the second — its key decides, without the tags. Otherwise the tags of
	// the words that hold such ways, with the first such way's slot read at the same time (two
	// lines from memory at once, not one after the other): there, usually, is the twin.
	__u64 other = held & (side == SIDE_N3 ? n6 : ~n6);
	__u64 tag = tag_of(in.key), dups = 0;
	int hit = -1;
	if (other) {
		__u32 w0 = lowest_way(other);
		if (!(other & (other - 1))) {
			if (w0 < WAYS && s->slot[w0].key == in.key)
				hit = w0;
		} else {
			if (w0 < WAYS)
				(void)*(volatile __u64 *)&s->slot[w0].key;
			__u64 pat = tag * LANES_ONE, m = 0;
#pragma unroll
			for (int i = 0; i < TAG_WORDS; i++) {
				if ((other >> (4 * i)) & 0xf)
					m |= lane_bits(ZERO_LANES(s->tags[i] ^ pat)) << (4 * i);
			}
			m &= other;
			if (m) {
				__u32 w = lowest_way(m);
				if (!(m & (m - 1)) && w < WAYS && s->slot[w].key == in.key)
					hit = w;
				else
					hit = find_all(s, m, in.key, &dups);
			}
		}
	}

	if (hit < 0) {
		// No twin waits: store this sighting, in a free way or in place of the one the hand
		// points at. (The same packet seen again on this side is stored too: which of the two
		// pairs, and that the other is a duplicate, is decided when the twin comes.)
		if (!ingress)
			now = bpf_ktime_get_ns();
		__u64 free = ~held & OCC_MASK;
		__u32 w;
		if (free) {
			w = lowest_way(free);
		} else {
			__u32 h = (v >> HAND_SHIFT) & 31;
			if (h >= WAYS)
				h = 0;
			struct slot *o = &s->slot[h];
			c->c[((__s64)(now - o->t_ns) > (__s64)window_ns ? ST_EXPIRED_N3 : ST_EVICTED_N3) + ((n6 >> h) & 1)] += 1;
			v = (v & ~(31ULL << HAND_SHIFT)) | ((__u64)(h + 1 < WAYS ? h + 1 : 0) << HAND_SHIFT);
			w = h;
		}
		if (w < WAYS) {
			store(s, w, in.key, now, &gi, bytes, side);
			s->tag[w] = tag;
			v |= 1ULL << w;
			if (side == SIDE_N6)
				v |= 1ULL << (N6_SHIFT + w);
			else
				v &= ~(1ULL << (N6_SHIFT + w));
		}
		set_unlock(ow, v);
		return TC_ACT_UNSPEC;
	}

	if ((__u32)hit >= WAYS) {
		set_unlock(ow, v);
		return TC_ACT_UNSPEC;
	}
	// Further sightings of the twin's packet on its side are duplicates: given up, counted.
	v &= ~dups;
	if (dups)
		c->c[ST_DUPLICATES] += popcount(dups);
	struct slot *o = &s->slot[hit];
	if (ingress && (__s64)(now - o->t_ns) > (__s64)window_ns) {
		// Its twin waited longer than the window: that one is given up, this one waits.
		c->c[ST_EXPIRED_N3 + (o->side & 1)] += 1;
		store(s, hit, in.key, now, &gi, bytes, side);
		v ^= 1ULL << (N6_SHIFT + hit); // the way's sighting is now of this side
		set_unlock(ow, v);
		return TC_ACT_UNSPEC;
	}
	struct slot first = *o;
	set_unlock(ow, v & ~(1ULL << hit));

	struct gtp_info *n3 = &gi;
	struct gtp_info fgi = {.teid = first.teid, .seq = first.seq, .qfi = first.qfi, .has_seq = first.has_seq};
	if (first.side == SIDE_N3)
		n3 = &fgi;
	if (histogram_only) {
		if (!ingress)
			now = bpf_ktime_get_ns();
		if ((__s64)(now - first.t_ns) > (__s64)window_ns) {
			c->c[ST_EXPIRED_N3 + (first.side & 1)] += 1;
			c->c[ST_EXPIRED_N3 + side] += 1;
			return TC_ACT_UNSPEC;
		}
		c->c[ST_PAIRS] += 1;
		histogram(now - first.t_ns, first.side);
		return TC_ACT_UNSPEC;
	}
	struct batch *bt = bpf_map_lookup_elem(&staged, &zero);
	if (!bt)
		return TC_ACT_UNSPEC;
	__u32 k = bt->n;
	if (k >= BATCH) {
		// Cannot happen (a full batch is sent at once); kept for the verifier.
		bt->n = 0;
		k = 0;
	}
	struct pair *p = &bt->rec[k];
	p->key = in.key;
	p->t_first = first.t_ns;
	p->teid = n3->teid;
	p->bytes_first = first.bytes;
	p->bytes_second = bytes;
	p->first_side = first.side;
	p->qfi = n3->qfi;
	p->v6 = in.v6;
	p->proto = in.proto;
	__builtin_memcpy(p->src, in.src, 16);
	__builtin_memcpy(p->dst, in.dst, 16);
	p->sport = in.sport;
	p->dport = in.dport;
	p->gtp_seq = n3->seq;
	p->has_seq = n3->has_seq;
	p->pad = 0;
	if (!ingress) {
		now = bpf_ktime_get_ns();
		if ((__s64)(now - first.t_ns) > (__s64)window_ns) {
			// Its twin waited longer than the window (found at egress): both are given up.
			c->c[ST_EXPIRED_N3 + (first.side & 1)] += 1;
			c->c[ST_EXPIRED_N3 + side] += 1;
			return TC_ACT_UNSPEC;
		}
	}
	p->t_second = now;
	c->c[ST_PAIRS] += 1;
	if (k == 0)
		bt->t_first = now;
	bt->n = k + 1;
	// No wakeup: waking the reader costs microseconds, and even asking how much data waits
	// (`bpf_ringbuf_query`) reads the consumer's position, a cache line user space writes: cold
	// after a pause, it put 2 µs between the departure time and the packet's actual departure.
	// The reader drains the rings every 10 ms (4 × 4 MiB hold about 200 000 records).
	if (k + 1 >= BATCH || (__s64)(now - bt->t_first) > (__s64)flush_ns) {
		__u32 sent = k + 1;
		if (flush(bt) < 0)
			c->c[ST_RINGBUF_FULL] += sent;
	}
	return TC_ACT_UNSPEC;
}

SEC("classifier") int n3_ingress(struct __sk_buff *skb) { return handle(skb, SIDE_N3, 1, 1); }
SEC("classifier") int n3_egress(struct __sk_buff *skb) { return handle(skb, SIDE_N3, 1, 0); }
SEC("classifier") int n6_ingress(struct __sk_buff *skb) { return handle(skb, SIDE_N6, 1, 1); }
SEC("classifier") int n6_egress(struct __sk_buff *skb) { return handle(skb, SIDE_N6, 1, 0); }
// Layer-3 devices (TUN, as an Open5GS UPF's ogstun): packets start with the IP header.
SEC("classifier") int n6_l3_ingress(struct __sk_buff *skb) { return handle(skb, SIDE_N6, 0, 1); }
SEC("classifier") int n6_l3_egress(struct __sk_buff *skb) { return handle(skb, SIDE_N6, 0, 0); }

// The floor the kernel's accounting charges any TC program, for bench/probe.sh: one that does
// nothing, and one that only reads the clock (as every sighting does once).
SEC("classifier") int floor_empty(struct __sk_buff *skb) { return TC_ACT_UNSPEC; }
SEC("classifier") int floor_clock(struct __sk_buff *skb)
{
	skb->cb[0] = (__u32)bpf_ktime_get_ns();
	return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
