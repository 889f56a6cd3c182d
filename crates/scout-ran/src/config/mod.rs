//! Model configuration. Section and key names follow srsRAN Project's `gnb.yaml` where srsRAN has
//! the parameter (e.g. `cell_cfg.channel_bandwidth_MHz`, `tdd_ul_dl_cfg.nof_dl_slots`,
//! `qos[].rlc.am.tx.t-poll-retransmit`, `qos[].pdcp.tx.discard_timer`); Scout's own sections
//! (`core`, `cu_up`, `ues`) use snake_case. Unknown keys are rejected (`deny_unknown_fields`).
//! Defaults are srsRAN's, with the source named on each.

use serde::Deserialize;

use crate::phy::tdd::{Duplex, TddPattern};

mod check;
mod core;
mod qos;

pub use self::check::*;
pub use self::core::*;
pub use self::qos::*;

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
    pub ul_common: UlCommonCfg,
    pub scheduler: SchedulerCfg,
    pub mac_cell_group: MacCellGroupCfg,
    /// PDCCH symbols at the start of each DL slot (CORESET duration). srsRAN: 1–2; default 2.
    pub pdcch_symbols: u8,
    /// DMRS symbols per PDSCH/PUSCH (type A pos2: 1). TS 38.211 §7.4.1.1.
    pub dmrs_symbols: u8,
    /// DL MIMO layers (Scout). A UE whose channel models its antennas (TDL fading) takes the
    /// layers its rank indicator asks, at most this many (default: as many as the antennas
    /// allow); any other UE gets this many on every DL TB (default 1), its SINR each layer's.
    pub layers: Option<u8>,
    /// The gNB's DL antenna ports (srsRAN `nof_antennas_dl`: 1, 2 or 4; default 1).
    pub nof_antennas_dl: u8,
    /// The gNB's UL receive antennas (srsRAN `nof_antennas_ul`: 1, 2 or 4; default 1): a faded
    /// UL is received on each (maximum-ratio combining).
    pub nof_antennas_ul: u8,
    /// The DL carrier's NR-ARFCN (TS 38.104 §5.4.2), as srsRAN's `dl_arfcn`; by default srsRAN's
    /// example for the band (n78: 650000, 3.75 GHz; n3: 368500, 1842.5 MHz). Used by path loss
    /// and Doppler.
    pub dl_arfcn: Option<u32>,
    /// The error model (Scout): `miesm` (MIESM over the PRB groups, code blocks, link-level
    /// curves: `phy::link`) or `logistic` (the earlier per-MCS logistic curve).
    pub bler_model: crate::phy::link::BlerModel,
    /// How HARQ retransmissions combine (Scout): `ir` (incremental redundancy, srsRAN's RV
    /// sequence 0, 2, 3, 1) or `chase`.
    pub harq_combining: crate::phy::link::Combining,
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
            ul_common: UlCommonCfg::default(),
            scheduler: SchedulerCfg::default(),
            mac_cell_group: MacCellGroupCfg::default(),
            pdcch_symbols: 2,
            dmrs_symbols: 1,
            layers: None,
            nof_antennas_dl: 1,
            nof_antennas_ul: 1,
            dl_arfcn: None,
            bler_model: Default::default(),
            harq_combining: Default::default(),
        }
    }
}

