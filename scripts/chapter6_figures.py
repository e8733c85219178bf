#!/usr/bin/env python3
"""Draws the thesis's chapter-6 comparison figures from mbpsim runs, one PNG each, into
docs/figures/ (or the folder given): peak rates (Figures 6.5, 6.6) and round trips (6.7-6.10)
of MBCF/Ether, UDP/IP and TCP/IP on SunOS 4.1.4, and the second cluster's peak rates (6.13) and
one-way latencies (6.14) of MBCF/1000BASE-SX and TCP1000 on Solaris 2.6, on the shipped configs.
TCP's peak runs send 16,384 messages per size (with the default 1,024 the first delayed ACK
dominates the small sizes: docs/VALIDATION.md, "TCP/IP on SunOS 4.1.4 and Solaris 2.6").

    python3 scripts/chapter6_figures.py [OUT_DIR]      (needs build/bin/mbpsim, python3-matplotlib)
"""
import json
import os
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin", "mbpsim")
SIZES5 = [4, 16, 64, 256, 1024]
SIZES6 = [4, 16, 64, 256, 1024, 1408]
# The SunOS socket stacks' peak curves of Figures 6.5 and 6.6, finer around 512 bytes, where the
# thesis saw TCP100 drop (6.2.3).
SIZES_SUNOS_PEAK = [4, 16, 64, 128, 256, 384, 512, 640, 768, 1024, 1408]


