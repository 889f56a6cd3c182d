//! The simulator's event loop, step by step ([`crate::run`] is its outline): the generated
//! packets sent into the stack, the stack's events fed to the senders, its deliveries measured,
//! answered (echoes, acknowledgements) and written.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node, Sink};
use scout_ran::stack::{Offer, Stack};

use crate::adaptive;
use crate::delays::Delays;
use crate::traffic::{Gen, Source};
use crate::Flow;

/// The generated packets waiting to be sent: (time, source, bytes), earliest first.
pub(crate) type Pending = BinaryHeap<Reverse<(i64, usize, u32)>>;

/// Each source's first packet (the reverse flows, sent by the driver, have none).
pub(crate) fn first_packets(flows: &[Flow], sources: &mut [Source]) -> Pending {
    let mut heap = Pending::new();
    for (i, s) in sources.iter_mut().enumerate() {
        if matches!(flows[i].kind, "ping_reply" | "ack") {
            continue;
        }
        if let Some((t, b)) = s.next_packet() {
            heap.push(Reverse((t, i, b)));
        }
    }
    heap
}

/// Packets in flight, by packet id, and what their deliveries measured.
pub(crate) struct Measured {
    pub(crate) sent_at: HashMap<u64, i64>,
    /// An echo reply's request, sent when.
    pub(crate) ping_req: HashMap<u64, i64>,
    /// Acknowledgements in flight: the data packet's flow, when it was sent, its one-way delay
    /// as the receiver reported it, whether it was CE-marked.
    pub(crate) acks: HashMap<u64, (u32, i64, i64, bool)>,
    pub(crate) delays: [Delays; 2],
    pub(crate) rtts: Vec<i64>,
}

impl Measured {
    pub(crate) fn new() -> Measured {
        Measured {
            sent_at: HashMap::new(),
            ping_req: HashMap::new(),
            acks: HashMap::new(),
            delays: [Delays::Exact(Vec::new()), Delays::Exact(Vec::new())],
            rtts: Vec::new(),
        }
    }
}

/// Sends the earliest generated packet into the stack (an adaptive sender may query the UE's
/// bit rate with it), and queues its source's next.
pub(crate) fn send_next<S: Sink>(
    stack: &mut Stack,
    flows: &[Flow],
    sources: &mut [Source],
    heap: &mut Pending,
    m: &mut Measured,
    sink: &mut S,
) {
    let Some(Reverse((t, i, bytes))) = heap.pop() else { unreachable!("peeked") };
    let f = &flows[i];
    let pkt = stack.send(t, Offer::new(f.dir, f.id, f.ue, f.drb_idx, bytes).ecn(f.ecn), sink);
    m.sent_at.insert(pkt, t);
    if let Some(bps) = match &mut sources[i].gen {
        Gen::Adaptive(a) => a.wants_query(t),
        _ => None,
    } {
        stack.query_bit_rate(t, f.ue, f.drb_idx, bps as u64, sink);
    }
    if let Some((nt, nb)) = sources[i].next_packet() {
        heap.push(Reverse((nt, i, nb)));
    }
}

/// What the stack tells the senders after a timeout: retransmission events reach the UE's RAN
/// feed, and the senders that compensate (those of the data's direction, and of the
/// acknowledgements' when they ride the model); ANBR recommendations reach the UE's
/// applications, and the senders they tell.
pub(crate) fn feed_senders(stack: &mut Stack, flows: &[Flow], sources: &mut [Source]) {
    for (ue, dir, end, delay) in stack.take_retx_events() {
        for (f, s) in flows.iter().zip(sources.iter_mut()) {
            if let (Gen::Adaptive(a), true) = (&mut s.gen, f.ue == ue && (f.dir == dir || f.ack.is_some())) {
                a.retx_event(f.dir == dir, end, delay);
            }
        }
    }
    for r in stack.take_recommendations() {
        for (f, s) in flows.iter().zip(sources.iter_mut()) {
            if let (Gen::Adaptive(a), true) = (&mut s.gen, f.ue == r.ue && f.drb_idx == r.drb) {
                a.recommendation(r.t, r.bit_rate_bps as f64);
            }
        }
    }
}

