//! The probe's cost and ring-buffer loss at a high packet rate (run as root: `bash bench/probe.sh`).
//!
//! In the test bench's namespaces, G-PDUs are injected at the UPF's N3 (TC ingress) and the same
//! inner packets at its N6, so that every packet is seen on both sides and paired in the kernel:
//!
//! ```text
//! probe_bench [RATE_PER_SIDE] [SECONDS] [--histogram] [--pairing same-cpu|cross-cpu]
//!             [--distinct N] [--table-sets N] [--floor empty|clock]
//! ```
//!
//! `--pairing same-cpu` (default): two senders, one per CPU, each sends its own packets on both
//! sides, so a packet's two sightings are on one CPU, as in a UPF that forwards in the kernel; the
//! probe runs with `--pairing same-cpu` (a table per CPU), or with its shared table
//! (`--pairing any-cpu`, the CLI's default) when `--shared-table` is given.
//! `--pairing cross-cpu`: one sender per side, so a packet's sightings are on different CPUs, as
//! in a user-space UPF whose forwarding thread runs on another CPU than the receiving softirq; the
//! N6 sender sends a packet only after the N3 sender has sent it; the probe runs with its shared
//! table.
//! `--senders 1` sends everything from one CPU (same-cpu pairing only).
//! `--floor` attaches, instead of the probe, a program that does nothing (`empty`) or only reads
//! the clock (`clock`): what the kernel's accounting charges any TC program here.
//! `--test-run ROUNDS` sends no traffic: on one CPU, for each distinct packet in turn, the N3
//! ingress program runs on its G-PDU and the N6 egress program on its inner packet, with
//! `BPF_PROG_TEST_RUN`, ROUNDS times over; prints the mean time per run by the kernel's clock
//! (its timer included) and the median of five such passes. The program's own work with its data
//! warm and no other CPU or sender involved: for comparing two versions of the program on a
//! machine whose traffic figures drift by tens of ns between runs. With `--pairing cross-cpu`,
//! N3 ingress runs on CPU 0 and N6 egress on CPU 1 (the shared table's cross-CPU cost without
//! senders); with `--floor`, the floor's program runs instead of both: what `BPF_PROG_TEST_RUN`
//! and its timer charge any program.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use scout_probe::testbench::{self, Bench, Pace, Target};
use scout_probe::Running;
use scout_probe::{Options, Pairing};

struct Args {
    rate: f64,
    secs: f64,
    histogram: bool,
    same_cpu: bool,
    distinct: u16,
    table_sets: u32,
    floor: Option<&'static str>,
    senders: usize,
    shared_table: bool,
    test_run: Option<u32>,
}

fn usage(msg: &str) -> ! {
    eprintln!("probe_bench: {msg}");
    eprintln!(
        "usage: probe_bench [RATE_PER_SIDE] [SECONDS] [--histogram] [--pairing same-cpu|cross-cpu] [--distinct N] [--table-sets N] [--senders 1|2] [--shared-table] [--floor empty|clock] [--test-run ROUNDS]"
    );
    std::process::exit(2);
}

