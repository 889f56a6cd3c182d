//! F1-U (NR user plane protocol, TS 38.425) flow control of one DL bearer, at the CU-UP: what the
//! DU's DL Data Delivery Status (DDDS) lets the node hosting PDCP send.
//!
//! A DDDS carries the DU's **desired buffer size** for the bearer and the highest PDCP SN it has
//! transmitted (TS 38.425 §5.4.2.1, §5.5.3.x); the node hosting PDCP regards the desired buffer
//! size as the volume it may have outstanding beyond that SN. Two reactions are modelled:
//!
//! - **srsRAN's** (the default): the CU-UP sends every PDCP PDU at once; PDCP's early drop compares
//!   its outstanding volume against the desired buffer size and drops new SDUs beyond it
//!   (`pdcp_entity_tx.cpp` `check_early_drop`). Flow control by loss; nothing waits here.
//! - **holding** (`qos[].f1u_cu_up.flow_control: true`): PDUs beyond the desired buffer size wait
//!   in this bearer's F1-U transmit queue (`f1u_tx`) and go as DDDS frames report SNs
//!   transmitted; PDCP drops early only when this queue is full too.
//!
//! Sans-IO: the stack hands PDUs in and takes released ones out; time never enters.

use std::collections::VecDeque;

/// The CU-UP side of one DL F1-U bearer. `T` is the stack's PDU handle.
pub struct F1uTx<T> {
    hold: bool,
    /// The DU's desired buffer size, bytes: the last DDDS's, or the seed before the first.
    desired: u64,
    /// PDUs waiting for room (holding only): (COUNT, bytes, handle), in COUNT order.
    queue: VecDeque<(u32, u32, T)>,
    queue_bytes: u64,
    /// PDUs sent to the DU and not yet reported transmitted: (COUNT, bytes), in COUNT order.
    sent: VecDeque<(u32, u32)>,
    sent_bytes: u64,
}

impl<T> F1uTx<T> {
    /// A bearer whose DU desires `desired` bytes until its first DDDS (srsRAN seeds the CU-UP
    /// with the DU's `rlc_queue_bytes_limit`); `hold` selects the holding reaction.
    pub fn new(hold: bool, desired: u64) -> Self {
        F1uTx { hold, desired, queue: VecDeque::new(), queue_bytes: 0, sent: VecDeque::new(), sent_bytes: 0 }
    }

    /// Bytes and PDUs waiting in the transmit queue.
    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes
    }

    pub fn queue_pkts(&self) -> u32 {
        self.queue.len() as u32
    }

    /// PDCP hands PDU `count` of `len` bytes down. Returns it if it may go to the DU now; else it
    /// waits (holding), to come out of [`F1uTx::poll_transmit`] later.
    pub fn handle_pdu(&mut self, count: u32, len: u32, pdu: T) -> Option<T> {
        if !self.hold || (self.queue.is_empty() && self.fits(len)) {
            self.mark_sent(count, len);
            return Some(pdu);
        }
        self.queue.push_back((count, len, pdu));
        self.queue_bytes += u64::from(len);
        None
    }

    fn fits(&self, len: u32) -> bool {
        self.sent_bytes + u64::from(len) <= self.desired
    }

    fn mark_sent(&mut self, count: u32, len: u32) {
        self.sent.push_back((count, len));
        self.sent_bytes += u64::from(len);
    }

    /// A DDDS arrived: every COUNT ≤ `highest_transmitted` has left the DU's buffer, and the DU
    /// now desires `desired` bytes beyond it (TS 38.425 §5.4.2.1).
    pub fn handle_ddds(&mut self, highest_transmitted: Option<u32>, desired: u64) {
        if let Some(h) = highest_transmitted {
            while let Some((_, len)) = self.sent.pop_front_if(|(c, _)| *c <= h) {
                self.sent_bytes -= u64::from(len);
            }
        }
        self.desired = desired;
    }

    /// The next held PDU the desired buffer size now has room for, in COUNT order.
    pub fn poll_transmit(&mut self) -> Option<T> {
        let &(count, len, _) = self.queue.front()?;
        if !self.fits(len) {
            return None;
        }
        let (_, _, pdu) = self.queue.pop_front()?;
        self.queue_bytes -= u64::from(len);
        self.mark_sent(count, len);
        Some(pdu)
    }

    /// PDCP discards COUNT `count` (its discard timer, TS 38.323 §5.3): removed if it still waits
    /// here, and returned; a PDU already sent is the DU's to discard.
    pub fn discard(&mut self, count: u32) -> Option<T> {
        let i = self.queue.iter().position(|(c, ..)| *c == count)?;
        let (_, len, pdu) = self.queue.remove(i)?;
        self.queue_bytes -= u64::from(len);
        Some(pdu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srsran_sends_everything_at_once() {
        let mut f = F1uTx::new(false, 1000);
        for c in 0..10 {
            assert_eq!(f.handle_pdu(c, 500, c), Some(c), "PDU {c} beyond the desired buffer size still goes");
        }
        assert_eq!((f.queue_pkts(), f.queue_bytes()), (0, 0));
    }

    #[test]
    fn holding_sends_up_to_the_desired_buffer_size_then_as_ddds_report_transmissions() {
        let mut f = F1uTx::new(true, 1000);
        let sent: Vec<u32> = (0..5).filter_map(|c| f.handle_pdu(c, 400, c)).collect();
        assert_eq!(sent, [0, 1], "800 bytes fit in 1000, a third PDU would not");
        assert_eq!((f.queue_pkts(), f.queue_bytes()), (3, 1200));
        assert_eq!(f.poll_transmit(), None);
        // The DU transmitted COUNT 0: 400 bytes of room.
        f.handle_ddds(Some(0), 1000);
        assert_eq!(f.poll_transmit(), Some(2));
        assert_eq!(f.poll_transmit(), None);
        // A larger desired buffer size lets the rest go, in COUNT order.
        f.handle_ddds(Some(1), 2000);
        assert_eq!((f.poll_transmit(), f.poll_transmit(), f.poll_transmit()), (Some(3), Some(4), None));
        // A PDU arriving behind none waits only if it does not fit.
        assert_eq!(f.handle_pdu(5, 400, 5), Some(5));
    }

    #[test]
    fn a_zero_desired_buffer_size_stops_the_bearer_and_a_held_pdu_can_be_discarded() {
        let mut f = F1uTx::new(true, 0);
        assert_eq!(f.handle_pdu(0, 100, 'a'), None);
        assert_eq!(f.handle_pdu(1, 100, 'b'), None);
        assert_eq!(f.discard(0), Some('a'));
        assert_eq!(f.discard(0), None, "discarded once");
        assert_eq!(f.queue_bytes(), 100);
        f.handle_ddds(None, 100);
        assert_eq!(f.poll_transmit(), Some('b'));
    }
}
