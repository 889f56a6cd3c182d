//! The emulator with real applications, as root (skipped with the reason where root, TUN or the
//! tools are missing): ping through an idle cell, every packet at every layer, and nothing left
//! behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use scout_emu::driver::{emulate, Options};
use scout_emu::netns;
use serde_json::Value;

/// Why the emulator cannot run here, if it cannot.
fn missing() -> Option<String> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    for tool in ["ip", "ping"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("{tool} is not installed"));
        }
    }
    None
}

/// The tests share the machine's namespace list (one removes what another's start would call
/// stale): one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! require_root {
    () => {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(why) = missing() {
            if std::env::var_os("CI").is_some() {
                panic!("the emulator's tests must run in CI: {why}");
            }
            eprintln!("skipping: {why}");
            return;
        }
    };
}

const IDLE: &str = "name: idle\nduration_s: 30\nues: [{count: 2}]\ntraffic: []\n";

fn loaded(text: &str) -> scout_sim::scenario::Loaded {
    let (scenario, resolved) = scout_sim::scenario::parse(text, "test.yaml", &[]).expect("valid scenario");
    scout_sim::scenario::Loaded { scenario, dir: PathBuf::from("."), file: "test.yaml".into(), resolved }
}

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("scout-emu-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        TempDir(p)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the emulation in a thread; `apps` runs with the namespaces' names once they are up, then
/// the emulation stops. Returns the finished run's `run.json`.
fn with_emulation(text: &str, out: &Path, apps: impl FnOnce(&[String])) -> Value {
    with_emulation_opts(text, out, Options::default(), apps)
}

fn with_emulation_opts(text: &str, out: &Path, opts: Options, apps: impl FnOnce(&[String])) -> Value {
    let l = loaded(text);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let (s2, out2) = (stop.clone(), out.to_path_buf());
    let h = std::thread::spawn(move || {
        emulate(&l, &out2, &opts, &mut |names| tx.send(names.to_vec()).unwrap(), &mut |_| {
            if s2.load(Ordering::Relaxed) {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        })
    });
    let names = match rx.recv() {
        Ok(n) => n,
        Err(_) => panic!("the emulation did not start: {:?}", h.join().unwrap().err()),
    };
    apps(&names);
    stop.store(true, Ordering::Relaxed);
    let meta = h.join().expect("no panic").expect("the emulation ran");
    // Nothing is left behind: no namespace, no device.
    let list = String::from_utf8(Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).unwrap();
    for n in &names {
        assert!(!list.contains(n.as_str()), "namespace {n} remains: {list}");
    }
    let links = String::from_utf8(Command::new("ip").args(["-o", "link"]).output().unwrap().stdout).unwrap();
    assert!(!links.contains(&format!("sc{}", std::process::id())), "a device remains: {links}");
    meta
}

/// ping's `(icmp_seq, RTT ms)` per reply.
fn ping(ns: &str, args: &[&str]) -> Vec<(u64, f64)> {
    let out = Command::new("ip").args(["netns", "exec", ns, "ping"]).args(args).output().expect("ping runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |l: &str, k: &str| l.split(k).nth(1)?.split_whitespace().next().map(str::to_string);
    text.lines()
        .filter_map(|l| Some((field(l, "icmp_seq=")?.parse().ok()?, field(l, "time=")?.parse().ok()?)))
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The `value` and `detail` of every control row of `kind` in the run.
fn control_rows(run: &Path, kind: &str) -> Vec<(f64, Value)> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, UInt8Type};
    let f = std::fs::File::open(run.join("events/control.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let kinds = b.column_by_name("kind").unwrap().as_dictionary::<UInt8Type>();
        let names = kinds.values().as_string::<i32>();
        let values = b.column_by_name("value").unwrap().as_primitive::<Float64Type>();
        let details = b.column_by_name("detail").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            if names.value(kinds.keys().value(i) as usize) == kind {
                out.push((values.value(i), serde_json::from_str(details.value(i)).unwrap_or(Value::Null)));
            }
        }
    }
    out
}

/// Ping from UE 0 to the DN through an idle cell: every request answered; the RTT is the model's
/// uplink plus downlink latency of those packets (SR, grant, HARQ-free transmission, slot
/// alignment) plus the emulator's own overhead, which stays under 0.3 ms at the median.
#[test]
fn ping_through_an_idle_cell_costs_the_models_latency_and_little_more() {
    require_root!();
    // 5 s of pings (~10 000 slots): one stall of the virtual machine (up to 22 ms seen on the CI
    // host, ~45 slots) stays under the 1 % the slots' p99 bound below allows; over 2 s it did not.
    const PINGS: usize = 100;
    let d = TempDir::new("ping");
    let out = d.0.join("run");
    let mut rtts = Vec::new();
    let meta = with_emulation(IDLE, &out, |names| {
        rtts = ping(&names[1], &["-c", &PINGS.to_string(), "-i", "0.05", "-W", "1", "10.45.0.1"]);
    });
    assert_eq!(rtts.len(), PINGS, "every echo request answered");
    assert_eq!(meta["complete"], true);
    let s = &meta["summary"];
    let dl = &s["directions"][0];
    let ul = &s["directions"][1];
    // Uplink: the 40 requests, and whatever else the UE's kernel sends (IPv6 multicast listener
    // reports): all of it real traffic through the model.
    assert_eq!(dl["delivered_packets"].as_u64(), Some(PINGS as u64), "{s}");
    assert!(ul["delivered_packets"].as_u64().unwrap() >= PINGS as u64, "{s}");
    let icmp_ul = meta["flows"].as_array().unwrap().iter().filter(|f| f["type"] == "icmp" && f["dir"] == "ul").count();
    assert_eq!(icmp_ul, 1, "one echo-request flow: {}", meta["flows"]);
    // The model's round trip of each echo (request into the UE's PDCP to reply delivered to the
    // UE), as `app_rtt` rows like the simulator's pings, against ping's own (0.1 ms resolution
    // above 10 ms).
    let model: std::collections::HashMap<u64, f64> =
        control_rows(&out, "app_rtt").into_iter().map(|(ns, d)| (d["icmp_seq"].as_u64().unwrap(), ns / 1e6)).collect();
    assert_eq!(model.len(), PINGS);
    let mut overhead: Vec<f64> = rtts.iter().map(|(seq, p)| p - model[seq]).collect();
    let lowest = overhead.iter().copied().fold(f64::INFINITY, f64::min);
    let typical = median(&mut overhead);
    assert!(
        lowest > -0.06 && typical < 0.3,
        "ping minus the model's round trip per echo: median {typical:.3} ms, lowest {lowest:.3} ms ({overhead:?})"
    );
    eprintln!(
        "ping minus the model's round trip: median {typical:.3} ms, lowest {lowest:.3} ms; timing {}",
        meta["emulator"]["timing"]
    );
    // The model's own floor: at least one slot each way, and an SR wait on the uplink.
    assert!(model.values().all(|&m| m > 1.0), "{model:?}");
    let timing = &meta["emulator"]["timing"];
    // Every slot of the run was kept (and measured), and an idle cell keeps them and the model's
    // actions on time, but for the pauses its loop counted.
    let (timed, slots) = (timing["slots"]["n"].as_u64().unwrap(), meta["summary"]["slots"].as_u64().unwrap());
    assert!(timed * 100 >= slots * 99, "{timed} of {slots}: {timing}");
    let slot_ms = meta["summary"]["duration_s"].as_f64().unwrap() * 1e3 / slots as f64;
    on_time_but_for_long_turns(timing, "slots", slot_ms);
    on_time_but_for_long_turns(timing, "actions", slot_ms);
    let c = &meta["counts"];
    assert_eq!(
        c["offered_packets"].as_u64().unwrap(),
        c["delivered_packets"].as_u64().unwrap()
            + c["drops"]
                .as_object()
                .unwrap()
                .values()
                .flat_map(|l| l.as_object().unwrap().values())
                .map(|n| n.as_u64().unwrap())
                .sum::<u64>()
            + c["in_flight_packets"].as_u64().unwrap()
    );
    assert!(out.join("events/packet.parquet").exists());
}

/// At most 1 % of `what` (`slots` or `actions`) ran 1 ms late or more, besides those due during
/// the long turns the loop counted. A long turn is the loop's thread kept from its CPU — on the CI
/// host, a virtual machine whose host takes the busy vCPU away for 2–20 ms at a time, up to 180
/// times in 5 s (377 ms of 5 s in one run), which no emulator can help — and every slot due
/// meanwhile is late: of a turn of `L` ms, about `L / slot_ms + 1` slots, and their actions. A
/// p99 bound alone fails whenever such pauses cover more than 1 % of the run; this one still fails
/// when the emulator is late outside them.
fn on_time_but_for_long_turns(timing: &Value, what: &str, slot_ms: f64) {
    let long = &timing["long_turns"];
    let (n_long, long_ms) = (long["n"].as_f64().unwrap(), long["total_ms"].as_f64().unwrap());
    let per_slot = timing[what]["n"].as_f64().unwrap() / timing["slots"]["n"].as_f64().unwrap();
    let excused = ((long_ms / slot_ms + n_long) * per_slot).ceil();
    let (n, late) = (timing[what]["n"].as_f64().unwrap(), timing[what]["over_1_ms"].as_f64().unwrap());
    assert!(
        late <= 0.01 * n + excused,
        "{late} of {n} {what} 1 ms late or more; {excused} due during {n_long} long turns of {long_ms} ms: {timing}"
    );
}

/// A namespace of an emulator that was killed (named for a process that is gone) is removed by the
/// next start.
#[test]
fn the_next_start_removes_what_a_killed_emulator_left() {
    require_root!();
    // A process id that is surely not running: the highest allowed plus one is never used.
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    let ns = netns::ns_name(max + 1, "ue0");
    assert!(Command::new("ip").args(["netns", "add", &ns]).status().unwrap().success());
    assert!(netns::stale().contains(&ns));
    let removed = netns::remove_stale().unwrap();
    assert!(removed.contains(&ns), "{removed:?}");
    let list = String::from_utf8(Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).unwrap();
    assert!(!list.contains(&ns), "{list}");
}

/// iperf3 over TCP from UE 0 to an iperf3 server in the DN, both started by the scenario's
/// `apps:`: the flow crosses every layer and iperf3's own count of bytes is the model's.
#[test]
fn iperf3_tcp_through_the_cell_with_apps() {
    require_root!();
    if Command::new("iperf3").arg("-v").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "iperf3 must be installed in CI");
        eprintln!("skipping: iperf3 is not installed");
        return;
    }
    let d = TempDir::new("iperf3");
    let out = d.0.join("run");
    let text = "name: tcp\nduration_s: 5\nues: [{count: 1}]\napps:\n  - {name: server, ns: dn, cmd: iperf3 -s -1 -J}\n  - {name: client, ns: ue0, at_s: 0.5, cmd: 'iperf3 -c $SCOUT_DN -t 3 -J'}\n";
    let meta = with_emulation(text, &out, |_| std::thread::sleep(std::time::Duration::from_secs(5)));
    let apps = meta["apps"].as_array().unwrap();
    assert_eq!(apps.len(), 2);
    let client: Value = serde_json::from_str(&std::fs::read_to_string(out.join("apps/client.out")).unwrap()).unwrap();
    let received = client["end"]["sum_received"]["bytes"].as_f64().unwrap();
    let secs = client["end"]["sum_received"]["seconds"].as_f64().unwrap();
    let mbps = received * 8.0 / secs / 1e6;
    let ul = &meta["summary"]["directions"][1];
    let delivered = ul["delivered_bytes"].as_f64().unwrap();
    // Every byte the server received crossed the model, with its TCP/IP headers (52 of every
    // 1400) and the control connection's few packets.
    assert!(
        delivered >= received && delivered <= received * 1.06 + 50_000.0,
        "iperf3 {received} B, model {delivered} B"
    );
    // The sender's TCP state per ACK, from the kernel (tcp_probe), as control rows.
    let tcp = &meta["emulator"]["tcp_info"];
    assert!(tcp["rows"].as_u64().unwrap() > 500, "{tcp}");
    assert_eq!((tcp["unparsed_lines"].as_u64(), tcp["lost_in_kernel"].as_u64()), (Some(0), Some(0)), "{tcp}");
    let sender: Vec<Value> = control_rows(&out, "tcp_info")
        .into_iter()
        .map(|(_, d)| d)
        .filter(|d| d["src"].as_str().unwrap().starts_with("10.45.0.2") && d["delivery_rate_bps"].is_number())
        .collect();
    let peak = sender.iter().map(|d| d["delivery_rate_bps"].as_f64().unwrap()).fold(0.0, f64::max);
    assert!(peak > 0.5 * mbps * 1e6 && peak < 3.0 * mbps * 1e6, "delivery rate {peak} b/s, iperf3 {mbps} Mbit/s");
    assert!(sender.iter().any(|d| d["bytes_in_flight"].as_u64().unwrap() > 10_000));
    // iperf3's own results, both ends, as control rows on the same clock.
    assert_eq!(meta["emulator"]["iperf3"]["tests"].as_u64(), Some(2), "{}", meta["emulator"]["iperf3"]);
    let results = control_rows(&out, "iperf3_result");
    assert_eq!(results.len(), 2);
    for (bps, d) in &results {
        assert_eq!(d["received_bytes"].as_f64(), Some(received), "{d}");
        assert!((bps * secs / 8.0 - received).abs() < received * 0.01, "{bps} b/s");
    }
    let intervals = control_rows(&out, "iperf3");
    assert!(intervals.len() >= 6, "3 one-second intervals per side: {}", intervals.len());
    // The cell's uplink capacity, as the simulator finds it with more UDP than it can carry.
    let flood = "name: cap\nduration_s: 2\nues: [{count: 1}]\ntraffic: [{type: udp_cbr, ue: 0, dir: ul, rate_mbps: 200, size_bytes: 1400, start_s: 0.2}]\n";
    let mut sink = scout_events::NullSink;
    let o = scout_sim::run(&loaded(flood), 1, 2.0, &mut sink, &mut |_| std::ops::ControlFlow::Continue(())).unwrap();
    let capacity = o.stats.delivered_bytes[1] as f64 * 8.0 / 1.8 / 1e6;
    eprintln!("iperf3 TCP: {mbps:.1} Mbit/s; the cell's uplink capacity {capacity:.1} Mbit/s");
    assert!(mbps >= 0.9 * capacity * 1348.0 / 1400.0, "TCP {mbps:.1} Mbit/s of goodput, capacity {capacity:.1} Mbit/s");
}

