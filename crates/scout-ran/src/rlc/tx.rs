//! The transmitting side of an RLC entity: the SDU queue in, PDUs out per grant (segmentation,
//! AM polling, retransmissions first), and what a STATUS PDU from the peer acknowledges or NACKs
//! (TS 38.322 §5.2.2.1, §5.2.3.1, §5.3.3).

use super::*;

impl RlcEntity {
    /// Accepts an SDU from PDCP. Drops it (reported) if the queue is at its SDU or byte limit.
    pub fn handle_sdu(&mut self, now: Instant, sdu: Sdu) {
        if let Err(reason) = self.queue.push(now, sdu) {
            self.out.push(RlcOut::Dropped { sdu, reason });
            return;
        }
        let (qb, qp) = (self.queue.bytes, self.queue.sdus.len() as u32);
        self.out.push(RlcOut::Enqueued { sdu, queue_bytes: qb, queue_pkts: qp });
        if self.queue.sdus.len() == 1 {
            self.out.push(RlcOut::Hol { sdu, queue_bytes: qb, queue_pkts: qp });
        }
    }

    /// PDCP discard (TS 38.322 §5.4): removes the SDU if no segment of it was sent yet.
    pub fn discard(&mut self, pdcp_sn: u32) -> Option<Sdu> {
        let i = self.queue.sdus.iter().position(|s| s.sdu.pdcp_sn == pdcp_sn && s.offset == 0)?;
        let was_head = i == 0;
        let s = self.queue.sdus.remove(i).expect("index from position");
        self.queue.bytes -= u64::from(s.sdu.len);
        if was_head {
            self.emit_hol();
        }
        Some(s.sdu)
    }

    pub(super) fn emit_hol(&mut self) {
        if let Some(h) = self.queue.sdus.front() {
            let sdu = h.sdu;
            self.out.push(RlcOut::Hol { sdu, queue_bytes: self.queue.bytes, queue_pkts: self.queue.sdus.len() as u32 });
        }
    }

    /// Builds RLC PDUs for a MAC grant of `budget` bytes; `subheader(len)` is the MAC subheader size
    /// per PDU. Order: STATUS, retransmissions, new data (TS 38.322 §5.2.3.1.1, §5.3.4).
    pub fn pull(&mut self, now: Instant, mut budget: u32, subheader: impl Fn(u32) -> u32) -> Vec<RlcPdu> {
        let mut pdus = Vec::new();
        self.pull_status(now, &mut budget, &subheader, &mut pdus);
        self.pull_retx(now, &mut budget, &subheader, &mut pdus);
        self.pull_new(now, &mut budget, &subheader, &mut pdus);
        pdus
    }

    /// A STATUS PDU, when one is due and fits (t-StatusProhibit started, TS 38.322 §5.3.4).
    fn pull_status(&mut self, now: Instant, budget: &mut u32, subheader: &impl Fn(u32) -> u32, pdus: &mut Vec<RlcPdu>) {
        if self.status_ready() {
            if let Some((ack_sn, nacks)) = self.build_status(|bytes| bytes + subheader(bytes) <= *budget) {
                let bytes = status_bytes(&nacks);
                *budget -= bytes + subheader(bytes);
                self.status_triggered = false;
                let prohibit = self.cfg.am.rx.t_status_prohibit;
                if prohibit > 0 {
                    self.t_status_prohibit = Some(now + prohibit * MS);
                }
                let nacked = nacks.iter().map(|n| n.sn).collect();
                self.out.push(RlcOut::Control(RlcControl::Status { ack_sn, nacks: nacked }));
                pdus.push(RlcPdu::Status { ack_sn, nacks, bytes });
            }
        }
    }

