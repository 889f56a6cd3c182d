//! Sojourns: per packet and queue, the time from its `enqueue` to leaving the queue — the rule of
//! `sojourns()` in `python/scout/analysis/engine.py` (docs/attribution.md), computed in the walk
//! over each packet's ordered events, beside the journeys.
//!
//! An executor queue (`*_exec`) is left at the packet's first `proc_begin` at or after the
//! enqueue; any other queue at its first `segment` or `dequeue` at or after it. Enqueues that are
//! never left have no row; enqueues of one packet with the same queue, node, layer, direction, UE,
//! DRB and time are one row.
//!
//! The order keys of the walk carry no queue, so the reader keeps a record of each enqueue into a
//! named queue (what identifies the queue, the DRB, the time); each reader part's records are
//! sorted by packet and time and handed to the walk packet by packet ([`ByPacket`]). A packet's
//! enqueues, in time order, then meet its leaves with one forward pointer per kind of leave.

use crate::codes::p;
use crate::dicts::{queue_key, NULL};
use crate::queues::{self, SojournBins};

/// An enqueue into a named queue: the packet's index, its time, and what identifies the queue
/// (enum codes of the reader's part, global once grouped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Enq {
    pub id: u32,
    pub t: i64,
    /// UE · 2³² + node · 2²⁴ + layer · 2¹⁶ + queue · 2⁸ + dir.
    pub attr: u64,
    /// The DRB ([`NULL`]: none).
    pub drb: u8,
}

#[inline]
pub fn attr(node: u8, layer: u8, queue: u8, dir: u8, ue: u32) -> u64 {
    ((ue as u64) << 32) | queue_key(node, layer, queue, dir) as u64
}

/// (node, layer, queue, dir, UE) of an [`Enq::attr`].
#[inline]
fn codes(a: u64) -> (u8, u8, u8, u8, u32) {
    ((a >> 24) as u8, (a >> 16) as u8, (a >> 8) as u8, a as u8, (a >> 32) as u32)
}

/// The parts' enqueue records, each part's in (packet, time) order with global codes, handed out
/// packet by packet in increasing packet order (the walk's): no copy of all records is made.
pub struct ByPacket {
    parts: Vec<Vec<Enq>>,
    at: Vec<usize>,
    scratch: Vec<Enq>,
}

impl ByPacket {
    /// Takes the parts' records (`runs[part]`); `global(part, attr)` maps a part's codes to the
    /// global ones. Each part's records are nearly in packet order already (file order): sorted on
    /// a thread each.
    pub fn new(mut runs: Vec<Vec<Enq>>, global: impl Fn(usize, u64) -> u64 + Sync) -> ByPacket {
        let global = &global;
        std::thread::scope(|s| {
            for (pi, run) in runs.iter_mut().enumerate() {
                s.spawn(move || {
                    for e in run.iter_mut() {
                        e.attr = global(pi, e.attr);
                    }
                    run.sort_unstable();
                });
            }
        });
        let at = vec![0; runs.len()];
        ByPacket { parts: runs, at, scratch: Vec::new() }
    }

    /// Packet `id`'s records (every earlier packet's are passed over).
    pub fn take(&mut self, id: u32) -> &mut [Enq] {
        self.scratch.clear();
        for (run, at) in self.parts.iter().zip(self.at.iter_mut()) {
            while run.get(*at).is_some_and(|e| e.id < id) {
                *at += 1;
            }
            while let Some(e) = run.get(*at).filter(|e| e.id == id) {
                self.scratch.push(*e);
                *at += 1;
            }
        }
        &mut self.scratch
    }
}

/// Sojourn rows of a batch of packets; nullable columns as (defs, present values).
#[derive(Default)]
pub struct Rows {
    pub pkt: Vec<i64>,
    pub node: (Vec<u8>, Vec<u8>),
    pub layer: (Vec<u8>, Vec<u8>),
    pub queue: Vec<u8>,
    pub dir: (Vec<u8>, Vec<u8>),
    pub ue: Vec<u32>,
    pub drb: (Vec<u8>, Vec<u32>),
    pub t_enq: Vec<i64>,
    pub t_leave: Vec<i64>,
    pub sojourn: Vec<i64>,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.pkt.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkt.is_empty()
    }

    pub fn clear(&mut self) {
        self.pkt.clear();
        for c in [&mut self.node, &mut self.layer, &mut self.dir] {
            c.0.clear();
            c.1.clear();
        }
        self.queue.clear();
        self.ue.clear();
        self.drb.0.clear();
        self.drb.1.clear();
        self.t_enq.clear();
        self.t_leave.clear();
        self.sojourn.clear();
    }
}

fn opt<T>(col: &mut (Vec<u8>, Vec<T>), v: Option<T>) {
    col.0.push(v.is_some() as u8);
    if let Some(v) = v {
        col.1.push(v);
    }
}

