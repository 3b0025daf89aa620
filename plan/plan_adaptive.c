/* plan/plan_adaptive.c: nn-Meter's adaptive sampling for `perfpred calibrate plan --adaptive`.
 * A first fit's manifest.json gives each op kind's held-out error; its measured CSVs give the
 * configurations already measured and, with the fit's seeded split reproduced exactly as
 * fit/fit_layers.c draws it, the held-out rows, whose errors under the fitted models say
 * where in feature space a kind's model errs most. plan_select.c turns these into budget shares
 * and pick weights. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/plan.h"

typedef struct held_row {
    pp_op_kind kind;
    uint32_t op;             /* pp_node_feat.op_code */
    float v[PP_FEATVEC_LEN];
    double err;              /* |predicted / measured - 1| */
} held_row;

typedef struct kind_entry {
    int present;
    double mape;             /* NaN: no held-out rows */
    int n_train, n_heldout;
    int n_hold, n_cfg, seed; /* from the entry's "heldout" text; n_cfg < 0: not parsed */
} kind_entry;

struct pp_adapt {
    kind_entry kinds[PP_OPK__COUNT];
    char **measured;         /* sorted signatures */
    int n_measured;
    held_row *held;
    int n_held, cap_held;
    int has_rows[PP_OPK__COUNT];
    char basis[1024];
};

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}


static void basis_add(pp_adapt *a, const char *fmt, const char *s1, const char *s2)
{
    size_t L = strlen(a->basis);
    /* longer texts are cut (checked so that the compiler sees the truncation is intended) */
    if (L + 1 < sizeof a->basis &&
        snprintf(a->basis + L, sizeof a->basis - L, fmt, s1, s2) >= (int)(sizeof a->basis - L))
        a->basis[sizeof a->basis - 1] = '\0';
}

/* "<n> of <m> configurations (...), seeded split by configuration (seed <s>)" */
static void parse_heldout(const char *h, kind_entry *e)
{
    e->n_cfg = -1;
    const char *s = h ? strstr(h, "(seed ") : NULL;
    if (!h || !s || sscanf(h, "%d of %d configurations", &e->n_hold, &e->n_cfg) != 2 ||
        sscanf(s, "(seed %d)", &e->seed) != 1 || e->n_hold < 1 || e->n_cfg < e->n_hold)
        e->n_cfg = -1;
}

/* ---------------------------------------------------------------- the manifest ---- */

typedef struct src_list {
    char *path[PP_LM_MAX_SOURCES];
    pp_lm_rescale rescale[PP_LM_MAX_SOURCES]; /* how the fit rescaled each file's rows */
    int n;
} src_list;

/* A manifest source's "rescale" (pp_lm_manifest_write), into r; off when absent or incomplete. */
static void parse_rescale(const cJSON *rs, pp_lm_rescale *r)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(rs, "log_a");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(rs, "slope");
    memset(r, 0, sizeof *r);
    if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b)) return;
    r->on = 1;
    r->log_a = a->valuedouble;
    r->slope = b->valuedouble;
    r->by_class = 1;
    for (int c = 0; c < 2; c++) {
        const cJSON *cl = cJSON_GetObjectItemCaseSensitive(rs, c ? "memory_bound" : "compute_bound");
        const cJSON *ca = cJSON_GetObjectItemCaseSensitive(cl, "log_a");
        const cJSON *cb = cJSON_GetObjectItemCaseSensitive(cl, "slope");
        r->by_class &= cJSON_IsNumber(ca) && cJSON_IsNumber(cb);
        r->class_log_a[c] = cJSON_IsNumber(ca) ? ca->valuedouble : 0;
        r->class_slope[c] = cJSON_IsNumber(cb) ? cb->valuedouble : 0;
    }
}

