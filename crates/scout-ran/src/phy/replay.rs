//! A measured radio replayed: one direction of a UE's link as an ingested run recorded it
//! (`ues[].channel.model: replay`, docs/model.md "Replaying a measured radio").
//!
//! A recorded run's slot rows of one UE carry, per transmission, the MCS the gNB chose, the
//! HARQ outcome, the retransmission index, the PRBs and (DL) the UE's last CSI report; a
//! replayed link answers the questions the stack asks of a channel from them instead of from a
//! channel model, at the same time into the recording (times are offsets from the UE's first
//! recorded row; after the recording's end it starts again, as a SINR series does):
//!
//! - **MCS**: a new TB is sent at the MCS of the recorded first transmission most recent at or
//!   before its time (before the first, the first's): the gNB's link adaptation is replaced by
//!   the recorded one, so OLLA's offset has no effect on a replayed direction. A direction
//!   recorded without MCSs but with SINRs (srsRAN logs no PUSCH MCS, only the PUSCH's SINR)
//!   keeps the gNB's own link adaptation, on the recorded SINR.
//! - **First-transmission errors**: a new TB fails with the recorded first transmissions' NACK
//!   ratio over a window centred on its time (`window_ns`, the recorded outcomes within it; a
//!   window without any takes the nearest recorded outcome's). So the BLER follows the
//!   recording over time at the window's resolution, whatever the replayed traffic's timing;
//!   within a window errors are drawn independently (the recording's burst structure shorter than
//!   the window is not kept).
//! - **Retransmissions**: the recording's NACK ratio at the same retransmission index over the
//!   whole run (the index clamped to the highest recorded; 0 when none was recorded): HARQ
//!   failures reach RLC as often as the recording's retransmissions failed.
//! - **CSI**: the CQI and rank indicator of the recorded report most recent at or before the
//!   time (DL; none when the recording has none, and the CQI then follows the error model).
//! - **SINR** (slot rows' `sinr_db`, the PUSCH SINR the gNB measures): the recorded SINR most
//!   recent at or before the time where the direction recorded any (srsRAN logs PUSCH SINRs),
//!   else the SINR at which the scenario's error model carries the replayed MCS at its OLLA
//!   target (as capacity traces map a rate to a SINR).
//!
//! Not replayed: the PRBs (the simulated cell's scheduler allocates them for the simulated
//! traffic and users), the TBS (it follows from the MCS, PRBs and layers), the HARQ and CSI
//! timing (the simulated cell's own), and the recorded cell's other users.

/// One transmission of one direction as a run recorded it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recorded {
    /// Offset from the recorded UE's first row, ns.
    pub t_ns: i64,
    pub mcs: Option<u8>,
    /// 0 for a first transmission.
    pub retx_index: u8,
    pub ack: Option<bool>,
    /// DL: the UE's last CSI report when the row was written.
    pub cqi: Option<u8>,
    pub ri: Option<u8>,
    pub sinr_db: Option<f32>,
}

/// What a replayed direction was built from, for `run.json` and the run's summary.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ReplaySummary {
    /// The recorded run (as the scenario names it) and its UE replayed.
    #[serde(skip)]
    pub run: String,
    #[serde(skip)]
    pub recorded_ue: u32,
    /// Rows of the direction read (transmissions).
    pub rows: u64,
    /// First transmissions, with an MCS, with an outcome, and their NACKs.
    pub first_tx: u64,
    pub with_mcs: u64,
    pub with_outcome: u64,
    pub first_tx_nacks: u64,
    /// Retransmissions with an outcome, and their NACKs.
    pub retx_with_outcome: u64,
    pub retx_nacks: u64,
    /// CSI reports (rows whose CQI changed) and rows with a SINR.
    pub csi_reports: u64,
    pub with_sinr: u64,
    /// The recording's length, s (it repeats after).
    pub span_s: f64,
}

