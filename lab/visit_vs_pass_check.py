#!/usr/bin/python3
"""visit_vs_pass_check.py: does a layer cost the same when timed the layer runner's way (a visit:
one untimed call, then K timed calls of the same layer) as when it runs once among other layers
(a pass over all of them, as inside a forward pass)? A cache scrub precedes every timed call in
both, so caches are cold either way; what differs is what ran just before.

For each of a fixed set of convolutions and ReLUs (shapes of ResNet/MobileNet stages), R rounds of:
a visit per layer (K samples), then K passes over all layers. Prints per layer the median of
each visit sample position 1..K, the median of the pass calls, pass / first visit sample, and the
minor page faults per call in each mode (getrusage), with the machine, torch and UTC time.

  /usr/bin/python3 lab/visit_vs_pass_check.py --scrub-mb 24 --rounds 15

Trains nothing; measures this machine (PyTorch eager, fp32, one thread by default).
"""

import argparse
import datetime
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runners"))
import timing  # noqa: E402

# (kind, channels, height, kernel): outputs of 0.1 to 1.6 MB, fp32, batch 1
LAYERS = [("conv", 64, 56, 3), ("conv", 128, 28, 3), ("conv", 256, 14, 1), ("conv", 96, 28, 1),
          ("conv", 32, 112, 3), ("relu", 64, 56, 0), ("relu", 128, 28, 0), ("relu", 256, 14, 0),
          ("relu", 96, 28, 0), ("relu", 32, 112, 0)]


def quartiles(v):
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[0], q[2]


def summarize(visit, passes, faults_visit, faults_pass):
    """visit[k]: times (us) of visit sample k over the rounds; passes: times of the pass calls.
    Returns (median per visit position, pass median, pass IQR, pass / first, faults per call)."""
    med = [statistics.median(s) for s in visit]
    p_med = statistics.median(passes)
    lo, hi = quartiles(passes)
    n_v = sum(len(s) for s in visit)
    return (med, p_med, hi - lo, p_med / med[0], faults_visit / max(n_v, 1),
            faults_pass / max(len(passes), 1))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scrub-mb", type=float, default=24, help="MiB written before each call")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--samples", type=int, default=5, help="timed calls per visit, and passes")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    if a.rounds < 2 or a.samples < 1 or a.scrub_mb < 0 or a.threads < 1:
        print("visit_vs_pass_check: --rounds >= 2, --samples >= 1, --scrub-mb >= 0, --threads >= 1",
              file=sys.stderr)
        return 2
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    scrub = torch.empty(max(1, int(a.scrub_mb * (1 << 20)) // 4))
    fns = []
    with torch.inference_mode():
        for kind, c, h, k in LAYERS:
            x = torch.randn(1, c, h, h)
            if kind == "conv":
                conv = torch.nn.Conv2d(c, c, k, padding=k // 2).eval()
                fns.append(lambda conv=conv, x=x: conv(x))
            else:
                fns.append(lambda x=x: torch.relu(x))

        def timed(f):
            scrub.fill_(1.0)
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter_ns()
            f()
            t1 = time.perf_counter_ns()
            return (t1 - t0) / 1e3, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0

        for f in fns:
            for _ in range(3):
                f()
        n = len(fns)
        visit = [[[] for _ in range(a.samples)] for _ in range(n)]
        passes = [[] for _ in range(n)]
        fv, fp = [0] * n, [0] * n
        for _ in range(a.rounds):
            for i, f in enumerate(fns):
                f()
                for s in range(a.samples):
                    t, flt = timed(f)
                    visit[i][s].append(t)
                    fv[i] += flt
            for _ in range(a.samples):
                for i, f in enumerate(fns):
                    t, flt = timed(f)
                    passes[i].append(t)
                    fp[i] += flt
    utc = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"machine {timing.cpu_model()}, torch {torch.__version__}, {a.threads} thread(s), fp32, batch 1, "
          f"scrub {a.scrub_mb:g} MiB before every timed call, {a.rounds} rounds x {a.samples}, "
          f"utc {utc}")
    print(f"{'layer':24} {'visit sample medians (us)':>44} {'pass us':>9} {'IQR':>7} "
          f"{'pass/1st':>8} {'faults/call visit':>17} {'pass':>6}")
    for i, (kind, c, h, k) in enumerate(LAYERS):
        med, p_med, p_iqr, ratio, f_v, f_p = summarize(visit[i], passes[i], fv[i], fp[i])
        name = f"{kind} {c}x{h}x{h}" + (f" k{k}" if kind == "conv" else "")
        print(f"{name:24} {' '.join(f'{m:8.1f}' for m in med):>44} {p_med:9.1f} {p_iqr:7.1f} "
              f"{ratio:8.2f} {f_v:17.1f} {f_p:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
