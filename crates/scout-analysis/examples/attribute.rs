//! Runs the attribution kernel on a run directory and prints each stage's time:
//! `cargo run --release -p scout-analysis --example attribute -- RUN [WINDOW_S]`
//! (writes RUN/analysis/{journeys,components,layer_delays,profiles,sojourns,queues}.parquet).

use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let run = PathBuf::from(args.next().expect("usage: attribute RUN [WINDOW_S]"));
    let window_s: f64 = args.next().map_or(1.0, |w| w.parse().expect("WINDOW_S: seconds"));
    let opt = scout_analysis::Options {
        window_ns: (window_s > 0.0).then_some((window_s * 1e9) as i64),
        duration_ns: 0,
        threads: 2,
        bin_ns: 100_000_000,
        stop: scout_analysis::Stop::default(),
    };
    let t0 = Instant::now();
    let mut last = t0;
    let mut say = |stage: &str| {
        let now = Instant::now();
        eprintln!("{:8.3} s (+{:.3})  {stage}", (now - t0).as_secs_f64(), (now - last).as_secs_f64());
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
