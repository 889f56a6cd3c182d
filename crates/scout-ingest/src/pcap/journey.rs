//! A packet paired across the UPF, as events: one definition for captures (`scout ingest pcap`)
//! and the live probe (`scout probe`).
//!
//! A pair is a journey of two events at `node = upf`: the arrival (`n3 arrive` uplink, `n6 arrive`
//! downlink) and the departure (`upf proc_end`), so `scout analyze` attributes the interval to `upf
//! processing`. UEs are numbered by address and flows by (UE address, peer, protocol, ports),
//! both listed in `run.json` (`ues`, `flows`).

use std::collections::HashMap;
use std::net::IpAddr;

use scout_events::{Dir, Layer, Node, PacketEvent, Point, Sink};
use serde_json::{json, Value};

/// A hasher for keys that are already well mixed (packet identities) or small (addresses, points):
/// one multiply-rotate per word instead of SipHash, which was 15 % of the ingest.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(u64::from(v));
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

pub type Fast = std::hash::BuildHasherDefault<FastHasher>;

/// One side's sighting of a paired packet.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    pub t_ns: i64,
    pub n3: bool,
    pub bytes: u32,
}

/// What the pair says about the packet (from its N3 sighting where only that one knows).
#[derive(Clone, Copy, Debug)]
pub struct Inner {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    /// Transport ports (source, destination) of the inner packet, if any.
    pub ports: Option<(u16, u16)>,
    pub teid: Option<u32>,
    pub qfi: Option<u8>,
    pub gtp_seq: Option<u16>,
}

/// Flows beyond this many share one flow id (listed as `other_flows` in `run.json`).
pub const MAX_FLOWS: usize = 1 << 16;

/// UE and flow numbering, and the events of each pair.
#[derive(Default)]
pub struct Journeys {
    ue_of: HashMap<IpAddr, u32, Fast>,
    pub ues: Vec<IpAddr>,
    flow_of: HashMap<(IpAddr, IpAddr, u8, u16, u16), u32, Fast>,
    pub flows: Vec<Value>,
    next_pkt: u64,
    /// Pairs per direction (UL, DL) and their delays (ns), for summaries.
    pub pairs: [u64; 2],
    pub delays: [Vec<i64>; 2],
    keep_delays: bool,
}

impl Journeys {
    pub fn new(keep_delays: bool) -> Self {
        Journeys { keep_delays, ..Journeys::default() }
    }

    /// The UE number of an address (numbered in order of first use).
    pub fn ue(&mut self, a: IpAddr) -> u32 {
        if let Some(&u) = self.ue_of.get(&a) {
            return u;
        }
        let u = self.ues.len() as u32;
        self.ues.push(a);
        self.ue_of.insert(a, u);
        u
    }

    fn flow(&mut self, ue: u32, ue_addr: IpAddr, peer: IpAddr, i: &Inner, ul: bool, label: &Value) -> u32 {
        let ports = match i.ports {
            Some((a, b)) if ul => (a, b),
            Some((a, b)) => (b, a),
            None => (0, 0),
        };
        let key = (ue_addr, peer, i.proto, ports.0, ports.1);
        if let Some(&f) = self.flow_of.get(&key) {
            return f;
        }
        if self.flows.len() >= MAX_FLOWS {
            return MAX_FLOWS as u32;
        }
        let f = self.flows.len() as u32;
        self.flow_of.insert(key, f);
        let mut v = json!({
            "flow": f, "ue": ue, "ue_addr": ue_addr.to_string(), "peer_addr": peer.to_string(), "proto": i.proto,
            "ue_port": ports.0, "peer_port": ports.1, "teid": i.teid.map(|t| format!("{t:#x}")), "qfi": i.qfi,
            "first_dir": if ul { "ul" } else { "dl" },
        });
        if let (Some(o), Value::Object(l)) = (v.as_object_mut(), label) {
            o.extend(l.clone());
        }
        self.flows.push(v);
        f
    }

