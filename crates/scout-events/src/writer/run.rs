//! [`RunWriter`]: the run directory a producer writes, its `run.json`, and [`CountingRun`].

use super::*;

/// Writes a run directory. Implements [`Sink`], so the model writes straight into it.
pub struct RunWriter {
    pub(super) dir: PathBuf,
    pub(super) meta: Value,
    pub(super) packet: Vec<PacketEvent>,
    /// Emptied batch vectors coming back from the writer thread, and those taken from it.
    pub(super) recycled: Receiver<Spent>,
    pub(super) spares: Spares,
    pub(super) slot: Vec<SlotEvent>,
    pub(super) control: Vec<ControlEvent>,
    pub(super) rows: [u64; 3],
    pub(super) tx: Option<SyncSender<Msg>>,
    pub(super) thread: Option<JoinHandle<Result<(), WriteError>>>,
    /// Rows that could not be handed to a writer thread that had already failed.
    pub(super) lost_rows: u64,
    /// Times the producer found the writer thread's queue full and waited, and how long (ns).
    pub(super) waits: u64,
    pub(super) wait_ns: u64,
    /// Messages sent to the writer thread and not yet taken up by it.
    pub(super) queued: Arc<AtomicUsize>,
    /// `create` made the directory itself (so an unfinished run removes it again).
    pub(super) created_dir: bool,
    /// `finish` succeeded: the run is in place.
    pub(super) finished: bool,
    /// Made by [`RunWriter::create_checkpointed`].
    pub(super) checkpointed: bool,
    /// With a tap ([`RunWriter::set_tap`]): when the buffered rows next go to the writer thread
    /// whether or not a batch is full, so that a tap sees a slow producer's events promptly.
    pub(super) tap_flush: Option<std::time::Instant>,
    /// Rows since the clock was last read for `tap_flush`.
    pub(super) tap_rows: u32,
}

