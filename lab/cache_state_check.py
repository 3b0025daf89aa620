#!/usr/bin/python3
"""cache_state_check.py: does a cache-state model of the in-network correction beat the one line
(latency = a x layer sum + c x kernels + d x MB moved) on xeon-kvm-2vcpu? Issue 22.

For every network row: perfpred's layer-sum kernels (`perfpred --layers --json --layer-sum-only`)
joined to the ONNX graph's edges and `perfpred inspect`'s tensor sizes. Per kernel: weights W,
activation inputs X (each with the kernel that produced it) and output Y. Timed alone, back to back,
a kernel finds all its operands in the level its working set W + X + Y fits (L2 2 MiB per core,
LLC 260 MiB, sysfs); inside the pass an input's reuse distance is the bytes (W + Y) the kernels
between its producer and its consumer touched, a weight's the whole pass. Bytes that sit one level
further out in the network than alone are "cold": wL3/xL3 (L2 -> L3), wDR/xDR (-> DRAM), also split
by the kernel's roofline class (coldm, coldc). Each model is fitted as fit_overhead.c does
(squared relative error, extra terms >= 0, best subset) on networks-run4.csv, judged on the same
four family folds, then, fitted on every training row, on the judging files, which no fit sees.
It measures nothing; run from the repository root after a build:

  /usr/bin/python3 lab/cache_state_check.py > data/xeon-kvm-2vcpu/cache-state-check.txt

Another device: --device, --data, --l2-mib, --llc-mib, --train, --judge (comma-separated) and
--config-dir (its models; default the source tree's), e.g. the Zen 4 guest's third run:

  /usr/bin/python3 lab/cache_state_check.py --device epyc-zen4-kvm-2vcpu \\
      --data data/epyc-zen4-kvm-2vcpu --l2-mib 1 --llc-mib 32 --train networks-run3 \\
      --judge judge,judge-run2,judge-run3
"""
import argparse, csv, json, math, os, subprocess, sys
import numpy as np
import onnx

PP = "build/perfpred"
DEV = "xeon-kvm-2vcpu"
DATA = "data/xeon-kvm-2vcpu"
L2 = 2 * 2**20
LLC = 260 * 2**20
FOLDS = "randcnn;randtf;resnet,efficientnet,vit;mobilenet_v2,convnext,densenet"
TRAIN = "networks-run4"
JUDGE = ["judge-run4", "judge-run2", "judge-run5"]
CFG = []


def extract(files):
    out = {}
    for f in files:
        path = f"{DATA}/{f}.csv"
        for r in csv.DictReader(open(path)):
            model = os.path.normpath(os.path.join(os.path.dirname(path), r["model"]))
            key = f"{model}|{r['input_shapes']}"
            if key in out:
                continue
            args = []
            for s in r["input_shapes"].split(";"):
                n, d = s.split(":")
                args += ["--input", f"{n}={d}"]
            k = json.loads(subprocess.check_output([PP, "--device", DEV, model, "--layers", "100000",
                                                    "--json", "--layer-sum-only"] + args + CFG))
            ins = json.loads(subprocess.check_output([PP, "inspect", model, "--json", "--all"] + args))
            g = onnx.load(model).graph
            nodes = [{"name": n.name, "op": n.op_type, "in": list(n.input), "out": list(n.output)}
                     for n in g.node]
            byname = {L["name"]: L for L in ins["layers"]}
            assert len(byname) == len(nodes)
            for nd in nodes:
                L = byname[nd["name"]]
                nd.update({k2: L[k2] for k2 in ("output_shape", "folded")})
            out[key] = {"kernels": k["kernels"], "nodes": nodes, "inputs": [i["name"] for i in ins["inputs"]],
                        "layer_sum": k["prediction"]["latency"]["value"]}
    return out

def prod(s):
    p = 1
    for d in s: p *= d
    return p

