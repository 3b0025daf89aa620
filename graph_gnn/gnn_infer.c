/* graph_gnn/gnn_infer.c: the forward-only linear op that predictions use (pp_gnn_forward_fast):
 * weights transposed once per model so that a row of outputs is a sum of weight rows, four input
 * rows at a time, with accumulators kept in registers (AVX-512 / AVX2 kernels, picked on first
 * use).
 * Matrices here are ~100-200 rows x ~100 x 32: too small for BLAS's packing to pay. The kernels
 * fuse each multiply-add (half the operations): the same bits on every x86-64 with AVX2+FMA or
 * AVX-512. The portable loops, built with -ffp-contract=off, round each product and each sum: the
 * reference, and the path elsewhere. Both agree with the BLAS forward within float rounding
 * (tests/test_gnn_fast.c). */
#include "graph_gnn/graph_gnn.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The start of row i's sums: row y0_map[i] of y0 (a sum over earlier columns that an earlier call
 * left there) when y0 is given, else b, else zeros. */
typedef struct lin_init {
    const float *b;
    const float *y0;
    const int *y0_map;
    int ldy0;
} lin_init;

/* y[i][0..32) = start + sum_c x[i][c] wt[c][0..32), for rows [0, m): the portable loop, a
 * separate multiply and add a step, the reference the vector kernels below are checked against
 * (tests/test_gnn_fast.c). */
static void linear32_plain(int m, const int *rows, int k, const float *restrict x, int ldx,
                           const float *restrict wt, const lin_init *in, float *restrict y,
                           int ldy)
{
    const float *b = in->b;
    for (int t = 0; t < m; t++) {
        size_t i = rows ? (size_t)rows[t] : (size_t)t;
        float a[32];
        if (in->y0)
            memcpy(a, in->y0 + (size_t)in->y0_map[i] * in->ldy0, sizeof a);
        else
            for (int j = 0; j < 32; j++) a[j] = b ? b[j] : 0.0f;
        const float *xi = x + i * ldx;
        for (int c = 0; c < k; c++) {
            const float *w = wt + (size_t)c * 32;
            float v = xi[c];
            for (int j = 0; j < 32; j++) a[j] += v * w[j];
        }
        memcpy(y + i * ldy, a, sizeof a);
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define PP_VEC_KERNELS 1
#include <immintrin.h>

/* Register-blocked kernels: R rows x 32 outputs of accumulators stay in registers (V vectors of
 * W floats a row) while c runs, each one b + x0 w0 + x1 w1 + ... in that order, every step one
 * fused multiply-add (FMADD(w, x, acc): one rounding where linear32_plain rounds the product and
 * the sum). A row's bits depend on its inputs alone, not on its block, its width (AVX-512 and AVX2
 * give the same bits) or the rows beside it; they differ from linear32_plain's by float rounding
 * (tests/test_gnn_fast.c states the bound). The accumulators are arrays indexed by constants in
 * fully unrolled loops, which GCC keeps in registers. */
#define ROW(i) ((size_t)(rows ? rows[i] : (i)))
#define LIN_BLOCK(R, i0, VT, W, LD, ST, SET1, ZERO, FMADD)                                      \
    do {                                                                                          \
        enum { V = 32 / (W) };                                                                    \
        VT acc[R][V];                                                                             \
        const float *xp[R];                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < (R); r++)                                     \
        {                                                                                         \
            xp[r] = x + ROW((i0) + r) * ldx;                                                      \
            const float *a0 = in->y0 ? in->y0 + (size_t)in->y0_map[ROW((i0) + r)] * in->ldy0    \
                                     : in->b;                                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)                                   \
                acc[r][v] = a0 ? LD(a0 + v * (W)) : ZERO();                                       \
        }                                                                                         \
        for (int c = 0; c < k; c++) {                                                             \
            const float *w = wt + (size_t)c * 32;                                                 \
            VT wv[V];                                                                             \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) wv[v] = LD(w + v * (W));         \
            _Pragma("GCC unroll 8") for (int r = 0; r < (R); r++)                                 \
            {                                                                                     \
                VT xs = SET1(xp[r][c]);                                                           \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)                               \
                    acc[r][v] = FMADD(wv[v], xs, acc[r][v]);                                      \
            }                                                                                     \
        }                                                                                         \
        _Pragma("GCC unroll 8") for (int r = 0; r < (R); r++)                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++)                                   \
                ST(y + ROW((i0) + r) * ldy + v * (W), acc[r][v]);                                 \
    } while (0)

