//! `scout ingest pcap` without Python, for profiling: `pcap_run CAPTURE... OUT_DIR` (several
//! captures are merged by time, as the CLI does).
fn main() {
    let a: Vec<String> = std::env::args().collect();
    assert!(a.len() >= 3, "usage: pcap_run CAPTURE... OUT_DIR");
    let (files, out) = (&a[1..a.len() - 1], &a[a.len() - 1]);
    let files: Vec<std::path::PathBuf> = files.iter().map(Into::into).collect();
    let t = std::time::Instant::now();
    let opts = scout_ingest::pcap::run::Options::default();
    let v = scout_ingest::pcap::run::ingest(&files, &opts, std::path::Path::new(out), &mut |_, _| {
        std::ops::ControlFlow::Continue(())
    })
    .expect("ingest");
    let s = t.elapsed().as_secs_f64();
    let frames = v["pcap"]["frames"].as_u64().unwrap_or(0);
    let pairs = v["pcap"]["upf_delay"]["ul"]["pairs"].as_u64().unwrap_or(0)
        + v["pcap"]["upf_delay"]["dl"]["pairs"].as_u64().unwrap_or(0);
    println!(
        "{frames} frames in {s:.2} s = {:.2} M frames/s ({} file(s), {pairs} pairs)",
        frames as f64 / s / 1e6,
        files.len()
    );
}