/// One packet's sojourns: its enqueue records `enq` (any order; sorted here) against its order
/// keys `ev` (sorted, as the walk has them: time since `t0` · 2¹¹ + point · 2⁷ + …), appended to
/// `out`. `exec[q]`: global queue code `q` is an executor's.
pub fn walk(
    enq: &mut [Enq],
    ev: &[i64],
    t0: i64,
    pkt: u64,
    exec: &[bool],
    out: &mut Rows,
    (bins, bin_ns): (&mut SojournBins, i64),
) {
    if enq.is_empty() {
        return;
    }
    enq.sort_unstable();
    // Per kind of leave (protocol queues, executor queues): the first key not yet ruled out.
    let mut at = [0usize; 2];
    let mut prev = None;
    for e in enq.iter() {
        if prev == Some(*e) {
            continue; // the same enqueue twice: one row (the relational engine's group-by)
        }
        prev = Some(*e);
        let (node, layer, queue, dir, ue) = codes(e.attr);
        let is_exec = exec.get(queue as usize).copied().unwrap_or(false);
        let i = &mut at[is_exec as usize];
        // Keys ruled out for this enqueue are ruled out for the later ones of its kind too: they
        // are earlier than it (and than those), or of the other kind.
        while let Some(&key) = ev.get(*i) {
            let k = key >> 1;
            let pc = ((k >> 6) & 15) as u8;
            let leaves = if is_exec { pc == p::PROC_BEGIN } else { pc == p::SEGMENT || pc == p::DEQUEUE };
            if leaves && (k >> 10) + t0 >= e.t {
                break;
            }
            *i += 1;
        }
        let Some(&key) = ev.get(*i) else { continue };
        let t_leave = ((key >> 1) >> 10) + t0;
        out.pkt.push(pkt as i64);
        opt(&mut out.node, (node != NULL).then_some(node));
        opt(&mut out.layer, (layer != NULL).then_some(layer));
        out.queue.push(queue);
        opt(&mut out.dir, (dir != NULL).then_some(dir));
        out.ue.push(ue);
        opt(&mut out.drb, (e.drb != NULL).then_some(e.drb as u32));
        out.t_enq.push(e.t);
        out.t_leave.push(t_leave);
        out.sojourn.push(t_leave - e.t);
        bins.add((e.attr as u32, queues::bin(e.t, bin_ns)), t_leave - e.t); // the queue_key part
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An order key as the walk has it: time since the packet's first event, point, layer 0.
    fn key(t: i64, pc: u8) -> i64 {
        ((t << 10) | ((pc as i64) << 6)) << 1
    }

    /// An enqueue `t` after the packet's first event (at 100).
    fn enq(t: i64, queue: u8) -> Enq {
        Enq { id: 0, t: 100 + t, attr: attr(0, 0, queue, 0, 7), drb: 1 }
    }

    #[test]
    fn each_queue_is_left_at_its_own_kind_of_point_at_or_after_the_enqueue() {
        // Queue 0: a protocol queue; queue 1: an executor's.
        let exec = [false, true];
        let ev = [
            key(0, p::ENQUEUE),
            key(0, p::PROC_BEGIN), // leaves queue 1 enqueued at 0
            key(5, p::ENQUEUE),
            key(5, p::SEGMENT), // leaves queue 0 enqueued at 0 and at 5 (same time counts)
            key(9, p::ENQUEUE),
            key(12, p::DEQUEUE), // leaves queue 0 enqueued at 9
        ];
        let mut e = [enq(9, 0), enq(0, 1), enq(5, 0), enq(0, 0), enq(5, 0), enq(12, 1)];
        let mut out = Rows::default();
        walk(&mut e, &ev, 100, 42, &exec, &mut out, (&mut SojournBins::default(), 10));
        // Sorted by time then queue; the duplicate (5, queue 0) once; (12, queue 1) never left.
        assert_eq!(out.t_enq, [100, 100, 105, 109]);
        assert_eq!(out.queue, [0, 1, 0, 0]);
        assert_eq!(out.t_leave, [105, 100, 105, 112]);
        assert_eq!(out.sojourn, [5, 0, 0, 3]);
        assert_eq!(out.pkt, [42; 4]);
        assert_eq!(out.ue, [7; 4]);
        assert_eq!(out.drb, (vec![1; 4], vec![1; 4]));
    }

    #[test]
    fn a_packet_without_a_leave_has_no_rows() {
        let mut e = [enq(0, 0)];
        let mut out = Rows::default();
        let bins = (&mut SojournBins::default(), 10);
        walk(&mut e, &[key(0, p::ENQUEUE), key(3, p::PROC_BEGIN)], 100, 1, &[false], &mut out, bins);
        assert!(out.is_empty());
    }
}
