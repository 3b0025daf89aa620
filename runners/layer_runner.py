#!/usr/bin/python3
"""layer_runner.py: measures every layer of a benchmark plan CSV on this machine with PyTorch eager.

Each plan row (op_type, inputs, attrs as in docs/measurements.md) is rebuilt as one torch call on
random inputs and timed with the interleaved-rounds protocol of timing.py; the result is the layer
measurement CSV of docs/measurements.md, written atomically; a rerun resumes from OUT.partial.jsonl.
"""

import argparse
import csv
import datetime
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import layers  # noqa: E402
import timing  # noqa: E402

# The layer measurement CSV of docs/measurements.md (measure/measurements.c reads exactly these).
LAYER_COLUMNS = ["device", "runtime", "runtime_version", "precision", "op_kind", "op_type", "batch",
                 "inputs", "attrs", "latency_ms", "latency_spread_ms", "repetitions", "energy_j",
                 "memory_bytes", "source", "date"]

RUNTIME = "pytorch-eager"

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUDGET, EXIT_ROW_ERRORS = 0, 1, 2, 3, 4


class PlanError(ValueError):
    pass


class PlanRow:
    """One plan row: what to build, and the columns copied into the measurement row."""
    __slots__ = ("key", "line", "op_type", "inputs_text", "attrs_text", "inputs", "attrs", "kind",
                 "batch")

    def __init__(self, key, line, op_type, inputs_text, attrs_text, kind=None, batch=None):
        self.key = key
        self.line = line
        self.op_type = op_type
        self.inputs_text = inputs_text
        self.attrs_text = attrs_text
        self.inputs = layers.parse_inputs(inputs_text, op_type)
        self.attrs = layers.parse_attrs(attrs_text)
        own = layers.op_kind(op_type, self.inputs, self.attrs)
        if kind and kind != own:
            raise layers.LayerError(f"op_kind {kind!r} but graph/ would classify {op_type} as {own!r}")
        self.kind = own
        if batch in (None, ""):
            dims = self.inputs[0][1]
            self.batch = dims[0] if dims else 1
        else:
            if not str(batch).isdigit() or int(batch) < 1:
                raise layers.LayerError(f"batch {batch!r} is not an integer >= 1")
            self.batch = int(batch)


def read_plan(path):
    """Reads a plan CSV: required columns op_type, inputs; optional attrs, op_kind, batch (other
    columns, e.g. a full layer CSV's measurement columns, are ignored). Any bad row is an error
    naming path:line: a plan is produced by perfpred and must be exact."""
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.reader(f, strict=True)
        try:
            header = next(rd)
        except StopIteration:
            raise PlanError(f"{path}: empty file (no header)")
        if len(set(header)) != len(header):
            raise PlanError(f"{path}:1: duplicate column in header")
        for need in ("op_type", "inputs"):
            if need not in header:
                raise PlanError(f"{path}:1: missing column '{need}'")
        col = {c: i for i, c in enumerate(header)}
        for rec in rd:
            line = rd.line_num
            if not rec or all(not x.strip() for x in rec):
                continue
            if len(rec) != len(header):
                raise PlanError(f"{path}:{line}: {len(rec)} fields, the header has {len(header)}")

            def get(name):
                return rec[col[name]] if name in col else None
            try:
                rows.append(PlanRow(f"L{line}", line, get("op_type"), get("inputs"),
                                    get("attrs") or "", get("op_kind") or None, get("batch")))
            except layers.LayerError as e:
                raise PlanError(f"{path}:{line}: {e}")
    if not rows:
        raise PlanError(f"{path}: no layer rows")
    return rows