#define EXPAND(m, ...) m(__VA_ARGS__)
#define AVX512_LIN __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, \
                   _mm512_setzero_ps, _mm512_fmadd_ps
#define AVX2_LIN __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, \
                 _mm256_setzero_ps, _mm256_fmadd_ps

/* 32 zmm registers: 8 rows x 2 vectors of accumulators, 2 of weights, the broadcasts. */
__attribute__((target("avx512f"))) static void linear32_avx512(int m, const int *rows, int k,
                                                                 const float *restrict x, int ldx,
                                                                 const float *restrict wt,
                                                                 const lin_init *in,
                                                                 float *restrict y, int ldy)
{
    int i = 0;
    for (; i + 8 <= m; i += 8) EXPAND(LIN_BLOCK, 8, i, AVX512_LIN);
    for (; i + 2 <= m; i += 2) EXPAND(LIN_BLOCK, 2, i, AVX512_LIN);
    for (; i < m; i++) EXPAND(LIN_BLOCK, 1, i, AVX512_LIN);
}

/* 16 ymm registers: 3 rows x 4 vectors of accumulators, the weights read from memory. */
__attribute__((target("avx2,fma"))) static void linear32_avx2(int m, const int *rows, int k,
                                                              const float *restrict x, int ldx,
                                                              const float *restrict wt,
                                                              const lin_init *in,
                                                              float *restrict y, int ldy)
{
    int i = 0;
    for (; i + 3 <= m; i += 3) EXPAND(LIN_BLOCK, 3, i, AVX2_LIN);
    for (; i < m; i++) EXPAND(LIN_BLOCK, 1, i, AVX2_LIN);
}

typedef void linear32_fn(int, const int *, int, const float *restrict, int,
                         const float *restrict, const lin_init *, float *restrict, int);

/* AVX-512F has the fused multiply-add; AVX2 without FMA (a few CPUs) takes the loops */
static linear32_fn *linear32_pick(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return linear32_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return linear32_avx2;
    return linear32_plain;
}
#endif

static atomic_int force_plain;
void pp_gnn_infer_plain(int on) { atomic_store(&force_plain, on != 0); }

static atomic_int no_classes;
void pp_gnn_infer_classes(int on) { atomic_store(&no_classes, on == 0); }
int pp_gnn_infer_has_classes(void)
{
    return !atomic_load_explicit(&no_classes, memory_order_relaxed);
}

#ifdef PP_VEC_KERNELS
/* the pick is the same for every caller: a racing first store writes the same pointer */
static linear32_fn *linear32_kernel(void)
{
    static linear32_fn *_Atomic fn;
    linear32_fn *f = fn;
    if (!f) fn = f = linear32_pick();
    return f;
}
#endif

int pp_gnn_infer_fused(void)
{
#ifdef PP_VEC_KERNELS
    return !pp_gnn_infer_is_plain() && linear32_kernel() != linear32_plain;
#else
    return 0;
#endif
}

static void linear32(int m, const int *rows, int k, const float *x, int ldx, const float *wt,
                     const lin_init *in, float *y, int ldy)
{
#ifdef PP_VEC_KERNELS
    if (!atomic_load_explicit(&force_plain, memory_order_relaxed)) {
        linear32_kernel()(m, rows, k, x, ldx, wt, in, y, ldy);
        return;
    }
#endif
    linear32_plain(m, rows, k, x, ldx, wt, in, y, ldy);
}

static void linear_rows(int m, const int *rows, int k, int n, const float *x, int ldx,
                        const float *wt, const lin_init *in, float *y, int ldy)
{
    if (m <= 0 || n <= 0) return;
    if (n == 32) {
        linear32(m, rows, k, x, ldx, wt, in, y, ldy);
        return;
    }
    const float *b = in->b;
    for (int t = 0; t < m; t++) {
        size_t i = rows ? (size_t)rows[t] : (size_t)t;
        float *yi = y + i * ldy;
        const float *xi = x + i * ldx;
        if (in->y0)
            memcpy(yi, in->y0 + (size_t)in->y0_map[i] * in->ldy0, (size_t)n * sizeof *yi);
        else
            for (int j = 0; j < n; j++) yi[j] = b ? b[j] : 0.0f;
        for (int c = 0; c < k; c++) {
            const float *w = wt + (size_t)c * n;
            float v = xi[c];
            for (int j = 0; j < n; j++) yi[j] += v * w[j];
        }
    }
}

