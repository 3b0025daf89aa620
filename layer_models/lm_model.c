/* layer_models/lm_model.c: one XGBoost regressor through the C API: features, analytic base, training
 * (explicit nthread and seed: bit-reproducible), prediction under a per-regressor mutex, UBJSON
 * save/load with atomic replacement. XGBoost is kept silent (verbosity 0, a no-op log callback) and
 * every call's return code is checked, its XGBGetLastError text going into pp_err. */
#include "layer_models/layer_models.h"
#include "layer_models/lm_xgb.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xgboost/c_api.h>

/* ---- names ---- */
static const char *const target_names[PP_LM__COUNT] = {"latency", "energy", "memory"};

const char *pp_lm_target_name(pp_lm_target t)
{
    return (t >= 0 && t < PP_LM__COUNT) ? target_names[t] : "unknown";
}

int pp_lm_target_from_name(const char *s)
{
    for (int i = 0; i < PP_LM__COUNT; i++)
        if (s && strcmp(s, target_names[i]) == 0) return i;
    return -1;
}

/* ---- base and features ---- */
static double feat_bytes(const pp_node_feat *f) { return f->in_bytes + f->out_bytes + f->param_bytes; }

/* flops / (TFLOP/s * 1e12) s = flops / (TFLOP/s * 1e9) ms; bytes / (GB/s * 1e9) s = bytes / (GB/s * 1e6) ms */
static double compute_ms(const pp_lm_base *b, const pp_node_feat *f)
{
    double rate = b->peak_tflops;
    if (b->blas_tflops > 0 && pp_lm_torch_cpu_conv_blas(f)) rate = b->blas_tflops;
    if (b->pool_tflops > 0 && f->kind == PP_OPK_POOL)
        return pp_lm_torch_cpu_pool_clocks(f) / (b->pool_tflops * 1e9);
    return f->flops / (rate * 1e9);
}

double pp_lm_torch_cpu_pool_clocks(const pp_node_feat *f)
{
    if (f->kind != PP_OPK_POOL || !(f->out_elems > 0) || !(f->flops > 0)) return 0;
    double out = (double)f->out_elems, n = f->flops / out; /* flops: out_elems x window */
    double per = PP_POOL_OUT_CLOCKS + n;
    if (f->op_code == pp_op_code("MaxPool")) {
        /* H(n) - 1 = ln n + gamma + 1/(2n) - 1/(12 n^2) - 1 within 1e-4 from n = 1 */
        double h = log(n) + 0.5772156649015329 + 1 / (2 * n) - 1 / (12 * n * n);
        per += (h > 1 ? h - 1 : 0) * PP_BRANCH_MISS_CLOCKS;
    }
    return out * per;
}

int pp_lm_torch_cpu_conv_blas(const pp_node_feat *f)
{
    if (f->kind == PP_OPK_CONVT) return 1;
    if (f->kind != PP_OPK_CONV && f->kind != PP_OPK_DWCONV) return 0;
    int strided = f->stride[0] != 1 || f->stride[1] != 1;
    int dilated = f->dilation[0] > 1 || f->dilation[1] > 1;
    int one_by_one = f->kernel[0] == 1 && f->kernel[1] == 1;
    int big_kernel = f->kernel[0] > 3 && f->kernel[1] > 3;
    double in_elems = (double)f->n * (double)f->cin * (double)f->hin * (double)f->win;
    int onednn = (strided || dilated || f->n >= 16 || !one_by_one) &&
                 (f->group > 1 || big_kernel || f->n > 1 || in_elems > 20480);
    return !onednn;
}

int pp_lm_torch_cpu_conv_onednn(const pp_node_feat *f)
{
    return (f->kind == PP_OPK_CONV || f->kind == PP_OPK_DWCONV) && !pp_lm_torch_cpu_conv_blas(f);
}

static double memory_ms(const pp_lm_base *b, const pp_node_feat *f)
{
    return feat_bytes(f) / (b->bw_gbs * 1e6);
}

/* The base's fixed part: the launch floor, or a oneDNN convolution's call where it costs more */
static double floor_ms(const pp_lm_base *b, const pp_node_feat *f)
{
    if (b->conv_call_ms > b->floor_ms && pp_lm_torch_cpu_conv_onednn(f)) return b->conv_call_ms;
    return b->floor_ms;
}

double pp_lm_base_eval(const pp_lm_base *b, pp_lm_target t, const pp_node_feat *f)
{
    double tc = compute_ms(b, f), tm = memory_ms(b, f);
    double t0 = (tc > tm ? tc : tm) + floor_ms(b, f);
    switch (t) {
    case PP_LM_LATENCY: return t0;
    case PP_LM_ENERGY: return t0 / 1000.0;
    case PP_LM_MEMORY: return feat_bytes(f);
    default: return NAN;
    }
}

static const char *const extra_names[PP_LM_N_EXTRA] = {
    "log10_compute_ms", "log10_memory_ms", "log10_base_ms", "compute_share",
    "log2_waves128", "last_wave_fill128", "log2_waves64", "last_wave_fill64",
    "m_fill128", "n_fill128", "m_fill64", "n_fill64", "m_fill32", "n_fill32", "k_fill8", "op_code"};

const char *pp_lm_feature_name(int i)
{
    if (i >= 0 && i < PP_FEATVEC_LEN) return pp_feat_vector_name(i);
    if (i >= PP_FEATVEC_LEN && i < PP_LM_NFEAT) return extra_names[i - PP_FEATVEC_LEN];
    return NULL;
}

