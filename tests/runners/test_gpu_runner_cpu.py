"""test_gpu_runner_cpu.py: runners/gpu_runner.py end to end on its CPU path with a tiny configuration
(one model, batches 1 and 2, fp32 and fp16 asked, one sweep chunk): chunk processes, merged files,
fp16 skipped with a message, energy and memory left empty, per-operator rows mapped onto the ONNX
graph, and a rerun that skips the finished chunks."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import _common  # puts runners/ on sys.path; read_csv
import layer_runner
import network_runner

RUNNER = os.path.join(_common.RUNNERS, "gpu_runner.py")
ARGS = ["--device", "cpu", "--device-name", "test-cpu", "--models", "mobilenet_v3_small",
        "--batch", "1,2", "--precision", "fp32,fp16", "--rounds", "2", "--burst", "2",
        "--warmup-calls", "1", "--warmup-ms", "0", "--profile-batch", "1", "--profile-iters", "2",
        "--sweep-per-family", "1", "--sweep-chunk-rows", "8", "--sweep-rounds", "1",
        "--sweep-burst", "2", "--sweep-budget-min", "2"]


class GpuRunnerCpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "gpu")
        cls.first = subprocess.run([sys.executable, RUNNER, "--out", cls.out, *ARGS],
                                   capture_output=True, text=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_run_should_succeed_and_skip_fp16_on_cpu(self):
        self.assertEqual(self.first.returncode, 0, self.first.stderr[-3000:])
        self.assertIn("fp16 is skipped on the CPU path", self.first.stderr)

    def test_networks_csv_should_hold_fp32_rows_with_empty_energy_and_memory(self):
        header, rows = _common.read_csv(os.path.join(self.out, "networks.csv"))
        self.assertEqual(header, network_runner.NET_COLUMNS)
        self.assertEqual([(r["precision"], r["batch"]) for r in rows], [("fp32", "1"),
                                                                        ("fp32", "2")])
        for r in rows:
            self.assertEqual(r["model"], os.path.join("graphs", "mobilenet_v3_small.onnx"))
            self.assertTrue(os.path.exists(os.path.join(self.out, r["model"])))
            self.assertEqual(r["energy_j"], "")
            self.assertEqual(r["peak_memory_bytes"], "")
            self.assertIn("energy=not measured on CPU", r["source"])
            self.assertGreater(float(r["latency_ms"]), 0)
            self.assertEqual(r["device"], "test-cpu")
            self.assertEqual(r["family"], "mobilenet_v3")
        # exported without weights: a few kB, not the 10 MB of parameters
        self.assertLess(os.path.getsize(os.path.join(self.out, rows[0]["model"])), 200_000)

    def test_detail_and_operator_files(self):
        _, detail = _common.read_csv(os.path.join(self.out, "networks_detail.csv"))
        self.assertEqual(sorted(d["status"] for d in detail), ["ok", "ok"])
        self.assertTrue(all("not measured on CPU" in d["note"] for d in detail))
        _, ops = _common.read_csv(os.path.join(self.out, "operators.csv"))
        self.assertGreater(len(ops), 20)
        self.assertTrue(all(o["time_source"] == "cpu" and o["batch"] == "1" for o in ops))
        convs = [o for o in ops if o["aten_op"] == "aten::conv2d"]
        self.assertGreater(len(convs), 10)
        # every conv maps onto a Conv node, in order, and no node twice
        self.assertTrue(all(o["onnx_op_type"] == "Conv" for o in convs))
        names = [o["onnx_node"] for o in convs]
        self.assertEqual(len(names), len(set(names)))
        # the exporter folded every BatchNorm into the Conv before it
        bns = [o for o in ops if o["aten_op"] == "aten::batch_norm"]
        self.assertTrue(bns and all(o["match"] == "folded" for o in bns))
        # the ONNX graph of mobilenet_v3_small has 52 Conv nodes
        self.assertEqual(len(convs), 52)

    def test_sweep_rows_should_form_a_layer_csv(self):
        header, rows = _common.read_csv(os.path.join(self.out, "layers.csv"))
        self.assertEqual(header, layer_runner.LAYER_COLUMNS)
        self.assertEqual(len(rows), 8)
        kinds = {"pool" if r["op_kind"] == "globalpool" else r["op_kind"] for r in rows}
        self.assertEqual(sorted(kinds), sorted(["linear", "bmm", "conv", "dwconv", "elemwise",
                                                "norm", "softmax", "pool"]))
        self.assertTrue(all(float(r["latency_ms"]) > 0 for r in rows))

    def test_env_should_record_the_framework(self):
        with open(os.path.join(self.out, "env.json"), encoding="utf-8") as f:
            envs = json.load(f)
        self.assertEqual(len(envs), 1)
        self.assertEqual(envs[0]["env"]["device"], "cpu")
        self.assertIn("torch", envs[0]["env"])
        self.assertEqual(len(envs[0]["chunks"]), 2)

    def test_rerun_should_skip_finished_chunks_and_refuse_other_options(self):
        again = subprocess.run([sys.executable, RUNNER, "--out", self.out, *ARGS],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(again.returncode, 0, again.stderr[-2000:])
        self.assertNotIn("...", again.stderr)  # no chunk was started
        self.assertIn("merged: 2 network rows", again.stderr)
        other = [a if a != "1,2" else "1" for a in ARGS]
        bad = subprocess.run([sys.executable, RUNNER, "--out", self.out, *other],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("different configuration", bad.stderr)


if __name__ == "__main__":
    unittest.main()
