#!/usr/bin/python3
"""kind_share_check.py: does a simple graph-level correction carry over to unseen model families?

The simplest thing a correction of the layer sum could learn is "networks that spend more of their
time in op kind X are off by a factor": log(measured / layer sum) as a linear function of the
layer sum's time share per op kind (split by calibrated / roofline kernels), plus log(layer sum)
and log(batch). This fits that function by ridge regression on the network rows of all families
but one fold's, predicts the fold's rows, and prints each fold's MAPE next to the layer sum's,
for several ridge strengths. A second, physical correction is fitted beside it: a scale, a fixed
in-network cost per kernel and one per megabyte the kernels move, measured ~= a * layer sum +
c * kernels + d * MB (least squares on the relative error, c, d >= 0: the best fit over the
subsets of c and d that keeps them >= 0; what a forward pass spends that layers timed one at a
time do not see), and the same without d. It trains nothing that ships; it is the evidence next
to the GNN correction's fold tables in README.md ("host-cpu" and "epyc-kvm-2vcpu" accuracy).

  /usr/bin/python3 lab/kind_share_check.py --device host-cpu \\
      --networks data/host-cpu/networks.csv \\
      --folds "googlenet,mnasnet,regnet,shufflenet,squeezenet;resnet,resnext,densenet,alexnet;..."

The per-kernel times come from `perfpred --device DEV MODEL --json --layers N` (the built CLI,
--perfpred), one call per distinct (model, batch, input shapes).
"""

import argparse
import csv
import json
import math
import os
import subprocess
import sys

import numpy as np


def kernel_times(perfpred, device, model, batch, shapes):
    args = [perfpred, "--device", device, model, "--json", "--layers", "1000000", "--batch", batch]
    for item in shapes.split(";"):
        name, dims = item.rsplit(":", 1)
        args += ["--input", f"{name}={dims}"]
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"kind_share_check: {' '.join(args)}: {res.stderr.strip()}")
    out = json.loads(res.stdout)
    shares, nbytes = {}, 0.0
    for k in out["kernels"]:
        nbytes += k["bytes"]
        key = k["kind"] + ("/calibrated" if k["provenance"] == "calibrated" else "/roofline")
        shares[key] = shares.get(key, 0.0) + k["latency_ms"]
    # the layer sum is the kernels' own sum: the prediction itself carries the device's graph-level
    # correction where one is calibrated (epyc-kvm-2vcpu's overhead-latency.json)
    return sum(shares.values()), shares, len(out["kernels"]), nbytes * 1e-6


def mape(pred, meas):
    return 100.0 * float(np.mean(np.abs(pred / meas - 1.0)))


