//! `scout-prague`: a UDP sender whose rate follows the network's congestion signals, and its
//! receiver — the emulator's application for L4S and ANBR (docs/l4s-anbr.md). The rate law is the
//! simulator's (`scout_sim::adaptive`): UDP Prague on CE marks, the ANBR recommendation, or the
//! hybrid. Real packets on real UDP sockets:
//!
//! - data (sender → receiver): sequence number and the sender's `CLOCK_MONOTONIC` send time, in
//!   packets of `--size` bytes (IP), ECN field ECT(1) (RFC 9331 §5.1);
//! - an acknowledgement per data packet (receiver → sender): the sequence number, the send time
//!   echoed and whether the packet arrived CE-marked (the receiver reads the ECN field with
//!   `IP_RECVTOS`): accurate ECN feedback, one report per packet;
//! - ANBR: the receiver listens on the emulator's ANBR port (4747) in the UE's namespace and
//!   forwards each recommendation to the sender (TS 26.114 §10.7: the UE's application tells the
//!   far end); with `--query-ms` it also asks the UE's modem for one that often (a datagram to the
//!   DN's address at port 4747, which the emulator hands to the UE's MAC as a Recommended bit rate
//!   query, TS 38.321 §5.18.10), for `--query-mbps`;
//! - `--video-fps F`: the sender is the 3GPP generic video source (TR 38.838 §5.1.1) whose encoder
//!   the rate drives (frames of truncated-Gaussian size, each paced over its interval), as in the
//!   simulator; without it, packets of `--size` paced at the rate;
//! - `--compensation retx|lowpass|all` (Copa, GCC; seed 004 §4.3, docs/ue-view.md): Gandalf on
//!   the UE's side, from the UE's live RAN feed (`$SCOUT_FEED`). Downlink: the receiver, in the
//!   UE's namespace, takes each retransmission event's T_M (or T_R) out of the one-way delays of
//!   the burst it released and acknowledges with the corrected delay; the sender uses it. Uplink:
//!   the sender, in the UE's namespace, corrects both legs itself — the data's with the UE's UL
//!   events, the acknowledgements' with its DL ones. The low-pass, at the sender, filters at the
//!   uplink buffer period the feed's cell states (forwarded in the acknowledgements for the DL).
//!   The DL acknowledgements' own leg is not corrected: the UE cannot tell when they reach the
//!   server. `--feedback-ms` adds that much wire to the feedback path, as the simulator's
//!   `feedback_ms`.
//!
//! ```text
//! scout-prague recv [--port 5300] [--seconds 12] [--query-ms 500 --query-mbps 60] [--compensation C]
//!                   [--warmup-s 2]                                                # in the UE's namespace
//! scout-prague send HOST [--port 5300] [--control prague|anbr|hybrid|constant|copa|gcc] [--max-mbps 60]
//!                        [--start-mbps 5] [--size 1400] [--video-fps 60] [--seconds 10]
//!                        [--compensation none|retx|lowpass|all] [--feedback-ms 10] [--samples FILE]   # in the DN's
//! ```
//!
//! Each side prints one JSON line when it ends: packets, bytes, the rate, CE marks, and (receiver)
//! the one-way delay (both sides read the same `CLOCK_MONOTONIC`: one machine); with
//! compensation, the samples corrected and the delay taken out. `--samples FILE` writes each delay
//! sample the sender's controller took: `t_ns,raw_ns,used_ns` (CSV, the sender's clock from its
//! start; the RTT for Copa, the one-way delay for GCC).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use scout_emu::feed_client::FeedClient;
use scout_ran::rng::Rng;
use scout_sim::adaptive::{Adaptive, Control, VideoShape};
use scout_sim::gandalf::{Lowpass, RetxCompensation, RetxEvent};
use serde_json::Value;

