//! pcap and pcapng files, read block by block into one reused buffer.
//!
//! - pcap (libpcap format): every variant libpcap reads (its `sf-pcap.c`), in either byte order:
//!   magic `a1b2c3d4` (µs timestamps), `a1b23c4d` (ns) and `a1b2cd34` (Alexey Kuznetzov's
//!   "modified" format of patched Linux libpcaps: 24-byte record headers that add the interface
//!   index, protocol and packet type, which Scout skips); versions 2.0–2.4 and DG/UX's 543.0, with
//!   the captured and original lengths swapped as libpcap swaps them (before 2.3 always; in 2.3
//!   when the captured length exceeds the original). One link type per file. Variants libpcap
//!   does not read are refused with their name: `a1b234cd` (FMESQUITA), `a12b3c4d` (Navtel) and
//!   IXIA's `1c0001ac`/`1c0001ab` (Wireshark reads some; their record headers are their own).
//! - pcapng (draft-ietf-opsawg-pcapng): any number of sections, each in its own byte order, and
//!   interfaces; Enhanced, Simple and (obsolete) Packet Blocks; per-interface `if_tsresol` (10^-n or 2^-n s) and `if_tsoffset`; interface
//!   names (`if_name`) kept for telling N3 from N6. Other blocks are skipped and counted.
//!
//! Errors name the file and byte offset.
//!
//! A regular file is mapped into memory and frames are slices of the mapping: copying 1 GB from
//! the page cache with `read` was a third of the ingest's time (`bench/RESULTS.md`). Pipes and
//! devices are read through a buffer. The mapping is private and read-only; a capture that another
//! process truncates while Scout reads it ends the process with SIGBUS, as with any reader that
//! maps its input (one that is only appended to, as by a running `tcpdump -w`, is read up to the
//! length it had when opened).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::ops::Range;
use std::path::Path;

/// One captured frame.
#[derive(Debug)]
pub struct Frame<'a> {
    /// Interface index within the file (pcap: 0).
    pub iface: u32,
    /// Nanoseconds since the Unix epoch.
    pub t_ns: i64,
    pub linktype: u16,
    pub data: &'a [u8],
    pub orig_len: u32,
    /// Byte offset of the frame's record in the file.
    pub offset: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Iface {
    pub linktype: u16,
    pub name: Option<String>,
    /// Timestamp units per second and offset (s).
    units_per_s: u64,
    ts_offset_s: i64,
}

#[derive(Debug, Default, Clone)]
pub struct FileStats {
    pub frames: u64,
    pub bytes: u64,
    pub truncated_frames: u64,
    /// Blocks that carry no packet (name resolution, statistics, decryption secrets, custom and
    /// unknown types), skipped: how many, and how many of each type.
    pub other_blocks: u64,
    pub other_block_types: std::collections::BTreeMap<u32, u64>,
    pub sections: u64,
    /// Packets whose time is before 1970 or after 2200 (a bad `if_tsoffset` or `if_tsresol`),
    /// skipped.
    pub impossible_time_frames: u64,
    /// Where the file stopped being readable after valid records (a cut, garbage, a bad length):
    /// what came before is kept, as Wireshark does.
    pub damage: Option<Damage>,
}

/// A capture that stops being readable part-way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The byte where the unreadable record starts.
    pub offset: u64,
    pub reason: String,
    /// Bytes from `offset` to the end of the file (not read), where the file's size is known.
    pub bytes_not_read: Option<u64>,
}

/// The largest packet a record may hold: Wireshark's `WTAP_MAX_PACKET_SIZE_STANDARD` (256 KiB).
/// A longer record length is damage, not a packet.
pub const MAX_RECORD: u32 = 262_144;

/// How a pcap file's records give their lengths (libpcap's `lengths_swapped`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lengths {
    /// Captured, then original (version 2.4).
    InOrder,
    /// Original, then captured (versions before 2.3, and DG/UX's 543.0).
    Swapped,
    /// Version 2.3: swapped when the captured length would exceed the original.
    MaybeSwapped,
}

enum Format {
    /// `record`: the record header's size (16, or 24 in the modified format).
    Pcap {
        big: bool,
        ns: bool,
        linktype: u16,
        record: u8,
        lengths: Lengths,
    },
    PcapNg {
        big: bool,
    },
}