def fit_overhead(layer_sum, kernels, meas, mb=None):
    """w = (a, c ms per kernel, d ms per MB) minimising the squared relative error of
    a * layer_sum + c * kernels + d * mb with c, d >= 0: the least-squares fit of each subset of
    the c and d terms (a always in), the best one whose terms are >= 0. mb None: no d term."""
    cols = [layer_sum / meas, kernels / meas] + ([] if mb is None else [mb / meas])
    best, best_w = None, None
    for subset in range(1 << (len(cols) - 1)):
        idx = [0] + [j + 1 for j in range(len(cols) - 1) if subset >> j & 1]
        A = np.stack([cols[j] for j in idx], 1)
        v = np.linalg.lstsq(A, np.ones(len(meas)), rcond=None)[0]
        if np.any(v[1:] < 0):
            continue
        sse = float(np.sum((A @ v - 1) ** 2))
        if best is None or sse < best:
            best, best_w = sse, np.zeros(len(cols))
            best_w[idx] = v
    return [float(x) for x in best_w] + ([0.0] if mb is None else [])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", required=True)
    ap.add_argument("--networks", required=True, help="network CSV (docs/measurements.md)")
    ap.add_argument("--folds", required=True, help="families of a fold joined by ',', folds by ';'")
    ap.add_argument("--lambdas", default="0.01,0.1,1,10")
    ap.add_argument("--perfpred", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "..", "build", "perfpred"))
    a = ap.parse_args(argv)
    base = os.path.dirname(os.path.abspath(a.networks))
    rows, cache = [], {}
    with open(a.networks, newline="") as f:
        for r in csv.DictReader(f):
            if r["device"] != a.device:
                continue
            model = r["model"] if os.path.isabs(r["model"]) else os.path.normpath(
                os.path.join(base, r["model"]))
            key = (model, r["batch"], r["input_shapes"])
            if key not in cache:
                cache[key] = kernel_times(a.perfpred, a.device, model, r["batch"], r["input_shapes"])
            rows.append((r["family"], int(r["batch"]), float(r["latency_ms"])) + cache[key])
    if not rows:
        sys.exit(f"kind_share_check: no rows of {a.device} in {a.networks}")
    kinds = sorted({k for r in rows for k in r[4]})
    kernels = np.array([float(r[5]) for r in rows])
    mb = np.array([float(r[6]) for r in rows])
    X = np.array([[r[4].get(k, 0.0) / sum(r[4].values()) for k in kinds] +
                  [math.log(r[3]), math.log(r[1])] for r in rows])
    y = np.array([math.log(r[2] / r[3]) for r in rows])
    meas = np.array([r[2] for r in rows])
    layer_sum = np.array([r[3] for r in rows])
    fam = [r[0] for r in rows]
    folds = [f.split(",") for f in a.folds.split(";")]
    print(f"{len(rows)} rows of {a.device}, {len(cache)} graphs; features: time share of "
          f"{', '.join(kinds)}; log layer sum; log batch")
    print(f"{'fold':60s} {'rows':>5s} {'layer sum':>10s} " +
          " ".join(f"{'ridge ' + l:>11s}" for l in a.lambdas.split(",")) +
          f" {'a*sum+c*kern':>13s} {'a':>6s} {'c us':>6s}"
          f" {'+d*MB':>8s} {'a':>6s} {'c us':>6s} {'d us/MB':>8s}")
    pooled = {l: [] for l in a.lambdas.split(",")}
    pooled_base, pooled_over, pooled_mb = [], [], []
    for fold in folds:
        te = [i for i in range(len(rows)) if fam[i] in fold]
        tr = [i for i in range(len(rows)) if fam[i] not in fold]
        if not te or not tr:
            sys.exit(f"kind_share_check: fold {','.join(fold)} has {len(te)} rows")
        mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-9
        A = np.hstack([(X[tr] - mu) / sd, np.ones((len(tr), 1))])
        T = np.hstack([(X[te] - mu) / sd, np.ones((len(te), 1))])
        line = f"{','.join(fold):60s} {len(te):5d} {mape(layer_sum[te], meas[te]):10.2f} "
        pooled_base += list(np.abs(layer_sum[te] / meas[te] - 1))
        for l in a.lambdas.split(","):
            R = float(l) * np.eye(A.shape[1])
            R[-1, -1] = 0.0  # the intercept is not shrunk
            w = np.linalg.solve(A.T @ A + R, A.T @ y[tr])
            pred = layer_sum[te] * np.exp(T @ w)
            pooled[l] += list(np.abs(pred / meas[te] - 1))
            line += f"{mape(pred, meas[te]):11.2f} "
        sc, per_kernel, _ = fit_overhead(layer_sum[tr], kernels[tr], meas[tr])
        pred = sc * layer_sum[te] + per_kernel * kernels[te]
        pooled_over += list(np.abs(pred / meas[te] - 1))
        line += f"{mape(pred, meas[te]):13.2f} {sc:6.3f} {1000 * per_kernel:6.1f}"
        w = fit_overhead(layer_sum[tr], kernels[tr], meas[tr], mb[tr])
        pred = w[0] * layer_sum[te] + w[1] * kernels[te] + w[2] * mb[te]
        pooled_mb += list(np.abs(pred / meas[te] - 1))
        line += (f" {mape(pred, meas[te]):8.2f} {w[0]:6.3f} {1000 * w[1]:6.1f}"
                 f" {1000 * w[2]:8.2f}")
        print(line)
    print(f"{'pooled':60s} {len(pooled_base):5d} {100 * np.mean(pooled_base):10.2f} " +
          " ".join(f"{100 * np.mean(pooled[l]):11.2f}" for l in a.lambdas.split(",")) +
          f" {100 * np.mean(pooled_over):13.2f} {'':13s} {100 * np.mean(pooled_mb):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
