#!/usr/bin/python3
"""warmup_check.py: do two layer runs of the same plan agree row by row? Issue 22: the layer
runner warmed a layer up for at least 50 ms after building it, and a plan of more than 64 rows is
rebuilt at every visit, so most of a layers stage was warm-up. Run the runner twice (or more) on
one plan with only the protocol changed, then compare each later CSV with the first:

  runners/layer_runner.py PLAN -o A.csv --device-name D --threads 1 --scrub-mb 0 --canary
  runners/layer_runner.py PLAN -o B.csv ... --warmup-ms 5
  /usr/bin/python3 lab/warmup_check.py A.csv B.csv [C.csv ...]

Per later file: the median ratio of its rows to the first file's and the mean |ratio - 1|, as
timed (`unscaled_ms` in the row's source) and as written (scaled by the canary level), overall and
by the first file's latency. As timed is the comparison of the protocols; as written adds each
run's own canary reference (its quietest minute), which differs between runs of different
lengths. It measures nothing itself.
"""

import argparse
import csv
import math
import re
import statistics
import sys

BANDS = [(0.0, 0.01), (0.01, 0.1), (0.1, 1.0), (1.0, float("inf"))]


def load(path):
    """{(op_type, inputs, attrs, batch): (latency_ms as written, unscaled ms or None)}"""
    rows = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            m = re.search(r"unscaled_ms=([0-9.eE+-]+)", r.get("source", ""))
            written = float(r["latency_ms"])
            rows[(r["op_type"], r["inputs"], r["attrs"], r["batch"])] = (
                written, float(m.group(1)) if m else None)
    return rows


def compare(base, other, which):
    """Lines for one file against the first: which 0 = as written, 1 = as timed."""
    keys = [k for k in base if k in other and base[k][which] and other[k][which]]
    if not keys:
        return ["  no rows in common"]
    logs = {k: math.log(other[k][which] / base[k][which]) for k in keys}

    def line(label, ks):
        v = [logs[k] for k in ks]
        return "  %-14s %4d rows: median ratio %.3f, mean |ratio - 1| %.1f %%" % (
            label, len(v), math.exp(statistics.median(v)),
            100 * statistics.mean(abs(math.exp(x) - 1) for x in v))
    out = [line("all", keys)]
    for lo, hi in BANDS:
        ks = [k for k in keys if lo <= base[k][which] < hi]
        if ks:
            out.append(line("%g-%g ms" % (lo, hi), ks))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("first", help="the reference run's layer CSV")
    ap.add_argument("others", nargs="+", help="runs of the same plan to compare with it")
    a = ap.parse_args(argv)
    base = load(a.first)
    for p in a.others:
        other = load(p)
        print(f"{p} against {a.first}")
        for which, name in ((1, "as timed (unscaled)"), (0, "as written (canary-scaled)")):
            print(f" {name}:")
            for ln in compare(base, other, which):
                print(ln)
    return 0


if __name__ == "__main__":
    sys.exit(main())
