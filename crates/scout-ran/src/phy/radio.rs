//! One direction of a UE's radio link as the channel models make it: where the UE is
//! ([`super::mobility`]), the path loss and shadowing at that place ([`super::propagation`]), the
//! small-scale fading over the band ([`super::fading`]), and from them the SINR of each group of
//! PRBs and the effective SINR the link adaptation and the error model see.
//!
//! Received power per PRB: transmit power spread evenly over the carrier's PRBs, less path loss
//! and shadowing, times the fading gain |H|² at the PRB group's centre; noise: −174 dBm/Hz over the
//! PRB's 12 subcarriers plus the receiver's noise figure (no interference yet: one cell). The
//! effective SINR of several PRB groups is the capacity-effective one — the SINR whose Shannon
//! capacity is the groups' mean capacity, `2^mean(log2(1 + SINR_k)) − 1` — an effective SINR
//! mapping (ESM) that needs no per-MCS calibration (EESM and MIESM, with per-modulation
//! parameters, are the finer ones; not yet). Without path loss (`pathloss: none`) the mean SINR
//! is given and the fading varies it.
//!
//! Uplink power is spread over the whole carrier too: UL power control (TS 38.213 §7.1), which
//! concentrates a UE's power on its allocation, is not modelled.

use super::fading::{max_doppler_hz, TdlChannel, TdlProfile};
use super::mobility::{Mobility, Mover};
use super::propagation::{self, Scenario, Shadowing};
use crate::rng::Rng;

/// A link's description.
#[derive(Clone, Debug, PartialEq)]
pub struct RadioSpec {
    /// TR 38.901 scenario for path loss and shadowing; `None`: the mean SINR is `mean_sinr_db`.
    pub pathloss: Option<Scenario>,
    /// TDL profile and delay spread (s); `None`: no small-scale fading.
    pub fading: Option<(TdlProfile, f64)>,
    pub fc_hz: f64,
    /// Transmit power over the carrier, dBm (DL: the gNB's; UL: the UE's).
    pub tx_power_dbm: f64,
    /// The receiver's noise figure, dB (DL: the UE's; UL: the gNB's).
    pub noise_figure_db: f64,
    pub prbs: u32,
    pub scs_hz: f64,
    /// The mean SINR without path loss, dB.
    pub mean_sinr_db: f64,
    pub h_bs: f64,
    pub h_ut: f64,
    pub start: [f64; 2],
    pub mobility: Mobility,
}

/// PRBs per group the fading is evaluated on (a CSI subband of TS 38.214 Table 5.2.1.4-2 is 4–32
/// PRBs; 4 resolves the coherence bandwidth of the TDL profiles' nominal delay spreads).
pub const PRBS_PER_GROUP: u32 = 4;

/// One direction of a UE's link.
#[derive(Clone, Debug)]
pub struct RadioLink {
    spec: RadioSpec,
    mover: Mover,
    shadow: Option<Shadowing>,
    /// The UE's uniform draw against the LOS probability: LOS while `u < P_LOS(d)`, so its
    /// condition changes only as its distance does (one draw per UE; spatially consistent in the
    /// sense of §7.6.3.3's simplest procedure).
    los_u: f64,
    fading: Option<TdlChannel>,
    /// The PRB groups' centre frequencies, offsets from the carrier (Hz), and the fading paths'
    /// rotations at them (computed once).
    freqs: Vec<f64>,
    rot: Vec<(f64, f64)>,
    paths: Vec<(f64, f64)>,
    gains: Vec<f64>,
    /// The fading is evaluated once per this many ns (see [`TdlChannel::coherent_for_s`]).
    quantum_ns: i64,
    /// The last interval asked and the effective SINR in it.
    last: Option<(i64, f64)>,
    scratch: Vec<f64>,
}

