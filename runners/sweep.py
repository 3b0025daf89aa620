"""sweep.py: a NeuSight-like per-kernel sweep, written as layer-plan rows.

Seeded random configurations per operator family (linear, bmm, conv, depthwise conv, element-wise,
norms, softmax, pooling), log-uniform in their sizes like NeuSight's collection scripts, capped by a
byte budget per configuration; families are interleaved so that a sweep cut short by its time
budget still covers every family.
"""

import math
import random

import layers

FAMILIES = ("linear", "bmm", "conv", "dwconv", "elemwise", "norm", "softmax", "pool")


def _logu(rng, lo, hi):
    """Integer log-uniform in [lo, hi]."""
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def _bytes(shapes, esize):
    return sum(math.prod(s) for s in shapes) * esize


def _row(op_type, inputs, attrs):
    kind = layers.op_kind(op_type, inputs, attrs)
    return {"op_kind": kind, "op_type": op_type, "batch": inputs[0][1][0],
            "inputs": layers.format_inputs(inputs), "attrs": layers.format_attrs(attrs)}


def gen_linear(rng, big):
    b = _logu(rng, 1, 4096 if big else 256)
    n = _logu(rng, 16, 8192 if big else 2048)
    k = _logu(rng, 16, 8192 if big else 2048)
    return _row("Gemm", [("x", (b, n)), ("w", (k, n)), ("w", (k,))], {"transB": 1}), \
        [(b, n), (k, n), (b, k)]


def gen_bmm(rng, big):
    b = _logu(rng, 1, 512 if big else 64)
    m = _logu(rng, 16, 4096 if big else 512)
    n = _logu(rng, 16, 4096 if big else 512)
    k = _logu(rng, 16, 4096 if big else 512)
    return _row("MatMul", [("x", (b, m, n)), ("x", (b, n, k))], {}), [(b, m, n), (b, n, k),
                                                                       (b, m, k)]


def gen_conv(rng, big, depthwise=False):
    n = _logu(rng, 1, 128 if big else 8)
    s = rng.choice([7, 14, 28, 56, 112, 224] if big else [7, 14, 28, 56])
    k = rng.choice([1, 3, 5, 7] if not depthwise else [3, 5, 7])
    st = rng.choice([1, 1, 2])
    pad = k // 2
    if depthwise:
        c = _logu(rng, 8, 2048 if big else 512)
        cout, w = c, (c, 1, k, k)
        attrs = {"kernel_shape": [k, k], "strides": [st, st], "pads": [pad] * 4, "group": c}
    else:
        c = _logu(rng, 3, 1024 if big else 256)
        cout = _logu(rng, 8, 1024 if big else 256)
        w = (cout, c, k, k)
        attrs = {"kernel_shape": [k, k], "strides": [st, st], "pads": [pad] * 4}
    so = (s + 2 * pad - k) // st + 1
    return _row("Conv", [("x", (n, c, s, s)), ("w", w), ("w", (cout,))], attrs), \
        [(n, c, s, s), w, (n, cout, so, so)]


_UNARY = ("Relu", "Gelu", "Tanh", "Sigmoid", "HardSwish", "Erf")
_BINARY = ("Add", "Mul", "Div")


def gen_elemwise(rng, big):
    b = _logu(rng, 1, 4096 if big else 256)
    h = _logu(rng, 64, 65536 if big else 16384)
    op = rng.choice(_UNARY + _BINARY)
    if op in _BINARY:
        if rng.random() < 0.25:  # with a scalar constant, like NeuSight's addu/mulu/divu
            return _row(op, [("x", (b, h)), ("w", ())], {}), [(b, h), (b, h)]
        return _row(op, [("x", (b, h)), ("x", (b, h))], {}), [(b, h)] * 3
    return _row(op, [("x", (b, h))], {}), [(b, h)] * 2


def gen_norm(rng, big):
    if rng.random() < 0.5:
        b = _logu(rng, 1, 4096 if big else 256)
        h = _logu(rng, 64, 16384 if big else 4096)
        return _row("LayerNormalization", [("x", (b, h)), ("w", (h,)), ("w", (h,))],
                    {"axis": -1, "epsilon": 1e-5}), [(b, h)] * 2
    n = _logu(rng, 1, 128 if big else 8)
    c = _logu(rng, 8, 1024 if big else 256)
    s = rng.choice([7, 14, 28, 56, 112])
    x = (n, c, s, s)
    return _row("BatchNormalization", [("x", x), ("w", (c,)), ("w", (c,)), ("w", (c,)),
                                       ("w", (c,))], {"epsilon": 1e-5}), [x, x]


def gen_softmax(rng, big):
    b = _logu(rng, 1, 4096 if big else 256)
    h = _logu(rng, 16, 32768 if big else 8192)
    return _row("Softmax", [("x", (b, h))], {"axis": -1}), [(b, h)] * 2


def gen_pool(rng, big):
    n = _logu(rng, 1, 128 if big else 8)
    c = _logu(rng, 8, 1024 if big else 256)
    s = rng.choice([7, 14, 28, 56, 112])
    x = (n, c, s, s)
    op = rng.choice(["MaxPool", "AveragePool", "GlobalAveragePool"])
    if op == "GlobalAveragePool":
        return _row(op, [("x", x)], {}), [x, (n, c, 1, 1)]
    k = rng.choice([2, 3])
    attrs = {"kernel_shape": [k, k], "strides": [2, 2]}
    if k == 3:
        attrs["pads"] = [1, 1, 1, 1]
    so = (s + (2 if k == 3 else 0) - k) // 2 + 1
    return _row(op, [("x", x)], attrs), [x, (n, c, so, so)]


_GEN = {"linear": gen_linear, "bmm": gen_bmm, "conv": gen_conv,
        "dwconv": lambda rng, big: gen_conv(rng, big, True), "elemwise": gen_elemwise,
        "norm": gen_norm, "softmax": gen_softmax, "pool": gen_pool}


def generate(n_per_family, seed=1, big=True, max_bytes=2 << 30, esize=4, families=FAMILIES):
    """Plan rows (dicts with op_kind, op_type, batch, inputs, attrs), families interleaved
    round-robin, no duplicate (op_type, inputs, attrs), every configuration's tensors within
    max_bytes at esize bytes per element. Deterministic for a seed."""
    rng = random.Random(seed)
    per = {f: [] for f in families}
    seen = set()
    for fam in families:
        tries = 0
        while len(per[fam]) < n_per_family and tries < 50 * n_per_family:
            tries += 1
            row, shapes = _GEN[fam](rng, big)
            if _bytes(shapes, esize) > max_bytes:
                continue
            ident = (row["op_type"], row["inputs"], row["attrs"])
            if ident in seen:
                continue
            seen.add(ident)
            per[fam].append(row)
    out = []
    for i in range(n_per_family):
        for fam in families:
            if i < len(per[fam]):
                out.append(per[fam][i])
    return out
