//! Small-scale fading, TR 38.901 §7.7.2: the tapped delay line (TDL) models A–E and a
//! time-varying, frequency-selective channel built from them.
//!
//! Each Rayleigh tap is a sum of sinusoids with a Jakes/Clarke Doppler spectrum (Zheng and Xiao,
//! "Simulation models with correct statistical properties for Rayleigh fading channels", IEEE
//! Trans. Commun. 51(6), 2003: random angles and phases per sinusoid, so that the time
//! autocorrelation of each quadrature averages to J0(2π f_D τ)); TDL-D's and TDL-E's first tap
//! adds its LOS (specular) component with the table's K-factor. Delays are the tables'
//! normalised delays times the delay spread (§7.7.3). The channel's power is normalised to a mean
//! of 1: the path loss and shadowing give the mean, the fading the variation around it.
//!
//! `gains` gives |H(f, t)|² at given frequency offsets (one per PRB or PRB group). Not modelled:
//! CDL (angles, beams), spatial correlation between antennas (§7.7.5), the tables' optional
//! Doppler shifts of the LOS path other than at 45°.

use std::f64::consts::PI;

use crate::rng::Rng;

/// A TDL model of TR 38.901 §7.7.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TdlProfile {
    A,
    B,
    C,
    D,
    E,
}

/// TDL-A, Table 7.7.2-1: (normalised delay, power dB), Rayleigh taps.
const TDL_A: [(f64, f64); 23] = [
    (0.0000, -13.4),
    (0.3819, 0.0),
    (0.4025, -2.2),
    (0.5868, -4.0),
    (0.4610, -6.0),
    (0.5375, -8.2),
    (0.6708, -9.9),
    (0.5750, -10.5),
    (0.7618, -7.5),
    (1.5375, -15.9),
    (1.8978, -6.6),
    (2.2242, -16.7),
    (2.1718, -12.4),
    (2.4942, -15.2),
    (2.5119, -10.8),
    (3.0582, -11.3),
    (4.0810, -12.7),
    (4.4579, -16.2),
    (4.5695, -18.3),
    (4.7966, -18.9),
    (5.0066, -16.6),
    (5.3043, -19.9),
    (9.6586, -29.7),
];

/// TDL-B, Table 7.7.2-2.
const TDL_B: [(f64, f64); 23] = [
    (0.0000, 0.0),
    (0.1072, -2.2),
    (0.2155, -4.0),
    (0.2095, -3.2),
    (0.2870, -9.8),
    (0.2986, -1.2),
    (0.3752, -3.4),
    (0.5055, -5.2),
    (0.3681, -7.6),
    (0.3697, -3.0),
    (0.5700, -8.9),
    (0.5283, -9.0),
    (1.1021, -4.8),
    (1.2756, -5.7),
    (1.5474, -7.5),
    (1.7842, -1.9),
    (2.0169, -7.6),
    (2.8294, -12.2),
    (3.0219, -9.8),
    (3.6187, -11.4),
    (4.1067, -14.9),
    (4.2790, -9.2),
    (4.7834, -11.3),
];

/// TDL-C, Table 7.7.2-3. (Its 0.6366 is the table's delay, not 2/π.)
#[allow(clippy::approx_constant)]
const TDL_C: [(f64, f64); 24] = [
    (0.0, -4.4),
    (0.2099, -1.2),
    (0.2219, -3.5),
    (0.2329, -5.2),
    (0.2176, -2.5),
    (0.6366, 0.0),
    (0.6448, -2.2),
    (0.6560, -3.9),
    (0.6584, -7.4),
    (0.7935, -7.1),
    (0.8213, -10.7),
    (0.9336, -11.1),
    (1.2285, -5.1),
    (1.3083, -6.8),
    (2.1704, -8.7),
    (2.7105, -13.2),
    (4.2589, -13.9),
    (4.6003, -13.9),
    (5.4902, -15.8),
    (5.6077, -17.1),
    (6.3065, -16.0),
    (6.6374, -15.7),
    (7.0427, -21.6),
    (8.6523, -22.8),
];

