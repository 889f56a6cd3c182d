//! MAC lines at the DU: the RLC PDUs a DL MAC PDU carried, the subPDUs of a UL one.

use scout_events::{Layer, Node, Point, Reason, Sink};

use super::{Line, Stitcher, DRB0};

impl Stitcher {
    /// MAC lines.
    pub(super) fn mac<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        match l.m.name {
            "DL PDU" => self.mac_dl_pdu(l, sink),
            "UL" if l.body.contains(": Discarding SDU.") => self.mac_ul_discarding(l, sink),
            "UL" if l.body.contains(" subPDUs: [") => self.mac_ul_subpdus(l),
            _ => false,
        }
    }

    /// MAC `DL PDU`: the RLC PDUs built for it are transmitted.
    fn mac_dl_pdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ref m, .. } = *l;
        let Some(mue) = m.num("ue").map(|u| u as u32) else { return self.unlinked_line("mac_fields") };
        let rnti = m.num("rnti").map(|r| r as u16);
        if let Some(r) = rnti {
            self.ids.rnti_of_du.insert(mue, r);
        }
        let items = self.mac_pending.remove(&mue).unwrap_or_default();
        for it in &items {
            let mut ev = self.ev(t, (Node::GnbDu, Layer::Mac, Point::Tx), mue, Some(it.drb), it.pkt);
            ev.rnti = rnti;
            ev.sn = Some(it.sn as u32);
            ev.seg_offset = Some(it.so);
            ev.bytes = it.bytes;
            ev.retx = it.retx;
            sink.packet(ev);
        }
        // The HARQ process carrying this block: the grant SCHED logged for this RNTI in
        // this slot. Its retransmissions then resend these RLC PDUs.
        if let (Some(r), Some(slot)) = (rnti, l.slot) {
            if let Some(&(sfn, sl, hid)) = self.dl_grant.get(&r) {
                if (sfn, sl) == slot && !items.is_empty() {
                    self.dl_tb.insert((r, hid), (mue, items));
                }
            }
        }
        true
    }

    /// MAC `UL … Discarding SDU` (an inexistent LCID).
    fn mac_ul_discarding<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ref m, .. } = *l;
        // `UL rnti=… ue=… lcid=4 UL-DCCH: Discarding SDU. Cause: Inexistent LCID`: the
        // MAC drops the UE's SDUs on a bearer that no longer exists.
        let (Some(mue), Some(lcid)) = (m.num("ue").map(|u| u as u32), m.num("lcid")) else {
            return self.unlinked_line("mac_fields");
        };
        let lost: Vec<u32> = {
            let q = self.mac_ul.entry(mue).or_default();
            let lost = q.iter().filter(|(l, _)| u64::from(*l) == lcid).map(|(_, n)| *n).collect();
            q.retain(|(l, _)| u64::from(*l) != lcid);
            lost
        };
        let drb = (lcid >= 4).then(|| (lcid - 3) as u8);
        for bytes in lost {
            let pkt = self.new_pkt();
            let mut ev = self.ul(t, (Node::GnbDu, Layer::Mac, Point::Drop), mue, drb, pkt);
            ev.bytes = bytes;
            ev.reason = Some(Reason::NoSession);
            sink.packet(ev);
            *self.stats.drops.entry(("mac", Reason::NoSession.as_str())).or_insert(0) += 1;
        }
        true
    }

    /// MAC `UL … subPDUs: [...]`: the RLC PDUs of one UL MAC PDU.
    fn mac_ul_subpdus(&mut self, l: &Line<'_>) -> bool {
        let Line { ref m, .. } = *l;
        // Msg3 on CCCH (`UL rnti=… subPDUs: [CCCH48: …]`) comes before the UE has an index.
        let Some(mue) = m.num("ue").map(|u| u as u32) else { return true };
        if let Some(r) = m.num("rnti") {
            self.ids.rnti_of_du.insert(mue, r as u16);
        }
        let q = self.mac_ul.entry(mue).or_default();
        if !q.is_empty() {
            // RLC PDUs of the previous MAC PDU that no RLC line claimed.
            *self.stats.unlinked.entry("ul_mac_subpdu_without_rlc_pdu").or_insert(0) += q.len() as u64;
            self.stats.unlinked_first.entry("ul_mac_subpdu_without_rlc_pdu").or_insert(self.at);
            q.clear();
        }
        q.extend(ul_subpdus(l.body));
        // The transport block this MAC PDU came in: the RNTI's last decoded one.
        let rnti = m.num("rnti").map(|r| r as u16);
        let tb = rnti.and_then(|r| self.tb_decoded.remove(&r)).unwrap_or_default();
        self.tb_of_mac.insert(mue, (rnti, tb));
        true
    }

    /// Takes the MAC subPDU that carried a UL RLC PDU: the UE's next one on the bearer's LCID
    /// (srsRAN maps SRBn to LCID n and DRBn to LCID n + 3), checking its length when known.
    pub(super) fn take_mac_ul(&mut self, ue: u32, rb: u8, len: Option<u64>) {
        let lcid = if rb >= DRB0 { rb - DRB0 + 3 } else { rb };
        let q = self.mac_ul.entry(ue).or_default();
        match q.iter().position(|(l, _)| *l == lcid) {
            Some(i) => {
                let (_, got) = q.remove(i).unwrap_or_default();
                if len.is_some_and(|l| l != u64::from(got)) {
                    self.unlinked("ul_mac_subpdu_length_mismatch");
                }
            }
            None => self.unlinked("ul_rlc_pdu_without_mac_subpdu"),
        }
    }
}

/// The MAC SDUs of a `UL rnti=… ue=… subPDUs: [lcid=4: len=56, SBSR: …, PAD: len=3]` entry, as
/// (LCID, length); MAC CEs and padding are not RLC PDUs.
fn ul_subpdus(body: &str) -> Vec<(u8, u32)> {
    let Some(i) = body.find("subPDUs: [") else { return Vec::new() };
    let list = body[i + 10..].trim_end().trim_end_matches(']');
    list.split(", ")
        .filter_map(|sub| {
            let sub = sub.trim().strip_prefix("lcid=")?;
            let (lcid, rest) = sub.split_once(": ")?;
            let len = rest.strip_prefix("len=")?.trim();
            Some((lcid.parse().ok()?, len.parse().ok()?))
        })
        .collect()
}
