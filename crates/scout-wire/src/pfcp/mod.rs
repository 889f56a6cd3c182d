//! PFCP (N4, TS 29.244) on the wire: the message header (§7.2.2), the IE encoding (§8.1.1), the
//! message and IE type tables — one for every reader and writer of PFCP in Scout:
//!
//! - [`session`]: what a captured message says about a session (SEIDs, tunnels, UE addresses,
//!   slice, DNN, QFIs, cause), for `scout ingest pcap` and the live probe;
//! - [`rules`]: the messages Scout's SMF and UPF exchange, with the rules they carry, encoded
//!   and decoded.

pub mod rules;
pub mod session;

pub use rules::{decode, encode, Action, Error, Far, Interface, Message, Pdr, Pfcp, Qer, Tunnel};

/// PFCP's UDP port (TS 29.244 §4.2.1).
pub const PFCP_PORT: u16 = 8805;

/// The procedure a message type belongs to and whether it is a request (TS 29.244 Table 7.3-1).
pub fn msg_kind(t: u8) -> Option<(&'static str, bool)> {
    Some(match t {
        1 => ("heartbeat", true),
        2 => ("heartbeat", false),
        3 => ("pfd_management", true),
        4 => ("pfd_management", false),
        5 => ("association_setup", true),
        6 => ("association_setup", false),
        7 => ("association_update", true),
        8 => ("association_update", false),
        9 => ("association_release", true),
        10 => ("association_release", false),
        11 => ("version_not_supported", false),
        12 => ("node_report", true),
        13 => ("node_report", false),
        14 => ("session_set_deletion", true),
        15 => ("session_set_deletion", false),
        16 => ("session_set_modification", true),
        17 => ("session_set_modification", false),
        50 => ("session_establishment", true),
        51 => ("session_establishment", false),
        52 => ("session_modification", true),
        53 => ("session_modification", false),
        54 => ("session_deletion", true),
        55 => ("session_deletion", false),
        56 => ("session_report", true),
        57 => ("session_report", false),
        _ => return None,
    })
}

/// IE types (TS 29.244 Table 8.1.2-1): those the capture reader ([`session`]) and Scout's UPF and
/// SMF ([`rules`]) read and write — one table for both.
pub mod ie {
    pub const CREATE_PDR: u16 = 1;
    pub const PDI: u16 = 2;
    pub const CREATE_FAR: u16 = 3;
    pub const FORWARDING_PARAMETERS: u16 = 4;
    pub const CREATE_QER: u16 = 7;
    pub const CREATED_PDR: u16 = 8;
    pub const UPDATE_PDR: u16 = 9;
    pub const UPDATE_FAR: u16 = 10;
    pub const UPDATE_FORWARDING_PARAMETERS: u16 = 11;
    pub const REMOVE_PDR: u16 = 15;
    pub const REMOVE_FAR: u16 = 16;
    pub const CAUSE: u16 = 19;
    pub const SOURCE_INTERFACE: u16 = 20;
    pub const F_TEID: u16 = 21;
    pub const NETWORK_INSTANCE: u16 = 22;
    pub const GATE_STATUS: u16 = 25;
    pub const PRECEDENCE: u16 = 29;
    pub const DESTINATION_INTERFACE: u16 = 42;
    pub const APPLY_ACTION: u16 = 44;
    pub const PDR_ID: u16 = 56;
    pub const F_SEID: u16 = 57;
    pub const NODE_ID: u16 = 60;
    pub const OUTER_HEADER_CREATION: u16 = 84;
    pub const UE_IP_ADDRESS: u16 = 93;
    pub const OUTER_HEADER_REMOVAL: u16 = 95;
    pub const RECOVERY_TIME_STAMP: u16 = 96;
    pub const FAR_ID: u16 = 108;
    pub const QER_ID: u16 = 109;
    pub const QFI: u16 = 124;
    pub const APN_DNN: u16 = 159;
    pub const S_NSSAI: u16 = 257;
}

/// Cause values (§8.2.1, Table 8.2.1-1).
pub mod cause {
    pub const REQUEST_ACCEPTED: u8 = 1;
    pub const REQUEST_REJECTED: u8 = 64;
    pub const SESSION_CONTEXT_NOT_FOUND: u8 = 65;
    pub const MANDATORY_IE_MISSING: u8 = 66;
    pub const RULE_CREATION_MODIFICATION_FAILURE: u8 = 69;
    pub const NO_ESTABLISHED_PFCP_ASSOCIATION: u8 = 72;
}

/// Why bytes are not a PFCP message, and where (the byte offset in the datagram).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed {
    pub what: &'static str,
    pub offset: usize,
}

