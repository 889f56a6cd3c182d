//! GTP-U on N3 (TS 29.281): [`decode`] reads any GTP-U message (the pcap ingest's, the probe's,
//! the UPF's); [`encap`] writes a G-PDU as Scout's UPF and gNB do, one extension header, the PDU
//! Session Container (type 0x85, TS 38.415 §5.5.2) with the packet's QFI; [`echo_response`] is
//! what a GTP-U node owes an echo request (§7.2.2). What the UPF writes is what a capture of it
//! decodes.

use crate::Cause;

/// GTP-U message types (TS 29.281 §6.1, Table 6.1-1).
pub const GTPU_ECHO_REQUEST: u8 = 1;
pub const GTPU_ECHO_RESPONSE: u8 = 2;
pub const GTPU_ERROR_INDICATION: u8 = 26;
pub const GTPU_SUPPORTED_EXT_HEADERS: u8 = 31;
pub const GTPU_END_MARKER: u8 = 254;
pub const GTPU_G_PDU: u8 = 255;

/// A GTP-U header (TS 29.281 §5) with its extension headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gtpu<'a> {
    pub msg_type: u8,
    pub teid: u32,
    /// Sequence number, when the S flag is set.
    pub seq: Option<u16>,
    /// PDU Session Container (extension header type 0x85; TS 38.415 §5.5.2): PDU type (0 DL
    /// PDU SESSION INFORMATION, 1 UL) and QFI.
    pub pdu_type: Option<u8>,
    pub qfi: Option<u8>,
    /// The T-PDU (G-PDU) or information elements.
    pub payload: &'a [u8],
    /// The length field does not give the datagram's length after the mandatory header.
    pub length_mismatch: bool,
}

/// Reads a GTP-U message: its header, extension headers (the PDU Session Container's PDU type
/// and QFI kept) and payload.
#[inline]
pub fn decode(d: &[u8]) -> Result<Gtpu<'_>, Cause> {
    if d.len() < 8 {
        return Err("GTP header truncated");
    }
    let flags = d[0];
    if flags >> 5 != 1 {
        return Err("GTP version is not 1 (GTPv2-C or other on the GTP-U port)");
    }
    if flags & 0x10 == 0 {
        return Err("GTP' (protocol type 0), not GTP-U");
    }
    let msg_type = d[1];
    let len = usize::from(u16::from_be_bytes([d[2], d[3]]));
    let teid = u32::from_be_bytes([d[4], d[5], d[6], d[7]]);
    // As Wireshark does, the message is the rest of the datagram whatever the length field says
    // (a sender that counts the optional fields twice, or pads, still carries an intact T-PDU);
    // the disagreement is reported, and counted by the ingest.
    let body = &d[8..];
    let mut g = Gtpu { msg_type, teid, length_mismatch: len != body.len(), ..Gtpu::default() };
    let mut o = 0;
    if flags & 0x07 != 0 {
        if body.len() < 4 {
            return Err("GTP-U optional fields truncated");
        }
        if flags & 0x02 != 0 {
            g.seq = Some(u16::from_be_bytes([body[0], body[1]]));
        }
        let mut next = if flags & 0x04 != 0 { body[3] } else { 0 };
        o = 4;
        while next != 0 {
            let Some(&units) = body.get(o) else { return Err("GTP-U extension header truncated") };
            let n = usize::from(units) * 4;
            if n == 0 || o + n > body.len() {
                return Err("GTP-U extension header with a bad length");
            }
            let content = &body[o + 1..o + n - 1];
            if next == 0x85 && content.len() >= 2 {
                g.pdu_type = Some(content[0] >> 4);
                g.qfi = Some(content[1] & 0x3f);
            }
            next = body[o + n - 1];
            o += n;
        }
    }
    g.payload = &body[o..];
    Ok(g)
}

/// GTP-U's UDP port (TS 29.281 §4.4.2).
pub const GTPU_PORT: u16 = 2152;

/// PDU types of the PDU Session Container (TS 38.415 §5.5.3.1).
pub const DL_PDU_SESSION_INFORMATION: u8 = 0;
pub const UL_PDU_SESSION_INFORMATION: u8 = 1;

/// What [`encap`] puts before the inner packet: the 8-byte mandatory header, the 4 optional
/// octets (sequence number, N-PDU number, next extension type) and the 4-octet container.
pub const HEADER_LEN: usize = 16;

