//! One srslog line header (`lib/srslog/formatters/text_formatter.cpp`):
//!
//! ```text
//! 2023-11-06T20:04:25.872601 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1403 sn=0 count=0
//! 2024-11-25T15:08:25.412345 [SCHED   ] [D] [   276.14] Slot decisions pci=1 t=12us (1 PDSCH, 0 PUSCH ...
//! 2024-11-25T15:08:25.412345 [METRICS ] {"timestamp": ...}            (no level tag)
//! ```
//!
//! Timestamp: UTC wall clock with µs resolution; logger id padded to 8 (longer ids are not cut);
//! level letter `E`/`W`/`I`/`D`; the `[sfn.slot]` context only on MAC, SCHED, PHY, FAPI and RU lines.

/// The parsed header of a log line; `body` is the rest of the line (prefix label and message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Microseconds since the Unix epoch (UTC).
    pub t_us: i64,
    /// Logger id without padding, e.g. `PDCP`, `CU-F1-U`, `UL-PHY1`.
    pub logger: &'a str,
    /// `b'E'`, `b'W'`, `b'I'` or `b'D'`; `None` for loggers without a level tag (`METRICS`).
    pub level: Option<u8>,
    /// `(sfn, slot)` when the line carries a slot context.
    pub slot: Option<(u32, u32)>,
    pub body: &'a str,
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn digits(b: &[u8]) -> Option<i64> {
    let mut v = 0i64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    Some(v)
}

/// The years a log line may carry: any two of them are less than 2^63 ns apart, so `t_ns` (time
/// since the run's first entry) cannot wrap. A line dated outside is not an entry: the reader
/// counts it (`impossible_time_lines`) and skips it.
pub const YEARS: std::ops::RangeInclusive<i64> = 1970..=2200;

/// Whether a line has the shape of a srslog header (`YYYY-MM-DDTHH:MM:SS.ffffff [`), whatever its
/// values: a header [`parse_header`] refuses is an impossible time, not a continuation line.
pub fn looks_like_header(line: &str) -> bool {
    let s = line.as_bytes();
    s.len() >= 28
        && [4, 7].iter().all(|&i| s[i] == b'-')
        && s[10] == b'T'
        && s[13] == b':'
        && s[16] == b':'
        && s[19] == b'.'
        && s[26] == b' '
        && s[27] == b'['
        && [0..4, 5..7, 8..10, 11..13, 14..16, 17..19, 20..26].into_iter().all(|r| s[r].iter().all(u8::is_ascii_digit))
}

/// Parses `YYYY-MM-DDTHH:MM:SS.ffffff` (26 bytes) into µs since the epoch.
pub fn parse_timestamp(s: &[u8]) -> Option<i64> {
    if s.len() < 26 || s[4] != b'-' || s[7] != b'-' || s[10] != b'T' || s[13] != b':' || s[16] != b':' || s[19] != b'.'
    {
        return None;
    }
    let (y, mo, d) = (digits(&s[0..4])?, digits(&s[5..7])?, digits(&s[8..10])?);
    let (h, mi, se, us) = (digits(&s[11..13])?, digits(&s[14..16])?, digits(&s[17..19])?, digits(&s[20..26])?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    if !YEARS.contains(&y) {
        // Year 9999 against 2023 is 2.5e20 ns: it would wrap `t_ns`.
        return None;
    }
    // Consecutive lines share their date: remember the last one's day number.
    thread_local!(static LAST_DAY: std::cell::Cell<(i64, i64)> = const { std::cell::Cell::new((-1, 0)) });
    let key = (y * 100 + mo) * 100 + d;
    let days = LAST_DAY.with(|c| {
        let (k, days) = c.get();
        if k == key {
            days
        } else {
            let days = days_from_civil(y, mo, d);
            c.set((key, days));
            days
        }
    });
    Some(((days * 86_400 + h * 3600 + mi * 60 + se) * 1_000_000) + us)
}

/// Formats µs since the epoch as srslog does (`YYYY-MM-DDTHH:MM:SS.ffffff`, UTC): the inverse of
/// [`parse_timestamp`] (Howard Hinnant's `civil_from_days`).
pub fn format_timestamp(t_us: i64) -> String {
    let (secs, us) = (t_us.div_euclid(1_000_000), t_us.rem_euclid(1_000_000));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{us:06}", sod / 3600, sod % 3600 / 60, sod % 60)
}

/// Parses a line's header; `None` when the line does not start with one (a continuation line).
pub fn parse_header(line: &str) -> Option<Header<'_>> {
    let b = line.as_bytes();
    let t_us = parse_timestamp(b)?;
    let rest = line.get(26..)?.strip_prefix(" [")?;
    let close = super::message::find_byte(rest, b']')?;
    let logger = rest[..close].trim_end();
    if logger.is_empty() {
        return None;
    }
    let mut rest = rest[close + 1..].strip_prefix(' ').unwrap_or(&rest[close + 1..]);
    let mut level = None;
    let rb = rest.as_bytes();
    if rb.len() >= 3 && rb[0] == b'[' && rb[2] == b']' && matches!(rb[1], b'E' | b'W' | b'I' | b'D') {
        level = Some(rb[1]);
        rest = rest[3..].strip_prefix(' ').unwrap_or(&rest[3..]);
    }
    let mut slot = None;
    if let Some(inner) = rest.strip_prefix('[') {
        if let Some(end) = super::message::find_byte(inner, b']') {
            let ctx = inner[..end].trim_start();
            if let Some((sfn, sl)) = ctx.split_once('.') {
                if let Some(at) = digits(sfn.as_bytes()).zip(digits(sl.as_bytes())).and_then(slot_context) {
                    slot = Some(at);
                    rest = inner[end + 1..].strip_prefix(' ').unwrap_or(&inner[end + 1..]);
                }
            }
        }
    }
    Some(Header { t_us, logger, level, slot, body: rest })
}

