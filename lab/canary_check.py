#!/usr/bin/python3
"""canary_check.py: on a shared machine, does a fixed reference workload (runners' timing.Canary)
slow down together with a network, so that dividing by it takes the neighbours' load out?

Alternates, for --seconds: the canary (best of 3), then the network's forward (best of --burst
calls), and prints the Pearson correlation of the two series and the network's spread
(IQR / median) as timed and scaled by min(canary) / canary, with the machine, torch and UTC time.

  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 lab/canary_check.py --model randcnn_s1001_i7 --seconds 120

Trains nothing; measures this machine (PyTorch eager, fp32, one thread).
"""

import argparse
import datetime
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runners"))
import timing  # noqa: E402


def pearson(xs, ys):
    """Pearson's r of two equally long series (0 where either is constant)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sx = sum((x - mx) ** 2 for x in xs) ** 0.5
    sy = sum((y - my) ** 2 for y in ys) ** 0.5
    return sxy / (sx * sy) if sx > 0 and sy > 0 else 0.0


def spread(values):
    """IQR / median, quantiles as runners/timing.py takes them."""
    return (timing.quantile(values, 0.75) - timing.quantile(values, 0.25)) / timing.median(values)


def scaled(canary, net):
    """Each network time times min(canary) / its canary."""
    ref = min(canary)
    return [n * ref / c for c, n in zip(canary, net)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="randcnn_s1001_i7", help="a random_arch.py name")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--burst", type=int, default=2)
    a = ap.parse_args(argv)
    import layer_runner
    import random_arch
    torch = layer_runner.setup_torch(1, "cpu")
    model = random_arch.build(a.model).eval()
    shape = random_arch.input_shape(random_arch.config_for(a.model))
    x = torch.randn(a.batch, *shape[1:])
    canary = timing.Canary(torch)
    cs, ns = [], []
    with torch.inference_mode():
        model(x)
        t_end = time.monotonic() + a.seconds
        while time.monotonic() < t_end:
            cs.append(canary())
            best = float("inf")
            for _ in range(a.burst):
                t0 = time.perf_counter_ns()
                model(x)
                best = min(best, time.perf_counter_ns() - t0)
            ns.append(float(best))
    utc = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    print(f"# canary_check: {a.model} batch {a.batch}, {a.seconds:.0f} s, "
          f"{layer_runner.machine_description(torch, 'cpu')}, torch {torch.__version__}, {utc}")
    print(f"pairs {len(cs)}; canary ms min {min(cs) / 1e6:.3f} median "
          f"{timing.median(cs) / 1e6:.3f} max {max(cs) / 1e6:.3f}; network ms min "
          f"{min(ns) / 1e6:.2f} median {timing.median(ns) / 1e6:.2f} max {max(ns) / 1e6:.2f}")
    print(f"pearson r {pearson(cs, ns):.2f}; network IQR/median as timed {100 * spread(ns):.1f} %, "
          f"scaled by the canary {100 * spread(scaled(cs, ns)):.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
