//! A subscription to a UE's live feed (`crate::feed`) from Rust — what `scout.feed` is to Python.
//! An application in the UE's namespace connects to `$SCOUT_FEED` and, each time it is about to
//! use a packet, takes in every event that waits ([`FeedClient::poll`], non-blocking). The
//! emulator writes a turn's events to the feed before it writes that turn's packets to the
//! devices, so the events that released a packet are there by the time the packet is read.

use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

/// One subscriber's connection to a UE's feed.
pub struct FeedClient {
    stream: UnixStream,
    buf: Vec<u8>,
    /// `CLOCK_MONOTONIC` at the emulation's time 0, and the cell (`Stack::describe`), from the
    /// first line.
    pub t0_monotonic_ns: Option<i64>,
    pub cell: Value,
    /// Events this subscriber did not get (gaps in `seq`), and events taken in.
    pub missed: u64,
    pub events: u64,
    next_seq: Option<u64>,
    /// Events read while waiting for the first line, handed out by the next [`FeedClient::poll`].
    pending: Vec<Value>,
}

impl FeedClient {
    /// The feed socket of the UE this process runs in: `$SCOUT_FEED`.
    pub fn from_env() -> Option<PathBuf> {
        std::env::var_os("SCOUT_FEED").map(PathBuf::from)
    }

    /// Connects to the feed at `path`, trying for up to `timeout` (the emulator may still be
    /// starting), and waits as long for its first line.
    pub fn connect(path: &Path, timeout: Duration) -> std::io::Result<FeedClient> {
        let deadline = Instant::now() + timeout;
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e)
                    if Instant::now() < deadline
                        && matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(std::io::Error::new(
                        e.kind(),
                        format!("{}: no emulation serves this feed ({e})", path.display()),
                    ))
                }
            }
        };
        stream.set_nonblocking(true)?;
        let mut c = FeedClient {
            stream,
            buf: Vec::new(),
            t0_monotonic_ns: None,
            cell: Value::Null,
            missed: 0,
            events: 0,
            next_seq: None,
            pending: Vec::new(),
        };
        while c.t0_monotonic_ns.is_none() {
            let early = c.poll()?;
            c.pending.extend(early);
            if Instant::now() >= deadline {
                return Err(std::io::Error::new(
                    ErrorKind::TimedOut,
                    format!("{}: the feed sent no hello", path.display()),
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(c)
    }

    /// Every event waiting now, in order (none when nothing waits). The hello line is taken in,
    /// not returned.
    pub fn poll(&mut self) -> std::io::Result<Vec<Value>> {
        let mut chunk = [0u8; 65536];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => break, // the emulation ended
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let mut out = std::mem::take(&mut self.pending);
        let mut start = 0;
        while let Some(nl) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let line = &self.buf[start..start + nl];
            start += nl + 1;
            let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
            if v["kind"] == "hello" {
                self.t0_monotonic_ns = v["t0_monotonic_ns"].as_i64();
                self.cell = v["cell"].clone();
                self.next_seq = v["next_seq"].as_u64();
                continue;
            }
            if let Some(seq) = v["seq"].as_u64() {
                self.missed += seq.saturating_sub(self.next_seq.unwrap_or(seq));
                self.next_seq = Some(seq + 1);
            }
            self.events += 1;
            out.push(v);
        }
        self.buf.drain(..start);
        Ok(out)
    }

    /// An event's time (`t_ns`, the emulation's clock) on `CLOCK_MONOTONIC`.
    pub fn monotonic(&self, ev: &Value) -> Option<i64> {
        Some(self.t0_monotonic_ns? + ev["t_ns"].as_i64()?)
    }
}
