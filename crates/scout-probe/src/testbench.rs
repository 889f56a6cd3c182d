//! A test bench for the probe: network namespaces `gnb`, `upf` and `dn` joined by veth links, a
//! GTP-U sender in `gnb`, and in `upf` a small user-space GTP-U forwarder that decapsulates each
//! G-PDU and sends its inner packet on to N6 after a service time, one packet at a time (so a
//! queue grows whenever packets come faster than it serves them). The forwarder records, per
//! packet, the kernel's receive timestamp of the G-PDU (`SO_TIMESTAMPNS`, taken right before TC
//! ingress with [`LateRxTimestamps`]) and the kernel's transmit timestamp of the inner packet
//! (`SOF_TIMESTAMPING_TX_SOFTWARE`, in the driver right after TC egress): its own forwarding
//! delay, measured where the kernel hands packets to and from the interfaces, to check the
//! probe's against.
//!
//! ```text
//!  gnb: g0 10.77.3.1 ── n3 10.77.3.2 :upf: n6 10.77.6.2 ── d0 10.77.6.1 :dn (10.77.9.9)
//!       s0 10.77.4.1 ── n4 10.77.4.2 (PFCP)
//! ```

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::InNetns;

/// Namespace names (prefixed so that parallel benches do not collide).
#[derive(Clone, Debug)]
pub struct Bench {
    pub gnb: String,
    pub upf: String,
    pub dn: String,
}

pub const N3_UPF: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 2);
pub const UE: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);
pub const SERVER: Ipv4Addr = Ipv4Addr::new(10, 77, 9, 9);

fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

