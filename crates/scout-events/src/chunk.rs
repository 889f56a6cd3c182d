//! Parquet column chunks encoded by Scout itself.
//!
//! arrow-rs's Parquet writer is general: it walks Arrow arrays, computes definition levels through
//! a level builder, re-interns every string of a dictionary column (a hash and a `memcmp` per
//! value; apache/arrow-rs#10465) and writes through a generic column writer. For the packet table,
//! whose rows arrive by the million from the model, that generality was most of the writer's cost.
//! Here each column is filled row by row straight into its page bytes, and written exactly as the
//! format lays pages out (parquet-format `README.md` "Data Pages", `Encodings.md`):
//!
//! - **enum columns** (`Dictionary<UInt8, Utf8>` in Arrow): one dictionary page with the names,
//!   PLAIN (`u32` little-endian length, then the bytes), and data pages of keys in the
//!   RLE/bit-packing hybrid (`RLE_DICTIONARY`, preceded by one byte of bit width);
//! - **numeric columns**: a page whose values span few consecutive integers (UE, flow, bearer,
//!   retransmission index, ECN: nearly constant) is `RLE_DICTIONARY`, its span appended to the
//!   chunk's dictionary (PLAIN integers) and each key the value's place in it; other pages, and
//!   pages after the dictionary reached 256 entries, are PLAIN, little-endian, 4 bytes for `INT32`
//!   (which also carries `u8`/`u16`) and 8 for `INT64` (a chunk mixing both kinds of page is what
//!   Parquet writers produce when a dictionary outgrows its limit); **booleans** PLAIN, one bit each;
//! - **time and id columns** (`t_ns`, `pkt`): `DELTA_BINARY_PACKED` (blocks of 128 deltas in 4
//!   miniblocks) with chunk min/max statistics, so readers prune row groups by time or id;
//! - a nullable column's page starts with its definition levels (4-byte length, then the hybrid at
//!   bit width 1); only present values follow;
//! - pages are format v1, compressed with zstd, and written as soon as they are full, so a row
//!   group's encoding is spread over its batches; closing a chunk adds the dictionary page in front.
//!
//! The tests read the result back with arrow-rs; the Python suite reads it with DuckDB and pyarrow.

use arrow_buffer::ToByteSlice;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// Rows per data page (small in tests, so that a test's few thousand rows cross many pages and
/// numeric dictionaries fill up and fall back to PLAIN).
#[cfg(not(test))]
const PAGE_ROWS: usize = 1 << 17;
#[cfg(test)]
const PAGE_ROWS: usize = 1 << 12;

/// How a column's values are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// PLAIN, this many bytes per value (4 for INT32, 8 for INT64).
    Plain(usize),
    /// PLAIN booleans.
    Bool,
    /// Dictionary keys into the column's names.
    Dict,
    /// DELTA_BINARY_PACKED 64-bit integers, with min/max statistics.
    Delta,
}

/// The values of the present rows, typed so that filling a column is a tight loop.
pub(crate) enum Values {
    /// Booleans (0/1) or dictionary keys.
    U8(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::U8(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::U64(v) => v.len(),
            Values::I64(v) => v.len(),
        }
    }

    fn clear(&mut self) {
        match self {
            Values::U8(v) => v.clear(),
            Values::U32(v) => v.clear(),
            Values::U64(v) => v.clear(),
            Values::I64(v) => v.clear(),
        }
    }
}

/// A value type a [`Column`] stores.
pub(crate) trait Value: Copy {
    fn vec(values: &mut Values) -> &mut Vec<Self>;
}

macro_rules! value {
    ($t:ty, $v:ident) => {
        impl Value for $t {
            #[inline]
            fn vec(values: &mut Values) -> &mut Vec<Self> {
                match values {
                    Values::$v(v) => v,
                    _ => unreachable!(concat!("column does not store ", stringify!($t))),
                }
            }
        }
    };
}
value!(u8, U8);
value!(u32, U32);
value!(u64, U64);
value!(i64, I64);

