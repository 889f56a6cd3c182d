//! Grouping events by packet and walking each packet's events in order: the journeys (one row per
//! packet) and the components (one row per packet × layer × component).
//!
//! The rules are those of docs/attribution.md and of the relational engine's `steps()`
//! (`python/scout/analysis/engine.py`); a Python test checks on every built-in scenario that both
//! produce the same tables.
//!
//! Events are grouped by packet with a counting sort (packet ids of a run are nearly dense; a hash
//! map gives ids that are not), each packet's events sorted by the same packed key as the SQL
//! window (`t · 2¹⁰ + point · 2⁶ + layer · 2² + min(retx, 3)`, here with `t` the time since the
//! packet's first event, so that any absolute time fits, and shifted once more to carry the
//! executor-queue flag), then walked once.

use std::collections::HashSet;

use crate::codes::{c, l, p, LAYER_OTHER};
use crate::dicts::{Dict, Dicts, Ranked, NULL};
use crate::read::{Acc, Ids, Part, Scanned, EMPTY};
use crate::spill::Spillable;
use crate::Error;

/// Packet status codes (the `status` column's dictionary).
pub const STATUS: [&str; 4] = ["delivered", "dropped", "in_flight", "incomplete"];
pub const DELIVERED: u8 = 0;
pub const DROPPED: u8 = 1;
pub const IN_FLIGHT: u8 = 2;
pub const INCOMPLETE: u8 = 3;

const NONE: i64 = i64::MAX;

/// Journeys, one vector per column; nullable columns as (defs, present values).
#[derive(Default)]
pub struct Journeys {
    pub pkt: Vec<i64>,
    pub dir: Vec<u8>,
    pub ue: Vec<u32>,
    pub rnti: (Vec<u8>, Vec<u32>),
    pub flow: Vec<u32>,
    pub slice: Vec<u8>,
    pub qfi: (Vec<u8>, Vec<u32>),
    pub drb: (Vec<u8>, Vec<u32>),
    pub t_in: Vec<i64>,
    pub t_out: (Vec<u8>, Vec<i64>),
    pub t_drop: (Vec<u8>, Vec<i64>),
    pub drop_layer: (Vec<u8>, Vec<u8>),
    pub drop_reason: (Vec<u8>, Vec<u8>),
    pub bytes: Vec<u32>,
    pub segments: Vec<i64>,
    pub harq_retx: Vec<i64>,
    pub rlc_retx: Vec<i64>,
    pub ce: Vec<u8>,
    pub n_events: Vec<i64>,
    pub status: Vec<u8>,
    pub delay: (Vec<u8>, Vec<i64>),
    pub span: Vec<i64>,
}

impl Journeys {
    pub fn len(&self) -> usize {
        self.pkt.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkt.is_empty()
    }
}

/// Components of a batch of packets: the rows of `components` (and, summed per layer, of
/// `layer_delays`), with the packet's index in its [`Journeys`] batch.
#[derive(Default)]
pub struct Components {
    pub j: Vec<u32>,
    /// Layer code (output dictionary: [`crate::codes::LAYERS`] then `other`) and component code.
    pub layer: Vec<u8>,
    pub comp: Vec<u8>,
    pub ns: Vec<i64>,
}

/// `layer_delays` rows of a batch.
#[derive(Default)]
pub struct LayerDelays {
    pub j: Vec<u32>,
    pub layer: Vec<u8>,
    pub ns: Vec<i64>,
}

/// One batch of packets' results.
#[derive(Default)]
pub struct Batch {
    pub journeys: Journeys,
    pub components: Components,
    pub layer_delays: LayerDelays,
    pub sojourns: crate::sojourn::Rows,
}

/// What profiles need of each packet (all batches, in output order) and of each component row.
#[derive(Default)]
pub struct ProfileInput {
    pub dir: Vec<u8>,
    pub ue: Vec<u32>,
    pub flow: Vec<u32>,
    pub slice: Vec<u8>,
    pub t_in: Vec<i64>,
    pub status: Vec<u8>,
    /// One-way delay (delivered packets; [`i64::MIN`] otherwise) and span.
    pub delay: Vec<i64>,
    pub span: Vec<i64>,
    pub bytes: Vec<u32>,
    /// Component rows: packet index, `layer * 8 + component`, duration (spilled to files when
    /// the analysis is short of memory, [`ProfileInput::spill`]).
    pub cj: Spillable<u32>,
    pub code: Spillable<u8>,
    pub ns: Spillable<i64>,
}

