/* predictor/many.c: perfpred_predict_many, many models or architectures on many devices and batch
 * sizes for searches: workers take items in turn, build each once per batch (an .onnx file or an
 * architecture string through the calibration module's ref builder) and predict it on every
 * device on their own thread; rows stream to the caller's callback under one lock. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/builders.h"
#include "perfpred.h"

perfpred_many_params perfpred_many_default_params(void)
{
    perfpred_many_params p;
    memset(&p, 0, sizeof p);
    p.threads = 1;
    return p;
}

typedef struct run {
    const perfpred_ctx *ctx;
    const perfpred_many_params *p;
    atomic_int next;      /* next item to take */
    atomic_int stop;      /* a callback asked to stop */
    pthread_mutex_t lock; /* around on_row and n_failed */
    int n_failed;
} run;

static int emit(run *r, const perfpred_many_row *row)
{
    pthread_mutex_lock(&r->lock);
    if (row->status != PERFPRED_OK) r->n_failed++;
    int stop = atomic_load(&r->stop) ? 1 : r->p->on_row(row, r->p->user);
    if (stop) atomic_store(&r->stop, 1);
    pthread_mutex_unlock(&r->lock);
    return stop;
}

/* "|...|" alone is a NAS-Bench-201 cell; anything else goes to the ref builder as it is. */
static perfpred_status build(const char *item, int64_t batch, pp_node_memo *memo,
                             perfpred_model **out, pp_err *err)
{
    char ref[1024];
    if (item[0] == '|') {
        if (snprintf(ref, sizeof ref, "nb201:%s", item) >= (int)sizeof ref)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "'%.60s...': too long", item);
        item = ref;
    }
    pp_shape_opts o = {.batch = batch, .memo = memo};
    pp_graph *g = NULL;
    perfpred_status st = pp_net_graph_from_ref(item, &o, &g, err);
    if (st) {
        pp_graph_free(g);
        return st;
    }
    *out = pp_model_wrap(g);
    if (!*out) {
        pp_graph_free(g);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    return PERFPRED_OK;
}

static void do_item(run *r, int i, pp_node_memo *memo)
{
    const perfpred_many_params *p = r->p;
    int nb = p->n_batches > 0 ? p->n_batches : 1;
    for (int b = 0; b < nb && !atomic_load(&r->stop); b++) {
        perfpred_many_row row = {.item = i, .item_text = p->items[i]};
        row.batch = p->n_batches > 0 ? p->batches[b] : 1;
        perfpred_model *m = NULL;
        pp_err err = {0};
        perfpred_status st = build(p->items[i], row.batch, memo, &m, &err);
        for (int d = 0; d < p->n_devices; d++) {
            perfpred_prediction pred;
            char msg[PP_ERR_MSG];
            row.device = p->devices[d];
            row.status = st;
            row.error = st ? err.msg : NULL;
            row.pred = NULL;
            if (!st) {
                row.status = perfpred_predict(r->ctx, m, p->devices[d], p->predict, &pred, msg,
                                              sizeof msg);
                row.error = row.status ? msg : NULL;
                row.pred = row.status ? NULL : &pred;
            }
            if (emit(r, &row)) break;
        }
        perfpred_model_free(m);
    }
}

/* Each worker keeps its own node memo: the networks of a search repeat a few layers, whose shapes
 * and features it computes once (NULL, out of memory: every network computes them). */
static void *worker(void *arg)
{
    run *r = arg;
    pp_node_memo *memo = pp_node_memo_new();
    while (!atomic_load(&r->stop)) {
        int i = atomic_fetch_add(&r->next, 1);
        if (i >= r->p->n_items) break;
        do_item(r, i, memo);
    }
    pp_node_memo_free(memo);
    return NULL;
}

static perfpred_status fail(char *errbuf, size_t len, perfpred_status st, const char *msg)
{
    if (errbuf && len) snprintf(errbuf, len, "predict-many: %s", msg);
    return st;
}

perfpred_status perfpred_predict_many(const perfpred_ctx *ctx, const perfpred_many_params *p,
                                      int *n_failed, char *errbuf, size_t errbuf_len)
{
    if (n_failed) *n_failed = 0;
    if (!ctx || !p || !p->on_row || (p->n_items > 0 && !p->items) || p->n_items < 0)
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG, "NULL context, params or on_row");
    if (p->n_devices < 1 || !p->devices)
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG, "no devices");
    if (p->n_batches < 0 || (p->n_batches > 0 && !p->batches))
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG, "bad batch list");
    for (int b = 0; b < p->n_batches; b++)
        if (p->batches[b] < 1)
            return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG, "batch sizes must be >= 1");
    if (p->threads < 1 || p->threads > 1024)
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG, "threads must be 1..1024");
    /* an unknown device is the caller's error once, not a failed row per item */
    for (int d = 0; d < p->n_devices; d++) {
        perfpred_device_info info;
        if (perfpred_device_find(ctx, p->devices[d], &info) != PERFPRED_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown device '%s'", p->devices[d]);
            return fail(errbuf, errbuf_len, PERFPRED_ERR_DEVICE, msg);
        }
    }
    run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.p = p;
    atomic_init(&r.next, 0);
    atomic_init(&r.stop, 0);
    if (pthread_mutex_init(&r.lock, NULL) != 0)
        return fail(errbuf, errbuf_len, PERFPRED_ERR_NOMEM, "cannot create a mutex");
    int nt = p->threads < p->n_items ? p->threads : (p->n_items > 0 ? p->n_items : 1);
    pthread_t *th = nt > 1 ? calloc((size_t)nt - 1, sizeof *th) : NULL;
    int started = 0;
    if (nt > 1 && !th) nt = 1; /* out of memory for the pool: run on the calling thread */
    for (int t = 0; t < nt - 1; t++, started++)
        if (pthread_create(&th[t], NULL, worker, &r) != 0) break;
    worker(&r);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    free(th);
    pthread_mutex_destroy(&r.lock);
    if (n_failed) *n_failed = r.n_failed;
    return PERFPRED_OK;
}
