//! The UPF's N4 side, sans-IO: the association with its SMF, the PFCP sessions and their rules,
//! and what the data path looks each packet up in — a [`Table`] compiled from every session's
//! PDRs, FARs and QERs after each change (TS 29.244 §5.2: a packet is matched against the PDRs
//! in precedence order, lower values first, §8.2.11; the matching PDR's FAR says what to do).

use std::collections::HashMap;
use std::net::Ipv4Addr;

use scout_wire::pfcp::{cause, Action, Far, Interface, Message, Pdr, Pfcp, Qer, Tunnel};

/// What the data path does with an uplink packet that arrived in a tunnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uplink {
    pub action: Action,
    /// The UE's address, when the PDR matches it (the inner packet's source).
    pub ue_addr: Option<Ipv4Addr>,
    /// The QFI the PDR matches, when it names one.
    pub qfi: Option<u8>,
}

/// What the data path does with a downlink packet to a UE's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Downlink {
    pub action: Action,
    /// The gNB's tunnel (the FAR's Outer Header Creation); a FAR that forwards without one drops.
    pub tunnel: Option<Tunnel>,
    /// The QFI of the PDR's QER, else of its PDI; 0 when neither names one.
    pub qfi: u8,
}

/// Every session's rules, compiled for the data path's lookups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    pub uplink: HashMap<u32, Uplink>,
    pub downlink: HashMap<Ipv4Addr, Downlink>,
}

#[derive(Clone, Debug)]
struct Session {
    cp_seid: u64,
    pdrs: Vec<Pdr>,
    fars: HashMap<u32, Far>,
    qers: HashMap<u32, Qer>,
}

/// A UPF's PFCP node: answers each request and keeps the rules.
#[derive(Debug)]
pub struct Node {
    /// The UPF's Node ID and F-SEID address.
    pub addr: Ipv4Addr,
    /// Its Recovery Time Stamp (§8.2.65): seconds since 1900 when it started.
    pub recovery: u32,
    /// The SMF it is associated with.
    pub peer: Option<Ipv4Addr>,
    sessions: HashMap<u64, Session>,
    next_seid: u64,
}

/// NTP's epoch (1900) to Unix's (1970), seconds.
pub const NTP_UNIX_OFFSET: u64 = 2_208_988_800;

impl Node {
    pub fn new(addr: Ipv4Addr, unix_s: u64) -> Node {
        Node { addr, recovery: (unix_s + NTP_UNIX_OFFSET) as u32, peer: None, sessions: HashMap::new(), next_seid: 1 }
    }

    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Answers the request `req` from `from`; returns the response and whether the rules changed
    /// (so the data path's table must be compiled again). A response received is not answered.
    pub fn handle(&mut self, req: &Pfcp, from: Ipv4Addr) -> Option<(Pfcp, bool)> {
        let reply = |seid: u64, msg: Message| Pfcp { seid, seq: req.seq, msg };
        let assoc = self.peer == Some(from);
        Some(match &req.msg {
            Message::HeartbeatRequest { .. } => {
                (reply(0, Message::HeartbeatResponse { recovery: self.recovery }), false)
            }
            Message::AssociationSetupRequest { node, .. } => {
                // §6.2.6.2: a new association from the same node replaces the old one and its
                // sessions.
                let changed = !self.sessions.is_empty();
                self.sessions.clear();
                self.peer = Some(*node);
                let msg = Message::AssociationSetupResponse {
                    node: self.addr,
                    cause: cause::REQUEST_ACCEPTED,
                    recovery: self.recovery,
                };
                (reply(0, msg), changed)
            }
            Message::SessionEstablishmentRequest { cp_seid, pdrs, fars, qers, .. } => {
                let refuse = |c: u8| Message::SessionEstablishmentResponse {
                    node: self.addr,
                    cause: c,
                    up_seid: 0,
                    up_addr: Ipv4Addr::UNSPECIFIED,
                };
                if !assoc {
                    return Some((reply(*cp_seid, refuse(cause::NO_ESTABLISHED_PFCP_ASSOCIATION)), false));
                }
                let s = Session {
                    cp_seid: *cp_seid,
                    pdrs: pdrs.clone(),
                    fars: fars.iter().map(|f| (f.id, f.clone())).collect(),
                    qers: qers.iter().map(|q| (q.id, *q)).collect(),
                };
                if let Err(c) = s.check() {
                    return Some((reply(*cp_seid, refuse(c)), false));
                }
                let up_seid = self.next_seid;
                self.next_seid += 1;
                self.sessions.insert(up_seid, s);
                let msg = Message::SessionEstablishmentResponse {
                    node: self.addr,
                    cause: cause::REQUEST_ACCEPTED,
                    up_seid,
                    up_addr: self.addr,
                };
                (reply(*cp_seid, msg), true)
            }
            Message::SessionModificationRequest {
                create_pdrs,
                create_fars,
                create_qers,
                update_fars,
                remove_pdrs,
                remove_fars,
            } => {
                let Some(s) = self.sessions.get_mut(&req.seid).filter(|_| assoc) else {
                    // §7.2.2.4.2: an unknown session is answered with SEID 0.
                    let msg = Message::SessionModificationResponse { cause: cause::SESSION_CONTEXT_NOT_FOUND };
                    return Some((reply(0, msg), false));
                };
                // All or nothing (§7.5.4: a rejected request leaves the session as it was).
                let mut next = s.clone();
                next.pdrs.retain(|p| !remove_pdrs.contains(&p.id));
                next.fars.retain(|id, _| !remove_fars.contains(id));
                next.pdrs.extend(create_pdrs.iter().cloned());
                next.fars.extend(create_fars.iter().map(|f| (f.id, f.clone())));
                next.qers.extend(create_qers.iter().map(|q| (q.id, *q)));
                let mut result = next.check();
                for u in update_fars {
                    match next.fars.get_mut(&u.id) {
                        // §7.5.4.3: only the parameters given change.
                        Some(f) => {
                            f.action = u.action;
                            f.destination = u.destination.or(f.destination);
                            f.outer_header = u.outer_header.or(f.outer_header);
                        }
                        None => result = Err(cause::RULE_CREATION_MODIFICATION_FAILURE),
                    }
                }
                let cp_seid = s.cp_seid;
                let c = match result {
                    Ok(()) => {
                        *s = next;
                        cause::REQUEST_ACCEPTED
                    }
                    Err(c) => c,
                };
                (reply(cp_seid, Message::SessionModificationResponse { cause: c }), c == cause::REQUEST_ACCEPTED)
            }
            Message::SessionDeletionRequest => match self.sessions.remove(&req.seid).filter(|_| assoc) {
                Some(s) => {
                    (reply(s.cp_seid, Message::SessionDeletionResponse { cause: cause::REQUEST_ACCEPTED }), true)
                }
                None => (reply(0, Message::SessionDeletionResponse { cause: cause::SESSION_CONTEXT_NOT_FOUND }), false),
            },
            _ => return None,
        })
    }

