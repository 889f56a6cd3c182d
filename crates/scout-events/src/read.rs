//! Reading a run's `slot_events` back into [`SlotEvent`]s, for a producer that starts from a
//! recorded run (the simulator's replay of a measured radio). Columns are found by name, so a
//! run written before a nullable column was added (e.g. `ri`) reads with that column empty; a
//! column of another type than the schema's is refused by name.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::{Dir, SlotEvent};

/// Why a slot table could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a Parquet file Scout can read: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: column `{column}` is {found}; Scout's slot_events has {expected} (docs/schema.md)")]
    Column { path: PathBuf, column: &'static str, found: String, expected: String },
    #[error("{path}: row {row}: `dir` is {value:?}; accepted: dl, ul")]
    Dir { path: PathBuf, row: u64, value: String },
}

/// Every row of the slot table at `path`, in file order.
pub fn read_slot_events(path: &Path) -> Result<Vec<SlotEvent>, ReadError> {
    let pq = |e: parquet::errors::ParquetError| ReadError::Parquet { path: path.to_path_buf(), message: e.to_string() };
    let f = File::open(path).map_err(|e| ReadError::Io { path: path.to_path_buf(), source: e })?;
    let reader =
        ParquetRecordBatchReaderBuilder::try_new(f).map_err(pq)?.with_batch_size(1 << 16).build().map_err(pq)?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| ReadError::Parquet { path: path.to_path_buf(), message: e.to_string() })?;
        rows(path, &batch, &mut out)?;
    }
    Ok(out)
}

/// A column by name, checked against its schema type; `None` when absent (`required` refuses it).
fn column<'a>(
    path: &Path,
    b: &'a RecordBatch,
    name: &'static str,
    want: &DataType,
    required: bool,
) -> Result<Option<&'a ArrayRef>, ReadError> {
    let Some(c) = b.column_by_name(name) else {
        return if required {
            Err(ReadError::Column {
                path: path.into(),
                column: name,
                found: "missing".into(),
                expected: format!("{want}"),
            })
        } else {
            Ok(None)
        };
    };
    if c.data_type() != want {
        return Err(ReadError::Column {
            path: path.into(),
            column: name,
            found: format!("{}", c.data_type()),
            expected: format!("{want}"),
        });
    }
    Ok(Some(c))
}

fn rows(path: &Path, b: &RecordBatch, out: &mut Vec<SlotEvent>) -> Result<(), ReadError> {
    use DataType::*;
    let schema = crate::writer::slot_schema();
    let ty = |n: &str| schema.field_with_name(n).expect("a slot_events column").data_type().clone();
    macro_rules! prim {
        ($name:literal, $t:ty, $req:expr) => {
            column(path, b, $name, &ty($name), $req)?.map(|c| c.as_primitive::<$t>())
        };
    }
    let t_ns = prim!("t_ns", Int64Type, true).expect("required");
    let slot = prim!("slot", UInt64Type, false);
    let sfn = prim!("sfn", UInt16Type, false);
    let sif = prim!("slot_in_frame", UInt8Type, false);
    let dir = column(path, b, "dir", &ty("dir"), true)?.expect("required").as_dictionary::<UInt8Type>();
    let names = dir.values().as_string::<i32>();
    let dirs: Vec<Option<Dir>> = (0..names.len()).map(|i| Dir::from_name(names.value(i))).collect();
    let ue = prim!("ue", UInt32Type, false);
    let rnti = prim!("rnti", UInt16Type, false);
    let prbs = prim!("prbs", UInt16Type, false);
    let mcs = prim!("mcs", UInt8Type, false);
    let tbs = prim!("tbs", UInt32Type, false);
    let layers = prim!("layers", UInt8Type, false);
    let harq_id = prim!("harq_id", UInt8Type, false);
    let rv = prim!("rv", UInt8Type, false);
    let retx = prim!("retx_index", UInt8Type, false);
    let bsr = prim!("bsr_bytes", UInt64Type, false);
    let cqi = prim!("cqi", UInt8Type, false);
    let ri = prim!("ri", UInt8Type, false);
    let sinr = prim!("sinr_db", Float32Type, false);
    let used = prim!("prbs_used", UInt16Type, false);
    let total = prim!("prbs_total", UInt16Type, false);
    let nues = prim!("nof_ues_scheduled", UInt16Type, false);
    let ndi = column(path, b, "ndi", &Boolean, false)?.map(|c| c.as_boolean());
    let ack = column(path, b, "ack", &Boolean, false)?.map(|c| c.as_boolean());
    fn get<A: Array + ?Sized, T>(a: Option<&A>, i: usize, v: impl Fn(&A, usize) -> T) -> Option<T> {
        a.filter(|a| a.is_valid(i)).map(|a| v(a, i))
    }
    let first = out.len() as u64;
    for i in 0..b.num_rows() {
        let key = usize::from(dir.keys().value(i));
        let d = dirs.get(key).copied().flatten().ok_or_else(|| ReadError::Dir {
            path: path.into(),
            row: first + i as u64,
            value: names.value(key.min(names.len().saturating_sub(1))).to_string(),
        })?;
        out.push(SlotEvent {
            t_ns: t_ns.value(i),
            slot: get(slot, i, |a, i| a.value(i)).unwrap_or(0),
            sfn: get(sfn, i, |a, i| a.value(i)).unwrap_or(0),
            slot_in_frame: get(sif, i, |a, i| a.value(i)).unwrap_or(0),
            dir: d,
            ue: get(ue, i, |a, i| a.value(i)),
            rnti: get(rnti, i, |a, i| a.value(i)),
            prbs: get(prbs, i, |a, i| a.value(i)).unwrap_or(0),
            mcs: get(mcs, i, |a, i| a.value(i)),
            tbs: get(tbs, i, |a, i| a.value(i)),
            layers: get(layers, i, |a, i| a.value(i)),
            harq_id: get(harq_id, i, |a, i| a.value(i)),
            rv: get(rv, i, |a, i| a.value(i)),
            ndi: get(ndi, i, |a, i| a.value(i)),
            retx_index: get(retx, i, |a, i| a.value(i)),
            ack: get(ack, i, |a, i| a.value(i)),
            bsr_bytes: get(bsr, i, |a, i| a.value(i)),
            cqi: get(cqi, i, |a, i| a.value(i)),
            ri: get(ri, i, |a, i| a.value(i)),
            sinr_db: get(sinr, i, |a, i| a.value(i)),
            prbs_used: get(used, i, |a, i| a.value(i)),
            prbs_total: get(total, i, |a, i| a.value(i)),
            nof_ues_scheduled: get(nues, i, |a, i| a.value(i)),
        });
    }
    Ok(())
}
