//! SCHED, PHY and MAC lines → `slot_events`: every grant the scheduler logs, its HARQ outcome
//! and the UE's buffer status reports (reference §2.8, §2.9).
//!
//! | log line (srsRAN) | row |
//! |---|---|
//! | `SCHED [sfn.slot] Slot decisions …: DL: ue= c-rnti= rb=[a..b) h_id= … rv= tbs=` (info) | DL grant |
//! | `SCHED … Slot decisions …:` + `- UE PDSCH: ue= c-rnti= h_id= rb= … tbs= mcs= rv= nrtx=` (debug) | DL grant (with MCS) |
//! | `SCHED … UL: ue= rnti= h_id= … rb= rv= tbs= k2=` / `- UE PUSCH: …` | UL grant (listed in its PUSCH slot) |
//! | `UL-PHYn [sfn.slot] PUSCH: rnti= h_id= … crc=OK\|KO … sinr=` | the UL grant's outcome (`ack`, `sinr_db`) |
//! | `SCHED … Processed slot events:` + `- CRC: … rx_slot= h_id= crc= sinr=` (debug) | the same, from the scheduler |
//! | `SCHED … Processed slot events:` + `- HARQ-ACK: … h_id= ack=` (debug) | the DL grant's outcome |
//! | `SCHED … Processed slot events:` + `- CSI: ue= rnti=: cqi= ri=` (debug) | the UE's later DL rows' `cqi`, `ri` |
//! | `MAC [sfn.slot] UL … subPDUs: [… SBSR: lcg= bs=, LBSR: lcg= bs= …]` | a BSR row (`bsr_bytes`) |
//! | `SCHED … HARQ … Discarding … HARQ … Maximum number of reTxs N exceeded` | control event `harq_fail` |
//!
//! A grant's row is written when its outcome arrives (or at the end of the log without one).
//! Slots: `[sfn.slot]` contexts are unwrapped into frames since the log's first slot-stamped
//! line; the slots per frame (10·2^μ) are inferred from the largest slot index among the first
//! [`INFER_AFTER`] slot-stamped lines (rows wait until then).

use std::collections::HashMap;

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node, Sink, SlotEvent};
use scout_ran::mac::bsr::BsrFormat;

use super::message::{parse_fields, parse_num};
use super::reader::Entry;

/// Slot-stamped lines seen before the slots per frame are decided.
pub const INFER_AFTER: u64 = 2000;

/// Grants waiting for their outcome, above which the oldest are written without one.
const MAX_PENDING: usize = 4096;

/// Counts for `run.json`.
#[derive(Debug, Default, Clone)]
pub struct SlotStats {
    pub dl_grants: u64,
    pub ul_grants: u64,
    pub ul_crc_ok: u64,
    pub ul_crc_ko: u64,
    pub dl_ack: u64,
    pub dl_nack: u64,
    pub bsr_reports: u64,
    /// CSI reports read (CQI and rank indicator): each UE's last one is its DL rows' `cqi`/`ri`.
    pub csi_reports: u64,
    pub harq_discards: u64,
    /// Grants written without an outcome (no PHY/HARQ line for them), and per direction.
    pub without_outcome: u64,
    pub dl_without_outcome: u64,
    pub ul_without_outcome: u64,
    /// Grants that retransmit a transport block (retransmission index > 0): each implies that
    /// the attempt before it failed (NACK, DTX or CRC KO), logged or not.
    pub dl_retx_grants: u64,
    pub ul_retx_grants: u64,
    /// HARQ processes discarded after the maximum number of retransmissions (the block is lost
    /// to HARQ: its last attempt failed too), per direction; other discards (timeouts).
    pub dl_max_retx_discards: u64,
    pub ul_max_retx_discards: u64,
    /// Outcomes that matched no logged grant (written as rows of their own).
    pub outcome_without_grant: u64,
    pub slots_per_frame: Option<u64>,
    /// The numerology the log states, where it does (else the slots per frame are inferred
    /// from the slot indices).
    pub stated: Option<StatedScs>,
    /// The largest slot index among the slot-stamped lines the inference looked at, and how many.
    pub inferred_from: (u32, u64),
    /// Statements of the subcarrier spacing that disagree with the one used (another cell, or
    /// a log concatenated from two configurations).
    pub numerology_conflicts: u64,
}

