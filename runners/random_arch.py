#!/usr/bin/python3
"""random_arch.py: random CNNs and transformer encoders that no one has seen, to judge calibrations.

A name (randcnn_s<seed>_i<index>, randtf_s<seed>_i<index>) rebuilds the same architecture anywhere:
drawn from random.Random("<kind>-<seed>-<index>-<attempt>"), attempt 0, 1, ... until the draw costs
at most MAC_CAP at batch 1. The CLI exports a seed's models for network_runner.py (README).
"""

import argparse
import math
import os
import random
import re
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from timing import write_csv_atomic  # noqa: E402 - after the runners folder is on the path

KINDS = ("randcnn", "randtf")
MAC_CAP = 1_500_000_000          # at batch 1: keeps measuring a whole seed quick
MAX_ATTEMPTS = 200
ACTS = ("relu", "relu6", "silu", "hardswish", "gelu")
BLOCKS = ("basic", "bottleneck", "mbconv", "dwsep")
_NAME = re.compile(r"^(randcnn|randtf)_s(\d+)_i(\d+)$")
REFERENCE_COLUMNS = ["file", "model", "family", "input_name", "input_shape", "input_dtype",
                     "output_shape", "opset", "params_torch", "macs", "attempt"]


def is_random_name(name):
    """True for names this module owns (well-formed or not): randcnn_*, randtf_*."""
    return any(name == k or name.startswith(k + "_") for k in KINDS)


def parse_name(name):
    """(kind, seed, index) of a name like randcnn_s7_i12; ValueError naming it otherwise."""
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"{name!r} is not a random-architecture name: expected "
                         "randcnn_s<seed>_i<index> or randtf_s<seed>_i<index> (decimal integers)")
    return m.group(1), int(m.group(2)), int(m.group(3))


def model_name(kind, seed, index):
    if kind not in KINDS:
        raise ValueError(f"unknown random-architecture kind {kind!r} (one of {', '.join(KINDS)})")
    if seed < 0 or index < 0:
        raise ValueError("seed and index must be >= 0")
    return f"{kind}_s{seed}_i{index}"


def _r8(x):
    """Nearest multiple of 8, at least 8."""
    return max(8, int(round(x / 8.0)) * 8)


def _out_size(h, k, s):
    p = k // 2
    return (h + 2 * p - k) // s + 1


# ------------------------------------------------------------------------------ sampling ------
def _sample_cnn(rng):
    size = rng.choice(("small", "medium", "large"))
    stem_w = rng.choice({"small": (16, 24, 32), "medium": (24, 32, 48),
                         "large": (32, 48, 64)}[size])
    growth = {"small": (1.2, 1.7), "medium": (1.4, 2.0), "large": (1.6, 2.4)}[size]
    cfg = {"kind": "randcnn", "size": size,
           "resolution": rng.choice(range(96, 225, 16)),
           "act_per_block": rng.random() < 0.4,
           "stem": {"k": rng.choice((3, 3, 5, 7)), "w": stem_w},
           "classes": rng.choice((10, 100, 1000)), "blocks": []}
    net_act = rng.choice(ACTS)
    cfg["stem"]["act"] = net_act
    n_stages = rng.randint(3, 5)
    cin = stem_w
    w = stem_w
    for st in range(n_stages):
        w = min(512, max(16, _r8(w * rng.uniform(*growth))))
        stride = rng.choice((1, 2)) if st == 0 else 2
        for b in range(rng.randint(1, 3)):
            blk = {"type": rng.choice(BLOCKS), "cin": cin, "cout": w,
                   "stride": stride if b == 0 else 1, "k": rng.choice((3, 3, 5, 7)),
                   "act": rng.choice(ACTS) if cfg["act_per_block"] else net_act, "stage": st}
            if blk["type"] == "bottleneck":
                blk["mid"] = max(16, _r8(w / rng.choice((2, 4))))
                blk["groups"] = rng.choice((1, 1, 2, 4))
            elif blk["type"] == "mbconv":
                blk["expand"] = rng.randint(2, 6)
                blk["mid"] = _r8(cin * blk["expand"])
                if rng.random() < 0.5:
                    blk["se"] = max(8, _r8(cin / 4))
                    blk["se_gate"] = rng.choice(("sigmoid", "hardsigmoid"))
            cfg["blocks"].append(blk)
            cin = w
    return cfg


