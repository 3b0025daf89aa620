/* tests/test_gnn.c: graph_gnn: every op's backward against central finite differences, the whole
 * network against an independent PyTorch implementation (tests/fixtures/gnn/reference.bin from
 * tests/gnn_reference.py), save/load round trips and corrupt files, bit-reproducible training, a
 * small learning task, and samples built from a model graph. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "graph/graph.h"
#include "graph_gnn/graph_gnn.h"

/* |an - fd| <= rel * max(|an|, |fd|) + abs_tol */
#define assert_grad_close(an, fd, rel, abs_tol, what, idx)                                       \
    do {                                                                                       \
        double an_ = (an), fd_ = (fd);                                                         \
        if (!(fabs(an_ - fd_) <= (rel) * fmax(fabs(an_), fabs(fd_)) + (abs_tol))) {           \
            print_error("%s[%d]: analytic %.9g, finite difference %.9g\n", (what), (int)(idx), \
                        an_, fd_);                                                             \
            fail();                                                                            \
        }                                                                                      \
    } while (0)

static void fill_random(float *p, size_t n, pp_gnn_rng *r, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) p[i] = (float)(lo + (hi - lo) * pp_gnn_rng_uniform(r));
}

/* values with |v| in [0.1, 1] and a random sign: far from relu's kink at finite-difference scale */
static void fill_away_from_zero(float *p, size_t n, pp_gnn_rng *r)
{
    for (size_t i = 0; i < n; i++) {
        double v = 0.1 + 0.9 * pp_gnn_rng_uniform(r);
        p[i] = (float)(pp_gnn_rng_uniform(r) < 0.5 ? -v : v);
    }
}

static double dot_d(const float *a, const float *c, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * (double)c[i];
    return s;
}

/* ------------------------------------------------------------------ op checks ---- */

#define FD_EPS 1e-3f

/* loss = sum c . y over y[m][n] (ld ldy) of linear(x, w, b) */
static double linear_loss(int m, int k, int n, const float *x, int ldx, const float *w, int ldw,
                          const float *b, float *y, int ldy, const float *c)
{
    pp_gnn_op_linear(0, m, k, n, x, NULL, ldx, w, NULL, ldw, b, NULL, y, NULL, ldy);
    double s = 0.0;
    for (int i = 0; i < m; i++) s += dot_d(y + (size_t)i * ldy, c + (size_t)i * ldy, (size_t)n);
    return s;
}

static void op_linear_should_match_finite_differences(void **state)
{
    enum { M = 4, K = 5, N = 3, LDX = 7, LDW = 6, LDY = 4 };
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 11);
    float x[M * LDX], w[N * LDW], b[N], y[M * LDY], c[M * LDY];
    float dx[M * LDX] = {0}, dw[N * LDW] = {0}, db[N] = {0};
    fill_random(x, M * LDX, &r, -1, 1);
    fill_random(w, N * LDW, &r, -1, 1);
    fill_random(b, N, &r, -1, 1);
    fill_random(c, M * LDY, &r, -1, 1);
    linear_loss(M, K, N, x, LDX, w, LDW, b, y, LDY, c);
    /* forward against a plain triple loop */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = b[j];
            for (int q = 0; q < K; q++) s += (double)x[i * LDX + q] * w[j * LDW + q];
            assert_rel_close(y[i * LDY + j], s, 1e-5);
        }
    pp_gnn_op_linear(1, M, K, N, x, dx, LDX, w, dw, LDW, b, db, y, c, LDY);
    struct { float *v, *g; int rows, cols, ld; const char *name; } vars[] = {
        {x, dx, M, K, LDX, "dx"}, {w, dw, N, K, LDW, "dw"}, {b, db, 1, N, N, "db"}};
    for (int v = 0; v < 3; v++)
        for (int i = 0; i < vars[v].rows; i++)
            for (int j = 0; j < vars[v].cols; j++) {
                float *p = &vars[v].v[i * vars[v].ld + j], save = *p;
                *p = save + FD_EPS;
                double lp = linear_loss(M, K, N, x, LDX, w, LDW, b, y, LDY, c);
                *p = save - FD_EPS;
                double lm = linear_loss(M, K, N, x, LDX, w, LDW, b, y, LDY, c);
                *p = save;
                assert_grad_close(vars[v].g[i * vars[v].ld + j], (lp - lm) / (2.0 * FD_EPS), 1e-2,
                                  1e-3, vars[v].name, i * vars[v].ld + j);
            }
    /* padding columns of dx / dw are never touched */
    for (int i = 0; i < M; i++)
        for (int j = K; j < LDX; j++) assert_true(dx[i * LDX + j] == 0.0f);
    /* backward accumulates: a second pass doubles the gradient */
    float dw2[N * LDW];
    memcpy(dw2, dw, sizeof dw);
    pp_gnn_op_linear(1, M, K, N, x, NULL, LDX, w, dw, LDW, NULL, NULL, y, c, LDY);
    for (int i = 0; i < N * LDW; i++) assert_rel_close(dw[i], 2.0 * dw2[i], 1e-6);
}

static void op_linear_should_handle_empty_input_width(void **state)
{
    float b[2] = {0.5f, -1.5f}, y[3 * 2], db[2] = {0}, dy[6] = {1, 2, 3, 4, 5, 6};
    pp_gnn_op_linear(0, 3, 0, 2, NULL, NULL, 0, NULL, NULL, 0, b, NULL, y, NULL, 2);
    for (int i = 0; i < 3; i++) {
        assert_true(y[2 * i] == 0.5f);
        assert_true(y[2 * i + 1] == -1.5f);
    }
    pp_gnn_op_linear(1, 3, 0, 2, NULL, NULL, 0, NULL, NULL, 0, b, db, y, dy, 2);
    assert_true(db[0] == 9.0f && db[1] == 12.0f);
}

static double relu_loss(int m, int n, const float *x, float *y, int ld, const float *c)
{
    memcpy(y, x, (size_t)m * ld * sizeof(float));
    pp_gnn_op_relu(0, m, n, y, NULL, ld);
    double s = 0.0;
    for (int i = 0; i < m; i++) s += dot_d(y + (size_t)i * ld, c + (size_t)i * ld, (size_t)n);
    return s;
}

static void op_relu_should_match_finite_differences(void **state)
{
    enum { M = 3, N = 4, LD = 5 };
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 12);
    float x[M * LD], y[M * LD], c[M * LD], g[M * LD];
    fill_away_from_zero(x, M * LD, &r);
    fill_random(c, M * LD, &r, -1, 1);
    relu_loss(M, N, x, y, LD, c);
    int neg = 0, pos = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            assert_true(y[i * LD + j] == (x[i * LD + j] > 0 ? x[i * LD + j] : 0.0f));
            neg += x[i * LD + j] < 0;
            pos += x[i * LD + j] > 0;
        }
    assert_true(neg > 0 && pos > 0);
    memcpy(g, c, sizeof g);
    pp_gnn_op_relu(1, M, N, y, g, LD);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float *p = &x[i * LD + j], save = *p;
            *p = save + FD_EPS;
            double lp = relu_loss(M, N, x, y, LD, c);
            *p = save - FD_EPS;
            double lm = relu_loss(M, N, x, y, LD, c);
            *p = save;
            assert_grad_close(g[i * LD + j], (lp - lm) / (2.0 * FD_EPS), 1e-2, 1e-3, "relu",
                              i * LD + j);
        }
}

/* four nodes: 0 <- {1, 2}; 1 <- {0}; 2 has no slots; 3 <- {0, 1, 2, 1} */
static const int AGG_PTR[] = {0, 2, 3, 3, 7};
static const int AGG_NB[] = {1, 2, 0, 0, 1, 2, 1};
enum { AGG_N = 4, AGG_S = 7, AGG_H = 3, AGG_LDM = 2 * AGG_H + 2 };

static double aggregate_loss(const float *P, const float *Q, float *M, int *am, const float *c)
{
    pp_gnn_op_aggregate(0, AGG_N, AGG_H, AGG_PTR, AGG_NB, P, NULL, Q, NULL, M, NULL, AGG_LDM, am);
    double s = 0.0;
    for (int i = 0; i < AGG_N; i++)
        s += dot_d(M + (size_t)i * AGG_LDM, c + (size_t)i * AGG_LDM, 2 * AGG_H);
    return s;
}

