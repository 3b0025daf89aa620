#!/usr/bin/python3
"""network_runner.py: measures whole networks on this machine with PyTorch eager (CPU or CUDA).

Every (model, batch) configuration is a forward pass in torch.inference_mode(), timed with the
interleaved-rounds protocol of timing.py; the output is the network measurement CSV of
docs/measurements.md whose `model` column points at the ONNX graph the prediction is made from.
"""

import argparse
import os
import sys
import weakref

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import layer_runner  # noqa: E402
import models as model_specs  # noqa: E402
import timing  # noqa: E402

NET_COLUMNS = ["model", "family", "device", "runtime", "runtime_version", "precision", "batch",
               "input_shapes", "latency_ms", "latency_spread_ms", "repetitions", "energy_j",
               "peak_memory_bytes", "source", "date"]

# Whole networks last milliseconds: one forward per sample, a longer warm-up.
NETWORK_PROTOCOL = timing.Protocol(rounds=7, burst=2, warmup_calls=3, warmup_min_s=0.5,
                                   visit_warmup=1, min_sample_us=0.0, seed=1)


def resolve_specs(models_arg, reference, graphs_dir, source="auto"):
    """--models names (torchvision/timm) or the rows of a reference.csv."""
    if models_arg:
        out = []
        for name in [m.strip() for m in models_arg.split(",") if m.strip()]:
            s = model_specs.spec_for_name(name, graphs_dir, source)
            if s is None:
                raise ValueError(f"unknown model {name!r} (not a torchvision"
                                 f"{' or timm' if source != 'torchvision' else ''} model name)")
            out.append(s)
        return out
    if not reference or not os.path.exists(reference):
        raise ValueError(f"no --models given and no reference CSV at {reference}")
    return model_specs.specs_from_reference(reference)


def ensure_graph(torch, spec, quiet=False):
    if os.path.exists(spec.onnx_path):
        return
    if not quiet:
        print(f"network_runner: exporting {spec.name} to {spec.onnx_path} (export_params=False)",
              file=sys.stderr)
    model_specs.export_onnx(torch, spec, spec.onnx_path)


def config_key(spec, batch, resolution=None):
    """The configuration's key: model graph and shape, batch, and the resolution where it differs
    from the model's own."""
    key = f"{spec.key()}|b{batch}"
    if resolution is not None and resolution != spec.shape[-1]:
        key += f"|r{resolution}"
    return key


def read_configs(path, graphs_dir, source="auto", known=None):
    """--configs CSV: columns model, batch[, resolution] (empty resolution: the model's own).
    A model is known's spec of that name (the rows of a --reference CSV, whose graphs lie beside
    it) where known has one, else a model name of models.spec_for_name with its graph in
    graphs_dir. Returns [(spec, batch, resolution or None)]; errors name the file and line."""
    import csv
    out = []
    specs = dict(known or {})
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.DictReader(f)
        if rd.fieldnames is None or "model" not in rd.fieldnames or "batch" not in rd.fieldnames:
            raise ValueError(f"{path}: line 1: needs the columns model and batch")
        for i, row in enumerate(rd, start=2):
            name = (row.get("model") or "").strip()
            try:
                b = timing.parse_int_list((row.get("batch") or "").strip(), "batch")
                res_text = (row.get("resolution") or "").strip()
                res = timing.parse_int_list(res_text, "resolution") if res_text else [None]
            except ValueError as e:
                raise ValueError(f"{path}: line {i}: {e}") from None
            if len(b) != 1 or len(res) != 1:
                raise ValueError(f"{path}: line {i}: one batch and one resolution per line")
            if name not in specs:
                try:
                    specs[name] = model_specs.spec_for_name(name, graphs_dir, source)
                except ValueError as e:
                    raise ValueError(f"{path}: line {i}: {e}") from None
            s = specs[name]
            if s is None:
                raise ValueError(f"{path}: line {i}: unknown model {name!r}")
            if res[0] is not None and not s.is_image():
                raise ValueError(f"{path}: line {i}: {name} takes no resolution")
            out.append((s, b[0], res[0]))
    if not out:
        raise ValueError(f"{path}: no configurations")
    return out


