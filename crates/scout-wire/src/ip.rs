//! Frames → link layer → IP (fragments reassembled) → the transport ports; and the identity key
//! of an inner packet.
//!
//! Link types (tcpdump.org/linktypes.html): 1 Ethernet (802.1Q/802.1ad tags, any depth), 113
//! Linux cooked v1 (SLL), 276 Linux cooked v2 (SLL2, with the interface index), 101/12/14 raw IP,
//! 228 IPv4, 229 IPv6, 0 BSD loopback. IPv6 extension headers (hop-by-hop, routing, destination
//! options, fragment) are walked to the upper layer.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::Cause;

/// A parsed IP header with its upper-layer bytes.
#[derive(Clone, Copy, Debug)]
pub struct Ip<'a> {
    pub v6: bool,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    /// IPv4 identification, IPv6 flow label.
    pub id: u32,
    /// The whole IP packet (header included), cut to its stated length.
    pub packet: &'a [u8],
    /// Bytes after the IP header(s).
    pub l4: &'a [u8],
    /// Fragment: (offset in bytes, more fragments, identification).
    pub frag: Option<(u32, bool, u32)>,
}

/// The link layer's payload, its ethertype and the capture point's details.
#[inline]
pub fn link(linktype: u16, d: &[u8]) -> Result<(u16, &[u8], u32, bool), Cause> {
    let (mut et, mut rest, sub, out) = match linktype {
        1 => {
            if d.len() < 14 {
                return Err("ethernet frame too short");
            }
            (u16::from_be_bytes([d[12], d[13]]), &d[14..], 0, false)
        }
        113 => {
            if d.len() < 16 {
                return Err("SLL header too short");
            }
            let ptype = u16::from_be_bytes([d[0], d[1]]);
            let arphrd = u16::from_be_bytes([d[2], d[3]]);
            (u16::from_be_bytes([d[14], d[15]]), &d[16..], u32::from(arphrd), ptype == 4)
        }
        276 => {
            if d.len() < 20 {
                return Err("SLL2 header too short");
            }
            let ifindex = u32::from_be_bytes([d[4], d[5], d[6], d[7]]);
            (u16::from_be_bytes([d[0], d[1]]), &d[20..], ifindex, d[10] == 4)
        }
        101 | 12 | 14 => match d.first().map(|b| b >> 4) {
            Some(4) => (0x0800, d, 0, false),
            Some(6) => (0x86dd, d, 0, false),
            _ => return Err("raw frame is not IP"),
        },
        228 => (0x0800, d, 0, false),
        229 => (0x86dd, d, 0, false),
        0 => {
            if d.len() < 4 {
                return Err("loopback header too short");
            }
            let fam = u32::from_le_bytes([d[0], d[1], d[2], d[3]]);
            let fam = if fam > 0xffff { fam.swap_bytes() } else { fam };
            match fam {
                2 => (0x0800, &d[4..], 0, false),
                10 | 24 | 28 | 30 => (0x86dd, &d[4..], 0, false),
                _ => return Err("loopback frame is not IP"),
            }
        }
        _ => return Err("link type not supported (read: Ethernet 1, Linux cooked 113 and 276, raw IP 101/12/14/228/229, BSD loopback 0)"),
    };
    // 802.1Q / 802.1ad / QinQ tags.
    while matches!(et, 0x8100 | 0x88a8 | 0x9100) {
        if rest.len() < 4 {
            return Err("VLAN tag truncated");
        }
        et = u16::from_be_bytes([rest[2], rest[3]]);
        rest = &rest[4..];
    }
    Ok((et, rest, sub, out))
}

/// Parses an IPv4 or IPv6 header (by ethertype, or by version when `et` is 0).
#[inline]
pub fn ip(et: u16, d: &[u8]) -> Result<Ip<'_>, Cause> {
    let v = d.first().map(|b| b >> 4);
    match (et, v) {
        (0x0800, Some(4)) | (0, Some(4)) => ipv4(d),
        (0x86dd, Some(6)) | (0, Some(6)) => ipv6(d),
        (0x0800 | 0x86dd, _) => Err("IP version does not match the ethertype"),
        (0x0806, _) => Err("not IP: ARP"),
        _ => Err("not IP"),
    }
}

