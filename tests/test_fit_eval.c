/* tests/test_fit_eval.c: the calibration loop's fits and reports through the public API and the
 * CLI: fits on real NeuSight rows (artifacts that load back, an interrupted write that leaves the
 * previous ones in force, rescaled sessions), evaluation against hand-computed metrics, the
 * overhead correction, and exit codes. */
#include "tests/calib_fixture.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"
#include "layer_models/layer_models.h"

/* --------------------------------------------------------------------- fit ---- */

static perfpred_fit_params fit_params(const char *out_dir, int seed)
{
    static const char *files[1];
    files[0] = g_lin;
    perfpred_fit_params p = pp_test_fit_params("a100-pcie-40gb", files, 1, g_cfg, out_dir);
    p.seed = seed;
    p.n_rounds = 40;
    return p;
}

static void fit_should_write_artifacts_that_load_back(void **state)
{
    (void)state;
    if (!has_neusight()) skip();
    char dir[1300], err[1024];
    path_in(dir, sizeof dir, "art_fit");
    perfpred_fit_params p = fit_params(dir, 42);
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.wrote_artifacts, 1);
    assert_int_equal(r.n_rows_read, 400);
    assert_int_equal(r.n_kinds, 1);
    const perfpred_fit_kind *k = &r.kinds[0];
    assert_string_equal(k->kind, "linear");
    assert_int_equal(k->n_train + k->n_heldout, 400);
    int n_cfg = k->n_train_configs + k->n_heldout_configs;
    assert_int_equal(k->n_heldout_configs, (int)floor(0.2 * n_cfg + 0.5));
    assert_int_equal(k->model.n, k->n_heldout);
    assert_true(isfinite(k->model.mape_pct) && k->model.mape_pct > 0);
    /* on real rows the fitted model must beat the roofline it corrects */
    assert_true(k->model.mape_pct < k->roofline.mape_pct);
    assert_true(isnan(k->spread_pct)); /* NeuSight publishes no spread */
    assert_rel_close(k->peak_tflops, 19.5, 1e-12); /* the descriptor's fp32 peak */
    pp_layer_models *lm = NULL;
    pp_err e = {0};
    assert_int_equal(pp_layer_models_load(dir, &lm, &e), PERFPRED_OK);
    assert_true(pp_layer_models_covers(lm, PP_OPK_LINEAR, PP_LM_LATENCY));
    assert_false(pp_layer_models_covers(lm, PP_OPK_CONV, PP_LM_LATENCY));
    const pp_lm_entry *en = pp_layer_models_entry(lm, PP_OPK_LINEAR, PP_LM_LATENCY);
    assert_rel_close(en->heldout_mape_pct, k->model.mape_pct, 1e-9);
    assert_int_equal(en->n_heldout, k->n_heldout);
    pp_layer_models_free(lm);
    /* the manifest names the CSV and accounts for every row */
    char mpath[1400];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
    char *text = pp_test_read_text(mpath);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    const cJSON *src;
    int rows = 0;
    cJSON_ArrayForEach(src, cJSON_GetObjectItem(root, "sources"))
    {
        assert_string_equal(cJSON_GetObjectItem(src, "path")->valuestring, g_lin);
        rows += cJSON_GetObjectItem(src, "rows")->valueint;
    }
    assert_int_equal(rows, 400);
    cJSON_Delete(root);
    free(text);
}

/* A context reads a device's regressors when a prediction first needs them: a corrupt model file
 * of the A100 does not stop the context from opening, nor a prediction on a device that does not
 * use it; a prediction that does (the A100, its MIG slice) fails with an error naming the file. */
/* A config folder of a test's own under the scratch folder: cfg/devices links to the real
 * descriptors, cfg/artifacts exists; dir is cfg/artifacts/<device> (not created). */
static void private_config(const char *name, const char *device, char cfg[1300], char dir[1400])
{
    char link[1400];
    path_in(cfg, 1300, name);
    assert_int_equal(mkdir(cfg, 0755), 0);
    snprintf(link, sizeof link, "%s/devices", cfg);
    assert_int_equal(symlink(PP_SOURCE_DIR "/configs/devices", link), 0);
    snprintf(dir, 1400, "%s/artifacts", cfg);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(dir, 1400, "%s/artifacts/%s", cfg, device);
}

static void context_should_read_layer_models_when_first_needed(void **state)
{
    (void)state;
    if (!has_neusight() || !has_models()) skip();
    char cfg[1300], dir[1400], ubj[1700], err[1024];
    private_config("cfg_lazy", "a100-pcie-40gb", cfg, dir);
    perfpred_fit_params fp = fit_params(dir, 42);
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&fp, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.wrote_artifacts, 1);

    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = cfg;
    perfpred_status st;
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1;
    perfpred_model *m = perfpred_model_load(plan_models[0], &mp, &st, err, sizeof err); /* alexnet */
    assert_non_null(m);
    perfpred_prediction good, pred;
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    assert_non_null(ctx);
    assert_int_equal(perfpred_predict(ctx, m, "a100-pcie-40gb", NULL, &good, err, sizeof err),
                     PERFPRED_OK);
    assert_true(good.n_calibrated_kernels > 0); /* its Gemm layers: the linear model answers */
    perfpred_ctx_close(ctx);

    /* the same folder with its model file overwritten */
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    ubj[0] = '\0';
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".ubj")) snprintf(ubj, sizeof ubj, "%s/%s", dir, de->d_name);
    closedir(d);
    assert_true(ubj[0] != '\0');
    pp_test_write_text(ubj, "{ not an XGBoost model");
    ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    if (!ctx) print_error("%s\n", err);
    assert_non_null(ctx);
    assert_int_equal(perfpred_predict(ctx, m, "host-cpu", NULL, &pred, err, sizeof err),
                     PERFPRED_OK);
    assert_int_equal(pred.n_calibrated_kernels, 0); /* no host-cpu models in this folder */
    const char *users[] = {"a100-pcie-40gb", "a100-mig-3g"};
    for (int i = 0; i < 2; i++) {
        err[0] = '\0';
        assert_int_equal(perfpred_predict(ctx, m, users[i], NULL, &pred, err, sizeof err),
                         PERFPRED_ERR_MODEL);
        assert_non_null(strstr(err, strrchr(ubj, '/') + 1));
    }
    perfpred_ctx_close(ctx);
    perfpred_model_free(m);
}

/* The roofline guard on xeon-kvm-2vcpu's run-4 layers: a kind whose regressor does worse than its
 * roofline on the held-out rows is reported, not written, and the manifest leaves it out; every
 * written kind beats its roofline there. (host-cpu's datamove model lost too until a Transpose
 * described its permutation.) */
static void fit_should_leave_out_kinds_the_roofline_beats(void **state)
{
    (void)state;
    char dir[1300], err[1024], csv[1300];
    path_in(dir, sizeof dir, "art_guard");
    snprintf(csv, sizeof csv, "%s/data/xeon-kvm-2vcpu/layers-run4.csv", PP_SOURCE_DIR);
    perfpred_fit_params p = perfpred_fit_default_params();
    const char *files[1] = {csv};
    p.device = "xeon-kvm-2vcpu";
    p.layers_csvs = files;
    p.n_layers_csvs = 1;
    p.out_dir = dir;
    p.nthread = 1;
    p.n_rounds = 60;
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    pp_layer_models *lm = NULL;
    pp_err e = {0};
    assert_int_equal(pp_layer_models_load(dir, &lm, &e), PERFPRED_OK);
    int n_written = 0, n_left = 0;
    for (int i = 0; i < r.n_kinds; i++) {
        const perfpred_fit_kind *k = &r.kinds[i];
        if (k->model.n == 0) continue; /* nothing held out: nothing to judge */
        pp_op_kind kind = PP_OPK__COUNT;
        for (int q = 1; q < PP_OPK__COUNT; q++)
            if (!strcmp(pp_op_kind_name((pp_op_kind)q), k->kind)) kind = (pp_op_kind)q;
        assert_true(kind != PP_OPK__COUNT);
        if (k->written) {
            n_written++;
            assert_true(k->model.mean_abs_log <= k->roofline.mean_abs_log);
            assert_true(pp_layer_models_covers(lm, kind, PP_LM_LATENCY));
        } else {
            n_left++;
            assert_true(k->model.mean_abs_log > k->roofline.mean_abs_log);
            assert_non_null(strstr(k->note, "roofline is closer"));
            assert_false(pp_layer_models_covers(lm, kind, PP_LM_LATENCY));
        }
    }
    assert_true(n_written >= 8);
    assert_true(n_left >= 1); /* datamove (36 rows), on these rows */
    pp_layer_models_free(lm);
}

