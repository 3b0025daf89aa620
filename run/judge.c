/* run/judge.c: the stages of `calibrate run` from the fit on: the new artifacts are written beside
 * the device's current ones (artifacts/.<device>.new) and judged through a staging config dir that
 * sees them in place of the current ones; install then renames them into place. */
#define _GNU_SOURCE /* nftw's FTW_DEPTH and FTW_PHYS */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "devices/devices.h"
#include "measure/measure.h"
#include "predictor/predictor.h"
#include "run/run.h"

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a folder and what it holds (symbolic links themselves, not their targets). */
static int rm_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Symbolic links in dst to every entry of src but `skip` and dot entries. */
static perfpred_status link_entries(pp_run *R, const char *src, const char *dst, const char *skip)
{
    DIR *d = opendir(src);
    if (!d) return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot list: %s", src, strerror(errno));
    struct dirent *de;
    perfpred_status st = PERFPRED_OK;
    while (st == PERFPRED_OK && (de = readdir(d))) {
        if (de->d_name[0] == '.' || (skip && strcmp(de->d_name, skip) == 0)) continue;
        char from[PP_RUN_PATH * 2], to[PP_RUN_PATH * 2];
        snprintf(from, sizeof from, "%s/%s", src, de->d_name);
        snprintf(to, sizeof to, "%s/%s", dst, de->d_name);
        if (symlink(from, to) != 0 && errno != EEXIST)
            st = pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot link: %s", to, strerror(errno));
    }
    closedir(d);
    return st;
}

/* work/cfg: the config dir as predictions see it, but artifacts/<device> is the new folder. */
static perfpred_status staging_config(pp_run *R)
{
    char arts[PP_RUN_PATH], sarts[PP_RUN_PATH + 16], dev[PP_RUN_PATH * 2];
    if (rm_tree(R->stage_cfg) != 0)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot remove", R->stage_cfg);
    snprintf(arts, sizeof arts, "%s/artifacts", R->cfg);
    snprintf(sarts, sizeof sarts, "%s/artifacts", R->stage_cfg);
    pp_err e = {0};
    if (pp_mkdir_p(sarts, &e) != PERFPRED_OK) return pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
    perfpred_status st = link_entries(R, R->cfg, R->stage_cfg, "artifacts");
    if (st == PERFPRED_OK) st = link_entries(R, arts, sarts, R->device);
    snprintf(dev, sizeof dev, "%s/%s", sarts, R->device);
    if (st == PERFPRED_OK && symlink(R->newart, dev) != 0)
        st = pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot link: %s", dev, strerror(errno));
    return st;
}

static void fit_log(perfpred_log_level lvl, const char *msg, void *user)
{
    pp_run *R = user;
    if (lvl >= PERFPRED_LOG_WARN) pp_log(&R->lg, lvl, "  fit: %s", msg);
}

/* The distinct families of a network CSV (its "family" column), at most 32. */
typedef struct families {
    int col, n;
    char name[32][64];
} families;

static int family_row(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    families *F = user;
    (void)err;
    if (is_header) {
        F->col = pp_measure_csv_column(rec, "family");
        return 0;
    }
    if (F->col < 0 || F->col >= rec->n_fields) return 0;
    const char *f = rec->fields[F->col];
    for (int i = 0; i < F->n; i++)
        if (strcmp(F->name[i], f) == 0) return 0;
    if (F->n < 32) snprintf(F->name[F->n++], sizeof F->name[0], "%s", f);
    return 0;
}

/* Held-out folds for the in-network correction from the families measured: the random CNNs, the
 * random transformers, and the zoo's families in two halves, each fold only where it has rows.
 * Returns the number of folds (the correction is judged on held-out folds: fewer than 2, none). */
