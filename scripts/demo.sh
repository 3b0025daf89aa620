#!/usr/bin/env bash
# scripts/demo.sh: the first command of the README. Installs what is missing (Debian packages),
# builds perfpred, makes the Python package importable (scripts/python_setup.sh), and runs the
# main job on the bundled example model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPERFPRED_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
bash scripts/python_setup.sh
echo "== perfpred inspect examples/resnet18.onnx"
./build/perfpred inspect examples/resnet18.onnx | tail -n 6
echo
echo "== perfpred --device a100-mig-3g examples/resnet18.onnx --layers 5"
./build/perfpred --device a100-mig-3g examples/resnet18.onnx --layers 5
echo
echo "== perfpred compare --device a100,a100-mig-1g,jetson-orin-nano,rpi4 examples/resnet18.onnx --batch 1,8"
./build/perfpred compare --device a100,a100-mig-1g,jetson-orin-nano,rpi4 examples/resnet18.onnx --batch 1,8
echo
echo "== /usr/bin/python3 -c \"import perfpred; print(perfpred.predict('examples/resnet18.onnx', device='rpi5'))\""
/usr/bin/python3 -c "import perfpred; print(perfpred.predict('examples/resnet18.onnx', device='rpi5'))"