    /// AM retransmissions, whole or as segments, while the grant has room (TS 38.322 §5.3.2).
    fn pull_retx(&mut self, now: Instant, budget: &mut u32, subheader: &impl Fn(u32) -> u32, pdus: &mut Vec<RlcPdu>) {
        while let Some(&(sn, off, len)) = self.retx.front() {
            let Some(entry) = self.am_tx.get(sn) else {
                self.retx.pop_front();
                self.retx_bytes -= u64::from(len);
                continue;
            };
            let whole = off == 0 && len == entry.sdu.len;
            let first = off == 0;
            let header = data_header(RlcMode::Am, self.cfg.am.tx.sn, whole, first);
            let min = header + 1 + subheader(header + 1);
            if *budget < min {
                break;
            }
            let room = *budget - header - subheader(header + len.min(*budget));
            let take = len.min(room);
            if take == 0 {
                break;
            }
            let whole = whole && take == len;
            let header = data_header(RlcMode::Am, self.cfg.am.tx.sn, whole, first);
            *budget -= header + take + subheader(header + take);
            self.retx_bytes -= u64::from(take);
            if take == len {
                self.retx.pop_front();
            } else if let Some(front) = self.retx.front_mut() {
                *front = (sn, off + take, len - take);
            }
            let (sdu, first_tx) = (entry.sdu, entry.first_tx);
            let retx = entry.retx_count.min(255) as u8;
            let poll = self.should_poll(now, take, true);
            pdus.push(RlcPdu::Data { sn, sdu, offset: off, len: take, header, poll, retx, whole, first_tx, tx: now });
        }
    }

    /// New data, while the AM transmit window has room for a new SN: whole SDUs, or segments of
    /// the head (SNs as TS 38.322 §5.2.2.1 and §5.2.3.1.1 assign them).
    fn pull_new(&mut self, now: Instant, budget: &mut u32, subheader: &impl Fn(u32) -> u32, pdus: &mut Vec<RlcPdu>) {
        while !self.window_full() {
            let Some(head) = self.queue.sdus.front_mut() else { break };
            let remaining = head.sdu.len - head.offset;
            let first = head.offset == 0;
            let sn_bits = match self.mode {
                RlcMode::Am => self.cfg.am.tx.sn,
                RlcMode::UmBidir => self.cfg.um_bidir.tx.sn,
            };
            let whole_hdr = data_header(self.mode, sn_bits, true, true);
            let seg_hdr = data_header(self.mode, sn_bits, false, first);
            let fits_whole = first && remaining + whole_hdr + subheader(remaining + whole_hdr) <= *budget;
            let (header, take, whole) = if fits_whole {
                (whole_hdr, remaining, true)
            } else {
                if *budget < seg_hdr + 1 + subheader(seg_hdr + 1) {
                    break;
                }
                let room = *budget - seg_hdr - subheader(seg_hdr + remaining.min(*budget));
                (seg_hdr, remaining.min(room), false)
            };
            if take == 0 {
                break;
            }
            let head = if head.offset == 0 {
                let marked = self.queue.leaving(now);
                let head = self.queue.sdus.front_mut().expect("the head is still there");
                if marked {
                    self.out.push(RlcOut::CeMark { sdu: head.sdu });
                }
                head
            } else {
                head
            };
            *budget -= header + take + subheader(header + take);
            let sn = match head.sn {
                Some(sn) => sn,
                None => {
                    // UM assigns an SN only to segmented SDUs (TS 38.322 §5.2.2.1); AM to every SDU.
                    if self.mode == RlcMode::Am || !whole {
                        let sn = self.tx_next;
                        self.tx_next += 1;
                        head.sn = Some(sn);
                        sn
                    } else {
                        u32::MAX
                    }
                }
            };
            let offset = head.offset;
            head.offset += take;
            self.queue.bytes -= u64::from(take);
            let sdu = head.sdu;
            let done = head.offset == sdu.len;
            let mut first_tx = now;
            if self.mode == RlcMode::Am {
                let e = self.am_tx.get_or_insert_with(sn, || AmTxEntry {
                    sdu,
                    retx_count: 0,
                    first_tx: now,
                    fully_sent: false,
                });
                e.fully_sent |= done;
                first_tx = e.first_tx;
            }
            if done {
                self.queue.sdus.pop_front();
                self.out.push(RlcOut::Transmitted { pdcp_sn: sdu.pdcp_sn });
                self.emit_hol();
            }
            let poll = self.mode == RlcMode::Am && self.should_poll(now, take, false);
            pdus.push(RlcPdu::Data { sn, sdu, offset, len: take, header, poll, retx: 0, whole, first_tx, tx: now });
        }
    }

    /// AM_Window_Size, TS 38.322 §7.2: 2048 for 12-bit SNs, 131072 for 18-bit.
    fn am_window(&self) -> u32 {
        if self.cfg.am.tx.sn == 12 {
            2048
        } else {
            131_072
        }
    }

    /// AM: the SNs sent and not yet acknowledged, in order.
    #[cfg(test)]
    pub(super) fn unacked_sns(&self) -> Vec<u32> {
        let first = self.am_tx.first_sn().unwrap_or(self.tx_next);
        (first..self.tx_next).filter(|&sn| self.am_tx.get(sn).is_some()).collect()
    }

