//! Seeded randomness. Every random draw in the model comes from an [`Rng`] created from the run's
//! seed and a stream label, so adding a UE or a flow never shifts another component's draws.
//!
//! The generator is xoshiro256++ seeded through SplitMix64 (Blackman & Vigna); it is implemented
//! here, not taken from a crate, so that its output can never change under a dependency upgrade.

/// A deterministic pseudo-random stream.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
    /// The second normal of the last polar-method draw, returned by the next [`Rng::normal`].
    spare: Option<f64>,
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A stream for `label` under `seed`. Equal (seed, label) pairs give equal streams.
    pub fn new(seed: u64, label: &str) -> Self {
        // FNV-1a of the label, mixed with the seed.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in label.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let mut x = seed ^ h.rotate_left(17);
        let s = [splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x)];
        Rng { s, spare: None }
    }

    pub fn next_u64(&mut self) -> u64 {
        let r = (self.s[0].wrapping_add(self.s[3])).rotate_left(23).wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Standard normal (Marsaglia's polar method: two independent normals from one logarithm
    /// and one square root, no trigonometry; the second is kept for the next call).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        loop {
            let u = 2.0 * self.uniform() - 1.0;
            let v = 2.0 * self.uniform() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                let f = (-2.0 * s.ln() / s).sqrt();
                self.spare = Some(v * f);
                return u * f;
            }
        }
    }

    /// Log-normal with the given mean and σ of the underlying normal.
    pub fn lognormal_mean(&mut self, mean: f64, sigma: f64) -> f64 {
        self.lognormal(lognormal_mu(mean, sigma), sigma)
    }

    /// Log-normal with μ and σ of the underlying normal.
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.normal()).exp()
    }

    /// Pareto with the given mean and shape α > 1 (scale = mean (α − 1) / α).
    pub fn pareto_mean(&mut self, mean: f64, shape: f64) -> f64 {
        let scale = mean * (shape - 1.0) / shape;
        scale / (1.0 - self.uniform()).powf(1.0 / shape)
    }
}

/// μ of the normal underlying a log-normal of the given mean and σ: mean = exp(μ + σ²/2).
pub fn lognormal_mu(mean: f64, sigma: f64) -> f64 {
    mean.ln() - sigma * sigma / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, "ue0.harq");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, "ue0.harq");
                move |_| r.next_u64()
            })
            .collect();
        let c = Rng::new(7, "ue1.harq").next_u64();
        assert_eq!(a, b);
        assert_ne!(a[0], c);
    }

    #[test]
    fn distribution_means() {
        let mut r = Rng::new(1, "t");
        let n = 200_000;
        let m = |f: &mut dyn FnMut() -> f64| (0..n).map(|_| f()).sum::<f64>() / n as f64;
        assert!((m(&mut || r.uniform()) - 0.5).abs() < 0.01);
        assert!((m(&mut || r.exponential(3.0)) - 3.0).abs() < 0.05);
        assert!((m(&mut || r.lognormal_mean(2.0, 0.5)) - 2.0).abs() < 0.03);
        assert!((m(&mut || r.pareto_mean(1.0, 2.5)) - 1.0).abs() < 0.05);
        // Standard normal: mean 0, variance 1, and the pairs it returns are uncorrelated.
        let z: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let cov = z.chunks(2).map(|p| p[0] * p[1]).sum::<f64>() / (n / 2) as f64;
        assert!(mean.abs() < 0.01 && (var - 1.0).abs() < 0.01 && cov.abs() < 0.01, "{mean} {var} {cov}");
        assert!((z.iter().filter(|x| x.abs() < 1.0).count() as f64 / n as f64 - 0.6827).abs() < 0.005);
    }
}