/// A subcarrier spacing the log states: kHz, which statement, and where (file number, line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatedScs {
    pub khz: u32,
    pub what: &'static str,
    pub file: usize,
    pub line: u64,
}

/// The common subcarrier spacing (kHz) a log line states, where it states one: srsRAN's
/// configuration dump (`common_scs: 30`, also `30kHz`), its cell line (`SSB derived parameters
/// for cell: … scs:30kHz, ssb_scs:…`) or the RRC JSON's carrier (`"subcarrierSpacing": "kHz30"`).
pub fn stated_scs_khz(line: &str) -> Option<(u32, &'static str)> {
    let khz = |v: &str| -> Option<u32> {
        let d: String = v.trim().trim_start_matches("kHz").chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok().filter(|k| [15, 30, 60, 120, 240, 480, 960].contains(k))
    };
    if let Some(i) = line.find("common_scs:") {
        return khz(&line[i + 11..]).map(|k| (k, "the configuration dump's common_scs"));
    }
    if line.contains("SSB derived parameters") {
        // ` scs:` (the cell's), not `ssb_scs:`.
        let i = line.find(" scs:")?;
        return khz(&line[i + 5..]).map(|k| (k, "the cell line's scs (SSB derived parameters)"));
    }
    if let Some(i) = line.find("\"subcarrierSpacing\": \"") {
        return khz(&line[i + 22..]).map(|k| (k, "the RRC configuration's subcarrierSpacing"));
    }
    None
}

/// `[sfn.slot]` → frames since the first slot-stamped line (SFN wraps at 1024).
#[derive(Default)]
struct Frames {
    last_sfn: Option<u32>,
    abs: i64,
}

impl Frames {
    fn of(&mut self, sfn: u32) -> u64 {
        let Some(last) = self.last_sfn else {
            self.last_sfn = Some(sfn);
            return 0;
        };
        let fwd = (sfn + 1024 - last) % 1024;
        if fwd < 512 {
            self.abs += i64::from(fwd);
            self.last_sfn = Some(sfn);
            self.abs as u64
        } else {
            // A line slightly behind the newest (the logger is asynchronous): not a wrap.
            (self.abs - i64::from(1024 - fwd)).max(0) as u64
        }
    }
}

/// A row and where it sits in time: (frames since start, slot in frame).
type Held = (u64, u8, SlotEvent);

pub struct SlotStitcher {
    epoch_us: i64,
    frames: Frames,
    stamped: u64,
    max_slot: u32,
    spf: Option<u64>,
    held: Vec<Held>,
    /// UL grants by (RNTI, HARQ id, frame, slot), until their CRC.
    pending_ul: HashMap<(u16, u8, u64, u8), Held>,
    /// DL grants by (RNTI, HARQ id), until their HARQ-ACK.
    pending_dl: HashMap<(u16, u8), Held>,
    /// Per HARQ process (direction, RNTI, HARQ id): the retransmission index of its latest grant
    /// and the outcome logged for it, if any. A grant whose redundancy version cannot tell (rv 0:
    /// srsRAN's PUSCH `rv_sequence` is `[0]` by default, so every UL attempt has rv 0) is a
    /// retransmission when the process's previous attempt failed and was not discarded.
    process: HashMap<(bool, u16, u8), (u8, Option<bool>)>,
    /// UL grants whose outcome was already written (debug logs report a PUSCH's CRC twice: in
    /// the PHY line and in the scheduler's `- CRC:` event), the most recent [`MAX_PENDING`].
    resolved_ul: std::collections::VecDeque<(u16, u8, u64, u8)>,
    resolved_ul_set: std::collections::HashSet<(u16, u8, u64, u8)>,
    /// Each UE's (RNTI's) last CSI report: CQI, rank indicator.
    csi: HashMap<u16, (Option<u8>, Option<u8>)>,
    pub stats: SlotStats,
}

/// srsRAN's redundancy version sequence {0, 2, 3, 1} (TS 38.214 Table 5.1.2.1-2 for rv_id
/// cycling; srsRAN's default `rv_sequence`): the position of `rv` is the retransmission index.
fn retx_index(rv: u8) -> u8 {
    match rv {
        0 => 0,
        2 => 1,
        3 => 2,
        _ => 3,
    }
}

