/* tests/test_stack.c: the GPU runtime stack (predictor/stack.c): the host/GPU pipeline and the wave
 * count worked by hand, the stack artifact's round trip and strictness, predictions under a
 * hand-written stack on a toy GPU, and the framework-tax fit on real rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fit/fit.h"
#include "devices/devices.h"
#include "predictor/predictor.h"
#include "predictor/stack.h"
#include "tests/helpers.h"

/* Three kernels, host 10 us each, GPU 5, 30 and 2 us, one synced call:
 *   k1 issued at 10, runs 10..15; k2 issued at 20, runs 20..50; k3 issued at 30, waits for the
 *   GPU, runs 50..52; + 4 us sync = 56 us. */
static void pipeline_should_match_a_hand_worked_three_kernel_call(void **state)
{
    (void)state;
    double host[3] = {10, 10, 10}, gpu[3] = {0.005, 0.030, 0.002}, busy;
    assert_rel_close(pp_pipeline_ms(host, gpu, 3, 0, 4, 1, &busy), 0.056, 1e-12);
    assert_rel_close(busy, 0.037 / 0.056, 1e-12);
    /* one more host microsecond per call shifts everything that waits on the host */
    assert_rel_close(pp_pipeline_ms(host, gpu, 3, 1, 0, 1, NULL), 0.053, 1e-12);
}

/* The same three kernels under a stack, then replayed as a CUDA graph: 10 us of host each and a
 * 4 us sync give 56 us; the replay keeps the GPU's 5 + 30 + 2 us and the sync, 41 us, and keeps
 * the stack's GPU figures. */
static void graph_replay_should_leave_the_kernels_alone(void **state)
{
    (void)state;
    pp_stack s = {0};
    s.timing_calls = 1;
    s.sync_us = 4;
    for (int c = 0; c < PP_SK__COUNT; c++) s.host_us[c] = 10, s.eff[c] = 0.5;
    s.host_bn_us = 10;
    s.gpu_min_us = 3;
    pp_stack_set_framework(&s, "pytorch-eager");
    pp_device d = {0};
    pp_stack_kernel k[3];
    memset(k, 0, sizeof k);
    const double gpu[3] = {0.005, 0.030, 0.002};
    for (int i = 0; i < 3; i++) k[i].cls = PP_SK_MEM, k[i].cal_ms = gpu[i];
    double tc[3] = {0}, tm[3] = {0}, scratch[12], host_ms, gpu_ms;
    assert_rel_close(pp_stack_latency_units_ms(&s, &d, k, tc, tm, NULL, 3, scratch, &host_ms, &gpu_ms),
                     0.056, 1e-12);
    assert_rel_close(host_ms, 0.030, 1e-12);
    pp_stack g = s;
    pp_stack_graph_replay(&g);
    assert_rel_close(pp_stack_latency_units_ms(&g, &d, k, tc, tm, NULL, 3, scratch, &host_ms, &gpu_ms),
                     0.041, 1e-12);
    assert_true(host_ms == 0);
    assert_rel_close(gpu_ms, 0.037, 1e-12);
    assert_true(g.gpu_min_us == 3 && g.eff[PP_SK_MEM] == 0.5 && g.sync_us == 4);
}

/* 100 back-to-back calls of the same kernels: the first ends at 52 us; from then on the GPU is
 * the bottleneck (37 us of kernels per call against 30 us of host), so each call adds 37 us:
 * (52 + 99 x 37) / 100 = 37.15 us per call. With 50 us of host per op the host sets the pace:
 * the first call ends at 152 us (k3 issued at 150, runs 2 us), each later call adds 150 us. */
static void pipeline_should_average_back_to_back_calls(void **state)
{
    (void)state;
    double host[3] = {10, 10, 10}, gpu[3] = {0.005, 0.030, 0.002};
    assert_rel_close(pp_pipeline_ms(host, gpu, 3, 0, 0, 100, NULL), 0.03715, 1e-12);
    double slow[3] = {50, 50, 50};
    assert_rel_close(pp_pipeline_ms(slow, gpu, 3, 0, 0, 100, NULL), (0.152 + 99 * 0.150) / 100,
                     1e-12);
}

/* 100 blocks, one per SM at a time: 2 waves on 98 SMs, 8 on 14. */
static void wave_factor_should_count_waves_on_98_and_14_sms(void **state)
{
    (void)state;
    assert_rel_close(pp_wave_factor(100, 98, 1), 2.0 / (100.0 / 98), 1e-12);
    assert_rel_close(pp_wave_factor(100, 14, 1), 8.0 / (100.0 / 14), 1e-12);
    /* below one wave each block has its slot: 10 blocks on 98 SMs take one block's time */
    assert_rel_close(pp_wave_factor(10, 98, 1), 9.8, 1e-12);
    /* the same work: time ratio 14 vs 98 SMs = (98/14) x wf14 / wf98 = 8 waves / 2 waves */
    assert_rel_close(98.0 / 14 * pp_wave_factor(100, 14, 1) / pp_wave_factor(100, 98, 1), 4.0,
                     1e-12);
}

/* Habitat's rule between a 98-SM and a 14-SM slice of the same GPU, compute-bound: the ratio is
 * the wave ratio ceil(100/14) / ceil(100/98) = 4, not the SM ratio 7; one wave on both: 1. */
static void mig_scaling_should_follow_waves(void **state)
{
    (void)state;
    pp_device big = {0}, small = {0};
    big.peak_tflops[PP_PREC_FP32] = 17.69;
    big.memory_bandwidth_gbs = 1555;
    big.compute_units = 98;
    small.peak_tflops[PP_PREC_FP32] = 17.69 * 14 / 98;
    small.memory_bandwidth_gbs = 1555.0 / 8;
    small.compute_units = 14;
    /* arithmetic intensity 1e9 FLOP/byte: g -> 0 */
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &small, 1e9, 100), 4.0, 1e-6);
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &small, 1e9, 14), 1.0, 1e-6);
    assert_rel_close(pp_scale_kernel_time(1.0, &big, &small, 1e9, 15), 2.0, 1e-6);
}

/* Under eager PyTorch a conv with a folded BatchNorm is followed by that BatchNorm's kernel; under
 * TensorRT it is folded, and the ReLU after it runs in the conv's epilogue. */
/* A 1 GFLOP 3x3 conv of 1000 blocks on 500 SMs at 1000 MHz (2 resident: exactly one wave), fp32
 * lanes 10 TFLOP/s, TF32 tensor cores 40: F = 40e12 / (500 x 1e9) = 80 FLOP per SM per clock;
 * eff[conv3x3] 0.5, tensor cores fed 20 FLOP per SM-clock: share 1 / (1 + 80 / 20) = 0.2;
 * bandwidth never binding:
 *   fp32 stack without TF32:            1e9 / (10e12 x 0.5)        = 0.2 ms
 *   with TF32 convolutions:             1e9 / (40e12 x 0.5 x 0.2)  = 0.25 ms
 *   the same peak at 500 MHz (F 160):   1e9 / (40e12 x 0.5 / 9)    = 0.45 ms
 * and a matrix product stays on the fp32 lanes (PyTorch's default) whatever the feed is: 0.2 ms;
 * under TensorRT, whose TF32 covers every layer, it takes the tensor cores as the conv does, at
 * the conv class's efficiency (0.8 here, its own 0.5 ignored): 1e9 / (40e12 x 0.8 x 0.2) =
 * 0.15625 ms at 1000 MHz. Without a clock the SM-clocks come from the fp32 peak: 10e12 / (2 x 64)
 * = 78.125 G a second (128 lanes an SM from compute capability 8.6: 39.0625). */
/* A stack of precision p with every class at efficiency eff and tensor cores fed `feed` FLOP per
 * SM per clock (0: at their peak); nothing else set. */
static pp_stack flat_stack(pp_precision p, double eff, double feed)
{
    pp_stack s = {0};
    s.precision = p;
    for (int c = 0; c < PP_SK__COUNT; c++) s.eff[c] = eff;
    s.tc_feed = feed;
    return s;
}

static void tensor_feed_should_apply_on_tensor_cores_only(void **state)
{
    (void)state;
    pp_stack s = flat_stack(PP_PREC_FP32, 0.5, 20);
    pp_device d = {0};
    d.peak_tflops[PP_PREC_FP32] = 10;
    d.peak_tflops[PP_PREC_TF32] = 40;
    d.memory_bandwidth_gbs = 1e9;
    d.compute_units = 500;
    d.clock_mhz = 1000;
    d.compute_capability = 8.0;
    assert_false(pp_stack_on_tensor_cores(&s, &d, PP_SK_CONV3));
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_CONV3, 1e9, 1, 1000, 64), 0.2, 1e-12);
    s.tf32_conv = 1;
    assert_true(pp_stack_on_tensor_cores(&s, &d, PP_SK_CONV3));
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_CONV3, 1e9, 1, 1000, 64), 0.25, 1e-12);
    d.clock_mhz = 500;
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_CONV3, 1e9, 1, 1000, 64), 0.45, 1e-12);
    d.clock_mhz = 1000;
    assert_false(pp_stack_on_tensor_cores(&s, &d, PP_SK_MATMUL));
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_MATMUL, 1e9, 1, 1000, 64), 0.2, 1e-12);
    assert_false(pp_stack_on_tensor_cores(&s, &d, PP_SK_MEM));
    pp_stack_set_framework(&s, "tensorrt");
    assert_true(pp_stack_on_tensor_cores(&s, &d, PP_SK_MATMUL));
    s.eff[PP_SK_CONV] = 0.8;
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_MATMUL, 1e9, 1, 1000, 64), 0.15625, 1e-12);
    d.clock_mhz = 0;
    assert_rel_close(pp_stack_sm_gclocks(&d), 78.125, 1e-15);
    d.compute_capability = 8.6;
    assert_rel_close(pp_stack_sm_gclocks(&d), 39.0625, 1e-15);
}

/* A 3x3 convolution of 1 GFLOP in one wave (1000 blocks on 500 SMs x 2) whose stack fitted
 * eff[conv3x3] 1.5 on fp32 lanes (Winograd) and never saw tensor cores (feed 0, share 1): on the
 * fp32 lanes of a 10 TFLOP/s card 1e9 / (10e12 x 1.5) = 0.0667 ms; on TF32 tensor cores of 40
 * TFLOP/s no faster than the dense peak, 1e9 / 40e12 = 0.025 ms, not 1e9 / (40e12 x 1.5) =
 * 0.0167. A share of 0.5 (fed 80 FLOP per SM-clock at 1000 MHz, F = 80) keeps its own: 1e9 /
 * (40e12 x 0.75) = 0.0333 ms. */
