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

/// The eigenvalues of the Hermitian positive semi-definite matrix `a` (its first `n` × `n`, `n`
/// ≤ 4), largest first. The characteristic polynomial's coefficients are the sums of principal
/// minors (e₁ the trace … e_n the determinant); its roots, all real and non-negative, are found
/// from the largest down by Newton's method started above each (from e₁, then from the root
/// found: monotone convergence, a polynomial with real roots only) and deflated one by one: on
/// 4 × 4 about a third of the time cyclic Jacobi rotations took (bench/radio.sh); exact to ~10⁻⁹
/// on a full-rank matrix, while a singular one's zero eigenvalues come out within ~10⁻⁵ of the
/// largest (tested).
pub fn hermitian_eigenvalues(a: &[[C; MAX_ANTENNAS]; MAX_ANTENNAS], n: usize) -> [f64; MAX_ANTENNAS] {
    let mut out = [0.0; MAX_ANTENNAS];
    let d = |i: usize| a[i][i].0;
    let abs2 = |i: usize, j: usize| a[i][j].0 * a[i][j].0 + a[i][j].1 * a[i][j].1;
    match n {
        0 => return out,
        1 => {
            out[0] = d(0);
            return out;
        }
        2 => {
            let (p, q) = (d(0), d(1));
            let m = (p + q) / 2.0;
            let r = (((p - q) / 2.0).powi(2) + abs2(0, 1)).sqrt();
            out[0] = m + r;
            out[1] = (m - r).max(0.0);
            return out;
        }
        _ => {}
    }
    // Monic coefficients c[k] of λ^(n−k), k = 0..=n: (1, −e₁, e₂, −e₃, e₄).
    let e1: f64 = (0..n).map(d).sum();
    let mut e2 = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            e2 += d(i) * d(j) - abs2(i, j);
        }
    }
    let det3 = |i: usize, j: usize, k: usize| {
        let cyc = mul(mul(a[i][j], a[j][k]), a[k][i]).0;
        d(i) * d(j) * d(k) + 2.0 * cyc - d(i) * abs2(j, k) - d(j) * abs2(i, k) - d(k) * abs2(i, j)
    };
    let (e3, e4) = if n == 3 {
        (det3(0, 1, 2), 0.0)
    } else {
        (det3(0, 1, 2) + det3(0, 1, 3) + det3(0, 2, 3) + det3(1, 2, 3), determinant4(a))
    };
    let mut c = [1.0, -e1, e2, -e3, e4];
    let mut deg = n;
    // Start at ‖A‖_F = √(Σλ²): above the largest root, and nearer it than the trace Σλ.
    let mut x = (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| abs2(i, j)).sum::<f64>().sqrt();
    let tol = 1e-12 * e1.abs().max(1e-300);
    for root in out.iter_mut().take(n) {
        // Newton from above the largest remaining root.
        for _ in 0..100 {
            let (mut p, mut dp) = (c[0], 0.0);
            for &ck in &c[1..=deg] {
                dp = dp * x + p;
                p = p * x + ck;
            }
            if dp <= 0.0 || p <= 0.0 {
                break;
            }
            let step = p / dp;
            x -= step;
            if step <= tol {
                break;
            }
        }
        *root = x.max(0.0);
        // Deflate: c(λ) / (λ − x), synthetic division.
        for k in 1..deg {
            c[k] += c[k - 1] * x;
        }
        deg -= 1;
    }
    out
}

/// det(A) of a 4 × 4 complex matrix by Gaussian elimination with partial pivoting (real for a
/// Hermitian one: its real part is returned).
fn determinant4(a: &[[C; MAX_ANTENNAS]; MAX_ANTENNAS]) -> f64 {
    let mut m = *a;
    let mut det: C = (1.0, 0.0);
    for col in 0..4 {
        let norm = |z: C| z.0 * z.0 + z.1 * z.1;
        let piv = (col..4).max_by(|&x, &y| norm(m[x][col]).total_cmp(&norm(m[y][col]))).unwrap_or(col);
        if norm(m[piv][col]) == 0.0 {
            return 0.0;
        }
        if piv != col {
            m.swap(piv, col);
            det = (-det.0, -det.1);
        }
        let p = m[col][col];
        det = mul(det, p);
        let inv = {
            let n = norm(p);
            (p.0 / n, -p.1 / n)
        };
        let pivot_row = m[col];
        for row in m.iter_mut().skip(col + 1) {
            let f = mul(row[col], inv);
            for (x, &y) in row.iter_mut().zip(&pivot_row).skip(col) {
                let t = mul(f, y);
                *x = (x.0 - t.0, x.1 - t.1);
            }
        }
    }
    det.0
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
    hermitian_eigenvalues(&g, m)
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

    /// A random Gram matrix HᴴH of an `nr` × `n` Gaussian H: positive semi-definite, singular
    /// when `nr` < `n`.
    fn random_gram(n: usize, nr: usize, rng: &mut Rng) -> M {
        let h: Vec<C> = (0..nr * n).map(|_| (2.0 * rng.uniform() - 1.0, 2.0 * rng.uniform() - 1.0)).collect();
        let mut g = [[(0.0, 0.0); MAX_ANTENNAS]; MAX_ANTENNAS];
        for i in 0..n {
            for j in 0..n {
                for k in 0..nr {
                    let (x, y) = (h[k * n + i], h[k * n + j]);
                    g[i][j].0 += x.0 * y.0 + x.1 * y.1;
                    g[i][j].1 += x.0 * y.1 - x.1 * y.0;
                }
            }
        }
        g
    }

    #[test]
    fn eigenvalues_have_the_matrixs_power_sums() {
        // tr(A^k) = Σ λ^k for k = 1..n determines the n eigenvalues (Newton's identities). Gram
        // matrices HᴴH of N_r × n channels: full rank when N_r ≥ n (what `eigenmodes` builds, the
        // smaller side's: to 10⁻⁹), singular otherwise (its repeated zero roots move by the k-th
        // root of the coefficients' rounding: to 10⁻⁵ of the largest, a mode 50 dB below it).
        let mut rng = Rng::new(7, "mimo.test");
        for n in 1..=4 {
            for nr in 1..=6 {
                let tol = if nr >= n { 1e-9 } else { 1e-5 };
                for _ in 0..300 {
                    let a = random_gram(n, nr, &mut rng);
                    let lam = hermitian_eigenvalues(&a, n);
                    assert!(lam[..n].windows(2).all(|w| w[0] >= w[1]), "sorted: {lam:?}");
                    assert!(lam.iter().all(|l| *l >= 0.0));
                    let mut p = a;
                    for k in 1..=n {
                        let tr: f64 = (0..n).map(|i| p[i][i].0).sum();
                        let sum: f64 = lam[..n].iter().map(|l| l.powi(k as i32)).sum();
                        let scale = lam[0].powi(k as i32).max(1e-300);
                        assert!((tr - sum).abs() < tol * scale, "n {n} nr {nr} k {k}: {tr} vs {sum} {lam:?}");
                        p = matmul(&p, &a, n);
                    }
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
        let lam = hermitian_eigenvalues(&d, 3);
        assert!([4.0, 3.0, 1.0].iter().zip(lam).all(|(a, b)| (a - b).abs() < 1e-12), "{lam:?}");
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