fn ipv4(d: &[u8]) -> Result<Ip<'_>, Cause> {
    if d.len() < 20 {
        return Err("IPv4 header truncated");
    }
    let ihl = usize::from(d[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([d[2], d[3]]));
    if ihl < 20 || total < ihl {
        return Err("IPv4 header malformed");
    }
    if d.len() < total {
        return Err("IPv4 packet truncated (snap length)");
    }
    let packet = &d[..total];
    let id = u32::from(u16::from_be_bytes([d[4], d[5]]));
    let ff = u16::from_be_bytes([d[6], d[7]]);
    let off = u32::from(ff & 0x1fff) * 8;
    let more = ff & 0x2000 != 0;
    Ok(Ip {
        v6: false,
        src: IpAddr::from([d[12], d[13], d[14], d[15]]),
        dst: IpAddr::from([d[16], d[17], d[18], d[19]]),
        proto: d[9],
        id,
        packet,
        l4: &packet[ihl..],
        frag: (off != 0 || more).then_some((off, more, id)),
    })
}

fn ipv6(d: &[u8]) -> Result<Ip<'_>, Cause> {
    if d.len() < 40 {
        return Err("IPv6 header truncated");
    }
    let plen = usize::from(u16::from_be_bytes([d[4], d[5]]));
    if d.len() < 40 + plen {
        return Err("IPv6 packet truncated (snap length)");
    }
    let packet = &d[..40 + plen];
    let mut a = [0u8; 16];
    a.copy_from_slice(&d[8..24]);
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[24..40]);
    let mut nh = d[6];
    let mut o = 40;
    let mut frag = None;
    loop {
        match nh {
            0 | 43 | 60 => {
                if o + 8 > packet.len() {
                    return Err("IPv6 extension header truncated");
                }
                let len = (usize::from(packet[o + 1]) + 1) * 8;
                nh = packet[o];
                o += len;
            }
            44 => {
                if o + 8 > packet.len() {
                    return Err("IPv6 fragment header truncated");
                }
                let fo = u16::from_be_bytes([packet[o + 2], packet[o + 3]]);
                let id = u32::from_be_bytes([packet[o + 4], packet[o + 5], packet[o + 6], packet[o + 7]]);
                frag = Some((u32::from(fo >> 3) * 8, fo & 1 != 0, id));
                nh = packet[o];
                o += 8;
            }
            _ => break,
        }
        if o > packet.len() {
            return Err("IPv6 extension header truncated");
        }
    }
    let flow = u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x000f_ffff;
    Ok(Ip { v6: true, src: IpAddr::from(a), dst: IpAddr::from(b), proto: nh, id: flow, packet, l4: &packet[o..], frag })
}

/// Reassembles IP fragments (RFC 791 / RFC 8200 §4.5): per (source, destination, protocol,
/// identification), the payload pieces until every byte up to the last fragment's end is there.
#[derive(Default)]
pub struct Reassembler {
    parts: HashMap<(IpAddr, IpAddr, u8, u32), Partial>,
    /// Bytes held in all `parts`.
    held: usize,
    pub reassembled: u64,
    pub expired: u64,
    pub overlapping: u64,
    /// Fragments (or parts of them) beyond the end the last fragment gave: not part of the
    /// packet, left out of it (Wireshark likewise reassembles up to the last fragment's end).
    pub beyond_end: u64,
}

struct Partial {
    first_t: i64,
    /// The first fragment's IP header (to rebuild a whole packet) once seen.
    header: Option<Vec<u8>>,
    pieces: Vec<(u32, Vec<u8>)>,
    /// Bytes in `pieces` and `header`.
    held: usize,
    end: Option<u32>,
}

/// Fragments older than this are given up (Linux's `ipfrag_time` default: 30 s).
pub const FRAG_TIMEOUT_NS: i64 = 30_000_000_000;

/// The largest reassembled payload: IPv4's total length and IPv6's payload length are 16-bit
/// (RFC 791 §3.1, RFC 8200 §4.5; jumbograms are never fragmented). A fragment ending beyond it is
/// refused, as Linux refuses it.
pub const MAX_REASSEMBLED: u32 = 65_535;

/// The most bytes held for one packet (overlapping fragments count each time): twice the
/// largest packet. More is a flood of overlaps, refused and counted.
pub const MAX_HELD_PER_PACKET: usize = 2 * MAX_REASSEMBLED as usize;

/// The most bytes held for all packets waiting for their fragments (Linux holds at most 4 MiB
/// per network namespace, `ipfrag_high_thresh`); beyond it new fragments are refused and counted.
pub const MAX_HELD: usize = 64 << 20;