void pp_gnn_op_linear_rows_t(int m, const int *rows, int k, int n, const float *x, int ldx,
                             const float *wt, const float *b, float *y, int ldy)
{
    lin_init in = {.b = b};
    linear_rows(m, rows, k, n, x, ldx, wt, &in, y, ldy);
}

void pp_gnn_op_linear_rows_from_t(int m, const int *rows, int k, int n, const float *x, int ldx,
                                  const float *wt, const float *y0, const int *y0_map, int ldy0,
                                  float *y, int ldy)
{
    lin_init in = {.y0 = y0, .y0_map = y0_map, .ldy0 = ldy0};
    linear_rows(m, rows, k, n, x, ldx, wt, &in, y, ldy);
}

void pp_gnn_op_linear_t(int m, int k, int n, const float *x, int ldx, const float *wt,
                        const float *b, float *y, int ldy)
{
    pp_gnn_op_linear_rows_t(m, NULL, k, n, x, ldx, wt, b, y, ldy);
}

int pp_gnn_infer_is_plain(void) { return atomic_load_explicit(&force_plain, memory_order_relaxed); }

/* ---- two linear ops over the same rows, zero inputs skipped ----
 * ya = ba + x wta and yb = bb + x wtb, 32 outputs each, summed over row i's nonzero columns only.
 * With finite weights a zero x[i][c] adds a zero product: the sum keeps its value, and its bits
 * unless it is a zero (an accumulator at -0 plus +0 gives +0). So the skipping sums take the
 * values of the fused kernels' sums step by step, and their bits wherever a sum is not zero; a row
 * that ends with a zero output, or skipped nothing, is left to (or has) the fused kernels' bits:
 * such a row is recomputed by them. ReLU'd rows (layers after the first) are ~50-75% zeros.
 * It pays with AVX2 (one row's 8 accumulators, 1.33x the 3-row kernel at 65% zeros on an Intel
 * Xeon guest forced to AVX2), not with AVX-512 on an Intel Xeon, whose 8-row kernel is bound by
 * its fused multiply-adds and which a row at a time (or 8-row blocks skipping the columns zero in
 * all 8) did not beat: there both ops take the fused kernel. AMD's Zen 4 runs a 512-bit
 * multiply-add as two halves on its 256-bit pipes, so one row's 4 zmm accumulators keep them as
 * busy as the 8-row kernel's 16: there the AVX-512 skipping kernel runs (NB201 cells on a Zen 4
 * guest: 71% of these columns zero, CLI time 1.5% less). */
static atomic_int sparse_mode = 1;
void pp_gnn_infer_sparse(int mode) { atomic_store(&sparse_mode, mode < 0 ? 0 : mode > 3 ? 3 : mode); }

#ifdef PP_VEC_KERNELS
#include <cpuid.h>

#define SPARSE_MAX_K 256

/* 1 where AVX-512 runs a 512-bit multiply-add as two 256-bit halves: AMD family 19h (Zen 4; the
 * family's Zen 3 parts have no AVX-512, and linear32_kernel picks AVX-512 only where it runs) */
static int avx512_halves(void)
{
    static _Atomic int halves = -1;
    int h = halves;
    if (h < 0) {
        unsigned a = 0, b, c, d, fam = 0;
        __builtin_cpu_init();
        if (__builtin_cpu_is("amd") && __get_cpuid(1, &a, &b, &c, &d)) {
            fam = (a >> 8) & 0xf;
            if (fam == 0xf) fam += (a >> 20) & 0xff;
        }
        halves = h = fam == 0x19;
    }
    return h;
}
typedef struct lin2 {
    const float *wta, *ba, *wtb, *bb;
    float *ya, *yb;
    int lda, ldb;
} lin2;