static void tensor_cores_should_not_pass_their_dense_peak(void **state)
{
    (void)state;
    pp_stack s = flat_stack(PP_PREC_FP32, 1.0, 0);
    s.eff[PP_SK_CONV3] = 1.5;
    pp_device d = {0};
    d.peak_tflops[PP_PREC_FP32] = 10;
    d.memory_bandwidth_gbs = 1e9;
    d.compute_units = 500;
    d.clock_mhz = 1000;
    d.compute_capability = 8.0;
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_CONV3, 1e9, 1, 1000, 64), 1.0 / 15, 1e-12);
    s.tf32_conv = 1;
    d.peak_tflops[PP_PREC_TF32] = 40;
    assert_true(pp_stack_on_tensor_cores(&s, &d, PP_SK_CONV3));
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_CONV3, 1e9, 1, 1000, 64), 0.025, 1e-12);
    s.tc_feed = 80;
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_CONV3, 1e9, 1, 1000, 64), 1.0 / 30, 1e-12);
}

/* A GeForce-like card: fp16 tensor cores at 40 TFLOP/s accumulating in fp32, 80 in fp16, on 500
 * SMs at 1000 MHz (F = 80 and 160 FLOP per SM-clock), fed 20: shares 1 / (1 + 4) = 0.2 and
 * 1 / (1 + 8) = 1/9. A conv of 1 GFLOP in one wave (1000 blocks on 500 SMs x 2) at efficiency
 * 0.5: 1e9 / (40e12 x 0.5 x 0.2) = 0.25 ms under PyTorch (fp32 accumulation), 1e9 / (80e12 x 0.5
 * / 9) = 0.225 ms under a stack whose kernels accumulate in fp16: the doubled rate gains little
 * where the feed binds. A card stating no fp16-accumulate rate gives 0.25 ms under both, and an
 * fp32 stack (no TF32 here: the fp32 lanes, share 1) 1e9 / (10e12 x 0.5) = 0.2 ms. */
static void fp16_accumulation_should_take_its_own_peak_where_the_stack_uses_it(void **state)
{
    (void)state;
    pp_stack eager = flat_stack(PP_PREC_FP16, 0.5, 20);
    pp_stack trt = eager;
    trt.fp16_acc16 = 1;
    pp_device d = {0};
    d.peak_tflops[PP_PREC_FP32] = 10;
    d.peak_tflops[PP_PREC_FP16] = 40;
    d.peak_fp16_acc16_tflops = 80;
    d.memory_bandwidth_gbs = 1e9;
    d.stream_bandwidth_gbs = 1e9;
    d.compute_units = 500;
    d.clock_mhz = 1000;
    d.compute_capability = 7.5;
    assert_rel_close(pp_stack_peak_tflops(&eager, &d, PP_SK_CONV), 40, 1e-15);
    assert_rel_close(pp_stack_peak_tflops(&trt, &d, PP_SK_CONV), 80, 1e-15);
    assert_rel_close(pp_stack_gpu_ms(&eager, &d, PP_SK_CONV, 1e9, 1, 1000, 64), 0.25, 1e-12);
    assert_rel_close(pp_stack_gpu_ms(&trt, &d, PP_SK_CONV, 1e9, 1, 1000, 64), 0.225, 1e-12);
    assert_rel_close(pp_stack_gpu_ms(&trt, &d, PP_SK_MATMUL, 1e9, 1, 1000, 64), 0.225, 1e-12);
    /* element-wise kernels have no tensor-core peak: 4e6 B / (0.5 x 1e18 B/s) = 8e-9 ms in one
     * wave (2000 blocks on 500 SMs x 4) */
    assert_rel_close(pp_stack_gpu_ms(&trt, &d, PP_SK_MEM, 0, 4e6, 2000, 0), 8e-9, 1e-9);
    d.peak_fp16_acc16_tflops = 0;
    assert_rel_close(pp_stack_gpu_ms(&trt, &d, PP_SK_CONV, 1e9, 1, 1000, 64), 0.25, 1e-12);
    pp_stack fp32 = trt;
    fp32.precision = PP_PREC_FP32;
    fp32.tf32_conv = 1;
    d.peak_fp16_acc16_tflops = 80;
    assert_false(pp_stack_on_tensor_cores(&fp32, &d, PP_SK_CONV));
    assert_rel_close(pp_stack_gpu_ms(&fp32, &d, PP_SK_CONV, 1e9, 1, 1000, 64), 0.2, 1e-12);
}

/* A memory-bound kernel streams at what the card was measured to reach: 1 GB at efficiency 0.5
 * on a 600 GB/s stream figure takes 1e9 / (0.5 x 600e9) s = 3.333 ms whatever the datasheet's
 * 1000 GB/s; unmeasured, at 0.888 of the datasheet, 1e9 / (0.5 x 888e9) s = 2.252 ms. One wave:
 * 2000 blocks on 500 SMs x 4. */
static void memory_time_should_use_the_measured_stream_bandwidth(void **state)
{
    (void)state;
    pp_stack s = flat_stack(PP_PREC_FP32, 0.5, 0);
    pp_device d = {0};
    d.peak_tflops[PP_PREC_FP32] = 10;
    d.memory_bandwidth_gbs = 1000;
    d.stream_bandwidth_gbs = 600;
    d.compute_units = 500;
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_MEM, 0, 1e9, 2000, 0), 10.0 / 3.0, 1e-12);
    d.stream_bandwidth_gbs = 0;
    assert_rel_close(pp_device_stream_gbs(&d), 888, 1e-12);
    assert_rel_close(pp_stack_gpu_ms(&s, &d, PP_SK_MEM, 0, 1e9, 2000, 0), 1e3 / 444.0, 1e-12);
}

/* The DRAM is one queue: a memory-bound kernel streams through the SMs its blocks occupy, at most
 * what one SM of the GPU streams each, within the slice's bandwidth, and takes no waves. The
 * A100 SXM4 40GB (configs/devices/a100.yaml): stream 1,381 GB/s over 108 SMs; its densest profile
 * per SM is 1g.10gb, 2/8 of the bandwidth on 14 SMs: 1381 x 0.25 / 14 = 24.6607 GB/s an SM.
 * At efficiency 1:
 *   8 blocks (4 resident: 2 SMs), 1 MB: 1e6 / (2 x 24.6607e9) s = 0.0202752 ms on the full GPU
 *     and on every slice (even 1g.5gb streams 1381 / 8 = 172.6 GB/s, past 2 SMs' 49.3);
 *   1e6 blocks, 1 GB: the slice's bandwidth: 1g.5gb 1e9 / 172.625e9 s = 5.79290 ms, 1g.10gb and
 *     2g.10gb 1e9 / 345.25e9 = 2.89645 ms, the full GPU 1e9 / 1381e9 = 0.724113 ms;
 *   330 blocks (82.5 SMs), 1 GB on the full GPU: min(1381, 82.5 x 24.6607) = 1381 GB/s, 0.724113
 *     ms, where 1.2 waves of 432 slots would have said 0.724113 / (330 / 432) = 0.947930 ms. */
static void memory_time_should_stream_through_the_sms_a_kernel_occupies(void **state)
{
    (void)state;
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    const pp_device *full = pp_devices_find(db, "a100-sxm4-40gb");
    const pp_device *g1 = pp_devices_find(db, "a100-sxm4-40gb-mig-1g.5gb");
    const pp_device *g1m = pp_devices_find(db, "a100-sxm4-40gb-mig-1g.10gb");
    const pp_device *g2 = pp_devices_find(db, "a100-sxm4-40gb-mig-2g.10gb");
    assert_non_null(full);
    assert_non_null(g1);
    assert_non_null(g1m);
    assert_non_null(g2);
    assert_rel_close(pp_device_sm_stream_gbs(full), 1381 * 0.25 / 14, 1e-12);
    assert_rel_close(pp_device_sm_stream_gbs(g2), 1381 * 0.25 / 14, 1e-12);
    pp_stack s = flat_stack(PP_PREC_FP32, 1, 0);
    const pp_device *all[4] = {full, g1, g1m, g2};
    for (int i = 0; i < 4; i++)
        assert_rel_close(pp_stack_gpu_ms(&s, all[i], PP_SK_MEM, 0, 1e6, 8, 0), 0.0202752, 1e-5);
    assert_rel_close(pp_stack_gpu_ms(&s, g1, PP_SK_MEM, 0, 1e9, 1e6, 0), 5.79290, 1e-5);
    assert_rel_close(pp_stack_gpu_ms(&s, g1m, PP_SK_MEM, 0, 1e9, 1e6, 0), 2.89645, 1e-5);
    assert_rel_close(pp_stack_gpu_ms(&s, g2, PP_SK_MEM, 0, 1e9, 1e6, 0), 2.89645, 1e-5);
    assert_rel_close(pp_stack_gpu_ms(&s, full, PP_SK_MEM, 0, 1e9, 1e6, 0), 0.724113, 1e-5);
    assert_rel_close(pp_stack_gpu_ms(&s, full, PP_SK_MEM, 0, 1e9, 330, 0), 0.724113, 1e-5);
    pp_devices_free(db);
}

/* A bigger MIG slice is never slower: for every pair of the A100 40GB's profiles where one has at
 * least the other's compute slices, memory slices and SMs, GoogLeNet's and MobileNetV2's kernels
 * (batch 1, 4 and 32, a stack that charges the GPU only) take no longer on it. */
static void a_bigger_mig_slice_should_never_be_slower(void **state)
{
    (void)state;
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    const pp_device *full = pp_devices_find(db, "a100-sxm4-40gb");
    assert_non_null(full);
    assert_true(full->n_mig_profiles >= 6);
    const pp_device *slice[16];
    int ns = 0;
    for (int i = 0; i < full->n_mig_profiles && ns < 16; i++) {
        char name[128];
        snprintf(name, sizeof name, "a100-sxm4-40gb-mig-%s", full->mig_profiles[i].name);
        assert_non_null(slice[ns++] = pp_devices_find(db, name));
    }
    pp_stack s = flat_stack(PP_PREC_FP32, 1, 0);
    s.timing_calls = 1;
    const char *models[2] = {"tests/fixtures/models/googlenet.onnx",
                             "tests/fixtures/models/mobilenet_v2.onnx"};
    const int64_t batches[3] = {1, 4, 32};
    int pairs = 0;
    for (int m = 0; m < 2; m++)
        for (int b = 0; b < 3; b++) {
            pp_graph *g = NULL;
            pp_shape_opts opts = {.batch = batches[b]};
            assert_int_equal(pp_graph_load_full(pp_test_path(models[m]), &opts, &g, &err),
                             PERFPRED_OK);
            pp_stack_kernel *k = NULL;
            int n = 0;
            assert_int_equal(pp_graph_stack_kernels(g, full, &k, &n, &err), PERFPRED_OK);
            double *scratch = malloc((size_t)n * 4 * sizeof *scratch), t[16];
            assert_non_null(scratch);
            for (int i = 0; i < ns; i++)
                t[i] = pp_stack_latency_ms(&s, slice[i], k, n, scratch, NULL, NULL);
            for (int i = 0; i < ns; i++)
                for (int j = 0; j < ns; j++) {
                    const pp_device *a = slice[i], *c = slice[j];
                    if (i == j || c->mig_compute_slices < a->mig_compute_slices ||
                        c->mig_memory_slices < a->mig_memory_slices ||
                        c->compute_units < a->compute_units)
                        continue;
                    pairs++;
                    assert_true(t[j] <= t[i] * (1 + 1e-12));
                }
            free(scratch);
            free(k);
            pp_graph_free(g);
        }
    assert_true(pairs > 6 * 10);
    pp_devices_free(db);
}

