/* bench/bench_speed.c: how fast a prediction is (issue 23), as ratios of runs in this one process:
 *   1. a loaded model predicted in a loop on a device with layer models and a GNN ensemble, by the
 *      path before the flat trees and the GNN pool (XGBoost DMatrix per kernel, a GNN workspace per
 *      member and call: pp_lm_use_xgboost, pp_gnn_use_reference) and by the current one: computed
 *      afresh every call (no reuse, no tree memo: what the first prediction of a (model, device,
 *      batch) costs), with the tree memo warm (a new model whose kernels were seen before, as in a
 *      search), and repeated (the context's reuse of an identical call); each with the machine
 *      idle and with a busy loop on another core (a child process the bench starts and stops);
 *      computed afresh again with each tree kernel the CPU has (pp_lm_flat_kernel_cap: the portable
 *      loop, AVX2, AVX-512), idle, in turn;
 *      against running the model (a measured forward latency, when given); and the very first
 *      prediction of a fresh context (lazy loads of trees and GNN weights included);
 *   2. NAS-Bench-201 cells per second through perfpred_predict_many (1 and 2 threads) per device,
 *      and on 1 thread with every cell of a stage built rather than copied (pp_nb201_copy_cells),
 *      best of 3 runs of 400 cells each, the three taken in turn; and through the command itself
 *      (`perfpred predict-many`, 2,000 cells, the process as a whole, best of 3) with the heap
 *      trim threshold the CLI sets (64 MiB) and with glibc's default (128 KiB, GLIBC_TUNABLES);
 *   3. the cold start of `perfpred --device a100-mig-3g model.onnx` (the whole process) with the
 *      flat-tree cache warm and with it off (PERFPRED_CACHE_DIR=off: every tree through XGBoost, as
 *      before), beside the load of the same model in this process.
 * Usage: bench_speed MODEL.onnx PERFPRED_CLI [DEVICE] [MEASURED_MS] */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfpred.h>

/* internal switches for the old path (layer_models.h, graph_gnn.h) */
void pp_lm_use_xgboost(int on);
void pp_gnn_use_reference(int on);
void pp_lm_memo_disable(int off);   /* layer_models.h */
void pp_reuse_disable(int off);     /* predictor/reuse.h */
void pp_nb201_copy_cells(int on);   /* graph/builders.h */
int pp_lm_flat_kernel_cap(int max_level); /* layer_models.h: 0 portable, 1 AVX2, 2 AVX-512 */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_speed: %s: %s\n", what, err);
    exit(2);
}

