#!/usr/bin/env bash
# Scout's simulator against ns-3 LENA on the same traffic (issue 50: >= 20x with TDL fading on
# every UE). Downlink UDP in 1400-byte packets — 1 UE at 60 Mbit/s (Scout: bench-60mbps) and 10 UEs
# sharing 60 Mbit/s — through Scout with TDL-C fading (300 ns, 30 km/h; the 10 UEs also with UMi path
# loss at 50–400 m) and through ns-3's LTE module (LENA: ../shared/anchors/ns3/lena_bench.cc, EPC with
# GTP-U, one 20 MHz eNB, RLC UM, PF scheduler, built against Debian's libns3-dev, installed here
# if missing). Each round times Scout and ns-3 back to back on the same host; prints each run's
# real-time factor, each round's ratio, and the median ratio per setup. Scout writes its
# per-packet telemetry; ns-3 runs twice, bare and with its own LTE statistics traces
# (LteHelper::EnableTraces: PHY and MAC per transport block, RLC and PDCP per 0.25-s epoch —
# the closest it has to telemetry), so each ratio is given against both.
#   bash bench/ns3.sh [DURATION_S] [ROUNDS]      (defaults 10 and 3)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10}
rounds=${2:-3}
anchor=../shared/anchors/ns3
[ -f "$anchor/lena_bench.cc" ] || { echo "bench/ns3.sh: $anchor/lena_bench.cc not found (the shared anchors sit beside the project)" >&2; exit 2; }
if ! pkg-config --exists ns3-lte gsl 2>/dev/null; then
  echo "== installing Debian's ns-3 (libns3-dev) for the peer"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq libns3-dev libgsl-dev pkg-config g++ >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cp "$anchor/lena_bench.cc" "$anchor/build.sh" "$out/"
echo "== building the ns-3 LENA peer and Scout (release)"
sh "$out/build.sh"
cargo build --release -q -p scout-sim --bin scout-sim
cat >"$out/ues10.yaml" <<EOF
name: ues10-tdl
duration_s: $dur
cell_cfg: {channel_bandwidth_MHz: 100, common_scs: 30}
ues: [{count: 10, distance_m: [50, 400], channel: {pathloss: umi, model: tdl-c, delay_spread_ns: 300, speed_kmh: 30}}]
traffic: [{type: udp_cbr, ue: all, dir: dl, rate_mbps: 6, size_bytes: 1400}]
EOF
secs() { # secs CMD...: wall seconds of CMD, its output discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
scout() { rm -rf "$out/run"; secs ./target/release/scout-sim "$1" "$out/run" --duration "$dur" "${@:2}"; }
# ns-3 simulates appStart (0.1 s) plus the traffic's duration.
# (Its traces are written into the current folder: run from $out.)
ns3() { (cd "$out" && secs ./lena_bench --numUes="$1" --rateMbps="$2" --simTime="$dur" --pktSize=1400 "${@:3}"); }
declare -A ratios traced
for r in $(seq "$rounds"); do
  echo "== round $r: $dur s simulated per run"
  for setup in ues1 ues10; do
    if [ $setup = ues1 ]; then
      s=$(scout scenarios/bench-60mbps.yaml --set 'ues[0].channel.model=tdl-c' \
        --set 'ues[0].channel.delay_spread_ns=300' --set 'ues[0].channel.speed_kmh=30')
      n=$(ns3 1 60)
      t=$(ns3 1 60 --traces=true)
    else
      s=$(scout "$out/ues10.yaml")
      n=$(ns3 10 6)
      t=$(ns3 10 6 --traces=true)
    fi
    ratio=$(awk -v s="$s" -v n="$n" 'BEGIN { printf "%.1f", n / s }')
    tratio=$(awk -v s="$s" -v n="$t" 'BEGIN { printf "%.1f", n / s }')
    ratios[$setup]="${ratios[$setup]:-} $ratio"
    traced[$setup]="${traced[$setup]:-} $tratio"
    awk -v k="$setup" -v s="$s" -v n="$n" -v t="$t" -v d="$dur" -v x="$ratio" -v y="$tratio" 'BEGIN {
      printf "%-6s Scout %6.2f s (%5.1fx real time)   ns-3 LENA %7.2f s (%5.2fx), with its traces %7.2f s   Scout is %sx / %sx faster\n", k, s, d / s, n, d / n, t, x, y }'
  done
done
median() { # median LABEL VALUES...
  echo "${@:2}" | tr ' ' '\n' | grep . | sort -g |
    awk -v k="$1" '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
      printf "%-24s %sx (range %s–%s)\n", k, m, v[1], v[NR] }'
}
echo "== median over $rounds rounds (issue 50: >= 20x)"
for setup in ues1 ues10; do
  median "$setup (ns-3 bare)" ${ratios[$setup]}
  median "$setup (ns-3 with traces)" ${traced[$setup]}
done
