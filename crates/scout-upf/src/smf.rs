//! The SMF's side of N4, as much as Scout needs to run its UPFs: association setup, heartbeat,
//! and one PDU session per UE — established with its rules, modified (the downlink's tunnel or
//! action, as a path switch or an N2 release does), deleted. Each procedure returns its response
//! time. Requests are retransmitted when unanswered (TS 29.244 §6.4: timer T1, N1 attempts).
//!
//! A session's rules ([`session_rules`]): PDR 1 matches the uplink tunnel and the UE's address
//! and removes the outer header, FAR 1 forwards to the core; PDR 2 matches the UE's address from
//! the core, FAR 2 forwards into the gNB's tunnel (or buffers until it is known), QER 1 gives the
//! downlink its QFI.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use scout_wire::pfcp::{self, cause, Action, Far, Interface, Message, Pdr, Pfcp, Qer, Tunnel};

#[derive(Debug, thiserror::Error)]
pub enum SmfError {
    #[error("N4: {0}")]
    Io(#[from] io::Error),
    #[error("N4: no answer from the UPF at {upf} to {what} after {attempts} attempts of {t1_ms} ms")]
    Timeout { upf: SocketAddr, what: &'static str, attempts: u32, t1_ms: u128 },
    #[error("N4: the UPF refused {what} (cause {cause})")]
    Refused { what: &'static str, cause: u8 },
    #[error("N4: {0}")]
    Pfcp(#[from] pfcp::Error),
}

/// One PDU session as the SMF knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PduSession {
    pub cp_seid: u64,
    pub up_seid: u64,
    pub ue: Ipv4Addr,
    /// Where the gNB sends the uplink: the UPF's tunnel end.
    pub uplink: Tunnel,
    /// Where the UPF sends the downlink: the gNB's tunnel end (none yet: buffered).
    pub downlink: Option<Tunnel>,
    pub qfi: u8,
}

/// The rules of a PDU session of `ue` (module docs).
pub fn session_rules(
    ue: Ipv4Addr,
    uplink: Tunnel,
    downlink: Option<Tunnel>,
    qfi: u8,
) -> (Vec<Pdr>, Vec<Far>, Vec<Qer>) {
    let pdrs = vec![
        Pdr {
            id: 1,
            precedence: 255,
            source: Interface::Access,
            tunnel: Some(uplink),
            ue_addr: Some(ue),
            qfi: None,
            remove_outer_header: true,
            far_id: 1,
            qer_id: None,
        },
        Pdr {
            id: 2,
            precedence: 255,
            source: Interface::Core,
            tunnel: None,
            ue_addr: Some(ue),
            qfi: None,
            remove_outer_header: false,
            far_id: 2,
            qer_id: Some(1),
        },
    ];
    let fars = vec![
        Far { id: 1, action: Action::Forward, destination: Some(Interface::Core), outer_header: None },
        match downlink {
            Some(t) => {
                Far { id: 2, action: Action::Forward, destination: Some(Interface::Access), outer_header: Some(t) }
            }
            None => Far { id: 2, action: Action::Buffer, destination: None, outer_header: None },
        },
    ];
    (pdrs, fars, vec![Qer { id: 1, qfi }])
}

/// The modification that sets the downlink FAR's action (and tunnel, when given).
pub fn dl_update(action: Action, tunnel: Option<Tunnel>) -> Message {
    Message::SessionModificationRequest {
        create_pdrs: vec![],
        create_fars: vec![],
        create_qers: vec![],
        update_fars: vec![Far { id: 2, action, destination: tunnel.map(|_| Interface::Access), outer_header: tunnel }],
        remove_pdrs: vec![],
        remove_fars: vec![],
    }
}

/// An SMF's N4 endpoint towards one UPF.
pub struct Smf {
    sock: UdpSocket,
    upf: SocketAddr,
    node: Ipv4Addr,
    recovery: u32,
    seq: u32,
    next_seid: u64,
    /// T1 and N1 (§6.4).
    pub t1: Duration,
    pub n1: u32,
    /// Responses that came late, to a request already retransmitted or answered.
    pub stale_responses: u64,
}

impl Smf {
    /// An SMF bound to `local` (its Node ID: `local`'s address) talking to the UPF at `upf`.
    pub fn bind(local: SocketAddr, upf: SocketAddr) -> Result<Smf, SmfError> {
        let SocketAddr::V4(l) = local else {
            return Err(SmfError::Io(io::Error::new(io::ErrorKind::InvalidInput, "N4 over IPv4 only")));
        };
        let sock = UdpSocket::bind(local)?;
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
        Ok(Smf {
            sock,
            upf,
            node: *l.ip(),
            recovery: (unix + crate::rules::NTP_UNIX_OFFSET) as u32,
            seq: 0,
            next_seid: 1,
            t1: Duration::from_millis(500),
            n1: 3,
            stale_responses: 0,
        })
    }

    /// Sends `msg` (to session `seid`) and waits for its response; returns it and the time from
    /// the first transmission to the response.
    fn request(&mut self, seid: u64, msg: Message, what: &'static str) -> Result<(Pfcp, Duration), SmfError> {
        self.seq = (self.seq + 1) & 0x00ff_ffff;
        let bytes = pfcp::encode(&Pfcp { seid, seq: self.seq, msg });
        let start = Instant::now();
        let mut buf = [0u8; 2048];
        for _ in 0..self.n1 {
            self.sock.send_to(&bytes, self.upf)?;
            let deadline = Instant::now() + self.t1;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                self.sock.set_read_timeout(Some(left))?;
                let n = match self.sock.recv_from(&mut buf) {
                    Ok((n, from)) if from == self.upf => n,
                    Ok(_) => continue,
                    Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => break,
                    Err(e) => return Err(e.into()),
                };
                let r = pfcp::decode(&buf[..n])?;
                if r.seq == self.seq && !r.msg.is_request() {
                    return Ok((r, start.elapsed()));
                }
                self.stale_responses += 1;
            }
        }
        Err(SmfError::Timeout { upf: self.upf, what, attempts: self.n1, t1_ms: self.t1.as_millis() })
    }

    fn accepted(c: u8, what: &'static str) -> Result<(), SmfError> {
        if c == cause::REQUEST_ACCEPTED {
            Ok(())
        } else {
            Err(SmfError::Refused { what, cause: c })
        }
    }

    pub fn associate(&mut self) -> Result<Duration, SmfError> {
        let what = "association setup";
        let (r, t) =
            self.request(0, Message::AssociationSetupRequest { node: self.node, recovery: self.recovery }, what)?;
        match r.msg {
            Message::AssociationSetupResponse { cause: c, .. } => Self::accepted(c, what).map(|_| t),
            _ => Err(SmfError::Refused { what, cause: 0 }),
        }
    }

    pub fn heartbeat(&mut self) -> Result<Duration, SmfError> {
        let (_, t) = self.request(0, Message::HeartbeatRequest { recovery: self.recovery }, "heartbeat")?;
        Ok(t)
    }

    /// Establishes the PDU session of `ue` (its rules: [`session_rules`]).
    pub fn establish(
        &mut self,
        ue: Ipv4Addr,
        uplink: Tunnel,
        downlink: Option<Tunnel>,
        qfi: u8,
    ) -> Result<(PduSession, Duration), SmfError> {
        let what = "session establishment";
        let cp_seid = self.next_seid;
        self.next_seid += 1;
        let (pdrs, fars, qers) = session_rules(ue, uplink, downlink, qfi);
        let m = Message::SessionEstablishmentRequest { node: self.node, cp_seid, cp_addr: self.node, pdrs, fars, qers };
        let (r, t) = self.request(0, m, what)?;
        match r.msg {
            Message::SessionEstablishmentResponse { cause: c, up_seid, .. } => {
                Self::accepted(c, what)?;
                Ok((PduSession { cp_seid, up_seid, ue, uplink, downlink, qfi }, t))
            }
            _ => Err(SmfError::Refused { what, cause: 0 }),
        }
    }

    /// Sets the downlink's action, and its tunnel when given (a path switch).
    pub fn modify_downlink(
        &mut self,
        s: &mut PduSession,
        action: Action,
        tunnel: Option<Tunnel>,
    ) -> Result<Duration, SmfError> {
        let what = "session modification";
        let (r, t) = self.request(s.up_seid, dl_update(action, tunnel), what)?;
        match r.msg {
            Message::SessionModificationResponse { cause: c } => {
                Self::accepted(c, what)?;
                s.downlink = tunnel.or(s.downlink);
                Ok(t)
            }
            _ => Err(SmfError::Refused { what, cause: 0 }),
        }
    }

    pub fn delete(&mut self, s: &PduSession) -> Result<Duration, SmfError> {
        let what = "session deletion";
        let (r, t) = self.request(s.up_seid, Message::SessionDeletionRequest, what)?;
        match r.msg {
            Message::SessionDeletionResponse { cause: c } => Self::accepted(c, what).map(|_| t),
            _ => Err(SmfError::Refused { what, cause: 0 }),
        }
    }
}
