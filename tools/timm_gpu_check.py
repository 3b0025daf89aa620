#!/usr/bin/python3
"""tools/timm_gpu_check.py: perfpred against timm's GPU inference benchmark files
(../shared/datasets/timm-benchmarks/results), a check that no fit saw: PyTorch eager under AMP
(fp16 autocast) at the largest batch that fit (256-2048), on the RTX 3090 (its timm rows are not
framework-tax's), the RTX 4090, RTX 5090 and RTX PRO 6000 Max-Q (no stack fit has seen them).

Only timm models whose architecture is a torchvision export in tests/fixtures/models are used:
the name pairs below, each checked against reference.csv's PyTorch parameter count (within 2 %,
the rule fit-stacks applies to framework-tax's names); pairs that fail it (timm's inception_v3,
regnetx_004, regnety_008) are reported and skipped. tf_* models (TensorFlow "same" padding) and
the torch.compile (dynamo) files are left out. Each row is predicted at its own image size and
batch with --precision amp (autocast: the eager fp16 stack, fitted on .half() models, with the
casts of the weights) and compared with infer_step_time (ms per batch).

Run from the repository root:  /usr/bin/python3 tools/timm_gpu_check.py [--perfpred PATH]
    [--files GLOB] [--config-dir DIR] [--rows-out FILE.csv]
Prints MAPE, median and mean log ratio per file and per model group, and exits 0.
"""
import argparse
import csv
import glob
import json
import math
import os
import subprocess
import sys

# timm name -> torchvision export (tests/fixtures/models/<name>.onnx)
PAIRS = {
    "resnet18": "resnet18", "resnet34": "resnet34", "resnet50": "resnet50",
    "resnet101": "resnet101", "resnet152": "resnet152",
    "resnext50_32x4d": "resnext50_32x4d", "resnext101_32x8d": "resnext101_32x8d",
    "wide_resnet50_2": "wide_resnet50_2", "wide_resnet101_2": "wide_resnet101_2",
    "densenet121": "densenet121", "densenet161": "densenet161",
    "densenet169": "densenet169", "densenet201": "densenet201",
    "efficientnet_b0": "efficientnet_b0", "efficientnet_b1": "efficientnet_b1",
    "efficientnet_b2": "efficientnet_b2", "efficientnet_b3": "efficientnet_b3",
    "efficientnet_b4": "efficientnet_b4",
    "mobilenetv2_100": "mobilenet_v2", "mobilenetv3_large_100": "mobilenet_v3_large",
    "mobilenetv3_small_100": "mobilenet_v3_small", "mnasnet_100": "mnasnet1_0",
    "inception_v3": "inception_v3",
    "vgg11": "vgg11", "vgg13": "vgg13", "vgg16": "vgg16", "vgg19": "vgg19",
    "vgg11_bn": "vgg11_bn", "vgg16_bn": "vgg16_bn",
    "regnetx_004": "regnet_x_400mf", "regnetx_008": "regnet_x_800mf",
    "regnetx_016": "regnet_x_1_6gf", "regnetx_032": "regnet_x_3_2gf",
    "regnety_004": "regnet_y_400mf", "regnety_008": "regnet_y_800mf",
    "regnety_016": "regnet_y_1_6gf", "regnety_032": "regnet_y_3_2gf",
    "convnext_tiny": "convnext_tiny", "convnext_small": "convnext_small",
    "convnext_base": "convnext_base", "convnext_large": "convnext_large",
    "swin_tiny_patch4_window7_224": "swin_t", "swin_small_patch4_window7_224": "swin_s",
    "swin_base_patch4_window7_224": "swin_b",
    "vit_base_patch16_224": "vit_b_16", "vit_base_patch32_224": "vit_b_32",
    "vit_large_patch16_224": "vit_l_16",
}
TRANSFORMERS = ("swin_", "vit_")

# the GPU named in a file name -> descriptor
GPUS = (("rtx3090", "rtx-3090"), ("rtx4090", "rtx-4090"), ("-4090", "rtx-4090"),
        ("5090", "rtx-5090"), ("pro6000maxq", "rtx-pro-6000-max-q"))


def device_of(path):
    base = os.path.basename(path)
    for key, dev in GPUS:
        if key in base:
            return dev
    return None


def reference(models_dir):
    with open(os.path.join(models_dir, "reference.csv")) as f:
        return {r["model"]: r for r in csv.DictReader(f)}


