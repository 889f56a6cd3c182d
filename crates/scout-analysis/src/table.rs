//! Writing the analysis tables: the enum columns' Arrow type, the tables' metadata, one batch as
//! a Parquet file.

use std::fs;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::DataType;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::Error;

pub(crate) fn dict() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt8), Box::new(DataType::Utf8))
}

pub(crate) fn meta() -> Vec<(String, String)> {
    vec![("scout.analysis".into(), "attribution kernel (scout-analysis)".into())]
}

/// Writes one batch as a Parquet file (zstd), through `PATH.partial` renamed when complete.
pub(crate) fn parquet_file(path: &Path, batch: &RecordBatch) -> Result<(), Error> {
    let partial = scout_events::partial_path(path);
    let file = fs::File::create(&partial).map_err(|e| Error::Io { path: partial.clone(), source: e })?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(|e| Error::parquet(path, e))?))
        .build();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| Error::parquet(&partial, e))?;
    w.write(batch).map_err(|e| Error::parquet(&partial, e))?;
    w.close().map_err(|e| Error::parquet(&partial, e))?;
    fs::rename(&partial, path).map_err(|e| Error::Io { path: path.to_path_buf(), source: e })
}
