/* tests/test_cli.c: the perfpred command line as a user runs it: documented exit codes, error
 * messages that name the file, and the JSON schema of every command (docs/json.md). */
#include "tests/helpers.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfpred.h"

static char out_buf[1 << 20];

/* Runs the CLI with args (shell words), captures stdout+stderr into out_buf, returns exit code. */
static int run_cli(const char *args)
{
    return pp_test_run_cli(args, out_buf, sizeof out_buf, "test_cli");
}

static cJSON *run_json(const char *args)
{
    int rc = run_cli(args);
    if (rc != 0) print_error("exit %d: %s\n", rc, out_buf);
    assert_int_equal(rc, 0);
    cJSON *j = cJSON_Parse(out_buf);
    if (!j) print_error("not JSON: %s\n", out_buf);
    assert_non_null(j);
    return j;
}

#define CONTROL "tests/fixtures/malformed/control.onnx"

static void help_should_list_exit_codes(void **state)
{
    assert_int_equal(run_cli("--help"), 0);
    assert_non_null(strstr(out_buf, "exit codes"));
    assert_int_equal(run_cli("--version"), 0);
    assert_non_null(strstr(out_buf, "perfpred "));
}

static void usage_errors_should_exit_1(void **state)
{
    assert_int_equal(run_cli(""), 1);
    assert_int_equal(run_cli("inspect"), 1);
    assert_int_equal(run_cli("frobnicate"), 1);
    assert_int_equal(run_cli("inspect " CONTROL " --no-such-option"), 1);
    assert_non_null(strstr(out_buf, "--no-such-option"));
    assert_int_equal(run_cli("inspect " CONTROL " --batch zero"), 1);
    assert_int_equal(run_cli("inspect " CONTROL " --batch 0"), 1);
    assert_int_equal(run_cli("inspect " CONTROL " --input x=1xq"), 1);
    assert_int_equal(run_cli(CONTROL), 1); /* predict without --device */
    assert_int_equal(run_cli("compare " CONTROL), 1);
    assert_int_equal(run_cli("mig " CONTROL " --slo-ms -3"), 1);
}

static void bad_model_files_should_exit_2_or_3_naming_the_file(void **state)
{
    assert_int_equal(run_cli("inspect tests/fixtures/does-not-exist.onnx"), 2);
    assert_non_null(strstr(out_buf, "does-not-exist.onnx"));
    assert_int_equal(run_cli("inspect tests/fixtures/malformed/truncated.onnx"), 2);
    assert_non_null(strstr(out_buf, "truncated.onnx"));
    assert_int_equal(run_cli("inspect tests/fixtures/malformed/text.onnx"), 2);
    assert_int_equal(run_cli("inspect tests/fixtures/malformed/cycle.onnx"), 3);
    assert_non_null(strstr(out_buf, "cycle"));
    assert_int_equal(run_cli("inspect tests/fixtures/malformed/opset6.onnx"), 3);
}

static void unknown_device_should_exit_4(void **state)
{
    assert_int_equal(run_cli("--device no-such-gpu " CONTROL), 4);
    assert_non_null(strstr(out_buf, "no-such-gpu"));
    assert_int_equal(run_cli("compare --device a100,no-such-gpu " CONTROL), 4);
    assert_int_equal(run_cli("devices show no-such-gpu"), 4);
}

static void inspect_json_should_carry_totals_and_layers(void **state)
{
    /* control.onnx (tools/make_malformed_onnx.py): x[1,4] -> MatMul(W[4,4]) -> Add(b[4]) -> Relu */
    cJSON *j = run_json("inspect " CONTROL " --json");
    cJSON *t = cJSON_GetObjectItem(j, "totals");
    assert_non_null(t);
    assert_int_equal((int)cJSON_GetObjectItem(t, "params")->valuedouble, 20);
    assert_int_equal((int)cJSON_GetObjectItem(t, "macs")->valuedouble, 16);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(t, "flops")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(t, "peak_activation_bytes")));
    cJSON *layers = cJSON_GetObjectItem(j, "layers");
    assert_int_equal(cJSON_GetArraySize(layers), 3);
    cJSON *l0 = cJSON_GetArrayItem(layers, 0);
    assert_string_equal(cJSON_GetObjectItem(l0, "op")->valuestring, "MatMul");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l0, "output_shape")), 2);
    cJSON_Delete(j);
}

static int is_provenance(const cJSON *fig)
{
    const cJSON *p = cJSON_GetObjectItem(fig, "provenance");
    if (!cJSON_IsString(p)) return 0;
    const char *s = p->valuestring;
    return !strcmp(s, "estimate") || !strcmp(s, "calibrated") || !strcmp(s, "mixed") ||
           !strcmp(s, "transferred") || !strcmp(s, "unavailable");
}

static void predict_json_should_label_every_figure(void **state)
{
    cJSON *j = run_json("--device a100-mig-3g " CONTROL " --json --layers 2");
    cJSON *dev = cJSON_GetObjectItem(j, "device");
    assert_string_equal(cJSON_GetObjectItem(dev, "name")->valuestring, "a100-sxm4-40gb-mig-3g.20gb");
    assert_string_equal(cJSON_GetObjectItem(dev, "mig_profile")->valuestring, "3g.20gb");
    cJSON *p = cJSON_GetObjectItem(j, "prediction");
    const char *figs[] = {"latency", "energy", "peak_memory"};
    for (int i = 0; i < 3; i++) {
        cJSON *f = cJSON_GetObjectItem(p, figs[i]);
        assert_non_null(f);
        assert_true(is_provenance(f));
        assert_true(cJSON_IsString(cJSON_GetObjectItem(f, "source")));
    }
    assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "latency"), "value")->valuedouble > 0);
    cJSON *ks = cJSON_GetObjectItem(j, "kernels");
    assert_true(cJSON_GetArraySize(ks) >= 2);
    /* MIG advice comes with an A100 slice */
    cJSON *mig = cJSON_GetObjectItem(j, "mig");
    assert_non_null(mig);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(mig, "profiles")), 6);
    cJSON_Delete(j);
}

/* The RTX 5090's descriptor states no fp16 tensor-core rate (its fp32 peak only): under the fp16
 * stack its latency is an estimate with no interval; the RTX 4090, which states one, is
 * transferred with the stack's interval. */
static void a_missing_tensor_rate_should_make_the_latency_an_estimate(void **state)
{
    (void)state;
    const char *want[2][2] = {{"rtx-5090", "estimate"}, {"rtx-4090", "transferred"}};
    for (int i = 0; i < 2; i++) {
        char args[256];
        snprintf(args, sizeof args, "--device %s " CONTROL " --precision fp16 --json", want[i][0]);
        cJSON *j = run_json(args);
        cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "latency");
        assert_string_equal(cJSON_GetObjectItem(lat, "provenance")->valuestring, want[i][1]);
        cJSON *iv = cJSON_GetObjectItem(lat, "interval");
        assert_int_equal(iv != NULL && cJSON_IsNumber(cJSON_GetObjectItem(iv, "lo")), i == 1);
        cJSON_Delete(j);
    }
}

static void compare_json_should_sort_and_mark_pareto(void **state)
{
    cJSON *j = run_json("compare --device a100,a100-mig-1g,jetson-orin-nano,rpi4 " CONTROL
                        " --batch 1,8 --json");
    cJSON *rows = cJSON_GetObjectItem(j, "rows");
    assert_int_equal(cJSON_GetArraySize(rows), 8);
    double prev = -1;
    int pareto = 0;
    for (int i = 0; i < 8; i++) {
        cJSON *r = cJSON_GetArrayItem(rows, i);
        cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "prediction"),
                                                             "latency"), "value");
        if (cJSON_IsNumber(lat)) {
            assert_true(lat->valuedouble >= prev);
            prev = lat->valuedouble;
        }
        pareto += cJSON_IsTrue(cJSON_GetObjectItem(r, "pareto"));
    }
    assert_true(pareto >= 1);
    cJSON_Delete(j);
}

