//! HARQ processes (TS 38.321 §5.3.2 DL, §5.4.2 UL): 16 per UE and direction, NDI toggling, the
//! redundancy-version sequence 0, 2, 3, 1 (TS 38.214 Table 5.1.2.1-2 order used by srsRAN), and a
//! maximum number of retransmissions after which the TB is lost.

/// RV for the n-th transmission (0-based), srsRAN's sequence {0, 2, 3, 1}.
pub fn rv(tx_index: u32) -> u8 {
    [0, 2, 3, 1][(tx_index % 4) as usize]
}

/// State of one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HarqState {
    Idle,
    /// Transmitted; the outcome is not known to the scheduler yet.
    WaitAck,
    /// NACKed; may be retransmitted from slot `ready`.
    PendingRetx {
        ready: u64,
    },
}

/// One HARQ process holding a transport block `T`.
#[derive(Clone, Debug)]
pub struct HarqProcess<T> {
    pub state: HarqState,
    pub tb: Option<T>,
    /// Transmissions so far of the current TB.
    pub nof_tx: u32,
    pub ndi: bool,
}

impl<T> Default for HarqProcess<T> {
    fn default() -> Self {
        HarqProcess { state: HarqState::Idle, tb: None, nof_tx: 0, ndi: false }
    }
}

impl<T> HarqProcess<T> {
    /// Starts a new TB: toggles NDI (TS 38.321 §5.3.2.2).
    pub fn new_tx(&mut self, tb: T) {
        self.tb = Some(tb);
        self.nof_tx = 1;
        self.ndi = !self.ndi;
        self.state = HarqState::WaitAck;
    }

    pub fn retx(&mut self) {
        self.nof_tx += 1;
        self.state = HarqState::WaitAck;
    }

    /// Applies the HARQ outcome. Returns the TB if it is finished with (ACK, or NACK after
    /// `max_retx` retransmissions: the caller reports it lost).
    pub fn feedback(&mut self, ack: bool, max_retx: u32, ready: u64) -> Option<(T, bool)> {
        if ack {
            self.state = HarqState::Idle;
            return self.tb.take().map(|t| (t, true));
        }
        if self.nof_tx > max_retx {
            self.state = HarqState::Idle;
            return self.tb.take().map(|t| (t, false));
        }
        self.state = HarqState::PendingRetx { ready };
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retransmits_up_to_max_then_gives_up() {
        let mut h: HarqProcess<u32> = HarqProcess::default();
        h.new_tx(7);
        assert!(h.ndi);
        for i in 0..4 {
            assert!(h.feedback(false, 4, 10 + i).is_none());
            assert_eq!(h.state, HarqState::PendingRetx { ready: 10 + i });
            h.retx();
        }
        assert_eq!(h.nof_tx, 5);
        assert_eq!(h.feedback(false, 4, 20), Some((7, false)));
        assert_eq!(h.state, HarqState::Idle);
        h.new_tx(8);
        assert!(!h.ndi, "NDI toggles per new TB");
        assert_eq!(h.feedback(true, 4, 0), Some((8, true)));
        assert_eq!((rv(0), rv(1), rv(2), rv(3), rv(4)), (0, 2, 3, 1, 0));
    }
}
