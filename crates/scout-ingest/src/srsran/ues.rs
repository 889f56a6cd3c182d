//! One UE identity per run: connections, the three index spaces, and 5G-S-TMSI continuity.
//!
//! srsRAN gives a UE an index in each of three spaces (reference §1.3): the **DU** index (RLC,
//! MAC, SCHED, DU-F1-U), the **CU-UP** index (GTP-U, SDAP, DRB PDCP) and the **CU-CP** index (RRC,
//! NGAP, SRB PDCP). Indexes are reused once a UE leaves, and a UE that leaves and comes back (RRC
//! release, then a new RRC setup) gets new indexes and a new C-RNTI. The RAN keeps no persistent UE
//! identity; SCOUT (seed 000 §4) keeps one by reconciling C-RNTI and 5G-S-TMSI across CU and DU
//! through F1AP and RRC signalling. Scout does the same:
//!
//! - A **connection** starts at a DU's UE creation (`DU-MNG … proc="UE Create"` or `DU-F1 … F1 UE
//!   context created`, with the DU index and C-RNTI) and ends at `F1 UE context removed`. Events
//!   whose DU index has no such line (a log that starts mid-connection) belong to an implicit
//!   connection of that index.
//! - The **CU-CP** UE of a connection is stated by `CU-CP … ue=N c-rnti=R: UE created` (the
//!   C-RNTI; 23.10 prints it in decimal) or by `CU-CP-F1 … ue=N du_ue_id=D …: Added UE context`
//!   (the gNB-DU UE F1AP ID of the DU's `F1 UE context created` line). NGAP lines give its RAN/AMF
//!   UE NGAP IDs.
//! - The **CU-UP** UE is stated by E1AP lines: `CU-CP-E1 … ue=N cu_cp_ue=E` and `CU-UP-E1 … ue=M
//!   cu_cp_ue=E` share the gNB-CU-CP UE E1AP ID E. (srsRAN's E1AP PDU log prints `cu_up_ue=` with
//!   the CU-CP id's value, so `cu_up_ue` is not used.) Without E1AP lines the CU-UP index is bound
//!   from the traffic (`identity.rs`).
//! - **Continuity**: the RRC setup of a returning UE carries its 5G-S-TMSI (TS 38.331
//!   `RRCSetupRequest` `ng-5G-S-TMSI-Part1` = its rightmost 39 bits, `RRCSetupComplete`
//!   `ng-5G-S-TMSI-Value` = all 48 bits or `ng-5G-S-TMSI-Part2` = the leftmost 9; TS 23.003 §2.10).
//!   srsRAN logs these messages as JSON at RRC debug level. A connection whose 5G-S-TMSI (its 39
//!   rightmost bits) was seen on an earlier connection is the same UE and keeps that UE's identity.
//!
//! The `ue` of every event is the run's UE id: the DU index of the UE's first connection when no
//! other UE used that number before, else the next number unused. While a connection may still turn
//! out to be a returning UE (some earlier connection's 5G-S-TMSI is known and this one's RRC setup
//! has not said yet) its events are held; the RRC setup decides within milliseconds.

use std::collections::{BTreeSet, HashMap};

use scout_events::Sink;
use scout_events::{ControlEvent, PacketEvent, SlotEvent};
use serde_json::{json, Value};

use super::identity::UeIds;
use super::message::parse_num;
use super::reader::Entry;

/// srsRAN's invalid DU UE index (`MAX_NOF_DU_UES`, `include/srsran/ran/du_types.h`): the `ue=`
/// of a Msg3 grant, made before the UE context exists (its RNTI is the TC-RNTI).
pub const INVALID_DU_UE: u32 = 1024;

/// Events held for one undecided connection, beyond which it is taken to be a new UE.
const MAX_HELD: usize = 20_000;

