/* fit/fit_power.c: the GPU board power model fitted on gpu-benches' roofline sweep
 * (fit_power.h, predictor/power.h).
 *
 * Each sweep point is a steady kernel: DRAM traffic B (GB/s), fp32 work F (GF/s), board power P.
 * The model P = p0 + e_byte B + e_flop F is linear in its figures, so every fit is a weighted
 * least squares on relative error, sum ((x . theta) / P - 1)^2, solved exactly (pp_solve):
 * - one GPU: theta = (p0, e_byte, e_flop); where the sweep keeps the traffic almost constant (the
 *   GDDR cards stay at full bandwidth until the power limit) p0 and e_byte cannot be told apart,
 *   and p0 is set to idle_fraction x max power from the transferred fit;
 * - transferred: p0 = idle_fraction x max power, e_byte per DRAM family, e_flop shared:
 *   theta = (idle_fraction, e_byte[family]..., e_flop), each GPU's points weighing 1 in total.
 * Units: W, GB/s, GF/s, so e is W per GB/s = nJ per byte; stored as pJ (x 1000). */
#include "fit/fit.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predictor/calib.h"
#include "util/util.h"

#define MAX_POINTS 4096
#define N_FAM 5

/* gpu-benches' file stems and the descriptors they measured (gpu-benches README: the Alex nodes
 * of NHR@FAU hold A100 SXM4 40GB and A40 cards; genoa_l40 an L40; h200 an H200 SXM). */
static const struct {
    const char *stem, *device;
} file_map[] = {{"alex_a100_40", "a100-sxm4-40gb"},
                {"alex_a40", "a40"},
                {"genoa_l40", "l40"},
                {"h200", "h200-sxm-141gb"}};
#define N_MAP (sizeof file_map / sizeof file_map[0])

typedef struct pt {
    double bw, gf, w, mhz;
    int throttled;
} pt;

typedef struct gpu_data {
    const pp_device *d;
    pp_memory_family fam;
    int n, n_fit;
    pt p[MAX_POINTS];
} gpu_data;

/* One sweep line: "<i> <blocks> blocks <its> its <ai> Fl/B <bw> GB/s <gf> GF/s <mhz> Mhz <w> W ..." */
static int parse_line(const char *line, pt *out)
{
    int idx;
    double blocks, its, ai, bw, gf, mhz, w;
    if (sscanf(line, "%d %lf blocks %lf its %lf Fl/B %lf GB/s %lf GF/s %lf Mhz %lf W", &idx,
               &blocks, &its, &ai, &bw, &gf, &mhz, &w) != 8)
        return 0;
    if (!(bw >= 0 && bw < 1e5 && gf >= 0 && gf < 1e7 && mhz > 0 && mhz < 1e5 && w > 0 && w < 1e4))
        return 0;
    *out = (pt){bw, gf, w, mhz, 0};
    return 1;
}

static perfpred_status read_gpu(const char *path, const pp_device *d, gpu_data *g, int *skipped,
                                pp_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open", path);
    char line[512];
    g->d = d;
    g->fam = pp_memory_family_of(d->memory_type);
    g->n = 0;
    double max_mhz = 0;
    while (fgets(line, sizeof line, f)) {
        pt p;
        if (!parse_line(line, &p)) {
            if (line[strspn(line, " \t\r\n")]) (*skipped)++;
            continue;
        }
        if (g->n >= MAX_POINTS) {
            fclose(f);
            return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: more than %d sweep points", path,
                              MAX_POINTS);
        }
        g->p[g->n++] = p;
        if (p.mhz > max_mhz) max_mhz = p.mhz;
    }
    fclose(f);
    if (g->n < 4)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: %d sweep points (at least 4 needed)", path,
                          g->n);
    g->n_fit = 0;
    for (int i = 0; i < g->n; i++) {
        /* at the board's limit the clock drops and the power is the limit, not the model */
        pt *p = &g->p[i];
        p->throttled = p->w >= 0.97 * d->max_power_w || p->mhz < 0.98 * max_mhz;
        g->n_fit += !p->throttled;
    }
    if (g->n_fit < 4)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "%s: %d points below the power limit (at least 4 needed)", path,
                          g->n_fit);
    return PERFPRED_OK;
}