static void mig_json_should_apply_memory_rule(void **state)
{
    cJSON *j = run_json("mig " CONTROL " --json --slo-ms 1000");
    cJSON *profiles = cJSON_GetObjectItem(j, "profiles");
    assert_int_equal(cJSON_GetArraySize(profiles), 6);
    /* a 20-parameter model fits the smallest A100 profile */
    assert_string_equal(cJSON_GetObjectItem(j, "memory_rule_choice")->valuestring,
                        "a100-sxm4-40gb-mig-1g.5gb");
    assert_string_equal(cJSON_GetObjectItem(j, "slo_choice")->valuestring,
                        "a100-sxm4-40gb-mig-1g.5gb");
    assert_int_equal((int)cJSON_GetObjectItem(j, "max_instances_under_slo")->valuedouble, 7);
    cJSON_Delete(j);
}

static void devices_should_list_and_show(void **state)
{
    cJSON *j = run_json("devices --json");
    assert_true(cJSON_GetArraySize(j) > 100);
    int found = 0;
    cJSON *d;
    cJSON_ArrayForEach(d, j)
    {
        if (!strcmp(cJSON_GetObjectItem(d, "name")->valuestring, "a100-sxm4-40gb-mig-3g.20gb"))
            found = 1;
    }
    assert_true(found);
    cJSON_Delete(j);
    assert_int_equal(run_cli("devices show a100-mig-3g"), 0);
    assert_non_null(strstr(out_buf, "a100-sxm4-40gb-mig-3g.20gb"));
}

/* Every bundled model (tests/fixtures/models/reference.csv: file, model, family, input_name,
 * input_shape, ...) through the public API on one context: a latency with its provenance on an A100
 * slice and MIG advice; every tenth also through the CLI's compare and mig. */
static void every_bundled_model_should_predict_compare_and_advise(void **state)
{
    FILE *f = fopen(pp_test_path("tests/fixtures/models/reference.csv"), "r");
    assert_non_null(f);
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, NULL, 0);
    assert_non_null(ctx);
    char line[4096];
    int n = 0;
    assert_non_null(fgets(line, sizeof line, f)); /* header */
    while (fgets(line, sizeof line, f)) {
        char *save = NULL, *file = strtok_r(line, ",", &save);
        strtok_r(NULL, ",", &save);
        char *family = strtok_r(NULL, ",", &save);
        char *iname = strtok_r(NULL, ",", &save), *ishape = strtok_r(NULL, ",", &save);
        assert_non_null(ishape);
        perfpred_input_override in = {iname, 0, {0}};
        for (char *s2 = NULL, *tok = strtok_r(ishape, "x", &s2); tok; tok = strtok_r(NULL, "x", &s2))
            in.dims[in.rank++] = atoll(tok);
        perfpred_model_params mp = perfpred_model_default_params();
        mp.inputs = &in;
        mp.n_inputs = 1;
        char path[1024], err[1024] = "";
        snprintf(path, sizeof path, "%s", pp_test_path("tests/fixtures/models/"));
        strncat(path, file, sizeof path - strlen(path) - 1);
        perfpred_model *m = perfpred_model_load(path, &mp, NULL, err, sizeof err);
        if (!m) print_error("%s\n", err);
        assert_non_null(m);
        perfpred_prediction p;
        assert_int_equal(perfpred_predict(ctx, m, "a100-mig-3g", NULL, &p, err, sizeof err), 0);
        assert_true(p.latency_ms.value > 0);
        assert_true(p.latency_ms.prov == PERFPRED_PROV_CALIBRATED ||
                    p.latency_ms.prov == PERFPRED_PROV_MIXED ||
                    p.latency_ms.prov == PERFPRED_PROV_TRANSFERRED ||
                    p.latency_ms.prov == PERFPRED_PROV_ESTIMATE);
        assert_non_null(p.latency_ms.source);
        perfpred_mig_advice a;
        assert_int_equal(perfpred_mig_advise(ctx, m, "a100", 0, &a, err, sizeof err), 0);
        assert_int_equal(a.n_options, 6);
        perfpred_model_free(m);
        if (n % 10 == 0) {
            char args[1024], extra[256] = "";
            if (!strcmp(family, "bert") || !strcmp(family, "gpt"))
                snprintf(extra, sizeof extra, "--input %s=%lldx%lld", iname, (long long)in.dims[0],
                         (long long)in.dims[1]);
            snprintf(args, sizeof args,
                     "compare --device a100,a100-mig-1g,jetson-orin-nano,rpi4 "
                     "tests/fixtures/models/%s %s",
                     file, extra);
            assert_int_equal(run_cli(args), 0);
            snprintf(args, sizeof args, "mig tests/fixtures/models/%s %s", file, extra);
            assert_int_equal(run_cli(args), 0);
            assert_non_null(strstr(out_buf, "memory rule (DIPPM)"));
        }
        n++;
    }
    fclose(f);
    perfpred_ctx_close(ctx);
    assert_true(n >= 90);
}

/* A device with a trained graph-level correction (configs/artifacts/rpi5/gnn-latency.*, latency
 * and energy) answers through it and says so; one without (rpi3) stays an estimate. */
static double group_mape(const cJSON *eval, const char *family)
{
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(eval, "groups"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(g, "name");
        if (cJSON_IsString(name) && !strcmp(name->valuestring, family))
            return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(g, "model"),
                                                    "mape_pct")->valuedouble;
    }
    fail_msg("no group %s", family);
    return 0;
}

/* --heldout-families with ';' runs one dry-run fold per group: each fold's layer-sum error is what
 * `eval --networks --layer-sum-only` reports for that family (another code path), and the pooled
 * figure weighs the folds by their rows. */
/* 98 rows of data/host-cpu/networks.csv, seven families (squeezenet, googlenet, resnet,
 * mobilenet_v2, mobilenet_v3, densenet, alexnet: enough that a fit holds a validation family
 * back), in a folder of its own laid out as the source tree (data/host-cpu/ beside a link to
 * tests/), so each row names its model as the whole file does: the fit's validation split hashes
 * those names, and absolute paths would make it depend on where the tree is checked out. The
 * network fits below load each row's graph, and the whole file's 288 took seconds per fit under
 * ASan. */
static char small_nets_dir[64], small_nets[160];

static const char *small_networks(void)
{
    if (small_nets[0]) return small_nets;
    snprintf(small_nets_dir, sizeof small_nets_dir, "/tmp/pp_test_cli_XXXXXX");
    assert_non_null(mkdtemp(small_nets_dir));
    snprintf(small_nets, sizeof small_nets, "%s/data/host-cpu/networks.csv", small_nets_dir);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/data/host-cpu' && ln -s '%s/tests' '%s/tests' && "
             "awk -F, 'NR == 1 || $2 ~ /^(squeezenet|googlenet|resnet|mobilenet_v2|mobilenet_v3|"
             "densenet|alexnet)$/' '%s/data/host-cpu/networks.csv' > '%s'",
             small_nets_dir, PP_SOURCE_DIR, small_nets_dir, PP_SOURCE_DIR, small_nets);
    assert_int_equal(system(cmd), 0);
    return small_nets;
}

static int remove_small_networks(void **state)
{
    (void)state;
    if (small_nets[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", small_nets_dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", small_nets_dir);
    }
    return 0;
}

