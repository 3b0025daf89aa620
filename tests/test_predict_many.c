/* tests/test_predict_many.c: perfpred_predict_many and `perfpred predict-many`: every (item, batch,
 * device) gives one row; a bad item gives error rows naming it while the others go on; rows
 * from several threads carry the same figures as perfpred_predict on the calling thread; the
 * command names file:line of a bad line, streams CSV or JSON lines, and exits 2 when a line failed. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "graph/builders.h"
#include "perfpred.h"

#define CELL_A "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"
#define CELL_B "|nor_conv_1x1~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"
#define CELL_BAD "|bogus~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|"

typedef struct got {
    int n, n_bad;
    double lat[3][2][2]; /* item, batch index, device index */
    int seen[3][2][2];
    char bad_msg[512];
} got;

static const char *const devs[] = {"rpi4", "epyc-kvm-2vcpu"};

static int collect(const perfpred_many_row *r, void *user)
{
    got *g = user;
    int b = r->batch == 1 ? 0 : 1, d = strcmp(r->device, devs[0]) == 0 ? 0 : 1;
    g->n++;
    g->seen[r->item][b][d]++;
    if (r->status != PERFPRED_OK) {
        g->n_bad++;
        snprintf(g->bad_msg, sizeof g->bad_msg, "%s", r->error);
        return 0;
    }
    g->lat[r->item][b][d] = r->pred->latency_ms.value;
    return 0;
}

static void run_many(const perfpred_ctx *ctx, int threads, got *g)
{
    static const char *const items[] = {CELL_A, CELL_BAD, "nb201:" CELL_B};
    static const int64_t batches[] = {1, 4};
    memset(g, 0, sizeof *g);
    perfpred_many_params p = perfpred_many_default_params();
    p.items = items;
    p.n_items = 3;
    p.devices = devs;
    p.n_devices = 2;
    p.batches = batches;
    p.n_batches = 2;
    p.threads = threads;
    p.on_row = collect;
    p.user = g;
    int n_failed = -1;
    char err[512];
    assert_int_equal(perfpred_predict_many(ctx, &p, &n_failed, err, sizeof err), PERFPRED_OK);
    assert_int_equal(n_failed, 4);
}

static void predict_many_should_give_every_row_and_name_bad_items(void **state)
{
    (void)state;
    char err[512];
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, err, sizeof err);
    assert_non_null(ctx);
    got one, two;
    run_many(ctx, 1, &one);
    run_many(ctx, 2, &two);
    assert_int_equal(one.n, 12);
    assert_int_equal(two.n, 12);
    assert_int_equal(one.n_bad, 4);
    assert_non_null(strstr(one.bad_msg, "bogus"));
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 2; b++)
            for (int d = 0; d < 2; d++) {
                assert_int_equal(one.seen[i][b][d], 1);
                assert_int_equal(two.seen[i][b][d], 1);
                if (i == 1) continue;
                assert_true(one.lat[i][b][d] > 0);
                /* worker threads give the calling thread's figures */
                assert_true(one.lat[i][b][d] == two.lat[i][b][d]);
            }
    /* batch 4 takes longer than batch 1 */
    assert_true(one.lat[0][1][0] > one.lat[0][0][0]);
    /* an unknown device is one error for the call, not a row per item */
    static const char *const bad_dev[] = {"no-such-board"};
    perfpred_many_params p = perfpred_many_default_params();
    static const char *const items[] = {CELL_A};
    p.items = items;
    p.n_items = 1;
    p.devices = bad_dev;
    p.n_devices = 1;
    p.on_row = collect;
    p.user = &one;
    assert_int_equal(perfpred_predict_many(ctx, &p, NULL, err, sizeof err), PERFPRED_ERR_DEVICE);
    assert_non_null(strstr(err, "no-such-board"));
    p.on_row = NULL;
    assert_int_equal(perfpred_predict_many(ctx, &p, NULL, err, sizeof err),
                     PERFPRED_ERR_INVALID_ARG);
    perfpred_ctx_close(ctx);
}

