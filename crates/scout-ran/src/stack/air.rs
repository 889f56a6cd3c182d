//! The air: each slot's CSI, SR and BSR, the gNB MAC's DL and UL scheduling (retransmissions,
//! then new transmissions in the policy's order), transport blocks, HARQ decoding and feedback.

use super::*;

impl Stack {
    /// The MCS for UE `ui`'s next new transmission in direction `d` (`DL`, `UL`): the highest whose
    /// BLER at the reported SINR, corrected by outer-loop link adaptation, meets the target.
    pub(super) fn mcs(&self, ui: usize, d: usize) -> u8 {
        let link = &self.ues[ui].link[d];
        let (target, min, max) = match d {
            DL => {
                (self.cfg.cell.pdsch.olla_target_bler, self.cfg.cell.pdsch.min_ue_mcs, self.cfg.cell.pdsch.max_ue_mcs)
            }
            _ => (self.cfg.cell.pusch.olla_target_bler, self.cfg.cell.pusch.min_ue_mcs, self.cfg.cell.pusch.max_ue_mcs),
        };
        channel::select_mcs(self.table[d], link.csi_sinr + link.olla.offset_db, target, max).max(min)
    }

    pub(super) fn handle_slot<S: Sink>(&mut self, s: u64, sink: &mut S) {
        let SlotPoint { t, sfn, slot_in_frame: sif } = self.grid.point(s);
        self.stats.slots += 1;
        let kind = self.duplex.slot_kind(s);
        self.pucch.release_before(s);
        // CSI reports, the UE's BSR timers, and the BSRs the gNB takes in from this slot.
        let csi = s.is_multiple_of(self.csi_period_slots);
        for ui in 0..self.ues.len() {
            let has_data = self.ue_ul_buffer(ui) > 0;
            let u = &mut self.ues[ui];
            if csi {
                u.link[DL].csi_sinr = u.link[DL].sinr.at(t).floor();
                u.link[UL].csi_sinr = u.link[UL].sinr.at(t).floor();
            }
            u.mac.slot_start(t, has_data);
            u.ul_view.slot_start(s, &u.mac.grants);
        }
        // SR occasions on slots with UL symbols (PUCCH).
        if kind.ul_symbols > 0 {
            for ui in 0..self.ues.len() {
                let period = self.sr_period_slots;
                let u = &mut self.ues[ui];
                if u.mac.sr_occasion(s, period) {
                    u.ul_view.sr(s, self.cfg.cell.pusch.ul_sched_delay_slots);
                    self.control(sink, t, Control::Sr { ue: ui as u32 });
                }
            }
        }
        let pdcch = u32::from(self.cfg.cell.pdcch_symbols);
        if u32::from(kind.dl_symbols) >= pdcch + 3 {
            self.schedule_dl(s, t, u32::from(kind.dl_symbols) - pdcch, sfn, sif, sink);
        }
        if kind.dl_symbols > 0 {
            for u_slot in self.duplex.pusch_slots_for_pdcch(s, self.cfg.cell.pusch.min_k2) {
                self.schedule_ul(s, u_slot, sink);
            }
        }
        if kind.ul_symbols == 14 {
            self.transmit_pusch(s, t, sfn, sif, sink);
        }
        self.schedule(t + self.grid.slot_ns(), Action::Slot(s + 1));
    }

    /// The retransmissions of direction `d` due by slot `s`, UE by UE and process by process, while
    /// PRBs (`free`) and places (`n` of `max_ues`) last and `fits` allows: each goes with its TB's
    /// PRBs and MCS (adaptive retransmission), and `send` sends it. At most one per UE: a UE gets one
    /// PDSCH (TS 38.214 §5.1) or PUSCH (§6.1) in a slot. Returns which UEs got one.
    #[allow(clippy::too_many_arguments)] // the slot's budgets and the direction's two rules
    fn retransmissions(
        &mut self,
        d: usize,
        s: u64,
        free: &mut u16,
        n: &mut u16,
        max_ues: u16,
        fits: &dyn Fn(&Stack, usize, &Tb) -> bool,
        send: &mut dyn FnMut(&mut Stack, usize, usize),
    ) -> Vec<bool> {
        let mut sent = vec![false; self.ues.len()];
        for (ui, got) in sent.iter_mut().enumerate() {
            for h in 0..self.ues[ui].link[d].harq.len() {
                let hp = &self.ues[ui].link[d].harq[h];
                let ready = matches!(hp.state, HarqState::PendingRetx { ready } if ready <= s);
                let Some(tb) = hp.tb.as_ref() else { continue };
                if !ready || tb.prbs > *free || *n >= max_ues || !fits(self, ui, tb) {
                    continue;
                }
                *free -= tb.prbs;
                *n += 1;
                self.ues[ui].link[d].harq[h].retx();
                send(self, ui, h);
                *got = true;
                break; // one per UE
            }
        }
        sent
    }

