/* fit/fit_neusight.c: a GPU calibrated from NeuSight's kernel sweeps. Per op kind: import the
 * training rows of one GPU, describe each by its single-node graph, fit an XGBoost latency model on
 * log(measured / roofline), and judge it and the bare roofline on NeuSight's test rows of the same
 * GPU (rows never seen in training; conv, which has no test file, on a seeded held-out split). */
#include "fit/fit.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

pp_fit_params pp_fit_neusight_default_params(void)
{
    pp_fit_params p;
    memset(&p, 0, sizeof p);
    p.device = NULL;
    p.conv_gpu = NULL;
    p.date = NULL;
    p.conv_heldout_fraction = 0.2;
    p.write_artifacts = 1;
    p.peak_tflops = PP_A100_PCIE40_FP32_TFLOPS;
    p.bw_gbs = PP_A100_PCIE40_BW_GBS;
    p.compute_units = PP_A100_SMS;
    p.figures_from = "A100 PCIe 40GB datasheet";
    p.lm = pp_lm_default_params();
    return p;
}

/* Every NeuSight kernel ran in FP32 (see calibrate.h). */
static pp_lm_base gpu_base(const pp_fit_params *p, double floor_ms)
{
    pp_lm_base b;
    b.peak_tflops = p->peak_tflops;
    b.bw_gbs = p->bw_gbs;
    b.floor_ms = floor_ms;
    b.compute_units = p->compute_units;
    b.blas_tflops = 0;
    b.pool_tflops = 0;
    b.conv_call_ms = 0;
    return b;
}

/* ---- helpers ---- */

/* splitmix64: the seeded generator behind the conv hold-out split. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Shape key of a row: op type and every input's role and dims. */
static void row_key(const pp_layer_row *r, char *out, size_t n)
{
    pp_strbuf b = {0};
    pp_strbuf_put(&b, r->op_type);
    for (int i = 0; i < r->n_inputs; i++) {
        const pp_layer_input *in = pp_layer_row_input(r, i);
        pp_strbuf_printf(&b, "|%c", in->role);
        for (int d = 0; d < in->rank; d++) pp_strbuf_printf(&b, "x%lld", (long long)in->dims[d]);
    }
    snprintf(out, n, "%s", b.data ? b.data : "");
    free(b.data);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The op groups one regressor covers. */
typedef struct kind_group {
    pp_op_kind kind;
    const char *ops[12];
} kind_group;

static const kind_group groups[] = {
    {PP_OPK_BMM, {"bmm", NULL}},
    {PP_OPK_LINEAR, {"linear", NULL}},
    {PP_OPK_CONV, {"conv", NULL}},
    {PP_OPK_ELEMWISE,
     {"add", "addu", "mul", "mulu", "div", "divu", "pow", "powu", "relu", "gelu", "tanh", NULL}},
    {PP_OPK_NORM, {"ln", NULL}},
    {PP_OPK_SOFTMAX, {"softmax", NULL}},
};

typedef struct fit_state {
    const char *root, *gpu, *out_dir;
    const pp_fit_params *p;
    pp_neusight_source src;
    pp_lm_manifest man;
    pp_arena *arena;          /* manifest strings */
    pp_fit_report *rep;
} fit_state;

static void note_bad(fit_state *s, const pp_layer_table *t)
{
    s->rep->n_bad_rows += t->bad.n;
    for (int i = 0; i < t->bad.n_kept && s->rep->n_bad_msgs < 8; i++)
        snprintf(s->rep->bad_msgs[s->rep->n_bad_msgs++], sizeof s->rep->bad_msgs[0], "%s",
                 t->bad.msgs[i]);
}

static perfpred_status add_source(fit_state *s, const char *op, const char *gpu,
                                  pp_neusight_split split, int rows, pp_err *err)
{
    char rel[1024];
    perfpred_status st = pp_datasets_neusight_path(op, gpu, split, rel, sizeof rel, err);
    if (st != PERFPRED_OK) return st;
    /* test files are shared by several ops of a group: list each file once per GPU */
    for (int i = 0; i < s->man.n_sources; i++)
        if (strcmp(s->man.sources[i].path, rel) == 0 && strcmp(s->man.sources[i].gpu, gpu) == 0) {
            s->man.sources[i].rows += rows;
            return PERFPRED_OK;
        }
    if (s->man.n_sources >= PP_LM_MAX_SOURCES)
        return pp_err_set(err, PERFPRED_ERR_INTERNAL, "manifest: too many sources");
    pp_lm_source *d = &s->man.sources[s->man.n_sources++];
    d->path = pp_arena_strdup(s->arena, rel);
    d->repo = pp_arena_strdup(s->arena, s->src.repo);
    d->commit = pp_arena_strdup(s->arena, s->src.commit);
    d->gpu = pp_arena_strdup(s->arena, gpu);
    d->rows = rows;
    d->role = split == PP_NEUSIGHT_TRAIN ? "train" : "test";
    if (!d->path || !d->repo || !d->commit || !d->gpu)
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    return PERFPRED_OK;
}

/* Features of every row of t; rows graph/ cannot describe are an error (they would be silently
 * missing from training otherwise). */
static perfpred_status table_features(const pp_layer_table *t, pp_node_feat **feats, double **y,
                                      pp_err *err)
{
    *feats = malloc((size_t)(t->n ? t->n : 1) * sizeof **feats);
    *y = malloc((size_t)(t->n ? t->n : 1) * sizeof **y);
    if (!*feats || !*y) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < t->n; i++) {
        perfpred_status st = pp_layer_row_features(&t->rows[i], &(*feats)[i], err);
        if (st != PERFPRED_OK) return st;
        (*y)[i] = t->rows[i].latency_ms;
    }
    return PERFPRED_OK;
}

