/* tests/test_gnn_fast.c: the pooled forward that predictions use (graph_gnn/gnn_fast.c) against the
 * reference forward (BLAS) and against its own portable loops, side by side in one run, on every
 * GNN shipped under configs/artifacts/ (rpi4, rpi5, epyc's five-member ensemble) and samples built
 * from real graphs of several sizes (the pool grows, then reuses its workspaces), and from several
 * threads at once. */
#include "tests/helpers.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit/fit.h"
#include "graph_gnn/graph_gnn.h"

/* small, large, then small again: the pool must grow and then reuse */
static const char *const graphs[] = {
    "tests/fixtures/models/mobilenet_v2.onnx", "tests/fixtures/models/resnet50.onnx",
    "tests/fixtures/models/densenet121.onnx", "tests/fixtures/models/squeezenet1_0.onnx",
    "tests/fixtures/models/efficientnet_b0.onnx"};
#define N_GRAPHS (sizeof graphs / sizeof graphs[0])

/* How far the fast path's outputs (log-ratios) may lie from the portable loops' and from the BLAS
 * reference's: they differ in rounding only. A sum of k float32 products lies within
 * gamma_k sum_c |x_c w_c| of the exact sum (gamma_k = k u / (1 - k u), u = 2^-24) whether each
 * step rounds twice (product, then sum: the loops; a bias start adds one rounding) or once (fused
 * multiply-add: the kernels), or sums in BLAS's order; two such sums lie within
 * 2 gamma_{k+1} sum |x_c w_c| of each other: 1.3e-5 of sum |x_c w_c| at the widest sums here
 * (k = 40 + 2 x 32 = 104, layer 0's node update), ~sqrt(k) u = 6e-7 of it when the roundings fall
 * at random, as they do. A member is 3 layers and a head of such sums over standardized inputs and
 * relu'd rows; the ensemble averages its members. Seen on the shipped GNNs: 2.6e-7 (fast vs
 * reference), 1.8e-7 (loops vs reference), 9e-8 (fast vs loops). GNN_TOL allows ~4x that, as
 * |a - b| <= GNN_TOL (1 + |b|) (1e-6 of a latency), and the weights of one op rounded to half
 * precision move the outputs 11-22x past it (perturbed_weights_should_exceed_the_tolerance). */
#define GNN_TOL 1e-6

/* The devices with a GNN under configs/artifacts/, in name order; returns how many. */
static int shipped_gnns(char names[][64], int cap)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/configs/artifacts", PP_SOURCE_DIR);
    struct dirent **ent = NULL;
    int n_ent = scandir(dir, &ent, NULL, alphasort), n = 0;
    assert_true(n_ent > 0);
    for (int i = 0; i < n_ent; i++) {
        char wp[1400];
        size_t len = strlen(ent[i]->d_name);
        snprintf(wp, sizeof wp, "%s/%s/gnn-latency.bin", dir, ent[i]->d_name);
        if (ent[i]->d_name[0] != '.' && len < 64 && n < cap && access(wp, R_OK) == 0)
            memcpy(names[n++], ent[i]->d_name, len + 1);
        free(ent[i]);
    }
    free(ent);
    return n;
}
#define MAX_GNNS 32

static pp_gnn *load_gnn(const char *device)
{
    char wp[1024], mp[1024];
    snprintf(wp, sizeof wp, "%s/configs/artifacts/%s/gnn-latency.bin", PP_SOURCE_DIR, device);
    snprintf(mp, sizeof mp, "%s/configs/artifacts/%s/gnn-latency.json", PP_SOURCE_DIR, device);
    if (access(wp, R_OK) != 0) return NULL;
    pp_gnn *g = NULL;
    pp_err err = {0};
    assert_int_equal(pp_gnn_load(wp, mp, &g, &err), PERFPRED_OK);
    return g;
}

/* A sample as the predictor builds one: per-node times from the roofline-like figure 1 us per
 * MFLOP plus 5 us, layer sum their total. */
static int build_sample(const char *rel, pp_gnn_graph *s)
{
    const char *p = pp_test_path(rel);
    if (access(p, R_OK) != 0) return 0;
    pp_graph *g = NULL;
    pp_err err = {0};
    pp_shape_opts opts = {.batch = 1};
    assert_int_equal(pp_graph_load_full(p, &opts, &g, &err), PERFPRED_OK);
    double *ms = calloc((size_t)g->n_nodes + 1, sizeof *ms), sum = 0;
    assert_non_null(ms);
    for (int i = 0; i < g->n_nodes; i++) {
        ms[i] = 0.005 + g->nodes[i].feat.flops * 1e-9;
        sum += ms[i];
    }
    assert_int_equal(pp_gnn_sample_from(g, ms, sum, 1.0, 20.0, s, &err), PERFPRED_OK);
    free(ms);
    pp_graph_free(g);
    return 1;
}

/* Samples of every graph present (at least 3) into s[0..n); returns n. */
static int build_samples(pp_gnn_graph *s)
{
    int n = 0;
    for (size_t i = 0; i < N_GRAPHS; i++)
        if (build_sample(graphs[i], &s[n])) n++;
    assert_true(n >= 3);
    return n;
}

