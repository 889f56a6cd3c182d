//! TUN offloads: the kernel hands the emulator TCP super-packets of up to 64 KiB (GSO) and takes
//! super-packets back (as GRO would build them), so that a packet crosses the user/kernel boundary
//! once per ~45 segments instead of once per segment. The model still sees every MTU-sized packet:
//! a super-packet is cut into the segments the kernel would have sent ([`segment`]) on the way in,
//! and consecutive segments of a flow that the model delivered together are joined again
//! ([`Coalescer`]) on the way out.
//!
//! Each packet through the device carries a `struct virtio_net_hdr` first (linux/virtio_net.h,
//! `IFF_VNET_HDR`, 10 bytes, little-endian on the machines Scout runs on). Checksums are left to
//! the kernel as it leaves them to a NIC: a segment (or a joined packet) goes out as
//! `VIRTIO_NET_HDR_F_NEEDS_CSUM` with its TCP checksum field holding the pseudo-header sum, the
//! state of a `CHECKSUM_PARTIAL` packet in the kernel.

use std::io::IoSlice;

/// `sizeof(struct virtio_net_hdr)`.
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_*`.
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
/// The ECN bit of `gso_type`: the super-packet's first segment carries CWR.
pub const GSO_ECN: u8 = 0x80;

const TCP: u8 = 6;
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const CWR: u8 = 0x80;
/// The largest IP packet a joined packet may be (IPv4 total length is 16 bits).
const MAX_JOINED: usize = 65_535;

/// `struct virtio_net_hdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn parse(b: &[u8]) -> Option<VnetHdr> {
        let b: &[u8; VNET_HDR_LEN] = b.get(..VNET_HDR_LEN)?.try_into().ok()?;
        let u = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    pub fn write(&self, out: &mut [u8]) {
        out[0] = self.flags;
        out[1] = self.gso_type;
        out[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        out[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        out[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        out[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }
}

/// Where a packet's TCP or UDP checksum is left for the kernel to complete (`csum_start`,
/// `csum_offset`), as the device gave it or as [`segment`] made it.
pub type Partial = Option<(u16, u16)>;

/// The one's-complement sum of `data` (not folded, not inverted), RFC 1071.
fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// Completes the checksum a packet left to the device (`partial`: where it starts and where
/// the field is, the pseudo-header sum already in the field), as a device without checksum
/// offload would before sending it on (a real UPF's TUN device does not).
pub fn complete_checksum(p: &mut [u8], partial: Partial) {
    let Some((start, offset)) = partial else { return };
    let (start, field) = (usize::from(start), usize::from(start) + usize::from(offset));
    if field + 2 > p.len() || start > field {
        return;
    }
    let c = !fold(sum(&p[start..], 0));
    p[field..field + 2].copy_from_slice(&c.to_be_bytes());
}

/// The IPv4 header checksum of `ip[..ihl]`, written in place.
pub(crate) fn ipv4_checksum(ip: &mut [u8], ihl: usize) {
    ip[10..12].fill(0);
    let c = !fold(sum(&ip[..ihl], 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The pseudo-header sum (RFC 9293 §3.1, RFC 8200 §8.1) for an L4 segment of `l4_len` bytes,
/// folded and not inverted: what a `CHECKSUM_PARTIAL` packet holds in its checksum field.
fn pseudo(ip: &[u8], l4_len: usize) -> u16 {
    let acc = if ip[0] >> 4 == 4 { sum(&ip[12..20], 0) } else { sum(&ip[8..40], 0) };
    fold(acc + u64::from(TCP) + l4_len as u64)
}

/// An IP packet's layout when it is TCP over IPv4 (any options) or IPv6 (no extension headers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tcp {
    v4: bool,
    /// IP header length, then IP + TCP header length.
    ip_len: usize,
    hdr_len: usize,
}

fn tcp_layout(p: &[u8]) -> Option<Tcp> {
    let (v4, ip_len, proto) = match p.first()? >> 4 {
        4 if p.len() >= 20 => (true, usize::from(p[0] & 0x0f) * 4, p[9]),
        6 if p.len() >= 40 => (false, 40, p[6]),
        _ => return None,
    };
    if proto != TCP || ip_len < 20 || p.len() < ip_len + 20 {
        return None;
    }
    let hdr_len = ip_len + usize::from(p[ip_len + 12] >> 4) * 4;
    (hdr_len >= ip_len + 20 && p.len() >= hdr_len).then_some(Tcp { v4, ip_len, hdr_len })
}

/// Sets the IP length field of a packet of `len` bytes whose headers are `p` and, for IPv4, the
/// header checksum.
fn set_ip_length(p: &mut [u8], t: Tcp, len: usize) {
    if t.v4 {
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ipv4_checksum(p, t.ip_len);
    } else {
        p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
    }
}

/// Leaves the TCP checksum of a packet of `len` bytes whose headers are `p` to the kernel: the
/// pseudo-header sum in the field.
fn set_partial(p: &mut [u8], t: Tcp, len: usize) -> Partial {
    let c = pseudo(p, len - t.ip_len);
    p[t.ip_len + 16..t.ip_len + 18].copy_from_slice(&c.to_be_bytes());
    Some((t.ip_len as u16, 16))
}

/// Why a packet from the device could not be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A GSO type other than TCP (the devices do not offer UDP segmentation).
    GsoType(u8),
    /// A super-packet that is not TCP over IPv4, or over IPv6 without extension headers, or has
    /// no payload or a zero segment size.
    Malformed,
}

/// Cuts the packet `pkt` that came from the device with `hdr` into the packets the kernel would
/// have sent without offloads, handing each to `out` as its headers and its payload (a slice of
/// `pkt`: the caller copies each byte once, into the segment's own buffer), with where its
/// checksum is left (the pseudo-header sum is in place). A packet without GSO is handed on whole
/// (as headers, with an empty payload). As Linux's `tcp_gso_segment`: the sequence number
/// advances by the payload, the IPv4 identifier by one per segment, CWR stays on the first
/// segment only, FIN and PSH on the last.
pub fn segment(hdr: &VnetHdr, pkt: &[u8], mut out: impl FnMut(&[u8], &[u8], Partial)) -> Result<usize, Refused> {
    let partial = (hdr.flags & F_NEEDS_CSUM != 0).then_some((hdr.csum_start, hdr.csum_offset));
    match hdr.gso_type & !GSO_ECN {
        GSO_NONE => {
            out(pkt, &[], partial);
            return Ok(1);
        }
        GSO_TCPV4 | GSO_TCPV6 => {}
        other => return Err(Refused::GsoType(other)),
    }
    let t = tcp_layout(pkt).ok_or(Refused::Malformed)?;
    let mss = usize::from(hdr.gso_size);
    let payload = &pkt[t.hdr_len..];
    if mss == 0 || payload.is_empty() {
        return Err(Refused::Malformed);
    }
    let seq0 = u32::from_be_bytes(pkt[t.ip_len + 4..t.ip_len + 8].try_into().expect("4 bytes"));
    let id0 = u16::from_be_bytes([pkt[4], pkt[5]]);
    let flags = pkt[t.ip_len + 13];
    let n = payload.len().div_ceil(mss);
    let mut seg = pkt[..t.hdr_len].to_vec();
    for (i, chunk) in payload.chunks(mss).enumerate() {
        let seq = seq0.wrapping_add((i * mss) as u32);
        seg[t.ip_len + 4..t.ip_len + 8].copy_from_slice(&seq.to_be_bytes());
        let mut f = flags;
        if i > 0 {
            f &= !CWR;
        }
        if i + 1 < n {
            f &= !(FIN | PSH);
        }
        seg[t.ip_len + 13] = f;
        if t.v4 {
            seg[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
        }
        let len = t.hdr_len + chunk.len();
        set_ip_length(&mut seg, t, len);
        let p = set_partial(&mut seg, t, len);
        out(&seg, chunk, p);
    }
    Ok(n)
}

/// A run of segments of one flow being joined.
struct Run {
    t: Tcp,
    /// The virtio header, then the first segment's headers, rewritten for the joined packet.
    head: Vec<u8>,
    /// The segments joined so far, whole: the kernel takes their payloads (after `t.hdr_len`
    /// bytes of headers) straight from them, in one `writev`.
    segs: Vec<Vec<u8>>,
    /// The joined packet's length.
    len: usize,
    gso_size: usize,
    next_seq: u32,
    /// The last segment was shorter than the segment size, or carried PSH: nothing may follow.
    closed: bool,
}

/// Joins the TCP segments the model delivers to one device into super-packets, per flow, as
/// Linux's GRO (`tcp_gro_receive`) would: same addresses and ports, contiguous sequence numbers,
/// the same acknowledgement number, flags (PSH may end a run) and TCP options, every segment but
/// the last of the first one's size, at most 64 KiB. Other packets go out as they are.
#[derive(Default)]
pub struct Coalescer {
    runs: Vec<Run>,
    /// Heads and segment lists of finished runs, to reuse.
    spare: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
    /// The packets handed in and written since [`Coalescer::take_written`], to reuse.
    written: Vec<Vec<u8>>,
    /// Packets written and packets the kernel was handed (a joined packet counts once).
    pub segments: u64,
    pub writes: u64,
}

impl Run {
    /// The joined packet's headers.
    fn hdr(&self) -> &[u8] {
        &self.head[VNET_HDR_LEN..]
    }
}

/// Whether `p` (a TCP segment with layout `t`) may follow the run `r`.
fn extends(r: &Run, p: &[u8], t: Tcp) -> bool {
    let h = r.hdr();
    let (ip, rt) = (t.ip_len, r.t);
    let pay = p.len() - t.hdr_len;
    let seq = u32::from_be_bytes(p[ip + 4..ip + 8].try_into().expect("4 bytes"));
    !r.closed
        && t == rt
        && pay > 0
        && pay <= r.gso_size
        && seq == r.next_seq
        && r.len + pay <= MAX_JOINED
        // Same addresses, and for IPv4 the same TOS, DF and TTL; for IPv6 traffic class and hop limit.
        && if t.v4 {
            h[12..20] == p[12..20] && h[1] == p[1] && h[6] & 0x40 == p[6] & 0x40 && h[8] == p[8]
        } else {
            h[8..40] == p[8..40] && h[..4] == p[..4] && h[7] == p[7]
        }
        // Ports, acknowledgement number, flags but PSH, options.
        && h[ip..ip + 4] == p[ip..ip + 4]
        && h[ip + 8..ip + 12] == p[ip + 8..ip + 12]
        && (h[ip + 13] | PSH) == (p[ip + 13] | PSH)
        && h[ip + 20..rt.hdr_len] == p[ip + 20..t.hdr_len]
}

impl Coalescer {
    /// Takes one delivered packet; `write` is handed every packet that is complete, as the
    /// slices to write in one `writev` (its virtio header first). Packets of a flow keep their
    /// order; a flow's run ends when a packet of the same flow cannot join it. Every packet
    /// handed in comes back, once written, from [`Coalescer::take_written`].
    pub fn push(&mut self, p: Vec<u8>, partial: Partial, write: &mut impl FnMut(&[IoSlice<'_>])) {
        self.segments += 1;
        let layout = tcp_layout(&p);
        let run = layout.and_then(|t| self.run_of(&p, t));
        let t = match layout {
            Some(t) if p.len() > t.hdr_len && p[t.ip_len + 13] & 0x07 == 0 => t,
            _ => {
                // Not TCP data (or SYN/FIN/RST): after the runs of its flow, as it is.
                if let Some(i) = run {
                    self.finish(i, write);
                }
                self.write_single(p, partial, write);
                return;
            }
        };
        if let Some(i) = run {
            if extends(&self.runs[i], &p, t) {
                let r = &mut self.runs[i];
                let pay = p.len() - t.hdr_len;
                r.len += pay;
                r.next_seq = r.next_seq.wrapping_add(pay as u32);
                // The joined packet takes the last segment's window and PSH.
                let ip = t.ip_len;
                let h = VNET_HDR_LEN + ip;
                r.head[h + 14..h + 16].copy_from_slice(&p[ip + 14..ip + 16]);
                r.head[h + 13] |= p[ip + 13] & PSH;
                r.closed = pay < r.gso_size || p[ip + 13] & PSH != 0;
                r.segs.push(p);
                return;
            }
            self.finish(i, write);
        }
        let (mut head, mut segs) = self.spare.pop().unwrap_or_default();
        head.clear();
        head.extend_from_slice(&[0; VNET_HDR_LEN]);
        head.extend_from_slice(&p[..t.hdr_len]);
        let pay = p.len() - t.hdr_len;
        let seq = u32::from_be_bytes(p[t.ip_len + 4..t.ip_len + 8].try_into().expect("4 bytes"));
        let closed = p[t.ip_len + 13] & PSH != 0;
        let len = p.len();
        segs.push(p);
        self.runs.push(Run { t, head, segs, len, gso_size: pay, next_seq: seq.wrapping_add(pay as u32), closed });
    }

    /// The packets handed in and written since the last call, into `into`.
    pub fn take_written(&mut self, into: &mut Vec<Vec<u8>>) {
        into.append(&mut self.written);
    }

    /// Writes every run (the end of a delivery batch).
    pub fn flush(&mut self, write: &mut impl FnMut(&[IoSlice<'_>])) {
        while !self.runs.is_empty() {
            self.finish(0, write);
        }
    }

    /// The run of `p`'s flow (same IP addresses and ports; `t`: its layout), if any.
    fn run_of(&self, p: &[u8], t: Tcp) -> Option<usize> {
        self.runs.iter().position(|r| {
            let h = r.hdr();
            r.t.v4 == t.v4
                && r.t.ip_len == t.ip_len
                && if t.v4 { h[12..20] == p[12..20] } else { h[8..40] == p[8..40] }
                && h[r.t.ip_len..r.t.ip_len + 4] == p[t.ip_len..t.ip_len + 4]
        })
    }

    fn finish(&mut self, i: usize, write: &mut impl FnMut(&[IoSlice<'_>])) {
        let mut r = self.runs.remove(i);
        let t = r.t;
        let hdr = &mut r.head[VNET_HDR_LEN..];
        set_ip_length(hdr, t, r.len);
        let partial = set_partial(hdr, t, r.len);
        let n = r.segs.len();
        let vnet = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if n == 1 {
                GSO_NONE
            } else if t.v4 {
                GSO_TCPV4
            } else {
                GSO_TCPV6
            },
            hdr_len: t.hdr_len as u16,
            gso_size: if n == 1 { 0 } else { r.gso_size as u16 },
            csum_start: partial.map_or(0, |p| p.0),
            csum_offset: partial.map_or(0, |p| p.1),
        };
        vnet.write(&mut r.head);
        self.writes += 1;
        let head = std::iter::once(IoSlice::new(&r.head));
        let iov: Vec<_> = head.chain(r.segs.iter().map(|s| IoSlice::new(&s[t.hdr_len..]))).collect();
        write(&iov);
        self.written.append(&mut r.segs);
        self.spare.push((r.head, r.segs));
    }

    fn write_single(&mut self, p: Vec<u8>, partial: Partial, write: &mut impl FnMut(&[IoSlice<'_>])) {
        let vnet = match partial {
            Some((start, offset)) => {
                VnetHdr { flags: F_NEEDS_CSUM, csum_start: start, csum_offset: offset, ..Default::default() }
            }
            None => VnetHdr::default(),
        };
        let mut head = [0; VNET_HDR_LEN];
        vnet.write(&mut head);
        self.writes += 1;
        write(&[IoSlice::new(&head), IoSlice::new(&p)]);
        self.written.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP/IPv4 packet with timestamps (32-byte TCP header) and `payload` bytes of a pattern
    /// that depends on the sequence number, its checksums complete.
    fn tcp4(seq: u32, payload: usize, flags: u8) -> Vec<u8> {
        let mut p = vec![0u8; 20 + 32 + payload];
        p[0] = 0x45;
        p[4..6].copy_from_slice(&7u16.to_be_bytes());
        p[6] = 0x40; // DF
        p[8] = 64;
        p[9] = TCP;
        p[12..16].copy_from_slice(&[10, 45, 0, 2]);
        p[16..20].copy_from_slice(&[10, 45, 0, 1]);
        p[20..22].copy_from_slice(&40000u16.to_be_bytes());
        p[22..24].copy_from_slice(&5201u16.to_be_bytes());
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[28..32].copy_from_slice(&99u32.to_be_bytes());
        p[32] = 8 << 4;
        p[33] = flags;
        p[34..36].copy_from_slice(&512u16.to_be_bytes());
        p[40..52].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        for (i, b) in p[52..].iter_mut().enumerate() {
            *b = (seq as usize + i) as u8;
        }
        let len = p.len();
        let t = tcp_layout(&p).unwrap();
        set_ip_length(&mut p, t, len);
        complete(&mut p);
        assert_eq!(len, p.len());
        p
    }

    /// Completes a partial (or recomputes a full) TCP checksum, as the kernel does.
    fn complete(p: &mut [u8]) {
        let t = tcp_layout(p).unwrap();
        let l4 = p.len() - t.ip_len;
        p[t.ip_len + 16..t.ip_len + 18].fill(0);
        let c = !fold(sum(&p[t.ip_len..], u64::from(pseudo(p, l4))));
        p[t.ip_len + 16..t.ip_len + 18].copy_from_slice(&c.to_be_bytes());
    }

    fn header_ok(p: &[u8]) -> bool {
        fold(sum(&p[..20], 0)) == 0xffff
    }

    #[test]
    fn a_super_packet_is_cut_as_the_kernel_cuts_it() {
        // What TSO hands over: 3 × 1000 bytes + 500, PSH|ACK, CWR, checksum partial.
        let mut sup = tcp4(1_000_000, 3500, 0x18 | CWR);
        let t = tcp_layout(&sup).unwrap();
        let c = pseudo(&sup, 0);
        sup[t.ip_len + 16..t.ip_len + 18].copy_from_slice(&c.to_be_bytes());
        let hdr = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            hdr_len: 52,
            gso_size: 1000,
            csum_start: 20,
            csum_offset: 16,
        };
        let mut segs = Vec::new();
        assert_eq!(segment(&hdr, &sup, |h, s, p| segs.push(([h, s].concat(), p))), Ok(4));
        for (i, (s, p)) in segs.iter_mut().enumerate() {
            assert_eq!(*p, Some((20, 16)));
            let pay = if i < 3 { 1000 } else { 500 };
            assert_eq!(s.len(), 52 + pay);
            assert_eq!(u16::from_be_bytes([s[2], s[3]]) as usize, s.len());
            assert_eq!(u16::from_be_bytes([s[4], s[5]]), 7 + i as u16);
            assert!(header_ok(s));
            let seq = 1_000_000 + 1000 * i as u32;
            assert_eq!(u32::from_be_bytes(s[24..28].try_into().unwrap()), seq);
            let flags = s[33];
            assert_eq!(flags & CWR != 0, i == 0);
            assert_eq!(flags & PSH != 0, i == 3);
            // The payload is the super-packet's slice; once the kernel completes the checksum, the
            // segment equals the one built directly.
            complete(s);
            let mut want = tcp4(seq, pay, flags);
            want[4..6].copy_from_slice(&(7 + i as u16).to_be_bytes());
            ipv4_checksum(&mut want, 20);
            complete(&mut want);
            assert_eq!(s, &want, "segment {i}");
        }
        // Not TCP: refused, counted by the caller.
        let udp = VnetHdr { gso_type: 5, ..hdr };
        assert_eq!(segment(&udp, &sup, |_, _, _| {}), Err(Refused::GsoType(5)));
        let none = VnetHdr::default();
        assert_eq!(segment(&none, &sup, |h, s, p| assert!(h == &sup[..] && s.is_empty() && p.is_none())), Ok(1));
    }

    #[test]
    fn delivered_segments_are_joined_per_flow_and_cut_back_to_the_same_bytes() {
        let segs: Vec<Vec<u8>> = (0..5).map(|i| tcp4(5000 + 1000 * i, 1000, 0x10)).collect();
        let mut other = tcp4(77, 1000, 0x10);
        other[20..22].copy_from_slice(&40001u16.to_be_bytes()); // another flow
        complete(&mut other);
        let ack = tcp4(1, 0, 0x10); // a pure ACK is never joined
        let mut c = Coalescer::default();
        let mut written: Vec<Vec<u8>> = Vec::new();
        let mut w = |iov: &[IoSlice<'_>]| written.push(iov.iter().flat_map(|s| s.iter().copied()).collect());
        c.push(segs[0].clone(), None, &mut w);
        c.push(segs[1].clone(), None, &mut w);
        c.push(other.clone(), None, &mut w);
        c.push(segs[2].clone(), None, &mut w);
        c.push(ack.clone(), None, &mut w);
        c.push(segs[4].clone(), None, &mut w); // a gap: 3 is missing
        c.flush(&mut w);
        assert_eq!((c.segments, c.writes), (6, 4));
        // Every packet handed in comes back once written, unchanged (the joined packet's headers
        // are rewritten in a copy of the first's).
        let mut back = Vec::new();
        c.take_written(&mut back);
        back.sort();
        let mut all =
            vec![segs[0].clone(), segs[1].clone(), other.clone(), segs[2].clone(), ack.clone(), segs[4].clone()];
        all.sort();
        assert_eq!(back, all);
        // The ACK of the same flow ends its run: the run first, then the ACK as it came; the other
        // runs at the flush.
        let hdrs: Vec<VnetHdr> = written.iter().map(|b| VnetHdr::parse(b).unwrap()).collect();
        assert_eq!(hdrs[1], VnetHdr::default());
        let joined = written.iter().position(|b| b.len() == VNET_HDR_LEN + 52 + 3000).expect("0..2 joined");
        assert_eq!(joined, 0);
        let h = hdrs[joined];
        assert_eq!((h.gso_type, h.gso_size, h.hdr_len, h.flags), (GSO_TCPV4, 1000, 52, F_NEEDS_CSUM));
        // Cut again, the joined packet gives back the three segments, byte for byte once complete.
        let mut back = Vec::new();
        segment(&h, &written[joined][VNET_HDR_LEN..], |h, s, _| back.push([h, s].concat())).unwrap();
        assert_eq!(back.len(), 3);
        for (i, mut s) in back.into_iter().enumerate() {
            complete(&mut s);
            let mut want = segs[i].clone();
            want[4..6].copy_from_slice(&7u16.wrapping_add(i as u16).to_be_bytes());
            ipv4_checksum(&mut want, 20);
            assert_eq!(s, want, "segment {i}");
        }
        // The flow after its gap, and the other flow: alone, as they were (checksum left partial).
        for single in [&segs[4], &other] {
            let b = written
                .iter()
                .find(|b| b.len() == VNET_HDR_LEN + 1052 && b[VNET_HDR_LEN + 24..VNET_HDR_LEN + 28] == single[24..28])
                .unwrap();
            let h = VnetHdr::parse(b).unwrap();
            assert_eq!((h.gso_type, h.gso_size), (GSO_NONE, 0));
            let mut p = b[VNET_HDR_LEN..].to_vec();
            complete(&mut p);
            assert_eq!(&p, single);
        }
        // A short segment ends a run; different options (a new timestamp) start a new one.
        let mut c = Coalescer::default();
        let mut n = 0;
        let mut w = |_: &[IoSlice<'_>]| n += 1;
        c.push(tcp4(0, 1000, 0x10), None, &mut w);
        c.push(tcp4(1000, 400, 0x10), None, &mut w);
        c.push(tcp4(1400, 1000, 0x10), None, &mut w);
        let mut ts = tcp4(2400, 1000, 0x10);
        ts[51] = 9;
        c.push(ts, None, &mut w);
        c.flush(&mut w);
        assert_eq!((c.segments, c.writes), (4, 3));
    }
}
