//! Captures of the core network (N3, N6, N4): pcap and pcapng in, UPF forwarding delay and PFCP
//! latency out (`docs/ingest-pcap.md`).

mod decode;
pub mod file;
pub mod journey;
mod pair;
pub mod pfcp;
pub mod run;
