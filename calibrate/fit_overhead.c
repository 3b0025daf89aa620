/* calibrate/fit_overhead.c: the in-network overhead correction, latency = scale x layer sum +
 * per_kernel x kernels (include/perfpred.h, perfpred_calibrate_fit_overhead). The layer sums and
 * kernel counts of the rows are eval's (perfpred_eval, layer sums only); held-out folds of model
 * families judge it before it is fitted on every row and written. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calibrate/calibrate.h"

perfpred_overhead_params perfpred_overhead_default_params(void)
{
    perfpred_overhead_params p;
    memset(&p, 0, sizeof p);
    return p;
}

/* scale and per-kernel ms minimising sum_i (scale s_i / m_i + c k_i / m_i - 1)^2 over rows with
 * use[i], c >= 0 (a negative c refits the scale alone). 0 ok, -1 too few rows. */
static int fit_rows(const perfpred_eval_point *pt, const int *use, int n, double *scale, double *c)
{
    double aa = 0, ab = 0, bb = 0, a1 = 0, b1 = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!use[i]) continue;
        double a = pt[i].predicted_ms / pt[i].measured_ms, b = pt[i].n_kernels / pt[i].measured_ms;
        aa += a * a;
        ab += a * b;
        bb += b * b;
        a1 += a;
        b1 += b;
        m++;
    }
    if (m < 2 || !(aa > 0)) return -1;
    double det = aa * bb - ab * ab;
    *c = -1;
    if (det > 1e-12 * aa * bb) {
        *scale = (a1 * bb - b1 * ab) / det;
        *c = (aa * b1 - ab * a1) / det;
    }
    if (!(*c >= 0)) {
        *scale = a1 / aa;
        *c = 0;
    }
    return 0;
}

static double rel_err(const perfpred_eval_point *p, double scale, double c)
{
    return fabs((scale * p->predicted_ms + c * p->n_kernels) / p->measured_ms - 1);
}

static perfpred_status write_artifact(const perfpred_overhead_params *p,
                                      const perfpred_overhead_report *r, int n_rows, pp_err *err)
{
    cJSON *o = cJSON_CreateObject(), *folds = cJSON_CreateArray();
    if (!o || !folds) {
        cJSON_Delete(o);
        cJSON_Delete(folds);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    cJSON_AddStringToObject(o, "format", "perfpred-overhead");
    cJSON_AddNumberToObject(o, "version", 1);
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "formula", "latency = scale x layer sum + per_kernel_ms x kernels");
    cJSON_AddNumberToObject(o, "scale", r->scale);
    cJSON_AddNumberToObject(o, "per_kernel_ms", r->per_kernel_us * 1e-3);
    cJSON_AddStringToObject(o, "data", p->networks_csv);
    cJSON_AddNumberToObject(o, "rows", n_rows);
    cJSON_AddItemToObject(o, "heldout_folds", folds);
    for (int k = 0; k < r->n_folds; k++) {
        const perfpred_overhead_fold *f = &r->folds[k];
        cJSON *j = cJSON_CreateObject();
        if (!j) break;
        cJSON_AddStringToObject(j, "families", f->families);
        cJSON_AddNumberToObject(j, "rows", f->n_rows);
        cJSON_AddNumberToObject(j, "layer_sum_mape_pct", f->layer_sum_mape_pct);
        cJSON_AddNumberToObject(j, "corrected_mape_pct", f->corrected_mape_pct);
        cJSON_AddItemToArray(folds, j);
    }
    cJSON_AddNumberToObject(o, "pooled_layer_sum_mape_pct", r->pooled_layer_sum_mape_pct);
    cJSON_AddNumberToObject(o, "pooled_corrected_mape_pct", r->pooled_corrected_mape_pct);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = pp_write_file_atomic(r->path, text, strlen(text), err);
    free(text);
    return st;
}

