//! The run directory writer: `run.json` plus `events/{packet,slot,control}.parquet`.
//!
//! Layout and guarantees (the contract of `docs/schema.md`):
//! - [`RunWriter::create`] writes `run.json` with `"complete": false` before any event.
//! - Packet events are buffered as rows on the producer's thread (one copy per event) and slot
//!   and control events in columnar form; [`MESSAGE_ROWS`] packet rows or [`BATCH_ROWS`] others
//!   at a time go over a bounded channel to a writer thread that gathers the packet rows into
//!   batches of [`PACKET_BATCH_ROWS`] and encodes them (zstd, dictionary-encoded
//!   enums, row groups of [`ROW_GROUP_ROWS`]; the packet table and enum columns by
//!   [`crate::chunk`], page by page as pages fill). Memory is bounded
//!   by the channel depth times the batch size plus one row group per table, whatever the run's
//!   length.
//! - Tables are written as `*.parquet.partial` and renamed only by [`RunWriter::finish`], which then
//!   replaces `run.json` (write to a temporary file, then rename) with `"complete": true`. A run that
//!   crashes therefore never has a table under its final name nor a `complete` marker.
//! - A checkpointed run ([`RunWriter::create_checkpointed`]: the emulator, the live probe) writes
//!   each table as parts, `events/TABLE.parts/NNNNNN.parquet`: [`RunWriter::checkpoint`] closes the
//!   parts being written (each a whole Parquet file with its footer) and records the rows so far in
//!   `run.json`. A producer that is killed (`kill -9`, power loss) so loses only what came after
//!   its last checkpoint; [`recover`] makes such a run readable. `finish` splices the parts' column
//!   chunks into the one file per table (bytes copied, nothing re-encoded), so a finished run looks
//!   the same however it was written.
//!
//! The files: `columns.rs` (each table's schema and its columns as they fill), `page.rs` (how
//! columns are encoded), `file.rs` (one table's Parquet file, row group by row group),
//! `checkpoint.rs` (parts, splicing them, `recover`), `thread.rs` (the writer thread), `run.rs`
//! ([`RunWriter`] and `run.json`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::types::UInt8Type;
use arrow_array::Array;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use serde_json::{json, Value};

use crate::chunk::{Column, Kind, Zstd};
use crate::schema::*;
use crate::tap::SharedTap;

mod checkpoint;
mod columns;
mod file;
mod page;
mod run;
mod thread;

pub use checkpoint::recover;
pub use columns::{control_schema, packet_schema, slot_schema, PACKET_BATCH_ROWS};
pub use page::properties;
pub use run::{write_json_atomically, CountingRun, RunOutput, RunWriter};

// The parts see each other's items through this module (`use super::*` in each).
use {checkpoint::*, columns::*, file::*, page::*, thread::*};

/// Rows buffered per table before a batch goes to the writer thread.
pub const BATCH_ROWS: usize = 1 << 16;
/// Rows per Parquet row group.
pub const ROW_GROUP_ROWS: usize = 1 << 20;
/// Rows per part file of a large table (64 row groups, ~130 MB of packet events): a table that
/// grows beyond it is written as a dataset, `events/TABLE.parquet/part-NNNNNN.parquet`, each part
/// a span of the run's time (rows are written in about time order). `SCOUT_EVENTS_PART_ROWS`
/// overrides it (rounded up to whole row groups).
pub const PART_ROWS: u64 = 1 << 26;

