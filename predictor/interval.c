/* predictor/interval.c: split-conformal latency intervals from held-out residuals: the quantiles,
 * their cross-fitted coverage check, intervals.json (read at context open, merged and written by
 * the fit commands) and the interval a prediction carries. */
#include "predictor/interval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static const char *const ipath_names[PP_IPATH__COUNT] = {"layer", "overhead", "gnn", "gated"};

const char *pp_ipath_name(int p) { return p >= 0 && p < PP_IPATH__COUNT ? ipath_names[p] : NULL; }

int pp_ipath_parse(const char *s)
{
    for (int p = 0; s && p < PP_IPATH__COUNT; p++)
        if (strcmp(s, ipath_names[p]) == 0) return p;
    return -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int pp_interval_quantiles(double *r, int n, double c, double *log_lo, double *log_hi)
{
    if (!r || n < 1 || !(c > 0 && c < 1)) return -1;
    double a = (1.0 - c) / 2.0;
    /* 1-based order statistics; a small epsilon keeps (n + 1) x 0.9 = 9 exactly 9 */
    long k_lo = (long)floor((n + 1) * a + 1e-9);
    long k_hi = (long)ceil((n + 1) * (1.0 - a) - 1e-9);
    if (k_lo < 1 || k_hi > n) return -1;
    qsort(r, (size_t)n, sizeof *r, cmp_double);
    *log_lo = r[k_lo - 1];
    *log_hi = r[k_hi - 1];
    return 0;
}

double pp_interval_crossfit(const double *r, const unsigned *key, int n, double c, int *n_checked)
{
    *n_checked = 0;
    double *h[2] = {malloc(((size_t)n + 1) * sizeof(double)),
                    malloc(((size_t)n + 1) * sizeof(double))};
    int m[2] = {0, 0};
    double pct = NAN;
    if (!h[0] || !h[1]) goto out;
    for (int i = 0; i < n; i++) {
        int s = (int)(key[i] & 1u);
        h[s][m[s]++] = r[i];
    }
    double lo[2], hi[2];
    /* the quantiles of each half sort that half; its rows are counted against the other's */
    double *sorted[2] = {malloc(((size_t)m[0] + 1) * sizeof(double)),
                         malloc(((size_t)m[1] + 1) * sizeof(double))};
    int ok = sorted[0] && sorted[1];
    for (int s = 0; ok && s < 2; s++) {
        memcpy(sorted[s], h[s], (size_t)m[s] * sizeof(double));
        ok = pp_interval_quantiles(sorted[s], m[s], c, &lo[s], &hi[s]) == 0;
    }
    if (ok) {
        int inside = 0;
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < m[s]; i++)
                inside += h[s][i] >= lo[1 - s] && h[s][i] <= hi[1 - s];
        *n_checked = m[0] + m[1];
        pct = 100.0 * inside / (double)(m[0] + m[1]);
    }
    free(sorted[0]);
    free(sorted[1]);
out:
    free(h[0]);
    free(h[1]);
    return pct;
}

void pp_interval_apply(const pp_interval_q *q, double v, const char *path, perfpred_interval *out)
{
    if (!q || q->n < PP_INTERVAL_MIN_ROWS || !isfinite(v)) {
        pp_interval_none(out, "no interval: no held-out rows judge this answer");
        return;
    }
    out->lo = v * exp(q->log_lo);
    out->hi = v * exp(q->log_hi);
    out->coverage = q->coverage;
    out->log_lo = q->log_lo;
    out->log_hi = q->log_hi;
    out->n = q->n;
    out->checked_pct = q->check_pct;
    out->path = path;
    out->source = q->source;
}

void pp_interval_none(perfpred_interval *out, const char *why)
{
    memset(out, 0, sizeof *out);
    out->lo = out->hi = out->log_lo = out->log_hi = out->checked_pct = NAN;
    out->source = why;
}

/* ------------------------------------------------------------ intervals.json ---- */

struct pp_interval_set {
    int n;                   /* devices, pp_devices_at order */
    const pp_device **dev;   /* the db's descriptors */
    pp_interval_q (*q)[PP_IPATH__COUNT];
};

static void artifacts_dir(const pp_device *d, const char *config_dir, char *dir, size_t n)
{
    if (d->artifacts_dir) snprintf(dir, n, "%s/%s", config_dir, d->artifacts_dir);
    else snprintf(dir, n, "%s/artifacts/%s", config_dir, d->name);
}

static int num(const cJSON *o, const char *k, double *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return -1;
    *v = x->valuedouble;
    return 0;
}

