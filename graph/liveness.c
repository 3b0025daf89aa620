/* graph/liveness.c: peak live activation memory over the topological order, the figure DIPPM's
 * MIG rule and the memory prediction start from. Runs after pp_graph_features (it needs each
 * node's kind and folded flag). */
#include "graph/graph.h"

#include <stdlib.h>

/* The memory model (an inference runtime that frees each buffer as soon as it is dead):
 * - Every activation tensor owns a buffer of pp_tensor_bytes, allocated when its producer runs.
 *   Weights, known constants and outputs of folded / shape-kind nodes are not activations.
 * - A view (kind reshape: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) allocates
 *   nothing: its first output aliases its first input's buffer, following chains of views; the
 *   buffer then lives until the last consumer of any tensor aliasing it.
 * - A buffer is freed after the last node that reads it (or right after its producer if no node
 *   does). Non-weight graph inputs are live from the start, graph outputs until the end.
 * - While node i runs, its inputs and outputs are all live: live(i) = sum of buffers with
 *   start <= i <= end. The peak is max_i live(i), and peak_node the first i reaching it.
 *   With no nodes, the peak is the graph inputs' bytes. */
perfpred_status pp_graph_liveness(pp_graph *g, pp_err *err)
{
    if (!g) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "pp_graph_liveness: NULL graph");
    int nt = g->n_tensors, nn = g->n_nodes;
    for (int i = 0; i < nn; i++)
        if (g->nodes[i].feat.kind == PP_OPK_UNKNOWN)
            return pp_err_set(err, PERFPRED_ERR_INTERNAL,
                              "%s: node '%s': liveness needs features "
                              "(run pp_graph_features first)",
                              g->path, g->nodes[i].name);

    int *root = malloc(((size_t)nt + 1) * sizeof *root);
    int *start = malloc(((size_t)nt + 1) * sizeof *start);
    int *end = malloc(((size_t)nt + 1) * sizeof *end);
    int64_t *delta = calloc((size_t)nn + 2, sizeof *delta);
    perfpred_status st = PERFPRED_OK;
    if (!root || !start || !end || !delta) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory in liveness", g->path);
        goto done;
    }

    /* which tensors own a buffer, and when it is allocated */
    for (int t = 0; t < nt; t++) {
        const pp_tensor *T = &g->tensors[t];
        root[t] = -1;
        if (T->flags & (PP_T_WEIGHT | PP_T_CONST)) continue;
        if (T->producer >= 0) {
            const pp_node_feat *pf = &g->nodes[T->producer].feat;
            if (pf->folded || pf->kind == PP_OPK_SHAPE) continue;
            root[t] = t;
            start[t] = end[t] = T->producer;
        } else if (T->flags & PP_T_GRAPH_INPUT) {
            root[t] = t;
            start[t] = end[t] = 0;
        }
    }
    /* views alias their data input (topological order: the input's root is already final) */
    for (int i = 0; i < nn; i++) {
        const pp_node *n = &g->nodes[i];
        if (n->feat.kind != PP_OPK_RESHAPE || n->feat.folded) continue;
        if (n->n_outputs < 1 || n->outputs[0] < 0 || n->n_inputs < 1 || n->inputs[0] < 0) continue;
        root[n->outputs[0]] = root[n->inputs[0]];
    }
    /* last reader of each buffer: each tensor's last consumer where the graph's links hold */
    int last = nn > 0 ? nn - 1 : 0;
    if (pp_graph_linked(g)) {
        for (int t = 0; t < nt; t++) {
            int r = root[t], c = g->tensors[t].consumer;
            if (r >= 0 && end[r] < c) end[r] = c;
        }
    } else {
        for (int i = 0; i < nn; i++) {
            const pp_node *n = &g->nodes[i];
            for (int k = 0; k < n->n_inputs; k++) {
                int t = n->inputs[k];
                if (t < 0 || root[t] < 0) continue;
                if (end[root[t]] < i) end[root[t]] = i;
            }
        }
    }
    for (int t = 0; t < nt; t++)
        if ((g->tensors[t].flags & PP_T_GRAPH_OUTPUT) && root[t] >= 0) end[root[t]] = last;

    for (int t = 0; t < nt; t++) {
        if (root[t] != t) continue;
        int64_t b = pp_tensor_bytes(&g->tensors[t]);
        if (b < 0) {
            const pp_tensor *T = &g->tensors[t];
            const char *where = T->producer >= 0 ? g->nodes[T->producer].name : "(graph input)";
            st = pp_err_set(err, PERFPRED_ERR_SHAPE,
                            "%s: node '%s': tensor '%s' has an unknown shape or dtype", g->path,
                            where, T->name);
            goto done;
        }
        delta[start[t]] += b;
        delta[end[t] + 1] -= b;
    }

    int64_t live = 0, peak = 0;
    int peak_node = -1;
    if (nn == 0) {
        peak = delta[0];
    } else {
        for (int i = 0; i < nn; i++) {
            live += delta[i];
            if (live > peak) {
                peak = live;
                peak_node = i;
            }
        }
    }
    g->totals.peak_activation_bytes = peak;
    g->totals.peak_node = peak_node;
done:
    free(root);
    free(start);
    free(end);
    free(delta);
    return st;
}
