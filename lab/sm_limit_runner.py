#!/usr/bin/env python3
"""sm_limit_runner.py: does a whole model on fewer SMs slow down by waves, or by the SM ratio?

The question behind perfpred's MIG scaling (docs/gpu-stacks.md, "Waves"): a MIG slice or a
small GPU has fewer SMs, and a kernel of B blocks takes ceil(B / (SMs x resident)) waves, so a
batch-1 kernel that fits one wave on 16 SMs should run about as fast as on 132. A CUDA green
context (PyTorch's torch.cuda.green_contexts, CUDA 12.4+) runs a stream's kernels on a chosen
number of SMs of the same GPU, its memory system whole. Timing the same models under several SM
counts isolates the SM side of a MIG slice (the slice's memory share is not reproduced: each
row also records the copy bandwidth those SMs reach, and a matrix product's rate).

Per SM count (the full GPU first, without a green context):
  probes   a 64 MiB device-to-device copy (GB/s, bytes read + written) and a 4096^3 fp32 matmul
           (TFLOP/s; library defaults), each the median of 5 timed calls after 2 warm-ups;
  models   torchvision models, random weights, 224 x 224, eager fp32 with library defaults,
           timed as runners/stack_runner.py times them (back-to-back rounds, median of 5).
Read-only on the GPU: no MIG, clock or power change. Writes one CSV (atomic).

  python3 lab/sm_limit_runner.py -o sm-limit.csv --sms 8,16,32,64,128 --budget-s 120
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runners"))
from timing import write_csv_atomic  # noqa: E402
import stack_runner  # noqa: E402

HEADER = ["sm_requested", "sm_count", "kind", "model", "batch_size", "latency_ms",
          "latency_spread", "calls_per_round", "event_ms", "probe_value", "probe_unit",
          "device", "torch", "date", "status"]


class _Green:
    """Runs a block on a green context of n SMs (None: the whole GPU)."""

    def __init__(self, torch, n):
        self.torch, self.ctx, self.stream = torch, None, None
        if n is None:
            return
        from torch.cuda.green_contexts import GreenContext
        self.ctx = GreenContext.create(n, 0)
        if hasattr(self.ctx, "Stream"):
            self.stream = self.ctx.Stream()

    def __enter__(self):
        if self.stream is not None:
            self._s = self.torch.cuda.stream(self.stream)
            self._s.__enter__()
        elif self.ctx is not None:
            self.ctx.set_context()
        return self

    def __exit__(self, *exc):
        self.torch.cuda.synchronize()
        if self.stream is not None:
            self._s.__exit__(*exc)
        elif self.ctx is not None:
            self.ctx.pop_context()
        return False


def _median_time_ms(torch, f, n=5):
    for _ in range(2):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def probes(torch):
    src = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = _median_time_ms(torch, lambda: dst.copy_(src))
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    mm_ms = _median_time_ms(torch, lambda: a @ b)
    return {"copy_gbs": 2 * (64 << 20) / (copy_ms * 1e-3) / 1e9,
            "matmul_fp32_tflops": 2 * 4096 ** 3 / (mm_ms * 1e-3) / 1e12}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--sms", default="8,16,32,64,128", help="SM counts besides the full GPU")
    p.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b0,vit_b_32,vgg16")
    p.add_argument("--batch", default="1,8,64")
    p.add_argument("--device-name", default="h200-sxm-141gb")
    p.add_argument("--budget-s", type=float, default=120)
    a = p.parse_args(argv)
    import torch
    import torchvision
    t_end = time.time() + a.budget_s
    # the protocol of stack_runner's defaults
    proto = argparse.Namespace(rounds=5, round_s=0.04, min_calls=3, max_calls=100,
                               warmup_calls=3, warmup_s=0.1, event_calls=5)
    dev = torch.device("cuda")
    full = torch.cuda.get_device_properties(0).multi_processor_count
    date = time.strftime("%Y-%m-%d", time.gmtime())
    base = {"device": a.device_name, "torch": torch.__version__, "date": date}
    rows = []
    models = {}
    for name in a.models.split(","):
        with torch.device(dev):
            m = getattr(torchvision.models, name)(weights=None)
        models[name] = m.eval().requires_grad_(False)
    batches = [int(b) for b in a.batch.split(",")]
    inputs = {b: torch.randn(b, 3, 224, 224, device=dev) for b in batches}
    for req in [None] + [int(s) for s in a.sms.split(",")]:
        row0 = dict(base, sm_requested=req or full)
        try:
            green = _Green(torch, req)
        except Exception as e:  # noqa: BLE001 (no green contexts in this build or driver)
            rows.append(dict(row0, kind="probe", status=f"error: {str(e).splitlines()[0][:120]}"))
            write_csv_atomic(a.out, HEADER, rows)
            continue
        with green:
            sm = req or full
            for k, v in probes(torch).items():
                rows.append(dict(row0, sm_count=sm, kind="probe", model=k, probe_value=v,
                                 probe_unit=k.split("_")[-1], status="ok"))
            for name, m in models.items():
                for b in batches:
                    row = dict(row0, sm_count=sm, kind="model", model=name, batch_size=b)
                    if time.time() > t_end:
                        row["status"] = "skipped: time"
                    else:
                        try:
                            r = stack_runner.measure(torch, m, inputs[b], dev, None, proto, 0)
                            row.update(latency_ms=r["latency"] * 1e3,
                                       latency_spread=r["latency_spread"],
                                       calls_per_round=r["calls_per_round"],
                                       event_ms=r["event_ms"], status="ok")
                        except Exception as e:  # noqa: BLE001
                            row["status"] = f"error: {str(e).splitlines()[0][:120]}"
                    rows.append(row)
                    print(f"sm {sm:4d} {name:16s} b{b:<3d} {row.get('latency_ms', 0):9.3f} ms "
                          f"{row['status']}", file=sys.stderr, flush=True)
        write_csv_atomic(a.out, HEADER, rows)
    write_csv_atomic(a.out, HEADER, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
