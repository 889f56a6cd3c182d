//! Each table's Arrow schema, and its columns as they fill: packet events as fixed-size column
//! batches, slot and control events as growing vectors.

use super::*;
use crate::chunk::Value as ChunkValue;

pub(super) fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8))
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
pub(super) struct Opt<T> {
    pub(super) values: Vec<T>,
    pub(super) valid: Vec<bool>,
    pub(super) nulls: usize,
}

impl<T: Default + Copy> Opt<T> {
    #[inline]
    pub(super) fn push(&mut self, v: Option<T>) {
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

    pub(super) fn take(&mut self) -> (Vec<T>, Option<arrow_buffer::NullBuffer>) {
        let values = take_full(&mut self.values);
        let valid = take_full(&mut self.valid);
        let nulls = std::mem::replace(&mut self.nulls, 0);
        let buf = (nulls > 0).then(|| arrow_buffer::NullBuffer::from(valid));
        (values, buf)
    }
}

/// Takes a column's values, leaving an empty vector with room for a whole batch (so the next batch
/// never reallocates while it fills).
pub(super) fn take_full<T>(v: &mut Vec<T>) -> Vec<T> {
    std::mem::replace(v, Vec::with_capacity(BATCH_ROWS))
}

/// Packet events per batch handed to the writer thread.
pub const PACKET_BATCH_ROWS: usize = 1 << 16;
pub(super) const PB: usize = PACKET_BATCH_ROWS;

/// A fixed-size column of a packet batch: indexing it with `i & (PB - 1)` needs no bounds check.
pub(super) type Fixed<T> = Box<[T; PB]>;

pub(super) fn fixed<T: Copy + Default>() -> Fixed<T> {
    vec![T::default(); PB].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("PB elements"))
}

/// A nullable column of a packet batch: one definition level per row, the present values packed.
pub(super) struct Nullable<T> {
    pub(super) defs: Fixed<u8>,
    pub(super) values: Fixed<T>,
    pub(super) present: usize,
}

impl<T: Copy + Default> Nullable<T> {
    pub(super) fn new() -> Self {
        Nullable { defs: fixed(), values: fixed(), present: 0 }
    }

    /// Row `i`'s value, without a branch: an absent value is written and then overwritten.
    #[inline(always)]
    pub(super) fn put(&mut self, i: usize, v: Option<T>) {
        self.defs[i & (PB - 1)] = v.is_some() as u8;
        self.values[self.present & (PB - 1)] = v.unwrap_or_default();
        self.present += v.is_some() as usize;
    }

    pub(super) fn parts(&self, rows: usize) -> (&[u8], &[T]) {
        (&self.defs[..rows], &self.values[..self.present])
    }
}

/// A column of a packet batch: its row `i`'s value put without a branch or a capacity check,
/// and its filled part appended to the column's chunk.
pub(super) trait BatchColumn {
    type In;
    fn new() -> Self;
    fn put(&mut self, i: usize, v: Self::In);
    /// Empties it for the next batch.
    fn clear(&mut self);
    fn append_to(&self, c: &mut Column, rows: usize, z: &mut Zstd) -> Result<(), ParquetError>;
}

impl<T: ChunkValue + Default> BatchColumn for Fixed<T> {
    type In = T;
    fn new() -> Self {
        fixed()
    }
    #[inline(always)]
    fn put(&mut self, i: usize, v: T) {
        self[i & (PB - 1)] = v;
    }
    fn clear(&mut self) {}
    fn append_to(&self, c: &mut Column, rows: usize, z: &mut Zstd) -> Result<(), ParquetError> {
        c.append(&self[..rows], z)
    }
}

impl<T: ChunkValue + Default> BatchColumn for Nullable<T> {
    type In = Option<T>;
    fn new() -> Self {
        Nullable::new()
    }
    #[inline(always)]
    fn put(&mut self, i: usize, v: Option<T>) {
        Nullable::put(self, i, v)
    }
    fn clear(&mut self) {
        self.present = 0;
    }
    fn append_to(&self, c: &mut Column, rows: usize, z: &mut Zstd) -> Result<(), ParquetError> {
        c.append_nullable(self.parts(rows), z)
    }
}

