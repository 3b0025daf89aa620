"""models.py: the whole networks the runners measure, each tied to the ONNX graph it is predicted from.

A ModelSpec names a model, its family, its input (name, shape at batch 1, dtype), how to rebuild it
in PyTorch (torchvision by name with weights=None, timm where installed, the builders of
tools/export_models.py for the fixtures that are not plain torchvision, or random_arch.py for the
names randcnn_s<seed>_i<index> and randtf_s<seed>_i<index>), and the ONNX file.
"""

import csv
import importlib.util
import os
import sys
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_REFERENCE = os.path.join(REPO, "tests", "fixtures", "models", "reference.csv")
EXPORT_OPSET = 17

# Families for held-out-family splits; the longest matching prefix wins (as tools/export_models.py).
_FAMILIES = ("convnext", "densenet", "efficientnet_v2", "efficientnet", "mnasnet", "mobilenet_v2",
             "mobilenet_v3", "regnet", "resnext", "wide_resnet", "resnet", "shufflenet",
             "squeezenet", "swin_v2", "swin", "maxvit", "vit", "vgg", "alexnet", "googlenet",
             "inception")
# Evaluation crop where it is not 224 (torchvision 0.14 weights' transforms: smallest crop).
_RESOLUTION = {"inception_v3": 299, "efficientnet_b1": 240, "efficientnet_b2": 288,
               "efficientnet_b3": 300, "efficientnet_b4": 380, "efficientnet_b5": 456,
               "efficientnet_b6": 528, "efficientnet_b7": 600, "efficientnet_v2_s": 384,
               "efficientnet_v2_m": 480, "efficientnet_v2_l": 480, "swin_v2_t": 256,
               "swin_v2_s": 256, "swin_v2_b": 256}


def family_of(name):
    for fam in sorted(_FAMILIES, key=len, reverse=True):
        if name.startswith(fam):
            return fam
    return name.split("_")[0]


@dataclass
class ModelSpec:
    name: str                 # torchvision / timm name, or the fixture's model name
    family: str
    input_name: str
    shape: tuple              # at batch 1
    dtype: str                # "float32" or "int64" (token ids)
    onnx_path: str            # may not exist yet
    source: str               # "torchvision", "timm", "export_models"
    builder: object = field(default=None, repr=False)  # zero-arg callable -> nn.Module

    def key(self):
        return f"{os.path.basename(self.onnx_path)}|{'x'.join(map(str, self.shape))}"

    def is_image(self):
        return self.dtype == "float32" and len(self.shape) == 4

    def input_shape(self, batch, resolution=None):
        """Input shape at a batch size; resolution (images only) replaces the spatial size."""
        if resolution is not None and resolution != self.shape[-1]:
            if not self.is_image():
                raise ValueError(f"{self.name}: a resolution applies to image inputs only")
            return (batch, self.shape[1], resolution, resolution)
        return (batch,) + tuple(self.shape[1:])

    def build(self):
        return self.builder()

    def make_input(self, torch, batch, device="cpu", dtype=None, seed=0, resolution=None):
        g = torch.Generator().manual_seed(seed)
        shape = self.input_shape(batch, resolution)
        if self.dtype == "int64":
            return torch.randint(1, 1000, shape, generator=g, dtype=torch.int64).to(device)
        return torch.randn(shape, generator=g).to(device=device, dtype=dtype or torch.float32)


def _tv_models():
    import torchvision
    return torchvision.models


def torchvision_names():
    """Classification model names of the installed torchvision."""
    m = _tv_models()
    if hasattr(m, "list_models"):
        return sorted(m.list_models(module=m))
    return sorted(n for n, f in vars(m).items()
                  if callable(f) and n[0].islower() and not n.startswith("_") and
                  n not in ("get_model", "get_weight", "get_model_weights", "list_models"))


def torchvision_builder(name):
    m = _tv_models()

    def build():
        if hasattr(m, "get_model"):
            return m.get_model(name, weights=None)
        return getattr(m, name)(weights=None)
    if hasattr(m, "list_models"):
        if name not in m.list_models(module=m):
            return None
    elif not callable(getattr(m, name, None)):
        return None
    return build


def timm_builder(name):
    try:
        import timm
    except ImportError:
        return None
    if name not in timm.list_models():
        return None
    return lambda: timm.create_model(name, pretrained=False)


def timm_resolution(name):
    try:
        import timm
        cfg = timm.create_model(name, pretrained=False).default_cfg
        return int(cfg.get("input_size", (3, 224, 224))[-1])
    except Exception:  # noqa: BLE001 - a model without a config takes 224
        return 224


def spec_for_name(name, graphs_dir, source="auto"):
    """A spec for a torchvision (or, when source allows, timm) model name, or a random-architecture
    name (random_arch.py); None if unknown. A malformed randcnn_*/randtf_* name: ValueError."""
    ra = _random_arch()
    if ra.is_random_name(name):
        return ra.spec(name, graphs_dir)
    b = torchvision_builder(name) if source in ("auto", "torchvision") else None
    src = "torchvision"
    res = _RESOLUTION.get(name, 224)
    if b is None and source in ("auto", "timm"):
        b = timm_builder(name)
        src = "timm"
        res = timm_resolution(name) if b is not None else res
    if b is None:
        return None
    prefix = "timm_" if src == "timm" else ""
    return ModelSpec(name=name, family=family_of(name), input_name="input", shape=(1, 3, res, res),
                     dtype="float32", onnx_path=os.path.join(graphs_dir, prefix + name + ".onnx"),
                     source=src, builder=b)