/* |a - b| <= GNN_TOL (1 + |b|); keeps the largest difference in *max */
static void assert_gnn_close(double a, double b, double *max)
{
    double d = fabs(a - b);
    if (!(d <= GNN_TOL * (1 + fabs(b)))) {
        print_error("GNN outputs %.17g and %.17g differ by %.3g\n", a, b, d);
        fail();
    }
    if (d > *max) *max = d;
}

/* Every shipped GNN on every sample, three ways side by side: the fast path as predictions run it
 * (vector kernels, rows once per class), its portable loops (pp_gnn_infer_plain(1): a separate
 * multiply and add, every row), and the reference forward (BLAS): means and members' ranges
 * within GNN_TOL of each other. */
static void fast_forward_should_agree_with_loops_and_reference_on_shipped_gnns(void **state)
{
    (void)state;
    pp_gnn_graph s[N_GRAPHS];
    int n_s = build_samples(s);
    char dev[MAX_GNNS][64];
    int n_models = shipped_gnns(dev, MAX_GNNS), n_cmp = 0;
    double max_ab = 0, max_pb = 0, max_ap = 0;
    for (int d = 0; d < n_models; d++) {
        pp_gnn *g = load_gnn(dev[d]);
        assert_non_null(g);
        for (int rep = 0; rep < 2; rep++)
            for (int i = 0; i < n_s; i++) {
                double a[3][PP_GNN_MAX_TARGETS], p[3][PP_GNN_MAX_TARGETS];
                double b[3][PP_GNN_MAX_TARGETS];
                pp_err err = {0};
                assert_int_equal(pp_gnn_forward_fast(g, &s[i], a[0], a[1], a[2], &err),
                                 PERFPRED_OK);
                pp_gnn_infer_plain(1);
                assert_int_equal(pp_gnn_forward_fast(g, &s[i], p[0], p[1], p[2], &err),
                                 PERFPRED_OK);
                pp_gnn_infer_plain(0);
                assert_int_equal(pp_gnn_forward_range(g, &s[i], b[0], b[1], b[2], &err),
                                 PERFPRED_OK);
                for (int t = 0; t < g->n_targets; t++, n_cmp++)
                    for (int k = 0; k < 3; k++) { /* mean, lowest and highest member */
                        assert_true(isfinite(a[k][t]));
                        assert_gnn_close(a[k][t], b[k][t], &max_ab);
                        assert_gnn_close(p[k][t], b[k][t], &max_pb);
                        assert_gnn_close(a[k][t], p[k][t], &max_ap);
                    }
                /* a second run gives the same bits */
                double a2[PP_GNN_MAX_TARGETS];
                assert_int_equal(pp_gnn_forward_fast(g, &s[i], a2, NULL, NULL, &err),
                                 PERFPRED_OK);
                assert_memory_equal(a2, a[0], sizeof(double) * (size_t)g->n_targets);
            }
        pp_gnn_free(g);
    }
    assert_true(n_models >= 2);
    print_message("%d GNNs, %d outputs (fused kernels: %s), largest differences: fast vs "
                  "reference %.3g, loops vs reference %.3g, fast vs loops %.3g\n",
                  n_models, n_cmp, pp_gnn_infer_fused() ? "yes" : "no", max_ab, max_pb, max_ap);
    /* a fast path that ignored the weights or the graph would not be this close everywhere */
    assert_true(n_cmp >= 6);
    for (int i = 0; i < n_s; i++) pp_gnn_graph_clear(&s[i]);
}

/* GNN_TOL is tight enough to see a wrong kernel, simulated by changing the weights it reads (in
 * every member, of a freshly loaded model, since the fast path transposes them on first use):
 * a column left out of layer 0's node update (a sum one column short), and layer 1's node update
 * with its weights rounded to 11 significant bits (a kernel in half precision). The fast path then
 * lies further than GNN_TOL from the reference of the unchanged model on some output. */
