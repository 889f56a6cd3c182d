//! Large-scale propagation, TR 38.901 §7.4: path loss of the UMa, UMi street canyon and InH
//! (office) scenarios (Table 7.4.1-1), the LOS probability (Table 7.4.2-1), shadow fading with
//! its standard deviation (Table 7.4.1-1) and its spatial correlation (exponential, with the
//! decorrelation distance of Table 7.5-6), and the carrier frequency of an NR-ARFCN
//! (TS 38.104 §5.4.2.1).
//!
//! Distances in m, frequencies in Hz, losses in dB. Not modelled: outdoor-to-indoor penetration
//! (§7.4.3), the UMa breakpoint's random effective environment height (Note 1: `h_E` = 1 m is
//! taken, its value with probability 1/(1 + C) — 1 for a UE at or below 13 m), RMa and InF,
//! the optional models of §7.4.1, and the correlation of shadowing between links (one gNB).

use crate::rng::Rng;

/// Speed of light, m/s (TR 38.901 Table 7.4.1-1, Note 1: `c = 3.0 × 10^8`).
pub const C: f64 = 3.0e8;

/// A TR 38.901 scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Urban macro: gNB at 25 m.
    Uma,
    /// Urban micro, street canyon: gNB at 10 m.
    Umi,
    /// Indoor hotspot, office (mixed office LOS probability): gNB at 3 m.
    Inh,
}

impl Scenario {
    pub fn parse(s: &str) -> Option<Scenario> {
        match s {
            "uma" => Some(Scenario::Uma),
            "umi" => Some(Scenario::Umi),
            "inh" => Some(Scenario::Inh),
            _ => None,
        }
    }

    /// The gNB's antenna height of the scenario's evaluation assumptions (Table 7.4.1-1: UMa
    /// `h_BS` = 25 m, UMi 10 m; InH 3 m, Table 7.2-2's ceiling mount).
    pub fn bs_height_m(self) -> f64 {
        match self {
            Scenario::Uma => 25.0,
            Scenario::Umi => 10.0,
            Scenario::Inh => 3.0,
        }
    }

    /// The inter-site distance of the scenario's evaluation layout, m (TR 38.901 Table 7.2-1: UMa
    /// 500 m, UMi street canyon 200 m; InH 20 m between its sites).
    pub fn isd_m(self) -> f64 {
        match self {
            Scenario::Uma => 500.0,
            Scenario::Umi => 200.0,
            Scenario::Inh => 20.0,
        }
    }

    /// A UE's default antenna height: 1.5 m outdoors (Table 7.4.1-1's lower bound), 1 m indoors.
    pub fn ue_height_m(self) -> f64 {
        match self {
            Scenario::Inh => 1.0,
            _ => 1.5,
        }
    }

    /// Shadow fading standard deviation, dB (Table 7.4.1-1).
    pub fn shadow_std_db(self, los: bool) -> f64 {
        match (self, los) {
            (Scenario::Uma, true) => 4.0,
            (Scenario::Uma, false) => 6.0,
            (Scenario::Umi, true) => 4.0,
            (Scenario::Umi, false) => 7.82,
            (Scenario::Inh, true) => 3.0,
            (Scenario::Inh, false) => 8.03,
        }
    }

    /// Shadow fading decorrelation distance, m (Table 7.5-6 part 1, `SF`).
    pub fn decorrelation_m(self, los: bool) -> f64 {
        match (self, los) {
            (Scenario::Uma, true) => 37.0,
            (Scenario::Uma, false) => 50.0,
            (Scenario::Umi, true) => 10.0,
            (Scenario::Umi, false) => 13.0,
            (Scenario::Inh, true) => 10.0,
            (Scenario::Inh, false) => 6.0,
        }
    }
}

