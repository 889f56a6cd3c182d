//! What the emulator reads of a packet: its addresses, protocol and ports (its flow), its ECN
//! field, and whether it is an ICMP echo (the ping round trips it measures). Nothing else of a
//! packet is looked at: the model is given its length and ECN field, and its bytes wait beside the
//! model until it is delivered — with the Congestion Experienced codepoint written in when the
//! model marked it (L4S).

use std::net::IpAddr;

use serde_json::{json, Value};

/// The addresses, protocol and ports (0 where it has none, or a later fragment) of an IP packet,
/// when it is one.
pub fn five_tuple(p: &[u8]) -> Option<(u8, IpAddr, IpAddr, u16, u16)> {
    let v = p.first()? >> 4;
    let (proto, src, dst, l4): (u8, IpAddr, IpAddr, &[u8]) = match v {
        4 if p.len() >= 20 => {
            let ihl = usize::from(p[0] & 0x0f) * 4;
            let frag_offset = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
            let l4 = if frag_offset == 0 { p.get(ihl..).unwrap_or(&[]) } else { &[] };
            let s: [u8; 4] = p[12..16].try_into().ok()?;
            let d: [u8; 4] = p[16..20].try_into().ok()?;
            (p[9], s.into(), d.into(), l4)
        }
        6 if p.len() >= 40 => {
            let s: [u8; 16] = p[8..24].try_into().ok()?;
            let d: [u8; 16] = p[24..40].try_into().ok()?;
            (p[6], s.into(), d.into(), &p[40..])
        }
        _ => return None,
    };
    let ports = if matches!(proto, 6 | 17) && l4.len() >= 4 {
        (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]]))
    } else {
        (0, 0)
    };
    Some((proto, src, dst, ports.0, ports.1))
}

/// The ECN field of an IPv4 or IPv6 packet (RFC 3168 §5: the TOS / Traffic Class byte's low two
/// bits), 0 when it is not IP.
pub fn ecn(p: &[u8]) -> u8 {
    match p.first().map(|b| b >> 4) {
        Some(4) if p.len() >= 20 => p[1] & 0x03,
        // Traffic Class straddles bytes 0 and 1: its low two bits are bits 5..4 of byte 1.
        Some(6) if p.len() >= 40 => (p[1] >> 4) & 0x03,
        _ => 0,
    }
}

/// Writes Congestion Experienced (11) into an IPv4 or IPv6 packet's ECN field, the IPv4 header
/// checksum made good (RFC 3168 §6.1.1.1); returns whether it could.
pub fn set_ce(p: &mut [u8]) -> bool {
    match p.first().map(|b| b >> 4) {
        Some(4) if p.len() >= 20 => {
            let ihl = usize::from(p[0] & 0x0f) * 4;
            if ihl < 20 || p.len() < ihl {
                return false;
            }
            p[1] |= 0x03;
            crate::offload::ipv4_checksum(p, ihl);
            true
        }
        Some(6) if p.len() >= 40 => {
            p[1] |= 0x30;
            true
        }
        _ => false,
    }
}

/// The UDP port on which the emulator tells a UE's applications of the ANBR recommendations its
/// MAC received (docs/l4s-anbr.md): no Linux API carries them from a modem (TS 26.114 §10.7).
pub const ANBR_PORT: u16 = 4747;

/// An IPv4 UDP datagram from `src`:`port` to `dst`:`port` carrying `payload` (UDP checksum 0,
/// which IPv4 allows: RFC 768), its IPv4 header checksum computed.
pub fn udp4(src: std::net::Ipv4Addr, dst: std::net::Ipv4Addr, port: u16, payload: &[u8]) -> Vec<u8> {
    let total = 28 + payload.len();
    let mut p = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0];
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    let udp_len = (8 + payload.len()) as u16;
    p.extend_from_slice(&port.to_be_bytes());
    p.extend_from_slice(&port.to_be_bytes());
    p.extend_from_slice(&udp_len.to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    crate::offload::ipv4_checksum(&mut p, 20);
    p
}

/// An ICMP or ICMPv6 echo request (`true`) or reply (`false`) and its identifier and sequence
/// number.
pub fn echo(p: &[u8]) -> Option<(bool, u16, u16)> {
    let (proto, l4) = match p.first()? >> 4 {
        4 if p.len() >= 20 => (p[9], p.get(usize::from(p[0] & 0x0f) * 4..)?),
        6 if p.len() >= 48 => (p[6], &p[40..]),
        _ => return None,
    };
    let request = match (proto, *l4.first()?) {
        (1, 8) | (58, 128) => true,
        (1, 0) | (58, 129) => false,
        _ => return None,
    };
    let f = |o: usize| Some(u16::from_be_bytes([*l4.get(o)?, *l4.get(o + 1)?]));
    Some((request, f(4)?, f(6)?))
}

