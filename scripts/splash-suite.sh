#!/usr/bin/env bash
# The SPLASH-2 suite runner: replays every trace of a folder on machines of several sizes and
# writes one table (CSV and Markdown) of what a researcher would publish from them.
#
# Usage: scripts/splash-suite.sh TRACES [--out DIR] [--nodes 16,64] [--config CONFIG.json]
#                                [--set key=value]...
#   TRACES   a folder of trace folders (each with a trace.meta). A folder named NAME-1t is the
#            one-thread capture of the same input as NAME-<P>t (for example fft-16t and
#            fft-1t): it is the baseline of every NAME-<P>t and is not replayed on its own.
#   --nodes  machine sizes, each a power of 4 (the quad tree: 4, 16, 64, 256, ...); default 16,64
#   --config the machine (default configs/splash-mbp16.json; its network.levels is set per size)
#   --set    passed to every run (for example workload.max_cycles=4000000000)
#   DIR      (default out/splash-suite) receives one results folder per run, suite.csv and suite.md.
#
# Speedup is the baseline's time over the parallel run's, for the whole run and for the region
# of interest (roi_begin/roi_end records; serial initialisation excluded). The baseline is the
# NAME-1t trace replayed on one processor of the first machine size when it exists ("one-thread trace"), else the same
# trace with every thread time-sharing one processor ("time-shared", which is not a real
# one-thread run: it keeps the parallel version's extra work and synchronisation).
#
# A run that fails is a row with its status and first error line; the others go on. Exit
# status: 0 when every run finished, 1 for bad arguments, 3 when any run failed or stopped at
# workload.max_cycles. The binary is $MBPSIM if set, else build/bin/mbpsim.
set -euo pipefail
usage() { echo "usage: scripts/splash-suite.sh TRACES [--out DIR] [--nodes 16,64] [--config CONFIG.json] [--set key=value]..." >&2; exit 1; }
[ $# -ge 1 ] || usage
traces=$1; shift
[ -d "$traces" ] || { echo "splash-suite: $traces: no such folder" >&2; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)
out=out/splash-suite
nodes=16,64
cfg=$here/configs/splash-mbp16.json
sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --nodes) [ $# -ge 2 ] || usage; nodes=$2; shift 2 ;;
    --config) [ $# -ge 2 ] || usage; cfg=$2; shift 2 ;;
    --set) [ $# -ge 2 ] || usage; sets+=(--set "$2"); shift 2 ;;
    *) echo "splash-suite: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -f "$cfg" ] || { echo "splash-suite: $cfg: no such config file" >&2; exit 1; }