/// Why a direction cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// No first transmission with an MCS, and no SINR either.
    NoMcs,
    /// No first transmission with a HARQ outcome.
    NoOutcome,
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::NoMcs => write!(f, "no first transmission with an MCS and no SINR (an info-level srsRAN log has neither for the DL; debug logs' `- UE PDSCH:` lines carry the MCS)"),
            ReplayError::NoOutcome => write!(f, "no first transmission with a HARQ outcome (the DL's come from debug logs' `- HARQ-ACK:` lines, the UL's from PUSCH CRC lines)"),
        }
    }
}

/// One direction of a UE's link replayed from a recording.
#[derive(Clone, Debug)]
pub struct Replay {
    span_ns: i64,
    half_window_ns: i64,
    /// First transmissions with an MCS: (time, MCS).
    mcs: Vec<(i64, u8)>,
    /// First transmissions with an outcome: their times, and the NACKs before each (one more
    /// entry than times: prefix sums).
    outcome_t: Vec<i64>,
    nacks_before: Vec<u32>,
    /// Per retransmission index 1, 2, …: (NACKs, transmissions with an outcome).
    retx: Vec<(u32, u32)>,
    /// CSI reports: (time, (CQI, RI)).
    csi: Vec<(i64, (u8, u8))>,
    /// Recorded SINRs: (time, dB).
    sinr: Vec<(i64, f64)>,
    /// Per MCS, the SINR (dB) at which the scenario's error model carries it at OLLA's target.
    mcs_sinr: Vec<f64>,
    summary: ReplaySummary,
}

/// The last entry of `v` (sorted by its time) at or before `t`; the first when `t` precedes all.
fn at_or_before<T>(v: &[(i64, T)], t: i64) -> Option<&T> {
    let i = v.partition_point(|(ts, _)| *ts <= t);
    v.get(i.saturating_sub(1)).map(|(_, x)| x)
}

impl Replay {
    /// A direction replayed from its recorded rows (any order), the recording being `span_ns`
    /// long (it repeats after), first-transmission errors taken over `window_ns`; `mcs_sinr[m]` is
    /// the SINR the scenario's error model gives MCS `m` (the SINR reported where none was
    /// recorded; the last entry serves higher MCSs).
    pub fn new(rows: &[Recorded], span_ns: i64, window_ns: i64, mcs_sinr: Vec<f64>) -> Result<Replay, ReplayError> {
        let mut rows = rows.to_vec();
        rows.sort_by_key(|r| r.t_ns);
        let mut s = ReplaySummary { rows: rows.len() as u64, span_s: span_ns as f64 / 1e9, ..Default::default() };
        let (mut mcs, mut outcome_t, mut nacks_before, mut retx, mut csi, mut sinr) =
            (Vec::new(), Vec::new(), vec![0u32], Vec::<(u32, u32)>::new(), Vec::new(), Vec::new());
        for r in &rows {
            if let Some(v) = r.sinr_db.filter(|v| v.is_finite()) {
                sinr.push((r.t_ns, f64::from(v)));
            }
            if let Some(c) = r.cqi {
                let ri = r.ri.unwrap_or(1).max(1);
                if csi.last().is_none_or(|&(_, last)| last != (c, ri)) {
                    csi.push((r.t_ns, (c, ri)));
                }
            }
            if r.retx_index == 0 {
                s.first_tx += 1;
                if let Some(m) = r.mcs {
                    mcs.push((r.t_ns, m));
                }
                if let Some(ack) = r.ack {
                    outcome_t.push(r.t_ns);
                    nacks_before.push(nacks_before.last().copied().unwrap_or(0) + u32::from(!ack));
                }
            } else if let Some(ack) = r.ack {
                let k = usize::from(r.retx_index) - 1;
                if retx.len() <= k {
                    retx.resize(k + 1, (0, 0));
                }
                retx[k].0 += u32::from(!ack);
                retx[k].1 += 1;
            }
        }
        s.with_mcs = mcs.len() as u64;
        s.with_outcome = outcome_t.len() as u64;
        s.first_tx_nacks = u64::from(*nacks_before.last().unwrap_or(&0));
        s.retx_with_outcome = retx.iter().map(|r| u64::from(r.1)).sum();
        s.retx_nacks = retx.iter().map(|r| u64::from(r.0)).sum();
        s.csi_reports = csi.len() as u64;
        s.with_sinr = sinr.len() as u64;
        if mcs.is_empty() && sinr.is_empty() {
            return Err(ReplayError::NoMcs);
        }
        if outcome_t.is_empty() {
            return Err(ReplayError::NoOutcome);
        }
        // Indices with no outcome of their own take the next lower index's.
        for k in 1..retx.len() {
            if retx[k].1 == 0 {
                retx[k] = retx[k - 1];
            }
        }
        Ok(Replay {
            span_ns: span_ns.max(1),
            half_window_ns: (window_ns / 2).max(0),
            mcs,
            outcome_t,
            nacks_before,
            retx,
            csi,
            sinr,
            mcs_sinr,
            summary: s,
        })
    }

