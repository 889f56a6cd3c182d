//! The driver: read, group, walk, write — and the tables' schemas.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use scout_events::table::{Data, Slice, TableWriter};

use crate::codes::{COMPONENTS, LAYERS};
use crate::dicts::Dicts;
use crate::journey::{self, Batch, Closure, ProfileInput, STATUS};
use crate::profile::{self, Row};
use crate::table::{dict, meta, parquet_file};
use crate::{read, Error};

/// What to compute.
#[derive(Clone, Debug)]
pub struct Options {
    /// Profile windows (`None`: whole run only).
    pub window_ns: Option<i64>,
    /// The run's duration (throughput over the whole run).
    pub duration_ns: i64,
    /// Threads for reading and profiles.
    pub threads: usize,
    /// The `queues` table's time bin.
    pub bin_ns: i64,
    /// Memory the analysis may use, in bytes: when the events need more (see
    /// [`crate::mem::window_events`]) they are read in windows of packet ids, one at a time
    /// ([`read::Scope::Window`]). `None`: what the machine, or the memory cgroup the process is
    /// in, has available ([`crate::mem::available`]).
    pub memory: Option<u64>,
    /// Stops the analysis from another thread.
    pub stop: crate::Stop,
}

/// What the summary reports from these tables.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub events: u64,
    pub packets: u64,
    /// Packets per status.
    pub status: Vec<(&'static str, u64)>,
    /// `delivered` or `observed` (see docs/attribution.md, profiles).
    pub population: &'static str,
    pub closure: Closure,
    /// The three largest (layer, component) contributions over delivered packets.
    pub dominant: Vec<(&'static str, &'static str, i64)>,
    pub components: u64,
    pub layer_delays: u64,
    pub profiles: u64,
    pub sojourns: u64,
    pub queues: u64,
    /// Rows of `tti`; `None`: not written (the events are read in windows, or the slot table is
    /// not of Scout's own schema) — the relational engine writes it.
    pub tti: Option<u64>,
    /// Windows of packet ids the events were read in (1: all at once).
    pub windows: u64,
    /// The memory budget the windows were sized by (`None`: unknown, all at once).
    pub memory: Option<u64>,
}

/// Packets walked per batch handed to the writer thread.
const WALK_SLOTS: usize = 1 << 13;

fn journeys_schema() -> SchemaRef {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Arc::new(Schema::new(vec![
        f("pkt", DataType::UInt64, false),
        f("dir", dict(), false),
        f("ue", DataType::UInt32, false),
        f("rnti", DataType::UInt16, true),
        f("flow", DataType::UInt32, false),
        f("slice", dict(), false),
        f("qfi", DataType::UInt8, true),
        f("drb", DataType::UInt8, true),
        f("t_in_ns", DataType::Int64, false),
        f("t_out_ns", DataType::Int64, true),
        f("t_drop_ns", DataType::Int64, true),
        f("drop_layer", dict(), true),
        f("drop_reason", dict(), true),
        f("bytes", DataType::UInt32, false),
        f("segments", DataType::Int64, false),
        f("harq_retx", DataType::Int64, false),
        f("rlc_retx", DataType::Int64, false),
        f("ce", DataType::Boolean, false),
        f("n_events", DataType::Int64, false),
        f("status", dict(), false),
        f("delay_ns", DataType::Int64, true),
        f("span_ns", DataType::Int64, false),
    ]))
}

fn components_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("pkt", DataType::UInt64, false),
        Field::new("dir", dict(), false),
        Field::new("ue", DataType::UInt32, false),
        Field::new("flow", DataType::UInt32, false),
        Field::new("slice", dict(), false),
        Field::new("t_in_ns", DataType::Int64, false),
        Field::new("status", dict(), false),
        Field::new("layer", dict(), false),
        Field::new("component", dict(), false),
        Field::new("ns", DataType::Int64, false),
    ]))
}