/* Accumulates weight * a a' and weight * a (target t) into the normal equations. */
static void accumulate(double *G, double *h, const double *a, int k, double t, double wt)
{
    for (int r = 0; r < k; r++) {
        h[r] += wt * a[r] * t;
        for (int c = 0; c < k; c++) G[r * k + c] += wt * a[r] * a[c];
    }
}

static double bw_spread(const gpu_data *g)
{
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < g->n; i++)
        if (!g->p[i].throttled) lo = fmin(lo, g->p[i].bw), hi = fmax(hi, g->p[i].bw);
    return lo > 0 ? hi / lo : 0;
}

/* The transferred figures from the GPUs with use[i]: idle fraction, e per family, e_flop. */
static int fit_transfer(gpu_data *const *gs, int ng, const int *use, pp_power_set *out)
{
    int col[N_FAM], k = 1;
    for (int f = 0; f < N_FAM; f++) col[f] = -1;
    for (int i = 0; i < ng; i++)
        if (use[i] && col[gs[i]->fam] < 0) col[gs[i]->fam] = k++;
    int kf = k++; /* e_flop */
    double G[64] = {0}, h[8] = {0}, th[8];
    for (int i = 0; i < ng; i++) {
        if (!use[i]) continue;
        const gpu_data *g = gs[i];
        for (int j = 0; j < g->n; j++) {
            const pt *p = &g->p[j];
            if (p->throttled) continue;
            double a[8] = {0};
            a[0] = g->d->max_power_w / p->w;
            a[col[g->fam]] = p->bw / p->w;
            a[kf] = p->gf / p->w;
            accumulate(G, h, a, k, 1.0, 1.0 / g->n_fit);
        }
    }
    if (pp_solve(k, G, h, th)) return -1;
    out->idle_fraction = th[0];
    for (int f = 0; f < N_FAM; f++) out->pj_per_byte_family[f] = col[f] > 0 ? th[col[f]] * 1e3 : 0;
    out->pj_per_flop = th[kf] * 1e3;
    return 0;
}

/* One GPU's own figures; p0 from idle_fraction where its traffic hardly varies. */
static int fit_one(const gpu_data *g, double idle_fraction, pp_gpu_power *out)
{
    int own_p0 = bw_spread(g) >= 1.5, k = own_p0 ? 3 : 2;
    double G[9] = {0}, h[3] = {0}, th[3];
    double p0 = idle_fraction * g->d->max_power_w;
    for (int j = 0; j < g->n; j++) {
        const pt *p = &g->p[j];
        if (p->throttled) continue;
        if (own_p0) accumulate(G, h, (double[]){1 / p->w, p->bw / p->w, p->gf / p->w}, 3, 1, 1);
        else accumulate(G, h, (double[]){p->bw / p->w, p->gf / p->w}, 2, 1 - p0 / p->w, 1);
    }
    if (pp_solve(k, G, h, th)) return -1;
    snprintf(out->device, sizeof out->device, "%s", g->d->name);
    out->p0_fitted = own_p0;
    out->p0_w = own_p0 ? th[0] : p0;
    out->pj_per_byte = th[own_p0 ? 1 : 0] * 1e3;
    out->pj_per_flop = th[own_p0 ? 2 : 1] * 1e3;
    out->points = g->n_fit;
    return 0;
}

/* Mean |predicted / measured - 1| (%) over a GPU's points of one kind (throttled or not, or
 * both when which < 0), predictions capped at max power. */
static double mape(const gpu_data *g, const pp_power_params *pw, int which)
{
    double s = 0;
    int n = 0;
    for (int j = 0; j < g->n; j++) {
        const pt *p = &g->p[j];
        if (which >= 0 && p->throttled != which) continue;
        s += fabs(pp_power_w(pw, p->bw, p->gf) / p->w - 1);
        n++;
    }
    return n ? 100 * s / n : NAN;
}

