#!/usr/bin/env bash
# Prints every socket figure of docs/VALIDATION.md ("UDP/IP on SunOS 4.1.4 against MBCF/Ether"
# and "TCP/IP on SunOS 4.1.4 and Solaris 2.6"): round trips and peak rates of UDP100, UDP10,
# TCP100 and TCP10 beside MBCF/Ether's on the same hardware, TCP1000/Solaris's Tables 6.9 and
# 6.10, and the ray-tracing predictions of Tables 6.6 and 6.8 (withheld from the shared thesis),
# all from the shipped configs.
#   scripts/sockets-validation.sh [--quick]     (--quick: skip the ray-tracing tables)
# Both settings are hubs: each ray-tracing entry is the mean of seeds 1-3 (CSMA/CD back-off is
# random), marked * where they spread by more than 0.1 s (the spread follows).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/mbpsim
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# row TITLE CONFIG [--set ...]: the points' values as one table row
row() {
  local title=$1 cfg=$2; shift 2
  "$bin" run "configs/$cfg" --quiet --out "$out/r" "$@" > "$out/log" 2>&1 || { cat "$out/log"; exit 1; }
  python3 -c "
import json
pts = json.load(open('$out/r/stats.json'))['summary']['points']
print('| $title | ' + ' | '.join('%.4g' % p['value'] for p in pts) + ' |')"
}

sizes5='workload.sizes=[4,16,64,256,1024]'
sizes6='workload.sizes=[4,16,64,256,1024,1408]'
echo "| round trip (us) | 4 | 16 | 64 | 256 | 1024 |"
echo "|---|---|---|---|---|---|"
row "UDP100/SunOS" sockets-ss20-100t-half-udp.json --set "$sizes5"
row "MBCF100 (WRITE with status)" mbcf-ss20-100t-half.json --set "$sizes5" --set 'workload.commands=["write"]'
row "UDP10/SunOS" sockets-ss20-10t-udp.json --set workload.kind=rtt --set "$sizes5"
row "MBCF10 (WRITE with status)" mbcf-ss20-10t.json --set workload.kind=rtt --set "$sizes5" --set 'workload.commands=["write"]'
echo
echo "| peak (MB/s) | 4 | 16 | 64 | 256 | 1024 | 1408 |"
echo "|---|---|---|---|---|---|---|"
row "UDP100/SunOS" sockets-ss20-100t-half-udp.json --set workload.kind=peak --set "$sizes6"
row "MBCF100" mbcf-ss20-100t-half.json --set workload.kind=peak --set "$sizes6"
row "UDP10/SunOS" sockets-ss20-10t-udp.json --set "$sizes6"
row "MBCF10" mbcf-ss20-10t.json --set "$sizes6"
echo
sizes7='workload.sizes=[4,16,64,256,512,1024,1408]'
many='workload.transfers=16384'
long='workload.max_cycles=100000000000'  # a stream that falls into delayed-ACK waits runs for minutes
echo "| TCP/SunOS | 4 | 16 | 64 | 256 | 512 | 1024 | 1408 |"
echo "|---|---|---|---|---|---|---|---|"
row "TCP100 round trip (us)" sockets-ss20-100t-half-tcp.json --set "$sizes7"
row "TCP100 peak (MB/s)" sockets-ss20-100t-half-tcp.json --set workload.kind=peak --set "$many" --set "$long" --set "$sizes7"
row "TCP10 round trip (us)" sockets-ss20-10t-tcp.json --set workload.kind=rtt --set "$sizes7"
row "TCP10 peak (MB/s, to 1024)" sockets-ss20-10t-tcp.json --set "$many" --set "$long" --set 'workload.sizes=[4,16,64,256,512,1024]'
echo
echo "| TCP1000/Solaris | 4 | 16 | 64 | 256 | 1024 | 1408 | 64 KB |"
echo "|---|---|---|---|---|---|---|---|"
row "one way (us), Table 6.10" sockets-ultra60-1000sx-tcp.json
row "peak (MB/s), Table 6.9" sockets-ultra60-1000sx-tcp.json --set workload.kind=peak --set "$many" --set "$long" --set "$sizes6"
row "peak (MB/s), 64 KB send" sockets-ultra60-1000sx-tcp.json --set workload.kind=peak --set 'workload.sizes=[65507]'
[ "${1:-}" = --quick ] && exit 0

for cfg in sockets-ss20-100t-half-udp.json sockets-ss20-10t-udp.json; do
  echo
  echo "${cfg%.json} ray tracing, exec_time_s (calculator nodes x payload bytes):"
  echo "| nodes | 64 | 32 | 16 | 8 | 4 | 2 | 1 |"
  echo "|---|---|---|---|---|---|---|---|"
  for n in 1 2 3 4; do
    line="| $n"
    for b in 64 32 16 8 4 2 1; do
      vs=""
      for seed in 1 2 3; do
        "$bin" run "configs/$cfg" --quiet --out "$out/r" --seed "$seed" --set workload.kind=raytrace --set mbcf.nodes=$((n + 1)) \
          --set workload.calc_nodes=$n --set workload.payload_bytes=$b > "$out/log" 2>&1 || { cat "$out/log"; exit 1; }
        vs="$vs $(python3 -c "import json;s=json.load(open('$out/r/stats.json'))['summary'];assert s['frame_correct'];print(s['exec_time_s'])")"
      done
      v=$(python3 -c "
import sys
v = [float(x) for x in sys.argv[1:]]
m, d = sum(v) / len(v), round(max(v) - min(v), 2)
print('%.2f* (%.2f)' % (m, d) if d > 0.1 else '%.2f' % m)" $vs)
      line="$line | $v"
    done
    echo "$line |"
  done
done
