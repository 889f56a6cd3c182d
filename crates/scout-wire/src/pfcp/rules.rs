//! PFCP (N4, TS 29.244) for Scout's UPF and its SMF: the node procedures (heartbeat, association
//! setup) and the session procedures (establishment, modification, deletion) with the rules a
//! UPF needs to forward one PDU session's user plane — PDRs that match its GTP-U tunnel or its
//! UE address (and QFI), FARs that forward to the core or into the gNB's tunnel. Sans-IO:
//! [`encode`] makes a datagram's bytes, [`decode`] reads one back; unknown IEs are skipped, as
//! §7.2.3.2 asks of a receiver.
//!
//! The IEs and their encodings: TS 29.244 Table 8.1.2-1 (types) and §8.2 (values). QERs carry
//! only their QFI (the one a downlink packet's PDU Session Container gets, §5.4.3) with open
//! gates. Not carried: URRs, BARs, MBR/GBR in QERs, SDF filters, IPv6, F-TEID allocation by the
//! UPF (CH).

use std::net::Ipv4Addr;

use super::{cause, header, ie, Ie, Ies};

/// An interface a packet comes from or goes to (§8.2.2, §8.2.24).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    /// The access side: N3, the gNB's tunnels.
    Access,
    /// The core side: N6, the data network.
    Core,
}

impl Interface {
    fn code(self) -> u8 {
        match self {
            Interface::Access => 0,
            Interface::Core => 1,
        }
    }
    fn from_code(c: u8) -> Option<Interface> {
        match c & 0x0f {
            0 => Some(Interface::Access),
            1 => Some(Interface::Core),
            _ => None,
        }
    }
}

/// A GTP-U tunnel end: TEID and IPv4 address (F-TEID §8.2.3, Outer Header Creation §8.2.56).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunnel {
    pub teid: u32,
    pub addr: Ipv4Addr,
}

/// A Packet Detection Rule (§7.5.2.2): what it matches and the FAR it applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pdr {
    pub id: u16,
    pub precedence: u32,
    pub source: Interface,
    /// The tunnel packets arrive in (uplink PDRs).
    pub tunnel: Option<Tunnel>,
    /// The UE's address: the packets' source (uplink) or destination (downlink).
    pub ue_addr: Option<Ipv4Addr>,
    pub qfi: Option<u8>,
    /// Take the GTP-U/UDP/IPv4 header off (uplink).
    pub remove_outer_header: bool,
    pub far_id: u32,
    /// The QER whose QFI the packets get (downlink).
    pub qer_id: Option<u32>,
}

/// A QoS Enforcement Rule (§7.5.2.5), as far as Scout's UPF enforces one: the QFI it gives the
/// packets of the PDRs that name it (gates open; no bit rates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Qer {
    pub id: u32,
    pub qfi: u8,
}

/// What a FAR does with the packets (Apply Action §8.2.26).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Drop,
    Forward,
    Buffer,
}

/// A Forwarding Action Rule (§7.5.2.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Far {
    pub id: u32,
    pub action: Action,
    pub destination: Option<Interface>,
    /// Put the packets into this tunnel (downlink, towards the gNB).
    pub outer_header: Option<Tunnel>,
}

/// The messages Scout's SMF and UPF exchange (Table 7.3-1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    HeartbeatRequest {
        recovery: u32,
    },
    HeartbeatResponse {
        recovery: u32,
    },
    AssociationSetupRequest {
        node: Ipv4Addr,
        recovery: u32,
    },
    AssociationSetupResponse {
        node: Ipv4Addr,
        cause: u8,
        recovery: u32,
    },
    /// The SMF's F-SEID (its SEID and address) and the session's rules.
    SessionEstablishmentRequest {
        node: Ipv4Addr,
        cp_seid: u64,
        cp_addr: Ipv4Addr,
        pdrs: Vec<Pdr>,
        fars: Vec<Far>,
        qers: Vec<Qer>,
    },
    /// The UPF's F-SEID.
    SessionEstablishmentResponse {
        node: Ipv4Addr,
        cause: u8,
        up_seid: u64,
        up_addr: Ipv4Addr,
    },
    SessionModificationRequest {
        create_pdrs: Vec<Pdr>,
        create_fars: Vec<Far>,
        create_qers: Vec<Qer>,
        update_fars: Vec<Far>,
        remove_pdrs: Vec<u16>,
        remove_fars: Vec<u32>,
    },
    SessionModificationResponse {
        cause: u8,
    },
    SessionDeletionRequest,
    SessionDeletionResponse {
        cause: u8,
    },
}

