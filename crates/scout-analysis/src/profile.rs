//! `profiles`: statistics per scope (run / ue / flow / slice, each by direction) × layer ×
//! component, over the whole run and per window — the same rows as the relational engine's
//! `profiles()` (docs/attribution.md).
//!
//! Each scope is one task: packets get a dense group number (scope key, direction, window), the
//! measures and component durations are placed group by group with a counting sort, and each
//! group's exact percentiles come from selections (`select_nth_unstable`), not a full sort.
//! Percentiles interpolate like DuckDB's `quantile_cont` (`scout_events::quantile`, the one
//! definition every summary uses): position `(n - 1) q`, then `lo + (hi - lo) · frac`.

use std::collections::HashMap;

use crate::journey::{ProfileInput, DELIVERED};

pub const PERCENTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// Count, mean, percentiles, max and sum of a group's values (none when it has no values).
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub count: i64,
    pub mean: Option<f64>,
    pub q: [Option<f64>; 4],
    pub max: Option<i64>,
    pub sum: Option<i64>,
}

/// The statistics of `v` (reordered in place).
pub fn stats(v: &mut [i64]) -> Stats {
    let n = v.len();
    if n == 0 {
        return Stats { count: 0, mean: None, q: [None; 4], max: None, sum: None };
    }
    let sum: i128 = v.iter().map(|&x| x as i128).sum();
    let max = *v.iter().max().expect("non-empty");
    // The order statistics the percentiles need, ascending.
    let mut ks: Vec<usize> = PERCENTILES
        .iter()
        .flat_map(|&q| {
            let (f, c) = scout_events::quantile::ranks(n as u64, q);
            [f as usize, c as usize]
        })
        .collect();
    ks.sort_unstable();
    ks.dedup();
    let mut at: HashMap<usize, i64> = HashMap::with_capacity(ks.len());
    if n <= 64 {
        v.sort_unstable();
        for &k in &ks {
            at.insert(k, v[k]);
        }
    } else {
        let mut lo = 0;
        for &k in &ks {
            let (_, x, _) = v[lo..].select_nth_unstable(k - lo);
            at.insert(k, *x);
            lo = k + 1;
        }
    }
    let mut q = [None; 4];
    for (i, &p) in PERCENTILES.iter().enumerate() {
        q[i] = scout_events::quantile::quantile_ranked(n as u64, p, |r| at[&(r as usize)] as f64);
    }
    Stats { count: n as i64, mean: Some(sum as f64 / n as f64), q, max: Some(max), sum: Some(sum as i64) }
}

/// One row of `profiles`.
#[derive(Debug, Clone)]
pub struct Row {
    pub scope: &'static str,
    /// The packets' group in the task's [`Partition`].
    pub group: u32,
    pub key: String,
    pub dir: u8,
    /// Output layer code and component code; `None` for the `total` rows.
    pub layer_comp: Option<(u8, u8)>,
    pub stats: Stats,
    /// The population's packets in the group (delivered ones, or every observed one): what
    /// `mean_per_pkt_ns` divides by.
    pub packets: i64,
    /// Packets of the group by status: `delivered + dropped + in_flight + incomplete = offered`.
    pub offered: i64,
    pub delivered: i64,
    pub dropped: i64,
    pub in_flight: i64,
    pub incomplete: i64,
    pub delivered_bytes: Option<i64>,
    pub window_start_ns: Option<i64>,
    pub mean_per_pkt_ns: Option<f64>,
    pub throughput_bps: f64,
    pub loss: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Run,
    Ue,
    Flow,
    Slice,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Run => "run",
            Scope::Ue => "ue",
            Scope::Flow => "flow",
            Scope::Slice => "slice",
        }
    }
}

/// The tasks: every scope over the whole run, `run` and `ue` also per window.
pub fn tasks(windowed: bool) -> Vec<(Scope, bool)> {
    let mut t = vec![(Scope::Run, false), (Scope::Ue, false), (Scope::Flow, false), (Scope::Slice, false)];
    if windowed {
        t.extend([(Scope::Run, true), (Scope::Ue, true)]);
    }
    t
}

/// A task's grouping of packets: each packet's group (numbered in first-seen order, so two tasks
/// group alike exactly when their `g` are equal) and each group's (key, direction, window).
pub struct Partition {
    pub g: Vec<u32>,
    pub keys: Vec<(u64, u8, i64)>,
}

