//! The TCP state of the applications' sockets, per segment received, from the kernel's
//! `tcp:tcp_probe` tracepoint: congestion window, slow-start threshold, smoothed RTT, send and
//! receive windows, sequence numbers; and each retransmitted segment, from `tcp:tcp_retransmit_skb`. Read through a tracefs instance of the emulator's own
//! (`instances/scout-<pid>`, clock `mono`: the emulator's clock), so that other tracing on the
//! machine is left alone; the instance is removed at the end.
//!
//! The tracepoint fires in every namespace; only sockets whose local address is an emulated one
//! are kept (the caller decides).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node};
use serde_json::json;

use crate::netns;

/// One `tcp_probe` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpSample {
    /// `CLOCK_MONOTONIC`, ns (µs resolution).
    pub t_mono_ns: i64,
    /// The socket's local and remote address.
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub data_len: u32,
    pub snd_nxt: u32,
    pub snd_una: u32,
    /// Segments.
    pub snd_cwnd: u32,
    pub ssthresh: u32,
    pub snd_wnd: u32,
    /// Smoothed RTT, µs.
    pub srtt_us: u32,
    pub rcv_wnd: u32,
}

/// A segment a socket sent again (`tcp:tcp_retransmit_skb`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retransmit {
    pub t_mono_ns: i64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
}

/// A line of the emulator's tracefs instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcpLine {
    Sample(TcpSample),
    Retransmit(Retransmit),
}

