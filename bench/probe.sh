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
# Each setting runs RUNS times (default 3); its figure is the median. Last, the programs run on
# frames with BPF_PROG_TEST_RUN, without traffic (`--test-run`), on one CPU and across two.
#   sudo [RUNS=3] bash bench/probe.sh [RATE] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-250000}
secs=${2:-5}
cargo build --release -q -p scout-probe --example probe_bench
b=./target/release/examples/probe_bench
runs=${RUNS:-3}
# One line per run: the cost, per program, loss and the accounting check; then the median of the
# runs. Runs of one setting differ by tens of ns on a shared virtual machine, more than most
# changes to the program, so a setting's figure is the median of RUNS runs (default 3).
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "== floor: an empty TC program, then one that only reads the clock (median of $runs runs)"
for f in empty clock; do
  for _ in $(seq "$runs"); do "$b" "$rate" "$secs" --floor "$f" | tail -1 | grep -o '[0-9]* ns each' | cut -d' ' -f1; done |
    median | sed "s/^/floor_$f: /; s/$/ ns/"
done
for mode in "" "--histogram"; do
  for setting in "" "--senders 1" "--shared-table" "--pairing cross-cpu"; do
    echo "== ${mode:-ring buffer} ${setting:-(same-cpu, two senders)}"
    costs=()
    for _ in $(seq "$runs"); do
      # shellcheck disable=SC2086
      out=$("$b" "$rate" "$secs" $mode $setting)
      echo "$out" | head -2
      echo "$out" | grep -E 'accounted for|probe cost'
      echo "$out" | grep -E '"n[36]_(ingress|egress)"' | grep -v ': [0-9] runs' | tr -s ' ' | tr '\n' ' '
      echo
      costs+=("$(echo "$out" | grep 'probe cost' | grep -o '[0-9]* ns' | cut -d' ' -f1)")
    done
    printf '%s\n' "${costs[@]}" | median | sed "s/^/median of $runs runs: /; s/$/ ns per sighting/"
  done
done
# The programs' own work with no traffic (BPF_PROG_TEST_RUN, the kernel's timer included): on one
# CPU with their data warm, and with N3 on CPU 0 and N6 on CPU 1 (the shared table's cross-CPU
# cost without senders); then what BPF_PROG_TEST_RUN charges a program that does nothing. For
# comparing versions of the program.
for t in "" "--shared-table" "--pairing cross-cpu" "--floor empty"; do
  echo "== test-run ${t:-(per-CPU tables)}"
  # shellcheck disable=SC2086
  "$b" --test-run 8 $t | tail -1
done
