#!/usr/bin/python3
"""Writes tests/fixtures/malformed/: small ONNX files that perfpred's loader must reject, each with
a clear error, plus control.onnx, the valid model most of them are derived from. They are written
by the official onnx Python package, an encoder independent of the protobuf-c code the loader and
its unit tests use. Run: /usr/bin/python3 tools/make_malformed_onnx.py (onnx 1.12)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "malformed")


def control(opset=13, extra_nodes=(), extra_inits=(), extra_opsets=()):
    """x[N,4] -> MatMul(W[4,4]) -> Add(b[4]) -> Relu -> y, W in float_data, b in raw_data."""
    w = helper.make_tensor("W", TensorProto.FLOAT, [4, 4], [float(i) for i in range(16)])
    b = numpy_helper.from_array(np.array([0.5, -1.0, 2.0, 0.0], dtype=np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
        helper.make_node("Add", ["h", "b"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["y"], name="relu"),
    ] + list(extra_nodes)
    graph = helper.make_graph(
        nodes, "control",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        initializer=[w, b] + list(extra_inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, producer_name="make_malformed_onnx", opset_imports=opsets)
    model.ir_version = 8
    return model


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    good = control()
    onnx.checker.check_model(good)
    write("control.onnx", good.SerializeToString())

    # opsets outside 7..17
    write("opset18.onnx", control(opset=18).SerializeToString())
    write("opset6.onnx", control(opset=6).SerializeToString())

    # control flow: an If with two subgraphs
    branch = helper.make_graph([helper.make_node("Identity", ["y"], ["t"])], "branch", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["N", 4])])
    cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
    iff = helper.make_node("If", ["cond"], ["z"], name="my_if", then_branch=branch,
                           else_branch=branch)
    write("if_subgraph.onnx", control(extra_nodes=[iff], extra_inits=[cond]).SerializeToString())

    # a node in a domain opset_import does not declare
    stray = helper.make_node("Frob", ["y"], ["z"], name="stray_node", domain="org.undeclared")
    write("undeclared_domain.onnx", control(extra_nodes=[stray]).SerializeToString())

    # a string Constant
    sc = helper.make_node("Constant", [], ["s"], name="str_const",
                          value=helper.make_tensor("v", TensorProto.STRING, [1], [b"hi"]))
    sc.attribute[0].CopyFrom(helper.make_attribute("value_string", "hi"))
    write("string_constant.onnx", control(extra_nodes=[sc]).SerializeToString())

    # a 9-D initializer, a negative dim, a raw_data size that does not match the dims
    rank9 = helper.make_tensor("rank9", TensorProto.FLOAT, [1] * 9, [1.0])
    write("rank9_initializer.onnx", control(extra_inits=[rank9]).SerializeToString())
    neg = helper.make_tensor("neg", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0])
    neg.dims[1] = -2
    write("negative_dim.onnx", control(extra_inits=[neg]).SerializeToString())
    short = numpy_helper.from_array(np.zeros(3, dtype=np.float32), "short")
    short.dims[0] = 4
    write("short_raw_data.onnx", control(extra_inits=[short]).SerializeToString())

    # a sparse initializer
    m = control()
    sp = helper.make_sparse_tensor(
        helper.make_tensor("sp", TensorProto.FLOAT, [1], [1.0]),
        helper.make_tensor("sp_idx", TensorProto.INT64, [1], [0]), [4])
    m.graph.sparse_initializer.append(sp)
    write("sparse_initializer.onnx", m.SerializeToString())

    # a cycle: relu feeds mm
    m = control()
    m.graph.node[0].input[0] = "y"
    write("cycle.onnx", m.SerializeToString())

    # not a model at all: truncated, text, empty, another message
    data = good.SerializeToString()
    write("truncated.onnx", data[: len(data) // 2])
    write("text.onnx", b"ir_version: 8\ngraph { node { op_type: \"Relu\" } }\n")
    write("empty.onnx", b"")
    write("tensorproto.onnx", numpy_helper.from_array(np.ones((2, 3), np.float32), "t")
          .SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