/* ---- NB201 cells copied within a stage (build_nb201.c) predict what cells built one by one do:
 * the reuse of shapes, features, layer-model times and GNN rows that copies allow changes no bit */

#define N_CELLS 40
typedef struct figs {
    double v[N_CELLS][2][8];
    int k[N_CELLS][2][3];
} figs;

static int keep_figs(const perfpred_many_row *r, void *user)
{
    figs *f = user;
    assert_int_equal(r->status, PERFPRED_OK);
    const perfpred_prediction *p = r->pred;
    int d = strcmp(r->device, devs[0]) == 0 ? 0 : 1;
    double *v = f->v[r->item][d];
    v[0] = p->latency_ms.value;
    v[1] = p->energy_mj.value;
    v[2] = p->peak_memory_bytes.value;
    v[3] = p->kernel_bytes;
    v[4] = p->latency_members_lo_ms;
    v[5] = p->latency_members_hi_ms;
    v[6] = p->latency_interval.lo;
    v[7] = p->latency_interval.hi;
    f->k[r->item][d][0] = p->n_kernels;
    f->k[r->item][d][1] = p->n_calibrated_kernels;
    f->k[r->item][d][2] = p->correction_gated;
    return 0;
}

static void copied_cells_should_predict_the_bits_of_built_cells(void **state)
{
    (void)state;
    static char cells[N_CELLS][160];
    const char *items[N_CELLS];
    uint64_t r = 99;
    for (int i = 0; i < N_CELLS; i++) {
        pp_nb201_arch a;
        for (int e = 0; e < PP_NB201_EDGES; e++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            a.op[e] = (pp_nb201_op)((r >> 33) % 5);
        }
        items[i] = pp_nb201_format(&a, cells[i], sizeof cells[i]);
    }
    char err[512];
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, err, sizeof err);
    assert_non_null(ctx);
    static figs built, copied;
    perfpred_many_params p = perfpred_many_default_params();
    p.items = items;
    p.n_items = N_CELLS;
    p.devices = devs;
    p.n_devices = 2;
    p.on_row = keep_figs;
    int n_failed = -1;
    pp_nb201_copy_cells(0);
    p.user = &built;
    assert_int_equal(perfpred_predict_many(ctx, &p, &n_failed, err, sizeof err), PERFPRED_OK);
    assert_int_equal(n_failed, 0);
    pp_nb201_copy_cells(1);
    p.user = &copied;
    assert_int_equal(perfpred_predict_many(ctx, &p, &n_failed, err, sizeof err), PERFPRED_OK);
    assert_int_equal(n_failed, 0);
    assert_memory_equal(copied.v, built.v, sizeof built.v);
    assert_memory_equal(copied.k, built.k, sizeof built.k);
    assert_true(built.v[0][0][0] > 0 && built.v[0][1][0] > 0);
    assert_true(built.k[0][1][1] > 0); /* epyc's layer models timed kernels */
    perfpred_ctx_close(ctx);
}

static char out_buf[1 << 16];

static int run_cli(const char *args)
{
    return pp_test_run_cli(args, out_buf, sizeof out_buf, "test_predict_many");
}