/* Host costs of conv 100, element-wise 10 and the BatchNorm pass 30 us, on a host at 0.5x: a
 * conv, its BatchNorm pass and a ReLU, each with no GPU work, issue at 50, 65 and 70 us, so one
 * call takes 0.070 ms; a stack that folds BatchNorm issues two kernels: 0.055 ms. */
static void batchnorm_pass_should_cost_the_host_its_own(void **state)
{
    (void)state;
    pp_stack s = {0};
    s.timing_calls = 1;
    s.bn_kernel = 1;
    for (int c = 0; c < PP_SK__COUNT; c++) s.eff[c] = 1;
    s.tc_feed = 0; /* tensor cores at their peak */
    s.host_us[PP_SK_CONV] = 100;
    s.host_us[PP_SK_MEM] = 10;
    s.host_bn_us = 30;
    pp_device d = {0};
    d.host_dispatch_scale = 0.5;
    d.compute_units = 100;
    d.peak_tflops[PP_PREC_FP32] = 10;
    d.memory_bandwidth_gbs = 1000;
    pp_stack_kernel k[3] = {{.cls = PP_SK_CONV, .blocks = 1},
                            {.cls = PP_SK_MEM, .bn = 1, .blocks = 1},
                            {.cls = PP_SK_MEM, .elementwise = 1, .blocks = 1}};
    for (int i = 0; i < 3; i++) k[i].cal_ms = NAN;
    double scratch[12], host_ms;
    assert_rel_close(pp_stack_latency_ms(&s, &d, k, 3, scratch, &host_ms, NULL), 0.070, 1e-12);
    assert_rel_close(host_ms, 0.070, 1e-12);
    s.bn_kernel = 0;
    assert_rel_close(pp_stack_latency_ms(&s, &d, k, 3, scratch, &host_ms, NULL), 0.055, 1e-12);
}

static void stack_roles_should_run_batchnorm_where_the_runtime_does(void **state)
{
    (void)state;
    pp_stack_kernel k[5] = {{.cls = PP_SK_CONV},
                            {.cls = PP_SK_MEM, .bn = 1},
                            {.cls = PP_SK_MEM, .elementwise = 1, .epilogue = 1},
                            {.cls = PP_SK_MEM, .elementwise = 1},
                            {.cls = PP_SK_MEM, .concat = 1}};
    pp_stack eager = {0}, trt = {0};
    pp_stack_set_framework(&eager, "pytorch-eager");
    pp_stack_set_framework(&trt, "tensorrt");
    eager.bn_kernel = 1;
    trt.fuse_epilogue = 1;
    static const int want_eager[5] = {2, 2, 2, 2, 2}, want_trt[5] = {2, 0, 1, 2, 0};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(pp_stack_role(&eager, 0, &k[i]), want_eager[i]);
        assert_int_equal(pp_stack_role(&trt, 0, &k[i]), want_trt[i]);
    }
}

/* A model's graph at batch 1, its kernel groups and its stack kernels on device `dev` (the
 * descriptors in configs/devices); free with free_model_kernels. */
typedef struct model_kernels {
    pp_graph *g;
    pp_device_db *db;
    pp_stack_kernel *sk;
    int n;
    pp_kernel_group *k;
    int nk;
} model_kernels;

static model_kernels load_model_kernels(const char *model, const char *dev)
{
    model_kernels m = {0};
    pp_err err = {0};
    pp_shape_opts opts = {.batch = 1};
    assert_int_equal(pp_graph_load_full(pp_test_path(model), &opts, &m.g, &err), PERFPRED_OK);
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &m.db, &err),
                     PERFPRED_OK);
    const pp_device *d = pp_devices_find(m.db, dev);
    assert_non_null(d);
    assert_int_equal(pp_graph_stack_kernels(m.g, d, &m.sk, &m.n, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_kernels(m.g, d, &m.k, &m.nk, &err), PERFPRED_OK);
    return m;
}

static void free_model_kernels(model_kernels *m)
{
    free(m->k);
    free(m->sk);
    pp_graph_free(m->g);
    pp_devices_free(m->db);
}

/* GoogLeNet as torchvision exports it (read off the file with python3-onnx): 57 Conv nodes, each
 * read by one Relu only, and 9 Concat nodes of the inception blocks, whose inputs are the
 * branches' Relu outputs. An epilogue is known by what it reads, not by the kernel before it:
 * every Relu is one, every Concat a concatenation of activations, nothing else is either. The
 * graph keeps the export's order, the order the forward ran (each branch to its end): each Relu
 * right after its Conv (a breadth-first sort put other branches' Convs between them). */
static void epilogues_and_concats_should_follow_the_dataflow(void **state)
{
    (void)state;
    model_kernels m = load_model_kernels("tests/fixtures/models/googlenet.onnx", "quadro-rtx-8000");
    const pp_graph *g = m.g;
    const pp_stack_kernel *sk = m.sk;
    const pp_kernel_group *k = m.k;
    int n = m.n, nk = m.nk, relu = 0, concat = 0, after_other = 0;
    /* each group's kernel, then the BatchNorm pass each Conv had folded in (BasicConv2d) */
    assert_int_equal(n, nk + 57);
    for (int i = 0, j = 0; i < nk; i++, j++) {
        const char *op = g->nodes[k[i].nodes[0]].op_type;
        int is_relu = strcmp(op, "Relu") == 0, is_concat = strcmp(op, "Concat") == 0;
        assert_false(sk[j].bn);
        assert_int_equal(sk[j].epilogue, is_relu);
        assert_int_equal(sk[j].concat, is_concat);
        relu += is_relu;
        concat += is_concat;
        if (is_relu && i > 0 && strcmp(g->nodes[k[i - 1].nodes[0]].op_type, "Conv") != 0)
            after_other++;
        if (j + 1 < n && sk[j + 1].bn) j++;
    }
    assert_int_equal(relu, 57);
    assert_int_equal(concat, 9);
    assert_int_equal(after_other, 0);
    free_model_kernels(&m);
}

/* ResNet-50 (torchvision export, BatchNorm folded): 53 Conv, 49 Relu, 16 Add. TensorRT runs a
 * bottleneck's last conv, its residual Add and the ReLU after it as one kernel ("conv3 + add +
 * relu"): the Add reads the only use of conv3's output, the ReLU the only use of the Add's, so
 * every Add and every Relu is an epilogue, and the kernels a TensorRT stack launches are the 53
 * convs, the two poolings and the classifier. */
static void a_relu_after_a_fused_residual_add_should_be_an_epilogue_too(void **state)
{
    (void)state;
    model_kernels m = load_model_kernels("tests/fixtures/models/resnet50.onnx", "rtx-2080-ti");
    const pp_graph *g = m.g;
    const pp_stack_kernel *sk = m.sk;
    const pp_kernel_group *k = m.k;
    int n = m.n, nk = m.nk;
    pp_stack trt = flat_stack(PP_PREC_FP16, 1, 0);
    trt.fuse_epilogue = 1;
    int relu = 0, add = 0, launched = 0;
    for (int i = 0, j = 0; i < nk; i++, j++) {
        const char *op = g->nodes[k[i].nodes[0]].op_type;
        int is_relu = strcmp(op, "Relu") == 0, is_add = strcmp(op, "Add") == 0;
        assert_int_equal(sk[j].epilogue, is_relu || is_add);
        relu += is_relu;
        add += is_add;
        launched += pp_stack_role(&trt, 0, &sk[j]) == 2;
        if (j + 1 < n && sk[j + 1].bn) j++;
    }
    assert_int_equal(relu, 49);
    assert_int_equal(add, 16);
    assert_int_equal(launched, 53 + 2 + 1);
    free_model_kernels(&m);
}

/* torchvision's ViT-B/32 as torch.onnx traced nn.MultiheadAttention's slow path: per encoder layer
 * (read off the file with python3-onnx) Transpose (to sequence-first), MatMul+Add (the in-
 * projection), Slice x 3 (q, k, v), Transpose x 3 (their heads; k's to K^T), Div (the scale),
 * MatMul (Q K^T), Softmax, MatMul (times V), Transpose (the heads merged), Gemm (the output
 * projection), Transpose (back to batch-first). PyTorch 2.x's fast path runs the projections and
 * one fused kernel: 12 cores, and 12 kernels of each layer absorbed (both outer transposes, the
 * slices, the heads' transposes, the scale, softmax, the second product and the merge), 144 in
 * all. A core at batch 1 (12 heads of 50 x 64): both products 2 x 2 x 12 x 50 x 50 x 64 = 7.68
 * MFLOP, and q, K^T, v and the output, 12 x 50 x 64 x 4 B = 153,600 B each. */
static void attention_should_mark_the_fast_paths_kernels(void **state)
{
    (void)state;
    pp_graph *g = NULL;
    pp_err err = {0};
    pp_shape_opts opts = {.batch = 1};
    assert_int_equal(pp_graph_load_full(pp_test_path("tests/fixtures/models/vit_b_32.onnx"), &opts,
                                        &g, &err),
                     PERFPRED_OK);
    pp_device_db *db = NULL;
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    const pp_device *h100 = pp_devices_find(db, "h100-sxm5-80gb");
    assert_non_null(h100);
    pp_kernel_group *k = NULL;
    int n = 0;
    assert_int_equal(pp_graph_kernels(g, h100, &k, &n, &err), PERFPRED_OK);
    int *role = malloc((size_t)n * sizeof *role);
    double *fl = malloc((size_t)n * 2 * sizeof *fl);
    assert_non_null(role);
    assert_non_null(fl);
    assert_int_equal(pp_stack_attention(g, k, n, role, fl, fl + n), 12);
    int absorbed = 0, cores = 0;
    for (int i = 0; i < n; i++) {
        absorbed += role[i] == PP_ATTN_ABSORBED;
        if (role[i] != PP_ATTN_CORE) continue;
        cores++;
        assert_string_equal(g->nodes[k[i].nodes[0]].op_type, "MatMul");
        assert_rel_close(fl[i], 7.68e6, 1e-12);
        assert_rel_close(fl[n + i], 4 * 153600.0, 1e-12);
    }
    assert_int_equal(cores, 12);
    assert_int_equal(absorbed, 144);
    /* the projections and the MLP stay kernels of their own */
    for (int i = 0; i < n; i++) {
        const char *op = g->nodes[k[i].nodes[0]].op_type;
        if (strcmp(op, "Gemm") == 0 || strcmp(op, "LayerNormalization") == 0)
            assert_int_equal(role[i], PP_ATTN_NONE);
    }
    /* a CNN has none */
    free(role);
    free(fl);
    free(k);
    pp_graph_free(g);
    assert_int_equal(pp_graph_load_full(pp_test_path("examples/resnet18.onnx"), &opts, &g, &err),
                     PERFPRED_OK);
    assert_int_equal(pp_graph_kernels(g, h100, &k, &n, &err), PERFPRED_OK);
    role = malloc((size_t)n * sizeof *role);
    fl = malloc((size_t)n * 2 * sizeof *fl);
    assert_int_equal(pp_stack_attention(g, k, n, role, fl, fl + n), 0);
    for (int i = 0; i < n; i++) assert_int_equal(role[i], PP_ATTN_NONE);
    free(role);
    free(fl);
    free(k);
    pp_graph_free(g);
    pp_devices_free(db);
}

