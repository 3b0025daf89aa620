"""lab/nb201_copies_floor.py: the `;prune` deployment of a NAS-Bench-201 cell (as
graph/build_nb201.c builds it), the operation counts and the leave-one-out errors, on cells worked
out by hand."""

import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr
from io import StringIO

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import nb201_copies_floor as nf  # noqa: E402


class PruneTest(unittest.TestCase):
    def test_prune_should_drop_none_edges_and_dead_nodes_but_keep_zero_nodes(self):
        # node 1 = conv3(n0) feeds only a 'none' edge: dead. node 2 has only 'none' inputs but
        # node 3 reads it through a conv: a zero node that still runs.
        cell = "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|nor_conv_1x1~2|"
        got = nf.pruned(nf.parse_cell(cell))
        self.assertEqual(got, ("dead", "zero", ((0, "skip_connect"), (2, "nor_conv_1x1"))))
        self.assertEqual(nf.op_counts(got), (("nor_conv_1x1", 1), ("skip_connect", 1)))

    def test_cells_whose_output_ignores_the_input_are_constant(self):
        self.assertIsNone(nf.pruned(nf.parse_cell("|none~0|+|none~0|none~1|+|none~0|none~1|none~2|")))
        # node 3 reads only node 2, which reads nothing but 'none' edges
        self.assertIsNone(nf.pruned(nf.parse_cell(
            "|avg_pool_3x3~0|+|none~0|none~1|+|none~0|none~1|nor_conv_3x3~2|")))

    def test_same_network_from_different_strings(self):
        a = nf.pruned(nf.parse_cell("|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|"))
        b = nf.pruned(nf.parse_cell("|avg_pool_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|"))
        self.assertEqual(a, b)  # node 1 is dead in both, whatever it computes

    def test_bad_cells_should_be_refused(self):
        for bad in ("|nor_conv_3x3~0|+|none~0|", "|a~0|+|b~0|c~1|+|d~0|e~1|f~3|", "|a~0|+|b~0|+|c~0|d~1|e~2|"):
            with self.assertRaises(ValueError, msg=bad):
                nf.parse_cell(bad)


class FloorTest(unittest.TestCase):
    def test_leave_one_out_uses_the_median_of_the_other_copies(self):
        # 1 vs median(2, 4) = 3: 200 %; 2 vs 2.5: 25 %; 4 vs 1.5: 62.5 %; a lone cell counts not
        self.assertEqual(nf.loo_errors({"a": [1.0, 2.0, 4.0], "b": [7.0]}), [25.0, 62.5, 200.0])

    def test_column_floor_takes_each_groups_best_single_value(self):
        # group [1, 2, 4]: c = 1 gives 0 + 1/2 + 3/4 = 1.25, c = 2 gives 1 + 0 + 2/4 = 1.5, c = 4
        # gives 3 + 1 + 0 = 4: best 1.25 (weights 1, 1/2, 1/4: the weighted median is 1). [5, 5]
        # costs 0, a lone cell 0: 100 * 1.25 / 6 cells.
        self.assertAlmostEqual(nf.best_constant_error([4.0, 1.0, 2.0]), 1.25)
        self.assertAlmostEqual(nf.column_floor({"a": [1.0, 2.0, 4.0], "b": [5.0, 5.0], "c": [3.0]}),
                               125.0 / 6)

    def test_count_baseline_learns_only_from_its_share(self):
        rows = [(("x", 1), 10.0)] * 50 + [(("y", 1), 20.0)] * 50
        mape, judged, missing = nf.count_baseline(rows, 0.5, seed=3)
        self.assertEqual((mape, judged + missing), (0.0, 50))

    def test_main_should_name_the_file_and_line_of_a_bad_row(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("arch_idx,arch_str,raspi4_ms\n")
            f.write("0,|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|,2.5\n")
            f.write("1,|nor_conv_3x3~0|+|none~0|,3.0\n")
        try:
            err = StringIO()
            with redirect_stderr(err):
                rc = nf.main([f.name])
            self.assertEqual(rc, 2)
            self.assertIn(f"{f.name}:3:", err.getvalue())
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
