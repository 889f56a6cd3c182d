//! The run directory writer: `run.json` plus `events/{packet,slot,control}.parquet`.
//!
//! Layout and guarantees (the contract of `docs/schema.md`):
//! - [`RunWriter::create`] writes `run.json` with `"complete": false` before any event.
//! - Events are buffered per table in columnar form on the producer's thread and handed, one batch of
//!   [`BATCH_ROWS`] rows at a time, over a bounded channel to a writer thread that encodes them
//!   (zstd, dictionary-encoded enums, row groups of [`ROW_GROUP_ROWS`]). Memory is bounded by the
//!   channel depth times the batch size plus one row group per table, whatever the run's length.
//! - Tables are written as `*.parquet.partial` and renamed only by [`RunWriter::finish`], which then
//!   replaces `run.json` (write to a temporary file, then rename) with `"complete": true`. A run that
//!   crashes therefore never has a table under its final name nor a `complete` marker.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::types::UInt8Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;
use serde_json::{json, Value};

use crate::schema::*;

/// Rows buffered per table before a batch goes to the writer thread.
pub const BATCH_ROWS: usize = 1 << 16;
/// Rows per Parquet row group.
pub const ROW_GROUP_ROWS: usize = 1 << 20;
/// Batches in flight between the producer and the writer thread.
const CHANNEL_DEPTH: usize = 8;

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
        let values = std::mem::take(&mut self.values);
        let valid = std::mem::take(&mut self.valid);
        let nulls = std::mem::replace(&mut self.nulls, 0);
        let buf = (nulls > 0).then(|| arrow_buffer::NullBuffer::from(valid));
        (values, buf)
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
struct PacketCols {
    t_ns: Vec<i64>,
    node: Vec<u8>,
    layer: Vec<u8>,
    point: Vec<u8>,
    dir: Vec<u8>,
    ue: Vec<u32>,
    rnti: Opt<u16>,
    drb: Opt<u8>,
    qfi: Opt<u8>,
    slice: Vec<u8>,
    flow: Vec<u32>,
    pkt: Vec<u64>,
    sn: Opt<u32>,
    seg_offset: Opt<u32>,
    seg_last: Opt<bool>,
    bytes: Vec<u32>,
    queue: Opt<u8>,
    queue_bytes: Opt<u64>,
    queue_pkts: Opt<u32>,
    retx: Vec<u8>,
    reason: Opt<u8>,
    ecn: Vec<u8>,
}

impl PacketCols {
    #[inline]
    fn push(&mut self, e: PacketEvent) {
        self.t_ns.push(e.t_ns);
        self.node.push(e.node as u8);
        self.layer.push(e.layer as u8);
        self.point.push(e.point as u8);
        self.dir.push(e.dir as u8);
        self.ue.push(e.ue);
        self.rnti.push(e.rnti);
        self.drb.push(e.drb);
        self.qfi.push(e.qfi);
        self.slice.push(e.slice);
        self.flow.push(e.flow);
        self.pkt.push(e.pkt);
        self.sn.push(e.sn);
        self.seg_offset.push(e.seg_offset);
        self.seg_last.push(e.seg_last);
        self.bytes.push(e.bytes);
        self.queue.push(e.queue.map(|q| q as u8));
        self.queue_bytes.push(e.queue_bytes);
        self.queue_pkts.push(e.queue_pkts);
        self.retx.push(e.retx);
        self.reason.push(e.reason.map(|r| r as u8));
        self.ecn.push(e.ecn);
    }

    fn len(&self) -> usize {
        self.t_ns.len()
    }

