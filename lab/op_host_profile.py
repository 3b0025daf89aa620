#!/usr/bin/env python3
"""op_host_profile.py: what does the host spend per eager op, by kind, inside a whole model?

perfpred's GPU pipeline charges each kernel a host cost by class (conv, 3x3 conv, depthwise,
matmul, other) times the descriptor's `host_dispatch_scale` (docs/gpu-stacks.md). The scale of
current hosts was read off whole-model rows; this profiles the ops themselves. Per model (random
weights, 224 x 224, eager fp32, library defaults) and batch: the back-to-back mean per call
without the profiler, then torch.profiler over --calls calls, and per ATen op its calls, host time
(with children) and GPU kernel time, per call of the model. Read-only on the GPU. One CSV.

  python3 lab/op_host_profile.py -o op-host-profile.csv
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runners"))
from timing import write_csv_atomic  # noqa: E402

HEADER = ["model", "batch_size", "op", "count_per_call", "host_us_per_call",
          "self_host_us_per_call", "gpu_us_per_call", "call_ms", "device", "torch", "date"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b0,vit_b_32,densenet121")
    p.add_argument("--batch", default="1,32")
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--device-name", default="h200-sxm-141gb")
    a = p.parse_args(argv)
    import torch
    import torchvision
    from torch.profiler import profile, ProfilerActivity
    date = time.strftime("%Y-%m-%d", time.gmtime())
    rows = []
    for name in a.models.split(","):
        with torch.device("cuda"):
            m = getattr(torchvision.models, name)(weights=None)
        m.eval().requires_grad_(False)
        for b in [int(x) for x in a.batch.split(",")]:
            x = torch.randn(b, 3, 224, 224, device="cuda")
            for _ in range(5):
                m(x)
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(20):
                m(x)
            torch.cuda.synchronize()
            call_ms = (time.perf_counter() - t) / 20 * 1e3
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(a.calls):
                    m(x)
                torch.cuda.synchronize()
            for ev in prof.key_averages():
                if not ev.key.startswith("aten::") and not ev.key.startswith("cudnn"):
                    continue
                gpu = getattr(ev, "device_time_total", None)
                if gpu is None:
                    gpu = getattr(ev, "cuda_time_total", 0)
                rows.append({"model": name, "batch_size": b, "op": ev.key,
                             "count_per_call": ev.count / a.calls,
                             "host_us_per_call": ev.cpu_time_total / a.calls,
                             "self_host_us_per_call": ev.self_cpu_time_total / a.calls,
                             "gpu_us_per_call": gpu / a.calls, "call_ms": call_ms,
                             "device": a.device_name, "torch": torch.__version__, "date": date})
            print(f"{name} b{b}: {call_ms:.3f} ms/call", file=sys.stderr, flush=True)
            write_csv_atomic(a.out, HEADER, rows)
        del m
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