impl ProfileInput {
    /// Room for `packets` packets and `rows` component rows (reserved, touched only as filled).
    pub fn with_capacity(packets: usize, rows: usize) -> Self {
        ProfileInput {
            dir: Vec::with_capacity(packets),
            ue: Vec::with_capacity(packets),
            flow: Vec::with_capacity(packets),
            slice: Vec::with_capacity(packets),
            t_in: Vec::with_capacity(packets),
            status: Vec::with_capacity(packets),
            delay: Vec::with_capacity(packets),
            span: Vec::with_capacity(packets),
            bytes: Vec::with_capacity(packets),
            cj: Spillable::with_capacity(rows),
            code: Spillable::with_capacity(rows),
            ns: Spillable::with_capacity(rows),
        }
    }

    /// Moves the component rows held in memory to files in `dir` (unlinked at once).
    pub fn spill(&mut self, dir: &std::path::Path) -> Result<(), Error> {
        self.cj.spill(dir, ".profile-rows-pkt.tmp")?;
        self.code.spill(dir, ".profile-rows-code.tmp")?;
        self.ns.spill(dir, ".profile-rows-ns.tmp")
    }

    /// Maps spilled rows back, for the profiles.
    pub fn seal(&mut self) -> Result<(), Error> {
        self.cj.seal()?;
        self.code.seal()?;
        self.ns.seal()
    }
}

impl Batch {
    /// Empties every column, keeping the buffers.
    pub fn clear(&mut self) {
        self.sojourns.clear();
        let j = &mut self.journeys;
        macro_rules! clear {
            ($($c:expr),*) => { $( $c.clear(); )* };
        }
        clear!(j.pkt, j.dir, j.ue, j.flow, j.slice, j.t_in, j.bytes, j.segments, j.harq_retx, j.rlc_retx, j.ce);
        clear!(j.n_events, j.status, j.span);
        clear!(j.rnti.0, j.rnti.1, j.qfi.0, j.qfi.1, j.drb.0, j.drb.1, j.t_out.0, j.t_out.1, j.t_drop.0, j.t_drop.1);
        clear!(j.drop_layer.0, j.drop_layer.1, j.drop_reason.0, j.drop_reason.1, j.delay.0, j.delay.1);
        let c = &mut self.components;
        clear!(c.j, c.layer, c.comp, c.ns);
        let l = &mut self.layer_delays;
        clear!(l.j, l.layer, l.ns);
    }
}

/// Totals the summary reports: closure of the attribution and the largest contributors.
#[derive(Default, Debug, Clone)]
pub struct Closure {
    pub n: u64,
    pub closed: u64,
    pub with_unattributed: u64,
    pub unattributed_ns: i64,
    pub span_n: u64,
    pub span_closed: u64,
    pub span_with_unattributed: u64,
    pub span_unattributed_ns: i64,
    /// Per `layer * 8 + component`, the summed time of delivered packets.
    pub by_code: Vec<i64>,
}

/// Output layer code of a tie-rank layer code (`other` after the named layers).
#[inline]
pub fn out_layer(lc: u8) -> u8 {
    if lc == LAYER_OTHER {
        crate::codes::LAYERS.len() as u8
    } else {
        lc
    }
}

/// Events grouped by packet, ready to walk.
pub struct Grouped {
    pub dicts: Dicts,
    ids: Ids,
    parts: Vec<Part>,
    /// Where each packet's keys start in `entries` (one more than packets).
    start: Vec<usize>,
    entries: Vec<i64>,
    in_flight: HashSet<u64>,
    /// The enqueue records, packet by packet ([`crate::sojourn`]).
    enq: crate::sojourn::ByPacket,
    /// Per global queue code: an executor's queue.
    queue_exec: Vec<bool>,
    /// Sojourns per queue and bin of the enqueue, for [`crate::queues`].
    sojourn_bins: crate::queues::SojournBins,
    bin_ns: i64,
}