/// The LOS probability at horizontal distance `d2d` (m) for a UE at height `h_ut` (m), Table
/// 7.4.2-1 (outdoor UEs: `d2D-out` = `d2d`; InH: mixed office).
pub fn los_probability(s: Scenario, d2d: f64, h_ut: f64) -> f64 {
    match s {
        Scenario::Umi => {
            if d2d <= 18.0 {
                1.0
            } else {
                18.0 / d2d + (-d2d / 36.0).exp() * (1.0 - 18.0 / d2d)
            }
        }
        Scenario::Uma => {
            if d2d <= 18.0 {
                return 1.0;
            }
            let c = if h_ut <= 13.0 { 0.0 } else { ((h_ut - 13.0) / 10.0).powf(1.5) };
            (18.0 / d2d + (-d2d / 63.0).exp() * (1.0 - 18.0 / d2d))
                * (1.0 + c * 5.0 / 4.0 * (d2d / 100.0).powi(3) * (-d2d / 150.0).exp())
        }
        Scenario::Inh => {
            if d2d <= 1.2 {
                1.0
            } else if d2d < 6.5 {
                (-(d2d - 1.2) / 4.7).exp()
            } else {
                (-(d2d - 6.5) / 32.6).exp() * 0.32
            }
        }
    }
}

/// Path loss (dB) of Table 7.4.1-1 at horizontal distance `d2d`, antenna heights `h_bs` and
/// `h_ut` (m), carrier `fc_hz`; LOS or NLOS (the NLOS loss is never below the LOS one, as the
/// table's `max(PL_LOS, PL'_NLOS)`). Distances below the table's range (10 m outdoors, 1 m
/// indoors) are taken at its lower end; beyond it the formula is extrapolated.
pub fn path_loss_db(s: Scenario, los: bool, d2d: f64, h_bs: f64, h_ut: f64, fc_hz: f64) -> f64 {
    let fc = fc_hz / 1e9;
    let d2d = d2d.max(if s == Scenario::Inh { 1.0 } else { 10.0 });
    let d3d = (d2d * d2d + (h_bs - h_ut).powi(2)).sqrt();
    let lf = fc.log10();
    // Breakpoint distance d'BP = 4 h'BS h'UT fc / c with effective heights h' = h - hE, hE = 1 m
    // (Note 1 of Table 7.4.1-1).
    let bp = 4.0 * (h_bs - 1.0) * (h_ut - 1.0) * fc_hz / C;
    let los_db = match s {
        Scenario::Uma => {
            if d2d <= bp {
                28.0 + 22.0 * d3d.log10() + 20.0 * lf
            } else {
                28.0 + 40.0 * d3d.log10() + 20.0 * lf - 9.0 * (bp * bp + (h_bs - h_ut).powi(2)).log10()
            }
        }
        Scenario::Umi => {
            if d2d <= bp {
                32.4 + 21.0 * d3d.log10() + 20.0 * lf
            } else {
                32.4 + 40.0 * d3d.log10() + 20.0 * lf - 9.5 * (bp * bp + (h_bs - h_ut).powi(2)).log10()
            }
        }
        Scenario::Inh => 32.4 + 17.3 * d3d.log10() + 20.0 * lf,
    };
    if los {
        return los_db;
    }
    let nlos = match s {
        Scenario::Uma => 13.54 + 39.08 * d3d.log10() + 20.0 * lf - 0.6 * (h_ut - 1.5),
        Scenario::Umi => 35.3 * d3d.log10() + 22.4 + 21.3 * lf - 0.3 * (h_ut - 1.5),
        Scenario::Inh => 38.3 * d3d.log10() + 17.30 + 24.9 * lf,
    };
    los_db.max(nlos)
}

/// Shadow fading along a UE's path: a zero-mean Gaussian (dB) whose correlation between two
/// points `Δd` apart is `exp(-Δd / d_cor)` (§7.5 step 1's exponential model), drawn as a
/// first-order autoregression on a grid of [`SHADOW_STEPS_PER_DECORRELATION`] points per
/// decorrelation distance along the path: its value depends on the path alone, not on how often
/// it is asked (another UE's traffic never changes this UE's shadowing).
#[derive(Clone, Debug)]
pub struct Shadowing {
    std_db: f64,
    step_m: f64,
    rho: f64,
    value_db: f64,
    /// Distance along the path, and to the last grid point drawn.
    travelled_m: f64,
    drawn_m: f64,
    rng: Rng,
}

/// Grid points per decorrelation distance (at UMi's 10 m, one every 0.5 m).
pub const SHADOW_STEPS_PER_DECORRELATION: f64 = 20.0;

impl Shadowing {
    pub fn new(std_db: f64, decorrelation_m: f64, mut rng: Rng) -> Self {
        let value_db = std_db * rng.normal();
        let step_m = decorrelation_m / SHADOW_STEPS_PER_DECORRELATION;
        let rho = (-1.0 / SHADOW_STEPS_PER_DECORRELATION).exp();
        Shadowing { std_db, step_m, rho, value_db, travelled_m: 0.0, drawn_m: 0.0, rng }
    }