/// One row group's worth of a column. Rows are buffered until a page is full, then encoded and
/// compressed at once, so a row group's work is spread over its batches instead of falling due
/// when it closes. Buffers are kept across pages and row groups.
pub(crate) struct Column {
    descr: ColumnDescPtr,
    kind: Kind,
    nullable: bool,
    /// The present values of the rows not yet in a page.
    values: Values,
    /// One definition level per row not yet in a page (1 = present), for a nullable column only.
    defs: Vec<u8>,
    /// The dictionary of a `Dict` column.
    names: Vec<String>,
    /// The dictionary of a numeric column so far: the spans of its dictionary-encoded pages.
    ints: Vec<u64>,
    /// The chunk's data pages, with their headers.
    pages: Vec<u8>,
    rows: usize,
    nulls: usize,
    uncompressed: i64,
    encodings: Vec<Encoding>,
    /// Min and max of a delta column's values in the chunk.
    min_max: Option<(i64, i64)>,
    /// Scratch space for a page's bytes and a numeric page's keys.
    buf: Vec<u8>,
    keys: Vec<u8>,
}

impl Column {
    /// A column for `descr`; `names` is the initial dictionary of a `Dict` column.
    pub(crate) fn new(descr: ColumnDescPtr, kind: Kind, names: &[&str]) -> Self {
        let nullable = descr.max_def_level() > 0;
        let values = match kind {
            Kind::Bool | Kind::Dict => Values::U8(Vec::new()),
            Kind::Plain(4) => Values::U32(Vec::new()),
            Kind::Plain(_) => Values::U64(Vec::new()),
            Kind::Delta => Values::I64(Vec::new()),
        };
        Column {
            descr,
            kind,
            nullable,
            values,
            defs: Vec::new(),
            names: names.iter().map(|n| n.to_string()).collect(),
            ints: Vec::new(),
            pages: Vec::new(),
            rows: 0,
            nulls: 0,
            uncompressed: 0,
            encodings: vec![Encoding::RLE],
            min_max: None,
            buf: Vec::new(),
            keys: Vec::new(),
        }
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn nullable(&self) -> bool {
        self.nullable
    }

    pub(crate) fn name(&self) -> &str {
        self.descr.name()
    }

    /// Rows not yet in a page.
    fn pending(&self) -> usize {
        if self.nullable {
            self.defs.len()
        } else {
            self.values.len()
        }
    }

    /// Appends the values of a required column (INT32 columns take `u32`, INT64 columns `u64`,
    /// delta columns `i64`, enum and boolean columns `u8`).
    pub(crate) fn append<T: Value>(&mut self, mut values: &[T], z: &mut Zstd) -> Result<()> {
        debug_assert!(!self.nullable);
        while !values.is_empty() {
            let take = (PAGE_ROWS - self.pending()).min(values.len());
            T::vec(&mut self.values).extend_from_slice(&values[..take]);
            values = &values[take..];
            self.page_if_full(z)?;
        }
        Ok(())
    }

    /// Appends rows of a nullable column: one definition level per row (1 = present) and the
    /// present rows' values.
    pub(crate) fn append_nullable<T: Value>(
        &mut self,
        (mut defs, mut values): (&[u8], &[T]),
        z: &mut Zstd,
    ) -> Result<()> {
        debug_assert!(self.nullable);
        while !defs.is_empty() {
            let take = (PAGE_ROWS - self.pending()).min(defs.len());
            let present =
                if take == defs.len() { values.len() } else { defs[..take].iter().filter(|&&d| d == 1).count() };
            self.defs.extend_from_slice(&defs[..take]);
            T::vec(&mut self.values).extend_from_slice(&values[..present]);
            (defs, values) = (&defs[take..], &values[present..]);
            self.page_if_full(z)?;
        }
        Ok(())
    }

    /// Grows a `Dict` column's names to `names`, which must begin with the names it has.
    pub(crate) fn extend_names(&mut self, names: &[&str]) -> Result<()> {
        let fail = |what: &str| Err(ParquetError::General(format!("column {}: {what}", self.descr.name())));
        if self.kind != Kind::Dict {
            return fail("not an enum column");
        }
        if names.len() > 256 {
            return fail("more than 256 distinct values");
        }
        if names.len() < self.names.len() || self.names.iter().zip(names).any(|(a, b)| a != b) {
            return fail("new names must extend the dictionary, keeping its order");
        }
        self.names.extend(names[self.names.len()..].iter().map(|n| n.to_string()));
        Ok(())
    }

    /// Appends a batch of dictionary keys from an Arrow dictionary array: `keys` index `dict`;
    /// `valid[i]` is false for a null row (then `keys[i]` is ignored). Fails on a key outside
    /// `dict`, a null in a required column, or more than 256 names.
    pub(crate) fn push_dict_batch(
        &mut self,
        dict: &[&str],
        keys: &[u8],
        valid: Option<&[bool]>,
        z: &mut Zstd,
    ) -> Result<()> {
        let name = self.descr.name().to_string();
        let fail = |what: String| Err(ParquetError::General(format!("column {name}: {what}")));
        // Map this batch's dictionary onto the chunk's (identity in the common case: every batch of
        // a run carries the same names, or a longer list with the same prefix).
        let mut map = [0u8; 256];
        let mut identity = true;
        for (i, n) in dict.iter().enumerate() {
            let at = match self.names.iter().position(|m| m == n) {
                Some(at) => at,
                None if self.names.len() == 256 => return fail("more than 256 distinct values".into()),
                None => {
                    self.names.push((*n).to_string());
                    self.names.len() - 1
                }
            };
            identity &= at == i;
            map[i] = at as u8;
        }
        let present = |i: usize| valid.is_none_or(|v| v[i]);
        if let Some((k, _)) = keys.iter().zip(0..).find(|&(&k, i)| k as usize >= dict.len() && present(i)) {
            return fail(format!("dictionary key {k} out of range (dictionary has {} names)", dict.len()));
        }
        if !self.nullable && valid.is_some_and(|v| v.iter().any(|p| !p)) {
            return fail("null in a required column".into());
        }
        let out = u8::vec(&mut self.values);
        match valid {
            None if identity => out.extend_from_slice(keys),
            None => out.extend(keys.iter().map(|&k| map[k as usize])),
            Some(valid) => out.extend(keys.iter().zip(valid).filter(|(_, &v)| v).map(|(&k, _)| map[k as usize])),
        }
        if self.nullable {
            match valid {
                None => self.defs.resize(self.defs.len() + keys.len(), 1),
                Some(valid) => self.defs.extend(valid.iter().map(|&v| v as u8)),
            }
        }
        self.page_if_full(z)
    }

    fn page_if_full(&mut self, z: &mut Zstd) -> Result<()> {
        if self.pending() >= PAGE_ROWS {
            self.write_page(z)?;
        }
        Ok(())
    }

    /// Encodes and compresses the pending rows as one data page.
    fn write_page(&mut self, z: &mut Zstd) -> Result<()> {
        let rows = self.pending();
        if rows == 0 {
            return Ok(());
        }
        let buf = &mut self.buf;
        buf.clear();
        if self.nullable {
            buf.extend_from_slice(&[0; 4]);
            encode_hybrid(&self.defs, 1, buf);
            let len = (buf.len() - 4) as u32;
            buf[..4].copy_from_slice(&len.to_le_bytes());
        }
        let present = self.values.len();
        // A numeric page whose values span few consecutive integers (UE, flow, bearer,
        // retransmission index, ECN, ...) is dictionary-encoded: its span joins the chunk's
        // dictionary, so a value's key is its distance from the page's minimum plus the keys
        // before it. Mostly-constant columns then cost a run header per page instead of 4 or 8
        // bytes per row. When the dictionary is full, pages fall back to PLAIN (as Parquet's
        // writers do when a dictionary outgrows its limit).
        let span = match &self.values {
            Values::U32(v) => int_span(v.iter().map(|&x| x as u64)),
            Values::U64(v) => int_span(v.iter().copied()),
            _ => None,
        }
        .filter(|&(_, count)| self.ints.len() + count <= 256);
        let encoding = match (&self.values, self.kind, span) {
            (Values::U32(_) | Values::U64(_), _, Some((min, count))) => {
                let base = self.ints.len() as u64;
                let width = bit_width((self.ints.len() + count - 1) as u8);
                self.keys.clear();
                match &self.values {
                    Values::U32(v) => self.keys.extend(v.iter().map(|&x| (x as u64 - min + base) as u8)),
                    Values::U64(v) => self.keys.extend(v.iter().map(|&x| (x - min + base) as u8)),
                    _ => unreachable!(),
                }
                self.ints.extend(min..min + count as u64);
                buf.push(width);
                encode_hybrid(&self.keys, width, buf);
                Encoding::RLE_DICTIONARY
            }
            (Values::U32(v), _, None) => {
                buf.extend_from_slice(v.to_byte_slice());
                Encoding::PLAIN
            }
            (Values::U64(v), _, None) => {
                buf.extend_from_slice(v.to_byte_slice());
                Encoding::PLAIN
            }
            (Values::U8(v), Kind::Bool, _) => {
                bit_pack_body(v, 1, buf);
                Encoding::PLAIN
            }
            (Values::U8(v), _, _) => {
                let width = bit_width(self.names.len().saturating_sub(1) as u8);
                buf.push(width);
                encode_hybrid(v, width, buf);
                Encoding::RLE_DICTIONARY
            }
            (Values::I64(v), _, _) => {
                if let (Some(&lo), Some(&hi)) = (v.iter().min(), v.iter().max()) {
                    self.min_max = Some(self.min_max.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
                }
                encode_delta(v, buf);
                Encoding::DELTA_BINARY_PACKED
            }
        };
        if !self.encodings.contains(&encoding) {
            self.encodings.push(encoding);
        }
        let page = Page::DataPage {
            buf: z.compress(buf, self.descr.name())?,
            num_values: rows as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let mut sink = TrackedWrite::new(&mut self.pages);
        let spec = SerializedPageWriter::new(&mut sink).write_page(CompressedPage::new(page, buf.len()))?;
        self.uncompressed += spec.uncompressed_size as i64;
        self.rows += rows;
        self.nulls += rows - present;
        self.values.clear();
        self.defs.clear();
        Ok(())
    }

    /// Ends the chunk: its bytes (dictionary page first, if any, then the data pages) and the
    /// metadata a row group writer needs to splice it in with `append_column`. Leaves the column
    /// empty for the next row group.
    pub(crate) fn close(&mut self, z: &mut Zstd) -> Result<(Bytes, ColumnCloseResult)> {
        self.write_page(z)?;
        let mut out = Vec::new();
        let mut uncompressed = self.uncompressed;
        let mut dictionary_page_offset = None;
        let dictionary = match self.kind {
            Kind::Dict => {
                let mut dict = Vec::with_capacity(self.names.iter().map(|n| n.len() + 4).sum());
                for n in &self.names {
                    dict.extend_from_slice(&(n.len() as u32).to_le_bytes());
                    dict.extend_from_slice(n.as_bytes());
                }
                Some((dict, self.names.len()))
            }
            Kind::Plain(width) if !self.ints.is_empty() => {
                let mut dict = Vec::with_capacity(self.ints.len() * width);
                for v in &self.ints {
                    dict.extend_from_slice(&v.to_le_bytes()[..width]);
                }
                Some((dict, self.ints.len()))
            }
            _ => None,
        };
        if let Some((dict, count)) = dictionary {
            let page = Page::DictionaryPage {
                buf: z.compress(&dict, self.descr.name())?,
                num_values: count as u32,
                encoding: Encoding::PLAIN,
                is_sorted: false,
            };
            let mut sink = TrackedWrite::new(&mut out);
            let spec = SerializedPageWriter::new(&mut sink).write_page(CompressedPage::new(page, dict.len()))?;
            uncompressed += spec.uncompressed_size as i64;
            dictionary_page_offset = Some(0);
            if !self.encodings.contains(&Encoding::PLAIN) {
                self.encodings.push(Encoding::PLAIN);
            }
        }
        let data_page_offset = out.len() as i64;
        out.extend_from_slice(&self.pages);
        let mut metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(Compression::ZSTD(z.level))
            .set_encodings(std::mem::replace(&mut self.encodings, vec![Encoding::RLE]))
            .set_total_compressed_size(out.len() as i64)
            .set_total_uncompressed_size(uncompressed)
            .set_num_values(self.rows as i64)
            .set_dictionary_page_offset(dictionary_page_offset)
            .set_data_page_offset(data_page_offset);
        if self.kind == Kind::Delta {
            let (min, max) = (self.min_max.map(|m| m.0), self.min_max.map(|m| m.1));
            metadata = metadata.set_statistics(Statistics::int64(min, max, None, Some(self.nulls as u64), false));
        }
        let close = ColumnCloseResult {
            bytes_written: out.len() as u64,
            rows_written: self.rows as u64,
            metadata: metadata.build()?,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        self.pages.clear();
        self.ints.clear();
        self.rows = 0;
        self.nulls = 0;
        self.uncompressed = 0;
        self.min_max = None;
        Ok((Bytes::from(out), close))
    }
}

/// A zstd compression context, shared by the columns of a table (creating one per page costs).
pub(crate) struct Zstd {
    level: ZstdLevel,
    ctx: zstd::bulk::Compressor<'static>,
}

impl Zstd {
    pub(crate) fn new(level: ZstdLevel) -> Result<Self> {
        let ctx = zstd::bulk::Compressor::new(level.compression_level())
            .map_err(|e| ParquetError::General(format!("zstd: {e}")))?;
        Ok(Zstd { level, ctx })
    }

    fn compress(&mut self, data: &[u8], column: &str) -> Result<Bytes> {
        self.ctx
            .compress(data)
            .map(Bytes::from)
            .map_err(|e| ParquetError::General(format!("column {column}: zstd: {e}")))
    }
}

/// Appends `values` in DELTA_BINARY_PACKED: a header (block size 128, 4 miniblocks, the count and
/// the first value), then per block of 128 deltas the minimum delta, the 4 miniblocks' bit widths
/// and the miniblocks of 32 (delta − minimum) values, bit-packed; the last miniblock is padded,
/// and miniblocks after the last value are omitted (their width bytes are 0).
pub(crate) fn encode_delta(values: &[i64], out: &mut Vec<u8>) {
    const BLOCK: usize = 128;
    const MINI: usize = 32;
    put_uleb128(BLOCK as u64, out);
    put_uleb128((BLOCK / MINI) as u64, out);
    put_uleb128(values.len() as u64, out);
    put_uleb128(zigzag(values.first().copied().unwrap_or(0)), out);
    let mut deltas = [0u64; BLOCK];
    let mut rest = values;
    while rest.len() > 1 {
        let n = (rest.len() - 1).min(BLOCK);
        let mut min = i64::MAX;
        for i in 0..n {
            let d = rest[i + 1].wrapping_sub(rest[i]);
            deltas[i] = d as u64;
            min = min.min(d);
        }
        for d in &mut deltas[..n] {
            *d = d.wrapping_sub(min as u64);
        }
        put_uleb128(zigzag(min), out);
        let widths_at = out.len();
        out.extend_from_slice(&[0; BLOCK / MINI]);
        for (m, mini) in deltas[..n].chunks(MINI).enumerate() {
            let width = 64 - mini.iter().fold(0, |a, &d| a | d).leading_zeros() as usize;
            out[widths_at + m] = width as u8;
            let mut padded = [0u64; MINI];
            padded[..mini.len()].copy_from_slice(mini);
            pack_u64(&padded, width, out);
        }
        rest = &rest[n..];
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Packs `values` (each < 2^width) least significant bit first into width·len/8 bytes.
fn pack_u64(values: &[u64], width: usize, out: &mut Vec<u8>) {
    if width == 0 {
        return;
    }
    let mut acc: u128 = 0;
    let mut bits = 0;
    for &v in values {
        acc |= (v as u128) << bits;
        bits += width;
        while bits >= 64 {
            out.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            bits -= 64;
        }
    }
    out.extend_from_slice(&acc.to_le_bytes()[..bits.div_ceil(8)]);
}

/// For values that span fewer than 256 consecutive integers (and at least one value): the
/// smallest and the span's length.
fn int_span(values: impl Iterator<Item = u64> + Clone) -> Option<(u64, usize)> {
    let min = values.clone().min()?;
    let max = values.max()?;
    (max - min < 256).then(|| (min, (max - min) as usize + 1))
}

/// Bits needed for values up to `max` (at least 1, so that every run has a value byte).
fn bit_width(max: u8) -> u8 {
    (8 - max.leading_zeros() as u8).max(1)
}

fn put_uleb128(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `values` (each < 2^width, width ≤ 8) in the RLE/bit-packing hybrid: runs of at least
/// 8 equal values as RLE runs, everything else bit-packed in groups of 8, the last group padded
/// with zeros (readers stop at the page's value count).
pub(crate) fn encode_hybrid(values: &[u8], width: u8, out: &mut Vec<u8>) {
    debug_assert!((1..=8).contains(&width));
    let n = values.len();
    // Start of the values not yet written; they are bit-packed when a run or the end closes them.
    let mut pending = 0;
    let mut i = 0;
    while i < n {
        let v = values[i];
        let mut j = i + 1;
        // Long runs (definition levels of a column that is always present, a constant column's
        // keys) are the common case: compare 8 values at a time.
        let word = u64::from_ne_bytes([v; 8]);
        while let Some(next) = values.get(j..j + 8) {
            if u64::from_ne_bytes(next.try_into().expect("8 bytes")) != word {
                break;
            }
            j += 8;
        }
        while j < n && values[j] == v {
            j += 1;
        }
        // A bit-packed run holds whole groups of 8: lend the run's first values to fill the last
        // group, and use RLE for the rest if that still leaves a run worth its header.
        let fill = (8 - (i - pending) % 8) % 8;
        if j - i >= fill + 8 {
            if i + fill > pending {
                bit_pack(&values[pending..i + fill], width, out);
            }
            put_uleb128(((j - i - fill) as u64) << 1, out);
            out.push(v);
            pending = j;
        }
        i = j;
    }
    if pending < n {
        bit_pack(&values[pending..], width, out);
    }
}

/// One bit-packed run of `values` (padded to a multiple of 8), least significant bit first.
fn bit_pack(values: &[u8], width: u8, out: &mut Vec<u8>) {
    put_uleb128(((values.len().div_ceil(8) as u64) << 1) | 1, out);
    bit_pack_body(values, width, out);
}

/// `values` bit-packed without a run header (also PLAIN booleans at width 1).
fn bit_pack_body(values: &[u8], width: u8, out: &mut Vec<u8>) {
    let groups = values.len().div_ceil(8);
    let start = out.len();
    out.resize(start + groups * width as usize, 0);
    let packed = &mut out[start..];
    // Each group of 8 values fills exactly `width` bytes.
    for (g, chunk) in values.chunks(8).enumerate() {
        let mut acc: u64 = 0;
        for (k, &v) in chunk.iter().enumerate() {
            acc |= (v as u64) << (k * width as usize);
        }
        let at = g * width as usize;
        packed[at..at + width as usize].copy_from_slice(&acc.to_le_bytes()[..width as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference decoder of the hybrid, written from the format description.
    fn decode_hybrid(mut data: &[u8], width: u8, n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let uleb = |d: &mut &[u8]| {
            let (mut v, mut shift) = (0u64, 0);
            loop {
                let b = d[0];
                *d = &d[1..];
                v |= ((b & 0x7f) as u64) << shift;
                shift += 7;
                if b < 0x80 {
                    return v;
                }
            }
        };
        while out.len() < n {
            let h = uleb(&mut data);
            if h & 1 == 1 {
                let groups = (h >> 1) as usize;
                for g in 0..groups {
                    let bytes = &data[g * width as usize..(g + 1) * width as usize];
                    let mut acc = [0u8; 8];
                    acc[..width as usize].copy_from_slice(bytes);
                    let acc = u64::from_le_bytes(acc);
                    for k in 0..8 {
                        out.push(((acc >> (k * width as usize)) & ((1 << width) - 1)) as u8);
                    }
                }
                data = &data[groups * width as usize..];
            } else {
                let len = (h >> 1) as usize;
                let v = data[0];
                data = &data[1..];
                out.extend(std::iter::repeat_n(v, len));
            }
        }
        out.truncate(n);
        out
    }

    #[test]
    fn hybrid_round_trips_runs_and_mixtures() {
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![3],
            vec![1; 1000],
            (0..1000).map(|i| (i % 7) as u8).collect(),
            // a run that starts mid-group and must lend values to the bit-packed group before it
            [vec![1, 2, 3], vec![5; 20], vec![0, 1], vec![6; 9], vec![2; 7]].concat(),
            (0..5000).map(|i| if i % 100 < 60 { 4 } else { (i % 3) as u8 }).collect(),
        ];
        for values in cases {
            for width in [3u8, 4, 8] {
                let mut out = Vec::new();
                encode_hybrid(&values, width, &mut out);
                assert_eq!(decode_hybrid(&out, width, values.len()), values, "width {width}");
            }
        }
    }

    #[test]
    fn long_runs_are_rle_encoded() {
        let mut out = Vec::new();
        encode_hybrid(&[2; 100_000], 2, &mut out);
        assert_eq!(out.len(), 4, "one RLE run: a 3-byte header and one value byte, got {out:?}");
    }

    #[test]
    fn bit_width_covers_the_largest_key() {
        assert_eq!(bit_width(0), 1);
        assert_eq!(bit_width(1), 1);
        assert_eq!(bit_width(2), 2);
        assert_eq!(bit_width(7), 3);
        assert_eq!(bit_width(8), 4);
        assert_eq!(bit_width(255), 8);
    }
}