def prepared_model(torch, spec, fold_bn):
    """The spec's model in eval mode, seeded, BatchNorm folded when asked; with the source note."""
    torch.manual_seed(1)
    m = spec.build().eval()
    if not fold_bn:
        return m, "bn=not-folded"
    m, how, n0, n1 = model_specs.fold_batchnorm(torch, m)
    return m, f"bn={how}" + (f" ({n0 - n1} of {n0} folded)" if n0 else "")


def measure_networks(specs, batches, out_path, *, torch, device_name, device="cpu", threads=1,
                     protocol=None, budget_s=None, restart=False, retry_errors=False, quiet=False,
                     cache_mb=4096, timer=None, stop_after_visits=None, progress_stream=None,
                     resolutions=None, configs=None, fold_bn=True, malloc="default"):
    """Measures every (spec, batch, resolution) and writes the network CSV.
    Returns (RunResult, n_rows).

    configs: explicit [(spec, batch, resolution or None)]; otherwise specs x batches x resolutions
    (None: each model's own). fold_bn: BatchNorm folded into the convolution before it, as in the
    exported graph (models.fold_batchnorm); how is recorded in the source column. malloc: what
    timing.keep_heap returned ("kept"), or "default"; the rows' source says it where kept."""
    protocol = protocol or NETWORK_PROTOCOL
    if configs is None:
        configs = [(s, b, r) for s in specs for b in batches for r in (resolutions or [None])]
    table = {}
    for s, b, r in configs:
        if r is not None and r == s.shape[-1]:
            r = None
        table[config_key(s, b, r)] = (s, b, r)
    identity = {"runner": "network_runner", "configs": sorted(table), "device": device,
                "device_name": device_name, "threads": threads, "torch": torch.__version__,
                "protocol": protocol.as_dict(), "precision": "fp32", "fold_bn": bool(fold_bn)}
    if malloc != "default":
        identity["malloc"] = malloc
    store = timing.PartialStore(out_path + ".partial.jsonl", identity, restart=restart,
                                retry_errors=retry_errors)
    live = weakref.WeakValueDictionary()  # one module per model, shared by its configurations
    folded = {}  # model key -> "bn=..." note for the source column

    def build(key):
        s, b, r = table[key]
        m = live.get(s.key())
        if m is None:
            m, folded[s.key()] = prepared_model(torch, s, fold_bn)
            m = m.to(device)
            live[s.key()] = m
        x = s.make_input(torch, b, device=device, seed=b, resolution=r)

        def run():
            with torch.inference_mode():
                return m(x)
        # the module is shared by the model's configurations but counted in each: the byte bound
        # errs towards rebuilding
        run.nbytes = (sum(p.numel() * p.element_size() for p in m.parameters()) +
                      x.numel() * x.element_size())
        run.model = m  # keeps the module alive while this configuration is cached
        return run

    if timer is None:
        timer = timing.CudaEventTimer(torch) if device == "cuda" else timing.CpuTimer()
    prog = None if quiet else timing.make_progress(0, label="network_runner ",
                                                   stream=progress_stream)
    try:
        res = timing.run_interleaved(list(table), build, store, protocol, timer=timer,
                                     budget_s=budget_s, progress=prog,
                                     cache_items=max(64, len(table)),
                                     cache_bytes=cache_mb * (1 << 20),
                                     stop_after_visits=stop_after_visits,
                                     canary=timing.Canary(torch) if protocol.canary else None)
    finally:
        if prog is not None:
            prog.close()
        store.close()
    machine = layer_runner.machine_description(torch, device)
    rv = layer_runner.runtime_version(torch, threads, device)
    out_dir = os.path.dirname(os.path.abspath(out_path))
    rows = []
    for key, (s, b, r) in table.items():
        st = res.stats.get(key)
        if st is None:
            continue
        utc, date = layer_runner.utc_of(store.last_time.get(key, 0.0) or 0.0)
        shape = "x".join(map(str, s.input_shape(b, r)))
        src = layer_runner.format_source(device_name, f"network_runner/{s.name}", machine, utc,
                                         protocol, st, res.inner[key],
                                         canary=layer_runner.canary_of(res, key))
        if s.key() not in folded:  # measured in an earlier, resumed run: fold again to say how
            folded[s.key()] = prepared_model(torch, s, fold_bn)[1]
        src += f"; visit_warmup={protocol.visit_warmup}; " + folded[s.key()]
        if device == "cpu":
            src += "; memory=not measured on CPU"
        if malloc != "default":
            src += f"; malloc={malloc}"
        rows.append({
            "model": os.path.relpath(os.path.abspath(s.onnx_path), out_dir),
            "family": s.family, "device": device_name, "runtime": layer_runner.RUNTIME,
            "runtime_version": rv, "precision": "fp32", "batch": b,
            "input_shapes": f"{s.input_name}:{shape}",
            "latency_ms": f"{timing.ns_to_ms(st.median_ns):.6g}",
            "latency_spread_ms": f"{timing.ns_to_ms(st.iqr_ns):.6g}",
            "repetitions": st.calls, "energy_j": "", "peak_memory_bytes": "",
            "source": src, "date": date})
    timing.write_csv_atomic(out_path, NET_COLUMNS, rows)
    return res, len(rows)


