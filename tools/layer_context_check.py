#!/usr/bin/python3
"""layer_context_check.py: how a layer timed on its own compares with the same layer inside a
forward pass, on this machine, all in one process (so machine drift cancels out).

For each torchvision model named: BatchNorm is folded as network_runner.py does, then
  full       the forward pass (min of --reps calls)
  in-net     the sum over leaf modules of their time inside the forward pass (forward hooks;
             min over --reps hooked passes)
  warm       each call of a leaf module repeated back to back with the input it got (min of --reps
             calls; a module called three times in a pass, as ResNet's ReLUs are, counts thrice)
  cold       the same after writing a --scrub-mb buffer before every call (layer_runner's default)
  cold+in    the same, then reading the module's input back (layer_runner --warm-input)
Per module type and in total, in ms. It is the evidence behind the layer runner's default
(runners/README.md); it measures, it trains nothing.

  /usr/bin/python3 tools/layer_context_check.py regnet_x_400mf mnasnet0_5 efficientnet_b0

With several --scrub-mb sizes (--scrub-mb 8,16,32,64) it times the cold calls after each and
ends with a table: per size, each model's cold leaf sum over its in-net leaf sum, and the size
whose median |ratio - 1| over the models is smallest: the scrub under which layers timed one at a
time cost what they cost inside these forward passes, to pass to layer_runner.py --scrub-mb.
Choose it on models of families the calibration may train on, never on held-out ones.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runners"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+",
                    help="torchvision model names, or randcnn_*/randtf_* graphs with --graphs-dir")
    ap.add_argument("--graphs-dir", default=None,
                    help="a folder of random architectures (runners/random_arch.py: the .onnx "
                         "files and reference.csv), e.g. tests/fixtures/randarch/s1001")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--scrub-mb", default="8",
                    help="MiB written before each cold call; several joined by ',' to compare")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--resolution", type=int, default=224)
    a = ap.parse_args(argv)
    import layer_runner
    import models as model_specs
    import network_runner
    import timing
    try:
        sizes = parse_sizes(a.scrub_mb)
    except ValueError as e:
        ap.error(str(e))
    # the heap kept, as the runners keep it, before torch allocates: the forward pass and the
    # layers timed in the state calibrations measure (docs/accuracy.md, Limits: "A fresh process")
    malloc = timing.keep_heap()
    torch = layer_runner.setup_torch(a.threads, "cpu")
    bufs = {mb: torch.zeros(max(1, int(mb * (1 << 20)) // 4)) for mb in sizes}
    buf = bufs[sizes[0]]
    ratios = {mb: {} for mb in sizes}

    def best(fn, reps, before=None):
        ts = []
        for _ in range(reps):
            if before is not None:
                before()
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return min(ts) * 1e3

    def kind(mod):
        k = type(mod).__name__
        if k.startswith("Conv") and getattr(mod, "groups", 1) > 1:
            k += "(grouped)"
        return k

    print(f"torch {torch.__version__}, {a.threads} thread(s), malloc {malloc}, "
          f"scrub {sizes[0]:g} MiB, "
          f"min of {a.reps}, {a.resolution} px, batch {a.batch}, utc "
          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    for name in a.models:
        spec = (model_specs.spec_for_name(name, a.graphs_dir) if a.graphs_dir else
                model_specs.spec_for_name(name, ".", "torchvision"))
        if spec is None:
            print(f"{name}: not a torchvision model" + (f" nor a graph of {a.graphs_dir}"
                                                       if a.graphs_dir else ""), file=sys.stderr)
            return 2
        m, _ = network_runner.prepared_model(torch, spec, fold_bn=True)
        x = spec.make_input(torch, a.batch, resolution=None if a.graphs_dir else a.resolution)
        leaves = [q for q in m.modules() if len(list(q.children())) == 0]
        rows = {}

        def add(k, col, v):
            rows.setdefault(k, {}).setdefault(col, 0.0)
            rows[k][col] += v
        with torch.inference_mode():
            for _ in range(3):
                m(x)
            full = best(lambda: m(x), a.reps)
            in_net, calls = leaf_calls(m, x, leaves, a.reps)
            for mod, v in in_net:
                add(kind(mod), "in-net", v * 1e3)
            for mod, inp in calls:
                def call(mod=mod, inp=inp):
                    mod(*inp)
                first = [t for t in inp if torch.is_tensor(t)][:1]

                def cold_in(first=first):
                    buf.add_(1.0)
                    for t in first:
                        t.sum()
                call()
                add(kind(mod), "warm", best(call, a.reps))
                add(kind(mod), "cold", best(call, a.reps, lambda: buf.add_(1.0)))
                add(kind(mod), "cold+in", best(call, a.reps, cold_in))
                for mb in sizes[1:]:
                    add(kind(mod), f"cold@{mb:g}",
                        best(call, a.reps, lambda b=bufs[mb]: b.add_(1.0)))
        cols = ("in-net", "warm", "cold", "cold+in")
        tot = {c: sum(r.get(c, 0.0) for r in rows.values()) for c in cols}
        print(f"\n{name}: full forward {full:.2f} ms; leaf sums: " +
              ", ".join(f"{c} {tot[c]:.2f}" for c in cols) +
              f" ({len(in_net)} leaf modules, {len(calls)} calls)")
        for k in sorted(rows, key=lambda k: -rows[k].get("in-net", 0.0)):
            print(f"  {k:28s}" + "".join(f" {c} {rows[k].get(c, 0.0):8.3f}" for c in cols))
        for mb in sizes:
            col = "cold" if mb == sizes[0] else f"cold@{mb:g}"
            ratios[mb][name] = sum(r.get(col, 0.0) for r in rows.values()) / tot["in-net"]
    if len(sizes) > 1:
        print(scrub_table(ratios, a.models))
    return 0


def leaf_calls(m, x, leaves, reps):
    """Times m(x) reps times with hooks on the leaf modules. Returns ([(module, seconds)] inside
    the fastest pass, every call of a leaf summed, and [(module, inputs)] for every call of the
    first pass, in call order). A module may run several times in one pass (ResNet's blocks call
    one ReLU module two or three times): each of its calls is then timed alone too."""
    starts, acc, calls, mods = {}, {}, [], {}

    def pre(mod, inp):
        starts[id(mod)] = time.perf_counter()

    def post(mod, inp, out):
        acc[id(mod)] = acc.get(id(mod), 0.0) + time.perf_counter() - starts[id(mod)]
        mods[id(mod)] = mod
        if recording:
            calls.append((mod, inp))
    hs = [h for q in leaves for h in (q.register_forward_pre_hook(pre),
                                       q.register_forward_hook(post))]
    best_pass = None
    recording = True
    try:
        for _ in range(reps):
            acc.clear()
            t = time.perf_counter()
            m(x)
            t = time.perf_counter() - t
            recording = False
            if best_pass is None or t < best_pass[0]:
                best_pass = (t, dict(acc))
    finally:
        for h in hs:
            h.remove()
    return [(mods[i], v) for i, v in best_pass[1].items()], calls


def parse_sizes(text):
    """'8,16,32' -> [8.0, 16.0, 32.0]: MiB, each > 0, no repeats, in the order given."""
    out = []
    for item in str(text).split(","):
        try:
            v = float(item)
        except ValueError:
            raise ValueError(f"--scrub-mb {text!r}: MiB numbers joined by ','") from None
        if not 0 < v <= 1 << 20 or v in out:
            raise ValueError(f"--scrub-mb {text!r}: each size in (0, 1048576], once")
        out.append(v)
    return out


def pick_scrub(ratios):
    """ratios: {MiB: {model: cold leaf sum / in-net leaf sum}} -> (MiB, median |ratio - 1|) of the
    size whose median over the models is smallest (the smaller size on a tie)."""
    scored = [(statistics.median([abs(r - 1.0) for r in by_model.values()]), mb)
              for mb, by_model in ratios.items() if by_model]
    if not scored:
        raise ValueError("no ratios to choose a scrub size from")
    err, mb = min(scored)
    return mb, err


def scrub_table(ratios, models):
    lines = ["", "cold leaf sum / in-net leaf sum, per scrub size (MiB)",
             f"{'model':24s}" + "".join(f"{mb:>9g}" for mb in ratios)]
    for name in models:
        lines.append(f"{name:24s}" + "".join(f"{ratios[mb][name]:9.3f}" for mb in ratios))
    mb, err = pick_scrub(ratios)
    lines.append(f"closest to in-network: --scrub-mb {mb:g} (median |ratio - 1| "
                 f"{100 * err:.1f} % over {len(models)} models)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
