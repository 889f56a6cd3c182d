//! PFCP (N4, TS 29.244): message headers, the IEs that identify sessions, their tunnels, UE
//! addresses and slices, and request/response pairing.
//!
//! A request is answered by the message type one above it (Table 7.3-1) with the same sequence
//! number (§7.2.2.2), sent from the request's destination back to its source. Each pair becomes a
//! `pfcp_pair` control row (latency in ns); requests never answered are reported.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use scout_events::{ControlEvent, Layer, Node, Sink};
use serde_json::{json, Value};

/// PFCP's UDP port (TS 29.244 §4.2.1).
pub const PFCP_PORT: u16 = 8805;

/// The procedure a message type belongs to and whether it is a request (TS 29.244 Table 7.3-1).
pub fn msg_kind(t: u8) -> Option<(&'static str, bool)> {
    Some(match t {
        1 => ("heartbeat", true),
        2 => ("heartbeat", false),
        3 => ("pfd_management", true),
        4 => ("pfd_management", false),
        5 => ("association_setup", true),
        6 => ("association_setup", false),
        7 => ("association_update", true),
        8 => ("association_update", false),
        9 => ("association_release", true),
        10 => ("association_release", false),
        11 => ("version_not_supported", false),
        12 => ("node_report", true),
        13 => ("node_report", false),
        14 => ("session_set_deletion", true),
        15 => ("session_set_deletion", false),
        16 => ("session_set_modification", true),
        17 => ("session_set_modification", false),
        50 => ("session_establishment", true),
        51 => ("session_establishment", false),
        52 => ("session_modification", true),
        53 => ("session_modification", false),
        54 => ("session_deletion", true),
        55 => ("session_deletion", false),
        56 => ("session_report", true),
        57 => ("session_report", false),
        _ => return None,
    })
}

/// IE types (TS 29.244 Table 8.1.2-1): those Scout's PFCP reader (here) and Scout's UPF and SMF
/// (`scout-upf`) read and write — one table for both.
pub mod ie {
    pub const CREATE_PDR: u16 = 1;
    pub const PDI: u16 = 2;
    pub const CREATE_FAR: u16 = 3;
    pub const FORWARDING_PARAMETERS: u16 = 4;
    pub const CREATE_QER: u16 = 7;
    pub const CREATED_PDR: u16 = 8;
    pub const UPDATE_PDR: u16 = 9;
    pub const UPDATE_FAR: u16 = 10;
    pub const UPDATE_FORWARDING_PARAMETERS: u16 = 11;
    pub const REMOVE_PDR: u16 = 15;
    pub const REMOVE_FAR: u16 = 16;
    pub const CAUSE: u16 = 19;
    pub const SOURCE_INTERFACE: u16 = 20;
    pub const F_TEID: u16 = 21;
    pub const NETWORK_INSTANCE: u16 = 22;
    pub const GATE_STATUS: u16 = 25;
    pub const PRECEDENCE: u16 = 29;
    pub const DESTINATION_INTERFACE: u16 = 42;
    pub const APPLY_ACTION: u16 = 44;
    pub const PDR_ID: u16 = 56;
    pub const F_SEID: u16 = 57;
    pub const NODE_ID: u16 = 60;
    pub const OUTER_HEADER_CREATION: u16 = 84;
    pub const UE_IP_ADDRESS: u16 = 93;
    pub const OUTER_HEADER_REMOVAL: u16 = 95;
    pub const RECOVERY_TIME_STAMP: u16 = 96;
    pub const FAR_ID: u16 = 108;
    pub const QER_ID: u16 = 109;
    pub const QFI: u16 = 124;
    pub const APN_DNN: u16 = 159;
    pub const S_NSSAI: u16 = 257;
}

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

