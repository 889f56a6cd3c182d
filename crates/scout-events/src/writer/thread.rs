//! The writer thread: the messages it receives, its files, the buffers it hands back.

use super::*;

pub(super) enum Msg {
    /// Events in row form (the producer's cost per event is one copy); the writer thread turns
    /// them into columns, packet rows [`MESSAGE_ROWS`] at a time gathered into whole batches.
    /// Every emptied vector goes back for reuse.
    Packets(Vec<PacketEvent>),
    Slots(Vec<SlotEvent>),
    Controls(Vec<ControlEvent>),
    /// Close the parts being written and write this `run.json` (the rows so far are added).
    Checkpoint(Value),
    /// From now on, show every batch to this tap before writing it.
    Tap(SharedTap),
    Close,
}

/// The writer thread's files: one per table, or, in a checkpointed run, the current part of each
/// (opened when the table's first rows after a checkpoint arrive).
pub(super) struct Files {
    pub(super) events_dir: PathBuf,
    pub(super) slices: Vec<&'static str>,
    pub(super) checkpointed: bool,
    pub(super) open: [Option<TableFile>; 3],
    /// The number of the next part; rows in finished parts per table.
    pub(super) part: usize,
    pub(super) rows: [u64; 3],
    /// Rows per file of a large table ([`part_rows`]), and per table the dataset parts written
    /// so far (0: still one file).
    pub(super) part_rows: u64,
    pub(super) dataset: [usize; 3],
}

impl Files {
    pub(super) fn new(events_dir: PathBuf, slices: Vec<&'static str>, checkpointed: bool) -> Self {
        let (open, part_rows) = ([None, None, None], part_rows());
        Files { events_dir, slices, checkpointed, open, part: 0, rows: [0; 3], part_rows, dataset: [0; 3] }
    }

    /// After a write: a table file that reached [`Self::part_rows`] at a row-group boundary becomes
    /// a part of the table's dataset (the first one moves into the dataset's directory), and the
    /// next rows go to a new part.
    pub(super) fn rotate(&mut self, t: Table) -> Result<(), WriteError> {
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

    pub(super) fn create(
        events_dir: PathBuf,
        slices: Vec<&'static str>,
        checkpointed: bool,
    ) -> Result<Self, WriteError> {
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

    pub(super) fn file(&mut self, t: Table) -> Result<&mut TableFile, WriteError> {
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
    pub(super) fn checkpoint(&mut self) -> Result<(), WriteError> {
        for (i, f) in self.open.iter_mut().enumerate() {
            if let Some(f) = f.take() {
                self.rows[i] += f.close()?;
            }
        }
        self.part += 1;
        Ok(())
    }

    /// Puts every table in place under its final name.
    pub(super) fn close(mut self) -> Result<(), WriteError> {
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
    pub(super) fn discard(&self) {
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
pub(super) enum Spent {
    Packets(Vec<PacketEvent>),
    Slots(Vec<SlotEvent>),
    Controls(Vec<ControlEvent>),
}

/// The emptied vectors back from the writer thread, by table.
#[derive(Default)]
pub(super) struct Spares {
    pub(super) packets: Vec<Vec<PacketEvent>>,
    pub(super) slots: Vec<Vec<SlotEvent>>,
    pub(super) controls: Vec<Vec<ControlEvent>>,
}

pub(super) fn writer_thread(
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
pub(super) fn write_until_close(
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
                for e in &rows {
                    staging.push(e);
                    if staging.rows == PB {
                        write_staged(files, &mut staging)?;
                    }
                }
                rows.clear();
                // The producer may have gone (a failed run): then the vector is simply dropped.
                let _ = recycle.try_send(Spent::Packets(rows));
            }
            Msg::Checkpoint(mut meta) => {
                write_staged(files, &mut staging)?;
                files.checkpoint()?;
                let r = files.rows;
                meta["checkpoint"]["parts"] = json!(files.part);
                meta["checkpoint"]["rows"] =
                    json!({"packet_events": r[0], "slot_events": r[1], "control_events": r[2]});
                write_json_atomically(&files.events_dir.with_file_name("run.json"), &meta)?;
            }
            Msg::Close => {
                write_staged(files, &mut staging)?;
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Writes the packet rows gathered so far as one batch (a whole one, or at a checkpoint or the
/// close whatever there is): the file's batches are the same however the producer's messages cut
/// the rows.
fn write_staged(files: &mut Files, staging: &mut PacketBatch) -> Result<(), WriteError> {
    if staging.rows > 0 {
        files.file(Table::Packet)?.write_packets(staging)?;
        files.rotate(Table::Packet)?;
        staging.clear();
    }
    Ok(())
}
