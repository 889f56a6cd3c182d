//! A bearer's RLC and PDCP entities at both ends: what they produce becomes events and
//! hand-overs to the next layer, and their timers become actions.

use super::*;

impl Stack {
    /// The PDCP transmitter at `node` (the UE's, or the CU-UP's) of DRB `di` of UE `ui` takes
    /// packet `p` at `now`: dropped (reported), or its COUNT and PDU length, after the PDCP
    /// `proc_end` event.
    #[allow(clippy::too_many_arguments)] // the entity's address and the packet
    pub(super) fn pdcp_send<S: Sink>(
        &mut self,
        sink: &mut S,
        now: Instant,
        node: Node,
        ui: usize,
        di: usize,
        p: &Packet,
    ) -> Option<(u32, u32)> {
        let d = &mut self.ues[ui].drbs[di];
        let tx = if node == Node::Ue { &mut d.ue_pdcp_tx } else { &mut d.cu_pdcp_tx };
        match tx.handle_sdu(now, p.bytes) {
            TxVerdict::Drop(r) => {
                self.drop_packet(sink, now, node, Layer::Pdcp, p, r);
                None
            }
            TxVerdict::Send { count, len } => {
                let mut e = self.ev(now, node, Layer::Pdcp, Point::ProcEnd, p);
                e.sn = Some(count);
                e.bytes = len;
                sink.packet(e);
                Some((count, len))
            }
        }
    }

    /// A DL packet reaches the CU-UP's PDCP: with L4S marks decided at the DU's RLC queue for
    /// PDCP to write (`mark_at: pdcp`), an ECN-capable packet takes one — CE before ciphering.
    pub(super) fn pdcp_ce_mark<S: Sink>(
        &mut self,
        now: Instant,
        ui: usize,
        di: usize,
        mut p: Packet,
        sink: &mut S,
    ) -> Packet {
        let d = &mut self.ues[ui].drbs[di];
        let Some(l4s) = d.l4s.as_ref() else { return p };
        let capable = p.ecn == ECT1 || (l4s.classic_ecn && p.ecn == ECT0);
        if d.pending_ce > 0 && capable {
            d.pending_ce -= 1;
            p.ecn = CE;
            self.emit(sink, now, Node::GnbCu, Layer::Pdcp, Point::CeMark, &p);
        }
        p
    }

