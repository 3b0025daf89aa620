#!/usr/bin/python3
"""nb201_copies_floor.py: how far a NAS-Bench-201 latency column disagrees with itself, i.e. the
error that even a perfect predictor of the deployed network would make on it.

HW-NAS-Bench's TFLite columns (HELP's raspi4_ms, pixel3_ms) measured networks deployed under
perfpred's `;prune` rule (docs/networks.md): 'none' edges vanish and nodes read only through them
are removed. Many of the 15,625 cells then deploy to the same network. Each such cell is
predicted by the median of its identical copies' measurements (leave one out), and the error of
that "oracle" is reported: a deterministic function of the deployed network cannot, on average,
come closer to these rows than this. A coarser grouping (the counts of each operation that
remains) is reported too: it has far more copies per group and is what a predictor that only
knew operation counts could at best do on the same column. Last, a baseline for the graph-level
correction: the median of each operation-count group over a seeded --train-frac of the cells,
predicting the others (cells whose counts no training cell has are left out and counted).
And a strict lower bound over the whole column: each group of identical deployed networks
predicted by the one value that minimises its own MAPE (the median weighted by 1 / latency,
chosen knowing every answer, so no predictor can do better), lone cells exactly; no function of
the deployed network, however trained, has a lower MAPE over all the cells.

  /usr/bin/python3 lab/nb201_copies_floor.py ../shared/datasets/help/help_nasbench201_latency.csv raspi4_ms

Reads the CSV in place; trains nothing.
"""

import argparse
import collections
import csv
import random
import statistics
import sys


def parse_cell(text):
    """'|op~0|+|op~0|op~1|+|op~0|op~1|op~2|' -> {(node j, input i): op}, nodes 1..3."""
    nodes = text.strip().strip("|").split("|+|")
    if len(nodes) != 3:
        raise ValueError(f"{text!r}: expected 3 nodes")
    ops = {}
    for j, node in enumerate(nodes, start=1):
        edges = node.strip("|").split("|")
        if len(edges) != j:
            raise ValueError(f"{text!r}: node {j} has {len(edges)} edges")
        for e in edges:
            op, _, i = e.partition("~")
            if not i.isdigit() or int(i) >= j:
                raise ValueError(f"{text!r}: bad edge {e!r}")
            ops[(j, int(i))] = op
    return ops


def pruned(ops):
    """The cell as `;prune` deploys it (graph/build_nb201.c): per node 1..3, 'dead' if no kept
    edge reads it on the way to the output, 'zero' if live but every input edge is 'none', else
    its kept (input, op) edges. None for a cell whose output does not depend on its input."""
    dep = [True, False, False, False]
    for j in (1, 2, 3):
        dep[j] = any(ops[(j, i)] != "none" and dep[i] for i in range(j))
    if not dep[3]:
        return None
    live = [False, False, False, True]
    for j in (3, 2, 1):
        for i in range(j):
            if live[j] and ops[(j, i)] != "none":
                live[i] = True
    out = []
    for j in (1, 2, 3):
        if not live[j]:
            out.append("dead")
            continue
        kept = tuple(sorted((i, ops[(j, i)]) for i in range(j) if ops[(j, i)] != "none"))
        out.append(kept if kept else "zero")
    return tuple(out)


def op_counts(cell):
    """How many of each operation the pruned cell runs."""
    c = collections.Counter(op for node in cell if isinstance(node, tuple) for _, op in node)
    return tuple(sorted(c.items()))


def loo_errors(groups):
    """|median of the other copies - x| / x, percent, for every member of a group of 2 or more."""
    errs = []
    for vals in groups.values():
        if len(vals) < 2:
            continue
        for k, x in enumerate(vals):
            errs.append(100.0 * abs(statistics.median(vals[:k] + vals[k + 1:]) - x) / x)
    return sorted(errs)


