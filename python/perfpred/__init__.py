"""perfpred from Python: inference latency, energy and peak memory of a model on a device, before
deploying it. A thin layer over libperfpred (ctypes, no compiler needed): every call is one
perfpred_json request, the same entry point the command line's --json uses (docs/python.md).

    >>> import perfpred
    >>> p = perfpred.predict("examples/resnet18.onnx", device="rpi5")
    >>> p.latency.value, p.latency.interval.lo, p.latency.interval.hi

Errors raise perfpred.Error (the library's message, .status); nothing is printed.
"""
import math
import os
import tempfile

from ._lib import Error, call, compare_plot, find_library, version

__all__ = ["predict", "compare", "mig", "devices", "inspect", "Error", "Prediction", "Figure",
           "Interval", "MigAdvice", "find_library", "version"]


class Interval:
    """How sure a figure is: [lo, hi] in the figure's unit, holding the measurement with nominal
    probability `coverage` (0.8), from n held-out rows of the device's calibration (split-
    conformal; `path` is the answer path). When there is none, n == 0, lo/hi/coverage are None
    and `source` says why. bool(interval) is False then."""

    def __init__(self, d):
        d = d or {}
        self.lo = d.get("lo")
        self.hi = d.get("hi")
        self.coverage = d.get("coverage")
        self.n = d.get("n", 0)
        self.path = d.get("path")
        self.log_lo = d.get("log_lo")
        self.log_hi = d.get("log_hi")
        self.checked_inside_pct = d.get("checked_inside_pct")
        self.source = d.get("source", "")

    def __bool__(self):
        return self.n > 0 and self.lo is not None

    def __repr__(self):
        if not self:
            return "Interval(none: %r)" % self.source
        return "Interval(lo=%g, hi=%g, coverage=%g, n=%d, path=%r)" % (
            self.lo, self.hi, self.coverage, self.n, self.path)


class Figure:
    """One predicted figure: value (None when unavailable), unit ("ms", "mJ", "bytes"),
    provenance ("calibrated", "transferred", "mixed", "estimate", "unavailable"), source (the
    model and data behind it) and interval (an Interval; only latencies carry one)."""

    def __init__(self, d):
        self.value = d.get("value")
        self.unit = d.get("unit")
        self.provenance = d.get("provenance")
        self.source = d.get("source", "")
        self.interval = Interval(d.get("interval"))
        self.members = d.get("members")

    def __float__(self):
        return float("nan") if self.value is None else float(self.value)

    def text(self):
        if self.value is None:
            return "-"
        if self.unit == "bytes":
            s = _fmt_bytes(self.value)
        else:
            s = "%.3f %s" % (self.value, self.unit)
        if self.interval:
            s += " [%.3f, %.3f] %.0f %%" % (self.interval.lo, self.interval.hi,
                                           100 * self.interval.coverage)
        return s

    def __repr__(self):
        return "Figure(%s, %s)" % (self.text(), self.provenance)


def _fmt_bytes(v):
    for unit, f in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if v >= f:
            return "%.2f %s" % (v / f, unit)
    return "%.0f B" % v


class Prediction:
    """A prediction: device (canonical name), batch, latency / energy / peak_memory (Figure),
    kernels (the per-kernel breakdown, a list of dicts, when asked for with layers=True, else
    None), mig (the MIG advice dict of a GPU with MIG profiles, else None), device_info (the
    device's description) and raw (the whole documented JSON answer)."""

    def __init__(self, answer, prediction=None, device_info=None, model=None):
        p = prediction if prediction is not None else answer["prediction"]
        self.raw = answer
        self.model = model if model is not None else answer.get("model")
        self.device = p["device"]
        self.batch = p["batch"]
        self.latency = Figure(p["latency"])
        self.energy = Figure(p["energy"])
        self.peak_memory = Figure(p["peak_memory"])
        self.memory_breakdown = p.get("memory_breakdown")
        self.fits_in_memory = p.get("fits_in_memory")
        self.stack = p.get("stack")
        self.device_info = device_info if device_info is not None else answer.get("device")
        self.kernels = answer.get("kernels") if prediction is None else None
        self.mig = answer.get("mig") if prediction is None else None

    def __str__(self):
        lines = ["%s on %s, batch %d" % (self.model, self.device, self.batch)]
        for name, f in (("latency", self.latency), ("energy", self.energy),
                        ("peak memory", self.peak_memory)):
            lines.append("  %-12s %-42s %s" % (name, f.text(), f.provenance))
        if not self.latency.interval:
            lines.append("  %-12s %s" % ("", self.latency.interval.source))
        return "\n".join(lines)

    def __repr__(self):
        return "<perfpred.Prediction %s batch %d: latency %s>" % (self.device, self.batch,
                                                                 self.latency.text())


