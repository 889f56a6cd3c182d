//! The checks of a stack's configuration that its types cannot make: numerology and bandwidth
//! (TS 38.101 tables), TDD pattern, k1/k2, HARQ, timer and count ranges (TS 38.331 / 38.322 /
//! 38.323), executors, links, slices and UEs. Each error names its key and what is accepted.

use crate::phy::channel::SinrSource;
use crate::phy::tdd::Duplex;
use crate::phy::{self};

use super::*;

/// Errors building a stack from its configuration; each names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

/// The longest SR periodicity, in slots (TS 38.331 `periodicityAndOffset` sl640).
pub const MAX_SR_PERIOD_SLOTS: u64 = 640;

fn invalid(key: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { key: key.into(), message: message.into() }
}

/// A UE as the stack is told about it.
#[derive(Clone, Debug)]
pub struct UeSpec {
    /// Index into the slice list.
    pub slice: u8,
    pub dl_sinr: SinrSource,
    pub ul_sinr: SinrSource,
    /// 5QIs of the UE's DRBs, in DRB order (DRB id = position + 1). QFI = 5QI.
    pub five_qis: Vec<u8>,
}

/// Everything the stack needs.
#[derive(Clone, Debug)]
pub struct StackConfig {
    pub cell: CellCfg,
    pub qos: Vec<QosCfg>,
    pub cu_up: CuUpCfg,
    pub core: CoreCfg,
    pub ues: Vec<UeSpec>,
    pub seed: u64,
}

/// What the checks found out on the way, for the stack to build with.
pub(crate) struct Checked {
    pub mu: u8,
    pub prbs: u16,
    pub duplex: Duplex,
    pub sr_period_slots: u64,
    /// CSI reporting period in slots (at least one).
    pub csi_period_slots: u64,
}

/// Checks `cfg` (every error names its key), part by part in the order a `gnb.yaml` reads.
pub(crate) fn check(cfg: &StackConfig) -> Result<Checked, ConfigError> {
    let c = &cfg.cell;
    let (mu, prbs, duplex) = carrier(c)?;
    slot_timing(c)?;
    link_adaptation(c)?;
    uplink_power(c)?;
    antennas_and_pdcch(c)?;
    for (i, q) in cfg.qos.iter().enumerate() {
        let key = |k: &str| format!("qos[{i}].{k}");
        qos_values(q, &key)?;
        qos_timers(q, &key)?;
        qos_marking(q, &key)?;
        pdcp_timers(&q.pdcp, &key)?;
    }
    reports_and_scheduler(c)?;
    core_and_cu_up(cfg)?;
    ues(cfg)?;
    let (sr_period_slots, csi_period_slots) = sr_and_csi_periods(c, mu)?;
    Ok(Checked { mu, prbs, duplex, sr_period_slots, csi_period_slots })
}

/// The numerology, the bandwidth's PRBs (TS 38.101 Table 5.3.2-1) and the TDD pattern.
fn carrier(c: &CellCfg) -> Result<(u8, u16, Duplex), ConfigError> {
    let mu = phy::mu_for_scs(c.common_scs)
        .ok_or_else(|| invalid("cell_cfg.common_scs", format!("{} kHz; accepted: 15, 30, 60, 120", c.common_scs)))?;
    let prbs = phy::nof_prbs(c.channel_bandwidth_mhz, c.common_scs).ok_or_else(|| {
        invalid(
            "cell_cfg.channel_bandwidth_MHz",
            format!(
                "{} MHz is not defined for {} kHz SCS in TS 38.101 Table 5.3.2-1; accepted: {:?}",
                c.channel_bandwidth_mhz,
                c.common_scs,
                phy::valid_bandwidths(c.common_scs)
            ),
        )
    })?;
    let duplex = c.duplex();
    if let Duplex::Tdd(p) = &duplex {
        p.validate().map_err(|m| invalid("cell_cfg.tdd_ul_dl_cfg", m))?;
    }
    Ok((mu, prbs, duplex))
}

