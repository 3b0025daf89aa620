#!/usr/bin/python3
"""gpu_runner.py: the measurement campaign for an NVIDIA GPU (and, tiny, for the CPU path).

A driver splits the work into chunks (one per model; the per-kernel sweep in chunks of rows) and runs
each chunk in its own Python process, so a crash or an out-of-memory loses one chunk only and GPU
memory figures start clean. A chunk writes its files atomically, then a marker; a rerun skips the
chunks that have one. Per model, precision and batch: latency (CUDA events, interleaved rounds),
energy per batch (NVML's total-energy counter over a timed loop), peak memory (allocator and NVML),
per-operator times (torch.profiler) mapped onto the exported ONNX graph. Everything is read-only on
the GPU: clocks, power limits and MIG mode are recorded as found, never changed.
"""

import argparse
import csv
import gc
import json
import os
import subprocess
import sys
import threading
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import layer_runner  # noqa: E402
import models as model_specs  # noqa: E402
import network_runner  # noqa: E402
import timing  # noqa: E402

DEFAULT_BATCHES = "1,2,4,8,16,32,64,128,256"
# timm models that torchvision lacks (measured with --timm when timm is installed).
TIMM_MODELS = ("efficientnet_lite0", "mobilevit_s", "mobilevitv2_050", "deit_tiny_patch16_224",
               "deit_small_patch16_224", "convnextv2_atto", "ghostnet_100", "levit_128",
               "mixnet_s", "rexnet_100", "tinynet_a", "poolformer_s12", "edgenext_small",
               "efficientformer_l1", "resnest14d", "ese_vovnet19b_dw", "regnetz_b16",
               "fbnetv3_b", "lcnet_050", "hrnet_w18_small")

DETAIL_COLUMNS = [
    "model", "family", "precision", "batch", "status", "latency_ms", "latency_iqr_ms",
    "latency_min_ms", "latency_max_ms", "latency_mean_ms", "repetitions", "energy_j",
    "energy_dynamic_j", "avg_power_w", "idle_power_w", "energy_iterations", "energy_seconds",
    "allocated_before_bytes", "max_allocated_bytes", "max_reserved_bytes", "nvml_used_before_bytes",
    "nvml_used_peak_bytes", "sm_clock_min_mhz", "sm_clock_max_mhz", "device_name", "gpu_name",
    "driver_version", "cuda", "cudnn", "torch", "sm_clock_mhz", "mem_clock_mhz", "power_limit_w",
    "mig_mode", "temperature_c", "note", "utc"]
