/* tests/alloc_failure.c: SQLite's allocation-failure loop. The library's objects are linked here
 * with -Wl,--wrap for malloc, calloc, realloc, strdup and strndup (and cJSON's hooks point at the
 * same wrappers), so the Nth allocation of an operation can be made to fail; each operation is run
 * for N = 1, 2, ... until it completes without reaching N. Every run must end in a clean error
 * (a status and a message) or a success, never a crash; the sanitized suite adds that nothing
 * leaks (LeakSanitizer at exit) and nothing is read after a free. Allocations inside libyaml,
 * XGBoost and libcsv are not seen (they are other shared objects). */
#include "tests/graph_same.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fit/fit.h"
#include "devices/devices.h"
#include "graph/builders.h"
#include "graph/graph.h"
#include "graph_gnn/graph_gnn.h"
#include "layer_models/layer_models.h"
#include "predictor/allocator.h"
#include "util/util.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t sz);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static int armed;       /* counting only while an operation runs */
static long n_allocs;   /* allocations of the current run */
static long fail_at;    /* the one that fails (1-based) */
static int failed;      /* whether it was reached */

static int fail_now(void)
{
    if (!armed) return 0;
    if (++n_allocs != fail_at) return 0;
    failed = 1;
    return 1;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t sz) { return fail_now() ? NULL : __real_calloc(n, sz); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }

typedef perfpred_status (*op_fn)(void *arg, char *msg, size_t msg_n);
typedef void (*after_fn)(void *arg, perfpred_status st);

/* Runs op with allocation N failing for N = 1, 2, ... until a run makes fewer than N allocations
 * (which must then succeed); returns the number of runs. A run whose failure was reached either
 * succeeds (the allocation was optional) or fails with a message. after (may be NULL) checks what
 * a run left behind. */
static long fail_each_allocation(const char *what, op_fn op, after_fn after, void *arg)
{
    long n = 1, failures = 0;
    for (;; n++) {
        char msg[1024] = "";
        n_allocs = 0;
        fail_at = n;
        failed = 0;
        armed = 1;
        perfpred_status st = op(arg, msg, sizeof msg);
        armed = 0;
        if (after) after(arg, st);
        if (!failed) {
            if (st != PERFPRED_OK) fail_msg("%s: no allocation failed, yet: %s", what, msg);
            break;
        }
        if (st != PERFPRED_OK) {
            failures++;
            if (!msg[0]) fail_msg("%s: allocation %ld failed with status %d and no message", what, n, st);
        }
    }
    print_message("%s: %ld allocations, each failed once: %ld clean errors\n", what, n - 1,
                  failures);
    assert_true(failures > 0);
    return n;
}

static void *hook_malloc(size_t n) { return __wrap_malloc(n); }

/* ---- the operations ---- */

/* The operation's error message into msg (msg_n bytes), cut to fit. */
static void copy_msg(char *msg, size_t msg_n, const char *src)
{
    size_t n = strnlen(src, msg_n - 1);
    memcpy(msg, src, n);
    msg[n] = 0;
}

static perfpred_status op_descriptors(void *arg, char *msg, size_t msg_n)
{
    pp_device_db *db = NULL;
    pp_err err = {0};
    perfpred_status st = pp_devices_load_dir(PP_SOURCE_DIR "/configs/devices", &db, &err);
    copy_msg(msg, msg_n, err.msg);
    pp_devices_free(db);
    return st;
}

static perfpred_status op_model_predict(void *arg, char *msg, size_t msg_n)
{
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = PP_SOURCE_DIR "/tests/fixtures/predictor";
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, msg, msg_n);
    if (!ctx) return st;
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 2;
    perfpred_model *m = perfpred_model_load(PP_SOURCE_DIR "/tests/fixtures/models/alexnet.onnx",
                                            &mp, &st, msg, msg_n);
    if (m) {
        perfpred_prediction pr;
        st = perfpred_predict(ctx, m, "toy-gpu", NULL, &pr, msg, msg_n);
        if (!st) {
            perfpred_mig_advice adv;
            st = perfpred_mig_advise(ctx, m, "toy-gpu", 0, &adv, msg, msg_n);
        }
    }
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    return st;
}