/* the fused kernels' bits for row rows[t] (or t) */
static void lin2_dense_row(linear32_fn *fn, int t, const int *rows, int k, const float *x, int ldx,
                           const lin2 *p)
{
    int i = rows ? rows[t] : t;
    lin_init ia = {.b = p->ba}, ib = {.b = p->bb};
    fn(1, &i, k, x, ldx, p->wta, &ia, p->ya, p->lda);
    fn(1, &i, k, x, ldx, p->wtb, &ib, p->yb, p->ldb);
}

/* one row's 2 x 32 sums over the columns idx[0..n): accumulators a[4] (ya's), b[4] (yb's) */
#define SP_STEP(VT, W, LD, SET1, FMADD, xr, c, a, b)                                            \
    do {                                                                                          \
        enum { V = 32 / (W) };                                                                    \
        VT xs_ = SET1((xr)[c]);                                                                   \
        const float *wa_ = p->wta + (size_t)(c) * 32, *wb_ = p->wtb + (size_t)(c) * 32;           \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                     \
            (a)[v] = FMADD(LD(wa_ + v * (W)), xs_, (a)[v]);                                       \
            (b)[v] = FMADD(LD(wb_ + v * (W)), xs_, (b)[v]);                                       \
        }                                                                                         \
    } while (0)

/* 16 ymm: one row at a time, 8 accumulators, walking the bits of each 8 columns' nonzero mask */
__attribute__((target("avx2,fma"))) static void linear2_sparse_avx2(int m, const int *rows, int k,
                                                                    const float *x, int ldx,
                                                                    const lin2 *p)
{
    for (int t = 0; t < m; t++) {
        int i = rows ? rows[t] : t, n = 0;
        const float *xr = x + (size_t)i * ldx;
        __m256 a[4], b[4];
        for (int v = 0; v < 4; v++) {
            a[v] = p->ba ? _mm256_loadu_ps(p->ba + 8 * v) : _mm256_setzero_ps();
            b[v] = p->bb ? _mm256_loadu_ps(p->bb + 8 * v) : _mm256_setzero_ps();
        }
        int c0 = 0;
        for (; c0 + 8 <= k; c0 += 8) {
            /* not equal or unordered: NaN is kept */
            unsigned mk = (unsigned)_mm256_movemask_ps(
                _mm256_cmp_ps(_mm256_loadu_ps(xr + c0), _mm256_setzero_ps(), _CMP_NEQ_UQ));
            n += __builtin_popcount(mk);
            for (; mk; mk &= mk - 1)
                SP_STEP(__m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps, xr,
                        c0 + __builtin_ctz(mk), a, b);
        }
        for (int c = c0; c < k; c++)
            if (!(xr[c] == 0.0f)) {
                n++;
                SP_STEP(__m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps, xr, c, a, b);
            }
        __m256 zero = _mm256_setzero_ps();
        for (int v = 0; v < 4; v++) {
            _mm256_storeu_ps(p->ya + (size_t)i * p->lda + 8 * v, a[v]);
            _mm256_storeu_ps(p->yb + (size_t)i * p->ldb + 8 * v, b[v]);
            zero = _mm256_or_ps(zero, _mm256_or_ps(_mm256_cmp_ps(a[v], _mm256_setzero_ps(), _CMP_EQ_OQ),
                                                   _mm256_cmp_ps(b[v], _mm256_setzero_ps(), _CMP_EQ_OQ)));
        }
        if (_mm256_movemask_ps(zero) && n < k) lin2_dense_row(linear32_avx2, t, rows, k, x, ldx, p);
    }
}

/* 32 zmm: one row at a time, 4 accumulators (ya's and yb's 2 x 16 outputs), walking the bits of
 * each 64 columns' nonzero mask (one loop exit to mispredict a row of <= 64 columns). Where an
 * AVX-512 fused multiply-add takes both 256-bit pipes (AMD Zen 4), one row's 4 accumulators keep
 * them busy: the skipped columns are time saved. */
