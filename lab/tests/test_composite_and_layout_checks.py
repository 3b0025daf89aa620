"""lab/composite_op_check.py and lab/matmul_layout_check.py: the parts that decide what is
timed. The decompositions must compute what the eager ops compute (else the check compares
different work), and the layout check must pick exactly the MatMul rows whose second input is a
2-D weight (the timing itself needs a quiet machine and is run by hand)."""

import csv
import os
import sys
import tempfile
import unittest

from _common import REPO

sys.path.insert(0, os.path.join(REPO, "lab"))
import composite_op_check as cc  # noqa: E402
import matmul_layout_check as ml  # noqa: E402


class DecompositionTest(unittest.TestCase):
    def test_each_decomposition_computes_its_eager_op(self):
        import torch
        torch.manual_seed(0)
        x = torch.randn(3, 7, 5) * 4
        for op in ("gelu", "silu", "hardswish"):
            p = x
            for _, f in cc.steps(torch, op):
                p = f(x, p)
            self.assertTrue(torch.allclose(p, cc.eager(torch, op)(x), atol=1e-5), op)

    def test_first_nodes_are_the_ones_torch_onnx_writes(self):
        import torch
        first = {op: cc.steps(torch, op)[0][0] for op in cc.SHAPES}
        self.assertEqual(first, {"gelu": "Div", "silu": "Sigmoid", "hardswish": "HardSigmoid"})


class WeightMatmulsTest(unittest.TestCase):
    def write(self, rows):
        fd, path = tempfile.mkstemp(suffix=".csv")
        os.close(fd)
        self.addCleanup(os.remove, path)
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["op_type", "inputs"])
            w.writerows(rows)
        return path

    def test_only_two_d_weights_once_each(self):
        a = self.write([("MatMul", "x:1x50x768;w:768x3072"),
                        ("MatMul", "x:8x12x64x50;x:8x12x50x64"),     # two activations: bmm
                        ("Gemm", "x:1x768;w:1000x768;w:1000"),       # not a MatMul
                        ("MatMul", "x:2x4x8;w:3x8x16"),              # batched weight
                        ("MatMul", "x:1x50x768;w:768x3072")])        # a repeat
        b = self.write([("MatMul", "x:1x50x768;w:768x3072"),
                        ("MatMul", "x:4x49x384;w:384x384")])
        self.assertEqual(ml.weight_matmuls([a, b]),
                         [((1, 50, 768), (768, 3072)), ((4, 49, 384), (384, 384))])

    def test_no_weight_matmul_is_an_error(self):
        a = self.write([("Relu", "x:1x8")])
        self.assertEqual(ml.main([a]), 2)


if __name__ == "__main__":
    unittest.main()
