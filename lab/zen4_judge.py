#!/usr/bin/python3
"""zen4_judge.py: the Zen 4 guest's seventeen judging files (`calibrate run`'s 45 networks each:
30 random CNNs, 10 random encoders, 5 held-out torchvision families; data/epyc-zen4-kvm-2vcpu/
judge-*.csv, taken over two days) predicted by the models in a config folder. It measures nothing;
run from the repository root after a build:

  /usr/bin/python3 lab/zen4_judge.py [--config-dir DIR] [--perfpred build/perfpred]

Prints each file's MAPE (all rows, the encoders) and share within +-10 %, then their means, the
figures docs/accuracy.md quotes as "the seventeen files".
"""
import argparse, json, subprocess

FILES = ("judge-lv judge-run2-lv judge-run3-lv judge-run4-lv judge-run5 judge-run6 judge-run7 "
         "judge-run8 judge-quick1 judge-quick2 judge-quick3 judge-quick4 judge-quick5 judge-kept "
         "judge-run9 judge-run10 judge-run11").split()
DEV = "epyc-zen4-kvm-2vcpu"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config-dir", default="configs")
    ap.add_argument("--perfpred", default="build/perfpred")
    a = ap.parse_args()
    tot = tf_tot = w10 = 0.0
    print(f"{'file':<16} {'rows':>5} {'MAPE %':>7} {'encoders %':>11} {'<=10 %':>7}")
    for f in FILES:
        out = subprocess.run([a.perfpred, "eval", "--config-dir", a.config_dir, "--device", DEV,
                              "--networks", f"data/{DEV}/{f}.csv", "--json"],
                             check=True, capture_output=True, text=True).stdout
        j = json.loads(out)
        o = j["overall"]["model"]
        tf = next(g["model"]["mape_pct"] for g in j["groups"] if g["name"] == "randtf")
        print(f"{f:<16} {o['n']:>5} {o['mape_pct']:>7.2f} {tf:>11.2f} {o['within10_pct']:>7.1f}")
        tot += o["mape_pct"]
        tf_tot += tf
        w10 += o["within10_pct"]
    n = len(FILES)
    print(f"{'mean':<16} {'':>5} {tot / n:>7.2f} {tf_tot / n:>11.2f} {w10 / n:>7.1f}")


if __name__ == "__main__":
    main()