def net_features(net):
    nodes = net["nodes"]
    byname = {n["name"]: i for i, n in enumerate(nodes)}
    cons = {}
    for i, n in enumerate(nodes):
        for t in n["in"]: cons.setdefault(t, []).append(i)
    prod_of = {}
    for i, n in enumerate(nodes):
        for t in n["out"]: prod_of[t] = i
    weight_sz = {}
    # kernels: first node -> chain
    node_k = {}
    ks = []
    for kk in net["kernels"]:
        i0 = byname[kk["name"]]
        ops = kk["ops"].split("=")[0].split("+")
        chain = [i0]
        cur = i0
        for op in ops[1:]:
            nxt = None
            for t in nodes[cur]["out"]:
                for c in cons.get(t, []):
                    if nodes[c]["op"] == op and c not in node_k and c not in chain:
                        nxt = c; break
                if nxt is not None: break
            if nxt is None: break
            chain.append(nxt); cur = nxt
        for c in chain: node_k[c] = len(ks)
        ks.append({"t": kk["latency_ms"], "bytes": kk["bytes"], "kind": kk["kind"], "chain": chain,
                   "first": i0, "flops": kk["flops"], "bound": kk["bound"]})
    order = sorted(range(len(ks)), key=lambda k: ks[k]["first"])
    pos = {k: p for p, k in enumerate(order)}
    model_inputs = set(net["inputs"])
    def tsize(t):
        i = prod_of.get(t)
        if i is None: return None
        return 4 * prod(nodes[i]["output_shape"])
    # producer kernel of an activation tensor (through views); -1: model input; None: weight
    def src(t, depth=0):
        if t in model_inputs: return -1
        i = prod_of.get(t)
        if i is None: return None  # graph weight input
        if nodes[i]["folded"]: return None
        if i in node_k: return node_k[i]
        # a view: follow its first activation input
        for u in nodes[i]["in"]:
            s = src(u, depth + 1)
            if s is not None: return s
        return None
    for k in ks:
        chainset = set(k["chain"])
        X = []
        for c in k["chain"]:
            for t in nodes[c]["in"]:
                if not t: continue
                pi = prod_of.get(t)
                if pi in chainset: continue
                s = src(t)
                if s is None: continue
                if s == -1:
                    sz = None
                else:
                    sz = tsize(t)
                X.append((s, sz, t))
        k["X"] = X
        last = k["chain"][-1]
        k["Y"] = 4 * prod(nodes[last]["output_shape"])
    # model input size
    for k in ks:
        X2 = []
        for s, sz, t in k["X"]:
            if sz is None:
                sz = 0
                for nd in nodes:
                    pass
            X2.append((s, sz, t))
        k["X"] = X2
    for k in ks:
        xs = sum(sz for s, sz, t in k["X"])
        k["Xb"] = xs
        k["W"] = max(0, k["bytes"] - xs - k["Y"])
    touched = [ks[k]["W"] + ks[k]["Y"] for k in order]
    cum = np.concatenate([[0], np.cumsum(touched)])
    total = cum[-1]
    return ks, order, pos, cum, total

def level(d):
    return 0 if d <= L2 else (1 if d <= LLC else 2)

def row_feats(net):
    ks, order, pos, cum, total = net_features(net)
    f = dict(S=net["layer_sum"], K=len(ks), MB=sum(k["bytes"] for k in ks) * 1e-6,
             wL3=0.0, wDR=0.0, xL3=0.0, xDR=0.0, xWarm=0.0, Ybig=0.0, wL3m=0.0, xL3m=0.0,
             maxex=0.0, W=0.0, X=0.0, Y=0.0, MBm=0.0, MBc=0.0, Ym=0.0, Xm=0.0, Wm=0.0, coldm=0.0, coldc=0.0, Km=0.0, Sm=0.0, Sc=0.0)
    for k in ks:
        p = pos[ks.index(k)]
        ws = k["W"] + k["Xb"] + k["Y"]
        la = level(ws)
        f["W"] += k["W"] * 1e-6; f["X"] += k["Xb"] * 1e-6; f["Y"] += k["Y"] * 1e-6
        # weights: reused one pass later
        lw = level(total - k["W"] + k["W"])
        mem = k["bound"] == "memory"
        f["MBm" if mem else "MBc"] += k["bytes"] * 1e-6
        f["Sm" if mem else "Sc"] += k["t"]
        if mem: f["Ym"] += k["Y"] * 1e-6; f["Xm"] += k["Xb"] * 1e-6; f["Wm"] += k["W"] * 1e-6; f["Km"] += 1
        cold0 = 0.0
        if lw > la:
            cold0 += k["W"] * 1e-6
            if lw == 1: f["wL3"] += k["W"] * 1e-6; f["wL3m"] += mem * k["W"] * 1e-6
            else: f["wDR"] += k["W"] * 1e-6
        for s, sz, t in k["X"]:
            if s == -1: d = total
            else: d = cum[p] - cum[pos[s] + 1] + sz
            lx = level(d)
            if lx > la:
                cold0 += sz * 1e-6
                if lx == 1: f["xL3"] += sz * 1e-6; f["xL3m"] += mem * sz * 1e-6
                else: f["xDR"] += sz * 1e-6
            elif lx < la: f["xWarm"] += sz * 1e-6
        f["coldm" if mem else "coldc"] += cold0
    return f

def load_rows(fname):
    rows = []
    path = f"{DATA}/{fname}.csv"
    for r in csv.DictReader(open(path)):
        model = os.path.normpath(os.path.join(os.path.dirname(path), r["model"]))
        key = f"{model}|{r['input_shapes']}"
        f = FE[key]
        rows.append(dict(f, m=float(r["latency_ms"]), fam=r["family"], key=key))
    return rows


def design(rows, terms):
    X = np.array([[r[t] for t in terms] for r in rows], float)
    m = np.array([r["m"] for r in rows])
    return X / m[:, None], m

