//! The model is sans-IO (DESIGN §3.2, style rule 1): no file, socket, thread, clock, environment
//! or console access anywhere in `scout-ran`. Time is an argument; I/O lives in the drivers.
//! This test reads the crate's sources and fails on any such use, naming file and line.

use std::path::Path;

const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::net",
    "std::thread",
    "std::io",
    "std::env",
    "std::process",
    "std::time::Instant",
    "std::time::SystemTime",
    "Instant::now",
    "SystemTime::now",
    "println!",
    "eprintln!",
    "print!(",
    "dbg!(",
];

fn visit(dir: &Path, hits: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            visit(&path, hits);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("source is UTF-8");
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for f in FORBIDDEN {
                    if code.contains(f) {
                        hits.push(format!("{}:{}: {f}: {}", path.display(), i + 1, line.trim()));
                    }
                }
            }
        }
    }
}

#[test]
fn model_does_no_io() {
    let mut hits = Vec::new();
    visit(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut hits);
    assert!(hits.is_empty(), "scout-ran must stay sans-IO:\n{}", hits.join("\n"));
}

#[test]
fn model_has_no_io_dependencies() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    for dep in ["tokio", "mio", "async-std", "libc", "nix", "socket2"] {
        assert!(!manifest.contains(&format!("\n{dep}")), "scout-ran must not depend on {dep}");
    }
}