static void family_folds_should_pool_what_eval_reports(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "eval --device host-cpu --networks %s --layer-sum-only --json",
             small_networks());
    cJSON *ev = run_json(cmd);
    snprintf(cmd, sizeof cmd,
             "calibrate fit --device host-cpu --networks %s --heldout-families "
             "'squeezenet;googlenet' --epochs 2 --hidden 8 --threads 1 --dry-run --json",
             small_networks());
    cJSON *f = run_json(cmd);
    const cJSON *folds = cJSON_GetObjectItemCaseSensitive(f, "folds");
    assert_int_equal(cJSON_GetArraySize(folds), 2);
    const char *fam[2] = {"squeezenet", "googlenet"};
    double sum = 0;
    int rows = 0;
    for (int k = 0; k < 2; k++) {
        const cJSON *fk = cJSON_GetArrayItem(folds, k);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(fk, "heldout_families")->valuestring,
                            fam[k]);
        const cJSON *ls = cJSON_GetObjectItemCaseSensitive(fk, "layer_sum");
        int n = cJSON_GetObjectItemCaseSensitive(ls, "n")->valueint;
        double mape = cJSON_GetObjectItemCaseSensitive(ls, "mape_pct")->valuedouble;
        assert_true(fabs(mape - group_mape(ev, fam[k])) < 1e-9);
        sum += n * mape;
        rows += n;
    }
    const cJSON *pl = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(f, "pooled"), "layer_sum");
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(pl, "n")->valueint, rows);
    assert_true(fabs(cJSON_GetObjectItemCaseSensitive(pl, "mape_pct")->valuedouble - sum / rows) <
                1e-9);
    cJSON_Delete(ev);
    cJSON_Delete(f);
    assert_int_equal(run_cli("calibrate fit --device host-cpu --networks data/host-cpu/networks.csv "
                             "--heldout-families 'squeezenet;;googlenet'"),
                     1);
    assert_non_null(strstr(out_buf, "empty fold"));
}

static double corrected_mape(const cJSON *fit)
{
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(fit, "latency");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(lat, "corrected");
    assert_non_null(c);
    return cJSON_GetObjectItemCaseSensitive(c, "mape_pct")->valuedouble;
}

static int train_rows(const cJSON *fit)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(fit, "validation");
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(fit, "latency");
    return cJSON_GetObjectItemCaseSensitive(fit, "rows_used")->valueint -
           cJSON_GetObjectItemCaseSensitive(v, "rows")->valueint -
           cJSON_GetObjectItemCaseSensitive(lat, "heldout_rows")->valueint;
}

/* --huber, --seed and --max-train reach the GNN: the report names the loss and the validation
 * criterion, a seed repeats itself and another seed trains another model, and the training rows
 * are capped. */
static void network_fit_should_take_huber_and_seed(void **state)
{
    (void)state;
    char base[512], cmd[768];
    snprintf(base, sizeof base,
             "calibrate fit --device host-cpu --networks %s --heldout-families squeezenet "
             "--epochs 3 --hidden 8 --threads 1 --dry-run --json",
             small_networks());
    cJSON *r[3];
    const char *extra[3] = {"--huber 0.05 --seed 3", "--huber 0.05 --seed 3", "--huber 0.05 --seed 4"};
    for (int k = 0; k < 3; k++) {
        snprintf(cmd, sizeof cmd, "%s %s", base, extra[k]);
        r[k] = run_json(cmd);
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r[0], "validation");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "criterion")->valuestring, "mae");
    assert_true(cJSON_GetObjectItemCaseSensitive(v, "huber_delta")->valuedouble == 0.05);
    const cJSON *mae = cJSON_GetObjectItemCaseSensitive(v, "mae_log_latency");
    assert_non_null(mae); /* a validation split with rows */
    assert_true(mae->valuedouble > 0);
    assert_true(corrected_mape(r[0]) == corrected_mape(r[1]));
    assert_true(corrected_mape(r[0]) != corrected_mape(r[2]));
    for (int k = 0; k < 3; k++) cJSON_Delete(r[k]);
    cJSON *m = run_json(base);
    v = cJSON_GetObjectItemCaseSensitive(m, "validation");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(v, "criterion")->valuestring, "mse");
    assert_true(train_rows(m) > 50);
    cJSON_Delete(m);
    snprintf(cmd, sizeof cmd, "%s --max-train 50", base);
    m = run_json(cmd);
    assert_int_equal(train_rows(m), 50);
    cJSON_Delete(m);
    snprintf(cmd, sizeof cmd, "%s --huber -1", base);
    assert_int_equal(run_cli(cmd), 1);
    assert_non_null(strstr(out_buf, "--huber"));
}

static void gnn_correction_should_answer_and_be_named(void **state)
{
    cJSON *j = run_json("--device rpi5 tests/fixtures/nas/nb201_arch0_cifar10.onnx --json");
    cJSON *p = cJSON_GetObjectItem(j, "prediction");
    cJSON *lat = cJSON_GetObjectItem(p, "latency"), *en = cJSON_GetObjectItem(p, "energy");
    assert_string_equal(cJSON_GetObjectItem(lat, "provenance")->valuestring, "calibrated");
    assert_non_null(strstr(cJSON_GetObjectItem(lat, "source")->valuestring, "GNN correction"));
    assert_string_equal(cJSON_GetObjectItem(en, "provenance")->valuestring, "calibrated");
    assert_true(cJSON_GetObjectItem(en, "value")->valuedouble > 0);
    cJSON_Delete(j);
    j = run_json("--device rpi3 tests/fixtures/nas/nb201_arch0_cifar10.onnx --json");
    lat = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "latency");
    assert_string_equal(cJSON_GetObjectItem(lat, "provenance")->valuestring, "estimate");
    cJSON_Delete(j);
}

/* --layer-sum-only: rpi5 carries a GNN correction; with the flag the latency is the sum of the
 * kernel breakdown it prints (no correction named), without it the corrected figure differs from
 * that sum; compare passes the flag on. */
static double kernel_sum(const cJSON *j)
{
    double s = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(j, "kernels"))
        s += cJSON_GetObjectItem(k, "latency_ms")->valuedouble;
    return s;
}

static void layer_sum_only_should_print_the_kernels_sum(void **state)
{
    (void)state;
    const char *net = "tests/fixtures/nas/nb201_arch0_cifar10.onnx";
    char args[512];
    snprintf(args, sizeof args, "--device rpi5 %s --json --layers 100000 --layer-sum-only", net);
    cJSON *only = run_json(args);
    snprintf(args, sizeof args, "--device rpi5 %s --json --layers 100000", net);
    cJSON *corr = run_json(args);
    const cJSON *lo = cJSON_GetObjectItem(cJSON_GetObjectItem(only, "prediction"), "latency");
    const cJSON *lc = cJSON_GetObjectItem(cJSON_GetObjectItem(corr, "prediction"), "latency");
    double sum = kernel_sum(only);
    assert_true(sum > 0);
    assert_true(fabs(cJSON_GetObjectItem(lo, "value")->valuedouble - sum) < 1e-9 * sum);
    assert_null(strstr(cJSON_GetObjectItem(lo, "source")->valuestring, "GNN correction"));
    assert_non_null(strstr(cJSON_GetObjectItem(lc, "source")->valuestring, "GNN correction"));
    assert_true(fabs(kernel_sum(corr) - sum) < 1e-9 * sum);
    assert_true(fabs(cJSON_GetObjectItem(lc, "value")->valuedouble - sum) > 1e-3 * sum);
    snprintf(args, sizeof args, "compare --device rpi5 %s --json --layer-sum-only", net);
    cJSON *cmp = run_json(args);
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(cmp, "rows"), 0);
    assert_non_null(row);
    const cJSON *rl = cJSON_GetObjectItem(cJSON_GetObjectItem(row, "prediction"), "latency");
    assert_true(fabs(cJSON_GetObjectItem(rl, "value")->valuedouble - sum) < 1e-9 * sum);
    cJSON_Delete(cmp);
    cJSON_Delete(corr);
    cJSON_Delete(only);
}

/* GPU runtime stacks (docs/gpu-stacks.md): named in the output, chosen by --runtime/--precision,
 * an unknown one refused with the list; a GPU pays its host's dispatch, so an Orin Nano (ARM host,
 * a fraction of the A100's FLOP/s) is never ranked ahead of the A100 on the same model. */
