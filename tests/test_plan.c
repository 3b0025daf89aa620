/* tests/test_plan.c: benchmark plans through the public API: determinism, the time budget, op-kind
 * coverage, rows that rebuild as their kind and that the PyTorch runner accepts, excluded families,
 * composite ops, window and group grids, anchors, model lists and bad parameters. */
#include "tests/calib_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"
#include "layer_models/layer_models.h"

/* -------------------------------------------------------------------- plan ---- */

static void plan_should_give_the_same_bytes_for_a_seed(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char a[1300], b[1300], c[1300], err[1024];
    path_in(a, sizeof a, "plan_a.csv");
    path_in(b, sizeof b, "plan_b.csv");
    path_in(c, sizeof c, "plan_c.csv");
    perfpred_plan_report r1, r2, r3;
    perfpred_plan_params p = plan_params(a, 3, 7);
    assert_int_equal(perfpred_calibrate_plan(&p, &r1, err, sizeof err), PERFPRED_OK);
    p.out_csv = b;
    assert_int_equal(perfpred_calibrate_plan(&p, &r2, err, sizeof err), PERFPRED_OK);
    p.out_csv = c;
    p.seed = 8;
    assert_int_equal(perfpred_calibrate_plan(&p, &r3, err, sizeof err), PERFPRED_OK);
    char *ta = pp_test_read_text(a), *tb = pp_test_read_text(b), *tc = pp_test_read_text(c);
    assert_non_null(ta);
    assert_string_equal(ta, tb);
    assert_int_not_equal(strcmp(ta, tc), 0);
    plan_rows *P = read_plan(a);
    assert_int_equal(P->n, r1.n_rows);
    assert_true(P->n > 0);
    free_plan(P);
    free(ta);
    free(tb);
    free(tc);
}

/* Op kinds of the zoo's runtime nodes, as the public model API reports them. */
static int zoo_kinds(const char **kinds, int cap)
{
    int n = 0;
    for (int m = 0; m < 2; m++) {
        perfpred_model_params mp = perfpred_model_default_params();
        mp.batch = 1;
        char err[1024];
        perfpred_status st;
        perfpred_model *model = perfpred_model_load(plan_models[m], &mp, &st, err, sizeof err);
        assert_non_null(model);
        for (int i = 0; i < perfpred_model_n_layers(model); i++) {
            perfpred_layer_info L = perfpred_model_layer(model, i);
            if (L.folded || strcmp(L.kind, "reshape") == 0 || strcmp(L.kind, "shape") == 0)
                continue;
            int seen = 0;
            for (int k = 0; k < n && !seen; k++) seen = strcmp(kinds[k], L.kind) == 0;
            if (!seen && n < cap) kinds[n++] = L.kind; /* static strings of graph/ */
        }
        perfpred_model_free(model);
    }
    return n;
}

static void plan_should_fit_the_budget_and_cover_every_zoo_kind(void **state)
{
    (void)state;
    if (!has_models()) skip();
    const char *kinds[32];
    int nk = zoo_kinds(kinds, 32);
    assert_true(nk >= 5); /* conv, dwconv, pool/globalpool, elemwise, linear at least */
    double budgets[2] = {0.5, 3.0};
    int rows_at[2];
    for (int bi = 0; bi < 2; bi++) {
        char out[1300], err[1024];
        path_in(out, sizeof out, "plan_budget.csv");
        perfpred_plan_params p = plan_params(out, budgets[bi], 1);
        perfpred_plan_report r;
        assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
        assert_true(r.est_minutes <= budgets[bi] + 1e-9);
        /* every visit warms up for at least warmup_ms: a bound the estimate cannot beat */
        double floor_s = p.protocol.rounds * p.protocol.warmup_ms * 1e-3;
        assert_true(r.n_rows * floor_s <= budgets[bi] * 60.0 + 1e-9);
        plan_rows *P = read_plan(out);
        assert_int_equal(P->n, r.n_rows);
        for (int k = 0; k < nk; k++) {
            int found = 0;
            for (int i = 0; i < P->n && !found; i++)
                found = strcmp(pp_op_kind_name(P->rows[i].kind), kinds[k]) == 0;
            if (!found) print_error("budget %g: no plan row of kind %s\n", budgets[bi], kinds[k]);
            assert_true(found);
        }
        rows_at[bi] = P->n;
        free_plan(P);
    }
    assert_true(rows_at[1] > rows_at[0]);
}

