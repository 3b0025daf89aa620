/* cli/calibrate_fit.c: `perfpred calibrate fit`: layer models (--layers, --rescale-layers,
 * --neusight), the graph-level GNN correction (--networks, one fit or family folds) and the
 * in-network overhead correction (--overhead), each printed as a table of held-out errors or as one
 * JSON object. cli_netfit also judges a saved correction for `perfpred eval --gnn-heldout`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
/* --------------------------------------------------------------------- fit ---- */

static void print_netfit_row(const char *what, const perfpred_metrics *m)
{
    if (m->n > 0)
        printf("  %-30s %6d %8.2f %8.2f %9.1f %9.4f\n", what, m->n, m->mape_pct, m->rmspe_pct,
               m->within10_pct, m->spearman);
}

/* What a gated row takes (perfpred_netfit_target.n_fallback_fit), for text output. */
static void gated_take(const perfpred_netfit_target *t, char *out, size_t n)
{
    if (t->n_fallback_fit > 0)
        snprintf(out, n, "the overhead correction refitted on the %d rows outside the held-out "
                 "ones: %.3f x layer sum + %.2f us per kernel + %.2f us per MB + %.2f us per MB "
                 "of cold weights", t->n_fallback_fit, t->fallback_scale,
                 t->fallback_per_kernel_us, t->fallback_per_mb_us,
                 t->fallback_per_cold_weight_mb_us);
    else
        snprintf(out, n, "the layer sum");
}

/* An ensemble's gate (perfpred_netfit_target.spread_gate): the rows it sent to the predictor's
 * answer without the correction, and the error had every row taken the correction. */
static void print_gate(const perfpred_netfit_target *t)
{
    if (!(t->spread_gate > 0)) return;
    char take[256];
    gated_take(t, take, sizeof take);
    print_netfit_row("  every row corrected", &t->ungated);
    printf("  (%d of %d rows were gated: their GNNs' log corrections spread wider than the "
           "%.4f of the validation rows; they took %s, as the predictor does)\n",
           t->n_gated, t->n_heldout, t->spread_gate, take);
}

static void add_gate_json(cJSON *j, const perfpred_netfit_target *t)
{
    if (!(t->spread_gate > 0)) return;
    cJSON_AddNumberToObject(j, "spread_gate", t->spread_gate);
    cJSON_AddNumberToObject(j, "rows_gated", t->n_gated);
    cJSON *g = cJSON_AddObjectToObject(j, "gated_rows_take");
    if (g && t->n_fallback_fit > 0) {
        cJSON_AddStringToObject(g, "what", "the overhead correction, refitted on the device's rows "
                                "outside the held-out ones");
        cJSON_AddNumberToObject(g, "rows", t->n_fallback_fit);
        cJSON_AddNumberToObject(g, "scale", t->fallback_scale);
        cJSON_AddNumberToObject(g, "per_kernel_us", t->fallback_per_kernel_us);
        cJSON_AddNumberToObject(g, "per_mb_us", t->fallback_per_mb_us);
        cJSON_AddNumberToObject(g, "per_cold_weight_mb_us", t->fallback_per_cold_weight_mb_us);
    } else if (g) {
        cJSON_AddStringToObject(g, "what", "the layer sum");
    }
    cJSON_AddItemToObject(j, "corrected_every_row", cli_json_metrics(&t->ungated));
}

/* --heldout-families "a,b;c;d,e": one dry-run fit per ';'-separated fold, each fold's families held
 * out once, and the MAPE and share within +-10 % pooled over all folds' held-out rows (means
 * weighted by rows: exact, since each row is held out in one fold only). Latency only. */