    fn take_batch(&mut self, slices: &[&str]) -> RecordBatch {
        let (seg_last, seg_last_nulls) = self.seg_last.take();
        let (queue, queue_nulls) = self.queue.take();
        let (reason, reason_nulls) = self.reason.take();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(std::mem::take(&mut self.t_ns))),
            dict(std::mem::take(&mut self.node), None, Node::NAMES),
            dict(std::mem::take(&mut self.layer), None, Layer::NAMES),
            dict(std::mem::take(&mut self.point), None, Point::NAMES),
            dict(std::mem::take(&mut self.dir), None, Dir::NAMES),
            Arc::new(UInt32Array::from(std::mem::take(&mut self.ue))),
            opt_array!(self.rnti, UInt16Array),
            opt_array!(self.drb, UInt8Array),
            opt_array!(self.qfi, UInt8Array),
            dict(std::mem::take(&mut self.slice), None, slices),
            Arc::new(UInt32Array::from(std::mem::take(&mut self.flow))),
            Arc::new(UInt64Array::from(std::mem::take(&mut self.pkt))),
            opt_array!(self.sn, UInt32Array),
            opt_array!(self.seg_offset, UInt32Array),
            Arc::new(BooleanArray::new(seg_last.into(), seg_last_nulls)),
            Arc::new(UInt32Array::from(std::mem::take(&mut self.bytes))),
            dict(queue, queue_nulls, Queue::NAMES),
            opt_array!(self.queue_bytes, UInt64Array),
            opt_array!(self.queue_pkts, UInt32Array),
            Arc::new(UInt8Array::from(std::mem::take(&mut self.retx))),
            dict(reason, reason_nulls, Reason::NAMES),
            Arc::new(UInt8Array::from(std::mem::take(&mut self.ecn))),
        ];
        RecordBatch::try_new(packet_schema(), cols).expect("columns match the schema")
    }
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
        self.sinr_db.push(e.sinr_db);
        self.prbs_used.push(e.prbs_used);
        self.prbs_total.push(e.prbs_total);
        self.nof_ues_scheduled.push(e.nof_ues_scheduled);
    }

    fn len(&self) -> usize {
        self.t_ns.len()
    }

    fn take_batch(&mut self) -> RecordBatch {
        let (ndi, ndi_n) = self.ndi.take();
        let (ack, ack_n) = self.ack.take();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(std::mem::take(&mut self.t_ns))),
            Arc::new(UInt64Array::from(std::mem::take(&mut self.slot))),
            Arc::new(UInt16Array::from(std::mem::take(&mut self.sfn))),
            Arc::new(UInt8Array::from(std::mem::take(&mut self.slot_in_frame))),
            dict(std::mem::take(&mut self.dir), None, Dir::NAMES),
            opt_array!(self.ue, UInt32Array),
            opt_array!(self.rnti, UInt16Array),
            Arc::new(UInt16Array::from(std::mem::take(&mut self.prbs))),
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

    fn len(&self) -> usize {
        self.t_ns.len()
    }

    fn take_batch(&mut self) -> RecordBatch {
        let (dir, dir_n) = self.dir.take();
        let kinds = self.kinds.clone();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(std::mem::take(&mut self.t_ns))),
            dict(std::mem::take(&mut self.node), None, Node::NAMES),
            dict(std::mem::take(&mut self.layer), None, Layer::NAMES),
            dict(std::mem::take(&mut self.kind), None, &kinds),
            dict(dir, dir_n, Dir::NAMES),
            opt_array!(self.ue, UInt32Array),
            opt_array!(self.drb, UInt8Array),
            opt_array!(self.sn, Int64Array),
            opt_array!(self.value, Float64Array),
            Arc::new(StringArray::from(std::mem::take(&mut self.detail))),
        ];
        RecordBatch::try_new(control_schema(), cols).expect("columns match the schema")
    }
}

enum Msg {
    Batch(Table, RecordBatch),
    Close,
}

fn writer_properties(table: Table) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_writer_version(WriterVersion::PARQUET_2_0)
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 is valid")))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        // Min/max statistics on every column cost ~40 % of the encoding time; readers prune row
        // groups by time and packet id, so only those columns carry (chunk-level) statistics.
        .set_statistics_enabled(EnabledStatistics::None)
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            "scout.schema_version".to_string(),
            SCHEMA_VERSION.to_string(),
        )]));
    // Monotone-ish integers: delta encoding, no dictionary (dictionaries of unique ids only cost).
    let delta: &[&str] = match table {
        Table::Packet => &["t_ns", "pkt"],
        Table::Slot => &["t_ns", "slot"],
        Table::Control => &["t_ns"],
    };
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
    for f in table.schema().fields() {
        let numeric = f.data_type().is_primitive() || matches!(f.data_type(), DataType::Boolean);
        if numeric && !delta.contains(&f.name().as_str()) {
            let path = ColumnPath::from(f.name().as_str());
            b = b.set_column_dictionary_enabled(path.clone(), false).set_column_encoding(path, Encoding::PLAIN);
        }
    }
    b.build()
}

struct FileState {
    partial: PathBuf,
    writer: ArrowWriter<fs::File>,
}

fn writer_thread(events_dir: PathBuf, rx: Receiver<Msg>) -> Result<(), WriteError> {
    let mut files: Vec<FileState> = Vec::with_capacity(3);
    for table in Table::ALL {
        let partial = events_dir.join(format!("{}.partial", table.file_name()));
        let file = fs::File::create(&partial).map_err(io_err(&partial))?;
        let writer = ArrowWriter::try_new(file, table.schema(), Some(writer_properties(table)))
            .map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
        files.push(FileState { partial, writer });
    }
    let idx = |t: Table| t as usize;
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Batch(table, batch) => {
                let f = &mut files[idx(table)];
                f.writer
                    .write(&batch)
                    .map_err(|e| WriteError::Parquet { path: f.partial.clone(), message: e.to_string() })?;
            }
            Msg::Close => break,
        }
    }
    for (table, f) in Table::ALL.into_iter().zip(files) {
        let FileState { partial, writer } = f;
        writer.close().map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
        let fin = events_dir.join(table.file_name());
        fs::rename(&partial, &fin).map_err(io_err(&fin))?;
    }
    Ok(())
}

