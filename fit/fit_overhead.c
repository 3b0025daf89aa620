/* fit/fit_overhead.c: the in-network overhead correction, latency = scale x layer sum +
 * per_kernel x kernels + per_mb x megabytes moved + per_cold_weight_mb x megabytes of weights
 * beyond the last-level cache (include/perfpred_calibrate.h,
 * perfpred_calibrate_fit_overhead). The layer sums, kernel counts and kernel bytes of the rows are
 * eval's (perfpred_eval, layer sums only); held-out folds of model families judge it before it is
 * fitted on every row and written. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit/fit.h"
#include "predictor/calib.h"

perfpred_overhead_params perfpred_overhead_default_params(void)
{
    perfpred_overhead_params p;
    memset(&p, 0, sizeof p);
    return p;
}

enum { NT = PP_OVERHEAD_TERMS };

/* The columns of a row, each divided by the measured time: the relative error of x . (scale,
 * per_kernel_ms, per_mb_ms, per_cold_weight_mb_ms) is x . w - 1. */
static void row_terms(const perfpred_eval_point *p, double x[NT])
{
    x[0] = p->predicted_ms / p->measured_ms;
    x[1] = p->n_kernels / p->measured_ms;
    x[2] = p->kernel_bytes * 1e-6 / p->measured_ms;
    x[3] = p->cold_weight_bytes * 1e-6 / p->measured_ms;
}

int pp_fit_overhead_rows(const perfpred_eval_point *pt, const int *use, int n,
                         double w_out[PP_OVERHEAD_TERMS])
{
    double G[NT][NT] = {{0}}, g[NT] = {0};
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (use && !use[i]) continue;
        double x[NT];
        row_terms(&pt[i], x);
        for (int a = 0; a < NT; a++) {
            g[a] += x[a];
            for (int b = 0; b < NT; b++) G[a][b] += x[a] * x[b];
        }
        m++;
    }
    if (m < 2 || !(G[0][0] > 0)) return -1;
    /* the best subset whose figures a correction may state (predictor/calib.h's bounds), else
     * the best of any: the caller then finds it out of range and writes nothing */
    double best = INFINITY, best_any = INFINITY, w_any[NT] = {0};
    /* every subset of the optional terms (bit t - 1: term t) whose figures come out >= 0 */
    for (int mask = 0; mask < 1 << (NT - 1); mask++) {
        int idx[NT] = {0}, k = 1;
        for (int t = 1; t < NT; t++)
            if (mask >> (t - 1) & 1) idx[k++] = t;
        if (k > m) continue;
        double A[NT * NT], b[NT], v[NT], w[NT] = {0};
        for (int r = 0; r < k; r++) {
            b[r] = g[idx[r]];
            for (int c = 0; c < k; c++) A[r * k + c] = G[idx[r]][idx[c]];
        }
        if (pp_solve(k, A, b, v)) continue;
        int ok = 1;
        for (int r = 0; r < k; r++) {
            w[idx[r]] = v[r];
            if (r > 0 && !(v[r] >= 0)) ok = 0;
        }
        if (!ok) continue;
        /* sum (x.w - 1)^2 = w'Gw - 2 g.w + m */
        double sse = m;
        for (int a = 0; a < NT; a++) {
            sse -= 2 * g[a] * w[a];
            for (int b2 = 0; b2 < NT; b2++) sse += w[a] * G[a][b2] * w[b2];
        }
        int stated = w[0] >= PP_OVERHEAD_SCALE_MIN && w[0] <= PP_OVERHEAD_SCALE_MAX;
        for (int t = 1; t < NT; t++) stated &= w[t] <= PP_OVERHEAD_TERM_MAX_MS;
        if (stated && sse < best) {
            best = sse;
            memcpy(w_out, w, sizeof w);
        }
        if (sse < best_any) {
            best_any = sse;
            memcpy(w_any, w, sizeof w);
        }
    }
    if (!isfinite(best) && isfinite(best_any)) memcpy(w_out, w_any, sizeof w_any);
    return isfinite(best_any) ? 0 : -1;
}

/* What the correction w answers on row p, as the predictor applies it. */
static double corrected_ms(const perfpred_eval_point *p, const double w[NT])
{
    return pp_overhead_latency_ms(w, p->predicted_ms, p->n_kernels, p->kernel_bytes,
                                  p->cold_weight_bytes);
}

static double rel_err(const perfpred_eval_point *p, const double w[NT])
{
    return fabs(corrected_ms(p, w) / p->measured_ms - 1);
}

/* The held-out residuals: the layer sum on every row (layer models never see a whole network),
 * the correction on each fold's rows (fitted without them) where it ships (beats the layer sum). */