/* The GEMM a kernel runs: out = [batch] x (rows x cols), reduction red. Matmuls directly,
 * convolutions as the implicit GEMM; 0 for kinds that are not GEMM-like. */
static int gemm_dims(const pp_node_feat *f, double *batch, double *rows, double *cols, double *red)
{
    *batch = 1;
    switch (f->kind) {
    case PP_OPK_LINEAR:
    case PP_OPK_BMM:
        *batch = f->b > 0 ? (double)f->b : 1;
        *rows = (double)f->m;
        *cols = (double)f->nn;
        *red = (double)f->k;
        break;
    case PP_OPK_CONV:
    case PP_OPK_DWCONV:
    case PP_OPK_CONVT: {
        double g = f->group > 0 ? (double)f->group : 1;
        *rows = (double)f->n * (double)f->hout * (double)f->wout;
        *cols = (double)f->cout;
        *red = (double)f->cin / g * (double)f->kernel[0] * (double)f->kernel[1];
        break;
    }
    default: return 0;
    }
    return *rows > 0 && *cols > 0 && *red > 0;
}

/* x / (ceil(x / t) * t): the share of the last tile along a dim that holds real work */
static double fill(double x, double t) { return x / (ceil(x / t) * t); }

void pp_lm_features(const pp_node_feat *f, const pp_lm_base *b, float out[PP_LM_NFEAT])
{
    pp_feat_vector(f, out);
    double tc = compute_ms(b, f), tm = memory_ms(b, f), t0 = (tc > tm ? tc : tm) + floor_ms(b, f);
    float *x = out + PP_FEATVEC_LEN;
    x[0] = tc > 0 ? (float)log10(tc) : -12.0f;
    x[1] = tm > 0 ? (float)log10(tm) : -12.0f;
    x[2] = t0 > 0 ? (float)log10(t0) : -12.0f;
    x[3] = (tc + tm) > 0 ? (float)(tc / (tc + tm)) : 0.0f;
    x[PP_LM_N_EXTRA - 1] = (float)f->op_code; /* the last column, "op_code" */
    double batch, rows, cols, red;
    if (!gemm_dims(f, &batch, &rows, &cols, &red)) {
        for (int i = 4; i < PP_LM_N_EXTRA - 1; i++) x[i] = NAN;
        if (f->tr_moved > 0) { /* a Transpose's copy in the first four tile columns */
            x[4] = (float)log2(f->tr_run);
            x[5] = (float)log2(f->tr_inner > 0 ? f->tr_inner : 1);
            x[6] = (float)log2(f->tr_stride);
            x[7] = (float)f->tr_moved;
        }
        return;
    }
    double cu = b->compute_units > 0 ? b->compute_units : 1;
    for (int t = 0; t < 2; t++) {
        double tile = t == 0 ? 128 : 64;
        double tiles = batch * ceil(rows / tile) * ceil(cols / tile);
        x[4 + 2 * t] = (float)log2(tiles / cu);
        x[5 + 2 * t] = (float)(tiles / (ceil(tiles / cu) * cu));
    }
    x[8] = (float)fill(rows, 128);
    x[9] = (float)fill(cols, 128);
    x[10] = (float)fill(rows, 64);
    x[11] = (float)fill(cols, 64);
    x[12] = (float)fill(rows, 32);
    x[13] = (float)fill(cols, 32);
    x[14] = (float)fill(red, 8);
}

/* ---- training domain ---- */
static const char *const domain_names[PP_LM_N_DOMAIN] = {"kernel_h", "kernel_w", "stride_h",
                                                         "stride_w", "dilation", "group"};

const char *pp_lm_domain_name(int i)
{
    return (i >= 0 && i < PP_LM_N_DOMAIN) ? domain_names[i] : NULL;
}

int pp_lm_domain_value(const pp_node_feat *f, int i)
{
    int64_t v;
    switch (i) {
    case 0: v = f->kernel[0]; break;
    case 1: v = f->kernel[1]; break;
    case 2: v = f->stride[0]; break;
    case 3: v = f->stride[1]; break;
    case 4: v = f->dilation[0] > f->dilation[1] ? f->dilation[0] : f->dilation[1]; break;
    case 5: v = f->group; break;
    default: return -1;
    }
    if (v < 0) return -1;
    return v > 31 ? 31 : (int)v;
}

/* Kernel, stride, dilation and group values must have been seen exactly, except that for dense
 * convolutions (kind conv) group counts above 1 form one class: a model trained on some grouped
 * convolutions answers for other group counts, which the roofline features already scale
 * (RegNet's group counts vary block by block). A depthwise convolution's group is its channel
 * count, a size rather than a structure, and stays an exact match (counts of 31 and more are one
 * value, pp_lm_domain_value). */
int pp_lm_domain_contains(const pp_lm_domain *d, const pp_node_feat *f)
{
    for (int i = 0; i < PP_LM_N_DOMAIN; i++) {
        int v = pp_lm_domain_value(f, i);
        if (v < 0) return 0;
        if (i == 5 && v > 1 && f->kind == PP_OPK_CONV && (d->seen[i] & ~3u)) continue;
        if (!(d->seen[i] & (1u << v))) return 0;
    }
    if (d->n_ops == 0) return 1;
    for (int i = 0; i < d->n_ops; i++)
        if (d->ops[i] == f->op_code) return 1;
    return 0;
}

/* Adds an operator to d's list; past PP_LM_MAX_OPS the list is dropped (n_ops -1 while training,
 * 0 = any once the model is made). */
static void domain_add_op(pp_lm_domain *d, uint32_t op)
{
    if (d->n_ops < 0) return;
    for (int i = 0; i < d->n_ops; i++)
        if (d->ops[i] == op) return;
    if (d->n_ops == PP_LM_MAX_OPS) {
        d->n_ops = -1;
        return;
    }
    d->ops[d->n_ops++] = op;
}

