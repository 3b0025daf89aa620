/* graph/graph.c: building the IR (tensors by name, nodes, attributes), dtype and op-kind names,
 * and linking: producers, dangling names, duplicate producers, cycles, topological order. */
#include "graph/graph.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes ---- */
int pp_dtype_is_float(int32_t dt)
{
    return dt == PP_DT_FLOAT || dt == PP_DT_FLOAT16 || dt == PP_DT_DOUBLE || dt == PP_DT_BFLOAT16;
}

const char *pp_dtype_name(int32_t dt)
{
    static const char *names[] = {"undefined", "float32", "uint8", "int8", "uint16", "int16",
                                  "int32", "int64", "string", "bool", "float16", "float64",
                                  "uint32", "uint64", "complex64", "complex128", "bfloat16"};
    return (dt >= 0 && dt <= 16) ? names[dt] : "undefined";
}

/* ---- op kinds ---- */
static const char *const kind_names[PP_OPK__COUNT] = {
    "unknown", "conv", "dwconv", "convt", "linear", "bmm", "pool", "globalpool",
    "elemwise", "norm", "softmax", "reduce", "datamove", "reshape", "shape"};

const char *pp_op_kind_name(pp_op_kind k)
{
    return (k >= 0 && k < PP_OPK__COUNT) ? kind_names[k] : "unknown";
}

int pp_op_kind_from_name(const char *name)
{
    for (int i = 0; i < PP_OPK__COUNT; i++)
        if (name && strcmp(name, kind_names[i]) == 0) return i;
    return -1;
}

pp_graph *pp_graph_new(const char *path)
{
    pp_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arena = pp_arena_new();
    if (!g->arena) {
        pp_graph_free(g);
        return NULL;
    }
    g->path = pp_arena_strdup(g->arena, path ? path : "<memory>");
    g->totals.peak_node = -1;
    g->linked_nodes = g->linked_tensors = -1;
    return g;
}

void pp_graph_free(pp_graph *g)
{
    if (!g) return;
    pp_strmap_free(&g->index);
    free(g->tensors);
    free(g->nodes);
    pp_arena_free(g->arena);
    free(g);
}

int pp_graph_find(const pp_graph *g, const char *name)
{
    return pp_strmap_get(&g->index, name);
}

/* Room for n_tensors tensors (the index at most half full) and n_nodes nodes. */
static int reserve(pp_graph *g, int n_tensors, int n_nodes)
{
    /* grown once to n_tensors: each step rehashes the whole table */
    if (n_tensors > 0 && pp_strmap_reserve(&g->index, (size_t)n_tensors)) return -1;
    /* a new block and a copy of the live entries only: realloc would copy the whole old block
     * (a builder reserves its network after its first tensor, in a block of 64) */
    if (n_tensors > g->cap_tensors) {
        pp_tensor *nt = malloc((size_t)n_tensors * sizeof *nt);
        if (!nt) return -1;
        if (g->n_tensors) memcpy(nt, g->tensors, (size_t)g->n_tensors * sizeof *nt);
        free(g->tensors);
        g->tensors = nt;
        g->cap_tensors = n_tensors;
    }
    if (n_nodes > g->cap_nodes) {
        pp_node *nn = malloc((size_t)n_nodes * sizeof *nn);
        if (!nn) return -1;
        if (g->n_nodes) memcpy(nn, g->nodes, (size_t)g->n_nodes * sizeof *nn);
        free(g->nodes);
        g->nodes = nn;
        g->cap_nodes = n_nodes;
    }
    return 0;
}

int pp_graph_reserve(pp_graph *g, int n_tensors, int n_nodes)
{
    if (n_tensors < 0 || n_nodes < 0 || n_tensors > INT32_MAX / 2) return -1;
    return reserve(g, n_tensors, n_nodes);
}

/* One probe of the index (hash: name's FNV-1a 64): the tensor called name, or -1 with room for
 * one more tensor and *slot where the index takes it; -2 out of memory. Growing the tensors may
 * grow the index, so the slot is probed again then. */
static int tensor_slot(pp_graph *g, const char *name, uint64_t hash, size_t *slot)
{
    if (pp_strmap_reserve(&g->index, g->index.n + 1)) return -2;
    int found = pp_strmap_probe_h(&g->index, name, hash, slot);
    if (found >= 0) return found;
    if (g->n_tensors == g->cap_tensors) {
        if (reserve(g, g->cap_tensors ? g->cap_tensors * 2 : 64, g->cap_nodes)) return -2;
        pp_strmap_probe_h(&g->index, name, hash, slot);
    }
    return -1;
}

