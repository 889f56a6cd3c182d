//! NG-U GTP-U lines at the CU-UP: where a DL packet enters the gNB and a UL packet leaves it.

use std::collections::VecDeque;

use scout_events::{Layer, Node, Point, Sink};

use super::{take_matching, Line, Stitcher};

/// GTP-U header (8 bytes) plus the PDU Session Container extension header (8 bytes with the next
/// extension type byte and padding): what srsRAN's `TX PDU. pdu_len=` adds to the inner packet.
const GTPU_EXT_HDR: u64 = 16;

impl Stitcher {
    /// GTP-U lines: NG-U (N3) here, NR-U (F1-U in split CU/DU apps) in [`super::f1u`].
    pub(super) fn gtpu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        match l.m.name {
            "RX SDU" if l.dl => self.gtpu_dl_sdu(l, sink),
            "RX DL user data" if l.m.prefix.dir == Some("RX") => self.nru_dl_at_du(l, sink),
            "RX DL data delivery status" if l.m.prefix.dir == Some("RX") => self.nru_ul_at_cu(l),
            "TX PDU" if l.m.prefix.dir == Some("TX") && self.file_role.get(self.at.0) == Some(&1) => {
                self.nru_dl_at_cu(l, sink)
            }
            "TX PDU" if l.ul => self.gtpu_ul_pdu(l, sink),
            _ => false,
        }
    }

    /// NG-U `RX SDU` (DL): a packet enters the gNB — a new packet.
    fn gtpu_dl_sdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, ref m, .. } = *l;
        let (Some(ue), Some(len)) = (ue, m.num("sdu_len")) else { return self.unlinked_line("gtpu_fields") };
        let pkt = self.new_pkt();
        let mut ev = self.ev(t, (Node::GnbCu, Layer::Gtpu, Point::ProcEnd), ue, None, pkt);
        ev.bytes = len as u32;
        ev.qfi = m.get("qos_flow").and_then(|q| q.strip_prefix("QFI=")).and_then(|q| q.parse().ok());
        self.ids.cu_event(ev, sink);
        self.gtpu_pending.entry(ue).or_default().push_back(pkt);
        true
    }

    /// NG-U `TX PDU` (UL): the packet leaves towards the UPF, after its PDCP delivery.
    fn gtpu_ul_pdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, ref m, .. } = *l;
        let (Some(ue), Some(len)) = (ue, m.num("pdu_len")) else { return self.unlinked_line("gtpu_fields") };
        let pending =
            self.gtpu_ul.get_mut(&ue).and_then(|q| take_matching(q, |sdu| u64::from(sdu) + GTPU_EXT_HDR == len));
        if let Some(done) = self.sdap_ul_done.get_mut(&ue) {
            *done = done.saturating_sub(1);
        }
        // GTP-U header with the PDU Session Container extension: 8 + 8 bytes
        // (TS 29.281 §5.1, §5.2.2.7; TS 38.415 §5.5.2.2).
        if pending.is_some_and(|(_, sdu)| u64::from(sdu) + GTPU_EXT_HDR != len) {
            self.unlinked("ul_gtpu_pdu_length_differs_from_pdcp_sdu");
        }
        let pkt = self.linked_or_new(pending.map(|(p, _)| p), "ul_gtpu_pdu_without_pdcp_sdu");
        let mut ev = self.ul(t, (Node::GnbCu, Layer::Gtpu, Point::ProcEnd), ue, None, pkt);
        ev.bytes = len.saturating_sub(GTPU_EXT_HDR) as u32;
        ev.qfi = m.get("qfi").and_then(|q| q.strip_prefix("QFI=")).and_then(|q| q.parse().ok());
        self.ids.cu_event(ev, sink);
        true
    }

    /// The UE's oldest DL packet waiting for PDCP (SDAP's count of it goes with it).
    pub(super) fn pop_gtpu_dl(&mut self, ue: u32) -> Option<u64> {
        let p = self.gtpu_pending.get_mut(&ue).and_then(VecDeque::pop_front);
        if let Some(done) = self.sdap_done.get_mut(&ue) {
            *done = done.saturating_sub(1);
        }
        p
    }
}
