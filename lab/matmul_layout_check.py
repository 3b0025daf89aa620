#!/usr/bin/python3
"""matmul_layout_check.py: does the layout of a MatMul's weight change its time, on this machine?

torch.onnx writes nn.Linear on an input of rank 3 or more as MatMul(x, B) with B = W^T stored
[K, N]; the layer runner times that row as torch.matmul(x, B) with B contiguous. PyTorch's
nn.Linear keeps W as [N, K] and multiplies by its transposed view, so BLAS sees another layout.
For every distinct MatMul row with a weight B in the layer CSVs named, this times both, alternating
within each round (a --scrub-mb cache scrub before every call; each round's fastest of --burst
calls; the median over --rounds rounds), and prints each row's two times, their ratio (W.t() over
[K, N]) and a summary. It measures, it trains nothing; the finding is in README ("Limits").

  /usr/bin/python3 lab/matmul_layout_check.py data/epyc-kvm-2vcpu/layers-round1.csv
"""

import argparse
import csv
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runners"))


def weight_matmuls(paths):
    """Distinct (x dims, w dims) of MatMul rows whose second input is a 2-D weight, in file order."""
    seen, out = set(), []
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("op_type") != "MatMul":
                    continue
                ins = [p.split(":", 1) for p in row["inputs"].split(";")]
                if len(ins) != 2 or ins[0][0] != "x" or ins[1][0] != "w":
                    continue
                x = tuple(int(v) for v in ins[0][1].split("x"))
                w = tuple(int(v) for v in ins[1][1].split("x"))
                if len(w) != 2 or (x, w) in seen:
                    continue
                seen.add((x, w))
                out.append((x, w))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("layers", nargs="+", help="layer CSVs (docs/measurements.md)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--scrub-mb", type=float, default=24)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--burst", type=int, default=2)
    a = ap.parse_args(argv)
    rows = weight_matmuls(a.layers)
    if not rows:
        print("matmul_layout_check: no MatMul row with a 2-D weight in the files named",
              file=sys.stderr)
        return 2
    import layer_runner
    import timing
    torch = layer_runner.setup_torch(a.threads, "cpu")
    buf = torch.zeros(max(1, int(a.scrub_mb * (1 << 20)) // 4))

    def fastest(fn):
        return timing.fastest_after_scrub(fn, lambda: buf.add_(1.0), a.burst)

    print(f"torch {torch.__version__}, {a.threads} thread(s), scrub {a.scrub_mb:g} MiB, median over "
          f"{a.rounds} rounds of the fastest of {a.burst}, {len(rows)} rows, utc "
          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print(f"\n{'x':18s} {'w [K,N]':12s} {'[K,N] ms':>9s} {'W.t() ms':>9s} {'ratio':>6s}")
    ratios, t_kn, t_wt = [], 0.0, 0.0
    with torch.inference_mode():
        for x_dims, w_dims in rows:
            x = torch.randn(*x_dims)
            b = torch.randn(*w_dims)
            w = torch.randn(w_dims[1], w_dims[0])
            kn, wt = [], []
            torch.matmul(x, b)
            torch.matmul(x, w.t())
            for _ in range(a.rounds):
                kn.append(fastest(lambda: torch.matmul(x, b)))
                wt.append(fastest(lambda: torch.matmul(x, w.t())))
            m_kn, m_wt = statistics.median(kn) * 1e3, statistics.median(wt) * 1e3
            ratios.append(m_wt / m_kn)
            t_kn += m_kn
            t_wt += m_wt
            print(f"{'x'.join(map(str, x_dims)):18s} {'x'.join(map(str, w_dims)):12s} "
                  f"{m_kn:9.3f} {m_wt:9.3f} {m_wt / m_kn:6.3f}", flush=True)
    q = statistics.quantiles(ratios, n=10)
    print(f"\nratio W.t() / [K,N]: median {statistics.median(ratios):.3f}, deciles 1 and 9 "
          f"{q[0]:.3f} and {q[-1]:.3f}, range {min(ratios):.3f} to {max(ratios):.3f}; "
          f"summed time {t_wt / t_kn:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