/* Under the fast path a core pays a matrix product's dispatch and a memory op's, an absorbed
 * kernel nothing; the 2022 software (an estimated host) runs every kernel. Three kernels (a core,
 * an absorbed matrix product, a memory op), no GPU work worth counting, hosts 10 us (matmul) and
 * 4 us (memory) at scale 1, one call: fused, 10 + 4 for the core and 4 = 18 us; unfused, 10 + 10
 * + 4 = 24 us. TorchScript keeps every kernel; TensorRT fuses it under the current software. */
static void fused_attention_should_charge_one_dispatch_per_fused_op(void **state)
{
    (void)state;
    pp_stack s = {0};
    snprintf(s.framework, sizeof s.framework, "pytorch-eager");
    s.timing_calls = 1;
    for (int c = 0; c < PP_SK__COUNT; c++) s.eff[c] = 1;
    s.tc_feed = 0; /* tensor cores at their peak */
    s.host_us[PP_SK_MATMUL] = 10;
    s.host_us[PP_SK_MEM] = 4;
    pp_device d = {0};
    d.host_dispatch_scale = 1;
    d.host_dispatch_source = PP_HOST_MEASURED;
    d.compute_units = 100;
    d.peak_tflops[PP_PREC_FP32] = 1e6;
    d.memory_bandwidth_gbs = 1e9;
    pp_stack_kernel k[3] = {{.cls = PP_SK_MATMUL, .flops = 1, .bytes = 1, .blocks = 1,
                             .attn = PP_ATTN_CORE, .attn_flops = 1, .attn_bytes = 1},
                            {.cls = PP_SK_MATMUL, .flops = 1, .bytes = 1, .blocks = 1,
                             .attn = PP_ATTN_ABSORBED},
                            {.cls = PP_SK_MEM, .bytes = 1, .blocks = 1}};
    for (int i = 0; i < 3; i++) k[i].cal_ms = NAN;
    double scratch[12], host_ms = 0;
    assert_true(pp_stack_fused_attention(&s, &d));
    pp_stack_latency_ms(&s, &d, k, 3, scratch, &host_ms, NULL);
    assert_rel_close(host_ms, 0.018, 1e-12);
    d.host_dispatch_source = PP_HOST_ESTIMATE;
    assert_false(pp_stack_fused_attention(&s, &d));
    pp_stack_latency_ms(&s, &d, k, 3, scratch, &host_ms, NULL);
    assert_rel_close(host_ms, 0.024, 1e-12);
    snprintf(s.framework, sizeof s.framework, "torchscript");
    d.host_dispatch_source = PP_HOST_MEASURED;
    assert_false(pp_stack_fused_attention(&s, &d));
    snprintf(s.framework, sizeof s.framework, "tensorrt");
    assert_true(pp_stack_fused_attention(&s, &d));
    d.host_dispatch_source = PP_HOST_ESTIMATE;
    assert_false(pp_stack_fused_attention(&s, &d));
}

/* torch.onnx folded every BatchNorm of ResNet-18 into its 20 convolutions (weights named
 * onnx::Conv_*): 20 BatchNorm passes, no bias add. SqueezeNet has no BatchNorm; its 26
 * convolutions keep named weights and a bias each, which eager PyTorch's cuDNN path adds after
 * the convolution: 26 bias passes. The first pass of each, read and written at fp32: ResNet-18's
 * conv1 64 x 112 x 112 outputs, SqueezeNet's 96 x 109 x 109 ((224 - 7) / 2 + 1); a bias pass
 * adds once per element, a BatchNorm pass scales and shifts. */
static void bn_pass_should_follow_each_folded_conv(void **state)
{
    (void)state;
    const char *names[2] = {"examples/resnet18.onnx", "tests/fixtures/models/squeezenet1_0.onnx"};
    int want[2] = {20, 26}, want_bias[2] = {0, 26};
    double first_out[2] = {64.0 * 112 * 112, 96.0 * 109 * 109};
    for (int m = 0; m < 2; m++) {
        pp_graph *g = NULL;
        pp_err err = {0};
        pp_shape_opts opts = {.batch = 1};
        assert_int_equal(pp_graph_load_full(pp_test_path(names[m]), &opts, &g, &err), PERFPRED_OK);
        int n = 0, nb = 0, first = -1;
        pp_stack_kernel b;
        for (int i = 0; i < g->n_nodes; i++)
            if (pp_stack_bn_pass(g, i, &b)) {
                if (first < 0) {
                    first = i;
                    assert_rel_close(b.bytes, 8.0 * first_out[m], 1e-15);
                    assert_rel_close(b.flops, (m ? 1.0 : 2.0) * first_out[m], 1e-15);
                    assert_int_equal(b.bn, 1);
                    assert_int_equal(b.cls, PP_SK_MEM);
                }
                n++;
                nb += b.bias;
            }
        assert_int_equal(n, want[m]);
        assert_int_equal(nb, want_bias[m]);
        pp_graph_free(g);
    }
}

/* examples/resnet18.onnx at batch 1, shapes and features done */
static pp_graph *load_resnet18_b1(void)
{
    pp_graph *g = NULL;
    pp_err err = {0};
    pp_shape_opts opts = {.batch = 1};
    assert_int_equal(pp_graph_load_full(pp_test_path("examples/resnet18.onnx"), &opts, &g, &err),
                     PERFPRED_OK);
    return g;
}

/* ResNet-18 at batch 1 as the eager stack runs its stem: conv1 (7x7, 3 -> 64, to 112 x 112; it
 * reads the image, which no kernel wrote), its BatchNorm pass (reads the 64 x 112 x 112 output at
 * fp32, 3,211,264 B, just written), ReLU (reads what the pass rewrote: nothing written since, so
 * its distance is the tensor itself), MaxPool (reads ReLU's output, the same size). With the whole
 * of a 6 MiB L2 (6,291,456 B) those reads come from the L2: the ReLU's 6,422,528 B (read and
 * write) leave 3,211,264 B for the DRAM; a 2 MiB L2 holds 2,097,152 B of the 3,211,264 written
 * since, so 6,422,528 - 2,097,152 = 4,325,376 B remain. fp16 halves both the bytes and the
 * distances: in 2 MiB then all 1,605,632 B of the read hit and 1,605,632 B remain. A stack without
 * l2_share reads everything from the DRAM. */
static void l2_reuse_should_find_the_stems_outputs_in_the_cache(void **state)
{
    (void)state;
    pp_graph *g = load_resnet18_b1();
    pp_err err = {0};
    pp_device_db *db = NULL;
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    const pp_device *h100 = pp_devices_find(db, "h100-sxm5-80gb");
    assert_non_null(h100);
    pp_stack_kernel *k = NULL;
    int n = 0;
    assert_int_equal(pp_graph_stack_kernels(g, h100, &k, &n, &err), PERFPRED_OK);
    assert_true(n > 4);
    const double out = 4.0 * 64 * 112 * 112;
    assert_true(k[0].in_bytes[0] == 0 && k[0].in_bytes[1] == 0);
    assert_int_equal(k[1].bn, 1);
    for (int i = 1; i <= 3; i++) {
        int j = k[i].in_bytes[0] > 0 ? 0 : 1;
        assert_rel_close(k[i].in_bytes[j], out, 1e-15);
        assert_rel_close(k[i].in_dist[j], out, 1e-15);
        assert_true(k[i].in_bytes[1 - j] == 0);
    }
    assert_rel_close(k[2].bytes, 2 * out, 1e-15);
    pp_stack s = {0};
    s.l2_share = 1;
    pp_device d = {0};
    d.l2_mb = 6;
    assert_rel_close(pp_stack_dram_bytes(&s, &d, &k[2], k[2].bytes, 1), 3211264.0, 1e-15);
    d.l2_mb = 2;
    assert_rel_close(pp_stack_dram_bytes(&s, &d, &k[2], k[2].bytes, 1), 4325376.0, 1e-15);
    assert_rel_close(pp_stack_dram_bytes(&s, &d, &k[2], k[2].bytes / 2, 0.5), 1605632.0, 1e-15);
    s.l2_share = 0;
    d.l2_mb = 6;
    assert_rel_close(pp_stack_dram_bytes(&s, &d, &k[2], k[2].bytes, 1), 6422528.0, 1e-15);
    free(k);
    pp_graph_free(g);
    pp_devices_free(db);
}

static const char *toy_dir(void)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/test_stack_cfg", PP_BINARY_DIR);
    char sub[4200];
    mkdir(dir, 0755);
    snprintf(sub, sizeof sub, "%s/devices", dir);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/artifacts", dir);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/artifacts/stacks", dir);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/devices/toy.yaml", dir);
    pp_test_write_text(sub,
                       "name: toy-gpu\n"
                       "description: toy GPU\n"
                       "vendor: test\n"
                       "kind: gpu\n"
                       "hardware:\n"
                       "  peak_tflops: {fp32: 10}\n"
                       "  memory_bandwidth_gbs: 500\n"
                       "  memory_gb: 16\n"
                       "  compute_units: 40\n"
                       "  compute_capability: 8.0\n"
                       "  max_power_w: 200\n"
                       "runtime:\n"
                       "  framework: pytorch-eager\n"
                       "  precision: fp32\n"
                       "---\n"
                       "name: toy-gpu-2\n"
                       "description: toy GPU of another architecture\n"
                       "base: toy-gpu\n"
                       "hardware:\n"
                       "  compute_capability: 9.0\n"
                       "runtime:\n"
                       "  host_dispatch_scale: 2\n"
                       "---\n"
                       "name: toy-cpu\n"
                       "description: toy CPU\n"
                       "vendor: test\n"
                       "kind: cpu\n"
                       "hardware:\n"
                       "  peak_tflops: {fp32: 1}\n"
                       "  memory_bandwidth_gbs: 50\n"
                       "runtime:\n"
                       "  framework: pytorch-eager\n"
                       "  precision: fp32\n");
    return dir;
}

/* A stack whose GPU is nearly free (efficiency 10, no shortest kernel) and whose host costs
 * 1 ms per op: host-bound, so latency = kernels x 1 ms + the last kernel's few microseconds. */