/* perm = a seeded shuffle of 0..n-1 (Fisher-Yates over splitmix64). */
static void seeded_perm(int n, int seed, int *perm)
{
    for (int i = 0; i < n; i++) perm[i] = i;
    uint64_t rng = (uint64_t)seed * 0x100000001B3ull + 17;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(splitmix64(&rng) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* Moves a seeded share frac of t's rows into held (appended), keeping the rest in t. */
static perfpred_status split_rows(pp_layer_table *t, pp_layer_table *held, double frac, int seed,
                                  pp_err *err)
{
    int n = t->n, n_out = (int)floor(frac * n);
    int *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    char *out = calloc((size_t)(n ? n : 1), 1);
    if (!perm || !out) {
        free(perm);
        free(out);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    seeded_perm(n, seed, perm);
    for (int i = 0; i < n_out; i++) out[perm[i]] = 1;
    perfpred_status st = PERFPRED_OK;
    int k = 0;
    for (int i = 0; i < n && st == PERFPRED_OK; i++) {
        if (out[i]) st = pp_measure_layer_table_add(held, &t->rows[i], err);
        else t->rows[k++] = t->rows[i];   /* strings stay in t's arena */
    }
    t->n = k;
    free(perm);
    free(out);
    return st;
}

/* Drops held-out rows whose shape also occurs among the training rows; returns how many. */
static int drop_overlap(const pp_layer_table *train, pp_layer_table *test, pp_err *err)
{
    char **keys = malloc((size_t)(train->n ? train->n : 1) * sizeof *keys);
    char *keybuf = malloc((size_t)(train->n ? train->n : 1) * 256);
    if (!keys || !keybuf) {
        free(keys);
        free(keybuf);
        pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        return -1;
    }
    for (int i = 0; i < train->n; i++) {
        keys[i] = keybuf + (size_t)i * 256;
        row_key(&train->rows[i], keys[i], 256);
    }
    qsort(keys, (size_t)train->n, sizeof *keys, cmp_str);
    int n_keep = 0, n_overlap = 0;
    for (int i = 0; i < test->n; i++) {
        char k[256];
        const char *kp = k;
        row_key(&test->rows[i], k, sizeof k);
        if (bsearch(&kp, keys, (size_t)train->n, sizeof *keys, cmp_str)) n_overlap++;
        else test->rows[n_keep++] = test->rows[i];
    }
    test->n = n_keep;
    free(keys);
    free(keybuf);
    return n_overlap;
}

/* Trains on (ftr, ytr), judges on (fte, yte): the layer model as the predictor answers (the
 * roofline outside its domain; how many rows in *n_gated when not NULL) and the roofline it
 * corrects. */
static perfpred_status train_and_judge(const pp_node_feat *ftr, const double *ytr, int ntr,
                                       const pp_node_feat *fte, const double *yte, int nte,
                                       pp_op_kind kind, const pp_lm_base *base,
                                       const pp_lm_params *lp, pp_lm_model **model_out,
                                       pp_metrics *model_m, int *n_gated, pp_metrics *roof_m,
                                       pp_metrics *train_m, pp_err *err)
{
    pp_lm_model *model = NULL;
    int nmax = ntr > nte ? ntr : nte;
    double *pm = malloc((size_t)nmax * sizeof *pm), *pr = malloc((size_t)nmax * sizeof *pr);
    perfpred_status st;
    if (!pm || !pr) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = pp_lm_train(ftr, ytr, ntr, kind, PP_LM_LATENCY, base, lp, &model, err))) goto done;
    if ((st = pp_lm_model_predict_many(model, fte, nte, pm, err))) goto done;
    int gated = pp_lm_model_gate(model, fte, nte, pm);
    if (n_gated) *n_gated = gated;
    for (int i = 0; i < nte; i++) pr[i] = pp_lm_base_eval(base, PP_LM_LATENCY, &fte[i]);
    if ((st = pp_measure_metrics(pm, yte, nte, model_m, err))) goto done;
    if (roof_m && (st = pp_measure_metrics(pr, yte, nte, roof_m, err))) goto done;
    if (train_m && ((st = pp_lm_model_predict_many(model, ftr, ntr, pm, err)) ||
                    (st = pp_measure_metrics(pm, ytr, ntr, train_m, err))))
        goto done;
done:
    free(pm);
    free(pr);
    if (st == PERFPRED_OK && model_out) *model_out = model;
    else pp_lm_model_free(model);
    return st;
}

/* What one group's fit works in: its row tables, their features and latencies, the seeded split
 * of the training rows for the in-distribution check, and the model; freed by group_bufs_free. */
typedef struct group_bufs {
    pp_layer_table *train, *test;
    pp_node_feat *ftr, *fte, *fa, *fb;
    double *ytr, *yte, *ya, *yb;
    int *perm;
    pp_lm_model *model;
} group_bufs;

static void group_bufs_free(group_bufs *B)
{
    pp_lm_model_free(B->model);
    pp_measure_layer_table_free(B->train);
    pp_measure_layer_table_free(B->test);
    free(B->ftr);
    free(B->fte);
    free(B->ytr);
    free(B->yte);
    free(B->fa);
    free(B->fb);
    free(B->ya);
    free(B->yb);
    free(B->perm);
}

/* The group's training and test rows from gpu's files (conv: a seeded share of its training rows
 * held out, NeuSight has no conv test file), less the test rows whose shape training also has. */
static perfpred_status load_group_rows(fit_state *s, const kind_group *g, const char *gpu,
                                       int is_split, group_bufs *B, pp_fit_kind_report *kr,
                                       pp_err *err)
{
    const pp_fit_params *p = s->p;
    pp_layer_table *train = B->train, *test = B->test;
    perfpred_status st;
    for (int i = 0; g->ops[i]; i++) {
        int n = 0;
        if ((st = pp_datasets_neusight_import(s->root, g->ops[i], gpu, PP_NEUSIGHT_TRAIN, train, &n,
                                              err)) ||
            (st = add_source(s, g->ops[i], gpu, PP_NEUSIGHT_TRAIN, n, err)))
            return st;
        if (is_split) continue;
        if ((st = pp_datasets_neusight_import(s->root, g->ops[i], gpu, PP_NEUSIGHT_TEST, test, &n,
                                              err)) ||
            (st = add_source(s, g->ops[i], gpu, PP_NEUSIGHT_TEST, n, err)))
            return st;
    }
    note_bad(s, train);
    note_bad(s, test);
    if (is_split &&
        (st = split_rows(train, test, p->conv_heldout_fraction, p->lm.seed, err)) != PERFPRED_OK)
        return st;
    if (train->n < 2 || test->n < 1)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "NeuSight %s on %s: %d training and %d test rows",
                          pp_op_kind_name(g->kind), gpu, train->n, test->n);
    /* held-out rows whose shape also occurs in training are not a judgement: excluded, counted */
    int n_overlap = drop_overlap(train, test, err);
    if (n_overlap < 0) return err ? err->status : PERFPRED_ERR_NOMEM;
    kr->n_overlap = n_overlap;
    if (test->n == 0)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "NeuSight %s: every held-out row is also a training row",
                          pp_op_kind_name(g->kind));
    return PERFPRED_OK;
}

