#!/usr/bin/env python3
"""mbpsim plot: draws one field of a sweep's table against a swept parameter, or a run's measured points (sim/README.md, "Plots").

    mbpsim plot SWEEP --x KEY --y FIELD [--series KEY] [--where KEY=VALUE]... [--log-x] [--log-y]
                [--title TEXT] [--out FILE.png|.svg|.pdf]
    mbpsim plot RUN... [--log-x] [--log-y] [--where command=NAME] [--title TEXT] [--out FILE]

SWEEP is a sweep's folder (or its sweep.json). RUN is a run's folder (or its stats.json) whose
workload measured a list of points (rtt, oneway, peak: summary.points): it is drawn as a table
of one row per point, value against size, one curve per command (the defaults of --x, --y and
--series there: size, value, command); several runs in one unit are drawn together, one curve
per run and command ("FOLDER: COMMAND", the series `curve`), so MBCF and the socket stacks of
one cluster compare in one figure. Axis labels carry the units of the parameter schema
and of the summary. Rows whose FIELD is null (not measured) or whose point failed are left out,
and said so; rows that differ only in their seed are averaged, with their range as error bars.
Every other swept parameter must be the series or fixed with --where, so a curve never mixes
two configurations. Beside the image the program writes FILE.series.json: the series exactly as
drawn (a test checks them against the table). Exit status: 0 drawn, 1 bad input.
"""
import argparse
import json
import os
import sys


def fail(msg):
    sys.stderr.write("mbpsim plot: %s\n" % msg)
    sys.exit(1)


def parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and status 1, as every mbpsim command
        fail("command line: %s (mbpsim plot --help)" % message)


def run_table(path, st):
    """A run's measured points (summary.points) as a sweep's table: one row per point, the
    command and the size as its parameters, the value as its field (in the points' unit)."""
    pts = st["summary"].get("points") if isinstance(st["summary"], dict) else None
    if not isinstance(pts, list) or not pts:
        fail("%s: this run measured no list of points (summary.points: the rtt, oneway and peak workloads); "
             "plot draws those, or a sweep's table" % path)
    rows = []
    for p in pts:
        if not isinstance(p, dict) or not isinstance(p.get("command"), str) or not isinstance(p.get("size"), int):
            fail("%s: a point without a command and a size: %r" % (path, p))
        rows.append({"point": "%s@%d" % (p["command"], p["size"]), "command": p["command"], "size": p["size"],
                     "value": p.get("value"), "unit": p.get("unit"), "status": 0})
    cmd = st.get("provenance", {}).get("command", [])
    config = cmd[2] if len(cmd) > 2 else path
    # The value's unit is the rows' one, once --where has chosen them (one_unit).
    return {"columns": [{"name": "command", "source": "parameter", "unit": None},
                        {"name": "size", "source": "parameter", "unit": "bytes"},
                        {"name": "value", "source": "summary", "unit": None},
                        {"name": "unit", "source": "run", "unit": None}],
            "rows": rows, "sweep": {"config": config}}


def one_unit(path, table, rows):
    """Points drawn together share one unit (a run may measure latencies and rates: --where
    chooses); it becomes the value's."""
    units = sorted({str(r.get("unit")) for r in rows})
    if len(units) > 1:
        fail("%s: the points are in different units (%s): one plot holds one; choose with --where unit=UNIT "
             "or --where command=NAME" % (path, ", ".join(units)))
    for c in table["columns"]:
        if c["name"] == "value" and units:
            c["unit"] = units[0]


def runs_table(runs):
    """Several runs' points as one table: a row per point of each, named by the run's folder;
    the series `curve` is "FOLDER: COMMAND" (the folder and the command are columns too, for
    --where). Their units must agree (one_unit)."""
    rows = []
    for path, st in runs:
        t = run_table(path, st)
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        for r in t["rows"]:
            rows.append(dict(r, point="%s/%s" % (folder, r["point"]), run=folder, curve="%s: %s" % (folder, r["command"])))
    return {"columns": [{"name": "curve", "source": "parameter", "unit": None},
                        {"name": "size", "source": "parameter", "unit": "bytes"},
                        {"name": "value", "source": "summary", "unit": None},
                        {"name": "run", "source": "run", "unit": None},
                        {"name": "command", "source": "run", "unit": None},
                        {"name": "unit", "source": "run", "unit": None}],
            "rows": rows, "sweep": {"config": ", ".join(os.path.basename(os.path.dirname(os.path.abspath(p))) for p, _ in runs)}}