static void perturbed_weights_should_exceed_the_tolerance(void **state)
{
    (void)state;
    pp_gnn_graph s[N_GRAPHS];
    int n_s = build_samples(s);
    char dev[MAX_GNNS][64];
    int n_models = shipped_gnns(dev, MAX_GNNS);
    assert_true(n_models >= 2);
    for (int d = 0; d < n_models; d++) {
        pp_gnn *g = load_gnn(dev[d]);
        double want[N_GRAPHS][PP_GNN_MAX_TARGETS];
        for (int i = 0; i < n_s; i++)
            assert_int_equal(pp_gnn_forward_range(g, &s[i], want[i], NULL, NULL, NULL),
                             PERFPRED_OK);
        static const char *const what[] = {"a column left out", "weights of 11 bits"};
        for (int wi = 0; wi < 2; wi++) {
            pp_gnn *q = load_gnn(dev[d]);
            for (pp_gnn *mb = q; mb; mb = mb->next) {
                int H = mb->params.hidden;
                const pp_gnn_layer_off *lo = &mb->layer[wi];
                int kc = lo->din + 2 * H + lo->dg; /* w: [H][kc] */
                for (int j = 0; j < H; j++)
                    if (wi == 0) {
                        mb->w[lo->w + (size_t)j * kc + lo->din + 2 * H - 1] = 0.0f;
                    } else {
                        for (int c = 0; c < kc; c++) {
                            float *v = &mb->w[lo->w + (size_t)j * kc + c];
                            int e;
                            float f = frexpf(*v, &e);
                            *v = ldexpf(rintf(f * 2048.0f) / 2048.0f, e);
                        }
                    }
            }
            double worst = 0;
            for (int i = 0; i < n_s; i++) {
                double o[PP_GNN_MAX_TARGETS];
                assert_int_equal(pp_gnn_forward_fast(q, &s[i], o, NULL, NULL, NULL), PERFPRED_OK);
                for (int t = 0; t < q->n_targets; t++) {
                    double e = fabs(o[t] - want[i][t]) / (1 + fabs(want[i][t]));
                    if (e > worst) worst = e;
                }
            }
            print_message("%s, %s: %.3g from the reference (GNN_TOL %g)\n", dev[d], what[wi],
                          worst, GNN_TOL);
            assert_true(worst > GNN_TOL);
            pp_gnn_free(q);
        }
        pp_gnn_free(g);
    }
    for (int i = 0; i < n_s; i++) pp_gnn_graph_clear(&s[i]);
}

/* The AVX-512 / AVX2 kernels, where they run, against a loop of fused multiply-adds written here
 * (fmaf: b + x0 w0 + x1 w1 + ... with one rounding a step), bit for bit; and against the portable
 * loops (a separate multiply and add) within the bound of float rounding: both sums of k products
 * lie within gamma_{k+1} (|b_j| + sum_c |x_c w_c|) of the exact one, gamma_n = n u / (1 - n u),
 * u = 2^-24, and an underflowing product or sum adds at most 2^-150 a step. Sizes around every
 * block and vector width, leading dimensions wider than the rows, with and without a bias, and
 * inputs that tell roundings and signed zeros apart. Where no kernel runs (no AVX2+FMA, or a
 * sanitizer build), the loops are what the kernels' call gives: then the two agree bit for bit. */
static void linear_t_kernels_should_round_as_fused_multiply_adds(void **state)
{
    (void)state;
    enum { MAXM = 21, MAXK = 70, LDX = 73, LDY = 37 };
    float *x = malloc(sizeof(float) * MAXM * LDX), *wt = malloc(sizeof(float) * MAXK * 32);
    float *ya = malloc(sizeof(float) * MAXM * LDY), *yb = malloc(sizeof(float) * MAXM * LDY);
    float b[32];
    assert_true(x && wt && ya && yb);
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 23);
    static const float special[] = {-0.0f, 0.0f, 1e-39f, -3e-39f, 1e30f, -1e30f, 1.0f / 3.0f};
    for (int i = 0; i < MAXM * LDX; i++)
        x[i] = pp_gnn_rng_below(&r, 9) == 0 ? special[pp_gnn_rng_below(&r, 7)]
                                            : (float)(pp_gnn_rng_uniform(&r) * 2.0 - 1.0);
    for (int i = 0; i < MAXK * 32; i++)
        wt[i] = pp_gnn_rng_below(&r, 11) == 0 ? -0.0f : (float)(pp_gnn_rng_uniform(&r) - 0.5);
    for (int j = 0; j < 32; j++) b[j] = j % 5 == 0 ? -0.0f : (float)pp_gnn_rng_uniform(&r);
    int fused = pp_gnn_infer_fused(), n_cmp = 0, n_neg0 = 0, n_apart = 0;
    double worst = 0; /* the largest difference from the loops, as a share of the bound */
    for (int m = 0; m <= MAXM; m++)
        for (int k = 0; k <= MAXK; k += (k < 10 ? 1 : 7))
            for (int with_b = 0; with_b < 2; with_b++) {
                /* unwritten padding must stay as it was: both buffers start equal */
                for (int i = 0; i < MAXM * LDY; i++) ya[i] = yb[i] = (float)i;
                pp_gnn_op_linear_t(m, k, 32, x, LDX, wt, with_b ? b : NULL, ya, LDY);
                pp_gnn_infer_plain(1);
                pp_gnn_op_linear_t(m, k, 32, x, LDX, wt, with_b ? b : NULL, yb, LDY);
                pp_gnn_infer_plain(0);
                for (int i = 0; i < MAXM; i++)
                    for (int j = 0; j < LDY; j++) {
                        float got = ya[i * LDY + j], loop = yb[i * LDY + j];
                        if (i >= m || j >= 32) { /* padding */
                            assert_memory_equal(&got, &loop, sizeof got);
                            continue;
                        }
                        float f = with_b ? b[j] : 0.0f;
                        double mag = fabs((double)f), n = k + 1;
                        for (int c = 0; c < k; c++) {
                            float xc = x[i * LDX + c], wc = wt[c * 32 + j];
                            f = fmaf(xc, wc, f);
                            mag += fabs((double)xc * wc);
                        }
                        if (fused) assert_memory_equal(&got, &f, sizeof f);
                        else assert_memory_equal(&got, &loop, sizeof got);
                        double g = n * 0x1p-24 / (1 - n * 0x1p-24);
                        double bound = 2 * g * mag + 2 * n * 0x1p-150;
                        double d = fabs((double)got - loop);
                        assert_true(d <= bound);
                        if (bound > 0 && d / bound > worst) worst = d / bound;
                        n_apart += got != loop;
                        n_neg0 += got == 0.0f && signbit(got);
                    }
                n_cmp++;
            }
    print_message("linear kernels (fused: %s): %d cases, %d outputs apart from the loops' (at "
                  "most %.3g of the bound), %d negative zeros\n",
                  fused ? "yes" : "no", n_cmp, n_apart, worst, n_neg0);
    assert_true(n_neg0 > 0);            /* the signed-zero cases were reached */
    assert_true(!fused || n_apart > 0); /* fused multiply-adds round otherwise, somewhere */
    free(x);
    free(wt);
    free(ya);
    free(yb);
}