    /// The lookups of every session's rules (the highest-precedence PDR of each key wins).
    pub fn table(&self) -> Table {
        let mut t = Table::default();
        let mut seids: Vec<&u64> = self.sessions.keys().collect();
        seids.sort();
        let mut rules: Vec<(&Session, &Pdr)> =
            seids.iter().flat_map(|k| self.sessions[*k].pdrs.iter().map(move |p| (&self.sessions[*k], p))).collect();
        rules.sort_by_key(|(_, p)| p.precedence);
        for (s, p) in rules {
            let far = s.fars.get(&p.far_id);
            let action = far.map_or(Action::Drop, |f| f.action);
            match (p.source, p.tunnel, p.ue_addr) {
                (Interface::Access, Some(tun), _) => {
                    t.uplink.entry(tun.teid).or_insert(Uplink { action, ue_addr: p.ue_addr, qfi: p.qfi });
                }
                (Interface::Core, _, Some(ue)) => {
                    let qfi = p.qer_id.and_then(|q| s.qers.get(&q)).map(|q| q.qfi).or(p.qfi).unwrap_or(0);
                    let tunnel = far.and_then(|f| f.outer_header);
                    t.downlink.entry(ue).or_insert(Downlink { action, tunnel, qfi });
                }
                _ => {} // a PDR this UPF cannot match on (no tunnel, no UE address)
            }
        }
        t
    }
}

impl Session {
    /// Every PDR's FAR and QER exist (§7.5.2.2: a PDR names rules of its own session).
    fn check(&self) -> Result<(), u8> {
        let ok = self
            .pdrs
            .iter()
            .all(|p| self.fars.contains_key(&p.far_id) && p.qer_id.is_none_or(|q| self.qers.contains_key(&q)));
        if ok {
            Ok(())
        } else {
            Err(cause::RULE_CREATION_MODIFICATION_FAILURE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMF: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 1);
    const UPF: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 2);
    const GNB: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
    const UE: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);

    fn req(seid: u64, seq: u32, msg: Message) -> Pfcp {
        Pfcp { seid, seq, msg }
    }

    fn establish(n: &mut Node, seq: u32) -> (Pfcp, bool) {
        let (pdrs, fars, qers) = crate::smf::session_rules(UE, Tunnel { teid: 0x100, addr: UPF }, None, 9);
        let m = Message::SessionEstablishmentRequest { node: SMF, cp_seid: 7, cp_addr: SMF, pdrs, fars, qers };
        n.handle(&req(0, seq, m), SMF).expect("a response")
    }

