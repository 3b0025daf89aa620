/* tests/test_predictor.c: the prediction path on toy descriptors with round figures, so every
 * expected value below is worked out by hand: roofline, fusion, memory, energy, Habitat scaling,
 * MIG advice, unavailable figures, and identical results from concurrent threads. */
#include "tests/helpers.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/devices.h"
#include "graph/builders.h"
#include "graph/graph.h"
#include "predictor/predictor.h"
#include "predictor/stack.h"
#include "util/util.h"

#include <cjson/cJSON.h>

/* A context over the config folder dir. */
static perfpred_ctx *open_dir(const char *dir)
{
    perfpred_ctx_params p = perfpred_ctx_default_params();
    p.config_dir = dir;
    char err[1024];
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&p, &st, err, sizeof err);
    if (!ctx) print_error("%s\n", err);
    assert_non_null(ctx);
    return ctx;
}

static perfpred_ctx *open_toy(void) { return open_dir(pp_test_path("tests/fixtures/predictor")); }

/* A built graph with input tensor x and output "y" as a model: linked, shape-inferred and
 * featurized as a loaded file is. */
static perfpred_model *finish_model(pp_graph *g, int x)
{
    g->inputs = pp_arena_array(g->arena, 1, sizeof(int));
    g->inputs[0] = x;
    g->n_inputs = 1;
    g->tensors[pp_graph_find(g, "y")].flags |= PP_T_GRAPH_OUTPUT;
    pp_err err = {0};
    pp_shape_opts so = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_infer_shapes(g, &so, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_features(g, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_liveness(g, &err), PERFPRED_OK);
    perfpred_model *m = pp_model_wrap(g);
    assert_non_null(m);
    return m;
}

/* x[1,K] -> MatMul(W[K,N]) -> y[1,N] */
static perfpred_model *matmul_model(int64_t k, int64_t n)
{
    pp_graph *g = pp_graph_new("matmul.onnx");
    int x = pp_graph_tensor(g, "x"), w = pp_graph_tensor(g, "W");
    int64_t dx[] = {1, k}, dw[] = {k, n};
    pp_tensor_set_shape(&g->tensors[x], PP_DT_FLOAT, 2, dx);
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    pp_tensor_set_shape(&g->tensors[w], PP_DT_FLOAT, 2, dw);
    g->tensors[w].flags |= PP_T_INITIALIZER | PP_T_WEIGHT;
    const char *in[] = {"x", "W"}, *out[] = {"y"};
    pp_graph_add_node(g, "mm", "MatMul", "", in, 2, out, 1);
    return finish_model(g, x);
}

/* x[1,3,8,8] -> Conv(W[4,3,3,3], pads 1) -> c -> Relu -> y */
static perfpred_model *conv_relu_model(void)
{
    pp_graph *g = pp_graph_new("convrelu.onnx");
    int x = pp_graph_tensor(g, "x"), w = pp_graph_tensor(g, "W");
    int64_t dx[] = {1, 3, 8, 8}, dw[] = {4, 3, 3, 3};
    pp_tensor_set_shape(&g->tensors[x], PP_DT_FLOAT, 4, dx);
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    pp_tensor_set_shape(&g->tensors[w], PP_DT_FLOAT, 4, dw);
    g->tensors[w].flags |= PP_T_INITIALIZER | PP_T_WEIGHT;
    const char *ci[] = {"x", "W"}, *co[] = {"c"}, *ri[] = {"c"}, *ro[] = {"y"};
    int conv = pp_graph_add_node(g, "conv", "Conv", "", ci, 2, co, 1);
    pp_attr *a = pp_node_add_attr(g, conv, "pads", PP_ATTR_INTS);
    a->n = 4;
    a->ints = pp_arena_array(g->arena, 4, sizeof(int64_t));
    for (int i = 0; i < 4; i++) a->ints[i] = 1;
    a = pp_node_add_attr(g, conv, "kernel_shape", PP_ATTR_INTS);
    a->n = 2;
    a->ints = pp_arena_array(g->arena, 2, sizeof(int64_t));
    a->ints[0] = a->ints[1] = 3;
    pp_graph_add_node(g, "relu", "Relu", "", ri, 1, ro, 1);
    return finish_model(g, x);
}

/* x[dims] -> op -> y: one element-wise node, as a layer row of op describes it */
static perfpred_model *unary_model(const char *op, int rank, const int64_t *dims)
{
    pp_graph *g = pp_graph_new("unary.onnx");
    g->opset = 20; /* Gelu */
    int x = pp_graph_tensor(g, "x");
    pp_tensor_set_shape(&g->tensors[x], PP_DT_FLOAT, rank, dims);
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    const char *in[] = {"x"}, *out[] = {"y"};
    pp_graph_add_node(g, "op", op, "", in, 1, out, 1);
    return finish_model(g, x);
}

static void roofline_should_match_hand_computation(void **state)
{
    perfpred_ctx *ctx = open_toy();
    perfpred_model *m = matmul_model(1024, 1024);
    perfpred_prediction p;
    char err[512];
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", NULL, &p, err, sizeof err), PERFPRED_OK);
    /* flops = 2*1*1024*1024 = 2,097,152 -> 0.2097 us at 10 TFLOP/s;
     * bytes = x 4096 + W 4,194,304 + y 4096 = 4,202,496 -> 4.202496 us at 1000 GB/s (bound);
     * + 5 us launch = 9.202496 us */
    assert_rel_close(p.latency_ms.value, 9.202496e-3, 1e-9);
    assert_int_equal(p.latency_ms.prov, PERFPRED_PROV_ESTIMATE);
    assert_int_equal(p.n_kernels, 1);
    /* busy fraction = roofline / predicted = 1: P = max power 250 W; 250 W x 9.202496 us */
    assert_rel_close(p.energy_mj.value, 250.0 * 9.202496e-3, 1e-9);
    assert_int_equal(p.energy_mj.prov, PERFPRED_PROV_ESTIMATE);
    /* weights 4 MiB + live x and y 8192 B + workspace 10 MiB + runtime 100 MiB */
    assert_rel_close(p.peak_memory_bytes.value, 4194304.0 + 8192.0 + 110.0 * 1048576.0, 1e-12);
    assert_rel_close(p.memory_capacity_bytes, 16.0 * 1073741824.0, 1e-12);
    assert_true(p.fits_in_memory);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* A pooling kernel on an eager-PyTorch CPU is priced at the clock of each core (its work passed as
 * its loop's clocks, pp_lm_torch_cpu_pool_clocks): 1,806,336 clocks on 2 cores of 2.5 GHz take
 * 1,806,336 / 5e9 s = 0.3612672 ms, above its memory time (4,014,080 bytes at 25 GB/s: 0.1605632
 * ms), + 1 us of dispatch; on the same CPU under another runtime, or as an element-wise kernel,
 * the FMA peak (0.2 TFLOP/s: 0.009 ms) leaves the memory time. */
static void pooling_should_walk_windows_at_the_clock_on_eager_cpus(void **state)
{
    (void)state;
    pp_device d = {0};
    d.kind = PP_DEV_CPU;
    d.runtime_framework = "pytorch-eager";
    d.peak_tflops[PP_PREC_FP32] = 0.2;
    d.memory_bandwidth_gbs = 25;
    d.clock_mhz = 2500;
    d.compute_units = 2;
    d.launch_overhead_us = 1;
    int mb = -1;
    assert_rel_close(pp_roofline_ms(&d, PP_OPK_POOL, 1806336, 4014080, &mb), 0.3612672 + 1e-3,
                     1e-12);
    assert_int_equal(mb, 0);
    assert_rel_close(pp_roofline_ms(&d, PP_OPK_ELEMWISE, 1806336, 4014080, &mb),
                     0.1605632 + 1e-3, 1e-12);
    assert_int_equal(mb, 1);
    d.runtime_framework = "onnxruntime";
    assert_rel_close(pp_roofline_ms(&d, PP_OPK_POOL, 1806336, 4014080, &mb), 0.1605632 + 1e-3,
                     1e-12);
}

/* The same through a prediction: a 3x3 MaxPool at stride 2, pads 1, over 1x64x112x112 on toy-cpu
 * (eager PyTorch, 2 cores of 2.5 GHz, no layer models): 200,704 outputs of 44.434524 clocks
 * (8 + 9 + (H(9) - 1) x 15, H(9) = 7129/2520), 8,918,186.67 clocks at 5e9 a second = 1.7836373 ms,
 * + 1 us of dispatch; the memory time (4,014,080 bytes at 25 GB/s, 0.16 ms) is below it. */
static void a_maxpool_on_an_eager_cpu_should_cost_its_loop(void **state)
{
    (void)state;
    pp_graph *g = pp_graph_new("maxpool.onnx");
    int x = pp_graph_tensor(g, "x");
    const int64_t dims[4] = {1, 64, 112, 112};
    pp_tensor_set_shape(&g->tensors[x], PP_DT_FLOAT, 4, dims);
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    const char *in[] = {"x"}, *out[] = {"y"};
    int pool = pp_graph_add_node(g, "pool", "MaxPool", "", in, 1, out, 1);
    const char *names[3] = {"kernel_shape", "strides", "pads"};
    const int64_t vals[3] = {3, 2, 1};
    for (int k = 0; k < 3; k++) {
        pp_attr *a = pp_node_add_attr(g, pool, names[k], PP_ATTR_INTS);
        a->n = k == 2 ? 4 : 2;
        a->ints = pp_arena_array(g->arena, (size_t)a->n, sizeof(int64_t));
        for (int i = 0; i < a->n; i++) a->ints[i] = vals[k];
    }
    perfpred_model *m = finish_model(g, x);
    perfpred_ctx *ctx = open_toy();
    perfpred_prediction p;
    char err[512];
    assert_int_equal(perfpred_predict(ctx, m, "toy-cpu", NULL, &p, err, sizeof err), PERFPRED_OK);
    assert_int_equal(p.n_kernels, 1);
    assert_rel_close(p.latency_ms.value, 1.7836373333333333 + 1e-3, 1e-6);
    assert_int_equal(p.latency_ms.prov, PERFPRED_PROV_ESTIMATE);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* x[1x40x24x24] -> Conv (k x k, pads k/2, group g, no bias) -> y */
static perfpred_model *cpu_conv_model(int k, int group)
{
    pp_graph *g = pp_graph_new("conv.onnx");
    int x = pp_graph_tensor(g, "x"), w = pp_graph_tensor(g, "W");
    int64_t dx[] = {1, 40, 24, 24}, dw[] = {40, 40 / group, k, k};
    pp_tensor_set_shape(&g->tensors[x], PP_DT_FLOAT, 4, dx);
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    pp_tensor_set_shape(&g->tensors[w], PP_DT_FLOAT, 4, dw);
    g->tensors[w].flags |= PP_T_INITIALIZER | PP_T_WEIGHT;
    const char *ci[] = {"x", "W"}, *co[] = {"y"};
    int conv = pp_graph_add_node(g, "conv", "Conv", "", ci, 2, co, 1);
    const char *names[3] = {"kernel_shape", "pads", "group"};
    for (int n = 0; n < 3; n++) {
        pp_attr *a = pp_node_add_attr(g, conv, names[n], n == 2 ? PP_ATTR_INT : PP_ATTR_INTS);
        if (n == 2) {
            a->i = group;
            continue;
        }
        a->n = n == 1 ? 4 : 2;
        a->ints = pp_arena_array(g->arena, (size_t)a->n, sizeof(int64_t));
        for (int i = 0; i < a->n; i++) a->ints[i] = n == 1 ? k / 2 : k;
    }
    return finish_model(g, x);
}

/* A convolution eager PyTorch hands oneDNN costs the descriptor's conv_call_us a call however
 * small. A 3x3 depthwise convolution over 1x40x24x24: 414,720 flops (0.0020736 ms at 0.2
 * TFLOP/s) and 92,160 + 92,160 + 1,440 bytes (0.0074304 ms at 25 GB/s), so 0.0374304 ms on
 * toy-cpu-conv (30 us a call) and 0.0084304 ms on toy-cpu (1 us of dispatch, no call stated). A
 * 1x1 convolution at batch 1 runs in the BLAS path, no oneDNN call: 1,843,200 flops (0.009216 ms at
 * the FMA peak, toy-cpu stating no BLAS rate) against 190,720 bytes (0.0076288 ms), + 1 us on
 * both. */
static void a_onednn_conv_on_an_eager_cpu_should_cost_its_call(void **state)
{
    (void)state;
    perfpred_ctx *ctx = open_toy();
    perfpred_model *dw = cpu_conv_model(3, 40), *one = cpu_conv_model(1, 1);
    perfpred_prediction p;
    char err[512];
    assert_int_equal(perfpred_predict(ctx, dw, "toy-cpu-conv", NULL, &p, err, sizeof err),
                     PERFPRED_OK);
    assert_int_equal(p.n_kernels, 1);
    assert_rel_close(p.latency_ms.value, 0.0074304 + 0.030, 1e-9);
    assert_int_equal(perfpred_predict(ctx, dw, "toy-cpu", NULL, &p, err, sizeof err), PERFPRED_OK);
    assert_rel_close(p.latency_ms.value, 0.0074304 + 0.001, 1e-9);
    assert_int_equal(perfpred_predict(ctx, one, "toy-cpu-conv", NULL, &p, err, sizeof err),
                     PERFPRED_OK);
    assert_rel_close(p.latency_ms.value, 0.009216 + 0.001, 1e-9);
    perfpred_model_free(dw);
    perfpred_model_free(one);
    perfpred_ctx_close(ctx);
}

static void fusion_rule_should_merge_conv_and_relu(void **state)
{
    perfpred_ctx *ctx = open_toy();
    perfpred_model *m = conv_relu_model();
    perfpred_kernel ks[4];
    int nk = 0;
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.kernels = ks;
    pp.kernels_cap = 4;
    pp.n_kernels = &nk;
    perfpred_prediction fused, plain;
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", &pp, &fused, NULL, 0), PERFPRED_OK);
    assert_int_equal(nk, 1);
    assert_string_equal(ks[0].ops, "Conv+Relu");
    /* the fused kernel reads x (768 B) and W (432 B) and writes y (1024 B): c stays on chip */
    assert_rel_close(ks[0].bytes, 768.0 + 432.0 + 1024.0, 1e-12);
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu-nofuse", &pp, &plain, NULL, 0), PERFPRED_OK);
    assert_int_equal(nk, 2);
    assert_string_equal(ks[0].ops, "Conv");
    assert_string_equal(ks[1].ops, "Relu");
    /* one launch fewer and less traffic */
    assert_true(fused.latency_ms.value < plain.latency_ms.value);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* Counts kernels whose op list is exactly ops. */
static int count_ops(const perfpred_kernel *ks, int n, const char *ops)
{
    int c = 0;
    for (int i = 0; i < n; i++) c += strcmp(ks[i].ops, ops) == 0;
    return c;
}

/* A model of tests/fixtures/models at batch 1. */
static perfpred_model *fixture_b1(const char *file)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/tests/fixtures/models/%s", PP_SOURCE_DIR, file);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1;
    perfpred_status st;
    perfpred_model *m = perfpred_model_load(path, &mp, &st, err, sizeof err);
    if (!m) fail_msg("%s", err);
    return m;
}

/* host-cpu's composite_ops on real exports: every GELU (torchvision convnext_tiny has 18 nn.GELU)
 * and SiLU (efficientnet_b0: 49 nn.SiLU) becomes one kernel, while the 16 squeeze-excitation gates
 * (x * sigmoid(s), nn.Sigmoid then a multiply by a different tensor) stay a Sigmoid and a Mul. */
static void copy_file(const char *from, const char *to, long flip_at)
{
    uint8_t *b;
    size_t n;
    assert_int_equal(pp_read_file(from, &b, &n, NULL), PERFPRED_OK);
    if (flip_at >= 0 && (size_t)flip_at < n) b[flip_at] ^= 0x5a;
    pp_test_write_bytes(to, b, n);
    free(b);
}

/* Writes "spread_gate": [gate] into the GNN manifest at path (one target). */
static void set_spread_gate(const char *path, double gate)
{
    uint8_t *mb;
    size_t ml;
    assert_int_equal(pp_read_file(path, &mb, &ml, NULL), PERFPRED_OK);
    cJSON *root = cJSON_ParseWithLength((const char *)mb, ml);
    free(mb);
    assert_non_null(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "spread_gate");
    cJSON *arr = cJSON_AddArrayToObject(root, "spread_gate");
    cJSON_AddItemToArray(arr, cJSON_CreateNumber(gate));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    pp_test_write_text(path, text);
    free(text);
}

/* A device's GNN correction is read when a prediction first needs it, not at context open: with
 * one member of epyc's five-GNN ensemble corrupted, the context opens, other devices predict, the
 * device still reports its correction, and only a corrected prediction on it fails, naming the
 * file; its layer sum alone still answers. */
static void gnn_correction_should_load_when_first_needed(void **state)
{
    (void)state;
    char dir[1024], sub[1100], from[1200], to[1200];
    snprintf(dir, sizeof dir, "%s/pp_lazy_gnn_%ld", PP_BINARY_DIR, (long)getpid());
    snprintf(sub, sizeof sub, "%s/artifacts", dir);
    mkdir(dir, 0755);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/artifacts/epyc-kvm-2vcpu", dir);
    mkdir(sub, 0755);
    snprintf(to, sizeof to, "%s/devices", dir);
    unlink(to);
    assert_int_equal(symlink(pp_test_path("configs/devices"), to), 0);
    static const char *const files[] = {"gnn-latency", "gnn-latency.2", "gnn-latency.3",
                                        "gnn-latency.4", "gnn-latency.5"};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++) {
            const char *ext = j ? ".json" : ".bin";
            snprintf(from, sizeof from, "%s/%s%s",
                     pp_test_path("configs/artifacts/epyc-kvm-2vcpu"), files[i], ext);
            snprintf(to, sizeof to, "%s/%s%s", sub, files[i], ext);
            copy_file(from, to, i == 3 && !j ? 200 : -1); /* a weight of member 4 */
        }
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = dir;
    char err[1024] = "";
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    if (!ctx) print_error("%s\n", err);
    assert_non_null(ctx);
    perfpred_device_info info;
    assert_int_equal(perfpred_device_find(ctx, "epyc-kvm-2vcpu", &info), PERFPRED_OK);
    assert_true(info.graph_correction);
    assert_non_null(strstr(info.calibration_source, "mean of 5 GNNs"));
    perfpred_model *m = fixture_b1("resnet18.onnx");
    perfpred_prediction pr;
    assert_int_equal(perfpred_predict(ctx, m, "host-cpu", NULL, &pr, err, sizeof err),
                     PERFPRED_OK);
    for (int k = 0; k < 2; k++) { /* the failure is remembered, not retried into another answer */
        err[0] = 0;
        assert_int_not_equal(perfpred_predict(ctx, m, "epyc-kvm-2vcpu", NULL, &pr, err, sizeof err),
                             PERFPRED_OK);
        assert_non_null(strstr(err, "gnn-latency.4.bin"));
    }
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.layer_sum_only = 1;
    assert_int_equal(perfpred_predict(ctx, m, "epyc-kvm-2vcpu", &pp, &pr, err, sizeof err),
                     PERFPRED_OK);
    perfpred_ctx_close(ctx);
    /* repaired, the five answer: the corrected latency is not the layer sum */
    snprintf(from, sizeof from, "%s/gnn-latency.4.bin",
             pp_test_path("configs/artifacts/epyc-kvm-2vcpu"));
    snprintf(to, sizeof to, "%s/gnn-latency.4.bin", sub);
    copy_file(from, to, -1);
    ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    assert_non_null(ctx);
    perfpred_prediction a, b;
    assert_int_equal(perfpred_predict(ctx, m, "epyc-kvm-2vcpu", NULL, &a, err, sizeof err),
                     PERFPRED_OK);
    assert_int_equal(perfpred_predict(ctx, m, "epyc-kvm-2vcpu", &pp, &b, err, sizeof err),
                     PERFPRED_OK);
    assert_true(isfinite(a.latency_ms.value) && a.latency_ms.value > 0);
    assert_true(a.latency_ms.value != b.latency_ms.value);
    assert_non_null(strstr(a.latency_ms.source, "mean of 5 GNNs"));
    /* the members one by one: the mean correction lies between the smallest and the largest */
    assert_int_equal(a.correction_members, 5);
    assert_true(a.latency_members_lo_ms < a.latency_members_hi_ms);
    assert_true(a.latency_members_lo_ms <= a.latency_ms.value &&
                a.latency_ms.value <= a.latency_members_hi_ms);
    assert_int_equal(b.correction_members, 0);
    assert_true(isnan(b.latency_members_lo_ms) && isnan(b.latency_members_hi_ms));
    assert_false(a.correction_gated);
    perfpred_ctx_close(ctx);
    /* a gate narrower than this network's spread: what answers without the correction (here the
     * layer sum), the members still reported; a wide gate: the corrected figure again */
    snprintf(to, sizeof to, "%s/gnn-latency.json", sub);
    for (int k = 0; k < 2; k++) {
        set_spread_gate(to, k ? 1e9 : 1e-9);
        ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
        assert_non_null(ctx);
        perfpred_prediction c;
        assert_int_equal(perfpred_predict(ctx, m, "epyc-kvm-2vcpu", NULL, &c, err, sizeof err),
                         PERFPRED_OK);
        assert_int_equal(c.correction_gated, !k);
        assert_true(c.latency_ms.value == (k ? a : b).latency_ms.value);
        assert_int_equal(c.correction_members, 5);
        assert_true(c.latency_members_lo_ms == a.latency_members_lo_ms &&
                    c.latency_members_hi_ms == a.latency_members_hi_ms);
        perfpred_ctx_close(ctx);
    }
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 2; j++) {
            snprintf(to, sizeof to, "%s/%s%s", sub, files[i], j ? ".json" : ".bin");
            unlink(to);
        }
    snprintf(to, sizeof to, "%s/devices", dir);
    unlink(to);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/artifacts", dir);
    rmdir(sub);
    rmdir(dir);
    perfpred_model_free(m);
}

static void composite_ops_should_fuse_decomposed_activations_only(void **state)
{
    (void)state;
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, NULL, 0);
    assert_non_null(ctx);
    static perfpred_kernel ks[1024];
    int nk = 0;
    perfpred_predict_params pp = pp_test_kernels_into(ks, 1024, &nk);
    perfpred_model *m[3] = {fixture_b1("efficientnet_b0.onnx"), fixture_b1("convnext_tiny.onnx"),
                            fixture_b1("vit_b_32.onnx")};
    perfpred_prediction pr;
    assert_int_equal(perfpred_predict(ctx, m[0], "host-cpu", &pp, &pr, NULL, 0), PERFPRED_OK);
    assert_true(nk < 1024);
    assert_int_equal(count_ops(ks, nk, "Sigmoid+Mul"), 49);
    assert_int_equal(count_ops(ks, nk, "Sigmoid"), 16);
    assert_int_equal(count_ops(ks, nk, "Mul"), 16);
    /* one eager kernel reads x once and writes x * sigmoid(x): the stem's SiLU, 32 x 112 x 112
     * floats, moves 2 x 4 x 401,408 bytes (its Sigmoid and Mul alone: 3 passes) */
    int silu = -1;
    for (int i = 0; i < nk && silu < 0; i++)
        if (strcmp(ks[i].ops, "Sigmoid+Mul") == 0) silu = i;
    assert_true(silu >= 0);
    assert_rel_close(ks[silu].bytes, 3211264.0, 1e-12);
    assert_int_equal(perfpred_predict(ctx, m[1], "host-cpu", &pp, &pr, NULL, 0), PERFPRED_OK);
    assert_int_equal(count_ops(ks, nk, "Div+Erf+Add+Mul+Mul"), 18);
    assert_int_equal(count_ops(ks, nk, "Erf"), 0);
    /* the first GELU (56 x 56 x 384 floats): x read once by its Div and its Mul, y written */
    for (int i = 0; i < nk; i++)
        if (strcmp(ks[i].ops, "Div+Erf+Add+Mul+Mul") == 0) {
            assert_rel_close(ks[i].bytes, 2.0 * 4 * 56 * 56 * 384, 1e-12);
            break;
        }
    /* nn.Linear's bias joins the matmul only for inputs of rank <= 3 (PyTorch's addmm); convnext's
     * 36 linears (18 blocks x 2) take channels-last 4-D inputs: a MatMul and an Add each */
    assert_int_equal(count_ops(ks, nk, "MatMul+Add"), 0);
    assert_int_equal(count_ops(ks, nk, "MatMul"), 36);
    /* a device without composite rules keeps the decomposition: five kernels per GELU */
    assert_int_equal(perfpred_predict(ctx, m[1], "rpi4", &pp, &pr, NULL, 0), PERFPRED_OK);
    assert_int_equal(count_ops(ks, nk, "Erf"), 18);
    assert_int_equal(count_ops(ks, nk, "Div+Erf+Add+Mul+Mul"), 0);
    /* ViT's linears take 3-D token inputs: the bias rides along, at least in the 12 layers' two
     * MLP linears each (the MatMuls left alone are attention's products of two activations) */
    assert_int_equal(perfpred_predict(ctx, m[2], "host-cpu", &pp, &pr, NULL, 0), PERFPRED_OK);
    assert_true(count_ops(ks, nk, "MatMul+Add") >= 24);
    for (int i = 0; i < nk; i++)
        if (strcmp(ks[i].ops, "MatMul") == 0) assert_string_equal(ks[i].kind, "bmm");
    for (int i = 0; i < 3; i++) perfpred_model_free(m[i]);
    perfpred_ctx_close(ctx);
}

/* A composite op is timed as the one operator PyTorch runs where the device's layer models know
 * that operator: the A100's (NeuSight's kernels) have GELU rows, so each of convnext_tiny's GELUs
 * (exported as Div, Erf, Add, Mul, Mul) costs what a Gelu node of its input costs; host-cpu's have
 * no GELU row, and the chain keeps its first node's time. */
static void composite_op_should_be_timed_as_its_one_operator(void **state)
{
    (void)state;
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, NULL, 0);
    assert_non_null(ctx);
    static perfpred_kernel ks[1024];
    int nk = 0;
    perfpred_predict_params pp = pp_test_kernels_into(ks, 1024, &nk);
    char err[512];
    perfpred_model *m = fixture_b1("convnext_tiny.onnx");
    perfpred_prediction pr;
    assert_int_equal(perfpred_predict(ctx, m, "a100-pcie-40gb", &pp, &pr, err, sizeof err),
                     PERFPRED_OK);
    assert_int_equal(count_ops(ks, nk, "Div+Erf+Add+Mul+Mul=Gelu"), 18);
    int first = -1;
    for (int i = 0; i < nk && first < 0; i++)
        if (strcmp(ks[i].ops, "Div+Erf+Add+Mul+Mul=Gelu") == 0) first = i;
    assert_int_equal(ks[first].prov, PERFPRED_PROV_CALIBRATED);
    /* the first GELU: stage 1's MLP, channels last, 384 = 4 x 96 channels at 56 x 56 */
    const int64_t dims[] = {1, 56, 56, 384};
    perfpred_model *gelu = unary_model("Gelu", 4, dims);
    perfpred_kernel one[2];
    int n1 = 0;
    perfpred_predict_params p1 = pp_test_kernels_into(one, 2, &n1);
    perfpred_prediction pg;
    assert_int_equal(perfpred_predict(ctx, gelu, "a100-pcie-40gb", &p1, &pg, err, sizeof err),
                     PERFPRED_OK);
    assert_int_equal(n1, 1);
    assert_int_equal(one[0].prov, PERFPRED_PROV_CALIBRATED);
    assert_rel_close(ks[first].latency_ms, one[0].latency_ms, 1e-12);
    assert_int_equal(perfpred_predict(ctx, m, "host-cpu", &pp, &pr, err, sizeof err), PERFPRED_OK);
    assert_int_equal(count_ops(ks, nk, "Div+Erf+Add+Mul+Mul"), 18);
    perfpred_model_free(gelu);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

static void habitat_scaling_should_follow_bandwidth_and_sms(void **state)
{
    perfpred_ctx *ctx = open_toy();
    (void)ctx;
    pp_device big = {0}, small = {0};
    big.peak_tflops[PP_PREC_FP32] = 10;
    big.memory_bandwidth_gbs = 1000;
    big.compute_units = 70;
    big.clock_mhz = 1000;
    small = big;
    small.memory_bandwidth_gbs = 125;                 /* m = 1 of 8 */
    small.compute_units = 10;                         /* g = 1 of 7 ... */
    small.peak_tflops[PP_PREC_FP32] = 10.0 * 10 / 70; /* ... and its share of the FLOP/s */
    /* ai = 0: g = 1, pure bandwidth ratio 8 */
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &small, 0.0, 7e5), 8.0, 1e-12);
    /* ridge = 10e12 / 1e12 = 10 FLOP/B; ai = 10: g = 0.5 -> 8^0.5 * 7^0.5 (7e5 blocks: 1e4 waves
     * on 70 SMs, 7e4 on 10, the SM ratio exactly) */
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &small, 10.0, 7e5), sqrt(8.0 * 7.0), 1e-12);
    /* 71 blocks: 2 waves on 70 SMs, 8 on 10: the compute term is 4, not 7 */
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &small, 10.0, 71), sqrt(8.0 * 4.0), 1e-12);
    /* less than one wave on the slice (5 blocks <= 10 SMs): the SM term is 1 */
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &small, 10.0, 5), sqrt(8.0), 1e-12);
    /* another architecture: same SMs and clock, twice the fp32 lanes per SM -> the compute term
     * follows FLOP/s (ai huge: g -> 0) */
    pp_device wide = big;
    wide.peak_tflops[PP_PREC_FP32] = 20;
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &wide, 1e12, 7e5), 0.5, 1e-9);

    /* two CPUs with measured GEMM rates: a GEMM kernel's compute follows them (95 vs 33 GFLOP/s:
     * 95 / 33 slower on the second), a convolution the FMA peaks (equal here: 1), and without a
     * GEMM figure on either side the GEMM kernel falls back to the peaks */
    pp_device cpu_a = {0}, cpu_b = {0};
    cpu_a.kind = cpu_b.kind = PP_DEV_CPU;
    cpu_a.peak_tflops[PP_PREC_FP32] = cpu_b.peak_tflops[PP_PREC_FP32] = 0.2;
    cpu_a.memory_bandwidth_gbs = cpu_b.memory_bandwidth_gbs = 25;
    cpu_a.gemm_gflops = 95;
    cpu_b.gemm_gflops = 33;
    assert_rel_close(pp_scale_kernel_time_blas(1.0, &cpu_a, &cpu_b, 1e12, 0, 1),
                     95.0 / 33.0, 1e-9);
    assert_rel_close(pp_scale_kernel_time_blas(1.0, &cpu_a, &cpu_b, 1e12, 0, 1),
                     95.0 / 33.0, 1e-9);
    assert_rel_close(pp_scale_kernel_time_blas(1.0, &cpu_a, &cpu_b, 1e12, 0, 0), 1.0,
                     1e-9);
    /* ai = 0: g = 1, the bandwidth ratio alone (1) whatever the GEMM rates */
    assert_rel_close(pp_scale_kernel_time_blas(1.0, &cpu_a, &cpu_b, 0.0, 0, 1), 1.0,
                     1e-12);
    cpu_b.gemm_gflops = 0;
    assert_rel_close(pp_scale_kernel_time_blas(1.0, &cpu_a, &cpu_b, 1e12, 0, 1), 1.0,
                     1e-9);

    /* memory-boundness at the ridge is one half, and falls with intensity */
    assert_rel_close(pp_memory_boundness(10, 10), 0.5, 1e-12);
    assert_true(pp_memory_boundness(100, 10) < pp_memory_boundness(1, 10));
    perfpred_ctx_close(ctx);
}

