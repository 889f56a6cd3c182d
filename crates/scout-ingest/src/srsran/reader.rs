//! Reading a gNB log as entries: a header line plus the lines that continue it (hex dumps, SCHED
//! `- ` child lines, JSON/ASN.1 dumps; reference §1.4), plain or gzip-compressed, with everything
//! unusual counted: lines before the first header, srslog's `Potentially skipped log lines` markers
//! (its asynchronous backend drops entries when its queue fills, §1.5) and timestamps that go back
//! in time (lines from different threads are written slightly out of order).
//!
//! The reader borrows each entry from reused buffers, so reading allocates nothing per line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use super::line::{looks_like_header, parse_header, Header};

/// srslog writes this once per sink when its queue is ≥ 98 % full (`format_full_queue_error`).
pub const SKIPPED_MARKER: &str = "Potentially skipped log lines";

/// One log entry: its header, its first line's number (1-based) and its continuation lines.
#[derive(Debug)]
pub struct Entry<'a> {
    pub line: u64,
    /// The header line whole, and parsed (its logger and body are parts of it).
    pub head: &'a str,
    pub header: Header<'a>,
    /// Continuation lines joined with `\n` (empty when there are none).
    pub continuation: &'a str,
}

impl Entry<'_> {
    pub fn continuation_lines(&self) -> impl Iterator<Item = &str> {
        self.continuation.split('\n').filter(|l| !l.is_empty())
    }
}

/// What reading a log saw, for `run.json` and the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub bytes: u64,
    pub lines: u64,
    pub entries: u64,
    pub continuation_lines: u64,
    /// Lines before the first header (not attached to any entry).
    pub orphan_lines: u64,
    /// Lines that are not valid UTF-8 (read lossily).
    pub invalid_utf8_lines: u64,
    /// Lines longer than [`MAX_LINE`] bytes, skipped (never held in memory whole), and the first.
    pub overlong_lines: u64,
    pub first_overlong_line: Option<u64>,
    /// Header lines with an impossible time (a date outside [`super::line::YEARS`], a 25th hour),
    /// skipped, and the first.
    pub impossible_time_lines: u64,
    pub first_impossible_time_line: Option<u64>,
    /// Where the log stopped being readable (a corrupt or truncated gzip stream): the lines
    /// before it are kept.
    pub damage: Option<LogDamage>,
    /// srslog "Potentially skipped log lines" markers, with the line number of each.
    pub skipped_markers: Vec<u64>,
    /// Entries whose timestamp is earlier than the latest seen before them, and the largest step back.
    pub out_of_order: u64,
    pub max_step_back_us: i64,
    pub first_t_us: Option<i64>,
    pub last_t_us: Option<i64>,
    /// The last line, when it has no line end: the log was cut mid-line (srslog ends every line
    /// with one), so the line is incomplete and not used.
    pub cut_last_line: Option<u64>,
}

/// The longest line kept: srsRAN's longest lines (hex dumps of at most 1024 bytes, JSON
/// messages) are far shorter; a longer one is skipped and counted, never held whole (a 1.5 GiB
/// line once took 4.7 GB).
pub const MAX_LINE: usize = 1 << 20;

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

/// A log that stops being readable part-way (a gzip stream that is corrupt or cut short).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogDamage {
    /// The last line read whole before it.
    pub after_line: u64,
    pub reason: String,
}

/// Reads entries from any buffered reader.
pub struct EntryReader<R: BufRead> {
    r: R,
    raw: Vec<u8>,
    lossy: String,
    /// The header line of the next entry (already read).
    next: String,
    next_line: u64,
    /// The timestamp of `next`.
    next_t: i64,
    /// The entry being returned and its continuation text.
    cur: String,
    cur_line: u64,
    cont: String,
    line_no: u64,
    eof: bool,
    /// The line `read_line` just read was longer than [`MAX_LINE`].
    overlong: bool,
    /// The line `read_line` just read ended at the end of the input, without a line end.
    unterminated: bool,
    max_t: i64,
    pub stats: ReadStats,
}

/// Opens a log file, gzip-compressed or plain (detected from the gzip magic bytes, not the name).
pub fn open_log(path: &Path) -> io::Result<EntryReader<Box<dyn BufRead + Send>>> {
    log_reader(Box::new(File::open(path)?))
}

/// Reads a log from any byte stream, gzip-compressed or plain (detected from the gzip magic
/// bytes).
pub fn log_reader<'r>(inner: Box<dyn Read + Send + 'r>) -> io::Result<EntryReader<Box<dyn BufRead + Send + 'r>>> {
    let mut f = BufReader::with_capacity(1 << 20, inner);
    let gz = f.fill_buf()?.starts_with(&[0x1f, 0x8b]);
    let r: Box<dyn BufRead + Send + 'r> = if gz {
        Box::new(BufReader::with_capacity(1 << 20, flate2::read::MultiGzDecoder::new(f)))
    } else {
        Box::new(f)
    };
    Ok(EntryReader::new(r))
}

