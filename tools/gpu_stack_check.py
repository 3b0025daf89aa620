#!/usr/bin/python3
"""tools/gpu_stack_check.py: perfpred, as a user runs it, against the project's own whole-model GPU
runs (data/gpu-stacks, written by runners/stack_runner.py): every measured row predicted through
the CLI (`perfpred --device DEV --runtime R --precision P model.onnx --batch N --json`), MAPE split
at batch 16, memory (NVML used) MAPE, energy per call (board power from NVML's energy counter over
the timed rounds, at least 0.25 s of them, times the latency), the caching allocator's own
statistics (torch max_memory_reserved and max_memory_allocated against the replayed allocator's)
and the share of rows inside the printed 80 % interval. Inputs are 224 x 224, as measured.

Unlike `perfpred calibrate fit-stacks`, which judges the stack's own kernel model, this goes
through everything a prediction does: on the A100 family and the GPUs scaled from it (the H100),
kernels the layer models cover take their calibrated times.

Run from the repository root:
  /usr/bin/python3 tools/gpu_stack_check.py [--perfpred build/perfpred] [--data data/gpu-stacks]
Prints one line per (stack, run) and a per-model table for eager fp32; exits 0.
"""
import argparse
import csv
import glob
import json
import os
import subprocess
import sys

# run-folder suffix -> (--runtime, --precision)
STACKS = {"pretrained-fp32": ("pytorch-eager", "fp32"), "pretrained-fp16": ("pytorch-eager", "fp16"),
          "pretrained-torchscript": ("torchscript", "fp32"),
          "pretrained-torchscript-fp16": ("torchscript", "fp16")}


def predict(perfpred, onnx, dev, runtime, precision, batch):
    cmd = [perfpred, "--device", dev, "--runtime", runtime, "--precision", precision, onnx,
           "--batch", str(batch), "--input", f"input={batch}x3x224x224", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    p = json.loads(out)["prediction"]
    iv = p["latency"].get("interval") or {}
    energy = p["energy"]["value"] if "energy" in p else None
    mb = p.get("memory_breakdown") or {}
    used = p["peak_memory"]["value"] if "peak_memory" in p else None
    reserved = used - mb["runtime_bytes"] if used and "runtime_bytes" in mb else None
    return (p["latency"]["value"], used, iv.get("lo"), iv.get("hi"), energy, reserved,
            mb.get("allocator_peak_bytes"))


def mape(v):
    return sum(v) / len(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perfpred", default="build/perfpred")
    ap.add_argument("--data", default="data/gpu-stacks")
    ap.add_argument("--models", default="tests/fixtures/models")
    a = ap.parse_args()
    per_model = {}
    for folder in sorted(glob.glob(os.path.join(a.data, "*_pretrained-*"))):
        suffix = os.path.basename(folder).split("_")[-1]
        if suffix not in STACKS:
            continue
        runtime, precision = STACKS[suffix]
        for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
            small, large, mem, energy, power, inside, n = [], [], [], [], [], 0, 0
            res, alloc = [], []
            dev = None
            for r in csv.DictReader(open(path)):
                if r["status"] != "ok":
                    continue
                dev = r["device"]
                b = int(r["batch_size"])
                onnx = os.path.join(a.models, r["torchvision_name"] + ".onnx")
                lat, mb, lo, hi, mj, rv, al = predict(a.perfpred, onnx, dev, runtime, precision,
                                                      b)
                meas = float(r["latency"]) * 1e3
                e = abs(lat / meas - 1) * 100
                (small if b < 16 else large).append(e)
                n += 1
                if lo is not None and hi is not None:
                    inside += lo <= meas <= hi
                # board energy per call: the mean power over the back-to-back rounds x latency
                if r.get("power_w") and mj and float(r.get("energy_window_s") or 0) >= 0.25:
                    energy.append(abs(mj / (float(r["power_w"]) * meas) - 1) * 100)
                    power.append(abs(mj / lat / float(r["power_w"]) - 1) * 100)
                if r["max_memory"] and mb:
                    mem.append(abs(mb / float(r["max_memory"]) - 1) * 100)
                if r.get("max_reserved") and rv:
                    res.append(abs(rv / float(r["max_reserved"]) - 1) * 100)
                if r.get("max_allocated") and al:
                    alloc.append(abs(al / float(r["max_allocated"]) - 1) * 100)
                if suffix == "pretrained-fp32":
                    per_model.setdefault(r["torchvision_name"], []).append((b, meas, lat))
            print(f"{dev} {runtime} {precision} ({os.path.basename(folder)}): {n} rows, "
                  f"MAPE batch < 16 {mape(small):5.1f} %, >= 16 {mape(large):5.1f} %, "
                  f"memory {mape(mem):5.1f} % ({len(mem)} rows; allocator reserved "
                  f"{mape(res):5.1f} %, allocated {mape(alloc):5.1f} %), "
                  f"energy {mape(energy):5.1f} % (mean power {mape(power):4.1f} %; {len(energy)} rows), "
                  f"in the 80 % interval {100.0 * inside / max(n, 1):5.1f} %")
    if per_model:
        print("\neager fp32, measured / predicted ms (both runs) at batch 1, 16, 256:")
        for m, rows in sorted(per_model.items()):
            cells = []
            for want in (1, 16, 256):
                hit = [(x, p) for b, x, p in rows if b == want]
                cells.append(f"{hit[0][0]:8.2f} / {hit[0][1]:8.2f}" if hit else f"{'-':>19s}")
            print(f"  {m:20s} " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
