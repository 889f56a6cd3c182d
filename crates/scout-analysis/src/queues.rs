//! `queues`: per queue and time bin, its occupancy (from the `queue_bytes` / `queue_pkts` the events
//! carry) and the sojourn of the packets that entered it in the bin — the rule of `queues()` in
//! `python/scout/analysis/engine.py`. Occupancy is folded by the readers as they read the events;
//! sojourns by the walk as it finds them ([`crate::sojourn`]).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};

use crate::dicts::{Dicts, NULL};
use crate::Error;

/// A multiplicative hash of the (queue, bin) keys (SipHash costs more than the fold it guards).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }

    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(26) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// (node · 2²⁴ + layer · 2¹⁶ + queue · 2⁸ + dir, bin): enum codes of a reader's part, or global.
pub type Key = (u32, i64);
type Map<V> = HashMap<Key, V, BuildHasherDefault<KeyHasher>>;

/// Occupancy of one queue in one bin: over the events at the queue carrying `queue_bytes`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Occ {
    pub n: u64,
    pub bytes_max: u64,
    pub bytes_sum: u128,
    /// Over those events with `queue_pkts` too.
    pub pkts_n: u64,
    pub pkts_max: u32,
    pub pkts_sum: u128,
    pub enqueues: i64,
}

impl Occ {
    #[inline]
    fn add(&mut self, bytes: u64, pkts: Option<u32>, enqueue: bool) {
        self.n += 1;
        self.bytes_max = self.bytes_max.max(bytes);
        self.bytes_sum += bytes as u128;
        if let Some(p) = pkts {
            self.pkts_n += 1;
            self.pkts_max = self.pkts_max.max(p);
            self.pkts_sum += p as u128;
        }
        self.enqueues += enqueue as i64;
    }

    fn merge(&mut self, o: &Occ) {
        self.n += o.n;
        self.bytes_max = self.bytes_max.max(o.bytes_max);
        self.bytes_sum += o.bytes_sum;
        self.pkts_n += o.pkts_n;
        self.pkts_max = self.pkts_max.max(o.pkts_max);
        self.pkts_sum += o.pkts_sum;
        self.enqueues += o.enqueues;
    }
}

/// A reader part's occupancy per (queue, bin). Events come in about time order and a run has few
/// queues, so each queue folds its current bin in place and files it away when the bin changes:
/// a map is touched once per queue and bin, not per event.
#[derive(Default)]
pub struct Occupancy {
    /// Per queue: its key, its current bin and that bin's fold.
    current: Vec<(u32, i64, Occ)>,
    /// The queue of the previous event (an index into `current`).
    last: usize,
    done: Map<Occ>,
}

impl Occupancy {
    /// One event at a queue with its occupancy after it (`pkts`: `None` when not carried).
    #[inline]
    pub fn add(&mut self, (q, bin): Key, bytes: u64, pkts: Option<u32>, enqueue: bool) {
        if self.current.get(self.last).is_none_or(|c| c.0 != q) {
            self.last = match self.current.iter().position(|c| c.0 == q) {
                Some(i) => i,
                None => {
                    self.current.push((q, bin, Occ::default()));
                    self.current.len() - 1
                }
            };
        }
        let c = &mut self.current[self.last];
        if c.1 != bin {
            let done = std::mem::take(&mut c.2);
            if done.n > 0 {
                self.done.entry((q, c.1)).or_default().merge(&done);
            }
            c.1 = bin;
        }
        c.2.add(bytes, pkts, enqueue);
    }

    /// Every (queue, bin) fold.
    fn into_map(mut self) -> Map<Occ> {
        for (q, bin, o) in std::mem::take(&mut self.current) {
            if o.n > 0 {
                self.done.entry((q, bin)).or_default().merge(&o);
            }
        }
        self.done
    }
}

/// Sojourns per (queue, bin of the enqueue), global codes.
#[derive(Default)]
pub struct SojournBins(Map<(i128, i64, i64)>);

impl SojournBins {
    #[inline]
    pub fn add(&mut self, key: Key, sojourn: i64) {
        let s = self.0.entry(key).or_insert((0, i64::MIN, 0));
        s.0 += sojourn as i128;
        s.1 = s.1.max(sojourn);
        s.2 += 1;
    }
}

/// Floor division of a time by the bin (the relational engine's `t_ns // bin_ns`).
#[inline]
pub fn bin(t: i64, bin_ns: i64) -> i64 {
    t.div_euclid(bin_ns)
}

/// The occupancy and sojourns of every (queue, bin) so far, global codes: each window of packets
/// ([`crate::read::Scope`]) adds its own, every event folded by the one window its packet is in.
#[derive(Default)]
pub struct Totals {
    occ: Map<Occ>,
    so: SojournBins,
}