static int netfit_folds(const perfpred_netfit_params *base, const char *folds, int json)
{
    const char *source = base->source;
    enum { MAX_FOLDS = 32 };
    char buf[4096], *fold[MAX_FOLDS];
    int nf = 0;
    if (snprintf(buf, sizeof buf, "%s", folds) >= (int)sizeof buf) {
        cli_error("--heldout-families: too long");
        return EXIT_USAGE;
    }
    int n_sep = 0;
    for (const char *q = folds; *q; q++) n_sep += *q == ';';
    if (n_sep >= MAX_FOLDS) {
        cli_error("--heldout-families: at most %d folds", MAX_FOLDS);
        return EXIT_USAGE;
    }
    for (char *q = buf, *e; q; q = e ? e + 1 : NULL) {
        e = strchr(q, ';');
        if (e) *e = '\0';
        if (!*q) {
            cli_error("--heldout-families: empty fold in '%s'", folds);
            return EXIT_USAGE;
        }
        fold[nf++] = q;
    }
    perfpred_netfit_report *r = calloc((size_t)nf, sizeof *r);
    perfpred_heldout *h = perfpred_heldout_new();
    if (!r || !h) {
        free(r);
        perfpred_heldout_free(h);
        return EXIT_INTERNAL;
    }
    for (int k = 0; k < nf; k++) {
        perfpred_netfit_params p = *base;
        p.heldout_families = fold[k];
        p.dry_run = 1;
        p.heldout = h;
        char err[1024] = "";
        perfpred_status st = perfpred_calibrate_fit_networks(&p, &r[k], err, sizeof err);
        if (st) {
            cli_error("fold %d (%s): %s", k + 1, fold[k], err);
            free(r);
            perfpred_heldout_free(h);
            return cli_exit_code(st);
        }
    }
    char data[640];
    snprintf(data, sizeof data, "%s rows of %s, %d folds of held-out families (perfpred calibrate "
             "fit --networks ... --heldout-families \"%.300s\")", source, r[0].device, nf, folds);
    int rc = EXIT_OK_;
    /* pooled: sum of n * metric over folds / sum of n */
    double pool[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
    int pool_n[4] = {0, 0, 0, 0}, n_gated = 0, gated = 0;
    for (int k = 0; k < nf; k++) {
        const perfpred_metrics *m[4] = {&r[k].latency.layer_sum, &r[k].latency.direct,
                                        &r[k].latency.corrected, &r[k].latency.ungated};
        n_gated += r[k].latency.n_gated;
        gated |= r[k].latency.spread_gate > 0;
        for (int a = 0; a < 4; a++) {
            if (m[a]->n <= 0) continue;
            pool[a][0] += m[a]->n * m[a]->mape_pct;
            pool[a][1] += m[a]->n * m[a]->within10_pct;
            pool_n[a] += m[a]->n;
        }
    }
    static const char *const what[4] = {"layer_sum", "gnn_direct", "corrected",
                                        "corrected_every_row"};
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r[0].device);
        cJSON_AddStringToObject(o, "source", source);
        cJSON *fs = cJSON_AddArrayToObject(o, "folds");
        for (int k = 0; k < nf; k++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "heldout_families", fold[k]);
            cJSON_AddNumberToObject(f, "heldout_rows", r[k].latency.n_heldout);
            cJSON_AddItemToObject(f, "layer_sum", cli_json_metrics(&r[k].latency.layer_sum));
            if (r[k].latency.direct.n > 0)
                cJSON_AddItemToObject(f, "gnn_direct", cli_json_metrics(&r[k].latency.direct));
            cJSON_AddItemToObject(f, "corrected", cli_json_metrics(&r[k].latency.corrected));
            add_gate_json(f, &r[k].latency);
            cJSON_AddItemToArray(fs, f);
        }
        cJSON *pl = cJSON_AddObjectToObject(o, "pooled");
        for (int a = 0; a < 4; a++) {
            if (!pool_n[a] || (a == 3 && !gated)) continue;
            cJSON *j = cJSON_AddObjectToObject(pl, what[a]);
            cJSON_AddNumberToObject(j, "n", pool_n[a]);
            cJSON_AddNumberToObject(j, "mape_pct", pool[a][0] / pool_n[a]);
            cJSON_AddNumberToObject(j, "within10_pct", pool[a][1] / pool_n[a]);
        }
        cJSON_AddItemToObject(o, "intervals", cli_intervals(h, r[0].device, base->config_dir,
                                                            base->out_dir, data, !base->dry_run,
                                                            1, &rc));
        cli_print_json(o);
    } else {
        printf("calibrate fit (dry run, %d family folds): graph-level correction of %s from %s\n\n",
               nf, r[0].device, source);
        printf("latency MAPE %% on each fold's held-out families (never trained on):\n");
        printf("  %-56s %6s %10s %10s %12s", "held-out families", "rows", "layer sum",
               "GNN alone", "sum x corr.");
        if (gated) printf(" %8s %10s", "gated", "every row");
        printf("\n");
        for (int k = 0; k < nf; k++) {
            const perfpred_netfit_target *t = &r[k].latency;
            printf("  %-56.56s %6d %10.2f ", fold[k], t->n_heldout, t->layer_sum.mape_pct);
            if (t->direct.n > 0) printf("%10.2f", t->direct.mape_pct);
            else printf("%10s", "-");
            printf(" %12.2f", t->corrected.mape_pct);
            if (gated) printf(" %8d %10.2f", t->n_gated, t->ungated.mape_pct);
            printf("\n");
        }
        printf("  %-56s %6d %10.2f ", "pooled", pool_n[0], pool_n[0] ? pool[0][0] / pool_n[0] : 0);
        if (pool_n[1]) printf("%10.2f", pool[1][0] / pool_n[1]);
        else printf("%10s", "-");
        printf(" %12.2f", pool_n[2] ? pool[2][0] / pool_n[2] : 0);
        if (gated) printf(" %8d %10.2f", n_gated, pool_n[3] ? pool[3][0] / pool_n[3] : 0);
        printf("\n");
        if (gated) {
            printf("\ngated: rows whose GNNs' log corrections spread wider than on any validation "
                   "row; they take what the predictor answers there (\"every row\": every row "
                   "corrected):\n");
            for (int k = 0; k < nf; k++) {
                char take[256];
                gated_take(&r[k].latency, take, sizeof take);
                printf("  fold %d: %s\n", k + 1, take);
            }
        }
        printf("\nlatency intervals from the folds' held-out rows (what the predictor answers):\n");
        cli_intervals_print(h, r[0].device, base->config_dir, base->out_dir, data, !base->dry_run,
                            &rc);
        printf("\nno GNN written: folds are an evaluation; train the artifact with one "
               "--heldout-families list%s\n", base->dry_run ? " (dry run: no intervals either)" : "");
    }
    free(r);
    perfpred_heldout_free(h);
    return rc;
}

