#!/usr/bin/env bash
# bench/run.sh: builds the benchmark, exports ResNet-50 with its weights (about 100 MB, into a temp
# folder) next to the weightless fixture, and reports the ratios of bench/bench_perfpred.c:
# load with/without weights, prediction vs load, and prediction vs running the model (the measured
# host-cpu forward latency of resnet50 at batch 1 from data/host-cpu/networks.csv), and the cold
# start of a context on a100-mig-3g, host-cpu and rpi4 (no layer models of its own).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build >/dev/null && cmake --build build -j"$(nproc)" --target bench_perfpred >/dev/null
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp/resnet50_weights.onnx" <<'PY'
import sys, torch, torchvision
m = torchvision.models.resnet50().eval()
torch.onnx.export(m, torch.randn(1, 3, 224, 224), sys.argv[1], export_params=True, opset_version=17,
                  input_names=["input"], output_names=["output"],
                  dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
PY
measured=$(awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="latency_ms") c=i; next}
  $1 ~ /\/resnet50.onnx$/ && $7 == 1 {print $c; exit}' data/host-cpu/networks.csv)
ls -la "$tmp/resnet50_weights.onnx" tests/fixtures/models/resnet50.onnx | awk '{print $5, $9}'
./build/bench_perfpred tests/fixtures/models/resnet50.onnx "$tmp/resnet50_weights.onnx" a100-mig-3g
./build/bench_perfpred tests/fixtures/models/resnet50.onnx "$tmp/resnet50_weights.onnx" host-cpu ${measured:+"$measured"}
./build/bench_perfpred tests/fixtures/models/resnet50.onnx "$tmp/resnet50_weights.onnx" rpi4 | tail -1