__attribute__((target("avx512f"))) static void linear2_sparse_avx512(int m, const int *rows,
                                                                      int k, const float *x,
                                                                      int ldx, const lin2 *p)
{
    for (int t = 0; t < m; t++) {
        int i = rows ? rows[t] : t, n = 0;
        const float *xr = x + (size_t)i * ldx;
        __m512 a0 = p->ba ? _mm512_loadu_ps(p->ba) : _mm512_setzero_ps();
        __m512 a1 = p->ba ? _mm512_loadu_ps(p->ba + 16) : _mm512_setzero_ps();
        __m512 b0 = p->bb ? _mm512_loadu_ps(p->bb) : _mm512_setzero_ps();
        __m512 b1 = p->bb ? _mm512_loadu_ps(p->bb + 16) : _mm512_setzero_ps();
        for (int c0 = 0; c0 < k; c0 += 64) {
            uint64_t mk = 0;
            for (int g = 0; g < 4 && c0 + 16 * g < k; g++) {
                int left = k - c0 - 16 * g;
                __mmask16 in = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
                /* not equal or unordered: NaN is kept; columns past k load as 0 */
                __mmask16 nz = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(in, xr + c0 + 16 * g),
                                                  _mm512_setzero_ps(), _CMP_NEQ_UQ);
                mk |= (uint64_t)nz << (16 * g);
            }
            n += __builtin_popcountll(mk);
            for (; mk; mk &= mk - 1) {
                int c = c0 + __builtin_ctzll(mk);
                __m512 xs = _mm512_set1_ps(xr[c]);
                const float *wa = p->wta + (size_t)c * 32, *wb = p->wtb + (size_t)c * 32;
                a0 = _mm512_fmadd_ps(_mm512_loadu_ps(wa), xs, a0);
                a1 = _mm512_fmadd_ps(_mm512_loadu_ps(wa + 16), xs, a1);
                b0 = _mm512_fmadd_ps(_mm512_loadu_ps(wb), xs, b0);
                b1 = _mm512_fmadd_ps(_mm512_loadu_ps(wb + 16), xs, b1);
            }
        }
        float *ya = p->ya + (size_t)i * p->lda, *yb = p->yb + (size_t)i * p->ldb;
        _mm512_storeu_ps(ya, a0);
        _mm512_storeu_ps(ya + 16, a1);
        _mm512_storeu_ps(yb, b0);
        _mm512_storeu_ps(yb + 16, b1);
        __m512 z = _mm512_setzero_ps();
        __mmask16 zero = _mm512_cmp_ps_mask(a0, z, _CMP_EQ_OQ) | _mm512_cmp_ps_mask(a1, z, _CMP_EQ_OQ) |
                         _mm512_cmp_ps_mask(b0, z, _CMP_EQ_OQ) | _mm512_cmp_ps_mask(b1, z, _CMP_EQ_OQ);
        if (zero && n < k) lin2_dense_row(linear32_avx512, t, rows, k, x, ldx, p);
    }
}
#endif

void pp_gnn_op_linear2_rows_t(int m, const int *rows, int k, int n, const float *x, int ldx,
                              const float *wta, const float *ba, float *ya, int ldya,
                              const float *wtb, const float *bb, float *yb, int ldyb,
                              int finite_w)
{
#ifdef PP_VEC_KERNELS
    int mode = atomic_load_explicit(&sparse_mode, memory_order_relaxed);
    if (finite_w && n == 32 && k <= SPARSE_MAX_K && m > 0 && mode &&
        !atomic_load_explicit(&force_plain, memory_order_relaxed)) {
        linear32_fn *fn = linear32_kernel();
        lin2 p = {.wta = wta, .ba = ba, .wtb = wtb, .bb = bb, .ya = ya, .yb = yb,
                  .lda = ldya, .ldb = ldyb};
        /* mode 2 (tests): the AVX2 kernel on an AVX-512 machine too (the same bits) */
        if (fn == linear32_avx2 || (mode == 2 && fn == linear32_avx512)) {
            linear2_sparse_avx2(m, rows, k, x, ldx, &p);
            return;
        }
        /* mode 3 (tests): the AVX-512 one on every AVX-512 machine */
        if (fn == linear32_avx512 && (mode == 3 || avx512_halves())) {
            linear2_sparse_avx512(m, rows, k, x, ldx, &p);
            return;
        }
    }
#else
    (void)finite_w;
#endif
    pp_gnn_op_linear_rows_t(m, rows, k, n, x, ldx, wta, ba, ya, ldya);
    pp_gnn_op_linear_rows_t(m, rows, k, n, x, ldx, wtb, bb, yb, ldyb);
}