OPS_COLUMNS = ["model", "graph", "precision", "batch", "seq", "aten_op", "input_shapes",
               "time_us", "time_source", "n_kernels", "iterations", "onnx_node", "onnx_op_type",
               "match", "device_name", "gpu_name", "runtime_version", "utc"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUDGET, EXIT_CHUNK_ERRORS = 0, 1, 2, 3, 4


def log(msg):
    print(f"gpu_runner: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------ environment ----

def env_info(torch, device, gpu=None):
    """Device, driver, CUDA, framework versions and clocks, as found (read-only)."""
    import platform
    e = {"device": device, "torch": torch.__version__, "python": platform.python_version(),
         "utc": timing.utc_now_iso(), "threads": torch.get_num_threads()}
    try:
        import torchvision
        e["torchvision"] = torchvision.__version__
    except ImportError:
        e["torchvision"] = None
    try:
        import timm
        e["timm"] = timm.__version__
    except ImportError:
        e["timm"] = None
    if device == "cuda":
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        e.update({"cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                  "gpu_name_torch": p.name, "compute_capability": f"{p.major}.{p.minor}",
                  "sm_count": p.multi_processor_count, "gpu_memory_bytes": p.total_memory,
                  "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
                  "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
                  "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
                  "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")})
        if gpu is not None:
            e.update(gpu.describe())
        else:
            e["nvml"] = "unavailable"
        e["machine"] = e.get("gpu_name") or p.name
    else:
        e["machine"] = timing.cpu_model()
    return e


def env_version_suffix(env):
    if env["device"] != "cuda":
        return ""
    return (f"; driver {env.get('driver_version')}; gpu {env.get('gpu_name') or env.get('gpu_name_torch')}"
            f"; sm_clock {env.get('sm_clock_mhz')} MHz; mem_clock {env.get('mem_clock_mhz')} MHz"
            f"; power_limit {env.get('power_limit_w')} W; mig {env.get('mig_mode_current')}")


# ------------------------------------------------------------------------------ config ----

def build_config(a):
    precisions = [p for p in a.precision.split(",") if p]
    if not precisions or len(set(precisions)) != len(precisions):
        raise ValueError("--precision: give fp32, fp16 or fp32,fp16")
    for p in precisions:
        if p not in ("fp32", "fp16"):
            raise ValueError(f"--precision: {p!r} is not fp32 or fp16")
    names = []
    if a.models == "all":
        names = model_specs.torchvision_names()
    else:
        names = [m.strip() for m in a.models.split(",") if m.strip()]
    if a.timm:
        try:
            import timm
            avail = set(timm.list_models())
            names += [n for n in TIMM_MODELS if n in avail and n not in names]
        except ImportError:
            log("--timm: timm is not installed; torchvision models only")
    for n in names:
        if model_specs.spec_for_name(n, ".", "auto") is None:
            raise ValueError(f"unknown model {n!r}")
    if len(set(names)) != len(names):
        raise ValueError("--models: duplicate name")
    return {
        "device": a.device, "device_name": a.device_name, "models": names,
        "batches": timing.parse_int_list(a.batch, "--batch"), "precisions": precisions,
        "threads": a.threads, "rounds": a.rounds, "burst": a.burst,
        "warmup_calls": a.warmup_calls, "warmup_ms": a.warmup_ms, "max_visit_s": a.max_visit_s,
        "energy_s": a.energy_s, "profile_batches": timing.parse_int_list(a.profile_batch,
                                                                           "--profile-batch")
        if a.profile_batch else [],
        "profile_iters": a.profile_iters,
        "sweep": {"per_family": a.sweep_per_family, "chunk_rows": a.sweep_chunk_rows,
                  "seed": a.seed, "max_mb": a.sweep_max_mb, "rounds": a.sweep_rounds,
                  "burst": a.sweep_burst, "big": a.device == "cuda"},
        "seed": a.seed,
    }


def chunk_ids(cfg):
    ids = [f"net-{m}" for m in cfg["models"]]
    n = sweep_rows_total(cfg)
    per = cfg["sweep"]["chunk_rows"]
    for k in range((n + per - 1) // per if per > 0 else 0):
        for p in cfg["precisions"]:
            if p == "fp16" and cfg["device"] == "cpu":
                continue
            ids.append(f"sweep-{k:04d}-{p}")
    return ids


def sweep_rows_total(cfg):
    import sweep
    return len(sweep.FAMILIES) * cfg["sweep"]["per_family"]


def sweep_plan(cfg):
    import sweep
    s = cfg["sweep"]
    return sweep.generate(s["per_family"], seed=s["seed"], big=s["big"],
                          max_bytes=s["max_mb"] << 20, esize=4)


# ------------------------------------------------------------------------------ driver ----

def chunk_paths(out, cid):
    d = os.path.join(out, "chunks")
    return {"dir": d, "marker": os.path.join(d, cid + ".done.json"),
            "failed": os.path.join(d, cid + ".failed.json"), "log": os.path.join(out, "logs",
                                                                                 cid + ".log")}


def driver(a, cfg):
    out = a.out
    os.makedirs(os.path.join(out, "chunks"), exist_ok=True)
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    run_json = os.path.join(out, "run.json")
    if os.path.exists(run_json):
        with open(run_json, encoding="utf-8") as f:
            old = json.load(f)
        if old != cfg:
            raise timing.ResumeMismatch(
                f"{run_json} holds a different configuration; rerun with the same options, use "
                "another --out, or pass --restart to discard the finished chunks")
    else:
        timing.write_text_atomic(run_json, json.dumps(cfg, indent=1, sort_keys=True) + "\n")
    ids = chunk_ids(cfg)
    if a.only:
        want = set(a.only.split(","))
        ids = [c for c in ids if c in want or c.split("-", 1)[0] in want]
    if any(c.startswith("sweep-") for c in ids):
        plan = sweep_plan(cfg)
        per = cfg["sweep"]["chunk_rows"]
        for k in range((len(plan) + per - 1) // per):
            path = os.path.join(out, "sweep", f"plan-{k:04d}.csv")
            if not os.path.exists(path):
                timing.write_csv_atomic(path, ["op_kind", "op_type", "batch", "inputs", "attrs"],
                                        plan[k * per:(k + 1) * per])
    t0 = time.monotonic()
    sweep_t = 0.0
    failed, skipped_budget = [], []
    if cfg["device"] == "cpu" and "fp16" in cfg["precisions"]:
        log("fp16 is skipped on the CPU path (PyTorch CPU kernels for fp16 are not what a GPU runs)")
    for i, cid in enumerate(ids):
        p = chunk_paths(out, cid)
        if os.path.exists(p["marker"]):
            with open(p["marker"], encoding="utf-8") as f:
                if json.load(f).get("status") == "done":
                    continue
        elapsed = time.monotonic() - t0
        if a.budget_min is not None and elapsed >= a.budget_min * 60:
            skipped_budget.append(cid)
            continue
        is_sweep = cid.startswith("sweep-")
        if is_sweep and sweep_t >= a.sweep_budget_min * 60:
            skipped_budget.append(cid)
            continue
        remaining = []
        if a.budget_min is not None:
            remaining.append(a.budget_min * 60 - elapsed)
        if is_sweep:
            remaining.append(a.sweep_budget_min * 60 - sweep_t)
        cmd = [sys.executable, os.path.abspath(__file__), "--out", out, "--chunk", cid]
        if remaining:
            cmd += ["--chunk-budget-s", f"{max(1.0, min(remaining)):.1f}"]
        log(f"[{i + 1}/{len(ids)}] {cid} ...")
        tc = time.monotonic()
        with open(p["log"], "w", encoding="utf-8") as lf:
            try:
                rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT,
                                    timeout=a.chunk_timeout_min * 60).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        dt = time.monotonic() - tc
        if is_sweep:
            sweep_t += dt
        if rc in (0, EXIT_BUDGET) and os.path.exists(p["marker"]):
            with open(p["marker"], encoding="utf-8") as f:
                st = json.load(f).get("status")
            log(f"[{i + 1}/{len(ids)}] {cid}: {st} in {dt:.0f}s")
            if os.path.exists(p["failed"]):
                os.remove(p["failed"])
            continue
        tail = _tail(p["log"], 3000)
        timing.write_text_atomic(p["failed"], json.dumps(
            {"chunk": cid, "rc": rc, "seconds": round(dt, 1), "log_tail": tail}, indent=1) + "\n")
        failed.append(cid)
        log(f"[{i + 1}/{len(ids)}] {cid}: FAILED (rc {rc}); see {p['log']}")
    merge(out)
    if failed:
        log(f"{len(failed)} chunks failed: {', '.join(failed)} (rerun to retry them)")
    if skipped_budget:
        log(f"{len(skipped_budget)} chunks not started (budget): rerun to continue")
        return EXIT_BUDGET
    return EXIT_CHUNK_ERRORS if failed else EXIT_OK


def _tail(path, n):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def merge(out):
    """Concatenates the chunks' files into OUT/networks.csv, networks_detail.csv, operators.csv,
    layers.csv and env.json (atomically; rerunnable)."""
    cdir = os.path.join(out, "chunks")
    names = sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []
    nets, detail, ops, lays, envs = [], [], [], [], []
    for n in names:
        path = os.path.join(cdir, n)
        if n.startswith("net-") and n.endswith(".networks.csv"):
            for r in _read_csv(path):
                # the chunk's graph path is relative to chunks/; the merged file lives in OUT
                r["model"] = os.path.relpath(os.path.normpath(os.path.join(cdir, r["model"])), out)
                nets.append(r)
        elif n.endswith(".detail.csv"):
            detail += _read_csv(path)
        elif n.endswith(".ops.csv"):
            ops += _read_csv(path)
        elif n.startswith("sweep-") and n.endswith(".csv") and ".errors" not in n:
            lays += _read_csv(path)
        elif n.endswith(".done.json"):
            with open(path, encoding="utf-8") as f:
                env = dict(json.load(f).get("env") or {})
            if not env:
                continue
            utc = env.pop("utc", None)
            for e in envs:  # one entry per distinct environment, with the chunks measured in it
                if e["env"] == env:
                    e["chunks"].append(n[:-len(".done.json")])
                    e["first_utc"] = min(e["first_utc"], utc or e["first_utc"])
                    e["last_utc"] = max(e["last_utc"], utc or e["last_utc"])
                    break
            else:
                envs.append({"env": env, "chunks": [n[:-len(".done.json")]],
                             "first_utc": utc or "", "last_utc": utc or ""})
    timing.write_csv_atomic(os.path.join(out, "networks.csv"), network_runner.NET_COLUMNS, nets)
    timing.write_csv_atomic(os.path.join(out, "networks_detail.csv"), DETAIL_COLUMNS, detail)
    timing.write_csv_atomic(os.path.join(out, "operators.csv"), OPS_COLUMNS, ops)
    timing.write_csv_atomic(os.path.join(out, "layers.csv"), layer_runner.LAYER_COLUMNS, lays)
    timing.write_text_atomic(os.path.join(out, "env.json"),
                             json.dumps(envs, indent=1, sort_keys=True) + "\n")
    log(f"merged: {len(nets)} network rows, {len(detail)} detail rows, {len(ops)} operator rows, "
        f"{len(lays)} layer rows into {out}")


# ---------------------------------------------------------------------- chunk: a model ----

def _is_oom(e, torch):
    oom_t = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom_t is not None and isinstance(e, oom_t)) or "out of memory" in str(e).lower()


class _MemPoller:
    """Polls NVML every interval seconds in a thread: the maximum used memory, and the range of
    SM clocks seen (throttling shows up as a low minimum)."""

    def __init__(self, gpu, interval=0.01):
        self.gpu, self.interval, self.peak = gpu, interval, None
        self.clocks = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        n = 0
        while not self._stop.is_set():
            v = self.gpu.memory_used()
            if v is not None and (self.peak is None or v > self.peak):
                self.peak = v
            if n % 10 == 0:
                c = self.gpu.sm_clock_mhz()
                if c is not None:
                    self.clocks.append(c)
            n += 1
            self._stop.wait(self.interval)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        return False


def idle_power_w(gpu, seconds=1.0):
    """Average power over `seconds` of idleness from the energy counter (None without one)."""
    e0 = gpu.energy_mj() if gpu else None
    if e0 is None:
        return None
    t0 = time.perf_counter()
    time.sleep(seconds)
    e1 = gpu.energy_mj()
    return (e1 - e0) / 1000.0 / (time.perf_counter() - t0)


def memory_pass(torch, fn, gpu):
    """Allocator peak of one forward after a warm-up one, on a clean allocator."""
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    before_alloc = torch.cuda.memory_allocated()
    nvml_before = gpu.memory_used() if gpu else None
    fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    y = fn()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    r = {"max_allocated_bytes": torch.cuda.max_memory_allocated(),
         "max_reserved_bytes": torch.cuda.max_memory_reserved(),
         "alloc_before_bytes": before_alloc, "nvml_used_before_bytes": nvml_before,
         "forward_s": dt}
    del y
    return r


def energy_pass(torch, fn, gpu, seconds, est_s, idle_w):
    """Forwards back to back for at least `seconds` (and 10 forwards) between two reads of NVML's
    total-energy counter (mJ since driver load). Returns per-forward energy and the NVML peak."""
    if gpu is None or gpu.energy_mj() is None:
        return {}
    group = max(1, int(0.05 / max(est_s, 1e-6)))  # synchronise every ~50 ms
    with _MemPoller(gpu) as poll:
        torch.cuda.synchronize()
        e0, t0 = gpu.energy_mj(), time.perf_counter()
        n = 0
        while True:
            for _ in range(group):
                fn()
            n += group
            torch.cuda.synchronize()
            if n >= 10 and time.perf_counter() - t0 >= seconds:
                break
        t1, e1 = time.perf_counter(), gpu.energy_mj()
    joules = (e1 - e0) / 1000.0
    dt = t1 - t0
    r = {"energy_j": joules / n, "avg_power_w": joules / dt, "energy_iterations": n,
         "energy_seconds": dt, "nvml_used_peak_bytes": poll.peak,
         "sm_clock_min_mhz": min(poll.clocks) if poll.clocks else None,
         "sm_clock_max_mhz": max(poll.clocks) if poll.clocks else None}
    if idle_w is not None:
        r["energy_dynamic_j"] = max(0.0, joules - idle_w * dt) / n
        r["idle_power_w"] = idle_w
    return r


def ensure_graph(torch, spec):
    """Exports the model's graph (export_params=False) unless it exists; when this PyTorch cannot
    export it, copies the repository's fixture of the same name. Returns '' or the reason there is
    no graph (the rows then stay out of networks.csv: a row must map to a graph)."""
    if os.path.exists(spec.onnx_path):
        return ""
    try:
        model_specs.export_onnx(torch, spec, spec.onnx_path)
        return ""
    except Exception as e:  # noqa: BLE001 - an exporter failure must not lose the measurements
        why = f"ONNX export failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    fixture = os.path.join(model_specs.REPO, "tests", "fixtures", "models",
                           os.path.basename(spec.onnx_path))
    if os.path.exists(fixture):
        import shutil
        shutil.copyfile(fixture, spec.onnx_path)
        log(f"{spec.name}: {why}; using the fixture {fixture}")
        return ""
    log(f"{spec.name}: {why}; its rows go to networks_detail.csv only")
    return why