/* pp_gnn_op_linear2_rows_t skipping zero columns gives the bits of two calls of
 * pp_gnn_op_linear_rows_t summing every column: rows mostly zeros (+0 and -0), rows all zeros,
 * NaN and infinite inputs, starts with -0 (a start of -0 plus a skipped +0 product stays -0 where
 * the full sum gives +0: such rows must be summed again), odd row counts, widths other than
 * multiples of 8, and unfinite weights (nothing skipped). Mode 2 runs the skipping AVX2 kernel
 * on AVX-512 machines as well, mode 3 the AVX-512 one on every AVX-512 machine. */
static void linear2_skipping_zeros_should_equal_two_full_calls(void **state)
{
    (void)state;
    enum { M = 23, K = 45, LDX = 47, LDY = 35 };
    static float x[M * LDX], wa[K * 32], wb[K * 32], ba[32], bb[32];
    static float y1a[M * LDY], y1b[M * LDY], y2a[M * LDY], y2b[M * LDY];
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 77);
    static const float special[] = {-0.0f, NAN, INFINITY, 1e-39f, -1e30f, 1.0f / 3.0f};
    for (int i = 0; i < M * LDX; i++) {
        int u = (int)pp_gnn_rng_below(&r, 40);
        x[i] = u < 24 ? 0.0f : u == 24 ? special[pp_gnn_rng_below(&r, 6)]
                                       : (float)(pp_gnn_rng_uniform(&r) * 2.0 - 1.0);
    }
    for (int c = 0; c < LDX; c++) x[3 * LDX + c] = x[8 * LDX + c] = 0.0f; /* rows all zeros */
    for (int c = 0; c < LDX; c++) x[9 * LDX + c] = c % 2 ? -0.0f : 0.0f;
    for (int c = 0; c < LDX; c++) x[10 * LDX + c] = c == 5 ? 1.0f : 0.0f;
    for (int i = 0; i < K * 32; i++) {
        wa[i] = pp_gnn_rng_below(&r, 13) == 0 ? -0.0f : (float)(pp_gnn_rng_uniform(&r) - 0.5);
        wb[i] = (float)pp_gnn_rng_uniform(&r); /* >= 0: skipped +0 products */
    }
    /* row 10 sums to exactly 0 in output 3 of wa from a start of 0 */
    for (int j = 0; j < 32; j++) {
        ba[j] = j % 3 == 0 ? -0.0f : (float)(pp_gnn_rng_uniform(&r) - 0.5);
        bb[j] = j % 4 == 1 ? -0.0f : (float)pp_gnn_rng_uniform(&r);
    }
    wa[5 * 32 + 3] = 0.0f;
    int rows[M], m = 0;
    for (int i = 0; i < M; i++)
        if (i % 7 != 6) rows[m++] = (i * 5) % M;
    int n_cmp = 0, n_neg0 = 0;
    for (int finite = 0; finite < 2; finite++)
        for (int sparse = 0; sparse < 3; sparse++)
            for (int k = 0; k <= K; k += (k < 17 ? 1 : 7))
                for (int mm = 0; mm <= m; mm += (mm < 4 ? 1 : 5))
                    for (int with_b = 0; with_b < 4; with_b++) {
                        const float *pa = with_b & 1 ? ba : NULL, *pb = with_b & 2 ? bb : NULL;
                        for (int i = 0; i < M * LDY; i++)
                            y1a[i] = y1b[i] = y2a[i] = y2b[i] = (float)i;
                        wa[7 * 32] = finite ? 0.5f : INFINITY;
                        /* 2: the AVX2 kernel here too; 3: the AVX-512 one wherever it runs */
                        pp_gnn_infer_sparse(sparse ? sparse + 1 : 0);
                        pp_gnn_op_linear2_rows_t(mm, rows, k, 32, x, LDX, wa, pa, y1a, LDY, wb,
                                                 pb, y1b, LDY, finite);
                        pp_gnn_infer_sparse(1);
                        pp_gnn_op_linear_rows_t(mm, rows, k, 32, x, LDX, wa, pa, y2a, LDY);
                        pp_gnn_op_linear_rows_t(mm, rows, k, 32, x, LDX, wb, pb, y2b, LDY);
                        assert_memory_equal(y1a, y2a, sizeof y1a);
                        assert_memory_equal(y1b, y2b, sizeof y1b);
                        for (int i = 0; i < M * LDY; i++)
                            n_neg0 += (y2a[i] == 0.0f && signbit(y2a[i])) +
                                      (y2b[i] == 0.0f && signbit(y2b[i]));
                        n_cmp++;
                    }
    wa[7 * 32] = 0.5f;
    print_message("two linear ops skipping zeros: %d cases bit for bit, %d negative zeros\n",
                  n_cmp, n_neg0);
    assert_true(n_neg0 > 0); /* the signed-zero cases were reached */
}

