/* tests/test_layer_models.c: XGBoost layer regressors on a small real NeuSight subset: the roofline
 * base by hand, save/load round trips with bit-identical predictions, bit-reproducible training,
 * atomic saves that leave the previous artifact intact, manifests (coverage, training domain,
 * feature-name checks), thread-safe predictions, and the committed A100 artifacts. */
#include "tests/helpers.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fit/fit.h"
#include "layer_models/layer_models.h"

#define NEUSIGHT_ROOT PP_SOURCE_DIR "/../shared/datasets/neusight"
#define A100_40 "NVIDIA A100-PCIE-40GB"
#define A100_80 "NVIDIA A100 80GB PCIe"
#define N_ROWS 300

typedef struct subset {
    int n;
    pp_node_feat f[N_ROWS];
    double y[N_ROWS];
} subset;


/* A manifest source (not rescaled). */
static pp_lm_source lm_source(const char *path, const char *repo, const char *commit,
                              const char *gpu, int rows, const char *role)
{
    pp_lm_source s;
    memset(&s, 0, sizeof s);
    s.path = path;
    s.repo = repo;
    s.commit = commit;
    s.gpu = gpu;
    s.rows = rows;
    s.role = role;
    return s;
}

static subset linear_rows, conv_rows;
static int have_data;

/* The first N_ROWS rows of a NeuSight training file, described by graph/. */
static int load_subset(const char *op, const char *gpu, subset *s)
{
    pp_layer_table *t = pp_measure_layer_table_new("test");
    pp_err err = {0};
    if (pp_datasets_neusight_import(NEUSIGHT_ROOT, op, gpu, PP_NEUSIGHT_TRAIN, t, NULL,
                                    &err) != PERFPRED_OK ||
        t->n < N_ROWS) {
        pp_measure_layer_table_free(t);
        return -1;
    }
    s->n = N_ROWS;
    for (int i = 0; i < N_ROWS; i++) {
        if (pp_layer_row_features(&t->rows[i], &s->f[i], &err) != PERFPRED_OK) {
            pp_measure_layer_table_free(t);
            return -1;
        }
        s->y[i] = t->rows[i].latency_ms;
    }
    pp_measure_layer_table_free(t);
    return 0;
}

static int setup(void **state)
{
    have_data = access(NEUSIGHT_ROOT "/SOURCE.md", R_OK) == 0 &&
                load_subset("linear", A100_40, &linear_rows) == 0 &&
                load_subset("conv", A100_80, &conv_rows) == 0;
    return 0;
}

static pp_lm_base a100_base(void) { return (pp_lm_base){19.5, 1555.0, 0.02, 108, 0, 0, 0}; }

static pp_lm_params small_params(int seed)
{
    pp_lm_params p = pp_lm_default_params();
    p.n_rounds = 40;
    p.nthread = 2;
    p.seed = seed;
    return p;
}

static pp_lm_model *train(const subset *s, pp_op_kind kind, int seed)
{
    pp_lm_base b = a100_base();
    pp_lm_params p = small_params(seed);
    pp_lm_model *m = NULL;
    pp_err err = {0};
    perfpred_status st = pp_lm_train(s->f, s->y, s->n, kind, PP_LM_LATENCY, &b, &p, &m, &err);
    if (st != PERFPRED_OK) print_error("%s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
    return m;
}

static const char *tmp_dir(void)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s/pp_lm_test_%ld", PP_BINARY_DIR, (long)getpid());
    mkdir(dir, 0755);
    return dir;
}

/* The group's teardown: the scratch folder goes, whatever the tests left in it. */
static int teardown(void **state)
{
    (void)state;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir());
    return system(cmd) == 0 ? 0 : -1;
}

static int read_all(const char *path, uint8_t **buf, size_t *len)
{
    pp_err err = {0};
    return pp_read_file(path, buf, len, &err) == PERFPRED_OK ? 0 : -1;
}

/* ------------------------------------------------------------------------------ tests ---- */

static void base_should_follow_the_roofline_formula(void **state)
{
    pp_node_feat f;
    memset(&f, 0, sizeof f);
    f.kind = PP_OPK_LINEAR;
    f.flops = 2e9;
    f.in_bytes = 1e6;
    f.out_bytes = 1e6;
    f.param_bytes = 2e6;
    pp_lm_base b = a100_base();
    /* compute 2e9 / 19.5e12 s = 0.1025641 ms beats memory 4e6 / 1555e9 s = 0.0025723 ms */
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &f), 2e9 / 19.5e12 * 1e3 + 0.02, 1e-12);
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_ENERGY, &f), (2e9 / 19.5e12 * 1e3 + 0.02) / 1e3,
                     1e-12);
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_MEMORY, &f), 4e6, 1e-12);
    f.flops = 1e6; /* now memory bound */
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &f), 4e6 / 1555e9 * 1e3 + 0.02, 1e-12);
    /* GEMM extras: 300 x 500 output on 108 SMs: tiles128 = 3 * 4 = 12, m fill 300/384 */
    f.m = 300;
    f.nn = 500;
    f.k = 20;
    f.b = 1;
    float x[PP_LM_NFEAT];
    pp_lm_features(&f, &b, x);
    int w = -1, mf = -1, kf = -1;
    for (int i = 0; i < PP_LM_NFEAT; i++) {
        if (strcmp(pp_lm_feature_name(i), "log2_waves128") == 0) w = i;
        if (strcmp(pp_lm_feature_name(i), "m_fill128") == 0) mf = i;
        if (strcmp(pp_lm_feature_name(i), "k_fill8") == 0) kf = i;
    }
    assert_true(w >= 0 && mf >= 0 && kf >= 0);
    assert_rel_close(x[w], log2(12.0 / 108), 1e-6);
    assert_rel_close(x[mf], 300.0 / 384, 1e-6);
    assert_rel_close(x[kf], 20.0 / 24, 1e-6);
    /* non-GEMM kinds leave the GEMM columns missing */
    f.kind = PP_OPK_ELEMWISE;
    pp_lm_features(&f, &b, x);
    assert_true(isnan(x[w]));
    /* a Transpose's copy takes the first four: log2 run, log2 inner extent, log2 stride, axes
     * moved (the runs of 64 of a (B, T, H, 64) -> (B, H, T, 64) head split); the rest stay NaN */
    f.kind = PP_OPK_DATAMOVE;
    f.tr_run = 64;
    f.tr_inner = 64;
    f.tr_stride = 1;
    f.tr_moved = 2;
    pp_lm_features(&f, &b, x);
    assert_rel_close(x[w], 6, 1e-6);
    assert_rel_close(x[w + 1], 6, 1e-6);
    assert_true(x[w + 2] == 0);
    assert_rel_close(x[w + 3], 2, 1e-6);
    assert_true(isnan(x[mf]) && isnan(x[kf]));
}