int pp_graph_tensor(pp_graph *g, const char *name)
{
    size_t slot = 0;
    int found = tensor_slot(g, name, pp_fnv1a64(name, PP_FNV64_BASIS), &slot);
    if (found != -1) return found >= 0 ? found : -1;
    pp_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = pp_arena_strdup(g->arena, name);
    if (!t->name) return -1;
    t->rank = -1;
    t->producer = -1;
    t->consumer = -1;
    for (int d = 0; d < PP_MAX_RANK; d++) t->dims[d] = -1;
    /* the key is the arena's copy: it lives as long as the graph */
    pp_strmap_put_at(&g->index, slot, t->name, g->n_tensors);
    return g->n_tensors++;
}

/* A new node at the end with room for its inputs and outputs (not yet counted); -1 on OOM. */
static int node_append(pp_graph *g, const char *name, const char *op_type, const char *domain,
                       int n_inputs, int n_outputs)
{
    if (n_inputs < 0 || n_outputs < 0) return -1;
    if (g->n_nodes == g->cap_nodes &&
        reserve(g, g->cap_tensors, g->cap_nodes ? g->cap_nodes * 2 : 64))
        return -1;
    int idx = g->n_nodes;
    pp_node *n = &g->nodes[idx];
    memset(n, 0, sizeof *n);
    n->op_type = pp_arena_strdup(g->arena, op_type ? op_type : "");
    /* the default domain (nearly every node's) is one static "": nothing to copy */
    n->domain = domain && *domain ? pp_arena_strdup(g->arena, domain) : "";
    if (name && *name) {
        n->name = pp_arena_strdup(g->arena, name);
    } else {
        char buf[128];
        snprintf(buf, sizeof buf, "%s_%d", op_type ? op_type : "node", idx);
        n->name = pp_arena_strdup(g->arena, buf);
    }
    /* inputs and outputs in one block, each with a spare slot */
    n->inputs = pp_arena_array(g->arena, (size_t)n_inputs + (size_t)n_outputs + 2, sizeof(int));
    n->outputs = n->inputs ? n->inputs + n_inputs + 1 : NULL;
    if (!n->op_type || !n->domain || !n->name || !n->inputs) return -1;
    return idx;
}

int pp_graph_add_node(pp_graph *g, const char *name, const char *op_type, const char *domain,
                      const char *const *inputs, int n_inputs, const char *const *outputs,
                      int n_outputs)
{
    int idx = node_append(g, name, op_type, domain, n_inputs, n_outputs);
    if (idx < 0) return -1;
    pp_node *n = &g->nodes[idx];
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i] || !inputs[i][0]) {
            n->inputs[i] = -1;
            continue;
        }
        int t = pp_graph_tensor(g, inputs[i]);
        if (t < 0) return -1;
        n = &g->nodes[idx];
        n->inputs[i] = t;
    }
    for (int i = 0; i < n_outputs; i++) {
        int t = (outputs[i] && outputs[i][0]) ? pp_graph_tensor(g, outputs[i]) : -1;
        if (outputs[i] && outputs[i][0] && t < 0) return -1;
        n = &g->nodes[idx];
        n->outputs[i] = t;
    }
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    g->n_nodes++;
    return idx;
}

int pp_graph_add_node_idx(pp_graph *g, const char *name, const char *op_type, const char *domain,
                          const int *inputs, int n_inputs, const int *outputs, int n_outputs)
{
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] < -1 || inputs[i] >= g->n_tensors) return -1;
    for (int i = 0; i < n_outputs; i++)
        if (outputs[i] < -1 || outputs[i] >= g->n_tensors) return -1;
    int idx = node_append(g, name, op_type, domain, n_inputs, n_outputs);
    if (idx < 0) return -1;
    pp_node *n = &g->nodes[idx];
    if (n_inputs) memcpy(n->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
    if (n_outputs) memcpy(n->outputs, outputs, (size_t)n_outputs * sizeof *outputs);
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    g->n_nodes++;
    return idx;
}

int pp_graph_copy_tensor(pp_graph *g, int src, const char *name)
{
    return pp_graph_copy_tensor_h(g, src, name, strlen(name), pp_fnv1a64(name, PP_FNV64_BASIS));
}