/// A message's fixed header (§7.2.2) and where its IEs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    pub msg_type: u8,
    /// The S flag's SEID (session messages).
    pub seid: Option<u64>,
    pub seq: u32,
    /// The message as its length field gives it (header and IEs; what follows in the datagram is
    /// not part of it).
    pub message: &'a [u8],
    /// The IEs' bytes, and their offset in the datagram.
    pub ies: &'a [u8],
    pub ies_at: usize,
}

/// Reads the header of the message at the start of `d`: version 1; the length field counts all
/// after the first four octets; with the S flag an 8-byte SEID; a 3-byte sequence number and a
/// spare octet.
pub fn header(d: &[u8]) -> Result<Header<'_>, Malformed> {
    let err = |what, offset| Err(Malformed { what, offset });
    if d.len() < 8 {
        return err("PFCP header truncated", 0);
    }
    if d[0] >> 5 != 1 {
        return err("PFCP version is not 1", 0);
    }
    let session = d[0] & 0x01 != 0;
    let len = usize::from(u16::from_be_bytes([d[2], d[3]]));
    if d.len() < 4 + len {
        return err("PFCP message truncated (length field beyond the datagram)", 2);
    }
    let head = if session { 16 } else { 8 };
    if 4 + len < head {
        return err("PFCP header truncated", 2);
    }
    let seid = session.then(|| u64::from_be_bytes(d[4..12].try_into().expect("8 bytes")));
    let s = head - 4;
    Ok(Header {
        msg_type: d[1],
        seid,
        seq: u32::from_be_bytes([0, d[s], d[s + 1], d[s + 2]]),
        message: &d[..4 + len],
        ies: &d[head..4 + len],
        ies_at: head,
    })
}

/// An IE as read: its type, its value, and the value's offset in the datagram.
pub type Ie<'a> = (u16, &'a [u8], usize);

/// The IEs of `d` in order (TLV, §8.1.1: type 2 bytes, length 2 bytes; a vendor IE's value, type
/// ≥ 32768, starts with its enterprise ID), `d` at offset `at` in the datagram. An IE whose
/// header or value runs past `d` ends the walk with its error.
pub struct Ies<'a> {
    d: &'a [u8],
    o: usize,
    at: usize,
}

impl<'a> Ies<'a> {
    pub fn new(d: &'a [u8], at: usize) -> Self {
        Ies { d, o: 0, at }
    }
}

impl<'a> Iterator for Ies<'a> {
    type Item = Result<Ie<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        let d = &self.d[self.o..];
        if d.is_empty() {
            return None;
        }
        let offset = self.at + self.o;
        if d.len() < 4 {
            self.o = self.d.len();
            return Some(Err(Malformed { what: "PFCP IE header truncated", offset }));
        }
        let t = u16::from_be_bytes([d[0], d[1]]);
        let l = usize::from(u16::from_be_bytes([d[2], d[3]]));
        if d.len() < 4 + l {
            self.o = self.d.len();
            return Some(Err(Malformed { what: "PFCP IE truncated", offset }));
        }
        self.o += 4 + l;
        Some(Ok((t, &d[4..4 + l], offset + 4)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_and_ies_are_read_with_the_offset_of_what_is_wrong() {
        // A heartbeat request (no SEID), sequence 0x000102, one Recovery Time Stamp IE, then two
        // bytes that are not part of the message.
        let d = [0x20, 1, 0, 12, 0, 1, 2, 0, 0, 96, 0, 4, 0, 0, 0, 7, 0xaa, 0xbb];
        let h = header(&d).expect("a header");
        assert_eq!((h.msg_type, h.seid, h.seq, h.ies_at, h.message.len()), (1, None, 0x102, 8, 16));
        let ies: Vec<_> = Ies::new(h.ies, h.ies_at).collect();
        assert_eq!(ies, vec![Ok((96, &[0u8, 0, 0, 7][..], 12))]);
        // The IE's length runs past the message: the walk ends with the IE's offset.
        let short = Ies::new(&d[8..15], 8).collect::<Vec<_>>();
        assert_eq!(short, vec![Err(Malformed { what: "PFCP IE truncated", offset: 8 })]);
        assert_eq!(Ies::new(&d[8..10], 8).next(), Some(Err(Malformed { what: "PFCP IE header truncated", offset: 8 })));
        // A session message's SEID; a length field shorter than its header.
        let s = [0x21, 50, 0, 12, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 5, 0];
        assert_eq!(header(&s).map(|h| (h.seid, h.seq, h.ies.len())), Ok((Some(9), 5, 0)));
        assert_eq!(
            header(&[0x21, 50, 0, 4, 0, 0, 0, 0]).unwrap_err(),
            Malformed { what: "PFCP header truncated", offset: 2 }
        );
        assert_eq!(header(&d[..10]).unwrap_err().what, "PFCP message truncated (length field beyond the datagram)");
    }
}