static void op_aggregate_should_match_finite_differences(void **state)
{
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 13);
    float P[AGG_N * AGG_H], Q[AGG_S * AGG_H], M[AGG_N * AGG_LDM], c[AGG_N * AGG_LDM];
    float dP[AGG_N * AGG_H] = {0}, dQ[AGG_S * AGG_H] = {0};
    int am[AGG_N * AGG_H];
    /* spread values so that no two messages of a node are within 2 eps of each other */
    for (int i = 0; i < AGG_N * AGG_H; i++) P[i] = (float)(0.37 * i - 2.0);
    for (int i = 0; i < AGG_S * AGG_H; i++)
        Q[i] = (float)(pp_gnn_rng_uniform(&r) < 0.5 ? 0.9 * i : -0.7 * i);
    fill_random(c, AGG_N * AGG_LDM, &r, -1, 1);
    aggregate_loss(P, Q, M, am, c);
    /* forward by hand: node 3, component 1 */
    {
        double s = 0.0, mx = -INFINITY;
        for (int sl = 3; sl < 7; sl++) {
            double v = (double)P[AGG_NB[sl] * AGG_H + 1] + Q[sl * AGG_H + 1];
            s += v;
            mx = fmax(mx, v);
        }
        assert_rel_close(M[3 * AGG_LDM + 1], s / 4.0, 1e-6);
        assert_rel_close(M[3 * AGG_LDM + AGG_H + 1], mx, 1e-6);
    }
    for (int c2 = 0; c2 < 2 * AGG_H; c2++) assert_true(M[2 * AGG_LDM + c2] == 0.0f); /* no slots */
    assert_int_equal(am[2 * AGG_H], -1);
    pp_gnn_op_aggregate(1, AGG_N, AGG_H, AGG_PTR, AGG_NB, P, dP, Q, dQ, M, c, AGG_LDM, am);
    float *vars[] = {P, Q}, *grads[] = {dP, dQ};
    int sizes[] = {AGG_N * AGG_H, AGG_S * AGG_H};
    for (int v = 0; v < 2; v++)
        for (int i = 0; i < sizes[v]; i++) {
            float *p = &vars[v][i], save = *p;
            *p = save + FD_EPS;
            double lp = aggregate_loss(P, Q, M, am, c);
            *p = save - FD_EPS;
            double lm = aggregate_loss(P, Q, M, am, c);
            *p = save;
            assert_grad_close(grads[v][i], (lp - lm) / (2.0 * FD_EPS), 1e-2, 1e-3,
                              v ? "dQ" : "dP", i);
        }
}

enum { POOL_N = 5, POOL_H = 3, POOL_LD = 4 };
static double pool_loss(const float *X, float *out, int *am, const float *c)
{
    pp_gnn_op_pool(0, POOL_N, POOL_H, X, NULL, POOL_LD, out, NULL, am);
    return dot_d(out, c, 2 * POOL_H);
}

static void op_pool_should_match_finite_differences(void **state)
{
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 14);
    float X[POOL_N * POOL_LD], dX[POOL_N * POOL_LD] = {0}, out[2 * POOL_H], c[2 * POOL_H];
    int am[POOL_H];
    for (int i = 0; i < POOL_N * POOL_LD; i++) X[i] = (float)((i * 7 % 11) * 0.25 - 1.0);
    fill_random(c, 2 * POOL_H, &r, -1, 1);
    pool_loss(X, out, am, c);
    for (int j = 0; j < POOL_H; j++) {
        double s = 0.0, mx = -INFINITY;
        for (int i = 0; i < POOL_N; i++) {
            s += X[i * POOL_LD + j];
            mx = fmax(mx, X[i * POOL_LD + j]);
        }
        assert_rel_close(out[j], s / POOL_N, 1e-6);
        assert_rel_close(out[POOL_H + j], mx, 1e-6);
    }
    pp_gnn_op_pool(1, POOL_N, POOL_H, X, dX, POOL_LD, out, c, am);
    for (int i = 0; i < POOL_N; i++)
        for (int j = 0; j < POOL_H; j++) {
            float *p = &X[i * POOL_LD + j], save = *p;
            *p = save + FD_EPS;
            double lp = pool_loss(X, out, am, c);
            *p = save - FD_EPS;
            double lm = pool_loss(X, out, am, c);
            *p = save;
            assert_grad_close(dX[i * POOL_LD + j], (lp - lm) / (2.0 * FD_EPS), 1e-2, 1e-3, "pool",
                              i * POOL_LD + j);
        }
}

static void op_broadcast_and_mse_should_match_finite_differences(void **state)
{
    enum { N = 3, D = 2, LD = 5 };
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 15);
    float g[D], dg[D] = {0}, C[N * LD], c[N * LD];
    fill_random(g, D, &r, -1, 1);
    fill_random(c, N * LD, &r, -1, 1);
    pp_gnn_op_broadcast(0, N, D, g, NULL, C, NULL, LD);
    pp_gnn_op_broadcast(1, N, D, g, dg, C, c, LD);
    for (int j = 0; j < D; j++) {
        double lp = 0, lm = 0;
        float save = g[j];
        g[j] = save + FD_EPS;
        pp_gnn_op_broadcast(0, N, D, g, NULL, C, NULL, LD);
        for (int i = 0; i < N; i++) lp += dot_d(C + i * LD, c + i * LD, D);
        g[j] = save - FD_EPS;
        pp_gnn_op_broadcast(0, N, D, g, NULL, C, NULL, LD);
        for (int i = 0; i < N; i++) lm += dot_d(C + i * LD, c + i * LD, D);
        g[j] = save;
        assert_grad_close(dg[j], (lp - lm) / (2.0 * FD_EPS), 1e-2, 1e-3, "broadcast", j);
    }
    float o[3] = {0.3f, -1.2f, 2.0f}, y[3] = {1.0f, 0.5f, -0.25f}, d_o[3] = {0};
    unsigned char mask[3] = {1, 0, 1};
    double l = pp_gnn_op_mse(1, 3, o, d_o, y, mask, 0.5);
    assert_rel_close(l, 0.5 * (0.7 * 0.7 + 2.25 * 2.25), 1e-6);
    assert_true(d_o[1] == 0.0f);
    for (int t = 0; t < 3; t++) {
        float save = o[t];
        o[t] = save + FD_EPS;
        double lp = pp_gnn_op_mse(0, 3, o, NULL, y, mask, 0.5);
        o[t] = save - FD_EPS;
        double lm = pp_gnn_op_mse(0, 3, o, NULL, y, mask, 0.5);
        o[t] = save;
        assert_grad_close(d_o[t], (lp - lm) / (2.0 * FD_EPS), 1e-2, 1e-3, "mse", t);
    }
}

/* Huber: squared error inside the threshold, a line of the same slope beyond it, written out by
 * hand here; its gradient against finite differences (no residual sits on a kink). */
static void op_huber_should_match_its_definition_and_finite_differences(void **state)
{
    float o[4] = {0.3f, -1.2f, 2.0f, 0.05f}, y[4] = {0.25f, 0.5f, -0.25f, 0.0f};
    float delta[4] = {0.1f, 1.0f, 0.5f, 0.01f}, d_o[4] = {0};
    unsigned char mask[4] = {1, 1, 0, 1};
    /* residuals 0.05 (inside 0.1), -1.7 (beyond 1.0), masked, 0.05 (beyond 0.01) */
    double want = 0.5 * (0.05 * 0.05 + 1.0 * (2 * 1.7 - 1.0) + 0.01 * (2 * 0.05 - 0.01));
    double l = pp_gnn_op_huber(1, 4, o, d_o, y, mask, delta, 0.5);
    assert_rel_close(l, want, 1e-5);
    assert_true(d_o[2] == 0.0f);
    assert_rel_close(d_o[1], 0.5 * 2 * 1.0 * -1.0, 1e-6);  /* slope capped at 2 delta */
    assert_rel_close(d_o[0], 0.5 * 2 * 0.05, 1e-4);        /* the squared error's slope */
    for (int t = 0; t < 4; t++) {
        float save = o[t];
        o[t] = save + FD_EPS;
        double lp = pp_gnn_op_huber(0, 4, o, NULL, y, mask, delta, 0.5);
        o[t] = save - FD_EPS;
        double lm = pp_gnn_op_huber(0, 4, o, NULL, y, mask, delta, 0.5);
        o[t] = save;
        assert_grad_close(d_o[t], (lp - lm) / (2.0 * FD_EPS), 1e-2, 1e-3, "huber", t);
    }
    /* a threshold beyond every residual is the squared error */
    float big[4] = {10, 10, 10, 10}, d_h[4] = {0}, d_m[4] = {0};
    double lh = pp_gnn_op_huber(1, 4, o, d_h, y, mask, big, 0.25);
    double lmse = pp_gnn_op_mse(1, 4, o, d_m, y, mask, 0.25);
    assert_rel_close(lh, lmse, 1e-12);
    assert_memory_equal(d_h, d_m, sizeof d_h);
}

/* ----------------------------------------------------------- random graphs ---- */

