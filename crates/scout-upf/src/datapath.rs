//! The UPF's data path and N4 endpoint as threads, the way a software UPF is built: a receiver
//! per interface hands packets to a forwarding worker per direction through a bounded queue, so
//! a packet's time in the UPF is real — it waits behind the packets before it, and grows with
//! load and with what else the machine runs.
//!
//! ```text
//!  N3 (UDP 2152) ─ n3-rx ─▶ [queue] ─ uplink worker ─ decapsulate, PDR/FAR ─▶ N6 device
//!  N6 device ─ n6-rx ─▶ [queue] ─ downlink worker ─ PDR/FAR/QER, encapsulate ─▶ N3 (gNB)
//!  N4 (UDP 8805) ─ n4 ─ rules::Node ─ compiled Table, swapped in for the workers
//! ```
//!
//! The N6 device is the UPF's side of the data network (a TUN device whose routes the process
//! sets up: `scout-upf`); IPv4 only, as the PFCP module. Every packet that is not forwarded is
//! counted by reason ([`Counters`]); nothing is buffered (a FAR that says BUFF drops and counts).

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::rules::{Node, Table};
use scout_wire::gtpu::{self, GTPU_ECHO_REQUEST, GTPU_G_PDU, GTPU_PORT};
use scout_wire::pfcp::{self, Action};

/// The data network's side: one IP packet per read and write, reads non-blocking.
pub trait Device: Send + Sync + 'static {
    /// One packet into `buf`; `None` when none is waiting.
    fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// One packet; `false` when the device's queue is full.
    fn write(&self, pkt: &[u8]) -> io::Result<bool>;
    /// For `poll(2)`.
    fn raw_fd(&self) -> RawFd;
}

/// How often the threads look at the stop flag when idle.
const IDLE: Duration = Duration::from_millis(100);