/// The stack's deliveries: each packet's delay taken; an adaptive sender told (or its
/// acknowledgement sent back through the model); a ping echoed by the DN, and an echo's round
/// trip written as `app_rtt`.
pub(crate) fn deliver<S: Sink>(
    stack: &mut Stack,
    flows: &[Flow],
    sources: &mut [Source],
    m: &mut Measured,
    sink: &mut S,
) {
    for d in stack.take_deliveries() {
        let p = d.packet;
        let Some(t0) = m.sent_at.remove(&p.pkt) else { continue };
        m.delays[p.dir as usize].push(d.t - t0);
        let f = &flows[p.flow as usize];
        if let Some((flow, sent, data_delay, ce)) = m.acks.remove(&p.pkt) {
            if let Gen::Adaptive(a) = &mut sources[flow as usize].gen {
                a.acked(sent, data_delay, t0, d.t, ce);
            }
        } else if let (Gen::Adaptive(a), Some((r, bytes))) = (&mut sources[p.flow as usize].gen, f.ack) {
            // The receiver acknowledges at once, back through the model.
            let data_delay = a.received(t0, d.t);
            let rf = &flows[r as usize];
            let ap = stack.send(d.t, Offer::new(rf.dir, rf.id, rf.ue, rf.drb_idx, bytes), sink);
            m.sent_at.insert(ap, d.t);
            m.acks.insert(ap, (p.flow, t0, data_delay, p.ecn == 3));
        } else if let Gen::Adaptive(a) = &mut sources[p.flow as usize].gen {
            a.delivered(t0, d.t, p.ecn);
        }
        if let Some(r) = f.reply {
            // The DN echoes the request at once.
            let rf = &flows[r as usize];
            let rp = stack.send(d.t, Offer::new(Dir::Dl, rf.id, rf.ue, rf.drb_idx, p.bytes), sink);
            m.sent_at.insert(rp, d.t);
            m.ping_req.insert(rp, t0);
        } else if let Some(t_req) = m.ping_req.remove(&p.pkt) {
            let rtt = d.t - t_req;
            m.rtts.push(rtt);
            sink.control(ControlEvent {
                t_ns: d.t,
                node: Node::Ue,
                layer: Layer::App,
                kind: ControlKind::AppRtt,
                dir: None,
                ue: Some(p.ue),
                drb: Some(p.drb),
                sn: Some(p.pkt as i64),
                value: Some(rtt as f64),
                detail: None,
            });
        }
    }
}

/// The delay samples the delay-based senders took since the last call, as `cc_sample` events:
/// what the controller used (`value`) and what was measured (`raw_ns`), at the sender.
pub(crate) fn write_cc_samples<S: Sink>(flows: &[Flow], sources: &mut [Source], sink: &mut S) {
    for (f, s) in flows.iter().zip(sources.iter_mut()) {
        let Gen::Adaptive(a) = &mut s.gen else { continue };
        let (cc, signal) = (if a.control == adaptive::Control::Gcc { "gcc" } else { "copa" }, a.signal());
        let Some(samples) = a.samples.as_mut().filter(|v| !v.is_empty()) else { continue };
        for (at, raw, used) in std::mem::take(samples) {
            sink.control(ControlEvent {
                t_ns: at,
                node: if f.dir == Dir::Dl { Node::Dn } else { Node::Ue },
                layer: Layer::App,
                kind: ControlKind::CcSample,
                dir: Some(f.dir),
                ue: Some(f.ue),
                drb: Some(f.drb_idx as u8 + 1),
                sn: Some(i64::from(f.id)),
                value: Some(used as f64),
                detail: Some(format!("{{\"cc\":\"{cc}\",\"signal\":\"{signal}\",\"raw_ns\":{raw}}}")),
            });
        }
    }
}
