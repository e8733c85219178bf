#!/usr/bin/env bash
# Runs the MBCF random tester (configs/mbcf-tester-{ether,mbp2}.json) over fault settings,
# node counts and seeds, and prints one line per run and the totals. Any failed run makes the
# script exit 1, printing the command that replays it.
#   scripts/mbcf-tester-sweep.sh [SEEDS] [OPS] [FIRST]
#       (defaults: 10 seeds from seed 1, 20 operations per client; FIRST moves the seeds, so a
#       soak explores runs the default sweep has not)
set -uo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
ops=${2:-20}
first=${3:-1}
bin=build/bin/mbpsim
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
declare -A faults=(
  [ether-hub-loss]="configs/mbcf-tester-ether.json"
  [ether-switch-dup-reorder]="configs/mbcf-tester-ether.json --set ether.medium=switch --set ether.loss=0.02 --set ether.duplicate=0.1 --set ether.reorder=0.1 --set ether.reorder_max_ns=200000"
  [mbp2-loss-dup-reorder]="configs/mbcf-tester-mbp2.json"
  [mbp2-blackholes]="configs/mbcf-tester-mbp2.json --set ether.blackhole_every_us=5000 --set ether.blackhole_us=2000"
)
runs=0; failed=0; checks=0
for f in ether-hub-loss ether-switch-dup-reorder mbp2-loss-dup-reorder mbp2-blackholes; do
  for nodes in 3 5 9 17; do
    for seed in $(seq "$first" $((first + seeds - 1))); do
      cmd="$bin run ${faults[$f]} --quiet --seed $seed --set mbcf.nodes=$nodes --set mbcf_tester.ops=$ops"
      if $cmd --out "$out/r" > "$out/log" 2>&1; then
        n=$(python3 -c "import json;s=json.load(open('$out/r/stats.json'))['summary'];print(s['checks'] if s['failed']==0 else -1)")
        if [ "$n" -lt 0 ]; then failed=$((failed + 1)); echo "FAILED: $cmd"; else checks=$((checks + n)); fi
      else
        failed=$((failed + 1)); echo "FAILED (exit $?): $cmd"; grep "check failed" "$out/log" | cut -c1-400
      fi
      runs=$((runs + 1))
    done
    printf '%-26s %2d nodes: %d seeds done\n' "$f" "$nodes" "$seeds"
  done
done
echo "runs $runs, checks passed $checks, failed runs $failed"
[ "$failed" = 0 ]
