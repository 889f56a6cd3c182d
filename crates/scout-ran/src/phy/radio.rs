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
//! Uplink power ([`PowerControl`], with path loss): open-loop PUSCH power control of TS 38.213
//! §7.1.1 — P = min(P_CMAX, P_O_PUSCH + 10·log10(2^µ·M) + α·PL) over a grant of M PRBs, PL the
//! UE's estimate from the RSRP (path loss and shadowing; the fading averaged out by the RSRP's
//! filtering) — so a UE's power per PRB is P_O_PUSCH + α·PL until it reaches P_CMAX, and from
//! there P_CMAX shared by its M PRBs: a power-limited UE's SINR falls as its grant grows. Δ_TF is
//! 0 (srsRAN configures no `deltaMCS`) and the closed loop f is 0 (srsRAN's open-source gNB sends
//! TPC 1, "0 dB", always). Without path loss the UL's mean SINR is given and no power control
//! applies.
//!
//! Other cells ([`Neighbours`]): a first tier of neighbour sites around the serving gNB, each
//! transmitting a `load` fraction of the time (its activity factor) at the serving cell's
//! carrier — DL: the neighbour gNBs, received at the UE; UL: one UE in each neighbour cell,
//! received at the serving gNB. Their mean received power per PRB (path loss and shadowing of
//! their own link, no fading) times the load adds to the noise: SINR = S / (N + Σ load·I_k). A
//! load-dependent term until many cells arrive; the neighbours' scheduling is not modelled.

use super::fading::{max_doppler_hz, TdlChannel, TdlProfile};
use super::fading_grid::FadingGrid;
use super::mimo;
use super::mobility::{Mobility, Mover};
use super::propagation::{self, Scenario, Shadowing};
use crate::rng::Rng;

/// Open-loop PUSCH power control (TS 38.213 §7.1.1), srsRAN's configuration: P_O_NOMINAL_PUSCH
/// `pusch.p0_nominal_with_grant` (default −76 dBm), P_O_UE_PUSCH 0 and α
/// `pusch.path_loss_compensation_factor` (default 1: `alpha1`), the UE's P_CMAX its transmit power.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PowerControl {
    /// P_O_PUSCH, dBm per resource block of 15 kHz subcarriers.
    pub p0_dbm: f64,
    /// α, the fraction of the path loss compensated (0, 0.4 … 0.9, 1: TS 38.331 `Alpha`).
    pub alpha: f64,
    /// The numerology µ of the PUSCH's subcarrier spacing (15·2^µ kHz).
    pub mu: u8,
}

impl PowerControl {
    /// The power per PRB (dBm) power control asks for at path loss `pl_db`: P_O_PUSCH +
    /// 10·log10(2^µ) + α·PL (the grant's 10·log10 M spread over its M PRBs).
    fn wanted_per_prb_dbm(&self, pl_db: f64) -> f64 {
        self.p0_dbm + 10.0 * f64::from(1u32 << self.mu).log10() + self.alpha * pl_db
    }

    /// The transmit power per PRB (dBm) of a PUSCH over `prbs` PRBs, the UE's maximum power being
    /// `p_cmax_dbm` and its path loss estimate `pl_db`.
    pub fn tx_per_prb_dbm(&self, p_cmax_dbm: f64, prbs: u32, pl_db: f64) -> f64 {
        let m = 10.0 * f64::from(prbs.max(1)).log10();
        (p_cmax_dbm - m).min(self.wanted_per_prb_dbm(pl_db))
    }

    /// The Type 1 power headroom (dB) of a PUSCH over `prbs` PRBs (TS 38.213 §7.7.1): P_CMAX less
    /// the power power control asks for, negative when it asks for more than P_CMAX.
    pub fn headroom_db(&self, p_cmax_dbm: f64, prbs: u32, pl_db: f64) -> f64 {
        p_cmax_dbm - 10.0 * f64::from(prbs.max(1)).log10() - self.wanted_per_prb_dbm(pl_db)
    }

    /// The largest grant (PRBs) on which a UE of path loss `pl_db` still has the power P_O_PUSCH +
    /// α·PL per PRB: beyond it, P_CMAX is shared.
    pub fn full_power_prbs(&self, p_cmax_dbm: f64, pl_db: f64) -> f64 {
        10f64.powf((p_cmax_dbm - self.wanted_per_prb_dbm(pl_db)) / 10.0)
    }
}

/// Interference from neighbour cells on one direction of a link.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbours {
    /// Where each interferer is, m from the serving gNB: DL the neighbour gNBs, UL one UE in each
    /// neighbour cell.
    pub at: Vec<[f64; 2]>,
    /// DL: the receiver is the UE (and moves with it); UL: the serving gNB at the origin.
    pub at_ue: bool,
    /// The fraction of the time each interferer transmits (0–1).
    pub load: f64,
    /// Each interferer's transmit power over the carrier, dBm (its P_CMAX under power control).
    pub tx_power_dbm: f64,
    /// UL: each interferer's own gNB, towards which its power is controlled (the link's
    /// [`PowerControl`], a full-carrier grant: full buffer); empty for the DL.
    pub sites: Vec<[f64; 2]>,
}

