"""lab/warmup_check.py: row-by-row agreement of two layer runs, on rows written by hand."""

import os
import sys
import tempfile
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import warmup_check as wc  # noqa: E402

HEADER = "op_type,inputs,attrs,batch,latency_ms,source\n"


def write(d, name, rows):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(HEADER)
        for op, ms, unscaled in rows:
            src = "stat=x" + (f"; unscaled_ms={unscaled}" if unscaled is not None else "")
            f.write(f'{op},x:1x8,,1,{ms},"{src}"\n')
    return p


class CompareTest(unittest.TestCase):
    def test_ratios_as_timed_and_as_written(self):
        with tempfile.TemporaryDirectory() as d:
            a = write(d, "a.csv", [("Relu", 0.005, 0.005), ("Conv", 0.5, 0.5), ("Add", 2.0, 2.0)])
            # as timed: 1.1x, 1.0x, 0.9x (median 1.0, mean |r - 1| 6.67 %); written: all 1.2x;
            # a row only the second file has is left out
            b = write(d, "b.csv", [("Relu", 0.006, 0.0055), ("Conv", 0.6, 0.5),
                                   ("Add", 2.4, 1.8), ("Tanh", 1.0, 1.0)])
            base, other = wc.load(a), wc.load(b)
            timed = wc.compare(base, other, 1)
            self.assertIn("all", timed[0])
            self.assertIn("3 rows: median ratio 1.000, mean |ratio - 1| 6.7 %", timed[0])
            self.assertIn("0-0.01 ms", timed[1])
            self.assertIn("1 rows: median ratio 1.100", timed[1])
            written = wc.compare(base, other, 0)
            self.assertIn("3 rows: median ratio 1.200, mean |ratio - 1| 20.0 %", written[0])

    def test_rows_without_unscaled_time_are_not_compared_as_timed(self):
        with tempfile.TemporaryDirectory() as d:
            a = write(d, "a.csv", [("Relu", 0.005, None)])
            b = write(d, "b.csv", [("Relu", 0.006, None)])
            self.assertEqual(wc.compare(wc.load(a), wc.load(b), 1), ["  no rows in common"])
            self.assertEqual(wc.main([a, b]), 0)


if __name__ == "__main__":
    unittest.main()
