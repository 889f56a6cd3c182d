//! Scout's live view (`--live` on `scout emulate`, `scout probe` and `scout simulate`).
//!
//! [`Aggregator`] is a [`scout_events::tap::Tap`]: the run writer shows it every batch of events on
//! its own thread, so the producer (the emulator's real-time loop) pays only a clock reading every
//! few events (`scout_events::writer::TAP_CHECK_ROWS`). It keeps, in
//! bounded memory, what the page and Prometheus show: per queue the occupancy the events carry and
//! the sojourn from `enqueue` to leaving (the analysis's `sojourns` rule), per layer the time
//! between a packet's consecutive checkpoints, drops, per-UE throughput and application RTT — as
//! totals since the start (Prometheus counters and histograms) and as a window of the latest
//! bins of event time (the page's charts). [`Server`] serves both over HTTP on one port: `/` (the
//! page), `/live.json` (what it polls) and `/metrics` (Prometheus text format 0.0.4).
//!
//! What it is not: the exact attribution. `scout analyze` on the finished run attributes every
//! nanosecond to a layer and component; the live layer times are the telescoping split of each
//! packet's journey between its checkpoints (they add up to the packet's span, but a segmented
//! packet's interleaved segments are split in event order, not by the analysis's rules).

mod aggregate;
mod metrics;
mod server;

pub use aggregate::{Aggregator, Limits};
pub use server::Server;
