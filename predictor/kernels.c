/* predictor/kernels.c: a graph's kernels as the runtime runs them: nodes grouped by the device's
 * fusion rules (runtime.fusion: a producer and its single-consumer followers) and composite ops
 * (runtime.composite_ops: GELU, SiLU, HardSwish as torch.onnx decomposes them), in the order of
 * their first nodes; nodes that run no kernel (folded constants, shapes, views) in none. */
#include <stdlib.h>
#include <string.h>

#include "predictor/predictor.h"

/* Consumers of each tensor in CSR form, built once per prediction, where the graph's links
 * (pp_graph_link: each tensor's consumer count and last consumer) do not hold: a graph changed
 * since it was linked. Only the single consumer of a tensor is asked for. */
typedef struct consumers {
    int *off, *idx;
} consumers;

/* the only node reading tensor t, -1 when none or several */
static int single_consumer(const pp_graph *g, const consumers *c, int t)
{
    if (!c->off) return g->tensors[t].n_consumers == 1 ? g->tensors[t].consumer : -1;
    return c->off[t + 1] - c->off[t] == 1 ? c->idx[c->off[t]] : -1;
}

static int consumers_build(const pp_graph *g, consumers *c)
{
    c->off = calloc((size_t)g->n_tensors + 1, sizeof *c->off);
    if (!c->off) return -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0) c->off[g->nodes[i].inputs[k] + 1]++;
    for (int t = 0; t < g->n_tensors; t++) c->off[t + 1] += c->off[t];
    c->idx = malloc(((size_t)c->off[g->n_tensors] + 1) * sizeof *c->idx);
    int *fill = calloc((size_t)g->n_tensors + 1, sizeof *fill);
    if (!c->idx || !fill) {
        free(fill);
        return -1;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int t = g->nodes[i].inputs[k];
            if (t >= 0) c->idx[c->off[t] + fill[t]++] = i;
        }
    free(fill);
    return 0;
}

static void consumers_free(consumers *c)
{
    free(c->off);
    free(c->idx);
}

static int runs_no_kernel(const pp_node *n)
{
    return n->feat.folded || n->feat.kind == PP_OPK_SHAPE || n->feat.kind == PP_OPK_RESHAPE;
}

/* 1 when every input of node nx other than tensor prev is a known constant or an input of node
 * first: the node only finishes what the chain computes from first's inputs. */
static int closed_step(const pp_graph *g, int first, int nx, int prev)
{
    const pp_node *n = &g->nodes[nx], *f = &g->nodes[first];
    for (int k = 0; k < n->n_inputs; k++) {
        int t = n->inputs[k];
        if (t < 0 || t == prev || (g->tensors[t].flags & PP_T_CONST)) continue;
        int own = 0;
        for (int q = 0; q < f->n_inputs && !own; q++) own = f->inputs[q] == t;
        if (!own) return 0;
    }
    return 1;
}

/* Matches rule at node i: each next node is the single consumer of the previous node's first
 * output and has the rule's op type (closed rules: see closed_step). Returns 1 and fills tmp. */
static int match_rule(const pp_graph *g, const consumers *c, const unsigned char *taken,
                      const pp_fusion_rule *rule, int closed, int i, int *tmp)
{
    /* the first letter first: most nodes a rule is tried on differ there */
    if (rule->ops[0][0] != g->nodes[i].op_type[0] || strcmp(rule->ops[0], g->nodes[i].op_type))
        return 0;
    if (rule->max_input_rank > 0) {
        int x = g->nodes[i].n_inputs > 0 ? g->nodes[i].inputs[0] : -1;
        if (x < 0 || g->tensors[x].rank < 0 || g->tensors[x].rank > rule->max_input_rank) return 0;
    }
    int cur = i;
    tmp[0] = i;
    for (int s = 1; s < rule->len; s++) {
        int t = g->nodes[cur].n_outputs > 0 ? g->nodes[cur].outputs[0] : -1;
        if (t < 0 || (g->tensors[t].flags & PP_T_GRAPH_OUTPUT)) return 0;
        int nx = single_consumer(g, c, t);
        if (nx < 0 || taken[nx] || g->nodes[nx].op_type[0] != rule->ops[s][0] ||
            strcmp(g->nodes[nx].op_type, rule->ops[s]) != 0)
            return 0;
        if (closed && !closed_step(g, i, nx, t)) return 0;
        tmp[s] = cur = nx;
    }
    return 1;
}

/* Length of the longest fusion or composite-op rule that matches a chain starting at node i;
 * *composite is 1 when that rule is a composite op. */
static int match_fusion(const pp_graph *g, const consumers *c, const pp_device *d,
                        const unsigned char *taken, int i, int *chain, int *composite)
{
    int best = 1;
    chain[0] = i;
    *composite = 0;
    for (int closed = 0; closed < 2; closed++) {
        const pp_fusion_rule *rules = closed ? d->composite : d->fusion;
        int n = closed ? d->n_composite : d->n_fusion;
        for (int r = 0; r < n; r++) {
            int tmp[PP_DEV_MAX_FUSION_LEN];
            if (rules[r].len > best && match_rule(g, c, taken, &rules[r], closed, i, tmp)) {
                best = rules[r].len;
                memcpy(chain, tmp, (size_t)best * sizeof *chain);
                *composite = closed;
            }
        }
    }
    return best;
}

/* The single ONNX operator that computes a composite op, for the decompositions torch.onnx
 * writes of ops PyTorch runs as one eager kernel. Its cost is not its first node's: PyTorch's
 * GELU costs 2.2-2.8x a Div of its size on the EPYC guest (docs/calibration.md). SiLU (Sigmoid,
 * Mul) has no such operator here and keeps its first node's time, which is most of it. */
static const struct {
    int len;
    const char *ops[PP_DEV_MAX_FUSION_LEN];
    const char *op;
} eager_ops[] = {
    {5, {"Div", "Erf", "Add", "Mul", "Mul"}, "Gelu"},
    {2, {"HardSigmoid", "Mul"}, "HardSwish"},
};

static const char *eager_op_of(const pp_graph *g, const pp_kernel_group *k)
{
    for (size_t r = 0; r < sizeof eager_ops / sizeof eager_ops[0]; r++) {
        int s = 0;
        if (eager_ops[r].len != k->n) continue;
        while (s < k->n && strcmp(g->nodes[k->nodes[s]].op_type, eager_ops[r].ops[s]) == 0) s++;
        if (s == k->n) return eager_ops[r].op;
    }
    return NULL;
}

perfpred_status pp_graph_kernels(const pp_graph *g, const pp_device *d, pp_kernel_group **out,
                                 int *n_out, pp_err *err)
{
    *out = NULL;
    *n_out = 0;
    consumers c = {0};
    unsigned char *taken = calloc((size_t)g->n_nodes + 1, 1);
    pp_kernel_group *k = malloc(((size_t)g->n_nodes + 1) * sizeof *k);
    if (!taken || !k || (!pp_graph_linked(g) && consumers_build(g, &c))) {
        free(taken);
        free(k);
        consumers_free(&c);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (taken[i] || runs_no_kernel(&g->nodes[i])) continue;
        pp_kernel_group *K = &k[n++];
        int composite;
        K->n = match_fusion(g, &c, d, taken, i, K->nodes, &composite);
        for (int s = 0; s < K->n; s++) taken[K->nodes[s]] = 1;
        K->eager_op = composite ? eager_op_of(g, K) : NULL;
    }
    free(taken);
    consumers_free(&c);
    *out = k;
    *n_out = n;
    return PERFPRED_OK;
}
