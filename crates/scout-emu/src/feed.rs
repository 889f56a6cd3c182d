//! The UE's view, live (docs/ue-view.md): what a phone's diagnostics would tell its applications
//! — HARQ transmissions and their outcome, retransmission events, BSRs, SRs, grants, RLC status
//! reports and polls, ANBR — streamed during an emulation, as CellNinjia streams a modem's
//! diagnostic messages (seed 004 §4.2).
//!
//! One Unix stream socket per UE (`feed/ue{i}.sock` in the run directory, or under `/run` when
//! that path is too long for a socket address); an application in the UE's namespace finds its
//! own in `$SCOUT_FEED`. Any number of subscribers connect; each receives, from when it connects,
//! one JSON object per line per event of that UE, in the model's order, each with `seq` (per UE,
//! from 0: a gap is an event this subscriber missed). Writes never block the emulator: a
//! subscriber that does not read keeps up to [`BACKLOG_BYTES`] waiting, and the events beyond
//! that are dropped for it and counted (`run.json` `emulator.feed`).
//!
//! The socket sees the filesystem, not the network: network namespaces do not separate
//! path-named Unix sockets, so the emulator (in the root namespace) serves them and the UE's
//! applications connect from theirs.

use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use scout_events::{ControlEvent, ControlKind, Dir, SlotEvent};
use serde_json::{json, Value};

/// Most bytes kept for a subscriber that is not reading.
pub const BACKLOG_BYTES: usize = 4 << 20;

/// The control kinds a UE's feed carries (with the HARQ rows of `slot_events`, kind `harq`).
pub const KINDS: &[ControlKind] = &[
    ControlKind::Bsr,
    ControlKind::Sr,
    ControlKind::Grant,
    ControlKind::RlcStatus,
    ControlKind::Poll,
    ControlKind::HarqFail,
    ControlKind::RetxEvent,
    ControlKind::Anbr,
    ControlKind::AnbrQuery,
    ControlKind::AppRtt,
];

/// How often the sockets are asked for new subscribers, at most: `accept(2)` builds a socket
/// before it finds none waiting (some 5 µs here), which at every turn of a busy loop was 7 % of
/// the data path's core. A subscriber's hello is at most this late.
const ACCEPT_EVERY_NS: i64 = 5_000_000;

/// Longest socket path (`sun_path` holds 108 bytes with its NUL).
const MAX_PATH: usize = 100;

/// The directory of a run's feed sockets: `RUN/feed`, or `/run/scout-feed-PID` when a socket
/// path there would be too long.
pub fn dir(run: &Path) -> PathBuf {
    let here = run.join("feed");
    if here.join("ue9999.sock").as_os_str().len() <= MAX_PATH {
        here
    } else {
        PathBuf::from(format!("/run/scout-feed-{}", std::process::id()))
    }
}

/// UE `ue`'s feed socket.
pub fn socket(run: &Path, ue: u32) -> PathBuf {
    dir(run).join(format!("ue{ue}.sock"))
}

struct Subscriber {
    stream: UnixStream,
    /// Bytes waiting to be written, and how far they were.
    out: Vec<u8>,
    at: usize,
}

struct UeFeed {
    listener: UnixListener,
    path: PathBuf,
    subs: Vec<Subscriber>,
    seq: u64,
}

/// The feeds of every UE of an emulation.
pub struct Feed {
    dir: PathBuf,
    ues: Vec<UeFeed>,
    /// Totals for `run.json`: subscribers that connected, events and bytes written to them,
    /// events dropped for a subscriber that was not reading.
    connected: u64,
    events: u64,
    bytes: u64,
    dropped: u64,
    /// Whether anyone listens (formatting costs nothing otherwise).
    any: bool,
    /// `CLOCK_MONOTONIC` at the emulation's time 0.
    t0: i64,
    /// When the sockets are next asked for new subscribers (emulator time).
    next_accept: i64,
    /// The cell as the UE's RRC configuration tells it (`Stack::describe`).
    cell: Value,
}

impl Feed {
    /// Binds the sockets of `n` UEs for the run in `run` (world-connectable: applications may run
    /// as any user).
    pub fn open(run: &Path, n: u32) -> std::io::Result<Feed> {
        let dir = dir(run);
        std::fs::create_dir_all(&dir)?;
        let mut ues = Vec::new();
        for i in 0..n {
            let path = socket(run, i);
            let _ = std::fs::remove_file(&path);
            let listener = UnixListener::bind(&path)?;
            listener.set_nonblocking(true)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
            ues.push(UeFeed { listener, path, subs: Vec::new(), seq: 0 });
        }
        Ok(Feed {
            dir,
            ues,
            connected: 0,
            events: 0,
            bytes: 0,
            dropped: 0,
            any: false,
            t0: 0,
            next_accept: 0,
            cell: Value::Null,
        })
    }