static void gpu_stacks_should_be_chosen_named_and_refused(void **state)
{
    (void)state;
    cJSON *j = run_json("--device a100 examples/resnet18.onnx --batch 1 --json");
    cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "stack");
    assert_non_null(st);
    assert_string_equal(cJSON_GetObjectItem(st, "name")->valuestring, "pytorch-eager-fp32");
    double a100 = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"),
                                                          "latency"), "value")->valuedouble;
    cJSON_Delete(j);
    j = run_json("--device a100 examples/resnet18.onnx --batch 1 --runtime tensorrt "
                 "--precision fp16 --json");
    st = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "stack");
    assert_string_equal(cJSON_GetObjectItem(st, "name")->valuestring, "tensorrt-fp16");
    cJSON_Delete(j);
    assert_int_equal(run_cli("--device a100 examples/resnet18.onnx --runtime onnx-magic"), 1);
    assert_non_null(strstr(out_buf, "no fitted runtime stack 'onnx-magic fp32'"));
    assert_non_null(strstr(out_buf, "tensorrt fp16"));
    assert_int_equal(run_cli("--device a100 examples/resnet18.onnx --precision fp8"), 1);
    assert_int_equal(run_cli("--device rpi4 examples/resnet18.onnx --runtime tensorrt"), 1);
    /* the Orin Nano's host (its Arm cores) dispatches at a scale nobody measured: an estimate,
     * not a transfer, though its GPU side is the stack's */
    j = run_json("--device jetson-orin-nano examples/resnet18.onnx --batch 1 --json");
    double orin = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"),
                                                          "latency"), "value")->valuedouble;
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "latency"),
                            "provenance")->valuestring,
        "estimate");
    assert_non_null(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j,
                                                                                     "prediction"),
                                                                   "latency"),
                                               "source")->valuestring,
                           "an estimate no measurement made"));
    cJSON_Delete(j);
    assert_true(orin > a100);
    /* the RTX 5090's descriptor states no fp16 tensor rate: priced on the fp32 lanes, an
     * estimate that says why */
    j = run_json("--device rtx-5090 examples/resnet18.onnx --precision fp16 --json");
    cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "latency");
    assert_string_equal(cJSON_GetObjectItem(lat, "provenance")->valuestring, "estimate");
    assert_non_null(strstr(cJSON_GetObjectItem(lat, "source")->valuestring, "states no rate"));
    cJSON_Delete(j);
    assert_int_equal(run_cli("devices show a100"), 0);
    assert_non_null(strstr(out_buf, "runtime stacks"));
    assert_non_null(strstr(out_buf, "tensorrt-fp32 (transferred)"));
    assert_int_equal(run_cli("devices show v100-sxm2-32gb"), 0);
    assert_non_null(strstr(out_buf, "pytorch-eager-fp32 (calibrated)"));
}

/* MIG under a TensorRT stack at a large batch: every slice is timed, none is faster than the
 * whole GPU, and the 1g slice (14 of 98 SMs) is slower than the 7g one. */
static void mig_should_take_a_runtime_stack(void **state)
{
    (void)state;
    cJSON *j = run_json("mig examples/resnet18.onnx --batch 64 --runtime tensorrt --json");
    cJSON *profiles = cJSON_GetObjectItem(j, "profiles");
    assert_int_equal(cJSON_GetArraySize(profiles), 6);
    double first = -1, last = -1;
    cJSON *p;
    cJSON_ArrayForEach(p, profiles)
    {
        cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "prediction"),
                                                             "latency"), "value");
        assert_true(cJSON_IsNumber(lat));
        if (first < 0) first = lat->valuedouble;
        last = lat->valuedouble;
    }
    assert_true(first > last);
    cJSON_Delete(j);
}

static double json_latency(const char *args)
{
    cJSON *j = run_json(args);
    double v = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"),
                                                       "latency"), "value")->valuedouble;
    cJSON_Delete(j);
    return v;
}

/* --device-file: a descriptor of the user's own beside the shipped ones, for any command. An A100
 * in a host that dispatches an op as slowly as the 2022 desktop hosts (scale 1, where the shipped
 * A100 takes the current hosts' 0.40) is slower on a host-bound ResNet-18 at batch 1. */
static void device_file_should_add_a_descriptor_for_any_command(void **state)
{
    (void)state;
    char path[2048], list[2048], args[8192];
    snprintf(path, sizeof path, "%s/test_cli_oldhost.yaml", PP_BINARY_DIR);
    pp_test_write_text(path, "name: a100-oldhost\n"
                             "description: A100 SXM4 80GB in an older host\n"
                             "base: a100-sxm4-80gb\n"
                             "calibration_from: a100-pcie-40gb\n"
                             "runtime:\n"
                             "  host_dispatch_scale: 1.0\n");
    snprintf(args, sizeof args, "--device a100-oldhost examples/resnet18.onnx --json "
             "--device-file '%s'", path);
    double old = json_latency(args);
    double cur = json_latency("--device a100-sxm4-80gb examples/resnet18.onnx --json");
    if (!(old > 1.5 * cur)) print_error("a100-oldhost %.3f ms, a100-sxm4-80gb %.3f ms\n", old, cur);
    assert_true(old > 1.5 * cur);
    /* the same file for compare (the = form) and predict-many */
    snprintf(args, sizeof args, "compare --device a100-oldhost,a100-sxm4-80gb "
             "examples/resnet18.onnx --device-file='%s'", path);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "a100-oldhost"));
    snprintf(list, sizeof list, "%s/test_cli_onnx_list.txt", PP_BINARY_DIR);
    pp_test_write_text(list, "examples/resnet18.onnx\n");
    snprintf(args, sizeof args, "predict-many --device a100-oldhost --onnx-list '%s' --csv "
             "--device-file '%s'", list, path);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "a100-oldhost"));
    /* without it the name is unknown; a missing file and a missing argument are named */
    assert_int_equal(run_cli("--device a100-oldhost examples/resnet18.onnx"), 4);
    assert_int_equal(run_cli("--device a100 examples/resnet18.onnx --device-file /nonexistent.yaml"),
                     2);
    assert_non_null(strstr(out_buf, "/nonexistent.yaml"));
    assert_int_equal(run_cli("--device a100 examples/resnet18.onnx --device-file"), 1);
    unlink(list);
    unlink(path);
}

/* The latency of a --json prediction, the kernels of a kind among its --layers and, where prov is
 * not NULL, whether the latency's provenance is prov where every kernel was calibrated and "mixed"
 * where some were not */
static double json_latency_kernels(const char *args, const char *kind, int *n_kind,
                                   const char *prov, int *prov_ok)
{
    cJSON *j = run_json(args);
    const cJSON *pred = cJSON_GetObjectItem(j, "prediction");
    const cJSON *lat = cJSON_GetObjectItem(pred, "latency");
    double v = cJSON_GetObjectItem(lat, "value")->valuedouble;
    if (prov) {
        const cJSON *p = cJSON_GetObjectItem(lat, "provenance");
        int all = cJSON_GetObjectItem(pred, "calibrated_kernels")->valueint ==
                  cJSON_GetObjectItem(pred, "kernels")->valueint;
        *prov_ok = cJSON_IsString(p) && strcmp(p->valuestring, all ? prov : "mixed") == 0;
    }
    *n_kind = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(j, "kernels"))
    {
        const cJSON *kk = cJSON_GetObjectItem(k, "kind");
        if (cJSON_IsString(kk) && strcmp(kk->valuestring, kind) == 0) (*n_kind)++;
    }
    cJSON_Delete(j);
    return v;
}

/* runtime.conv_call_us in a transfer (calibration_from): a kernel's fixed time is swapped for the
 * target's only where both descriptors state a call cost; a source that states none has it inside
 * its models' times. MobileNetV2 at batch 16 runs every convolution through oneDNN (batch > 1 and
 * not a 1x1 at batch < 16). Descriptors of one's own, on the shipped epyc-zen4-kvm-2vcpu (29.5 us
 * stated) and xeon-kvm-2vcpu (none), borrowing the models of the one they copy: with both stating
 * a call, 100 us more a call on the target adds 0.1 ms a convolution kernel to the layer sum;
 * from the source that states none, a call stated on the target changes nothing. A layer sum of
 * another device's models says "transferred". */