/* in-distribution check: the same recipe on a seeded split of the n training rows
 * (conv_heldout_fraction held out), reported beside the error on NeuSight's test rows */
static perfpred_status in_dist_check(const pp_fit_params *p, pp_op_kind kind, group_bufs *B,
                                     int n, pp_metrics *in_dist, pp_err *err)
{
    int n_out = (int)floor(p->conv_heldout_fraction * n);
    B->perm = malloc((size_t)n * sizeof *B->perm);
    B->fa = malloc((size_t)n * sizeof *B->fa);
    B->fb = malloc((size_t)n * sizeof *B->fb);
    B->ya = malloc((size_t)n * sizeof *B->ya);
    B->yb = malloc((size_t)n * sizeof *B->yb);
    if (!B->perm || !B->fa || !B->fb || !B->ya || !B->yb)
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    seeded_perm(n, p->lm.seed, B->perm);
    for (int i = 0; i < n; i++) {
        int j = B->perm[i];
        if (i < n_out) {
            B->fb[i] = B->ftr[j];
            B->yb[i] = B->ytr[j];
        } else {
            B->fa[i - n_out] = B->ftr[j];
            B->ya[i - n_out] = B->ytr[j];
        }
    }
    double fl = INFINITY;
    for (int i = 0; i < n - n_out; i++)
        if (B->ya[i] < fl) fl = B->ya[i];
    pp_lm_base b2 = gpu_base(p, fl);
    return train_and_judge(B->fa, B->ya, n - n_out, B->fb, B->yb, n_out, kind, &b2, &p->lm, NULL,
                           in_dist, NULL, NULL, NULL, err);
}