/* calibrate fit --networks SRC (train) and eval --gnn-heldout SRC (judge the saved correction) */
int cli_netfit(const perfpred_netfit_params *params, int json, int write_intervals)
{
    const char *source = params->source, *heldout_families = params->heldout_families;
    const int evaluate_only = params->evaluate_only;
    perfpred_netfit_report *r = calloc(1, sizeof *r);
    perfpred_heldout *h = perfpred_heldout_new();
    if (!r || !h) {
        free(r);
        perfpred_heldout_free(h);
        return EXIT_INTERNAL;
    }
    perfpred_netfit_params pp = *params;
    pp.heldout = h;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_fit_networks(&pp, r, err, sizeof err);
    if (st) {
        cli_error("%s", err);
        free(r);
        perfpred_heldout_free(h);
        return cli_exit_code(st);
    }
    /* training writes the intervals of its held-out rows with its artifact; judging a saved
     * artifact writes them only when asked (eval --write-intervals) */
    int write = evaluate_only ? write_intervals : !params->dry_run;
    char data[640];
    snprintf(data, sizeof data, "%s rows of %s held out by %s (perfpred %s)", source, r->device,
             heldout_families ? heldout_families : "family hash bucket",
             evaluate_only ? "eval --gnn-heldout" : "calibrate fit --networks");
    int rc = EXIT_OK_;
    const perfpred_netfit_target *T[2] = {&r->latency, &r->energy};
    const char *names[2] = {"latency", "energy"};
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r->device);
        cJSON_AddStringToObject(o, "source", source);
        if (heldout_families) cJSON_AddStringToObject(o, "heldout_families", heldout_families);
        cJSON_AddNumberToObject(o, "rows", r->n_rows);
        cJSON_AddNumberToObject(o, "rows_used", r->n_used);
        cJSON_AddNumberToObject(o, "rows_failed", r->n_failed);
        for (int t = 0; t < 2; t++) {
            if (!T[t]->present) continue;
            cJSON *j = cJSON_AddObjectToObject(o, names[t]);
            cJSON_AddNumberToObject(j, "heldout_rows", T[t]->n_heldout);
            cJSON_AddItemToObject(j, "layer_sum", cli_json_metrics(&T[t]->layer_sum));
            if (T[t]->direct.n > 0)
                cJSON_AddItemToObject(j, "gnn_direct", cli_json_metrics(&T[t]->direct));
            cJSON_AddItemToObject(j, "corrected", cli_json_metrics(&T[t]->corrected));
            add_gate_json(j, T[t]);
        }
        if (r->weights_path[0]) cJSON_AddStringToObject(o, "artifact", r->weights_path);
        if (!evaluate_only) {
            cJSON *v = cJSON_AddObjectToObject(o, "validation");
            cJSON_AddNumberToObject(v, "rows", r->n_val);
            cJSON_AddNumberToObject(v, "best_epoch", r->best_epoch);
            cJSON_AddNumberToObject(v, "epochs_run", r->epochs_run);
            if (r->val_rmse_latency >= 0)
                cJSON_AddNumberToObject(v, "rmse_log_latency", r->val_rmse_latency);
            if (r->val_mae_latency >= 0)
                cJSON_AddNumberToObject(v, "mae_log_latency", r->val_mae_latency);
            cJSON_AddStringToObject(v, "criterion", params->huber_delta > 0 ? "mae" : "mse");
            cJSON_AddNumberToObject(v, "huber_delta", params->huber_delta);
            cJSON_AddNumberToObject(o, "ensemble", params->ensemble > 0 ? params->ensemble : 1);
        }
        cJSON_AddItemToObject(o, "intervals", cli_intervals(h, r->device, params->config_dir,
                                                            params->out_dir, data, write, 1, &rc));
        cli_print_json(o);
    } else {
        printf("%s: graph-level correction of %s from %s: %d rows, %d used, %d failed%s%s\n",
               evaluate_only ? "eval" : "calibrate fit", r->device, source, r->n_rows, r->n_used,
               r->n_failed, r->n_failed ? ": " : "", r->first_failure);
        for (int t = 0; t < 2; t++) {
            if (!T[t]->present) continue;
            if (heldout_families)
                printf("\n%s, held-out families %s (never trained on):\n", names[t],
                       heldout_families);
            else
                printf("\n%s, held-out families/architectures (never trained on):\n", names[t]);
            printf("  %-30s %6s %8s %8s %9s %9s\n", "", "rows", "MAPE %", "RMSPE %", "+-10 %",
                   "Spearman");
            print_netfit_row("layer sum alone", &T[t]->layer_sum);
            print_netfit_row("GNN alone (DIPPM-style)", &T[t]->direct);
            print_netfit_row("layer sum x exp(correction)", &T[t]->corrected);
            print_gate(T[t]);
        }
        if (!evaluate_only) {
            if (params->huber_delta > 0)
                printf("\nHuber loss, threshold %g; validation (early stopping on mean |error|)",
                       params->huber_delta);
            else
                printf("\nvalidation (early stopping)");
            printf(": %d rows, best epoch %d of %d", r->n_val, r->best_epoch, r->epochs_run);
            long long seed = params->seed < 0 ? 1 : params->seed; /* the default: 1 */
            if (params->ensemble > 1)
                printf(" (the first of %d GNNs, seeds %lld..%lld, averaged)", params->ensemble,
                       seed, seed + params->ensemble - 1);
            if (r->val_rmse_latency >= 0)
                printf(", RMSE of log(measured / layer sum) %.4f", r->val_rmse_latency);
            if (r->val_mae_latency >= 0) printf(", mean |error| %.4f", r->val_mae_latency);
            printf("\ntraining %.0f s; %s\n", r->seconds_train,
                   r->weights_path[0] ? r->weights_path : "dry run: nothing written");
        }
        printf("\nlatency intervals from the held-out rows (what the predictor answers):\n");
        cli_intervals_print(h, r->device, params->config_dir, params->out_dir, data, write, &rc);
    }
    free(r);
    perfpred_heldout_free(h);
    return rc;
}