/// Where a capture's bytes come from.
enum Source {
    /// A regular file, mapped, or bytes already in memory; `pos` is the next byte to take.
    Mapped { map: Box<dyn AsRef<[u8]> + Send>, pos: usize },
    /// Anything else, read into `buf` one record at a time.
    Read { r: BufReader<File>, buf: Vec<u8> },
}

impl Source {
    fn open(f: File) -> io::Result<Self> {
        if f.metadata()?.is_file() {
            // SAFETY: the mapping is read-only and private; the file is not changed by Scout. A
            // change by another process is covered in the module's documentation.
            let map = unsafe { memmap2::Mmap::map(&f)? };
            #[cfg(unix)]
            let _ = map.advise(memmap2::Advice::Sequential);
            return Ok(Source::Mapped { map: Box::new(map), pos: 0 });
        }
        Ok(Source::Read { r: BufReader::with_capacity(1 << 20, f), buf: Vec::with_capacity(1 << 16) })
    }

    /// Where the next `n` bytes are in [`Source::all`], or `None` at the end of the file; a
    /// record cut short by the end is counted in `truncated`.
    fn take(&mut self, n: usize, truncated: &mut u64) -> io::Result<Option<Range<usize>>> {
        match self {
            Source::Mapped { map, pos } => {
                let map = (**map).as_ref();
                let start = *pos;
                if map.len() - start < n {
                    if map.len() > start {
                        *truncated += 1;
                    }
                    *pos = map.len();
                    return Ok(None);
                }
                *pos += n;
                Ok(Some(start..start + n))
            }
            Source::Read { r, buf } => {
                buf.resize(n, 0);
                Ok(read_full(r, buf, truncated)?.then_some(0..n))
            }
        }
    }

    /// The next `n` bytes, as [`Source::take`].
    fn bytes(&mut self, n: usize, truncated: &mut u64) -> io::Result<Option<&[u8]>> {
        Ok(self.take(n, truncated)?.map(|r| &self.all()[r]))
    }

    /// The bytes every slice [`Source::take`] returns lies in.
    fn all(&self) -> &[u8] {
        match self {
            Source::Mapped { map, .. } => (**map).as_ref(),
            Source::Read { buf, .. } => buf,
        }
    }
}

pub struct CaptureReader {
    /// The frame loaded by [`CaptureReader::advance`]: its fields and where its bytes are in
    /// [`Source::all`].
    cur: Option<(u32, i64, u16, u32, u64, usize, usize)>,
    src: Source,
    path: String,
    format: Format,
    pub ifaces: Vec<Iface>,
    offset: u64,
    /// The file's size, where it is a regular file.
    len: Option<u64>,
    pub stats: FileStats,
}

fn err(path: &str, offset: u64, msg: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{path}: byte {offset}: {msg}"))
}