impl Bench {
    /// Creates the namespaces and links (removing leftovers of an earlier run with this prefix).
    pub fn create(prefix: &str) -> io::Result<Bench> {
        let b = Bench { gnb: format!("{prefix}-gnb"), upf: format!("{prefix}-upf"), dn: format!("{prefix}-dn") };
        b.remove();
        for ns in [&b.gnb, &b.upf, &b.dn] {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            // No IPv6 on the bench's links: their router solicitations and MLD reports would be
            // sightings the tests did not send. (Per namespace: /proc/sys/net is the opener's.)
            let _ns = InNetns::enter(Some(ns)).map_err(|e| io::Error::other(e.to_string()))?;
            for conf in ["all", "default"] {
                match std::fs::write(format!("/proc/sys/net/ipv6/conf/{conf}/disable_ipv6"), "1") {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e), // NotFound: no IPv6 at all
                    _ => {}
                }
            }
        }
        ip(&["link", "add", "g0", "netns", &b.gnb, "type", "veth", "peer", "name", "n3", "netns", &b.upf])?;
        ip(&["link", "add", "n6", "netns", &b.upf, "type", "veth", "peer", "name", "d0", "netns", &b.dn])?;
        // N4 on its own link (a capture tap on N3 or N6 would sit between the kernel's timestamps
        // and the TC hooks and slow the path the probe measures).
        ip(&["link", "add", "s0", "netns", &b.gnb, "type", "veth", "peer", "name", "n4", "netns", &b.upf])?;
        for (ns, dev, addr) in [
            (&b.gnb, "g0", "10.77.3.1/24"),
            (&b.upf, "n3", "10.77.3.2/24"),
            (&b.upf, "n6", "10.77.6.2/24"),
            (&b.dn, "d0", "10.77.6.1/24"),
            (&b.gnb, "s0", "10.77.4.1/24"),
            (&b.upf, "n4", "10.77.4.2/24"),
        ] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        ip(&["-n", &b.dn, "addr", "add", "10.77.9.9/32", "dev", "lo"])?;
        // Permanent neighbours: no ARP resolution holding the first packets.
        for (ns, dev, peer_ns, peer_dev, peer_addr) in [
            (&b.upf, "n6", &b.dn, "d0", "10.77.6.1"),
            (&b.gnb, "g0", &b.upf, "n3", "10.77.3.2"),
            (&b.upf, "n3", &b.gnb, "g0", "10.77.3.1"),
        ] {
            let mac = mac_of(peer_ns, peer_dev)?;
            ip(&["-n", ns, "neigh", "replace", peer_addr, "lladdr", &mac, "dev", dev, "nud", "permanent"])?;
        }
        ip(&["-n", &b.upf, "route", "add", "10.77.9.0/24", "via", "10.77.6.1"])?;
        Ok(b)
    }

    /// The bench's UPF as the probe sees it: N3 and N6 in the `upf` namespace.
    pub fn upf_sides(&self, slice: &str) -> crate::Upf {
        let side = |iface: &str| crate::Side { netns: Some(self.upf.clone()), iface: iface.into() };
        crate::Upf { n3: side("n3"), n6: side("n6"), slice: slice.into() }
    }

    pub fn remove(&self) {
        for ns in [&self.gnb, &self.upf, &self.dn] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// An interface's MAC address (from `ip -n NS -o link show DEV`).
fn mac_of(ns: &str, dev: &str) -> io::Result<String> {
    let out = Command::new("ip").args(["-n", ns, "-o", "link", "show", dev]).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .skip_while(|w| *w != "link/ether")
        .nth(1)
        .map(str::to_string)
        .ok_or_else(|| io::Error::other(format!("no MAC for {ns}:{dev}")))
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The forwarder's record of one packet: GTP-U sequence number, receive and send times
/// (CLOCK_REALTIME, ns).
#[derive(Clone, Copy, Debug)]
pub struct Forwarded {
    pub seq: u16,
    pub rx_ns: i64,
    pub tx_ns: i64,
}

/// Pins the calling thread to one CPU (when there are several), so that the bench's two busy
/// threads do not migrate.
pub fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t with one bit set, for the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % std::thread::available_parallelism().map_or(1, |n| n.get()), &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn real_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Runs the forwarder in the `upf` namespace until `stop`: G-PDUs in on UDP 2152, inner packets
/// out through a raw socket, each after `service(i)` ns of work that starts when it arrives or
/// when the previous one is done, whichever is later. Returns its records.
pub fn forwarder(
    bench: &Bench,
    stop: &AtomicBool,
    ready: mpsc::Sender<()>,
    service: impl Fn(u32) -> i64,
) -> io::Result<Vec<Forwarded>> {
    let _ns = InNetns::enter(Some(&bench.upf)).map_err(|e| io::Error::other(e.to_string()))?;
    pin(1);
    let sock = UdpSocket::bind(SocketAddrV4::new(N3_UPF, 2152))?;
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with a valid int; socket(2) of a raw IP socket (the packet includes its
    // IP header: IPPROTO_RAW implies IP_HDRINCL).
    let raw = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&one as *const libc::c_int).cast(),
            4,
        );
        // Room for the queue (root may exceed net.core.rmem_max).
        let rcvbuf: libc::c_int = 64 << 20;
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&rcvbuf as *const libc::c_int).cast(),
            4,
        );
        libc::socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW)
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // The departure time is the kernel's transmit timestamp, taken in the driver right after TC
    // egress (SOF_TIMESTAMPING_TX_SOFTWARE), read back from the socket's error queue.
    let flags: libc::c_uint = libc::SOF_TIMESTAMPING_TX_SOFTWARE
        | libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    // SAFETY: setsockopt with a valid unsigned int.
    if unsafe {
        libc::setsockopt(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPING, (&flags as *const libc::c_uint).cast(), 4)
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    let _ = ready.send(());
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    let mut free_at = 0i64;
    let mut i = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let Some((n, rx_ns)) = crate::recv_timestamped(sock.as_raw_fd(), &mut buf, 0, libc::SO_TIMESTAMPNS) else {
            continue;
        };
        let rx_ns = rx_ns.unwrap_or(0);
        let g = &buf[..n];
        let Ok(gt) = scout_wire::gtpu::decode(g) else { continue };
        if gt.msg_type != 255 || gt.payload.len() < 20 {
            continue;
        }
        let inner = gt.payload;
        // Service: FIFO, one at a time.
        let start = rx_ns.max(free_at);
        let done = start + service(i);
        while real_ns() < done {
            std::hint::spin_loop();
        }
        let dst = [inner[16], inner[17], inner[18], inner[19]];
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(dst) },
            sin_zero: [0; 8],
        };
        // SAFETY: sendto on the raw socket with a valid buffer and address.
        unsafe {
            libc::sendto(
                raw,
                inner.as_ptr().cast(),
                inner.len(),
                0,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as u32,
            );
        }
        let tx_ns = tx_timestamp(raw).unwrap_or_else(real_ns);
        free_at = real_ns();
        out.push(Forwarded { seq: gt.seq.unwrap_or(0), rx_ns, tx_ns });
        i += 1;
    }
    // SAFETY: closing our raw socket.
    unsafe { libc::close(raw) };
    Ok(out)
}

