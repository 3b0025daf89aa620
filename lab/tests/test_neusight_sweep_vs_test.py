"""lab/neusight_sweep_vs_test.py: the neighbour ratio, the monotone floor and the rows beyond
the sweep, on rows worked out by hand."""

import os
import sys
import tempfile
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import neusight_sweep_vs_test as sv  # noqa: E402

# [B, H] rows; throughputs B x H / ms: 100,000, 105,000 and 95,000; median 100,000
SWEEP = [((100, 1000), 1.0), ((110, 1050), 1.1), ((90, 950), 0.9)]


class CompareTest(unittest.TestCase):
    def test_a_faster_test_row_should_show_its_ratio_and_floor(self):
        r = sv.compare("ln", SWEEP, [((100, 1000), 0.8)])
        self.assertEqual((r["n_test"], r["n_near"]), (1, 1))
        self.assertAlmostEqual(r["ratio_median"], 1.25)  # 125,000 over 100,000
        # dominated sweep rows: 0.9 and 1.0 ms; the second slowest, 0.9, is 12.5 % above 0.8
        self.assertEqual(r["n_floor"], 1)
        self.assertAlmostEqual(r["floor_pct"], 12.5)
        self.assertEqual(r["n_beyond"], 0)

    def test_rows_without_neighbours_should_count_in_the_means_only(self):
        r = sv.compare("ln", SWEEP, [((100, 1000), 0.8), ((1000, 5000), 10.0)])
        self.assertEqual((r["n_test"], r["n_near"]), (2, 1))
        self.assertAlmostEqual(r["ratio_median"], 1.25)
        # the far row dominates all three (second slowest 1.0 ms < 10 ms): no floor there
        self.assertEqual(r["n_floor"], 1)
        self.assertAlmostEqual(r["floor_pct"], 6.25)
        self.assertEqual(r["n_beyond"], 1)  # B 1000 and H 5000 above the sweep's 110 and 1050

    def test_a_test_row_as_fast_as_its_neighbours_should_show_ratio_one_and_no_floor(self):
        r = sv.compare("ln", SWEEP, [((100, 1000), 1.0)])
        self.assertAlmostEqual(r["ratio_median"], 1.0)
        self.assertEqual(r["n_floor"], 0)
        self.assertAlmostEqual(r["floor_pct"], 0.0)

    def test_softmax_rows_should_meet_only_rows_of_their_kernel(self):
        sweep = [((100, 1000), 1.0), ((100, 1010), 1.0), ((100, 990), 1.0)]
        test = [((100, 1050), 1.0)]  # H > 1024: PyTorch's block kernel, the sweep rows its warp kernel
        self.assertEqual(sv.compare("ln", sweep, test)["n_near"], 1)
        self.assertEqual(sv.compare("softmax", sweep, test)["n_near"], 0)
        self.assertEqual(sv.compare("softmax", sweep, [((100, 1000), 0.5)])["n_floor"], 1)
        self.assertEqual(sv.compare("softmax", sweep, [((200, 1050), 0.5)])["n_floor"], 0)

    def test_gemm_neighbours_should_be_within_a_quarter_in_every_dim(self):
        # work B x M x N x K: 1e6 each, throughput 1e6 / ms
        sweep = [((1, 100, 100, 100), 1.0), ((1, 110, 100, 100), 1.1), ((1, 100, 90, 100), 0.9),
                 ((2, 100, 100, 100), 2.0)]  # B 2 is 100 % off B 1: not a neighbour
        r = sv.compare("bmm", sweep, [((1, 100, 100, 100), 0.5)])
        self.assertEqual(r["n_near"], 1)
        self.assertAlmostEqual(r["ratio_median"], 2.0)
        self.assertEqual(sv.compare("bmm", sweep[:2], [((1, 100, 100, 100), 0.5)])["n_near"], 0)


class ReadTest(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_rows_should_be_read_for_one_device(self):
        path = self.write("Device,B,H,Latency\nA,4,8,0.5\nB,2,2,0.1\nA,16,32,1.5\n")
        self.assertEqual(sv.read_rows(path, ("B", "H"), "A"), [((4, 8), 0.5), ((16, 32), 1.5)])
        self.assertEqual(len(sv.read_rows(path, ("B", "H"))), 3)

    def test_a_bad_row_should_be_named_by_file_and_line(self):
        path = self.write("Device,B,H,Latency\nA,4,8,0.5\nA,4,x,0.5\n")
        with self.assertRaisesRegex(ValueError, r":3: bad B, H or Latency"):
            sv.read_rows(path, ("B", "H"))
        path = self.write("Device,B,H,Latency\nA,4,8,0\n")
        with self.assertRaisesRegex(ValueError, r":2: .*positive"):
            sv.read_rows(path, ("B", "H"))


if __name__ == "__main__":
    unittest.main()
