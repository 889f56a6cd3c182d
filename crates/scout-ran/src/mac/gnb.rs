//! The gNB MAC (srsRAN's scheduler with its MAC DL and UL; TS 38.321 §5.3 and §5.4 at the network
//! side, TS 38.214 §5.1 and §6.1): per UE and direction the link adaptation state — the last CSI
//! report and outer-loop link adaptation — and the HARQ processes; the gNB's view of each UE's UL
//! buffer; PUCCH room for HARQ-ACKs; the TB-size cache; the scheduling policy (a plug point).
//!
//! It decides: which retransmissions and new TBs a slot carries, at which MCS and on how many
//! PRBs, in which HARQ process, with its HARQ-ACK in which UL slot, and what a HARQ outcome means.
//! The stack carries the decisions out: it asks the bearers' RLC entities for the PDUs a TB
//! carries (the narrow MAC–RLC adapter, as srsRAN's `mac_sdu_tx_builder`), writes the events and
//! draws the channel's outcome. One body serves both directions where the procedure is the same.

use scout_events::Dir;

use crate::config::CellCfg;
use crate::mac::anbr::{AnbrEstimator, AnbrParams, Recommendation};
use crate::mac::harq::{HarqProcess, HarqState};
use crate::mac::pucch::PucchGrid;
use crate::mac::scheduler::{self, Candidate, Scheduler, SlotShare};
use crate::mac::tbs_cache::{TbShape, TbsCache};
use crate::mac::ul_view::UlBufferView;
use crate::phy::channel::{self, Olla};
use crate::phy::mcs::McsTable;
use crate::phy::radio::Band;
use crate::phy::tdd::Duplex;
use crate::rlc::RlcPdu;

/// Index of the DL's and the UL's entry in per-direction arrays (`Dir as usize`).
pub const DL: usize = Dir::Dl as usize;
pub const UL: usize = Dir::Ul as usize;

/// A transport block: the RLC PDUs it multiplexes, each with its DRB's index, and how it is sent.
#[derive(Clone, Debug)]
pub struct Tb {
    pub pdus: Vec<(u8, RlcPdu)>,
    pub mcs: u8,
    /// Its PRBs, `first_prb .. first_prb + prbs` of the carrier: where its latest transmission
    /// was scheduled (a retransmission keeps the number, not the place).
    pub first_prb: u16,
    pub prbs: u16,
    pub tbs: u32,
    pub symbols: u32,
    /// The MIMO layers it is sent in (its retransmissions too); the UL's are 1.
    pub layers: u8,
    /// UL: the BSR it carries (bytes reported).
    pub bsr: Option<u64>,
    /// UL: the Recommended bit rate query it carries (DRB index, bit/s asked).
    pub query: Option<(u8, u64)>,
    /// What the receiver holds of it after its transmissions so far (HARQ soft combining).
    pub soft: crate::phy::link::Soft,
    /// UL: the power headroom report it carries, if any (TS 38.321 §6.1.3.8), with the Type 1
    /// power headroom of this PUSCH in dB (TS 38.213 §7.7.1) when the radio models the UE's power
    /// (otherwise Scout has no value to report: `Some(None)`).
    pub phr: Option<Option<i8>>,
    /// The slot of its first transmission.
    pub first_slot: u64,
    /// The SINR (dB) its latest transmission saw, as its HARQ slot row reports it: the effective
    /// SINR over its PRBs, per layer.
    pub sinr_db: f32,
    /// Its first retransmission's timing, once known: the slot in between — DL: the HARQ-ACK
    /// slot that carried the first NACK (first_slot + k1); UL: the PDCCH slot that granted the
    /// retransmission (first_slot + ku) — and the retransmission's slot (DL: + kd; UL: + k2).
    /// Seed 004's Tables 4–6.
    pub retx_timing: (Option<u64>, Option<u64>),
}

impl Tb {
    /// The PRBs its latest transmission is on.
    pub fn band(&self) -> Band {
        Band { first: u32::from(self.first_prb), n: u32::from(self.prbs) }
    }

