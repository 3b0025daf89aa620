#!/bin/bash
# split_seed_check.sh: how much a device's layer-sum error on whole networks moves with the fit's
# held-out split alone. For each seed (calibrate fit --seed: which 20 % of each kind's
# configurations are held out, and XGBoost's seed) it fits the layer models from LAYERS into a
# scratch config folder, judges their layer sums on NETWORKS (perfpred eval --layer-sum-only --by
# family --json) and prints the overall MAPE and that of the families named in FAMILIES (row-weighted).
# It measures nothing and writes nothing outside the scratch folder. RESCALE=FILE.csv[,..] in the
# environment passes those files as --rescale-layers (rows of a later session, rescaled by anchors),
# and RESCALE_BY_CLASS=1 adds --rescale-by-class.
#
#   bash lab/split_seed_check.sh DEVICE LAYERS.csv[,..] NETWORKS.csv FAM1,FAM2,.. [SEED ..]
#   bash lab/split_seed_check.sh epyc-kvm-2vcpu data/epyc-kvm-2vcpu/layers-round1.csv,... \
#       data/epyc-kvm-2vcpu/networks.csv googlenet,mnasnet,regnet,shufflenet,squeezenet 42 1 2 3 4 5
set -euo pipefail
if [ $# -lt 4 ]; then
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
dev=$1 layers=$2 nets=$3 fams=$4
shift 4
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(42 1 2 3 4 5)
root=$(cd "$(dirname "$0")/.." && pwd)
cli=$root/build/perfpred
[ -x "$cli" ] || { echo "split_seed_check: build perfpred first (bash scripts/demo.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/cfg/artifacts"
ln -s "$root/configs/devices" "$tmp/cfg/devices"
echo "seed  overall %  $fams %"
for s in "${seeds[@]}"; do
    rm -rf "$tmp/cfg/artifacts/$dev"
    "$cli" calibrate fit --device "$dev" --layers "$layers" ${RESCALE:+--rescale-layers "$RESCALE"} \
        ${RESCALE_BY_CLASS:+--rescale-by-class} \
        --threads 1 --seed "$s" \
        --out "$tmp/cfg/artifacts/$dev" > "$tmp/fit.txt" 2>&1 || { cat "$tmp/fit.txt" >&2; exit 1; }
    "$cli" eval --config-dir "$tmp/cfg" --device "$dev" --networks "$nets" --layer-sum-only \
        --by family --json > "$tmp/eval.json" 2> "$tmp/eval.err" || { cat "$tmp/eval.err" >&2; exit 1; }
    /usr/bin/python3 - "$tmp/eval.json" "$fams" "$s" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))
want = set(sys.argv[2].split(","))
groups = [g for g in ev["groups"] if g["name"] in want]
if not groups:
    sys.exit(f"split_seed_check: none of {sys.argv[2]} in the eval")
rows = sum(g["model"]["n"] for g in groups)
fam = sum(g["model"]["n"] * g["model"]["mape_pct"] for g in groups) / rows
print(f"{sys.argv[3]:5s} {ev['overall']['model']['mape_pct']:9.2f}  {fam:.2f}")
PY
done
