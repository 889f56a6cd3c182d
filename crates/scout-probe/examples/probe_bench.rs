//! The probe's cost and ring-buffer loss at a high packet rate (run as root: `bash bench/probe.sh`).
//!
//! In the test bench's namespaces, one sender injects G-PDUs at the UPF's N3 (TC ingress) and
//! another the same inner packets at its N6, so that every packet is seen on both sides and
//! paired in the kernel: `probe_bench RATE_PER_SIDE SECONDS [--histogram]`.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use scout_probe::testbench::{self, Bench};
use scout_probe::Options;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rate: f64 = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(250_000.0);
    let secs: f64 = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let histogram = a.iter().any(|s| s == "--histogram");
    if let Some(why) = testbench::unavailable() {
        eprintln!("probe_bench: {why}");
        std::process::exit(2);
    }
    let bench = Bench::create("scbench").expect("namespaces");
    let n3_mac = testbench::mac_bytes(&bench.upf, "n3").unwrap();
    let n6_mac = testbench::mac_bytes(&bench.upf, "n6").unwrap();
    // 4096 distinct packets (IP identification), each as a G-PDU for N3 and plain for N6.
    let n3_frames: Vec<Vec<u8>> =
        (0..4096u16).map(|i| testbench::ether(n3_mac, &testbench::outer(&testbench::gpdu(i, 0x1234, 64)))).collect();
    let n6_frames: Vec<Vec<u8>> = (0..4096u16)
        .map(|i| {
            let g = testbench::gpdu(i, 0x1234, 64);
            testbench::ether(n6_mac, &g[16..])
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("scout-probe-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let stop = Arc::new(AtomicBool::new(false));
    let opts = Options {
        upfs: vec![bench.upf_sides("bench")],
        duration: None,
        histogram_only: histogram,
        window: Duration::from_secs(2),
        gtp_port: 2152,
        pfcp: vec![],
    };
    let probe = {
        let (stop, out) = (stop.clone(), dir.join("run"));
        std::thread::spawn(move || scout_probe::run(&opts, &out, &stop, &mut |_| {}))
    };
    std::thread::sleep(Duration::from_millis(500));
    let d = Duration::from_secs_f64(secs);
    let (g, u) = (bench.gnb.clone(), bench.dn.clone());
    let s3 = std::thread::spawn(move || testbench::inject(&g, "g0", 0, &n3_frames, rate, d));
    let s6 = std::thread::spawn(move || testbench::inject(&u, "d0", 1, &n6_frames, rate, d));
    let (sent3, sent6) = (s3.join().unwrap().expect("inject n3"), s6.join().unwrap().expect("inject n6"));
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let meta = probe.join().unwrap().expect("probe");
    let pr = &meta["probe_result"];
    let c = &pr["upfs"][0]["counters"];
    println!(
        "sent: N3 {sent3} ({:.0} k/s), N6 {sent6} ({:.0} k/s)",
        sent3 as f64 / secs / 1e3,
        sent6 as f64 / secs / 1e3
    );
    println!(
        "kernel: N3 sightings {}, N6 sightings {}, pairs {}, duplicates {}, ring-buffer full {}",
        c["n3_sightings"], c["n6_sightings"], c["pairs"], c["duplicates"], c["ringbuf_full"]
    );
    println!(
        "user space: pairs {} + {}, unmatched N3 {} N6 {}",
        pr["pairs"]["ul"], pr["pairs"]["dl"], pr["unmatched"]["n3"], pr["unmatched"]["n6"]
    );
    println!(
        "probe cost (kernel BPF stats): {:.0} ns per packet",
        pr["cost_ns_per_packet"].as_f64().unwrap_or(f64::NAN)
    );
    for p in pr["upfs"][0]["programs"].as_array().unwrap() {
        println!(
            "  {}: {} runs, {:.0} ns each",
            p["program"],
            p["run_count"],
            p["ns_per_packet"].as_f64().unwrap_or(f64::NAN)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
