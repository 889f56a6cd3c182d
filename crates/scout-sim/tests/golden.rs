//! The model's safety net (issue 22): every built-in scenario, simulated with its own seed for a
//! few seconds, gives the same events as the committed snapshot — a digest per event table.
//!
//! A refactoring must keep every digest. A change of behaviour changes them on purpose: run
//!
//! ```text
//! SCOUT_BLESS=1 cargo test -p scout-sim --test golden
//! ```
//!
//! to rewrite `tests/golden/digests.txt`, and commit it with the change that explains it.

use std::fmt::Write as _;
use std::path::Path;

use scout_events::{ControlEvent, PacketEvent, Sink, SlotEvent};

/// Seconds of each scenario simulated (the start of each: enough for every layer to act).
const SECONDS: f64 = 3.0;

/// FNV-1a, 64 bits: a digest that stays the same across Rust releases (std's hashers need not).
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Digests each table's rows in the order the model wrote them (every field, by its `Debug`).
struct DigestSink {
    tables: [(Fnv, u64); 3],
    line: String,
}

impl DigestSink {
    fn add(&mut self, table: usize, row: &dyn std::fmt::Debug) {
        self.line.clear();
        writeln!(self.line, "{row:?}").expect("a String takes any text");
        let (h, n) = &mut self.tables[table];
        h.add(self.line.as_bytes());
        *n += 1;
    }
}

impl Sink for DigestSink {
    fn packet(&mut self, ev: PacketEvent) {
        self.add(0, &ev);
    }
    fn slot(&mut self, ev: SlotEvent) {
        self.add(1, &ev);
    }
    fn control(&mut self, ev: ControlEvent) {
        self.add(2, &ev);
    }
}

/// One line per scenario and table: `SCENARIO TABLE ROWS DIGEST`.
fn digests() -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("scenarios/ is readable")
        .filter_map(|e| e.ok()?.path().file_name()?.to_str()?.strip_suffix(".yaml").map(str::to_string))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "the built-in scenarios: {names:?}");
    let mut out = String::new();
    for name in names {
        let l = scout_sim::scenario::load(&dir.join(format!("{name}.yaml")), &[]).expect("a built-in scenario loads");
        let mut sink = DigestSink { tables: [(Fnv::new(), 0); 3], line: String::new() };
        let secs = SECONDS.min(l.scenario.duration_s);
        if l.scenario.core.slices.iter().any(|s| s.upf_process) {
            // Emulator-only (a slice served by a real UPF process): the simulator refuses it,
            // naming the key.
            let e = scout_sim::run(&l, l.scenario.seed, secs, &mut sink, &mut |_| std::ops::ControlFlow::Continue(()));
            let why = e.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(why.contains("upf_process") && why.contains("scout emulate"), "{name}: {why}");
            continue;
        }
        scout_sim::run(&l, l.scenario.seed, secs, &mut sink, &mut |_| std::ops::ControlFlow::Continue(()))
            .expect("a built-in scenario simulates");
        for (table, (h, n)) in ["packet_events", "slot_events", "control_events"].iter().zip(sink.tables) {
            writeln!(out, "{name} {table} {n} {:016x}", h.0).expect("a String takes any text");
        }
    }
    out
}

#[test]
fn every_builtin_scenario_gives_the_committed_events() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/digests.txt");
    let now = digests();
    if std::env::var_os("SCOUT_BLESS").is_some() {
        std::fs::write(&path, &now).expect("write the snapshot");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let changed: Vec<String> = now
        .lines()
        .filter(|l| !committed.lines().any(|c| c == *l))
        .map(|l| {
            let key = l.rsplitn(3, ' ').nth(2).unwrap_or(l);
            let was = committed.lines().find(|c| c.starts_with(&format!("{key} "))).unwrap_or("(absent)");
            format!("  now {l}\n  was {was}")
        })
        .collect();
    assert!(
        changed.is_empty() && committed.lines().count() == now.lines().count(),
        "the model's events changed ({}):\n{}\nA refactoring must not change them; a change of behaviour \
         re-blesses them: SCOUT_BLESS=1 cargo test -p scout-sim --test golden",
        path.display(),
        changed.join("\n")
    );
}
