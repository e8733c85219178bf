#!/usr/bin/env bash
# The "bad input and limits" table of docs/CORRECTNESS.md: each case below is run with
# build/bin/mbpsim, and its exit status and the first line it printed on stderr go into the
# table between the markers `<!-- limits-table begin -->` and `<!-- limits-table end -->`.
#   scripts/limits-table.sh          rewrite the table (after an intended change; review the diff)
#   scripts/limits-table.sh --check  fail if the table differs from what the binary does now
#                                    (the test Docs.LimitsTableIsCurrent runs this)
# Paths in messages are shown relative: T/ is the cases' scratch folder. Predicted memory
# depends on the host (the process's own size is measured): its figures show as N.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=${MBPSIM_BIN:-$root/build/bin/mbpsim}
doc=docs/CORRECTNESS.md
mode=${1:-write}
[ -x "$bin" ] || { echo "limits-table: $bin not built" >&2; exit 1; }
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Fixtures.
printf '{ "network": { "radix": 4 ' > "$T/malformed.json"
printf '{"workload": {"injection_rat": 0.1}}' > "$T/unknown.json"
printf '{"network": {"radix": 4, "levels": 2, "radix": 4}}' > "$T/twice.json"
mkdir -p "$T/folder.json"
head -c $((17 << 20)) /dev/zero | tr '\0' ' ' > "$T/huge.json"
printf '{"network": {"levels": 2, "watchdog_cycles": 200}, "workload": {"kind": "script", "measure_cycles": 10, "drain_cycles": 5000, "script": [{"src": 4, "dests": [5, 9], "silent": [9]}]}}' > "$T/silent.json"
mkdir -p "$T/foreign" && echo notes > "$T/foreign/notes.txt"
"$bin" run configs/fig2-7-multicast.json --quiet --out "$T/previous" > /dev/null
trace() {  # trace NAME RECORDS...: a one-thread text trace
  local d=$T/$1; shift
  mkdir -p "$d"
  printf 'mbpsim-trace 1\nprogram test\nthreads 1\nencoding text\n' > "$d/trace.meta"
  { echo "mbpsim-trace-stream 1 thread 0"; printf '%s\n' "$@"; echo "end-of-stream $#"; } > "$d/thread-0.txt"
}
trace hugegap "0 begin" "18446744073709551615 load 0x40000000 8" "0 end"
trace unheld "0 begin" "0 release 0x40001000" "0 end"
trace good "0 begin" "10 load 0x40000000 8" "0 end"
mkdir -p "$T/converted" && cp "$T/good/"* "$T/converted/"
cp -r traces/stencil-16t "$T/gzjunk" && printf 'junk' >> "$T/gzjunk/thread-3.bin.gz"

# case | what it asks
cases=(
  "run T/malformed.json|malformed JSON"
  "run T/unknown.json|an unknown key"
  "run T/twice.json|a key named twice"
  "run T/folder.json|a folder as the config"
  "run /dev/zero|a device as the config"
  "run /dev/urandom|a device that never ends"
  "run T/huge.json|a config over 16 MiB"
  "run configs/default.json --seed 18446744073709551615|a seed out of range"
  "run configs/default.json --seed -1|a negative seed (refused as typed)"
  "run configs/default.json --set workload.injection_rate=2|a rate out of range"
  "run configs/default.json --set workload.injection_rate=1e-30 --set workload.measure_cycles=1000|a rate too small for any packet"
  "validate configs/default.json --out T/x|an option only run takes"
  "run configs/default.json --out T/foreign|--out holding files a run does not write"
  "run configs/default.json --out T/previous --keep|--keep on an existing results folder"
  "run configs/default.json --out T/silent.json|--out naming a file"
  "run configs/mbp16.json --set workload.max_cycles=2000|a run cut short by workload.max_cycles"
  "validate configs/mbp64.json --set network.levels=8|a machine too large for this host (65,536 nodes)"
  "run configs/mbp16.json --set experiment.max_memory_gb=0.01|a run predicted to need more than experiment.max_memory_gb"
  "run configs/net-qtree64-booksim.json --set workload.injection_rate=0.1|a saturated network"
  "run configs/net-qtree64-uniform.json --set workload.injection_rate=1 --set workload.measure_cycles=100000 --set workload.drain_cycles=100|an overloaded source queue (bounded by workload.source_queue)"
  "run T/silent.json --seed 7|a simulated failure (a receiver that never acknowledges)"
  "run configs/splash-mbp16.json --set trace.path=T/hugegap|a trace gap of 2^64-1"
  "run configs/splash-mbp16.json --set trace.path=T/unheld|a trace releasing a lock it does not hold"
  "run configs/splash-mbp16.json --set trace.path=T/gzjunk|bytes after the end of a stream's gzip data"
  "run configs/splash-mbp16.json --set trace.validate=false --set trace.path=T/unheld|the same, not validated"
  "trace convert T/good T/converted --to binary|trace convert onto an existing trace"
)

table="| case | command (\`mbpsim ...\`; a run writes into a scratch \`--out\` unless one is shown) | status | first line on stderr |
|---|---|---|---|"
for c in "${cases[@]}"; do
  args=${c%%|*}
  what=${c#*|}
  real=${args//T\//$T/}
  if [[ $args == run* ]]; then
    real+=" --quiet"
    [[ $args == *--out* ]] || real+=" --out $T/o"  # never the default out/ in the checkout
  fi
  set +e
  # shellcheck disable=SC2086
  (cd "$root" && timeout 60 "$bin" $real > /dev/null 2> "$T/stderr" < /dev/null)
  status=$?
  set -e
  err=$(head -n 1 "$T/stderr")
  err=${err//$T\//T/}
  err=${err//$root\//}
  err=$(sed -E 's/[0-9]+\.[0-9]+ (KiB|MiB|GiB)/N \1/g' <<< "$err")
  err=${err//|/\\|}
  [ -n "$err" ] || err="-"
  table+="
| $what | \`${args}\` | $status | $err |"
done

begin='<!-- limits-table begin -->'
end='<!-- limits-table end -->'
grep -qF "$begin" "$doc" || { echo "limits-table: $doc has no '$begin' marker" >&2; exit 1; }
export LIMITS_TABLE=$table  # (through the environment: awk -v would read backslashes as escapes)
new=$(awk -v b="$begin" -v e="$end" '
  $0 == b { print; print ENVIRON["LIMITS_TABLE"]; skip = 1; next }
  $0 == e { skip = 0 }
  !skip { print }' "$doc")
case "$mode" in
  --check)
    if [ "$new" != "$(cat "$doc")" ]; then
      diff <(cat "$doc") <(printf '%s\n' "$new") >&2 || true
      echo "limits-table: $doc's table differs from what mbpsim does now; run scripts/limits-table.sh and review the diff" >&2
      exit 1
    fi
    echo "limits-table: $doc is current (${#cases[@]} cases)" ;;
  write) printf '%s\n' "$new" > "$doc"; echo "limits-table: wrote ${#cases[@]} cases into $doc" ;;
  *) echo "usage: scripts/limits-table.sh [--check]" >&2; exit 1 ;;
esac