/// The software transmit timestamp of the packet just sent on `fd` (waits up to 10 ms for it).
fn tx_timestamp(fd: libc::c_int) -> Option<i64> {
    let mut data = [0u8; 64];
    for _ in 0..1000 {
        match crate::recv_timestamped(fd, &mut data, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT, libc::SO_TIMESTAMPING) {
            Some((_, Some(t))) => return Some(t),
            Some((_, None)) => {}
            None => std::thread::sleep(Duration::from_micros(10)),
        }
    }
    None
}

/// Takes receive timestamps where the packet is handed to the protocol stack, right before TC
/// ingress, instead of when it is queued to the backlog (`net.core.netdev_tstamp_prequeue = 0`),
/// until dropped (then the previous value is put back).
pub struct LateRxTimestamps(Option<String>);

impl LateRxTimestamps {
    pub fn set() -> LateRxTimestamps {
        let p = "/proc/sys/net/core/netdev_tstamp_prequeue";
        let old = std::fs::read_to_string(p).ok();
        let _ = std::fs::write(p, "0");
        LateRxTimestamps(old)
    }
}

impl Drop for LateRxTimestamps {
    fn drop(&mut self) {
        if let Some(v) = &self.0 {
            let _ = std::fs::write("/proc/sys/net/core/netdev_tstamp_prequeue", v.trim());
        }
    }
}

/// A G-PDU from the UE to the server: GTP-U with a sequence number and a PDU Session Container
/// (UL, QFI 9) around an IPv4/UDP packet whose IP identification is `i`.
pub fn gpdu(i: u16, teid: u32, payload_len: usize) -> Vec<u8> {
    let total = 28 + payload_len;
    let mut p = vec![0x45, 0, (total >> 8) as u8, total as u8, (i >> 8) as u8, i as u8, 0x40, 0, 64, 17, 0, 0];
    p.extend_from_slice(&UE.octets());
    p.extend_from_slice(&SERVER.octets());
    let mut s = 0u32;
    for c in p.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    let c = !(s as u16);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&5000u16.to_be_bytes());
    p.extend_from_slice(&6000u16.to_be_bytes());
    p.extend_from_slice(&((8 + payload_len) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend((0..payload_len).map(|k| (k as u8) ^ (i as u8)));
    let len = 8 + p.len();
    let mut g = vec![0x36, 0xff, (len >> 8) as u8, len as u8];
    g.extend_from_slice(&teid.to_be_bytes());
    g.extend_from_slice(&i.to_be_bytes());
    g.extend_from_slice(&[0, 0x85, 1, 0x10, 9, 0]);
    g.extend_from_slice(&p);
    g
}

/// Sends G-PDUs with sequence numbers `seqs` from the `gnb` namespace, one every `gap_ns` (paced
/// by spinning).
pub fn send(bench: &Bench, seqs: std::ops::Range<u16>, gap_ns: i64) -> io::Result<()> {
    let _ns = InNetns::enter(Some(&bench.gnb)).map_err(|e| io::Error::other(e.to_string()))?;
    pin(0);
    let sock = UdpSocket::bind("10.77.3.1:2152")?;
    let to = SocketAddrV4::new(N3_UPF, 2152);
    let t0 = real_ns();
    for (k, i) in seqs.enumerate() {
        let at = t0 + k as i64 * gap_ns;
        while real_ns() < at {
            std::hint::spin_loop();
        }
        sock.send_to(&gpdu(i, 0x1234, 200), to)?;
    }
    Ok(())
}

/// A TC program that drops every packet (`bpf/test_drop.bpf.c`): the tests attach it beside the
/// probe to check the order the probe attaches in.
#[cfg(probe_object)]
pub static DROP_OBJECT: Option<&[u8]> = Some(aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/test_drop.bpf.o")));
#[cfg(not(probe_object))]
pub static DROP_OBJECT: Option<&[u8]> = None;

/// Whether this process can run the bench: root, `ip`, the probe object.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, TC-BPF)".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("needs iproute2 (`ip`)".into());
    }
    if crate::OBJECT.is_none() {
        return Some("this build has no probe object (clang was missing at build time)".into());
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("the kernel has no BTF (/sys/kernel/btf/vmlinux)".into());
    }
    None
}