    /// A new TB of `tbs` bytes at `mcs` over `prbs` PRBs and `symbols` symbols, first sent in slot
    /// `first_slot`, carrying `pdus` and no MAC CE.
    pub fn new(pdus: Vec<(u8, RlcPdu)>, mcs: u8, prbs: u16, tbs: u32, symbols: u32, first_slot: u64) -> Tb {
        Tb {
            pdus,
            mcs,
            first_prb: 0,
            prbs,
            tbs,
            symbols,
            layers: 1,
            bsr: None,
            query: None,
            phr: None,
            soft: Default::default(),
            first_slot,
            sinr_db: f32::NAN,
            retx_timing: (None, None),
        }
    }
}

/// The smallest TB the gNB schedules, bytes: below it a grant carries no useful MAC SDU.
pub const MIN_TB_BYTES: u32 = 8;

/// One direction of one UE as the gNB's MAC knows it.
pub struct LinkState {
    /// UL: the SINR (dB) the gNB measured on the UE's last PUSCH, where UL link adaptation starts
    /// (the DL starts from `cqi`).
    pub measured_sinr: f64,
    /// DL: the last CQI the UE reported (TS 38.214 §5.2.2.1).
    pub cqi: Option<u8>,
    /// The layers of its new TBs: DL, the rank indicator the UE reported with `cqi` (before the
    /// first report, the configured layers within what the UE's channel carries); UL, 1.
    pub layers: u8,
    /// UL: from the UE's last power headroom report, the most PRBs on which it can still transmit
    /// the power open-loop power control asks for (beyond, it reaches P_CMAX).
    pub full_power_prbs: Option<f64>,
    pub olla: Olla,
    pub harq: Vec<HarqProcess<Tb>>,
    /// A replayed link's MCS for new TBs (`phy::replay`: the recording's link adaptation in
    /// place of the gNB's), set by the stack before each slot's scheduling.
    pub replayed_mcs: Option<u8>,
}

/// What the gNB's MAC keeps per UE.
pub struct MacUe {
    /// DL (`link[DL]`), then UL.
    pub link: [LinkState; 2],
    /// The UE's UL buffer as its SRs and BSRs told it.
    pub ul_view: UlBufferView,
    /// ANBR per DRB (index in the UE's list), where configured.
    pub anbr: Vec<Option<AnbrEstimator>>,
}

/// What a slot of one direction has left to give: PRBs and places for UEs
/// (`scheduler.max_ues_per_slot`).
#[derive(Clone, Copy, Debug)]
pub struct SlotBudget {
    pub free: u16,
    pub scheduled: u16,
    max_ues: u16,
    prbs: u16,
}

impl SlotBudget {
    pub fn new(prbs: u16, max_ues: u16) -> SlotBudget {
        SlotBudget { free: prbs, scheduled: 0, max_ues, prbs }
    }

    /// No PRB or no place left.
    pub fn exhausted(&self) -> bool {
        self.free == 0 || self.scheduled >= self.max_ues
    }

    /// A TB of `prbs` PRBs fits.
    fn fits(&self, prbs: u16) -> bool {
        prbs <= self.free && self.scheduled < self.max_ues
    }

    /// A UE gets `prbs` PRBs; the first of them. Allocations are contiguous and follow each other
    /// from the carrier's lowest PRB up, in the order the slot's TBs are scheduled (retransmissions
    /// first): srsRAN's allocator takes the first free interval of the length a grant needs
    /// (`find_empty_interval_of_length`). Not modelled: PUCCH's PRBs at the UL carrier's edges.
    pub fn take(&mut self, prbs: u16) -> u16 {
        let first = self.prbs - self.free;
        self.free -= prbs;
        self.scheduled += 1;
        first
    }
}

/// The cell's gNB MAC.
pub struct GnbMac {
    cell: CellCfg,
    table: [McsTable; 2],
    tbs: TbsCache,
    pucch: PucchGrid,
    scheduler: Box<dyn Scheduler>,
    ues: Vec<MacUe>,
    /// The carrier's (and bandwidth part's) PRBs.
    prbs: u16,
}

