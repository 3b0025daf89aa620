"""lab/fresh_heap_check.py: its arguments (the measuring part needs torch and a quiet machine, and
is run by hand)."""

import contextlib
import io
import os
import sys
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import fresh_heap_check as fh  # noqa: E402


class ArgsTest(unittest.TestCase):
    def test_models_without_a_batch_are_refused_before_any_process_starts(self):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(fh.main([]), 2)
            self.assertEqual(fh.main(["resnet50:2", "mobilenet_v2"]), 2)
        self.assertIn("NAME:BATCH", err.getvalue())


if __name__ == "__main__":
    unittest.main()
