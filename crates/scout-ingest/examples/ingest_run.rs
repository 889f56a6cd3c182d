//! `scout ingest srsran` without Python, for profiling: `ingest_run LOG... OUT_DIR` (several logs
//! are merged by time, as rotated or split CU and DU logs are).
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    assert!(a.len() >= 2, "usage: ingest_run LOG... OUT_DIR");
    let (logs, out) = a.split_at(a.len() - 1);
    let logs: Vec<std::path::PathBuf> = logs.iter().map(Into::into).collect();
    let t = std::time::Instant::now();
    let v = scout_ingest::srsran::run::ingest(&logs, &[], &[], std::path::Path::new(&out[0]), &mut |_, _| {
        std::ops::ControlFlow::Continue(())
    })
    .expect("ingest");
    let mb = logs.iter().map(|l| std::fs::metadata(l).map_or(0, |m| m.len())).sum::<u64>() as f64 / 1e6;
    let s = t.elapsed().as_secs_f64();
    println!("{mb:.0} MB in {s:.2} s = {:.0} MB/s; {} packets", mb / s, v["ingest"]["packets"]);
}