static pp_stack toy_stack(void)
{
    pp_stack s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "pytorch-eager-fp32");
    snprintf(s.framework, sizeof s.framework, "pytorch-eager");
    s.precision = PP_PREC_FP32;
    s.timing_calls = 1;
    for (int c = 0; c < PP_SK__COUNT; c++) {
        s.host_us[c] = 1000;
        s.eff[c] = 10;
    }
    s.tc_feed = 0; /* tensor cores at their peak */
    s.host_bn_us = 1000;
    s.n_ctx = 1;
    s.ctx_cc[0] = 8.0;
    s.ctx_mb[0] = 500;
    s.ws_factor = 1;
    snprintf(s.trained_on, sizeof s.trained_on, "toy-gpu");
    snprintf(s.source, sizeof s.source, "hand-written for tests");
    return s;
}

/* TensorRT fp32 with no tensor-core row takes tensorrt-fp16's feed 3000 times the geometric mean
 * of the other frameworks' TF32 / fp16 feeds: eager 500 / 1000 and TorchScript 600 / 1500, so
 * 3000 x sqrt(0.5 x 0.4) = 1341.64; the source is written and survives a save and load. A stack
 * with a feed of its own, or without its fp16 sibling, keeps what it has. */
static void a_tf32_stack_without_tensor_rows_should_borrow_its_fp16_siblings_feed(void **state)
{
    (void)state;
    char dir[] = "/tmp/perfpred-feed-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    const char *names[] = {"pytorch-eager-fp32", "pytorch-eager-fp16", "torchscript-fp32",
                           "torchscript-fp16", "tensorrt-fp16"};
    const char *fw[] = {"pytorch-eager", "pytorch-eager", "torchscript", "torchscript", "tensorrt"};
    const double feed[] = {500, 1000, 600, 1500, 3000};
    pp_err err = {0};
    snprintf(path, sizeof path, "%s/artifacts/stacks", dir);
    assert_int_equal(pp_mkdir_p(path, &err), PERFPRED_OK);
    for (int i = 0; i < 5; i++) {
        pp_stack s = toy_stack();
        snprintf(s.name, sizeof s.name, "%s", names[i]);
        snprintf(s.framework, sizeof s.framework, "%s", fw[i]);
        s.precision = strstr(names[i], "fp16") ? PP_PREC_FP16 : PP_PREC_FP32;
        s.tc_feed = feed[i];
        snprintf(path, sizeof path, "%s/artifacts/stacks/%s.json", dir, names[i]);
        assert_int_equal(pp_stack_save(&s, path, NULL, &err), PERFPRED_OK);
    }
    pp_stack trt = toy_stack();
    snprintf(trt.name, sizeof trt.name, "tensorrt-fp32");
    snprintf(trt.framework, sizeof trt.framework, "tensorrt");
    trt.tf32_conv = 1;
    pp_fit_stack_transfer_feed(dir, &trt);
    assert_rel_close(trt.tc_feed, 1341.640786, 1e-6);
    assert_non_null(strstr(trt.tc_feed_source, "transferred: tensorrt-fp16's feed 3000"));
    pp_stack back;
    snprintf(path, sizeof path, "%s/artifacts/stacks/tensorrt-fp32.json", dir);
    assert_int_equal(pp_stack_save(&trt, path, NULL, &err), PERFPRED_OK);
    assert_int_equal(pp_stack_load(path, &back, &err), PERFPRED_OK);
    assert_string_equal(back.tc_feed_source, trt.tc_feed_source);
    pp_stack own = trt;
    own.tc_feed = 700, own.tc_feed_source[0] = 0;
    pp_fit_stack_transfer_feed(dir, &own);
    assert_rel_close(own.tc_feed, 700, 1e-15);
    snprintf(path, sizeof path, "%s/artifacts/stacks/tensorrt-fp16.json", dir);
    assert_int_equal(remove(path), 0);
    pp_stack alone = toy_stack();
    snprintf(alone.name, sizeof alone.name, "tensorrt-fp32");
    snprintf(alone.framework, sizeof alone.framework, "tensorrt");
    alone.tf32_conv = 1;
    pp_fit_stack_transfer_feed(dir, &alone);
    assert_true(alone.tc_feed == 0);
    assert_string_equal(alone.tc_feed_source, "");
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/artifacts/stacks/%s.json", dir, names[i]);
        remove(path);
    }
    snprintf(path, sizeof path, "%s/artifacts/stacks/tensorrt-fp32.json", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/artifacts/stacks", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/artifacts", dir);
    rmdir(path);
    assert_int_equal(rmdir(dir), 0);
}

/* A GPU of 10 SMs at 1000 MHz streaming 200 GB/s (no MIG profiles: each SM's share is 20 GB/s):
 * at full occupancy its SMs need 200 / (10 x 1) = 20 bytes per SM-clock; a memory kernel of 8
 * blocks (4 resident per SM) occupies 2 SMs, which stream 2 x 20 = 40 GB/s: 40 / (2 x 1) = 20
 * again. A memory kernel of 1 ms at that bandwidth, bandwidth efficiency 0.5, SMs fed 10 bytes a
 * clock, shortest kernel 0: 1 / 0.5 + 1 x 20 / 10 = 4 ms; with no feed (0) 2 ms; a compute
 * kernel of 5 ms at efficiency 1 stays 5 ms, its memory term (4 ms) hidden under it. */
static void an_sms_memory_feed_should_add_its_time_harmonically(void **state)
{
    (void)state;
    pp_device d = {0};
    d.compute_units = 10;
    d.clock_mhz = 1000;
    d.stream_bandwidth_gbs = 200;
    assert_rel_close(pp_stack_sm_need(&d, PP_SK_MEM, 1e6, 0), 20, 1e-12);
    assert_rel_close(pp_stack_sm_need(&d, PP_SK_MEM, 8, 0), 20, 1e-12);
    pp_stack s = flat_stack(PP_PREC_FP32, 1, 0);
    s.eff[PP_SK_MEM] = 0.5;
    s.mem_feed = 10;
    assert_rel_close(pp_stack_time_from_units(&s, PP_SK_MEM, 1, 0, 1, 20), 4, 1e-12);
    assert_rel_close(pp_stack_time_from_units(&s, PP_SK_CONV, 1, 5, 1, 20), 5, 1e-12);
    s.mem_feed = 0;
    assert_rel_close(pp_stack_time_from_units(&s, PP_SK_MEM, 1, 0, 1, 20), 2, 1e-12);
    d.compute_units = 0; /* no SMs stated: no need known */
    assert_true(pp_stack_sm_need(&d, PP_SK_MEM, 8, 0) == 0);
}

static void stack_artifact_should_round_trip_and_name_a_bad_field(void **state)
{
    (void)state;
    char path[4400];
    snprintf(path, sizeof path, "%s/artifacts/stacks/pytorch-eager-fp32.json", toy_dir());
    pp_stack s = toy_stack(), back;
    s.eff[PP_SK_CONV3] = 7.5;
    s.fp16_acc16 = 1;
    s.l2_share = 0.625;
    pp_err err = {0};
    assert_int_equal(pp_stack_save(&s, path, "{\"rows\": 3}", &err), PERFPRED_OK);
    assert_int_equal(pp_stack_load(path, &back, &err), PERFPRED_OK);
    assert_string_equal(back.name, s.name);
    assert_int_equal(back.fp16_acc16, 1);
    assert_rel_close(back.l2_share, 0.625, 1e-15);
    assert_int_equal(back.timing_calls, 1);
    assert_rel_close(back.host_us[PP_SK_CONV3], 1000, 1e-15);
    assert_rel_close(back.eff[PP_SK_CONV3], 7.5, 1e-15);
    assert_rel_close(back.ctx_mb[0], 500, 1e-15);
    assert_string_equal(back.trained_on, "toy-gpu");
    assert_int_equal(back.n_interval, 0); /* none written, none read */
    /* with an interval */
    s.n_interval = 120;
    s.iv_coverage = 0.8;
    s.iv_lat_lo[0] = -0.4, s.iv_lat_hi[0] = 0.3, s.iv_lat_lo[1] = -0.2, s.iv_lat_hi[1] = 0.25;
    s.iv_mem_lo = -0.1, s.iv_mem_hi = 0.5, s.iv_checked_pct = 77.5;
    s.iv_n[0] = 70, s.iv_n[1] = 50;
    assert_int_equal(pp_stack_save(&s, path, NULL, &err), PERFPRED_OK);
    assert_int_equal(pp_stack_load(path, &back, &err), PERFPRED_OK);
    assert_int_equal(back.n_interval, 120);
    /* each batch class applies its own bounds and row count */
    assert_int_equal(back.latency_iv[0].n, 70);
    assert_int_equal(back.latency_iv[1].n, 50);
    assert_rel_close(back.latency_iv[1].log_lo, -0.2, 1e-15);
    assert_rel_close(back.latency_iv[0].log_hi, 0.3, 1e-15);
    {   /* an artifact without the per-class counts loads, and its predictions carry no interval */
        char *t = pp_test_read_text(path);
        assert_non_null(t);
        char *k = strstr(t, "\"rows_batch_lt16\"");
        assert_non_null(k);
        memcpy(k + 1, "xxxx", 4);
        const char *old = pp_test_tmpfile(t, strlen(t), ".json");
        free(t);
        pp_stack o;
        assert_int_equal(pp_stack_load(old, &o, &err), PERFPRED_OK);
        assert_int_equal(o.latency_iv[0].n, 0);
        assert_int_equal(o.latency_iv[1].n, 50);
        perfpred_interval iv;
        pp_interval_apply(&o.latency_iv[0], 10.0, "stack", &iv);
        assert_true(isnan(iv.lo));
        pp_interval_apply(&o.latency_iv[1], 10.0, "stack", &iv);
        assert_rel_close(iv.lo, 10.0 * exp(-0.2), 1e-12);
    }
    assert_rel_close(back.iv_lat_lo[0], -0.4, 1e-15);
    assert_rel_close(back.iv_lat_hi[1], 0.25, 1e-15);
    assert_rel_close(back.iv_mem_hi, 0.5, 1e-15);
    assert_rel_close(back.iv_checked_pct, 77.5, 1e-15);
    char *t2 = pp_test_read_text(path);
    assert_non_null(t2);
    char *cv = strstr(t2, "\"coverage\":\t0.8");
    assert_non_null(cv);
    memcpy(cv + strlen("\"coverage\":\t"), "1.8", 3);
    const char *bad_iv = pp_test_tmpfile(t2, strlen(t2), ".json");
    free(t2);
    assert_int_equal(pp_stack_load(bad_iv, &back, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "'coverage'"));
    /* an efficiency of 0 is outside its range: the error names the file and the field */
    char *text = pp_test_read_text(path);
    assert_non_null(text);
    char *e = strstr(text, "7.5");
    assert_non_null(e);
    memcpy(e, "0.0", 3);
    const char *bad = pp_test_tmpfile(text, strlen(text), ".json");
    free(text);
    assert_int_equal(pp_stack_load(bad, &back, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, bad));
    assert_non_null(strstr(err.msg, "efficiency.conv3x3"));
}

