#!/usr/bin/env bash
# Runs the MBP coherence tester (configs/mbp16-random-tester.json) over node counts, seeds and
# two cache settings, and prints one line per run and the totals. Any failed run makes the
# script exit 1, printing the command that replays it.
#   scripts/tester-sweep.sh [SEEDS] [CHECKS] [soak]   (defaults: 10 seeds, 5000 checks per run;
#                                                      soak adds 256 nodes: radix 4, 4 levels)
set -uo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
checks=${2:-5000}
bin=build/bin/mbpsim
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
harsh="--set node.l3_pages=1 --set node.l1_bytes=128 --set node.l2_bytes=256 --set node.l2_assoc=2 --set node.ptlb_entries=2 --set node.ptlb_assoc=2 --set mbp.ctlb_entries=2 --set mbp.ctlb_assoc=1 --set mbp.ntlb_entries=2 --set mbp.ntlb_assoc=2 --set tester.pages=2 --set tester.active=32 --set tester.switch_every=5 --set tester.max_gap=3"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=0; failed=0; ops=0; checks_done=0
topos=("2 1" "4 1" "2 3" "4 2" "4 3")
[ "${3:-}" = soak ] && topos+=("4 4")
for topo in "${topos[@]}"; do
  set -- $topo
  nodes=$(( $1 ** $2 ))
  for variant in default small-caches; do
    extra=""; [ "$variant" = small-caches ] && extra=$harsh
    for seed in $(seq 1 "$seeds"); do
      cmd="$bin run configs/mbp16-random-tester.json --quiet --seed $seed --set network.radix=$1 --set network.levels=$2 --set tester.checks=$checks $extra"
      if $cmd --out "$out/r" > "$out/log" 2>&1; then
        s=$(python3 -c "import json;s=json.load(open('$out/r/stats.json'))['summary'];print(s['checks_completed'],s['check_failures'],s['operations'],s['transitions_exercised'])")
        read -r done fails nops trans <<< "$s"
        ops=$((ops + nops)); checks_done=$((checks_done + done))
        if [ "$fails" != 0 ] || [ "$done" != "$checks" ]; then failed=$((failed + 1)); echo "FAILED: $cmd"; fi
        printf '%3d nodes %-12s seed %-3d checks %-6s failures %-3s operations %-8s transitions %s\n' "$nodes" "$variant" "$seed" "$done" "$fails" "$nops" "$trans"
      else
        failed=$((failed + 1)); echo "FAILED (exit $?): $cmd"; tail -5 "$out/log"
      fi
      runs=$((runs + 1))
    done
  done
done
echo "runs $runs, failed $failed, checks $checks_done, processor operations $ops"
[ "$failed" = 0 ]
