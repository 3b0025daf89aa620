#!/usr/bin/python3
"""tests/gnn_reference.py: an independent PyTorch (float64, autograd) implementation of the graph_gnn
architecture, written from the equations in graph_gnn/graph_gnn.h. It draws weights, standardization
statistics and three small graphs from a fixed seed, and writes them with the expected outputs, loss
and gradients to tests/fixtures/gnn/reference.bin, which test_gnn.c replays through the C model.

Run once (the output is committed):  /usr/bin/python3 tests/gnn_reference.py

Messages are computed per edge and per node with explicit loops (no shared code or algebraic
shortcut with the C side, which splits W_e into a node part and an edge part).

reference.bin layout, little-endian:
  char[8]  "PPGNNREF"
  u32      version (1)
  u32      F, Fe, G, T, L, H, n_params, n_graphs
  f32      x_mean[F] x_std[F] e_mean[Fe] e_std[Fe] u_mean[G] u_std[G] y_mean[T] y_std[T]
  f32      params[n_params]          (flat layout of graph_gnn.h)
  per graph:
    u32    N, E
    f32    x[N*F]
    u32    row_ptr[N+1]              (edges grouped by consumer)
    u32    col_idx[E]                (producer of each edge)
    f32    edge_feat[E*Fe]
    f32    globals[G]
    f32    y[T]
    u8     mask[T]
    f64    expected prediction[T]    (target units: y_mean + y_std * o)
  f64      expected loss             (masked MSE of standardized targets over all graphs)
  f64      expected gradient[n_params]
"""
import os
import struct
import sys

import torch

F, FE, G, T, L, H = 5, 2, 3, 3, 2, 6
SEED = 20240601
MARGIN = 1e-4  # every relu input and every max gap stays this far from a tie, so float32 agrees


def layout():
    """Offsets of the flat parameter array, in graph_gnn.h's order."""
    off, blocks = 0, []

    def take(name, rows, cols):
        nonlocal off
        blocks.append((name, off, rows, cols))
        off += rows * cols

    for l in range(L):
        din = F if l == 0 else H
        dg = G if l == 0 else H
        take(f"We{l}", H, din + FE + 1)
        take(f"be{l}", 1, H)
        take(f"W{l}", H, din + 2 * H + dg)
        take(f"b{l}", 1, H)
        take(f"Wg{l}", H, dg + 2 * H)
        take(f"bg{l}", 1, H)
    for t in range(T):
        take(f"W1_{t}", H, 3 * H)
        take(f"b1_{t}", 1, H)
        take(f"w2_{t}", 1, H)
        take(f"b2_{t}", 1, 1)
    return blocks, off


def unpack(flat, blocks):
    p = {}
    for name, off, rows, cols in blocks:
        v = flat[off:off + rows * cols]
        p[name] = v.view(rows, cols) if rows > 1 else v
    return p


class Margins:
    def __init__(self):
        self.min_relu = float("inf")
        self.min_gap = float("inf")

    def relu(self, x):
        self.min_relu = min(self.min_relu, x.detach().abs().min().item())
        return torch.relu(x)

    def max0(self, rows):
        """max over dim 0 of a [n, h] tensor, recording the gap to the runner-up."""
        if rows.shape[0] > 1:
            top2 = rows.detach().topk(2, dim=0).values
            # a tie at an exact relu zero passes no gradient either way: it cannot disagree
            gap = (top2[0] - top2[1])[top2[0] != 0]
            if gap.numel():
                self.min_gap = min(self.min_gap, gap.min().item())
        return rows.max(dim=0).values