/* Op types the runner builds: the SUPPORTED_OPS string of runners/layers.py. */
static int runner_supports(const char *src, const char *op)
{
    const char *s = strstr(src, "SUPPORTED_OPS = (");
    if (!s) return 0;
    const char *e = strstr(s, ").split()");
    char word[80];
    snprintf(word, sizeof word, "%s", op);
    for (const char *p = s; p && p < e; p = strstr(p + 1, word)) {
        p = strstr(p, word);
        if (!p || p >= e) break;
        char before = p[-1], after = p[strlen(word)];
        if ((before == ' ' || before == '"') && (after == ' ' || after == '"')) return 1;
    }
    return 0;
}

static int python_has_torch(void)
{
    return system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

/* A Concat-only plan of one zoo model at batch 1 into out, over `minutes`; no skip message may
 * hold `not_skipped`. */
static plan_rows *concat_plan(const char *model, const char *out, double minutes,
                              const char *not_skipped)
{
    char err[1024];
    const char *zoo[] = {model};
    perfpred_plan_params p = plan_params(out, minutes, 1);
    p.models = zoo;
    p.n_models = 1;
    const int64_t b1[] = {1};
    p.batches = b1;
    p.n_batches = 1;
    const char *ops[] = {"Concat"};
    p.ops = ops;
    p.n_ops = 1;
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    for (int i = 0; i < r.n_msgs; i++) assert_null(strstr(r.msgs[i], not_skipped));
    return read_plan(out);
}

/* The PyTorch layer runner over plan, one quick round, into meas; its CSV read back (the caller
 * frees it). */
static pp_layer_table *run_layers(const char *plan, const char *meas)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && /usr/bin/python3 runners/layer_runner.py '%s' -o '%s' "
             "--device-name host-cpu --rounds 1 --burst 1 --warmup-ms 0 --min-sample-us 0 "
             "--quiet >/dev/null 2>&1", PP_SOURCE_DIR, plan, meas);
    assert_int_equal(system(cmd), 0);
    pp_layer_table *t = NULL;
    pp_err e = {0};
    assert_int_equal(pp_measure_layer_csv_read(meas, &t, &e), PERFPRED_OK);
    assert_int_equal(t->bad.n, 0);
    return t;
}

static void plan_rows_should_rebuild_as_their_kind_and_run_in_the_runner(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char out[1300], err[1024];
    path_in(out, sizeof out, "plan_rebuild.csv");
    perfpred_plan_params p = plan_params(out, 2, 3);
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    plan_rows *P = read_plan(out);
    char *layers_py = pp_test_read_text(PP_SOURCE_DIR "/runners/layers.py");
    assert_non_null(layers_py);
    for (int i = 0; i < P->n; i++) {
        pp_graph *g = NULL;
        int node = -1;
        pp_err e = {0};
        P->rows[i].source = "test";
        if (pp_layer_row_graph(&P->rows[i], &g, &node, &e) != PERFPRED_OK)
            print_error("%s:%d: %s\n", out, P->rows[i].line, e.msg);
        assert_non_null(g);
        assert_int_equal(g->nodes[node].feat.kind, P->rows[i].kind);
        assert_string_equal(g->nodes[node].op_type, P->rows[i].op_type);
        pp_graph_free(g);
        if (!runner_supports(layers_py, P->rows[i].op_type))
            print_error("op %s is not in the runner's SUPPORTED_OPS\n", P->rows[i].op_type);
        assert_true(runner_supports(layers_py, P->rows[i].op_type));
    }
    free(layers_py);
    /* the first 3 rows through the PyTorch runner: it reads the plan, and its CSV reads back */
    if (python_has_torch()) {
        char *text = pp_test_read_text(out), three[1300], meas[1300];
        char *end = text;
        for (int k = 0; k < 4 && end; k++) end = strchr(end + (k ? 1 : 0), '\n');
        assert_non_null(end);
        end[1] = '\0';
        path_in(three, sizeof three, "plan3.csv");
        path_in(meas, sizeof meas, "measured3.csv");
        pp_test_write_text(three, text);
        free(text);
        pp_layer_table *t = run_layers(three, meas);
        assert_int_equal(t->n, 3);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(t->rows[i].kind, P->rows[i].kind);
            assert_string_equal(t->rows[i].op_type, P->rows[i].op_type);
            assert_true(t->rows[i].latency_ms > 0);
        }
        pp_measure_layer_table_free(t);
    }
    free_plan(P);
}