static pp_node_feat conv_feat(int64_t n, int64_t cin, int64_t h, int64_t k, int64_t stride,
                              int64_t dil, int64_t group)
{
    pp_node_feat f;
    memset(&f, 0, sizeof f);
    f.kind = group > 1 && group == cin ? PP_OPK_DWCONV : PP_OPK_CONV;
    f.n = n;
    f.cin = cin;
    f.hin = f.win = h;
    f.kernel[0] = f.kernel[1] = k;
    f.stride[0] = f.stride[1] = stride;
    f.dilation[0] = f.dilation[1] = dil;
    f.group = group;
    return f;
}

/* Which engine eager PyTorch picks for a CPU convolution (one thread, fp32). The expected answers
 * are what torch 1.13's profiler showed on xeon-kvm-2vcpu for these shapes (aten::thnn_conv2d,
 * slow_conv_dilated2d or slow_conv_transpose2d = BLAS; aten::mkldnn_convolution = oneDNN). */
static void torch_cpu_conv_rule_should_match_the_profiled_engine(void **state)
{
    (void)state;
    struct { int64_t n, cin, h, k, s, d, g; int blas; } c[] = {
        {8, 264, 14, 1, 1, 1, 1, 1},  /* 1x1 unstrided, batch < 16: BLAS at any size */
        {1, 64, 56, 1, 1, 1, 1, 1},
        {16, 64, 8, 1, 1, 1, 1, 0},   /* batch 16: oneDNN */
        {1, 8, 32, 3, 1, 1, 1, 1},    /* batch 1, 3x3, 8192 input elements: BLAS */
        {1, 32, 32, 3, 1, 1, 1, 0},   /* 32768 elements: oneDNN */
        {1, 8, 32, 5, 1, 1, 1, 0},    /* both kernel sides > 3: oneDNN */
        {1, 64, 8, 1, 2, 1, 1, 1},    /* strided 1x1, batch 1, 4096 elements: BLAS */
        {1, 64, 8, 1, 1, 1, 64, 1},   /* depthwise 1x1 unstrided: BLAS, group by group */
        {4, 64, 8, 3, 1, 1, 64, 0},   /* depthwise 3x3: oneDNN */
        {1, 16, 8, 3, 1, 2, 1, 1},    /* dilated, small: slow_conv_dilated2d */
        {1, 16, 8, 1, 1, 1, 1, 1},
        {1, 4, 8, 3, 1, 1, 2, 0},     /* grouped: oneDNN */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        pp_node_feat f = conv_feat(c[i].n, c[i].cin, c[i].h, c[i].k, c[i].s, c[i].d, c[i].g);
        if (pp_lm_torch_cpu_conv_blas(&f) != c[i].blas) fail_msg("case %zu", i);
    }
    pp_node_feat t = conv_feat(1, 8, 8, 2, 2, 1, 1);
    t.kind = PP_OPK_CONVT;
    assert_int_equal(pp_lm_torch_cpu_conv_blas(&t), 1);
    t.kind = PP_OPK_LINEAR;
    assert_int_equal(pp_lm_torch_cpu_conv_blas(&t), 0);

    /* the base: a BLAS convolution at blas_tflops, a oneDNN one at peak_tflops, and none of it
     * without blas_tflops */
    pp_lm_base b = {0.2, 25.0, 0.0, 2, 0.05, 0, 0};
    pp_node_feat f = conv_feat(8, 264, 14, 1, 1, 1, 1);
    f.flops = 1e9;
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &f), 1e9 / 0.05e12 * 1e3, 1e-12);
    f.n = 16;
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &f), 1e9 / 0.2e12 * 1e3, 1e-12);
    f.n = 8;
    b.blas_tflops = 0;
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &f), 1e9 / 0.2e12 * 1e3, 1e-12);

    /* a oneDNN call's fixed cost: a 3x3 depthwise convolution over 1x40x24x24 (40 x 576 outputs x
     * 9 x 2 = 414,720 flops: 0.0020736 ms at 0.2 TFLOP/s; 92,160 + 92,160 + 1,440 bytes at 25 GB/s
     * = 0.0074304 ms, the larger) takes the call's 0.028 ms on top where conv_call_ms is 0.028,
     * the 0.001 ms floor where it is not stated or below the floor; a BLAS convolution (1x1 at
     * batch 1: 1,843,200 flops at the BLAS's 0.05 TFLOP/s, 0.036864 ms) and an element-wise op
     * (190,720 bytes, 0.0076288 ms) never take it */
    pp_lm_base cb = {0.2, 25.0, 0.001, 2, 0.05, 0, 0.028};
    pp_node_feat dw = conv_feat(1, 40, 24, 3, 1, 1, 40);
    dw.kind = PP_OPK_DWCONV;
    dw.flops = 414720;
    dw.in_bytes = 92160;
    dw.out_bytes = 92160;
    dw.param_bytes = 1440;
    assert_rel_close(pp_lm_base_eval(&cb, PP_LM_LATENCY, &dw), 0.0074304 + 0.028, 1e-9);
    cb.conv_call_ms = 0;
    assert_rel_close(pp_lm_base_eval(&cb, PP_LM_LATENCY, &dw), 0.0074304 + 0.001, 1e-9);
    cb.conv_call_ms = 0.0005;
    assert_rel_close(pp_lm_base_eval(&cb, PP_LM_LATENCY, &dw), 0.0074304 + 0.001, 1e-9);
    cb.conv_call_ms = 0.028;
    pp_node_feat one = conv_feat(1, 40, 24, 1, 1, 1, 1);
    one.flops = 2.0 * 40 * 40 * 576;
    one.in_bytes = 92160;
    one.out_bytes = 92160;
    one.param_bytes = 6400;
    assert_int_equal(pp_lm_torch_cpu_conv_blas(&one), 1);
    assert_rel_close(pp_lm_base_eval(&cb, PP_LM_LATENCY, &one), 1843200.0 / 0.05e9 + 0.001, 1e-9);
    pp_node_feat e = one;
    e.kind = PP_OPK_ELEMWISE;
    e.flops = 0;
    assert_rel_close(pp_lm_base_eval(&cb, PP_LM_LATENCY, &e), 190720.0 / 25e6 + 0.001, 1e-9);

    /* eager PyTorch's pooling loop at pool_tflops: a 3x3 MaxPool over 1x64x112x112 at stride 2
     * has 64 x 56 x 56 = 200,704 outputs of 9 elements; each costs 8 clocks, 9 for its elements
     * and (H(9) - 1) x 15 for the new maxima's mispredicted branches, H(9) = 7129/2520: 44.434524
     * clocks, 8,918,186.67 in all; on 2 cores of 2.5 GHz (0.005) that is 1.7836373 ms, above its
     * memory time, 3,211,264 + 802,816 bytes at 25 GB/s = 0.1605632 ms. An AveragePool of the
     * same window has no such branch: 17 clocks an output, 0.6823936 ms. Without pool_tflops the
     * memory time stands (the FMA peak gives 0.009 ms), and a convolution does not take it. */
    pp_node_feat p;
    memset(&p, 0, sizeof p);
    p.kind = PP_OPK_POOL;
    p.op_code = pp_op_code("MaxPool");
    p.out_elems = 200704;
    p.flops = 200704.0 * 9;
    p.in_bytes = 3211264;
    p.out_bytes = 802816;
    assert_rel_close(pp_lm_torch_cpu_pool_clocks(&p), 8918186.666666666, 1e-6);
    b.pool_tflops = 0.005;
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &p), 1.7836373333333333, 1e-6);
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &f), 1e9 / 0.2e12 * 1e3, 1e-12);
    p.op_code = pp_op_code("AveragePool");
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &p), 0.6823936, 1e-12);
    b.pool_tflops = 0;
    assert_rel_close(pp_lm_base_eval(&b, PP_LM_LATENCY, &p), 0.1605632, 1e-12);
    /* a 1x1 window: no branch to miss (the first element is always the maximum) */
    p.op_code = pp_op_code("MaxPool");
    p.flops = 200704;
    assert_rel_close(pp_lm_torch_cpu_pool_clocks(&p), 200704.0 * 9, 1e-12);
    f.kind = PP_OPK_CONV;
    assert_true(pp_lm_torch_cpu_pool_clocks(&f) == 0);
}

