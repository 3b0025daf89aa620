/* tests/test_intervals.c: latency intervals (predictor/interval.c, fit/heldout.c), the JSON
 * entry point perfpred_json and the compare plot. Expected values are worked out by hand or read
 * from the shipped intervals.json, never from the code under test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "helpers.h"
#include "predictor/interval.h"

static char resnet[1024]; /* examples/resnet18.onnx, absolute: ctest runs in the build folder */

/* a request with %s for the model path */
static const char *req(const char *fmt)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, fmt, resnet);
    return buf;
}

static perfpred_ctx *open_default(void)
{
    perfpred_ctx_params p = perfpred_ctx_default_params();
    p.config_dir = pp_test_path("configs");
    char err[512];
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&p, &st, err, sizeof err);
    if (!ctx) fail_msg("%s", err);
    return ctx;
}

static perfpred_model *load(const char *rel, int64_t batch)
{
    perfpred_model_params p = perfpred_model_default_params();
    p.batch = batch;
    char err[512];
    perfpred_status st;
    perfpred_model *m = perfpred_model_load(pp_test_path(rel), &p, &st, err, sizeof err);
    if (!m) fail_msg("%s", err);
    return m;
}

/* the shipped quantiles of a device's path, read here with cJSON */
static void shipped(const char *device, const char *path, double *lo, double *hi, int *n)
{
    char rel[256];
    snprintf(rel, sizeof rel, "configs/artifacts/%s/intervals.json", device);
    char *t = pp_test_read_text(pp_test_path(rel));
    assert_non_null(t);
    cJSON *j = cJSON_Parse(t);
    free(t);
    cJSON *e = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "paths"), path);
    assert_non_null(e);
    *lo = cJSON_GetObjectItem(e, "log_lo")->valuedouble;
    *hi = cJSON_GetObjectItem(e, "log_hi")->valuedouble;
    *n = cJSON_GetObjectItem(e, "n")->valueint;
    cJSON_Delete(j);
}

/* ---------------------------------------------------------------- quantiles ---- */

static void quantiles_should_take_the_conformal_order_statistics(void **state)
{
    (void)state;
    /* n = 19: lo = r_(floor(20 x 0.1)) = r_(2), hi = r_(ceil(20 x 0.9)) = r_(18) */
    double r[19];
    for (int i = 0; i < 19; i++) r[i] = (double)((i * 7) % 19 + 1); /* 1..19, shuffled */
    double lo, hi;
    assert_int_equal(pp_interval_quantiles(r, 19, 0.8, &lo, &hi), 0);
    assert_true(lo == 2 && hi == 18);
    /* n = 9: the smallest n with finite quantiles, r_(1) and r_(9) */
    double s[9] = {5, 3, 9, 1, 7, 2, 8, 4, 6};
    assert_int_equal(pp_interval_quantiles(s, 9, 0.8, &lo, &hi), 0);
    assert_true(lo == 1 && hi == 9);
    /* n = 8: ceil(9 x 0.9) = 9 > 8, no finite interval */
    assert_int_equal(pp_interval_quantiles(s, 8, 0.8, &lo, &hi), -1);
}

static void crossfit_should_judge_each_half_by_the_other(void **state)
{
    (void)state;
    /* both halves hold 1..19: each half's interval is [2, 18], 17 of the other's 19 inside */
    double r[38];
    unsigned key[38];
    for (int i = 0; i < 38; i++) {
        r[i] = (double)(i / 2 + 1);
        key[i] = (unsigned)i; /* parity: even rows one half, odd the other */
    }
    int n = 0;
    double pct = pp_interval_crossfit(r, key, 38, 0.8, &n);
    assert_int_equal(n, 38);
    assert_rel_close(pct, 100.0 * 34 / 38, 1e-12);
    /* halves of 4 rows: too few for quantiles */
    assert_true(isnan(pp_interval_crossfit(r, key, 8, 0.8, &n)));
}