def main(argv):
    ap = Parser(prog="mbpsim plot", description=__doc__.split("\n\n")[0],
                                 usage="mbpsim plot SWEEP --x KEY --y FIELD [--series KEY] [--where KEY=VALUE]... "
                                       "[--log-x] [--log-y] [--title TEXT] [--out FILE.png|.svg|.pdf]\n"
                                       "       mbpsim plot RUN... [--log-x] [--log-y] [--where command=NAME] [--title TEXT] [--out FILE]")
    ap.add_argument("sweep", nargs="+", help="a sweep's folder, or its sweep.json; or runs' folders, or their stats.json")
    ap.add_argument("--x", help="the swept parameter on the x axis (a run's points: size)")
    ap.add_argument("--y", help="the summary field on the y axis (a run's points: value)")
    ap.add_argument("--series", help="a swept parameter: one curve per value (a run's points: command)")
    ap.add_argument("--where", action="append", default=[], metavar="KEY=VALUE", help="keep only the rows with KEY=VALUE")
    ap.add_argument("--log-x", action="store_true")
    ap.add_argument("--log-y", action="store_true")
    ap.add_argument("--ref", action="append", default=[], metavar="FILE.json",
                    help='reference points drawn as markers: {"label": ..., "x": [...], "y": [...]} (a published figure, another simulator)')
    ap.add_argument("--title")
    ap.add_argument("--out", help="the image (.png, .svg or .pdf); default SWEEP/plot-FIELD-vs-KEY.png, or beside the runs' "
                                  "folders plot-RUN+RUN.png")
    a = ap.parse_args(argv)

    loaded = []
    for path in a.sweep:
        if os.path.isdir(path):
            path = os.path.join(path, "sweep.json" if not os.path.exists(os.path.join(path, "stats.json")) else "stats.json")
        try:
            with open(path) as f:
                loaded.append((path, json.load(f)))
        except OSError as e:
            fail("%s: %s" % (path, e.strerror))
        except ValueError as e:
            fail("%s: not a sweep table or a run's statistics: %s" % (path, e))
    def is_run(t):  # a run's stats.json, not a sweep's table
        return isinstance(t, dict) and "summary" in t and "columns" not in t
    runs = [(p, t) for p, t in loaded if is_run(t)]
    if len(loaded) > 1 and len(runs) < len(loaded):
        fail("%s: not a run's statistics: several folders are drawn together only when each is a run" %
             next(p for p, t in loaded if not is_run(t)))
    path, table = loaded[0]
    if len(runs) == 1:
        table = run_table(path, table)
        a.x, a.y, a.series = a.x or "size", a.y or "value", a.series or "command"
    elif runs:
        table = runs_table(runs)
        path = runs[0][0]
        a.x, a.y, a.series = a.x or "size", a.y or "value", a.series or "curve"
    if not isinstance(table, dict) or "columns" not in table or "rows" not in table:
        fail("%s: not a sweep table (no columns and rows)" % path)
    for name, what in ((a.x, "--x"), (a.y, "--y")):
        if name is None:
            fail("%s: %s is needed for a sweep (mbpsim plot --help)" % (path, what))
    cols = {c["name"]: c for c in table["columns"]}
    rows = table["rows"]
    for name, what in ((a.x, "--x"), (a.y, "--y"), (a.series, "--series")):
        if name is not None and name not in cols:
            fail("%s: %s %s: no such column (the columns: %s)" % (path, what, name, ", ".join(cols)))
    where = []
    for w in a.where:
        if "=" not in w:
            fail("--where %s: expected KEY=VALUE" % w)
        k, v = w.split("=", 1)
        if k not in cols:
            fail("%s: --where %s: no such column" % (path, k))
        where.append((k, parse_value(v)))
    rows = [r for r in rows if all(r.get(k) == v for k, v in where)]
    if runs:
        one_unit(path, table, rows)

    # Every other swept parameter must be fixed: a curve holds one configuration.
    axes = [c["name"] for c in table["columns"] if c["source"] == "parameter" and c["name"] not in ("seed", a.x, a.series)]
    for k in axes:
        vals = {json.dumps(r.get(k)) for r in rows}
        if len(vals) > 1:
            fail("%s: %s varies (%s): make it the --series or fix it with --where %s=VALUE" % (path, k, ", ".join(sorted(vals)), k))

    left_out = []
    groups = {}
    for r in rows:
        if r.get("status") not in (0, 3) or r.get(a.y) is None or r.get(a.x) is None:
            left_out.append(r["point"])
            continue
        if not isinstance(r[a.y], (int, float)) or isinstance(r[a.y], bool):
            fail("%s: %s is not a number in %s (%r)" % (path, a.y, r["point"], r[a.y]))
        s = r.get(a.series) if a.series else None
        groups.setdefault(json.dumps(s), {}).setdefault(json.dumps(r[a.x]), []).append(r)
    if not groups:
        fail("%s: no row has a value of %s to draw" % (path, a.y))
    if left_out:
        sys.stderr.write("mbpsim plot: left out (failed, or %s not measured): %s\n" % (a.y, ", ".join(left_out)))

    def label(name):
        u = cols[name].get("unit")
        return "%s (%s)" % (name, u) if u else name

    series = []
    for skey in sorted(groups, key=lambda k: (json.loads(k) is None, json.loads(k))):
        pts = groups[skey]
        xs = sorted(pts, key=lambda k: json.loads(k))
        sval = json.loads(skey)
        entry = {"name": None if a.series is None else "%s=%s" % (a.series, sval if isinstance(sval, str) else skey),
                 "series_value": sval,
                 "x": [], "y": [], "y_min": [], "y_max": [], "n": [], "points": []}
        for xk in xs:
            ys = [r[a.y] for r in pts[xk]]
            entry["x"].append(json.loads(xk))
            entry["y"].append(sum(ys) / len(ys))
            entry["y_min"].append(min(ys))
            entry["y_max"].append(max(ys))
            entry["n"].append(len(ys))
            entry["points"].append([r["point"] for r in pts[xk]])
        series.append(entry)

    out = a.out
    if not out and runs:
        # Beside the runs' folders, not in them: a run's folder holds what the run wrote alone
        # (mbpsim run refuses to replace a folder holding anything else).
        folders = [os.path.dirname(os.path.abspath(p)) for p, _ in runs]
        out = os.path.join(os.path.dirname(folders[0]), "plot-%s.png" % "+".join(os.path.basename(f) for f in folders))
    if not out:
        out = os.path.join(os.path.dirname(path) or ".", "plot-%s-vs-%s.png" % (a.y, a.x))
    ext = os.path.splitext(out)[1].lower()
    if ext not in (".png", ".svg", ".pdf"):
        fail("--out %s: the image must be .png, .svg or .pdf" % out)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("needs python3-matplotlib (apt-get install python3-matplotlib)")

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for e in series:
        err = None
        if any(n > 1 for n in e["n"]):
            err = [[y - lo for y, lo in zip(e["y"], e["y_min"])], [hi - y for y, hi in zip(e["y"], e["y_max"])]]
        xs = e["x"]
        if xs and isinstance(xs[0], bool):
            xs = [str(v).lower() for v in xs]
        ax.errorbar(xs, e["y"], yerr=err, marker="o", ms=4, capsize=3, label=e["name"] or "mbpsim")
    refs = []
    for rf in a.ref:
        try:
            with open(rf) as f:
                r = json.load(f)
            assert isinstance(r.get("label"), str) and len(r["x"]) == len(r["y"]) > 0
        except (OSError, ValueError, KeyError, TypeError, AssertionError):
            fail("--ref %s: expected a JSON object with label, and x and y lists of one length" % rf)
        ax.plot(r["x"], r["y"], linestyle="none", marker="x", ms=7, mew=1.5, label=r["label"])
        refs.append(r)
    ax.set_xlabel(label(a.x))
    ax.set_ylabel(label(a.y))
    if a.log_x:
        ax.set_xscale("log")
    if a.log_y:
        ax.set_yscale("log")
    sweep = table.get("sweep", {})
    ax.set_title(a.title or os.path.basename(sweep.get("config", path)), fontsize=10)
    if a.series or refs:
        ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    try:
        fig.savefig(out)
    except OSError as e:
        fail("%s: %s" % (out, e.strerror))
    drawn = {"sweep": path, "x": a.x, "y": a.y, "x_label": label(a.x), "y_label": label(a.y), "series_key": a.series,
             "where": dict(where), "left_out": left_out, "series": series, "references": refs}
    with open(os.path.splitext(out)[0] + ".series.json", "w") as f:
        json.dump(drawn, f, indent=2)
        f.write("\n")
    print("mbpsim plot: %s (%d series, %d points; the data in %s)" % (out, len(series), sum(len(e["x"]) for e in series),
                                                                       os.path.splitext(out)[0] + ".series.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