def _sample_tf(rng):
    cfg = {"kind": "randtf", "embed": rng.choice(("conv", "linear"))}
    if cfg["embed"] == "conv":
        grid = rng.randint(7, 16)
        cfg["patch"] = rng.choice((4, 8, 14, 16))
        cfg["resolution"] = cfg["patch"] * grid
        cfg["tokens"] = grid * grid
    else:
        cfg["tokens"] = rng.randint(49, 256)
        cfg["features"] = rng.choice((48, 64, 96, 192, 256, 768))
    heads = rng.randint(2, 8)
    m = rng.randint(max(1, math.ceil(64 / (16 * heads))), 512 // (16 * heads))
    cfg.update({"heads": heads, "width": heads * 16 * m, "depth": rng.randint(2, 6),
                "mlp_ratio": rng.choice((2, 3, 4)), "qkv": rng.choice(("fused", "separate")),
                "pool": rng.choice(("mean", "cls")), "classes": rng.choice((10, 100, 1000))})
    return cfg


def macs_of(cfg):
    """Multiply-accumulates of one forward pass at batch 1: convolutions, Linear layers and the
    attention products (q k^T and att v); element-wise ops, norms and pooling count none."""
    if cfg["kind"] == "randcnn":
        h = _out_size(cfg["resolution"], cfg["stem"]["k"], 2)
        c = cfg["stem"]["w"]
        total = h * h * c * 3 * cfg["stem"]["k"] ** 2

        def conv(hin, cin, cout, k, s, g=1):
            ho = _out_size(hin, k, s)
            return ho, ho * ho * cout * (cin // g) * k * k
        for b in cfg["blocks"]:
            t, ci, co, k, s = b["type"], b["cin"], b["cout"], b["k"], b["stride"]
            if t == "basic":
                h2, m1 = conv(h, ci, co, k, s)
                _, m2 = conv(h2, co, co, k, 1)
                total += m1 + m2
            elif t == "bottleneck":
                _, m1 = conv(h, ci, b["mid"], 1, 1)
                h2, m2 = conv(h, b["mid"], b["mid"], k, s, b["groups"])
                _, m3 = conv(h2, b["mid"], co, 1, 1)
                total += m1 + m2 + m3
            elif t == "mbconv":
                _, m1 = conv(h, ci, b["mid"], 1, 1)
                h2, m2 = conv(h, b["mid"], b["mid"], k, s, b["mid"])
                _, m3 = conv(h2, b["mid"], co, 1, 1)
                total += m1 + m2 + m3 + (2 * b["mid"] * b["se"] if "se" in b else 0)
            else:  # dwsep
                h2, m1 = conv(h, ci, ci, k, s, ci)
                _, m2 = conv(h2, ci, co, 1, 1)
                total += m1 + m2
            if t in ("basic", "bottleneck") and (s != 1 or ci != co):
                total += conv(h, ci, co, 1, s)[1]
            h = _out_size(h, k, s)
            c = co
        return total + c * cfg["classes"]
    t, d = cfg["tokens"], cfg["width"]
    emb = t * d * (3 * cfg["patch"] ** 2 if cfg["embed"] == "conv" else cfg["features"])
    tt = t + 1 if cfg["pool"] == "cls" else t
    block = (4 + 2 * cfg["mlp_ratio"]) * tt * d * d + 2 * tt * tt * d
    return emb + cfg["depth"] * block + d * cfg["classes"]


def config_for(name):
    """The architecture a name stands for (a plain dict; `attempt` says which draw met the cap)."""
    kind, seed, index = parse_name(name)
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(f"{kind}-{seed}-{index}-{attempt}")
        cfg = _sample_cnn(rng) if kind == "randcnn" else _sample_tf(rng)
        macs = macs_of(cfg)
        if macs <= MAC_CAP:
            cfg.update(name=name, seed=seed, index=index, attempt=attempt, macs=macs)
            return cfg
    raise RuntimeError(f"{name}: no draw under {MAC_CAP} MACs in {MAX_ATTEMPTS} attempts")


def input_shape(cfg):
    """Input shape at batch 1: an image, or (for a Linear token embedding) token features."""
    if cfg["kind"] == "randtf" and cfg["embed"] == "linear":
        return (1, cfg["tokens"], cfg["features"])
    return (1, 3, cfg["resolution"], cfg["resolution"])


# ------------------------------------------------------------------------------- modules ------
def _torch():
    import torch
    return torch


def build(name):
    """The torch.nn.Module a name stands for (eval mode, untrained weights)."""
    return build_from_config(config_for(name))


def build_from_config(cfg):
    torch = _torch()
    nn = torch.nn
    acts = {"relu": nn.ReLU, "relu6": nn.ReLU6, "silu": nn.SiLU, "hardswish": nn.Hardswish,
            "gelu": nn.GELU}

    def cba(cin, cout, k, s=1, g=1, act=None):
        """Conv -> BatchNorm (-> act) in one nn.Sequential, so that either folding path of
        models.fold_batchnorm finds the pair."""
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(cout)]
        if act:
            layers.append(acts[act]())
        return nn.Sequential(*layers)

    class SE(nn.Module):
        def __init__(self, ch, sq, gate):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(ch, sq, 1)
            self.act = nn.ReLU()
            self.fc2 = nn.Conv2d(sq, ch, 1)
            self.gate = nn.Sigmoid() if gate == "sigmoid" else nn.Hardsigmoid()

        def forward(self, x):
            return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))

    class Block(nn.Module):
        def __init__(self, b):
            super().__init__()
            t, ci, co, k, s, a = b["type"], b["cin"], b["cout"], b["k"], b["stride"], b["act"]
            self.residual = False
            self.short = None
            self.post = None
            if t == "basic":
                self.body = nn.Sequential(cba(ci, co, k, s, act=a), cba(co, co, k))
            elif t == "bottleneck":
                m = b["mid"]
                self.body = nn.Sequential(cba(ci, m, 1, act=a), cba(m, m, k, s, b["groups"], a),
                                          cba(m, co, 1))
            elif t == "mbconv":
                m = b["mid"]
                parts = [cba(ci, m, 1, act=a), cba(m, m, k, s, m, a)]
                if "se" in b:
                    parts.append(SE(m, b["se"], b["se_gate"]))
                parts.append(cba(m, co, 1))
                self.body = nn.Sequential(*parts)
                self.residual = s == 1 and ci == co
            else:
                self.body = nn.Sequential(cba(ci, ci, k, s, ci, a), cba(ci, co, 1, act=a))
            if t in ("basic", "bottleneck"):
                self.residual = True
                if s != 1 or ci != co:
                    self.short = cba(ci, co, 1, s)
                self.post = acts[a]()

        def forward(self, x):
            y = self.body(x)
            if self.residual:
                y = y + (x if self.short is None else self.short(x))
            return y if self.post is None else self.post(y)

    class RandCNN(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            st = cfg["stem"]
            self.stem = cba(3, st["w"], st["k"], 2, act=st["act"])
            self.blocks = nn.Sequential(*[Block(b) for b in cfg["blocks"]])
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.head = nn.Linear(cfg["blocks"][-1]["cout"], cfg["classes"])

        def forward(self, x):
            return self.head(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))

    class Attention(nn.Module):
        """Explicit q/k/v products: exports to MatMul, Softmax, Transpose, Reshape (and Split
        for the fused projection), the ops the predictor meets in real encoders."""

        def __init__(self, t, d, heads, fused):
            super().__init__()
            self.t, self.d, self.h, self.hd = t, d, heads, d // heads
            self.fused = fused
            if fused:
                self.qkv = nn.Linear(d, 3 * d)
            else:
                self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.proj = nn.Linear(d, d)
            self.scale = 1.0 / math.sqrt(self.hd)

        def forward(self, x):
            if self.fused:
                q, k, v = self.qkv(x).split(self.d, dim=-1)
            else:
                q, k, v = self.q(x), self.k(x), self.v(x)
            shape = (-1, self.t, self.h, self.hd)
            q = q.reshape(shape).transpose(1, 2)
            k = k.reshape(shape).transpose(1, 2)
            v = v.reshape(shape).transpose(1, 2)
            att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * self.scale, dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(-1, self.t, self.d)
            return self.proj(y)

    class EncoderBlock(nn.Module):
        def __init__(self, t, d, heads, ratio, fused):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = Attention(t, d, heads, fused)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, ratio * d), nn.GELU(), nn.Linear(ratio * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class RandTF(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            d, t = cfg["width"], cfg["tokens"]
            self.conv_embed = cfg["embed"] == "conv"
            if self.conv_embed:
                self.embed = nn.Conv2d(3, d, cfg["patch"], cfg["patch"])
            else:
                self.embed = nn.Linear(cfg["features"], d)
            self.cls = nn.Parameter(torch.zeros(1, 1, d)) if cfg["pool"] == "cls" else None
            tt = t + (1 if self.cls is not None else 0)
            self.pos = nn.Parameter(torch.zeros(1, tt, d))
            self.blocks = nn.Sequential(*[EncoderBlock(tt, d, cfg["heads"], cfg["mlp_ratio"],
                                                       cfg["qkv"] == "fused")
                                          for _ in range(cfg["depth"])])
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, cfg["classes"])

        def forward(self, x):
            x = self.embed(x)
            if self.conv_embed:
                x = x.flatten(2).transpose(1, 2)
            if self.cls is not None:
                x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)
            x = self.ln(self.blocks(x + self.pos))
            x = x[:, 0] if self.cls is not None else x.mean(dim=1)
            return self.head(x)

    model = RandCNN(cfg) if cfg["kind"] == "randcnn" else RandTF(cfg)
    _decorrelate(torch, model)
    return model.eval()


