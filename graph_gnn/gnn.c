/* graph_gnn/gnn.c: the model (flat parameter layout, initialization), its forward and backward pass
 * over one graph, and training (standardization, shuffled minibatches, Adam in one loop, early
 * stopping on a validation split). The equations are in graph_gnn.h and above each function. */
#include "graph_gnn/graph_gnn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8

pp_gnn_params pp_gnn_default_params(void)
{
    pp_gnn_params p;
    memset(&p, 0, sizeof p);
    p.layers = 3;
    p.hidden = 32;
    p.lr = 1e-3;
    p.weight_decay = 0.0;
    p.epochs = 300;
    p.batch = 16;
    p.patience = 30;
    p.seed = 1;
    p.nthreads = 1;
    return p;
}

perfpred_status pp_gnn_check_params(const pp_gnn_params *p, pp_err *err)
{
    if (!p) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: params is NULL");
    if (p->layers < 1 || p->layers > PP_GNN_MAX_LAYERS)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: layers = %d, want 1..%d", p->layers,
                          PP_GNN_MAX_LAYERS);
    if (p->hidden < 1 || p->hidden > PP_GNN_MAX_HIDDEN)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: hidden = %d, want 1..%d", p->hidden,
                          PP_GNN_MAX_HIDDEN);
    if (!(p->lr > 0.0) || !isfinite(p->lr))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: lr = %g, want > 0", p->lr);
    if (!(p->weight_decay >= 0.0) || !isfinite(p->weight_decay))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: weight_decay = %g, want >= 0",
                          p->weight_decay);
    if (p->epochs < 1)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: epochs = %d, want >= 1", p->epochs);
    if (p->batch < 1)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: batch = %d, want >= 1", p->batch);
    if (p->patience < 1)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: patience = %d, want >= 1",
                          p->patience);
    if (!(p->huber_delta >= 0.0) || !isfinite(p->huber_delta))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: huber_delta = %g, want >= 0",
                          p->huber_delta);
    if (p->nthreads < 0 || p->nthreads > 1024)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: nthreads = %d, want 0..1024",
                          p->nthreads);
    return PERFPRED_OK;
}

/* Offsets of every block of the flat parameter array, in the order documented in graph_gnn.h. */
static size_t gnn_layout(pp_gnn *m)
{
    int L = m->params.layers, H = m->params.hidden;
    size_t off = 0;
    for (int l = 0; l < L; l++) {
        pp_gnn_layer_off *lo = &m->layer[l];
        lo->din = l == 0 ? m->n_feat : H;
        lo->dg = l == 0 ? m->n_globals : H;
        lo->we = off;
        off += (size_t)H * (size_t)(lo->din + m->n_edge_feat + 1);
        lo->be = off;
        off += (size_t)H;
        lo->w = off;
        off += (size_t)H * (size_t)(lo->din + 2 * H + lo->dg);
        lo->b = off;
        off += (size_t)H;
        lo->wg = off;
        off += (size_t)H * (size_t)(lo->dg + 2 * H);
        lo->bg = off;
        off += (size_t)H;
    }
    for (int t = 0; t < m->n_targets; t++) {
        pp_gnn_head_off *ho = &m->head[t];
        ho->w1 = off;
        off += (size_t)H * (size_t)(3 * H);
        ho->b1 = off;
        off += (size_t)H;
        ho->w2 = off;
        off += (size_t)H;
        ho->b2 = off;
        off += 1;
    }
    return off;
}

size_t pp_gnn_param_count(int n_feat, int n_edge_feat, int n_globals, int n_targets, int layers,
                          int hidden)
{
    pp_gnn m;
    memset(&m, 0, sizeof m);
    m.n_feat = n_feat;
    m.n_edge_feat = n_edge_feat;
    m.n_globals = n_globals;
    m.n_targets = n_targets;
    m.params.layers = layers;
    m.params.hidden = hidden;
    return gnn_layout(&m);
}

/* U(-a, a) with a = sqrt(gain / fan_in): He-uniform (gain 6) before a relu or a max,
 * gain 3 for the linear output of a head; biases 0. */
static void fill_uniform(float *w, int rows, int cols, double gain, pp_gnn_rng *r)
{
    double a = cols > 0 ? sqrt(gain / cols) : 0.0;
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
        w[i] = (float)((2.0 * pp_gnn_rng_uniform(r) - 1.0) * a);
}

void pp_gnn_init_weights(pp_gnn *m, uint64_t seed)
{
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, seed);
    int H = m->params.hidden;
    memset(m->w, 0, m->n_params * sizeof(float));
    for (int l = 0; l < m->params.layers; l++) {
        const pp_gnn_layer_off *lo = &m->layer[l];
        fill_uniform(m->w + lo->we, H, lo->din + m->n_edge_feat + 1, 6.0, &r);
        fill_uniform(m->w + lo->w, H, lo->din + 2 * H + lo->dg, 6.0, &r);
        fill_uniform(m->w + lo->wg, H, lo->dg + 2 * H, 6.0, &r);
    }
    for (int t = 0; t < m->n_targets; t++) {
        fill_uniform(m->w + m->head[t].w1, H, 3 * H, 6.0, &r);
        fill_uniform(m->w + m->head[t].w2, 1, H, 3.0, &r);
    }
    memset(m->grad, 0, m->n_params * sizeof(float));
    memset(m->adam_m, 0, m->n_params * sizeof(float));
    memset(m->adam_v, 0, m->n_params * sizeof(float));
    m->adam_t = 0;
}

static void free_one(pp_gnn *m);

void pp_gnn_free(pp_gnn *m)
{
    while (m) {
        pp_gnn *next = m->next;
        m->next = NULL;
        pp_gnn_pool_free(m->pool);
        free_one(m);
        m = next;
    }
}

int pp_gnn_members(const pp_gnn *m)
{
    int n = 0;
    for (; m; m = m->next) n++;
    return n;
}

static void free_one(pp_gnn *m)
{
    free(m->w);
    free(m->grad);
    free(m->adam_m);
    free(m->adam_v);
    free(m->x_mean);
    free(m->x_std);
    free(m->e_mean);
    free(m->e_std);
    free(m->u_mean);
    free(m->u_std);
    free(m);
}

static float *alloc_floats(size_t n, float fill)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (p)
        for (size_t i = 0; i < n; i++) p[i] = fill;
    return p;
}

perfpred_status pp_gnn_new(int n_feat, int n_edge_feat, int n_globals, int n_targets,
                           const pp_gnn_params *params, pp_gnn **out, pp_err *err)
{
    *out = NULL;
    pp_gnn_params p = params ? *params : pp_gnn_default_params();
    perfpred_status st = pp_gnn_check_params(&p, err);
    if (st) return st;
    if (n_feat < 1 || n_feat > PP_GNN_MAX_FEAT || n_edge_feat < 0 ||
        n_edge_feat > PP_GNN_MAX_FEAT || n_globals < 0 || n_globals > PP_GNN_MAX_FEAT)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "gnn: feature widths F=%d Fe=%d G=%d out of range "
                          "(F 1..%d, Fe and G 0..%d)",
                          n_feat, n_edge_feat, n_globals, PP_GNN_MAX_FEAT, PP_GNN_MAX_FEAT);
    if (n_targets < 1 || n_targets > PP_GNN_MAX_TARGETS)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: n_targets = %d, want 1..%d",
                          n_targets, PP_GNN_MAX_TARGETS);
    pp_gnn *m = calloc(1, sizeof *m);
    if (!m) return pp_err_set(err, PERFPRED_ERR_NOMEM, "gnn: out of memory");
    m->n_feat = n_feat;
    m->n_edge_feat = n_edge_feat;
    m->n_globals = n_globals;
    m->n_targets = n_targets;
    m->params = p;
    m->n_params = gnn_layout(m);
    m->w = alloc_floats(m->n_params, 0.0f);
    m->grad = alloc_floats(m->n_params, 0.0f);
    m->adam_m = alloc_floats(m->n_params, 0.0f);
    m->adam_v = alloc_floats(m->n_params, 0.0f);
    m->x_mean = alloc_floats((size_t)n_feat, 0.0f);
    m->x_std = alloc_floats((size_t)n_feat, 1.0f);
    m->e_mean = alloc_floats((size_t)n_edge_feat, 0.0f);
    m->e_std = alloc_floats((size_t)n_edge_feat, 1.0f);
    m->u_mean = alloc_floats((size_t)n_globals, 0.0f);
    m->u_std = alloc_floats((size_t)n_globals, 1.0f);
    if (!m->w || !m->grad || !m->adam_m || !m->adam_v || !m->x_mean || !m->x_std || !m->e_mean ||
        !m->e_std || !m->u_mean || !m->u_std) {
        size_t n_params = m->n_params; /* read before the free */
        pp_gnn_free(m);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "gnn: out of memory for %zu parameters",
                          n_params);
    }
    for (int t = 0; t < PP_GNN_MAX_TARGETS; t++) {
        m->y_mean[t] = 0.0f;
        m->y_std[t] = 1.0f;
    }
    pp_gnn_init_weights(m, p.seed);
    *out = m;
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ workspace ---- */

