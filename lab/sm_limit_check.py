#!/usr/bin/python3
"""lab/sm_limit_check.py: perfpred's wave model against whole models run on fewer SMs.

Reads lab/sm_limit_runner.py's CSV (data/gpu-stacks/studies/2026_1127-h200-sm-limit.csv: five
models x batch 1, 8, 64 on CUDA green contexts of 8-128 SMs and the whole H200) and predicts each
row through the CLI on a descriptor of that many SMs. A green context keeps the GPU's memory
system: each descriptor takes `base: <the measured GPU>`, its compute units, its peaks times
k / SMs, and its bandwidth times the copy rate those SMs reached over the whole GPU's (the run's
own probe rows), the GPU's figures read from `perfpred devices show`. That is how perfpred
derives a MIG slice too, less the slice's memory share.

Printed: per SM count, measured and predicted slowdown against the whole GPU (median over the
rows of a batch), and the MAPE of each batch. Batch 1 is host-bound on that machine (its host's
dispatch moved by up to 2x between runs), so batches 8 and 64 carry the question.

  /usr/bin/python3 lab/sm_limit_check.py [--csv ...] [--perfpred build/perfpred] [--configs DIR]
  /usr/bin/python3 lab/sm_limit_check.py --csv data/gpu-stacks/studies/2026_1128-h200-sm-graph.csv \
      --mode graph --precision fp16

`--mode graph` reads lab/sm_limit_runner.py's CUDA-graph rows (2026-11-28: fp32 and fp16 on 16-64
SMs and the whole GPU) and judges the stack's kernel sum (the prediction's `stack.gpu_ms`), the
part of a prediction a runtime without per-op dispatch keeps. `--runtime tensorrt` asks the
TensorRT stack of that precision instead: its kernels are fused, so its times are not the
replays', but its slowdown on fewer SMs should be near theirs.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def gpu_figures(perfpred, dev):
    """Peak TFLOP/s by precision, datasheet bandwidth and measured stream bandwidth (0 where none)
    of dev, from its resolved descriptor."""
    text = subprocess.run([perfpred, "devices", "show", dev], capture_output=True, text=True,
                          check=True).stdout
    block = re.search(r"\n  peak_tflops:\n((?:    \w+: [0-9.eE+-]+\n)+)", text)
    bw = re.search(r"\n  memory_bandwidth_gbs: ([0-9.eE+-]+)\n", text)
    if not block or not bw:
        sys.exit(f"perfpred devices show {dev}: no peak_tflops block or memory_bandwidth_gbs")
    peaks = {k: float(v) for k, v in re.findall(r"    (\w+): ([0-9.eE+-]+)", block.group(1))}
    stream = re.search(r"\n  stream_bandwidth_gbs: ([0-9.eE+-]+)\n", text)
    return peaks, float(bw.group(1)), float(stream.group(1)) if stream else 0.0


def descriptor(base, name, k, full, bw_share, peaks, bw, stream=0.0):
    """A descriptor of k of the full SMs of base: its peaks times k / full, its bandwidths (the
    datasheet's and, where base states one, the measured stream figure) times bw_share."""
    lines = [f"    {p}: {v * k / full:.6g}" for p, v in peaks.items()]
    text = (f"---\nname: {name}\nbase: {base}\ndescription: {base} on a green context of {k} SMs\n"
            f"hardware:\n  compute_units: {k}\n  peak_tflops:\n" + "\n".join(lines) +
            f"\n  memory_bandwidth_gbs: {bw * bw_share:.6g}\n")
    if stream > 0:
        text += f"  stream_bandwidth_gbs: {stream * bw_share:.6g}\n"
    return text


def predict(perfpred, cfg, dev, onnx, b, precision, mode, runtime="pytorch-eager"):
    """The latency of one row (mode eager), or its kernels' sum alone (mode graph: a CUDA graph's
    replay leaves no host dispatch between them), as the stack of that runtime and precision
    gives."""
    out = subprocess.run([perfpred, "--config-dir", cfg, "--device", dev, "--runtime",
                          runtime, "--precision", precision, onnx, "--input",
                          f"input={b}x3x224x224", "--json"], capture_output=True, text=True,
                         check=True).stdout
    p = json.loads(out)["prediction"]
    return p["stack"]["gpu_ms"] if mode == "graph" else p["latency"]["value"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=os.path.join(
        ROOT, "data/gpu-stacks/studies/2026_1127-h200-sm-limit.csv"))
    ap.add_argument("--perfpred", default=os.path.join(ROOT, "build/perfpred"))
    ap.add_argument("--models", default=os.path.join(ROOT, "tests/fixtures/models"))
    ap.add_argument("--configs", default=os.path.join(ROOT, "configs"),
                    help="the configs folder to copy (devices and artifacts)")
    ap.add_argument("--mode", default="eager", help="the rows' mode: eager, or graph (replayed "
                    "CUDA graphs, judged against the stack's kernel sum)")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--runtime", default="pytorch-eager",
                    help="the stack that predicts (tensorrt: its kernels against graph replays, "
                    "a check of its slowdown on fewer SMs, not of its times)")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(a.csv)))
    # a file of the first run has neither column: eager fp32
    rows = [r for r in rows if r["kind"] == "probe" or (
        (r.get("mode") or "eager") == a.mode and (r.get("precision") or "fp32") == a.precision)]
    base = rows[0]["device"]
    peaks, bw, stream = gpu_figures(a.perfpred, base)
    probes = {(int(r["sm_count"]), r["model"]): float(r["probe_value"])
              for r in rows if r["kind"] == "probe" and r["status"] == "ok"}
    full = max(k for k, _ in probes)
    tmp = tempfile.mkdtemp(prefix="sm-limit-")
    try:
        cfg = os.path.join(tmp, "configs")
        shutil.copytree(a.configs, cfg)
        with open(os.path.join(cfg, "devices", "zz-sm-limit.yaml"), "w") as f:
            for k in sorted({k for k, _ in probes}):
                share = min(1.0, probes[(k, "copy_gbs")] / probes[(full, "copy_gbs")])
                f.write(descriptor(base, f"{base}-sm{k}", k, full, share, peaks, bw, stream))
        meas, pred = {}, {}
        for r in rows:
            if r["kind"] != "model" or r["status"] != "ok":
                continue
            k, m, b = int(r["sm_count"]), r["model"], int(r["batch_size"])
            dev = base if k == full else f"{base}-sm{k}"
            meas[(k, m, b)] = float(r["latency_ms"])
            pred[(k, m, b)] = predict(a.perfpred, cfg, dev, os.path.join(a.models, m + ".onnx"),
                                      b, a.precision, a.mode, a.runtime)
    finally:
        shutil.rmtree(tmp)
    print(f"{'SMs':>4s} {'batch':>5s} {'slowdown measured':>18s} {'predicted':>10s} "
          f"{'SM ratio':>9s} {'MAPE %':>7s}")
    for k in sorted({k for k, _, _ in meas}, reverse=True):
        for b in sorted({b for _, _, b in meas}):
            keys = [x for x in meas if x[0] == k and x[2] == b and (full, x[1], b) in meas]
            if not keys:
                continue
            sm = statistics.median(meas[x] / meas[(full, x[1], b)] for x in keys)
            sp = statistics.median(pred[x] / pred[(full, x[1], b)] for x in keys)
            e = statistics.mean(abs(pred[x] / meas[x] - 1) * 100 for x in keys)
            print(f"{k:4d} {b:5d} {sm:18.2f} {sp:10.2f} {full / k:9.2f} {e:7.1f}")
    print("\nper row (ms): SMs model batch measured predicted")
    for x in sorted(meas):
        print(f"  {x[0]:4d} {x[1]:16s} {x[2]:4d} {meas[x]:9.3f} {pred[x]:9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
