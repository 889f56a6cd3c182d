//! PDCP lines at the CU-UP: DL transmission, drops and discards; UL reception, reordering and
//! in-order delivery (TS 38.323 §5.2); the bearer's header size.

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node, Point, Reason, Sink};

use super::{rb_key, take_matching, Line, Stitcher, DRB0};

impl Stitcher {
    /// PDCP lines.
    pub(super) fn pdcp<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        match l.m.name {
            "TX PDU" if l.dl && l.drb.is_some() && l.m.get("type") == Some("data") => self.pdcp_dl_pdu(l, sink),
            "Drop burst finished" if l.dl => self.pdcp_dl_drop_burst(l, sink),
            "Discarding PDU" if l.dl && l.drb.is_some() => self.pdcp_dl_discard_timer(l, sink),
            "PDCP configured" => self.pdcp_configured(l),
            "Set" if l.m.get("integrity_enabled") == Some("on") => self.pdcp_integrity(l),
            "Reordering timer expired" if l.ul && l.drb.is_some() => self.pdcp_ul_t_reordering(l, sink),
            "RX PDU" if l.ul && l.drb.is_some() && l.m.get("type") == Some("data") => self.pdcp_ul_pdu(l, sink),
            "RX SDU" if l.ul && l.drb.is_some() => self.pdcp_ul_sdu(l, sink),
            _ => false,
        }
    }

    /// PDCP `TX PDU` (DL data): the packet’s COUNT; it waits for its RLC SDU line.
    fn pdcp_dl_pdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let (Some(ue), Some(len), Some(sn), Some(count)) = (ue, m.num("pdu_len"), m.num("sn"), m.num("count")) else {
            return self.unlinked_line("pdcp_fields");
        };
        let pending = self.pop_gtpu_dl(ue);
        let pkt = self.linked_or_new(pending, "pdcp_without_gtpu");
        let mut ev = self.ev(t, (Node::GnbCu, Layer::Pdcp, Point::ProcEnd), ue, drb, pkt);
        ev.bytes = len as u32;
        ev.sn = Some(count as u32);
        self.ids.cu_event(ev, sink);
        self.pdcp_by_sn.insert((ue, drb.unwrap_or(0), sn), (pkt, len as u32, count));
        // Info-level logs of the gnb app have no F1-U lines: keep only a window.
        for f in [
            self.f1u_pending.entry((ue, drb.unwrap_or(0))).or_default(),
            self.f1u_cu_pending.entry((ue, drb.unwrap_or(0))).or_default(),
            self.nru_dl_pending.entry(ue).or_default(),
        ] {
            f.push_back((pkt, len as u32));
            if f.len() > 4096 {
                f.pop_front();
            }
        }
        self.nru_drb.insert(pkt, drb.unwrap_or(0));
        if self.nru_drb.len() > 1 << 16 {
            self.nru_drb.clear();
        }
        true
    }

    /// PDCP `Drop burst finished` (DL): N packets dropped before PDCP (early drop).
    fn pdcp_dl_drop_burst<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let (Some(ue), Some(n)) = (ue, m.num("nof_sdus")) else { return self.unlinked_line("pdcp_fields") };
        for _ in 0..n {
            let pending = self.pop_gtpu_dl(ue);
            let pkt = self.linked_or_new(pending, "pdcp_drop_without_gtpu");
            let mut ev = self.ev(t, (Node::GnbCu, Layer::Pdcp, Point::Drop), ue, drb, pkt);
            ev.reason = Some(Reason::PdcpEarlyDrop);
            self.ids.cu_event(ev, sink);
            *self.stats.drops.entry(("pdcp", Reason::PdcpEarlyDrop.as_str())).or_insert(0) += 1;
        }
        true
    }

    /// PDCP `Discarding PDU` (DL, debug): the discard timer expired.
    fn pdcp_dl_discard_timer<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // Debug: PDCP's discard timer expired for COUNT c (TS 38.323 §5.2.1; after a
        // `Discard timer expired` line). The packet is dropped only if RLC still holds the
        // SDU, which RLC's `Discarded SDU` line then says; else it was already sent (`Could
        // not discard SDU`) and only PDCP's copy goes. A control event either way.
        let (Some(cu), Some(count)) = (ue, m.num("count")) else { return self.unlinked_line("pdcp_fields") };
        sink.control(ControlEvent {
            t_ns: t,
            node: Node::GnbCu,
            layer: Layer::Pdcp,
            kind: ControlKind::PdcpDiscardTimerExpired,
            dir: Some(Dir::Dl),
            ue: Some(self.ids.du(cu).unwrap_or(cu)),
            drb,
            sn: Some(count as i64),
            value: None,
            detail: None,
        });
        true
    }

    /// `PDCP configured`: the bearer’s SN size (header bytes); its COUNTs start again.
    fn pdcp_configured(&mut self, l: &Line<'_>) -> bool {
        let Line { ue, ref m, .. } = *l;
        if let (Some(ue), Some(rb)) = (ue, rb_key(m)) {
            let hdr = if m.num("sn_size") == Some(18) { 3 } else { 2 };
            self.pdcp_hdr.entry((ue, rb)).or_insert((2, false)).0 = hdr;
            // A (re)configured bearer starts its COUNTs again (TS 38.323 §5.1.1), and its UE's
            // CU-UP index may now name another DU index.
            if let Some(d) = rb.checked_sub(DRB0) {
                self.rx_deliv.remove(&(ue, d));
                self.ids.forget_cu_up(ue);
            }
        }
        true
    }

    /// `Set … integrity_enabled=on`: a 4-byte MAC-I on the bearer’s PDUs.
    fn pdcp_integrity(&mut self, l: &Line<'_>) -> bool {
        let Line { ue, ref m, .. } = *l;
        if let (Some(ue), Some(rb)) = (ue, rb_key(m)) {
            self.pdcp_hdr.entry((ue, rb)).or_insert((2, false)).1 = true;
        }
        true
    }

    /// PDCP `Reordering timer expired` (UL).
    fn pdcp_ul_t_reordering<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let Some(ue) = ue else { return self.unlinked_line("pdcp_fields") };
        let d = drb.unwrap_or(0);
        let queued = m.num("queued_sdus");
        // t-Reordering expired (TS 38.323 §5.2.2.4): the stored SDUs with COUNT < RX_REORD,
        // then those consecutive from RX_REORD, go up in COUNT order — without an `RX SDU`
        // line each.
        let mut held: Vec<u64> = self.pdcp_rx.keys().filter(|(u, b, _)| *u == ue && *b == d).map(|k| k.2).collect();
        held.sort_unstable();
        let reord = m.num("rx_reord").unwrap_or(u64::MAX);
        let mut next = reord;
        let release: Vec<u64> = held
            .into_iter()
            .take_while(|&c| {
                let go = c < reord || c == next;
                if c == next {
                    next += 1;
                }
                go
            })
            .collect();
        if queued.is_some_and(|q| q != release.len() as u64) {
            self.unlinked("ul_pdcp_reordering_queue_differs");
        }
        for count in release {
            self.pdcp_deliver(t, ue, d, count, sink);
        }
        sink.control(ControlEvent {
            t_ns: t,
            node: Node::GnbCu,
            layer: Layer::Pdcp,
            kind: ControlKind::PdcpTReorderingExpired,
            dir: Some(Dir::Ul),
            ue: Some(self.ids.du(ue).unwrap_or(ue)),
            drb,
            sn: m.num("rx_reord").map(|v| v as i64),
            value: queued.map(|q| q as f64),
            detail: None,
        });
        true
    }

    /// PDCP `RX PDU` (UL data): continues the SDU RLC delivered.
    fn pdcp_ul_pdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let (Some(ue), Some(len), Some(count)) = (ue, m.num("pdu_len"), m.num("count")) else {
            return self.unlinked_line("pdcp_fields");
        };
        let d = drb.unwrap_or(0);
        let du = self.du_for_pdcp_pdu(ue, d, len as u32, l.line, sink);
        let from_rlc = du
            .and_then(|du| self.rlc_delivered.get_mut(&(du, d)))
            .and_then(|q| take_matching(q, |l| u64::from(l) == len));
        if from_rlc.is_some_and(|(_, l)| u64::from(l) != len) {
            self.unlinked("ul_pdcp_pdu_length_differs_from_rlc_sdu");
        }
        let pkt = self.linked_or_new(from_rlc.map(|(p, _)| p), "ul_pdcp_pdu_without_rlc_sdu");
        // Split CU/DU: the NR-U T-PDU of this length that reached the CU-UP before it.
        let arrived = self.nru_ul_arrived.get_mut(&ue).and_then(|q| {
            let i = q.iter().take(8).position(|&(_, l)| u64::from(l) == len)?;
            q.remove(i)
        });
        if let Some((ta, l)) = arrived {
            let mut ev = self.ul(ta, (Node::GnbCu, Layer::F1u, Point::Arrive), ue, drb, pkt);
            ev.bytes = l;
            self.ids.cu_event(ev, sink);
        }
        let mut ev = self.ul(t, (Node::GnbCu, Layer::Pdcp, Point::ProcBegin), ue, drb, pkt);
        ev.sn = Some(count as u32);
        ev.bytes = len as u32;
        self.ids.cu_event(ev, sink);
        if count < self.rx_deliv.get(&(ue, d)).copied().unwrap_or(0) {
            // COUNT < RX_DELIV: PDCP discards it (TS 38.323 §5.2.2.1) — it arrives after
            // t-Reordering gave up on it. Inferred: info-level logs print no line for it.
            let mut ev = self.ul(t, (Node::GnbCu, Layer::Pdcp, Point::Drop), ue, drb, pkt);
            ev.sn = Some(count as u32);
            ev.bytes = len as u32;
            ev.reason = Some(Reason::PdcpRxOutOfWindow);
            self.ids.cu_event(ev, sink);
            *self.stats.drops.entry(("pdcp", Reason::PdcpRxOutOfWindow.as_str())).or_insert(0) += 1;
        } else {
            self.pdcp_rx.insert((ue, d, count), (pkt, len as u32));
        }
        true
    }

    /// PDCP `RX SDU` (UL): delivered in order.
    fn pdcp_ul_sdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let (Some(ue), Some(count)) = (ue, m.num("count")) else { return self.unlinked_line("pdcp_fields") };
        self.pdcp_deliver(t, ue, drb.unwrap_or(0), count, sink);
        true
    }

    /// A UL PDCP SDU delivered upwards (in order, or at t-Reordering expiry).
    fn pdcp_deliver<S: Sink>(&mut self, t: i64, ue: u32, d: u8, count: u64, sink: &mut S) {
        let Some((pkt, pdu_len)) = self.pdcp_rx.remove(&(ue, d, count)) else {
            return self.unlinked("ul_pdcp_sdu_without_pdu");
        };
        let (hdr, mac_i) = self.pdcp_hdr.get(&(ue, DRB0 + d)).copied().unwrap_or((2, false));
        let sdu = pdu_len.saturating_sub(hdr + if mac_i { 4 } else { 0 });
        let deliv = self.rx_deliv.entry((ue, d)).or_insert(0);
        *deliv = (*deliv).max(count + 1);
        let mut ev = self.ul(t, (Node::GnbCu, Layer::Pdcp, Point::Deliver), ue, Some(d), pkt);
        ev.sn = Some(count as u32);
        ev.bytes = sdu;
        self.ids.cu_event(ev, sink);
        self.gtpu_ul.entry(ue).or_default().push_back((pkt, sdu));
    }
}
