//! PFCP (N4) captured live on an interface, in its network namespace, and paired as
//! `scout ingest pcap` pairs it from captures (`scout_ingest::pcap::pfcp`, reading each message with `scout_wire::pfcp::session`): an AF_PACKET socket
//! receives every frame with the kernel's receive timestamp; UDP to or from port 8805 is decoded.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use scout_ingest::pcap::pfcp::Tracker;
use scout_wire::ip as wire;
use scout_wire::pfcp::{session, PFCP_PORT};

use crate::{InNetns, ProbeError, Side};

/// Frames seen and why some were not PFCP messages.
#[derive(Default)]
pub struct Capture {
    pub tracker: Tracker,
    pub frames: u64,
    pub undecodable: u64,
}

/// Starts capturing on `side` until `stop`; the returned thread gives the tracker (times are
/// CLOCK_REALTIME ns; unanswered requests are timed from `epoch_ns`).
pub fn start(
    side: &Side,
    stop: Arc<AtomicBool>,
    epoch_ns: i64,
) -> Result<JoinHandle<Result<Capture, ProbeError>>, ProbeError> {
    let side = side.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let io = |what: String| move |source| ProbeError::Io { what, source };
        let _ns = match InNetns::enter(side.netns.as_deref()) {
            Ok(g) => g,
            Err(e) => {
                let _ = tx.send(Err(e.to_string()));
                return Err(ProbeError::Usage(format!("--pfcp {side}")));
            }
        };
        // Every frame on the interface, timestamped (`crate::packet_socket`).
        let fd = match crate::packet_socket(&side.iface) {
            Ok(fd) => fd,
            Err(e) => {
                let _ = tx.send(Err(format!("--pfcp {side}: interface {}: {e}", side.iface)));
                return Err(io(format!("--pfcp {side}"))(e));
            }
        };
        let tv = libc::timeval { tv_sec: 0, tv_usec: 100_000 };
        // SAFETY: setsockopt(2) with a pointer to a timeval and its size: a 100 ms receive timeout.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        let _ = tx.send(Ok(()));
        let mut cap = Capture::default();
        let mut buf = vec![0u8; 65536];
        while !stop.load(Ordering::Relaxed) {
            let Some((n, t)) = crate::recv_timestamped(fd.as_raw_fd(), &mut buf, 0, libc::SO_TIMESTAMPNS) else {
                continue;
            };
            if n == 0 {
                continue;
            }
            let t = t.unwrap_or(0);
            cap.frames += 1;
            let Ok((et, l3, _, _)) = wire::link(1, &buf[..n]) else { continue };
            let Ok(ip) = wire::ip(et, l3) else { continue };
            let Some((sp, dp)) = wire::ports(&ip) else { continue };
            if ip.proto != 17 || (sp != PFCP_PORT && dp != PFCP_PORT) || ip.l4.len() < 8 {
                continue;
            }
            match session::parse(&ip.l4[8..]) {
                Ok(m) => cap.tracker.message(t, (ip.src, sp).into(), (ip.dst, dp).into(), &m),
                Err(_) => cap.undecodable += 1,
            }
        }
        cap.tracker.finish(epoch_ns);
        Ok(cap)
    });
    match rx.recv() {
        Ok(Ok(())) => Ok(h),
        Ok(Err(msg)) => {
            let _ = h.join();
            Err(ProbeError::Usage(msg))
        }
        Err(_) => Err(ProbeError::Usage("--pfcp: the capture thread ended".into())),
    }
}
