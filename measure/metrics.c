/* measure/metrics.c: how perfpred judges a predictor on measured rows: MAPE, RMSPE, the share within
 * +-10 %, and Spearman's rank correlation with averaged ranks for ties (what matters when a NAS
 * search only needs the order right). */
#include "measure/measure.h"

#include <math.h>
#include <stdlib.h>

typedef struct ranked {
    double v;
    int i;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->v < y->v) return -1;
    if (x->v > y->v) return 1;
    return x->i - y->i;
}

/* rank[i] in 1..n; tied values share the mean of the ranks they span. 0 ok, -1 OOM. */
static int average_ranks(const double *v, int n, double *rank)
{
    ranked *r = malloc((size_t)n * sizeof *r);
    if (!r) return -1;
    for (int i = 0; i < n; i++) r[i] = (ranked){v[i], i};
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && r[j + 1].v == r[i].v) j++;
        double avg = 0.5 * ((double)(i + 1) + (double)(j + 1));
        for (int k = i; k <= j; k++) rank[r[k].i] = avg;
        i = j + 1;
    }
    free(r);
    return 0;
}

/* rho = Pearson correlation of the rank vectors (exact with ties, unlike 1 - 6 sum d^2 / ...). */
double pp_measure_spearman(const double *a, const double *b, int n)
{
    if (n < 2) return NAN;
    double *ra = malloc((size_t)n * sizeof *ra), *rb = malloc((size_t)n * sizeof *rb);
    double rho = NAN;
    if (ra && rb && average_ranks(a, n, ra) == 0 && average_ranks(b, n, rb) == 0) {
        double ma = 0, mb = 0;
        for (int i = 0; i < n; i++) {
            ma += ra[i];
            mb += rb[i];
        }
        ma /= n;
        mb /= n;
        double sab = 0, saa = 0, sbb = 0;
        for (int i = 0; i < n; i++) {
            sab += (ra[i] - ma) * (rb[i] - mb);
            saa += (ra[i] - ma) * (ra[i] - ma);
            sbb += (rb[i] - mb) * (rb[i] - mb);
        }
        if (saa > 0 && sbb > 0) rho = sab / sqrt(saa * sbb);
    }
    free(ra);
    free(rb);
    return rho;
}

static perfpred_status check_inputs(const double *pred, const double *meas, int n, pp_err *err)
{
    if (n < 1) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "metrics: no rows");
    for (int i = 0; i < n; i++) {
        if (!isfinite(meas[i]) || !(meas[i] > 0))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "metrics: measurement %d is %g (must be finite and > 0)", i, meas[i]);
        if (!isfinite(pred[i]))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "metrics: prediction %d is %g", i,
                              pred[i]);
    }
    return PERFPRED_OK;
}

perfpred_status pp_measure_metrics(const double *pred, const double *meas, int n, pp_metrics *out,
                                   pp_err *err)
{
    perfpred_status st = check_inputs(pred, meas, n, err);
    if (st != PERFPRED_OK) return st;
    double sa = 0, ss = 0, sl = 0;
    int within = 0;
    for (int i = 0; i < n; i++) {
        double e = (pred[i] - meas[i]) / meas[i];
        sl += pred[i] > 0 ? fabs(log(pred[i] / meas[i])) : INFINITY;
        sa += fabs(e);
        ss += e * e;
        /* the 1e-12 keeps a row exactly at +-10 % inside despite rounding of the division */
        if (fabs(e) <= 0.10 + 1e-12) within++;
    }
    out->n = n;
    out->mape_pct = 100.0 * sa / n;
    out->rmspe_pct = 100.0 * sqrt(ss / n);
    out->within10_pct = 100.0 * within / n;
    out->spearman = pp_measure_spearman(pred, meas, n);
    out->mean_abs_log = sl / n;
    return PERFPRED_OK;
}

perfpred_status pp_measure_metrics_by_group(const double *pred, const double *meas,
                                            const int *group, int n, int n_groups, pp_metrics *out,
                                            pp_err *err)
{
    if (n_groups < 1) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "metrics: no groups");
    for (int i = 0; i < n; i++)
        if (group[i] < 0 || group[i] >= n_groups)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "metrics: row %d has group %d of %d",
                              i, group[i], n_groups);
    double *p = malloc((size_t)(n ? n : 1) * sizeof *p), *m = malloc((size_t)(n ? n : 1) * sizeof *m);
    if (!p || !m) {
        free(p);
        free(m);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "metrics: out of memory");
    }
    perfpred_status st = PERFPRED_OK;
    for (int g = 0; g < n_groups && st == PERFPRED_OK; g++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (group[i] == g) {
                p[k] = pred[i];
                m[k] = meas[i];
                k++;
            }
        if (k == 0) {
            out[g] = pp_measure_metrics_none();
            continue;
        }
        st = pp_measure_metrics(p, m, k, &out[g], err);
    }
    free(p);
    free(m);
    return st;
}

pp_metrics pp_measure_metrics_none(void)
{
    return (pp_metrics){0, NAN, NAN, NAN, NAN, NAN};
}

perfpred_metrics pp_measure_metrics_none_public(void)
{
    pp_metrics m = pp_measure_metrics_none();
    return pp_measure_metrics_public(&m);
}

perfpred_metrics pp_measure_metrics_public(const pp_metrics *m)
{
    perfpred_metrics o = {m->n, m->mape_pct, m->rmspe_pct, m->within10_pct, m->spearman,
                          m->mean_abs_log};
    return o;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pp_measure_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int pp_measure_rescale_class(const pp_device *d, const pp_node_feat *f)
{
    double tc = f->flops / (d->peak_tflops[PP_PREC_FP32] * 1e9);
    double tm = (f->in_bytes + f->out_bytes + f->param_bytes) / (d->memory_bandwidth_gbs * 1e6);
    return tm > tc;
}

double pp_measure_rescale_factor(const pp_lm_rescale *r, const pp_device *d, const pp_node_feat *f,
                                 double ms)
{
    if (!r->on) return 1.0;
    int c = r->by_class ? pp_measure_rescale_class(d, f) : 0;
    double a = r->by_class ? r->class_log_a[c] : r->log_a;
    double b = r->by_class ? r->class_slope[c] : r->slope;
    return exp(a + b * (log(ms) - a) / (1.0 + b));
}

int pp_measure_theil_sen(const double *x, const double *y, int n, double *intercept, double *slope)
{
    if (n < 2) return -1;
    size_t n_pairs = (size_t)n * (size_t)(n - 1) / 2, k = 0;
    double *v = malloc(n_pairs * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (x[j] != x[i]) v[k++] = (y[j] - y[i]) / (x[j] - x[i]);
    if (k == 0) {
        free(v);
        return -1;
    }
    double b = pp_measure_median(v, (int)k);
    for (int i = 0; i < n; i++) v[i] = y[i] - b * x[i];
    *intercept = pp_measure_median(v, n);
    *slope = b;
    free(v);
    return 0;
}