static void heldout_should_write_and_merge_paths(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/test_intervals_out", PP_BINARY_DIR);
    char file[600];
    snprintf(file, sizeof file, "%s/intervals.json", dir);
    unlink(file);
    perfpred_heldout *h = perfpred_heldout_new();
    char model[32];
    /* residuals k/100, k = 1..19: quantiles 0.02 and 0.18 */
    for (int k = 1; k <= 19; k++) {
        snprintf(model, sizeof model, "m%d", k);
        assert_int_equal(perfpred_heldout_add(h, "gnn", model, 10 * exp(k / 100.0), 10), 0);
    }
    assert_int_equal(perfpred_heldout_add(h, "gnn", "x", -1, 10), PERFPRED_ERR_INVALID_ARG);
    assert_int_equal(perfpred_heldout_add(h, "nonsense", "x", 1, 1), PERFPRED_ERR_INVALID_ARG);
    for (int k = 0; k < 5; k++) perfpred_heldout_add(h, "gated", "g", 2, 1); /* too few */
    perfpred_interval iv = perfpred_heldout_interval(h, "gnn");
    assert_int_equal(iv.n, 19);
    assert_rel_close(iv.log_lo, 0.02, 1e-9);
    assert_rel_close(iv.log_hi, 0.18, 1e-9);
    assert_int_equal(perfpred_heldout_interval(h, "gated").n, 0);
    char err[512];
    int nw = -1;
    assert_int_equal(perfpred_heldout_write(h, "toy", dir, NULL, "test rows", &nw, err, sizeof err),
                     0);
    assert_int_equal(nw, 1);
    perfpred_heldout_free(h);
    /* a second fit writes another path: the first stays */
    h = perfpred_heldout_new();
    for (int k = 1; k <= 9; k++) perfpred_heldout_add(h, "layer", "m", 1, exp(-k / 10.0));
    assert_int_equal(perfpred_heldout_write(h, "toy", dir, NULL, "more rows", &nw, err, sizeof err),
                     0);
    perfpred_heldout_free(h);
    char *t = pp_test_read_text(file);
    assert_non_null(t);
    cJSON *j = cJSON_Parse(t);
    free(t);
    cJSON *paths = cJSON_GetObjectItem(j, "paths");
    assert_string_equal(cJSON_GetObjectItem(j, "format")->valuestring, "perfpred-intervals");
    assert_rel_close(cJSON_GetObjectItem(cJSON_GetObjectItem(paths, "gnn"), "log_hi")->valuedouble,
                     0.18, 1e-9);
    cJSON *layer = cJSON_GetObjectItem(paths, "layer");
    assert_rel_close(cJSON_GetObjectItem(layer, "log_lo")->valuedouble, 0.1, 1e-9);
    assert_rel_close(cJSON_GetObjectItem(layer, "log_hi")->valuedouble, 0.9, 1e-9);
    assert_string_equal(cJSON_GetObjectItem(layer, "data")->valuestring, "more rows");
    assert_null(cJSON_GetObjectItem(paths, "gated"));
    cJSON_Delete(j);
}

/* ------------------------------------------------------------- predictions ---- */

static void predictions_should_carry_the_interval_of_their_answer_path(void **state)
{
    (void)state;
    perfpred_ctx *ctx = open_default();
    perfpred_model *m = load("examples/resnet18.onnx", 1);
    perfpred_prediction p;
    char err[512];
    perfpred_predict_params pp = perfpred_predict_default_params();
    /* rpi5: the GNN-corrected answer, the gnn path's quantiles */
    assert_int_equal(perfpred_predict(ctx, m, "rpi5", &pp, &p, err, sizeof err), 0);
    double lo, hi;
    int n;
    shipped("rpi5", "gnn", &lo, &hi, &n);
    assert_int_equal(p.latency_interval.n, n);
    assert_string_equal(p.latency_interval.path, "gnn");
    assert_rel_close(p.latency_interval.lo, p.latency_ms.value * exp(lo), 1e-12);
    assert_rel_close(p.latency_interval.hi, p.latency_ms.value * exp(hi), 1e-12);
    assert_true(p.latency_interval.coverage == 0.8);
    /* host-cpu: the overhead correction, or with layer_sum_only the layer sum */
    assert_int_equal(perfpred_predict(ctx, m, "host-cpu", &pp, &p, err, sizeof err), 0);
    assert_string_equal(p.latency_interval.path, "overhead");
    shipped("host-cpu", "overhead", &lo, &hi, &n);
    assert_rel_close(p.latency_interval.hi, p.latency_ms.value * exp(hi), 1e-12);
    pp.layer_sum_only = 1;
    assert_int_equal(perfpred_predict(ctx, m, "host-cpu", &pp, &p, err, sizeof err), 0);
    assert_string_equal(p.latency_interval.path, "layer");
    shipped("host-cpu", "layer", &lo, &hi, &n);
    assert_rel_close(p.latency_interval.lo, p.latency_ms.value * exp(lo), 1e-12);
    pp.layer_sum_only = 0;
    /* a GPU runtime stack: the stack artifact's bounds for batch < 16, read here from the file */
    assert_int_equal(perfpred_predict(ctx, m, "a100", &pp, &p, err, sizeof err), 0);
    assert_string_equal(p.latency_interval.path, "stack");
    {
        char *t = pp_test_read_text(pp_test_path("configs/artifacts/stacks/pytorch-eager-fp32.json"));
        assert_non_null(t);
        cJSON *j = cJSON_Parse(t);
        free(t);
        cJSON *iv = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "stack"), "interval");
        assert_non_null(iv);
        assert_int_equal(p.latency_interval.n, cJSON_GetObjectItem(iv, "rows_batch_lt16")->valueint);
        assert_rel_close(p.latency_interval.lo,
                         p.latency_ms.value *
                             exp(cJSON_GetObjectItem(iv, "latency_log_lo_batch_lt16")->valuedouble),
                         1e-12);
        assert_rel_close(p.latency_interval.hi,
                         p.latency_ms.value *
                             exp(cJSON_GetObjectItem(iv, "latency_log_hi_batch_lt16")->valuedouble),
                         1e-12);
        cJSON_Delete(j);
    }
    /* the same stack on a board whose host's dispatch scale is an estimate: none, and why */
    assert_int_equal(perfpred_predict(ctx, m, "jetson-agx-orin", &pp, &p, err, sizeof err), 0);
    assert_int_equal(p.latency_interval.n, 0);
    assert_true(isnan(p.latency_interval.lo));
    assert_non_null(strstr(p.latency_interval.source, "estimate"));
    /* an uncalibrated estimate: none, and the reason */
    assert_int_equal(perfpred_predict(ctx, m, "rpi3", &pp, &p, err, sizeof err), 0);
    assert_int_equal(p.latency_ms.prov, PERFPRED_PROV_ESTIMATE);
    assert_int_equal(p.latency_interval.n, 0);
    assert_non_null(strstr(p.latency_interval.source, "uncalibrated"));
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
}

