//! The emulated network: a namespace for the data network (DN) and one per UE, each holding one
//! TUN device whose other end is the emulator. Set up and torn down with iproute2 (`ip`), one
//! `ip -batch` per namespace.
//!
//! Everything created carries the prefix `scout-<pid>-` (namespaces) or `sc<pid>` (devices, before
//! they move into their namespace), so that the next start finds what a killed emulator left and
//! removes it ([`remove_stale`]). TUN devices are not persistent: they disappear with the
//! emulator's descriptors, however it ends.
//!
//! Addresses (IPv4 and IPv6): the DN is 10.45.0.1 and fd00:5c07::1; UE `i` is 10.45.0.0 + i + 2
//! and fd00:5c07:: + i + 2 (the Open5GS default UE pool, 10.45.0.0/16). Each UE's default route
//! and the DN's route to the pool go through the namespace's TUN device, `scout0`.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::{Command, Stdio};

use crate::tun::Tun;
use crate::EmuError;

/// Namespaces this emulator creates start with this.
pub const PREFIX: &str = "scout-";

/// The TUN device inside every namespace.
pub const DEVICE: &str = "scout0";

/// The MTU of every TUN device. Open5GS gives UEs 1400: a full-size packet plus GTP-U, UDP and IP
/// headers (36–52 bytes) still fits a 1500-byte N3 link.
pub const MTU: u32 = 1400;

/// The devices' transmit queue: deep enough that a burst the model releases at once (a transport
/// block of many packets) is never dropped by the device instead of the model.
pub const TXQUEUELEN: u32 = 10_000;

pub const DN_ADDR4: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 1);
pub const DN_ADDR6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x5c07, 0, 0, 0, 0, 0, 1);

/// Each emulated UE's index by its addresses (IPv4 and IPv6): looked up for every packet the DN
/// sends (foldhash: the standard library's SipHash costs more per lookup than the rest of it).
pub type UeOf = foldhash::HashMap<std::net::IpAddr, u32>;

/// UE `i`'s IPv4 address.
pub fn ue_addr4(i: u32) -> Ipv4Addr {
    let n = i + 2;
    Ipv4Addr::new(10, 45, (n >> 8) as u8, n as u8)
}

/// UE `i`'s IPv6 address.
pub fn ue_addr6(i: u32) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0x5c07, 0, 0, 0, 0, 0, (i + 2) as u16)
}

/// The namespace of `role` (`dn`, `ue0`, …) of the emulator with process id `pid`.
pub fn ns_name(pid: u32, role: &str) -> String {
    format!("{PREFIX}{pid}-{role}")
}

/// One side of the emulated network: a namespace and the descriptor of its TUN device.
pub struct Endpoint {
    pub ns: String,
    pub tun: Option<Tun>,
}

/// The DN's and the UEs' namespaces, removed on drop.
pub struct Topology {
    pub pid: u32,
    pub dn: Endpoint,
    pub ues: Vec<Endpoint>,
    down: bool,
}

fn setup_err(what: impl Into<String>, message: impl Into<String>) -> EmuError {
    EmuError::Setup { what: what.into(), message: message.into() }
}

