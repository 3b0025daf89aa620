#!/usr/bin/python3
"""lab/host_scale_rule.py: a current host's `host_dispatch_scale` by the rule its descriptor states.

The rule (docs/gpu-stacks.md, "The project's own GPUs"): the median, over a GPU's batch-1 rows of
the ResNet family (ResNet-18/50, ResNeXt-50, Wide ResNet-50; eager fp32), of measured over what the
pytorch-eager-fp32 stack predicts with the 2022 hosts' dispatch (scale 1), the stack fitted
without that GPU. Reads the rows `perfpred calibrate fit-stacks --rows-dir D` writes (held-out
predictions, made with the descriptor's scale S): where the row is host-bound (host_ms above
gpu_ms), the prediction at scale 1 is the prediction / S, so the implied scale is S x measured /
predicted. Prints it per GPU, with each row.

  /usr/bin/python3 lab/host_scale_rule.py D/pytorch-eager-fp32.csv --scale h100-sxm5-80gb=0.38 \\
      --scale h200-sxm-141gb=0.42
"""
import argparse
import csv
import statistics
import sys

RESNETS = {"resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows")
    ap.add_argument("--scale", action="append", required=True,
                    help="DEVICE=S: the scale the rows were predicted with")
    a = ap.parse_args(argv)
    scales = dict((k, float(v)) for k, v in (s.split("=") for s in a.scale))
    rows = list(csv.DictReader(open(a.rows)))
    for dev, s in scales.items():
        got = []
        for r in rows:
            if (r["device"] != dev or r["model"] not in RESNETS or r["batch"] != "1" or
                    r.get("graph", "0") != "0"):
                continue
            m, p = float(r["latency_ms"]), float(r["predicted_ms"])
            bound = "host" if float(r["host_ms"]) > float(r["gpu_ms"]) else "GPU"
            print(f"  {dev} {r['model']:16s} run {r['run_folder']:>3s} measured {m:7.3f} "
                  f"predicted {p:7.3f} ms ({bound}-bound): scale {s * m / p:.3f}")
            if bound == "host":
                got.append(s * m / p)
        if got:
            print(f"{dev}: {statistics.median(got):.3f} (median of {len(got)} host-bound rows; "
                  f"the descriptor has {s})")
        else:
            print(f"{dev}: no host-bound batch-1 ResNet-family rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