/* A context on config_dir and examples/resnet18.onnx at batch 1, both asserted. */
static perfpred_ctx *ctx_and_resnet18(const char *config_dir, perfpred_model **m)
{
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = config_dir;
    char msg[1024];
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, NULL, msg, sizeof msg);
    assert_non_null(ctx);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1;
    *m = perfpred_model_load(pp_test_path("examples/resnet18.onnx"), &mp, NULL, msg, sizeof msg);
    if (!*m) print_message("%s\n", msg);
    assert_non_null(*m);
    return ctx;
}

/* Where the toy fp32 stack goes in the toy folder */
static const char *toy_fp32_stack_path(void)
{
    static char path[4400];
    snprintf(path, sizeof path, "%s/artifacts/stacks/pytorch-eager-fp32.json", toy_dir());
    return path;
}

/* The toy folder with the toy fp32 stack saved in it (remove toy_fp32_stack_path() after),
 * opened, and ResNet-18 at batch 1 */
static perfpred_ctx *toy_ctx_and_resnet18(perfpred_model **m)
{
    pp_stack s = toy_stack();
    pp_err err = {0};
    assert_int_equal(pp_stack_save(&s, toy_fp32_stack_path(), NULL, &err), PERFPRED_OK);
    return ctx_and_resnet18(toy_dir(), m);
}

/* Autocast on torchvision's ResNet-18 (examples/resnet18.onnx, BatchNorm folded by the export):
 * its 20 convolutions each cast their weight (the folded-in bias is BatchNorm's, which eager
 * PyTorch applies itself), the Gemm casts its weight and bias, and the first convolution casts the
 * fp32 input: 23 casts. Their elements: torchvision's 11,689,512 parameters less BatchNorm's 9,600
 * affine ones (weight and bias of 4,800 channels), plus the 3 x 224 x 224 = 150,528 of the input.
 * Under the toy stacks (1 ms of host per op) the casts add 23 ms of dispatch to the 48 kernels'
 * 48; the weights stay fp32 in memory (twice the fp16 stack's), the answer is transferred (no
 * AMP row fitted the stack), and autocast belongs to eager PyTorch only. */
static void autocast_should_cast_each_fp32_operand_of_an_fp16_op_first(void **state)
{
    (void)state;
    pp_graph *g = load_resnet18_b1();
    pp_err err = {0};
    int casts = 0;
    int64_t elems = 0;
    unsigned char fp32[8192];
    assert_true(g->n_tensors <= (int)sizeof fp32);
    pp_stack_autocast_dtypes(g, fp32);
    for (int i = 0; i < g->n_nodes; i++) {
        int ct[PP_STACK_MAX_CASTS];
        int n = pp_stack_autocast_casts(g, fp32, i, ct);
        casts += n;
        for (int c = 0; c < n; c++) elems += pp_tensor_elems(&g->tensors[ct[c]]);
    }
    assert_int_equal(casts, 23);
    assert_true(elems == 11689512 - 9600 + 150528);
    int64_t onnx_params = g->totals.param_bytes / 4;
    pp_graph_free(g);

    /* ViT-B/32 (torchvision's export): the patch conv casts the image, its weight and its bias
     * (3); each of the 12 encoder blocks casts, for the qkv projection, layer_norm's fp32 output,
     * the weight and the bias (3), softmax's fp32 output before it multiplies V (1; Q K^T reads
     * fp16 projections), the output projection's weight and bias (2), for the first MLP layer
     * layer_norm's output, weight and bias (3), for the second its weight and bias (2; GELU's
     * output is fp16): 11; the head casts the final layer_norm's output, weight and bias (3).
     * 3 + 12 x 11 + 3 = 138. The residual stream stays fp32 (class token and position
     * embedding are fp32 parameters): no cast, it feeds no matrix product directly. */
    pp_shape_opts opts = {.batch = 1};
    assert_int_equal(pp_graph_load_full(pp_test_path("tests/fixtures/models/vit_b_32.onnx"), &opts,
                                        &g, &err),
                     PERFPRED_OK);
    assert_true(g->n_tensors <= (int)sizeof fp32);
    pp_stack_autocast_dtypes(g, fp32);
    casts = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        int ct[PP_STACK_MAX_CASTS];
        casts += pp_stack_autocast_casts(g, fp32, i, ct);
    }
    assert_int_equal(casts, 138);
    /* what autocast writes: its fp32 ops (25 layer_norms, 12 softmaxes) fp32, its fp16 ones
     * (the patch conv, every matrix product) fp16, the residual adds fp32 */
    int ln = 0, sm = 0, mm = 0, res = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node *nd = &g->nodes[i];
        int o = nd->n_outputs > 0 ? nd->outputs[0] : -1;
        if (o < 0) continue;
        const char *op = nd->op_type;
        if (strcmp(op, "LayerNormalization") == 0) ln += fp32[o];
        if (strcmp(op, "Softmax") == 0) sm += fp32[o];
        if (strcmp(op, "Conv") == 0 || strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0) {
            assert_int_equal(fp32[o], 0);
            mm++;
        }
        if (strcmp(op, "Add") == 0 && strstr(nd->name, "encoder_layer_") &&
            !strstr(nd->name, "self_attention") && !strstr(nd->name, "mlp"))
            res += fp32[o];
    }
    assert_int_equal(ln, 25);
    assert_int_equal(sm, 12);
    assert_int_equal(mm, 1 + 12 * 6 + 1);
    assert_int_equal(res, 24);
    pp_graph_free(g);

    char path[4400];
    pp_stack s = toy_stack();
    snprintf(s.name, sizeof s.name, "pytorch-eager-fp16");
    s.precision = PP_PREC_FP16;
    snprintf(path, sizeof path, "%s/artifacts/stacks/pytorch-eager-fp16.json", toy_dir());
    assert_int_equal(pp_stack_save(&s, path, NULL, &err), PERFPRED_OK);
    char msg[1024];
    perfpred_model *m;
    perfpred_ctx *ctx = toy_ctx_and_resnet18(&m); /* with the fp32 stack beside it */
    assert_int_equal(unlink(path), 0); /* loaded; the other tests' toy folder holds fp32 only */
    remove(toy_fp32_stack_path());
    perfpred_prediction half, amp;
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.precision = "fp16";
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", &pp, &half, msg, sizeof msg), PERFPRED_OK);
    pp.precision = "amp";
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", &pp, &amp, msg, sizeof msg), PERFPRED_OK);
    assert_string_equal(half.stack, "pytorch-eager-fp16");
    assert_string_equal(amp.stack, "pytorch-eager-amp");
    assert_rel_close(half.host_ms, 48.0, 1e-12);
    assert_rel_close(amp.host_ms, 48.0 + 23.0, 1e-12);
    assert_int_equal(amp.n_kernels, half.n_kernels);
    /* the toy GPU trained the fp16 stack: calibrated; no AMP row did, so autocast is not, and
     * as a GPU the stack did not see, one whose descriptor states no fp16 rate, an estimate */
    assert_int_equal(half.latency_ms.prov, PERFPRED_PROV_CALIBRATED);
    assert_int_equal(amp.latency_ms.prov, PERFPRED_PROV_ESTIMATE);
    assert_rel_close(half.weights_bytes, 2.0 * (double)onnx_params, 1e-12);
    assert_rel_close(amp.weights_bytes, 4.0 * (double)onnx_params, 1e-12);
    /* at the pass's end autocast's cache holds an fp16 copy of every cast weight as well: fp32
     * and fp16 weights, 6 bytes a parameter where .half() holds 2 (and the image at fp32) */
    assert_true(amp.allocator_peak_bytes >= half.allocator_peak_bytes + 4.0 * (double)onnx_params -
                                                2.0 * 4800);
    pp.runtime = "torchscript";
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", &pp, &amp, msg, sizeof msg),
                     PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "autocast"));
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* --runtime cuda-graph: the eager stack's kernels replayed as a CUDA graph, the toy stack's 1 ms
 * of host per op gone: the latency is the kernels' time on the GPU alone (plus the final
 * synchronize, 0 here), named for the replay, transferred, and with no interval (one GPU's
 * replays judge nothing held out). */
static void a_cuda_graph_should_leave_the_kernels_alone(void **state)
{
    (void)state;
    char msg[1024];
    perfpred_model *m;
    perfpred_ctx *ctx = toy_ctx_and_resnet18(&m);
    perfpred_prediction eager, graph;
    perfpred_predict_params pp = perfpred_predict_default_params();
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", &pp, &eager, msg, sizeof msg),
                     PERFPRED_OK);
    pp.runtime = "cuda-graph";
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", &pp, &graph, msg, sizeof msg),
                     PERFPRED_OK);
    assert_string_equal(graph.stack, "pytorch-eager-fp32-graph");
    assert_true(graph.host_ms == 0);
    assert_rel_close(graph.latency_ms.value, graph.gpu_ms, 1e-12);
    assert_rel_close(graph.gpu_ms, eager.gpu_ms, 1e-12);
    assert_true(eager.latency_ms.value >= 48.0 && graph.latency_ms.value < 1.0);
    assert_int_equal(graph.latency_ms.prov, PERFPRED_PROV_TRANSFERRED);
    assert_int_equal(graph.latency_interval.n, 0);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    remove(toy_fp32_stack_path());
}

/* bfloat16 on the shipped A100 descriptor, whose datasheet states the same dense rate for bf16 and
 * fp16 tensor cores (312 TFLOP/s): the fp16 stack at the bf16 rate gives the fp16 answer, named
 * for bf16 and never calibrated (no row ran bf16); a V100 (no bf16 tensor cores, no bf16 rate in
 * its descriptor) is an error that names the figure. */
static void bf16_should_take_the_fp16_stack_at_its_own_rate(void **state)
{
    (void)state;
    char msg[1024];
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, msg, sizeof msg);
    assert_non_null(ctx);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 32;
    perfpred_model *m =
        perfpred_model_load(pp_test_path("examples/resnet18.onnx"), &mp, NULL, msg, sizeof msg);
    assert_non_null(m);
    perfpred_predict_params pp = perfpred_predict_default_params();
    perfpred_prediction half, bf;
    pp.precision = "fp16";
    assert_int_equal(perfpred_predict(ctx, m, "a100", &pp, &half, msg, sizeof msg), PERFPRED_OK);
    pp.precision = "bf16";
    assert_int_equal(perfpred_predict(ctx, m, "a100", &pp, &bf, msg, sizeof msg), PERFPRED_OK);
    assert_string_equal(bf.stack, "pytorch-eager-bf16");
    assert_true(bf.latency_ms.value == half.latency_ms.value);
    assert_true(bf.peak_memory_bytes.value == half.peak_memory_bytes.value);
    assert_int_not_equal(bf.latency_ms.prov, PERFPRED_PROV_CALIBRATED);
    pp.precision = "amp-bf16";
    assert_int_equal(perfpred_predict(ctx, m, "a100", &pp, &bf, msg, sizeof msg), PERFPRED_OK);
    assert_string_equal(bf.stack, "pytorch-eager-amp-bf16");
    pp.precision = "bf16";
    assert_int_equal(perfpred_predict(ctx, m, "v100", &pp, &bf, msg, sizeof msg),
                     PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "peak_tflops.bf16"));
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* A context's local memory is max resident threads an SM x SMs x 512 bytes (the least the driver
 * allocates a thread): literals from the shipped descriptors' SM counts and the CUDA guide's
 * threads per SM. A MIG slice holds its own SMs' share, so its context is the whole GPU's less
 * the other SMs' local memory. */