/* Operators of one kind with the same sizes and FLOP count can run at very different speeds (on the
 * EPYC guest an Erf moves 2 GB/s, a HardSwish over 40): the regressors see which operator a node is.
 * Rows of two such operators, identical but for the op type, train a model that keeps them apart on
 * sizes it never saw; and the code is the 24-bit FNV-1a hash (published test vectors). */
static void layer_models_should_tell_operators_of_one_kind_apart(void **state)
{
    (void)state;
    assert_int_equal(pp_op_code(""), 0x811c9dc5u & 0xFFFFFFu);
    assert_int_equal(pp_op_code("a"), 0xe40c292cu & 0xFFFFFFu);
    assert_int_equal(pp_op_code("foobar"), 0xbf9cf968u & 0xFFFFFFu);
    assert_true(pp_op_code("Erf") != pp_op_code("HardSwish"));
    enum { N = 120 };
    static pp_node_feat f[N];
    static double y[N];
    for (int i = 0; i < N; i++) {
        pp_node_feat *x = &f[i];
        memset(x, 0, sizeof *x);
        x->kind = PP_OPK_ELEMWISE;
        x->out_elems = (int64_t)(1000.0 * pow(1.1, i / 2));
        x->flops = 4.0 * (double)x->out_elems;
        x->in_bytes = x->out_bytes = 4.0 * (double)x->out_elems;
        x->op_code = pp_op_code(i % 2 ? "HardSwish" : "Erf");
        y[i] = (x->in_bytes + x->out_bytes) / ((i % 2 ? 50.0 : 2.0) * 1e6) + 0.005;
    }
    pp_lm_base b = {0.1, 30.0, 0.005, 2, 0, 0, 0};
    pp_lm_params p = pp_lm_default_params(); /* 300 rounds: the log ratio of 15 is learned */
    p.nthread = 1;
    pp_lm_model *m = NULL;
    pp_err err = {0};
    assert_int_equal(pp_lm_train(f, y, N, PP_OPK_ELEMWISE, PP_LM_LATENCY, &b, &p, &m, &err),
                     PERFPRED_OK);
    /* between training sizes: 1000 x 1.1^k at half steps */
    pp_node_feat q[2];
    double out[2];
    for (int k = 0; k < 2; k++) {
        q[k] = f[60];
        q[k].out_elems = (int64_t)(1000.0 * pow(1.1, 30.5));
        q[k].flops = 4.0 * (double)q[k].out_elems;
        q[k].in_bytes = q[k].out_bytes = 4.0 * (double)q[k].out_elems;
        q[k].op_code = pp_op_code(k ? "HardSwish" : "Erf");
    }
    assert_int_equal(pp_lm_model_predict_many(m, q, 2, out, &err), PERFPRED_OK);
    for (int k = 0; k < 2; k++) {
        double truth = (q[k].in_bytes + q[k].out_bytes) / ((k ? 50.0 : 2.0) * 1e6) + 0.005;
        assert_true(fabs(out[k] / truth - 1.0) < 0.25);
    }
    /* its domain lists the two operators; a third, never seen, is not covered */
    const pp_lm_domain *d = pp_lm_model_domain(m);
    assert_int_equal(d->n_ops, 2);
    assert_true(pp_lm_domain_contains(d, &q[0]) && pp_lm_domain_contains(d, &q[1]));
    q[0].op_code = pp_op_code("Mish");
    assert_false(pp_lm_domain_contains(d, &q[0]));
    /* the gate gives what the predictor answers: the regressor's figure where covered, the
     * roofline base (max(flops / peak, bytes / bandwidth) + floor) where not */
    double gated[2] = {-1.0, out[1]};
    assert_int_equal(pp_lm_model_gate(m, q, 2, gated), 1);
    double roof = fmax(q[0].flops / (b.peak_tflops * 1e9), (q[0].in_bytes + q[0].out_bytes) /
                                                              (b.bw_gbs * 1e6)) + b.floor_ms;
    assert_true(fabs(gated[0] / roof - 1.0) < 1e-12);
    assert_true(gated[1] == out[1]);
    pp_lm_model_free(m);
}