/// Writes a run directory. Implements [`Sink`], so the model writes straight into it.
pub struct RunWriter {
    dir: PathBuf,
    meta: Value,
    slices: Vec<&'static str>,
    packet: PacketCols,
    slot: SlotCols,
    control: ControlCols,
    rows: [u64; 3],
    tx: Option<SyncSender<Msg>>,
    thread: Option<JoinHandle<Result<(), WriteError>>>,
    /// Rows that could not be handed to a writer thread that had already failed.
    lost_rows: u64,
}

impl RunWriter {
    /// Creates `dir` (and `dir/events`), writes `run.json` with `"complete": false` and the given
    /// metadata, and starts the writer thread. `slices` names the slice dictionary.
    ///
    /// Fails if `dir/run.json` exists: a run directory is never silently overwritten.
    pub fn create(dir: &Path, meta: Value, slices: &[String]) -> Result<Self, WriteError> {
        let run_json = dir.join("run.json");
        if run_json.exists() {
            return Err(WriteError::Exists { path: dir.to_path_buf() });
        }
        let events_dir = dir.join("events");
        fs::create_dir_all(&events_dir).map_err(io_err(&events_dir))?;
        let mut meta = meta;
        meta["schema_version"] = json!(SCHEMA_VERSION);
        meta["complete"] = json!(false);
        write_json_atomically(&run_json, &meta)?;
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        let thread = std::thread::Builder::new()
            .name("scout-writer".into())
            .spawn(move || writer_thread(events_dir, rx))
            .map_err(io_err(dir))?;
        // Slice names live as long as the process: leaking a handful of short strings once per run
        // lets every batch reuse them as the dictionary without copying.
        let slices = slices.iter().map(|s| &*Box::leak(s.clone().into_boxed_str())).collect();
        Ok(RunWriter {
            dir: dir.to_path_buf(),
            meta,
            slices,
            packet: PacketCols::default(),
            slot: SlotCols::default(),
            control: ControlCols::default(),
            rows: [0; 3],
            tx: Some(tx),
            thread: Some(thread),
            lost_rows: 0,
        })
    }

    /// Rows written so far per table (`packet_events`, `slot_events`, `control_events`).
    pub fn rows(&self) -> [u64; 3] {
        self.rows
    }

    fn send(&mut self, table: Table, batch: RecordBatch) {
        let n = batch.num_rows() as u64;
        let ok = self.tx.as_ref().is_some_and(|tx| tx.send(Msg::Batch(table, batch)).is_ok());
        if !ok {
            self.lost_rows += n;
        }
    }

    fn flush(&mut self, table: Table) {
        let batch = match table {
            Table::Packet if self.packet.len() > 0 => self.packet.take_batch(&self.slices),
            Table::Slot if self.slot.len() > 0 => self.slot.take_batch(),
            Table::Control if self.control.len() > 0 => self.control.take_batch(),
            _ => return,
        };
        self.send(table, batch);
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
        merge(&mut meta, extra);
        let counts = &mut meta["counts"];
        if !counts.is_object() {
            *counts = json!({});
        }
        counts["events"] = json!({
            "packet_events": self.rows[0],
            "slot_events": self.rows[1],
            "control_events": self.rows[2],
        });
        counts["telemetry_lost"] = json!(0);
        meta["complete"] = json!(true);
        write_json_atomically(&self.dir.join("run.json"), &meta)?;
        Ok(meta)
    }
}

impl Sink for RunWriter {
    #[inline]
    fn packet(&mut self, ev: PacketEvent) {
        self.packet.push(ev);
        self.rows[0] += 1;
        if self.packet.len() >= BATCH_ROWS {
            self.flush(Table::Packet);
        }
    }

    fn slot(&mut self, ev: SlotEvent) {
        self.slot.push(ev);
        self.rows[1] += 1;
        if self.slot.len() >= BATCH_ROWS {
            self.flush(Table::Slot);
        }
    }

    fn control(&mut self, ev: ControlEvent) {
        self.control.push(ev);
        self.rows[2] += 1;
        if self.control.len() >= BATCH_ROWS {
            self.flush(Table::Control);
        }
    }
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
    let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(&text).and_then(|_| f.write_all(b"\n")).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    fs::rename(&tmp, path).map_err(io_err(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn pe(i: i64) -> PacketEvent {
        PacketEvent {
            t_ns: i,
            node: Node::GnbDu,
            layer: Layer::Rlc,
            point: Point::Enqueue,
            dir: Dir::Dl,
            ue: 1,
            rnti: Some(0x4601),
            drb: Some(1),
            qfi: Some(9),
            slice: 0,
            flow: 0,
            pkt: i as u64,
            sn: if i % 2 == 0 { Some(i as u32) } else { None },
            seg_offset: None,
            seg_last: None,
            bytes: 1500,
            queue: Some(Queue::RlcSdu),
            queue_bytes: Some(3000),
            queue_pkts: Some(2),
            retx: 0,
            reason: None,
            ecn: 0,
        }
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
}