impl Message {
    /// Its message type (Table 7.3-1).
    pub fn msg_type(&self) -> u8 {
        match self {
            Message::HeartbeatRequest { .. } => 1,
            Message::HeartbeatResponse { .. } => 2,
            Message::AssociationSetupRequest { .. } => 5,
            Message::AssociationSetupResponse { .. } => 6,
            Message::SessionEstablishmentRequest { .. } => 50,
            Message::SessionEstablishmentResponse { .. } => 51,
            Message::SessionModificationRequest { .. } => 52,
            Message::SessionModificationResponse { .. } => 53,
            Message::SessionDeletionRequest => 54,
            Message::SessionDeletionResponse { .. } => 55,
        }
    }

    /// Whether it is a request (its response is the type one above, Table 7.3-1).
    pub fn is_request(&self) -> bool {
        matches!(
            self,
            Message::HeartbeatRequest { .. }
                | Message::AssociationSetupRequest { .. }
                | Message::SessionEstablishmentRequest { .. }
                | Message::SessionModificationRequest { .. }
                | Message::SessionDeletionRequest
        )
    }

    /// Whether it is a session message (its header carries a SEID, §7.2.2.1).
    pub fn is_session(&self) -> bool {
        self.msg_type() >= 50
    }
}

/// A PFCP datagram: the header's SEID (session messages: the receiver's SEID, 0 in an
/// establishment request, §7.2.2.4.2) and sequence number, and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pfcp {
    pub seid: u64,
    pub seq: u32,
    pub msg: Message,
}

/// Why a datagram is not a PFCP message this module reads, and where (byte offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub what: String,
    pub offset: usize,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PFCP: {} (byte {})", self.what, self.offset)
    }
}

impl std::error::Error for Error {}

fn put(out: &mut Vec<u8>, t: u16, v: &[u8]) {
    out.extend_from_slice(&t.to_be_bytes());
    out.extend_from_slice(&(v.len() as u16).to_be_bytes());
    out.extend_from_slice(v);
}

fn node_id(a: Ipv4Addr) -> Vec<u8> {
    let mut v = vec![0]; // §8.2.38: type 0, an IPv4 address
    v.extend_from_slice(&a.octets());
    v
}

fn f_seid(seid: u64, a: Ipv4Addr) -> Vec<u8> {
    let mut v = vec![0x02]; // §8.2.37: V4
    v.extend_from_slice(&seid.to_be_bytes());
    v.extend_from_slice(&a.octets());
    v
}

fn pdr_ies(p: &Pdr) -> Vec<u8> {
    let mut pdi = Vec::new();
    put(&mut pdi, ie::SOURCE_INTERFACE, &[p.source.code()]);
    if let Some(t) = p.tunnel {
        let mut v = vec![0x01]; // §8.2.3: V4
        v.extend_from_slice(&t.teid.to_be_bytes());
        v.extend_from_slice(&t.addr.octets());
        put(&mut pdi, ie::F_TEID, &v);
    }
    if let Some(a) = p.ue_addr {
        // §8.2.62: V4, and S/D = 1 (destination) for a downlink rule (from the core).
        let flags = 0x02 | if p.source == Interface::Core { 0x04 } else { 0 };
        let mut v = vec![flags];
        v.extend_from_slice(&a.octets());
        put(&mut pdi, ie::UE_IP_ADDRESS, &v);
    }
    if let Some(q) = p.qfi {
        put(&mut pdi, ie::QFI, &[q & 0x3f]);
    }
    let mut g = Vec::new();
    put(&mut g, ie::PDR_ID, &p.id.to_be_bytes());
    put(&mut g, ie::PRECEDENCE, &p.precedence.to_be_bytes());
    put(&mut g, ie::PDI, &pdi);
    if p.remove_outer_header {
        put(&mut g, ie::OUTER_HEADER_REMOVAL, &[0]); // §8.2.64: GTP-U/UDP/IPv4
    }
    put(&mut g, ie::FAR_ID, &p.far_id.to_be_bytes());
    if let Some(q) = p.qer_id {
        put(&mut g, ie::QER_ID, &q.to_be_bytes());
    }
    g
}

