/* graph_gnn/gnn_sample.c: GNN samples: the structural check every sample passes before the model
 * reads it, and the conversion of a featurized model graph (graph/) into a sample: runtime nodes
 * with their feature vectors and per-layer predictions, producer->consumer edges in CSR. */
#include "graph_gnn/graph_gnn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 1 when no value of f[0..n) is a NaN or an infinity: a pass without branches (it vectorizes);
 * the loops after it look for the first bad value only when there is one. Built a second time for
 * AVX-512 (16 floats a step), picked where the CPU has it: a sample's ~10^4 features are checked
 * before every forward. */
#define ALL_FINITE_BODY                                                                           \
    uint32_t bad = 0;                                                                             \
    for (size_t i = 0; i < n; i++) {                                                              \
        uint32_t u;                                                                               \
        memcpy(&u, &f[i], sizeof u);                                                              \
        bad |= (u & 0x7f800000u) == 0x7f800000u;                                                  \
    }                                                                                             \
    return !bad;

static int all_finite_plain(const float *f, size_t n) { ALL_FINITE_BODY }

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
__attribute__((target("avx512f"))) static int all_finite_avx512(const float *f, size_t n)
{
    ALL_FINITE_BODY
}

static int all_finite(const float *f, size_t n)
{
    static _Atomic int wide = -1;
    int w = wide;
    if (w < 0) {
        __builtin_cpu_init();
        wide = w = __builtin_cpu_supports("avx512f") != 0;
    }
    return w ? all_finite_avx512(f, n) : all_finite_plain(f, n);
}
#else
static int all_finite(const float *f, size_t n) { return all_finite_plain(f, n); }
#endif

perfpred_status pp_gnn_graph_check(const pp_gnn_graph *s, const char *what, pp_err *err)
{
    if (!what) what = "gnn sample";
    if (!s) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: NULL", what);
    if (s->n_nodes < 1 || s->n_feat < 1 || s->n_edges < 0 || s->n_edge_feat < 0 ||
        s->n_globals < 0 || s->n_feat > PP_GNN_MAX_FEAT || s->n_edge_feat > PP_GNN_MAX_FEAT ||
        s->n_globals > PP_GNN_MAX_FEAT || s->n_edges > INT32_MAX / 2)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: bad sizes (nodes %d, F %d, edges %d, Fe %d, G %d)", what, s->n_nodes,
                          s->n_feat, s->n_edges, s->n_edge_feat, s->n_globals);
    if (!s->x || !s->row_ptr || (s->n_edges > 0 && !s->col_idx) ||
        ((size_t)s->n_edges * (size_t)s->n_edge_feat > 0 && !s->edge_feat) ||
        (s->n_globals > 0 && !s->globals))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: missing array", what);
    if (s->row_ptr[0] != 0 || s->row_ptr[s->n_nodes] != s->n_edges)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: row_ptr must start at 0 and end at the edge count %d (got %d..%d)",
                          what, s->n_edges, s->row_ptr[0], s->row_ptr[s->n_nodes]);
    for (int i = 0; i < s->n_nodes; i++)
        if (s->row_ptr[i + 1] < s->row_ptr[i])
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: row_ptr decreases at node %d",
                              what, i);
    for (int k = 0; k < s->n_edges; k++)
        if (s->col_idx[k] < 0 || s->col_idx[k] >= s->n_nodes)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "%s: edge %d names node %d of %d", what, k, s->col_idx[k], s->n_nodes);
    size_t nx = (size_t)s->n_nodes * (size_t)s->n_feat;
    for (size_t i = all_finite(s->x, nx) ? nx : 0; i < nx; i++)
        if (!isfinite(s->x[i]))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "%s: node %zu feature %zu is not finite", what, i / (size_t)s->n_feat,
                              i % (size_t)s->n_feat);
    size_t ne = (size_t)s->n_edges * (size_t)s->n_edge_feat;
    for (size_t i = all_finite(s->edge_feat, ne) ? ne : 0; i < ne; i++)
        if (!isfinite(s->edge_feat[i]))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: edge %zu feature is not finite",
                              what, i / (size_t)s->n_edge_feat);
    for (int c = 0; c < s->n_globals; c++)
        if (!isfinite(s->globals[c]))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: global %d is not finite", what, c);
    for (int t = 0; t < PP_GNN_MAX_TARGETS; t++)
        if (s->mask[t] && !isfinite(s->y[t]))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: target %d is not finite", what, t);
    return PERFPRED_OK;
}

void pp_gnn_graph_clear(pp_gnn_graph *s)
{
    if (!s) return;
    free(s->mem);
    memset(s, 0, sizeof *s);
}

/* A runtime node: one that launches work (not folded at load, not shape arithmetic). */
static int is_runtime(const pp_node *n) { return !n->feat.folded && n->feat.kind != PP_OPK_SHAPE; }

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

#define EF_MEMO 31 /* edge sizes remembered by pp_gnn_sample_from_graph */

/* where node c's (features, time) go in a table of rows computed: a hash of the time's bits and
 * the features' first words (kind, MACs, FLOPs, parameters, bytes read and written, intensity,
 * output elements: rows that differ, differ there), in four lanes of FNV-1a steps. It only picks
 * where a row is looked for; rows are compared by all their bytes. */