/* calibrate fit --networks FILE.csv --overhead --heldout-families FOLDS */
static int fit_overhead(const perfpred_overhead_params *params, int json)
{
    perfpred_overhead_report r;
    perfpred_overhead_params P = *params, *p = &P;
    if (!(P.heldout = perfpred_heldout_new())) return EXIT_INTERNAL;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_fit_overhead(p, &r, err, sizeof err);
    if (st != PERFPRED_OK) {
        cli_print_errbuf(err, perfpred_status_str(st));
        perfpred_heldout_free(P.heldout);
        return cli_exit_code(st);
    }
    char data[640];
    snprintf(data, sizeof data, "%s rows of %s: layer sum on every row, the correction on each "
             "fold's held-out families (perfpred calibrate fit --networks ... --overhead "
             "--heldout-families \"%.300s\")", p->networks_csv, r.device, p->folds);
    int rc = EXIT_OK_;
    if (json) {
        cJSON *o = cJSON_CreateObject(), *folds = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "device", r.device);
        cJSON_AddStringToObject(o, "networks", p->networks_csv);
        cJSON_AddNumberToObject(o, "rows_used", r.n_used);
        cJSON_AddNumberToObject(o, "rows_failed", r.n_failed);
        cJSON_AddItemToObject(o, "folds", folds);
        for (int k = 0; k < r.n_folds; k++) {
            const perfpred_overhead_fold *f = &r.folds[k];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "heldout_families", f->families);
            cJSON_AddNumberToObject(j, "heldout_rows", f->n_rows);
            cJSON_AddItemToObject(j, "layer_sum_mape_pct", cli_json_num(f->layer_sum_mape_pct));
            cJSON_AddItemToObject(j, "corrected_mape_pct", cli_json_num(f->corrected_mape_pct));
            cJSON_AddItemToObject(j, "scale", cli_json_num(f->scale));
            cJSON_AddItemToObject(j, "per_kernel_us", cli_json_num(f->per_kernel_us));
            cJSON_AddItemToObject(j, "per_mb_us", cli_json_num(f->per_mb_us));
            cJSON_AddItemToObject(j, "per_cold_weight_mb_us",
                                  cli_json_num(f->per_cold_weight_mb_us));
            cJSON_AddItemToArray(folds, j);
        }
        cJSON_AddItemToObject(o, "pooled_layer_sum_mape_pct",
                              cli_json_num(r.pooled_layer_sum_mape_pct));
        cJSON_AddItemToObject(o, "pooled_corrected_mape_pct",
                              cli_json_num(r.pooled_corrected_mape_pct));
        cJSON_AddItemToObject(o, "scale", cli_json_num(r.scale));
        cJSON_AddItemToObject(o, "per_kernel_us", cli_json_num(r.per_kernel_us));
        cJSON_AddItemToObject(o, "per_mb_us", cli_json_num(r.per_mb_us));
        cJSON_AddItemToObject(o, "per_cold_weight_mb_us", cli_json_num(r.per_cold_weight_mb_us));
        cJSON_AddBoolToObject(o, "written", r.written);
        cJSON_AddStringToObject(o, "artifact", r.path);
        cJSON_AddItemToObject(o, "intervals", cli_intervals(P.heldout, r.device, p->config_dir,
                                                            p->out_dir, data, !p->dry_run, 1, &rc));
        cli_print_json(o);
        perfpred_heldout_free(P.heldout);
        return rc;
    }
    printf("calibrate fit (in-network overhead): %s from %s: %d rows used, %d failed\n", r.device,
           p->networks_csv, r.n_used, r.n_failed);
    if (r.n_failed) printf("first failure: %s\n", r.first_failure);
    printf("\nlatency = a x layer sum + c x kernels + d x MB moved (10^6 bytes the kernels read and "
           "write)\n          + e x MB of cold weights (all weights where they and the peak live "
           "activations exceed\n          the last-level cache);\nMAPE %% on each fold's held-out "
           "families (a, c, d, e fitted on the other rows):\n");
    printf("  %-48s %6s %10s %10s %7s %7s %7s %7s\n", "held-out families", "rows", "layer sum",
           "corrected", "a", "c us", "d us/MB", "e us/MB");
    for (int k = 0; k < r.n_folds; k++) {
        const perfpred_overhead_fold *f = &r.folds[k];
        printf("  %-48.48s %6d %10.2f %10.2f %7.3f %7.1f %7.2f %7.2f\n", f->families, f->n_rows,
               f->layer_sum_mape_pct, f->corrected_mape_pct, f->scale, f->per_kernel_us,
               f->per_mb_us, f->per_cold_weight_mb_us);
    }
    printf("  %-48s %6d %10.2f %10.2f\n", "pooled", r.n_pooled, r.pooled_layer_sum_mape_pct,
           r.pooled_corrected_mape_pct);
    printf("\nfitted on every row: a = %.4f, c = %.2f us per kernel, d = %.2f us per MB, e = %.2f us "
           "per MB of cold weights\n", r.scale, r.per_kernel_us, r.per_mb_us,
           r.per_cold_weight_mb_us);
    if (r.written)
        printf("written: %s (applied where the device has no GNN correction)\n", r.path);
    else if (p->dry_run)
        printf("dry run: nothing written\n");
    else
        printf("not written: %s\n",
               r.out_of_range ? "its figures lie outside what a correction may state (scale "
                                "0.05 to 20, per kernel and per MB 0 to 100 ms): the layer "
                                "models are far from these networks"
                              : "over the folds it does not beat the layer sum");
    printf("\nlatency intervals from the held-out rows:\n");
    cli_intervals_print(P.heldout, r.device, p->config_dir, p->out_dir, data, !p->dry_run, &rc);
    perfpred_heldout_free(P.heldout);
    return rc;
}