/* x_like is a hint the forward checks: none, wrong ones and right ones give the same bits. */
static void row_hints_should_change_no_bit(void **state)
{
    (void)state;
    pp_gnn_graph s[N_GRAPHS];
    int n_s = build_samples(s), n_right = 0;
    pp_gnn *g = load_gnn("epyc-kvm-2vcpu");
    if (!g) g = load_gnn("rpi4");
    assert_non_null(g);
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 5);
    for (int i = 0; i < n_s; i++) {
        int N = s[i].n_nodes, F = s[i].n_feat;
        int *wrong = malloc(sizeof(int) * (size_t)N), *right = malloc(sizeof(int) * (size_t)N);
        assert_true(wrong && right);
        for (int k = 0; k < N; k++) {
            wrong[k] = k ? pp_gnn_rng_below(&r, k) : -1;
            right[k] = -1;
            for (int j = 0; j < k && right[k] < 0; j++)
                if (!memcmp(s[i].x + (size_t)j * F, s[i].x + (size_t)k * F, sizeof(float) * F))
                    right[k] = j;
            n_right += right[k] >= 0;
        }
        double a[3][PP_GNN_MAX_TARGETS], lo[3][PP_GNN_MAX_TARGETS], hi[3][PP_GNN_MAX_TARGETS];
        const int *hints[3] = {NULL, wrong, right};
        for (int h = 0; h < 3; h++) {
            s[i].x_like = hints[h];
            assert_int_equal(pp_gnn_forward_fast(g, &s[i], a[h], lo[h], hi[h], NULL), PERFPRED_OK);
        }
        s[i].x_like = NULL;
        for (int h = 1; h < 3; h++) {
            assert_memory_equal(a[h], a[0], sizeof(double) * (size_t)g->n_targets);
            assert_memory_equal(lo[h], lo[0], sizeof(double) * (size_t)g->n_targets);
            assert_memory_equal(hi[h], hi[0], sizeof(double) * (size_t)g->n_targets);
        }
        free(wrong);
        free(right);
    }
    assert_true(n_right > 0); /* repeated rows were there to be hinted */
    pp_gnn_free(g);
    for (int i = 0; i < n_s; i++) pp_gnn_graph_clear(&s[i]);
}

/* A sum over the first k0 columns into a table of starts, then pp_gnn_op_linear_rows_from_t over
 * the columns after them from those starts (several rows sharing one), must give the bits of one
 * call over all the columns, with the kernels and the loops, at 32 outputs (the kernels) and at
 * others (the generic loop), on a subset of rows in an order of their own. */
static void linear_rows_from_should_equal_one_call_over_all_columns(void **state)
{
    (void)state;
    enum { M = 19, K = 104, LDX = 107, LDY = 35, LDS = 33 };
    static float x[M * LDX], wt[K * 32], ya[M * LDY], yb[M * LDY], start[M * LDS], b[32];
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 41);
    static const float special[] = {-0.0f, 0.0f, 1e-39f, -3e-39f, 1e30f, -1e30f, 1.0f / 3.0f};
    for (int i = 0; i < M * LDX; i++)
        x[i] = pp_gnn_rng_below(&r, 9) == 0 ? special[pp_gnn_rng_below(&r, 7)]
                                            : (float)(pp_gnn_rng_uniform(&r) * 2.0 - 1.0);
    for (int i = 0; i < K * 32; i++)
        wt[i] = pp_gnn_rng_below(&r, 11) == 0 ? -0.0f : (float)(pp_gnn_rng_uniform(&r) - 0.5);
    for (int j = 0; j < 32; j++) b[j] = j % 5 == 0 ? -0.0f : (float)pp_gnn_rng_uniform(&r);
    /* rows 0..M-1 in a shuffled order, leaving three out; row i starts from the row of the first
     * of its group of three, as nodes start from the first of their class */
    int rows[M], map[M], m = 0;
    for (int i = 0; i < M; i++) {
        int at = (i * 7) % M;
        if (at % 6 != 5) rows[m++] = at;
        map[i] = i - i % 3;
    }
    /* rows of a group share their first k0 columns, as a class's nodes share h^l */
    for (int i = 0; i < M; i++)
        memcpy(x + (size_t)i * LDX, x + (size_t)map[i] * LDX, 40 * sizeof(float));
    int n_cmp = 0;
    static const int widths[] = {32, 7};
    for (int plain = 0; plain < 2; plain++)
        for (size_t wi = 0; wi < 2; wi++)
            for (int k0 = 0; k0 <= 40; k0 += 8)
                for (int with_b = 0; with_b < 2; with_b++) {
                    int n = widths[wi];
                    const float *bias = with_b ? b : NULL;
                    for (int i = 0; i < M * LDY; i++) ya[i] = yb[i] = (float)i;
                    pp_gnn_infer_plain(plain);
                    pp_gnn_op_linear_rows_t(m, rows, K, n, x, LDX, wt, bias, ya, LDY);
                    /* the starts: the first k0 columns of each group's first row */
                    int firsts[M], nf = 0;
                    for (int i = 0; i < M; i += 3) firsts[nf++] = i;
                    pp_gnn_op_linear_rows_t(nf, firsts, k0, n, x, LDX, wt, bias, start, LDS);
                    pp_gnn_op_linear_rows_from_t(m, rows, K - k0, n, x + k0, LDX,
                                                 wt + (size_t)k0 * n, start, map, LDS, yb, LDY);
                    pp_gnn_infer_plain(0);
                    assert_memory_equal(ya, yb, sizeof ya);
                    n_cmp++;
                }
    print_message("sums from starts vs one sum: %d cases bit for bit\n", n_cmp);
}