/* The group's model as a manifest entry (how it was judged, and on whose rows where another
 * GPU's stand in), and its file in out_dir unless this is a dry run. */
static perfpred_status ship_model(fit_state *s, const kind_group *g, const char *gpu,
                                  int is_split, const group_bufs *B, const pp_lm_base *base,
                                  const pp_fit_kind_report *kr, pp_err *err)
{
    const pp_fit_params *p = s->p;
    pp_lm_entry *e = &s->man.entries[s->man.n_entries];
    memset(e, 0, sizeof *e);
    char file[64], heldout[256];
    snprintf(file, sizeof file, "%s-latency.ubj", pp_op_kind_name(g->kind));
    if (is_split)
        snprintf(heldout, sizeof heldout,
                 "%.0f %% of the training file's rows, seeded split (NeuSight has no conv test file)",
                 100 * p->conv_heldout_fraction);
    else
        snprintf(heldout, sizeof heldout,
                 "NeuSight test/ rows of %s (shapes of real models, mostly larger than the sweep)",
                 gpu);
    e->kind = g->kind;
    e->target = PP_LM_LATENCY;
    e->file = pp_arena_strdup(s->arena, file);
    e->base = *base;
    e->domain = *pp_lm_model_domain(B->model);
    e->n_train = B->train->n;
    e->n_heldout = B->test->n;
    e->heldout = pp_arena_strdup(s->arena, heldout);
    e->heldout_mape_pct = kr->model.mape_pct;
    e->roofline_mape_pct = kr->roofline.mape_pct;
    if (strcmp(gpu, s->gpu) != 0) {
        char note[256];
        snprintf(note, sizeof note, "trained on %s rows (NeuSight measured conv only there)", gpu);
        e->note = pp_arena_strdup(s->arena, note);
    }
    if (!e->file || !e->heldout || (strcmp(gpu, s->gpu) != 0 && !e->note))
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    s->man.n_entries++;
    if (p->write_artifacts) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", s->out_dir, file);
        return pp_lm_model_save(B->model, path, err);
    }
    return PERFPRED_OK;
}

/* One op group: its rows, a model trained and judged on them against the roofline, and the
 * model shipped where it beats the roofline. */
