#!/usr/bin/python3
"""quick_adapt_check.py: how close does `calibrate run --quick` come on a CPU of another
generation? Issue 22 (transfer within 15 %).

A quick run keeps the layer models a device answers with (for a new CPU, another calibrated CPU's,
through calibration_from) and fits the in-network correction over them on whole networks timed on
the machine, then judges on networks no stage trained on. This replays its fit and its judgement on
the networks the calibrated guests timed in their own `calibrate run`s (a training file and the
judging file of the same run), for every other CPU's models: a copy of the config folder where the
target's descriptor names the source in calibration_from and the target's artifacts are gone; then
`perfpred calibrate fit --overhead` with the folds the run's fit stage builds (run/judge.c,
training_folds: randcnn; randtf; the zoo's families in two halves by first appearance), and
`perfpred eval` on the judging file before and after. It measures nothing; run from the repository
root after a build:

  /usr/bin/python3 lab/quick_adapt_check.py > data/quick-adapt-check.txt
"""
import csv, json, os, shutil, subprocess, sys, tempfile

PP = os.path.abspath("build/perfpred")
SOURCES = ["xeon-kvm-2vcpu", "epyc-kvm-2vcpu", "epyc-zen4-kvm-2vcpu", "host-cpu"]
# (target, training networks, judging networks): the files of one calibrate run each
PAIRS = [
    ("xeon-kvm-2vcpu", "networks-run2", "judge-run2"),
    ("xeon-kvm-2vcpu", "networks-run4", "judge-run4"),
    ("xeon-kvm-2vcpu", "networks-run5", "judge-run5"),
    ("epyc-zen4-kvm-2vcpu", "networks-run3-lv", "judge-run3-lv"),
    ("epyc-zen4-kvm-2vcpu", "networks-run5", "judge-run5"),
    # the Zen 3 guest has no calibrate-run training file: its zoo rows of the families a run
    # trains on (run/run.h, PP_RUN_TRAIN_ZOO), judged on the one calibrate-run judging file
    ("epyc-kvm-2vcpu", "networks:" + "resnet,mobilenet_v2,efficientnet,convnext,vit,densenet",
     "judge-2026_1128"),
]


def training_file(dst, train, tmp):
    """data/<dst>/<train>.csv, or for "<file>:<families>" that file's rows of those families (model
    paths made absolute, in tmp)."""
    if ":" not in train:
        return "data/%s/%s.csv" % (dst, train)
    name, fams = train.split(":")
    src = "data/%s/%s.csv" % (dst, name)
    out = os.path.join(tmp, "%s-%s.csv" % (dst, name))
    with open(src, newline="") as f, open(out, "w", newline="") as g:
        rd = csv.DictReader(f)
        wr = csv.DictWriter(g, fieldnames=rd.fieldnames)
        wr.writeheader()
        for row in rd:
            if row["family"] in fams.split(","):
                row["model"] = os.path.abspath(os.path.join(os.path.dirname(src), row["model"]))
                wr.writerow(row)
    return out


def folds(path):
    """training_folds() of run/judge.c on this CSV's family column."""
    fams = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["family"] not in fams:
                fams.append(row["family"])
    out, zoo = [], [[], []]
    nz = 0
    for fam in fams:
        if fam in ("randcnn", "randtf"):
            out.append(fam)
        else:
            zoo[nz % 2].append(fam)
            nz += 1
    out += [",".join(z) for z in zoo if z]
    return ";".join(out)


def config_for(src, dst, tmp):
    """The source tree's configs with dst borrowing src's models and nothing of its own."""
    cfg = os.path.join(tmp, "configs")
    shutil.rmtree(cfg, ignore_errors=True)
    shutil.copytree("configs", cfg, symlinks=True)
    shutil.rmtree(os.path.join(cfg, "artifacts", dst), ignore_errors=True)
    path = os.path.join(cfg, "devices", dst + ".yaml")
    lines = [l for l in open(path) if not l.startswith("calibration_from:")]
    lines.append("calibration_from: %s\n" % src)
    open(path, "w").writelines(lines)
    return cfg


def mape(dev, judge, cfg):
    r = subprocess.run([PP, "eval", "--device", dev, "--networks", judge, "--config-dir", cfg,
                        "--json"], capture_output=True, text=True, check=True)
    j = json.loads(r.stdout)
    return j["overall"]["model"]["mape_pct"], j["overall"]["model"]["within10_pct"]


def mape_w10_transfer(dst, judge, src, tmp):
    """Within +-10 % of the transfer alone (a fresh copy of the config folder)."""
    return mape(dst, judge, config_for(src, dst, tmp))[1]


def main():
    print("quick_adapt_check.py: the in-network correction refitted over another CPU's layer models")
    print("(calibrate run --quick's fit and judge, replayed on each guest's own calibrate-run files)")
    print()
    print("%-22s %-22s %-18s %-16s %10s %10s %8s %12s" % (
        "models of", "predicting", "trained on", "judged on", "transfer", "quick", "<=10 %",
        "correction"))
    with tempfile.TemporaryDirectory() as tmp:
        for dst, train, judge in PAIRS:
            tr = training_file(dst, train, tmp)
            jd = "data/%s/%s.csv" % (dst, judge)
            fl = folds(tr)
            for src in SOURCES:
                if src == dst:
                    continue
                cfg = config_for(src, dst, tmp)
                before, _ = mape(dst, jd, cfg)
                r = subprocess.run([PP, "calibrate", "fit", "--device", dst, "--networks", tr,
                                    "--overhead", "--heldout-families", fl, "--config-dir", cfg],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit("calibrate fit failed: %s" % r.stderr)
                written = os.path.exists(os.path.join(cfg, "artifacts", dst,
                                                      "overhead-latency.json"))
                after, w10 = mape(dst, jd, cfg)
                what = "written" if written else "not written"
                if written and after > before:
                    # the judge stage keeps the transfer alone where it is closer
                    what = "kept (%.1f%%)" % after
                    after, w10 = before, mape_w10_transfer(dst, jd, src, tmp)
                print("%-22s %-22s %-18s %-16s %9.1f%% %9.1f%% %7.0f%% %12s" % (
                    src, dst, train.split(":")[0], judge, before, after, w10, what))
    print()
    print("transfer: the source's models and its in-network correction (where it has one),")
    print("scaled by the two descriptors' figures, nothing fitted on the target;")
    print("quick: with the correction fitted on the training file (written only where it beats")
    print("the layer sum on the held-out folds), as calibrate run --quick installs it: where the")
    print("transfer alone is closer on the judging rows, it stays (kept: the correction's figure)")


if __name__ == "__main__":
    main()
