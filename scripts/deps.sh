#!/usr/bin/env bash
# scripts/deps.sh: installs the Debian 12 packages perfpred needs, only those that are missing.
# Sourced by scripts/demo.sh and scripts/test.sh; safe to run on its own.
set -euo pipefail

PERFPRED_PACKAGES=(
  build-essential cmake pkg-config
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
  libyaml-dev libxgboost-dev libopenblas-dev libcjson-dev libcsv-dev libcmocka-dev
  gnuplot-nox
  clang-14 libclang-rt-14-dev
  python3 python3-torch python3-torchvision python3-onnx python3-numpy python3-tqdm
)

missing=()
for p in "${PERFPRED_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "perfpred: installing missing Debian packages: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
