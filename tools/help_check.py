#!/usr/bin/python3
"""tools/help_check.py: perfpred against HELP's latency tables (../shared/datasets/help), a check
that no fit saw. By default HELP's four server CPUs: Intel Xeon Gold 6226, Gold 6240, Silver 4114
and Silver 4210R, each with NAS-Bench-201's 15,625 CIFAR-10 cells and 5,000 FBNet (CIFAR-100)
architectures at batch 1, timed by HELP's authors under PyTorch (help_nasbench201_latency.csv,
help_fbnet_latency.csv).

No one here calibrated these CPUs: their descriptors (configs/devices/x86-cpus.yaml) hold Intel
ARK's figures only. Each is predicted through `perfpred predict-many` as shipped, so the answer is
whatever perfpred gives such a CPU (since 2026-11-30 the layer models of the calibrated CPU
nearest to its figures per core, with that CPU's in-network correction, scaled per core; before,
the descriptor's roofline).

--gpus judges HELP's five desktop GPUs instead (GTX 1080 Ti, RTX 2080 Ti, TITAN X (Pascal),
TITAN Xp, TITAN RTX; PyTorch; NAS-Bench-201 at batch 1 / 32 / 256, FBNet at 1 / 32 / 64) under
their descriptors' runtime stack, eager fp32: the stacks were fitted on framework-tax's
torchvision rows of the first three, never on these search spaces, and never on the two TITANs.

--adapt N (CPUs) first fits each CPU's in-network correction on N architectures of the search
space it is then judged on (seeded; `perfpred calibrate fit --networks ... --overhead`, four folds,
in a copy of the config folder, over the layer models the CPU borrows), as a user with a small
measured table of a new machine would, then judges every other architecture of that space.

Run from the repository root:  /usr/bin/python3 tools/help_check.py [--gpus | --adapt N]
    [--perfpred PATH] [--config-dir DIR] [--threads N] [--limit N] [--seed N]
Prints, per device, search space and batch, the rows, MAPE, the share within +-10 %, the mean log
ratio (predicted / measured) and Spearman's rank correlation, and exits 0.
"""
import argparse
import csv
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

HELP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                    "datasets", "help")
CPUS = [("xeon-gold-6226", "gold_6226"), ("xeon-gold-6240", "gold_6240"),
        ("xeon-silver-4114", "silver_4114"), ("xeon-silver-4210r", "silver_4210r")]
GPUS = [("gtx-1080-ti", "1080ti"), ("rtx-2080-ti", "2080ti"), ("titan-x-pascal", "titanx"),
        ("titan-xp", "titanxp"), ("titan-rtx", "titan_rtx")]
BATCHES = {"nb201": [1, 32, 256], "fbnet": [1, 32, 64]}


def measured(space, columns, limit):
    """{perfpred item: {HELP column: ms}} and the items in file order (the first `limit`)."""
    name = "help_nasbench201_latency.csv" if space == "nb201" else "help_fbnet_latency.csv"
    rows, order = {}, []
    with open(os.path.join(HELP, name), newline="") as f:
        for r in csv.DictReader(f):
            if limit and len(order) >= limit:
                break
            item = (r["arch_str"] if space == "nb201"
                    else "fbnet:" + r["block_ops"].replace(" ", ",") + "@cifar100")
            rows[item] = {col: float(r[col + "_ms"]) for col in columns}
            order.append(item)
    return rows, order


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    num = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    den = math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))
    return num / den if den > 0 else float("nan")


