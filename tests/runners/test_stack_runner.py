"""test_stack_runner.py: runners/stack_runner.py end to end on its CPU path (one model, one batch,
eager and TorchScript fp32): a run folder per stack named as `perfpred calibrate fit-stacks`
reads them (<stamp>_pretrained-<stack>/<stem>.csv), the columns that fit needs, fp16 left out on a
CPU, and a model whose time share is spent written as skipped rather than dropped."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import _common

RUNNER = os.path.join(_common.RUNNERS, "stack_runner.py")
BASE = ["--device", "cpu", "--device-name", "test-cpu", "--file-stem", "cpu", "--models",
        "squeezenet", "--batch", "1", "--rounds", "2", "--round-s", "0.001", "--warmup-calls",
        "1", "--warmup-s", "0", "--stamp", "2026_0101"]


class StackRunnerCpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "out")
        cls.proc = subprocess.run(
            [sys.executable, RUNNER, "--out", cls.out, "--work", os.path.join(cls.tmp.name, "w"),
             "--stacks", "fp32,torchscript,fp16", "--budget-s", "200", *BASE],
            capture_output=True, text=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_writes_one_fit_stacks_folder_per_stack(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-2000:])
        self.assertEqual(sorted(os.listdir(self.out)),
                         ["2026_0101_pretrained-fp32", "2026_0101_pretrained-torchscript",
                          "env.json"])  # fp16 needs a GPU
        for stack, runtime in (("fp32", "pytorch-eager"), ("torchscript", "torchscript")):
            folder = os.path.join(self.out, f"2026_0101_pretrained-{stack}")
            header, rows = _common.read_csv(os.path.join(folder, "cpu.csv"))
            for col in ("model", "batch_size", "input_size", "latency", "max_memory",
                        "total_params"):
                self.assertIn(col, header)
            self.assertEqual(len(rows), 1)
            r = rows[0]
            self.assertEqual((r["model"], r["torchvision_name"], r["status"]),
                             ("squeezenet", "squeezenet1_0", "ok"))
            self.assertEqual((r["batch_size"], r["input_size"]), ("1", "224"))
            self.assertEqual(r["runtime"], runtime)
            self.assertEqual(r["total_params"], "1248424")  # framework-tax's count for it
            self.assertGreater(float(r["latency"]), 0)
            self.assertLess(float(r["latency"]), 10)  # seconds, not milliseconds
            self.assertEqual(r["max_memory"], "")  # no NVML on a CPU

    def test_env_records_the_protocol_and_host(self):
        with open(os.path.join(self.out, "env.json")) as f:
            env = json.load(f)
        self.assertEqual(env["protocol"]["rounds"], 2)
        self.assertIn("torch", env)
        self.assertGreater(env["host_dispatch_us"]["relu_us"], 0)


class StackRunnerBudgetTest(unittest.TestCase):
    def test_a_spent_share_leaves_skipped_rows(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = os.path.join(tmp, "rows.jsonl")
            run = subprocess.run(
                [sys.executable, RUNNER, "--child", "--model", "squeezenet", "--child-budget-s",
                 "-1", "--rows-out", rows, "--stacks", "fp32", *BASE],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr[-2000:])
            with open(rows) as f:
                got = [json.loads(x) for x in f]
            self.assertEqual([(r["batch_size"], r["status"]) for r in got],
                             [(1, "skipped: time")])


if __name__ == "__main__":
    unittest.main()
