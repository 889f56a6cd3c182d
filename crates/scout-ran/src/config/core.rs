//! The core and the CU-UP: compute executors (service times, queues), links, slices.

use serde::Deserialize;

/// Service-time distribution of a compute executor or a processing step.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, tag = "dist", rename_all = "lowercase")]
pub enum ServiceTime {
    /// Always `mean_us`.
    Constant {
        mean_us: f64,
    },
    Exponential {
        mean_us: f64,
    },
    /// Log-normal with the given mean and σ of the underlying normal.
    Lognormal {
        mean_us: f64,
        sigma: f64,
    },
}

impl ServiceTime {
    pub fn mean_us(&self) -> f64 {
        match self {
            ServiceTime::Constant { mean_us }
            | ServiceTime::Exponential { mean_us }
            | ServiceTime::Lognormal { mean_us, .. } => *mean_us,
        }
    }

    /// The distribution with its parameters worked out once, for repeated sampling.
    pub fn sampler(&self) -> ServiceSampler {
        match *self {
            ServiceTime::Constant { mean_us } => ServiceSampler::Constant(mean_us),
            ServiceTime::Exponential { mean_us } => ServiceSampler::Exponential(mean_us),
            ServiceTime::Lognormal { mean_us, sigma } => {
                ServiceSampler::Lognormal { mu: crate::rng::lognormal_mu(mean_us, sigma), sigma }
            }
        }
    }
}

/// A [`ServiceTime`] ready to sample (log-normal: μ of the underlying normal precomputed).
#[derive(Clone, Copy, Debug)]
pub enum ServiceSampler {
    Constant(f64),
    Exponential(f64),
    Lognormal { mu: f64, sigma: f64 },
}

impl ServiceSampler {
    /// One service time in ns (the distribution is in µs).
    #[inline]
    pub fn sample_ns(self, rng: &mut crate::rng::Rng) -> i64 {
        let us = match self {
            ServiceSampler::Constant(mean_us) => mean_us,
            ServiceSampler::Exponential(mean_us) => rng.exponential(mean_us),
            ServiceSampler::Lognormal { mu, sigma } => rng.lognormal(mu, sigma),
        };
        (us * 1000.0).round().max(0.0) as i64
    }
}

/// A pool of workers with a FIFO queue (the software queueing of SCOUT §5).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorCfg {
    pub workers: u32,
    pub service: ServiceTime,
    /// Jobs waiting beyond this are dropped (`exec_queue_full`). srsRAN: GTP-U 2046, F1-U 8192.
    #[serde(default = "default_exec_queue")]
    pub queue_limit: u32,
    /// Service time added per byte of the packet, in ns (ciphering, copies).
    #[serde(default)]
    pub per_byte_ns: f64,
}

fn default_exec_queue() -> u32 {
    8192
}

impl ExecutorCfg {
    pub fn new(workers: u32, mean_us: f64, queue_limit: u32) -> Self {
        ExecutorCfg { workers, service: ServiceTime::Lognormal { mean_us, sigma: 0.5 }, queue_limit, per_byte_ns: 0.0 }
    }

    /// What the model can run: 1 to 1024 workers, a queue, a finite service mean up to a second,
    /// a lognormal σ up to 10, at most 1 ms per byte (a service of 10^65 µs once overflowed the
    /// clock). The error names the sub-key and the accepted range.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(1..=1024).contains(&self.workers) {
            return Err(("workers", format!("{}; accepted: 1..=1024", self.workers)));
        }
        if self.queue_limit == 0 {
            return Err(("queue_limit", "0; accepted: >= 1".into()));
        }
        let mean = self.service.mean_us();
        if !(0.0..=1e6).contains(&mean) {
            return Err(("service.mean_us", format!("{mean}; accepted: 0 <= mean_us <= 1000000 (1 s)")));
        }
        if let ServiceTime::Lognormal { sigma, .. } = self.service {
            if !(0.0..=10.0).contains(&sigma) {
                return Err(("service.sigma", format!("{sigma}; accepted: 0 <= sigma <= 10")));
            }
        }
        if !(0.0..=1e6).contains(&self.per_byte_ns) {
            return Err(("per_byte_ns", format!("{}; accepted: 0 <= per_byte_ns <= 1000000", self.per_byte_ns)));
        }
        Ok(())
    }
}

