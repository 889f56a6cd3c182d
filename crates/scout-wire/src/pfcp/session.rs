//! What a captured PFCP message says about a session: the SEIDs, the tunnels, the UE addresses,
//! the slice, the DNN and network instance, the QFIs and the cause — what `scout ingest pcap` and
//! the live probe pair N4 with N3 and N6 by.

use std::net::IpAddr;

use super::{header, ie, Ies};

/// What a message says about a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionInfo {
    /// F-SEID IE: the sender's own SEID (CP F-SEID in an establishment request, UP F-SEID in its
    /// response).
    pub f_seid: Option<u64>,
    /// TEIDs the UPF receives on (F-TEID of a PDI / Created PDR).
    pub up_teids: Vec<u32>,
    /// TEIDs the UPF sends to (Outer Header Creation: the gNB's downlink tunnel).
    pub an_teids: Vec<u32>,
    pub ue_addrs: Vec<IpAddr>,
    pub snssai: Option<(u8, Option<u32>)>,
    pub dnn: Option<String>,
    pub network_instance: Option<String>,
    pub qfis: Vec<u8>,
    pub cause: Option<u8>,
}

/// A PFCP message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    pub msg_type: u8,
    pub seid: Option<u64>,
    pub seq: u32,
    pub info: SessionInfo,
    /// A digest of the whole message (header and IEs): a retransmission repeats it exactly.
    pub digest: u64,
}

/// FNV-1a over the message's bytes: stable across runs and platforms (determinism), and a
/// retransmission (the same message resent, TS 29.244 §6.4) has the same digest.
fn digest(d: &[u8]) -> u64 {
    d.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Reads one message: its header, and what its IEs (grouped ones walked into) say of the session.
pub fn parse(d: &[u8]) -> Result<Msg, &'static str> {
    let h = header(d).map_err(|e| e.what)?;
    let mut info = SessionInfo::default();
    ies(h.ies, &mut info, 0)?;
    Ok(Msg { msg_type: h.msg_type, seid: h.seid, seq: h.seq, info, digest: digest(h.message) })
}

/// Walks IEs, and the grouped IEs that hold what we need.
fn ies(d: &[u8], info: &mut SessionInfo, depth: u8) -> Result<(), &'static str> {
    for x in Ies::new(d, 0) {
        let (t, v, _) = x.map_err(|e| e.what)?;
        match t {
            ie::CREATE_PDR
            | ie::PDI
            | ie::CREATE_FAR
            | ie::FORWARDING_PARAMETERS
            | ie::CREATED_PDR
            | ie::UPDATE_PDR
            | ie::UPDATE_FAR
            | ie::UPDATE_FORWARDING_PARAMETERS
                if depth < 4 =>
            {
                ies(v, info, depth + 1)?
            }
            ie::CAUSE if !v.is_empty() => info.cause = Some(v[0]),
            ie::F_SEID if v.len() >= 9 => {
                info.f_seid = Some(u64::from_be_bytes(v[1..9].try_into().unwrap_or_default()))
            }
            ie::F_TEID if v.len() >= 5 && v[0] & 0x04 == 0 => {
                // §8.2.3: flags (V4, V6, CH, CHID), TEID unless CH.
                info.up_teids.push(u32::from_be_bytes([v[1], v[2], v[3], v[4]]));
            }
            ie::OUTER_HEADER_CREATION if v.len() >= 6 && v[0] & 0x03 != 0 => {
                // §8.2.56: description (GTP-U/UDP/IPv4 or IPv6), then the TEID.
                info.an_teids.push(u32::from_be_bytes([v[2], v[3], v[4], v[5]]));
            }
            ie::UE_IP_ADDRESS if !v.is_empty() => {
                // §8.2.62: flags V6 (bit 1), V4 (bit 2); IPv4 first, then IPv6.
                let mut o = 1;
                if v[0] & 0x02 != 0 && v.len() >= o + 4 {
                    info.ue_addrs.push(IpAddr::from([v[o], v[o + 1], v[o + 2], v[o + 3]]));
                    o += 4;
                }
                if v[0] & 0x01 != 0 && v.len() >= o + 16 {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&v[o..o + 16]);
                    info.ue_addrs.push(IpAddr::from(a));
                }
            }
            ie::S_NSSAI if !v.is_empty() => {
                let sd = (v.len() >= 4).then(|| u32::from_be_bytes([0, v[1], v[2], v[3]]));
                info.snssai = Some((v[0], sd.filter(|&s| s != 0xff_ffff)));
            }
            ie::APN_DNN => info.dnn = Some(dns_labels(v)),
            ie::NETWORK_INSTANCE => info.network_instance = Some(dns_labels(v)),
            ie::QFI if !v.is_empty() => info.qfis.push(v[0] & 0x3f),
            ie::SOURCE_INTERFACE => {}
            _ => {}
        }
    }
    Ok(())
}

/// A DNN / network instance: DNS labels (length-prefixed) or plain text.
fn dns_labels(v: &[u8]) -> String {
    let mut out = String::new();
    let mut o = 0;
    let labelled = {
        let mut i = 0;
        while i < v.len() {
            i += 1 + usize::from(v[i]);
        }
        i == v.len() && !v.is_empty() && (v[0] as usize) < v.len() && v[0] != 0
    };
    if !labelled {
        return printable(v);
    }
    while o < v.len() {
        let n = usize::from(v[o]);
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&printable(&v[o + 1..(o + 1 + n).min(v.len())]));
        o += 1 + n;
    }
    out
}

/// A name from the wire as text a terminal and a report show as it is: UTF-8 without control
/// characters is kept; anything else (a fuzzed or binary IE) is shown byte by byte, printable
/// ASCII as itself and the rest as `\xNN` (a backslash as `\\`).
pub fn printable(v: &[u8]) -> String {
    match std::str::from_utf8(v) {
        Ok(s) if !s.chars().any(|c| c.is_control() || c == '\\') => s.to_string(),
        _ => {
            let mut out = String::with_capacity(v.len() * 2);
            for &b in v {
                match b {
                    b'\\' => out.push_str("\\\\"),
                    0x20..=0x7e => out.push(char::from(b)),
                    _ => out.push_str(&format!("\\x{b:02x}")),
                }
            }
            out
        }
    }
}