impl GnbMac {
    /// The MAC of a cell of `prbs` PRBs with `duplex`, for UEs whose SINRs (DL, UL, dB) are `csi`
    /// when they attach: the DL's as its first CQI reports it, the UL's as measured.
    pub fn new(cell: &CellCfg, duplex: &Duplex, prbs: u16, csi: &[[f64; 2]]) -> GnbMac {
        let link = |sinr: f64, olla: Olla, harqs: u8, layers: u8| LinkState {
            measured_sinr: sinr,
            cqi: None,
            layers,
            full_power_prbs: None,
            olla,
            harq: (0..harqs).map(|_| HarqProcess::default()).collect(),
            replayed_mcs: None,
        };
        let nh = cell.pdsch.nof_harqs;
        let (p, u) = (&cell.pdsch, &cell.pusch);
        let ues = csi
            .iter()
            .map(|c| MacUe {
                link: [
                    link(
                        c[DL],
                        Olla::new(p.olla_target_bler, p.olla_cqi_inc_step, p.olla_max_cqi_offset),
                        nh,
                        cell.layers.unwrap_or(1),
                    ),
                    link(c[UL], Olla::new(u.olla_target_bler, u.olla_snr_inc_step, u.olla_max_snr_offset), nh, 1),
                ],
                ul_view: UlBufferView::default(),
                anbr: Vec::new(),
            })
            .collect();
        let mut mac = GnbMac {
            table: [cell.pdsch.mcs_table.table(), cell.pusch.mcs_table.table()],
            tbs: TbsCache::new(prbs, cell.dmrs_symbols),
            pucch: PucchGrid::new(duplex, cell.pucch.min_k1, cell.ul_common.max_pucchs_per_slot),
            scheduler: scheduler::from_config(&cell.scheduler, csi.len()),
            ues,
            cell: cell.clone(),
            prbs,
        };
        for (ui, c) in csi.iter().enumerate() {
            let layers = mac.ues[ui].link[DL].layers;
            mac.csi_report(ui, channel::cqi_for_sinr(mac.table[DL], c[DL]), layers);
        }
        mac
    }

    pub fn ue(&self, ui: usize) -> &MacUe {
        &self.ues[ui]
    }

    pub fn ue_mut(&mut self, ui: usize) -> &mut MacUe {
        &mut self.ues[ui]
    }

    /// The MCS table of direction `d`.
    pub fn table(&self, d: usize) -> McsTable {
        self.table[d]
    }

    /// HARQ process `h` of UE `ui` in direction `d`.
    pub fn harq(&self, d: usize, ui: usize, h: usize) -> &HarqProcess<Tb> {
        &self.ues[ui].link[d].harq[h]
    }

    pub fn harq_mut(&mut self, d: usize, ui: usize, h: usize) -> &mut HarqProcess<Tb> {
        &mut self.ues[ui].link[d].harq[h]
    }

    /// A slot begins: HARQ-ACK room of earlier UL slots is released.
    pub fn slot_start(&mut self, s: u64) {
        self.pucch.release_before(s);
    }

    /// UE `ui`'s CSI report reaches the gNB (on PUCCH): CQI `cqi` for rank `ri`. Until the next
    /// one, DL link adaptation starts from it (the CQI table is the PDSCH MCS table's; OLLA
    /// corrects it) and new DL TBs are sent in `ri` layers (TS 38.214 §5.2.2.1: the CQI is that
    /// of the reported rank).
    pub fn csi_report(&mut self, ui: usize, cqi: u8, ri: u8) {
        let l = &mut self.ues[ui].link[DL];
        l.cqi = Some(cqi);
        l.layers = ri.max(1);
    }

    /// The shape of UE `ui`'s next new TB in direction `d` at `mcs` over `symbols` symbols.
    fn shape(&self, ui: usize, d: usize, mcs: u8, symbols: u32) -> TbShape {
        TbShape { table: self.table[d], mcs, layers: self.ues[ui].link[d].layers, symbols }
    }

    /// A replayed link's MCS for UE `ui`'s new TBs in direction `d` (`None`: the gNB's own link
    /// adaptation).
    pub fn replay_mcs(&mut self, ui: usize, d: usize, mcs: Option<u8>) {
        self.ues[ui].link[d].replayed_mcs = mcs;
    }

