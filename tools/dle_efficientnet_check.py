#!/usr/bin/python3
"""tools/dle_efficientnet_check.py: perfpred against NVIDIA DeepLearningExamples' A100 80GB
EfficientNet inference table (../shared/datasets/nvidia-dle-efficientnet-a100), a check that no
fit saw. TF32 rows are predicted with the eager fp32 stack (TF32 convolutions, the descriptor's
default for a100-sxm4-80gb), AMP rows with --precision amp (autocast). B0 runs at 224 x 224, B4 at 380 x 380
(the table's image sizes); the widese variants have no torchvision export and are left out.

Run from the repository root:  /usr/bin/python3 tools/dle_efficientnet_check.py [--perfpred PATH]
Prints one line per row and the MAPE per (model, precision), and exits 0.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

MODELS = {"efficientnet-b0": ("efficientnet_b0", 224), "efficientnet-b4": ("efficientnet_b4", 380)}


def predict(perfpred, onnx, size, batch, precision):
    cmd = [perfpred, "--device", "a100-sxm4-80gb", onnx, "--input",
           f"input={batch}x3x{size}x{size}", "--json"]
    if precision == "AMP":
        cmd += ["--precision", "amp"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    p = json.loads(out)["prediction"]
    return p["latency"]["value"], p["latency"]["provenance"], p.get("stack", {}).get("name", "-")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perfpred", default="build/perfpred")
    ap.add_argument("--data", default="../shared/datasets/nvidia-dle-efficientnet-a100/"
                    "dle_efficientnet_a100_80gb_inference.csv")
    a = ap.parse_args()
    errs = {}
    for r in csv.DictReader(open(a.data)):
        if r["model"] not in MODELS:
            continue
        name, size = MODELS[r["model"]]
        onnx = os.path.join("tests/fixtures/models", name + ".onnx")
        b = int(r["batch_size"])
        meas = float(r["latency_avg_ms"])
        pred, prov, stack = predict(a.perfpred, onnx, size, b, r["precision"])
        e = abs(pred / meas - 1) * 100
        errs.setdefault((r["model"], r["precision"]), []).append(e)
        print(f"{r['model']:16s} {r['precision']:4s} batch {b:4d}  measured {meas:8.2f} ms  "
              f"predicted {pred:8.2f} ms ({prov}, {stack})  error {e:5.1f} %")
    print()
    for k, v in sorted(errs.items()):
        print(f"{k[0]:16s} {k[1]:4s} MAPE {sum(v) / len(v):5.1f} % over {len(v)} batch sizes")
    allv = [x for v in errs.values() for x in v]
    print(f"all {len(allv)} rows: MAPE {sum(allv) / len(allv):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