/// TDL-D, Table 7.7.2-4: the Rayleigh taps; the first tap's LOS path (delay 0, −0.2 dB,
/// K1 = 13.3 dB) is [`TdlProfile::los`].
const TDL_D: [(f64, f64); 13] = [
    (0.0, -13.5),
    (0.035, -18.8),
    (0.612, -21.0),
    (1.363, -22.8),
    (1.405, -17.9),
    (1.804, -20.1),
    (2.596, -21.9),
    (1.775, -22.9),
    (4.042, -27.8),
    (7.937, -23.6),
    (9.424, -24.8),
    (9.708, -30.0),
    (12.525, -27.7),
];

/// TDL-E, Table 7.7.2-5: the Rayleigh taps; the LOS path (delay 0, −0.03 dB, K1 = 22 dB) is
/// [`TdlProfile::los`].
const TDL_E: [(f64, f64); 14] = [
    (0.0, -22.03),
    (0.5133, -15.8),
    (0.5440, -18.1),
    (0.5630, -19.8),
    (0.5440, -22.9),
    (0.7112, -22.4),
    (1.9092, -18.6),
    (1.9293, -20.8),
    (1.9589, -22.6),
    (2.6426, -22.3),
    (3.7136, -25.6),
    (5.4524, -20.2),
    (12.0034, -29.8),
    (20.6519, -29.2),
];

impl TdlProfile {
    pub fn parse(s: &str) -> Option<TdlProfile> {
        match s {
            "tdl-a" => Some(TdlProfile::A),
            "tdl-b" => Some(TdlProfile::B),
            "tdl-c" => Some(TdlProfile::C),
            "tdl-d" => Some(TdlProfile::D),
            "tdl-e" => Some(TdlProfile::E),
            _ => None,
        }
    }

    /// The Rayleigh taps: (normalised delay, power dB).
    pub fn taps(self) -> &'static [(f64, f64)] {
        match self {
            TdlProfile::A => &TDL_A,
            TdlProfile::B => &TDL_B,
            TdlProfile::C => &TDL_C,
            TdlProfile::D => &TDL_D,
            TdlProfile::E => &TDL_E,
        }
    }

    /// The LOS (specular) path of the first tap: (normalised delay, power dB), TDL-D and TDL-E.
    pub fn los(self) -> Option<(f64, f64)> {
        match self {
            TdlProfile::D => Some((0.0, -0.2)),
            TdlProfile::E => Some((0.0, -0.03)),
            _ => None,
        }
    }

    /// Every path, the LOS one first: (normalised delay, power dB, specular).
    fn paths(self) -> impl Iterator<Item = (f64, f64, bool)> {
        self.los().map(|(d, p)| (d, p, true)).into_iter().chain(self.taps().iter().map(|&(d, p)| (d, p, false)))
    }

    /// The normalised RMS delay spread of the table (the tables are scaled to 1, §7.7.3).
    pub fn rms_delay_spread(self) -> f64 {
        let w: Vec<(f64, f64)> = self.paths().map(|(d, p, _)| (d, 10f64.powf(p / 10.0))).collect();
        let total: f64 = w.iter().map(|x| x.1).sum();
        let mean = w.iter().map(|x| x.0 * x.1).sum::<f64>() / total;
        (w.iter().map(|x| (x.0 - mean).powi(2) * x.1).sum::<f64>() / total).sqrt()
    }
}

