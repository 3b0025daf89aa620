#!/usr/bin/python3
"""correction_data_check.py: is the in-network correction short of data or of form? Issue 22.

calibrate run fits the correction (a x layer sum + c x kernels + d x MB moved, fit/fit_overhead.c:
least squares of the relative error, c and d >= 0, the subset of terms with the lowest training
error) on 42 training networks of 18 random architectures. This fits the same line, in the same
way, on other training files of the Zen 4 guest, on subsets of 160 architectures of seed 3
(`data/epyc-zen4-kvm-2vcpu/networks-s3.csv`, tests/fixtures/randarch/s3) and, as a bound, on each
judging file itself, and judges each fit on the four judging files (seed 1001's 40 architectures
and 5 held-out zoo families, timed in four runs). Layer sums are the shipped layer models'
(`perfpred --layers --json --layer-sum-only`). It measures nothing; run from the repository root
after a build:

  /usr/bin/python3 lab/correction_data_check.py > data/epyc-zen4-kvm-2vcpu/correction-data-check.txt
"""
import csv, json, os, random, subprocess
import numpy as np

PP = os.path.abspath("build/perfpred")
DEV = "epyc-zen4-kvm-2vcpu"
D = "data/epyc-zen4-kvm-2vcpu/"
JUDGES = ["judge-run5", "judge-quick1", "judge-quick2", "judge-lv"]
_cache = {}


def feats(path):
    """Per row: layer sum, kernels and MB moved, each over the measured time."""
    if path in _cache:
        return _cache[path]
    X = []
    for r in csv.DictReader(open(path)):
        model = os.path.normpath(os.path.join(os.path.dirname(path), r["model"]))
        args = []
        for s in r["input_shapes"].split(";"):
            n, d = s.split(":")
            args += ["--input", f"{n}={d}"]
        k = json.loads(subprocess.check_output(
            [PP, "--device", DEV, model, "--layers", "100000", "--json", "--layer-sum-only"] + args))
        m = float(r["latency_ms"])
        mb = sum(K["bytes"] for K in k["kernels"]) / 1e6
        X.append([k["prediction"]["latency"]["value"] / m, len(k["kernels"]) / m, mb / m])
    _cache[path] = np.array(X)
    return _cache[path]


def fit(X, free=False):
    """fit_overhead.c's rule (or, free: every term, any sign)."""
    subsets = [[0, 1, 2]] if free else [[0], [0, 1], [0, 2], [0, 1, 2]]
    best, bw = np.inf, None
    for cols in subsets:
        w, *_ = np.linalg.lstsq(X[:, cols], np.ones(len(X)), rcond=None)
        if not free and (w[1:] < 0).any():
            continue
        full = np.zeros(3)
        full[cols] = w
        sse = ((X @ full - 1) ** 2).sum()
        if sse < best:
            best, bw = sse, full
    return bw


def judged(w):
    e = [np.abs(feats(D + j + ".csv") @ w - 1) for j in JUDGES]
    return ("MAPE " + " ".join("%4.1f" % (100 * x.mean()) for x in e) + " | within 10 % " +
            " ".join("%3.0f" % (100 * (x <= 0.10).mean()) for x in e))


def line(name, w):
    print("%-34s a %.3f c %4.1f us d %4.1f us/MB | %s" % (name, w[0], w[1] * 1e3, w[2] * 1e3,
                                                       judged(w)))


def main():
    print("correction_data_check.py: the in-network correction of %s fitted on other rows" % DEV)
    print("judging files, in order: " + ", ".join(JUDGES))
    print()
    for f in ("networks-run5", "networks-quick1", "networks-quick2", "networks-s3"):
        line(f + " (%d rows)" % len(feats(D + f + ".csv")), fit(feats(D + f + ".csv")))
    print()
    print("architectures of seed 3 drawn at random (both batch sizes of each) with run 5's six zoo")
    print("networks, 10 draws each, the figures averaged:")
    s3 = D + "networks-s3.csv"
    names = [r["model"] for r in csv.DictReader(open(s3))]
    archs = sorted(set(names))
    r5 = list(csv.DictReader(open(D + "networks-run5.csv")))
    zoo = np.array([r["family"] not in ("randcnn", "randtf") for r in r5])
    for n in (18, 36, 54, 80, 160):
        res = []
        for draw in range(10):
            random.seed(draw)
            pick = set(random.sample(archs, n))
            X = np.vstack([feats(s3)[[m in pick for m in names]], feats(D + "networks-run5.csv")[zoo]])
            w = fit(X)
            e = [np.abs(feats(D + j + ".csv") @ w - 1) for j in JUDGES]
            res.append([100 * x.mean() for x in e] + [100 * (x <= 0.10).mean() for x in e])
        m = np.mean(res, 0)
        print("  %3d architectures: MAPE %s | within 10 %% %s" % (
            n, " ".join("%4.1f" % x for x in m[:4]), " ".join("%3.0f" % x for x in m[4:])))
    print()
    print("bound: every term free, fitted on each judging file itself and judged on all four:")
    for j in JUDGES:
        line("  " + j + " (in sample)", fit(feats(D + j + ".csv"), free=True))


if __name__ == "__main__":
    main()