static void a_contexts_local_memory_should_follow_its_sms(void **state)
{
    (void)state;
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    /* A100: 108 SMs x 2,048 threads x 512 B = 108 MiB; its 1g slice 14 SMs; H100 SXM 132 SMs */
    assert_rel_close(pp_stack_lmem_mb(pp_devices_find(db, "a100")), 108.0, 1e-12);
    assert_rel_close(pp_stack_lmem_mb(pp_devices_find(db, "a100-mig-1g")), 14.0, 1e-12);
    assert_rel_close(pp_stack_lmem_mb(pp_devices_find(db, "h100")), 132.0, 1e-12);
    /* RTX 3090 (8.6): 82 SMs x 1,536 threads; RTX 2080 Ti (7.5): 68 SMs x 1,024 threads */
    assert_rel_close(pp_stack_lmem_mb(pp_devices_find(db, "rtx-3090")), 61.5, 1e-12);
    assert_rel_close(pp_stack_lmem_mb(pp_devices_find(db, "rtx-2080-ti")), 34.0, 1e-12);
    /* a CPU: none */
    assert_true(pp_stack_lmem_mb(pp_devices_find(db, "rpi4")) == 0);
    pp_stack s = toy_stack();
    s.n_ctx = 1;
    s.ctx_cc[0] = 8.0, s.ctx_mb[0] = 1000, s.ctx_current[0] = 1;
    double full = pp_stack_context_bytes(&s, pp_devices_find(db, "a100"), 1, NULL);
    double slice = pp_stack_context_bytes(&s, pp_devices_find(db, "a100-mig-1g"), 1, NULL);
    assert_rel_close(full, 1108.0 * 1048576, 1e-12);
    assert_rel_close(full - slice, 94.0 * 1048576, 1e-12);
    pp_devices_free(db);
}

static void prediction_should_be_host_bound_under_a_slow_host(void **state)
{
    (void)state;
    char msg[1024];
    perfpred_model *m;
    perfpred_ctx *ctx = toy_ctx_and_resnet18(&m);
    perfpred_prediction p;
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", NULL, &p, msg, sizeof msg), PERFPRED_OK);
    assert_non_null(p.stack);
    assert_string_equal(p.stack, "pytorch-eager-fp32");
    /* ResNet-18: 48 kernels (as the predictor groups them); 1 ms of host each */
    assert_int_equal(p.n_kernels, 48);
    assert_rel_close(p.host_ms, 48.0, 1e-12);
    assert_true(p.latency_ms.value >= 48.0 && p.latency_ms.value < 48.0 * 1.001);
    assert_int_equal(p.latency_ms.prov, PERFPRED_PROV_CALIBRATED);
    /* memory: 500 MiB context + its local memory for the toy GPU's 40 SMs (2,048 threads an SM
     * on an 8.0 part x 512 bytes: 1 MiB an SM) + the allocator's segments, which hold the weights
     * (44.6 MiB of fp32 parameters) and come in whole 2 MiB units (2 MiB small, 20 MiB or 2
     * MiB-rounded large segments); the breakdown adds up to it */
    double seg = p.peak_memory_bytes.value - 540.0 * 1048576;
    assert_true(seg >= p.allocator_peak_bytes && p.allocator_peak_bytes > 44.0 * 1048576);
    assert_true(fmod(seg, 2.0 * 1048576) == 0);
    assert_rel_close(p.peak_memory_bytes.value,
                     p.runtime_bytes + p.weights_bytes + p.activations_bytes + p.workspace_bytes,
                     1e-12);
    assert_rel_close(p.allocator_peak_bytes, p.weights_bytes + p.activations_bytes, 1e-12);
    assert_int_equal(p.peak_memory_bytes.prov, PERFPRED_PROV_CALIBRATED);

    /* another GPU: a host twice as slow doubles the dispatch; its scale, stated with no source,
     * is an estimate, and so is the latency it paces; memory transferred, the context of the
     * nearest architecture measured (8.0 for 9.0) */
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu-2", NULL, &p, msg, sizeof msg),
                     PERFPRED_OK);
    assert_int_equal(p.latency_ms.prov, PERFPRED_PROV_ESTIMATE);
    assert_non_null(strstr(p.latency_ms.source, "an estimate no measurement made"));
    assert_rel_close(p.host_ms, 96.0, 1e-12);
    assert_int_equal(p.peak_memory_bytes.prov, PERFPRED_PROV_TRANSFERRED);
    assert_rel_close(p.runtime_bytes, 540.0 * 1048576, 1e-12); /* 9.0: 2,048 threads an SM too */
    /* among 7.5 and 8.6, an 8.0 GPU takes its own generation's 8.6, though 7.5 is nearer */
    pp_stack two = toy_stack();
    two.n_ctx = 2;
    two.ctx_cc[0] = 7.5, two.ctx_mb[0] = 1000;
    two.ctx_cc[1] = 8.6, two.ctx_mb[1] = 1600;
    int exact = 1;
    assert_rel_close(pp_stack_context_mb(&two, 8.0, 0, &exact), 1600, 1e-15);
    assert_int_equal(exact, 0);
    assert_rel_close(pp_stack_context_mb(&two, 7.0, 0, &exact), 1000, 1e-15);
    assert_rel_close(pp_stack_context_mb(&two, 8.6, 0, &exact), 1600, 1e-15);
    assert_int_equal(exact, 1);
    /* no architecture measured with current software: any measured one answers, not exact */
    assert_rel_close(pp_stack_context_mb(&two, 8.6, 1, &exact), 1600, 1e-15);
    assert_int_equal(exact, 0);
    /* with a 9.0 measured under current software, an 8.0 GPU running it takes that one, and
     * one running the 2022 software keeps the 8.6 */
    two.n_ctx = 3;
    two.ctx_cc[2] = 9.0, two.ctx_mb[2] = 1200, two.ctx_current[2] = 1;
    assert_rel_close(pp_stack_context_mb(&two, 8.0, 1, &exact), 1200, 1e-15);
    assert_int_equal(exact, 0);
    assert_rel_close(pp_stack_context_mb(&two, 8.0, 0, &exact), 1600, 1e-15);
    assert_rel_close(pp_stack_context_mb(&two, 9.0, 1, &exact), 1200, 1e-15);
    assert_int_equal(exact, 1);

    /* a stack that was not fitted: an error that lists what there is */
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.runtime = "tensorrt";
    assert_int_equal(perfpred_predict(ctx, m, "toy-gpu", &pp, &p, msg, sizeof msg),
                     PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "tensorrt fp32"));
    assert_non_null(strstr(msg, "pytorch-eager fp32"));
    /* and on a CPU a stack choice is refused, not ignored */
    pp.runtime = "pytorch-eager";
    assert_int_equal(perfpred_predict(ctx, m, "toy-cpu", &pp, &p, msg, sizeof msg),
                     PERFPRED_ERR_INVALID_ARG);
    /* the device listing says which stacks a GPU has and how, as its predictions are labelled:
     * toy-gpu's own, toy-gpu-2's an estimate (its host's scale has no source) */
    perfpred_device_info info;
    assert_int_equal(perfpred_device_find(ctx, "toy-gpu", &info), PERFPRED_OK);
    assert_string_equal(info.stacks, "pytorch-eager-fp32 (calibrated)");
    assert_int_equal(perfpred_device_find(ctx, "toy-gpu-2", &info), PERFPRED_OK);
    assert_non_null(info.stacks);
    assert_string_equal(info.stacks, "pytorch-eager-fp32 (estimate)");
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    remove(toy_fp32_stack_path());
}

/* The fit on real rows: the V100 and RTX 3090 eager fp32 files. Their torchvision rows were
 * counted independently (docs/gpu-stacks.md); the fit must read all of them, skip none, and land
 * within sane errors on its own rows and on the GPU it leaves out. */
/* On the A100 the layer models answer, from NeuSight's event-timed single operators, each of which
 * holds the host's dispatch (the model's timing floor: about 30 us for element-wise ops, whatever
 * the tensor). Under a stack the host is charged by the pipeline, so a calibrated kernel keeps
 * only the rest: ResNet-18's ReLUs at batch 1 (under 1 MB each, about a microsecond of HBM time)
 * must come out below the element-wise floor, and the floor is the manifest's, read here. */
static void calibrated_kernels_should_drop_the_timing_floor_under_a_stack(void **state)
{
    (void)state;
    char *t = pp_test_read_text(pp_test_path("configs/artifacts/a100-pcie-40gb/manifest.json"));
    assert_non_null(t);
    cJSON *j = cJSON_Parse(t);
    free(t);
    double floor_ms = -1;
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "models"))
    {
        if (strcmp(cJSON_GetObjectItem(e, "op_kind")->valuestring, "elemwise") == 0)
            floor_ms = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "base"), "floor_ms")->valuedouble;
    }
    cJSON_Delete(j);
    assert_true(floor_ms > 0.02); /* NeuSight's fastest ReLU/Add rows: tens of microseconds */

    char msg[1024];
    perfpred_model *m;
    perfpred_ctx *ctx = ctx_and_resnet18(pp_test_path("configs"), &m);
    perfpred_kernel ks[64];
    int nk = 0;
    perfpred_predict_params pp = pp_test_kernels_into(ks, 64, &nk);
    perfpred_prediction p;
    assert_int_equal(perfpred_predict(ctx, m, "a100-pcie-40gb", &pp, &p, msg, sizeof msg), 0);
    assert_non_null(p.stack);
    int relus = 0;
    for (int i = 0; i < nk && i < 64; i++) {
        if (strcmp(ks[i].ops, "Relu") != 0 || ks[i].prov != PERFPRED_PROV_CALIBRATED) continue;
        assert_true(ks[i].latency_ms > 0);
        assert_true(ks[i].latency_ms < floor_ms);
        relus++;
    }
    assert_true(relus >= 8);
    /* NeuSight's A100 conv sweep ran on the fp32 lanes (no TF32 kernel in it); the eager fp32
     * stack runs convolutions on TF32 tensor cores, so no conv kernel keeps a layer-model time */
    int convs = 0;
    for (int i = 0; i < nk && i < 64; i++) {
        if (strncmp(ks[i].ops, "Conv", 4) != 0) continue;
        assert_int_not_equal(ks[i].prov, PERFPRED_PROV_CALIBRATED);
        convs++;
    }
    assert_int_equal(convs, 20); /* ResNet-18: the 7x7 stem, 16 3x3, 3 1x1 downsamples */
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* ResNet-18 (20 convolutions each with a BatchNorm, 17 ReLUs, 8 residual adds, a max pool, an
 * average pool, a linear layer: 48 kernels of the graph) as each stack launches it: eager 68 (a
 * BatchNorm pass after every convolution), under autocast 23 casts more (20 conv weights, the
 * linear layer's weight and bias, the image), TensorRT 23 (ReLU and add in the convolutions'
 * epilogues, BatchNorm folded). The breakdown's rows add up to the GPU's time however many. */