/* A drift line ln(later / earlier) = log_a + slope ln(ms) at 0.1, 1 and 10 ms. */
static void print_drift(double log_a, double slope)
{
    static const double at[3] = {0.1, 1.0, 10.0};
    for (int k = 0; k < 3; k++)
        printf("%.3f at %g ms%s", exp(log_a + slope * log(at[k])), at[k], k < 2 ? ", " : "");
}

/* calibrate fit --layers / --neusight as one JSON object (docs/calibration.md). */
static void print_fit_json(const perfpred_fit_params *p, const perfpred_fit_report *r,
                           const char *src)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "data", src);
    cJSON_AddBoolToObject(o, "wrote_artifacts", r->wrote_artifacts);
    if (r->wrote_artifacts) cJSON_AddStringToObject(o, "artifacts", r->out_dir);
    cJSON_AddNumberToObject(o, "rows_read", r->n_rows_read);
    cJSON_AddNumberToObject(o, "bad_rows", r->n_bad_rows);
    cJSON_AddNumberToObject(o, "other_device_rows", r->n_other_device);
    cJSON_AddNumberToObject(o, "unusable_rows", r->n_unusable);
    cJSON_AddNumberToObject(o, "noisy_rows", r->n_noisy);
    cJSON_AddNumberToObject(o, "heldout_frac", p->heldout_frac);
    cJSON_AddNumberToObject(o, "seed", p->seed);
    cJSON *rs = cJSON_AddArrayToObject(o, "rescaled");
    for (int i = 0; i < r->n_rescaled; i++) {
        const perfpred_fit_rescale *q = &r->rescaled[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "file", q->file);
        cJSON_AddNumberToObject(j, "rows", q->n_rows);
        cJSON_AddNumberToObject(j, "anchors", q->n_anchors);
        cJSON_AddNumberToObject(j, "log_a", q->log_a);
        cJSON_AddNumberToObject(j, "slope", q->slope);
        cJSON_AddNumberToObject(j, "anchor_mad_pct", q->anchor_mad_pct);
        if (q->by_class) {
            cJSON *cl = cJSON_AddArrayToObject(j, "classes");
            for (int c = 0; c < 2; c++) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "class", c ? "memory" : "compute");
                cJSON_AddNumberToObject(e, "anchors", q->class_anchors[c]);
                cJSON_AddBoolToObject(e, "own_line", q->class_own[c]);
                cJSON_AddNumberToObject(e, "log_a", q->class_log_a[c]);
                cJSON_AddNumberToObject(e, "slope", q->class_slope[c]);
                cJSON_AddItemToArray(cl, e);
            }
        }
        cJSON_AddItemToArray(rs, j);
    }
    cJSON *ks = cJSON_AddArrayToObject(o, "kinds");
    for (int i = 0; i < r->n_kinds; i++) {
        const perfpred_fit_kind *k = &r->kinds[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", k->kind);
        cJSON_AddNumberToObject(j, "train_rows", k->n_train);
        cJSON_AddNumberToObject(j, "heldout_rows", k->n_heldout);
        cJSON_AddNumberToObject(j, "train_configs", k->n_train_configs);
        cJSON_AddNumberToObject(j, "heldout_configs", k->n_heldout_configs);
        cJSON_AddNumberToObject(j, "heldout_roofline_rows", k->n_heldout_roofline);
        cJSON_AddItemToObject(j, "model", cli_json_metrics(&k->model));
        cJSON_AddItemToObject(j, "roofline", cli_json_metrics(&k->roofline));
        cJSON_AddItemToObject(j, "train", cli_json_metrics(&k->train));
        cJSON_AddItemToObject(j, "spread_pct", cli_json_num(k->spread_pct));
        cJSON *b = cJSON_AddObjectToObject(j, "base");
        cJSON_AddNumberToObject(b, "peak_tflops", k->peak_tflops);
        cJSON_AddNumberToObject(b, "bw_gbs", k->bw_gbs);
        cJSON_AddNumberToObject(b, "floor_ms", k->floor_ms);
        cJSON_AddNumberToObject(j, "train_seconds", k->train_seconds);
        cJSON_AddBoolToObject(j, "written", k->written);
        if (k->note[0]) cJSON_AddStringToObject(j, "note", k->note);
        cJSON_AddItemToArray(ks, j);
    }
    cJSON *ov = cJSON_AddObjectToObject(o, "overall");
    cJSON_AddItemToObject(ov, "model", cli_json_metrics(&r->model));
    cJSON_AddItemToObject(ov, "roofline", cli_json_metrics(&r->roofline));
    cJSON_AddItemToObject(ov, "spread_pct", cli_json_num(r->spread_pct));
    cJSON_AddNumberToObject(o, "seconds", r->total_seconds);
    cJSON_AddItemToObject(o, "messages", cli_json_msgs(r->msgs, r->n_msgs));
    cli_print_json(o);
}