static void fit_should_keep_previous_artifacts_when_interrupted(void **state)
{
    (void)state;
    if (!has_neusight()) skip();
    char dir[1300], err[1024], manifest[1400], blocker[1400];
    path_in(dir, sizeof dir, "art_interrupt");
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    perfpred_fit_params p = fit_params(dir, 1);
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    char *m1 = pp_test_read_text(manifest), *l1 = ubj_listing(dir);
    /* the temporary folder cannot be made: the write fails before anything is replaced */
    snprintf(blocker, sizeof blocker, "%s/.fit-tmp.%ld", dir, (long)getpid());
    pp_test_write_text(blocker, "in the way\n");
    p.seed = 2;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_ERR_IO);
    assert_non_null(strstr(err, ".fit-tmp"));
    char *m2 = pp_test_read_text(manifest), *l2 = ubj_listing(dir);
    assert_string_equal(m1, m2);
    assert_string_equal(l1, l2);
    pp_layer_models *lm = NULL;
    pp_err e = {0};
    assert_int_equal(pp_layer_models_load(dir, &lm, &e), PERFPRED_OK);
    pp_layer_models_free(lm);
    /* unblocked: the new fit replaces the manifest and retires the old model file */
    assert_int_equal(unlink(blocker), 0);
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    char *m3 = pp_test_read_text(manifest), *l3 = ubj_listing(dir);
    assert_int_not_equal(strcmp(m1, m3), 0);
    assert_int_not_equal(strcmp(l1, l3), 0);
    assert_null(strstr(l3, l1)); /* the previous file is gone */
    assert_non_null(strstr(m3, strtok(l3, " ")));
    /* the same seed again: bit-identical model, so the same file name and manifest */
    free(l3);
    l3 = ubj_listing(dir);
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    char *m4 = pp_test_read_text(manifest), *l4 = ubj_listing(dir);
    assert_string_equal(m3, m4);
    assert_string_equal(l3, l4);
    free(m1);
    free(m2);
    free(m3);
    free(m4);
    free(l1);
    free(l2);
    free(l3);
    free(l4);
}

static void fit_should_refuse_rows_of_other_devices_and_mig_slices(void **state)
{
    (void)state;
    if (!has_neusight()) skip();
    char dir[1300], err[1024];
    path_in(dir, sizeof dir, "art_other");
    perfpred_fit_params p = fit_params(dir, 1);
    p.device = "host-cpu";
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err, "400 rows of other devices"));
    p.device = "a100-mig-3g";
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_ERR_DEVICE);
    assert_non_null(strstr(err, "MIG"));
    p = fit_params(dir, 1);
    p.neusight_root = NEUSIGHT_ROOT; /* and layers_csvs: one source only */
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_ERR_INVALID_ARG);
}

/* NeuSight swept every kind on the V100, T4, P100 and P4 too: such a device is fitted from its
 * own rows, against the roofline of its own descriptor (T4 datasheet: 8.1 TFLOP/s fp32,
 * 320 GB/s, 40 SMs), and judged on its own test rows; a kind whose model loses to that roofline
 * is not written. The L4 has test rows only. */
static void neusight_fit_should_take_any_swept_gpu_with_its_descriptor_roofline(void **state)
{
    (void)state;
    if (!has_neusight()) skip();
    char dir[1300], err[1024];
    path_in(dir, sizeof dir, "art_t4");
    perfpred_fit_params p = pp_test_fit_params("t4", NULL, 0, g_cfg, dir);
    p.neusight_root = NEUSIGHT_ROOT;
    p.write_artifacts = 0;
    p.n_rounds = 30;
    static perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.wrote_artifacts, 0);
    assert_int_equal(r.n_kinds, 6);
    for (int i = 0; i < r.n_kinds; i++) {
        const perfpred_fit_kind *k = &r.kinds[i];
        assert_rel_close(k->peak_tflops, 8.1, 1e-12);
        assert_rel_close(k->bw_gbs, 320, 1e-12);
        assert_true(k->n_train > 1000 && k->n_heldout > 0);
        /* element-wise kernels are the regular ones: the model must beat the roofline there */
        if (strcmp(k->kind, "elemwise") == 0)
            assert_true(k->model.mape_pct < k->roofline.mape_pct);
    }
    struct stat sb;
    assert_int_not_equal(stat(dir, &sb), 0); /* dry: not even the folder */
    /* the P4's linear sweep ran 3.5x slower than its test rows: that model loses to the roofline
     * on them and is not written, the other kinds are */
    p.device = "p4";
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    int seen = 0;
    for (int i = 0; i < r.n_kinds; i++) {
        const perfpred_fit_kind *k = &r.kinds[i];
        int lost = k->model.mape_pct > k->roofline.mape_pct;
        assert_int_equal(k->written, !lost);
        if (strcmp(k->kind, "linear") == 0) {
            seen = 1;
            assert_true(lost);
            assert_non_null(strstr(k->note, "not written: the roofline is closer"));
        }
        if (strcmp(k->kind, "elemwise") == 0) assert_false(lost);
    }
    assert_true(seen);
    p.device = "l4";
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err, "no bmm or LayerNorm training sweep of NVIDIA L4"));
}

static void fit_should_leave_out_noisy_rows_when_asked(void **state)
{
    (void)state;
    char csv[1300], dir[1300], err[1024];
    path_in(csv, sizeof csv, "toy_fit.csv");
    path_in(dir, sizeof dir, "art_toy");
    char text[8192];
    int off = snprintf(text, sizeof text, "%s", LAYER_HEADER);
    for (int i = 0; i < 12; i++) {
        int n = 1000 * (i + 1);
        double lat = 0.01 * (i + 1), spread = i % 4 == 0 ? 0.6 * lat : 0.05 * lat;
        off += snprintf(text + off, sizeof text - (size_t)off,
                        "toy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:%d,,%.6g,%.6g,10,,,"
                        "test,2026-01-0%d\n", n, lat, spread, 1 + i % 3);
    }
    pp_test_write_text(csv, text);
    const char *files[] = {csv};
    perfpred_fit_params p = pp_test_fit_params("toy-roofline", files, 1, g_toy, dir);
    p.max_spread_pct = 50;
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_rows_read, 12);
    assert_int_equal(r.n_noisy, 3);
    assert_int_equal(r.kinds[0].n_train + r.kinds[0].n_heldout, 9);
    /* spreads of the rows judged: all 5 % */
    assert_rel_close(r.kinds[0].spread_pct, 5.0, 1e-9);
    /* the manifest is dated by the newest measurement, never by the clock */
    char mpath[1400];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
    char *m = pp_test_read_text(mpath);
    assert_non_null(strstr(m, "\"date\":\t\"2026-01-03\""));
    free(m);
}

