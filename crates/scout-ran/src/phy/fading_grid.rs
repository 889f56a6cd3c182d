//! A link's fading on the grid of instants it is evaluated at, stepped instead of summed.
//!
//! A link evaluates its channel once per coherence interval Δ ([`super::radio::RadioLink`]'s
//! quantum), at `t = q·Δ`. Summing each path's sinusoids there costs a cosine per sinusoid per
//! instant, most of what a faded link cost. Here each sinusoid's phasor `e^{j(ω t + φ)}` is
//! computed directly at every [`ANCHOR`]-th instant and carried from it to the next instants by
//! its rotation per step `e^{jωΔ}`: one complex multiply. The gains at `q` depend on `q` alone —
//! the same operations from the same anchor, whichever instants were asked before (a step from
//! an instant already reached repeats the operations a walk from the anchor would) — so a run
//! gives the same channel whatever its schedule asks; they differ from
//! [`TdlChannel::path_gain`]'s direct sums by rounding only (below 10⁻¹², tested).

use std::f64::consts::FRAC_PI_2;

use super::fading::{cos, Sinusoids, TdlChannel, SINUSOIDS};

/// Instants per anchor: the phasors are carried to `q = 0, ANCHOR, 2·ANCHOR, …` from the last
/// root by the rotation per anchor `e^{jω·ANCHOR·Δ}`, and from there to the instants between.
pub const ANCHOR: i64 = 32;
/// Anchors per root: the phasors are computed directly at every `ROOT`-th anchor (a cosine per
/// sinusoid and quadrature). Rounding grows by one multiply's per step: at most 31 + 31 steps from
/// a root stay far below the tested 10⁻¹².
pub const ROOT: i64 = 32;

/// Every path's fading gain of a link's TDL channels (its antenna pairs) at the instants `q·Δ`.
#[derive(Clone, Debug)]
pub struct FadingGrid {
    step_ns: i64,
    /// Per sinusoid, every channel's paths' in the order of `paths`: ω (rad/s), φ, and the
    /// rotation per step `e^{jωΔ}`.
    w: Vec<f64>,
    phi: Vec<f64>,
    rot_re: Vec<f64>,
    rot_im: Vec<f64>,
    /// The rotation per anchor `e^{jω·ANCHOR·Δ}` (computed directly), and the phasors at the root
    /// `root`.
    jump_re: Vec<f64>,
    jump_im: Vec<f64>,
    root_re: Vec<f64>,
    root_im: Vec<f64>,
    root: Option<i64>,
    /// The phasors at the anchor `anchor` (of the root's), and at the instant `at` (of the same
    /// anchor).
    anchor_re: Vec<f64>,
    anchor_im: Vec<f64>,
    anchor: Option<i64>,
    re: Vec<f64>,
    im: Vec<f64>,
    at: i64,
    /// Per path, path-major over the channels (`[path · channels + channel]`): its first
    /// sinusoid, and whether it is a Rayleigh tap (`2·SINUSOIDS` of them: in-phase, then
    /// quadrature) or a LOS path (one).
    paths: Vec<(usize, bool)>,
}

impl FadingGrid {
    /// The grid of `channels` (each with the same paths) at steps of `step_ns`.
    pub fn new(channels: &[TdlChannel], step_ns: i64) -> Self {
        let mut g = FadingGrid {
            step_ns,
            w: Vec::new(),
            phi: Vec::new(),
            rot_re: Vec::new(),
            rot_im: Vec::new(),
            jump_re: Vec::new(),
            jump_im: Vec::new(),
            root_re: Vec::new(),
            root_im: Vec::new(),
            root: None,
            anchor_re: Vec::new(),
            anchor_im: Vec::new(),
            anchor: None,
            re: Vec::new(),
            im: Vec::new(),
            at: 0,
            paths: Vec::new(),
        };
        for k in 0..channels.first().map_or(0, TdlChannel::nof_paths) {
            for ch in channels {
                let first = g.w.len();
                match ch.sinusoids(k) {
                    Sinusoids::Los { w, phi } => {
                        g.w.push(w);
                        g.phi.push(phi);
                        g.paths.push((first, false));
                    }
                    Sinusoids::Rayleigh { w, phi } => {
                        for quadrature in 0..2 {
                            g.w.extend_from_slice(w[quadrature]);
                            g.phi.extend_from_slice(phi[quadrature]);
                        }
                        g.paths.push((first, true));
                    }
                }
            }
        }
        let dt = step_ns as f64 * 1e-9;
        (g.rot_re, g.rot_im) = g.w.iter().map(|w| cis(w * dt)).unzip();
        (g.jump_re, g.jump_im) = g.w.iter().map(|w| cis(w * (ANCHOR as f64 * dt))).unzip();
        g
    }

