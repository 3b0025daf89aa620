"""The perfpred Python package (python/perfpred) against the built library: run by scripts/test.sh
under /usr/bin/python3 with PERFPRED_LIB (build-test/libperfpred.so), PERFPRED_CLI and PYTHONPATH
set. Expected values come from the CLI, the shipped intervals.json or the test's own arithmetic,
never from the package under test."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import perfpred

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESNET = os.path.join(ROOT, "examples", "resnet18.onnx")
CONFIGS = os.path.join(ROOT, "configs")
CLI = os.environ.get("PERFPRED_CLI", os.path.join(ROOT, "build", "perfpred"))


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError("perfpred %s: %s" % (" ".join(args), out.stderr))
    return json.loads(out.stdout)


def shipped_quantiles(device, path):
    with open(os.path.join(CONFIGS, "artifacts", device, "intervals.json")) as f:
        e = json.load(f)["paths"][path]
    return e["log_lo"], e["log_hi"], e["n"]


class PredictShould(unittest.TestCase):
    def test_predict_should_give_what_the_cli_json_gives(self):
        p = perfpred.predict(RESNET, device="rpi5", batch=1, layers=True)
        want = cli_json("--device", "rpi5", RESNET, "--batch", "1", "--layers")
        self.assertEqual(p.raw, want)
        self.assertEqual(p.device, "rpi5")
        self.assertEqual(p.latency.unit, "ms")
        self.assertEqual(p.latency.value, want["prediction"]["latency"]["value"])

    def test_predict_should_carry_the_shipped_interval(self):
        p = perfpred.predict(RESNET, device="rpi5")
        lo, hi, n = shipped_quantiles("rpi5", "gnn")
        v = p.latency.value
        self.assertTrue(p.latency.interval)
        self.assertAlmostEqual(p.latency.interval.lo, v * math.exp(lo), delta=1e-9 * v)
        self.assertAlmostEqual(p.latency.interval.hi, v * math.exp(hi), delta=1e-9 * v)
        self.assertEqual(p.latency.interval.n, n)
        self.assertEqual(p.latency.interval.coverage, 0.8)
        self.assertLess(p.latency.interval.lo, v)
        self.assertGreater(p.latency.interval.hi, v)
        self.assertIn("[", str(p))

    def test_predict_should_give_a_stack_answer_the_stacks_interval(self):
        p = perfpred.predict(RESNET, device="a100")
        iv = p.latency.interval
        self.assertTrue(iv)
        self.assertEqual(iv.path, "stack")
        self.assertLess(iv.lo, p.latency.value)
        self.assertGreater(iv.hi, p.latency.value)
        self.assertEqual(p.peak_memory.unit, "bytes")
        self.assertIsNotNone(p.mig)

    def test_predict_should_pass_amp_through_as_the_cli_does(self):
        p = perfpred.predict(RESNET, device="a100", precision="amp")
        want = cli_json("--device", "a100", RESNET, "--precision", "amp")
        self.assertEqual(p.raw, want)
        self.assertEqual(want["prediction"]["stack"]["name"], "pytorch-eager-amp")

    def test_predict_should_say_an_estimated_host_has_no_interval(self):
        p = perfpred.predict(RESNET, device="jetson-agx-orin")
        self.assertFalse(p.latency.interval)
        self.assertIsNone(p.latency.interval.lo)
        self.assertIn("estimate", p.latency.interval.source)
        self.assertGreater(p.latency.value, 0)

    def test_predict_should_export_a_torch_module_defined_here(self):
        import torch

        class TwoConvs(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Conv2d(3, 16, 3, padding=1)
                self.b = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
                self.fc = torch.nn.Linear(32, 10)

            def forward(self, x):
                x = torch.relu(self.b(torch.relu(self.a(x))))
                return self.fc(x.mean(dim=(2, 3)))

        net = TwoConvs()
        p = perfpred.predict(net, torch.randn(4, 3, 32, 32), device="rpi4", layers=True)
        self.assertEqual(p.batch, 4)
        self.assertEqual(p.model, "<TwoConvs>")
        self.assertGreater(p.latency.value, 0)
        kinds = [k["kind"] for k in p.kernels]
        self.assertEqual(kinds.count("conv"), 2)
        # the same module exported here, with weights, predicted by the CLI
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "net.onnx")
            torch.onnx.export(net, (torch.randn(4, 3, 32, 32),), path, input_names=["input"],
                              opset_version=13)
            want = cli_json("--device", "rpi4", path)
        self.assertAlmostEqual(p.latency.value, want["prediction"]["latency"]["value"],
                               delta=1e-9 * p.latency.value)
        # a batch given overrides the example's
        self.assertEqual(perfpred.predict(net, torch.randn(1, 3, 32, 32), device="rpi4",
                                          batch=3).batch, 3)


class ErrorsShould(unittest.TestCase):
    def test_an_unknown_device_should_raise_with_the_library_status(self):
        with self.assertRaises(perfpred.Error) as c:
            perfpred.predict(RESNET, device="no-such-board")
        self.assertEqual(c.exception.status, 7)
        self.assertEqual(c.exception.status_name, "PERFPRED_ERR_DEVICE")
        self.assertIn("no-such-board", str(c.exception))

    def test_a_missing_model_should_raise_naming_it(self):
        with self.assertRaises(perfpred.Error) as c:
            perfpred.predict("/nonexistent/model.onnx", device="rpi4")
        self.assertEqual(c.exception.status, 2)
        self.assertIn("/nonexistent/model.onnx", str(c.exception))

    def test_a_module_without_example_should_raise(self):
        import torch
        with self.assertRaises(perfpred.Error):
            perfpred.predict(torch.nn.Linear(4, 2), device="rpi4")
        with self.assertRaises(perfpred.Error):
            perfpred.predict(12, device="rpi4")

    def test_errors_should_print_nothing(self):
        code = ("import perfpred\n"
                "try:\n perfpred.predict('/nonexistent.onnx', device='rpi4')\n"
                "except perfpred.Error: pass\n"
                "try:\n perfpred.predict(%r, device='nope')\n"
                "except perfpred.Error: pass\n" % RESNET)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "")
        self.assertEqual(out.stderr, "")


class CompareShould(unittest.TestCase):
    def test_compare_should_sort_rows_and_decide_only_disjoint_intervals(self):
        rows = perfpred.compare(RESNET, devices=["rpi4", "rpi5", "a100"], batches=[1, 8],
                                as_frame=False)
        self.assertEqual(len(rows), 6)
        lat = [r["latency_ms"] for r in rows]
        self.assertEqual(lat, sorted(lat))
        for a, b in zip(rows, rows[1:]):
            both = a["latency_lo_ms"] is not None and b["latency_lo_ms"] is not None
            disjoint = both and a["latency_hi_ms"] < b["latency_lo_ms"]
            self.assertEqual(a["faster_than_next_decided"], disjoint, (a, b))
        self.assertIsNone(rows[-1]["faster_than_next_decided"])
        # rpi5 batch 1 against rpi4 batch 1: intervals far apart, so that ranking is decided
        r5 = next(r for r in rows if r["device"] == "rpi5" and r["batch"] == 1)
        self.assertTrue(r5["faster_than_next_decided"])

    def test_compare_should_match_the_cli(self):
        got = perfpred.compare(RESNET, devices=["rpi4", "a100"], raw=True)
        self.assertEqual(got, cli_json("compare", "--device", "rpi4,a100", RESNET))

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot not installed")
    def test_compare_should_write_the_plot(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "cmp.svg")
            perfpred.compare(RESNET, devices=["rpi4", "rpi5"], batches=[1, 2], plot=out,
                             as_frame=False)
            with open(out) as f:
                svg = f.read()
            self.assertIn("<svg", svg)
            self.assertIn("rpi5 b2", svg)
            self.assertEqual(os.listdir(d), ["cmp.svg"])  # no temporary file left

    def test_a_bad_plot_path_should_raise(self):
        with self.assertRaises(perfpred.Error) as c:
            perfpred.compare(RESNET, devices=["rpi4"], plot="/nonexistent/dir/x.svg")
        self.assertIn("/nonexistent/dir/x.svg", str(c.exception))
        with self.assertRaises(perfpred.Error):
            perfpred.compare(RESNET, devices=["rpi4"], plot="x.pdf")


class MigAndDevicesShould(unittest.TestCase):
    def test_mig_should_pick_the_cli_choice(self):
        a = perfpred.mig(RESNET, slo_ms=5)
        want = cli_json("mig", RESNET, "--slo-ms", "5")
        self.assertEqual(a.slo_choice, want["slo_choice"])
        self.assertEqual(a.memory_rule_choice, want["memory_rule_choice"])
        self.assertEqual(len(a.profiles), len(want["profiles"]))
        self.assertEqual(a.slo_ms, 5)

    def test_devices_should_list_the_descriptors(self):
        names = [d["name"] for d in perfpred.devices()]
        self.assertEqual(names, [d["name"] for d in cli_json("devices")])
        self.assertIn("rpi5", names)

    def test_a_descriptor_of_ones_own_should_answer_as_through_the_cli(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "board.yaml")
            with open(path, "w") as f:
                f.write("name: my-rpi4-copy\ndescription: an rpi4 of my own\nbase: rpi4\n")
            saved = os.environ.get("PERFPRED_DEVICES")
            os.environ["PERFPRED_DEVICES"] = path
            try:
                p = perfpred.predict(RESNET, device="my-rpi4-copy")
                names = [x["name"] for x in perfpred.devices()]
            finally:
                if saved is None:
                    del os.environ["PERFPRED_DEVICES"]
                else:
                    os.environ["PERFPRED_DEVICES"] = saved
            want = cli_json("--device", "my-rpi4-copy", RESNET, "--device-file", path)
            self.assertEqual(p.latency.value, want["prediction"]["latency"]["value"])
            self.assertIn("my-rpi4-copy", names)
        # the environment as it was: the name is unknown again
        with self.assertRaises(perfpred.Error):
            perfpred.predict(RESNET, device="my-rpi4-copy")


if __name__ == "__main__":
    unittest.main()