impl<R: BufRead> EntryReader<R> {
    pub fn new(r: R) -> Self {
        EntryReader {
            r,
            raw: Vec::with_capacity(512),
            lossy: String::new(),
            next: String::new(),
            next_line: 0,
            next_t: 0,
            cur: String::new(),
            cur_line: 0,
            cont: String::new(),
            line_no: 0,
            eof: false,
            overlong: false,
            unterminated: false,
            max_t: i64::MIN,
            stats: ReadStats::default(),
        }
    }

    /// Reads one line into `raw` (without the line ending); false at end of input. A line longer
    /// than [`MAX_LINE`] keeps only its first [`MAX_LINE`] bytes in `raw` (the rest is read and
    /// dropped as it comes) and is reported by `overlong`.
    fn read_line(&mut self) -> io::Result<bool> {
        self.raw.clear();
        self.overlong = false;
        self.unterminated = false;
        let mut n = 0usize;
        loop {
            let buf = match self.r.fill_buf() {
                Ok(b) => b,
                // A decompression error (corrupt data, a stream cut short): the file ends here for
                // the reader, what came before is kept, and the damage is recorded.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof
                    ) =>
                {
                    self.stats.damage = Some(LogDamage { after_line: self.line_no, reason: e.to_string() });
                    self.raw.clear();
                    return Ok(false);
                }
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                self.unterminated = n > 0;
                break;
            }
            let (take, done) = match memchr_nl(buf) {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            let room = MAX_LINE.saturating_sub(self.raw.len());
            if take > room {
                self.overlong = true;
            }
            self.raw.extend_from_slice(&buf[..take.min(room)]);
            self.r.consume(take);
            n += take;
            if done {
                break;
            }
        }
        if n == 0 {
            return Ok(false);
        }
        self.stats.bytes += n as u64;
        self.line_no += 1;
        self.stats.lines += 1;
        while matches!(self.raw.last(), Some(b'\n' | b'\r')) {
            self.raw.pop();
        }
        Ok(true)
    }

    /// Reads lines until the next header line, which it stores in `next`; the lines before it are
    /// handed to `other`. Returns false at end of input.
    fn advance(&mut self, mut other: impl FnMut(&mut ReadStats, &str)) -> io::Result<bool> {
        loop {
            if !self.read_line()? {
                return Ok(false);
            }
            if self.unterminated && !self.overlong {
                self.stats.cut_last_line = Some(self.line_no);
                continue;
            }
            if self.overlong {
                self.stats.overlong_lines += 1;
                self.stats.first_overlong_line.get_or_insert(self.line_no);
                continue;
            }
            let s: &str = match std::str::from_utf8(&self.raw) {
                Ok(s) => s,
                Err(_) => {
                    self.stats.invalid_utf8_lines += 1;
                    self.lossy = String::from_utf8_lossy(&self.raw).into_owned();
                    &self.lossy
                }
            };
            if s.contains(SKIPPED_MARKER) {
                self.stats.skipped_markers.push(self.line_no);
                continue;
            }
            if let Some(h) = parse_header(s) {
                self.next_t = h.t_us;
                self.next.clear();
                self.next.push_str(s);
                self.next_line = self.line_no;
                return Ok(true);
            }
            if looks_like_header(s) {
                self.stats.impossible_time_lines += 1;
                self.stats.first_impossible_time_line.get_or_insert(self.line_no);
                continue;
            }
            other(&mut self.stats, s);
        }
    }

    /// The timestamp of the entry [`EntryReader::next_entry`] will return, or `None` at the end.
    /// (Merging several logs by time reads the earliest first.)
    pub fn peek_t_us(&mut self) -> io::Result<Option<i64>> {
        if self.eof {
            return Ok(None);
        }
        if self.next.is_empty() && !self.advance(|st, _| st.orphan_lines += 1)? {
            self.eof = true;
            return Ok(None);
        }
        Ok(Some(self.next_t))
    }

    /// The header line of the entry [`EntryReader::next_entry`] will return (after a
    /// [`EntryReader::peek_t_us`] that returned a time).
    pub fn peek_line(&self) -> &str {
        &self.next
    }

