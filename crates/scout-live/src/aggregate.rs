//! Streaming aggregation of a run's events: what the live page and `/metrics` show.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;
use std::time::Instant;

use scout_events::tap::Tap;
use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node, PacketEvent, Point, Queue, Reason, SlotEvent};
use serde_json::{json, Map, Value};

/// Upper bounds (seconds) of the latency histograms' buckets, as Prometheus `le` labels; the
/// last bucket (`+Inf`) is implied. From 10 µs (a UPF's processing) to 5 s (a bufferbloated RLC
/// queue).
pub const BUCKETS_S: [f64; 18] =
    [1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// The bounds that keep the aggregator's memory fixed whatever the run's length and rate.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Width of a bin of the page's charts, in event time.
    pub bin_ns: i64,
    /// Bins kept for the page (the charts' window is `bins × bin_ns`).
    pub bins: usize,
    /// Packets followed at once (for sojourns and layer times); beyond, a packet is not followed
    /// and counted in `untracked`.
    pub packets: usize,
    /// A packet not seen for this long (event time) is forgotten: its journey ended where the
    /// producer stops seeing it (the probe sees packets only at the UPF).
    pub forget_ns: i64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { bin_ns: 250_000_000, bins: 240, packets: 1 << 20, forget_ns: 10_000_000_000 }
    }
}

/// A latency histogram with Prometheus's cumulative semantics (kept per bucket, summed on output).
#[derive(Clone, Debug, Default)]
pub(crate) struct Hist {
    pub(crate) buckets: [u64; BUCKETS_S.len() + 1],
    pub(crate) sum_ns: i128,
    pub(crate) count: u64,
}

impl Hist {
    fn observe(&mut self, ns: i64) {
        let s = ns as f64 * 1e-9;
        let i = BUCKETS_S.iter().position(|&b| s <= b).unwrap_or(BUCKETS_S.len());
        self.buckets[i] += 1;
        self.sum_ns += ns as i128;
        self.count += 1;
    }
}

/// Count, sum and largest of the samples in one bin.
#[derive(Clone, Copy, Debug, Default)]
struct Stat {
    n: u64,
    sum: f64,
    max: f64,
}

impl Stat {
    fn add(&mut self, v: f64) {
        if self.n == 0 || v > self.max {
            self.max = v;
        }
        self.n += 1;
        self.sum += v;
    }
    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// A queue: where it is and which way its packets go.
pub(crate) type QueueKey = (Node, Layer, Queue, Dir);

/// One bin of event time: what the page's charts plot.
#[derive(Debug, Default)]
struct Bin {
    /// Occupancy (largest bytes and packets the queue's events carried) and sojourns that ended.
    queues: Vec<QueueBin>,
    layers: Vec<Stat>,
    drops: BTreeMap<(Layer, Dir), u64>,
    ue_bytes: BTreeMap<(u32, Dir), u64>,
    rtt: BTreeMap<u32, Stat>,
    /// The cell's PRB use (`prbs_used / prbs_total` of the cell's slot rows).
    prb_util: BTreeMap<Dir, Stat>,
}

/// A queue in one bin: the largest occupancy its events carried (if any did) and the sojourns
/// that ended.
#[derive(Clone, Copy, Debug, Default)]
struct QueueBin {
    bytes: Option<u64>,
    pkts: u32,
    sojourn: Stat,
}

/// The latest value of a queue's occupancy and its sojourn histogram.
#[derive(Debug, Default)]
pub(crate) struct QueueTotals {
    pub(crate) bytes: u64,
    pub(crate) pkts: u32,
    pub(crate) sojourn: Hist,
}

/// Queues a packet can wait in at once that the view follows (a packet is in one or two at a time:
/// an executor's and a protocol queue); an enqueue beyond is counted in `untracked`.
const WAITING: usize = 4;

/// Where a packet was last seen and the queues it is waiting in (since when).
#[derive(Debug, Default)]
struct Followed {
    last_t: i64,
    n: u8,
    waiting: [Option<(QueueKey, i64)>; WAITING],
}

/// Packet ids hashed by one multiplication (they are nearly sequential; no adversary chooses them).
#[derive(Clone, Copy, Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.write_u64(b as u64));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Which bytes count as a UE's throughput: those delivered to the destination application, or
/// — for producers that see no delivery (the probe) — those the UPF forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum At {
    Delivered,
    Upf,
}