_MAP_CACHE = {}


def _mapping(aten_names, nodes):
    import opprofile
    key = tuple(aten_names)
    if key not in _MAP_CACHE:
        _MAP_CACHE[key] = opprofile.map_to_onnx(aten_names, nodes)
    return _MAP_CACHE[key]


def run_model_chunk(out, cfg, name, budget_s=None):
    import torch
    import opprofile
    dev = cfg["device"]
    torch.set_num_threads(cfg["threads"])
    gpu, gpu_why = None, ""
    if dev == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda but torch.cuda.is_available() is False")
        import nvml
        backend, gpu_why = nvml.open_nvml()
        if backend is not None:
            try:
                gpu = nvml.GpuHandle(backend, torch.cuda.current_device())
            except nvml.NvmlError as e:
                gpu_why = str(e)
        if gpu is None:
            log(f"NVML unavailable ({gpu_why}): energy and NVML memory stay empty")
    env = env_info(torch, dev, gpu)
    cdir = os.path.join(out, "chunks")
    spec = model_specs.spec_for_name(name, os.path.join(out, "graphs"))
    graph_error = ensure_graph(torch, spec)
    nodes = opprofile.onnx_nodes(spec.onnx_path) if not graph_error else None
    graph_rel = os.path.relpath(spec.onnx_path, cdir)
    idle_w = idle_power_w(gpu) if dev == "cuda" else None
    torch.manual_seed(cfg["seed"])
    model = spec.build().eval()
    rows, detail, ops = [], [], []
    rv = layer_runner.runtime_version(torch, cfg["threads"], dev) + env_version_suffix(env)
    notes = []
    t_start = time.monotonic()
    for prec in cfg["precisions"]:
        if prec == "fp16" and dev == "cpu":
            log(f"{name}: fp16 skipped on CPU")
            notes.append("fp16 skipped on CPU")
            continue
        dtype = torch.float16 if prec == "fp16" else torch.float32
        model = model.to(device=dev, dtype=dtype)
        info, ok = {}, []
        oom_at = None
        for b in cfg["batches"]:
            base = {"model": name, "family": spec.family, "precision": prec, "batch": b}
            if oom_at is not None:
                detail.append(dict(base, status="oom", note=f"skipped: batch {oom_at} ran out of "
                                                            "memory", utc=timing.utc_now_iso()))
                continue
            try:
                x = spec.make_input(torch, b, device=dev, dtype=dtype, seed=b)

                def fwd(x=x):
                    with torch.inference_mode():
                        return model(x)
                if dev == "cuda":
                    m = memory_pass(torch, fwd, gpu)
                    m.update(energy_pass(torch, fwd, gpu, cfg["energy_s"], m["forward_s"], idle_w))
                else:
                    m = {}
                info[b] = m
                ok.append(b)
                del x, fwd
            except Exception as e:  # noqa: BLE001
                if not (dev == "cuda" and _is_oom(e, torch)):
                    raise
                oom_at = b
                detail.append(dict(base, status="oom", note=str(e).splitlines()[0][:200],
                                   utc=timing.utc_now_iso()))
            if oom_at == b:
                # outside the except block: the exception's frames (holding x) are gone now
                x = fwd = None
                gc.collect()
                torch.cuda.empty_cache()
        # latency: interleaved rounds over the batches that fit
        protocol = timing.Protocol(rounds=cfg["rounds"], burst=cfg["burst"],
                                   warmup_calls=cfg["warmup_calls"],
                                   warmup_min_s=cfg["warmup_ms"] / 1000.0, visit_warmup=1,
                                   min_sample_us=0.0, seed=cfg["seed"],
                                   max_visit_s=cfg["max_visit_s"])
        ident = {"chunk": f"net-{name}", "precision": prec, "cfg": cfg}
        store = timing.PartialStore(os.path.join(cdir, f"net-{name}-{prec}.partial.jsonl"), ident)

        def build(key, prec=prec, dtype=dtype):
            b = int(key[1:])
            x = spec.make_input(torch, b, device=dev, dtype=dtype, seed=b)

            def run():
                with torch.inference_mode():
                    return model(x)
            run.nbytes = x.numel() * x.element_size()
            return run
        timer = timing.CudaEventTimer(torch) if dev == "cuda" else timing.CpuTimer()
        left = None if budget_s is None else max(0.0, budget_s - (time.monotonic() - t_start))
        prog = timing.make_progress(0, label=f"{name} {prec} ")
        try:
            res = timing.run_interleaved([f"b{b}" for b in ok], build, store, protocol,
                                         timer=timer, budget_s=left, progress=prog,
                                         cache_items=len(ok) + 1)
        finally:
            prog.close()
            store.close()
        for b in ok:
            key = f"b{b}"
            st = res.stats.get(key)
            m = info[b]
            base = {"model": name, "family": spec.family, "precision": prec, "batch": b}
            if st is None:
                err = res.errors.get(key, "not measured (budget)")
                detail.append(dict(base, status="oom" if "out of memory" in err.lower() else
                                   "error", note=err[:200], utc=timing.utc_now_iso()))
                continue
            utc, date = layer_runner.utc_of(store.last_time.get(key, time.time()))
            src = layer_runner.format_source(cfg["device_name"], f"gpu_runner/{name}",
                                             env["machine"], utc, protocol, st, res.inner[key])
            src += "; timer=cuda-events" if dev == "cuda" else "; timer=perf_counter"
            if m.get("energy_j") is not None:
                src += (f"; energy=nvml-total-energy over {m['energy_iterations']} forwards in "
                        f"{m['energy_seconds']:.2f}s (avg {m['avg_power_w']:.1f} W, idle "
                        f"{idle_w if idle_w is None else round(idle_w, 1)} W)")
            elif dev == "cuda":
                src += f"; energy=not measured (NVML: {gpu_why or 'no energy counter'})"
            else:
                src += "; energy=not measured on CPU; memory=not measured on CPU"
            if dev == "cuda":
                src += (f"; memory=torch.cuda.max_memory_allocated (reserved "
                        f"{m.get('max_reserved_bytes')}, nvml used peak "
                        f"{m.get('nvml_used_peak_bytes')})")
                if env.get("note"):
                    src += f"; {env['note']}"
            shape = "x".join(map(str, spec.input_shape(b)))
            if graph_error:
                notes.append(f"{prec} b{b}: not in networks.csv: {graph_error}")
            else:
                rows.append({
                    "model": graph_rel, "family": spec.family, "device": cfg["device_name"],
                    "runtime": layer_runner.RUNTIME, "runtime_version": rv, "precision": prec,
                    "batch": b, "input_shapes": f"{spec.input_name}:{shape}",
                    "latency_ms": f"{timing.ns_to_ms(st.median_ns):.6g}",
                    "latency_spread_ms": f"{timing.ns_to_ms(st.iqr_ns):.6g}",
                    "repetitions": st.calls,
                    "energy_j": "" if m.get("energy_j") is None else f"{m['energy_j']:.6g}",
                    "peak_memory_bytes": m.get("max_allocated_bytes", ""),
                    "source": src, "date": date})
            detail.append(dict(
                base, status="ok" if len(store.visits.get(key, {})) >= protocol.rounds
                else "partial",
                latency_ms=f"{timing.ns_to_ms(st.median_ns):.6g}",
                latency_iqr_ms=f"{timing.ns_to_ms(st.iqr_ns):.6g}",
                latency_min_ms=f"{timing.ns_to_ms(st.min_ns):.6g}",
                latency_max_ms=f"{timing.ns_to_ms(st.max_ns):.6g}",
                latency_mean_ms=f"{timing.ns_to_ms(st.mean_ns):.6g}", repetitions=st.calls,
                energy_j=m.get("energy_j"), energy_dynamic_j=m.get("energy_dynamic_j"),
                avg_power_w=m.get("avg_power_w"), idle_power_w=m.get("idle_power_w"),
                energy_iterations=m.get("energy_iterations"),
                energy_seconds=m.get("energy_seconds"),
                allocated_before_bytes=m.get("alloc_before_bytes"),
                max_allocated_bytes=m.get("max_allocated_bytes"),
                max_reserved_bytes=m.get("max_reserved_bytes"),
                nvml_used_before_bytes=m.get("nvml_used_before_bytes"),
                nvml_used_peak_bytes=m.get("nvml_used_peak_bytes"),
                sm_clock_min_mhz=m.get("sm_clock_min_mhz"),
                sm_clock_max_mhz=m.get("sm_clock_max_mhz"),
                note="; ".join(filter(None, [env.get("note"), "energy/memory not measured on CPU"
                                             if dev == "cpu" else ""])),
                utc=utc))
        # per-operator profile at the chosen batch sizes
        for b in [b for b in cfg["profile_batches"] if b in ok and f"b{b}" in res.stats]:
            x = spec.make_input(torch, b, device=dev, dtype=dtype, seed=b)

            def fwd(x=x):
                with torch.inference_mode():
                    return model(x)
            try:
                prof = opprofile.profile_forward(torch, fwd, dev, iters=cfg["profile_iters"])
            except Exception as e:  # noqa: BLE001 - the profile is an extra; keep the rest
                log(f"{name} {prec} b{b}: profiler failed: {type(e).__name__}: {e}")
                prof = []
            mapped = (_mapping([r["aten_op"] for r in prof], nodes)
                      if nodes is not None else [None] * len(prof))
            utc = timing.utc_now_iso()
            for r, mp in zip(prof, mapped):
                ops.append(dict(r, model=name, graph=graph_rel, precision=prec, batch=b,
                                time_source="cuda" if dev == "cuda" else "cpu",
                                onnx_node=mp[0] if mp else "", onnx_op_type=mp[1] if mp else "",
                                match=mp[2] if mp else "",
                                device_name=cfg["device_name"],
                                gpu_name=env.get("gpu_name") or env.get("gpu_name_torch", ""),
                                runtime_version=rv, utc=utc))
            del x, fwd
    for d in detail:
        d.update({"device_name": cfg["device_name"],
                  "gpu_name": env.get("gpu_name") or env.get("gpu_name_torch", ""),
                  "driver_version": env.get("driver_version", ""), "cuda": env.get("cuda", ""),
                  "cudnn": env.get("cudnn", ""), "torch": env["torch"],
                  "sm_clock_mhz": env.get("sm_clock_mhz", ""),
                  "mem_clock_mhz": env.get("mem_clock_mhz", ""),
                  "power_limit_w": env.get("power_limit_w", ""),
                  "mig_mode": env.get("mig_mode_current", ""),
                  "temperature_c": env.get("temperature_c", "")})
    cid = f"net-{name}"
    timing.write_csv_atomic(os.path.join(cdir, cid + ".networks.csv"),
                            network_runner.NET_COLUMNS, rows)
    timing.write_csv_atomic(os.path.join(cdir, cid + ".detail.csv"), DETAIL_COLUMNS, detail)
    timing.write_csv_atomic(os.path.join(cdir, cid + ".ops.csv"), OPS_COLUMNS, ops)
    all_done = all(d.get("status") in ("ok", "oom") for d in detail)
    status = "done" if all_done else "partial"
    timing.write_text_atomic(os.path.join(cdir, cid + ".done.json"), json.dumps(
        {"chunk": cid, "status": status, "env": env, "notes": notes, "rows": len(rows)},
        indent=1, sort_keys=True) + "\n")
    return EXIT_OK if all_done else EXIT_BUDGET


