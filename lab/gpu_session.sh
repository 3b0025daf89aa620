#!/bin/bash
# lab/gpu_session.sh: one device-machine session's measurements, as run on 2026-11-27 through the
# device tool (`bash lab/gpu_session.sh` in the repository root; $OUT receives the files):
# the stack runner's eager fp32/fp16 rows, the SM-limit study, the per-op host profile.
source "$(dirname "$0")/gpu_session_env.sh"
timeout 300 python3 runners/stack_runner.py --out "$OUT/stacks" --work /tmp/sr --device-name "$dev" \
    --file-stem "$stem" --stacks fp32,fp16 --budget-s 265
echo "stacks done rc=$? ($(date -u +%FT%TZ))"
timeout 120 python3 lab/sm_limit_runner.py -o "$OUT/sm-limit.csv" --device-name "$dev" --budget-s 90
echo "sm-limit done rc=$? ($(date -u +%FT%TZ))"
timeout 60 python3 lab/op_host_profile.py -o "$OUT/op-host-profile.csv" --device-name "$dev"
echo "profile done rc=$? ($(date -u +%FT%TZ))"