levels_of() {  # nodes -> quad-tree levels, or nothing
  local n=$1 l=0
  while [ "$n" -gt 1 ] && [ $((n % 4)) -eq 0 ]; do n=$((n / 4)); l=$((l + 1)); done
  [ "$n" -eq 1 ] && [ "$l" -ge 1 ] && echo "$l"
}
IFS=, read -r -a sizes <<< "$nodes"
for n in "${sizes[@]}"; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ -n "$(levels_of "$n")" ] || { echo "splash-suite: --nodes: $n is not a power of 4 (4, 16, 64, ...)" >&2; exit 1; }
done
bin=${MBPSIM:-$here/build/bin/mbpsim}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
mkdir -p "$out/runs"
runs="$out/runs.txt"
: > "$runs"
# run NAME TRACE_DIR ARGS...: one replay into $out/runs/NAME; its status and log are kept
run() {
  local name=$1 dir=$2; shift 2
  local st=0
  "$bin" run "$cfg" --quiet --out "$out/runs/$name" --set trace.path="$dir" "${sets[@]}" "$@" > "$out/runs/$name.log" 2>&1 || st=$?
  echo "$st"
}
for d in "$traces"/*/; do
  d=${d%/}
  [ -f "$d/trace.meta" ] || continue
  name=$(basename "$d")
  [[ "$name" == *-1t ]] && continue
  base=""
  [[ "$name" =~ ^(.*)-[0-9]+t$ ]] && [ -f "$traces/${BASH_REMATCH[1]}-1t/trace.meta" ] && base="$traces/${BASH_REMATCH[1]}-1t"
  # The baseline runs on one processor of the first machine size.
  one=(--set network.levels="$(levels_of "${sizes[0]}")" --set trace.placement=single --set trace.multiplex=true)
  if [ -n "$base" ]; then
    bst=$(run "$name.baseline" "$base" "${one[@]}")
    kind="one-thread trace"
  else
    bst=$(run "$name.baseline" "$d" "${one[@]}")
    kind="time-shared"
  fi
  for n in "${sizes[@]}"; do
    st=$(run "$name.$n" "$d" --set network.levels="$(levels_of "$n")" --set trace.multiplex=true)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$n" "$st" "$kind" "$bst" "$d" >> "$runs"
  done
done
[ -s "$runs" ] || { echo "splash-suite: $traces holds no trace folder (a folder with trace.meta, not named *-1t)" >&2; exit 1; }
python3 - "$out" <<'PY'
import csv, json, os, sys
out = sys.argv[1]
fields = ["trace", "program", "threads", "nodes", "status", "baseline", "exec_time_s", "roi_time_s", "speedup", "roi_speedup",
          "busy_fraction", "memory_stall_fraction", "sync_fraction", "l1_miss_rate", "l2_miss_rate", "remote_misses",
          "coherence_messages", "network_bytes", "references", "host_references_per_s", "error"]
def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
def first_error(log):
    try:
        for line in open(log):
            if line.startswith("mbpsim:") and ("error" in line or "limit" in line or ":" in line[7:]):
                return line.strip()
    except OSError:
        pass
    return ""
rows, bad = [], 0
for line in open(os.path.join(out, "runs.txt")):
    name, n, st, kind, bst, d = line.rstrip("\n").split("\t")
    run = os.path.join(out, "runs", "%s.%s" % (name, n))
    base = os.path.join(out, "runs", "%s.baseline" % name)
    s = (load(os.path.join(run, "stats.json")) or {}).get("summary", {})
    h = load(os.path.join(run, "host.json")) or {}
    b = (load(os.path.join(base, "stats.json")) or {}).get("summary", {})
    ok = st == "0" and s.get("finished") is True
    bok = bst == "0" and b.get("finished") is True
    r = {k: None for k in fields}
    r.update(trace=name, program=s.get("program"), threads=s.get("threads"), nodes=int(n), baseline=kind)
    r["status"] = "ok" if ok and bok else ("failed (exit %s)" % st if not ok else "baseline failed (exit %s)" % bst)
    if not (ok and bok):
        bad += 1
        r["error"] = first_error(run + ".log") if not ok else first_error(base + ".log")
    if ok:
        for k in ("exec_time_s", "roi_time_s", "busy_fraction", "memory_stall_fraction", "sync_fraction", "references"):
            r[k] = s.get(k)
        if s.get("l1_hit_rate") is not None: r["l1_miss_rate"] = 1 - s["l1_hit_rate"]
        if s.get("l2_hit_rate") is not None: r["l2_miss_rate"] = 1 - s["l2_hit_rate"]
        r["remote_misses"] = s.get("served_via_mbp")
        m = s.get("coherence_messages")
        r["coherence_messages"] = sum(m.values()) if isinstance(m, dict) else m
        lv = s.get("network_bytes_per_level")
        if isinstance(lv, list): r["network_bytes"] = sum(x["down_bytes"] + x["up_bytes"] for x in lv)
        r["host_references_per_s"] = h.get("references_per_second")
    if ok and bok:
        if s.get("exec_time_s") and b.get("exec_time_s"): r["speedup"] = b["exec_time_s"] / s["exec_time_s"]
        if s.get("roi_time_s") and b.get("roi_time_s"): r["roi_speedup"] = b["roi_time_s"] / s["roi_time_s"]
    rows.append(r)
with open(os.path.join(out, "suite.csv"), "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else ("%.6g" % v if isinstance(v, float) else v)) for k, v in r.items()})
def cell(v):
    if v is None: return "-"
    return "%.4g" % v if isinstance(v, float) else str(v)
shown = ["trace", "threads", "nodes", "status", "baseline", "exec_time_s", "roi_time_s", "speedup", "roi_speedup", "busy_fraction",
         "memory_stall_fraction", "sync_fraction", "l1_miss_rate", "l2_miss_rate", "remote_misses", "coherence_messages", "host_references_per_s"]
with open(os.path.join(out, "suite.md"), "w") as f:
    f.write("| " + " | ".join(shown) + " |\n|" + "---|" * len(shown) + "\n")
    for r in rows:
        f.write("| " + " | ".join(cell(r[k]) for k in shown) + " |\n")
    f.write("\nTimes in simulated seconds; fractions of the threads' time; speedup = baseline time / run time (`-`: not measured).\n")
print(open(os.path.join(out, "suite.md")).read(), end="")
print("splash-suite: %d runs, %d failed; %s/suite.csv, %s/suite.md" % (len(rows), bad, out, out))
sys.exit(3 if bad else 0)
PY
