//! Scout's attribution kernel: a run's packet events in, `journeys`, `components`, `layer_delays`,
//! `profiles`, `sojourns` and `queues` out (`RUN/analysis/*.parquet`), and `tti` from its slot
//! events ([`tti`]).
//!
//! These four tables order every packet's events, which a database does with a window partitioned
//! by packet — a sort of all events, 12–15 M events/s on two cores however it is phrased. Here the
//! events are grouped by packet with a counting sort and each packet walked once, by the rules of
//! docs/attribution.md; the relational engine (`python/scout/analysis/engine.py`, Ibis) computes
//! the same tables from the same rules and is the reference: the Python tests compare the two on
//! every built-in scenario. Everything else of the analysis stays relational.
//!
//! Threads: reading splits the row groups in two; the three per-packet tables are encoded on a
//! writer thread while the walk goes on; the profile scopes are computed two at a time; `tti` is
//! written by a thread of its own at the lowest priority (in one pass only).

pub mod codes;
pub mod dicts;
pub mod journey;
pub mod mem;
pub mod profile;
pub mod queues;
pub mod read;
pub mod sojourn;
pub mod spill;
mod table;
pub mod tti;
mod write;

use std::path::{Path, PathBuf};

pub use write::Options;

/// Errors, each naming the file (and column) concerned.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a readable Parquet file: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: column {column}: {problem}")]
    Column { path: PathBuf, column: String, problem: String },
    #[error("{path}: t_ns = {t} is 2^52 ns (about 52 days) or more after its packet's first event; the attribution orders a packet's events within that span")]
    Range { path: PathBuf, t: i64 },
    #[error(transparent)]
    Write(#[from] scout_events::writer::WriteError),
    /// [`Stop::stop`] was called (Ctrl-C): nothing written is complete.
    #[error("interrupted")]
    Interrupted,
}

/// Asks a running analysis to stop: it returns [`Error::Interrupted`] at its next check (every
/// 64 Ki rows read, every walk chunk, every stage), within milliseconds.
#[derive(Clone, Debug, Default)]
pub struct Stop(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Stop {
    pub fn stop(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn check(&self) -> Result<(), Error> {
        if self.0.load(std::sync::atomic::Ordering::Relaxed) {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}

impl Error {
    fn parquet(path: &Path, e: impl std::fmt::Display) -> Error {
        Error::Parquet { path: path.to_path_buf(), message: e.to_string() }
    }
}

pub use write::{analyze, Summary};