fn qer_ies(q: &Qer) -> Vec<u8> {
    let mut g = Vec::new();
    put(&mut g, ie::QER_ID, &q.id.to_be_bytes());
    put(&mut g, ie::GATE_STATUS, &[0]); // §8.2.7: UL and DL gates OPEN
    put(&mut g, ie::QFI, &[q.qfi & 0x3f]);
    g
}

fn far_ies(f: &Far, update: bool) -> Vec<u8> {
    let mut g = Vec::new();
    put(&mut g, ie::FAR_ID, &f.id.to_be_bytes());
    let action = match f.action {
        Action::Drop => 0x01,
        Action::Forward => 0x02,
        Action::Buffer => 0x04,
    };
    put(&mut g, ie::APPLY_ACTION, &[action]);
    if f.destination.is_some() || f.outer_header.is_some() {
        let mut fp = Vec::new();
        if let Some(d) = f.destination {
            put(&mut fp, ie::DESTINATION_INTERFACE, &[d.code()]);
        }
        if let Some(t) = f.outer_header {
            // §8.2.56: description GTP-U/UDP/IPv4 (octet 5 bit 1), TEID, IPv4 address.
            let mut v = vec![0x01, 0x00];
            v.extend_from_slice(&t.teid.to_be_bytes());
            v.extend_from_slice(&t.addr.octets());
            put(&mut fp, ie::OUTER_HEADER_CREATION, &v);
        }
        put(&mut g, if update { ie::UPDATE_FORWARDING_PARAMETERS } else { ie::FORWARDING_PARAMETERS }, &fp);
    }
    g
}

/// The datagram of `p` (§7.2.2: version 1, S flag for session messages, the length of all that
/// follows the first four octets).
pub fn encode(p: &Pfcp) -> Vec<u8> {
    let mut body = Vec::new();
    let recovery = |b: &mut Vec<u8>, r: u32| put(b, ie::RECOVERY_TIME_STAMP, &r.to_be_bytes());
    match &p.msg {
        Message::HeartbeatRequest { recovery: r } | Message::HeartbeatResponse { recovery: r } => {
            recovery(&mut body, *r)
        }
        Message::AssociationSetupRequest { node, recovery: r } => {
            put(&mut body, ie::NODE_ID, &node_id(*node));
            recovery(&mut body, *r);
        }
        Message::AssociationSetupResponse { node, cause, recovery: r } => {
            put(&mut body, ie::NODE_ID, &node_id(*node));
            put(&mut body, ie::CAUSE, &[*cause]);
            recovery(&mut body, *r);
        }
        Message::SessionEstablishmentRequest { node, cp_seid, cp_addr, pdrs, fars, qers } => {
            put(&mut body, ie::NODE_ID, &node_id(*node));
            put(&mut body, ie::F_SEID, &f_seid(*cp_seid, *cp_addr));
            for x in pdrs {
                put(&mut body, ie::CREATE_PDR, &pdr_ies(x));
            }
            for x in fars {
                put(&mut body, ie::CREATE_FAR, &far_ies(x, false));
            }
            for x in qers {
                put(&mut body, ie::CREATE_QER, &qer_ies(x));
            }
        }
        Message::SessionEstablishmentResponse { node, cause, up_seid, up_addr } => {
            put(&mut body, ie::NODE_ID, &node_id(*node));
            put(&mut body, ie::CAUSE, &[*cause]);
            put(&mut body, ie::F_SEID, &f_seid(*up_seid, *up_addr));
        }
        Message::SessionModificationRequest {
            create_pdrs,
            create_fars,
            create_qers,
            update_fars,
            remove_pdrs,
            remove_fars,
        } => {
            for x in remove_pdrs {
                let mut g = Vec::new();
                put(&mut g, ie::PDR_ID, &x.to_be_bytes());
                put(&mut body, ie::REMOVE_PDR, &g);
            }
            for x in remove_fars {
                let mut g = Vec::new();
                put(&mut g, ie::FAR_ID, &x.to_be_bytes());
                put(&mut body, ie::REMOVE_FAR, &g);
            }
            for x in create_pdrs {
                put(&mut body, ie::CREATE_PDR, &pdr_ies(x));
            }
            for x in create_fars {
                put(&mut body, ie::CREATE_FAR, &far_ies(x, false));
            }
            for x in create_qers {
                put(&mut body, ie::CREATE_QER, &qer_ies(x));
            }
            for x in update_fars {
                put(&mut body, ie::UPDATE_FAR, &far_ies(x, true));
            }
        }
        Message::SessionModificationResponse { cause } | Message::SessionDeletionResponse { cause } => {
            put(&mut body, ie::CAUSE, &[*cause])
        }
        Message::SessionDeletionRequest => {}
    }
    let session = p.msg.is_session();
    let mut out = vec![if session { 0x21 } else { 0x20 }, p.msg.msg_type(), 0, 0];
    if session {
        out.extend_from_slice(&p.seid.to_be_bytes());
    }
    out.extend_from_slice(&p.seq.to_be_bytes()[1..]);
    out.push(0); // spare (message priority unused)
    out.extend_from_slice(&body);
    let len = (out.len() - 4) as u16;
    out[2..4].copy_from_slice(&len.to_be_bytes());
    out
}

