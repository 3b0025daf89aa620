"""layers.py: one ONNX node, as a layer row of docs/measurements.md describes it, rebuilt in PyTorch.

Parses the `inputs` (x:/w: dims, `-` for an omitted input) and `attrs` (name:type=value) columns
exactly as measure/measurements.c does, classifies the op kind the way graph/features.c does, and
returns a zero-argument callable that runs the node eagerly on random inputs (fp32 or fp16).
"""

import math
import re

NAME_RE = re.compile(r"^[A-Za-z0-9_.+-]+$")
_DIMS_RE = re.compile(r"^[0-9]+(x[0-9]+)*$")


class LayerError(ValueError):
    """A row that cannot be parsed or built (unsupported op, bad attribute, impossible shape)."""


# ------------------------------------------------------------------------------- parsing ----

def parse_dims(text):
    """'8x512x768' -> (8, 512, 768); 'scalar' -> (); strict: every dim an integer >= 1."""
    if text == "scalar":
        return ()
    if not _DIMS_RE.match(text):
        raise LayerError(f"bad dims {text!r} (want e.g. 8x512x768 or scalar)")
    dims = tuple(int(d) for d in text.split("x"))
    if any(d < 1 for d in dims):
        raise LayerError(f"dims {text!r}: every dim must be >= 1")
    if len(dims) > 8:
        raise LayerError(f"dims {text!r}: rank above 8")
    return dims


def format_dims(dims):
    return "scalar" if len(dims) == 0 else "x".join(str(int(d)) for d in dims)


# Operators whose first input may be a weight (a ViT's class token joined before the patch
# tokens): one of the inputs must still be an activation (measure/measurements.c, the same rule).
WEIGHT_FIRST_OK = frozenset({"Concat"})
# A row's inputs in all (PP_LAYER_MAX_ALL_INPUTS in C): a DenseNet Concat joins up to 49.
MAX_INPUTS = 64


def parse_inputs(text, op_type=None):
    """'x:1x64x56x56;w:64x64x3x3;-' -> [('x', (1,64,56,56)), ('w', (64,64,3,3)), ('-', None)].
    The first input must be an activation, except for op_type in WEIGHT_FIRST_OK."""
    if not text:
        raise LayerError("empty inputs")
    out = []
    for i, part in enumerate(text.split(";")):
        if part == "-":
            out.append(("-", None))
            continue
        if len(part) < 3 or part[0] not in "xw" or part[1] != ":":
            raise LayerError(f"input {i + 1} {part!r} is not x:<dims>, w:<dims> or -")
        out.append((part[0], parse_dims(part[2:])))
    if len(out) > MAX_INPUTS:
        raise LayerError(f"more than {MAX_INPUTS} inputs")
    if out[0][0] != "x":
        if op_type not in WEIGHT_FIRST_OK:
            raise LayerError("first input must be an activation (x:...)")
        if not any(r == "x" for r, _ in out):
            raise LayerError(f"{op_type}: no input is an activation (x:...)")
    return out


def format_inputs(inputs):
    return ";".join("-" if r == "-" else f"{r}:{format_dims(d)}" for r, d in inputs)


def _parse_num(text, is_int, name):
    try:
        if is_int:
            if not re.match(r"^[+-]?[0-9]+$", text):
                raise ValueError
            return int(text)
        v = float(text)
        if math.isnan(v) or math.isinf(v):
            raise ValueError
        return v
    except ValueError:
        raise LayerError(f"attribute {name}: bad {'int' if is_int else 'float'} {text!r}")


def parse_attrs(text):
    """'kernel_shape:ints=3,3;group:i=1;mode:s=linear' -> ordered dict of Python values."""
    attrs = {}
    if not text:
        return attrs
    for i, part in enumerate(text.split(";")):
        if not part:
            raise LayerError(f"attribute {i + 1} empty")
        colon, eq = part.find(":"), part.find("=")
        if colon < 0 or eq < 0 or eq < colon:
            raise LayerError(f"attribute {part!r} is not name:type=value")
        name, typ, val = part[:colon], part[colon + 1:eq], part[eq + 1:]
        if not NAME_RE.match(name):
            raise LayerError(f"attribute name {name!r} (allowed: letters, digits, _ . - +)")
        if name in attrs:
            raise LayerError(f"attribute {name} given twice")
        if typ == "i":
            attrs[name] = _parse_num(val, True, name)
        elif typ == "f":
            attrs[name] = _parse_num(val, False, name)
        elif typ == "s":
            if not NAME_RE.match(val):
                raise LayerError(f"attribute {name}: string {val!r} (allowed: letters, digits, _ . - +)")
            attrs[name] = val
        elif typ in ("ints", "floats"):
            items = val.split(",")
            if any(not x for x in items):
                raise LayerError(f"attribute {name}: bad list {val!r}")
            if len(items) > 8:
                raise LayerError(f"attribute {name}: more than 8 values")
            attrs[name] = [_parse_num(x, typ == "ints", name) for x in items]
        else:
            raise LayerError(f"attribute {name}: unknown type {typ!r} (i, f, s, ints, floats)")
    if len(attrs) > 8:
        raise LayerError("more than 8 attributes")
    return attrs