#[derive(Clone, Debug, Default)]
pub struct Conn {
    pub du: u32,
    pub implicit: bool,
    pub start_t_ns: i64,
    pub end_t_ns: Option<i64>,
    pub line: (usize, u64),
    pub rnti: Option<u16>,
    pub du_f1ap: Option<u64>,
    pub cu_f1ap: Option<u64>,
    pub cu_cp: Option<u32>,
    pub cu_up: Option<u32>,
    pub ran_ue_id: Option<u64>,
    pub amf_ue_id: Option<u64>,
    /// The 5G-S-TMSI's rightmost 39 bits (`ng-5G-S-TMSI-Part1`) and, when known, all 48.
    pub tmsi39: Option<u64>,
    pub tmsi48: Option<u64>,
    /// The run's UE id, once decided.
    pub ue: Option<u32>,
    /// How `ue` was decided.
    pub decided_by: &'static str,
    /// Waiting for the `RRCSetupComplete` after an `RRCSetupRequest` with a random value.
    awaiting_complete: bool,
}

enum Held {
    P(PacketEvent),
    S(SlotEvent),
    C(ControlEvent),
}

#[derive(Default)]
pub struct UeMap {
    pub conns: Vec<Conn>,
    /// Connections per DU index, in start order.
    by_du: HashMap<u32, Vec<usize>>,
    /// The current connection of each CU-CP index.
    cu_cp: HashMap<u32, usize>,
    /// E1AP: gNB-CU-CP UE E1AP ID → CU-CP index, and → CU-UP index.
    e1_cp: HashMap<u64, u32>,
    e1_up: HashMap<u64, u32>,
    /// Run UE ids given so far.
    used: BTreeSet<u32>,
    /// 5G-S-TMSI (rightmost 39 bits) → run UE id.
    by_tmsi: HashMap<u64, u32>,
    held: HashMap<usize, Vec<Held>>,
    /// Msg3 grants (DU index 1024) per TC-RNTI, until the UE context of that RNTI is created.
    msg3: HashMap<u16, Vec<SlotEvent>>,
    pub returning: usize,
    /// The log shows RRC message contents (debug level): connections wait for their RRC setup.
    rrc_json: bool,
    /// CU-CP lines about a CU-CP index no connection was found for.
    pub unmatched_cu_cp: u64,
}

fn field<'a>(body: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = body[from..].find(key) {
        let at = from + i;
        if at == 0 || matches!(body.as_bytes()[at - 1], b' ' | b'[' | b'(' | b',') {
            let v = &body[at + key.len()..];
            return Some(&v[..v.find([' ', ',', ':', ')']).unwrap_or(v.len())]);
        }
        from = at + key.len();
    }
    None
}

fn num(body: &str, key: &str) -> Option<u64> {
    parse_num(field(body, key)?)
}

/// The value of a JSON string member `"key": "bits"` in an ASN.1 JSON dump, as a number.
fn json_bits(text: &str, key: &str) -> Option<(u64, usize)> {
    let pat = format!("\"{key}\": \"");
    let i = text.find(&pat)? + pat.len();
    let v = &text[i..];
    let bits = &v[..v.find('"')?];
    if bits.is_empty() || bits.len() > 64 || !bits.bytes().all(|b| b == b'0' || b == b'1') {
        return None;
    }
    Some((u64::from_str_radix(bits, 2).ok()?, bits.len()))
}

/// The value of a JSON integer member `"key": N`.
fn json_int(text: &str, key: &str) -> Option<u64> {
    let pat = format!("\"{key}\": ");
    let i = text.find(&pat)? + pat.len();
    let v = &text[i..];
    v[..v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len())].parse().ok()
}

const MASK39: u64 = (1 << 39) - 1;