# ---------------------------------------------------------------------- chunk: a sweep ----

def run_sweep_chunk(out, cfg, k, prec, budget_s=None):
    import torch
    dev = cfg["device"]
    torch.set_num_threads(cfg["threads"])
    gpu = None
    if dev == "cuda":
        import nvml
        backend, _ = nvml.open_nvml()
        if backend is not None:
            try:
                gpu = nvml.GpuHandle(backend, torch.cuda.current_device())
            except nvml.NvmlError:
                gpu = None
    env = env_info(torch, dev, gpu)
    plan_path = os.path.join(out, "sweep", f"plan-{k:04d}.csv")
    rows = layer_runner.read_plan(plan_path)
    s = cfg["sweep"]
    protocol = timing.Protocol(rounds=s["rounds"], burst=s["burst"], warmup_calls=3,
                               warmup_min_s=0.02, visit_warmup=1,
                               min_sample_us=100.0, seed=cfg["seed"], max_visit_s=0.5)
    cid = f"sweep-{k:04d}-{prec}"
    out_csv = os.path.join(out, "chunks", cid + ".csv")
    res, n = layer_runner.measure_rows(
        rows, out_csv, torch=torch, device_name=cfg["device_name"], device=dev, precision=prec,
        threads=cfg["threads"], protocol=protocol, budget_s=budget_s,
        plan_digest=timing.file_sha256(plan_path), plan_label=os.path.basename(plan_path),
        runner="gpu_runner-sweep", cache_mb=2048 if dev == "cuda" else 256,
        extra_version=env_version_suffix(env), machine=env["machine"])
    complete = not res.incomplete or all(k2 in res.errors for k2 in res.incomplete)
    timing.write_text_atomic(os.path.join(out, "chunks", cid + ".done.json"), json.dumps(
        {"chunk": cid, "status": "done" if complete else "partial", "env": env, "rows": n,
         "errors": len(res.errors)}, indent=1, sort_keys=True) + "\n")
    return EXIT_OK if complete else EXIT_BUDGET