static void fit_should_rescale_a_later_session_by_its_anchors(void **state)
{
    (void)state;
    char early[1300], later[1300], few[1300], dir[1300], err[1024];
    path_in(early, sizeof early, "rescale_early.csv");
    path_in(later, sizeof later, "rescale_later.csv");
    path_in(few, sizeof few, "rescale_few.csv");
    path_in(dir, sizeof dir, "art_rescale");
    /* the first session: 40 sizes at the roofline; a later, busier one: 20 of those sizes again
     * and 40 new ones, all slower by a drift that falls with size, 1.5x at 0.1 ms */
    const double log_a = log(1.5) + 0.1 * log(0.1), slope = -0.1;
    pp_test_write_toy_sessions(early, later, log_a, slope);
    const char *files[] = {early}, *rescaled[] = {later};
    perfpred_fit_params p = pp_test_rescale_fit_params("toy-roofline", files, rescaled, g_toy, dir);
    p.write_artifacts = 0;
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_rescaled, 1);
    assert_int_equal(r.rescaled[0].n_rows, 60);
    assert_int_equal(r.rescaled[0].n_anchors, 20);
    assert_rel_close(r.rescaled[0].log_a, log_a, 1e-9);
    assert_rel_close(r.rescaled[0].slope, slope, 1e-9);
    assert_true(r.rescaled[0].anchor_mad_pct < 1e-6);
    /* rescaled, every row is the roofline again; unrescaled, the later rows disagree with it */
    assert_true(r.kinds[0].model.mape_pct < 0.5);
    double rescaled_mape = r.kinds[0].model.mape_pct;
    const char *both[] = {early, later};
    p.layers_csvs = both;
    p.n_layers_csvs = 2;
    p.n_rescaled_csvs = 0;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_rescaled, 0);
    assert_true(r.kinds[0].model.mape_pct > 5.0 + rescaled_mape);
    /* too few anchors: refused, naming the file */
    static char text[16384];
    int off = snprintf(text, sizeof text, "%s", LAYER_HEADER);
    off = pp_test_toy_relu_rows(text, sizeof text, off, 1, 9, 1, 1000, log_a, slope);
    pp_test_toy_relu_rows(text, sizeof text, off, 1, 20, 1, 777, log_a, slope);
    pp_test_write_text(few, text);
    p.layers_csvs = files;
    p.n_layers_csvs = 1;
    rescaled[0] = few;
    p.n_rescaled_csvs = 1;
    err[0] = 0;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err, few));
    assert_non_null(strstr(err, "9 of its 29 rows"));
    assert_non_null(strstr(err, "at least 10"));
    /* a plan not measured yet: no row to rescale, and the first bad row says why */
    snprintf(text, sizeof text,
             "%stoy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:1000,,,,,,,plan,\n",
             LAYER_HEADER);
    pp_test_write_text(few, text);
    err[0] = 0;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err, "no usable measured row"));
    assert_non_null(strstr(err, "latency_ms"));
}

/* --rescale-by-class: on a device whose roofline ridge is 1 FLOP/byte, Relu rows are memory-bound
 * and 64x64 matrix products compute-bound; a later session that slowed the two by different
 * drifts gets one line per class back exactly, where one line for both leaves its anchors off. */
static void fit_should_rescale_each_roofline_class_by_its_own_line(void **state)
{
    (void)state;
    char cfg[1300], devs[1400], early[1300], later[1300], err[1024];
    path_in(cfg, sizeof cfg, "ridge_cfg");
    snprintf(devs, sizeof devs, "%s/devices", cfg);
    mkdir(cfg, 0755);
    mkdir(devs, 0755);
    char yaml[1500];
    snprintf(yaml, sizeof yaml, "%s/toy-ridge.yaml", devs);
    pp_test_write_text(yaml, "name: toy-ridge\n"
                             "description: Toy device whose ridge is 1 FLOP per byte\n"
                             "vendor: Test\nkind: cpu\nhardware:\n  peak_tflops:\n    fp32: 0.001\n"
                             "  memory_bandwidth_gbs: 1.0\n  memory_gb: 1\n  compute_units: 1\n"
                             "runtime:\n  framework: pytorch-eager\n  precision: fp32\n"
                             "  launch_overhead_us: 0\n");
    path_in(early, sizeof early, "ridge_early.csv");
    path_in(later, sizeof later, "ridge_later.csv");
    const double am = 0.6, bm = -0.05, ac = 0.1, bc = -0.02; /* memory-, compute-bound drifts */
    static char text[16384];
    for (int pass = 0; pass < 2; pass++) {
        int off = snprintf(text, sizeof text, "%s", LAYER_HEADER);
        for (int i = 1; i <= 20; i++) {
            double t = 8e-6 * 1000 * i;                /* Relu on 1000 i floats */
            double d = pass ? exp(am + bm * log(t)) : 1;
            off += snprintf(text + off, sizeof text - (size_t)off,
                            "toy-ridge,pytorch-eager,,fp32,elemwise,Relu,1,x:%d,,%.17g,,10,,,t,"
                            "2026-01-01\n", 1000 * i, t * d);
            t = 2.0 * 64 * 64 * 16 * i / 1e6;           /* 1x64x(16 i) by (16 i)x64 at 1 GFLOP/s */
            d = pass ? exp(ac + bc * log(t)) : 1;
            off += snprintf(text + off, sizeof text - (size_t)off,
                            "toy-ridge,pytorch-eager,,fp32,bmm,MatMul,1,x:1x64x%d;x:1x%dx64,,%.17g,,"
                            "10,,,t,2026-01-01\n", 16 * i, 16 * i, t * d);
        }
        pp_test_write_text(pass ? later : early, text);
    }
    const char *files[] = {early}, *rescaled[] = {later};
    perfpred_fit_params p = pp_test_rescale_fit_params("toy-ridge", files, rescaled, cfg, NULL);
    p.write_artifacts = 0;
    perfpred_fit_report r;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.rescaled[0].n_anchors, 40);
    assert_false(r.rescaled[0].by_class);
    assert_true(r.rescaled[0].anchor_mad_pct > 5.0); /* one line cannot serve both */
    p.rescale_by_class = 1;
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    const perfpred_fit_rescale *q = &r.rescaled[0];
    assert_true(q->by_class);
    assert_int_equal(q->class_anchors[0], 20);
    assert_int_equal(q->class_anchors[1], 20);
    assert_true(q->class_own[0] && q->class_own[1]);
    assert_rel_close(q->class_log_a[0], ac, 1e-9);
    assert_rel_close(q->class_slope[0], bc, 1e-9);
    assert_rel_close(q->class_log_a[1], am, 1e-9);
    assert_rel_close(q->class_slope[1], bm, 1e-9);
    assert_true(q->anchor_mad_pct < 1e-6);
}

/* -------------------------------------------------------------------- eval ---- */

static const char *toy_layers(void)
{
    static char path[1300];
    path_in(path, sizeof path, "toy_layers.csv");
    char text[2048];
    /* Relu on n floats reads and writes 4n bytes: 8n bytes at 1 GB/s = 0.008 ms per 1000 */
    snprintf(text, sizeof text,
             "%s"
             "toy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:1000,,0.008,0.0008,10,,,"
             "test,2026-01-01\n"
             "toy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:2000,,0.020,0.001,10,,,"
             "test,2026-01-01\n"
             "toy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:4000,,0.0256,,,,,test,2026-01-01\n"
             "host-cpu,pytorch-eager,,fp32,elemwise,Relu,1,x:4000,,0.1,,,,,test,2026-01-01\n",
             LAYER_HEADER);
    pp_test_write_text(path, text);
    return path;
}

static void eval_should_match_hand_computed_metrics(void **state)
{
    (void)state;
    perfpred_eval_params p = perfpred_eval_default_params();
    p.device = "toy-roofline";
    p.layers_csv = toy_layers();
    p.config_dir = g_toy;
    perfpred_eval_report r;
    char err[1024];
    assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_points, 3);
    assert_int_equal(r.n_other_device, 1);
    assert_int_equal(r.n_groups, 1);
    assert_string_equal(r.groups[0].name, "elemwise");
    /* predictions 0.008, 0.016, 0.032 ms: errors 0, -20 %, +25 % */
    assert_rel_close(r.points[0].predicted_ms, 0.008, 1e-9);
    assert_rel_close(r.points[1].predicted_ms, 0.016, 1e-9);
    assert_rel_close(r.points[2].predicted_ms, 0.032, 1e-9);
    assert_rel_close(r.overall.model.mape_pct, 15.0, 1e-9);
    assert_rel_close(r.overall.model.rmspe_pct, 100.0 * sqrt((0.04 + 0.0625) / 3.0), 1e-9);
    assert_rel_close(r.overall.model.within10_pct, 100.0 / 3.0, 1e-9);
    assert_rel_close(r.overall.model.spearman, 1.0, 1e-12);
    /* spread/latency: 10 %, 5 %, not reported -> median 7.5 % */
    assert_rel_close(r.overall.spread_pct, 7.5, 1e-9);
    assert_int_equal(r.overall.n_spread, 2);
    /* uncalibrated: the prediction is the roofline */
    assert_rel_close(r.overall.roofline.mape_pct, 15.0, 1e-9);
    assert_int_equal(r.overall.n_calibrated, 0);
    /* the report's metrics are the library's metrics of its own points */
    double pr[3], me[3];
    for (int i = 0; i < 3; i++) {
        pr[i] = r.points[i].predicted_ms;
        me[i] = r.points[i].measured_ms;
    }
    pp_metrics m;
    pp_err e = {0};
    assert_int_equal(pp_measure_metrics(pr, me, 3, &m, &e), PERFPRED_OK);
    assert_rel_close(r.groups[0].model.mape_pct, m.mape_pct, 1e-12);
    assert_rel_close(r.groups[0].model.rmspe_pct, m.rmspe_pct, 1e-12);
    perfpred_eval_report_free(&r);
    assert_null(r.points);
}

