#!/usr/bin/env bash
# Table 6.12 of the thesis ("Basic performance of user-level communication mechanisms": peak
# data-transfer rate and round-trip latency) for every transport mbpsim models on the thesis's
# two clusters: MBCF/Ether, UDP and TCP through the conventional OS, and the MBP2P and MBP2C
# NICs. The peak is the best of the sizes run (one packet's data up to 1408 bytes; TCP also one
# 64 KB send, as Table 6.9); the round trip is a 4-byte message's, as each workload reports it
# (MBCF: MBCF_WRITE with status; sockets: TCP_NODELAY; the clock read of host.timer_read_us
# included). The thesis's own MBCF rows stand beside (the other rows are the model's).
#   scripts/table6-12.sh            (a few seconds; build/bin/mbpsim, or the binary in $MBPSIM)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MBPSIM:-build/bin/mbpsim}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# best CONFIG [--set ...]: the largest point value of one run
best() {
  local cfg=$1; shift
  "$bin" run "configs/$cfg" --quiet --out "$out/r" "$@" > "$out/log" 2>&1 || { echo "table6-12: $cfg failed:" >&2; cat "$out/log" >&2; exit 1; }
  python3 -c "
import json
s = json.load(open('$out/r/stats.json'))['summary']
assert s.get('finished', True), 'did not finish'
print('%.4g' % max(p['value'] for p in s['points']))"
}
max2() { python3 -c "import sys; print('%.4g' % max(float(sys.argv[1]), float(sys.argv[2])))" "$1" "$2"; }

peak6='workload.sizes=[4,16,64,256,1024,1408]'
four='workload.sizes=[4]'
write='workload.commands=["write"]'
many='workload.transfers=16384'
long='workload.max_cycles=100000000000'  # a stream that falls into delayed-ACK waits runs for minutes
echo "| machine + software | peak rate (MB/s) | round trip, 4 bytes (us) | thesis |"
echo "|---|---|---|---|"
row() { echo "| $1 | $2 | $3 | $4 |"; }
row "SS-20 + MBCF/100BASE-TX" "$(best mbcf-ss20-100tx.json --set workload.kind=peak --set "$peak6")" \
    "$(best mbcf-ss20-100t-half.json --set workload.kind=rtt --set "$four" --set "$write")" "11.9 MB/s, 49 us"
row "SS-20 + UDP/SunOS 4.1.4, 100BASE-T" "$(best sockets-ss20-100t-half-udp.json --set workload.kind=peak --set "$peak6")" \
    "$(best sockets-ss20-100t-half-udp.json --set workload.kind=rtt --set "$four")" "-"
row "SS-20 + TCP/SunOS 4.1.4, 100BASE-T" "$(best sockets-ss20-100t-half-tcp.json --set workload.kind=peak --set "$peak6" --set "$many" --set "$long")" \
    "$(best sockets-ss20-100t-half-tcp.json --set workload.kind=rtt --set "$four")" "-"
row "SS-20 + MBP2P (1000BASE-SX)" "$(best mbp2p-ss20.json --set workload.kind=peak --set "$peak6")" \
    "$(best mbp2p-ss20.json --set workload.kind=rtt --set "$four" --set "$write")" "-"
row "ULTRA 60 + MBCF/1000BASE-SX" "$(best mbcf-ultra60-1000sx.json --set workload.kind=peak --set "$peak6")" \
    "$(best mbcf-ultra60-1000sx.json --set workload.kind=rtt --set "$four" --set "$write")" "80.9 MB/s, 19.2 us"
row "ULTRA 60 + UDP/Solaris 2.6" "$(best sockets-ultra60-1000sx-udp.json --set workload.kind=peak --set "$peak6")" \
    "$(best sockets-ultra60-1000sx-udp.json --set workload.kind=rtt --set "$four")" "-"
row "ULTRA 60 + TCP/Solaris 2.6" \
    "$(max2 "$(best sockets-ultra60-1000sx-tcp.json --set workload.kind=peak --set "$peak6" --set "$many" --set "$long")" \
             "$(best sockets-ultra60-1000sx-tcp.json --set workload.kind=peak --set 'workload.sizes=[65507]')")" \
    "$(best sockets-ultra60-1000sx-tcp.json --set workload.kind=rtt --set "$four")" "53.06 MB/s (64 KB send, Table 6.9)"
row "ULTRA 60 class + MBP2C (PCI, never built)" "$(best mbp2c-pci.json --set workload.kind=peak --set "$peak6")" \
    "$(best mbp2c-pci.json --set workload.kind=rtt --set "$four" --set "$write")" "-"
