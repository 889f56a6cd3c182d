#!/usr/bin/env bash
# Simulator and writer benchmarks (issue: model + simulator). Prints the figures recorded in
# bench/RESULTS.md. Run from anywhere: bash bench/simulator.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p scout-sim -p scout-events --bin scout-sim --example writer_bench --example model_bench
out=$(mktemp -d)
echo "== simulator: scenarios/bench-60mbps.yaml (1 UE, 60 Mbit/s DL, 60 s), full telemetry to Parquet"
for i in 1 2 3; do
  rm -rf "$out/run"
  ./target/release/scout-sim scenarios/bench-60mbps.yaml "$out/run" | tail -1
done
echo "== model alone (telemetry counted, not written)"
./target/release/examples/model_bench scenarios/bench-60mbps.yaml
echo "== writer alone: 20 M packet events"
./target/release/examples/writer_bench 20000000
rm -rf "$out"
