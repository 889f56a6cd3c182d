//! The `tti` table: the run's slot events ordered by (`t_ns`, `dir`, `ue`), each with its HARQ
//! outcome (`harq`: `ack`, `nack` or null), the cell's utilisation in that slot (`prbs_used /
//! prbs_total`, null without a total) and whether it is a retransmission (`is_retx`:
//! `retx_index > 0`). `engine.tti` (Ibis) is the reference; the Python tests compare the two.
//!
//! A database writes this table with a sort of every slot row and arrow-rs's general writer
//! (0.45–0.6 s for the 1.2 M rows of a 360-s run on two cores); the rows arrive almost in order,
//! so here only a 24-byte key per row is sorted and the rows are gathered in that order, 64 Ki at
//! a time, straight into the event tables' encoding.
//!
//! Ties keep the file's order (the sort key ends with the row's place); nulls sort last, as in
//! Ibis. The table is written only for slot tables of Scout's own schema
//! (`scout_events::writer::slot_schema`): other types (a foreign file) are left to the relational
//! engine, which says what it could not read.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt16Type, UInt32Type, UInt8Type};
use arrow_array::{Array, ArrayRef, BooleanArray, DictionaryArray, Float64Array, RecordBatch, StringArray, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

use crate::{Error, Stop};

/// Rows gathered and written at a time.
const CHUNK_ROWS: usize = 1 << 16;

/// The columns the order and the derived columns read, with the types they must have.
fn needed() -> [(&'static str, DataType); 7] {
    [
        ("t_ns", DataType::Int64),
        ("dir", crate::table::dict()),
        ("ue", DataType::UInt32),
        ("ack", DataType::Boolean),
        ("retx_index", DataType::UInt8),
        ("prbs_used", DataType::UInt16),
        ("prbs_total", DataType::UInt16),
    ]
}

/// Writes `out` (through `out.partial`) from the slot table `slot`; returns its rows, or `None`
/// when the table is not of Scout's schema (nothing is written: the relational engine does it).
pub fn write(slot: &Path, out: &Path, stop: &Stop) -> Result<Option<u64>, Error> {
    let f = File::open(slot).map_err(|e| Error::Io { path: slot.to_path_buf(), source: e })?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| Error::parquet(slot, e))?;
    let schema = b.schema().clone();
    let ours = needed().iter().all(|(name, t)| schema.field_with_name(name).is_ok_and(|f| f.data_type() == t));
    if !ours {
        return Ok(None);
    }
    let mut batches = Vec::new();
    for batch in b.with_batch_size(CHUNK_ROWS).build().map_err(|e| Error::parquet(slot, e))? {
        batches.push(batch.map_err(|e| Error::parquet(slot, e))?);
        stop.check()?;
    }
    let order = order(&batches);
    stop.check()?;

    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new("harq", crate::table::dict(), true)));
    fields.push(Arc::new(Field::new("utilisation", DataType::Float64, true)));
    fields.push(Arc::new(Field::new("is_retx", DataType::Boolean, true)));
    let out_schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let props = scout_events::writer::properties(&out_schema, &["t_ns", "slot"]);
    let partial = scout_events::partial_path(out);
    let file = File::create(&partial).map_err(|e| Error::Io { path: partial.clone(), source: e })?;
    let mut w = ArrowWriter::try_new(file, out_schema.clone(), Some(props)).map_err(|e| Error::parquet(&partial, e))?;
    for (k, v) in crate::table::meta() {
        w.append_key_value_metadata(parquet::file::metadata::KeyValue::new(k, v));
    }
    let refs: Vec<&RecordBatch> = batches.iter().collect();
    for rows in order.chunks(CHUNK_ROWS) {
        stop.check()?;
        let at: Vec<(usize, usize)> = rows.iter().map(|k| (k.batch as usize, k.row as usize)).collect();
        let chunk =
            arrow_select::interleave::interleave_record_batch(&refs, &at).map_err(|e| Error::parquet(slot, e))?;
        let mut columns = chunk.columns().to_vec();
        columns.extend(derived(&chunk));
        let chunk = RecordBatch::try_new(out_schema.clone(), columns).map_err(|e| Error::parquet(&partial, e))?;
        w.write(&chunk).map_err(|e| Error::parquet(&partial, e))?;
    }
    w.close().map_err(|e| Error::parquet(&partial, e))?;
    std::fs::rename(&partial, out).map_err(|e| Error::Io { path: out.to_path_buf(), source: e })?;
    Ok(Some(order.len() as u64))
}

