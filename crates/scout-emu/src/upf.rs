//! The emulator's real core: a slice served by a real UPF process (`scout-upf`) in a namespace
//! of its own, joined by veth links to the gNB's namespace (N3 and N4) and to the data network's
//! (N6). The SMF's client ([`scout_upf::smf`]) talks N4 from the gNB's namespace.
//!
//! ```text
//!  gnb: n3u<i> 10.77.<i>.1 ── n3 10.77.<i>.2 :upf<i>: n6 10.79.<i>.2 ── n6u<i> 10.79.<i>.1 :dn
//!       n4u<i> 10.78.<i>.1 ── n4 10.78.<i>.2 (PFCP)     upf0: the UE pool (TUN, scout-upf's)
//! ```
//!
//! In the UPF's namespace the kernel forwards between `n6` and the UPF's TUN device: the pool
//! routes to `upf0`, the data network's address through `n6`. In the data network's namespace
//! each UE of the slice is routed through `n6u<i>` (more specific than the pool's route). IPv6 is
//! off in the gNB's and UPFs' namespaces and on `n6u<i>` (the UPF forwards IPv4, as its PFCP
//! reads it).

use std::io::Read;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::netns::{ip, ns_name, remove, DN_ADDR4};
use crate::EmuError;

/// The UE pool every UPF routes to its N6 device (the emulator's, `crate::netns`).
pub const POOL: &str = "10.45.0.0/16";

/// Slice `i`'s link addresses.
#[derive(Clone, Copy, Debug)]
pub struct Addrs {
    pub gnb_n3: Ipv4Addr,
    pub upf_n3: Ipv4Addr,
    pub smf_n4: Ipv4Addr,
    pub upf_n4: Ipv4Addr,
    pub upf_n6: Ipv4Addr,
    pub dn_n6: Ipv4Addr,
}

impl Addrs {
    pub fn of(i: u8) -> Addrs {
        Addrs {
            gnb_n3: Ipv4Addr::new(10, 77, i, 1),
            upf_n3: Ipv4Addr::new(10, 77, i, 2),
            smf_n4: Ipv4Addr::new(10, 78, i, 1),
            upf_n4: Ipv4Addr::new(10, 78, i, 2),
            upf_n6: Ipv4Addr::new(10, 79, i, 2),
            dn_n6: Ipv4Addr::new(10, 79, i, 1),
        }
    }
}

fn setup_err(what: impl Into<String>, message: impl Into<String>) -> EmuError {
    EmuError::Setup { what: what.into(), message: message.into() }
}

/// Writes `value` to sysctl `key` (a path under /proc/sys) inside namespace `ns`.
fn sysctl(ns: &str, key: &str, value: &str) -> Result<(), EmuError> {
    // /proc/sys/net is the namespace of the task that writes it: a thread inside `ns`.
    let (path, v) = (format!("/proc/sys/{key}"), value.to_string());
    in_ns(ns, move || std::fs::write(&path, v))
        .map_err(|e| setup_err(format!("sysctl {key} = {value} in namespace {ns}"), e.to_string()))
}

/// Creates the gNB's namespace of the emulator with process id `pid` (N3 and N4 to the UPFs).
pub fn create_gnb(pid: u32) -> Result<String, EmuError> {
    let ns = ns_name(pid, "gnb");
    ip(&["netns", "add", &ns], None)?;
    ip(&["-netns", &ns, "link", "set", "lo", "up"], None)?;
    sysctl(&ns, "net/ipv6/conf/all/disable_ipv6", "1")?;
    sysctl(&ns, "net/ipv6/conf/default/disable_ipv6", "1")?;
    Ok(ns)
}

/// Runs `f` on a thread of its own inside namespace `ns`: a socket it makes stays in `ns`.
pub fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        // (Back in the thread's namespace when `f` has made its sockets: they stay in `ns`.)
        let _ns = scout_probe::sys::InNetns::enter(Some(&ns)).map_err(|e| std::io::Error::new(e.source.kind(), e))?;
        f()
    })
    .join()
    .unwrap_or_else(|_| Err(std::io::Error::other("the thread panicked")))
}