/// A fragment that is not held (each is counted as a frame not decoded, by cause).
pub const FRAGMENT_BEYOND_MAX: Cause = "IP fragment ending beyond 65 535 bytes (refused, as by Linux)";
pub const FRAGMENT_FLOOD: Cause = "IP fragment refused: more than 128 KiB of fragments for one packet (overlaps)";
pub const FRAGMENTS_FULL: Cause = "IP fragment refused: 64 MiB of fragments already wait for reassembly";

impl Reassembler {
    /// Adds a fragment; returns the whole packet's upper-layer bytes (with its first fragment's
    /// IP header in front, its length fields not rewritten) when it is complete, `Ok(None)` while
    /// it waits, and the cause when the fragment is refused (see [`MAX_REASSEMBLED`],
    /// [`MAX_HELD_PER_PACKET`], [`MAX_HELD`]).
    pub fn add(&mut self, t_ns: i64, ip: &Ip) -> Result<Option<(Vec<u8>, usize)>, Cause> {
        let Some((off, more, id)) = ip.frag else { return Ok(None) };
        if u64::from(off) + ip.l4.len() as u64 > u64::from(MAX_REASSEMBLED) {
            return Err(FRAGMENT_BEYOND_MAX);
        }
        let header_len = if off == 0 { ip.packet.len() - ip.l4.len() } else { 0 };
        let size = ip.l4.len() + header_len;
        if self.held + size > MAX_HELD {
            return Err(FRAGMENTS_FULL);
        }
        let key = (ip.src, ip.dst, ip.proto, id);
        let p = self.parts.entry(key).or_insert_with(|| Partial {
            first_t: t_ns,
            header: None,
            pieces: Vec::new(),
            held: 0,
            end: None,
        });
        if p.held + size > MAX_HELD_PER_PACKET {
            return Err(FRAGMENT_FLOOD);
        }
        p.held += size;
        self.held += size;
        if off == 0 {
            p.header = Some(ip.packet[..header_len].to_vec());
        }
        if !more {
            p.end = Some(off + ip.l4.len() as u32);
        }
        if p.pieces.iter().any(|(o, b)| *o < off + ip.l4.len() as u32 && off < o + b.len() as u32) {
            self.overlapping += 1;
        }
        p.pieces.push((off, ip.l4.to_vec()));
        let Some(end) = p.end else { return Ok(None) };
        if p.header.is_none() {
            return Ok(None);
        }
        p.pieces.sort_by_key(|x| x.0);
        let mut have = 0u32;
        for (o, b) in &p.pieces {
            if have >= end {
                break; // what lies beyond the end is not part of the packet
            }
            if *o > have {
                return Ok(None);
            }
            have = have.max(o + b.len() as u32);
        }
        if have < end {
            return Ok(None);
        }
        let Some(p) = self.parts.remove(&key) else { return Ok(None) };
        self.held -= p.held;
        let header = p.header.unwrap_or_default();
        let mut out = header.clone();
        out.resize(header.len() + end as usize, 0);
        for (o, b) in p.pieces {
            if o as usize + b.len() > end as usize {
                self.beyond_end += 1;
            }
            if o >= end {
                continue;
            }
            let s = header.len() + o as usize;
            let n = b.len().min(out.len() - s);
            out[s..s + n].copy_from_slice(&b[..n]);
        }
        self.reassembled += 1;
        Ok(Some((out, header.len())))
    }

    /// Gives up fragments older than [`FRAG_TIMEOUT_NS`] (or all, at the end).
    pub fn expire(&mut self, now_ns: i64) {
        let before = self.parts.len();
        let held = &mut self.held;
        self.parts.retain(|_, p| {
            let keep = now_ns.saturating_sub(p.first_t) < FRAG_TIMEOUT_NS;
            if !keep {
                *held -= p.held;
            }
            keep
        });
        self.expired += (before - self.parts.len()) as u64;
    }

    pub fn pending(&self) -> usize {
        self.parts.len()
    }
}

