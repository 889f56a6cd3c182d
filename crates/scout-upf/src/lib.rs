//! Scout's user plane function, for the emulator's real core (issue 25): a UPF per slice, run as
//! its own process in its own network namespace, configured over N4 by a small SMF.
//!
//! - [`pfcp`]: PFCP (TS 29.244) messages — the association, heartbeat and session procedures an
//!   SMF and a UPF exchange — encoded and decoded, and the session's forwarding rules (PDRs and
//!   FARs) they carry. Sans-IO: bytes in, bytes out.
//!
//! Not yet here: the forwarding process (GTP-U over N3 to and from N6) and the SMF's client.

pub mod pfcp;