    /// The next entry, or `None` at the end of the input.
    pub fn next_entry(&mut self) -> io::Result<Option<Entry<'_>>> {
        if self.eof {
            return Ok(None);
        }
        if self.next.is_empty() && !self.advance(|st, _| st.orphan_lines += 1)? {
            self.eof = true;
            return Ok(None);
        }
        std::mem::swap(&mut self.cur, &mut self.next);
        self.next.clear();
        self.cur_line = self.next_line;
        self.cont.clear();
        let mut cont = std::mem::take(&mut self.cont);
        let more = self.advance(|st, l| {
            st.continuation_lines += 1;
            if !cont.is_empty() {
                cont.push('\n');
            }
            cont.push_str(l);
        })?;
        self.cont = cont;
        if !more {
            self.eof = true;
            // `next` stays empty; the entry in `cur` is the last one.
        }
        let header = parse_header(&self.cur).expect("stored lines are headers");
        self.stats.entries += 1;
        let t = header.t_us;
        if t < self.max_t {
            self.stats.out_of_order += 1;
            self.stats.max_step_back_us = self.stats.max_step_back_us.max(self.max_t - t);
        }
        self.max_t = self.max_t.max(t);
        self.stats.first_t_us.get_or_insert(t);
        self.stats.last_t_us = Some(self.max_t);
        Ok(Some(Entry { line: self.cur_line, head: &self.cur, header, continuation: &self.cont }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
preamble without a header
2023-11-06T20:04:25.000010 [GNB     ] [I] SSB derived parameters for cell: 1:
\t - SSB offset pointA:13
\t - k_SSB:6
2023-11-06T20:04:25.000020 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1403 sn=0 count=0
    0000: 80 00 45 00 00 4c
    0010: 01 02
2023-11-06T20:04:25.000015 [RLC     ] [I] ue=0 DRB1 DL: TX SDU. sdu_len=1403 pdcp_sn=0 queued_sdus=1 queued_bytes=1403
### Potentially skipped log lines from this point onwards ###
2023-11-06T20:04:25.000030 [SCHED   ] [D] [   276.14] Slot decisions pci=1 t=12us (1 PDSCH, 0 PUSCH, 0 PUCCHs):
- UE PDSCH: ue=0 c-rnti=0x4601 h_id=0 rb=[0..10) symb=[2..14) tbs=1500 mcs=20 rv=0 nrtx=0 k1=4
";

    fn collect(text: &str) -> (Vec<(u64, String, usize)>, ReadStats) {
        let mut r = EntryReader::new(text.as_bytes());
        let mut out = Vec::new();
        while let Some(e) = r.next_entry().unwrap() {
            out.push((e.line, e.header.logger.to_string(), e.continuation_lines().count()));
        }
        (out, r.stats)
    }

    #[test]
    fn entries_keep_their_continuation_lines_and_anomalies_are_counted() {
        let (entries, st) = collect(LOG);
        assert_eq!(
            entries,
            vec![(2, "GNB".into(), 2), (5, "PDCP".into(), 2), (8, "RLC".into(), 0), (10, "SCHED".into(), 1)]
        );
        assert_eq!(st.lines, 11);
        assert_eq!(st.entries, 4);
        assert_eq!(st.continuation_lines, 5);
        assert_eq!(st.orphan_lines, 1);
        assert_eq!(st.skipped_markers, vec![9]);
        assert_eq!((st.out_of_order, st.max_step_back_us), (1, 5));
        assert_eq!(st.bytes, LOG.len() as u64);
        assert_eq!(st.lines, st.entries + st.continuation_lines + st.orphan_lines + st.skipped_markers.len() as u64);
    }

    /// A log cut mid-line (issue 49): its last line has no line end; it is counted and not used
    /// (its numbers may be cut too), and every other line is read.
    #[test]
    fn a_log_cut_mid_line_has_its_last_line_counted_not_used() {
        let cut = &LOG[..LOG.len() - 20];
        let (entries, st) = collect(cut);
        assert_eq!(st.cut_last_line, Some(11));
        assert_eq!(entries.last(), Some(&(10, "SCHED".into(), 0)), "the cut child line is not attached");
        let cut_header = "2023-11-06T20:04:25.000040 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_le";
        let (entries, st) = collect(&format!("{LOG}{cut_header}"));
        assert_eq!((entries.len(), st.cut_last_line), (4, Some(12)));
        assert_eq!(collect(LOG).1.cut_last_line, None);
    }

    #[test]
    fn hex_dump_is_attached_to_its_entry() {
        let mut r = EntryReader::new(LOG.as_bytes());
        r.next_entry().unwrap();
        let e = r.next_entry().unwrap().unwrap();
        assert_eq!(e.header.logger, "PDCP");
        assert_eq!(e.continuation, "    0000: 80 00 45 00 00 4c\n    0010: 01 02");
    }

    /// A line of several MiB (issue 20: one of 1.5 GiB took 4.7 GB) is skipped and counted without
    /// being held whole; the entries around it are read.
    #[test]
    fn an_impossible_time_is_a_counted_skip_not_a_wrapped_t_ns() {
        let log = "2023-11-06T20:04:25.872601 [PDCP    ] [I] ue=0 DRB1 DL: one
9999-11-06T20:04:25.872602 [PDCP    ] [I] ue=0 DRB1 DL: far future
0001-01-01T00:00:00.000000 [PDCP    ] [I] ue=0 DRB1 DL: far past
2023-11-06T25:04:25.872603 [PDCP    ] [I] ue=0 DRB1 DL: 25th hour
2023-11-06T20:04:25.872604 [PDCP    ] [I] ue=0 DRB1 DL: two
";
        let mut r = EntryReader::new(log.as_bytes());
        let mut got = Vec::new();
        while let Some(e) = r.next_entry().unwrap() {
            got.push((e.header.body.to_string(), e.continuation.to_string()));
        }
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|(_, c)| c.is_empty()), "not taken for continuation lines: {got:?}");
        assert_eq!((r.stats.impossible_time_lines, r.stats.first_impossible_time_line), (3, Some(2)));
        assert_eq!(r.stats.out_of_order, 0);
    }