class MigAdvice:
    """MIG advice for one GPU: profiles (a list of (Prediction, dict with fits, meets_slo,
    instances)), memory_rule_choice (DIPPM's rule), slo_choice, max_instances_under_slo, raw."""

    def __init__(self, answer):
        self.raw = answer
        self.gpu = answer["gpu"]
        self.slo_ms = answer.get("slo_ms")
        self.memory_rule_choice = answer.get("memory_rule_choice")
        self.slo_choice = answer.get("slo_choice")
        self.max_instances_under_slo = answer.get("max_instances_under_slo")
        self.profiles = [
            (Prediction(answer, p["prediction"], p["device"], answer.get("model")),
             {"profile": p["device"].get("mig_profile"), "fits": p["fits"],
              "meets_slo": p["meets_slo"], "instances": p["instances"]})
            for p in answer["profiles"]]

    def __repr__(self):
        return "<perfpred.MigAdvice %s: memory rule %s, SLO %s>" % (
            self.gpu, self.memory_rule_choice, self.slo_choice)


# ------------------------------------------------------------------------ models ----

def _is_torch_module(m):
    try:
        import torch
    except ImportError:
        return False
    return isinstance(m, torch.nn.Module)


class _Exported:
    """A torch.nn.Module exported weightless (export_params=False) to a temporary ONNX file,
    removed on exit; the leading dim of every input is symbolic ("batch")."""

    def __init__(self, module, example_input):
        self.module = module
        self.example = example_input
        self.path = None
        self.batch = None

    def __enter__(self):
        import torch
        if self.example is None:
            raise Error("a torch.nn.Module needs an example input: predict(module, "
                        "torch.randn(1, 3, 224, 224), ...)", 1)
        args = self.example if isinstance(self.example, tuple) else (self.example,)
        if not args or not all(isinstance(a, torch.Tensor) for a in args):
            raise Error("example input: a tensor or a tuple of tensors", 1)
        names = ["input"] if len(args) == 1 else ["input%d" % i for i in range(len(args))]
        self.batch = int(args[0].shape[0]) if args[0].dim() > 0 else None
        fd, self.path = tempfile.mkstemp(prefix="perfpred-", suffix=".onnx")
        os.close(fd)
        try:
            torch.onnx.export(self.module, args, self.path, export_params=False,
                              input_names=names,
                              dynamic_axes={n: {0: "batch"} for n in names
                                            if args[names.index(n)].dim() > 0},
                              opset_version=13)
        except Exception as e:  # torch raises many kinds; the caller gets one
            os.unlink(self.path)
            raise Error("exporting %s to ONNX failed: %s" % (type(self.module).__name__, e), 4)
        return self

    def __exit__(self, *exc):
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)
        return False


def _model_request(model, example_input, batch, fn):
    """Calls fn(path, batch, name) with model as an ONNX path (str or os.PathLike) or a
    torch.nn.Module exported for the call."""
    if isinstance(model, (str, os.PathLike)):
        if example_input is not None:
            raise Error("example_input goes with a torch.nn.Module, not an ONNX path", 1)
        p = os.fspath(model)
        return fn(p, batch, p)
    if _is_torch_module(model):
        with _Exported(model, example_input) as ex:
            b = batch if batch is not None else ex.batch
            return fn(ex.path, b, "<%s>" % type(model).__name__)
    raise Error("model: an ONNX file path or a torch.nn.Module (got %s)" % type(model).__name__,
                1)


def _common(req, inputs, runtime, precision, layer_sum_only, allow_unknown):
    if inputs:
        req["inputs"] = {k: [int(d) for d in v] for k, v in inputs.items()}
    if runtime:
        req["runtime"] = runtime
    if precision:
        req["precision"] = precision
    if layer_sum_only:
        req["layer_sum_only"] = True
    if allow_unknown:
        req["allow_unknown"] = True
    return req


def _fix_model(answer, name):
    if isinstance(answer, dict) and "model" in answer:
        answer["model"] = name
    return answer


# ------------------------------------------------------------------------ the API ----

def predict(model, example_input=None, *, device="a100", batch=None, layers=False, inputs=None,
            runtime=None, precision=None, layer_sum_only=False, allow_unknown=False,
            config_dir=None):
    """Predicts latency, energy and peak memory of model on device.

    model: an ONNX file path, or a torch.nn.Module with example_input (a tensor or a tuple of
    tensors; exported weightless to a temporary ONNX file, batch defaulting to its leading dim).
    batch: the symbolic batch dim (default 1 for ONNX files). layers=True adds the per-kernel
    breakdown (Prediction.kernels). inputs: {name: shape} overrides. runtime / precision choose a
    GPU runtime stack ("pytorch-eager", "torchscript", "tensorrt", or "cuda-graph": eager
    PyTorch's kernels replayed; "fp32", "fp16", "bf16", or "amp", "amp-bf16": eager PyTorch under
    autocast)."""
    def run(path, b, name):
        req = {"command": "predict", "model": path, "device": device}
        if b is not None:
            req["batch"] = int(b)
        if layers:
            req["layers"] = True
        _common(req, inputs, runtime, precision, layer_sum_only, allow_unknown)
        return Prediction(_fix_model(call(req, config_dir), name))
    return _model_request(model, example_input, batch, run)


