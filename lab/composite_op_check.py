#!/usr/bin/python3
"""composite_op_check.py: what a composite op costs in PyTorch eager against the nodes torch.onnx
writes for it, on this machine.

torch.onnx exports GELU as Div, Erf, Add, Mul, Mul, SiLU as Sigmoid, Mul, and HardSwish (before
opset 14) as HardSigmoid, Mul; PyTorch runs each as one kernel. For each op and input shape this
times, after a --scrub-mb cache scrub before every call (the layer runner's protocol: a visit of
--burst calls per round, each round's fastest, the median over --rounds rounds):
  eager       the one eager op (F.gelu, F.silu, F.hardswish)
  first       the decomposition's first node alone (what perfpred timed a composite by before
              it timed the one operator)
  costliest   the decomposition's most expensive node alone
  nodes       the decomposition run node by node
and prints each beside eager / first. It is the evidence behind timing a composite op as its
one operator (docs/calibration.md); it measures, it trains nothing.

  /usr/bin/python3 lab/composite_op_check.py
"""

import argparse
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runners"))

# channels-last activations of convnext_tiny's four stages, vit_b_16's MLP, and NCHW maps of
# efficientnet_b0 and mobilenet_v3_large
SHAPES = {"gelu": [(1, 56, 56, 384), (1, 28, 28, 768), (1, 14, 14, 1536), (1, 7, 7, 3072),
                   (1, 197, 3072)],
          "silu": [(1, 32, 112, 112), (1, 96, 112, 112), (1, 240, 28, 28), (1, 1152, 7, 7)],
          "hardswish": [(1, 16, 112, 112), (1, 240, 28, 28), (1, 960, 7, 7)]}


def steps(torch, op):
    """The nodes torch.onnx writes for op, each a function of (x, previous result)."""
    if op == "gelu":
        r2 = math.sqrt(2.0)
        return [("Div", lambda x, p: x / r2), ("Erf", lambda x, p: torch.erf(p)),
                ("Add", lambda x, p: p + 1.0), ("Mul", lambda x, p: x * p),
                ("Mul", lambda x, p: p * 0.5)]
    if op == "silu":
        return [("Sigmoid", lambda x, p: torch.sigmoid(x)), ("Mul", lambda x, p: x * p)]
    return [("HardSigmoid", lambda x, p: torch.nn.functional.hardsigmoid(x)),
            ("Mul", lambda x, p: x * p)]


def eager(torch, op):
    F = torch.nn.functional
    return {"gelu": F.gelu, "silu": F.silu, "hardswish": F.hardswish}[op]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--scrub-mb", type=float, default=24)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--burst", type=int, default=2)
    a = ap.parse_args(argv)
    import layer_runner
    import timing
    torch = layer_runner.setup_torch(a.threads, "cpu")
    buf = torch.zeros(max(1, int(a.scrub_mb * (1 << 20)) // 4))

    def timed(fn):
        fn()
        per_round = [timing.fastest_after_scrub(fn, lambda: buf.add_(1.0), a.burst)
                     for _ in range(a.rounds)]
        return statistics.median(per_round) * 1e3

    print(f"torch {torch.__version__}, {a.threads} thread(s), scrub {a.scrub_mb:g} MiB, "
          f"median over {a.rounds} rounds of the fastest of {a.burst}, utc "
          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print(f"\n{'op':10s} {'input':18s} {'eager ms':>9s} {'first ms':>9s} {'costliest':>16s} "
          f"{'nodes ms':>9s} {'eager/first':>12s}")
    with torch.inference_mode():
        for op, shapes in SHAPES.items():
            for shape in shapes:
                x = torch.randn(*shape)
                t_eager = timed(lambda: eager(torch, op)(x))
                nodes, prev = [], x
                for name, f in steps(torch, op):
                    p = prev
                    nodes.append((name, timed(lambda f=f, p=p: f(x, p))))
                    prev = f(x, p)
                chain = steps(torch, op)

                def run_nodes():
                    p = x
                    for _, f in chain:
                        p = f(x, p)
                t_nodes = timed(run_nodes)
                worst = max(nodes, key=lambda n: n[1])
                print(f"{op:10s} {'x'.join(map(str, shape)):18s} {t_eager:9.3f} "
                      f"{nodes[0][1]:9.3f} {worst[0]:>7s} {worst[1]:8.3f} {t_nodes:9.3f} "
                      f"{t_eager / nodes[0][1]:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