def main(argv=None):
    d = NETWORK_PROTOCOL
    ap = argparse.ArgumentParser(
        prog="network_runner.py",
        description="Measure whole-network forward latency with PyTorch eager and write the "
                    "network measurement CSV (docs/measurements.md).",
        epilog="Models: --models names torchvision (or timm) models, rebuilt with weights=None; "
               "their graph is <graphs-dir>/<name>.onnx, exported (export_params=False) when "
               "missing. Without --models, every row of --reference is measured. Random "
               "architectures (randcnn_s<seed>_i<index>, randtf_s<seed>_i<index>) are rebuilt "
               "from their names by random_arch.py. Peak memory is "
               "left empty on CPU (no trustworthy per-process peak is available there). Exit "
               "status: 0 complete; 1 failure; 2 usage error; 3 stopped by --budget-min (rerun to "
               "continue); 4 some configurations failed (listed on stderr).")
    ap.add_argument("-o", "--out", required=True, help="network measurement CSV to write")
    ap.add_argument("--device-name", required=True, help="perfpred device name (e.g. host-cpu)")
    ap.add_argument("--models", default="",
                    help="comma-separated torchvision/timm model names (e.g. resnet18,mobilenet_v2)")
    ap.add_argument("--reference", default=None,
                    help="reference CSV of exported graphs (file, model, family, input_name, "
                         "input_shape, input_dtype), used when --models is empty (default "
                         "tests/fixtures/models/reference.csv); with --configs, its models are "
                         "looked up there first (e.g. random_arch.py's DIR/reference.csv)")
    ap.add_argument("--graphs-dir", default=os.path.join(model_specs.REPO, "tests", "fixtures",
                                                         "models"),
                    help="where --models graphs live or are exported to")
    ap.add_argument("--batch", default="1", help="comma-separated batch sizes (default 1)")
    ap.add_argument("--resolution", default="",
                    help="comma-separated input sizes for image models (e.g. 160,224); default: "
                         "each model's own")
    ap.add_argument("--configs", default="",
                    help="CSV of configurations (columns model, batch[, resolution]) instead of "
                         "--models x --batch x --resolution")
    ap.add_argument("--no-fold-bn", action="store_true",
                    help="run BatchNorm as its own op (default: folded into the convolution "
                         "before it, as in the exported graph)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--malloc", choices=("kept", "default"), default="kept",
                    help="CPU: kept (default) keeps freed memory in the process (glibc: mmap above "
                         "32 MiB only, no trim), the state of a heap that other work holds up; "
                         "default: glibc's own thresholds, under which one model called in a loop "
                         "in a fresh process faults its activations in on every call (up to 1.5x "
                         "the time: docs/accuracy.md, \"A fresh process\")")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--restart", action="store_true", help="discard OUT.partial.jsonl")
    ap.add_argument("--retry-errors", action="store_true",
                    help="try configurations that failed in an earlier run again")
    ap.add_argument("--cache-mb", type=int, default=4096,
                    help="models and inputs kept between rounds (MiB; default 4096)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    g = ap.add_argument_group("timing protocol (interleaved rounds)")
    g.add_argument("--rounds", type=int, default=d.rounds, help=f"default {d.rounds}")
    g.add_argument("--burst", type=int, default=d.burst, help=f"default {d.burst}")
    g.add_argument("--warmup-calls", type=int, default=d.warmup_calls,
                   help=f"default {d.warmup_calls}")
    g.add_argument("--warmup-ms", type=float, default=d.warmup_min_s * 1000,
                   help=f"default {d.warmup_min_s * 1000:g}")
    g.add_argument("--visit-warmup", type=int, default=d.visit_warmup,
                   help="untimed calls at the start of every visit, after another configuration "
                        f"ran (default {d.visit_warmup})")
    g.add_argument("--canary", action="store_true",
                   help="time a fixed reference workload before every visit and scale each visit "
                        "by the canary level of the run's quietest minute over the level of the "
                        "minute around it (layer_runner.py --help)")
    g.add_argument("--seed", type=int, default=d.seed, help=f"default {d.seed}")
    g.add_argument("--budget-min", type=float, default=None,
                   help="stop starting new visits after this many minutes (exit status 3)")
    a = ap.parse_args(argv)
    try:
        batches = timing.parse_int_list(a.batch, "--batch")
        if a.threads < 1:
            raise ValueError("--threads must be >= 1")
        protocol = timing.Protocol(rounds=a.rounds, burst=a.burst, warmup_calls=a.warmup_calls,
                                   warmup_min_s=a.warmup_ms / 1000.0,
                                   visit_warmup=a.visit_warmup, min_sample_us=0.0, seed=a.seed,
                                   canary=a.canary)
        protocol.check()
        # before torch allocates: its buffers then follow the thresholds from the start
        malloc = timing.keep_heap() if a.device == "cpu" and a.malloc == "kept" else "default"
        torch = layer_runner.setup_torch(a.threads, a.device)
        layer_runner.warn_if_other_machine("network_runner", a.device_name,
                                           layer_runner.machine_description(torch, a.device))
        resolutions = (timing.parse_int_list(a.resolution, "--resolution")
                       if a.resolution else None)
        configs = None
        if a.configs:
            if a.models or a.resolution:
                raise ValueError("--configs replaces --models and --resolution")
            known = {}
            if a.reference:  # named explicitly: its rows (and graphs) come first
                for s in model_specs.specs_from_reference(a.reference):
                    known.setdefault(s.name, s)
            configs = read_configs(a.configs, a.graphs_dir, known=known)
            specs = list({c[0].key(): c[0] for c in configs}.values())
        else:
            specs = resolve_specs(a.models, a.reference or model_specs.DEFAULT_REFERENCE,
                                  a.graphs_dir)
            if resolutions and not all(s.is_image() for s in specs):
                raise ValueError("--resolution: every model must take an image input")
        for s in specs:
            ensure_graph(torch, s, a.quiet)
    except (ValueError, OSError) as e:
        print(f"network_runner: {e}", file=sys.stderr)
        return layer_runner.EXIT_USAGE
    try:
        res, n = measure_networks(specs, batches, a.out, torch=torch, device_name=a.device_name,
                                  device=a.device, threads=a.threads, protocol=protocol,
                                  budget_s=None if a.budget_min is None else a.budget_min * 60,
                                  restart=a.restart, retry_errors=a.retry_errors, quiet=a.quiet,
                                  cache_mb=a.cache_mb, resolutions=resolutions, configs=configs,
                                  fold_bn=not a.no_fold_bn, malloc=malloc)
    except timing.ResumeMismatch as e:
        print(f"network_runner: {e}", file=sys.stderr)
        return layer_runner.EXIT_USAGE
    print(f"network_runner: wrote {n} rows to {a.out}", file=sys.stderr)
    for k, m in res.errors.items():
        print(f"network_runner: {k}: {m}", file=sys.stderr)
    if res.budget_exhausted or [k for k in res.incomplete if k not in res.errors]:
        return layer_runner.EXIT_BUDGET
    return layer_runner.EXIT_ROW_ERRORS if res.errors else layer_runner.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