/* The GPU memory replay (predictor/allocator.h) of a loaded graph: both trace kinds, a fresh
 * process, then a sweep of two passes through one allocator with its cache emptied between. */
static perfpred_status op_alloc_replay(void *arg, char *msg, size_t msg_n)
{
    const pp_graph *g = arg;
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    for (int mode = PP_TRACE_EAGER; mode <= PP_TRACE_AUTOCAST && !st; mode++) {
        pp_alloc_trace t;
        if ((st = pp_alloc_trace_build(g, 1, mode, &t, &err))) break;
        pp_alloc_params p = {1, 0.5, 8519680, 0, 1};
        pp_alloc_stats fresh;
        st = pp_alloc_fresh(&t, &p, &fresh, &err);
        pp_alloc_sim *sim = st ? NULL : pp_alloc_sim_new();
        if (!st && !sim) st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        if (!st) st = pp_alloc_sim_run(sim, &t, &p, &err);
        if (sim) pp_alloc_sim_empty_cache(sim);
        p.with_weights = 0;
        if (!st) st = pp_alloc_sim_run(sim, &t, &p, &err);
        pp_alloc_sim_free(sim);
        pp_alloc_trace_free(&t);
    }
    copy_msg(msg, msg_n, err.msg);
    return st;
}

static perfpred_status op_gnn_load(void *arg, char *msg, size_t msg_n)
{
    pp_gnn *g = NULL;
    pp_err err = {0};
    perfpred_status st = pp_gnn_load(PP_SOURCE_DIR "/configs/artifacts/rpi5/gnn-latency.bin",
                                     PP_SOURCE_DIR "/configs/artifacts/rpi5/gnn-latency.json", &g,
                                     &err);
    copy_msg(msg, msg_n, err.msg);
    pp_gnn_free(g);
    return st;
}

static perfpred_status op_layer_models(void *arg, char *msg, size_t msg_n)
{
    pp_layer_models *lm = NULL;
    pp_err err = {0};
    perfpred_status st = pp_layer_models_open(PP_SOURCE_DIR "/configs/artifacts/host-cpu", 0, &lm,
                                              &err);
    if (!st) st = pp_layer_models_ready(lm, &err);
    copy_msg(msg, msg_n, err.msg);
    pp_layer_models_free(lm);
    return st;
}

/* Saving a GNN (weights and manifest, each written to a temporary name and renamed) into a fresh
 * folder: a failed save leaves the folder empty, a complete one exactly the two files. */
typedef struct save_arg {
    char dir[1024];
    int run;
} save_arg;

static perfpred_status op_gnn_save(void *arg, char *msg, size_t msg_n)
{
    save_arg *a = arg;
    snprintf(a->dir, sizeof a->dir, "%s/pp_allocfail_%d_%d", PP_BINARY_DIR, (int)getpid(), a->run++);
    if (mkdir(a->dir, 0755) != 0) return PERFPRED_ERR_IO;
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = 2;
    p.hidden = 8;
    pp_gnn *g = NULL;
    pp_err err = {0};
    perfpred_status st = pp_gnn_new(5, 2, 3, 2, &p, &g, &err);
    if (!st) {
        char wp[1200], mp[1200];
        snprintf(wp, sizeof wp, "%s/gnn-latency.bin", a->dir);
        snprintf(mp, sizeof mp, "%s/gnn-latency.json", a->dir);
        st = pp_gnn_save(g, wp, mp, NULL, &err);
    }
    copy_msg(msg, msg_n, err.msg);
    pp_gnn_free(g);
    return st;
}

