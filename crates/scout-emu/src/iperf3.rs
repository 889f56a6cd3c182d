//! iperf3's own measurements as `control_events`: an application that ran `iperf3 ... -J` leaves
//! its JSON result in the run (`apps/NAME.out`); each test in it becomes one `iperf3` row per
//! reporting interval and one `iperf3_result` row at its end, on the emulator's clock.
//!
//! Time: iperf3 states its intervals relative to the start of its test. A client's test starts
//! when its app starts (plus the connection's setup, a few ms at most on an emulated cell); a
//! server's test is placed at the start of the client with the same test cookie when that client
//! is in the run, else at the server's own wall-clock timestamp (1 s resolution). Each row says
//! which in `detail.time_base`.

use std::collections::HashMap;
use std::net::IpAddr;

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node};
use serde_json::{json, Value};

/// One app as `run.json` `apps` lists it, with its output read.
pub struct AppOutput<'a> {
    pub name: &'a str,
    /// `dn` or `ueN`.
    pub ns: &'a str,
    /// When the app started, ns on the emulator's clock.
    pub started_ns: i64,
    pub stdout: &'a str,
}

/// What [`rows`] found: the rows, and the apps whose output held iperf3 tests.
#[derive(Default, Debug)]
pub struct Found {
    pub rows: Vec<ControlEvent>,
    pub tests: usize,
}