/// k1, k2, HARQ retransmission and UL scheduling delays, PUCCHs per slot, HARQ processes.
fn slot_timing(c: &CellCfg) -> Result<(), ConfigError> {
    if !(1..=15).contains(&c.pucch.min_k1) {
        return Err(invalid("cell_cfg.pucch.min_k1", format!("{}; accepted: 1..=15 slots", c.pucch.min_k1)));
    }
    for (key, v) in [
        ("cell_cfg.pdsch.harq_retx_delay_slots", c.pdsch.harq_retx_delay_slots),
        ("cell_cfg.pusch.harq_retx_delay_slots", c.pusch.harq_retx_delay_slots),
        ("cell_cfg.pusch.ul_sched_delay_slots", c.pusch.ul_sched_delay_slots),
    ] {
        if !(1..=32).contains(&v) {
            return Err(invalid(key, format!("{v}; accepted: 1..=32 slots")));
        }
    }
    if !(1..=1000).contains(&c.ul_common.max_pucchs_per_slot) {
        return Err(invalid(
            "cell_cfg.ul_common.max_pucchs_per_slot",
            format!("{}; accepted: 1..=1000", c.ul_common.max_pucchs_per_slot),
        ));
    }
    if !(1..=32).contains(&c.pusch.min_k2) {
        return Err(invalid("cell_cfg.pusch.min_k2", format!("{}; accepted: 1..=32 slots", c.pusch.min_k2)));
    }
    if !(1..=16).contains(&c.pdsch.nof_harqs) {
        return Err(invalid("cell_cfg.pdsch.nof_harqs", format!("{}; accepted: 1..=16", c.pdsch.nof_harqs)));
    }
    Ok(())
}

/// OLLA's targets, steps and bounds, and the MCS ranges.
fn link_adaptation(c: &CellCfg) -> Result<(), ConfigError> {
    for (k, t) in [
        ("cell_cfg.pdsch.olla_target_bler", c.pdsch.olla_target_bler),
        ("cell_cfg.pusch.olla_target_bler", c.pusch.olla_target_bler),
    ] {
        if !(0.001..0.5).contains(&t) {
            return Err(invalid(k, format!("{t}; accepted: 0.001 <= target < 0.5")));
        }
    }
    for (k, lo, hi) in [
        ("cell_cfg.pdsch", c.pdsch.min_ue_mcs, c.pdsch.max_ue_mcs),
        ("cell_cfg.pusch", c.pusch.min_ue_mcs, c.pusch.max_ue_mcs),
    ] {
        if lo > hi {
            return Err(invalid(
                &format!("{k}.min_ue_mcs"),
                format!("{lo} is above {k}.max_ue_mcs ({hi}); accepted: min_ue_mcs <= max_ue_mcs"),
            ));
        }
    }
    for (k, step, t, mk, max) in [
        (
            "cell_cfg.pdsch.olla_cqi_inc_step",
            c.pdsch.olla_cqi_inc_step,
            c.pdsch.olla_target_bler,
            "cell_cfg.pdsch.olla_max_cqi_offset",
            c.pdsch.olla_max_cqi_offset,
        ),
        (
            "cell_cfg.pusch.olla_snr_inc_step",
            c.pusch.olla_snr_inc_step,
            c.pusch.olla_target_bler,
            "cell_cfg.pusch.olla_max_snr_offset",
            c.pusch.olla_max_snr_offset,
        ),
    ] {
        // srsRAN's bound for OLLA to converge (Blanquez-Casado et al., "eOLLA", 2016).
        let bound = 2.0 * std::f64::consts::E * t / 1.03;
        if !(step >= 0.0 && step < bound) {
            return Err(invalid(
                k,
                format!("{step}; accepted: 0 (OLLA off) <= step < 2e·target/1.03 = {bound:.4} (OLLA converges)"),
            ));
        }
        if !(0.0..=30.0).contains(&max) {
            return Err(invalid(mk, format!("{max}; accepted: 0..=30")));
        }
    }
    Ok(())
}

/// PUSCH power control's p0 and alpha (TS 38.331 PUSCH-ConfigCommon).
fn uplink_power(c: &CellCfg) -> Result<(), ConfigError> {
    // TS 38.331 PUSCH-ConfigCommon p0-NominalWithGrant INTEGER (-202..24); Alpha ENUMERATED.
    if !(-202..=24).contains(&c.pusch.p0_nominal_with_grant) {
        return Err(invalid(
            "cell_cfg.pusch.p0_nominal_with_grant",
            format!("{}; accepted: -202..=24 (dBm)", c.pusch.p0_nominal_with_grant),
        ));
    }
    let a = c.pusch.path_loss_compensation_factor;
    if ![0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0].iter().any(|v| (a - v).abs() < 1e-9) {
        return Err(invalid(
            "cell_cfg.pusch.path_loss_compensation_factor",
            format!("{a}; accepted: 0, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1 (TS 38.331 Alpha)"),
        ));
    }
    Ok(())
}