    /// AM: the SDU at the head needs a new SN, and that SN falls outside the transmitting window
    /// TX_Next_Ack <= SN < TX_Next_Ack + AM_Window_Size (§5.2.3.1.1), TX_Next_Ack being the lowest
    /// SN not yet acknowledged. An SDU already being segmented has its SN and goes on.
    pub(super) fn window_full(&self) -> bool {
        if self.mode != RlcMode::Am || self.queue.sdus.front().is_none_or(|h| h.sn.is_some()) {
            return false;
        }
        let tx_next_ack = self.am_tx.first_sn().unwrap_or(self.tx_next);
        self.tx_next >= tx_next_ack + self.am_window()
    }

    /// TS 38.322 §5.3.3.2: decide whether this AMD PDU carries a poll, and do the poll bookkeeping.
    pub(super) fn should_poll(&mut self, now: Instant, data_bytes: u32, is_retx: bool) -> bool {
        if self.mode != RlcMode::Am {
            return false;
        }
        let c = &self.cfg.am.tx;
        if !is_retx {
            self.pdu_without_poll += 1;
            self.byte_without_poll += u64::from(data_bytes);
        }
        let by_pdu = c.poll_pdu > 0 && self.pdu_without_poll >= c.poll_pdu as u64;
        let by_byte = c.poll_byte > 0 && self.byte_without_poll >= c.poll_byte as u64 * 1000;
        // The PDU emptied both buffers, or no new SDU can follow it (window stalling).
        let empty = self.queue.sdus.is_empty() && self.retx.is_empty();
        let poll = by_pdu || by_byte || empty || self.window_full() || self.force_poll;
        if poll {
            self.force_poll = false;
            self.pdu_without_poll = 0;
            self.byte_without_poll = 0;
            self.poll_sn = Some(self.tx_next.saturating_sub(1));
            self.t_poll_retransmit = Some(now + c.t_poll_retransmit * MS);
            self.out.push(RlcOut::Control(RlcControl::Poll { poll_sn: self.poll_sn }));
        }
        poll
    }

    /// AM: a STATUS PDU from the peer (TS 38.322 §5.3.3.3 and §5.3.2).
    pub fn handle_status(&mut self, now: Instant, ack_sn: u32, nacks: &[Nack]) {
        let _ = now;
        let nacked: std::collections::BTreeSet<u32> = nacks.iter().map(|n| n.sn).collect();
        // Positive acknowledgements: every SN < ACK_SN not NACKed (a STATUS may cover thousands
        // of SNs). What stays: the NACKed, and an SDU still being segmented for the first time.
        let (mut sdus, mut last_pdcp_sn) = (0, 0);
        self.am_tx.remove_below(
            ack_sn,
            |sn, e| !e.fully_sent || nacked.contains(&sn),
            |_, e| {
                sdus += 1;
                last_pdcp_sn = e.sdu.pdcp_sn;
            },
        );
        if sdus > 0 {
            self.out.push(RlcOut::Acked { sdus, last_pdcp_sn });
        }
        if self.poll_sn.is_some_and(|p| p < ack_sn) {
            self.t_poll_retransmit = None;
        }
        // Negative acknowledgements.
        let max_retx = self.cfg.am.tx.max_retx_threshold;
        let mut counted = std::collections::BTreeSet::new();
        for n in nacks {
            let Some(e) = self.am_tx.get_mut(n.sn) else { continue };
            let (a, b) = n.so.unwrap_or((0, e.sdu.len));
            let b = b.min(e.sdu.len);
            if a >= b || self.retx.iter().any(|(sn, o, l)| *sn == n.sn && *o <= a && a < o + l) {
                continue;
            }
            if counted.insert(n.sn) {
                e.retx_count += 1;
            }
            if e.retx_count > max_retx {
                let sdu = e.sdu;
                self.am_tx.remove(n.sn);
                self.retx.retain(|(sn, _, _)| *sn != n.sn);
                self.retx_bytes = self.retx.iter().map(|(_, _, l)| u64::from(*l)).sum();
                self.out.push(RlcOut::Dropped { sdu, reason: Reason::RlcMaxRetx });
                continue;
            }
            self.retx.push_back((n.sn, a, b - a));
            self.retx_bytes += u64::from(b - a);
        }
    }
}
