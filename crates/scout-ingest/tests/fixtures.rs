//! The reader on the real srsRAN logs in `../shared/fixtures/srsran/` (skipped with a message when
//! `../shared` is absent, as in a user's clone).

mod common;

use std::path::PathBuf;

use scout_ingest::srsran::{open_log, parse_header};

fn fixture(name: &str) -> Option<PathBuf> {
    common::shared_fixture("srsran", name)
}

/// Independent count: lines that start with a header, and the rest.
fn line_counts(text: &str) -> (u64, u64, std::collections::BTreeMap<String, u64>) {
    let (mut headers, mut other) = (0, 0);
    let mut by_logger = std::collections::BTreeMap::new();
    for l in text.lines() {
        match parse_header(l) {
            Some(h) => {
                headers += 1;
                *by_logger.entry(h.logger.to_string()).or_insert(0) += 1;
            }
            None => other += 1,
        }
    }
    (headers, other, by_logger)
}

#[test]
fn every_line_of_the_real_logs_is_an_entry_or_attached_to_one() {
    for name in ["srsran-23.10-info-drb.gnb.log", "srsran-24.10-debug-srb.gnb.log"] {
        let Some(path) = fixture(name) else { return };
        let text = std::fs::read_to_string(&path).unwrap();
        let (headers, other, by_logger) = line_counts(&text);
        let mut r = open_log(&path).unwrap();
        let mut seen = std::collections::BTreeMap::new();
        let mut last_line = 0;
        while let Some(e) = r.next_entry().unwrap() {
            assert!(e.line > last_line, "{name}: entries in file order");
            last_line = e.line;
            *seen.entry(e.header.logger.to_string()).or_insert(0u64) += 1;
        }
        let st = &r.stats;
        assert_eq!(st.entries, headers, "{name}");
        assert_eq!(st.continuation_lines + st.orphan_lines, other, "{name}");
        assert_eq!(seen, by_logger, "{name}: entries per logger");
        assert_eq!(st.bytes, text.len() as u64, "{name}");
        assert!(st.first_t_us.unwrap() < st.last_t_us.unwrap());
    }
}

#[test]
fn the_23_10_log_has_per_packet_lines_of_each_layer() {
    let Some(path) = fixture("srsran-23.10-info-drb.gnb.log") else { return };
    let mut r = open_log(&path).unwrap();
    let mut pdcp_tx = 0;
    let mut sib1_json = false;
    while let Some(e) = r.next_entry().unwrap() {
        let h = e.header;
        if h.logger == "PDCP" && h.body.contains("TX PDU. type=data") {
            pdcp_tx += 1;
        }
        if h.logger == "DU-MNG" && h.body.starts_with("SIB1") {
            sib1_json = e.continuation.contains("cellSelectionInfo");
        }
        if h.logger == "MAC" || h.logger == "SCHED" {
            assert!(h.slot.is_some(), "MAC/SCHED lines carry [sfn.slot]: line {}", e.line);
        }
    }
    assert!(pdcp_tx > 0);
    assert!(sib1_json, "the SIB1 JSON dump is attached to its DU-MNG entry");
}

/// Byte arithmetic of the DL DRB path on the 23.10 info log, from the message parser alone:
/// GTP-U SDU + PDCP header = PDCP PDU = RLC SDU (matched by PDCP SN), and each RLC SDU's segments
/// (payload = PDU − RLC AM header: 2 bytes with a 12-bit SN, + 2 bytes SO on mid/last segments)
/// sum to the SDU.
#[test]
fn dl_drb_byte_arithmetic_on_the_23_10_log() {
    use scout_ingest::srsran::{parse_message, Message};
    let Some(path) = fixture("srsran-23.10-info-drb.gnb.log") else { return };
    let mut r = open_log(&path).unwrap();
    let (mut gtpu, mut pdcp, mut rlc_sdu, mut rlc_pdu) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut pdcp_sn_size = None;
    while let Some(e) = r.next_entry().unwrap() {
        let m: Message = parse_message(e.header.body);
        let drb_dl = m.prefix.rb.is_some_and(|rb| rb.starts_with("DRB")) && m.prefix.dir == Some("DL");
        match (e.header.logger, m.name) {
            ("GTPU", "RX SDU") if m.prefix.dir == Some("DL") => gtpu.push(m.num("sdu_len").unwrap()),
            ("PDCP", "PDCP configured") if m.get("rb_type") == Some("DRB") => pdcp_sn_size = m.num("sn_size"),
            ("PDCP", "TX PDU") if drb_dl => pdcp.push((m.num("pdu_len").unwrap(), m.num("sn").unwrap())),
            ("RLC", "TX SDU") if drb_dl => rlc_sdu.push((m.num("sdu_len").unwrap(), m.num("pdcp_sn").unwrap())),
            ("RLC", "TX PDU") if drb_dl && m.get("dc") == Some("data") => {
                rlc_pdu.push((m.get("si").unwrap().to_string(), m.num("sn").unwrap(), m.num("pdu_len").unwrap()))
            }
            _ => {}
        }
    }
    assert!(gtpu.len() > 100, "DL GTP-U SDUs: {}", gtpu.len());
    assert_eq!(gtpu.len(), pdcp.len(), "one PDCP PDU per GTP-U SDU");
    assert_eq!(pdcp.len(), rlc_sdu.len(), "one RLC SDU per PDCP PDU");
    let hdr = match pdcp_sn_size {
        Some(18) => 3,
        _ => 2,
    };
    for (i, (g, (p_len, p_sn))) in gtpu.iter().zip(&pdcp).enumerate() {
        assert_eq!(g + hdr, *p_len, "PDCP PDU {i} (sn {p_sn}) = GTP-U SDU + {hdr}-byte header");
    }
    let by_sn: std::collections::HashMap<u64, u64> = pdcp.iter().map(|(l, sn)| (*sn, *l)).collect();
    for (len, pdcp_sn) in &rlc_sdu {
        assert_eq!(Some(len), by_sn.get(pdcp_sn), "RLC SDU for PDCP SN {pdcp_sn}");
    }
    // RLC SNs are given to SDUs in the order they leave the queue (= the TX SDU order here).
    let mut payload: std::collections::BTreeMap<u64, (u64, bool)> = std::collections::BTreeMap::new();
    for (si, sn, pdu_len) in &rlc_pdu {
        let h = if si == "full" || si == "first" { 2 } else { 4 };
        let e = payload.entry(*sn).or_insert((0, false));
        e.0 += pdu_len - h;
        e.1 |= si == "full" || si == "last";
    }
    let mut checked = 0;
    for (k, (sn, (bytes, complete))) in payload.iter().enumerate() {
        if *complete && k < rlc_sdu.len() {
            assert_eq!(*bytes, rlc_sdu[k].0, "RLC SN {sn}: segments sum to the SDU");
            checked += 1;
        }
    }
    assert!(checked > 100, "checked {checked} RLC SDUs");
}