def _decorrelate(torch, model):
    """Every floating tensor gets a different small offset (as tools/export_models.py does): no
    two constants stay equal, so an exporter has nothing to deduplicate, as in a trained model."""
    with torch.no_grad():
        ts = [t for _, t in model.named_parameters()] + [t for _, t in model.named_buffers()]
        for i, t in enumerate(x for x in ts if x.is_floating_point()):
            t.add_(1e-3 + 1e-5 * i)


def spec(name, graphs_dir):
    """A models.ModelSpec for a random-architecture name; its graph is <graphs_dir>/<name>.onnx."""
    import models
    cfg = config_for(name)
    return models.ModelSpec(name=name, family=cfg["kind"], input_name="input",
                            shape=input_shape(cfg), dtype="float32",
                            onnx_path=os.path.join(graphs_dir, name + ".onnx"),
                            source="random_arch", builder=lambda: build_from_config(cfg))


# ----------------------------------------------------------------------------------- CLI ------
def names_for(seed, n_cnn, n_tf):
    return ([model_name("randcnn", seed, i) for i in range(n_cnn)] +
            [model_name("randtf", seed, i) for i in range(n_tf)])


def config_rows(seed, names, batches, per_model):
    """(model, batch) rows: each model at per_model distinct batch sizes, drawn from
    random.Random("configs-<seed>-<name>"), in increasing order."""
    if per_model < 1 or per_model > len(batches):
        raise ValueError(f"--configs-per-model {per_model}: must be 1..{len(batches)} "
                         f"(the number of --batches)")
    out = []
    for n in names:
        picked = random.Random(f"configs-{seed}-{n}").sample(sorted(batches), per_model)
        out.extend((n, b) for b in sorted(picked))
    return out


