//! Writer throughput: N synthetic packet events through `RunWriter` into a temporary run directory.
//! `cargo run --release -p scout-events --example writer_bench [N]`

use scout_events::writer::RunWriter;
use scout_events::*;

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000_000);
    let dir = std::env::temp_dir().join(format!("scout-writer-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let t0 = std::time::Instant::now();
    let mut w = RunWriter::create(&dir, serde_json::json!({"source": "bench"}), &["default".into()]).expect("create");
    for i in 0..n {
        let layer = Layer::ALL[(i % 12) as usize];
        let queued = i % 5 == 0;
        w.packet(PacketEvent {
            ue: (i % 4) as u32,
            rnti: Some(0x4601),
            drb: Some(1),
            qfi: Some(9),
            flow: (i % 4) as u32,
            sn: Some((i / 20) as u32),
            bytes: 1400,
            queue: queued.then_some(Queue::RlcSdu),
            queue_bytes: queued.then_some(i % 100_000),
            queue_pkts: queued.then_some((i % 70) as u32),
            ..PacketEvent::new((i * 40) as i64, (Node::GnbDu, layer, Point::ALL[(i % 11) as usize]), Dir::Dl, i / 20)
        });
    }
    w.finish(serde_json::json!({})).expect("finish");
    let s = t0.elapsed().as_secs_f64();
    let size: u64 =
        std::fs::read_dir(dir.join("events")).unwrap().filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum();
    println!(
        "writer: {n} packet events in {s:.2} s = {:.2} M events/s, {:.1} bytes/event",
        n as f64 / s / 1e6,
        size as f64 / n as f64
    );
    let _ = std::fs::remove_dir_all(&dir);
}