/// PRBs of `[a..b)` or `[a, b)`, or a list of such ranges.
fn prbs(v: &str) -> Option<u16> {
    let mut total = 0u32;
    let mut any = false;
    for part in v.split('[').skip(1) {
        let inner = part.split(')').next()?;
        let (a, b) = inner.split_once("..").or_else(|| inner.split_once(", "))?;
        let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        total += b.saturating_sub(a);
        any = true;
    }
    any.then(|| total.min(u32::from(u16::MAX)) as u16)
}

fn field<'a>(f: &[(&'a str, &'a str)], k: &str) -> Option<&'a str> {
    super::message::get_field(f, k)
}

fn num(f: &[(&str, &str)], k: &str) -> Option<u64> {
    field(f, k).and_then(parse_num)
}

/// `(sfn, slot)` of a `sfn.slot` value.
fn sfn_slot(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.split_once('.')?;
    super::line::slot_context((a.parse().ok()?, b.parse().ok()?))
}

impl SlotStitcher {
    pub fn new(epoch_us: i64) -> Self {
        SlotStitcher {
            epoch_us,
            frames: Frames::default(),
            stamped: 0,
            max_slot: 0,
            spf: None,
            held: Vec::new(),
            pending_ul: HashMap::new(),
            pending_dl: HashMap::new(),
            process: HashMap::new(),
            resolved_ul: std::collections::VecDeque::new(),
            resolved_ul_set: std::collections::HashSet::new(),
            csi: HashMap::new(),
            stats: SlotStats::default(),
        }
    }

    fn row(&self, t_ns: i64, dir: Dir, sfn: u32, slot: u32) -> SlotEvent {
        SlotEvent::cell(t_ns, 0, sfn as u16, slot as u8, dir)
    }

    /// Writes a row, or holds it until the slots per frame are known.
    fn emit<S: Sink>(&mut self, held: Held, sink: &mut S) {
        let (frames, slot, mut row) = held;
        match self.spf {
            Some(spf) => {
                row.slot = frames * spf + u64::from(slot);
                sink.slot(row);
            }
            None => self.held.push((frames, slot, row)),
        }
    }

    /// The log states its subcarrier spacing at `file:line` (see [`stated_scs_khz`]): the slots
    /// per frame are 10·2^μ with μ = log2(scs / 15 kHz) (TS 38.211 §4.3.2, Table 4.3.2-1). The
    /// first statement is used; any that disagree are counted.
    pub fn stated_scs<S: Sink>(&mut self, stated: StatedScs, sink: &mut S) {
        let spf = 10 * u64::from(stated.khz / 15);
        match self.spf {
            Some(s) if s == spf => {}
            // Another statement, or one after the inference was made (the first slot lines came
            // before it): what was decided stays; the disagreement is counted.
            Some(_) => self.stats.numerology_conflicts += 1,
            None => {
                self.stats.stated = Some(stated);
                self.decide_spf_as(spf, sink);
            }
        }
    }

    fn decide_spf<S: Sink>(&mut self, sink: &mut S) {
        if self.spf.is_some() {
            return;
        }
        let mut spf = 10;
        while spf <= u64::from(self.max_slot) && spf < 160 {
            spf *= 2;
        }
        self.stats.inferred_from = (self.max_slot, self.stamped);
        self.decide_spf_as(spf, sink);
    }

    fn decide_spf_as<S: Sink>(&mut self, spf: u64, sink: &mut S) {
        self.spf = Some(spf);
        self.stats.slots_per_frame = Some(spf);
        for h in std::mem::take(&mut self.held) {
            self.emit(h, sink);
        }
    }

