//! Throughput of the srsRAN log reader alone (entries + continuation lines, no per-layer parsing):
//! `cargo run --release -p scout-ingest --example read_bench -- LOG [REPEAT]`
//! The log is repeated REPEAT times in memory (default 100) so the figure is not bound by the disk.

use scout_ingest::srsran::EntryReader;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "../shared/fixtures/srsran/srsran-23.10-info-drb.gnb.log".into());
    let repeat: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let one = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let data: Vec<u8> = one.iter().copied().cycle().take(one.len() * repeat).collect();
    let t0 = std::time::Instant::now();
    let mut r = EntryReader::new(&data[..]);
    let mut body_bytes = 0usize;
    while let Some(e) = r.next_entry().expect("in-memory read") {
        body_bytes += e.header.body.len();
    }
    let s = t0.elapsed().as_secs_f64();
    println!(
        "reader: {:.1} MB in {s:.2} s = {:.0} MB/s, {} entries, {} continuation lines (body bytes {body_bytes})",
        data.len() as f64 / 1e6,
        data.len() as f64 / s / 1e6,
        r.stats.entries,
        r.stats.continuation_lines
    );
}