/// The relational engine's `sojourns` columns and types (the enum columns nullable: files of other
/// tools may leave them empty).
fn sojourns_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("pkt", DataType::UInt64, false),
        Field::new("node", dict(), true),
        Field::new("layer", dict(), true),
        Field::new("queue", dict(), false),
        Field::new("dir", dict(), true),
        Field::new("ue", DataType::UInt32, false),
        Field::new("drb", DataType::UInt8, true),
        Field::new("t_enq", DataType::Int64, false),
        Field::new("t_leave", DataType::Int64, false),
        Field::new("sojourn_ns", DataType::Int64, false),
    ]))
}

fn layer_delays_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("pkt", DataType::UInt64, false),
        Field::new("dir", dict(), false),
        Field::new("ue", DataType::UInt32, false),
        Field::new("status", dict(), false),
        Field::new("layer", dict(), false),
        Field::new("ns", DataType::Int64, false),
    ]))
}

/// Output layer names: the named layers, then `other`.
fn out_layers() -> Vec<&'static str> {
    LAYERS.iter().copied().chain(["other"]).collect()
}

/// The enum fields' dictionaries of journeys, components, layer_delays and sojourns, field by field
/// (empty: not an enum), from the names of [`journey::Dicts::names`].
fn table_dicts(n: &[Vec<String>; 6]) -> [Vec<Vec<&str>>; 4] {
    let s = |i: usize| n[i].iter().map(String::as_str).collect::<Vec<&str>>();
    let (dir, slice, layer, reason, node, queue) = (s(0), s(1), s(2), s(3), s(4), s(5));
    let (status, layers, comps) = (STATUS.to_vec(), out_layers(), COMPONENTS.to_vec());
    let e = Vec::new;
    [
        vec![
            e(),
            dir.clone(),
            e(),
            e(),
            e(),
            slice.clone(),
            e(),
            e(),
            e(),
            e(),
            e(),
            layer.clone(),
            reason,
            e(),
            e(),
            e(),
            e(),
            e(),
            e(),
            status.clone(),
            e(),
            e(),
        ],
        vec![e(), dir.clone(), e(), e(), slice, e(), status.clone(), layers.clone(), comps, e()],
        vec![e(), dir.clone(), e(), status, layers, e()],
        vec![e(), node, layer, queue, dir, e(), e(), e(), e(), e()],
    ]
}

/// The four per-packet tables, written batch by batch.
struct Tables {
    journeys: Option<TableWriter>,
    components: Option<TableWriter>,
    layer_delays: Option<TableWriter>,
    sojourns: Option<TableWriter>,
    /// Rows of journeys, components, layer_delays, sojourns.
    rows: [u64; 4],
    /// Packet attributes gathered onto component or layer rows (buffers kept between batches).
    g: Gathered,
}

#[derive(Default)]
struct Gathered {
    pkt: Vec<i64>,
    dir: Vec<u8>,
    ue: Vec<u32>,
    flow: Vec<u32>,
    slice: Vec<u8>,
    t_in: Vec<i64>,
    status: Vec<u8>,
}

impl Gathered {
    fn fill(&mut self, j: &journey::Journeys, idx: &[u32]) {
        fn put<T: Copy>(out: &mut Vec<T>, col: &[T], idx: &[u32]) {
            out.clear();
            out.extend(idx.iter().map(|&i| col[i as usize]));
        }
        put(&mut self.pkt, &j.pkt, idx);
        put(&mut self.dir, &j.dir, idx);
        put(&mut self.ue, &j.ue, idx);
        put(&mut self.flow, &j.flow, idx);
        put(&mut self.slice, &j.slice, idx);
        put(&mut self.t_in, &j.t_in, idx);
        put(&mut self.status, &j.status, idx);
    }
}