/* Rows computed once per class of equal rows give the bits of every row computed, with the same
 * kernels (each row's sums depend on that row alone), on every shipped GNN. */
static void fast_forward_should_give_the_same_bits_without_row_classes(void **state)
{
    (void)state;
    pp_gnn_graph s[N_GRAPHS];
    int n_s = build_samples(s), n_cmp = 0;
    char dev[MAX_GNNS][64];
    int n_models = shipped_gnns(dev, MAX_GNNS);
    for (int d = 0; d < n_models; d++) {
        pp_gnn *g = load_gnn(dev[d]);
        assert_non_null(g);
        for (int i = 0; i < n_s; i++) {
            double a[PP_GNN_MAX_TARGETS], alo[PP_GNN_MAX_TARGETS], ahi[PP_GNN_MAX_TARGETS];
            double b[PP_GNN_MAX_TARGETS], blo[PP_GNN_MAX_TARGETS], bhi[PP_GNN_MAX_TARGETS];
            assert_int_equal(pp_gnn_forward_fast(g, &s[i], a, alo, ahi, NULL), PERFPRED_OK);
            pp_gnn_infer_classes(0);
            assert_int_equal(pp_gnn_forward_fast(g, &s[i], b, blo, bhi, NULL), PERFPRED_OK);
            pp_gnn_infer_classes(1);
            for (int t = 0; t < g->n_targets; t++, n_cmp++) {
                assert_memory_equal(&a[t], &b[t], sizeof a[t]);
                assert_memory_equal(&alo[t], &blo[t], sizeof a[t]);
                assert_memory_equal(&ahi[t], &bhi[t], sizeof a[t]);
            }
        }
        pp_gnn_free(g);
    }
    assert_true(n_cmp >= 6);
    for (int i = 0; i < n_s; i++) pp_gnn_graph_clear(&s[i]);
}

/* Aggregate and relu+pool kernels against the portable loops, bit for bit: nodes without slots,
 * repeated neighbours, NaN, infinities and signed zeros (max and relu must pick as a branch
 * does). */
/* pp_gnn_relu_pool_rows_t and pp_gnn_relu_pool_cls_t over rows named by their class give the mean
 * and max of a matrix that holds each row's copy, with the vector kernels, the plain loops, and
 * widths other than 32 */
static void pool_over_class_rows_should_equal_pool_over_copies(void **state)
{
    (void)state;
    enum { NN = 41, LDX = 37 };
    static const float special[] = {-0.0f, 0.0f, NAN, -NAN, INFINITY, -INFINITY, 1e-40f};
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 77);
    int rows[NN];
    for (int i = 0; i < NN; i++) /* a row's class: itself, or a row before it that is its own */
        rows[i] = i && pp_gnn_rng_below(&r, 3) ? rows[pp_gnn_rng_below(&r, i)] : i;
    for (int plain = 0; plain < 2; plain++)
        for (int h = 20; h <= 32; h += 12) {
            float X[NN * LDX], C[NN * LDX], X2[NN * LDX], pa[64], pb[64], pc[64];
            for (int i = 0; i < NN * LDX; i++)
                X[i] = pp_gnn_rng_below(&r, 6) == 0 ? special[pp_gnn_rng_below(&r, 7)]
                                                    : (float)(pp_gnn_rng_uniform(&r) * 2.0 - 1.0);
            for (int i = 0; i < NN; i++)
                memcpy(C + i * LDX, X + rows[i] * LDX, sizeof(float) * LDX);
            memcpy(X2, X, sizeof X2);
            pp_gnn_infer_plain(plain);
            pp_gnn_relu_pool_t(NN, h, C, LDX, pa);
            pp_gnn_relu_pool_rows_t(NN, rows, h, X, LDX, pb);
            pp_gnn_relu_pool_cls_t(NN, rows, h, X2, LDX, pc); /* rows are classes here */
            pp_gnn_infer_plain(0);
            assert_memory_equal(pa, pb, sizeof(float) * 2 * h);
            assert_memory_equal(pa, pc, sizeof(float) * 2 * h);
            for (int i = 0; i < NN; i++) { /* each row named is left relu'd as its copies are */
                assert_memory_equal(X + rows[i] * LDX, C + i * LDX, sizeof(float) * h);
                assert_memory_equal(X2 + rows[i] * LDX, C + i * LDX, sizeof(float) * h);
            }
        }
}