static int training_folds(const char *nets, pp_strbuf *out)
{
    families F;
    memset(&F, 0, sizeof F);
    pp_err e = {0};
    if (pp_measure_csv_read(nets, family_row, &F, &e) != PERFPRED_OK) return 0;
    char zoo[2][1024] = {"", ""};
    int folds = 0, nz = 0;
    for (int i = 0; i < F.n; i++) {
        if (strcmp(F.name[i], "randcnn") == 0 || strcmp(F.name[i], "randtf") == 0) {
            pp_strbuf_printf(out, "%s%s", folds ? ";" : "", F.name[i]);
            folds++;
        } else {
            char *z = zoo[nz++ % 2];
            size_t l = strlen(z);
            snprintf(z + l, sizeof zoo[0] - l, "%s%s", l ? "," : "", F.name[i]);
        }
    }
    for (int k = 0; k < 2; k++)
        if (zoo[k][0]) {
            pp_strbuf_printf(out, "%s%s", folds ? ";" : "", zoo[k]);
            folds++;
        }
    return out->oom ? 0 : folds;
}

/* The in-network correction: judged on held-out folds of families, written where it beats the
 * layer sum there, with the 80 % intervals of those held-out rows. */
static perfpred_status fit_correction(pp_run *R, const char *nets)
{
    char eb[512];
    pp_strbuf fb = {0};
    int n_folds = training_folds(nets, &fb);
    const char *folds = fb.data;
    if (n_folds < 2) {
        free(fb.data);
        pp_log(&R->lg, PERFPRED_LOG_WARN,
               "  %s: fewer than two families of networks were measured: no in-network "
               "correction (the layer sum answers)",
               nets);
        return PERFPRED_OK;
    }
    perfpred_overhead_params op = perfpred_overhead_default_params();
    op.device = R->device;
    op.networks_csv = nets;
    op.folds = folds;
    op.config_dir = R->stage_cfg;
    op.out_dir = R->newart;
    perfpred_heldout *h = perfpred_heldout_new();
    op.heldout = h;
    perfpred_overhead_report *orep = calloc(1, sizeof *orep);
    if (!h || !orep) {
        perfpred_heldout_free(h);
        free(orep);
        free(fb.data);
        return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    }
    perfpred_status st = perfpred_calibrate_fit_overhead(&op, orep, eb, sizeof eb);
    if (st == PERFPRED_OK) {
        R->out->correction_written = orep->written;
        R->out->n_network_rows = orep->n_used;
        pp_log(&R->lg, PERFPRED_LOG_INFO,
               "  in-network correction on %d networks, folds %s: held out %.1f %% (layer sum "
               "%.1f %%): %s",
               orep->n_used, folds, orep->pooled_corrected_mape_pct,
               orep->pooled_layer_sum_mape_pct,
               orep->written        ? "written"
               : orep->out_of_range ? "not written (its scale lies outside 0.05 to 20: the "
                                      "layer models are far from this machine's networks)"
                                    : "not written (it does not beat the layer sum)");
        char data[512];
        snprintf(data, sizeof data,
                 "calibrate run: %s, held-out folds %.300s of measurements/networks.csv",
                 R->device, folds);
        st = perfpred_heldout_write(h, R->device, R->newart, R->stage_cfg, data, NULL, eb,
                                    sizeof eb);
    }
    if (st != PERFPRED_OK) pp_run_fail(R, st, "in-network correction: %s", eb);
    perfpred_heldout_free(h);
    free(orep);
    free(fb.data);
    return st;
}

/* The file a quick run refits; everything else of the device's own folder goes on as it was. */
#define PP_RUN_CORRECTION_FILE "overhead-latency.json"

/* Copies the regular files of the device's artifacts folder into the new one, but the correction a
 * quick run refits (intervals.json goes along: the fit's held-out rows replace only its own
 * path's entry there). */
static perfpred_status copy_own_models(pp_run *R, int *n_files)
{
    DIR *d = opendir(R->art);
    if (!d) return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot list: %s", R->art, strerror(errno));
    struct dirent *de;
    perfpred_status st = PERFPRED_OK;
    *n_files = 0;
    while (st == PERFPRED_OK && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, PP_RUN_CORRECTION_FILE) == 0) continue;
        char from[PP_RUN_PATH * 2], to[PP_RUN_PATH * 2];
        struct stat sb;
        snprintf(from, sizeof from, "%s/%s", R->art, de->d_name);
        if (stat(from, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        snprintf(to, sizeof to, "%s/%s", R->newart, de->d_name);
        st = pp_run_copy_file(R, from, to);
        if (st == PERFPRED_OK) (*n_files)++;
    }
    closedir(d);
    return st;
}