static void plan_should_leave_out_excluded_families(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char out[1300], err[1024];
    path_in(out, sizeof out, "plan_excl.csv");
    perfpred_plan_params p = plan_params(out, 2, 1);
    const char *excl[] = {"mobilenet"};
    p.exclude_families = excl;
    p.n_exclude_families = 1;
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_excluded_models, 1);
    plan_rows *P = read_plan(out);
    int alexnet = 0;
    for (int i = 0; i < P->n; i++) {
        assert_null(strstr(P->rows[i].source, "mobilenet"));
        alexnet += strstr(P->rows[i].source, "alexnet.onnx") != NULL;
    }
    assert_int_equal(alexnet, P->n);
    /* hardswish and depthwise convolutions live only in the excluded family */
    for (int i = 0; i < P->n; i++) {
        assert_int_not_equal(P->rows[i].kind, PP_OPK_DWCONV);
        assert_int_not_equal(strcmp(P->rows[i].op_type, "HardSwish"), 0);
    }
    free_plan(P);
}

/* A composite op becomes one row of the operator PyTorch runs for it: convnext_tiny's 18 GELUs
 * (exported as Div, Erf, Add, Mul, Mul) are Gelu rows on host-cpu, which runs them as one op, and
 * no Erf row is left; --ops keeps only the operators named. */
static void plan_should_time_a_composite_op_as_its_one_operator(void **state)
{
    (void)state;
    if (access(MODELS "/convnext_tiny.onnx", R_OK) != 0) skip();
    char out[1300], err[1024];
    path_in(out, sizeof out, "plan_gelu.csv");
    const char *zoo[] = {MODELS "/convnext_tiny.onnx"};
    perfpred_plan_params p = plan_params(out, 2, 1);
    p.models = zoo;
    p.n_models = 1;
    const int64_t b1[] = {1};
    p.batches = b1;
    p.n_batches = 1;
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    plan_rows *P = read_plan(out);
    int gelu = 0;
    for (int i = 0; i < P->n; i++) {
        assert_int_not_equal(strcmp(P->rows[i].op_type, "Erf"), 0);
        gelu += strcmp(P->rows[i].op_type, "Gelu") == 0;
    }
    assert_true(gelu > 0);
    free_plan(P);

    const char *ops[] = {"Gelu"};
    p.ops = ops;
    p.n_ops = 1;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    P = read_plan(out);
    assert_true(P->n > 0);
    int stage1 = 0;
    for (int i = 0; i < P->n; i++) {
        const pp_layer_row *row = &P->rows[i];
        assert_string_equal(row->op_type, "Gelu");
        assert_int_equal(row->kind, PP_OPK_ELEMWISE);
        assert_int_equal(row->n_inputs, 1);
        /* the zoo's own rows: stage 1's MLP, channels last (1 x 56 x 56 x 4 * 96) */
        const pp_layer_input *x = &row->inputs[0];
        stage1 += strstr(row->source, "plan:zoo:") && x->rank == 4 && x->dims[0] == 1 &&
                  x->dims[1] == 56 && x->dims[2] == 56 && x->dims[3] == 384;
    }
    assert_int_equal(stage1, 1);
    free_plan(P);
}

/* vit_b_32 joins its class token (a constant: the weight expanded to the batch) before the 49
 * patch tokens: a Concat whose first input is a weight is planned as it is, in that order, and the
 * runner times it. */
