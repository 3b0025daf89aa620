#!/usr/bin/python3
"""class_scale_check.py: would a scale per kernel class help `calibrate run --quick`? Issue 22.

The quick run's correction is one line over the borrowed models' layer sum (scale x sum + cost per
kernel + cost per MB, fit/fit_overhead.c). Where another CPU's models are off by family, one scale
cannot follow; this fits a scale per class of kernels instead (convolutions; matrix products; the
rest), the extra terms chosen by training error as fit_overhead does, on the same held-out folds
(run/judge.c's training_folds), then on every training row, judged on the judging file. It
measures nothing; run from the repository root after a build, e.g.

  /usr/bin/python3 lab/class_scale_check.py host-cpu epyc-zen4-kvm-2vcpu \
      data/epyc-zen4-kvm-2vcpu/networks-run5.csv data/epyc-zen4-kvm-2vcpu/judge-run5.csv

(a fifth argument keeps only those families of the training file). Answer of 2026-11-29: no
held-out gain on four pairs (docs/accuracy.md, "Quick adaptation").
"""
import csv, json, os, subprocess, sys, shutil, tempfile
import numpy as np
PP = os.path.abspath("build/perfpred")
CLS = {"conv": 0, "dwconv": 0, "linear": 1, "bmm": 1, "matmul": 1}
def cfg_for(src, dst, tmp):
    cfg = os.path.join(tmp, "configs"); shutil.rmtree(cfg, ignore_errors=True)
    shutil.copytree("configs", cfg, symlinks=True)
    shutil.rmtree(os.path.join(cfg, "artifacts", dst), ignore_errors=True)
    p = os.path.join(cfg, "devices", dst + ".yaml")
    L = [l for l in open(p) if not l.startswith("calibration_from:")] + ["calibration_from: %s\n" % src]
    open(p, "w").writelines(L); return cfg
def rows(path, fams=None):
    out = []
    for r in csv.DictReader(open(path)):
        if fams and r["family"] not in fams: continue
        model = os.path.normpath(os.path.join(os.path.dirname(path), r["model"]))
        args = []
        for s in r["input_shapes"].split(";"):
            n, d = s.split(":"); args += ["--input", f"{n}={d}"]
        out.append((model, args, float(r["latency_ms"]), r["family"]))
    return out
def feats(dev, cfg, rs):
    X = []
    for model, args, m, fam in rs:
        k = json.loads(subprocess.check_output([PP, "--device", dev, model, "--layers", "100000", "--json", "--layer-sum-only", "--config-dir", cfg] + args))
        tot = k["prediction"]["latency"]["value"]
        s = np.zeros(3)
        for K in k["kernels"]: s[CLS.get(K["kind"], 2)] += K["latency_ms"]
        s *= tot / s.sum()
        nk = len(k["kernels"]); mb = sum(K["bytes"] for K in k["kernels"]) * 1e-6
        X.append(np.concatenate([s, [nk, mb]]) / m)
    return np.array(X)
def fit(X, cols):
    A = X[:, cols]; w, *_ = np.linalg.lstsq(A, np.ones(len(X)), rcond=None)
    if (w < 0).any(): return None
    full = np.zeros(X.shape[1]); full[cols] = w; return full
def best(X, models):
    bw, bs = None, 1e99
    a, b = X.shape[1] - 2, X.shape[1] - 1
    for extra in ([], [a], [b], [a, b]):
        w = fit(X, models + extra)
        if w is None: continue
        sse = ((X @ w - 1) ** 2).sum()
        if sse < bs: bs, bw = sse, w
    if bw is None:  # a class the rows cannot price: one scale for all
        Xs = np.column_stack([X[:, models].sum(1), X[:, a], X[:, b]])
        w1 = best(Xs, [0]); bw = np.zeros(X.shape[1]); bw[models] = w1[0]; bw[a] = w1[1]; bw[b] = w1[2]
    return bw
def mape(X, w): return 100 * np.mean(np.abs(X @ w - 1))
def folds_of(fams):
    u = []; [u.append(f) for f in fams if f not in u]
    out, zoo = [], [[], []]; nz = 0
    for f in u:
        if f in ("randcnn", "randtf"): out.append({f})
        else: zoo[nz % 2].append(f); nz += 1
    return out + [set(z) for z in zoo if z]
src, dst, train, judge = sys.argv[1:5]
fams = sys.argv[5].split(",") if len(sys.argv) > 5 else None
tmp = tempfile.mkdtemp(); cfg = cfg_for(src, dst, tmp)
tr = rows(train, fams); jd = rows(judge)
Xt = feats(dst, cfg, tr); Xj = feats(dst, cfg, jd)
ft = [r[3] for r in tr]
one = np.array([1.0, 1, 1, 0, 0])
print(f"{src} -> {dst}: transfer {mape(Xj, one):.1f}%")
for name, models in (("one scale", None), ("per class", [0, 1, 2])):
    # held-out folds
    res = []
    for F in folds_of(ft):
        tri = np.array([f not in F for f in ft])
        if models is None:
            Xs = np.column_stack([Xt[:, :3].sum(1), Xt[:, 3], Xt[:, 4]]); w = best(Xs[tri], [0])
            res += list(np.abs(Xs[~tri] @ w - 1))
        else:
            w = best(Xt[tri], models); res += list(np.abs(Xt[~tri] @ w - 1))
    if models is None:
        Xs = np.column_stack([Xt[:, :3].sum(1), Xt[:, 3], Xt[:, 4]]); w = best(Xs, [0])
        Xjs = np.column_stack([Xj[:, :3].sum(1), Xj[:, 3], Xj[:, 4]]); jm = mape(Xjs, w)
    else:
        w = best(Xt, models); jm = mape(Xj, w)
    print(f"  {name:10s} folds {100*np.mean(res):5.1f}%  judge {jm:5.1f}%  w {np.round(w,4)}")