perfpred_status perfpred_calibrate_fit_overhead(const perfpred_overhead_params *p,
                                                perfpred_overhead_report *out, char *errbuf,
                                                size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    perfpred_eval_report ev;
    memset(&ev, 0, sizeof ev);
    int *use = NULL;
    if (!p || !out || !p->device || !p->networks_csv || !p->folds || !*p->folds) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "fit overhead: device, a network CSV and "
                        "held-out family folds (\"a,b;c;d\") are required");
        goto done;
    }
    memset(out, 0, sizeof *out);
    perfpred_eval_params ep = perfpred_eval_default_params();
    ep.device = p->device;
    ep.networks_csv = p->networks_csv;
    ep.config_dir = p->config_dir;
    ep.group_by = "family";
    ep.layer_sum_only = 1;
    char ebuf[1024];
    if ((st = perfpred_eval(&ep, &ev, ebuf, sizeof ebuf))) {
        pp_err_set(&err, st, "%s", ebuf);
        goto done;
    }
    snprintf(out->device, sizeof out->device, "%s", ev.device);
    out->n_rows_read = ev.n_points + ev.n_failed;
    out->n_used = ev.n_points;
    out->n_failed = ev.n_failed;
    if (ev.n_msgs) snprintf(out->first_failure, sizeof out->first_failure, "%s", ev.msgs[0]);
    const perfpred_eval_point *pt = ev.points;
    int n = ev.n_points;
    for (int i = 0; i < n; i++)
        if (!(pt[i].measured_ms > 0) || !(pt[i].predicted_ms > 0)) {
            st = pp_err_set(&err, PERFPRED_ERR_PARSE, "%s:%d: no positive latency or layer sum",
                            p->networks_csv, pt[i].line);
            goto done;
        }
    if (!(use = calloc((size_t)n + 1, sizeof *use))) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    double sum_base = 0, sum_corr = 0;
    for (const char *f = p->folds; *f;) {
        size_t len = strcspn(f, ";");
        if (out->n_folds == PERFPRED_MAX_FOLDS) {
            st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "at most %d folds", PERFPRED_MAX_FOLDS);
            goto done;
        }
        perfpred_overhead_fold *F = &out->folds[out->n_folds++];
        snprintf(F->families, sizeof F->families, "%.*s", (int)len, f);
        char *fold = strndup(f, len);
        if (!fold) {
            st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
            goto done;
        }
        int n_test = 0;
        for (int i = 0; i < n; i++) {
            use[i] = !pp_family_listed(fold, pt[i].group);
            n_test += !use[i];
        }
        free(fold);
        if (n_test == 0 || n_test == n) {
            st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG,
                            "%s: fold '%.*s' holds out %d of %d rows of %s (a family name with "
                            "no rows, or every row)", p->networks_csv, (int)len, f, n_test, n,
                            out->device);
            goto done;
        }
        double sc, c;
        if (fit_rows(pt, use, n, &sc, &c)) {
            st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "fold '%.*s': too few rows to fit",
                            (int)len, f);
            goto done;
        }
        double eb = 0, ec = 0;
        for (int i = 0; i < n; i++) {
            if (use[i]) continue;
            eb += fabs(pt[i].predicted_ms / pt[i].measured_ms - 1);
            ec += rel_err(&pt[i], sc, c);
        }
        F->n_rows = n_test;
        F->layer_sum_mape_pct = 100 * eb / n_test;
        F->corrected_mape_pct = 100 * ec / n_test;
        F->scale = sc;
        F->per_kernel_us = c * 1e3;
        sum_base += eb;
        sum_corr += ec;
        out->n_pooled += n_test;
        f += len;
        if (*f == ';') f++;
    }
    out->pooled_layer_sum_mape_pct = 100 * sum_base / out->n_pooled;
    out->pooled_corrected_mape_pct = 100 * sum_corr / out->n_pooled;
    for (int i = 0; i < n; i++) use[i] = 1;
    double sc, c;
    if (fit_rows(pt, use, n, &sc, &c)) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "too few rows to fit");
        goto done;
    }
    out->scale = sc;
    out->per_kernel_us = c * 1e3;
    const char *cfg = p->config_dir ? p->config_dir : pp_default_config_dir();
    if (p->out_dir) snprintf(out->path, sizeof out->path, "%s/overhead-latency.json", p->out_dir);
    else
        snprintf(out->path, sizeof out->path, "%s/artifacts/%s/overhead-latency.json", cfg,
                 out->device);
    if (!p->dry_run && out->pooled_corrected_mape_pct < out->pooled_layer_sum_mape_pct) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", out->path);
        *strrchr(dir, '/') = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            st = pp_err_set(&err, PERFPRED_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
            goto done;
        }
        if ((st = write_artifact(p, out, n, &err))) goto done;
        out->written = 1;
    }
done:
    free(use);
    perfpred_eval_report_free(&ev);
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st;
}