    /// The UEs that may get a new TB in direction `d` this slot (`eligible`, and a HARQ process
    /// idle), each with its rate: the bytes one PRB of `symbols` symbols carries at its MCS.
    fn candidates(&mut self, d: usize, symbols: u32, eligible: impl Fn(&Stack, usize) -> bool) -> Vec<Candidate> {
        let mut cands = Vec::new();
        for ui in 0..self.ues.len() {
            if !eligible(self, ui) || !self.ues[ui].link[d].harq.iter().any(|h| h.state == HarqState::Idle) {
                continue;
            }
            let mcs = self.mcs(ui, d);
            let rate = f64::from(self.tbs.tbs_for(self.table[d], mcs, symbols, 1));
            cands.push(Candidate { ue: ui, rate });
        }
        cands
    }

    /// A new TB of UE `ui` in direction `d`: its MCS, the fewest PRBs (at most `free`) that carry
    /// `need` bytes, and their TBS — (PRBs, MCS, TBS).
    fn allocate(&mut self, d: usize, ui: usize, symbols: u32, need: u64, free: u16) -> (u16, u8, u32) {
        let mcs = self.mcs(ui, d);
        let (prbs, _) = self.tbs.prbs_for(self.table[d], mcs, symbols, need);
        let prbs = prbs.min(free);
        (prbs, mcs, self.tbs.tbs_for(self.table[d], mcs, symbols, prbs))
    }

    /// The first idle HARQ process of UE `ui` in direction `d` (a candidate has one).
    fn idle_harq(&self, d: usize, ui: usize) -> usize {
        self.ues[ui].link[d]
            .harq
            .iter()
            .position(|h| h.state == HarqState::Idle)
            .expect("candidate has an idle process")
    }

    pub(super) fn schedule_dl<S: Sink>(&mut self, s: u64, t: Instant, symbols: u32, sfn: u16, sif: u8, sink: &mut S) {
        let mut free = self.prbs;
        let mut scheduled = 0u16;
        let max_ues = self.cfg.cell.scheduler.max_ues_per_slot as u16;
        let pdsch_start = t + i64::from(self.cfg.cell.pdcch_symbols) * self.grid.symbol_ns();
        let pdsch_end = pdsch_start + i64::from(symbols) * self.grid.symbol_ns();
        // Retransmissions first (the same PRBs and MCS), where the PDSCH is long enough; a UE with
        // one gets no new TB in this slot (one PDSCH per UE per slot, TS 38.214 §5.1).
        let retx = self.retransmissions(
            DL,
            s,
            &mut free,
            &mut scheduled,
            max_ues,
            &|st, ui, tb| symbols >= tb.symbols && st.pucch.harq_ack_slot(s, ui as u32).is_some(),
            &mut |st, ui, h| st.transmit_dl(ui, h, s, t, pdsch_start, pdsch_end, sink),
        );
        // New transmissions.
        let cands = self.candidates(DL, symbols, |st, ui| {
            !retx[ui] && st.gnb_dl_buffer(ui) > 0 && st.pucch.harq_ack_slot(s, ui as u32).is_some()
        });
        let mut served = vec![0u64; self.ues.len()];
        for ui in self.scheduler.order(Dir::Dl, &cands) {
            if free == 0 || scheduled >= max_ues {
                break;
            }
            let need = self.gnb_dl_buffer(ui) + 16;
            let (prbs, mcs, tbs) = self.allocate(DL, ui, symbols, need, free);
            let pdus = self.pull(ui, tbs, true, t, sink);
            if pdus.is_empty() {
                continue;
            }
            free -= prbs;
            scheduled += 1;
            served[ui] = u64::from(tbs);
            let h = self.idle_harq(DL, ui);
            self.ues[ui].link[DL].harq[h].new_tx(Tb { pdus, mcs, prbs, tbs, symbols, bsr: None });
            self.transmit_dl(ui, h, s, t, pdsch_start, pdsch_end, sink);
        }
        self.scheduler.served(Dir::Dl, &served);
        sink.slot(SlotEvent {
            prbs: self.prbs - free,
            prbs_used: Some(self.prbs - free),
            prbs_total: Some(self.prbs),
            nof_ues_scheduled: Some(scheduled),
            ..SlotEvent::cell(t, s, sfn, sif, Dir::Dl)
        });
    }