/// An Ethernet frame to `dst_mac` carrying `ip`.
pub fn ether(dst_mac: [u8; 6], ip: &[u8]) -> Vec<u8> {
    let mut f = dst_mac.to_vec();
    f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    f.extend_from_slice(ip);
    f
}

/// Packet `i` as the UPF's two sides see it: its G-PDU ([`gpdu`]) in an Ethernet frame to `n3_mac`,
/// and its inner IP packet in one to `n6_mac`.
pub fn both_sides(i: u16, teid: u32, payload_len: usize, n3_mac: [u8; 6], n6_mac: [u8; 6]) -> (Vec<u8>, Vec<u8>) {
    let g = gpdu(i, teid, payload_len);
    (ether(n3_mac, &outer(&g)), ether(n6_mac, &g[16..]))
}

/// The outer IPv4/UDP packet around a G-PDU, from the gNB to the UPF's N3 address.
pub fn outer(gtp: &[u8]) -> Vec<u8> {
    let total = 28 + gtp.len();
    let mut p = vec![0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, 17, 0, 0];
    p.extend_from_slice(&[10, 77, 3, 1]);
    p.extend_from_slice(&N3_UPF.octets());
    p.extend_from_slice(&2152u16.to_be_bytes());
    p.extend_from_slice(&2152u16.to_be_bytes());
    p.extend_from_slice(&((8 + gtp.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(gtp);
    p
}

/// The MAC address of `dev` in namespace `ns`, as bytes.
pub fn mac_bytes(ns: &str, dev: &str) -> io::Result<[u8; 6]> {
    let s = mac_of(ns, dev)?;
    let mut m = [0u8; 6];
    for (i, h) in s.split(':').enumerate().take(6) {
        m[i] = u8::from_str_radix(h, 16).map_err(io::Error::other)?;
    }
    Ok(m)
}

/// How [`inject`] keeps pace with another injector (the default: it does not).
#[derive(Clone, Copy, Default)]
pub struct Pace<'a> {
    /// Where it publishes how many frames per target it has sent.
    pub sent: Option<&'a AtomicU64>,
    /// It sends no more frames per target than another has published here, plus a margin.
    pub after: Option<(&'a AtomicU64, u64)>,
}

/// Where [`inject`] sends: an interface in a namespace and the frames it cycles through.
pub struct Target<'a> {
    pub netns: &'a str,
    pub dev: &'a str,
    pub frames: &'a [Vec<u8>],
}

/// Injects each target's `frames` (cycling, in step: the k-th frame of every target in one batch)
/// with AF_PACKET sockets, in batches of up to 64 per target with sendmmsg, at up to `rate` frames
/// per second on each target, for `duration`, from one thread pinned to `cpu`; returns the frames
/// sent per target. The frames bypass the sender's qdisc and arrive at the veth peer's TC ingress,
/// processed on the sending CPU.
///
/// `pace`: frames the injector has sent per target are published in `pace.sent`, and it sends
/// no more than `pace.after` says another has sent, plus its margin. Two injectors joined so — one
/// sending a packet at N3, the other the same packet at N6 after it (margin 0), each on its own
/// CPU, the first at most its margin ahead — see each packet leave after it arrived, through a
/// bounded queue, as through a UPF whose sending thread runs on another CPU than its receiving
/// one.
pub fn inject(
    targets: &[Target<'_>],
    cpu: usize,
    rate: f64,
    duration: Duration,
    pace: Pace<'_>,
) -> io::Result<Vec<u64>> {
    pin(cpu);
    let mut fds = Vec::new();
    let close = |fds: &[libc::c_int]| {
        for &fd in fds {
            // SAFETY: closing our own sockets.
            unsafe { libc::close(fd) };
        }
    };
    for t in targets {
        // The socket belongs to the namespace it is created in.
        let _ns = InNetns::enter(Some(t.netns)).map_err(|e| io::Error::other(e.to_string()))?;
        // SAFETY: an AF_PACKET raw socket bound to the interface.
        let fd = unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            if fd < 0 {
                let e = io::Error::last_os_error();
                close(&fds);
                return Err(e);
            }
            fds.push(fd);
            let one: libc::c_int = 1;
            libc::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, (&one as *const libc::c_int).cast(), 4);
            let name = std::ffi::CString::new(t.dev).map_err(io::Error::other)?;
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
            sll.sll_protocol = 0x0800u16.to_be();
            if libc::bind(
                fd,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) != 0
            {
                let e = io::Error::last_os_error();
                close(&fds);
                return Err(e);
            }
            fd
        };
        let _ = fd;
    }
    let t0 = real_ns();
    let end = t0 + duration.as_nanos() as i64;
    let mut sent = vec![0u64; targets.len()];
    let mut done = 0u64; // batches' frames per target
    let mut next = 0usize;
    const B: usize = 64;
    let mut iovs: Vec<libc::iovec> = vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; B];
    // SAFETY: zeroed mmsghdr are valid (no names, no control data).
    let mut msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; B];
    loop {
        let now = real_ns();
        if now >= end {
            break;
        }
        let due = ((now - t0) as f64 * rate / 1e9) as u64;
        let due = pace.after.map_or(due, |(a, by)| due.min(a.load(Ordering::Acquire) + by));
        if done >= due {
            std::hint::spin_loop();
            continue;
        }
        let n = ((due - done) as usize).min(B);
        for (ti, t) in targets.iter().enumerate() {
            let len = t.frames.len();
            for k in 0..n {
                let f = &t.frames[(next + k) % len];
                iovs[k] = libc::iovec { iov_base: f.as_ptr() as *mut _, iov_len: f.len() };
                msgs[k].msg_hdr.msg_iov = &mut iovs[k];
                msgs[k].msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: sendmmsg over `n` headers pointing at our frames.
            let r = unsafe { libc::sendmmsg(fds[ti], msgs.as_mut_ptr(), n as u32, 0) };
            if r > 0 {
                sent[ti] += r as u64;
            }
        }
        done += n as u64;
        next += n;
        if let Some(p) = pace.sent {
            p.store(done, Ordering::Release);
        }
    }
    close(&fds);
    Ok(sent)
}