pub fn parse(d: &[u8]) -> Result<Msg, &'static str> {
    if d.len() < 8 {
        return Err("PFCP header truncated");
    }
    if d[0] >> 5 != 1 {
        return Err("PFCP version is not 1");
    }
    let s = d[0] & 0x01 != 0;
    let msg_type = d[1];
    let len = usize::from(u16::from_be_bytes([d[2], d[3]]));
    if d.len() < 4 + len {
        return Err("PFCP message truncated (length field beyond the datagram)");
    }
    let body = &d[4..4 + len];
    let (seid, rest) = if s {
        if body.len() < 12 {
            return Err("PFCP header truncated");
        }
        (Some(u64::from_be_bytes(body[..8].try_into().unwrap_or_default())), &body[8..])
    } else {
        if body.len() < 4 {
            return Err("PFCP header truncated");
        }
        (None, body)
    };
    let seq = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]);
    let mut info = SessionInfo::default();
    ies(&rest[4..], &mut info, 0)?;
    Ok(Msg { msg_type, seid, seq, info, digest: digest(&d[..4 + len]) })
}

/// Walks IEs (TLV: type 2 bytes, length 2 bytes; vendor IEs, type ≥ 32768, carry an enterprise
/// id first) and the grouped IEs that hold what we need.
fn ies(mut d: &[u8], info: &mut SessionInfo, depth: u8) -> Result<(), &'static str> {
    while !d.is_empty() {
        if d.len() < 4 {
            return Err("PFCP IE header truncated");
        }
        let t = u16::from_be_bytes([d[0], d[1]]);
        let l = usize::from(u16::from_be_bytes([d[2], d[3]]));
        if d.len() < 4 + l {
            return Err("PFCP IE truncated");
        }
        let v = &d[4..4 + l];
        d = &d[4 + l..];
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

/// How close two sightings of one IP packet must be to count as one message seen at two capture
/// points. A retransmission is a new IP packet (a new IPv4 identification) sent when T1 expires,
/// seconds later in every core (TS 29.244 §6.4 leaves T1 to the implementation; Open5GS and
/// free5GC use 3 s); sightings of one packet on the interfaces it crosses are microseconds apart.
pub const DUPLICATE_WINDOW_NS: i64 = 100_000_000;

/// A session as learned from its messages.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub cp_seid: Option<u64>,
    pub up_seid: Option<u64>,
    pub ue_addrs: Vec<IpAddr>,
    pub slice: Option<String>,
    pub teids: Vec<u32>,
}

/// (sequence number, requester, responder).
type OpenKey = (u32, SocketAddr, SocketAddr);

/// A request waiting for its response.
#[derive(Clone, Debug)]
struct OpenRequest {
    /// When it was first sent.
    t_ns: i64,
    msg_type: u8,
    seid: Option<u64>,
    digest: u64,
    retransmissions: u32,
}

/// Pairs requests with responses and learns sessions.
#[derive(Default)]
pub struct Tracker {
    /// Requests waiting for their response, oldest first per key.
    open: HashMap<OpenKey, Vec<OpenRequest>>,
    pub pairs: Vec<Pair>,
    pub unanswered: Vec<Value>,
    pub responses_without_request: u64,
    /// Requests sent again unchanged while the first was unanswered (TS 29.244 §6.4: the same
    /// message with the same sequence number, when T1 expires).
    pub retransmissions: u64,
    /// Requests that reuse an unanswered request's sequence number with other content (another
    /// message type, SEID or IEs): a new request, not a retransmission. Some peers wrap or fix
    /// their sequence numbers (0xFFFFFF); each such request is paired on its own.
    pub sequence_number_reuse: u64,
    /// Distinct messages (a message seen again at another capture point counts once).
    pub messages: u64,
    /// The same IP packet seen again within [`DUPLICATE_WINDOW_NS`]: one message seen at two
    /// capture points (an `any` capture sees it on each interface it crosses), not a
    /// retransmission.
    pub duplicate_sightings: u64,
    /// Packet identity → when it was last seen, for duplicate sightings.
    seen: HashMap<u64, i64>,
    seen_order: std::collections::VecDeque<(i64, u64)>,
    pub by_type: HashMap<&'static str, u64>,
    pub unknown_types: u64,
    pub sessions: Vec<Session>,
    /// CP SEID / UP SEID → session.
    by_cp: HashMap<u64, usize>,
    by_up: HashMap<u64, usize>,
    /// TEID → session.
    pub by_teid: HashMap<u32, usize>,
    /// UE address → session.
    pub by_ue: HashMap<IpAddr, usize>,
    /// An establishment request's session, until its response: (seq, requester) → session.
    establishing: HashMap<(u32, SocketAddr), usize>,
}