def _fmt_float(v):
    r = repr(float(v))
    return r[:-2] if r.endswith(".0") else r


def format_attrs(attrs):
    parts = []
    for name, v in attrs.items():
        if isinstance(v, bool):
            raise LayerError(f"attribute {name}: bool is not an ONNX attribute type")
        if isinstance(v, int):
            parts.append(f"{name}:i={v}")
        elif isinstance(v, float):
            parts.append(f"{name}:f={_fmt_float(v)}")
        elif isinstance(v, str):
            parts.append(f"{name}:s={v}")
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, int) for x in v):
            parts.append(f"{name}:ints=" + ",".join(str(x) for x in v))
        elif isinstance(v, (list, tuple)) and v:
            parts.append(f"{name}:floats=" + ",".join(_fmt_float(x) for x in v))
        else:
            raise LayerError(f"attribute {name}: cannot format {v!r}")
    return ";".join(parts)


# ------------------------------------------------------------------------------ op kinds ----

_KIND = {
    "ConvTranspose": "convt", "Gemm": "linear",
    "MaxPool": "pool", "AveragePool": "pool", "LpPool": "pool",
    "GlobalAveragePool": "globalpool", "GlobalMaxPool": "globalpool", "GlobalLpPool": "globalpool",
    "BatchNormalization": "norm", "LayerNormalization": "norm", "InstanceNormalization": "norm",
    "GroupNormalization": "norm", "MeanVarianceNormalization": "norm", "LpNormalization": "norm",
    "LRN": "norm", "Softmax": "softmax", "LogSoftmax": "softmax",
    "ReduceMean": "reduce", "ReduceSum": "reduce", "ReduceMax": "reduce", "ReduceMin": "reduce",
    "ReduceProd": "reduce", "ReduceLogSum": "reduce", "ReduceL1": "reduce", "ReduceL2": "reduce",
    "ReduceSumSquare": "reduce", "ReduceLogSumExp": "reduce",
    "Transpose": "datamove", "Concat": "datamove", "Slice": "datamove", "Split": "datamove",
    "Gather": "datamove", "GatherElements": "datamove", "Pad": "datamove", "Expand": "datamove",
    "Tile": "datamove", "DepthToSpace": "datamove", "SpaceToDepth": "datamove",
    "ArgMax": "datamove", "ArgMin": "datamove", "TopK": "datamove", "CumSum": "datamove",
    "Resize": "datamove", "Upsample": "datamove",
    "Reshape": "reshape", "Flatten": "reshape", "Squeeze": "reshape", "Unsqueeze": "reshape",
    "Identity": "reshape", "Dropout": "reshape",
}


def op_kind(op_type, inputs, attrs):
    """The op kind graph/features.c assigns to this node (names of pp_op_kind_name)."""
    if op_type == "Conv":
        x = inputs[0][1]
        group = attrs.get("group", 1)
        if x is None or len(x) < 2:
            raise LayerError("Conv needs an input of rank >= 2")
        return "dwconv" if group == x[1] and group > 1 else "conv"
    if op_type == "MatMul":
        if len(inputs) < 2 or inputs[1][0] == "-":
            raise LayerError("MatMul needs two inputs")
        return "linear" if inputs[1][0] == "w" else "bmm"
    return _KIND.get(op_type, "elemwise")


# ----------------------------------------------------------------------------- building ----

def _onnx_dtype_to_torch(torch, code):
    table = {1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32,
             7: torch.int64, 9: torch.bool, 10: torch.float16, 11: torch.float64,
             16: torch.bfloat16}
    if code not in table:
        raise LayerError(f"Cast to ONNX dtype {code} is not supported")
    return table[code]


def _norm_axis(axis, rank, what):
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise LayerError(f"{what}: axis {axis} out of range for rank {rank}")
    return a


def _window(attrs, nsp, kernel):
    """(strides, dilations, pads_begin, pads_end) of a Conv/Pool from ONNX attributes."""
    strides = list(attrs.get("strides", [1] * nsp))
    dil = list(attrs.get("dilations", [1] * nsp))
    pads = list(attrs.get("pads", [0] * (2 * nsp)))
    if len(strides) != nsp or len(dil) != nsp or len(pads) != 2 * nsp or len(kernel) != nsp:
        raise LayerError(f"window attributes do not match {nsp} spatial dims")
    return strides, dil, pads[:nsp], pads[nsp:]


