//! The scenario's `qos_rules` (TS 24.501 §9.11.4.13): which of its UE's DRBs a real packet rides.
//! Rules are tried in their order (precedence); a rule matches when every packet-filter component
//! it gives matches, seen from the UE — local is the UE's side of the packet, remote the other
//! end — and names a 5QI the UE has a DRB for. No match: the UE's first DRB (the default rule).

use std::net::IpAddr;

use scout_sim::scenario::{parse_prefix, rule_protocols, QosRule};

/// One rule, compiled.
#[derive(Clone, Debug)]
struct Rule {
    five_qi: u8,
    protocols: Option<&'static [u8]>,
    local_port: Option<u16>,
    remote_port: Option<u16>,
    remote: Option<(IpAddr, u8)>,
}

/// The rules of a scenario, and how many packets each picked.
#[derive(Clone, Debug, Default)]
pub struct QosRules {
    rules: Vec<Rule>,
    pub matched: Vec<u64>,
    pub default: u64,
}

/// Whether `a` lies in `net/len` (same family).
fn in_prefix(a: IpAddr, (net, len): (IpAddr, u8)) -> bool {
    let (a, n, bits) = match (a.to_canonical(), net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(u32::from(a)) << 96, u128::from(u32::from(n)) << 96, len),
        (IpAddr::V6(a), IpAddr::V6(n)) => (u128::from(a), u128::from(n), len),
        _ => return false,
    };
    let mask = if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits)) };
    a & mask == n & mask
}

impl QosRules {
    /// Compiles validated rules (`scout_sim::scenario` has checked protocols and prefixes).
    pub fn new(rules: &[QosRule]) -> QosRules {
        let rules: Vec<Rule> = rules
            .iter()
            .map(|r| Rule {
                five_qi: r.five_qi,
                protocols: r.protocol.as_deref().and_then(rule_protocols),
                local_port: r.local_port,
                remote_port: r.remote_port,
                remote: r.remote.as_deref().and_then(parse_prefix),
            })
            .collect();
        QosRules { matched: vec![0; rules.len()], rules, default: 0 }
    }

    /// The DRB index a packet rides: `tuple` is (protocol, source, destination, source port,
    /// destination port), `ul` whether the UE sent it, `drb_of` the UE's DRB index for a 5QI.
    pub fn drb(
        &mut self,
        tuple: (u8, IpAddr, IpAddr, u16, u16),
        ul: bool,
        drb_of: impl Fn(u8) -> Option<usize>,
    ) -> usize {
        let (proto, src, dst, sport, dport) = tuple;
        let (remote, local_port, remote_port) = if ul { (dst, sport, dport) } else { (src, dport, sport) };
        let ported = matches!(proto, 6 | 17);
        for (i, r) in self.rules.iter().enumerate() {
            let ok = r.protocols.is_none_or(|p| p.contains(&proto))
                && r.local_port.is_none_or(|p| ported && p == local_port)
                && r.remote_port.is_none_or(|p| ported && p == remote_port)
                && r.remote.is_none_or(|net| in_prefix(remote, net));
            if let (true, Some(d)) = (ok, drb_of(r.five_qi)) {
                self.matched[i] += 1;
                return d;
            }
        }
        self.default += 1;
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(
        five_qi: u8,
        protocol: Option<&str>,
        local: Option<u16>,
        remote_port: Option<u16>,
        remote: Option<&str>,
    ) -> QosRule {
        QosRule {
            five_qi,
            protocol: protocol.map(str::to_string),
            local_port: local,
            remote_port,
            remote: remote.map(str::to_string),
        }
    }

    #[test]
    fn the_first_rule_that_matches_from_the_ues_side_picks_the_drb() {
        let mut q = QosRules::new(&[
            rule(1, Some("icmp"), None, None, None),
            rule(7, Some("udp"), None, Some(5000), Some("10.45.0.0/24")),
            rule(5, None, Some(8080), None, None),
            rule(9, Some("tcp"), None, None, Some("fd00:5c07::1")),
        ]);
        // The UE has DRBs for 5QIs 9 (index 0), 1 and 7 — not 5.
        let drb_of = |q: u8| [9u8, 1, 7].iter().position(|&x| x == q);
        let (ue, dn): (IpAddr, IpAddr) = ("10.45.0.2".parse().unwrap(), "10.45.0.1".parse().unwrap());
        let icmp = (1, ue, dn, 0, 0);
        assert_eq!(q.drb(icmp, true, drb_of), 1);
        // UDP to the DN's port 5000 (UL), and its answer from port 5000 (DL): the remote port.
        assert_eq!(q.drb((17, ue, dn, 40000, 5000), true, drb_of), 2);
        assert_eq!(q.drb((17, dn, ue, 5000, 40000), false, drb_of), 2);
        // The UE's own port 5000 is its local port, not the remote one: default.
        assert_eq!(q.drb((17, ue, dn, 5000, 40000), true, drb_of), 0);
        // Port 8080 names 5QI 5, which this UE has no DRB for: the next rules, then the default.
        assert_eq!(q.drb((6, ue, dn, 8080, 80), true, drb_of), 0);
        // An IPv6 remote in the rule does not match IPv4.
        assert_eq!(q.drb((6, ue, dn, 1, 2), true, drb_of), 0);
        let ue6: IpAddr = "fd00:5c07::2".parse().unwrap();
        let dn6: IpAddr = "fd00:5c07::1".parse().unwrap();
        assert_eq!(q.drb((6, dn6, ue6, 5201, 40000), false, |q| (q == 9).then_some(0)), 0);
        assert_eq!(q.matched, vec![1, 2, 0, 1]);
        assert_eq!(q.default, 3);
        assert!(in_prefix("10.45.0.77".parse().unwrap(), ("10.45.0.0".parse().unwrap(), 24)));
        assert!(!in_prefix("10.46.0.1".parse().unwrap(), ("10.45.0.0".parse().unwrap(), 16)));
        assert!(in_prefix("1.2.3.4".parse().unwrap(), ("0.0.0.0".parse().unwrap(), 0)));
    }
}