static void train_save_load_should_predict_bit_identically(void **state)
{
    if (!have_data) skip();
    pp_lm_model *m = train(&linear_rows, PP_OPK_LINEAR, 7);
    double before[N_ROWS], after[N_ROWS], roof[N_ROWS];
    pp_err err = {0};
    assert_int_equal(pp_lm_model_predict_many(m, linear_rows.f, N_ROWS, before, &err), PERFPRED_OK);
    /* it learned something: better than its own base on the rows it saw */
    pp_lm_base b = a100_base();
    for (int i = 0; i < N_ROWS; i++) roof[i] = pp_lm_base_eval(&b, PP_LM_LATENCY, &linear_rows.f[i]);
    pp_metrics mm, mr;
    assert_int_equal(pp_measure_metrics(before, linear_rows.y, N_ROWS, &mm, &err), PERFPRED_OK);
    assert_int_equal(pp_measure_metrics(roof, linear_rows.y, N_ROWS, &mr, &err), PERFPRED_OK);
    assert_true(mm.mape_pct < 0.5 * mr.mape_pct);
    /* one-row predictions equal the batched ones */
    double one;
    assert_int_equal(pp_lm_model_predict(m, &linear_rows.f[17], &one, &err), PERFPRED_OK);
    assert_memory_equal(&one, &before[17], sizeof one);

    char path[4096];
    snprintf(path, sizeof path, "%s/linear-latency.ubj", tmp_dir());
    assert_int_equal(pp_lm_model_save(m, path, &err), PERFPRED_OK);
    pp_lm_model *m2 = NULL;
    assert_int_equal(pp_lm_model_load(path, PP_OPK_LINEAR, PP_LM_LATENCY, &b,
                                      pp_lm_model_domain(m), &m2, &err),
                     PERFPRED_OK);
    assert_int_equal(pp_lm_model_predict_many(m2, linear_rows.f, N_ROWS, after, &err), PERFPRED_OK);
    assert_memory_equal(before, after, sizeof before);
    /* and the reloaded model saves the same bytes */
    uint8_t *b1, *b2;
    size_t l1, l2;
    assert_int_equal(pp_lm_model_to_ubj(m, &b1, &l1, &err), PERFPRED_OK);
    assert_int_equal(pp_lm_model_to_ubj(m2, &b2, &l2, &err), PERFPRED_OK);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1);
    free(b2);
    pp_lm_model_free(m);
    pp_lm_model_free(m2);
    unlink(path);
}

static void training_should_be_deterministic_for_seed_and_threads(void **state)
{
    if (!have_data) skip();
    pp_lm_model *a = train(&linear_rows, PP_OPK_LINEAR, 11);
    pp_lm_model *b = train(&linear_rows, PP_OPK_LINEAR, 11);
    pp_lm_model *c = train(&linear_rows, PP_OPK_LINEAR, 12);
    uint8_t *ba, *bb, *bc;
    size_t la, lb, lc;
    pp_err err = {0};
    assert_int_equal(pp_lm_model_to_ubj(a, &ba, &la, &err), PERFPRED_OK);
    assert_int_equal(pp_lm_model_to_ubj(b, &bb, &lb, &err), PERFPRED_OK);
    assert_int_equal(pp_lm_model_to_ubj(c, &bc, &lc, &err), PERFPRED_OK);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    /* row and column subsampling depend on the seed: another seed, another model */
    assert_true(la != lc || memcmp(ba, bc, la) != 0);
    free(ba);
    free(bb);
    free(bc);
    pp_lm_model_free(a);
    pp_lm_model_free(b);
    pp_lm_model_free(c);
}

static void failed_save_should_leave_the_old_artifact_intact(void **state)
{
    if (!have_data) skip();
    pp_lm_model *old = train(&linear_rows, PP_OPK_LINEAR, 1);
    pp_lm_model *neu = train(&linear_rows, PP_OPK_LINEAR, 2);
    char path[4096], blocker[4200];
    snprintf(path, sizeof path, "%s/atomic-latency.ubj", tmp_dir());
    pp_err err = {0};
    assert_int_equal(pp_lm_model_save(old, path, &err), PERFPRED_OK);
    uint8_t *want, *got;
    size_t wl, gl;
    assert_int_equal(read_all(path, &want, &wl), 0);
    /* the temporary file the atomic write would create is taken by a directory: the write fails
     * before anything touches path (this works for root too, unlike a read-only directory) */
    snprintf(blocker, sizeof blocker, "%s.tmp.%ld", path, (long)getpid());
    assert_int_equal(mkdir(blocker, 0755), 0);
    assert_int_equal(pp_lm_model_save(neu, path, &err), PERFPRED_ERR_IO);
    assert_non_null(strstr(err.msg, blocker));
    assert_int_equal(read_all(path, &got, &gl), 0);
    assert_int_equal(wl, gl);
    assert_memory_equal(want, got, wl);
    free(got);
    rmdir(blocker);
    /* a directory that does not exist: an I/O error, nothing written */
    assert_int_equal(pp_lm_model_save(neu, PP_BINARY_DIR "/no/such/dir/x.ubj", &err),
                     PERFPRED_ERR_IO);
    /* without the blocker the new model replaces the old one */
    assert_int_equal(pp_lm_model_save(neu, path, &err), PERFPRED_OK);
    assert_int_equal(read_all(path, &got, &gl), 0);
    assert_true(gl != wl || memcmp(want, got, wl) != 0);
    free(got);
    free(want);
    unlink(path);
    pp_lm_model_free(old);
    pp_lm_model_free(neu);
}

