#!/usr/bin/python3
"""tools/export_nas_reference.py: the NAS search-space networks perfpred builds in C (graph/build_*.c),
rebuilt in PyTorch from the upstream model code, exported to ONNX without weights, and counted with
forward hooks, so that tests/test_builders.c can check the C builders against an independent graph.

Upstream definitions transcribed here (module names kept so the two can be compared line by line):
  NAS-Bench-201: D-X-Y/AutoDL-Projects lib/models/cell_operations.py (ReLUConvBN, POOLING, Zero,
                 Identity, ResNetBasicblock), cell_infers/cells.py (InferCell),
                 cell_infers/tiny_network.py (TinyNetwork: C=16, N=5); the copy HW-NAS-Bench ships.
  FBNet:         GATECH-EIC/HW-NAS-Bench hw_nas_bench_api/fbnet_models/model_infer.py (FBNet_Infer,
                 ConvBlock, Skip, ChannelShuffle), the CIFAR-100 setting HELP's FBNet data uses.
  OFA:           mit-han-lab/once-for-all MobileNetV3 subnets of ofa_mbv3_d234_e346_k357_w1.2
                 (the supernet HELP's validate_imagenet.py names): ConvLayer, MBConvLayer, SEModule,
                 Hswish/Hsigmoid as OFA writes them (x * relu6(x + 3) / 6).

Run from the repository root:  /usr/bin/python3 tools/export_nas_reference.py
(torch 1.13, onnx 1.12; no network, no weights: export_params=False.)
Writes tests/fixtures/nas/<name>.onnx and tests/fixtures/nas/reference.csv with, per network, the
perfpred ref string, MACs counted by Conv2d/Linear hooks, parameters counted as ONNX sees them
(module parameters plus BatchNorm running mean and variance) and the output shape.
"""
import csv
import math
import os
import sys

import onnx
import torch
import torch.nn as nn

OPSET = 17
OUT_DIR = os.path.join("tests", "fixtures", "nas")

# ------------------------------------------------------------------------- NAS-Bench-201 ------


class ReLUConvBN(nn.Module):
    def __init__(self, C_in, C_out, kernel_size, stride, padding, dilation, affine=True):
        super().__init__()
        self.op = nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(C_in, C_out, kernel_size, stride=stride, padding=padding, dilation=dilation,
                      bias=False),
            nn.BatchNorm2d(C_out, affine=affine))

    def forward(self, x):
        return self.op(x)


class POOLING(nn.Module):
    def __init__(self, C_in, C_out, stride):
        super().__init__()
        self.preprocess = None if C_in == C_out else ReLUConvBN(C_in, C_out, 1, 1, 0, 1)
        self.op = nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False)

    def forward(self, x):
        return self.op(self.preprocess(x) if self.preprocess else x)


class Zero(nn.Module):
    def forward(self, x):
        return x.mul(0.)


class Identity(nn.Module):
    def forward(self, x):
        return x


def nb201_op(name, C):
    # inside a cell every edge keeps C channels and stride 1
    if name == "none":
        return Zero()
    if name == "skip_connect":
        return Identity()
    if name == "nor_conv_1x1":
        return ReLUConvBN(C, C, 1, 1, 0, 1)
    if name == "nor_conv_3x3":
        return ReLUConvBN(C, C, 3, 1, 1, 1)
    if name == "avg_pool_3x3":
        return POOLING(C, C, 1)
    raise ValueError(name)


def parse_nb201(arch):
    nodes = []
    for part in arch.split("+"):
        edges = [e for e in part.split("|") if e]
        nodes.append([(e.split("~")[0], int(e.split("~")[1])) for e in edges])
    return nodes