    /// The shadowing now, dB.
    pub fn db(&self) -> f64 {
        self.value_db
    }

    /// After moving `moved_m` metres: one step `x' = ρ x + σ √(1 − ρ²) n` per grid point passed,
    /// ρ = exp(−step / d_cor).
    pub fn advance(&mut self, moved_m: f64) -> f64 {
        self.travelled_m += moved_m.max(0.0);
        while self.travelled_m >= self.drawn_m + self.step_m {
            self.drawn_m += self.step_m;
            self.value_db =
                self.rho * self.value_db + self.std_db * (1.0 - self.rho * self.rho).sqrt() * self.rng.normal();
        }
        self.value_db
    }
}

/// The carrier frequency (Hz) of an NR-ARFCN, TS 38.104 §5.4.2.1 (Table 5.4.2.1-1):
/// `F_REF = F_REF-Offs + ΔF_Global (N_REF − N_REF-Offs)`.
pub fn nr_arfcn_hz(n: u32) -> Option<f64> {
    let (df_khz, f_offs_mhz, n_offs) = match n {
        0..=599_999 => (5.0, 0.0, 0),
        600_000..=2_016_666 => (15.0, 3000.0, 600_000),
        2_016_667..=3_279_165 => (60.0, 24_250.08, 2_016_667),
        _ => return None,
    };
    Some(f_offs_mhz * 1e6 + df_khz * 1e3 * f64::from(n - n_offs))
}

