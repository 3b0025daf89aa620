/* tests/test_power.c: the GPU board power model (predictor/power.c) worked by hand, its transfer
 * rules, the artifact's round trip and strictness, the sweep fit (fit/fit_power.c) on a
 * synthetic sweep whose figures are known, and on gpu-benches' measured sweep. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fit/fit.h"
#include "devices/devices.h"
#include "predictor/power.h"
#include "tests/helpers.h"

/* 60 W + 120 pJ/B x 1000 GB/s (120 W) + 5 pJ/flop x 10 TFLOP/s (50 W) = 230 W; capped at 200. */
static void power_should_add_static_bytes_and_flops_and_cap_at_max(void **state)
{
    (void)state;
    pp_power_params pw = {60, 120, 5, 400, 1, NULL};
    assert_rel_close(pp_power_w(&pw, 1000, 10000), 230, 1e-12);
    pw.max_w = 200;
    assert_rel_close(pp_power_w(&pw, 1000, 10000), 200, 1e-12);
    assert_rel_close(pp_power_w(&pw, 0, 0), 60, 1e-12);
}

/* Two kernels with calibrated times in a 1 ms call, p0 60 W, max 200 W (room 140 W). A conv at
 * the rate it reaches (eff x share of its class's peak) draws the whole room, so its flop costs
 * 140 W / (peak x reach); a memory kernel pays the sweep's 120 pJ a byte:
 *   conv on the fp32 lanes (10 TFLOP/s, eff 1): 14 pJ x 1e9 flops + 1e8 B x 120 pJ = 14 + 12 =
 *         26 mJ, but 140 W x 0.1 ms = 14 mJ is all the board can give: 14;
 *   copy: 1e7 B x 120 pJ = 1.2 mJ (room 7 mJ).
 *   60 W x 1 ms + 14 + 1.2 = 75.2 mJ.
 * The conv at 0.2 ms has room (28 mJ) for its 26: 87.2. On TF32 tensor cores of 40 TFLOP/s a flop
 * costs 140 / 40 = 3.5 pJ: 3.5 + 12 = 15.5 mJ, 76.7 in all; at eff 0.5 it reaches 20 TFLOP/s and
 * a flop costs 7 pJ: 7 + 12 = 19, 80.2. */
static void stack_energy_should_match_a_hand_worked_call(void **state)
{
    (void)state;
    pp_stack s;
    memset(&s, 0, sizeof s);
    s.precision = PP_PREC_FP32;
    for (int c = 0; c < PP_SK__COUNT; c++) s.eff[c] = 1;
    pp_device d = {0};
    d.peak_tflops[PP_PREC_FP32] = 10;
    d.memory_bandwidth_gbs = 1000;
    d.compute_units = 80;
    pp_stack_kernel k[2] = {
        {.cls = PP_SK_CONV, .flops = 1e9, .bytes = 1e8, .blocks = 1000, .cal_ms = 0.1, .red = 512},
        {.cls = PP_SK_MEM, .bytes = 1e7, .blocks = 100, .cal_ms = 0.05}};
    double scratch[8] = {0}, dyn;
    pp_power_params pw = {60, 120, 5, 200, 1, NULL};
    assert_rel_close(pp_stack_energy_mj(&s, &d, &pw, k, 2, scratch, 1.0, &dyn), 75.2, 1e-12);
    assert_rel_close(dyn, 15.2, 1e-12);
    k[0].cal_ms = 0.2;
    assert_rel_close(pp_stack_energy_mj(&s, &d, &pw, k, 2, scratch, 1.0, NULL), 87.2, 1e-12);
    d.peak_tflops[PP_PREC_TF32] = 40;
    s.tf32_conv = 1;
    assert_rel_close(pp_stack_energy_mj(&s, &d, &pw, k, 2, scratch, 1.0, NULL), 76.7, 1e-12);
    s.eff[PP_SK_CONV] = 0.5;
    assert_rel_close(pp_stack_compute_reach(&s, &d, &k[0]), 0.5, 1e-12);
    assert_rel_close(pp_stack_energy_mj(&s, &d, &pw, k, 2, scratch, 1.0, NULL), 80.2, 1e-12);
    /* an fp16 stack moves half the bytes: copy 0.6 mJ; the conv on the fp32 lanes (no fp16 rate
     * here) at eff 1 again: 14 + 6 = 20 mJ, within its 28 */
    s.eff[PP_SK_CONV] = 1;
    s.precision = PP_PREC_FP16;
    s.tf32_conv = 0;
    assert_rel_close(pp_stack_energy_mj(&s, &d, &pw, k, 2, scratch, 1.0, NULL), 60 + 20 + 0.6,
                     1e-12);
    /* the memory class reaches no compute rate: it pays the sweep's pJ a flop */
    assert_rel_close(pp_stack_compute_reach(&s, &d, &k[1]), 0, 1e-12);
}