class InferCell(nn.Module):
    def __init__(self, genotype, C):
        super().__init__()
        self.layers = nn.ModuleList()
        self.node_IX, self.node_IN = [], []
        for node in genotype:
            ix, inn = [], []
            for op_name, op_in in node:
                ix.append(len(self.layers))
                inn.append(op_in)
                self.layers.append(nb201_op(op_name, C))
            self.node_IX.append(ix)
            self.node_IN.append(inn)

    def forward(self, inputs):
        nodes = [inputs]
        for node_layers, node_innods in zip(self.node_IX, self.node_IN):
            nodes.append(sum(self.layers[_il](nodes[_ii]) for _il, _ii in zip(node_layers, node_innods)))
        return nodes[-1]


class ResNetBasicblock(nn.Module):
    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv_a = ReLUConvBN(inplanes, planes, 3, stride, 1, 1)
        self.conv_b = ReLUConvBN(planes, planes, 3, 1, 1, 1)
        self.downsample = nn.Sequential(
            nn.AvgPool2d(kernel_size=2, stride=2, padding=0),
            nn.Conv2d(inplanes, planes, kernel_size=1, stride=1, padding=0, bias=False))

    def forward(self, inputs):
        return self.downsample(inputs) + self.conv_b(self.conv_a(inputs))


class TinyNetwork(nn.Module):
    def __init__(self, arch, in_channels=3, num_classes=10, C=16, N=5):
        super().__init__()
        genotype = parse_nb201(arch)
        self.stem = nn.Sequential(nn.Conv2d(in_channels, C, kernel_size=3, padding=1, bias=False),
                                  nn.BatchNorm2d(C))
        chans = [C] * N + [C * 2] + [C * 2] * N + [C * 4] + [C * 4] * N
        reds = [False] * N + [True] + [False] * N + [True] + [False] * N
        self.cells = nn.ModuleList()
        C_prev = C
        for C_curr, red in zip(chans, reds):
            self.cells.append(ResNetBasicblock(C_prev, C_curr, 2) if red else InferCell(genotype, C_curr))
            C_prev = C_curr
        self.lastact = nn.Sequential(nn.BatchNorm2d(C_prev), nn.ReLU(inplace=True))
        self.global_pooling = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(C_prev, num_classes)

    def forward(self, x):
        f = self.stem(x)
        for cell in self.cells:
            f = cell(f)
        out = self.global_pooling(self.lastact(f))
        return self.classifier(out.view(out.size(0), -1))


# ---------------------------------------------------------------------------------- FBNet ------


class ChannelShuffle(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        N, C, H, W = x.size()
        g = self.groups
        return x.view(N, g, int(C / g), H, W).permute(0, 2, 1, 3, 4).contiguous().view(N, C, H, W)


def fb_pad(kernel_size, stride):
    return int(math.ceil((kernel_size - 1 + 1 - stride) / 2.))


class ConvNorm(nn.Module):
    def __init__(self, C_in, C_out, kernel_size=3, stride=1, padding=None):
        super().__init__()
        pad = fb_pad(kernel_size, stride) if padding is None else padding
        self.conv = nn.Conv2d(C_in, C_out, kernel_size, stride, pad, bias=False)
        self.bn = nn.BatchNorm2d(C_out)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


class ConvBlock(nn.Module):
    def __init__(self, C_in, C_out, expansion, kernel_size, stride, groups):
        super().__init__()
        self.C_in, self.C_out, self.stride, self.groups = C_in, C_out, stride, groups
        pad = fb_pad(kernel_size, stride)
        if groups > 1:
            self.shuffle = ChannelShuffle(groups)
        mid = C_in * expansion
        self.conv1 = nn.Conv2d(C_in, mid, 1, 1, 0, groups=groups, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, kernel_size, stride, pad, groups=mid, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, C_out, 1, 1, 0, groups=groups, bias=False)
        self.bn3 = nn.BatchNorm2d(C_out)
        self.nl = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x
        x = self.nl(self.bn1(self.conv1(x)))
        if self.groups > 1:
            x = self.shuffle(x)
        x = self.nl(self.bn2(self.conv2(x)))
        x = self.bn3(self.conv3(x))
        if self.C_in == self.C_out and self.stride == 1:
            x = x + identity
        return x


class Skip(nn.Module):
    def __init__(self, C_in, C_out, stride):
        super().__init__()
        self.has_conv = stride == 2 or C_in != C_out
        if self.has_conv:
            self.conv = nn.Conv2d(C_in, C_out, 1, stride=stride, padding=0, bias=False)
            self.bn = nn.BatchNorm2d(C_out)
            self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn(self.conv(x))) if self.has_conv else x