def _random_arch():
    """runners/random_arch.py, imported from this file's folder whatever sys.path holds."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import random_arch
    return random_arch


def _export_models_module():
    """tools/export_models.py, whose builders rebuild the non-torchvision fixtures exactly."""
    path = os.path.join(REPO, "tools", "export_models.py")
    if not os.path.exists(path):
        return None
    try:
        spec = importlib.util.spec_from_file_location("pp_export_models", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    except Exception as e:  # noqa: BLE001 - fall back to torchvision names
        print(f"models: cannot import {path} ({type(e).__name__}: {e}); using torchvision names",
              file=sys.stderr)
        return None


def specs_from_reference(path, only=None):
    """Specs for the rows of tests/fixtures/models/reference.csv (columns file, model, family,
    input_name, input_shape, input_dtype); ONNX paths are relative to the CSV's folder."""
    base = os.path.dirname(os.path.abspath(path))
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for need in ("file", "model", "family", "input_name", "input_shape", "input_dtype"):
        if rows and need not in rows[0]:
            raise ValueError(f"{path}: missing column {need!r}")
    ra = _random_arch()
    # tools/export_models.py (torchvision and all) only where a row needs it
    em = (_export_models_module() if any(not ra.is_random_name(r["model"]) for r in rows)
          else None)
    em_build = {}
    if em is not None and hasattr(em, "specs"):
        for s in em.specs():
            em_build[s.file] = s.build
    out, seen = [], set()
    for i, r in enumerate(rows, start=2):
        stem = r["file"][:-5] if r["file"].endswith(".onnx") else r["file"]
        if only and stem not in only and r["model"] not in only:
            continue
        shape = tuple(int(d) for d in r["input_shape"].split("x"))
        if ra.is_random_name(r["model"]):
            try:
                s = ra.spec(r["model"], base)
            except ValueError as e:
                raise ValueError(f"{path}:{i}: {e}") from None
            if s.shape != shape:
                raise ValueError(f"{path}:{i}: input_shape {r['input_shape']} is not the "
                                 f"{'x'.join(map(str, s.shape))} that {r['model']} takes")
            builder, src = s.builder, s.source
        else:
            builder = em_build.get(r["file"])
            src = "export_models"
        if builder is None:
            builder = torchvision_builder(r["model"])
            src = "torchvision"
        if builder is None:
            print(f"models: {path}:{i}: no builder for {r['model']}; skipped", file=sys.stderr)
            continue
        s = ModelSpec(name=r["model"], family=r["family"], input_name=r["input_name"], shape=shape,
                      dtype=r["input_dtype"], onnx_path=os.path.join(base, r["file"]), source=src,
                      builder=builder)
        if s.key() in seen:
            continue
        seen.add(s.key())
        out.append(s)
    return out


def fold_batchnorm(torch, model):
    """Folds every eval-mode BatchNorm that directly follows a convolution into it, as the ONNX
    exporter does (do_constant_folding), so the module runs the computation its graph describes.

    torch.fx's inference fuse where the model traces; otherwise each Conv -> BatchNorm pair that
    sits side by side in an nn.Sequential. Returns (model, how, bn_before, bn_after)."""
    def count(m):
        return sum(1 for q in m.modules() if isinstance(q, torch.nn.modules.batchnorm._BatchNorm))
    before = count(model)
    if before == 0:
        return model, "none-present", 0, 0
    try:
        from torch.fx.experimental.optimization import fuse
        fused = fuse(model)
        return fused, "fx", before, count(fused)
    except Exception:  # noqa: BLE001 - not symbolically traceable: fold the Sequential pairs
        pass
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    convs = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
    for seq in [m for m in model.modules() if isinstance(m, torch.nn.Sequential)]:
        names = list(seq._modules)
        for a, b in zip(names, names[1:]):
            conv, bn = seq._modules[a], seq._modules[b]
            if isinstance(conv, convs) and isinstance(bn, torch.nn.modules.batchnorm._BatchNorm) \
                    and bn.track_running_stats and not bn.training:
                seq._modules[a] = fuse_conv_bn_eval(conv, bn)
                seq._modules[b] = torch.nn.Identity()
    return model, "sequential", before, count(model)


def export_onnx(torch, spec, path, opset=EXPORT_OPSET):
    """Exports spec's model without weights (export_params=False), batch as a symbolic dim, input
    named as the spec says, on CPU in fp32 (the graph is the same at every precision)."""
    model = spec.build().eval()
    x = spec.make_input(torch, 1)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with torch.no_grad():
            torch.onnx.export(model, x, tmp, export_params=False, opset_version=opset,
                              do_constant_folding=True, input_names=[spec.input_name],
                              output_names=["output"],
                              dynamic_axes={spec.input_name: {0: "batch"}, "output": {0: "batch"}})
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
