//! Spatial multiplexing: what the layers of a MIMO channel give.
//!
//! A PRB group's channel is an N_r × N_t matrix **H** of complex gains, one TDL process per
//! antenna pair ([`super::radio`]), independent of each other: the uncorrelated ("low
//! correlation", α = β = 0) case of TS 38.101-4 Annex B.2.3.2's MIMO correlation matrices, which
//! TR 38.901 §7.7.5.2 points to for TDL. The gNB precodes `r` layers on the channel's `r`
//! strongest right singular vectors and splits its power equally among them (srsRAN gives each
//! layer the same power); the UE separates them, so layer `i` sees
//!
//! ```text
//! SINR_i = (P / r) · λ_i / (N + I)
//! ```
//!
//! with λ_1 ≥ λ_2 ≥ … the eigenvalues of **H**ᴴ**H** (E|h|² = 1 per antenna pair). With one
//! layer this is transmit and receive beamforming (λ_1 up to N_t·N_r); each further layer halves,
//! thirds, … the power and rides a weaker eigenmode: the per-layer SINR loss of spatial
//! multiplexing. It is the bound closed-loop precoding approaches: not modelled are Type I
//! codebook quantisation of the precoder (TS 38.214 §5.2.2.2.1) and inter-layer interference
//! from a precoder older than the channel (the precoder follows the channel; the CQI and RI age).
//!
//! The UE picks its rank indicator as UEs do (TS 38.214 §5.2.2.2 leaves the choice to it): the
//! rank whose CQI carries the most bits per resource element, layers × efficiency.

/// A complex number (re, im).
pub type C = (f64, f64);

/// The largest antenna count per side the model takes (srsRAN: 1, 2 or 4 ports).
pub const MAX_ANTENNAS: usize = 4;

/// The eigenvalues of the Hermitian matrix `a` (its first `n` × `n`, `n` ≤ 4), largest first,
/// by cyclic Jacobi rotations (Golub and Van Loan, *Matrix Computations*, §8.5.2), each preceded
/// by the diagonal phase rotation that makes its pivot real. `a` is overwritten.
pub fn hermitian_eigenvalues(a: &mut [[C; MAX_ANTENNAS]; MAX_ANTENNAS], n: usize) -> [f64; MAX_ANTENNAS] {
    let mut out = [0.0; MAX_ANTENNAS];
    match n {
        0 => {}
        1 => out[0] = a[0][0].0,
        2 => {
            // The 2 × 2 case in closed form.
            let (p, q) = (a[0][0].0, a[1][1].0);
            let b2 = a[0][1].0 * a[0][1].0 + a[0][1].1 * a[0][1].1;
            let m = (p + q) / 2.0;
            let r = (((p - q) / 2.0).powi(2) + b2).sqrt();
            out[0] = m + r;
            out[1] = m - r;
        }
        _ => {
            let scale: f64 = (0..n).map(|i| a[i][i].0.abs()).sum::<f64>().max(1e-300);
            for _sweep in 0..30 {
                let off: f64 =
                    (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).fold(0.0, |s, (i, j)| {
                        let (re, im) = a[i][j];
                        s + re * re + im * im
                    });
                if off.sqrt() <= 1e-13 * scale {
                    break;
                }
                for p in 0..n - 1 {
                    for q in p + 1..n {
                        rotate(a, n, p, q);
                    }
                }
            }
            for (i, o) in out.iter_mut().enumerate().take(n) {
                *o = a[i][i].0;
            }
        }
    }
    out[..n].sort_by(|x, y| y.total_cmp(x));
    out
}

