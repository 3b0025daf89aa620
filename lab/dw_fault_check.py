#!/usr/bin/python3
"""dw_fault_check.py: how much of a depthwise convolution's time on this CPU is the page faults of
fresh activation buffers. Each shape is timed (best of 5 calls after 3 warm-ups, one thread) with
the minor page faults per call counted (getrusage). Run it twice, with glibc's defaults and with
its mmap and trim thresholds raised, and compare: the difference is what the faults cost.

  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 lab/dw_fault_check.py
  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824 \\
      OPENBLAS_NUM_THREADS=1 /usr/bin/python3 lab/dw_fault_check.py

eager PyTorch hands oneDNN an NCHW tensor; oneDNN reorders it into its blocked layout, convolves and
reorders back, each into a new buffer. glibc serves an allocation above its mmap threshold (128 KiB,
raised after frees up to 32 MiB) with fresh pages, which fault in when first written. Which shapes
pay depends on what the process allocated before, so the order of SHAPES is part of the result.
"""
import os
import resource
import sys
import time

SHAPES = [(8, 960, 24, 24, 3), (8, 256, 56, 56, 3), (8, 128, 56, 56, 7), (1, 1344, 30, 30, 3),
          (8, 1344, 30, 30, 3), (8, 2048, 2, 2, 7)]


def main():
    import torch
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, GLIBC_TUNABLES="
          f"{os.environ.get('GLIBC_TUNABLES', '(unset)')}, utc "
          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print("input (N, C, H, W), kernel: best ms of 5, minor faults a call, MB of one activation")
    for n, c, h, w, k in SHAPES:
        conv = torch.nn.Conv2d(c, c, k, padding=k // 2, groups=c).eval()
        x = torch.randn(n, c, h, w)
        with torch.inference_mode():
            for _ in range(3):
                conv(x)
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                conv(x)
                best = min(best, time.perf_counter() - t0)
            f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        print(f"  {(n, c, h, w)} k{k}: {best * 1e3:8.2f} ms, {(f1 - f0) / 5:7.0f} faults, "
              f"{n * c * h * w * 4 / 1e6:6.1f} MB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
