//! `scout-upf`: Scout's user plane function as a process of its own (`scout_upf::datapath`), run
//! inside the namespace it serves: GTP-U on N3, PFCP on N4, and a TUN device towards N6 that it
//! creates, brings up and routes the UE pool to (as Open5GS's UPF does with `ogstun`); the
//! kernel forwards between that device and the namespace's N6 interface. Runs until SIGTERM,
//! SIGINT or `--seconds`, then prints one JSON line: its counters and sessions. `docs/upf.md`.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::RawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use scout_emu::tun::Tun;
use scout_upf::datapath::{Device, Upf};
use scout_upf::rules::Node;
use scout_wire::gtpu::GTPU_PORT;
use scout_wire::pfcp::PFCP_PORT;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

struct N6(Tun);

impl Device for N6 {
    fn read(&self, buf: &mut [u8]) -> std::io::Result<Option<usize>> {
        self.0.read(buf)
    }
    fn write(&self, pkt: &[u8]) -> std::io::Result<bool> {
        self.0.write(pkt)
    }
    fn raw_fd(&self) -> RawFd {
        self.0.raw_fd()
    }
}

struct Args {
    name: String,
    n3: Ipv4Addr,
    n4: Ipv4Addr,
    pool: String,
    tun: String,
    queue: usize,
    seconds: Option<f64>,
}

fn usage(why: &str) -> ! {
    let text = format!(
        "scout-upf: {why}\nusage: scout-upf --n3 ADDR --n4 ADDR --pool CIDR [--name NAME] [--tun DEV] [--queue N] \
         [--seconds S]\n  --n3 ADDR   the address GTP-U (port {GTPU_PORT}) is received on\n  --n4 ADDR   the \
         address PFCP (port {PFCP_PORT}) is received on; also the UPF's Node ID\n  --pool CIDR the UEs' \
         addresses, routed to the N6 device (e.g. 10.45.0.0/16)\n  --name NAME the slice it serves (in its \
         report; default upf)\n  --tun DEV   the N6 device it creates (default upf0)\n  --queue N   each \
         forwarding worker's queue, packets (default 4096)\n  --seconds S stop after S seconds (default: at \
         SIGTERM or SIGINT)"
    );
    if why.is_empty() {
        println!("{}", text.trim_start_matches("scout-upf: \n"));
        std::process::exit(0)
    }
    eprintln!("{text}");
    std::process::exit(2)
}

fn parse() -> Args {
    let mut a = Args {
        name: "upf".into(),
        n3: Ipv4Addr::UNSPECIFIED,
        n4: Ipv4Addr::UNSPECIFIED,
        pool: String::new(),
        tun: "upf0".into(),
        queue: 4096,
        seconds: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        if k == "--help" || k == "-h" {
            usage("");
        }
        let v = it.next().unwrap_or_else(|| usage(&format!("{k} needs a value")));
        let addr = |v: &str| v.parse().unwrap_or_else(|_| usage(&format!("{k} {v}: not an IPv4 address")));
        match k.as_str() {
            "--name" => a.name = v,
            "--n3" => a.n3 = addr(&v),
            "--n4" => a.n4 = addr(&v),
            "--pool" => a.pool = v,
            "--tun" => a.tun = v,
            "--queue" => {
                a.queue = v
                    .parse()
                    .ok()
                    .filter(|&q| q > 0)
                    .unwrap_or_else(|| usage(&format!("--queue {v}: a positive count")))
            }
            "--seconds" => {
                a.seconds = Some(
                    v.parse()
                        .ok()
                        .filter(|&s: &f64| s > 0.0)
                        .unwrap_or_else(|| usage(&format!("--seconds {v}: a positive number"))),
                )
            }
            o => usage(&format!("{o}: unknown argument")),
        }
    }
    if a.n3.is_unspecified() || a.n4.is_unspecified() || a.pool.is_empty() {
        usage("--n3, --n4 and --pool are needed");
    }
    a
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

fn run(a: &Args) -> Result<serde_json::Value, String> {
    let tun = Tun::create(&a.tun, false).map_err(|e| format!("TUN device {}: {e}", a.tun))?;
    ip(&["link", "set", "dev", &a.tun, "mtu", "1500", "txqueuelen", "10000", "up"])?;
    ip(&["route", "replace", &a.pool, "dev", &a.tun])?;
    let bind = |addr: Ipv4Addr, port: u16, what: &str| {
        UdpSocket::bind(SocketAddrV4::new(addr, port)).map_err(|e| format!("{what} {addr}:{port}: {e}"))
    };
    let n3 = bind(a.n3, GTPU_PORT, "N3")?;
    let n4 = bind(a.n4, PFCP_PORT, "N4")?;
    let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
    let upf = Upf::start(n3, n4, Arc::new(N6(tun)), Node::new(a.n4, unix), a.queue).map_err(|e| e.to_string())?;
    eprintln!("scout-upf {}: N3 {}:{GTPU_PORT}, N4 {}:{PFCP_PORT}, N6 {} ({})", a.name, a.n3, a.n4, a.tun, a.pool);
    let start = Instant::now();
    while !STOP.load(Ordering::Relaxed) && a.seconds.is_none_or(|s| start.elapsed().as_secs_f64() < s) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let counters = upf.counters.clone();
    let sessions = upf.node.read().map(|n| n.sessions()).unwrap_or(0);
    upf.stop();
    let c: serde_json::Map<String, serde_json::Value> =
        counters.all().into_iter().map(|(k, v)| (k.to_string(), v.into())).collect();
    Ok(
        serde_json::json!({"upf": a.name, "seconds": start.elapsed().as_secs_f64(), "sessions": sessions, "counters": c}),
    )
}

fn main() {
    let a = parse();
    for s in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { libc::signal(s, on_signal as *const () as libc::sighandler_t) };
    }
    match run(&a) {
        Ok(v) => println!("{v}"),
        Err(e) => {
            eprintln!("scout-upf {}: {e}", a.name);
            std::process::exit(1);
        }
    }
}
