#!/usr/bin/python3
"""The speed guard (docs/PERFORMANCE.md, "The speed guard"): counts the instructions mbpsim
executes on short fixed runs, under valgrind's callgrind, and compares them with the baselines
checked in at tests/perf/speed-baseline.json. Work, not time: an instruction count does not
move with the host's load or clock, so a +15% threshold cannot be fooled by a busy machine.
One case counts host cache misses instead: callgrind's model of a fixed L1 data cache (32 KiB,
8 ways, 64-byte lines, whatever the host's), whose misses per router traversal of a 4,096-node
tree say how many host cache lines a hop's state is spread over. Instructions cannot see that
cost; the model counts it the same way on every machine.

  speed-guard.py [--bin BUILD/bin/mbpsim] [--case NAME]... [--jobs N] [--tolerance 0.15]
  speed-guard.py --bless [--case NAME]...     re-measure and write the baselines

A case whose figure comes from a rate (the network's packets, the MBP's references) runs
twice, a short and a long run, and its figure is the cost of the extra work between them:
(instructions of the long run - those of the short) / (units of the long - units of the
short). Start-up and the cold misses of the first references cancel out, so the figure is
the steady-state cost per packet or per reference. The other cases count a whole fixed run.

Exit status: 0 every case within the tolerance; 1 a case costs more than its baseline plus the
tolerance (named on stderr); 2 bad usage, no valgrind, a run failed, or a case has no
baseline.
"""
import argparse
import concurrent.futures
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, "tests", "perf", "speed-baseline.json")

# name: (what it measures, unit, config, options of the short run, of the long run or None).
# A unit of "traversal" counts simulated L1 data misses (reads and writes) per router traversal;
# every other case counts instructions.
NET4096 = ["--set", "network.levels=6", "--set", "workload.injection_rate=0.00065", "--set", "workload.warmup_cycles=2000",
           "--set", "workload.drain_cycles=2000"]
CACHE_MODEL = ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
NET = ["--set", "workload.injection_rate=0.05", "--set", "workload.warmup_cycles=1000", "--set", "workload.drain_cycles=2000"]
MBP = ["--set", "sharing.shared_fraction=0"]
MBP_SHARED = ["--set", "sharing.shared_fraction=0.01"]
CASES = {
    "net-qtree64": ("64-node quad tree, uniform unicast at 0.05 flits/node/cycle", "packet",
                    "net-qtree64-uniform.json", NET + ["--set", "workload.measure_cycles=5000"],
                    NET + ["--set", "workload.measure_cycles=15000"]),
    "mbp64-private": ("64 nodes x 4 processors, private data only: a run of L1 hits", "reference",
                      "mbp64.json", MBP + ["--set", "sharing.refs_per_proc=2000"], MBP + ["--set", "sharing.refs_per_proc=4000"]),
    "mbp64-shared-1pct": ("64 nodes x 4 processors, 1% of references to shared data", "reference",
                          "mbp64.json", MBP_SHARED + ["--set", "sharing.refs_per_proc=1000"],
                          MBP_SHARED + ["--set", "sharing.refs_per_proc=2000"]),
    "mbcf-ss20-100t-half": ("MBCF/Ether on the SS20, 100BASE-TX half duplex: the default config's points", "run",
                            "mbcf-ss20-100t-half.json", [], None),
    "mbp2p-ss20": ("MBCF on the MBP2 PCI NIC, SS20: the default config's points", "run", "mbp2p-ss20.json", [], None),
    "sockets-ss20-tcp": ("TCP/IP sockets on SunOS 4.1.4, SS20: the default config's points", "run",
                         "sockets-ss20-100t-half-tcp.json", [], None),
    "net-4096-cache": ("4,096-node quad tree, uniform unicast at 0.00065 flits/node/cycle (about half of the root links): "
                       "simulated L1 data misses per router traversal", "traversal",
                       "net-qtree64-uniform.json", NET4096 + ["--set", "workload.measure_cycles=5000"],
                       NET4096 + ["--set", "workload.measure_cycles=15000"]),
    "trace-stencil16": ("Trace replay: the shipped stencil trace (traces/stencil-16t, 312k references), 16 nodes x 4 processors, "
                        "validation included", "run", "splash-mbp16.json", [], None),
}


def fail(msg, status=2):
    print("speed-guard: " + msg, file=sys.stderr)
    sys.exit(status)


def traversals(stats):
    """Router traversals of a run: the flits every router's output ports sent (port<o>.flits)."""
    total = 0

    def walk(o):
        nonlocal total
        for k, v in o.items():
            if k.startswith("port") and isinstance(v, dict) and "flits" in v:
                x = v["flits"]
                total += x if isinstance(x, (int, float)) else x.get("value", 0)
            elif isinstance(v, dict):
                walk(v)
    walk(stats)
    return total


def units(unit, out):
    if unit == "run":
        return 1
    if unit == "traversal":
        with open(os.path.join(out, "stats.json")) as f:
            return traversals(json.load(f))
    with open(os.path.join(out, "host.json")) as f:
        host = json.load(f)
    return host["packets_delivered_total"] if unit == "packet" else host["references"]