    /// Handles one entry of file number `file`.
    pub fn entry<S: Sink>(&mut self, e: &Entry<'_>, file: usize, sink: &mut S) {
        let h = e.header;
        // (Per-packet loggers never state it: their lines, most of a log, are not searched.)
        let per_packet = matches!(h.logger, "GTPU" | "SDAP" | "PDCP" | "RLC" | "MAC" | "CU-F1-U" | "DU-F1-U");
        if h.slot.is_none() && !per_packet && (self.spf.is_none() || self.stats.stated.is_some()) {
            // Statements of the numerology come in lines without a slot context; after the first
            // one, later ones are checked against it.
            for (i, l) in std::iter::once(h.body).chain(e.continuation_lines()).enumerate() {
                if let Some((khz, what)) = stated_scs_khz(l) {
                    self.stated_scs(StatedScs { khz, what, file, line: e.line + i as u64 }, sink);
                }
            }
        }
        let Some((sfn, slot)) = h.slot else { return };
        self.stamped += 1;
        self.max_slot = self.max_slot.max(slot);
        if self.stamped == INFER_AFTER {
            self.decide_spf(sink);
        }
        let t = (h.t_us - self.epoch_us) * 1000;
        let body = h.body;
        if h.logger == "SCHED" {
            if let Some(rest) = body.strip_prefix("Slot decisions") {
                let frames = self.frames.of(sfn);
                // Info: the grants follow the header on the same line.
                if let Some(i) = rest.find("): ") {
                    for g in split_entries(&rest[i + 3..]) {
                        self.grant(t, frames, sfn, slot, g, sink);
                    }
                }
                // Debug: one child line per allocation.
                for c in e.continuation_lines() {
                    if let Some(g) = c.strip_prefix("- UE PDSCH: ") {
                        self.grant(t, frames, sfn, slot, &format!("DL: {g}"), sink);
                    } else if let Some(g) = c.strip_prefix("- UE PUSCH: ") {
                        self.grant(t, frames, sfn, slot, &format!("UL: {g}"), sink);
                    }
                }
            } else if body.starts_with("Processed slot events") {
                for c in e.continuation_lines() {
                    if let Some(x) = c.strip_prefix("- CRC: ") {
                        let f = parse_fields(x);
                        let ok = field(&f, "crc").map(|v| matches!(v, "1" | "OK" | "true" | "ok"));
                        let sinr = field(&f, "sinr").and_then(|v| v.trim_end_matches("dB").parse().ok());
                        let at = field(&f, "rx_slot").and_then(sfn_slot).unwrap_or((sfn, slot));
                        self.ul_outcome(t, at, &f, ok, sinr, sink);
                    } else if let Some(x) = c.strip_prefix("- CSI: ") {
                        self.csi(x);
                    } else if let Some(x) = c.strip_prefix("- HARQ-ACK: ") {
                        let f = parse_fields(x);
                        // ack: 0 = NACK, 1 = ACK, 2 = DTX (no feedback: retransmitted as a NACK).
                        let ack = num(&f, "ack").map(|a| a == 1);
                        self.dl_outcome(t, sfn, slot, &f, ack, sink);
                    }
                }
            } else if body.contains("Discarding") && body.contains("HARQ") {
                self.harq_discard(t, body, sink);
            }
        } else if h.logger.starts_with("UL-PHY") || h.logger == "PHY" {
            if let Some(x) = body.strip_prefix("PUSCH: ") {
                let f = parse_fields(x);
                let ok = field(&f, "crc").map(|v| v == "OK");
                let sinr = field(&f, "sinr").and_then(|v| v.trim_end_matches("dB").parse().ok());
                self.ul_outcome(t, (sfn, slot), &f, ok, sinr, sink);
            }
        } else if h.logger == "MAC" && body.starts_with("UL ") && body.contains("BSR: ") {
            self.bsr(t, sfn, slot, body, sink);
        }
    }

    /// A CSI report, `ue=0 rnti=0x4601: cqi=15 ri=1`: the UE's DL rows from now on carry it (as
    /// Scout's model writes the last CQI and RI reported).
    fn csi(&mut self, x: &str) {
        let (who, what) = x.split_once(": ").unwrap_or((x, x));
        let (who, what) = (parse_fields(who), parse_fields(what));
        let Some(rnti) = num(&who, "rnti").or_else(|| num(&who, "c-rnti")) else { return };
        let (cqi, ri) = (num(&what, "cqi").map(|v| v as u8), num(&what, "ri").map(|v| v as u8));
        if cqi.is_some() || ri.is_some() {
            self.stats.csi_reports += 1;
            self.csi.insert(rnti as u16, (cqi, ri));
        }
    }

