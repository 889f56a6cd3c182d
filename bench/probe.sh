#!/usr/bin/env bash
# The UPF probe at a high packet rate (issue: UPF/N4). As root: the test bench's namespaces; G-PDUs
# injected at the UPF's N3 and the same inner packets at its N6 with AF_PACKET senders, RATE per side
# (default 250 000/s: 500 000 packets/s through the probe), for SECONDS (default 5).
#
# First the floor: what the kernel's accounting charges a TC program that does nothing, and one
# that only reads the clock (every sighting reads it once). Then the probe, each run printing what
# the kernel saw and paired, every sighting accounted for, ring-buffer loss, and the cost per packet
# from the kernel's BPF statistics (run_time_ns / run_count, BPF_ENABLE_STATS):
#   - same-cpu traffic (each of two senders, one per CPU, sends its packets on both sides, as a UPF
#     forwarding in the kernel) with `--pairing same-cpu` (a table per CPU), ring and histogram;
#   - the same with one sender (one CPU forwarding all 500 000 packets/s);
#   - the same traffic with the shared table (`--pairing any-cpu`, the CLI's default);
#   - cross-cpu traffic (one sender per side: a packet's sightings on different CPUs, as in a
#     user-space UPF) with the shared table.
#   sudo bash bench/probe.sh [RATE] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-250000}
secs=${2:-5}
cargo build --release -q -p scout-probe --example probe_bench
b=./target/release/examples/probe_bench
echo "== floor: an empty TC program, then one that only reads the clock"
"$b" "$rate" "$secs" --floor empty | tail -1
"$b" "$rate" "$secs" --floor clock | tail -1
for mode in "" "--histogram"; do
  for setting in "" "--senders 1" "--shared-table" "--pairing cross-cpu"; do
    # shellcheck disable=SC2086
    echo "== ${mode:-ring buffer} ${setting:-(same-cpu, two senders)}"
    # shellcheck disable=SC2086
    "$b" "$rate" "$secs" $mode $setting
  done
done