/* pp_graph_tensor's probe and insert, with src's fields copied once over the new slot instead of
 * a blank tensor written first */
int pp_graph_copy_tensor_h(pp_graph *g, int src, const char *name, size_t len, uint64_t hash)
{
    if (src < 0 || src >= g->n_tensors) return -1;
    size_t slot = 0;
    if (tensor_slot(g, name, hash, &slot) != -1) return -1; /* taken, or out of memory */
    char *nm = pp_arena_strndup(g->arena, name, len);
    if (!nm) return -1;
    int t = g->n_tensors++;
    pp_tensor *T = &g->tensors[t];
    *T = g->tensors[src];
    T->name = nm;
    T->flags &= ~(uint32_t)(PP_T_GRAPH_INPUT | PP_T_GRAPH_OUTPUT);
    T->producer = -1;
    T->n_consumers = 0;
    T->consumer = -1;
    pp_strmap_put_at(&g->index, slot, nm, t);
    return t;
}

int pp_graph_copy_node(pp_graph *g, int src, const char *name, const int *inputs,
                       const int *outputs)
{
    if (src < 0 || src >= g->n_nodes || !name || !*name) return -1;
    const pp_node *S = &g->nodes[src];
    for (int i = 0; i < S->n_inputs; i++)
        if (inputs[i] < -1 || inputs[i] >= g->n_tensors) return -1;
    for (int i = 0; i < S->n_outputs; i++)
        if (outputs[i] < -1 || outputs[i] >= g->n_tensors) return -1;
    if (g->n_nodes == g->cap_nodes &&
        reserve(g, g->cap_tensors, g->cap_nodes ? g->cap_nodes * 2 : 64))
        return -1;
    S = &g->nodes[src]; /* reserve may have moved the nodes */
    pp_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->op_type = S->op_type;
    n->domain = S->domain;
    n->name = pp_arena_strdup(g->arena, name);
    n->inputs = pp_arena_array(g->arena, (size_t)S->n_inputs + (size_t)S->n_outputs + 2,
                               sizeof(int)); /* one block, as node_append makes it */
    n->outputs = n->inputs ? n->inputs + S->n_inputs + 1 : NULL;
    if (!n->name || !n->inputs) return -1;
    if (S->n_inputs) memcpy(n->inputs, inputs, (size_t)S->n_inputs * sizeof *inputs);
    if (S->n_outputs) memcpy(n->outputs, outputs, (size_t)S->n_outputs * sizeof *outputs);
    n->n_inputs = S->n_inputs;
    n->n_outputs = S->n_outputs;
    n->attrs = S->attrs;
    n->n_attrs = S->n_attrs;
    n->cap_attrs = 0; /* shared: pp_node_add_attr copies it before it adds */
    n->copy_of = src + 1;
    return g->n_nodes++;
}

static int same_tensor_shape(const pp_tensor *a, const pp_tensor *b)
{
    const uint32_t kept = PP_T_INITIALIZER | PP_T_WEIGHT | PP_T_CONST | PP_T_SHAPE_KNOWN;
    if (a->dtype != b->dtype || a->rank != b->rank || (a->flags & kept) != (b->flags & kept))
        return 0;
    if (!(a->flags & PP_T_SHAPE_KNOWN) || (a->flags & PP_T_CONST)) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d] || a->dim_param[d] != b->dim_param[d]) return 0;
    return 1;
}

int pp_node_copy_source(const pp_graph *g, int i)
{
    const pp_node *n = &g->nodes[i];
    int s = n->copy_of - 1;
    if (s < 0 || s >= i) return -1;
    const pp_node *S = &g->nodes[s];
    if (S->op_type != n->op_type || S->domain != n->domain || S->attrs != n->attrs ||
        S->n_attrs != n->n_attrs || S->n_inputs != n->n_inputs || S->n_outputs != n->n_outputs)
        return -1;
    for (int k = 0; k < n->n_inputs; k++) {
        int a = n->inputs[k], b = S->inputs[k];
        if ((a < 0) != (b < 0)) return -1;
        if (a >= 0 && !same_tensor_shape(&g->tensors[a], &g->tensors[b])) return -1;
        for (int j = 0; j < k; j++) /* an input read twice in one, twice in the other */
            if ((n->inputs[j] == a) != (S->inputs[j] == b)) return -1;
    }
    return s;
}