const DATA: u8 = 1;
const ACK: u8 = 2;
const ANBR: u8 = 3;
/// IPv4 and UDP headers: the packet's IP size less its payload.
const HEADERS: usize = 28;
/// An acknowledgement: type, sequence number, send time, CE; then when the packet was delivered,
/// the one-way delay to use (compensated when the receiver is Gandalf's side) and the uplink
/// buffer period the receiver's feed states (0: none).
const ACK_LEN: usize = 42;
/// How late after the model delivered a packet this application may read it (the device write,
/// the socket): Gandalf's bursts are matched to the events' ends with this much slack.
const READ_LATE_NS: i64 = 2_000_000;

/// Gandalf's compensations (seed 004 §4.3).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Compensation {
    None,
    Retx,
    Lowpass,
    All,
}

impl Compensation {
    fn retx(self) -> bool {
        matches!(self, Compensation::Retx | Compensation::All)
    }
    fn lowpass(self) -> bool {
        matches!(self, Compensation::Lowpass | Compensation::All)
    }
}

/// The UE's feed, when this end runs in a UE's namespace and compensates.
fn subscribe(c: Compensation, path: &Option<PathBuf>) -> std::io::Result<Option<FeedClient>> {
    match path.clone().or_else(FeedClient::from_env) {
        Some(p) if c != Compensation::None => FeedClient::connect(&p, Duration::from_secs(5)).map(Some),
        _ => Ok(None),
    }
}

/// A retransmission event of direction `dir` (`"dl"`, `"ul"`) from the feed, on
/// `CLOCK_MONOTONIC` less `t0`.
fn retx_event(feed: &FeedClient, ev: &Value, dir: &str, t0: i64) -> Option<RetxEvent> {
    if ev["kind"] != "retx_event" || ev["dir"] != dir {
        return None;
    }
    Some(RetxEvent { end: feed.monotonic(ev)? - t0, delay: ev["value"].as_f64()? as i64 })
}

fn now_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn setsockopt_int(sock: &UdpSocket, level: i32, name: i32, value: i32) -> std::io::Result<()> {
    // SAFETY: a valid socket and a pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Receives one datagram with its ECN field (IPv4 `IP_TOS` ancillary data).
fn recv_with_ecn(sock: &UdpSocket, buf: &mut [u8]) -> std::io::Result<(usize, SocketAddr, u8)> {
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut cmsg = [0u8; 64];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: msghdr points at live buffers of the lengths given.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut addr as *mut libc::sockaddr_in).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.as_mut_ptr().cast();
    msg.msg_controllen = cmsg.len() as _;
    // SAFETY: as above.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut tos = 0u8;
    // SAFETY: walking the control messages the kernel wrote into `cmsg`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TOS {
                tos = *libc::CMSG_DATA(c);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let ip = std::net::Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr));
    Ok((n as usize, SocketAddr::from((ip, u16::from_be(addr.sin_port))), tos & 3))
}

struct Args {
    mode: String,
    host: Option<String>,
    port: u16,
    control: Control,
    max_mbps: f64,
    start_mbps: f64,
    size: usize,
    seconds: f64,
    video_fps: Option<f64>,
    query_ms: Option<f64>,
    query_mbps: f64,
    compensation: Compensation,
    feedback_ms: f64,
    warmup_s: f64,
    feed: Option<PathBuf>,
    samples: Option<PathBuf>,
}

fn usage(why: &str) -> ! {
    eprintln!(
        "scout-prague: {why}\nusage: scout-prague recv [--port P] [--seconds S] [--query-ms MS --query-mbps M] \
         [--compensation none|retx|lowpass|all] [--warmup-s S] [--feed SOCKET]\n       \
         scout-prague send HOST [--port P] [--control prague|anbr|hybrid|constant|copa|gcc] [--max-mbps M] [--start-mbps M] \
         [--size BYTES] [--video-fps F] [--seconds S] [--compensation none|retx|lowpass|all] [--feedback-ms MS] \
         [--feed SOCKET] [--samples FILE]"
    );
    std::process::exit(2)
}