/// Groups packets by `scope`'s key, direction and (with `window_ns`) window of ingress time.
pub fn partition(inp: &ProfileInput, scope: Scope, window_ns: Option<i64>) -> Partition {
    let n = inp.dir.len();
    let mut groups: HashMap<(u64, u8, i64), u32> = HashMap::new();
    let mut keys: Vec<(u64, u8, i64)> = Vec::new();
    let mut g = Vec::with_capacity(n);
    let mut last: Option<((u64, u8, i64), u32)> = None;
    for j in 0..n {
        let k = match scope {
            Scope::Run => 0,
            Scope::Ue => inp.ue[j] as u64,
            Scope::Flow => inp.flow[j] as u64,
            Scope::Slice => inp.slice[j] as u64,
        };
        let w = window_ns.map_or(-1, |w| inp.t_in[j].div_euclid(w));
        let key = (k, inp.dir[j], w);
        // Consecutive packets mostly share their group: look up only on a change.
        let id = match last {
            Some((lk, id)) if lk == key => id,
            _ => {
                let next = keys.len() as u32;
                let id = *groups.entry(key).or_insert(next);
                if id == next {
                    keys.push(key);
                }
                last = Some((key, id));
                id
            }
        };
        g.push(id);
    }
    Partition { g, keys }
}

/// The name a scope key is reported under.
pub fn key_name(scope: Scope, k: u64, slices: &[String]) -> String {
    match scope {
        Scope::Run => "all".to_string(),
        Scope::Ue | Scope::Flow => k.to_string(),
        Scope::Slice => slices.get(k as usize).cloned().unwrap_or_default(),
    }
}

/// Another task's rows for a task that groups packets exactly alike: the same statistics under
/// this task's scope and keys.
pub fn relabel(rows: &[Row], scope: Scope, part: &Partition, slices: &[String]) -> Vec<Row> {
    rows.iter()
        .map(|r| Row { scope: scope.name(), key: key_name(scope, part.keys[r.group as usize].0, slices), ..r.clone() })
        .collect()
}

/// The rows of one scope. `delivered_population`: profile delivered packets by their delay
/// (population `delivered`), else every observed packet by its span (`observed`); `window_ns` the window of windowed tasks; `duration_ns` the
/// run's (throughput over the whole run); `slices` the slice names.
#[allow(clippy::too_many_arguments)]
pub fn scope_rows(
    scratch: &mut Scratch,
    inp: &ProfileInput,
    part: &Partition,
    scope: Scope,
    window_ns: Option<i64>,
    delivered_population: bool,
    duration_ns: i64,
    slices: &[String],
) -> Vec<Row> {
    let n = inp.dir.len();
    let (g, keys) = (&part.g, &part.keys);
    let ng = keys.len();
    // Totals per group.
    // Per group: packets by status (DELIVERED, DROPPED, IN_FLIGHT, INCOMPLETE), and the population's.
    let mut by_status = vec![[0i64; 4]; ng];
    let mut packets = vec![0i64; ng];
    let mut dbytes: Vec<Option<i64>> = vec![None; ng];
    let mut count = vec![0usize; ng + 1];
    let measure = |j: usize| if delivered_population { inp.delay[j] } else { inp.span[j] };
    for (j, &gi) in g.iter().enumerate() {
        let gi = gi as usize;
        by_status[gi][usize::from(inp.status[j].min(3))] += 1;
        let is_delivered = inp.status[j] == DELIVERED;
        packets[gi] += if delivered_population { is_delivered as i64 } else { 1 };
        if is_delivered {
            *dbytes[gi].get_or_insert(0) += inp.bytes[j] as i64;
        }
        if measure(j) != i64::MIN {
            count[gi + 1] += 1;
        }
    }
    place(
        &mut scratch.values,
        &mut scratch.cursor,
        &mut count,
        (0..n).filter(|&j| measure(j) != i64::MIN).map(|j| (g[j] as usize, measure(j))),
    );
    let values = &mut scratch.values;
    let span = |w: i64| if w < 0 { duration_ns.max(1) } else { window_ns.unwrap_or(duration_ns) };
    let row = |gi: usize, layer_comp, stats: Stats| {
        let (k, dir, w) = keys[gi];
        let mean_per_pkt_ns = stats.sum.and_then(|s| (packets[gi] != 0).then(|| s as f64 / packets[gi] as f64));
        let [delivered, dropped, in_flight, incomplete] = by_status[gi];
        let offered = delivered + dropped + in_flight + incomplete;
        Row {
            scope: scope.name(),
            key: key_name(scope, k, slices),
            group: gi as u32,
            dir,
            layer_comp,
            stats,
            packets: packets[gi],
            offered,
            delivered,
            dropped,
            in_flight,
            incomplete,
            delivered_bytes: dbytes[gi],
            window_start_ns: (w >= 0).then(|| w * window_ns.unwrap_or(1)),
            mean_per_pkt_ns,
            throughput_bps: (dbytes[gi].unwrap_or(0) * 8) as f64 * 1e9 / span(w) as f64,
            loss: (offered != 0).then(|| dropped as f64 / offered as f64),
        }
    };
    let mut rows = Vec::new();
    for gi in 0..ng {
        let s = stats(&mut values[count[gi]..count[gi + 1]]);
        rows.push(row(gi, None, s));
    }
    // Components of the population's packets, per group × layer × component.
    let in_pop = |j: usize| !delivered_population || inp.status[j] == DELIVERED;
    let mut ccount = vec![0usize; ng * 128 + 1];
    let (cj, code, ns) = (inp.cj.as_slice(), inp.code.as_slice(), inp.ns.as_slice());
    for (r, &j) in cj.iter().enumerate() {
        if in_pop(j as usize) {
            ccount[g[j as usize] as usize * 128 + code[r] as usize + 1] += 1;
        }
    }
    // The values of a run of slots at a time, as many as fit the scratch's cap (one slot at least).
    let slots = ng * 128;
    let mut s0 = 0;
    while s0 < slots {
        let (mut s1, mut n) = (s0, 0);
        while s1 < slots && (s1 == s0 || n + ccount[s1 + 1] <= scratch.cap) {
            n += ccount[s1 + 1];
            s1 += 1;
        }
        let mut count = ccount[s0..=s1].to_vec();
        count[0] = 0;
        place(
            &mut scratch.values,
            &mut scratch.cursor,
            &mut count,
            cj.iter().enumerate().filter(|(_, &j)| in_pop(j as usize)).filter_map(|(r, &j)| {
                let slot = g[j as usize] as usize * 128 + code[r] as usize;
                (s0..s1).contains(&slot).then(|| (slot - s0, ns[r]))
            }),
        );
        let cvalues = &mut scratch.values;
        for slot in s0..s1 {
            let (a, b) = (count[slot - s0], count[slot - s0 + 1]);
            if a == b {
                continue;
            }
            let (gi, code) = (slot / 128, slot % 128);
            let s = stats(&mut cvalues[a..b]);
            rows.push(row(gi, Some((crate::journey::out_layer((code / 8) as u8), (code % 8) as u8)), s));
        }
        s0 = s1;
    }
    rows
}