    #[test]
    fn sessions_need_an_association_and_their_rules_make_the_table() {
        let mut n = Node::new(UPF, 1_700_000_000);
        let (r, changed) = establish(&mut n, 1);
        assert!(!changed);
        assert!(matches!(
            r.msg,
            Message::SessionEstablishmentResponse { cause: cause::NO_ESTABLISHED_PFCP_ASSOCIATION, .. }
        ));
        let (r, _) = n.handle(&req(0, 2, Message::AssociationSetupRequest { node: SMF, recovery: 1 }), SMF).unwrap();
        assert!(matches!(r.msg, Message::AssociationSetupResponse { cause: cause::REQUEST_ACCEPTED, .. }));
        let (r, changed) = establish(&mut n, 3);
        assert!(changed);
        let Message::SessionEstablishmentResponse { cause: cause::REQUEST_ACCEPTED, up_seid, .. } = r.msg else {
            panic!("{r:?}")
        };
        assert_eq!((r.seid, r.seq), (7, 3), "the response carries the SMF's SEID and the request's sequence");
        let t = n.table();
        assert_eq!(t.uplink[&0x100], Uplink { action: Action::Forward, ue_addr: Some(UE), qfi: None });
        // Downlink buffers until the gNB's tunnel is known.
        assert_eq!(t.downlink[&UE], Downlink { action: Action::Buffer, tunnel: None, qfi: 9 });
        // The gNB's tunnel arrives: downlink forwards into it, with the QER's QFI.
        let gnb = Tunnel { teid: 0x200, addr: GNB };
        let m = crate::smf::dl_update(Action::Forward, Some(gnb));
        let (r, changed) = n.handle(&req(up_seid, 4, m), SMF).unwrap();
        assert!(changed && r.msg == Message::SessionModificationResponse { cause: cause::REQUEST_ACCEPTED });
        assert_eq!(n.table().downlink[&UE], Downlink { action: Action::Forward, tunnel: Some(gnb), qfi: 9 });
        // Only the parameters given change: a drop keeps the tunnel.
        n.handle(&req(up_seid, 5, crate::smf::dl_update(Action::Drop, None)), SMF).unwrap();
        assert_eq!(n.table().downlink[&UE].tunnel, Some(gnb));
        assert_eq!(n.table().downlink[&UE].action, Action::Drop);
        // A FAR that does not exist: refused, and nothing changes.
        let bad = Message::SessionModificationRequest {
            create_pdrs: vec![],
            create_fars: vec![],
            create_qers: vec![],
            update_fars: vec![Far { id: 99, action: Action::Forward, destination: None, outer_header: None }],
            remove_pdrs: vec![],
            remove_fars: vec![],
        };
        let (r, changed) = n.handle(&req(up_seid, 6, bad), SMF).unwrap();
        assert!(!changed);
        assert_eq!(r.msg, Message::SessionModificationResponse { cause: cause::RULE_CREATION_MODIFICATION_FAILURE });
        // Deletion empties the table; a second one finds no session.
        let (r, changed) = n.handle(&req(up_seid, 7, Message::SessionDeletionRequest), SMF).unwrap();
        assert!(changed && r.msg == Message::SessionDeletionResponse { cause: cause::REQUEST_ACCEPTED });
        assert_eq!(n.table(), Table::default());
        let (r, _) = n.handle(&req(up_seid, 8, Message::SessionDeletionRequest), SMF).unwrap();
        assert_eq!((r.seid, r.msg), (0, Message::SessionDeletionResponse { cause: cause::SESSION_CONTEXT_NOT_FOUND }));
    }

    #[test]
    fn the_highest_precedence_pdr_wins_and_a_pdr_without_its_far_is_refused() {
        let mut n = Node::new(UPF, 0);
        n.handle(&req(0, 1, Message::AssociationSetupRequest { node: SMF, recovery: 1 }), SMF).unwrap();
        let (mut pdrs, mut fars, qers) = crate::smf::session_rules(UE, Tunnel { teid: 0x100, addr: UPF }, None, 9);
        // A second uplink PDR on the same tunnel, more precedent, that drops.
        pdrs.push(Pdr { id: 3, precedence: 10, far_id: 3, ..pdrs[0].clone() });
        fars.push(Far { id: 3, action: Action::Drop, destination: None, outer_header: None });
        let m = Message::SessionEstablishmentRequest {
            node: SMF,
            cp_seid: 1,
            cp_addr: SMF,
            pdrs: pdrs.clone(),
            fars: fars.clone(),
            qers: qers.clone(),
        };
        n.handle(&req(0, 2, m), SMF).unwrap();
        assert_eq!(n.table().uplink[&0x100].action, Action::Drop);
        fars.pop();
        let m = Message::SessionEstablishmentRequest { node: SMF, cp_seid: 2, cp_addr: SMF, pdrs, fars, qers };
        let (r, changed) = n.handle(&req(0, 3, m), SMF).unwrap();
        assert!(!changed);
        assert!(matches!(
            r.msg,
            Message::SessionEstablishmentResponse { cause: cause::RULE_CREATION_MODIFICATION_FAILURE, .. }
        ));
        assert_eq!(n.sessions(), 1);
    }
}
