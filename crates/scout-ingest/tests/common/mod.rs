//! What the integration tests share: the fixtures in `../shared/fixtures/` beside the project.

use std::path::PathBuf;

/// `../shared/fixtures/DIR/NAME`, or `None` with a message when absent (as in a user's clone: the
/// test then skips).
pub fn shared_fixture(dir: &str, name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures").join(dir).join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found (the shared fixtures sit beside the project in CI)", p.display());
        None
    }
}