/// Turns off transmit checksum offload of device `dev` in namespace `ns` (what `ethtool -K DEV
/// tx off` does: `SIOCETHTOOL` with `ETHTOOL_STXCSUM`, linux/ethtool.h), so that packets leave it
/// with their checksums complete.
pub fn tx_checksum_off(ns: &str, dev: &str) -> Result<(), EmuError> {
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const ETHTOOL_STXCSUM: u32 = 0x17;
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    #[repr(C)]
    struct IfReq {
        name: [libc::c_char; libc::IFNAMSIZ],
        data: *mut EthtoolValue,
        _pad: [u8; 16],
    }
    let (dev_s, what) = (dev.to_string(), format!("tx checksum offload of {dev} in {ns}"));
    in_ns(ns, move || {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // SAFETY: socket(2); the descriptor is owned at once.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor we just opened.
        let sock = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut v = EthtoolValue { cmd: ETHTOOL_STXCSUM, data: 0 };
        let mut req = IfReq { name: [0; libc::IFNAMSIZ], data: &mut v, _pad: [0; 16] };
        for (d, s) in req.name.iter_mut().zip(dev_s.bytes().take(libc::IFNAMSIZ - 1)) {
            *d = s as libc::c_char;
        }
        // SAFETY: SIOCETHTOOL reads a `struct ifreq` whose data points at an ethtool_value.
        if unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut req) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    })
    .map_err(|e| setup_err(what, e.to_string()))
}

/// A UPF process serving one slice, in its namespace.
pub struct UpfSite {
    pub ns: String,
    pub slice: String,
    pub addrs: Addrs,
    child: Option<Child>,
}

impl UpfSite {
    /// Creates slice `i`'s UPF namespace and links (to `gnb` and `dn`, which exist), routes
    /// `ues` of the slice from the data network through it, and starts `bin` (`scout-upf`)
    /// there. The UPF answers N4 once the caller's SMF associates.
    pub fn create(
        pid: u32,
        i: u8,
        slice: &str,
        ues: &[Ipv4Addr],
        gnb: &str,
        dn: &str,
        bin: &Path,
    ) -> Result<UpfSite, EmuError> {
        let ns = ns_name(pid, &format!("upf{i}"));
        let a = Addrs::of(i);
        ip(&["netns", "add", &ns], None)?;
        let mut site = UpfSite { ns: ns.clone(), slice: slice.into(), addrs: a, child: None };
        ip(&["-netns", &ns, "link", "set", "lo", "up"], None)?;
        sysctl(&ns, "net/ipv6/conf/all/disable_ipv6", "1")?;
        sysctl(&ns, "net/ipv6/conf/default/disable_ipv6", "1")?;
        sysctl(&ns, "net/ipv4/ip_forward", "1")?;
        let (g3, g4, d6) = (format!("n3u{i}"), format!("n4u{i}"), format!("n6u{i}"));
        for (here, peer, peer_ns) in [(&g3, "n3", gnb), (&g4, "n4", gnb), (&d6, "n6", dn)] {
            ip(&["link", "add", here, "netns", peer_ns, "type", "veth", "peer", "name", peer, "netns", &ns], None)?;
        }
        let with = |ns: &str, batch: String| ip(&["-netns", ns, "-batch", "-"], Some(&batch));
        with(
            gnb,
            format!(
                "addr add {}/24 dev {g3}\nlink set dev {g3} up\naddr add {}/24 dev {g4}\nlink set dev {g4} up\n",
                a.gnb_n3, a.smf_n4
            ),
        )?;
        with(
            &ns,
            format!(
                "addr add {}/24 dev n3\nlink set dev n3 up\naddr add {}/24 dev n4\nlink set dev n4 up\n\
                 addr add {}/24 dev n6\nlink set dev n6 up\nroute add {DN_ADDR4}/32 via {}\n",
                a.upf_n3, a.upf_n4, a.upf_n6, a.dn_n6
            ),
        )?;
        // The N6 link carries IPv4 only (as the UPF forwards it): no router solicitations or
        // MLD reports from the data network's side, which the probe would see as packets.
        sysctl(dn, &format!("net/ipv6/conf/{d6}/disable_ipv6"), "1")?;
        // Checksums complete on the wire: with the veth's transmit checksum offload the data
        // network's UDP packets would cross N6 with only the pseudo-header's sum in their
        // checksum, completed later by the UPF's TUN device — the probe and a capture on `n6`
        // would see another packet than the UPF sends on N3, and not pair it (docs/probe.md).
        tx_checksum_off(dn, &d6)?;
        let mut dn_batch = format!("addr add {}/24 dev {d6}\nlink set dev {d6} up\n", a.dn_n6);
        for ue in ues {
            // `src`: replies from an unconnected socket (a UDP server) come from the data
            // network's address, not from the N6 link's (the UE's connected socket takes only
            // those).
            dn_batch += &format!("route replace {ue}/32 via {} dev {d6} src {DN_ADDR4}\n", a.upf_n6);
        }
        with(dn, dn_batch)?;
        let child = Command::new("ip")
            .args(["netns", "exec", &ns])
            .arg(bin)
            .args(["--name", slice, "--n3", &a.upf_n3.to_string(), "--n4", &a.upf_n4.to_string(), "--pool", POOL])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| setup_err(format!("{}", bin.display()), format!("cannot start it: {e}")))?;
        site.child = Some(child);
        Ok(site)
    }

    /// Stops the UPF (SIGTERM) and returns its report (`scout-upf`'s JSON line), or why there is
    /// none.
    pub fn stop(&mut self) -> Result<serde_json::Value, String> {
        let Some(mut c) = self.child.take() else { return Err("not running".into()) };
        // SAFETY: kill(2) of our own child. `ip netns exec` execs the UPF: the pid is its own.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let status = c.wait().map_err(|e| e.to_string())?;
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(mut o) = c.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        if let Some(mut e) = c.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let line = out.lines().last().unwrap_or_default();
        serde_json::from_str(line).map_err(|_| format!("UPF {} ended with {status}: {}", self.slice, err.trim()))
    }
}