/// Merges the parts' dictionaries onto `seed` (the names of earlier windows, [`Dicts::names`]):
/// the grouping itself was done while reading ([`crate::read::scan`]).
pub fn group(
    scan: Scanned,
    seed: &[Vec<String>; 6],
    in_flight: &[u64],
    bin_ns: i64,
    path: &std::path::Path,
) -> Result<Grouped, Error> {
    let Scanned { ids, mut parts, start, entries } = scan;
    let dict = |f: fn(&Part) -> &Ranked, col: &str, seed: &[String]| {
        Dict::merge(seed, &parts.iter().map(f).collect::<Vec<_>>()).map_err(|problem| Error::Column {
            path: path.to_path_buf(),
            column: col.into(),
            problem,
        })
    };
    let dicts = Dicts {
        dir: dict(|e| &e.dirs, "dir", &seed[0])?,
        slice: dict(|e| &e.slices, "slice", &seed[1])?,
        layer: dict(|e| &e.layers, "layer", &seed[2])?,
        reason: dict(|e| &e.reasons, "reason", &seed[3])?,
        node: dict(|e| &e.nodes, "node", &seed[4])?,
        queue: dict(|e| &e.queues, "queue", &seed[5])?,
    };
    let d = &dicts;
    // The UE (high 32 bits) stays; the queue's codes become global.
    let runs = parts.iter_mut().map(|p| std::mem::take(&mut p.sojourn)).collect();
    let enq = crate::sojourn::ByPacket::new(runs, |pi, a| (a & !0xffff_ffff) | d.queue_key(pi, a as u32) as u64);
    let queue_exec = dicts.queue.names.iter().map(|n| n.ends_with("_exec")).collect();
    let in_flight = in_flight.iter().copied().collect();
    let sojourn_bins = Default::default();
    Ok(Grouped { dicts, ids, parts, start, entries, in_flight, enq, queue_exec, sojourn_bins, bin_ns })
}

/// A packet's aggregates over all parts, enum codes made global.
fn merged(parts: &[Part], d: &Dicts, id: usize) -> Acc {
    let mut m = EMPTY;
    for (pi, part) in parts.iter().enumerate() {
        let Some(a) = id.checked_sub(part.first).and_then(|i| part.acc.get(i)) else { continue };
        if a.n == 0 {
            continue;
        }
        m.n += a.n;
        if (a.t_in, a.in_rank) < (m.t_in, m.in_rank) {
            (m.t_in, m.in_rank) = (a.t_in, a.in_rank);
            m.bytes = a.bytes;
        }
        m.t_last = m.t_last.max(a.t_last);
        m.t_out = m.t_out.min(a.t_out);
        m.t_drop = m.t_drop.min(a.t_drop);
        m.ue = m.ue.max(a.ue);
        m.flow = m.flow.max(a.flow);
        m.rnti = m.rnti.max(a.rnti);
        m.qfi = m.qfi.max(a.qfi);
        m.drb = m.drb.max(a.drb);
        m.dir = d.dir.max(m.dir, d.dir.global(pi, a.dir));
        m.slice = d.slice.max(m.slice, d.slice.global(pi, a.slice));
        m.drop_layer = d.layer.max(m.drop_layer, d.layer.global(pi, a.drop_layer));
        m.drop_reason = d.reason.max(m.drop_reason, d.reason.global(pi, a.drop_reason));
        m.segments += a.segments;
        m.harq_retx += a.harq_retx;
        m.rlc_retx += a.rlc_retx;
        m.ce |= a.ce;
    }
    m
}

impl Grouped {
    /// Adds the parts' occupancy folds and the walk's sojourns (both taken) to `totals`, for
    /// `queues` ([`crate::queues`]).
    pub fn take_queues(&mut self, totals: &mut crate::queues::Totals) {
        let occ = self.parts.iter_mut().map(|p| std::mem::take(&mut p.occupancy)).collect();
        let so = std::mem::take(&mut self.sojourn_bins);
        let d = &self.dicts;
        totals.add(occ, |pi, q| d.queue_key(pi, q), so);
    }

