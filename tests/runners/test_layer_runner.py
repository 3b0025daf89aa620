"""test_layer_runner.py: runners/layer_runner.py end to end on three small real layers (CPU, one
thread): the CSV it writes, resuming after an interruption, the atomic final write, plan errors."""

import contextlib
import csv
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

import _common  # noqa: F401 - puts runners/ on sys.path
import layer_runner
import timing
import torch

PLAN_ROWS = [
    {"op_kind": "conv", "op_type": "Conv", "batch": "1", "inputs": "x:1x8x16x16;w:16x8x3x3;w:16",
     "attrs": "kernel_shape:ints=3,3;pads:ints=1,1,1,1"},
    {"op_kind": "linear", "op_type": "Gemm", "batch": "4", "inputs": "x:4x64;w:32x64;w:32",
     "attrs": "transB:i=1"},
    {"op_kind": "elemwise", "op_type": "Relu", "batch": "2", "inputs": "x:2x256", "attrs": ""},
]
FAST = ["--rounds", "2", "--burst", "2", "--warmup-calls", "1", "--warmup-ms", "0",
        "--min-sample-us", "50", "--quiet"]


def write_plan(path, rows, columns=("op_kind", "op_type", "batch", "inputs", "attrs")):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(columns), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in columns})


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.reader(f)
        header = next(rd)
        return header, [dict(zip(header, r)) for r in rd]


class LayerRunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.plan = os.path.join(self.tmp.name, "plan.csv")
        self.out = os.path.join(self.tmp.name, "out.csv")
        write_plan(self.plan, PLAN_ROWS)
        torch.set_num_threads(1)

    def tearDown(self):
        self.tmp.cleanup()

    def run_main(self, *args):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = layer_runner.main([self.plan, "-o", self.out, "--device-name", "test-cpu",
                                    *FAST, *args])
        return rc, err.getvalue()

    def test_real_run_should_write_the_layer_csv(self):
        rc, err = self.run_main()
        self.assertEqual(rc, 0, err)
        header, rows = read_csv(self.out)
        self.assertEqual(header, layer_runner.LAYER_COLUMNS)
        self.assertEqual(len(rows), 3)
        for plan_row, row in zip(PLAN_ROWS, rows):
            for c in ("op_kind", "op_type", "batch", "inputs", "attrs"):
                self.assertEqual(row[c], plan_row[c])
            self.assertEqual(row["device"], "test-cpu")
            self.assertEqual(row["runtime"], "pytorch-eager")
            self.assertEqual(row["precision"], "fp32")
            self.assertIn(torch.__version__, row["runtime_version"])
            self.assertIn("threads 1", row["runtime_version"])
            lat = float(row["latency_ms"])
            self.assertGreater(lat, 0.0)
            self.assertLess(lat, 1000.0)
            self.assertGreaterEqual(float(row["latency_spread_ms"]), 0.0)
            self.assertGreaterEqual(int(row["repetitions"]), 4)  # 2 rounds x 2 samples
            self.assertEqual(row["energy_j"], "")
            self.assertEqual(row["memory_bytes"], "")
            self.assertTrue(row["source"].startswith("runner-pytorch@test-cpu:"), row["source"])
            self.assertIn("machine=", row["source"])
            self.assertNotIn(os.uname().nodename, row["source"])
            self.assertRegex(row["date"], r"^\d{4}-\d{2}-\d{2}$")
            m = re.search(r"min_ms=([0-9.e+-]+); max_ms=([0-9.e+-]+)", row["source"])
            self.assertLessEqual(float(m.group(1)), lat)
            self.assertGreaterEqual(float(m.group(2)), lat)
        # the Conv (8x16x16 -> 16 channels, 3x3) does far more work than a 512-element Relu
        self.assertGreater(float(rows[0]["latency_ms"]), float(rows[2]["latency_ms"]))

    def test_scrub_should_be_on_by_default_on_cpu_and_recorded(self):
        rc, err = self.run_main()
        self.assertEqual(rc, 0, err)
        _, rows = read_csv(self.out)
        want = layer_runner.default_scrub_bytes("cpu")
        self.assertGreaterEqual(want, 8 << 20)
        for row in rows:
            self.assertIn(f"scrub_bytes={want}", row["source"])
            self.assertIn("inner=1;", row["source"])  # one cold call per sample
        self.assertTrue(all("warm_input" not in r["source"] for r in rows))
        rc, err = self.run_main("--warm-input", "--restart")
        self.assertEqual(rc, 0, err)
        _, rows = read_csv(self.out)
        self.assertTrue(all("warm_input=1" in r["source"] for r in rows))
        rc, err = self.run_main("--scrub-mb", "0", "--restart")
        self.assertEqual(rc, 0, err)
        _, rows = read_csv(self.out)
        self.assertTrue(all("scrub_bytes" not in r["source"] for r in rows))
        self.assertEqual(layer_runner.default_scrub_bytes("cuda"), 0)

    def test_canary_should_be_timed_before_every_visit_and_recorded(self):
        rc, err = self.run_main("--scrub-mb", "0", "--canary")
        self.assertEqual(rc, 0, err)
        _, rows = read_csv(self.out)
        for row in rows:
            src = row["source"]
            self.assertIn("canary=scaled", src)
            ref = float(re.search(r"canary_ref_ms=([0-9.e+-]+)", src).group(1))
            self.assertGreater(ref, 0.0)
            self.assertGreater(float(re.search(r"unscaled_ms=([0-9.e+-]+)", src).group(1)), 0.0)
        with open(self.out + ".partial.jsonl", encoding="utf-8") as f:
            recs = [json.loads(x) for x in f]
        visits = [r for r in recs if r.get("type") == "visit"]
        self.assertEqual(len(visits), 3 * 2)
        self.assertTrue(all(r["canary_ns"] > 0 for r in visits))
        # the reference is the canary level of the run's quietest minute: a run of seconds is one
        # minute, whose level is the median of its canaries; written with six significant digits
        # (so it agrees to a relative 1e-5, not to 1e-6 ms)
        ref_ms = float(re.search(r"canary_ref_ms=([0-9.e+-]+)", rows[0]["source"]).group(1))
        median_ms = statistics.median(r["canary_ns"] for r in visits) / 1e6
        self.assertLessEqual(abs(ref_ms - median_ms), 1e-5 * median_ms)
        self.assertTrue(recs[0]["identity"]["protocol"]["canary"])
        rc, err = self.run_main("--scrub-mb", "0", "--restart")
        self.assertEqual(rc, 0, err)
        _, rows = read_csv(self.out)
        self.assertTrue(all("canary" not in r["source"] for r in rows))

    def test_scrub_option_should_be_checked(self):
        self.assertEqual(layer_runner.scrub_bytes_from_arg("1.5", "cpu"), 3 << 19)
        for bad in ("-1", "lots", "nan"):
            with self.assertRaises(ValueError):
                layer_runner.scrub_bytes_from_arg(bad, "cpu")
        rc, err = self.run_main("--scrub-mb", "lots")
        self.assertEqual(rc, layer_runner.EXIT_USAGE)
        self.assertIn("--scrub-mb", err)

    def test_scrub_should_write_its_whole_buffer(self):
        s = layer_runner.make_scrub(torch, 1 << 16)
        self.assertEqual(s.nbytes, 1 << 16)
        s()
        s()
        self.assertTrue(bool((s.buffer == 2.0).all()))  # every element written twice
        read = []

        class Spy:
            def sum(self):
                read.append(1)

        def fn():
            pass
        fn.warm = (Spy(),)
        s(fn)
        self.assertEqual(read, [])  # default: the input stays cold
        w = layer_runner.make_scrub(torch, 1 << 16, warm_input=True)
        w(fn)
        self.assertEqual(read, [1])  # --warm-input: read back after the scrub
        self.assertIsNone(layer_runner.make_scrub(torch, 0))

    def test_rerun_should_resume_and_measure_nothing_again(self):
        rc, _ = self.run_main()
        self.assertEqual(rc, 0)
        with open(self.out + ".partial.jsonl", encoding="utf-8") as f:
            n_lines = len(f.readlines())
        _, rows1 = read_csv(self.out)
        rc, err = self.run_main()
        self.assertEqual(rc, 0)
        self.assertIn("(0 visits this run)", err)
        with open(self.out + ".partial.jsonl", encoding="utf-8") as f:
            self.assertEqual(len(f.readlines()), n_lines)
        _, rows2 = read_csv(self.out)
        self.assertEqual([r["latency_ms"] for r in rows1], [r["latency_ms"] for r in rows2])

    def test_interrupted_run_should_complete_without_duplicates(self):
        rows = layer_runner.read_plan(self.plan)
        proto = timing.Protocol(rounds=2, burst=2, warmup_calls=1, warmup_min_s=0.0,
                                min_sample_us=50.0)
        kw = dict(torch=torch, device_name="test-cpu", protocol=proto, plan_digest="d",
                  quiet=True)
        res, n = layer_runner.measure_rows(rows, self.out, stop_after_visits=2, **kw)
        self.assertEqual(res.visits_this_run, 2)
        self.assertLessEqual(n, 2)
        res, n = layer_runner.measure_rows(rows, self.out, **kw)
        self.assertEqual(res.visits_this_run, 6 - 2)
        self.assertEqual(n, 3)
        with open(self.out + ".partial.jsonl", encoding="utf-8") as f:
            recs = [json.loads(x) for x in f][1:]
        pairs = [(r["key"], r["round"]) for r in recs]
        self.assertEqual(sorted(pairs), sorted(set(pairs)))
        self.assertEqual(len(pairs), 6)
        _, out_rows = read_csv(self.out)
        self.assertEqual([r["op_type"] for r in out_rows], ["Conv", "Gemm", "Relu"])

    def test_sigkill_at_any_moment_should_lose_nothing_and_resume(self):
        # the runner as a process, killed with SIGKILL at moments spread over a whole run: the
        # CSV is never partial, the partial file stays readable, and a rerun completes with every
        # (row, round) timed once
        slow = ["--rounds", "4", "--burst", "2", "--warmup-calls", "1", "--warmup-ms", "0",
                "--min-sample-us", "40000", "--quiet"]
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")

        def cmd(out):
            return [sys.executable, layer_runner.__file__, self.plan, "-o", out,
                    "--device-name", "test-cpu", *slow]
        t0 = time.monotonic()
        subprocess.run(cmd(os.path.join(self.tmp.name, "whole.csv")), check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        whole = time.monotonic() - t0
        partial = self.out + ".partial.jsonl"
        killed = 0
        for k in range(4):
            p = subprocess.Popen(cmd(self.out), env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            time.sleep(whole * (k + 0.5) / 4)
            p.kill()
            killed += p.wait() == -9
            if os.path.exists(self.out):
                self.assertEqual(len(read_csv(self.out)[1]), len(PLAN_ROWS))
            if os.path.exists(partial):
                timing.PartialStore.read(partial)
        self.assertGreater(killed, 0)
        subprocess.run(cmd(self.out), check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        _, rows = read_csv(self.out)
        self.assertEqual([r["op_type"] for r in rows], ["Conv", "Gemm", "Relu"])
        with open(partial, encoding="utf-8") as f:
            recs = [json.loads(x) for x in f][1:]
        pairs = [(r["key"], r["round"]) for r in recs if r["type"] == "visit"]
        self.assertEqual(sorted(pairs), sorted(set(pairs)))
        self.assertEqual(len(pairs), 4 * len(PLAN_ROWS))

    def test_different_options_should_not_mix_with_a_partial_file(self):
        self.assertEqual(self.run_main()[0], 0)
        rc, err = self.run_main("--threads", "2")
        self.assertEqual(rc, layer_runner.EXIT_USAGE)
        self.assertIn("different plan or protocol", err)

    def test_failed_final_write_should_leave_no_csv(self):
        real_replace = os.replace

        def failing_replace(src, dst):
            if dst == self.out:
                raise OSError("disk full")
            return real_replace(src, dst)
        with mock.patch.object(timing.os, "replace", failing_replace):
            with self.assertRaises(OSError):
                self.run_main()
        self.assertFalse(os.path.exists(self.out))
        self.assertEqual([n for n in os.listdir(self.tmp.name) if ".tmp." in n], [])
        # the measurements survive in the partial file: the rerun only writes
        rc, err = self.run_main()
        self.assertEqual(rc, 0)
        self.assertIn("(0 visits this run)", err)
        self.assertEqual(len(read_csv(self.out)[1]), 3)

    def test_budget_should_stop_and_report(self):
        rc, err = self.run_main("--budget-min", "0")
        self.assertEqual(rc, layer_runner.EXIT_BUDGET)
        header, rows = read_csv(self.out)
        self.assertEqual(header, layer_runner.LAYER_COLUMNS)
        self.assertEqual(rows, [])

    def test_bad_rows_should_be_reported_not_measured(self):
        write_plan(self.plan, PLAN_ROWS + [{"op_kind": "elemwise", "op_type": "Frobnicate",
                                            "batch": "1", "inputs": "x:4", "attrs": ""}])
        rc, err = self.run_main()
        self.assertEqual(rc, layer_runner.EXIT_ROW_ERRORS)
        self.assertEqual(len(read_csv(self.out)[1]), 3)
        _, errs = read_csv(self.out + ".errors.csv")
        self.assertEqual(errs[0]["line"], "5")
        self.assertIn("Frobnicate", errs[0]["error"])

    def test_malformed_plan_should_name_the_line(self):
        write_plan(self.plan, [PLAN_ROWS[0], dict(PLAN_ROWS[1], inputs="x:4xx64")])
        rc, err = self.run_main()
        self.assertEqual(rc, layer_runner.EXIT_USAGE)
        self.assertIn("plan.csv:3", err)
        write_plan(self.plan, [dict(PLAN_ROWS[0], op_kind="dwconv")])
        rc, err = self.run_main()
        self.assertEqual(rc, layer_runner.EXIT_USAGE)
        self.assertIn("would classify", err)

    def test_plan_without_kind_and_batch_should_derive_them(self):
        write_plan(self.plan, PLAN_ROWS[1:2], columns=("op_type", "inputs", "attrs"))
        rows = layer_runner.read_plan(self.plan)
        self.assertEqual((rows[0].kind, rows[0].batch), ("linear", 4))


class OtherMachineTest(unittest.TestCase):
    """A device calibrated from rows of one machine: measuring it under the same name on another
    machine is warned about before the run; the same machine, or no calibration, is not."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = os.path.join(self.tmp.name, "artifacts", "box")
        os.makedirs(d)
        with open(os.path.join(d, "manifest.json"), "w", encoding="utf-8") as f:
            json.dump({"device": "box", "sources": [
                {"path": "data/box/layers.csv", "gpu": "Intel(R) Xeon(R) Processor (2 logical CPUs, "
                 "x86_64)", "role": "train"},
                {"path": "data/box/layers.csv", "gpu": "Intel(R) Xeon(R) Processor (2 logical CPUs, "
                 "x86_64)", "role": "test"}]}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def warned(self, device, machine):
        out = io.StringIO()
        w = layer_runner.warn_if_other_machine("layer_runner", device, machine, self.tmp.name, out)
        self.assertEqual(w, bool(out.getvalue()))
        return out.getvalue()

    def test_another_machine_should_be_warned_about(self):
        msg = self.warned("box", "AMD EPYC (2 logical CPUs, x86_64)")
        self.assertIn("box is calibrated from rows measured on Intel(R) Xeon(R) Processor", msg)
        self.assertIn("this machine is AMD EPYC (2 logical CPUs, x86_64)", msg)

    def test_the_same_machine_or_no_calibration_should_pass_quietly(self):
        self.assertEqual(self.warned("box", "Intel(R) Xeon(R) Processor (2 logical CPUs, x86_64)"), "")
        self.assertEqual(self.warned("other-box", "AMD EPYC (2 logical CPUs, x86_64)"), "")
        self.assertEqual(layer_runner.calibrated_machines("other-box", self.tmp.name), set())

    def test_the_committed_calibrations_should_name_their_machines(self):
        self.assertEqual(layer_runner.calibrated_machines("host-cpu"),
                         {"Intel(R) Xeon(R) Processor (2 logical CPUs, x86_64)"})
        self.assertEqual(layer_runner.calibrated_machines("epyc-kvm-2vcpu"),
                         {"AMD EPYC (2 logical CPUs, x86_64)"})


if __name__ == "__main__":
    unittest.main()
