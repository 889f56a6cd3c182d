//! Scout's sans-IO model of the 5G user plane.
//!
//! The model holds no clock, socket, thread or file. Every entity takes `now` (ns since the run's
//! epoch) and returns what it emits; [`stack::Stack`] wires the entities into one cell with its UEs,
//! CU-UP, DU and a UPF per slice, and tells its driver when it next needs to run
//! ([`stack::Stack::poll_timeout`]). The simulator (`scout-sim`) drives it on a virtual clock; an
//! emulator can drive the same code on the wall clock. Every checkpoint is reported through one
//! [`scout_events::Sink`]. What is implemented, with its 3GPP clause, is listed in `docs/model.md`.

pub mod config;
pub mod control;
pub mod executor;
pub mod f1u;
pub mod mac;
pub mod packet;
pub mod pdcp;
pub mod phy;
pub mod rlc;
pub mod rng;
pub mod stack;

/// A point in model time: nanoseconds since the run's epoch.
pub type Instant = i64;
