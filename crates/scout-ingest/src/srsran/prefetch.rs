//! Each log read on a thread of its own: `scout ingest srsran` with several files (rotated logs,
//! split CU and DU logs) decompresses, splits and parses the headers of every file at once, and
//! even with one file the reading runs beside the stitching (the reader is a quarter of an
//! ingest's work; a gzip log's inflating more).
//!
//! A thread runs an [`EntryReader`] over its file and hands over its entries in batches: the text
//! of a run of entries (header line and continuation lines) with each entry's parsed header as
//! offsets into it, so that the stitching thread borrows [`Entry`]s from the batch exactly as it
//! would from the reader itself. At most [`DEPTH`] batches of about [`BATCH_BYTES`] wait per
//! file: memory stays bounded whatever the file's size. A file's thread starts when the merge
//! first takes an entry from it (its first entry is read at opening, for its time): of many
//! rotated logs, only those whose time has come hold a thread and batches — and, for files that
//! can be opened again ([`LogStream::spawn_closed`]), a descriptor and buffers: the others are
//! closed once their first entry is read (a thousand rotated logs would exceed the usual limit
//! of 1 024 open files).

use std::io::{self, Read};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::line::Header;
use super::reader::{log_reader, Entry, EntryReader, ReadStats};

/// Text per batch, about (a batch ends at the entry that reaches it).
pub const BATCH_BYTES: usize = 256 << 10;
/// Batches read ahead per file, at most.
pub const DEPTH: usize = 4;
/// The reading threads' stacks (the reader keeps its buffers on the heap).
const STACK_BYTES: usize = 256 << 10;

/// Bytes taken from a file so far (compressed bytes for a gzip file), for progress against its
/// size; counted by the file's reading thread.
#[derive(Clone, Default)]
pub struct FileBytes(Arc<AtomicU64>);

impl FileBytes {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

struct Counting<R> {
    inner: R,
    n: FileBytes,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.0.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// One entry of a batch: where its parts are in the batch's text.
struct Span {
    line: u64,
    t_us: i64,
    level: Option<u8>,
    slot: Option<(u32, u32)>,
    /// The header line, and within the text its logger id and body.
    head: Range<usize>,
    logger: Range<usize>,
    body: Range<usize>,
    continuation: Range<usize>,
    /// srslog's skipped-lines markers read up to this entry's end (its continuation lines).
    markers: usize,
}

#[derive(Default)]
struct Batch {
    text: String,
    spans: Vec<Span>,
}

enum Msg {
    Batch(Batch),
    /// The file's end: what reading it saw.
    End(Box<ReadStats>),
    Failed(io::Error),
}

type Reader = EntryReader<Box<dyn io::BufRead + Send>>;

/// Opens a log file again (from its start), for a stream that closed it while it waited.
pub type Reopen = Box<dyn FnMut() -> io::Result<Box<dyn Read + Send>> + Send>;

/// A stream before its thread starts.
enum Waiting {
    /// The reader, its first entry read.
    Open(Box<Reader>),
    /// The file closed after its first entry was read (so that thousands of rotated logs hold
    /// neither a descriptor nor buffers until their turn): that entry's time and header line, and
    /// how to open the file again. Its thread reads it from its start.
    Closed { t_us: Option<i64>, head: String, reopen: Reopen, n: FileBytes },
}

/// A log read by a thread of its own, entry by entry (the [`EntryReader`] interface the merge by
/// time needs: peek at the next entry's time and header line, take it, the reading's counts).
pub struct LogStream {
    /// Until the first entry is taken: the reader, or how to open it again (no thread yet).
    waiting: Option<Waiting>,
    name: String,
    /// The thread's batches, and the way emptied ones go back to it (once it runs).
    rx: Option<Receiver<Msg>>,
    back: Option<SyncSender<Batch>>,
    batch: Batch,
    /// The next entry's index in `batch`.
    at: usize,
    markers: usize,
    /// Complete once the end was reached.
    pub stats: ReadStats,
    end: bool,
    thread: Option<JoinHandle<()>>,
}

impl LogStream {
    /// Opens `inner` (a log, gzip-compressed or plain) and reads its first entry (an unreadable
    /// log is an error here); the thread, named after `name`, starts when that entry is taken.
    /// Also returns the count of bytes taken from `inner`.
    pub fn spawn(name: &str, inner: Box<dyn Read + Send>) -> io::Result<(LogStream, FileBytes)> {
        let n = FileBytes::default();
        let mut r = log_reader(Box::new(Counting { inner, n: n.clone() }))?;
        r.peek_t_us()?;
        Ok((LogStream::new(name, Waiting::Open(Box::new(r))), n))
    }

