//! Scout's user plane function, for the emulator's real core (issue 25): a UPF per slice, run as
//! its own process (`scout-upf`, in `crates/scout-emu`) in its own network namespace, configured
//! over N4 by a small SMF. `docs/upf.md` describes it.
//!
//! - PFCP (TS 29.244) messages — the association, heartbeat and session procedures an SMF and a
//!   UPF exchange, with the rules they carry (PDRs, FARs, QERs) — and GTP-U are wire formats:
//!   `scout_wire::pfcp` and `scout_wire::gtpu`, shared with the capture ingest and the probe.
//! - [`rules`]: the UPF's PFCP node, sans-IO: answers each request, keeps the sessions, and
//!   compiles their rules into the lookups the data path uses.
//! - [`datapath`]: the UPF's threads — N3 and N6 receivers, a forwarding worker per direction
//!   behind a bounded queue, the N4 endpoint.
//! - [`smf`]: the SMF's side: association, heartbeat, PDU sessions established, modified and
//!   deleted, each procedure timed.

pub mod datapath;
pub mod rules;
pub mod smf;