static void a_malformed_intervals_file_should_fail_the_open_naming_it(void **state)
{
    (void)state;
    char cfg[512], path[700];
    snprintf(cfg, sizeof cfg, "%s/test_intervals_cfg", PP_BINARY_DIR);
    mkdir(cfg, 0755);
    snprintf(path, sizeof path, "%s/devices", cfg);
    unlink(path);
    assert_int_equal(symlink(pp_test_path("tests/fixtures/predictor/devices"), path), 0);
    snprintf(path, sizeof path, "%s/artifacts", cfg);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/artifacts/toy-gpu", cfg);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/artifacts/toy-gpu/intervals.json", cfg);
    pp_test_write_text(path, "{\"format\": \"perfpred-intervals\", \"paths\": {\"gnn\": {\"n\": 50, "
                             "\"coverage\": 0.8, \"log_lo\": 0.3, \"log_hi\": 0.1}}}");
    perfpred_ctx_params p = perfpred_ctx_default_params();
    p.config_dir = cfg;
    char err[512];
    perfpred_status st;
    assert_null(perfpred_ctx_open(&p, &st, err, sizeof err));
    assert_int_equal(st, PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err, "toy-gpu/intervals.json"));
    assert_non_null(strstr(err, "paths.gnn"));
    /* a count too large for an int (found by fuzz_intervals) */
    pp_test_write_text(path, "{\"format\": \"perfpred-intervals\", \"paths\": {\"gnn\": {\"n\": 50, "
                             "\"coverage\": 0.8, \"log_lo\": -0.1, \"log_hi\": 0.1, \"check\": "
                             "{\"n\": 6e13, \"inside_pct\": 80}}}}");
    assert_null(perfpred_ctx_open(&p, &st, err, sizeof err));
    assert_non_null(strstr(err, "paths.gnn.check"));
    pp_test_write_text(path, "{\"format\": \"perfpred-intervals\", \"paths\": {\"magic\": {}}}");
    assert_null(perfpred_ctx_open(&p, &st, err, sizeof err));
    assert_non_null(strstr(err, "magic"));
    unlink(path);
    perfpred_ctx *ctx = perfpred_ctx_open(&p, &st, err, sizeof err);
    assert_non_null(ctx);
    perfpred_ctx_close(ctx);
}

/* ------------------------------------------------------------- perfpred_json ---- */

static char *json_call(const perfpred_ctx *ctx, const char *req, perfpred_status *st, char *err,
                       size_t n)
{
    char *a = perfpred_json(ctx, req, st, err, n);
    if (a) assert_int_equal(*st, PERFPRED_OK);
    return a;
}

