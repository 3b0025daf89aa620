#!/usr/bin/python3
"""network_faults_check.py: do whole networks, run as runners/network_runner.py runs them (one
process, every configuration of a network CSV visited in turn over 5 rounds of 2 forwards), fault
pages in on every forward pass, as a layer timed alone under glibc's default malloc does? Prints,
per row, the row's measured latency, the fastest forward here and the minor page faults a forward
(median and minimum over the 10). Run it with glibc's defaults and with the layer runner's kept
heap (`--malloc kept`: timing.keep_heap) and compare. It trains nothing.

  /usr/bin/python3 lab/network_faults_check.py data/epyc-zen4-kvm-2vcpu/judge.csv
  /usr/bin/python3 lab/network_faults_check.py data/epyc-zen4-kvm-2vcpu/judge.csv --malloc kept
"""
import argparse
import csv
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("networks", help="a network CSV (docs/measurements.md) of this machine")
    ap.add_argument("--malloc", choices=("default", "kept"), default="default")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    sys.path.insert(0, os.path.join(ROOT, "runners"))
    import timing
    note = timing.keep_heap() if args.malloc == "kept" else "default"
    import torch
    import models as model_specs
    import network_runner
    torch.set_num_threads(1)
    base = os.path.dirname(os.path.abspath(args.networks))
    nets = []
    with open(args.networks, newline="") as f:
        for row in csv.DictReader(f):
            path = os.path.normpath(os.path.join(base, row["model"]))
            spec = model_specs.spec_for_name(os.path.basename(path)[:-5], os.path.dirname(path))
            m, _ = network_runner.prepared_model(torch, spec, True)
            b = int(row["batch"])
            nets.append((spec.name, b, m, spec.make_input(torch, b, seed=b),
                         float(row["latency_ms"])))
    best, faults = {}, {}
    with torch.inference_mode():
        for _ in range(args.rounds):
            for name, b, m, x, _ in nets:
                for _ in range(2):
                    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    t0 = time.perf_counter()
                    m(x)
                    t = (time.perf_counter() - t0) * 1e3
                    f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    best[name, b] = min(best.get((name, b), float("inf")), t)
                    faults.setdefault((name, b), []).append(f1 - f0)
    print(f"# /usr/bin/python3 lab/network_faults_check.py {args.networks} --malloc {args.malloc}")
    print(f"torch {torch.__version__}, 1 thread, malloc={note}, {args.rounds} rounds x 2 forwards, "
          f"utc {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print(f"{'model':<24} {'batch':>5} {'row ms':>9} {'best ms':>9} {'faults median':>14} "
          f"{'min':>7}")
    for name, b, _, _, measured in nets:
        fl = sorted(faults[name, b])
        print(f"{name:<24} {b:>5} {measured:>9.2f} {best[name, b]:>9.2f} {fl[len(fl) // 2]:>14} "
              f"{fl[0]:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