static void save_and_load_should_reject_bad_files(void **state)
{
    if (!have_data) skip();
    pp_lm_model *m = train(&linear_rows, PP_OPK_LINEAR, 3);
    pp_err err = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/model.json", tmp_dir());
    assert_int_equal(pp_lm_model_save(m, path, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, ".ubj"));
    pp_lm_base b = a100_base();
    pp_lm_domain d = *pp_lm_model_domain(m);
    pp_lm_model *out = NULL;
    const char *garbage = pp_test_tmpfile("not a model", 11, ".ubj");
    assert_int_equal(pp_lm_model_load(garbage, PP_OPK_LINEAR, PP_LM_LATENCY, &b, &d, &out, &err),
                     PERFPRED_ERR_MODEL);
    assert_null(out);
    /* a truncated UBJSON model */
    uint8_t *buf;
    size_t len;
    assert_int_equal(pp_lm_model_to_ubj(m, &buf, &len, &err), PERFPRED_OK);
    const char *cut = pp_test_tmpfile(buf, len / 2, ".ubj");
    assert_int_equal(pp_lm_model_load(cut, PP_OPK_LINEAR, PP_LM_LATENCY, &b, &d, &out, &err),
                     PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "truncated"));
    /* well-formed UBJSON that is not an XGBoost model: XGBoost's own error comes through */
    const uint8_t notmodel[] = {'{', 'i', 1, 'a', 'i', 5, '}'};
    const char *other = pp_test_tmpfile(notmodel, sizeof notmodel, ".ubj");
    assert_int_equal(pp_lm_model_load(other, PP_OPK_LINEAR, PP_LM_LATENCY, &b, &d, &out, &err),
                     PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "XGBoost"));
    free(buf);
    pp_lm_base bad = b;
    bad.bw_gbs = 0;
    assert_int_equal(pp_lm_model_load(cut, PP_OPK_LINEAR, PP_LM_LATENCY, &bad, &d, &out, &err),
                     PERFPRED_ERR_INVALID_ARG);
    pp_lm_params p = pp_lm_default_params();
    p.eta = 0;
    assert_int_equal(pp_lm_params_check(&p, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "eta"));
    pp_lm_model_free(m);
}

/* A manifest with a linear and a conv model in a fresh directory; more_sources adds rows of the
 * same run (test role) and of two other runs, one of them listed twice. */
static void write_set_sources(const char *dir, pp_lm_model *lin, pp_lm_model *conv,
                              int more_sources)
{
    pp_lm_manifest man;
    memset(&man, 0, sizeof man);
    man.device = "a100-test";
    man.runtime = "pytorch-eager";
    man.precision = "fp32";
    man.date = "2025-01-01";
    man.n_sources = 1;
    man.sources[0] = lm_source("scripts/x.csv", "https://example.org/repo", "abc", A100_40,
                                    N_ROWS, "train");
    if (more_sources) {
        man.sources[1] = lm_source("scripts/x.csv", "https://example.org/repo", "abc",
                                        A100_40, 5, "test");
        man.sources[2] = lm_source("y.csv", "runner@m:plan2.csv", "d2", A100_40, 5, "train");
        man.sources[3] = lm_source("y.csv", "runner@m:plan2.csv", "d2", A100_40, 2, "test");
        man.sources[4] = lm_source("z.csv", "runner@m:plan3.csv", "d2", A100_40, 5, "train");
        man.n_sources = 5;
    }
    man.params = small_params(7);
    pp_lm_model *ms[2] = {lin, conv};
    for (int i = 0; i < 2; i++) {
        pp_lm_entry *e = &man.entries[man.n_entries++];
        e->kind = pp_lm_model_kind(ms[i]);
        e->target = PP_LM_LATENCY;
        e->file = i == 0 ? "linear-latency.ubj" : "conv-latency.ubj";
        e->base = *pp_lm_model_base(ms[i]);
        e->domain = *pp_lm_model_domain(ms[i]);
        e->n_train = N_ROWS;
        e->heldout_mape_pct = NAN;
        e->roofline_mape_pct = 12.5;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->file);
        pp_err err = {0};
        assert_int_equal(pp_lm_model_save(ms[i], path, &err), PERFPRED_OK);
    }
    pp_err err = {0};
    assert_int_equal(pp_lm_manifest_write(dir, &man, &err), PERFPRED_OK);
}

static void write_set(const char *dir, pp_lm_model *lin, pp_lm_model *conv)
{
    write_set_sources(dir, lin, conv, 0);
}