static void json_should_answer_as_the_cli_prints(void **state)
{
    (void)state;
    perfpred_ctx *ctx = open_default();
    perfpred_status st;
    char err[512];
    char *a = json_call(ctx,
                        req("{\"command\": \"predict\", \"model\": \"%s\", "
                            "\"device\": \"rpi5\", \"batch\": 2, \"layers\": true}"),
                        &st, err, sizeof err);
    assert_non_null(a);
    static char out[1 << 20];
    char args[1200];
    snprintf(args, sizeof args, "--device rpi5 %s --batch 2 --layers --json", resnet);
    assert_int_equal(pp_test_run_cli(args, out, sizeof out, "test_intervals"), 0);
    size_t L = strlen(a);
    assert_int_equal(strncmp(out, a, L), 0); /* the CLI puts the same text and a newline */
    cJSON *j = cJSON_Parse(a);
    cJSON *pred = cJSON_GetObjectItem(j, "prediction");
    assert_int_equal(cJSON_GetObjectItem(pred, "batch")->valueint, 2);
    cJSON *iv = cJSON_GetObjectItem(cJSON_GetObjectItem(pred, "latency"), "interval");
    assert_true(cJSON_GetObjectItem(iv, "lo")->valuedouble <
                cJSON_GetObjectItem(cJSON_GetObjectItem(pred, "latency"), "value")->valuedouble);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(j, "kernels")) > 10);
    cJSON_Delete(j);
    perfpred_free(a);
    /* inspect needs no context */
    a = json_call(NULL, req("{\"command\": \"inspect\", \"model\": \"%s\"}"), &st,
                  err, sizeof err);
    assert_non_null(a);
    perfpred_free(a);
    perfpred_ctx_close(ctx);
}

static void json_should_reject_bad_requests_with_a_message(void **state)
{
    (void)state;
    perfpred_ctx *ctx = open_default();
    perfpred_status st;
    char err[512];
    const struct {
        const char *req;
        perfpred_status st;
        const char *says;
    } bad[] = {
        {"{\"command\": \"predict\"", PERFPRED_ERR_PARSE, "not valid JSON"},
        {"[1]", PERFPRED_ERR_INVALID_ARG, "not a JSON object"},
        {"{\"model\": \"x.onnx\"}", PERFPRED_ERR_INVALID_ARG, "\"command\" is required"},
        {"{\"command\": \"fly\", \"model\": \"x.onnx\"}", PERFPRED_ERR_INVALID_ARG, "'fly'"},
        {"{\"command\": \"predict\", \"model\": \"x.onnx\", \"device\": \"rpi4\", "
         "\"colour\": 1}", PERFPRED_ERR_INVALID_ARG, "\"colour\""},
        {"{\"command\": \"predict\", \"model\": \"x.onnx\", \"device\": \"rpi4\", "
         "\"batch\": 0}", PERFPRED_ERR_INVALID_ARG, "batch"},
        {"{\"command\": \"predict\", \"model\": \"x.onnx\", \"device\": [\"rpi4\", "
         "\"rpi5\"]}", PERFPRED_ERR_INVALID_ARG, "one \"device\""},
        {"{\"command\": \"predict\", \"model\": \"x.onnx\", \"device\": \"nope\"}",
         PERFPRED_ERR_DEVICE, "'nope'"},
        {"{\"command\": \"predict\", \"model\": \"no/such.onnx\", \"device\": \"rpi4\"}",
         PERFPRED_ERR_IO, "no/such.onnx"},
        {"{\"command\": \"devices\"}", PERFPRED_OK, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        char *a = perfpred_json(ctx, bad[i].req, &st, err, sizeof err);
        if (bad[i].st == PERFPRED_OK) {
            assert_non_null(a);
            perfpred_free(a);
            continue;
        }
        assert_null(a);
        assert_int_equal(st, bad[i].st);
        if (!strstr(err, bad[i].says)) fail_msg("request %zu: '%s' lacks '%s'", i, err, bad[i].says);
    }
    assert_null(perfpred_json(NULL, "{\"command\": \"devices\"}", &st, err, sizeof err));
    assert_int_equal(st, PERFPRED_ERR_INVALID_ARG);
    perfpred_ctx_close(ctx);
}

static void compare_should_decide_only_disjoint_intervals(void **state)
{
    (void)state;
    perfpred_ctx *ctx = open_default();
    perfpred_status st;
    char err[512];
    char *a = json_call(ctx,
                        req("{\"command\": \"compare\", \"model\": \"%s\", \"device\": "
                            "[\"rpi4\", \"rpi5\", \"a100\", \"host-cpu\"], \"batch\": [1, 8]}"),
                        &st, err, sizeof err);
    assert_non_null(a);
    cJSON *j = cJSON_Parse(a);
    cJSON *rows = cJSON_GetObjectItem(j, "rows");
    assert_int_equal(cJSON_GetArraySize(rows), 8);
    int decided = 0, undecided = 0;
    for (cJSON *r = rows->child; r && r->next; r = r->next) {
        cJSON *i1 = cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r, "prediction"), "latency"), "interval");
        cJSON *i2 = cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r->next, "prediction"), "latency"), "interval");
        cJSON *hi = cJSON_GetObjectItem(i1, "hi"), *lo = cJSON_GetObjectItem(i2, "lo");
        int disjoint = cJSON_IsNumber(hi) && cJSON_IsNumber(lo) && hi->valuedouble < lo->valuedouble;
        int got = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "ranking"), "decided"));
        assert_int_equal(got, disjoint);
        decided += got;
        undecided += !got;
    }
    assert_true(decided > 0 && undecided > 0); /* both kinds occur in this comparison */
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 7), "ranking")));
    cJSON_Delete(j);

    /* the plot: written where gnuplot is, bad paths are clean errors */
    char path[512];
    snprintf(path, sizeof path, "%s/test_intervals_cmp.svg", PP_BINARY_DIR);
    unlink(path);
    st = perfpred_compare_plot(a, path, NULL, err, sizeof err);
    if (system("command -v gnuplot >/dev/null 2>&1") == 0) {
        assert_int_equal(st, PERFPRED_OK);
        char *svg = pp_test_read_text(path);
        assert_non_null(svg);
        assert_non_null(strstr(svg, "<svg"));
        assert_non_null(strstr(svg, "rpi5 b8"));
        free(svg);
    } else {
        assert_int_equal(st, PERFPRED_ERR_IO);
        assert_non_null(strstr(err, "gnuplot"));
    }
    assert_int_equal(perfpred_compare_plot(a, "/nonexistent/dir/x.svg", NULL, err, sizeof err),
                     PERFPRED_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/dir/x.svg"));
    assert_int_equal(perfpred_compare_plot(a, "out.pdf", NULL, err, sizeof err),
                     PERFPRED_ERR_INVALID_ARG);
    assert_int_equal(perfpred_compare_plot(a, "out.svg", "speed", err, sizeof err),
                     PERFPRED_ERR_INVALID_ARG);
    assert_int_equal(perfpred_compare_plot("{\"rows\": 3}", path, NULL, err, sizeof err),
                     PERFPRED_ERR_PARSE);
    perfpred_free(a);
    perfpred_ctx_close(ctx);
}