def measure_once(binary, config, opts, unit, scratch):
    """The count (instructions, or simulated L1 data misses for a traversal case) and the units
    of one run of mbpsim under callgrind."""
    out = tempfile.mkdtemp(dir=scratch)
    model = CACHE_MODEL if unit == "traversal" else []
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + model + [binary, "run",
           os.path.join(ROOT, "configs", config), "--quiet", "--out", out] + opts
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    m = re.search(r"Collected : ([\d ]+)", r.stderr)
    ev = re.search(r"Events +: ([\w ]+)", r.stderr)
    if r.returncode != 0 or not m:
        tail = "\n".join(r.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"{' '.join(cmd[3:])} failed (exit {r.returncode}):\n{tail}")
    counts = [int(x) for x in m.group(1).split()]
    if model:
        names = ev.group(1).split() if ev else []
        if "D1mr" not in names or "D1mw" not in names or len(names) != len(counts):
            raise RuntimeError(f"callgrind reported no L1 data misses (events: {' '.join(names) or 'none'})")
        count = counts[names.index("D1mr")] + counts[names.index("D1mw")]
    else:
        count = counts[0]
    return count, units(unit, out)


def measure(name, binary, scratch):
    what, unit, config, short, long = CASES[name]
    i1, u1 = measure_once(binary, config, short, unit, scratch)
    if long is None:
        return {"instructions": i1, "units": u1, "per_unit": i1 / u1}
    i2, u2 = measure_once(binary, config, long, unit, scratch)
    if u2 <= u1:
        raise RuntimeError(f"case {name}: the long run did no more work than the short one ({u2} <= {u1} {unit}s)")
    return {"instructions": i2 - i1, "units": u2 - u1, "per_unit": (i2 - i1) / (u2 - u1)}


def toolchain():
    try:
        cxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        cxx = "unknown compiler"
    return f"{cxx}; {platform.machine()}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin", "mbpsim"), help="the mbpsim binary (a RelWithDebInfo build)")
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="measure only this case (repeatable)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases measured at once")
    ap.add_argument("--tolerance", type=float, default=0.15, help="allowed rise over the baseline (0.15 = +15%%)")
    ap.add_argument("--baseline", default=BASELINE, help="the baseline file")
    ap.add_argument("--bless", action="store_true", help="write the measured figures as the new baselines")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        fail("valgrind is not installed (Debian package valgrind)")
    if not os.access(a.bin, os.X_OK):
        fail(f"{a.bin}: no mbpsim binary there (build it, or name it with --bin)")
    if a.jobs < 1 or not 0 < a.tolerance < 10:
        fail("--jobs must be at least 1 and --tolerance between 0 and 10")
    names = a.case or sorted(CASES)
    base = {}
    if os.path.exists(a.baseline):
        try:
            with open(a.baseline) as f:
                base = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"{a.baseline}: not a baseline file: {e}")
    elif not a.bless:
        fail(f"{a.baseline}: no baseline file (make one with --bless)")
    cases = base.setdefault("cases", {})
    missing = [n for n in names if n not in cases]
    if missing and not a.bless:
        fail(f"{a.baseline}: no baseline for case {', '.join(missing)} (measure it with --bless --case NAME)")

    with tempfile.TemporaryDirectory(prefix="mbpsim-speed-guard-") as scratch:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = {n: pool.submit(measure, n, a.bin, scratch) for n in names}
            results = {}
            for n in names:
                try:
                    results[n] = futures[n].result()
                except (RuntimeError, OSError, KeyError, ValueError) as e:
                    fail(f"case {n}: {e}")

    worse = []
    print(f"{'case':<22} {'unit':<16} {'baseline':>14} {'measured':>14} {'change':>8}")
    for n in names:
        r, unit = results[n], CASES[n][1]
        b = cases.get(n, {}).get("per_unit")
        change = (r["per_unit"] / b - 1) if b else None
        verdict = ""
        if change is not None and change > a.tolerance:
            verdict = f"  SLOWER than the baseline by more than {a.tolerance:.0%}"
            worse.append(n)
        elif change is not None and change < -a.tolerance:
            verdict = "  faster: re-bless to keep the gain (scripts/speed-guard.py --bless)"
        what = ("D1miss/" if unit == "traversal" else "instr/") + unit
        print(f"{n:<22} {what:<16} {'-' if b is None else f'{b:.1f}':>14} {r['per_unit']:>14.1f} "
              f"{'-' if change is None else f'{change:+.1%}':>8}{verdict}")
    if a.bless:
        for n in names:
            what, unit = CASES[n][0], CASES[n][1]
            cases[n] = {"what": what, "unit": unit, "per_unit": round(results[n]["per_unit"], 1),
                        "instructions": results[n]["instructions"], "units": results[n]["units"]}
        base["toolchain"] = toolchain()
        base["note"] = ("Instructions counted by valgrind --tool=callgrind on a RelWithDebInfo build (for a case whose unit is "
                        "a traversal: L1 data misses of callgrind's fixed cache model); written by scripts/speed-guard.py "
                        "--bless. The guard fails when a case costs more than per_unit plus the tolerance.")
        base["cases"] = dict(sorted(cases.items()))
        with open(a.baseline + ".tmp", "w") as f:
            json.dump(base, f, indent=2)
            f.write("\n")
        os.replace(a.baseline + ".tmp", a.baseline)
        print(f"baselines written to {os.path.relpath(a.baseline, ROOT)}")
        return 0
    if base.get("toolchain") and base["toolchain"] != toolchain():
        print(f"note: the baselines were counted with {base['toolchain']}; this is {toolchain()}", file=sys.stderr)
    if worse:
        print(f"speed-guard: {', '.join(worse)} costs more than {a.tolerance:.0%} above its baseline "
              f"({os.path.relpath(a.baseline, ROOT)}); if the cost is intended, re-bless with scripts/speed-guard.py --bless",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