impl At {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            At::Delivered => "delivered",
            At::Upf => "upf",
        }
    }
}

/// Everything the aggregator keeps.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) limits: Limits,
    pub(crate) rows: [u64; 3],
    pub(crate) t_last_ns: i64,
    /// The queues seen, in the order first seen (the dense index of [`State::queue`]).
    pub(crate) queues: Vec<(QueueKey, QueueTotals)>,
    queue_ix: HashMap<QueueKey, usize>,
    /// The layers (and directions) seen, in the order first seen ([`State::layer`]).
    pub(crate) layers: Vec<((Layer, Dir), Hist)>,
    layer_ix: [Option<u8>; Layer::ALL.len() * 2],
    pub(crate) drops: BTreeMap<(Layer, Option<Reason>, Dir), (u64, u64)>,
    pub(crate) ue_bytes: BTreeMap<(u32, Dir, At), u64>,
    /// Per UE and source (`ping`: echo RTTs, `tcp`: TCP's smoothed RTT): the last sample (ns)
    /// and how many.
    pub(crate) rtt: BTreeMap<(u32, &'static str), (f64, u64)>,
    followed: HashMap<u64, Followed, BuildHasherDefault<IdHasher>>,
    /// Rows that fell before the page's window (counted, not plotted).
    pub(crate) late: u64,
    /// Packets not followed because `Limits::packets` were already followed.
    pub(crate) untracked: u64,
    /// Packets forgotten after `Limits::forget_ns` without an event.
    pub(crate) forgotten: u64,
    last_sweep_ns: i64,
    bins: VecDeque<(i64, Bin)>,
}

/// The live view's aggregation of one run; shared between the writer's thread (which feeds it)
/// and the server's (which reads it).
#[derive(Debug)]
pub struct Aggregator {
    state: Mutex<State>,
    started: Instant,
}

impl Aggregator {
    pub fn new(limits: Limits) -> Aggregator {
        Aggregator { state: Mutex::new(State { limits, ..State::default() }), started: Instant::now() }
    }

    /// Seconds since the aggregator was made (the page shows it beside the event time).
    pub fn wall_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub(crate) fn with<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&s)
    }

    /// What the page polls: the window of bins and the totals.
    pub fn snapshot(&self) -> Value {
        let wall = self.wall_s();
        self.with(|s| s.snapshot(wall))
    }

    /// The Prometheus exposition (text format 0.0.4).
    pub fn metrics(&self) -> String {
        let wall = self.wall_s();
        self.with(|s| crate::metrics::render(s, wall))
    }
}

impl Tap for Aggregator {
    fn packets(&self, rows: &[PacketEvent]) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        rows.iter().for_each(|e| s.packet(e));
        s.rows[0] += rows.len() as u64;
        s.sweep();
    }
    fn slots(&self, rows: &[SlotEvent]) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        rows.iter().for_each(|e| s.slot(e));
        s.rows[1] += rows.len() as u64;
    }
    fn controls(&self, rows: &[ControlEvent]) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        rows.iter().for_each(|e| s.control(e));
        s.rows[2] += rows.len() as u64;
    }
}

fn is_exec(q: Queue) -> bool {
    q.as_str().ends_with("_exec")
}

impl State {
    /// The bin of `t_ns`, made (with any bins between) if it is past the newest; None if it fell
    /// out of the window.
    fn bin(&mut self, t_ns: i64) -> Option<&mut Bin> {
        let i = self.bin_index(t_ns)?;
        Some(&mut self.bins[i].1)
    }

    /// As [`State::bin`], its index in `bins`.
    fn bin_index(&mut self, t_ns: i64) -> Option<usize> {
        let b = t_ns.div_euclid(self.limits.bin_ns);
        let newest = self.bins.back().map(|(k, _)| *k);
        match newest {
            Some(n) if b <= n => {
                let oldest = self.bins.front().map_or(n, |(k, _)| *k);
                if b < oldest {
                    self.late += 1;
                    return None;
                }
                return Some((b - oldest) as usize);
            }
            Some(n) if b - n <= self.limits.bins as i64 => {
                for k in n + 1..=b {
                    self.bins.push_back((k, Bin::default()));
                }
            }
            _ => {
                self.bins.clear();
                self.bins.push_back((b, Bin::default()));
            }
        }
        while self.bins.len() > self.limits.bins {
            self.bins.pop_front();
        }
        Some(self.bins.len() - 1)
    }