perfpred_status pp_run_quick_source(pp_run *R, char *from, size_t n, int *own)
{
    perfpred_ctx *ctx = NULL;
    perfpred_status st = pp_run_ctx_open(R, R->cfg, &ctx);
    if (st != PERFPRED_OK) return st;
    const pp_device *d = pp_devices_find(pp_ctx_db(ctx), R->device);
    const pp_device *src = d ? pp_calib_source_device(pp_ctx_calib(ctx), d, NULL) : NULL;
    *own = src && src == d;
    snprintf(from, n, "%s", src ? src->name : "");
    perfpred_ctx_close(ctx);
    if (!src)
        return pp_run_fail(R, PERFPRED_ERR_INVALID_ARG,
                           "--quick: %s has no layer models to correct: none of its own (%s), "
                           "no calibrated CPU named by its descriptor's calibration_from, and "
                           "none nearest to its figures (an eager-PyTorch CPU's fp32 peak, "
                           "memory bandwidth and cores pick one); calibrate it without --quick",
                           R->device, R->art);
    return PERFPRED_OK;
}

/* A quick run keeps the layer models the device answers with now: its own go on in the new folder;
 * another CPU's (calibration_from: for a new device, the nearest calibrated one) stay where they
 * are and answer through the descriptor. Either way the correction is fitted over them. */
static perfpred_status quick_models(pp_run *R)
{
    char from[64];
    int own = 0, n = 0;
    perfpred_status st = pp_run_quick_source(R, from, sizeof from, &own);
    if (st != PERFPRED_OK) return st;
    if (!own) {
        pp_log(&R->lg, PERFPRED_LOG_INFO,
               "  layer models: %s's, transferred (calibration_from in the descriptor)", from);
        return PERFPRED_OK;
    }
    st = copy_own_models(R, &n);
    if (st == PERFPRED_OK)
        pp_log(&R->lg, PERFPRED_LOG_INFO, "  layer models: the device's own, kept (%d files of %s)",
               n, R->art);
    return st;
}

perfpred_status pp_run_stage_fit(pp_run *R)
{
    if (rm_tree(R->newart) != 0)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot remove", R->newart);
    pp_err e = {0};
    if (pp_mkdir_p(R->newart, &e) != PERFPRED_OK)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
    perfpred_status st = staging_config(R);
    if (st != PERFPRED_OK) return st;
    char nets[PP_RUN_PATH];
    pp_run_path(R, nets, sizeof nets, "measurements/networks.csv");
    if (R->quick) {
        st = quick_models(R);
        return st == PERFPRED_OK ? fit_correction(R, nets) : st;
    }
    char layers[PP_RUN_PATH], eb[512];
    pp_run_path(R, layers, sizeof layers, "measurements/layers.csv");
    const char *lc[1] = {layers};
    perfpred_fit_params fp = perfpred_fit_default_params();
    fp.device = R->device;
    fp.layers_csvs = lc;
    fp.n_layers_csvs = 1;
    fp.out_dir = R->newart;
    fp.config_dir = R->stage_cfg;
    fp.nthread = 2;
    fp.log = fit_log;
    fp.log_user = R;
    perfpred_fit_report *fr = calloc(1, sizeof *fr);
    if (!fr) return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    st = perfpred_calibrate_fit(&fp, fr, eb, sizeof eb);
    if (st != PERFPRED_OK) {
        free(fr);
        return pp_run_fail(R, st, "fit: %s", eb);
    }
    R->out->n_layer_rows = fr->n_rows_read;
    R->out->layer_heldout_mape_pct = fr->model.mape_pct;
    pp_log(&R->lg, PERFPRED_LOG_INFO,
           "  layer models: %d rows, %d kinds; held-out layers MAPE %.1f %% (roofline %.1f %%)",
           fr->n_rows_read, fr->n_kinds, fr->model.mape_pct, fr->roofline.mape_pct);
    free(fr);

    return fit_correction(R, nets);
}

/* ---- judge ---- */

static const char *const JUDGE_NAMES[PERFPRED_RUN_MAX_JUDGE] = {
    "random CNNs", "random transformers", "torchvision, held out", "all"};

static int judge_group(const char *family)
{
    if (strcmp(family, "randcnn") == 0) return 0;
    if (strcmp(family, "randtf") == 0) return 1;
    return 2;
}

