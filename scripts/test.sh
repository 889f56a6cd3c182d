#!/usr/bin/env bash
# Sets up Scout (scripts/setup.sh) and runs every check: formatting, lints, Rust tests, Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# The suite's builds use the `ci` profile (Cargo.toml): setup's and cargo test's share it.
# It also installs PySpark and Java: `--engine spark` is tested against DuckDB (test_spark.py).
SCOUT_PROFILE=ci SCOUT_WITH_SPARK=1 bash scripts/setup.sh
echo "   (set-up: ${SECONDS} s)"
# The report test drives a real browser: Debian's Chromium, through Playwright's Python client
# (no browser download; Playwright is pointed at /usr/bin/chromium).
LOG="$PWD/.setup.log"
quietly() {  # quietly "what" command...: output to the set-up log, shown only on failure
  local what=$1
  shift
  printf 'test: %s ... ' "$what"
  if "$@" >>"$LOG" 2>&1; then echo ok; else
    echo FAILED; tail -n 25 "$LOG" >&2; echo "--- the whole output is in $LOG" >&2; exit 1
  fi
}
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v chromium >/dev/null 2>&1; then
  quietly "Debian chromium for the report test" bash -c \
    "$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium"
fi
quietly "playwright (Python client; it drives Debian's chromium)" .venv/bin/python -m pip install -q "playwright>=1.45"
export PATH="$PWD/.venv/bin:$PATH"
step() {  # step "what" command...: runs one check, then says how long it took
  local what=$1 t=$SECONDS
  shift
  echo "== $what"
  "$@"
  echo "   ($what: $((SECONDS - t)) s; ${SECONDS} s since the start)"
}
step "cargo fmt --check" cargo fmt --all -- --check
# Clippy in the same profile: it reuses the set-up's build scripts and proc macros (and the
# dependencies' metadata) instead of checking everything again in `dev` — 33 s here, not 108 s. No
# code here depends on debug_assertions, the one thing the profiles differ in for lints.
step "cargo clippy" cargo clippy --workspace --all-targets --profile ci -q -- -D warnings
# The workspace unifies features: scout-events without `parquet`, as scout-ran and scout-live build
# it, is only checked when they are checked alone (an unused import there once passed the above).
step "cargo clippy (scout-ran, scout-live alone)" \
  cargo clippy -p scout-ran -p scout-live --all-targets --profile ci -q -- -D warnings
step "ruff" bash -c 'ruff check python && ruff format --check python'
step "cargo test" cargo test --workspace --profile ci -q
step "fuzz (each target 30 s; docs/robustness.md)" bash bench/fuzz.sh all 0.5
# The ten slowest tests are listed at the end: the suite's budget is 40 min on 2 cores.
step "pytest" python -m pytest -q --durations=10 python/tests