static perfpred_status read_manifest(pp_adapt *a, const char *path, const pp_device *dev,
                                     src_list *src, char *date, size_t date_n, pp_err *err)
{
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st != PERFPRED_OK)
        return pp_err_set(err, st, "adaptive plan: %s: a first fit's manifest is needed (perfpred "
                          "calibrate fit), or name its folder", path);
    cJSON *root = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    if (!root) return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: not valid JSON", path);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, "date");
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "models");
    const cJSON *sources = cJSON_GetObjectItemCaseSensitive(root, "sources");
    if (!cJSON_IsString(d) || !cJSON_IsArray(models)) {
        cJSON_Delete(root);
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: no device or models", path);
    }
    if (!pp_device_named(dev, d->valuestring)) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: the layer models of device '%s', not %s",
                        path, d->valuestring, dev->name);
        cJSON_Delete(root);
        return st;
    }
    snprintf(date, date_n, "%s", cJSON_IsString(dt) ? dt->valuestring : "");
    int n_lat = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, models)
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(m, "op_kind");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "target");
        const cJSON *mape = cJSON_GetObjectItemCaseSensitive(m, "heldout_mape_pct");
        const cJSON *nt = cJSON_GetObjectItemCaseSensitive(m, "rows_train");
        const cJSON *nh = cJSON_GetObjectItemCaseSensitive(m, "rows_heldout");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(m, "heldout");
        if (!cJSON_IsString(k) || !cJSON_IsString(t) || strcmp(t->valuestring, "latency") != 0)
            continue;
        int kind = pp_op_kind_from_name(k->valuestring);
        if (kind <= 0 || kind >= PP_OPK__COUNT) {
            st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: unknown op_kind '%s'", path,
                            k->valuestring);
            break;
        }
        if (!(cJSON_IsNull(mape) || (cJSON_IsNumber(mape) && mape->valuedouble >= 0))) {
            st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: %s: heldout_mape_pct is not a number "
                            ">= 0 or null", path, k->valuestring);
            break;
        }
        kind_entry *e = &a->kinds[kind];
        e->present = 1;
        e->mape = cJSON_IsNumber(mape) ? mape->valuedouble : NAN;
        e->n_train = cJSON_IsNumber(nt) ? (int)nt->valuedouble : -1;
        e->n_heldout = cJSON_IsNumber(nh) ? (int)nh->valuedouble : -1;
        parse_heldout(cJSON_IsString(h) ? h->valuestring : NULL, e);
        n_lat++;
    }
    const cJSON *s;
    cJSON_ArrayForEach(s, sources)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(s, "path");
        if (!cJSON_IsString(p) || !*p->valuestring || src->n == PP_LM_MAX_SOURCES) continue;
        int dup = 0;
        for (int i = 0; i < src->n && !dup; i++) dup = strcmp(src->path[i], p->valuestring) == 0;
        if (dup) continue;
        parse_rescale(cJSON_GetObjectItemCaseSensitive(s, "rescale"), &src->rescale[src->n]);
        if (!(src->path[src->n++] = strdup(p->valuestring)))
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "adaptive plan: out of memory");
    }
    cJSON_Delete(root);
    if (st == PERFPRED_OK && n_lat == 0)
        st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: lists no latency models", path);
    return st;
}

/* A source path as given, else under <config_dir>/.., else under the manifest's folder. */
static int resolve(const char *p, const char *config_dir, const char *dir, char *out, size_t n)
{
    snprintf(out, n, "%s", p);
    if (access(out, R_OK) == 0) return 0;
    if (p[0] == '/') return -1;
    snprintf(out, n, "%s/../%s", config_dir, p);
    if (access(out, R_OK) == 0) return 0;
    snprintf(out, n, "%s/%s", dir, p);
    return access(out, R_OK) == 0 ? 0 : -1;
}

/* -------------------------------------------------------- the fit's split again ---- */

typedef struct fit_row {
    const pp_layer_row *r;
    pp_node_feat feat;
    char *config;
    double latency_ms;   /* as the fit used it: rescaled where the manifest says so */
} fit_row;

/* Marks held[i] for the rows of kind k exactly as fit_layers.c's fit_kind splits them; -1 when the
 * counts differ from the manifest's (other files, other rows, a spread filter). */