/* ---- aggregate, relu and pool of the forward-only pass, 32 channels wide ----
 * The same operations as gnn_ops.c's loops, lane by lane, so the same bits: max(a, b) is MAXPS,
 * which gives b unless a > b (NaN included), as `a > b ? a : b` does; relu is max(y, +0). */
#ifdef PP_VEC_KERNELS
/* VT: vector type, W: its floats; LD/ST unaligned load/store, ADD, MUL, MAX, SET1, ZERO */
#define AGG_KERNEL(VT, W, LD, ST, ADD, MUL, MAX, SET1, ZERO)                                      \
    for (int t = 0; t < n_nodes; t++) {                                                           \
        enum { V = 32 / (W) };                                                                    \
        int i = nodes ? nodes[t] : t;                                                             \
        int s0 = slot_ptr[i], s1 = slot_ptr[i + 1], deg = s1 - s0;                                \
        float *mean = M + (size_t)i * ldm, *mx = mean + 32;                                       \
        VT sum[V], top[V];                                                                        \
        if (deg == 0) {                                                                           \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                 \
                ST(mean + v * (W), ZERO());                                                       \
                ST(mx + v * (W), ZERO());                                                         \
            }                                                                                     \
            continue;                                                                             \
        }                                                                                         \
        const float *p = P + (size_t)slot_nb[s0] * 32;                                            \
        const float *q = Q + (size_t)(slot_q ? slot_q[s0] : s0) * 32;                             \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                     \
            VT m = ADD(LD(p + v * (W)), LD(q + v * (W)));                                         \
            sum[v] = ADD(ZERO(), m);                                                              \
            top[v] = m;                                                                           \
        }                                                                                         \
        for (int s = s0 + 1; s < s1; s++) {                                                       \
            p = P + (size_t)slot_nb[s] * 32;                                                      \
            q = Q + (size_t)(slot_q ? slot_q[s] : s) * 32;                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                 \
                VT m = ADD(LD(p + v * (W)), LD(q + v * (W)));                                     \
                sum[v] = ADD(sum[v], m);                                                          \
                top[v] = MAX(m, top[v]);                                                          \
            }                                                                                     \
        }                                                                                         \
        VT inv = SET1(1.0f / (float)deg);                                                         \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                     \
            ST(mean + v * (W), MUL(sum[v], inv));                                                 \
            ST(mx + v * (W), top[v]);                                                             \
        }                                                                                         \
    }

#define RELU_POOL_KERNEL(VT, W, LD, ST, ADD, MUL, MAX, SET1, ZERO)                                \
    do {                                                                                          \
        enum { V = 32 / (W) };                                                                    \
        VT sum[V], top[V];                                                                        \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                     \
            sum[v] = ZERO();                                                                      \
            top[v] = MAX(LD(X + (size_t)(rows ? rows[0] : 0) * ldx + v * (W)), ZERO());           \
        }                                                                                         \
        for (int i = 0; i < n; i++) {                                                             \
            float *xi = X + (size_t)(rows ? rows[i] : i) * ldx;                                   \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                 \
                VT y = MAX(LD(xi + v * (W)), ZERO());                                             \
                ST(xi + v * (W), y);                                                              \
                sum[v] = ADD(sum[v], y);                                                          \
                top[v] = MAX(y, top[v]);                                                          \
            }                                                                                     \
        }                                                                                         \
        VT inv = SET1(1.0f / (float)n);                                                           \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                     \
            ST(out + v * (W), MUL(sum[v], inv));                                                  \
            ST(out + 32 + v * (W), top[v]);                                                       \
        }                                                                                         \
    } while (0)

/* Over class rows (rows[i] <= i, rows[rows[i]] = rows[i]): a row is relu'd and stored where it
 * first comes (rows[i] = i); later mentions read it as left. */
