//! Pass 2 of `scout ingest pcap`: each frame decoded into a sighting of a packet on N3 or N6 (or
//! counted as what else it is), and each sighting paired with its twin on the other side by
//! identity within the pairing window.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

use scout_events::header::{NoTwin, Unmatched};
use serde_json::{json, Value};

use super::decode::{Decoder, Kind, FRAGMENT_HELD};
use super::file::{Frame, Point};
use super::journey::{Fast, Journeys};
use super::run::{block_name, matches_side, ordered, Causes, Merged, Options};
use scout_wire::gtpu;
use scout_wire::ip as wire;

/// One sighting of a packet, waiting for its twin.
#[derive(Clone, Copy)]
pub(super) struct Sight {
    pub(super) t: i64,
    pub(super) n3: bool,
    pub(super) bytes: u32,
    pub(super) teid: Option<u32>,
    pub(super) qfi: Option<u8>,
    pub(super) seq: Option<u16>,
    pub(super) src: IpAddr,
    pub(super) dst: IpAddr,
    pub(super) proto: u8,
    pub(super) ports: Option<(u16, u16)>,
}

enum Entry {
    Open(Sight),
    Paired,
}

#[derive(Default)]
pub(super) struct Pairing {
    pending: HashMap<u64, Entry, Fast>,
    order: VecDeque<(i64, u64)>,
    unmatched: [[u64; 2]; 2],
    duplicates: [u64; 2],
}

impl Sight {
    fn with_key(self, k: u64) -> (u64, Sight) {
        (k, self)
    }
}

impl Pairing {
    /// A sighting; returns the pair when it completes one.
    pub(super) fn sight(&mut self, key: u64, s: Sight) -> Option<(Sight, Sight)> {
        match self.pending.get_mut(&key) {
            None => {
                self.pending.insert(key, Entry::Open(s));
                self.order.push_back((s.t, key));
                None
            }
            Some(Entry::Open(o)) if o.n3 == s.n3 => {
                // The same packet at another capture point on the same side: the earliest counts.
                self.duplicates[usize::from(!s.n3)] += 1;
                if s.t < o.t {
                    *o = s;
                }
                None
            }
            Some(e @ Entry::Open(_)) => {
                let Entry::Open(o) = std::mem::replace(e, Entry::Paired) else { unreachable!() };
                Some((o, s))
            }
            Some(Entry::Paired) => {
                // Seen again after it was paired (e.g. on the N6 Ethernet after the UPF's TUN).
                self.duplicates[usize::from(!s.n3)] += 1;
                None
            }
        }
    }

    /// The sightings that found no twin, per side and reason (`run.json` `unmatched`).
    pub(super) fn unmatched(&self) -> Unmatched {
        let mut u = Unmatched::new(&[NoTwin::WithinWindow, NoTwin::CaptureEnded]);
        for (side, n3) in [(0, true), (1, false)] {
            u.add(n3, NoTwin::WithinWindow, self.unmatched[side][0]);
            u.add(n3, NoTwin::CaptureEnded, self.unmatched[side][1]);
        }
        u
    }

    /// Ends the wait of sightings older than `before`.
    pub(super) fn expire(&mut self, before: i64) {
        let end = before == i64::MAX;
        while let Some(&(t, key)) = self.order.front() {
            if t >= before {
                break;
            }
            self.order.pop_front();
            // (A sighting replaced by an earlier one keeps its queue entry: `o.t <= t`.)
            if let Some(Entry::Open(o)) = self.pending.remove(&key) {
                self.unmatched[usize::from(!o.n3)][usize::from(end)] += 1;
            }
        }
    }
}

/// Pass 2's state: the decoder (its IP fragments), the pairing, and a count of every frame that
/// is not a sighting, by what it is.
pub(super) struct SecondPass {
    pub(super) dec: Decoder,
    pub(super) pairing: Pairing,
    pub(super) causes: Causes,
    pub(super) frames: u64,
    gtp_other: HashMap<&'static str, u64>,
    not_user_plane: u64,
    gtp_length_mismatch: u64,
    pfcp_frames: u64,
    fragments_held: u64,
    filtered: [u64; 2],
    /// Per --n3 / --n6 value, the frames it selected (a value that selects none is a typo or the
    /// wrong capture: the CLI warns).
    side_matches: [Vec<u64>; 2],
    points: HashMap<Point, [u64; 2], Fast>,
}

impl SecondPass {
    pub(super) fn new(opts: &Options) -> SecondPass {
        SecondPass {
            dec: Decoder::new(&opts.gtp_ports),
            pairing: Pairing::default(),
            causes: Causes::default(),
            frames: 0,
            gtp_other: HashMap::new(),
            not_user_plane: 0,
            gtp_length_mismatch: 0,
            pfcp_frames: 0,
            fragments_held: 0,
            filtered: [0; 2],
            side_matches: [vec![0u64; opts.n3.len()], vec![0u64; opts.n6.len()]],
            points: HashMap::default(),
        }
    }

