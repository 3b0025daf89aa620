"""opprofile.py: per-operator times of one forward pass (torch.profiler), mapped onto ONNX nodes.

The top-level aten ops of each profiled iteration are listed in call order with their device time
(CUDA kernels of the op and its children; CPU time on the CPU path). Mapping to the ONNX graph is
best-effort: ONNX nodes are walked in file (topological) order and each aten op is matched to the
node whose op_type is one the aten op exports to, by an order-preserving alignment. Ops that export
to several nodes (e.g. GELU as Erf/Mul/Add) match one of them; ops that export to none (or that the
exporter folded away) stay unmatched, except BatchNorm folded into the Conv before it.
"""

import statistics

# aten op -> ONNX op types it exports to (torch.onnx, opset 13-17), first node of a decomposition.
ATEN_TO_ONNX = {
    "conv2d": ("Conv",), "convolution": ("Conv",),
    "conv1d": ("Conv",), "conv3d": ("Conv",), "conv_transpose2d": ("ConvTranspose",),
    "batch_norm": ("BatchNormalization",), "layer_norm": ("LayerNormalization", "ReduceMean"),
    "group_norm": ("InstanceNormalization", "Reshape"), "instance_norm": ("InstanceNormalization",),
    "linear": ("Gemm", "MatMul"), "addmm": ("Gemm",), "matmul": ("MatMul",), "bmm": ("MatMul",),
    "mm": ("MatMul", "Gemm"), "baddbmm": ("MatMul",), "einsum": ("Einsum", "MatMul"),
    "relu": ("Relu",), "relu_": ("Relu",), "relu6": ("Clip",), "hardtanh": ("Clip",),
    "hardtanh_": ("Clip",), "sigmoid": ("Sigmoid",), "sigmoid_": ("Sigmoid",),
    "hardsigmoid": ("HardSigmoid",), "hardsigmoid_": ("HardSigmoid",),
    "hardswish": ("HardSwish",), "hardswish_": ("HardSwish",), "silu": ("Sigmoid", "Mul"),
    "silu_": ("Sigmoid", "Mul"), "gelu": ("Gelu", "Div", "Erf", "Mul"), "tanh": ("Tanh",),
    "add": ("Add",), "add_": ("Add",), "mul": ("Mul",), "mul_": ("Mul",), "sub": ("Sub",),
    "div": ("Div",), "pow": ("Pow",), "sqrt": ("Sqrt",), "exp": ("Exp",), "neg": ("Neg",),
    "max_pool2d": ("MaxPool",), "avg_pool2d": ("AveragePool",),
    "adaptive_avg_pool2d": ("GlobalAveragePool", "AveragePool", "ReduceMean"),
    "adaptive_max_pool2d": ("GlobalMaxPool",), "mean": ("ReduceMean", "GlobalAveragePool"),
    "softmax": ("Softmax",), "_softmax": ("Softmax",), "log_softmax": ("LogSoftmax",),
    "cat": ("Concat",), "stack": ("Unsqueeze", "Concat"), "flatten": ("Flatten", "Reshape"),
    "reshape": ("Reshape",), "view": ("Reshape",), "permute": ("Transpose",),
    "transpose": ("Transpose",), "contiguous": (), "dropout": ("Dropout", "Identity"),
    "chunk": ("Split", "Slice"), "split": ("Split", "Slice"), "slice": ("Slice",),
    "select": ("Gather",), "index_select": ("Gather",), "embedding": ("Gather",),
    "pad": ("Pad",), "constant_pad_nd": ("Pad",), "upsample_nearest2d": ("Resize",),
    "upsample_bilinear2d": ("Resize",), "roll": ("Slice", "Concat"), "where": ("Where",),
    "masked_fill": ("Where",), "clamp": ("Clip",), "clamp_min": ("Max", "Clip"),
    "stochastic_depth": (), "scaled_dot_product_attention": ("MatMul",),
    "_native_multi_head_attention": ("MatMul", "Gemm"), "native_layer_norm":
        ("LayerNormalization", "ReduceMean"),
}
_NO_KERNEL_ONNX = {"Constant", "Shape", "Gather_shape", "ConstantOfShape", "Identity"}


def onnx_nodes(path):
    """[(name, op_type)] of an ONNX file in file order; None when the onnx package is missing."""
    try:
        import onnx
    except ImportError:
        return None
    m = onnx.load(path, load_external_data=False)
    return [(n.name or f"{n.op_type}_{i}", n.op_type) for i, n in enumerate(m.graph.node)
            if n.op_type not in _NO_KERNEL_ONNX]


# aten ops that the exporter folds into the node before them (eval-mode BatchNorm after a Conv).
FOLDED_INTO_PREVIOUS = {"batch_norm": ("Conv", "ConvTranspose", "Gemm")}


def _compatible(aten, op_type):
    return op_type in ATEN_TO_ONNX.get(aten.split("::", 1)[-1], ())