/// Counting sort: on entry `count[g + 1]` is the number of values of group `g`; on return
/// `count` holds the starts, group `g`'s values at `count[g]..count[g + 1]` of the result.
/// `items` yields (group, value) in any order.
fn place(out: &mut Vec<i64>, cursor: &mut Vec<usize>, count: &mut [usize], items: impl Iterator<Item = (usize, i64)>) {
    for g in 1..count.len() {
        count[g] += count[g - 1];
    }
    cursor.clear();
    cursor.extend_from_slice(count);
    out.clear();
    out.resize(*count.last().unwrap_or(&0), 0);
    for (g, v) in items {
        out[cursor[g]] = v;
        cursor[g] += 1;
    }
}

/// Buffers a profile thread reuses from task to task (fresh memory costs a page fault per page).
pub struct Scratch {
    values: Vec<i64>,
    cursor: Vec<usize>,
    /// The component values placed at a time (the groups' slots are taken in runs that fit).
    cap: usize,
}

impl Scratch {
    /// Room for `packets` packets and `rows` component rows, of which at most `cap` are placed at
    /// a time.
    pub fn new(packets: usize, rows: usize, cap: usize) -> Scratch {
        let cap = cap.max(1);
        Scratch { values: Vec::with_capacity(rows.min(cap).max(packets)), cursor: Vec::new(), cap }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `quantile_cont` by its definition, on a sorted copy.
    fn naive(v: &[i64], q: f64) -> f64 {
        let mut s = v.to_vec();
        s.sort_unstable();
        let r = (s.len() - 1) as f64 * q;
        let (f, c) = (r.floor() as usize, r.ceil() as usize);
        s[f] as f64 + (s[c] - s[f]) as f64 * (r - r.floor())
    }

    #[test]
    fn percentiles_interpolate_like_quantile_cont() {
        // Small groups are sorted, large ones selected: both sizes, with ties and a skewed tail.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for n in [1usize, 2, 3, 10, 64, 65, 1000, 4097] {
            let v: Vec<i64> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    ((x % 1000) as i64) * if i % 97 == 0 { 1000 } else { 1 }
                })
                .collect();
            let s = stats(&mut v.clone());
            assert_eq!(s.count, n as i64);
            assert_eq!(s.max, v.iter().copied().max());
            assert_eq!(s.sum, Some(v.iter().sum::<i64>()));
            for (i, q) in PERCENTILES.iter().enumerate() {
                assert_eq!(s.q[i], Some(naive(&v, *q)), "n={n} q={q}");
            }
        }
        // Hand-worked: 1..=10, p50 = 5.5, p90 = 9.1.
        let s = stats(&mut (1..=10).rev().collect::<Vec<i64>>());
        assert_eq!(s.q[0], Some(5.5));
        assert!((s.q[1].unwrap() - 9.1).abs() < 1e-12);
        assert_eq!(s.mean, Some(5.5));
        assert_eq!(stats(&mut []).count, 0);
    }
}