pp_attr *pp_node_add_attr(pp_graph *g, int node, const char *name, int type)
{
    pp_node *n = &g->nodes[node];
    if (n->n_attrs >= n->cap_attrs) { /* grown by doubling: a builder adds them one by one */
        int cap = n->n_attrs < 4 ? 8 : 2 * n->n_attrs;
        pp_attr *na = pp_arena_array(g->arena, (size_t)cap, sizeof *na);
        if (!na) return NULL;
        if (n->n_attrs) memcpy(na, n->attrs, (size_t)n->n_attrs * sizeof *na);
        n->attrs = na;
        n->cap_attrs = cap;
    }
    pp_attr *a = &n->attrs[n->n_attrs++];
    a->name = pp_arena_strdup(g->arena, name);
    a->type = type;
    a->t.n = -1;
    return a->name ? a : NULL;
}

const pp_attr *pp_node_attr(const pp_node *n, const char *name)
{
    /* the first byte first: most names a lookup passes differ there (shape inference and
     * features ask for each attribute of a node, a dozen calls a node) */
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].name[0] == name[0] && strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t pp_node_attr_i(const pp_node *n, const char *name, int64_t dflt)
{
    const pp_attr *a = pp_node_attr(n, name);
    return (a && a->type == PP_ATTR_INT) ? a->i : dflt;
}

double pp_node_attr_f(const pp_node *n, const char *name, double dflt)
{
    const pp_attr *a = pp_node_attr(n, name);
    return (a && a->type == PP_ATTR_FLOAT) ? a->f : dflt;
}

const char *pp_node_attr_s(const pp_node *n, const char *name, const char *dflt)
{
    const pp_attr *a = pp_node_attr(n, name);
    return (a && a->type == PP_ATTR_STRING && a->s) ? a->s : dflt;
}

void pp_tensor_set_shape(pp_tensor *t, int32_t dtype, int rank, const int64_t *dims)
{
    PP_ASSERT(rank >= 0 && rank <= PP_MAX_RANK);
    if (dtype != PP_DT_UNDEFINED) t->dtype = dtype;
    t->rank = rank;
    int known = 1;
    for (int d = 0; d < PP_MAX_RANK; d++) {
        t->dims[d] = d < rank ? dims[d] : -1;
        if (d < rank && dims[d] < 0) known = 0;
    }
    if (known) t->flags |= PP_T_SHAPE_KNOWN;
    else t->flags &= ~(uint32_t)PP_T_SHAPE_KNOWN;
}

/* ---- linking and topological sort (an order that runs kept; else Kahn, ready nodes FIFO) ---- */
/* Every edge producer -> consumer node of g, an input read twice once per read: with adj NULL,
 * counts each producer's consumers into off[p + 1] and each node's inputs into indeg[i]; else
 * writes consumer i at adj[off[p] + fill[p]++]. */
static void producer_edges(const pp_graph *g, int *off, int *indeg, int *adj, int *fill)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            int p = t >= 0 ? g->tensors[t].producer : -1;
            if (p < 0) continue;
            if (adj) {
                adj[off[p] + fill[p]++] = i;
            } else {
                off[p + 1]++;
                indeg[i]++;
            }
        }
    }
}