static int reproduce_split(const kind_entry *e, pp_op_kind k, fit_row *u, int n_u, int *held,
                           char *why, size_t why_n)
{
    int n = 0;
    for (int i = 0; i < n_u; i++) n += u[i].feat.kind == k;
    char **cfg = malloc((size_t)(n + 1) * sizeof *cfg);
    if (!cfg) {
        snprintf(why, why_n, "out of memory");
        return -1;
    }
    int n_cfg = 0;
    for (int i = 0; i < n_u; i++)
        if (u[i].feat.kind == k) cfg[n_cfg++] = u[i].config;
    qsort(cfg, (size_t)n_cfg, sizeof *cfg, cmp_str);
    int w = 0;
    for (int i = 0; i < n_cfg; i++)
        if (w == 0 || strcmp(cfg[i], cfg[w - 1]) != 0) cfg[w++] = cfg[i];
    n_cfg = w;
    if (n_cfg != e->n_cfg || n_cfg < 5) {
        snprintf(why, why_n, "%s: %d configurations, the fit had %d", pp_op_kind_name(k), n_cfg,
                 e->n_cfg);
        free(cfg);
        return -1;
    }
    uint64_t rng = (uint64_t)e->seed * 0x100000001B3ull + 0x51ED27u + (uint64_t)k * 7919u;
    for (int i = n_cfg - 1; i > 0; i--) {
        int j = (int)(splitmix64(&rng) % (uint64_t)(i + 1));
        char *t = cfg[i];
        cfg[i] = cfg[j];
        cfg[j] = t;
    }
    qsort(cfg, (size_t)e->n_hold, sizeof *cfg, cmp_str);
    int n_tr = 0, n_te = 0;
    for (int i = 0; i < n_u; i++) {
        if (u[i].feat.kind != k) continue;
        const char *key = u[i].config;
        held[i] = bsearch(&key, cfg, (size_t)e->n_hold, sizeof *cfg, cmp_str) != NULL;
        if (held[i]) n_te++;
        else n_tr++;
    }
    free(cfg);
    if (n_tr != e->n_train || n_te != e->n_heldout) {
        snprintf(why, why_n, "%s: %d training / %d held-out rows, the fit had %d / %d",
                 pp_op_kind_name(k), n_tr, n_te, e->n_train, e->n_heldout);
        return -1;
    }
    return 0;
}