/* calibrate fit --layers / --neusight as text: rescaled files, then per kind the layer model's
 * held-out errors beside the roofline's, the rows' spread and the training error. */
static void print_fit_text(const perfpred_fit_params *p, const perfpred_fit_report *r,
                           const char *src)
{
    printf("perfpred calibrate fit: %s from %s: %d rows read (%d bad, %d of other devices, %d "
           "unusable, %d too noisy)\n",
           r->device, src, r->n_rows_read, r->n_bad_rows, r->n_other_device, r->n_unusable,
           r->n_noisy);
    if (p->n_layers_csvs)
        printf("held out per op kind: %.0f%% of its configurations (seed %d); repeats of a "
               "configuration stay together\n", 100.0 * p->heldout_frac, p->seed);
    for (int i = 0; i < r->n_rescaled; i++) {
        const perfpred_fit_rescale *q = &r->rescaled[i];
        printf("rescaled: %s: %d rows, drift fitted on %d anchors: later / earlier = ", q->file,
               q->n_rows, q->n_anchors);
        print_drift(q->log_a, q->slope);
        printf("; anchors after rescaling: median |error| %.1f %%\n", q->anchor_mad_pct);
        for (int c = 0; q->by_class && c < 2; c++) {
            printf("  %s-bound rows: %d anchors, ", c ? "memory" : "compute", q->class_anchors[c]);
            if (!q->class_own[c]) {
                printf("too few (or no usable line): the file's line\n");
                continue;
            }
            printf("own line: ");
            print_drift(q->class_log_a[c], q->class_slope[c]);
            printf("\n");
        }
    }
    printf("\n%-10s %6s %6s | %7s %8s %7s %9s | %9s %7s | %8s | %7s\n", "kind", "train", "held",
           "MAPE%", "RMSPE%", "±10%", "Spearman", "roof MAPE", "±10%", "spread%", "train%");
    for (int i = 0; i < r->n_kinds; i++) {
        const perfpred_fit_kind *k = &r->kinds[i];
        printf("%-10s %6d %6d |", k->kind, k->n_train, k->n_heldout);
        cli_metrics_cols(stdout, &k->model, 0);
        cli_roof_cols(stdout, &k->roofline, 0);
        cli_spread_col(stdout, k->spread_pct, 0);
        printf(" |");
        cli_put_num(stdout, "%*.1f", k->train.n ? k->train.mape_pct : NAN, 8);
        printf("\n");
    }
    if (r->model.n > 0) { /* NeuSight's fit reports per kind only */
        printf("%-10s %6s %6d |", "overall", "", r->model.n);
        cli_metrics_cols(stdout, &r->model, 0);
        cli_roof_cols(stdout, &r->roofline, 0);
        cli_spread_col(stdout, r->spread_pct, 0);
        printf(" |\n");
    }
    for (int i = 0; i < r->n_kinds; i++)
        if (r->kinds[i].note[0]) printf("note: %s: %s\n", r->kinds[i].kind, r->kinds[i].note);
    for (int i = 0; i < r->n_kinds; i++)
        if (r->kinds[i].n_heldout_roofline > 0)
            printf("note: %s: held-out rows outside the model's domain (an operator, kernel, "
                   "stride, dilation or group it never saw): %d of %d, judged with the roofline, "
                   "which predictions use there\n",
                   r->kinds[i].kind, r->kinds[i].n_heldout_roofline, r->kinds[i].n_heldout);
    for (int i = 0; i < r->n_msgs; i++) printf("note: %s\n", r->msgs[i]);
    printf(
        "MAPE/RMSPE/±10%%/Spearman: layer model on held-out rows; roof: the roofline it corrects; "
        "spread: median run-to-run IQR / latency of those rows; train%%: MAPE on training rows\n");
    if (r->wrote_artifacts)
        printf("artifacts: %s/manifest.json (%.1f s)\n", r->out_dir, r->total_seconds);
    else printf("dry run: nothing written (%.1f s)\n", r->total_seconds);
}

/* calibrate fit --networks: the in-network overhead correction (--overhead) or the graph-level
 * GNN correction, in one fit or in family folds (--heldout-families with ';'). */
