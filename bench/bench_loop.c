/* bench/bench_loop.c: a model predicted N times on a device after 10 warm predictions, with the
 * context's reuse off and the tree memo on or off: a fixed amount of work for instruction counts
 * (bench/instructions.sh runs it under callgrind twice and takes the difference), which do not
 * depend on the machine's load as times do. Prints the last latency and energy as hex floats, so
 * that two builds can be compared bit for bit.
 * Usage: bench_loop MODEL.onnx DEVICE N MEMO(0|1) */
#include <stdio.h>
#include <stdlib.h>

#include <perfpred.h>

void pp_lm_memo_disable(int off); /* layer_models.h */
void pp_reuse_disable(int off);   /* predictor/reuse.h */

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s MODEL.onnx DEVICE N MEMO(0|1)\n", argv[0]);
        return 1;
    }
    char err[1024], *end;
    long n = strtol(argv[3], &end, 10);
    if (*end || n < 0) {
        fprintf(stderr, "bench_loop: bad N '%s'\n", argv[3]);
        return 1;
    }
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, err, sizeof err);
    if (!ctx) {
        fprintf(stderr, "bench_loop: %s\n", err);
        return 2;
    }
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1;
    perfpred_model *m = perfpred_model_load(argv[1], &mp, NULL, err, sizeof err);
    if (!m) {
        fprintf(stderr, "bench_loop: %s\n", err);
        perfpred_ctx_close(ctx);
        return 2;
    }
    pp_reuse_disable(1);
    pp_lm_memo_disable(argv[4][0] == '0');
    perfpred_prediction p;
    for (long i = 0; i < 10 + n; i++)
        if (perfpred_predict(ctx, m, argv[2], NULL, &p, err, sizeof err)) {
            fprintf(stderr, "bench_loop: %s\n", err);
            return 2;
        }
    printf("%a %a\n", p.latency_ms.value, p.energy_mj.value);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    return 0;
}
