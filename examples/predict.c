/* examples/predict.c: libperfpred from another program, through the public header alone.
 * Build against an installed perfpred:
 *   cc predict.c $(pkg-config --cflags --libs perfpred) -o predict
 * Run: ./predict model.onnx [device]      (device defaults to a100-mig-3g) */
#include <math.h>
#include <stdio.h>

#include <perfpred.h>

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s model.onnx [device]\n", argv[0]);
        return 1;
    }
    const char *device = argc == 3 ? argv[2] : "a100-mig-3g";
    char err[1024];
    perfpred_status st;

    perfpred_ctx *ctx = perfpred_ctx_open(NULL, &st, err, sizeof err);
    if (!ctx) {
        fprintf(stderr, "perfpred: %s (%s)\n", err, perfpred_status_str(st));
        return 2;
    }
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1; /* for a symbolic batch dim */
    perfpred_model *m = perfpred_model_load(argv[1], &mp, &st, err, sizeof err);
    if (!m) {
        fprintf(stderr, "perfpred: %s (%s)\n", err, perfpred_status_str(st));
        perfpred_ctx_close(ctx);
        return 2;
    }
    perfpred_model_totals t = perfpred_model_get_totals(m);
    perfpred_prediction p;
    st = perfpred_predict(ctx, m, device, NULL, &p, err, sizeof err);
    if (st) {
        fprintf(stderr, "perfpred: %s (%s)\n", err, perfpred_status_str(st));
    } else {
        printf("%s on %s: %lld params, %lld MACs\n", argv[1], p.device, (long long)t.params,
               (long long)t.macs);
        printf("latency %.3f ms (%s), peak memory %.1f MiB (%s)\n", p.latency_ms.value,
               perfpred_provenance_str(p.latency_ms.prov), p.peak_memory_bytes.value / 1048576.0,
               perfpred_provenance_str(p.peak_memory_bytes.prov));
        if (!isnan(p.energy_mj.value))
            printf("energy %.3f mJ per inference (%s)\n", p.energy_mj.value,
                   perfpred_provenance_str(p.energy_mj.prov));
    }
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    return st ? 3 : 0;
}