impl UeMap {
    /// Reads the identity lines of an entry (DU-F1, DU-MNG, CU-CP, CU-CP-F1, NGAP, RRC, E1AP).
    /// Stated CU-UP ↔ DU bindings are handed to `ids`; decided connections' held events to `sink`.
    pub fn entry<S: Sink>(&mut self, e: &Entry, file: usize, t_ns: i64, ids: &mut UeIds, sink: &mut S) {
        let h = &e.header;
        let b = h.body;
        match h.logger {
            "DU-MNG" if b.contains("proc=\"UE Create\": Procedure started") => {
                if let (Some(du), rnti) = (num(b, "ue="), num(b, "rnti=")) {
                    self.open(du as u32, rnti.map(|r| r as u16), None, t_ns, (file, e.line), sink);
                }
            }
            "DU-F1" => self.du_f1(b, t_ns, (file, e.line), sink),
            "CU-CP" if b.contains(": UE created") => {
                let (Some(cp), Some(rnti)) = (num(b, "ue="), num(b, "c-rnti=")) else { return };
                let found = self.conns.iter().rposition(|c| c.rnti == Some(rnti as u16) && c.cu_cp.is_none());
                self.attach_cu_cp(cp as u32, found);
            }
            "CU-CP-F1" if b.contains("Added UE context") => {
                let (Some(cp), Some(d)) = (num(b, "ue="), num(b, "du_ue_id=")) else { return };
                if self.cu_cp.get(&(cp as u32)).is_some_and(|&c| self.conns[c].end_t_ns.is_none()) {
                    return;
                }
                let found = self.conns.iter().rposition(|c| c.du_f1ap == Some(d) && c.cu_cp.is_none());
                self.attach_cu_cp(cp as u32, found);
            }
            "NGAP" => {
                let (Some(cp), Some(ran)) = (num(b, "ue="), num(b, "ran_ue_id=")) else { return };
                let Some(&c) = self.cu_cp.get(&(cp as u32)) else { return };
                let conn = &mut self.conns[c];
                // The first line with both IDs is taken: 23.10 prints the two swapped on some
                // lines (e.g. `Sending PduSessionResourceSetupResponse`).
                if conn.ran_ue_id.is_none() {
                    if let Some(amf) = num(b, "amf_ue_id=") {
                        conn.ran_ue_id = Some(ran);
                        conn.amf_ue_id = Some(amf);
                    }
                }
            }
            "RRC" => self.rrc(e, b, sink),
            "CU-CP-E1" | "CU-UP-E1" => {
                let (Some(idx), Some(e1)) = (num(b, "ue="), num(b, "cu_cp_ue=")) else { return };
                if h.logger == "CU-CP-E1" {
                    self.e1_cp.insert(e1, idx as u32);
                } else {
                    self.e1_up.insert(e1, idx as u32);
                }
                let (Some(&cp), Some(&up)) = (self.e1_cp.get(&e1), self.e1_up.get(&e1)) else { return };
                let Some(&c) = self.cu_cp.get(&cp) else { return };
                let conn = &mut self.conns[c];
                if conn.cu_up != Some(up) {
                    conn.cu_up = Some(up);
                    let du = conn.du;
                    ids.state(up, du, e.line, &mut self.sink(sink));
                }
            }
            _ => {}
        }
    }

    /// A DU-F1 line: an F1 UE context created (a connection opens), the F1AP IDs of an open one,
    /// or its context removed (it ends).
    fn du_f1<S: Sink>(&mut self, b: &str, t_ns: i64, at: (usize, u64), sink: &mut S) {
        let Some(du) = num(b, "ue=").map(|u| u as u32) else { return };
        let rnti = num(b, "c-rnti=").map(|r| r as u16);
        let du_f1ap = num(b, "GNB-DU-UE-F1AP-ID=").or_else(|| num(b, "du_ue_id=")).or_else(|| num(b, "du_ue="));
        let cu_f1ap = num(b, "GNB-CU-UE-F1AP-ID=").or_else(|| num(b, "cu_ue_id=")).or_else(|| num(b, "cu_ue="));
        if b.contains("F1 UE context created") {
            self.open(du, rnti, du_f1ap, t_ns, at, sink);
        } else if let Some(&c) = self.by_du.get(&du).and_then(|v| v.last()) {
            let conn = &mut self.conns[c];
            if conn.end_t_ns.is_some() {
                return;
            }
            conn.cu_f1ap = conn.cu_f1ap.or(cu_f1ap);
            conn.du_f1ap = conn.du_f1ap.or(du_f1ap);
            if b.contains("F1 UE context removed") {
                conn.end_t_ns = Some(t_ns);
                self.decide_new(c, "connection ended before its RRC setup said", sink);
            }
        }
    }