/// The first tier of `n` (≤ 6) neighbour sites of a hexagonal layout, `isd_m` from the serving one
/// (TR 38.901 §7.2's layout), at 0°, 60°, … .
pub fn hex_ring(n: usize, isd_m: f64) -> Vec<[f64; 2]> {
    (0..n.min(6))
        .map(|k| {
            let a = std::f64::consts::PI / 3.0 * k as f64;
            [isd_m * a.cos(), isd_m * a.sin()]
        })
        .collect()
}

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
    /// Other cells' interference (none: one cell alone).
    pub neighbours: Option<Neighbours>,
    /// UL power control (with path loss; none: `tx_power_dbm` spread over the carrier).
    pub power_control: Option<PowerControl>,
    /// Receive and transmit antennas (DL: the UE's, the gNB's ports; UL: the gNB's, 1), each 1–4:
    /// with fading, one TDL process per pair ([`super::mimo`]).
    pub antennas: (u32, u32),
}

/// One interferer's link to the receiver: its LOS draw and shadowing (its own process).
#[derive(Clone, Debug)]
struct Interferer {
    at: [f64; 2],
    los_u: f64,
    shadow: Shadowing,
    /// Its transmit power per PRB, dBm: the carrier's share of its power, or under power control
    /// what its own path loss calls for on a full-carrier grant.
    tx_per_prb_dbm: f64,
}

/// PRBs per group the fading is evaluated on (a CSI subband of TS 38.214 Table 5.2.1.4-2 is 4–32
/// PRBs; 4 resolves the coherence bandwidth of the TDL profiles' nominal delay spreads).
pub const PRBS_PER_GROUP: u32 = 4;

/// Where a transmission is in frequency: the carrier's PRBs `first .. first + n` (a contiguous
/// allocation, TS 38.214 §5.1.2.2.2 and §6.1.2.2.2's type 1, as srsRAN's scheduler grants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Band {
    pub first: u32,
    pub n: u32,
}

impl Band {
    /// The whole carrier of `prbs` PRBs (what a wideband CSI report measures).
    pub fn carrier(prbs: u32) -> Band {
        Band { first: 0, n: prbs }
    }

