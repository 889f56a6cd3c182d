//! A Parquet file of flat columns, every column encoded by Scout's own chunk encoder
//! ([`crate::chunk`]) — for tables other than the three event tables that are large enough for
//! arrow-rs's general writer to cost (the analysis's journeys and components: tens of millions of
//! rows with enum columns, which arrow-rs would re-intern string by string).
//!
//! The caller declares an Arrow schema and hands over columns as typed slices, batch by batch:
//!
//! | Arrow type | Parquet | slice |
//! |---|---|---|
//! | `Dictionary<UInt8, Utf8>` | `RLE_DICTIONARY`, names given at creation | [`Data::U8`] keys |
//! | `Boolean` | PLAIN bits | [`Data::U8`] 0/1 |
//! | `Int64` or `UInt64` named in `delta` | `DELTA_BINARY_PACKED` with min/max | [`Data::I64`] (ids as `i64`) |
//! | `Int64`, `UInt64`, `Float64` | PLAIN (or a numeric dictionary, see `chunk`) | [`Data::I64`], [`Data::U64`], [`Data::F64`] |
//! | `UInt8`, `UInt16`, `UInt32`, `Int32` | PLAIN `INT32` | [`Data::U32`] (widened) |
//!
//! A nullable column takes one definition level per row (1 = present) and the present values only.
//! The file is written as `NAME.partial` and renamed to its name by [`TableWriter::close`].

use std::fs;
use std::path::{Path, PathBuf};

use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;

use crate::chunk::{Column, Kind, Zstd};
use crate::writer::{WriteError, ROW_GROUP_ROWS};