static perfpred_status fit_group(fit_state *s, const kind_group *g, pp_err *err)
{
    const pp_fit_params *p = s->p;
    const char *gpu = (g->kind == PP_OPK_CONV && p->conv_gpu) ? p->conv_gpu : s->gpu;
    int is_split = g->kind == PP_OPK_CONV;
    pp_fit_kind_report *kr = &s->rep->kinds[s->rep->n_kinds];
    memset(kr, 0, sizeof *kr);
    kr->kind = g->kind;
    kr->heldout_is_split = is_split;
    group_bufs B;
    memset(&B, 0, sizeof B);
    B.train = pp_measure_layer_table_new("NeuSight train");
    B.test = pp_measure_layer_table_new("NeuSight test");
    perfpred_status st = PERFPRED_OK;
    if (!B.train || !B.test) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = load_group_rows(s, g, gpu, is_split, &B, kr, err))) goto done;
    pp_layer_table *train = B.train, *test = B.test;
    if ((st = table_features(train, &B.ftr, &B.ytr, err)) ||
        (st = table_features(test, &B.fte, &B.yte, err)))
        goto done;
    double floor_ms = INFINITY;
    for (int i = 0; i < train->n; i++)
        if (B.ytr[i] < floor_ms) floor_ms = B.ytr[i];
    pp_lm_base base = gpu_base(p, floor_ms);
    kr->floor_ms = floor_ms;
    kr->n_train = train->n;
    kr->n_heldout = test->n;
    pp_log(&p->log, PERFPRED_LOG_INFO, "fit %s: %d training rows (%s), %d held-out rows",
           pp_op_kind_name(g->kind), train->n, gpu, test->n);
    double t0 = pp_now_s();
    if ((st = train_and_judge(B.ftr, B.ytr, train->n, B.fte, B.yte, test->n, g->kind, &base,
                              &p->lm, &B.model, &kr->model, &kr->n_heldout_roofline,
                              &kr->roofline, &kr->train, err)))
        goto done;
    kr->train_seconds = pp_now_s() - t0;

    if (is_split)
        kr->in_dist = kr->model;
    else if ((st = in_dist_check(p, g->kind, &B, train->n, &kr->in_dist, err)))
        goto done;
    pp_log(&p->log, PERFPRED_LOG_INFO,
           "fit %s: held-out MAPE %.2f %% (roofline %.2f %%), in-distribution split %.2f %%, "
           "train %.2f %%, %.1f s",
           pp_op_kind_name(g->kind), kr->model.mape_pct, kr->roofline.mape_pct,
           kr->in_dist.mape_pct, kr->train.mape_pct, kr->train_seconds);

    /* as for measured layers (fit_layers.c): a model that loses to its own roofline on the rows
     * it never saw is reported, not shipped (NeuSight's P4 linear sweep ran 3.5x slower than its
     * test rows, lab/neusight_sweep_vs_test.py) */
    if (kr->model.mape_pct > kr->roofline.mape_pct) {
        s->rep->n_kinds++;
        goto done;
    }
    kr->written = 1;
    if ((st = ship_model(s, g, gpu, is_split, &B, &base, kr, err))) goto done;
    s->rep->n_kinds++;
done:
    group_bufs_free(&B);
    return st;
}

perfpred_status pp_fit_neusight(const char *neusight_root, const char *gpu, const char *out_dir,
                                const pp_fit_params *params, pp_fit_report *report, pp_err *err)
{
    memset(report, 0, sizeof *report);
    double t_start = pp_now_s();
    const char *device = params->device ? params->device : pp_datasets_neusight_device(gpu);
    if (!device) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "NeuSight: unknown GPU '%s'", gpu);
    if (!(params->conv_heldout_fraction > 0 && params->conv_heldout_fraction < 1))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "conv_heldout_fraction must be in (0, 1)");
    if (!(params->peak_tflops > 0 && params->bw_gbs > 0 && params->compute_units > 0))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "NeuSight fit for %s: the roofline needs a positive FP32 peak, memory "
                          "bandwidth and SM count", device);
    perfpred_status st = pp_lm_params_check(&params->lm, err);
    if (st != PERFPRED_OK) return st;
    fit_state s;
    memset(&s, 0, sizeof s);
    s.root = neusight_root;
    s.gpu = gpu;
    s.out_dir = out_dir;
    s.p = params;
    s.rep = report;
    if ((st = pp_datasets_neusight_source(neusight_root, &s.src, err))) return st;
    if (params->write_artifacts && (st = pp_mkdir_p(out_dir, err))) return st;
    s.arena = pp_arena_new();
    if (!s.arena) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    char date[16];
    if (params->date) {
        snprintf(date, sizeof date, "%s", params->date);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(date, sizeof date, "%Y-%m-%d", &tm);
    }
    char note[1024];
    snprintf(note, sizeof note,
             "Per-kernel latency models from NeuSight (ASPLOS 2025) measurements: PyTorch 2.1.0, "
             "CUDA 12.1, cuDNN 8.9.2, fp32 (FP32 SIMT kernels throughout, conv included), "
             "CUDA-event timed. Each model predicts log(latency / roofline) with roofline = "
             "max(flops / %.1f TFLOP/s, bytes / %.0f GB/s) + floor (%s); "
             "floor = the smallest training latency of the op kind. Data read from %s at "
             "commit %s.",
             params->peak_tflops, params->bw_gbs,
             params->figures_from ? params->figures_from : "given figures", s.src.repo,
             s.src.commit);
    s.man.device = device;
    s.man.runtime = "pytorch-eager";
    s.man.precision = "fp32";
    s.man.date = date;
    s.man.note = note;
    s.man.params = params->lm;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0] && st == PERFPRED_OK; i++)
        st = fit_group(&s, &groups[i], err);
    if (st == PERFPRED_OK && params->write_artifacts)
        st = pp_lm_manifest_write(out_dir, &s.man, err);
    report->total_seconds = pp_now_s() - t_start;
    pp_arena_free(s.arena);
    return st;
}
