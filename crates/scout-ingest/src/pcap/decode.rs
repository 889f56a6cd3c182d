//! One captured frame decoded: the link layer, IP (fragments reassembled), UDP, and what it
//! carries — a G-PDU with its inner packet, another GTP-U message, a PFCP message, or a plain IP
//! packet (the wire formats are `scout_wire`'s).

use std::net::{IpAddr, SocketAddr};

use scout_wire::gtpu::{self, Gtpu};
use scout_wire::ip::{self as wire, Ip, Reassembler};
use scout_wire::pfcp::PFCP_PORT;
use scout_wire::Cause;

/// Not an error: a fragment kept until its packet is whole (the whole packet is then one frame's
/// worth of sighting).
pub(super) const FRAGMENT_HELD: Cause = "IP fragment (held for reassembly)";

/// What a frame is, after decoding.
pub(super) enum Kind<'a> {
    /// A G-PDU: the outer IP packet's length and the GTP-U header with its T-PDU.
    GPdu(u32, (IpAddr, IpAddr), Gtpu<'a>, Ip<'a>),
    /// Another GTP-U message (echo, error indication, end marker, …) and whether its length
    /// field disagrees with the datagram.
    GtpOther(u8, bool),
    /// A PFCP message: its peers, its IP packet's identity and its bytes.
    Pfcp(SocketAddr, SocketAddr, u64, &'a [u8]),
    Plain(Ip<'a>),
}

pub(super) struct Decoder {
    gtp_ports: Vec<u16>,
    pub(super) frag: Reassembler,
    /// A reassembled datagram lives here while its frame is handled.
    scratch: Vec<u8>,
}

impl Decoder {
    pub(super) fn new(gtp_ports: &[u16]) -> Self {
        Decoder { gtp_ports: gtp_ports.to_vec(), frag: Reassembler::default(), scratch: Vec::new() }
    }

    pub(super) fn decode<'a>(
        &'a mut self,
        t_ns: i64,
        linktype: u16,
        data: &'a [u8],
    ) -> Result<(Kind<'a>, u32, bool), Cause> {
        let (et, l3, sub, out) = wire::link(linktype, data)?;
        let mut ip = wire::ip(et, l3)?;
        if ip.frag.is_some() {
            let Decoder { frag, scratch, .. } = self;
            match frag.add(t_ns, &ip)? {
                Some((whole, hl)) => {
                    *scratch = whole;
                    let sc: &'a Vec<u8> = scratch;
                    ip.packet = sc;
                    ip.l4 = &sc[hl.min(sc.len())..];
                    ip.frag = None;
                }
                None => return Err(FRAGMENT_HELD),
            }
        }
        if ip.proto == 17 {
            let Some((sp, dp)) = wire::ports(&ip) else { return Err("UDP header truncated") };
            if ip.l4.len() < 8 {
                return Err("UDP header truncated");
            }
            let udp = &ip.l4[8..];
            if self.gtp_ports.contains(&dp) || self.gtp_ports.contains(&sp) {
                let g = gtpu::decode(udp)?;
                if g.msg_type != gtpu::GTPU_G_PDU {
                    return Ok((Kind::GtpOther(g.msg_type, g.length_mismatch), sub, out));
                }
                let inner = wire::ip(0, g.payload).map_err(|_| "G-PDU whose T-PDU is not an IP packet")?;
                return Ok((Kind::GPdu(ip.packet.len() as u32, (ip.src, ip.dst), g, inner), sub, out));
            }
            if dp == PFCP_PORT || sp == PFCP_PORT {
                let id = wire::identity(&ip);
                return Ok((Kind::Pfcp(SocketAddr::new(ip.src, sp), SocketAddr::new(ip.dst, dp), id, udp), sub, out));
            }
        }
        Ok((Kind::Plain(ip), sub, out))
    }
}