static void cli_compare_should_mark_rankings_and_check_the_plot_path(void **state)
{
    (void)state;
    static char out[1 << 16];
    assert_int_equal(pp_test_run_cli("compare --device rpi4,rpi5,jetson-agx-orin examples/resnet18.onnx", out,
                                     sizeof out, "test_intervals"), 0);
    assert_non_null(strstr(out, "not decided: no interval"));
    assert_non_null(strstr(out, "80 % interval"));
    assert_int_equal(pp_test_run_cli("compare --device rpi4,rpi5 examples/resnet18.onnx --plot "
                                     "/nonexistent/dir/x.svg", out, sizeof out, "test_intervals"),
                     2);
    assert_non_null(strstr(out, "/nonexistent/dir/x.svg"));
    assert_int_equal(pp_test_run_cli("compare --device rpi4 examples/resnet18.onnx --plot x.pdf",
                                     out, sizeof out, "test_intervals"), 1);
    assert_int_equal(pp_test_run_cli("--device rpi4 examples/resnet18.onnx --plot x.svg", out,
                                     sizeof out, "test_intervals"), 1);
    assert_int_equal(pp_test_run_cli("--device rpi4 examples/resnet18.onnx", out, sizeof out,
                                     "test_intervals"), 0);
    assert_non_null(strstr(out, "80 % interval (gnn path"));
}

int main(void)
{
    snprintf(resnet, sizeof resnet, "%s", pp_test_path("examples/resnet18.onnx"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantiles_should_take_the_conformal_order_statistics),
        cmocka_unit_test(crossfit_should_judge_each_half_by_the_other),
        cmocka_unit_test(heldout_should_write_and_merge_paths),
        cmocka_unit_test(predictions_should_carry_the_interval_of_their_answer_path),
        cmocka_unit_test(a_malformed_intervals_file_should_fail_the_open_naming_it),
        cmocka_unit_test(json_should_answer_as_the_cli_prints),
        cmocka_unit_test(json_should_reject_bad_requests_with_a_message),
        cmocka_unit_test(compare_should_decide_only_disjoint_intervals),
        cmocka_unit_test(cli_compare_should_mark_rankings_and_check_the_plot_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