def points(config, *sets):
    """The summary points of one run: [(command, size, value)]."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [BIN, "run", os.path.join(ROOT, "configs", config), "--quiet", "--out", out]
        for s in sets:
            cmd += ["--set", s]
        env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            sys.exit("chapter6_figures: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stdout + r.stderr))
        with open(os.path.join(out, "stats.json")) as f:
            pts = json.load(f)["summary"]["points"]
    return [(p["command"], p["size"], p["value"]) for p in pts]


def series(config, command, *sets):
    pts = [p for p in points(config, *sets) if p[0] == command]
    return [p[1] for p in pts], [p[2] for p in pts]


with open(os.path.join(ROOT, "docs", "figures", "data", "thesis-chapter6.json")) as f:
    THESIS = json.load(f)


def figure(path, title, ylabel, curves, logy=False, thesis=()):
    """curves: (label, (x, y), style), drawn as lines; thesis: (label, key of THESIS), drawn as
    markers (the published points the curves are compared with)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, (x, y), style in curves:
        ax.plot(x, y, style, label=label)
    for (label, key), mark in zip(thesis, ("x", "+", "1", "2")):
        ax.plot(THESIS[key]["sizes"], THESIS[key]["values"], "k" + mark, ms=8, mew=1.3, linestyle="none",
                label="%s (thesis, Table %s)" % (label, key.split()[0]))
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("data in one packet (bytes)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8.5)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print("wrote", os.path.relpath(path, ROOT))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "figures")
    os.makedirs(out, exist_ok=True)
    s5 = "workload.sizes=" + json.dumps(SIZES5)
    s6 = "workload.sizes=" + json.dumps(SIZES6)
    write = 'workload.commands=["write"]'
    tcp_peak = ("workload.kind=peak", s6, "workload.transfers=16384", "workload.max_cycles=100000000000")
    sf = "workload.sizes=" + json.dumps(SIZES_SUNOS_PEAK)
    tcp_peak_sunos = ("workload.kind=peak", sf, "workload.transfers=16384", "workload.max_cycles=100000000000")
    for fig, cfg_m, cfg_u, name in (("6-5", "mbcf-ss20-100t-half.json", "sockets-ss20-100t-half-udp.json", "100"),
                                    ("6-6", "mbcf-ss20-10t.json", "sockets-ss20-10t-udp.json", "10")):
        cfg_t = cfg_u.replace("-udp.json", "-tcp.json")
        figure(os.path.join(out, "fig%s-peak-%s.png" % (fig, name)),
               "Figure %s: peak data-transfer rates, MBCF%s, TCP%s and UDP%s/SunOS (mbpsim)" % (fig.replace("-", "."), name, name, name),
               "MB/s",
               [("MBCF%s" % name, series(cfg_m, "MBCF_WRITE", "workload.kind=peak", s6), "o-"),
                ("TCP%s/SunOS" % name, series(cfg_t, "TCP", *tcp_peak_sunos), "^-."),
                ("UDP%s/SunOS" % name, series(cfg_u, "UDP", "workload.kind=peak", sf), "s--")],
               thesis=[("MBCF%s" % name, "6.2 100BASE-T hub" if name == "100" else "6.2 10BASE-T hub")])
    for fig, cfg, name in (("6-7", "mbcf-ss20-100t-half.json", "100BASE-TX"), ("6-9", "mbcf-ss20-10t.json", "10BASE-T")):
        figure(os.path.join(out, "fig%s-rtt-mbcf-%s.png" % (fig, name.lower())),
               "Figure %s: round-trip latency of MBCF/%s (mbpsim)" % (fig.replace("-", "."), name), "us",
               [(c, series(cfg, c, "workload.kind=rtt", s5), st)
                for c, st in (("MBCF_WRITE_STAT", "o-"), ("MBCF_READ_STAT", "^-"), ("MBCF_SWAP_STAT", "s-"))],
               thesis=[(c, "6.3 SS20 " + c) for c in ("write", "read", "swap")] if name == "100BASE-TX" else [])
    for fig, cfg_m, cfg_u, name in (("6-8", "mbcf-ss20-100t-half.json", "sockets-ss20-100t-half-udp.json", "100"),
                                    ("6-10", "mbcf-ss20-10t.json", "sockets-ss20-10t-udp.json", "10")):
        figure(os.path.join(out, "fig%s-rtt-%s.png" % (fig, name)),
               "Figure %s: round-trip latencies, MBCF%s and UDP%s/SunOS (mbpsim)" % (fig.replace("-", "."), name, name),
               "us",
               [("MBCF%s (MBCF_WRITE with status)" % name, series(cfg_m, "MBCF_WRITE_STAT", "workload.kind=rtt", s5, write), "o-"),
                ("TCP%s/SunOS (TCP_NODELAY)" % name, series(cfg_u.replace("-udp.json", "-tcp.json"), "TCP", "workload.kind=rtt", s5), "^-."),
                ("UDP%s/SunOS" % name, series(cfg_u, "UDP", "workload.kind=rtt", s5), "s--")], logy=True)
    figure(os.path.join(out, "fig6-13-peak-1000.png"),
           "Figure 6.13: peak data-transfer rates, MBCF/1000BASE-SX and TCP1000/Solaris (mbpsim)", "MB/s",
           [("MBCF/1000BASE-SX", series("mbcf-ultra60-1000sx.json", "MBCF_WRITE", "workload.kind=peak", s6), "o-"),
            ("TCP1000/Solaris", series("sockets-ultra60-1000sx-tcp.json", "TCP", *tcp_peak), "^-.")],
           thesis=[("MBCF", "6.9 Ultra 60 MBCF"), ("TCP1000", "6.9 Ultra 60 TCP1000")])
    figure(os.path.join(out, "fig6-14-oneway-1000.png"),
           "Figure 6.14: one-way latencies, MBCF/1000BASE-SX and TCP1000/Solaris (mbpsim)", "us",
           [("MBCF/1000BASE-SX (MBCF_WRITE)", series("mbcf-ultra60-1000sx.json", "MBCF_WRITE", "workload.kind=oneway", s5), "o-"),
            ("TCP1000/Solaris (TCP_NODELAY)", series("sockets-ultra60-1000sx-tcp.json", "TCP", "workload.kind=oneway", s5), "^-.")],
           logy=True, thesis=[("MBCF", "6.10 Ultra 60 MBCF"), ("TCP1000", "6.10 Ultra 60 TCP1000")])


if __name__ == "__main__":
    main()