/// The time of a `trace_pipe` line (`… 345.678901: event: …`), ns.
fn line_time(head: &str) -> Option<i64> {
    let ts = head.rsplit(' ').next()?;
    let (sec, frac) = ts.split_once('.')?;
    let digits = frac.get(..frac.len().min(9))?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // `345.` is the whole second (the kernel writes six digits; nothing else is assumed).
    let frac_ns = if digits.is_empty() { 0 } else { digits.parse::<i64>().ok()? * 10i64.pow(9 - digits.len() as u32) };
    sec.parse::<i64>().ok()?.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// Parses a `trace_pipe` line of `tcp_retransmit_skb`:
/// `… 12.5: tcp_retransmit_skb: skbaddr=… family=AF_INET sport=5201 dport=40000 saddr=10.45.0.1
/// daddr=10.45.0.2 saddrv6=::ffff:10.45.0.1 daddrv6=… state=TCP_ESTABLISHED`.
pub fn parse_retransmit(line: &str) -> Option<Retransmit> {
    let (head, body) = line.split_once(": tcp_retransmit_skb: ")?;
    let field = |k: &str| body.split(' ').find_map(|f| f.strip_prefix(k)?.strip_prefix('='));
    let v6 = field("family")? == "AF_INET6";
    let addr = |k4: &str, k6: &str| -> Option<IpAddr> {
        let a: IpAddr = field(if v6 { k6 } else { k4 })?.parse().ok()?;
        Some(a.to_canonical())
    };
    Some(Retransmit {
        t_mono_ns: line_time(head)?,
        src: SocketAddr::new(addr("saddr", "saddrv6")?, field("sport")?.parse().ok()?),
        dst: SocketAddr::new(addr("daddr", "daddrv6")?, field("dport")?.parse().ok()?),
    })
}

/// Parses a `trace_pipe` line of `tcp_probe`:
/// `iperf3-12 [001] ..s1. 345.678901: tcp_probe: family=AF_INET src=10.45.0.2:43210 dest=…`.
pub fn parse(line: &str) -> Option<TcpSample> {
    let (head, body) = line.split_once(": tcp_probe: ")?;
    let t_mono_ns = line_time(head)?;
    // One pass over the fields (some 10 k lines a second at 3 Gbit/s: a search per field was a
    // third of the reader thread's time).
    let num = |v: &str| -> Option<u32> {
        match v.strip_prefix("0x") {
            Some(h) => u32::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        }
    };
    // A dual-stack socket (an iperf3 server listens on `::`) names IPv4 peers as `::ffff:a.b.c.d`.
    let addr = |v: &str| v.parse::<SocketAddr>().ok().map(|a| SocketAddr::new(a.ip().to_canonical(), a.port()));
    let (mut src, mut dst) = (None, None);
    let mut n: [Option<u32>; 8] = [None; 8];
    for f in body.split(' ') {
        let Some((k, v)) = f.split_once('=') else { continue };
        let i = match k {
            "src" => {
                src = addr(v);
                continue;
            }
            "dest" => {
                dst = addr(v);
                continue;
            }
            "data_len" => 0,
            "snd_nxt" => 1,
            "snd_una" => 2,
            "snd_cwnd" => 3,
            "ssthresh" => 4,
            "snd_wnd" => 5,
            "srtt" => 6,
            "rcv_wnd" => 7,
            _ => continue,
        };
        n[i] = num(v);
    }
    Some(TcpSample {
        t_mono_ns,
        src: src?,
        dst: dst?,
        data_len: n[0]?,
        snd_nxt: n[1]?,
        snd_una: n[2]?,
        snd_cwnd: n[3]?,
        ssthresh: n[4]?,
        snd_wnd: n[5]?,
        srtt_us: n[6]?,
        rcv_wnd: n[7]?,
    })
}

/// Per socket, the delivery rate: bytes newly acknowledged (SND.UNA's advance) over the most
/// recent interval of at least one smoothed RTT (10 ms at least) — the kernel's rate sample
/// (delivered / interval, RFC draft-cheng-iccrg-delivery-rate-estimation) measured from outside,
/// not its own `tcpi_delivery_rate`, which the tracepoint does not carry.
#[derive(Default)]
pub struct DeliveryRates {
    seen: HashMap<(SocketAddr, SocketAddr), std::collections::VecDeque<(i64, u32)>>,
}

impl DeliveryRates {
    /// The rate in bit/s at sample `s` (`None` until the socket has been seen for one interval).
    pub fn sample(&mut self, s: &TcpSample) -> Option<f64> {
        let h = self.seen.entry((s.src, s.dst)).or_default();
        h.push_back((s.t_mono_ns, s.snd_una));
        let window = i64::from(s.srtt_us).saturating_mul(1000).max(10_000_000);
        // Keep the newest sample at least `window` old as the interval's start.
        while h.len() > 2 && h[1].0 <= s.t_mono_ns - window {
            h.pop_front();
        }
        let (t0, una0) = h[0];
        let dt = s.t_mono_ns - t0;
        (dt >= window).then(|| f64::from(s.snd_una.wrapping_sub(una0)) * 8e9 / dt as f64)
    }
}

/// A sample of an emulated socket as a `tcp_info` control row at emulator time `t` (`value`:
/// congestion window in segments; `sn`: SND.UNA; `dir`: the way the socket sends; node: where it
/// is). `None` for a socket that is not the emulation's (the tracepoint sees the whole machine).
/// `delivery_rate_bps`: from [`DeliveryRates`].
/// Where a socket with these local and remote addresses is (`ue` or `dn`), the way it sends and
/// its UE; `None` for a socket that is not the emulation's.
fn place(local: IpAddr, remote: IpAddr, ue_of: &crate::netns::UeOf) -> Option<(Node, Dir, Option<u32>)> {
    let dn = |a: IpAddr| a == IpAddr::V4(netns::DN_ADDR4) || a == IpAddr::V6(netns::DN_ADDR6);
    match (ue_of.get(&local), dn(local)) {
        (Some(&u), _) => Some((Node::Ue, Dir::Ul, Some(u))),
        (None, true) => Some((Node::Dn, Dir::Dl, ue_of.get(&remote).copied())),
        (None, false) => None,
    }
}

/// A retransmission as a `tcp_retransmit` control row at emulator time `t` (`value`: the
/// socket's retransmissions so far, this one included; `sn`: null).
pub fn retransmit_row(r: &Retransmit, t: i64, ue_of: &crate::netns::UeOf, so_far: u64) -> Option<ControlEvent> {
    let (node, dir, ue) = place(r.src.ip(), r.dst.ip(), ue_of)?;
    Some(ControlEvent {
        t_ns: t,
        node,
        layer: Layer::App,
        kind: ControlKind::TcpRetransmit,
        dir: Some(dir),
        ue,
        drb: None,
        sn: None,
        value: Some(so_far as f64),
        detail: Some(json!({"src": r.src.to_string(), "dst": r.dst.to_string()}).to_string()),
    })
}

pub fn control_row(
    s: &TcpSample,
    t: i64,
    ue_of: &crate::netns::UeOf,
    delivery_rate_bps: Option<f64>,
    retransmits: u64,
) -> Option<ControlEvent> {
    let (node, dir, ue) = place(s.src.ip(), s.dst.ip(), ue_of)?;
    Some(ControlEvent {
        t_ns: t,
        node,
        layer: Layer::App,
        kind: ControlKind::TcpInfo,
        dir: Some(dir),
        ue,
        drb: None,
        sn: Some(i64::from(s.snd_una)),
        value: Some(f64::from(s.snd_cwnd)),
        detail: Some(sample_detail(s, delivery_rate_bps, retransmits)),
    })
}

/// A sample's `detail` JSON, keys in order (as `serde_json` writes an object), written directly:
/// building a `Value` for each of 10 k rows a second was the reader thread's largest cost.
fn sample_detail(s: &TcpSample, delivery_rate_bps: Option<f64>, retransmits: u64) -> String {
    use std::fmt::Write;
    let rate = delivery_rate_bps.map_or("null".to_string(), |r| serde_json::Value::from(r.round()).to_string());
    let mut d = String::with_capacity(320);
    _ = write!(
        d,
        r#"{{"bytes_in_flight":{},"cwnd":{},"data_len":{},"delivery_rate_bps":{rate},"dst":"{}","rcv_wnd":{},"retransmits":{retransmits},"snd_nxt":{},"snd_wnd":{},"src":"{}","srtt_us":{},"ssthresh":{}}}"#,
        s.snd_nxt.wrapping_sub(s.snd_una),
        s.snd_cwnd,
        s.data_len,
        s.dst,
        s.rcv_wnd,
        s.snd_nxt,
        s.snd_wnd,
        s.src,
        s.srtt_us,
        s.ssthresh,
    );
    d
}

/// Samples of the tracepoints turned into rows, and those that were not the emulation's.
#[derive(Default)]
pub struct TcpRows {
    pub rows: u64,
    pub other: u64,
    rates: DeliveryRates,
    /// Retransmissions per socket so far, and the rows written for them.
    retransmits: HashMap<(SocketAddr, SocketAddr), u64>,
    pub retransmit_rows: u64,
}

impl TcpRows {
    /// The row of line `l` (times relative to `t0`, the emulation's start), or `None` (counted in
    /// `other`) when it is not an emulated socket's or not within `0..=until`.
    pub fn row(&mut self, l: &TcpLine, t0: i64, until: i64, ue_of: &crate::netns::UeOf) -> Option<ControlEvent> {
        let row = match l {
            TcpLine::Sample(s) => {
                let rate = self.rates.sample(s);
                let retx = self.retransmits.get(&(s.src, s.dst)).copied().unwrap_or(0);
                control_row(s, s.t_mono_ns - t0, ue_of, rate, retx)
            }
            TcpLine::Retransmit(r) => {
                let n = self.retransmits.entry((r.src, r.dst)).or_default();
                *n += 1;
                retransmit_row(r, r.t_mono_ns - t0, ue_of, *n)
            }
        };
        match row.filter(|r| (0..=until).contains(&r.t_ns)) {
            Some(row) => {
                if row.kind == ControlKind::TcpRetransmit {
                    self.retransmit_rows += 1;
                } else {
                    self.rows += 1;
                }
                Some(row)
            }
            None => {
                self.other += 1;
                None
            }
        }
    }
}

pub struct TcpProbe {
    dir: PathBuf,
    pipe: File,
    partial: Vec<u8>,
    /// Lines read and lines that were not `tcp_probe` samples.
    pub lines: u64,
    pub unparsed: u64,
}

const TRACEFS: &str = "/sys/kernel/tracing";

fn write(p: &Path, v: &str) -> io::Result<()> {
    fs::write(p, v).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
}

/// The tracefs instances of emulators that are gone (`instances/scout-<pid>` for a process that no
/// longer exists) under `instances`: a killed emulator cannot remove its own, and its tracepoints
/// stay enabled — every later TCP segment on the machine is then recorded into its ring buffer too,
/// which costs every later run (seven such instances were found on a benchmark machine).
fn stale_instances_in(instances: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(instances) else { return Vec::new() };
    let mut stale: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(netns::left_by_gone_emulator))
        .map(|e| e.path())
        .collect();
    stale.sort();
    stale
}

