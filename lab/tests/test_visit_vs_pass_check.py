"""lab/visit_vs_pass_check.py: its summary of visit and pass timings, on numbers worked out by
hand (the measuring part needs torch and a quiet machine, and is run by hand)."""

import os
import sys
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import visit_vs_pass_check as vp  # noqa: E402


class SummaryTest(unittest.TestCase):
    def test_medians_ratio_and_faults_per_call(self):
        visit = [[10.0, 12.0, 11.0], [8.0, 9.0, 7.0]]       # sample 1 and 2 over 3 rounds
        passes = [30.0, 20.0, 40.0, 25.0, 35.0, 50.0]        # 2 passes x 3 rounds
        med, p_med, p_iqr, ratio, f_v, f_p = vp.summarize(visit, passes, 3, 12)
        self.assertEqual(med, [11.0, 8.0])
        self.assertEqual(p_med, 32.5)
        self.assertEqual(p_iqr, 38.75 - 26.25)
        self.assertAlmostEqual(ratio, 32.5 / 11.0)
        self.assertEqual(f_v, 0.5)
        self.assertEqual(f_p, 2.0)

    def test_bad_arguments_are_refused_before_torch_loads(self):
        self.assertEqual(vp.main(["--rounds", "1"]), 2)


if __name__ == "__main__":
    unittest.main()
