#!/usr/bin/env bash
# The speedup of a trace replay over the same trace on one processor, in one command. It runs
# the config twice:
#   1. with trace.placement=single and trace.multiplex=true: every thread time-shares node 0's
#      first processor (the one-processor baseline), and
#   2. as given, with trace.baseline_s set to run 1's exec_time_s, so that its summary holds
#      `speedup`.
# It also gives the region of interest's speedup (roi_begin/roi_end records), which leaves out
# serial initialisation. Its baseline is the parallel trace time-shared on one processor;
# scripts/splash-suite.sh runs a folder of traces against real one-thread captures instead.
# Usage: scripts/trace-speedup.sh CONFIG.json [--out DIR] [--set key=value]...
# DIR (default out/speedup) receives baseline/ and parallel/, each a normal results folder.
# The binary is $MBPSIM if set, else build/bin/mbpsim.
set -euo pipefail
usage() { echo "usage: scripts/trace-speedup.sh CONFIG.json [--out DIR] [--set key=value]..." >&2; exit 1; }
[ $# -ge 1 ] || usage
cfg=$1; shift
[ -f "$cfg" ] || { echo "trace-speedup: $cfg: no such config file" >&2; exit 1; }
out=out/speedup
sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --set) [ $# -ge 2 ] || usage; sets+=(--set "$2"); shift 2 ;;
    *) echo "trace-speedup: unknown argument '$1'" >&2; usage ;;
  esac
done
bin=${MBPSIM:-$(dirname "$0")/../build/bin/mbpsim}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
exec_time() {
  python3 -c "import json,sys; print(repr(json.load(open(sys.argv[1]))['summary']['exec_time_s']))" "$1/stats.json"
}
mkdir -p "$out"
# run NAME [--set ...]: one run into $out/NAME; its console output is shown only if it fails
run() {
  local name=$1; shift
  "$bin" run "$cfg" --quiet --out "$out/$name" "${sets[@]}" "$@" > "$out/$name.log" 2>&1 || { cat "$out/$name.log" >&2; exit 1; }
}
run baseline --set trace.placement=single --set trace.multiplex=true
t1=$(exec_time "$out/baseline")
run parallel --set trace.baseline_s="$t1"
python3 - "$out" <<'PY'
import json, sys
b = json.load(open(sys.argv[1] + "/baseline/stats.json"))["summary"]
p = json.load(open(sys.argv[1] + "/parallel/stats.json"))["summary"]
print("one processor: %.6g s   parallel: %.6g s   speedup %.3f" % (b["exec_time_s"], p["exec_time_s"], p["speedup"]))
if b.get("roi_time_s") and p.get("roi_time_s"):
    print("region of interest: one processor %.6g s   parallel %.6g s   speedup %.3f" % (b["roi_time_s"], p["roi_time_s"], b["roi_time_s"] / p["roi_time_s"]))
else:
    print("region of interest: - (the trace has no roi_begin/roi_end records)")
PY
