#!/bin/bash
# lab/gpu_session_graphs.sh: the second device-machine session's measurements (2026-11-28),
# through the device tool (`bash lab/gpu_session_graphs.sh` in the repository root; $OUT receives
# the files): whole models replayed as CUDA graphs on green contexts of 16-64 SMs and the whole
# GPU, fp32 and fp16 (the kernels of a MIG slice without the host's dispatch), then the stack
# runner's TorchScript fp32 and fp16 rows. Read-only on the GPU: no MIG, clock or power change.
source "$(dirname "$0")/gpu_session_env.sh"
timeout 190 python3 lab/sm_limit_runner.py -o "$OUT/sm-graph.csv" --device-name "$dev" \
    --sms 16,32,48,64 --modes graph --precision fp32,fp16 --budget-s 150
echo "sm-graph done rc=$? ($(date -u +%FT%TZ))"
timeout 240 python3 runners/stack_runner.py --out "$OUT/stacks" --work /tmp/sr --device-name "$dev" \
    --file-stem "$stem" --stacks torchscript,torchscript-fp16 --budget-s 200
echo "stacks done rc=$? ($(date -u +%FT%TZ))"