/* A sample with its own arrays (kept in one struct so tests can build many). */
typedef struct owned_graph {
    pp_gnn_graph s;
    float *x, *ef, *u;
    int *row_ptr, *col_idx;
} owned_graph;

/* A random DAG of n nodes: node i > 0 takes one or two producers among earlier nodes. */
static void random_graph(owned_graph *o, pp_gnn_rng *r, int n, int F, int Fe, int G)
{
    memset(o, 0, sizeof *o);
    o->row_ptr = calloc((size_t)n + 1, sizeof(int));
    o->col_idx = calloc((size_t)2 * n + 1, sizeof(int));
    o->x = calloc((size_t)n * F, sizeof(float));
    o->ef = calloc((size_t)(2 * n + 1) * (Fe ? Fe : 1), sizeof(float));
    o->u = calloc((size_t)(G ? G : 1), sizeof(float));
    int E = 0;
    for (int i = 0; i < n; i++) {
        o->row_ptr[i] = E;
        if (i > 0) {
            int k = 1 + (i > 1 && pp_gnn_rng_uniform(r) < 0.5);
            for (int q = 0; q < k; q++) o->col_idx[E++] = pp_gnn_rng_below(r, i);
        }
    }
    o->row_ptr[n] = E;
    for (int i = 0; i < n * F; i++) o->x[i] = (float)(2.0 * pp_gnn_rng_uniform(r) - 1.0) * 1.7f;
    for (int i = 0; i < E * Fe; i++) o->ef[i] = (float)(4.0 * pp_gnn_rng_uniform(r));
    for (int i = 0; i < G; i++) o->u[i] = (float)(2.0 * pp_gnn_rng_uniform(r) - 1.0);
    o->s.n_nodes = n;
    o->s.n_feat = F;
    o->s.n_edges = E;
    o->s.n_edge_feat = Fe;
    o->s.n_globals = G;
    o->s.x = o->x;
    o->s.row_ptr = o->row_ptr;
    o->s.col_idx = o->col_idx;
    o->s.edge_feat = o->ef;
    o->s.globals = o->u;
}

static void owned_free(owned_graph *o)
{
    free(o->x);
    free(o->ef);
    free(o->u);
    free(o->row_ptr);
    free(o->col_idx);
}

/* ---------------------------------------------------- whole-network checks ---- */

static void network_gradient_should_match_finite_differences(void **state)
{
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 2;
    p.hidden = 5;
    p.seed = 3;
    pp_gnn *m;
    assert_int_equal(pp_gnn_new(3, 1, 2, 2, &p, &m, NULL), PERFPRED_OK);
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, 21);
    owned_graph og[2];
    pp_gnn_graph gs[2];
    for (int b = 0; b < 2; b++) {
        random_graph(&og[b], &r, 5 + b, 3, 1, 2);
        gs[b] = og[b].s;
        gs[b].y[0] = 0.4f - b;
        gs[b].y[1] = -0.2f;
        gs[b].mask[0] = 1;
        gs[b].mask[1] = (unsigned char)b;
    }
    for (size_t i = 0; i < m->n_params; i++) /* random biases too, so that few units sit at 0 */
        if (m->w[i] == 0.0f) m->w[i] = (float)(0.4 * pp_gnn_rng_uniform(&r) - 0.2);
    double loss;
    assert_int_equal(pp_gnn_loss_grad(m, gs, NULL, 2, &loss, NULL), PERFPRED_OK);
    assert_true(loss > 0.0);
    float *an = malloc(m->n_params * sizeof(float));
    memcpy(an, m->grad, m->n_params * sizeof(float));
    double gmax = 0.0;
    for (size_t i = 0; i < m->n_params; i++) gmax = fmax(gmax, fabs(an[i]));
    /* Finite differences in float32 cross a relu or max kink now and then; such a parameter
     * disagrees by an arbitrary amount. Allow at most 2% of them; every other must agree. */
    int bad = 0, nonzero = 0;
    const float eps = 1e-3f;
    for (size_t i = 0; i < m->n_params; i++) {
        float save = m->w[i];
        double lp, lm;
        m->w[i] = save + eps;
        pp_gnn_loss_grad(m, gs, NULL, 2, &lp, NULL);
        m->w[i] = save - eps;
        pp_gnn_loss_grad(m, gs, NULL, 2, &lm, NULL);
        m->w[i] = save;
        double fd = (lp - lm) / (2.0 * eps);
        nonzero += an[i] != 0.0f;
        if (!(fabs(an[i] - fd) <= 2e-2 * fmax(fabs(an[i]), fabs(fd)) + 2e-3 * gmax)) {
            print_message("param %zu: analytic %.7g, finite difference %.7g\n", i, an[i], fd);
            bad++;
        }
    }
    assert_true(nonzero > (int)m->n_params / 3);
    assert_true(bad * 50 <= (int)m->n_params);
    free(an);
    for (int b = 0; b < 2; b++) owned_free(&og[b]);
    pp_gnn_free(m);
}

