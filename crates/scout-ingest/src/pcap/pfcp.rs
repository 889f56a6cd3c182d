//! PFCP (N4, TS 29.244) request/response pairing, and the sessions the messages set up (the
//! messages are read by `scout_wire::pfcp::session`).
//!
//! A request is answered by the message type one above it (Table 7.3-1) with the same sequence
//! number (§7.2.2.2), sent from the request's destination back to its source. Each pair becomes a
//! `pfcp_pair` control row (latency in ns); requests never answered are reported.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use scout_events::{ControlEvent, ControlKind, Layer, Node, Sink};
use scout_wire::pfcp::msg_kind;
use scout_wire::pfcp::session::Msg;
use serde_json::{json, Value};

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
    /// ([`scout_wire::ip::identity`]); returns false when it is a duplicate sighting.
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
                kind: ControlKind::PfcpPair,
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
    use scout_wire::pfcp::session::parse;

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