    /// Walks packets `range` (indices into the grouping, empty slots skipped), appending their
    /// rows to `out`, the profile inputs to `prof` and the closure totals to `closure`.
    pub fn walk(
        &mut self,
        range: std::ops::Range<usize>,
        out: &mut Batch,
        prof: &mut ProfileInput,
        closure: &mut Closure,
    ) {
        if closure.by_code.is_empty() {
            closure.by_code = vec![0; 128];
        }
        let mut sums = [0i64; 128];
        for id in range {
            if self.start[id + 1] == self.start[id] {
                continue;
            }
            let a = &merged(&self.parts, &self.dicts, id);
            let pkt = self.ids.id(id);
            let status = if a.t_out != NONE {
                DELIVERED
            } else if a.t_drop != NONE {
                DROPPED
            } else if self.in_flight.contains(&pkt) {
                IN_FLIGHT
            } else {
                INCOMPLETE
            };
            let end = a.t_out.min(a.t_drop);
            let span_end = if end != NONE { end } else { a.t_last };
            let ev = &mut self.entries[self.start[id]..self.start[id + 1]];
            ev.sort_unstable();
            let enq = self.enq.take(id as u32);
            let bins = (&mut self.sojourn_bins, self.bin_ns);
            crate::sojourn::walk(enq, ev, a.t_in, pkt, &self.queue_exec, &mut out.sojourns, bins);
            let mask = sum_intervals(ev, a.t_in, end, &mut sums);
            let (total, unattr) = components(mask, &mut sums, status == DELIVERED, out, prof, closure);
            let row = Row {
                status,
                delay: if status == DELIVERED { a.t_out - a.t_in } else { i64::MIN },
                span: span_end - a.t_in,
                dir: if a.dir == NULL { 0 } else { a.dir },
                slice: if a.slice == NULL { 0 } else { a.slice },
            };
            closure.count(&row, total, unattr);
            out.journeys.push(pkt, a, &row);
            prof.push(a, &row);
        }
    }

    /// Number of grouping slots (walk ranges index these).
    pub fn slots(&self) -> usize {
        self.start.len() - 1
    }
}

/// A packet's row values derived from its aggregates (shared by its journey and profile rows).
struct Row {
    status: u8,
    /// One-way delay (delivered packets; [`i64::MIN`] otherwise).
    delay: i64,
    span: i64,
    /// Nulls as code 0.
    dir: u8,
    slice: u8,
}

/// Adds each interval between a packet's consecutive events (sorted keys `ev`, up to its `end`) to
/// its `layer * 8 + component` slot of `sums`; returns the mask of the slots touched.
#[inline]
fn sum_intervals(ev: &[i64], t_in: i64, end: i64, sums: &mut [i64; 128]) -> u128 {
    let mut mask: u128 = 0;
    for w in ev.windows(2) {
        let (e, nx) = (w[0], w[1]);
        let exec = e & 1 == 1;
        let (k, nk) = (e >> 1, nx >> 1);
        let (t, nt) = ((k >> 10) + t_in, (nk >> 10) + t_in);
        if nt <= t || (end != NONE && nt > end) {
            continue;
        }
        let (pc, lc) = (((k >> 6) & 15) as u8, ((k >> 2) & 15) as u8);
        let (np, nl, nr) = (((nk >> 6) & 15) as u8, ((nk >> 2) & 15) as u8, (nk & 3) as u8);
        let (cc, layer) = rule(pc, lc, exec, np, nl, nr);
        let slot = (layer as usize) * 8 + cc as usize;
        sums[slot] += nt - t;
        mask |= 1u128 << slot;
    }
    mask
}