/* Little-endian reader for reference.bin (layout in tests/gnn_reference.py). */
typedef struct rd {
    const uint8_t *p, *end;
} rd;
static uint32_t rd_u32(rd *r)
{
    assert_true(r->end - r->p >= 4);
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 |
                 (uint32_t)r->p[3] << 24;
    r->p += 4;
    return v;
}
static float rd_f32(rd *r)
{
    uint32_t v = rd_u32(r);
    float f;
    memcpy(&f, &v, 4);
    return f;
}
static double rd_f64(rd *r)
{
    uint64_t lo = rd_u32(r), hi = rd_u32(r);
    uint64_t v = lo | hi << 32;
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static void rd_f32s(rd *r, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = rd_f32(r);
}

static void network_should_match_pytorch_reference(void **state)
{
    uint8_t *buf;
    size_t len;
    assert_int_equal(pp_read_file(pp_test_path("tests/fixtures/gnn/reference.bin"), &buf, &len, NULL),
                     PERFPRED_OK);
    rd r = {buf, buf + len};
    assert_true(len > 8 && memcmp(buf, "PPGNNREF", 8) == 0);
    r.p += 8;
    assert_int_equal(rd_u32(&r), 1);
    int F = (int)rd_u32(&r), Fe = (int)rd_u32(&r), G = (int)rd_u32(&r), T = (int)rd_u32(&r);
    int L = (int)rd_u32(&r), H = (int)rd_u32(&r), np = (int)rd_u32(&r), ng = (int)rd_u32(&r);
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = L;
    p.hidden = H;
    pp_gnn *m;
    assert_int_equal(pp_gnn_new(F, Fe, G, T, &p, &m, NULL), PERFPRED_OK);
    assert_int_equal((int)m->n_params, np); /* the two layouts agree in size */
    rd_f32s(&r, m->x_mean, (size_t)F);
    rd_f32s(&r, m->x_std, (size_t)F);
    rd_f32s(&r, m->e_mean, (size_t)Fe);
    rd_f32s(&r, m->e_std, (size_t)Fe);
    rd_f32s(&r, m->u_mean, (size_t)G);
    rd_f32s(&r, m->u_std, (size_t)G);
    rd_f32s(&r, m->y_mean, (size_t)T);
    rd_f32s(&r, m->y_std, (size_t)T);
    rd_f32s(&r, m->w, (size_t)np);
    pp_gnn_graph gs[4];
    void *owned[4][6];
    double expect[4][PP_GNN_MAX_TARGETS];
    assert_true(ng >= 1 && ng <= 4);
    for (int b = 0; b < ng; b++) {
        pp_gnn_graph *s = &gs[b];
        memset(s, 0, sizeof *s);
        int N = (int)rd_u32(&r), E = (int)rd_u32(&r);
        float *x = malloc((size_t)N * F * sizeof(float));
        float *ef = malloc((size_t)(E * Fe + 1) * sizeof(float));
        float *u = malloc((size_t)(G + 1) * sizeof(float));
        int *rp = malloc((size_t)(N + 1) * sizeof(int)), *ci = malloc((size_t)(E + 1) * sizeof(int));
        rd_f32s(&r, x, (size_t)N * F);
        for (int i = 0; i <= N; i++) rp[i] = (int)rd_u32(&r);
        for (int k = 0; k < E; k++) ci[k] = (int)rd_u32(&r);
        rd_f32s(&r, ef, (size_t)E * Fe);
        rd_f32s(&r, u, (size_t)G);
        rd_f32s(&r, s->y, (size_t)T);
        assert_true(r.end - r.p >= T);
        for (int t = 0; t < T; t++) s->mask[t] = *r.p++;
        for (int t = 0; t < T; t++) expect[b][t] = rd_f64(&r);
        s->n_nodes = N;
        s->n_feat = F;
        s->n_edges = E;
        s->n_edge_feat = Fe;
        s->n_globals = G;
        s->x = x;
        s->row_ptr = rp;
        s->col_idx = ci;
        s->edge_feat = ef;
        s->globals = u;
        void *own[6] = {x, ef, u, rp, ci, NULL};
        memcpy(owned[b], own, sizeof own);
    }
    double expect_loss = rd_f64(&r);
    double *expect_grad = malloc((size_t)np * sizeof(double));
    for (int i = 0; i < np; i++) expect_grad[i] = rd_f64(&r);
    assert_true(r.p == r.end);

    for (int b = 0; b < ng; b++) {
        double out[PP_GNN_MAX_TARGETS];
        assert_int_equal(pp_gnn_forward(m, &gs[b], out, NULL), PERFPRED_OK);
        for (int t = 0; t < T; t++) assert_rel_close(out[t], expect[b][t], 1e-4);
    }
    double loss;
    assert_int_equal(pp_gnn_loss_grad(m, gs, NULL, ng, &loss, NULL), PERFPRED_OK);
    assert_rel_close(loss, expect_loss, 1e-4);
    double gmax = 0.0;
    int nonzero = 0;
    for (int i = 0; i < np; i++) {
        gmax = fmax(gmax, fabs(expect_grad[i]));
        nonzero += expect_grad[i] != 0.0;
    }
    assert_true(nonzero > np / 3);
    for (int i = 0; i < np; i++)
        assert_grad_close(m->grad[i], expect_grad[i], 1e-4, 1e-6 * gmax, "grad", i);
    for (int b = 0; b < ng; b++)
        for (int k = 0; k < 5; k++) free(owned[b][k]);
    free(expect_grad);
    free(buf);
    pp_gnn_free(m);
}

/* ---------------------------------------------------------------- training ---- */

/* Targets of the learning task, from node and edge features alone:
 *   t0 = mean_i x_i0 + 0.5 u_0          (pooling and the global input)
 *   t1 = mean_i max_{j producer of i} x_j1, 0 for a node without producers (direction-aware
 *        message passing) */
static void learning_targets(pp_gnn_graph *s)
{
    double m0 = 0.0, m1 = 0.0;
    for (int i = 0; i < s->n_nodes; i++) {
        m0 += s->x[(size_t)i * s->n_feat];
        double mx = 0.0;
        for (int k = s->row_ptr[i]; k < s->row_ptr[i + 1]; k++) {
            double v = s->x[(size_t)s->col_idx[k] * s->n_feat + 1];
            mx = k == s->row_ptr[i] ? v : fmax(mx, v);
        }
        m1 += mx;
    }
    s->y[0] = (float)(m0 / s->n_nodes + 0.5 * s->globals[0]);
    s->y[1] = (float)(m1 / s->n_nodes);
    s->mask[0] = s->mask[1] = 1;
}

static void make_dataset(owned_graph *og, pp_gnn_graph *gs, int n, uint64_t seed)
{
    pp_gnn_rng r;
    pp_gnn_rng_seed(&r, seed);
    for (int b = 0; b < n; b++) {
        random_graph(&og[b], &r, 4 + pp_gnn_rng_below(&r, 12), 3, 1, 1);
        gs[b] = og[b].s;
        learning_targets(&gs[b]);
    }
}

static void train_should_be_bit_reproducible(void **state)
{
    enum { NS = 30 };
    owned_graph og[NS];
    pp_gnn_graph gs[NS];
    make_dataset(og, gs, NS, 5);
    int tr[24], va[6];
    for (int i = 0; i < 24; i++) tr[i] = i;
    for (int i = 0; i < 6; i++) va[i] = 24 + i;
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 2;
    p.hidden = 8;
    p.epochs = 6;
    p.batch = 5;
    p.seed = 77;
    pp_gnn *a, *b, *c;
    assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &a, NULL), PERFPRED_OK);
    assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &b, NULL), PERFPRED_OK);
    p.seed = 78;
    assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &c, NULL), PERFPRED_OK);
    pp_gnn_report ra, rb;
    assert_int_equal(pp_gnn_train(a, gs, NS, tr, 24, va, 6, &ra, NULL), PERFPRED_OK);
    /* b first runs other work on the same model, which training must wipe out */
    b->w[0] = 42.0f;
    b->adam_t = 9;
    assert_int_equal(pp_gnn_train(b, gs, NS, tr, 24, va, 6, &rb, NULL), PERFPRED_OK);
    assert_int_equal(pp_gnn_train(c, gs, NS, tr, 24, va, 6, NULL, NULL), PERFPRED_OK);
    assert_memory_equal(a->w, b->w, a->n_params * sizeof(float));
    assert_memory_equal(a->x_std, b->x_std, 3 * sizeof(float));
    assert_true(ra.val_mse == rb.val_mse && ra.best_epoch == rb.best_epoch);
    assert_true(memcmp(a->w, c->w, a->n_params * sizeof(float)) != 0); /* the seed matters */
    assert_int_equal(ra.epochs_run, 6);
    assert_int_equal(ra.n_train, 24);
    pp_gnn_free(a);
    pp_gnn_free(b);
    pp_gnn_free(c);
    for (int i = 0; i < NS; i++) owned_free(&og[i]);
}

/* Mean |prediction - target t| over samples lo..hi-1. */
static double mean_abs_error(const pp_gnn *m, const pp_gnn_graph *gs, int lo, int hi, int t)
{
    double ae = 0.0;
    for (int b = lo; b < hi; b++) {
        double out[PP_GNN_MAX_TARGETS];
        assert_int_equal(pp_gnn_forward(m, &gs[b], out, NULL), PERFPRED_OK);
        ae += fabs(out[t] - gs[b].y[t]);
    }
    return ae / (hi - lo);
}

/* 1 - R^2 of target t over samples lo..hi-1; also the summed squared error and count */
static double unexplained(const pp_gnn *m, const pp_gnn_graph *gs, int lo, int hi, int t,
                          double *se_out)
{
    double mean = 0.0, var = 0.0, se = 0.0;
    for (int b = lo; b < hi; b++) mean += gs[b].y[t];
    mean /= hi - lo;
    for (int b = lo; b < hi; b++) {
        double out[PP_GNN_MAX_TARGETS];
        assert_int_equal(pp_gnn_forward(m, &gs[b], out, NULL), PERFPRED_OK);
        se += (out[t] - gs[b].y[t]) * (out[t] - gs[b].y[t]);
        var += (gs[b].y[t] - mean) * (gs[b].y[t] - mean);
    }
    if (se_out) *se_out = se;
    return se / var;
}

/* Optimization works: 100 graphs, no validation split, all epochs run. */
static void train_should_fit_a_simple_target(void **state)
{
    enum { NS = 100 };
    owned_graph og[NS];
    pp_gnn_graph gs[NS];
    make_dataset(og, gs, NS, 9);
    int tr[NS];
    for (int i = 0; i < NS; i++) tr[i] = i;
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 2;
    p.hidden = 16;
    p.epochs = 150;
    p.batch = 8;
    p.lr = 3e-3;
    pp_gnn *m;
    assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &m, NULL), PERFPRED_OK);
    pp_gnn_report rep;
    assert_int_equal(pp_gnn_train(m, gs, NS, tr, NS, NULL, 0, &rep, NULL), PERFPRED_OK);
    assert_int_equal(rep.epochs_run, 150);
    assert_int_equal(rep.best_epoch, 150);
    assert_true(rep.val_mse == -1.0);
    for (int t = 0; t < 2; t++) {
        double u = unexplained(m, gs, 0, NS, t, NULL);
        print_message("target %d, training graphs: 1 - R^2 = %.4f\n", t, u);
        assert_true(u < 0.05);
    }
    pp_gnn_free(m);
    for (int i = 0; i < NS; i++) owned_free(&og[i]);
}

/* Early stopping keeps weights that predict unseen graphs better than their mean does, and the
 * report's validation error is the error of those weights. */