/* Scratch for one graph of up to cap_n nodes and cap_e edges: the activations every backward
 * needs (C^l = [h^l | m^l | g^l] per layer, argmaxes, pooled vectors, head activations). */
typedef struct gnn_ws {
    pp_arena *arena;
    int cap_n, cap_e;
    int n, S;                            /* current graph: nodes, message slots (2E) */
    int *slot_ptr, *slot_nb, *slot_edge, *cursor;
    float *Z;                            /* [S][Fe+1]: standardized edge features, direction */
    float *C[PP_GNN_MAX_LAYERS], *dC[PP_GNN_MAX_LAYERS];
    int *am[PP_GNN_MAX_LAYERS];          /* [n][H] aggregate argmax slots */
    float *cg[PP_GNN_MAX_LAYERS], *dcg[PP_GNN_MAX_LAYERS]; /* [g^l ; mean h^{l+1} ; max h^{l+1}] */
    int *pam[PP_GNN_MAX_LAYERS];         /* [H] pool argmax nodes */
    float *hL, *dhL;                     /* [n][H] */
    float *gL, *dgL;                     /* [H] */
    float *r, *dr;                       /* [3H] */
    float *a[PP_GNN_MAX_TARGETS], *da[PP_GNN_MAX_TARGETS];
    float o[PP_GNN_MAX_TARGETS], d_o[PP_GNN_MAX_TARGETS];
    float *P, *dP, *Q, *dQ;              /* [n][H], [S][H] */
    const float *wt;                     /* forward-only predictions: transposed weights, else NULL */
    size_t n_wt;                         /* the model's parameter count (wt's length) */
    int wt_finite;                       /* every float of wt is finite */
    float *bias_g;                       /* [H] forward-only: b + g^l W[:, g block]^T */
    float *pre;                          /* [n][H] forward-only: bias_g + h^l W[:, h block]^T */
    /* forward-only: nodes whose rows are the same bits at level l (see node_classes) */
    int *cls;                            /* [L+1][n]: the first node of i's class at level l */
    int *reps;                           /* [L+1][n]: those first nodes, in node order */
    int n_reps[PP_GNN_MAX_LAYERS + 1];
    int *nb_rep;                         /* [L][S]: slot_nb through cls of each layer */
    /* [htab_cap] hash slots, (stamp << 32) | node or slot: a slot of another stamp is free, so
     * each of node_classes' tables starts empty without clearing the array */
    uint64_t *htab;
    uint32_t htab_stamp;                 /* the table in use; 0 is never one */
    int *slot_key;                       /* [S]: the first slot alike (direction, edge bits) */
    int *qreps, n_qreps;                 /* those first slots */
    unsigned char *slot_dir_of;          /* [S]: 0 in-edge, 1 out-edge */
    int *edge_cls;                       /* [E]: edge k's class of equal feature bits, 0, 1, ... */
    int *kind_slot;                      /* [2 x edge classes]: the first slot of (class, dir) */
    int *prev_like;                      /* [n]: the last earlier node of i's x_like source, -1 */
    int *last_like;                      /* [n]: scratch of node_classes */
    int cls_layers;                      /* layers the classes were computed for, -1: none */
    size_t htab_cap;
    /* forward-only: the statistics C^0's x block was standardized with in the rows of the
     * level-0 classes, and C^0's row length (members of an ensemble trained on one data set
     * share them: the others copy those rows) */
    const float *std_mean, *std_std;
    int std_ld;
} gnn_ws;

static void ws_free(gnn_ws *ws)
{
    if (ws) pp_arena_free(ws->arena);
}

static int kc_of(const pp_gnn *m, int l)
{
    return m->layer[l].din + 2 * m->params.hidden + m->layer[l].dg;
}

static size_t at_least_1(size_t n) { return n > 0 ? n : 1; }
#define WS_F(n) ((float *)pp_arena_array(ws->arena, at_least_1(n), sizeof(float)))
#define WS_I(n) ((int *)pp_arena_array(ws->arena, at_least_1(n), sizeof(int)))

/* back != 0: also the gradient buffers of a backward pass (a forward-only workspace lacks them). */
static perfpred_status ws_init(gnn_ws *ws, const pp_gnn *m, int cap_n, int cap_e, int back,
                               pp_err *err)
{
    memset(ws, 0, sizeof *ws);
    ws->arena = pp_arena_new();
    if (!ws->arena) return pp_err_set(err, PERFPRED_ERR_NOMEM, "gnn: out of memory");
    size_t N = (size_t)cap_n, S = 2 * (size_t)cap_e, H = (size_t)m->params.hidden;
    ws->cap_n = cap_n;
    ws->cap_e = cap_e;
    ws->n_wt = m->n_params;
    ws->slot_ptr = WS_I(N + 1);
    ws->cursor = WS_I(N + 1);
    ws->slot_nb = WS_I(S);
    ws->slot_edge = WS_I(S);
    ws->Z = WS_F(S * (size_t)(m->n_edge_feat + 1));
    int ok = ws->slot_ptr && ws->cursor && ws->slot_nb && ws->slot_edge && ws->Z;
    for (int l = 0; l < m->params.layers && ok; l++) {
        size_t kc = (size_t)kc_of(m, l), ncg = (size_t)m->layer[l].dg + 2 * H;
        ws->C[l] = WS_F(N * kc);
        ws->dC[l] = back ? WS_F(N * kc) : NULL;
        ws->am[l] = WS_I(N * H);
        ws->cg[l] = WS_F(ncg);
        ws->dcg[l] = back ? WS_F(ncg) : NULL;
        ws->pam[l] = WS_I(H);
        ok = ws->C[l] && (!back || ws->dC[l]) && ws->am[l] && ws->cg[l] && (!back || ws->dcg[l]) &&
             ws->pam[l];
    }
    ws->hL = WS_F(N * H);
    ws->dhL = back ? WS_F(N * H) : NULL;
    ws->gL = WS_F(H);
    ws->dgL = back ? WS_F(H) : NULL;
    ws->bias_g = WS_F(H);
    ws->r = WS_F(3 * H);
    ws->dr = back ? WS_F(3 * H) : NULL;
    ws->P = WS_F(N * H);
    ws->dP = back ? WS_F(N * H) : NULL;
    ws->Q = WS_F(S * H);
    ws->dQ = back ? WS_F(S * H) : NULL;
    ok = ok && ws->hL && ws->gL && ws->bias_g && ws->r && ws->P && ws->Q &&
         (!back || (ws->dhL && ws->dgL && ws->dr && ws->dP && ws->dQ));
    ws->cls_layers = -1;
    if (!back) {
        size_t levels = (size_t)m->params.layers + 1;
        ws->htab_cap = 16;
        while (ws->htab_cap < 2 * (N > S ? N : S)) ws->htab_cap *= 2;
        ws->slot_key = WS_I(S);
        ws->qreps = WS_I(S);
        ws->slot_dir_of = pp_arena_array(ws->arena, at_least_1(S), 1);
        ws->edge_cls = WS_I((size_t)cap_e);
        ws->kind_slot = WS_I(S);
        ws->prev_like = WS_I(N);
        ws->last_like = WS_I(N);
        ok = ok && ws->slot_key && ws->qreps && ws->slot_dir_of && ws->edge_cls &&
             ws->kind_slot && ws->prev_like && ws->last_like;
        ws->cls = WS_I(levels * N);
        ws->reps = WS_I(levels * N);
        ws->nb_rep = WS_I((size_t)m->params.layers * S);
        ws->htab = pp_arena_array(ws->arena, ws->htab_cap, sizeof *ws->htab);
        ws->pre = WS_F(N * H);
        ok = ok && ws->cls && ws->reps && ws->nb_rep && ws->htab && ws->pre;
    }
    for (int t = 0; t < m->n_targets && ok; t++) {
        ws->a[t] = WS_F(H);
        ws->da[t] = back ? WS_F(H) : NULL;
        ok = ws->a[t] && (!back || ws->da[t]);
    }
    if (!ok) {
        ws_free(ws);
        ws->arena = NULL;
        return pp_err_set(err, PERFPRED_ERR_NOMEM,
                          "gnn: out of memory for a graph of %d nodes and %d edges", cap_n, cap_e);
    }
    return PERFPRED_OK;
}