FB_PRIMITIVES = ["k3_e1", "k3_e1_g2", "k3_e3", "k3_e6", "k5_e1", "k5_e1_g2", "k5_e3", "k5_e6", "skip"]


def fb_op(name, C_in, C_out, stride):
    if name == "skip":
        return Skip(C_in, C_out, stride)
    k = int(name[1])
    e = int(name.split("_")[1][1:])
    g = 2 if name.endswith("_g2") else 1
    return ConvBlock(C_in, C_out, e, k, stride, g)


class FBNet_Infer(nn.Module):
    """CIFAR-100 setting: stride 1 stem and stride list [1, 1, 2, 2, 1, 2, 1], header 1504."""

    def __init__(self, ops, num_classes=100):
        super().__init__()
        assert len(ops) == 22
        num_layer_list = [1, 4, 4, 4, 4, 4, 1]
        num_channel_list = [16, 24, 32, 64, 112, 184, 352]
        stride_list = [1, 1, 2, 2, 1, 2, 1]
        self.stem = ConvNorm(3, 16, kernel_size=3, stride=1, padding=1)
        self.cells = nn.ModuleList()
        layer = 0
        c_prev = 16
        for stage, n in enumerate(num_layer_list):
            for i in range(n):
                s = stride_list[stage] if i == 0 else 1
                self.cells.append(fb_op(ops[layer], c_prev, num_channel_list[stage], s))
                c_prev = num_channel_list[stage]
                layer += 1
        self.header = ConvNorm(352, 1504, kernel_size=1)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(1504, num_classes)

    def forward(self, x):
        out = self.stem(x)
        for cell in self.cells:
            out = cell(out)
        return self.fc(self.avgpool(self.header(out)).view(out.size(0), -1))


# ------------------------------------------------------------------------------------ OFA ------


