/* graph_gnn/gnn_infer.c: the forward-only linear op that predictions use (pp_gnn_forward_fast):
 * weights transposed once per model so that a row of outputs is a sum of weight rows, four input
 * rows at a time, with accumulators kept in registers (AVX-512 / AVX2 kernels, chosen on first use).
 * Matrices here are ~100-200 rows x ~100 x 32: too small for BLAS's packing to pay. Built with
 * -ffp-contract=off, so every clone rounds alike: the same bits on every x86-64 machine (and
 * within float rounding of the BLAS reference, tests/test_gnn_fast.c). */
#include "graph_gnn/graph_gnn.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* y[i][0..32) = b + sum_c x[i][c] wt[c][0..32), for rows [0, m): the portable loop, the
 * reference the vector kernels below match bit for bit (tests/test_gnn_fast.c). */
static void linear32_plain(int m, int k, const float *restrict x, int ldx,
                           const float *restrict wt, const float *restrict b, float *restrict y,
                           int ldy)
{
    for (int i = 0; i < m; i++) {
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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define PP_VEC_KERNELS 1
/* Register-blocked kernels: R rows x 32 outputs of accumulators stay in registers (V vectors of
 * W floats a row) while c runs, each one still b + x0 w0 + x1 w1 + ... in that order with a
 * separate multiply and add (-ffp-contract=off): the same bits as linear32_plain. The
 * accumulators are arrays indexed by constants in fully unrolled loops, which GCC keeps in
 * registers (at -O2 too, unlike the plain loop's a[32], which it leaves in memory). */
#define LIN_BLOCK(VT, W, R, i0)                                                                   \
    do {                                                                                          \
        enum { V = 32 / (W) };                                                                    \
        VT acc[R][V];                                                                             \
        _Pragma("GCC unroll 8") for (int r = 0; r < (R); r++)                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)                                   \
        {                                                                                         \
            if (b) memcpy(&acc[r][v], b + v * (W), sizeof(VT));                                   \
            else memset(&acc[r][v], 0, sizeof(VT));                                               \
        }                                                                                         \
        const float *xr = x + (size_t)(i0) * ldx;                                                 \
        for (int c = 0; c < k; c++) {                                                             \
            const float *w = wt + (size_t)c * 32;                                                 \
            VT wv[V];                                                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)                                   \
                memcpy(&wv[v], w + v * (W), sizeof(VT));                                          \
            _Pragma("GCC unroll 8") for (int r = 0; r < (R); r++)                                 \
            {                                                                                     \
                float xs = xr[(size_t)r * ldx + c]; /* broadcast by the vector op */            \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) acc[r][v] += wv[v] * xs;     \
            }                                                                                     \
        }                                                                                         \
        _Pragma("GCC unroll 8") for (int r = 0; r < (R); r++)                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)                                   \
                memcpy(y + (size_t)((i0) + r) * ldy + v * (W), &acc[r][v], sizeof(VT));           \
    } while (0)

typedef float v16f __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

/* 32 zmm registers: 8 rows x 2 vectors of accumulators, 2 of weights, the broadcasts. */
__attribute__((target("avx512f"))) static void linear32_avx512(int m, int k,
                                                                 const float *restrict x, int ldx,
                                                                 const float *restrict wt,
                                                                 const float *restrict b,
                                                                 float *restrict y, int ldy)
{
    int i = 0;
    for (; i + 8 <= m; i += 8) LIN_BLOCK(v16f, 16, 8, i);
    for (; i + 2 <= m; i += 2) LIN_BLOCK(v16f, 16, 2, i);
    for (; i < m; i++) LIN_BLOCK(v16f, 16, 1, i);
}

/* 16 ymm registers: 3 rows x 4 vectors of accumulators, the weights read from memory. */
__attribute__((target("avx2"))) static void linear32_avx2(int m, int k, const float *restrict x,
                                                          int ldx, const float *restrict wt,
                                                          const float *restrict b,
                                                          float *restrict y, int ldy)
{
    int i = 0;
    for (; i + 3 <= m; i += 3) LIN_BLOCK(v8f, 8, 3, i);
    for (; i < m; i++) LIN_BLOCK(v8f, 8, 1, i);
}

typedef void linear32_fn(int, int, const float *restrict, int, const float *restrict,
                         const float *restrict, float *restrict, int);

static linear32_fn *linear32_pick(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return linear32_avx512;
    if (__builtin_cpu_supports("avx2")) return linear32_avx2;
    return linear32_plain;
}
#endif

static atomic_int force_plain;
void pp_gnn_infer_plain(int on) { atomic_store(&force_plain, on != 0); }

static void linear32(int m, int k, const float *x, int ldx, const float *wt, const float *b,
                     float *y, int ldy)
{
#ifdef PP_VEC_KERNELS
    /* the pick is the same for every caller: a racing first store writes the same pointer */
    static linear32_fn *_Atomic fn;
    linear32_fn *f = fn;
    if (!f) fn = f = linear32_pick();
    if (!atomic_load_explicit(&force_plain, memory_order_relaxed)) {
        f(m, k, x, ldx, wt, b, y, ldy);
        return;
    }
#endif
    linear32_plain(m, k, x, ldx, wt, b, y, ldy);
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
