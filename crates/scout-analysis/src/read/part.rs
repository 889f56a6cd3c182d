//! One thread's part of the scan: its row groups' events folded into per-packet aggregates, sort
//! keys, sojourn enqueues and queue occupancy.

use std::path::Path;

use super::columns::{Cols, COLUMNS};
use super::{each_batch, Ids, Layout, Slots};
use crate::codes::{layer_code, LAYER_OTHER};
use crate::dicts::{Ranked, NULL};
use crate::queues::{self, Occupancy};
use crate::sojourn::{self, Enq};
use crate::Error;

/// Keys carry an event's time since its packet's first event, which must stay below this
/// (2⁵² ns ≈ 52 days; the absolute time may be anything).
pub const T_LIMIT: i64 = 1 << 52;

const NONE: i64 = i64::MAX;

/// Per packet, what its journey row aggregates; codes are the part's ([`Part`]).
#[derive(Clone, Debug)]
pub struct Acc {
    pub n: u32,
    pub t_in: i64,
    pub t_last: i64,
    /// First app delivery, first drop ([`i64::MAX`]: none).
    pub t_out: i64,
    pub t_drop: i64,
    /// At the packet's ingress event: the earliest; among simultaneous ones the highest layer
    /// (where the packet entered: the application's send, N6), then the lowest point code
    /// ([`ingress_rank`]).
    pub bytes: u32,
    /// The [`ingress_rank`] of the event `bytes` was taken from.
    pub in_rank: u8,
    pub ue: u32,
    pub flow: u32,
    /// -1 = null (max ignores nulls).
    pub rnti: i32,
    pub qfi: i16,
    pub drb: i16,
    pub dir: u8,
    pub slice: u8,
    pub drop_layer: u8,
    pub drop_reason: u8,
    pub segments: u32,
    pub harq_retx: u32,
    pub rlc_retx: u32,
    pub ce: bool,
}

/// Orders a packet's simultaneous earliest events to pick its ingress: the highest layer first,
/// then the lowest point code (the rule of `journeys.bytes` in scout.analysis.engine).
pub fn ingress_rank(lc: u8, pc: u8) -> u8 {
    ((15 - lc.min(15)) << 4) | pc.min(15)
}

pub const EMPTY: Acc = Acc {
    n: 0,
    t_in: NONE,
    t_last: i64::MIN,
    t_out: NONE,
    t_drop: NONE,
    bytes: 0,
    in_rank: u8::MAX,
    ue: 0,
    flow: 0,
    rnti: -1,
    qfi: -1,
    drb: -1,
    dir: NULL,
    slice: NULL,
    drop_layer: NULL,
    drop_reason: NULL,
    segments: 0,
    harq_retx: 0,
    rlc_retx: 0,
    ce: false,
};

/// What one thread's row groups (a contiguous run, in file order) leave for grouping.
#[derive(Default)]
pub struct Part {
    /// Per packet: the aggregates; `acc[i]` is packet index `first + i`.
    pub first: usize,
    pub acc: Vec<Acc>,
    /// Events read.
    pub events: u64,
    pub dirs: Ranked,
    pub slices: Ranked,
    pub layers: Ranked,
    pub reasons: Ranked,
    pub nodes: Ranked,
    pub queues: Ranked,
    /// Per queue code: an executor's queue (`*_exec`).
    pub(super) queue_exec: Vec<u8>,
    /// The enqueues into named queues, for [`crate::sojourn`].
    pub sojourn: Vec<Enq>,
    /// Occupancy per queue and bin, for [`crate::queues`].
    pub occupancy: Occupancy,
    /// The queues' time bin.
    bin_ns: i64,
}

pub(super) fn scan_part(
    layout: &Layout,
    groups: &[usize],
    mut part: Part,
    ids: &Ids,
    mut slots: Slots,
    stop: &crate::Stop,
) -> Result<Part, Error> {
    let mut c = Cols::default();
    let mut layer_lc: Vec<u8> = Vec::new();
    each_batch(layout, groups, &COLUMNS, stop, |path, batch| {
        c.decode(path, batch, &mut part)?;
        while layer_lc.len() < part.layers.names.names.len() {
            layer_lc.push(layer_code(&part.layers.names.names[layer_lc.len()]));
        }
        part.add(&c, &layer_lc, ids, path, &mut slots)
    })?;
    Ok(part)
}