    /// Turns what the DU's (`at_ue` false) or the UE's RLC entity of a bearer produced into
    /// events and hand-overs, then re-arms its timers.
    pub(super) fn drain_rlc<S: Sink>(&mut self, now: Instant, ui: usize, di: usize, at_ue: bool, sink: &mut S) {
        let d = &mut self.ues[ui].drbs[di];
        let out = std::mem::take(if at_ue { &mut d.ue_rlc.out } else { &mut d.gnb_rlc.out });
        let node = if at_ue { Node::Ue } else { Node::GnbDu };
        for o in out {
            match o {
                RlcOut::Enqueued { sdu, queue_bytes, queue_pkts } | RlcOut::Hol { sdu, queue_bytes, queue_pkts } => {
                    let point = if matches!(o, RlcOut::Hol { .. }) { Point::Hol } else { Point::Enqueue };
                    let mut e = self.ev(now, node, Layer::Rlc, point, &sdu.pkt);
                    e.queue = Some(Queue::RlcSdu);
                    e.queue_bytes = Some(queue_bytes);
                    e.queue_pkts = Some(queue_pkts);
                    e.sn = Some(sdu.pdcp_sn);
                    e.bytes = sdu.len;
                    sink.packet(e);
                }
                RlcOut::Dropped { sdu, reason } => self.drop_packet(sink, now, node, Layer::Rlc, &sdu.pkt, reason),
                RlcOut::Delivered { sdu } => {
                    let mut e = self.ev(now, node, Layer::Rlc, Point::Deliver, &sdu.pkt);
                    e.sn = Some(sdu.pdcp_sn);
                    e.bytes = sdu.len;
                    sink.packet(e);
                    if at_ue {
                        // DL: reassembled at the UE, into PDCP reordering.
                        self.ues[ui].drbs[di].ue_pdcp_rx.handle_pdu(now, sdu.pdcp_sn, sdu.pkt);
                        self.drain_pdcp_rx(now, ui, di, true, sink);
                        self.arm(now, ui, di, TimerOwner::UePdcpRx);
                    } else {
                        // UL: reassembled at the DU, forwarded over F1-U.
                        let at = self.mh_ul.send(now, sdu.len);
                        let job = Job { p: sdu.pkt, count: sdu.pdcp_sn, len: sdu.len };
                        self.schedule_arrival(LinkId::MidhaulUl, at, Action::MidhaulArrive(job));
                    }
                }
                RlcOut::Transmitted { pdcp_sn } if at_ue => {
                    self.ues[ui].drbs[di].ue_pdcp_tx.handle_transmitted(pdcp_sn);
                }
                RlcOut::Transmitted { pdcp_sn } => {
                    let d = &mut self.ues[ui].drbs[di];
                    d.du_highest_tx = Some(d.du_highest_tx.map_or(pdcp_sn, |h| h.max(pdcp_sn)));
                    if !d.ddds_pending {
                        d.ddds_pending = true;
                        let at = now + d.t_notify_ns;
                        self.schedule(at, Action::DddsSend { ue: ui as u32, drb: di as u8 });
                    }
                }
                RlcOut::CeMark { sdu } if !at_ue => {
                    let d = &mut self.ues[ui].drbs[di];
                    if d.l4s.as_ref().is_some_and(|l| l.mark_at == MarkAt::Pdcp) {
                        d.pending_ce += 1;
                    } else {
                        let mut e = self.ev(now, node, Layer::Rlc, Point::CeMark, &sdu.pkt);
                        e.sn = Some(sdu.pdcp_sn);
                        e.bytes = sdu.len;
                        sink.packet(e);
                    }
                }
                RlcOut::Acked { .. } | RlcOut::CeMark { .. } => {}
                RlcOut::Control(event) => {
                    if let (crate::control::RlcControl::RetxEvent { delay, .. }, Some(v)) =
                        (&event, &mut self.retx_events)
                    {
                        // The RLC's retransmission events reach the UE's feed as the MAC's do.
                        v.push((ui as u32, if at_ue { Dir::Dl } else { Dir::Ul }, now, *delay));
                    }
                    self.control(sink, now, Control::Rlc { node, ue: ui as u32, drb: di as u8 + 1, event })
                }
            }
        }
        self.arm(now, ui, di, if at_ue { TimerOwner::UeRlc } else { TimerOwner::GnbRlc });
    }

    pub(super) fn drain_pdcp_rx<S: Sink>(&mut self, now: Instant, ui: usize, di: usize, at_ue: bool, sink: &mut S) {
        let d = &mut self.ues[ui].drbs[di];
        let out = std::mem::take(if at_ue { &mut d.ue_pdcp_rx.out } else { &mut d.cu_pdcp_rx.out });
        let node = if at_ue { Node::Ue } else { Node::GnbCu };
        for o in out {
            match o {
                RxOut::Deliver(p, count) => {
                    let mut e = self.ev(now, node, Layer::Pdcp, Point::Deliver, &p);
                    e.sn = Some(count);
                    sink.packet(e);
                    if at_ue {
                        self.deliver(sink, now, Node::Ue, &p);
                    } else {
                        self.submit(now, ExecId::Gtpu, Job { p, count, len: p.bytes }, sink);
                    }
                }
                RxOut::Discard(p, _) => {
                    if self.live.contains_key(&p.pkt) {
                        // A duplicate of a packet still in flight is not a drop of that packet.
                        self.control(sink, now, Control::PdcpDuplicate { node, ue: ui as u32, drb: di as u8 + 1 });
                    }
                }
                RxOut::ReorderingExpired(rx_reord) => self.control(
                    sink,
                    now,
                    Control::PdcpReorderingExpired { node, ue: ui as u32, drb: di as u8 + 1, rx_reord },
                ),
            }
        }
    }