    fn grant<S: Sink>(&mut self, t: i64, frames: u64, sfn: u32, slot: u32, g: &str, sink: &mut S) {
        let dir = if g.starts_with("DL: ") {
            Dir::Dl
        } else if g.starts_with("UL: ") {
            Dir::Ul
        } else {
            return; // RAR, SIB1, paging: not a UE's data
        };
        let f = parse_fields(&g[4..]);
        let Some(rnti) = num(&f, "c-rnti").or_else(|| num(&f, "rnti")).or_else(|| num(&f, "tc-rnti")) else { return };
        let mut row = self.row(t, dir, sfn, slot);
        row.ue = num(&f, "ue").map(|u| u as u32);
        row.rnti = Some(rnti as u16);
        row.harq_id = num(&f, "h_id").map(|h| h as u8);
        row.prbs = field(&f, "rb").and_then(prbs).unwrap_or(0);
        row.tbs = num(&f, "tbs").map(|v| v as u32);
        row.mcs = num(&f, "mcs").map(|v| v as u8);
        row.rv = num(&f, "rv").map(|v| v as u8);
        row.layers = num(&f, "nof_layers").or_else(|| num(&f, "ri")).map(|v| v as u8);
        if dir == Dir::Dl {
            if let Some(&(cqi, ri)) = self.csi.get(&(rnti as u16)) {
                (row.cqi, row.ri) = (cqi, ri);
            }
        }
        let stated = num(&f, "nrtx").map(|n| n as u8).or_else(|| field(&f, "newtx").map(|v| u8::from(v == "false")));
        let h_id = row.harq_id.unwrap_or(0);
        let key = (dir == Dir::Dl, rnti as u16, h_id);
        row.retx_index = stated.or_else(|| {
            let from_rv = row.rv.map(retx_index);
            match (from_rv, self.process.get(&key)) {
                // rv 0 after a failed attempt of the same process: its next retransmission.
                (Some(0) | None, Some(&(last, Some(false)))) => Some(last.saturating_add(1)),
                (r, _) => r,
            }
        });
        if let Some(r) = row.retx_index {
            self.process.insert(key, (r, None));
        }
        let retx = row.retx_index.is_some_and(|r| r > 0);
        let held = (frames, slot as u8, row);
        if dir == Dir::Dl {
            self.stats.dl_grants += 1;
            self.stats.dl_retx_grants += u64::from(retx);
            if let Some(old) = self.pending_dl.insert((rnti as u16, h_id), held) {
                self.without_outcome(old, sink);
            }
        } else {
            self.stats.ul_grants += 1;
            self.stats.ul_retx_grants += u64::from(retx);
            if let Some(old) = self.pending_ul.insert((rnti as u16, h_id, frames, slot as u8), held) {
                self.without_outcome(old, sink);
            }
        }
        if self.pending_ul.len() + self.pending_dl.len() > MAX_PENDING {
            self.flush_oldest(frames, sink);
        }
    }

    fn without_outcome<S: Sink>(&mut self, h: Held, sink: &mut S) {
        self.stats.without_outcome += 1;
        match h.2.dir {
            Dir::Dl => self.stats.dl_without_outcome += 1,
            Dir::Ul => self.stats.ul_without_outcome += 1,
        }
        self.emit(h, sink);
    }

    /// Writes grants more than 100 frames old without an outcome (bounds memory when the log has
    /// no PHY or HARQ lines).
    fn flush_oldest<S: Sink>(&mut self, now_frames: u64, sink: &mut S) {
        let old = |f: u64| f + 100 < now_frames;
        let ul: Vec<_> = self.pending_ul.keys().filter(|k| old(k.2)).copied().collect();
        for k in ul {
            if let Some(h) = self.pending_ul.remove(&k) {
                self.without_outcome(h, sink);
            }
        }
        let dl: Vec<_> = self.pending_dl.iter().filter(|(_, h)| old(h.0)).map(|(k, _)| *k).collect();
        for k in dl {
            if let Some(h) = self.pending_dl.remove(&k) {
                self.without_outcome(h, sink);
            }
        }
    }

