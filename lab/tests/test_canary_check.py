"""lab/canary_check.py: its statistics on series worked out by hand (the measuring part needs
torch and a shared machine, and is run by hand)."""

import os
import sys
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import canary_check as cc  # noqa: E402


class StatisticsTest(unittest.TestCase):
    def test_pearson_of_proportional_and_opposite_series(self):
        self.assertAlmostEqual(cc.pearson([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
        self.assertAlmostEqual(cc.pearson([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
        self.assertEqual(cc.pearson([1, 1, 1], [1, 2, 3]), 0.0)

    def test_scaling_takes_a_shared_slowdown_out(self):
        # the network slows by the canary's factor: scaled, it is 50 every time
        canary = [1.0, 1.5, 2.0, 1.25]
        net = [50.0, 75.0, 100.0, 62.5]
        self.assertEqual(cc.scaled(canary, net), [50.0, 50.0, 50.0, 50.0])
        self.assertEqual(cc.spread(cc.scaled(canary, net)), 0.0)
        # IQR / median as timed: quantiles 59.375 and 81.25 (linear), median 68.75
        self.assertAlmostEqual(cc.spread(net), (81.25 - 59.375) / 68.75)


if __name__ == "__main__":
    unittest.main()