static perfpred_status eval_judge(pp_run *R, const char *cfg, int layer_sum_only,
                                  perfpred_eval_report *rep)
{
    char nets[PP_RUN_PATH], eb[512];
    perfpred_eval_params ep = perfpred_eval_default_params();
    ep.device = R->device;
    ep.networks_csv = pp_run_path(R, nets, sizeof nets, "measurements/judge.csv");
    ep.config_dir = cfg;
    ep.layer_sum_only = layer_sum_only;
    perfpred_status st = perfpred_eval(&ep, rep, eb, sizeof eb);
    if (st != PERFPRED_OK) return pp_run_fail(R, st, "judge: %s", eb);
    return PERFPRED_OK;
}

/* Metrics of rep's points in judge group g (3: all) into m. */
static void group_metrics(pp_run *R, const perfpred_eval_report *rep, int g, perfpred_metrics *m)
{
    int n = 0;
    double *pred = malloc(sizeof(double) * (size_t)(rep->n_points + 1));
    double *meas = malloc(sizeof(double) * (size_t)(rep->n_points + 1));
    memset(m, 0, sizeof *m);
    m->mape_pct = m->rmspe_pct = m->within10_pct = m->spearman = NAN;
    if (!pred || !meas) goto out;
    for (int i = 0; i < rep->n_points; i++) {
        const perfpred_eval_point *pt = &rep->points[i];
        if (g != 3 && judge_group(pt->group) != g) continue;
        pred[n] = pt->predicted_ms;
        meas[n] = pt->measured_ms;
        n++;
    }
    pp_metrics pm;
    pp_err e = {0};
    if (n > 0 && pp_measure_metrics(pred, meas, n, &pm, &e) == PERFPRED_OK)
        *m = pp_measure_metrics_public(&pm);
    else if (n > 0)
        pp_log(&R->lg, PERFPRED_LOG_WARN, "  judge: %s", e.msg);
out:
    free(pred);
    free(meas);
}

/* ---- the measurements' own repeat ---- */

/* One configuration of a runner journal: the minimum of each visit's samples, by round. */
typedef struct jkey {
    char key[256];
    int group;
    int n[2];
    double v[2][64]; /* [even, odd round][visit] */
} jkey;

/* *p grown to twice its capacity *cap (first: the first capacity); NULL, *p and *cap unchanged,
 * when out of memory. */
static void *grow_array(void *p, int *cap, size_t elem, int first)
{
    int c = *cap ? 2 * *cap : first;
    void *q = realloc(p, elem * (size_t)c);
    if (q) *cap = c;
    return q;
}

/* One visit of a journal: its configuration, round parity, fastest sample, canary and time. */
typedef struct jvisit {
    int key, half;
    double lo, canary, t; /* canary 0: none; t NaN: no wall time */
} jvisit;

/* The canary level at each visit, as the runners scale their rows (runners/timing.py,
 * canary_levels): the median canary of the visits within PP_RUN_CANARY_WINDOW_S seconds of it; a
 * visit without a time keeps its own canary. lv[i] = 0 where the visit has no canary. */
#define PP_RUN_CANARY_WINDOW_S 60.0
static void canary_levels(const jvisit *v, int n, double *lv, double *buf)
{
    for (int i = 0; i < n; i++) {
        lv[i] = v[i].canary;
        if (!(v[i].canary > 0) || !isfinite(v[i].t)) continue;
        int m = 0;
        for (int j = 0; j < n; j++)
            if (v[j].canary > 0 && isfinite(v[j].t) &&
                fabs(v[j].t - v[i].t) <= PP_RUN_CANARY_WINDOW_S)
                buf[m++] = v[j].canary;
        lv[i] = pp_measure_median(buf, m);
    }
}

/* Reads a runner journal (`<csv>.partial.jsonl`: one JSON object per line, visits with key,
 * round, samples_ns and, from a canary run, canary_ns and t) and gives, per judge group, the mean
 * disagreement of each configuration's two half-runs, each visit scaled by the canary level of its
 * minute as the runners scale the rows (the run's reference level multiplies both halves alike and
 * cancels); NaN where a group has no configuration with both halves. */