    /// An RRC line: the connection's CU-CP index, and what its RRC messages say of the UE
    /// (re-establishment naming an earlier C-RNTI, the 5G-S-TMSI of setup request and complete).
    fn rrc<S: Sink>(&mut self, e: &Entry, b: &str, sink: &mut S) {
        let Some(cp) = num(b, "ue=").map(|u| u as u32) else { return };
        if !self.cu_cp.contains_key(&cp) {
            // 24.04+ RRC lines carry the C-RNTI: `ue=0 c-rnti=0x4601: …`.
            if let Some(r) = num(b, "c-rnti=") {
                let found = self.conns.iter().rposition(|c| c.rnti == Some(r as u16) && c.cu_cp.is_none());
                self.attach_cu_cp(cp, found);
            }
        }
        let Some(&c) = self.cu_cp.get(&cp) else {
            self.unmatched_cu_cp += 1;
            return;
        };
        if b.contains("Containerized rrc") {
            self.rrc_json = true;
        }
        if b.contains("Containerized rrcReestablishmentRequest") {
            // TS 38.331 §5.3.7: the UE names the C-RNTI it had (`ue-Identity.c-RNTI`).
            let old = json_int(e.continuation, "c-RNTI");
            let prev =
                old.and_then(|r| self.conns[..c].iter().rposition(|p| p.rnti == Some(r as u16) && p.ue.is_some()));
            match prev.and_then(|p| self.conns[p].ue) {
                Some(ue) if self.conns[c].ue.is_none() => {
                    self.returning += 1;
                    self.decide(c, ue, "RRC re-establishment naming an earlier connection's C-RNTI", sink);
                }
                _ => self.decide_new(c, "new: RRC re-establishment naming no known C-RNTI", sink),
            }
        } else if b.contains("Containerized rrcSetupRequest") {
            match json_bits(e.continuation, "ng-5G-S-TMSI-Part1") {
                Some((v, 39)) => {
                    self.conns[c].tmsi39 = Some(v);
                    self.learned_tmsi(c, "5G-S-TMSI part 1 in RRCSetupRequest", sink);
                }
                _ => self.conns[c].awaiting_complete = true,
            }
        } else if b.contains("Containerized rrcSetupComplete") {
            let conn = &mut self.conns[c];
            conn.awaiting_complete = false;
            match (json_bits(e.continuation, "ng-5G-S-TMSI"), json_bits(e.continuation, "ng-5G-S-TMSI-Part2")) {
                (Some((v, 48)), _) => {
                    conn.tmsi48 = Some(v);
                    conn.tmsi39 = Some(v & MASK39);
                    self.learned_tmsi(c, "5G-S-TMSI in RRCSetupComplete", sink);
                }
                (_, Some((p2, 9))) => {
                    if let Some(p1) = conn.tmsi39 {
                        conn.tmsi48 = Some(p2 << 39 | p1);
                    }
                }
                _ => self.decide_new(c, "RRCSetupComplete without a 5G-S-TMSI", sink),
            }
        }
    }

    /// Any text with a `c-rnti=` in decimal (23.10 CU-CP) or hex parses through `parse_num`.
    fn attach_cu_cp(&mut self, cp: u32, conn: Option<usize>) {
        match conn {
            Some(c) => {
                self.conns[c].cu_cp = Some(cp);
                self.cu_cp.insert(cp, c);
            }
            None => self.unmatched_cu_cp += 1,
        }
    }