/// The identity of an IP packet through the UPF: the fields a forwarding UPF does not change and
/// the first 16 bytes after the fixed IP header (the transport header: ports, lengths, checksums,
/// TCP sequence numbers, or the start of the payload); not the TTL / hop limit or the IPv4 header
/// checksum, which forwarding changes. The same function runs in the kernel (`scout probe`,
/// `crates/scout-probe/bpf/upf_probe.bpf.c`), so it works on 32-bit little-endian words:
///
/// - IPv4: bytes 0–3 (version, IHL, TOS, total length), 4–7 (identification, flags, fragment
///   offset), the protocol, the source and destination addresses; then 16 bytes after the IHL.
/// - IPv6: bytes 0–3 (version, class, flow label), 4–6 (payload length, next header; the hop
///   limit masked), the addresses; then 16 bytes after the 40-byte header.
///
/// Short packets are padded with zeros. The header's words, then the 16 bytes' four, go
/// alternately into two lanes (the first of each group into lane A), each word mixed into its lane
/// with a multiply–xorshift step; the two lanes are joined and finished with MurmurHash3's 64-bit
/// finaliser. Two lanes, because each step waits for the one before it in its lane: one lane made
/// the hash a chain of 9 (IPv4) or 14 (IPv6) multiplies on the path to the probe's table lookup.
pub fn identity(ip: &Ip) -> u64 {
    let p = ip.packet;
    let w = |b: &[u8], o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let mut k = Key::new();
    let l4 = if ip.v6 {
        let mut h = [0u32; 10];
        h[0] = w(p, 0);
        h[1] = w(p, 4) & 0x00ff_ffff;
        for (i, o) in (8..40).step_by(4).enumerate() {
            h[2 + i] = w(p, o);
        }
        k.words(&h);
        &p[40..]
    } else {
        k.words(&[w(p, 0), w(p, 4), u32::from(p[9]), w(p, 12), w(p, 16)]);
        &p[usize::from(p[0] & 0x0f) * 4..]
    };
    let mut b = [0u8; 16];
    let n = l4.len().min(16);
    b[..n].copy_from_slice(&l4[..n]);
    k.words(&[w(&b, 0), w(&b, 4), w(&b, 8), w(&b, 12)]);
    k.finish()
}

/// The identity hash's state, two lanes (see [`identity`]; mirrored in the kernel program).
struct Key {
    a: u64,
    b: u64,
}

