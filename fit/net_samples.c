/* fit/net_samples.c: the built networks a graph-level fit shares between its rows (netsets.h,
 * "Built networks"): one GNN sample per (model ref, batch, input shapes), built once on a device;
 * the rows' family buckets and seeded orders. fit_networks.c and lab/fewshot.c use them. */
#include <stdlib.h>
#include <string.h>

#include "fit/fit.h"

static uint64_t sample_hash(const char *model, const char *shapes, int64_t batch)
{
    uint64_t h = pp_fnv1a64(shapes ? shapes : "", pp_fnv1a64(model, PP_FNV64_BASIS));
    return (h ^ (uint64_t)batch) * 1099511628211ull;
}

void pp_fit_netsample_cache_free(pp_fit_netsample_cache *c)
{
    for (int i = 0; i < c->n; i++) pp_gnn_graph_clear(&c->e[i].s);
    free(c->e);
    free(c->slot);
    memset(c, 0, sizeof *c);
}

/* Index of the entry for a row (created in state PP_NS_NEW when absent), -1 on OOM. */
int pp_fit_netsample_cache_get(pp_fit_netsample_cache *c, const pp_net_row *r)
{
    const char *shapes = r->input_shapes ? r->input_shapes : "";
    if ((size_t)(c->n + 1) * 2 > c->nslot) {
        size_t ns = c->nslot ? c->nslot * 2 : 1024;
        int *sl = calloc(ns, sizeof *sl);
        if (!sl) return -1;
        for (int i = 0; i < c->n; i++) {
            size_t h = sample_hash(c->e[i].model, c->e[i].shapes, c->e[i].batch) & (ns - 1);
            while (sl[h]) h = (h + 1) & (ns - 1);
            sl[h] = i + 1;
        }
        free(c->slot);
        c->slot = sl;
        c->nslot = ns;
    }
    size_t h = sample_hash(r->model, shapes, r->batch) & (c->nslot - 1);
    while (c->slot[h]) {
        pp_fit_netsample *e = &c->e[c->slot[h] - 1];
        if (e->batch == r->batch && !strcmp(e->model, r->model) && !strcmp(e->shapes, shapes))
            return c->slot[h] - 1;
        h = (h + 1) & (c->nslot - 1);
    }
    if (c->n == c->cap) {
        int nc = c->cap ? 2 * c->cap : 256;
        pp_fit_netsample *ne = realloc(c->e, (size_t)nc * sizeof *ne);
        if (!ne) return -1;
        c->e = ne;
        c->cap = nc;
    }
    pp_fit_netsample *e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    e->model = r->model;
    e->shapes = shapes;
    e->batch = r->batch;
    c->slot[h] = c->n + 1;
    return c->n++;
}

/* Copies s into out[n], cut short if it does not fit. */
static void copy_cut(char *out, size_t n, const char *s)
{
    size_t l = strlen(s);
    if (l >= n) l = n - 1;
    memcpy(out, s, l);
    out[l] = '\0';
}

/* Builds an entry's sample on device (once). Failures are recorded in the entry, not returned:
 * the caller counts them; only OOM and a device without latency stop the fit. */
perfpred_status pp_fit_netsample_build(const perfpred_ctx *ctx, pp_fit_netsample *e,
                                       const pp_net_row *r, const char *table_path,
                                       const char *device, char *fail, size_t fail_n, pp_err *err)
{
    if (e->state != PP_NS_NEW) return PERFPRED_OK;
    pp_err e2 = {0};
    pp_graph *g = NULL;
    perfpred_status st = pp_datasets_net_graph(r, table_path, &g, &e2);
    if (st == PERFPRED_ERR_UNSUPPORTED && pp_net_ref_is_builtin(r->model) &&
        (strstr(r->model, ";fold") || strstr(r->model, ";prune"))) {
        e->state = PP_NS_CONSTANT;
        return PERFPRED_OK;
    }
    if (st == PERFPRED_ERR_NOMEM) return pp_err_set(err, st, "%s", e2.msg);
    if (st) {
        e->state = PP_NS_FAILED;
        if (fail && !fail[0]) copy_cut(fail, fail_n, e2.msg);
        return PERFPRED_OK;
    }
    perfpred_model *m = pp_model_wrap(g);
    if (!m) {
        pp_graph_free(g);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    st = pp_fit_net_sample(ctx, m, device, &e->s, &e->sum, &e2);
    perfpred_model_free(m);
    if (st == PERFPRED_ERR_DEVICE || st == PERFPRED_ERR_NOMEM)
        return pp_err_set(err, st, "%s", e2.msg);
    if (st) {
        e->state = PP_NS_FAILED;
        if (fail && !fail[0]) copy_cut(fail, fail_n, e2.msg);
        return PERFPRED_OK;
    }
    e->state = PP_NS_OK;
    return PERFPRED_OK;
}

/* Bucket 0..99 of a row: its family's hash bucket, else a hash of the family name. */
int pp_fit_net_row_bucket(const pp_net_row *r)
{
    int b = pp_datasets_family_bucket(r->family);
    return b >= 0 ? b : (int)(pp_fnv1a64(r->family ? r->family : "", PP_FNV64_BASIS) % 100);
}

int pp_fit_net_cmp_keyed(const void *a, const void *b)
{
    const pp_fit_net_keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->idx - y->idx;
}

perfpred_status pp_fit_net_open_ctx(const char *config_dir, perfpred_ctx **ctx, pp_err *err)
{
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = config_dir;
    perfpred_status st;
    char msg[PP_ERR_MSG];
    *ctx = perfpred_ctx_open(&cp, &st, msg, sizeof msg);
    return *ctx ? PERFPRED_OK : pp_err_set(err, st, "%s", msg);
}