static void eval_networks_should_predict_like_the_public_api(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char path[1300], text[4096];
    path_in(path, sizeof path, "toy_networks.csv");
    snprintf(text, sizeof text,
             "%s"
             "models/alexnet.onnx,alexnet,toy-roofline,pytorch-eager,,fp32,1,,40,2,7,,,"
             "test,2026-01-01\n"
             "models/alexnet.onnx,alexnet,toy-roofline,pytorch-eager,,fp32,2,input:2x3x224x224,"
             "90,,,,,test,2026-01-01\n"
             "%s,mobilenet,toy-roofline,pytorch-eager,,fp32,1,,15,,,,,test,2026-01-01\n",
             NET_HEADER, plan_models[1]);
    pp_test_write_text(path, text);
    perfpred_eval_params p = perfpred_eval_default_params();
    p.device = "toy-roofline";
    p.networks_csv = path;
    p.config_dir = g_toy;
    perfpred_eval_report r;
    char err[1024];
    assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_points, 3);
    assert_int_equal(r.n_groups, 2);
    assert_string_equal(r.groups[0].name, "alexnet");
    assert_string_equal(r.groups[1].name, "mobilenet");
    assert_int_equal(r.groups[0].model.n, 2);
    /* each point is what the public API predicts for that model, batch and shape */
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = g_toy;
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    assert_non_null(ctx);
    const char *files[3] = {MODELS "/alexnet.onnx", MODELS "/alexnet.onnx", plan_models[1]};
    const int64_t batch[3] = {1, 2, 1};
    double pr[2], me[2];
    for (int i = 0; i < 3; i++) {
        perfpred_model_params mp = perfpred_model_default_params();
        mp.batch = batch[i];
        perfpred_model *m = perfpred_model_load(files[i], &mp, &st, err, sizeof err);
        assert_non_null(m);
        perfpred_prediction pred;
        assert_int_equal(perfpred_predict(ctx, m, "toy-roofline", NULL, &pred, err, sizeof err),
                         PERFPRED_OK);
        assert_rel_close(r.points[i].predicted_ms, pred.latency_ms.value, 1e-12);
        assert_int_equal(r.points[i].batch, batch[i]);
        perfpred_model_free(m);
        if (i < 2) {
            pr[i] = r.points[i].predicted_ms;
            me[i] = r.points[i].measured_ms;
        }
    }
    assert_true(r.points[1].predicted_ms > r.points[0].predicted_ms); /* batch 2 */
    pp_metrics m;
    pp_err e = {0};
    assert_int_equal(pp_measure_metrics(pr, me, 2, &m, &e), PERFPRED_OK);
    assert_rel_close(r.groups[0].model.mape_pct, m.mape_pct, 1e-12);
    assert_rel_close(r.groups[0].spread_pct, 5.0, 1e-12); /* 2 ms of 40 ms, one row reports */
    perfpred_ctx_close(ctx);
    perfpred_eval_report_free(&r);
}

/* Network rows of host-cpu measured on another machine (a device name reused on new hardware):
 * eval says so, naming both machines and the first such row; rows of the calibrated machine, or
 * rows that name no machine, pass without it. */
static void eval_networks_should_flag_rows_of_another_machine(void **state)
{
    (void)state;
    if (!has_models()) skip();
    static const char intel[] = "Intel(R) Xeon(R) Processor (2 logical CPUs, x86_64)";
    const char *machines[3] = {intel, "Other CPU (8 logical CPUs, aarch64)", NULL};
    for (int c = 0; c < 3; c++) {
        char path[1300], text[4096], src[160];
        path_in(path, sizeof path, "machine_networks.csv");
        if (machines[c]) snprintf(src, sizeof src, "\"runner; machine=%s; utc=x\"", machines[c]);
        else snprintf(src, sizeof src, "runner");
        snprintf(text, sizeof text,
                 "%s"
                 "models/alexnet.onnx,alexnet,host-cpu,pytorch-eager,,fp32,1,,40,,,,,runner,"
                 "2026-01-01\n"
                 "models/alexnet.onnx,alexnet,host-cpu,pytorch-eager,,fp32,2,,80,,,,,%s,"
                 "2026-01-01\n",
                 NET_HEADER, src);
        pp_test_write_text(path, text);
        perfpred_eval_params p = perfpred_eval_default_params();
        p.device = "host-cpu";
        p.networks_csv = path;
        p.config_dir = PP_SOURCE_DIR "/configs";
        perfpred_eval_report r;
        char err[1024];
        assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_OK);
        assert_int_equal(r.n_points, 2);
        int flagged = 0;
        for (int i = 0; i < r.n_msgs; i++)
            if (strstr(r.msgs[i], "another machine")) {
                flagged = 1;
                assert_non_null(strstr(r.msgs[i], "machine_networks.csv:3: 1 of 1 rows"));
                assert_non_null(strstr(r.msgs[i], "measured on Other CPU (8 logical CPUs"));
                assert_non_null(strstr(r.msgs[i], "host-cpu's layer models on Intel(R) Xeon(R)"));
            }
        assert_int_equal(flagged, c == 1);
        perfpred_eval_report_free(&r);
    }
}

/* The in-network overhead correction: rows made from the public API's own layer sums, kernel
 * counts and kernel bytes as 1.25 x sum + 0.5 ms x kernels + 0.02 ms x MB give back a = 1.25,
 * c = 500 us and d = 20 us per MB on every fold (three models, so that each fold's two training
 * models tell the terms apart), with no error; the artifact is written, and predictions then
 * apply it (and leave it out when asked). A negative per-kernel time is not kept. */
/* A config with host-cpu's real layer models (no GNN), in a folder of our own: dir is its
 * artifacts/host-cpu; a context opened on it, with cp its parameters. */
static perfpred_ctx *host_cpu_layers_config(const char *name, char cfg[1300], char dir[1400],
                                            perfpred_ctx_params *cp)
{
    char from[1500], to[1700];
    private_config(name, "host-cpu", cfg, dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    DIR *d = opendir(PP_SOURCE_DIR "/configs/artifacts/host-cpu");
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.' || strncmp(de->d_name, "gnn-", 4) == 0 ||
            strncmp(de->d_name, "overhead-", 9) == 0)
            continue;
        snprintf(from, sizeof from, "%s/configs/artifacts/host-cpu/%s", PP_SOURCE_DIR, de->d_name);
        snprintf(to, sizeof to, "%s/%s", dir, de->d_name);
        assert_int_equal(symlink(from, to), 0);
    }
    closedir(d);
    *cp = perfpred_ctx_default_params();
    cp->config_dir = cfg;
    perfpred_status st;
    char err[1024];
    perfpred_ctx *ctx = perfpred_ctx_open(cp, &st, err, sizeof err);
    assert_non_null(ctx);
    return ctx;
}

/* Three models of three families at batch 1 to 3 for the overhead tests. */
enum { OVH_NM = 3 };
static const char *const ovh_files[OVH_NM] = {MODELS "/alexnet.onnx",
                                              MODELS "/mobilenet_v3_small.onnx",
                                              MODELS "/mnasnet0_5.onnx"};
static const char *const ovh_family[OVH_NM] = {"alexnet", "mobilenet", "mnasnet"};

