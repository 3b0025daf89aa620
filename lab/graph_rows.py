#!/usr/bin/python3
"""lab/graph_rows.py: the whole-GPU rows of lab/sm_limit_runner.py's CUDA-graph study as run
folders that `perfpred calibrate fit-stacks` reads beside the eager ones.

A row of mode `graph` is an eager forward captured once as a CUDA graph and replayed back to
back (torch.cuda.CUDAGraph): the eager stack's kernels, launched by one call, with no per-op
dispatch. The fit reads `<date>_pretrained-<precision>-graph/<gpu>.csv` (stack_runner's layout)
as rows of the eager stack of that precision whose host costs are zero (docs/gpu-stacks.md,
"Kernels alone: CUDA-graph rows"). Only the rows on the whole GPU (no green context) are written;
the fewer-SM rows stay a check (lab/sm_limit_check.py --mode graph). Parameter counts come from
torchvision's constructors (the fit checks them against the ONNX exports). Writes atomically.

  /usr/bin/python3 lab/graph_rows.py data/gpu-stacks/studies/2026_1128-h200-sm-graph.csv \\
      --stamp 2026_1128 --stem h200 --out data/gpu-stacks
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runners"))
from timing import write_csv_atomic  # noqa: E402

# torchvision name -> the short name fit-stacks maps to its export (fit/fit_stacks.c, model_map)
SHORT = {"vit_b_32": "vit32", "efficientnet_v2_m": "efficientnet", "squeezenet1_0": "squeezenet",
         "densenet161": "densenet", "inception_v3": "inception",
         "shufflenet_v2_x1_0": "shufflenet", "mnasnet1_0": "mnasnet"}
HEADER = ["model", "torchvision_name", "batch_size", "input_size", "latency", "max_memory",
          "total_params", "latency_spread", "latency_rounds", "calls_per_round", "event_ms",
          "device", "runtime", "precision", "date", "status"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--stamp", required=True, help="run folder date prefix, e.g. 2026_1128")
    ap.add_argument("--stem", required=True, help="GPU file stem fit-stacks maps (h100, h200)")
    ap.add_argument("--out", required=True, help="the --own-data folder")
    a = ap.parse_args(argv)
    rows = list(csv.DictReader(open(a.csv)))
    models = [r for r in rows if r["kind"] == "model" and r.get("mode") == "graph"]
    full = max(int(r["sm_count"]) for r in rows if r["kind"] == "probe" and r["sm_count"])
    import torchvision
    params = {}
    by_prec = {}
    for r in models:
        if int(r["sm_count"]) != full or r["status"] != "ok":
            continue
        name = r["model"]
        if name not in params:
            m = getattr(torchvision.models, name)(weights=None)
            params[name] = sum(p.numel() for p in m.parameters())
        by_prec.setdefault(r["precision"], []).append({
            "model": SHORT.get(name, name), "torchvision_name": name,
            "batch_size": r["batch_size"], "input_size": 224,
            "latency": float(r["latency_ms"]) / 1e3, "max_memory": "",
            "total_params": params[name], "latency_spread": r["latency_spread"],
            "latency_rounds": 5, "calls_per_round": r["calls_per_round"],
            "event_ms": r["event_ms"], "device": r["device"], "runtime": "pytorch-eager-graph",
            "precision": r["precision"], "date": r["date"], "status": "ok"})
    for prec, out in sorted(by_prec.items()):
        folder = os.path.join(a.out, f"{a.stamp}_pretrained-{prec}-graph")
        os.makedirs(folder, exist_ok=True)
        write_csv_atomic(os.path.join(folder, a.stem + ".csv"), HEADER, out)
        print(f"{folder}/{a.stem}.csv: {len(out)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