def forward(p, st, g, mg):
    """Standardized outputs o[T] of one graph."""
    x = (g["x"] - st["x_mean"]) / st["x_std"]
    ef = (g["ef"] - st["e_mean"]) / st["e_std"]
    gl = (g["u"] - st["u_mean"]) / st["u_std"]
    n = x.shape[0]
    # neighbour lists: (neighbour, edge, direction); direction 0 = from producer, 1 = from consumer
    nbrs = [[] for _ in range(n)]
    for (j, i, k) in g["edges"]:
        nbrs[i].append((j, k, 0.0))
        nbrs[j].append((i, k, 1.0))
    h = x
    for l in range(L):
        We, be = p[f"We{l}"], p[f"be{l}"]
        W, b = p[f"W{l}"], p[f"b{l}"]
        Wg, bg = p[f"Wg{l}"], p[f"bg{l}"]
        rows = []
        for i in range(n):
            if nbrs[i]:
                msgs = torch.stack([
                    We @ torch.cat([h[j], ef[k], torch.tensor([d], dtype=torch.float64)]) + be
                    for (j, k, d) in nbrs[i]])
                agg = torch.cat([msgs.mean(dim=0), mg.max0(msgs)])
            else:
                agg = torch.zeros(2 * H, dtype=torch.float64)
            rows.append(mg.relu(W @ torch.cat([h[i], agg, gl]) + b))
        h = torch.stack(rows)
        gl = mg.relu(Wg @ torch.cat([gl, h.mean(dim=0), mg.max0(h)]) + bg)
    r = torch.cat([h.mean(dim=0), mg.max0(h), gl])
    outs = []
    for t in range(T):
        a = mg.relu(p[f"W1_{t}"] @ r + p[f"b1_{t}"])
        outs.append(p[f"w2_{t}"] @ a + p[f"b2_{t}"][0])
    return torch.stack(outs)


def f32(t):
    """float32-representable values in float64, so both sides start from identical numbers."""
    return t.to(torch.float32).to(torch.float64)


def make_graph(gen, n, edges, mask):
    """edges: (producer, consumer) pairs; each gets random edge features."""
    x = f32(torch.randn(n, F, generator=gen, dtype=torch.float64) * 1.5 + 0.5)
    ef = f32(torch.rand(len(edges), FE, generator=gen, dtype=torch.float64) * 20.0)
    u = f32(torch.randn(G, generator=gen, dtype=torch.float64) * 2.0)
    y = f32(torch.randn(T, generator=gen, dtype=torch.float64) * 0.3 + 0.1)
    # CSR by consumer, edges of one consumer in the listed order
    order = sorted(range(len(edges)), key=lambda k: (edges[k][1], k))
    es = [edges[k] for k in order]
    ef = ef[order]
    row_ptr = [0] * (n + 1)
    for (_, c) in es:
        row_ptr[c + 1] += 1
    for i in range(n):
        row_ptr[i + 1] += row_ptr[i]
    col_idx = [j for (j, _) in es]
    return {"n": n, "x": x, "ef": ef, "u": u, "y": y, "mask": mask, "row_ptr": row_ptr,
            "col_idx": col_idx, "edges": [(j, c, k) for k, (j, c) in enumerate(es)]}


def build(seed):
    gen = torch.Generator().manual_seed(seed)
    blocks, n_params = layout()
    flat = torch.zeros(n_params, dtype=torch.float64)
    for name, off, rows, cols in blocks:
        if name.startswith("b"):
            flat[off:off + rows * cols] = (torch.rand(rows * cols, generator=gen,
                                                      dtype=torch.float64) - 0.5) * 0.4
        else:
            a = (3.0 / cols) ** 0.5
            flat[off:off + rows * cols] = (torch.rand(rows * cols, generator=gen,
                                                      dtype=torch.float64) * 2 - 1) * a
    flat = f32(flat)
    st = {
        "x_mean": f32(torch.randn(F, generator=gen, dtype=torch.float64) * 0.5),
        "x_std": f32(torch.rand(F, generator=gen, dtype=torch.float64) * 1.5 + 0.5),
        "e_mean": f32(torch.rand(FE, generator=gen, dtype=torch.float64) * 10.0),
        "e_std": f32(torch.rand(FE, generator=gen, dtype=torch.float64) * 4.0 + 2.0),
        "u_mean": f32(torch.randn(G, generator=gen, dtype=torch.float64)),
        "u_std": f32(torch.rand(G, generator=gen, dtype=torch.float64) * 1.5 + 0.5),
        "y_mean": f32(torch.randn(T, generator=gen, dtype=torch.float64) * 0.1),
        "y_std": f32(torch.rand(T, generator=gen, dtype=torch.float64) * 0.5 + 0.25),
    }
    graphs = [
        # a diamond with a tail; every node has both in- and out-neighbours except the ends
        make_graph(gen, 5, [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)], [1, 1, 1]),
        # node 3 is isolated: its aggregation is empty
        make_graph(gen, 4, [(0, 1), (1, 2), (0, 2)], [1, 0, 1]),
        # parallel edges (two tensors from 0 to 4), a skip connection, a fan-out
        make_graph(gen, 7, [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (0, 4), (0, 4), (4, 5),
                            (5, 6), (2, 6)], [0, 1, 1]),
    ]
    return blocks, flat, st, graphs