/* What the public API gives every (model, batch) above on host-cpu: the layer sum, kernels,
 * megabytes moved and megabytes of cold weights. */
typedef struct ovh_figs {
    double sum[OVH_NM][3], mb[OVH_NM][3], cw[OVH_NM][3];
    int nk[OVH_NM][3];
} ovh_figs;

/* Fills *o and, where path is not NULL, writes a network CSV there whose rows measure
 * w[0] x sum + w[1] x kernels + w[2] x MB + w[3] x MB of cold weights. Its model column names
 * links beside the CSV ("ovh-alexnet.onnx"), so that the rows, and the splits a network fit
 * hashes from them, are the same wherever the tree is checked out. */
static void overhead_rows(perfpred_ctx *ctx, const char *path, const double w[4], ovh_figs *o)
{
    char link[1600], name[256];
    for (int f = 0; path && f < OVH_NM; f++) {
        const char *base = strrchr(ovh_files[f], '/') + 1;
        snprintf(name, sizeof name, "ovh-%s", base);
        snprintf(link, sizeof link, "%.*s/%s", (int)(strrchr(path, '/') - path), path, name);
        unlink(link);
        assert_int_equal(symlink(ovh_files[f], link), 0);
    }
    char text[8192], err[1024];
    perfpred_status st;
    int off = snprintf(text, sizeof text, "%s", NET_HEADER);
    for (int f = 0; f < OVH_NM; f++)
        for (int b = 1; b <= 3; b++) {
            perfpred_model_params mp = perfpred_model_default_params();
            mp.batch = b;
            perfpred_model *m = perfpred_model_load(ovh_files[f], &mp, &st, err, sizeof err);
            assert_non_null(m);
            perfpred_prediction pred;
            perfpred_predict_params pp = perfpred_predict_default_params();
            pp.layer_sum_only = 1;
            assert_int_equal(perfpred_predict(ctx, m, "host-cpu", &pp, &pred, err, sizeof err),
                             PERFPRED_OK);
            perfpred_model_free(m);
            o->sum[f][b - 1] = pred.latency_ms.value;
            o->nk[f][b - 1] = pred.n_kernels;
            o->mb[f][b - 1] = pred.kernel_bytes * 1e-6;
            o->cw[f][b - 1] = pred.cold_weight_bytes * 1e-6;
            assert_true(o->mb[f][b - 1] > 0);
            double meas = w[0] * o->sum[f][b - 1] + w[1] * o->nk[f][b - 1] +
                          w[2] * o->mb[f][b - 1] + w[3] * o->cw[f][b - 1];
            off += snprintf(text + off, sizeof text - (size_t)off,
                            "ovh-%s,%s,host-cpu,pytorch-eager,,fp32,%d,,%.17g,,,,,test,2026-01-01\n",
                            strrchr(ovh_files[f], '/') + 1, ovh_family[f], b, meas);
        }
    if (path) pp_test_write_text(path, text);
}

/* A private config folder `name` with host-cpu's layer models (its path into cfg, its artifacts
 * folder into dir, the context's parameters into *cp) and overhead_rows' network CSV `csv` in the
 * build folder (into path). */
static void overhead_networks(const char *name, const char *csv, const double w[4], char cfg[1300],
                              char dir[1400], char path[1500], perfpred_ctx_params *cp, ovh_figs *o)
{
    perfpred_ctx *ctx = host_cpu_layers_config(name, cfg, dir, cp);
    path_in(path, 1500, csv);
    overhead_rows(ctx, path, w, o);
    perfpred_ctx_close(ctx);
}

/* The in-network correction's fit over overhead_rows' networks at path: host-cpu's layer models in
 * cfg, one fold per family of ovh_family. */
static perfpred_overhead_params ovh_params(const char *path, const char *cfg)
{
    perfpred_overhead_params op = perfpred_overhead_default_params();
    op.device = "host-cpu";
    op.networks_csv = path;
    op.folds = "alexnet;mobilenet;mnasnet";
    op.config_dir = cfg;
    return op;
}

