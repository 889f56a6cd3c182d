#!/usr/bin/env bash
# Sets up everything Scout needs on a fresh Debian machine (as root, or with sudo available):
# Debian build packages, a Python virtual environment in .venv with Scout's Python dependencies, and
# the Rust extension built in release mode. Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The probe's TC-BPF program is compiled with clang (-target bpf) against libbpf's headers; its
# test bench makes network namespaces with iproute2.
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
[ -f /usr/include/bpf/bpf_helpers.h ] || need_apt+=(libbpf-dev)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
if ((${#need_apt[@]})); then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  for d in "$HOME/.cargo/bin" /usr/local/cargo/bin; do [ -x "$d/cargo" ] && export PATH="$d:$PATH"; done
fi
command -v cargo >/dev/null 2>&1 || { echo "setup: error: cargo (Rust >= 1.88) not found; install Rust with rustup" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "maturin>=1.5,<2" "pyarrow>=14" "duckdb>=1.1,<2" "ibis-framework[duckdb]>=10,<13" \
  "pandas>=2" "numpy>=1.26" "matplotlib>=3.8" "pytest>=8" "ruff>=0.6"
echo "setup: building the Rust extension (release)"
(. .venv/bin/activate && maturin develop --release -q 2>&1 | grep -v '^📦\|^🔗\|^🐍\|^⚠' || true)
.venv/bin/python -c 'import scout._native' || { echo "setup: error: the extension did not build" >&2; exit 1; }
echo "setup: done (activate with: . .venv/bin/activate)"
