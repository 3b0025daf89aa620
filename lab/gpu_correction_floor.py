#!/usr/bin/python3
"""lab/gpu_correction_floor.py: could a graph-level correction learned on other GPUs help a GPU
it never saw? (Issue 21: "train the graph-level GNN correction across GPUs, on top of the
pipeline model".)

A correction trained on the stack's residuals, log(measured / predicted), of the other GPUs'
rows can at best learn, for a model it saw, that model's residual on those GPUs: the held-out
GPU's figures enter it only through the descriptor, and nine GPUs are too few to learn how a
model's residual moves with them. So this study gives the held-out GPU's rows each model's mean
(or median) residual over the other GPUs' rows, per batch class (below 16 / 16 and above) and per
(model, batch), and compares the MAPE with the stack's alone. A correction that cannot beat this
oracle on seen models cannot beat the stack on the GPUs it would serve. On a family it never saw,
it has no offset at all.

Reads the rows `perfpred calibrate fit-stacks ... --rows-dir DIR` writes (every row predicted by
the stack fitted without its GPU); it measures nothing:

  build/perfpred calibrate fit-stacks --data ../shared/datasets/framework-tax-gpus \\
      --own-data data/gpu-stacks --threads 2 --stack pytorch-eager-fp32 --dry-run --rows-dir /tmp/rows
  /usr/bin/python3 lab/gpu_correction_floor.py /tmp/rows/pytorch-eager-fp32.csv
"""
import argparse
import collections
import csv
import math
import statistics
import sys


def read_rows(path):
    """The rows with a latency and a prediction: (device, model, batch, measured, predicted)."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                m, p = float(r["latency_ms"]), float(r["predicted_ms"])
                b = int(float(r["batch"]))
            except (KeyError, ValueError):
                continue
            if m > 0 and p > 0:
                out.append((r["device"], r["model"], b, m, p))
    return out


def batch_class(b):
    return "batch < 16" if b < 16 else "batch >= 16"


def offsets(train, key, how):
    """key(row) -> the mean or median of log(measured / predicted) over train's rows."""
    groups = collections.defaultdict(list)
    for row in train:
        groups[key(row)].append(math.log(row[3] / row[4]))
    pick = statistics.fmean if how == "mean" else statistics.median
    return {k: pick(v) for k, v in groups.items()}


KEYS = {
    "model": lambda r: (r[1], batch_class(r[2])),
    "model, batch": lambda r: (r[1], r[2]),
}


def floor(rows):
    """Per batch class: {device: {"n", "stack", "<key> <how>": MAPE %}} and the pooled line."""
    out = {}
    for cls in ("batch < 16", "batch >= 16"):
        sel = [r for r in rows if batch_class(r[2]) == cls]
        per, pooled = {}, collections.defaultdict(list)
        for dev in sorted({r[0] for r in sel}):
            test = [r for r in sel if r[0] == dev]
            train = [r for r in sel if r[0] != dev]
            line = {"n": len(test), "stack": [abs(r[4] / r[3] - 1) for r in test]}
            for kname, key in KEYS.items():
                for how in ("mean", "median"):
                    off = offsets(train, key, how)
                    line[f"{kname} {how}"] = [
                        abs(r[4] * math.exp(off.get(key(r), 0.0)) / r[3] - 1) for r in test]
            for k, v in line.items():
                if k != "n":
                    pooled[k] += v
            per[dev] = {k: (v if k == "n" else 100 * statistics.fmean(v)) for k, v in line.items()}
        per["pooled"] = {k: 100 * statistics.fmean(v) for k, v in pooled.items()}
        per["pooled"]["n"] = len(sel)
        out[cls] = per
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", help="a fit-stacks --rows-dir CSV")
    a = ap.parse_args()
    rows = read_rows(a.rows)
    if not rows:
        print(f"{a.rows}: no rows with a latency and a prediction", file=sys.stderr)
        return 2
    cols = ["stack"] + [f"{k} {h}" for k in KEYS for h in ("mean", "median")]
    print("MAPE % of each held-out GPU's rows: the stack alone, then times exp(the other GPUs' "
          "mean or median residual of the same model, or model and batch)")
    for cls, per in floor(rows).items():
        print(f"\n{cls}")
        print(f"  {'GPU':18s} {'rows':>5s} " + " ".join(f"{c:>19s}" for c in cols))
        for dev, line in per.items():
            print(f"  {dev:18s} {line['n']:5d} " + " ".join(f"{line[c]:19.1f}" for c in cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
