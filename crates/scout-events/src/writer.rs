//! The run directory writer: `run.json` plus `events/{packet,slot,control}.parquet`.
//!
//! Layout and guarantees (the contract of `docs/schema.md`):
//! - [`RunWriter::create`] writes `run.json` with `"complete": false` before any event.
//! - Packet events are buffered as rows on the producer's thread (one copy per event) and slot
//!   and control events in columnar form; [`PACKET_BATCH_ROWS`] or [`BATCH_ROWS`] rows at a time
//!   go over a bounded channel to a writer thread that encodes them (zstd, dictionary-encoded
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

/// Batches in flight between the producer and the writer thread.
const CHANNEL_DEPTH: usize = 8;
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

fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8))
}

/// The Arrow schema of `packet_events`.
pub fn packet_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        Field::new("t_ns", Int64, false),
        Field::new("node", dict_type(), false),
        Field::new("layer", dict_type(), false),
        Field::new("point", dict_type(), false),
        Field::new("dir", dict_type(), false),
        Field::new("ue", UInt32, false),
        Field::new("rnti", UInt16, true),
        Field::new("drb", UInt8, true),
        Field::new("qfi", UInt8, true),
        Field::new("slice", dict_type(), false),
        Field::new("flow", UInt32, false),
        Field::new("pkt", UInt64, false),
        Field::new("sn", UInt32, true),
        Field::new("seg_offset", UInt32, true),
        Field::new("seg_last", Boolean, true),
        Field::new("bytes", UInt32, false),
        Field::new("queue", dict_type(), true),
        Field::new("queue_bytes", UInt64, true),
        Field::new("queue_pkts", UInt32, true),
        Field::new("retx", UInt8, false),
        Field::new("reason", dict_type(), true),
        Field::new("ecn", UInt8, false),
    ]))
}

/// The Arrow schema of `slot_events`.
pub fn slot_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        Field::new("t_ns", Int64, false),
        Field::new("slot", UInt64, false),
        Field::new("sfn", UInt16, false),
        Field::new("slot_in_frame", UInt8, false),
        Field::new("dir", dict_type(), false),
        Field::new("ue", UInt32, true),
        Field::new("rnti", UInt16, true),
        Field::new("prbs", UInt16, false),
        Field::new("mcs", UInt8, true),
        Field::new("tbs", UInt32, true),
        Field::new("layers", UInt8, true),
        Field::new("harq_id", UInt8, true),
        Field::new("rv", UInt8, true),
        Field::new("ndi", Boolean, true),
        Field::new("retx_index", UInt8, true),
        Field::new("ack", Boolean, true),
        Field::new("bsr_bytes", UInt64, true),
        Field::new("cqi", UInt8, true),
        Field::new("ri", UInt8, true),
        Field::new("sinr_db", Float32, true),
        Field::new("prbs_used", UInt16, true),
        Field::new("prbs_total", UInt16, true),
        Field::new("nof_ues_scheduled", UInt16, true),
    ]))
}

/// The Arrow schema of `control_events`.
pub fn control_schema() -> SchemaRef {
    use DataType::*;
    Arc::new(Schema::new(vec![
        Field::new("t_ns", Int64, false),
        Field::new("node", dict_type(), false),
        Field::new("layer", dict_type(), false),
        Field::new("kind", dict_type(), false),
        Field::new("dir", dict_type(), true),
        Field::new("ue", UInt32, true),
        Field::new("drb", UInt8, true),
        Field::new("sn", Int64, true),
        Field::new("value", Float64, true),
        Field::new("detail", Utf8, true),
    ]))
}

/// A nullable column being filled: values plus validity.
#[derive(Default)]
struct Opt<T> {
    values: Vec<T>,
    valid: Vec<bool>,
    nulls: usize,
}

impl<T: Default + Copy> Opt<T> {
    #[inline]
    fn push(&mut self, v: Option<T>) {
        match v {
            Some(v) => {
                self.values.push(v);
                self.valid.push(true);
            }
            None => {
                self.values.push(T::default());
                self.valid.push(false);
                self.nulls += 1;
            }
        }
    }

    fn take(&mut self) -> (Vec<T>, Option<arrow_buffer::NullBuffer>) {
        let values = take_full(&mut self.values);
        let valid = take_full(&mut self.valid);
        let nulls = std::mem::replace(&mut self.nulls, 0);
        let buf = (nulls > 0).then(|| arrow_buffer::NullBuffer::from(valid));
        (values, buf)
    }
}

/// Takes a column's values, leaving an empty vector with room for a whole batch (so the next batch
/// never reallocates while it fills).
fn take_full<T>(v: &mut Vec<T>) -> Vec<T> {
    std::mem::replace(v, Vec::with_capacity(BATCH_ROWS))
}

/// Packet events per batch handed to the writer thread.
pub const PACKET_BATCH_ROWS: usize = 1 << 16;
const PB: usize = PACKET_BATCH_ROWS;

/// A fixed-size column of a packet batch: indexing it with `i & (PB - 1)` needs no bounds check.
type Fixed<T> = Box<[T; PB]>;

fn fixed<T: Copy + Default>() -> Fixed<T> {
    vec![T::default(); PB].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("PB elements"))
}

/// A nullable column of a packet batch: one definition level per row, the present values packed.
struct Nullable<T> {
    defs: Fixed<u8>,
    values: Fixed<T>,
    present: usize,
}

impl<T: Copy + Default> Nullable<T> {
    fn new() -> Self {
        Nullable { defs: fixed(), values: fixed(), present: 0 }
    }

    /// Row `i`'s value, without a branch: an absent value is written and then overwritten.
    #[inline(always)]
    fn put(&mut self, i: usize, v: Option<T>) {
        self.defs[i & (PB - 1)] = v.is_some() as u8;
        self.values[self.present & (PB - 1)] = v.unwrap_or_default();
        self.present += v.is_some() as usize;
    }

    fn parts(&self, rows: usize) -> (&[u8], &[T]) {
        (&self.defs[..rows], &self.values[..self.present])
    }
}

/// One batch of packet events in the columns of `packet_schema`: the writer thread turns each
/// batch of rows it receives into columns here in one pass per row (a handful of stores per
/// event into preallocated arrays, no capacity checks), then appends each column to its chunk.
/// Integer columns have the width of their Parquet type (`INT32` or `INT64`), enum columns hold
/// their keys.
struct PacketBatch {
    rows: usize,
    t_ns: Fixed<i64>,
    node: Fixed<u8>,
    layer: Fixed<u8>,
    point: Fixed<u8>,
    dir: Fixed<u8>,
    ue: Fixed<u32>,
    rnti: Nullable<u32>,
    drb: Nullable<u32>,
    qfi: Nullable<u32>,
    slice: Fixed<u8>,
    flow: Fixed<u32>,
    pkt: Fixed<i64>,
    sn: Nullable<u32>,
    seg_offset: Nullable<u32>,
    seg_last: Nullable<u8>,
    bytes: Fixed<u32>,
    queue: Nullable<u8>,
    queue_bytes: Nullable<u64>,
    queue_pkts: Nullable<u32>,
    retx: Fixed<u32>,
    reason: Nullable<u8>,
    ecn: Fixed<u32>,
}