#define POOL_CLS_KERNEL(VT, W, LD, ST, ADD, MUL, MAX, SET1, ZERO)                                 \
    do {                                                                                          \
        enum { V = 32 / (W) };                                                                    \
        VT sum[V], top[V];                                                                        \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                     \
            sum[v] = ZERO();                                                                      \
            top[v] = MAX(LD(X + (size_t)rows[0] * ldx + v * (W)), ZERO());                       \
        }                                                                                         \
        for (int i = 0; i < n; i++) {                                                             \
            float *xi = X + (size_t)rows[i] * ldx;                                                \
            VT y[V];                                                                              \
            if (rows[i] == i) {                                                                   \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                             \
                    y[v] = MAX(LD(xi + v * (W)), ZERO());                                         \
                    ST(xi + v * (W), y[v]);                                                       \
                }                                                                                 \
            } else {                                                                              \
                _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) y[v] = LD(xi + v * (W));      \
            }                                                                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                 \
                sum[v] = ADD(sum[v], y[v]);                                                       \
                top[v] = MAX(y[v], top[v]);                                                       \
            }                                                                                     \
        }                                                                                         \
        VT inv = SET1(1.0f / (float)n);                                                           \
        _Pragma("GCC unroll 4") for (int v = 0; v < V; v++) {                                     \
            ST(out + v * (W), MUL(sum[v], inv));                                                  \
            ST(out + 32 + v * (W), top[v]);                                                       \
        }                                                                                         \
    } while (0)

#define AVX512_OPS __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_add_ps, _mm512_mul_ps, \
                   _mm512_max_ps, _mm512_set1_ps, _mm512_setzero_ps
#define AVX2_OPS __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_add_ps, _mm256_mul_ps, \
                 _mm256_max_ps, _mm256_set1_ps, _mm256_setzero_ps

#define AGG_ARGS                                                                                  \
    int n_nodes, const int *restrict nodes, const int *restrict slot_ptr,                         \
        const int *restrict slot_nb, const int *restrict slot_q, const float *restrict P,         \
        const float *restrict Q,                                                                  \
        float *restrict M, int ldm
__attribute__((target("avx512f"))) static void aggregate32_avx512(AGG_ARGS)
{
    EXPAND(AGG_KERNEL, AVX512_OPS)
}
__attribute__((target("avx2"))) static void aggregate32_avx2(AGG_ARGS)
{
    EXPAND(AGG_KERNEL, AVX2_OPS)
}

#define POOL_ARGS int n, const int *restrict rows, float *X, int ldx, float *restrict out
__attribute__((target("avx512f"))) static void relu_pool32_avx512(POOL_ARGS)
{
    EXPAND(RELU_POOL_KERNEL, AVX512_OPS);
}
__attribute__((target("avx2"))) static void relu_pool32_avx2(POOL_ARGS)
{
    EXPAND(RELU_POOL_KERNEL, AVX2_OPS);
}
__attribute__((target("avx512f"))) static void pool_cls32_avx512(POOL_ARGS)
{
    EXPAND(POOL_CLS_KERNEL, AVX512_OPS);
}
__attribute__((target("avx2"))) static void pool_cls32_avx2(POOL_ARGS)
{
    EXPAND(POOL_CLS_KERNEL, AVX2_OPS);
}
#endif