    /// Where `t` (the simulation's time) falls in the recording.
    fn tau(&self, t_ns: i64) -> i64 {
        t_ns.rem_euclid(self.span_ns)
    }

    /// The MCS of a new TB sent at `t_ns`; `None` when the recording has no MCS (link adaptation
    /// then works on the recorded SINR).
    pub fn mcs_at(&self, t_ns: i64) -> Option<u8> {
        at_or_before(&self.mcs, self.tau(t_ns)).copied()
    }

    /// The probability that a transmission at `t_ns`, the `nof_tx`-th of its TB, fails.
    pub fn error_probability(&self, t_ns: i64, nof_tx: u32) -> f64 {
        if nof_tx > 1 {
            let k = (nof_tx as usize - 2).min(self.retx.len().saturating_sub(1));
            return match self.retx.get(k) {
                Some(&(nacks, n)) if n > 0 => f64::from(nacks) / f64::from(n),
                _ => 0.0,
            };
        }
        let tau = self.tau(t_ns);
        let lo = self.outcome_t.partition_point(|x| *x < tau - self.half_window_ns);
        let hi = self.outcome_t.partition_point(|x| *x <= tau + self.half_window_ns);
        if hi > lo {
            return f64::from(self.nacks_before[hi] - self.nacks_before[lo]) / (hi - lo) as f64;
        }
        // No outcome within the window: the nearest one's.
        // (Every outcome before `lo` is earlier than the window, every one from `lo` on later.)
        let n = self.outcome_t.len();
        let j = match (lo.checked_sub(1), (lo < n).then_some(lo)) {
            (Some(b), Some(a)) if tau - self.outcome_t[b] > self.outcome_t[a] - tau => a,
            (Some(b), _) => b,
            (None, a) => a.expect("a replay has an outcome"),
        };
        f64::from(self.nacks_before[j + 1] - self.nacks_before[j])
    }

    /// The CQI and rank indicator of the report in force at `t_ns`, if the recording has any.
    pub fn csi_at(&self, t_ns: i64) -> Option<(u8, u8)> {
        at_or_before(&self.csi, self.tau(t_ns)).copied()
    }

    /// The SINR (dB) at `t_ns`: the recorded one in force, or the replayed MCS's.
    pub fn sinr_at(&self, t_ns: i64) -> f64 {
        match at_or_before(&self.sinr, self.tau(t_ns)) {
            Some(s) => *s,
            None => {
                let m = usize::from(self.mcs_at(t_ns).expect("a replay has an MCS or a SINR"));
                self.mcs_sinr.get(m).or(self.mcs_sinr.last()).copied().unwrap_or(0.0)
            }
        }
    }

    /// The same, recorded as replaying UE `ue` of run `run` (for the summary).
    pub fn from_run(mut self, run: &str, ue: u32) -> Replay {
        (self.summary.run, self.summary.recorded_ue) = (run.to_string(), ue);
        self
    }