    fn ul_outcome<S: Sink>(
        &mut self,
        t: i64,
        at: (u32, u32),
        f: &[(&str, &str)],
        ok: Option<bool>,
        sinr: Option<f32>,
        sink: &mut S,
    ) {
        let (Some(rnti), Some(h_id)) = (num(f, "rnti").or_else(|| num(f, "c-rnti")), num(f, "h_id")) else { return };
        let frames = self.frames.of(at.0);
        let key = (rnti as u16, h_id as u8, frames, at.1 as u8);
        if !self.resolved_ul_set.insert(key) {
            return; // the same CRC, reported again
        }
        if self.resolved_ul.len() == MAX_PENDING {
            if let Some(old) = self.resolved_ul.pop_front() {
                self.resolved_ul_set.remove(&old);
            }
        }
        self.resolved_ul.push_back(key);
        match ok {
            Some(true) => self.stats.ul_crc_ok += 1,
            Some(false) => self.stats.ul_crc_ko += 1,
            None => {}
        }
        if let Some(p) = self.process.get_mut(&(false, rnti as u16, h_id as u8)) {
            p.1 = ok;
        }
        let held = match self.pending_ul.remove(&key) {
            Some((fr, sl, mut row)) => {
                row.ack = ok;
                row.sinr_db = sinr;
                (fr, sl, row)
            }
            None => {
                // No grant line for it (SCHED at warning level): the PHY line alone.
                self.stats.outcome_without_grant += 1;
                let mut row = self.row(t, Dir::Ul, at.0, at.1);
                row.rnti = Some(rnti as u16);
                row.harq_id = Some(h_id as u8);
                row.prbs = field(f, "prb").and_then(prbs).unwrap_or(0);
                row.tbs = num(f, "tbs").map(|v| v as u32);
                row.rv = num(f, "rv").map(|v| v as u8);
                row.retx_index = row.rv.map(retx_index);
                row.ack = ok;
                row.sinr_db = sinr;
                (frames, at.1 as u8, row)
            }
        };
        self.emit(held, sink);
    }

    fn dl_outcome<S: Sink>(
        &mut self,
        t: i64,
        sfn: u32,
        slot: u32,
        f: &[(&str, &str)],
        ack: Option<bool>,
        sink: &mut S,
    ) {
        let (Some(rnti), Some(h_id)) = (num(f, "rnti"), num(f, "h_id")) else { return };
        match ack {
            Some(true) => self.stats.dl_ack += 1,
            Some(false) => self.stats.dl_nack += 1,
            None => {}
        }
        if let Some(p) = self.process.get_mut(&(true, rnti as u16, h_id as u8)) {
            p.1 = ack;
        }
        let held = match self.pending_dl.remove(&(rnti as u16, h_id as u8)) {
            Some((fr, sl, mut row)) => {
                row.ack = ack;
                (fr, sl, row)
            }
            None => {
                self.stats.outcome_without_grant += 1;
                let mut row = self.row(t, Dir::Dl, sfn, slot);
                row.ue = num(f, "ue").map(|u| u as u32);
                row.rnti = Some(rnti as u16);
                row.harq_id = Some(h_id as u8);
                row.tbs = num(f, "tbs").map(|v| v as u32);
                row.ack = ack;
                (self.frames.of(sfn), slot as u8, row)
            }
        };
        self.emit(held, sink);
    }

    /// `UL rnti=… ue=… subPDUs: [SBSR: lcg=1 bs=14, …]` or `[LBSR: lcg=0 bs=3 lcg=1 bs=31 , …]`:
    /// the buffer size indexes of TS 38.321 Tables 6.1.3.1-1 (short, 5 bits) and 6.1.3.1-2 (long,
    /// 8 bits), as bytes (the upper bound of each index's range, as srsRAN's scheduler assumes),
    /// summed over the logical channel groups.
    fn bsr<S: Sink>(&mut self, t: i64, sfn: u32, slot: u32, body: &str, sink: &mut S) {
        let f = parse_fields(body);
        let mut total = 0u64;
        let mut any = false;
        for (kind, fmt) in [("SBSR: ", BsrFormat::Short), ("LBSR: ", BsrFormat::Long)] {
            let Some(i) = body.find(kind) else { continue };
            let part = &body[i + kind.len()..];
            let part = part.split(", ").next().unwrap_or("");
            for (k, v) in parse_fields(part) {
                if k == "bs" {
                    if let Ok(idx) = v.parse::<u8>() {
                        total += fmt.bytes(idx);
                        any = true;
                    }
                }
            }
        }
        if !any {
            return;
        }
        self.stats.bsr_reports += 1;
        let mut row = self.row(t, Dir::Ul, sfn, slot);
        row.ue = num(&f, "ue").map(|u| u as u32);
        row.rnti = num(&f, "rnti").map(|r| r as u16);
        row.bsr_bytes = Some(total);
        let frames = self.frames.of(sfn);
        self.emit((frames, slot as u8, row), sink);
    }