    /// Every path's gain at `t = q·Δ`, path-major over the channels, into `re` and `im` (each as
    /// long as the paths times the channels).
    pub fn gains_at(&mut self, q: i64, re: &mut [f64], im: &mut [f64]) {
        self.advance_to(q);
        let scale = (1.0 / SINUSOIDS as f64).sqrt();
        for ((&(first, rayleigh), r), i) in self.paths.iter().zip(re.iter_mut()).zip(im.iter_mut()) {
            if rayleigh {
                let s = &self.re[first..first + 2 * SINUSOIDS];
                *r = s[..SINUSOIDS].iter().sum::<f64>() * scale;
                *i = s[SINUSOIDS..].iter().sum::<f64>() * scale;
            } else {
                (*r, *i) = (self.re[first], self.im[first]);
            }
        }
    }

    /// The phasors at instant `q`: from the instant reached last when it is of `q`'s anchor and
    /// not after `q`, otherwise from the anchor — itself reached from the anchor reached last when
    /// that is of the same root and not after it, otherwise from the root (computed directly when
    /// it is a new one).
    fn advance_to(&mut self, q: i64) {
        let anchor = q.div_euclid(ANCHOR) * ANCHOR;
        let root = anchor.div_euclid(ANCHOR * ROOT) * (ANCHOR * ROOT);
        if self.root != Some(root) {
            let t = (root * self.step_ns) as f64 * 1e-9;
            (self.root_re, self.root_im) = self.w.iter().zip(&self.phi).map(|(w, phi)| cis(w * t + phi)).unzip();
            self.root = Some(root);
            self.anchor = None;
        }
        let fresh = self.anchor != Some(anchor);
        if fresh {
            let from = match self.anchor {
                Some(a) if a <= anchor && a >= root => a,
                _ => {
                    self.anchor_re.clone_from(&self.root_re);
                    self.anchor_im.clone_from(&self.root_im);
                    root
                }
            };
            for _ in (from..anchor).step_by(ANCHOR as usize) {
                rotate(&mut self.anchor_re, &mut self.anchor_im, &self.jump_re, &self.jump_im);
            }
            self.anchor = Some(anchor);
        }
        if fresh || self.at > q {
            self.re.clone_from(&self.anchor_re);
            self.im.clone_from(&self.anchor_im);
            self.at = anchor;
        }
        for _ in self.at..q {
            rotate(&mut self.re, &mut self.im, &self.rot_re, &self.rot_im);
        }
        self.at = q;
    }
}

/// Every phasor `re + j·im` times its rotation `cr + j·ci`.
fn rotate(re: &mut [f64], im: &mut [f64], cr: &[f64], ci: &[f64]) {
    for (((re, im), &cr), &ci) in re.iter_mut().zip(im.iter_mut()).zip(cr).zip(ci) {
        (*re, *im) = (*re * cr - *im * ci, *re * ci + *im * cr);
    }
}