def predict(perfpred, config_dir, dev, onnx, name, size, batch):
    cmd = [perfpred, "--device", dev, onnx, "--input", f"{name}={batch}x3x{size}x{size}",
           "--precision", "amp", "--json"]
    if config_dir:
        cmd += ["--config-dir", config_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"rc {r.returncode}"
    p = json.loads(r.stdout)["prediction"]
    return p, None


def summary(label, ratios):
    if not ratios:
        return f"{label:34s} no rows"
    ape = [abs(x - 1) * 100 for x in ratios]
    logs = sorted(math.log(x) for x in ratios)
    med = math.exp(logs[len(logs) // 2])
    within = sum(1 for e in ape if e <= 10) / len(ape) * 100
    return (f"{label:34s} rows {len(ratios):3d}  MAPE {sum(ape) / len(ape):5.1f} %  "
            f"within +-10 % {within:5.1f} %  median predicted/measured {med:5.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perfpred", default="build/perfpred")
    ap.add_argument("--data", default="../shared/datasets/timm-benchmarks/results")
    ap.add_argument("--files", default="benchmark-infer-amp-n*.csv",
                    help="glob under --data (default: every AMP eager file, NCHW and NHWC)")
    ap.add_argument("--models-dir", default="tests/fixtures/models")
    ap.add_argument("--config-dir", help="passed to perfpred (a refitted stack to judge)")
    ap.add_argument("--rows-out", help="write every row with its prediction to this CSV")
    a = ap.parse_args()
    ref = reference(a.models_dir)
    skipped = {}
    out_rows = []
    by_file = {}
    by_group = {}
    for path in sorted(glob.glob(os.path.join(a.data, a.files))):
        if "dynamo" in path:
            continue
        dev = device_of(path)
        if dev is None:
            continue
        layout = "nhwc" if "-nhwc-" in path else "nchw"
        with open(path) as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            tv = PAIRS.get(r["model"])
            if tv is None or tv not in ref:
                continue
            pt = float(ref[tv]["params_torch"]) / 1e6
            pc = float(r["param_count"])
            if abs(pc / pt - 1) > 0.02:
                skipped[r["model"]] = f"{pc:.2f} M parameters against {tv}'s {pt:.2f} M"
                continue
            size = int(float(r["infer_img_size"]))
            batch = int(float(r["infer_batch_size"]))
            meas = float(r["infer_step_time"])
            onnx = os.path.join(a.models_dir, tv + ".onnx")
            p, err = predict(a.perfpred, a.config_dir, dev, onnx, ref[tv]["input_name"], size, batch)
            if p is None:
                print(f"{os.path.basename(path)} {r['model']} {size} b{batch}: no prediction: {err}")
                continue
            pred = p["latency"]["value"]
            ratio = pred / meas
            fam = "transformers" if r["model"].startswith(TRANSFORMERS) else "CNNs"
            by_file.setdefault(os.path.basename(path), []).append(ratio)
            by_group.setdefault((dev, layout, fam), []).append(ratio)
            by_group.setdefault(("model", r["model"]), []).append(ratio)
            out_rows.append({"file": os.path.basename(path), "device": dev, "layout": layout,
                             "timm_model": r["model"], "export": tv, "img_size": size,
                             "batch": batch, "measured_ms": meas, "predicted_ms": round(pred, 3),
                             "ratio": round(ratio, 4),
                             "provenance": p["latency"]["provenance"],
                             "host_ms": round(p.get("stack", {}).get("host_ms", 0), 3),
                             "gpu_ms": round(p.get("stack", {}).get("gpu_ms", 0), 3)})
    for m, why in sorted(skipped.items()):
        print(f"skipped {m}: {why}")
    print()
    for k, v in sorted(by_file.items()):
        print(summary(k[len("benchmark-infer-"):-len(".csv")], v))
    print()
    for k, v in sorted((k, v) for k, v in by_group.items() if k[0] != "model"):
        print(summary(" ".join(k), v))
    print()
    for k, v in sorted((k, v) for k, v in by_group.items() if k[0] == "model"):
        print(summary(k[1], v))
    allv = [x for k, v in by_group.items() if k[0] != "model" for x in v]
    print()
    print(summary("all rows", allv))
    if a.rows_out:
        tmp = a.rows_out + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out_rows[0].keys()) if out_rows else ["file"])
            w.writeheader()
            w.writerows(out_rows)
        os.replace(tmp, a.rows_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