/// (uplink, protocol, source, destination, source port, destination port): one flow.
type FlowKey = (bool, u8, IpAddr, IpAddr, u16, u16);

/// Flow ids in order of first packet, and their description for `run.json` `flows`.
#[derive(Default)]
pub struct Flows {
    ids: foldhash::HashMap<FlowKey, u32>,
    pub json: Vec<Value>,
}

impl Flows {
    /// The flow id of a packet of UE `ue` (uplink or not) with this five-tuple, on DRB `drb_idx`.
    pub fn id(
        &mut self,
        ul: bool,
        ue: u32,
        drb_idx: usize,
        (proto, src, dst, sp, dp): (u8, IpAddr, IpAddr, u16, u16),
    ) -> u32 {
        let n = self.ids.len() as u32;
        let json = &mut self.json;
        *self.ids.entry((ul, proto, src, dst, sp, dp)).or_insert_with(|| {
            let kind = match proto {
                1 => "icmp",
                58 => "icmpv6",
                6 => "tcp",
                17 => "udp",
                _ => "ip",
            };
            json.push(json!({
                "flow": n, "type": kind, "ue": ue, "dir": if ul { "ul" } else { "dl" }, "drb": drb_idx + 1,
                "src": src.to_string(), "dst": dst.to_string(), "sport": sp, "dport": dp, "protocol": proto,
            }));
            n
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(proto: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
        let mut p =
            vec![0x45, 0, 0, 0, 0, 1, (frag >> 8) as u8, frag as u8, 64, proto, 0, 0, 10, 45, 0, 2, 10, 45, 0, 1];
        p.extend_from_slice(l4);
        p
    }

    #[test]
    fn the_ecn_field_is_read_and_ce_written_with_a_good_ipv4_checksum() {
        let mut p = v4(17, 0, &[0x13, 0x88, 0x14, 0x51, 0, 8, 0, 0]);
        p[1] = 0xb9; // DSCP 46, ECT(1)
        crate::offload::ipv4_checksum(&mut p, 20);
        assert_eq!(ecn(&p), 1);
        assert!(set_ce(&mut p));
        assert_eq!((ecn(&p), p[1] >> 2), (3, 46), "CE, DSCP kept");
        // A header whose checksum is right sums to 0xffff (RFC 1071).
        let sum: u32 = p[..20].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
        assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff);
        let mut v6 = vec![0x60, 0x10, 0, 0, 0, 8, 17, 64];
        v6.extend_from_slice(&[0; 32]);
        assert_eq!(ecn(&v6), 1, "traffic class 0x01: ECT(1)");
        assert!(set_ce(&mut v6));
        assert_eq!((ecn(&v6), v6[0], v6[1]), (3, 0x60, 0x30));
        assert!(!set_ce(&mut [0u8; 8]));
    }

    #[test]
    fn a_udp_datagram_to_a_ue_is_well_formed() {
        let p = udp4("10.45.0.1".parse().unwrap(), "10.45.0.2".parse().unwrap(), ANBR_PORT, b"hello");
        assert_eq!(p.len(), 33);
        assert_eq!(five_tuple(&p), Some((17, "10.45.0.1".parse().unwrap(), "10.45.0.2".parse().unwrap(), 4747, 4747)));
        let sum: u32 = p[..20].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
        assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff);
        assert_eq!(&p[28..], b"hello");
    }

    #[test]
    fn five_tuples_and_echoes() {
        let udp = v4(17, 0, &[0x13, 0x88, 0x14, 0x51, 0, 8, 0, 0]);
        assert_eq!(
            five_tuple(&udp),
            Some((17, "10.45.0.2".parse().unwrap(), "10.45.0.1".parse().unwrap(), 5000, 5201))
        );
        // A later fragment has no ports.
        assert_eq!(five_tuple(&v4(17, 0x0010, &[1, 2, 3, 4])).unwrap().3, 0);
        assert_eq!(five_tuple(&[0x60; 10]), None);
        let ping = v4(1, 0, &[8, 0, 0, 0, 0x12, 0x34, 0, 7]);
        assert_eq!(echo(&ping), Some((true, 0x1234, 7)));
        assert_eq!(echo(&v4(1, 0, &[0, 0, 0, 0, 0x12, 0x34, 0, 7])), Some((false, 0x1234, 7)));
        assert_eq!(echo(&udp), None);
        let mut f = Flows::default();
        let t = five_tuple(&udp).unwrap();
        assert_eq!((f.id(true, 0, 0, t), f.id(true, 0, 0, t), f.id(false, 0, 0, t)), (0, 0, 1));
        assert_eq!(f.json[0]["type"], "udp");
    }
}
