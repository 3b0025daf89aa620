#!/usr/bin/python3
"""resummarize_layers.py: a layer CSV written by runners/layer_runner.py, summarized again from the
samples its OUT.partial.jsonl kept, with the first K samples of every visit (--stat-first K).

The network runner times bursts of 2 forwards per visit and keeps the median over rounds of each
round's minimum; a layer CSV measured with bursts of 5 and summarized over all 5 takes the minimum
of more calls, which on a noisy machine is the lower figure. Summarizing the layers over their
first 2 samples gives both the same estimator (the layer runner does this by default since
--stat-first 2; this tool brings older files in line without measuring again).

  /usr/bin/python3 tools/resummarize_layers.py layers.csv --stat-first 2 -o layers-first2.csv

(data/epyc-kvm-2vcpu/layers-round1..3.csv were made this way from session 2's runs; those runs and
their partial files are in git, data/README.md.)

--rounds-first R keeps each row's first R visits only: what a run of R rounds would have given
(docs/calibration.md, "Rounds and samples of the layers stage").

A network CSV of runners/network_runner.py (a `model` column) is summarized the same way, each row
found in the partial file by its model, input shape and batch. A run with canaries is scaled as
the runners scale it now (timing.Canary: each visit by the canary level of the minute around it),
so this also brings rows scaled before that rule in line.

Rows keep their order and every column but latency_ms, latency_spread_ms, repetitions and, in
source, stat= and the min/max/mean/IQR figures, which are recomputed; source gains
`resummarized=first-K-of-partial`. A row whose visits are missing from the partial file is an
error naming the file and line.
"""

import argparse
import csv
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runners"))
import layer_runner  # noqa: E402
import timing  # noqa: E402

LINE_RE = re.compile(r"^[^;]*:(\d+)$")


def replace_field(source, name, value):
    parts = source.split("; ")
    for i, p in enumerate(parts):
        if p.startswith(name + "="):
            parts[i] = f"{name}={value}"
            return "; ".join(parts)
    return source + f"; {name}={value}"


def resummarize(csv_path, partial_path, first, rounds_first=0):
    store = timing.PartialStore.read(partial_path)
    visits, inner = store.visits, store.inner
    burst = int(((store.identity or {}).get("protocol") or {}).get("burst", 0))
    stat = layer_runner.stat_name(timing.Protocol(burst=max(burst, 1)), first)
    ms = timing.ns_to_ms
    # a run with canaries (layer_runner --canary) is summarized scaled, as the runner does now
    # (each visit by the canary level of the minute around it: timing.Canary)
    levels = store.canary_levels()
    ref = timing.PartialStore.canary_reference(levels)
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        rows = list(reader)
    out = []
    for n, r in enumerate(rows, 2):
        if "model" in r:  # a network row: network_runner's key, model|1xSHAPE|bBATCH
            shape = (r.get("input_shapes") or "").split(";")[0].rpartition(":")[2].split("x")
            key = (f"{os.path.basename(r['model'])}|1x{'x'.join(shape[1:])}|b{r.get('batch')}")
            what = f"network {key}"
        else:
            m = LINE_RE.match(r.get("source", "").split("; ")[0])
            if not m:
                raise ValueError(f"{csv_path}:{n}: source does not name a plan line "
                                 f"('runner-pytorch@DEV:RUN/plan.csv:LINE')")
            key = f"L{m.group(1)}"
            what = f"plan line {m.group(1)}"
        v = visits.get(key)
        if not v:
            raise ValueError(f"{csv_path}:{n}: no visits of {what} in {partial_path}")
        if rounds_first > 0:  # a run of fewer rounds: its first visits only
            v = {k: v[k] for k in sorted(v)[:rounds_first]}
        raw = timing.summarize([v[k] for k in sorted(v)], inner[key], first)
        st = raw
        if ref > 0:
            v = timing.canary_scaled(v, levels.get(key, {}), ref)
            st = timing.summarize([v[k] for k in sorted(v)], inner[key], first)
        r = dict(r)
        r["latency_ms"] = f"{ms(st.median_ns):.6g}"
        r["latency_spread_ms"] = f"{ms(st.iqr_ns):.6g}"
        r["repetitions"] = st.calls
        s = r["source"]
        for name, value in (("stat", stat), ("min_ms", f"{ms(st.min_ns):.6g}"),
                            ("max_ms", f"{ms(st.max_ns):.6g}"),
                            ("mean_ms", f"{ms(st.mean_ns):.6g}"),
                            ("iqr_all_ms", f"{ms(st.iqr_all_ns):.6g}"),
                            ("resummarized", f"first-{first}-of-partial"
                             + (f"-rounds-{rounds_first}" if rounds_first > 0 else ""))):
            s = replace_field(s, name, value)
        if ref > 0:
            for name, value in (("unscaled_ms", f"{ms(raw.median_ns):.6g}"),
                                ("unscaled_spread_ms", f"{ms(raw.iqr_ns):.6g}"),
                                ("canary_window_s", f"{timing.CANARY_WINDOW_S:g}"),
                                ("canary_ref_ms", f"{ms(ref):.6g}")):
                s = replace_field(s, name, value)
        r["source"] = s
        out.append(r)
    return header, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("layers", help="layer CSV written by runners/layer_runner.py, or a network CSV "
                                   "of runners/network_runner.py")
    ap.add_argument("--partial", help="its partial file (default LAYERS.partial.jsonl)")
    ap.add_argument("--stat-first", type=int, required=True,
                    help="samples of each visit that count (>= 1)")
    ap.add_argument("--rounds-first", type=int, default=0,
                    help="only the first R rounds of every row count: what a run of R rounds "
                         "would have summarized (default: every round)")
    ap.add_argument("-o", "--out", required=True, help="layer CSV to write")
    a = ap.parse_args(argv)
    if a.stat_first < 1:
        print("resummarize_layers: --stat-first must be >= 1", file=sys.stderr)
        return 2
    if a.rounds_first < 0:
        print("resummarize_layers: --rounds-first must be >= 0", file=sys.stderr)
        return 2
    try:
        header, rows = resummarize(a.layers, a.partial or a.layers + ".partial.jsonl",
                                   a.stat_first, a.rounds_first)
    except (OSError, ValueError, KeyError, csv.Error, timing.ResumeMismatch) as e:
        print(f"resummarize_layers: {e}", file=sys.stderr)
        return 1
    timing.write_csv_atomic(a.out, header, rows)
    print(f"resummarize_layers: wrote {len(rows)} rows to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
