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
//! off in the gNB's and UPFs' namespaces (the UPF forwards IPv4, as its PFCP reads it).

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
    ip(&["netns", "exec", ns, "sh", "-c", &format!("echo {value} > /proc/sys/{key}")], None).map(|_| ())
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
        let mut dn_batch = format!("addr add {}/24 dev {d6}\nlink set dev {d6} up\n", a.dn_n6);
        for ue in ues {
            dn_batch += &format!("route replace {ue}/32 via {} dev {d6}\n", a.upf_n6);
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