/// `(cos x, sin x)` by the fading's cosine.
fn cis(x: f64) -> (f64, f64) {
    (cos(x), cos(x - FRAC_PI_2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::fading::TdlProfile;
    use crate::rng::Rng;

    /// Two pairs of channels: TDL-C (Rayleigh taps only) and TDL-D (a LOS path first).
    fn channels() -> Vec<TdlChannel> {
        [TdlProfile::C, TdlProfile::D]
            .into_iter()
            .flat_map(|p| (0..2).map(move |k| TdlChannel::new(p, 300e-9, 97.0, Rng::new(k, "grid"))))
            .collect()
    }

    /// The stepped gains are the direct sums' to 10⁻¹², at every instant of several anchors: at
    /// 30 km/h (f_D 97 Hz, the 330 µs quantum), 3 km/h (9.7 Hz, 1 ms: the smallest steps of
    /// phase, where a recurrence's rounding would grow most) and 120 km/h (389 Hz, 82 µs).
    #[test]
    fn stepped_gains_are_the_direct_sums() {
        let speeds = [(97.0, 330_000), (9.7, 1_000_000), (389.0, 82_000)];
        for (doppler, step_ns) in speeds {
            let all: Vec<TdlChannel> = [TdlProfile::C, TdlProfile::D]
                .into_iter()
                .flat_map(|p| (0..2).map(move |k| TdlChannel::new(p, 300e-9, doppler, Rng::new(k, "grid"))))
                .collect();
            stepped_gains_match(&all, step_ns);
        }
    }

    fn stepped_gains_match(channels: &[TdlChannel], step_ns: i64) {
        for pair in channels.chunks(2) {
            let mut g = FadingGrid::new(pair, step_ns);
            let n = pair.len() * pair[0].nof_paths();
            let (mut re, mut im) = (vec![0.0; n], vec![0.0; n]);
            let far = (ANCHOR * ROOT - 40..ANCHOR * ROOT + 40).chain([3 * ANCHOR * ROOT - 1, 5 * ANCHOR * ROOT + 31]);
            for q in (0..4 * ANCHOR + 3).chain(far) {
                g.gains_at(q, &mut re, &mut im);
                let t = (q * step_ns) as f64 * 1e-9;
                for k in 0..pair[0].nof_paths() {
                    for (c, ch) in pair.iter().enumerate() {
                        let (dr, di) = ch.path_gain(k, t);
                        let i = k * pair.len() + c;
                        assert!(
                            (re[i] - dr).abs() < 1e-12 && (im[i] - di).abs() < 1e-12,
                            "q {q} path {k}: {} {}",
                            re[i] - dr,
                            im[i] - di
                        );
                    }
                }
            }
        }
    }

    /// The gains at an instant are the same bits whichever instants were asked before: in order,
    /// backwards, skipping, and alone.
    #[test]
    fn the_gains_at_an_instant_do_not_depend_on_what_was_asked_before() {
        let all = channels();
        let chs = &all[..2];
        let n = chs.len() * chs[0].nof_paths();
        let at = |order: &[i64]| {
            let mut g = FadingGrid::new(chs, 82_000);
            let (mut re, mut im) = (vec![0.0; n], vec![0.0; n]);
            let mut out = std::collections::BTreeMap::new();
            for &q in order {
                g.gains_at(q, &mut re, &mut im);
                out.insert(q, (re.clone(), im.clone()));
            }
            out
        };
        let forward = at(&(0..100).collect::<Vec<_>>());
        let roots = [2100, 40, 1023, 1024, 3000, 1056, 99, 2047, 2048];
        let forward: std::collections::BTreeMap<_, _> = forward.into_iter().chain(at(&roots)).collect();
        let orders = [
            (0..100).rev().collect::<Vec<_>>(),
            vec![70, 3, 31, 32, 33, 95, 40, 39, 64, 0, 99],
            vec![57],
            roots.to_vec(),
        ];
        for order in orders.into_iter().chain([vec![3000, 1024, 2048, 1023], vec![2100, 2047]]) {
            for (q, v) in at(&order) {
                assert_eq!(v, forward[&q], "instant {q} after {order:?}");
            }
        }
    }
}