/// Antenna ports, layers within them, the PDCCH's symbols.
fn antennas_and_pdcch(c: &CellCfg) -> Result<(), ConfigError> {
    for (key, n) in [("cell_cfg.nof_antennas_dl", c.nof_antennas_dl), ("cell_cfg.nof_antennas_ul", c.nof_antennas_ul)] {
        if ![1, 2, 4].contains(&n) {
            return Err(invalid(key, format!("{n}; accepted: 1, 2, 4 (srsRAN's antenna ports)")));
        }
    }
    if let Some(l) = c.layers {
        if !(1..=c.nof_antennas_dl).contains(&l) {
            return Err(invalid(
                "cell_cfg.layers",
                format!(
                    "{l}; accepted: 1 to cell_cfg.nof_antennas_dl ({}): each layer needs an antenna port",
                    c.nof_antennas_dl
                ),
            ));
        }
    }
    if c.pdcch_symbols > 3 {
        return Err(invalid("cell_cfg.pdcch_symbols", format!("{}; accepted: 0..=3", c.pdcch_symbols)));
    }
    Ok(())
}

/// A QoS entry's enumerated values: PBR, BSD, sequence number sizes, maxRetxThreshold, queues.
fn qos_values(q: &QosCfg, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    if !LcMacCfg::PBR_VALUES.contains(&q.mac.prioritized_bit_rate_kbps) {
        return Err(invalid(
            &key("mac.prioritized_bit_rate_kBps"),
            format!("{}; accepted: {:?} (65537: infinity)", q.mac.prioritized_bit_rate_kbps, LcMacCfg::PBR_VALUES),
        ));
    }
    if !LcMacCfg::BSD_VALUES.contains(&q.mac.bucket_size_duration_ms) {
        return Err(invalid(
            &key("mac.bucket_size_duration_ms"),
            format!("{}; accepted: {:?}", q.mac.bucket_size_duration_ms, LcMacCfg::BSD_VALUES),
        ));
    }
    if ![12, 18].contains(&q.rlc.am.tx.sn) || ![12, 18].contains(&q.rlc.am.rx.sn) {
        return Err(invalid(&key("rlc.am.tx.sn"), "accepted: 12, 18"));
    }
    if ![6, 12].contains(&q.rlc.um_bidir.tx.sn) {
        return Err(invalid(&key("rlc.um-bidir.tx.sn"), "accepted: 6, 12"));
    }
    if ![12, 18].contains(&q.pdcp.tx.sn) {
        return Err(invalid(&key("pdcp.tx.sn"), "accepted: 12, 18"));
    }
    if ![1, 2, 3, 4, 6, 8, 16, 32].contains(&q.rlc.am.tx.max_retx_threshold) {
        return Err(invalid(&key("rlc.am.tx.max-retx-threshold"), "accepted (TS 38.331): 1, 2, 3, 4, 6, 8, 16, 32"));
    }
    if q.rlc.am.tx.queue_size == 0 || q.rlc.am.tx.queue_bytes == 0 {
        return Err(invalid(&key("rlc.am.tx.queue-size"), "queue limits must be > 0"));
    }
    Ok(())
}

/// A QoS entry's RLC and F1-U timers and counts.
fn qos_timers(q: &QosCfg, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    // Timers and counts within their TS 38.331 / 38.323 ranges (-1: infinity where the
    // spec has it): a timer of 0 that re-arms would run for ever at one instant, and a
    // huge one overflowed the nanosecond clock.
    let (am, um, pdcp) = (&q.rlc.am, &q.rlc.um_bidir, &q.pdcp);
    // -1 stands for what the key's doc says, where it may.
    for (k, v, lo, hi, minus_one) in [
        ("rlc.am.tx.t-poll-retransmit", am.tx.t_poll_retransmit, 5, 4000, None),
        ("rlc.am.tx.poll-pdu", am.tx.poll_pdu, 1, 65_536, Some("infinity")),
        ("rlc.am.tx.poll-byte", am.tx.poll_byte, 1, 40_000, Some("infinity")),
        ("rlc.am.rx.t-reassembly", am.rx.t_reassembly, 0, 200, None),
        ("rlc.am.rx.t-status-prohibit", am.rx.t_status_prohibit, 0, 2400, None),
        ("rlc.um-bidir.rx.t-reassembly", um.rx.t_reassembly, 0, 200, None),
        ("f1u_du.t_notify", q.f1u_du.t_notify, 1, 10_000, None),
        ("f1u_du.desired_buffer_bytes", q.f1u_du.desired_buffer_bytes, 0, 1 << 40, Some("the RLC queue's byte limit")),
        ("f1u_cu_up.queue_bytes", q.f1u_cu_up.queue_bytes, 0, 1 << 40, Some("the RLC queue's byte limit")),
        ("pdcp.tx.early_drop_bytes", pdcp.tx.early_drop_bytes, 0, 1 << 40, Some("the F1-U desired buffer size")),
    ] {
        if !((minus_one.is_some() && v == -1) || (lo..=hi).contains(&v)) {
            let or = minus_one.map(|m| format!(" or -1 ({m})")).unwrap_or_default();
            return Err(invalid(&key(k), format!("{v}; accepted: {lo}..={hi}{or}")));
        }
    }
    Ok(())
}