    /// As [`LogStream::spawn`] for a file that can be opened again (`reopen`: from its start), but
    /// the file is closed once its first entry is read and opened again when its thread starts.
    pub fn spawn_closed(name: &str, mut reopen: Reopen) -> io::Result<(LogStream, FileBytes)> {
        let n = FileBytes::default();
        let mut r = log_reader(Box::new(Counting { inner: reopen()?, n: n.clone() }))?;
        let t_us = r.peek_t_us()?;
        let head = r.peek_line().to_string();
        drop(r);
        n.0.store(0, Ordering::Relaxed);
        Ok((LogStream::new(name, Waiting::Closed { t_us, head, reopen, n: n.clone() }), n))
    }

    fn new(name: &str, waiting: Waiting) -> LogStream {
        LogStream {
            waiting: Some(waiting),
            name: format!("scout-log-{name}").chars().take(15).collect(),
            rx: None,
            back: None,
            batch: Batch::default(),
            at: 0,
            markers: 0,
            stats: ReadStats::default(),
            end: false,
            thread: None,
        }
    }

    /// Whether no entry has been taken yet and no thread reads ahead (see [`LogStream::start`]).
    pub fn waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// Whether its thread reads (started, the end not yet reached).
    pub fn reading(&self) -> bool {
        self.waiting.is_none() && !self.end
    }

    /// Starts the reading thread with the waiting reader (taking the first entry does; the merge
    /// starts the next rotated log early, so that its batches are ready when it is reached).
    pub fn start(&mut self) -> io::Result<()> {
        let r = match self.waiting.take() {
            None => return Ok(()),
            Some(Waiting::Open(r)) => r,
            Some(Waiting::Closed { t_us, reopen: mut open, n, .. }) => {
                let mut r = log_reader(Box::new(Counting { inner: open()?, n }))?;
                if r.peek_t_us()? != t_us {
                    return Err(io::Error::other("the log changed since its first entry was read"));
                }
                Box::new(r)
            }
        };
        let (tx, rx) = sync_channel(DEPTH);
        let (back, recycled) = sync_channel(DEPTH + 1);
        self.thread = Some(
            std::thread::Builder::new()
                .name(self.name.clone())
                .stack_size(STACK_BYTES)
                .spawn(move || read_ahead(*r, &tx, &recycled))?,
        );
        (self.rx, self.back) = (Some(rx), Some(back));
        Ok(())
    }

    /// Makes the next entry the one at `at` in `batch`, receiving batches as needed; false at the
    /// end of the log.
    fn fill(&mut self) -> io::Result<bool> {
        self.start()?;
        while self.at >= self.batch.spans.len() {
            if self.end {
                return Ok(false);
            }
            let Some(rx) = &self.rx else { return Ok(false) };
            match rx.recv() {
                Ok(Msg::Batch(b)) => {
                    let spent = std::mem::replace(&mut self.batch, b);
                    // The thread may have ended (its file read whole): then the batch is dropped.
                    if let Some(back) = &self.back {
                        let _ = back.try_send(spent);
                    }
                    self.at = 0;
                }
                Ok(Msg::End(stats)) => {
                    self.stats = *stats;
                    self.end = true;
                    self.join();
                }
                Ok(Msg::Failed(e)) => {
                    self.end = true;
                    self.join();
                    return Err(e);
                }
                Err(_) => {
                    self.end = true;
                    self.join();
                    return Err(io::Error::other("the log's reading thread ended without a word"));
                }
            }
        }
        Ok(true)
    }

    fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            // A panic in the reader is a bug; it reaches the caller as the error above.
            let _ = t.join();
        }
    }

    /// The timestamp of the entry [`LogStream::next_entry`] will return, or `None` at the end.
    pub fn peek_t_us(&mut self) -> io::Result<Option<i64>> {
        match &mut self.waiting {
            Some(Waiting::Open(r)) => return r.peek_t_us(),
            Some(Waiting::Closed { t_us, .. }) => return Ok(*t_us),
            None => {}
        }
        Ok(self.fill()?.then(|| self.batch.spans[self.at].t_us))
    }

    /// The header line of the entry [`LogStream::next_entry`] will return (after a
    /// [`LogStream::peek_t_us`] that returned a time).
    pub fn peek_line(&self) -> &str {
        match &self.waiting {
            Some(Waiting::Open(r)) => return r.peek_line(),
            Some(Waiting::Closed { head, .. }) => return head,
            None => {}
        }
        self.batch.spans.get(self.at).map_or("", |s| &self.batch.text[s.head.clone()])
    }

    /// The next entry, or `None` at the end of the log.
    pub fn next_entry(&mut self) -> io::Result<Option<Entry<'_>>> {
        if !self.fill()? {
            return Ok(None);
        }
        let s = &self.batch.spans[self.at];
        self.at += 1;
        self.markers = s.markers;
        let text = &self.batch.text;
        let header = Header {
            t_us: s.t_us,
            logger: &text[s.logger.clone()],
            level: s.level,
            slot: s.slot,
            body: &text[s.body.clone()],
        };
        Ok(Some(Entry {
            line: s.line,
            head: &text[s.head.clone()],
            header,
            continuation: &text[s.continuation.clone()],
        }))
    }

    /// srslog's skipped-lines markers read so far, up to the end of the entry last returned.
    pub fn markers(&self) -> usize {
        self.markers
    }
}

impl Drop for LogStream {
    /// A stream dropped before its end (an interrupted ingest): the thread sees its channel
    /// closed at its next batch and ends.
    fn drop(&mut self) {
        drop(self.rx.take());
        self.join();
    }
}

/// The reading thread: fills batches from the log until its end, an error, or the stream is gone.
fn read_ahead(mut r: Reader, tx: &SyncSender<Msg>, recycled: &Receiver<Batch>) {
    loop {
        let mut b = recycled.try_recv().unwrap_or_default();
        b.text.clear();
        b.spans.clear();
        let more = match fill_batch(&mut r, &mut b) {
            Ok(more) => more,
            Err(e) => {
                let _ = tx.send(Msg::Failed(e));
                return;
            }
        };
        if !b.spans.is_empty() && tx.send(Msg::Batch(b)).is_err() {
            return;
        }
        if !more {
            let _ = tx.send(Msg::End(Box::new(std::mem::take(&mut r.stats))));
            return;
        }
    }
}