/// A PFCP Heartbeat Request (TS 29.244 §7.4.2) from the gNB's namespace (standing in for the
/// SMF) to the UPF's N4 address and the UPF's Heartbeat Response `gap` later, on UDP 8805 over
/// the N4 link.
pub fn pfcp_heartbeat(bench: &Bench, seq: u32, gap: Duration) -> io::Result<()> {
    let msg = |t: u8| {
        let mut m = vec![0x20, t, 0, 12];
        m.extend_from_slice(&seq.to_be_bytes()[1..]);
        m.push(0);
        m.extend_from_slice(&[0, 96, 0, 4, 0xe7, 0, 0, 0]); // Recovery Time Stamp
        m
    };
    let req = {
        let _ns = InNetns::enter(Some(&bench.gnb)).map_err(|e| io::Error::other(e.to_string()))?;
        UdpSocket::bind("10.77.4.1:8805")?
    };
    let resp = {
        let _ns = InNetns::enter(Some(&bench.upf)).map_err(|e| io::Error::other(e.to_string()))?;
        UdpSocket::bind("10.77.4.2:8805")?
    };
    req.send_to(&msg(1), "10.77.4.2:8805")?;
    std::thread::sleep(gap);
    resp.send_to(&msg(2), "10.77.4.1:8805")?;
    Ok(())
}
