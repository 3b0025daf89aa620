#!/usr/bin/env bash
# tests/install_check.sh BUILD_DIR SOURCE_DIR [SANITIZE=ON|OFF]: `cmake --install` into a scratch prefix, compile the
# example against the installed header and library through pkg-config, run it on a model with the
# installed descriptors. Prints "1 passed, 0 failed" or fails.
set -euo pipefail
build=$1 src=$2
# a sanitized library needs a sanitized program (the ASan runtime must load first)
san=""
if [ "${3:-OFF}" = "ON" ]; then san="-fsanitize=address,undefined"; fi
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/perfpred.h"
test -f "$prefix/include/perfpred_calibrate.h"
test -f "$prefix/share/perfpred/configs/devices/a100.yaml"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc -std=c11 -Wall -Wextra -Werror $san "$src/examples/predict.c" $(pkg-config --cflags --libs perfpred) -lm \
   -o "$prefix/predict"
out=$(PERFPRED_CONFIG_DIR="$prefix/share/perfpred/configs" "$prefix/predict" \
      "$src/tests/fixtures/malformed/control.onnx" a100-mig-3g)
echo "$out"
echo "$out" | grep -q "on a100-sxm4-40gb-mig-3g.20gb: 20 params, 16 MACs"
echo "$out" | grep -q "^latency "
# the installed Python package finds the installed library through pkg-config (not with a
# sanitized library: the ASan runtime would have to load before python)
if [ -z "$san" ] && [ -x /usr/bin/python3 ]; then
  py=$(cd / && env -u PERFPRED_LIB PYTHONPATH="$prefix/share/perfpred/python" \
       PERFPRED_CONFIG_DIR="$prefix/share/perfpred/configs" /usr/bin/python3 -c "
import perfpred
p = perfpred.predict('$src/tests/fixtures/malformed/control.onnx', device='rpi5')
print(perfpred.find_library(), p.device, p.latency.value > 0)")
  echo "$py"
  echo "$py" | grep -q "^$prefix/lib/libperfpred.so rpi5 True$"
fi
echo "install_and_pkgconfig: 1 passed, 0 failed"