/// Appends entries to `b` until it holds [`BATCH_BYTES`]; false at the end of the log.
fn fill_batch<R: io::BufRead>(r: &mut EntryReader<R>, b: &mut Batch) -> io::Result<bool> {
    while b.text.len() < BATCH_BYTES {
        let Some(e) = r.next_entry()? else { return Ok(false) };
        let start = b.text.len();
        b.text.push_str(e.head);
        // The logger and body are parts of the header line: the same parts of its copy.
        let at = |part: &str| {
            let off = start + (part.as_ptr() as usize - e.head.as_ptr() as usize);
            off..off + part.len()
        };
        let (logger, body) = (at(e.header.logger), at(e.header.body));
        let head = start..b.text.len();
        b.text.push_str(e.continuation);
        let (line, h) = (e.line, e.header);
        b.spans.push(Span {
            line,
            t_us: h.t_us,
            level: h.level,
            slot: h.slot,
            continuation: head.end..b.text.len(),
            head,
            logger,
            body,
            // (Read with the continuation lines, up to the next entry's header.)
            markers: r.stats.skipped_markers.len(),
        });
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of `n` entries, some with continuation lines, a skipped-lines marker and an orphan
    /// line before the first header.
    fn log(n: usize) -> String {
        let mut s = String::from("orphan before any header\n");
        for i in 0..n {
            s.push_str(&format!(
                "2023-11-06T20:04:{:02}.{:06} [SCHED   ] [D] [   276.{}] Slot decisions pci=1 n={i}\n",
                25 + i / 1_000_000,
                i % 1_000_000,
                i % 20
            ));
            if i % 3 == 0 {
                s.push_str(&format!("- UE PDSCH: ue=0 c-rnti=0x4601 h_id={} tbs=1500\n    0000: 80 00 45\n", i % 16));
            }
            if i % 5000 == 4999 {
                s.push_str("### Potentially skipped log lines from this point onwards ###\n");
            }
        }
        s
    }

    type Seen = (u64, i64, String, Option<u8>, Option<(u32, u32)>, String, String, usize);

    /// Entries as the reader on this thread returns them, and what it counted.
    fn direct(text: &str) -> (Vec<Seen>, ReadStats) {
        let mut r = EntryReader::new(text.as_bytes());
        let mut v = Vec::new();
        while let Some(e) = r.next_entry().unwrap() {
            let h = e.header;
            let s = (e.line, h.t_us, h.logger.into(), h.level, h.slot, h.body.into(), e.continuation.into(), 0);
            v.push(s);
            v.last_mut().unwrap().7 = r.stats.skipped_markers.len();
        }
        (v, r.stats)
    }

    #[test]
    fn a_stream_returns_the_readers_entries_across_batches_with_its_counts() {
        let text = log(40_000);
        assert!(text.len() > 8 * BATCH_BYTES, "several batches: {}", text.len());
        let (want, want_stats) = direct(&text);
        let (mut s, n) = LogStream::spawn("t", Box::new(io::Cursor::new(text.clone().into_bytes()))).unwrap();
        let mut got = Vec::new();
        while let Some(t) = s.peek_t_us().unwrap() {
            let line = s.peek_line().to_string();
            let e = s.next_entry().unwrap().unwrap();
            assert_eq!((t, line.as_str()), (e.header.t_us, e.head));
            let h = e.header;
            got.push((
                e.line,
                h.t_us,
                h.logger.into(),
                h.level,
                h.slot,
                h.body.into(),
                e.continuation.into(),
                s.markers(),
            ));
        }
        assert_eq!(got.len(), 40_000);
        assert_eq!(got, want);
        assert!(s.next_entry().unwrap().is_none());
        assert_eq!(s.stats, want_stats);
        assert_eq!((s.stats.orphan_lines, s.stats.skipped_markers.len()), (1, 8));
        assert_eq!(n.get(), text.len() as u64);
    }

    /// A gzip log cut short: the entries before the damage arrive, the damage is in the counts,
    /// as with the reader itself.
    #[test]
    fn a_damaged_gzip_log_ends_the_stream_with_its_damage_counted() {
        use std::io::Write;
        let text = log(20_000);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        let cut = gz[..gz.len() / 2].to_vec();
        let (mut s, _) = LogStream::spawn("t", Box::new(io::Cursor::new(cut))).unwrap();
        let mut n = 0;
        while s.next_entry().unwrap().is_some() {
            n += 1;
        }
        let d = s.stats.damage.clone().expect("damage recorded");
        assert!(n > 1000 && n < 20_000, "{n}");
        assert!(d.after_line >= n, "{d:?}");
    }

    /// An input that fails (not damage: an I/O error) is an error of the stream.
    #[test]
    fn a_read_error_reaches_the_caller() {
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("disk on fire"));
                }
                let line = b"2023-11-06T20:04:25.000010 [GNB     ] [I] ok\n";
                self.0 -= 1;
                let k = line.len().min(buf.len());
                buf[..k].copy_from_slice(&line[..k]);
                Ok(k)
            }
        }
        let (mut s, _) = LogStream::spawn("t", Box::new(Failing(3))).unwrap();
        let e = loop {
            match s.next_entry() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("ended without the error"),
                Err(e) => break e,
            }
        };
        assert!(e.to_string().contains("disk on fire"), "{e}");
    }

    /// A log opened again from its start when its turn comes: closed meanwhile (no descriptor, no
    /// buffers), the same entries and counts as the reader's own, its bytes counted once; a log
    /// that changed meanwhile is an error.
    #[test]
    fn a_closed_stream_opens_its_file_again_at_its_turn() {
        use std::sync::atomic::AtomicUsize;
        /// A log in memory that counts how many of its readers are alive.
        struct Counted(io::Cursor<Vec<u8>>, Arc<AtomicUsize>);
        impl Read for Counted {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.read(buf)
            }
        }
        impl Drop for Counted {
            fn drop(&mut self) {
                self.1.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let open = Arc::new(AtomicUsize::new(0));
        let text = Arc::new(std::sync::Mutex::new(log(3000)));
        let reopen = |text: &Arc<std::sync::Mutex<String>>| -> Reopen {
            let (open, text) = (open.clone(), text.clone());
            Box::new(move || -> io::Result<Box<dyn Read + Send>> {
                open.fetch_add(1, Ordering::Relaxed);
                let bytes = text.lock().unwrap().clone().into_bytes();
                Ok(Box::new(Counted(io::Cursor::new(bytes), open.clone())))
            })
        };
        let (want, want_stats) = direct(&log(3000));
        let (mut s, n) = LogStream::spawn_closed("t", reopen(&text)).unwrap();
        assert_eq!(open.load(Ordering::Relaxed), 0, "closed once its first entry is read");
        assert_eq!((s.peek_t_us().unwrap(), n.get()), (Some(want[0].1), 0));
        assert!(s.peek_line().contains("n=0") && s.waiting());
        let mut got = Vec::new();
        while let Some(e) = s.next_entry().unwrap() {
            got.push((e.line, e.header.t_us));
        }
        assert_eq!(got, want.iter().map(|w| (w.0, w.1)).collect::<Vec<_>>());
        assert_eq!(s.stats, want_stats);
        assert_eq!(n.get(), log(3000).len() as u64, "each byte counted once");
        assert_eq!(open.load(Ordering::Relaxed), 0, "closed at its end");
        // Rewritten between its first reading and its turn.
        let (mut s, _) = LogStream::spawn_closed("t", reopen(&text)).unwrap();
        *text.lock().unwrap() = log(10).replacen("20:04:25", "21:00:00", 1);
        let e = s.next_entry().map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("changed"), "{e}");
    }

    /// Opening reads the first entry (its time and header line, for the merge) without a thread:
    /// a rotated log that starts later holds none until the merge reaches it.
    #[test]
    fn a_stream_starts_its_thread_when_its_first_entry_is_taken() {
        let text = log(10);
        let (mut s, _) = LogStream::spawn("t", Box::new(io::Cursor::new(text.into_bytes()))).unwrap();
        assert_eq!(s.peek_t_us().unwrap(), Some(direct(&log(10)).0[0].1));
        assert!(s.peek_line().contains("n=0"), "{}", s.peek_line());
        assert!(s.thread.is_none() && s.waiting.is_some());
        assert_eq!(s.next_entry().unwrap().map(|e| e.line), Some(2));
        assert!(s.waiting.is_none());
        let mut n = 1;
        while s.next_entry().unwrap().is_some() {
            n += 1;
        }
        assert_eq!((n, s.stats.entries), (10, 10));
    }

    /// An unreadable log is an error at opening, before any thread.
    #[test]
    fn an_unreadable_log_is_an_error_at_opening() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("no medium"))
            }
        }
        let e = LogStream::spawn("t", Box::new(Broken)).err().expect("an error");
        assert!(e.to_string().contains("no medium"), "{e}");
    }

    /// A stream dropped part-way (an interrupted ingest) ends its thread.
    #[test]
    fn dropping_a_stream_part_way_ends_its_thread() {
        let text = log(40_000);
        let (mut s, _) = LogStream::spawn("t", Box::new(io::Cursor::new(text.into_bytes()))).unwrap();
        s.next_entry().unwrap();
        let t = s.thread.as_ref().map(|t| t.thread().id());
        assert!(t.is_some());
        drop(s); // joins: a thread still running would hang this test
    }
}