impl PacketBatch {
    fn new() -> Box<Self> {
        Box::new(PacketBatch {
            rows: 0,
            t_ns: fixed(),
            node: fixed(),
            layer: fixed(),
            point: fixed(),
            dir: fixed(),
            ue: fixed(),
            rnti: Nullable::new(),
            drb: Nullable::new(),
            qfi: Nullable::new(),
            slice: fixed(),
            flow: fixed(),
            pkt: fixed(),
            sn: Nullable::new(),
            seg_offset: Nullable::new(),
            seg_last: Nullable::new(),
            bytes: fixed(),
            queue: Nullable::new(),
            queue_bytes: Nullable::new(),
            queue_pkts: Nullable::new(),
            retx: fixed(),
            reason: Nullable::new(),
            ecn: fixed(),
        })
    }

    /// Appends a row (at most [`PACKET_BATCH_ROWS`] between clears).
    #[inline(always)]
    fn push(&mut self, e: &PacketEvent) {
        let i = self.rows & (PB - 1);
        self.t_ns[i] = e.t_ns;
        self.node[i] = e.node as u8;
        self.layer[i] = e.layer as u8;
        self.point[i] = e.point as u8;
        self.dir[i] = e.dir as u8;
        self.ue[i] = e.ue;
        self.rnti.put(i, e.rnti.map(u32::from));
        self.drb.put(i, e.drb.map(u32::from));
        self.qfi.put(i, e.qfi.map(u32::from));
        self.slice[i] = e.slice;
        self.flow[i] = e.flow;
        self.pkt[i] = e.pkt as i64;
        self.sn.put(i, e.sn);
        self.seg_offset.put(i, e.seg_offset);
        self.seg_last.put(i, e.seg_last.map(u8::from));
        self.bytes[i] = e.bytes;
        self.queue.put(i, e.queue.map(|q| q as u8));
        self.queue_bytes.put(i, e.queue_bytes);
        self.queue_pkts.put(i, e.queue_pkts);
        self.retx[i] = u32::from(e.retx);
        self.reason.put(i, e.reason.map(|r| r as u8));
        self.ecn[i] = u32::from(e.ecn);
        self.rows += 1;
    }

    fn clear(&mut self) {
        self.rows = 0;
        for p in [
            &mut self.rnti.present,
            &mut self.drb.present,
            &mut self.qfi.present,
            &mut self.sn.present,
            &mut self.seg_offset.present,
            &mut self.seg_last.present,
            &mut self.queue.present,
            &mut self.queue_bytes.present,
            &mut self.queue_pkts.present,
            &mut self.reason.present,
        ] {
            *p = 0;
        }
    }
}

macro_rules! opt_array {
    ($opt:expr, $arr:ty) => {{
        let (v, n) = $opt.take();
        Arc::new(<$arr>::new(v.into(), n)) as ArrayRef
    }};
}

fn dict(keys: Vec<u8>, nulls: Option<arrow_buffer::NullBuffer>, names: &[&str]) -> ArrayRef {
    let keys = UInt8Array::new(keys.into(), nulls);
    let values = Arc::new(StringArray::from_iter_values(names.iter()));
    // Keys are enum discriminants, always < names.len(): construction cannot fail.
    Arc::new(DictionaryArray::<UInt8Type>::try_new(keys, values).expect("enum key in range"))
}

#[derive(Default)]
struct SlotCols {
    t_ns: Vec<i64>,
    slot: Vec<u64>,
    sfn: Vec<u16>,
    slot_in_frame: Vec<u8>,
    dir: Vec<u8>,
    ue: Opt<u32>,
    rnti: Opt<u16>,
    prbs: Vec<u16>,
    mcs: Opt<u8>,
    tbs: Opt<u32>,
    layers: Opt<u8>,
    harq_id: Opt<u8>,
    rv: Opt<u8>,
    ndi: Opt<bool>,
    retx_index: Opt<u8>,
    ack: Opt<bool>,
    bsr_bytes: Opt<u64>,
    cqi: Opt<u8>,
    ri: Opt<u8>,
    sinr_db: Opt<f32>,
    prbs_used: Opt<u16>,
    prbs_total: Opt<u16>,
    nof_ues_scheduled: Opt<u16>,
}

impl SlotCols {
    fn push(&mut self, e: SlotEvent) {
        self.t_ns.push(e.t_ns);
        self.slot.push(e.slot);
        self.sfn.push(e.sfn);
        self.slot_in_frame.push(e.slot_in_frame);
        self.dir.push(e.dir as u8);
        self.ue.push(e.ue);
        self.rnti.push(e.rnti);
        self.prbs.push(e.prbs);
        self.mcs.push(e.mcs);
        self.tbs.push(e.tbs);
        self.layers.push(e.layers);
        self.harq_id.push(e.harq_id);
        self.rv.push(e.rv);
        self.ndi.push(e.ndi);
        self.retx_index.push(e.retx_index);
        self.ack.push(e.ack);
        self.bsr_bytes.push(e.bsr_bytes);
        self.cqi.push(e.cqi);
        self.ri.push(e.ri);
        self.sinr_db.push(e.sinr_db);
        self.prbs_used.push(e.prbs_used);
        self.prbs_total.push(e.prbs_total);
        self.nof_ues_scheduled.push(e.nof_ues_scheduled);
    }

    fn take_batch(&mut self) -> RecordBatch {
        let (ndi, ndi_n) = self.ndi.take();
        let (ack, ack_n) = self.ack.take();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(take_full(&mut self.t_ns))),
            Arc::new(UInt64Array::from(take_full(&mut self.slot))),
            Arc::new(UInt16Array::from(take_full(&mut self.sfn))),
            Arc::new(UInt8Array::from(take_full(&mut self.slot_in_frame))),
            dict(take_full(&mut self.dir), None, Dir::NAMES),
            opt_array!(self.ue, UInt32Array),
            opt_array!(self.rnti, UInt16Array),
            Arc::new(UInt16Array::from(take_full(&mut self.prbs))),
            opt_array!(self.mcs, UInt8Array),
            opt_array!(self.tbs, UInt32Array),
            opt_array!(self.layers, UInt8Array),
            opt_array!(self.harq_id, UInt8Array),
            opt_array!(self.rv, UInt8Array),
            Arc::new(BooleanArray::new(ndi.into(), ndi_n)),
            opt_array!(self.retx_index, UInt8Array),
            Arc::new(BooleanArray::new(ack.into(), ack_n)),
            opt_array!(self.bsr_bytes, UInt64Array),
            opt_array!(self.cqi, UInt8Array),
            opt_array!(self.ri, UInt8Array),
            opt_array!(self.sinr_db, Float32Array),
            opt_array!(self.prbs_used, UInt16Array),
            opt_array!(self.prbs_total, UInt16Array),
            opt_array!(self.nof_ues_scheduled, UInt16Array),
        ];
        RecordBatch::try_new(slot_schema(), cols).expect("columns match the schema")
    }
}

#[derive(Default)]
struct ControlCols {
    t_ns: Vec<i64>,
    node: Vec<u8>,
    layer: Vec<u8>,
    kind: Vec<u8>,
    dir: Opt<u8>,
    ue: Opt<u32>,
    drb: Opt<u8>,
    sn: Opt<i64>,
    value: Opt<f64>,
    detail: Vec<Option<String>>,
    /// Interned `kind` names, in first-seen order after [`CONTROL_KINDS`].
    kinds: Vec<&'static str>,
}

