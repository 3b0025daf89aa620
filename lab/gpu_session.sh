#!/bin/bash
# lab/gpu_session.sh: one device-machine session's measurements, as run on 2026-11-27 through the
# device tool (`bash lab/gpu_session.sh` in the repository root; $OUT receives the files):
# the stack runner's eager fp32/fp16 rows, the SM-limit study, the per-op host profile.
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
timeout 300 python3 runners/stack_runner.py --out "$OUT/stacks" --work /tmp/sr --device-name "$dev" \
    --file-stem "$stem" --stacks fp32,fp16 --budget-s 265
echo "stacks done rc=$? ($(date -u +%FT%TZ))"
timeout 120 python3 lab/sm_limit_runner.py -o "$OUT/sm-limit.csv" --device-name "$dev" --budget-s 90
echo "sm-limit done rc=$? ($(date -u +%FT%TZ))"
timeout 60 python3 lab/op_host_profile.py -o "$OUT/op-host-profile.csv" --device-name "$dev"
echo "profile done rc=$? ($(date -u +%FT%TZ))"
