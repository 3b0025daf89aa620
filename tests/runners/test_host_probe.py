"""runners/host_probe.py: the framework's figures `calibrate run` writes into a descriptor."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from _common import RUNNERS

SCRIPT = os.path.join(RUNNERS, "host_probe.py")


def has_torch():
    return subprocess.run(["/usr/bin/python3", "-c", "import torch"],
                          capture_output=True).returncode == 0


@unittest.skipUnless(has_torch(), "needs torch")
class HostProbeTest(unittest.TestCase):
    def test_quick_probe_writes_every_figure_with_its_source(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "figures.json")
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
            r = subprocess.run([sys.executable, SCRIPT, "-o", out, "--quick"], capture_output=True,
                               text=True, timeout=120, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, encoding="utf-8") as f:
                j = json.load(f)
            # what run/stages.c reads
            for key in ("launch_overhead_us", "runtime_memory_mb", "mm_gflops_1thread",
                        "triad_gbs", "conv_call_us"):
                self.assertGreater(j[key], 0, key)
            # a per-op cost in microseconds, not seconds or nanoseconds
            self.assertLess(j["launch_overhead_us"], 1000)
            # a oneDNN convolution's call costs more than an element-wise op's
            self.assertGreater(j["conv_call_us"], j["launch_overhead_us"])
            self.assertLess(j["conv_call_us"], 10000)
            self.assertIn("depthwise", j["conv_call_src"])
            self.assertIn("torch.add", j["launch_overhead_src"])
            self.assertIn("Conv2d", j["runtime_memory_src"])
            self.assertEqual(j["threads"], 1)
            # the GEMM figure is one thread's: OpenBLAS's own pool capped, not left at a core each
            self.assertEqual(j["mm_blas_threads"], "1")
            self.assertTrue(j["torch"])
            # written through a temporary file and a rename: nothing else is left
            self.assertEqual(os.listdir(d), ["figures.json"])

    def test_bad_threads_is_a_usage_error(self):
        r = subprocess.run([sys.executable, SCRIPT, "-o", os.devnull, "--threads", "0"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--threads", r.stderr)


if __name__ == "__main__":
    unittest.main()