static void transfer_should_swap_conv_calls_only_where_both_state_one(void **state)
{
    (void)state;
    char path[2048], args[8192];
    snprintf(path, sizeof path, "%s/test_cli_convcall.yaml", PP_BINARY_DIR);
    pp_test_write_text(path, "name: zen4-copy\ndescription: a copy\nbase: epyc-zen4-kvm-2vcpu\n"
                             "calibration_from: epyc-zen4-kvm-2vcpu\n"
                             "---\nname: zen4-slowcall\ndescription: a copy\nbase: epyc-zen4-kvm-2vcpu\n"
                             "calibration_from: epyc-zen4-kvm-2vcpu\n"
                             "runtime:\n  conv_call_us: 129.5\n"
                             "---\nname: xeon-copy\ndescription: a copy\nbase: xeon-kvm-2vcpu\n"
                             "calibration_from: xeon-kvm-2vcpu\n"
                             "---\nname: xeon-call\ndescription: a copy\nbase: xeon-kvm-2vcpu\n"
                             "calibration_from: xeon-kvm-2vcpu\n"
                             "runtime:\n  conv_call_us: 129.5\n");
    const char *fmt = "--device %s tests/fixtures/models/mobilenet_v2.onnx --batch 16 --json "
                      "--layer-sum-only --layers 1000 --device-file '%s'";
    int nconv, ndw, n2, ok = 0;
    snprintf(args, sizeof args, fmt, "zen4-copy", path);
    double base = json_latency_kernels(args, "conv", &nconv, "transferred", &ok);
    /* every kernel from another device's models: transferred, not calibrated */
    assert_true(ok);
    json_latency_kernels(args, "dwconv", &ndw, NULL, NULL);
    snprintf(args, sizeof args, fmt, "epyc-zen4-kvm-2vcpu", path);
    json_latency_kernels(args, "conv", &n2, "calibrated", &ok);
    assert_true(ok);
    /* ResNet-18, whose kernels the shipped models all cover (where they do) */
    snprintf(args, sizeof args,
             "--device zen4-copy tests/fixtures/models/resnet18.onnx --json --layer-sum-only "
             "--device-file '%s'", path);
    json_latency_kernels(args, "conv", &n2, "transferred", &ok);
    assert_true(ok);
    /* and the text output names whose models timed its kernels */
    snprintf(args, sizeof args,
             "--device zen4-copy tests/fixtures/models/resnet18.onnx --device-file '%s'", path);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "timed by epyc-zen4-kvm-2vcpu's layer models (transferred)"));
    assert_null(strstr(out_buf, " calibrated\n"));
    snprintf(args, sizeof args, fmt, "zen4-slowcall", path);
    double slow = json_latency_kernels(args, "conv", &n2, NULL, NULL);
    assert_int_equal(n2, nconv);
    assert_true(nconv > 0 && ndw > 0);
    double want = base + 0.1 * (nconv + ndw);
    if (fabs(slow - want) > 1e-6 * want)
        print_error("zen4-slowcall %.6f ms, zen4-copy %.6f + 0.1 x (%d + %d)\n", slow, base, nconv,
                    ndw);
    assert_true(fabs(slow - want) <= 1e-6 * want);
    snprintf(args, sizeof args, fmt, "xeon-copy", path);
    double x0 = json_latency_kernels(args, "conv", &n2, NULL, NULL);
    snprintf(args, sizeof args, fmt, "xeon-call", path);
    double x1 = json_latency_kernels(args, "conv", &n2, NULL, NULL);
    if (fabs(x1 - x0) > 1e-9 * x0) print_error("xeon-call %.9f ms, xeon-copy %.9f\n", x1, x0);
    assert_true(fabs(x1 - x0) <= 1e-9 * x0);
    unlink(path);
}

/* The peak memory of a --json prediction. */
static double json_peak_memory(const char *args)
{
    cJSON *j = run_json(args);
    const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "peak_memory");
    double v = cJSON_GetObjectItem(m, "value")->valuedouble;
    cJSON_Delete(j);
    return v;
}

/* The latency and its provenance and source of a --json prediction. */
static double json_latency_src(const char *args, char *prov, char *src, size_t n)
{
    cJSON *j = run_json(args);
    const cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "latency");
    double v = cJSON_GetObjectItem(lat, "value")->valuedouble;
    snprintf(prov, n, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(lat, "provenance")));
    snprintf(src, n, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(lat, "source")));
    cJSON_Delete(j);
    return v;
}

/* A CPU that borrows another's layer models (calibration_from) and has no in-network correction
 * of its own takes the source's, scaled: latency = a x layer sum + c' x kernels + d' x MB moved +
 * e' x MB of cold weights, c' = c x the target's / source's launch_overhead_us, d' and e' = d and
 * e x the source's / target's memory_bandwidth_gbs. The figures a, c come from the shipped
 * epyc-zen4-kvm-2vcpu artifact itself. ResNet-18's 44.6 MB of weights exceed its 32 MiB L3, so
 * every term counts. A copy with the source's figures answers as the source does, labelled
 * transferred; a host twice as slow per op adds c x kernels once more; half the bandwidth doubles
 * the per-MB terms (read as what is left of each latency past a x layer sum and c x kernels). */
static void transfer_should_carry_the_source_overhead_correction_scaled(void **state)
{
    (void)state;
    char path[2048], args[8192], prov[4096], src[4096];
    snprintf(path, sizeof path, "%s/test_cli_ovhxfer.yaml", PP_BINARY_DIR);
    pp_test_write_text(path, "name: zen4-borrow\ndescription: a copy\nbase: epyc-zen4-kvm-2vcpu\n"
                             "calibration_from: epyc-zen4-kvm-2vcpu\n"
                             "---\nname: zen4-slowhost\ndescription: a copy\n"
                             "base: epyc-zen4-kvm-2vcpu\ncalibration_from: epyc-zen4-kvm-2vcpu\n"
                             "runtime:\n  launch_overhead_us: 2.12\n"
                             "---\nname: zen4-halfbw\ndescription: a copy\n"
                             "base: epyc-zen4-kvm-2vcpu\ncalibration_from: epyc-zen4-kvm-2vcpu\n"
                             "hardware:\n  memory_bandwidth_gbs: 17.55\n");
    char *text = pp_test_read_text(
        pp_test_path("configs/artifacts/epyc-zen4-kvm-2vcpu/overhead-latency.json"));
    assert_non_null(text);
    cJSON *art = cJSON_Parse(text);
    free(text);
    assert_non_null(art);
    double a = cJSON_GetObjectItem(art, "scale")->valuedouble;
    double c = cJSON_GetObjectItem(art, "per_kernel_ms")->valuedouble;
    cJSON_Delete(art);
    const char *model = "tests/fixtures/models/resnet18.onnx";
    snprintf(args, sizeof args, "--device epyc-zen4-kvm-2vcpu %s --json", model);
    double own = json_latency_src(args, prov, src, sizeof prov);
    assert_string_equal(prov, "calibrated");
    /* per device: the latency, the layer sum, the kernels */
    const char *dev[3] = {"zen4-borrow", "zen4-slowhost", "zen4-halfbw"};
    double lat[3], sum[3], rest[3];
    int nk = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "--device %s %s --json --device-file '%s'", dev[i], model,
                 path);
        lat[i] = json_latency_src(args, prov, src, sizeof prov);
        assert_string_equal(prov, "transferred");
        assert_non_null(strstr(src, "in-network overhead of epyc-zen4-kvm-2vcpu"));
        assert_non_null(strstr(src, "scaled to this device"));
        snprintf(args, sizeof args, "--device %s %s --json --layer-sum-only --device-file '%s'",
                 dev[i], model, path);
        int n = 0;
        sum[i] = json_latency_kernels(args, "conv", &n, NULL, NULL);
        cJSON *j = run_json(args);
        nk = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "kernels")->valueint;
        cJSON_Delete(j);
        /* what the per-MB terms add */
        rest[i] = lat[i] - a * sum[i] - c * nk * (i == 1 ? 2 : 1);
    }
    if (fabs(lat[0] - own) > 1e-9 * own) print_error("borrowed %.9f, own %.9f\n", lat[0], own);
    assert_true(fabs(lat[0] - own) <= 1e-9 * own);
    assert_true(nk > 0 && rest[0] > 0.01 * lat[0]);
    if (fabs(rest[1] - rest[0]) > 1e-6 * lat[0] || fabs(rest[2] - 2 * rest[0]) > 1e-6 * lat[0])
        print_error("per-MB terms: %.9f, slow host %.9f, half bandwidth %.9f\n", rest[0], rest[1],
                    rest[2]);
    assert_true(fabs(rest[1] - rest[0]) <= 1e-6 * lat[0]);
    assert_true(fabs(rest[2] - 2 * rest[0]) <= 1e-6 * lat[0]);
    unlink(path);
}