impl CaptureReader {
    pub fn open(path: &Path) -> io::Result<Self> {
        let p = path.display().to_string();
        let f = File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))?;
        let len = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
        let src = Source::open(f).map_err(|e| io::Error::new(e.kind(), format!("{p}: {e}")))?;
        Self::start(p, src, len)
    }

    /// Reads a capture held in memory; `name` stands for its path in messages.
    pub fn from_bytes(name: &str, data: std::sync::Arc<[u8]>) -> io::Result<Self> {
        let len = Some(data.len() as u64);
        Self::start(name.to_string(), Source::Mapped { map: Box::new(data), pos: 0 }, len)
    }

    /// Reads the file header (pcap) or first section header (pcapng).
    fn start(p: String, src: Source, len: Option<u64>) -> io::Result<Self> {
        let mut me = CaptureReader {
            cur: None,
            src,
            path: p.clone(),
            format: Format::PcapNg { big: false },
            ifaces: Vec::new(),
            offset: 4,
            len,
            stats: FileStats::default(),
        };
        let mut head = [0u8; 4];
        head.copy_from_slice(me.header(4, 0, "too short for a pcap or pcapng header")?);
        match u32::from_le_bytes(head) {
            0x0a0d0d0a => {
                me.section_header()?;
            }
            m => {
                let Some((big, ns, record)) = pcap_magic(m) else {
                    let (be, le) = (m.swap_bytes(), m);
                    let known = [be, le].iter().find_map(|&x| unread_variant(x));
                    let what = match known {
                        Some(name) => format!("a pcap variant libpcap does not read ({name}, magic {m:08x})"),
                        None => format!("not a capture: magic {m:08x}"),
                    };
                    return Err(err(
                        &p,
                        0,
                        format!(
                            "{what}; accepted: pcap a1b2c3d4 (µs), a1b23c4d (ns), a1b2cd34 (modified) in either byte \
                             order, pcapng 0a0d0d0a"
                        ),
                    ));
                };
                let mut h = [0u8; 20];
                h.copy_from_slice(me.header(20, 4, "truncated pcap header")?);
                me.offset = 24;
                let (major, minor) = (u16_at(&h, 0, big), u16_at(&h, 2, big));
                // libpcap's sf-pcap.c: versions 2.0-2.4 and DG/UX tcpdump's 543.0.
                let lengths = match (major, minor) {
                    (2, 0..=2) | (543, 0) => Lengths::Swapped,
                    (2, 3) => Lengths::MaybeSwapped,
                    (2, 4) => Lengths::InOrder,
                    _ => {
                        return Err(err(
                            &p,
                            4,
                            format!("pcap version {major}.{minor}; accepted: 2.0-2.4 and 543.0 (as libpcap)"),
                        ))
                    }
                };
                // The link-layer header type is the low 16 bits (the rest: FCS length flags).
                let linktype = u32_at(&h, 16, big) as u16;
                me.format = Format::Pcap { big, ns, linktype, record, lengths };
                me.ifaces.push(Iface {
                    linktype,
                    name: None,
                    units_per_s: if ns { 1_000_000_000 } else { 1_000_000 },
                    ts_offset_s: 0,
                });
            }
        }
        Ok(me)
    }

    /// The next `n` bytes of a header the file cannot end within: the error `what`, at byte `at`,
    /// where it does.
    fn header(&mut self, n: usize, at: u64, what: &str) -> io::Result<&[u8]> {
        self.src.bytes(n, &mut 0)?.ok_or_else(|| err(&self.path, at, what))
    }

    /// Reads an SHB whose 4-byte type was already read (at `offset - 4`).
    fn section_header(&mut self) -> io::Result<()> {
        let at = self.offset - 4;
        let mut len = [0u8; 4];
        len.copy_from_slice(self.header(4, at, "truncated pcapng section header")?);
        self.offset += 4;
        self.section_header_from(len)
    }

    /// Loads the next frame (see [`CaptureReader::current`]); `false` at the end of the file.
    ///
    /// A file that stops being readable after valid records — cut inside a record, garbage, an
    /// implausible length — ends there: the frames before it are kept and the damage is recorded
    /// in [`FileStats::damage`]. Damage before the first record is an error.
    pub fn advance(&mut self) -> io::Result<bool> {
        let truncated = self.stats.truncated_frames;
        match self.load() {
            Ok(cur) => {
                self.cur = cur;
                if cur.is_none() && self.stats.truncated_frames > truncated && self.stats.damage.is_none() {
                    self.damage(self.offset, "the file ends inside a record (cut short)".into());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidData && self.stats.frames > 0 => {
                // The reader's message is "PATH: byte N: WHAT"; the damage keeps N and WHAT.
                let m = e.to_string();
                let (at, what) = m
                    .split_once(": byte ")
                    .and_then(|(_, r)| r.split_once(": "))
                    .and_then(|(n, w)| Some((n.parse().ok()?, w)))
                    .unwrap_or((self.offset, m.as_str()));
                self.damage(at, what.to_string());
                self.cur = None;
            }
            Err(e) => return Err(e),
        }
        Ok(self.cur.is_some())
    }

    fn damage(&mut self, offset: u64, reason: String) {
        self.stats.damage = Some(Damage { offset, reason, bytes_not_read: self.len.map(|l| l.saturating_sub(offset)) });
    }

    /// The frame [`CaptureReader::advance`] loaded.
    pub fn current(&self) -> Frame<'_> {
        let (iface, t_ns, linktype, orig_len, offset, a, b) = self.cur.unwrap_or_default();
        Frame { iface, t_ns, linktype, data: &self.src.all()[a..b], orig_len, offset }
    }

    /// The next frame, or `None` at the end of the file.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame<'_>>> {
        Ok(if self.advance()? { Some(self.current()) } else { None })
    }

    /// The next frame's fields and where its bytes are in [`Source::all`].
    fn load(&mut self) -> io::Result<Option<Loaded>> {
        match self.format {
            Format::Pcap { big, ns, linktype, record, lengths } => self.load_pcap(big, ns, linktype, record, lengths),
            Format::PcapNg { .. } => self.load_pcapng(),
        }
    }

    /// The next record of a classic pcap file.
    fn load_pcap(
        &mut self,
        big: bool,
        ns: bool,
        linktype: u16,
        record: u8,
        lengths: Lengths,
    ) -> io::Result<Option<Loaded>> {
        let mut h = [0u8; 24];
        let record = usize::from(record);
        match self.src.bytes(record, &mut self.stats.truncated_frames)? {
            Some(b) => h[..record].copy_from_slice(b),
            None => return Ok(None),
        }
        let off = self.offset;
        let (sec, frac, a, b) = (u32_at(&h, 0, big), u32_at(&h, 4, big), u32_at(&h, 8, big), u32_at(&h, 12, big));
        let (cap, orig) = match lengths {
            Lengths::Swapped => (b, a),
            Lengths::MaybeSwapped if a > b => (b, a),
            _ => (a, b),
        };
        if cap > MAX_RECORD {
            return Err(err(
                &self.path,
                off,
                format!("record length {cap} is more than {MAX_RECORD} bytes, the largest packet Wireshark reads"),
            ));
        }
        let Some(data) = self.src.take(cap as usize, &mut self.stats.truncated_frames)? else {
            // The record's header was whole: its data is missing.
            self.stats.truncated_frames = self.stats.truncated_frames.max(1);
            return Ok(None);
        };
        self.offset += record as u64 + cap as u64;
        self.stats.frames += 1;
        self.stats.bytes += cap as u64;
        let t_ns = sec as i64 * 1_000_000_000 + if ns { frac as i64 } else { frac as i64 * 1000 };
        Ok(Some((0, t_ns, linktype, orig, off, data.start, data.end)))
    }

    /// The next packet of a pcapng file, reading the section headers, interface descriptions and
    /// other blocks before it.
    fn load_pcapng(&mut self) -> io::Result<Option<Loaded>> {
        loop {
            let Format::PcapNg { big } = self.format else { unreachable!("a pcapng file") };
            let mut h = [0u8; 8];
            match self.src.bytes(8, &mut self.stats.truncated_frames)? {
                Some(b) => h.copy_from_slice(b),
                None => return Ok(None),
            }
            let off = self.offset;
            let btype = u32_at(&h, 0, big);
            if btype == 0x0a0d0d0a {
                // A new section: its own byte order and interfaces (its length is read in
                // the new order).
                self.offset += 8;
                self.section_header_from([h[4], h[5], h[6], h[7]])?;
                continue;
            }
            let len = u32_at(&h, 4, big) as u64;
            if len < 12 || !len.is_multiple_of(4) || len > 1 << 26 {
                return Err(err(&self.path, off, format!("bad pcapng block length {len} (type {btype:#x})")));
            }
            let Some(block) = self.src.take(len as usize - 8, &mut self.stats.truncated_frames)? else {
                self.stats.truncated_frames = self.stats.truncated_frames.max(1);
                return Ok(None);
            };
            self.offset += len;
            let body_at = block.start;
            let body = &self.src.all()[block.start..block.end - 4];
            match btype {
                1 => {
                    // Interface Description Block.
                    let Some(ifc) = interface_block(body, big) else {
                        return Err(err(&self.path, off, "short interface description block"));
                    };
                    self.ifaces.push(ifc);
                }
                2 | 6 => {
                    // Enhanced Packet Block, or the obsolete Packet Block (still written by old
                    // tools): the same fields but a 16-bit interface id and a drops count.
                    if body.len() < 20 {
                        let what = if btype == 6 { "enhanced packet block" } else { "packet block" };
                        return Err(err(&self.path, off, format!("short {what}")));
                    }
                    let iface = if btype == 6 { u32_at(body, 0, big) } else { u32::from(u16_at(body, 0, big)) };
                    let ts = (u64::from(u32_at(body, 4, big)) << 32) | u64::from(u32_at(body, 8, big));
                    let (cap, orig) = (u32_at(body, 12, big) as usize, u32_at(body, 16, big));
                    match self.packet(off, iface, ts, cap, body.len())? {
                        Some((t_ns, linktype)) => {
                            let a = body_at + 20;
                            return Ok(Some((iface, t_ns, linktype, orig, off, a, a + cap)));
                        }
                        None => continue,
                    }
                }
                3 => {
                    // Simple Packet Block: interface 0, no timestamp.
                    let Some(ifc) = self.ifaces.first() else {
                        return Err(err(&self.path, off, "simple packet block before any interface block"));
                    };
                    if body.len() < 4 {
                        // A block of 12 bytes (or 13-15, padded) has no room for its packet length.
                        return Err(err(&self.path, off, format!("short simple packet block ({len} bytes)")));
                    }
                    let orig = u32_at(body, 0, big);
                    let cap = (orig as usize).min(body.len() - 4);
                    let linktype = ifc.linktype;
                    self.stats.frames += 1;
                    self.stats.bytes += cap as u64;
                    let a = body_at + 4;
                    return Ok(Some((0, 0, linktype, orig, off, a, a + cap)));
                }
                t => {
                    self.stats.other_blocks += 1;
                    *self.stats.other_block_types.entry(t).or_insert(0) += 1;
                }
            }
        }
    }

    /// Checks an (Enhanced) Packet Block's fields against its interface and block (of `body_len`
    /// bytes, 20 before the packet) and counts the frame; `None` for a time that cannot be (an
    /// `if_tsoffset` of 2^62 once wrapped the epoch), counted and skipped.
    fn packet(&mut self, off: u64, iface: u32, ts: u64, cap: usize, body_len: usize) -> io::Result<Option<(i64, u16)>> {
        let Some(ifc) = self.ifaces.get(iface as usize) else {
            return Err(err(
                &self.path,
                off,
                format!("packet on interface {iface}, which no interface block described"),
            ));
        };
        if 20 + cap > body_len {
            return Err(err(&self.path, off, format!("captured length {cap} exceeds its block")));
        }
        let Some(t_ns) = ts_to_ns(ts, ifc.units_per_s, ifc.ts_offset_s) else {
            self.stats.impossible_time_frames += 1;
            return Ok(None);
        };
        self.stats.frames += 1;
        self.stats.bytes += cap as u64;
        Ok(Some((t_ns, ifc.linktype)))
    }

    /// The rest of an SHB after its type and length (at `offset - 8`): byte-order magic, then
    /// the section's options, skipped. Sets the byte order and drops the previous interfaces.
    fn section_header_from(&mut self, len_bytes: [u8; 4]) -> io::Result<()> {
        let start = self.offset - 8;
        let mut m = [0u8; 4];
        m.copy_from_slice(self.header(4, start, "truncated pcapng section header")?);
        let big = match u32::from_le_bytes(m) {
            0x1a2b3c4d => false,
            0x4d3c2b1a => true,
            x => return Err(err(&self.path, start + 8, format!("bad pcapng byte-order magic {x:08x}"))),
        };
        let len = u32_at(&len_bytes, 0, big) as u64;
        if len < 28 || !len.is_multiple_of(4) {
            return Err(err(&self.path, start, format!("bad section header length {len}")));
        }
        self.header(len as usize - 12, start, "section header cut short by the end of the file")?;
        self.offset = start + len;
        self.format = Format::PcapNg { big };
        self.ifaces.clear();
        self.stats.sections += 1;
        Ok(())
    }
}

