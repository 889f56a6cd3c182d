#!/usr/bin/env bash
# What the modelled radio costs the simulator (issue 50): the same traffic with a constant SINR and
# with TDL-C fading (300 ns, 30 km/h) on every UE, for bench-60mbps (1 UE, 60 Mbit/s DL, 100 MHz)
# and for 10 and 100 UEs sharing 60 Mbit/s of DL in the same cell (UMi path loss, UEs 50-400 m);
# and bench-60mbps faded over 4 x 4 antennas (16 TDL processes, rank adaptation).
# Prints each run's wall time and real-time factor, then each pair's ratio (fading / constant)
# and the 100-UE cost against the 10-UE one (the issue's bound: within 3x at the same traffic).
#   bash bench/radio.sh [DURATION_S]      (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-20}
cargo build --release -q -p scout-sim --bin scout-sim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# scenario UEs: a cell of 100 MHz at 30 kHz, UEs sharing 60 Mbit/s of DL UDP in 1400-byte packets.
many() {
  local n=$1 radio=$2
  local chan="{dl_sinr_db: 25, ul_sinr_db: 18}"
  local place=""
  if [ "$radio" = fading ]; then
    chan="{pathloss: umi, model: tdl-c, delay_spread_ns: 300, speed_kmh: 30}"
    place="distance_m: [50, 400], "
  fi
  cat >"$out/many-$n-$radio.yaml" <<EOF
name: many-$n-$radio
duration_s: $dur
cell_cfg: {channel_bandwidth_MHz: 100, common_scs: 30}
ues: [{count: $n, ${place}channel: $chan}]
traffic: [{type: udp_cbr, ue: all, dir: dl, rate_mbps: $(awk -v n="$n" 'BEGIN { printf "%g", 60 / n }'), size_bytes: 1400}]
EOF
  echo "$out/many-$n-$radio.yaml"
}
time_run() {  # time_run NAME SCENARIO [--set ...]: prints "NAME wall_s"
  local name=$1 sc=$2
  shift 2
  rm -rf "$out/run"
  local t0 t1
  t0=$(date +%s.%N)
  ./target/release/scout-sim "$sc" "$out/run" --duration "$dur" "$@" >/dev/null
  t1=$(date +%s.%N)
  awk -v n="$name" -v a="$t0" -v b="$t1" -v d="$dur" 'BEGIN { printf "%-22s %7.2f s  %6.1fx real time\n", n, b - a, d / (b - a) }'
}
declare -A wall
run() {
  local line
  line=$(time_run "$@")
  echo "$line"
  wall[$1]=$(echo "$line" | awk '{print $2}')
}
echo "== ${dur} s simulated per run (release build)"
run bench60-constant scenarios/bench-60mbps.yaml
run bench60-tdl scenarios/bench-60mbps.yaml --set 'ues[0].channel.model=tdl-c' \
  --set 'ues[0].channel.delay_spread_ns=300' --set 'ues[0].channel.speed_kmh=30'
run bench60-tdl-4x4 scenarios/bench-60mbps.yaml --set 'ues[0].channel.model=tdl-c' \
  --set 'ues[0].channel.delay_spread_ns=300' --set 'ues[0].channel.speed_kmh=30' \
  --set 'cell_cfg.nof_antennas_dl=4' --set 'ues[0].channel.ue_antennas=4'
for n in 10 100; do
  run "ues$n-constant" "$(many "$n" constant)"
  run "ues$n-tdl" "$(many "$n" fading)"
done
echo "== ratios"
awk -v a="${wall[bench60-tdl]}" -v b="${wall[bench60-constant]}" 'BEGIN { printf "bench-60mbps: fading costs %.2fx the constant channel\n", a / b }'
awk -v a="${wall[bench60-tdl-4x4]}" -v b="${wall[bench60-tdl]}" 'BEGIN { printf "bench-60mbps: 4 x 4 costs %.2fx 1 x 1, both faded\n", a / b }'
awk -v a="${wall[ues10-tdl]}" -v b="${wall[ues10-constant]}" 'BEGIN { printf "10 UEs: fading costs %.2fx\n", a / b }'
awk -v a="${wall[ues100-tdl]}" -v b="${wall[ues100-constant]}" 'BEGIN { printf "100 UEs: fading costs %.2fx\n", a / b }'
awk -v a="${wall[ues100-tdl]}" -v b="${wall[ues10-tdl]}" 'BEGIN { printf "100 UEs against 10 at the same traffic, with fading: %.2fx (bound: 3x)\n", a / b }'