static perfpred_status add_held(pp_adapt *a, pp_op_kind k, const pp_node_feat *f, double err_rel)
{
    if (a->n_held == a->cap_held) {
        int cap = a->cap_held ? 2 * a->cap_held : 256;
        held_row *h = realloc(a->held, (size_t)cap * sizeof *h);
        if (!h) return PERFPRED_ERR_NOMEM;
        a->held = h;
        a->cap_held = cap;
    }
    held_row *h = &a->held[a->n_held++];
    h->kind = k;
    h->op = f->op_code;
    pp_feat_vector(f, h->v);
    h->err = err_rel;
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------- loading ---- */

perfpred_status pp_plan_adapt_load(const char *dir, const char *config_dir, const pp_device *dev,
                                   pp_adapt **out, pp_err *err)
{
    *out = NULL;
    pp_adapt *a = calloc(1, sizeof *a);
    if (!a) return pp_err_set(err, PERFPRED_ERR_NOMEM, "adaptive plan: out of memory");
    for (int k = 0; k < PP_OPK__COUNT; k++) a->kinds[k].mape = NAN;
    src_list src;
    memset(&src, 0, sizeof src);
    pp_layer_table *tables[PP_LM_MAX_SOURCES] = {0};
    int table_src[PP_LM_MAX_SOURCES] = {0};
    int n_tables = 0, n_u = 0;
    fit_row *u = NULL;
    int *held = NULL;
    pp_layer_models *lm = NULL;
    char path[4096], date[32], names[1024] = "", missing[1024] = "";
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    perfpred_status st = read_manifest(a, path, dev, &src, date, sizeof date, err);
    if (st != PERFPRED_OK) goto done;
    basis_add(a, "held-out MAPE per kind from %s%s", path, date[0] ? " (fit of " : "");
    if (date[0]) basis_add(a, "%s)", date, "");
    /* measured CSVs: what was measured, and the rows the fit split */
    size_t total = 0;
    for (int i = 0; i < src.n; i++) {
        char rp[4096];
        size_t L = strlen(missing), M = strlen(names);
        if (resolve(src.path[i], config_dir, dir, rp, sizeof rp) != 0) {
            snprintf(missing + L, sizeof missing - L, "%s%s", L ? ", " : "", src.path[i]);
            continue;
        }
        if ((st = pp_measure_layer_csv_read(rp, &tables[n_tables], err))) goto done;
        table_src[n_tables] = i;
        total += (size_t)tables[n_tables++]->n;
        snprintf(names + M, sizeof names - M, "%s%s", M ? ", " : "", src.path[i]);
    }
    u = calloc(total + 1, sizeof *u);
    held = calloc(total + 1, sizeof *held);
    a->measured = calloc(total + 1, sizeof *a->measured);
    if (!u || !held || !a->measured) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "adaptive plan: out of memory");
        goto done;
    }
    for (int f = 0; f < n_tables; f++)
        for (int i = 0; i < tables[f]->n; i++) {
            const pp_layer_row *r = &tables[f]->rows[i];
            if (!pp_device_named(dev, r->device)) continue;
            pp_strbuf b = {0};
            pp_plan_put_sig(&b, r);
            if (b.oom || !b.data) {
                free(b.data);
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "adaptive plan: out of memory");
                goto done;
            }
            a->measured[a->n_measured++] = b.data;
            /* the rows fit_layers.c fits: rows that run a kernel and that graph/ rebuilds */
            if (r->kind == PP_OPK_RESHAPE || r->kind == PP_OPK_SHAPE) continue;
            pp_err e = {0};
            if (pp_layer_row_features(r, &u[n_u].feat, &e) != PERFPRED_OK) continue;
            pp_strbuf c = {0};
            pp_measure_config_key(r, &c); /* the fit splits over these keys */
            if (c.oom || !c.data) {
                free(c.data);
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "adaptive plan: out of memory");
                goto done;
            }
            u[n_u].r = r;
            u[n_u].latency_ms = r->latency_ms / pp_measure_rescale_factor(&src.rescale[table_src[f]], dev,
                                                                   &u[n_u].feat, r->latency_ms);
            u[n_u++].config = c.data;
        }
    qsort(a->measured, (size_t)a->n_measured, sizeof *a->measured, cmp_str);
    if (src.n == 0) {
        basis_add(a, "; by kind only: the manifest names no measured CSV", "", "");
        goto done;
    }
    if (missing[0]) basis_add(a, "; measured CSVs not found: %s", missing, "");
    if (n_tables == 0) {
        basis_add(a, "; by kind only: none of its measured CSVs was found", "", "");
        goto done;
    }
    pp_err lerr = {0};
    if (pp_layer_models_load(dir, &lm, &lerr) != PERFPRED_OK) {
        basis_add(a, "; by kind only: the layer models did not load (%s)", lerr.msg, "");
        goto done;
    }
    char ok_kinds[256] = "", why_all[512] = "";
    for (int k = 1; k < PP_OPK__COUNT; k++) {
        const kind_entry *e = &a->kinds[k];
        if (!e->present || e->n_cfg < 0) continue;
        char why[256];
        if (reproduce_split(e, (pp_op_kind)k, u, n_u, held, why, sizeof why) != 0) {
            size_t L = strlen(why_all);
            snprintf(why_all + L, sizeof why_all - L, "%s%s", L ? "; " : "", why);
            continue;
        }
        int n_rows = 0;
        for (int i = 0; i < n_u; i++) {
            if (u[i].feat.kind != (pp_op_kind)k || !held[i]) continue;
            double pred;
            pp_err pe = {0};
            if (pp_layer_models_predict(lm, &u[i].feat, PP_LM_LATENCY, &pred, &pe) != PP_LM_OK ||
                !isfinite(pred))
                continue;
            if (add_held(a, (pp_op_kind)k, &u[i].feat, fabs(pred / u[i].latency_ms - 1.0))) {
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "adaptive plan: out of memory");
                goto done;
            }
            n_rows++;
        }
        if (n_rows > 0) {
            a->has_rows[k] = 1;
            size_t L = strlen(ok_kinds);
            snprintf(ok_kinds + L, sizeof ok_kinds - L, "%s%s", L ? ", " : "",
                     pp_op_kind_name((pp_op_kind)k));
        }
    }
    if (ok_kinds[0]) {
        basis_add(a, "; within %s: near the held-out rows (split reproduced from %s) with the "
                  "largest errors of the fitted models", ok_kinds, names);
        if (why_all[0]) basis_add(a, "; by kind only where the split differs (%s)", why_all, "");
    } else {
        basis_add(a, "; by kind only: the fit's held-out split could not be reproduced from %s%s",
                  names, why_all[0] ? " (" : "");
        if (why_all[0]) basis_add(a, "%s)", why_all, "");
    }
