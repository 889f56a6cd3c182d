#!/usr/bin/env bash
# Sets up everything Scout needs on a fresh Debian machine (as root, or with sudo available):
# Debian build packages, a Python virtual environment in .venv with Scout's Python dependencies, and
# the Rust extension built in release mode. Idempotent; safe to run again.
#
# It prints one line per step; what apt, pip and cargo say goes to .setup.log, whose last lines and
# path are printed when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG="$PWD/.setup.log"
: >"$LOG"

# step "what" command...: runs the command with its output in the log; on failure, shows the end.
step() {
  local what=$1
  shift
  local t0=$SECONDS
  printf 'setup: %s ... ' "$what"
  if "$@" >>"$LOG" 2>&1; then
    echo "ok ($((SECONDS - t0)) s)"
  else
    echo "FAILED"
    echo "--- last lines of $LOG:" >&2
    tail -n 25 "$LOG" >&2
    echo "--- the whole output is in $LOG" >&2
    exit 1
  fi
}

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_install() {
  $SUDO apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@"
}

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The probe's TC-BPF program is compiled with clang (-target bpf) against libbpf's headers; its
# test bench makes network namespaces with iproute2.
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
[ -f /usr/include/bpf/bpf_helpers.h ] || need_apt+=(libbpf-dev)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
# The emulator's tests run real applications through it.
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
command -v iperf3 >/dev/null 2>&1 || need_apt+=(iperf3)
if ((${#need_apt[@]})); then
  step "Debian packages: ${need_apt[*]}" apt_install "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  for d in "$HOME/.cargo/bin" /usr/local/cargo/bin; do [ -x "$d/cargo" ] && export PATH="$d:$PATH"; done
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: error: cargo (Rust >= 1.88) not found; install Rust with rustup" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  step "Python virtual environment (.venv)" python3 -m venv .venv
fi
pip_install() {
  # (Inside `if`, bash does not stop at a failed command: each is chained.)
  .venv/bin/python -m pip install -q --upgrade pip &&
    .venv/bin/python -m pip install -q "maturin>=1.5,<2" "pyarrow>=14" "duckdb>=1.1,<2" "ibis-framework[duckdb]>=10,<13" \
    "pandas>=2" "numpy>=1.26" "matplotlib>=3.8" "pytest>=8" "ruff>=0.6"
}
step "Python packages (pyarrow, duckdb, ibis, pandas, matplotlib, maturin, pytest, ruff)" pip_install
# `scout analyze --engine spark` (docs/spark.md): PySpark (~450 MB, in the versions Ibis supports) and
# a Java runtime, only when asked for (the test suite asks).
if [ "${SCOUT_WITH_SPARK:-0}" = 1 ]; then
  command -v java >/dev/null 2>&1 || step "Debian package: default-jre-headless (Java for Spark)" apt_install default-jre-headless
  step "PySpark (for --engine spark)" .venv/bin/python -m pip install -q "pyspark>=3.5,<4.1"
fi
# Cargo profile of what is built here: `release` (thin LTO) for users; the test suite
# (scripts/test.sh) sets SCOUT_PROFILE=ci (no LTO, no debug info), which `cargo test --profile ci`
# then reuses instead of building the workspace a second time.
PROFILE=${SCOUT_PROFILE:-release}
build() {
  (. .venv/bin/activate && maturin develop --profile "$PROFILE") &&
    .venv/bin/python -c 'import scout._native' &&
    # The package is installed editable: its bytecode is written here, once, for environments
    # that set PYTHONDONTWRITEBYTECODE (else every command compiles it again, ~30 ms of its start).
    .venv/bin/python -m compileall -q python/scout >/dev/null
}
step "the Rust extension scout._native (cargo, $PROFILE; minutes on a fresh machine)" build
# The emulator's adaptive sender (UDP Prague, ANBR), for `scout experiment l4s-anbr --emulate`,
# and Scout's UPF process (docs/upf.md).
# (`-p scout-py` too, though nothing of it is built: cargo then resolves the dependencies' features
# as it did for the extension and reuses that build, where `-p scout-emu` alone compiles syn,
# parquet and the workspace again with scout-emu's narrower features — two minutes here.)
step "scout-prague and scout-upf (target/$PROFILE/)" cargo build --profile "$PROFILE" -q -p scout-py -p scout-emu --bin scout-prague --bin scout-upf
echo "setup: done (activate with: . .venv/bin/activate)"