impl Key {
    fn new() -> Self {
        Key { a: 0xcbf2_9ce4_8422_2325, b: 0x6a09_e667_f3bc_c908 }
    }
    #[inline]
    fn mix(h: u64, v: u32) -> u64 {
        let h = (h ^ u64::from(v)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^ (h >> 29)
    }
    /// Mixes `ws` in, alternately into lanes A and B, starting with A.
    #[inline]
    fn words(&mut self, ws: &[u32]) {
        for pair in ws.chunks(2) {
            self.a = Key::mix(self.a, pair[0]);
            if let Some(&v) = pair.get(1) {
                self.b = Key::mix(self.b, v);
            }
        }
    }
    fn finish(self) -> u64 {
        let mut h = self.a ^ self.b.rotate_left(32);
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// Transport ports of an IP packet (TCP, UDP, SCTP), when it carries them and is not a later
/// fragment.
#[inline]
pub fn ports(ip: &Ip) -> Option<(u16, u16)> {
    if ip.frag.is_some_and(|f| f.0 != 0) || !matches!(ip.proto, 6 | 17 | 132) || ip.l4.len() < 4 {
        return None;
    }
    Some((u16::from_be_bytes([ip.l4[0], ip.l4[1]]), u16::from_be_bytes([ip.l4[2], ip.l4[3]])))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An IPv4 packet (also the GTP-U tests' inner packet).
    pub(crate) fn v4(src: [u8; 4], dst: [u8; 4], proto: u8, id: u16, ttl: u8, payload: &[u8]) -> Vec<u8> {
        let total = 20 + payload.len();
        let mut p = vec![0x45, 0, (total >> 8) as u8, total as u8, (id >> 8) as u8, id as u8, 0, 0, ttl, proto, 0, 0];
        p.extend_from_slice(&src);
        p.extend_from_slice(&dst);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn identity_ignores_ttl_and_checksum_but_not_payload() {
        let a = v4([10, 45, 0, 2], [8, 8, 8, 8], 17, 7, 64, b"\x13\x88\x0f\xa0\x00\x0c\x00\x00data");
        let mut b = v4([10, 45, 0, 2], [8, 8, 8, 8], 17, 7, 63, b"\x13\x88\x0f\xa0\x00\x0c\x00\x00data");
        b[10] = 0xab;
        let c = v4([10, 45, 0, 2], [8, 8, 8, 8], 17, 7, 64, b"\x13\x88\x0f\xa0\x00\x0c\x00\x00datb");
        let k = |p: &[u8]| identity(&ip(0x0800, p).unwrap());
        assert_eq!(k(&a), k(&b));
        assert_ne!(k(&a), k(&c));
    }

    #[test]
    fn fragments_are_reassembled_in_any_order() {
        let payload: Vec<u8> = (0..100u8).collect();
        let whole = v4([1, 1, 1, 1], [2, 2, 2, 2], 17, 9, 64, &payload);
        let mk = |off: usize, more: bool, data: &[u8]| {
            let mut p = v4([1, 1, 1, 1], [2, 2, 2, 2], 17, 9, 64, data);
            let ff = ((off / 8) as u16) | if more { 0x2000 } else { 0 };
            p[6] = (ff >> 8) as u8;
            p[7] = ff as u8;
            p
        };
        let f2 = mk(48, false, &payload[48..]);
        let f1 = mk(0, true, &payload[..48]);
        let mut r = Reassembler::default();
        assert!(r.add(0, &ip(0x0800, &f2).unwrap()).unwrap().is_none());
        let (out, h) = r.add(1, &ip(0x0800, &f1).unwrap()).unwrap().unwrap();
        assert_eq!(&out[h..], &whole[20..]);
        assert_eq!(r.pending(), 0);
    }

    /// A piece that lies beyond the final fragment's end once underflowed the copy (issue 20): it is
    /// left out of the packet and counted.
    #[test]
    fn a_fragment_beyond_the_last_ones_end_is_left_out_and_counted() {
        let payload: Vec<u8> = (0..96u8).collect();
        let mk = |off: usize, more: bool, data: &[u8]| {
            let mut p = v4([1, 1, 1, 1], [2, 2, 2, 2], 17, 9, 64, data);
            let ff = ((off / 8) as u16) | if more { 0x2000 } else { 0 };
            p[6] = (ff >> 8) as u8;
            p[7] = ff as u8;
            p
        };
        let mut r = Reassembler::default();
        // Bytes 64..96 and 0..24, then 24..48 as the last fragment: the packet ends at 48, and the
        // piece at 64 lies beyond it.
        assert!(r.add(0, &ip(0x0800, &mk(64, true, &payload[64..])).unwrap()).unwrap().is_none());
        assert!(r.add(1, &ip(0x0800, &mk(0, true, &payload[..24])).unwrap()).unwrap().is_none());
        let (out, h) = r.add(2, &ip(0x0800, &mk(24, false, &payload[24..48])).unwrap()).unwrap().unwrap();
        assert_eq!(&out[h..], &payload[..48]);
        assert_eq!((r.beyond_end, r.pending()), (1, 0));
    }

    /// Reassembly holds bounded memory (issue 20): a fragment ending beyond 65 535 bytes is refused,
    /// as is an endless stream of overlapping fragments of one packet, each with its cause; the
    /// packet's fragments before the flood still make it whole.
    #[test]
    fn reassembly_buffers_are_capped() {
        let mk = |id: u16, off: usize, more: bool, data: &[u8]| {
            let mut p = v4([1, 1, 1, 1], [2, 2, 2, 2], 17, id, 64, data);
            let ff = ((off / 8) as u16) | if more { 0x2000 } else { 0 };
            p[6] = (ff >> 8) as u8;
            p[7] = ff as u8;
            p
        };
        let mut r = Reassembler::default();
        let big = vec![0u8; 1000];
        assert_eq!(r.add(0, &ip(0x0800, &mk(1, 65_000, true, &big)).unwrap()), Err(FRAGMENT_BEYOND_MAX));
        let mut refused = 0;
        for i in 0..200 {
            match r.add(i, &ip(0x0800, &mk(2, 0, true, &big)).unwrap()) {
                Ok(None) => {}
                Err(c) => {
                    assert_eq!(c, FRAGMENT_FLOOD);
                    refused += 1;
                }
                Ok(Some(_)) => panic!("no last fragment was sent"),
            }
        }
        assert!(refused > 60 && r.held <= MAX_HELD_PER_PACKET, "{refused} {}", r.held);
        r.expire(i64::MAX);
        assert_eq!((r.held, r.pending()), (0, 0));
    }
}
