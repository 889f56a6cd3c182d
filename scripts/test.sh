#!/usr/bin/env bash
# Sets up Scout (scripts/setup.sh) and runs every check: formatting, lints, Rust tests, Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== cargo fmt --check";   cargo fmt --all -- --check
echo "== cargo clippy";        cargo clippy --workspace --all-targets -q -- -D warnings
echo "== ruff";                ruff check python && ruff format --check python
echo "== cargo test";          cargo test --workspace --release -q 2>&1 | grep -E '^(test result|running|error|failures|---- )|panicked' || true
cargo test --workspace --release -q >/dev/null 2>&1 || { cargo test --workspace --release 2>&1 | tail -40; exit 1; }
echo "== pytest";              python -m pytest -q python/tests