fn args() -> Args {
    let mut a = Args {
        rate: 250_000.0,
        secs: 5.0,
        histogram: false,
        same_cpu: true,
        distinct: 4096,
        table_sets: scout_probe::DEFAULT_TABLE_SETS,
        floor: None,
        senders: 2,
        shared_table: false,
        test_run: None,
    };
    let mut it = std::env::args().skip(1);
    let mut pos = 0;
    while let Some(s) = it.next() {
        let mut val = |name: &str| it.next().unwrap_or_else(|| usage(&format!("{name} needs a value")));
        match s.as_str() {
            "--histogram" => a.histogram = true,
            "--test-run" => {
                a.test_run = Some(val("--test-run").parse().unwrap_or_else(|_| usage("--test-run: rounds, a number")))
            }
            "--shared-table" => a.shared_table = true,
            "--pairing" => match val("--pairing").as_str() {
                "same-cpu" => a.same_cpu = true,
                "cross-cpu" => a.same_cpu = false,
                o => usage(&format!("--pairing {o}: expected same-cpu or cross-cpu")),
            },
            "--distinct" => {
                a.distinct = val("--distinct").parse().unwrap_or_else(|_| usage("--distinct: 2 to 65535"));
                if a.distinct < 2 {
                    usage("--distinct: 2 to 65535")
                }
            }
            "--table-sets" => {
                a.table_sets = val("--table-sets").parse().unwrap_or_else(|_| usage("--table-sets: a power of two"))
            }
            "--senders" => match val("--senders").as_str() {
                "1" => a.senders = 1,
                "2" => a.senders = 2,
                o => usage(&format!("--senders {o}: expected 1 or 2")),
            },
            "--floor" => match val("--floor").as_str() {
                "empty" => a.floor = Some("floor_empty"),
                "clock" => a.floor = Some("floor_clock"),
                o => usage(&format!("--floor {o}: expected empty or clock")),
            },
            x if !x.starts_with("--") && pos == 0 => {
                a.rate = x.parse().unwrap_or_else(|_| usage("RATE_PER_SIDE: packets per second"));
                pos = 1;
            }
            x if !x.starts_with("--") && pos == 1 => {
                a.secs = x.parse().unwrap_or_else(|_| usage("SECONDS: a number"));
                pos = 2;
            }
            x => usage(&format!("unexpected argument {x}")),
        }
    }
    a
}