/* ---- parameters ---- */
pp_lm_params pp_lm_default_params(void)
{
    pp_lm_params p;
    memset(&p, 0, sizeof p);
    p.nthread = 2;
    p.seed = 42;
    p.n_rounds = 300;
    p.max_depth = 6;
    p.eta = 0.05;
    p.subsample = 0.8;
    p.colsample_bytree = 0.8;
    p.min_child_weight = 1.0;
    p.lambda = 1.0;
    p.max_bin = 256;
    p.tree_method = "hist";
    return p;
}

perfpred_status pp_lm_params_check(const pp_lm_params *p, pp_err *err)
{
    const char *bad = NULL;
    if (p->nthread < 1 || p->nthread > 1024) bad = "nthread";
    else if (p->seed < 0) bad = "seed";
    else if (p->n_rounds < 1 || p->n_rounds > 100000) bad = "n_rounds";
    else if (p->max_depth < 1 || p->max_depth > 32) bad = "max_depth";
    else if (!(p->eta > 0 && p->eta <= 1)) bad = "eta";
    else if (!(p->subsample > 0 && p->subsample <= 1)) bad = "subsample";
    else if (!(p->colsample_bytree > 0 && p->colsample_bytree <= 1)) bad = "colsample_bytree";
    else if (!(p->min_child_weight >= 0)) bad = "min_child_weight";
    else if (!(p->lambda >= 0)) bad = "lambda";
    else if (p->max_bin < 2 || p->max_bin > 65536) bad = "max_bin";
    else if (!p->tree_method ||
             (strcmp(p->tree_method, "hist") != 0 && strcmp(p->tree_method, "exact") != 0))
        bad = "tree_method (hist or exact)";
    if (bad) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "layer model: bad %s", bad);
    return PERFPRED_OK;
}

/* ---- XGBoost plumbing ---- */
static void xgb_log_sink(const char *msg) { (void)msg; }

/* XGBoost, loaded on first use (lm_xgb.c); its global configuration and log callback are per
 * thread: each thread is silenced once. NULL with err set when it cannot be loaded. */
static const pp_xgb_api *xgb_ready(pp_err *err)
{
    static _Thread_local int done;
    const pp_xgb_api *xa = pp_xgb(err);
    if (!xa || done) return xa;
    xa->XGBSetGlobalConfig("{\"verbosity\": 0}");
    xa->XGBRegisterLogCallback(xgb_log_sink);
    done = 1;
    return xa;
}
#define XGB_READY()                                                 \
    const pp_xgb_api *xa = xgb_ready(err);                          \
    if (!xa) return err ? err->status : PERFPRED_ERR_MODEL

#define XGB_CHECK(call, what)                                                                \
    do {                                                                                     \
        if ((call) != 0) {                                                                   \
            st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: XGBoost %s failed: %s", ctx, what, \
                            xa->XGBGetLastError());                                              \
            goto done;                                                                       \
        }                                                                                    \
    } while (0)

struct pp_lm_model {
    /* NULL for a model read from the tree cache until something needs XGBoost itself (the
     * reference path, saving): then read from path under the lock (booster_of) */
    BoosterHandle booster;
    char *path;
    /* the same trees, evaluated without XGBoost; NULL: XGBoost answers. Made under the lock on the
     * FLATTEN_AFTER-th call (or pp_lm_model_flatten), never changed after */
    _Atomic(pp_lm_flat *) flat;
    _Atomic(pp_lm_memo *) memo;   /* made on the first flat prediction, never changed after */
    atomic_int calls;
    int flat_failed;   /* under the lock: flattening failed once, XGBoost answers for good */
    pthread_mutex_t lock;
    pp_op_kind kind;
    pp_lm_target target;
    pp_lm_base base;
    pp_lm_domain domain;
};

static perfpred_status booster_of(pp_lm_model *m, BoosterHandle *out, pp_err *err);

pp_op_kind pp_lm_model_kind(const pp_lm_model *m) { return m->kind; }
pp_lm_target pp_lm_model_target(const pp_lm_model *m) { return m->target; }
const pp_lm_base *pp_lm_model_base(const pp_lm_model *m) { return &m->base; }
const pp_lm_domain *pp_lm_model_domain(const pp_lm_model *m) { return &m->domain; }

int pp_lm_model_gate(const pp_lm_model *m, const pp_node_feat *f, int n, double *out)
{
    int replaced = 0;
    for (int i = 0; i < n; i++)
        if (!pp_lm_domain_contains(&m->domain, &f[i])) {
            out[i] = pp_lm_base_eval(&m->base, m->target, &f[i]);
            replaced++;
        }
    return replaced;
}

static atomic_int use_xgboost;
void pp_lm_use_xgboost(int on) { atomic_store(&use_xgboost, on != 0); }
int pp_lm_model_is_flat(const pp_lm_model *m) { return m && atomic_load(&m->flat) != NULL; }
const pp_lm_flat *pp_lm_model_flat(const pp_lm_model *m)
{
    return m ? atomic_load_explicit(&m->flat, memory_order_acquire) : NULL;
}

/* The booster's trees as a pp_lm_flat, through XGBoost's JSON model. */
static perfpred_status flatten(BoosterHandle b, const char *ctx, pp_lm_flat **out, pp_err *err)
{
    XGB_READY();
    perfpred_status st = PERFPRED_OK;
    bst_ulong n = 0;
    const char *raw = NULL;
    *out = NULL;
    XGB_CHECK(xa->XGBoosterSaveModelToBuffer(b, "{\"format\": \"json\"}", &n, &raw), "save json");
    st = pp_lm_flat_from_json(raw, (size_t)n, ctx, out, err);
    int nf = st ? 0 : pp_lm_flat_n_features(*out);
    if (!st && nf != PP_LM_NFEAT) {
        pp_lm_flat_free(*out);
        *out = NULL;
        st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: flat trees have %d features, want %d", ctx,
                        nf, PP_LM_NFEAT);
    }
done:
    return st;
}

static perfpred_status check_base(const pp_lm_base *b, const char *ctx, pp_err *err)
{
    if (!(b->peak_tflops > 0) || !(b->bw_gbs > 0) || !(b->floor_ms >= 0) || b->compute_units < 1 ||
        !isfinite(b->peak_tflops) || !isfinite(b->bw_gbs) || !isfinite(b->floor_ms) ||
        !(b->blas_tflops >= 0) || !isfinite(b->blas_tflops) || !(b->pool_tflops >= 0) ||
        !isfinite(b->pool_tflops) || !(b->conv_call_ms >= 0) || !isfinite(b->conv_call_ms))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: base needs peak_tflops > 0, bw_gbs > 0, floor_ms >= 0, "
                          "compute_units >= 1, blas_tflops >= 0, pool_tflops >= 0, "
                          "conv_call_ms >= 0", ctx);
    return PERFPRED_OK;
}