/// cos(x) by reduction to [−π, π] and its Taylor series to x²⁶/26! (error below 10⁻¹³ there),
/// in plain arithmetic the compiler can vectorise: the sums of sinusoids are most of what a faded
/// link costs, and libm's `cos` is several times slower. The rounding uses the 1.5·2⁵² trick (valid
/// for |x| < 2⁵¹·2π, far beyond any run's phases).
#[inline]
pub(super) fn cos(x: f64) -> f64 {
    const TWO_PI_HI: f64 = std::f64::consts::TAU;
    const TWO_PI_LO: f64 = 2.449_293_598_294_706_4e-16;
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let n = (x * (1.0 / TWO_PI_HI) + ROUND) - ROUND;
    let r = (x - n * TWO_PI_HI) - n * TWO_PI_LO;
    let r2 = r * r;
    // Horner over (−1)^k r^(2k) / (2k)!, k = 0..=13.
    const C: [f64; 14] = [
        1.0,
        -1.0 / 2.0,
        1.0 / 24.0,
        -1.0 / 720.0,
        1.0 / 40_320.0,
        -1.0 / 3_628_800.0,
        1.0 / 479_001_600.0,
        -1.0 / 87_178_291_200.0,
        1.0 / 20_922_789_888_000.0,
        -1.0 / 6_402_373_705_728_000.0,
        1.0 / 2_432_902_008_176_640_000.0,
        -1.0 / 1_124_000_727_777_607_680_000.0,
        1.0 / 620_448_401_733_239_439_360_000.0,
        -1.0 / 403_291_461_126_605_635_584_000_000.0,
    ];
    let mut acc = C[13];
    for c in C[..13].iter().rev() {
        acc = acc * r2 + c;
    }
    acc
}

/// Sinusoids per Rayleigh tap and quadrature (Zheng and Xiao show 8 give the statistics).
pub const SINUSOIDS: usize = 8;

/// One Rayleigh tap as a sum of sinusoids (Zheng–Xiao): per quadrature, `SINUSOIDS` Doppler
/// frequencies `f_D cos α_n` (in-phase) and `f_D sin α_n` (quadrature), with
/// `α_n = (2πn − π + θ) / (4M)` and random phases.
#[derive(Clone, Debug)]
struct RayleighTap {
    /// 2π × the sinusoids' frequencies (Hz) and their phases.
    w_i: [f64; SINUSOIDS],
    phi_i: [f64; SINUSOIDS],
    w_q: [f64; SINUSOIDS],
    phi_q: [f64; SINUSOIDS],
}

impl RayleighTap {
    fn new(doppler_hz: f64, rng: &mut Rng) -> Self {
        let mut t = RayleighTap {
            w_i: [0.0; SINUSOIDS],
            phi_i: [0.0; SINUSOIDS],
            w_q: [0.0; SINUSOIDS],
            phi_q: [0.0; SINUSOIDS],
        };
        let m = SINUSOIDS as f64;
        let theta = PI * (2.0 * rng.uniform() - 1.0);
        for n in 0..SINUSOIDS {
            let alpha = (2.0 * PI * (n as f64 + 1.0) - PI + theta) / (4.0 * m);
            t.w_i[n] = 2.0 * PI * doppler_hz * alpha.cos();
            t.w_q[n] = 2.0 * PI * doppler_hz * alpha.sin();
            t.phi_i[n] = PI * (2.0 * rng.uniform() - 1.0);
            t.phi_q[n] = PI * (2.0 * rng.uniform() - 1.0);
        }
        t
    }

    /// The tap's complex gain at `t_s`, of mean power 1.
    fn at(&self, t_s: f64) -> (f64, f64) {
        let (mut re, mut im) = (0.0, 0.0);
        for n in 0..SINUSOIDS {
            re += cos(self.w_i[n] * t_s + self.phi_i[n]);
            im += cos(self.w_q[n] * t_s + self.phi_q[n]);
        }
        // Each quadrature has variance M/2 before scaling: √(1/M) gives each 1/2, the tap 1.
        let k = (1.0 / SINUSOIDS as f64).sqrt();
        (re * k, im * k)
    }
}

/// One path's sinusoids, angular frequency (rad/s) and phase: its gain at `t` is `e^{j(ω t + φ)}`
/// (LOS), or `√(1/M)·(Σ cos(ω_i t + φ_i) + j Σ cos(ω_q t + φ_q))` (a Rayleigh tap).
pub(super) enum Sinusoids<'a> {
    Los { w: f64, phi: f64 },
    Rayleigh { w: [&'a [f64; SINUSOIDS]; 2], phi: [&'a [f64; SINUSOIDS]; 2] },
}

