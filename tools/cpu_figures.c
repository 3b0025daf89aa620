/* tools/cpu_figures.c: the two measured figures of a CPU descriptor (configs/devices/NAME.yaml):
 * memory bandwidth, from a STREAM-style triad a[i] = b[i] + s * c[i] over three arrays far larger
 * than the last-level cache on every thread (12 bytes per fp32 element counted), and single-core
 * fp32 FMA throughput, from a loop of independent 8-lane fused multiply-adds. Best of several
 * trials. Needs AVX2 and FMA for the FMA figure (-march=native picks them where the CPU has them).
 *
 *   built by CMake as build/cpu_figures, or on its own:
 *   gcc -O3 -march=native -fopenmp -D_POSIX_C_SOURCE=200809L tools/cpu_figures.c -o /tmp/cpu_figures
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef float v8 __attribute__((vector_size(32)));

/* 12 independent accumulators hide the FMA latency on two pipes. */
static double fma_gflops(long iters)
{
    v8 acc[12], m, d;
    for (int k = 0; k < 8; k++) {
        m[k] = 0.999999f;
        d[k] = 1e-7f;
    }
    for (int j = 0; j < 12; j++) acc[j] = m * (float)(j + 1);
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 12; j++) acc[j] = acc[j] * m + d;
    double t = now_s() - t0;
    float sink = 0;
    for (int j = 0; j < 12; j++)
        for (int k = 0; k < 8; k++) sink += acc[j][k];
    if (sink == 12345.0f) printf("(%g)\n", sink); /* keeps the loop */
    return (double)iters * 12 * 8 * 2 / t * 1e-9;
}

int main(void)
{
    const size_t n = 40u * 1000 * 1000; /* 3 x 160 MB */
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) return 1;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        a[i] = 0;
        b[i] = 1;
        c[i] = 2;
    }
    double best = 0;
    for (int trial = 0; trial < 8; trial++) {
        double t0 = now_s();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 0.5f * c[i];
        double t = now_s() - t0;
        double gbs = (double)n * 3 * sizeof(float) / t * 1e-9;
        if (gbs > best) best = gbs;
    }
    printf("triad: %.1f GB/s (best of 8, %d threads, 3 x %zu MB)\n", best, omp_get_max_threads(),
           n * sizeof(float) / 1000000);
    double g = 0;
    for (int trial = 0; trial < 5; trial++) {
        double x = fma_gflops(100000000L);
        if (x > g) g = x;
    }
    printf("fma: %.1f GFLOP/s on one core (best of 5)\n", g);
    free(a);
    free(b);
    free(c);
    return 0;
}