static void plan_should_keep_a_concat_whose_first_input_is_a_constant(void **state)
{
    (void)state;
    if (access(MODELS "/vit_b_32.onnx", R_OK) != 0) skip();
    char out[1300];
    path_in(out, sizeof out, "plan_cls.csv");
    plan_rows *P = concat_plan(MODELS "/vit_b_32.onnx", out, 1, "first input is a constant");
    int cls = 0;
    for (int i = 0; i < P->n; i++) {
        const pp_layer_row *row = &P->rows[i];
        assert_string_equal(row->op_type, "Concat");
        if (!strstr(row->source, "plan:zoo:")) continue;
        /* w:1x1x768;x:1x49x768, axis 1 */
        assert_int_equal(row->n_inputs, 2);
        assert_int_equal(row->inputs[0].role, 'w');
        assert_int_equal(row->inputs[0].rank, 3);
        assert_true(row->inputs[0].dims[0] == 1 && row->inputs[0].dims[1] == 1 &&
                    row->inputs[0].dims[2] == 768);
        assert_int_equal(row->inputs[1].role, 'x');
        assert_true(row->inputs[1].dims[0] == 1 && row->inputs[1].dims[1] == 49 &&
                    row->inputs[1].dims[2] == 768);
        assert_int_equal(row->n_attrs, 1);
        assert_string_equal(row->attrs[0].name, "axis");
        assert_int_equal(row->attrs[0].i, 1);
        cls++;
    }
    assert_int_equal(cls, 1);
    free_plan(P);
    /* the runner builds and times the row, and its CSV reads back */
    if (python_has_torch()) {
        char meas[1300];
        path_in(meas, sizeof meas, "measured_cls.csv");
        pp_layer_table *t = run_layers(out, meas);
        int timed = 0;
        for (int i = 0; i < t->n; i++)
            timed += t->rows[i].inputs[0].role == 'w' && t->rows[i].latency_ms > 0;
        assert_true(timed >= 1);
        pp_measure_layer_table_free(t);
    }
}

/* densenet121's third dense block ends in a Concat of its 256 input channels and 24 layers of 32:
 * 25 inputs, more than a row holds in itself. It is planned, rebuilds as that node, and the runner
 * times it; the measured CSV reads back with every input. */
static void plan_should_keep_a_densenet_concat_of_25_inputs(void **state)
{
    (void)state;
    if (access(MODELS "/densenet121.onnx", R_OK) != 0) skip();
    char out[1300];
    path_in(out, sizeof out, "plan_dense.csv");
    plan_rows *P = concat_plan(MODELS "/densenet121.onnx", out, 5, "a layer row holds");
    int found = 0, wide = 0;
    for (int i = 0; i < P->n; i++) {
        const pp_layer_row *row = &P->rows[i];
        assert_string_equal(row->op_type, "Concat");
        if (!strstr(row->source, "plan:zoo:")) continue;
        wide += row->n_inputs > 6;
        if (row->n_inputs != 25 || pp_layer_row_input(row, 0)->dims[1] != 256) continue;
        for (int k = 0; k < 25; k++) {
            const pp_layer_input *in = pp_layer_row_input(row, k);
            assert_int_equal(in->role, 'x');
            assert_int_equal(in->rank, 4);
            assert_true(in->dims[0] == 1 && in->dims[1] == (k ? 32 : 256) && in->dims[2] == 14 &&
                        in->dims[3] == 14);
        }
        pp_graph *g = NULL;
        int node = -1;
        pp_err e = {0};
        assert_int_equal(pp_layer_row_graph(row, &g, &node, &e), PERFPRED_OK);
        const pp_tensor *y = &g->tensors[g->nodes[node].outputs[0]];
        assert_true(y->rank == 4 && y->dims[1] == 1024 && y->dims[2] == 14); /* 256 + 24 x 32 */
        assert_int_equal(g->nodes[node].n_inputs, 25);
        pp_graph_free(g);
        found++;
    }
    assert_int_equal(found, 1);
    assert_true(wide > 1); /* the other blocks' and the growing concats inside each block */
    free_plan(P);
    /* that row alone through the runner: measured, and read back with its 25 inputs */
    if (python_has_torch()) {
        char *text = pp_test_read_text(out), one[1300], meas[1300];
        assert_non_null(text);
        pp_strbuf b = {0}, want = {0};
        pp_strbuf_put(&want, ",x:1x256x14x14");
        for (int k = 1; k < 25; k++) pp_strbuf_put(&want, ";x:1x32x14x14");
        pp_strbuf_put(&want, ",");
        char *save = NULL;
        int kept = 0;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            if (!b.len || (strstr(line, "plan:zoo:") && strstr(line, want.data))) {
                kept += b.len > 0;
                pp_strbuf_put(&b, line);
                pp_strbuf_put(&b, "\n");
            }
        free(want.data);
        free(text);
        assert_int_equal(kept, 1);
        path_in(one, sizeof one, "plan_dense1.csv");
        path_in(meas, sizeof meas, "measured_dense1.csv");
        pp_test_write_text(one, b.data);
        free(b.data);
        pp_layer_table *t = run_layers(one, meas);
        assert_int_equal(t->n, 1);
        assert_int_equal(t->rows[0].n_inputs, 25);
        assert_int_equal(pp_layer_row_input(&t->rows[0], 24)->dims[1], 32);
        assert_true(t->rows[0].latency_ms > 0);
        pp_measure_layer_table_free(t);
    }
}