def fit(rows, terms, free=1):
    """min sum (x.w/m - 1)^2, w[free:] >= 0, best over subsets (as fit_overhead.c)."""
    A, m = design(rows, terms)
    best, bw = math.inf, None
    n = len(terms)
    for mask in range(1 << (n - free)):
        idx = list(range(free)) + [free + j for j in range(n - free) if mask >> j & 1]
        w, *_ = np.linalg.lstsq(A[:, idx], np.ones(len(rows)), rcond=None)
        if any(w[free:] < 0): continue
        ww = np.zeros(n); ww[idx] = w
        sse = ((A @ ww - 1) ** 2).sum()
        if sse < best: best, bw = sse, ww
    return bw

def pred(rows, terms, w):
    return np.array([sum(r[t] * wi for t, wi in zip(terms, w)) for r in rows])

def mape(rows, p):
    m = np.array([r["m"] for r in rows])
    e = np.abs(p / m - 1)
    return 100 * e.mean(), 100 * (e <= 0.10).mean()

def folds(rows, terms):
    errs = []
    for fold in FOLDS.split(";"):
        fams = fold.split(",")
        tr = [r for r in rows if r["fam"] not in fams]
        te = [r for r in rows if r["fam"] in fams]
        w = fit(tr, terms)
        errs += list(np.abs(pred(te, terms, w) / np.array([r["m"] for r in te]) - 1))
    return 100 * np.mean(errs)



def main(argv=None):
    global FE, DEV, DATA, L2, LLC, TRAIN, JUDGE, CFG
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default=DEV)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--l2-mib", type=float, default=L2 / 2**20)
    ap.add_argument("--llc-mib", type=float, default=LLC / 2**20)
    ap.add_argument("--train", default=TRAIN)
    ap.add_argument("--judge", default=",".join(JUDGE))
    ap.add_argument("--config-dir", default=None)
    a = ap.parse_args(argv)
    DEV, DATA, TRAIN, JUDGE = a.device, a.data, a.train, a.judge.split(",")
    L2, LLC = int(a.l2_mib * 2**20), int(a.llc_mib * 2**20)
    CFG = ["--config-dir", a.config_dir] if a.config_dir else []
    nets = extract([TRAIN] + JUDGE)
    FE = {key: row_feats(net) for key, net in nets.items()}
    for r in FE.values():
        r["cold"] = r["wL3"] + r["xL3"] + r["wDR"] + r["xDR"]
    models = [
        ("layer sum", ["S"]),
        ("shipped: a, c, d (all MB)", ["S", "K", "MB"]),
        ("cache: a, c, wL3, xL3, wDR, xDR", ["S", "K", "wL3", "xL3", "wDR", "xDR"]),
        ("cache: a, c, cold (one per-MB)", ["S", "K", "cold"]),
        ("cache: a, wL3 (weights only)", ["S", "wL3"]),
        ("cache: a, coldm, coldc (by class)", ["S", "coldm", "coldc"]),
        ("cache: a, coldm, MB", ["S", "coldm", "MB"]),
        ("bytes by role: a, W, X, Y", ["S", "W", "X", "Y"]),
        ("by class: a, MB mem, MB comp", ["S", "MBm", "MBc"]),
        ("by class: a, Y of mem-bound", ["S", "Ym"]),
        ("by class: scale mem, scale comp", ["Sm", "Sc"]),
    ]
    train = load_rows(TRAIN)
    judges = {f: load_rows(f) for f in JUDGE}
    print(f"# /usr/bin/python3 lab/cache_state_check.py {' '.join(argv or sys.argv[1:])}  (L2 {L2 >> 20} MiB, LLC {LLC >> 20} MiB; "
          f"fitted on {DATA}/{TRAIN}.csv, folds {FOLDS})")
    print(f"{'model':36s} {'folds':>6s} {'train':>6s} " + " ".join(f"{f:>16s}" for f in JUDGE) + "  weights (ms, ms/kernel, ms/MB)")
    for name, terms in models:
        w = fit(train, terms) if len(terms) > 1 else np.array([1.0])
        fo = folds(train, terms) if len(terms) > 1 else mape(train, pred(train, terms, w))[0]
        js = []
        for f in JUDGE:
            m, w10 = mape(judges[f], pred(judges[f], terms, w))
            js.append(f"{m:6.1f} ({w10:4.0f} %)")
        print(f"{name:36s} {fo:6.2f} {mape(train, pred(train, terms, w))[0]:6.2f} " + " ".join(f"{j:>16s}" for j in js)
              + "  " + " ".join(f"{t}={x:.4g}" for t, x in zip(terms, w)))
    print("folds: pooled MAPE % of the four held-out family folds; train: on the rows fitted; "
          "judges: MAPE (share within +-10 %), fitted on every training row")


if __name__ == "__main__":
    main()
