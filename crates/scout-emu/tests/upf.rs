//! Scout's UPF as a process (`scout-upf`) in its namespace, driven over N4 by the SMF's client,
//! with real GTP-U from the gNB's namespace and real UDP in the data network's (root; skipped
//! with the reason where root, TUN or iproute2 are missing, never in CI).

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::time::Duration;

use scout_emu::netns::{self, DN_ADDR4};
use scout_emu::upf::{create_gnb, UpfSite};
use scout_upf::smf::Smf;
use scout_wire::gtpu::{self, GTPU_PORT};
use scout_wire::pfcp::{Action, Tunnel, PFCP_PORT};

fn missing() -> Option<String> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    if std::process::Command::new("ip").arg("-V").output().is_err() {
        return Some("ip (iproute2) is not installed".into());
    }
    None
}

/// Runs `f` inside namespace `ns` (sockets it makes stay there).
fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    scout_emu::upf::in_ns(ns, move || Ok(f())).expect("into the namespace")
}

/// Removes the test's namespaces however it ends.
struct Namespaces(Vec<String>);
impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = netns::remove(ns);
        }
    }
}

const UE: Ipv4Addr = Ipv4Addr::new(10, 45, 0, 2);

/// An IPv4/UDP packet from `src:sport` to `dst:dport` (UDP checksum 0: none, RFC 768), IP
/// identification 1.
fn udp4(src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16, payload: &[u8]) -> Vec<u8> {
    let total = (28 + payload.len()) as u16;
    let mut p = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0];
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    let mut s: u32 = p.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    p[10..12].copy_from_slice(&(!(s as u16)).to_be_bytes());
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

/// The next datagram on `s` within `ms`, if one comes.
fn recv(s: &UdpSocket, ms: u64) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
    let mut buf = [0u8; 4096];
    s.recv_from(&mut buf).ok().map(|(n, _)| buf[..n].to_vec())
}

/// The namespaces are named after the process: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The gNB's and the data network's namespaces, slice 0's UPF between them, the gNB's N3 socket,
/// an associated SMF, and a UDP server on the data network's address (port 9000).
struct Bed {
    site: UpfSite,
    gnb_n3: UdpSocket,
    smf: Smf,
    server: UdpSocket,
    gnb: String,
    dn: String,
    // Last: the namespaces go after the UPF's.
    nss: Namespaces,
}