/* Message slots of every node: its in-edges (neighbour = producer, d = 0) in CSR order, then its
 * out-edges (neighbour = consumer, d = 1) in consumer order. Z comes later (ws_fill_z, or only
 * the rows a forward over classes reads: ws_prepare_kinds). */
static void ws_prepare(gnn_ws *ws, const pp_gnn_graph *s)
{
    int N = s->n_nodes, E = s->n_edges;
    PP_ASSERT(N <= ws->cap_n && E <= ws->cap_e);
    ws->n = N;
    ws->S = 2 * E;
    int *outdeg = ws->cursor;
    memset(outdeg, 0, (size_t)(N + 1) * sizeof(int));
    for (int k = 0; k < E; k++) outdeg[s->col_idx[k]]++;
    ws->slot_ptr[0] = 0;
    for (int i = 0; i < N; i++) {
        int indeg = s->row_ptr[i + 1] - s->row_ptr[i];
        ws->slot_ptr[i + 1] = ws->slot_ptr[i] + indeg + outdeg[i];
    }
    for (int i = 0; i < N; i++) {
        int at = ws->slot_ptr[i];
        for (int k = s->row_ptr[i]; k < s->row_ptr[i + 1]; k++, at++) {
            ws->slot_nb[at] = s->col_idx[k];
            ws->slot_edge[at] = k;
        }
        ws->cursor[i] = at; /* next free out-edge slot of node i */
    }
    for (int c = 0; c < N; c++)
        for (int k = s->row_ptr[c]; k < s->row_ptr[c + 1]; k++) {
            int j = s->col_idx[k], at = ws->cursor[j]++;
            ws->slot_nb[at] = c;
            ws->slot_edge[at] = k;
        }
}

/* Z_s = [std(e_k) ; d] for every slot */
static void ws_fill_z(gnn_ws *ws, const pp_gnn *m, const pp_gnn_graph *s)
{
    int N = ws->n, Fe = m->n_edge_feat, ldz = Fe + 1;
    for (int sl = 0; sl < ws->S; sl++) {
        float *z = ws->Z + (size_t)sl * ldz;
        if (Fe > 0) {
            const float *e = s->edge_feat + (size_t)ws->slot_edge[sl] * Fe;
            for (int c = 0; c < Fe; c++) z[c] = (e[c] - m->e_mean[c]) / m->e_std[c];
        }
        z[Fe] = 0.0f;
    }
    for (int i = 0; i < N; i++) {
        int first_out = ws->slot_ptr[i] + (s->row_ptr[i + 1] - s->row_ptr[i]);
        for (int sl = first_out; sl < ws->slot_ptr[i + 1]; sl++) ws->Z[(size_t)sl * ldz + Fe] = 1.0f;
    }
}

/* A forward over classes (the first member's, or those of the member that computed them) reads Z
 * only at the first slot of each kind (cw->qreps): those rows, with its own edge statistics, as
 * ws_fill_z writes them. */
static void ws_prepare_kinds(gnn_ws *ws, const gnn_ws *cw, const pp_gnn *m, const pp_gnn_graph *s)
{
    int Fe = m->n_edge_feat, ldz = Fe + 1;
    ws->n = cw->n;
    ws->S = cw->S;
    for (int t = 0; t < cw->n_qreps; t++) {
        int k = cw->qreps[t];
        float *z = ws->Z + (size_t)k * ldz;
        const float *f = s->edge_feat + (size_t)cw->slot_edge[k] * Fe;
        for (int c = 0; c < Fe; c++) z[c] = (f[c] - m->e_mean[c]) / m->e_std[c];
        z[Fe] = cw->slot_dir_of[k] ? 1.0f : 0.0f;
    }
}

/* ---- forward only: rows that are the same bits ----
 * Repeated blocks (the cells of a stage, a ResNet's blocks) give nodes whose rows are the same
 * bits layer after layer; the forward computes each such row once and copies it. Classes are
 * exact, never a hash alone:
 *   level 0:   i ~ j  iff  x_i and x_j are the same bits (then so are their rows of C^0);
 *   slots:     s ~ t  iff  the same direction and edge-feature bits (then Z, so Q, the same);
 *   level l+1: i ~ j  iff  i ~ j at level l (h^l the same), the same number of slots, and slot
 *              by slot the neighbours alike at level l (P the same) and the slots alike (Q the
 *              same): then m^l, summed in slot order, is the same bits, and so is h^{l+1}.
 * cls[l][i] is the first node of i's class; reps[l] lists those first nodes. The classes depend
 * on the sample only: the members of an ensemble share them (pp_gnn_fwd_run_member). */
static uint32_t mix32(uint32_t h, uint32_t v)
{
    h = (h ^ v) * 0x9e3779b1u;
    return h ^ (h >> 15);
}

/* Four lanes: one chain of multiplies over a row of ~40 words was the forward's slowest loop.
 * The hash only picks where a row is looked for; classes come from comparing bits. */
static uint32_t hash_words(uint32_t h, const float *f, int n)
{
    uint32_t a[4] = {h, h ^ 0x85ebca6bu, h ^ 0xc2b2ae35u, h ^ 0x27d4eb2fu};
    int c = 0;
    for (; c + 4 <= n; c += 4)
        for (int j = 0; j < 4; j++) {
            uint32_t v;
            memcpy(&v, &f[c + j], sizeof v);
            a[j] = mix32(a[j], v);
        }
    for (; c < n; c++) {
        uint32_t v;
        memcpy(&v, &f[c], sizeof v);
        a[0] = mix32(a[0], v);
    }
    return mix32(mix32(mix32(a[0], a[1]), a[2]), a[3]);
}

/* slot sl's direction (0 in, 1 out) */
static int slot_dir(const gnn_ws *ws, const pp_gnn_graph *s, int i, int sl)
{
    return sl >= ws->slot_ptr[i] + (s->row_ptr[i + 1] - s->row_ptr[i]);
}

static int same_bits(const float *a, const float *b, int n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0; /* bytes, not values: -0 != 0, NaN == NaN */
}

/* i and j (cl[i] == cl[j]) alike one level down: the same number of slots and, slot by slot,
 * neighbours of one class (nbr: cl through slot_nb) and slots of one kind */
static inline __attribute__((always_inline)) int same_next(const gnn_ws *ws, const int *nbr, int i,
                                                            int j)
{
    int si = ws->slot_ptr[i], sj = ws->slot_ptr[j], deg = ws->slot_ptr[i + 1] - si;
    if (ws->slot_ptr[j + 1] - sj != deg) return 0;
    for (int k = 0; k < deg; k++)
        if (nbr[si + k] != nbr[sj + k] || ws->slot_key[si + k] != ws->slot_key[sj + k]) return 0;
    return 1;
}

/* A new, empty table: the next stamp (the array is cleared only when the stamps wrap). */
static uint64_t htab_begin(gnn_ws *ws)
{
    if (++ws->htab_stamp == 0) {
        memset(ws->htab, 0, ws->htab_cap * sizeof *ws->htab);
        ws->htab_stamp = 1;
    }
    return ws->htab_stamp;
}

/* A table for n keys uses the first 2n-odd slots of the array (sized for the largest graph the
 * workspace takes): a small graph's probes stay in fewer cache lines. */
static size_t htab_mask(const gnn_ws *ws, int n)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)n && cap < ws->htab_cap) cap *= 2;
    return cap - 1;
}