impl Drop for UpfSite {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.stop();
        }
        if let Err(e) = remove(&self.ns) {
            eprintln!("scout emulate: cleanup: {e}");
        }
    }
}

/// The gNB's downlink tunnel of UE `ue` (what the UPF puts its downlink into).
pub fn gnb_teid(ue: u32) -> u32 {
    0x1000_0000 | ue
}

/// The UPF's uplink tunnel of UE `ue` (what the gNB puts its uplink into).
pub fn upf_teid(ue: u32) -> u32 {
    0x2000_0000 | ue
}

/// The gNB's end of one real UPF's N3: its socket (non-blocking, in the gNB's namespace) and
/// where the UPF listens.
pub struct CoreLink {
    pub slice: u8,
    pub sock: std::net::UdpSocket,
    pub upf_n3: std::net::SocketAddrV4,
}

/// One slice to serve with a real UPF: its index, name and UEs (index, IPv4 address, the QFI
/// of their downlink).
pub struct RealSlice {
    pub slice: u8,
    pub name: String,
    /// How often the SMF modifies one of the slice's sessions (round robin), ms; 0: never.
    pub modify_every_ms: f64,
    pub ues: Vec<(u32, Ipv4Addr, u8)>,
}

type Sessions = (scout_upf::smf::Smf, Vec<scout_upf::smf::PduSession>);

/// What the modifying thread hands back: the SMF and sessions, the response times (ms), the
/// failures.
type Modified = (Sessions, Vec<f64>, Vec<String>);

/// One UPF's SMF: its sessions, its N4 timings, and the thread that modifies its sessions
/// periodically (which holds the SMF while it runs).
struct SmfSlot {
    held: Option<Sessions>,
    timings: Value,
    modifier: Option<std::thread::JoinHandle<Modified>>,
}

