//! The RLC transmitter's SDU queue (srsRAN's `queue-size` / `queue-bytes` limits) and its
//! discipline, a plug point: what decides whether an arriving SDU is taken, and what sees each
//! SDU's sojourn when its first byte leaves — where a marking discipline (L4S at RLC) decides.

use std::collections::VecDeque;

use scout_events::Reason;

use super::Sdu;
use crate::Instant;

/// A queued SDU: what of it was sent, and when it arrived.
pub(super) struct TxSdu {
    pub sdu: Sdu,
    /// SN once the first segment was sent.
    pub sn: Option<u32>,
    /// Bytes already sent from the front.
    pub offset: u32,
    /// When it entered the queue.
    pub arrived: Instant,
}

/// Whether an SDU is admitted, given the queue it would join; and what happens to it when it
/// leaves.
pub trait Discipline: Send {
    /// An SDU of `len` bytes arrives at `now` at a queue holding `bytes` in `sdus` SDUs.
    fn admit(&mut self, now: Instant, len: u32, bytes: u64, sdus: u32) -> Result<(), Reason>;

    /// The SDU's first byte leaves at `now` after `sojourn_ns` in the queue, which still holds
    /// `bytes` (this SDU's included): a marking discipline may set its ECN field here. Returns
    /// whether it signalled congestion for this SDU (marked it, or decided a mark written
    /// elsewhere). Drop-tail does nothing.
    fn dequeue(&mut self, _now: Instant, _sojourn_ns: i64, _bytes: u64, _sdu: &mut Sdu) -> bool {
        false
    }
}

/// Drop-tail with an SDU and a byte limit (srsRAN's RLC SDU queue).
#[derive(Clone, Copy, Debug)]
pub struct DropTail {
    pub max_sdus: u32,
    pub max_bytes: u64,
}

impl Discipline for DropTail {
    fn admit(&mut self, _now: Instant, len: u32, bytes: u64, sdus: u32) -> Result<(), Reason> {
        if sdus >= self.max_sdus || bytes + u64::from(len) > self.max_bytes {
            Err(Reason::RlcQueueFull)
        } else {
            Ok(())
        }
    }
}

/// The SDUs waiting to be sent, in order, and their unsent bytes.
pub(super) struct SduQueue {
    pub sdus: VecDeque<TxSdu>,
    pub bytes: u64,
    discipline: Box<dyn Discipline>,
}

impl SduQueue {
    pub fn new(discipline: Box<dyn Discipline>) -> SduQueue {
        SduQueue { sdus: VecDeque::new(), bytes: 0, discipline }
    }

    /// Offers `sdu` at `now`: queued, or refused with the discipline's reason.
    pub fn push(&mut self, now: Instant, sdu: Sdu) -> Result<(), Reason> {
        self.discipline.admit(now, sdu.len, self.bytes, self.sdus.len() as u32)?;
        self.bytes += u64::from(sdu.len);
        self.sdus.push_back(TxSdu { sdu, sn: None, offset: 0, arrived: now });
        Ok(())
    }

    /// The head SDU sends its first byte at `now`: the discipline sees its sojourn. Returns
    /// whether it signalled congestion for it.
    pub fn leaving(&mut self, now: Instant) -> bool {
        let Some(h) = self.sdus.front_mut() else { return false };
        debug_assert_eq!(h.offset, 0, "called once per SDU, before its first byte");
        self.discipline.dequeue(now, now - h.arrived, self.bytes, &mut h.sdu)
    }

    /// How long the SDU at the head has waited at `now` (the head-of-line sojourn).
    pub fn head_sojourn(&self, now: Instant) -> Option<i64> {
        self.sdus.front().map(|h| now - h.arrived)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use scout_events::Dir;

    fn sdu(len: u32) -> Sdu {
        let pkt = Packet { pkt: 0, flow: 0, ue: 0, dir: Dir::Dl, bytes: len, qfi: 9, drb: 1, slice: 0, ecn: 0 };
        Sdu { pkt, pdcp_sn: 0, len }
    }

    #[test]
    fn drop_tail_refuses_past_either_limit_and_the_head_knows_its_wait() {
        let mut q = SduQueue::new(Box::new(DropTail { max_sdus: 2, max_bytes: 2500 }));
        assert_eq!(q.head_sojourn(0), None);
        assert_eq!(q.push(1_000, sdu(1000)), Ok(()));
        assert_eq!(q.push(2_000, sdu(1600)), Err(Reason::RlcQueueFull), "bytes");
        assert_eq!(q.push(3_000, sdu(1500)), Ok(()));
        assert_eq!(q.push(4_000, sdu(10)), Err(Reason::RlcQueueFull), "SDUs");
        assert_eq!((q.bytes, q.sdus.len()), (2500, 2));
        assert_eq!(q.head_sojourn(10_000), Some(9_000));
    }

    /// A marking discipline sees each SDU's sojourn as it leaves and marks it (the hook L4S uses).
    #[test]
    fn a_discipline_sees_the_sojourn_on_dequeue_and_may_mark() {
        struct MarkAbove(i64);
        impl Discipline for MarkAbove {
            fn admit(&mut self, _: Instant, _: u32, _: u64, _: u32) -> Result<(), Reason> {
                Ok(())
            }
            fn dequeue(&mut self, _: Instant, sojourn_ns: i64, _: u64, sdu: &mut Sdu) -> bool {
                if sojourn_ns > self.0 {
                    sdu.pkt.ecn = 3; // CE
                }
                sojourn_ns > self.0
            }
        }
        let mut q = SduQueue::new(Box::new(MarkAbove(5_000)));
        q.push(0, sdu(100)).unwrap();
        q.push(8_000, sdu(100)).unwrap();
        q.leaving(10_000);
        let first = q.sdus.pop_front().unwrap();
        q.leaving(10_000);
        assert_eq!((first.sdu.pkt.ecn, q.sdus[0].sdu.pkt.ecn), (3, 0));
    }
}