    fn open<S: Sink>(
        &mut self,
        du: u32,
        rnti: Option<u16>,
        du_f1ap: Option<u64>,
        t_ns: i64,
        line: (usize, u64),
        sink: &mut S,
    ) {
        // `DU-MNG … UE Create` and `F1 UE context created` name the same connection.
        if let Some(&c) = self.by_du.get(&du).and_then(|v| v.last()) {
            let conn = &mut self.conns[c];
            if !conn.implicit && conn.end_t_ns.is_none() && (conn.rnti == rnti || rnti.is_none()) {
                conn.du_f1ap = conn.du_f1ap.or(du_f1ap);
                return;
            }
            if conn.end_t_ns.is_none() {
                conn.end_t_ns = Some(t_ns);
                self.decide_new(c, "connection ended before its RRC setup said", sink);
            }
        }
        let c = self.conns.len();
        self.conns.push(Conn { du, start_t_ns: t_ns, line, rnti, du_f1ap, ..Conn::default() });
        self.by_du.entry(du).or_default().push(c);
        let msg3 = rnti.and_then(|r| self.msg3.remove(&r)).unwrap_or_default();
        if !self.rrc_json {
            // No RRC message contents logged so far: nothing can tell that this is a returning UE.
            self.decide_new(c, "new: no RRC contents logged (RRC debug JSON) to tell a returning UE", sink);
        }
        // The random access that created it: its Msg3 grants are the connection's first rows.
        for mut ev in msg3 {
            match self.conns[c].ue {
                Some(ue) => {
                    ev.ue = Some(ue);
                    sink.slot(ev);
                }
                None => self.held.entry(c).or_default().push(Held::S(ev)),
            }
        }
    }

    fn learned_tmsi<S: Sink>(&mut self, c: usize, how: &'static str, sink: &mut S) {
        let Some(key) = self.conns[c].tmsi39 else { return };
        match (self.conns[c].ue, self.by_tmsi.get(&key).copied()) {
            (None, Some(ue)) => {
                self.returning += 1;
                self.decide(c, ue, how, sink);
            }
            (None, None) => self.decide_new(c, "new: its 5G-S-TMSI was not seen before", sink),
            (Some(_), _) => {}
        }
        if let Some(ue) = self.conns[c].ue {
            self.by_tmsi.entry(key).or_insert(ue);
        }
    }

    fn decide_new<S: Sink>(&mut self, c: usize, how: &'static str, sink: &mut S) {
        if self.conns[c].ue.is_some() {
            return;
        }
        let pref = self.conns[c].du;
        let ue = if self.used.contains(&pref) { self.used.last().map_or(0, |u| u + 1) } else { pref };
        self.decide(c, ue, how, sink);
    }

    fn decide<S: Sink>(&mut self, c: usize, ue: u32, how: &'static str, sink: &mut S) {
        self.used.insert(ue);
        self.conns[c].ue = Some(ue);
        self.conns[c].decided_by = how;
        for h in self.held.remove(&c).unwrap_or_default() {
            match h {
                Held::P(mut ev) => {
                    // The srsRAN ingest's flow is the UE's (identity.rs): it moves with it.
                    (ev.ue, ev.flow) = (ue, ue);
                    sink.packet(ev);
                }
                Held::S(mut ev) => {
                    ev.ue = Some(ue);
                    sink.slot(ev);
                }
                Held::C(mut ev) => {
                    ev.ue = Some(ue);
                    sink.control(ev);
                }
            }
        }
    }