/// A point-to-point link: serialisation at `rate_mbps` (0 = infinite) plus propagation `delay_us`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkCfg {
    pub delay_us: f64,
    pub rate_mbps: f64,
}

impl Default for LinkCfg {
    fn default() -> Self {
        LinkCfg { delay_us: 100.0, rate_mbps: 10_000.0 }
    }
}

impl LinkCfg {
    /// A delay from 0 to 1 s and a rate from 0 (infinite) to 10 Tbit/s, both finite.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(0.0..=1e6).contains(&self.delay_us) {
            return Err(("delay_us", format!("{}; accepted: 0 <= delay_us <= 1000000 (1 s)", self.delay_us)));
        }
        if !(0.0..=1e7).contains(&self.rate_mbps) {
            return Err((
                "rate_mbps",
                format!("{}; accepted: 0 (no serialisation) <= rate_mbps <= 1e7", self.rate_mbps),
            ));
        }
        Ok(())
    }
}

/// The CU-UP's compute executors (srsRAN: NG-U GTP-U rx, per-UE PDCP workers, F1-U).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CuUpCfg {
    pub gtpu_rx: ExecutorCfg,
    pub cuup: ExecutorCfg,
    pub f1u: ExecutorCfg,
    /// SDAP processing time per packet, ns (runs on the `cuup` worker before PDCP).
    pub sdap_proc_ns: i64,
}

impl Default for CuUpCfg {
    fn default() -> Self {
        CuUpCfg {
            gtpu_rx: ExecutorCfg::new(1, 4.0, 2046),
            cuup: ExecutorCfg { per_byte_ns: 1.0, ..ExecutorCfg::new(2, 6.0, 8192) },
            f1u: ExecutorCfg::new(1, 3.0, 8192),
            sdap_proc_ns: 300,
        }
    }
}

/// One slice served by its own UPF stage.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceCfg {
    pub name: String,
    #[serde(default = "default_sst")]
    pub sst: u8,
    #[serde(default)]
    pub sd: Option<u32>,
    #[serde(default = "default_upf_exec")]
    pub upf: ExecutorCfg,
    /// The slice's UPF is a real process outside the model (`scout emulate` only, docs/upf.md):
    /// the model's journey of its packets begins (downlink) and ends (uplink) at the gNB's N3;
    /// its `upf` stage is not used for them.
    #[serde(default)]
    pub upf_process: bool,
    /// With `upf_process`: the SMF modifies a PDU session of the slice this often (a path switch
    /// of its downlink to the same tunnel: the whole procedure, rules compiled again), timing
    /// each response — N4 latency under the data path's load (seed 001). 0: never.
    #[serde(default)]
    pub upf_modify_every_ms: f64,
}

fn default_sst() -> u8 {
    1
}

fn default_upf_exec() -> ExecutorCfg {
    ExecutorCfg::new(2, 5.0, 8192)
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoreCfg {
    pub slices: Vec<SliceCfg>,
    pub n3: LinkCfg,
    pub n6: LinkCfg,
    /// F1-U midhaul between CU-UP and DU.
    pub midhaul: LinkCfg,
}

impl Default for CoreCfg {
    fn default() -> Self {
        CoreCfg {
            slices: vec![SliceCfg {
                name: "default".into(),
                sst: 1,
                sd: None,
                upf: default_upf_exec(),
                upf_process: false,
                upf_modify_every_ms: 0.0,
            }],
            // A single-server testbed (SCOUT §4: srsRAN CU/DU and Open5GS on one COTS server):
            // links are the host's own, tens of µs. Set them for a distributed deployment.
            n3: LinkCfg { delay_us: 20.0, rate_mbps: 10_000.0 },
            n6: LinkCfg { delay_us: 20.0, rate_mbps: 10_000.0 },
            midhaul: LinkCfg { delay_us: 10.0, rate_mbps: 10_000.0 },
        }
    }
}