/// A row's place in the order: (`t_ns`, `dir`'s rank among the names, then `ue`, nulls last), then
/// its place in the file.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    t_ns: i64,
    /// `dir`'s rank in bits 33.. (null: 255), `ue` in bits 0..33 (null: 2^32).
    dir_ue: u64,
    batch: u32,
    row: u32,
}

/// The rows of `batches` (of Scout's slot schema) in the table's order.
fn order(batches: &[RecordBatch]) -> Vec<Key> {
    let n = batches.iter().map(RecordBatch::num_rows).sum();
    let mut keys = Vec::with_capacity(n);
    for (bi, b) in batches.iter().enumerate() {
        let t = b.column_by_name("t_ns").expect("checked").as_primitive::<arrow_array::types::Int64Type>();
        let dir = b.column_by_name("dir").expect("checked").as_dictionary::<UInt8Type>();
        let ue = b.column_by_name("ue").expect("checked").as_primitive::<UInt32Type>();
        // Each batch's dictionary: the rank of each name among them, by the names' byte order.
        let names = dir.values().as_string::<i32>();
        let mut sorted: Vec<&str> = names.iter().map(|s| s.unwrap_or("")).collect();
        sorted.sort_unstable();
        let rank: Vec<u64> =
            names.iter().map(|s| sorted.binary_search(&s.unwrap_or("")).expect("its own name") as u64).collect();
        for r in 0..b.num_rows() {
            let d = if dir.is_null(r) { 255 } else { rank[dir.keys().value(r) as usize] };
            let u = if ue.is_null(r) { 1 << 32 } else { ue.value(r) as u64 };
            keys.push(Key { t_ns: t.value(r), dir_ue: (d << 33) | u, batch: bi as u32, row: r as u32 });
        }
    }
    // Runs of rows already in order are most of the table: the sort merges them.
    keys.sort();
    keys
}