/* The ints of attribute name in a row (n = 0 when absent). */
static int row_ints(const pp_layer_row *r, const char *name, const int64_t **v)
{
    for (int i = 0; i < r->n_attrs; i++)
        if (strcmp(r->attrs[i].name, name) == 0 && r->attrs[i].type == PP_ATTR_INTS) {
            *v = r->attrs[i].ints;
            return r->attrs[i].n;
        }
    return 0;
}

/* Per op kind, the kernel_shape[0], strides[0] and group values (capped at 31) of a plan's
 * rows, as bit sets. */
static const char *const value_attrs[3] = {"kernel_shape", "strides", "group"};
static void attr_values(const plan_rows *P, uint32_t out[PP_OPK__COUNT][3])
{
    memset(out, 0, sizeof(uint32_t) * PP_OPK__COUNT * 3);
    for (int i = 0; i < P->n; i++)
        for (int a = 0; a < 3; a++)
            for (int j = 0; j < P->rows[i].n_attrs; j++) {
                const pp_layer_attr *at = &P->rows[i].attrs[j];
                if (strcmp(at->name, value_attrs[a]) != 0) continue;
                int64_t v = at->type == PP_ATTR_INTS ? (at->n ? at->ints[0] : -1) : at->i;
                if (v >= 0) out[P->rows[i].kind][a] |= 1u << (v > 31 ? 31 : v);
            }
}

/* The (kernel, stride, grouped) combinations of a plan's convolution rows, as a bit set: bit
 * 2 (4 (kernel_h - 1) + stride_h - 1) + grouped, for kernels of 1..8 and strides of 1..4. */
static uint64_t conv_structures(const plan_rows *P, int counts[64])
{
    uint64_t set = 0;
    if (counts) memset(counts, 0, 64 * sizeof *counts);
    for (int i = 0; i < P->n; i++) {
        const pp_layer_row *row = &P->rows[i];
        if (row->kind != PP_OPK_CONV) continue;
        const int64_t *ks = NULL, *ss = NULL;
        int64_t g = 1;
        int nk = row_ints(row, "kernel_shape", &ks), ns = row_ints(row, "strides", &ss);
        for (int j = 0; j < row->n_attrs; j++)
            if (strcmp(row->attrs[j].name, "group") == 0) g = row->attrs[j].i;
        if (nk < 1 || ns < 1 || ks[0] < 1 || ks[0] > 8 || ss[0] < 1 || ss[0] > 4) continue;
        int bit = 2 * (int)(4 * (ks[0] - 1) + ss[0] - 1) + (g > 1);
        set |= 1ull << bit;
        if (counts) counts[bit]++;
    }
    return set;
}

/* alexnet max-pools with 3x3 windows at stride 2 only and has no grouped convolution; the plan adds
 * the other windows of its grid around the pools and the group grid around the convolutions, each
 * row is what its source names, and a small plan keeps every attribute value the large one has. */
