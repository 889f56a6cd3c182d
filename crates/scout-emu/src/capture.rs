//! Captures of the real UPFs' N3, N6 and N4 during an emulation (`scout emulate --capture`), as
//! a testbed's `tcpdump -i IF -w FILE` would take them: an `AF_PACKET` socket per interface, in
//! its namespace, every frame in both directions with the kernel's timestamp (`SO_TIMESTAMPNS`,
//! `CLOCK_REALTIME`), written as classic pcap with nanosecond timestamps (magic `0xa1b23c4d`,
//! link type 1, Ethernet) — for `scout ingest pcap`. What the kernel could not queue for the
//! socket is counted (`PACKET_STATISTICS`), never lost silently.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use serde_json::{json, Value};

use crate::EmuError;

/// The longest frame kept (Wireshark's `WTAP_MAX_PACKET_SIZE_STANDARD`).
const SNAPLEN: usize = 262_144;

/// One interface to capture: its namespace, its name, and the file to write.
#[derive(Clone, Debug)]
pub struct Point {
    pub ns: String,
    pub iface: String,
    pub file: PathBuf,
}

struct Open {
    point: Point,
    sock: OwnedFd,
    out: BufWriter<File>,
    frames: u64,
    bytes: u64,
}

/// The capture's thread, running.
pub struct Capture {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Value>>,
}

fn err(what: impl Into<String>, e: impl std::fmt::Display) -> EmuError {
    EmuError::Setup { what: what.into(), message: e.to_string() }
}

/// An `AF_PACKET` socket on `iface` of the namespace it is made in (`scout_probe::packet_socket`),
/// with room for the bursts between two reads.
fn packet_socket(iface: &str) -> io::Result<OwnedFd> {
    let sock = scout_probe::packet_socket(iface)?;
    let v: libc::c_int = 32 << 20;
    // SAFETY: setsockopt(2) with a pointer to an int and its size.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(sock)
}

/// One frame from `fd` into `buf`, non-blocking: its length on the wire, the bytes kept and
/// its timestamp (ns since the epoch; the clock's now if the kernel gave none); `None` when none
/// waits.
fn recv(fd: libc::c_int, buf: &mut [u8]) -> Option<(usize, usize, i64)> {
    let flags = libc::MSG_DONTWAIT | libc::MSG_TRUNC;
    let (wire, t) = scout_probe::recv_timestamped(fd, buf, flags, libc::SCM_TIMESTAMPNS)?;
    let t = t.unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        now.as_nanos() as i64
    });
    Some((wire, wire.min(buf.len()), t))
}

/// The kernel's count of frames it dropped for `fd` (its queue was full), since the last call.
fn drops(fd: libc::c_int) -> u64 {
    let mut st = [0u32; 2]; // struct tpacket_stats { tp_packets, tp_drops }
    let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
    // SAFETY: getsockopt(2) writes at most `len` bytes into `st`.
    let r =
        unsafe { libc::getsockopt(fd, libc::SOL_PACKET, libc::PACKET_STATISTICS, st.as_mut_ptr().cast(), &mut len) };
    if r < 0 {
        0
    } else {
        u64::from(st[1])
    }
}

impl Capture {
    /// Opens every point (each socket in its namespace) and starts writing.
    pub fn start(points: Vec<Point>) -> Result<Capture, EmuError> {
        let mut open = Vec::new();
        for p in points {
            let iface = p.iface.clone();
            let sock = crate::upf::in_ns(&p.ns, move || packet_socket(&iface))
                .map_err(|e| err(format!("capture on {}:{}", p.ns, p.iface), e))?;
            if let Some(dir) = p.file.parent() {
                std::fs::create_dir_all(dir).map_err(|e| err(format!("{}", dir.display()), e))?;
            }
            let f = File::create(&p.file).map_err(|e| err(format!("{}", p.file.display()), e))?;
            let mut out = BufWriter::with_capacity(1 << 20, f);
            // The pcap header: nanosecond magic, version 2.4, no zone, snaplen, Ethernet.
            let mut h = Vec::with_capacity(24);
            h.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
            h.extend_from_slice(&2u16.to_le_bytes());
            h.extend_from_slice(&4u16.to_le_bytes());
            h.extend_from_slice(&[0; 8]);
            h.extend_from_slice(&(SNAPLEN as u32).to_le_bytes());
            h.extend_from_slice(&1u32.to_le_bytes());
            out.write_all(&h).map_err(|e| err(format!("{}", p.file.display()), e))?;
            open.push(Open { point: p, sock, out, frames: 0, bytes: 0 });
        }
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("scout-capture".into())
            .spawn(move || run(open, &s2))
            .map_err(|e| err("the capture's thread", e))?;
        Ok(Capture { stop, thread })
    }

    /// Stops (after reading what waits) and reports each file: frames, bytes, frames the kernel
    /// dropped, and a write error if there was one.
    pub fn finish(self) -> Value {
        self.stop.store(true, Ordering::Relaxed);
        Value::Array(self.thread.join().unwrap_or_default())
    }
}

fn run(mut open: Vec<Open>, stop: &AtomicBool) -> Vec<Value> {
    let mut buf = vec![0u8; SNAPLEN];
    let mut fds: Vec<libc::pollfd> =
        open.iter().map(|o| libc::pollfd { fd: o.sock.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let mut errors: Vec<Option<String>> = vec![None; open.len()];
    let mut dropped = vec![0u64; open.len()];
    loop {
        let last = stop.load(Ordering::Relaxed);
        // SAFETY: poll(2) on our descriptors, 50 ms at most.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        for (k, o) in open.iter_mut().enumerate() {
            while let Some((wire, kept, t)) = recv(o.sock.as_raw_fd(), &mut buf) {
                if errors[k].is_some() {
                    continue;
                }
                let mut rec = Vec::with_capacity(16);
                rec.extend_from_slice(&((t / 1_000_000_000) as u32).to_le_bytes());
                rec.extend_from_slice(&((t % 1_000_000_000) as u32).to_le_bytes());
                rec.extend_from_slice(&(kept as u32).to_le_bytes());
                rec.extend_from_slice(&(wire as u32).to_le_bytes());
                if let Err(e) = o.out.write_all(&rec).and_then(|_| o.out.write_all(&buf[..kept])) {
                    errors[k] = Some(format!("{}: {e}", o.point.file.display()));
                }
                o.frames += 1;
                o.bytes += wire as u64;
            }
            dropped[k] += drops(o.sock.as_raw_fd());
        }
        if last {
            break;
        }
    }
    open.into_iter()
        .enumerate()
        .map(|(k, mut o)| {
            if let Err(e) = o.out.flush() {
                errors[k].get_or_insert(format!("{}: {e}", o.point.file.display()));
            }
            json!({
                "namespace": o.point.ns, "interface": o.point.iface, "file": o.point.file,
                "frames": o.frames, "bytes": o.bytes, "dropped_by_kernel": dropped[k], "error": errors[k],
            })
        })
        .collect()
}