/// Declares the columns of `packet_events` once, in their order: each one's name, its Arrow
/// type, its batch column and how an event's field becomes it. From the list follow the
/// schema, [`PacketBatch`] and its `push`, `clear` and `append`.
macro_rules! packet_columns {
    ($($name:ident: $arrow:expr, $store:ty = |$e:ident| $conv:expr;)+) => {
        /// The Arrow schema of `packet_events`.
        pub fn packet_schema() -> SchemaRef {
            use DataType::*;
            Arc::new(Schema::new(vec![$({
                let (ty, nullable): (DataType, bool) = $arrow;
                Field::new(stringify!($name), ty, nullable)
            }),+]))
        }

        /// One batch of packet events in the columns of `packet_schema`: the writer thread turns
        /// each batch of rows it receives into columns here in one pass per row (a handful of
        /// stores per event into preallocated arrays, no capacity checks), then appends each
        /// column to its chunk. Integer columns have the width of their Parquet type (`INT32` or
        /// `INT64`), enum columns hold their keys.
        pub(super) struct PacketBatch {
            pub(super) rows: usize,
            $(pub(super) $name: $store,)+
        }

        impl PacketBatch {
            pub(super) fn new() -> Box<Self> {
                Box::new(PacketBatch { rows: 0, $($name: <$store as BatchColumn>::new(),)+ })
            }

            /// Appends a row (at most [`PACKET_BATCH_ROWS`] between clears).
            #[inline(always)]
            pub(super) fn push(&mut self, e: &PacketEvent) {
                let i = self.rows & (PB - 1);
                $({
                    let $e = e;
                    self.$name.put(i, $conv);
                })+
                self.rows += 1;
            }

            pub(super) fn clear(&mut self) {
                self.rows = 0;
                $(self.$name.clear();)+
            }

            /// How many columns it has.
            pub(super) const COLUMNS: usize = [$(stringify!($name)),+].len();

            /// Appends its rows to the table's column chunks, in the schema's order.
            pub(super) fn append(&self, c: [&mut Column; Self::COLUMNS], z: &mut Zstd) -> Result<(), ParquetError> {
                let mut c = c.into_iter();
                $(self.$name.append_to(c.next().expect("one chunk per column"), self.rows, z)?;)+
                Ok(())
            }
        }
    };
}

// Arrow type and nullability; the batch column (of the Parquet type's width); the event's field.
packet_columns! {
    t_ns: (Int64, false), Fixed<i64> = |e| e.t_ns;
    node: (dict_type(), false), Fixed<u8> = |e| e.node as u8;
    layer: (dict_type(), false), Fixed<u8> = |e| e.layer as u8;
    point: (dict_type(), false), Fixed<u8> = |e| e.point as u8;
    dir: (dict_type(), false), Fixed<u8> = |e| e.dir as u8;
    ue: (UInt32, false), Fixed<u32> = |e| e.ue;
    rnti: (UInt16, true), Nullable<u32> = |e| e.rnti.map(u32::from);
    drb: (UInt8, true), Nullable<u32> = |e| e.drb.map(u32::from);
    qfi: (UInt8, true), Nullable<u32> = |e| e.qfi.map(u32::from);
    slice: (dict_type(), false), Fixed<u8> = |e| e.slice;
    flow: (UInt32, false), Fixed<u32> = |e| e.flow;
    pkt: (UInt64, false), Fixed<i64> = |e| e.pkt as i64;
    sn: (UInt32, true), Nullable<u32> = |e| e.sn;
    seg_offset: (UInt32, true), Nullable<u32> = |e| e.seg_offset;
    seg_last: (Boolean, true), Nullable<u8> = |e| e.seg_last.map(u8::from);
    bytes: (UInt32, false), Fixed<u32> = |e| e.bytes;
    queue: (dict_type(), true), Nullable<u8> = |e| e.queue.map(|q| q as u8);
    queue_bytes: (UInt64, true), Nullable<u64> = |e| e.queue_bytes;
    queue_pkts: (UInt32, true), Nullable<u32> = |e| e.queue_pkts;
    retx: (UInt8, false), Fixed<u32> = |e| u32::from(e.retx);
    reason: (dict_type(), true), Nullable<u8> = |e| e.reason.map(|r| r as u8);
    ecn: (UInt8, false), Fixed<u32> = |e| u32::from(e.ecn);
}