static int fit_networks(const perfpred_fit_params *p, perfpred_netfit_params *gnn,
                        const char *networks, const char *datasets,
                        const char *heldout_families, int gnn_opts, int overhead, int json)
{
    if (p->n_layers_csvs > 0 || p->n_rescaled_csvs > 0 || p->neusight_root) {
        cli_error("calibrate fit: --networks trains the graph-level correction alone");
        return EXIT_USAGE;
    }
    if (overhead) {
        if (!heldout_families || gnn_opts || datasets) {
            cli_error("calibrate fit: --overhead needs --heldout-families \"a,b;c;...\" (the "
                      "folds that judge it) and takes no GNN options or --datasets");
            return EXIT_USAGE;
        }
        perfpred_overhead_params op = perfpred_overhead_default_params();
        op.device = p->device;
        op.networks_csv = networks;
        op.folds = heldout_families;
        op.config_dir = p->config_dir;
        op.out_dir = p->out_dir;
        op.dry_run = !p->write_artifacts;
        return fit_overhead(&op, json);
    }
    gnn->device = p->device;
    gnn->source = networks;
    gnn->datasets_root = datasets;
    gnn->out_dir = p->out_dir;
    gnn->config_dir = p->config_dir;
    gnn->heldout_families = heldout_families;
    gnn->dry_run = !p->write_artifacts;
    if (p->nthread > 0) gnn->threads = p->nthread;
    if (heldout_families && strchr(heldout_families, ';'))
        return netfit_folds(gnn, heldout_families, json);
    return cli_netfit(gnn, json, 0);
}

enum {
    OPT_DEVICE = 256, OPT_LAYERS, OPT_RESCALE_LAYERS, OPT_RESCALE_BY_CLASS, OPT_NEUSIGHT,
    OPT_NETWORKS, OPT_HELDOUT_FAMILIES, OPT_EPOCHS, OPT_HIDDEN, OPT_LR, OPT_WEIGHT_DECAY,
    OPT_MAX_TRAIN, OPT_HUBER, OPT_ENSEMBLE, OPT_DATASETS, OPT_CONV_GPU, OPT_HELDOUT_FRAC, OPT_SEED,
    OPT_THREADS, OPT_BOOST_ROUNDS, OPT_MAX_SPREAD_PCT, OPT_CONFIG_DIR, OPT_DRY_RUN, OPT_OVERHEAD,
    OPT_JSON
};

static const struct option fit_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"rescale-layers", required_argument, NULL, OPT_RESCALE_LAYERS},
    {"rescale-by-class", no_argument, NULL, OPT_RESCALE_BY_CLASS},
    {"neusight", required_argument, NULL, OPT_NEUSIGHT},
    {"networks", required_argument, NULL, OPT_NETWORKS},
    {"heldout-families", required_argument, NULL, OPT_HELDOUT_FAMILIES},
    {"epochs", required_argument, NULL, OPT_EPOCHS},
    {"hidden", required_argument, NULL, OPT_HIDDEN},
    {"lr", required_argument, NULL, OPT_LR},
    {"weight-decay", required_argument, NULL, OPT_WEIGHT_DECAY},
    {"max-train", required_argument, NULL, OPT_MAX_TRAIN},
    {"huber", required_argument, NULL, OPT_HUBER},
    {"ensemble", required_argument, NULL, OPT_ENSEMBLE},
    {"datasets", required_argument, NULL, OPT_DATASETS},
    {"conv-gpu", required_argument, NULL, OPT_CONV_GPU},
    {"out", required_argument, NULL, 'o'},
    {"heldout-frac", required_argument, NULL, OPT_HELDOUT_FRAC},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"boost-rounds", required_argument, NULL, OPT_BOOST_ROUNDS},
    {"max-spread-pct", required_argument, NULL, OPT_MAX_SPREAD_PCT},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"overhead", no_argument, NULL, OPT_OVERHEAD},
    {"json", no_argument, NULL, OPT_JSON},
    {NULL, 0, NULL, 0}
};

/* calibrate fit's command line: the layer fit's parameters, the GNN's (gnn_opts: one was given),
 * and the --networks fit's sources. p's file lists point into files and rescaled. */
typedef struct fit_args {
    perfpred_fit_params p;
    perfpred_netfit_params gnn;
    const char *files[CLI_MAX_LIST], *rescaled[CLI_MAX_LIST];
    const char *networks, *datasets, *heldout_families;
    int json, gnn_opts, overhead;
} fit_args;

/* One GNN option c with its value v into g: 0, or -1 after saying why. */
static int fit_gnn_opt(int c, const char *v, perfpred_netfit_params *g)
{
    switch (c) {
    case OPT_EPOCHS: return cli_parse_int(v, "--epochs", 1, 100000, &g->epochs);
    case OPT_HIDDEN: return cli_parse_int(v, "--hidden", 2, 1024, &g->hidden);
    case OPT_LR: return cli_parse_num(v, "--lr", 1e-6, 1.0, &g->lr);
    case OPT_WEIGHT_DECAY: return cli_parse_num(v, "--weight-decay", 0, 1.0, &g->weight_decay);
    case OPT_MAX_TRAIN: return cli_parse_int(v, "--max-train", 2, 1000000, &g->max_train);
    case OPT_HUBER: return cli_parse_num(v, "--huber", 1e-4, 10.0, &g->huber_delta);
    case OPT_ENSEMBLE: return cli_parse_int(v, "--ensemble", 1, 16, &g->ensemble);
    }
    return -1;
}