static void aggregate_and_pool_kernels_should_equal_plain_loops_bit_for_bit(void **state)
{
    (void)state;
    enum { NN = 37, H = 32, LDM = 101, LDX = 45 };
    int slot_ptr[NN + 1], slot_nb[8 * NN];
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 201);
    slot_ptr[0] = 0;
    for (int i = 0; i < NN; i++) {
        int deg = i % 6 == 0 ? 0 : pp_gnn_rng_below(&r, 8);
        for (int k = 0; k < deg; k++) slot_nb[slot_ptr[i] + k] = pp_gnn_rng_below(&r, NN);
        slot_ptr[i + 1] = slot_ptr[i] + deg;
    }
    int S = slot_ptr[NN];
    float *P = malloc(sizeof(float) * NN * H), *Q = malloc(sizeof(float) * (size_t)(S + 1) * H);
    float *Ma = malloc(sizeof(float) * NN * LDM), *Mb = malloc(sizeof(float) * NN * LDM);
    float *Xa = malloc(sizeof(float) * NN * LDX), *Xb = malloc(sizeof(float) * NN * LDX);
    assert_true(P && Q && Ma && Mb && Xa && Xb);
    static const float special[] = {-0.0f, 0.0f, NAN, -NAN, INFINITY, -INFINITY, 1e-40f};
#define DRAW() (pp_gnn_rng_below(&r, 6) == 0 ? special[pp_gnn_rng_below(&r, 7)] \
                                              : (float)(pp_gnn_rng_uniform(&r) * 2.0 - 1.0))
    for (int i = 0; i < NN * H; i++) P[i] = DRAW();
    for (int i = 0; i < S * H; i++) Q[i] = DRAW();
    for (int i = 0; i < NN * LDX; i++) Xa[i] = Xb[i] = DRAW();
#undef DRAW
    for (int i = 0; i < NN * LDM; i++) Ma[i] = Mb[i] = (float)i;
    float pa[2 * H], pb[2 * H];
    pp_gnn_aggregate_t(NN, H, slot_ptr, slot_nb, P, Q, Ma, LDM);
    pp_gnn_relu_pool_t(NN, H, Xa, LDX, pa);
    pp_gnn_infer_plain(1);
    pp_gnn_aggregate_t(NN, H, slot_ptr, slot_nb, P, Q, Mb, LDM);
    pp_gnn_relu_pool_t(NN, H, Xb, LDX, pb);
    pp_gnn_infer_plain(0);
    assert_memory_equal(Ma, Mb, sizeof(float) * NN * LDM);
    assert_memory_equal(Xa, Xb, sizeof(float) * NN * LDX);
    assert_memory_equal(pa, pb, sizeof pa);
    /* the cases were reached: a zero row for a node without slots, a NaN mean beside a max */
    int zero_rows = 0, nan_mean = 0;
    for (int i = 0; i < NN; i++) {
        zero_rows += slot_ptr[i] == slot_ptr[i + 1] && Ma[(size_t)i * LDM] == 0.0f;
        for (int c = 0; c < H; c++) nan_mean += isnan(Ma[(size_t)i * LDM + c]);
    }
    assert_true(zero_rows > 0 && nan_mean > 0);
    free(P);
    free(Q);
    free(Ma);
    free(Mb);
    free(Xa);
    free(Xb);
}

/* Rows computed once per class of equal rows must be the rows the full forward computes. A
 * chain of look-alike nodes (the same features) with skip edges, two odd nodes, and edges alike
 * but for their feature or direction: a class too coarse at any level (ignoring a neighbour's
 * class, the slot order, an edge feature or the direction) would copy a row that differs. */