impl Tables {
    /// The components table alone (`components`), or the three others; `names` are the enum
    /// columns' ([`journey::Dicts::names`]).
    fn create(out: &Path, names: &[Vec<String>; 6], only_components: bool) -> Result<Tables, Error> {
        let d = table_dicts(names);
        fn refs<'a>(v: &'a [Vec<&'a str>]) -> Vec<&'a [&'a str]> {
            v.iter().map(Vec::as_slice).collect()
        }
        let [jd, cd, ld, sd] = [refs(&d[0]), refs(&d[1]), refs(&d[2]), refs(&d[3])];
        let create = |name: &str, schema: SchemaRef, dicts: &[&[&str]], delta: &[&str], wanted: bool| {
            wanted.then(|| TableWriter::create(&out.join(name), schema, dicts, delta, meta())).transpose()
        };
        let all = !only_components;
        Ok(Tables {
            journeys: create("journeys.parquet", journeys_schema(), &jd, &["pkt", "t_in_ns"], all)?,
            components: create("components.parquet", components_schema(), &cd, &["pkt", "t_in_ns"], only_components)?,
            layer_delays: create("layer_delays.parquet", layer_delays_schema(), &ld, &["pkt"], all)?,
            sojourns: create("sojourns.parquet", sojourns_schema(), &sd, &["pkt"], all)?,
            rows: [0; 4],
            g: Gathered::default(),
        })
    }

    /// Grows the enum columns' dictionaries to `names` (a later window's: the same names, maybe
    /// more after them).
    fn extend_names(&mut self, names: &[Vec<String>; 6]) -> Result<(), Error> {
        let d = table_dicts(names);
        let writers = [&mut self.journeys, &mut self.components, &mut self.layer_delays, &mut self.sojourns];
        for (w, dicts) in writers.into_iter().zip(&d) {
            let Some(w) = w.as_mut() else { continue };
            for (field, names) in dicts.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
                w.extend_names(field, names)?;
            }
        }
        Ok(())
    }

    fn write(&mut self, b: &Batch) -> Result<(), Error> {
        let j = &b.journeys;
        let c = &b.components;
        let l = &b.layer_delays;
        self.rows[0] += j.len() as u64;
        self.rows[1] += c.j.len() as u64;
        self.rows[2] += l.j.len() as u64;
        self.rows[3] += b.sojourns.len() as u64;
        if let Some(w) = self.journeys.as_mut() {
            w.append(&[
                Slice::all(Data::I64(&j.pkt)),
                Slice::all(Data::U8(&j.dir)),
                Slice::all(Data::U32(&j.ue)),
                Slice::nullable(&j.rnti.0, Data::U32(&j.rnti.1)),
                Slice::all(Data::U32(&j.flow)),
                Slice::all(Data::U8(&j.slice)),
                Slice::nullable(&j.qfi.0, Data::U32(&j.qfi.1)),
                Slice::nullable(&j.drb.0, Data::U32(&j.drb.1)),
                Slice::all(Data::I64(&j.t_in)),
                Slice::nullable(&j.t_out.0, Data::I64(&j.t_out.1)),
                Slice::nullable(&j.t_drop.0, Data::I64(&j.t_drop.1)),
                Slice::nullable(&j.drop_layer.0, Data::U8(&j.drop_layer.1)),
                Slice::nullable(&j.drop_reason.0, Data::U8(&j.drop_reason.1)),
                Slice::all(Data::U32(&j.bytes)),
                Slice::all(Data::I64(&j.segments)),
                Slice::all(Data::I64(&j.harq_retx)),
                Slice::all(Data::I64(&j.rlc_retx)),
                Slice::all(Data::U8(&j.ce)),
                Slice::all(Data::I64(&j.n_events)),
                Slice::all(Data::U8(&j.status)),
                Slice::nullable(&j.delay.0, Data::I64(&j.delay.1)),
                Slice::all(Data::I64(&j.span)),
            ])?;
        }
        // Packet attributes gathered onto the component and layer rows.
        if let Some(w) = self.components.as_mut() {
            self.g.fill(j, &c.j);
            let g = &self.g;
            w.append(&[
                Slice::all(Data::I64(&g.pkt)),
                Slice::all(Data::U8(&g.dir)),
                Slice::all(Data::U32(&g.ue)),
                Slice::all(Data::U32(&g.flow)),
                Slice::all(Data::U8(&g.slice)),
                Slice::all(Data::I64(&g.t_in)),
                Slice::all(Data::U8(&g.status)),
                Slice::all(Data::U8(&c.layer)),
                Slice::all(Data::U8(&c.comp)),
                Slice::all(Data::I64(&c.ns)),
            ])?;
        }
        if let Some(w) = self.sojourns.as_mut() {
            let s = &b.sojourns;
            w.append(&[
                Slice::all(Data::I64(&s.pkt)),
                Slice::nullable(&s.node.0, Data::U8(&s.node.1)),
                Slice::nullable(&s.layer.0, Data::U8(&s.layer.1)),
                Slice::all(Data::U8(&s.queue)),
                Slice::nullable(&s.dir.0, Data::U8(&s.dir.1)),
                Slice::all(Data::U32(&s.ue)),
                Slice::nullable(&s.drb.0, Data::U32(&s.drb.1)),
                Slice::all(Data::I64(&s.t_enq)),
                Slice::all(Data::I64(&s.t_leave)),
                Slice::all(Data::I64(&s.sojourn)),
            ])?;
        }
        if let Some(w) = self.layer_delays.as_mut() {
            self.g.fill(j, &l.j);
            let g = &self.g;
            w.append(&[
                Slice::all(Data::I64(&g.pkt)),
                Slice::all(Data::U8(&g.dir)),
                Slice::all(Data::U32(&g.ue)),
                Slice::all(Data::U8(&g.status)),
                Slice::all(Data::U8(&l.layer)),
                Slice::all(Data::I64(&l.ns)),
            ])?;
        }
        Ok(())
    }

