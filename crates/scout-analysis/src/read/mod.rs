//! Reading the columns the attribution needs from a run's `packet.parquet` (and the `in_flight`
//! rows of `control.parquet`), row groups split between threads.
//!
//! Enum columns are read as dictionaries: a batch's dictionary (a handful of names) is mapped once
//! onto this part's codes, then each row is a table lookup. Columns written by other tools (plain
//! strings, other integer widths) are accepted too, more slowly.

mod columns;
mod part;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::Error;

use columns::{enums, ints, Ctx, COLUMNS};
use part::scan_part;
pub use part::{ingress_rank, Acc, Part, EMPTY, T_LIMIT};

/// How packet ids map to packet indices.
#[derive(Debug)]
pub enum Ids {
    /// `pkt - lo` (ids of a run are nearly dense).
    Dense { lo: u64, hi: u64 },
    /// Through a map (first-seen order); `ids[i]` is index `i`'s packet id.
    Map { map: HashMap<u64, u32>, ids: Vec<u64> },
}

impl Default for Ids {
    fn default() -> Self {
        Ids::Map { map: HashMap::new(), ids: Vec::new() }
    }
}

impl Ids {
    pub fn len(&self) -> usize {
        match self {
            Ids::Dense { lo, hi } => (hi - lo + 1) as usize,
            Ids::Map { ids, .. } => ids.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of packet id `k`.
    #[inline]
    pub fn index(&self, k: u64) -> Option<usize> {
        match self {
            Ids::Dense { lo, hi } => (*lo..=*hi).contains(&k).then(|| (k - lo) as usize),
            Ids::Map { map, .. } => map.get(&k).map(|&i| i as usize),
        }
    }

    /// The packet id of index `i`.
    pub fn id(&self, i: usize) -> u64 {
        match self {
            Ids::Dense { lo, .. } => lo + i as u64,
            Ids::Map { ids, .. } => ids[i],
        }
    }
}

fn open(path: &Path) -> Result<ParquetRecordBatchReaderBuilder<File>, Error> {
    let f = File::open(path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })?;
    ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| Error::parquet(path, e))
}

/// The projection onto `columns` (in the file's order), or which one is missing.
fn projection(
    b: &ParquetRecordBatchReaderBuilder<File>,
    path: &Path,
    columns: &[&str],
) -> Result<ProjectionMask, Error> {
    let mut roots = Vec::with_capacity(columns.len());
    for &c in columns {
        roots.push(b.schema().index_of(c).map_err(|_| Error::Column {
            path: path.to_path_buf(),
            column: c.to_string(),
            problem: "missing".into(),
        })?);
    }
    Ok(ProjectionMask::roots(b.parquet_schema(), roots))
}

/// The Parquet files of an event table at `path`: the file itself, or, when `path` is a dataset
/// directory (a large run's `events/TABLE.parquet/`, or Spark's), its part files in name order.
pub fn table_files(path: &Path) -> Result<Vec<PathBuf>, Error> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let io = |e| Error::Io { path: path.to_path_buf(), source: e };
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet") && p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::parquet(path, "a directory without Parquet files (*.parquet)"));
    }
    Ok(files)
}

/// Reads the row groups `groups` (indices into `layout`'s, in order) with `columns` projected,
/// file after file, handing each batch to `f` with its file's path.
fn each_batch(
    layout: &Layout,
    groups: &[usize],
    columns: &[&str],
    stop: &crate::Stop,
    mut f: impl FnMut(&Path, &RecordBatch) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut i = 0;
    while i < groups.len() {
        let file = layout.groups[groups[i]].0;
        let mut local = Vec::new();
        while i < groups.len() && layout.groups[groups[i]].0 == file {
            local.push(layout.groups[groups[i]].1);
            i += 1;
        }
        let path = &layout.files[file];
        let b = open(path)?;
        let mask = projection(&b, path, columns)?;
        let reader = b
            .with_projection(mask)
            .with_row_groups(local)
            .with_batch_size(1 << 16)
            .build()
            .map_err(|e| Error::parquet(path, e))?;
        for batch in reader {
            stop.check()?;
            f(path, &batch.map_err(|e| Error::parquet(path, e))?)?;
        }
    }
    Ok(())
}