/// Every `every`, a path switch of one of the sessions (round robin) to its own tunnel, timed;
/// until `stop`. Returns the SMF and sessions, the response times (ms) and the failures.
fn modify_periodically(
    (mut smf, mut sessions): Sessions,
    every: std::time::Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Modified {
    use std::sync::atomic::Ordering;
    let (mut times, mut errors) = (Vec::new(), Vec::new());
    let mut next = std::time::Instant::now() + every;
    let mut k = 0;
    while !stop.load(Ordering::Relaxed) && !sessions.is_empty() {
        let now = std::time::Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(std::time::Duration::from_millis(20)));
            continue;
        }
        next += every;
        let n = sessions.len();
        let s = &mut sessions[k % n];
        k += 1;
        let same = s.downlink;
        match smf.modify_downlink(s, scout_wire::pfcp::Action::Forward, same) {
            Ok(t) => times.push(ms(t)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    ((smf, sessions), times, errors)
}

/// The emulator's real core: the gNB's namespace, a UPF per slice that asked for one, and the
/// SMF's PDU sessions on each.
pub struct RealCore {
    sites: Vec<UpfSite>,
    smfs: Vec<SmfSlot>,
    pub gnb: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

use serde_json::{json, Value};

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl RealCore {
    /// Creates the gNB's namespace and each slice's UPF (`bin`: `scout-upf`) beside the data
    /// network's namespace `dn`, associates an SMF with each and establishes every UE's PDU
    /// session; returns the core and the gNB's N3 links.
    pub fn start(pid: u32, dn: &str, bin: &Path, slices: &[RealSlice]) -> Result<(RealCore, Vec<CoreLink>), EmuError> {
        use scout_upf::smf::Smf;
        use scout_wire::pfcp::{Tunnel, PFCP_PORT};
        use std::net::{SocketAddrV4, UdpSocket};
        let gnb = create_gnb(pid)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut core = RealCore { sites: Vec::new(), smfs: Vec::new(), gnb: gnb.clone(), stop: stop.clone() };
        let mut links = Vec::new();
        for (k, rs) in slices.iter().enumerate() {
            let addrs: Vec<Ipv4Addr> = rs.ues.iter().map(|u| u.1).collect();
            let site = UpfSite::create(pid, k as u8, &rs.name, &addrs, &gnb, dn, bin)?;
            let a = site.addrs;
            core.sites.push(site);
            let what = format!("the gNB's N3 and N4 sockets for slice {}", rs.name);
            let (sock, smf) = in_ns(&gnb, move || {
                let sock = UdpSocket::bind(SocketAddrV4::new(a.gnb_n3, scout_wire::gtpu::GTPU_PORT))?;
                deep_receive_buffer(&sock);
                sock.set_nonblocking(true)?;
                let smf = Smf::bind(
                    SocketAddrV4::new(a.smf_n4, PFCP_PORT).into(),
                    SocketAddrV4::new(a.upf_n4, PFCP_PORT).into(),
                )
                .map_err(|e| std::io::Error::other(e.to_string()))?;
                Ok((sock, smf))
            })
            .map_err(|e| setup_err(what, e.to_string()))?;
            let mut smf = smf;
            let n4 =
                |e: scout_upf::smf::SmfError| setup_err(format!("N4 to the UPF of slice {}", rs.name), e.to_string());
            // The UPF may still be starting: heartbeats until it answers (a UPF answers them
            // before any association), so that the association's time is its own.
            (smf.t1, smf.n1) = (std::time::Duration::from_millis(20), 250);
            smf.heartbeat().map_err(n4)?;
            (smf.t1, smf.n1) = (std::time::Duration::from_millis(500), 3);
            let assoc = smf.associate().map_err(n4)?;
            let mut sessions = Vec::new();
            let mut est = Vec::new();
            for &(ue, addr, qfi) in &rs.ues {
                let up = Tunnel { teid: upf_teid(ue), addr: a.upf_n3 };
                let down = Tunnel { teid: gnb_teid(ue), addr: a.gnb_n3 };
                let (s, t) = smf.establish(addr, up, Some(down), qfi).map_err(n4)?;
                sessions.push(s);
                est.push(ms(t));
            }
            let timings = json!({"association_ms": ms(assoc), "establishment_ms": est});
            let (held, modifier) = if rs.modify_every_ms > 0.0 {
                let every = std::time::Duration::from_secs_f64(rs.modify_every_ms / 1e3);
                let stop = stop.clone();
                let h = std::thread::Builder::new()
                    .name("scout-smf".into())
                    .spawn(move || modify_periodically((smf, sessions), every, stop))
                    .map_err(|e| setup_err("the SMF's thread", e.to_string()))?;
                (None, Some(h))
            } else {
                (Some((smf, sessions)), None)
            };
            core.smfs.push(SmfSlot { held, timings, modifier });
            links.push(CoreLink {
                slice: rs.slice,
                sock,
                upf_n3: SocketAddrV4::new(a.upf_n3, scout_wire::gtpu::GTPU_PORT),
            });
        }
        Ok((core, links))
    }

    /// `scout probe` on every UPF: N3 and N6 paired per slice, PFCP captured on N4.
    pub fn probe_options(&self) -> scout_probe::Options {
        let side = |ns: &str, iface: &str| scout_probe::Side { netns: Some(ns.to_string()), iface: iface.into() };
        scout_probe::Options {
            upfs: self
                .sites
                .iter()
                .map(|s| scout_probe::Upf { n3: side(&s.ns, "n3"), n6: side(&s.ns, "n6"), slice: s.slice.clone() })
                .collect(),
            pfcp: self.sites.iter().map(|s| side(&s.ns, "n4")).collect(),
            ..scout_probe::Options::default()
        }
    }

    /// Every UPF's N3, N6 and N4, each to `dir/<slice>-<iface>.pcap`.
    pub fn capture_points(&self, dir: &Path) -> Vec<crate::capture::Point> {
        self.sites
            .iter()
            .flat_map(|s| {
                ["n3", "n6", "n4"].map(|i| crate::capture::Point {
                    ns: s.ns.clone(),
                    iface: i.into(),
                    file: dir.join(format!("{}-{i}.pcap", s.slice)),
                })
            })
            .collect()
    }

    /// The namespaces it made (the gNB's, then each UPF's).
    pub fn namespaces(&self) -> Vec<String> {
        std::iter::once(self.gnb.clone()).chain(self.sites.iter().map(|s| s.ns.clone())).collect()
    }

    /// Deletes every PDU session (timed), stops the UPFs and reports each: its slice, namespace,
    /// addresses, N4 timings and the UPF's own report (its counters).
    pub fn finish(&mut self) -> Value {
        let mut out = Vec::new();
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for (site, slot) in self.sites.iter_mut().zip(self.smfs.iter_mut()) {
            let (mut modification, mut mod_errors) = (Vec::new(), Vec::new());
            if let Some(h) = slot.modifier.take() {
                if let Ok((held, times, errors)) = h.join() {
                    slot.held = Some(held);
                    (modification, mod_errors) = (times, errors);
                }
            }
            let timings = &slot.timings;
            let Some((smf, sessions)) = slot.held.as_mut() else { continue };
            let del: Vec<Value> = sessions
                .iter()
                .map(|s| smf.delete(s).map_or_else(|e| json!(e.to_string()), |t| json!(ms(t))))
                .collect();
            let upf = site.stop().unwrap_or_else(|e| json!({"error": e}));
            let a = site.addrs;
            out.push(json!({
                "slice": site.slice, "namespace": site.ns,
                "n3": {"gnb": a.gnb_n3.to_string(), "upf": a.upf_n3.to_string()},
                "n4": {"smf": a.smf_n4.to_string(), "upf": a.upf_n4.to_string()},
                "n6": {"upf": a.upf_n6.to_string(), "dn": a.dn_n6.to_string()},
                "pfcp": {"association_ms": timings["association_ms"], "establishment_ms": timings["establishment_ms"],
                         "modification_ms": modification, "modification_errors": mod_errors,
                         "deletion_ms": del, "stale_responses": smf.stale_responses},
                "upf": upf,
            }));
        }
        Value::Array(out)
    }
}

impl Drop for RealCore {
    fn drop(&mut self) {
        self.sites.clear(); // each removes its namespace
        if let Err(e) = remove(&self.gnb) {
            eprintln!("scout emulate: cleanup: {e}");
        }
    }
}

/// A receive buffer for bursts (root may exceed `rmem_max`: `SO_RCVBUFFORCE`); best effort.
pub fn deep_receive_buffer(s: &std::net::UdpSocket) {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = 8 << 20;
    // SAFETY: setsockopt(2) with a pointer to an int and its size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}