/* A compute-bound kernel the layer models answering for a CPU do not cover (a kernel size or
 * operator they never saw) is timed by the nearest other calibrated CPU's models that do, scaled
 * to the CPU, where it took the datasheet roofline (every core at its FMA peak) before: a
 * descriptor with every figure of xeon-kvm-2vcpu's, borrowing host-cpu's models (whose rows hold
 * no convolution larger than 4x4), times AlexNet's 11x11 and 5x5 convolutions as xeon-kvm-2vcpu's
 * own models do (the same figures: the scaling is 1), labelled transferred and counted; the
 * kernels host-cpu's models cover keep its times. A memory-bound kernel no model covers
 * (MobileNetV2's ReLU6 Clips, which neither Intel guest timed) keeps the roofline. host-cpu's own
 * answer, with kernels from another CPU's models, is mixed; the header says one thread. */
static void uncovered_kernels_should_take_the_nearest_cpu_that_covers_them(void **state)
{
    (void)state;
    char path[2048], args[8192];
    snprintf(path, sizeof path, "%s/test_cli_cover.yaml", PP_BINARY_DIR);
    pp_test_write_text(path,
                       "name: xeon-twin\ndescription: xeon-kvm-2vcpu's figures\n"
                       "vendor: GenuineIntel\nkind: cpu\ncalibration_from: host-cpu\nhardware:\n"
                       "  peak_tflops:\n    fp32: 0.3484\n  memory_bandwidth_gbs: 27.3\n"
                       "  memory_gb: 23.5\n  compute_units: 2\n  clock_mhz: 2300\n  l2_mb: 260\n"
                       "runtime:\n  framework: pytorch-eager\n  precision: fp32\n"
                       "  launch_overhead_us: 1.07\n  runtime_memory_overhead_mb: 233\n"
                       "  gemm_gflops: 40.4\n"
                       "  fusion: [{ops: [MatMul, Add], max_input_rank: 3}]\n"
                       "  composite_ops: [[Div, Erf, Add, Mul, Mul], [Sigmoid, Mul], "
                       "[HardSigmoid, Mul]]\n");
    const char *model = "tests/fixtures/models/alexnet.onnx";
    snprintf(args, sizeof args, "--device xeon-twin %s --json --layers 1000 --device-file '%s'",
             model, path);
    cJSON *twin = run_json(args);
    snprintf(args, sizeof args, "--device xeon-kvm-2vcpu %s --json --layers 1000", model);
    cJSON *xeon = run_json(args);
    snprintf(args, sizeof args, "--device host-cpu %s --json --layers 1000", model);
    cJSON *host = run_json(args);
    const cJSON *kt = cJSON_GetObjectItem(twin, "kernels"), *kx = cJSON_GetObjectItem(xeon, "kernels");
    const cJSON *kh = cJSON_GetObjectItem(host, "kernels");
    int n = cJSON_GetArraySize(kt), covered = 0, convs = 0, hc = 0;
    assert_true(n > 0 && n == cJSON_GetArraySize(kx) && n == cJSON_GetArraySize(kh));
    for (int i = 0; i < n; i++) {
        const cJSON *a = cJSON_GetArrayItem(kt, i), *x = cJSON_GetArrayItem(kx, i);
        const cJSON *h = cJSON_GetArrayItem(kh, i);
        assert_string_equal(cJSON_GetObjectItem(a, "name")->valuestring,
                            cJSON_GetObjectItem(x, "name")->valuestring);
        const char *prov = cJSON_GetObjectItem(a, "provenance")->valuestring;
        hc += strcmp(cJSON_GetObjectItem(h, "provenance")->valuestring, "transferred") == 0;
        if (strcmp(prov, "transferred") != 0) {
            assert_string_equal(prov, "calibrated"); /* host-cpu's models answer */
            continue;
        }
        covered++;
        convs += strcmp(cJSON_GetObjectItem(a, "kind")->valuestring, "conv") == 0;
        assert_string_equal(cJSON_GetObjectItem(a, "bound")->valuestring, "compute");
        assert_string_equal(cJSON_GetObjectItem(x, "provenance")->valuestring, "calibrated");
        double t = cJSON_GetObjectItem(a, "latency_ms")->valuedouble;
        double tx = cJSON_GetObjectItem(x, "latency_ms")->valuedouble;
        if (fabs(t - tx) > 1e-9 * tx) print_error("kernel %d: twin %.9f, xeon %.9f\n", i, t, tx);
        assert_true(fabs(t - tx) <= 1e-9 * tx);
    }
    assert_true(convs >= 2 && covered < n);
    const cJSON *pred = cJSON_GetObjectItem(twin, "prediction");
    assert_int_equal(cJSON_GetObjectItem(pred, "covered_kernels")->valueint, covered);
    assert_int_equal(cJSON_GetObjectItem(pred, "calibrated_kernels")->valueint, n - covered);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(pred, "latency"), "provenance")->valuestring,
        "transferred");
    /* host-cpu's own answer: its models with another CPU's for the same convolutions: mixed */
    const cJSON *ph = cJSON_GetObjectItem(host, "prediction");
    assert_true(hc >= 2);
    assert_int_equal(cJSON_GetObjectItem(ph, "covered_kernels")->valueint, hc);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(ph, "latency"), "provenance")->valuestring,
        "mixed");
    cJSON_Delete(twin);
    cJSON_Delete(xeon);
    cJSON_Delete(host);

    /* a memory-bound kernel no model covers keeps the roofline: an estimate */
    snprintf(args, sizeof args,
             "--device xeon-twin tests/fixtures/models/mobilenet_v2.onnx --json --layers 1000 "
             "--device-file '%s'", path);
    cJSON *mb = run_json(args);
    int clips = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, cJSON_GetObjectItem(mb, "kernels"))
    {
        if (strcmp(cJSON_GetObjectItem(k, "ops")->valuestring, "Clip") != 0) continue;
        clips++;
        assert_string_equal(cJSON_GetObjectItem(k, "provenance")->valuestring, "estimate");
        assert_string_equal(cJSON_GetObjectItem(k, "bound")->valuestring, "memory");
    }
    assert_true(clips >= 10);
    cJSON_Delete(mb);

    /* the CLI says how many kernels other CPUs' models timed, and that the answer is one
     * thread's, as the CPU layer models were timed */
    snprintf(args, sizeof args, "--device xeon-twin %s --device-file '%s'", model, path);
    assert_int_equal(run_cli(args), 0);
    char want[128];
    snprintf(want, sizeof want, ", %d by other calibrated CPUs' models (transferred)", covered);
    assert_non_null(strstr(out_buf, want));
    assert_non_null(strstr(out_buf, "batch 1, runtime pytorch-eager fp32, one thread\n"));
    unlink(path);
    /* compare says so under a table with such a CPU in it, and only there */
    static const char *line = "eager-PyTorch CPU rows are one thread's";
    assert_int_equal(run_cli("compare --device epyc-zen4-kvm-2vcpu,rpi4 examples/resnet18.onnx"), 0);
    assert_non_null(strstr(out_buf, line));
    assert_int_equal(run_cli("compare --device rpi4,a100 examples/resnet18.onnx"), 0);
    assert_null(strstr(out_buf, line));
}