static size_t row_hash(const pp_node_feat *f, double ms)
{
    enum { NW = 9 };
    _Static_assert(sizeof *f >= NW * 8, "pp_node_feat holds the hashed words");
    uint64_t w[NW + 3] = {0}, a[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull,
                                       0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full};
    memcpy(w, f, NW * 8);
    memcpy(&w[NW], &ms, sizeof ms);
    for (int i = 0; i < NW + 3; i += 4)
        for (int j = 0; j < 4; j++) a[j] = (a[j] ^ w[i + j]) * 0x100000001b3ull;
    uint64_t h = a[0];
    for (int j = 1; j < 4; j++) h = (h ^ a[j]) * 0x100000001b3ull;
    h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdull; /* the high bits into the low ones */
    return (size_t)(h ^ (h >> 33));
}

perfpred_status pp_gnn_sample_from_graph(const pp_graph *g, const double *per_node_pred_ms,
                                         const double *globals, int n_globals, pp_gnn_graph *out,
                                         pp_err *err)
{
    if (!out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn sample: out is NULL");
    memset(out, 0, sizeof *out);
    if (!g || !per_node_pred_ms || n_globals < 0 || n_globals > PP_GNN_MAX_FEAT ||
        (n_globals > 0 && !globals))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "gnn sample: needs a graph, per-node predictions and %d globals",
                          n_globals);
    const char *path = g->path ? g->path : "<graph>";
    /* compact numbering of runtime nodes */
    /* rows computed so far, by (features, time): 1 + node, 0 free; at most half full */
    size_t tcap = 16;
    while (tcap < 2 * (size_t)(g->n_nodes > 0 ? g->n_nodes : 1)) tcap *= 2;
    int *id = malloc(((size_t)(g->n_nodes > 0 ? g->n_nodes : 1) + tcap) * sizeof(int));
    if (!id) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    int *seen = id + (g->n_nodes > 0 ? g->n_nodes : 1);
    memset(seen, 0, tcap * sizeof *seen);
    int N = 0;
    for (int i = 0; i < g->n_nodes; i++) id[i] = is_runtime(&g->nodes[i]) ? N++ : -1;
    if (N == 0) {
        free(id);
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: no runtime nodes (all folded)", path);
    }
    /* edges: for each runtime consumer, each distinct input tensor made by a runtime producer;
     * room for one per input of a runtime node, so that the tensors are walked once, below */
    size_t E = 0;
    for (int c = 0; c < g->n_nodes; c++)
        if (id[c] >= 0) E += (size_t)g->nodes[c].n_inputs;
    if (E > INT32_MAX / 2) {
        free(id);
        return pp_err_set(err, PERFPRED_ERR_UNSUPPORTED, "%s: %zu inputs of runtime nodes is too many", path, E);
    }
    const int F = PP_GNN_GRAPH_NODE_FEAT, Fe = PP_GNN_GRAPH_EDGE_FEAT;
    size_t sz_x = align16((size_t)N * F * sizeof(float));
    size_t sz_rp = align16((size_t)(N + 1) * sizeof(int));
    size_t sz_ci = align16((size_t)(E ? E : 1) * sizeof(int));
    size_t sz_ef = align16((size_t)(E ? E : 1) * Fe * sizeof(float));
    size_t sz_u = align16((size_t)(n_globals ? n_globals : 1) * sizeof(float));
    size_t sz_like = align16((size_t)N * sizeof(int));
    /* not zeroed: every element below is written (the one-hot block of a row with its row) */
    unsigned char *mem = malloc(sz_x + sz_rp + sz_ci + sz_ef + sz_u + sz_like);
    if (!mem) {
        free(id);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    float *x = (float *)mem;
    int *row_ptr = (int *)(mem + sz_x);
    int *col_idx = (int *)(mem + sz_x + sz_rp);
    float *ef = (float *)(mem + sz_x + sz_rp + sz_ci);
    float *u = (float *)(mem + sz_x + sz_rp + sz_ci + sz_ef);
    int *like = (int *)(mem + sz_x + sz_rp + sz_ci + sz_ef + sz_u);
    perfpred_status st = PERFPRED_OK;
    int k = 0;
    int64_t ef_bytes[EF_MEMO];
    float ef_val[EF_MEMO];
    for (int i = 0; i < EF_MEMO; i++) ef_bytes[i] = -1;
    for (int c = 0; c < g->n_nodes && !st; c++) {
        const pp_node *n = &g->nodes[c];
        int ic = id[c];
        if (ic < 0) continue;
        double ms = per_node_pred_ms[c];
        if (!isfinite(ms) || ms < 0.0) {
            st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                            "%s: node '%s': per-node prediction %g ms is not a finite value >= 0",
                            path, n->name, ms);
            break;
        }
        float *xi = x + (size_t)ic * F;
        int src = n->copy_of - 1; /* a copy with the same features and time: the same row */
        if (src >= 0 && src < c && id[src] >= 0 &&
            memcmp(&per_node_pred_ms[src], &ms, sizeof ms) == 0 &&
            memcmp(&g->nodes[src].feat, &n->feat, sizeof n->feat) == 0) {
            memcpy(xi, x + (size_t)id[src] * F, (size_t)F * sizeof *xi);
            like[ic] = id[src];
        } else {
            /* another node of the same feature bytes and time (a block repeated, two edges
             * alike): its row, and the hint that the forward may skip hashing this one */
            size_t at = row_hash(&n->feat, ms) & (tcap - 1);
            int same = -1;
            for (; seen[at]; at = (at + 1) & (tcap - 1)) {
                int j = seen[at] - 1;
                if (memcmp(&per_node_pred_ms[j], &ms, sizeof ms) == 0 &&
                    memcmp(&g->nodes[j].feat, &n->feat, sizeof n->feat) == 0) {
                    same = j;
                    break;
                }
            }
            if (same >= 0) {
                memcpy(xi, x + (size_t)id[same] * F, (size_t)F * sizeof *xi);
                like[ic] = id[same];
            } else {
                seen[at] = c + 1;
                like[ic] = -1;
                pp_feat_vector(&n->feat, xi);
                memset(xi + PP_FEATVEC_LEN, 0, (size_t)(F - PP_FEATVEC_LEN) * sizeof *xi);
                if ((int)n->feat.kind >= 0 && n->feat.kind < PP_OPK__COUNT)
                    xi[PP_FEATVEC_LEN + n->feat.kind] = 1.0f;
                xi[PP_FEATVEC_LEN + PP_OPK__COUNT] = (float)log1p(1000.0 * ms);
            }
        }
        row_ptr[ic] = k;
        for (int i = 0; i < n->n_inputs; i++) {
            int t = n->inputs[i], dup = 0;
            if (t < 0 || g->tensors[t].producer < 0 || id[g->tensors[t].producer] < 0) continue;
            for (int j = 0; j < i; j++) dup |= n->inputs[j] == t;
            if (dup) continue;
            int64_t bytes = pp_tensor_bytes(&g->tensors[t]);
            if (bytes < 0) {
                st = pp_err_set(err, PERFPRED_ERR_SHAPE,
                                "%s: node '%s': input tensor '%s' has an unknown size", path,
                                n->name, g->tensors[t].name);
                break;
            }
            col_idx[k] = id[g->tensors[t].producer];
            /* most edges carry one of a few sizes: the last log2 of each size class, reused */
            size_t at = (size_t)bytes % EF_MEMO;
            if (ef_bytes[at] != bytes) {
                ef_bytes[at] = bytes;
                ef_val[at] = (float)log2(1.0 + (double)bytes);
            }
            ef[k] = ef_val[at];
            k++;
        }
    }
    free(id);
    if (st) {
        free(mem);
        return st;
    }
    PP_ASSERT((size_t)k <= E);
    row_ptr[N] = k;
    for (int c = 0; c < n_globals; c++) {
        if (!isfinite(globals[c])) {
            free(mem);
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: global feature %d is not finite",
                              path, c);
        }
        u[c] = (float)globals[c];
    }
    out->n_nodes = N;
    out->n_feat = F;
    out->n_edges = k;
    out->n_edge_feat = Fe;
    out->n_globals = n_globals;
    out->x = x;
    out->row_ptr = row_ptr;
    out->col_idx = col_idx;
    out->edge_feat = ef;
    out->globals = u;
    out->x_like = like;
    out->mem = mem;
    return PERFPRED_OK;
}

