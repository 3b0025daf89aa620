"""lab/gpu_correction_floor.py: the held-out offsets worked out by hand on three GPUs' rows."""

import math
import os
import sys
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import gpu_correction_floor as gf  # noqa: E402


class FloorTest(unittest.TestCase):
    def test_a_models_residual_on_the_other_gpus_should_correct_the_held_out_one(self):
        # model "a" is predicted at half its time on GPUs x and y, and right on z; "b" right on all
        rows = [("x", "a", 32, 2.0, 1.0), ("y", "a", 32, 4.0, 2.0), ("z", "a", 32, 1.0, 1.0),
                ("x", "b", 32, 1.0, 1.0), ("y", "b", 32, 1.0, 1.0), ("z", "b", 32, 1.0, 1.0)]
        got = gf.floor(rows)["batch >= 16"]
        # z held out: "a" takes x's and y's residual log 2: predicted 2.0 against 1.0, 100 % off;
        # "b" 0; the stack alone 0 on both
        self.assertAlmostEqual(got["z"]["stack"], 0.0)
        self.assertAlmostEqual(got["z"]["model mean"], 50.0)
        # x held out: "a" takes the mean of y's log 2 and z's 0, exp(log(2) / 2) = sqrt 2:
        # predicted 1.414 against 2.0
        self.assertAlmostEqual(got["x"]["stack"], 25.0)
        self.assertAlmostEqual(got["x"]["model mean"], 100 * (1 - math.sqrt(2) / 2) / 2)
        self.assertEqual(got["pooled"]["n"], 6)
        self.assertEqual(gf.floor(rows)["batch < 16"], {"pooled": {"n": 0}})  # no rows there

    def test_batch_classes_should_not_share_offsets(self):
        rows = [("x", "a", 1, 2.0, 1.0), ("y", "a", 1, 2.0, 1.0),
                ("x", "a", 64, 1.0, 1.0), ("y", "a", 64, 1.0, 1.0)]
        got = gf.floor(rows)
        self.assertAlmostEqual(got["batch < 16"]["x"]["model mean"], 0.0)
        self.assertAlmostEqual(got["batch >= 16"]["x"]["model mean"], 0.0)
        self.assertAlmostEqual(got["batch < 16"]["x"]["stack"], 50.0)


if __name__ == "__main__":
    unittest.main()