def main():
    out_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gnn",
                            "reference.bin")
    for attempt in range(100):
        blocks, flat, st, graphs = build(SEED + attempt)
        w = flat.clone().requires_grad_(True)
        p = unpack(w, blocks)
        mg = Margins()
        outs = [forward(p, st, g, mg) for g in graphs]
        count = sum(sum(g["mask"]) for g in graphs)
        loss = torch.zeros((), dtype=torch.float64)
        for g, o in zip(graphs, outs):
            ytil = (g["y"] - st["y_mean"]) / st["y_std"]
            for t in range(T):
                if g["mask"][t]:
                    loss = loss + (o[t] - ytil[t]) ** 2
        loss = loss / count
        loss.backward()
        if mg.min_relu > MARGIN and mg.min_gap > MARGIN:
            break
        print("seed %d: min |relu in| %.3g, min max-gap %.3g: too close to a kink" %
              (SEED + attempt, mg.min_relu, mg.min_gap))
    else:
        sys.exit("no seed gave relu/max margins above %g" % MARGIN)
    grad = w.grad.detach()
    live = (grad != 0).sum().item()
    print("seed %d: n_params %d, loss %.10g, %d/%d nonzero gradients, min |relu in| %.3g, "
          "min max-gap %.3g" % (SEED + attempt, flat.numel(), loss.item(), live, flat.numel(),
                                 mg.min_relu, mg.min_gap))

    b = bytearray()
    b += b"PPGNNREF"
    b += struct.pack("<9I", 1, F, FE, G, T, L, H, flat.numel(), len(graphs))
    for key in ("x_mean", "x_std", "e_mean", "e_std", "u_mean", "u_std", "y_mean", "y_std"):
        b += struct.pack("<%df" % st[key].numel(), *st[key].tolist())
    b += struct.pack("<%df" % flat.numel(), *flat.tolist())
    for g, o in zip(graphs, outs):
        n, e = g["n"], len(g["col_idx"])
        b += struct.pack("<2I", n, e)
        b += struct.pack("<%df" % (n * F), *g["x"].flatten().tolist())
        b += struct.pack("<%dI" % (n + 1), *g["row_ptr"])
        b += struct.pack("<%dI" % e, *g["col_idx"])
        b += struct.pack("<%df" % (e * FE), *g["ef"].flatten().tolist())
        b += struct.pack("<%df" % G, *g["u"].tolist())
        b += struct.pack("<%df" % T, *g["y"].tolist())
        b += struct.pack("<%dB" % T, *g["mask"])
        pred = st["y_mean"] + st["y_std"] * o.detach()
        b += struct.pack("<%dd" % T, *pred.tolist())
        print("graph: %d nodes, %d edges, prediction %s" % (n, e, pred.tolist()))
    b += struct.pack("<d", loss.item())
    b += struct.pack("<%dd" % flat.numel(), *grad.tolist())
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "wb") as f:
        f.write(bytes(b))
    print("wrote %s (%d bytes)" % (out_path, len(b)))


if __name__ == "__main__":
    main()
