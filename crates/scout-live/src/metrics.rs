//! The Prometheus exposition of the live figures (text format 0.0.4). Names and labels are
//! documented in `docs/live.md`; `docs/grafana-scout.json` is a dashboard over them.

use std::fmt::Write;

use crate::aggregate::{Hist, State, BUCKETS_S};

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn histogram(out: &mut String, name: &str, labels: &str, h: &Hist) {
    let mut cum = 0;
    for (i, le) in BUCKETS_S.iter().enumerate() {
        cum += h.buckets[i];
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cum}");
    }
    cum += h.buckets[BUCKETS_S.len()];
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {cum}");
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum_ns as f64 * 1e-9);
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
}

pub(crate) fn render(s: &State, wall_s: f64) -> String {
    let mut out = String::with_capacity(16 << 10);
    // In the order of their labels, whatever order they were first seen in.
    let mut queues: Vec<_> = s.queues.iter().map(|(k, q)| (k, q)).collect();
    queues.sort_by_key(|(k, _)| **k);
    let mut layers: Vec<_> = s.layers.iter().map(|(k, h)| (k, h)).collect();
    layers.sort_by_key(|(k, _)| **k);
    head(&mut out, "scout_events_total", "counter", "Events the run has written, per table.");
    for (table, n) in ["packet_events", "slot_events", "control_events"].iter().zip(s.rows) {
        let _ = writeln!(out, "scout_events_total{{table=\"{table}\"}} {n}");
    }
    head(&mut out, "scout_event_time_seconds", "gauge", "The run's clock: the latest event's time since its epoch.");
    let _ = writeln!(out, "scout_event_time_seconds {}", s.t_last_ns as f64 * 1e-9);
    head(&mut out, "scout_live_uptime_seconds", "gauge", "Wall-clock seconds since the live view started.");
    let _ = writeln!(out, "scout_live_uptime_seconds {wall_s:.3}");

    head(&mut out, "scout_queue_bytes", "gauge", "A queue's occupancy in bytes after its latest event.");
    for ((node, layer, queue, dir), q) in &queues {
        let _ = writeln!(
            out,
            "scout_queue_bytes{{node=\"{node}\",layer=\"{layer}\",queue=\"{queue}\",dir=\"{dir}\"}} {}",
            q.bytes
        );
    }
    head(&mut out, "scout_queue_packets", "gauge", "A queue's occupancy in packets after its latest event.");
    for ((node, layer, queue, dir), q) in &queues {
        let _ = writeln!(
            out,
            "scout_queue_packets{{node=\"{node}\",layer=\"{layer}\",queue=\"{queue}\",dir=\"{dir}\"}} {}",
            q.pkts
        );
    }
    head(
        &mut out,
        "scout_queue_sojourn_seconds",
        "histogram",
        "Time from a packet's enqueue to its leaving the queue (executor queues: proc_begin; protocol queues: segment or dequeue).",
    );
    for ((node, layer, queue, dir), q) in &queues {
        if q.sojourn.count > 0 {
            let labels = format!("node=\"{node}\",layer=\"{layer}\",queue=\"{queue}\",dir=\"{dir}\"");
            histogram(&mut out, "scout_queue_sojourn_seconds", &labels, &q.sojourn);
        }
    }
    head(
        &mut out,
        "scout_layer_seconds",
        "histogram",
        "Time from a packet's previous checkpoint to its next one, by the layer of the next (per packet, they add up to its journey).",
    );
    for ((layer, dir), h) in &layers {
        histogram(&mut out, "scout_layer_seconds", &format!("layer=\"{layer}\",dir=\"{dir}\""), h);
    }
    head(&mut out, "scout_drops_total", "counter", "Packets dropped, per layer, reason and direction.");
    for ((layer, reason, dir), (n, _)) in &s.drops {
        let reason = reason.map_or("", |r| r.as_str());
        let _ = writeln!(out, "scout_drops_total{{layer=\"{layer}\",reason=\"{reason}\",dir=\"{dir}\"}} {n}");
    }
    head(
        &mut out,
        "scout_dropped_bytes_total",
        "counter",
        "Bytes of the dropped packets, per layer, reason and direction.",
    );
    for ((layer, reason, dir), (_, b)) in &s.drops {
        let reason = reason.map_or("", |r| r.as_str());
        let _ = writeln!(out, "scout_dropped_bytes_total{{layer=\"{layer}\",reason=\"{reason}\",dir=\"{dir}\"}} {b}");
    }
    head(
        &mut out,
        "scout_ue_bytes_total",
        "counter",
        "A UE's bytes: delivered to the destination application (at=delivered) or forwarded by the UPF (at=upf).",
    );
    for ((ue, dir, at), b) in &s.ue_bytes {
        let _ = writeln!(out, "scout_ue_bytes_total{{ue=\"{ue}\",dir=\"{dir}\",at=\"{}\"}} {b}", at.as_str());
    }
    head(
        &mut out,
        "scout_app_rtt_seconds",
        "gauge",
        "A UE's latest application RTT sample: echo replies (source=ping) or TCP's smoothed RTT (source=tcp).",
    );
    for ((ue, source), (ns, _)) in &s.rtt {
        let _ = writeln!(out, "scout_app_rtt_seconds{{ue=\"{ue}\",source=\"{source}\"}} {}", ns * 1e-9);
    }
    head(&mut out, "scout_app_rtt_samples_total", "counter", "Application RTT samples, per UE and source.");
    for ((ue, source), (_, n)) in &s.rtt {
        let _ = writeln!(out, "scout_app_rtt_samples_total{{ue=\"{ue}\",source=\"{source}\"}} {n}");
    }
    head(
        &mut out,
        "scout_live_untracked_total",
        "counter",
        "Packets the live view did not follow (its limit of packets followed at once was reached).",
    );
    let _ = writeln!(out, "scout_live_untracked_total {}", s.untracked);
    head(
        &mut out,
        "scout_live_late_total",
        "counter",
        "Events older than the page's window (counted in totals, not plotted).",
    );
    let _ = writeln!(out, "scout_live_late_total {}", s.late);
    out
}

