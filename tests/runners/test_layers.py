"""test_layers.py: runners/layers.py: the inputs/attrs grammar of docs/measurements.md, the op kind
graph/features.c would assign, and the PyTorch rebuild of single ONNX nodes (output shapes worked
out by hand from the ONNX operator definitions)."""

import math
import os
import unittest

import _common  # noqa: F401
import layers
import torch


def out_shape(op, inputs, attrs=None, **kw):
    b = layers.build_layer(op, layers.parse_inputs(inputs), layers.parse_attrs(attrs or ""),
                           torch, seed=3, **kw)
    with torch.inference_mode():
        y = b()
    if isinstance(y, (list, tuple)):
        return [tuple(t.shape) for t in y]
    return tuple(y.shape)


class GrammarTest(unittest.TestCase):
    def test_inputs_should_parse_roles_dims_scalars_and_omitted(self):
        got = layers.parse_inputs("x:8x64x56x56;w:128x64x3x3;-;w:scalar")
        self.assertEqual(got, [("x", (8, 64, 56, 56)), ("w", (128, 64, 3, 3)), ("-", None),
                               ("w", ())])

    def test_inputs_should_reject_malformed_text(self):
        for bad in ("", "w:3x3", "x:", "x:3x", "x:0x3", "y:3", "x:3;;x:3", "x:3,4", "x:3x-1",
                    ";".join(["x:1"] * 65)):
            with self.assertRaises(layers.LayerError, msg=bad):
                layers.parse_inputs(bad)

    def test_inputs_should_take_a_weight_first_only_in_a_concat_with_an_activation(self):
        got = layers.parse_inputs("w:1x1x768;x:1x49x768", "Concat")
        self.assertEqual(got, [("w", (1, 1, 768)), ("x", (1, 49, 768))])
        for op, bad in (("Add", "w:1x1x768;x:1x49x768"), (None, "w:1x1x768;x:1x49x768"),
                        ("Concat", "w:1x1x768;w:1x49x768")):
            with self.assertRaises(layers.LayerError, msg=f"{op} {bad}"):
                layers.parse_inputs(bad, op)
        # the class token before the patches: (1, 1 + 49, 768)
        b = layers.build_layer("Concat", got, {"axis": 1}, torch, seed=3)
        with torch.inference_mode():
            self.assertEqual(tuple(b().shape), (1, 50, 768))

    def test_inputs_should_take_a_densenet_concat_of_49(self):
        # densenet201's third block: its 256 input channels and 48 layers of growth 32, at 14x14
        text = "x:1x256x14x14;" + ";".join(["x:1x32x14x14"] * 48)
        got = layers.parse_inputs(text, "Concat")
        self.assertEqual(len(got), 49)
        b = layers.build_layer("Concat", got, {"axis": 1}, torch, seed=3)
        with torch.inference_mode():
            self.assertEqual(tuple(b().shape), (1, 1792, 14, 14))

    def test_attrs_should_parse_every_type(self):
        got = layers.parse_attrs("kernel_shape:ints=3,3;group:i=-2;epsilon:f=1e-05;"
                                 "mode:s=linear;scales:floats=1,1,2.5,2")
        self.assertEqual(got, {"kernel_shape": [3, 3], "group": -2, "epsilon": 1e-5,
                               "mode": "linear", "scales": [1.0, 1.0, 2.5, 2.0]})
        self.assertEqual(layers.parse_attrs(""), {})

    def test_attrs_should_reject_malformed_text(self):
        for bad in ("group", "group:i", "group=1", "group:i=1.5", "a:f=nan", "a:f=inf",
                    "a:x=1", "a:ints=", "a:ints=1,,2", "a:s=has space", "a:i=1;a:i=2",
                    "a:ints=1,2,3,4,5,6,7,8,9", "b@d:i=1", "a:i=1;"):
            with self.assertRaises(layers.LayerError, msg=bad):
                layers.parse_attrs(bad)

    def test_format_should_round_trip(self):
        for text in ("kernel_shape:ints=3,3;strides:ints=2,2;group:i=32",
                     "axis:i=-1;epsilon:f=1e-05", "mode:s=nearest;scales:floats=1,1,2,2"):
            self.assertEqual(layers.format_attrs(layers.parse_attrs(text)), text)
        for text in ("x:1x3x224x224;w:64x3x7x7;-", "x:4096x1024;w:scalar"):
            self.assertEqual(layers.format_inputs(layers.parse_inputs(text)), text)


