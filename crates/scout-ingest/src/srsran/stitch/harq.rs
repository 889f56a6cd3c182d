//! HARQ: each UL transport block's PUSCH attempts (PHY lines) and each DL retransmission's grant
//! (SCHED lines), joined to the RLC PDUs the block carried.

use scout_events::{Layer, Node, Point, Sink};

use super::{t_of, Attempt, Stitcher};
use crate::srsran::message::{get_field, parse_fields, parse_num};
use crate::srsran::reader::Entry;

impl Stitcher {
    /// PHY lines: the PUSCH decoding results.
    pub(super) fn phy(&mut self, t_us: i64, body: &str) {
        if body.starts_with("PUSCH: ") {
            self.pusch(t_us, body);
        }
    }

    /// SCHED lines: a UL HARQ process giving up on its block; the DL grants of each slot.
    pub(super) fn sched<S: Sink>(&mut self, e: &Entry<'_>, sink: &mut S) {
        let h = e.header;
        // `UL HARQ rnti=… h_id=…: Discarding HARQ …` (23.10) or `rnti=… h_id=…: Discarding UL
        // HARQ process TB …`: the process gave up on its block; its failed attempts end here
        // (retransmissions may reuse rv 0, so only this line tells a new block apart).
        let b = h.body;
        if (b.starts_with("UL HARQ") || b.starts_with("rnti=")) && b.contains("Discarding") && b.contains("UL HARQ") {
            let f = parse_fields(b);
            let get = |k: &str| get_field(&f, k).and_then(parse_num);
            if let (Some(r), Some(hid)) = (get("rnti"), get("h_id")) {
                self.harq_ul.remove(&(r as u16, hid as u8));
            }
        } else if b.starts_with("Slot decisions") {
            if let Some(slot) = h.slot {
                self.dl_grants(t_of(h.t_us, self.epoch_us), slot, b, e.continuation, sink);
            }
        }
    }

    /// The DL grants of a `Slot decisions` entry (info: `DL: ue= c-rnti= … h_id= … rv= …` entries;
    /// debug: `- UE PDSCH: …` children). A first transmission is remembered for the MAC PDU of its
    /// slot; a retransmission (`newtx=false`, `nrtx>0`, or rv ≠ 0 in srsRAN's sequence 0, 2, 3, 1)
    /// resends the block of its HARQ process: its RLC PDUs get a `mac tx` with the retransmission
    /// index.
    fn dl_grants<S: Sink>(&mut self, t: i64, slot: (u32, u32), body: &str, children: &str, sink: &mut S) {
        let mut grants: Vec<&str> = Vec::new();
        if let Some(i) = body.find("): ") {
            grants.extend(body[i + 3..].split(", ").filter_map(|g| g.strip_prefix("DL: ")));
        }
        grants.extend(children.split('\n').filter_map(|c| c.strip_prefix("- UE PDSCH: ")));
        for g in grants {
            let f = parse_fields(g);
            let get = |k: &str| get_field(&f, k);
            let (Some(rnti), Some(hid)) = (get("c-rnti").and_then(parse_num), get("h_id").and_then(parse_num)) else {
                continue;
            };
            let (rnti, hid) = (rnti as u16, hid as u8);
            let retx = match (get("newtx"), get("nrtx").and_then(parse_num), get("rv")) {
                (Some("true"), _, _) => 0,
                (_, Some(n), _) => n.min(255) as u8,
                (Some("false"), _, _) => 1,
                (_, _, Some(rv)) => match rv {
                    "0" => 0,
                    "2" => 1,
                    "3" => 2,
                    _ => 3,
                },
                _ => 0,
            };
            if retx == 0 {
                self.dl_grant.insert(rnti, (slot.0, slot.1, hid));
                continue;
            }
            let Some((ue, items)) = self.dl_tb.get(&(rnti, hid)) else { continue };
            let (ue, items) = (*ue, items.clone());
            for it in items {
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Mac, Point::Tx), ue, Some(it.drb), it.pkt);
                ev.rnti = Some(rnti);
                ev.sn = Some(it.sn as u32);
                ev.seg_offset = Some(it.so);
                ev.bytes = it.bytes;
                ev.retx = retx;
                sink.packet(ev);
            }
        }
    }

    /// A PHY `PUSCH: rnti= h_id= … crc=OK|KO … t=N.Nus` line: one attempt of the HARQ process. The
    /// transmission time is the line's time less the decoding time `t=` (the line is written when
    /// decoding ends); a `KO` waits for the process's retransmission, an `OK` completes the block.
    fn pusch(&mut self, t_us: i64, body: &str) {
        // Four fields of a long line: looked up directly rather than parsing all of them. The body
        // starts `PUSCH: rnti=…`, so every key follows a space.
        let get = |k: &str| {
            let at = body.find(k)?;
            let v = &body[at + k.len()..];
            Some(&v[..v.find(' ').unwrap_or(v.len())])
        };
        let (Some(rnti), Some(h), Some(crc)) =
            (get(" rnti=").and_then(parse_num), get(" h_id=").and_then(parse_num), get(" crc="))
        else {
            return;
        };
        // A decoding time is microseconds; one that cannot be (negative, not finite, over a
        // second: a corrupt line once overflowed the subtraction below) counts as none.
        let decode_us = get(" t=")
            .and_then(|v| v.trim_end_matches("us").parse::<f64>().ok())
            .filter(|d| (0.0..=1e6).contains(d))
            .unwrap_or(0.0);
        let decoded_ns = (t_us - self.epoch_us) * 1000;
        let a = Attempt { tx_ns: decoded_ns - (decode_us * 1000.0) as i64, decoded_ns, ok: crc == "OK" };
        let key = (rnti as u16, h as u8);
        let tries = self.harq_ul.entry(key).or_default();
        tries.push(a);
        if a.ok || tries.len() > 32 {
            let tb = std::mem::take(tries);
            if a.ok {
                self.tb_decoded.insert(key.0, tb);
            }
        }
    }
}
