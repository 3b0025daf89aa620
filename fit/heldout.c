/* fit/heldout.c: the held-out residuals a fit collects, per answer path, and the interval
 * quantiles they give (predictor/interval.h), written beside the device's artifacts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predictor/interval.h"
#include "perfpred_calibrate.h"
#include "util/util.h"

struct perfpred_heldout {
    int n[PP_IPATH__COUNT], cap[PP_IPATH__COUNT];
    double *r[PP_IPATH__COUNT];   /* ln(measured / predicted) */
    unsigned *key[PP_IPATH__COUNT];
};

perfpred_heldout *perfpred_heldout_new(void) { return calloc(1, sizeof(perfpred_heldout)); }

void perfpred_heldout_free(perfpred_heldout *h)
{
    if (!h) return;
    for (int p = 0; p < PP_IPATH__COUNT; p++) {
        free(h->r[p]);
        free(h->key[p]);
    }
    free(h);
}

/* FNV-1a of the model name, mixed so that its low bit splits models evenly */
static unsigned model_key(const char *s)
{
    uint64_t x = pp_fnv1a64(s ? s : "", PP_FNV64_BASIS);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (unsigned)x;
}

perfpred_status perfpred_heldout_add(perfpred_heldout *h, const char *path, const char *model,
                                     double measured, double predicted)
{
    int p = pp_ipath_parse(path);
    if (!h || p < 0 || !(measured > 0) || !(predicted > 0) || !isfinite(measured) ||
        !isfinite(predicted))
        return PERFPRED_ERR_INVALID_ARG;
    if (h->n[p] == h->cap[p]) {
        int cap = h->cap[p] ? 2 * h->cap[p] : 256;
        double *r = realloc(h->r[p], (size_t)cap * sizeof *r);
        if (!r) return PERFPRED_ERR_NOMEM;
        h->r[p] = r;
        unsigned *k = realloc(h->key[p], (size_t)cap * sizeof *k);
        if (!k) return PERFPRED_ERR_NOMEM;
        h->key[p] = k;
        h->cap[p] = cap;
    }
    h->r[p][h->n[p]] = log(measured / predicted);
    h->key[p][h->n[p]] = model_key(model);
    h->n[p]++;
    return PERFPRED_OK;
}

/* The quantiles and the cross-fitted check of path p; -1 when too few rows, -2 out of memory. */
static int path_q(const perfpred_heldout *h, int p, pp_interval_q *q)
{
    memset(q, 0, sizeof *q);
    q->check_pct = NAN;
    int n = h ? h->n[p] : 0;
    if (n < PP_INTERVAL_MIN_ROWS) return -1;
    double *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp) return -2;
    memcpy(tmp, h->r[p], (size_t)n * sizeof *tmp);
    int rc = pp_interval_quantiles(tmp, n, PP_INTERVAL_COVERAGE, &q->log_lo, &q->log_hi);
    free(tmp);
    if (rc) return -1;
    q->n = n;
    q->coverage = PP_INTERVAL_COVERAGE;
    q->check_pct = pp_interval_crossfit(h->r[p], h->key[p], n, PP_INTERVAL_COVERAGE, &q->check_n);
    return 0;
}

perfpred_interval perfpred_heldout_interval(const perfpred_heldout *h, const char *path)
{
    perfpred_interval out;
    pp_interval_none(&out, NULL);
    int p = pp_ipath_parse(path);
    pp_interval_q q;
    if (p < 0 || path_q(h, p, &q)) return out;
    pp_interval_apply(&q, 1.0, pp_ipath_name(p), &out);
    out.source = NULL;
    return out;
}

perfpred_status perfpred_heldout_write(const perfpred_heldout *h, const char *device,
                                       const char *dir, const char *config_dir, const char *data,
                                       int *n_written, char *errbuf, size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    if (n_written) *n_written = 0;
    if (!h || !device) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "perfpred_heldout_write: NULL argument");
        goto done;
    }
    pp_interval_q q[PP_IPATH__COUNT];
    int paths[PP_IPATH__COUNT], n = 0;
    for (int p = 0; p < PP_IPATH__COUNT; p++) {
        int rc = path_q(h, p, &q[n]);
        if (rc == -2) {
            st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
            goto done;
        }
        if (rc) continue;
        snprintf(q[n].source, sizeof q[n].source, "%s", data ? data : "");
        paths[n++] = p;
    }
    if (n == 0) goto done;
    char out_dir[4096];
    if (dir) {
        snprintf(out_dir, sizeof out_dir, "%s", dir);
    } else {
        perfpred_ctx_params cp = perfpred_ctx_default_params();
        cp.config_dir = config_dir;
        char e2[512];
        perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, e2, sizeof e2);
        perfpred_device_info info;
        if (!ctx) {
            st = pp_err_set(&err, st, "%s", e2);
            goto done;
        }
        if (perfpred_device_find(ctx, device, &info)) {
            perfpred_ctx_close(ctx);
            st = pp_err_set(&err, PERFPRED_ERR_DEVICE, "unknown device '%s'", device);
            goto done;
        }
        snprintf(out_dir, sizeof out_dir, "%s/artifacts/%s",
                 config_dir ? config_dir : pp_default_config_dir(), info.name);
        perfpred_ctx_close(ctx);
    }
    st = pp_interval_write(out_dir, device, q, paths, n, &err);
    if (!st && n_written) *n_written = n;
done:
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st;
}