void pp_run_journal_repeat(const char *path, double pct[PERFPRED_RUN_MAX_JUDGE],
                           int count[PERFPRED_RUN_MAX_JUDGE])
{
    for (int g = 0; g < PERFPRED_RUN_MAX_JUDGE; g++) {
        pct[g] = NAN;
        count[g] = 0;
    }
    FILE *f = fopen(path, "r");
    if (!f) return;
    int cap = 0, n = 0, vcap = 0, nv = 0;
    jkey *keys = NULL;
    jvisit *vis = NULL;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, f) > 0) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *ty = j ? cJSON_GetObjectItemCaseSensitive(j, "type") : NULL;
        const cJSON *k = j ? cJSON_GetObjectItemCaseSensitive(j, "key") : NULL;
        const cJSON *rd = j ? cJSON_GetObjectItemCaseSensitive(j, "round") : NULL;
        const cJSON *sm = j ? cJSON_GetObjectItemCaseSensitive(j, "samples_ns") : NULL;
        const cJSON *cn = j ? cJSON_GetObjectItemCaseSensitive(j, "canary_ns") : NULL;
        const cJSON *tt = j ? cJSON_GetObjectItemCaseSensitive(j, "t") : NULL;
        if (cJSON_IsString(ty) && strcmp(ty->valuestring, "visit") == 0 && cJSON_IsString(k) &&
            cJSON_IsNumber(rd) && cJSON_IsArray(sm) && cJSON_GetArraySize(sm) > 0) {
            double lo = INFINITY;
            const cJSON *it;
            cJSON_ArrayForEach(it, sm)
            {
                if (cJSON_IsNumber(it) && it->valuedouble < lo) lo = it->valuedouble;
            }
            int i = 0;
            while (i < n && strcmp(keys[i].key, k->valuestring) != 0) i++;
            if (i == n) {
                jkey *nk = n == cap ? grow_array(keys, &cap, sizeof *keys, 64) : keys;
                if (!nk) {
                    cJSON_Delete(j);
                    break;
                }
                keys = nk;
                memset(&keys[n], 0, sizeof keys[n]);
                snprintf(keys[n].key, sizeof keys[n].key, "%s", k->valuestring);
                keys[n].group = judge_group(strncmp(k->valuestring, "randcnn_", 8) == 0 ? "randcnn"
                                            : strncmp(k->valuestring, "randtf_", 7) == 0
                                                ? "randtf"
                                                : "");
                n++;
            }
            jvisit *nvp = nv == vcap ? grow_array(vis, &vcap, sizeof *vis, 256) : vis;
            if (!nvp) {
                cJSON_Delete(j);
                break;
            }
            vis = nvp;
            vis[nv++] = (jvisit){i, rd->valueint & 1, lo,
                                 cJSON_IsNumber(cn) && cn->valuedouble > 0 ? cn->valuedouble : 0,
                                 cJSON_IsNumber(tt) ? tt->valuedouble : NAN};
        }
        cJSON_Delete(j);
    }
    free(line);
    fclose(f);
    double *lv = malloc(sizeof(double) * (size_t)(2 * nv + 1));
    if (lv) canary_levels(vis, nv, lv, lv + nv);
    for (int i = 0; lv && i < nv; i++) {
        double lo = vis[i].lo;
        if (lv[i] > 0) lo /= lv[i];
        jkey *K = &keys[vis[i].key];
        int h = vis[i].half;
        if (isfinite(lo) && lo > 0 && K->n[h] < 64) K->v[h][K->n[h]++] = lo;
    }
    double sum[PERFPRED_RUN_MAX_JUDGE] = {0};
    for (int i = 0; lv && i < n; i++) {
        if (keys[i].n[0] == 0 || keys[i].n[1] == 0) continue;
        double a = pp_measure_median(keys[i].v[0], keys[i].n[0]);
        double b = pp_measure_median(keys[i].v[1], keys[i].n[1]);
        double d = fabs(a - b) / ((a + b) / 2);
        sum[keys[i].group] += d;
        count[keys[i].group]++;
        sum[3] += d;
        count[3]++;
    }
    for (int g = 0; g < PERFPRED_RUN_MAX_JUDGE; g++)
        if (count[g] > 0) pct[g] = 100 * sum[g] / count[g];
    free(lv);
    free(vis);
    free(keys);
}