/// The iperf3 tests in the apps' outputs as control rows. `epoch_s`: the wall-clock time of the
/// emulator's time 0 (for servers without their client in the run). Output that is not iperf3
/// JSON is left alone.
pub fn rows(apps: &[AppOutput], epoch_s: f64, ue_of: &crate::netns::UeOf) -> Found {
    let tests: Vec<(&AppOutput, Value)> = apps
        .iter()
        .flat_map(|a| {
            serde_json::Deserializer::from_str(a.stdout)
                .into_iter::<Value>()
                .map_while(Result::ok)
                .filter(|v| v["start"]["test_start"].is_object() && v["intervals"].is_array())
                .map(move |v| (a, v))
        })
        .collect();
    let client_start: HashMap<&str, i64> = tests
        .iter()
        .filter(|(_, v)| v["start"]["connecting_to"].is_object())
        .filter_map(|(a, v)| Some((v["start"]["cookie"].as_str()?, a.started_ns)))
        .collect();
    let mut found = Found { rows: Vec::new(), tests: tests.len() };
    for (app, v) in &tests {
        let client = v["start"]["connecting_to"].is_object();
        let (t0, time_base) = if client {
            (app.started_ns, "app_start")
        } else if let Some(&t) = v["start"]["cookie"].as_str().and_then(|c| client_start.get(c)) {
            (t, "client_start")
        } else {
            let secs = v["start"]["timestamp"]["timesecs"].as_f64().unwrap_or(epoch_s);
            (((secs - epoch_s) * 1e9) as i64, "iperf3_timestamp_1s")
        };
        let (node, ue_here) = match app.ns.strip_prefix("ue").and_then(|u| u.parse::<u32>().ok()) {
            Some(u) => (Node::Ue, Some(u)),
            None => (Node::Dn, None),
        };
        // The UE at the other end, for an app in the DN.
        let remote = v["start"]["connected"][0]["remote_host"].as_str().and_then(|h| h.parse::<IpAddr>().ok());
        let ue = ue_here.or_else(|| remote.and_then(|r| ue_of.get(&r.to_canonical()).copied()));
        // Data flows from the side that sends: UL when that is the UE.
        let dir_of = |sender: bool| if sender == (node == Node::Ue) { Dir::Ul } else { Dir::Dl };
        let protocol = v["start"]["test_start"]["protocol"].as_str().unwrap_or("?");
        let streams = v["start"]["test_start"]["num_streams"].as_u64();
        let role = if client { "client" } else { "server" };
        let row = |t: f64, kind: ControlKind, dir: Dir, value: Option<f64>, detail: Value| ControlEvent {
            t_ns: t0.saturating_add((t * 1e9) as i64),
            node,
            layer: Layer::App,
            kind,
            dir: Some(dir),
            ue,
            drb: None,
            sn: None,
            value,
            detail: Some(detail.to_string()),
        };
        for iv in v["intervals"].as_array().into_iter().flatten() {
            let s = &iv["sum"];
            let (Some(start), Some(end)) = (s["start"].as_f64(), s["end"].as_f64()) else { continue };
            let sender = s["sender"].as_bool().unwrap_or(client);
            found.rows.push(row(
                end,
                ControlKind::Iperf3,
                dir_of(sender),
                s["bits_per_second"].as_f64(),
                json!({
                    "app": app.name, "role": role, "protocol": protocol, "streams": streams, "sender": sender,
                    "start_s": start, "end_s": end, "bytes": s["bytes"], "retransmits": s["retransmits"],
                    "packets": s["packets"], "lost_packets": s["lost_packets"], "jitter_ms": s["jitter_ms"],
                    "omitted": s["omitted"], "time_base": time_base,
                }),
            ));
        }
        let end = &v["end"];
        // TCP: what the sender sent and the receiver received; UDP: one sum.
        let sent = if end["sum_sent"].is_object() { &end["sum_sent"] } else { &end["sum"] };
        let received = if end["sum_received"].is_object() { &end["sum_received"] } else { &end["sum"] };
        if let Some(t_end) = received["end"].as_f64().or(sent["end"].as_f64()) {
            let sender = if client {
                v["start"]["test_start"]["reverse"].as_i64() != Some(1)
            } else {
                v["start"]["test_start"]["reverse"].as_i64() == Some(1)
            };
            found.rows.push(row(
                t_end,
                ControlKind::Iperf3Result,
                dir_of(sender),
                received["bits_per_second"].as_f64(),
                json!({
                    "app": app.name, "role": role, "protocol": protocol, "streams": streams,
                    "sent_bytes": sent["bytes"], "received_bytes": received["bytes"],
                    "sent_bps": sent["bits_per_second"], "received_bps": received["bits_per_second"],
                    "retransmits": sent["retransmits"], "lost_packets": end["sum"]["lost_packets"],
                    "jitter_ms": end["sum"]["jitter_ms"],
                    "congestion": end["sender_tcp_congestion"], "error": v["error"], "time_base": time_base,
                }),
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_json(client: bool, reverse: u8) -> String {
        let (start_extra, sender) = if client {
            (r#""connecting_to": {"host": "10.45.0.1", "port": 5201},"#, reverse == 0)
        } else {
            (r#""accepted_connection": {"host": "10.45.0.2", "port": 40000},"#, reverse == 1)
        };
        format!(
            r#"{{"start": {{"connected": [{{"remote_host": "{}"}}], {start_extra} "cookie": "abc",
                "timestamp": {{"timesecs": 1000}},
                "test_start": {{"protocol": "TCP", "num_streams": 1, "reverse": {reverse}}}}},
              "intervals": [
                {{"sum": {{"start": 0, "end": 1.0, "bytes": 125000, "bits_per_second": 1e6, "sender": {sender}}}}},
                {{"sum": {{"start": 1.0, "end": 2.0, "bytes": 250000, "bits_per_second": 2e6, "sender": {sender}}}}}],
              "end": {{"sum_sent": {{"end": 2.0, "bytes": 375000, "bits_per_second": 1.5e6, "retransmits": 3}},
                      "sum_received": {{"end": 2.0, "bytes": 370000, "bits_per_second": 1.48e6}},
                      "sender_tcp_congestion": "cubic"}}}}"#,
            if client { "10.45.0.1" } else { "10.45.0.2" }
        )
    }

    #[test]
    fn client_and_server_tests_become_rows_on_the_emulator_clock() {
        let client = test_json(true, 0);
        // A server that ran two tests (iperf3 -s -J writes one object per test).
        let server = format!("{}\n{}", test_json(false, 0), test_json(false, 0).replace("abc", "other"));
        let apps = [
            AppOutput { name: "up", ns: "ue0", started_ns: 2_000_000_000, stdout: &client },
            AppOutput { name: "srv", ns: "dn", started_ns: 0, stdout: &server },
            AppOutput { name: "ping", ns: "ue0", started_ns: 0, stdout: "PING 10.45.0.1 (10.45.0.1) 56(84) bytes" },
        ];
        let ue_of = crate::netns::UeOf::from_iter([("10.45.0.2".parse().unwrap(), 0u32)]);
        let f = rows(&apps, 999.5, &ue_of);
        assert_eq!(f.tests, 3);
        assert_eq!(f.rows.len(), 9);
        let up: Vec<_> = f.rows.iter().filter(|r| r.detail.as_deref().unwrap().contains(r#""app":"up""#)).collect();
        assert_eq!(up[0].t_ns, 3_000_000_000);
        assert_eq!(
            (up[0].kind, up[0].node, up[0].dir, up[0].ue, up[0].value),
            (ControlKind::Iperf3, Node::Ue, Some(Dir::Ul), Some(0), Some(1e6))
        );
        let result = up[2];
        assert_eq!((result.kind, result.value, result.t_ns), (ControlKind::Iperf3Result, Some(1.48e6), 4_000_000_000));
        let d: Value = serde_json::from_str(result.detail.as_deref().unwrap()).unwrap();
        assert_eq!((d["retransmits"].as_i64(), d["congestion"].as_str()), (Some(3), Some("cubic")));
        let srv: Vec<_> = f.rows.iter().filter(|r| r.detail.as_deref().unwrap().contains(r#""app":"srv""#)).collect();
        // The server's first test is its client's (same cookie): placed at the client's start; it
        // receives, so the data still flows UL, and its UE is the client's.
        assert_eq!(
            (srv[0].t_ns, srv[0].node, srv[0].dir, srv[0].ue),
            (3_000_000_000, Node::Dn, Some(Dir::Ul), Some(0))
        );
        // The second has no client in the run: iperf3's own timestamp, 0.5 s after time 0.
        assert_eq!(srv[3].t_ns, 1_500_000_000);
        assert!(srv[3].detail.as_deref().unwrap().contains("iperf3_timestamp_1s"));
        // -R: the client receives, the data flows DL.
        let rev = test_json(true, 1);
        let f = rows(&[AppOutput { name: "down", ns: "ue0", started_ns: 0, stdout: &rev }], 0.0, &ue_of);
        assert!(f.rows.iter().all(|r| r.dir == Some(Dir::Dl)));
    }
}