/// UE connections on the real logs: the 23.10 log has one UE context (C-RNTI 0x4601) that is
/// released and a second (0x4602) that reuses DU index 0 and CU-CP index 0; without RRC contents
/// (info level) nothing says it is the same UE, so it gets its own UE id. The 24.10 log has one.
#[test]
fn connections_of_the_real_logs() {
    use scout_events::{Sink, VecSink};
    use scout_ingest::srsran::run::Gnb;
    for (name, want) in [
        (
            "srsran-23.10-info-drb.gnb.log",
            vec![(0u32, 0u32, Some(0x4601u16), Some(0u32), Some(5u64)), (1, 0, Some(0x4602), Some(0), None)],
        ),
        ("srsran-24.10-debug-srb.gnb.log", vec![(0, 0, Some(0x4601), Some(0), Some(4))]),
    ] {
        let Some(path) = fixture(name) else { return };
        let mut r = open_log(&path).unwrap();
        let mut g: Option<Gnb> = None;
        let mut sink = VecSink::default();
        while let Some(e) = r.next_entry().unwrap() {
            let g = g.get_or_insert_with(|| Gnb::new(e.header.t_us));
            g.entry(&e, 0, &mut sink);
        }
        let mut g = g.unwrap();
        g.finish(&mut sink);
        let got: Vec<_> = g.ues.conns.iter().map(|c| (c.ue.unwrap(), c.du, c.rnti, c.cu_cp, c.amf_ue_id)).collect();
        assert_eq!(got, want, "{name}");
        // Every event's UE is one of the connections' UEs, and the Msg3 grants (srsRAN's DU
        // index 1024) went to the UE whose context the random access created.
        let ues: std::collections::BTreeSet<u32> = got.iter().map(|c| c.0).collect();
        assert!(sink.packets.iter().all(|p| ues.contains(&p.ue)), "{name}");
        assert!(sink.slots.iter().filter_map(|s| s.ue).all(|u| ues.contains(&u)), "{name}");
        let _ = &mut sink as &mut dyn Sink;
    }
}

/// The 24.10 debug log's CSI reports (`- CSI: ue=0 rnti=0x4601: cqi=15 ri=1` under `Processed slot
/// events`) are each counted, and every DL row after the first one carries the UE's last CQI and
/// RI (as the model's rows carry what the UE last reported); rows before carry none.
#[test]
fn csi_reports_reach_the_dl_rows() {
    use scout_events::{Dir, VecSink};
    use scout_ingest::srsran::run::Gnb;
    let Some(path) = fixture("srsran-24.10-debug-srb.gnb.log") else { return };
    let text = std::fs::read_to_string(&path).unwrap();
    let csi_lines = text.lines().filter(|l| l.starts_with("- CSI: ")).count() as u64;
    let mut r = open_log(&path).unwrap();
    let (mut g, mut sink): (Option<Gnb>, VecSink) = (None, VecSink::default());
    while let Some(e) = r.next_entry().unwrap() {
        g.get_or_insert_with(|| Gnb::new(e.header.t_us)).entry(&e, 0, &mut sink);
    }
    let mut g = g.unwrap();
    g.finish(&mut sink);
    assert_eq!(g.slots.stats.csi_reports, csi_lines);
    assert!(csi_lines > 100, "{csi_lines}");
    let dl: Vec<_> = sink.slots.iter().filter(|s| s.dir == Dir::Dl && s.ue.is_some()).collect();
    let with: Vec<_> = dl.iter().filter(|s| s.cqi.is_some()).collect();
    assert!(!with.is_empty() && with.iter().all(|s| s.cqi == Some(15) && s.ri == Some(1)), "{}", with.len());
    // Rows without are the grants before the first report.
    let first = with.iter().map(|s| s.t_ns).min().unwrap();
    assert!(dl.iter().filter(|s| s.cqi.is_none()).all(|s| s.t_ns <= first));
}