static void layer_models_should_answer_covered_kinds_and_decline_others(void **state)
{
    if (!have_data) skip();
    pp_lm_model *lin = train(&linear_rows, PP_OPK_LINEAR, 5);
    pp_lm_model *conv = train(&conv_rows, PP_OPK_CONV, 5);
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/set", tmp_dir());
    mkdir(dir, 0755);
    write_set(dir, lin, conv);
    pp_layer_models *lm = NULL;
    pp_err err = {0};
    assert_int_equal(pp_layer_models_load(dir, &lm, &err), PERFPRED_OK);
    assert_string_equal(pp_layer_models_device(lm), "a100-test");
    assert_string_equal(pp_layer_models_source(lm), "https://example.org/repo@abc");
    { /* several runs: the first is named, the other distinct ones counted */
        char dir2[2048];
        snprintf(dir2, sizeof dir2, "%s/set-sources", tmp_dir());
        mkdir(dir2, 0755);
        write_set_sources(dir2, lin, conv, 1);
        pp_layer_models *lm2 = NULL;
        assert_int_equal(pp_layer_models_load(dir2, &lm2, &err), PERFPRED_OK);
        assert_string_equal(pp_layer_models_source(lm2),
                            "https://example.org/repo@abc and 2 more sources");
        pp_layer_models_free(lm2);
    }
    assert_true(pp_layer_models_covers(lm, PP_OPK_LINEAR, PP_LM_LATENCY));
    assert_true(pp_layer_models_covers(lm, PP_OPK_CONV, PP_LM_LATENCY));
    assert_false(pp_layer_models_covers(lm, PP_OPK_BMM, PP_LM_LATENCY));
    assert_false(pp_layer_models_covers(lm, PP_OPK_LINEAR, PP_LM_ENERGY));
    const pp_lm_entry *e = pp_layer_models_entry(lm, PP_OPK_LINEAR, PP_LM_LATENCY);
    assert_non_null(e);
    assert_true(isnan(e->heldout_mape_pct));
    assert_true(e->roofline_mape_pct == 12.5);
    assert_int_equal(e->base.compute_units, 108);
    double v, direct;
    assert_int_equal(pp_layer_models_predict(lm, &linear_rows.f[5], PP_LM_LATENCY, &v, &err), PP_LM_OK);
    assert_int_equal(pp_lm_model_predict(lin, &linear_rows.f[5], &direct, &err), PERFPRED_OK);
    assert_memory_equal(&v, &direct, sizeof v);
    assert_int_equal(pp_layer_models_predict(lm, &linear_rows.f[5], PP_LM_ENERGY, &v, &err),
                     PP_LM_UNCOVERED);
    pp_node_feat other = linear_rows.f[5];
    other.kind = PP_OPK_BMM;
    assert_int_equal(pp_layer_models_predict(lm, &other, PP_LM_LATENCY, &v, &err), PP_LM_UNCOVERED);
    /* NeuSight swept 3x3 stride-1 convolutions only: a 7x7 stride-2 conv is outside the domain */
    pp_node_feat c = conv_rows.f[0];
    assert_int_equal(pp_layer_models_predict(lm, &c, PP_LM_LATENCY, &v, &err), PP_LM_OK);
    assert_true(v > 0);
    c.kernel[0] = c.kernel[1] = 7;
    assert_int_equal(pp_layer_models_predict(lm, &c, PP_LM_LATENCY, &v, &err), PP_LM_UNCOVERED);
    c = conv_rows.f[0];
    c.stride[0] = c.stride[1] = 2;
    assert_int_equal(pp_layer_models_predict(lm, &c, PP_LM_LATENCY, &v, &err), PP_LM_UNCOVERED);
    /* ... and dense: a grouped convolution is outside it too */
    c = conv_rows.f[0];
    c.group = 4;
    assert_int_equal(pp_layer_models_predict(lm, &c, PP_LM_LATENCY, &v, &err), PP_LM_UNCOVERED);
    /* ... and so is another operator: the manifest kept the operators each model saw */
    c = conv_rows.f[0];
    c.op_code = pp_op_code("ConvInteger");
    assert_int_equal(pp_layer_models_predict(lm, &c, PP_LM_LATENCY, &v, &err), PP_LM_UNCOVERED);
    pp_layer_models_free(lm);
    /* a manifest written before operators were recorded answers for any operator */
    char mpath[2300];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(read_all(mpath, &buf, &len), 0);
    cJSON *j = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    assert_non_null(j);
    const cJSON *mo;
    int dropped = 0;
    cJSON_ArrayForEach(mo, cJSON_GetObjectItem(j, "models"))
    {
        cJSON *dom = cJSON_GetObjectItem(mo, "domain");
        assert_non_null(cJSON_GetObjectItem(dom, "op_codes"));
        cJSON_DeleteItemFromObject(dom, "op_codes");
        dropped++;
    }
    assert_int_equal(dropped, 2);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    pp_test_write_text(mpath, text);
    free(text);
    assert_int_equal(pp_layer_models_load(dir, &lm, &err), PERFPRED_OK);
    assert_int_equal(pp_layer_models_predict(lm, &c, PP_LM_LATENCY, &v, &err), PP_LM_OK);
    pp_layer_models_free(lm);
    pp_lm_model_free(lin);
    pp_lm_model_free(conv);
}

/* Kernel, stride, dilation and depthwise group values are matched exactly; a dense convolution's
 * group counts above 1 are one class. */
static void domain_should_match_attributes_exactly_but_dense_group_counts_as_a_class(void **state)
{
    (void)state;
    pp_node_feat f;
    memset(&f, 0, sizeof f);
    f.kind = PP_OPK_CONV;
    f.kernel[0] = f.kernel[1] = 3;
    f.stride[0] = f.stride[1] = 1;
    f.dilation[0] = f.dilation[1] = 1;
    f.group = 1;
    pp_lm_domain d;
    memset(&d, 0, sizeof d);
    d.seen[0] = d.seen[1] = 1u << 3;  /* kernel 3 */
    d.seen[2] = d.seen[3] = 1u << 1;  /* stride 1 */
    d.seen[4] = 1u << 1;              /* dilation 1 */
    d.seen[5] = 1u << 1;              /* dense only */
    assert_true(pp_lm_domain_contains(&d, &f));
    f.group = 8;
    assert_false(pp_lm_domain_contains(&d, &f));
    d.seen[5] |= 1u << 31;            /* ... and 32 or more groups (ResNeXt) */
    assert_true(pp_lm_domain_contains(&d, &f));
    f.group = 2;
    assert_true(pp_lm_domain_contains(&d, &f));
    d.seen[5] = 1u << 31;             /* grouped only: dense is not covered */
    f.group = 1;
    assert_false(pp_lm_domain_contains(&d, &f));
    f.kind = PP_OPK_DWCONV;           /* depthwise: the group is the channel count, exact */
    f.group = 16;
    d.seen[5] = 1u << 31;
    assert_false(pp_lm_domain_contains(&d, &f));
    f.group = 40;
    assert_true(pp_lm_domain_contains(&d, &f));
    f.kind = PP_OPK_CONV;
    f.group = 1;
    d.seen[5] = 1u << 1;
    f.kernel[0] = f.kernel[1] = 5;    /* an unseen kernel size stays outside */
    assert_false(pp_lm_domain_contains(&d, &f));
    f.kernel[0] = f.kernel[1] = 3;
    f.stride[0] = f.stride[1] = 2;
    assert_false(pp_lm_domain_contains(&d, &f));
}