perfpred_status pp_interval_parse_entry(const char *path, const char *key, const cJSON *e,
                                        pp_interval_q *q, pp_err *err)
{
    double n, lo, hi, cov, cn = 0, cp = NAN;
    if (!cJSON_IsObject(e) || num(e, "n", &n) || num(e, "log_lo", &lo) || num(e, "log_hi", &hi) ||
        num(e, "coverage", &cov))
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "%s: paths.%s: needs numbers n, log_lo, log_hi, coverage", path, key);
    if (n < PP_INTERVAL_MIN_ROWS || n > 1e9 || n != floor(n) || lo > hi || !(cov > 0 && cov < 1) ||
        fabs(lo) > 20 || fabs(hi) > 20)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "%s: paths.%s: a whole n from %d to 10^9, log_lo <= log_hi within +-20 "
                          "and 0 < coverage < 1 expected",
                          path, key, PP_INTERVAL_MIN_ROWS);
    const cJSON *chk = cJSON_GetObjectItemCaseSensitive(e, "check");
    /* every number is range-checked before it becomes an int (the fuzzer found a 6e13) */
    if (chk && (num(chk, "n", &cn) || num(chk, "inside_pct", &cp) || cp < 0 || cp > 100 ||
                cn < 0 || cn > 1e9 || cn != floor(cn)))
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "%s: paths.%s.check: needs a whole n (0 to 10^9) and inside_pct (0 to "
                          "100)", path, key);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
    q->n = (int)n;
    q->log_lo = lo;
    q->log_hi = hi;
    q->coverage = cov;
    q->check_n = (int)cn;
    q->check_pct = chk ? cp : NAN;
    int off = snprintf(q->source, sizeof q->source,
                       "%.0f %% split-conformal interval from %d held-out rows of this path", cov * 100,
                       q->n);
    if (chk && off > 0 && (size_t)off < sizeof q->source)
        off += snprintf(q->source + off, sizeof q->source - (size_t)off,
                        " (cross-fitted check: %.1f %% inside)", cp);
    if (cJSON_IsString(data) && off > 0 && (size_t)off < sizeof q->source)
        snprintf(q->source + off, sizeof q->source - (size_t)off, ": %s", data->valuestring);
    return PERFPRED_OK;
}

static perfpred_status read_file_json(const char *path, cJSON **out, pp_err *err)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    *out = NULL;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st) return st;
    *out = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    if (!*out) return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: not valid JSON", path);
    return PERFPRED_OK;
}

static perfpred_status load_one(const char *path, pp_interval_q *q, pp_err *err)
{
    cJSON *root;
    perfpred_status st = read_file_json(path, &root, err);
    if (st) return st;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(root, "paths");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "perfpred-intervals") != 0 ||
        !cJSON_IsObject(paths)) {
        st = pp_err_set(err, PERFPRED_ERR_PARSE,
                        "%s: expected format \"perfpred-intervals\" and an object \"paths\"", path);
    }
    for (const cJSON *e = paths ? paths->child : NULL; !st && e; e = e->next) {
        int p = pp_ipath_parse(e->string);
        if (p < 0)
            st = pp_err_set(err, PERFPRED_ERR_PARSE,
                            "%s: paths: unknown answer path '%s' (layer, overhead, gnn, gated)",
                            path, e->string);
        else st = pp_interval_parse_entry(path, e->string, e, &q[p], err);
    }
    cJSON_Delete(root);
    return st;
}