/// The latest time a frame may carry: 2200-01-01T00:00:00Z in ns since the Unix epoch (the same
/// bound as srsRAN log dates; any two times up to it are less than 2^63 ns apart).
pub const MAX_T_NS: i64 = 7_258_118_400_000_000_000;

/// An Enhanced Packet Block's time in ns since the Unix epoch (`if_tsresol` units, plus
/// `if_tsoffset` seconds), or `None` when it is before 1970 or after [`MAX_T_NS`].
fn ts_to_ns(ts: u64, units_per_s: u64, offset_s: i64) -> Option<i64> {
    let t = i128::from(ts) * 1_000_000_000 / i128::from(units_per_s.max(1)) + i128::from(offset_s) * 1_000_000_000;
    (0..=i128::from(MAX_T_NS)).contains(&t).then_some(t as i64)
}

/// Fills `buf` completely; `Ok(false)` at a clean end of file, a truncated record counted.
fn read_full(r: &mut impl Read, buf: &mut [u8], truncated: &mut u64) -> io::Result<bool> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => {
                if n > 0 {
                    *truncated += 1;
                }
                return Ok(false);
            }
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A pcap magic number as read little-endian: (big-endian file, ns timestamps, record header
/// size), for the variants libpcap reads (`sf-pcap.c`).
fn pcap_magic(m: u32) -> Option<(bool, bool, u8)> {
    let (magic, big) = if (m >> 16) == 0xa1b2 { (m, false) } else { (m.swap_bytes(), true) };
    match magic {
        0xa1b2c3d4 => Some((big, false, 16)),
        0xa1b23c4d => Some((big, true, 16)),
        // Kuznetzov's patched libpcap: the record adds ifindex (4), protocol (2), pkt_type (1)
        // and a pad byte.
        0xa1b2cd34 => Some((big, false, 24)),
        _ => None,
    }
}

/// pcap variants that other tools write and libpcap refuses, by their magic.
fn unread_variant(m: u32) -> Option<&'static str> {
    match m {
        0xa1b234cd => Some("FMESQUITA's modified libpcap"),
        0xa12b3c4d => Some("Navtel Communications"),
        0x1c0001ac | 0x1c0001ab => Some("IXIA"),
        _ => None,
    }
}