static void fast_forward_should_copy_only_rows_that_are_equal(void **state)
{
    (void)state;
    enum { N = 40, F = PP_GNN_GRAPH_NODE_FEAT, MAXE = 3 * N };
    static float x[N * F], ef[MAXE];
    static int row_ptr[N + 1], col_idx[MAXE];
    float globals[7]; /* the shipped GNNs read 7 globals */
    for (int i = 0; i < N; i++)
        for (int c = 0; c < F; c++) x[i * F + c] = (float)((c * 7) % 5) * 0.5f;
    x[3 * F + 2] = 4.0f;  /* odd nodes: the classes must tell their neighbourhoods apart */
    x[21 * F + 5] = -1.0f;
    int e = 0;
    for (int i = 0; i < N; i++) { /* in-edges of i: from i-1, and from i-3 where i % 4 == 0 */
        row_ptr[i] = e;
        if (i >= 1) {
            col_idx[e] = i - 1;
            ef[e++] = i == 30 ? 7.0f : 10.0f; /* one edge alike but for its feature */
        }
        if (i >= 3 && i % 4 == 0) {
            col_idx[e] = i - 3;
            ef[e++] = 10.0f;
        }
    }
    row_ptr[N] = e;
    for (int c = 0; c < 7; c++) globals[c] = 0.25f * (float)c;
    pp_gnn_graph s = {.n_nodes = N, .n_feat = F, .n_edges = e, .n_edge_feat = 1,
                      .n_globals = 7, .x = x, .row_ptr = row_ptr,
                      .col_idx = col_idx, .edge_feat = ef, .globals = globals};
    int n_models = 0;
    char dev[MAX_GNNS][64];
    int n_dev = shipped_gnns(dev, MAX_GNNS);
    for (int d = 0; d < n_dev; d++) {
        pp_gnn *g = load_gnn(dev[d]);
        assert_non_null(g);
        if (g->n_feat != F || g->n_edge_feat != 1 || g->n_globals != 7) {
            pp_gnn_free(g);
            continue;
        }
        double a[PP_GNN_MAX_TARGETS], b[PP_GNN_MAX_TARGETS], lo[PP_GNN_MAX_TARGETS],
            hi[PP_GNN_MAX_TARGETS], blo[PP_GNN_MAX_TARGETS], bhi[PP_GNN_MAX_TARGETS];
        /* with classes, and every row computed by the same kernels: the same bits */
        assert_int_equal(pp_gnn_forward_fast(g, &s, a, lo, hi, NULL), PERFPRED_OK);
        pp_gnn_infer_classes(0);
        assert_int_equal(pp_gnn_forward_fast(g, &s, b, blo, bhi, NULL), PERFPRED_OK);
        pp_gnn_infer_classes(1);
        for (int t = 0; t < g->n_targets; t++) {
            assert_memory_equal(&a[t], &b[t], sizeof a[t]);
            assert_memory_equal(&lo[t], &blo[t], sizeof a[t]);
            assert_memory_equal(&hi[t], &bhi[t], sizeof a[t]);
        }
        n_models++;
        pp_gnn_free(g);
    }
    assert_true(n_models >= 2);
}

typedef struct job {
    const pp_gnn *g;
    const pp_gnn_graph *s;
    int n_s;
    double want[N_GRAPHS];
    int bad;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    for (int rep = 0; rep < 20; rep++)
        for (int i = 0; i < j->n_s; i++) {
            double o[PP_GNN_MAX_TARGETS];
            pp_err err = {0};
            if (pp_gnn_forward_fast(j->g, &j->s[i], o, NULL, NULL, &err) != PERFPRED_OK ||
                o[0] != j->want[i])
                j->bad++;
        }
    return NULL;
}

static void fast_forward_should_be_thread_safe(void **state)
{
    (void)state;
    pp_gnn *g = load_gnn("epyc-kvm-2vcpu");
    if (!g) skip();
    pp_gnn_graph s[N_GRAPHS];
    int n_s = build_samples(s);
    double warm[PP_GNN_MAX_TARGETS];
    assert_int_equal(pp_gnn_forward_fast(g, &s[0], warm, NULL, NULL, NULL), PERFPRED_OK);
    job jobs[4];
    for (int t = 0; t < 4; t++) {
        jobs[t].g = g;
        jobs[t].s = s;
        jobs[t].n_s = n_s;
        jobs[t].bad = 0;
        for (int i = 0; i < n_s; i++) {
            double o[PP_GNN_MAX_TARGETS];
            /* each thread must give what one thread alone gives, bit for bit */
            assert_int_equal(pp_gnn_forward_fast(g, &s[i], o, NULL, NULL, NULL), PERFPRED_OK);
            jobs[t].want[i] = o[0];
        }
    }
    pthread_t th[4];
    for (int t = 0; t < 4; t++) assert_int_equal(pthread_create(&th[t], NULL, run_job, &jobs[t]), 0);
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].bad, 0);
    }
    pp_gnn_free(g);
    for (int i = 0; i < n_s; i++) pp_gnn_graph_clear(&s[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fast_forward_should_agree_with_loops_and_reference_on_shipped_gnns),
        cmocka_unit_test(perturbed_weights_should_exceed_the_tolerance),
        cmocka_unit_test(fast_forward_should_be_thread_safe),
        cmocka_unit_test(linear_t_kernels_should_round_as_fused_multiply_adds),
        cmocka_unit_test(linear_rows_from_should_equal_one_call_over_all_columns),
        cmocka_unit_test(linear2_skipping_zeros_should_equal_two_full_calls),
        cmocka_unit_test(fast_forward_should_give_the_same_bits_without_row_classes),
        cmocka_unit_test(aggregate_and_pool_kernels_should_equal_plain_loops_bit_for_bit),
        cmocka_unit_test(pool_over_class_rows_should_equal_pool_over_copies),
        cmocka_unit_test(row_hints_should_change_no_bit),
        cmocka_unit_test(fast_forward_should_copy_only_rows_that_are_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