/// [`PART_ROWS`], or `SCOUT_EVENTS_PART_ROWS` rounded up to whole row groups.
pub fn part_rows() -> u64 {
    let g = ROW_GROUP_ROWS as u64;
    std::env::var("SCOUT_EVENTS_PART_ROWS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(PART_ROWS, |n| n.max(1).div_ceil(g) * g)
}

/// Packet rows per message from the producer to the writer thread, which gathers them into
/// batches of [`PACKET_BATCH_ROWS`]. Small, so that the producer fills the same few vectors over
/// and over while they are in its cache: a vector that is new memory costs a page fault per page
/// (a quarter of a faded simulation's time when the messages were whole batches, 6 MB each).
pub const MESSAGE_ROWS: usize = 1 << 13;
/// Messages in flight between the producer and the writer thread (as many packet rows as eight
/// whole batches: what a real-time producer can hand over while the writer is busy).
const CHANNEL_DEPTH: usize = 8 * PACKET_BATCH_ROWS / MESSAGE_ROWS;
/// With a tap, the longest a row waits in the producer's buffer (the live view's freshness).
pub const TAP_FLUSH: std::time::Duration = std::time::Duration::from_millis(100);
/// With a tap, rows added between two readings of the clock (a producer's cost for the tap: one
/// clock reading per this many rows; a producer writing fewer rows than this per `TAP_FLUSH` is
/// shown at its checkpoints or a little later).
pub const TAP_CHECK_ROWS: u32 = 8;

/// Errors of the writer, each naming the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: Parquet encoding failed: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: the run directory already holds a run (run.json exists); choose another directory or remove it")]
    Exists { path: PathBuf },
    #[error("event writer thread stopped: {0}")]
    Thread(String),
    #[error("{path}: {message}")]
    Recover { path: PathBuf, message: String },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io { path: path.to_path_buf(), source }
}

/// The three tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Packet,
    Slot,
    Control,
}

impl Table {
    pub const ALL: [Table; 3] = [Table::Packet, Table::Slot, Table::Control];

