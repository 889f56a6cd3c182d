//! `scout-sim SCENARIO.yaml OUT_DIR [--seed N] [--duration S] [--set k=v]...`: the simulator without
//! Python, for benchmarks and debugging. Users run `scout simulate`, which calls the same library.

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut pos = Vec::new();
    let mut opts = scout_sim::RunOptions::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seed" => opts.seed = args.next().and_then(|v| v.parse().ok()),
            "--duration" => opts.duration_s = args.next().and_then(|v| v.parse().ok()),
            "--set" => opts.sets.extend(args.next()),
            "-h" | "--help" => {
                eprintln!("usage: scout-sim SCENARIO.yaml OUT_DIR [--seed N] [--duration S] [--set key=value]...");
                return;
            }
            _ => pos.push(PathBuf::from(a)),
        }
    }
    let [scenario, out] = pos.as_slice() else {
        eprintln!("usage: scout-sim SCENARIO.yaml OUT_DIR [--seed N] [--duration S] [--set key=value]...");
        std::process::exit(2);
    };
    let t0 = Instant::now();
    match scout_sim::simulate(scenario, out, &opts, &mut |_| std::ops::ControlFlow::Continue(())) {
        Ok(v) => {
            let wall = t0.elapsed().as_secs_f64();
            let sim = v["summary"]["duration_s"].as_f64().unwrap_or(0.0);
            let events: u64 =
                ["packet_events", "slot_events", "control_events"].iter().filter_map(|k| v["events"][k].as_u64()).sum();
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            println!(
                "wall_s={wall:.3} speedup={:.1}x events={events} events_per_s={:.0}",
                sim / wall,
                events as f64 / wall
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