static void a_stack_breakdown_should_add_up_to_what_it_launches(void **state)
{
    (void)state;
    char msg[1024];
    perfpred_model *m;
    perfpred_ctx *ctx = ctx_and_resnet18(pp_test_path("configs"), &m);
    static const struct {
        const char *runtime, *precision;
        int launched;
    } c[] = {{"pytorch-eager", "fp32", 68}, {"pytorch-eager", "fp16", 68},
             {"pytorch-eager", "amp", 91},  {"tensorrt", "fp32", 23}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        perfpred_kernel ks[64];
        int nk = 0;
        perfpred_predict_params pp = pp_test_kernels_into(ks, 64, &nk);
        pp.runtime = c[i].runtime;
        pp.precision = c[i].precision;
        perfpred_prediction p;
        assert_int_equal(perfpred_predict(ctx, m, "a100-pcie-40gb", &pp, &p, msg, sizeof msg), 0);
        assert_non_null(p.stack);
        assert_int_equal(nk, 48);
        assert_int_equal(p.n_kernels, 48);
        assert_int_equal(p.n_launched_kernels, c[i].launched);
        double sum = 0;
        for (int k = 0; k < nk; k++) sum += ks[k].latency_ms;
        assert_rel_close(sum, p.gpu_ms, 1e-9);
    }
    /* a prediction without the breakdown counts the same */
    perfpred_prediction p;
    assert_int_equal(perfpred_predict(ctx, m, "a100-pcie-40gb", NULL, &p, msg, sizeof msg), 0);
    assert_int_equal(p.n_launched_kernels, 68);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* The framework-tax-gpus folder and the fixtures' models into dd and models; 0 (the test is
 * skipped by the caller) when ../shared is not beside the tree. */
static int framework_tax_paths(char *dd, size_t n_dd, char *models, size_t n_models)
{
    const char *data = pp_test_path("../shared/datasets/framework-tax-gpus");
    struct stat sb;
    if (stat(data, &sb) != 0) {
        print_message("skipped: ../shared/datasets/framework-tax-gpus is not beside the tree\n");
        return 0;
    }
    snprintf(dd, n_dd, "%s", data);
    snprintf(models, n_models, "%s", pp_test_path("tests/fixtures/models"));
    return 1;
}

static void fit_should_read_every_mapped_row_of_framework_tax(void **state)
{
    (void)state;
    char dd[4096], models[4096];
    if (!framework_tax_paths(dd, sizeof dd, models, sizeof models)) skip();
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    pp_fit_stack_params p = pp_fit_stack_default_params();
    p.data_dir = dd;
    p.models_dir = models;
    p.only_gpu_files = "v100,3090";
    p.max_evals = 60; /* a short search: the rows read and how they are judged are the point */
    p.leave_one_out = 1;
    p.leave_family_out = 1;
    pp_fit_stack_report *rep = calloc(1, sizeof *rep);
    assert_non_null(rep);
    assert_int_equal(pp_fit_stack_run(db, &p, "pytorch-eager-fp32", rep, &err), PERFPRED_OK);
    /* rows of the 16 torchvision models with a latency in 2022_*_pretrained-fp32/{v100,3090}.csv,
     * one per (folder, GPU, model, batch): counted by the script in docs/gpu-stacks.md */
    assert_int_equal(rep->n_rows, 961);
    assert_int_equal(rep->n_skipped, 0);
    assert_int_equal(rep->n_gpus, 2);
    assert_true(rep->train_mape < 40);
    assert_true(isfinite(rep->logo_large) && rep->logo_large < 80);
    assert_true(rep->n_repeat > 0);
    /* each of the 10 families (docs/gpu-stacks.md) left out once; together they hold every row */
    assert_int_equal(rep->n_families, 10);
    int fam_rows = 0;
    for (int i = 0; i < rep->n_families; i++) {
        assert_true(rep->family[i].n_rows > 0);
        fam_rows += rep->family[i].n_rows;
    }
    assert_int_equal(fam_rows, rep->n_rows);
    assert_true(isfinite(rep->lofo_large) && rep->lofo_large < 80);
    /* the interval holds the prediction and comes from every held-out row */
    assert_int_equal(rep->stack.n_interval, rep->n_rows);
    for (int c = 0; c < 2; c++)
        assert_true(rep->stack.iv_lat_lo[c] <= 0 && rep->stack.iv_lat_hi[c] >= 0);
    assert_true(rep->interval_coverage >= 0 && rep->interval_coverage <= 100);
    free(rep);
    pp_devices_free(db);
}

/* Rows of an eager forward replayed as a CUDA graph (a run folder *_pretrained-fp32-graph) train
 * the stack's GPU side and stay out of every eager figure: two of the H200's (lab/graph_rows.py's
 * layout, data/gpu-stacks/2026_1128_pretrained-fp32-graph) beside framework-tax's V100 rows. */
static void fit_should_keep_graph_rows_apart(void **state)
{
    (void)state;
    char dd[4096], models[4096], own[4096], sub[4200];
    if (!framework_tax_paths(dd, sizeof dd, models, sizeof models)) skip();
    snprintf(own, sizeof own, "%s/test_stack_own", PP_BINARY_DIR);
    mkdir(own, 0755);
    snprintf(sub, sizeof sub, "%s/2026_0101_pretrained-fp32-graph", own);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/2026_0101_pretrained-fp32-graph/h200.csv", own);
    pp_test_write_text(sub, "model,torchvision_name,batch_size,input_size,latency,max_memory,"
                            "total_params\n"
                            "vgg16,vgg16,1,224,6.585150e-04,,138357544\n"
                            "vgg16,vgg16,8,224,0.0024836,,138357544\n");
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    pp_fit_stack_params p = pp_fit_stack_default_params();
    p.data_dir = dd;
    p.own_data_dir = own;
    p.models_dir = models;
    p.only_gpu_files = "v100,h200";
    p.max_evals = 60; /* a short search: the rows read and how they are judged are the point */
    p.leave_one_out = 1;
    p.leave_family_out = 1;
    char rows[4300];
    snprintf(rows, sizeof rows, "%s/rows.csv", own);
    p.rows_csv = rows;
    pp_fit_stack_report *rep = calloc(1, sizeof *rep);
    assert_non_null(rep);
    assert_int_equal(pp_fit_stack_run(db, &p, "pytorch-eager-fp32", rep, &err), PERFPRED_OK);
    /* the rows file: every row (graph rows too), each with its family's held-out prediction */
    FILE *f = fopen(rows, "r");
    assert_non_null(f);
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",graph,family,family_predicted_ms,family_host_ms\n"));
    int n_lines = 0, n_vgg = 0;
    while (fgets(line, sizeof line, f)) {
        n_lines++;
        const char *fam = strstr(line, ",0,vgg,");
        if (!fam) fam = strstr(line, ",1,vgg,");
        if (!fam) continue;
        n_vgg++;
        assert_true(strtod(fam + 7, NULL) > 0); /* the fit without VGG priced it */
    }
    fclose(f);
    unlink(rows);
    assert_int_equal(n_lines, rep->n_rows + 2);
    assert_true(n_vgg >= 2);
    assert_true(rep->n_families >= 2);
    assert_int_equal(rep->n_graph, 2);
    assert_int_equal(rep->n_gpus, 2);
    int h200 = strcmp(rep->gpu[0].device, "h200-sxm-141gb") == 0 ? 0 : 1;
    assert_string_equal(rep->gpu[h200].device, "h200-sxm-141gb");
    /* in no eager figure: no held-out rows, no repeats, no interval rows of the H200 */
    assert_int_equal(rep->gpu[h200].n_rows, 0);
    assert_int_equal(rep->gpu[h200].n_repeat, 0);
    assert_int_equal(rep->stack.n_interval, rep->n_rows);
    assert_true(rep->gpu[1 - h200].n_rows == rep->n_rows);
    /* judged apart: by the fit on every row and by the V100's alone */
    assert_true(isfinite(rep->graph_train_mape) && isfinite(rep->graph_logo_mape));
    /* the V100's fit never saw a graph row: its kernels carry the eager rows' floor */
    assert_true(rep->graph_logo_mape >= rep->graph_train_mape);
    free(rep);
    pp_devices_free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipeline_should_match_a_hand_worked_three_kernel_call),
        cmocka_unit_test(pipeline_should_average_back_to_back_calls),
        cmocka_unit_test(graph_replay_should_leave_the_kernels_alone),
        cmocka_unit_test(wave_factor_should_count_waves_on_98_and_14_sms),
        cmocka_unit_test(mig_scaling_should_follow_waves),
        cmocka_unit_test(tensor_feed_should_apply_on_tensor_cores_only),
        cmocka_unit_test(tensor_cores_should_not_pass_their_dense_peak),
        cmocka_unit_test(fp16_accumulation_should_take_its_own_peak_where_the_stack_uses_it),
        cmocka_unit_test(memory_time_should_use_the_measured_stream_bandwidth),
        cmocka_unit_test(memory_time_should_stream_through_the_sms_a_kernel_occupies),
        cmocka_unit_test(a_bigger_mig_slice_should_never_be_slower),
        cmocka_unit_test(batchnorm_pass_should_cost_the_host_its_own),
        cmocka_unit_test(stack_roles_should_run_batchnorm_where_the_runtime_does),
        cmocka_unit_test(epilogues_and_concats_should_follow_the_dataflow),
        cmocka_unit_test(a_relu_after_a_fused_residual_add_should_be_an_epilogue_too),
        cmocka_unit_test(a_tf32_stack_without_tensor_rows_should_borrow_its_fp16_siblings_feed),
        cmocka_unit_test(an_sms_memory_feed_should_add_its_time_harmonically),
        cmocka_unit_test(bn_pass_should_follow_each_folded_conv),
        cmocka_unit_test(l2_reuse_should_find_the_stems_outputs_in_the_cache),
        cmocka_unit_test(attention_should_mark_the_fast_paths_kernels),
        cmocka_unit_test(fused_attention_should_charge_one_dispatch_per_fused_op),
        cmocka_unit_test(stack_artifact_should_round_trip_and_name_a_bad_field),
        cmocka_unit_test(a_contexts_local_memory_should_follow_its_sms),
        cmocka_unit_test(prediction_should_be_host_bound_under_a_slow_host),
        cmocka_unit_test(autocast_should_cast_each_fp32_operand_of_an_fp16_op_first),
        cmocka_unit_test(bf16_should_take_the_fp16_stack_at_its_own_rate),
        cmocka_unit_test(a_cuda_graph_should_leave_the_kernels_alone),
        cmocka_unit_test(calibrated_kernels_should_drop_the_timing_floor_under_a_stack),
        cmocka_unit_test(a_stack_breakdown_should_add_up_to_what_it_launches),
        cmocka_unit_test(fit_should_read_every_mapped_row_of_framework_tax),
        cmocka_unit_test(fit_should_keep_graph_rows_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