    #[test]
    fn an_overlong_line_is_skipped_and_counted() {
        let mut text = String::from("2023-11-06T20:04:25.872601 [PDCP    ] [I] ue=0 DRB1 DL: one\n");
        text.push_str(&"x".repeat(3 * MAX_LINE));
        text.push('\n');
        text.push_str("2023-11-06T20:04:25.872602 [PDCP    ] [I] ue=0 DRB1 DL: two\n");
        let mut r = EntryReader::new(text.as_bytes());
        let mut bodies = Vec::new();
        while let Some(e) = r.next_entry().unwrap() {
            bodies.push(e.header.body.to_string());
            assert!(e.continuation.len() < MAX_LINE);
        }
        assert_eq!(bodies.len(), 2, "{bodies:?}");
        assert_eq!((r.stats.overlong_lines, r.stats.first_overlong_line, r.stats.lines), (1, Some(2), 3));
        assert!(r.raw.capacity() <= 2 * MAX_LINE, "the long line was not held whole");
    }

    /// A corrupt or truncated gzip log once failed the whole ingest with no position (issue 20):
    /// the lines before the damage are read, and where it is is recorded.
    #[test]
    fn a_damaged_gzip_log_keeps_what_was_read_before_the_damage() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("scout-ingest-gzbad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for i in 0..20_000 {
            text.push_str(&format!(
                "2023-11-06T20:04:25.{:06} [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. sn={i}\n",
                i % 1_000_000
            ));
        }
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        let mut corrupt = gz.clone();
        let mid = corrupt.len() / 2;
        corrupt[mid..mid + 64].fill(0xff);
        for (name, bytes) in [("cut.log.gz", gz[..gz.len() / 2].to_vec()), ("corrupt.log.gz", corrupt)] {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            let mut r = open_log(&p).unwrap();
            let mut n = 0u64;
            while r.next_entry().unwrap().is_some() {
                n += 1;
            }
            let d = r.stats.damage.clone().unwrap_or_else(|| panic!("{name}: no damage recorded"));
            assert!(n > 1000 && n < 20_000, "{name}: {n} entries");
            assert!(d.after_line >= n && d.after_line < 20_000, "{name}: {d:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn gzip_and_plain_read_the_same_and_crlf_is_accepted() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("scout-ingest-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("gnb.log");
        std::fs::write(&plain, LOG.replace('\n', "\r\n")).unwrap();
        let gz = dir.join("gnb.log.1");
        let mut enc = flate2::write::GzEncoder::new(std::fs::File::create(&gz).unwrap(), flate2::Compression::fast());
        enc.write_all(LOG.as_bytes()).unwrap();
        enc.finish().unwrap();
        let read = |p: &Path| {
            let mut r = open_log(p).unwrap();
            let mut v = Vec::new();
            while let Some(e) = r.next_entry().unwrap() {
                v.push((e.header.t_us, e.header.body.to_string(), e.continuation.to_string()));
            }
            v
        };
        let (a, b) = (read(&plain), read(&gz));
        assert_eq!(a.len(), 4);
        assert_eq!(a, b);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn invalid_utf8_is_read_lossily_and_counted() {
        let mut bytes = b"2023-11-06T20:04:25.000010 [GNB     ] [I] ok\n".to_vec();
        bytes.extend_from_slice(b"\xff\xfe broken\n");
        let mut r = EntryReader::new(&bytes[..]);
        let e = r.next_entry().unwrap().unwrap();
        assert!(e.continuation.contains("broken"));
        assert!(r.next_entry().unwrap().is_none());
        assert_eq!(r.stats.invalid_utf8_lines, 1);
    }
}
