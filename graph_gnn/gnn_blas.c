/* graph_gnn/gnn_blas.c: OpenBLAS, loaded by dlopen the first time a GNN trains or runs its BLAS
 * (reference) forward. Predictions use the forward-only pass (gnn_infer.c), so a process that only
 * predicts never loads OpenBLAS, nor starts its thread pool (~10 ms of a cold start, and threads
 * spinning for a core). Should the library be missing, a plain triple loop computes the same
 * products (slower, and rounded in its own order). */
#include "graph_gnn/graph_gnn.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>

#ifndef PP_OPENBLAS_SONAME
#define PP_OPENBLAS_SONAME "libopenblas.so.0"
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static __typeof__(cblas_sgemm) *sgemm;
static __typeof__(openblas_set_num_threads) *set_threads;

static void load(void)
{
    void *h = dlopen(PP_OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) return;
    *(void **)(void *)&sgemm = dlsym(h, "cblas_sgemm");
    *(void **)(void *)&set_threads = dlsym(h, "openblas_set_num_threads");
}

/* C = A' B' + C for row-major A' = op(A) [m][k], B' = op(B) [k][n] (alpha = beta = 1). */
static void sgemm_loops(int ta, int tb, int m, int n, int k, const float *a, int lda,
                        const float *b, int ldb, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
            for (int p = 0; p < k; p++)
                s += (ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p]) *
                     (tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j]);
            c[(size_t)i * ldc + j] += s;
        }
}

void pp_gnn_sgemm(int trans_a, int trans_b, int m, int n, int k, const float *a, int lda,
                  const float *b, int ldb, float *c, int ldc)
{
    pthread_once(&once, load);
    if (sgemm)
        sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
    else
        sgemm_loops(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
}

void pp_gnn_blas_threads(int n)
{
    pthread_once(&once, load);
    if (set_threads && n > 0) set_threads(n);
}
