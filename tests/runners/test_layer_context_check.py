"""tools/layer_context_check.py's choice of a cache scrub: parsing the sizes and picking the one
whose cold leaf sums come closest to the in-network sums; and which calls it times (every call of a
leaf module, a module called twice counted twice). The timings themselves are not checked here."""

import os
import sys
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "tools"))
import layer_context_check as lcc  # noqa: E402


class ScrubChoiceTest(unittest.TestCase):
    def test_sizes_should_parse_in_order_and_reject_bad_ones(self):
        self.assertEqual(lcc.parse_sizes("8"), [8.0])
        self.assertEqual(lcc.parse_sizes("32,8,16.5"), [32.0, 8.0, 16.5])
        for bad in ("", "8,,16", "0", "-4", "8,8", "lots", "nan", "2000000"):
            with self.assertRaises(ValueError, msg=bad):
                lcc.parse_sizes(bad)

    def test_pick_should_take_the_smallest_median_error_not_the_mean(self):
        # 8 MiB: every model 10 % low; 32 MiB: two models within 2 %, one 60 % high
        # (median 2 %, mean 21 %): the median rule takes 32, a mean rule would take 8
        ratios = {8.0: {"a": 0.9, "b": 0.9, "c": 0.9},
                  32.0: {"a": 1.02, "b": 0.98, "c": 1.6}}
        mb, err = lcc.pick_scrub(ratios)
        self.assertEqual(mb, 32.0)
        self.assertAlmostEqual(err, 0.02)
        # an even number of models: the median is the mean of the middle two
        mb, err = lcc.pick_scrub({16.0: {"a": 1.1, "b": 0.8, "c": 1.0, "d": 1.04}})
        self.assertEqual(mb, 16.0)
        self.assertAlmostEqual(err, 0.07)

    def test_pick_should_prefer_the_smaller_size_on_a_tie(self):
        mb, _ = lcc.pick_scrub({64.0: {"a": 1.05}, 16.0: {"a": 0.95}})
        self.assertEqual(mb, 16.0)

    def test_pick_needs_ratios(self):
        with self.assertRaises(ValueError):
            lcc.pick_scrub({8.0: {}})

    def test_table_should_name_each_model_and_the_choice(self):
        text = lcc.scrub_table({8.0: {"m1": 0.8, "m2": 0.85}, 32.0: {"m1": 1.01, "m2": 0.97}},
                               ["m1", "m2"])
        lines = text.splitlines()
        self.assertTrue(any(ln.startswith("m1") and "0.800" in ln and "1.010" in ln
                            for ln in lines))
        self.assertIn("--scrub-mb 32 (median |ratio - 1| 2.0 % over 2 models)", lines[-1])


class LeafCallsTest(unittest.TestCase):
    def test_every_call_of_a_reused_module_should_be_timed(self):
        import torch

        class Block(torch.nn.Module):  # one ReLU module run three times, as ResNet's blocks do
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Linear(4, 4)
                self.b = torch.nn.Linear(4, 6)
                self.relu = torch.nn.ReLU()

            def forward(self, x):
                return self.relu(self.b(self.relu(self.a(self.relu(x)))))

        m = Block().eval()
        leaves = [m.a, m.b, m.relu]
        with torch.inference_mode():
            in_net, calls = lcc.leaf_calls(m, torch.randn(2, 4), leaves, 3)
        self.assertEqual([type(q).__name__ for q, _ in calls],
                         ["ReLU", "Linear", "ReLU", "Linear", "ReLU"])
        # each call's own input: the last ReLU sees the 6-wide output of b
        self.assertEqual([tuple(i[0].shape) for _, i in calls],
                         [(2, 4), (2, 4), (2, 4), (2, 4), (2, 6)])
        # in-net: one entry per module, its calls summed
        self.assertEqual(sorted(type(q).__name__ for q, _ in in_net), ["Linear", "Linear", "ReLU"])
        self.assertTrue(all(v > 0 for _, v in in_net))
        # the hooks are gone afterwards
        self.assertFalse(any(q._forward_hooks or q._forward_pre_hooks for q in leaves))


if __name__ == "__main__":
    unittest.main()
