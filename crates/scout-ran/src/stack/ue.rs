//! What the stack keeps per UE: its bearers' entities at every node, each direction's channel and
//! its MAC (the gNB's MAC keeps its own per-UE state, `crate::mac::gnb`).

use super::*;

pub(super) struct Drb {
    pub(super) id: u8,
    pub(super) qfi: u8,
    pub(super) priority: u8,
    /// DU side: DL transmitter, UL receiver.
    pub(super) gnb_rlc: RlcEntity,
    /// UE side: UL transmitter, DL receiver.
    pub(super) ue_rlc: RlcEntity,
    pub(super) cu_pdcp_tx: PdcpTx,
    pub(super) cu_pdcp_rx: PdcpRx,
    pub(super) ue_pdcp_tx: PdcpTx,
    pub(super) ue_pdcp_rx: PdcpRx,
    /// The CU-UP's side of the DL F1-U bearer (flow control).
    pub(super) cu_f1u: F1uTx<Job>,
    pub(super) t_notify_ns: i64,
    /// The desired buffer size the DU reports in its DDDS frames.
    pub(super) du_desired_buffer: u64,
    pub(super) du_highest_tx: Option<u32>,
    /// L4S marking at the DU's RLC queue, if configured.
    pub(super) l4s: Option<L4sCfg>,
    /// Marks the RLC queue decided that the CU-UP's PDCP is still to write (`mark_at: pdcp`).
    pub(super) pending_ce: u32,
    /// ANBR's configuration, if the bearer sends it.
    pub(super) anbr: Option<AnbrParams>,
    pub(super) ddds_pending: bool,
    pub(super) armed: [Option<Instant>; 6],
}

pub(super) struct Ue {
    pub(super) rnti: u16,
    pub(super) slice: u8,
    pub(super) drbs: Vec<Drb>,
    /// Each direction's channel: DL (`air[DL]`), then UL.
    pub(super) air: [Channel; 2],
    // UE MAC (UL).
    pub(super) mac: UeMac,
}

/// One direction of a UE's radio channel: its SINR over time and the randomness of decoding.
pub(super) struct Channel {
    pub(super) sinr: SinrSource,
    pub(super) rng: Rng,
}

impl Ue {
    /// UE `i` of the stack's configuration: its DRBs (a 5QI's `qos` entry, srsRAN's defaults for a
    /// 5QI without one), its channels and its MAC. C-RNTIs from 0x4601, as srsRAN assigns them.
    pub(super) fn new(i: usize, spec: &UeSpec, cfg: &StackConfig, seed: u64) -> Ue {
        let qos: Vec<QosCfg> = spec
            .five_qis
            .iter()
            .map(|fq| cfg.qos.iter().find(|q| q.five_qi == *fq).cloned().unwrap_or_else(|| QosCfg::srsran_default(*fq)))
            .collect();
        let drbs =
            qos.iter().enumerate().map(|(d, q)| Drb::new(d, q, Rng::new(seed, &format!("ue{i}.drb{d}.l4s")))).collect();
        let lchs: Vec<LchCfg> = qos
            .iter()
            .map(|q| LchCfg {
                priority: q.priority,
                pbr_kbytes_per_s: (q.mac.prioritized_bit_rate_kbps != LcMacCfg::INFINITY)
                    .then_some(q.mac.prioritized_bit_rate_kbps),
                bsd_ms: q.mac.bucket_size_duration_ms,
            })
            .collect();
        Ue {
            rnti: 0x4601 + i as u16,
            slice: spec.slice,
            drbs,
            air: [
                Channel { sinr: spec.dl_sinr.clone(), rng: Rng::new(seed, &format!("ue{i}.dl.harq")) },
                Channel { sinr: spec.ul_sinr.clone(), rng: Rng::new(seed, &format!("ue{i}.ul.harq")) },
            ],
            mac: UeMac::new(i as u64, Lcp::new(&lchs)),
        }
    }
}

impl Drb {
    /// DRB `d` (id `d + 1`) of QoS class `q`: RLC at the DU and the UE, PDCP at the CU-UP and the
    /// UE (the UE's PDCP without srsRAN's early drop, which is the CU-UP's), the DL F1-U bearer.
    /// `rng` draws the L4S marks, if any.
    fn new(d: usize, q: &QosCfg, rng: Rng) -> Drb {
        let gnb_rlc = match &q.l4s {
            Some(l4s) => RlcEntity::with_discipline(&q.rlc, Box::new(L4sMark::new(l4s, rlc::limits(&q.rlc), rng))),
            None => RlcEntity::new(&q.rlc),
        };
        let ue_rlc = RlcEntity::new(&q.rlc);
        // -1: the RLC SDU queue's byte limit (srsRAN's `rlc_queue_bytes_limit`).
        let limit = gnb_rlc.queue_bytes_limit();
        let or_limit = |v: i64| u64::try_from(v).unwrap_or(limit);
        let desired = or_limit(q.f1u_du.desired_buffer_bytes);
        let hold = if q.f1u_cu_up.flow_control { or_limit(q.f1u_cu_up.queue_bytes) } else { 0 };
        Drb {
            id: d as u8 + 1,
            qfi: q.five_qi,
            priority: q.priority,
            cu_pdcp_tx: PdcpTx::new(&q.pdcp, desired, hold),
            cu_pdcp_rx: PdcpRx::new(&q.pdcp),
            ue_pdcp_tx: PdcpTx::new(
                &PdcpCfg { tx: PdcpTxCfg { early_drop_bytes: 0, ..q.pdcp.tx.clone() }, ..q.pdcp.clone() },
                0,
                0,
            ),
            ue_pdcp_rx: PdcpRx::new(&q.pdcp),
            gnb_rlc,
            ue_rlc,
            cu_f1u: F1uTx::new(q.f1u_cu_up.flow_control, desired),
            t_notify_ns: q.f1u_du.t_notify.max(0) * MS,
            du_desired_buffer: desired,
            l4s: q.l4s.clone(),
            pending_ce: 0,
            anbr: q.anbr.as_ref().map(AnbrCfg::params),
            du_highest_tx: None,
            ddds_pending: false,
            armed: [None; 6],
        }
    }

    pub(super) fn gnb_rlc_is_um(&self) -> bool {
        self.gnb_rlc.is_um()
    }
}
