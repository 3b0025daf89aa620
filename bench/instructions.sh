#!/bin/sh
# bench/instructions.sh BUILD_DIR: instructions per prediction under callgrind (load-independent,
# unlike times; valgrind runs the AVX2 kernels, having no AVX-512):
#   NAS-Bench-201 per cell, rpi4 and epyc-kvm-2vcpu: (60 cells - 1 cell) / 59 of `predict-many --csv`
#     on the first cells of bench_speed's pseudo-random sample;
#   ResNet-50 on epyc-kvm-2vcpu, reuse off: (20 - 10 predictions) / 10 of bench_loop, with the tree
#     memo off (computed afresh) and on (memo warm).
# Needs valgrind and python3; set PERFPRED_DATASETS where ../shared is not beside the tree.
set -e
b=$1
[ -x "$b/perfpred" ] && [ -x "$b/bench_loop" ] || { echo "usage: $0 BUILD_DIR (with perfpred, bench_loop)" >&2; exit 1; }
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import sys
ops = ["none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3"]
s, cells = 12345, []
for i in range(60):
    o = []
    for e in range(6):
        s = (s * 1103515245 + 12345) & 0xffffffff
        o.append((s >> 16) % 5)
    cells.append("|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|" % tuple(ops[x] for x in o))
open(sys.argv[1] + "/cells60.txt", "w").write("\n".join(cells) + "\n")
open(sys.argv[1] + "/cells1.txt", "w").write(cells[0] + "\n")
PY
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'; }
# a fresh build (or a recalibration) flattens and caches each regressor's trees on its first start
# (docs/speed.md, "The tree cache"): warm the cache first, so that neither run of a pair pays it
for d in rpi4 epyc-kvm-2vcpu; do "$b/perfpred" predict-many --device $d --nb201 "$tmp/cells1.txt" --csv >/dev/null; done
"$b/bench_loop" "$src/tests/fixtures/models/resnet50.onnx" epyc-kvm-2vcpu 1 0 >/dev/null
for d in rpi4 epyc-kvm-2vcpu; do
    a=$(ir "$b/perfpred" predict-many --device $d --nb201 "$tmp/cells60.txt" --csv)
    c=$(ir "$b/perfpred" predict-many --device $d --nb201 "$tmp/cells1.txt" --csv)
    echo "NAS-Bench-201 cell on $d: $(( (a - c) / 59 )) instructions"
done
for memo in 0 1; do
    a=$(ir "$b/bench_loop" "$src/tests/fixtures/models/resnet50.onnx" epyc-kvm-2vcpu 20 $memo)
    c=$(ir "$b/bench_loop" "$src/tests/fixtures/models/resnet50.onnx" epyc-kvm-2vcpu 10 $memo)
    echo "ResNet-50 on epyc-kvm-2vcpu, tree memo $( [ $memo = 1 ] && echo warm || echo off): $(( (a - c) / 10 )) instructions"
done