/* From the sample alone (x, edge features, slot order): the same classes for every member. */
static void node_classes(gnn_ws *ws, const pp_gnn *m, const pp_gnn_graph *s)
{
    int N = ws->n, L = m->params.layers, Fe = s->n_edge_feat, E = s->n_edges, n_ecls = 0;
    /* edges of equal feature bits (each edge gives two slots: hashing edges halves the work) */
    uint64_t st = htab_begin(ws);
    size_t mask = htab_mask(ws, E);
    uint32_t last_f0 = 0;
    for (int k = 0; k < E; k++) {
        const float *f = s->edge_feat + (size_t)k * Fe;
        uint32_t f0 = 0;
        if (Fe == 1) memcpy(&f0, f, sizeof f0); /* one word (the usual): one mix, not five */
        if (Fe == 1 && k > 0 && f0 == last_f0) { /* the edge before's bits: its class */
            ws->edge_cls[k] = ws->edge_cls[k - 1];
            continue;
        }
        last_f0 = f0;
        size_t at = (Fe == 1 ? mix32(0x811c9dc5u, f0) : hash_words(0x811c9dc5u, f, Fe)) & mask;
        int c = -1;
        for (; ws->htab[at] >> 32 == st; at = (at + 1) & mask) {
            int j = (int)(uint32_t)ws->htab[at];
            const float *fj = s->edge_feat + (size_t)j * Fe;
            uint32_t fj0;
            memcpy(&fj0, fj, sizeof fj0);
            if (Fe == 1 ? fj0 == f0 : same_bits(fj, f, Fe)) {
                c = ws->edge_cls[j];
                break;
            }
        }
        if (c < 0) {
            ws->htab[at] = st << 32 | (uint32_t)k;
            c = n_ecls++;
            ws->kind_slot[2 * c] = ws->kind_slot[2 * c + 1] = -1;
        }
        ws->edge_cls[k] = c;
    }
    /* slots alike for Q: the same direction and edge-feature bits, so the same row of Z; each
     * slot's key is the first slot in slot order of its (edge class, direction) */
    ws->n_qreps = 0;
    for (int i = 0; i < N; i++)
        for (int sl = ws->slot_ptr[i]; sl < ws->slot_ptr[i + 1]; sl++) {
            int d = slot_dir(ws, s, i, sl);
            int *first = &ws->kind_slot[2 * ws->edge_cls[ws->slot_edge[sl]] + d];
            if (*first < 0) {
                *first = sl;
                ws->qreps[ws->n_qreps++] = sl;
            }
            ws->slot_key[sl] = *first;
            ws->slot_dir_of[sl] = (unsigned char)d;
        }
    /* level 0: rows of x of the same bits. A node the sample hints alike (a copied cell's node,
     * a row of the same features) also notes the last earlier node of the same hint: in a chain
     * of copied cells, the same place one cell back, its likeliest match at the levels after */
    int *cls = ws->cls, *reps = ws->reps, nr = 0, *last = ws->last_like;
    memset(last, 0xff, (size_t)N * sizeof *last);
    st = htab_begin(ws);
    mask = htab_mask(ws, N);
    for (int i = 0; i < N; i++) {
        const float *xi = s->x + (size_t)i * s->n_feat;
        int like = s->x_like ? s->x_like[i] : -1;
        ws->prev_like[i] = -1;
        if (like >= 0 && like < i && same_bits(xi, s->x + (size_t)like * s->n_feat, s->n_feat)) {
            cls[i] = cls[like]; /* the sample's hint, checked: the same class */
            ws->prev_like[i] = last[like] >= 0 ? last[like] : like;
            last[like] = i;
            continue;
        }
        size_t at = hash_words(0x811c9dc5u, xi, s->n_feat) & mask;
        cls[i] = i;
        for (; ws->htab[at] >> 32 == st; at = (at + 1) & mask) {
            int j = (int)(uint32_t)ws->htab[at];
            if (same_bits(xi, s->x + (size_t)j * s->n_feat, s->n_feat)) {
                cls[i] = j;
                break;
            }
        }
        if (cls[i] == i) {
            ws->htab[at] = st << 32 | (uint32_t)i;
            reps[nr++] = i;
        }
    }
    ws->n_reps[0] = nr;
    /* level l + 1 refines level l. A node first of its level-l class is first of its class here;
     * any other is tried against the class of its hint's last node (prev_like), then against
     * the first node of its level-l class (its class unless that one splits), and only then
     * looked for in a table of the first nodes of the other classes */
    for (int l = 1; l <= L; l++) {
        const int *cl = ws->cls + (size_t)(l - 1) * N;
        /* the slots' neighbour classes: layer l - 1's messages read P through them too */
        int *nbr = ws->nb_rep + (size_t)(l - 1) * ws->S;
        for (int sl = 0; sl < ws->S; sl++) nbr[sl] = cl[ws->slot_nb[sl]];
        cls = ws->cls + (size_t)l * N;
        reps = ws->reps + (size_t)l * N;
        nr = 0;
        st = htab_begin(ws);
        mask = htab_mask(ws, N);
        for (int i = 0; i < N; i++) {
            int r = cl[i], p = ws->prev_like[i];
            if (r == i) {
                cls[i] = i;
                reps[nr++] = i;
                continue;
            }
            if (p >= 0 && cl[p] == r && cls[p] != r && same_next(ws, nbr, i, cls[p])) {
                cls[i] = cls[p];
                continue;
            }
            if (same_next(ws, nbr, i, r)) {
                cls[i] = r;
                continue;
            }
            uint32_t h = mix32(0x811c9dc5u, (uint32_t)r);
            for (int sl = ws->slot_ptr[i]; sl < ws->slot_ptr[i + 1]; sl++)
                h = mix32(mix32(h, (uint32_t)nbr[sl]), (uint32_t)ws->slot_key[sl]);
            size_t at = h & mask;
            cls[i] = i;
            for (; ws->htab[at] >> 32 == st; at = (at + 1) & mask) {
                int j = (int)(uint32_t)ws->htab[at];
                if (cl[j] == r && same_next(ws, nbr, i, j)) {
                    cls[i] = j;
                    break;
                }
            }
            if (cls[i] == i) {
                ws->htab[at] = st << 32 | (uint32_t)i;
                reps[nr++] = i;
            }
        }
        ws->n_reps[l] = nr;
    }
}

/* Forward over one prepared graph; leaves the standardized outputs in ws->o.
 *   C^0[:, 0:F] = (X - x_mean) / x_std,  g^0 = (u - u_mean) / u_std
 *   per layer: P = h^l W_e[:, :din]^T,  Q = Z W_e[:, din:]^T + b_e,  m = aggregate(P, Q),
 *              h^{l+1} = relu([h^l | m | g^l] W^T + b),
 *              g^{l+1} = relu(W_g [g^l ; mean h^{l+1} ; max h^{l+1}] + b_g)
 *   r = [mean h^L ; max h^L ; g^L],  o_t = w2_t . relu(W1_t r + b1_t) + b2_t */
/* y = x W[:, col0 : col0 + k]^T + b for the weight block at off (n rows of ldw): through BLAS,
 * or over the transposed block (ws->wt, [ldw][n] at the same offset) in a forward-only pass. */
static void fwd_linear(const pp_gnn *m, const gnn_ws *ws, int rows, int k, int n, const float *x,
                       int ldx, size_t off, int ldw, int col0, const float *b, float *y, int ldy)
{
    if (ws->wt)
        pp_gnn_op_linear_rows_t(rows, NULL, k, n, x, ldx, ws->wt + off + (size_t)col0 * n, b, y,
                                ldy);
    else
        pp_gnn_op_linear(0, rows, k, n, x, NULL, ldx, m->w + off + col0, NULL, ldw, b, NULL, y,
                         NULL, ldy);
}

