//! The message of a log entry, split into the layer's prefix label, the message name and its
//! `key=value` fields (reference §1.3 and §2):
//!
//! ```text
//! du=1 ue=0 DRB1 DL: TX PDU. dc=data p=0 si=first sn=5 pdu_len=1024 grant_len=1024
//! └──── prefix ────┘ └name ┘ └──────────────── fields ──────────────────────────┘
//! ```
//!
//! Prefixes exist on GTPU, SDAP, PDCP, F1-U, RLC and CU-UP lines; MAC and SCHED lines have none.

/// The identity a layer's prefix label carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prefix<'a> {
    /// `du=` (RLC, 24.04 and later).
    pub du: Option<u32>,
    /// `ue=`: the layer's UE index (CU-UP and DU index spaces differ).
    pub ue: Option<u32>,
    /// `SRB1`, `DRB1`, …
    pub rb: Option<&'a str>,
    /// `DL`, `UL`, `DL/UL`, `RX`, `TX`.
    pub dir: Option<&'a str>,
    /// `teid=`, `ul-teid=` or `dl-teid=` (text as logged, e.g. `0x000005`).
    pub teid: Option<&'a str>,
    /// `psi=` (SDAP).
    pub psi: Option<u32>,
    /// `QFI=` (SDAP).
    pub qfi: Option<u32>,
}

/// A parsed message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub prefix: Prefix<'a>,
    /// Leading text up to the first `". "` or `": "` or `key=` token, e.g. `TX PDU`, `DL PDU`,
    /// `Slot decisions`.
    pub name: &'a str,
    /// `key=value` pairs in order; values keep brackets, e.g. `rb=[0..10)`.
    pub fields: Vec<(&'a str, &'a str)>,
}

impl<'a> Message<'a> {
    pub fn get(&self, key: &str) -> Option<&'a str> {
        get_field(&self.fields, key)
    }

    /// A numeric field; hexadecimal with `0x`; `None` when absent or not a number (e.g. `{na}`).
    pub fn num(&self, key: &str) -> Option<u64> {
        parse_num(self.get(key)?)
    }
}

/// The value of `key` in parsed fields. Keys are short and often of equal length (`sn`, `so`,
/// `si`), so the first byte is compared before the rest: most lookups then never call `memcmp`.
#[inline]
pub fn get_field<'a>(fields: &[(&'a str, &'a str)], key: &str) -> Option<&'a str> {
    let kb = key.as_bytes();
    fields
        .iter()
        .find(|(k, _)| {
            let b = k.as_bytes();
            b.len() == kb.len() && b.first() == kb.first() && b == kb
        })
        .map(|(_, v)| *v)
}

/// The first position of an ASCII byte. (`str::find(char)` compares each candidate through
/// `memcmp`, which made it the ingest's largest cost.)
#[inline]
pub fn find_byte(s: &str, b: u8) -> Option<usize> {
    memchr::memchr(b, s.as_bytes())
}

/// The first position of a two-byte ASCII pattern such as `": "` or `". "`.
#[inline]
pub fn find_pair(s: &str, a: u8, b: u8) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(i) = memchr::memchr(a, &bytes[from..]) {
        let at = from + i;
        if bytes.get(at + 1) == Some(&b) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

pub fn parse_num(v: &str) -> Option<u64> {
    let v = v.trim_end_matches([',', ';']);
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

fn prefix_token<'a>(tok: &'a str, p: &mut Prefix<'a>) -> bool {
    if let Some(v) = tok.strip_prefix("du=") {
        p.du = v.parse().ok();
        p.du.is_some()
    } else if let Some(v) = tok.strip_prefix("ue=") {
        p.ue = v.parse().ok();
        p.ue.is_some()
    } else if let Some(v) =
        tok.strip_prefix("teid=").or_else(|| tok.strip_prefix("ul-teid=")).or_else(|| tok.strip_prefix("dl-teid="))
    {
        p.teid = Some(v);
        true
    } else if let Some(v) = tok.strip_prefix("psi=") {
        p.psi = v.parse().ok();
        p.psi.is_some()
    } else if let Some(v) = tok.strip_prefix("QFI=") {
        p.qfi = v.parse().ok();
        p.qfi.is_some()
    } else if tok.starts_with("addr=") {
        true
    } else if matches!(tok, "DL" | "UL" | "DL/UL" | "RX" | "TX") {
        p.dir = Some(tok);
        true
    } else if (tok.starts_with("DRB") || tok.starts_with("SRB")) && tok[3..].bytes().all(|b| b.is_ascii_digit()) {
        p.rb = Some(tok);
        true
    } else {
        false
    }
}

/// Splits `body` into prefix, name and fields. A leading label is taken as the prefix only when
/// every token before the first `": "` is a known prefix token, so MAC/SCHED text such as
/// `DL PDU: ue=0 …` is not mistaken for one.
pub fn parse_message(body: &str) -> Message<'_> {
    let mut prefix = Prefix::default();
    let mut rest = body;
    if let Some(i) = find_pair(body, b':', b' ') {
        let mut p = Prefix::default();
        let label = &body[..i];
        if !label.is_empty() && label.split(' ').all(|t| prefix_token(t, &mut p)) && p.ue.is_some() {
            prefix = p;
            rest = &body[i + 2..];
        }
    }
    // The name ends at the first ". " or ": ", or where the first `key=` token starts.
    let first_kv =
        find_byte(rest, b'=').map(|e| rest.as_bytes()[..e].iter().rposition(|&c| c == b' ').map_or(0, |s| s + 1));
    let end = [find_pair(rest, b'.', b' '), find_pair(rest, b':', b' '), first_kv]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    let name = rest[..end].trim_end().trim_end_matches('.');
    Message { prefix, name, fields: parse_fields(&rest[end..]) }
}