static pp_power_set toy_set(void)
{
    pp_power_set s;
    memset(&s, 0, sizeof s);
    s.n = 1;
    snprintf(s.g[0].device, sizeof s.g[0].device, "big-gpu");
    s.g[0].p0_w = 70;
    s.g[0].pj_per_byte = 110;
    s.g[0].pj_per_flop = 5;
    s.g[0].p0_fitted = 1;
    s.g[0].points = 10;
    s.idle_fraction = 0.2;
    s.pj_per_byte_family[PP_MEMFAM_HBM] = 120;
    s.pj_per_byte_family[PP_MEMFAM_GDDR] = 200;
    s.pj_per_flop = 6;
    snprintf(s.source, sizeof s.source, "test");
    return s;
}

/* The fitted GPU keeps its own figures; a slice of it shares p0 by its power; another GPU takes
 * idle_fraction x max power and its family's energy per byte; an unknown family the mean. */
static void power_for_should_follow_the_transfer_rules(void **state)
{
    (void)state;
    pp_power_set s = toy_set();
    pp_device big = {0}, slice = {0}, other = {0}, board = {0};
    big.name = "big-gpu";
    big.max_power_w = 400;
    slice.name = "big-gpu-mig-3g";
    slice.is_mig = 1;
    slice.parent = &big;
    slice.max_power_w = 400.0 * 3 / 7;
    other.name = "other";
    other.max_power_w = 300;
    other.memory_type = "gddr6";
    board.name = "board";
    board.max_power_w = 15;
    board.memory_type = "lpddr5";
    pp_power_params pw;
    assert_int_equal(pp_power_for(&s, &big, &pw), 1);
    assert_int_equal(pw.calibrated, 1);
    assert_rel_close(pw.p0_w, 70, 1e-12);
    assert_rel_close(pw.pj_per_byte, 110, 1e-12);
    assert_int_equal(pp_power_for(&s, &slice, &pw), 1);
    assert_int_equal(pw.calibrated, 0);
    assert_rel_close(pw.p0_w, 30, 1e-12);
    assert_rel_close(pw.pj_per_flop, 5, 1e-12);
    assert_int_equal(pp_power_for(&s, &other, &pw), 1);
    assert_rel_close(pw.p0_w, 60, 1e-12);
    assert_rel_close(pw.pj_per_byte, 200, 1e-12);
    assert_rel_close(pw.pj_per_flop, 6, 1e-12);
    assert_int_equal(pp_power_for(&s, &board, &pw), 1);
    assert_rel_close(pw.pj_per_byte, 160, 1e-12);
    assert_rel_close(pw.p0_w, 3, 1e-12);
    /* no board power stated, or no artifact: nothing */
    other.max_power_w = 0;
    assert_int_equal(pp_power_for(&s, &other, &pw), 0);
    s.n = 0;
    assert_int_equal(pp_power_for(&s, &big, &pw), 0);
}

static void power_artifact_should_round_trip_and_name_a_bad_field(void **state)
{
    (void)state;
    pp_power_set s = toy_set(), back;
    char path[4096];
    snprintf(path, sizeof path, "%s/test_power_artifact.json", PP_BINARY_DIR);
    pp_err err = {0};
    assert_int_equal(pp_power_save(&s, path, "{\"note\": 1}", &err), PERFPRED_OK);
    assert_int_equal(pp_power_load(path, &back, &err), PERFPRED_OK);
    assert_int_equal(back.n, 1);
    assert_string_equal(back.g[0].device, "big-gpu");
    assert_rel_close(back.g[0].pj_per_byte, 110, 1e-12);
    assert_rel_close(back.idle_fraction, 0.2, 1e-12);
    assert_rel_close(back.pj_per_byte_family[PP_MEMFAM_GDDR], 200, 1e-12);
    assert_true(back.pj_per_byte_family[PP_MEMFAM_LPDDR] == 0);
    char *text = pp_test_read_text(path);
    assert_non_null(text);
    char *p = strstr(text, "\"idle_fraction\"");
    assert_non_null(p);
    memcpy(p, "\"idle_fractioX\"", 15);
    pp_test_write_text(path, text);
    free(text);
    assert_int_equal(pp_power_load(path, &back, &err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err.msg, "idle_fraction"));
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(back.n, 0);
}

/* A sweep of known figures: A100 file p0 60 W, 120 pJ/B, 5 pJ/flop; H200 file p0 105 W (both 15 %
 * of max power), the same energies. Traffic falls as work rises, as in gpu-benches. The fit recovers them; points at
 * the power limit or a lowered clock are set aside. */
static void write_sweep(const char *path, double p0, double bw_max, double gf_max, double max_w,
                        int limit_point)
{
    char text[16384];
    int off = 0;
    for (int i = 0; i < 40; i++) {
        double ai = 0.25 + i * 2, gf = fmin(ai * bw_max, gf_max), bw = gf / ai;
        double w = p0 + 0.120 * bw + 0.005 * gf;
        off += snprintf(text + off, sizeof text - (size_t)off,
                        "%d 864 blocks %d its %.3f Fl/B %.0f GB/s %.0f GF/s 1410 Mhz %.3f W 50°C\n",
                        i % 8, i, ai, bw, gf, w);
    }
    if (limit_point)
        off += snprintf(text + off, sizeof text - (size_t)off,
                        "0 864 blocks 99 its 9.000 Fl/B 900 GB/s 8000 GF/s 1300 Mhz %.0f W 70°C\n",
                        max_w);
    snprintf(text + off, sizeof text - (size_t)off, "-- Finished Building --\n\n");
    pp_test_write_text(path, text);
}