perfpred_status pp_graph_link(pp_graph *g, pp_err *err)
{
    int nt = g->n_tensors, nn = g->n_nodes;
    g->linked_nodes = g->linked_tensors = -1;
    for (int i = 0; i < nt; i++) {
        g->tensors[i].producer = -1;
        g->tensors[i].n_consumers = 0;
        g->tensors[i].consumer = -1;
    }
    for (int i = 0; i < nn; i++) {
        const pp_node *n = &g->nodes[i];
        for (int o = 0; o < n->n_outputs; o++) {
            int t = n->outputs[o];
            if (t < 0) continue;
            pp_tensor *T = &g->tensors[t];
            if (T->producer >= 0)
                return pp_err_set(err, PERFPRED_ERR_GRAPH,
                                  "%s: node '%s': tensor '%s' is already produced by node '%s'",
                                  g->path, n->name, T->name, g->nodes[T->producer].name);
            if (T->flags & PP_T_INITIALIZER)
                return pp_err_set(err, PERFPRED_ERR_GRAPH,
                                  "%s: node '%s': output '%s' overwrites an initializer", g->path,
                                  n->name, T->name);
            T->producer = i;
        }
    }
    int *indeg = NULL, *order = NULL, *queue = NULL, *off = NULL, *adj = NULL;
    perfpred_status st = PERFPRED_OK;
    int in_order = 1; /* every input made by an earlier node */
    for (int i = 0; i < nn; i++) {
        const pp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            pp_tensor *T = &g->tensors[t];
            T->n_consumers++;
            T->consumer = i;
            if (T->producer >= i) in_order = 0;
            if (T->producer < 0 && !(T->flags & (PP_T_GRAPH_INPUT | PP_T_INITIALIZER | PP_T_CONST))) {
                st = pp_err_set(err, PERFPRED_ERR_GRAPH,
                                "%s: node '%s' (%s): input '%s' is produced by no node and is "
                                "neither a graph input nor an initializer",
                                g->path, n->name, n->op_type, T->name);
                goto done;
            }
        }
    }
    /* nodes already in an order that runs them (an export's, or a builder's: the order the
     * model's forward runs them in) keep it: nothing more to count */
    if (in_order) goto done;
    indeg = calloc((size_t)nn + 1, sizeof *indeg);
    order = malloc(((size_t)nn + 1) * sizeof *order);
    queue = malloc(((size_t)nn + 1) * sizeof *queue);
    off = calloc((size_t)nn + 2, sizeof *off); /* CSR of node -> consumer nodes */
    if (!indeg || !order || !queue || !off) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory while sorting", g->path);
        goto done;
    }
    producer_edges(g, off, indeg, NULL, NULL);
    for (int i = 0; i < nn; i++) off[i + 1] += off[i];
    adj = malloc(((size_t)off[nn] + 1) * sizeof *adj);
    if (!adj) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory while sorting", g->path);
        goto done;
    }
    {
        int *fill = calloc((size_t)nn + 1, sizeof *fill);
        if (!fill) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory while sorting", g->path);
            goto done;
        }
        producer_edges(g, off, NULL, adj, fill);
        free(fill);
    }
    /* Otherwise Kahn, ready nodes taken FIFO, seeded in file order. */
    int qh = 0, qt = 0, no = 0;
    for (int i = 0; i < nn; i++)
        if (indeg[i] == 0) queue[qt++] = i;
    while (qh < qt) {
        int v = queue[qh++];
        order[no++] = v;
        for (int e = off[v]; e < off[v + 1]; e++)
            if (--indeg[adj[e]] == 0) queue[qt++] = adj[e];
    }
    if (no != nn) {
        int culprit = -1;
        for (int i = 0; i < nn && culprit < 0; i++)
            if (indeg[i] > 0) culprit = i;
        st = pp_err_set(err, PERFPRED_ERR_GRAPH, "%s: node '%s' (%s) is part of a cycle", g->path,
                        g->nodes[culprit].name, g->nodes[culprit].op_type);
        goto done;
    }
    /* permute nodes into topological order and renumber producers */
    int sorted_already = 1;
    for (int i = 0; i < nn && sorted_already; i++) sorted_already = order[i] == i;
    if (!sorted_already) {
        pp_node *sorted = malloc(((size_t)nn + 1) * sizeof *sorted);
        if (!sorted) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory while sorting", g->path);
            goto done;
        }
        for (int i = 0; i < nn; i++) sorted[i] = g->nodes[order[i]];
        free(g->nodes); /* the sorted copy replaces it: one copy of every node, not two */
        g->nodes = sorted;
        g->cap_nodes = nn + 1;
        int *pos = indeg; /* all 0 again after Kahn: now new index by old index */
        for (int i = 0; i < nn; i++) pos[order[i]] = i;
        for (int i = 0; i < nn; i++) {
            if (g->nodes[i].copy_of) g->nodes[i].copy_of = pos[g->nodes[i].copy_of - 1] + 1;
            g->nodes[i].copy_src = 0;
        }
        for (int i = 0; i < nn; i++) {
            const pp_node *n = &g->nodes[i];
            for (int o = 0; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0) g->tensors[n->outputs[o]].producer = i;
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] >= 0) g->tensors[n->inputs[k]].consumer = i;
        }
    }
done:
    if (!st) {
        g->linked_nodes = nn;
        g->linked_tensors = nt;
    }
    free(indeg);
    free(order);
    free(queue);
    free(off);
    free(adj);
    return st;
}