static void fit_overhead_should_recover_scale_and_per_kernel_time(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char cfg[1300], dir[1400], to[1700], err[1024], path[1500];
    perfpred_ctx_params cp;
    perfpred_ctx *ctx = host_cpu_layers_config("cfg_overhead", cfg, dir, &cp);
    perfpred_status st;
    enum { NM = OVH_NM };
    const char *const *files = ovh_files;
    ovh_figs o;
    for (int sign = 0; sign < 2; sign++) {
        path_in(path, sizeof path, "overhead_networks.csv");
        /* sign 1: a per-kernel time of -0.01 ms, which the fit must not keep */
        static const double neg[4] = {1.25, -0.01, 0, 0}, pos[4] = {1.25, 0.5, 0.02, 0};
        overhead_rows(ctx, path, sign ? neg : pos, &o);
        perfpred_overhead_params op = ovh_params(path, cfg);
        op.dry_run = sign;
        perfpred_overhead_report r;
        assert_int_equal(perfpred_calibrate_fit_overhead(&op, &r, err, sizeof err), PERFPRED_OK);
        assert_int_equal(r.n_used, 9);
        assert_int_equal(r.n_folds, 3);
        assert_int_equal(r.folds[0].n_rows, 3);
        if (!sign) {
            for (int k = 0; k < NM; k++) {
                assert_rel_close(r.folds[k].scale, 1.25, 1e-6);
                assert_rel_close(r.folds[k].per_kernel_us, 500, 1e-6);
                assert_rel_close(r.folds[k].per_mb_us, 20, 1e-6);
                assert_true(r.folds[k].corrected_mape_pct < 1e-6);
            }
            assert_rel_close(r.scale, 1.25, 1e-6);
            assert_rel_close(r.per_kernel_us, 500, 1e-6);
            assert_rel_close(r.per_mb_us, 20, 1e-6);
            assert_true(fabs(r.per_cold_weight_mb_us) < 1e-6);
            assert_int_equal(r.written, 1);
            assert_int_equal(access(r.path, R_OK), 0);
        } else {
            assert_true(r.per_kernel_us == 0);
            assert_true(r.per_mb_us >= 0);
            assert_int_equal(r.written, 0);
        }
        /* a family with no rows is refused, naming it */
        op.folds = "alexnet;mobilenett";
        assert_int_equal(perfpred_calibrate_fit_overhead(&op, &r, err, sizeof err),
                         PERFPRED_ERR_INVALID_ARG);
        assert_non_null(strstr(err, "mobilenett"));
    }
    /* networks that ran at 2 % of the layer sum (a descriptor far from the machine): a scale the
     * predictor would refuse to read is not written */
    {
        char odir[1600], opath[1700];
        path_in(path, sizeof path, "overhead_far.csv");
        static const double far[4] = {0.02, 0, 0, 0};
        overhead_rows(ctx, path, far, &o);
        path_in(odir, sizeof odir, "overhead_far_out");
        perfpred_overhead_params op = ovh_params(path, cfg);
        op.out_dir = odir;
        perfpred_overhead_report r;
        assert_int_equal(perfpred_calibrate_fit_overhead(&op, &r, err, sizeof err), PERFPRED_OK);
        assert_rel_close(r.scale, 0.02, 1e-6);
        assert_true(r.pooled_corrected_mape_pct < r.pooled_layer_sum_mape_pct);
        assert_int_equal(r.out_of_range, 1);
        assert_int_equal(r.written, 0);
        snprintf(opath, sizeof opath, "%s/overhead-latency.json", odir);
        assert_int_equal(access(opath, F_OK), -1);
    }
    perfpred_ctx_close(ctx);
    /* a new context applies the correction written above */
    ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    assert_non_null(ctx);
    perfpred_device_info info;
    assert_int_equal(perfpred_device_find(ctx, "host-cpu", &info), PERFPRED_OK);
    assert_int_equal(info.overhead_correction, 1);
    for (int f = 0; f < NM; f++) {
        perfpred_model_params mp = perfpred_model_default_params();
        mp.batch = 2;
        perfpred_model *m = perfpred_model_load(files[f], &mp, &st, err, sizeof err);
        assert_non_null(m);
        perfpred_prediction pred, raw;
        assert_int_equal(perfpred_predict(ctx, m, "host-cpu", NULL, &pred, err, sizeof err),
                         PERFPRED_OK);
        assert_rel_close(pred.latency_ms.value,
                         1.25 * o.sum[f][1] + 0.5 * o.nk[f][1] + 0.02 * o.mb[f][1], 1e-6);
        assert_non_null(strstr(pred.latency_ms.source, "us per MB moved"));
        assert_non_null(strstr(pred.latency_ms.source, "in-network overhead of host-cpu"));
        perfpred_predict_params pp = perfpred_predict_default_params();
        pp.layer_sum_only = 1;
        assert_int_equal(perfpred_predict(ctx, m, "host-cpu", &pp, &raw, err, sizeof err),
                         PERFPRED_OK);
        assert_rel_close(raw.latency_ms.value, o.sum[f][1], 1e-12);
        perfpred_model_free(m);
    }
    perfpred_ctx_close(ctx);
    /* layer rows are judged on the layer models alone: the same predictions with the correction
     * (scale 1.25, 0.5 ms per kernel) as without it */
    double with[3];
    for (int k = 0; k < 2; k++) {
        perfpred_eval_params ep = perfpred_eval_default_params();
        ep.device = "host-cpu";
        ep.layers_csv = PP_SOURCE_DIR "/data/host-cpu/layers.csv";
        ep.config_dir = cfg;
        perfpred_eval_report er;
        assert_int_equal(perfpred_eval(&ep, &er, err, sizeof err), PERFPRED_OK);
        assert_true(er.n_points > 500);
        for (int i = 0; i < 3; i++) {
            if (!k) with[i] = er.points[i].predicted_ms;
            else assert_true(er.points[i].predicted_ms == with[i]);
        }
        perfpred_eval_report_free(&er);
        if (!k) {
            snprintf(path, sizeof path, "%s/overhead-latency.json", dir);
            snprintf(to, sizeof to, "%s/overhead-latency.json.off", dir);
            assert_int_equal(rename(path, to), 0);
        }
    }
    assert_int_equal(rename(to, path), 0);
    /* a broken artifact: the context refuses to open, naming the file */
    snprintf(path, sizeof path, "%s/overhead-latency.json", dir);
    pp_test_write_text(path, "{\"format\": \"perfpred-overhead\", \"version\": 1, \"scale\": -3}");
    assert_null(perfpred_ctx_open(&cp, &st, err, sizeof err));
    assert_int_equal(st, PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err, "overhead-latency.json"));
    /* version 2 needs its per-MB term; version 1 (before it) loads without one */
    pp_test_write_text(path, "{\"format\": \"perfpred-overhead\", \"version\": 2, \"scale\": 1.1, "
                             "\"per_kernel_ms\": 0.01, \"rows\": 9, \"data\": \"x.csv\"}");
    assert_null(perfpred_ctx_open(&cp, &st, err, sizeof err));
    assert_non_null(strstr(err, "per_mb_ms"));
    /* version 3 needs its cold-weight term */
    pp_test_write_text(path, "{\"format\": \"perfpred-overhead\", \"version\": 3, \"scale\": 1.1, "
                             "\"per_kernel_ms\": 0.01, \"per_mb_ms\": 0, \"rows\": 9, "
                             "\"data\": \"x.csv\"}");
    assert_null(perfpred_ctx_open(&cp, &st, err, sizeof err));
    assert_non_null(strstr(err, "per_cold_weight_mb_ms"));
    pp_test_write_text(path, "{\"format\": \"perfpred-overhead\", \"version\": 1, \"scale\": 1.1, "
                             "\"per_kernel_ms\": 0.01, \"rows\": 9, \"data\": \"x.csv\"}");
    ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    assert_non_null(ctx);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 2;
    perfpred_model *m = perfpred_model_load(files[0], &mp, &st, err, sizeof err);
    assert_non_null(m);
    perfpred_prediction pred;
    assert_int_equal(perfpred_predict(ctx, m, "host-cpu", NULL, &pred, err, sizeof err), PERFPRED_OK);
    assert_rel_close(pred.latency_ms.value, 1.1 * o.sum[0][1] + 0.01 * o.nk[0][1], 1e-9);
    assert_null(strstr(pred.latency_ms.source, "per MB"));
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

/* Weights past the last-level cache: host-cpu states 105 MiB of it; AlexNet's 61,100,840 fp32
 * weights (244.4 MB) are past it at every batch, MobileNetV3-Small's and MnasNet 0.5's few MB with
 * their activations are not. Of AlexNet's, the layers whose own working set fits the cache were
 * warm when timed alone: all but the first classifier Gemm, whose 9216 x 4096 weights and 4096
 * biases (151.0 MB) stream from memory alone too, so its 61,100,840 - 37,752,832 = 23,348,008
 * weights are the cold ones (93.4 MB). Rows that pay 0.05 ms per cold MB on top of the other terms: the fit
 * on every row finds all four figures, the fold that holds AlexNet out has no cold row to learn
 * the term from and leaves it out, and a new context charges it. */
static void fit_overhead_should_recover_cold_weights_past_the_last_level_cache(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char cfg[1300], dir[1400], err[1024], path[1500];
    perfpred_ctx_params cp;
    ovh_figs o;
    static const double w[4] = {1.25, 0.5, 0.02, 0.05};
    overhead_networks("cfg_overhead_cold", "overhead_cold.csv", w, cfg, dir, path, &cp, &o);
    for (int b = 0; b < 3; b++) {
        assert_rel_close(o.cw[0][b], (61100840 - 37752832) * 4e-6, 1e-12);
        assert_true(o.cw[1][b] == 0 && o.cw[2][b] == 0);
    }
    perfpred_overhead_params op = ovh_params(path, cfg);
    perfpred_overhead_report r;
    assert_int_equal(perfpred_calibrate_fit_overhead(&op, &r, err, sizeof err), PERFPRED_OK);
    assert_rel_close(r.scale, 1.25, 1e-6);
    assert_rel_close(r.per_kernel_us, 500, 1e-6);
    assert_rel_close(r.per_mb_us, 20, 1e-6);
    assert_rel_close(r.per_cold_weight_mb_us, 50, 1e-6);
    assert_int_equal(r.written, 1);
    assert_true(r.folds[0].per_cold_weight_mb_us == 0);
    assert_true(r.folds[0].corrected_mape_pct > 0.1);
    for (int k = 1; k < 3; k++) {
        assert_rel_close(r.folds[k].per_cold_weight_mb_us, 50, 1e-6);
        assert_true(r.folds[k].corrected_mape_pct < 1e-6);
    }
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, err, sizeof err);
    assert_non_null(ctx);
    for (int f = 0; f < OVH_NM; f++) {
        perfpred_model_params mp = perfpred_model_default_params();
        mp.batch = 2;
        perfpred_model *m = perfpred_model_load(ovh_files[f], &mp, &st, err, sizeof err);
        assert_non_null(m);
        perfpred_prediction pred;
        assert_int_equal(perfpred_predict(ctx, m, "host-cpu", NULL, &pred, err, sizeof err),
                         PERFPRED_OK);
        assert_rel_close(pred.latency_ms.value,
                         1.25 * o.sum[f][1] + 0.5 * o.nk[f][1] + 0.02 * o.mb[f][1] +
                             0.05 * o.cw[f][1],
                         1e-6);
        assert_non_null(strstr(pred.latency_ms.source,
                               "50.0 us per MB of weights of layers that fit the 105 MiB "
                               "last-level cache alone, where the pass does not"));
        perfpred_model_free(m);
    }
    perfpred_ctx_close(ctx);
}

/* Held-out figures of a GNN ensemble judge what the predictor answers: on a gated row of a device
 * that ships an overhead correction, that correction, refitted without the held-out family. Rows
 * that measure exactly 1.25 x sum + 0.5 ms x kernels + 0.02 ms x MB give back those terms from the
 * two other families' six rows; with a gate that every row passes the corrected figure is then the
 * refitted correction's (no error), and with the overhead artifact gone it is the layer sum's. */
