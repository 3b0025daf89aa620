#!/bin/bash
# lab/gpu_session_graphs.sh: the second device-machine session's measurements (2026-11-28),
# through the device tool (`bash lab/gpu_session_graphs.sh` in the repository root; $OUT receives
# the files): whole models replayed as CUDA graphs on green contexts of 16-64 SMs and the whole
# GPU, fp32 and fp16 (the kernels of a MIG slice without the host's dispatch), then the stack
# runner's TorchScript fp32 and fp16 rows. Read-only on the GPU: no MIG, clock or power change.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu-session}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
nvidia-smi -q | head -60 > "$OUT/nvidia-smi.txt" 2>&1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) dev=h200-sxm-141gb; stem=h200 ;;
  *H100*) dev=h100-sxm5-80gb; stem=h100 ;;
  *) dev=unknown-gpu; stem=gpu ;;
esac
echo "gpu: $gpu -> $dev ($(date -u +%FT%TZ))"
timeout 190 python3 lab/sm_limit_runner.py -o "$OUT/sm-graph.csv" --device-name "$dev" \
    --sms 16,32,48,64 --modes graph --precision fp32,fp16 --budget-s 150
echo "sm-graph done rc=$? ($(date -u +%FT%TZ))"
timeout 240 python3 runners/stack_runner.py --out "$OUT/stacks" --work /tmp/sr --device-name "$dev" \
    --file-stem "$stem" --stacks torchscript,torchscript-fp16 --budget-s 200
echo "stacks done rc=$? ($(date -u +%FT%TZ))"
