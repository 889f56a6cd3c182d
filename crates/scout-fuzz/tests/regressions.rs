//! Every seed of the fuzz corpus and every input that ever crashed a target, run through its
//! target: a crash the fuzzer found stays fixed. A new crash goes into `fuzz/regressions/TARGET/`
//! (`docs/robustness.md`).

use std::path::PathBuf;

fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz").join(kind).join(target);
    let mut v: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(d) => d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

fn replay(kind: &str) -> usize {
    let mut total = 0;
    for (name, target) in scout_fuzz::TARGETS {
        for p in inputs(kind, name) {
            let data = std::fs::read(&p).unwrap();
            let ok = std::panic::catch_unwind(|| target(&data));
            assert!(ok.is_ok(), "{name}: {} fails again", p.display());
            total += 1;
        }
    }
    total
}

#[test]
fn every_crash_ever_found_stays_fixed() {
    // The folder must be there (a moved one would let this pass with nothing to check).
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions");
    assert!(dir.is_dir(), "{} not found: the crashes found so far are kept there", dir.display());
    let n = replay("regressions");
    assert!(n > 0, "{}: no regression input (the crashes found so far are kept there)", dir.display());
    eprintln!("{n} regression inputs replayed");
}

#[test]
fn every_seed_runs_clean() {
    for (name, _) in scout_fuzz::TARGETS {
        assert!(!inputs("seeds", name).is_empty(), "fuzz/seeds/{name} is empty");
    }
    replay("seeds");
}
