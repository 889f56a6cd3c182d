//! SDAP lines at the CU-UP (debug level): the QoS flow to DRB mapping of each packet.

use scout_events::{Layer, Node, Point, Sink};

use super::{Line, Stitcher};

impl Stitcher {
    /// SDAP lines.
    pub(super) fn sdap<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        match l.m.name {
            "TX PDU" if l.dl => self.sdap_dl(l, sink),
            "RX SDU" if l.ul => self.sdap_ul(l, sink),
            _ => false,
        }
    }

    /// SDAP `TX PDU` (DL, debug).
    fn sdap_dl<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // Debug: `ue=1 psi=4 QFI=1 DRB1 DL: TX PDU. QFI=1 pdu_len=1278` — SDAP maps the UE's
        // next GTP-U SDU (in order) to its DRB.
        let (Some(ue), Some(len)) = (ue, m.num("pdu_len")) else { return self.unlinked_line("sdap_fields") };
        let done = self.sdap_done.entry(ue).or_insert(0);
        let Some(&pkt) = self.gtpu_pending.get(&ue).and_then(|q| q.get(*done)) else {
            return self.unlinked_line("sdap_pdu_without_gtpu");
        };
        *done += 1;
        let mut ev = self.ev(t, (Node::GnbCu, Layer::Sdap, Point::ProcEnd), ue, drb, pkt);
        ev.bytes = len as u32;
        ev.qfi = m.prefix.qfi.map(|q| q as u8);
        self.ids.cu_event(ev, sink);
        true
    }

    /// SDAP `RX SDU` (UL, debug).
    fn sdap_ul<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // Debug: the UE's next PDCP delivery (in order) passes SDAP towards GTP-U.
        let (Some(ue), Some(len)) = (ue, m.num("sdu_len")) else { return self.unlinked_line("sdap_fields") };
        let done = self.sdap_ul_done.entry(ue).or_insert(0);
        let Some(&(pkt, _)) = self.gtpu_ul.get(&ue).and_then(|q| q.get(*done)) else {
            return self.unlinked_line("ul_sdap_sdu_without_pdcp");
        };
        *done += 1;
        let mut ev = self.ul(t, (Node::GnbCu, Layer::Sdap, Point::ProcEnd), ue, drb, pkt);
        ev.bytes = len as u32;
        ev.qfi = m.prefix.qfi.map(|q| q as u8);
        self.ids.cu_event(ev, sink);
        true
    }
}