impl RadioLink {
    /// `seed` and `ue` name the streams: the position, LOS draw and shadowing are the UE's (the
    /// same for both directions: reciprocity), the fading the direction's (`dir`: "dl" or "ul").
    pub fn new(spec: RadioSpec, seed: u64, ue: usize, dir: &str) -> Self {
        let mover = Mover::new(spec.start, spec.mobility.clone(), Rng::new(seed, &format!("ue{ue}.mobility")));
        let mut los_rng = Rng::new(seed, &format!("ue{ue}.los"));
        let los_u = los_rng.uniform();
        let d2d = (spec.start[0].powi(2) + spec.start[1].powi(2)).sqrt();
        let shadow = spec.pathloss.map(|s| {
            let los = los_u < propagation::los_probability(s, d2d, spec.h_ut);
            Shadowing::new(s.shadow_std_db(los), s.decorrelation_m(los), Rng::new(seed, &format!("ue{ue}.shadowing")))
        });
        let doppler = max_doppler_hz(spec.mobility.speed_mps(), spec.fc_hz);
        let fading =
            spec.fading.map(|(p, ds)| TdlChannel::new(p, ds, doppler, Rng::new(seed, &format!("ue{ue}.{dir}.fading"))));
        let prb_hz = 12.0 * spec.scs_hz;
        let groups = spec.prbs.div_ceil(PRBS_PER_GROUP);
        let freqs: Vec<f64> = (0..groups)
            .map(|g| {
                let first = g * PRBS_PER_GROUP;
                let n = PRBS_PER_GROUP.min(spec.prbs - first);
                (f64::from(first) + f64::from(n) / 2.0 - f64::from(spec.prbs) / 2.0) * prb_hz
            })
            .collect();
        let rot = fading.as_ref().map(|f| f.rotations(&freqs)).unwrap_or_default();
        let quantum_ns = fading.as_ref().map_or(1_000_000, |f| ((f.coherent_for_s() * 1e9) as i64).max(1_000));
        RadioLink {
            spec,
            mover,
            shadow,
            los_u,
            fading,
            freqs,
            rot,
            paths: Vec::new(),
            gains: Vec::new(),
            quantum_ns,
            last: None,
            scratch: Vec::new(),
        }
    }

    pub fn spec(&self) -> &RadioSpec {
        &self.spec
    }

    /// Horizontal distance to the gNB now, m.
    pub fn distance_m(&self) -> f64 {
        let p = self.mover.position();
        (p[0] * p[0] + p[1] * p[1]).sqrt()
    }

    pub fn los(&self) -> bool {
        match self.spec.pathloss {
            Some(s) => self.los_u < propagation::los_probability(s, self.distance_m(), self.spec.h_ut),
            None => true,
        }
    }

    /// Path loss plus shadowing now, dB (0 without path loss).
    pub fn loss_db(&self) -> f64 {
        match self.spec.pathloss {
            Some(s) => {
                let pl = propagation::path_loss_db(
                    s,
                    self.los(),
                    self.distance_m(),
                    self.spec.h_bs,
                    self.spec.h_ut,
                    self.spec.fc_hz,
                );
                pl + self.shadow.as_ref().map_or(0.0, Shadowing::db)
            }
            None => 0.0,
        }
    }

    /// RSRP now, dBm: the power of one resource element of the reference signal (TS 38.215
    /// §5.1.1), averaged over the fading: transmit power over the carrier's 12·N_PRB resource
    /// elements, less path loss and shadowing.
    pub fn rsrp_dbm(&self) -> f64 {
        self.spec.tx_power_dbm - 10.0 * f64::from(12 * self.spec.prbs).log10() - self.loss_db()
    }

    /// The mean SINR over the fading now, dB.
    pub fn mean_sinr_db(&self) -> f64 {
        match self.spec.pathloss {
            None => self.spec.mean_sinr_db,
            Some(_) => {
                let per_prb = self.spec.tx_power_dbm - 10.0 * f64::from(self.spec.prbs).log10() - self.loss_db();
                per_prb - propagation::noise_dbm(12.0 * self.spec.scs_hz, self.spec.noise_figure_db)
            }
        }
    }

    fn advance(&mut self, t_ns: i64) {
        let moved = self.mover.advance_to(t_ns);
        if moved > 0.0 {
            // A change of LOS condition keeps the shadowing's process (its σ and distance are the
            // condition's at the start; not modelled: the switch between the two processes).
            if let Some(sh) = self.shadow.as_mut() {
                sh.advance(moved);
            }
        }
    }

    /// Each PRB group's SINR (dB) at `t_ns`, into `out`.
    pub fn group_sinr_db(&mut self, t_ns: i64, out: &mut Vec<f64>) {
        self.advance(t_ns);
        let mean = self.mean_sinr_db();
        out.clear();
        match &self.fading {
            Some(f) => {
                f.gains_with(t_ns as f64 * 1e-9, &self.rot, &mut self.paths, &mut self.gains);
                out.extend(self.gains.iter().map(|g| mean + 10.0 * g.max(1e-12).log10()));
            }
            None => out.extend(self.freqs.iter().map(|_| mean)),
        }
    }

    /// The effective SINR (dB) over the whole carrier at `t_ns` (capacity-effective; see the
    /// module's documentation). The channel is evaluated at the start of each interval over which
    /// the fading stays correlated above 0.98 (at most 1 ms; at 120 km/h and 3.5 GHz, 82 µs), and
    /// that value serves every time within the interval.
    pub fn effective_sinr_db(&mut self, t_ns: i64) -> f64 {
        let t = t_ns.div_euclid(self.quantum_ns) * self.quantum_ns;
        if let Some((last, v)) = self.last {
            if last == t {
                return v;
            }
        }
        let mut s = std::mem::take(&mut self.scratch);
        self.group_sinr_db(t, &mut s);
        let v = effective_sinr_db(&s);
        self.scratch = s;
        self.last = Some((t, v));
        v
    }
}