class KindTest(unittest.TestCase):
    def kind(self, op, inputs, attrs=""):
        return layers.op_kind(op, layers.parse_inputs(inputs), layers.parse_attrs(attrs))

    def test_kinds_should_follow_graph_features(self):
        self.assertEqual(self.kind("Conv", "x:1x32x8x8;w:32x1x3x3", "group:i=32"), "dwconv")
        self.assertEqual(self.kind("Conv", "x:1x32x8x8;w:64x16x3x3", "group:i=2"), "conv")
        self.assertEqual(self.kind("Conv", "x:1x1x8x8;w:4x1x3x3", "group:i=1"), "conv")
        self.assertEqual(self.kind("MatMul", "x:8x64x32;w:32x16"), "linear")
        self.assertEqual(self.kind("MatMul", "x:8x64x32;x:8x32x16"), "bmm")
        self.assertEqual(self.kind("Gemm", "x:4x8;w:8x8"), "linear")
        self.assertEqual(self.kind("Gelu", "x:4x8"), "elemwise")
        self.assertEqual(self.kind("GlobalAveragePool", "x:1x8x7x7"), "globalpool")
        self.assertEqual(self.kind("LayerNormalization", "x:4x8;w:8;w:8"), "norm")
        self.assertEqual(self.kind("Transpose", "x:4x8"), "datamove")
        self.assertEqual(self.kind("Flatten", "x:4x8x2"), "reshape")


