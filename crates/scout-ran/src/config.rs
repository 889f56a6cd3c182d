//! Model configuration. Section and key names follow srsRAN Project's `gnb.yaml` where srsRAN has
//! the parameter (e.g. `cell_cfg.channel_bandwidth_MHz`, `tdd_ul_dl_cfg.nof_dl_slots`,
//! `qos[].rlc.am.tx.t-poll-retransmit`, `qos[].pdcp.tx.discard_timer`); Scout's own sections
//! (`core`, `cu_up`, `ues`) use snake_case. Unknown keys are rejected (`deny_unknown_fields`).
//! Defaults are srsRAN's, with the source named on each.

use serde::Deserialize;

use crate::phy::tdd::{Duplex, TddPattern};

/// A duration in ms where srsRAN uses `-1` (or here also `infinity`) for "no timer".
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum MaybeMs {
    Ms(i64),
    Word(Infinity),
}

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Infinity {
    Infinity,
}

impl MaybeMs {
    /// The duration in ns, or `None` for infinity / -1.
    pub fn ns(self) -> Option<i64> {
        match self {
            MaybeMs::Ms(ms) if ms >= 0 => Some(ms * 1_000_000),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CellCfg {
    /// TS 38.101-1 channel bandwidth. srsRAN default 20 MHz.
    #[serde(rename = "channel_bandwidth_MHz")]
    pub channel_bandwidth_mhz: u32,
    /// Subcarrier spacing in kHz (15, 30, 60, 120). srsRAN default 30 for TDD bands.
    pub common_scs: u32,
    /// NR band; FDD bands make the cell FDD. srsRAN default n78 (TDD).
    pub band: u32,
    pub tdd_ul_dl_cfg: TddPattern,
    pub pdsch: PdschCfg,
    pub pusch: PuschCfg,
    pub pucch: PucchCfg,
    pub scheduler: SchedulerCfg,
    pub mac_cell_group: MacCellGroupCfg,
    /// PDCCH symbols at the start of each DL slot (CORESET duration). srsRAN: 1–2; default 2.
    pub pdcch_symbols: u8,
    /// DMRS symbols per PDSCH/PUSCH (type A pos2: 1). TS 38.211 §7.4.1.1.
    pub dmrs_symbols: u8,
    /// MIMO layers (srsRAN `nof_antennas_dl` caps it); 1 by default.
    pub layers: u8,
}

impl Default for CellCfg {
    fn default() -> Self {
        CellCfg {
            channel_bandwidth_mhz: 20,
            common_scs: 30,
            band: 78,
            tdd_ul_dl_cfg: TddPattern::SRSRAN_DEFAULT,
            pdsch: PdschCfg::default(),
            pusch: PuschCfg::default(),
            pucch: PucchCfg::default(),
            scheduler: SchedulerCfg::default(),
            mac_cell_group: MacCellGroupCfg::default(),
            pdcch_symbols: 2,
            dmrs_symbols: 1,
            layers: 1,
        }
    }
}

impl CellCfg {
    /// FDD for the paired-spectrum bands of [`FDD_BANDS`], else TDD with `tdd_ul_dl_cfg` (not
    /// validated here; `Stack::new` validates it).
    pub fn duplex(&self) -> Duplex {
        if FDD_BANDS.contains(&self.band) {
            Duplex::Fdd
        } else {
            Duplex::Tdd(self.tdd_ul_dl_cfg.clone())
        }
    }
}

/// FDD bands of TS 38.101-1 Table 5.2-1 that Scout recognises; any other FR1 band is TDD.
pub const FDD_BANDS: &[u32] =
    &[1, 2, 3, 5, 7, 8, 12, 13, 14, 18, 20, 24, 25, 26, 28, 30, 65, 66, 70, 71, 74, 85, 91, 92, 93, 94];

impl<'de> Deserialize<'de> for TddPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            dl_ul_tx_period: u32,
            nof_dl_slots: u32,
            #[serde(default)]
            nof_dl_symbols: u32,
            nof_ul_slots: u32,
            #[serde(default)]
            nof_ul_symbols: u32,
        }
        let r = Raw::deserialize(d)?;
        let p = TddPattern {
            dl_ul_tx_period: r.dl_ul_tx_period,
            nof_dl_slots: r.nof_dl_slots,
            nof_dl_symbols: r.nof_dl_symbols,
            nof_ul_slots: r.nof_ul_slots,
            nof_ul_symbols: r.nof_ul_symbols,
        };
        p.validate().map_err(serde::de::Error::custom)?;
        Ok(p)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McsTableName {
    Qam64,
    Qam256,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PdschCfg {
    pub mcs_table: McsTableName,
    pub min_ue_mcs: u8,
    pub max_ue_mcs: u8,
    /// HARQ processes (srsRAN `nof_harqs`, default 16).
    pub nof_harqs: u8,
    /// Maximum retransmissions of a TB (srsRAN `max_nof_harq_retxs`, default 4).
    pub max_nof_harq_retxs: u8,
    /// Outer-loop link adaptation target BLER (srsRAN `olla_target_bler`? default 0.1).
    pub olla_target_bler: f64,
}

impl Default for PdschCfg {
    fn default() -> Self {
        PdschCfg {
            mcs_table: McsTableName::Qam64,
            min_ue_mcs: 0,
            max_ue_mcs: 28,
            nof_harqs: 16,
            max_nof_harq_retxs: 4,
            olla_target_bler: 0.1,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PuschCfg {
    pub mcs_table: McsTableName,
    pub min_ue_mcs: u8,
    pub max_ue_mcs: u8,
    /// Minimum PDCCH→PUSCH delay in slots (srsRAN `min_k2`, default 4).
    pub min_k2: u32,
    pub max_nof_harq_retxs: u8,
    pub olla_target_bler: f64,
    /// Bytes granted in response to an SR before any BSR is known.
    pub sr_grant_bytes: u32,
}

impl Default for PuschCfg {
    fn default() -> Self {
        PuschCfg {
            mcs_table: McsTableName::Qam64,
            min_ue_mcs: 0,
            max_ue_mcs: 28,
            min_k2: 4,
            max_nof_harq_retxs: 4,
            olla_target_bler: 0.1,
            sr_grant_bytes: 256,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PucchCfg {
    /// Minimum PDSCH→HARQ-ACK delay in slots (srsRAN `min_k1`, default 4).
    pub min_k1: u32,
    /// SR period in ms (srsRAN `sr_period_ms`, default 20; low-latency config 2; may be < 1).
    pub sr_period_ms: f64,
    /// CSI report period in ms (srsRAN `csi.csi_rs_period`, default 20 ms).
    pub csi_report_period_ms: f64,
}

impl Default for PucchCfg {
    fn default() -> Self {
        PucchCfg { min_k1: 4, sr_period_ms: 20.0, csi_report_period_ms: 20.0 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerPolicy {
    /// Round robin over UEs with data (srsRAN `time_rr`).
    TimeRr,
    /// Proportional fair (srsRAN `time_pf`).
    TimePf,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerCfg {
    pub policy: SchedulerPolicy,
    /// PF averaging window in slots.
    pub pf_window_slots: f64,
    /// At most this many UEs get a PDSCH (and a PUSCH) per slot.
    pub max_ues_per_slot: u32,
}

impl Default for SchedulerCfg {
    fn default() -> Self {
        SchedulerCfg { policy: SchedulerPolicy::TimeRr, pf_window_slots: 100.0, max_ues_per_slot: 16 }
    }
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct MacCellGroupCfg {
    pub bsr_cfg: BsrCfg,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BsrCfg {
    /// periodicBSR-Timer in ms/subframes (srsRAN default 10; TS 38.331 sf1…sf2560, -1 infinity).
    pub periodic_bsr_timer: i64,
    /// retxBSR-Timer (srsRAN default 80).
    pub retx_bsr_timer: i64,
}

impl Default for BsrCfg {
    fn default() -> Self {
        BsrCfg { periodic_bsr_timer: 10, retx_bsr_timer: 80 }
    }
}

/// One QoS class: RLC, PDCP and F1-U parameters per 5QI (srsRAN `qos[]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosCfg {
    pub five_qi: u8,
    #[serde(default)]
    pub rlc: RlcCfg,
    #[serde(default)]
    pub pdcp: PdcpCfg,
    #[serde(default)]
    pub f1u_du: F1uDuCfg,
    /// Logical channel priority (TS 38.321 §5.4.3.1; lower is more important). Default 10.
    #[serde(default = "default_lc_priority")]
    pub priority: u8,
}

fn default_lc_priority() -> u8 {
    10
}

impl QosCfg {
    /// srsRAN's defaults for a 5QI (`du_qos_config_helpers.h`, `cu_cp_configuration_helpers.h`):
    /// 5QI 9 is AM with t-PollRetransmit 100 ms, pollPDU 16, maxRetx 32, t-Reassembly 20 ms,
    /// t-StatusProhibit 10 ms, discard timer infinity, t-Reordering 220 ms; 5QI 1/2 are UM.
    pub fn srsran_default(five_qi: u8) -> QosCfg {
        let um = matches!(five_qi, 1 | 2 | 3 | 65 | 66 | 67);
        let mut rlc = RlcCfg::default();
        let mut pdcp = PdcpCfg::default();
        if um {
            rlc.mode = RlcMode::UmBidir;
            rlc.um_bidir.rx.t_reassembly = match five_qi {
                3 => 35,
                _ => 50,
            };
            pdcp.rx.t_reordering = MaybeMs::Ms(0);
            pdcp.tx.discard_timer = MaybeMs::Ms(match five_qi {
                1 => 100,
                2 => 150,
                3 => 50,
                65 => 75,
                _ => 100,
            });
        } else if matches!(five_qi, 4 | 5 | 6 | 8) {
            rlc.am.tx.t_poll_retransmit = 80;
            rlc.am.tx.poll_pdu = 64;
            rlc.am.tx.poll_byte = 125;
            rlc.am.tx.max_retx_threshold = 4;
            rlc.am.rx.t_reassembly = 80;
            pdcp.tx.discard_timer = MaybeMs::Ms(if five_qi == 5 { 100 } else { 300 });
        }
        QosCfg { five_qi, rlc, pdcp, f1u_du: F1uDuCfg::default(), priority: default_lc_priority() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RlcMode {
    Am,
    UmBidir,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RlcCfg {
    pub mode: RlcMode,
    pub am: RlcAmCfg,
    #[serde(rename = "um-bidir")]
    pub um_bidir: RlcUmCfg,
}

impl Default for RlcCfg {
    fn default() -> Self {
        RlcCfg { mode: RlcMode::Am, am: RlcAmCfg::default(), um_bidir: RlcUmCfg::default() }
    }
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct RlcAmCfg {
    pub tx: RlcAmTxCfg,
    pub rx: RlcAmRxCfg,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct RlcAmTxCfg {
    /// SN field length (12 or 18).
    pub sn: u8,
    pub t_poll_retransmit: i64,
    pub max_retx_threshold: u32,
    /// pollPDU; -1 = infinity.
    pub poll_pdu: i64,
    /// pollByte in kB; -1 = infinity.
    pub poll_byte: i64,
    /// SDU queue limit in SDUs (srsRAN default 16384).
    pub queue_size: u32,
    /// SDU queue limit in bytes (srsRAN default 4096 × 1507 = 6 172 672).
    pub queue_bytes: u64,
}

impl Default for RlcAmTxCfg {
    fn default() -> Self {
        RlcAmTxCfg {
            sn: 18,
            t_poll_retransmit: 100,
            max_retx_threshold: 32,
            poll_pdu: 16,
            poll_byte: -1,
            queue_size: 16384,
            queue_bytes: 6_172_672,
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct RlcAmRxCfg {
    pub sn: u8,
    pub t_reassembly: i64,
    pub t_status_prohibit: i64,
}

impl Default for RlcAmRxCfg {
    fn default() -> Self {
        RlcAmRxCfg { sn: 18, t_reassembly: 20, t_status_prohibit: 10 }
    }
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct RlcUmCfg {
    pub tx: RlcUmTxCfg,
    pub rx: RlcUmRxCfg,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct RlcUmTxCfg {
    /// SN field length (6 or 12).
    pub sn: u8,
    pub queue_size: u32,
    pub queue_bytes: u64,
}

impl Default for RlcUmTxCfg {
    fn default() -> Self {
        RlcUmTxCfg { sn: 12, queue_size: 16384, queue_bytes: 6_172_672 }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct RlcUmRxCfg {
    pub sn: u8,
    pub t_reassembly: i64,
}

impl Default for RlcUmRxCfg {
    fn default() -> Self {
        RlcUmRxCfg { sn: 12, t_reassembly: 50 }
    }
}

#[derive(Clone, Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct PdcpCfg {
    pub tx: PdcpTxCfg,
    pub rx: PdcpRxCfg,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PdcpTxCfg {
    /// PDCP SN length (12 or 18).
    pub sn: u8,
    /// discardTimer in ms, `-1`/`infinity` for none (TS 38.323 §5.2.1; srsRAN 5QI 9: infinity).
    pub discard_timer: MaybeMs,
    /// Early drop: new SDUs are dropped while the volume handed to F1-U and not yet reported
    /// transmitted by the DU exceeds this many bytes. `-1` = tie to the RLC queue's byte limit (as
    /// srsRAN ties it to `rlc_queue_bytes_limit`), `0` = disabled.
    pub early_drop_bytes: i64,
}

impl Default for PdcpTxCfg {
    fn default() -> Self {
        PdcpTxCfg { sn: 18, discard_timer: MaybeMs::Ms(-1), early_drop_bytes: -1 }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PdcpRxCfg {
    pub sn: u8,
    /// t-Reordering in ms (TS 38.323 §5.2.2.2; srsRAN 5QI 9: 220 ms; UM bearers 0).
    pub t_reordering: MaybeMs,
}

impl Default for PdcpRxCfg {
    fn default() -> Self {
        PdcpRxCfg { sn: 18, t_reordering: MaybeMs::Ms(220) }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct F1uDuCfg {
    /// Aggregation period of DL Data Delivery Status reports in ms (srsRAN `f1u.t_notify`, 10).
    pub t_notify: i64,
}

impl Default for F1uDuCfg {
    fn default() -> Self {
        F1uDuCfg { t_notify: 10 }
    }
}

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
            slices: vec![SliceCfg { name: "default".into(), sst: 1, sd: None, upf: default_upf_exec() }],
            n3: LinkCfg { delay_us: 200.0, rate_mbps: 10_000.0 },
            n6: LinkCfg { delay_us: 1000.0, rate_mbps: 10_000.0 },
            midhaul: LinkCfg { delay_us: 50.0, rate_mbps: 10_000.0 },
        }
    }
}

/// The radio channel of a UE.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChannelCfg {
    /// DL SINR in dB when constant.
    pub dl_sinr_db: f64,
    pub ul_sinr_db: f64,
    /// Optional SINR time series: CSV `time_s,dl_sinr_db[,ul_sinr_db]`, path relative to the scenario.
    pub sinr_trace: Option<String>,
    /// Optional mahimahi capacity trace for the DL (one delivery opportunity per line, in ms), path
    /// relative to the scenario; mapped to SINR per `mahimahi_window_ms` (docs/model.md).
    pub mahimahi_trace: Option<String>,
    /// The same for the UL; when absent the UL uses `ul_sinr_db`.
    pub mahimahi_ul_trace: Option<String>,
    /// Averaging window of a capacity trace, in ms (default 10).
    pub mahimahi_window_ms: u64,
}

impl Default for ChannelCfg {
    fn default() -> Self {
        ChannelCfg {
            dl_sinr_db: 20.0,
            ul_sinr_db: 15.0,
            sinr_trace: None,
            mahimahi_trace: None,
            mahimahi_ul_trace: None,
            mahimahi_window_ms: 10,
        }
    }
}
