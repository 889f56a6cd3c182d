#!/usr/bin/env bash
# The UPF probe at a high packet rate (issue: UPF/N4). As root: the test bench's namespaces, one
# AF_PACKET sender injecting G-PDUs at the UPF's N3 and another the same inner packets at its N6,
# RATE each (default 250 000/s: 500 000 packets/s through the probe), for SECONDS (default 5).
# Prints what the kernel saw and paired, ring-buffer loss, and the probe's cost per packet from the
# kernel's BPF statistics; then the same in histogram-only mode.
#   sudo bash bench/probe.sh [RATE] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-250000}
secs=${2:-5}
cargo build --release -q -p scout-probe --example probe_bench
echo "== ring buffer: every pair to user space"
./target/release/examples/probe_bench "$rate" "$secs"
echo "== histogram only"
./target/release/examples/probe_bench "$rate" "$secs" --histogram