def make_divisible(v, divisor=8, min_val=None):
    if min_val is None:
        min_val = divisor
    new_v = max(min_val, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class Hswish(nn.Module):
    def forward(self, x):
        return x * nn.functional.relu6(x + 3.) / 6.


class Hsigmoid(nn.Module):
    def forward(self, x):
        return nn.functional.relu6(x + 3.) / 6.


def act(name):
    return nn.ReLU(inplace=True) if name == "relu" else Hswish()


class ConvLayer(nn.Module):
    def __init__(self, C_in, C_out, kernel_size, stride=1, use_bn=True, act_func="relu"):
        super().__init__()
        self.conv = nn.Conv2d(C_in, C_out, kernel_size, stride, kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(C_out) if use_bn else None
        self.act = act(act_func)

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        return self.act(x)


class SEModule(nn.Module):
    def __init__(self, channel):
        super().__init__()
        mid = make_divisible(channel // 4, 8)
        self.reduce = nn.Conv2d(channel, mid, 1, 1, 0, bias=True)
        self.relu = nn.ReLU(inplace=True)
        self.expand = nn.Conv2d(mid, channel, 1, 1, 0, bias=True)
        self.h_sigmoid = Hsigmoid()

    def forward(self, x):
        y = x.mean(3, keepdim=True).mean(2, keepdim=True)
        y = self.h_sigmoid(self.expand(self.relu(self.reduce(y))))
        return x * y


class MBConvLayer(nn.Module):
    def __init__(self, C_in, C_out, kernel_size, stride, mid, act_func, use_se):
        super().__init__()
        self.inverted_bottleneck = None
        if mid is not None:
            self.inverted_bottleneck = nn.Sequential(nn.Conv2d(C_in, mid, 1, 1, 0, bias=False),
                                                     nn.BatchNorm2d(mid), act(act_func))
        else:
            mid = C_in
        dw = [nn.Conv2d(mid, mid, kernel_size, stride, kernel_size // 2, groups=mid, bias=False),
              nn.BatchNorm2d(mid), act(act_func)]
        if use_se:
            dw.append(SEModule(mid))
        self.depth_conv = nn.Sequential(*dw)
        self.point_linear = nn.Sequential(nn.Conv2d(mid, C_out, 1, 1, 0, bias=False),
                                          nn.BatchNorm2d(C_out))

    def forward(self, x):
        if self.inverted_bottleneck is not None:
            x = self.inverted_bottleneck(x)
        return self.point_linear(self.depth_conv(x))


class ResidualBlock(nn.Module):
    def __init__(self, conv, shortcut):
        super().__init__()
        self.conv, self.shortcut = conv, shortcut

    def forward(self, x):
        return self.conv(x) + x if self.shortcut else self.conv(x)


class OFAMobileNetV3Subnet(nn.Module):
    """get_active_subnet() of ofa_mbv3_d234_e346_k357_w1.2 for (ks[20], e[20], d[5])."""

    def __init__(self, ks, e, d, num_classes=1000, width_mult=1.2):
        super().__init__()
        base = [16, 16, 24, 40, 80, 112, 160, 960, 1280]
        final_expand = make_divisible(base[-2] * width_mult)
        last_channel = make_divisible(base[-1] * width_mult)
        widths = [make_divisible(b * width_mult) for b in base[:-2]]
        strides = [1, 2, 2, 2, 1, 2]
        acts = ["relu", "relu", "relu", "h_swish", "h_swish", "h_swish"]
        ses = [False, False, True, False, True, True]
        self.first_conv = ConvLayer(3, widths[0], 3, 2, act_func="h_swish")
        blocks = [ResidualBlock(MBConvLayer(widths[0], widths[1], 3, strides[0], None, acts[0], ses[0]),
                                widths[0] == widths[1])]
        feat = widths[1]
        for stage in range(5):
            w = widths[stage + 2]
            for i in range(d[stage]):
                j = stage * 4 + i
                s = strides[stage + 1] if i == 0 else 1
                mid = make_divisible(round(feat * e[j]), 8)
                blocks.append(ResidualBlock(
                    MBConvLayer(feat, w, ks[j], s, mid, acts[stage + 1], ses[stage + 1]),
                    s == 1 and feat == w))
                feat = w
        self.blocks = nn.ModuleList(blocks)
        self.final_expand_layer = ConvLayer(feat, final_expand, 1, act_func="h_swish")
        self.feature_mix_layer = ConvLayer(final_expand, last_channel, 1, use_bn=False,
                                           act_func="h_swish")
        self.classifier = nn.Linear(last_channel, num_classes)

    def forward(self, x):
        x = self.first_conv(x)
        for b in self.blocks:
            x = b(x)
        x = self.final_expand_layer(x)
        x = x.mean(3, keepdim=True).mean(2, keepdim=True)
        x = self.feature_mix_layer(x)
        return self.classifier(x.view(x.size(0), -1))


# ------------------------------------------------------------------------ the fixtures ------

NB201_DATASETS = {"cifar10": (3, 32, 32, 10), "cifar100": (3, 32, 32, 100),
                  "imagenet16": (3, 16, 16, 120), "ninapro": (1, 52, 16, 18), "darcy": (1, 88, 88, 1)}

OFA1 = dict(ks=[7, 3, 5, 3, 3, 7, 3, 7, 3, 7, 3, 7, 3, 7, 7, 3, 5, 5, 7, 3],
            e=[4, 6, 3, 4, 4, 4, 4, 6, 3, 6, 6, 4, 4, 6, 6, 4, 3, 6, 6, 4], d=[2, 3, 4, 3, 4], r=136)
FB0 = [7, 8, 1, 8, 4, 8, 8, 8, 7, 4, 1, 4, 7, 3, 2, 7, 3, 2, 4, 2, 4, 5]


def fixtures():
    """(name, perfpred ref, module, input shape). HELP arch 0 of each space plus hand-picked NB201
    cells: 'none' edges with pooling, a cell whose output node is all 'none', every dataset."""
    out = []
    nb = [("nb201_arch0_cifar10",
           "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|",
           "cifar10"),
          ("nb201_none_pool_cifar100",
           "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|", "cifar100"),
          ("nb201_allconv_imagenet16",
           "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|",
           "imagenet16"),
          ("nb201_zero_output_darcy",
           "|avg_pool_3x3~0|+|nor_conv_3x3~0|skip_connect~1|+|none~0|none~1|none~2|", "darcy"),
          ("nb201_ninapro",
           "|nor_conv_1x1~0|+|avg_pool_3x3~0|nor_conv_3x3~1|+|none~0|skip_connect~1|avg_pool_3x3~2|", "ninapro")]
    for name, arch, ds in nb:
        c, h, w, k = NB201_DATASETS[ds]
        out.append((name, f"nb201:{arch}@{ds}", TinyNetwork(arch, c, k), (1, c, h, w)))
    out.append(("fbnet_arch0", "fbnet:" + ",".join(str(v) for v in FB0),
                FBNet_Infer([FB_PRIMITIVES[v] for v in FB0]), (1, 3, 32, 32)))
    ofa_ref = "ofa:ks=%s;e=%s;d=%s;r=%d" % (",".join(map(str, OFA1["ks"])), ",".join(map(str, OFA1["e"])),
                                             ",".join(map(str, OFA1["d"])), OFA1["r"])
    out.append(("ofa_arch1", ofa_ref, OFAMobileNetV3Subnet(OFA1["ks"], OFA1["e"], OFA1["d"]),
                (1, 3, OFA1["r"], OFA1["r"])))
    return out


def count(model, shape):
    macs = [0]

    def conv(m, inp, o):
        macs[0] += o.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]

    def lin(m, inp, o):
        macs[0] += o.numel() * m.in_features

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(lin))
    with torch.no_grad():
        y = model(torch.randn(shape))
    for h in hooks:
        h.remove()
    params = sum(p.numel() for p in model.parameters())
    params += sum(m.running_mean.numel() + m.running_var.numel() for m in model.modules()
                  if isinstance(m, nn.BatchNorm2d))
    return macs[0], params, "x".join(str(d) for d in y.shape)


def randomize_norms(model):
    """Distinct BatchNorm values: torch.onnx's initializer deduplication would otherwise merge every
    all-ones / all-zeros scale, bias, mean and variance of one width into a single input."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)


def main():
    torch.manual_seed(0)
    os.makedirs(OUT_DIR, exist_ok=True)
    rows = []
    for name, ref, model, shape in fixtures():
        model.eval()
        randomize_norms(model)
        macs, params, out_shape = count(model, shape)
        path = os.path.join(OUT_DIR, name + ".onnx")
        # PRESERVE (the model is in eval mode) keeps BatchNormalization nodes: EVAL would fold them
        # into the convolutions, and the builders describe the network, not a runtime's fusion.
        torch.onnx.export(model, torch.randn(shape), path, export_params=False, opset_version=OPSET,
                          do_constant_folding=True, training=torch.onnx.TrainingMode.PRESERVE,
                          input_names=["input"], output_names=["output"])
        onnx.checker.check_model(onnx.load(path))
        rows.append({"name": name, "ref": ref, "input": "x".join(map(str, shape)), "macs": macs,
                     "params": params, "output": out_shape})
        print(f"{name}: {macs} MACs, {params} params, output {out_shape}, "
              f"{os.path.getsize(path)} bytes", file=sys.stderr)
    with open(os.path.join(OUT_DIR, "reference.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", "ref", "input", "macs", "params", "output"])
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