/// The capacity-effective SINR (dB) of SINRs `s` (dB): `2^mean(log2(1 + SINR)) − 1`.
pub fn effective_sinr_db(s: &[f64]) -> f64 {
    if s.is_empty() {
        return f64::NEG_INFINITY;
    }
    let c = s.iter().map(|db| (1.0 + 10f64.powf(db / 10.0)).log2()).sum::<f64>() / s.len() as f64;
    10.0 * (2f64.powf(c) - 1.0).max(1e-12).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RadioSpec {
        RadioSpec {
            pathloss: Some(Scenario::Uma),
            fading: Some((TdlProfile::C, 300e-9)),
            fc_hz: 3.5e9,
            tx_power_dbm: 46.0,
            noise_figure_db: 9.0,
            prbs: 51,
            scs_hz: 30e3,
            mean_sinr_db: 20.0,
            h_bs: 25.0,
            h_ut: 1.5,
            start: [300.0, 0.0],
            mobility: Mobility::Static,
        }
    }

    #[test]
    fn rsrp_and_sinr_follow_the_link_budget() {
        let l = RadioLink::new(spec(), 1, 0, "dl");
        // RSRP = 46 − 10 log10(12·51) − (PL + SF); mean SINR = 46 − 10 log10(51) − (PL + SF) −
        // (−174 + 10 log10(360e3) + 9).
        let loss = l.loss_db();
        assert!((l.rsrp_dbm() - (46.0 - 27.868 - loss)).abs() < 0.01);
        let noise = -174.0 + 10.0 * 360e3f64.log10() + 9.0;
        assert!((l.mean_sinr_db() - (46.0 - 17.076 - loss - noise)).abs() < 0.01);
        // Farther is weaker (same seed: same LOS draw and shadowing start).
        let far = RadioLink::new(RadioSpec { start: [1500.0, 0.0], ..spec() }, 1, 0, "dl");
        assert!(far.rsrp_dbm() < l.rsrp_dbm());
    }

    #[test]
    fn the_effective_sinr_of_a_faded_band_is_below_its_best_group_and_deterministic() {
        let mut a = RadioLink::new(spec(), 9, 0, "dl");
        let mut b = RadioLink::new(spec(), 9, 0, "dl");
        let mut g = Vec::new();
        a.group_sinr_db(5_000_000, &mut g);
        let eff = a.effective_sinr_db(5_000_000);
        let max = g.iter().cloned().fold(f64::MIN, f64::max);
        let min = g.iter().cloned().fold(f64::MAX, f64::min);
        assert!(eff <= max + 1e-9 && eff >= min - 1e-9, "{min} {eff} {max}");
        assert_eq!(eff, b.effective_sinr_db(5_000_000));
        assert!((effective_sinr_db(&[10.0, 10.0]) - 10.0).abs() < 1e-9);
        // 0 and 20 dB: capacities 1 and 6.66 bit → mean 3.83 → 2^3.83 − 1 = 13.2 → 11.2 dB.
        assert!((effective_sinr_db(&[0.0, 20.0]) - 11.2).abs() < 0.05, "{}", effective_sinr_db(&[0.0, 20.0]));
    }

    /// A moving UE's channel changes faster: over 1 ms at 3.5 GHz, 120 km/h (f_D 389 Hz, J0(2π
    /// f_D τ) ≈ 0) decorrelates the SINR, 3 km/h (f_D 9.7 Hz, correlation 0.999) barely moves it.
    #[test]
    fn speed_drives_how_fast_the_sinr_changes() {
        let change = |kmh: f64| {
            let mob = Mobility::Linear { speed_mps: kmh / 3.6, heading_deg: 90.0 };
            let mut sum = 0.0;
            for seed in 0..50 {
                let mut l = RadioLink::new(RadioSpec { mobility: mob.clone(), ..spec() }, seed, 0, "dl");
                let mut prev = l.effective_sinr_db(0);
                for k in 1..100 {
                    let v = l.effective_sinr_db(k * 1_000_000);
                    sum += (v - prev).abs();
                    prev = v;
                }
            }
            sum / (50.0 * 99.0)
        };
        let (slow, fast) = (change(3.0), change(120.0));
        assert!(fast > 5.0 * slow, "mean |ΔSINR| over 1 ms: 3 km/h {slow:.2} dB, 120 km/h {fast:.2} dB");
    }
}