    fn close(self) -> Result<[u64; 4], Error> {
        for w in [self.journeys, self.components, self.layer_delays, self.sojourns].into_iter().flatten() {
            w.close()?;
        }
        Ok(self.rows)
    }
}

/// What a writer thread is handed: the enum columns' names (before the batches that use them:
/// each window of packets may add names) or a batch of rows.
enum Msg {
    Names(Arc<[Vec<String>; 6]>),
    Rows(Arc<Batch>),
}

/// Computes `journeys`, `components`, `layer_delays`, `sojourns`, `queues` and `profiles` of the
/// run whose event tables are in `events_dir`, into `out_dir`. `progress` is told each stage as it
/// starts.
///
/// When the events do not fit the memory budget ([`Options::memory`]) they are read in windows of
/// packet ids, one after the other: every packet (and so every event) belongs to one window, the
/// per-packet tables stream out window by window in the same order as in one pass, and only the
/// (queue, bin) folds and the profiles' inputs (per packet and per component row) outlive a window.
pub fn analyze(
    events_dir: &Path,
    out_dir: &Path,
    opt: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Summary, Error> {
    let threads = opt.threads.max(1);
    let packet = events_dir.join("packet.parquet");
    progress("read");
    let bin_ns = opt.bin_ns.max(1);
    let mut layout = read::layout(&packet)?;
    let in_flight = read::in_flight(&events_dir.join("control.parquet"))?;
    let memory = opt.memory.or_else(crate::mem::available);
    let budget = memory.and_then(|m| crate::mem::window_events(m, layout.total)).filter(|_| layout.dense.is_some());
    let profile_cap = memory.map_or(usize::MAX, |m| crate::mem::profile_values(m, layout.total, threads));
    let packets = layout.ids.len();
    let mut scopes = Windows { next: layout.dense.map(|(lo, _)| lo), all: Some(std::mem::take(&mut layout.ids)) };
    fs::create_dir_all(out_dir).map_err(|e| Error::Io { path: out_dir.to_path_buf(), source: e })?;
    // Windows keep one window's component rows in memory; the rest go to files.
    let rows = if budget.is_some() { 0 } else { layout.total as usize };
    let mut walk = Walk {
        prof: ProfileInput::with_capacity(packets, rows),
        closure: Closure::default(),
        totals: crate::queues::Totals::default(),
        seed: Default::default(),
        dicts: None,
        events: 0,
        windows: 0,
    };
    let input = WalkInput { packet: &packet, layout: &layout, in_flight: &in_flight, opt, threads, bin_ns };
    // Two writer threads (components; journeys, layer delays and sojourns) share each batch; the
    // last to finish with it sends it back to the walk (fresh memory costs a page fault per page).
    let (back, recycled) = sync_channel::<Batch>(4);
    let tti = budget.is_none().then(|| spawn_tti(events_dir, out_dir, opt));
    let rows = std::thread::scope(|s| -> Result<[u64; 4], Error> {
        let mut senders = Vec::new();
        let mut writers = Vec::new();
        for only_components in [true, false] {
            let (tx, rx) = sync_channel::<Msg>(2);
            let back = back.clone();
            senders.push(tx);
            writers.push(s.spawn(move || table_writer(out_dir, only_components, rx, back)));
        }
        drop(back);
        let mut walked = Ok(());
        while let Some(scope) = scopes.next(&layout, budget) {
            let spill = budget.is_some().then_some(out_dir);
            match walk.window(scope, &input, &senders, &recycled, spill, progress) {
                Ok(Some(hi)) => scopes.done(hi, &layout),
                Ok(None) => break,
                Err(e) => {
                    walked = Err(e);
                    break;
                }
            }
        }
        drop(senders);
        let mut rows = [0u64; 4];
        for w in writers {
            let r = w.join().expect("writer thread panicked")?;
            rows = std::array::from_fn(|i| rows[i].max(r[i]));
        }
        walked.map(|()| rows)
    });
    // Joined whatever the walk's outcome (a stop reaches it too).
    let tti = match tti {
        Some(t) => t
            .map_err(|e| Error::Io { path: out_dir.join("tti.parquet"), source: e })?
            .join()
            .expect("tti thread panicked"),
        None => Ok(None),
    };
    let (rows, tti) = (rows?, tti?);
    opt.stop.check()?;
    let Walk { mut prof, closure, totals, dicts, events, windows, .. } = walk;
    let grouped_dicts = dicts.expect("at least one window");
    progress("queues");
    let queues = crate::queues::write(&out_dir.join("queues.parquet"), totals, bin_ns, &grouped_dicts)?;
    opt.stop.check()?;
    progress("profiles");
    prof.seal()?;
    let delivered = prof.status.iter().filter(|&&s| s == journey::DELIVERED).count() as u64;
    let population_delivered = delivered > 0;
    let population = if population_delivered { "delivered" } else { "observed" };
    let profile_rows = profiles(&prof, opt, population_delivered, &grouped_dicts.slice.names, threads, profile_cap);
    write_profiles(&out_dir.join("profiles.parquet"), &profile_rows, &grouped_dicts, population)?;
    Ok(Summary {
        events,
        packets: rows[0],
        status: status_counts(&prof),
        population,
        dominant: dominant(&closure),
        closure,
        components: rows[1],
        layer_delays: rows[2],
        profiles: profile_rows.len() as u64,
        sojourns: rows[3],
        queues,
        tti,
        windows,
        memory,
    })
}

/// The slot table's `tti` beside the walk, when the run is read at once (in windows the memory is
/// the walk's; the database's sort spills to disk), at the lowest priority: it needs none of the
/// walk's results, and the walk's threads leave cores idle while they wait for each other, which
/// it fills (at the walk's priority it delayed the walk by most of its own ~0.45 s of a core on
/// two cores; niced, the whole `scout analyze` is ~0.3 s sooner: bench/RESULTS.md).
fn spawn_tti(
    events_dir: &Path,
    out_dir: &Path,
    opt: &Options,
) -> std::io::Result<std::thread::JoinHandle<Result<Option<u64>, Error>>> {
    let (slot, out, stop) = (events_dir.join("slot.parquet"), out_dir.join("tti.parquet"), opt.stop.clone());
    std::thread::Builder::new().name("scout-tti".into()).spawn(move || {
        lowest_priority();
        crate::tti::write(&slot, &out, &stop)
    })
}

/// A writer thread: the per-packet tables (only `components`, or the others) from the walk's
/// batches, each batch sent back for reuse by the last thread done with it. Returns the rows of
/// journeys, components, layer_delays and sojourns it wrote.
fn table_writer(
    out_dir: &Path,
    only_components: bool,
    rx: std::sync::mpsc::Receiver<Msg>,
    back: std::sync::mpsc::SyncSender<Batch>,
) -> Result<[u64; 4], Error> {
    let mut t: Option<Tables> = None;
    while let Ok(m) = rx.recv() {
        match (m, t.as_mut()) {
            (Msg::Names(n), None) => t = Some(Tables::create(out_dir, &n, only_components)?),
            (Msg::Names(n), Some(t)) => t.extend_names(&n)?,
            (Msg::Rows(b), Some(t)) => {
                t.write(&b)?;
                if let Ok(mut b) = Arc::try_unwrap(b) {
                    b.clear();
                    let _ = back.try_send(b);
                }
            }
            (Msg::Rows(_), None) => unreachable!("names are sent before rows"),
        }
    }
    t.map_or(Ok([0; 4]), Tables::close)
}

/// What one window's walk reads.
struct WalkInput<'a> {
    packet: &'a Path,
    layout: &'a read::Layout,
    in_flight: &'a [u64],
    opt: &'a Options,
    threads: usize,
    bin_ns: i64,
}

