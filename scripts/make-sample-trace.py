#!/usr/bin/env python3
"""Writes traces/sample-stencil: a synthetic trace in the style of a SPLASH-2 kernel (threads
created by thread 0, a shared array partitioned by thread, nearest-neighbour reads, a
lock-protected global counter, barriers between phases, joins). It stands in until the
capture tool's traces of the project's own kernels are committed (issue 6); `mbpsim trace
convert` turns its text form into the committed binary-gzip form.
  scripts/make-sample-trace.py OUT_DIR [THREADS] [ITERATIONS]"""
import os
import sys

out = sys.argv[1]
T = int(sys.argv[2]) if len(sys.argv) > 2 else 16
iters = int(sys.argv[3]) if len(sys.argv) > 3 else 4
N = 1024 * T                                      # doubles in the shared array
base, lock, bar, ctr = 0x40000000, 0x40800000, 0x40800040, 0x40800080
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "trace.meta"), "w") as f:
    f.write(f"mbpsim-trace 1\nprogram sample-stencil\nargs -p{T} -i{iters}\nthreads {T}\nencoding text\n"
            f"gap_unit instructions\ncapture scripts/make-sample-trace.py (synthetic)\n"
            f"alloc {hex(base)} {N * 8}\nalloc {hex(lock)} 256\n")
part = N // T
for t in range(T):
    recs = ["0 begin"]
    if t == 0:
        recs += [f"0 alloc {hex(base)} {N * 8}", f"0 alloc {hex(lock)} 256"]
        recs += [f"20 create {c}" for c in range(1, T)]
    recs.append(f"0 barrier {hex(bar)} {T} 0")
    recs.append("0 roi_begin")
    ep = 1
    for it in range(iters):
        lo, hi = t * part, (t + 1) * part
        for i in range(lo, hi):            # a 3-point stencil over the own partition
            for j in (i - 1, i, i + 1):
                if 0 <= j < N:
                    recs.append(f"2 load {hex(base + 8 * j)} 8")
            recs.append(f"6 store {hex(base + 8 * i)} 8")
        recs.append(f"4 acquire {hex(lock)} {it * T + t}")   # captured order: by thread
        recs.append(f"1 load {hex(ctr)} 8")
        recs.append(f"2 store {hex(ctr)} 8")
        recs.append(f"0 release {hex(lock)}")
        recs.append(f"0 barrier {hex(bar)} {T} {ep}")
        ep += 1
    recs.append("0 roi_end")
    if t == 0:
        recs += [f"0 join {c}" for c in range(1, T)]
    recs.append("0 end")
    with open(os.path.join(out, f"thread-{t}.txt"), "w") as f:
        f.write(f"mbpsim-trace-stream 1 thread {t}\n" + "\n".join(recs) + f"\nend-of-stream {len(recs)}\n")
