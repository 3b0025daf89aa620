"""tools/resummarize_layers.py and timing.summarize(first=K): a layer CSV summarized again from the
samples its partial file kept, checked against medians and minima worked out by hand."""

import csv
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from io import StringIO

from _common import REPO

import layer_runner
import timing

sys.path.insert(0, os.path.join(REPO, "tools"))
import resummarize_layers as rs  # noqa: E402

# three rounds of a burst of 4 (ns): round minima over all 4 are 70, 60, 90 (median 70); over the
# first 2 they are 100, 80, 95 (median 95); the first samples alone 100, 80, 120 (median 100)
ROUNDS = [[100, 120, 70, 90], [80, 85, 60, 75], [120, 95, 90, 100]]


class SummarizeFirstTest(unittest.TestCase):
    def test_first_k_samples_of_each_round_decide_every_statistic(self):
        full = timing.summarize(ROUNDS)
        self.assertEqual(full.median_ns, 70)
        self.assertEqual(timing.summarize(ROUNDS, first=0), full)
        two = timing.summarize(ROUNDS, first=2)
        self.assertEqual(two.median_ns, 95)
        self.assertEqual(two.min_ns, 80)
        self.assertEqual(two.max_ns, 120)
        self.assertEqual(two.reps, 6)
        self.assertEqual(timing.summarize(ROUNDS, first=1).median_ns, 100)
        self.assertEqual(timing.summarize(ROUNDS, first=9), full)
        with self.assertRaises(ValueError):
            timing.summarize(ROUNDS, first=-1)

    def test_stat_name_says_when_fewer_samples_than_the_burst_count(self):
        p = timing.Protocol(burst=5)
        self.assertEqual(layer_runner.stat_name(p, 0), "median-of-round-minima")
        self.assertEqual(layer_runner.stat_name(p, 5), "median-of-round-minima")
        self.assertEqual(layer_runner.stat_name(p, 2), "median-of-round-minima-of-first-2")


def write_run(d, rows_lines, visits_of):
    """A layer CSV with one row per plan line and its partial file (burst 4)."""
    csv_path = os.path.join(d, "layers.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(layer_runner.LAYER_COLUMNS)
        for line in rows_lines:
            src = (f"runner-pytorch@dev:layer_runner/plan.csv:{line}; machine=m; utc=u; "
                   "stat=median-of-round-minima; spread=iqr-of-round-medians; rounds=3; burst=4; "
                   "inner=1; min_ms=0; max_ms=0; mean_ms=0; iqr_all_ms=0; scrub_bytes=8")
            w.writerow(["dev", "pytorch-eager", "torch", "fp32", "elemwise", "Relu", 1,
                        "x:1x8", "", "0.00007", "0", 12, "", "", src, "2026-11-24"])
    with open(csv_path + ".partial.jsonl", "w") as f:
        f.write(json.dumps({"type": "header", "identity": {"protocol": {"burst": 4}}}) + "\n")
        for line in visits_of:
            for r, s in enumerate(ROUNDS):
                f.write(json.dumps({"type": "visit", "key": f"L{line}", "round": r, "inner": 1,
                                    "samples_ns": s}) + "\n")
    return csv_path


class ToolTest(unittest.TestCase):
    def run_tool(self, *args):
        err = StringIO()
        with redirect_stderr(err):
            rc = rs.main(list(args))
        return rc, err.getvalue()

    def test_rows_are_summarized_again_from_their_visits(self):
        with tempfile.TemporaryDirectory() as d:
            src = write_run(d, [2, 3], [2, 3])
            out = os.path.join(d, "out.csv")
            rc, _ = self.run_tool(src, "--stat-first", "2", "-o", out)
            self.assertEqual(rc, 0)
            with open(out, newline="") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 2)
            self.assertEqual(float(rows[0]["latency_ms"]), 95e-6)
            self.assertEqual(int(rows[0]["repetitions"]), 6)
            s = rows[0]["source"]
            self.assertIn("stat=median-of-round-minima-of-first-2", s)
            self.assertIn("min_ms=8e-05", s)
            self.assertIn("resummarized=first-2-of-partial", s)
            self.assertIn("plan.csv:2;", s)
            self.assertTrue(s.endswith("scrub_bytes=8; resummarized=first-2-of-partial"))
            # the whole burst gives back the runner's own statistic
            rc, _ = self.run_tool(src, "--stat-first", "4", "-o", out)
            with open(out, newline="") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(float(rows[1]["latency_ms"]), 70e-6)
            self.assertIn("stat=median-of-round-minima;", rows[1]["source"])

    def test_only_the_first_rounds_count_with_rounds_first(self):
        with tempfile.TemporaryDirectory() as d:
            src = write_run(d, [2], [2])
            out = os.path.join(d, "out.csv")
            # rounds 0 and 1: minima of their first 2 samples 100 and 80, median 90
            rc, _ = self.run_tool(src, "--stat-first", "2", "--rounds-first", "2", "-o", out)
            self.assertEqual(rc, 0)
            with open(out, newline="") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(float(rows[0]["latency_ms"]), 90e-6)
            self.assertEqual(int(rows[0]["repetitions"]), 4)
            self.assertIn("resummarized=first-2-of-partial-rounds-2", rows[0]["source"])
            # their whole bursts: minima 70 and 60, median 65
            rc, _ = self.run_tool(src, "--stat-first", "4", "--rounds-first", "2", "-o", out)
            with open(out, newline="") as f:
                self.assertEqual(float(next(csv.DictReader(f))["latency_ms"]), 65e-6)
            # more rounds than were timed: all three, as without the option
            rc, _ = self.run_tool(src, "--stat-first", "2", "--rounds-first", "9", "-o", out)
            with open(out, newline="") as f:
                self.assertEqual(float(next(csv.DictReader(f))["latency_ms"]), 95e-6)
            rc, _ = self.run_tool(src, "--stat-first", "2", "--rounds-first", "-1", "-o", out)
            self.assertEqual(rc, 2)

    def test_a_row_without_visits_is_an_error_naming_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            src = write_run(d, [2, 3], [2])
            out = os.path.join(d, "out.csv")
            rc, err = self.run_tool(src, "--stat-first", "2", "-o", out)
            self.assertEqual(rc, 1)
            self.assertIn("layers.csv:3: no visits of plan line 3", err)
            self.assertFalse(os.path.exists(out))
            rc, err = self.run_tool(src, "--stat-first", "0", "-o", out)
            self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()