/// Writes into `out` (cleared first) the G-PDU carrying `inner` in tunnel `teid` with a PDU
/// Session Container of `pdu_type` and `qfi`.
pub fn encap(out: &mut Vec<u8>, teid: u32, pdu_type: u8, qfi: u8, inner: &[u8]) {
    out.clear();
    // §5.1: version 1, protocol type GTP (PT), extension header present (E); the length counts
    // everything after the mandatory 8 octets.
    let len = (HEADER_LEN - 8 + inner.len()) as u16;
    out.extend_from_slice(&[0x34, GTPU_G_PDU]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&teid.to_be_bytes());
    // Sequence number and N-PDU number (not used: S and PN clear), next extension: 0x85.
    out.extend_from_slice(&[0, 0, 0, 0x85]);
    // The container: 1 unit of 4 octets; PDU type in the high nibble; QFI in the low 6 bits of
    // the second octet (PPP, RQI / N3 delay, new IE flags clear); no further extension.
    out.extend_from_slice(&[1, pdu_type << 4, qfi & 0x3f, 0]);
    out.extend_from_slice(inner);
}

/// The echo response to an echo request with sequence number `seq` (§7.2.2: the Recovery IE,
/// type 14, whose value receivers ignore, is still sent).
pub fn echo_response(seq: Option<u16>) -> Vec<u8> {
    let s = seq.unwrap_or(0).to_be_bytes();
    vec![0x32, GTPU_ECHO_RESPONSE, 0, 6, 0, 0, 0, 0, s[0], s[1], 0, 0, 14, 0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::tests::v4;

    #[test]
    fn gtpu_with_sequence_and_pdu_session_container() {
        // flags 0x36: version 1, PT, E and S; G-PDU; then seq 0x0102, N-PDU 0, next ext 0x85;
        // the container: length 1 (4 bytes), PDU type 1 (UL), QFI 9, next 0.
        let inner = v4([10, 45, 0, 2], [8, 8, 8, 8], 1, 1, 64, b"ping");
        let len = 4 + 4 + inner.len();
        let mut d = vec![0x36, 0xff, (len >> 8) as u8, len as u8, 0, 0, 0, 5, 0x01, 0x02, 0, 0x85, 1, 0x10, 9, 0];
        d.extend_from_slice(&inner);
        let g = decode(&d).unwrap();
        assert_eq!((g.msg_type, g.teid, g.seq, g.pdu_type, g.qfi), (255, 5, Some(0x0102), Some(1), Some(9)));
        assert_eq!(g.payload, &inner[..]);
        assert!(!g.length_mismatch);
        // A length field that disagrees with the datagram: the datagram wins (Wireshark).
        let g = decode(&d[..d.len() - 1]).unwrap();
        assert!(g.length_mismatch && g.payload == &inner[..inner.len() - 1]);
        assert!(decode(&d[..11]).is_err());
        let mut bad = d.clone();
        bad[12] = 0; // extension length 0
        assert_eq!(decode(&bad), Err("GTP-U extension header with a bad length"));
    }

    #[test]
    fn a_g_pdu_reads_back_with_its_tunnel_qfi_and_packet() {
        let inner = [0x45u8, 0, 0, 20, 1, 2, 3, 4, 64, 17, 0, 0, 10, 45, 0, 2, 10, 45, 0, 1];
        let mut out = Vec::new();
        for (pdu_type, qfi) in [(DL_PDU_SESSION_INFORMATION, 9), (UL_PDU_SESSION_INFORMATION, 63)] {
            encap(&mut out, 0xdead_beef, pdu_type, qfi, &inner);
            let g = decode(&out).expect("the ingest reads it");
            assert_eq!(g.msg_type, GTPU_G_PDU);
            assert_eq!((g.teid, g.pdu_type, g.qfi), (0xdead_beef, Some(pdu_type), Some(qfi)));
            assert_eq!(g.payload, &inner);
            assert!(!g.length_mismatch);
        }
    }

    #[test]
    fn an_echo_response_answers_with_the_requests_sequence_number() {
        let r = echo_response(Some(0x1234));
        let g = decode(&r).expect("an echo response");
        assert_eq!((g.msg_type, g.seq, g.teid), (GTPU_ECHO_RESPONSE, Some(0x1234), 0));
        assert!(!g.length_mismatch);
        assert_eq!(g.payload, &[14, 0]);
    }
}