def best_constant_error(vals):
    """min over c of sum |c - x| / x for one group: the sum is convex and piecewise linear in c
    with its minimum at a member, the median weighted by 1 / x."""
    xs = sorted(vals)
    w = [1.0 / x for x in xs]
    half, acc = sum(w) / 2.0, 0.0
    for x, wi in zip(xs, w):
        acc += wi
        if acc >= half:
            return sum(abs(x - y) / y for y in xs)
    return 0.0


def column_floor(groups):
    """The lowest MAPE (percent) over every cell that any function of the group key can reach:
    each group answered by its best constant, lone cells exactly."""
    n = sum(len(v) for v in groups.values())
    return 100.0 * sum(best_constant_error(v) for v in groups.values()) / n if n else float("nan")


def count_baseline(rows, train_frac, seed):
    """rows: [(op counts, latency)]. Medians per op-count group from a seeded share of the rows,
    judged on the rest: (MAPE %, rows judged, rows whose group no training row had)."""
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_train = int(train_frac * len(rows))
    groups = collections.defaultdict(list)
    for i in order[:n_train]:
        groups[rows[i][0]].append(rows[i][1])
    med = {k: statistics.median(v) for k, v in groups.items()}
    errs, missing = [], 0
    for i in order[n_train:]:
        k, y = rows[i]
        if k not in med:
            missing += 1
            continue
        errs.append(100.0 * abs(med[k] - y) / y)
    return (sum(errs) / len(errs) if errs else float("nan")), len(errs), missing


def summary(name, groups):
    errs = loo_errors(groups)
    if not errs:
        return f"{name}: no group has two members"
    n_multi = sum(1 for v in groups.values() if len(v) > 1)
    mape = sum(errs) / len(errs)
    within = 100.0 * sum(e <= 10.0 for e in errs) / len(errs)
    return (f"{name}: {len(groups)} groups, {n_multi} with copies ({len(errs)} cells): "
            f"leave-one-out MAPE {mape:.2f} %, median {errs[len(errs) // 2]:.2f} %, "
            f"p90 {errs[int(0.9 * len(errs))]:.2f} %, within +-10 % {within:.1f} %")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="HELP's help_nasbench201_latency.csv (arch_str and device columns)")
    ap.add_argument("column", nargs="?", default="raspi4_ms")
    ap.add_argument("--train-frac", type=float, default=0.16,
                    help="share of cells the op-count baseline learns from (default 0.16: about "
                         "the 2,451 training rows of the rpi4 correction)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if not 0.0 < a.train_frac < 1.0:
        ap.error("--train-frac: between 0 and 1")
    exact, counts = collections.defaultdict(list), collections.defaultdict(list)
    flat = []
    n = n_const = 0
    with open(a.csv, newline="", encoding="utf-8") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            try:
                cell = pruned(parse_cell(row["arch_str"]))
                y = float(row[a.column])
            except (KeyError, ValueError) as e:
                print(f"{a.csv}:{line}: {e}", file=sys.stderr)
                return 2
            if cell is None:
                n_const += 1
                continue
            if not y > 0:
                print(f"{a.csv}:{line}: {a.column} {y!r} is not a positive latency", file=sys.stderr)
                return 2
            n += 1
            oc = op_counts(cell)
            exact[cell].append(y)
            counts[oc].append(y)
            flat.append((oc, y))
    print(f"{a.csv} {a.column}: {n} cells ({n_const} constant under ;prune, left out)")
    print(summary("identical pruned cells", exact))
    print(summary("same operation counts", counts))
    print(f"lower bound over all {n} cells, each network's copies answered by their best single "
          f"value (known answers): MAPE {column_floor(exact):.2f} %")
    mape, n_judged, missing = count_baseline(flat, a.train_frac, a.seed)
    print(f"op-count medians from a seeded {100 * a.train_frac:.0f} % of the cells (seed {a.seed}), "
          f"on the others: MAPE {mape:.2f} % over {n_judged} cells ({missing} with unseen counts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