    /// The gNB measured `sinr_db` on a PUSCH of UE `ui` (on its DMRS): UL link adaptation starts
    /// from it until the next PUSCH (as srsRAN's UL link adaptation uses the PUSCH SNR).
    pub fn pusch_measured(&mut self, ui: usize, sinr_db: f64) {
        self.ues[ui].link[UL].measured_sinr = sinr_db;
    }

    /// A power headroom report of `ph_db` dB from UE `ui`, carried on a PUSCH of `prbs` PRBs: the
    /// PRBs at which its headroom would be 0 are 10^((PH + 10·log10 M)/10) (as srsRAN's
    /// `pusch_power_controller` derives them, without closed-loop corrections: none are sent).
    pub fn phr_received(&mut self, ui: usize, ph_db: i8, prbs: u16) {
        let n = 10f64.powf((f64::from(ph_db) + 10.0 * f64::from(prbs.max(1)).log10()) / 10.0);
        self.ues[ui].link[UL].full_power_prbs = Some(n);
    }

    /// The UL slot that would carry the HARQ-ACK of a PDSCH to UE `ui` in slot `s`, if any has room.
    pub fn harq_ack_slot(&self, s: u64, ui: usize) -> Option<u64> {
        self.pucch.harq_ack_slot(s, ui as u32)
    }

    fn reserve_harq_ack(&mut self, s: u64, ui: usize) -> u64 {
        let ack = self.pucch.harq_ack_slot(s, ui as u32).expect("the scheduler checked PUCCH room");
        self.pucch.reserve(ack, ui as u32);
        ack
    }

    /// The MCS for UE `ui`'s next new transmission in direction `d`, within the configured range.
    /// DL: the MCS of the last reported CQI's efficiency, the CQI corrected by OLLA
    /// ([`channel::mcs_for_cqi`]); UL: the highest MCS whose BLER at the measured PUSCH SINR,
    /// corrected by OLLA, is at most 10 % in the error model (srsRAN maps the SNR through its own
    /// table; not reproduced).
    pub fn mcs(&self, ui: usize, d: usize) -> u8 {
        let link = &self.ues[ui].link[d];
        let (min, max) = self.mcs_range(d);
        if let Some(m) = link.replayed_mcs {
            return m.clamp(min, max);
        }
        let m = match d {
            DL => channel::mcs_for_cqi(self.table[d], f64::from(link.cqi.unwrap_or(0)) + link.olla.offset),
            _ => self.cell.bler_model.mcs_for_sinr(self.table[d], link.measured_sinr + link.olla.offset, max),
        };
        m.clamp(min, max)
    }

    /// The lowest and highest MCS of direction `d` (`{pdsch,pusch}.{min,max}_ue_mcs`).
    fn mcs_range(&self, d: usize) -> (u8, u8) {
        let c = &self.cell;
        let (min, max) =
            if d == DL { (c.pdsch.min_ue_mcs, c.pdsch.max_ue_mcs) } else { (c.pusch.min_ue_mcs, c.pusch.max_ue_mcs) };
        (min, max.min(self.table[d].max_mcs()))
    }