/* cw: the workspace whose node classes a forward-only pass uses (ws itself: computed here). */
static void gnn_forward_cls(const pp_gnn *m, gnn_ws *ws, const gnn_ws *cw, const pp_gnn_graph *s)
{
    int N = ws->n, S = ws->S, H = m->params.hidden, L = m->params.layers, F = m->n_feat;
    int Fe = m->n_edge_feat, G = m->n_globals;
    const float *W = m->w;
    int kc0 = kc_of(m, 0), fwd_only = ws->wt != NULL;
    /* forward only: rows computed once per class of equal rows (node_classes), then copied */
    /* a member on the first's classes has only the rows they name prepared (ws_prepare_kinds) */
    int dedup = fwd_only &&
                (cw != ws || (!pp_gnn_infer_is_plain() && pp_gnn_infer_has_classes()));
    if (dedup && cw == ws) {
        node_classes(ws, m, s);
        ws_prepare_kinds(ws, ws, m, s);
    } else if (cw == ws) {
        ws_fill_z(ws, m, s);
    }
    if (cw == ws) ws->cls_layers = dedup ? L : -1;
    /* rows of equal x: standardized once; a pass over classes reads h^l only in the rows of the
     * nodes first of their level-l class */
    const int *c0 = dedup ? cw->cls : NULL;
    ws->std_mean = ws->std_std = NULL;
    if (dedup && cw != ws && cw->std_mean && !memcmp(cw->std_mean, m->x_mean, F * sizeof(float)) &&
        !memcmp(cw->std_std, m->x_std, F * sizeof(float))) {
        /* the first member's rows: the same statistics, so the same bits */
        for (int r = 0; r < cw->n_reps[0]; r++) {
            int i = cw->reps[r];
            memcpy(ws->C[0] + (size_t)i * kc0, cw->C[0] + (size_t)i * cw->std_ld,
                   (size_t)F * sizeof(float));
        }
    } else {
        for (int i = 0; i < N; i++) {
            const float *xi = s->x + (size_t)i * F;
            float *ci = ws->C[0] + (size_t)i * kc0;
            if (c0 && c0[i] != i) continue;
            for (int c = 0; c < F; c++) ci[c] = (xi[c] - m->x_mean[c]) / m->x_std[c];
        }
        if (dedup && cw == ws) {
            ws->std_mean = m->x_mean;
            ws->std_std = m->x_std;
            ws->std_ld = kc0;
        }
    }
    for (int c = 0; c < G; c++) ws->cg[0][c] = (s->globals[c] - m->u_mean[c]) / m->u_std[c];
    for (int l = 0; l < L; l++) {
        const pp_gnn_layer_off *lo = &m->layer[l];
        int din = lo->din, dg = lo->dg, kc = kc_of(m, l), ke = din + Fe + 1;
        float *C = ws->C[l];
        float *out = l + 1 < L ? ws->C[l + 1] : ws->hL;
        int ldo = l + 1 < L ? kc_of(m, l + 1) : H;
        if (dedup) {
            const int *cl = cw->cls + (size_t)l * N, *cn = cw->cls + (size_t)(l + 1) * N;
            const int *rl = cw->reps + (size_t)l * N, *rn = cw->reps + (size_t)(l + 1) * N;
            int nl = cw->n_reps[l], nn = cw->n_reps[l + 1];
            /* P for one node of each level-l class; messages read it through nb_rep */
            /* h^{l+1} = relu(bias_g + h^l W_h^T + m^l W_m^T), summed in that order: its sums over
             * the h^l block are the same for a whole level-l class, so they are made once per
             * class (pre) and each level-(l+1) class goes on from its level-l class's row */
            fwd_linear(m, ws, 1, dg, H, ws->cg[l], dg, lo->w, kc, din + 2 * H, W + lo->b,
                       ws->bias_g, H);
            /* P and pre read the same rows; after layer 0 they are relu'd, mostly zeros, which
             * the kernels skip (the same bits) */
            pp_gnn_op_linear2_rows_t(nl, rl, din, H, C, kc, ws->wt + lo->we, NULL, ws->P, H,
                                     ws->wt + lo->w, ws->bias_g, ws->pre, H,
                                     l > 0 && ws->wt_finite);
            /* Q for one slot of each kind; messages read it through slot_key */
            pp_gnn_op_linear_rows_t(cw->n_qreps, cw->qreps, Fe + 1, H, ws->Z, Fe + 1,
                                    ws->wt + lo->we + (size_t)din * H, W + lo->be, ws->Q, H);
            /* the sample's slots and their classes: the first member's, computed once */
            const int *nb_rep = cw->nb_rep + (size_t)l * S; /* made with the classes */
            pp_gnn_aggregate_rows_t(nn, rn, H, cw->slot_ptr, nb_rep, cw->slot_key, ws->P,
                                    ws->Q, C + din, kc);
            pp_gnn_op_linear_rows_from_t(nn, rn, 2 * H, H, C + din, kc,
                                         ws->wt + lo->w + (size_t)din * H, ws->pre, cl, H, out,
                                         ldo);
            float *cg = ws->cg[l];
            /* the pool reads each row through its class; the next layer reads h^{l+1} only in
             * the rows of the nodes first of their class, so no row is copied */
            pp_gnn_relu_pool_cls_t(N, cn, H, out, ldo, cg + dg);
            float *gnext = l + 1 < L ? ws->cg[l + 1] : ws->gL;
            fwd_linear(m, ws, 1, dg + 2 * H, H, cg, dg + 2 * H, lo->wg, dg + 2 * H, 0, W + lo->bg,
                       gnext, H);
            pp_gnn_op_relu(0, 1, H, gnext, NULL, H);
            continue;
        }
        fwd_linear(m, ws, N, din, H, C, kc, lo->we, ke, 0, NULL, ws->P, H);
        fwd_linear(m, ws, S, Fe + 1, H, ws->Z, Fe + 1, lo->we, ke, din, W + lo->be, ws->Q, H);
        if (fwd_only)
            pp_gnn_aggregate_t(N, H, ws->slot_ptr, ws->slot_nb, ws->P, ws->Q, C + din, kc);
        else
            pp_gnn_op_aggregate(0, N, H, ws->slot_ptr, ws->slot_nb, ws->P, NULL, ws->Q, NULL,
                                C + din, NULL, kc, ws->am[l]);
        if (fwd_only) {
            /* the g block is the same in every row: its product joins the bias once */
            fwd_linear(m, ws, 1, dg, H, ws->cg[l], dg, lo->w, kc, din + 2 * H, W + lo->b,
                       ws->bias_g, H);
            fwd_linear(m, ws, N, din + 2 * H, H, C, kc, lo->w, kc, 0, ws->bias_g, out, ldo);
        } else {
            pp_gnn_op_broadcast(0, N, dg, ws->cg[l], NULL, C + din + 2 * H, NULL, kc);
            fwd_linear(m, ws, N, kc, H, C, kc, lo->w, kc, 0, W + lo->b, out, ldo);
        }
        float *cg = ws->cg[l];
        if (fwd_only) {
            pp_gnn_relu_pool_t(N, H, out, ldo, cg + dg);
        } else {
            pp_gnn_op_relu(0, N, H, out, NULL, ldo);
            pp_gnn_op_pool(0, N, H, out, NULL, ldo, cg + dg, NULL, ws->pam[l]);
        }
        float *gnext = l + 1 < L ? ws->cg[l + 1] : ws->gL;
        fwd_linear(m, ws, 1, dg + 2 * H, H, cg, dg + 2 * H, lo->wg, dg + 2 * H, 0, W + lo->bg,
                   gnext, H);
        pp_gnn_op_relu(0, 1, H, gnext, NULL, H);
    }
    int dgl = m->layer[L - 1].dg;
    memcpy(ws->r, ws->cg[L - 1] + dgl, (size_t)2 * H * sizeof(float));
    memcpy(ws->r + 2 * H, ws->gL, (size_t)H * sizeof(float));
    for (int t = 0; t < m->n_targets; t++) {
        const pp_gnn_head_off *ho = &m->head[t];
        fwd_linear(m, ws, 1, 3 * H, H, ws->r, 3 * H, ho->w1, 3 * H, 0, W + ho->b1, ws->a[t], H);
        pp_gnn_op_relu(0, 1, H, ws->a[t], NULL, H);
        fwd_linear(m, ws, 1, H, 1, ws->a[t], H, ho->w2, H, 0, W + ho->b2, &ws->o[t], 1);
    }
}

static void gnn_forward_ws(const pp_gnn *m, gnn_ws *ws, const pp_gnn_graph *s)
{
    gnn_forward_cls(m, ws, ws, s);
}

/* Backward of gnn_forward_ws for dL/do = ws->d_o, accumulating into m->grad, in reverse order:
 *   heads: dw2, db2 -> da (gated by relu) -> dW1, db1, dr;  dr = d[mean h^L ; max h^L ; g^L]
 *   for l = L-1..0:  dg^{l+1} (gated) -> dW_g, db_g, d[g^l ; mean h^{l+1} ; max h^{l+1}]
 *                    pool backward -> dh^{l+1} (gated) -> dW, db, dC^l = d[h^l | m^l | g^l]
 *                    dg^l += sum_i dC^l[i, g block];  aggregate backward -> dP, dQ
 *                    dW_e += [dP^T h^l | dQ^T Z],  db_e += sum_s dQ_s,  dh^l += dP W_e[:, :din] */