static void plan_should_vary_windows_and_groups(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char out[1300], err[1024];
    path_in(out, sizeof out, "plan_window.csv");
    perfpred_plan_params p = plan_params(out, 600, 1);
    p.models = plan_models; /* alexnet */
    p.n_models = 1;
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    plan_rows *P = read_plan(out);
    int zoo_pools = 0, stride1 = 0, n_group = 0, seen[6][3] = {{0}};
    for (int i = 0; i < P->n; i++) {
        const pp_layer_row *row = &P->rows[i];
        const char *gs = strstr(row->source, "perturb:group=");
        if (gs) { /* the group grid: g groups of cin / g input channels each */
            int g = atoi(gs + strlen("perturb:group="));
            int64_t gv = -1;
            for (int j = 0; j < row->n_attrs; j++)
                if (strcmp(row->attrs[j].name, "group") == 0) gv = row->attrs[j].i;
            assert_int_equal(row->kind, PP_OPK_CONV);
            assert_int_equal(gv, g);
            assert_int_equal(row->inputs[1].dims[1] * g, row->inputs[0].dims[1]);
            n_group++;
            continue;
        }
        if (row->kind != PP_OPK_POOL) continue;
        const int64_t *ks = NULL, *ss = NULL, *ps = NULL;
        int nk = row_ints(row, "kernel_shape", &ks), ns = row_ints(row, "strides", &ss);
        int np = row_ints(row, "pads", &ps);
        const char *w = strstr(row->source, "window=");
        if (!w) { /* alexnet's own: max pooling 3/2, and its 6x6 adaptive pooling as 1/1 */
            zoo_pools += strstr(row->source, "plan:zoo:") != NULL && nk == 2 && ks[0] == 3 &&
                         ns == 2 && ss[0] == 2;
            continue;
        }
        int K, S, Pd;
        assert_int_equal(sscanf(w, "window=k%ds%dp%d", &K, &S, &Pd), 3);
        assert_true(nk == 2 && ns == 2 && np == 4);
        assert_true(ks[0] == K && ks[1] == K && ss[0] == S && ss[1] == S);
        for (int d = 0; d < 4; d++) assert_true(ps[d] == Pd);
        assert_int_equal(Pd, (K - 1) / 2);
        /* the rebuilt node pools to floor((H + 2 P - K) / S) + 1 */
        pp_graph *g = NULL;
        int node = -1;
        pp_err e = {0};
        P->rows[i].source = "test";
        assert_int_equal(pp_layer_row_graph(&P->rows[i], &g, &node, &e), PERFPRED_OK);
        const pp_tensor *y = &g->tensors[g->nodes[node].outputs[0]];
        int64_t H = row->inputs[0].dims[2], Wd = row->inputs[0].dims[3];
        assert_int_equal(y->dims[2], (H + 2 * Pd - K) / S + 1);
        assert_int_equal(y->dims[3], (Wd + 2 * Pd - K) / S + 1);
        assert_int_equal(y->dims[1], row->inputs[0].dims[1]);
        pp_graph_free(g);
        stride1 += S == 1;
        seen[K][S]++;
    }
    assert_true(zoo_pools > 0);
    assert_true(stride1 > 0);
    assert_true(n_group > 0);
    for (int K = 2; K <= 5; K += K == 3 ? 2 : 1)
        for (int S = 1; S <= 2; S++) {
            if (!seen[K][S]) print_error("no pooling row with window k%d s%d\n", K, S);
            assert_true(seen[K][S] > 0);
        }
    /* a small plan still holds every kernel, stride and group value of the large one's rows,
     * per op kind: the values the layer models are gated on */
    p.budget_min = 1;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    plan_rows *Q = read_plan(out);
    uint32_t big[PP_OPK__COUNT][3], small[PP_OPK__COUNT][3];
    attr_values(P, big);
    attr_values(Q, small);
    int grouped = 0;
    for (int k = 0; k < PP_OPK__COUNT; k++)
        for (int a = 0; a < 3; a++) {
            if (big[k][a] != small[k][a])
                print_error("%s %s: values %#x in the large plan, %#x in the 1-minute one\n",
                            pp_op_kind_name((pp_op_kind)k), value_attrs[a], big[k][a],
                            small[k][a]);
            assert_int_equal(big[k][a], small[k][a]);
        }
    grouped = (small[PP_OPK_CONV][2] & ~3u) != 0;
    assert_true(grouped); /* from the group grid: alexnet has no grouped convolution */
    /* and every combination of kernel, stride and grouped-or-not (the values alone let a plan
     * time its groups only as 1x1 convolutions), grouped kxk ones at a few sizes */
    int nbig[64], nsmall[64];
    uint64_t sbig = conv_structures(P, nbig), ssmall = conv_structures(Q, nsmall);
    if (sbig != ssmall)
        print_error("conv (kernel, stride, grouped) combinations: %#llx in the large plan, %#llx "
                    "in the small one\n", (unsigned long long)sbig, (unsigned long long)ssmall);
    assert_true(sbig == ssmall);
    int grouped_kxk = 0;
    for (int b = 0; b < 64; b++) grouped_kxk += b % 2 && b / 8 > 0 ? nsmall[b] : 0;
    assert_true(grouped_kxk >= 4); /* grouped 3x3 and 5x5 ones, from the group grid */
    free_plan(Q);
    free_plan(P);
}