impl CellCfg {
    /// The DL carrier frequency, Hz: `dl_arfcn`'s, else that of srsRAN's example ARFCN for the
    /// band; `None` for another band without `dl_arfcn`.
    pub fn carrier_hz(&self) -> Option<f64> {
        let arfcn = self.dl_arfcn.or(match self.band {
            78 => Some(650_000),
            3 => Some(368_500),
            _ => None,
        })?;
        crate::phy::propagation::nr_arfcn_hz(arfcn)
    }

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
        struct Period {
            dl_ul_tx_period: u32,
            nof_dl_slots: u32,
            #[serde(default)]
            nof_dl_symbols: u32,
            nof_ul_slots: u32,
            #[serde(default)]
            nof_ul_symbols: u32,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            #[serde(flatten)]
            first: Period,
            pattern2: Option<Period>,
        }
        let pattern = |r: Period| TddPattern {
            dl_ul_tx_period: r.dl_ul_tx_period,
            nof_dl_slots: r.nof_dl_slots,
            nof_dl_symbols: r.nof_dl_symbols,
            nof_ul_slots: r.nof_ul_slots,
            nof_ul_symbols: r.nof_ul_symbols,
            pattern2: None,
        };
        let r = Raw::deserialize(d)?;
        let p = TddPattern { pattern2: r.pattern2.map(|p2| Box::new(pattern(p2))), ..pattern(r.first) };
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

impl McsTableName {
    /// The TS 38.214 MCS table the name selects.
    pub fn table(self) -> crate::phy::mcs::McsTable {
        match self {
            McsTableName::Qam64 => crate::phy::mcs::McsTable::Qam64,
            McsTableName::Qam256 => crate::phy::mcs::McsTable::Qam256,
        }
    }
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
    /// Outer-loop link adaptation's target BLER (srsRAN `olla_target_bler`, default 0.01).
    pub olla_target_bler: f64,
    /// OLLA's CQI offset step per ACK (srsRAN `olla_cqi_inc_step`, default 0.001; 0 turns OLLA off).
    pub olla_cqi_inc_step: f64,
    /// OLLA's largest CQI offset either way (srsRAN `olla_max_cqi_offset`, default 4).
    pub olla_max_cqi_offset: f64,
    /// The gNB's processing delay from the slot carrying a NACK to the earliest slot of the
    /// retransmission (Scout; default 2 slots; commercial networks show 5–6).
    pub harq_retx_delay_slots: u32,
}

impl Default for PdschCfg {
    fn default() -> Self {
        PdschCfg {
            mcs_table: McsTableName::Qam64,
            min_ue_mcs: 0,
            max_ue_mcs: 28,
            nof_harqs: 16,
            max_nof_harq_retxs: 4,
            olla_target_bler: 0.01,
            olla_cqi_inc_step: 0.001,
            olla_max_cqi_offset: 4.0,
            harq_retx_delay_slots: 2,
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
    /// OLLA's target BLER (srsRAN `olla_target_bler`, default 0.01).
    pub olla_target_bler: f64,
    /// OLLA's SNR offset step per ACK, dB (srsRAN `olla_snr_inc_step`, default 0.001; 0: off).
    pub olla_snr_inc_step: f64,
    /// OLLA's largest SNR offset either way, dB (srsRAN `olla_max_snr_offset`, default 5).
    pub olla_max_snr_offset: f64,
    /// P_O_NOMINAL_PUSCH, dBm per 15-kHz resource block (srsRAN `p0_nominal_with_grant`, default
    /// −76; TS 38.213 §7.1.1): the received power per RB open-loop power control aims at.
    pub p0_nominal_with_grant: i32,
    /// α, the fraction of the path loss the UE's power compensates (srsRAN
    /// `path_loss_compensation_factor`, default 1; TS 38.331 `Alpha`: 0, 0.4 … 0.9, 1).
    pub path_loss_compensation_factor: f64,
    /// Limit a UE's UL grants to the PRBs its last power headroom report says it can give full
    /// power (srsRAN `enable_phr_bw_adaptation`, default false; in srsRAN's open-source gNB a
    /// no-op, in its enterprise one as modelled here).
    pub enable_phr_bw_adaptation: bool,
    /// Bytes granted in response to an SR before any BSR is known.
    pub sr_grant_bytes: u32,
    /// The gNB's delay from a PUSCH slot to the earliest PDCCH slot that can schedule its
    /// retransmission (Scout; default 1: decoded within the PUSCH slot).
    pub harq_retx_delay_slots: u32,
    /// The gNB's delay from receiving an SR or a BSR to the earliest PDCCH slot that can grant on
    /// it (Scout; default 1).
    pub ul_sched_delay_slots: u32,
}

impl Default for PuschCfg {
    fn default() -> Self {
        PuschCfg {
            mcs_table: McsTableName::Qam64,
            min_ue_mcs: 0,
            max_ue_mcs: 28,
            min_k2: 4,
            max_nof_harq_retxs: 4,
            olla_target_bler: 0.01,
            olla_snr_inc_step: 0.001,
            olla_max_snr_offset: 5.0,
            p0_nominal_with_grant: -76,
            path_loss_compensation_factor: 1.0,
            enable_phr_bw_adaptation: false,
            sr_grant_bytes: 256,
            harq_retx_delay_slots: 1,
            ul_sched_delay_slots: 1,
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

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UlCommonCfg {
    /// PUCCH grants per UL slot (srsRAN `ul_common.max_pucchs_per_slot`, default 31): a PDSCH is
    /// scheduled only with a k1 whose UL slot has room for the UE's HARQ-ACK.
    pub max_pucchs_per_slot: u32,
}

impl Default for UlCommonCfg {
    fn default() -> Self {
        UlCommonCfg { max_pucchs_per_slot: 31 }
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
    /// `constant` (the default, or `trace` with a trace), or a TR 38.901 fading model:
    /// `tdl-a` … `tdl-e` (docs/model.md, "The radio").
    pub model: Option<String>,
    /// The TDL model's RMS delay spread, ns (TR 38.901 Table 7.7.3-1's "nominal": 100 ns).
    pub delay_spread_ns: f64,
    /// The UE's speed, km/h (0: static); it sets the Doppler shift and, with `ues[].mobility`,
    /// the movement.
    pub speed_kmh: f64,
    /// Path loss and shadowing: `uma`, `umi`, `inh` (TR 38.901 §7.4) or `none` (the default: the
    /// mean SINR is `dl_sinr_db` / `ul_sinr_db`).
    pub pathloss: String,
    /// The gNB's transmit power over the carrier, dBm (default 46: the macro BS power of TR 36.814
    /// Table A.2.1.1-2 for 10 MHz; srsRAN has no radiated-power setting, only its SDR's gain).
    pub gnb_tx_power_dbm: f64,
    /// The UE's transmit power, dBm (default 23: power class 3, TS 38.101-1 §6.2.1).
    pub ue_tx_power_dbm: f64,
    /// Noise figures, dB (defaults 9 at the UE, 5 at the gNB: TR 36.814 Table A.2.1.1-2/-3).
    pub ue_noise_figure_db: f64,
    pub gnb_noise_figure_db: f64,
    /// Neighbour cells interfering (0–6: the first tier of a hexagonal layout; default 0, one
    /// cell alone); needs `pathloss`.
    pub neighbours: u32,
    /// Their distance from the serving site, m (default the scenario's inter-site distance, TR
    /// 38.901 Table 7.2-1: UMa 500, UMi 200, InH 20).
    pub isd_m: Option<f64>,
    /// The fraction of the time each neighbour transmits (default 1: 3GPP's full-buffer load).
    pub neighbour_load: f64,
    /// The UE's receive antennas, 1–4 (default 1, srsUE's; a commercial n78 UE has 4, as seed
    /// 002's): with fading, the DL channel is `ue_antennas` × `cell_cfg.nof_antennas_dl`.
    pub ue_antennas: u8,
    /// The gNB's and the UE's antenna heights, m (defaults: the scenario's of TR 38.901 Table
    /// 7.4.1-1 — UMa 25, UMi 10, InH 3; UE 1.5 outdoors, 1 indoors); within the ranges the
    /// table's path-loss formulas hold for.
    pub bs_height_m: Option<f64>,
    pub ue_height_m: Option<f64>,
    /// `model: replay`: the run directory whose recorded radio is replayed (an ingested srsRAN
    /// run, or any Scout run), relative to the scenario.
    pub run: Option<String>,
    /// `model: replay`: which of the run's UEs (its `ue` column; default its only one).
    pub replay_ue: Option<u32>,
    /// `model: replay`: the window over which a first transmission's error probability is the
    /// recording's NACK ratio, ms (default 100).
    pub replay_window_ms: f64,
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
            model: None,
            delay_spread_ns: 100.0,
            speed_kmh: 0.0,
            pathloss: "none".into(),
            gnb_tx_power_dbm: 46.0,
            ue_tx_power_dbm: 23.0,
            ue_noise_figure_db: 9.0,
            gnb_noise_figure_db: 5.0,
            neighbours: 0,
            isd_m: None,
            neighbour_load: 1.0,
            ue_antennas: 1,
            bs_height_m: None,
            ue_height_m: None,
            run: None,
            replay_ue: None,
            replay_window_ms: 100.0,
        }
    }
}