static void after_gnn_save(void *arg, perfpred_status st)
{
    save_arg *a = arg;
    DIR *d = opendir(a->dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", a->dir, de->d_name);
        if (st != PERFPRED_OK) fail_msg("a failed save left %s behind", p);
        if (strcmp(de->d_name, "gnn-latency.bin") && strcmp(de->d_name, "gnn-latency.json"))
            fail_msg("a save left %s behind", p);
        unlink(p);
        n++;
    }
    closedir(d);
    rmdir(a->dir);
    if (st == PERFPRED_OK) assert_int_equal(n, 2);
}

/* calibrate fit of a toy device (40 Relu rows, 5 boosting rounds) into a fresh folder: a fit that
 * fails leaves no manifest (the artifact loaders read) and no temporary file behind. */
typedef struct fit_arg {
    char cfg[1024], csv[1200], dir[1200];
    int run;
} fit_arg;

static perfpred_status op_fit(void *arg, char *msg, size_t msg_n)
{
    fit_arg *a = arg;
    snprintf(a->dir, sizeof a->dir, "%s/fit-%d", a->cfg, a->run++);
    const char *files[1] = {a->csv};
    perfpred_fit_params p = pp_test_fit_params("toy-roofline", files, 1, a->cfg, a->dir);
    p.n_rounds = 5;
    perfpred_fit_report r;
    return perfpred_calibrate_fit(&p, &r, msg, msg_n);
}

static void after_fit(void *arg, perfpred_status st)
{
    fit_arg *a = arg;
    DIR *d = opendir(a->dir);
    int manifest = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", a->dir, de->d_name);
        if (strstr(de->d_name, ".tmp.")) fail_msg("a fit left the temporary file %s", p);
        manifest |= strcmp(de->d_name, "manifest.json") == 0;
        if (de->d_name[0] != '.') unlink(p);
    }
    if (d) closedir(d);
    rmdir(a->dir);
    if (st != PERFPRED_OK && manifest) fail_msg("a failed fit wrote %s/manifest.json", a->dir);
    if (st == PERFPRED_OK) assert_true(manifest);
}

/* NB201 networks built through one node memo, as a predict-many worker builds them: the memo is
 * made in the run, so that its own allocations fail in turn too (the memo, its slots, the per-node
 * array, the entry table grown from 64 to 128 and 256 and the key words from 4,096 to 8,192 by the
 * six networks' distinct layers). The memo's allocations after its creation are optional (a failed
 * one leaves a node out, or a graph built without the memo); any other makes the build fail.
 * after_memo checks every graph built against the one built without a memo, then builds the
 * networks again through the same memo, with whatever the run left in it, and checks those. */
#define MEMO_NETS 6
static const char *const memo_refs[MEMO_NETS] = {
    "nb201:|nor_conv_3x3~0|+|nor_conv_1x1~0|nor_conv_3x3~1|+|skip_connect~0|avg_pool_3x3~1|"
    "nor_conv_3x3~2|@cifar10",
    "nb201:|nor_conv_1x1~0|+|avg_pool_3x3~0|nor_conv_3x3~1|+|none~0|nor_conv_3x3~1|"
    "nor_conv_1x1~2|@imagenet16;fold",
    "nb201:|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_1x1~1|+|nor_conv_1x1~0|none~1|"
    "avg_pool_3x3~2|@darcy;prune",
    "nb201:|avg_pool_3x3~0|+|nor_conv_1x1~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_1x1~1|"
    "skip_connect~2|@ninapro",
    "nb201:|nor_conv_3x3~0|+|nor_conv_1x1~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_1x1~1|"
    "nor_conv_3x3~2|@cifar100",
    "nb201:|nor_conv_1x1~0|+|nor_conv_3x3~0|nor_conv_1x1~1|+|nor_conv_1x1~0|nor_conv_3x3~1|"
    "nor_conv_1x1~2|@imagenet16",
};
static const int64_t memo_batch[MEMO_NETS] = {1, 4, 2, 3, 8, 1};

