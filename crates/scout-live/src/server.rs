//! The live view's HTTP server: one thread, one short connection at a time (a browser polling
//! twice a second and a Prometheus scraper need no more). `/` is the page, `/live.json` what it
//! polls, `/metrics` the Prometheus exposition. It answers GET and HEAD; anything else gets 405.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use scout_events::tap::SharedTap;

use crate::aggregate::{Aggregator, Limits};

const PAGE: &str = include_str!("page.html");

/// A running live view: the aggregator a run's writer feeds and the server that shows it.
#[derive(Debug)]
pub struct Server {
    aggregator: Arc<Aggregator>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (e.g. `127.0.0.1:9470`; port 0 picks a free one) and serves until dropped.
    pub fn start(addr: &str, limits: Limits) -> io::Result<Server> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            io::Error::new(e.kind(), format!("the live view cannot listen on {addr}: {e} (expected HOST:PORT, e.g. 127.0.0.1:9470; port 0 picks a free one)"))
        })?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let aggregator = Arc::new(Aggregator::new(limits));
        let stop = Arc::new(AtomicBool::new(false));
        let (agg, halt) = (Arc::clone(&aggregator), Arc::clone(&stop));
        let thread =
            std::thread::Builder::new().name("scout-live".into()).spawn(move || serve(listener, &agg, &halt))?;
        Ok(Server { aggregator, addr, stop, thread: Some(thread) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// The tap to give a run's writer (the drivers' `live` option).
    pub fn tap(&self) -> SharedTap {
        Arc::clone(&self.aggregator) as SharedTap
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, agg: &Aggregator, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                // A client that misbehaves affects only its own request.
                let _ = answer(stream, agg);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Reads one request (its head, up to 16 KiB, for at most 2 s) and answers it.
fn answer(mut stream: TcpStream, agg: &Aggregator) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 << 10 {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/" | "/index.html") => ("200 OK", "text/html; charset=utf-8", PAGE.to_string()),
        ("GET" | "HEAD", "/live.json") => ("200 OK", "application/json", agg.snapshot().to_string()),
        ("GET" | "HEAD", "/metrics") => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", agg.metrics()),
        // Browsers ask for it by themselves.
        ("GET" | "HEAD", "/favicon.ico") => ("204 No Content", "image/x-icon", String::new()),
        ("GET" | "HEAD", _) => {
            ("404 Not Found", "text/plain", "not found: the live view serves /, /live.json and /metrics\n".into())
        }
        _ => ("405 Method Not Allowed", "text/plain", "the live view answers GET and HEAD\n".into()),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        out.extend_from_slice(body.as_bytes());
    }
    stream.write_all(&out)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use scout_events::{Dir, Layer, Node, PacketEvent, Point};

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_page_the_snapshot_and_the_metrics_as_events_arrive() {
        let server = Server::start("127.0.0.1:0", Limits::default()).unwrap();
        let addr = server.addr();
        assert!(server.url().starts_with("http://127.0.0.1:"));
        let page = get(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n") && page.contains("<canvas"), "{page}");
        let before = get(addr, "GET /live.json HTTP/1.1\r\n\r\n");
        assert!(before.contains("\"packet_events\":0"), "{before}");
        let mut e = PacketEvent::new(5_000_000, (Node::Ue, Layer::App, Point::Deliver), Dir::Dl, 1);
        e.bytes = 100;
        server.tap().packets(&[e]);
        let after = get(addr, "GET /live.json?x=1 HTTP/1.1\r\n\r\n");
        assert!(after.contains("\"packet_events\":1"), "{after}");
        let metrics = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
        assert!(metrics.contains("scout_ue_bytes_total{ue=\"0\",dir=\"dl\",at=\"delivered\"} 100"), "{metrics}");
        assert!(get(addr, "GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        let head = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.ends_with("\r\n\r\n"), "HEAD has no body: {head}");
    }

    #[test]
    fn an_address_in_use_is_a_clear_error() {
        let a = Server::start("127.0.0.1:0", Limits::default()).unwrap();
        let e = Server::start(&a.addr().to_string(), Limits::default()).unwrap_err();
        assert!(e.to_string().contains("cannot listen on 127.0.0.1:"), "{e}");
    }
}
