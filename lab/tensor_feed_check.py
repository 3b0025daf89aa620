#!/usr/bin/python3
"""lab/tensor_feed_check.py: how fast VGG-16 runs per SM and clock on each GPU with whole-model
rows (framework-tax-gpus and data/gpu-stacks), against its tensor cores' datasheet rate per SM and
clock. A one-off study behind the stacks' tensor-core feed (docs/gpu-stacks.md, "The model").

VGG-16 is the compute-bound model of the rows: 15.47 GMACs an image at 224 x 224, 94 % of it in
3x3 stride-1 convolutions. For each GPU and precision the fastest row at batch >= 64 gives
TFLOP/s by the direct count (2 x MACs x batch / latency); divided by SMs x boost clock (the
descriptor's, through `perfpred devices show`) it is FLOP per SM per clock. F is the datasheet's
dense tensor rate per SM per clock for the precision (fp16 with fp32 accumulation; TF32 for fp32
on cards whose TF32 rate passes their fp32 lanes), "-" where the precision runs on the fp32 lanes.

Run from the repository root:  /usr/bin/python3 lab/tensor_feed_check.py [--perfpred PATH]
"""
import argparse
import csv
import glob
import os
import re
import subprocess
import sys

GPUS = {"1080ti": "gtx-1080-ti", "2080ti": "rtx-2080-ti", "3090": "rtx-3090", "a6000": "rtx-a6000",
        "rtx-8000": "quadro-rtx-8000", "titanx": "titan-x-pascal", "v100": "v100-sxm2-32gb",
        "h100": "h100-sxm5-80gb", "h200": "h200-sxm-141gb"}
VGG16_FLOP = 2 * 15.47e9  # per image at 224 x 224 (torchvision's count, timm's infer_gmacs)


def descriptor(perfpred, name):
    out = subprocess.run([perfpred, "devices", "show", name], capture_output=True, text=True,
                         check=True).stdout
    f = {}
    for key in ("fp32", "tf32", "fp16", "compute_units", "clock_mhz"):
        m = re.search(rf"^\s+{key}: ([0-9.]+)", out, re.M)
        f[key] = float(m.group(1)) if m else 0.0
    return f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perfpred", default="build/perfpred")
    ap.add_argument("--data", default="../shared/datasets/framework-tax-gpus")
    ap.add_argument("--own-data", default="data/gpu-stacks")
    a = ap.parse_args()
    best = {}
    for prec in ("fp32", "fp16"):
        files = glob.glob(os.path.join(a.data, f"*_pretrained-{prec}", "*.csv")) + \
            glob.glob(os.path.join(a.own_data, f"*_pretrained-{prec}", "*.csv"))
        for path in files:
            stem = os.path.basename(path)[:-4].lower()
            gpu = GPUS.get("3090" if stem.startswith("3090") else stem)
            if gpu is None:
                continue
            with open(path) as f:
                for r in csv.DictReader(f):
                    if r.get("model") != "vgg16" or not r.get("latency"):
                        continue
                    b = float(r["batch_size"])
                    if b < 64:
                        continue
                    tf = VGG16_FLOP * b / float(r["latency"]) / 1e12
                    best[(gpu, prec)] = max(best.get((gpu, prec), 0), tf)
    print(f"{'GPU':18s} {'prec':5s} {'TFLOP/s':>8s} {'per SM-clock':>13s} {'tensor F':>9s}")
    for (gpu, prec), tf in sorted(best.items()):
        d = descriptor(a.perfpred, gpu)
        gclk = d["compute_units"] * d["clock_mhz"] * 1e-3
        peak = d["fp16"] if prec == "fp16" else d["tf32"]
        tensor = peak > d["fp32"]
        f = f"{peak * 1e3 / gclk:9.0f}" if tensor and gclk > 0 else f"{'-':>9s}"
        print(f"{gpu:18s} {prec:5s} {tf:8.1f} {tf * 1e3 / gclk:13.0f} {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
