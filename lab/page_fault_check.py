#!/usr/bin/python3
"""page_fault_check.py: how much of a forward pass is the allocator's page faults, on this machine.

For each torchvision model named: BatchNorm folded as network_runner.py does, --warmup passes,
then --reps timed passes in a steady loop, each with the process's minor page faults counted
around it (getrusage). Run twice, in child processes: with glibc malloc's defaults, and with
its mmap and trim thresholds raised (MALLOC_MMAP_THRESHOLD_=32 MiB, MALLOC_TRIM_THRESHOLD_=4 GiB,
MALLOC_TOP_PAD_=256 MiB) so that freed activations stay mapped and the next pass touches no fresh
page. Prints, per model and setting, the fastest and median pass and the median faults per pass.
The evidence behind the per-megabyte term of the in-network overhead correction (README,
"epyc-kvm-2vcpu"); it measures, it trains nothing.

  /usr/bin/python3 lab/page_fault_check.py efficientnet_b0 mnasnet0_5 regnet_x_400mf resnet18
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TUNED = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(4 << 30),
         "MALLOC_TOP_PAD_": str(256 << 20)}


def measure(models, warmup, reps, threads):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runners"))
    import layer_runner
    import models as model_specs
    import network_runner
    torch = layer_runner.setup_torch(threads, "cpu")
    out = []
    for name in models:
        spec = model_specs.spec_for_name(name, ".", "torchvision")
        if spec is None:
            raise SystemExit(f"page_fault_check: {name}: not a torchvision model")
        m, _ = network_runner.prepared_model(torch, spec, fold_bn=True)
        x = spec.make_input(torch, 1)
        ts, fs = [], []
        with torch.inference_mode():
            for _ in range(warmup):
                m(x)
            for _ in range(reps):
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                t0 = time.perf_counter()
                m(x)
                ts.append(time.perf_counter() - t0)
                fs.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
        ts.sort()
        fs.sort()
        out.append({"model": name, "min_ms": ts[0] * 1e3, "median_ms": ts[len(ts) // 2] * 1e3,
                    "faults": fs[len(fs) // 2]})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="torchvision model names (batch 1, their own size)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        json.dump(measure(a.models, a.warmup, a.reps, a.threads), sys.stdout)
        return 0
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runners"))
    import timing
    print(f"machine {timing.cpu_model()}, {a.threads} thread(s), batch 1, {a.reps} passes after "
          f"{a.warmup} warm-up, utc {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    rows = {}
    for label, extra in (("glibc defaults", {}), ("thresholds raised", TUNED)):
        env = dict(os.environ, **extra)
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--warmup",
                              str(a.warmup), "--reps", str(a.reps), "--threads", str(a.threads)] +
                             a.models, env=env, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(f"page_fault_check: child failed: {res.stderr.strip()[-500:]}")
        for r in json.loads(res.stdout):
            rows.setdefault(r["model"], {})[label] = r
    print(f"\n{'model':22s} {'setting':18s} {'min ms':>8s} {'median ms':>10s} {'faults/pass':>12s}")
    for name in a.models:
        for label, r in rows[name].items():
            print(f"{name:22s} {label:18s} {r['min_ms']:8.2f} {r['median_ms']:10.2f} "
                  f"{r['faults']:12d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