    pub fn summary(&self) -> &ReplaySummary {
        &self.summary
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn first(t_ms: i64, mcs: u8, ack: bool) -> Recorded {
        Recorded { t_ns: t_ms * MS, mcs: Some(mcs), retx_index: 0, ack: Some(ack), cqi: None, ri: None, sinr_db: None }
    }

    fn replay(rows: &[Recorded]) -> Replay {
        Replay::new(rows, 1000 * MS, 100 * MS, (0..=28).map(f64::from).collect()).unwrap()
    }

    #[test]
    fn the_mcs_follows_the_recording_and_repeats() {
        let r = replay(&[first(500, 20, true), first(0, 10, true), first(250, 15, false)]);
        assert_eq!(r.mcs_at(0), Some(10));
        assert_eq!(r.mcs_at(249 * MS), Some(10));
        assert_eq!(r.mcs_at(250 * MS), Some(15));
        assert_eq!(r.mcs_at(999 * MS), Some(20));
        assert_eq!(r.mcs_at(1250 * MS), Some(15), "after its end the recording starts again");
        // No recorded SINR: the replayed MCS's.
        assert_eq!(r.sinr_at(300 * MS), 15.0);
    }

    /// The first-transmission error probability is the recorded NACK ratio over the window, and
    /// the nearest outcome's where the window holds none.
    #[test]
    fn first_transmissions_fail_as_the_recording_did_around_them() {
        // 0–99 ms: one NACK in four; 600 ms: a lone NACK.
        let mut rows: Vec<Recorded> = (0..100).map(|i| first(i, 10, i % 4 != 0)).collect();
        rows.push(first(600, 10, false));
        let r = replay(&rows);
        assert!((r.error_probability(50 * MS, 1) - 0.25).abs() < 1e-12);
        assert_eq!(r.error_probability(600 * MS, 1), 1.0);
        assert_eq!(r.error_probability(400 * MS, 1), 1.0, "nearest: 600 ms");
        assert_eq!(r.error_probability(300 * MS, 1), 0.0, "nearest: 99 ms, an ACK");
        let s = r.summary();
        assert_eq!((s.first_tx, s.with_outcome, s.first_tx_nacks), (101, 101, 26));
    }

    #[test]
    fn retransmissions_fail_at_the_recorded_ratio_of_their_index() {
        let mut rows = vec![first(0, 5, false)];
        let retx = |t: i64, k: u8, ack: bool| Recorded { retx_index: k, mcs: Some(5), ..first(t, 5, ack) };
        rows.extend([retx(8, 1, false), retx(16, 1, true), retx(24, 1, true), retx(24, 2, false)]);
        let r = replay(&rows);
        assert!((r.error_probability(0, 2) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(r.error_probability(0, 3), 1.0);
        assert_eq!(r.error_probability(0, 5), 1.0, "higher indices take the highest recorded");
        let none = replay(&[first(0, 5, true)]);
        assert_eq!(none.error_probability(0, 2), 0.0, "no recorded retransmission: none fails");
    }

    #[test]
    fn csi_and_sinr_are_the_reports_in_force() {
        let mut a = first(0, 10, true);
        a.cqi = Some(9);
        let mut b = first(100, 12, true);
        (b.cqi, b.ri, b.sinr_db) = (Some(11), Some(2), Some(17.5));
        let r = replay(&[a, b]);
        assert_eq!(r.csi_at(50 * MS), Some((9, 1)));
        assert_eq!(r.csi_at(150 * MS), Some((11, 2)));
        assert_eq!(r.sinr_at(150 * MS), 17.5);
        assert_eq!(r.summary().csi_reports, 2);
    }

    #[test]
    fn a_direction_without_mcs_or_outcome_is_refused() {
        let mut no_mcs = first(0, 1, true);
        no_mcs.mcs = None;
        assert_eq!(Replay::new(&[no_mcs], MS, MS, vec![]).unwrap_err(), ReplayError::NoMcs);
        // A SINR without MCS (srsRAN's PUSCH): link adaptation on the recorded SINR.
        no_mcs.sinr_db = Some(12.0);
        let r = Replay::new(&[no_mcs], MS, MS, vec![]).unwrap();
        assert_eq!((r.mcs_at(0), r.sinr_at(0)), (None, 12.0));
        let mut no_ack = first(0, 1, true);
        no_ack.ack = None;
        assert_eq!(Replay::new(&[no_ack], MS, MS, vec![]).unwrap_err(), ReplayError::NoOutcome);
    }
}