static void mig_latency_should_be_monotone_in_slices(void **state)
{
    perfpred_ctx *ctx = open_toy();
    perfpred_model *m = matmul_model(4096, 4096);
    const char *order[] = {"toy-gpu-mig-1g.2gb", "toy-gpu-mig-1g.4gb", "toy-gpu-mig-2g.4gb",
                           "toy-gpu-mig-7g.16gb"};
    double prev = INFINITY;
    for (int i = 0; i < 4; i++) {
        perfpred_prediction p;
        char err[512];
        perfpred_status st = perfpred_predict(ctx, m, order[i], NULL, &p, err, sizeof err);
        if (st) print_error("%s\n", err);
        assert_int_equal(st, PERFPRED_OK);
        assert_true(p.latency_ms.value <= prev);
        prev = p.latency_ms.value;
    }
    /* the 7g slice has every SM and all bandwidth of the toy: same time as the whole GPU */
    perfpred_prediction whole;
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", NULL, &whole, NULL, 0), PERFPRED_OK);
    assert_rel_close(prev, whole.latency_ms.value, 1e-12);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

static void mig_advice_should_pick_smallest_fitting_and_slo_profiles(void **state)
{
    perfpred_ctx *ctx = open_toy();
    /* W = 32768 x 16384 fp32 = 2 GiB: too big for 1g.2gb, fits the 4 GiB profiles */
    perfpred_model *m = matmul_model(32768, 16384);
    perfpred_mig_advice a;
    char err[512];
    assert_int_equal(perfpred_mig_advise(ctx, m, "toy-gpu", 0, &a, err, sizeof err), PERFPRED_OK);
    assert_int_equal(a.n_options, 4);
    assert_string_equal(a.options[0].device.name, "toy-gpu-mig-1g.2gb");
    assert_false(a.options[0].fits);
    assert_int_equal(a.options[0].instances, 0);
    assert_int_equal(a.dippm_choice, 1);
    assert_string_equal(a.options[1].device.name, "toy-gpu-mig-1g.4gb");
    /* 1g.4gb: min(7/1, 8/2) = 4 instances */
    assert_int_equal(a.options[1].instances, 4);
    assert_int_equal(a.slo_choice, -1);
    /* an SLO equal to the 2g.4gb latency: the first profile that meets it is 2g.4gb */
    double slo = a.options[2].pred.latency_ms.value;
    assert_string_equal(a.options[2].device.name, "toy-gpu-mig-2g.4gb");
    assert_true(a.options[1].pred.latency_ms.value > slo);
    assert_int_equal(perfpred_mig_advise(ctx, m, "toy-gpu", slo, &a, err, sizeof err), PERFPRED_OK);
    assert_int_equal(a.slo_choice, 2);
    /* 2g.4gb: min(7/2, 8/2) = 3 instances; 7g.16gb meets it too but hosts 1 */
    assert_int_equal(a.max_instances_under_slo, 3);
    /* an impossible SLO */
    assert_int_equal(perfpred_mig_advise(ctx, m, "toy-gpu", 1e-9, &a, err, sizeof err), PERFPRED_OK);
    assert_int_equal(a.slo_choice, -1);
    assert_int_equal(a.max_instances_under_slo, 0);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

static void missing_figures_should_make_latency_unavailable(void **state)
{
    perfpred_ctx *ctx = open_toy();
    perfpred_model *m = matmul_model(64, 64);
    perfpred_prediction p;
    assert_int_equal(perfpred_predict(ctx, m, "toy-board", NULL, &p, NULL, 0), PERFPRED_OK);
    assert_true(isnan(p.latency_ms.value));
    assert_int_equal(p.latency_ms.prov, PERFPRED_PROV_UNAVAILABLE);
    assert_int_equal(p.energy_mj.prov, PERFPRED_PROV_UNAVAILABLE);
    /* memory needs no rates: still estimated */
    assert_int_equal(p.peak_memory_bytes.prov, PERFPRED_PROV_ESTIMATE);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

static void unknown_device_should_be_named_in_error(void **state)
{
    perfpred_ctx *ctx = open_toy();
    perfpred_model *m = matmul_model(8, 8);
    perfpred_prediction p;
    char err[512] = "";
    assert_int_equal(perfpred_predict(ctx, m, "no-such-gpu", NULL, &p, err, sizeof err),
                     PERFPRED_ERR_DEVICE);
    assert_non_null(strstr(err, "no-such-gpu"));
    assert_int_equal(perfpred_mig_advise(ctx, m, "toy-board", 0, NULL, err, sizeof err),
                     PERFPRED_ERR_INVALID_ARG);
    perfpred_mig_advice a;
    assert_int_equal(perfpred_mig_advise(ctx, m, "toy-board", 0, &a, err, sizeof err),
                     PERFPRED_ERR_DEVICE);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

typedef struct thread_job {
    perfpred_ctx *ctx;
    perfpred_model *m;
    double lat[8];
    int failures;
} thread_job;

static const char *const thread_devices[8] = {
    "toy-gpu", "toy-gpu-nofuse", "toy-gpu-mig-1g.2gb", "toy-gpu-mig-1g.4gb",
    "toy-gpu-mig-2g.4gb", "toy-gpu-mig-7g.16gb", "toy-gpu", "toy-gpu-mig-2g.4gb"};

static void *thread_main(void *arg)
{
    thread_job *j = arg;
    for (int rep = 0; rep < 50; rep++)
        for (int d = 0; d < 8; d++) {
            perfpred_prediction p;
            perfpred_kernel ks[8];
            int nk;
            perfpred_predict_params pp = perfpred_predict_default_params();
            pp.kernels = ks;
            pp.kernels_cap = 8;
            pp.n_kernels = &nk;
            if (perfpred_predict(j->ctx, j->m, thread_devices[d], &pp, &p, NULL, 0)) j->failures++;
            else if (rep == 0) j->lat[d] = p.latency_ms.value;
            else if (memcmp(&j->lat[d], &p.latency_ms.value, sizeof(double)) != 0) j->failures++;
        }
    return NULL;
}

static void concurrent_predictions_should_be_identical(void **state)
{
    perfpred_ctx *ctx = open_toy();
    perfpred_model *m = conv_relu_model();
    thread_job base = {ctx, m, {0}, 0};
    thread_main(&base);
    assert_int_equal(base.failures, 0);
    pthread_t th[4];
    thread_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (thread_job){ctx, m, {0}, 0};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].failures, 0);
        assert_memory_equal(jobs[i].lat, base.lat, sizeof base.lat);
    }
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* Real devices whose first prediction loads artifacts lazily, under the context's locks: GNN
 * corrections (rpi5's single model, epyc-kvm-2vcpu's ensemble of five), XGBoost layer models with
 * an overhead correction (host-cpu), and a MIG slice of a NeuSight-calibrated A100. Eight threads
 * start on a fresh context, so they race for those first loads; every answer must equal the one a
 * single thread gets on another context. Built with -fsanitize=thread by scripts/test.sh. */
static const char *const real_devices[5] = {"rpi5", "epyc-kvm-2vcpu", "host-cpu", "a100-mig-3g",
                                            "rpi4"};

typedef struct real_job {
    perfpred_ctx *ctx;
    perfpred_model *m;
    int first;          /* device to start from, so threads reach each one in another order */
    double lat[5];
    int failures;
} real_job;

static void *real_thread_main(void *arg)
{
    real_job *j = arg;
    for (int rep = 0; rep < 3; rep++)
        for (int k = 0; k < 5; k++) {
            int d = (j->first + k) % 5;
            perfpred_prediction p;
            if (perfpred_predict(j->ctx, j->m, real_devices[d], NULL, &p, NULL, 0)) j->failures++;
            else if (rep == 0) j->lat[d] = p.latency_ms.value;
            else if (memcmp(&j->lat[d], &p.latency_ms.value, sizeof(double)) != 0) j->failures++;
        }
    return NULL;
}

static perfpred_ctx *open_real(void) { return open_dir(pp_test_path("configs")); }

static void concurrent_first_predictions_should_match_a_single_thread(void **state)
{
    perfpred_model *m = fixture_b1("resnet18.onnx");
    perfpred_ctx *ref = open_real();
    real_job base = {ref, m, 0, {0}, 0};
    real_thread_main(&base);
    assert_int_equal(base.failures, 0);
    perfpred_ctx_close(ref);
    perfpred_ctx *ctx = open_real();
    enum { NT = 8 };
    pthread_t th[NT];
    real_job jobs[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (real_job){ctx, m, i % 5, {0}, 0};
        assert_int_equal(pthread_create(&th[i], NULL, real_thread_main, &jobs[i]), 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].failures, 0);
        assert_memory_equal(jobs[i].lat, base.lat, sizeof base.lat);
    }
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* A descriptor within every range whose figures still overflow the roofline (a peak of 1e-307
 * TFLOP/s): the latency would be inf and the energy NaN, which perfpred_predict returned as an
 * answer (the CLI printed null and exited 0); it is now an error naming the file. */
static void predict_should_refuse_a_non_finite_result(void **state)
{
    char dir[4096], sub[4200];
    snprintf(dir, sizeof dir, "%s/pp_nonfinite_%d", PP_BINARY_DIR, (int)getpid());
    snprintf(sub, sizeof sub, "%s/devices", dir);
    mkdir(dir, 0755);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/devices/tiny.yaml", dir);
    pp_test_write_text(sub, "name: tiny-gpu\ndescription: figures at the bottom of their ranges\n"
                            "vendor: test\nkind: gpu\nhardware:\n"
                            "  peak_tflops: {fp32: 1e-307}\n  memory_bandwidth_gbs: 1e-307\n"
                            "  memory_gb: 16\n  idle_power_w: 50\n  max_power_w: 250\n"
                            "runtime: {framework: pytorch-eager, precision: fp32}\n");
    perfpred_ctx *ctx = open_dir(dir);
    char err[1024] = "";
    perfpred_model *m = fixture_b1("resnet18.onnx");
    perfpred_prediction pr;
    assert_int_equal(perfpred_predict(ctx, m, "tiny-gpu", NULL, &pr, err, sizeof err),
                     PERFPRED_ERR_DEVICE);
    assert_non_null(strstr(err, "tiny.yaml"));
    assert_non_null(strstr(err, "is not finite"));
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    unlink(sub);
    snprintf(sub, sizeof sub, "%s/devices", dir);
    rmdir(sub);
    rmdir(dir);
}

/* pp_graph_kernels reads each tensor's single consumer from the graph's links; a graph changed
 * since it was linked (here: marked so) has them counted afresh. Both give the same groups, on
 * models with fusions, composite ops and tensors of several consumers, and on an NB201 network. */
static void kernels_should_be_the_same_from_links_and_from_a_count(void **state)
{
    (void)state;
    static const char *const models[] = {"examples/resnet18.onnx",
                                         "tests/fixtures/models/vit_b_32.onnx",
                                         "tests/fixtures/models/efficientnet_b0.onnx", NULL};
    static const char *const devs[] = {"h100-sxm5-80gb", "rpi4", "rpi4-pytorch", "rpi5-onnxruntime",
                                       "epyc-kvm-2vcpu"};
    pp_err err = {0};
    pp_device_db *db = NULL;
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    int n_fused = 0, n_composite = 0;
    for (int m = 0; m <= 3; m++) {
        pp_graph *g = NULL;
        if (models[m]) {
            pp_shape_opts opts = {.batch = 1};
            assert_int_equal(pp_graph_load_full(pp_test_path(models[m]), &opts, &g, &err),
                             PERFPRED_OK);
        } else {
            pp_nb201_arch a;
            assert_int_equal(pp_nb201_parse("|nor_conv_3x3~0|+|skip_connect~0|nor_conv_1x1~1|+|"
                                            "avg_pool_3x3~0|nor_conv_3x3~1|skip_connect~2|",
                                            &a, &err),
                             PERFPRED_OK);
            pp_nb201_opts o = pp_nb201_default_opts();
            assert_int_equal(pp_build_nb201(&a, &o, &g, &err), PERFPRED_OK);
        }
        assert_int_equal(g->linked_nodes, g->n_nodes);
        for (size_t d = 0; d < sizeof devs / sizeof devs[0]; d++) {
            const pp_device *dev = pp_devices_find(db, devs[d]);
            assert_non_null(dev);
            pp_kernel_group *k1 = NULL, *k2 = NULL;
            int n1 = 0, n2 = 0;
            assert_int_equal(pp_graph_kernels(g, dev, &k1, &n1, &err), PERFPRED_OK);
            int linked = g->linked_nodes;
            g->linked_nodes = -1; /* as if a node had been added since */
            assert_int_equal(pp_graph_kernels(g, dev, &k2, &n2, &err), PERFPRED_OK);
            g->linked_nodes = linked;
            assert_int_equal(n1, n2);
            for (int i = 0; i < n1; i++) {
                assert_int_equal(k1[i].n, k2[i].n);
                assert_memory_equal(k1[i].nodes, k2[i].nodes, sizeof(int) * (size_t)k1[i].n);
                assert_ptr_equal(k1[i].eager_op, k2[i].eager_op);
                n_fused += k1[i].n > 1;
                n_composite += k1[i].eager_op != NULL;
            }
            free(k1);
            free(k2);
        }
        pp_graph_free(g);
    }
    print_message("kernel groups from links and from a count: %d fused, %d composite\n", n_fused,
                  n_composite);
    assert_true(n_fused > 0 && n_composite > 0);
    pp_devices_free(db);
}

/* A convolution whose input channels per group are not a multiple of 4 (TF32) or 8 (fp16) runs
 * off the tensor cores under PyTorch (cuDNN's tensor-core kernels need them; a first layer has 3),
 * on the fp32 lanes; TensorRT pads them and keeps its tensor cores. Device: fp32 10, TF32 40, fp16
 * 80 TFLOP/s, 80 SMs (1,600 blocks: 10 whole waves); efficiencies 1, no feed (share 1): 1 GFLOP
 * takes 0.1 ms on the lanes, 0.025 on TF32, 0.0125 on fp16. */
static void misaligned_channels_should_run_off_the_tensor_cores(void **state)
{
    (void)state;
    pp_stack s = {0};
    s.precision = PP_PREC_FP32;
    s.tf32_conv = 1;
    for (int c = 0; c < PP_SK__COUNT; c++) s.eff[c] = 1;
    pp_stack_set_framework(&s, "pytorch-eager");
    pp_device d = {0};
    d.peak_tflops[PP_PREC_FP32] = 10;
    d.peak_tflops[PP_PREC_TF32] = 40;
    d.peak_tflops[PP_PREC_FP16] = 80;
    d.memory_bandwidth_gbs = 1e9;
    d.compute_units = 80;
    d.compute_capability = 8.0;
    pp_stack_kernel k = {.cls = PP_SK_CONV, .blocks = 1600, .red = 147, .cin_g = 3};
    assert_true(pp_stack_off_tensor_cores(&s, &d, &k));
    assert_rel_close(pp_stack_kernel_peak_tflops(&s, &d, &k), 10, 1e-12);
    assert_rel_close(pp_stack_kernel_gpu_ms(&s, &d, &k, 1e9, 1), 0.1, 1e-9);
    k.cin_g = 64;
    assert_false(pp_stack_off_tensor_cores(&s, &d, &k));
    assert_rel_close(pp_stack_kernel_gpu_ms(&s, &d, &k, 1e9, 1), 0.025, 1e-9);
    /* TensorRT pads a 3-channel input */
    k.cin_g = 3;
    pp_stack_set_framework(&s, "tensorrt");
    assert_false(pp_stack_off_tensor_cores(&s, &d, &k));
    assert_rel_close(pp_stack_kernel_gpu_ms(&s, &d, &k, 1e9, 1), 0.025, 1e-9);
    /* fp16 needs 8: 4 channels run on the lanes, 8 on the tensor cores */
    pp_stack_set_framework(&s, "pytorch-eager");
    s.precision = PP_PREC_FP16;
    k.cin_g = 4;
    assert_true(pp_stack_off_tensor_cores(&s, &d, &k));
    assert_rel_close(pp_stack_kernel_gpu_ms(&s, &d, &k, 1e9, 1), 0.1, 1e-9);
    k.cin_g = 8;
    assert_rel_close(pp_stack_kernel_gpu_ms(&s, &d, &k, 1e9, 1), 0.0125, 1e-9);
    /* no tensor cores for the stack (TF32 off): nothing to run off; a matrix product or a
     * memory pass is never a convolution's case */
    s.precision = PP_PREC_FP32;
    s.tf32_conv = 0;
    k.cin_g = 3;
    assert_false(pp_stack_off_tensor_cores(&s, &d, &k));
    s.tf32_conv = 1;
    k.cls = PP_SK_MATMUL;
    assert_false(pp_stack_off_tensor_cores(&s, &d, &k));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(predict_should_refuse_a_non_finite_result),
        cmocka_unit_test(pooling_should_walk_windows_at_the_clock_on_eager_cpus),
        cmocka_unit_test(a_maxpool_on_an_eager_cpu_should_cost_its_loop),
        cmocka_unit_test(a_onednn_conv_on_an_eager_cpu_should_cost_its_call),
        cmocka_unit_test(roofline_should_match_hand_computation),
        cmocka_unit_test(fusion_rule_should_merge_conv_and_relu),
        cmocka_unit_test(composite_ops_should_fuse_decomposed_activations_only),
        cmocka_unit_test(gnn_correction_should_load_when_first_needed),
        cmocka_unit_test(composite_op_should_be_timed_as_its_one_operator),
        cmocka_unit_test(habitat_scaling_should_follow_bandwidth_and_sms),
        cmocka_unit_test(mig_latency_should_be_monotone_in_slices),
        cmocka_unit_test(mig_advice_should_pick_smallest_fitting_and_slo_profiles),
        cmocka_unit_test(missing_figures_should_make_latency_unavailable),
        cmocka_unit_test(unknown_device_should_be_named_in_error),
        cmocka_unit_test(concurrent_predictions_should_be_identical),
        cmocka_unit_test(concurrent_first_predictions_should_match_a_single_thread),
        cmocka_unit_test(kernels_should_be_the_same_from_links_and_from_a_count),
        cmocka_unit_test(misaligned_channels_should_run_off_the_tensor_cores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
