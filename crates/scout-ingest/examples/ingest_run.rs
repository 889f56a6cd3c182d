//! `scout ingest srsran` without Python, for profiling: `ingest_run LOG OUT_DIR`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    assert!(a.len() == 3, "usage: ingest_run LOG OUT_DIR");
    let t = std::time::Instant::now();
    let v = scout_ingest::srsran::run::ingest(
        &[a[1].clone().into()],
        &[],
        &[],
        std::path::Path::new(&a[2]),
        &mut |_, _| std::ops::ControlFlow::Continue(()),
    )
    .expect("ingest");
    let mb = std::fs::metadata(&a[1]).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let s = t.elapsed().as_secs_f64();
    println!("{mb:.0} MB in {s:.2} s = {:.0} MB/s; {} packets", mb / s, v["ingest"]["packets"]);
}