/// Thermal noise power (dBm) over `bandwidth_hz` at a receiver with noise figure `nf_db`:
/// −174 dBm/Hz (kT at 290 K) + 10 log10(B) + NF.
pub fn noise_dbm(bandwidth_hz: f64, nf_db: f64) -> f64 {
    -174.0 + 10.0 * bandwidth_hz.log10() + nf_db
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Spot values worked by hand from Table 7.4.1-1's formulas.
    #[test]
    fn path_loss_at_spot_distances_follows_table_7_4_1_1() {
        let fc = 3.5e9;
        // UMa LOS, 100 m, UE at 1.5 m: d3D = √(100² + 23.5²) = 102.724 m; d'BP = 4·24·0.5·3.5e9/3e8
        // = 560 m, so PL1 = 28 + 22 log10(102.724) + 20 log10(3.5) = 83.138 dB.
        assert!(close(path_loss_db(Scenario::Uma, true, 100.0, 25.0, 1.5, fc), 83.138, 0.01));
        // Beyond the breakpoint, 1 km: PL2 = 28 + 40 log10(1000.276) + 20 log10(3.5) − 9 log10(560² + 23.5²).
        let pl2 = 28.0 + 40.0 * 1000.276f64.log10() + 20.0 * 3.5f64.log10()
            - 9.0 * (560.0f64.powi(2) + 23.5f64.powi(2)).log10();
        assert!(close(path_loss_db(Scenario::Uma, true, 1000.0, 25.0, 1.5, fc), pl2, 0.01));
        // UMa NLOS, 500 m: 13.54 + 39.08 log10(500.552) + 20 log10(3.5) = 129.916 dB (> LOS).
        assert!(close(path_loss_db(Scenario::Uma, false, 500.0, 25.0, 1.5, fc), 129.916, 0.01));
        // UMi LOS, 50 m: d3D = √(50² + 8.5²) = 50.717; 32.4 + 21 log10(50.717) + 20 log10(3.5) = 79.090.
        assert!(close(path_loss_db(Scenario::Umi, true, 50.0, 10.0, 1.5, fc), 79.090, 0.01));
        // UMi NLOS, 200 m: 35.3 log10(200.18) + 22.4 + 21.3 log10(3.5) = 115.229.
        assert!(close(path_loss_db(Scenario::Umi, false, 200.0, 10.0, 1.5, fc), 115.229, 0.01));
        // InH LOS, 20 m (gNB 3 m, UE 1 m): d3D = 20.0998; 32.4 + 17.3 log10(20.0998) + 20 log10(3.5) = 65.827.
        assert!(close(path_loss_db(Scenario::Inh, true, 20.0, 3.0, 1.0, fc), 65.827, 0.01));
        // InH NLOS, 20 m: 38.3 log10(20.0998) + 17.3 + 24.9 log10(3.5) = 80.759.
        assert!(close(path_loss_db(Scenario::Inh, false, 20.0, 3.0, 1.0, fc), 80.759, 0.01));
        // NLOS is max(PL_LOS, PL'_NLOS): never less than LOS.
        for d in [10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0] {
            for s in [Scenario::Uma, Scenario::Umi, Scenario::Inh] {
                let (h_bs, h_ut) = (s.bs_height_m(), s.ue_height_m());
                assert!(path_loss_db(s, false, d, h_bs, h_ut, fc) >= path_loss_db(s, true, d, h_bs, h_ut, fc));
            }
        }
    }

    #[test]
    fn los_probability_follows_table_7_4_2_1() {
        assert_eq!(los_probability(Scenario::Umi, 18.0, 1.5), 1.0);
        // UMi at 100 m: 0.18 + e^(−100/36)·0.82 = 0.2309.
        assert!(close(los_probability(Scenario::Umi, 100.0, 1.5), 0.18 + (-100.0f64 / 36.0).exp() * 0.82, 1e-12));
        assert!(close(los_probability(Scenario::Umi, 100.0, 1.5), 0.2309, 1e-4));
        // UMa at 100 m, UE at 1.5 m (C' = 0): 0.18 + e^(−100/63)·0.82 = 0.3477.
        assert!(close(los_probability(Scenario::Uma, 100.0, 1.5), 0.3477, 1e-4));
        // A UE at 23 m sees more LOS: C'(23) = 1.
        assert!(los_probability(Scenario::Uma, 100.0, 23.0) > los_probability(Scenario::Uma, 100.0, 1.5));
        // InH mixed office: e^(−(5 − 1.2)/4.7) at 5 m, 0.32 e^(−(20 − 6.5)/32.6) at 20 m.
        assert!(close(los_probability(Scenario::Inh, 5.0, 1.0), (-(3.8f64) / 4.7).exp(), 1e-12));
        assert!(close(los_probability(Scenario::Inh, 20.0, 1.0), 0.32 * (-(13.5f64) / 32.6).exp(), 1e-12));
    }

    /// The shadowing's correlation between points one decorrelation distance apart is e^−1.
    #[test]
    fn shadowing_decorrelates_as_exp_minus_one_at_the_decorrelation_distance() {
        let (std, dcor, step) = (6.0, 50.0, 2.5);
        let mut sh = Shadowing::new(std, dcor, Rng::new(7, "shadow"));
        let lag = (dcor / step) as usize;
        let xs: Vec<f64> = (0..400_000).map(|_| sh.advance(step)).collect();
        // The same path asked in other steps gives the same values at the same places.
        let mut fine = Shadowing::new(std, dcor, Rng::new(7, "shadow"));
        let mut at = Vec::new();
        for k in 1..=4000 {
            let v = fine.advance(step / 4.0);
            if k % 4 == 0 {
                at.push(v);
            }
        }
        assert_eq!(at, xs[..1000].to_vec());
        let var = xs.iter().map(|x| x * x).sum::<f64>() / xs.len() as f64;
        let cov = xs.iter().zip(&xs[lag..]).map(|(a, b)| a * b).sum::<f64>() / (xs.len() - lag) as f64;
        assert!(close(var.sqrt(), std, 0.2), "std {}", var.sqrt());
        assert!(close(cov / var, (-1.0f64).exp(), 0.03), "ρ(d_cor) = {}", cov / var);
    }

    #[test]
    fn nr_arfcn_gives_the_carrier_of_ts_38_104() {
        // n78's 650000: 3000 MHz + 15 kHz × 50000 = 3750 MHz; band 3's 368500: 5 kHz × 368500 =
        // 1842.5 MHz (srsRAN's default cell); FR2 2070833: 24250.08 + 60 kHz × 54166 = 27500.04 MHz.
        assert_eq!(nr_arfcn_hz(650_000), Some(3.75e9));
        assert_eq!(nr_arfcn_hz(368_500), Some(1.8425e9));
        assert!(close(nr_arfcn_hz(2_070_833).unwrap(), 27_500.04e6, 1.0));
        assert_eq!(nr_arfcn_hz(3_279_166), None);
    }
}
