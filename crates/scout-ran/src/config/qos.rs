//! Per-5QI configuration: RLC, PDCP and F1-U (srsRAN `qos[]`).

use serde::Deserialize;

use super::MaybeMs;

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
    #[serde(default)]
    pub f1u_cu_up: F1uCuUpCfg,
    /// L4S marking at the gNB's DL RLC SDU queue (absent: none, srsRAN's behaviour).
    #[serde(default)]
    pub l4s: Option<L4sCfg>,
    /// ANBR: the gNB's recommended bit rate for the DL logical channel (absent: none).
    #[serde(default)]
    pub anbr: Option<AnbrCfg>,
    /// Logical channel priority (TS 38.321 §5.4.3.1; lower is more important). Default 10.
    #[serde(default = "default_lc_priority")]
    pub priority: u8,
    #[serde(default)]
    pub mac: LcMacCfg,
}

/// The logical channel's prioritisation parameters (srsRAN `qos[].mac`, TS 38.331
/// LogicalChannelConfig): the UE's UL logical channel prioritisation (TS 38.321 §5.4.3.1).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LcMacCfg {
    /// prioritisedBitRate in kB/s; 65537 is infinity (srsRAN's encoding and default).
    #[serde(rename = "prioritized_bit_rate_kBps")]
    pub prioritized_bit_rate_kbps: u32,
    /// bucketSizeDuration in ms.
    pub bucket_size_duration_ms: u32,
}

impl Default for LcMacCfg {
    fn default() -> Self {
        LcMacCfg { prioritized_bit_rate_kbps: LcMacCfg::INFINITY, bucket_size_duration_ms: 5 }
    }
}

impl LcMacCfg {
    pub const INFINITY: u32 = 65537;
    /// TS 38.331 prioritisedBitRate values (kB/s) srsRAN accepts, 65537 = infinity.
    pub const PBR_VALUES: [u32; 16] =
        [0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 65537];
    /// TS 38.331 bucketSizeDuration values (ms) srsRAN accepts.
    pub const BSD_VALUES: [u32; 9] = [5, 10, 20, 50, 100, 150, 300, 500, 1000];
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
        QosCfg {
            five_qi,
            rlc,
            pdcp,
            f1u_du: F1uDuCfg::default(),
            f1u_cu_up: F1uCuUpCfg::default(),
            l4s: None,
            anbr: None,
            priority: default_lc_priority(),
            mac: LcMacCfg::default(),
        }
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
    /// transmitted by the DU would exceed this many bytes. `-1` = the DU's desired buffer size
    /// from its last DDDS (srsRAN: its `rlc_queue_bytes_limit`), plus the F1-U transmit queue's
    /// limit with `f1u_cu_up.flow_control`; `0` = disabled.
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
    /// The desired buffer size the DU reports in each DDDS, bytes (TS 38.425 §5.5.3.x): the
    /// volume it wants outstanding beyond the highest PDCP SN transmitted. `-1` = the RLC SDU
    /// queue's byte limit, as srsRAN's DU reports (`rlc_queue_bytes_limit`).
    pub desired_buffer_bytes: i64,
}

impl Default for F1uDuCfg {
    fn default() -> Self {
        F1uDuCfg { t_notify: 10, desired_buffer_bytes: -1 }
    }
}

/// The CU-UP's side of a DL F1-U bearer: how it reacts to the DU's desired buffer size
/// (`crate::f1u`). Scout's keys; srsRAN has no such switch (it behaves as the default).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct F1uCuUpCfg {
    /// `false` (srsRAN): PDUs go to the DU at once and PDCP's early drop sheds what exceeds the
    /// desired buffer size. `true` (TS 38.425 flow control): PDUs beyond it wait in the CU-UP's
    /// F1-U transmit queue (`f1u_tx`) until DDDS frames report room.
    pub flow_control: bool,
    /// With `flow_control`, the transmit queue's byte limit; PDCP drops new SDUs early beyond
    /// the desired buffer size plus this. `-1` = the RLC SDU queue's byte limit.
    pub queue_bytes: i64,
}

impl Default for F1uCuUpCfg {
    fn default() -> Self {
        F1uCuUpCfg { flow_control: false, queue_bytes: -1 }
    }
}

/// L4S marking at the gNB's DL RLC SDU queue (RFC 9330–9332; TS 23.501 §5.37.3 Rel-18 ECN marking
/// for L4S in the NG-RAN): an SDU whose head-of-line sojourn, as its first byte leaves the queue,
/// is below `min_ms` is not marked, at or above `max_ms` always, and in between with probability
/// (sojourn − min) / (max − min) (the linear ramp of the seed's eq. 3.1). Only ECN-capable packets
/// are marked: ECT(1), and ECT(0) with `classic_ecn`. Scout's keys; srsRAN has no L4S.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L4sCfg {
    pub min_ms: f64,
    pub max_ms: f64,
    /// Mark ECT(0) packets too (a classic ECN AQM); default only ECT(1), L4S's codepoint.
    #[serde(default)]
    pub classic_ecn: bool,
    /// Where the Congestion Experienced codepoint is written (default `rlc`).
    #[serde(default)]
    pub mark_at: MarkAt,
}

/// Where an L4S mark decided at RLC is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarkAt {
    /// Into the SDU leaving the RLC queue (a gNB that can rewrite IP headers below PDCP).
    #[default]
    Rlc,
    /// Into the next ECN-capable packet the CU-UP's PDCP takes, before ciphering: a gNB that
    /// ciphers at PDCP measures the sojourn at RLC and marks at PDCP, as Brunello et al. propose
    /// (seed 003 §2.2).
    Pdcp,
}

/// ANBR (`crate::mac::anbr`): one Recommended bit rate MAC CE per `window_ms` (TS 38.321
/// §6.1.3.20), the rate the UE acknowledged over the window (and the unused PRBs' share) mapped
/// onto the bit-rate table times `multiplier` (TS 38.331 `bitRateMultiplier-r16`: 40, 70, 100,
/// 200; 1 for none) as `rounding` says; the UE's queries at most once per `query_prohibit_ms`
/// (`bitRateQueryProhibitTimer`). Scout's keys; srsRAN does not send the CE.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnbrCfg {
    #[serde(default = "default_anbr_window")]
    pub window_ms: f64,
    #[serde(default = "default_anbr_multiplier")]
    pub multiplier: u32,
    #[serde(default)]
    pub rounding: crate::mac::anbr::Rounding,
    #[serde(default = "default_query_prohibit")]
    pub query_prohibit_ms: u32,
}

impl AnbrCfg {
    pub fn params(&self) -> crate::mac::anbr::AnbrParams {
        crate::mac::anbr::AnbrParams {
            window_ns: (self.window_ms * 1e6) as i64,
            multiplier: self.multiplier,
            rounding: self.rounding,
            query_prohibit_ns: i64::from(self.query_prohibit_ms) * 1_000_000,
        }
    }
}

fn default_query_prohibit() -> u32 {
    400
}

fn default_anbr_window() -> f64 {
    40.0
}

fn default_anbr_multiplier() -> u32 {
    40
}
