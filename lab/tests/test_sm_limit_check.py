"""lab/sm_limit_check.py: the descriptor of a green context, worked out by hand from the H200's
figures (predicting the rows needs the build and the study's CSV, and is run by hand)."""

import os
import sys
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import sm_limit_check as sc  # noqa: E402


class DescriptorTest(unittest.TestCase):
    def test_sixteen_of_132_sms_with_half_the_copy_rate(self):
        peaks = {"fp32": 67, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5}
        text = sc.descriptor("h200-sxm-141gb", "h200-sxm-141gb-sm16", 16, 132, 0.5, peaks, 4800)
        lines = [ln.strip() for ln in text.splitlines()]
        self.assertIn("name: h200-sxm-141gb-sm16", lines)
        self.assertIn("base: h200-sxm-141gb", lines)
        self.assertIn("compute_units: 16", lines)
        # 67 x 16 / 132 = 8.121212..., 494.5 x 16 / 132 = 59.939393..., 989.5 x 16 / 132 = 119.939...
        self.assertIn("fp32: 8.12121", lines)
        self.assertIn("tf32: 59.9394", lines)
        self.assertIn("fp16: 119.939", lines)
        # 4800 GB/s x 0.5; no stream figure given, none written
        self.assertIn("memory_bandwidth_gbs: 2400", lines)
        self.assertFalse(any(ln.startswith("stream_bandwidth_gbs") for ln in lines))

    def test_the_measured_stream_figure_should_scale_with_the_copy_rate(self):
        text = sc.descriptor("h200-sxm-141gb", "h200-sxm-141gb-sm16", 16, 132, 0.34,
                             {"fp32": 67}, 4800, 3165)
        lines = [ln.strip() for ln in text.splitlines()]
        # 4800 x 0.34 = 1632, 3165 x 0.34 = 1076.1
        self.assertIn("memory_bandwidth_gbs: 1632", lines)
        self.assertIn("stream_bandwidth_gbs: 1076.1", lines)


if __name__ == "__main__":
    unittest.main()
