//! Makes a large capture for benchmarks: `repeat_pcap IN OUT COPIES [FIRST]` writes the frames of
//! IN (pcap or pcapng, one link type) COPIES times into OUT (pcap, ns timestamps), each copy shifted
//! to start one second after the previous one ends; FIRST (default 0) is the first copy's number,
//! so that files made with FIRST = 0, COPIES, 2 × COPIES, … follow each other in time (a capture
//! rotated into several files).
use std::io::{BufWriter, Write};

use scout_ingest::pcap::file::CaptureReader;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    assert!(a.len() == 4 || a.len() == 5, "usage: repeat_pcap IN OUT COPIES [FIRST]");
    let copies: i64 = a[3].parse().expect("COPIES");
    let first_copy: i64 = a.get(4).map_or(0, |f| f.parse().expect("FIRST"));
    let mut frames = Vec::new();
    let mut r = CaptureReader::open(a[1].as_ref()).expect("open");
    let mut linktype = None;
    while let Some(f) = r.next_frame().expect("read") {
        assert!(*linktype.get_or_insert(f.linktype) == f.linktype, "one link type only");
        frames.push((f.t_ns, f.data.to_vec()));
    }
    let (first, last) = (frames[0].0, frames[frames.len() - 1].0);
    let span = last - first + 1_000_000_000;
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&a[2]).expect("create"));
    w.write_all(&0xa1b2_3c4du32.to_le_bytes()).unwrap();
    w.write_all(&[2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0]).unwrap();
    w.write_all(&u32::from(linktype.unwrap_or(1)).to_le_bytes()).unwrap();
    for c in first_copy..first_copy + copies {
        for (t, d) in &frames {
            let t = t + c * span;
            w.write_all(&((t / 1_000_000_000) as u32).to_le_bytes()).unwrap();
            w.write_all(&((t % 1_000_000_000) as u32).to_le_bytes()).unwrap();
            w.write_all(&(d.len() as u32).to_le_bytes()).unwrap();
            w.write_all(&(d.len() as u32).to_le_bytes()).unwrap();
            w.write_all(d).unwrap();
        }
    }
    w.flush().unwrap();
    println!("{} frames", frames.len() as i64 * copies);
}