def predict(pp, device, space, items, tmp, threads, config_dir, batches):
    """{(item, batch): (latency ms, provenance)} from predict-many."""
    lst = os.path.join(tmp, space + ".txt")
    with open(lst, "w") as f:
        f.write("\n".join(items) + "\n")
    cmd = [pp, "predict-many", "--device", device, "--csv", "--threads", str(threads),
           "--batch", ",".join(str(b) for b in batches),
           "--nb201" if space == "nb201" else "--onnx-list", lst]
    if config_dir:
        cmd += ["--config-dir", config_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 2):
        sys.exit("perfpred predict-many failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    out = {}
    for row in csv.DictReader(r.stdout.splitlines()):
        if row["status"] == "ok":
            out[(row["item"], int(row["batch"]))] = (float(row["latency_ms"]),
                                                     row["latency_provenance"])
    return out


NET_HEADER = ("model,family,device,runtime,runtime_version,precision,batch,input_shapes,latency_ms,"
              "latency_spread_ms,repetitions,energy_j,peak_memory_bytes,source,date")


def adapt(pp, device, col, picks, tmp, config_dir):
    """Fits device's in-network correction on picks [(space, item, ms)] in a copy of the config
    folder; returns that folder."""
    cfg = os.path.join(tmp, "configs")
    if not os.path.isdir(cfg):
        shutil.copytree(config_dir or "configs", cfg, symlinks=True)
    path = os.path.join(tmp, "adapt-%s.csv" % device)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(NET_HEADER.split(","))
        for k, (space, item, ms) in enumerate(picks):
            ref = "nb201:%s@cifar10" % item if space == "nb201" else item
            w.writerow([ref, "f%d" % (k % 4), device, "pytorch", "HELP", "fp32", 1, "", ms, "", "",
                        "", "", "HELP's %s table, column %s_ms" % (space, col), "2021-01-01"])
    r = subprocess.run([pp, "calibrate", "fit", "--device", device, "--networks", path,
                        "--overhead", "--heldout-families", "f0;f1;f2;f3", "--config-dir", cfg],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("perfpred calibrate fit failed (%d): %s" % (r.returncode, r.stderr[-2000:]))
    return cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", action="store_true", help="HELP's desktop GPUs, not its CPUs")
    ap.add_argument("--perfpred", default="build/perfpred")
    ap.add_argument("--config-dir", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="the first N architectures of each space")
    ap.add_argument("--adapt", type=int, default=0,
                    help="fit each CPU's correction on N architectures of each space first")
    ap.add_argument("--seed", type=int, default=1, help="which architectures --adapt takes")
    a = ap.parse_args()
    if a.adapt and a.gpus:
        ap.error("--adapt fits a CPU's in-network correction; not with --gpus")
    devices = GPUS if a.gpus else CPUS
    print("HELP's %s (PyTorch), predicted by %s; no fit saw these rows" % (
        "desktop GPUs" if a.gpus else "server CPUs", a.perfpred))
    print("%-8s %-18s %5s %6s %8s %9s %9s %9s  %s" % ("space", "device", "batch", "rows", "MAPE %",
                                                        "<=10 %", "mean log", "Spearman",
                                                        "provenance"))
    with tempfile.TemporaryDirectory() as tmp:
        spaces = {}
        for space in ("nb201", "fbnet"):
            batches = BATCHES[space] if a.gpus else [1]
            cols = ["%s_%d" % (c, b) if a.gpus else c for _, c in devices for b in batches]
            spaces[space] = measured(space, cols, a.limit)
        held, cfg = set(), {}
        for space in ("nb201", "fbnet") if a.adapt else ():
            rows, order = spaces[space]
            picks = random.Random(a.seed).sample(order, a.adapt)
            held.update(picks)
            for device, col in devices:
                cfg[(device, space)] = adapt(a.perfpred, device, col,
                                             [(space, k, rows[k][col]) for k in picks],
                                             os.path.join(tmp, space, device), a.config_dir)
        if a.adapt:
            print("each CPU's correction fitted on %d architectures of the space (seed %d), "
                  "judged on its others" % (a.adapt, a.seed))
        for space in ("nb201", "fbnet"):
            batches = BATCHES[space] if a.gpus else [1]
            rows, order = spaces[space]
            for device, col in devices:
                pred = predict(a.perfpred, device, space, order, tmp, a.threads,
                               cfg.get((device, space), a.config_dir), batches)
                for b in batches:
                    c = "%s_%d" % (col, b) if a.gpus else col
                    keys = [k for k in order if (k, b) in pred and rows[k][c] > 0 and k not in held]
                    p = [pred[(k, b)][0] for k in keys]
                    m = [rows[k][c] for k in keys]
                    err = [x / y - 1 for x, y in zip(p, m)]
                    provs = sorted({pred[(k, b)][1] for k in keys})
                    print("%-8s %-18s %5d %6d %8.1f %9.1f %+9.3f %9.3f  %s" % (
                        space, device, b, len(keys), 100 * sum(abs(e) for e in err) / len(err),
                        100 * sum(abs(e) <= 0.1 for e in err) / len(err),
                        sum(math.log(x / y) for x, y in zip(p, m)) / len(p), spearman(p, m),
                        ",".join(provs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
