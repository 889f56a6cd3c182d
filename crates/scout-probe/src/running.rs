//! The probe running in a thread of its own while its caller goes on (the emulator's `--probe`,
//! the tests): [`Running::start`] returns once every program is attached.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// The probe running in a thread of its own (`scout_probe::run`), attached.
pub struct Running {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<serde_json::Value, crate::ProbeError>>,
}

impl Running {
    /// Starts the probe with `opts`, writing its run to `out`, and returns once every program is
    /// attached; the probe's own error if it stops before, or after 60 s of waiting.
    pub fn start(opts: crate::Options, out: std::path::PathBuf) -> Result<Running, crate::ProbeError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (attached_tx, attached_rx) = mpsc::channel();
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut tx = Some(attached_tx);
                crate::run(&opts, &out, &stop, &mut |p| {
                    if let (true, Some(t)) = (p.attached, tx.take()) {
                        let _ = t.send(());
                    }
                })
            })
        };
        let running = Running { stop, thread };
        match attached_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(()) => Ok(running),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(running
                .finish()
                .err()
                .unwrap_or_else(|| crate::ProbeError::Usage("the probe stopped before it attached".into()))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                running.stop.store(true, Ordering::Relaxed);
                Err(crate::ProbeError::Usage("the probe did not attach within 60 s".into()))
            }
        }
    }

    /// Stops the probe and returns what `scout_probe::run` returned (the run's metadata).
    pub fn finish(self) -> Result<serde_json::Value, crate::ProbeError> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the probe's thread panicked")
    }
}