    /// Frame `f` of file `file` (named `name`) as a sighting keyed by the inner packet's
    /// identity, or `None` when it is none (counted by what it is): a held fragment, an
    /// undecodable frame, PFCP, a GTP-U message other than a G-PDU, plain IP outside every
    /// tunnel, or a frame the --n3 / --n6 options exclude.
    pub(super) fn sight(
        &mut self,
        file: usize,
        name: &str,
        f: Frame<'_>,
        iface_name: Option<&str>,
        tunnels: &std::collections::HashSet<(IpAddr, IpAddr), Fast>,
        opts: &Options,
    ) -> Option<(u64, Sight)> {
        let (t, off, iface) = (f.t_ns, f.offset, f.iface);
        let (kind, sub, outgoing) = match self.dec.decode(f.t_ns, f.linktype, f.data) {
            Ok(k) => k,
            Err(FRAGMENT_HELD) => {
                self.fragments_held += 1;
                return None;
            }
            Err(c) => {
                self.causes.add(c, || format!("{name}: byte {off}"));
                return None;
            }
        };
        let point = Point { file: file as u16, iface, sub, outgoing };
        let sight = match kind {
            Kind::Pfcp(..) => {
                self.pfcp_frames += 1;
                return None;
            }
            Kind::GtpOther(t, mismatch) => {
                self.gtp_length_mismatch += u64::from(mismatch);
                let name = match t {
                    gtpu::GTPU_ECHO_REQUEST => "echo_request",
                    gtpu::GTPU_ECHO_RESPONSE => "echo_response",
                    gtpu::GTPU_ERROR_INDICATION => "error_indication",
                    gtpu::GTPU_END_MARKER => "end_marker",
                    gtpu::GTPU_SUPPORTED_EXT_HEADERS => "supported_extension_headers_notification",
                    _ => "other",
                };
                *self.gtp_other.entry(name).or_insert(0) += 1;
                return None;
            }
            Kind::GPdu(outer_len, outer, g, inner) => {
                self.gtp_length_mismatch += u64::from(g.length_mismatch);
                if !opts.n3.is_empty() {
                    match matches_side(&opts.n3, iface_name, Some(outer)) {
                        Some(k) => self.side_matches[0][k] += 1,
                        None => {
                            self.filtered[0] += 1;
                            return None;
                        }
                    }
                }
                Sight {
                    t,
                    n3: true,
                    bytes: outer_len,
                    teid: Some(g.teid),
                    qfi: g.qfi,
                    seq: g.seq,
                    src: inner.src,
                    dst: inner.dst,
                    proto: inner.proto,
                    ports: wire::ports(&inner),
                }
                .with_key(wire::identity(&inner))
            }
            Kind::Plain(ip) => {
                if !tunnels.contains(&ordered(ip.src, ip.dst)) {
                    self.not_user_plane += 1;
                    return None;
                }
                if !opts.n6.is_empty() {
                    match matches_side(&opts.n6, iface_name, Some((ip.src, ip.dst))) {
                        Some(k) => self.side_matches[1][k] += 1,
                        None => {
                            self.filtered[1] += 1;
                            return None;
                        }
                    }
                }
                let b = ip.packet.len() as u32;
                Sight {
                    t,
                    n3: false,
                    bytes: b,
                    teid: None,
                    qfi: None,
                    seq: None,
                    src: ip.src,
                    dst: ip.dst,
                    proto: ip.proto,
                    ports: wire::ports(&ip),
                }
                .with_key(wire::identity(&ip))
            }
        };
        self.points.entry(point).or_insert([0, 0])[usize::from(!sight.1.n3)] += 1;
        Some(sight)
    }

    /// `run.json`'s `pcap`: the files, the UPF's delays, what did not pair and every frame
    /// that was not a sighting, by what it was.
    pub(super) fn summary(&self, m: &Merged, journeys: &Journeys, opts: &Options) -> Value {
        let files: Vec<Value> = m
            .files
            .iter()
            .map(|(p, r, _)| {
                json!({
                    "file": p, "frames": r.stats.frames, "bytes": r.stats.bytes,
                    "truncated_records": r.stats.truncated_frames, "other_blocks": r.stats.other_blocks,
                    "other_block_types": r.stats.other_block_types.iter().map(|(t, n)| (block_name(*t), json!(n))).collect::<serde_json::Map<_, _>>(),
                    "impossible_time_frames": r.stats.impossible_time_frames,
                    "damage": r.stats.damage.as_ref().map(|d| json!({"offset": d.offset, "reason": d.reason, "bytes_not_read": d.bytes_not_read})),
                    "interfaces": r.ifaces.iter().map(|i| json!({"linktype": i.linktype, "name": i.name})).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut pts: Vec<_> = self.points.iter().collect();
        pts.sort();
        let (pairing, dec) = (&self.pairing, &self.dec);
        json!({
            "files": files,
            "frames": self.frames,
            "upf_delay": {"ul": journeys.stats(true), "dl": journeys.stats(false)},
            "duplicate_sightings": {"n3": pairing.duplicates[0], "n6": pairing.duplicates[1]},
            "capture_points": pts.iter().map(|(p, c)| json!({"file": p.file, "iface": p.iface, "sub": p.sub, "outgoing": p.outgoing, "n3_sightings": c[0], "n6_sightings": c[1]})).collect::<Vec<_>>(),
            "gtpu_other_messages": self.gtp_other,
            "gtpu_length_field_mismatch": self.gtp_length_mismatch,
            "not_user_plane_frames": self.not_user_plane,
            "pfcp_frames": self.pfcp_frames,
            "excluded_by_side_options": {"n3": self.filtered[0], "n6": self.filtered[1]},
            "side_option_matches": {
                "n3": opts.n3.iter().zip(&self.side_matches[0]).map(|(o, n)| json!({"value": o, "frames": n})).collect::<Vec<_>>(),
                "n6": opts.n6.iter().zip(&self.side_matches[1]).map(|(o, n)| json!({"value": o, "frames": n})).collect::<Vec<_>>(),
            },
            "ip_fragments": {"frames_held": self.fragments_held, "reassembled": dec.frag.reassembled, "expired": dec.frag.expired, "pending_at_end": dec.frag.pending(), "overlapping": dec.frag.overlapping, "beyond_end": dec.frag.beyond_end},
        })
    }
}