/* An eager-PyTorch CPU calibrated in no way and naming no calibration_from borrows the calibrated
 * CPU nearest to its figures per core, scaled per core (the CPU layer models time one thread):
 * an 18-core machine whose every figure per core is xeon-kvm-2vcpu's (x 9 the guest's 2 cores),
 * stating no cost per op (so the source's stays), answers as xeon-kvm-2vcpu does, labelled
 * transferred and naming it; one per core like host-cpu borrows host-cpu; an AMD part with
 * xeon's figures borrows the nearest AMD CPU (the same maker's libraries take the same code
 * paths); one without a bandwidth borrows nothing. */
static void uncalibrated_cpu_should_borrow_the_nearest_per_core(void **state)
{
    (void)state;
    char path[2048], args[8192], prov[4096], src[4096];
    snprintf(path, sizeof path, "%s/test_cli_nearest.yaml", PP_BINARY_DIR);
    const char *rt = "runtime:\n  framework: pytorch-eager\n  precision: fp32\n"
                     "  fusion: [{ops: [MatMul, Add], max_input_rank: 3}]\n"
                     "  composite_ops: [[Div, Erf, Add, Mul, Mul], [Sigmoid, Mul], "
                     "[HardSigmoid, Mul]]\n";
    char text[6000];
    snprintf(text, sizeof text,
             "name: xeon-x9\ndescription: 18 cores\nvendor: Intel\nkind: cpu\nhardware:\n"
             "  peak_tflops:\n    fp32: 3.1356\n  memory_bandwidth_gbs: 245.7\n"
             "  compute_units: 18\n  l2_mb: 260\n  memory_gb: 64\n%s"
             "---\nname: host-x4\ndescription: 8 cores\nvendor: Intel\nkind: cpu\nhardware:\n"
             "  peak_tflops:\n    fp32: 1.024\n  memory_bandwidth_gbs: 102.4\n"
             "  compute_units: 8\n  memory_gb: 64\n%s"
             "---\nname: no-bw\ndescription: no bandwidth\nvendor: Intel\nkind: cpu\nhardware:\n"
             "  peak_tflops:\n    fp32: 1.024\n  compute_units: 8\n%s"
             "---\nname: amd-x9\ndescription: 18 cores\nvendor: AuthenticAMD\nkind: cpu\n"
             "hardware:\n  peak_tflops:\n    fp32: 3.1356\n  memory_bandwidth_gbs: 245.7\n"
             "  compute_units: 18\n%s",
             rt, rt, rt, rt);
    pp_test_write_text(path, text);
    const char *models[2] = {"tests/fixtures/models/resnet18.onnx",
                             "tests/fixtures/models/mobilenet_v2.onnx"};
    for (int m = 0; m < 2; m++) {
        snprintf(args, sizeof args, "--device xeon-kvm-2vcpu %s --json", models[m]);
        double own = json_latency_src(args, prov, src, sizeof prov);
        /* another device's models: "transferred" where layer models timed every kernel of the
         * source's own answer (its own, or another CPU's where they do not cover one) */
        cJSON *oj = run_json(args);
        const cJSON *op = cJSON_GetObjectItem(oj, "prediction");
        const cJSON *cov = cJSON_GetObjectItem(op, "covered_kernels");
        int timed = cJSON_GetObjectItem(op, "calibrated_kernels")->valueint +
                    (cov ? cov->valueint : 0);
        const char *want =
            timed == cJSON_GetObjectItem(op, "kernels")->valueint ? "transferred" : "mixed";
        cJSON_Delete(oj);
        snprintf(args, sizeof args, "--device xeon-x9 %s --json --device-file '%s'", models[m],
                 path);
        double x9 = json_latency_src(args, prov, src, sizeof prov);
        assert_string_equal(prov, want);
        assert_non_null(strstr(src, "in-network overhead of xeon-kvm-2vcpu"));
        if (fabs(x9 - own) > 1e-9 * own) print_error("%s: xeon-x9 %.9f, own %.9f\n", models[m], x9, own);
        assert_true(fabs(x9 - own) <= 1e-9 * own);
    }
    /* no runtime memory stated: the source's PyTorch resident set (xeon-kvm-2vcpu's 233 MB) */
    snprintf(args, sizeof args, "--device xeon-kvm-2vcpu %s --json", models[0]);
    double mem_own = json_peak_memory(args);
    snprintf(args, sizeof args, "--device xeon-x9 %s --json --device-file '%s'", models[0], path);
    assert_true(mem_own > 233e6 && json_peak_memory(args) == mem_own);
    snprintf(args, sizeof args, "--device host-x4 %s --device-file '%s'", models[0], path);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "timed by host-cpu's layer models (transferred)"));
    /* xeon-kvm-2vcpu's figures per core, but an AMD part: the nearest AMD CPU (the Zen 4 guest's
     * per-core figures are nearer xeon's than the Zen 3 guest's: 117 / 17.6 against 102 / 16.9
     * GFLOP/s and GB/s per core, xeon's 174 / 13.7) */
    snprintf(args, sizeof args, "--device amd-x9 %s --device-file '%s'", models[0], path);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "timed by epyc-zen4-kvm-2vcpu's layer models (transferred)"));
    snprintf(args, sizeof args, "--device no-bw %s --json --device-file '%s'", models[0], path);
    json_latency_src(args, prov, src, sizeof prov);
    assert_string_not_equal(prov, "transferred");
    unlink(path);
}

/* A search-space ref goes wherever a model path does: the CLI predicts a NAS-Bench-201 cell as
 * predict-many does, and a network CSV row naming one is evaluated (its folder not prefixed). */
static void nas_refs_should_load_like_files(void **state)
{
    (void)state;
    const char *cell = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|"
                       "nor_conv_3x3~1|skip_connect~2|";
    char args[4096], path[2048], prov[256], src[4096];
    snprintf(args, sizeof args, "--device xeon-kvm-2vcpu 'nb201:%s@cifar10' --json", cell);
    double one = json_latency_src(args, prov, src, sizeof prov);
    snprintf(path, sizeof path, "%s/test_cli_cell.txt", PP_BINARY_DIR);
    char text[512];
    snprintf(text, sizeof text, "%s\n", cell);
    pp_test_write_text(path, text);
    snprintf(args, sizeof args, "predict-many --device xeon-kvm-2vcpu --nb201 '%s' --csv", path);
    assert_int_equal(run_cli(args), 0);
    const char *row = strstr(out_buf, ",xeon-kvm-2vcpu,1,");
    assert_non_null(row);
    double many = strtod(row + strlen(",xeon-kvm-2vcpu,1,"), NULL);
    if (fabs(one - many) > 1e-6 * many) print_error("CLI %.9f, predict-many %.9f\n", one, many);
    assert_true(fabs(one - many) <= 1e-6 * many);
    /* a network CSV row: measured at twice the prediction, so the row's error reads +-50 % */
    snprintf(path, sizeof path, "%s/test_cli_cellnet.csv", PP_BINARY_DIR);
    char csv_text[2048];
    snprintf(csv_text, sizeof csv_text,
             "model,family,device,runtime,runtime_version,precision,batch,input_shapes,latency_ms,"
             "latency_spread_ms,repetitions,energy_j,peak_memory_bytes,source,date\n"
             "nb201:%s@cifar10,nb201,xeon-kvm-2vcpu,pytorch-eager,torch,fp32,1,,%.9f,,,,,"
             "test,2026-11-30\n", cell, 2 * one);
    pp_test_write_text(path, csv_text);
    snprintf(args, sizeof args, "eval --device xeon-kvm-2vcpu --networks '%s'", path);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "-50.0"));
    unlink(path);
}

