//! A checkpointed run's parts: their files, splicing them into one file per table (column
//! chunks copied, nothing re-encoded), and [`recover`] for a run whose producer was killed.

use super::*;

pub(super) type Serialized = (SerializedFileWriter<fs::File>, ArrowRowGroupWriterFactory);

/// A Parquet writer of `table` at `fin` + `.partial`. ArrowWriter converts the schema and embeds
/// it (so readers see dictionaries, not plain strings); the row groups are assembled by Scout.
pub(super) fn serialized_writer(fin: &Path, table: Table) -> Result<(PathBuf, Serialized), WriteError> {
    let partial = crate::partial_path(fin);
    let file = fs::File::create(&partial).map_err(io_err(&partial))?;
    let w = ArrowWriter::try_new(file, table.schema(), Some(writer_properties(table)))
        .and_then(|w| w.into_serialized_writer())
        .map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
    Ok((partial, w))
}

/// The finished parts of a table in a checkpointed run, in order (`.partial` ones are not).
pub(super) fn part_files(events_dir: &Path, table: Table) -> Result<Vec<PathBuf>, WriteError> {
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
pub(super) fn splice_parts(events_dir: &Path, table: Table, limit: u64) -> Result<u64, WriteError> {
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
pub(super) fn dataset_part(i: usize) -> String {
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
