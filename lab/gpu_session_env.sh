# lab/gpu_session_env.sh: sourced by the device-machine session scripts (lab/gpu_session*.sh).
# Sets OUT (the device tool's output folder, else /tmp/gpu-session), sends everything printed to
# $OUT/run.log as well, saves `nvidia-smi -q`'s head, and names the GPU found: dev (perfpred's
# device name) and stem (the CSV file name the stack runner writes).
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
