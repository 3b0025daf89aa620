/* tests/test_reuse.c: a context's reuse of predictions (predictor/reuse.c): a repeated call
 * returns what computing afresh gives, field by field; the key holds the model (not its address),
 * the device and every parameter that changes a figure; a per-kernel breakdown is always
 * computed. Real configs: layer models, a GNN ensemble (epyc-kvm-2vcpu), MIG slices. */
#include "tests/helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "predictor/reuse.h"

static perfpred_model *load_b(const char *file, int64_t batch)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/models/%s", PP_SOURCE_DIR, file);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = batch;
    perfpred_model *m = perfpred_model_load(path, &mp, NULL, err, sizeof err);
    if (!m) fail_msg("%s", err);
    return m;
}

static void predict(const perfpred_ctx *ctx, const perfpred_model *m, const char *dev,
                    const perfpred_predict_params *pp, perfpred_prediction *out)
{
    char err[1024];
    if (perfpred_predict(ctx, m, dev, pp, out, err, sizeof err) != PERFPRED_OK)
        fail_msg("%s: %s", dev, err);
}

static void same_figure(const perfpred_figure *a, const perfpred_figure *b)
{
    /* bit for bit: NaN for an unavailable figure compares by representation */
    assert_memory_equal(&a->value, &b->value, sizeof a->value);
    assert_int_equal(a->prov, b->prov);
    assert_ptr_equal(a->source, b->source);
}

static void same_prediction(const perfpred_prediction *a, const perfpred_prediction *b)
{
    assert_string_equal(a->device, b->device);
    assert_int_equal(a->batch, b->batch);
    same_figure(&a->latency_ms, &b->latency_ms);
    same_figure(&a->energy_mj, &b->energy_mj);
    same_figure(&a->peak_memory_bytes, &b->peak_memory_bytes);
    assert_int_equal(a->n_kernels, b->n_kernels);
    assert_int_equal(a->n_calibrated_kernels, b->n_calibrated_kernels);
    assert_memory_equal(&a->latency_members_lo_ms, &b->latency_members_lo_ms, sizeof(double));
    assert_memory_equal(&a->latency_members_hi_ms, &b->latency_members_hi_ms, sizeof(double));
}

static const char *const devs[] = {"epyc-kvm-2vcpu", "a100-mig-3g", "rpi4", "host-cpu",
                                   "jetson-orin-nano"};

/* computed, computed again with the table on (a miss that fills it), then served from it: the
 * three agree, and the table counted the hit */
static void repeated_call_should_return_the_computed_prediction(void **state)
{
    (void)state;
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, NULL, 0);
    assert_non_null(ctx);
    perfpred_model *m = load_b("resnet50.onnx", 1);
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        perfpred_prediction fresh, first, again;
        pp_reuse_disable(1);
        predict(ctx, m, devs[i], NULL, &fresh);
        pp_reuse_disable(0);
        long h0, l0, h1, l1;
        pp_reuse_counts(pp_ctx_reuse(ctx), &h0, &l0);
        predict(ctx, m, devs[i], NULL, &first);
        predict(ctx, m, devs[i], NULL, &again);
        pp_reuse_counts(pp_ctx_reuse(ctx), &h1, &l1);
        assert_int_equal(l1 - l0, 2);
        assert_int_equal(h1 - h0, 1);
        same_prediction(&fresh, &first);
        same_prediction(&fresh, &again);
    }
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* other parameters, other models (also one at a freed model's address), a breakdown asked for:
 * each answer equals a fresh computation of that call */
static void key_should_hold_everything_that_changes_a_figure(void **state)
{
    (void)state;
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, NULL, 0);
    assert_non_null(ctx);
    perfpred_model *m = load_b("resnet50.onnx", 1);
    perfpred_prediction a, b, fresh;
    perfpred_predict_params lso = perfpred_predict_default_params();
    lso.layer_sum_only = 1;
    predict(ctx, m, "epyc-kvm-2vcpu", NULL, &a);
    predict(ctx, m, "epyc-kvm-2vcpu", &lso, &b);
    assert_true(a.latency_ms.value != b.latency_ms.value); /* the GNN correction is on in a only */
    pp_reuse_disable(1);
    predict(ctx, m, "epyc-kvm-2vcpu", &lso, &fresh);
    pp_reuse_disable(0);
    same_prediction(&b, &fresh);

    /* fp16 on the A100 slice: another stack, another answer */
    perfpred_predict_params fp16 = perfpred_predict_default_params();
    fp16.precision = "fp16";
    predict(ctx, m, "a100-mig-3g", NULL, &a);
    predict(ctx, m, "a100-mig-3g", &fp16, &b);
    assert_true(a.latency_ms.value != b.latency_ms.value);

    /* a model freed and another loaded (often at the same address): never the old answer */
    predict(ctx, m, "host-cpu", NULL, &a);
    perfpred_model_free(m);
    m = load_b("resnet50.onnx", 8);
    predict(ctx, m, "host-cpu", NULL, &b);
    assert_int_equal(b.batch, 8);
    assert_true(b.latency_ms.value > a.latency_ms.value);
    pp_reuse_disable(1);
    predict(ctx, m, "host-cpu", NULL, &fresh);
    pp_reuse_disable(0);
    same_prediction(&b, &fresh);

    /* a breakdown is computed every time (the table holds none) */
    perfpred_kernel ks[256];
    int nk = 0;
    perfpred_predict_params kp = perfpred_predict_default_params();
    kp.kernels = ks;
    kp.kernels_cap = 256;
    kp.n_kernels = &nk;
    memset(ks, 0, sizeof ks);
    predict(ctx, m, "host-cpu", &kp, &a);
    assert_true(nk > 50);
    assert_int_equal(nk, b.n_kernels);
    assert_true(ks[0].latency_ms > 0 && ks[nk - 1].latency_ms > 0);
    /* n_kernels alone is filled from the table too */
    int nk2 = 0;
    perfpred_predict_params np = perfpred_predict_default_params();
    np.n_kernels = &nk2;
    predict(ctx, m, "host-cpu", &np, &a);
    assert_int_equal(nk2, nk);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(repeated_call_should_return_the_computed_prediction),
        cmocka_unit_test(key_should_hold_everything_that_changes_a_figure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