/* One calibrate fit option c with its value v into a: 0, or -1 after saying why. */
static int fit_opt(int c, char *v, fit_args *a)
{
    perfpred_fit_params *p = &a->p;
    switch (c) {
    case OPT_DEVICE: p->device = v; return 0;
    case OPT_LAYERS:
        p->layers_csvs = a->files;
        return cli_list_value(v, "--layers", a->files, &p->n_layers_csvs);
    case OPT_RESCALE_LAYERS:
        p->rescaled_csvs = a->rescaled;
        return cli_list_value(v, "--rescale-layers", a->rescaled, &p->n_rescaled_csvs);
    case OPT_RESCALE_BY_CLASS: p->rescale_by_class = 1; return 0;
    case OPT_NEUSIGHT: p->neusight_root = v; return 0;
    case OPT_NETWORKS: a->networks = v; return 0;
    case OPT_HELDOUT_FAMILIES: a->heldout_families = v; return 0;
    case OPT_EPOCHS: case OPT_HIDDEN: case OPT_LR: case OPT_WEIGHT_DECAY: case OPT_MAX_TRAIN:
    case OPT_HUBER: case OPT_ENSEMBLE:
        if (fit_gnn_opt(c, v, &a->gnn)) return -1;
        a->gnn_opts = 1;
        return 0;
    case OPT_DATASETS: a->datasets = v; return 0;
    case OPT_CONV_GPU: p->neusight_conv_gpu = v; return 0;
    case 'o': p->out_dir = v; return 0;
    case OPT_HELDOUT_FRAC: return cli_parse_num(v, "--heldout-frac", 0.01, 0.5, &p->heldout_frac);
    case OPT_SEED:
        if (cli_parse_int(v, "--seed", 0, 2147483647, &p->seed)) return -1;
        a->gnn.seed = p->seed;
        return 0;
    case OPT_THREADS: return cli_parse_int(v, "--threads", 1, 1024, &p->nthread);
    case OPT_BOOST_ROUNDS: return cli_parse_int(v, "--boost-rounds", 1, 100000, &p->n_rounds);
    case OPT_MAX_SPREAD_PCT:
        return cli_parse_num(v, "--max-spread-pct", 0, 1e6, &p->max_spread_pct);
    case OPT_CONFIG_DIR: p->config_dir = v; return 0;
    case OPT_DRY_RUN: p->write_artifacts = 0; return 0;
    case OPT_OVERHEAD: a->overhead = 1; return 0;
    case OPT_JSON: a->json = 1; return 0;
    }
    return -1;
}

/* argv[1..argc) of calibrate fit (argv[0] is "fit") into a: 0, or -1 after saying why. */
static int fit_parse(int argc, char **argv, fit_args *a)
{
    cli_getopt G;
    cli_getopt_init(&G, argc, argv, "-:o:", fit_options);
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        if (c == ':') {
            cli_error("%s needs a value", G.word);
            return -1;
        }
        if (c == 1 || c == '?') {
            cli_error("calibrate fit: unknown argument '%s' (perfpred calibrate --help)", G.word);
            return -1;
        }
        if (fit_opt(c, optarg, a)) return -1;
    }
    return 0;
}

int cli_calibrate_fit(int argc, char **argv)
{
    fit_args a = {.p = perfpred_fit_default_params(), .gnn = perfpred_netfit_default_params()};
    if (fit_parse(argc - 1, argv + 1, &a)) return EXIT_USAGE;
    const perfpred_fit_params *p = &a.p;
    if (!p->device) {
        cli_error("calibrate fit: --device is required");
        return EXIT_USAGE;
    }
    if (a.networks)
        return fit_networks(p, &a.gnn, a.networks, a.datasets, a.heldout_families, a.gnn_opts,
                            a.overhead, a.json);
    if (a.heldout_families || a.gnn_opts || a.overhead) {
        cli_error("calibrate fit: --heldout-families, --epochs, --hidden, --lr, --weight-decay, "
                  "--huber, --max-train and --ensemble go with --networks");
        return EXIT_USAGE;
    }
    if ((p->n_layers_csvs > 0) == (p->neusight_root != NULL)) {
        cli_error("calibrate fit: give --layers MEASURED.csv or --neusight DIR (one of them)");
        return EXIT_USAGE;
    }
    perfpred_fit_report r;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_fit(p, &r, err, sizeof err);
    if (st != PERFPRED_OK) {
        cli_print_errbuf(err, perfpred_status_str(st));
        return cli_exit_code(st);
    }
    char src[2048] = "";
    if (p->neusight_root) snprintf(src, sizeof src, "%s", p->neusight_root);
    for (int i = 0; i < p->n_layers_csvs; i++) {
        size_t L = strlen(src);
        snprintf(src + L, sizeof src - L, "%s%s", i ? "," : "", p->layers_csvs[i]);
    }
    for (int i = 0; i < p->n_rescaled_csvs; i++) {
        size_t L = strlen(src);
        snprintf(src + L, sizeof src - L, ",%s (rescaled)", p->rescaled_csvs[i]);
    }
    if (a.json) {
        print_fit_json(p, &r, src);
        return EXIT_OK_;
    }
    print_fit_text(p, &r, src);
    return EXIT_OK_;
}