/// A TDL channel of one link: its paths' delays and mean amplitudes, and each path's fading.
#[derive(Clone, Debug)]
pub struct TdlChannel {
    /// Per path: delay (s), mean amplitude (√ of its share of the power).
    delays_s: Vec<f64>,
    amps: Vec<f64>,
    /// Per Rayleigh path its process; `None` for the LOS path.
    fading: Vec<Option<RayleighTap>>,
    /// The LOS path's Doppler (2π f_D cos 45°) and phase.
    los_w: f64,
    los_phi: f64,
    /// The maximum Doppler shift, Hz.
    doppler_hz: f64,
}

impl TdlChannel {
    /// `delay_spread_s` scales the normalised delays (§7.7.3); `doppler_hz` is the UE's maximum
    /// Doppler shift `v f_c / c`; `rng` seeds the sinusoids (one stream per UE and direction).
    pub fn new(profile: TdlProfile, delay_spread_s: f64, doppler_hz: f64, mut rng: Rng) -> Self {
        let paths: Vec<(f64, f64, bool)> = profile.paths().collect();
        let total: f64 = paths.iter().map(|p| 10f64.powf(p.1 / 10.0)).sum();
        let mut c = TdlChannel {
            delays_s: Vec::new(),
            amps: Vec::new(),
            fading: Vec::new(),
            los_w: 0.0,
            los_phi: 0.0,
            doppler_hz,
        };
        for (d, p, specular) in paths {
            c.delays_s.push(d * delay_spread_s);
            c.amps.push((10f64.powf(p / 10.0) / total).sqrt());
            c.fading.push((!specular).then(|| RayleighTap::new(doppler_hz, &mut rng)));
        }
        c.los_w = 2.0 * PI * doppler_hz * (PI / 4.0).cos();
        c.los_phi = PI * (2.0 * rng.uniform() - 1.0);
        c
    }

    /// The channel's frequency response H(f, t) at frequency offset `f_hz` from the carrier.
    pub fn response(&self, t_s: f64, f_hz: f64) -> (f64, f64) {
        let (mut re, mut im) = (0.0, 0.0);
        for (k, (&tau, &a)) in self.delays_s.iter().zip(&self.amps).enumerate() {
            let (gr, gi) = self.path_gain(k, t_s);
            // × a e^{−j 2π f τ}
            let ph = -2.0 * PI * f_hz * tau;
            let (c, s) = (ph.cos(), ph.sin());
            re += a * (gr * c - gi * s);
            im += a * (gr * s + gi * c);
        }
        (re, im)
    }

    /// The paths (taps) of the channel.
    pub fn nof_paths(&self) -> usize {
        self.amps.len()
    }

    /// Path `k`'s complex fading gain at `t_s`: a Rayleigh tap's sum of sinusoids, or the LOS
    /// path's unit phasor rotating at its Doppler shift.
    pub fn path_gain(&self, k: usize, t_s: f64) -> (f64, f64) {
        match &self.fading[k] {
            Some(tap) => tap.at(t_s),
            None => {
                let ph = self.los_w * t_s + self.los_phi;
                (ph.cos(), ph.sin())
            }
        }
    }