static pp_power_params transferred(const pp_power_set *s, const gpu_data *g)
{
    pp_power_params pw = {0};
    pw.max_w = g->d->max_power_w;
    pw.p0_w = s->idle_fraction * pw.max_w;
    double e = s->pj_per_byte_family[g->fam], sum = 0;
    int n = 0;
    for (int f = 1; f < N_FAM; f++)
        if (s->pj_per_byte_family[f] > 0) sum += s->pj_per_byte_family[f], n++;
    pw.pj_per_byte = e > 0 ? e : n ? sum / n : 0; /* a family no other GPU has: the mean */
    pw.pj_per_flop = s->pj_per_flop;
    return pw;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

perfpred_status pp_fit_power_run(const pp_device_db *db, const char *data_dir,
                                 pp_fit_power_report *rep, pp_err *err)
{
    memset(rep, 0, sizeof *rep);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/gpu-roofline", data_dir);
    DIR *dh = opendir(dir);
    if (!dh) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open (gpu-benches' roofline sweep)", dir);
    char *names[PP_POWER_MAX_GPUS];
    int nn = 0;
    perfpred_status st = PERFPRED_OK;
    for (struct dirent *e; (e = readdir(dh));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".txt") != 0) continue;
        if (nn == PP_POWER_MAX_GPUS) {
            st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: more than %d sweep files", dir,
                            PP_POWER_MAX_GPUS);
            break;
        }
        if (!(names[nn] = strndup(e->d_name, len - 4))) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            break;
        }
        nn++;
    }
    closedir(dh);
    qsort(names, (size_t)nn, sizeof names[0], cmp_name);
    gpu_data *gs[PP_POWER_MAX_GPUS] = {0};
    for (int i = 0; i < nn && !st; i++) {
        const char *dev = NULL;
        for (size_t m = 0; m < N_MAP; m++)
            if (strcmp(names[i], file_map[m].stem) == 0) dev = file_map[m].device;
        const pp_device *d = dev ? pp_devices_find(db, dev) : NULL;
        if (!dev) {
            st = pp_err_set(err, PERFPRED_ERR_PARSE,
                            "%s/%s.txt: no descriptor is known for this GPU (known: "
                            "alex_a100_40, alex_a40, genoa_l40, h200)",
                            dir, names[i]);
        } else if (!d || !(d->max_power_w > 0) || !d->memory_type) {
            st = pp_err_set(err, PERFPRED_ERR_DEVICE,
                            "%s/%s.txt: descriptor '%s' %s", dir, names[i], dev,
                            !d ? "not found" : "states no max_power_w or memory_type");
        } else if (!(gs[i] = malloc(sizeof *gs[i]))) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        } else {
            char path[4200];
            snprintf(path, sizeof path, "%s/%s.txt", dir, names[i]);
            st = read_gpu(path, d, gs[i], &rep->n_lines_skipped, err);
            pp_fit_power_gpu *r = &rep->gpu[i];
            snprintf(r->device, sizeof r->device, "%s", d->name);
            snprintf(r->file, sizeof r->file, "%s", names[i]);
            r->points = gs[i]->n;
            r->throttled = gs[i]->n - gs[i]->n_fit;
        }
    }
    if (!st && nn < 2)
        st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: %d sweep files (at least 2 needed)", dir, nn);
    int use[PP_POWER_MAX_GPUS] = {0};
    for (int i = 0; i < nn; i++) use[i] = 1;
    if (!st && fit_transfer(gs, nn, use, &rep->set))
        st = pp_err_set(err, PERFPRED_ERR_INTERNAL, "%s: the power fit is singular", dir);
    double pooled = 0;
    for (int i = 0; i < nn && !st; i++) {
        pp_gpu_power *g = &rep->set.g[i];
        if (fit_one(gs[i], rep->set.idle_fraction, g)) {
            st = pp_err_set(err, PERFPRED_ERR_INTERNAL, "%s: the power fit of %s is singular",
                            dir, names[i]);
            break;
        }
        pp_power_params own = {g->p0_w, g->pj_per_byte, g->pj_per_flop, gs[i]->d->max_power_w, 1,
                               NULL};
        g->fit_mape_pct = rep->gpu[i].fit_mape = mape(gs[i], &own, 0);
        /* leave it out: the transferred figures from the others */
        pp_power_set without = {0};
        use[i] = 0;
        int bad = fit_transfer(gs, nn, use, &without);
        use[i] = 1;
        if (bad) {
            st = pp_err_set(err, PERFPRED_ERR_INTERNAL,
                            "%s: the power fit without %s is singular", dir, names[i]);
            break;
        }
        pp_power_params pw = transferred(&without, gs[i]);
        rep->gpu[i].held_out_mape = mape(gs[i], &pw, -1);
        rep->gpu[i].held_out_mape_throttled = mape(gs[i], &pw, 1);
        pooled += rep->gpu[i].held_out_mape;
    }
    if (!st) {
        rep->set.n = rep->n_gpus = nn;
        rep->held_out_mape = pooled / nn;
        snprintf(rep->set.source, sizeof rep->set.source,
                 "gpu-benches (Ernst et al., te42kyfo/gpu-benches 1c36d50): gpu-roofline sweeps "
                 "of %d GPUs with measured board power",
                 nn);
    }
    for (int i = 0; i < nn; i++) free(names[i]), free(gs[i]);
    return st;
}

