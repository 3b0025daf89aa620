#!/usr/bin/python3
"""The framework's own figures of a CPU descriptor, measured on the machine itself, as JSON.

- launch_overhead_us: PyTorch's cost per op where the op does no work: the best of 5 loops of
  20,000 calls of torch.add and torch.relu on 1-element tensors, the mean of the two ops;
- conv_call_us: what one call of a convolution that PyTorch hands oneDNN costs however small (its
  primitive set-up and reorders): the best of 5 loops of 2,000 calls of a 3x3 depthwise Conv2d
  over 1x8x4x4, 28 us on a Zen 4 guest where an element-wise op costs 1 (docs/calibration.md);
- runtime_memory_mb: peak resident set of this process after `import torch` and one small
  Conv2d forward (what the runtime holds before a model's own tensors);
- torch.mm fp32 GFLOP/s on one thread and a torch triad's GB/s on every thread: the compute and
  bandwidth figures of a board where perfpred's own C micro-benchmarks (run/probe.c) cannot run
  (`perfpred calibrate run --plan-only` bundles).

Used by `perfpred calibrate run` (locally) and by the bundle's run.sh (on a remote board).

    /usr/bin/python3 runners/host_probe.py -o figures.json [--threads 1] [--quick]
"""
import argparse
import datetime
import json
import os
import resource
import sys
import time


def best_per_call_us(fn, calls, loops):
    best = float("inf")
    for _ in range(loops):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def launch_overhead(torch, calls, loops):
    a = torch.ones(1)
    b = torch.ones(1)
    add = best_per_call_us(lambda: torch.add(a, b), calls, loops)
    relu = best_per_call_us(lambda: torch.relu(a), calls, loops)
    return add, relu


def conv_call(torch, calls, loops):
    """A 3x3 depthwise convolution over 1x8x4x4 with a bias: eager PyTorch runs it through
    oneDNN (groups > 1), and it has next to no arithmetic"""
    conv = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8).eval()
    x = torch.randn(1, 8, 4, 4)
    with torch.no_grad():
        conv(x)
        return best_per_call_us(lambda: conv(x), calls, loops)


def mm_gflops(torch, n, loops):
    a = torch.randn(n, n)
    b = torch.randn(n, n)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(loops):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best * 1e-9


def triad_gbs(torch, mib, loops):
    n = int(mib * 1048576 / 4)
    a = torch.zeros(n)
    b = torch.ones(n)
    c = torch.full((n,), 2.0)
    best = float("inf")
    for _ in range(loops):
        t0 = time.perf_counter()
        torch.add(b, c, alpha=0.5, out=a)
        best = min(best, time.perf_counter() - t0)
    return 3.0 * n * 4 / best * 1e-9


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True, help="JSON file to write")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads for the per-op figures (the runners' --threads)")
    ap.add_argument("--quick", action="store_true", help="fewer calls (tests)")
    args = ap.parse_args(argv)
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    # Debian's torch runs torch.mm through OpenBLAS, whose thread pool (one thread per core) does
    # not follow torch.set_num_threads: the one-thread GEMM figure needs it capped before the
    # library loads (without this a 2-vCPU Zen 4 guest gave 209 GFLOP/s "on one thread", its
    # FMA peak being 117 a core; layer_runner.py caps it the same way)
    if "torch" not in sys.modules:
        for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = "1"
    import torch
    torch.set_num_threads(args.threads)
    calls, loops = (2000, 2) if args.quick else (20000, 5)
    conv = torch.nn.Conv2d(3, 16, 3)
    with torch.no_grad():
        conv(torch.randn(1, 3, 32, 32))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux
    add_us, relu_us = launch_overhead(torch, calls, loops)
    conv_us = conv_call(torch, calls // 10, loops)
    torch.set_num_threads(1)
    mm = mm_gflops(torch, 256 if args.quick else 1024, 2 if args.quick else 5)
    torch.set_num_threads(os.cpu_count() or 1)
    triad = triad_gbs(torch, 16 if args.quick else 256, 2 if args.quick else 8)
    out = {
        "torch": torch.__version__,
        "threads": args.threads,
        "utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "launch_overhead_us": (add_us + relu_us) / 2,
        "launch_overhead_src": (f"best of {loops} x {calls} calls of torch.add / torch.relu on "
                                f"1-element tensors, torch {torch.__version__}, {args.threads} "
                                f"thread(s): {add_us:.2f} / {relu_us:.2f} us per op"),
        "conv_call_us": conv_us,
        "conv_call_src": (f"best of {loops} x {calls // 10} calls of a 3x3 depthwise Conv2d over "
                          f"1x8x4x4 (oneDNN), torch {torch.__version__}, {args.threads} "
                          f"thread(s): {conv_us:.1f} us per call"),
        "runtime_memory_mb": rss_mb,
        "runtime_memory_src": "peak resident set of python3 after `import torch` and one Conv2d "
                              f"forward: {rss_mb:.0f} MB",
        "mm_gflops_1thread": mm,
        "mm_blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        "triad_gbs": triad,
        "triad_threads": os.cpu_count() or 1,
    }
    tmp = f"{args.out}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    print(f"host_probe: {out['launch_overhead_src']}; {out['runtime_memory_src']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