    /// Writes the two events of a pair (times relative to the run's epoch) and returns its
    /// direction (uplink when N3 was first). `label` is merged into a new flow's `run.json` entry.
    pub fn pair<S: Sink>(&mut self, a: Seen, b: Seen, i: &Inner, slice: u8, label: &Value, sink: &mut S) -> Dir {
        let (first, second) = if a.t_ns <= b.t_ns { (a, b) } else { (b, a) };
        let ul = first.n3;
        let ue_addr = if ul { i.src } else { i.dst };
        let peer = if ul { i.dst } else { i.src };
        let ue = self.ue(ue_addr);
        let flow = self.flow(ue, ue_addr, peer, i, ul, label);
        let dir = if ul { Dir::Ul } else { Dir::Dl };
        let pkt = self.next_pkt;
        self.next_pkt += 1;
        let ev = |t: i64, layer: Layer, point: Point, bytes: u32| PacketEvent {
            ue,
            qfi: i.qfi,
            slice,
            flow,
            sn: i.gtp_seq.map(u32::from),
            bytes,
            ..PacketEvent::new(t, (Node::Upf, layer, point), dir, pkt)
        };
        sink.packet(ev(first.t_ns, if ul { Layer::N3 } else { Layer::N6 }, Point::Arrive, first.bytes));
        sink.packet(ev(second.t_ns, Layer::Upf, Point::ProcEnd, second.bytes));
        let d = usize::from(!ul);
        self.pairs[d] += 1;
        if self.keep_delays {
            self.delays[d].push(second.t_ns - first.t_ns);
        }
        dir
    }

    /// Packets paired so far.
    pub fn packets(&self) -> u64 {
        self.next_pkt
    }

    pub fn ues_json(&self) -> Value {
        Value::Array(self.ues.iter().enumerate().map(|(i, a)| json!({"ue": i, "addr": a.to_string()})).collect())
    }

    /// p50, p99 and max of one direction's delays: the analysis tables' percentiles
    /// (`scout_events::quantile`, interpolated), so `scout ingest pcap` and `scout analyze` agree.
    pub fn stats(&self, ul: bool) -> Value {
        let d = usize::from(!ul);
        let mut v = self.delays[d].clone();
        v.sort_unstable();
        let q = |x: f64| scout_events::quantile::quantile_sorted(&v, x);
        json!({"pairs": self.pairs[d], "p50_ns": q(0.5), "p99_ns": q(0.99), "max_ns": v.last()})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scout_events::VecSink;

    #[test]
    fn a_pair_is_an_arrival_and_a_departure_in_time_order() {
        let mut j = Journeys::new(true);
        let mut sink = VecSink::default();
        let i = Inner {
            src: "10.45.0.2".parse().unwrap(),
            dst: "8.8.8.8".parse().unwrap(),
            proto: 17,
            ports: Some((5000, 53)),
            teid: Some(7),
            qfi: Some(9),
            gtp_seq: Some(3),
        };
        // The N6 sighting comes second: uplink, 40 µs.
        let d = j.pair(
            Seen { t_ns: 100_040, n3: false, bytes: 100 },
            Seen { t_ns: 100_000, n3: true, bytes: 136 },
            &i,
            0,
            &Value::Null,
            &mut sink,
        );
        assert_eq!(d, Dir::Ul);
        let e: Vec<_> = sink.packets.iter().map(|e| (e.t_ns, e.layer, e.point, e.bytes, e.ue, e.sn)).collect();
        assert_eq!(
            e,
            vec![
                (100_000, Layer::N3, Point::Arrive, 136, 0, Some(3)),
                (100_040, Layer::Upf, Point::ProcEnd, 100, 0, Some(3))
            ]
        );
        assert_eq!(j.stats(true)["p50_ns"], 40.0);
        assert_eq!(j.flows[0]["ue_port"], 5000);
    }
}
