#!/usr/bin/env python3
"""stack_runner.py: whole torchvision models on one NVIDIA GPU under the runtime stacks that
`perfpred calibrate fit-stacks` models, written in framework-tax-gpus' CSV layout so that the
fit reads the GPU as one more of its own (docs/gpu-stacks.md, "The project's own GPUs").

Stacks, each as PyTorch runs it with library defaults (cuDNN may use TF32 for fp32 convolutions
where the GPU has tensor cores; matrix products stay fp32 unless the defaults say otherwise, and the
run records them):
  eager fp32, eager fp16 (`.half()`), TorchScript fp32 and fp16 (`torch.jit.trace` per batch).

Per (model, stack, batch), in this order:
  memory   the cache emptied and the peak statistics reset, one forward pass, then NVML's used
           memory of the device (`max_memory`, what nvidia-smi shows, as framework-tax read it),
           `torch.cuda.max_memory_allocated` and `max_memory_reserved`;
  warm-up  at least --warmup-calls calls (TorchScript: 2 more for its profiling runs) and 0.1 s;
  latency  --rounds rounds, each one synchronize, k back-to-back calls, one synchronize:
           the round's mean per call; `latency` (seconds) = the median over rounds, the
           statistic framework-tax used (a mean over back-to-back calls, so the host's dispatch of
           call i+1 overlaps the GPU work of call i); the spread = (max - min) / median of rounds;
  events   --event-calls single calls between two CUDA events each, synchronized: their median;
  energy   NVML's energy counter over all latency rounds: mean board power while they ran.

One child process per model (a fresh CUDA context each), models from the cheapest; each child
gets an equal share of the time left, stacks in the order above, batches ascending, so a run cut
short by --budget-s loses the largest TorchScript fp16 configurations first. Read-only on the GPU:
no clocks, power limits or MIG changes. Output: <out>/<date>_pretrained-<stack>/<gpu>.csv (one per
stack, written atomically), <out>/env.json (GPU, driver, host CPU, library versions, host probe).
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import write_csv_atomic, write_text_atomic, utc_now_iso, cpu_model  # noqa: E402

# framework-tax's short names -> torchvision constructors (SOURCE.md), cheapest first
MODELS = [
    ("squeezenet", "squeezenet1_0"), ("shufflenet", "shufflenet_v2_x1_0"),
    ("alexnet", "alexnet"), ("resnet18", "resnet18"), ("mobilenet_v2", "mobilenet_v2"),
    ("mnasnet", "mnasnet1_0"), ("googlenet", "googlenet"), ("vit32", "vit_b_32"),
    ("inception", "inception_v3"), ("resnext50_32x4d", "resnext50_32x4d"),
    ("wide_resnet50_2", "wide_resnet50_2"), ("vgg16", "vgg16"), ("densenet", "densenet161"),
    ("efficientnet", "efficientnet_v2_m"),
]
# (name in the CSV folder, TorchScript?, fp16?)
STACKS = [("fp32", False, False), ("torchscript", True, False), ("fp16", False, True),
          ("torchscript-fp16", True, True)]
HEADER = ["model", "torchvision_name", "batch_size", "input_size", "latency", "max_memory",
          "total_params", "latency_spread", "latency_rounds", "calls_per_round", "event_ms",
          "first_call_ms", "max_allocated", "max_reserved", "nvml_used_idle", "power_w",
          "energy_window_s", "sm_clock_mhz", "device", "runtime", "precision", "date", "status"]


def log(msg):
    print(f"[stack_runner {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _nvml():
    try:
        from nvml import open_nvml, GpuHandle
        backend, why = open_nvml()
        if backend is None:
            raise RuntimeError(why)
        return GpuHandle(backend)
    except Exception as e:  # NVML absent (CPU smoke runs): memory and energy stay empty
        log(f"NVML unavailable: {e}")
        return None


def _build(torch, tv_name, dev):
    import torchvision
    ctor = getattr(torchvision.models, tv_name)
    kw = {"weights": None} if hasattr(torchvision.models, "get_model") else {"pretrained": False}
    if dev.type == "cuda" and hasattr(torch, "device") and hasattr(torch.device, "__enter__"):
        with torch.device(dev):          # initialise on the GPU: seconds faster for large models
            m = ctor(**kw)
    else:
        m = ctor(**kw).to(dev)
    m.eval()
    m.requires_grad_(False)
    return m


def _sync(torch, dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def measure(torch, fn, x, dev, gpu, a, extra_warmup):
    """One configuration: memory, warm-up, back-to-back rounds, CUDA events, energy."""
    r = {}
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        r["nvml_used_idle"] = gpu.memory_used() if gpu else None
    t0 = time.perf_counter()
    fn(x)
    _sync(torch, dev)
    r["first_call_ms"] = (time.perf_counter() - t0) * 1e3
    if cuda:
        r["max_memory"] = gpu.memory_used() if gpu else None
        r["max_allocated"] = torch.cuda.max_memory_allocated()
        r["max_reserved"] = torch.cuda.max_memory_reserved()
    n, t_start, last = 0, time.perf_counter(), None
    while n < a.warmup_calls + extra_warmup or time.perf_counter() - t_start < a.warmup_s:
        t1 = time.perf_counter()
        fn(x)
        _sync(torch, dev)
        last = time.perf_counter() - t1
        n += 1
    k = max(a.min_calls, min(a.max_calls, math.ceil(a.round_s / max(last, 1e-6))))
    e0, te0 = (gpu.energy_mj() if gpu else None), time.perf_counter()
    rounds = []
    for _ in range(a.rounds):
        _sync(torch, dev)
        t1 = time.perf_counter()
        for _ in range(k):
            fn(x)
        _sync(torch, dev)
        rounds.append((time.perf_counter() - t1) / k)
    e1, te1 = (gpu.energy_mj() if gpu else None), time.perf_counter()
    rounds.sort()
    med = rounds[len(rounds) // 2] if len(rounds) % 2 else 0.5 * (
        rounds[len(rounds) // 2 - 1] + rounds[len(rounds) // 2])
    r.update(latency=med, latency_spread=(rounds[-1] - rounds[0]) / med,
             latency_rounds=len(rounds), calls_per_round=k)
    if e0 is not None and e1 is not None and e1 > e0:
        r["power_w"] = (e1 - e0) / 1e3 / (te1 - te0)
        r["energy_window_s"] = te1 - te0
    if cuda:
        ev = []
        for _ in range(a.event_calls):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn(x)
            e.record()
            e.synchronize()
            ev.append(s.elapsed_time(e))
        ev.sort()
        r["event_ms"] = ev[len(ev) // 2]
        r["sm_clock_mhz"] = gpu.sm_clock_mhz() if gpu else None
    return r


def run_one(torch, m, row, b, script, dtype, dev, gpu, a):
    """Measures one configuration into row; returns its status."""
    fn = x = None
    try:
        x = torch.randn(b, 3, a.input_size, a.input_size, device=dev, dtype=dtype)
        fn = torch.jit.trace(m, x, check_trace=False) if script else m
        row.update(measure(torch, fn, x, dev, gpu, a, 2 if script else 0))
        return "ok"
    except Exception as e:  # noqa: BLE001 (OOM, a failed trace: the row says which)
        status = "oom" if "out of memory" in str(e) else f"error: {str(e).splitlines()[0][:120]}"
        log(f"{row['model']} {row['runtime']} {row['precision']} b{b}: {status}")
        return status
    finally:
        del fn, x


def child(a):
    """Measures one model under every stack until the deadline; writes a JSON-lines file."""
    import torch
    deadline = time.time() + a.child_budget_s
    dev = torch.device(a.device)
    gpu = _nvml() if dev.type == "cuda" else None
    short, tv = a.model, dict(MODELS)[a.model]
    m = _build(torch, tv, dev)
    params = sum(p.numel() for p in m.parameters())
    batches = [int(b) for b in a.batch.split(",")]
    stacks = [s for s in STACKS if s[0] in a.stacks.split(",")]
    if dev.type != "cuda":
        stacks = [s for s in stacks if not s[2]]
    rows = []
    date = time.strftime("%Y-%m-%d", time.gmtime())
    for name, script, half in stacks:
        if half and next(m.parameters()).dtype != torch.float16:
            m = m.half()
        dtype = torch.float16 if half else torch.float32
        for b in batches:
            row = {"model": short, "torchvision_name": tv, "batch_size": b,
                   "input_size": a.input_size, "total_params": params, "device": a.device_name,
                   "runtime": "torchscript" if script else "pytorch-eager",
                   "precision": "fp16" if half else "fp32", "date": date, "stack": name}
            if time.time() > deadline:
                row["status"] = "skipped: time"
            else:
                row["status"] = run_one(torch, m, row, b, script, dtype, dev, gpu, a)
            rows.append(row)
            if row["status"] == "ok":
                log(f"{short:16s} {name:17s} b{b:<4d} {row['latency'] * 1e3:9.3f} ms "
                    f"mem {(row.get('max_memory') or 0) / 2**20:8.0f} MiB")
            # after every row: a child stopped at its time limit keeps what it measured
            with open(a.rows_out + ".tmp", "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
            os.replace(a.rows_out + ".tmp", a.rows_out)
    return 0


def host_probe(torch, dev, n=2000):
    """Host time per eager op, back to back on tiny tensors (the GPU idles: the host is the
    bottleneck), for a few op kinds; microseconds."""
    out = {}
    x = torch.randn(1, 8, 8, 8, device=dev)
    w = torch.randn(8, 8, 3, 3, device=dev)
    mat = torch.randn(8, 8, device=dev)
    ops = {"relu": lambda: torch.relu(x), "add": lambda: x + x,
           "conv2d": lambda: torch.nn.functional.conv2d(x, w, padding=1),
           "matmul": lambda: mat @ mat}
    for k, f in ops.items():
        for _ in range(50):
            f()
        _sync(torch, dev)
        t = time.perf_counter()
        for _ in range(n):
            f()
        _sync(torch, dev)
        out[k + "_us"] = (time.perf_counter() - t) / n * 1e6
    return out


def environment(a):
    import torch
    import torchvision
    dev = torch.device(a.device)
    env = {"date_utc": utc_now_iso(), "host_cpu": cpu_model(), "host_cores": os.cpu_count(),
           "python": platform.python_version(), "torch": torch.__version__,
           "torchvision": torchvision.__version__, "device_name": a.device_name,
           "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
           "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
           "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
           "protocol": {k: getattr(a, k) for k in ("rounds", "round_s", "min_calls", "max_calls",
                                                   "warmup_calls", "warmup_s", "event_calls")}}
    for mod in ("torch_tensorrt", "tensorrt"):
        try:
            __import__(mod)
            env[mod] = "installed"
        except Exception:
            env[mod] = "not installed"
    if dev.type == "cuda":
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version()
        p = torch.cuda.get_device_properties(0)
        env["gpu"] = {"name": p.name, "sm_count": p.multi_processor_count,
                      "memory_bytes": p.total_memory}
        gpu = _nvml()
        if gpu:
            env["nvml"] = gpu.describe()
        torch.cuda.init()
        env["host_dispatch_us"] = host_probe(torch, dev)
    else:
        env["host_dispatch_us"] = host_probe(torch, dev, 200)
    return env


def driver(a):
    """Never touches CUDA itself: a context held here would count in every child's NVML reading."""
    t_end = time.time() + a.budget_s
    os.makedirs(a.work, exist_ok=True)
    env_path = os.path.join(a.work, "env.json")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--env-child", "--rows-out",
                    env_path] + a.passthrough, timeout=120, check=True)
    with open(env_path) as f:
        env = json.load(f)
    gpu = _nvml() if a.device == "cuda" else None
    env["nvml_used_without_context"] = gpu.memory_used() if gpu else None
    try:
        env["lscpu"] = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        pass
    write_text_atomic(os.path.join(a.out, "env.json"), json.dumps(env, indent=1) + "\n")
    log(f"env: {env.get('gpu')} torch {env['torch']} host {env['host_cpu']}")
    models = [m for m, _ in MODELS if a.models == "all" or m in a.models.split(",")]
    for i, m in enumerate(models):
        left = t_end - time.time()
        if left < 5:
            log(f"out of time before {m}")
            break
        share = left / (len(models) - i)
        path = os.path.join(a.work, f"{m}.jsonl")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--model", m,
               "--child-budget-s", f"{share:.1f}", "--rows-out", path] + a.passthrough
        try:
            subprocess.run(cmd, timeout=max(10.0, min(share + 30, t_end + 30 - time.time())),
                           check=False)
        except subprocess.TimeoutExpired:
            log(f"{m}: child outlived its share; its finished stacks are kept")
        merge(a, models)
    merge(a, models)
    return 0