/// A QoS entry's L4S marking thresholds and ANBR parameters.
fn qos_marking(q: &QosCfg, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    if let Some(l) = &q.l4s {
        if !(l.min_ms.is_finite()
            && l.max_ms.is_finite()
            && 0.0 <= l.min_ms
            && l.min_ms < l.max_ms
            && l.max_ms <= 10_000.0)
        {
            return Err(invalid(
                &key("l4s"),
                format!("min_ms {} and max_ms {}; accepted: 0 <= min_ms < max_ms <= 10000", l.min_ms, l.max_ms),
            ));
        }
    }
    if let Some(a) = &q.anbr {
        if !(a.window_ms.is_finite() && (1.0..=10_000.0).contains(&a.window_ms)) {
            return Err(invalid(&key("anbr.window_ms"), format!("{}; accepted: 1..=10000 ms", a.window_ms)));
        }
        if !crate::mac::anbr::MULTIPLIERS.contains(&a.multiplier) {
            return Err(invalid(
                &key("anbr.multiplier"),
                format!("{}; accepted (TS 38.331 bitRateMultiplier-r16): 1 (none), 40, 70, 100, 200", a.multiplier),
            ));
        }
        if !crate::mac::anbr::QUERY_PROHIBIT_MS.contains(&a.query_prohibit_ms) {
            return Err(invalid(
                &key("anbr.query_prohibit_ms"),
                format!(
                    "{}; accepted (TS 38.331 bitRateQueryProhibitTimer): 0, 400, 800, 1600, 3000, 6000, 12000, 30000",
                    a.query_prohibit_ms
                ),
            ));
        }
    }
    Ok(())
}

/// PDCP's discard and t-Reordering timers (TS 38.323 §7.3).
fn pdcp_timers(pdcp: &PdcpCfg, key: &dyn Fn(&str) -> String) -> Result<(), ConfigError> {
    for (k, v, hi) in
        [("pdcp.tx.discard_timer", pdcp.tx.discard_timer, 1500), ("pdcp.rx.t_reordering", pdcp.rx.t_reordering, 3000)]
    {
        if let crate::config::MaybeMs::Ms(ms) = v {
            if !(ms == -1 || (0..=hi).contains(&ms)) {
                return Err(invalid(&key(k), format!("{ms}; accepted: 0..={hi} ms, -1 or infinity")));
            }
        }
    }
    Ok(())
}

/// BSR timers, the CSI report period, the PF scheduler's window.
fn reports_and_scheduler(c: &CellCfg) -> Result<(), ConfigError> {
    let bsr = &c.mac_cell_group.bsr_cfg;
    if !(bsr.periodic_bsr_timer == -1 || (1..=2560).contains(&bsr.periodic_bsr_timer)) {
        return Err(invalid(
            "cell_cfg.mac_cell_group.bsr_cfg.periodic_bsr_timer",
            format!("{}; accepted: 1..=2560 or -1 (infinity), TS 38.331 periodicBSR-Timer", bsr.periodic_bsr_timer),
        ));
    }
    if !(10..=10_240).contains(&bsr.retx_bsr_timer) {
        return Err(invalid(
            "cell_cfg.mac_cell_group.bsr_cfg.retx_bsr_timer",
            format!("{}; accepted: 10..=10240, TS 38.331 retxBSR-Timer", bsr.retx_bsr_timer),
        ));
    }
    if !(c.pucch.csi_report_period_ms > 0.0 && c.pucch.csi_report_period_ms <= 1000.0) {
        return Err(invalid(
            "cell_cfg.pucch.csi_report_period_ms",
            format!("{}; accepted: 0 < csi_report_period_ms <= 1000", c.pucch.csi_report_period_ms),
        ));
    }
    if !(1.0..=1e6).contains(&c.scheduler.pf_window_slots) {
        return Err(invalid(
            "cell_cfg.scheduler.pf_window_slots",
            format!("{}; accepted: 1..=1000000", c.scheduler.pf_window_slots),
        ));
    }
    Ok(())
}