static void add_num_or_null(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

char *pp_fit_power_report_json(const pp_fit_power_report *rep)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *gpus = o ? cJSON_AddArrayToObject(o, "gpus") : NULL;
    if (!gpus) {
        cJSON_Delete(o);
        return NULL;
    }
    cJSON_AddNumberToObject(o, "lines_skipped", rep->n_lines_skipped);
    cJSON_AddNumberToObject(o, "leave_one_gpu_out_mape_pct", rep->held_out_mape);
    for (int i = 0; i < rep->n_gpus; i++) {
        const pp_fit_power_gpu *g = &rep->gpu[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddItemToArray(gpus, e);
        cJSON_AddStringToObject(e, "device", g->device);
        cJSON_AddStringToObject(e, "file", g->file);
        cJSON_AddNumberToObject(e, "points", g->points);
        cJSON_AddNumberToObject(e, "throttled_points", g->throttled);
        add_num_or_null(e, "fit_mape_pct", g->fit_mape);
        add_num_or_null(e, "held_out_mape_pct", g->held_out_mape);
        add_num_or_null(e, "held_out_mape_throttled_pct", g->held_out_mape_throttled);
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}

perfpred_status perfpred_calibrate_fit_power(const perfpred_ctx *ctx, const char *data_dir,
                                             int dry_run, char **report_json, char *errbuf,
                                             size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    pp_fit_power_report *rep = NULL;
    char *text = NULL;
    if (report_json) *report_json = NULL;
    if (!ctx || !data_dir || !report_json) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG,
                        "perfpred_calibrate_fit_power: NULL argument");
        goto done;
    }
    if (!(rep = malloc(sizeof *rep))) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = pp_fit_power_run(pp_ctx_db(ctx), data_dir, rep, &err))) goto done;
    if (!(text = pp_fit_power_report_json(rep))) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/artifacts", pp_ctx_config_dir(ctx));
    if (!dry_run && !(st = pp_mkdir_p(path, &err))) {
        snprintf(path, sizeof path, "%s/artifacts/gpu-power.json", pp_ctx_config_dir(ctx));
        st = pp_power_save(&rep->set, path, text, &err);
    }
    if (st) goto done;
    /* the answer: the report with the fitted figures beside it */
    cJSON *o = cJSON_Parse(text), *fig = cJSON_CreateObject();
    if (o && fig) {
        cJSON_AddItemToObject(o, "fitted", fig);
        cJSON_AddNumberToObject(fig, "idle_fraction", rep->set.idle_fraction);
        cJSON_AddNumberToObject(fig, "pj_per_flop", rep->set.pj_per_flop);
        for (int f = 1; f < N_FAM; f++)
            if (rep->set.pj_per_byte_family[f] > 0) {
                char k[48];
                snprintf(k, sizeof k, "pj_per_byte_%s", pp_memory_family_name((pp_memory_family)f));
                cJSON_AddNumberToObject(fig, k, rep->set.pj_per_byte_family[f]);
            }
        cJSON *gpus = cJSON_GetObjectItemCaseSensitive(o, "gpus"), *g;
        int i = 0;
        cJSON_ArrayForEach(g, gpus)
        {
            const pp_gpu_power *p = &rep->set.g[i++];
            cJSON_AddNumberToObject(g, "p0_w", p->p0_w);
            cJSON_AddBoolToObject(g, "p0_fitted", p->p0_fitted);
            cJSON_AddNumberToObject(g, "pj_per_byte", p->pj_per_byte);
            cJSON_AddNumberToObject(g, "pj_per_flop", p->pj_per_flop);
        }
        cJSON_AddBoolToObject(o, "written", !dry_run);
        *report_json = cJSON_Print(o);
    } else {
        cJSON_Delete(fig);
    }
    cJSON_Delete(o);
    if (!*report_json) st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
done:
    free(text);
    free(rep);
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st;
}