def merge(a, models):
    """Every child's rows into one framework-tax-style CSV per stack (atomic writes)."""
    by_stack = {}
    for m in models:
        path = os.path.join(a.work, f"{m}.jsonl")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                by_stack.setdefault(r.pop("stack"), []).append(r)
    stamp = a.stamp or time.strftime("%Y_%m%d", time.gmtime())
    for stack, rows in by_stack.items():
        folder = os.path.join(a.out, f"{stamp}_pretrained-{stack}")
        write_csv_atomic(os.path.join(folder, f"{a.file_stem}.csv"), HEADER, rows)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="output folder (driver)")
    p.add_argument("--work", default="/tmp/stack_runner", help="per-model partial files")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--device-name", default="h100-sxm5-80gb", help="perfpred device name")
    p.add_argument("--file-stem", default="h100", help="CSV file name in each run folder")
    p.add_argument("--models", default="all")
    p.add_argument("--stamp", default="", help="run folder prefix (default: the UTC date)")
    p.add_argument("--stacks", default="fp32,torchscript,fp16,torchscript-fp16")
    p.add_argument("--batch", default="1,2,4,8,16,32,64,128,256")
    p.add_argument("--input-size", type=int, default=224, help="framework-tax ran all at 224")
    p.add_argument("--budget-s", type=float, default=420)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--round-s", type=float, default=0.04, help="target length of one round")
    p.add_argument("--min-calls", type=int, default=3)
    p.add_argument("--max-calls", type=int, default=100)
    p.add_argument("--warmup-calls", type=int, default=3)
    p.add_argument("--warmup-s", type=float, default=0.1)
    p.add_argument("--event-calls", type=int, default=5)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--env-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--child-budget-s", type=float, default=60, help=argparse.SUPPRESS)
    p.add_argument("--rows-out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        return child(a)
    if a.env_child:
        write_text_atomic(a.rows_out, json.dumps(environment(a)))
        return 0
    if not a.out:
        p.error("--out is required")
    a.passthrough = []
    for k in ("device", "device_name", "stacks", "batch", "input_size", "rounds", "round_s",
              "min_calls", "max_calls", "warmup_calls", "warmup_s", "event_calls"):
        a.passthrough += ["--" + k.replace("_", "-"), str(getattr(a, k))]
    return driver(a)


if __name__ == "__main__":
    sys.exit(main())