def map_to_onnx(aten_ops, nodes):
    """aten_ops: aten names in call order ('aten::conv2d'); nodes: [(name, op_type)] in file order.
    Returns one (node_name, op_type, how) or None per aten op.

    An order-preserving alignment that matches as many ops as possible (longest common
    subsequence under "the op exports to this op_type"; ties go to the earliest node), so one
    stray op cannot push every later match off. how = "op-type"; or "folded" for a BatchNorm that
    has no node of its own, right after an op matched to the Conv/Gemm it was folded into."""
    n, m = len(aten_ops), len(nodes)
    # L[i][j]: most matches between aten_ops[i:] and nodes[j:]
    L = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        Li, Ln = L[i], L[i + 1]
        want = ATEN_TO_ONNX.get(aten_ops[i].split("::", 1)[-1], ())
        for j in range(m - 1, -1, -1):
            best = Ln[j] if Ln[j] > Li[j + 1] else Li[j + 1]
            if nodes[j][1] in want and Ln[j + 1] + 1 > best:
                best = Ln[j + 1] + 1
            Li[j] = best
    out = [None] * n
    i = j = 0
    while i < n and j < m:
        if _compatible(aten_ops[i], nodes[j][1]) and L[i][j] == L[i + 1][j + 1] + 1:
            out[i] = (nodes[j][0], nodes[j][1], "op-type")
            i += 1
            j += 1
        elif L[i][j + 1] == L[i][j]:
            j += 1
        else:
            i += 1
    for k in range(1, n):
        short = aten_ops[k].split("::", 1)[-1]
        prev = out[k - 1]
        if out[k] is None and short in FOLDED_INTO_PREVIOUS and prev is not None and \
                prev[1] in FOLDED_INTO_PREVIOUS[short]:
            out[k] = (prev[0], prev[1], "folded")
    return out


_NEVER_TOP = {"aten::as_strided", "aten::resolve_conj", "aten::resolve_neg"}


def _is_top_level_name(name):
    """aten ops a model calls itself: internal ones (aten::_*, views of views) only ever run
    inside another op, unless the exporter table names them (aten::_softmax, attention)."""
    if not name.startswith("aten::") or name in _NEVER_TOP:
        return False
    short = name[6:]
    return not short.startswith("_") or short in ATEN_TO_ONNX


def _drop_nested(evs):
    """Drops events that start inside the previous kept one (ops of one thread never overlap, so
    such an event is a child): the profiler nests by microsecond time ranges, and a child whose
    range rounds past its parent's can surface as a sibling."""
    out = []
    for e in evs:
        if out and out[-1].time_range.start <= e.time_range.start < out[-1].time_range.end:
            continue
        out.append(e)
    return out


def _dev_time(ev, device):
    if device == "cuda":
        for attr in ("device_time_total", "cuda_time_total"):
            v = getattr(ev, attr, None)
            if v is not None:
                return float(v)
        return 0.0
    return float(ev.cpu_time_total)


def _n_kernels(ev):
    n = len(getattr(ev, "kernels", []) or [])
    for ch in getattr(ev, "cpu_children", []) or []:
        n += _n_kernels(ch)
    return n


def profile_forward(torch, fn, device="cpu", iters=3, warmup=2):
    """Runs fn warmup + iters times, profiling the last iters. Returns one dict per top-level op
    (in call order): aten op, input shapes, median device time over the iterations (us), kernels
    launched. Times are medians over the iterations that show the most common op sequence.
    The profiler's CUDA times of an op include the kernels of the ops it calls."""
    from torch.profiler import ProfilerActivity, profile, record_function
    acts = [ProfilerActivity.CPU]
    if device == "cuda":
        acts.append(ProfilerActivity.CUDA)
    for _ in range(warmup):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    with profile(activities=acts, record_shapes=True) as prof:
        for i in range(iters):
            with record_function(f"pp_iter_{i}"):
                fn()
            if device == "cuda":
                torch.cuda.synchronize()
    evs = prof.events()
    per_iter = []
    for i in range(iters):
        roots = [e for e in evs if e.name == f"pp_iter_{i}"]
        if not roots:
            continue
        kids = sorted(getattr(roots[0], "cpu_children", []) or [],
                      key=lambda e: e.time_range.start)
        kids = _drop_nested([e for e in kids if _is_top_level_name(e.name)])
        if kids and kids[0].name == "aten::empty":
            kids = kids[1:]  # record_function's own handle tensor, allocated on entry
        per_iter.append(kids)
    if not per_iter:
        return []
    # the op sequence most iterations show (the profiler nests by microsecond time ranges, so a
    # child that starts in the microsecond its parent ends can surface at the top in one iteration)
    seqs = [tuple(e.name for e in it) for it in per_iter]
    common = max(set(seqs), key=seqs.count)
    agree = [it for it, sq in zip(per_iter, seqs) if sq == common]
    first = agree[0]
    rows = []
    for k, ev in enumerate(first):
        times = [_dev_time(it[k], device) for it in agree]
        rows.append({"seq": k, "aten_op": ev.name,
                     "input_shapes": ";".join("x".join(str(d) for d in s) if s else "-"
                                              for s in (ev.input_shapes or [])),
                     "time_us": statistics.median(times),
                     "n_kernels": _n_kernels(ev) if device == "cuda" else "",
                     "iterations": len(agree)})
    return rows
