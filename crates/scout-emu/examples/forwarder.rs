//! The peers of `bench/emulator.sh`: a bare forwarder between the emulator's two namespaces,
//! with no model and no telemetry, as fast tunnels are built.
//!
//!   forwarder plain   STREAMS SECONDS   one packet per read(2) and write(2)
//!   forwarder offload STREAMS SECONDS   TUN offloads: TCP super-packets of up to 64 KiB cross as they are
//!
//!   forwarder MODE STREAMS SECONDS "MIN DEFAULT MAX"   the DN's net.ipv4.tcp_wmem, as the
//!                                                      benchmark sets it for `scout emulate`
//!
//! It makes the same namespaces and TUN devices as `scout emulate` (one UE), runs an iperf3
//! download (server in the DN, `iperf3 -c DN -R -P STREAMS -t SECONDS` in the UE) through itself and
//! prints one JSON line: the throughput iperf3 measured and the forwarder's own CPU use.

use std::process::{Command, Stdio};
use std::time::Instant;

use scout_emu::netns::{self, Topology};

fn cpu_s() -> f64 {
    // SAFETY: getrusage(2) fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: forwarder plain|offload STREAMS SECONDS [DN_TCP_WMEM]";
    let (Some(mode), Some(streams), Some(secs)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let offload = match mode.as_str() {
        "plain" => false,
        "offload" => true,
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    netns::remove_stale().expect("remove stale namespaces");
    let topo = Topology::create(1, offload).expect("namespaces and TUN devices (root, /dev/net/tun)");
    let dn_ns = topo.dn.ns.clone();
    let ue_ns = topo.ues[0].ns.clone();
    if let Some(wmem) = args.get(4) {
        let set = format!("net.ipv4.tcp_wmem={wmem}");
        let ok = Command::new("ip").args(["netns", "exec", &dn_ns, "sysctl", "-qw", &set]).status();
        assert!(ok.is_ok_and(|s| s.success()), "sysctl {set} in the DN's namespace");
    }
    let mut server = Command::new("ip")
        .args(["netns", "exec", &dn_ns, "iperf3", "-s", "-1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let dn = netns::DN_ADDR4.to_string();
    let client = Command::new("ip")
        .args(["netns", "exec", &ue_ns, "iperf3", "-c", &dn, "-R", "-P", streams, "-t", secs, "-J"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3");
    let a = topo.dn.tun.as_ref().expect("DN device");
    let b = topo.ues[0].tun.as_ref().expect("UE device");
    let mut fds = [
        libc::pollfd { fd: a.raw_fd(), events: libc::POLLIN, revents: 0 },
        libc::pollfd { fd: b.raw_fd(), events: libc::POLLIN, revents: 0 },
    ];
    let mut buf = vec![0u8; 65_536 + 64];
    let (cpu0, t0) = (cpu_s(), Instant::now());
    let (mut packets, mut full) = (0u64, 0u64);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiter = {
        let done = done.clone();
        std::thread::spawn(move || {
            let out = client.wait_with_output().expect("iperf3 client");
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            out.stdout
        })
    };
    while !done.load(std::sync::atomic::Ordering::Relaxed) {
        // SAFETY: two valid pollfd structures.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, 100) };
        for (from, to) in [(a, b), (b, a)] {
            // Whatever is waiting, in batches, so that one side cannot starve the other.
            for _ in 0..64 {
                match from.read(&mut buf) {
                    Ok(Some(n)) if n > 0 => {
                        packets += 1;
                        if !to.write(&buf[..n]).unwrap_or(false) {
                            full += 1;
                        }
                    }
                    _ => break,
                }
            }
        }
    }
    let (cpu, wall) = (cpu_s() - cpu0, t0.elapsed().as_secs_f64());
    let out = waiter.join().expect("waiter");
    let _ = server.kill();
    let _ = server.wait();
    drop(topo);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
    let bps = v["end"]["sum_received"]["bits_per_second"].as_f64().unwrap_or(0.0);
    println!(
        "{}",
        serde_json::json!({
            "forwarder": mode, "streams": streams.parse::<u32>().unwrap_or(0), "gbit_s": bps / 1e9,
            "cpu_pct": 100.0 * cpu / wall, "device_reads": packets, "device_full": full,
            "iperf3_error": v["error"],
        })
    );
}