static pp_lm_model *model_new(BoosterHandle b, pp_op_kind kind, pp_lm_target target,
                              const pp_lm_base *base, const pp_lm_domain *domain)
{
    pp_lm_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    m->booster = b;
    m->kind = kind;
    m->target = target;
    m->base = *base;
    m->domain = *domain;
    return m;
}

void pp_lm_model_free(pp_lm_model *m)
{
    if (!m) return;
    const pp_xgb_api *xa = m->booster ? pp_xgb(NULL) : NULL; /* loaded: it made the booster */
    if (xa) xa->XGBoosterFree(m->booster);
    free(m->path);
    pp_lm_flat_free(atomic_load(&m->flat));
    pp_lm_memo_free(atomic_load(&m->memo));
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static perfpred_status set_params(BoosterHandle b, const pp_lm_params *p, const char *ctx,
                                  pp_err *err)
{
    XGB_READY();
    perfpred_status st = PERFPRED_OK;
    char v[11][32];
    snprintf(v[0], sizeof v[0], "%d", p->nthread);
    snprintf(v[1], sizeof v[1], "%d", p->seed);
    snprintf(v[2], sizeof v[2], "%d", p->max_depth);
    snprintf(v[3], sizeof v[3], "%.17g", p->eta);
    snprintf(v[4], sizeof v[4], "%.17g", p->subsample);
    snprintf(v[5], sizeof v[5], "%.17g", p->colsample_bytree);
    snprintf(v[6], sizeof v[6], "%.17g", p->min_child_weight);
    snprintf(v[7], sizeof v[7], "%.17g", p->lambda);
    snprintf(v[8], sizeof v[8], "%d", p->max_bin);
    const char *kv[][2] = {
        {"verbosity", "0"}, {"booster", "gbtree"}, {"objective", "reg:squarederror"},
        {"tree_method", p->tree_method}, {"nthread", v[0]}, {"seed", v[1]}, {"max_depth", v[2]},
        {"eta", v[3]}, {"subsample", v[4]}, {"colsample_bytree", v[5]},
        {"min_child_weight", v[6]}, {"lambda", v[7]}, {"max_bin", v[8]}, {"base_score", "0"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        XGB_CHECK(xa->XGBoosterSetParam(b, kv[i][0], kv[i][1]), kv[i][0]);
done:
    return st;
}

perfpred_status pp_lm_train(const pp_node_feat *feats, const double *y, int n, pp_op_kind kind,
                            pp_lm_target target, const pp_lm_base *base, const pp_lm_params *p,
                            pp_lm_model **out, pp_err *err)
{
    char ctx[96];
    snprintf(ctx, sizeof ctx, "layer model %s/%s", pp_op_kind_name(kind), pp_lm_target_name(target));
    *out = NULL;
    if (n < 2) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: %d training rows", ctx, n);
    if (target < 0 || target >= PP_LM__COUNT)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: bad target", ctx);
    perfpred_status st = pp_lm_params_check(p, err);
    if (st != PERFPRED_OK) return st;
    if ((st = check_base(base, ctx, err)) != PERFPRED_OK) return st;
    XGB_READY();
    float *X = malloc((size_t)n * PP_LM_NFEAT * sizeof *X), *lab = malloc((size_t)n * sizeof *lab);
    DMatrixHandle dm = NULL;
    BoosterHandle b = NULL;
    pp_lm_domain domain;
    memset(&domain, 0, sizeof domain);
    if (!X || !lab) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", ctx);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        double b0 = pp_lm_base_eval(base, target, &feats[i]);
        if (!(y[i] > 0) || !isfinite(y[i]) || !(b0 > 0) || !isfinite(b0)) {
            st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                            "%s: row %d: measured %g, base %g (both must be finite and > 0)", ctx,
                            i, y[i], b0);
            goto done;
        }
        lab[i] = (float)log(y[i] / b0);
        pp_lm_features(&feats[i], base, X + (size_t)i * PP_LM_NFEAT);
        for (int d = 0; d < PP_LM_N_DOMAIN; d++) {
            int v = pp_lm_domain_value(&feats[i], d);
            if (v >= 0) domain.seen[d] |= 1u << v;
        }
        domain_add_op(&domain, feats[i].op_code);
    }
    if (domain.n_ops < 0) domain.n_ops = 0;
    XGB_CHECK(xa->XGDMatrixCreateFromMat(X, (bst_ulong)n, PP_LM_NFEAT, NAN, &dm), "DMatrix");
    XGB_CHECK(xa->XGDMatrixSetFloatInfo(dm, "label", lab, (bst_ulong)n), "set labels");
    XGB_CHECK(xa->XGBoosterCreate(&dm, 1, &b), "create booster");
    if ((st = set_params(b, p, ctx, err)) != PERFPRED_OK) goto done;
    for (int it = 0; it < p->n_rounds; it++) XGB_CHECK(xa->XGBoosterUpdateOneIter(b, it, dm), "update");
    /* predictions run one node at a time from any thread: no thread pool for them */
    XGB_CHECK(xa->XGBoosterSetParam(b, "nthread", "1"), "nthread");
    *out = model_new(b, kind, target, base, &domain);
    if (!*out) st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", ctx);
    else b = NULL;
done:
    if (dm) xa->XGDMatrixFree(dm);
    if (b) xa->XGBoosterFree(b);
    free(X);
    free(lab);
    return st;
}

perfpred_status pp_lm_model_predict_many_xgb(pp_lm_model *m, const pp_node_feat *f, int n,
                                             double *out, pp_err *err)
{
    char ctx[96];
    snprintf(ctx, sizeof ctx, "layer model %s/%s", pp_op_kind_name(m->kind),
             pp_lm_target_name(m->target));
    if (n < 1) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: no rows to predict", ctx);
    XGB_READY();
    perfpred_status st = PERFPRED_OK;
    float one[PP_LM_NFEAT];
    float *X = n == 1 ? one : malloc((size_t)n * PP_LM_NFEAT * sizeof *X);
    if (!X) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", ctx);
    for (int i = 0; i < n; i++) pp_lm_features(&f[i], &m->base, X + (size_t)i * PP_LM_NFEAT);
    DMatrixHandle dm = NULL;
    int locked = 0;
    XGB_CHECK(xa->XGDMatrixCreateFromMat(X, (bst_ulong)n, PP_LM_NFEAT, NAN, &dm), "DMatrix");
    /* XGBoost keeps the prediction buffer in the booster: predict and copy under the lock */
    pthread_mutex_lock(&m->lock);
    locked = 1;
    bst_ulong len = 0;
    const float *res = NULL;
    BoosterHandle b = NULL;
    if ((st = booster_of(m, &b, err)) != PERFPRED_OK) goto done;
    XGB_CHECK(xa->XGBoosterPredict(b, dm, 0, 0, 0, &len, &res), "predict");
    if (len != (bst_ulong)n) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: XGBoost returned %llu values for %d rows", ctx,
                        (unsigned long long)len, n);
        goto done;
    }
    for (int i = 0; i < n; i++) out[i] = pp_lm_base_eval(&m->base, m->target, &f[i]) * exp((double)res[i]);
