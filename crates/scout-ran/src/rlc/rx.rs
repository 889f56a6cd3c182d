//! The receiving side of an RLC entity: data PDUs in, SDUs out once reassembled, duplicates,
//! t-Reassembly and STATUS reporting (TS 38.322 §5.2.2.2, §5.2.3.2, §5.3.4).

use super::*;

impl RlcEntity {
    /// A data PDU from the MAC (TS 38.322 §5.2.2.2 UM, §5.2.3.2 AM).
    pub fn handle_data(&mut self, now: Instant, pdu: &RlcPdu) {
        let RlcPdu::Data { sn, sdu, offset, len, poll, whole, retx, first_tx, tx, .. } = pdu else { return };
        let (sn, sdu, offset, len) = (*sn, *sdu, *offset, *len);
        if self.mode == RlcMode::UmBidir && *whole {
            // Complete UMD SDU without SN: deliver at once.
            self.out.push(RlcOut::Delivered { sdu });
            return;
        }
        if sn < self.rx_next || self.rx.get(&sn).is_some_and(|e| e.delivered) {
            self.out.push(RlcOut::Control(RlcControl::Duplicate { sn, len }));
            if *poll {
                self.trigger_status(now);
            }
            return;
        }
        let e = self.rx.entry(sn).or_insert(RxEntry { sdu, ranges: Vec::new(), delivered: false });
        let fresh = e.add(offset, offset + len);
        if fresh && e.complete() {
            e.delivered = true;
            if *retx > 0 {
                // An ARQ retransmission completed the SDU: a retransmission event at the RLC
                // layer (seed 004 §3.1.1), T_R from the SN's first transmission to this one.
                self.out.push(RlcOut::Control(RlcControl::RetxEvent {
                    sn,
                    nof_tx: u32::from(*retx) + 1,
                    start: *first_tx,
                    delay: tx - first_tx,
                }));
            }
            self.out.push(RlcOut::Delivered { sdu });
        }
        if sn >= self.rx_next_highest {
            self.rx_next_highest = sn + 1;
        }
        // Advance RX_Highest_Status and RX_Next over completely received SNs.
        let done = |s: &Self, x: u32| s.rx.get(&x).is_some_and(|e| e.delivered);
        if self.mode == RlcMode::Am {
            while done(self, self.rx_highest_status) && self.rx_highest_status < self.rx_next_highest {
                self.rx_highest_status += 1;
            }
        }
        while done(self, self.rx_next) {
            self.rx.remove(&self.rx_next);
            self.rx_next += 1;
        }
        if self.mode == RlcMode::Am {
            self.rx_highest_status = self.rx_highest_status.max(self.rx_next);
        }
        self.update_reassembly_timer(now);
        if *poll {
            if self.mode == RlcMode::Am && sn >= self.rx_highest_status {
                // §5.3.4: delay the report until the polled SN is covered.
                self.poll_waiting_sn = Some(sn);
            } else {
                self.trigger_status(now);
            }
        }
        if let Some(p) = self.poll_waiting_sn {
            if p < self.rx_highest_status {
                self.poll_waiting_sn = None;
                self.trigger_status(now);
            }
        }
    }

    pub(super) fn has_gap_at_rx_next(&self) -> bool {
        self.rx.get(&self.rx_next).is_some_and(|e| !e.complete())
    }

    pub(super) fn update_reassembly_timer(&mut self, now: Instant) {
        let t = match self.mode {
            RlcMode::Am => self.cfg.am.rx.t_reassembly,
            RlcMode::UmBidir => self.cfg.um_bidir.rx.t_reassembly,
        };
        if self.t_reassembly.is_some() {
            let trig = self.rx_next_status_trigger;
            if trig <= self.rx_next || (trig == self.rx_next + 1 && !self.has_gap_at_rx_next()) {
                self.t_reassembly = None;
            }
        }
        if self.t_reassembly.is_none()
            && (self.rx_next_highest > self.rx_next + 1
                || (self.rx_next_highest == self.rx_next + 1 && self.has_gap_at_rx_next()))
        {
            self.t_reassembly = Some(now + t * MS);
            self.rx_next_status_trigger = self.rx_next_highest;
        }
    }

    pub(super) fn trigger_status(&mut self, _now: Instant) {
        if self.mode == RlcMode::Am {
            self.status_triggered = true;
        }
    }

    /// The STATUS PDU to send in at most `room` bytes (`fits(bytes)`: a PDU of that size and its MAC
    /// subheader fit), TS 38.322 §5.3.4: a NACK for every SN in [RX_Next, RX_Highest_Status) not
    /// completely received, each missing byte range of a partly received one, in increasing SN and
    /// segment order, as many as fit; ACK_SN is RX_Highest_Status when all fit, else the SN of the
    /// first missing SDU left out, so the peer takes nothing unlisted as acknowledged (an SDU whose
    /// ranges do not all fit is left out whole). `None` when not even an empty STATUS PDU fits.
    pub(super) fn build_status(&self, fits: impl Fn(u32) -> bool) -> Option<(u32, Vec<Nack>)> {
        if !fits(status_bytes(&[])) {
            return None;
        }
        let mut nacks: Vec<Nack> = Vec::new();
        let mut bytes = status_bytes(&[]);
        for sn in self.rx_next..self.rx_highest_status {
            let missing: Vec<Nack> = match self.rx.get(&sn) {
                None => vec![Nack { sn, so: None }],
                Some(e) if !e.delivered => e.missing().into_iter().map(|r| Nack { sn, so: Some(r) }).collect(),
                Some(_) => continue,
            };
            let more = status_bytes(&missing) - status_bytes(&[]);
            if !fits(bytes + more) {
                return Some((sn, nacks));
            }
            bytes += more;
            nacks.extend(missing);
        }
        Some((self.rx_highest_status, nacks))
    }
}