    /// The run's clock: the latest event time seen.
    fn seen(&mut self, t_ns: i64) {
        self.t_last_ns = self.t_last_ns.max(t_ns);
    }

    /// The dense index of a queue (made when first seen).
    fn queue(&mut self, key: QueueKey) -> usize {
        if let Some(&i) = self.queue_ix.get(&key) {
            return i;
        }
        self.queues.push((key, QueueTotals::default()));
        self.queue_ix.insert(key, self.queues.len() - 1);
        self.queues.len() - 1
    }

    /// The dense index of a layer and direction (made when first seen).
    fn layer(&mut self, layer: Layer, dir: Dir) -> usize {
        let k = layer as usize * 2 + dir as usize;
        match self.layer_ix[k] {
            Some(i) => i as usize,
            None => {
                self.layers.push(((layer, dir), Hist::default()));
                self.layer_ix[k] = Some((self.layers.len() - 1) as u8);
                self.layers.len() - 1
            }
        }
    }

    fn packet(&mut self, e: &PacketEvent) {
        let t = e.t_ns;
        self.seen(t);
        let bi = self.bin_index(t);
        // Occupancy: what the queue's own events say it holds after them.
        if let (Some(q), Some(qb)) = (e.queue, e.queue_bytes) {
            let qi = self.queue((e.node, e.layer, q, e.dir));
            let qp = e.queue_pkts.unwrap_or(0);
            let tot = &mut self.queues[qi].1;
            tot.bytes = qb;
            tot.pkts = qp;
            if let Some(i) = bi {
                let q = grow(&mut self.bins[i].1.queues, qi);
                q.bytes = Some(q.bytes.unwrap_or(0).max(qb));
                q.pkts = q.pkts.max(qp);
            }
        }
        // Layer time: since the packet's previous checkpoint, spent reaching this one.
        let cap = self.limits.packets;
        let known = self.followed.len();
        let (prev, left) = match self.followed.get_mut(&e.pkt) {
            Some(f) => {
                let prev = Some(f.last_t);
                f.last_t = f.last_t.max(t);
                (prev, leave(f, e, &mut self.untracked))
            }
            None if known < cap => {
                let f = self.followed.entry(e.pkt).or_default();
                f.last_t = t;
                (None, leave(f, e, &mut self.untracked))
            }
            None => {
                self.untracked += 1;
                (None, None)
            }
        };
        if let Some(p) = prev {
            let dt = (t - p).max(0);
            let li = self.layer(e.layer, e.dir);
            self.layers[li].1.observe(dt);
            if let Some(i) = bi {
                grow(&mut self.bins[i].1.layers, li).add(dt as f64);
            }
        }
        if let Some((key, sojourn)) = left {
            let qi = self.queue(key);
            self.queues[qi].1.sojourn.observe(sojourn);
            if let Some(i) = bi {
                grow(&mut self.bins[i].1.queues, qi).sojourn.add(sojourn as f64);
            }
        }
        match e.point {
            Point::Drop => {
                let d = self.drops.entry((e.layer, e.reason, e.dir)).or_default();
                d.0 += 1;
                d.1 += e.bytes as u64;
                if let Some(i) = bi {
                    *self.bins[i].1.drops.entry((e.layer, e.dir)).or_default() += 1;
                }
                self.followed.remove(&e.pkt);
            }
            Point::Deliver if e.layer == Layer::App => self.bytes(e, At::Delivered, bi),
            Point::ProcEnd if e.layer == Layer::Upf => self.bytes(e, At::Upf, bi),
            _ => {}
        }
    }

