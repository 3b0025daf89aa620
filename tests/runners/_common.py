"""_common.py: paths and small fakes shared by the runner tests (tests/runners/test_*.py).

Run from the repository root: /usr/bin/python3 -m unittest discover -s tests/runners
"""

import csv
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNERS = os.path.join(REPO, "runners")
if RUNNERS not in sys.path:
    sys.path.insert(0, RUNNERS)


def read_csv(path):
    """(header, rows as dicts) of a CSV the runners wrote."""
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.DictReader(f)
        return rd.fieldnames, list(rd)


class FakeClock:
    """A monotonic clock (seconds) that only moves when told to."""

    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t

    def advance(self, dt):
        self.t += dt


class ScriptedTimer:
    """timer.sample(fn, inner) returning scripted per-sample durations (ns) per configuration.

    durations[key] is a list consumed in order; fn carries its key as fn.key. Each sample also
    calls fn `inner` times (as a real timer does) and advances the fake clock by the duration."""

    def __init__(self, durations, clock=None):
        self.durations = {k: list(v) for k, v in durations.items()}
        self.clock = clock
        self.sampled = []  # (key, duration) in order

    def sample(self, fn, inner):
        for _ in range(inner):
            fn()
        d = self.durations[fn.key].pop(0)
        self.sampled.append((fn.key, d))
        if self.clock is not None:
            self.clock.advance(d / 1e9)
        return d
