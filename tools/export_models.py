#!/usr/bin/python3
"""tools/export_models.py: exports the golden ONNX fixtures (torchvision 0.14 classification and
segmentation models, two detection FPN backbones, small BERT/GPT-2-like text models; random
weights) without their weights, and computes independent reference figures for them (parameters
from the ONNX file, MACs from PyTorch forward hooks and patched matmul functions, output shapes
from a PyTorch forward).

Run from the repository root:  /usr/bin/python3 tools/export_models.py
(torch 1.13, torchvision 0.14, onnx 1.12; no network needed: weights=None everywhere.)
Writes tests/fixtures/models/*.onnx, reference.csv and EXPORT_LOG.md (tests/fixtures/models/
README.md, written by hand, explains them).
"""
import argparse
import collections
import csv
import datetime
import functools
import math
import multiprocessing
import os
import platform
import sys
import time
import traceback

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision import models
from torchvision.models import detection, segmentation

OPSET = 17
SEED = 20240601

# ---------------------------------------------------------------------------------------------
# Published torchvision figures (GFLOPS column of the torchvision model tables, which counts
# multiply-accumulates, rounded to 2-3 decimals). Used only as a sanity check of the hook counter;
# the reference column itself is what the hooks count.
PUBLISHED_GMACS = {
    "resnet18": 1.81, "resnet50": 4.09, "vgg16": 15.47, "mobilenet_v2": 0.30,
    "efficientnet_b0": 0.39, "convnext_tiny": 4.46, "vit_b_16": 17.56, "vit_l_16": 61.55,
    "vit_b_32": 4.41, "swin_t": 4.49, "swin_s": 8.74, "swin_b": 15.43, "swin_v2_t": 5.94,
    "maxvit_t": 5.56, "densenet121": 2.83, "regnet_y_128gf": 127.52,
}
# Exact figures the counter must reproduce (self-check; the script fails otherwise).
EXACT_MACS_CHECK = {"vit_b_16": 17563828224}
# Models whose shape-only (meta device) count is repeated on real tensors and must agree.
CROSS_CHECK_REAL = {"resnet18", "squeezenet1_1", "mobilenet_v3_small", "vit_b_32", "bert_mini",
                    "gpt2_mini", "lraspp_mobilenet_v3_large"}


# ------------------------------------------------------------------------- text models -------
class BertMini(nn.Module):
    """BERT-like encoder: word + position embeddings, LayerNorm, post-norm TransformerEncoder with
    GELU, key-padding attention mask derived from token id 0. Input: token ids [batch, seq] int64."""

    def __init__(self, vocab=30522, d=256, layers=4, heads=4, ffn=1024, max_pos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        layer = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.ln(self.word(ids) + self.pos(pos))
        return self.encoder(x, src_key_padding_mask=ids == 0)


class GptBlock(nn.Module):
    def __init__(self, d, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)  # fused q, k, v
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln_1(x)
        q, k, v = self.c_attn(h).split(d, dim=2)
        hd = d // self.heads
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        if self.causal == "tril":
            mask = torch.tril(torch.ones(t, t, device=x.device)).bool()
        else:  # comparison of positions: no Trilu op (opset < 14)
            idx = torch.arange(t, device=x.device)
            mask = idx.unsqueeze(0) <= idx.unsqueeze(1)
        att = torch.where(mask, att, torch.tensor(float("-inf"), dtype=att.dtype))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln_2(x))