    /// The connection an event of DU index `du` at `t_ns` belongs to: the last one started by then
    /// (or the first, for events logged before it started); an implicit one when none is known.
    fn conn_of(&mut self, du: u32, t_ns: i64) -> usize {
        debug_assert!(du < INVALID_DU_UE);
        if let Some(v) = self.by_du.get(&du) {
            // Nearly every event is of the index's newest connection.
            let last = v[v.len() - 1];
            if self.conns[last].start_t_ns <= t_ns {
                return last;
            }
            let i = v.partition_point(|&c| self.conns[c].start_t_ns <= t_ns);
            return v[i.saturating_sub(1)];
        }
        let c = self.conns.len();
        self.conns.push(Conn { du, implicit: true, start_t_ns: i64::MIN, ..Conn::default() });
        self.by_du.insert(du, vec![c]);
        let pref = du;
        let ue = if self.used.contains(&pref) { self.used.last().map_or(0, |u| u + 1) } else { pref };
        self.used.insert(ue);
        self.conns[c].ue = Some(ue);
        self.conns[c].decided_by = "implicit: events of a DU index without a UE creation line";
        c
    }

    /// A sink that gives events their run UE id (their `ue` is a DU index on the way in).
    pub fn sink<'a, S: Sink>(&'a mut self, inner: &'a mut S) -> UeSink<'a, S> {
        UeSink { m: self, inner }
    }

    /// Decides what is still undecided (as new UEs) and writes what was held.
    pub fn finish<S: Sink>(&mut self, sink: &mut S) {
        // Random accesses that created no UE context keep srsRAN's invalid index.
        let mut msg3: Vec<_> = self.msg3.drain().collect();
        msg3.sort_by_key(|(r, _)| *r);
        for ev in msg3.into_iter().flat_map(|(_, v)| v) {
            sink.slot(ev);
        }
        for c in 0..self.conns.len() {
            self.decide_new(c, "new: the log ended before its RRC setup said", sink);
        }
    }

    /// `run.json` `flows`: srsRAN logs name no 5-tuples, so a run's flow is a UE (all its bearers),
    /// numbered by the run's UE id.
    pub fn flows_json(&self) -> Value {
        Value::Array(self.used.iter().map(|u| json!({"flow": u, "ue": u, "type": "ue"})).collect())
    }

    pub fn to_json(&self) -> Value {
        let conns: Vec<Value> = self
            .conns
            .iter()
            .map(|c| {
                json!({
                    "ue": c.ue, "du_ue": c.du, "cu_cp_ue": c.cu_cp, "cu_up_ue": c.cu_up,
                    "c_rnti": c.rnti.map(|r| format!("{r:#06x}")),
                    "gnb_du_ue_f1ap_id": c.du_f1ap, "gnb_cu_ue_f1ap_id": c.cu_f1ap,
                    "ran_ue_ngap_id": c.ran_ue_id, "amf_ue_ngap_id": c.amf_ue_id,
                    "five_g_s_tmsi": c.tmsi48.map(|v| format!("{v:012x}")),
                    "five_g_s_tmsi_part1": c.tmsi39.map(|v| format!("{v:010x}")),
                    "start_s": (!c.implicit).then_some(c.start_t_ns as f64 / 1e9),
                    "end_s": c.end_t_ns.map(|t| t as f64 / 1e9),
                    "line": (!c.implicit).then_some(c.line.1),
                    "implicit": c.implicit,
                    "ue_decided_by": c.decided_by,
                })
            })
            .collect();
        json!({
            "connections": conns,
            "ues": self.used.len(),
            "returning_connections": self.returning,
            "cu_cp_lines_without_connection": self.unmatched_cu_cp,
        })
    }

    fn hold(&mut self, c: usize, h: Held) -> Option<Held> {
        let v = self.held.entry(c).or_default();
        v.push(h);
        (v.len() > MAX_HELD).then(|| v.pop()).flatten()
    }
}

pub struct UeSink<'a, S: Sink> {
    m: &'a mut UeMap,
    inner: &'a mut S,
}