fn parse() -> Args {
    let mut it = std::env::args().skip(1);
    let mode = it.next().unwrap_or_else(|| usage("give recv or send"));
    if mode != "recv" && mode != "send" {
        usage(&format!("{mode}: accepted: recv, send"));
    }
    let mut a = Args {
        mode,
        host: None,
        port: 5300,
        control: Control::Prague,
        max_mbps: 60.0,
        start_mbps: 5.0,
        size: 1400,
        seconds: 10.0,
        video_fps: None,
        query_ms: None,
        query_mbps: 60.0,
        compensation: Compensation::None,
        feedback_ms: 0.0,
        warmup_s: 0.0,
        feed: None,
        samples: None,
    };
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| usage(&format!("{k} needs a value")));
        let num = |s: String, lo: f64, hi: f64| -> f64 {
            match s.parse::<f64>() {
                Ok(x) if (lo..=hi).contains(&x) => x,
                _ => usage(&format!("{k} {s}: accepted: {lo} to {hi}")),
            }
        };
        match k.as_str() {
            "--port" => a.port = num(v(), 1.0, 65535.0) as u16,
            "--control" => {
                a.control = match v().as_str() {
                    "prague" => Control::Prague,
                    "anbr" => Control::Anbr,
                    "hybrid" => Control::Hybrid,
                    "constant" => Control::Constant,
                    "copa" => Control::Copa,
                    "gcc" => Control::Gcc,
                    o => usage(&format!("--control {o}: accepted: prague, anbr, hybrid, constant, copa, gcc")),
                }
            }
            "--max-mbps" => a.max_mbps = num(v(), 0.01, 100_000.0),
            "--start-mbps" => a.start_mbps = num(v(), 0.01, 100_000.0),
            "--size" => a.size = num(v(), 64.0, 1472.0) as usize,
            "--seconds" => a.seconds = num(v(), 0.1, 86_400.0),
            "--video-fps" => a.video_fps = Some(num(v(), 1.0, 1000.0)),
            "--query-ms" => a.query_ms = Some(num(v(), 1.0, 100_000.0)),
            "--query-mbps" => a.query_mbps = num(v(), 0.01, 100_000.0),
            "--compensation" => {
                a.compensation = match v().as_str() {
                    "none" => Compensation::None,
                    "retx" => Compensation::Retx,
                    "lowpass" => Compensation::Lowpass,
                    "all" => Compensation::All,
                    o => usage(&format!("--compensation {o}: accepted: none, retx, lowpass, all")),
                }
            }
            "--feedback-ms" => a.feedback_ms = num(v(), 0.0, 10_000.0),
            "--warmup-s" => a.warmup_s = num(v(), 0.0, 86_400.0),
            "--feed" => a.feed = Some(PathBuf::from(v())),
            "--samples" => a.samples = Some(PathBuf::from(v())),
            h if a.host.is_none() && !h.starts_with('-') => a.host = Some(h.to_string()),
            o => usage(&format!("{o}: unknown argument")),
        }
    }
    a
}

fn main() {
    let a = parse();
    let r = if a.mode == "recv" { receive(&a) } else { send(&a) };
    if let Err(e) = r {
        eprintln!("scout-prague: {e}");
        std::process::exit(1);
    }
}