#[cfg(test)]
mod tests {
    use crate::aggregate::{Aggregator, Limits};
    use scout_events::tap::Tap;
    use scout_events::{Dir, Layer, Node, PacketEvent, Point, Queue};

    /// Every sample line of the exposition: (name with labels, value).
    fn samples(text: &str) -> Vec<(String, f64)> {
        text.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').expect("a sample line is NAME{LABELS} VALUE");
                (k.to_string(), v.parse().expect("a sample's value is a number"))
            })
            .collect()
    }

    #[test]
    fn the_exposition_is_well_formed_and_histograms_are_cumulative() {
        let a = Aggregator::new(Limits::default());
        let mut rows = Vec::new();
        for i in 0..10u64 {
            let mut e = PacketEvent::new(i as i64 * 1_000_000, (Node::GnbDu, Layer::Rlc, Point::Enqueue), Dir::Dl, i);
            e.queue = Some(Queue::RlcSdu);
            e.queue_bytes = Some(1500);
            e.queue_pkts = Some(1);
            rows.push(e);
            let leave =
                PacketEvent::new(i as i64 * 1_000_000 + 300_000, (Node::GnbDu, Layer::Rlc, Point::Segment), Dir::Dl, i);
            rows.push(leave);
        }
        let mut drop = PacketEvent::new(20_000_000, (Node::GnbDu, Layer::Rlc, Point::Drop), Dir::Dl, 99);
        drop.reason = Some(scout_events::Reason::RlcQueueFull);
        rows.push(drop);
        a.packets(&rows);
        let text = a.metrics();
        let s = samples(&text);
        let get = |k: &str| s.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        let lab = "node=\"gnb_du\",layer=\"rlc\",queue=\"rlc_sdu\",dir=\"dl\"";
        assert_eq!(get(&format!("scout_queue_bytes{{{lab}}}")), Some(1500.0));
        // 300 µs each: not in le=0.00025, all in le=0.0005 and above.
        assert_eq!(get(&format!("scout_queue_sojourn_seconds_bucket{{{lab},le=\"0.00025\"}}")), Some(0.0));
        assert_eq!(get(&format!("scout_queue_sojourn_seconds_bucket{{{lab},le=\"0.0005\"}}")), Some(10.0));
        assert_eq!(get(&format!("scout_queue_sojourn_seconds_bucket{{{lab},le=\"+Inf\"}}")), Some(10.0));
        assert_eq!(get(&format!("scout_queue_sojourn_seconds_count{{{lab}}}")), Some(10.0));
        assert!((get(&format!("scout_queue_sojourn_seconds_sum{{{lab}}}")).unwrap() - 0.003).abs() < 1e-12);
        assert_eq!(get("scout_drops_total{layer=\"rlc\",reason=\"rlc_queue_full\",dir=\"dl\"}"), Some(1.0));
        assert_eq!(get("scout_events_total{table=\"packet_events\"}"), Some(21.0));
        // Every metric has its HELP and TYPE.
        for (name, _) in &s {
            let base = name.split('{').next().unwrap();
            let family = base.trim_end_matches("_bucket").trim_end_matches("_sum").trim_end_matches("_count");
            assert!(text.contains(&format!("# TYPE {family} ")) || text.contains(&format!("# TYPE {base} ")), "{name}");
        }
    }
}