impl ControlCols {
    fn push(&mut self, e: ControlEvent) {
        if self.kinds.is_empty() {
            self.kinds.extend_from_slice(CONTROL_KINDS);
        }
        let k = match self.kinds.iter().position(|k| *k == e.kind) {
            Some(k) => k,
            None => {
                self.kinds.push(e.kind);
                self.kinds.len() - 1
            }
        };
        self.t_ns.push(e.t_ns);
        self.node.push(e.node as u8);
        self.layer.push(e.layer as u8);
        // At most 256 distinct kinds per run; the model defines a few dozen.
        self.kind.push(u8::try_from(k).unwrap_or(u8::MAX));
        self.dir.push(e.dir.map(|d| d as u8));
        self.ue.push(e.ue);
        self.drb.push(e.drb);
        self.sn.push(e.sn);
        self.value.push(e.value);
        self.detail.push(e.detail);
    }

    fn take_batch(&mut self) -> RecordBatch {
        let (dir, dir_n) = self.dir.take();
        let kinds = self.kinds.clone();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(take_full(&mut self.t_ns))),
            dict(take_full(&mut self.node), None, Node::NAMES),
            dict(take_full(&mut self.layer), None, Layer::NAMES),
            dict(take_full(&mut self.kind), None, &kinds),
            dict(dir, dir_n, Dir::NAMES),
            opt_array!(self.ue, UInt32Array),
            opt_array!(self.drb, UInt8Array),
            opt_array!(self.sn, Int64Array),
            opt_array!(self.value, Float64Array),
            Arc::new(StringArray::from(take_full(&mut self.detail))),
        ];
        RecordBatch::try_new(control_schema(), cols).expect("columns match the schema")
    }
}

enum Msg {
    /// Events in row form (the producer's cost per event is one copy); the writer thread turns
    /// them into columns. An emptied vector of packet events goes back for reuse.
    Packets(Vec<PacketEvent>),
    Slots(Vec<SlotEvent>),
    Controls(Vec<ControlEvent>),
    /// Close the parts being written and write this `run.json` (the rows so far are added).
    Checkpoint(Value),
    /// From now on, show every batch to this tap before writing it.
    Tap(SharedTap),
    Close,
}

fn writer_properties(table: Table) -> WriterProperties {
    // Monotone-ish integers: delta encoding, no dictionary (dictionaries of unique ids only cost).
    let delta: &[&str] = match table {
        Table::Packet => &["t_ns", "pkt"],
        Table::Slot => &["t_ns", "slot"],
        Table::Control => &["t_ns"],
    };
    properties(&table.schema(), delta)
}

/// The encoding of the event tables, for any table of flat columns written with arrow-rs (the
/// analysis's `tti`, a copy of the slot table, too): zstd level 1, the `delta` columns (times and
/// ids: `Int64`/`UInt64`) delta-encoded with chunk statistics, every other numeric or boolean column
/// plain, strings dictionary-encoded, no other statistics.
pub fn properties(schema: &Schema, delta: &[&str]) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .set_compression(Compression::ZSTD(zstd_level()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        // Min/max statistics on every column cost ~40 % of the encoding time; readers prune row
        // groups by time and packet id, so only those columns carry (chunk-level) statistics.
        .set_statistics_enabled(EnabledStatistics::None)
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            "scout.schema_version".to_string(),
            SCHEMA_VERSION.to_string(),
        )]));
    for col in delta {
        let path = ColumnPath::from(*col);
        b = b
            .set_column_statistics_enabled(path.clone(), EnabledStatistics::Chunk)
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
    }
    // Other numeric and boolean columns: plain + zstd. Dictionary encoding costs a hash per value and
    // delta encoding (the Parquet 2.0 default without a dictionary) a bit-packing pass; on the
    // bench-60mbps run plain is the fastest (writer ~20 % faster than delta, ~35 % faster than
    // dictionary) for a file within 5 % of the smallest.
    for f in schema.fields() {
        let numeric = f.data_type().is_primitive() || matches!(f.data_type(), DataType::Boolean);
        if numeric && !delta.contains(&f.name().as_str()) {
            let path = ColumnPath::from(f.name().as_str());
            b = b.set_column_dictionary_enabled(path.clone(), false).set_column_encoding(path, Encoding::PLAIN);
        }
    }
    b.build()
}

/// zstd level of every table (1: the writer must keep up with the model; see RESULTS.md).
fn zstd_level() -> ZstdLevel {
    ZstdLevel::try_new(1).expect("level 1 is valid")
}

/// How one column of a table is encoded.
enum ColumnEncoder {
    /// arrow-rs's column writer (the slot and control tables' numeric and free-text columns).
    Arrow(Box<ArrowColumnWriter>),
    /// Scout's own chunk encoder ([`crate::chunk`]): every column of the packet table and every
    /// enum column.
    Own(Box<Column>),
}

/// One table's Parquet file: a row group is filled batch by batch and written when it reaches
/// [`ROW_GROUP_ROWS`] rows (or at close).
struct TableFile {
    table: Table,
    partial: PathBuf,
    /// Where `close` renames the file.
    fin: PathBuf,
    rows: u64,
    schema: SchemaRef,
    file: SerializedFileWriter<fs::File>,
    factory: ArrowRowGroupWriterFactory,
    /// Per field, the dictionary an enum column starts each row group with (the packet table's
    /// fixed enums; the other tables learn theirs from their batches).
    names: Vec<Vec<&'static str>>,
    columns: Vec<ColumnEncoder>,
    zstd: Zstd,
    rows_in_group: usize,
    row_groups: usize,
}

/// The encoding of each packet-table column in [`crate::chunk`] terms.
fn own_kind(table: Table, field: &Field) -> Kind {
    match (field.name().as_str(), field.data_type()) {
        ("t_ns" | "pkt", _) if table == Table::Packet => Kind::Delta,
        (_, DataType::Dictionary(..)) => Kind::Dict,
        (_, DataType::Boolean) => Kind::Bool,
        (_, DataType::Int64 | DataType::UInt64 | DataType::Float64) => Kind::Plain(8),
        _ => Kind::Plain(4),
    }
}