static void before_what(pp_run *R, char *out, size_t n)
{
    char man[PP_RUN_PATH * 2], corr[PP_RUN_PATH * 2];
    snprintf(man, sizeof man, "%s/manifest.json", R->art);
    snprintf(corr, sizeof corr, "%s/" PP_RUN_CORRECTION_FILE, R->art);
    /* its own layer models, or a correction of its own over borrowed ones (a quick run's) */
    if (access(man, F_OK) == 0 || access(corr, F_OK) == 0)
        snprintf(out, n, "the device's previous calibration");
    else if (R->out->borrowed_from[0])
        snprintf(out, n, "transferred: %.63s's models and correction, scaled by the two "
                 "descriptors' figures", R->out->borrowed_from);
    else snprintf(out, n, "the descriptor's roofline (an estimate)");
}

static void write_report(pp_run *R)
{
    const perfpred_run_report *o = R->out;
    pp_strbuf b = {0};
    pp_strbuf_printf(&b, "calibrate run: %s\n", o->device);
    pp_strbuf_printf(&b, "judged on measurements/judge.csv: networks of families and seeds no "
                         "stage trained on\n");
    pp_strbuf_printf(&b, "%-24s %5s %9s %9s %9s %9s %9s %22s\n", "set", "rows", "repeat %",
                     "layers %", "calib. %", "<=10 %", "Spearman", "before this run %");
    for (int g = 0; g < o->n_judge; g++) {
        const perfpred_run_judge *J = &o->judge[g];
        pp_strbuf_printf(&b, "%-24s %5d %9.1f %9.1f %9.1f %9.1f %9.3f %22.1f\n", J->name,
                         J->calibrated.n, J->repeat_pct, J->layer_sum.mape_pct,
                         J->calibrated.mape_pct, J->calibrated.within10_pct,
                         J->calibrated.spearman, J->before.mape_pct);
    }
    pp_strbuf_printf(&b, "before this run: %s\n", o->before_what);
    pp_strbuf_printf(&b, "repeat: each row timed as two half-runs (even and odd rounds), their "
                         "mean disagreement: what a MAPE cannot go below\n");
    char path[PP_RUN_PATH];
    pp_err e = {0};
    if (!b.oom && pp_write_file_atomic(pp_run_path(R, path, sizeof path, "report.txt"), b.data,
                                       b.len, &e) != PERFPRED_OK)
        pp_log(&R->lg, PERFPRED_LOG_WARN, "  %s", e.msg);
    free(b.data);
}

