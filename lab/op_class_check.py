#!/usr/bin/python3
"""lab/op_class_check.py: the eager stack's GPU time per op class against torch.profiler's.

Reads lab/op_host_profile.py's CSV (data/gpu-stacks/studies/2026_1127-h200-op-host-profile.csv:
per model and batch, each aten op's CUDA time per call on the H200) and predicts the same models
through the CLI (`--runtime pytorch-eager --layers ... --json`), then sums both by op class:
convolutions with their BatchNorm (cuDNN's and PyTorch's depthwise kernel, and the BatchNorm
pass eager runs after each: since 2026-11-30 a convolution's row of the breakdown holds its pass;
a BatchNorm the export could not fold, DenseNet's before its ReLU, is a row of its own), ReLU,
residual adds, SiLU and concatenations.

Printed per model: predicted / measured microseconds per call for each class. It measures
nothing; it says where the stack's per-kernel GPU times go wrong while their sum may not
(the fit sees whole models only).

  /usr/bin/python3 lab/op_class_check.py [--batch 32] [--perfpred build/perfpred]
                                         [--config-dir DIR]
"""
import argparse
import collections
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROFILE = os.path.join(ROOT, "data/gpu-stacks/studies/2026_1127-h200-op-host-profile.csv")

# class -> the aten ops whose CUDA time it is (the leaf op of each eager call)
MEASURED = {
    "conv+bn": ["aten::cudnn_convolution", "aten::_conv_depthwise2d", "aten::cudnn_batch_norm"],
    "relu": ["aten::relu_"],
    "add": ["aten::add_", "aten::add"],
    "silu": ["aten::silu_"],
    "cat": ["aten::cat"],
}
# a kernel of the prediction -> its class (ONNX ops as the export writes them)
PREDICTED_OPS = {"Relu": "relu", "Add": "add", "Sigmoid+Mul": "silu", "Concat": "cat",
                 "BatchNormalization": "conv+bn"}


def predicted_classes(kernels):
    out = collections.defaultdict(float)
    for k in kernels:
        cls = PREDICTED_OPS.get(k["ops"])
        if cls is None and k["kind"] in ("conv", "dwconv"):
            cls = "conv+bn"
        if cls:
            out[cls] += k["latency_ms"] * 1000.0
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default=PROFILE)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--perfpred", default=os.path.join(ROOT, "build/perfpred"))
    ap.add_argument("--config-dir", default=None)
    ap.add_argument("--device", default="h200-sxm-141gb")
    a = ap.parse_args(argv)
    measured = collections.defaultdict(float)
    models = []
    with open(a.profile, newline="") as f:
        for r in csv.DictReader(f):
            if int(r["batch_size"]) != a.batch:
                continue
            if r["model"] not in models:
                models.append(r["model"])
            measured[(r["model"], r["op"])] = float(r["gpu_us_per_call"])
    if not models:
        sys.exit("%s: no rows at batch %d" % (a.profile, a.batch))
    print("us per call, predicted / measured (torch.profiler), %s, batch %d" % (a.device, a.batch))
    for m in models:
        cmd = [a.perfpred, "--device", a.device, "--runtime", "pytorch-eager", "--batch",
               str(a.batch), os.path.join(ROOT, "tests/fixtures/models/%s.onnx" % m),
               "--layers", "1000", "--json"]
        if a.config_dir:
            cmd += ["--config-dir", a.config_dir]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("%s: %s" % (" ".join(cmd), out.stderr.strip()))
        pred = predicted_classes(json.loads(out.stdout)["kernels"])
        cells = []
        for cls, ops in MEASURED.items():
            meas = sum(measured[(m, op)] for op in ops)
            if meas or pred.get(cls):
                cells.append("%s %.0f/%.0f" % (cls, pred.get(cls, 0.0), meas))
        print("  %-16s %s" % (m, "  ".join(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