impl Totals {
    /// Adds the parts' occupancy (codes made global by `global(part, key)`) and a walk's sojourns.
    pub fn add(&mut self, parts: Vec<Occupancy>, global: impl Fn(usize, u32) -> u32, so: SojournBins) {
        for (pi, part) in parts.into_iter().enumerate() {
            for ((q, b), o) in part.into_map() {
                self.occ.entry((global(pi, q), b)).or_default().merge(&o);
            }
        }
        if self.so.0.is_empty() {
            self.so = so;
            return;
        }
        for (k, (sum, max, n)) in so.0 {
            let s = self.so.0.entry(k).or_insert((0, i64::MIN, 0));
            s.0 += sum;
            s.1 = s.1.max(max);
            s.2 += n;
        }
    }
}

/// Writes `queues.parquet` from the totals, ordered by queue, node, direction and time; returns its
/// rows.
pub fn write(path: &Path, totals: Totals, bin_ns: i64, d: &Dicts) -> Result<u64, Error> {
    let Totals { occ, so } = totals;
    let mut keys: Vec<Key> = occ.keys().chain(so.0.keys()).copied().collect();
    keys.sort_unstable();
    keys.dedup();
    let name = |names: &[String], c: u8| -> Option<String> { (c != NULL).then(|| names[c as usize].clone()) };
    let part = |q: u32, shift: u32| (q >> shift) as u8;
    // The relational engine's order: queue, node, direction, time (then layer, for a stable file).
    fn sort_name(names: &[String], c: u8) -> &str {
        if c == NULL {
            ""
        } else {
            names[c as usize].as_str()
        }
    }
    keys.sort_by(|a, b| {
        let k = |(q, t): &Key| {
            (
                sort_name(&d.queue.names, part(*q, 8)),
                sort_name(&d.node.names, part(*q, 24)),
                sort_name(&d.dir.names, part(*q, 0)),
                *t,
                sort_name(&d.layer.names, part(*q, 16)),
            )
        };
        k(a).cmp(&k(b))
    });
    let strs = |shift: u32, names: &[String]| -> ArrayRef {
        Arc::new(StringArray::from_iter(keys.iter().map(|(q, _)| name(names, part(*q, shift)))))
    };
    let o = |k: &Key| occ.get(k);
    let s = |k: &Key| so.0.get(k);
    let mean = |sum: u128, n: u64| (n > 0).then(|| sum as f64 / n as f64);
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("node", strs(24, &d.node.names)),
        ("layer", strs(16, &d.layer.names)),
        ("queue", strs(8, &d.queue.names)),
        ("dir", strs(0, &d.dir.names)),
        ("t_ns", Arc::new(Int64Array::from_iter_values(keys.iter().map(|(_, b)| b * bin_ns)))),
        ("bytes_max", Arc::new(UInt64Array::from_iter(keys.iter().map(|k| o(k).map(|o| o.bytes_max))))),
        (
            "bytes_mean",
            Arc::new(Float64Array::from_iter(keys.iter().map(|k| o(k).and_then(|o| mean(o.bytes_sum, o.n))))),
        ),
        (
            "pkts_max",
            Arc::new(UInt32Array::from_iter(keys.iter().map(|k| o(k).filter(|o| o.pkts_n > 0).map(|o| o.pkts_max)))),
        ),
        (
            "pkts_mean",
            Arc::new(Float64Array::from_iter(keys.iter().map(|k| o(k).and_then(|o| mean(o.pkts_sum, o.pkts_n))))),
        ),
        ("enqueues", Arc::new(Int64Array::from_iter_values(keys.iter().map(|k| o(k).map_or(0, |o| o.enqueues))))),
        (
            "sojourn_mean_ns",
            Arc::new(Float64Array::from_iter(keys.iter().map(|k| s(k).map(|s| s.0 as f64 / s.2 as f64)))),
        ),
        ("sojourn_max_ns", Arc::new(Int64Array::from_iter(keys.iter().map(|k| s(k).map(|s| s.1))))),
        ("sojourn_n", Arc::new(Int64Array::from_iter_values(keys.iter().map(|k| s(k).map_or(0, |s| s.2))))),
    ];
    let batch = RecordBatch::try_from_iter(cols).map_err(|e| Error::parquet(path, e))?;
    crate::table::parquet_file(path, &batch)?;
    Ok(keys.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_floor_divisions() {
        assert_eq!(bin(0, 100), 0);
        assert_eq!(bin(99, 100), 0);
        assert_eq!(bin(100, 100), 1);
        assert_eq!(bin(-1, 100), -1);
    }

    #[test]
    fn occupancy_folds_means_over_the_rows_that_carry_each_value() {
        let mut o = Occupancy::default();
        o.add((1, 0), 100, Some(1), true);
        o.add((2, 0), 7, Some(1), true);
        o.add((1, 0), 300, None, false);
        o.add((1, 1), 50, Some(2), false);
        o.add((1, 0), 10, Some(3), false); // back to an earlier bin
        let m = o.into_map();
        let v = m[&(1, 0)];
        assert_eq!((v.n, v.bytes_max, v.bytes_sum, v.pkts_n, v.pkts_max, v.enqueues), (3, 300, 410, 2, 3, 1));
        assert_eq!((m[&(1, 1)].n, m[&(2, 0)].bytes_sum), (1, 7));
        assert_eq!(m.len(), 3);
    }
}
