#!/usr/bin/python3
"""inet_profile.py: where a whole network's time goes inside its forward pass on this CPU, per
aten operator and per convolution shape (torch.profiler), beside perfpred's own per-kind layer sum
for the same network, batch and device. It answers "which kernels does the layer sum miss?" for
one network at a time; it trains nothing.

The network is built as runners/network_runner.py builds it (BatchNorm folded, seeded, one
thread, OpenBLAS capped), timed as the best of 5 forwards after 3 warm-ups, then profiled over 3
forwards (self CPU time per aten op, per call) and once more with input shapes recorded.

  /usr/bin/python3 lab/inet_profile.py randcnn_s1001_i1 --batch 8 \\
      --graphs-dir tests/fixtures/randarch/s1001 --device epyc-zen4-kvm-2vcpu
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def perfpred_kinds(binary, device, onnx, batch):
    """perfpred's layer sum for the network, in ms per kernel kind, and its kernels."""
    out = subprocess.run([binary, "--device", device, onnx, "--batch", str(batch),
                          "--layer-sum-only", "--layers", "100000", "--json"],
                         capture_output=True, text=True, check=True).stdout
    kernels = json.loads(out)["kernels"]
    kinds = {}
    for k in kernels:
        kinds[k["kind"]] = kinds.get(k["kind"], 0.0) + k["latency_ms"]
    return kinds, kernels


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", help="a torchvision name, or randcnn_*/randtf_* with --graphs-dir")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--resolution", type=int, default=None)
    ap.add_argument("--graphs-dir", default=os.path.join(ROOT, "tests", "fixtures", "models"))
    ap.add_argument("--device", required=True, help="perfpred's device for the layer sum")
    ap.add_argument("--perfpred", default=os.path.join(ROOT, "build", "perfpred"))
    ap.add_argument("--top", type=int, default=24, help="convolution shapes listed")
    args = ap.parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    sys.path.insert(0, os.path.join(ROOT, "runners"))
    import torch
    from torch.profiler import ProfilerActivity, profile
    import models as model_specs
    import network_runner
    torch.set_num_threads(1)
    spec = model_specs.spec_for_name(args.model, args.graphs_dir)
    m, note = network_runner.prepared_model(torch, spec, True)
    x = spec.make_input(torch, args.batch, seed=args.batch, resolution=args.resolution)
    with torch.inference_mode():
        for _ in range(3):
            m(x)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            m(x)
            best = min(best, time.perf_counter() - t0)
        with profile(activities=[ProfilerActivity.CPU]) as p:
            for _ in range(3):
                m(x)
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as ps:
            m(x)
    print(f"# /usr/bin/python3 lab/inet_profile.py {args.model} --batch {args.batch} "
          f"--graphs-dir {os.path.relpath(args.graphs_dir, ROOT)} --device {args.device}")
    print(f"torch {torch.__version__}, 1 thread, input {tuple(x.shape)}, {note}, utc "
          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print(f"forward: {best * 1e3:.2f} ms (best of 5)")
    rows = sorted(((e.key, e.self_cpu_time_total / 3e3, e.count // 3) for e in p.key_averages()),
                  key=lambda r: -r[1])
    print(f"self CPU time per forward, by aten op (sum {sum(r[1] for r in rows):.2f} ms):")
    for key, ms, n in rows[:12]:
        print(f"  {key:<36} {ms:9.3f} ms  x{n}")
    convs = [e for e in ps.key_averages(group_by_input_shape=True)
             if e.key in ("aten::mkldnn_convolution", "aten::_slow_conv2d_forward")]
    convs.sort(key=lambda e: -e.cpu_time_total)
    print(f"convolutions by input and weight shape (top {args.top}; mkldnn: oneDNN, _slow: "
          "im2col + BLAS):")
    for e in convs[:args.top]:
        print(f"  {e.key:<28} {e.cpu_time_total / 1e3:8.3f} ms x{e.count}  "
              f"{e.input_shapes[0]} x {e.input_shapes[1]}")
    onnx = os.path.join(args.graphs_dir, spec.name + ".onnx")
    kinds, kernels = perfpred_kinds(args.perfpred, args.device, onnx, args.batch)
    print(f"perfpred --device {args.device} --layer-sum-only: {sum(kinds.values()):.2f} ms")
    for kind, ms in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:<12} {ms:9.3f} ms  x{sum(1 for k in kernels if k['kind'] == kind)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
