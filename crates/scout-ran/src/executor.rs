//! Compute executors: a named pool of workers serving a FIFO queue of jobs, each taking a sampled
//! service time. This is the software queueing SCOUT (§5) found at GTP-U and F1-U: under load, jobs
//! wait for a worker even though no protocol buffer holds them.
//!
//! Jobs carry a strand key (the UE): two jobs of one key never run at once and start in submission
//! order, as srsRAN runs each UE's CU-UP work on a per-UE strand. Without it a multi-worker pool would
//! assign PDCP COUNTs out of arrival order.

use std::collections::VecDeque;

use crate::config::{ExecutorCfg, ServiceSampler};
use crate::rng::Rng;
use crate::Instant;

/// One executor. Jobs are opaque to it (`J`).
pub struct Executor<J> {
    cfg: ExecutorCfg,
    service: ServiceSampler,
    busy: u32,
    /// Strand keys with a job in service.
    busy_keys: Vec<u32>,
    queue: VecDeque<(J, u32, u32)>,
    queue_bytes: u64,
    rng: Rng,
}

/// What [`Executor::submit`] did with a job.
pub enum Submit<J> {
    /// A worker took it at once: it finishes after `service_ns`.
    Started { job: J, service_ns: i64 },
    /// It waits in the queue.
    Queued,
    /// The queue was full.
    Rejected(J),
}

impl<J> Executor<J> {
    pub fn new(cfg: &ExecutorCfg, rng: Rng) -> Self {
        Executor {
            cfg: cfg.clone(),
            service: cfg.service.sampler(),
            busy: 0,
            busy_keys: Vec::new(),
            queue: VecDeque::new(),
            queue_bytes: 0,
            rng,
        }
    }

    fn service(&mut self, bytes: u32) -> i64 {
        self.service.sample_ns(&mut self.rng) + (self.cfg.per_byte_ns * f64::from(bytes)) as i64
    }

    /// Submits a job of `bytes` on strand `key` at `_now`.
    pub fn submit(&mut self, _now: Instant, job: J, bytes: u32, key: u32) -> Submit<J> {
        if self.busy < self.cfg.workers && !self.busy_keys.contains(&key) {
            self.busy += 1;
            self.busy_keys.push(key);
            let service_ns = self.service(bytes);
            Submit::Started { job, service_ns }
        } else if self.queue.len() as u32 >= self.cfg.queue_limit {
            Submit::Rejected(job)
        } else {
            self.queue.push_back((job, bytes, key));
            self.queue_bytes += u64::from(bytes);
            Submit::Queued
        }
    }

    /// A worker finished the job of strand `key`; it takes the oldest queued job whose strand is
    /// free, if any, returning it and its service time.
    pub fn finish(&mut self, key: u32) -> Option<(J, i64)> {
        if let Some(i) = self.busy_keys.iter().position(|k| *k == key) {
            self.busy_keys.swap_remove(i);
        }
        let next = self.queue.iter().position(|(_, _, k)| !self.busy_keys.contains(k));
        match next.and_then(|i| self.queue.remove(i)) {
            Some((job, bytes, k)) => {
                self.queue_bytes -= u64::from(bytes);
                self.busy_keys.push(k);
                let s = self.service(bytes);
                Some((job, s))
            }
            None => {
                self.busy -= 1;
                None
            }
        }
    }

    pub fn queue_pkts(&self) -> u32 {
        self.queue.len() as u32
    }

    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes
    }
}

/// A FIFO link with serialisation at a rate and a propagation delay (N3, N6, F1-U midhaul).
#[derive(Clone, Debug)]
pub struct Link {
    ns_per_byte: f64,
    delay_ns: i64,
    free_at: Instant,
}

impl Link {
    pub fn new(cfg: &crate::config::LinkCfg) -> Self {
        let ns_per_byte = if cfg.rate_mbps > 0.0 { 8000.0 / cfg.rate_mbps } else { 0.0 };
        Link { ns_per_byte, delay_ns: (cfg.delay_us * 1000.0) as i64, free_at: 0 }
    }

    /// When a packet of `bytes` sent at `now` arrives at the far end.
    pub fn send(&mut self, now: Instant, bytes: u32) -> Instant {
        let start = now.max(self.free_at);
        self.free_at = start + (self.ns_per_byte * f64::from(bytes)).ceil() as i64;
        self.free_at + self.delay_ns
    }
}
