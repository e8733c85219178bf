#!/usr/bin/env bash
# The "Predicted memory" table of docs/PERFORMANCE.md: every shipped config and a few large
# cases are run with build/bin/mbpsim; the memory it predicted before building
# (host.json predicted_memory_bytes) is set beside the peak resident set it reached
# (peak_memory_bytes), and the table goes between `<!-- memory-table begin -->` and
# `<!-- memory-table end -->`. About two minutes on 2 cores.
#   scripts/memory-table.sh           rewrite the table
#   scripts/memory-table.sh --print   print it only
# The figures are this host's: a kernel that maps a shared zero page makes cache arrays that
# are only looked up cost nothing, and the prediction follows (reads_make_pages_resident).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MBPSIM_BIN:-$PWD/build/bin/mbpsim}
doc=docs/PERFORMANCE.md
mode=${1:-write}
[ -x "$bin" ] || { echo "memory-table: $bin not built" >&2; exit 1; }
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cases=()
for f in configs/*.json; do cases+=("$f"); done
cases+=(
  "configs/mbp16.json --set node.l2_bytes=67108864"
  "configs/mbp16.json --set network.levels=4 --set sharing.refs_per_proc=2000"
  "configs/mbp16-random-tester.json --set network.levels=3"
  "configs/splash-mbp16.json --set network.levels=3"
  "configs/net-qtree64-uniform.json --set network.levels=5"
  "configs/net-qtree64-uniform.json --set network.levels=6 --set workload.measure_cycles=2000"
  "configs/mbcf-tester-ether.json --set mbcf.nodes=32"
  "configs/mbcf-tester-mbp2.json --set mbcf.nodes=32"
)

table="| run (\`mbpsim run ...\`) | status | predicted | peak RSS | predicted / peak |
|---|---|---|---|---|"
for c in "${cases[@]}"; do
  set +e
  # shellcheck disable=SC2086
  "$bin" run $c --quiet --out "$T/o" > /dev/null 2>&1
  status=$?
  set -e
  [ -f "$T/o/host.json" ] || { table+="
| \`$c\` | $status | - | - | - |"; continue; }
  row=$(python3 - "$T/o/host.json" <<'EOF'
import json, sys
h = json.load(open(sys.argv[1]))
p, q = h["peak_memory_bytes"], h["predicted_memory_bytes"]
mib = lambda b: "%.1f MiB" % (b / 2**20)
print("%s | %s | %+.1f%%" % (mib(q), mib(p), 100.0 * (q - p) / p))
EOF
)
  rm -rf "$T/o"
  table+="
| \`$c\` | $status | $row |"
done

case "$mode" in
  --print) printf '%s\n' "$table" ;;
  write)
    begin='<!-- memory-table begin -->'
    end='<!-- memory-table end -->'
    grep -qF "$begin" "$doc" || { echo "memory-table: $doc has no '$begin' marker" >&2; exit 1; }
    export MEMORY_TABLE=$table
    new=$(awk -v b="$begin" -v e="$end" '
      $0 == b { print; print ENVIRON["MEMORY_TABLE"]; skip = 1; next }
      $0 == e { skip = 0 }
      !skip { print }' "$doc")
    printf '%s\n' "$new" > "$doc"
    echo "memory-table: wrote ${#cases[@]} runs into $doc" ;;
  *) echo "usage: scripts/memory-table.sh [--print]" >&2; exit 1 ;;
esac