/// What the walk keeps from one window to the next, for the stages after it.
struct Walk {
    prof: ProfileInput,
    closure: Closure,
    totals: crate::queues::Totals,
    /// The dictionaries' names so far (a window's codes extend the last one's).
    seed: [Vec<String>; 6],
    dicts: Option<Dicts>,
    events: u64,
    windows: u64,
}

impl Walk {
    /// One window: read, group, walk — its rows sent to the writers batch by batch, its queues
    /// folded, its profile inputs kept (spilled to `spill` when given). Returns the window's last
    /// id (dense ids), or `None` when there is no next window: the ids are not dense (one pass),
    /// or a writer failed (its error is returned by the writer).
    fn window(
        &mut self,
        scope: read::Scope,
        input: &WalkInput<'_>,
        senders: &[std::sync::mpsc::SyncSender<Msg>],
        recycled: &std::sync::mpsc::Receiver<Batch>,
        spill: Option<&Path>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Option<u64>, Error> {
        let send = |m: &dyn Fn() -> Msg| senders.iter().all(|tx| tx.send(m()).is_ok());
        let opt = input.opt;
        if self.windows > 0 {
            progress("read");
        }
        let scanned = read::scan(input.packet, input.layout, scope, input.threads, input.bin_ns, &opt.stop)?;
        let last = match scanned.ids {
            read::Ids::Dense { hi, .. } => Some(hi),
            read::Ids::Map { .. } => None,
        };
        self.events += scanned.parts.iter().map(|p| p.events).sum::<u64>();
        self.windows += 1;
        opt.stop.check()?;
        progress("group");
        let mut grouped = journey::group(scanned, &self.seed, input.in_flight, input.bin_ns, input.packet)?;
        self.seed = grouped.dicts.names();
        let names = Arc::new(self.seed.clone());
        if !send(&|| Msg::Names(names.clone())) {
            return Ok(None); // a writer failed; its error is returned below
        }
        opt.stop.check()?;
        progress("journeys");
        let slots = grouped.slots();
        let mut at = 0;
        while at < slots {
            opt.stop.check()?;
            let mut b = recycled.try_recv().unwrap_or_default();
            let end = (at + WALK_SLOTS).min(slots);
            grouped.walk(at..end, &mut b, &mut self.prof, &mut self.closure);
            at = end;
            let b = Arc::new(b);
            if !send(&|| Msg::Rows(b.clone())) {
                return Ok(None);
            }
        }
        grouped.take_queues(&mut self.totals);
        if let Some(dir) = spill {
            self.prof.spill(dir)?;
        }
        self.dicts = Some(grouped.dicts);
        Ok(last)
    }
}

/// Packets by status (those of a status that occurred).
fn status_counts(prof: &ProfileInput) -> Vec<(&'static str, u64)> {
    let mut status = Vec::new();
    for (code, name) in STATUS.iter().enumerate() {
        let n = prof.status.iter().filter(|&&s| s as usize == code).count() as u64;
        if n > 0 {
            status.push((*name, n));
        }
    }
    status
}

/// The three (layer, component)s that hold the most delay.
fn dominant(closure: &Closure) -> Vec<(&'static str, &'static str, i64)> {
    let mut dominant: Vec<(&'static str, &'static str, i64)> = closure
        .by_code
        .iter()
        .enumerate()
        .filter(|(_, &ns)| ns > 0)
        .map(|(code, &ns)| (crate::codes::layer_name((code / 8) as u8), COMPONENTS[code % 8], ns))
        .collect();
    dominant.sort_by_key(|d| std::cmp::Reverse(d.2));
    dominant.truncate(3);
    dominant
}

/// Lowers the calling thread to the lowest CPU priority (nice 19; on Linux a thread's niceness is
/// its own), so that it runs on what the other threads leave idle.
fn lowest_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on this thread's own id; a failure leaves the priority as it was.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
}