done:
    if (locked) pthread_mutex_unlock(&m->lock);
    if (dm) xa->XGDMatrixFree(dm);
    if (X != one) free(X);
    return st;
}

perfpred_status pp_lm_model_flatten(pp_lm_model *m, pp_err *err)
{
    char ctx[96];
    snprintf(ctx, sizeof ctx, "layer model %s/%s", pp_op_kind_name(m->kind),
             pp_lm_target_name(m->target));
    perfpred_status st = PERFPRED_OK;
    pthread_mutex_lock(&m->lock);
    BoosterHandle b = NULL;
    if (!atomic_load(&m->flat) && (st = booster_of(m, &b, err)) == PERFPRED_OK) {
        pp_lm_flat *f = NULL;
        st = flatten(b, ctx, &f, err);
        if (st) m->flat_failed = 1;
        else atomic_store_explicit(&m->flat, f, memory_order_release);
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* With the tree cache on, pp_lm_model_load gives flat trees from the start (read from the cache,
 * or flattened once and cached). Without it, flattening costs several loads of the model (XGBoost
 * writes JSON, cJSON reads it) in every process, so a regressor is flattened on its
 * FLATTEN_AFTER-th call: a one-shot prediction stays with XGBoost, repeated ones (a loop,
 * predict-many, a fit's evaluation) move to the flat trees. Both give the same figures
 * (tests/test_lm_flat.c). */
#define FLATTEN_AFTER 4
static const pp_lm_flat *flat_of(pp_lm_model *m)
{
    const pp_lm_flat *f = atomic_load_explicit(&m->flat, memory_order_acquire);
    if (f || atomic_fetch_add_explicit(&m->calls, 1, memory_order_relaxed) + 1 < FLATTEN_AFTER)
        return f;
    pthread_mutex_lock(&m->lock);
    int failed = m->flat_failed;
    pthread_mutex_unlock(&m->lock);
    /* a model XGBoost can write but the evaluator cannot read keeps the XGBoost path */
    if (!failed) pp_lm_model_flatten(m, NULL);
    return atomic_load_explicit(&m->flat, memory_order_acquire);
}

const pp_lm_memo *pp_lm_model_memo(const pp_lm_model *m)
{
    return m ? atomic_load_explicit(&m->memo, memory_order_acquire) : NULL;
}

/* The model's memo, made once (the first thread to publish it wins); NULL: none. */
static pp_lm_memo *memo_of(pp_lm_model *m)
{
    pp_lm_memo *p = atomic_load_explicit(&m->memo, memory_order_acquire);
    if (p) return p;
    if (!(p = pp_lm_memo_new())) return NULL;
    pp_lm_memo *expected = NULL;
    if (!atomic_compare_exchange_strong(&m->memo, &expected, p)) {
        pp_lm_memo_free(p);
        return expected;
    }
    return p;
}

/* Rows go through the memo, then the misses through the flat trees in chunks on the stack: no
 * allocation past the memo's first, no XGBoost. */
#define FLAT_CHUNK 32
perfpred_status pp_lm_model_predict_many(pp_lm_model *m, const pp_node_feat *f, int n, double *out,
                                         pp_err *err)
{
    const pp_lm_flat *flat = NULL;
    if (atomic_load_explicit(&use_xgboost, memory_order_relaxed) || !(flat = flat_of(m)))
        return pp_lm_model_predict_many_xgb(m, f, n, out, err);
    if (n < 1)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "layer model %s/%s: no rows to predict",
                          pp_op_kind_name(m->kind), pp_lm_target_name(m->target));
    pp_lm_memo *memo = memo_of(m);
    float X[FLAT_CHUNK * PP_LM_NFEAT], res[FLAT_CHUNK];
    int idx[FLAT_CHUNK];
    for (int i0 = 0; i0 < n; i0 += FLAT_CHUNK) {
        int c = n - i0 < FLAT_CHUNK ? n - i0 : FLAT_CHUNK, miss = 0;
        for (int i = 0; i < c; i++) {
            float *x = X + (size_t)miss * PP_LM_NFEAT, y;
            if (pp_lm_memo_get_feat(memo, &f[i0 + i], &out[i0 + i])) continue;
            pp_lm_features(&f[i0 + i], &m->base, x);
            if (pp_lm_memo_get(memo, x, &y)) {
                out[i0 + i] = pp_lm_base_eval(&m->base, m->target, &f[i0 + i]) * exp((double)y);
                pp_lm_memo_put_feat(memo, &f[i0 + i], out[i0 + i]);
            } else {
                idx[miss++] = i0 + i;
            }
        }
        if (!miss) continue;
        pp_lm_flat_predict(flat, X, miss, PP_LM_NFEAT, res);
        for (int j = 0; j < miss; j++) {
            pp_lm_memo_put(memo, X + (size_t)j * PP_LM_NFEAT, res[j]);
            out[idx[j]] = pp_lm_base_eval(&m->base, m->target, &f[idx[j]]) * exp((double)res[j]);
            pp_lm_memo_put_feat(memo, &f[idx[j]], out[idx[j]]);
        }
    }
    return PERFPRED_OK;
}

perfpred_status pp_lm_model_predict(pp_lm_model *m, const pp_node_feat *f, double *out, pp_err *err)
{
    return pp_lm_model_predict_many(m, f, 1, out, err);
}

perfpred_status pp_lm_model_to_ubj(pp_lm_model *m, uint8_t **buf, size_t *len, pp_err *err)
{
    const char *ctx = "layer model";
    perfpred_status st = PERFPRED_OK;
    XGB_READY();
    *buf = NULL;
    *len = 0;
    bst_ulong n = 0;
    const char *raw = NULL;
    pthread_mutex_lock(&m->lock);
    BoosterHandle b = NULL;
    if ((st = booster_of(m, &b, err)) != PERFPRED_OK) goto done;
    XGB_CHECK(xa->XGBoosterSaveModelToBuffer(b, "{\"format\": \"ubj\"}", &n, &raw), "save");
    *buf = malloc(n ? (size_t)n : 1);
    if (!*buf) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", ctx);
        goto done;
    }
    memcpy(*buf, raw, (size_t)n);
    *len = (size_t)n;
done:
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* ---- UBJSON check: XGBoost 1.7's reader trusts lengths and reads past the end of a truncated
 * buffer, so a model file is walked here (bounds-checked) before XGBoost sees it. ---- */
typedef struct ubj {
    const uint8_t *p, *end;
    int depth;
} ubj;

static int ubj_scalar_size(uint8_t m)
{
    switch (m) {
    case 'Z': case 'N': case 'T': case 'F': return 0;
    case 'i': case 'U': case 'C': return 1;
    case 'I': return 2;
    case 'l': case 'd': return 4;
    case 'L': case 'D': return 8;
    default: return -1;
    }
}

/* An integer with its marker (lengths and counts): big-endian, >= 0. */
static int ubj_count(ubj *u, int64_t *v)
{
    if (u->p >= u->end) return -1;
    uint8_t m = *u->p++;
    int n = ubj_scalar_size(m);
    if (n < 1 || m == 'C' || m == 'd' || m == 'D' || u->end - u->p < n) return -1;
    uint64_t x = 0;
    for (int i = 0; i < n; i++) x = (x << 8) | u->p[i];
    u->p += n;
    if (m == 'i') x = (uint64_t)(int64_t)(int8_t)x;
    else if (m == 'I') x = (uint64_t)(int64_t)(int16_t)x;
    else if (m == 'l') x = (uint64_t)(int64_t)(int32_t)x;
    *v = (int64_t)x;
    return *v >= 0 ? 0 : -1;
}

static int ubj_value(ubj *u, uint8_t m);

static int ubj_skip_bytes(ubj *u)
{
    int64_t n;
    if (ubj_count(u, &n) != 0 || n > u->end - u->p) return -1;
    u->p += n;
    return 0;
}

/* The arrays of one XGBoost tree that its loader indexes by node: each must be there, typed, and
 * num_nodes long, or XGBoost 1.7 reads out of bounds (a fuzzed model whose "parents" key was
 * renamed crashed it). */
static const char *const tree_arrays[] = {"left_children", "right_children", "parents",
                                          "split_indices", "split_conditions", "default_left",
                                          "split_type", "base_weights", "loss_changes",
                                          "sum_hessian"};
static const char tree_types[] = {'l', 'l', 'l', 'l', 'd', 'U', 'U', 'd', 'd', 'd'};
enum { N_TREE_ARRAYS = sizeof tree_types, T_LEFT = 0, T_RIGHT, T_PARENTS, T_SPLIT_INDEX,
       T_SPLIT_TYPE = 6 };

typedef struct ubj_obj {
    int64_t num_nodes;     /* from a "tree_param" child: -1 until seen */
    int64_t n[N_TREE_ARRAYS];
    const uint8_t *data[N_TREE_ARRAYS];
    uint8_t type[N_TREE_ARRAYS];
} ubj_obj;

static int32_t be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/* A tree's node arrays: children after their parent and inside the tree (so no cycle), both or
 * neither, split features inside the feature vector, numerical splits only. */
static int tree_ok(const ubj_obj *o)
{
    int64_t nn = o->num_nodes;
    if (nn < 1 || nn > (1 << 24)) return 0;
    for (int a = 0; a < N_TREE_ARRAYS; a++)
        if (!o->data[a] || o->n[a] != nn || o->type[a] != (uint8_t)tree_types[a]) return 0;
    for (int64_t i = 0; i < nn; i++) {
        int32_t l = be32(o->data[T_LEFT] + 4 * i), r = be32(o->data[T_RIGHT] + 4 * i);
        int32_t par = be32(o->data[T_PARENTS] + 4 * i);
        int32_t f = be32(o->data[T_SPLIT_INDEX] + 4 * i);
        if ((l == -1) != (r == -1)) return 0;
        if (l != -1 && (l <= i || l >= nn || r <= i || r >= nn || f < 0 || f >= PP_LM_NFEAT))
            return 0;
        if (i > 0 && (par < 0 || par >= i)) return 0;
        if (o->data[T_SPLIT_TYPE][i] != 0) return 0;
    }
    return 1;
}

static int ubj_container(ubj *u, int is_obj, ubj_obj *self, ubj_obj *parent);

static int key_is(const uint8_t *k, int64_t kn, const char *s)
{
    return (size_t)kn == strlen(s) && memcmp(k, s, (size_t)kn) == 0;
}

/* An object's value under key k: nested objects get their own record (a "tree_param" child
 * reports num_nodes to this one); tree arrays are noted with their type, count and data. */
static int ubj_member(ubj *u, uint8_t m, const uint8_t *k, int64_t kn, ubj_obj *self,
                      ubj_obj *parent)
{
    if (m == '{') {
        ubj_obj child;
        memset(&child, 0, sizeof child);
        child.num_nodes = -1;
        return ubj_container(u, 1, &child, key_is(k, kn, "tree_param") ? self : NULL);
    }
    if (m == 'S' && parent && key_is(k, kn, "num_nodes")) {
        int64_t n;
        if (ubj_count(u, &n) != 0 || n < 1 || n > 12 || n > u->end - u->p) return -1;
        int64_t x = 0;
        for (int64_t i = 0; i < n; i++) {
            if (u->p[i] < '0' || u->p[i] > '9') return -1;
            x = 10 * x + (u->p[i] - '0');
        }
        u->p += n;
        parent->num_nodes = x;
        return 0;
    }
    if (m == '[') {
        for (int a = 0; a < N_TREE_ARRAYS; a++)
            if (key_is(k, kn, tree_arrays[a]) && u->end - u->p >= 3 && u->p[0] == '$' &&
                u->p[2] == '#') {
                ubj h = {u->p + 3, u->end, 0};
                int64_t cnt;
                if (ubj_count(&h, &cnt) != 0) return -1;
                self->type[a] = u->p[1];
                self->n[a] = cnt;
                self->data[a] = h.p;
            }
    }
    return ubj_value(u, m);
}

static int ubj_container(ubj *u, int is_obj, ubj_obj *self, ubj_obj *parent)
{
    if (++u->depth > 64) return -1;
    int type = -1;
    int64_t count = -1;
    if (u->p < u->end && *u->p == '$') {
        if (u->end - u->p < 2) return -1;
        type = u->p[1];
        u->p += 2;
        if (u->p >= u->end || *u->p != '#') return -1;
    }
    if (u->p < u->end && *u->p == '#') {
        u->p++;
        if (ubj_count(u, &count) != 0) return -1;
        /* every element takes a byte at least, except zero-size typed ones */
        if (type >= 0 && ubj_scalar_size((uint8_t)type) == 0 ? count > 1 << 20
                                                              : count > u->end - u->p)
            return -1;
        /* typed scalars: their bytes must all be there */
        if (type >= 0 && ubj_scalar_size((uint8_t)type) > 0 &&
            count > (u->end - u->p) / ubj_scalar_size((uint8_t)type))
            return -1;
    }
    for (int64_t i = 0; count < 0 || i < count; i++) {
        if (u->p >= u->end) return -1;
        if (count < 0 && *u->p == (is_obj ? '}' : ']')) {
            u->p++;
            break;
        }
        const uint8_t *k = NULL;
        int64_t kn = 0;
        if (is_obj) {
            if (ubj_count(u, &kn) != 0 || kn > u->end - u->p) return -1;
            k = u->p;
            u->p += kn;
        }
        uint8_t m;
        if (type >= 0) {
            m = (uint8_t)type;
        } else {
            if (u->p >= u->end) return -1;
            m = *u->p++;
        }
        if (is_obj ? ubj_member(u, m, k, kn, self, parent) : ubj_value(u, m)) return -1;
    }
    /* an object with a tree_param child is a tree */
    if (is_obj && self && self->num_nodes >= 0 && !tree_ok(self)) return -1;
    u->depth--;
    return 0;
}

static int ubj_value(ubj *u, uint8_t m)
{
    if (m == '{') {
        ubj_obj child;
        memset(&child, 0, sizeof child);
        child.num_nodes = -1;
        return ubj_container(u, 1, &child, NULL);
    }
    if (m == '[') return ubj_container(u, 0, NULL, NULL);
    if (m == 'S' || m == 'H') return ubj_skip_bytes(u);
    int n = ubj_scalar_size(m);
    if (n < 0 || u->end - u->p < n) return -1;
    u->p += n;
    return 0;
}

/* 0 when buf is exactly one well-formed UBJSON object whose trees pass tree_ok. */
static int ubj_check(const uint8_t *buf, size_t len)
{
    ubj u = {buf, buf + len, 0};
    if (len < 2 || *u.p++ != '{') return -1;
    ubj_obj top;
    memset(&top, 0, sizeof top);
    top.num_nodes = -1;
    if (ubj_container(&u, 1, &top, NULL) != 0) return -1;
    return u.p == u.end ? 0 : -1;
}

static int ends_with_ubj(const char *path)
{
    size_t n = strlen(path);
    return n > 4 && strcmp(path + n - 4, ".ubj") == 0;
}

perfpred_status pp_lm_model_save(pp_lm_model *m, const char *path, pp_err *err)
{
    if (!ends_with_ubj(path))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: XGBoost model files end in .ubj", path);
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_lm_model_to_ubj(m, &buf, &len, err);
    if (st != PERFPRED_OK) return st;
    st = pp_write_file_atomic(path, buf, len, err);
    free(buf);
    return st;
}

/* Reads and checks a .ubj into a booster (XGBoost trusts lengths: the bytes are walked first). */
static perfpred_status load_booster(const char *path, BoosterHandle *out, pp_err *err)
{
    const char *ctx = path;
    *out = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    perfpred_status st;
    const pp_xgb_api *xa = xgb_ready(err);
    if (!xa) return err ? err->status : PERFPRED_ERR_MODEL;
    if ((st = pp_read_file(path, &buf, &len, err)) != PERFPRED_OK) return st;
    BoosterHandle b = NULL;
    bst_ulong nfeat = 0;
    XGB_CHECK(xa->XGBoosterCreate(NULL, 0, &b), "create booster");
    if (ubj_check(buf, len) != 0) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL,
                        "%s: not a well-formed UBJSON XGBoost model (truncated or corrupt)", path);
        goto done;
    }
    XGB_CHECK(xa->XGBoosterLoadModelFromBuffer(b, buf, (bst_ulong)len), "load");
    XGB_CHECK(xa->XGBoosterSetParam(b, "verbosity", "0"), "verbosity");
    XGB_CHECK(xa->XGBoosterSetParam(b, "nthread", "1"), "nthread");
    XGB_CHECK(xa->XGBoosterGetNumFeature(b, &nfeat), "feature count");
    if (nfeat != PP_LM_NFEAT) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: model has %llu features, this build uses %d",
                        path, (unsigned long long)nfeat, PP_LM_NFEAT);
        goto done;
    }
    *out = b;
    b = NULL;