typedef struct memo_arg {
    pp_graph *plain[MEMO_NETS]; /* built without a memo, before the runs */
    pp_graph *got[MEMO_NETS];   /* built through the memo in the run */
    pp_node_memo *memo;
    int64_t clean_hits;         /* the memo's hits after a run in which nothing fails */
    int fewer_hits;             /* runs that succeeded with fewer: a memo allocation had failed */
} memo_arg;

static perfpred_status op_memo_builds(void *arg, char *msg, size_t msg_n)
{
    memo_arg *a = arg;
    a->memo = pp_node_memo_new();
    if (!a->memo) {
        snprintf(msg, msg_n, "out of memory for the node memo");
        return PERFPRED_ERR_NOMEM;
    }
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < MEMO_NETS && !st; i++) {
        pp_shape_opts o = {.batch = memo_batch[i], .memo = a->memo};
        st = pp_net_graph_from_ref(memo_refs[i], &o, &a->got[i], &err);
        if (st) assert_null(a->got[i]);
    }
    copy_msg(msg, msg_n, err.msg);
    return st;
}

static void after_memo(void *arg, perfpred_status st)
{
    memo_arg *a = arg;
    for (int i = 0; i < MEMO_NETS; i++) {
        if (a->got[i]) pp_test_same_graph(a->got[i], a->plain[i]);
        else assert_int_not_equal(st, PERFPRED_OK);
        pp_graph_free(a->got[i]);
        a->got[i] = NULL;
    }
    if (!a->memo) return;
    int64_t hits = pp_node_memo_hits(a->memo);
    if (st == PERFPRED_OK && hits < a->clean_hits) a->fewer_hits++;
    if (st == PERFPRED_OK && !failed) assert_int_equal(hits, a->clean_hits);
    for (int i = 0; i < MEMO_NETS; i++) { /* what the run left in the memo gives right results */
        pp_shape_opts o = {.batch = memo_batch[i], .memo = a->memo};
        pp_graph *g = NULL;
        pp_err err = {0};
        assert_int_equal(pp_net_graph_from_ref(memo_refs[i], &o, &g, &err), PERFPRED_OK);
        pp_test_same_graph(g, a->plain[i]);
        pp_graph_free(g);
    }
    assert_true(pp_node_memo_hits(a->memo) > hits);
    pp_node_memo_free(a->memo);
    a->memo = NULL;
}

/* ---- tests ---- */

static void descriptor_load_should_survive_every_allocation_failure(void **state)
{
    fail_each_allocation("descriptor load", op_descriptors, NULL, NULL);
}

static void model_load_and_predict_should_survive_every_allocation_failure(void **state)
{
    fail_each_allocation("model load + predict + MIG advice", op_model_predict, NULL, NULL);
}

static void alloc_replay_should_survive_every_allocation_failure(void **state)
{
    pp_shape_opts o = {0};
    o.batch = 2;
    pp_graph *g = NULL;
    pp_err err = {0};
    assert_int_equal(pp_graph_load_full(PP_SOURCE_DIR "/examples/resnet18.onnx", &o, &g, &err),
                     PERFPRED_OK);
    fail_each_allocation("GPU memory replay", op_alloc_replay, NULL, g);
    pp_graph_free(g);
}

static void gnn_load_should_survive_every_allocation_failure(void **state)
{
    fail_each_allocation("GNN artifact load", op_gnn_load, NULL, NULL);
}

/* One load first, with nothing failing: it flattens the trees into the cache (PERFPRED_CACHE_DIR,
 * set by ctest), so the failing loads each read the cached file, as every start after the first
 * does. Without it the test's time depended on an earlier test having filled the cache: each of
 * the hundreds of runs then read the trees through XGBoost (minutes, run alone). */
static void layer_model_load_should_survive_every_allocation_failure(void **state)
{
    char msg[512];
    assert_int_equal(op_layer_models(NULL, msg, sizeof msg), PERFPRED_OK);
    fail_each_allocation("layer-model artifact load", op_layer_models, NULL, NULL);
}