/// The scopes of the reads: the whole file, or windows of packet ids one after another.
struct Windows {
    /// The next window's first id (dense ids).
    next: Option<u64>,
    /// The whole file's ids, until read at once.
    all: Option<read::Ids>,
}

impl Windows {
    fn next(&mut self, layout: &read::Layout, budget: Option<u64>) -> Option<read::Scope> {
        match (budget, self.next) {
            (Some(budget), Some(lo)) => {
                let (lo, hi) = layout.window(lo, budget);
                Some(read::Scope::Window { lo, hi, budget })
            }
            _ => self.all.take().map(read::Scope::All),
        }
    }

    /// The last window ended at id `hi` (of the file's `layout`).
    fn done(&mut self, hi: u64, layout: &read::Layout) {
        self.all = None;
        self.next = self.next.filter(|_| layout.dense.is_some_and(|(_, last)| hi < last)).map(|_| hi + 1);
    }
}

/// Every profile task, `threads` at a time, each placing at most `cap` component values at a time;
/// rows in task order. A task whose packets group exactly
/// like an earlier task's (one UE, one flow or one slice per direction: the `ue` scope partitions
/// packets as `run` does) takes that task's statistics under its own keys instead of recomputing.
fn profiles(
    inp: &ProfileInput,
    opt: &Options,
    delivered: bool,
    slices: &[String],
    threads: usize,
    cap: usize,
) -> Vec<Row> {
    let tasks = profile::tasks(opt.window_ns.is_some());
    let window = |windowed: bool| if windowed { opt.window_ns } else { None };
    let parts: Vec<profile::Partition> =
        tasks.iter().map(|&(scope, windowed)| profile::partition(inp, scope, window(windowed))).collect();
    // The task each task copies (itself if none).
    let same: Vec<usize> = (0..tasks.len())
        .map(|i| (0..i).find(|&k| tasks[k].1 == tasks[i].1 && parts[k].g == parts[i].g).unwrap_or(i))
        .collect();
    let own: Vec<usize> = (0..tasks.len()).filter(|&i| same[i] == i).collect();
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, Vec<Row>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads.min(own.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    let mut scratch = profile::Scratch::new(inp.dir.len(), inp.cj.len(), cap);
                    while let Some(&i) = own.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let (scope, windowed) = tasks[i];
                        let rows = profile::scope_rows(
                            &mut scratch,
                            inp,
                            &parts[i],
                            scope,
                            window(windowed),
                            delivered,
                            opt.duration_ns,
                            slices,
                        );
                        out.push((i, rows));
                    }
                    out
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().expect("profile thread panicked")).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut rows: Vec<Vec<Row>> = vec![Vec::new(); tasks.len()];
    for (i, r) in done {
        rows[i] = r;
    }
    for i in 0..tasks.len() {
        if same[i] != i {
            rows[i] = profile::relabel(&rows[same[i]], tasks[i].0, &parts[i], slices);
        }
    }
    rows.into_iter().flatten().collect()
}