    /// Makes sure a Timer action is pending for the entity's next timeout.
    pub(super) fn arm(&mut self, _now: Instant, ui: usize, di: usize, owner: TimerOwner) {
        let d = &mut self.ues[ui].drbs[di];
        let next = match owner {
            TimerOwner::GnbRlc => d.gnb_rlc.next_timeout(),
            TimerOwner::UeRlc => d.ue_rlc.next_timeout(),
            TimerOwner::CuPdcpTx => d.cu_pdcp_tx.next_timeout(),
            TimerOwner::CuPdcpRx => d.cu_pdcp_rx.next_timeout(),
            TimerOwner::UePdcpTx => d.ue_pdcp_tx.next_timeout(),
            TimerOwner::UePdcpRx => d.ue_pdcp_rx.next_timeout(),
        };
        let slot = &mut d.armed[owner as usize];
        if let Some(t) = next {
            if slot.is_none_or(|a| t < a) {
                *slot = Some(t);
                self.schedule(t, Action::Timer { ue: ui as u32, drb: di as u8, owner });
            }
        }
    }

    pub(super) fn handle_timer<S: Sink>(
        &mut self,
        now: Instant,
        ui: usize,
        di: usize,
        owner: TimerOwner,
        sink: &mut S,
    ) {
        {
            let slot = &mut self.ues[ui].drbs[di].armed[owner as usize];
            if *slot != Some(now) {
                return; // superseded by an earlier arming that already ran
            }
            *slot = None;
        }
        match owner {
            TimerOwner::GnbRlc => {
                self.ues[ui].drbs[di].gnb_rlc.handle_timeout(now);
                self.drain_rlc(now, ui, di, false, sink);
            }
            TimerOwner::UeRlc => {
                self.ues[ui].drbs[di].ue_rlc.handle_timeout(now);
                self.drain_rlc(now, ui, di, true, sink);
                self.ue_data_arrived(ui);
            }
            TimerOwner::CuPdcpRx | TimerOwner::UePdcpRx => {
                let at_ue = owner == TimerOwner::UePdcpRx;
                let d = &mut self.ues[ui].drbs[di];
                if at_ue {
                    d.ue_pdcp_rx.handle_timeout(now)
                } else {
                    d.cu_pdcp_rx.handle_timeout(now)
                }
                self.drain_pdcp_rx(now, ui, di, at_ue, sink);
            }
            TimerOwner::CuPdcpTx | TimerOwner::UePdcpTx => {
                let at_ue = owner == TimerOwner::UePdcpTx;
                let d = &mut self.ues[ui].drbs[di];
                let expired = if at_ue { d.ue_pdcp_tx.expire(now) } else { d.cu_pdcp_tx.expire(now) };
                for count in expired {
                    // TS 38.323 §5.3: a PDU still in the CU-UP's F1-U transmit queue is discarded
                    // there; else the discard is indicated to RLC, which removes the SDU if no
                    // segment of it was sent (TS 38.322 §5.4). The F1-U indication is modelled as
                    // immediate.
                    let d = &mut self.ues[ui].drbs[di];
                    if let Some(job) = (!at_ue).then(|| d.cu_f1u.discard(count)).flatten() {
                        self.drop_packet(sink, now, Node::GnbCu, Layer::Pdcp, &job.p, Reason::PdcpDiscardTimer);
                        continue;
                    }
                    let d = &mut self.ues[ui].drbs[di];
                    let rlc = if at_ue { &mut d.ue_rlc } else { &mut d.gnb_rlc };
                    if let Some(sdu) = rlc.discard(count) {
                        let node = if at_ue { Node::Ue } else { Node::GnbCu };
                        self.drop_packet(sink, now, node, Layer::Pdcp, &sdu.pkt, Reason::PdcpDiscardTimer);
                        self.drain_rlc(now, ui, di, at_ue, sink)
                    }
                }
            }
        }
        self.arm(now, ui, di, owner);
    }

    /// The UE may have new UL data after a timer (e.g. an RLC retransmission): trigger BSR/SR.
    pub(super) fn ue_data_arrived(&mut self, ui: usize) {
        if self.ue_ul_buffer(ui) > 0 && self.mac.ue(ui).ul_view.estimate() == 0 && self.ues[ui].mac.grants.is_empty() {
            self.ues[ui].mac.new_data();
        }
    }
}