/// `harq`, `utilisation` and `is_retx` of a chunk of slot rows.
fn derived(chunk: &RecordBatch) -> [ArrayRef; 3] {
    let col = |name: &str| chunk.column_by_name(name).expect("checked");
    let ack = col("ack").as_boolean();
    let keys: UInt8Array = ack.iter().map(|a| a.map(|a| if a { 0 } else { 1 })).collect();
    let harq = DictionaryArray::<UInt8Type>::try_new(keys, Arc::new(StringArray::from(vec!["ack", "nack"])))
        .expect("keys 0 and 1 of two names");
    let used = col("prbs_used").as_primitive::<UInt16Type>();
    let total = col("prbs_total").as_primitive::<UInt16Type>();
    let utilisation: Float64Array = used
        .iter()
        .zip(total.iter())
        .map(|(u, t)| match (u, t) {
            (Some(u), Some(t)) if t > 0 => Some(u as f64 / t as f64),
            _ => None,
        })
        .collect();
    let retx = col("retx_index").as_primitive::<UInt8Type>();
    let is_retx: BooleanArray = retx.iter().map(|r| r.map(|r| r > 0)).collect();
    [Arc::new(harq), Arc::new(utilisation), Arc::new(is_retx)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slot row's `t_ns`, `dir`, `ue`, `ack`, `retx_index`, `prbs_used`, `prbs_total`.
    type Row<'a> = (i64, &'a str, Option<u32>, Option<bool>, Option<u8>, Option<u16>, Option<u16>);

    fn slot_batch(rows: &[Row]) -> RecordBatch {
        let schema = scout_events::writer::slot_schema();
        let n = rows.len();
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| -> ArrayRef {
                match f.name().as_str() {
                    "t_ns" => Arc::new(arrow_array::Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                    "dir" => Arc::new(rows.iter().map(|r| r.1).collect::<DictionaryArray<UInt8Type>>()),
                    "ue" => Arc::new(rows.iter().map(|r| r.2).collect::<arrow_array::UInt32Array>()),
                    "ack" => Arc::new(rows.iter().map(|r| r.3).collect::<BooleanArray>()),
                    "retx_index" => Arc::new(rows.iter().map(|r| r.4).collect::<UInt8Array>()),
                    "prbs_used" => Arc::new(rows.iter().map(|r| r.5).collect::<arrow_array::UInt16Array>()),
                    "prbs_total" => Arc::new(rows.iter().map(|r| r.6).collect::<arrow_array::UInt16Array>()),
                    _ if f.is_nullable() => arrow_array::new_null_array(f.data_type(), n),
                    _ => zeros(f.data_type(), n),
                }
            })
            .collect();
        RecordBatch::try_new(schema, columns).unwrap()
    }

    fn zeros(t: &DataType, n: usize) -> ArrayRef {
        match t {
            DataType::UInt64 => Arc::new(arrow_array::UInt64Array::from(vec![0; n])),
            DataType::UInt16 => Arc::new(arrow_array::UInt16Array::from(vec![0; n])),
            DataType::UInt8 => Arc::new(UInt8Array::from(vec![0; n])),
            other => panic!("no zeros for {other}"),
        }
    }

    fn read(path: &Path) -> RecordBatch {
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        let schema = b.schema().clone();
        let batches: Vec<RecordBatch> = b.build().unwrap().map(Result::unwrap).collect();
        arrow_select::concat::concat_batches(&schema, &batches).unwrap()
    }

    #[test]
    fn rows_are_ordered_by_time_direction_and_ue_with_nulls_last_and_ties_in_file_order() {
        let dir = std::env::temp_dir().join(format!("scout-tti-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slot = dir.join("slot.parquet");
        // Two batches (files of several row groups are read batch by batch); rows out of order.
        let a = slot_batch(&[
            (2, "ul", Some(1), Some(true), Some(0), Some(10), Some(100)),
            (1, "ul", None, None, None, Some(5), Some(0)),
            (1, "dl", Some(7), Some(false), Some(1), None, None),
        ]);
        let b = slot_batch(&[
            (1, "dl", None, None, None, Some(50), Some(100)),
            (1, "dl", Some(3), None, Some(2), None, None),
            (1, "dl", Some(7), Some(true), Some(0), None, None),
        ]);
        let props = parquet::file::properties::WriterProperties::builder().set_max_row_group_row_count(Some(3)).build();
        let mut w = ArrowWriter::try_new(File::create(&slot).unwrap(), a.schema(), Some(props)).unwrap();
        w.write(&a).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
        let out = dir.join("tti.parquet");
        assert_eq!(write(&slot, &out, &Stop::default()).unwrap(), Some(6));
        let t = read(&out);
        let col = |n: &str| t.column_by_name(n).unwrap().clone();
        let t_ns: Vec<i64> = col("t_ns").as_primitive::<arrow_array::types::Int64Type>().values().to_vec();
        let ue: Vec<Option<u32>> = col("ue").as_primitive::<UInt32Type>().iter().collect();
        let dirs = arrow_cast_free_strings(&col("dir"));
        assert_eq!(t_ns, [1, 1, 1, 1, 1, 2]);
        assert_eq!(dirs, ["dl", "dl", "dl", "dl", "ul", "ul"]);
        assert_eq!(ue, [Some(3), Some(7), Some(7), None, None, Some(1)]);
        // The two rows of (1, dl, 7) keep the file's order: the NACK (first batch) first.
        assert_eq!(arrow_cast_free_strings(&col("harq")), ["", "nack", "ack", "", "", "ack"]);
        assert_eq!(col("harq").null_count(), 3);
        let util: Vec<Option<f64>> =
            col("utilisation").as_primitive::<arrow_array::types::Float64Type>().iter().collect();
        assert_eq!(util, [None, None, None, Some(0.5), None, Some(0.1)]);
        let retx: Vec<Option<bool>> = col("is_retx").as_boolean().iter().collect();
        assert_eq!(retx, [Some(true), Some(true), Some(false), None, None, Some(false)]);
        assert!(!dir.join("tti.parquet.partial").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_slot_table_of_other_types_is_left_to_the_relational_engine() {
        let dir = std::env::temp_dir().join(format!("scout-tti-foreign-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let slot = dir.join("slot.parquet");
        // `ue` as Int64, as a foreign tool would write it.
        let batch = RecordBatch::try_from_iter([
            ("t_ns", Arc::new(arrow_array::Int64Array::from(vec![1])) as ArrayRef),
            ("ue", Arc::new(arrow_array::Int64Array::from(vec![1])) as ArrayRef),
        ])
        .unwrap();
        let mut w = ArrowWriter::try_new(File::create(&slot).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        assert_eq!(write(&slot, &dir.join("tti.parquet"), &Stop::default()).unwrap(), None);
        assert!(!dir.join("tti.parquet").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A dictionary column's values as strings ("" for null).
    fn arrow_cast_free_strings(a: &ArrayRef) -> Vec<String> {
        let d = a.as_dictionary::<UInt8Type>();
        let names = d.values().as_string::<i32>();
        (0..d.len())
            .map(|i| if d.is_null(i) { String::new() } else { names.value(d.keys().value(i) as usize).to_string() })
            .collect()
    }
}
