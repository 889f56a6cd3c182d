//! What the integration tests share: the fixtures in `../shared/fixtures/` beside the project.

use std::path::PathBuf;

/// `../shared/fixtures/DIR/NAME`, or `None` with a message when absent (as in a user's clone: the
/// test then skips, saying so). Under `CI=true` a missing fixture fails the test instead: CI has
/// `../shared` beside its clone, so a fixture absent there is a moved or renamed file, and a test
/// that passed by not running would hide it.
pub fn shared_fixture(dir: &str, name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures").join(dir).join(name);
    if p.exists() {
        return Some(p);
    }
    let why = format!("{} not found (the shared fixtures sit beside the project in CI)", p.display());
    assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true: {why}");
    eprintln!("skipping: {why}");
    None
}