    /// Path `k`'s sinusoids: the LOS path's one phasor, or a Rayleigh tap's in-phase and
    /// quadrature sums ([`super::fading_grid`] steps them in time).
    pub(super) fn sinusoids(&self, k: usize) -> Sinusoids<'_> {
        match &self.fading[k] {
            Some(tap) => Sinusoids::Rayleigh { w: [&tap.w_i, &tap.w_q], phi: [&tap.phi_i, &tap.phi_q] },
            None => Sinusoids::Los { w: self.los_w, phi: self.los_phi },
        }
    }

    /// |H(f, t)|² at each of `freqs_hz` (a PRB's or PRB group's centre), written into `out`.
    pub fn gains(&self, t_s: f64, freqs_hz: &[f64], out: &mut Vec<f64>) {
        let (rot, mut paths, mut h) = (self.rotations(freqs_hz), Vec::new(), Vec::new());
        self.responses_with(t_s, &rot, &mut paths, &mut h);
        out.clear();
        out.extend(h.iter().map(|(re, im)| re * re + im * im));
    }

    /// Each path's phase rotation `a_k e^{−j2π f τ_k}` at each of `freqs_hz` (frequency-major):
    /// they do not change with time, so a link computes them once.
    pub fn rotations(&self, freqs_hz: &[f64]) -> Vec<(f64, f64)> {
        let mut r = Vec::with_capacity(freqs_hz.len() * self.amps.len());
        for &f in freqs_hz {
            for (k, &a) in self.amps.iter().enumerate() {
                let ph = -2.0 * PI * f * self.delays_s[k];
                r.push((a * ph.cos(), a * ph.sin()));
            }
        }
        r
    }

    /// H(f, t) at the frequencies of `rot` ([`TdlChannel::rotations`]) at `t_s`, appended to
    /// `out`; `paths` is scratch for the paths' fading gains.
    pub fn responses_with(&self, t_s: f64, rot: &[(f64, f64)], paths: &mut Vec<(f64, f64)>, out: &mut Vec<(f64, f64)>) {
        paths.clear();
        paths.extend((0..self.amps.len()).map(|k| self.path_gain(k, t_s)));
        for row in rot.chunks_exact(paths.len().max(1)) {
            let (mut re, mut im) = (0.0, 0.0);
            for (&(gr, gi), &(c, s)) in paths.iter().zip(row) {
                re += gr * c - gi * s;
                im += gr * s + gi * c;
            }
            out.push((re, im));
        }
    }

    /// The time over which the fading changes by less than 2 % in correlation (J0(2π f_D τ) ≥
    /// 0.98: f_D τ ≤ 0.032), capped at 1 ms: a link evaluates it once per such interval.
    pub fn coherent_for_s(&self) -> f64 {
        let fd = self.doppler_hz;
        if fd <= 0.0 {
            1e-3
        } else {
            (0.032 / fd).min(1e-3)
        }
    }
}

