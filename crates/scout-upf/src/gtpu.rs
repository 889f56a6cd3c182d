//! GTP-U on N3 (TS 29.281) as Scout's UPF and gNB write it: a G-PDU whose header carries one
//! extension header, the PDU Session Container (type 0x85, TS 38.415 §5.5.2) with the packet's
//! QFI; and the echo response a GTP-U node owes an echo request (§7.2.2). Reading is the pcap
//! ingest's reader ([`scout_ingest::pcap::packet::gtpu`]), so what the UPF writes is what a
//! capture of it decodes.

pub use scout_ingest::pcap::packet::{gtpu as decode, Gtpu, GTPU_ECHO_REQUEST, GTPU_ECHO_RESPONSE, GTPU_G_PDU};

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
