//! `scout ingest pcap` without Python, for profiling: `pcap_run CAPTURE OUT_DIR`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    assert!(a.len() == 3, "usage: pcap_run CAPTURE OUT_DIR");
    let t = std::time::Instant::now();
    let opts = scout_ingest::pcap::run::Options::default();
    let v = scout_ingest::pcap::run::ingest(&[a[1].clone().into()], &opts, std::path::Path::new(&a[2]), &mut |_, _| {
        std::ops::ControlFlow::Continue(())
    })
    .expect("ingest");
    let s = t.elapsed().as_secs_f64();
    let frames = v["pcap"]["frames"].as_u64().unwrap_or(0);
    println!("{frames} frames in {s:.2} s = {:.2} M frames/s", frames as f64 / s / 1e6);
}