    /// The PRB groups it touches, and how many of its PRBs each holds (its weight in the
    /// effective SINR), within a carrier of `prbs` PRBs; at least one PRB.
    fn groups(self, prbs: u32) -> impl Iterator<Item = (usize, f64)> {
        let first = self.first.min(prbs.saturating_sub(1));
        let end = (first + self.n.max(1)).min(prbs);
        (first / PRBS_PER_GROUP..end.div_ceil(PRBS_PER_GROUP)).map(move |g| {
            let (lo, hi) = (g * PRBS_PER_GROUP, (g + 1) * PRBS_PER_GROUP);
            (g as usize, f64::from(hi.min(end) - lo.max(first)))
        })
    }
}

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
    /// One TDL process per antenna pair, receive-antenna-major (`r · N_t + t`); empty without
    /// fading.
    fading: Vec<TdlChannel>,
    /// Their paths' gains on the grid of the instants the link is evaluated at.
    grid: FadingGrid,
    /// The PRB groups' centre frequencies, offsets from the carrier (Hz), and the fading paths'
    /// rotations at them (computed once: every pair has the same delays and powers).
    freqs: Vec<f64>,
    rot: Vec<(f64, f64)>,
    /// The same rotations path-major (`[path · groups + group]`), cosines and sines apart: the
    /// one-pair evaluation's loop over the groups vectorises on them.
    rot_c: Vec<f64>,
    rot_s: Vec<f64>,
    /// Scratch: every pair's path gains, path-major, real and imaginary parts apart (so that the
    /// loop over the pairs vectorises); each group's response of every pair, group-major.
    paths_re: Vec<f64>,
    paths_im: Vec<f64>,
    resp_re: Vec<f64>,
    resp_im: Vec<f64>,
    /// Each PRB group's eigenmode gains, max(λ, 10⁻¹²) (largest first,
    /// [`mimo::eigenmodes`]); with one antenna pair, of |H|². Only the groups a transmission
    /// asked for are evaluated: `eig_at` holds the interval each group's are of.
    eig: Vec<[f64; mimo::MAX_ANTENNAS]>,
    eig_at: Vec<i64>,
    /// The fading is evaluated once per this many ns (see [`TdlChannel::coherent_for_s`]).
    quantum_ns: i64,
    interferers: Vec<Interferer>,
    /// The interval the paths' gains (`paths_re`, `paths_im`) are of.
    gains_at: Option<i64>,
    /// The last interval, band and layers asked, and the effective SINR of them.
    last: Option<(i64, Band, u8, f64)>,
    /// The last interval, band, layers and modulation asked, and the mean MI per coded bit.
    last_mi: Option<(i64, Band, u8, u8, f64)>,
    /// Scratch: the SINRs of a band's groups (and layers), and their weights (PRBs).
    scratch: Vec<f64>,
    weights: Vec<f64>,
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
        // One process per antenna pair; the first keeps the single-antenna link's stream.
        let pairs = (spec.antennas.0 * spec.antennas.1) as usize;
        let fading: Vec<TdlChannel> = match spec.fading {
            Some((p, ds)) => (0..pairs)
                .map(|k| {
                    let name = if k == 0 { format!("ue{ue}.{dir}.fading") } else { format!("ue{ue}.{dir}.fading.{k}") };
                    TdlChannel::new(p, ds, doppler, Rng::new(seed, &name))
                })
                .collect(),
            None => Vec::new(),
        };
        let prb_hz = 12.0 * spec.scs_hz;
        let groups = spec.prbs.div_ceil(PRBS_PER_GROUP);
        let freqs: Vec<f64> = (0..groups)
            .map(|g| {
                let first = g * PRBS_PER_GROUP;
                let n = PRBS_PER_GROUP.min(spec.prbs - first);
                (f64::from(first) + f64::from(n) / 2.0 - f64::from(spec.prbs) / 2.0) * prb_hz
            })
            .collect();
        let rot = fading.first().map(|f| f.rotations(&freqs)).unwrap_or_default();
        let paths = fading.first().map_or(0, |f| f.nof_paths());
        let path_major = |pick: fn(&(f64, f64)) -> f64| -> Vec<f64> {
            (0..paths)
                .flat_map(|k| (0..freqs.len()).map(move |g| (g, k)))
                .map(|(g, k)| pick(&rot[g * paths + k]))
                .collect()
        };
        let (rot_c, rot_s) = (path_major(|r| r.0), path_major(|r| r.1));
        // DL interference is the UE's own (its links to the neighbour gNBs); UL interference is the
        // cell's (neighbour UEs at its gNB): every UE of the cell sees the same.
        let interferers = match (&spec.neighbours, spec.pathloss) {
            (Some(n), Some(sc)) => {
                n.at.iter()
                    .enumerate()
                    .map(|(k, at)| {
                        let name = if n.at_ue { format!("ue{ue}.nb{k}") } else { format!("cell.nb{k}.ul") };
                        let los_u = Rng::new(seed, &format!("{name}.los")).uniform();
                        let rx = if n.at_ue { spec.start } else { [0.0, 0.0] };
                        let d = ((at[0] - rx[0]).powi(2) + (at[1] - rx[1]).powi(2)).sqrt();
                        let los = los_u < propagation::los_probability(sc, d, spec.h_ut);
                        let shadow = Shadowing::new(
                            sc.shadow_std_db(los),
                            sc.decorrelation_m(los),
                            Rng::new(seed, &format!("{name}.shadowing")),
                        );
                        let tx_per_prb_dbm = match (spec.power_control, n.sites.get(k)) {
                            // A neighbour UE's power is controlled by its path loss to its own gNB
                            // (its own LOS draw and shadowing there, fixed: it does not move).
                            (Some(pc), Some(site)) => {
                                let d = ((at[0] - site[0]).powi(2) + (at[1] - site[1]).powi(2)).sqrt().max(1.0);
                                let own = format!("{name}.own");
                                let own_los = Rng::new(seed, &format!("{own}.los")).uniform()
                                    < propagation::los_probability(sc, d, spec.h_ut);
                                let own_shadow = Shadowing::new(
                                    sc.shadow_std_db(own_los),
                                    sc.decorrelation_m(own_los),
                                    Rng::new(seed, &format!("{own}.shadowing")),
                                );
                                let pl = propagation::path_loss_db(sc, own_los, d, spec.h_bs, spec.h_ut, spec.fc_hz)
                                    + own_shadow.db();
                                pc.tx_per_prb_dbm(n.tx_power_dbm, spec.prbs, pl)
                            }
                            _ => n.tx_power_dbm - 10.0 * f64::from(spec.prbs).log10(),
                        };
                        Interferer { at: *at, los_u, shadow, tx_per_prb_dbm }
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        let quantum_ns = fading.first().map_or(1_000_000, |f| ((f.coherent_for_s() * 1e9) as i64).max(1_000));
        let (gains, responses) = (paths * fading.len(), groups as usize * fading.len());
        RadioLink {
            spec,
            mover,
            shadow,
            los_u,
            grid: FadingGrid::new(&fading, quantum_ns),
            fading,
            freqs,
            rot,
            rot_c,
            rot_s,
            paths_re: vec![0.0; gains],
            paths_im: vec![0.0; gains],
            resp_re: vec![0.0; responses],
            resp_im: vec![0.0; responses],
            eig: vec![[0.0; mimo::MAX_ANTENNAS]; groups as usize],
            eig_at: vec![i64::MIN; groups as usize],
            quantum_ns,
            interferers,
            gains_at: None,
            last: None,
            last_mi: None,
            scratch: Vec::new(),
            weights: Vec::new(),
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
                self.path_loss_db(s, self.los_u, self.distance_m()) + self.shadow.as_ref().map_or(0.0, Shadowing::db)
            }
            None => 0.0,
        }
    }

    /// The path loss (dB) of a link `d2d` m long in scenario `s` whose LOS draw is `los_u`: LOS
    /// while the draw is below the LOS probability at that distance.
    fn path_loss_db(&self, s: Scenario, los_u: f64, d2d: f64) -> f64 {
        let los = los_u < propagation::los_probability(s, d2d, self.spec.h_ut);
        propagation::path_loss_db(s, los, d2d, self.spec.h_bs, self.spec.h_ut, self.spec.fc_hz)
    }

    /// RSRP now, dBm: the power of one resource element of the reference signal (TS 38.215
    /// §5.1.1), averaged over the fading: transmit power over the carrier's 12·N_PRB resource
    /// elements, less path loss and shadowing.
    pub fn rsrp_dbm(&self) -> f64 {
        self.spec.tx_power_dbm - 10.0 * f64::from(12 * self.spec.prbs).log10() - self.loss_db()
    }

    /// The mean SINR over the fading now, dB, of a transmission over the whole carrier: received
    /// power per PRB over noise plus the neighbours' interference per PRB.
    pub fn mean_sinr_db(&self) -> f64 {
        self.mean_sinr_for_db(self.spec.prbs)
    }

    /// The transmit power per PRB now (dBm) of a transmission over `prbs` PRBs: under power control
    /// what TS 38.213 §7.1.1 gives for the UE's path loss estimate ([`PowerControl`]), otherwise the
    /// transmit power spread over the carrier.
    pub fn tx_per_prb_dbm(&self, prbs: u32) -> f64 {
        match self.spec.power_control {
            Some(pc) if self.spec.pathloss.is_some() => pc.tx_per_prb_dbm(self.spec.tx_power_dbm, prbs, self.loss_db()),
            _ => self.spec.tx_power_dbm - 10.0 * f64::from(self.spec.prbs).log10(),
        }
    }

    /// The UE's power headroom (dB) for a PUSCH over `prbs` PRBs at `t_ns`, under power control.
    pub fn power_headroom_db(&mut self, t_ns: i64, prbs: u32) -> Option<f64> {
        self.advance(t_ns);
        let pc = self.spec.power_control.filter(|_| self.spec.pathloss.is_some())?;
        Some(pc.headroom_db(self.spec.tx_power_dbm, prbs, self.loss_db()))
    }

    /// The mean SINR over the fading now (dB) of a transmission over `prbs` PRBs (under power
    /// control the power per PRB depends on how many; otherwise not).
    pub fn mean_sinr_for_db(&self, prbs: u32) -> f64 {
        match self.spec.pathloss {
            None => self.spec.mean_sinr_db,
            Some(_) => {
                let per_prb = self.tx_per_prb_dbm(prbs) - self.loss_db();
                let noise_mw = dbm_to_mw(propagation::noise_dbm(12.0 * self.spec.scs_hz, self.spec.noise_figure_db));
                per_prb - 10.0 * (noise_mw + self.interference_mw()).log10()
            }
        }
    }

    /// The neighbours' mean interference per PRB now, mW (0 without neighbours): each one's
    /// received power per PRB times its load.
    pub fn interference_mw(&self) -> f64 {
        let (Some(n), Some(sc)) = (&self.spec.neighbours, self.spec.pathloss) else { return 0.0 };
        let rx = if n.at_ue { self.mover.position() } else { [0.0, 0.0] };
        self.interferers
            .iter()
            .map(|i| {
                let d = ((i.at[0] - rx[0]).powi(2) + (i.at[1] - rx[1]).powi(2)).sqrt().max(1.0);
                n.load * dbm_to_mw(i.tx_per_prb_dbm - self.path_loss_db(sc, i.los_u, d) - i.shadow.db())
            })
            .sum()
    }

    fn advance(&mut self, t_ns: i64) {
        let moved = self.mover.advance_to(t_ns);
        if moved > 0.0 {
            // A change of LOS condition keeps the shadowing's process (its σ and distance are the
            // condition's at the start; not modelled: the switch between the two processes).
            if let Some(sh) = self.shadow.as_mut() {
                sh.advance(moved);
            }
            // The UE's links to the neighbour gNBs move with it; the UL's neighbour UEs do not.
            if self.spec.neighbours.as_ref().is_some_and(|n| n.at_ue) {
                for i in &mut self.interferers {
                    i.shadow.advance(moved);
                }
            }
        }
    }

    /// The most layers the link's channel carries: `min(N_r, N_t)` with fading (which models the
    /// antennas), `None` without (a flat channel has no eigenmodes: its layers are configured).
    pub fn max_layers(&self) -> Option<u8> {
        (!self.fading.is_empty()).then(|| self.spec.antennas.0.min(self.spec.antennas.1) as u8)
    }

    /// Each PRB group's SINR (dB) at `t_ns` of a one-layer transmission over the whole carrier,
    /// into `out`.
    pub fn group_sinr_db(&mut self, t_ns: i64, out: &mut Vec<f64>) {
        let mut w = std::mem::take(&mut self.weights);
        self.group_sinr_for_db(t_ns, Band::carrier(self.spec.prbs), 1, out, &mut w);
        self.weights = w;
    }

    /// The SINRs (dB) at `t_ns` of a transmission over `band` in `layers` layers, into `out`, and
    /// each one's weight, the PRBs of the band its group holds, into `w`: per PRB group the band
    /// touches, each layer's ([`mimo`]: the power split over the layers, layer `i` on eigenmode
    /// `i`). Without fading the band is flat: one value, the configured SINR (every layer's).
    fn group_sinr_for_db(&mut self, t_ns: i64, band: Band, layers: u8, out: &mut Vec<f64>, w: &mut Vec<f64>) {
        if self.fading.is_empty() {
            self.advance(t_ns);
            out.clear();
            out.push(self.mean_sinr_for_db(band.n));
            w.clear();
            w.push(1.0);
            return;
        }
        self.group_sinr_for(t_ns, band, layers, out, w);
        for s in out.iter_mut() {
            *s = 10.0 * s.log10();
        }
    }

    /// The same SINRs of a faded link as powers (linear): the evaluation's own unit, so that the
    /// effective SINR takes no logarithm and exponential per group and back.
    fn group_sinr_for(&mut self, t_ns: i64, band: Band, layers: u8, out: &mut Vec<f64>, w: &mut Vec<f64>) {
        self.advance(t_ns);
        let mean = 10f64.powf(self.mean_sinr_for_db(band.n) / 10.0);
        self.evaluate(t_ns, band);
        out.clear();
        w.clear();
        let n = usize::from(layers.max(1));
        let share = mean / n as f64;
        for (g, prbs) in band.groups(self.spec.prbs) {
            let e = &self.eig[g];
            if n == 1 {
                out.push(mean * e[0]);
            } else {
                out.extend(e[..n].iter().map(|x| share * x));
            }
            w.extend(std::iter::repeat_n(prbs, n));
        }
    }

    /// The channel at `t_ns` over `band`: the paths' gains at `t_ns` (once per interval), then
    /// each antenna pair's response and the eigenmodes of the band's groups not yet evaluated at
    /// `t_ns`.
    fn evaluate(&mut self, t_ns: i64, band: Band) {
        let m = self.fading.len();
        let p = self.fading[0].nof_paths();
        if self.gains_at != Some(t_ns) {
            // Every pair's path gains (path-major), real and imaginary parts apart.
            let (pre, pim) = (&mut self.paths_re, &mut self.paths_im);
            if t_ns.rem_euclid(self.quantum_ns) == 0 {
                self.grid.gains_at(t_ns / self.quantum_ns, pre, pim);
            } else {
                let t_s = t_ns as f64 * 1e-9;
                for (ch, f) in self.fading.iter().enumerate() {
                    for k in 0..p {
                        (pre[k * m + ch], pim[k * m + ch]) = f.path_gain(k, t_s);
                    }
                }
            }
            self.gains_at = Some(t_ns);
        }
        // The runs of the band's groups still to evaluate at `t_ns`.
        let (mut run, mut end) = (None, 0);
        for (g, _) in band.groups(self.spec.prbs) {
            end = g + 1;
            if self.eig_at[g] != t_ns {
                run.get_or_insert(g);
                self.eig_at[g] = t_ns;
            } else if let Some(a) = run.take() {
                self.evaluate_groups(a, g);
            }
        }
        if let Some(a) = run {
            self.evaluate_groups(a, end);
        }
    }

    /// Every antenna pair's response at PRB groups `a..b` from the paths' gains, and their
    /// eigenmodes. Each group's sum over the paths runs in the same order whichever groups are
    /// asked: a group's value does not depend on the band it was evaluated for.
    fn evaluate_groups(&mut self, a: usize, b: usize) {
        let m = self.fading.len();
        let p = self.fading[0].nof_paths();
        let groups = self.freqs.len();
        let (pre, pim) = (&self.paths_re, &self.paths_im);
        let (hre, him) = (&mut self.resp_re[a * m..b * m], &mut self.resp_im[a * m..b * m]);
        hre.fill(0.0);
        him.fill(0.0);
        if m == 1 {
            // One pair: the loop runs over the groups instead (each group's sum over the paths
            // in the same order as the general loop: the same result, vectorised).
            let (cs, ss) = (self.rot_c.chunks_exact(groups), self.rot_s.chunks_exact(groups));
            for ((c, s), (&gr, &gi)) in cs.zip(ss).zip(pre.iter().zip(pim.iter())) {
                for (((r, i), &c), &s) in hre.iter_mut().zip(him.iter_mut()).zip(&c[a..b]).zip(&s[a..b]) {
                    *r += gr * c - gi * s;
                    *i += gr * s + gi * c;
                }
            }
        } else {
            for (j, row) in self.rot[a * p..b * p].chunks_exact(p).enumerate() {
                let (hr, hi) = (&mut hre[j * m..(j + 1) * m], &mut him[j * m..(j + 1) * m]);
                for (k, &(c, s)) in row.iter().enumerate() {
                    let (gr, gi) = (&pre[k * m..(k + 1) * m], &pim[k * m..(k + 1) * m]);
                    for ch in 0..m {
                        hr[ch] += gr[ch] * c - gi[ch] * s;
                        hi[ch] += gr[ch] * s + gi[ch] * c;
                    }
                }
            }
        }
        let (nr, nt) = (self.spec.antennas.0 as usize, self.spec.antennas.1 as usize);
        let floor = |l: f64| l.max(1e-12);
        let eig = &mut self.eig[a..b];
        if m == 1 {
            for ((e, re), im) in eig.iter_mut().zip(hre.iter()).zip(him.iter()) {
                *e = [floor(re * re + im * im), 0.0, 0.0, 0.0];
            }
            return;
        }
        let mut h = [(0.0, 0.0); mimo::MAX_ANTENNAS * mimo::MAX_ANTENNAS];
        for (j, e) in eig.iter_mut().enumerate() {
            for (ch, x) in h.iter_mut().enumerate().take(m) {
                *x = (hre[j * m + ch], him[j * m + ch]);
            }
            *e = mimo::eigenmodes(&h[..m], nr, nt).map(floor);
        }
    }

    /// The effective SINR (dB) of a one-layer transmission over the whole carrier at `t_ns`.
    pub fn effective_sinr_db(&mut self, t_ns: i64) -> f64 {
        self.effective_sinr_for_db(t_ns, Band::carrier(self.spec.prbs), 1)
    }

    /// The effective SINR (dB) at `t_ns` of a transmission over `band` in `layers` layers:
    /// capacity-effective over the PRB groups the band touches, each weighted by the band's PRBs
    /// in it, and the layers (see the module's documentation). The channel is evaluated at the
    /// start of each interval over which the fading stays correlated above 0.98 (at most 1 ms; at
    /// 120 km/h and 3.5 GHz, 82 µs), and that value serves every time within the interval.
    pub fn effective_sinr_for_db(&mut self, t_ns: i64, band: Band, layers: u8) -> f64 {
        let t = self.interval_start(t_ns);
        if let Some((last, b, l, v)) = self.last {
            if last == t && b == band && l == layers {
                return v;
            }
        }
        let v = if self.fading.is_empty() {
            self.over_groups(Self::group_sinr_for_db, t, band, layers, |s, w| capacity_effective_db(s, w, true))
        } else {
            self.over_groups(Self::group_sinr_for, t, band, layers, |s, w| capacity_effective_db(s, w, false))
        };
        self.last = Some((t, band, layers, v));
        v
    }

    /// The mean BICM mutual information per coded bit of `qm`-bit QAM at `t_ns` of a
    /// transmission over `band` in `layers` layers: what MIESM ([`super::link`]) sees, the mean
    /// over the band's PRBs and the layers, evaluated per interval as
    /// [`Self::effective_sinr_for_db`] is.
    pub fn mean_mi_for(&mut self, t_ns: i64, band: Band, layers: u8, qm: u8) -> f64 {
        let t = self.interval_start(t_ns);
        if let Some((last, b, l, q, v)) = self.last_mi {
            if last == t && b == band && l == layers && q == qm {
                return v;
            }
        }
        let v = self.over_groups(Self::group_sinr_for_db, t, band, layers, |s, w| {
            weighted_mean(s.iter().map(|db| super::link::mi_per_bit(qm, *db)), w)
        });
        self.last_mi = Some((t, band, layers, qm, v));
        v
    }

    /// The start of the interval over which the channel is evaluated once that holds `t_ns`.
    fn interval_start(&self, t_ns: i64) -> i64 {
        t_ns.div_euclid(self.quantum_ns) * self.quantum_ns
    }

    /// `f` of the SINRs at `t` of a transmission over `band` in `layers` layers and their
    /// weights, as `fill` gives them (in dB, or a faded link's as powers).
    fn over_groups(
        &mut self,
        fill: fn(&mut Self, i64, Band, u8, &mut Vec<f64>, &mut Vec<f64>),
        t: i64,
        band: Band,
        layers: u8,
        f: impl FnOnce(&[f64], &[f64]) -> f64,
    ) -> f64 {
        let (mut s, mut w) = (std::mem::take(&mut self.scratch), std::mem::take(&mut self.weights));
        fill(self, t, band, layers, &mut s, &mut w);
        let v = f(&s, &w);
        (self.scratch, self.weights) = (s, w);
        v
    }
}

fn dbm_to_mw(dbm: f64) -> f64 {
    10f64.powf(dbm / 10.0)
}

/// The capacity-effective SINR (dB) of SINRs `s` (dB), equally weighted: `2^mean(log2(1 + SINR))
/// − 1`.
pub fn effective_sinr_db(s: &[f64]) -> f64 {
    capacity_effective_db(s, &vec![1.0; s.len()], true)
}

/// The capacity-effective SINR (dB) of SINRs `s` (dB if `db`, else powers) weighted by `w`.
fn capacity_effective_db(s: &[f64], w: &[f64], db: bool) -> f64 {
    if s.is_empty() {
        return f64::NEG_INFINITY;
    }
    let power = |x: f64| if db { 10f64.powf(x / 10.0) } else { x };
    let c = weighted_mean(s.iter().map(|x| (1.0 + power(*x)).log2()), w);
    10.0 * (2f64.powf(c) - 1.0).max(1e-12).log10()
}

/// The mean of `v` weighted by `w` (as many).
fn weighted_mean(v: impl Iterator<Item = f64>, w: &[f64]) -> f64 {
    let (sum, total) = v.zip(w).fold((0.0, 0.0), |(s, t), (x, w)| (s + w * x, t + w));
    if total > 0.0 {
        sum / total
    } else {
        0.0
    }
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
            neighbours: None,
            power_control: None,
            antennas: (1, 1),
        }
    }

    /// Neighbours lower the SINR by their load-weighted power: nothing at load 0, more at full
    /// load than at half; RSRP (the serving cell's) does not change. A UE between two neighbour
    /// sites at full load is interference-limited: its SINR is near that of signal over
    /// interference alone.
    #[test]
    fn neighbours_interfere_by_their_load() {
        let with = |load: f64| {
            let n = Neighbours { at: hex_ring(6, 500.0), at_ue: true, load, tx_power_dbm: 46.0, sites: Vec::new() };
            RadioLink::new(RadioSpec { neighbours: Some(n), start: [216.5, 125.0], ..spec() }, 4, 0, "dl")
        };
        let alone = RadioLink::new(RadioSpec { start: [216.5, 125.0], ..spec() }, 4, 0, "dl");
        assert!((with(0.0).mean_sinr_db() - alone.mean_sinr_db()).abs() < 1e-9);
        let (half, full) = (with(0.5).mean_sinr_db(), with(1.0).mean_sinr_db());
        assert!(full < half && half < alone.mean_sinr_db(), "alone {} half {half} full {full}", alone.mean_sinr_db());
        assert_eq!(with(1.0).rsrp_dbm(), alone.rsrp_dbm());
        // 250 m from the serving site, 250 m from two neighbours: SINR within a few dB of 0 less
        // the other neighbours' share (shadowing apart), far below the noise-limited SINR.
        assert!(full < alone.mean_sinr_db() - 10.0 && full > -20.0 && full < 10.0, "{full}");
        // The interference is the sum over the neighbours of load × received power per PRB.
        let l = with(1.0);
        let i = l.interference_mw();
        assert!((with(0.5).interference_mw() - 0.5 * i).abs() < 1e-9 * i);
        assert_eq!(hex_ring(6, 500.0).len(), 6);
        assert!((hex_ring(2, 200.0)[1][1] - 200.0 * (std::f64::consts::PI / 3.0).sin()).abs() < 1e-9);
    }

    /// TS 38.213 §7.1.1 with srsRAN's configuration (P0 −76 dBm, α 1, µ 1): the power per PRB is
    /// P0 + 10·log10(2) + PL until P_CMAX; a near UE's SINR does not depend on its grant's size and
    /// its received power per PRB is P0 + 3 dBm wherever it is; a far UE shares 23 dBm over its
    /// grant, so 1 PRB has 10·log10(51) dB more SINR than 51.
    #[test]
    fn ul_power_control_follows_ts_38_213() {
        let pc = PowerControl { p0_dbm: -76.0, alpha: 1.0, mu: 1 };
        // PL 80 dB, 1 PRB: −76 + 3.01 + 80 = 7.01 dBm; 10 PRBs: 17.01 dBm, 7.01 per PRB.
        assert!((pc.tx_per_prb_dbm(23.0, 1, 80.0) - 7.0103).abs() < 1e-3);
        assert!((pc.tx_per_prb_dbm(23.0, 10, 80.0) - 7.0103).abs() < 1e-3);
        // PL 100 dB, 10 PRBs: 37 dBm wanted, 23 allowed, 13 per PRB.
        assert!((pc.tx_per_prb_dbm(23.0, 10, 100.0) - 13.0).abs() < 1e-9);
        // Full power per PRB up to 10^((23 − 7.01)/10) = 39.7 PRBs at PL 80.
        assert!((pc.full_power_prbs(23.0, 80.0) - 39.72).abs() < 0.01);
        // Fractional compensation: α 0.8 compensates 0.8 dB of each dB more of path loss.
        let frac = PowerControl { alpha: 0.8, ..pc };
        assert!((frac.tx_per_prb_dbm(23.0, 1, 90.0) - frac.tx_per_prb_dbm(23.0, 1, 80.0) - 8.0).abs() < 1e-9);

        let ul = |x: f64| {
            let spec = RadioSpec {
                fading: None,
                tx_power_dbm: 23.0,
                noise_figure_db: 5.0,
                start: [x, 0.0],
                power_control: Some(pc),
                ..spec()
            };
            RadioLink::new(spec, 1, 0, "ul")
        };
        let noise = -174.0 + 10.0 * 360e3f64.log10() + 5.0;
        let near = ul(40.0);
        assert!(pc.full_power_prbs(23.0, near.loss_db()) > 51.0, "PL {}", near.loss_db());
        assert!((near.mean_sinr_for_db(1) - near.mean_sinr_for_db(51)).abs() < 1e-9);
        assert!((near.mean_sinr_db() - (-76.0 + 3.0103 - noise)).abs() < 1e-3, "{}", near.mean_sinr_db());
        let far = ul(1500.0);
        assert!(pc.full_power_prbs(23.0, far.loss_db()) < 1.0, "PL {}", far.loss_db());
        let gain = far.mean_sinr_for_db(1) - far.mean_sinr_for_db(51);
        assert!((gain - 10.0 * 51f64.log10()).abs() < 1e-9, "{gain}");
        assert!(far.mean_sinr_db() < near.mean_sinr_db() - 20.0);
        // Without power control the power is spread over the carrier whatever the grant.
        let flat =
            RadioLink::new(RadioSpec { fading: None, tx_power_dbm: 23.0, start: [1500.0, 0.0], ..spec() }, 1, 0, "ul");
        assert_eq!(flat.mean_sinr_for_db(1), flat.mean_sinr_for_db(51));
    }

    /// Neighbour UEs under power control transmit what their own path loss calls for: near their
    /// own gNBs, much less interference at the serving gNB than at 23 dBm each.
    #[test]
    fn power_controlled_neighbour_ues_interfere_less() {
        let pc = PowerControl { p0_dbm: -76.0, alpha: 1.0, mu: 1 };
        let sites = hex_ring(6, 500.0);
        let link = |at: Vec<[f64; 2]>, pc: Option<PowerControl>| {
            let n = Neighbours { at, at_ue: false, load: 1.0, tx_power_dbm: 23.0, sites: sites.clone() };
            let spec = RadioSpec { tx_power_dbm: 23.0, neighbours: Some(n), power_control: pc, ..spec() };
            RadioLink::new(spec, 2, 0, "ul").interference_mw()
        };
        let near_own: Vec<[f64; 2]> = sites.iter().map(|s| [s[0] * 0.95, s[1] * 0.95]).collect();
        let (controlled, full) = (link(near_own.clone(), Some(pc)), link(near_own, None));
        assert!(controlled > 0.0 && controlled < full / 2.0, "{controlled} vs {full} mW");
    }

    /// With `r` layers over an N_r × N_t channel each layer gets 1/r of the power on one
    /// eigenmode: the layers' SINRs fall from the strongest mode down, and r times their sum over
    /// the mean SINR is the channel's power, E tr(HᴴH) = N_r·N_t (a flat channel: every layer's
    /// SINR is the configured one).
    #[test]
    fn layers_share_the_power_over_the_eigenmodes() {
        let spec = RadioSpec {
            pathloss: None,
            mean_sinr_db: 10.0,
            antennas: (4, 4),
            mobility: Mobility::Linear { speed_mps: 30.0, heading_deg: 0.0 },
            ..spec()
        };
        let mut l = RadioLink::new(spec.clone(), 5, 0, "dl");
        assert_eq!(l.max_layers(), Some(4));
        let (mut power, mut n, mut out, mut w) = (0.0, 0, Vec::new(), Vec::new());
        for k in 0..400 {
            l.group_sinr_for_db(k * 5_000_000, Band::carrier(51), 4, &mut out, &mut w);
            assert_eq!(out.len(), 4 * 13);
            for g in out.chunks(4) {
                assert!(g.windows(2).all(|w| w[0] >= w[1]), "{g:?}");
                power += 4.0 * g.iter().map(|db| 10f64.powf((db - 10.0) / 10.0)).sum::<f64>();
                n += 1;
            }
        }
        let power = power / f64::from(n);
        assert!((power - 16.0).abs() < 1.0, "{power}");
        // One layer on the strongest mode beats the first of two, which has half the power.
        l.group_sinr_for_db(0, Band::carrier(51), 1, &mut out, &mut w);
        let one = out.clone();
        l.group_sinr_for_db(0, Band::carrier(51), 2, &mut out, &mut w);
        assert!(one.iter().zip(out.chunks(2)).all(|(a, b)| (a - b[0] - 3.0103).abs() < 1e-3));
        // Without fading there are no eigenmodes: the layers are configured, each at the mean.
        let mut flat = RadioLink::new(RadioSpec { fading: None, ..spec }, 5, 0, "dl");
        assert_eq!(flat.max_layers(), None);
        flat.group_sinr_for_db(0, Band::carrier(51), 2, &mut out, &mut w);
        assert!(out.iter().all(|s| (s - 10.0).abs() < 1e-12));
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

    /// A band's PRB groups weigh by the band's PRBs in them (PRBs 2–8 of 51: 2 in group 0, 4 in
    /// group 1, 1 in group 2; the carrier's last group holds 3); a band past the carrier is cut.
    #[test]
    fn a_band_weighs_its_groups_by_its_prbs_in_them() {
        let g = |first, n| Band { first, n }.groups(51).collect::<Vec<_>>();
        assert_eq!(g(2, 7), [(0, 2.0), (1, 4.0), (2, 1.0)]);
        assert_eq!(g(48, 10), [(12, 3.0)]);
        assert_eq!(Band::carrier(51).groups(51).map(|x| x.1).sum::<f64>(), 51.0);
        assert_eq!(g(60, 0), [(12, 1.0)], "at least one PRB, within the carrier");
    }

    /// The effective SINR of a TB is its own PRBs': on a frequency-selective channel two halves
    /// of the carrier differ, the carrier's lies between its best and worst groups, and a group's
    /// value does not depend on what was evaluated before it (a narrow band first, or the whole
    /// carrier: the same numbers).
    #[test]
    fn a_tb_sees_the_sinr_of_its_own_prbs() {
        let wide = RadioSpec { fading: Some((TdlProfile::C, 1000e-9)), ..spec() };
        let (mut a, mut b) = (RadioLink::new(wide.clone(), 3, 0, "dl"), RadioLink::new(wide, 3, 0, "dl"));
        let mut spread = 0.0f64;
        for k in 0..50 {
            let t = k * 3_000_000;
            let low = a.effective_sinr_for_db(t, Band { first: 0, n: 24 }, 1);
            let high = a.effective_sinr_for_db(t, Band { first: 24, n: 27 }, 1);
            let all = b.effective_sinr_for_db(t, Band::carrier(51), 1);
            let mut groups = Vec::new();
            b.group_sinr_db(t, &mut groups);
            let (min, max) = groups.iter().fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
            assert!(all >= min - 1e-9 && all <= max + 1e-9, "{min} {all} {max}");
            // One group alone is that group's SINR; the same whichever link evaluated it first.
            let one = a.effective_sinr_for_db(t, Band { first: 8, n: 4 }, 1);
            assert!((one - groups[2]).abs() < 1e-9, "{one} vs {}", groups[2]);
            assert_eq!(a.effective_sinr_for_db(t, Band::carrier(51), 1), all);
            spread = spread.max((low - high).abs());
        }
        assert!(spread > 1.0, "the halves of a 1 µs-delay-spread channel differ: {spread} dB");
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