/// `key=value` tokens of a text (values end at a space or a comma outside brackets).
pub fn parse_fields(text: &str) -> Vec<(&str, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // Find the next '=' whose key is a word.
        let Some(eq) = find_byte(&text[i..], b'=').map(|e| e + i) else { break };
        let mut ks = eq;
        while ks > i && !matches!(b[ks - 1], b' ' | b',' | b'[' | b'(' | b':') {
            ks -= 1;
        }
        let key = &text[ks..eq];
        let mut ve = eq + 1;
        let mut depth = 0i32;
        while ve < b.len() {
            match b[ve] {
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' | b'}' if depth > 0 => depth -= 1,
                b' ' | b',' if depth == 0 => break,
                _ => {}
            }
            ve += 1;
        }
        if !key.is_empty() {
            out.push((key, &text[eq + 1..ve]));
        }
        i = ve.max(eq + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlc_pdcp_gtpu_lines_of_23_10_and_24_10() {
        let m = parse_message("ue=0 DRB1 DL: TX SDU. sdu_len=1403 pdcp_sn=7 queued_sdus=3 queued_bytes=4209");
        assert_eq!(m.prefix, Prefix { ue: Some(0), rb: Some("DRB1"), dir: Some("DL"), ..Prefix::default() });
        assert_eq!(m.name, "TX SDU");
        assert_eq!((m.num("sdu_len"), m.num("pdcp_sn"), m.num("queued_bytes")), (Some(1403), Some(7), Some(4209)));

        let m = parse_message("du=1 ue=0 DRB1 DL: TX PDU. dc=data p=0 si=mid sn=5 so=731 pdu_len=500 grant_len=500");
        assert_eq!((m.prefix.du, m.prefix.ue, m.get("si"), m.num("so")), (Some(1), Some(0), Some("mid"), Some(731)));

        let m = parse_message("ue=0 DL teid=0x000001: RX SDU. sdu_len=1400 teid=0x000001 qos_flow=QFI=1");
        assert_eq!((m.prefix.teid, m.get("qos_flow"), m.num("teid")), (Some("0x000001"), Some("QFI=1"), Some(1)));

        let m = parse_message("ue=1 psi=4 QFI=1 DRB1 DL: TX PDU. QFI=1 pdu_len=1278");
        assert_eq!((m.prefix.psi, m.prefix.qfi, m.num("pdu_len")), (Some(4), Some(1), Some(1278)));

        let m = parse_message("ue=0 DRB1 UL: Reordering timer expired. rx_reord=12 queued_sdus=2");
        assert_eq!((m.name, m.num("rx_reord")), ("Reordering timer expired", Some(12)));

        let m = parse_message("ue=0 DRB1 DL: Dropping SDU. Cause: RLC SDU queue is full");
        assert_eq!((m.name, m.fields.len()), ("Dropping SDU", 0));
    }

    #[test]
    fn mac_and_sched_lines_have_no_prefix() {
        let m = parse_message("DL PDU: ue=0 rnti=0x4601 size=1500: SDU: lcid=4 size=731, SDU: lcid=4 size=672");
        assert_eq!(m.prefix, Prefix::default());
        assert_eq!((m.num("ue"), m.num("rnti"), m.get("size")), (Some(0), Some(0x4601), Some("1500:")));
        let sizes: Vec<_> = m.fields.iter().filter(|(k, _)| *k == "size").map(|(_, v)| parse_num(v)).collect();
        assert_eq!(sizes, vec![None, Some(731), Some(672)]);

        let m = parse_message(
            "Slot decisions cell=0 t=23us (1 PDSCH, 0 PUSCHs): DL: ue=0 c-rnti=0x4601 rb=[0..10) h_id=3 ss_id=2 k1=4 rv=0 tbs=309",
        );
        assert_eq!((m.get("rb"), m.num("h_id"), m.num("tbs")), (Some("[0..10)"), Some(3), Some(309)));
        assert_eq!(m.num("c-rnti"), Some(0x4601));
    }

    #[test]
    fn nothing_breaks_on_odd_text() {
        for s in ["", ":", ": x", "=", "a=", "=b", "x. y=[unclosed", "ue=: y", "k=v,,", "ue=0 weird: x=1"] {
            let m = parse_message(s);
            for (k, _) in &m.fields {
                assert!(!k.is_empty());
            }
        }
        assert_eq!(parse_message("ue=0 weird: x=1").prefix, Prefix::default());
    }
}
