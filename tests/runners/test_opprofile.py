"""test_opprofile.py: per-operator profiling of runners/opprofile.py: the order-preserving mapping of
aten ops onto ONNX nodes (hand-written sequences) and a real CPU profile of a tiny network."""

import unittest

import _common  # noqa: F401
import opprofile
import torch


class MapTest(unittest.TestCase):
    def test_mapping_should_follow_order_and_types(self):
        nodes = [("c1", "Conv"), ("r1", "Relu"), ("p", "MaxPool"), ("c2", "Conv"), ("a", "Add"),
                 ("r2", "Relu"), ("g", "GlobalAveragePool"), ("f", "Flatten"), ("fc", "Gemm")]
        aten = ["aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::max_pool2d",
                "aten::conv2d", "aten::batch_norm", "aten::add_", "aten::relu_",
                "aten::adaptive_avg_pool2d", "aten::flatten", "aten::linear"]
        got = opprofile.map_to_onnx(aten, nodes)
        want = [("c1", "Conv", "op-type"), ("c1", "Conv", "folded"), ("r1", "Relu", "op-type"),
                ("p", "MaxPool", "op-type"), ("c2", "Conv", "op-type"), ("c2", "Conv", "folded"),
                ("a", "Add", "op-type"), ("r2", "Relu", "op-type"),
                ("g", "GlobalAveragePool", "op-type"), ("f", "Flatten", "op-type"),
                ("fc", "Gemm", "op-type")]
        self.assertEqual(got, want)

    def test_one_stray_op_should_not_shift_later_matches(self):
        # a greedy first-fit would match the stray Relu to r2 and lose r1/c2; the alignment keeps
        # the most matches: c1, r1, c2, r2 (the stray relu stays unmatched)
        nodes = [("c1", "Conv"), ("r1", "Relu"), ("c2", "Conv"), ("r2", "Relu")]
        got = opprofile.map_to_onnx(["aten::conv2d", "aten::relu", "aten::relu", "aten::conv2d",
                                     "aten::relu"], nodes)
        self.assertEqual([g[0] if g else None for g in got], ["c1", "r1", None, "c2", "r2"])

    def test_unknown_and_unorderable_ops_should_stay_unmatched(self):
        nodes = [("c", "Conv")] + [(f"n{i}", "Mul") for i in range(20)] + [("s", "Softmax")]
        got = opprofile.map_to_onnx(["aten::conv2d", "aten::frobnicate", "aten::softmax",
                                     "aten::mul"], nodes)
        self.assertEqual(got[0], ("c", "Conv", "op-type"))
        self.assertIsNone(got[1])
        self.assertEqual(got[2], ("s", "Softmax", "op-type"))
        self.assertIsNone(got[3])  # every Mul node comes before the Softmax: order is kept

    def test_batchnorm_without_a_conv_before_should_stay_unmatched(self):
        got = opprofile.map_to_onnx(["aten::relu", "aten::batch_norm"], [("r", "Relu")])
        self.assertEqual(got[0], ("r", "Relu", "op-type"))
        self.assertIsNone(got[1])


class ProfileTest(unittest.TestCase):
    def test_cpu_profile_should_list_top_level_ops_in_order(self):
        torch.set_num_threads(1)
        m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(8, 4)).eval()
        x = torch.randn(1, 3, 16, 16)

        def fwd():
            with torch.inference_mode():
                return m(x)
        rows = opprofile.profile_forward(torch, fwd, "cpu", iters=2, warmup=1)
        names = [r["aten_op"] for r in rows]
        self.assertEqual(names, ["aten::conv2d", "aten::relu", "aten::adaptive_avg_pool2d",
                                 "aten::flatten", "aten::linear"])
        self.assertTrue(all(r["time_us"] > 0 for r in rows))
        self.assertEqual(rows[0]["input_shapes"].split(";")[:2], ["1x3x16x16", "8x3x3x3"])
        self.assertEqual(rows[0]["iterations"], 2)


if __name__ == "__main__":
    unittest.main()