static void manifest_with_other_features_should_be_refused(void **state)
{
    if (!have_data) skip();
    pp_lm_model *lin = train(&linear_rows, PP_OPK_LINEAR, 6);
    pp_lm_model *conv = train(&conv_rows, PP_OPK_CONV, 6);
    char dir[2048], path[4200];
    snprintf(dir, sizeof dir, "%s/set2", tmp_dir());
    mkdir(dir, 0755);
    write_set(dir, lin, conv);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    uint8_t *buf;
    size_t len;
    assert_int_equal(read_all(path, &buf, &len), 0);
    /* rename the first feature, as a manifest of an older features.c would read */
    char *text = calloc(1, len + 16);
    memcpy(text, buf, len);
    char *hit = strstr(text, "\"log2_macs\"");
    assert_non_null(hit);
    memcpy(hit, "\"log2_mecs\"", 11);
    pp_err err = {0};
    assert_int_equal(pp_write_file_atomic(path, text, len, &err), PERFPRED_OK);
    pp_layer_models *lm = NULL;
    assert_int_equal(pp_layer_models_load(dir, &lm, &err), PERFPRED_ERR_MODEL);
    assert_null(lm);
    assert_non_null(strstr(err.msg, "log2_mecs"));
    assert_non_null(strstr(err.msg, "retrain"));
    /* a model file that escapes the directory is refused */
    memcpy(text, buf, len);
    hit = strstr(text, "\"linear-latency.ubj\"");
    assert_non_null(hit);
    memcpy(hit, "\"../ear-latency.ubj\"", 20);
    assert_int_equal(pp_write_file_atomic(path, text, len, &err), PERFPRED_OK);
    assert_int_equal(pp_layer_models_load(dir, &lm, &err), PERFPRED_ERR_MODEL);
    free(text);
    free(buf);
    pp_lm_model_free(lin);
    pp_lm_model_free(conv);
}

/* A deferred set answers exactly as the eagerly read one; a corrupt model file does not stop the
 * open, is an error naming the file on first use, and stays one; a missing file is refused at open. */
static void deferred_set_should_read_models_on_first_use(void **state)
{
    if (!have_data) skip();
    pp_lm_model *lin = train(&linear_rows, PP_OPK_LINEAR, 5);
    pp_lm_model *conv = train(&conv_rows, PP_OPK_CONV, 5);
    char dir[2048], path[4200];
    snprintf(dir, sizeof dir, "%s/set3", tmp_dir());
    mkdir(dir, 0755);
    write_set(dir, lin, conv);
    pp_layer_models *eager = NULL, *lazy = NULL;
    pp_err err = {0};
    assert_int_equal(pp_layer_models_load(dir, &eager, &err), PERFPRED_OK);
    assert_int_equal(pp_layer_models_open(dir, 1, &lazy, &err), PERFPRED_OK);
    assert_true(pp_layer_models_covers(lazy, PP_OPK_CONV, PP_LM_LATENCY));
    for (int i = 0; i < N_ROWS; i += 7) {
        double a, b;
        assert_int_equal(pp_layer_models_predict(eager, &linear_rows.f[i], PP_LM_LATENCY, &a, &err),
                         PP_LM_OK);
        assert_int_equal(pp_layer_models_predict(lazy, &linear_rows.f[i], PP_LM_LATENCY, &b, &err),
                         PP_LM_OK);
        assert_memory_equal(&a, &b, sizeof a);
    }
    pp_layer_models_free(lazy);
    pp_layer_models_free(eager);

    /* overwrite the conv model with bytes that are not a model */
    snprintf(path, sizeof path, "%s/conv-latency.ubj", dir);
    assert_int_equal(pp_write_file_atomic(path, "{not a model", 12, &err), PERFPRED_OK);
    assert_int_equal(pp_layer_models_load(dir, &eager, &err), PERFPRED_ERR_MODEL);
    assert_null(eager);
    assert_int_equal(pp_layer_models_open(dir, 1, &lazy, &err), PERFPRED_OK);
    pp_err e1 = {0}, e2 = {0};
    assert_int_equal(pp_layer_models_ready(lazy, &e1), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(e1.msg, "conv-latency.ubj"));
    double v;
    assert_int_equal(pp_layer_models_predict(lazy, &linear_rows.f[0], PP_LM_LATENCY, &v, &e2),
                     PP_LM_ERROR);
    assert_string_equal(e2.msg, e1.msg);
    pp_layer_models_free(lazy);

    /* a listed file that is not there at all: refused when the manifest is read */
    assert_int_equal(unlink(path), 0);
    assert_int_equal(pp_layer_models_open(dir, 1, &lazy, &err), PERFPRED_ERR_MODEL);
    assert_null(lazy);
    assert_non_null(strstr(err.msg, "conv-latency.ubj"));

    /* two regressors for one kind and target: refused either way, before any file is read */
    snprintf(dir, sizeof dir, "%s/set4", tmp_dir());
    mkdir(dir, 0755);
    write_set(dir, lin, lin);
    for (int deferred = 0; deferred < 2; deferred++) {
        assert_int_equal(pp_layer_models_open(dir, deferred, &lazy, &err), PERFPRED_ERR_MODEL);
        assert_null(lazy);
        assert_non_null(strstr(err.msg, "second linear/latency model"));
    }
    pp_lm_model_free(lin);
    pp_lm_model_free(conv);
}

typedef struct thread_job {
    pp_lm_model *m;
    double out[N_ROWS];
    int failed;
} thread_job;

