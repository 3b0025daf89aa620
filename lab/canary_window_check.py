#!/usr/bin/python3
"""canary_window_check.py: does scaling each visit by its own canary (the runners' rule until
2026-11-29) or by the canary level of the minute around it (timing.Canary since) give the layers'
quiet-machine times, when a neighbour loads the machine and when nothing does? It answers from two
layer-runner journals of the same plan rows, one timed quiet and one timed beside a load; it
trains nothing.

  # on a 2-vCPU guest: the layers on CPU 0, a memory stream on CPU 1, 20 s on and 20 s off
  taskset -c 1 /usr/bin/python3 lab/canary_window_check.py load 400 &
  taskset -c 0 /usr/bin/python3 runners/layer_runner.py PLAN -o busy.csv --device-name DEV \\
      --scrub-mb 0 --canary --rounds 7 --restart
  kill %1
  taskset -c 0 /usr/bin/python3 runners/layer_runner.py PLAN -o quiet.csv --device-name DEV \\
      --scrub-mb 0 --canary --rounds 7 --restart
  /usr/bin/python3 lab/canary_window_check.py compare quiet.csv.partial.jsonl busy.csv.partial.jsonl

Each rule's layer times (median of round minima over the first 2 samples of each visit, as the
layer runner's) are compared with the quiet journal's samples as timed (the truth here): MAPE,
mean log bias, and the median run-to-run spread (IQR of round medians / latency).
"""
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "runners"))
import timing  # noqa: E402


def load(seconds):
    """A memory stream (two 64 MiB arrays added in place), 20 s on and 20 s off."""
    import numpy as np
    a = np.ones(8 << 20)
    b = np.ones_like(a)
    end = time.time() + seconds
    while time.time() < end:
        if int(time.time() // 20) % 2 == 0:
            np.add(a, b, out=a)
        else:
            time.sleep(0.05)


def stats(path, rule, first=2):
    """key -> Stats of a journal under a rule: 'raw' (as timed), 'visit' (each visit's own canary
    over the run's fastest) or a window in seconds (the canary level of the window around it)."""
    store = timing.PartialStore.read(path)
    if rule == "raw":
        levels, ref = {}, 0.0
    elif rule == "visit":
        levels = store.canary
        ref = min(c for per in levels.values() for c in per.values())
    else:
        levels = store.canary_levels(window_s=float(rule))
        ref = timing.PartialStore.canary_reference(levels)
    out = {}
    for key, v in store.visits.items():
        sv = timing.canary_scaled(v, levels.get(key, {}), ref) if ref > 0 else v
        out[key] = timing.summarize([sv[r] for r in sorted(sv)], store.inner.get(key, 1), first)
    return out


def compare(quiet_path, busy_path):
    truth = stats(quiet_path, "raw")
    print(f"# /usr/bin/python3 lab/canary_window_check.py compare {quiet_path} {busy_path}")
    for name, path, rules in (("busy", busy_path, ["raw", "visit", "10", "30", "60", "120"]),
                              ("quiet", quiet_path, ["raw", "visit", "60"])):
        for rule in rules:
            st = stats(path, rule)
            keys = [k for k in st if k in truth]
            err = [abs(st[k].median_ns / truth[k].median_ns - 1) for k in keys]
            bias = [math.log(st[k].median_ns / truth[k].median_ns) for k in keys]
            spread = [st[k].iqr_ns / st[k].median_ns for k in keys]
            label = {"raw": "as timed", "visit": "each visit's canary"}.get(rule, f"{rule} s level")
            print(f"{name:5s} run, {label:20s}: {len(keys)} rows, MAPE {100 * statistics.mean(err):5.1f} %"
                  f" against the quiet run as timed, mean log bias {statistics.mean(bias):+.3f}, "
                  f"spread {100 * statistics.median(spread):5.1f} %")
    return 0


def main(argv):
    if len(argv) == 2 and argv[0] == "load":
        load(float(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