static void fit_should_recover_a_known_sweep(void **state)
{
    (void)state;
    char dir[4096], sub[4200];
    snprintf(dir, sizeof dir, "%s/test_power_sweep", PP_BINARY_DIR);
    mkdir(dir, 0755);
    snprintf(sub, sizeof sub, "%s/gpu-roofline", dir);
    mkdir(sub, 0755);
    snprintf(sub, sizeof sub, "%s/gpu-roofline/alex_a100_40.txt", dir);
    write_sweep(sub, 60, 1400, 19000, 400, 1);
    snprintf(sub, sizeof sub, "%s/gpu-roofline/h200.txt", dir);
    write_sweep(sub, 105, 3800, 42000, 700, 0);
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    pp_fit_power_report *rep = malloc(sizeof *rep);
    assert_non_null(rep);
    assert_int_equal(pp_fit_power_run(db, dir, rep, &err), PERFPRED_OK);
    assert_int_equal(rep->n_gpus, 2);
    assert_string_equal(rep->set.g[0].device, "a100-sxm4-40gb");
    assert_int_equal(rep->gpu[0].points, 41);
    assert_int_equal(rep->gpu[0].throttled, 1);
    /* the H200's own model passes 0.97 x 700 = 679 W around its ridge (11 Fl/B): at 6.25 Fl/B
     * 105 + 456 + 118.75 = 679.75 W, up to 12.25 Fl/B (726.4 W); 14.25 gives 668.7 W */
    assert_int_equal(rep->gpu[1].throttled, 4);
    assert_int_equal(rep->n_lines_skipped, 2); /* "-- Finished Building --" twice */
    assert_rel_close(rep->set.g[0].p0_w, 60, 1e-3);
    assert_rel_close(rep->set.g[0].pj_per_byte, 120, 1e-3);
    assert_rel_close(rep->set.g[0].pj_per_flop, 5, 1e-3);
    assert_rel_close(rep->set.g[1].p0_w, 105, 1e-3);
    assert_rel_close(rep->set.idle_fraction, 0.15, 1e-3);
    assert_true(rep->gpu[0].fit_mape < 0.1);
    assert_rel_close(rep->set.pj_per_byte_family[PP_MEMFAM_HBM], 120, 1e-3);
    /* a sweep file the mapping does not know is named */
    snprintf(sub, sizeof sub, "%s/gpu-roofline/mystery.txt", dir);
    pp_test_write_text(sub, "0 1 blocks 0 its 0.250 Fl/B 1 GB/s 1 GF/s 1 Mhz 1 W\n");
    assert_int_equal(pp_fit_power_run(db, dir, rep, &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "mystery.txt"));
    remove(sub);
    free(rep);
    pp_devices_free(db);
}

/* gpu-benches' measured sweep: four GPUs; each one's power predicted from the other three's
 * transferred figures. The bound is the issue's: a power model worth labelling calibrated. */
static void fit_should_transfer_across_gpu_benches_gpus(void **state)
{
    (void)state;
    const char *data = pp_test_path("../shared/datasets/gpu-benches");
    struct stat st;
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/gpu-roofline", data);
    if (stat(probe, &st) != 0) {
        print_message("skipped: ../shared/datasets/gpu-benches is not beside the tree\n");
        return;
    }
    char dcopy[4200];
    snprintf(dcopy, sizeof dcopy, "%s", data);
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err), PERFPRED_OK);
    pp_fit_power_report *rep = malloc(sizeof *rep);
    assert_non_null(rep);
    assert_int_equal(pp_fit_power_run(db, dcopy, rep, &err), PERFPRED_OK);
    assert_int_equal(rep->n_gpus, 4);
    for (int i = 0; i < rep->n_gpus; i++) {
        assert_true(rep->gpu[i].fit_mape < 5);
        assert_true(rep->gpu[i].held_out_mape < 25);
    }
    assert_true(rep->held_out_mape < 15);
    /* HBM moves a byte for less than GDDR does */
    assert_true(rep->set.pj_per_byte_family[PP_MEMFAM_HBM] <
                rep->set.pj_per_byte_family[PP_MEMFAM_GDDR]);
    free(rep);
    pp_devices_free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(power_should_add_static_bytes_and_flops_and_cap_at_max),
        cmocka_unit_test(stack_energy_should_match_a_hand_worked_call),
        cmocka_unit_test(power_for_should_follow_the_transfer_rules),
        cmocka_unit_test(power_artifact_should_round_trip_and_name_a_bad_field),
        cmocka_unit_test(fit_should_recover_a_known_sweep),
        cmocka_unit_test(fit_should_transfer_across_gpu_benches_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