    /// The table's name in `run.json` counts and in analysis SQL.
    pub fn name(self) -> &'static str {
        match self {
            Table::Packet => "packet_events",
            Table::Slot => "slot_events",
            Table::Control => "control_events",
        }
    }

    /// The table's Arrow schema.
    pub fn schema(self) -> SchemaRef {
        match self {
            Table::Packet => packet_schema(),
            Table::Slot => slot_schema(),
            Table::Control => control_schema(),
        }
    }

    /// The file name under `events/`.
    /// The directory of a checkpointed run's parts of this table (`packet.parts`, ...).
    pub fn parts_name(self) -> String {
        format!("{}.parts", self.file_name().trim_end_matches(".parquet"))
    }

    /// Where a large table's part files are gathered while written (renamed to [`Self::file_name`],
    /// a directory then, when the run finishes).
    pub fn dataset_partial_name(self) -> String {
        format!("{}.dataset.partial", self.file_name().trim_end_matches(".parquet"))
    }

    pub fn file_name(self) -> &'static str {
        match self {
            Table::Packet => "packet.parquet",
            Table::Slot => "slot.parquet",
            Table::Control => "control.parquet",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn pe(i: i64) -> PacketEvent {
        PacketEvent {
            ue: 1,
            rnti: Some(0x4601),
            drb: Some(1),
            qfi: Some(9),
            sn: (i % 2 == 0).then_some(i as u32),
            bytes: 1500,
            queue: Some(Queue::RlcSdu),
            queue_bytes: Some(3000),
            queue_pkts: Some(2),
            ..PacketEvent::new(i, (Node::GnbDu, Layer::Rlc, Point::Enqueue), Dir::Dl, i as u64)
        }
    }

    /// A value of any integer, boolean or dictionary column, as the reader returns it.
    fn cell(col: &ArrayRef, i: usize) -> Option<String> {
        use arrow_array::cast::AsArray;
        use arrow_array::types::*;
        if col.is_null(i) {
            return None;
        }
        Some(match col.data_type() {
            DataType::Int64 => col.as_primitive::<Int64Type>().value(i).to_string(),
            DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i).to_string(),
            DataType::UInt32 => col.as_primitive::<UInt32Type>().value(i).to_string(),
            DataType::UInt16 => col.as_primitive::<UInt16Type>().value(i).to_string(),
            DataType::UInt8 => col.as_primitive::<UInt8Type>().value(i).to_string(),
            DataType::Boolean => col.as_boolean().value(i).to_string(),
            DataType::Dictionary(..) => {
                let d = col.as_dictionary::<UInt8Type>();
                d.values().as_string::<i32>().value(d.keys().value(i) as usize).to_string()
            }
            other => panic!("unexpected type {other}"),
        })
    }

    /// A tap sees every row once, in the order written, and a slow producer's rows within about
    /// `TAP_FLUSH` (not only when a batch fills).
    #[test]
    fn a_tap_sees_every_row_once_and_a_slow_producers_promptly() {
        #[derive(Debug, Default)]
        struct Seen(std::sync::Mutex<Vec<u64>>);
        impl crate::tap::Tap for Seen {
            fn packets(&self, rows: &[PacketEvent]) {
                self.0.lock().unwrap().extend(rows.iter().map(|e| e.pkt));
            }
            fn slots(&self, _: &[SlotEvent]) {}
            fn controls(&self, _: &[ControlEvent]) {}
        }
        let dir = std::env::temp_dir().join(format!("scout-writer-tap-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let seen = Arc::new(Seen::default());
        let mut w = RunWriter::create(&dir, json!({}), &[]).unwrap();
        w.set_tap(Arc::clone(&seen) as SharedTap);
        // A slow producer: 40 rows over ~0.4 s, far from a full batch.
        for i in 0..40 {
            w.packet(pe(i));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let t = std::time::Instant::now();
        while seen.0.lock().unwrap().len() < 24 {
            assert!(t.elapsed() < std::time::Duration::from_secs(2), "rows did not reach the tap before the end");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for i in 40..(PACKET_BATCH_ROWS as i64 + 100) {
            w.packet(pe(i));
        }
        w.finish(json!({})).unwrap();
        let seen = seen.0.lock().unwrap();
        assert_eq!(*seen, (0..PACKET_BATCH_ROWS as u64 + 100).collect::<Vec<_>>());
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Every column of every row comes back as written: irregular times (large jumps, going
    /// backwards, negative), ids near 2^63, every enum value, nulls in every nullable column
    /// (including whole pages of them), several batches and data pages.
    #[test]
    fn packet_columns_round_trip_exactly() {
        let dir = std::env::temp_dir().join(format!("scout-writer-roundtrip-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let slices = vec!["embb".to_string(), "urllc".to_string()];
        let mut w = RunWriter::create(&dir, json!({}), &slices).unwrap();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let n = 150_000usize;
        let mut events = Vec::with_capacity(n);
        let mut t = -5_000i64;
        for i in 0..n {
            let r = next();
            t += match r % 5 {
                0 => 0,
                1 => (r >> 8) as i64 % 1_000,
                2 => -((r >> 8) as i64 % 50_000),
                3 => (r >> 8) as i64 % (1 << 40),
                _ => 1,
            };
            let some = |bit: u64| (r >> bit) & 1 == 1 && !(60_000..200_000).contains(&i);
            let e = PacketEvent {
                t_ns: t,
                node: Node::ALL[(r >> 3) as usize % Node::ALL.len()],
                layer: Layer::ALL[(r >> 7) as usize % Layer::ALL.len()],
                point: Point::ALL[(r >> 11) as usize % Point::ALL.len()],
                dir: Dir::ALL[(r >> 15) as usize % Dir::ALL.len()],
                // A few values per page, a different few on each page: the column's dictionary
                // grows page by page until it is full, then pages fall back to PLAIN.
                ue: (i / 4096) as u32 * 100 + (r >> 17) as u32 % 40,
                rnti: some(20).then_some((r >> 21) as u16),
                drb: some(22).then_some((r >> 23) as u8),
                qfi: some(24).then_some(9),
                slice: (r >> 25) as u8 % 2,
                flow: (r >> 26) as u32,
                pkt: if i % 1000 == 0 { (1 << 62) + i as u64 } else { i as u64 / 7 },
                sn: some(27).then_some((r >> 28) as u32),
                seg_offset: some(29).then_some((r >> 30) as u32 % 9000),
                seg_last: some(31).then_some((r >> 32) & 1 == 1),
                // Constant on some stretches (dictionary pages), anything on others (PLAIN).
                bytes: if (i / 5000) % 2 == 0 { 1400 } else { (r >> 33) as u32 % 9000 },
                queue: some(34).then_some(Queue::ALL[(r >> 35) as usize % Queue::ALL.len()]),
                queue_bytes: some(36).then_some(r >> 3),
                queue_pkts: some(37).then_some((r >> 38) as u32),
                retx: (r >> 40) as u8 % 5,
                reason: some(41).then_some(Reason::ALL[(r >> 42) as usize % Reason::ALL.len()]),
                ecn: (r >> 44) as u8 % 4,
            };
            events.push(e.clone());
            w.packet(e);
        }
        w.finish(json!({})).unwrap();
        let f = fs::File::open(dir.join("events/packet.parquet")).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap();
        let mut row = 0;
        for b in reader {
            let b = b.unwrap();
            assert_eq!(b.schema().fields().len(), 22);
            for i in 0..b.num_rows() {
                let e = &events[row];
                let got: Vec<Option<String>> = b.columns().iter().map(|c| cell(c, i)).collect();
                let want = vec![
                    Some(e.t_ns.to_string()),
                    Some(e.node.as_str().to_string()),
                    Some(e.layer.as_str().to_string()),
                    Some(e.point.as_str().to_string()),
                    Some(e.dir.as_str().to_string()),
                    Some(e.ue.to_string()),
                    e.rnti.map(|v| v.to_string()),
                    e.drb.map(|v| v.to_string()),
                    e.qfi.map(|v| v.to_string()),
                    Some(slices[e.slice as usize].clone()),
                    Some(e.flow.to_string()),
                    Some(e.pkt.to_string()),
                    e.sn.map(|v| v.to_string()),
                    e.seg_offset.map(|v| v.to_string()),
                    e.seg_last.map(|v| v.to_string()),
                    Some(e.bytes.to_string()),
                    e.queue.map(|v| v.as_str().to_string()),
                    e.queue_bytes.map(|v| v.to_string()),
                    e.queue_pkts.map(|v| v.to_string()),
                    Some(e.retx.to_string()),
                    e.reason.map(|v| v.as_str().to_string()),
                    Some(e.ecn.to_string()),
                ];
                assert_eq!(got, want, "row {row}");
                row += 1;
            }
        }
        assert_eq!(row, n);
        // The numeric columns above mix dictionary-encoded and PLAIN pages in one chunk.
        let f = fs::File::open(dir.join("events/packet.parquet")).unwrap();
        let reader = parquet::file::serialized_reader::SerializedFileReader::new(f).unwrap();
        use parquet::file::reader::FileReader;
        for (col, name) in [(5, "ue"), (15, "bytes")] {
            let mut seen = Vec::new();
            for page in reader.get_row_group(0).unwrap().get_column_page_reader(col).unwrap() {
                let page = page.unwrap();
                if !matches!(page, parquet::column::page::Page::DictionaryPage { .. }) {
                    seen.push(page.encoding());
                }
            }
            assert!(seen.contains(&Encoding::RLE_DICTIONARY) && seen.contains(&Encoding::PLAIN), "{name}: {seen:?}");
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writes_reads_back_and_marks_complete() {
        let dir = std::env::temp_dir().join(format!("scout-writer-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut w = RunWriter::create(&dir, json!({"source": "test"}), &["default".into()]).unwrap();
        let meta: Value = serde_json::from_slice(&fs::read(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(meta["complete"], json!(false));
        let n = BATCH_ROWS as i64 * 2 + 17;
        for i in 0..n {
            w.packet(pe(i));
        }
        assert!(!dir.join("events/packet.parquet").exists(), "final name only after finish");
        let meta = w.finish(json!({"counts": {"drops": {}}})).unwrap();
        assert_eq!(meta["complete"], json!(true));
        assert_eq!(meta["counts"]["events"]["packet_events"], json!(n));
        let f = fs::File::open(dir.join("events/packet.parquet")).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap();
        let mut rows = 0;
        let mut nulls = 0;
        for b in reader {
            let b = b.unwrap();
            rows += b.num_rows();
            nulls += b.column_by_name("sn").unwrap().null_count();
            assert_eq!(b.schema().field_with_name("layer").unwrap().data_type(), &dict_type());
        }
        assert_eq!(rows as i64, n);
        assert_eq!(nulls as i64, n / 2);
        assert!(RunWriter::create(&dir, json!({}), &[]).is_err(), "existing run is not overwritten");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unfinished_run_leaves_nothing_behind() {
        let base = std::env::temp_dir().join(format!("scout-writer-unfinished-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        // A directory the writer made is removed; one that existed (and a user's file in it) stays.
        let made = base.join("made");
        let given = base.join("given");
        fs::create_dir_all(&given).unwrap();
        fs::write(given.join("notes.txt"), "mine").unwrap();
        for dir in [&made, &given] {
            let mut w = RunWriter::create(dir, json!({"source": "test"}), &["default".into()]).unwrap();
            for i in 0..(PACKET_BATCH_ROWS as i64 * 3) {
                w.packet(pe(i));
            }
            w.control(ControlEvent {
                t_ns: 0,
                node: Node::Ue,
                layer: Layer::App,
                kind: ControlKind::Config,
                dir: None,
                ue: None,
                drb: None,
                sn: None,
                value: None,
                detail: None,
            });
            drop(w);
        }
        assert!(!made.exists(), "the writer's own directory is gone");
        let left: Vec<_> = fs::read_dir(&given).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("notes.txt")]);
        fs::remove_dir_all(&base).unwrap();
    }

    fn read_json(p: &Path) -> Value {
        serde_json::from_slice(&fs::read(p).unwrap()).unwrap()
    }

    fn parquet_rows(p: &Path) -> usize {
        let f = fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap().map(|b| b.unwrap().num_rows()).sum()
    }

    fn copy_dir(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        for e in fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &to.join(e.file_name()));
            } else {
                fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }

    #[test]
    fn a_large_table_is_spliced_into_a_dataset_of_time_ordered_parts() {
        let base = std::env::temp_dir().join(format!("scout-writer-dataset-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let dir = base.join("run");
        let mut w = RunWriter::create_checkpointed(&dir, json!({"source": "test"}), &["default".into()]).unwrap();
        for k in 0..3i64 {
            for i in 0..100 {
                w.packet(pe(k * 100 + i));
            }
            w.checkpoint(json!({}));
            let t0 = std::time::Instant::now();
            while read_json(&dir.join("run.json"))["checkpoint"]["parts"] != json!(k + 1) {
                assert!(t0.elapsed().as_secs() < 10, "no checkpoint written");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        // Three parts of one row group each: a limit of 150 rows makes files of 200 and 100 rows
        // (a file is closed at the first row group boundary at or after the limit).
        for (limit, want) in [(150u64, vec![200usize, 100]), (1, vec![100, 100, 100]), (300, vec![300])] {
            let copy = base.join(format!("limit-{limit}"));
            copy_dir(&dir, &copy);
            let events = copy.join("events");
            assert_eq!(splice_parts(&events, Table::Packet, limit).unwrap(), 300);
            let fin = events.join("packet.parquet");
            let files: Vec<PathBuf> = if fin.is_dir() {
                let mut f: Vec<PathBuf> = fs::read_dir(&fin).unwrap().map(|e| e.unwrap().path()).collect();
                f.sort();
                f
            } else {
                vec![fin.clone()]
            };
            assert_eq!(files.iter().map(|f| parquet_rows(f)).collect::<Vec<_>>(), want, "limit {limit}");
            if want.len() > 1 {
                assert_eq!(files[0].file_name().unwrap(), "part-000000.parquet");
                assert!(!events.join(Table::Packet.dataset_partial_name()).exists());
            }
            // In time order: each part's first time follows the previous part's last.
            let mut last = i64::MIN;
            for f in &files {
                let r = SerializedFileReader::new(fs::File::open(f).unwrap()).unwrap();
                let rows: Vec<i64> = r
                    .get_row_iter(None)
                    .unwrap()
                    .map(|row| {
                        use parquet::record::RowAccessor;
                        row.unwrap().get_long(0).unwrap()
                    })
                    .collect();
                assert!(rows[0] > last && rows.windows(2).all(|w| w[0] < w[1]));
                last = *rows.last().unwrap();
            }
        }
        drop(w);
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_writer_thread_hands_every_tables_vectors_back_to_be_filled_again() {
        let dir = std::env::temp_dir().join(format!("scout-writer-recycle-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut w = RunWriter::create_checkpointed(&dir, json!({"source": "test"}), &["default".into()]).unwrap();
        let slot = SlotEvent { prbs_total: Some(51), ..SlotEvent::cell(1, 0, 0, 0, Dir::Dl) };
        let control = |t| ControlEvent {
            t_ns: t,
            node: Node::Ue,
            layer: Layer::App,
            kind: ControlKind::AppRtt,
            dir: None,
            ue: Some(0),
            drb: None,
            sn: None,
            value: Some(1.0),
            detail: None,
        };
        // A producer's buffers, each filled once and handed over at a checkpoint.
        let mut sent = Vec::new();
        for round in 0..4 {
            for i in 0..1000 {
                w.packet(pe(i));
                w.slot(SlotEvent { t_ns: i, ..slot.clone() });
                w.control(control(i));
            }
            sent.push([w.packet.as_ptr() as usize, w.slot.as_ptr() as usize, w.control.as_ptr() as usize]);
            w.checkpoint(json!({"t_ns": round}));
            // Until the writer thread has taken the batches and handed them back.
            let t0 = std::time::Instant::now();
            while w.queued.load(Ordering::Relaxed) > 0 {
                assert!(t0.elapsed().as_secs() < 10, "the writer thread took nothing");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        // From the third round on, every table fills a vector it filled before.
        for [p, s, c] in &sent[2..] {
            assert!(sent[..2].iter().any(|b| b[0] == *p), "packet rows in a new vector");
            assert!(sent[..2].iter().any(|b| b[1] == *s), "slot rows in a new vector");
            assert!(sent[..2].iter().any(|b| b[2] == *c), "control rows in a new vector");
        }
        let meta = w.finish(json!({})).unwrap();
        assert_eq!(meta["counts"]["events"]["control_events"], json!(4000));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_checkpointed_run_killed_after_a_checkpoint_recovers_what_it_had() {
        let base = std::env::temp_dir().join(format!("scout-writer-checkpoint-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let dir = base.join("run");
        let mut w = RunWriter::create_checkpointed(&dir, json!({"source": "test"}), &["default".into()]).unwrap();
        let first = PACKET_BATCH_ROWS as i64 + 5;
        for i in 0..first {
            w.packet(pe(i));
        }
        w.slot(SlotEvent {
            prbs_used: Some(0),
            prbs_total: Some(51),
            nof_ues_scheduled: Some(0),
            ..SlotEvent::cell(1, 0, 0, 0, Dir::Dl)
        });
        w.checkpoint(json!({"t_ns": 1}));
        // The checkpoint lands on the writer thread; wait for its run.json.
        let run_json = dir.join("run.json");
        let t0 = std::time::Instant::now();
        while read_json(&run_json)["checkpoint"]["parts"] != json!(1) {
            assert!(t0.elapsed().as_secs() < 10, "no checkpoint written");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let meta = read_json(&run_json);
        assert_eq!(meta["complete"], json!(false));
        assert_eq!(meta["checkpoint"]["t_ns"], json!(1));
        assert_eq!(meta["checkpoint"]["rows"]["packet_events"], json!(first));
        assert_eq!(meta["checkpoint"]["rows"]["control_events"], json!(0));
        // The closed part is a whole Parquet file while the producer goes on.
        assert_eq!(parquet_rows(&dir.join("events/packet.parts/000000.parquet")), first as usize);
        for i in first..first + 1000 {
            w.packet(pe(i));
        }
        // What a `kill -9` now would leave: the directory as it is.
        let killed = base.join("killed");
        copy_dir(&dir, &killed);
        fs::write(killed.join("events/packet.parts/000001.parquet.partial"), b"PAR1 half-written").unwrap();
        let rec = recover(&killed).unwrap();
        assert_eq!(rec["complete"], json!(false));
        assert_eq!(rec["counts"]["events"]["packet_events"], json!(first));
        assert_eq!(rec["recovered"]["parts_discarded"], json!(1));
        assert_eq!(parquet_rows(&killed.join("events/packet.parquet")), first as usize);
        assert_eq!(parquet_rows(&killed.join("events/slot.parquet")), 1);
        assert_eq!(parquet_rows(&killed.join("events/control.parquet")), 0);
        assert!(!killed.join("events/packet.parts").exists());
        assert!(recover(&killed).unwrap_err().to_string().contains("already recovered"));
        // The producer that was not killed finishes into the ordinary layout.
        let meta = w.finish(json!({})).unwrap();
        assert_eq!(meta["complete"], json!(true));
        assert!(meta.get("checkpoint").is_none());
        assert_eq!(parquet_rows(&dir.join("events/packet.parquet")), first as usize + 1000);
        assert!(!dir.join("events/packet.parts").exists());
        assert!(recover(&dir).unwrap_err().to_string().contains("complete"));
        // A run written without checkpoints cannot be recovered.
        let plain = base.join("plain");
        let mut w = RunWriter::create(&plain, json!({"source": "test"}), &[]).unwrap();
        w.packet(pe(0));
        w.checkpoint(json!({}));
        let killed = base.join("plain-killed");
        copy_dir(&plain, &killed);
        drop(w);
        assert!(recover(&killed).unwrap_err().to_string().contains("no checkpoints"));
        fs::remove_dir_all(&base).unwrap();
    }
}