fn write_profiles(path: &Path, rows: &[Row], d: &Dicts, population: &str) -> Result<(), Error> {
    let layers = out_layers();
    let strs = |f: &dyn Fn(&Row) -> String| -> ArrayRef { Arc::new(StringArray::from_iter_values(rows.iter().map(f))) };
    let i64s = |f: &dyn Fn(&Row) -> Option<i64>| -> ArrayRef { Arc::new(Int64Array::from_iter(rows.iter().map(f))) };
    let f64s = |f: &dyn Fn(&Row) -> Option<f64>| -> ArrayRef { Arc::new(Float64Array::from_iter(rows.iter().map(f))) };
    let layer = |r: &Row| r.layer_comp.map_or("total".to_string(), |(l, _)| layers[l as usize].to_string());
    let comp = |r: &Row| r.layer_comp.map_or("total".to_string(), |(_, c)| COMPONENTS[c as usize].to_string());
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("scope", strs(&|r| r.scope.to_string())),
        ("key", strs(&|r| r.key.clone())),
        ("dir", strs(&|r| d.dir.names.get(r.dir as usize).cloned().unwrap_or_default())),
        ("layer", strs(&layer)),
        ("component", strs(&comp)),
        ("count", i64s(&|r| Some(r.stats.count))),
        ("mean_ns", f64s(&|r| r.stats.mean)),
        ("p50_ns", f64s(&|r| r.stats.q[0])),
        ("p90_ns", f64s(&|r| r.stats.q[1])),
        ("p99_ns", f64s(&|r| r.stats.q[2])),
        ("p999_ns", f64s(&|r| r.stats.q[3])),
        ("max_ns", i64s(&|r| r.stats.max)),
        ("sum_ns", i64s(&|r| r.stats.sum)),
        ("population", strs(&|_| population.to_string())),
        ("packets", i64s(&|r| Some(r.packets))),
        ("offered", i64s(&|r| Some(r.offered))),
        ("delivered", i64s(&|r| Some(r.delivered))),
        ("dropped", i64s(&|r| Some(r.dropped))),
        ("in_flight", i64s(&|r| Some(r.in_flight))),
        ("incomplete", i64s(&|r| Some(r.incomplete))),
        ("delivered_bytes", i64s(&|r| r.delivered_bytes)),
        ("window_start_ns", i64s(&|r| r.window_start_ns)),
        ("mean_per_pkt_ns", f64s(&|r| r.mean_per_pkt_ns)),
        ("throughput_bps", f64s(&|r| Some(r.throughput_bps))),
        ("loss", f64s(&|r| r.loss)),
    ];
    let batch = RecordBatch::try_from_iter(cols).map_err(|e| Error::parquet(path, e))?;
    parquet_file(path, &batch)
}