    fn harq_discard<S: Sink>(&mut self, t: i64, body: &str, sink: &mut S) {
        self.stats.harq_discards += 1;
        let f = parse_fields(body);
        let dir = if body.contains("UL HARQ") {
            Some(Dir::Ul)
        } else if body.contains("DL HARQ") {
            Some(Dir::Dl)
        } else {
            None
        };
        let cause = body.split("Cause: ").nth(1).unwrap_or("").trim();
        if let (Some(d), Some(rnti), Some(h)) = (dir, num(&f, "rnti"), num(&f, "h_id")) {
            // The process starts again with a new transport block.
            self.process.remove(&(d == Dir::Dl, rnti as u16, h as u8));
        }
        if cause.starts_with("Maximum number of reTxs") {
            match dir {
                Some(Dir::Dl) => self.stats.dl_max_retx_discards += 1,
                Some(Dir::Ul) => self.stats.ul_max_retx_discards += 1,
                None => {}
            }
        }
        sink.control(ControlEvent {
            t_ns: t,
            node: Node::GnbDu,
            layer: Layer::Mac,
            kind: ControlKind::HarqFail,
            dir,
            ue: None,
            drb: None,
            sn: num(&f, "h_id").map(|v| v as i64),
            value: num(&f, "tbs").map(|v| v as f64),
            detail: Some(
                serde_json::json!({"rnti": num(&f, "rnti"), "h_id": num(&f, "h_id"), "tbs": num(&f, "tbs"), "cause": cause})
                    .to_string(),
            ),
        });
    }

    /// Writes every row still waiting (grants without an outcome, rows held for the slot count).
    pub fn finish<S: Sink>(&mut self, sink: &mut S) {
        self.decide_spf(sink);
        let mut rest: Vec<Held> = self.pending_ul.drain().map(|(_, h)| h).collect();
        rest.extend(self.pending_dl.drain().map(|(_, h)| h));
        rest.sort_by_key(|h| h.2.t_ns);
        for h in rest {
            self.without_outcome(h, sink);
        }
    }
}

/// The grants of an info `Slot decisions` line: `DL: …, UL: …, RAR: …` (entries may themselves
/// contain `, ` inside brackets).
fn split_entries(s: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut depth = 0i32;
    let b = s.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'[' | b'(' | b'{' => depth += 1,
            b']' | b')' | b'}' => depth -= 1,
            b',' if depth <= 0 && s[i + 1..].starts_with(' ') => {
                let next = &s[i + 2..];
                let tag = next.split(' ').next().unwrap_or("");
                if tag.ends_with(':') && tag.len() > 1 && tag.as_bytes()[0].is_ascii_uppercase() {
                    out.push(&s[start..i]);
                    start = i + 2;
                }
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_decision_entries_split_at_their_tags_only() {
        let s = "DL: ue=0 c-rnti=0x4601 rb=[0..1) h_id=0 ss_id=2 k1=4 rv=0 tbs=14, UL: ue=0 rnti=0x4601 h_id=0 rb=[3..50) rv=0 tbs=301 k2=4";
        let e = split_entries(s);
        assert_eq!(e.len(), 2);
        assert!(e[0].starts_with("DL: ") && e[0].ends_with("tbs=14"));
        assert!(e[1].starts_with("UL: ") && e[1].ends_with("k2=4"));
        assert_eq!(split_entries("RAR: ra-rnti=0x39 rb=[0..3) tbs=10").len(), 1);
    }

    #[test]
    fn prb_ranges_in_both_notations() {
        assert_eq!(prbs("[3..50)"), Some(47));
        assert_eq!(prbs("[3, 50)"), Some(47));
        assert_eq!(prbs("{[0..5), [10..15)}"), Some(10));
        assert_eq!(prbs("x"), None);
    }

    #[test]
    fn rv_sequence_gives_the_retransmission_index() {
        assert_eq!([0, 2, 3, 1].map(retx_index), [0, 1, 2, 3]);
    }

    #[test]
    fn sfn_wraps_and_late_lines() {
        let mut f = Frames::default();
        assert_eq!(f.of(1020), 0);
        assert_eq!(f.of(1023), 3);
        assert_eq!(f.of(2), 6, "wrap");
        assert_eq!(f.of(1023), 3, "a line from before the wrap");
        assert_eq!(f.of(3), 7);
    }
}