impl<S: Sink> UeSink<'_, S> {
    /// The run UE id for (DU index, time), or the connection to hold the event for.
    fn route(&mut self, du: u32, t_ns: i64) -> Result<u32, usize> {
        if du >= INVALID_DU_UE {
            return Ok(du);
        }
        let c = self.m.conn_of(du, t_ns);
        self.m.conns[c].ue.ok_or(c)
    }

    fn overflow(&mut self, c: usize, h: Held) {
        if let Some(h) = self.m.hold(c, h) {
            self.m.decide_new(c, "new: too many events held waiting for its RRC setup", self.inner);
            let ue = self.m.conns[c].ue.unwrap_or(0);
            match h {
                Held::P(mut ev) => {
                    ev.ue = ue;
                    self.inner.packet(ev);
                }
                Held::S(mut ev) => {
                    ev.ue = Some(ue);
                    self.inner.slot(ev);
                }
                Held::C(mut ev) => {
                    ev.ue = Some(ue);
                    self.inner.control(ev);
                }
            }
        }
    }
}

impl<S: Sink> Sink for UeSink<'_, S> {
    fn packet(&mut self, mut ev: PacketEvent) {
        match self.route(ev.ue, ev.t_ns) {
            Ok(ue) => {
                // The flow is the UE's (identity.rs): it takes the run's UE id with it.
                (ev.ue, ev.flow) = (ue, ue);
                self.inner.packet(ev);
            }
            Err(c) => self.overflow(c, Held::P(ev)),
        }
    }

    fn slot(&mut self, mut ev: SlotEvent) {
        let Some(du) = ev.ue else { return self.inner.slot(ev) };
        if du >= INVALID_DU_UE {
            // A connection of this RNTI created within a second of the grant is the one it made.
            let made = ev.rnti.and_then(|r| {
                self.m
                    .conns
                    .iter()
                    .rposition(|c| c.rnti == Some(r) && !c.implicit && (c.start_t_ns - ev.t_ns).abs() < 1_000_000_000)
            });
            if let Some(c) = made {
                match self.m.conns[c].ue {
                    Some(ue) => {
                        ev.ue = Some(ue);
                        self.inner.slot(ev);
                    }
                    None => self.overflow(c, Held::S(ev)),
                }
                return;
            }
            match ev.rnti {
                Some(r) if self.m.msg3.get(&r).map_or(0, Vec::len) < 64 => {
                    self.m.msg3.entry(r).or_default().push(ev);
                }
                _ => self.inner.slot(ev),
            }
            return;
        }
        match self.route(du, ev.t_ns) {
            Ok(ue) => {
                ev.ue = Some(ue);
                self.inner.slot(ev);
            }
            Err(c) => self.overflow(c, Held::S(ev)),
        }
    }

    fn control(&mut self, mut ev: ControlEvent) {
        let Some(du) = ev.ue else { return self.inner.control(ev) };
        match self.route(du, ev.t_ns) {
            Ok(ue) => {
                ev.ue = Some(ue);
                self.inner.control(ev);
            }
            Err(c) => self.overflow(c, Held::C(ev)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_bits() {
        assert_eq!(num("ue=0 c-rnti=17921: UE created", "c-rnti="), Some(17921));
        assert_eq!(num("ue=3 c-rnti=0x4601: UE created", "c-rnti="), Some(0x4601));
        assert_eq!(num("Rx PDU ue=1 cu_cp_ue=13 cu_up_ue=13: X", "cu_cp_ue="), Some(13));
        assert_eq!(num("Rx PDU ue=1 cu_cp_ue=13", "ue="), Some(1));
        assert_eq!(
            num("DL ue=0 c-rnti=0x4601 GNB-DU-UE-F1AP-ID=7 GNB-CU-UE-F1AP-ID=2 SRB1", "GNB-CU-UE-F1AP-ID="),
            Some(2)
        );
        let j = "{\n \"ue-Identity\": {\n  \"ng-5G-S-TMSI-Part1\": \"000000000000000000000000000000000000101\"\n }";
        assert_eq!(json_bits(j, "ng-5G-S-TMSI-Part1"), Some((5, 39)));
        assert_eq!(json_bits(j, "randomValue"), None);
    }
}
