//! What the log says is wrong: its warning (`[W]`) and error (`[E]`) entries, counted per
//! component (srslog's logger id: `OFH`, `RF`, `PHY`, `SCHED`, …) and per message, for the summary
//! and the report. They explain latency a user is looking at — missed fronthaul deadlines, RF
//! underflows, late slots, dropped PDUs — and a log with a thousand of them is not a clean run.
//!
//! A message is grouped by its text with every number blanked (`N`), so `missed incoming
//! User-Plane PRACH messages for slot '512.3'` and `… '513.3'` are one message; each group keeps
//! its count and its first `file:line`.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::reader::Entry;

/// Distinct messages kept; the rest are counted under their component only.
const MAX_MESSAGES: usize = 2000;
/// Characters of a message's text kept for grouping and showing.
const MESSAGE_CHARS: usize = 120;

#[derive(Debug, Default)]
pub struct LogHealth {
    /// Per component: (warnings, errors).
    by_component: BTreeMap<String, (u64, u64)>,
    /// (component, level, message) → (count, first file, first line).
    messages: HashMap<(String, u8, String), (u64, usize, u64)>,
    /// Warning and error entries whose message was not kept (more than [`MAX_MESSAGES`]).
    messages_not_kept: u64,
}

/// `text` with each number (a run starting with a digit, hex digits and `x` after it) as `N`,
/// cut to [`MESSAGE_CHARS`] characters.
pub fn template(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MESSAGE_CHARS + 1));
    let mut chars = text.chars().peekable();
    let mut n = 0;
    while let Some(c) = chars.next() {
        if n == MESSAGE_CHARS {
            out.push('…');
            break;
        }
        if c.is_ascii_digit() {
            while chars.peek().is_some_and(|d| d.is_ascii_hexdigit() || *d == 'x') {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
        n += 1;
    }
    out.trim_end().to_string()
}

impl LogHealth {
    /// One entry of file number `file`.
    pub fn entry(&mut self, e: &Entry<'_>, file: usize) {
        let level = match e.header.level {
            Some(l @ (b'W' | b'E')) => l,
            _ => return,
        };
        let c = self.by_component.entry(e.header.logger.to_string()).or_default();
        if level == b'W' {
            c.0 += 1;
        } else {
            c.1 += 1;
        }
        let key = (e.header.logger.to_string(), level, template(e.header.body));
        let full = self.messages.len() >= MAX_MESSAGES;
        match self.messages.get_mut(&key) {
            Some(m) => m.0 += 1,
            None if full => self.messages_not_kept += 1,
            None => {
                self.messages.insert(key, (1, file, e.line));
            }
        }
    }

    pub fn warnings(&self) -> u64 {
        self.by_component.values().map(|c| c.0).sum()
    }

    pub fn errors(&self) -> u64 {
        self.by_component.values().map(|c| c.1).sum()
    }

    /// For `run.json` (`ingest.log_health`): totals, per component, and the `top` most frequent
    /// messages (errors first at equal counts), each with its first `file:line`.
    pub fn to_json(&self, paths: &[String], top: usize) -> Value {
        let mut m: Vec<_> = self.messages.iter().collect();
        m.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0 .1.cmp(&b.0 .1)).then(a.0.cmp(b.0)));
        json!({
            "warnings": self.warnings(),
            "errors": self.errors(),
            "by_component": self.by_component.iter().map(|(k, (w, e))| (k.clone(), json!({"warnings": w, "errors": e}))).collect::<serde_json::Map<_, _>>(),
            "distinct_messages": self.messages.len(),
            "messages_not_grouped": self.messages_not_kept,
            "top_messages": m.iter().take(top).map(|((logger, level, text), (n, f, line))| json!({
                "component": logger,
                "level": if *level == b'E' { "error" } else { "warning" },
                "message": text,
                "count": n,
                "first": format!("{}:{line}", paths.get(*f).map_or("?", String::as_str)),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srsran::reader::EntryReader;

    #[test]
    fn warnings_and_errors_are_counted_per_component_and_message() {
        let log = "\
2026-01-10T10:00:00.000001 [OFH     ] [W] [  512.3] Sector#0: missed incoming User-Plane PRACH messages for slot '512.3'
2026-01-10T10:00:00.000002 [OFH     ] [W] [  513.3] Sector#0: missed incoming User-Plane PRACH messages for slot '513.3'
2026-01-10T10:00:00.000003 [RF      ] [E] Underflow detected at 0x1f
2026-01-10T10:00:00.000004 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1403 sn=0 count=0
";
        let mut r = EntryReader::new(log.as_bytes());
        let mut h = LogHealth::default();
        while let Some(e) = r.next_entry().unwrap() {
            h.entry(&e, 0);
        }
        assert_eq!((h.warnings(), h.errors()), (2, 1));
        let j = h.to_json(&["gnb.log".into()], 5);
        assert_eq!(j["by_component"]["OFH"]["warnings"], 2);
        assert_eq!(j["by_component"]["RF"]["errors"], 1);
        assert_eq!(j["top_messages"][0]["count"], 2);
        assert_eq!(
            j["top_messages"][0]["message"],
            "Sector#N: missed incoming User-Plane PRACH messages for slot 'N.N'"
        );
        assert_eq!(j["top_messages"][0]["first"], "gnb.log:1");
        assert_eq!(j["top_messages"][1]["message"], "Underflow detected at N");
    }
}