    /// The retransmissions of direction `d` due by slot `s`, UE by UE and process by process, while
    /// the budget lasts and `fits` allows: each goes with its TB's PRBs and MCS (adaptive
    /// retransmission); `picked` sees each as it is chosen. At most one per UE: a UE gets one PDSCH
    /// (TS 38.214 §5.1) or PUSCH (§6.1) in a slot. Returns (UE, HARQ process) in that order.
    fn retransmissions(
        &mut self,
        d: usize,
        s: u64,
        budget: &mut SlotBudget,
        fits: impl Fn(&GnbMac, usize, &Tb) -> bool,
        mut picked: impl FnMut(&mut GnbMac, usize),
    ) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for ui in 0..self.ues.len() {
            for h in 0..self.ues[ui].link[d].harq.len() {
                let hp = &self.ues[ui].link[d].harq[h];
                let ready = matches!(hp.state, HarqState::PendingRetx { ready } if ready <= s);
                let Some(tb) = hp.tb.as_ref() else { continue };
                if !ready || !budget.fits(tb.prbs) || !fits(self, ui, tb) {
                    continue;
                }
                let first = budget.take(tb.prbs);
                let hp = &mut self.ues[ui].link[d].harq[h];
                hp.retx();
                if let Some(tb) = hp.tb.as_mut() {
                    tb.first_prb = first;
                }
                picked(self, ui);
                out.push((ui, h));
                break; // one per UE
            }
        }
        out
    }

    /// The DL retransmissions of slot `s` (a PDSCH of `symbols` symbols): (UE, HARQ process, the UL
    /// slot of its HARQ-ACK, reserved).
    pub fn dl_retransmissions(&mut self, s: u64, symbols: u32, budget: &mut SlotBudget) -> Vec<(usize, usize, u64)> {
        let mut acks = Vec::new();
        let picked = self.retransmissions(
            DL,
            s,
            budget,
            |mac, ui, tb| symbols >= tb.symbols && mac.harq_ack_slot(s, ui).is_some(),
            |mac, ui| acks.push(mac.reserve_harq_ack(s, ui)),
        );
        picked.into_iter().zip(acks).map(|((ui, h), ack)| (ui, h, ack)).collect()
    }

    /// The UL retransmissions granted in slot `s`, for UEs not `blocked` (a grant already held for
    /// the PUSCH slot): (UE, HARQ process).
    pub fn ul_retransmissions(&mut self, s: u64, budget: &mut SlotBudget, blocked: &[bool]) -> Vec<(usize, usize)> {
        self.retransmissions(UL, s, budget, |_, ui, _| !blocked[ui], |_, _| {})
    }

    /// The UEs that may get a new TB in direction `d` this slot (`eligible`, and a HARQ process
    /// idle), in the policy's order; each candidate's rate is the bytes one PRB of `symbols`
    /// symbols carries at its MCS.
    pub fn order(&mut self, d: usize, symbols: u32, eligible: impl Fn(usize) -> bool) -> Vec<usize> {
        let mut cands = Vec::new();
        for ui in 0..self.ues.len() {
            if !eligible(ui) || !self.ues[ui].link[d].harq.iter().any(|h| h.state == HarqState::Idle) {
                continue;
            }
            let shape = self.shape(ui, d, self.mcs(ui, d), symbols);
            let rate = f64::from(self.tbs.tbs_for(shape, 1));
            cands.push(Candidate { ue: ui, rate });
        }
        self.scheduler.order(dir(d), &cands)
    }

    /// What each UE was given in the slot of direction `d` (bytes of new TBs, indexed by UE).
    pub fn served(&mut self, d: usize, bytes: &[u64]) {
        self.scheduler.served(dir(d), bytes);
    }

    /// UE `ui` got the first allocation of a pass over the policy's order in direction `d`.
    pub fn first_allocated(&mut self, d: usize, ui: usize) {
        self.scheduler.first_allocated(dir(d), ui);
    }

    /// The policy's cap on one new TB's PRBs in a slot of direction `d` where `with_data` UEs have
    /// new data and `dl_pdcchs_used` DL DCIs are placed already (`None`: no cap; `Some(0)`: no new
    /// TBs). The UE-specific CORESET is srsRAN's default CORESET#1: every whole group of 6 PRBs of
    /// the carrier, for `pdcch_symbols` symbols (`make_default_coreset_config`: max(2, CORESET#0's
    /// symbols)), one CCE per 6 REGs (TS 38.211 §7.3.2.2).
    pub fn newtx_prb_cap(&self, d: usize, with_data: usize, dl_pdcchs_used: usize) -> Option<u16> {
        let cces = u32::from(self.prbs / 6) * u32::from(self.cell.pdcch_symbols);
        let share = SlotShare {
            with_data,
            max_per_slot: self.cell.scheduler.max_ues_per_slot,
            cces,
            dl_pdcchs_used,
            bwp_prbs: self.prbs,
        };
        self.scheduler.newtx_prb_cap(dir(d), &share)
    }

    /// A new TB of UE `ui` in direction `d`: its MCS, the fewest PRBs (at most `free`, and at most
    /// the policy's `cap`) that carry `need` bytes, their TBS, and its layers — (PRBs, MCS, TBS,
    /// layers).
    #[allow(clippy::too_many_arguments)] // the UE, its need and the slot's room
    pub fn allocate(
        &mut self,
        d: usize,
        ui: usize,
        symbols: u32,
        need: u64,
        free: u16,
        cap: Option<u16>,
    ) -> (u16, u8, u32, u8) {
        let mcs = self.mcs(ui, d);
        let shape = self.shape(ui, d, mcs, symbols);
        let (mut prbs, _) = self.tbs.prbs_for(shape, need);
        if let Some(cap) = cap {
            // srsRAN `time_rr`: at most the UE's share; and where less than twice that is left,
            // the UE is the slot's last and takes all that is left ("allocate all remaining RBs").
            prbs = prbs.min(cap);
            if u32::from(free) < 2 * u32::from(prbs) {
                prbs = free;
            }
        }
        let mut prbs = prbs.min(free);
        // srsRAN's PHR bandwidth adaptation (`pusch.enable_phr_bw_adaptation`): no more PRBs than
        // the UE can give its full power per PRB, so its PUSCH's SINR is what power control aims at.
        // Never below the PRBs of the smallest TB worth sending (srsRAN widens a grant whose code
        // rate would be invalid).
        if d == UL && self.cell.pusch.enable_phr_bw_adaptation {
            if let Some(n) = self.ues[ui].link[UL].full_power_prbs {
                let (least, _) = self.tbs.prbs_for(shape, u64::from(MIN_TB_BYTES));
                prbs = prbs.min((n.floor().clamp(1.0, f64::from(u16::MAX)) as u16).max(least));
            }
        }
        (prbs, mcs, self.tbs.tbs_for(shape, prbs), shape.layers)
    }

    /// The first idle HARQ process of UE `ui` in direction `d` (a candidate has one).
    fn idle_harq(&self, d: usize, ui: usize) -> usize {
        self.ues[ui].link[d]
            .harq
            .iter()
            .position(|h| h.state == HarqState::Idle)
            .expect("candidate has an idle process")
    }

    /// A new DL TB for UE `ui` in slot `s`: its HARQ process and the UL slot of its HARQ-ACK.
    pub fn new_dl_tx(&mut self, s: u64, ui: usize, tb: Tb) -> (usize, u64) {
        let h = self.idle_harq(DL, ui);
        self.ues[ui].link[DL].harq[h].new_tx(tb);
        (h, self.reserve_harq_ack(s, ui))
    }

    /// A new UL grant for UE `ui`: the HARQ process it reserves (the UE builds the TB at the PUSCH
    /// slot, [`GnbMac::ul_tb_built`]).
    pub fn new_ul_grant(&mut self, ui: usize, tbs: u32) -> usize {
        let h = self.idle_harq(UL, ui);
        let u = &mut self.ues[ui];
        u.link[UL].harq[h].state = HarqState::WaitAck;
        u.ul_view.granted(tbs);
        h
    }

    /// The UE built the TB of UL HARQ process `h`.
    pub fn ul_tb_built(&mut self, ui: usize, h: usize, tb: Tb) {
        self.ues[ui].link[UL].harq[h].new_tx(tb);
    }

    /// UE `ui`'s DRBs send ANBR as `anbr` says (per DRB index).
    pub fn configure_anbr(&mut self, ui: usize, anbr: &[Option<AnbrParams>]) {
        self.ues[ui].anbr =
            anbr.iter().map(|a| a.map(|a| AnbrEstimator::new(a.window_ns, a.multiplier, a.rounding))).collect();
    }

    /// The gNB decoded UE `ui`'s query for DRB `drb` at `now`: its answer, the rate measured since
    /// the last recommendation (`None` without ANBR on the DRB or when no time has passed).
    pub fn answer_query(&mut self, now: i64, ui: usize, drb: usize) -> Option<Recommendation> {
        let e = self.ues[ui].anbr.get_mut(drb)?.as_mut()?;
        let (index, bit_rate_bps) = e.answer(now)?;
        let multiplier = e.multiplier();
        Some(Recommendation { t: now, ue: ui as u32, drb, index, multiplier, bit_rate_bps, answer: true })
    }

    /// A DL TB was acknowledged: ANBR counts its RLC SDU bytes per DRB.
    pub fn dl_acknowledged(&mut self, ui: usize, tb: &Tb) {
        let anbr = &mut self.ues[ui].anbr;
        if anbr.iter().all(Option::is_none) {
            return;
        }
        for (di, pdu) in &tb.pdus {
            if let (RlcPdu::Data { len, .. }, Some(Some(e))) = (pdu, anbr.get_mut(usize::from(*di))) {
                e.delivered(*len);
            }
        }
    }

    /// A DL slot of `symbols` symbols left `free` PRBs unused: ANBR counts each ANBR UE's share
    /// of them (equal shares) at its MCS as bytes it could have had — the rate the access network
    /// can give it, not only what its sender offered (which would let a recommendation that
    /// follows the sender's rate never rise).
    pub fn dl_spare(&mut self, free: u16, symbols: u32) {
        let with: Vec<usize> =
            (0..self.ues.len()).filter(|&ui| self.ues[ui].anbr.iter().any(Option::is_some)).collect();
        if free == 0 || with.is_empty() {
            return;
        }
        let share = free / with.len() as u16;
        if share == 0 {
            return;
        }
        for ui in with {
            let shape = self.shape(ui, DL, self.mcs(ui, DL), symbols);
            let bytes = self.tbs.tbs_for(shape, share);
            if let Some(e) = self.ues[ui].anbr.iter_mut().flatten().next() {
                e.delivered(bytes);
            }
        }
    }

    /// The recommendations whose window closed by `now`.
    pub fn poll_anbr(&mut self, now: i64, out: &mut Vec<Recommendation>) {
        for (ui, u) in self.ues.iter_mut().enumerate() {
            for (drb, e) in u.anbr.iter_mut().enumerate() {
                let Some(e) = e else { continue };
                if let Some((index, bit_rate_bps)) = e.poll(now) {
                    let multiplier = e.multiplier();
                    out.push(Recommendation {
                        t: now,
                        ue: ui as u32,
                        drb,
                        index,
                        multiplier,
                        bit_rate_bps,
                        answer: false,
                    });
                }
            }
        }
    }

    /// The HARQ outcome of process `h` of UE `ui` in direction `d`, known in slot `slot` (DL: the
    /// HARQ-ACK's; UL: the PUSCH's): OLLA learns from it; a NACKed TB may be retransmitted the
    /// configured processing delay later (`{pdsch,pusch}.harq_retx_delay_slots`). Returns the TB
    /// when it is finished with: decoded (`true`), or lost after `max_nof_harq_retxs` (`false`).
    pub fn feedback(&mut self, d: usize, ui: usize, h: usize, ack: bool, slot: u64) -> Option<(Tb, bool)> {
        let c = &self.cell;
        let (max, delay) = match d {
            DL => (c.pdsch.max_nof_harq_retxs, c.pdsch.harq_retx_delay_slots),
            _ => (c.pusch.max_nof_harq_retxs, c.pusch.harq_retx_delay_slots),
        };
        let (lo, hi) = self.mcs_range(d);
        let link = &mut self.ues[ui].link[d];
        if let Some(tb) = link.harq[h].tb.as_ref() {
            link.olla.update(ack, tb.mcs, lo, hi);
        }
        link.harq[h].feedback(ack, u32::from(max), slot + u64::from(delay))
    }
}