def _rows(answer):
    out = []
    for r in answer["rows"]:
        p = r["prediction"]
        lat, iv = p["latency"], p["latency"]["interval"]
        rk = r.get("ranking") or {}
        out.append({
            "device": r["device"]["name"], "batch": p["batch"],
            "latency_ms": lat["value"], "latency_lo_ms": iv["lo"], "latency_hi_ms": iv["hi"],
            "interval_coverage": iv["coverage"], "latency_provenance": lat["provenance"],
            "energy_mj": p["energy"]["value"], "energy_provenance": p["energy"]["provenance"],
            "peak_memory_bytes": p["peak_memory"]["value"],
            "memory_provenance": p["peak_memory"]["provenance"],
            "throughput_per_s": r["throughput_per_s"], "fits_in_memory": p["fits_in_memory"],
            "pareto": r["pareto"],
            "faster_than_next_decided": rk.get("decided") if rk else None,
        })
    return out


def compare(model, example_input=None, *, devices, batches=None, inputs=None, runtime=None,
            precision=None, layer_sum_only=False, allow_unknown=False, as_frame=None, plot=None,
            plot_y=None, raw=False, config_dir=None):
    """Predicts model on every device at every batch size: rows sorted by latency, one dict per
    (device, batch) with latency and its interval, energy, peak memory, provenance, throughput,
    the Pareto flag and whether the ranking against the next row is decided (the two intervals
    exist and do not overlap). A pandas DataFrame when pandas is importable (as_frame=None) or
    as_frame=True; a list of dicts with as_frame=False. plot="out.svg" also draws latency against
    energy (plot_y="memory": peak memory) with gnuplot. raw=True returns the JSON answer."""
    if isinstance(devices, str):
        devices = [devices]
    if batches is not None and not isinstance(batches, (list, tuple)):
        batches = [batches]

    def run(path, b, name):
        req = {"command": "compare", "model": path, "device": list(devices)}
        if batches is not None:
            req["batch"] = [int(x) for x in batches]
        elif b is not None:
            req["batch"] = [int(b)]
        _common(req, inputs, runtime, precision, layer_sum_only, allow_unknown)
        return _fix_model(call(req, config_dir), name)
    answer = _model_request(model, example_input, None, run)
    if plot is not None:
        compare_plot(answer, plot, plot_y)
    if raw:
        return answer
    rows = _rows(answer)
    if as_frame is False:
        return rows
    try:
        import pandas
    except ImportError:
        if as_frame:
            raise Error("as_frame=True needs pandas (apt-get install python3-pandas)", 1)
        return rows
    return pandas.DataFrame(rows)


def mig(model, example_input=None, *, slo_ms=None, gpu="a100", batch=None, inputs=None,
        runtime=None, precision=None, config_dir=None):
    """MIG advice: every MIG profile of gpu, the smallest that holds the predicted peak memory
    (DIPPM's rule) and, with slo_ms, the smallest that meets the latency objective."""
    def run(path, b, name):
        req = {"command": "mig", "model": path, "device": gpu}
        if b is not None:
            req["batch"] = int(b)
        if slo_ms is not None:
            if not (isinstance(slo_ms, (int, float)) and math.isfinite(slo_ms) and slo_ms > 0):
                raise Error("slo_ms: a positive number of milliseconds", 1)
            req["slo_ms"] = float(slo_ms)
        _common(req, inputs, runtime, precision, False, False)
        return MigAdvice(_fix_model(call(req, config_dir), name))
    return _model_request(model, example_input, batch, run)


def devices(config_dir=None):
    """Every device descriptor: a list of dicts (name, kind, memory_gb, peak_tflops, runtime,
    calibrated_latency, ...; docs/json.md, DEVICE)."""
    return call({"command": "devices"}, config_dir)


def inspect(model, example_input=None, *, batch=None, inputs=None, all=False):
    """The model's inputs, totals and layers (docs/json.md, inspect), as a dict."""
    def run(path, b, name):
        req = {"command": "inspect", "model": path}
        if b is not None:
            req["batch"] = int(b)
        if all:
            req["all"] = True
        _common(req, inputs, None, None, False, False)
        return _fix_model(call(req, need_ctx=False), name)
    return _model_request(model, example_input, batch, run)