impl Drop for RunWriter {
    /// A run that was not finished (an error, an interruption) leaves nothing behind: the writer
    /// thread removes its partial tables, then `run.json`, the tables and the directories this
    /// writer made are removed. Only names the writer itself writes are touched.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.tx.take();
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
        let events = self.dir.join("events");
        for t in Table::ALL {
            let _ = fs::remove_file(events.join(t.file_name()));
            let _ = fs::remove_file(crate::partial_path(&events.join(t.file_name())));
        }
        let _ = fs::remove_dir(&events);
        let _ = fs::remove_file(self.dir.join("run.json"));
        let _ = fs::remove_file(self.dir.join("run.json.tmp"));
        if self.created_dir {
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

impl RunWriter {
    /// Creates `dir` (and `dir/events`), writes `run.json` with `"complete": false` and the given
    /// metadata, and starts the writer thread. `slices` names the slice dictionary.
    ///
    /// Fails if `dir/run.json` exists: a run directory is never silently overwritten.
    pub fn create(dir: &Path, meta: Value, slices: &[String]) -> Result<Self, WriteError> {
        Self::start(dir, meta, slices, false)
    }

    /// As [`RunWriter::create`], for a producer that may be killed (the emulator, the live
    /// probe): the tables are written as parts that [`RunWriter::checkpoint`] closes, so that a
    /// `kill -9` loses only what came after the last checkpoint ([`recover`]).
    pub fn create_checkpointed(dir: &Path, meta: Value, slices: &[String]) -> Result<Self, WriteError> {
        Self::start(dir, meta, slices, true)
    }

    pub(super) fn start(dir: &Path, meta: Value, slices: &[String], checkpointed: bool) -> Result<Self, WriteError> {
        let run_json = dir.join("run.json");
        if run_json.exists() {
            return Err(WriteError::Exists { path: dir.to_path_buf() });
        }
        let created_dir = !dir.exists();
        let events_dir = dir.join("events");
        fs::create_dir_all(&events_dir).map_err(io_err(&events_dir))?;
        let mut meta = meta;
        meta["schema_version"] = json!(SCHEMA_VERSION);
        meta["complete"] = json!(false);
        if checkpointed {
            meta["checkpoint"] = json!({"parts": 0});
        }
        if let Err(e) = write_json_atomically(&run_json, &meta) {
            let _ = fs::remove_dir(&events_dir);
            if created_dir {
                let _ = fs::remove_dir(dir);
            }
            return Err(e);
        }
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        // Room for every vector in flight: those queued and those of the three tables filling.
        let (recycle, recycled) = sync_channel(CHANNEL_DEPTH + 3);
        let queued = Arc::new(AtomicUsize::new(0));
        let taken = Arc::clone(&queued);
        // Slice names live as long as the process: leaking a handful of short strings once per run
        // lets every batch reuse them as the dictionary without copying.
        let slices: Vec<&'static str> = slices.iter().map(|s| &*Box::leak(s.clone().into_boxed_str())).collect();
        let thread = std::thread::Builder::new()
            .name("scout-writer".into())
            .spawn(move || writer_thread(events_dir, rx, taken, recycle, slices, checkpointed))
            .map_err(io_err(dir))?;
        Ok(RunWriter {
            dir: dir.to_path_buf(),
            meta,
            packet: Vec::with_capacity(MESSAGE_ROWS),
            recycled,
            spares: Spares::default(),
            slot: Vec::new(),
            control: Vec::new(),
            rows: [0; 3],
            tx: Some(tx),
            thread: Some(thread),
            lost_rows: 0,
            waits: 0,
            wait_ns: 0,
            queued,
            created_dir,
            finished: false,
            checkpointed,
            tap_flush: None,
            tap_rows: 0,
        })
    }

    /// Shows every row from now on to `tap`, on the writer thread, a batch at a time; buffered
    /// rows are handed over at least every [`TAP_FLUSH`] (the clock is read every
    /// [`TAP_CHECK_ROWS`] rows added), not only when a batch is full.
    pub fn set_tap(&mut self, tap: SharedTap) {
        self.send(0, Msg::Tap(tap));
        self.tap_flush = Some(std::time::Instant::now() + TAP_FLUSH);
    }

    /// With a tap: hands the buffered rows over when [`TAP_FLUSH`] has passed since the last time.
    #[inline]
    pub(super) fn tap_due(&mut self) {
        if let Some(due) = self.tap_flush {
            self.tap_rows += 1;
            if self.tap_rows < TAP_CHECK_ROWS {
                return;
            }
            self.tap_rows = 0;
            let now = std::time::Instant::now();
            if now >= due {
                self.tap_flush = Some(now + TAP_FLUSH);
                for t in Table::ALL {
                    self.flush(t);
                }
            }
        }
    }

    /// Rows written so far per table (`packet_events`, `slot_events`, `control_events`).
    pub fn rows(&self) -> [u64; 3] {
        self.rows
    }

    pub(super) fn send(&mut self, rows: usize, msg: Msg) {
        let Some(tx) = self.tx.as_ref() else {
            self.lost_rows += rows as u64;
            return;
        };
        self.queued.fetch_add(1, Ordering::Relaxed);
        let ok = match tx.try_send(msg) {
            Ok(()) => true,
            Err(TrySendError::Full(msg)) => {
                // The writer thread is behind: the producer waits (no row is dropped), and says so.
                let t = std::time::Instant::now();
                let ok = tx.send(msg).is_ok();
                self.waits += 1;
                self.wait_ns += t.elapsed().as_nanos() as u64;
                ok
            }
            Err(TrySendError::Disconnected(_)) => false,
        };
        if !ok {
            self.queued.fetch_sub(1, Ordering::Relaxed);
            self.lost_rows += rows as u64;
        }
    }

    /// Whether the writer thread is behind: half its queue or more is waiting for it. A producer
    /// in real time takes in less work until it has caught up, rather than wait for it (see
    /// [`RunWriter::waits`]).
    pub fn behind(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= CHANNEL_DEPTH / 2
    }

    /// How often the producer waited for the writer thread (its queue full), and for how long in
    /// all (ns): time a real-time producer did not spend on its own work.
    pub fn waits(&self) -> (u64, u64) {
        (self.waits, self.wait_ns)
    }

    pub(super) fn flush(&mut self, table: Table) {
        for spent in self.recycled.try_iter() {
            match spent {
                Spent::Packets(v) => self.spares.packets.push(v),
                Spent::Slots(v) => self.spares.slots.push(v),
                Spent::Controls(v) => self.spares.controls.push(v),
            }
        }
        // Columns are built by the writer thread: a producer in real time (the emulator) must not
        // spend a millisecond turning a batch of rows with JSON details into Arrow arrays.
        let (rows, msg) = match table {
            Table::Packet if !self.packet.is_empty() => {
                let fresh = self.spares.packets.pop().unwrap_or_else(|| Vec::with_capacity(MESSAGE_ROWS));
                (self.packet.len(), Msg::Packets(std::mem::replace(&mut self.packet, fresh)))
            }
            Table::Slot if !self.slot.is_empty() => {
                let fresh = self.spares.slots.pop().unwrap_or_default();
                (self.slot.len(), Msg::Slots(std::mem::replace(&mut self.slot, fresh)))
            }
            Table::Control if !self.control.is_empty() => {
                let fresh = self.spares.controls.pop().unwrap_or_default();
                (self.control.len(), Msg::Controls(std::mem::replace(&mut self.control, fresh)))
            }
            _ => return,
        };
        self.send(rows, msg);
    }

    /// In a checkpointed run, makes every event so far durable: the buffered rows go to the writer
    /// thread, which closes the parts being written and rewrites `run.json` (still incomplete)
    /// with `checkpoint` = `note` plus the parts and rows so far. The producer does not wait for
    /// the disk. Does nothing in a run made by [`RunWriter::create`].
    pub fn checkpoint(&mut self, note: Value) {
        if !self.checkpointed {
            return;
        }
        for t in Table::ALL {
            self.flush(t);
        }
        let mut meta = self.meta.clone();
        meta["checkpoint"] = note;
        self.send(0, Msg::Checkpoint(meta));
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
        if let Some(m) = meta.as_object_mut() {
            // Spliced into whole tables: a finished run looks the same however it was written.
            m.remove("checkpoint");
        }
        let meta = completed(meta, extra, self.rows);
        write_json_atomically(&self.dir.join("run.json"), &meta)?;
        self.finished = true;
        Ok(meta)
    }
}

impl Sink for RunWriter {
    #[inline]
    fn packet(&mut self, ev: PacketEvent) {
        self.packet.push(ev);
        self.rows[0] += 1;
        if self.packet.len() >= MESSAGE_ROWS {
            self.flush(Table::Packet);
        }
        self.tap_due();
    }

    fn slot(&mut self, ev: SlotEvent) {
        self.slot.push(ev);
        self.rows[1] += 1;
        if self.slot.len() >= BATCH_ROWS {
            self.flush(Table::Slot);
        }
        self.tap_due();
    }

    fn control(&mut self, ev: ControlEvent) {
        self.control.push(ev);
        self.rows[2] += 1;
        if self.control.len() >= BATCH_ROWS {
            self.flush(Table::Control);
        }
        self.tap_due();
    }
}

/// Where a producer's events and its closing metadata go: a run directory ([`RunWriter`]), or
/// only their counts ([`CountingRun`]: fuzzing, tests).
pub trait RunOutput: Sink {
    /// Ends the run with `extra` merged into its metadata and returns the whole `run.json`.
    fn finish_run(self, extra: Value) -> Result<Value, WriteError>;
}

impl RunOutput for RunWriter {
    fn finish_run(self, extra: Value) -> Result<Value, WriteError> {
        self.finish(extra)
    }
}

/// A run that keeps its metadata and counts its events, writing nothing: what a fuzz target reads
/// a producer's `run.json` from, thousands of times a second.
#[derive(Debug)]
pub struct CountingRun {
    pub(super) meta: Value,
    pub(super) rows: [u64; 3],
}

impl CountingRun {
    pub fn new(meta: Value) -> Self {
        let mut meta = meta;
        meta["schema_version"] = json!(SCHEMA_VERSION);
        CountingRun { meta, rows: [0; 3] }
    }
}

impl Sink for CountingRun {
    fn packet(&mut self, _: PacketEvent) {
        self.rows[0] += 1;
    }
    fn slot(&mut self, _: SlotEvent) {
        self.rows[1] += 1;
    }
    fn control(&mut self, _: ControlEvent) {
        self.rows[2] += 1;
    }
}

impl RunOutput for CountingRun {
    fn finish_run(self, extra: Value) -> Result<Value, WriteError> {
        Ok(completed(self.meta, extra, self.rows))
    }
}

/// A finished run's metadata: `extra` merged in, `counts.events` filled from `rows`, complete.
pub(super) fn completed(mut meta: Value, extra: Value, rows: [u64; 3]) -> Value {
    merge(&mut meta, extra);
    let counts = &mut meta["counts"];
    if !counts.is_object() {
        *counts = json!({});
    }
    counts["events"] = json!({
        "packet_events": rows[0],
        "slot_events": rows[1],
        "control_events": rows[2],
    });
    counts["telemetry_lost"] = json!(0);
    meta["complete"] = json!(true);
    meta
}

/// Merges `extra` into `base` (objects recursively; anything else replaces).
pub(super) fn merge(base: &mut Value, extra: Value) {
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
    let written = fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(&text)?;
        f.write_all(b"\n")?;
        f.sync_all()
    });
    if let Err(e) = written {
        // A full disk must not keep a half-written file that holds it full.
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp)(e));
    }
    fs::rename(&tmp, path).map_err(io_err(path))
}