fn main() {
    let a = args();
    if let Some(rounds) = a.test_run {
        test_run(&a, rounds);
        return;
    }
    if let Some(why) = testbench::unavailable() {
        eprintln!("probe_bench: {why}");
        std::process::exit(2);
    }
    let bench = Bench::create("scbench").expect("namespaces");
    let n3_mac = testbench::mac_bytes(&bench.upf, "n3").unwrap();
    let n6_mac = testbench::mac_bytes(&bench.upf, "n6").unwrap();
    // Distinct packets (IP identification), each as a G-PDU for N3 and plain for N6.
    let (n3_frames, n6_frames): (Vec<Vec<u8>>, Vec<Vec<u8>>) =
        (0..a.distinct).map(|i| testbench::both_sides(i, 0x1234, 64, n3_mac, n6_mac)).unzip();
    let upf = bench.upf_sides("bench");
    if let Some(floor) = a.floor {
        let mut sent = 0;
        let (runs, ns) =
            scout_probe::floor_cost(&upf, floor, || sent = send(&bench, &a, &n3_frames, &n6_frames)).expect("floor");
        println!("sent: {sent} frames ({:.0} k/s)", sent as f64 / a.secs / 1e3);
        println!("{floor}: {runs} runs, {:.0} ns each (kernel BPF stats)", ns as f64 / runs.max(1) as f64);
        return;
    }
    let dir = std::env::temp_dir().join(format!("scout-probe-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let pairing = if a.same_cpu && !a.shared_table { Pairing::SameCpu } else { Pairing::AnyCpu };
    let opts = Options {
        upfs: vec![upf],
        histogram_only: a.histogram,
        table_sets: a.table_sets,
        pairing,
        ..Options::default()
    };
    let probe = Running::start(opts, dir.join("run")).unwrap_or_else(|e| {
        eprintln!("probe_bench: the probe did not attach: {e}");
        std::process::exit(1);
    });
    let sent = send(&bench, &a, &n3_frames, &n6_frames);
    std::thread::sleep(Duration::from_millis(300));
    let meta = probe.finish().expect("probe");
    report(&a, pairing, sent, &meta);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The senders: with same-cpu pairing each CPU sends half the packets on both sides (half the
/// rate each); with cross-cpu, CPU 0 sends every packet on N3 and CPU 1 on N6, after CPU 0.
fn send(bench: &Bench, a: &Args, n3_frames: &[Vec<u8>], n6_frames: &[Vec<u8>]) -> u64 {
    let (rate, same_cpu, senders) = (a.rate, a.same_cpu, a.senders);
    let d = Duration::from_secs_f64(a.secs);
    let (g, u) = (bench.gnb.clone(), bench.dn.clone());
    let part = |f: &[Vec<u8>], k: usize| f.iter().skip(k).step_by(senders).cloned().collect::<Vec<_>>();
    // Per sender: its CPU, its targets (namespace, device, frames) and its rate per target.
    type Plan = (usize, Vec<(String, &'static str, Vec<Vec<u8>>)>, f64);
    let plans: Vec<Plan> = if same_cpu {
        (0..senders)
            .map(|k| {
                let t = vec![(g.clone(), "g0", part(n3_frames, k)), (u.clone(), "d0", part(n6_frames, k))];
                (k, t, rate / senders as f64)
            })
            .collect()
    } else {
        vec![(0, vec![(g, "g0", n3_frames.to_vec())], rate), (1, vec![(u, "d0", n6_frames.to_vec())], rate)]
    };
    // Cross-cpu: the N6 sender sends no packet before the N3 sender has (a packet leaves
    // the UPF after it arrived), and the N3 sender stays at most 1 024 packets ahead (the
    // UPF's queue is bounded), so neither laps the other's 4 096 distinct packets.
    let (n3_sent, n6_sent) = (AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|sc| {
        let threads: Vec<_> = plans
            .into_iter()
            .map(|(cpu, t, r)| {
                let pace = match (same_cpu, cpu) {
                    (true, _) => Pace::default(),
                    (false, 0) => Pace { sent: Some(&n3_sent), after: Some((&n6_sent, 1024)) },
                    (false, _) => Pace { sent: Some(&n6_sent), after: Some((&n3_sent, 0)) },
                };
                sc.spawn(move || {
                    let targets: Vec<Target<'_>> =
                        t.iter().map(|(ns, dev, f)| Target { netns: ns, dev, frames: f }).collect();
                    testbench::inject(&targets, cpu, r, d, pace).expect("inject")
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap().iter().sum::<u64>()).sum()
    })
}

/// Prints what was sent, what the kernel and user space counted, whether every sighting is
/// accounted for, and the probe's cost per packet.
fn report(a: &Args, pairing: Pairing, sent: u64, meta: &serde_json::Value) {
    let pr = &meta["probe_result"];
    let un = &meta["unmatched"];
    let c = &pr["upfs"][0]["counters"];
    println!(
        "sent: {sent} frames ({:.0} k/s), {} traffic, probe pairing {}, {} distinct packets, {} sets",
        sent as f64 / a.secs / 1e3,
        if a.same_cpu { "same-cpu" } else { "cross-cpu" },
        pairing.name(),
        a.distinct,
        a.table_sets
    );
    println!(
        "kernel: N3 sightings {}, N6 sightings {}, pairs {}, duplicates {}, ring-buffer full {}",
        c["n3_sightings"], c["n6_sightings"], c["pairs"], c["duplicates"], c["ringbuf_full"]
    );
    println!(
        "user space: pairs {} + {}, unmatched N3 {} N6 {} {}",
        pr["pairs"]["ul"], pr["pairs"]["dl"], un["n3"]["total"], un["n6"]["total"], un
    );
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let accounted = 2 * n(&pr["pairs_in_kernel"]) + n(&c["duplicates"]) + n(&un["n3"]["total"]) + n(&un["n6"]["total"]);
    println!(
        "every sighting accounted for: {} (2 x pairs + duplicates + unmatched = {accounted}, sightings = {})",
        accounted == n(&c["n3_sightings"]) + n(&c["n6_sightings"]),
        n(&c["n3_sightings"]) + n(&c["n6_sightings"])
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
}

/// `--test-run ROUNDS`: the programs run by `BPF_PROG_TEST_RUN` on each distinct packet, N3 ingress
/// then N6 egress (a packet's arrival and departure), on CPU 0; with `--pairing cross-cpu`, N3
/// ingress on CPU 0 and N6 egress on CPU 1, each packet's after its arrival and at most 1 024
/// packets behind (as the traffic bench paces its senders), with the shared table.
fn test_run(a: &Args, rounds: u32) {
    let mac = [2, 0, 0, 0, 0, 9];
    let frames: Vec<(Vec<u8>, Vec<u8>)> =
        (0..a.distinct).map(|i| testbench::both_sides(i, 0x1234, 64, mac, mac)).collect();
    testbench::pin(0);
    let pairing = if a.shared_table || !a.same_cpu { Pairing::AnyCpu } else { Pairing::SameCpu };
    let mut passes = Vec::new();
    for pass in 0..5 {
        // A fresh table and rings each pass (the rings are not drained here: keep ROUNDS x
        // DISTINCT pairs under ~50 000, or ring-full pairs take the cheaper failure path).
        let h = scout_probe::Harness::new(&Options {
            histogram_only: a.histogram,
            table_sets: a.table_sets,
            pairing,
            ..Options::default()
        })
        .unwrap_or_else(|e| {
            eprintln!("probe_bench: {e}");
            std::process::exit(2);
        });
        let (p3, p6) = a.floor.map_or(("n3_ingress", "n6_egress"), |f| (f, f));
        let (mut n3, mut n6) = (0u64, 0u64);
        if a.same_cpu {
            for _ in 0..rounds {
                for (g, ip) in &frames {
                    n3 += u64::from(h.run(p3, g).expect("test run"));
                    n6 += u64::from(h.run(p6, ip).expect("test run"));
                }
            }
        } else {
            let (arrived, left) = (AtomicU64::new(0), AtomicU64::new(0));
            let total = u64::from(rounds) * frames.len() as u64;
            let frame = |k: u64| &frames[(k % frames.len() as u64) as usize];
            std::thread::scope(|sc| {
                let n6_cpu = sc.spawn(|| {
                    testbench::pin(1);
                    let mut t = 0u64;
                    for k in 0..total {
                        while arrived.load(Ordering::Acquire) <= k {
                            std::hint::spin_loop();
                        }
                        t += u64::from(h.run(p6, &frame(k).1).expect("test run"));
                        left.store(k + 1, Ordering::Release);
                    }
                    t
                });
                for k in 0..total {
                    while k >= left.load(Ordering::Acquire) + 1024 {
                        std::hint::spin_loop();
                    }
                    n3 += u64::from(h.run(p3, &frame(k).0).expect("test run"));
                    arrived.store(k + 1, Ordering::Release);
                }
                n6 = n6_cpu.join().unwrap();
            });
        }
        let runs = u64::from(rounds) * frames.len() as u64;
        let c = h.counters();
        let (m3, m6) = (n3 as f64 / runs as f64, n6 as f64 / runs as f64);
        let mean = (m3 + m6) / 2.0;
        println!(
            "pass {pass}: N3 ingress {m3:.0} ns, N6 egress {m6:.0} ns, mean {mean:.0} ns per run ({runs} packets; pairs {}, ring-buffer full {})",
            c["pairs"],
            c["ringbuf_full"]
        );
        passes.push(mean);
    }
    passes.sort_by(f64::total_cmp);
    println!(
        "test-run cost: {:.0} ns per run, median of {} passes ({}, {} sets, {} distinct packets)",
        passes[passes.len() / 2],
        passes.len(),
        match (a.floor, a.same_cpu, a.shared_table) {
            (Some(f), ..) => f,
            (None, false, _) => "shared table, N3 on CPU 0 and N6 on CPU 1",
            (None, true, true) => "shared table",
            (None, true, false) => "per-CPU tables",
        },
        a.table_sets,
        a.distinct
    );
}