/// Emits the packet's component rows (and its per-layer delays) from the slots in `mask`,
/// clearing them; returns the attributed total and the unattributed part. The packet's journey
/// row is the next one of `out.journeys` and of `prof`.
#[inline]
fn components(
    mut mask: u128,
    sums: &mut [i64; 128],
    delivered: bool,
    out: &mut Batch,
    prof: &mut ProfileInput,
    closure: &mut Closure,
) -> (i64, i64) {
    let j = out.journeys.len() as u32;
    let pj = prof.dir.len() as u32;
    let (mut total, mut unattr) = (0i64, 0i64);
    let mut last_layer = u8::MAX;
    while mask != 0 {
        let slot = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let ns = std::mem::take(&mut sums[slot]);
        let (lc, cc) = ((slot / 8) as u8, (slot % 8) as u8);
        let layer = out_layer(lc);
        total += ns;
        if cc == c::UNATTRIBUTED {
            unattr += ns;
        }
        if delivered {
            closure.by_code[slot] += ns;
        }
        let comps = &mut out.components;
        comps.j.push(j);
        comps.layer.push(layer);
        comps.comp.push(cc);
        comps.ns.push(ns);
        prof.cj.push(pj);
        prof.code.push(slot as u8);
        prof.ns.push(ns);
        let ld = &mut out.layer_delays;
        if layer == last_layer {
            *ld.ns.last_mut().expect("a row of this layer") += ns;
        } else {
            ld.j.push(j);
            ld.layer.push(layer);
            ld.ns.push(ns);
            last_layer = layer;
        }
    }
    (total, unattr)
}

impl Closure {
    /// Counts one packet: whether its components sum to its delay (delivered) and to its span.
    fn count(&mut self, row: &Row, total: i64, unattr: i64) {
        if row.status == DELIVERED {
            self.n += 1;
            self.closed += (total == row.delay) as u64;
            self.with_unattributed += (unattr > 0) as u64;
            self.unattributed_ns += unattr;
        }
        self.span_n += 1;
        self.span_closed += (total == row.span) as u64;
        self.span_with_unattributed += (unattr > 0) as u64;
        self.span_unattributed_ns += unattr;
    }
}

impl Journeys {
    /// Appends packet `pkt`'s row.
    fn push(&mut self, pkt: u64, a: &Acc, row: &Row) {
        self.pkt.push(pkt as i64);
        self.dir.push(row.dir);
        self.ue.push(a.ue);
        opt(&mut self.rnti, (a.rnti >= 0).then_some(a.rnti as u32));
        self.flow.push(a.flow);
        self.slice.push(row.slice);
        opt(&mut self.qfi, (a.qfi >= 0).then_some(a.qfi as u32));
        opt(&mut self.drb, (a.drb >= 0).then_some(a.drb as u32));
        self.t_in.push(a.t_in);
        opt(&mut self.t_out, (a.t_out != NONE).then_some(a.t_out));
        opt(&mut self.t_drop, (a.t_drop != NONE).then_some(a.t_drop));
        opt(&mut self.drop_layer, (a.drop_layer != NULL).then_some(a.drop_layer));
        opt(&mut self.drop_reason, (a.drop_reason != NULL).then_some(a.drop_reason));
        self.bytes.push(a.bytes);
        self.segments.push(a.segments as i64);
        self.harq_retx.push(a.harq_retx as i64);
        self.rlc_retx.push(a.rlc_retx as i64);
        self.ce.push(a.ce as u8);
        self.n_events.push(a.n as i64);
        self.status.push(row.status);
        opt(&mut self.delay, (row.status == DELIVERED).then_some(row.delay));
        self.span.push(row.span);
    }
}

impl ProfileInput {
    /// Appends a packet's row.
    fn push(&mut self, a: &Acc, row: &Row) {
        self.dir.push(row.dir);
        self.ue.push(a.ue);
        self.flow.push(a.flow);
        self.slice.push(row.slice);
        self.t_in.push(a.t_in);
        self.status.push(row.status);
        self.delay.push(row.delay);
        self.span.push(row.span);
        self.bytes.push(a.bytes);
    }
}

fn opt<T>(col: &mut (Vec<u8>, Vec<T>), v: Option<T>) {
    col.0.push(v.is_some() as u8);
    if let Some(v) = v {
        col.1.push(v);
    }
}