done:
    if (b) xa->XGBoosterFree(b);
    free(buf);
    return st;
}

/* The model's booster, read now if it came from the tree cache. Call under m->lock. */
static perfpred_status booster_of(pp_lm_model *m, BoosterHandle *out, pp_err *err)
{
    if (!m->booster && m->path) {
        perfpred_status st = load_booster(m->path, &m->booster, err);
        if (st) return st;
    }
    *out = m->booster;
    if (!*out) return pp_err_set(err, PERFPRED_ERR_MODEL, "layer model: no booster");
    return PERFPRED_OK;
}

perfpred_status pp_lm_model_load(const char *path, pp_op_kind kind, pp_lm_target target,
                                 const pp_lm_base *base, const pp_lm_domain *domain,
                                 pp_lm_model **out, pp_err *err)
{
    *out = NULL;
    if (!ends_with_ubj(path))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: XGBoost model files end in .ubj", path);
    perfpred_status st = check_base(base, path, err);
    if (st != PERFPRED_OK) return st;
    /* a warm start: the flat trees from the cache, XGBoost left alone */
    char dir[4096];
    int cached = pp_lm_cache_dir(dir, sizeof dir) == 0;
    pp_lm_flat *flat = cached ? pp_lm_cache_load(path) : NULL;
    BoosterHandle b = NULL;
    if (!flat && (st = load_booster(path, &b, err)) != PERFPRED_OK) return st;
    pp_lm_model *m = model_new(b, kind, target, base, domain);
    if (!m || !(m->path = strdup(path))) {
        if (m) pp_lm_model_free(m); /* and b with it */
        else if (b) pp_xgb(NULL)->XGBoosterFree(b);
        pp_lm_flat_free(flat);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    if (flat) {
        atomic_store_explicit(&m->flat, flat, memory_order_release);
    } else if (cached && access(dir, W_OK) == 0 && pp_lm_model_flatten(m, NULL) == PERFPRED_OK) {
        /* the first start flattens now, once for every later process (a cache it cannot write
         * to leaves the model as without a cache: flattened after a few calls, if ever) */
        pp_lm_cache_store(path, atomic_load_explicit(&m->flat, memory_order_acquire));
    }
    *out = m;
    return PERFPRED_OK;
}
