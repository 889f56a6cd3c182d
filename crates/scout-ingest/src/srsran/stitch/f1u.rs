//! F1-U between the CU-UP and the DU: the F1-U bearers' debug lines, and NR-U (TS 38.425) over
//! GTP-U where the CU and DU are separate apps.

use std::collections::VecDeque;

use scout_events::{Layer, Node, Point, Reason, Sink};

use super::{take_matching, Line, Stitcher};

impl Stitcher {
    /// CU-F1-U lines (debug).
    pub(super) fn cu_f1u<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        match l.m.name {
            "F1-U bearer received SDU" if l.drb.is_some() && l.m.get("is_retx") != Some("true") => {
                self.f1u_cu_sdu(l, sink)
            }
            _ => false,
        }
    }

    /// DU-F1-U lines.
    pub(super) fn du_f1u<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        match l.m.name {
            "Delivering T-PDU" if l.drb.is_some() => self.f1u_du_delivering(l, sink),
            _ if l.m.name.starts_with("Dropped F1-U PDU") && l.drb.is_some() => self.f1u_du_dropped(l, sink),
            _ => false,
        }
    }

    /// CU-F1-U `F1-U bearer received SDU` (DL, debug).
    fn f1u_cu_sdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // Debug, CU-UP side (`ue=0 DRB1 ul-teid=…: F1-U bearer received SDU. size=N
        // is_retx=false`): PDCP handed the PDU to the F1-U bearer (its next one, length checked).
        let (Some(cu), Some(len)) = (ue, m.num("size")) else { return self.unlinked_line("f1u_fields") };
        let d = drb.unwrap_or(0);
        let Some((pkt, _)) =
            self.f1u_cu_pending.get_mut(&(cu, d)).and_then(|q| take_matching(q, |l| u64::from(l) == len))
        else {
            return self.unlinked_line("f1u_sdu_without_pdcp");
        };
        let mut ev = self.ev(t, (Node::GnbCu, Layer::F1u, Point::ProcBegin), cu, drb, pkt);
        ev.bytes = len as u32;
        self.ids.cu_event(ev, sink);
        true
    }

    /// DU-F1-U `Delivering T-PDU` (DL, debug).
    fn f1u_du_delivering<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // Debug, DU side (`ue=0 DRB1 addr=… dl-teid=…: Delivering T-PDU. size=N`): the DL
        // PDCP PDU reached the DU's F1-U bearer, which hands it to RLC.
        let (Some(du), Some(len)) = (ue, m.num("size")) else { return self.unlinked_line("f1u_fields") };
        self.f1u_arrive(t, du, drb, len, sink)
    }

    /// NR-U at the DU (split CU/DU apps): `RX DL user data`.
    pub(super) fn nru_dl_at_du<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, ref m, .. } = *l;
        // NR-U at the DU (split CU/DU apps): `ue=0 RX teid=…: RX DL user data. t_pdu_len=N`;
        // the T-PDU is the PDCP PDU. The DRB is the UE's whose next PDU has that length.
        let (Some(du), Some(len)) = (ue, m.num("t_pdu_len")) else { return self.unlinked_line("nru_fields") };
        self.f1u_arrive(t, du, None, len, sink)
    }

    /// NR-U at the CU-UP: `RX DL data delivery status`, which also carries UL user data.
    pub(super) fn nru_ul_at_cu(&mut self, l: &Line<'_>) -> bool {
        let Line { t, ue, ref m, .. } = *l;
        // NR-U at the CU-UP: srsRAN logs every UL NR-U PDU with this text; one with a
        // T-PDU carries UL user data (a PDCP PDU) towards PDCP (reference §2.2).
        let Some(cu) = ue else { return self.unlinked_line("nru_fields") };
        if let Some(len) = m.num("t_pdu_len") {
            let q = self.nru_ul_arrived.entry(cu).or_default();
            q.push_back((t, len as u32));
            if q.len() > 4096 {
                q.pop_front();
            }
        }
        true
    }

    /// NR-U at the CU-UP: `TX PDU`, a DL PDCP PDU leaving for the DU.
    pub(super) fn nru_dl_at_cu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, ref m, .. } = *l;
        // NR-U at the CU-UP (a file with CU-UP lines only): `ue=0 TX teid=…: TX PDU.
        // pdu_len=N teid=…`, the DL PDCP PDU leaving for the DU. N adds the GTP-U and NR
        // RAN container headers (TS 29.281, TS 38.425 §5.5.2.1) to the PDCP PDU: the
        // UE's next PDCP PDU shorter than N by at most 64 bytes (inferred).
        let (Some(cu), Some(len)) = (ue, m.num("pdu_len")) else { return self.unlinked_line("nru_fields") };
        let fits = |l: u32| len > u64::from(l) && len - u64::from(l) <= 64;
        let Some((pkt, bytes)) = self.nru_dl_pending.get_mut(&cu).and_then(|q| {
            let i = q.iter().take(8).position(|&(_, l)| fits(l))?;
            q.remove(i)
        }) else {
            return self.unlinked_line("nru_tx_without_pdcp");
        };
        let drb = self.nru_drb.get(&pkt).copied();
        let mut ev = self.ev(t, (Node::GnbCu, Layer::F1u, Point::ProcEnd), cu, drb, pkt);
        ev.bytes = bytes;
        self.ids.cu_event(ev, sink);
        true
    }

    /// DU-F1-U `Dropped F1-U PDU, queue is full` (DL).
    fn f1u_du_dropped<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, .. } = *l;
        // `Dropped F1-U PDU, queue is full`: the DL PDU could not be handed to the DU's UE
        // executor; it is the bearer's next PDCP PDU not yet seen by F1-U.
        let Some(du) = ue else { return self.unlinked_line("f1u_fields") };
        let d = drb.unwrap_or(0);
        let cu = self.ids.cu(du).unwrap_or(du);
        let Some((pkt, len)) = self.f1u_pending.get_mut(&(cu, d)).and_then(VecDeque::pop_front) else {
            return self.unlinked_line("f1u_drop_without_pdcp");
        };
        self.pdcp_by_sn.retain(|_, v| v.0 != pkt);
        let mut ev = self.ev(t, (Node::GnbDu, Layer::F1u, Point::Drop), du, drb, pkt);
        ev.bytes = len;
        ev.reason = Some(Reason::F1uQueueFull);
        sink.packet(ev);
        *self.stats.drops.entry(("f1u", Reason::F1uQueueFull.as_str())).or_insert(0) += 1;
        true
    }

    /// A DL PDCP PDU reached the DU (`f1u arrive`): the bearer's next PDU not yet there whose length
    /// is `len` (on any of the UE's DRBs when the line names none).
    fn f1u_arrive<S: Sink>(&mut self, t: i64, du: u32, drb: Option<u8>, len: u64, sink: &mut S) -> bool {
        let cu = self.ids.cu(du).unwrap_or(du);
        let keys: Vec<(u32, u8)> = match drb {
            Some(d) => vec![(cu, d)],
            None => {
                let mut k: Vec<_> = self.f1u_pending.keys().filter(|k| k.0 == cu).copied().collect();
                k.sort_unstable();
                k
            }
        };
        let found = keys.iter().find_map(|k| {
            let q = self.f1u_pending.get_mut(k)?;
            let i = q.iter().take(8).position(|&(_, l)| u64::from(l) == len)?;
            q.remove(i).map(|(p, _)| (p, k.1))
        });
        let Some((pkt, d)) = found else {
            self.unlinked("f1u_sdu_without_pdcp");
            return true;
        };
        let mut ev = self.ev(t, (Node::GnbDu, Layer::F1u, Point::Arrive), du, Some(d), pkt);
        ev.bytes = len as u32;
        sink.packet(ev);
        true
    }
}