fn dir(d: usize) -> Dir {
    if d == DL {
        Dir::Dl
    } else {
        Dir::Ul
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tb(prbs: u16) -> Tb {
        Tb::new(Vec::new(), 10, prbs, 1000, 12, 0)
    }

    fn mac(ues: usize) -> GnbMac {
        let cell = CellCfg::default();
        let duplex = Duplex::Tdd(cell.tdd_ul_dl_cfg.clone());
        GnbMac::new(&cell, &duplex, 51, &vec![[20.0, 15.0]; ues])
    }

    /// With `enable_phr_bw_adaptation`, a UE whose PHR said −6 dB on 40 PRBs (full power on
    /// 10^((−6 + 16.02)/10) = 10.05 PRBs) is granted at most 10; without it, what its buffer needs.
    #[test]
    fn phr_bandwidth_adaptation_caps_ul_grants() {
        let big = 1_000_000;
        for (adapt, cap) in [(false, 51u16), (true, 10)] {
            let mut cell = CellCfg::default();
            cell.pusch.enable_phr_bw_adaptation = adapt;
            let duplex = Duplex::Tdd(cell.tdd_ul_dl_cfg.clone());
            let mut m = GnbMac::new(&cell, &duplex, 51, &[[20.0, 15.0]]);
            assert_eq!(m.allocate(UL, 0, 13, big, 51, None).0, 51, "no PHR yet");
            m.phr_received(0, -6, 40);
            assert_eq!(m.allocate(UL, 0, 13, big, 51, None).0, cap, "adaptation {adapt}");
            // A UE with headroom to spare is not held back.
            m.phr_received(0, 20, 4);
            assert_eq!(m.allocate(UL, 0, 13, big, 51, None).0, 51);
        }
    }

    #[test]
    fn a_nacked_tb_waits_the_processing_delay_then_is_retransmitted_within_the_budget() {
        let mut m = mac(2);
        let (h0, ack0) = m.new_dl_tx(0, 0, tb(30));
        let (h1, _) = m.new_dl_tx(0, 1, tb(30));
        assert!(ack0 > 0, "the HARQ-ACK goes in a later UL slot");
        let delay = u64::from(CellCfg::default().pdsch.harq_retx_delay_slots);
        assert!(m.feedback(DL, 0, h0, false, ack0).is_none());
        assert!(m.feedback(DL, 1, h1, false, ack0).is_none());
        let mut budget = SlotBudget::new(51, 16);
        assert!(m.dl_retransmissions(ack0 + delay - 1, 12, &mut budget).is_empty(), "not before the delay");
        // 51 PRBs hold one of the two 30-PRB TBs.
        let mut budget = SlotBudget::new(51, 16);
        let r = m.dl_retransmissions(ack0 + delay, 12, &mut budget);
        assert_eq!(r.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), [(0, h0)]);
        assert_eq!((budget.free, budget.scheduled), (21, 1));
        assert_eq!(m.harq(DL, 0, h0).nof_tx, 2);
        // The retransmission takes the slot's first PRBs; what follows comes after it.
        assert_eq!(m.harq(DL, 0, h0).tb.as_ref().map(|t| (t.first_prb, t.prbs)), Some((0, 30)));
        assert_eq!(budget.take(15), 30);
        assert_eq!(budget.take(6), 45);
        assert_eq!(budget.free, 0);
    }

    #[test]
    fn olla_lowers_the_mcs_after_nacks_and_a_lost_tb_comes_back_once() {
        let mut m = mac(1);
        let before = m.mcs(0, DL);
        let max = CellCfg::default().pdsch.max_nof_harq_retxs;
        let (h, _) = m.new_dl_tx(0, 0, tb(10));
        for i in 0..max {
            assert!(m.feedback(DL, 0, h, false, 10 * u64::from(i)).is_none());
            m.ues[0].link[DL].harq[h].retx();
        }
        let (lost, delivered) = m.feedback(DL, 0, h, false, 100).expect("given up");
        assert!(!delivered && lost.prbs == 10);
        assert!(m.mcs(0, DL) < before, "OLLA backed off: {} -> {}", before, m.mcs(0, DL));
        assert_eq!(m.harq(DL, 0, h).state, HarqState::Idle);
    }

    #[test]
    fn only_ues_with_an_idle_process_are_candidates() {
        let mut m = mac(2);
        let n = m.ue(0).link[DL].harq.len();
        for _ in 0..n {
            m.new_dl_tx(0, 0, tb(1));
        }
        assert_eq!(m.order(DL, 12, |_| true), [1], "UE 0 has every process busy");
        assert!(m.order(DL, 12, |ui| ui == 0).is_empty());
    }
}
