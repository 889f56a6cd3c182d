#!/usr/bin/env bash
# Sets up Scout (scripts/setup.sh) and runs every check: formatting, lints, Rust tests, Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== cargo fmt --check";   cargo fmt --all -- --check
echo "== cargo clippy";        cargo clippy --workspace --all-targets -q -- -D warnings
echo "== ruff";                ruff check python && ruff format --check python
echo "== cargo test";          cargo test --workspace --release
echo "== pytest";              python -m pytest -q python/tests