/* densenet121 has 1x1 and 3x3 convolutions, none grouped. The group grid makes grouped ones of
 * both, and a value-by-value cover of a 1-minute plan could take its every group count from 1x1
 * rows (it did, with seed 1): the combination cover keeps grouped 3x3 rows, at several sizes. */
static void plan_should_cover_kernel_stride_and_group_together(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char out[1300], err[1024];
    path_in(out, sizeof out, "plan_joint.csv");
    perfpred_plan_params p = plan_params(out, 1, 1);
    const char *models[] = {MODELS "/densenet121.onnx"};
    p.models = models;
    p.n_models = 1;
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    plan_rows *P = read_plan(out);
    int n[64];
    conv_structures(P, n);
    const int k1 = 2 * 0, k3 = 2 * (4 * 2); /* kernel 1 and 3, stride 1 */
    print_message("densenet121, 1-minute plan: dense 1x1 %d, grouped 1x1 %d, dense 3x3 %d, "
                  "grouped 3x3 %d rows\n", n[k1], n[k1 + 1], n[k3], n[k3 + 1]);
    assert_true(n[k1] > 0 && n[k1 + 1] > 0 && n[k3] > 0);
    assert_true(n[k3 + 1] >= 4);
    free_plan(P);
}

/* --anchors: n configurations of a measured CSV, of this device, at evenly spaced ranks of their
 * latency, written after the picked rows with their file and line; none usable is an error. */
static void plan_should_add_anchors_spread_over_latency(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char out[1300], meas[1300], err[1024];
    path_in(out, sizeof out, "plan_anchors.csv");
    path_in(meas, sizeof meas, "anchor_rows.csv");
    static char text[8192];
    int off = snprintf(text, sizeof text, "%s", LAYER_HEADER);
    /* 30 Relu sizes, written slowest first; the i-th fastest takes 0.01 (i + 1) ms */
    for (int i = 29; i >= 0; i--)
        off += snprintf(text + off, sizeof text - (size_t)off,
                        "host-cpu,pytorch-eager,,fp32,elemwise,Relu,1,x:%d,,%g,,10,,,t,2026-01-01\n",
                        1000 * (i + 1), 0.01 * (i + 1));
    for (int i = 0; i < 5; i++) /* another machine's rows are never anchors */
        off += snprintf(text + off, sizeof text - (size_t)off,
                        "toy-roofline,pytorch-eager,,fp32,elemwise,Relu,1,x:%d,,0.5,,10,,,t,"
                        "2026-01-01\n", 777 + i);
    pp_test_write_text(meas, text);
    perfpred_plan_params p = plan_params(out, 2, 1);
    const char *files[] = {meas};
    p.anchor_csvs = files;
    p.n_anchor_csvs = 1;
    p.n_anchors = 11;
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_anchor_rows, 11);
    assert_true(r.anchor_minutes > 0);
    assert_true(r.est_minutes <= 2.0 * 1.0001);
    plan_rows *P = read_plan(out);
    assert_int_equal(P->n, r.n_rows);
    char prefix[1400];
    snprintf(prefix, sizeof prefix, "anchor:%s:", meas);
    int seen[30] = {0}, n_anchor = 0;
    for (int i = 0; i < P->n; i++) {
        if (strncmp(P->rows[i].source, prefix, strlen(prefix)) != 0) continue;
        n_anchor++;
        int64_t size = P->rows[i].inputs[0].dims[0];
        assert_true(size % 1000 == 0 && size >= 1000 && size <= 30000);
        seen[size / 1000 - 1] = 1;
    }
    assert_int_equal(n_anchor, 11);
    /* ranks (i + 0.5) 30 / 11 of the 30, fastest first (not symmetric: written slowest first, an
     * unsorted pick would differ) */
    for (int i = 0; i < 11; i++) assert_true(seen[(int)((i + 0.5) * 30 / 11)]);
    free_plan(P);
    /* half from each roofline class: 30 memory-bound Relu rows and 12 compute-bound products */
    off = (int)strlen(text);
    for (int i = 1; i <= 12; i++)
        off += snprintf(text + off, sizeof text - (size_t)off,
                        "host-cpu,pytorch-eager,,fp32,bmm,MatMul,1,x:1x256x%d;x:1x%dx256,,%g,,10,,"
                        ",t,2026-01-01\n", 64 * i, 64 * i, 0.5 * i);
    pp_test_write_text(meas, text);
    p.n_anchors = 10;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_anchor_rows, 10);
    P = read_plan(out);
    int n_mm = 0, n_relu = 0;
    for (int i = 0; i < P->n; i++) {
        if (strncmp(P->rows[i].source, prefix, strlen(prefix)) != 0) continue;
        n_mm += strcmp(P->rows[i].op_type, "MatMul") == 0;
        n_relu += strcmp(P->rows[i].op_type, "Relu") == 0;
    }
    assert_int_equal(n_mm, 5);
    assert_int_equal(n_relu, 5);
    free_plan(P);
    /* limited to convolutions, the file holds none */
    const char *ops[] = {"Conv"};
    p.ops = ops;
    p.n_ops = 1;
    err[0] = 0;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err, meas));
    assert_non_null(strstr(err, "at least 10"));
}

