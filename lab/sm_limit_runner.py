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
  models   torchvision models, random weights, 224 x 224, with library defaults, fp32 and/or
           fp16 (`.half()`), timed as runners/stack_runner.py times them (back-to-back rounds,
           median of 5). Mode `eager` calls the model; mode `graph` captures one forward as a
           CUDA graph on the SMs' stream and replays it, so the host issues one launch per call
           and the row times the kernels alone (what a runtime without per-op dispatch, such
           as TensorRT or CUDA Graphs, leaves of a MIG slice's time).
Read-only on the GPU: no MIG, clock or power change. Writes one CSV (atomic).

  python3 lab/sm_limit_runner.py -o sm-limit.csv --sms 8,16,32,64,128 --budget-s 120
  python3 lab/sm_limit_runner.py -o sm-graph.csv --modes graph --precision fp32,fp16
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runners"))
from timing import write_csv_atomic  # noqa: E402
import stack_runner  # noqa: E402

HEADER = ["sm_requested", "sm_count", "kind", "model", "mode", "precision", "batch_size",
          "latency_ms",
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


def graphed(torch, m, x):
    """m(x) captured once as a CUDA graph; returns a callable that replays it. Captured on the
    current stream inside a green context (its kernels then run on that context's SMs), on a
    side stream on the whole GPU (the legacy default stream cannot capture)."""
    cur = torch.cuda.current_stream()
    s = cur if cur != torch.cuda.default_stream() else torch.cuda.Stream()
    s.wait_stream(cur)
    with torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    cur.wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        m(x)
    torch.cuda.synchronize()
    return lambda _x: g.replay()


def probes(torch):
    src = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = _median_time_ms(torch, lambda: dst.copy_(src))
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    mm_ms = _median_time_ms(torch, lambda: a @ b)
    return {"copy_gbs": 2 * (64 << 20) / (copy_ms * 1e-3) / 1e9,
            "matmul_fp32_tflops": 2 * 4096 ** 3 / (mm_ms * 1e-3) / 1e12}


def one_row(torch, a, proto, dev, row0, m, x, name, mode, pr, b, t_end):
    """One model, mode, precision and batch on the SMs of the block around it."""
    row = dict(row0, kind="model", model=name, mode=mode, precision=pr, batch_size=b)
    if time.time() > t_end:
        row["status"] = "skipped: time"
        return row
    fn = None
    try:
        fn = graphed(torch, m, x) if mode == "graph" else m
        r = stack_runner.measure(torch, fn, x, dev, None, proto, 0)
        row.update(latency_ms=r["latency"] * 1e3, latency_spread=r["latency_spread"],
                   calls_per_round=r["calls_per_round"], event_ms=r["event_ms"], status="ok")
    except Exception as e:  # noqa: BLE001 (a failed capture, OOM: the row says which)
        row["status"] = f"error: {str(e).splitlines()[0][:120]}"
    finally:
        del fn
    print(f"sm {row['sm_count']:4d} {name:16s} {mode:5s} {pr} b{b:<3d} "
          f"{row.get('latency_ms', 0):9.3f} ms {row['status']}", file=sys.stderr, flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--out", required=True)
    p.add_argument("--sms", default="8,16,32,64,128", help="SM counts besides the full GPU")
    p.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b0,vit_b_32,vgg16")
    p.add_argument("--batch", default="1,8,64")
    p.add_argument("--modes", default="eager", help="eager, graph or both")
    p.add_argument("--precision", default="fp32", help="fp32, fp16 or both")
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
    precs = {"fp32": torch.float32, "fp16": torch.float16}
    precs = {k: precs[k] for k in a.precision.split(",")}
    modes = a.modes.split(",")
    models = {}
    for name in a.models.split(","):
        for pr, dt in precs.items():
            torch.manual_seed(0)
            with torch.device(dev):
                m = getattr(torchvision.models, name)(weights=None)
            models[(name, pr)] = m.eval().requires_grad_(False).to(dt)
    batches = [int(b) for b in a.batch.split(",")]
    inputs = {(b, pr): torch.randn(b, 3, 224, 224, device=dev, dtype=dt)
              for b in batches for pr, dt in precs.items()}
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
            for mode in modes:
                for (name, pr), m in models.items():
                    for b in batches:
                        rows.append(one_row(torch, a, proto, dev, dict(row0, sm_count=sm), m,
                                            inputs[(b, pr)], name, mode, pr, b, t_end))
        write_csv_atomic(a.out, HEADER, rows)
    write_csv_atomic(a.out, HEADER, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
