//! One UE identity per run across srsRAN's UE index spaces (reference §1.3).
//!
//! GTP-U, SDAP, DRB PDCP and CU-F1-U lines carry the **CU-UP** index; RLC, MAC, SCHED and DU-F1-U
//! lines the **DU** index; the two are allocated independently and need not be equal. Scout learns
//! which CU-UP index is which DU index from the traffic itself, where a line of one side names what
//! the other side logged:
//!
//! - downlink: an RLC `TX SDU` names the PDCP SN and length of a PDU that PDCP logged for exactly
//!   one not-yet-bound CU-UP UE;
//! - uplink: a PDCP `RX PDU` has the length of an SDU that RLC delivered for a not-yet-bound DU UE.
//!
//! When several UEs fit, the one whose indexes are equal is taken (the monolithic `gnb` usually
//! allocates both alike), else the first. A bearer (re)configured on either side forgets the UE's
//! binding, which is learned again from its next packets (indexes are reused after a UE leaves).
//!
//! Every packet event carries the DU index as `ue` (the index of SCHED's slot rows and of the
//! C-RNTI); CU-UP events of a UE are held until its binding is known, then written with it. A CU-UP
//! UE never bound (no DU lines for it) keeps its CU-UP index and is listed in `run.json`.

use std::collections::{BTreeSet, HashMap};

use scout_events::{PacketEvent, Sink};
use serde_json::{json, Value};

const STATED: &str = "stated: E1AP (gNB-CU-CP UE E1AP ID) and F1AP/C-RNTI lines name the same CU-CP UE";

/// Events held for unbound CU-UP UEs, above which the oldest UE is taken to have equal indexes.
const MAX_HELD: usize = 100_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub cu_up: u32,
    pub du: u32,
    /// The DU UE's C-RNTI when bound (from its MAC lines so far).
    pub rnti: Option<u16>,
    pub line: u64,
    pub via: &'static str,
}

#[derive(Default)]
pub struct UeIds {
    du_of: HashMap<u32, u32>,
    cu_of: HashMap<u32, u32>,
    held: HashMap<u32, Vec<PacketEvent>>,
    held_total: usize,
    /// CU-UP UEs seen without a binding.
    unbound_cu: BTreeSet<u32>,
    pub bindings: Vec<Binding>,
    pub rnti_of_du: HashMap<u32, u16>,
    /// CU-UP → DU bindings stated by E1AP/F1AP lines (`ues.rs`), with the line.
    stated: HashMap<u32, (u32, u64)>,
}

impl UeIds {
    pub fn du(&self, cu_up: u32) -> Option<u32> {
        self.du_of.get(&cu_up).copied()
    }

    pub fn cu(&self, du: u32) -> Option<u32> {
        self.cu_of.get(&du).copied()
    }

    /// CU-UP UEs not bound yet (candidates for a DU line), in index order.
    pub fn unbound_cu_up(&self) -> impl Iterator<Item = u32> + '_ {
        self.unbound_cu.iter().copied()
    }

    /// Binds a CU-UP index to a DU index and writes the events held for it.
    pub fn bind<S: Sink>(&mut self, cu_up: u32, du: u32, line: u64, via: &'static str, sink: &mut S) {
        if let Some(old) = self.cu_of.insert(du, cu_up) {
            self.du_of.remove(&old);
        }
        self.du_of.insert(cu_up, du);
        self.unbound_cu.remove(&cu_up);
        let rnti = self.rnti_of_du.get(&du).copied();
        self.bindings.push(Binding { cu_up, du, rnti, line, via });
        for mut ev in self.held.remove(&cu_up).unwrap_or_default() {
            self.held_total -= 1;
            as_du(&mut ev, du);
            sink.packet(ev);
        }
    }

    /// A binding the signalling states (E1AP and F1AP lines, `ues.rs`): taken now when the CU-UP
    /// UE has events, else at its first; it outlives bearer reconfigurations.
    pub fn state<S: Sink>(&mut self, cu_up: u32, du: u32, line: u64, sink: &mut S) {
        self.stated.insert(cu_up, (du, line));
        if self.du(cu_up) != Some(du) && (self.held.contains_key(&cu_up) || self.du(cu_up).is_some()) {
            self.bind(cu_up, du, line, STATED, sink);
        }
    }

    /// Forgets a CU-UP UE's binding (its bearer was configured again).
    pub fn forget_cu_up(&mut self, cu_up: u32) {
        if let Some(du) = self.du_of.remove(&cu_up) {
            self.cu_of.remove(&du);
        }
    }

    /// Forgets a DU UE's binding.
    pub fn forget_du(&mut self, du: u32) {
        if let Some(cu) = self.cu_of.remove(&du) {
            self.du_of.remove(&cu);
        }
    }

    /// Writes an event whose `ue` is a CU-UP index: with the DU index when bound, else later.
    pub fn cu_event<S: Sink>(&mut self, mut ev: PacketEvent, sink: &mut S) {
        match self.du(ev.ue) {
            Some(du) => {
                as_du(&mut ev, du);
                sink.packet(ev);
            }
            None if self.stated.contains_key(&ev.ue) => {
                let (du, line) = self.stated[&ev.ue];
                self.bind(ev.ue, du, line, STATED, sink);
                as_du(&mut ev, du);
                sink.packet(ev);
            }
            None => {
                self.unbound_cu.insert(ev.ue);
                self.held.entry(ev.ue).or_default().push(ev);
                self.held_total += 1;
                if self.held_total > MAX_HELD {
                    // No DU line names this UE's packets: take its indexes as equal.
                    if let Some(&u) = self.held.iter().max_by_key(|(_, v)| v.len()).map(|(u, _)| u) {
                        self.bind(u, u, 0, "assumed: no DU line linked it within 100 000 events", sink);
                    }
                }
            }
        }
    }

    /// Writes what is still held (UEs never bound keep their CU-UP index).
    pub fn finish<S: Sink>(&mut self, sink: &mut S) {
        let mut held: Vec<_> = self.held.drain().collect();
        held.sort_by_key(|(u, _)| *u);
        for (_, evs) in held {
            for ev in evs {
                sink.packet(ev);
            }
        }
        self.held_total = 0;
    }

    pub fn to_json(&self) -> Value {
        json!({
            "ue_is": "the run's UE id: one per UE over its connections (see connections); CU-UP and DU indexes are mapped to it",
            "bindings": self.bindings.iter().map(|b| json!({
                "ue": b.du, "cu_up_ue": b.cu_up, "c_rnti": b.rnti.map(|r| format!("{r:#06x}")), "line": b.line, "via": b.via,
            })).collect::<Vec<_>>(),
            "unbound_cu_up_ues": self.unbound_cu.iter().collect::<Vec<_>>(),
        })
    }
}

/// A CU-UP event as the DU's UE `du`: its `ue`, and its `flow` (the srsRAN ingest's flow is the
/// UE's: one per UE, numbered by its DU index, so a packet's CU and DU rows carry the same flow).
fn as_du(ev: &mut PacketEvent, du: u32) {
    ev.ue = du;
    ev.flow = du;
}