static perfpred_status collect_heldout(perfpred_heldout *h, const perfpred_eval_point *pt, int n,
                                       const double *ovh_ms, int ships, pp_err *err)
{
    for (int i = 0; h && i < n; i++) {
        perfpred_status st = perfpred_heldout_add(h, "layer", pt[i].label, pt[i].measured_ms,
                                                  pt[i].predicted_ms);
        if (!st && ships && ovh_ms[i] > 0)
            st = perfpred_heldout_add(h, "overhead", pt[i].label, pt[i].measured_ms, ovh_ms[i]);
        if (st == PERFPRED_ERR_NOMEM) return pp_err_set(err, st, "out of memory");
    }
    return PERFPRED_OK;
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
    cJSON_AddNumberToObject(o, "version", 3);
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "formula", "latency = scale x layer sum + per_kernel_ms x kernels + "
                            "per_mb_ms x 10^6 bytes the kernels move + per_cold_weight_mb_ms x "
                            "10^6 bytes of weights of the layers that fit the last-level cache "
                            "alone, where weights and peak live activations exceed it");
    cJSON_AddNumberToObject(o, "scale", r->scale);
    cJSON_AddNumberToObject(o, "per_kernel_ms", r->per_kernel_us * 1e-3);
    cJSON_AddNumberToObject(o, "per_mb_ms", r->per_mb_us * 1e-3);
    cJSON_AddNumberToObject(o, "per_cold_weight_mb_ms", r->per_cold_weight_mb_us * 1e-3);
    cJSON_AddStringToObject(o, "data", p->networks_csv);
    if (r->layer_models_of[0]) cJSON_AddStringToObject(o, "layer_models_of", r->layer_models_of);
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
    double *ovh_ms = NULL;
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
    /* whose layer models the eval summed: the correction goes over them and no others */
    snprintf(out->layer_models_of, sizeof out->layer_models_of, "%s", ev.source_device);
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
    if (!(use = calloc((size_t)n + 1, sizeof *use)) ||
        !(ovh_ms = calloc((size_t)n + 1, sizeof *ovh_ms))) {
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
            use[i] = !pp_measure_family_listed(fold, pt[i].group);
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
        double w[NT];
        if (pp_fit_overhead_rows(pt, use, n, w)) {
            st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "fold '%.*s': too few rows to fit",
                            (int)len, f);
            goto done;
        }
        double eb = 0, ec = 0;
        for (int i = 0; i < n; i++) {
            if (use[i]) continue;
            eb += fabs(pt[i].predicted_ms / pt[i].measured_ms - 1);
            ec += rel_err(&pt[i], w);
            ovh_ms[i] = corrected_ms(&pt[i], w);
        }
        F->n_rows = n_test;
        F->layer_sum_mape_pct = 100 * eb / n_test;
        F->corrected_mape_pct = 100 * ec / n_test;
        F->scale = w[0];
        F->per_kernel_us = w[1] * 1e3;
        F->per_mb_us = w[2] * 1e3;
        F->per_cold_weight_mb_us = w[3] * 1e3;
        sum_base += eb;
        sum_corr += ec;
        out->n_pooled += n_test;
        f += len;
        if (*f == ';') f++;
    }
    out->pooled_layer_sum_mape_pct = 100 * sum_base / out->n_pooled;
    out->pooled_corrected_mape_pct = 100 * sum_corr / out->n_pooled;
    for (int i = 0; i < n; i++) use[i] = 1;
    double w[NT];
    if (pp_fit_overhead_rows(pt, use, n, w)) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "too few rows to fit");
        goto done;
    }
    out->scale = w[0];
    out->per_kernel_us = w[1] * 1e3;
    out->per_mb_us = w[2] * 1e3;
    out->per_cold_weight_mb_us = w[3] * 1e3;
    /* what the predictor would refuse to read is not written (a descriptor far from the machine
     * the networks ran on puts the scale there) */
    out->out_of_range = !(w[0] >= PP_OVERHEAD_SCALE_MIN && w[0] <= PP_OVERHEAD_SCALE_MAX &&
                          w[1] <= PP_OVERHEAD_TERM_MAX_MS && w[2] <= PP_OVERHEAD_TERM_MAX_MS &&
                          w[3] <= PP_OVERHEAD_TERM_MAX_MS);
    int ships = out->pooled_corrected_mape_pct < out->pooled_layer_sum_mape_pct &&
                !out->out_of_range;
    if ((st = collect_heldout(p->heldout, pt, n, ovh_ms, ships, &err))) goto done;
    const char *cfg = p->config_dir ? p->config_dir : pp_default_config_dir();
    if (p->out_dir) snprintf(out->path, sizeof out->path, "%s/overhead-latency.json", p->out_dir);
    else
        snprintf(out->path, sizeof out->path, "%s/artifacts/%s/overhead-latency.json", cfg,
                 out->device);
    if (!p->dry_run && ships) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", out->path);
        *strrchr(dir, '/') = '\0';
        if ((st = pp_mkdir_p(dir, &err)) || (st = write_artifact(p, out, n, &err))) goto done;
        out->written = 1;
    }
done:
    free(use);
    free(ovh_ms);
    perfpred_eval_report_free(&ev);
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st;
}
