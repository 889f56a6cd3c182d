//! Scout's wire formats, read and written in one place (as smoltcp keeps its `wire` module) for
//! every part that meets them: Scout's UPF and SMF (`scout-upf`), the capture ingest
//! (`scout-ingest::pcap`) and the live probe (`scout-probe`). Sans-IO: bytes in, values out, and
//! back.
//!
//! - [`ip`]: capture link layers, IPv4/IPv6 with fragment reassembly, transport ports, and the
//!   identity key of a packet through the UPF (mirrored in the probe's kernel program).
//! - [`gtpu`]: GTP-U (TS 29.281) read, G-PDUs with the PDU Session Container written.
//! - [`pfcp`]: PFCP (TS 29.244): header, IEs, the type tables; what a captured message says of a
//!   session ([`pfcp::session`]); the messages Scout's SMF and UPF exchange ([`pfcp::rules`]).

pub mod gtpu;
pub mod ip;
pub mod pfcp;

/// Why bytes are not the format read (counted per cause by the readers).
pub type Cause = &'static str;