/* The numbers of a `calibrate host --json` report. */
static double host_report(const char *args, double *descriptor_scale, int *n_rows)
{
    cJSON *j = run_json(args);
    assert_non_null(j);
    double v = cJSON_GetObjectItem(j, "scale")->valuedouble;
    if (descriptor_scale) *descriptor_scale = cJSON_GetObjectItem(j, "descriptor_scale")->valuedouble;
    if (n_rows) *n_rows = cJSON_GetArraySize(cJSON_GetObjectItem(j, "rows"));
    cJSON_Delete(j);
    return v;
}

/* The stack's host time per call on resnet18 at batch 1 (--device-file FILE where not NULL). */
static double host_ms_of(const char *device, const char *file)
{
    char args[2048];
    snprintf(args, sizeof args, "--device %s examples/resnet18.onnx --json%s%s", device,
             file ? " --device-file " : "", file ? file : "");
    cJSON *j = run_json(args);
    assert_non_null(j);
    const cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prediction"), "stack");
    assert_non_null(s);
    double v = cJSON_GetObjectItem(s, "host_ms")->valuedouble;
    cJSON_Delete(j);
    return v;
}

/* calibrate host: a GPU's host dispatch scale from whole-model rows of that GPU. The H100's own
 * runs gave 0.38 by this rule (docs/gpu-stacks.md), so its rows must land near it; times twice as
 * long give twice the scale (a host-bound prediction's host time is linear in it); the descriptor
 * it writes loads, names its source, and scales the host time by the ratio; bad rows are named. */
static void calibrate_host_should_measure_the_dispatch_scale(void **state)
{
    (void)state;
    const char *rows = "data/gpu-stacks/2026_1126b_pretrained-fp32/h100.csv";
    char args[4096], slow[1024], yaml[1024], bad[1024];
    double s0 = 0;
    int n = 0;
    snprintf(args, sizeof args, "calibrate host --device h100-sxm5-80gb --rows %s --json", rows);
    double s = host_report(args, &s0, &n);
    if (!(s > 0.30 && s < 0.46)) print_error("H100 host scale %.4f\n", s);
    assert_true(s > 0.30 && s < 0.46);
    assert_true(n >= 3);
    /* every time doubled */
    snprintf(slow, sizeof slow, "%s/test_cli_host_slow.csv", PP_BINARY_DIR);
    snprintf(args, sizeof args,
             "/usr/bin/python3 -c \"import csv,sys; r=list(csv.reader(open('%s/%s'))); "
             "i=r[0].index('latency'); [x.__setitem__(i, repr(2*float(x[i]))) for x in r[1:]]; "
             "csv.writer(open('%s','w')).writerows(r)\"",
             PP_SOURCE_DIR, rows, slow);
    assert_int_equal(system(args), 0);
    snprintf(args, sizeof args, "calibrate host --device h100-sxm5-80gb --rows %s --json", slow);
    double s2 = host_report(args, NULL, NULL);
    if (fabs(s2 - 2 * s) > 1e-9 * s) print_error("doubled times: %.9f, not 2 x %.9f\n", s2, s);
    assert_true(fabs(s2 - 2 * s) <= 1e-9 * s);
    /* the descriptor of one's own */
    snprintf(yaml, sizeof yaml, "%s/test_cli_host.yaml", PP_BINARY_DIR);
    snprintf(args, sizeof args,
             "calibrate host --device h100-sxm5-80gb --rows %s --write %s --name my-h100", rows,
             yaml);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "written: "));
    double h0 = host_ms_of("h100-sxm5-80gb", NULL), h1 = host_ms_of("my-h100", yaml);
    /* (the file states the scale to 6 digits) */
    if (fabs(h1 - h0 * s / s0) > 1e-5 * h0)
        print_error("host %.6f ms on my-h100, %.6f x %.4f / %.4f expected\n", h1, h0, s, s0);
    assert_true(fabs(h1 - h0 * s / s0) <= 1e-5 * h0);
    snprintf(args, sizeof args, "--device my-h100 examples/resnet18.onnx --device-file %s", yaml);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "measured on this GPU's host"));
    /* its MIG slices, stated again (base: does not carry them), run on the measured host too */
    snprintf(args, sizeof args, "mig examples/resnet18.onnx --device my-h100 --device-file %s",
             yaml);
    assert_int_equal(run_cli(args), 0);
    assert_non_null(strstr(out_buf, "my-h100-mig-1g"));
    /* bad input: named */
    snprintf(args, sizeof args, "calibrate host --device a100-mig-3g --rows %s", rows);
    assert_int_equal(run_cli(args), 1);
    assert_non_null(strstr(out_buf, "MIG"));
    snprintf(bad, sizeof bad, "%s/test_cli_host_bad.csv", PP_BINARY_DIR);
    pp_test_write_text(bad, "model,torchvision_name,batch_size,latency,runtime,precision\n"
                            "resnet18,resnet18,8,0.004,pytorch-eager,fp32\n");
    snprintf(args, sizeof args, "calibrate host --device h100-sxm5-80gb --rows %s", bad);
    assert_int_equal(run_cli(args), 1);
    assert_non_null(strstr(out_buf, "test_cli_host_bad.csv: no batch-1"));
    pp_test_write_text(bad, "model,torchvision_name,batch_size,latency,runtime,precision\n"
                            "resnet18,resnet18,1,fast,pytorch-eager,fp32\n");
    assert_int_equal(run_cli(args), 2);
    assert_non_null(strstr(out_buf, "test_cli_host_bad.csv:2: latency 'fast'"));
    pp_test_write_text(bad, "model,torchvision_name,batch_size,runtime,precision\n");
    assert_int_equal(run_cli(args), 2);
    assert_non_null(strstr(out_buf, "no column 'latency'"));
    unlink(slow);
    unlink(yaml);
    unlink(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calibrate_host_should_measure_the_dispatch_scale),
        cmocka_unit_test(help_should_list_exit_codes),
        cmocka_unit_test(usage_errors_should_exit_1),
        cmocka_unit_test(bad_model_files_should_exit_2_or_3_naming_the_file),
        cmocka_unit_test(unknown_device_should_exit_4),
        cmocka_unit_test(inspect_json_should_carry_totals_and_layers),
        cmocka_unit_test(predict_json_should_label_every_figure),
        cmocka_unit_test(a_missing_tensor_rate_should_make_the_latency_an_estimate),
        cmocka_unit_test(compare_json_should_sort_and_mark_pareto),
        cmocka_unit_test(mig_json_should_apply_memory_rule),
        cmocka_unit_test(devices_should_list_and_show),
        cmocka_unit_test(every_bundled_model_should_predict_compare_and_advise),
        cmocka_unit_test(gnn_correction_should_answer_and_be_named),
        cmocka_unit_test(layer_sum_only_should_print_the_kernels_sum),
        cmocka_unit_test(family_folds_should_pool_what_eval_reports),
        cmocka_unit_test(network_fit_should_take_huber_and_seed),
        cmocka_unit_test(gpu_stacks_should_be_chosen_named_and_refused),
        cmocka_unit_test(mig_should_take_a_runtime_stack),
        cmocka_unit_test(device_file_should_add_a_descriptor_for_any_command),
        cmocka_unit_test(transfer_should_swap_conv_calls_only_where_both_state_one),
        cmocka_unit_test(transfer_should_carry_the_source_overhead_correction_scaled),
        cmocka_unit_test(uncalibrated_cpu_should_borrow_the_nearest_per_core),
        cmocka_unit_test(uncovered_kernels_should_take_the_nearest_cpu_that_covers_them),
        cmocka_unit_test(nas_refs_should_load_like_files),
    };
    return cmocka_run_group_tests(tests, NULL, remove_small_networks);
}
