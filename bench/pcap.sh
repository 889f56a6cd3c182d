#!/usr/bin/env bash
# pcap ingest benchmark (issue: UPF/N4). Makes a large capture by repeating the real `any` capture
# of an N3/N6 UPF host (`n3-n6-ping-any.pcap`, Linux cooked, 20 690 frames) with each copy shifted
# past the previous, then times Scout's ingest (both passes: PFCP and tunnels, then N3<->N6 pairing
# by identity and the Parquet run) and `tshark -T fields` on the same file.
#   bash bench/pcap.sh [COPIES]        (default 300 = 6.2 M frames, 1.08 GB; 2-5 minutes, nearly all of it tshark)
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-300}
fixture=../shared/fixtures/pcap/n3-n6-ping-any.pcap
[ -f "$fixture" ] || { echo "bench/pcap.sh: $fixture not found (the shared fixtures sit beside the project)" >&2; exit 2; }
cargo build --release -q -p scout-ingest --example repeat_pcap --example pcap_run
dir=${SCOUT_BENCH_DIR:-$(mktemp -d)}
trap 'rm -rf "$dir"' EXIT
echo "== making a capture of $copies copies of $fixture"
./target/release/examples/repeat_pcap "$fixture" "$dir/big.pcap" "$copies"
ls -l "$dir/big.pcap" | awk '{printf "%.0f MB\n", $5 / 1e6}'
cat "$dir/big.pcap" > /dev/null   # in the page cache: the figures are the programs', not the disk's
echo "== scout, Rust only (no Python start-up): read twice, pair, write the run"
./target/release/examples/pcap_run "$dir/big.pcap" "$dir/run-rust"
echo "== scout ingest pcap (the CLI, end to end)"
start=$(date +%s.%N)
.venv/bin/scout ingest pcap "$dir/big.pcap" -o "$dir/run-cli" > "$dir/cli.txt"
end=$(date +%s.%N)
head -4 "$dir/cli.txt"
frames=$(python3 -c "import json; print(json.load(open('$dir/run-cli/run.json'))['pcap']['frames'])")
python3 -c "f=$frames; s=$end-$start; print(f'{f:,} frames in {s:.2f} s = {f/s/1e6:.2f} M frames/s (CLI wall time)')"
echo "== the same frames as 4 files rotated in time (each file's first pass on a thread of its own)"
for i in 0 1 2 3; do ./target/release/examples/repeat_pcap "$fixture" "$dir/part-$i.pcap" $((copies / 4)) $((i * copies / 4)) > /dev/null; done
cat "$dir"/part-*.pcap > /dev/null
./target/release/examples/pcap_run "$dir"/part-0.pcap "$dir"/part-1.pcap "$dir"/part-2.pcap "$dir"/part-3.pcap "$dir/run-4"
rm -f "$dir"/part-*.pcap
echo "== tshark -T fields on the same file (time, addresses, IP id, TEID)"
if ! command -v tshark > /dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q tshark > /dev/null
fi
start=$(date +%s.%N)
tshark -r "$dir/big.pcap" -T fields -e frame.time_epoch -e ip.src -e ip.dst -e ip.id -e gtp.teid > /dev/null
end=$(date +%s.%N)
python3 -c "f=$frames; s=$end-$start; print(f'tshark: {f:,} frames in {s:.1f} s = {f/s/1e3:.0f} k frames/s')"