/// One Jacobi step on the pivot (p, q) of Hermitian `a`: A ← Dᴴ A D with D the phase of column q
/// that makes a_pq real, then A ← Jᵀ A J with the real rotation that zeroes it. (Indexed
/// loops: the matrix algebra reads as written in the reference.)
#[allow(clippy::needless_range_loop)]
fn rotate(a: &mut [[C; MAX_ANTENNAS]; MAX_ANTENNAS], n: usize, p: usize, q: usize) {
    let (br, bi) = a[p][q];
    let b = (br * br + bi * bi).sqrt();
    if b == 0.0 {
        return;
    }
    // e^{-jφ} with a_pq = |b| e^{jφ}: column q times it, row q times its conjugate.
    let (c_ph, s_ph) = (br / b, -bi / b);
    for row in a.iter_mut().take(n) {
        row[q] = mul(row[q], (c_ph, s_ph));
    }
    for k in 0..n {
        a[q][k] = mul(a[q][k], (c_ph, -s_ph));
    }
    let (app, aqq) = (a[p][p].0, a[q][q].0);
    let tau = (aqq - app) / (2.0 * b);
    let t = tau.signum() / (tau.abs() + (1.0 + tau * tau).sqrt());
    let t = if tau == 0.0 { 1.0 } else { t };
    let c = 1.0 / (1.0 + t * t).sqrt();
    let s = t * c;
    for row in a.iter_mut().take(n) {
        let (kp, kq) = (row[p], row[q]);
        row[p] = (c * kp.0 - s * kq.0, c * kp.1 - s * kq.1);
        row[q] = (s * kp.0 + c * kq.0, s * kp.1 + c * kq.1);
    }
    for k in 0..n {
        let (pk, qk) = (a[p][k], a[q][k]);
        a[p][k] = (c * pk.0 - s * qk.0, c * pk.1 - s * qk.1);
        a[q][k] = (s * pk.0 + c * qk.0, s * pk.1 + c * qk.1);
    }
    // Exact zeros where the rotation aimed, and a real diagonal (rounding leaves ~1e-17).
    a[p][q] = (0.0, 0.0);
    a[q][p] = (0.0, 0.0);
    a[p][p].1 = 0.0;
    a[q][q].1 = 0.0;
}

fn mul(x: C, y: C) -> C {
    (x.0 * y.0 - x.1 * y.1, x.0 * y.1 + x.1 * y.0)
}