#ifdef PP_VEC_KERNELS
/* 2 with AVX-512, 1 with AVX2, 0 for the portable loops (or when a test asks for them) */
static int vec_level(void)
{
    static _Atomic int level = -1;
    int l = level;
    if (l < 0) {
        __builtin_cpu_init();
        level = l = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return atomic_load_explicit(&force_plain, memory_order_relaxed) ? 0 : l;
}
#endif

void pp_gnn_aggregate_rows_t(int n_nodes, const int *nodes, int h, const int *slot_ptr,
                             const int *slot_nb, const int *slot_q, const float *P, const float *Q,
                             float *M, int ldm)
{
#ifdef PP_VEC_KERNELS
    int l = h == 32 ? vec_level() : 0;
    if (l == 2) {
        aggregate32_avx512(n_nodes, nodes, slot_ptr, slot_nb, slot_q, P, Q, M, ldm);
        return;
    }
    if (l == 1) {
        aggregate32_avx2(n_nodes, nodes, slot_ptr, slot_nb, slot_q, P, Q, M, ldm);
        return;
    }
#endif
    if (!nodes && !slot_q) {
        pp_gnn_op_aggregate(0, n_nodes, h, slot_ptr, slot_nb, P, NULL, Q, NULL, M, NULL, ldm, NULL);
        return;
    }
    /* gnn_ops.c's forward, node by node, message s reading Q row slot_q[s] */
    for (int t = 0; t < n_nodes; t++) {
        int i = nodes ? nodes[t] : t, s0 = slot_ptr[i], s1 = slot_ptr[i + 1];
        float *mean = M + (size_t)i * ldm, *mx = mean + h;
        if (s0 == s1) {
            memset(mean, 0, (size_t)2 * h * sizeof(float));
            continue;
        }
        for (int s = s0; s < s1; s++) {
            const float *p = P + (size_t)slot_nb[s] * h;
            const float *q = Q + (size_t)(slot_q ? slot_q[s] : s) * h;
            for (int c = 0; c < h; c++) {
                float v = p[c] + q[c];
                mean[c] = s == s0 ? 0.0f + v : mean[c] + v;
                mx[c] = s == s0 ? v : (v > mx[c] ? v : mx[c]);
            }
        }
        float inv = 1.0f / (float)(s1 - s0);
        for (int c = 0; c < h; c++) mean[c] *= inv;
    }
}

void pp_gnn_aggregate_t(int n_nodes, int h, const int *slot_ptr, const int *slot_nb,
                        const float *P, const float *Q, float *M, int ldm)
{
    pp_gnn_aggregate_rows_t(n_nodes, NULL, h, slot_ptr, slot_nb, NULL, P, Q, M, ldm);
}

void pp_gnn_relu_pool_t(int n, int h, float *X, int ldx, float *out)
{
    pp_gnn_relu_pool_rows_t(n, NULL, h, X, ldx, out);
}

/* pp_gnn_op_pool's loop over the rows named, each made relu first: every time it is named, or
 * (first_only) where it first comes (rows[i] == i) */
static void relu_pool_named(int n, const int *rows, int h, float *X, int ldx, float *out,
                            int first_only)
{
    float *mean = out, *mx = out + h;
    for (int i = 0; i < n; i++) {
        float *xi = X + (size_t)rows[i] * ldx;
        if (!first_only || rows[i] == i) pp_gnn_op_relu(0, 1, h, xi, NULL, ldx);
        for (int c = 0; c < h; c++) {
            if (!i) {
                mean[c] = 0.0f;
                mx[c] = xi[c];
            }
            mean[c] += xi[c];
            mx[c] = xi[c] > mx[c] ? xi[c] : mx[c];
        }
    }
    float inv = 1.0f / (float)n;
    for (int c = 0; c < h; c++) mean[c] *= inv;
}

/* The AVX-512 / AVX2 kernel of relu_pool_named where one runs (32 channels); 0 where none did */
static int relu_pool_vec(int n, const int *rows, int h, float *X, int ldx, float *out,
                         int first_only)
{
#ifdef PP_VEC_KERNELS
    int l = h == 32 && n > 0 ? vec_level() : 0;
    if (l == 2) {
        (first_only ? pool_cls32_avx512 : relu_pool32_avx512)(n, rows, X, ldx, out);
        return 1;
    }
    if (l == 1) {
        (first_only ? pool_cls32_avx2 : relu_pool32_avx2)(n, rows, X, ldx, out);
        return 1;
    }
#else
    (void)n, (void)rows, (void)h, (void)X, (void)ldx, (void)out, (void)first_only;
#endif
    return 0;
}

void pp_gnn_relu_pool_rows_t(int n, const int *rows, int h, float *X, int ldx, float *out)
{
    if (relu_pool_vec(n, rows, h, X, ldx, out, 0)) return;
    if (!rows) {
        pp_gnn_op_relu(0, n, h, X, NULL, ldx);
        pp_gnn_op_pool(0, n, h, X, NULL, ldx, out, NULL, NULL);
        return;
    }
    /* relu is applied once more to a row named again, which changes no bit
     * (max(max(y, 0), 0) = max(y, 0)) */
    relu_pool_named(n, rows, h, X, ldx, out, 0);
}

void pp_gnn_relu_pool_cls_t(int n, const int *rows, int h, float *X, int ldx, float *out)
{
    /* pp_gnn_relu_pool_rows_t's loop, relu on a row where it first comes */
    if (!relu_pool_vec(n, rows, h, X, ldx, out, 1)) relu_pool_named(n, rows, h, X, ldx, out, 1);
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