static void train_should_generalize_with_early_stopping(void **state)
{
    enum { NS = 250, NT = 200 };
    owned_graph *og = calloc(NS, sizeof *og);
    pp_gnn_graph *gs = calloc(NS, sizeof *gs);
    make_dataset(og, gs, NS, 12);
    int tr[NT], va[NS - NT];
    for (int i = 0; i < NT; i++) tr[i] = i;
    for (int i = 0; i < NS - NT; i++) va[i] = NT + i;
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 2;
    p.hidden = 16;
    p.epochs = 300;
    p.batch = 8;
    p.lr = 1e-3;
    p.patience = 50;
    pp_gnn *m;
    assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &m, NULL), PERFPRED_OK);
    pp_gnn_report rep;
    assert_int_equal(pp_gnn_train(m, gs, NS, tr, NT, va, NS - NT, &rep, NULL), PERFPRED_OK);
    assert_true(rep.best_epoch >= 1 && rep.best_epoch <= rep.epochs_run);
    assert_true(rep.epochs_run == p.epochs || rep.epochs_run == rep.best_epoch + p.patience);
    double se_sum = 0.0;
    for (int t = 0; t < 2; t++) {
        double se, u = unexplained(m, gs, NT, NS, t, &se);
        print_message("target %d, held-out graphs: 1 - R^2 = %.4f\n", t, u);
        assert_true(u < 0.6);
        assert_rel_close(rep.val_rmse[t], sqrt(se / (NS - NT)), 1e-9);
        assert_rel_close(rep.val_mae[t], mean_abs_error(m, gs, NT, NS, t), 1e-9);
        se_sum += se;
    }
    assert_rel_close(rep.val_mse, se_sum / (2.0 * (NS - NT)), 1e-9);
    assert_true(rep.val_rmse[2] == -1.0);
    pp_gnn_free(m);
    for (int i = 0; i < NS; i++) owned_free(&og[i]);
    free(og);
    free(gs);
}

/* Per-epoch validation errors, read from the training log (DEBUG lines). */
typedef struct epoch_trace {
    int n;
    double mse[400], mae[400];
} epoch_trace;

static void trace_log(perfpred_log_level level, const char *msg, void *user)
{
    epoch_trace *tr = user;
    int ep;
    double loss, mse, mae;
    if (level == PERFPRED_LOG_DEBUG && tr->n < 400 &&
        sscanf(msg, "gnn epoch %d: train loss %lf (standardized), val mse %lf, val mae %lf", &ep,
               &loss, &mse, &mae) == 4) {
        assert_int_equal(ep, tr->n + 1);
        tr->mse[tr->n] = mse;
        tr->mae[tr->n] = mae;
        tr->n++;
    }
}

static int argmin(const double *v, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] < v[b]) b = i;
    return b;
}

/* Training targets with a few gross errors (+3 in log units on every fifth graph): the Huber loss
 * fits the clean held-out graphs better than the squared error, which chases the outliers; and
 * early stopping keeps the epoch with the least validation MSE, or mean |error| under Huber. */
static void train_with_huber_should_resist_outliers_and_stop_on_mae(void **state)
{
    enum { NS = 200, NT = 150 };
    owned_graph *og = calloc(NS, sizeof *og);
    pp_gnn_graph *gs = calloc(NS, sizeof *gs);
    make_dataset(og, gs, NS, 21);
    int tr[NT], va[NS - NT];
    for (int i = 0; i < NT; i++) {
        tr[i] = i;
        if (i % 5 == 0) gs[i].y[0] += 3.0f;
    }
    for (int i = 0; i < NS - NT; i++) va[i] = NT + i;
    double abs_err[2];
    for (int h = 0; h < 2; h++) {
        pp_gnn_params p = pp_gnn_default_params();
        p.layers = 2;
        p.hidden = 16;
        p.epochs = 120;
        p.batch = 8;
        p.lr = 3e-3;
        p.patience = 400;
        p.huber_delta = h ? 0.1 : 0.0;
        epoch_trace trace = {0};
        p.log = trace_log;
        p.log_user = &trace;
        pp_gnn *m;
        assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &m, NULL), PERFPRED_OK);
        pp_gnn_report rep;
        assert_int_equal(pp_gnn_train(m, gs, NS, tr, NT, va, NS - NT, &rep, NULL), PERFPRED_OK);
        assert_int_equal(trace.n, 120);
        assert_int_equal(rep.best_epoch, 1 + argmin(h ? trace.mae : trace.mse, trace.n));
        abs_err[h] = mean_abs_error(m, gs, NT, NS, 0);
        pp_gnn_free(m);
    }
    print_message("held-out mean |error|: squared error %.4f, Huber %.4f\n", abs_err[0],
                  abs_err[1]);
    assert_true(abs_err[1] < 0.8 * abs_err[0]);
    for (int i = 0; i < NS; i++) owned_free(&og[i]);
    free(og);
    free(gs);
}

static void train_should_reject_bad_splits(void **state)
{
    owned_graph og[3];
    pp_gnn_graph gs[3];
    make_dataset(og, gs, 3, 4);
    pp_gnn *m;
    assert_int_equal(pp_gnn_new(3, 1, 1, 2, NULL, &m, NULL), PERFPRED_OK);
    pp_err err = {0};
    int bad[] = {0, 3};
    assert_int_equal(pp_gnn_train(m, gs, 3, bad, 2, NULL, 0, NULL, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "training split"));
    int tr[] = {0, 1};
    gs[1].mask[0] = gs[1].mask[1] = gs[0].mask[0] = gs[0].mask[1] = 0;
    assert_int_equal(pp_gnn_train(m, gs, 3, tr, 2, NULL, 0, NULL, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "no training sample"));
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 0;
    assert_int_equal(pp_gnn_check_params(&p, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "layers"));
    p = pp_gnn_default_params();
    p.huber_delta = -0.1;
    assert_int_equal(pp_gnn_check_params(&p, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "huber_delta"));
    pp_gnn_free(m);
    for (int i = 0; i < 3; i++) owned_free(&og[i]);
}

/* --------------------------------------------------------------- save/load ---- */

typedef struct path_buf {
    char p[4096];
} path_buf;

static path_buf tmp_path(const char *suffix)
{
    path_buf b;
    snprintf(b.p, sizeof b.p, "%s/test_gnn_%ld%s", PP_BINARY_DIR, (long)getpid(), suffix);
    return b;
}

static void save_load_should_round_trip_bit_identical(void **state)
{
    enum { NS = 12 };
    owned_graph og[NS];
    pp_gnn_graph gs[NS];
    make_dataset(og, gs, NS, 6);
    int tr[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, va[3] = {9, 10, 11};
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 2;
    p.hidden = 7;
    p.epochs = 3;
    p.seed = 123456789012345ULL;
    p.huber_delta = 0.125;
    pp_gnn *m, *l;
    assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &m, NULL), PERFPRED_OK);
    assert_int_equal(pp_gnn_train(m, gs, NS, tr, 9, va, 3, NULL, NULL), PERFPRED_OK);
    path_buf wpb = tmp_path(".bin"), mpb = tmp_path(".json");
    const char *wp = wpb.p, *mp = mpb.p;
    pp_gnn_provenance prov = {"synthetic test graphs", "samples 9..11 held out",
                              {"latency", "energy", NULL}};
    pp_err err = {0};
    assert_int_equal(pp_gnn_save(m, wp, mp, &prov, &err), PERFPRED_OK);
    assert_int_equal(pp_gnn_load(wp, mp, &l, &err), PERFPRED_OK);
    assert_int_equal(l->n_params, m->n_params);
    assert_memory_equal(l->w, m->w, m->n_params * sizeof(float));
    assert_memory_equal(l->x_mean, m->x_mean, 3 * sizeof(float));
    assert_memory_equal(l->x_std, m->x_std, 3 * sizeof(float));
    assert_memory_equal(l->e_std, m->e_std, sizeof(float));
    assert_memory_equal(l->u_mean, m->u_mean, sizeof(float));
    assert_memory_equal(l->y_std, m->y_std, 2 * sizeof(float));
    assert_true(l->params.seed == p.seed && l->params.epochs == 3 && l->params.lr == p.lr);
    assert_true(l->params.huber_delta == 0.125);
    assert_true(l->trained);
    assert_true(l->report.val_mse == m->report.val_mse);
    assert_true(l->report.val_mae[0] == m->report.val_mae[0] && m->report.val_mae[0] > 0);
    assert_int_equal(l->report.best_epoch, m->report.best_epoch);
    for (int b = 0; b < NS; b++) {
        double o1[2], o2[2];
        assert_int_equal(pp_gnn_forward(m, &gs[b], o1, NULL), PERFPRED_OK);
        assert_int_equal(pp_gnn_forward(l, &gs[b], o2, NULL), PERFPRED_OK);
        assert_memory_equal(o1, o2, sizeof o1);
    }
    /* the manifest names the data and the split */
    uint8_t *mb;
    size_t ml;
    assert_int_equal(pp_read_file(mp, &mb, &ml, NULL), PERFPRED_OK);
    mb[ml - 1] = 0;
    assert_non_null(strstr((char *)mb, "synthetic test graphs"));
    assert_non_null(strstr((char *)mb, "\"best_epoch\""));
    /* a manifest written before the Huber option (no huber_delta) loads as squared error */
    cJSON *root = cJSON_Parse((char *)mb);
    assert_non_null(root);
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(root, "training"), "huber_delta");
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(root, "report"), "val_mae");
    char *old = cJSON_Print(root);
    pp_test_write_bytes(mp, old, strlen(old));
    free(old);
    cJSON_Delete(root);
    free(mb);
    pp_gnn_free(l);
    assert_int_equal(pp_gnn_load(wp, mp, &l, &err), PERFPRED_OK);
    assert_true(l->params.huber_delta == 0.0 && l->params.seed == p.seed);
    assert_true(l->report.val_mae[0] == -1.0 && l->report.val_mse == m->report.val_mse);
    pp_gnn_free(l);
    /* without a manifest: same weights, no report */
    assert_int_equal(pp_gnn_load(wp, NULL, &l, &err), PERFPRED_OK);
    assert_memory_equal(l->w, m->w, m->n_params * sizeof(float));
    assert_false(l->trained);
    pp_gnn_free(l);
    unlink(wp);
    unlink(mp);
    pp_gnn_free(m);
    for (int i = 0; i < NS; i++) owned_free(&og[i]);
}