macro_rules! counters {
    ($($name:ident: $doc:literal),* $(,)?) => {
        /// What the UPF did with every datagram and packet it received.
        #[derive(Default)]
        pub struct Counters { $(#[doc = $doc] pub $name: AtomicU64,)* }
        impl Counters {
            /// Every counter by name.
            pub fn all(&self) -> Vec<(&'static str, u64)> {
                vec![$((stringify!($name), self.$name.load(Ordering::Relaxed)),)*]
            }
        }
    };
}

counters! {
    n3_rx: "datagrams received on N3",
    n3_unread_at_stop: "datagrams for N3 still waiting in its socket when the UPF stopped (read then, not forwarded)",
    n3_socket_drops: "datagrams for N3 the kernel dropped before the UPF read them (its socket's receive buffer full while the UPF was kept from its CPU): the socket's `drops` in /proc/net/udp, read when the UPF stops",
    ul_forwarded: "uplink packets decapsulated and sent to N6",
    ul_no_rule: "G-PDUs whose TEID, UE address or QFI no PDR matches",
    ul_far_drop: "uplink packets a FAR drops (or says to buffer)",
    ul_queue_full: "datagrams dropped because the uplink worker's queue was full",
    ul_malformed: "datagrams on N3 that are not GTP-U, or G-PDUs without an IPv4 packet",
    ul_device_full: "uplink packets the N6 device refused (its queue full)",
    gtpu_echo: "GTP-U echo requests answered",
    gtpu_other: "GTP-U messages other than G-PDUs and echo requests (not handled)",
    n6_rx: "packets read from N6",
    dl_forwarded: "downlink packets encapsulated and sent to the gNB",
    dl_no_rule: "downlink packets to an address no PDR matches",
    dl_far_drop: "downlink packets a FAR drops",
    dl_not_buffered: "downlink packets a FAR says to buffer (Scout's UPF does not buffer: dropped)",
    dl_no_tunnel: "downlink packets a FAR forwards without a tunnel to put them in",
    dl_queue_full: "packets dropped because the downlink worker's queue was full",
    dl_not_ipv4: "packets on N6 that are not IPv4",
    n4_rx: "PFCP datagrams received",
    n4_undecodable: "PFCP datagrams that could not be read (the reason goes to stderr, once)",
    n4_answered: "PFCP requests answered",
    table_updates: "times the rules changed and the data path took the new table",
}

/// A running UPF.
pub struct Upf {
    stop: Arc<AtomicBool>,
    /// The N3 socket (a handle of it), to count what is left in it at the stop, and its inode,
    /// to find its drops in /proc/net/udp.
    n3: UdpSocket,
    n3_inode: Option<u64>,
    threads: Vec<JoinHandle<()>>,
    pub counters: Arc<Counters>,
    pub node: Arc<RwLock<Node>>,
}

type Item = (Vec<u8>, SocketAddr);

impl Upf {
    /// Starts the threads: N3 and N4 are bound sockets, `n6` the data network's device, `queue`
    /// the depth of each worker's queue in packets.
    pub fn start(n3: UdpSocket, n4: UdpSocket, n6: Arc<dyn Device>, node: Node, queue: usize) -> io::Result<Upf> {
        let stop = Arc::new(AtomicBool::new(false));
        let c = Arc::new(Counters::default());
        let table = Arc::new(RwLock::new(Arc::new(node.table())));
        let node = Arc::new(RwLock::new(node));
        for s in [&n3, &n4] {
            s.set_read_timeout(Some(IDLE))?;
        }
        let n3_inode = socket_inode(&n3);
        let n3_left = n3.try_clone()?;
        let (ul_tx, ul_rx) = sync_channel::<Item>(queue.max(1));
        let (dl_tx, dl_rx) = sync_channel::<Item>(queue.max(1));
        let n3_out = n3.try_clone()?;
        let n3_echo = n3.try_clone()?;
        let mut threads = Vec::new();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| std::thread::Builder::new().name(name.into()).spawn(f);
        {
            let (stop, c) = (stop.clone(), c.clone());
            threads.push(spawn("upf-n3-rx", Box::new(move || n3_rx(&n3, &ul_tx, &stop, &c)))?);
        }
        {
            let (stop, c, t, n6) = (stop.clone(), c.clone(), table.clone(), n6.clone());
            threads.push(spawn("upf-ul", Box::new(move || uplink(&ul_rx, &*n6, &n3_echo, &t, &stop, &c)))?);
        }
        {
            let (stop, c, n6) = (stop.clone(), c.clone(), n6.clone());
            threads.push(spawn("upf-n6-rx", Box::new(move || n6_rx(&*n6, &dl_tx, &stop, &c)))?);
        }
        {
            let (stop, c, t) = (stop.clone(), c.clone(), table.clone());
            threads.push(spawn("upf-dl", Box::new(move || downlink(&dl_rx, &n3_out, &t, &stop, &c)))?);
        }
        {
            let (stop, c, t, node) = (stop.clone(), c.clone(), table.clone(), node.clone());
            threads.push(spawn("upf-n4", Box::new(move || n4_loop(&n4, &node, &t, &stop, &c)))?);
        }
        Ok(Upf { stop, n3: n3_left, n3_inode, threads, counters: c, node })
    }

    /// Stops every thread (within [`IDLE`]) and waits for them; then counts what the N3 socket
    /// dropped.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // What arrived and was not read: counted, as the kernel would discard it with the socket.
        let mut buf = vec![0u8; 65_536];
        if self.n3.set_nonblocking(true).is_ok() {
            while self.n3.recv(&mut buf).is_ok() {
                bump(&self.counters.n3_unread_at_stop);
            }
        }
        let udp = std::fs::read_to_string("/proc/self/net/udp").unwrap_or_default();
        match self.n3_inode.and_then(|i| udp_drops(&udp, i)) {
            Some(d) => self.counters.n3_socket_drops.store(d, Ordering::Relaxed),
            None => eprintln!("scout-upf: N3's socket is not in /proc/self/net/udp: n3_socket_drops not counted"),
        }
    }
}

fn socket_inode(s: &UdpSocket) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstat writes into the zeroed struct it is given; the fd is the socket's, open.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(s.as_raw_fd(), &mut st) } == 0).then_some(st.st_ino)
}