static void gnn_save_should_leave_nothing_partial_on_allocation_failure(void **state)
{
    save_arg a = {"", 0};
    fail_each_allocation("GNN artifact save", op_gnn_save, after_gnn_save, &a);
}

static void calibrate_fit_should_write_nothing_partial_on_allocation_failure(void **state)
{
    fit_arg a;
    memset(&a, 0, sizeof a);
    snprintf(a.cfg, sizeof a.cfg, "%s/pp_allocfail_fit_%d", PP_BINARY_DIR, (int)getpid());
    char p[1200];
    snprintf(p, sizeof p, "%s/devices", a.cfg);
    assert_int_equal(pp_mkdir_p(p, NULL), PERFPRED_OK);
    snprintf(p, sizeof p, "%s/devices/toy.yaml", a.cfg);
    pp_test_write_text(p, "name: toy-roofline\ndescription: toy roofline, 1 TFLOP/s, 1 GB/s\n"
                          "vendor: Test\nkind: cpu\nhardware:\n  peak_tflops: {fp32: 1.0}\n"
                          "  memory_bandwidth_gbs: 1.0\n  memory_gb: 1\n  compute_units: 1\n"
                          "runtime: {framework: pytorch-eager, precision: fp32, "
                          "launch_overhead_us: 0}\n");
    static char text[16384];
    int off = snprintf(text, sizeof text, "%s", PP_TEST_LAYER_HEADER);
    pp_test_toy_relu_rows(text, sizeof text, off, 1, 40, 1, 1000, 0.2, 0.1);
    snprintf(a.csv, sizeof a.csv, "%s/rows.csv", a.cfg);
    pp_test_write_text(a.csv, text);
    fail_each_allocation("calibrate fit", op_fit, after_fit, &a);
    unlink(a.csv);
    unlink(p);
    snprintf(p, sizeof p, "%s/devices", a.cfg);
    rmdir(p);
    rmdir(a.cfg);
}

static void memo_builds_should_survive_every_allocation_failure(void **state)
{
    memo_arg a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < MEMO_NETS; i++) {
        pp_shape_opts o = {.batch = memo_batch[i]};
        pp_err err = {0};
        assert_int_equal(pp_net_graph_from_ref(memo_refs[i], &o, &a.plain[i], &err), PERFPRED_OK);
    }
    char msg[1024] = "";
    assert_int_equal(op_memo_builds(&a, msg, sizeof msg), PERFPRED_OK); /* nothing failing */
    a.clean_hits = pp_node_memo_hits(a.memo);
    after_memo(&a, PERFPRED_OK);
    fail_each_allocation("NB201 builds through a node memo", op_memo_builds, after_memo, &a);
    /* some runs succeeded with fewer hits than the clean one: a memo allocation had failed */
    print_message("NB201 builds through a node memo: %d runs lost memo entries\n", a.fewer_hits);
    assert_true(a.fewer_hits > 0);
    for (int i = 0; i < MEMO_NETS; i++) pp_graph_free(a.plain[i]);
}

int main(void)
{
    cJSON_Hooks hooks = {hook_malloc, free};
    cJSON_InitHooks(&hooks);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(descriptor_load_should_survive_every_allocation_failure),
        cmocka_unit_test(model_load_and_predict_should_survive_every_allocation_failure),
        cmocka_unit_test(alloc_replay_should_survive_every_allocation_failure),
        cmocka_unit_test(gnn_load_should_survive_every_allocation_failure),
        cmocka_unit_test(layer_model_load_should_survive_every_allocation_failure),
        cmocka_unit_test(gnn_save_should_leave_nothing_partial_on_allocation_failure),
        cmocka_unit_test(calibrate_fit_should_write_nothing_partial_on_allocation_failure),
        cmocka_unit_test(memo_builds_should_survive_every_allocation_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