macro_rules! opt_array {
    ($opt:expr, $arr:ty) => {{
        let (v, n) = $opt.take();
        Arc::new(<$arr>::new(v.into(), n)) as ArrayRef
    }};
}

pub(super) fn dict(keys: Vec<u8>, nulls: Option<arrow_buffer::NullBuffer>, names: &[&str]) -> ArrayRef {
    let keys = UInt8Array::new(keys.into(), nulls);
    let values = Arc::new(StringArray::from_iter_values(names.iter()));
    // Keys are enum discriminants, always < names.len(): construction cannot fail.
    Arc::new(DictionaryArray::<UInt8Type>::try_new(keys, values).expect("enum key in range"))
}

#[derive(Default)]
pub(super) struct SlotCols {
    pub(super) t_ns: Vec<i64>,
    pub(super) slot: Vec<u64>,
    pub(super) sfn: Vec<u16>,
    pub(super) slot_in_frame: Vec<u8>,
    pub(super) dir: Vec<u8>,
    pub(super) ue: Opt<u32>,
    pub(super) rnti: Opt<u16>,
    pub(super) prbs: Vec<u16>,
    pub(super) mcs: Opt<u8>,
    pub(super) tbs: Opt<u32>,
    pub(super) layers: Opt<u8>,
    pub(super) harq_id: Opt<u8>,
    pub(super) rv: Opt<u8>,
    pub(super) ndi: Opt<bool>,
    pub(super) retx_index: Opt<u8>,
    pub(super) ack: Opt<bool>,
    pub(super) bsr_bytes: Opt<u64>,
    pub(super) cqi: Opt<u8>,
    pub(super) ri: Opt<u8>,
    pub(super) sinr_db: Opt<f32>,
    pub(super) prbs_used: Opt<u16>,
    pub(super) prbs_total: Opt<u16>,
    pub(super) nof_ues_scheduled: Opt<u16>,
}

impl SlotCols {
    pub(super) fn push(&mut self, e: SlotEvent) {
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

    pub(super) fn take_batch(&mut self) -> RecordBatch {
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
pub(super) struct ControlCols {
    pub(super) t_ns: Vec<i64>,
    pub(super) node: Vec<u8>,
    pub(super) layer: Vec<u8>,
    pub(super) kind: Vec<u8>,
    pub(super) dir: Opt<u8>,
    pub(super) ue: Opt<u32>,
    pub(super) drb: Opt<u8>,
    pub(super) sn: Opt<i64>,
    pub(super) value: Opt<f64>,
    pub(super) detail: Vec<Option<String>>,
}

impl ControlCols {
    pub(super) fn push(&mut self, e: ControlEvent) {
        self.t_ns.push(e.t_ns);
        self.node.push(e.node as u8);
        self.layer.push(e.layer as u8);
        self.kind.push(e.kind as u8);
        self.dir.push(e.dir.map(|d| d as u8));
        self.ue.push(e.ue);
        self.drb.push(e.drb);
        self.sn.push(e.sn);
        self.value.push(e.value);
        self.detail.push(e.detail);
    }

    pub(super) fn take_batch(&mut self) -> RecordBatch {
        let (dir, dir_n) = self.dir.take();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(take_full(&mut self.t_ns))),
            dict(take_full(&mut self.node), None, Node::NAMES),
            dict(take_full(&mut self.layer), None, Layer::NAMES),
            dict(take_full(&mut self.kind), None, ControlKind::NAMES),
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