def run_chunk(a):
    with open(os.path.join(a.out, "run.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cid = a.chunk
    try:
        if cid.startswith("net-"):
            return run_model_chunk(a.out, cfg, cid[4:], a.chunk_budget_s)
        if cid.startswith("sweep-"):
            _, k, prec = cid.split("-")
            return run_sweep_chunk(a.out, cfg, int(k), prec, a.chunk_budget_s)
    except Exception:  # noqa: BLE001 - the driver records the log
        traceback.print_exc()
        return EXIT_FAILED
    log(f"unknown chunk {cid!r}")
    return EXIT_USAGE


# -------------------------------------------------------------------------------- main ----

def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="gpu_runner.py",
        description="GPU measurement campaign: torchvision (and timm) models x batch sizes x "
                    "fp32/fp16: latency (CUDA events), energy per batch (NVML energy counter), "
                    "peak memory (allocator + NVML), per-operator times (torch.profiler), plus a "
                    "per-kernel sweep. One process per chunk; resumable. Read-only on the GPU.",
        epilog="Outputs in OUT: networks.csv (network CSV of docs/measurements.md), layers.csv "
               "(layer CSV: the kernel sweep), networks_detail.csv, operators.csv, env.json, "
               "graphs/*.onnx (export_params=False), chunks/ (per-chunk files and markers), "
               "logs/. Exit status: 0 complete; 1 failure; 2 usage error; 3 budget ran out "
               "(rerun to continue); 4 some chunks failed (rerun retries them).")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--device-name", default=None,
                    help="perfpred device name for every row (e.g. h100-sxm5-80gb, host-cpu)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--models", default="all",
                    help="comma-separated torchvision model names, or 'all' (default)")
    ap.add_argument("--timm", action="store_true",
                    help=f"also measure timm models where timm is installed ({len(TIMM_MODELS)} "
                         "names that torchvision lacks)")
    ap.add_argument("--batch", default=DEFAULT_BATCHES, help=f"default {DEFAULT_BATCHES}")
    ap.add_argument("--precision", default="fp32,fp16",
                    help="fp32,fp16 (default); fp16 is skipped on --device cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--rounds", type=int, default=5, help="latency rounds (default 5)")
    ap.add_argument("--burst", type=int, default=20, help="forwards timed per visit (default 20)")
    ap.add_argument("--warmup-calls", type=int, default=5, help="default 5")
    ap.add_argument("--warmup-ms", type=float, default=300.0, help="default 300")
    ap.add_argument("--max-visit-s", type=float, default=2.0,
                    help="fewer forwards per visit for slow configurations (default 2 s)")
    ap.add_argument("--energy-s", type=float, default=2.0,
                    help="length of the energy loop per configuration (default 2 s)")
    ap.add_argument("--profile-batch", default="1,32",
                    help="batch sizes profiled per operator (default 1,32; '' for none)")
    ap.add_argument("--profile-iters", type=int, default=3, help="default 3")
    ap.add_argument("--sweep-budget-min", type=float, default=10.0,
                    help="time for the per-kernel sweep (default 10; 0 skips it)")
    ap.add_argument("--sweep-per-family", type=int, default=400,
                    help="configurations generated per kernel family (default 400)")
    ap.add_argument("--sweep-chunk-rows", type=int, default=100, help="rows per sweep chunk")
    ap.add_argument("--sweep-max-mb", type=int, default=2048,
                    help="largest tensors of one kernel configuration (default 2048 MiB)")
    ap.add_argument("--sweep-rounds", type=int, default=3, help="default 3")
    ap.add_argument("--sweep-burst", type=int, default=10, help="default 10")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget-min", type=float, default=None,
                    help="no chunk starts after this many minutes (a running one gets the rest)")
    ap.add_argument("--chunk-timeout-min", type=float, default=30.0,
                    help="a chunk running longer is killed and recorded as failed (default 30)")
    ap.add_argument("--only", default="",
                    help="comma-separated chunk ids or kinds (net, sweep) to run")
    ap.add_argument("--restart", action="store_true",
                    help="discard run.json and the finished chunks in OUT")
    ap.add_argument("--merge-only", action="store_true", help="only rebuild the merged files")
    ap.add_argument("--chunk", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--chunk-budget-s", type=float, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.chunk:
        return run_chunk(a)
    if a.merge_only:
        merge(a.out)
        return EXIT_OK
    try:
        if not a.device_name or not layer_runner.layers.NAME_RE.match(a.device_name):
            raise ValueError("--device-name is required (letters, digits, _ . - +)")
        if a.sweep_budget_min <= 0:
            a.sweep_per_family = 0
        cfg = build_config(a)
    except ValueError as e:
        log(str(e))
        return EXIT_USAGE
    if a.restart:
        import shutil
        for sub in ("chunks", "sweep"):
            shutil.rmtree(os.path.join(a.out, sub), ignore_errors=True)
        if os.path.exists(os.path.join(a.out, "run.json")):
            os.remove(os.path.join(a.out, "run.json"))
    try:
        return driver(a, cfg)
    except timing.ResumeMismatch as e:
        log(str(e))
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