/// One column's rows of a batch.
pub enum Data<'a> {
    /// Enum keys, or booleans as 0/1.
    U8(&'a [u8]),
    /// Any integer column stored as Parquet `INT32` (`u8`, `u16`, `u32`, `i32` widened).
    U32(&'a [u32]),
    U64(&'a [u64]),
    I64(&'a [i64]),
    F64(&'a [f64]),
}

/// One column of a batch: its values and, for a nullable column, one definition level per row.
pub struct Slice<'a> {
    pub defs: Option<&'a [u8]>,
    pub data: Data<'a>,
}

impl<'a> Slice<'a> {
    /// A column without nulls.
    pub fn all(data: Data<'a>) -> Self {
        Slice { defs: None, data }
    }

    /// A nullable column: `defs[i]` is 1 where row `i` is present; `data` holds the present rows.
    pub fn nullable(defs: &'a [u8], data: Data<'a>) -> Self {
        Slice { defs: Some(defs), data }
    }
}

/// Writes one table; see the module documentation.
pub struct TableWriter {
    path: PathBuf,
    partial: PathBuf,
    file: SerializedFileWriter<fs::File>,
    columns: Vec<Column>,
    zstd: Zstd,
    rows_in_group: usize,
    /// Scratch for 8-byte values handed over as `i64`/`f64`.
    wide: Vec<u64>,
}

impl TableWriter {
    /// Creates `path` (as `path.partial` until closed) for `schema`. `dicts[i]` is the names of
    /// field `i` when it is an enum (empty otherwise); `delta` names the `Int64` columns to
    /// delta-encode (times and ids: small and read by range); `metadata` is stored in the footer.
    pub fn create(
        path: &Path,
        schema: SchemaRef,
        dicts: &[&[&str]],
        delta: &[&str],
        metadata: Vec<(String, String)>,
    ) -> Result<Self, WriteError> {
        let partial = crate::partial_path(path);
        let perr = |e: ParquetError| WriteError::Parquet { path: partial.clone(), message: e.to_string() };
        if dicts.len() != schema.fields().len() {
            return Err(perr(ParquetError::General(format!(
                "{} dictionaries for {} fields",
                dicts.len(),
                schema.fields().len()
            ))));
        }
        let file = fs::File::create(&partial).map_err(|source| WriteError::Io { path: partial.clone(), source })?;
        let level = ZstdLevel::try_new(1).map_err(perr)?;
        let props = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_2_0)
            .set_compression(Compression::ZSTD(level))
            .set_statistics_enabled(EnabledStatistics::None)
            .set_key_value_metadata(Some(metadata.into_iter().map(|(k, v)| KeyValue::new(k, v)).collect()))
            .build();
        // ArrowWriter converts and embeds the Arrow schema (readers see enums as dictionaries).
        let (file, _) = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .and_then(|w| w.into_serialized_writer())
            .map_err(perr)?;
        let descr = file.schema_descr();
        let mut columns = Vec::with_capacity(schema.fields().len());
        for (i, f) in schema.fields().iter().enumerate() {
            let kind = match f.data_type() {
                DataType::Dictionary(k, v) if **k == DataType::UInt8 && **v == DataType::Utf8 => Kind::Dict,
                DataType::Boolean => Kind::Bool,
                DataType::Int64 | DataType::UInt64 if delta.contains(&f.name().as_str()) => Kind::Delta,
                DataType::Int64 | DataType::UInt64 | DataType::Float64 => Kind::Plain(8),
                DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::Int32 => Kind::Plain(4),
                other => {
                    return Err(perr(ParquetError::General(format!("column {}: type {other} not supported", f.name()))))
                }
            };
            columns.push(Column::new(descr.column(i), kind, dicts[i]));
        }
        let zstd = Zstd::new(level).map_err(perr)?;
        Ok(TableWriter { path: path.to_path_buf(), partial, file, columns, zstd, rows_in_group: 0, wide: Vec::new() })
    }

    fn err(&self, e: ParquetError) -> WriteError {
        WriteError::Parquet { path: self.partial.clone(), message: e.to_string() }
    }

    /// Appends a batch: one [`Slice`] per field, in schema order, all with the same number of rows.
    pub fn append(&mut self, batch: &[Slice]) -> Result<(), WriteError> {
        self.append_inner(batch).map_err(|e| self.err(e))?;
        if self.rows_in_group >= ROW_GROUP_ROWS {
            self.flush_row_group()?;
        }
        Ok(())
    }

    fn append_inner(&mut self, batch: &[Slice]) -> Result<(), ParquetError> {
        if batch.len() != self.columns.len() {
            return Err(ParquetError::General(format!("{} columns for {} fields", batch.len(), self.columns.len())));
        }
        let rows = |s: &Slice| {
            s.defs.map_or(
                match s.data {
                    Data::U8(v) => v.len(),
                    Data::U32(v) => v.len(),
                    Data::U64(v) => v.len(),
                    Data::I64(v) => v.len(),
                    Data::F64(v) => v.len(),
                },
                |d| d.len(),
            )
        };
        let n = batch.first().map_or(0, rows);
        if let Some(s) = batch.iter().position(|s| rows(s) != n) {
            return Err(ParquetError::General(format!("column {s} has {} rows, column 0 has {n}", rows(&batch[s]))));
        }
        for (c, s) in self.columns.iter().zip(batch) {
            let fits = matches!(
                (c.kind(), &s.data),
                (Kind::Dict | Kind::Bool, Data::U8(_))
                    | (Kind::Plain(4), Data::U32(_))
                    | (Kind::Plain(8), Data::U64(_) | Data::I64(_) | Data::F64(_))
                    | (Kind::Delta, Data::I64(_))
            );
            if !fits || s.defs.is_some() != c.nullable() {
                return Err(ParquetError::General(format!(
                    "column {}: values of the wrong type or nullability",
                    c.name()
                )));
            }
        }
        let z = &mut self.zstd;
        for (c, s) in self.columns.iter_mut().zip(batch) {
            let wide = &mut self.wide;
            let mut widen = |it: &mut dyn Iterator<Item = u64>| {
                wide.clear();
                wide.extend(it);
            };
            match (&s.data, s.defs) {
                (Data::U8(v), None) => c.append(v, z)?,
                (Data::U8(v), Some(d)) => c.append_nullable((d, v), z)?,
                (Data::U32(v), None) => c.append(v, z)?,
                (Data::U32(v), Some(d)) => c.append_nullable((d, v), z)?,
                (Data::U64(v), None) => c.append(v, z)?,
                (Data::U64(v), Some(d)) => c.append_nullable((d, v), z)?,
                (Data::I64(v), defs) if c.kind() == Kind::Delta => match defs {
                    None => c.append(v, z)?,
                    Some(d) => c.append_nullable((d, v), z)?,
                },
                (Data::I64(v), defs) => {
                    widen(&mut v.iter().map(|&x| x as u64));
                    match defs {
                        None => c.append(wide, z)?,
                        Some(d) => c.append_nullable((d, wide), z)?,
                    }
                }
                (Data::F64(v), defs) => {
                    widen(&mut v.iter().map(|x| x.to_bits()));
                    match defs {
                        None => c.append(wide, z)?,
                        Some(d) => c.append_nullable((d, wide), z)?,
                    }
                }
            }
        }
        self.rows_in_group += n;
        Ok(())
    }

    /// Grows enum field `field`'s dictionary to `names`, which must begin with the names it has:
    /// keys written so far keep their names; later keys may use the new ones.
    pub fn extend_names(&mut self, field: usize, names: &[&str]) -> Result<(), WriteError> {
        let c = self.columns.get_mut(field).ok_or_else(|| ParquetError::General(format!("no field {field}")));
        c.and_then(|c| c.extend_names(names)).map_err(|e| self.err(e))
    }

    fn flush_row_group(&mut self) -> Result<(), WriteError> {
        if self.rows_in_group == 0 {
            return Ok(());
        }
        let partial = self.partial.clone();
        let perr = |e: ParquetError| WriteError::Parquet { path: partial.clone(), message: e.to_string() };
        let mut rg = self.file.next_row_group().map_err(perr)?;
        for c in &mut self.columns {
            c.close(&mut self.zstd).and_then(|(bytes, close)| rg.append_column(&bytes, close)).map_err(perr)?;
        }
        rg.close().map_err(perr)?;
        self.rows_in_group = 0;
        Ok(())
    }

    /// Writes the last row group and the footer, then renames the file to its name.
    pub fn close(mut self) -> Result<(), WriteError> {
        self.flush_row_group()?;
        let partial = self.partial.clone();
        self.file.close().map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
        fs::rename(&self.partial, &self.path).map_err(|source| WriteError::Io { path: self.path.clone(), source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int64Type, UInt32Type};
    use arrow_array::Array;
    use arrow_schema::{Field, Schema};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::sync::Arc;

    #[test]
    fn a_table_reads_back_exactly() {
        let dir = std::env::temp_dir().join(format!("scout-table-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.parquet");
        let dict = DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::UInt64, false),
            Field::new("name", dict, false),
            Field::new("n", DataType::UInt32, true),
            Field::new("x", DataType::Float64, false),
            Field::new("t", DataType::Int64, true),
        ]));
        let names: &[&str] = &["a", "b", "c"];
        let mut w = TableWriter::create(&path, schema.clone(), &[&[], names, &[], &[], &[]], &["id"], vec![]).unwrap();
        let rows = 10_000usize;
        let ids: Vec<i64> = (0..rows as i64).map(|i| 1000 + i * 3).collect();
        let keys: Vec<u8> = (0..rows).map(|i| (i % 3) as u8).collect();
        let defs: Vec<u8> = (0..rows).map(|i| (i % 5 != 0) as u8).collect();
        let n: Vec<u32> = (0..rows as u32).filter(|i| i % 5 != 0).collect();
        let x: Vec<f64> = (0..rows).map(|i| i as f64 * 0.25).collect();
        let t: Vec<i64> = (0..rows as i64).filter(|i| i % 5 != 0).map(|i| -i).collect();
        // Two batches, the second starting mid-way.
        for r in [0..4000, 4000..rows] {
            let present = |r: &std::ops::Range<usize>| {
                defs[..r.start].iter().filter(|&&d| d == 1).count()..defs[..r.end].iter().filter(|&&d| d == 1).count()
            };
            let p = present(&r);
            w.append(&[
                Slice::all(Data::I64(&ids[r.clone()])),
                Slice::all(Data::U8(&keys[r.clone()])),
                Slice::nullable(&defs[r.clone()], Data::U32(&n[p.clone()])),
                Slice::all(Data::F64(&x[r.clone()])),
                Slice::nullable(&defs[r.clone()], Data::I64(&t[p])),
            ])
            .unwrap();
        }
        // A wrongly typed column is refused.
        let wrong: Vec<Slice> = (0..5).map(|_| Slice::all(Data::U8(&keys))).collect();
        assert!(w.append(&wrong).is_err());
        w.close().unwrap();
        let f = fs::File::open(&path).unwrap();
        let batches: Vec<_> =
            ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap().collect::<Result<_, _>>().unwrap();
        let mut i = 0usize;
        for b in &batches {
            let id = b.column(0).as_primitive::<arrow_array::types::UInt64Type>();
            let name = b.column(1).as_dictionary::<arrow_array::types::UInt8Type>();
            let names_arr = name.values().as_string::<i32>();
            let nn = b.column(2).as_primitive::<UInt32Type>();
            let xx = b.column(3).as_primitive::<arrow_array::types::Float64Type>();
            let tt = b.column(4).as_primitive::<Int64Type>();
            for k in 0..b.num_rows() {
                assert_eq!(id.value(k), ids[i] as u64);
                assert_eq!(names_arr.value(name.keys().value(k) as usize), names[keys[i] as usize]);
                assert_eq!(nn.is_valid(k), defs[i] == 1);
                if defs[i] == 1 {
                    assert_eq!(nn.value(k), i as u32);
                    assert_eq!(tt.value(k), -(i as i64));
                }
                assert_eq!(xx.value(k), x[i]);
                i += 1;
            }
        }
        assert_eq!(i, rows);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn enum_names_grow_between_batches() {
        let dir = std::env::temp_dir().join(format!("scout-table-names-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.parquet");
        let dict = DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8));
        let schema = Arc::new(Schema::new(vec![Field::new("name", dict, true)]));
        let mut w = TableWriter::create(&path, schema, &[&["a"]], &[], vec![]).unwrap();
        w.append(&[Slice::nullable(&[1, 0], Data::U8(&[0]))]).unwrap();
        // Names must keep their order: a different first name is refused, a longer list taken.
        assert!(w.extend_names(0, &["b", "a"]).is_err());
        w.extend_names(0, &["a", "b", "c"]).unwrap();
        w.extend_names(0, &["a", "b", "c"]).unwrap();
        w.append(&[Slice::nullable(&[1, 1, 1], Data::U8(&[2, 0, 1]))]).unwrap();
        w.close().unwrap();
        let f = fs::File::open(&path).unwrap();
        let mut got = Vec::new();
        for b in ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap() {
            let b = b.unwrap();
            let d = b.column(0).as_dictionary::<arrow_array::types::UInt8Type>();
            let v = d.values().as_string::<i32>();
            got.extend(
                (0..b.num_rows()).map(|k| d.is_valid(k).then(|| v.value(d.keys().value(k) as usize).to_string())),
            );
        }
        let want = [Some("a"), None, Some("c"), Some("a"), Some("b")];
        assert_eq!(got, want.map(|n| n.map(String::from)));
        fs::remove_dir_all(&dir).unwrap();
    }
}