/// Removes the tracefs instances of emulators that are gone ([`stale_instances_in`]): their events
/// disabled, then the instance. Returns the names removed and, for each that could not be, why.
pub fn remove_stale_instances() -> (Vec<String>, Vec<String>) {
    remove_stale_instances_in(&Path::new(TRACEFS).join("instances"))
}

fn remove_stale_instances_in(instances: &Path) -> (Vec<String>, Vec<String>) {
    let (mut removed, mut problems) = (Vec::new(), Vec::new());
    for dir in stale_instances_in(instances) {
        let name = dir.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        // Removing an instance disables its events too; disabling them first stops the recording
        // even if the removal fails.
        let _ = fs::write(dir.join("events/enable"), "0");
        match fs::remove_dir(&dir) {
            Ok(()) => removed.push(name),
            Err(e) => problems.push(format!("tracefs instance {}: {e}", dir.display())),
        }
    }
    (removed, problems)
}

impl TcpProbe {
    /// Enables the tracepoint in a new tracefs instance (mounting tracefs if it is not); the
    /// reason when it cannot.
    pub fn start(pid: u32) -> io::Result<TcpProbe> {
        let root = Path::new(TRACEFS);
        if !root.join("instances").is_dir() {
            fs::create_dir_all(root)?;
            let ok = std::process::Command::new("mount")
                .args(["-t", "tracefs", "nodev", TRACEFS])
                .status()
                .is_ok_and(|s| s.success());
            if !ok || !root.join("instances").is_dir() {
                return Err(io::Error::other(format!("tracefs is not mounted at {TRACEFS} and could not be")));
            }
        }
        let dir = root.join("instances").join(format!("scout-{pid}"));
        if !dir.exists() {
            fs::create_dir(&dir).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        }
        let setup = || -> io::Result<File> {
            write(&dir.join("trace_clock"), "mono")?;
            write(&dir.join("buffer_size_kb"), "4096")?;
            write(&dir.join("events/tcp/tcp_probe/enable"), "1")?;
            write(&dir.join("events/tcp/tcp_retransmit_skb/enable"), "1")?;
            OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(dir.join("trace_pipe"))
        };
        match setup() {
            Ok(pipe) => Ok(TcpProbe { dir, pipe, partial: Vec::new(), lines: 0, unparsed: 0 }),
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                Err(e)
            }
        }
    }

    /// Hands each sample and retransmission waiting in the pipe to `f`.
    pub fn read(&mut self, mut f: impl FnMut(TcpLine)) -> io::Result<()> {
        let mut buf = [0u8; 65_536];
        loop {
            let n = match self.pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => break,
                Err(e) => return Err(e),
            };
            self.partial.extend_from_slice(&buf[..n]);
            // Every whole line, then what is left of the last is kept for the next read (one
            // shift per read, not one per line).
            let mut start = 0;
            while let Some(i) = self.partial[start..].iter().position(|&c| c == b'\n') {
                let line = std::str::from_utf8(&self.partial[start..start + i]).ok().map(str::trim_end);
                start += i + 1;
                self.lines += 1;
                match line.and_then(|l| {
                    parse(l).map(TcpLine::Sample).or_else(|| parse_retransmit(l).map(TcpLine::Retransmit))
                }) {
                    Some(l) => f(l),
                    None => self.unparsed += 1,
                }
            }
            self.partial.drain(..start);
        }
        Ok(())
    }

    /// Events the kernel's ring buffer overwrote before they were read (all CPUs).
    fn overruns(&self) -> u64 {
        let Ok(cpus) = fs::read_dir(self.dir.join("per_cpu")) else { return 0 };
        cpus.filter_map(Result::ok)
            .filter_map(|c| fs::read_to_string(c.path().join("stats")).ok())
            .filter_map(|s| s.lines().find_map(|l| l.strip_prefix("overrun: ")?.trim().parse::<u64>().ok()))
            .sum()
    }

    /// Disables the tracepoint and removes the instance; returns (lines, unparsed, overruns).
    pub fn stop(mut self, f: impl FnMut(TcpLine)) -> (u64, u64, u64) {
        let _ = write(&self.dir.join("events/tcp/tcp_probe/enable"), "0");
        let _ = write(&self.dir.join("events/tcp/tcp_retransmit_skb/enable"), "0");
        let _ = self.read(f);
        let overruns = self.overruns();
        let (dir, lines, unparsed) = (self.dir.clone(), self.lines, self.unparsed);
        drop(self);
        let _ = fs::remove_dir(&dir);
        (lines, unparsed, overruns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_probe_lines_of_both_families() {
        let v4 = "          iperf3-2351    [001] ..s1.   345.678901: tcp_probe: family=AF_INET src=10.45.0.2:43210 dest=10.45.0.1:5201 mark=0x0 data_len=0 snd_nxt=0x8d2b1c3 snd_una=0x8d2a9e3 snd_cwnd=37 ssthresh=2147483647 snd_wnd=3145728 srtt=41234 rcv_wnd=65280 sock_cookie=4 skbaddr=00000000a1b2c3d4 skaddr=00000000e5f6a7b8";
        let s = parse(v4).unwrap();
        assert_eq!(s.t_mono_ns, 345_678_901_000);
        assert_eq!(s.src, "10.45.0.2:43210".parse().unwrap());
        assert_eq!(s.dst, "10.45.0.1:5201".parse().unwrap());
        assert_eq!((s.snd_cwnd, s.ssthresh, s.srtt_us, s.snd_una), (37, 2_147_483_647, 41_234, 0x8d2a9e3));
        let v6 = "<idle>-0 [000] ..s2. 12.000001: tcp_probe: family=AF_INET6 src=[fd00:5c07::2]:40000 dest=[fd00:5c07::1]:5201 mark=0x0 data_len=1388 snd_nxt=0x1 snd_una=0x1 snd_cwnd=10 ssthresh=7 snd_wnd=64800 srtt=900 rcv_wnd=64800 sock_cookie=9";
        let s = parse(v6).unwrap();
        assert_eq!(s.src, "[fd00:5c07::2]:40000".parse().unwrap());
        assert_eq!((s.data_len, s.snd_cwnd, s.t_mono_ns), (1388, 10, 12_000_001_000));
        let mapped = v6.replace("[fd00:5c07::2]", "[::ffff:10.45.0.1]");
        assert_eq!(parse(&mapped).unwrap().src, "10.45.0.1:40000".parse().unwrap());
        assert_eq!(parse("x [000] 1.0: sched_switch: prev=a"), None);
    }

    #[test]
    fn the_instances_of_emulators_that_are_gone_are_removed_and_no_other() {
        let root = std::env::temp_dir().join(format!("scout-tracefs-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        // A process id beyond the kernel's limit (pid_max is at most 2^22) is never alive.
        let (gone, alive) = (format!("scout-{}", 1u32 << 23), format!("scout-{}", std::process::id()));
        for n in [gone.as_str(), alive.as_str(), "scout-notapid", "other-1", "scout-"] {
            fs::create_dir_all(root.join(n)).unwrap();
        }
        assert_eq!(stale_instances_in(&root), vec![root.join(&gone)]);
        let (removed, problems) = remove_stale_instances_in(&root);
        assert_eq!((removed, problems), (vec![gone.clone()], Vec::<String>::new()));
        let mut left: Vec<String> =
            fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["other-1", "scout-", alive.as_str(), "scout-notapid"]);
        // Nothing there (tracefs not mounted): nothing to do.
        assert_eq!(remove_stale_instances_in(&root.join("absent")), (Vec::new(), Vec::new()));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_line_time_has_from_no_to_nine_fraction_digits() {
        assert_eq!(line_time("x [000] ..s1. 345.678901"), Some(345_678_901_000));
        assert_eq!(line_time("x 345.5"), Some(345_500_000_000));
        assert_eq!(line_time("x 345."), Some(345_000_000_000));
        assert_eq!(line_time("x 1.1234567891"), Some(1_123_456_789));
        for bad in ["x 345", "x .5", "x 3a.5", "x 3.5a", "x 99999999999.0"] {
            assert_eq!(line_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_sample_detail_is_the_json_serde_json_writes() {
        let v6 = "<idle>-0 [000] ..s2. 12.000001: tcp_probe: family=AF_INET6 src=[fd00:5c07::2]:40000 dest=[fd00:5c07::1]:5201 mark=0x0 data_len=1388 snd_nxt=0x5 snd_una=0xfffffff0 snd_cwnd=10 ssthresh=7 snd_wnd=64800 srtt=900 rcv_wnd=64800 sock_cookie=9";
        let v4 = v6.replace("[fd00:5c07::2]", "10.45.0.2").replace("[fd00:5c07::1]", "10.45.0.1");
        for line in [v6, v4.as_str()] {
            let s = parse(line).unwrap();
            for (rate, retx) in [(None, 0), (Some(2_518_401_799.6), 3), (Some(1e21), 1), (Some(0.4), 0)] {
                let expected = json!({
                    "src": s.src.to_string(), "dst": s.dst.to_string(), "cwnd": s.snd_cwnd,
                    "ssthresh": s.ssthresh, "srtt_us": s.srtt_us, "snd_wnd": s.snd_wnd, "rcv_wnd": s.rcv_wnd,
                    "snd_nxt": s.snd_nxt, "data_len": s.data_len,
                    "bytes_in_flight": s.snd_nxt.wrapping_sub(s.snd_una),
                    "delivery_rate_bps": rate.map(f64::round), "retransmits": retx,
                })
                .to_string();
                assert_eq!(sample_detail(&s, rate, retx), expected);
            }
        }
    }

    #[test]
    fn delivery_rate_is_the_acknowledged_bytes_over_one_smoothed_rtt() {
        let mut r = DeliveryRates::default();
        let v4 = "iperf3-2351 [001] ..s1. 1.000000: tcp_probe: family=AF_INET src=10.45.0.2:43210 dest=10.45.0.1:5201 mark=0x0 data_len=0 snd_nxt=0x0 snd_una=0x0 snd_cwnd=37 ssthresh=7 snd_wnd=3145728 srtt=20000 rcv_wnd=65280 sock_cookie=4";
        let mut s = parse(v4).unwrap();
        // 12 500 bytes acknowledged every 10 ms: 10 Mbit/s, measured over the last 20 ms (srtt),
        // across SND.UNA's wrap.
        s.snd_una = u32::MAX - 30_000;
        let start = s.snd_una;
        assert_eq!(r.sample(&s), None, "no interval yet");
        for i in 1..=10u32 {
            s.t_mono_ns += 10_000_000;
            s.snd_una = start.wrapping_add(12_500 * i);
            let rate = r.sample(&s);
            if i >= 2 {
                assert!((rate.unwrap() - 10e6).abs() < 1.0, "{i}: {rate:?}");
            } else {
                assert_eq!(rate, None);
            }
        }
        let row = control_row(&s, 5, &crate::netns::UeOf::from_iter([(s.src.ip(), 0)]), Some(10e6), 2).unwrap();
        let d: serde_json::Value = serde_json::from_str(row.detail.as_deref().unwrap()).unwrap();
        assert_eq!(d["delivery_rate_bps"], serde_json::json!(10e6));
        assert_eq!(d["bytes_in_flight"], serde_json::json!(s.snd_nxt.wrapping_sub(s.snd_una)));
        assert_eq!(d["retransmits"], serde_json::json!(2));
    }

    #[test]
    fn retransmit_lines_of_both_families() {
        let v4 = "iperf3-9 [000] ..s1. 12.500000: tcp_retransmit_skb: skbaddr=0000000012 skaddr=0000000034 family=AF_INET sport=5201 dport=40000 saddr=10.45.0.1 daddr=10.45.0.2 saddrv6=::ffff:10.45.0.1 daddrv6=::ffff:10.45.0.2 state=TCP_ESTABLISHED err=0";
        let r = parse_retransmit(v4).unwrap();
        assert_eq!(
            (r.t_mono_ns, r.src, r.dst),
            (12_500_000_000, "10.45.0.1:5201".parse().unwrap(), "10.45.0.2:40000".parse().unwrap())
        );
        // A dual-stack socket reports AF_INET6 with mapped addresses: canonical IPv4.
        let mapped = v4.replace("AF_INET ", "AF_INET6 ");
        assert_eq!(parse_retransmit(&mapped).unwrap().src, "10.45.0.1:5201".parse().unwrap());
        let v6 = v4.replace("AF_INET ", "AF_INET6 ").replace("saddrv6=::ffff:10.45.0.1", "saddrv6=fd00:5c07::1");
        assert_eq!(parse_retransmit(&v6).unwrap().src, "[fd00:5c07::1]:5201".parse().unwrap());
        let ue_of = crate::netns::UeOf::from_iter([("10.45.0.2".parse().unwrap(), 0u32)]);
        let row = retransmit_row(&r, 7, &ue_of, 3).unwrap();
        assert_eq!(
            (row.kind, row.node, row.dir, row.ue, row.value),
            (ControlKind::TcpRetransmit, Node::Dn, Some(Dir::Dl), Some(0), Some(3.0))
        );
        assert_eq!(parse_retransmit("x [000] 1.0: tcp_probe: family=AF_INET"), None);
    }
}
