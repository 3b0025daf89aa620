/* bench/bench_perfpred.c: speed, as ratios of runs in this one process (never asserted in tests).
 *   1. loading the same graph with and without its weights (the loader must not pay for weights);
 *   2. a prediction against its baseline, loading the model it predicts;
 *   3. a prediction against running the model: measured forward latency from a network CSV row
 *      (data/host-cpu/networks.csv) over the time perfpred takes to predict it;
 *   4. a cold start (open a context, predict once on DEVICE, close) against a cold start that
 *      predicts once on every device with layer models of its own, which reads every regressor
 *      of the tree as a context did before it read them on first use.
 * Usage: bench_perfpred WEIGHTLESS.onnx WITH_WEIGHTS.onnx [DEVICE] [MEASURED_MS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfpred.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* median of n timings (sorts t in place) */
static double median(double *t, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    return t[n / 2];
}

/* median of reps timings of one load */
static double time_load(const char *path, int reps)
{
    double t[64];
    if (reps > 64) reps = 64;
    for (int i = 0; i < reps; i++) {
        perfpred_model_params p = perfpred_model_default_params();
        p.batch = 1;
        char err[512];
        double t0 = now_s();
        perfpred_model *m = perfpred_model_load(path, &p, NULL, err, sizeof err);
        t[i] = now_s() - t0;
        if (!m) {
            fprintf(stderr, "bench: %s\n", err);
            exit(2);
        }
        perfpred_model_free(m);
    }
    return median(t, reps);
}

/* median of reps cold starts: open a context, predict m once on each of the n devices, close */
static double time_cold(const perfpred_model *m, const char *const *devices, int n, int reps)
{
    double t[16];
    if (reps > 16) reps = 16;
    for (int i = 0; i < reps; i++) {
        char err[1024];
        double t0 = now_s();
        perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, err, sizeof err);
        if (!ctx) {
            fprintf(stderr, "bench: %s\n", err);
            exit(2);
        }
        for (int d = 0; d < n; d++) {
            perfpred_prediction p;
            if (perfpred_predict(ctx, m, devices[d], NULL, &p, err, sizeof err)) {
                fprintf(stderr, "bench: %s\n", err);
                exit(2);
            }
        }
        perfpred_ctx_close(ctx);
        t[i] = now_s() - t0;
    }
    return median(t, reps);
}

/* Devices whose layer models are their own (at most max), into out; their count. */
static int own_calibrated(const perfpred_ctx *ctx, const char **out, int max)
{
    int n = 0;
    for (int i = 0; i < perfpred_device_count(ctx) && n < max; i++) {
        perfpred_device_info info;
        if (perfpred_device_at(ctx, i, &info) == PERFPRED_OK && info.calibration_device &&
            !strcmp(info.calibration_device, info.name))
            out[n++] = info.name;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: %s WEIGHTLESS.onnx WITH_WEIGHTS.onnx [DEVICE] [MEASURED_MS]\n",
                argv[0]);
        return 1;
    }
    const char *device = argc > 3 ? argv[3] : "a100-mig-3g";
    double light = time_load(argv[1], 15), heavy = time_load(argv[2], 15);
    printf("load: %s %.2f ms, %s %.2f ms: ratio with/without weights %.2f\n", argv[1], light * 1e3,
           argv[2], heavy * 1e3, heavy / light);

    char err[1024];
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, err, sizeof err);
    if (!ctx) {
        fprintf(stderr, "bench: %s\n", err);
        return 2;
    }
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1;
    perfpred_model *m = perfpred_model_load(argv[1], &mp, NULL, err, sizeof err);
    if (!m) {
        fprintf(stderr, "bench: %s\n", err);
        return 2;
    }
    perfpred_prediction p;
    int n = 0;
    double t0 = now_s(), t1;
    do {
        if (perfpred_predict(ctx, m, device, NULL, &p, err, sizeof err)) {
            fprintf(stderr, "bench: %s\n", err);
            return 2;
        }
        n++;
        t1 = now_s();
    } while (t1 - t0 < 1.0);
    double per = (t1 - t0) / n;
    printf("predict on %s: %.3f ms per prediction (%d in %.2f s): %.2f x the load time\n", device,
           per * 1e3, n, t1 - t0, per / light);
    if (argc > 4) {
        double measured_ms = atof(argv[4]);
        printf("predict vs run: measured forward %.2f ms / (load %.2f ms + predict %.3f ms) = %.0fx\n",
               measured_ms, light * 1e3, per * 1e3, measured_ms / ((light + per) * 1e3));
    }
    const char *own[64];
    int n_own = own_calibrated(ctx, own, 64);
    double one = time_cold(m, &device, 1, 9), all = time_cold(m, own, n_own, 9);
    printf("cold start (open, predict on %s, close): %.1f ms; predicting once on each of the %d "
           "devices with their own layer models: %.1f ms: ratio %.2f\n",
           device, one * 1e3, n_own, all * 1e3, all / one);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    return 0;
}