/// The maximum Doppler shift (Hz) of a UE moving at `speed_mps` on carrier `fc_hz`: `v f_c / c`.
pub fn max_doppler_hz(speed_mps: f64, fc_hz: f64) -> f64 {
    speed_mps * fc_hz / super::propagation::C
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fading's cosine against libm's over the phases a run reaches.
    #[test]
    fn the_fast_cosine_is_the_cosine() {
        let mut worst: f64 = 0.0;
        let mut x = -1.0e6;
        while x < 1.0e6 {
            worst = worst.max((cos(x) - x.cos()).abs());
            x += 0.7331;
        }
        for x in [0.0, PI, -PI, PI / 2.0, 1e-9, 123_456.789] {
            worst = worst.max((cos(x) - x.cos()).abs());
        }
        assert!(worst < 1e-9, "{worst}");
    }

    /// J0 by its power series (|x| ≤ 12 here: 60 terms are exact to 1e-12).
    fn j0(x: f64) -> f64 {
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..60 {
            term *= -(x * x) / (4.0 * (k * k) as f64);
            sum += term;
        }
        sum
    }

    #[test]
    #[allow(clippy::approx_constant)]
    fn tap_tables_are_those_of_tr_38_901() {
        // Tap counts of Tables 7.7.2-1..5 (D and E: the LOS path besides the Rayleigh taps).
        let n = |p: TdlProfile| p.taps().len() + usize::from(p.los().is_some());
        assert_eq!(
            [TdlProfile::A, TdlProfile::B, TdlProfile::C, TdlProfile::D, TdlProfile::E].map(n),
            [23, 23, 24, 14, 15]
        );
        assert_eq!((TDL_A[1], TDL_A[22]), ((0.3819, 0.0), (9.6586, -29.7)));
        assert_eq!((TDL_C[5], TDL_C[23]), ((0.6366, 0.0), (8.6523, -22.8)));
        // K-factors of the first tap: TDL-D 13.3 dB, TDL-E 22 dB.
        let k = |p: TdlProfile| p.los().unwrap().1 - p.taps()[0].1;
        assert!((k(TdlProfile::D) - 13.3).abs() < 1e-9 && (k(TdlProfile::E) - 22.0).abs() < 1e-9);
        // The normalised delays are scaled to an RMS delay spread of 1 (a typo in a table shows).
        for p in [TdlProfile::A, TdlProfile::B, TdlProfile::C, TdlProfile::D, TdlProfile::E] {
            assert!((p.rms_delay_spread() - 1.0).abs() < 0.05, "{p:?}: {}", p.rms_delay_spread());
        }
    }

    /// Each tap's autocorrelation over time is J0(2π f_D τ) (Clarke), averaged over channels.
    #[test]
    fn the_fading_decorrelates_over_time_as_j0() {
        let fd = 50.0;
        let lags = [0.0, 0.002, 0.005, 0.008, 0.012, 0.02];
        let mut acc = vec![0.0; lags.len()];
        let runs = 3000;
        for r in 0..runs {
            let mut rng = Rng::new(r, "tap");
            let tap = RayleighTap::new(fd, &mut rng);
            let t0 = 0.1 * rng.uniform();
            let (a, b) = tap.at(t0);
            for (i, &l) in lags.iter().enumerate() {
                let (c, d) = tap.at(t0 + l);
                acc[i] += a * c + b * d; // Re{g(t) g*(t + τ)}
            }
        }
        for (i, &l) in lags.iter().enumerate() {
            let got = acc[i] / runs as f64;
            let want = j0(2.0 * PI * fd * l);
            assert!((got - want).abs() < 0.06, "τ = {l}: {got} vs J0 = {want}");
        }
    }

    /// The frequency correlation E[H(f) H*(f + Δf)] is the profile's Σ p_l e^{j2πΔf τ_l}: wider
    /// delay spreads decorrelate sooner.
    #[test]
    fn the_frequency_correlation_follows_the_delay_profile() {
        let ds = 300e-9;
        for p in [TdlProfile::A, TdlProfile::C] {
            let total: f64 = p.taps().iter().map(|t| 10f64.powf(t.1 / 10.0)).sum();
            for df in [0.0, 180e3, 720e3, 2.88e6] {
                let (mut re, runs) = (0.0, 3000);
                for r in 0..runs {
                    let ch = TdlChannel::new(p, ds, 10.0, Rng::new(r, "freq"));
                    let (a, b) = ch.response(0.0, 0.0);
                    let (c, d) = ch.response(0.0, df);
                    re += a * c + b * d;
                }
                let (mut wr, mut wi) = (0.0, 0.0);
                for t in p.taps() {
                    let w = 10f64.powf(t.1 / 10.0) / total;
                    wr += w * (2.0 * PI * df * t.0 * ds).cos();
                    wi += w * (2.0 * PI * df * t.0 * ds).sin();
                }
                let got = re / runs as f64;
                assert!((got - wr).abs() < 0.07, "{p:?} Δf {df}: {got} vs {wr} (+{wi}j)");
            }
        }
    }

    #[test]
    fn the_mean_gain_is_one_and_the_los_profile_fades_less() {
        let spread = |p: TdlProfile| {
            let mut g = Vec::new();
            let mut xs = Vec::new();
            for r in 0..400 {
                let ch = TdlChannel::new(p, 100e-9, 100.0, Rng::new(r, "mean"));
                for k in 0..20 {
                    ch.gains(k as f64 * 0.005, &[0.0, 1e6], &mut g);
                    xs.extend_from_slice(&g);
                }
            }
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
            (mean, var)
        };
        let (ma, va) = spread(TdlProfile::A);
        let (md, vd) = spread(TdlProfile::D);
        assert!((ma - 1.0).abs() < 0.05 && (md - 1.0).abs() < 0.05, "{ma} {md}");
        // Rayleigh: |H|² exponential, variance 1; with a 13.3 dB K-factor, far less.
        assert!((va - 1.0).abs() < 0.15, "{va}");
        assert!(vd < 0.3, "{vd}");
        assert!((max_doppler_hz(120.0 / 3.6, 3.5e9) - 388.9).abs() < 0.1);
    }
}
