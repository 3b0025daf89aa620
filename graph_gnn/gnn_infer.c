/* graph_gnn/gnn_infer.c: the forward-only linear op that predictions use (pp_gnn_forward_fast):
 * weights transposed once per model so that a row of outputs is a sum of weight rows, four input
 * rows at a time, in plain loops the compiler vectorizes (AVX-512 / AVX2 clones, chosen at load).
 * Matrices here are ~100-200 rows x ~100 x 32: too small for BLAS's packing to pay. Built with
 * -ffp-contract=off, so every clone rounds alike: the same bits on every x86-64 machine (and
 * within float rounding of the BLAS reference, tests/test_gnn_fast.c). */
#include "graph_gnn/graph_gnn.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define PP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PP_CLONES
#endif

/* y[i][0..32) = b + sum_c x[i][c] wt[c][0..32), for rows [0, m) */
PP_CLONES static void linear32(int m, int k, const float *restrict x, int ldx,
                               const float *restrict wt, const float *restrict b,
                               float *restrict y, int ldy)
{
    int i = 0;
    for (; i + 4 <= m; i += 4) {
        float a0[32], a1[32], a2[32], a3[32];
        for (int j = 0; j < 32; j++) a0[j] = a1[j] = a2[j] = a3[j] = b ? b[j] : 0.0f;
        const float *x0 = x + (size_t)i * ldx, *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
        for (int c = 0; c < k; c++) {
            const float *w = wt + (size_t)c * 32;
            float v0 = x0[c], v1 = x1[c], v2 = x2[c], v3 = x3[c];
            for (int j = 0; j < 32; j++) {
                a0[j] += v0 * w[j];
                a1[j] += v1 * w[j];
                a2[j] += v2 * w[j];
                a3[j] += v3 * w[j];
            }
        }
        memcpy(y + (size_t)i * ldy, a0, sizeof a0);
        memcpy(y + (size_t)(i + 1) * ldy, a1, sizeof a1);
        memcpy(y + (size_t)(i + 2) * ldy, a2, sizeof a2);
        memcpy(y + (size_t)(i + 3) * ldy, a3, sizeof a3);
    }
    for (; i < m; i++) {
        float a[32];
        for (int j = 0; j < 32; j++) a[j] = b ? b[j] : 0.0f;
        const float *xi = x + (size_t)i * ldx;
        for (int c = 0; c < k; c++) {
            const float *w = wt + (size_t)c * 32;
            float v = xi[c];
            for (int j = 0; j < 32; j++) a[j] += v * w[j];
        }
        memcpy(y + (size_t)i * ldy, a, sizeof a);
    }
}

void pp_gnn_op_linear_t(int m, int k, int n, const float *x, int ldx, const float *wt,
                        const float *b, float *y, int ldy)
{
    if (m <= 0 || n <= 0) return;
    if (n == 32) {
        linear32(m, k, x, ldx, wt, b, y, ldy);
        return;
    }
    for (int i = 0; i < m; i++) {
        float *yi = y + (size_t)i * ldy;
        const float *xi = x + (size_t)i * ldx;
        for (int j = 0; j < n; j++) yi[j] = b ? b[j] : 0.0f;
        for (int c = 0; c < k; c++) {
            const float *w = wt + (size_t)c * n;
            float v = xi[c];
            for (int j = 0; j < n; j++) yi[j] += v * w[j];
        }
    }
}

/* [rows][cols] at w + off -> [cols][rows] at t + off */
static void transpose_block(const float *w, float *t, size_t off, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) t[off + (size_t)c * rows + r] = w[off + (size_t)r * cols + c];
}

float *pp_gnn_weights_t(const pp_gnn *m)
{
    float *t = malloc((m->n_params ? m->n_params : 1) * sizeof *t);
    if (!t) return NULL;
    memcpy(t, m->w, m->n_params * sizeof *t); /* biases and anything else as they are */
    int H = m->params.hidden, Fe = m->n_edge_feat;
    for (int l = 0; l < m->params.layers; l++) {
        const pp_gnn_layer_off *lo = &m->layer[l];
        int kc = lo->din + 2 * H + lo->dg;
        transpose_block(m->w, t, lo->we, H, lo->din + Fe + 1);
        transpose_block(m->w, t, lo->w, H, kc);
        transpose_block(m->w, t, lo->wg, H, lo->dg + 2 * H);
    }
    for (int k = 0; k < m->n_targets; k++) {
        transpose_block(m->w, t, m->head[k].w1, H, 3 * H);
        transpose_block(m->w, t, m->head[k].w2, 1, H);
    }
    return t;
}
