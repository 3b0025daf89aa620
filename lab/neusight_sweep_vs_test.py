#!/usr/bin/python3
"""neusight_sweep_vs_test.py: do NeuSight's test rows run at the speed of its training sweep on
the same GPU?

perfpred's A100 layer models learn from NeuSight's training sweep (train/collect/<op>/...) and are
judged on its test rows (test/<op>.csv, shapes of real models). This tool asks, per GPU, whether
the two files agree where they overlap, so that a model of the sweep could answer the test rows
at all:

- neighbours: each test row with at least 3 sweep rows near it (LayerNorm and softmax [B, H]:
  within 10 % in H and 30 % in B, and of the same softmax kernel: PyTorch runs rows of H <= 1024
  with its warp kernel, longer ones with its block kernel; linear and bmm [B, M, N, K]: within
  25 % in each) is compared with them in throughput (the product of the dims over the latency).
  The ratio is the test row's over the neighbours' median; 1 where the files agree. A ratio is
  not an error bound: a model that knows how throughput grows with size can do better than the
  neighbours' median, but a model of the sweep has no way to learn that a GPU's test rows run
  faster than its sweep rows of the same shapes.
- monotone floor: a row needs more time with more rows or longer rows (same kernel). Each test
  row's latency is compared with the second slowest sweep row it dominates (each dim <= its own;
  the second, so that one bad sweep row cannot set it); where that row is slower, any model that
  is monotone and follows its training rows errs by at least the difference. Mean over all the
  GPU's test rows: a lower bound for such models, not for every model.
- beyond: test rows with a dim larger than every sweep row's, where the sweep says nothing. GEMM kernels change with shape (cuBLAS picks tiles), so the GEMM
  floor is looser physics than the [B, H] one.

  /usr/bin/python3 lab/neusight_sweep_vs_test.py ../shared/datasets/neusight

Reads the CSVs in place; trains nothing.
"""

import argparse
import csv
import glob
import os
import sys

import numpy as np

DATA = "scripts/asplos/data/dataset"
OPS = ("ln", "softmax", "linear", "bmm")
DIMS = {"ln": ("B", "H"), "softmax": ("B", "H"), "linear": ("B", "M", "N", "K"), "bmm": ("B", "M", "N", "K")}
TOL = {"ln": (0.30, 0.10), "softmax": (0.30, 0.10), "linear": (0.25,) * 4, "bmm": (0.25,) * 4}
SOFTMAX_WARP_MAX_H = 1024


def read_rows(path, dims, device=None):
    """[((dims...), latency_ms)] of a NeuSight kernel CSV, only `device`'s rows if given."""
    out = []
    with open(path, newline="") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            if device is not None and r["Device"] != device:
                continue
            try:
                shape, lat = tuple(int(r[d]) for d in dims), float(r["Latency"])
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{path}:{line}: bad {', '.join(dims)} or Latency ({e})") from None
            if min(shape) <= 0 or not lat > 0:
                raise ValueError(f"{path}:{line}: {', '.join(dims)} and Latency must be positive")
            out.append((shape, lat))
    return out


def kernel_class(op, shapes):
    """Per row (an array of shapes), the kernel PyTorch runs it with: softmax switches kernels
    above H = 1024; one class otherwise."""
    return shapes[..., -1] > SOFTMAX_WARP_MAX_H if op == "softmax" else np.zeros(shapes.shape[:-1], bool)


def compare(op, train, test, min_neighbours=3):
    """Sweep-vs-test figures of one op on one GPU (see the module text)."""
    tol = np.array(TOL[op])
    ts = np.array([s for s, _ in train], dtype=float).reshape(len(train), len(tol))
    tl = np.array([ll for _, ll in train], dtype=float)
    t_thr = ts.prod(axis=1) / tl
    t_cls = kernel_class(op, ts)
    ratios, floor_sum, n_floor = [], 0.0, 0
    for shape, lat in test:
        x = np.array(shape, dtype=float)
        same = t_cls == kernel_class(op, x)
        near = t_thr[same & np.all(np.abs(ts - x) <= tol * x, axis=1)]
        if len(near) >= min_neighbours:
            thr = float(np.median(near))
            ratios.append((x.prod() / lat) / thr)
        dominated = np.sort(tl[same & np.all(ts <= x, axis=1)])
        if len(dominated) >= 2 and dominated[-2] > lat:
            floor_sum += dominated[-2] / lat - 1
            n_floor += 1
    n = len(test)
    dim_max = ts.max(axis=0) if len(train) else np.zeros(len(tol))
    return {
        "n_beyond": sum(1 for s, _ in test if np.any(np.array(s) > dim_max)),
        "n_test": n,
        "n_near": len(ratios),
        "ratio_median": float(np.median(ratios)) if ratios else None,
        "ratio_min": min(ratios) if ratios else None,
        "ratio_max": max(ratios) if ratios else None,
        "n_floor": n_floor,
        "floor_pct": 100 * floor_sum / n if n else None,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="NeuSight's dataset folder (its SOURCE.md beside scripts/)")
    ap.add_argument("--ops", default=",".join(OPS), help="some of ln, softmax, linear, bmm (default all)")
    args = ap.parse_args(argv)
    base = os.path.join(args.root, DATA)
    print(f"{'op':8} {'GPU':24} {'test':>5} {'near':>5} {'ratio':>6} {'min':>5} {'max':>5} "
          f"{'floor rows':>10} {'floor %':>8} {'beyond':>6}")
    for op in args.ops.split(","):
        if op not in OPS:
            ap.error(f"--ops: {op!r} is not one of {', '.join(OPS)}")
        test_path = os.path.join(base, "test", f"{op}.csv")
        sweeps = sorted(glob.glob(os.path.join(base, "train", "collect", op, "*", "*.csv")))
        if not sweeps:
            sys.exit(f"{args.root}: no {op} training sweep under {DATA}/train/collect/{op}")
        for path in sweeps:
            gpu = os.path.splitext(os.path.basename(path))[0]
            test = read_rows(test_path, DIMS[op], gpu)
            if not test:
                continue
            r = compare(op, read_rows(path, DIMS[op]), test)
            fmt = lambda v, d=2: "-" if v is None else f"{v:.{d}f}"  # noqa: E731
            print(f"{op:8} {gpu[:24]:24} {r['n_test']:5d} {r['n_near']:5d} {fmt(r['ratio_median']):>6} "
                  f"{fmt(r['ratio_min']):>5} {fmt(r['ratio_max']):>5} "
                  f"{r['n_floor']:10d} {fmt(r['floor_pct']):>8} {r['n_beyond']:6d}")
    print("ratio: test row's throughput over its sweep neighbours' median (min, max over those rows); "
          "floor: rows slower "
          "than the second slowest sweep row they dominate, mean excess over all test rows; beyond: "
          "test rows with a dim larger than any sweep row's")


if __name__ == "__main__":
    main()