/* The least squares keeps to what a correction may state: rows whose times are 0.05 ms a kernel
 * less half the layer sum (L alternating 1 and 3 ms on 40 and 80 kernels: 1.5 and 2.5 ms) fit
 * a = -0.5 and c = 0.05 ms exactly, a scale no correction may state (below 0.05); the best subset
 * that may be stated is then the scale alone, a = sum(x) / sum(x^2) with x = L / measured: 1 /
 * 1.5 and 3 / 2.5 here, so a = (2/3 + 6/5) / (4/9 + 36/25). */
static void overhead_fit_should_keep_to_stated_figures(void **state)
{
    (void)state;
    perfpred_eval_point pt[4];
    memset(pt, 0, sizeof pt);
    for (int i = 0; i < 4; i++) {
        pt[i].n_kernels = i % 2 ? 80 : 40;
        pt[i].predicted_ms = i % 2 ? 3.0 : 1.0;
        pt[i].measured_ms = 0.05 * pt[i].n_kernels - 0.5 * pt[i].predicted_ms;
    }
    double w[4];
    assert_int_equal(pp_fit_overhead_rows(pt, NULL, 4, w), 0);
    double want = (2.0 / 3.0 + 6.0 / 5.0) / (4.0 / 9.0 + 36.0 / 25.0);
    if (fabs(w[0] - want) > 1e-12 || w[1] != 0 || w[2] != 0 || w[3] != 0)
        print_error("a %.15f (want %.15f), c %g, d %g, e %g\n", w[0], want, w[1], w[2], w[3]);
    assert_true(fabs(w[0] - want) <= 1e-12 && w[1] == 0 && w[2] == 0 && w[3] == 0);
}

static void gated_rows_should_take_the_overhead_correction_refitted_without_them(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char cfg[1300], dir[1400], err[1024], path[1500], gdir[1500], man[1600], off[1700];
    perfpred_ctx_params cp;
    ovh_figs o;
    static const double w[4] = {1.25, 0.5, 0.02, 0};
    overhead_networks("cfg_gated", "gated_networks.csv", w, cfg, dir, path, &cp, &o);
    perfpred_overhead_params op = ovh_params(path, cfg);
    perfpred_overhead_report orep;
    assert_int_equal(perfpred_calibrate_fit_overhead(&op, &orep, err, sizeof err), PERFPRED_OK);
    assert_int_equal(orep.written, 1);

    path_in(gdir, sizeof gdir, "gated_gnn");
    perfpred_netfit_params np = perfpred_netfit_default_params();
    np.device = "host-cpu";
    np.source = path;
    np.config_dir = cfg;
    np.out_dir = gdir;
    np.heldout_families = "mnasnet";
    np.ensemble = 2;
    np.epochs = 3;
    np.threads = 1;
    perfpred_netfit_report r;
    perfpred_status fst = perfpred_calibrate_fit_networks(&np, &r, err, sizeof err);
    if (fst) print_message("%s\n", err);
    assert_int_equal(fst, PERFPRED_OK);
    assert_int_equal(r.latency.n_heldout, 3);
    assert_int_equal(r.latency.n_fallback_fit, 6);
    assert_rel_close(r.latency.fallback_scale, 1.25, 1e-6);
    assert_rel_close(r.latency.fallback_per_kernel_us, 500, 1e-6);
    assert_rel_close(r.latency.fallback_per_mb_us, 20, 1e-6);

    /* a gate no spread passes: every held-out row is gated */
    snprintf(man, sizeof man, "%s/gnn-latency.json", gdir);
    char *text = pp_test_read_text(man);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, "spread_gate");
    cJSON *gate = cJSON_AddArrayToObject(root, "spread_gate");
    cJSON_AddItemToArray(gate, cJSON_CreateNumber(1e-30));
    text = cJSON_Print(root);
    cJSON_Delete(root);
    pp_test_write_text(man, text);
    free(text);
    np.evaluate_only = 1;
    assert_int_equal(perfpred_calibrate_fit_networks(&np, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.latency.n_gated, 3);
    assert_true(r.latency.corrected.mape_pct < 1e-6);
    assert_true(r.latency.layer_sum.mape_pct > 1 && r.latency.ungated.mape_pct > 1e-3);

    /* no overhead artifact: gated rows take the layer sum */
    snprintf(man, sizeof man, "%s/overhead-latency.json", dir);
    snprintf(off, sizeof off, "%s.off", man);
    assert_int_equal(rename(man, off), 0);
    assert_int_equal(perfpred_calibrate_fit_networks(&np, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.latency.n_fallback_fit, 0);
    assert_int_equal(r.latency.n_gated, 3);
    assert_true(r.latency.corrected.mape_pct == r.latency.layer_sum.mape_pct);
}

static void eval_should_name_the_file_and_line_of_bad_input(void **state)
{
    (void)state;
    perfpred_eval_params p = perfpred_eval_default_params();
    p.device = "toy-roofline";
    p.config_dir = g_toy;
    p.layers_csv = "/nonexistent/layers.csv";
    perfpred_eval_report r;
    char err[1024];
    assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/layers.csv"));
    char path[1300], want[1400];
    path_in(path, sizeof path, "bad_quote.csv");
    char text[1024];
    snprintf(text, sizeof text, "%s\"unterminated,x\n", LAYER_HEADER);
    pp_test_write_text(path, text);
    p.layers_csv = path;
    assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    snprintf(want, sizeof want, "%s:2", path);
    assert_non_null(strstr(err, want));
    /* every row readable as CSV but bad (no date): the error gives the first one's place and why */
    path_in(path, sizeof path, "all_bad.csv");
    snprintf(text, sizeof text,
             "%stoy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:1000,,0.008,,,,,test,\n"
             "toy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:2000,,0.016,,,,,test,\n",
             LAYER_HEADER);
    pp_test_write_text(path, text);
    p.layers_csv = path;
    assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    snprintf(want, sizeof want, "the first: %s:2: ", path);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "date"));
    p.group_by = "family"; /* layer rows group by kind */
    assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_ERR_INVALID_ARG);
}

static void eval_plot_should_draw_an_svg(void **state)
{
    (void)state;
    if (system("gnuplot --version >/dev/null 2>&1") != 0) skip();
    perfpred_eval_params p = perfpred_eval_default_params();
    p.device = "toy-roofline";
    p.layers_csv = toy_layers();
    p.config_dir = g_toy;
    perfpred_eval_report r;
    char err[1024], svg[1300];
    assert_int_equal(perfpred_eval(&p, &r, err, sizeof err), PERFPRED_OK);
    path_in(svg, sizeof svg, "plot.svg");
    assert_int_equal(perfpred_eval_plot(&r, svg, "toy", err, sizeof err), PERFPRED_OK);
    char *text = pp_test_read_text(svg);
    assert_non_null(text);
    assert_non_null(strstr(text, "<svg"));
    assert_non_null(strstr(text, "elemwise (3)"));
    free(text);
    assert_int_equal(perfpred_eval_plot(&r, "/tmp/plot.pdf", "toy", err, sizeof err),
                     PERFPRED_ERR_INVALID_ARG);
    perfpred_eval_report_free(&r);
}

/* --------------------------------------------------------------------- CLI ---- */