/// The eigenvalues (largest first) of **H**ᴴ**H** for the `nr` × `nt` channel `h` (row-major:
/// `h[r * nt + t]` is receive antenna r's gain from transmit antenna t): the channel's eigenmodes'
/// power gains; `min(nr, nt)` of them are non-zero. Evaluated on the smaller Gram matrix.
#[allow(clippy::needless_range_loop)]
pub fn eigenmodes(h: &[C], nr: usize, nt: usize) -> [f64; MAX_ANTENNAS] {
    debug_assert_eq!(h.len(), nr * nt);
    let mut g = [[(0.0, 0.0); MAX_ANTENNAS]; MAX_ANTENNAS];
    // HᴴH (nt × nt) when nt ≤ nr, else HHᴴ (nr × nr): the same non-zero eigenvalues.
    type At = fn(&[C], usize, usize, usize) -> C;
    let (m, at): (usize, At) =
        if nt <= nr { (nt, |h, i, k, nt| h[k * nt + i]) } else { (nr, |h, i, k, nt| h[i * nt + k]) };
    let inner = if nt <= nr { nr } else { nt };
    for i in 0..m {
        for j in i..m {
            let (mut re, mut im) = (0.0, 0.0);
            for k in 0..inner {
                // conj(x_ki) · x_kj
                let (x, y) = (at(h, i, k, nt), at(h, j, k, nt));
                re += x.0 * y.0 + x.1 * y.1;
                im += x.0 * y.1 - x.1 * y.0;
            }
            g[i][j] = (re, im);
            g[j][i] = (re, -im);
        }
    }
    hermitian_eigenvalues(&mut g, m)
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    type M = [[C; MAX_ANTENNAS]; MAX_ANTENNAS];

    fn matmul(a: &M, b: &M, n: usize) -> M {
        let mut c = [[(0.0, 0.0); MAX_ANTENNAS]; MAX_ANTENNAS];
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let p = mul(a[i][k], b[k][j]);
                    c[i][j].0 += p.0;
                    c[i][j].1 += p.1;
                }
            }
        }
        c
    }

    fn random_hermitian(n: usize, rng: &mut Rng) -> M {
        let mut a = [[(0.0, 0.0); MAX_ANTENNAS]; MAX_ANTENNAS];
        for i in 0..n {
            a[i][i] = (4.0 * rng.uniform() - 2.0, 0.0);
            for j in i + 1..n {
                let z = (2.0 * rng.uniform() - 1.0, 2.0 * rng.uniform() - 1.0);
                a[i][j] = z;
                a[j][i] = (z.0, -z.1);
            }
        }
        a
    }

    #[test]
    fn eigenvalues_have_the_matrixs_power_sums() {
        // tr(A^k) = Σ λ^k for k = 1..n determines the n eigenvalues (Newton's identities).
        let mut rng = Rng::new(7, "mimo.test");
        for n in 1..=4 {
            for _ in 0..200 {
                let a = random_hermitian(n, &mut rng);
                let lam = hermitian_eigenvalues(&mut a.clone(), n);
                assert!(lam[..n].windows(2).all(|w| w[0] >= w[1]), "sorted: {lam:?}");
                let mut p = a;
                for k in 1..=n {
                    let tr: f64 = (0..n).map(|i| p[i][i].0).sum();
                    let sum: f64 = lam[..n].iter().map(|l| l.powi(k as i32)).sum();
                    assert!((tr - sum).abs() < 1e-9 * (1.0 + tr.abs()), "n {n} k {k}: {tr} vs {sum}");
                    p = matmul(&p, &a, n);
                }
            }
        }
    }

    #[test]
    fn a_diagonal_and_a_rank_one_channel() {
        let mut d = [[(0.0, 0.0); MAX_ANTENNAS]; MAX_ANTENNAS];
        for (i, v) in [3.0, 1.0, 4.0].into_iter().enumerate() {
            d[i][i] = (v, 0.0);
        }
        assert_eq!(hermitian_eigenvalues(&mut d, 3)[..3], [4.0, 3.0, 1.0]);
        // h = u vᴴ has one eigenmode of power |u|²|v|²: transmit and receive beamforming.
        let u = [(1.0, 0.5), (0.0, -1.0), (0.3, 0.2), (-0.7, 0.1)];
        let v = [(0.2, -0.4), (1.0, 0.0)];
        let h: Vec<C> = u.iter().flat_map(|x| v.iter().map(move |y| mul(*x, (y.0, -y.1)))).collect();
        let n2 = |z: &[C]| z.iter().map(|c| c.0 * c.0 + c.1 * c.1).sum::<f64>();
        let lam = eigenmodes(&h, 4, 2);
        assert!((lam[0] - n2(&u) * n2(&v)).abs() < 1e-12, "{lam:?}");
        assert!(lam[1].abs() < 1e-12);
        // The same channel seen the other way round (2 × 4) has the same eigenmodes.
        let ht: Vec<C> = (0..2).flat_map(|t| (0..4).map(move |r| (t, r))).map(|(t, r)| h[r * 2 + t]).collect();
        let lam_t = eigenmodes(&ht, 2, 4);
        assert!((lam_t[0] - lam[0]).abs() < 1e-12);
    }

    #[test]
    fn iid_rayleigh_eigenmodes_have_the_known_means() {
        // E[tr HᴴH] = N_r·N_t; the strongest of a 2 × 2 i.i.d. Rayleigh channel's two modes has
        // mean 3.5 (the ordered eigenvalues of a complex Wishart W(2, 2): E[λ_max] = 7/2) and the
        // weaker 0.5 — what a second layer costs.
        let mut rng = Rng::new(3, "mimo.wishart");
        let gauss = |rng: &mut Rng| {
            let (u, v) = (rng.uniform().max(1e-300), rng.uniform());
            let r = (-u.ln()).sqrt();
            (r * (2.0 * std::f64::consts::PI * v).cos(), r * (2.0 * std::f64::consts::PI * v).sin())
        };
        let n = 40_000;
        let (mut l1, mut l2, mut tr44) = (0.0, 0.0, 0.0);
        for _ in 0..n {
            let h: Vec<C> = (0..4).map(|_| gauss(&mut rng)).collect();
            let lam = eigenmodes(&h, 2, 2);
            l1 += lam[0];
            l2 += lam[1];
            let h4: Vec<C> = (0..16).map(|_| gauss(&mut rng)).collect();
            tr44 += eigenmodes(&h4, 4, 4).iter().sum::<f64>();
        }
        let (l1, l2, tr44) = (l1 / n as f64, l2 / n as f64, tr44 / n as f64);
        assert!((l1 - 3.5).abs() < 0.05, "{l1}");
        assert!((l2 - 0.5).abs() < 0.02, "{l2}");
        assert!((tr44 - 16.0).abs() < 0.15, "{tr44}");
    }
}