    /// The emulation's clock starts at `CLOCK_MONOTONIC` `t0` ns, in the cell `cell`
    /// (`Stack::describe`: PRBs, slot length, TDD pattern, SR period, BSR timers). Each
    /// subscriber's first line says both (`{"kind": "hello", "ue": i, "t0_monotonic_ns": t0,
    /// "cell": {...}, "next_seq": n}`), so that it can tell how late an event reaches it (`t_ns`
    /// is on the emulation's clock) and what the UE's configuration is, as a phone's RRC
    /// messages tell its diagnostics.
    pub fn start(&mut self, t0: i64, cell: &str) {
        self.t0 = t0;
        self.cell = serde_json::from_str(cell).unwrap_or(Value::Null);
    }

    /// The sockets, UE by UE.
    pub fn paths(&self) -> Vec<String> {
        self.ues.iter().map(|u| u.path.display().to_string()).collect()
    }

    /// Takes in new subscribers (every [`ACCEPT_EVERY_NS`] of emulator time `now`) and writes what
    /// waits (each loop turn).
    pub fn poll(&mut self, now: i64) {
        let accept = now >= self.next_accept;
        if accept {
            self.next_accept = now + ACCEPT_EVERY_NS;
        }
        for (i, u) in self.ues.iter_mut().enumerate() {
            while let Some(Ok((stream, _))) = accept.then(|| u.listener.accept()) {
                if stream.set_nonblocking(true).is_ok() {
                    let hello = json!({
                        "kind": "hello", "ue": i, "t0_monotonic_ns": self.t0, "cell": self.cell, "next_seq": u.seq,
                    });
                    u.subs.push(Subscriber { stream, out: format!("{hello}\n").into_bytes(), at: 0 });
                    self.connected += 1;
                }
            }
            u.subs.retain_mut(|s| {
                while s.at < s.out.len() {
                    match s.stream.write(&s.out[s.at..]) {
                        Ok(0) => return false,
                        Ok(n) => s.at += n,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => return false, // it hung up
                    }
                }
                if s.at == s.out.len() {
                    s.out.clear();
                    s.at = 0;
                }
                true
            });
        }
        self.any = self.ues.iter().any(|u| !u.subs.is_empty());
    }

    /// A HARQ transmission's row (`slot_events` with a UE).
    pub fn slot(&mut self, ev: &SlotEvent) {
        let Some(ue) = ev.ue.filter(|_| self.any) else { return };
        let v = json!({
            "t_ns": ev.t_ns, "kind": "harq", "dir": dir_name(ev.dir), "slot": ev.slot, "sfn": ev.sfn,
            "slot_in_frame": ev.slot_in_frame, "harq_id": ev.harq_id, "ndi": ev.ndi, "rv": ev.rv,
            "retx_index": ev.retx_index, "ack": ev.ack, "mcs": ev.mcs, "tbs": ev.tbs, "prbs": ev.prbs,
            "bsr_bytes": ev.bsr_bytes,
        });
        self.push(ue, v);
    }

    /// A control row of one of [`KINDS`] for a UE.
    pub fn control(&mut self, ev: &ControlEvent) {
        let Some(ue) = ev.ue.filter(|_| self.any && KINDS.contains(&ev.kind)) else { return };
        let mut v =
            json!({"t_ns": ev.t_ns, "kind": ev.kind.as_str(), "node": ev.node.as_str(), "layer": ev.layer.as_str()});
        if let Some(d) = ev.dir {
            v["dir"] = dir_name(d).into();
        }
        if let Some(d) = ev.drb {
            v["drb"] = d.into();
        }
        if let Some(s) = ev.sn {
            v["sn"] = s.into();
        }
        if let Some(x) = ev.value {
            v["value"] = x.into();
        }
        if let Some(d) = ev.detail.as_deref().and_then(|d| serde_json::from_str::<Value>(d).ok()) {
            v["detail"] = d;
        }
        self.push(ue, v);
    }

    fn push(&mut self, ue: u32, mut v: Value) {
        let Some(u) = self.ues.get_mut(ue as usize) else { return };
        if u.subs.is_empty() {
            return;
        }
        v["seq"] = u.seq.into();
        u.seq += 1;
        let mut line = v.to_string();
        line.push('\n');
        for s in &mut u.subs {
            if s.out.len() - s.at + line.len() > BACKLOG_BYTES {
                self.dropped += 1;
                continue;
            }
            s.out.extend_from_slice(line.as_bytes());
            self.events += 1;
            self.bytes += line.len() as u64;
        }
    }

    /// Writes what waits (as far as the subscribers take it now), closes the sockets, removes
    /// them; the totals for `run.json`.
    pub fn close(mut self) -> Value {
        self.poll(i64::MIN);
        for u in &self.ues {
            let _ = std::fs::remove_file(&u.path);
        }
        let _ = std::fs::remove_dir(&self.dir);
        json!({
            "sockets": self.paths(), "subscribers": self.connected, "events": self.events,
            "bytes": self.bytes, "dropped": self.dropped, "backlog_bytes": BACKLOG_BYTES,
        })
    }
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Dl => "dl",
        Dir::Ul => "ul",
    }
}