fn receive(a: &Args) -> std::io::Result<()> {
    let sock = UdpSocket::bind(("0.0.0.0", a.port))?;
    setsockopt_int(&sock, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let anbr = UdpSocket::bind(("0.0.0.0", scout_emu::packet::ANBR_PORT)).ok();
    if let Some(s) = &anbr {
        s.set_nonblocking(true)?;
    }
    // In the UE's namespace (a downlink), Gandalf's retransmission compensation happens here:
    // the feed's DL events, on this machine's one clock.
    let mut feed = subscribe(a.compensation, &a.feed)?;
    let mut comp = (a.compensation.retx() && feed.is_some()).then(|| RetxCompensation::reading_late(READ_LATE_NS));
    let period = feed.as_ref().and_then(|f| f.cell["ul_buffer_period_ns"].as_i64()).unwrap_or(0);
    let (mut pkts, mut bytes, mut ce, mut delay_sum, mut used_sum, mut recs) = (0u64, 0u64, 0u64, 0i64, 0i64, 0u64);
    let (mut first, mut last, mut first_sent) = (None, 0i64, None);
    let mut sender: Option<SocketAddr> = None;
    let end = now_ns() + (a.seconds * 1e9) as i64;
    let warmup = (a.warmup_s * 1e9) as i64;
    let mut buf = vec![0u8; 2048];
    let modem: SocketAddr = (scout_emu::netns::DN_ADDR4, scout_emu::packet::ANBR_PORT).into();
    let query = serde_json::json!({"bit_rate_bps": (a.query_mbps * 1e6) as u64, "drb": 1}).to_string();
    let (mut next_query, mut queries, mut retx_events) = (now_ns(), 0u64, 0u64);
    while now_ns() < end {
        if let (Some(every), Some(s)) = (a.query_ms, &anbr) {
            if now_ns() >= next_query {
                s.send_to(query.as_bytes(), modem)?;
                queries += 1;
                next_query += (every * 1e6) as i64;
            }
        }
        if let (Some(s), Some(to)) = (&anbr, sender) {
            while let Ok(n) = s.recv(&mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]);
                if let Some(bps) =
                    serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v["bit_rate_bps"].as_u64())
                {
                    let mut m = vec![ANBR];
                    m.extend_from_slice(&bps.to_be_bytes());
                    sock.send_to(&m, to)?;
                    recs += 1;
                }
            }
        }
        let got = recv_with_ecn(&sock, &mut buf);
        let t = now_ns();
        // The feed after the packet: the emulator wrote the events that released it first.
        if let Some(f) = &mut feed {
            for ev in f.poll()? {
                if let Some(e) = retx_event(f, &ev, "dl", 0) {
                    retx_events += 1;
                    if let Some(c) = &mut comp {
                        c.event(e);
                    }
                }
            }
        }
        let (n, from, ecn) = match got {
            Ok(x) => x,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) => return Err(e),
        };
        if n < 17 || buf[0] != DATA {
            continue;
        }
        sender = Some(from);
        let sent = i64::from_be_bytes(buf[9..17].try_into().expect("8 bytes"));
        let raw = t - sent;
        let used = comp.as_mut().map_or(raw, |c| c.sample(t, raw));
        let mut ack = Vec::with_capacity(ACK_LEN);
        ack.push(ACK);
        ack.extend_from_slice(&buf[1..17]);
        ack.push(u8::from(ecn == 3));
        ack.extend_from_slice(&t.to_be_bytes());
        ack.extend_from_slice(&used.to_be_bytes());
        ack.extend_from_slice(&period.to_be_bytes());
        sock.send_to(&ack, from)?;
        // The figures count the packets sent after the warm-up (from the first packet's sending).
        if sent < *first_sent.get_or_insert(sent) + warmup {
            continue;
        }
        pkts += 1;
        bytes += (n + HEADERS) as u64;
        ce += u64::from(ecn == 3);
        delay_sum += raw;
        used_sum += used;
        first.get_or_insert(t);
        last = t;
    }
    let secs = first.map_or(0.0, |f| (last - f) as f64 / 1e9);
    let mean_ms = |sum: i64| if pkts > 0 { sum as f64 / pkts as f64 / 1e6 } else { 0.0 };
    let mut line = serde_json::json!({
        "role": "receiver", "packets": pkts, "bytes": bytes, "ce": ce, "anbr_forwarded": recs, "queries": queries,
        "mbps": if secs > 0.0 { bytes as f64 * 8.0 / secs / 1e6 } else { 0.0 },
        "mean_delay_ms": mean_ms(delay_sum), "warmup_s": a.warmup_s,
    });
    if let Some(f) = &feed {
        line["feed"] = serde_json::json!({
            "events": f.events, "missed": f.missed, "retx_events": retx_events,
            "ul_buffer_period_ms": period as f64 / 1e6,
        });
    }
    if let Some(c) = &comp {
        line["compensation"] = serde_json::json!({
            "corrected": c.corrected, "removed_ms": c.removed_ns as f64 / 1e6, "mean_used_delay_ms": mean_ms(used_sum),
        });
    }
    println!("{line}");
    Ok(())
}