#[derive(Clone, Debug)]
pub struct Pair {
    pub t_ns: i64,
    pub latency_ns: i64,
    pub kind: &'static str,
    pub seq: u32,
    pub seid: Option<u64>,
    pub requester: SocketAddr,
    pub responder: SocketAddr,
    pub retransmissions: u32,
    pub cause: Option<u8>,
}

impl Tracker {
    /// One sighting of a PFCP message whose IP packet has `identity`
    /// ([`super::packet::identity`]); returns false when it is a duplicate sighting.
    pub fn sighting(&mut self, t_ns: i64, identity: u64, src: SocketAddr, dst: SocketAddr, m: &Msg) -> bool {
        // (The identity hashes 16 bytes past the IP header; the sequence number lies beyond them.)
        let identity = identity ^ (u64::from(m.seq) << 8 | u64::from(m.msg_type)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        while let Some(&(t, k)) = self.seen_order.front() {
            if t >= t_ns.saturating_sub(DUPLICATE_WINDOW_NS) {
                break;
            }
            self.seen_order.pop_front();
            if self.seen.get(&k) == Some(&t) {
                self.seen.remove(&k);
            }
        }
        if self.seen.get(&identity).is_some_and(|&t| t_ns.saturating_sub(t) <= DUPLICATE_WINDOW_NS) {
            self.duplicate_sightings += 1;
            return false;
        }
        self.seen.insert(identity, t_ns);
        self.seen_order.push_back((t_ns, identity));
        self.message(t_ns, src, dst, m);
        true
    }

    /// One message (each message once: see [`Tracker::sighting`]).
    pub fn message(&mut self, t_ns: i64, src: SocketAddr, dst: SocketAddr, m: &Msg) {
        self.messages += 1;
        let Some((kind, request)) = msg_kind(m.msg_type) else {
            self.unknown_types += 1;
            return;
        };
        *self.by_type.entry(kind).or_insert(0) += 1;
        if request {
            let open = self.open.entry((m.seq, src, dst)).or_default();
            if let Some(o) = open.iter_mut().find(|o| o.digest == m.digest && o.msg_type == m.msg_type) {
                // The same message again: a retransmission (T1 expired, §6.4).
                o.retransmissions += 1;
                self.retransmissions += 1;
                return;
            }
            if !open.is_empty() {
                self.sequence_number_reuse += 1;
            }
            open.push(OpenRequest { t_ns, msg_type: m.msg_type, seid: m.seid, digest: m.digest, retransmissions: 0 });
            self.learn(m, true, src);
        } else {
            // The response answers the oldest open request of its procedure (its type less one,
            // Table 7.3-1) with its sequence number, from its destination to its source.
            let key = (m.seq, dst, src);
            let open = self.open.get_mut(&key);
            let at = open.as_ref().and_then(|o| o.iter().position(|r| msg_kind(r.msg_type).map(|k| k.0) == Some(kind)));
            match (open, at) {
                (Some(open), Some(i)) => {
                    let r = open.remove(i);
                    if open.is_empty() {
                        self.open.remove(&key);
                    }
                    self.pairs.push(Pair {
                        t_ns: r.t_ns,
                        latency_ns: t_ns - r.t_ns,
                        kind,
                        seq: m.seq,
                        seid: r.seid.or(m.seid),
                        requester: dst,
                        responder: src,
                        retransmissions: r.retransmissions,
                        cause: m.info.cause,
                    });
                }
                _ => self.responses_without_request += 1,
            }
            self.learn(m, false, dst);
        }
    }

    fn learn(&mut self, m: &Msg, request: bool, requester: SocketAddr) {
        let i = &m.info;
        let s = match (m.msg_type, request) {
            (50, true) => {
                let s = self.sessions.len();
                self.sessions.push(Session { cp_seid: i.f_seid, ..Session::default() });
                if let Some(cp) = i.f_seid {
                    self.by_cp.insert(cp, s);
                }
                self.establishing.insert((m.seq, requester), s);
                Some(s)
            }
            (51, false) => {
                let s = self.establishing.remove(&(m.seq, requester));
                if let (Some(s), Some(up)) = (s, i.f_seid) {
                    self.sessions[s].up_seid = Some(up);
                    self.by_up.insert(up, s);
                }
                s
            }
            // Requests to the UPF name its SEID; responses to the SMF the SMF's.
            (52 | 54 | 56, true) | (53 | 55 | 57, false) => {
                m.seid.and_then(|x| self.by_up.get(&x).or_else(|| self.by_cp.get(&x)).copied())
            }
            _ => None,
        };
        let Some(s) = s else { return };
        let ses = &mut self.sessions[s];
        for &t in i.up_teids.iter().chain(&i.an_teids) {
            if !ses.teids.contains(&t) {
                ses.teids.push(t);
            }
            self.by_teid.insert(t, s);
        }
        for &a in &i.ue_addrs {
            if !ses.ue_addrs.contains(&a) {
                ses.ue_addrs.push(a);
            }
            self.by_ue.insert(a, s);
        }
        let slice = match (i.snssai, &i.dnn, &i.network_instance) {
            (Some((sst, Some(sd))), _, _) => Some(format!("sst{sst}-sd{sd:06x}")),
            (Some((sst, None)), _, _) => Some(format!("sst{sst}")),
            (None, Some(d), _) => Some(d.clone()),
            (None, None, Some(n)) if ses.slice.is_none() => Some(n.clone()),
            _ => None,
        };
        if slice.is_some() && (ses.slice.is_none() || i.snssai.is_some()) {
            ses.slice = slice;
        }
    }

    /// Requests never answered (at the end of the captures), timed from `epoch_ns`.
    pub fn finish(&mut self, epoch_ns: i64) {
        let mut open: Vec<_> = self.open.drain().flat_map(|(k, v)| v.into_iter().map(move |r| (k, r))).collect();
        open.sort_by_key(|(k, r)| (r.t_ns, k.0));
        for ((seq, req, resp), r) in open {
            self.unanswered.push(json!({
                "t_ns": r.t_ns - epoch_ns, "message": msg_kind(r.msg_type).map(|k| k.0), "seq": seq,
                "seid": r.seid.map(|s| format!("{s:#x}")), "requester": req.to_string(), "responder": resp.to_string(),
                "retransmissions": r.retransmissions,
            }));
        }
    }

    /// Each pair as a `pfcp_pair` control row (at the request's time from `epoch_ns`; latency in
    /// `value`).
    pub fn write_pairs<S: Sink>(&self, epoch_ns: i64, sink: &mut S) {
        for p in &self.pairs {
            sink.control(ControlEvent {
                t_ns: p.t_ns - epoch_ns,
                node: Node::Upf,
                layer: Layer::Upf,
                kind: "pfcp_pair",
                dir: None,
                ue: None,
                drb: None,
                sn: Some(i64::from(p.seq)),
                value: Some(p.latency_ns as f64),
                detail: Some(Self::detail(p)),
            });
        }
    }

    fn detail(p: &Pair) -> String {
        json!({
            "message": p.kind, "seq": p.seq, "seid": p.seid.map(|s| format!("{s:#x}")),
            "requester": p.requester.to_string(), "responder": p.responder.to_string(),
            "retransmissions": p.retransmissions, "cause": p.cause,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlv(t: u16, v: &[u8]) -> Vec<u8> {
        let mut o = t.to_be_bytes().to_vec();
        o.extend_from_slice(&(v.len() as u16).to_be_bytes());
        o.extend_from_slice(v);
        o
    }

    fn msg(t: u8, seid: Option<u64>, seq: u32, ies: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        if let Some(s) = seid {
            body.extend_from_slice(&s.to_be_bytes());
        }
        body.extend_from_slice(&seq.to_be_bytes()[1..]);
        body.push(0);
        body.extend_from_slice(ies);
        let mut d = vec![0x20 | u8::from(seid.is_some()), t];
        d.extend_from_slice(&(body.len() as u16).to_be_bytes());
        d.extend_from_slice(&body);
        d
    }

    #[test]
    fn a_session_is_learned_and_its_messages_paired() {
        let smf: SocketAddr = "10.0.0.1:8805".parse().unwrap();
        let upf: SocketAddr = "10.0.0.2:8805".parse().unwrap();
        // Establishment request: CP F-SEID 0x11, a PDR whose PDI has F-TEID 0x1234 and UE address
        // 10.45.0.2, S-NSSAI SST 1 SD 0x000001.
        let mut fseid = vec![0x02];
        fseid.extend_from_slice(&0x11u64.to_be_bytes());
        fseid.extend_from_slice(&[10, 0, 0, 1]);
        let mut fteid = vec![0x01, 0, 0, 0x12, 0x34];
        fteid.extend_from_slice(&[10, 0, 0, 2]);
        let pdi = [tlv(21, &fteid), tlv(93, &[0x02, 10, 45, 0, 2])].concat();
        let pdr = [tlv(56, &[0, 1]), tlv(2, &pdi)].concat();
        let req = msg(50, Some(0), 7, &[tlv(57, &fseid), tlv(1, &pdr), tlv(257, &[1, 0, 0, 1])].concat());
        let mut up = vec![0x02];
        up.extend_from_slice(&0x22u64.to_be_bytes());
        up.extend_from_slice(&[10, 0, 0, 2]);
        let resp = msg(51, Some(0x11), 7, &[tlv(19, &[1]), tlv(57, &up)].concat());
        // Modification: the gNB's DL tunnel 0xbeef in an Update FAR's outer header creation.
        let ohc = tlv(84, &[0x01, 0x00, 0, 0, 0xbe, 0xef, 10, 0, 0, 9]);
        let mreq = msg(52, Some(0x22), 8, &tlv(10, &tlv(11, &ohc)));
        let mresp = msg(53, Some(0x11), 8, &tlv(19, &[1]));
        let hb = msg(1, None, 9, &tlv(96, &[0, 0, 0, 0]));
        let mut t = Tracker::default();
        for (ts, s, d, m) in [
            (0, smf, upf, &req),
            (500, upf, smf, &resp),
            (1000, smf, upf, &mreq),
            (1300, upf, smf, &mresp),
            (2000, smf, upf, &hb),
        ] {
            t.message(ts, s, d, &parse(m).unwrap());
        }
        t.finish(0);
        let p: Vec<_> = t.pairs.iter().map(|p| (p.kind, p.seq, p.latency_ns, p.cause)).collect();
        assert_eq!(p, vec![("session_establishment", 7, 500, Some(1)), ("session_modification", 8, 300, Some(1))]);
        assert_eq!(t.unanswered.len(), 1);
        assert_eq!(t.unanswered[0]["message"], "heartbeat");
        let s = &t.sessions[0];
        assert_eq!((s.cp_seid, s.up_seid), (Some(0x11), Some(0x22)));
        assert_eq!(s.slice.as_deref(), Some("sst1-sd000001"));
        assert_eq!(t.by_teid.get(&0x1234), Some(&0));
        assert_eq!(t.by_teid.get(&0xbeef), Some(&0));
        assert_eq!(t.by_ue.get(&"10.45.0.2".parse().unwrap()), Some(&0));
        assert!(parse(&req[..req.len() - 1]).is_err());
    }
}