done:
    for (int i = 0; i < n_u; i++) free(u[i].config);
    free(u);
    free(held);
    for (int i = 0; i < n_tables; i++) pp_measure_layer_table_free(tables[i]);
    for (int i = 0; i < src.n; i++) free(src.path[i]);
    pp_layer_models_free(lm);
    if (st != PERFPRED_OK) {
        pp_plan_adapt_free(a);
        return st;
    }
    *out = a;
    return PERFPRED_OK;
}

void pp_plan_adapt_free(pp_adapt *a)
{
    if (!a) return;
    for (int i = 0; i < a->n_measured; i++) free(a->measured[i]);
    free(a->measured);
    free(a->held);
    free(a);
}

/* ------------------------------------------------------------------- answers ---- */

double pp_plan_adapt_kind_mape(const pp_adapt *a, pp_op_kind k)
{
    return (unsigned)k < PP_OPK__COUNT && a->kinds[k].present ? a->kinds[k].mape : NAN;
}

int pp_plan_adapt_measured(const pp_adapt *a, const char *sig)
{
    return a->n_measured > 0 &&
           bsearch(&sig, a->measured, (size_t)a->n_measured, sizeof *a->measured, cmp_str) != NULL;
}

int pp_plan_adapt_has_rows(const pp_adapt *a, pp_op_kind k)
{
    return (unsigned)k < PP_OPK__COUNT && a->has_rows[k];
}

double pp_plan_adapt_row_weight(const pp_adapt *a, const pp_node_feat *f)
{
    float v[PP_FEATVEC_LEN];
    pp_feat_vector(f, v);
    double w = PP_ADAPT_FLOOR, h2 = 2.0 * PP_ADAPT_BANDWIDTH * PP_ADAPT_BANDWIDTH;
    for (int j = 0; j < a->n_held; j++) {
        const held_row *h = &a->held[j];
        /* near means the same operator: a slow Erf says nothing about a HardSwish of its size */
        if (h->kind != f->kind || h->op != f->op_code) continue;
        double d2 = 0;
        for (int i = 0; i < PP_FEATVEC_LEN; i++) {
            double d = (double)v[i] - (double)h->v[i];
            d2 += d * d;
        }
        w += h->err * exp(-d2 / h2);
    }
    return w;
}

void pp_plan_adapt_kind_weights(const pp_adapt *a, const double *share, const int *use, double *w)
{
    double worst = PP_ADAPT_FLOOR, total = 0;
    for (int k = 0; k < PP_OPK__COUNT; k++) {
        w[k] = 0;
        double m = a ? pp_plan_adapt_kind_mape(a, (pp_op_kind)k) / 100.0 : NAN;
        if (use[k] && isfinite(m) && m > worst) worst = m;
    }
    for (int k = 0; k < PP_OPK__COUNT; k++) {
        if (!use[k]) continue;
        w[k] = share[k];
        if (!a) continue;
        double m = pp_plan_adapt_kind_mape(a, (pp_op_kind)k) / 100.0;
        w[k] *= isfinite(m) ? fmax(m, PP_ADAPT_FLOOR) : worst;
        total += w[k];
    }
    for (int k = 0; a && total > 0 && k < PP_OPK__COUNT; k++) w[k] /= total;
}

const char *pp_plan_adapt_basis(const pp_adapt *a) { return a->basis; }
