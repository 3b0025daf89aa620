/* graph_gnn/gnn_fast.c: the GNN correction as predictions call it: forward workspaces kept in a
 * pool owned by the ensemble (no allocation per call once warm), every member run on the calling
 * thread over the one sample the caller built (members share the encoded inputs), forward only:
 * each member's weights transposed once (gnn_infer.c), no BLAS, no argmax kept. The figures agree
 * with pp_gnn_forward_range within float rounding (tests/test_gnn_fast.c). */
#include "graph_gnn/graph_gnn.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* One workspace per member, each large enough for graphs up to cap_n nodes and cap_e edges. */
typedef struct fwd_set {
    int n_members;
    pp_gnn_fwd *f[];
} fwd_set;

/* Sets not in use; a forward takes one (or makes one) and gives it back. */
struct pp_gnn_pool {
    pthread_mutex_t lock;
    int n, cap;
    fwd_set **idle;
    int n_members;
    float **wt;   /* per member: its weights transposed for the forward-only pass */
};

static void set_free(fwd_set *w)
{
    if (!w) return;
    for (int i = 0; i < w->n_members; i++) pp_gnn_fwd_free(w->f[i]);
    free(w);
}

void pp_gnn_pool_free(struct pp_gnn_pool *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) set_free(p->idle[i]);
    free(p->idle);
    for (int i = 0; p->wt && i < p->n_members; i++) free(p->wt[i]);
    free(p->wt);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* The ensemble's pool, made once (the first caller to publish it wins). */
static struct pp_gnn_pool *pool_of(const pp_gnn *m)
{
    struct pp_gnn_pool *p = atomic_load_explicit(&m->pool, memory_order_acquire);
    if (p) return p;
    p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->n_members = pp_gnn_members(m);
    p->wt = calloc((size_t)p->n_members, sizeof *p->wt);
    int i = 0;
    for (const pp_gnn *q = m; q && p->wt; q = q->next, i++)
        if (!(p->wt[i] = pp_gnn_weights_t(q))) {
            pp_gnn_pool_free(p);
            return NULL;
        }
    if (!p->wt) {
        pp_gnn_pool_free(p);
        return NULL;
    }
    struct pp_gnn_pool *expected = NULL;
    /* the pool is the model's cache, not its contents: written through a const model */
    pp_gnn *mm = (pp_gnn *)m;
    if (!atomic_compare_exchange_strong(&mm->pool, &expected, p)) {
        pp_gnn_pool_free(p);
        return expected;
    }
    return p;
}

/* An idle set that fits s, or a new one with a quarter more room than s: a search's graphs differ
 * a little in size, and a set grown to each new largest one was remade every few graphs (~0.6 M
 * instructions a member, the workspaces' zeroing). Idle sets too small for s are dropped with it:
 * a set that fits s serves the graphs they served. NULL with err set on OOM. */
static fwd_set *take(struct pp_gnn_pool *p, const pp_gnn *m, const pp_gnn_graph *s, pp_err *err)
{
    fwd_set *w = NULL, *small[8];
    int n_small = 0;
    pthread_mutex_lock(&p->lock);
    for (int i = p->n - 1; i >= 0; i--)
        if (pp_gnn_fwd_fits(p->idle[i]->f[0], s)) {
            w = p->idle[i];
            p->idle[i] = p->idle[--p->n];
            break;
        }
    if (!w) /* none fits: the ones too small go (a few at a time; the rest on later calls) */
        for (int i = p->n - 1; i >= 0 && n_small < 8; i--) {
            small[n_small++] = p->idle[i];
            p->idle[i] = p->idle[--p->n];
        }
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < n_small; i++) set_free(small[i]);
    if (w) return w;
    int cap_n = s->n_nodes < (1 << 28) ? s->n_nodes + s->n_nodes / 4 + 16 : s->n_nodes;
    int cap_e = s->n_edges < (1 << 28) ? s->n_edges + s->n_edges / 4 + 16 : s->n_edges;
    int n = pp_gnn_members(m);
    w = calloc(1, sizeof *w + (size_t)n * sizeof w->f[0]);
    if (!w) {
        pp_err_set(err, PERFPRED_ERR_NOMEM, "gnn: out of memory");
        return NULL;
    }
    w->n_members = n;
    int i = 0;
    for (const pp_gnn *q = m; q; q = q->next, i++)
    {
        if (pp_gnn_fwd_new(q, cap_n, cap_e, &w->f[i], err) != PERFPRED_OK) {
            set_free(w);
            return NULL;
        }
        pp_gnn_fwd_use_weights_t(w->f[i], p->wt[i]);
    }
    return w;
}

/* Back to the pool; a set that cannot be kept (OOM growing the list) is freed. */
static void give(struct pp_gnn_pool *p, fwd_set *w)
{
    pthread_mutex_lock(&p->lock);
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 4;
        fwd_set **idle = realloc(p->idle, (size_t)cap * sizeof *idle);
        if (idle) {
            p->idle = idle;
            p->cap = cap;
        }
    }
    if (p->n < p->cap) {
        p->idle[p->n++] = w;
        w = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    set_free(w);
}

static atomic_int use_reference;
void pp_gnn_use_reference(int on) { atomic_store(&use_reference, on != 0); }

perfpred_status pp_gnn_forward_fast(const pp_gnn *m, const pp_gnn_graph *s, double *out,
                                    double *lo, double *hi, pp_err *err)
{
    if (atomic_load_explicit(&use_reference, memory_order_relaxed))
        return pp_gnn_forward_range(m, s, out, lo, hi, err);
    if (!m || !s || !out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn: NULL argument");
    struct pp_gnn_pool *p = pool_of(m);
    if (!p) return pp_err_set(err, PERFPRED_ERR_NOMEM, "gnn: out of memory");
    fwd_set *w = take(p, m, s, err);
    if (!w) return err ? err->status : PERFPRED_ERR_NOMEM;
    perfpred_status st = PERFPRED_OK;
    int n = 0;
    /* the members' mean and range, accumulated as pp_gnn_forward_range does */
    for (const pp_gnn *q = m; q && !st; q = q->next, n++) {
        double o[PP_GNN_MAX_TARGETS];
        if (q->n_targets != m->n_targets) {
            st = pp_err_set(err, PERFPRED_ERR_MODEL,
                            "gnn: ensemble member %d predicts %d targets, the first %d", n + 1,
                            q->n_targets, m->n_targets);
            break;
        }
        /* the sample's arrays are checked once, by the first member; the others check widths
         * and take the first's classes of equal rows */
        st = n ? pp_gnn_fwd_run_member(q, w->f[n], w->f[0], s, o, err)
               : pp_gnn_fwd_run(q, w->f[n], s, out, err);
        if (st) break;
        for (int t = 0; t < m->n_targets; t++) {
            if (!n) {
                if (lo) lo[t] = out[t];
                if (hi) hi[t] = out[t];
                continue;
            }
            out[t] += o[t];
            if (lo && o[t] < lo[t]) lo[t] = o[t];
            if (hi && o[t] > hi[t]) hi[t] = o[t];
        }
    }
    for (int t = 0; !st && n > 1 && t < m->n_targets; t++) out[t] /= n;
    give(p, w);
    return st;
}
