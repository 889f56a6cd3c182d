//! Runs the attribution kernel on a run directory and prints each stage's time:
//! `cargo run --release -p scout-analysis --example attribute -- RUN [WINDOW_S [MEMORY_MB]]`
//! (writes RUN/analysis/{journeys,components,layer_delays,profiles,sojourns,queues}.parquet).

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let run = PathBuf::from(args.next().expect("usage: attribute RUN [WINDOW_S]"));
    let window_s: f64 = args.next().map_or(1.0, |w| w.parse().expect("WINDOW_S: seconds"));
    let memory: Option<u64> = args.next().map(|m| m.parse::<u64>().expect("MEMORY_MB: megabytes") << 20);
    let opt = scout_analysis::Options {
        window_ns: (window_s > 0.0).then_some((window_s * 1e9) as i64),
        duration_ns: 0,
        threads: 2,
        bin_ns: 100_000_000,
        memory,
        stop: scout_analysis::Stop::default(),
    };
    static STAGE: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    std::thread::spawn(|| {
        let mut max = 0u64;
        loop {
            let rss: u64 = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("VmRSS:"))
                        .and_then(|l| l[6..].trim().trim_end_matches(" kB").parse().ok())
                })
                .unwrap_or(0);
            if rss > max + 20000 {
                max = rss;
                eprintln!("   peak {rss} kB in {}", STAGE.lock().unwrap());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    });
    let t0 = Instant::now();
    let mut last = t0;
    let mut say = |stage: &str| {
        let now = Instant::now();
        let rss = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l[6..].trim().to_string()))
            .unwrap_or_default();
        *STAGE.lock().unwrap() = stage.to_string();
        eprintln!("{:8.3} s (+{:.3})  {stage:<10} RSS {rss}", (now - t0).as_secs_f64(), (now - last).as_secs_f64());
        last = now;
    };
    match scout_analysis::analyze(&run.join("events"), &run.join("analysis"), &opt, &mut say) {
        Ok(s) => {
            let wall = t0.elapsed().as_secs_f64();
            say("done");
            println!("{s:#?}");
            println!("{} events in {wall:.2} s = {:.2} M events/s", s.events, s.events as f64 / wall / 1e6);
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