/// What the sender counted, for its summary line.
#[derive(Default)]
struct Sent {
    packets: u64,
    bytes: u64,
    acks: u64,
    ce: u64,
    anbr: u64,
    retx_events: u64,
}

fn send(a: &Args) -> std::io::Result<()> {
    let host = a.host.clone().unwrap_or_else(|| usage("send needs the receiver's HOST"));
    let to: SocketAddr =
        format!("{host}:{}", a.port).parse().unwrap_or_else(|_| usage(&format!("{host}: not an IPv4 address")));
    let sock = UdpSocket::bind(("0.0.0.0", 0))?;
    setsockopt_int(&sock, libc::IPPROTO_IP, libc::IP_TOS, 1)?; // ECT(1)
    sock.set_nonblocking(true)?;
    // In the UE's namespace (an uplink), Gandalf works here on both legs.
    let mut feed = subscribe(a.compensation, &a.feed)?;
    let t0 = now_ns();
    let (mut ad, mut period) = controller(a, feed.as_ref());
    let mut rng = Rng::new(1, "scout-prague.video");
    let end = (a.seconds * 1e9) as i64;
    let mut payload = vec![0u8; a.size - HEADERS];
    payload[0] = DATA;
    let mut sent = Sent::default();
    let mut samples = Vec::new();
    let (mut next, mut size) = ad.next_packet(&mut rng);
    loop {
        // The feed before the acknowledgements: the events that released them are there.
        if let Some(f) = &mut feed {
            for ev in f.poll()? {
                for (dir, on_data_path) in [("ul", true), ("dl", false)] {
                    if let Some(e) = retx_event(f, &ev, dir, t0) {
                        sent.retx_events += 1;
                        ad.retx_event(on_data_path, e.end, e.delay);
                    }
                }
            }
        }
        let now = now_ns() - t0;
        replies(&sock, a, feed.is_some(), (t0, now), &mut ad, &mut period, &mut sent);
        if let Some(v) = &mut ad.samples {
            samples.append(v);
        }
        if now >= end {
            break;
        }
        if now >= next {
            payload[1..9].copy_from_slice(&sent.packets.to_be_bytes());
            payload[9..17].copy_from_slice(&(now + t0).to_be_bytes());
            let len = (size as usize).saturating_sub(HEADERS).max(17);
            match sock.send_to(&payload[..len], to) {
                Ok(_) => {
                    sent.packets += 1;
                    sent.bytes += (len + HEADERS) as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            (next, size) = ad.next_packet(&mut rng);
            continue;
        }
        std::thread::sleep(Duration::from_nanos((next - now).clamp(0, 1_000_000) as u64));
    }
    if let Some(path) = &a.samples {
        let mut text = String::from("t_ns,raw_ns,used_ns\n");
        for (t, raw, used) in &samples {
            text.push_str(&format!("{t},{raw},{used}\n"));
        }
        std::fs::write(path, text).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    }
    println!("{}", sender_summary(a, &ad, &sent, &samples, period, feed.as_ref()));
    Ok(())
}

/// The sender's controller as the arguments configure it, and the UE's uplink buffer period
/// (from the feed; 0 when unknown) its low-pass filter uses.
fn controller(a: &Args, feed: Option<&FeedClient>) -> (Adaptive, i64) {
    let feedback_ns = (a.feedback_ms * 1e6) as i64;
    let mut ad =
        Adaptive::new(a.control, a.size as u32, a.start_mbps * 1e6, a.max_mbps * 1e6, feedback_ns, 0).recording();
    if let Some(fps) = a.video_fps {
        ad = ad.with_video(VideoShape { fps, size_std_frac: 0.105 });
    }
    if feed.is_some() && a.compensation.retx() {
        ad.compensation = Some(RetxCompensation::reading_late(READ_LATE_NS));
        ad.ack_compensation = Some(RetxCompensation::reading_late(READ_LATE_NS));
    }
    let period = feed.and_then(|f| f.cell["ul_buffer_period_ns"].as_i64()).unwrap_or(0);
    if a.compensation.lowpass() && period > 0 {
        ad.lowpass = Some(Lowpass::new(period));
    }
    (ad, period)
}

/// Reads every waiting reply (acknowledgements, bare delay reports, ANBR recommendations) into the
/// controller. `(t0, now)`: the sender's epoch and the time since it.
fn replies(
    sock: &UdpSocket,
    a: &Args,
    has_feed: bool,
    (t0, now): (i64, i64),
    ad: &mut Adaptive,
    period: &mut i64,
    sent: &mut Sent,
) {
    let mut buf = [0u8; 64];
    while let Ok(n) = sock.recv(&mut buf) {
        match buf[0] {
            ACK if n >= ACK_LEN => {
                let field = |i: usize| i64::from_be_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
                let (at, marked, delivered, used, p) =
                    (field(9) - t0, buf[17] == 1, field(18) - t0, field(26), field(34));
                if a.compensation.lowpass() && ad.lowpass.is_none() && p > 0 {
                    *period = p;
                    ad.lowpass = Some(Lowpass::new(p));
                }
                // The data's one-way delay: corrected here with this UE's feed, else as the
                // receiver reported it (corrected there when it is the UE).
                let data = if has_feed { ad.received(at, delivered) } else { used };
                ad.acked(at, data, delivered, now, marked);
                sent.acks += 1;
                sent.ce += u64::from(marked);
            }
            ACK if n >= 18 => {
                let at = i64::from_be_bytes(buf[9..17].try_into().expect("8 bytes"));
                let marked = buf[17] == 1;
                ad.report(now, now - (at - t0), marked);
                sent.acks += 1;
                sent.ce += u64::from(marked);
            }
            ANBR if n >= 9 => {
                ad.recommendation_at(now, u64::from_be_bytes(buf[1..9].try_into().expect("8 bytes")) as f64);
                sent.anbr += 1;
            }
            _ => {}
        }
    }
}

/// The sender's summary line (one JSON object).
fn sender_summary(
    a: &Args,
    ad: &Adaptive,
    sent: &Sent,
    samples: &[(i64, i64, i64)],
    period: i64,
    feed: Option<&FeedClient>,
) -> Value {
    let mean = |f: fn(&(i64, i64, i64)) -> i64| {
        if samples.is_empty() {
            0.0
        } else {
            samples.iter().map(f).sum::<i64>() as f64 / samples.len() as f64 / 1e6
        }
    };
    let mut line = serde_json::json!({
        "role": "sender", "packets": sent.packets, "bytes": sent.bytes, "acks": sent.acks, "ce": sent.ce,
        "anbr": sent.anbr, "mbps": sent.bytes as f64 * 8.0 / a.seconds / 1e6, "final_rate_mbps": ad.rate_bps / 1e6,
        "alpha": ad.alpha, "srtt_ms": ad.srtt_ns / 1e6,
    });
    if !samples.is_empty() {
        line["samples"] = serde_json::json!({
            "n": samples.len(), "signal": ad.signal(), "mean_raw_ms": mean(|s| s.1), "mean_used_ms": mean(|s| s.2),
        });
    }
    if a.compensation != Compensation::None {
        let c = |c: &Option<RetxCompensation>| {
            c.as_ref().map(|c| serde_json::json!({"corrected": c.corrected, "removed_ms": c.removed_ns as f64 / 1e6}))
        };
        line["compensation"] = serde_json::json!({
            "data_path": c(&ad.compensation), "ack_path": c(&ad.ack_compensation),
            "lowpass_period_ms": if ad.lowpass.is_some() { period as f64 / 1e6 } else { 0.0 },
            "feed": feed.map(|f| serde_json::json!({"events": f.events, "missed": f.missed, "retx_events": sent.retx_events})),
        });
    }
    line
}