/* ------------------------------------------- the whole-network correction's sample ---- */

void pp_gnn_sample_globals(int64_t batch, const pp_graph_totals *tot, double peak_tflops,
                           double bandwidth_gbs, double layer_sum_ms, double out[PP_FIT_NET_N_GLOBALS])
{
    out[0] = log(batch > 0 ? (double)batch : 1.0);
    out[1] = log1p((double)tot->macs);
    out[2] = log1p((double)tot->params);
    out[3] = log1p((double)tot->activation_bytes);
    out[4] = peak_tflops > 0 ? log(peak_tflops) : 0.0;
    out[5] = bandwidth_gbs > 0 ? log(bandwidth_gbs) : 0.0;
    out[6] = layer_sum_ms > 0 ? log(layer_sum_ms) : 0.0;
}

static int64_t graph_batch(const pp_graph *g)
{
    if (g->n_inputs > 0 && g->tensors[g->inputs[0]].rank > 0) return g->tensors[g->inputs[0]].dims[0];
    return 1;
}

perfpred_status pp_gnn_sample_from(const pp_graph *g, const double *per_node_ms,
                                   double layer_sum_ms, double peak_tflops, double bandwidth_gbs,
                                   pp_gnn_graph *out, pp_err *err)
{
    double glob[PP_FIT_NET_N_GLOBALS];
    pp_gnn_sample_globals(graph_batch(g), &g->totals, peak_tflops, bandwidth_gbs, layer_sum_ms,
                          glob);
    return pp_gnn_sample_from_graph(g, per_node_ms, glob, PP_FIT_NET_N_GLOBALS, out, err);
}