class Gpt2Mini(nn.Module):
    """GPT-2-like decoder written by hand: token + position embeddings, pre-norm blocks with fused
    qkv Linear, Split, per-head Transpose/MatMul, causal mask + Where, Softmax, Erf GELU, final
    LayerNorm and an LM head tied to the token embedding. Input: token ids [batch, seq] int64."""

    def __init__(self, vocab=50257, d=256, layers=4, heads=4, max_pos=1024, causal="tril"):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_pos, d)
        self.h = nn.ModuleList([GptBlock(d, heads, causal) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.h:
            x = blk(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied LM head


# --------------------------------------------------------------------- wrapped vision -------
class SegOut(nn.Module):
    """Segmentation models return {"out": ...}; export the "out" map only."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


class FeatureTuple(nn.Module):
    """FPN backbones return an OrderedDict of levels; export them as a tuple in dict order."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return tuple(self.m(x).values())


# --------------------------------------------------------------------------- model list ------
# extra: further input shapes (same file) that get reference rows of their own: they test the
# symbolic batch/seq dims of the text models against independently counted figures.
# n_out: number of model outputs (FPN backbones return one map per level).
Spec = collections.namedtuple(
    "Spec", "file model family build shape dtype opset note check dyn_seq extra n_out",
    defaults=((), 1))


def tv_family(name):
    for fam in ("convnext", "densenet", "efficientnet_v2", "efficientnet", "mnasnet",
                "mobilenet_v2", "mobilenet_v3", "regnet", "resnext", "wide_resnet", "resnet",
                "shufflenet", "squeezenet", "swin_v2", "swin", "maxvit", "vit", "vgg",
                "alexnet", "googlenet", "inception"):
        if name.startswith(fam):
            return fam
    raise ValueError(name)


def tv_resolution(name):
    """Smallest evaluation crop among torchvision 0.14's published weights for the model
    (224 for most; 299 inception_v3; 240..600 efficientnets; 256 swin_v2; 224 for vit_h_14 and
    regnet_y_128gf, whose SWAG_LINEAR weights use 224)."""
    sizes = []
    for w in models.get_model_weights(name):
        cs = getattr(w.transforms(), "crop_size", None)
        if cs:
            sizes.append(cs[0])
    return min(sizes) if sizes else 224


@functools.lru_cache(maxsize=None)
def specs():
    out = []
    for name in models.list_models(module=models):
        r = tv_resolution(name)
        fam = tv_family(name)
        check = "rel0.02" if fam in ("swin", "swin_v2") else "exact"
        out.append(Spec(name + ".onnx", name, fam,
                        (lambda n=name: models.get_model(n, weights=None)),
                        (1, 3, r, r), "float32", OPSET, "torchvision classification", check, False))
    seg = [("fcn_resnet50", "fcn"), ("fcn_resnet101", "fcn"), ("deeplabv3_resnet50", "deeplabv3"),
           ("deeplabv3_mobilenet_v3_large", "deeplabv3"), ("lraspp_mobilenet_v3_large", "lraspp")]
    for name, fam in seg:
        out.append(Spec(name + ".onnx", name, fam,
                        (lambda n=name: SegOut(segmentation.__dict__[n](
                            weights=None, weights_backbone=None, aux_loss=False))),
                        (1, 3, 320, 320), "float32", OPSET, "torchvision segmentation, 'out' map",
                        "exact", False))
    out.append(Spec("fasterrcnn_resnet50_fpn_backbone.onnx", "resnet50_fpn_backbone", "fpn",
                    (lambda: FeatureTuple(detection.backbone_utils.resnet_fpn_backbone(
                        backbone_name="resnet50", weights=None))),
                    (1, 3, 384, 384), "float32", OPSET,
                    "torchvision detection resnet_fpn_backbone (Faster R-CNN backbone)", "exact",
                    False, (), 5))
    out.append(Spec("fasterrcnn_mobilenet_v3_large_fpn_backbone.onnx",
                    "mobilenet_v3_large_fpn_backbone", "fpn",
                    (lambda: FeatureTuple(detection.backbone_utils.mobilenet_backbone(
                        backbone_name="mobilenet_v3_large", weights=None, fpn=True))),
                    (1, 3, 320, 320), "float32", OPSET,
                    "torchvision detection mobilenet_backbone(fpn=True) (FasterRCNN-mobile backbone)",
                    "exact", False, (), 3))
    for op in (17, 13):
        out.append(Spec(f"bert_mini_op{op}.onnx", "bert_mini", "bert", BertMini, (1, 128), "int64",
                        op, "BERT-like encoder L=4 d=256 h=4, key-padding mask", "exact", True,
                        ((4, 64),)))
        causal = "tril" if op >= 14 else "arange"
        out.append(Spec(f"gpt2_mini_op{op}.onnx", "gpt2_mini", "gpt",
                        (lambda c=causal: Gpt2Mini(causal=c)), (1, 128), "int64", op,
                        f"GPT-2-like decoder L=4 d=256 h=4, causal mask via {causal}, tied head",
                        "exact", True, ((2, 200),)))
    return tuple(out)


# ------------------------------------------------------------------ weight decorrelation -----
@torch.no_grad()
def decorrelate(model):
    """Random init leaves many tensors equal (BatchNorm ones/zeros, zero biases, LayerNorm ones);
    the exporter then deduplicates equal constants into Identity nodes, which no real trained model
    shows. Adding a different small constant to every floating tensor makes them all distinct
    (cheaply: no random draws over hundreds of millions of weights); shapes are untouched."""
    tensors = [t for _, t in model.named_parameters() if t.is_floating_point()]
    tensors += [t for _, t in model.named_buffers() if t.is_floating_point()]
    for i, t in enumerate(tensors):
        t.add_(1e-3 + 1e-5 * i)


# ------------------------------------------------------------------------- MAC counting -------
class MacCounter:
    """Counts multiply-accumulates of one forward pass, independently of the ONNX graph.
    Conv2d / ConvTranspose2d: forward hooks on the modules. Linear: F.linear patched (covers
    nn.Linear, nn.MultiheadAttention's in/out projections and swin's direct F.linear calls, each
    once). Attention and other tensor products: torch.matmul / Tensor.matmul / @ / bmm / baddbmm /
    mm / addmm / einsum patched. A re-entrancy guard stops nested counting. Only products that
    depend on the model input count: parameters have requires_grad off and the input (or, for token
    ids, the token embedding table) on, so parameter-only products (swin_v2's position-bias MLP,
    which the exporter folds into a constant) are left out, as they are from the ONNX graph."""

    def __init__(self):
        self.macs = 0
        self.by = collections.Counter()
        self.depth = 0
        self.hook_convs = 0
        self.fn_convs = 0
        self._saved = []
        self._hooks = []

    @staticmethod
    def _dep(*xs):
        return any(isinstance(x, torch.Tensor) and x.requires_grad for x in xs)

    def _add(self, kind, n):
        n = int(n)
        self.macs += n
        self.by[kind] += n

    def _patch(self, obj, attr, kind, fn, tensor_args):
        orig = getattr(obj, attr)
        ctr = self

        def wrapper(*a, **k):
            if ctr.depth:
                return orig(*a, **k)
            ctr.depth += 1
            try:
                out = orig(*a, **k)
            finally:
                ctr.depth -= 1
            ts = tensor_args(a, k)
            if ctr._dep(*ts):
                ctr._add(kind, fn(ts, out))
            return out

        self._saved.append((obj, attr, orig))
        setattr(obj, attr, wrapper)

    def __enter__(self):
        two = lambda a, k: [a[0], a[1]]  # noqa: E731
        mm = lambda ts, out: out.numel() * ts[0].shape[-1]  # noqa: E731
        lin_args = lambda a, k: [a[0], a[1] if len(a) > 1 else k["weight"]]  # noqa: E731
        # y = x W^T (+b): rows * in * out == out.numel() * in_features
        self._patch(F, "linear", "linear", lambda ts, out: out.numel() * ts[1].shape[-1], lin_args)
        for obj in (torch, torch.Tensor):
            self._patch(obj, "matmul", "matmul", mm, two)
            self._patch(obj, "bmm", "matmul", mm, two)
            self._patch(obj, "mm", "matmul", mm, two)
            self._patch(obj, "baddbmm", "matmul", mm, lambda a, k: [a[1], a[2]])
            self._patch(obj, "addmm", "matmul", mm, lambda a, k: [a[1], a[2]])
        self._patch(torch.Tensor, "__matmul__", "matmul", mm, two)
        self._patch(torch.Tensor, "__rmatmul__", "matmul",
                    lambda ts, out: out.numel() * ts[1].shape[-1], two)
        self._patch_einsum()
        # functional convolutions only counted as calls: the hooks count MACs, this cross-checks
        # that no convolution bypasses an nn.Conv2d module.
        for attr in ("conv2d", "conv_transpose2d", "conv1d", "conv3d", "conv_transpose1d",
                     "conv_transpose3d"):
            self._patch_count(attr)
        return self

    def _patch_count(self, attr):
        orig = getattr(F, attr)
        ctr = self

        def wrapper(*a, **k):
            if ctr._dep(a[0]):
                ctr.fn_convs += 1
            return orig(*a, **k)

        self._saved.append((F, attr, orig))
        setattr(F, attr, wrapper)

    def _patch_einsum(self):
        orig = torch.einsum
        ctr = self

        def wrapper(eq, *ops):
            if ctr.depth:
                return orig(eq, *ops)
            ctr.depth += 1
            try:
                out = orig(eq, *ops)
            finally:
                ctr.depth -= 1
            ts = list(ops[0]) if len(ops) == 1 and isinstance(ops[0], (list, tuple)) else list(ops)
            if ctr._dep(*ts):
                # sum over the contracted letters of a product: MACs = product of every letter's size
                lhs = eq.replace(" ", "").split("->")[0]
                terms = lhs.split(",")
                if len(terms) != 2 or "." in lhs:
                    raise RuntimeError("einsum counting handles two explicit operands only: " + eq)
                size = {}
                for term, t in zip(terms, ts):
                    for letter, dim in zip(term, t.shape):
                        size[letter] = dim
                ctr._add("einsum", math.prod(size.values()))
            return out

        self._saved.append((torch, "einsum", orig))
        torch.einsum = wrapper

    def __exit__(self, *exc):
        for obj, attr, orig in reversed(self._saved):
            setattr(obj, attr, orig)
        self._saved.clear()
        for h in self._hooks:
            h.remove()
        self._hooks.clear()
        return False

    def hook(self, model):
        ctr = self

        def conv(m, inp, out):
            x = inp[0]
            if not ctr._dep(x):
                return
            ctr.hook_convs += 1
            kk = math.prod(m.kernel_size)
            if isinstance(m, nn.ConvTranspose2d):
                ctr._add("conv", x.numel() * (m.out_channels // m.groups) * kk)
            else:
                ctr._add("conv", out.numel() * (m.in_channels // m.groups) * kk)

        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
                self._hooks.append(m.register_forward_hook(conv))
            elif isinstance(m, (nn.Conv1d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose3d)):
                raise RuntimeError("MAC counter handles 2-D convolutions only")


def make_input(spec, shape=None, device="cpu"):
    shape = tuple(shape or spec.shape)
    g = torch.Generator().manual_seed(SEED)
    if spec.dtype == "int64":
        x = torch.randint(1, 1000, shape, generator=g, dtype=torch.int64)
    else:
        x = torch.randn(shape, generator=g)
    return x.to(device)


def count_macs(model, spec, shape=None):
    """One forward with the counter active, on whatever device the model is on (the meta device:
    shapes only, no arithmetic). Returns (macs, breakdown, output shapes, number of outputs)."""
    dev = next(model.parameters()).device
    for p in model.parameters():
        p.requires_grad_(False)
    x = make_input(spec, shape, dev)
    if spec.dtype == "int64":
        emb = model.word if isinstance(model, BertMini) else model.wte
        emb.weight.requires_grad_(True)  # token ids cannot carry requires_grad
    else:
        x.requires_grad_(True)
    with torch.enable_grad(), MacCounter() as ctr:
        ctr.hook(model)
        out = model(x)
    if ctr.hook_convs != ctr.fn_convs:
        raise RuntimeError(f"{ctr.fn_convs} functional convolutions but {ctr.hook_convs} "
                           "Conv2d module calls: a convolution bypassed the hooks")
    outs = out if isinstance(out, (tuple, list)) else (out,)
    shapes = ";".join("x".join(str(d) for d in o.shape) for o in outs)
    for p in model.parameters():
        p.requires_grad_(True)
    return ctr.macs, dict(ctr.by), shapes, len(outs)


# --------------------------------------------------------------------- export and stats ------
def export(model, spec, path):
    names = ["output"] if spec.n_out == 1 else [f"output{i}" for i in range(spec.n_out)]
    dyn = {0: "batch", 1: "seq"} if spec.dyn_seq else {0: "batch"}
    axes = {n: dyn for n in ["input"] + names}
    torch.onnx.export(model.eval(), make_input(spec), path, export_params=False,
                      opset_version=spec.opset, do_constant_folding=True, input_names=["input"],
                      output_names=names, dynamic_axes=axes)


def graph_stats(path):
    """Parameter count as the ONNX file declares it: initializers plus graph inputs other than
    the model input "input" (export_params=False turns every weight into a graph input)."""
    g = onnx.load(path).graph
    init_names = {t.name for t in g.initializer}
    params = sum(math.prod(t.dims) for t in g.initializer)
    n_weights = len(g.initializer)
    for vi in g.input:
        if vi.name == "input" or vi.name in init_names:
            continue
        dims = vi.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") for d in dims):
            raise RuntimeError(f"{path}: weight input {vi.name} has a symbolic dim")
        params += math.prod(d.dim_value for d in dims)
        n_weights += 1
    return params, n_weights, len(g.node), len(g.output)


def torch_params(model):
    n = sum(p.numel() for p in model.parameters())
    n += sum(b.numel() for name, b in model.named_buffers()
             if not name.endswith("num_batches_tracked"))
    return n


def process(spec, path):
    """Builds, exports and measures one fixture; returns its reference rows."""
    model = spec.build().eval()
    decorrelate(model)
    if spec.model in CROSS_CHECK_REAL:  # the meta-device count must equal a real forward's
        real = count_macs(model, spec)
    export(model, spec, path)
    params_graph, n_weights, n_nodes, n_graph_out = graph_stats(path)
    ptorch = torch_params(model)
    model = model.to("meta")  # frees the weights; the counting forward needs shapes only
    macs, by, out_shape, n_out = count_macs(model, spec)
    if spec.model in CROSS_CHECK_REAL and real[:3] != (macs, by, out_shape):
        raise RuntimeError(f"meta-device count {macs} differs from real forward {real[0]}")
    if n_out != spec.n_out or n_graph_out != n_out:
        raise RuntimeError(f"{n_out} torch outputs, {n_graph_out} graph outputs, spec {spec.n_out}")
    note = "+".join(k for k in ("conv", "linear", "matmul", "einsum") if by.get(k))
    row = {
        "file": spec.file, "model": spec.model, "family": spec.family, "input_name": "input",
        "input_shape": "x".join(map(str, spec.shape)), "input_dtype": spec.dtype,
        "output_shape": out_shape, "opset": spec.opset, "params_graph": params_graph,
        "params_torch": ptorch, "macs_hooks": macs, "macs_note": note or "none",
        "macs_check": spec.check, "n_nodes": n_nodes, "n_weight_tensors": n_weights,
        "size_bytes": os.path.getsize(path),
    }
    rows = [row]
    for shape in spec.extra:
        m2, _, out2, _ = count_macs(model, spec, shape)
        rows.append(dict(row, input_shape="x".join(map(str, shape)), output_shape=out2,
                         macs_hooks=m2))
    return rows


def self_check(row):
    """The counter must reproduce torchvision's published figures where the brief fixes them."""
    m, macs = row["model"], row["macs_hooks"]
    if m in EXACT_MACS_CHECK and macs != EXACT_MACS_CHECK[m]:
        raise SystemExit(f"self-check failed: {m} counted {macs}, expected {EXACT_MACS_CHECK[m]}")
    if m == "swin_t" and abs(macs / 4.49e9 - 1) > 0.02:
        raise SystemExit(f"self-check failed: swin_t counted {macs}, not within 2% of 4.49 G")


# Exports that take longest go first so that two workers finish together; the two largest
# (vit_h_14, regnet_y_128gf: ~2.5 GB of weights each) are kept apart in the order.
SLOW_FIRST = ["vit_h_14", "swin_s", "swin_b", "regnet_y_128gf", "vit_l_16", "vit_l_32", "swin_t",
              "efficientnet_v2_l", "convnext_large", "maxvit_t", "efficientnet_v2_m"]


def run_one(i, out_dir, threads):
    """Worker: exports spec i; returns (i, rows, failure message or None, seconds)."""
    torch.set_num_threads(threads)
    spec = specs()[i]
    path = os.path.join(out_dir, spec.file)
    torch.manual_seed(SEED + i)
    t0 = time.time()
    try:
        return i, process(spec, path), None, time.time() - t0
    except Exception as e:  # recorded in the export log, never hidden
        if os.path.exists(path):
            os.remove(path)
        traceback.print_exc(file=sys.stderr)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return i, [], f"{type(e).__name__}: {first}", time.time() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/models")
    ap.add_argument("--only", default="", help="comma-separated file stems (no CSV/log written)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))

    all_specs = specs()
    todo = [i for i, s in enumerate(all_specs) if not only or s.file[:-5] in only]
    rank = {m: k for k, m in enumerate(SLOW_FIRST)}
    todo.sort(key=lambda i: rank.get(all_specs[i].file[:-5], len(rank)))
    t_all = time.time()
    results = {}

    def report(res):
        i, new, err, secs = res
        results[i] = res
        head = f"[{len(results)}/{len(todo)}] {all_specs[i].file}: {secs:.1f}s"
        if err:
            print(f"{head} FAILED {err}", flush=True)
            return
        r = new[0]
        print(f"{head} macs={r['macs_hooks']} ({r['macs_note']}) params_graph={r['params_graph']} "
              f"params_torch={r['params_torch']} nodes={r['n_nodes']} out={r['output_shape']} "
              f"size={r['size_bytes']}", flush=True)
        for x in new[1:]:
            print(f"    + {x['input_shape']}: macs={x['macs_hooks']} out={x['output_shape']}")

    if args.jobs <= 1:
        for i in todo:
            report(run_one(i, args.out, args.threads))
    else:
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(args.jobs) as pool:
            for res in pool.imap_unordered(functools.partial(run_one_star, args.out, args.threads),
                                           todo):
                report(res)

    rows, failed, checks = [], [], []
    for i in sorted(results):
        _, new, err, _ = results[i]
        if err:
            failed.append((all_specs[i].file, err))
            continue
        rows += new
        self_check(new[0])
        pub = PUBLISHED_GMACS.get(new[0]["model"])
        if pub is not None:
            macs = new[0]["macs_hooks"]
            checks.append((new[0]["model"], macs, pub, macs / 1e9 / pub - 1))
    files = {r["file"]: r["size_bytes"] for r in rows}
    if not only:
        write_csv(os.path.join(args.out, "reference.csv"), rows)
        write_log(os.path.join(args.out, "EXPORT_LOG.md"), rows, failed, checks,
                  time.time() - t_all, args)
    print(f"done in {time.time() - t_all:.0f}s: {len(files)} files, {len(rows)} rows, "
          f"{len(failed)} failed, {sum(files.values())} bytes", flush=True)
    for name, macs, pub, rel in checks:
        print(f"  published check {name}: counted {macs / 1e9:.4f} G vs {pub} G ({rel:+.2%})")


def run_one_star(out_dir, threads, i):
    return run_one(i, out_dir, threads)


COLUMNS = ["file", "model", "family", "input_name", "input_shape", "input_dtype", "output_shape",
           "opset", "params_graph", "params_torch", "macs_hooks", "macs_note", "macs_check",
           "n_nodes", "n_weight_tensors"]


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def write_log(path, rows, failed, checks, seconds, args):
    with open(path, "w") as f:
        f.write("# Export log (written by tools/export_models.py; do not edit)\n\n")
        f.write(f"- date: {datetime.date.today().isoformat()}\n")
        f.write(f"- torch {torch.__version__}, torchvision {torchvision.__version__}, "
                f"onnx {onnx.__version__}, python {platform.python_version()}\n")
        f.write("- command: `/usr/bin/python3 tools/export_models.py` (from the repository root)\n")
        files = {r["file"]: r["size_bytes"] for r in rows}
        f.write(f"- wall time: {seconds:.0f} s with {args.jobs} worker(s) x {args.threads} "
                f"thread(s) on {os.cpu_count()} CPUs; {len(files)} files, {len(rows)} reference "
                f"rows, {sum(files.values())} bytes\n\n")
        f.write("## Failed exports\n\n")
        if failed:
            for fn, msg in failed:
                f.write(f"- `{fn}`: {msg}\n")
        else:
            f.write("None.\n")
        f.write("\n## Hook counts against torchvision's published GFLOPS (MACs)\n\n")
        f.write("| model | counted MACs | published G | difference |\n|---|---:|---:|---:|\n")
        for name, macs, pub, rel in checks:
            f.write(f"| {name} | {macs} | {pub} | {rel:+.2%} |\n")
        f.write("\n## Files\n\n| file | bytes | nodes | MAC-bearing ops counted |\n|---|---:|---:|---|\n")
        for r in rows:
            if r["file"] in files:
                f.write(f"| {r['file']} | {r['size_bytes']} | {r['n_nodes']} | {r['macs_note']} |\n")
                del files[r["file"]]


if __name__ == "__main__":
    main()