static void predict_many_command_should_name_bad_lines_and_go_on(void **state)
{
    (void)state;
    static const char text[] = CELL_A "\n# a comment\n\n" CELL_BAD "\n" CELL_B "\n";
    char cells[4096];
    snprintf(cells, sizeof cells, "%s", pp_test_tmpfile(text, sizeof text - 1, ".txt"));
    char args[4600];
    snprintf(args, sizeof args, "predict-many --device rpi4,rpi5 --nb201 '%s' --csv", cells);
    assert_int_equal(run_cli(args), 2);
    /* the bad cell is line 4; the others give one row per device */
    char want[4200];
    snprintf(want, sizeof want, "%s:4: ", cells);
    assert_non_null(strstr(out_buf, want));
    int ok_rows = 0;
    for (const char *s = out_buf; (s = strstr(s, ",ok,")); s++) ok_rows++;
    assert_int_equal(ok_rows, 4);
    assert_non_null(strstr(out_buf, "\n5," CELL_B ",rpi5,1,"));

    snprintf(args, sizeof args, "predict-many --device rpi4 --nb201 '%s' --json --threads 2",
             cells);
    assert_int_equal(run_cli(args), 2);
    int n_json = 0;
    for (char *line = strtok(out_buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '{') continue; /* stderr, merged by run_cli */
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        const cJSON *st = cJSON_GetObjectItem(j, "status");
        const cJSON *ln = cJSON_GetObjectItem(j, "line");
        assert_true(cJSON_IsString(st) && cJSON_IsNumber(ln));
        assert_true(strcmp(st->valuestring, "ok") == 0 ? ln->valueint != 4 : ln->valueint == 4);
        n_json++;
        cJSON_Delete(j);
    }
    assert_int_equal(n_json, 3);
    /* usage errors */
    assert_int_equal(run_cli("predict-many --device rpi4"), 1);
    snprintf(args, sizeof args, "predict-many --device rpi4 --nb201 '%s' --threads 0", cells);
    assert_int_equal(run_cli(args), 1);
    assert_int_equal(run_cli("predict-many --device rpi4 --nb201 /nonexistent/cells.txt"), 2);
}

/* --runtime / --precision reach every prediction: an A100 row under autocast gives what
 * `perfpred --device a100 --precision amp` gives, a CPU asked for a GPU stack an error row, and a
 * precision no stack takes is a usage error before any row. */
static void predict_many_command_should_pass_the_stack_to_each_prediction(void **state)
{
    (void)state;
    static const char text[] = "examples/resnet18.onnx\n";
    char list[4096], args[4600];
    snprintf(list, sizeof list, "%s", pp_test_tmpfile(text, sizeof text - 1, ".txt"));
    snprintf(args, sizeof args, "--device a100 examples/resnet18.onnx --precision amp --json");
    assert_int_equal(run_cli(args), 0);
    cJSON *one = cJSON_Parse(out_buf);
    assert_non_null(one);
    const cJSON *lat = cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(one, "prediction"), "latency"), "value");
    assert_true(cJSON_IsNumber(lat));
    double want = lat->valuedouble;
    cJSON_Delete(one);
    snprintf(args, sizeof args,
             "predict-many --device a100,epyc-kvm-2vcpu --onnx-list '%s' --precision amp --json",
             list);
    assert_int_equal(run_cli(args), 2);
    int ok = 0, failed = 0;
    for (char *line = strtok(out_buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '{') continue;
        cJSON *j = cJSON_Parse(line);
        assert_non_null(j);
        const char *dev = cJSON_GetObjectItem(j, "device")->valuestring;
        const char *st = cJSON_GetObjectItem(j, "status")->valuestring;
        if (strcmp(dev, "a100") == 0) {
            assert_string_equal(st, "ok");
            const cJSON *v = cJSON_GetObjectItem(j, "latency_ms");
            assert_true(cJSON_IsNumber(v));
            assert_true(fabs(v->valuedouble / want - 1) < 1e-6);
            ok++;
        } else {
            assert_string_equal(st, "error");
            failed++;
        }
        cJSON_Delete(j);
    }
    assert_int_equal(ok, 1);
    assert_int_equal(failed, 1);
    snprintf(args, sizeof args, "predict-many --device a100 --onnx-list '%s' --precision fp64",
             list);
    assert_int_equal(run_cli(args), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(predict_many_should_give_every_row_and_name_bad_items),
        cmocka_unit_test(copied_cells_should_predict_the_bits_of_built_cells),
        cmocka_unit_test(predict_many_command_should_name_bad_lines_and_go_on),
        cmocka_unit_test(predict_many_command_should_pass_the_stack_to_each_prediction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