/// UDP Prague with real packets (`scout-prague`) through an emulated cell that marks ECT(1)
/// packets at its RLC queue (5-7 ms): the receiver reads CE from the IP headers and reports it,
/// the sender slows, and the queue stays short although the sender may send more than the cell
/// carries. The same sender without marking (max_ms far away) fills the queue.
#[test]
fn udp_prague_through_l4s_marking_keeps_the_queue_short() {
    require_root!();
    let bin = env!("CARGO_BIN_EXE_scout-prague");
    let run = |tag: &str, l4s: &str| -> (Value, Value) {
        let d = TempDir::new(tag);
        let out = d.0.join("run");
        let text = format!(
            "name: prague\nduration_s: 8\nues: [{{count: 1}}]\nqos: [{{five_qi: 9, l4s: {l4s}}}]\napps:\n  \
             - {{name: recv, ns: ue0, cmd: '{bin} recv --seconds 7'}}\n  \
             - {{name: send, ns: dn, at_s: 0.3, cmd: '{bin} send $SCOUT_UE --seconds 6 --max-mbps 200'}}\n"
        );
        let _meta = with_emulation(&text, &out, |_| std::thread::sleep(std::time::Duration::from_secs(8)));
        let read = |f: &str| -> Value {
            let t = std::fs::read_to_string(out.join("apps").join(f)).unwrap();
            serde_json::from_str(t.trim()).unwrap_or_else(|e| panic!("{f}: {e}: {t}"))
        };
        (read("send.out"), read("recv.out"))
    };
    let (send, recv) = run("prague", "{min_ms: 5, max_ms: 7}");
    eprintln!("L4S 5-7 ms: sender {send}\n  receiver {recv}");
    // Every mark reported back (but those whose report was still on its way as the sender ended).
    let (marks, heard) = (recv["ce"].as_u64().unwrap(), send["ce"].as_u64().unwrap());
    assert!(marks > 20 && heard <= marks && heard * 10 >= marks * 9, "CE reached the sender: {send} {recv}");
    assert!(recv["mean_delay_ms"].as_f64().unwrap() < 30.0, "{recv}");
    assert!(recv["mbps"].as_f64().unwrap() > 5.0, "{recv}");
    let (_, deep) = run("prague-deep", "{min_ms: 5000, max_ms: 5001}");
    eprintln!("no marks: receiver {deep}");
    assert_eq!(deep["ce"].as_u64(), Some(0));
    assert!(
        deep["mean_delay_ms"].as_f64().unwrap() > 5.0 * recv["mean_delay_ms"].as_f64().unwrap(),
        "{deep} vs {recv}"
    );
}