    fn bytes(&mut self, e: &PacketEvent, at: At, bin: Option<usize>) {
        *self.ue_bytes.entry((e.ue, e.dir, at)).or_default() += e.bytes as u64;
        if at == At::Delivered {
            // The journey's end.
            self.followed.remove(&e.pkt);
        }
        if let Some(i) = bin {
            *self.bins[i].1.ue_bytes.entry((e.ue, e.dir)).or_default() += e.bytes as u64;
        }
    }

    /// Forgets packets not seen for `forget_ns` (once per `forget_ns` of event time).
    fn sweep(&mut self) {
        let horizon = self.t_last_ns - self.limits.forget_ns;
        if horizon <= self.last_sweep_ns {
            return;
        }
        let before = self.followed.len();
        self.followed.retain(|_, f| f.last_t >= horizon);
        self.forgotten += (before - self.followed.len()) as u64;
        self.last_sweep_ns = self.t_last_ns;
    }

    fn slot(&mut self, e: &SlotEvent) {
        self.seen(e.t_ns);
        if e.ue.is_some() {
            return;
        }
        if let (Some(used), Some(total)) = (e.prbs_used, e.prbs_total) {
            if total > 0 {
                if let Some(bin) = self.bin(e.t_ns) {
                    bin.prb_util.entry(e.dir).or_default().add(used as f64 / total as f64);
                }
            }
        }
    }

    fn control(&mut self, e: &ControlEvent) {
        self.seen(e.t_ns);
        let ns = match e.kind {
            ControlKind::AppRtt => e.value,
            ControlKind::TcpInfo => e.detail.as_deref().and_then(srtt_ns),
            _ => None,
        };
        let (Some(ns), Some(ue)) = (ns, e.ue) else { return };
        let source = if e.kind == ControlKind::AppRtt { "ping" } else { "tcp" };
        let r = self.rtt.entry((ue, source)).or_default();
        r.0 = ns;
        r.1 += 1;
        if let Some(bin) = self.bin(e.t_ns) {
            bin.rtt.entry(ue).or_default().add(ns);
        }
    }

