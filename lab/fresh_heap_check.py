#!/usr/bin/python3
"""fresh_heap_check.py: what does one model called in a loop cost in a fresh process, with glibc's
malloc thresholds as they come and with the heap kept (runners' --malloc kept)? The network runner
times many models interleaved in one process, whose heap other models' buffers hold up; a serving
loop of one model in a new process has no such heap, and glibc gives freed activations back to the
kernel and faults them in again on the next call.

Each model runs in two new processes (python3 this file --child ...), one per malloc setting, built
as the network runner builds it (BatchNorm folded, eval, inference mode, one thread): 3 untimed
calls, then 10 timed; median and min, ms.

  /usr/bin/python3 lab/fresh_heap_check.py randtf_s1001_i6:8 resnet50:2 ...

NAME:BATCH; random architectures (randcnn_*/randtf_*) from tests/fixtures/randarch/s1001, the rest
from tests/fixtures/models.
"""

import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def child(name, batch, malloc):
    sys.path.insert(0, os.path.join(REPO, "runners"))
    import layer_runner
    import models as model_specs
    import network_runner
    import timing
    got = timing.keep_heap() if malloc == "kept" else "default"
    torch = layer_runner.setup_torch(1, "cpu")
    folder = ("randarch/s1001" if name.startswith(("randcnn_", "randtf_")) else "models")
    spec = model_specs.spec_for_name(name, os.path.join(REPO, "tests", "fixtures", folder))
    m, _ = network_runner.prepared_model(torch, spec, fold_bn=True)
    x = spec.make_input(torch, batch, resolution=None)
    ts = []
    with torch.inference_mode():
        for _ in range(3):
            m(x)
        for _ in range(10):
            t = time.perf_counter()
            m(x)
            ts.append((time.perf_counter() - t) * 1e3)
    print(f"{statistics.median(ts):.2f} {min(ts):.2f} {got}")
    return 0


def main(argv):
    if argv[:1] == ["--child"]:
        return child(argv[1], int(argv[2]), argv[3])
    if not argv or any(":" not in a for a in argv):
        print(__doc__, file=sys.stderr)
        return 2
    print(f"{'model':<22} {'batch':>5} | {'glibc default: median / min ms':>32} | "
          f"{'heap kept':>20} | default / kept")
    for a in argv:
        name, batch = a.rsplit(":", 1)
        res = {}
        for malloc in ("default", "kept"):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name,
                                  batch, malloc], capture_output=True, text=True, check=True)
            med, mn, got = out.stdout.split()
            res[malloc] = (float(med), float(mn), got)
        d, k = res["default"], res["kept"]
        print(f"{name:<22} {batch:>5} | {d[0]:>22.1f} / {d[1]:>7.1f} | {k[0]:>10.1f} / {k[1]:>7.1f}"
              f" | {d[0] / k[0]:.2f}x" + ("" if k[2] == "kept" else " (heap not kept: not glibc)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
