"""lab/op_class_check.py: the per-class sums of a prediction's kernel list, worked out by hand
(comparing with the profile needs the build and is run by hand)."""

import os
import sys
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import op_class_check as oc  # noqa: E402


class ClassesTest(unittest.TestCase):
    def test_kernels_should_sum_by_class_in_microseconds(self):
        kernels = [
            {"ops": "Conv", "kind": "conv", "latency_ms": 0.5},
            {"ops": "Relu", "kind": "elemwise", "latency_ms": 0.25},
            {"ops": "Conv", "kind": "dwconv", "latency_ms": 0.125},
            {"ops": "Conv", "kind": "conv", "latency_ms": 0.75},
            {"ops": "Sigmoid+Mul", "kind": "elemwise", "latency_ms": 0.0625},
            {"ops": "Add", "kind": "elemwise", "latency_ms": 0.03125},
            {"ops": "MaxPool", "kind": "pool", "latency_ms": 9.0},
            {"ops": "BatchNormalization", "kind": "norm", "latency_ms": 0.5},
        ]
        got = oc.predicted_classes(kernels)
        # convolutions (their rows hold their BatchNorm passes), depthwise ones and a BatchNorm
        # row of its own: 0.5 + 0.125 + 0.75 + 0.5 ms = 1875 us; the pool belongs to no class
        self.assertEqual(dict(got), {"conv+bn": 1875.0, "relu": 250.0, "silu": 62.5,
                                     "add": 31.25})


if __name__ == "__main__":
    unittest.main()