class BuildTest(unittest.TestCase):
    def test_conv_shapes_should_follow_onnx(self):
        # (28 + 1 + 1 - 3) / 1 + 1 = 28
        self.assertEqual(out_shape("Conv", "x:2x16x28x28;w:32x16x3x3;w:32",
                                   "pads:ints=1,1,1,1"), (2, 32, 28, 28))
        # stride 2, pads 0: (28 - 3) // 2 + 1 = 13; asymmetric pads 0,0,1,1: (29 - 3)//2+1 = 14
        self.assertEqual(out_shape("Conv", "x:1x4x28x28;w:8x4x3x3", "strides:ints=2,2"),
                         (1, 8, 13, 13))
        self.assertEqual(out_shape("Conv", "x:1x4x28x28;w:8x4x3x3",
                                   "strides:ints=2,2;pads:ints=0,0,1,1"), (1, 8, 14, 14))
        self.assertEqual(out_shape("Conv", "x:1x8x10x10;w:8x1x3x3",
                                   "group:i=8;auto_pad:s=SAME_UPPER"), (1, 8, 10, 10))
        self.assertEqual(out_shape("Conv", "x:1x4x9x9;w:6x4x3x3", "dilations:ints=2,2"),
                         (1, 6, 5, 5))
        self.assertEqual(out_shape("Conv", "x:1x4x20;w:6x4x5"), (1, 6, 16))

    def test_conv_should_reject_inconsistent_channels(self):
        with self.assertRaises(layers.LayerError):
            out_shape("Conv", "x:1x8x8x8;w:4x3x3x3")

    def test_convtranspose_shape_should_follow_onnx(self):
        # (7 - 1) * 2 - 2 + 3 + 1 = 14
        self.assertEqual(out_shape("ConvTranspose", "x:1x8x7x7;w:8x4x3x3",
                                   "strides:ints=2,2;pads:ints=1,1,1,1;output_padding:ints=1,1"),
                         (1, 4, 14, 14))

    def test_gemm_and_matmul_shapes(self):
        self.assertEqual(out_shape("Gemm", "x:6x10;w:4x10;w:4", "transB:i=1"), (6, 4))
        self.assertEqual(out_shape("Gemm", "x:10x6;w:10x4", "transA:i=1;alpha:f=0.5"), (6, 4))
        self.assertEqual(out_shape("MatMul", "x:3x5x7;x:3x7x2"), (3, 5, 2))
        self.assertEqual(out_shape("MatMul", "x:2x3x5x7;w:7x4"), (2, 3, 5, 4))
        with self.assertRaises(layers.LayerError):
            out_shape("Gemm", "x:6x10;w:4x9", "transB:i=1")

    def test_pool_shapes(self):
        # (56 + 2 - 3) // 2 + 1 = 28
        self.assertEqual(out_shape("MaxPool", "x:1x8x56x56",
                                   "kernel_shape:ints=3,3;strides:ints=2,2;pads:ints=1,1,1,1"),
                         (1, 8, 28, 28))
        # ceil((7 - 2) / 2) + 1 = 4
        self.assertEqual(out_shape("AveragePool", "x:1x8x7x7",
                                   "kernel_shape:ints=2,2;strides:ints=2,2;ceil_mode:i=1"),
                         (1, 8, 4, 4))
        self.assertEqual(out_shape("GlobalAveragePool", "x:2x8x7x7"), (2, 8, 1, 1))

    def test_max_pool_asymmetric_padding_should_pad_with_minus_infinity(self):
        # ONNX: floor((5 + 0 + 1 - 2) / 2) + 1 = 3 per spatial axis
        b = layers.build_layer("MaxPool", layers.parse_inputs("x:1x1x5x5"),
                               layers.parse_attrs("kernel_shape:ints=2,2;strides:ints=2,2;"
                                                  "pads:ints=0,0,1,1"), torch, seed=1)
        y = b()
        self.assertEqual(tuple(y.shape), (1, 1, 3, 3))
        self.assertTrue(torch.isfinite(y).all())

    def test_norm_softmax_reduce_shapes(self):
        self.assertEqual(out_shape("BatchNormalization", "x:2x8x5x5;w:8;w:8;w:8;w:8"),
                         (2, 8, 5, 5))
        self.assertEqual(out_shape("LayerNormalization", "x:2x9x16;w:16;w:16", "axis:i=-1"),
                         (2, 9, 16))
        self.assertEqual(out_shape("Softmax", "x:2x4x9", "axis:i=1"), (2, 4, 9))
        self.assertEqual(out_shape("ReduceMean", "x:2x4x9", "axes:ints=1;keepdims:i=0"), (2, 9))
        self.assertEqual(out_shape("ReduceSum", "x:2x4x9"), (1, 1, 1))

    def test_softmax_should_sum_to_one_along_axis(self):
        b = layers.build_layer("Softmax", layers.parse_inputs("x:3x5"),
                               layers.parse_attrs("axis:i=0"), torch, seed=2)
        y = b()
        self.assertTrue(torch.allclose(y.sum(0), torch.ones(5)))

    def test_datamove_shapes(self):
        self.assertEqual(out_shape("Transpose", "x:2x3x4", "perm:ints=2,0,1"), (4, 2, 3))
        self.assertEqual(out_shape("Transpose", "x:2x3x4"), (4, 3, 2))
        self.assertEqual(out_shape("Concat", "x:2x3x4;x:2x5x4", "axis:i=1"), (2, 8, 4))
        self.assertEqual(out_shape("Gather", "x:10x6;x:3x2", "axis:i=0"), (3, 2, 6))
        self.assertEqual(out_shape("Split", "x:2x10", "axis:i=1;split:ints=3,7"),
                         [(2, 3), (2, 7)])
        self.assertEqual(out_shape("Slice", "x:8x10",
                                   "starts:ints=2;ends:ints=100;axes:ints=1;steps:ints=3"),
                         (8, 3))  # elements 2, 5, 8
        self.assertEqual(out_shape("Pad", "x:1x2x4x4", "pads:ints=0,0,1,2,0,0,3,4"),
                         (1, 2, 8, 10))
        self.assertEqual(out_shape("Resize", "x:1x2x4x4",
                                   "mode:s=linear;scales:floats=1,1,2,2"), (1, 2, 8, 8))
        self.assertEqual(out_shape("Expand", "x:3x1", "shape:ints=2,3,4"), (2, 3, 4))
        self.assertEqual(out_shape("Tile", "x:2x3", "repeats:ints=2,2"), (4, 6))
        self.assertEqual(out_shape("DepthToSpace", "x:1x8x3x3", "blocksize:i=2"), (1, 2, 6, 6))

    def test_transpose_should_materialize_the_output(self):
        b = layers.build_layer("Transpose", layers.parse_inputs("x:2x3x4"),
                               layers.parse_attrs("perm:ints=2,0,1"), torch, seed=2)
        self.assertTrue(b().is_contiguous())

    def test_views_and_values_given_as_attributes(self):
        self.assertEqual(out_shape("Reshape", "x:2x3x4;w:2", "shape:ints=0,-1"), (2, 12))
        self.assertEqual(out_shape("Flatten", "x:2x3x4", "axis:i=2"), (6, 4))
        self.assertEqual(out_shape("Unsqueeze", "x:2x3", "axes:ints=0,3"), (1, 2, 3, 1))
        self.assertEqual(out_shape("Squeeze", "x:1x3x1", "axes:ints=-1"), (1, 3))
        with self.assertRaises(layers.LayerError):
            out_shape("Reshape", "x:2x3x4;w:2")  # target shape unknown: no silent guess

    def test_elementwise_broadcast_and_clip(self):
        self.assertEqual(out_shape("Add", "x:4x1x5;x:3x1"), (4, 3, 5))
        self.assertEqual(out_shape("Mul", "x:4x5;w:scalar"), (4, 5))
        self.assertEqual(out_shape("Where", "x:4x5;x:4x5;x:1x5"), (4, 5))
        b = layers.build_layer("Clip", layers.parse_inputs("x:100"),
                               layers.parse_attrs("min:f=-0.5;max:f=0.25"), torch, seed=4)
        y = b()
        self.assertGreaterEqual(float(y.min()), -0.5)
        self.assertLessEqual(float(y.max()), 0.25)
        with self.assertRaises(layers.LayerError):
            out_shape("Add", "x:4x5;x:3x5")

    def test_log_and_sqrt_inputs_should_be_positive(self):
        for op in ("Log", "Sqrt"):
            b = layers.build_layer(op, layers.parse_inputs("x:1000"), {}, torch, seed=5)
            self.assertTrue(torch.isfinite(b()).all(), op)

    def test_every_supported_op_should_be_buildable(self):
        # a representative row per supported op; an op listed but not built is a broken promise
        rows = {
            "LpPool": ("x:1x2x6x6", "kernel_shape:ints=2,2;strides:ints=2,2"),
            "GlobalMaxPool": ("x:1x2x6x6", ""), "InstanceNormalization": ("x:1x2x6x6;w:2;w:2", ""),
            "GroupNormalization": ("x:1x4x6x6;w:4;w:4", "num_groups:i=2"),
            "LogSoftmax": ("x:3x4", ""), "LRN": ("x:1x4x5x5", "size:i=3"),
            "ReduceMax": ("x:3x4", ""), "ReduceMin": ("x:3x4", ""), "ReduceL1": ("x:3x4", ""),
            "ReduceL2": ("x:3x4", ""), "ReduceSumSquare": ("x:3x4", ""),
            "ReduceLogSumExp": ("x:3x4", ""), "ReduceLogSum": ("x:3x4", ""),
            "Upsample": ("x:1x1x3x3", "scales:floats=1,1,2,2"),
            "SpaceToDepth": ("x:1x1x4x4", "blocksize:i=2"), "ArgMax": ("x:3x4", "axis:i=1"),
            "ArgMin": ("x:3x4", ""), "CumSum": ("x:3x4", "axis:i=1"), "Identity": ("x:3", ""),
            "Dropout": ("x:3", ""), "PRelu": ("x:1x4x3x3;w:4x1x1", ""),
            "Cast": ("x:3x4", "to:i=10"), "Gelu": ("x:3x4", "approximate:s=tanh"),
            "LeakyRelu": ("x:3", ""), "Elu": ("x:3", ""), "Celu": ("x:3", ""),
            "HardSigmoid": ("x:3", ""), "Sum": ("x:3;x:3;x:3", ""), "Mean": ("x:3;x:1", ""),
            "Pow": ("x:3;x:3", ""), "Div": ("x:3;w:scalar", ""),
        }
        for op in layers.SUPPORTED_OPS:
            if op in rows:
                inputs, attrs = rows[op]
            else:
                inputs, attrs = "x:2x3", ""
                if op in ("Conv", "ConvTranspose", "Gemm", "MatMul", "MaxPool", "AveragePool",
                          "GlobalAveragePool", "BatchNormalization", "LayerNormalization",
                          "Softmax", "ReduceMean", "ReduceSum", "Transpose", "Concat", "Split",
                          "Slice", "Gather", "Pad", "Expand", "Tile", "Resize", "DepthToSpace",
                          "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Clip", "Where"):
                    continue  # covered by the shape tests above
                if op in ("Add", "Sub", "Mul", "Max", "Min", "Equal", "Greater", "Less",
                          "GreaterOrEqual", "LessOrEqual"):
                    inputs = "x:2x3;x:2x3"
            with self.subTest(op=op):
                b = layers.build_layer(op, layers.parse_inputs(inputs), layers.parse_attrs(attrs),
                                       torch, seed=1)
                y = b()
                self.assertIsNotNone(y)
                self.assertGreater(b.nbytes, 0)

    def test_unknown_op_should_be_an_error(self):
        with self.assertRaises(layers.LayerError):
            out_shape("Frobnicate", "x:3")

    def test_same_seed_should_give_same_inputs(self):
        a = layers.build_layer("Relu", layers.parse_inputs("x:16"), {}, torch, seed=9)
        b = layers.build_layer("Relu", layers.parse_inputs("x:16"), {}, torch, seed=9)
        c = layers.build_layer("Relu", layers.parse_inputs("x:16"), {}, torch, seed=10)
        self.assertTrue(torch.equal(a.tensors[0], b.tensors[0]))
        self.assertFalse(torch.equal(a.tensors[0], c.tensors[0]))
        self.assertEqual(a.nbytes, 16 * 4)
        self.assertEqual(math.prod(a.tensors[0].shape), 16)


if __name__ == "__main__":
    unittest.main()


class WarmInputTest(unittest.TestCase):
    """The layer runner re-reads a built layer's tensors[0] after its cache scrub, as the input a
    previous layer has just written: for every op type of the host-cpu plan that tensor must be the
    node's first input (same shape), never a weight."""

    def test_first_tensor_should_be_the_first_input_for_every_planned_op(self):
        import layer_runner
        plan = os.path.join(_common.REPO, "data", "host-cpu", "plan.csv")
        seen = {}
        for r in layer_runner.read_plan(plan):
            seen.setdefault(r.op_type, r)
        self.assertGreaterEqual(len(seen), 15)
        for op, r in sorted(seen.items()):
            b = layers.build_layer(r.op_type, r.inputs, r.attrs, torch, seed=1)
            first = [d for d in r.inputs[0][1]]
            self.assertEqual(list(b.tensors[0].shape), first, f"{op}: {r.inputs_text}")