static void *predict_rows(void *arg)
{
    thread_job *j = arg;
    pp_err err = {0};
    for (int rep = 0; rep < 3; rep++)
        for (int i = 0; i < N_ROWS; i++)
            if (pp_lm_model_predict(j->m, &linear_rows.f[i], &j->out[i], &err) != PERFPRED_OK)
                j->failed = 1;
    return NULL;
}

static void predictions_should_be_thread_safe(void **state)
{
    if (!have_data) skip();
    pp_lm_model *m = train(&linear_rows, PP_OPK_LINEAR, 9);
    double serial[N_ROWS];
    pp_err err = {0};
    assert_int_equal(pp_lm_model_predict_many(m, linear_rows.f, N_ROWS, serial, &err), PERFPRED_OK);
    enum { NT = 4 };
    static thread_job jobs[NT];
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) {
        jobs[t].m = m;
        jobs[t].failed = 0;
        assert_int_equal(pthread_create(&th[t], NULL, predict_rows, &jobs[t]), 0);
    }
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NT; t++) {
        assert_false(jobs[t].failed);
        assert_memory_equal(jobs[t].out, serial, sizeof serial);
    }
    pp_lm_model_free(m);
}

static void committed_a100_artifacts_should_load_with_this_builds_features(void **state)
{
    const char *dir = PP_SOURCE_DIR "/configs/artifacts/a100-pcie-40gb";
    if (access(PP_SOURCE_DIR "/configs/artifacts/a100-pcie-40gb/manifest.json", R_OK) != 0) skip();
    pp_layer_models *lm = NULL;
    pp_err err = {0};
    perfpred_status st = pp_layer_models_load(dir, &lm, &err);
    if (st != PERFPRED_OK) print_error("%s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
    assert_string_equal(pp_layer_models_device(lm), "a100-pcie-40gb");
    const pp_op_kind kinds[] = {PP_OPK_BMM, PP_OPK_LINEAR, PP_OPK_CONV, PP_OPK_ELEMWISE, PP_OPK_NORM,
                                PP_OPK_SOFTMAX};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        assert_true(pp_layer_models_covers(lm, kinds[i], PP_LM_LATENCY));
    assert_false(pp_layer_models_covers(lm, PP_OPK_POOL, PP_LM_LATENCY));
    if (have_data) {
        /* the committed linear model on rows it was trained on: close, and far closer than the
         * roofline (a check that the artifact is the one the manifest describes) */
        double pred[N_ROWS], roof[N_ROWS];
        const pp_lm_entry *e = pp_layer_models_entry(lm, PP_OPK_LINEAR, PP_LM_LATENCY);
        for (int i = 0; i < N_ROWS; i++) {
            assert_int_equal(pp_layer_models_predict(lm, &linear_rows.f[i], PP_LM_LATENCY, &pred[i],
                                                     &err),
                             PP_LM_OK);
            roof[i] = pp_lm_base_eval(&e->base, PP_LM_LATENCY, &linear_rows.f[i]);
        }
        pp_metrics mm, mr;
        assert_int_equal(pp_measure_metrics(pred, linear_rows.y, N_ROWS, &mm, &err), PERFPRED_OK);
        assert_int_equal(pp_measure_metrics(roof, linear_rows.y, N_ROWS, &mr, &err), PERFPRED_OK);
        assert_true(mm.mape_pct < 10.0);
        assert_true(mm.mape_pct < 0.5 * mr.mape_pct);
    }
    pp_layer_models_free(lm);
}

/* A Split row (attention's q, k, v) rebuilds with one output per part, the shapes the parts say:
 * a row of the plan is the node it came from, and the runner times what the network runs. */
static void split_row_should_rebuild_with_every_part(void **state)
{
    (void)state;
    char path[] = "/tmp/pp_split_row_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char csv[] = PP_TEST_LAYER_HEADER
        "cpu-x,pytorch-eager,torch,fp32,datamove,Split,2,x:2x197x576,\"axis:i=2;split:ints=192,"
        "192,192\",0.1,0.01,7,,,test,2026-11-27\n";
    assert_int_equal(write(fd, csv, sizeof csv - 1), (ssize_t)(sizeof csv - 1));
    close(fd);
    pp_layer_table *t = NULL;
    pp_err e = {0};
    assert_int_equal(pp_measure_layer_csv_read(path, &t, &e), PERFPRED_OK);
    unlink(path);
    assert_int_equal(t->n, 1);
    pp_graph *g = NULL;
    int node = -1;
    if (pp_layer_row_graph(&t->rows[0], &g, &node, &e) != PERFPRED_OK) fail_msg("%s", e.msg);
    const pp_node *n = &g->nodes[node];
    assert_int_equal(n->n_outputs, 3);
    for (int k = 0; k < 3; k++) {
        const pp_tensor *y = &g->tensors[n->outputs[k]];
        assert_int_equal(y->rank, 3);
        assert_true(y->dims[0] == 2 && y->dims[1] == 197 && y->dims[2] == 192);
    }
    assert_int_equal(n->feat.kind, PP_OPK_DATAMOVE);
    pp_graph_free(g);
    pp_measure_layer_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(base_should_follow_the_roofline_formula),
        cmocka_unit_test(torch_cpu_conv_rule_should_match_the_profiled_engine),
        cmocka_unit_test(layer_models_should_tell_operators_of_one_kind_apart),
        cmocka_unit_test(train_save_load_should_predict_bit_identically),
        cmocka_unit_test(training_should_be_deterministic_for_seed_and_threads),
        cmocka_unit_test(failed_save_should_leave_the_old_artifact_intact),
        cmocka_unit_test(save_and_load_should_reject_bad_files),
        cmocka_unit_test(layer_models_should_answer_covered_kinds_and_decline_others),
        cmocka_unit_test(domain_should_match_attributes_exactly_but_dense_group_counts_as_a_class),
        cmocka_unit_test(manifest_with_other_features_should_be_refused),
        cmocka_unit_test(deferred_set_should_read_models_on_first_use),
        cmocka_unit_test(predictions_should_be_thread_safe),
        cmocka_unit_test(committed_a100_artifacts_should_load_with_this_builds_features),
        cmocka_unit_test(split_row_should_rebuild_with_every_part),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