    /// Pulls RLC PDUs for a TB of `tbs` bytes from the UE's DRBs (DL: the DU's entities in strict
    /// priority order; UL: the UE's, shared by logical channel prioritisation, TS 38.321 §5.4.3.1),
    /// emitting an RLC `segment` event per data PDU.
    pub(super) fn pull<S: Sink>(
        &mut self,
        ui: usize,
        tbs: u32,
        dl: bool,
        t: Instant,
        sink: &mut S,
    ) -> Vec<(u8, RlcPdu)> {
        let mut pdus = Vec::new();
        if dl {
            let mut order: Vec<usize> = (0..self.ues[ui].drbs.len()).collect();
            order.sort_by_key(|d| (self.ues[ui].drbs[*d].priority, *d));
            let mut budget = tbs;
            for di in order {
                budget -= self.pull_lch(ui, di, budget, true, t, sink, &mut pdus);
            }
        } else {
            let mut lcp = std::mem::take(&mut self.ues[ui].mac.lcp);
            lcp.allocate(t, tbs, |di, room| self.pull_lch(ui, di, room, false, t, sink, &mut pdus));
            self.ues[ui].mac.lcp = lcp;
        }
        pdus
    }

    /// Up to `room` bytes (MAC subheaders included) of DRB `di`'s RLC PDUs into `pdus`; the bytes
    /// taken.
    #[allow(clippy::too_many_arguments)] // the entity's address, the room and where PDUs go
    fn pull_lch<S: Sink>(
        &mut self,
        ui: usize,
        di: usize,
        room: u32,
        dl: bool,
        t: Instant,
        sink: &mut S,
        pdus: &mut Vec<(u8, RlcPdu)>,
    ) -> u32 {
        if room < 8 {
            return 0;
        }
        let d = &mut self.ues[ui].drbs[di];
        let rlc = if dl { &mut d.gnb_rlc } else { &mut d.ue_rlc };
        let got = rlc.pull(t, room, mac_subheader);
        let mut used = 0u32;
        for pdu in got {
            used += pdu.bytes() + mac_subheader(pdu.bytes());
            if let RlcPdu::Data { sn, sdu, offset, len, retx, .. } = &pdu {
                let node = if dl { Node::GnbDu } else { Node::Ue };
                let mut e = self.ev(t, node, Layer::Rlc, Point::Segment, &sdu.pkt);
                e.sn = Some(*sn);
                e.seg_offset = Some(*offset);
                e.seg_last = Some(offset + len == sdu.len);
                e.bytes = *len;
                e.retx = *retx;
                sink.packet(e);
            }
            pdus.push((di as u8, pdu));
        }
        self.drain_rlc(t, ui, di, !dl, sink);
        used.min(room)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn transmit_dl<S: Sink>(
        &mut self,
        ui: usize,
        h: usize,
        s: u64,
        t: Instant,
        start: Instant,
        end: Instant,
        sink: &mut S,
    ) {
        let u = &self.ues[ui];
        let hp = &u.link[DL].harq[h];
        let tb = hp.tb.as_ref().expect("transmitting a process with a TB");
        let retx = hp.nof_tx - 1;
        self.tb_sent(sink, start, Node::GnbDu, &tb.pdus, retx);
        let sinr = u.link[DL].sinr.at(t);
        let p_err = channel::bler(self.table[DL], tb.mcs, sinr, hp.nof_tx);
        let ok = !self.ues[ui].link[DL].rng.bernoulli(p_err);
        self.stats.harq_tx[0] += 1;
        if retx > 0 {
            self.stats.harq_retx[0] += 1;
        }
        let ack_slot = self.pucch.harq_ack_slot(s, ui as u32).expect("the scheduler checked PUCCH room");
        self.pucch.reserve(ack_slot, ui as u32);
        self.schedule(end, Action::DlDecode { ue: ui as u32, harq: h as u8, ok });
        let fb = self.grid.start(ack_slot + 1);
        self.schedule(fb, Action::DlFeedback { ue: ui as u32, harq: h as u8, ack: ok, slot: s });
    }

    /// The event of an RLC data PDU of a TB at (`node`, `layer`, `point`); `retx`: the TB's
    /// retransmission index. A STATUS PDU has none.
    #[allow(clippy::too_many_arguments)] // the event's own columns
    pub(super) fn pdu_event<S: Sink>(
        &self,
        sink: &mut S,
        t: Instant,
        node: Node,
        layer: Layer,
        point: Point,
        pdu: &RlcPdu,
        retx: u32,
    ) {
        if let RlcPdu::Data { sdu, offset, len, sn, .. } = pdu {
            let mut e = self.ev(t, node, layer, point, &sdu.pkt);
            e.sn = Some(*sn);
            e.seg_offset = Some(*offset);
            e.bytes = *len;
            e.retx = retx as u8;
            sink.packet(e);
        }
    }

    /// A TB sent on the air at `t` by `node`: the MAC `tx` event of each of its data PDUs.
    pub(super) fn tb_sent<S: Sink>(&self, sink: &mut S, t: Instant, node: Node, pdus: &[(u8, RlcPdu)], retx: u32) {
        for (_, pdu) in pdus {
            self.pdu_event(sink, t, node, Layer::Mac, Point::Tx, pdu, retx);
        }
    }

    /// A TB decoded at the UE (`at_ue`: DL) or at the DU (UL): each RLC PDU to its bearer's
    /// receiving entity, a PHY `rx` event per data PDU.
    pub(super) fn receive_tb<S: Sink>(
        &mut self,
        now: Instant,
        ui: usize,
        pdus: &[(u8, RlcPdu)],
        nof_tx: u32,
        at_ue: bool,
        sink: &mut S,
    ) {
        let node = if at_ue { Node::Ue } else { Node::GnbDu };
        for (di, pdu) in pdus {
            let di = usize::from(*di);
            self.pdu_event(sink, now, node, Layer::Phy, Point::Rx, pdu, nof_tx - 1);
            let d = &mut self.ues[ui].drbs[di];
            let rlc = if at_ue { &mut d.ue_rlc } else { &mut d.gnb_rlc };
            match pdu {
                RlcPdu::Data { .. } => rlc.handle_data(now, pdu),
                RlcPdu::Status { ack_sn, nacks, .. } => rlc.handle_status(now, *ack_sn, nacks),
            }
            self.drain_rlc(now, ui, di, at_ue, sink);
        }
    }

    pub(super) fn dl_decode<S: Sink>(&mut self, now: Instant, ui: usize, h: usize, ok: bool, sink: &mut S) {
        if !ok {
            return;
        }
        let hp = &self.ues[ui].link[DL].harq[h];
        let Some(tb) = hp.tb.as_ref() else { return };
        let (pdus, nof_tx) = (tb.pdus.clone(), hp.nof_tx);
        self.receive_tb(now, ui, &pdus, nof_tx, true, sink);
        // STATUS PDUs or retransmissions may now be waiting at the UE.
        self.ue_data_arrived(ui);
    }

    pub(super) fn dl_feedback<S: Sink>(
        &mut self,
        now: Instant,
        ui: usize,
        h: usize,
        ack: bool,
        slot: u64,
        sink: &mut S,
    ) {
        let max = u32::from(self.cfg.cell.pdsch.max_nof_harq_retxs);
        // Feedback is taken in at the end of the HARQ-ACK's slot (`now` starts the next one).
        let ack_slot = self.grid.at(now) - 1;
        let next = ack_slot + u64::from(self.cfg.cell.pdsch.harq_retx_delay_slots);
        self.ues[ui].link[DL].olla.update(ack);
        let Some(row) = self.harq_row(DL, ui, h, slot, ack) else { return };
        sink.slot(row);
        if let Some((tb, delivered)) = self.ues[ui].link[DL].harq[h].feedback(ack, max, next) {
            if !delivered {
                self.harq_lost(now, ui, tb, Dir::Dl, sink);
            }
        }
    }

    /// The `slot_events` row of HARQ process `h`'s TB of UE `ui` in direction `d`, sent in `slot`
    /// and decoded (`ack`) or not; `None` when the process holds no TB.
    pub(super) fn harq_row(&self, d: usize, ui: usize, h: usize, slot: u64, ack: bool) -> Option<SlotEvent> {
        let u = &self.ues[ui];
        let link = &u.link[d];
        let hp = &link.harq[h];
        let tb = hp.tb.as_ref()?;
        let SlotPoint { t, sfn, slot_in_frame } = self.grid.point(slot);
        let dl = d == DL;
        Some(SlotEvent {
            t_ns: t,
            slot,
            sfn,
            slot_in_frame,
            dir: if dl { Dir::Dl } else { Dir::Ul },
            ue: Some(ui as u32),
            rnti: Some(u.rnti),
            prbs: tb.prbs,
            mcs: Some(tb.mcs),
            tbs: Some(tb.tbs),
            // The UL is single-layer in the model (docs/model.md).
            layers: Some(if dl { self.cfg.cell.layers } else { 1 }),
            harq_id: Some(h as u8),
            rv: Some(rv(hp.nof_tx - 1)),
            ndi: Some(hp.ndi),
            retx_index: Some((hp.nof_tx - 1) as u8),
            ack: Some(ack),
            bsr_bytes: tb.bsr,
            // The CQI the UE reported (DL only: the UL has no CQI).
            cqi: dl.then(|| channel::cqi_for_sinr(link.csi_sinr)),
            sinr_db: Some(link.sinr.at(t) as f32),
            prbs_used: None,
            prbs_total: None,
            nof_ues_scheduled: None,
        })
    }

    pub(super) fn harq_lost<S: Sink>(&mut self, now: Instant, ui: usize, tb: Tb, dir: Dir, sink: &mut S) {
        self.stats.harq_fail[dir_idx(dir)] += 1;
        let node = if dir == Dir::Dl { Node::GnbDu } else { Node::Ue };
        self.control(sink, now, Control::HarqFail { ue: ui as u32, dir, tbs: tb.tbs });
        // RLC UM complete SDUs are lost with the TB; AM recovers by ARQ, and UM segments are dropped
        // by the receiver's t-Reassembly.
        for (di, pdu) in tb.pdus {
            if let RlcPdu::Data { sdu, whole: true, .. } = pdu {
                let d = &self.ues[ui].drbs[usize::from(di)];
                let um = d.gnb_rlc_is_um();
                if um {
                    self.drop_packet(sink, now, node, Layer::Mac, &sdu.pkt, Reason::HarqMaxRetx);
                }
            }
        }
    }

    pub(super) fn schedule_ul<S: Sink>(&mut self, s: u64, u_slot: u64, sink: &mut S) {
        let t = self.grid.start(s);
        let mut free = self.prbs;
        let symbols = 14 - u32::from(self.cfg.cell.dmrs_symbols).min(1);
        let max_ues = self.cfg.cell.scheduler.max_ues_per_slot as u16;
        let mut n = 0;
        // Retransmissions (adaptive: same PRBs and MCS), one grant per UE for the PUSCH slot.
        _ = self.retransmissions(
            UL,
            s,
            &mut free,
            &mut n,
            max_ues,
            &|st, ui, _| !st.ues[ui].mac.grants.contains_key(&u_slot),
            &mut |st, ui, h| _ = st.ues[ui].mac.grants.insert(u_slot, UlGrant { harq: h as u8, new: None }),
        );
        let cands = self.candidates(UL, symbols, |st, ui| {
            let u = &st.ues[ui];
            u.ul_view.wants_grant(s) && !u.mac.grants.contains_key(&u_slot)
        });
        let mut served = vec![0u64; self.ues.len()];
        for ui in self.scheduler.order(Dir::Ul, &cands) {
            if free == 0 || n >= max_ues {
                break;
            }
            let u = &self.ues[ui];
            let want = u.ul_view.want_bytes(self.cfg.cell.pusch.sr_grant_bytes);
            let (prbs, mcs, tbs) = self.allocate(UL, ui, symbols, want, free);
            if tbs < 8 {
                continue;
            }
            free -= prbs;
            n += 1;
            served[ui] = u64::from(tbs);
            let h = self.idle_harq(UL, ui);
            // Reserve the process now; the TB is built by the UE at the PUSCH slot.
            let u = &mut self.ues[ui];
            u.link[UL].harq[h].state = HarqState::WaitAck;
            u.mac.grants.insert(u_slot, UlGrant { harq: h as u8, new: Some((prbs, mcs, tbs)) });
            u.ul_view.granted(tbs);
            u.mac.new_grant(t, self.cfg.cell.mac_cell_group.bsr_cfg.retx_bsr_timer);
            self.control(sink, t, Control::Grant { ue: ui as u32, pusch_slot: u_slot, tbs });
        }
        self.scheduler.served(Dir::Ul, &served);
    }

    pub(super) fn transmit_pusch<S: Sink>(&mut self, s: u64, t: Instant, sfn: u16, sif: u8, sink: &mut S) {
        let symbols = 14 - u32::from(self.cfg.cell.dmrs_symbols).min(1);
        let mut used = 0u16;
        let mut n = 0u16;
        for ui in 0..self.ues.len() {
            let Some(grant) = self.ues[ui].mac.grants.remove(&s) else { continue };
            let h = usize::from(grant.harq);
            n += 1;
            if let Some((prbs, mcs, tbs)) = grant.new {
                // New TB built now by the UE: BSR (if triggered or padding room) + RLC PDUs.
                let bsr_room = self.ues[ui].mac.bsr_room();
                let mut pdus = self.pull(ui, tbs.saturating_sub(bsr_room), false, t, sink);
                let left = self.ue_ul_buffer(ui);
                let used_bytes: u32 =
                    pdus.iter().map(|(_, p)| p.bytes() + mac_subheader(p.bytes())).sum::<u32>() + bsr_room;
                let bsr = self.ues[ui].mac.carries_bsr(tbs, used_bytes).then_some(left);
                if bsr.is_some() {
                    let b = &self.cfg.cell.mac_cell_group.bsr_cfg;
                    self.ues[ui].mac.bsr_sent(t, b.periodic_bsr_timer, b.retx_bsr_timer);
                    self.control(sink, t, Control::Bsr { ue: ui as u32, bytes: left });
                }
                pdus.shrink_to_fit();
                self.ues[ui].link[UL].harq[h].new_tx(Tb { pdus, mcs, prbs, tbs, symbols, bsr });
            }
            used += self.ues[ui].link[UL].harq[h].tb.as_ref().map_or(0, |tb| tb.prbs);
            let u = &self.ues[ui];
            let hp = &u.link[UL].harq[h];
            let Some(tb) = hp.tb.as_ref() else { continue };
            let retx = hp.nof_tx - 1;
            let start = t + self.grid.symbol_ns();
            self.tb_sent(sink, start, Node::Ue, &tb.pdus, retx);
            let p_err = channel::bler(self.table[UL], tb.mcs, u.link[UL].sinr.at(t), hp.nof_tx);
            self.stats.harq_tx[1] += 1;
            if retx > 0 {
                self.stats.harq_retx[1] += 1;
            }
            let ok = !self.ues[ui].link[UL].rng.bernoulli(p_err);
            self.schedule(t + self.grid.slot_ns(), Action::UlDecode { ue: ui as u32, harq: h as u8, ok, slot: s });
        }
        sink.slot(SlotEvent {
            prbs: used,
            prbs_used: Some(used),
            prbs_total: Some(self.prbs),
            nof_ues_scheduled: Some(n),
            ..SlotEvent::cell(t, s, sfn, sif, Dir::Ul)
        });
    }

    pub(super) fn ul_decode<S: Sink>(&mut self, now: Instant, ui: usize, h: usize, ok: bool, slot: u64, sink: &mut S) {
        let max = u32::from(self.cfg.cell.pusch.max_nof_harq_retxs);
        self.ues[ui].link[UL].olla.update(ok);
        let Some(row) = self.harq_row(UL, ui, h, slot, ok) else { return };
        sink.slot(row);
        let hp = &self.ues[ui].link[UL].harq[h];
        let Some(tb) = hp.tb.clone() else { return };
        if ok {
            let nof_tx = hp.nof_tx;
            if let Some(b) = tb.bsr {
                self.ues[ui].ul_view.bsr(slot, b, self.cfg.cell.pusch.ul_sched_delay_slots);
            }
            self.receive_tb(now, ui, &tb.pdus, nof_tx, false, sink);
        }
        let next = slot + u64::from(self.cfg.cell.pusch.harq_retx_delay_slots);
        if let Some((tb, delivered)) = self.ues[ui].link[UL].harq[h].feedback(ok, max, next) {
            if !delivered {
                self.harq_lost(now, ui, tb, Dir::Ul, sink);
            }
        }
        self.ue_data_arrived(ui);
    }
}