def _auto_pads(attrs, in_sp, kernel, strides, dil, pb, pe):
    ap = attrs.get("auto_pad", "NOTSET")
    if ap in ("NOTSET",):
        return pb, pe
    if ap == "VALID":
        return [0] * len(kernel), [0] * len(kernel)
    if ap not in ("SAME_UPPER", "SAME_LOWER"):
        raise LayerError(f"unsupported auto_pad {ap!r}")
    b, e = [], []
    for i, k in enumerate(kernel):
        out = -(-in_sp[i] // strides[i])
        span = (k - 1) * dil[i] + 1
        total = max(0, (out - 1) * strides[i] + span - in_sp[i])
        small, big = total // 2, total - total // 2
        b.append(small if ap == "SAME_UPPER" else big)
        e.append(big if ap == "SAME_UPPER" else small)
    return b, e


def _torch_pad_list(pb, pe):
    """ONNX per-axis (begin, end) -> F.pad order (last axis first)."""
    out = []
    for i in reversed(range(len(pb))):
        out += [pb[i], pe[i]]
    return out


class _Bench:
    """A built layer: call it to run the node once. nbytes: bytes of tensors it holds."""
    __slots__ = ("fn", "nbytes", "tensors")

    def __init__(self, fn, tensors):
        self.fn = fn
        self.tensors = tensors
        self.nbytes = sum(t.numel() * t.element_size() for t in tensors)

    def __call__(self):
        return self.fn()


def build_layer(op_type, inputs, attrs, torch, device="cpu", dtype=None, seed=0):
    """Returns a callable running the node once on random inputs (fp32 unless dtype is given).

    Data-movement ops (Transpose, Expand, Slice, ...) produce a dense output, as an ONNX runtime
    does; Reshape-kind ops (Reshape, Flatten, Squeeze, ...) stay views, as in PyTorch eager.
    Values that ONNX passes as inputs in recent opsets (Reshape shape, Slice starts/ends/axes/steps,
    Pad pads, Resize scales/sizes, Split split, Tile repeats, Expand shape, Reduce* axes,
    Squeeze/Unsqueeze axes, Clip min/max) must be given as attributes of the same name: a row holds
    only the shapes of inputs, never their values.
    """
    F = torch.nn.functional
    dtype = dtype or torch.float32
    gen = torch.Generator(device="cpu").manual_seed(int(seed) & 0x7FFFFFFFFFFFFFFF)
    held = []

    def rand(shape, dt=None):
        dt = dt or dtype
        t = torch.randn(tuple(shape), generator=gen, dtype=torch.float32)
        t = t.to(device=device, dtype=dt)
        held.append(t)
        return t

    def pos(shape):  # strictly positive values (variances, Sqrt/Log inputs, Pow bases)
        t = torch.rand(tuple(shape), generator=gen, dtype=torch.float32) + 0.5
        t = t.to(device=device, dtype=dtype)
        held.append(t)
        return t

    ins = list(inputs)
    n_given = len(ins)

    def inp(i):
        if i >= n_given or ins[i][0] == "-":
            return None
        return ins[i][1]

    x_shape = inp(0)
    if x_shape is None:
        raise LayerError(f"{op_type}: first input missing")
    A = attrs
    op = op_type

    # ------------------------------------------------------------------- convolutions ----
    if op in ("Conv", "ConvTranspose"):
        w_shape = inp(1)
        if w_shape is None or len(w_shape) != len(x_shape) or len(x_shape) not in (3, 4, 5):
            raise LayerError(f"{op}: needs X and W of equal rank 3..5")
        nsp = len(x_shape) - 2
        kernel = list(A.get("kernel_shape", list(w_shape[2:])))
        if kernel != list(w_shape[2:]):
            raise LayerError(f"{op}: kernel_shape {kernel} differs from W {list(w_shape[2:])}")
        strides, dil, pb, pe = _window(A, nsp, kernel)
        group = int(A.get("group", 1))
        x, w = rand(x_shape), rand(w_shape)
        b = rand(inp(2)) if inp(2) is not None else None
        if op == "Conv":
            if w_shape[1] * group != x_shape[1]:
                raise LayerError("Conv: W channels * group != input channels")
            pb, pe = _auto_pads(A, x_shape[2:], kernel, strides, dil, pb, pe)
            conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nsp]
            if pb == pe:
                return _Bench(lambda: conv(x, w, b, strides, pb, dil, group), held)
            padv = _torch_pad_list(pb, pe)
            return _Bench(lambda: conv(F.pad(x, padv), w, b, strides, 0, dil, group), held)
        if w_shape[0] != x_shape[1]:
            raise LayerError("ConvTranspose: W rows != input channels")
        if A.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            raise LayerError("ConvTranspose: SAME auto_pad is not supported")
        if A.get("auto_pad") == "VALID":
            pb = pe = [0] * nsp
        if pb != pe:
            raise LayerError("ConvTranspose: asymmetric pads are not supported")
        opad = list(A.get("output_padding", [0] * nsp))
        if "output_shape" in A:
            raise LayerError("ConvTranspose: output_shape is not supported; give pads/output_padding")
        convt = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nsp]
        return _Bench(lambda: convt(x, w, b, strides, pb, opad, group, dil), held)

    # ------------------------------------------------------------------ matrix products ----
    if op == "Gemm":
        a_s, b_s = x_shape, inp(1)
        if b_s is None or len(a_s) != 2 or len(b_s) != 2:
            raise LayerError("Gemm: A and B must be 2-D")
        ta, tb = int(A.get("transA", 0)), int(A.get("transB", 0))
        alpha, beta = float(A.get("alpha", 1.0)), float(A.get("beta", 1.0))
        a, bm = rand(a_s), rand(b_s)
        c = rand(inp(2)) if inp(2) is not None else None
        k_a = a_s[0] if ta else a_s[1]
        k_b = b_s[1] if tb else b_s[0]
        if k_a != k_b:
            raise LayerError(f"Gemm: reduction dims differ ({k_a} vs {k_b})")
        if not ta and tb and alpha == 1.0 and beta == 1.0 and (c is None or c.dim() == 1):
            return _Bench(lambda: F.linear(a, bm, c), held)  # nn.Linear's path
        aa = (lambda: a.t()) if ta else (lambda: a)
        bb = (lambda: bm.t()) if tb else (lambda: bm)
        if c is None:
            if alpha == 1.0:
                return _Bench(lambda: torch.mm(aa(), bb()), held)
            return _Bench(lambda: torch.mm(aa(), bb()) * alpha, held)
        return _Bench(lambda: torch.addmm(c, aa(), bb(), beta=beta, alpha=alpha), held)
    if op == "MatMul":
        b_s = inp(1)
        if b_s is None:
            raise LayerError("MatMul needs two inputs")
        a, bm = rand(x_shape), rand(b_s)
        try:
            torch.broadcast_shapes(tuple(x_shape[:-2]), tuple(b_s[:-2]))
        except RuntimeError as e:
            raise LayerError(f"MatMul: {e}")
        if len(x_shape) >= 1 and len(b_s) >= 2 and x_shape[-1] != b_s[-2]:
            raise LayerError("MatMul: inner dims differ")
        return _Bench(lambda: torch.matmul(a, bm), held)

    # ------------------------------------------------------------------------- pooling ----
    if op in ("MaxPool", "AveragePool", "LpPool"):
        nsp = len(x_shape) - 2
        if nsp not in (1, 2, 3) or "kernel_shape" not in A:
            raise LayerError(f"{op}: needs rank 3..5 input and kernel_shape")
        kernel = list(A["kernel_shape"])
        strides, dil, pb, pe = _window(A, nsp, kernel)
        pb, pe = _auto_pads(A, x_shape[2:], kernel, strides, dil, pb, pe)
        ceil = bool(A.get("ceil_mode", 0))
        x = rand(x_shape)
        sym = pb == pe and all(2 * p <= k for p, k in zip(pb, kernel))
        if op == "MaxPool":
            pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nsp]
            if sym:
                return _Bench(lambda: pool(x, kernel, strides, pb, dil, ceil), held)
            padv = _torch_pad_list(pb, pe)
            return _Bench(lambda: pool(F.pad(x, padv, value=-math.inf), kernel, strides, 0, dil,
                                       ceil), held)
        if any(d != 1 for d in dil):
            raise LayerError(f"{op}: dilations are not supported")
        if op == "LpPool":
            p = float(A.get("p", 2))
            lp = {1: F.lp_pool1d, 2: F.lp_pool2d}.get(nsp)
            if lp is None or any(pb) or any(pe):
                raise LayerError("LpPool: only 1-D/2-D without padding")
            return _Bench(lambda: lp(x, p, kernel, strides, ceil), held)
        cip = bool(A.get("count_include_pad", 0))
        pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[nsp]
        if sym:
            return _Bench(lambda: pool(x, kernel, strides, pb, ceil, cip), held)
        padv = _torch_pad_list(pb, pe)
        return _Bench(lambda: pool(F.pad(x, padv), kernel, strides, 0, ceil, True), held)
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        nsp = len(x_shape) - 2
        if nsp not in (1, 2, 3):
            raise LayerError(f"{op}: needs rank 3..5 input")
        x = rand(x_shape)
        if op == "GlobalAveragePool":
            pool = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[nsp]
        else:
            pool = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[nsp]
        return _Bench(lambda: pool(x, 1), held)

    # ------------------------------------------------------------------- normalization ----
    if op == "BatchNormalization":
        if len(x_shape) < 2:
            raise LayerError("BatchNormalization: rank >= 2")
        c = x_shape[1]
        x = rand(x_shape)
        sc, bi, mean, var = rand((c,)), rand((c,)), rand((c,)), pos((c,))
        eps = float(A.get("epsilon", 1e-5))
        return _Bench(lambda: F.batch_norm(x, mean, var, sc, bi, False, 0.0, eps), held)
    if op == "LayerNormalization":
        axis = _norm_axis(int(A.get("axis", -1)), len(x_shape), op)
        ns = tuple(x_shape[axis:])
        x = rand(x_shape)
        sc = rand(ns) if inp(1) is not None else None
        bi = rand(ns) if inp(2) is not None else None
        eps = float(A.get("epsilon", 1e-5))
        return _Bench(lambda: F.layer_norm(x, ns, sc, bi, eps), held)
    if op == "InstanceNormalization":
        c = x_shape[1]
        x, sc, bi = rand(x_shape), rand((c,)), rand((c,))
        eps = float(A.get("epsilon", 1e-5))
        return _Bench(lambda: F.instance_norm(x, None, None, sc, bi, True, 0.0, eps), held)
    if op == "GroupNormalization":
        g = int(A.get("num_groups", 0))
        c = x_shape[1]
        if g < 1 or c % g:
            raise LayerError("GroupNormalization: num_groups must divide channels")
        x = rand(x_shape)
        sc = rand((c,)) if inp(1) is not None else None
        bi = rand((c,)) if inp(2) is not None else None
        eps = float(A.get("epsilon", 1e-5))
        return _Bench(lambda: F.group_norm(x, g, sc, bi, eps), held)
    if op in ("Softmax", "LogSoftmax"):
        axis = _norm_axis(int(A.get("axis", -1)), len(x_shape), op)
        x = rand(x_shape)
        f = F.softmax if op == "Softmax" else F.log_softmax
        return _Bench(lambda: f(x, axis), held)
    if op == "LRN":
        size = int(A.get("size", 5))
        x = rand(x_shape)
        return _Bench(lambda: F.local_response_norm(x, size, float(A.get("alpha", 1e-4)),
                                                    float(A.get("beta", 0.75)),
                                                    float(A.get("bias", 1.0))), held)

    # ---------------------------------------------------------------------- reductions ----
    if op.startswith("Reduce"):
        rank = len(x_shape)
        axes = A.get("axes")
        axes = list(range(rank)) if axes is None else [_norm_axis(a, rank, op) for a in axes]
        keep = bool(A.get("keepdims", 1))
        x = rand(x_shape) if op not in ("ReduceLogSum", "ReduceProd") else pos(x_shape)
        red = {
            "ReduceMean": lambda: torch.mean(x, axes, keep),
            "ReduceSum": lambda: torch.sum(x, axes, keep),
            "ReduceMax": lambda: torch.amax(x, axes, keep),
            "ReduceMin": lambda: torch.amin(x, axes, keep),
            "ReduceL2": lambda: torch.linalg.vector_norm(x, 2, axes, keep),
            "ReduceL1": lambda: torch.linalg.vector_norm(x, 1, axes, keep),
            "ReduceSumSquare": lambda: torch.sum(x * x, axes, keep),
            "ReduceLogSumExp": lambda: torch.logsumexp(x, axes, keep),
            "ReduceLogSum": lambda: torch.log(torch.sum(x, axes, keep)),
        }.get(op)
        if red is None:
            raise LayerError(f"{op} is not supported")
        return _Bench(red, held)

    # ------------------------------------------------------------------- data movement ----
    if op == "Transpose":
        perm = list(A.get("perm", list(reversed(range(len(x_shape))))))
        if sorted(perm) != list(range(len(x_shape))):
            raise LayerError(f"Transpose: bad perm {perm}")
        x = rand(x_shape)
        return _Bench(lambda: x.permute(perm).contiguous(), held)
    if op == "Concat":
        if "axis" not in A:
            raise LayerError("Concat: axis attribute required")
        shapes = [d for r, d in ins if r != "-"]
        axis = _norm_axis(int(A["axis"]), len(x_shape), op)
        for s in shapes:
            if len(s) != len(x_shape) or any(s[i] != x_shape[i] for i in range(len(s)) if i != axis):
                raise LayerError("Concat: inputs differ outside the axis")
        ts = [rand(s) for s in shapes]
        return _Bench(lambda: torch.cat(ts, axis), held)
    if op == "Split":
        axis = _norm_axis(int(A.get("axis", 0)), len(x_shape), op)
        if "split" in A:
            parts = list(A["split"])
        elif "num_outputs" in A:
            n = int(A["num_outputs"])
            size = -(-x_shape[axis] // n)
            parts = [size] * (n - 1) + [x_shape[axis] - size * (n - 1)]
        else:
            raise LayerError("Split: give split or num_outputs as an attribute")
        if sum(parts) != x_shape[axis]:
            raise LayerError("Split: parts do not sum to the axis length")
        x = rand(x_shape)
        return _Bench(lambda: [p.contiguous() for p in torch.split(x, parts, axis)], held)
    if op == "Slice":
        if "starts" not in A or "ends" not in A:
            raise LayerError("Slice: give starts and ends as attributes")
        rank = len(x_shape)
        axes = [_norm_axis(a, rank, op) for a in A.get("axes", list(range(len(A["starts"]))))]
        steps = list(A.get("steps", [1] * len(axes)))
        idx = [slice(None)] * rank
        for a, s, e, st in zip(axes, A["starts"], A["ends"], steps):
            if st < 1:
                raise LayerError("Slice: only positive steps are supported")
            idx[a] = slice(s, min(e, x_shape[a]) if e > 0 else e, st)
        idx = tuple(idx)
        x = rand(x_shape)
        return _Bench(lambda: x[idx].contiguous(), held)
    if op == "Gather":
        ind_shape = inp(1)
        if ind_shape is None:
            raise LayerError("Gather: indices input missing")
        axis = _norm_axis(int(A.get("axis", 0)), len(x_shape), op)
        x = rand(x_shape)
        ind = torch.randint(0, x_shape[axis], tuple(ind_shape), generator=gen).to(device)
        held.append(ind)
        out_shape = tuple(x_shape[:axis]) + tuple(ind_shape) + tuple(x_shape[axis + 1:])
        flat = ind.reshape(-1)
        return _Bench(lambda: torch.index_select(x, axis, flat).reshape(out_shape), held)
    if op == "Pad":
        if "pads" not in A:
            raise LayerError("Pad: give pads as an attribute")
        pads = list(A["pads"])
        r = len(x_shape)
        if len(pads) != 2 * r or any(p < 0 for p in pads):
            raise LayerError("Pad: pads must be 2*rank non-negative values")
        mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}.get(
            A.get("mode", "constant"))
        if mode is None:
            raise LayerError(f"Pad: mode {A.get('mode')!r}")
        padv = _torch_pad_list(pads[:r], pads[r:])
        x = rand(x_shape)
        if mode == "constant":
            while len(padv) > 2 and padv[-1] == 0 and padv[-2] == 0:
                padv = padv[:-2]  # leading axes without padding
            val = float(A.get("value", 0.0))
            return _Bench(lambda: F.pad(x, padv, "constant", val), held)
        if r < 3 or any(pads[i] or pads[r + i] for i in range(2)):
            raise LayerError(f"Pad: mode {A.get('mode')} pads spatial axes of N, C, ... only")
        padv = padv[:2 * (r - 2)]
        return _Bench(lambda: F.pad(x, padv, mode), held)
    if op == "Expand":
        if "shape" not in A:
            raise LayerError("Expand: give shape as an attribute")
        shape = tuple(A["shape"])
        x = rand(x_shape)
        out = torch.broadcast_shapes(tuple(x_shape), shape)
        return _Bench(lambda: x.expand(out).contiguous(), held)
    if op == "Tile":
        if "repeats" not in A:
            raise LayerError("Tile: give repeats as an attribute")
        reps = tuple(A["repeats"])
        x = rand(x_shape)
        return _Bench(lambda: x.repeat(reps), held)
    if op in ("Resize", "Upsample"):
        mode = A.get("mode", "nearest")
        nsp = len(x_shape) - 2
        if nsp not in (1, 2, 3):
            raise LayerError(f"{op}: rank 3..5 input")
        if "sizes" in A:
            sizes = list(A["sizes"])[2:] if len(A["sizes"]) == len(x_shape) else list(A["sizes"])
            kw = {"size": sizes}
        elif "scales" in A:
            sc = list(A["scales"])
            if len(sc) == len(x_shape):
                if sc[0] != 1 or sc[1] != 1:
                    raise LayerError(f"{op}: scaling batch or channels is not supported")
                sc = sc[2:]
            kw = {"scale_factor": sc}
        else:
            raise LayerError(f"{op}: give scales or sizes as an attribute")
        if mode == "nearest":
            tm = "nearest"
        elif mode == "linear":
            tm = {1: "linear", 2: "bilinear", 3: "trilinear"}[nsp]
        elif mode == "cubic" and nsp == 2:
            tm = "bicubic"
        else:
            raise LayerError(f"{op}: mode {mode!r}")
        ctm = A.get("coordinate_transformation_mode", "half_pixel")
        if tm != "nearest":
            kw["align_corners"] = ctm == "align_corners"
        x = rand(x_shape)
        return _Bench(lambda: F.interpolate(x, mode=tm, **kw), held)
    if op == "DepthToSpace":
        bs = int(A.get("blocksize", 0))
        if bs < 1 or len(x_shape) != 4 or x_shape[1] % (bs * bs):
            raise LayerError("DepthToSpace: needs NCHW input and a blocksize dividing C")
        if A.get("mode", "DCR") == "DCR":
            # PyTorch's pixel_shuffle is the CRD ordering; DCR is a permute + copy
            x = rand(x_shape)
            n, c, h, w = x_shape
            return _Bench(lambda: x.reshape(n, bs, bs, c // (bs * bs), h, w)
                          .permute(0, 3, 4, 1, 5, 2).reshape(n, c // (bs * bs), h * bs, w * bs),
                          held)
        x = rand(x_shape)
        return _Bench(lambda: F.pixel_shuffle(x, bs), held)
    if op == "SpaceToDepth":
        bs = int(A.get("blocksize", 0))
        x = rand(x_shape)
        return _Bench(lambda: F.pixel_unshuffle(x, bs), held)
    if op in ("ArgMax", "ArgMin"):
        axis = _norm_axis(int(A.get("axis", 0)), len(x_shape), op)
        keep = bool(A.get("keepdims", 1))
        x = rand(x_shape)
        f = torch.argmax if op == "ArgMax" else torch.argmin
        return _Bench(lambda: f(x, axis, keep), held)
    if op == "CumSum":
        axis = int(A.get("axis", 0))
        axis = _norm_axis(axis, len(x_shape), op)
        x = rand(x_shape)
        return _Bench(lambda: torch.cumsum(x, axis), held)

    # ---------------------------------------------------------------- views (no kernel) ----
    if op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"):
        x = rand(x_shape)
        if op == "Reshape":
            if "shape" not in A:
                raise LayerError("Reshape: give shape as an attribute")
            shape = [x_shape[i] if s == 0 and not A.get("allowzero", 0) else s
                     for i, s in enumerate(A["shape"])]
            return _Bench(lambda: x.reshape(shape), held)
        if op == "Flatten":
            axis = int(A.get("axis", 1))
            axis = axis + len(x_shape) if axis < 0 else axis
            lead = math.prod(x_shape[:axis])
            return _Bench(lambda: x.reshape(lead, -1), held)
        if op == "Squeeze":
            axes = A.get("axes")
            if axes is None:
                return _Bench(lambda: x.squeeze(), held)
            axes = sorted((_norm_axis(a, len(x_shape), op) for a in axes), reverse=True)

            def sq():
                y = x
                for a in axes:
                    y = y.squeeze(a)
                return y
            return _Bench(sq, held)
        if op == "Unsqueeze":
            if "axes" not in A:
                raise LayerError("Unsqueeze: give axes as an attribute")
            r_out = len(x_shape) + len(A["axes"])
            axes = sorted(_norm_axis(a, r_out, op) for a in A["axes"])

            def usq():
                y = x
                for a in axes:
                    y = y.unsqueeze(a)
                return y
            return _Bench(usq, held)
        return _Bench(lambda: x.view_as(x), held)  # Identity / inference Dropout

    # -------------------------------------------------------------------- element-wise ----
    unary = {
        "Relu": lambda t: torch.relu(t), "Sigmoid": lambda t: torch.sigmoid(t),
        "Tanh": lambda t: torch.tanh(t), "Exp": lambda t: torch.exp(t),
        "Abs": lambda t: torch.abs(t), "Neg": lambda t: torch.neg(t),
        "Erf": lambda t: torch.erf(t), "Reciprocal": lambda t: torch.reciprocal(t),
        "Floor": lambda t: torch.floor(t), "Ceil": lambda t: torch.ceil(t),
        "Round": lambda t: torch.round(t), "Sign": lambda t: torch.sign(t),
        "Sin": lambda t: torch.sin(t), "Cos": lambda t: torch.cos(t),
        "Softsign": lambda t: F.softsign(t), "Softplus": lambda t: F.softplus(t),
        "Mish": lambda t: F.mish(t), "HardSwish": lambda t: F.hardswish(t),
        "Selu": lambda t: F.selu(t),
    }
    positive_unary = {"Log": torch.log, "Sqrt": torch.sqrt}
    if op in unary:
        x = rand(x_shape)
        f = unary[op]
        return _Bench(lambda: f(x), held)
    if op in positive_unary:
        x = pos(x_shape)
        f = positive_unary[op]
        return _Bench(lambda: f(x), held)
    if op == "Gelu":
        approx = A.get("approximate", "none")
        if approx not in ("none", "tanh"):
            raise LayerError(f"Gelu: approximate {approx!r}")
        x = rand(x_shape)
        return _Bench(lambda: F.gelu(x, approximate=approx), held)
    if op == "LeakyRelu":
        x, a = rand(x_shape), float(A.get("alpha", 0.01))
        return _Bench(lambda: F.leaky_relu(x, a), held)
    if op == "Elu":
        x, a = rand(x_shape), float(A.get("alpha", 1.0))
        return _Bench(lambda: F.elu(x, a), held)
    if op == "Celu":
        x, a = rand(x_shape), float(A.get("alpha", 1.0))
        return _Bench(lambda: F.celu(x, a), held)
    if op == "HardSigmoid":
        x = rand(x_shape)
        alpha, beta = float(A.get("alpha", 0.2)), float(A.get("beta", 0.5))
        if abs(alpha - 1 / 6) < 1e-6 and beta == 0.5:
            return _Bench(lambda: F.hardsigmoid(x), held)
        return _Bench(lambda: torch.clamp(x * alpha + beta, 0.0, 1.0), held)
    if op == "Clip":
        x = rand(x_shape)
        lo, hi = A.get("min"), A.get("max")
        if (inp(1) is not None and lo is None) or (inp(2) is not None and hi is None):
            raise LayerError("Clip: give min/max values as attributes")
        if lo is not None and hi is not None and float(lo) == 0.0 and float(hi) == 6.0:
            return _Bench(lambda: F.relu6(x), held)  # what torchvision's ReLU6 runs
        lo = None if lo is None else float(lo)
        hi = None if hi is None else float(hi)
        return _Bench(lambda: torch.clamp(x, lo, hi), held)
    if op == "PRelu":
        s = inp(1)
        if s is None:
            raise LayerError("PRelu: slope input missing")
        x, sl = rand(x_shape), rand(s)
        # ONNX slope broadcasts unidirectionally; F.prelu wants [C] for NCHW inputs
        if len(s) >= 2 and len(x_shape) >= 2 and math.prod(s) == x_shape[1]:
            slc = sl.reshape(-1)
            return _Bench(lambda: F.prelu(x, slc), held)
        return _Bench(lambda: torch.where(x >= 0, x, x * sl), held)
    if op == "Cast":
        if "to" not in A:
            raise LayerError("Cast: attribute 'to' required")
        x, dt = rand(x_shape), _onnx_dtype_to_torch(torch, int(A["to"]))
        return _Bench(lambda: x.to(dt), held)
    binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
              "Pow": torch.pow, "Max": torch.maximum, "Min": torch.minimum,
              "Equal": torch.eq, "Greater": torch.gt, "Less": torch.lt,
              "GreaterOrEqual": torch.ge, "LessOrEqual": torch.le}
    if op in binary or op in ("Sum", "Mean"):
        shapes = [d for r, d in ins if r != "-"]
        if op in binary and len(shapes) != 2:
            raise LayerError(f"{op}: needs two inputs")
        try:
            torch.broadcast_shapes(*[tuple(s) for s in shapes])
        except RuntimeError as e:
            raise LayerError(f"{op}: {e}")
        if op == "Pow":
            a, b = pos(shapes[0]), rand(shapes[1])
            return _Bench(lambda: torch.pow(a, b), held)
        if op == "Div":
            a, b = rand(shapes[0]), pos(shapes[1])
            return _Bench(lambda: torch.div(a, b), held)
        ts = [rand(s) for s in shapes]
        if op in binary:
            f = binary[op]
            a, b = ts
            return _Bench(lambda: f(a, b), held)

        def variadic():
            y = ts[0]
            for t in ts[1:]:
                y = y + t
            return y / len(ts) if op == "Mean" else y
        return _Bench(variadic, held)
    if op == "Where":
        if inp(1) is None or inp(2) is None:
            raise LayerError("Where: needs condition, X and Y")
        cond = (torch.rand(tuple(x_shape), generator=gen) > 0.5).to(device)
        held.append(cond)
        a, b = rand(inp(1)), rand(inp(2))
        return _Bench(lambda: torch.where(cond, a, b), held)
    raise LayerError(f"op {op!r} is not supported by the PyTorch layer builder")


SUPPORTED_OPS = (
    "Conv ConvTranspose Gemm MatMul MaxPool AveragePool LpPool GlobalAveragePool GlobalMaxPool "
    "BatchNormalization LayerNormalization InstanceNormalization GroupNormalization Softmax "
    "LogSoftmax LRN ReduceMean ReduceSum ReduceMax ReduceMin ReduceL1 ReduceL2 ReduceSumSquare "
    "ReduceLogSumExp ReduceLogSum Transpose Concat Split Slice Gather Pad Expand Tile Resize "
    "Upsample DepthToSpace SpaceToDepth ArgMax ArgMin CumSum Reshape Flatten Squeeze Unsqueeze "
    "Identity Dropout Relu Sigmoid Tanh Exp Abs Neg Erf Reciprocal Floor Ceil Round Sign Sin Cos "
    "Softsign Softplus Mish HardSwish Selu Log Sqrt Gelu LeakyRelu Elu Celu HardSigmoid Clip "
    "PRelu Cast Add Sub Mul Div Pow Max Min Equal Greater Less GreaterOrEqual LessOrEqual Sum "
    "Mean Where").split()
