#!/usr/bin/env bash
# Runs the memory-model litmus tester (configs/litmus-mbp16.json) over node counts, seeds and
# two timing settings, then prints, per test and page protocol, the runs, the forbidden
# outcomes (must be 0) and the allowed relaxed outcomes observed or not, summed over all runs.
# Any failed run makes the script exit 1, printing the command that replays it.
#   scripts/litmus-sweep.sh [SEEDS] [RUNS]     (defaults: 5 seeds, 500 runs per test and protocol)
set -uo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-5}
runs=${2:-500}
bin=build/bin/mbpsim
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0; n=0
for topo in "2 1" "4 1" "4 2" "4 3"; do
  set -- $topo
  nodes=$(( $1 ** $2 ))
  procs=2; [ "$nodes" -ge 64 ] && procs=1
  for timing in default fine; do
    extra=""; [ "$timing" = fine ] && extra="--set node.quantum_ns=5 --set litmus.noise=0 --set litmus.max_skew=100"
    for seed in $(seq 1 "$seeds"); do
      n=$((n + 1))
      cmd="$bin run configs/litmus-mbp16.json --quiet --seed $seed --set network.radix=$1 --set network.levels=$2 --set node.procs=$procs --set litmus.runs=$runs $extra"
      if $cmd --out "$out/r$n" > "$out/log" 2>&1; then
        printf '%3d nodes %-8s seed %-3d %s\n' "$nodes" "$timing" "$seed" \
          "$(python3 -c "import json;s=json.load(open('$out/r$n/stats.json'))['summary'];print('runs',s['runs'],'forbidden',s['forbidden_outcomes'],'relaxed observed',s['relaxed_observed'],'of',s['relaxed_allowed'])")"
      else
        failed=$((failed + 1)); echo "FAILED (exit $?): $cmd"; tail -5 "$out/log"
      fi
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, sys
agg = {}
for f in sorted(glob.glob(sys.argv[1] + "/r*/stats.json")):
    for t, ps in json.load(open(f))["summary"]["tests"].items():
        for p, c in ps.items():
            a = agg.setdefault((t, p), {"runs": 0, "forbidden": 0, "relaxed": {}})
            a["runs"] += c["runs"]; a["forbidden"] += c["forbidden"]
            for o in c.get("relaxed_observed", []) + c.get("relaxed_unobserved", []):
                a["relaxed"].setdefault(o, 0)
                a["relaxed"][o] += c["outcomes"].get(o, 0)
print("\n| test | protocol | runs | forbidden | allowed relaxed outcome: times observed |")
print("|---|---|---|---|---|")
for (t, p), a in agg.items():
    rel = ", ".join(f"`{o}`: {k}" for o, k in a["relaxed"].items()) if p != "mixed" else "(per-location draw)"
    print(f"| {t} | {p} | {a['runs']} | {a['forbidden']} | {rel or 'none (SC only)'} |")
tot = sum(a["runs"] for a in agg.values()); bad = sum(a["forbidden"] for a in agg.values())
print(f"\ntotal: {tot} runs, {bad} forbidden outcomes")
PY
[ "$failed" -eq 0 ]
