//! How the tables' columns are encoded: Parquet writer properties, the zstd level, enum columns
//! handed to their encoder.

use super::*;

pub(super) fn writer_properties(table: Table) -> WriterProperties {
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
pub(super) fn zstd_level() -> ZstdLevel {
    ZstdLevel::try_new(1).expect("level 1 is valid")
}

/// Hands an Arrow enum column's keys, dictionary and validity to its encoder.
pub(super) fn push_dict(c: &mut Column, field: &Field, array: &ArrayRef, z: &mut Zstd) -> Result<(), ParquetError> {
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