impl Part {
    /// An empty part for packet indices `first..end`.
    pub(super) fn new((first, end): (usize, usize), bin_ns: i64) -> Part {
        Part { first, acc: vec![EMPTY; end.saturating_sub(first)], bin_ns, ..Part::default() }
    }

    /// Aggregates a decoded batch: journey aggregates per packet, and each event's packet index
    /// and sort key.
    fn add(&mut self, c: &Cols, layer_lc: &[u8], ids: &Ids, path: &Path, slots: &mut Slots) -> Result<(), Error> {
        use crate::codes::{l, p};
        let first = self.first;
        for k in 0..c.t.len() {
            let id = ids.index(c.pkt[k]).unwrap_or(usize::MAX);
            if slots.windowed && id == usize::MAX {
                continue; // another window's packet
            }
            let i = id.wrapping_sub(first);
            // Every event has its slot, counted in the first pass; anything else means the file
            // changed between the passes.
            match slots.left.get_mut(i) {
                Some(left) if *left > 0 => *left -= 1,
                _ => {
                    return Err(Error::parquet(
                        path,
                        "packet ids differ between two reads: the file changed while read",
                    ))
                }
            }

            let t = c.t[k];
            let rel = t.checked_sub(slots.base[id]).filter(|r| (0..T_LIMIT).contains(r));
            let Some(rel) = rel else { return Err(Error::Range { path: path.to_path_buf(), t }) };
            let lc = layer_lc.get(c.layer[k] as usize).copied().unwrap_or(LAYER_OTHER);
            let (pc, retx) = (c.pc[k], c.retx[k]);
            let key = (rel << 10) | ((pc as i64) << 6) | ((lc as i64) << 2) | (retx.min(3) as i64);
            // SAFETY: the slot lies in this part's own range of packet `id`'s slots (fewer writes
            // than counted, checked above), which no other thread writes.
            unsafe { slots.out.write(slots.cursor[i], (key << 1) | c.exec_q[k] as i64) };
            slots.cursor[i] += 1;
            self.events += 1;
            let a = &mut self.acc[i];
            a.n += 1;
            let rank = ingress_rank(lc, pc);
            if (t, rank) < (a.t_in, a.in_rank) {
                (a.t_in, a.in_rank) = (t, rank);
                a.bytes = c.bytes[k];
            }
            a.t_last = a.t_last.max(t);
            a.ue = a.ue.max(c.ue[k]);
            a.flow = a.flow.max(c.flow[k]);
            a.rnti = a.rnti.max(c.rnti[k]);
            a.qfi = a.qfi.max(c.qfi[k]);
            a.drb = a.drb.max(c.drb[k]);
            a.dir = self.dirs.max(a.dir, c.dir[k]);
            a.slice = self.slices.max(a.slice, c.slice[k]);
            if c.queue[k] != NULL && c.queue_bytes[k] != u64::MAX {
                let q = crate::dicts::queue_key(c.node[k], c.layer[k], c.queue[k], c.dir[k]);
                let pkts = Some(c.queue_pkts[k]).filter(|&n| n != u32::MAX);
                self.occupancy.add((q, queues::bin(t, self.bin_ns)), c.queue_bytes[k], pkts, pc == p::ENQUEUE);
            }
            if pc == p::ENQUEUE && c.queue[k] != NULL {
                self.sojourn.push(Enq {
                    id: id as u32,
                    t,
                    attr: sojourn::attr(c.node[k], c.layer[k], c.queue[k], c.dir[k], c.ue[k]),
                    drb: if c.drb[k] < 0 { NULL } else { c.drb[k].min(254) as u8 },
                });
            }
            match pc {
                p::DROP => {
                    a.t_drop = a.t_drop.min(t);
                    a.drop_layer = self.layers.max(a.drop_layer, c.layer[k]);
                    a.drop_reason = self.reasons.max(a.drop_reason, c.reason[k]);
                }
                p::DELIVER if lc == l::APP => a.t_out = a.t_out.min(t),
                p::SEGMENT if retx == 0 => a.segments += 1,
                p::SEGMENT => a.rlc_retx += 1,
                p::TX if lc == l::MAC && retx > 0 => a.harq_retx += 1,
                _ => {}
            }
            a.ce |= pc == p::CE_MARK || c.ecn[k] == 3;
        }
        Ok(())
    }
}
