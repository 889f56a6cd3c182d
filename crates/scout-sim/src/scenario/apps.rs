//! `apps` and `qos_rules`: the emulator's real applications and the rules that put their packets
//! on DRBs.

use serde::Deserialize;

use super::{Invalid, UeGroup};

/// A QoS rule with one packet filter (TS 24.501 §9.11.4.13, components of Table 9.11.4.13.1):
/// a packet of a UE matches when every component given matches, seen from the UE (local: the
/// UE's side; remote: the other end). Rules are tried in order (their precedence); the first that
/// matches and names a 5QI the UE has a DRB for picks that DRB; a packet no rule matches rides
/// the UE's first DRB (the default QoS rule).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QosRule {
    pub five_qi: u8,
    /// `tcp`, `udp`, `icmp` (ICMP and ICMPv6), or any protocol when absent.
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub local_port: Option<u16>,
    #[serde(default)]
    pub remote_port: Option<u16>,
    /// The remote address as `ADDR/PREFIX` (IPv4 or IPv6), or one address.
    #[serde(default)]
    pub remote: Option<String>,
}

/// The protocol numbers a [`QosRule`] `protocol` stands for.
pub fn rule_protocols(name: &str) -> Option<&'static [u8]> {
    match name {
        "tcp" => Some(&[6]),
        "udp" => Some(&[17]),
        "icmp" => Some(&[1, 58]),
        _ => None,
    }
}

/// A [`QosRule`] `remote`: the network and prefix length.
pub fn parse_prefix(text: &str) -> Option<(std::net::IpAddr, u8)> {
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (a.parse::<std::net::IpAddr>().ok()?, Some(l.parse::<u8>().ok()?)),
        None => (text.parse().ok()?, None),
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = len.unwrap_or(max);
    (len <= max).then_some((addr, len))
}

/// A command the emulator starts in a namespace (`dn`, or `ue<N>`) at `at_s` seconds.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Names its output files (default: the command's first word and its index).
    #[serde(default)]
    pub name: Option<String>,
    pub ns: String,
    #[serde(default)]
    pub at_s: f64,
    /// Run with `sh -c`, with `$SCOUT_DN` and `$SCOUT_UE` set to the DN's and this UE's address.
    pub cmd: String,
}

impl AppSpec {
    /// The UE whose namespace it runs in (`None`: the DN's).
    pub fn ue(&self) -> Option<u32> {
        self.ns.strip_prefix("ue").and_then(|n| n.parse().ok())
    }
}

/// Each application: a namespace that exists (`dn` or a UE's), a start time, a command.
pub(super) fn check_apps(apps: &[AppSpec], nues: u64) -> Result<(), Invalid> {
    for (i, a) in apps.iter().enumerate() {
        let key = |k: &str| format!("apps[{i}].{k}");
        if a.ns != "dn" && a.ue().is_none_or(|u| u64::from(u) >= nues) {
            return Err((key("ns"), format!("{:?}; accepted: dn, or ue0..ue{} (one per UE)", a.ns, nues - 1)));
        }
        if !(a.at_s.is_finite() && a.at_s >= 0.0) {
            return Err((key("at_s"), format!("{}; accepted: a time >= 0 s", a.at_s)));
        }
        if a.cmd.trim().is_empty() {
            return Err((key("cmd"), "empty; accepted: a shell command".into()));
        }
    }
    Ok(())
}

/// Each QoS rule: a 5QI some UE has a DRB for, a known protocol, a parsable remote, no ports on
/// ICMP.
pub(super) fn check_rules(rules: &[QosRule], ues: &[UeGroup]) -> Result<(), Invalid> {
    for (i, r) in rules.iter().enumerate() {
        let key = |k: &str| format!("qos_rules[{i}].{k}");
        if !ues.iter().any(|g| g.five_qis.contains(&r.five_qi)) {
            let all: std::collections::BTreeSet<u8> = ues.iter().flat_map(|g| g.five_qis.iter().copied()).collect();
            return Err((
                key("five_qi"),
                format!("{}: no UE has a DRB for it; accepted: a 5QI of a UE group's five_qis ({all:?})", r.five_qi),
            ));
        }
        if let Some(p) = &r.protocol {
            if rule_protocols(p).is_none() {
                return Err((key("protocol"), format!("{p:?}; accepted: tcp, udp, icmp")));
            }
        }
        if let Some(a) = &r.remote {
            if parse_prefix(a).is_none() {
                return Err((
                    key("remote"),
                    format!("{a:?}; accepted: an IPv4 or IPv6 address, optionally /PREFIX (≤ 32 or ≤ 128)"),
                ));
            }
        }
        if (r.local_port.is_some() || r.remote_port.is_some()) && r.protocol.as_deref().is_some_and(|p| p == "icmp") {
            return Err((key("protocol"), "icmp has no ports; accepted: tcp or udp with ports".into()));
        }
    }
    Ok(())
}
