//! The model alone, telemetry discarded: how fast the simulator runs without the writer.
//! `cargo run --release -p scout-sim --example model_bench -- scenarios/bench-60mbps.yaml`
use scout_events::schema::{ControlEvent, PacketEvent, Sink, SlotEvent};

#[derive(Default)]
struct Counting(u64);

impl Sink for Counting {
    fn packet(&mut self, _: PacketEvent) {
        self.0 += 1;
    }
    fn slot(&mut self, _: SlotEvent) {
        self.0 += 1;
    }
    fn control(&mut self, _: ControlEvent) {
        self.0 += 1;
    }
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "scenarios/bench-60mbps.yaml".into());
    let loaded = scout_sim::scenario::load(std::path::Path::new(&path), &[]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let duration = loaded.scenario.duration_s;
    let mut sink = Counting::default();
    let t0 = std::time::Instant::now();
    scout_sim::run(&loaded, loaded.scenario.seed, duration, &mut sink, &mut |_| std::ops::ControlFlow::Continue(()))
        .expect("run");
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "model alone: {duration} s simulated in {wall:.2} s = {:.1}x real time, {} events ({:.2} M events/s)",
        duration / wall,
        sink.0,
        sink.0 as f64 / wall / 1e6
    );
}