/// Slices, executors, links and SDAP's processing time.
fn core_and_cu_up(cfg: &StackConfig) -> Result<(), ConfigError> {
    if cfg.core.slices.is_empty() {
        return Err(invalid("core.slices", "at least one slice is needed"));
    }
    let mut execs = vec![
        ("cu_up.gtpu_rx".to_string(), &cfg.cu_up.gtpu_rx),
        ("cu_up.cuup".to_string(), &cfg.cu_up.cuup),
        ("cu_up.f1u".to_string(), &cfg.cu_up.f1u),
    ];
    execs.extend(cfg.core.slices.iter().enumerate().map(|(i, s)| (format!("core.slices[{i}].upf"), &s.upf)));
    for (k, e) in execs {
        e.check().map_err(|(sub, m)| invalid(&format!("{k}.{sub}"), m))?;
    }
    for (k, link) in [("core.n3", &cfg.core.n3), ("core.n6", &cfg.core.n6), ("core.midhaul", &cfg.core.midhaul)] {
        link.check().map_err(|(sub, m)| invalid(&format!("{k}.{sub}"), m))?;
    }
    if !(0..=1_000_000_000).contains(&cfg.cu_up.sdap_proc_ns) {
        return Err(invalid(
            "cu_up.sdap_proc_ns",
            format!("{}; accepted: 0..=1000000000 (1 s)", cfg.cu_up.sdap_proc_ns),
        ));
    }
    Ok(())
}

/// Each UE's constant SINRs and its slice.
fn ues(cfg: &StackConfig) -> Result<(), ConfigError> {
    for (i, u) in cfg.ues.iter().enumerate() {
        for (k, src) in [("dl", &u.dl_sinr), ("ul", &u.ul_sinr)] {
            if let SinrSource::Constant(db) = src {
                if !(-50.0..=100.0).contains(db) {
                    return Err(invalid(
                        &format!("ues[{i}].channel.{k}_sinr_db"),
                        format!("{db}; accepted: -50..=100 dB"),
                    ));
                }
            }
        }
    }
    for (i, spec) in cfg.ues.iter().enumerate() {
        if usize::from(spec.slice) >= cfg.core.slices.len() {
            return Err(invalid(&format!("ues[{i}].slice"), "names no slice in core.slices"));
        }
    }
    Ok(())
}

/// The SR and CSI periods in slots.
fn sr_and_csi_periods(c: &CellCfg, mu: u8) -> Result<(u64, u64), ConfigError> {
    let slots_per_ms = (1_000_000 / phy::slot_ns(mu)) as f64;

    // TS 38.331 SchedulingRequestResourceConfig periodicityAndOffset: at most sl640 (640 slots);
    // the shortest, sym2, is below a slot and taken as every slot. (An SR period of 2e9 ms
    // once allocated a table of that many slots.)
    let sr_slots = c.pucch.sr_period_ms * slots_per_ms;
    if !(sr_slots.is_finite() && c.pucch.sr_period_ms > 0.0 && sr_slots.round() <= MAX_SR_PERIOD_SLOTS as f64) {
        return Err(invalid(
            "pucch.sr_period_ms",
            format!(
                "{}; accepted: > 0 and at most {MAX_SR_PERIOD_SLOTS} slots ({} ms at this numerology), the longest \
                 SR periodicity of TS 38.331 (sl640)",
                c.pucch.sr_period_ms,
                MAX_SR_PERIOD_SLOTS as f64 / slots_per_ms
            ),
        ));
    }
    let sr_period_slots = (sr_slots.round() as u64).max(1);
    let csi_period_slots = ((c.pucch.csi_report_period_ms * slots_per_ms).round() as u64).max(1);
    Ok((sr_period_slots, csi_period_slots))
}