    fn snapshot(&self, wall_s: f64) -> Value {
        let bin_s = self.limits.bin_ns as f64 * 1e-9;
        let n = self.bins.len();
        let t: Vec<f64> = self.bins.iter().map(|(k, _)| *k as f64 * bin_s).collect();
        // One series per key, aligned with `t` (null where the bin has no sample).
        fn series<K: Ord + Clone, V>(
            bins: &VecDeque<(i64, Bin)>,
            n: usize,
            pick: impl Fn(&Bin) -> &BTreeMap<K, V>,
            val: impl Fn(&V) -> Option<f64>,
        ) -> BTreeMap<K, Vec<Option<f64>>> {
            let mut out: BTreeMap<K, Vec<Option<f64>>> = BTreeMap::new();
            for (i, (_, b)) in bins.iter().enumerate() {
                for (k, v) in pick(b) {
                    out.entry(k.clone()).or_insert_with(|| vec![None; n])[i] = val(v);
                }
            }
            out
        }
        let ms = |ns: f64| (ns * 1e-6 * 1000.0).round() / 1000.0;
        // Per dense index: the bins' values (null where a bin has no sample).
        let dense = |i: usize, val: &dyn Fn(&Bin, usize) -> Option<f64>| -> Vec<Option<f64>> {
            self.bins.iter().map(|(_, b)| val(b, i)).collect()
        };
        let mut queues = Map::new();
        for (i, ((node, layer, queue, dir), _)) in self.queues.iter().enumerate() {
            let at = |b: &Bin, i: usize| b.queues.get(i).copied();
            // A bin whose events did not touch the queue holds what the last one left.
            let mut last = None;
            let bytes: Vec<Option<f64>> = self
                .bins
                .iter()
                .map(|(_, b)| {
                    last = at(b, i).and_then(|v| v.bytes).map(|x| x as f64).or(last);
                    last
                })
                .collect();
            let mean = dense(i, &|b, i| at(b, i).and_then(|v| v.sojourn.mean()).map(ms));
            let max = dense(i, &|b, i| at(b, i).filter(|v| v.sojourn.n > 0).map(|v| ms(v.sojourn.max)));
            if bytes.iter().chain(&mean).any(Option::is_some) {
                queues.insert(
                    format!("{node}/{layer}/{queue}/{dir}"),
                    json!({"bytes": bytes, "sojourn_ms": mean, "sojourn_max_ms": max}),
                );
            }
        }
        let mut layers = Map::new();
        for (i, ((l, d), _)) in self.layers.iter().enumerate() {
            let at = |b: &Bin, i: usize| b.layers.get(i).filter(|v| v.n > 0).copied();
            let mean = dense(i, &|b, i| at(b, i).and_then(|v| v.mean()).map(ms));
            let max = dense(i, &|b, i| at(b, i).map(|v| ms(v.max)));
            if mean.iter().any(Option::is_some) {
                layers.insert(format!("{l}/{d}"), json!({"mean_ms": mean, "max_ms": max}));
            }
        }
        // Counts and rates are zero, not missing, in a bin without events.
        let zero = |mut v: Vec<Option<f64>>| {
            v.iter_mut().for_each(|x| *x = Some(x.unwrap_or(0.0)));
            v
        };
        let drops: Map<String, Value> = series(&self.bins, n, |b| &b.drops, |v| Some(*v as f64))
            .into_iter()
            .map(|((l, d), v)| (format!("{l}/{d}"), json!(zero(v))))
            .collect();
        let mbps = |bytes: &u64| Some(((*bytes as f64 * 8.0 / bin_s / 1e6) * 1000.0).round() / 1000.0);
        let ue_mbps: Map<String, Value> = series(&self.bins, n, |b| &b.ue_bytes, mbps)
            .into_iter()
            .map(|((ue, d), v)| (format!("ue{ue}/{d}"), json!(zero(v))))
            .collect();
        let rtt: Map<String, Value> = series(&self.bins, n, |b| &b.rtt, |v| v.mean().map(ms))
            .into_iter()
            .map(|(ue, v)| (format!("ue{ue}"), json!(v)))
            .collect();
        let prb: Map<String, Value> = series(&self.bins, n, |b| &b.prb_util, |v| v.mean())
            .into_iter()
            .map(|(d, v)| (d.to_string(), json!(v)))
            .collect();
        let drops_total: u64 = self.drops.values().map(|d| d.0).sum();
        json!({
            "wall_s": (wall_s * 1000.0).round() / 1000.0,
            "event_time_s": self.t_last_ns as f64 * 1e-9,
            "bin_s": bin_s,
            "events": {"packet_events": self.rows[0], "slot_events": self.rows[1], "control_events": self.rows[2]},
            "drops_total": drops_total,
            "followed": self.followed.len(),
            "late": self.late,
            "untracked": self.untracked,
            "forgotten": self.forgotten,
            "t": t,
            "queues": queues,
            "layers": layers,
            "drops": drops,
            "ue_mbps": ue_mbps,
            "rtt_ms": rtt,
            "prb_util": prb,
        })
    }
}

/// `v[i]`, made (with any before it) if `v` is shorter.
fn grow<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

/// If `e` is the packet leaving a queue it waits in, that queue and the sojourn (the analysis's
/// rule, `docs/attribution.md`: an executor queue is left at the next `proc_begin`, a protocol
/// queue at the next `segment` or `dequeue`). An `enqueue` adds the queue to those it waits in
/// (beyond [`WAITING`] at once: counted in `untracked`).
fn leave(f: &mut Followed, e: &PacketEvent, untracked: &mut u64) -> Option<(QueueKey, i64)> {
    let exec = match (e.point, e.queue) {
        (Point::Enqueue, Some(q)) => {
            match f.waiting.iter_mut().find(|w| w.is_none()) {
                Some(slot) => {
                    *slot = Some(((e.node, e.layer, q, e.dir), e.t_ns));
                    f.n += 1;
                }
                None => *untracked += 1,
            }
            return None;
        }
        (Point::ProcBegin, _) => true,
        (Point::Segment | Point::Dequeue, _) => false,
        _ => return None,
    };
    if f.n == 0 {
        return None;
    }
    // The earliest matching enqueue (the analysis pairs each enqueue with the first leave after it).
    let slot = f
        .waiting
        .iter_mut()
        .filter(|w| matches!(w, Some(((_, _, q, _), t)) if is_exec(*q) == exec && *t <= e.t_ns))
        .min_by_key(|w| w.map_or(i64::MAX, |(_, t)| t))?;
    let (key, t_enq) = slot.take()?;
    f.n -= 1;
    Some((key, e.t_ns - t_enq))
}