def runtime_version(torch, threads, device):
    """Free-text runtime_version: framework version, threads, and on CUDA the TF32 switches."""
    import os
    v = (f"torch {torch.__version__}; threads {threads}; "
         f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    if device == "cuda":
        v += (f"; cuda {torch.version.cuda}; cudnn {torch.backends.cudnn.version()}"
              f"; matmul.allow_tf32={int(torch.backends.cuda.matmul.allow_tf32)}"
              f"; cudnn.allow_tf32={int(torch.backends.cudnn.allow_tf32)}")
    return v


def row_precision(op_type, precision, torch, device):
    """Math precision of one op: on an Ampere-or-newer GPU, fp32 convolutions run as TF32 when
    cudnn.allow_tf32 is on (PyTorch's default) and matrix products when matmul.allow_tf32 is on."""
    if precision != "fp32" or device != "cuda":
        return precision
    major, _ = torch.cuda.get_device_capability()
    if major < 8:
        return precision
    if op_type in ("Conv", "ConvTranspose") and torch.backends.cudnn.allow_tf32:
        return "tf32"
    if op_type in ("MatMul", "Gemm") and torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return precision


def machine_description(torch, device):
    if device == "cuda":
        return torch.cuda.get_device_name(torch.cuda.current_device())
    return timing.cpu_model()


DEFAULT_CONFIG_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")


def calibrated_machines(device_name, config_dir=DEFAULT_CONFIG_DIR):
    """The machines (the `machine=` of the rows) that device_name's committed layer models were
    measured on, from configs/artifacts/<device>/manifest.json; empty when it has none."""
    path = os.path.join(config_dir, "artifacts", device_name, "manifest.json")
    try:
        with open(path, encoding="utf-8") as f:
            sources = json.load(f).get("sources", [])
    except (OSError, ValueError, AttributeError):
        return set()
    return {s.get("gpu") for s in sources if isinstance(s, dict) and s.get("gpu")}


def warn_if_other_machine(prog, device_name, machine, config_dir=DEFAULT_CONFIG_DIR,
                          stream=None):
    """Warns (stream, default stderr) when device_name is calibrated from rows of another machine:
    rows measured here under that name would describe two machines. Returns True if it warned."""
    known = calibrated_machines(device_name, config_dir)
    if not known or machine in known:
        return False
    print(f"{prog}: warning: {device_name} is calibrated from rows measured on "
          f"{', '.join(sorted(known))}; this machine is {machine}. Its rows would mix two "
          f"machines under one name: give this one its own device (README, \"Calibrate a new "
          f"machine\").", file=stream or sys.stderr)
    return True


def stat_name(protocol, stat_first=0):
    """The `stat=` of a source: the median over rounds of each round's minimum, over the first
    stat_first samples of each visit when that is fewer than the burst."""
    if 0 < stat_first < protocol.burst:
        return f"median-of-round-minima-of-first-{stat_first}"
    return "median-of-round-minima"


def format_source(device_name, run_id, machine, utc, protocol, stats, inner, stat_first=0,
                  canary=None):
    """The `source` column: `runner-pytorch@<device>:<run-id>` (docs/measurements.md), then
    '; '-separated details: machine (never the hostname), UTC time, the statistic and the spread:
    rounds x burst samples of `inner` calls, fastest/slowest/mean call, IQR of per-round medians
    (= latency_spread_ms) and IQR of all samples, in ms. canary = (the canary level of the run's
    quietest minute in ns, the row's Stats as timed): the figures are canary-scaled
    (timing.Canary), and the source says so with the window, the reference and the unscaled
    latency and spread."""
    ms = timing.ns_to_ms
    scrub = ([f"scrub_bytes={protocol.scrub_bytes}"]
             if getattr(protocol, "scrub_bytes", 0) > 0 else [])
    if scrub and getattr(protocol, "scrub_warm_input", False):
        scrub.append("warm_input=1")
    if canary is not None:
        ref_ns, raw = canary
        scrub += ["canary=scaled", f"canary_window_s={timing.CANARY_WINDOW_S:g}",
                  f"canary_ref_ms={ms(ref_ns):.6g}",
                  f"unscaled_ms={ms(raw.median_ns):.6g}",
                  f"unscaled_spread_ms={ms(raw.iqr_ns):.6g}"]
    return "; ".join([
        f"runner-pytorch@{device_name}:{run_id}", f"machine={machine}", f"utc={utc}",
        f"stat={stat_name(protocol, stat_first)}", "spread=iqr-of-round-medians",
        f"rounds={stats.rounds}",
        f"burst={protocol.burst}", f"inner={inner}", f"min_ms={ms(stats.min_ns):.6g}",
        f"max_ms={ms(stats.max_ns):.6g}", f"mean_ms={ms(stats.mean_ns):.6g}",
        f"iqr_all_ms={ms(stats.iqr_all_ns):.6g}"] + scrub)


def canary_of(res, key):
    """format_source's canary argument for a key of a RunResult: None when no canary was timed."""
    if res.canary_ref_ns > 0 and key in res.raw_stats:
        return res.canary_ref_ns, res.raw_stats[key]
    return None


def utc_of(t):
    d = datetime.datetime.fromtimestamp(t, datetime.timezone.utc).replace(microsecond=0)
    return d.isoformat().replace("+00:00", "Z"), d.date().isoformat()


def measure_rows(rows, out_path, *, torch, device_name, device="cpu", precision="fp32", threads=1,
                 protocol=None, budget_s=None, restart=False, retry_errors=False, plan_digest="",
                 plan_label="plan",
                 runner="layer_runner", quiet=False, cache_mb=1024, timer=None,
                 stop_after_visits=None, progress_stream=None, extra_version="",
                 extra_source="", machine=None, stat_first=0, malloc="default"):
    """Measures rows (PlanRow) and writes the layer CSV at out_path. Returns (RunResult, n_written).
    stat_first > 0: each row's statistics use the first stat_first samples of every visit (the
    partial file keeps them all). malloc: what timing.keep_heap returned ("kept"), or "default";
    the rows' source says it where kept.

    The partial file out_path + '.partial.jsonl' keeps every finished visit; identity = plan digest,
    protocol, device, precision, threads and torch version: a rerun with the same identity resumes.
    """
    protocol = protocol or timing.Protocol()
    dtype = {"fp32": torch.float32, "fp16": torch.float16}.get(precision)
    if dtype is None:
        raise ValueError(f"precision {precision!r}: the layer runner measures fp32 or fp16")
    if device == "cpu" and precision == "fp16":
        raise ValueError("fp16 layers are measured on CUDA only")
    identity = {"runner": runner, "plan_sha256": plan_digest, "protocol": protocol.as_dict(),
                "device_name": device_name, "device": device, "precision": precision,
                "threads": threads, "torch": torch.__version__}
    if malloc != "default":
        identity["malloc"] = malloc
    store = timing.PartialStore(out_path + ".partial.jsonl", identity, restart=restart,
                                retry_errors=retry_errors)
    by_key = {r.key: r for r in rows}

    def build(key):
        r = by_key[key]
        seed = int(timing.text_sha256(f"{protocol.seed}:{key}")[:12], 16)
        with torch.inference_mode():
            b = layers.build_layer(r.op_type, r.inputs, r.attrs, torch, device=device,
                                   dtype=dtype, seed=seed)

        def run():
            with torch.inference_mode():
                return b()
        run.nbytes = b.nbytes
        run.warm = b.tensors[:1]  # the node's first input: written by the layer before it
        return run

    if timer is None:
        timer = timing.CudaEventTimer(torch) if device == "cuda" else timing.CpuTimer()
    prog = None if quiet else timing.make_progress(0, label=f"{runner} ",
                                                   stream=progress_stream)
    try:
        res = timing.run_interleaved([r.key for r in rows], build, store, protocol, timer=timer,
                                     budget_s=budget_s, progress=prog,
                                     cache_bytes=cache_mb * (1 << 20),
                                     stop_after_visits=stop_after_visits,
                                     scrub=make_scrub(torch, protocol.scrub_bytes, device,
                                                      protocol.scrub_warm_input),
                                     stat_first=stat_first,
                                     canary=timing.Canary(torch) if protocol.canary else None)
    finally:
        if prog is not None:
            prog.close()
        store.close()
    machine = machine or machine_description(torch, device)
    rv = runtime_version(torch, threads, device) + extra_version
    out_rows = []
    for r in rows:
        st = res.stats.get(r.key)
        if st is None:
            continue
        utc, date = utc_of(store.last_time.get(r.key) or datetime.datetime.now().timestamp())
        out_rows.append({
            "device": device_name, "runtime": RUNTIME, "runtime_version": rv,
            "precision": row_precision(r.op_type, precision, torch, device), "op_kind": r.kind, "op_type": r.op_type, "batch": r.batch,
            "inputs": r.inputs_text, "attrs": r.attrs_text,
            "latency_ms": f"{timing.ns_to_ms(st.median_ns):.6g}",
            "latency_spread_ms": f"{timing.ns_to_ms(st.iqr_ns):.6g}",
            "repetitions": st.calls, "energy_j": "", "memory_bytes": "",
            "source": format_source(device_name, f"{runner}/{plan_label}:{r.line}", machine, utc,
                                    protocol, st, res.inner[r.key], stat_first,
                                    canary_of(res, r.key))
                      + (f"; malloc={malloc}" if malloc != "default" else "") + extra_source,
            "date": date,
        })
    timing.write_csv_atomic(out_path, LAYER_COLUMNS, out_rows)
    errors_path = out_path + ".errors.csv"
    if res.errors:
        timing.write_csv_atomic(errors_path, ["line", "op_type", "inputs", "attrs", "error"],
                                [{"line": by_key[k].line, "op_type": by_key[k].op_type,
                                  "inputs": by_key[k].inputs_text, "attrs": by_key[k].attrs_text,
                                  "error": m} for k, m in res.errors.items()])
    elif os.path.exists(errors_path):
        os.remove(errors_path)
    return res, len(out_rows)


def default_scrub_bytes(device):
    """Cache scrub for --scrub-mb auto: on CPU twice the largest cache one core has to itself
    (sysfs), at least 8 MiB; on CUDA none (GPU kernels are timed with warm L2, as NeuSight's are)."""
    if device != "cpu":
        return 0
    return max(8 << 20, 2 * timing.private_cache_bytes())


def make_scrub(torch, nbytes, device="cpu", warm_input=False):
    """scrub(fn) writes nbytes of a buffer of its own (None when nbytes is 0), evicting the caches:
    the timed call that follows finds its weights and input cold. With warm_input it then reads
    fn.warm (the layer's first input) back, as if the layer before had just written it."""
    if nbytes <= 0:
        return None
    buf = torch.zeros(max(1, nbytes // 4), dtype=torch.float32, device=device)

    def scrub(fn=None):
        buf.add_(1.0)
        if warm_input:
            for t in getattr(fn, "warm", ()):
                t.sum()
    scrub.nbytes = buf.numel() * 4
    scrub.buffer = buf
    return scrub


def add_protocol_args(ap):
    d = timing.Protocol()
    g = ap.add_argument_group("timing protocol (interleaved rounds)")
    g.add_argument("--rounds", type=int, default=d.rounds,
                   help=f"visits per configuration, each in a new shuffled round (default {d.rounds})")
    g.add_argument("--burst", type=int, default=d.burst,
                   help=f"timed samples per visit (default {d.burst})")
    g.add_argument("--warmup-calls", type=int, default=d.warmup_calls,
                   help=f"untimed calls after a configuration is built (default {d.warmup_calls})")
    g.add_argument("--visit-warmup", type=int, default=d.visit_warmup,
                   help="untimed calls at the start of every visit, after other layers ran "
                        f"(default {d.visit_warmup}); with --burst 1 and 0 here each round times "
                        "every layer once among the others, as a forward pass runs it")
    g.add_argument("--warmup-ms", type=float, default=d.warmup_min_s * 1000,
                   help=f"... lasting at least this long (default {d.warmup_min_s * 1000:g})")
    g.add_argument("--min-sample-us", type=float, default=d.min_sample_us,
                   help="a sample times back-to-back calls lasting at least this long "
                        f"(default {d.min_sample_us:g}); per-call time = sample / calls")
    g.add_argument("--scrub-mb", default="auto",
                   help="before every timed call write this many MiB of another buffer, so each "
                        "call starts with cold caches as inside a network (one call per sample "
                        "then); 'auto': 2x the per-core cache, at least 8, on CPU, 0 on CUDA; "
                        "0 = off (back-to-back warm calls)")
    g.add_argument("--warm-input", action="store_true",
                   help="after each scrub read the layer's first input back (warm input, cold "
                        "weights); default: both cold, which matched whole forward passes better "
                        "on this host (runners/README.md)")
    g.add_argument("--stat-first", type=int, default=2,
                   help="summarize each visit by its first N timed samples (default 2, the "
                        "network runner's burst, so that a layer is summarized as a whole "
                        "network is; 0 = all of the burst); every sample is kept in "
                        "OUT.partial.jsonl")
    g.add_argument("--canary", action="store_true",
                   help="time a fixed reference workload (a small GEMM and an add) before every "
                        "visit and scale each visit by the canary level (the median canary within "
                        "a minute) of the run's quietest minute over that of the minute around "
                        "it: what a shared machine's neighbours slow down for minutes comes out, "
                        "and what one canary measures of the visit before it does not")
    g.add_argument("--seed", type=int, default=d.seed, help=f"shuffle and data seed (default {d.seed})")
    g.add_argument("--budget-min", type=float, default=None,
                   help="stop starting new visits after this many minutes; what was measured is "
                        "written and a rerun continues (exit status 3)")


def scrub_bytes_from_arg(text, device):
    if text == "auto":
        return default_scrub_bytes(device)
    try:
        mb = float(text)
    except ValueError:
        raise ValueError(f"--scrub-mb {text!r}: a number of MiB or 'auto'") from None
    if not mb >= 0 or mb > 1 << 20:
        raise ValueError(f"--scrub-mb {text!r}: between 0 and 1048576")
    return int(mb * (1 << 20))


def protocol_from_args(a):
    p = timing.Protocol(rounds=a.rounds, burst=a.burst, warmup_calls=a.warmup_calls,
                        warmup_min_s=a.warmup_ms / 1000.0, min_sample_us=a.min_sample_us,
                        seed=a.seed, visit_warmup=getattr(a, "visit_warmup", 1),
                        scrub_bytes=scrub_bytes_from_arg(getattr(a, "scrub_mb", "0"),
                                                         getattr(a, "device", "cpu")),
                        scrub_warm_input=bool(getattr(a, "warm_input", False)),
                        canary=bool(getattr(a, "canary", False)))
    p.check()
    return p


def setup_torch(threads, device):
    import os
    import sys
    # Debian's torch runs GEMM-backed ops through OpenBLAS, whose thread pool torch.set_num_threads
    # does not reach: cap it (and OpenMP's) through the environment before the libraries load.
    # Measurements made before this was added (data/host-cpu, 2026-11-21) ran BLAS ops on OpenBLAS's
    # default pool (one thread per core); see data/README.md.
    if "torch" not in sys.modules:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(threads)
    import torch
    # intra-op threads only: eager inference uses no inter-op pool, and setting that one a second
    # time in a process aborts it
    torch.set_num_threads(threads)
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("layer_runner: --device cuda but torch.cuda.is_available() is False")
    return torch


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="layer_runner.py",
        description="Measure the layers of a perfpred benchmark plan with PyTorch eager and write "
                    "the layer measurement CSV (docs/measurements.md).",
        epilog="Exit status: 0 all rows measured; 1 failure; 2 usage or plan error; 3 stopped by "
               "--budget-min (rerun to continue); 4 finished, but some rows could not be built or "
               "run (listed in OUT.errors.csv). Resume: rerun with the same plan, output and "
               "options; OUT.partial.jsonl holds every timed sample.")
    ap.add_argument("plan", help="plan CSV: columns op_type, inputs[, attrs, op_kind, batch]")
    ap.add_argument("-o", "--out", required=True, help="layer measurement CSV to write")
    ap.add_argument("--device-name", required=True,
                    help="perfpred device name written to every row (e.g. host-cpu)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--precision", choices=("fp32", "fp16"), default="fp32",
                    help="tensor precision (fp16 on cuda only; default fp32)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    ap.add_argument("--restart", action="store_true",
                    help="discard OUT.partial.jsonl instead of resuming from it")
    ap.add_argument("--retry-errors", action="store_true",
                    help="try rows that failed in an earlier run again (default: keep the error)")
    ap.add_argument("--limit", type=int, default=None, help="measure only the first N plan rows")
    ap.add_argument("--cache-mb", type=int, default=1024,
                    help="built layers kept between rounds (MiB of tensors; default 1024)")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--malloc", choices=("kept", "default"), default="kept",
                    help="CPU: kept (default) keeps freed memory in the process as a network's "
                         "heap does (glibc: mmap above 32 MiB only, no trim), so that a layer "
                         "timed alone does not fault its buffers in on every call; default: "
                         "glibc's own thresholds")
    add_protocol_args(ap)
    a = ap.parse_args(argv)
    try:
        if a.threads < 1:
            raise ValueError("--threads must be >= 1")
        if a.stat_first < 0:
            raise ValueError("--stat-first must be >= 0")
        if not layers.NAME_RE.match(a.device_name):
            raise ValueError("--device-name: letters, digits, _ . - + only")
        protocol = protocol_from_args(a)
        rows = read_plan(a.plan)
    except (ValueError, OSError, csv.Error) as e:
        print(f"layer_runner: {e}", file=sys.stderr)
        return EXIT_USAGE
    if a.limit is not None:
        rows = rows[:max(0, a.limit)]
    # before torch allocates: its buffers then follow the thresholds from the start
    malloc = timing.keep_heap() if a.device == "cpu" and a.malloc == "kept" else "default"
    torch = setup_torch(a.threads, a.device)
    warn_if_other_machine("layer_runner", a.device_name, machine_description(torch, a.device))
    digest = timing.file_sha256(a.plan) + (f":limit={a.limit}" if a.limit is not None else "")
    try:
        res, n = measure_rows(rows, a.out, torch=torch, device_name=a.device_name, device=a.device,
                              precision=a.precision, threads=a.threads, protocol=protocol,
                              budget_s=None if a.budget_min is None else a.budget_min * 60,
                              restart=a.restart, retry_errors=a.retry_errors, plan_digest=digest,
                              plan_label=os.path.basename(a.plan), quiet=a.quiet,
                              cache_mb=a.cache_mb, stat_first=a.stat_first, malloc=malloc)
    except timing.ResumeMismatch as e:
        print(f"layer_runner: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"layer_runner: wrote {n} of {len(rows)} rows to {a.out} "
          f"({res.visits_this_run} visits this run)", file=sys.stderr)
    for k, m in list(res.errors.items())[:20]:
        print(f"layer_runner: {a.plan}:{k[1:]}: {m}", file=sys.stderr)
    if res.budget_exhausted or [k for k in res.incomplete if k not in res.errors]:
        print(f"layer_runner: {len(res.incomplete)} rows have fewer than {protocol.rounds} rounds "
              "(budget); rerun the same command to continue", file=sys.stderr)
        return EXIT_BUDGET
    if res.errors:
        return EXIT_ROW_ERRORS
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
