//! One table's Parquet file (or a checkpointed run's current part): row groups filled batch by
//! batch, each column by its encoder.

use super::*;

/// How one column of a table is encoded.
pub(super) enum ColumnEncoder {
    /// arrow-rs's column writer (the slot and control tables' numeric and free-text columns).
    Arrow(Box<ArrowColumnWriter>),
    /// Scout's own chunk encoder ([`crate::chunk`]): every column of the packet table and every
    /// enum column.
    Own(Box<Column>),
}

/// One table's Parquet file: a row group is filled batch by batch and written when it reaches
/// [`ROW_GROUP_ROWS`] rows (or at close).
pub(super) struct TableFile {
    pub(super) table: Table,
    pub(super) partial: PathBuf,
    /// Where `close` renames the file.
    pub(super) fin: PathBuf,
    pub(super) rows: u64,
    pub(super) schema: SchemaRef,
    pub(super) file: SerializedFileWriter<fs::File>,
    pub(super) factory: ArrowRowGroupWriterFactory,
    /// Per field, the dictionary an enum column starts each row group with (the packet table's
    /// fixed enums; the other tables learn theirs from their batches).
    pub(super) names: Vec<Vec<&'static str>>,
    pub(super) columns: Vec<ColumnEncoder>,
    pub(super) zstd: Zstd,
    pub(super) rows_in_group: usize,
    pub(super) row_groups: usize,
}

/// The encoding of each packet-table column in [`crate::chunk`] terms.
pub(super) fn own_kind(table: Table, field: &Field) -> Kind {
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
    pub(super) fn create(fin: PathBuf, table: Table, slices: &[&'static str]) -> Result<Self, WriteError> {
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

    pub(super) fn err(&self, e: ParquetError) -> WriteError {
        WriteError::Parquet { path: self.partial.clone(), message: e.to_string() }
    }

    pub(super) fn new_columns(&self) -> Result<Vec<ColumnEncoder>, WriteError> {
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
    pub(super) fn write(&mut self, batch: &RecordBatch) -> Result<(), WriteError> {
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
    pub(super) fn write_packets(&mut self, b: &PacketBatch) -> Result<(), WriteError> {
        self.append_packets(b).map_err(|e| self.err(e))?;
        self.rows_in_group += b.rows;
        self.rows += b.rows as u64;
        if self.rows_in_group >= ROW_GROUP_ROWS {
            self.flush_row_group()?;
        }
        Ok(())
    }

    pub(super) fn append_packets(&mut self, b: &PacketBatch) -> Result<(), ParquetError> {
        let cols: Vec<&mut Column> = self
            .columns
            .iter_mut()
            .filter_map(|c| match c {
                ColumnEncoder::Own(c) => Some(&mut **c),
                ColumnEncoder::Arrow(_) => None,
            })
            .collect();
        let Ok::<[&mut Column; PacketBatch::COLUMNS], _>(c) = cols.try_into() else {
            unreachable!("the packet table's columns are all encoded by Scout")
        };
        b.append(c, &mut self.zstd)
    }

    pub(super) fn flush_row_group(&mut self) -> Result<(), WriteError> {
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
    pub(super) fn close(mut self) -> Result<u64, WriteError> {
        self.flush_row_group()?;
        let partial = self.partial.clone();
        self.file.close().map_err(|e| WriteError::Parquet { path: partial.clone(), message: e.to_string() })?;
        fs::rename(&partial, &self.fin).map_err(io_err(&self.fin))?;
        Ok(self.rows)
    }
}