/// The `drops` column of the socket with `inode` in a /proc/net/udp table (the kernel's
/// `sk_drops`: datagrams it could not queue to the socket), if it is there.
fn udp_drops(table: &str, inode: u64) -> Option<u64> {
    // sl local rem st tx:rx tr:tm retrnsmt uid timeout inode ref pointer drops
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 13 && f[9].parse() == Ok(inode)).then(|| f[12].parse().ok()).flatten()
    })
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn idle(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted)
}

fn n3_rx(sock: &UdpSocket, q: &SyncSender<Item>, stop: &AtomicBool, c: &Counters) {
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                bump(&c.n3_rx);
                if let Err(TrySendError::Full(_)) = q.try_send((buf[..n].to_vec(), from)) {
                    bump(&c.ul_queue_full);
                }
            }
            Err(e) if idle(&e) => {}
            Err(e) => return eprintln!("scout-upf: N3: {e}"),
        }
    }
}

/// The IPv4 source and destination of `p`, if it is an IPv4 packet.
fn ipv4(p: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr)> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return None;
    }
    Some((Ipv4Addr::new(p[12], p[13], p[14], p[15]), Ipv4Addr::new(p[16], p[17], p[18], p[19])))
}

fn uplink(
    q: &Receiver<Item>,
    n6: &dyn Device,
    n3: &UdpSocket,
    table: &RwLock<Arc<Table>>,
    stop: &AtomicBool,
    c: &Counters,
) {
    while !stop.load(Ordering::Relaxed) {
        let (d, from) = match q.recv_timeout(IDLE) {
            Ok(x) => x,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let Ok(g) = gtpu::decode(&d) else {
            bump(&c.ul_malformed);
            continue;
        };
        match g.msg_type {
            GTPU_G_PDU => {}
            GTPU_ECHO_REQUEST => {
                bump(&c.gtpu_echo);
                let _ = n3.send_to(&gtpu::echo_response(g.seq), from);
                continue;
            }
            _ => {
                bump(&c.gtpu_other);
                continue;
            }
        }
        let Some((src, _)) = ipv4(g.payload) else {
            bump(&c.ul_malformed);
            continue;
        };
        let rule = table.read().expect("table lock").uplink.get(&g.teid).copied();
        let rule = rule.filter(|r| r.ue_addr.is_none_or(|a| a == src) && r.qfi.is_none_or(|q| Some(q) == g.qfi));
        match rule.map(|r| r.action) {
            None => bump(&c.ul_no_rule),
            Some(Action::Forward) => match n6.write(g.payload) {
                Ok(true) => bump(&c.ul_forwarded),
                Ok(false) => bump(&c.ul_device_full),
                Err(e) => return eprintln!("scout-upf: N6: {e}"),
            },
            Some(_) => bump(&c.ul_far_drop),
        }
    }
}

fn n6_rx(dev: &dyn Device, q: &SyncSender<Item>, stop: &AtomicBool, c: &Counters) {
    let mut buf = vec![0u8; 65_536];
    let mut pfd = libc::pollfd { fd: dev.raw_fd(), events: libc::POLLIN, revents: 0 };
    let none = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
    while !stop.load(Ordering::Relaxed) {
        match dev.read(&mut buf) {
            Ok(Some(n)) => {
                bump(&c.n6_rx);
                if let Err(TrySendError::Full(_)) = q.try_send((buf[..n].to_vec(), none)) {
                    bump(&c.dl_queue_full);
                }
            }
            Ok(None) => {
                // SAFETY: poll(2) on one valid descriptor for at most IDLE.
                unsafe { libc::poll(&mut pfd, 1, IDLE.as_millis() as libc::c_int) };
            }
            Err(e) => return eprintln!("scout-upf: N6: {e}"),
        }
    }
}

fn downlink(q: &Receiver<Item>, n3: &UdpSocket, table: &RwLock<Arc<Table>>, stop: &AtomicBool, c: &Counters) {
    let mut out = Vec::with_capacity(65_536 + gtpu::HEADER_LEN);
    while !stop.load(Ordering::Relaxed) {
        let (p, _) = match q.recv_timeout(IDLE) {
            Ok(x) => x,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let Some((_, dst)) = ipv4(&p) else {
            bump(&c.dl_not_ipv4);
            continue;
        };
        let rule = table.read().expect("table lock").downlink.get(&dst).copied();
        let Some(r) = rule else {
            bump(&c.dl_no_rule);
            continue;
        };
        match (r.action, r.tunnel) {
            (Action::Forward, Some(t)) => {
                gtpu::encap(&mut out, t.teid, gtpu::DL_PDU_SESSION_INFORMATION, r.qfi, &p);
                match n3.send_to(&out, SocketAddrV4::new(t.addr, GTPU_PORT)) {
                    Ok(_) => bump(&c.dl_forwarded),
                    Err(e) if idle(&e) => bump(&c.dl_queue_full),
                    Err(e) => return eprintln!("scout-upf: N3: {e}"),
                }
            }
            (Action::Forward, None) => bump(&c.dl_no_tunnel),
            (Action::Buffer, _) => bump(&c.dl_not_buffered),
            (Action::Drop, _) => bump(&c.dl_far_drop),
        }
    }
}

fn n4_loop(sock: &UdpSocket, node: &RwLock<Node>, table: &RwLock<Arc<Table>>, stop: &AtomicBool, c: &Counters) {
    let mut buf = [0u8; 65_536];
    let mut said = false;
    while !stop.load(Ordering::Relaxed) {
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if idle(&e) => continue,
            Err(e) => return eprintln!("scout-upf: N4: {e}"),
        };
        bump(&c.n4_rx);
        let req = match pfcp::decode(&buf[..n]) {
            Ok(r) => r,
            Err(e) => {
                bump(&c.n4_undecodable);
                if !said {
                    eprintln!("scout-upf: N4: from {from}: {e} (further ones are only counted)");
                    said = true;
                }
                continue;
            }
        };
        let SocketAddr::V4(peer) = from else { continue };
        let answer = node.write().expect("node lock").handle(&req, *peer.ip());
        let Some((resp, changed)) = answer else { continue };
        if changed {
            let t = node.read().expect("node lock").table();
            *table.write().expect("table lock") = Arc::new(t);
            bump(&c.table_updates);
        }
        // The rules are in place before the SMF hears they are.
        if sock.send_to(&pfcp::encode(&resp), from).is_ok() {
            bump(&c.n4_answered);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_that_is_not_read_counts_what_it_dropped() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let inode = socket_inode(&rx).unwrap();
        let table = || std::fs::read_to_string("/proc/self/net/udp").unwrap();
        assert_eq!(udp_drops(&table(), inode), Some(0));
        // Far more than any receive buffer holds (rmem_max is at most a few MiB here).
        let pkt = [0u8; 1400];
        for _ in 0..20_000 {
            tx.send_to(&pkt, rx.local_addr().unwrap()).unwrap();
        }
        let dropped = udp_drops(&table(), inode).unwrap();
        let mut buf = [0u8; 2048];
        rx.set_nonblocking(true).unwrap();
        let mut read = 0;
        while rx.recv(&mut buf).is_ok() {
            read += 1;
        }
        assert!(dropped > 0, "{read} read");
        assert_eq!(read + dropped, 20_000, "every datagram read or counted as dropped");
        // Not there: no number.
        assert_eq!(udp_drops(&table(), u64::MAX), None);
    }
}