static void plan_should_read_a_model_list(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char list[1300], out[1300], err[1024];
    path_in(list, sizeof list, "zoo.csv");
    /* a reference.csv-like list: extra columns are ignored, files are relative to the list */
    pp_test_write_text(list, "file,model,family,input_name,input_shape,opset\n"
                     "models/alexnet.onnx,alexnet,alexnet,input,1x3x224x224,17\n");
    path_in(out, sizeof out, "plan_list.csv");
    perfpred_plan_params p = plan_params(out, 1, 1);
    const char *models[] = {list};
    p.models = models;
    p.n_models = 1;
    const int64_t batches[] = {2, 4};
    p.batches = batches;
    p.n_batches = 2;
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_models, 2);
    plan_rows *P = read_plan(out);
    int b2 = 0, b4 = 0;
    for (int i = 0; i < P->n; i++) {
        b2 += strstr(P->rows[i].source, "zoo:alexnet.onnx@b2:") != NULL;
        b4 += strstr(P->rows[i].source, "zoo:alexnet.onnx@b4:") != NULL;
    }
    assert_true(b2 > 0 && b4 > 0);
    free_plan(P);
    pp_test_write_text(list, "file,family,input_shape\nmodels/alexnet.onnx,alexnet,1x3x224x224\n");
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err, "input_name"));
}

static void plan_should_reject_bad_parameters(void **state)
{
    (void)state;
    char out[1300], err[1024];
    path_in(out, sizeof out, "plan_bad.csv");
    perfpred_plan_params p = plan_params(out, 1, 1);
    p.device = NULL;
    assert_int_equal(perfpred_calibrate_plan(&p, NULL, err, sizeof err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "device"));
    perfpred_plan_report r;
    p = plan_params(out, 0, 1);
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "budget_min"));
    p = plan_params(out, 1, 1);
    p.device = "no-such-device";
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_ERR_DEVICE);
    const char *missing[] = {"/nonexistent/model.onnx"};
    p = plan_params(out, 1, 1);
    p.models = missing;
    p.n_models = 1;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_ERR_IO);
    assert_non_null(strstr(err, "/nonexistent/model.onnx"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_should_give_the_same_bytes_for_a_seed),
        cmocka_unit_test(plan_should_fit_the_budget_and_cover_every_zoo_kind),
        cmocka_unit_test(plan_rows_should_rebuild_as_their_kind_and_run_in_the_runner),
        cmocka_unit_test(plan_should_leave_out_excluded_families),
        cmocka_unit_test(plan_should_keep_a_concat_whose_first_input_is_a_constant),
        cmocka_unit_test(plan_should_keep_a_densenet_concat_of_25_inputs),
        cmocka_unit_test(plan_should_time_a_composite_op_as_its_one_operator),
        cmocka_unit_test(plan_should_vary_windows_and_groups),
        cmocka_unit_test(plan_should_cover_kernel_stride_and_group_together),
        cmocka_unit_test(plan_should_add_anchors_spread_over_latency),
        cmocka_unit_test(plan_should_read_a_model_list),
        cmocka_unit_test(plan_should_reject_bad_parameters),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