/// The component and layer of the interval from an event (point `pc`, layer `lc`, on an executor
/// queue `exec`) to the next (point `np`, layer `nl`, retransmission index `nr`):
/// docs/attribution.md's table, rule by rule.
#[inline]
pub fn rule(pc: u8, lc: u8, exec: bool, np: u8, nl: u8, nr: u8) -> (u8, u8) {
    let queued = matches!(pc, p::ENQUEUE | p::HOL | p::DEQUEUE);
    // The fallbacks on the start: a queue's wait, or a worker's processing that ended in a drop.
    let fallback = || {
        if pc == p::ENQUEUE && exec {
            c::QUEUEING_COMPUTE
        } else if queued {
            c::QUEUEING_PROTOCOL
        } else if pc == p::PROC_BEGIN {
            c::PROCESSING
        } else {
            c::UNATTRIBUTED
        }
    };
    let by_start = queued || pc == p::PROC_BEGIN;
    let from_queue_else_next = if by_start { lc } else { nl };
    match np {
        p::ARRIVE | p::RX => (c::TRANSPORT, nl),
        p::PROC_BEGIN => (c::QUEUEING_COMPUTE, nl),
        p::PROC_END => (c::PROCESSING, nl),
        p::HOL | p::DEQUEUE => (c::QUEUEING_PROTOCOL, nl),
        p::SEGMENT if nr > 0 => (c::RETRANSMISSION, l::RLC),
        p::SEGMENT => (c::SCHEDULING, l::MAC),
        p::TX if nl == l::MAC => (if nr > 0 { c::RETRANSMISSION } else { c::SCHEDULING }, nl),
        p::TX => (fallback(), from_queue_else_next),
        p::DELIVER if nl == l::RLC || nl == l::PDCP => (c::REORDERING, nl),
        p::DELIVER => (fallback(), from_queue_else_next),
        _ => (fallback(), from_queue_else_next),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_follow_the_attribution_table() {
        // (pc, lc, exec, np, nl, nr) -> (component, layer)
        let mac = l::MAC;
        assert_eq!(rule(p::TX, 10, false, p::ARRIVE, 10, 0), (c::TRANSPORT, 10));
        assert_eq!(rule(p::ENQUEUE, 9, true, p::PROC_BEGIN, 9, 0), (c::QUEUEING_COMPUTE, 9));
        assert_eq!(rule(p::PROC_BEGIN, 9, false, p::PROC_END, 9, 0), (c::PROCESSING, 9));
        // A worker that drops the packet (PDCP early drop, discard): its time is processing.
        assert_eq!(rule(p::PROC_BEGIN, 9, false, p::DROP, 9, 0), (c::PROCESSING, 9));
        assert_eq!(rule(p::ENQUEUE, 2, false, p::HOL, 2, 0), (c::QUEUEING_PROTOCOL, 2));
        assert_eq!(rule(p::HOL, 2, false, p::SEGMENT, 2, 0), (c::SCHEDULING, mac));
        assert_eq!(rule(p::HOL, 2, false, p::SEGMENT, 2, 1), (c::RETRANSMISSION, l::RLC));
        assert_eq!(rule(p::SEGMENT, 2, false, p::TX, mac, 0), (c::SCHEDULING, mac));
        assert_eq!(rule(p::SEGMENT, 2, false, p::TX, mac, 2), (c::RETRANSMISSION, mac));
        assert_eq!(rule(p::TX, mac, false, p::RX, 0, 0), (c::TRANSPORT, 0));
        assert_eq!(rule(p::RX, 0, false, p::DELIVER, l::PDCP, 0), (c::REORDERING, l::PDCP));
        // Fallbacks on the starting event: executor enqueue, protocol queue, nothing.
        assert_eq!(rule(p::ENQUEUE, 5, true, p::DELIVER, 11, 0), (c::QUEUEING_COMPUTE, 5));
        assert_eq!(rule(p::ENQUEUE, 3, false, p::TX, 3, 0), (c::QUEUEING_PROTOCOL, 3));
        assert_eq!(rule(p::RX, 0, false, p::DELIVER, l::APP, 0), (c::UNATTRIBUTED, l::APP));
        assert_eq!(rule(p::RX, 0, false, p::ENQUEUE, 4, 0), (c::UNATTRIBUTED, 4));
        assert_eq!(rule(p::HOL, 2, false, p::DROP, 2, 0), (c::QUEUEING_PROTOCOL, 2));
    }
}
