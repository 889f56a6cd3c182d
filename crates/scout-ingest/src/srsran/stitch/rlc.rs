//! RLC lines at the DU: the DL SDU queue (enqueue, head of line, segments, ARQ retransmissions,
//! drops); UL segments and reassembly; status PDUs; the header sizes of TS 38.322 §6.2.2.

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node, Point, Queue, Reason, Sink};

use super::{rb_key, Line, MacItem, Stitcher, DRB0};
use crate::srsran::message::Message;

impl Stitcher {
    /// RLC lines.
    pub(super) fn rlc<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        match l.m.name {
            "TX SDU" if l.dl && l.drb.is_some() => self.rlc_dl_sdu(l, sink),
            "TX PDU" | "RETX PDU" if l.dl && l.drb.is_some() && l.m.get("dc") == Some("data") => {
                self.rlc_dl_pdu(l, sink)
            }
            "Dropped SDU" if l.dl && l.drb.is_some() => self.rlc_dl_sdu_dropped(l, sink),
            "Discarded SDU" if l.dl && l.drb.is_some() => self.rlc_dl_sdu_discarded(l, sink),
            "Could not discard SDU" if l.dl && l.drb.is_some() => self.rlc_dl_discard_too_late(l, sink),
            "Reached maximum number of RETX" if l.dl && l.drb.is_some() => self.rlc_dl_max_retx(l, sink),
            "RLC AM configured" | "RLC UM configured" => self.rlc_configured(l),
            "RX PDU" if l.ul && l.m.get("dc") == Some("data") => self.rlc_ul_pdu(l, sink),
            "RX status PDU" if l.ul => self.rlc_ul_status(l, sink),
            "TX status PDU" if l.dl => self.rlc_dl_status(l, sink),
            "RX SDU" if l.ul && l.drb.is_some() && l.m.get("sdu_len").is_some() => self.rlc_ul_sdu(l, sink),
            _ => false,
        }
    }

    /// RLC `TX SDU` (DL): the packet enters the RLC SDU queue.
    fn rlc_dl_sdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let (Some(ue), Some(len), Some(psn)) = (ue, m.num("sdu_len"), m.num("pdcp_sn")) else {
            return self.unlinked_line("rlc_fields");
        };
        let d = drb.unwrap_or(0);
        let cu = self.cu_up_for_rlc_sdu(ue, d, psn, len as u32, l.line, sink);
        let pdcp = cu.and_then(|cu| self.pdcp_by_sn.remove(&(cu, d, psn)));
        let count = pdcp.map(|(_, _, c)| c);
        let pkt = self.linked_or_new(pdcp.map(|(p, ..)| p), "rlc_sdu_without_pdcp");
        let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Enqueue), ue, drb, pkt);
        ev.bytes = len as u32;
        // The SDU's PDCP COUNT, as on every producer's RLC SDU rows (the line's `pdcp_sn`
        // wraps; unknown where its PDCP PDU was not linked).
        ev.sn = count.map(|c| c as u32);
        ev.queue = Some(Queue::RlcSdu);
        ev.queue_bytes = m.num("queued_bytes");
        ev.queue_pkts = m.num("queued_sdus").map(|q| q as u32);
        sink.packet(ev);
        let q = self.rlc.entry((ue, d)).or_default();
        q.waiting.push_back((pkt, len as u32));
        q.by_pdcp_sn.insert(psn, (pkt, count));
        if q.waiting.len() == 1 {
            // An empty queue: the SDU is at the head of the line at once (inferred).
            self.hol(sink, t, ue, drb, pkt, len as u32);
        }
        true
    }

    /// RLC `TX PDU` / `RETX PDU` (DL data): a segment of the SDU at the head.
    fn rlc_dl_pdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let (Some(ue), Some(sn), Some(pdu_len), Some(si)) = (ue, m.num("sn"), m.num("pdu_len"), m.get("si")) else {
            return self.unlinked_line("rlc_fields");
        };
        let d = drb.unwrap_or(0);
        // A RETX PDU is an ARQ retransmission whether or not the version logs `retx_count`
        // (23.10 does not).
        let retx = if m.name == "RETX PDU" { m.num("retx_count").unwrap_or(1).clamp(1, 255) as u8 } else { 0 };
        let so = m.num("so").unwrap_or(0);
        let q = self.rlc.entry((ue, d)).or_default();
        let starts = si == "full" || si == "first";
        let completes = si == "full" || si == "last";
        // AM header: 2 bytes with a 12-bit SN, 3 with an 18-bit SN; +2 for SO. Payload is
        // taken as pdu_len minus the smallest header consistent with the SDU size.
        let found = if starts && retx == 0 {
            q.waiting.pop_front().inspect(|(p, len)| {
                q.by_sn.insert(sn, (*p, *len));
                q.by_pdcp_sn.retain(|_, v| v.0 != *p);
            })
        } else {
            q.by_sn.get(&sn).copied()
        };
        let Some((pkt, sdu_len)) = found else { return self.unlinked_line("rlc_pdu_without_sdu") };
        let next_hol = if completes && retx == 0 { q.waiting.front().copied() } else { None };
        let hdr = self.rlc_header(ue, DRB0 + d, false, si, so as u32);
        let payload = if si == "full" { sdu_len } else { (pdu_len as u32).saturating_sub(hdr) };
        let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Segment), ue, drb, pkt);
        ev.sn = Some(sn as u32);
        ev.seg_offset = Some(so as u32);
        ev.seg_last = Some(completes);
        ev.bytes = payload;
        ev.retx = retx;
        sink.packet(ev);
        self.mac_pending.entry(ue).or_default().push(MacItem { pkt, drb: d, sn, so: so as u32, bytes: payload, retx });
        if let Some((p, len)) = next_hol {
            self.hol(sink, t, ue, drb, p, len);
        }
        true
    }

    /// RLC `Dropped SDU` (DL): the queue is full.
    fn rlc_dl_sdu_dropped<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // The RLC SDU queue is full (by SDUs or bytes): the SDU never enters it.
        let (Some(ue), Some(len), Some(psn)) = (ue, m.num("sdu_len"), m.num("pdcp_sn")) else {
            return self.unlinked_line("rlc_fields");
        };
        let d = drb.unwrap_or(0);
        let cu = self.cu_up_for_rlc_sdu(ue, d, psn, len as u32, l.line, sink);
        let pdcp = cu.and_then(|cu| self.pdcp_by_sn.remove(&(cu, d, psn)));
        let pkt = self.linked_or_new(pdcp.map(|(p, ..)| p), "rlc_drop_without_pdcp");
        let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Drop), ue, drb, pkt);
        ev.bytes = len as u32;
        ev.sn = pdcp.map(|(_, _, c)| c as u32);
        ev.queue = Some(Queue::RlcSdu);
        ev.queue_bytes = m.num("queued_bytes");
        ev.queue_pkts = m.num("queued_sdus").map(|q| q as u32);
        ev.reason = Some(Reason::RlcQueueFull);
        sink.packet(ev);
        *self.stats.drops.entry(("rlc", Reason::RlcQueueFull.as_str())).or_insert(0) += 1;
        true
    }

    /// RLC `Discarded SDU` (DL): PDCP’s discard timer, while RLC held it.
    fn rlc_dl_sdu_discarded<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // PDCP's discard timer expired for an SDU still waiting in the RLC queue; RLC removes
        // it (`Discarded SDU. pdcp_sn=`). Dropped by PDCP's rule, where RLC held it.
        let (Some(ue), Some(psn)) = (ue, m.num("pdcp_sn")) else { return self.unlinked_line("rlc_fields") };
        let d = drb.unwrap_or(0);
        let q = self.rlc.entry((ue, d)).or_default();
        let Some((pkt, count)) = q.by_pdcp_sn.remove(&psn) else {
            return self.unlinked_line("rlc_discard_without_sdu");
        };
        let at = q.waiting.iter().position(|(p, _)| *p == pkt);
        let (bytes, next_hol) = match at {
            Some(i) => {
                let (_, b) = q.waiting.remove(i).unwrap_or_default();
                (b, if i == 0 { q.waiting.front().copied() } else { None })
            }
            None => (0, None),
        };
        let mut ev = self.ev(t, (Node::GnbDu, Layer::Pdcp, Point::Drop), ue, drb, pkt);
        ev.bytes = bytes;
        ev.sn = count.map(|c| c as u32);
        ev.queue = Some(Queue::RlcSdu);
        ev.reason = Some(Reason::PdcpDiscardTimer);
        sink.packet(ev);
        *self.stats.drops.entry(("pdcp", Reason::PdcpDiscardTimer.as_str())).or_insert(0) += 1;
        if let Some((p, len)) = next_hol {
            self.hol(sink, t, ue, drb, p, len);
        }
        true
    }

    /// RLC `Could not discard SDU` (DL): a control event, no drop.
    fn rlc_dl_discard_too_late<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // The SDU PDCP asked to discard has (partly) left the RLC queue: no drop.
        let Some(du) = ue else { return self.unlinked_line("rlc_fields") };
        sink.control(ControlEvent {
            t_ns: t,
            node: Node::GnbDu,
            layer: Layer::Rlc,
            kind: ControlKind::RlcDiscardTooLate,
            dir: Some(Dir::Dl),
            ue: Some(du),
            drb,
            sn: m.num("pdcp_sn").map(|v| v as i64),
            value: None,
            detail: None,
        });
        true
    }

    /// RLC `Reached maximum number of RETX` (DL): the SDU is lost.
    fn rlc_dl_max_retx<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // maxRetxThreshold reached for an RLC SN (TS 38.322 §5.3.2): the SDU is lost (and
        // srsRAN reports a radio link failure).
        let (Some(ue), Some(sn)) = (ue, m.num("sn")) else { return self.unlinked_line("rlc_fields") };
        let d = drb.unwrap_or(0);
        let Some((pkt, bytes)) = self.rlc.entry((ue, d)).or_default().by_sn.remove(&sn) else {
            return self.unlinked_line("rlc_max_retx_without_sdu");
        };
        let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Drop), ue, drb, pkt);
        ev.bytes = bytes;
        ev.sn = Some(sn as u32);
        ev.retx = m.num("retx_count").unwrap_or(0).min(255) as u8;
        ev.reason = Some(Reason::RlcMaxRetx);
        sink.packet(ev);
        *self.stats.drops.entry(("rlc", Reason::RlcMaxRetx.as_str())).or_insert(0) += 1;
        true
    }

    /// `RLC AM/UM configured`: the bearer’s mode and SN sizes (header bytes).
    fn rlc_configured(&mut self, l: &Line<'_>) -> bool {
        let Line { ue, ref m, .. } = *l;
        if let (Some(ue), Some(rb)) = (ue, rb_key(m)) {
            let am = m.name == "RLC AM configured";
            if rb >= DRB0 {
                self.ids.forget_du(ue);
            }
            for (key, is_ul) in [("tx_sn_size", false), ("rx_sn_size", true)] {
                if let Some(bits) = m.num(key) {
                    self.rlc_cfg.insert((ue, rb, is_ul), (am, bits));
                }
            }
        }
        true
    }

    /// RLC `RX PDU` (UL data): a segment, with the PUSCH attempts of its transport block.
    fn rlc_ul_pdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, ref m, .. } = *l;
        let (Some(ue), Some(rb), Some(sn), Some(pdu_len), Some(si)) =
            (ue, rb_key(m), m.num("sn"), m.num("pdu_len"), m.get("si"))
        else {
            return self.unlinked_line("rlc_fields");
        };
        self.take_mac_ul(ue, rb, Some(pdu_len));
        let Some(drb) = rb.checked_sub(DRB0) else { return true };
        let so = m.num("so").unwrap_or(0) as u32;
        let completes = si == "full" || si == "last";
        let hdr = self.rlc_header(ue, rb, true, si, so);
        let payload = (pdu_len as u32).saturating_sub(hdr);
        // Segments of one SDU share its RLC SN; they may come in any order once ARQ
        // retransmits a lost one (then it is marked `retx`: a segment arriving after one
        // further into the SDU, or one already received, is a retransmission).
        let key = (ue, drb, sn);
        let (pkt, retx) = match self.rlc_rx.get_mut(&key) {
            Some((p, segs)) => {
                let retx = segs.iter().any(|(o, _)| *o >= so);
                segs.push((so, payload));
                (*p, retx)
            }
            None => {
                if !(si == "full" || si == "first") {
                    // The SDU's earlier segments are missing (lost, or a log gap).
                    self.unlinked("ul_rlc_segment_before_first");
                }
                let p = self.new_pkt();
                self.rlc_rx.insert(key, (p, vec![(so, payload)]));
                (p, false)
            }
        };
        // The segment's transport block: each PUSCH attempt (HARQ retransmissions marked) and
        // its decoding at the gNB.
        let (rnti, tb) = self.tb_of_mac.get(&ue).cloned().unwrap_or_default();
        for (i, a) in tb.iter().enumerate() {
            let mut tx = self.ul(a.tx_ns, (Node::Ue, Layer::Mac, Point::Tx), ue, Some(drb), pkt);
            tx.rnti = rnti;
            tx.bytes = payload;
            tx.retx = i.min(255) as u8;
            sink.packet(tx);
            if a.ok {
                let mut rx = self.ul(a.decoded_ns, (Node::GnbDu, Layer::Phy, Point::Rx), ue, Some(drb), pkt);
                rx.rnti = rnti;
                rx.bytes = payload;
                sink.packet(rx);
            }
        }
        let mut ev = self.ul(t, (Node::GnbDu, Layer::Rlc, Point::Segment), ue, Some(drb), pkt);
        ev.sn = Some(sn as u32);
        ev.seg_offset = Some(so);
        ev.seg_last = Some(completes);
        ev.bytes = payload;
        ev.retx = u8::from(retx);
        ev.rnti = rnti;
        sink.packet(ev);
        true
    }

    /// RLC `RX status PDU`: the UE acknowledges DL data.
    fn rlc_ul_status<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        // A status PDU from the UE (acknowledging DL data) also came in a MAC subPDU.
        let (Some(ue), Some(rb)) = (ue, rb_key(m)) else { return self.unlinked_line("rlc_fields") };
        self.take_mac_ul(ue, rb, None);
        self.status(t, Dir::Dl, ue, drb, m, sink);
        true
    }

    /// RLC `TX status PDU`: the gNB acknowledges UL data.
    fn rlc_dl_status<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let Some(ue) = ue else { return self.unlinked_line("rlc_fields") };
        self.status(t, Dir::Ul, ue, drb, m, sink);
        true
    }

    /// RLC `RX SDU` (UL): the SDU reassembled and delivered to PDCP.
    fn rlc_ul_sdu<S: Sink>(&mut self, l: &Line<'_>, sink: &mut S) -> bool {
        let Line { t, ue, drb, ref m, .. } = *l;
        let (Some(ue), Some(sn), Some(len)) = (ue, m.num("sn"), m.num("sdu_len")) else {
            return self.unlinked_line("rlc_fields");
        };
        let d = drb.unwrap_or(0);
        let Some((pkt, mut segs)) = self.rlc_rx.remove(&(ue, d, sn)) else {
            return self.unlinked_line("ul_rlc_sdu_without_pdu");
        };
        // Bytes covered by the segments (retransmitted ones may overlap).
        segs.sort_unstable();
        let (mut got, mut end) = (0u32, 0u32);
        for (o, n) in segs {
            let e = o + n;
            got += e.saturating_sub(o.max(end));
            end = end.max(e);
        }
        if u64::from(got) != len {
            self.unlinked("ul_rlc_segments_do_not_sum_to_sdu");
        }
        let mut ev = self.ul(t, (Node::GnbDu, Layer::Rlc, Point::Deliver), ue, drb, pkt);
        // (`sn` is the PDCP COUNT on RLC SDU rows; the UL's comes with the PDCP line, later.)
        ev.bytes = len as u32;
        sink.packet(ev);
        self.rlc_delivered.entry((ue, d)).or_default().push_back((pkt, len as u32));
        true
    }

    /// The (inferred) moment an RLC SDU reaches the head of its queue.
    fn hol<S: Sink>(&mut self, sink: &mut S, t: i64, ue: u32, drb: Option<u8>, pkt: u64, bytes: u32) {
        let mut h = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Hol), ue, drb, pkt);
        h.queue = Some(Queue::RlcSdu);
        h.bytes = bytes;
        sink.packet(h);
    }

    /// RLC data PDU header bytes (TS 38.322 §6.2.2.3–6.2.2.4): AM: 2 bytes with a 12-bit SN, 3
    /// with an 18-bit SN; UM: 1 byte for a complete SDU (no SN), else 1 (6-bit SN) or 2 (12-bit
    /// SN); plus a 2-byte SO on a middle or last segment.
    pub(super) fn rlc_header(&self, ue: u32, rb: u8, ul: bool, si: &str, so: u32) -> u32 {
        let (am, bits) = self.rlc_cfg.get(&(ue, rb, ul)).copied().unwrap_or((true, 12));
        let has_so = so > 0 || si == "mid" || si == "last";
        let base = match (am, bits) {
            (true, 18) => 3,
            (true, _) => 2,
            (false, _) if si == "full" => 1,
            (false, 6) => 1,
            (false, _) => 2,
        };
        base + if has_so { 2 } else { 0 }
    }

    /// An RLC status PDU, as a control event: `dir` is the data it acknowledges (a status the gNB
    /// receives acknowledges DL data), `sn` its ACK_SN, `value` its number of NACKs. A DL packet
    /// is acknowledged by the first status whose ACK_SN is past its RLC SN and does not NACK it.
    fn status<S: Sink>(&mut self, t: i64, dir: Dir, ue: u32, drb: Option<u8>, m: &Message, sink: &mut S) {
        sink.control(ControlEvent {
            t_ns: t,
            node: Node::GnbDu,
            layer: Layer::Rlc,
            kind: ControlKind::RlcStatus,
            dir: Some(dir),
            ue: Some(ue),
            drb,
            sn: m.num("ack_sn").map(|v| v as i64),
            value: m.num("n_nack").map(|v| v as f64),
            detail: None,
        });
    }
}