/* A child spinning on another core until stopped. */
static pid_t busy_start(void)
{
    pid_t p = fork();
    if (p == 0) {
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    return p;
}

static void busy_stop(pid_t p)
{
    if (p <= 0) return;
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
}

/* Best of 5 loops of at least 0.3 s: seconds per prediction. */
static double per_prediction(const perfpred_ctx *ctx, const perfpred_model *m, const char *dev)
{
    char err[1024];
    perfpred_prediction p;
    for (int w = 0; w < 10; w++) /* warm: deferred loads, flattening, the GNN pool */
        if (perfpred_predict(ctx, m, dev, NULL, &p, err, sizeof err)) die(dev, err);
    double best = 1e30;
    for (int loop = 0; loop < 5; loop++) {
        int n = 0;
        double t0 = now_s(), t1;
        do {
            if (perfpred_predict(ctx, m, dev, NULL, &p, err, sizeof err)) die(dev, err);
            n++;
            t1 = now_s();
        } while (t1 - t0 < 0.3);
        if ((t1 - t0) / n < best) best = (t1 - t0) / n;
    }
    return best;
}

static int count_rows(const perfpred_many_row *r, void *user)
{
    (void)r;
    ++*(long *)user;
    return 0;
}

/* Cells per second through perfpred_predict_many on dev. */
static double cells_per_s(const perfpred_ctx *ctx, const char *const *cells, int n, const char *dev,
                          int threads)
{
    perfpred_many_params p = perfpred_many_default_params();
    long rows = 0;
    p.items = cells;
    p.n_items = n;
    p.devices = &dev;
    p.n_devices = 1;
    p.threads = threads;
    p.on_row = count_rows;
    p.user = &rows;
    char err[1024];
    int failed = 0;
    double t0 = now_s();
    if (perfpred_predict_many(ctx, &p, &failed, err, sizeof err) || failed || rows != n)
        die("predict-many", failed ? "rows failed" : err);
    return n / (now_s() - t0);
}

/* The next NAS-Bench-201 cell of the pseudo-random sequence s (the 15,625 cells' 6 edges, each one
 * of 5 ops) into out. */
static const char *const nb201_ops[] = {"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3",
                                        "avg_pool_3x3"};
static void nb201_cell(unsigned *s, char *out, size_t n)
{
    int o[6];
    for (int e = 0; e < 6; e++) o[e] = (int)((*s = *s * 1103515245u + 12345u) >> 16) % 5;
    snprintf(out, n, "|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|", nb201_ops[o[0]], nb201_ops[o[1]],
             nb201_ops[o[2]], nb201_ops[o[3]], nb201_ops[o[4]], nb201_ops[o[5]]);
}

/* NAS-Bench-201 cells per second through the command (`perfpred predict-many`, one thread, the
 * process as a whole, best of 3), with the CLI's heap trim threshold and with glibc's default. */
static void cli_cells(const char *cli, const char *const *devs, int n_dev)
{
    enum { N = 2000 };
    char path[] = "/tmp/bench_speed_cellsXXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) die("cells file", path);
    unsigned s = 777;
    for (int i = 0; i < N; i++) {
        char cell[160];
        nb201_cell(&s, cell, sizeof cell);
        fprintf(f, "%s\n", cell);
    }
    fclose(f);
    static const char *const env[2] = {"", "GLIBC_TUNABLES=glibc.malloc.trim_threshold=131072 "};
    for (int d = 0; d < n_dev; d++) {
        double best[2] = {0, 0};
        for (int rep = 0; rep < 3; rep++)
            for (int k = 0; k < 2; k++) {
                char cmd[4096];
                snprintf(cmd, sizeof cmd,
                         "%s'%s' predict-many --device %s --nb201 %s --threads 1 --csv >/dev/null",
                         env[k], cli, devs[d], path);
                double t0 = now_s();
                if (system(cmd) != 0) die("predict-many command", cmd);
                best[k] = fmax(best[k], N / (now_s() - t0));
            }
        printf("`perfpred predict-many` on %s, %d cells, 1 thread, the whole process: %.0f "
               "cells/s; with glibc's default heap trim (128 KiB) %.0f (the CLI's 64 MiB %.2fx)\n",
               devs[d], N, best[0], best[1], best[0] / best[1]);
    }
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s MODEL.onnx PERFPRED_CLI [DEVICE] [MEASURED_MS]\n", argv[0]);
        return 1;
    }
    const char *dev = argc > 3 ? argv[3] : "epyc-kvm-2vcpu";
    char err[1024];
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, err, sizeof err);
    if (!ctx) die("context", err);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1;
    double t0 = now_s();
    perfpred_model *m = perfpred_model_load(argv[1], &mp, NULL, err, sizeof err);
    double load = now_s() - t0;
    if (!m) die(argv[1], err);

    /* 0. the first prediction of a fresh context: trees (from the cache) and GNN weights load */
    perfpred_ctx *fresh = perfpred_ctx_open(NULL, NULL, err, sizeof err);
    if (!fresh) die("context", err);
    perfpred_prediction p0;
    t0 = now_s();
    if (perfpred_predict(fresh, m, dev, NULL, &p0, err, sizeof err)) die(dev, err);
    double first_ctx = now_s() - t0;
    perfpred_ctx_close(fresh);

    /* 1. old path first: it leaves OpenBLAS's thread count as the process found it */
    pp_reuse_disable(1);
    pp_lm_memo_disable(1);
    pp_lm_use_xgboost(1);
    pp_gnn_use_reference(1);
    double old_idle = per_prediction(ctx, m, dev);
    pid_t b = busy_start();
    double old_busy = per_prediction(ctx, m, dev);
    busy_stop(b);
    pp_lm_use_xgboost(0);
    pp_gnn_use_reference(0);
    double new_idle = per_prediction(ctx, m, dev);
    b = busy_start();
    double new_busy = per_prediction(ctx, m, dev);
    busy_stop(b);
    /* computed afresh by tree kernel, idle, taken in turn twice: portable, AVX2, AVX-512 */
    double by_kernel[3] = {1e30, 1e30, 1e30};
    int top = pp_lm_flat_kernel_cap(2);
    for (int rep = 0; rep < 2; rep++)
        for (int k = 0; k <= top; k++) {
            pp_lm_flat_kernel_cap(k);
            double t = per_prediction(ctx, m, dev);
            if (t < by_kernel[k]) by_kernel[k] = t;
        }
    pp_lm_flat_kernel_cap(2);
    pp_lm_memo_disable(0);
    double memo_idle = per_prediction(ctx, m, dev);
    b = busy_start();
    double memo_busy = per_prediction(ctx, m, dev);
    busy_stop(b);
    pp_reuse_disable(0);
    double again_idle = per_prediction(ctx, m, dev);
    b = busy_start();
    double again_busy = per_prediction(ctx, m, dev);
    busy_stop(b);
    printf("predict %s on %s, best of 5 loops (us per prediction: idle, other core busy):\n",
           argv[1], dev);
    printf("  old path (XGBoost DMatrix, GNN workspace per call):  %9.1f %9.1f\n",
           old_idle * 1e6, old_busy * 1e6);
    printf("  computed afresh (flat trees, pooled GNN; = a first prediction of a (model, device, "
           "batch)):\n                                                       %9.1f %9.1f  "
           "(%.1fx, %.1fx vs old)\n", new_idle * 1e6, new_busy * 1e6, old_idle / new_idle,
           old_busy / new_busy);
    printf("  computed afresh by tree kernel, idle (portable loop, AVX2, AVX-512; best of 2):\n"
           "                                                       %9.1f", by_kernel[0] * 1e6);
    for (int k = 1; k <= top; k++)
        printf(" %9.1f (%.2fx)", by_kernel[k] * 1e6, by_kernel[0] / by_kernel[k]);
    printf("\n");
    printf("  tree memo warm (a new model of kernels seen before):  %9.1f %9.1f  (%.1fx, %.1fx)\n",
           memo_idle * 1e6, memo_busy * 1e6, old_idle / memo_idle, old_busy / memo_busy);
    printf("  repeated call (context reuse of an identical call):   %9.2f %9.2f  (%.0fx, %.0fx)\n",
           again_idle * 1e6, again_busy * 1e6, old_idle / again_idle, old_busy / again_busy);
    printf("  first prediction of a fresh context (lazy loads included): %.1f us\n",
           first_ctx * 1e6);
    if (argc > 4) {
        double ms = atof(argv[4]);
        printf("  running the model (measured forward %.1f ms) / prediction computed afresh: %.0fx\n",
               ms, ms * 1e-3 / new_idle);
    }

    /* 2. NAS-Bench-201 cells (a fixed pseudo-random sample of the 15,625) */
    enum { N_CELLS = 400 };
    static char text[N_CELLS][160];
    const char *cells[N_CELLS];
    unsigned s = 12345;
    for (int i = 0; i < N_CELLS; i++) {
        nb201_cell(&s, text[i], sizeof text[i]);
        cells[i] = text[i];
    }
    static const char *const nas_devs[] = {"rpi4", "epyc-kvm-2vcpu"};
    for (int d = 0; d < 2; d++) {
        cells_per_s(ctx, cells, 20, nas_devs[d], 1); /* warm */
        /* best of 3, the three ways taken in turn: a busy neighbour hits them alike */
        double c1 = 0, c2 = 0, c0 = 0;
        for (int rep = 0; rep < 3; rep++) {
            c1 = fmax(c1, cells_per_s(ctx, cells, N_CELLS, nas_devs[d], 1));
            c2 = fmax(c2, cells_per_s(ctx, cells, N_CELLS, nas_devs[d], 2));
            pp_nb201_copy_cells(0); /* every cell built, none copied: the path before copies */
            c0 = fmax(c0, cells_per_s(ctx, cells, N_CELLS, nas_devs[d], 1));
            pp_nb201_copy_cells(1);
        }
        printf("NAS-Bench-201 on %s through predict-many: %.0f cells/s on 1 thread, %.0f on 2 "
               "(%.2fx); every cell built, 1 thread: %.0f (copies %.2fx)\n", nas_devs[d], c1, c2,
               c2 / c1, c0, c1 / c0);
    }
    cli_cells(argv[2], nas_devs, 2);

    /* 3. cold start of the command, beside the model load: the tree cache warm, then off */
    static const char *const modes[2] = {"", "PERFPRED_CACHE_DIR=off "};
    double med[2];
    for (int k = 0; k < 2; k++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "%s'%s' --device a100-mig-3g '%s' >/dev/null", modes[k], argv[2],
                 argv[1]);
        if (system(cmd) != 0) die("cold start", cmd); /* fills the cache (k = 0) */
        double cold[7];
        for (int i = 0; i < 7; i++) {
            t0 = now_s();
            if (system(cmd) != 0) die("cold start", cmd);
            cold[i] = now_s() - t0;
        }
        for (int i = 1; i < 7; i++)
            for (int j = i; j > 0 && cold[j] < cold[j - 1]; j--) {
                double x = cold[j];
                cold[j] = cold[j - 1];
                cold[j - 1] = x;
            }
        med[k] = cold[3];
    }
    printf("cold start `perfpred --device a100-mig-3g %s` (the process as a whole, median of 7):\n"
           "  flat-tree cache warm %.1f ms; cache off (trees through XGBoost) %.1f ms (%.1fx); "
           "the model load alone in-process %.1f ms\n",
           argv[1], med[0] * 1e3, med[1] * 1e3, med[1] / med[0], load * 1e3);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    return 0;
}