fn u16_at(b: &[u8], o: usize, big: bool) -> u16 {
    let v = [b[o], b[o + 1]];
    if big {
        u16::from_be_bytes(v)
    } else {
        u16::from_le_bytes(v)
    }
}

fn u32_at(b: &[u8], o: usize, big: bool) -> u32 {
    let v = [b[o], b[o + 1], b[o + 2], b[o + 3]];
    if big {
        u32::from_be_bytes(v)
    } else {
        u32::from_le_bytes(v)
    }
}

fn u64_at(b: &[u8], o: usize, big: bool) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[o..o + 8]);
    if big {
        u64::from_be_bytes(v)
    } else {
        u64::from_le_bytes(v)
    }
}

/// Where a frame was captured: enough to tell capture points of an `any` capture apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    pub file: u16,
    pub iface: u32,
    /// SLL2 interface index, or for SLL the ARPHRD type (tun: 65534, Ethernet: 1, loopback: 772).
    pub sub: u32,
    /// The frame was sent by this host (SLL packet type 4).
    pub outgoing: bool,
}

/// A frame as [`CaptureReader::load`] finds it: interface, time (ns), link type, original length,
/// file offset, and where its bytes start and end in [`Source::all`].
type Loaded = (u32, i64, u16, u32, u64, usize, usize);

/// An Interface Description Block's body (pcapng §4.2): link type and the options Scout uses
/// (`if_name`, `if_tsresol`, `if_tsoffset`); `None` when it is too short for its fixed fields.
fn interface_block(body: &[u8], big: bool) -> Option<Iface> {
    if body.len() < 8 {
        return None;
    }
    let mut ifc = Iface { linktype: u16_at(body, 0, big), units_per_s: 1_000_000, ..Iface::default() };
    let mut o = 8;
    while o + 4 <= body.len() {
        let (code, l) = (u16_at(body, o, big), u16_at(body, o + 2, big) as usize);
        let v = body.get(o + 4..o + 4 + l).unwrap_or(&[]);
        match code {
            0 => break,
            2 => ifc.name = Some(String::from_utf8_lossy(v).into_owned()),
            9 if !v.is_empty() => {
                let r = v[0];
                ifc.units_per_s =
                    if r & 0x80 == 0 { 10u64.saturating_pow(u32::from(r)) } else { 1u64 << (r & 0x7f).min(63) };
            }
            14 if v.len() == 8 => ifc.ts_offset_s = u64_at(v, 0, big) as i64,
            _ => {}
        }
        o += 4 + l.div_ceil(4) * 4;
    }
    Some(ifc)
}