fn bed() -> Option<Bed> {
    if let Some(why) = missing() {
        if std::env::var_os("CI").is_some() {
            panic!("the UPF's tests must run in CI: {why}");
        }
        eprintln!("skipping: {why}");
        return None;
    }
    let pid = std::process::id();
    let gnb = create_gnb(pid).expect("the gNB's namespace");
    let dn = netns::ns_name(pid, "dn");
    let mut nss = Namespaces(vec![gnb.clone()]);
    let ok = std::process::Command::new("ip").args(["netns", "add", &dn]).status().unwrap().success();
    assert!(ok);
    nss.0.push(dn.clone());
    for args in [vec!["link", "set", "lo", "up"], vec!["addr", "add", &format!("{DN_ADDR4}/32"), "dev", "lo"]] {
        assert!(std::process::Command::new("ip").args(["-netns", &dn]).args(&args).status().unwrap().success());
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_scout-upf"));
    let site = UpfSite::create(pid, 0, "embb", &[UE], &gnb, &dn, bin).expect("the UPF's namespace and process");
    let a = site.addrs;
    let (gnb_n3, mut smf) = in_ns(&gnb, move || {
        let n3 = UdpSocket::bind(SocketAddrV4::new(a.gnb_n3, GTPU_PORT)).unwrap();
        let smf =
            Smf::bind(SocketAddrV4::new(a.smf_n4, PFCP_PORT).into(), SocketAddrV4::new(a.upf_n4, PFCP_PORT).into());
        (n3, smf.unwrap())
    });
    let server = in_ns(&dn, || UdpSocket::bind(SocketAddrV4::new(DN_ADDR4, 9000)).unwrap());
    // The UPF may still be starting: association setup retransmits until it answers.
    smf.t1 = Duration::from_millis(200);
    smf.n1 = 25;
    smf.associate().expect("association setup");
    smf.t1 = Duration::from_millis(500);
    smf.n1 = 3;
    Some(Bed { site, gnb_n3, smf, server, gnb, dn, nss })
}

/// No namespace of `names` remains.
fn gone(names: &[String]) {
    let left =
        String::from_utf8(std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).unwrap();
    for ns in names {
        assert!(!left.lines().any(|l| l.split_whitespace().next() == Some(ns.as_str())), "{ns} remains");
    }
}

#[test]
fn the_upf_forwards_gtpu_both_ways_as_its_pfcp_rules_say() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(Bed { mut site, gnb_n3, mut smf, server, gnb, dn, nss }) = bed() else { return };
    let a = site.addrs;
    smf.heartbeat().expect("heartbeat");

    let up_tunnel = Tunnel { teid: 0x100, addr: a.upf_n3 };
    let gnb_tunnel = Tunnel { teid: 0x200, addr: a.gnb_n3 };
    let (mut session, took) = smf.establish(UE, up_tunnel, Some(gnb_tunnel), 9).expect("session establishment");
    assert!(took < Duration::from_secs(1));

    let upf_n3 = SocketAddrV4::new(a.upf_n3, GTPU_PORT);
    let mut g = Vec::new();
    let send_ul = |g: &mut Vec<u8>, teid: u32, what: &[u8]| {
        gtpu::encap(g, teid, gtpu::UL_PDU_SESSION_INFORMATION, 9, &udp4(UE, 5000, DN_ADDR4, 9000, what));
        gnb_n3.send_to(g, upf_n3).unwrap();
    };
    let send_dl = |what: &[u8]| server.send_to(what, SocketAddrV4::new(UE, 5000)).unwrap();

    // Uplink: decapsulated to N6, the server receives the UE's datagram.
    send_ul(&mut g, 0x100, b"ul-1");
    assert_eq!(recv(&server, 2000).as_deref(), Some(&b"ul-1"[..]), "the uplink reaches the data network");
    // Downlink: into the gNB's tunnel, with the QER's QFI in a DL PDU Session Container.
    let dl_arrives = |teid: u32, what: &[u8]| {
        send_dl(what);
        let d = recv(&gnb_n3, 2000).unwrap_or_else(|| panic!("no downlink G-PDU for {what:?}"));
        let h = gtpu::decode(&d).expect("a G-PDU");
        assert_eq!((h.msg_type, h.teid), (gtpu::GTPU_G_PDU, teid));
        assert_eq!((h.pdu_type, h.qfi), (Some(gtpu::DL_PDU_SESSION_INFORMATION), Some(9)));
        assert_eq!(&h.payload[16..20], &UE.octets(), "the inner packet goes to the UE");
        assert!(h.payload.ends_with(what));
    };
    dl_arrives(0x200, b"dl-1");

    // Modification: a path switch moves the downlink to another tunnel; a drop stops it.
    smf.modify_downlink(&mut session, Action::Forward, Some(Tunnel { teid: 0x300, addr: a.gnb_n3 })).unwrap();
    dl_arrives(0x300, b"dl-2");
    smf.modify_downlink(&mut session, Action::Drop, None).unwrap();
    send_dl(b"dl-3");
    assert_eq!(recv(&gnb_n3, 300), None, "a dropping FAR forwards nothing");
    smf.modify_downlink(&mut session, Action::Forward, None).unwrap();
    dl_arrives(0x300, b"dl-4");

    // A tunnel no PDR matches, and a session deleted: nothing reaches the data network.
    send_ul(&mut g, 0x999, b"ul-2");
    assert_eq!(recv(&server, 300), None);
    smf.delete(&session).expect("session deletion");
    send_ul(&mut g, 0x100, b"ul-3");
    assert_eq!(recv(&server, 300), None, "a deleted session forwards nothing");
    assert!(smf.delete(&session).is_err(), "a second deletion finds no session");

    let report = site.stop().expect("the UPF's report");
    let c = &report["counters"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {report}"));
    assert_eq!((n("ul_forwarded"), n("ul_no_rule"), n("dl_forwarded"), n("dl_far_drop")), (1, 2, 3, 1), "{report}");
    assert_eq!((n("ul_malformed"), n("n4_undecodable"), n("ul_queue_full"), n("dl_queue_full")), (0, 0, 0, 0));
    assert_eq!(n("n3_socket_drops"), 0, "{report}");
    assert_eq!(report["sessions"], 0);
    assert_eq!(report["upf"], "embb");
    let site_ns = site.ns.clone();
    drop(site);
    drop(nss);
    gone(&[site_ns, gnb, dn]);
}

#[test]
fn the_probe_on_the_upfs_n3_and_n6_pairs_every_packet_it_forwarded() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = scout_probe::testbench::unavailable() {
        if std::env::var_os("CI").is_some() {
            panic!("the probe's test must run in CI: {why}");
        }
        return eprintln!("skipping: {why}");
    }
    let Some(Bed { mut site, gnb_n3, mut smf, server, gnb, dn, nss }) = bed() else { return };
    let a = site.addrs;
    let side = |iface: &str| scout_probe::Side { netns: Some(site.ns.clone()), iface: iface.into() };
    let opts = scout_probe::Options {
        upfs: vec![scout_probe::Upf { n3: side("n3"), n6: side("n6"), slice: "embb".into() }],
        pfcp: vec![side("n4")],
        ..scout_probe::Options::default()
    };
    let dir = std::env::temp_dir().join(format!("scout-upf-probe-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let probe = scout_probe::Running::start(opts, dir.join("run")).expect("the probe attached");

    let (mut session, _) = smf
        .establish(UE, Tunnel { teid: 0x100, addr: a.upf_n3 }, Some(Tunnel { teid: 0x200, addr: a.gnb_n3 }), 9)
        .expect("session establishment");
    let upf_n3 = SocketAddrV4::new(a.upf_n3, GTPU_PORT);
    scout_emu::upf::deep_receive_buffer(&gnb_n3);
    scout_emu::upf::deep_receive_buffer(&server);
    let (n, mut g) = (400u32, Vec::new());
    for i in 0..n {
        // Each datagram distinct to the probe, which pairs by identity: the IP header's fields the
        // UPF keeps and the first 16 bytes after it — here the UDP header (checksum 0) and the
        // payload's first 8 bytes, so the number goes first ("packet {i}" made packets 100-199 one
        // identity: the probe then paired one's N3 sighting with another's N6 one and counted
        // uplink packets as downlink).
        let what = format!("{i:06} packet");
        gtpu::encap(
            &mut g,
            0x100,
            gtpu::UL_PDU_SESSION_INFORMATION,
            9,
            &udp4(UE, 5000, DN_ADDR4, 9000, what.as_bytes()),
        );
        gnb_n3.send_to(&g, upf_n3).unwrap();
        server.send_to(what.as_bytes(), SocketAddrV4::new(UE, 5000)).unwrap();
        if i % 50 == 49 {
            // A path switch now and then, timed by the SMF and captured on N4 by the probe.
            let teid = 0x200 + (i / 50) % 2;
            smf.modify_downlink(&mut session, Action::Forward, Some(Tunnel { teid, addr: a.gnb_n3 })).unwrap();
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let (mut ul, mut dl) = (0u32, 0u32);
    while recv(&server, 300).is_some() {
        ul += 1;
    }
    while recv(&gnb_n3, 300).is_some() {
        dl += 1;
    }
    smf.delete(&session).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let meta = probe.finish().expect("the probe's run");
    let report = site.stop().expect("the UPF's report");
    let c = |k: &str| report["counters"][k].as_u64().unwrap();
    assert_eq!((c("ul_forwarded"), c("dl_forwarded")), (u64::from(ul), u64::from(dl)), "{report}");
    assert_eq!((ul, dl), (n, n), "every packet came through");
    let pr = &meta["probe_result"];
    assert_eq!(pr["pairs"]["ul"].as_u64(), Some(c("ul_forwarded")), "{pr}");
    assert_eq!(pr["pairs"]["dl"].as_u64(), Some(c("dl_forwarded")), "{pr}");
    let un = &meta["unmatched"];
    assert_eq!((un["n3"]["total"].as_u64(), un["n6"]["total"].as_u64()), (Some(0), Some(0)), "{un}");
    // N4: establishment, 8 modifications, deletion — each request answered and paired.
    let pfcp = &pr["pfcp"][0];
    assert_eq!(pfcp["pairs"].as_u64(), Some(10), "{pfcp}");
    assert_eq!(pfcp["unanswered_requests"].as_array().map(Vec::len), Some(0), "{pfcp}");
    let _ = std::fs::remove_dir_all(&dir);
    let site_ns = site.ns.clone();
    drop(site);
    drop(nss);
    gone(&[site_ns, gnb, dn]);
}