static void gnn_backward_ws(pp_gnn *m, gnn_ws *ws)
{
    int N = ws->n, S = ws->S, H = m->params.hidden, L = m->params.layers, Fe = m->n_edge_feat;
    const float *W = m->w;
    float *D = m->grad;
    for (int l = 0; l < L; l++) {
        memset(ws->dC[l], 0, (size_t)N * (size_t)kc_of(m, l) * sizeof(float));
        memset(ws->dcg[l], 0, (size_t)(m->layer[l].dg + 2 * H) * sizeof(float));
    }
    memset(ws->dhL, 0, (size_t)N * H * sizeof(float));
    memset(ws->dgL, 0, (size_t)H * sizeof(float));
    memset(ws->dr, 0, (size_t)3 * H * sizeof(float));
    for (int t = 0; t < m->n_targets; t++) {
        const pp_gnn_head_off *ho = &m->head[t];
        memset(ws->da[t], 0, (size_t)H * sizeof(float));
        pp_gnn_op_linear(1, 1, H, 1, ws->a[t], ws->da[t], H, W + ho->w2, D + ho->w2, H, NULL,
                         D + ho->b2, NULL, &ws->d_o[t], 1);
        pp_gnn_op_relu(1, 1, H, ws->a[t], ws->da[t], H);
        pp_gnn_op_linear(1, 1, 3 * H, H, ws->r, ws->dr, 3 * H, W + ho->w1, D + ho->w1, 3 * H, NULL,
                         D + ho->b1, NULL, ws->da[t], H);
    }
    {
        int dgl = m->layer[L - 1].dg;
        float *dpool = ws->dcg[L - 1] + dgl;
        for (int c = 0; c < 2 * H; c++) dpool[c] += ws->dr[c];
        for (int c = 0; c < H; c++) ws->dgL[c] += ws->dr[2 * H + c];
    }
    for (int l = L - 1; l >= 0; l--) {
        const pp_gnn_layer_off *lo = &m->layer[l];
        int din = lo->din, dg = lo->dg, kc = kc_of(m, l), ke = din + Fe + 1;
        float *gnext = l + 1 < L ? ws->cg[l + 1] : ws->gL;
        float *dgnext = l + 1 < L ? ws->dcg[l + 1] : ws->dgL;
        /* g^{l+1} = relu(W_g cg + b_g) */
        pp_gnn_op_relu(1, 1, H, gnext, dgnext, H);
        pp_gnn_op_linear(1, 1, dg + 2 * H, H, ws->cg[l], ws->dcg[l], dg + 2 * H, W + lo->wg,
                         D + lo->wg, dg + 2 * H, NULL, D + lo->bg, NULL, dgnext, H);
        /* pooled h^{l+1} */
        float *out = l + 1 < L ? ws->C[l + 1] : ws->hL;
        float *dout = l + 1 < L ? ws->dC[l + 1] : ws->dhL;
        int ldo = l + 1 < L ? kc_of(m, l + 1) : H;
        pp_gnn_op_pool(1, N, H, out, dout, ldo, NULL, ws->dcg[l] + dg, ws->pam[l]);
        /* h^{l+1} = relu(C^l W^T + b) */
        pp_gnn_op_relu(1, N, H, out, dout, ldo);
        float *C = ws->C[l], *dC = ws->dC[l];
        pp_gnn_op_linear(1, N, kc, H, C, dC, kc, W + lo->w, D + lo->w, kc, NULL, D + lo->b, NULL,
                         dout, ldo);
        /* g^l broadcast into C^l */
        pp_gnn_op_broadcast(1, N, dg, NULL, ws->dcg[l], NULL, dC + din + 2 * H, kc);
        /* aggregate -> P, Q -> W_e */
        memset(ws->dP, 0, (size_t)N * H * sizeof(float));
        memset(ws->dQ, 0, (size_t)S * H * sizeof(float));
        pp_gnn_op_aggregate(1, N, H, ws->slot_ptr, ws->slot_nb, NULL, ws->dP, NULL, ws->dQ, NULL,
                            dC + din, kc, ws->am[l]);
        pp_gnn_op_linear(1, S, Fe + 1, H, ws->Z, NULL, Fe + 1, W + lo->we + din, D + lo->we + din,
                         ke, NULL, D + lo->be, NULL, ws->dQ, H);
        pp_gnn_op_linear(1, N, din, H, C, l > 0 ? dC : NULL, kc, W + lo->we, D + lo->we, ke, NULL,
                         NULL, NULL, ws->dP, H);
    }
}

/* --------------------------------------------------------------- sample checks ---- */

static perfpred_status check_widths(const pp_gnn *m, const pp_gnn_graph *s, const char *what,
                                    pp_err *err);

static perfpred_status check_sample_dims(const pp_gnn *m, const pp_gnn_graph *s, int idx,
                                         pp_err *err)
{
    char what[64];
    if (idx >= 0)
        snprintf(what, sizeof what, "gnn sample %d", idx);
    else
        snprintf(what, sizeof what, "gnn sample");
    perfpred_status st = pp_gnn_graph_check(s, what, err);
    if (st) return st;
    return check_widths(m, s, what, err);
}

static perfpred_status check_widths(const pp_gnn *m, const pp_gnn_graph *s, const char *what,
                                    pp_err *err)
{
    if (s->n_feat != m->n_feat || s->n_edge_feat != m->n_edge_feat || s->n_globals != m->n_globals)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: widths F=%d Fe=%d G=%d, the model wants F=%d Fe=%d G=%d", what,
                          s->n_feat, s->n_edge_feat, s->n_globals, m->n_feat, m->n_edge_feat,
                          m->n_globals);
    return PERFPRED_OK;
}

static perfpred_status forward_one(const pp_gnn *m, const pp_gnn_graph *s, double *out,
                                   pp_err *err)
{
    perfpred_status st = check_sample_dims(m, s, -1, err);
    if (st) return st;
    gnn_ws ws;
    if ((st = ws_init(&ws, m, s->n_nodes, s->n_edges, 1, err))) return st;
    ws_prepare(&ws, s);
    gnn_forward_ws(m, &ws, s);
    for (int t = 0; t < m->n_targets; t++)
        out[t] = (double)m->y_mean[t] + (double)m->y_std[t] * (double)ws.o[t];
    ws_free(&ws);
    return PERFPRED_OK;
}