perfpred_status pp_run_stage_judge(pp_run *R)
{
    pp_run_load_probe(R);
    perfpred_eval_report cal = {0}, sum = {0}, bef = {0};
    perfpred_status st = eval_judge(R, R->stage_cfg, 0, &cal);
    if (st == PERFPRED_OK) st = eval_judge(R, R->stage_cfg, 1, &sum);
    int have_before = st == PERFPRED_OK && eval_judge(R, R->cfg, 0, &bef) == PERFPRED_OK;
    /* what the device answered before may fail (no layer models, no roofline figures): not an
     * error of this run; a failure of the judgement itself keeps its message */
    if (st == PERFPRED_OK && !have_before) R->errbuf[0] = 0;
    if (st == PERFPRED_OK) {
        perfpred_run_report *o = R->out;
        before_what(R, o->before_what, sizeof o->before_what);
        o->n_judge = 0;
        double rep_pct[PERFPRED_RUN_MAX_JUDGE];
        int rep_n[PERFPRED_RUN_MAX_JUDGE];
        char journal[PP_RUN_PATH];
        pp_run_journal_repeat(pp_run_path(R, journal, sizeof journal,
                                   "measurements/judge.csv.partial.jsonl"),
                       rep_pct, rep_n);
        for (int g = 0; g < PERFPRED_RUN_MAX_JUDGE; g++) {
            perfpred_run_judge J;
            memset(&J, 0, sizeof J);
            snprintf(J.name, sizeof J.name, "%s", JUDGE_NAMES[g]);
            group_metrics(R, &cal, g, &J.calibrated);
            if (J.calibrated.n == 0) continue;
            group_metrics(R, &sum, g, &J.layer_sum);
            if (have_before) group_metrics(R, &bef, g, &J.before);
            else J.before.mape_pct = NAN;
            J.repeat_pct = rep_pct[g];
            J.n_repeat = rep_n[g];
            o->judge[o->n_judge++] = J;
        }
        o->n_judge_rows = cal.n_points;
        /* the previous calibration stays where it is closer on these networks; so does a quick
         * run's transfer alone, which its correction only adds to */
        const perfpred_run_judge *all = o->n_judge ? &o->judge[o->n_judge - 1] : NULL;
        int keep = all && have_before &&
                   (strstr(o->before_what, "previous calibration") || R->quick) &&
                   all->before.mape_pct < all->calibrated.mape_pct && !R->p->install_anyway;
        char dpath[PP_RUN_PATH], text[160];
        snprintf(text, sizeof text, "%s %.6g %.6g\n", keep ? "keep" : "install",
                 all ? all->before.mape_pct : NAN, all ? all->calibrated.mape_pct : NAN);
        pp_err e = {0};
        if (pp_write_file_atomic(pp_run_path(R, dpath, sizeof dpath, "install.txt"), text,
                                 strlen(text), &e) != PERFPRED_OK)
            st = pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
        pp_run_path(R, o->report_path, sizeof o->report_path, "report.txt");
        pp_run_path(R, o->plot_path, sizeof o->plot_path, "judge.png");
        char eb[512], title[256];
        snprintf(title, sizeof title, "%s: networks no stage trained on", R->device);
        if (perfpred_eval_plot(&cal, o->plot_path, title, eb, sizeof eb) != PERFPRED_OK) {
            pp_log(&R->lg, PERFPRED_LOG_WARN, "  plot: %s", eb);
            o->plot_path[0] = 0;
        }
        write_report(R);
    }
    perfpred_eval_report_free(&cal);
    perfpred_eval_report_free(&sum);
    perfpred_eval_report_free(&bef);
    return st;
}

/* ---- install ---- */

perfpred_status pp_run_stage_install(pp_run *R)
{
    char old[PP_RUN_PATH + 128], dpath[PP_RUN_PATH], what[16] = "";
    double prev = NAN, mine = NAN;
    snprintf(old, sizeof old, "%s/artifacts/.%s.old", R->cfg, R->device);
    struct stat sb;
    int have_new = stat(R->newart, &sb) == 0;
    FILE *df = fopen(pp_run_path(R, dpath, sizeof dpath, "install.txt"), "r");
    if (df) {
        if (fscanf(df, "%15s %lf %lf", what, &prev, &mine) < 1) what[0] = 0;
        fclose(df);
    }
    if (have_new && strcmp(what, "keep") == 0 && !R->p->install_anyway) {
        R->out->kept_previous = 1;
        snprintf(R->out->artifacts_dir, sizeof R->out->artifacts_dir, "%s", R->newart);
        pp_log(&R->lg, PERFPRED_LOG_WARN,
               "  kept what the device answered before this run: on the judging networks it is "
               "%.1f %% off, the new calibration %.1f %%; the new one waits in %s (--resume "
               "--install-anyway puts it in force)",
               prev, mine, R->newart);
        return PERFPRED_OK;
    }
    if (have_new) {
        /* a run killed between the two renames has moved the current folder aside already */
        if (stat(R->art, &sb) == 0) {
            if (rm_tree(old) != 0 || rename(R->art, old) != 0)
                return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot move aside: %s", R->art,
                                   strerror(errno));
        }
        if (rename(R->newart, R->art) != 0)
            return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot move into place: %s", R->art,
                               strerror(errno));
    } else if (stat(R->art, &sb) != 0) {
        return pp_run_fail(R, PERFPRED_ERR_IO,
                           "%s: the new artifacts are gone and none are in place; run again "
                           "without --resume",
                           R->newart);
    }
    rm_tree(old);
    rm_tree(R->stage_cfg);
    snprintf(R->out->artifacts_dir, sizeof R->out->artifacts_dir, "%s", R->art);
    pp_log(&R->lg, PERFPRED_LOG_INFO, "  in force: %s", R->art);
    return PERFPRED_OK;
}