/// The IEs of `d` (at offset `at` in the datagram).
fn walk(d: &[u8], at: usize) -> Result<Vec<Ie<'_>>, Error> {
    Ok(Ies::new(d, at).collect::<Result<_, _>>()?)
}

impl From<super::Malformed> for Error {
    fn from(e: super::Malformed) -> Self {
        Error { what: e.what.into(), offset: e.offset }
    }
}

fn need<'a>(
    ies: &[(u16, &'a [u8], usize)],
    t: u16,
    min: usize,
    what: &str,
    at: usize,
) -> Result<(&'a [u8], usize), Error> {
    match ies.iter().find(|x| x.0 == t) {
        Some(&(_, v, o)) if v.len() >= min => Ok((v, o)),
        Some(&(_, _, o)) => Err(Error { what: format!("{what} (IE {t}) is too short"), offset: o }),
        None => Err(Error { what: format!("{what} (IE {t}) is missing"), offset: at }),
    }
}

fn u32_of(v: &[u8]) -> u32 {
    u32::from_be_bytes([v[0], v[1], v[2], v[3]])
}

fn addr_of(v: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(v[0], v[1], v[2], v[3])
}

fn node_of(ies: &[Ie<'_>], at: usize) -> Result<Ipv4Addr, Error> {
    let (v, o) = need(ies, ie::NODE_ID, 5, "Node ID", at)?;
    if v[0] & 0x0f != 0 {
        return Err(Error { what: "Node ID is not an IPv4 address (only IPv4 nodes are read)".into(), offset: o });
    }
    Ok(addr_of(&v[1..5]))
}

fn seid_of(ies: &[Ie<'_>], at: usize) -> Result<(u64, Ipv4Addr), Error> {
    let (v, o) = need(ies, ie::F_SEID, 13, "F-SEID", at)?;
    if v[0] & 0x02 == 0 {
        return Err(Error { what: "F-SEID carries no IPv4 address".into(), offset: o });
    }
    Ok((u64::from_be_bytes(v[1..9].try_into().expect("8 bytes")), addr_of(&v[9..13])))
}

fn pdr_of(v: &[u8], at: usize) -> Result<Pdr, Error> {
    let g = walk(v, at)?;
    let (id, _) = need(&g, ie::PDR_ID, 2, "PDR ID", at)?;
    let (prec, _) = need(&g, ie::PRECEDENCE, 4, "Precedence", at)?;
    let (pdi, po) = need(&g, ie::PDI, 0, "PDI", at)?;
    let (far, _) = need(&g, ie::FAR_ID, 4, "FAR ID", at)?;
    let p = walk(pdi, po)?;
    let (src, so) = need(&p, ie::SOURCE_INTERFACE, 1, "Source Interface", po)?;
    let source = Interface::from_code(src[0])
        .ok_or(Error { what: format!("source interface {} is not access (0) or core (1)", src[0]), offset: so })?;
    let tunnel = match p.iter().find(|x| x.0 == ie::F_TEID) {
        Some(&(_, v, _)) if v.len() >= 9 && v[0] & 0x05 == 0x01 => {
            Some(Tunnel { teid: u32_of(&v[1..5]), addr: addr_of(&v[5..9]) })
        }
        Some(&(_, _, o)) => return Err(Error { what: "F-TEID is not a chosen IPv4 tunnel end".into(), offset: o }),
        None => None,
    };
    let ue_addr = match p.iter().find(|x| x.0 == ie::UE_IP_ADDRESS) {
        Some(&(_, v, _)) if v.len() >= 5 && v[0] & 0x02 != 0 => Some(addr_of(&v[1..5])),
        Some(&(_, _, o)) => return Err(Error { what: "UE IP Address carries no IPv4 address".into(), offset: o }),
        None => None,
    };
    let qfi = p.iter().find(|x| x.0 == ie::QFI).and_then(|x| x.1.first()).map(|q| q & 0x3f);
    Ok(Pdr {
        id: u16::from_be_bytes([id[0], id[1]]),
        precedence: u32_of(prec),
        source,
        tunnel,
        ue_addr,
        qfi,
        remove_outer_header: g.iter().any(|x| x.0 == ie::OUTER_HEADER_REMOVAL),
        far_id: u32_of(far),
        qer_id: match g.iter().find(|x| x.0 == ie::QER_ID) {
            Some(&(_, v, _)) if v.len() >= 4 => Some(u32_of(v)),
            Some(&(_, _, o)) => return Err(Error { what: "QER ID (IE 109) is too short".into(), offset: o }),
            None => None,
        },
    })
}

fn qer_of(v: &[u8], at: usize) -> Result<Qer, Error> {
    let g = walk(v, at)?;
    let (id, _) = need(&g, ie::QER_ID, 4, "QER ID", at)?;
    let (gate, go) = need(&g, ie::GATE_STATUS, 1, "Gate Status", at)?;
    if gate[0] & 0x0f != 0 {
        return Err(Error { what: "a closed gate (Scout's UPF keeps both gates open)".into(), offset: go });
    }
    let (q, _) = need(&g, ie::QFI, 1, "QFI", at)?;
    Ok(Qer { id: u32_of(id), qfi: q[0] & 0x3f })
}

fn far_of(v: &[u8], at: usize) -> Result<Far, Error> {
    let g = walk(v, at)?;
    let (id, _) = need(&g, ie::FAR_ID, 4, "FAR ID", at)?;
    let (act, ao) = need(&g, ie::APPLY_ACTION, 1, "Apply Action", at)?;
    let action = match act[0] & 0x07 {
        0x01 => Action::Drop,
        0x02 => Action::Forward,
        0x04 => Action::Buffer,
        a => return Err(Error { what: format!("Apply Action {a:#04x}: one of DROP, FORW, BUFF is read"), offset: ao }),
    };
    let (mut destination, mut outer_header) = (None, None);
    if let Some(&(_, fp, fo)) =
        g.iter().find(|x| x.0 == ie::FORWARDING_PARAMETERS || x.0 == ie::UPDATE_FORWARDING_PARAMETERS)
    {
        let f = walk(fp, fo)?;
        if let Some(&(_, d, o)) = f.iter().find(|x| x.0 == ie::DESTINATION_INTERFACE) {
            destination = Some(
                d.first()
                    .and_then(|&c| Interface::from_code(c))
                    .ok_or(Error { what: "destination interface is not access (0) or core (1)".into(), offset: o })?,
            );
        }
        if let Some(&(_, h, o)) = f.iter().find(|x| x.0 == ie::OUTER_HEADER_CREATION) {
            if h.len() < 10 || h[0] & 0x01 == 0 {
                return Err(Error { what: "Outer Header Creation is not GTP-U/UDP/IPv4".into(), offset: o });
            }
            outer_header = Some(Tunnel { teid: u32_of(&h[2..6]), addr: addr_of(&h[6..10]) });
        }
    }
    Ok(Far { id: u32_of(id), action, destination, outer_header })
}

fn cause_of(ies: &[Ie<'_>], at: usize) -> Result<u8, Error> {
    Ok(need(ies, ie::CAUSE, 1, "Cause", at)?.0[0])
}

fn recovery_of(ies: &[Ie<'_>], at: usize) -> Result<u32, Error> {
    Ok(u32_of(need(ies, ie::RECOVERY_TIME_STAMP, 4, "Recovery Time Stamp", at)?.0))
}

/// Reads one datagram.
pub fn decode(d: &[u8]) -> Result<Pfcp, Error> {
    let err = |what: &str, offset| Err(Error { what: what.into(), offset });
    let h = header(d)?;
    let (seid, seq, head) = (h.seid.unwrap_or(0), h.seq, h.ies_at);
    let ies = walk(h.ies, head)?;
    let many = |t: u16| ies.iter().filter(move |x| x.0 == t);
    let msg = match h.msg_type {
        1 => Message::HeartbeatRequest { recovery: recovery_of(&ies, head)? },
        2 => Message::HeartbeatResponse { recovery: recovery_of(&ies, head)? },
        5 => Message::AssociationSetupRequest { node: node_of(&ies, head)?, recovery: recovery_of(&ies, head)? },
        6 => Message::AssociationSetupResponse {
            node: node_of(&ies, head)?,
            cause: cause_of(&ies, head)?,
            recovery: recovery_of(&ies, head)?,
        },
        50 => {
            let (cp_seid, cp_addr) = seid_of(&ies, head)?;
            Message::SessionEstablishmentRequest {
                node: node_of(&ies, head)?,
                cp_seid,
                cp_addr,
                pdrs: many(ie::CREATE_PDR).map(|x| pdr_of(x.1, x.2)).collect::<Result<_, _>>()?,
                fars: many(ie::CREATE_FAR).map(|x| far_of(x.1, x.2)).collect::<Result<_, _>>()?,
                qers: many(ie::CREATE_QER).map(|x| qer_of(x.1, x.2)).collect::<Result<_, _>>()?,
            }
        }
        51 => {
            let cause = cause_of(&ies, head)?;
            let (up_seid, up_addr) =
                if cause == cause::REQUEST_ACCEPTED { seid_of(&ies, head)? } else { (0, Ipv4Addr::UNSPECIFIED) };
            Message::SessionEstablishmentResponse { node: node_of(&ies, head)?, cause, up_seid, up_addr }
        }
        52 => {
            let id_in = |t: u16, inner: u16, n: usize| -> Result<Vec<u32>, Error> {
                many(t)
                    .map(|x| {
                        let g = walk(x.1, x.2)?;
                        let (v, _) = need(&g, inner, n, "rule ID", x.2)?;
                        Ok(if n == 2 { u32::from(u16::from_be_bytes([v[0], v[1]])) } else { u32_of(v) })
                    })
                    .collect()
            };
            Message::SessionModificationRequest {
                create_pdrs: many(ie::CREATE_PDR).map(|x| pdr_of(x.1, x.2)).collect::<Result<_, _>>()?,
                create_fars: many(ie::CREATE_FAR).map(|x| far_of(x.1, x.2)).collect::<Result<_, _>>()?,
                create_qers: many(ie::CREATE_QER).map(|x| qer_of(x.1, x.2)).collect::<Result<_, _>>()?,
                update_fars: many(ie::UPDATE_FAR).map(|x| far_of(x.1, x.2)).collect::<Result<_, _>>()?,
                remove_pdrs: id_in(ie::REMOVE_PDR, ie::PDR_ID, 2)?.into_iter().map(|x| x as u16).collect(),
                remove_fars: id_in(ie::REMOVE_FAR, ie::FAR_ID, 4)?,
            }
        }
        53 => Message::SessionModificationResponse { cause: cause_of(&ies, head)? },
        54 => Message::SessionDeletionRequest,
        55 => Message::SessionDeletionResponse { cause: cause_of(&ies, head)? },
        t => return err(&format!("message type {t} is not one Scout's UPF reads (1, 2, 5, 6, 50-55)"), 1),
    };
    Ok(Pfcp { seid, seq, msg })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMF: Ipv4Addr = Ipv4Addr::new(10, 46, 0, 1);
    const UPF: Ipv4Addr = Ipv4Addr::new(10, 46, 0, 2);
    const GNB: Ipv4Addr = Ipv4Addr::new(10, 46, 1, 1);
    const UE: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);

    /// A PDU session's rules as an SMF installs them: uplink from the gNB's tunnel to the core,
    /// downlink to the UE's address into the gNB's tunnel.
    fn session() -> (Vec<Pdr>, Vec<Far>, Vec<Qer>) {
        let pdrs = vec![
            Pdr {
                id: 1,
                precedence: 255,
                source: Interface::Access,
                tunnel: Some(Tunnel { teid: 0x0000_0101, addr: UPF }),
                ue_addr: Some(UE),
                qfi: Some(9),
                remove_outer_header: true,
                far_id: 1,
                qer_id: None,
            },
            Pdr {
                id: 2,
                precedence: 255,
                source: Interface::Core,
                tunnel: None,
                ue_addr: Some(UE),
                qfi: None,
                remove_outer_header: false,
                far_id: 2,
                qer_id: Some(1),
            },
        ];
        let fars = vec![
            Far { id: 1, action: Action::Forward, destination: Some(Interface::Core), outer_header: None },
            Far { id: 2, action: Action::Buffer, destination: None, outer_header: None },
        ];
        (pdrs, fars, vec![Qer { id: 1, qfi: 9 }])
    }

    fn messages() -> Vec<Pfcp> {
        let (pdrs, fars, qers) = session();
        let gnb_tunnel = Tunnel { teid: 0x0000_0a0b, addr: GNB };
        vec![
            Pfcp { seid: 0, seq: 1, msg: Message::AssociationSetupRequest { node: SMF, recovery: 3_900_000_000 } },
            Pfcp {
                seid: 0,
                seq: 1,
                msg: Message::AssociationSetupResponse {
                    node: UPF,
                    cause: cause::REQUEST_ACCEPTED,
                    recovery: 3_900_000_007,
                },
            },
            Pfcp { seid: 0, seq: 2, msg: Message::HeartbeatRequest { recovery: 3_900_000_000 } },
            Pfcp { seid: 0, seq: 2, msg: Message::HeartbeatResponse { recovery: 3_900_000_007 } },
            Pfcp {
                seid: 0,
                seq: 3,
                msg: Message::SessionEstablishmentRequest {
                    node: SMF,
                    cp_seid: 0x1111,
                    cp_addr: SMF,
                    pdrs,
                    fars,
                    qers,
                },
            },
            Pfcp {
                seid: 0x1111,
                seq: 3,
                msg: Message::SessionEstablishmentResponse {
                    node: UPF,
                    cause: cause::REQUEST_ACCEPTED,
                    up_seid: 0x2222,
                    up_addr: UPF,
                },
            },
            // The gNB's tunnel is known: downlink now forwards into it (as after N2's PDU session
            // resource setup response).
            Pfcp {
                seid: 0x2222,
                seq: 4,
                msg: Message::SessionModificationRequest {
                    create_pdrs: vec![],
                    create_fars: vec![],
                    create_qers: vec![Qer { id: 2, qfi: 5 }],
                    update_fars: vec![Far {
                        id: 2,
                        action: Action::Forward,
                        destination: Some(Interface::Access),
                        outer_header: Some(gnb_tunnel),
                    }],
                    remove_pdrs: vec![7],
                    remove_fars: vec![8],
                },
            },
            Pfcp { seid: 0x1111, seq: 4, msg: Message::SessionModificationResponse { cause: cause::REQUEST_ACCEPTED } },
            Pfcp { seid: 0x2222, seq: 5, msg: Message::SessionDeletionRequest },
            Pfcp { seid: 0x1111, seq: 5, msg: Message::SessionDeletionResponse { cause: cause::REQUEST_ACCEPTED } },
        ]
    }

    #[test]
    fn every_message_reads_back_as_it_was_written() {
        for m in messages() {
            let bytes = encode(&m);
            assert_eq!(decode(&bytes).as_ref(), Ok(&m), "{bytes:02x?}");
        }
    }

    #[test]
    fn the_capture_reader_reads_the_same_sessions_tunnels_and_addresses() {
        // The capture side of the same bytes (`session`, the pcap ingest's and probe's): procedure, SEID,
        // sequence number, F-SEID, tunnels, UE address, QFI, cause.
        use super::super::{msg_kind, session::parse};
        for m in messages() {
            let bytes = encode(&m);
            let got = parse(&bytes).expect("the ingest reads it");
            assert_eq!(got.msg_type, m.msg.msg_type());
            assert_eq!(msg_kind(got.msg_type).map(|k| k.1), Some(m.msg.is_request()));
            assert_eq!(got.seq, m.seq);
            assert_eq!(got.seid, m.msg.is_session().then_some(m.seid));
            match &m.msg {
                Message::SessionEstablishmentRequest { cp_seid, .. } => {
                    assert_eq!(got.info.f_seid, Some(*cp_seid));
                    assert_eq!(got.info.up_teids, vec![0x0101]);
                    assert_eq!(got.info.ue_addrs, vec![std::net::IpAddr::V4(UE); 2]);
                    assert_eq!(got.info.qfis, vec![9]);
                }
                Message::SessionEstablishmentResponse { up_seid, cause, .. } => {
                    assert_eq!((got.info.f_seid, got.info.cause), (Some(*up_seid), Some(*cause)));
                }
                Message::SessionModificationRequest { .. } => assert_eq!(got.info.an_teids, vec![0x0a0b]),
                Message::SessionModificationResponse { cause } | Message::SessionDeletionResponse { cause } => {
                    assert_eq!(got.info.cause, Some(*cause))
                }
                _ => {}
            }
        }
    }

    #[test]
    fn bad_datagrams_say_what_is_wrong_and_where() {
        assert_eq!(decode(&[0x20, 1, 0]).unwrap_err().offset, 0);
        let mut m = encode(&messages()[4]);
        m[0] = 0x41;
        assert!(decode(&m).unwrap_err().what.contains("version"));
        let m = encode(&messages()[4]);
        let e = decode(&m[..m.len() - 3]).unwrap_err();
        assert!(e.what.contains("truncated"), "{e}");
        // A session establishment without its F-SEID.
        let mut no_fseid = Pfcp {
            seid: 0,
            seq: 9,
            msg: Message::SessionEstablishmentRequest {
                node: SMF,
                cp_seid: 1,
                cp_addr: SMF,
                pdrs: vec![],
                fars: vec![],
                qers: vec![],
            },
        };
        let mut bytes = encode(&no_fseid);
        // Rename the F-SEID IE (type 57) to an unknown type: a receiver skips it, and misses it.
        let at = bytes.windows(2).position(|w| w == [0, 57]).expect("the F-SEID IE");
        bytes[at + 1] = 250;
        let e = decode(&bytes).unwrap_err();
        assert!(e.what.contains("F-SEID") && e.what.contains("missing"), "{e}");
        no_fseid.seq = 10;
        assert!(decode(&encode(&no_fseid)).is_ok());
        let e = decode(&[0x20, 99, 0, 4, 0, 0, 1, 0]).unwrap_err();
        assert!(e.what.contains("message type 99"), "{e}");
    }
}