impl TableFile {
    /// Starts `fin` as `fin.partial`.
    fn create(fin: PathBuf, table: Table, slices: &[&'static str]) -> Result<Self, WriteError> {
        let (partial, file) = serialized_writer(&fin, table)?;
        let schema = table.schema();
        let perr = |e: ParquetError| WriteError::Parquet { path: partial.clone(), message: e.to_string() };
        let (file, factory) = file;
        let names = schema
            .fields()
            .iter()
            .map(|f| match (table, f.name().as_str()) {
                (Table::Packet, "node") => Node::NAMES.to_vec(),
                (Table::Packet, "layer") => Layer::NAMES.to_vec(),
                (Table::Packet, "point") => Point::NAMES.to_vec(),
                (Table::Packet, "dir") => Dir::NAMES.to_vec(),
                (Table::Packet, "slice") => slices.to_vec(),
                (Table::Packet, "queue") => Queue::NAMES.to_vec(),
                (Table::Packet, "reason") => Reason::NAMES.to_vec(),
                _ => Vec::new(),
            })
            .collect();
        let zstd = Zstd::new(zstd_level()).map_err(perr)?;
        let mut t = TableFile {
            table,
            partial,
            fin,
            rows: 0,
            schema,
            file,
            factory,
            names,
            columns: Vec::new(),
            zstd,
            rows_in_group: 0,
            row_groups: 0,
        };
        t.columns = t.new_columns()?;
        Ok(t)
    }

    fn err(&self, e: ParquetError) -> WriteError {
        WriteError::Parquet { path: self.partial.clone(), message: e.to_string() }
    }

    fn new_columns(&self) -> Result<Vec<ColumnEncoder>, WriteError> {
        let arrow = self.factory.create_column_writers(self.row_groups).map_err(|e| self.err(e))?;
        let descr = self.file.schema_descr();
        // Every field of the schema is flat, so field i is Parquet leaf i.
        Ok(arrow
            .into_iter()
            .zip(self.schema.fields())
            .enumerate()
            .map(|(i, (w, f))| {
                let kind = own_kind(self.table, f);
                if self.table == Table::Packet || kind == Kind::Dict {
                    ColumnEncoder::Own(Box::new(Column::new(descr.column(i), kind, &self.names[i])))
                } else {
                    ColumnEncoder::Arrow(Box::new(w))
                }
            })
            .collect())
    }

    /// Appends an Arrow batch (the slot and control tables).
    fn write(&mut self, batch: &RecordBatch) -> Result<(), WriteError> {
        for ((enc, array), field) in self.columns.iter_mut().zip(batch.columns()).zip(self.schema.fields()) {
            let r = match enc {
                ColumnEncoder::Arrow(w) => {
                    compute_leaves(field, array).and_then(|leaves| leaves.iter().try_for_each(|leaf| w.write(leaf)))
                }
                ColumnEncoder::Own(c) => push_dict(c, field, array, &mut self.zstd),
            };
            r.map_err(|e| WriteError::Parquet { path: self.partial.clone(), message: e.to_string() })?;
        }
        self.rows_in_group += batch.num_rows();
        self.rows += batch.num_rows() as u64;
        if self.rows_in_group >= ROW_GROUP_ROWS {
            self.flush_row_group()?;
        }
        Ok(())
    }

    /// Appends a batch of packet events to the column chunks (a copy of each column's slice).
    /// Row groups hold whole batches ([`ROW_GROUP_ROWS`] is a multiple of [`PACKET_BATCH_ROWS`]).
    fn write_packets(&mut self, b: &PacketBatch) -> Result<(), WriteError> {
        self.append_packets(b).map_err(|e| self.err(e))?;
        self.rows_in_group += b.rows;
        self.rows += b.rows as u64;
        if self.rows_in_group >= ROW_GROUP_ROWS {
            self.flush_row_group()?;
        }
        Ok(())
    }

    fn append_packets(&mut self, b: &PacketBatch) -> Result<(), ParquetError> {
        let cols: Vec<&mut Column> = self
            .columns
            .iter_mut()
            .filter_map(|c| match c {
                ColumnEncoder::Own(c) => Some(&mut **c),
                ColumnEncoder::Arrow(_) => None,
            })
            .collect();
        let Ok::<[&mut Column; 22], _>(c) = cols.try_into() else {
            unreachable!("the packet table has 22 columns, all encoded by Scout")
        };
        let n = b.rows;
        let z = &mut self.zstd;
        // In the order of `packet_schema`.
        c[0].append(&b.t_ns[..n], z)?;
        c[1].append(&b.node[..n], z)?;
        c[2].append(&b.layer[..n], z)?;
        c[3].append(&b.point[..n], z)?;
        c[4].append(&b.dir[..n], z)?;
        c[5].append(&b.ue[..n], z)?;
        c[6].append_nullable(b.rnti.parts(n), z)?;
        c[7].append_nullable(b.drb.parts(n), z)?;
        c[8].append_nullable(b.qfi.parts(n), z)?;
        c[9].append(&b.slice[..n], z)?;
        c[10].append(&b.flow[..n], z)?;
        c[11].append(&b.pkt[..n], z)?;
        c[12].append_nullable(b.sn.parts(n), z)?;
        c[13].append_nullable(b.seg_offset.parts(n), z)?;
        c[14].append_nullable(b.seg_last.parts(n), z)?;
        c[15].append(&b.bytes[..n], z)?;
        c[16].append_nullable(b.queue.parts(n), z)?;
        c[17].append_nullable(b.queue_bytes.parts(n), z)?;
        c[18].append_nullable(b.queue_pkts.parts(n), z)?;
        c[19].append(&b.retx[..n], z)?;
        c[20].append_nullable(b.reason.parts(n), z)?;
        c[21].append(&b.ecn[..n], z)
    }

    fn flush_row_group(&mut self) -> Result<(), WriteError> {
        if self.rows_in_group == 0 {
            return Ok(());
        }
        // Arrow column writers are consumed by closing them; Scout's own columns are emptied and
        // kept (with their buffers) for the next row group.
        let mut fresh: Vec<Option<ArrowColumnWriter>> = if self.table == Table::Packet {
            Vec::new()
        } else {
            self.factory
                .create_column_writers(self.row_groups + 1)
                .map_err(|e| self.err(e))?
                .into_iter()
                .map(Some)
                .collect()
        };
        let partial = self.partial.clone();
        let perr = |e: ParquetError| WriteError::Parquet { path: partial.clone(), message: e.to_string() };
        let mut rg = self.file.next_row_group().map_err(perr)?;
        for (i, c) in self.columns.iter_mut().enumerate() {
            match c {
                ColumnEncoder::Arrow(w) => {
                    let full = std::mem::replace(&mut **w, fresh[i].take().expect("one Arrow writer per column"));
                    full.close().and_then(|chunk| chunk.append_to_row_group(&mut rg))
                }
                ColumnEncoder::Own(c) => {
                    c.close(&mut self.zstd).and_then(|(bytes, close)| rg.append_column(&bytes, close))
                }
            }
            .map_err(perr)?;
        }
        rg.close().map_err(perr)?;
        self.rows_in_group = 0;
        self.row_groups += 1;
        Ok(())
    }

    /// Writes the last row group and the footer, then renames the file into place; returns its rows.
    fn close(mut self) -> Result<u64, WriteError> {
        self.flush_row_group()?;
        let partial = self.partial.clone();
        self.file.close().map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
        fs::rename(&partial, &self.fin).map_err(io_err(&self.fin))?;
        Ok(self.rows)
    }
}

type Serialized = (SerializedFileWriter<fs::File>, ArrowRowGroupWriterFactory);

/// A Parquet writer of `table` at `fin` + `.partial`. ArrowWriter converts the schema and embeds
/// it (so readers see dictionaries, not plain strings); the row groups are assembled by Scout.
fn serialized_writer(fin: &Path, table: Table) -> Result<(PathBuf, Serialized), WriteError> {
    let partial = crate::partial_path(fin);
    let file = fs::File::create(&partial).map_err(io_err(&partial))?;
    let w = ArrowWriter::try_new(file, table.schema(), Some(writer_properties(table)))
        .and_then(|w| w.into_serialized_writer())
        .map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
    Ok((partial, w))
}

/// The finished parts of a table in a checkpointed run, in order (`.partial` ones are not).
fn part_files(events_dir: &Path, table: Table) -> Result<Vec<PathBuf>, WriteError> {
    let dir = events_dir.join(table.parts_name());
    let mut parts: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(io_err(&dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    parts.sort();
    Ok(parts)
}

/// Writes `events/TABLE.parquet` from the table's parts: every row group of every part, in order,
/// its column chunks copied byte for byte (statistics kept; page indexes are not written) — one
/// file, or a dataset of files of `limit` rows ([`part_rows`]) when the table has more. Returns the
/// rows.
fn splice_parts(events_dir: &Path, table: Table, limit: u64) -> Result<u64, WriteError> {
    let fin = events_dir.join(table.file_name());
    let staging = events_dir.join(table.dataset_partial_name());
    let mut rows = 0u64;
    // The output being written: its final name, partial name and writer; rows in it.
    let mut out: Option<(PathBuf, PathBuf, SerializedFileWriter<fs::File>)> = None;
    let mut in_out = 0u64;
    let mut outputs = 0usize;
    let finish = |o: (PathBuf, PathBuf, SerializedFileWriter<fs::File>)| -> Result<(), WriteError> {
        let (fin, partial, w) = o;
        w.close().map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
        fs::rename(&partial, &fin).map_err(io_err(&fin))
    };
    for part in part_files(events_dir, table)? {
        let perr = |e: ParquetError| WriteError::Parquet { path: part.clone(), message: e.to_string() };
        let file = fs::File::open(&part).map_err(io_err(&part))?;
        let reader = SerializedFileReader::new(file.try_clone().map_err(io_err(&part))?).map_err(perr)?;
        for rg in reader.metadata().row_groups() {
            if out.is_some() && in_out >= limit {
                // A large table: the file so far becomes the dataset's first part.
                if outputs == 1 {
                    fs::create_dir_all(&staging).map_err(io_err(&staging))?;
                    let o = out.take().expect("an output");
                    finish((staging.join(dataset_part(0)), o.1, o.2))?;
                } else {
                    finish(out.take().expect("an output"))?;
                }
                in_out = 0;
            }
            if out.is_none() {
                let dest = if outputs == 0 { fin.clone() } else { staging.join(dataset_part(outputs)) };
                let (partial, (w, _)) = serialized_writer(&dest, table)?;
                out = Some((dest, partial, w));
                outputs += 1;
            }
            let w = &mut out.as_mut().expect("an output").2;
            let mut g = w.next_row_group().map_err(perr)?;
            for col in rg.columns() {
                let close = ColumnCloseResult {
                    bytes_written: col.compressed_size() as u64,
                    rows_written: rg.num_rows() as u64,
                    metadata: col.clone(),
                    bloom_filter: None,
                    column_index: None,
                    offset_index: None,
                };
                g.append_column(&file, close).map_err(perr)?;
            }
            g.close().map_err(perr)?;
            rows += rg.num_rows() as u64;
            in_out += rg.num_rows() as u64;
        }
    }
    match out {
        // No rows at all: an empty file with the table's schema.
        None => {
            let (partial, (w, _)) = serialized_writer(&fin, table)?;
            finish((fin.clone(), partial, w))?;
        }
        Some(o) => finish(o)?,
    }
    if outputs > 1 {
        fs::rename(&staging, &fin).map_err(io_err(&fin))?;
    }
    Ok(rows)
}

/// The file name of a dataset's part `i`.
fn dataset_part(i: usize) -> String {
    format!("part-{i:06}.parquet")
}

/// Makes a checkpointed run whose producer was killed readable: discards the parts that were
/// being written, splices the finished ones into the tables and rewrites `run.json`, still
/// `"complete": false`, with `recovered` (what was kept and what is lost) and `counts.events`.
/// Returns that `run.json`.
pub fn recover(dir: &Path) -> Result<Value, WriteError> {
    let run_json = dir.join("run.json");
    let bad = |message: String| WriteError::Recover { path: dir.to_path_buf(), message };
    let text = fs::read(&run_json).map_err(io_err(&run_json))?;
    let mut meta: Value = serde_json::from_slice(&text)
        .map_err(|e| WriteError::Recover { path: run_json.clone(), message: format!("not valid JSON: {e}") })?;
    if meta["complete"] == json!(true) {
        return Err(bad("the run is complete; there is nothing to recover".into()));
    }
    if meta.get("recovered").is_some() {
        return Err(bad("the run was already recovered".into()));
    }
    let events = dir.join("events");
    if !Table::ALL.iter().all(|t| events.join(t.parts_name()).is_dir()) {
        return Err(bad(
            "no checkpoints to recover from: only checkpointed runs (scout emulate, scout probe) can be recovered \
             after their producer was killed; this one's tables were still being written"
                .into(),
        ));
    }
    let mut rows = [0u64; 3];
    let mut discarded = 0;
    for t in Table::ALL {
        let parts = events.join(t.parts_name());
        for e in fs::read_dir(&parts).map_err(io_err(&parts))?.flatten() {
            if e.path().extension().is_some_and(|x| x == "partial") {
                fs::remove_file(e.path()).map_err(io_err(&e.path()))?;
                discarded += 1;
            }
        }
        rows[t as usize] = splice_parts(&events, t, part_rows())?;
    }
    let checkpoint = meta.get("checkpoint").cloned().unwrap_or(Value::Null);
    meta["recovered"] = json!({
        "checkpoint": checkpoint,
        "parts_discarded": discarded,
        "note": "the producer was killed; the events after its last checkpoint (at most about a second) are lost",
    });
    meta["counts"]["events"] = json!({
        "packet_events": rows[0],
        "slot_events": rows[1],
        "control_events": rows[2],
    });
    write_json_atomically(&run_json, &meta)?;
    for t in Table::ALL {
        let _ = fs::remove_dir_all(events.join(t.parts_name()));
    }
    Ok(meta)
}

/// Hands an Arrow enum column's keys, dictionary and validity to its encoder.
fn push_dict(c: &mut Column, field: &Field, array: &ArrayRef, z: &mut Zstd) -> Result<(), ParquetError> {
    let wrong = |what: &str| ParquetError::General(format!("column {}: {what}", field.name()));
    let d = array
        .as_any()
        .downcast_ref::<DictionaryArray<UInt8Type>>()
        .ok_or_else(|| wrong("expected a UInt8 dictionary"))?;
    let names =
        d.values().as_any().downcast_ref::<StringArray>().ok_or_else(|| wrong("dictionary values are not strings"))?;
    let names: Vec<&str> = names.iter().map(|n| n.unwrap_or("")).collect();
    let valid: Option<Vec<bool>> = d.keys().nulls().map(|n| n.iter().collect());
    c.push_dict_batch(&names, d.keys().values(), valid.as_deref(), z)
}

/// The writer thread's files: one per table, or, in a checkpointed run, the current part of each
/// (opened when the table's first rows after a checkpoint arrive).
struct Files {
    events_dir: PathBuf,
    slices: Vec<&'static str>,
    checkpointed: bool,
    open: [Option<TableFile>; 3],
    /// The number of the next part; rows in finished parts per table.
    part: usize,
    rows: [u64; 3],
    /// Rows per file of a large table ([`part_rows`]), and per table the dataset parts written
    /// so far (0: still one file).
    part_rows: u64,
    dataset: [usize; 3],
}

impl Files {
    fn new(events_dir: PathBuf, slices: Vec<&'static str>, checkpointed: bool) -> Self {
        let (open, part_rows) = ([None, None, None], part_rows());
        Files { events_dir, slices, checkpointed, open, part: 0, rows: [0; 3], part_rows, dataset: [0; 3] }
    }

    /// After a write: a table file that reached [`Self::part_rows`] at a row-group boundary becomes
    /// a part of the table's dataset (the first one moves into the dataset's directory), and the
    /// next rows go to a new part.
    fn rotate(&mut self, t: Table) -> Result<(), WriteError> {
        let i = t as usize;
        let full = self.open[i].as_ref().is_some_and(|f| f.rows >= self.part_rows && f.rows_in_group == 0);
        if self.checkpointed || !full {
            return Ok(());
        }
        let staging = self.events_dir.join(t.dataset_partial_name());
        let mut f = self.open[i].take().expect("checked above");
        if self.dataset[i] == 0 {
            fs::create_dir_all(&staging).map_err(io_err(&staging))?;
            f.fin = staging.join(dataset_part(0));
        }
        f.close()?;
        self.dataset[i] += 1;
        self.open[i] = Some(TableFile::create(staging.join(dataset_part(self.dataset[i])), t, &self.slices)?);
        Ok(())
    }

    fn create(events_dir: PathBuf, slices: Vec<&'static str>, checkpointed: bool) -> Result<Self, WriteError> {
        let mut f = Files::new(events_dir, slices, checkpointed);
        for t in Table::ALL {
            if checkpointed {
                let dir = f.events_dir.join(t.parts_name());
                fs::create_dir_all(&dir).map_err(io_err(&dir))?;
            } else {
                // Opened at once: a directory that cannot take the files fails before any event.
                f.file(t)?;
            }
        }
        Ok(f)
    }

    fn file(&mut self, t: Table) -> Result<&mut TableFile, WriteError> {
        let i = t as usize;
        if self.open[i].is_none() {
            let fin = if self.checkpointed {
                self.events_dir.join(t.parts_name()).join(format!("{:06}.parquet", self.part))
            } else {
                self.events_dir.join(t.file_name())
            };
            self.open[i] = Some(TableFile::create(fin, t, &self.slices)?);
        }
        Ok(self.open[i].as_mut().expect("opened above"))
    }

    /// Closes the parts being written (each a whole Parquet file from then on).
    fn checkpoint(&mut self) -> Result<(), WriteError> {
        for (i, f) in self.open.iter_mut().enumerate() {
            if let Some(f) = f.take() {
                self.rows[i] += f.close()?;
            }
        }
        self.part += 1;
        Ok(())
    }

    /// Puts every table in place under its final name.
    fn close(mut self) -> Result<(), WriteError> {
        if !self.checkpointed {
            for (t, f) in Table::ALL.into_iter().zip(std::mem::take(&mut self.open)) {
                if let Some(f) = f {
                    f.close()?;
                }
                if self.dataset[t as usize] > 0 {
                    let fin = self.events_dir.join(t.file_name());
                    fs::rename(self.events_dir.join(t.dataset_partial_name()), &fin).map_err(io_err(&fin))?;
                }
            }
            return Ok(());
        }
        self.checkpoint()?;
        for t in Table::ALL {
            splice_parts(&self.events_dir, t, self.part_rows)?;
            let dir = self.events_dir.join(t.parts_name());
            fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
        }
        Ok(())
    }

    /// Removes every file this thread wrote (an unfinished run leaves nothing behind).
    fn discard(&self) {
        for f in self.open.iter().flatten() {
            let _ = fs::remove_file(&f.partial);
        }
        for t in Table::ALL {
            if self.checkpointed {
                let _ = fs::remove_dir_all(self.events_dir.join(t.parts_name()));
            }
            let _ = fs::remove_dir_all(self.events_dir.join(t.dataset_partial_name()));
        }
    }
}

/// A batch's vector, emptied by the writer thread and handed back for the producer to fill again:
/// a producer that grew a new one per batch touched new memory all the time (a vector that large
/// is mapped afresh, and unmapped when the writer thread drops it), and in the emulator's
/// real-time data path every new page is a page fault — on a virtual machine, some of them
/// milliseconds.
enum Spent {
    Packets(Vec<PacketEvent>),
    Slots(Vec<SlotEvent>),
    Controls(Vec<ControlEvent>),
}

/// The emptied vectors back from the writer thread, by table.
#[derive(Default)]
struct Spares {
    packets: Vec<Vec<PacketEvent>>,
    slots: Vec<Vec<SlotEvent>>,
    controls: Vec<Vec<ControlEvent>>,
}

fn writer_thread(
    events_dir: PathBuf,
    rx: Receiver<Msg>,
    queued: Arc<AtomicUsize>,
    recycle: SyncSender<Spent>,
    slices: Vec<&'static str>,
    checkpointed: bool,
) -> Result<(), WriteError> {
    let mut files = match Files::create(events_dir.clone(), slices, checkpointed) {
        Ok(f) => f,
        Err(e) => {
            // Whatever was made before the failure.
            Files::new(events_dir, Vec::new(), checkpointed).discard();
            return Err(e);
        }
    };
    // Only `Close` puts the tables in place: a producer that goes away without it (an error, an
    // interruption) leaves no table behind, finished or partial.
    let result = write_until_close(&rx, &queued, &recycle, &mut files);
    match result {
        Ok(true) => files.close(),
        Ok(false) | Err(_) => {
            files.discard();
            result.map(|_| ())
        }
    }
}

/// Writes what arrives until `Close` (true) or until the producer goes away (false).
fn write_until_close(
    rx: &Receiver<Msg>,
    queued: &AtomicUsize,
    recycle: &SyncSender<Spent>,
    files: &mut Files,
) -> Result<bool, WriteError> {
    let mut staging = PacketBatch::new();
    let (mut slots, mut controls) = (SlotCols::default(), ControlCols::default());
    let mut tap: Option<SharedTap> = None;
    while let Ok(msg) = rx.recv() {
        queued.fetch_sub(1, Ordering::Relaxed);
        match msg {
            Msg::Tap(t) => tap = Some(t),
            Msg::Slots(mut rows) => {
                if let Some(t) = &tap {
                    t.slots(&rows);
                }
                rows.drain(..).for_each(|e| slots.push(e));
                let _ = recycle.try_send(Spent::Slots(rows));
                files.file(Table::Slot)?.write(&slots.take_batch())?;
                files.rotate(Table::Slot)?;
            }
            Msg::Controls(mut rows) => {
                if let Some(t) = &tap {
                    t.controls(&rows);
                }
                rows.drain(..).for_each(|e| controls.push(e));
                let _ = recycle.try_send(Spent::Controls(rows));
                files.file(Table::Control)?.write(&controls.take_batch())?;
                files.rotate(Table::Control)?;
            }
            Msg::Packets(mut rows) => {
                if let Some(t) = &tap {
                    t.packets(&rows);
                }
                for chunk in rows.chunks(PB) {
                    staging.clear();
                    chunk.iter().for_each(|e| staging.push(e));
                    files.file(Table::Packet)?.write_packets(&staging)?;
                    files.rotate(Table::Packet)?;
                }
                rows.clear();
                // The producer may have gone (a failed run): then the vector is simply dropped.
                let _ = recycle.try_send(Spent::Packets(rows));
            }
            Msg::Checkpoint(mut meta) => {
                files.checkpoint()?;
                let r = files.rows;
                meta["checkpoint"]["parts"] = json!(files.part);
                meta["checkpoint"]["rows"] =
                    json!({"packet_events": r[0], "slot_events": r[1], "control_events": r[2]});
                write_json_atomically(&files.events_dir.with_file_name("run.json"), &meta)?;
            }
            Msg::Close => return Ok(true),
        }
    }
    Ok(false)
}

/// Writes a run directory. Implements [`Sink`], so the model writes straight into it.
pub struct RunWriter {
    dir: PathBuf,
    meta: Value,
    packet: Vec<PacketEvent>,
    /// Emptied batch vectors coming back from the writer thread, and those taken from it.
    recycled: Receiver<Spent>,
    spares: Spares,
    slot: Vec<SlotEvent>,
    control: Vec<ControlEvent>,
    rows: [u64; 3],
    tx: Option<SyncSender<Msg>>,
    thread: Option<JoinHandle<Result<(), WriteError>>>,
    /// Rows that could not be handed to a writer thread that had already failed.
    lost_rows: u64,
    /// Times the producer found the writer thread's queue full and waited, and how long (ns).
    waits: u64,
    wait_ns: u64,
    /// Messages sent to the writer thread and not yet taken up by it.
    queued: Arc<AtomicUsize>,
    /// `create` made the directory itself (so an unfinished run removes it again).
    created_dir: bool,
    /// `finish` succeeded: the run is in place.
    finished: bool,
    /// Made by [`RunWriter::create_checkpointed`].
    checkpointed: bool,
    /// With a tap ([`RunWriter::set_tap`]): when the buffered rows next go to the writer thread
    /// whether or not a batch is full, so that a tap sees a slow producer's events promptly.
    tap_flush: Option<std::time::Instant>,
    /// Rows since the clock was last read for `tap_flush`.
    tap_rows: u32,
}

impl Drop for RunWriter {
    /// A run that was not finished (an error, an interruption) leaves nothing behind: the writer
    /// thread removes its partial tables, then `run.json`, the tables and the directories this
    /// writer made are removed. Only names the writer itself writes are touched.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.tx.take();
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
        let events = self.dir.join("events");
        for t in Table::ALL {
            let _ = fs::remove_file(events.join(t.file_name()));
            let _ = fs::remove_file(crate::partial_path(&events.join(t.file_name())));
        }
        let _ = fs::remove_dir(&events);
        let _ = fs::remove_file(self.dir.join("run.json"));
        let _ = fs::remove_file(self.dir.join("run.json.tmp"));
        if self.created_dir {
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

impl RunWriter {
    /// Creates `dir` (and `dir/events`), writes `run.json` with `"complete": false` and the given
    /// metadata, and starts the writer thread. `slices` names the slice dictionary.
    ///
    /// Fails if `dir/run.json` exists: a run directory is never silently overwritten.
    pub fn create(dir: &Path, meta: Value, slices: &[String]) -> Result<Self, WriteError> {
        Self::start(dir, meta, slices, false)
    }

    /// As [`RunWriter::create`], for a producer that may be killed (the emulator, the live
    /// probe): the tables are written as parts that [`RunWriter::checkpoint`] closes, so that a
    /// `kill -9` loses only what came after the last checkpoint ([`recover`]).
    pub fn create_checkpointed(dir: &Path, meta: Value, slices: &[String]) -> Result<Self, WriteError> {
        Self::start(dir, meta, slices, true)
    }

    fn start(dir: &Path, meta: Value, slices: &[String], checkpointed: bool) -> Result<Self, WriteError> {
        let run_json = dir.join("run.json");
        if run_json.exists() {
            return Err(WriteError::Exists { path: dir.to_path_buf() });
        }
        let created_dir = !dir.exists();
        let events_dir = dir.join("events");
        fs::create_dir_all(&events_dir).map_err(io_err(&events_dir))?;
        let mut meta = meta;
        meta["schema_version"] = json!(SCHEMA_VERSION);
        meta["complete"] = json!(false);
        if checkpointed {
            meta["checkpoint"] = json!({"parts": 0});
        }
        if let Err(e) = write_json_atomically(&run_json, &meta) {
            let _ = fs::remove_dir(&events_dir);
            if created_dir {
                let _ = fs::remove_dir(dir);
            }
            return Err(e);
        }
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        // Room for every vector in flight: those queued and those of the three tables filling.
        let (recycle, recycled) = sync_channel(CHANNEL_DEPTH + 3);
        let queued = Arc::new(AtomicUsize::new(0));
        let taken = Arc::clone(&queued);
        // Slice names live as long as the process: leaking a handful of short strings once per run
        // lets every batch reuse them as the dictionary without copying.
        let slices: Vec<&'static str> = slices.iter().map(|s| &*Box::leak(s.clone().into_boxed_str())).collect();
        let thread = std::thread::Builder::new()
            .name("scout-writer".into())
            .spawn(move || writer_thread(events_dir, rx, taken, recycle, slices, checkpointed))
            .map_err(io_err(dir))?;
        Ok(RunWriter {
            dir: dir.to_path_buf(),
            meta,
            packet: Vec::with_capacity(PACKET_BATCH_ROWS),
            recycled,
            spares: Spares::default(),
            slot: Vec::new(),
            control: Vec::new(),
            rows: [0; 3],
            tx: Some(tx),
            thread: Some(thread),
            lost_rows: 0,
            waits: 0,
            wait_ns: 0,
            queued,
            created_dir,
            finished: false,
            checkpointed,
            tap_flush: None,
            tap_rows: 0,
        })
    }

    /// Shows every row from now on to `tap`, on the writer thread, a batch at a time; buffered
    /// rows are handed over at least every [`TAP_FLUSH`] (the clock is read every
    /// [`TAP_CHECK_ROWS`] rows added), not only when a batch is full.
    pub fn set_tap(&mut self, tap: SharedTap) {
        self.send(0, Msg::Tap(tap));
        self.tap_flush = Some(std::time::Instant::now() + TAP_FLUSH);
    }

    /// With a tap: hands the buffered rows over when [`TAP_FLUSH`] has passed since the last time.
    #[inline]
    fn tap_due(&mut self) {
        if let Some(due) = self.tap_flush {
            self.tap_rows += 1;
            if self.tap_rows < TAP_CHECK_ROWS {
                return;
            }
            self.tap_rows = 0;
            let now = std::time::Instant::now();
            if now >= due {
                self.tap_flush = Some(now + TAP_FLUSH);
                for t in Table::ALL {
                    self.flush(t);
                }
            }
        }
    }

    /// Rows written so far per table (`packet_events`, `slot_events`, `control_events`).
    pub fn rows(&self) -> [u64; 3] {
        self.rows
    }

    fn send(&mut self, rows: usize, msg: Msg) {
        let Some(tx) = self.tx.as_ref() else {
            self.lost_rows += rows as u64;
            return;
        };
        self.queued.fetch_add(1, Ordering::Relaxed);
        let ok = match tx.try_send(msg) {
            Ok(()) => true,
            Err(TrySendError::Full(msg)) => {
                // The writer thread is behind: the producer waits (no row is dropped), and says so.
                let t = std::time::Instant::now();
                let ok = tx.send(msg).is_ok();
                self.waits += 1;
                self.wait_ns += t.elapsed().as_nanos() as u64;
                ok
            }
            Err(TrySendError::Disconnected(_)) => false,
        };
        if !ok {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.lost_rows += rows as u64;
        }
    }

    /// Whether the writer thread is behind: half its queue or more is waiting for it. A producer
    /// in real time takes in less work until it has caught up, rather than wait for it (see
    /// [`RunWriter::waits`]).
    pub fn behind(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= CHANNEL_DEPTH / 2
    }

    /// How often the producer waited for the writer thread (its queue full), and for how long in
    /// all (ns): time a real-time producer did not spend on its own work.
    pub fn waits(&self) -> (u64, u64) {
        (self.waits, self.wait_ns)
    }

    fn flush(&mut self, table: Table) {
        for spent in self.recycled.try_iter() {
            match spent {
                Spent::Packets(v) => self.spares.packets.push(v),
                Spent::Slots(v) => self.spares.slots.push(v),
                Spent::Controls(v) => self.spares.controls.push(v),
            }
        }
        // Columns are built by the writer thread: a producer in real time (the emulator) must not
        // spend a millisecond turning a batch of rows with JSON details into Arrow arrays.
        let (rows, msg) = match table {
            Table::Packet if !self.packet.is_empty() => {
                let fresh = self.spares.packets.pop().unwrap_or_else(|| Vec::with_capacity(PACKET_BATCH_ROWS));
                (self.packet.len(), Msg::Packets(std::mem::replace(&mut self.packet, fresh)))
            }
            Table::Slot if !self.slot.is_empty() => {
                let fresh = self.spares.slots.pop().unwrap_or_default();
                (self.slot.len(), Msg::Slots(std::mem::replace(&mut self.slot, fresh)))
            }
            Table::Control if !self.control.is_empty() => {
                let fresh = self.spares.controls.pop().unwrap_or_default();
                (self.control.len(), Msg::Controls(std::mem::replace(&mut self.control, fresh)))
            }
            _ => return,
        };
        self.send(rows, msg);
    }

    /// In a checkpointed run, makes every event so far durable: the buffered rows go to the writer
    /// thread, which closes the parts being written and rewrites `run.json` (still incomplete)
    /// with `checkpoint` = `note` plus the parts and rows so far. The producer does not wait for
    /// the disk. Does nothing in a run made by [`RunWriter::create`].
    pub fn checkpoint(&mut self, note: Value) {
        if !self.checkpointed {
            return;
        }
        for t in Table::ALL {
            self.flush(t);
        }
        let mut meta = self.meta.clone();
        meta["checkpoint"] = note;
        self.send(0, Msg::Checkpoint(meta));
    }

    /// Flushes every table, closes the files, renames them into place and rewrites `run.json` with
    /// `extra` merged in, `counts.events` filled and `"complete": true`.
    pub fn finish(mut self, extra: Value) -> Result<Value, WriteError> {
        for t in Table::ALL {
            self.flush(t);
        }
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Msg::Close);
        }
        let result = match self.thread.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(WriteError::Thread("the writer thread panicked".into())),
            None => Ok(()),
        };
        result?;
        if self.lost_rows > 0 {
            return Err(WriteError::Thread(format!("{} rows were not written", self.lost_rows)));
        }
        let mut meta = std::mem::take(&mut self.meta);
        if let Some(m) = meta.as_object_mut() {
            // Spliced into whole tables: a finished run looks the same however it was written.
            m.remove("checkpoint");
        }
        let meta = completed(meta, extra, self.rows);
        write_json_atomically(&self.dir.join("run.json"), &meta)?;
        self.finished = true;
        Ok(meta)
    }
}

impl Sink for RunWriter {
    #[inline]
    fn packet(&mut self, ev: PacketEvent) {
        self.packet.push(ev);
        self.rows[0] += 1;
        if self.packet.len() >= PACKET_BATCH_ROWS {
            self.flush(Table::Packet);
        }
        self.tap_due();
    }

    fn slot(&mut self, ev: SlotEvent) {
        self.slot.push(ev);
        self.rows[1] += 1;
        if self.slot.len() >= BATCH_ROWS {
            self.flush(Table::Slot);
        }
        self.tap_due();
    }

    fn control(&mut self, ev: ControlEvent) {
        self.control.push(ev);
        self.rows[2] += 1;
        if self.control.len() >= BATCH_ROWS {
            self.flush(Table::Control);
        }
        self.tap_due();
    }
}

/// Where a producer's events and its closing metadata go: a run directory ([`RunWriter`]), or
/// only their counts ([`CountingRun`]: fuzzing, tests).
pub trait RunOutput: Sink {
    /// Ends the run with `extra` merged into its metadata and returns the whole `run.json`.
    fn finish_run(self, extra: Value) -> Result<Value, WriteError>;
}

impl RunOutput for RunWriter {
    fn finish_run(self, extra: Value) -> Result<Value, WriteError> {
        self.finish(extra)
    }
}

/// A run that keeps its metadata and counts its events, writing nothing: what a fuzz target reads
/// a producer's `run.json` from, thousands of times a second.
#[derive(Debug)]
pub struct CountingRun {
    meta: Value,
    rows: [u64; 3],
}

impl CountingRun {
    pub fn new(meta: Value) -> Self {
        let mut meta = meta;
        meta["schema_version"] = json!(SCHEMA_VERSION);
        CountingRun { meta, rows: [0; 3] }
    }
}

impl Sink for CountingRun {
    fn packet(&mut self, _: PacketEvent) {
        self.rows[0] += 1;
    }
    fn slot(&mut self, _: SlotEvent) {
        self.rows[1] += 1;
    }
    fn control(&mut self, _: ControlEvent) {
        self.rows[2] += 1;
    }
}

impl RunOutput for CountingRun {
    fn finish_run(self, extra: Value) -> Result<Value, WriteError> {
        Ok(completed(self.meta, extra, self.rows))
    }
}

/// A finished run's metadata: `extra` merged in, `counts.events` filled from `rows`, complete.
fn completed(mut meta: Value, extra: Value, rows: [u64; 3]) -> Value {
    merge(&mut meta, extra);
    let counts = &mut meta["counts"];
    if !counts.is_object() {
        *counts = json!({});
    }
    counts["events"] = json!({
        "packet_events": rows[0],
        "slot_events": rows[1],
        "control_events": rows[2],
    });
    counts["telemetry_lost"] = json!(0);
    meta["complete"] = json!(true);
    meta
}

/// Merges `extra` into `base` (objects recursively; anything else replaces).
fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

/// Writes JSON to `path` via a temporary file and a rename, so readers see the old or the new file.
pub fn write_json_atomically(path: &Path, value: &Value) -> Result<(), WriteError> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_vec_pretty(value).expect("JSON values always serialise");
    let written = fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(&text)?;
        f.write_all(b"\n")?;
        f.sync_all()
    });
    if let Err(e) = written {
        // A full disk must not keep a half-written file that holds it full.
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp)(e));
    }
    fs::rename(&tmp, path).map_err(io_err(path))
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
                kind: "x",
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
            kind: "app_rtt",
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