/// Runs `ip` with `args`, and `stdin` as its batch input when given.
pub(crate) fn ip(args: &[&str], stdin: Option<&str>) -> Result<String, EmuError> {
    let mut cmd = Command::new("ip");
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = cmd.spawn().map_err(|e| setup_err("ip (iproute2)", format!("cannot run it: {e}")))?;
    if let (Some(text), Some(mut w)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        w.write_all(text.as_bytes()).map_err(|e| setup_err("ip -batch", e.to_string()))?;
    }
    let out = child.wait_with_output().map_err(|e| setup_err("ip", e.to_string()))?;
    if !out.status.success() {
        return Err(setup_err(
            format!("ip {}", args.join(" ")),
            String::from_utf8_lossy(&out.stderr).trim().replace('\n', "; "),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Topology {
    /// Creates the DN's namespace and `n_ues` UE namespaces with their devices, addresses and
    /// routes. Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and `/dev/net/tun`.
    /// `offload`: TUN devices with TCP segmentation and checksum offloads ([`crate::offload`]).
    pub fn create(n_ues: u32, offload: bool) -> Result<Topology, EmuError> {
        let pid = std::process::id();
        let mut t = Topology { pid, dn: Endpoint { ns: ns_name(pid, "dn"), tun: None }, ues: Vec::new(), down: false };
        t.add(None, offload)?;
        for i in 0..n_ues {
            t.ues.push(Endpoint { ns: ns_name(pid, &format!("ue{i}")), tun: None });
            t.add(Some(i), offload)?;
        }
        Ok(t)
    }

    /// Creates one namespace and its device (`ue`: which UE; `None`: the DN).
    fn add(&mut self, ue: Option<u32>, offload: bool) -> Result<(), EmuError> {
        let (ns, dev) = match ue {
            None => (self.dn.ns.clone(), format!("sc{}d", self.pid)),
            Some(i) => (self.ues[i as usize].ns.clone(), format!("sc{}u{i}", self.pid)),
        };
        ip(&["netns", "add", &ns], None)?;
        let tun = Tun::create(&dev, offload).map_err(|e| setup_err(format!("TUN device {dev}"), e.to_string()))?;
        match ue {
            None => self.dn.tun = Some(tun),
            Some(i) => self.ues[i as usize].tun = Some(tun),
        }
        ip(&["link", "set", "dev", &dev, "netns", &ns], None)?;
        let (a4, a6, routes) = match ue {
            None => (DN_ADDR4, DN_ADDR6, "route add 10.45.0.0/16 dev scout0\nroute add fd00:5c07::/64 dev scout0\n"),
            Some(i) => (ue_addr4(i), ue_addr6(i), "route add 0.0.0.0/0 dev scout0\nroute add ::/0 dev scout0\n"),
        };
        let batch = format!(
            "link set dev lo up\nlink set dev {dev} name {DEVICE}\n\
             link set dev {DEVICE} mtu {MTU} txqueuelen {TXQUEUELEN} up\n\
             addr add {a4}/32 dev {DEVICE}\naddr add {a6}/128 dev {DEVICE} nodad\n{routes}"
        );
        ip(&["-netns", &ns, "-batch", "-"], Some(&batch))?;
        Ok(())
    }

    /// Device `i`: the DN's (0), then UE `i - 1`'s; `None` once closed or out of range.
    pub fn device(&self, i: usize) -> Option<&Tun> {
        let ep = if i == 0 { Some(&self.dn) } else { self.ues.get(i - 1) };
        ep.and_then(|e| e.tun.as_ref())
    }

    /// Every namespace, the DN's first.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.dn.ns.as_str()).chain(self.ues.iter().map(|u| u.ns.as_str()))
    }

    /// Closes the devices, ends every process left in the namespaces and removes them; returns
    /// what could not be removed.
    pub fn teardown(&mut self) -> Vec<String> {
        if self.down {
            return Vec::new();
        }
        self.down = true;
        self.dn.tun = None;
        for u in &mut self.ues {
            u.tun = None;
        }
        let names: Vec<String> = self.namespaces().map(str::to_string).collect();
        names.iter().filter_map(|ns| remove(ns).err().map(|e| e.to_string())).collect()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for problem in self.teardown() {
            eprintln!("scout emulate: cleanup: {problem}");
        }
    }
}

/// Ends the processes in namespace `ns` (SIGTERM, then SIGKILL after 1 s) and deletes it.
pub fn remove(ns: &str) -> Result<(), EmuError> {
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let pids = ns_pids(ns);
        if pids.is_empty() {
            break;
        }
        for p in &pids {
            // SAFETY: kill(2) of a process id read from the namespace's process list.
            unsafe { libc::kill(*p, sig) };
        }
        for _ in 0..100 {
            if ns_pids(ns).is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    match ip(&["netns", "del", ns], None) {
        // Removed meanwhile (by another emulator's cleanup of stale namespaces): done.
        Err(_) if !std::path::Path::new("/run/netns").join(ns).exists() => Ok(()),
        r => r.map(|_| ()),
    }
}

fn ns_pids(ns: &str) -> Vec<i32> {
    ip(&["netns", "pids", ns], None)
        .map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// Whether `name` is something an emulator made (`scout-<pid>` or `scout-<pid>-…`: a namespace,
/// a tracefs instance) for a process that is gone.
pub(crate) fn left_by_gone_emulator(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<u32>().ok())
        .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
}

/// The namespaces an emulator left behind: named `scout-<pid>-…` for a process that is gone.
pub fn stale() -> Vec<String> {
    let Ok(list) = ip(&["netns", "list"], None) else { return Vec::new() };
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| left_by_gone_emulator(n))
        .map(str::to_string)
        .collect()
}

/// Removes what [`stale`] finds; returns the names removed.
pub fn remove_stale() -> Result<Vec<String>, EmuError> {
    let names = stale();
    for n in &names {
        remove(n)?;
    }
    Ok(names)
}