perfpred_status pp_interval_set_load(const pp_device_db *db, const char *config_dir,
                                     pp_interval_set **out, pp_err *err)
{
    *out = NULL;
    pp_interval_set *s = calloc(1, sizeof *s);
    int nd = pp_devices_count(db);
    if (!s || !(s->q = calloc((size_t)nd + 1, sizeof *s->q)) ||
        !(s->dev = calloc((size_t)nd + 1, sizeof *s->dev))) {
        pp_interval_set_free(s);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    s->n = nd;
    for (int i = 0; i < nd; i++) {
        const pp_device *d = pp_devices_at(db, i);
        s->dev[i] = d;
        if (d->is_mig) continue;
        char dir[4096], path[4200];
        artifacts_dir(d, config_dir, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/intervals.json", dir);
        FILE *f = fopen(path, "rb");
        if (!f) continue; /* no intervals: predictions say so */
        fclose(f);
        perfpred_status st = load_one(path, s->q[i], err);
        if (st) {
            pp_interval_set_free(s);
            return st;
        }
    }
    *out = s;
    return PERFPRED_OK;
}

void pp_interval_set_free(pp_interval_set *s)
{
    if (!s) return;
    free(s->q);
    free(s->dev);
    free(s);
}

const pp_interval_q *pp_interval_find(const pp_interval_set *s, const pp_device *d, int p)
{
    if (!s || !d || p < 0 || p >= PP_IPATH__COUNT) return NULL;
    for (int i = 0; i < s->n; i++)
        if (s->dev[i] == d) return s->q[i][p].n >= PP_INTERVAL_MIN_ROWS ? &s->q[i][p] : NULL;
    return NULL;
}

void pp_interval_attach(const pp_interval_set *s, const pp_device *d, perfpred_provenance prov,
                        int gnn_applied, int gated, int overhead_applied, double value,
                        perfpred_interval *out)
{
    if (prov == PERFPRED_PROV_UNAVAILABLE) {
        pp_interval_none(out, "no interval: no latency");
        return;
    }
    if (prov == PERFPRED_PROV_ESTIMATE) {
        pp_interval_none(out, "no interval: an uncalibrated estimate (no held-out measurement "
                              "of this device judges it)");
        return;
    }
    int p = gnn_applied ? PP_IPATH_GNN
            : gated     ? PP_IPATH_GATED
            : overhead_applied ? PP_IPATH_OVERHEAD
                               : PP_IPATH_LAYER;
    const pp_interval_q *q = pp_interval_find(s, d, p);
    if (!q && p == PP_IPATH_GATED) {
        /* too few gated held-out rows: the answer is the overhead correction's or the layer
         * sum's, judged on their own held-out rows (the source says which) */
        p = overhead_applied ? PP_IPATH_OVERHEAD : PP_IPATH_LAYER;
        q = pp_interval_find(s, d, p);
    }
    if (!q) {
        pp_interval_none(out, "no interval: this device has no held-out whole-model residuals "
                              "for this answer path (intervals.json)");
        return;
    }
    pp_interval_apply(q, value, pp_ipath_name(p), out);
}

/* ------------------------------------------------------------------ writing ---- */

cJSON *pp_interval_entry_json(const pp_interval_q *e)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "n", e->n);
    cJSON_AddNumberToObject(o, "coverage", e->coverage);
    cJSON_AddNumberToObject(o, "log_lo", e->log_lo);
    cJSON_AddNumberToObject(o, "log_hi", e->log_hi);
    if (isfinite(e->check_pct)) {
        cJSON *c = cJSON_AddObjectToObject(o, "check");
        cJSON_AddNumberToObject(c, "n", e->check_n);
        cJSON_AddNumberToObject(c, "inside_pct", e->check_pct);
    }
    cJSON_AddStringToObject(o, "data", e->source);
    return o;
}

perfpred_status pp_interval_write(const char *dir, const char *device, const pp_interval_q *q,
                                  const int *paths, int n, pp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/intervals.json", dir);
    cJSON *root = NULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        fclose(f);
        perfpred_status st = read_file_json(path, &root, err);
        if (st) return st;
    }
    /* a fresh root (header first), keeping the other paths' entries of the old file */
    cJSON *old = root;
    root = cJSON_CreateObject();
    if (!root) {
        cJSON_Delete(old);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    cJSON *old_paths = old ? cJSON_DetachItemFromObjectCaseSensitive(old, "paths") : NULL;
    cJSON_Delete(old);
    cJSON_AddStringToObject(root, "format", "perfpred-intervals");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "device", device);
    cJSON_AddStringToObject(root, "method",
                            "split-conformal: with the n held-out residuals r = ln(measured / "
                            "predicted) sorted, log_lo = r_(floor((n+1)(1-c)/2)), log_hi = "
                            "r_(ceil((n+1)(1+c)/2)); interval = [v e^log_lo, v e^log_hi]. check: "
                            "quantiles of each half of the rows (split by model hash) judged on "
                            "the other half");
    cJSON *ps = old_paths;
    if (cJSON_IsObject(ps)) {
        cJSON_AddItemToObject(root, "paths", ps);
    } else {
        cJSON_Delete(ps);
        ps = cJSON_AddObjectToObject(root, "paths");
    }
    for (int i = 0; ps && i < n; i++) {
        const char *name = pp_ipath_name(paths[i]);
        cJSON_DeleteItemFromObjectCaseSensitive(ps, name);
        cJSON *o = pp_interval_entry_json(&q[i]);
        if (!o) break;
        cJSON_AddItemToObject(ps, name, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = pp_mkdir_p(dir, err);
    if (!st) {
        size_t len = strlen(text);
        text[len] = '\n'; /* cJSON_Print's terminator becomes the file's last newline */
        st = pp_write_file_atomic(path, text, len + 1, err);
    }
    free(text);
    return st;
}