/* A seed ensemble predicts the mean of its members, saves each member beside the first with its
 * own manifest, loads back to the same predictions, and refuses a member file that another fit
 * overwrote. */
static void ensemble_should_average_and_round_trip(void **state)
{
    (void)state;
    enum { NS = 12, K = 3 };
    owned_graph og[NS];
    pp_gnn_graph gs[NS];
    make_dataset(og, gs, NS, 7);
    int tr[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, va[3] = {9, 10, 11};
    pp_gnn *m[K], *ens = NULL, *l = NULL;
    for (int k = 0; k < K; k++) {
        pp_gnn_params p = pp_gnn_default_params();
        p.layers = 2;
        p.hidden = 6;
        p.epochs = 4;
        p.seed = 11 + (uint64_t)k;
        assert_int_equal(pp_gnn_new(3, 1, 1, 2, &p, &m[k], NULL), PERFPRED_OK);
        assert_int_equal(pp_gnn_train(m[k], gs, NS, tr, 9, va, 3, NULL, NULL), PERFPRED_OK);
    }
    /* the members' own predictions, before they are chained */
    double own[K][NS][2];
    for (int k = 0; k < K; k++)
        for (int b = 0; b < NS; b++)
            assert_int_equal(pp_gnn_forward(m[k], &gs[b], own[k][b], NULL), PERFPRED_OK);
    m[0]->next = m[1];
    m[1]->next = m[2];
    ens = m[0];
    assert_int_equal(pp_gnn_members(ens), K);
    assert_int_equal(pp_gnn_members(NULL), 0);
    int differ = 0;
    for (int b = 0; b < NS; b++) {
        double o[2], r[2], lo[2], hi[2];
        assert_int_equal(pp_gnn_forward(ens, &gs[b], o, NULL), PERFPRED_OK);
        assert_int_equal(pp_gnn_forward_range(ens, &gs[b], r, lo, hi, NULL), PERFPRED_OK);
        for (int t = 0; t < 2; t++) {
            double mean = (own[0][b][t] + own[1][b][t] + own[2][b][t]) / 3.0;
            assert_true(fabs(o[t] - mean) <= 1e-12 * (1.0 + fabs(mean)));
            assert_true(r[t] == o[t]);
            /* the range is the members' own smallest and largest prediction */
            assert_true(lo[t] == fmin(own[0][b][t], fmin(own[1][b][t], own[2][b][t])));
            assert_true(hi[t] == fmax(own[0][b][t], fmax(own[1][b][t], own[2][b][t])));
            differ |= own[0][b][t] != own[1][b][t];
        }
    }
    {   /* a single model's range is its prediction */
        double o[2], lo[2], hi[2];
        assert_int_equal(pp_gnn_forward_range(m[2], &gs[0], o, lo, hi, NULL), PERFPRED_OK);
        assert_true(lo[0] == o[0] && hi[0] == o[0] && lo[1] == o[1] && hi[1] == o[1]);
    }
    assert_true(differ); /* the seeds made different members */
    /* the gate: the widest spread over the samples it is set from, per target; a sample whose
     * members spread wider than that does not agree */
    double want[2] = {0, 0}, spread[NS][2];
    for (int b = 0; b < NS; b++)
        for (int t = 0; t < 2; t++) {
            double lo = fmin(own[0][b][t], fmin(own[1][b][t], own[2][b][t]));
            double hi = fmax(own[0][b][t], fmax(own[1][b][t], own[2][b][t]));
            spread[b][t] = hi - lo;
            if (b >= 9 && spread[b][t] > want[t]) want[t] = spread[b][t];
        }
    assert_int_equal(pp_gnn_set_spread_gate(ens, gs, va, 3, NULL), PERFPRED_OK);
    int gated = 0;
    for (int t = 0; t < 2; t++) {
        /* the widest spread, rounded up to single precision */
        assert_true(want[t] > 0 && ens->spread_gate[t] >= want[t] &&
                    ens->spread_gate[t] == (double)(float)ens->spread_gate[t] &&
                    (double)nextafterf((float)ens->spread_gate[t], 0) < want[t]);
        for (int b = 0; b < NS; b++) {
            double o[2], lo[2], hi[2];
            assert_int_equal(pp_gnn_forward_range(ens, &gs[b], o, lo, hi, NULL), PERFPRED_OK);
            int in = spread[b][t] <= ens->spread_gate[t];
            assert_int_equal(pp_gnn_agrees(ens, t, lo[t], hi[t]), in);
            assert_true(in || spread[b][t] > want[t]);
            gated += !in;
        }
    }
    assert_true(gated > 0); /* some training samples spread wider than the validation ones */
    assert_true(pp_gnn_agrees(m[2], 0, 0.0, 1e9)); /* no gate on a member */
    path_buf wpb = tmp_path("_ens.bin"), mpb = tmp_path("_ens.json");
    path_buf w2 = tmp_path("_ens.2.bin"), m2 = tmp_path("_ens.2.json");
    path_buf w3 = tmp_path("_ens.3.bin"), m3 = tmp_path("_ens.3.json");
    pp_err err = {0};
    /* members are listed in the first member's manifest: no manifest, no ensemble */
    assert_int_equal(pp_gnn_save(ens, wpb.p, NULL, NULL, &err), PERFPRED_ERR_INVALID_ARG);
    assert_int_equal(pp_gnn_save(ens, wpb.p, mpb.p, NULL, &err), PERFPRED_OK);
    assert_int_equal(access(w2.p, R_OK) | access(m2.p, R_OK) | access(w3.p, R_OK) |
                         access(m3.p, R_OK),
                     0);
    assert_int_equal(pp_gnn_load(wpb.p, mpb.p, &l, &err), PERFPRED_OK);
    assert_int_equal(pp_gnn_members(l), K);
    assert_memory_equal(l->spread_gate, ens->spread_gate, sizeof l->spread_gate);
    for (int b = 0; b < NS; b++) {
        double o1[2], o2[2];
        assert_int_equal(pp_gnn_forward(ens, &gs[b], o1, NULL), PERFPRED_OK);
        assert_int_equal(pp_gnn_forward(l, &gs[b], o2, NULL), PERFPRED_OK);
        assert_memory_equal(o1, o2, sizeof o1);
    }
    pp_gnn_free(l);
    /* a member's weights loaded alone are that member, with no gate; a gate in a manifest that
     * lists no ensemble is refused by name */
    assert_int_equal(pp_gnn_load(w3.p, m3.p, &l, &err), PERFPRED_OK);
    assert_int_equal(pp_gnn_members(l), 1);
    assert_true(l->spread_gate[0] == 0 && l->spread_gate[1] == 0);
    pp_gnn_free(l);
    {
        uint8_t *mb;
        size_t mlen;
        assert_int_equal(pp_read_file(m3.p, &mb, &mlen, NULL), PERFPRED_OK);
        cJSON *root = cJSON_ParseWithLength((const char *)mb, mlen);
        free(mb);
        assert_non_null(root);
        cJSON *a = cJSON_AddArrayToObject(root, "spread_gate");
        cJSON_AddItemToArray(a, cJSON_CreateNumber(0.1));
        cJSON_AddItemToArray(a, cJSON_CreateNumber(0.1));
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        pp_test_write_text(m3.p, text);
        free(text);
    }
    l = NULL;
    assert_int_equal(pp_gnn_load(w3.p, m3.p, &l, &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "spread_gate"));
    assert_int_equal(pp_gnn_load(w3.p, NULL, &l, &err), PERFPRED_OK);
    assert_int_equal(pp_gnn_members(l), 1);
    assert_memory_equal(l->w, m[2]->w, m[2]->n_params * sizeof(float));
    pp_gnn_free(l);
    /* member 2 overwritten by another model (with a matching manifest of its own): refused */
    m[0]->next = NULL;
    assert_int_equal(pp_gnn_save(m[0], w2.p, m2.p, NULL, &err), PERFPRED_OK);
    l = NULL;
    assert_int_equal(pp_gnn_load(wpb.p, mpb.p, &l, &err), PERFPRED_ERR_MODEL);
    assert_null(l);
    assert_non_null(strstr(err.msg, "_ens.2.bin"));
    /* and a missing member is an I/O error naming it */
    unlink(w2.p);
    assert_int_not_equal(pp_gnn_load(wpb.p, mpb.p, &l, &err), PERFPRED_OK);
    assert_non_null(strstr(err.msg, "_ens.2.bin"));
    for (path_buf *q = (path_buf[]){wpb, mpb, m2, w3, m3}, *e = q + 5; q < e; q++) unlink(q->p);
    m[0]->next = m[1];
    pp_gnn_free(ens); /* frees the chain */
    for (int i = 0; i < NS; i++) owned_free(&og[i]);
}

static uint64_t test_fnv1a64(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* A weights file of the largest dims (F=4096, L=8, H=1024: about 7 x 10^7 parameters) whose header
 * claims np parameters and whose length and checksum agree with that claim. */
static uint8_t *oversized_header_file(uint32_t np, size_t *len)
{
    const uint32_t F = 4096, Fe = 0, G = 0, T = 1, L = 8, H = 1024;
    *len = 48 + 4 * (2 * (size_t)(F + Fe + G + T) + np) + 8;
    uint8_t *b = calloc(1, *len);
    assert_non_null(b);
    memcpy(b, "PPGNNWTS", 8);
    const uint32_t hdr[10] = {1, 48, F, Fe, G, T, L, H, np, 0};
    for (int i = 0; i < 10; i++)
        for (int j = 0; j < 4; j++) b[8 + 4 * i + j] = (uint8_t)(hdr[i] >> (8 * j));
    for (size_t i = 48; i + 8 < *len; i += 4) b[i + 2] = 0x80, b[i + 3] = 0x3f; /* 1.0f */
    uint64_t h = test_fnv1a64(b, *len - 8);
    for (int j = 0; j < 8; j++) b[*len - 8 + j] = (uint8_t)(h >> (8 * j));
    return b;
}

/* The loader refused a header whose parameter count disagrees with its dims only after it had
 * allocated the dims' four parameter arrays (1.1 GB here, from a 33 KB file), then read the freed
 * model for its message (a use-after-free under ASan). Run in a child under a 256 MB address-space
 * limit beyond what it uses now, so that an allocation sized by the header fails the test. */
static void load_should_check_header_against_dims_before_allocating(void **state)
{
    size_t len;
    uint8_t *b = oversized_header_file(7, &len);
    path_buf wpb = tmp_path(".bin");
    pp_test_write_bytes(wpb.p, b, len);
    free(b);
    size_t implied = pp_gnn_param_count(4096, 0, 0, 1, 8, 1024);
    assert_true(implied > 50000000u); /* 4 arrays of floats: over 800 MB */
    char want[128];
    snprintf(want, sizeof want, "7 parameters, the dims imply %zu", implied);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        pp_test_limit_address_space(256u << 20);
        pp_gnn *l = NULL;
        pp_err err = {0};
        perfpred_status st = pp_gnn_load(wpb.p, NULL, &l, &err);
        _exit(st == PERFPRED_ERR_MODEL && !l && strstr(err.msg, want) ? 0 : 1);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    /* and in this process, for the sanitizers to see the error path */
    pp_gnn *l = NULL;
    pp_err err = {0};
    assert_int_equal(pp_gnn_load(wpb.p, NULL, &l, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, want));
    assert_null(l);
    unlink(wpb.p);
}

static void load_should_reject_corrupt_files(void **state)
{
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 1;
    p.hidden = 4;
    pp_gnn *m, *l = NULL;
    assert_int_equal(pp_gnn_new(2, 0, 0, 1, &p, &m, NULL), PERFPRED_OK);
    path_buf wpb = tmp_path(".bin"), mpb = tmp_path(".json"), wp2b = tmp_path(".other.bin");
    const char *wp = wpb.p, *mp = mpb.p, *wp2c = wp2b.p;
    pp_err err = {0};
    assert_int_equal(pp_gnn_save(m, wp, mp, NULL, &err), PERFPRED_OK);
    uint8_t *b;
    size_t n;
    assert_int_equal(pp_read_file(wp, &b, &n, NULL), PERFPRED_OK);

    b[60] ^= 0x10; /* a weight bit */
    pp_test_write_bytes(wp, b, n);
    assert_int_equal(pp_gnn_load(wp, NULL, &l, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "checksum"));
    assert_null(l);
    b[60] ^= 0x10;
    pp_test_write_bytes(wp, b, n - 4); /* truncated */
    assert_int_equal(pp_gnn_load(wp, NULL, &l, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "bytes"));
    b[0] = 'X';
    pp_test_write_bytes(wp, b, n);
    assert_int_equal(pp_gnn_load(wp, NULL, &l, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "not a perfpred GNN"));
    b[0] = 'P';

    /* the manifest belongs to other weights */
    m->w[0] += 1.0f;
    assert_int_equal(pp_gnn_save(m, wp2c, NULL, NULL, &err), PERFPRED_OK);
    pp_test_write_bytes(wp, b, n);
    assert_int_equal(pp_gnn_load(wp, mp, &l, &err), PERFPRED_OK);
    pp_gnn_free(l);
    l = NULL;
    assert_int_equal(pp_gnn_load(wp2c, mp, &l, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "describes weights"));

    /* an unknown key in the manifest */
    uint8_t *mb;
    size_t ml;
    assert_int_equal(pp_read_file(mp, &mb, &ml, NULL), PERFPRED_OK);
    char *text = malloc(ml + 32);
    memcpy(text, "{\"surprise\": 1,", 15);
    memcpy(text + 15, mb + 1, ml - 1);
    pp_test_write_bytes(mp, text, ml + 14);
    assert_int_equal(pp_gnn_load(wp, mp, &l, &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "surprise"));
    free(text);
    free(mb);
    free(b);
    unlink(wp);
    unlink(wp2c);
    unlink(mp);
    pp_gnn_free(m);
}

/* -------------------------------------------------------------- samples ---- */

static void set_feat(pp_graph *g, int node, pp_op_kind kind, double flops, int folded)
{
    pp_node_feat *f = &g->nodes[node].feat;
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->flops = flops;
    f->out_bytes = 4 * flops;
    f->folded = folded;
}

static void sample_from_graph_should_follow_producers(void **state)
{
    pp_graph *g = pp_graph_new("s.onnx");
    int64_t d8[] = {1, 8}, d16[] = {1, 16};
    int tx = pp_graph_tensor(g, "x");
    g->tensors[tx].flags |= PP_T_GRAPH_INPUT;
    const char *ia[] = {"x"}, *oa[] = {"t1"};
    const char *ib[] = {"t1"}, *ob[] = {"t2"};
    const char *ic[] = {"t1"}, *oc[] = {"s"};
    const char *id[] = {"t1", "t2"}, *od[] = {"t3"};
    const char *ie[] = {"t3", "t3"}, *oe[] = {"t4"};
    pp_graph_add_node(g, "A", "Relu", "", ia, 1, oa, 1);
    pp_graph_add_node(g, "B", "Tile", "", ib, 1, ob, 1);
    pp_graph_add_node(g, "C", "Shape", "", ic, 1, oc, 1);
    pp_graph_add_node(g, "D", "Add", "", id, 2, od, 1);
    pp_graph_add_node(g, "E", "Mul", "", ie, 2, oe, 1);
    assert_int_equal(pp_graph_link(g, NULL), PERFPRED_OK);
    pp_tensor_set_shape(&g->tensors[pp_graph_find(g, "x")], PP_DT_FLOAT, 2, d8);
    pp_tensor_set_shape(&g->tensors[pp_graph_find(g, "t1")], PP_DT_FLOAT, 2, d8);
    pp_tensor_set_shape(&g->tensors[pp_graph_find(g, "t2")], PP_DT_FLOAT, 2, d16);
    pp_tensor_set_shape(&g->tensors[pp_graph_find(g, "t3")], PP_DT_FLOAT, 2, d8);
    pp_tensor_set_shape(&g->tensors[pp_graph_find(g, "t4")], PP_DT_FLOAT, 2, d8);
    set_feat(g, 0, PP_OPK_ELEMWISE, 8, 0);
    set_feat(g, 1, PP_OPK_DATAMOVE, 16, 0);
    set_feat(g, 2, PP_OPK_SHAPE, 0, 1);
    set_feat(g, 3, PP_OPK_ELEMWISE, 32, 0);
    set_feat(g, 4, PP_OPK_ELEMWISE, 64, 0);
    double ms[5] = {0.5, 0.0, -7.0 /* folded: never read */, 2.0, 1e-3};
    double glob[2] = {3.0, -1.0};
    pp_gnn_graph s;
    pp_err err = {0};
    assert_int_equal(pp_gnn_sample_from_graph(g, ms, glob, 2, &s, &err), PERFPRED_OK);
    assert_int_equal(s.n_nodes, 4); /* A, B, D, E */
    assert_int_equal(s.n_feat, PP_GNN_GRAPH_NODE_FEAT);
    assert_int_equal(s.n_edges, 4);
    int want_rp[] = {0, 0, 1, 3, 4}, want_ci[] = {0, 0, 1, 2};
    double want_bytes[] = {32, 32, 64, 32};
    for (int i = 0; i <= 4; i++) assert_int_equal(s.row_ptr[i], want_rp[i]);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(s.col_idx[k], want_ci[k]);
        assert_rel_close(s.edge_feat[k], log2(1.0 + want_bytes[k]), 1e-6);
    }
    int node_of[] = {0, 1, 3, 4};
    pp_op_kind kind_of[] = {PP_OPK_ELEMWISE, PP_OPK_DATAMOVE, PP_OPK_ELEMWISE, PP_OPK_ELEMWISE};
    for (int i = 0; i < 4; i++) {
        float fv[PP_FEATVEC_LEN];
        pp_feat_vector(&g->nodes[node_of[i]].feat, fv);
        const float *xi = s.x + (size_t)i * s.n_feat;
        assert_memory_equal(xi, fv, sizeof fv);
        for (int k = 0; k < PP_OPK__COUNT; k++)
            assert_true(xi[PP_FEATVEC_LEN + k] == (k == (int)kind_of[i] ? 1.0f : 0.0f));
        assert_rel_close(xi[PP_FEATVEC_LEN + PP_OPK__COUNT], log(1.0 + 1000.0 * ms[node_of[i]]),
                         1e-6);
    }
    assert_true(s.globals[0] == 3.0f && s.globals[1] == -1.0f);
    assert_false(s.mask[0] || s.mask[1] || s.mask[2]);
    assert_int_equal(pp_gnn_graph_check(&s, "s", NULL), PERFPRED_OK);
    pp_gnn_graph_clear(&s);
    assert_null(s.mem);

    ms[3] = -1.0;
    assert_int_equal(pp_gnn_sample_from_graph(g, ms, glob, 2, &s, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "'D'"));
    assert_non_null(strstr(err.msg, "s.onnx"));
    pp_graph_free(g);
}

static void graph_check_should_reject_bad_csr(void **state)
{
    float x[3] = {0, 1, 2}, ef[2] = {1, 1};
    int rp[4] = {0, 1, 1, 2}, ci[2] = {0, 1};
    pp_gnn_graph s = {0};
    s.n_nodes = 3;
    s.n_feat = 1;
    s.n_edges = 2;
    s.n_edge_feat = 1;
    s.x = x;
    s.row_ptr = rp;
    s.col_idx = ci;
    s.edge_feat = ef;
    pp_err err = {0};
    assert_int_equal(pp_gnn_graph_check(&s, "g", &err), PERFPRED_OK);
    ci[1] = 3;
    assert_int_equal(pp_gnn_graph_check(&s, "g", &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "edge 1"));
    ci[1] = 1;
    rp[1] = 2;
    rp[2] = 1;
    assert_int_equal(pp_gnn_graph_check(&s, "g", &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "decreases"));
    rp[1] = 1;
    x[2] = NAN;
    assert_int_equal(pp_gnn_graph_check(&s, "g", &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "node 2"));
    x[2] = 2;
    pp_gnn *m;
    assert_int_equal(pp_gnn_new(2, 1, 0, 1, NULL, &m, NULL), PERFPRED_OK);
    double out[1];
    assert_int_equal(pp_gnn_forward(m, &s, out, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "widths"));
    pp_gnn_free(m);
}

/* Fe = 0 and G = 0: edges carry only the direction flag, the global node starts empty; a graph
 * without edges aggregates nothing. Outputs and gradients stay finite and training runs. */
static void network_should_run_without_edge_or_global_features(void **state)
{
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 2;
    p.hidden = 4;
    p.epochs = 3;
    pp_gnn *m;
    assert_int_equal(pp_gnn_new(2, 0, 0, 1, &p, &m, NULL), PERFPRED_OK);
    float x1[2] = {0.5f, -1.0f}, x3[6] = {1, 2, 3, 4, 5, 6};
    int rp1[2] = {0, 0}, rp3[4] = {0, 0, 1, 2}, ci3[2] = {0, 1};
    pp_gnn_graph gs[2];
    memset(gs, 0, sizeof gs);
    gs[0].n_nodes = 1;
    gs[0].n_feat = 2;
    gs[0].x = x1;
    gs[0].row_ptr = rp1;
    gs[1].n_nodes = 3;
    gs[1].n_feat = 2;
    gs[1].n_edges = 2;
    gs[1].x = x3;
    gs[1].row_ptr = rp3;
    gs[1].col_idx = ci3;
    gs[0].y[0] = 1.0f;
    gs[1].y[0] = -1.0f;
    gs[0].mask[0] = gs[1].mask[0] = 1;
    double out[1], loss;
    for (int b = 0; b < 2; b++) {
        assert_int_equal(pp_gnn_forward(m, &gs[b], out, NULL), PERFPRED_OK);
        assert_true(isfinite(out[0]));
    }
    assert_int_equal(pp_gnn_loss_grad(m, gs, NULL, 2, &loss, NULL), PERFPRED_OK);
    assert_true(isfinite(loss) && loss > 0.0);
    double gnorm = 0.0;
    for (size_t i = 0; i < m->n_params; i++) {
        assert_true(isfinite(m->grad[i]));
        gnorm += (double)m->grad[i] * m->grad[i];
    }
    assert_true(gnorm > 0.0);
    int tr[2] = {0, 1};
    assert_int_equal(pp_gnn_train(m, gs, 2, tr, 2, NULL, 0, NULL, NULL), PERFPRED_OK);
    pp_gnn_free(m);
}

static void rng_should_be_seeded_and_unbiased_in_range(void **state)
{
    pp_gnn_rng a, b;
    pp_gnn_rng_seed(&a, 99);
    pp_gnn_rng_seed(&b, 99);
    for (int i = 0; i < 100; i++) assert_true(pp_gnn_rng_next(&a) == pp_gnn_rng_next(&b));
    pp_gnn_rng_seed(&b, 100);
    assert_true(pp_gnn_rng_next(&a) != pp_gnn_rng_next(&b));
    int counts[5] = {0};
    for (int i = 0; i < 50000; i++) counts[pp_gnn_rng_below(&a, 5)]++;
    for (int k = 0; k < 5; k++) assert_true(counts[k] > 9500 && counts[k] < 10500);
    for (int i = 0; i < 1000; i++) {
        double u = pp_gnn_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(op_linear_should_match_finite_differences),
        cmocka_unit_test(op_linear_should_handle_empty_input_width),
        cmocka_unit_test(op_relu_should_match_finite_differences),
        cmocka_unit_test(op_aggregate_should_match_finite_differences),
        cmocka_unit_test(op_pool_should_match_finite_differences),
        cmocka_unit_test(op_broadcast_and_mse_should_match_finite_differences),
        cmocka_unit_test(op_huber_should_match_its_definition_and_finite_differences),
        cmocka_unit_test(network_gradient_should_match_finite_differences),
        cmocka_unit_test(network_should_match_pytorch_reference),
        cmocka_unit_test(train_should_be_bit_reproducible),
        cmocka_unit_test(train_should_fit_a_simple_target),
        cmocka_unit_test(train_should_generalize_with_early_stopping),
        cmocka_unit_test(train_with_huber_should_resist_outliers_and_stop_on_mae),
        cmocka_unit_test(train_should_reject_bad_splits),
        cmocka_unit_test(save_load_should_round_trip_bit_identical),
        cmocka_unit_test(ensemble_should_average_and_round_trip),
        cmocka_unit_test(load_should_reject_corrupt_files),
        cmocka_unit_test(load_should_check_header_against_dims_before_allocating),
        cmocka_unit_test(sample_from_graph_should_follow_producers),
        cmocka_unit_test(graph_check_should_reject_bad_csr),
        cmocka_unit_test(network_should_run_without_edge_or_global_features),
        cmocka_unit_test(rng_should_be_seeded_and_unbiased_in_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