/// The largest slots per frame: 10 · 2^µ with µ ≤ 6 (TS 38.211 §4.3.1, Table 4.3.2-1, Rel-17).
pub const MAX_SLOTS_PER_FRAME: i64 = 640;

/// A `(sfn, slot)` that can be: SFN 0..=1023 (TS 38.211 §4.3.1) and a slot below
/// [`MAX_SLOTS_PER_FRAME`]. Anything else is not a slot context (a corrupt line's numbers once
/// overflowed the frame counter).
pub fn slot_context((sfn, slot): (i64, i64)) -> Option<(u32, u32)> {
    ((0..1024).contains(&sfn) && (0..MAX_SLOTS_PER_FRAME).contains(&slot)).then_some((sfn as u32, slot as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_microseconds() {
        // python: datetime(2023,11,6,20,4,25,872601,tzinfo=utc).timestamp() * 1e6
        assert_eq!(parse_timestamp(b"2023-11-06T20:04:25.872601"), Some(1_699_301_065_872_601));
        assert_eq!(parse_timestamp(b"1970-01-01T00:00:00.000001"), Some(1));
        assert_eq!(parse_timestamp(b"2024-02-29T23:59:59.999999"), Some(1_709_251_199_999_999));
        assert_eq!(parse_timestamp(b"2024-13-01T00:00:00.000000"), None);
        assert_eq!(parse_timestamp(b"2024-01-01 00:00:00.000000"), None);
    }

    #[test]
    fn formatting_inverts_parsing() {
        for t in [0, 1, 1_699_301_065_872_601, 1_709_251_199_999_999, 951_782_400_000_000, 4_102_444_800_123_456] {
            let s = format_timestamp(t);
            assert_eq!(parse_timestamp(s.as_bytes()), Some(t), "{s}");
        }
        assert_eq!(format_timestamp(1_699_301_065_872_601), "2023-11-06T20:04:25.872601");
    }

    #[test]
    fn headers_of_each_shape() {
        let h = parse_header("2023-11-06T20:04:25.986303 [GTPU    ] [I] Tunnel added. teid=0x000000").unwrap();
        assert_eq!((h.logger, h.level, h.slot, h.body), ("GTPU", Some(b'I'), None, "Tunnel added. teid=0x000000"));
        let h = parse_header("2024-11-25T15:08:25.160955 [SCHED   ] [D] [   276.14] Slot decisions pci=1").unwrap();
        assert_eq!((h.logger, h.level, h.slot, h.body), ("SCHED", Some(b'D'), Some((276, 14)), "Slot decisions pci=1"));
        let h = parse_header("2024-11-25T15:08:25.160955 [MAC     ] [I] [     0.0] DL PDU: ue=0").unwrap();
        assert_eq!(h.slot, Some((0, 0)));
        let h = parse_header("2023-11-06T20:04:25.989469 [CU-UP-E1] [I] CU-UP E1 Setup").unwrap();
        assert_eq!(h.logger, "CU-UP-E1");
        let h = parse_header("2024-11-25T15:08:25.160955 [zmq:tx:0:0] [W] late").unwrap();
        assert_eq!((h.logger, h.level), ("zmq:tx:0:0", Some(b'W')));
        let h = parse_header("2024-11-25T15:08:25.160955 [METRICS ] {\"timestamp\": 1}").unwrap();
        assert_eq!((h.logger, h.level, h.body), ("METRICS", None, "{\"timestamp\": 1}"));
        // A bracketed message that is not a slot context stays in the body.
        let h = parse_header("2024-11-25T15:08:25.160955 [GNB     ] [I] [note] text").unwrap();
        assert_eq!((h.slot, h.body), (None, "[note] text"));
        for bad in ["    0000: 80 00 45", "- DL PDCCH: rnti=0x4601", "", "2024-11-25T15:08:25.16 [X] [I] y", "{"] {
            assert!(parse_header(bad).is_none(), "{bad:?}");
        }
    }

    /// A slot context that cannot be (an SFN past 1023, numbers past i64) once overflowed the
    /// frame counter (found by the fuzzer, issue 20): it is not a slot context.
    #[test]
    fn impossible_slot_contexts_are_not_slots() {
        let h = |ctx: &str| parse_header(&format!("2023-11-06T20:04:25.872601 [MAC     ] [I] [{ctx}] x")).unwrap().slot;
        assert_eq!(h("1023.79"), Some((1023, 79)));
        assert_eq!(h("   276.14"), Some((276, 14)));
        assert_eq!(h("1024.0"), None);
        assert_eq!(h("7.640"), None);
        assert_eq!(h("99999999999999999999.5"), None);
    }
}