/// The range of `pkt` in each row group, from the column statistics (none if a group has none).
fn pkt_ranges(b: &ParquetRecordBatchReaderBuilder<File>) -> Option<Vec<(u64, u64)>> {
    let md = b.metadata();
    let col = b.parquet_schema().columns().iter().position(|c| c.path().string() == "pkt")?;
    let mut out = Vec::new();
    for g in md.row_groups() {
        if g.num_rows() == 0 {
            out.push((u64::MAX, 0));
            continue;
        }
        match g.column(col).statistics()? {
            parquet::file::statistics::Statistics::Int64(s) => {
                out.push((*s.min_opt()? as u64, *s.max_opt()? as u64));
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A packet file's row groups: their rows and `pkt` ranges, and how its packet ids are indexed.
pub struct Layout {
    /// The table's files ([`table_files`]) and, per row group, its file and index in it.
    files: Vec<PathBuf>,
    groups: Vec<(usize, usize)>,
    rows: Vec<i64>,
    /// Per row group, its `pkt` range from the statistics (none when a group has none).
    ranges: Option<Vec<(u64, u64)>>,
    /// Events in the file.
    pub total: u64,
    /// The whole file's packet ids.
    pub ids: Ids,
    /// The first and last id when they are dense (windows of ids can be read).
    pub dense: Option<(u64, u64)>,
}

/// Reads the footers of a packet table's files (and, when its ids are not nearly dense, numbers
/// them in a pass over the `pkt` column).
pub fn layout(path: &Path) -> Result<Layout, Error> {
    let files = table_files(path)?;
    let (mut groups, mut rows, mut ranges) = (Vec::new(), Vec::new(), Some(Vec::new()));
    for (fi, f) in files.iter().enumerate() {
        let b = open(f)?;
        projection(&b, f, &COLUMNS)?;
        for (g, md) in b.metadata().row_groups().iter().enumerate() {
            groups.push((fi, g));
            rows.push(md.num_rows());
        }
        ranges = ranges.zip(pkt_ranges(&b)).map(|(mut a, r)| {
            a.extend(r);
            a
        });
    }
    let total: i64 = rows.iter().sum();
    // Packet indices: dense when the ids' statistics say so, else numbered in a first pass.
    let (lo, hi) =
        ranges.as_ref().map_or((u64::MAX, 0), |r| r.iter().fold((u64::MAX, 0), |a, g| (a.0.min(g.0), a.1.max(g.1))));
    let ids = if total == 0 {
        Ids::default()
    } else if ranges.is_some() && lo <= hi && hi - lo <= 4 * total as u64 + 1024 {
        Ids::Dense { lo, hi }
    } else {
        number_ids(&files)?
    };
    let dense = match ids {
        Ids::Dense { lo, hi } => Some((lo, hi)),
        Ids::Map { .. } => None,
    };
    Ok(Layout { files, groups, rows, ranges, total: total as u64, ids, dense })
}

impl Layout {
    /// The packet ids a window starting at `lo` spans so that about `budget` events fall in it:
    /// each row group's events are taken as spread evenly over its `pkt` range (the count pass
    /// then cuts a window that holds more, [`scan`]). At most `budget` ids (every id has an event,
    /// or nearly: dense ids), at least one.
    pub fn window(&self, lo: u64, budget: u64) -> (u64, u64) {
        let Some((_, last)) = self.dense else { return (lo, lo) };
        let Some(ranges) = &self.ranges else { return (lo, last) };
        let cap = lo.saturating_add(budget.max(1) - 1).min(last);
        // Events in [lo, x] by the estimate, a non-decreasing function of x: bisect.
        let est = |x: u64| -> f64 {
            ranges
                .iter()
                .zip(&self.rows)
                .filter(|((a, b), _)| a <= b && *b >= lo && *a <= x)
                .map(|(&(a, b), &n)| n as f64 * ((b.min(x) - a.max(lo) + 1) as f64 / (b - a + 1) as f64))
                .sum()
        };
        let (mut ok, mut over) = (lo, cap);
        if est(cap) <= budget as f64 {
            return (lo, cap);
        }
        while over - ok > 1 {
            let mid = ok + (over - ok) / 2;
            if est(mid) <= budget as f64 {
                ok = mid;
            } else {
                over = mid;
            }
        }
        (lo, ok)
    }
}

/// The packet events of a file (or of a window of its packet ids), folded per packet and their
/// order keys grouped by packet.
pub struct Scanned {
    /// The packets scanned: the file's ids, or the window's (`Ids::Dense`).
    pub ids: Ids,
    pub parts: Vec<Part>,
    /// Packet `i`'s order keys are `entries[start[i]..start[i + 1]]`, in file order.
    pub start: Vec<usize>,
    pub entries: Vec<i64>,
}

/// Which packets [`scan`] reads.
pub enum Scope {
    /// Every packet of the file: its ids ([`Layout::ids`], taken).
    All(Ids),
    /// The packets with ids `lo..=hi` (dense ids only): the row groups whose statistics overlap
    /// them are read and other packets' events skipped. When more than `budget` events turn out to
    /// fall in it, the window is cut after the packet that reaches `budget` (at least one packet).
    Window { lo: u64, hi: u64, budget: u64 },
}

/// Reads the packet events of `path` with `threads` threads, each folding a contiguous run of row
/// groups into per-packet aggregates ([`Part`]) and placing every event's packed order key
/// ([`crate::journey`]) among its packet's. A first pass over the `pkt` column alone (cheap: delta
/// encoded) counts each packet's events, so that keys go straight to their place: a counting sort
/// without an intermediate copy of the events.
pub fn scan(
    path: &Path,
    layout: &Layout,
    scope: Scope,
    threads: usize,
    bin_ns: i64,
    stop: &crate::Stop,
) -> Result<Scanned, Error> {
    let threads = threads.max(1);
    let (mut ids, windowed, budget) = match scope {
        Scope::Window { lo, hi, budget } => (Ids::Dense { lo, hi }, true, budget),
        Scope::All(ids) => (ids, false, u64::MAX),
    };
    let mut parts = partition(layout, &ids, windowed, threads);
    let ids_ref = &ids;
    // Pass 1: events per packet and each packet's first time, per part.
    let mut counted: Vec<(Vec<u32>, Vec<i64>)> = std::thread::scope(|s| {
        let hs: Vec<_> = parts
            .iter()
            .map(|(groups, span)| s.spawn(move || count_part(layout, groups, *span, ids_ref, windowed, stop)))
            .collect();
        hs.into_iter().map(|h| h.join().expect("reader thread panicked")).collect::<Result<Vec<_>, _>>()
    })?;
    let np = ids.len();
    if np > u32::MAX as usize {
        return Err(Error::parquet(path, format!("{np} packet ids: more than the attribution handles (2^32)")));
    }
    let mut before = vec![0usize; np];
    for ((_, (first, _)), (c, _)) in parts.iter().zip(&counted) {
        for (i, &n) in c.iter().enumerate() {
            before[first + i] += n as usize;
        }
    }
    if windowed {
        cut_window(budget, &mut ids, &mut parts, &mut counted, &mut before);
    }
    let np = before.len();
    let ids_ref = &ids;
    let mut base = vec![i64::MAX; np];
    let mut counts = Vec::with_capacity(counted.len());
    for ((_, (first, _)), (c, t)) in parts.iter().zip(counted) {
        for (i, &t) in t.iter().enumerate() {
            base[first + i] = base[first + i].min(t);
        }
        counts.push(c);
    }
    let (start, cursors) = places(&parts, &counts, before);
    let n = start[np];
    let mut entries: Vec<i64> = Vec::with_capacity(n);
    let out = crate::mem::Scatter::new(&mut entries);
    // Pass 2: every column; aggregates per packet, keys to their slots.
    let parts = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .into_iter()
            .zip(counts)
            .zip(cursors)
            .map(|(((groups, span), counts), cursor)| {
                let (out, base) = (&out, &base);
                s.spawn(move || {
                    let slots = Slots { cursor, left: counts, out, base, windowed };
                    let part = Part::new(span, bin_ns);
                    scan_part(layout, &groups, part, ids_ref, slots, stop)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("reader thread panicked")).collect::<Result<Vec<_>, _>>()
    })?;
    let written: u64 = parts.iter().map(|p| p.events).sum();
    if written != n as u64 {
        return Err(Error::parquet(path, format!("{n} events counted, {written} read: the file changed while read")));
    }
    // SAFETY: each of the n slots was written exactly once: every event wrote one slot of its own
    // packet's part-range (checked against the counts in `Part::add`), and n events were written.
    unsafe { entries.set_len(n) };
    Ok(Scanned { ids, parts, start, entries })
}

/// A part of a scan: its row groups, and the packet indices they hold (`first..end`).
type Span = (Vec<usize>, (usize, usize));

/// The row groups to read (every one, or those whose ids overlap the window), split into
/// `threads` runs of about equal rows, each with its packet index range (dense ids: from the
/// statistics).
fn partition(layout: &Layout, ids: &Ids, windowed: bool, threads: usize) -> Vec<Span> {
    let (rows, ranges) = (&layout.rows, &layout.ranges);
    let chosen: Vec<usize> = (0..rows.len())
        .filter(|&g| match (ids, ranges, windowed) {
            (Ids::Dense { lo, hi }, Some(r), true) => r[g].0 <= r[g].1 && r[g].0 <= *hi && r[g].1 >= *lo,
            _ => true,
        })
        .collect();
    let total: i64 = chosen.iter().map(|&g| rows[g]).sum();
    // Split the row groups into `threads` runs of about equal rows.
    let mut parts: Vec<Vec<usize>> = vec![Vec::new(); threads];
    let mut acc = 0i64;
    for &g in &chosen {
        let at = if total == 0 { 0 } else { ((acc * threads as i64) / total) as usize };
        parts[at.min(threads - 1)].push(g);
        acc += rows[g];
    }
    parts
        .into_iter()
        .map(|groups| {
            let span = match (ids, ranges) {
                (Ids::Dense { lo, hi }, Some(r)) => groups
                    .iter()
                    .filter(|&&g| r[g].0 <= r[g].1)
                    .fold(None, |a: Option<(usize, usize)>, &g| {
                        let (x, y) = (r[g].0.max(*lo), r[g].1.min(*hi));
                        let (x, y) = ((x - lo) as usize, (y - lo) as usize);
                        Some(a.map_or((x, y), |(p, q)| (p.min(x), q.max(y))))
                    })
                    .map_or((0, 0), |(x, y)| (x, y + 1)),
                _ => (0, ids.len()),
            };
            (groups, span)
        })
        .collect()
}

/// A window holding more events than its `budget` ends after the packet that reaches it (at
/// least one packet): `ids`, the parts' spans, their counts and `before` (events per packet)
/// shortened to it.
fn cut_window(
    budget: u64,
    ids: &mut Ids,
    parts: &mut [Span],
    counted: &mut [(Vec<u32>, Vec<i64>)],
    before: &mut Vec<usize>,
) {
    let np = before.len();
    if before.iter().sum::<usize>() as u64 <= budget {
        return;
    }
    let mut sum = 0u64;
    let cut = before.iter().position(|&n| {
        sum += n as u64;
        sum > budget
    });
    let keep = cut.map_or(np, |c| c.max(1));
    if keep < np {
        let np = keep;
        before.truncate(np);
        if let Ids::Dense { lo, hi } = ids {
            *hi = *lo + np as u64 - 1;
        }
        for ((_, span), (c, t)) in parts.iter_mut().zip(counted.iter_mut()) {
            let end = span.1.min(np).max(span.0);
            c.truncate(end - span.0);
            t.truncate(end - span.0);
            *span = (span.0, end);
        }
    }
}

/// Where each packet's keys go (`start`, one past the last: the events in all), and each part's
/// first slot for each packet (after the earlier parts' events of that packet, so equal keys keep
/// file order). `before` holds the events per packet.
fn places(parts: &[Span], counts: &[Vec<u32>], mut before: Vec<usize>) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut start = Vec::<usize>::with_capacity(before.len() + 1);
    let mut cursors = Vec::with_capacity(parts.len());
    let mut at = 0usize;
    for b in before.iter_mut() {
        start.push(at);
        at += std::mem::replace(b, 0);
    }
    start.push(at);
    for ((_, (first, _)), c) in parts.iter().zip(counts) {
        let mut cur = Vec::with_capacity(c.len());
        for (i, &n) in c.iter().enumerate() {
            cur.push(start[first + i] + before[first + i]);
            before[first + i] += n as usize;
        }
        cursors.push(cur);
    }
    (start, cursors)
}

/// A part's slots: next slot per packet, events still expected per packet, the keys' array, and
/// each packet's first time (keys carry the time since it, so any absolute time fits).
struct Slots<'a> {
    cursor: Vec<usize>,
    left: Vec<u32>,
    out: &'a crate::mem::Scatter<i64>,
    base: &'a [i64],
    /// Events of packets outside the part's range belong to another window: skipped.
    windowed: bool,
}

/// The events per packet index in `span` of a part's row groups, and each packet's smallest time
/// (its `pkt` and `t_ns` columns only).
fn count_part(
    layout: &Layout,
    groups: &[usize],
    (first, end): (usize, usize),
    ids: &Ids,
    windowed: bool,
    stop: &crate::Stop,
) -> Result<(Vec<u32>, Vec<i64>), Error> {
    let mut counts = vec![0u32; end.saturating_sub(first)];
    let mut tmin = vec![i64::MAX; end.saturating_sub(first)];
    let (mut pkt, mut t): (Vec<u64>, Vec<i64>) = (Vec::new(), Vec::new());
    each_batch(layout, groups, &["pkt", "t_ns"], stop, |path, batch| {
        let col = |name: &str| batch.column(batch.schema().index_of(name).expect("projected")).clone();
        pkt.clear();
        t.clear();
        ints(&col("pkt"), Ctx { path, column: "pkt" }, &mut pkt, 0, |v| v as u64)?;
        ints(&col("t_ns"), Ctx { path, column: "t_ns" }, &mut t, 0, |v| v)?;
        for (&k, &t) in pkt.iter().zip(&t) {
            let at = ids.index(k);
            if windowed && at.is_none() {
                continue; // another window's packet
            }
            let Some(i) = at.and_then(|i| i.checked_sub(first)).filter(|&i| i < counts.len()) else {
                return Err(Ctx { path, column: "pkt" }.err(format!("{k} outside its row group's statistics")));
            };
            counts[i] += 1;
            tmin[i] = tmin[i].min(t);
        }
        Ok(())
    })?;
    Ok((counts, tmin))
}

/// Numbers packet ids in first-seen order (ids that are not nearly dense, or no statistics).
fn number_ids(files: &[PathBuf]) -> Result<Ids, Error> {
    let (mut map, mut ids) = (HashMap::new(), Vec::new());
    let mut buf: Vec<u64> = Vec::new();
    for path in files {
        let b = open(path)?;
        let mask = projection(&b, path, &["pkt"])?;
        let reader = b.with_projection(mask).with_batch_size(1 << 16).build().map_err(|e| Error::parquet(path, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| Error::parquet(path, e))?;
            buf.clear();
            ints(batch.column(0), Ctx { path, column: "pkt" }, &mut buf, 0, |v| v as u64)?;
            for &k in &buf {
                map.entry(k).or_insert_with(|| {
                    ids.push(k);
                    (ids.len() - 1) as u32
                });
            }
        }
    }
    Ok(Ids::Map { map, ids })
}

/// The packet ids the run marks `in_flight` (control rows of that kind; the id is in `sn`).
pub fn in_flight(table: &Path) -> Result<Vec<u64>, Error> {
    let mut out = Vec::new();
    for path in &table_files(table)? {
        let path = path.as_path();
        let b = open(path)?;
        let mask = projection(&b, path, &["kind", "sn"])?;
        let reader = b.with_projection(mask).build().map_err(|e| Error::parquet(path, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| Error::parquet(path, e))?;
            let mut kinds = Vec::new();
            let mut is_in_flight = false;
            enums(batch.column(0), Ctx { path, column: "kind" }, &mut kinds, |n| {
                is_in_flight |= n == "in_flight";
                Some((n == "in_flight") as u8)
            })?;
            if !is_in_flight {
                continue;
            }
            let mut sn = Vec::new();
            ints(batch.column(1), Ctx { path, column: "sn" }, &mut sn, -1i64, |v| v)?;
            out.extend(kinds.iter().zip(&sn).filter(|(&k, &s)| k == 1 && s >= 0).map(|(_, &s)| s as u64));
        }
    }
    Ok(out)
}
