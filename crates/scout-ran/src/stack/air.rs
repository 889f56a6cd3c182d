//! The air as the stack wires it: each slot's CSI, SR and BSR, the gNB MAC's decisions
//! (`crate::mac::gnb`) carried out — RLC PDUs pulled into each TB through the MAC–RLC adapter
//! ([`Stack::pull`]), the TB's events, the channel's outcome drawn — and HARQ feedback.

use super::*;

/// Where a slot's PDSCH is: the slot, its start, and the PDSCH's first and last symbol's edges.
struct Pdsch {
    slot: u64,
    t: Instant,
    start: Instant,
    end: Instant,
}

impl Stack {
    pub(super) fn handle_slot<S: Sink>(&mut self, s: u64, sink: &mut S) {
        let SlotPoint { t, sfn, slot_in_frame: sif } = self.grid.point(s);
        self.stats.slots += 1;
        let kind = self.duplex.slot_kind(s);
        self.mac.slot_start(s);
        // ANBR: the windows that closed send their Recommended bit rate MAC CE.
        let first = self.recommendations.len();
        self.mac.poll_anbr(t, &mut self.recommendations);
        for i in first..self.recommendations.len() {
            self.control(sink, t, Control::Anbr(self.recommendations[i]));
        }
        // CSI: on a CSI-RS occasion each UE measures its DL SINR and works out its CQI, which
        // reaches the gNB on PUCCH in the first UL slot n_CSI_ref slots later (TS 38.214 §5.2.2.5);
        // the gNB schedules with it from the slot after. Reports that arrive now take effect.
        while self.csi_pending.front().is_some_and(|(due, ..)| *due <= s) {
            let (_, ui, cqi, ri) = self.csi_pending.pop_front().expect("checked");
            self.mac.csi_report(ui, cqi, ri);
        }
        if s.is_multiple_of(self.csi_period_slots) {
            let pucch = self.next_ul_slot(s + self.csi_ref_slots);
            for ui in 0..self.ues.len() {
                let (cqi, ri) = self.csi_for(ui, t);
                self.csi_pending.push_back((pucch + 1, ui, cqi, ri));
            }
        }
        // The UE's BSR timers, and the BSRs the gNB takes in from this slot.
        for ui in 0..self.ues.len() {
            let has_data = self.ue_ul_buffer(ui) > 0;
            let u = &mut self.ues[ui];
            u.mac.slot_start(t, has_data);
            self.mac.ue_mut(ui).ul_view.slot_start(s, &u.mac.grants);
        }
        // SR occasions on slots with UL symbols (PUCCH).
        if kind.ul_symbols > 0 {
            for ui in 0..self.ues.len() {
                if self.ues[ui].mac.sr_occasion(s, self.sr_period_slots) {
                    self.mac.ue_mut(ui).ul_view.sr(s, self.cfg.cell.pusch.ul_sched_delay_slots);
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

    /// The CQI and rank indicator UE `ui` works out from its measurement at `t`. A UE whose
    /// channel models its antennas tries each rank up to what the channel carries (and
    /// `cell_cfg.layers`, when set), the CQI of each being what that many layers would decode
    /// ([`crate::phy::mimo`]), and reports the rank whose CQI carries the most bits per resource
    /// element, layers × efficiency (TS 38.214 §5.2.2.2 leaves the choice to the UE; on a tie the
    /// fewer layers). Any other UE reports the configured layers.
    fn csi_for(&self, ui: usize, t: Instant) -> (u8, u8) {
        let (table, src) = (self.mac.table(DL), &self.ues[ui].air[DL].sinr);
        if let Some(csi) = src.replayed_csi(t) {
            return csi;
        }
        let cqi_of = |layers: u8| self.cfg.cell.bler_model.cqi(table, src, t, layers);
        let Some(most) = src.max_layers() else {
            let l = self.cfg.cell.layers.unwrap_or(1);
            return (cqi_of(l), l);
        };
        let most = most.min(self.cfg.cell.layers.unwrap_or(u8::MAX)).max(1);
        let bits = |cqi: u8, layers: u8| match cqi {
            0 => 0.0,
            c => f64::from(layers) * table.cqi_table()[usize::from(c) - 1].spectral_efficiency(),
        };
        let mut best = (cqi_of(1), 1);
        for r in 2..=most {
            let cqi = cqi_of(r);
            if bits(cqi, r) > bits(best.0, best.1) {
                best = (cqi, r);
            }
        }
        best
    }

    /// The probability that HARQ process `h`'s TB of UE `ui` in direction `d`, sent at `t`, fails
    /// to decode under the scenario's error model ([`BlerModel::tb_error`]).
    pub(super) fn tb_error(&mut self, d: usize, ui: usize, h: usize, t: Instant) -> f64 {
        let table = self.mac.table(d);
        let hp = self.mac.harq_mut(d, ui, h);
        let nof_tx = hp.nof_tx;
        let tb = hp.tb.as_mut().expect("transmitting a process with a TB");
        let tx =
            link::Transmission { table, mcs: tb.mcs, tbs_bits: tb.tbs * 8, layers: tb.layers, band: tb.band(), nof_tx };
        let src = &self.ues[ui].air[d].sinr;
        if let Some(p) = src.replayed_error(t, nof_tx) {
            return p;
        }
        let (model, combining) = (self.cfg.cell.bler_model, self.cfg.cell.harq_combining);
        model.tb_error(tx, src, t, &mut tb.soft, combining)
    }

    /// Replayed links' MCS for new TBs of direction `d` sent at `t` (`phy::replay`).
    fn replay_mcs(&mut self, d: usize, t: Instant) {
        if !self.replaying {
            return;
        }
        for ui in 0..self.ues.len() {
            let m = self.ues[ui].air[d].sinr.replayed_mcs(t);
            self.mac.replay_mcs(ui, d, m);
        }
    }

    /// The first slot from `s` on with UL symbols (where PUCCH can be); `s` itself in a pattern
    /// without any (the checks refuse one: no PUCCH, no PUSCH).
    fn next_ul_slot(&self, s: u64) -> u64 {
        (s..s + 1280).find(|n| self.duplex.slot_kind(*n).ul_symbols > 0).unwrap_or(s)
    }

    pub(super) fn schedule_dl<S: Sink>(&mut self, s: u64, t: Instant, symbols: u32, sfn: u16, sif: u8, sink: &mut S) {
        let mut budget = SlotBudget::new(self.prbs, self.cfg.cell.scheduler.max_ues_per_slot as u16);
        let start = t + i64::from(self.cfg.cell.pdcch_symbols) * self.grid.symbol_ns();
        let pdsch = Pdsch { slot: s, t, start, end: start + i64::from(symbols) * self.grid.symbol_ns() };
        // Retransmissions first (the same PRBs and MCS), where the PDSCH is long enough; a UE with
        // one gets no new TB in this slot (one PDSCH per UE per slot, TS 38.214 §5.1).
        let mut retx = vec![false; self.ues.len()];
        for (ui, h, ack_slot) in self.mac.dl_retransmissions(s, symbols, &mut budget) {
            retx[ui] = true;
            self.transmit_dl(ui, h, ack_slot, &pdsch, sink);
        }
        // New transmissions, in the policy's order, each TB filled from the UE's RLC entities.
        let buffered: Vec<u64> = (0..self.ues.len()).map(|ui| self.gnb_dl_buffer(ui)).collect();
        let mac = &self.mac;
        let eligible = |ui: usize| !retx[ui] && buffered[ui] > 0 && mac.harq_ack_slot(s, ui).is_some();
        let eligible: Vec<bool> = (0..self.ues.len()).map(eligible).collect();
        let mut served = vec![0u64; self.ues.len()];
        self.replay_mcs(DL, t);
        let with_data = buffered.iter().filter(|b| **b > 0).count();
        let cap = self.mac.newtx_prb_cap(DL, with_data, retx.iter().filter(|r| **r).count());
        let order = if cap == Some(0) { Vec::new() } else { self.mac.order(DL, symbols, |ui| eligible[ui]) };
        let mut first = true;
        for ui in order {
            if budget.exhausted() {
                break;
            }
            let need = self.gnb_dl_buffer(ui) + 16;
            let (prbs, mcs, tbs, layers) = self.mac.allocate(DL, ui, symbols, need, budget.free, cap);
            let pdus = self.pull(ui, tbs, true, t, sink);
            if pdus.is_empty() {
                continue;
            }
            if std::mem::take(&mut first) {
                self.mac.first_allocated(DL, ui);
            }
            let first_prb = budget.take(prbs);
            served[ui] = u64::from(tbs);
            let tb = Tb { layers, first_prb, ..Tb::new(pdus, mcs, prbs, tbs, symbols, s) };
            let (h, ack_slot) = self.mac.new_dl_tx(s, ui, tb);
            self.transmit_dl(ui, h, ack_slot, &pdsch, sink);
        }
        self.mac.served(DL, &served);
        self.mac.dl_spare(budget.free, symbols);
        sink.slot(SlotEvent {
            prbs: self.prbs - budget.free,
            prbs_used: Some(self.prbs - budget.free),
            prbs_total: Some(self.prbs),
            nof_ues_scheduled: Some(budget.scheduled),
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

    /// HARQ process `h`'s TB goes to UE `ui` on `pdsch`, its HARQ-ACK in UL slot `ack_slot`: the
    /// MAC `tx` events, the channel's outcome, decoding and feedback as actions.
    fn transmit_dl<S: Sink>(&mut self, ui: usize, h: usize, ack_slot: u64, pdsch: &Pdsch, sink: &mut S) {
        // The SINR its slot row reports, over its PRBs in its layers, taken now: the channel is
        // evaluated for this slot.
        let t_slot = self.grid.point(pdsch.slot).t;
        let hp = self.mac.harq_mut(DL, ui, h);
        let nof_tx = hp.nof_tx;
        if let Some(tb) = hp.tb.as_mut() {
            tb.sinr_db = self.ues[ui].air[DL].sinr.at_band(t_slot, tb.band(), tb.layers) as f32;
            if nof_tx == 2 {
                tb.retx_timing.1 = Some(pdsch.slot);
            }
        }
        let hp = self.mac.harq(DL, ui, h);
        let tb = hp.tb.as_ref().expect("transmitting a process with a TB");
        let retx = hp.nof_tx - 1;
        self.tb_sent(sink, pdsch.start, Node::GnbDu, &tb.pdus, retx);
        let p_err = self.tb_error(DL, ui, h, pdsch.t);
        let ok = !self.ues[ui].air[DL].rng.bernoulli(p_err);
        self.stats.harq_tx[0] += 1;
        if retx > 0 {
            self.stats.harq_retx[0] += 1;
        }
        self.schedule(pdsch.end, Action::DlDecode { ue: ui as u32, harq: h as u8, ok, slot: pdsch.slot });
        let fb = self.grid.start(ack_slot + 1);
        self.schedule(fb, Action::DlFeedback { ue: ui as u32, harq: h as u8, ack: ok, slot: pdsch.slot });
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

    pub(super) fn dl_decode<S: Sink>(&mut self, now: Instant, ui: usize, h: usize, ok: bool, slot: u64, sink: &mut S) {
        if !ok {
            return;
        }
        let hp = self.mac.harq(DL, ui, h);
        let Some(tb) = hp.tb.as_ref() else { return };
        let (pdus, nof_tx) = (tb.pdus.clone(), hp.nof_tx);
        self.retx_event(sink, now, Dir::Dl, ui, h, nof_tx, slot);
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
        // Feedback is taken in at the end of the HARQ-ACK's slot (`now` starts the next one).
        let ack_slot = self.grid.at(now) - 1;
        if let Some(row) = self.harq_row(DL, ui, h, slot, ack) {
            sink.slot(row);
        }
        match self.mac.feedback(DL, ui, h, ack, ack_slot) {
            Some((tb, true)) => self.mac.dl_acknowledged(ui, &tb),
            Some((tb, false)) => self.harq_lost(now, ui, tb, Dir::Dl, sink),
            None => {
                // A NACK, retransmission to come: the first one's HARQ-ACK slot is k1's end.
                if let Some(tb) = self.mac.harq_mut(DL, ui, h).tb.as_mut() {
                    tb.retx_timing.0.get_or_insert(ack_slot);
                }
            }
        }
    }

    /// A TB decoded at `now` in slot `slot`'s transmission after `nof_tx` transmissions: when it
    /// took more than one, the retransmission event it ends (seed 004 §3.1.1: the receiver's
    /// reordering held everything behind it from the first transmission on).
    #[allow(clippy::too_many_arguments)] // the event's own columns
    fn retx_event<S: Sink>(
        &mut self,
        sink: &mut S,
        now: Instant,
        dir: Dir,
        ui: usize,
        h: usize,
        nof_tx: u32,
        slot: u64,
    ) {
        if nof_tx < 2 {
            return;
        }
        let d = if dir == Dir::Dl { DL } else { UL };
        let Some(tb) = self.mac.harq(d, ui, h).tb.as_ref() else { return };
        let (start, last) = (self.grid.start(tb.first_slot), self.grid.start(slot));
        let first_slot = tb.first_slot;
        let k = match tb.retx_timing {
            (Some(m), Some(r)) => Some((m - first_slot, r - m)),
            _ => None,
        };
        if let Some(v) = &mut self.retx_events {
            v.push((ui as u32, dir, now, last - start));
        }
        self.control(
            sink,
            now,
            Control::RetxEvent {
                ue: ui as u32,
                dir,
                harq: h as u8,
                nof_tx,
                first_slot,
                slot,
                start,
                delay: last - start,
                k,
            },
        );
    }

    /// The `slot_events` row of HARQ process `h`'s TB of UE `ui` in direction `d`, sent in `slot`
    /// and decoded (`ack`) or not; `None` when the process holds no TB.
    pub(super) fn harq_row(&self, d: usize, ui: usize, h: usize, slot: u64, ack: bool) -> Option<SlotEvent> {
        let u = &self.ues[ui];
        let hp = self.mac.harq(d, ui, h);
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
            layers: Some(tb.layers),
            harq_id: Some(h as u8),
            rv: Some(rv(hp.nof_tx - 1)),
            ndi: Some(hp.ndi),
            retx_index: Some((hp.nof_tx - 1) as u8),
            ack: Some(ack),
            bsr_bytes: tb.bsr,
            // The CQI the UE reported (DL only: the UL has no CQI).
            cqi: if dl { self.mac.ue(ui).link[DL].cqi } else { None },
            // The rank the UE reported with it (the layers follow it from the report on).
            ri: dl.then(|| self.mac.ue(ui).link[DL].layers),
            sinr_db: Some(tb.sinr_db),
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
        let symbols = 14 - u32::from(self.cfg.cell.dmrs_symbols).min(1);
        let mut budget = SlotBudget::new(self.prbs, self.cfg.cell.scheduler.max_ues_per_slot as u16);
        // Retransmissions (adaptive: same PRBs and MCS), one grant per UE for the PUSCH slot.
        let held: Vec<bool> = self.ues.iter().map(|u| u.mac.grants.contains_key(&u_slot)).collect();
        for (ui, h) in self.mac.ul_retransmissions(s, &mut budget, &held) {
            let Some(tb) = self.mac.harq_mut(UL, ui, h).tb.as_mut() else { continue };
            self.ues[ui].mac.grants.insert(u_slot, UlGrant { harq: h as u8, first_prb: tb.first_prb, new: None });
            if tb.retx_timing.0.is_none() {
                tb.retx_timing = (Some(s), Some(u_slot));
            }
        }
        let with_data = (0..self.ues.len()).filter(|ui| self.mac.ue(*ui).ul_view.wants_grant(s)).count();
        let mut served = vec![0u64; self.ues.len()];
        self.replay_mcs(UL, self.grid.start(u_slot));
        // As srsRAN's policies do, two passes: the UEs whose SR waits, each granted what it needs;
        // then the others with data, each at most the policy's share of the slot.
        let cap = self.mac.newtx_prb_cap(UL, with_data, 0);
        for sr_pass in [true, false] {
            let (ues, mac) = (&self.ues, &self.mac);
            let eligible: Vec<bool> = (0..ues.len())
                .map(|ui| {
                    let v = &mac.ue(ui).ul_view;
                    v.wants_grant(s) && v.sr_pending(s) == sr_pass && !ues[ui].mac.grants.contains_key(&u_slot)
                })
                .collect();
            if !eligible.contains(&true) || (!sr_pass && cap == Some(0)) {
                continue;
            }
            let mut first = true;
            for ui in self.mac.order(UL, symbols, |ui| eligible[ui]) {
                if budget.exhausted() {
                    break;
                }
                let want = self.mac.ue(ui).ul_view.want_bytes(self.cfg.cell.pusch.sr_grant_bytes);
                let cap = if sr_pass { None } else { cap };
                let (prbs, mcs, tbs, _) = self.mac.allocate(UL, ui, symbols, want, budget.free, cap);
                if tbs < MIN_TB_BYTES {
                    continue;
                }
                if std::mem::take(&mut first) {
                    self.mac.first_allocated(UL, ui);
                }
                let first_prb = budget.take(prbs);
                served[ui] = u64::from(tbs);
                // The process is reserved now; the UE builds the TB at the PUSCH slot.
                let h = self.mac.new_ul_grant(ui, tbs);
                let u = &mut self.ues[ui];
                u.mac.grants.insert(u_slot, UlGrant { harq: h as u8, first_prb, new: Some((prbs, mcs, tbs)) });
                u.mac.new_grant(t, self.cfg.cell.mac_cell_group.bsr_cfg.retx_bsr_timer);
                self.control(sink, t, Control::Grant { ue: ui as u32, pusch_slot: u_slot, tbs });
            }
        }
        self.mac.served(UL, &served);
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
                // A waiting bit rate query goes first (TS 38.321 §5.4.3.1.3: MAC CEs before data).
                let query_room = self.ues[ui].mac.query_room();
                let query = (tbs >= query_room).then(|| self.ues[ui].mac.bit_rate_query.take()).flatten();
                let query_room = if query.is_some() { query_room } else { 0 };
                // A triggered power headroom report (TS 38.321 §5.4.6) with this PUSCH's headroom.
                let phr_room = self.ues[ui].mac.phr_room(t);
                let phr_room = if tbs >= bsr_room + query_room + phr_room { phr_room } else { 0 };
                let phr = (phr_room > 0).then(|| {
                    self.ues[ui].mac.phr_sent(t);
                    self.ues[ui].air[UL].sinr.power_headroom_db(t, u32::from(prbs)).map(ph_report_db)
                });
                let ce_room = bsr_room + query_room + phr_room;
                let mut pdus = self.pull(ui, tbs.saturating_sub(ce_room), false, t, sink);
                let left = self.ue_ul_buffer(ui);
                let used_bytes: u32 =
                    pdus.iter().map(|(_, p)| p.bytes() + mac_subheader(p.bytes())).sum::<u32>() + ce_room;
                let bsr = self.ues[ui].mac.carries_bsr(tbs, used_bytes).then_some(left);
                if bsr.is_some() {
                    let b = &self.cfg.cell.mac_cell_group.bsr_cfg;
                    self.ues[ui].mac.bsr_sent(t, b.periodic_bsr_timer, b.retx_bsr_timer);
                    self.control(sink, t, Control::Bsr { ue: ui as u32, bytes: left });
                }
                pdus.shrink_to_fit();
                let first_prb = grant.first_prb;
                self.mac.ul_tb_built(
                    ui,
                    h,
                    Tb { bsr, query, phr, first_prb, ..Tb::new(pdus, mcs, prbs, tbs, symbols, s) },
                );
            }
            let hp = self.mac.harq(UL, ui, h);
            let Some(tb) = hp.tb.as_ref() else { continue };
            used += tb.prbs;
            let retx = hp.nof_tx - 1;
            let start = t + self.grid.symbol_ns();
            self.tb_sent(sink, start, Node::Ue, &tb.pdus, retx);
            // The PUSCH's SINR over its own PRBs (under power control at the power of its size).
            let sinr = self.ues[ui].air[UL].sinr.at_band(t, tb.band(), 1);
            self.mac.pusch_measured(ui, sinr);
            if let Some(tb) = self.mac.harq_mut(UL, ui, h).tb.as_mut() {
                tb.sinr_db = sinr as f32;
            }
            let p_err = self.tb_error(UL, ui, h, t);
            self.stats.harq_tx[1] += 1;
            if retx > 0 {
                self.stats.harq_retx[1] += 1;
            }
            let ok = !self.ues[ui].air[UL].rng.bernoulli(p_err);
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
        let Some(row) = self.harq_row(UL, ui, h, slot, ok) else { return };
        sink.slot(row);
        let hp = self.mac.harq(UL, ui, h);
        let Some(tb) = hp.tb.clone() else { return };
        if ok {
            let nof_tx = hp.nof_tx;
            self.retx_event(sink, now, Dir::Ul, ui, h, nof_tx, slot);
            if let Some(b) = tb.bsr {
                self.mac.ue_mut(ui).ul_view.bsr(slot, b, self.cfg.cell.pusch.ul_sched_delay_slots);
            }
            if let Some(Some(ph)) = tb.phr {
                self.mac.phr_received(ui, ph, tb.prbs);
            }
            if let Some((drb, bps)) = tb.query {
                self.control(sink, now, Control::AnbrQuery { node: Node::GnbDu, ue: ui as u32, drb: drb + 1, bps });
                if let Some(r) = self.mac.answer_query(now, ui, usize::from(drb)) {
                    self.control(sink, now, Control::Anbr(r));
                    self.recommendations.push(r);
                }
            }
            self.receive_tb(now, ui, &tb.pdus, nof_tx, false, sink);
        }
        if let Some((tb, false)) = self.mac.feedback(UL, ui, h, ok, slot) {
            self.harq_lost(now, ui, tb, Dir::Ul, sink);
        }
        self.ue_data_arrived(ui);
    }
}

/// A power headroom as the Single Entry PHR MAC CE reports it: whole dB (rounded down), within the
/// reportable range −32 … 38 dB (TS 38.133 Table 10.1.17.1-1).
pub(super) fn ph_report_db(ph: f64) -> i8 {
    ph.floor().clamp(-32.0, 38.0) as i8
}