perfpred_status pp_gnn_forward_range(const pp_gnn *m, const pp_gnn_graph *s, double *out,
                                     double *lo, double *hi, pp_err *err)
{
    if (!m || !s || !out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: NULL argument");
    perfpred_status st = forward_one(m, s, out, err);
    for (int t = 0; !st && t < m->n_targets; t++) {
        if (lo) lo[t] = out[t];
        if (hi) hi[t] = out[t];
    }
    int n = 1;
    for (const pp_gnn *q = m->next; q && !st; q = q->next, n++) {
        double o[PP_GNN_MAX_TARGETS];
        if (q->n_targets != m->n_targets)
            return pp_err_set(err, PERFPRED_ERR_MODEL,
                              "gnn: ensemble member %d predicts %d targets, the first %d", n + 1,
                              q->n_targets, m->n_targets);
        if ((st = forward_one(q, s, o, err))) break;
        for (int t = 0; t < m->n_targets; t++) {
            out[t] += o[t];
            if (lo && o[t] < lo[t]) lo[t] = o[t];
            if (hi && o[t] > hi[t]) hi[t] = o[t];
        }
    }
    for (int t = 0; !st && n > 1 && t < m->n_targets; t++) out[t] /= n;
    return st;
}

perfpred_status pp_gnn_forward(const pp_gnn *m, const pp_gnn_graph *s, double *out, pp_err *err)
{
    return pp_gnn_forward_range(m, s, out, NULL, NULL, err);
}

/* ---- a forward workspace kept by the caller (gnn_fast.c pools them) ---- */
struct pp_gnn_fwd {
    gnn_ws ws;
};

perfpred_status pp_gnn_fwd_new(const pp_gnn *m, int cap_n, int cap_e, pp_gnn_fwd **out,
                               pp_err *err)
{
    *out = NULL;
    pp_gnn_fwd *f = malloc(sizeof *f);
    if (!f) return pp_err_set(err, PERFPRED_ERR_NOMEM, "gnn: out of memory");
    perfpred_status st = ws_init(&f->ws, m, cap_n, cap_e, 0, err);
    if (st) {
        free(f);
        return st;
    }
    *out = f;
    return PERFPRED_OK;
}

int pp_gnn_fwd_fits(const pp_gnn_fwd *f, const pp_gnn_graph *s)
{
    return f && s->n_nodes <= f->ws.cap_n && s->n_edges <= f->ws.cap_e;
}

perfpred_status pp_gnn_fwd_run(const pp_gnn *m, pp_gnn_fwd *f, const pp_gnn_graph *s, double *out,
                               pp_err *err)
{
    perfpred_status st = check_sample_dims(m, s, -1, err);
    if (st) return st;
    return pp_gnn_fwd_run_member(m, f, NULL, s, out, err);
}

perfpred_status pp_gnn_fwd_run_member(const pp_gnn *m, pp_gnn_fwd *f, const pp_gnn_fwd *first,
                                      const pp_gnn_graph *s, double *out, pp_err *err)
{
    perfpred_status st = check_widths(m, s, "gnn sample", err);
    if (st) return st;
    PP_ASSERT(pp_gnn_fwd_fits(f, s));
    /* the first member's classes and slots, when it ran on s with as many layers and kept them */
    const gnn_ws *cw = &f->ws;
    if (first && first != f && first->ws.wt && f->ws.wt && first->ws.n == s->n_nodes &&
        first->ws.cls_layers == m->params.layers && m->n_edge_feat == s->n_edge_feat)
        cw = &first->ws;
    if (cw != &f->ws)
        ws_prepare_kinds(&f->ws, cw, m, s);
    else
        ws_prepare(&f->ws, s);
    gnn_forward_cls(m, &f->ws, cw, s);
    for (int t = 0; t < m->n_targets; t++)
        out[t] = (double)m->y_mean[t] + (double)m->y_std[t] * (double)f->ws.o[t];
    return PERFPRED_OK;
}

void pp_gnn_fwd_use_weights_t(pp_gnn_fwd *f, const float *wt)
{
    if (!f) return;
    f->ws.wt = wt;
    int finite = wt != NULL;
    for (size_t i = 0; finite && i < f->ws.n_wt; i++) finite = isfinite(wt[i]);
    f->ws.wt_finite = finite;
}

void pp_gnn_fwd_free(pp_gnn_fwd *f)
{
    if (!f) return;
    ws_free(&f->ws);
    free(f);
}

int pp_gnn_agrees(const pp_gnn *m, int t, double lo, double hi)
{
    if (!m || t < 0 || t >= m->n_targets || !(m->spread_gate[t] > 0)) return 1;
    return hi - lo <= m->spread_gate[t];
}

int pp_gnn_agrees_all(const pp_gnn *m, const double *lo, const double *hi)
{
    for (int t = 0; m && t < m->n_targets; t++)
        if (!pp_gnn_agrees(m, t, lo[t], hi[t])) return 0;
    return 1;
}

perfpred_status pp_gnn_set_spread_gate(pp_gnn *m, const pp_gnn_graph *samples, const int *idx,
                                       int n, pp_err *err)
{
    if (!m || (n > 0 && (!samples || !idx)))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: NULL argument");
    double gate[PP_GNN_MAX_TARGETS] = {0};
    for (int i = 0; i < n && m->next; i++) {
        double o[PP_GNN_MAX_TARGETS], lo[PP_GNN_MAX_TARGETS], hi[PP_GNN_MAX_TARGETS];
        perfpred_status st = pp_gnn_forward_range(m, &samples[idx[i]], o, lo, hi, err);
        if (st) return st;
        for (int t = 0; t < m->n_targets; t++)
            if (samples[idx[i]].mask[t] && hi[t] - lo[t] > gate[t]) gate[t] = hi[t] - lo[t];
    }
    /* rounded up to single precision, so that the manifest's decimal gives it back exactly and
     * every sample it was set from still agrees */
    for (int t = 0; t < PP_GNN_MAX_TARGETS; t++) {
        float g = (float)gate[t];
        if ((double)g < gate[t]) g = nextafterf(g, INFINITY);
        m->spread_gate[t] = g;
    }
    return PERFPRED_OK;
}

/* Standardized targets: ytil_t = (y_t - y_mean_t) / y_std_t. */
static void std_targets(const pp_gnn *m, const pp_gnn_graph *s, float *ytil)
{
    for (int t = 0; t < m->n_targets; t++) ytil[t] = (s->y[t] - m->y_mean[t]) / m->y_std[t];
}

static int count_present(const pp_gnn *m, const pp_gnn_graph *samples, const int *idx, int n)
{
    int c = 0;
    for (int b = 0; b < n; b++) {
        const pp_gnn_graph *s = &samples[idx ? idx[b] : b];
        for (int t = 0; t < m->n_targets; t++) c += s->mask[t] != 0;
    }
    return c;
}

/* Zeroes m->grad, then for each sample: forward, d_o = dL/do of
 * L = (1/count) sum_b sum_t mask (o - ytil)^2 (or the Huber loss of params.huber_delta, in
 * standardized units), backward. Returns L. */
static double batch_loss_grad(pp_gnn *m, gnn_ws *ws, const pp_gnn_graph *samples, const int *idx,
                              int n)
{
    memset(m->grad, 0, m->n_params * sizeof(float));
    int count = count_present(m, samples, idx, n);
    if (count == 0) return 0.0;
    double scale = 1.0 / count, loss = 0.0;
    float delta[PP_GNN_MAX_TARGETS];
    for (int t = 0; t < m->n_targets; t++)
        delta[t] = (float)(m->params.huber_delta / (double)m->y_std[t]);
    for (int b = 0; b < n; b++) {
        const pp_gnn_graph *s = &samples[idx ? idx[b] : b];
        int any = 0;
        for (int t = 0; t < m->n_targets; t++) any |= s->mask[t] != 0;
        if (!any) continue;
        ws_prepare(ws, s);
        gnn_forward_ws(m, ws, s);
        float ytil[PP_GNN_MAX_TARGETS];
        std_targets(m, s, ytil);
        memset(ws->d_o, 0, sizeof ws->d_o);
        loss += m->params.huber_delta > 0.0
                    ? pp_gnn_op_huber(1, m->n_targets, ws->o, ws->d_o, ytil, s->mask, delta, scale)
                    : pp_gnn_op_mse(1, m->n_targets, ws->o, ws->d_o, ytil, s->mask, scale);
        gnn_backward_ws(m, ws);
    }
    return loss;
}

static void max_sizes(const pp_gnn_graph *samples, const int *idx, int n, int *max_n, int *max_e)
{
    for (int b = 0; b < n; b++) {
        const pp_gnn_graph *s = &samples[idx ? idx[b] : b];
        if (s->n_nodes > *max_n) *max_n = s->n_nodes;
        if (s->n_edges > *max_e) *max_e = s->n_edges;
    }
}

perfpred_status pp_gnn_loss_grad(pp_gnn *m, const pp_gnn_graph *samples, const int *idx, int n,
                                 double *loss, pp_err *err)
{
    if (!m || !samples || n < 1 || !loss)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: bad arguments to loss_grad");
    perfpred_status st;
    for (int b = 0; b < n; b++)
        if ((st = check_sample_dims(m, &samples[idx ? idx[b] : b], idx ? idx[b] : b, err)))
            return st;
    int max_n = 1, max_e = 0;
    max_sizes(samples, idx, n, &max_n, &max_e);
    gnn_ws ws;
    if ((st = ws_init(&ws, m, max_n, max_e, 1, err))) return st;
    if (m->params.nthreads > 0) pp_gnn_blas_threads(m->params.nthreads);
    *loss = batch_loss_grad(m, &ws, samples, idx, n);
    ws_free(&ws);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------- training ---- */

/* w -= lr (mhat / (sqrt(vhat) + eps) + wd w), with m, v the Adam moments of the gradient */
static void adam_step(pp_gnn *m)
{
    m->adam_t++;
    const float b1 = (float)ADAM_B1, b2 = (float)ADAM_B2;
    const float c1 = (float)(1.0 / (1.0 - pow(ADAM_B1, (double)m->adam_t)));
    const float c2 = (float)(1.0 / (1.0 - pow(ADAM_B2, (double)m->adam_t)));
    const float lr = (float)m->params.lr, wd = (float)m->params.weight_decay;
    const float eps = (float)ADAM_EPS;
    for (size_t i = 0; i < m->n_params; i++) {
        float g = m->grad[i];
        m->adam_m[i] = b1 * m->adam_m[i] + (1.0f - b1) * g;
        m->adam_v[i] = b2 * m->adam_v[i] + (1.0f - b2) * g * g;
        float mh = m->adam_m[i] * c1, vh = m->adam_v[i] * c2;
        m->w[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * m->w[i]);
    }
}

/* mean and (population) std from a sum and a sum of squared deviations; std 1 when the values
 * do not vary, so a constant feature standardizes to 0 */
static void mean_std(double sum, double sumsq_dev, long n, float *mean, float *std)
{
    if (n <= 0) {
        *mean = 0.0f;
        *std = 1.0f;
        return;
    }
    double mu = sum / (double)n, sd = n > 1 ? sqrt(sumsq_dev / (double)n) : 0.0;
    *mean = (float)mu;
    *std = (sd > 1e-6 && isfinite(sd)) ? (float)sd : 1.0f;
}

/* Standardization statistics from the training split (two passes per column, in double). */
static void fit_standardization(pp_gnn *m, const pp_gnn_graph *samples, const int *idx, int n)
{
    for (int c = 0; c < m->n_feat; c++) {
        double sum = 0.0, dev = 0.0;
        long cnt = 0;
        for (int b = 0; b < n; b++) {
            const pp_gnn_graph *s = &samples[idx[b]];
            for (int i = 0; i < s->n_nodes; i++) sum += s->x[(size_t)i * s->n_feat + c];
            cnt += s->n_nodes;
        }
        double mu = cnt ? sum / (double)cnt : 0.0;
        for (int b = 0; b < n; b++) {
            const pp_gnn_graph *s = &samples[idx[b]];
            for (int i = 0; i < s->n_nodes; i++) {
                double d = s->x[(size_t)i * s->n_feat + c] - mu;
                dev += d * d;
            }
        }
        mean_std(sum, dev, cnt, &m->x_mean[c], &m->x_std[c]);
    }
    for (int c = 0; c < m->n_edge_feat; c++) {
        double sum = 0.0, dev = 0.0;
        long cnt = 0;
        for (int b = 0; b < n; b++) {
            const pp_gnn_graph *s = &samples[idx[b]];
            for (int k = 0; k < s->n_edges; k++) sum += s->edge_feat[(size_t)k * s->n_edge_feat + c];
            cnt += s->n_edges;
        }
        double mu = cnt ? sum / (double)cnt : 0.0;
        for (int b = 0; b < n; b++) {
            const pp_gnn_graph *s = &samples[idx[b]];
            for (int k = 0; k < s->n_edges; k++) {
                double d = s->edge_feat[(size_t)k * s->n_edge_feat + c] - mu;
                dev += d * d;
            }
        }
        mean_std(sum, dev, cnt, &m->e_mean[c], &m->e_std[c]);
    }
    for (int c = 0; c < m->n_globals; c++) {
        double sum = 0.0, dev = 0.0;
        for (int b = 0; b < n; b++) sum += samples[idx[b]].globals[c];
        double mu = sum / n;
        for (int b = 0; b < n; b++) {
            double d = samples[idx[b]].globals[c] - mu;
            dev += d * d;
        }
        mean_std(sum, dev, n, &m->u_mean[c], &m->u_std[c]);
    }
    for (int t = 0; t < m->n_targets; t++) {
        double sum = 0.0, dev = 0.0;
        long cnt = 0;
        for (int b = 0; b < n; b++)
            if (samples[idx[b]].mask[t]) {
                sum += samples[idx[b]].y[t];
                cnt++;
            }
        double mu = cnt ? sum / (double)cnt : 0.0;
        for (int b = 0; b < n; b++)
            if (samples[idx[b]].mask[t]) {
                double d = samples[idx[b]].y[t] - mu;
                dev += d * d;
            }
        mean_std(sum, dev, cnt, &m->y_mean[t], &m->y_std[t]);
    }
}

/* Masked MSE in target units over samples[idx[..]]; per-target RMSE into rmse and mean |error|
 * into mae (-1 where none; either may be NULL); the mean |error| over every target into *mae_all
 * when it is not NULL. */
static double eval_mse(const pp_gnn *m, gnn_ws *ws, const pp_gnn_graph *samples, const int *idx,
                       int n, double *rmse, double *mae, double *mae_all)
{
    double sum[PP_GNN_MAX_TARGETS] = {0}, abs_sum[PP_GNN_MAX_TARGETS] = {0}, tot = 0.0, tot_abs = 0;
    long cnt[PP_GNN_MAX_TARGETS] = {0}, totc = 0;
    for (int b = 0; b < n; b++) {
        const pp_gnn_graph *s = &samples[idx[b]];
        ws_prepare(ws, s);
        gnn_forward_ws(m, ws, s);
        for (int t = 0; t < m->n_targets; t++) {
            if (!s->mask[t]) continue;
            double pred = (double)m->y_mean[t] + (double)m->y_std[t] * (double)ws->o[t];
            double r = pred - (double)s->y[t];
            sum[t] += r * r;
            abs_sum[t] += fabs(r);
            cnt[t]++;
        }
    }
    for (int t = 0; t < m->n_targets; t++) {
        tot += sum[t];
        tot_abs += abs_sum[t];
        totc += cnt[t];
        if (rmse) rmse[t] = cnt[t] ? sqrt(sum[t] / (double)cnt[t]) : -1.0;
        if (mae) mae[t] = cnt[t] ? abs_sum[t] / (double)cnt[t] : -1.0;
    }
    if (mae_all) *mae_all = totc ? tot_abs / (double)totc : -1.0;
    return totc ? tot / (double)totc : -1.0;
}

static perfpred_status check_split(const pp_gnn *m, const pp_gnn_graph *samples, int n_samples,
                                   const int *idx, int n, const char *name, pp_err *err)
{
    if (n > 0 && !idx)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: %s split indices are NULL", name);
    for (int b = 0; b < n; b++) {
        if (idx[b] < 0 || idx[b] >= n_samples)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "gnn: %s split entry %d = %d is not a sample index (0..%d)", name, b,
                              idx[b], n_samples - 1);
        perfpred_status st = check_sample_dims(m, &samples[idx[b]], idx[b], err);
        if (st) return st;
    }
    return PERFPRED_OK;
}

perfpred_status pp_gnn_train(pp_gnn *m, const pp_gnn_graph *samples, int n_samples,
                             const int *train_idx, int n_train, const int *val_idx, int n_val,
                             pp_gnn_report *report, pp_err *err)
{
    if (!m || !samples || n_samples < 1 || n_train < 1 || n_val < 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "gnn: training needs a model, samples and a non-empty training split");
    const pp_gnn_params *p = &m->params;
    perfpred_status st = pp_gnn_check_params(p, err);
    if (st) return st;
    if ((st = check_split(m, samples, n_samples, train_idx, n_train, "training", err))) return st;
    if ((st = check_split(m, samples, n_samples, val_idx, n_val, "validation", err))) return st;
    if (count_present(m, samples, train_idx, n_train) == 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "gnn: no training sample has a target present");
    if (n_val > 0 && count_present(m, samples, val_idx, n_val) == 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "gnn: no validation sample has a target present");

    int max_n = 1, max_e = 0;
    max_sizes(samples, train_idx, n_train, &max_n, &max_e);
    max_sizes(samples, val_idx, n_val, &max_n, &max_e);
    gnn_ws ws;
    if ((st = ws_init(&ws, m, max_n, max_e, 1, err))) return st;
    int *order = malloc((size_t)n_train * sizeof(int));
    float *best = malloc(m->n_params * sizeof(float));
    if (!order || !best) {
        free(order);
        free(best);
        ws_free(&ws);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "gnn: out of memory");
    }
    if (p->nthreads > 0) pp_gnn_blas_threads(p->nthreads);
    pp_logger lg = {p->log, p->log_user};

    fit_standardization(m, samples, train_idx, n_train);
    pp_gnn_init_weights(m, p->seed);
    pp_gnn_rng rng;
    pp_gnn_rng_seed(&rng, p->seed ^ 0x5eed5eed5eed5eedULL); /* shuffling stream, apart from init */
    memcpy(order, train_idx, (size_t)n_train * sizeof(int));

    pp_gnn_report rep;
    memset(&rep, 0, sizeof rep);
    rep.n_train = n_train;
    rep.n_val = n_val;
    double best_val = INFINITY;
    int since_best = 0;
    for (int epoch = 1; epoch <= p->epochs; epoch++) {
        for (int i = n_train - 1; i > 0; i--) { /* Fisher-Yates */
            int j = pp_gnn_rng_below(&rng, i + 1), tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        double epoch_loss = 0.0;
        int n_batches = 0;
        for (int b0 = 0; b0 < n_train; b0 += p->batch) {
            int nb = n_train - b0 < p->batch ? n_train - b0 : p->batch;
            if (count_present(m, samples, order + b0, nb) == 0) continue;
            epoch_loss += batch_loss_grad(m, &ws, samples, order + b0, nb);
            n_batches++;
            adam_step(m);
        }
        rep.epochs_run = epoch;
        if (n_val > 0) {
            double mae, v = eval_mse(m, &ws, samples, val_idx, n_val, NULL, NULL, &mae);
            pp_log(&lg, PERFPRED_LOG_DEBUG,
                   "gnn epoch %d: train loss %.6g (standardized), val mse %.6g, val mae %.6g",
                   epoch, n_batches ? epoch_loss / n_batches : 0.0, v, mae);
            if (p->huber_delta > 0.0) v = mae; /* the criterion follows the loss */
            if (v < best_val) {
                best_val = v;
                rep.best_epoch = epoch;
                memcpy(best, m->w, m->n_params * sizeof(float));
                since_best = 0;
            } else if (++since_best >= p->patience) {
                break;
            }
        } else {
            pp_log(&lg, PERFPRED_LOG_DEBUG, "gnn epoch %d: train loss %.6g (standardized)", epoch,
                   n_batches ? epoch_loss / n_batches : 0.0);
            rep.best_epoch = epoch;
        }
    }
    if (n_val > 0 && rep.best_epoch > 0) memcpy(m->w, best, m->n_params * sizeof(float));
    rep.train_mse = eval_mse(m, &ws, samples, train_idx, n_train, NULL, NULL, NULL);
    if (n_val > 0) {
        rep.val_mse = eval_mse(m, &ws, samples, val_idx, n_val, rep.val_rmse, rep.val_mae, NULL);
    } else {
        rep.val_mse = -1.0;
        for (int t = 0; t < PP_GNN_MAX_TARGETS; t++) rep.val_rmse[t] = rep.val_mae[t] = -1.0;
    }
    for (int t = m->n_targets; t < PP_GNN_MAX_TARGETS; t++) rep.val_rmse[t] = rep.val_mae[t] = -1.0;
    pp_log(&lg, PERFPRED_LOG_INFO,
           "gnn: %d epochs, kept epoch %d, train mse %.6g, validation mse %.6g", rep.epochs_run,
           rep.best_epoch, rep.train_mse, rep.val_mse);
    m->report = rep;
    m->trained = 1;
    if (report) *report = rep;
    free(order);
    free(best);
    ws_free(&ws);
    return PERFPRED_OK;
}