/// The RTT sample of a `tcp_info` row, in ns: its `srtt_us` where the socket received a pure ACK
/// (`data_len` 0: a sender's estimate; a receiver's rows carry data and no meaningful RTT) — the
/// rule of the analysis' `rtt` table (`rtt_samples` in python/scout/analysis/derived.py).
fn srtt_ns(detail: &str) -> Option<f64> {
    if detail_num(detail, "data_len")? != 0.0 {
        return None;
    }
    detail_num(detail, "srtt_us").map(|us| us * 1000.0)
}

/// A number of a flat JSON object's text (the detail Scout's producers write), by key.
fn detail_num(detail: &str, key: &str) -> Option<f64> {
    let at = detail.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &detail[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals<K: PartialEq + std::fmt::Debug, V>(v: &[(K, V)], key: K) -> &V {
        &v.iter().find(|(k, _)| *k == key).unwrap_or_else(|| panic!("no {key:?}")).1
    }

    fn ev(t_ns: i64, at: (Node, Layer, Point), pkt: u64) -> PacketEvent {
        let mut e = PacketEvent::new(t_ns, at, Dir::Dl, pkt);
        e.ue = 3;
        e.bytes = 1000;
        e
    }

    fn enq(t_ns: i64, pkt: u64, q: Queue, occ: u64) -> PacketEvent {
        let mut e = ev(t_ns, (Node::GnbDu, Layer::Rlc, Point::Enqueue), pkt);
        e.queue = Some(q);
        e.queue_bytes = Some(occ);
        e.queue_pkts = Some((occ / 1000) as u32);
        e
    }

    #[test]
    fn sojourns_follow_the_analysis_rule_and_layer_times_add_up_to_the_span() {
        let a = Aggregator::new(Limits::default());
        // Two packets through the RLC SDU queue; the first waits 2 ms, the second 5 ms.
        a.packets(&[
            ev(0, (Node::Dn, Layer::App, Point::Tx), 1),
            enq(1_000_000, 1, Queue::RlcSdu, 1000),
            enq(1_500_000, 2, Queue::RlcSdu, 2000),
            // A proc_begin does not take a packet out of a protocol queue.
            ev(2_000_000, (Node::GnbDu, Layer::Rlc, Point::ProcBegin), 1),
            ev(3_000_000, (Node::GnbDu, Layer::Rlc, Point::Segment), 1),
            ev(6_500_000, (Node::GnbDu, Layer::Rlc, Point::Segment), 2),
            ev(7_000_000, (Node::Ue, Layer::App, Point::Deliver), 1),
        ]);
        a.with(|s| {
            let q = totals(&s.queues, (Node::GnbDu, Layer::Rlc, Queue::RlcSdu, Dir::Dl));
            assert_eq!(q.sojourn.count, 2);
            assert_eq!(q.sojourn.sum_ns, 2_000_000 + 5_000_000);
            // 2 ms falls in the 2.5 ms bucket, 5 ms in the 5 ms one.
            assert_eq!(q.sojourn.buckets[7], 1);
            assert_eq!(q.sojourn.buckets[8], 1);
            assert_eq!((q.bytes, q.pkts), (2000, 2));
            // Packet 1: 0 → 1 → 2 → 3 ms (rlc) → 7 ms (app): 7 ms in all, split by checkpoint.
            let rlc = totals(&s.layers, (Layer::Rlc, Dir::Dl));
            let app = totals(&s.layers, (Layer::App, Dir::Dl));
            assert_eq!(app.sum_ns, 4_000_000);
            assert_eq!(rlc.sum_ns + app.sum_ns, 7_000_000 + 5_000_000);
            // Delivered: packet 1 is no longer followed; packet 2 is.
            assert_eq!(s.followed.len(), 1);
            assert_eq!(s.ue_bytes[&(3, Dir::Dl, At::Delivered)], 1000);
        });
    }

    #[test]
    fn an_executor_queue_is_left_at_proc_begin() {
        let a = Aggregator::new(Limits::default());
        let mut e = enq(0, 9, Queue::CuupExec, 0);
        e.layer = Layer::CuupExec;
        a.packets(&[e, ev(250_000, (Node::GnbCu, Layer::Pdcp, Point::Segment), 9)]);
        a.packets(&[ev(400_000, (Node::GnbCu, Layer::Pdcp, Point::ProcBegin), 9)]);
        a.with(|s| {
            let q = totals(&s.queues, (Node::GnbDu, Layer::CuupExec, Queue::CuupExec, Dir::Dl));
            assert_eq!((q.sojourn.count, q.sojourn.sum_ns), (1, 400_000));
        });
    }

    #[test]
    fn memory_stays_bounded_and_what_is_not_followed_is_counted() {
        let limits = Limits { packets: 100, bins: 8, forget_ns: 1_000_000_000, ..Limits::default() };
        let a = Aggregator::new(limits);
        // 1000 packets seen once each at the UPF (a probe never sees them again), over 10 s.
        let rows: Vec<PacketEvent> =
            (0..1000).map(|i| ev(i as i64 * 10_000_000, (Node::Upf, Layer::N3, Point::Arrive), i)).collect();
        for chunk in rows.chunks(10) {
            a.packets(chunk);
        }
        a.with(|s| {
            assert!(s.followed.len() <= 100);
            // Each packet was either followed and then forgotten, still followed, or untracked.
            assert_eq!(s.forgotten + s.untracked + s.followed.len() as u64, 1000);
            assert!(s.forgotten > 0);
        });
        // The window holds the last 8 bins; an event before it is counted, not plotted.
        a.with(|s| assert!(s.bins.len() == 8 && s.late == 0));
        a.packets(&[ev(0, (Node::Upf, Layer::Upf, Point::Drop), 6000)]);
        a.with(|s| assert_eq!(s.late, 1));
    }

    #[test]
    fn the_window_zero_fills_rates_and_keeps_its_bins_aligned() {
        let a = Aggregator::new(Limits::default());
        a.packets(&[
            ev(0, (Node::Ue, Layer::App, Point::Deliver), 1),
            ev(750_000_000, (Node::Ue, Layer::App, Point::Deliver), 2),
        ]);
        let s = a.snapshot();
        assert_eq!(s["t"].as_array().unwrap().len(), 4);
        // 1000 bytes in 0.25 s = 0.032 Mbit/s, then two empty bins, then again.
        assert_eq!(s["ue_mbps"]["ue3/dl"], json!([0.032, 0.0, 0.0, 0.032]));
    }

    #[test]
    fn app_rtt_comes_from_pings_and_from_tcp_srtt() {
        let a = Aggregator::new(Limits::default());
        let mut ping = ControlEvent {
            t_ns: 1,
            node: Node::Ue,
            layer: Layer::App,
            kind: ControlKind::AppRtt,
            dir: None,
            ue: Some(0),
            drb: None,
            sn: None,
            value: Some(12_500_000.0),
            detail: None,
        };
        let mut tcp = ping.clone();
        tcp.kind = ControlKind::TcpInfo;
        tcp.value = Some(10.0);
        tcp.detail = Some(r#"{"cwnd":10,"data_len":0,"srtt_us":20500,"snd_wnd":1}"#.into());
        // A receiver's row (it received data): no RTT sample, as in the analysis' `rtt`.
        let mut rx = tcp.clone();
        rx.detail = Some(r#"{"cwnd":10,"data_len":1388,"srtt_us":900,"snd_wnd":1}"#.into());
        a.controls(&[ping.clone(), tcp, rx]);
        ping.ue = None;
        a.controls(&[ping]);
        a.with(|s| {
            assert_eq!(s.rtt[&(0, "ping")], (12_500_000.0, 1));
            assert_eq!(s.rtt[&(0, "tcp")], (20_500_000.0, 1));
        });
        assert_eq!(srtt_ns(r#"{"data_len":0,"srtt_us":7}"#), Some(7000.0));
        assert_eq!(srtt_ns(r#"{"data_len":0,"srtt_us":null}"#), None);
        assert_eq!(srtt_ns(r#"{"srtt_us":7}"#), None, "no data_len: not known to be a sender's");
    }
}