/// A slice served by Scout's real UPF process (`core.slices[].upf_process`, docs/upf.md): ping
/// from UE 0 crosses the model's RAN, the gNB's N3 as real GTP-U, the UPF's namespace and back.
#[test]
fn ping_through_a_slice_with_a_real_upf() {
    require_root!();
    let d = TempDir::new("real-upf");
    let out = d.0.join("run");
    let text =
        "name: real-upf\nduration_s: 30\ncore:\n  slices:\n  - {name: embb, upf_process: true}\n  - {name: iot}\n\
                ues: [{count: 2, slice: embb}, {count: 1, slice: iot}]\ntraffic: []\n";
    let opts = Options { upf_binary: Some(PathBuf::from(env!("CARGO_BIN_EXE_scout-upf"))), ..Options::default() };
    let (mut real, mut model) = (Vec::new(), Vec::new());
    let meta = with_emulation_opts(text, &out, opts, |names| {
        assert!(names.iter().any(|n| n.ends_with("-upf0")) && names.iter().any(|n| n.ends_with("-gnb")), "{names:?}");
        real = ping(&names[1], &["-c", "20", "-i", "0.05", "-W", "1", "10.45.0.1"]);
        // UE 2 is on the other slice: the model's UPF stage, as before.
        model = ping(&names[3], &["-c", "10", "-i", "0.05", "-W", "1", "10.45.0.1"]);
    });
    assert_eq!((real.len(), model.len()), (20, 10), "every echo request answered on both slices");
    let emu = &meta["emulator"];
    let n3 = &emu["n3"];
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("{v} in {emu}"));
    assert!(n(&n3["uplink_sent"]) >= 20 && n(&n3["gpdus_received"]) >= 20, "{n3}");
    assert_eq!((n(&n3["unknown_teid"]), n(&n3["not_gpdu"]), n(&n3["uplink_send_failed"])), (0, 0, 0), "{n3}");
    assert_eq!(n(&n3["from_core_packets"]), n(&n3["gpdus_received"]), "{n3}");
    let core = &emu["core"][0];
    assert_eq!(core["slice"], "embb");
    let c = &core["upf"]["counters"];
    // The UPF forwarded every IPv4 packet the gNB sent it, and every one back came to the gNB.
    assert_eq!(n(&c["ul_forwarded"]), n(&n3["uplink_sent"]), "{core}");
    assert_eq!(n(&c["dl_forwarded"]), n(&n3["gpdus_received"]), "{core}");
    assert_eq!((n(&c["ul_no_rule"]), n(&c["dl_no_rule"])), (0, 0), "{core}");
    assert_eq!(core["upf"]["sessions"], 0, "every session deleted: {core}");
    let pfcp = &core["pfcp"];
    assert_eq!(pfcp["establishment_ms"].as_array().map(Vec::len), Some(2), "a session per UE of the slice: {pfcp}");
    assert!(pfcp["deletion_ms"].as_array().unwrap().iter().all(Value::is_f64), "{pfcp}");
    // The model's round trip of each echo still holds for the real UPF's slice (request into the
    // UE's PDCP to reply delivered): 30 rows, one per echo.
    assert_eq!(control_rows(&out, "app_rtt").len(), 30);
    let med = |v: &mut Vec<(u64, f64)>| median(&mut v.iter().map(|x| x.1).collect::<Vec<_>>());
    eprintln!(
        "ping median: real UPF {:.3} ms, model's UPF {:.3} ms; N3 {n3}; PFCP {pfcp}",
        med(&mut real),
        med(&mut model)
    );
}