static void cli_should_use_documented_exit_codes(void **state)
{
    (void)state;
    if (access(CLI, X_OK) != 0) skip();
    char *out, args[4096];
    assert_int_equal(run_cli("calibrate --help", &out), 0);
    assert_non_null(strstr(out, "exit codes"));
    free(out);
    assert_int_equal(run_cli("eval --help", &out), 0);
    assert_non_null(strstr(out, "--plot"));
    free(out);
    assert_int_equal(run_cli("calibrate", &out), 1);
    free(out);
    assert_int_equal(run_cli("calibrate frobnicate", &out), 1);
    free(out);
    assert_int_equal(run_cli("calibrate plan -o x.csv", &out), 1);
    assert_non_null(strstr(out, "--device"));
    free(out);
    assert_int_equal(run_cli("calibrate fit --device host-cpu", &out), 1);
    free(out);
    assert_int_equal(run_cli("calibrate fit --device host-cpu --layers a.csv --seed x", &out), 1);
    free(out);
    /* the overhead correction needs the folds that judge it, and goes with --networks */
    assert_int_equal(run_cli("calibrate fit --device host-cpu --networks n.csv --overhead", &out),
                     1);
    assert_non_null(strstr(out, "--heldout-families"));
    free(out);
    assert_int_equal(run_cli("calibrate fit --device host-cpu --layers a.csv --overhead", &out), 1);
    free(out);
    assert_int_equal(run_cli("calibrate fit --device host-cpu --networks /nonexistent/n.csv "
                             "--overhead --heldout-families 'a;b'", &out), 2);
    assert_non_null(strstr(out, "/nonexistent/n.csv"));
    free(out);
    assert_int_equal(run_cli("eval --layers a.csv", &out), 1);
    assert_non_null(strstr(out, "--device"));
    free(out);
    assert_int_equal(run_cli("eval --device host-cpu --layers a.csv --plot x.pdf", &out), 1);
    free(out);
    assert_int_equal(run_cli("eval --device host-cpu --layers /nonexistent/rows.csv", &out), 2);
    assert_non_null(strstr(out, "/nonexistent/rows.csv"));
    free(out);
    char bad[1300];
    path_in(bad, sizeof bad, "cli_bad.csv");
    char text[1024];
    snprintf(text, sizeof text, "%s\"unterminated,x\n", LAYER_HEADER);
    pp_test_write_text(bad, text);
    snprintf(args, sizeof args, "eval --device host-cpu --layers '%s'", bad);
    assert_int_equal(run_cli(args, &out), 2);
    char want[1400];
    snprintf(want, sizeof want, "%s:2", bad);
    assert_non_null(strstr(out, want));
    free(out);
    snprintf(args, sizeof args, "calibrate fit --device host-cpu --layers '%s'", bad);
    assert_int_equal(run_cli(args, &out), 2);
    assert_non_null(strstr(out, want));
    free(out);
    assert_int_equal(run_cli("eval --device no-such-device --layers a.csv", &out), 4);
    free(out);
    /* a good run: the markdown table the README takes */
    snprintf(args, sizeof args,
             "eval --device toy-roofline --config-dir '%s' --layers '%s' --markdown", g_toy,
             toy_layers());
    assert_int_equal(run_cli(args, &out), 0);
    assert_non_null(strstr(out, "| **overall** | 3 | 15.0 |"));
    free(out);
    snprintf(args, sizeof args, "eval --device toy-roofline --config-dir '%s' --layers '%s' --json",
             g_toy, toy_layers());
    assert_int_equal(run_cli(args, &out), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    cJSON *ov = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "overall"), "model");
    assert_rel_close(cJSON_GetObjectItem(ov, "mape_pct")->valuedouble, 15.0, 1e-9);
    cJSON_Delete(j);
    free(out);
}

/* Starts the CLI with args (split on spaces, no quoting) and returns its pid. */
static pid_t spawn_cli(char *args)
{
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)CLI;
    for (char *t = strtok(args, " "); t && n < 31; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        execv(CLI, argv);
        _exit(127);
    }
    return pid;
}

static int wait_cli(pid_t pid)
{
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -WTERMSIG(ws);
}

/* `calibrate fit` killed with SIGKILL at moments spread over a whole fit, over a folder that holds
 * an earlier fit: every time, the folder's manifest is the earlier one or the complete new one
 * (never a mix, never missing), and the layer models it names load. Running the fit again then
 * completes (the command has no --resume: a rerun is the way to finish). */
static void fit_killed_at_any_moment_should_leave_whole_artifacts(void **state)
{
    char early[1300], later[1300], dir[1300], scratch[1300], args[4096];
    path_in(early, sizeof early, "kill-early.csv");
    path_in(later, sizeof later, "kill-later.csv");
    path_in(dir, sizeof dir, "kill-artifacts");
    path_in(scratch, sizeof scratch, "kill-scratch");
    pp_test_write_toy_sessions(early, later, 0.4, 0.1);
    const char *files[1] = {early};
    perfpred_fit_params p = pp_test_fit_params("toy-roofline", files, 1, g_toy, dir);
    perfpred_fit_report r;
    char err[1024];
    assert_int_equal(perfpred_calibrate_fit(&p, &r, err, sizeof err), PERFPRED_OK);
    char mp[1400];
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    char *old = pp_test_read_text(mp);
    assert_non_null(old);
#define FIT_ARGS "calibrate fit --device toy-roofline --layers %s --config-dir %s --out %s " \
                 "--threads 1"
    /* how long one fit takes here */
    snprintf(args, sizeof args, FIT_ARGS, later, g_toy, scratch);
    double t0 = pp_now_s();
    assert_int_equal(wait_cli(spawn_cli(args)), 0);
    double whole = pp_now_s() - t0;
    enum { KILLS = 10 };
    char *seen[KILLS];
    int killed = 0;
    for (int k = 0; k < KILLS; k++) {
        snprintf(args, sizeof args, FIT_ARGS, later, g_toy, dir);
        pid_t pid = spawn_cli(args);
        double wait_s = whole * (k + 0.5) / KILLS;
        struct timespec ts = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        killed += wait_cli(pid) == -SIGKILL;
        seen[k] = pp_test_read_text(mp);
        assert_non_null(seen[k]);
        pp_layer_models *lm = NULL;
        pp_err e = {0};
        perfpred_status st = pp_layer_models_open(dir, 0, &lm, &e);
        if (!st) st = pp_layer_models_ready(lm, &e);
        if (st) fail_msg("after a kill at %.0f %% of a fit: %s", 100.0 * (k + 0.5) / KILLS, e.msg);
        pp_layer_models_free(lm);
    }
    assert_true(killed > 0); /* some runs were killed, not all finished first */
    snprintf(args, sizeof args, FIT_ARGS, later, g_toy, dir);
    assert_int_equal(wait_cli(spawn_cli(args)), 0);
    char *fresh = pp_test_read_text(mp);
    assert_non_null(fresh);
    assert_true(strcmp(old, fresh) != 0);
    for (int k = 0; k < KILLS; k++) {
        if (strcmp(seen[k], old) != 0 && strcmp(seen[k], fresh) != 0)
            fail_msg("after kill %d the manifest is neither the old nor the new one", k);
        free(seen[k]);
    }
    print_message("one fit %.2f s; %d of %d runs killed before they finished\n", whole, killed,
                  KILLS);
#undef FIT_ARGS
    free(old);
    free(fresh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fit_should_write_artifacts_that_load_back),
        cmocka_unit_test(context_should_read_layer_models_when_first_needed),
        cmocka_unit_test(fit_should_leave_out_kinds_the_roofline_beats),
        cmocka_unit_test(fit_should_keep_previous_artifacts_when_interrupted),
        cmocka_unit_test(fit_should_refuse_rows_of_other_devices_and_mig_slices),
        cmocka_unit_test(neusight_fit_should_take_any_swept_gpu_with_its_descriptor_roofline),
        cmocka_unit_test(fit_should_leave_out_noisy_rows_when_asked),
        cmocka_unit_test(fit_should_rescale_a_later_session_by_its_anchors),
        cmocka_unit_test(fit_should_rescale_each_roofline_class_by_its_own_line),
        cmocka_unit_test(eval_should_match_hand_computed_metrics),
        cmocka_unit_test(eval_networks_should_predict_like_the_public_api),
        cmocka_unit_test(eval_networks_should_flag_rows_of_another_machine),
        cmocka_unit_test(fit_overhead_should_recover_scale_and_per_kernel_time),
        cmocka_unit_test(fit_overhead_should_recover_cold_weights_past_the_last_level_cache),
        cmocka_unit_test(overhead_fit_should_keep_to_stated_figures),
        cmocka_unit_test(gated_rows_should_take_the_overhead_correction_refitted_without_them),
        cmocka_unit_test(eval_should_name_the_file_and_line_of_bad_input),
        cmocka_unit_test(eval_plot_should_draw_an_svg),
        cmocka_unit_test(cli_should_use_documented_exit_codes),
        cmocka_unit_test(fit_killed_at_any_moment_should_leave_whole_artifacts),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