def export_all(seed, n_cnn, n_tf, out_dir, batches, per_model, log=None):
    """Exports the seed's models to out_dir/<name>.onnx and writes reference.csv and configs.csv.
    Returns the reference rows."""
    import models
    import onnx
    torch = _torch()
    log = log or sys.stderr
    names = names_for(seed, n_cnn, n_tf)
    configs = config_rows(seed, names, batches, per_model)  # checks the arguments first
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for n in names:
        cfg = config_for(n)
        s = spec(n, out_dir)
        models.export_onnx(torch, s, s.onnx_path)
        g = onnx.load(s.onnx_path)
        bn = [x.name for x in g.graph.node if x.op_type == "BatchNormalization"]
        if bn:  # the graph must describe what network_runner runs (BatchNorm folded)
            raise RuntimeError(f"{s.onnx_path}: {len(bn)} BatchNormalization nodes not folded")
        torch.manual_seed(0)
        m = s.build()
        with torch.inference_mode():
            y = m(s.make_input(torch, 1))
        params = sum(p.numel() for p in m.parameters())
        rows.append({"file": n + ".onnx", "model": n, "family": cfg["kind"],
                     "input_name": s.input_name, "input_shape": "x".join(map(str, s.shape)),
                     "input_dtype": s.dtype, "output_shape": "x".join(map(str, y.shape)),
                     "opset": models.EXPORT_OPSET, "params_torch": params, "macs": cfg["macs"],
                     "attempt": cfg["attempt"]})
        print(f"random_arch: {n}: {cfg['macs'] / 1e6:.1f} MMAC, {params / 1e6:.2f} M params, "
              f"input {rows[-1]['input_shape']}", file=log)
    write_csv_atomic(os.path.join(out_dir, "reference.csv"), REFERENCE_COLUMNS, rows)
    write_csv_atomic(os.path.join(out_dir, "configs.csv"), ["model", "batch"],
                     [{"model": n, "batch": b} for n, b in configs])
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="random_arch.py",
        description="Export random CNNs (randcnn_s<seed>_i<index>) and transformer encoders "
                    "(randtf_s<seed>_i<index>) as ONNX (opset 17, no weights, symbolic batch, "
                    "BatchNorm folded) with reference.csv and configs.csv for network_runner.py.",
        epilog="Measure them with: network_runner.py --reference DIR/reference.csv --configs "
               "DIR/configs.csv -o OUT.csv --device-name NAME --threads 1. Exit status: 0 done; "
               "1 failure; 2 usage error.")
    ap.add_argument("--seed", type=int, required=True, help="the seed every name carries (>= 0)")
    ap.add_argument("--n-cnn", type=int, default=30, help="CNNs, indices 0..N-1 (default 30)")
    ap.add_argument("--n-tf", type=int, default=10,
                    help="transformer encoders, indices 0..N-1 (default 10)")
    ap.add_argument("--out-dir", required=True, help="folder for the graphs and the two CSVs")
    ap.add_argument("--batches", default="1,2,4,8",
                    help="batch sizes to draw from (default 1,2,4,8)")
    ap.add_argument("--configs-per-model", type=int, default=2,
                    help="distinct batch sizes per model in configs.csv (default 2)")
    a = ap.parse_args(argv)
    try:
        if a.seed < 0 or a.n_cnn < 0 or a.n_tf < 0 or a.n_cnn + a.n_tf == 0:
            raise ValueError("--seed, --n-cnn, --n-tf must be >= 0 and at least one model asked")
        batches = []
        for tok in a.batches.split(","):
            if not re.fullmatch(r"\s*\d+\s*", tok) or int(tok) < 1:
                raise ValueError(f"--batches: {tok!r} is not a positive integer")
            batches.append(int(tok))
        if len(set(batches)) != len(batches):
            raise ValueError("--batches: repeated batch size")
        config_rows(a.seed, [], batches, a.configs_per_model)
    except ValueError as e:
        print(f"random_arch: {e}", file=sys.stderr)
        return 2
    export_all(a.seed, a.n_cnn, a.n_tf, a.out_dir, batches, a.configs_per_model)
    print(f"random_arch: wrote {a.n_cnn + a.n_tf} graphs, reference.csv and configs.csv to "
          f"{a.out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
