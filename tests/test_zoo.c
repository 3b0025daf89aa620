/* tests/test_zoo.c: the golden model zoo. Every row of tests/fixtures/models/reference.csv
 * (written by tools/export_models.py from PyTorch, independently of this library) is loaded with
 * its input shape; the graph's parameter count, MAC count and output shapes must equal the
 * reference figures, and symbolic batch overrides must scale MACs linearly. One test per row. */
#include "tests/helpers.h"

#include <csv.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

#define ZOO_DIR "tests/fixtures/models/"
#define MAX_ROWS 256
#define MAX_OUTPUTS 8

typedef struct zoo_row {
    char file[128], model[64], family[32], input_name[64], input_shape[64], input_dtype[16];
    char output_shape[256], macs_note[64], macs_check[16];
    int64_t opset, params_graph, params_torch, macs_hooks, n_nodes, n_weight_tensors;
} zoo_row;

/* Columns in the order the exporter writes them; the header must match exactly. */
static const char *const COLUMNS[] = {
    "file", "model", "family", "input_name", "input_shape", "input_dtype", "output_shape", "opset",
    "params_graph", "params_torch", "macs_hooks", "macs_note", "macs_check", "n_nodes",
    "n_weight_tensors"};
#define N_COLUMNS ((int)(sizeof COLUMNS / sizeof COLUMNS[0]))

typedef struct csv_state {
    zoo_row *rows;
    int n_rows;
    int line;   /* 0 = header */
    int col;
    char err[512];
} csv_state;

static zoo_row g_rows[MAX_ROWS];
static int g_n_rows;
static char g_names[MAX_ROWS][256]; /* cmocka test names, one per row */
static char g_load_err[512];

static void copy_field(csv_state *st, char *dst, size_t cap, const char *s, size_t len)
{
    if (len >= cap) {
        snprintf(st->err, sizeof st->err, "line %d column %s: value too long", st->line + 1,
                 COLUMNS[st->col]);
        return;
    }
    memcpy(dst, s, len);
    dst[len] = '\0';
}

static void num_field(csv_state *st, int64_t *dst, const char *s, size_t len)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf) {
        snprintf(st->err, sizeof st->err, "line %d column %s: bad number", st->line + 1,
                 COLUMNS[st->col]);
        return;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (pp_parse_i64(buf, dst) != 0 || *dst < 0)
        snprintf(st->err, sizeof st->err, "line %d column %s: bad number '%s'", st->line + 1,
                 COLUMNS[st->col], buf);
}

static void on_field(void *data, size_t len, void *user)
{
    csv_state *st = user;
    const char *s = data ? data : "";
    if (st->err[0]) return;
    if (st->col >= N_COLUMNS) {
        snprintf(st->err, sizeof st->err, "line %d: more than %d columns", st->line + 1, N_COLUMNS);
        return;
    }
    if (st->line == 0) {
        if (strlen(COLUMNS[st->col]) != len || memcmp(COLUMNS[st->col], s, len) != 0)
            snprintf(st->err, sizeof st->err, "header column %d is '%.*s', expected '%s'",
                     st->col + 1, (int)len, s, COLUMNS[st->col]);
        st->col++;
        return;
    }
    if (st->n_rows >= MAX_ROWS) {
        snprintf(st->err, sizeof st->err, "more than %d rows", MAX_ROWS);
        return;
    }
    zoo_row *r = &st->rows[st->n_rows];
    switch (st->col) {
    case 0: copy_field(st, r->file, sizeof r->file, s, len); break;
    case 1: copy_field(st, r->model, sizeof r->model, s, len); break;
    case 2: copy_field(st, r->family, sizeof r->family, s, len); break;
    case 3: copy_field(st, r->input_name, sizeof r->input_name, s, len); break;
    case 4: copy_field(st, r->input_shape, sizeof r->input_shape, s, len); break;
    case 5: copy_field(st, r->input_dtype, sizeof r->input_dtype, s, len); break;
    case 6: copy_field(st, r->output_shape, sizeof r->output_shape, s, len); break;
    case 7: num_field(st, &r->opset, s, len); break;
    case 8: num_field(st, &r->params_graph, s, len); break;
    case 9: num_field(st, &r->params_torch, s, len); break;
    case 10: num_field(st, &r->macs_hooks, s, len); break;
    case 11: copy_field(st, r->macs_note, sizeof r->macs_note, s, len); break;
    case 12: copy_field(st, r->macs_check, sizeof r->macs_check, s, len); break;
    case 13: num_field(st, &r->n_nodes, s, len); break;
    case 14: num_field(st, &r->n_weight_tensors, s, len); break;
    default: break;
    }
    st->col++;
}

static void on_row(int term, void *user)
{
    csv_state *st = user;
    if (st->err[0]) return;
    if (st->col != N_COLUMNS) {
        snprintf(st->err, sizeof st->err, "line %d: %d columns, expected %d", st->line + 1, st->col,
                 N_COLUMNS);
        return;
    }
    if (st->line > 0) {
        zoo_row *r = &st->rows[st->n_rows];
        if (strcmp(r->macs_check, "exact") != 0 && strcmp(r->macs_check, "rel0.02") != 0)
            snprintf(st->err, sizeof st->err,
                     "line %d: macs_check '%s' is neither exact nor rel0.02", st->line + 1,
                     r->macs_check);
        st->n_rows++;
    }
    st->line++;
    st->col = 0;
}

/* Reads reference.csv strictly: exact header, every field present, numbers whole. */
static int load_reference(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err err = {0};
    if (pp_read_file(pp_test_path(ZOO_DIR "reference.csv"), &buf, &len, &err) != PERFPRED_OK) {
        snprintf(g_load_err, sizeof g_load_err, "%.500s", err.msg);
        return -1;
    }
    struct csv_parser p;
    csv_state st = {.rows = g_rows};
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
        free(buf);
        snprintf(g_load_err, sizeof g_load_err, "csv_init failed");
        return -1;
    }
    if (csv_parse(&p, buf, len, on_field, on_row, &st) != len)
        snprintf(st.err, sizeof st.err, "reference.csv: %s", csv_strerror(csv_error(&p)));
    else if (csv_fini(&p, on_field, on_row, &st) != 0 && !st.err[0])
        snprintf(st.err, sizeof st.err, "reference.csv: %s", csv_strerror(csv_error(&p)));
    csv_free(&p);
    free(buf);
    if (st.err[0]) {
        snprintf(g_load_err, sizeof g_load_err, "reference.csv: %.480s", st.err);
        return -1;
    }
    g_n_rows = st.n_rows;
    return 0;
}

static const zoo_row *find_row(const char *file, const char *input_shape)
{
    for (int i = 0; i < g_n_rows; i++)
        if (strcmp(g_rows[i].file, file) == 0 &&
            (!input_shape || strcmp(g_rows[i].input_shape, input_shape) == 0))
            return &g_rows[i];
    return NULL;
}

/* Loads the row's file with its input shape as an override (or, with batch > 0, with a batch
 * override and no input shape). Fails the test with the loader's message on error. */
static pp_graph *load_row(const zoo_row *r, int64_t batch, const char *shape)
{
    char rel[256];
    snprintf(rel, sizeof rel, ZOO_DIR "%.127s", r->file);
    perfpred_input_override ov = {.name = r->input_name};
    pp_shape_opts opts = {0};
    if (shape) {
        ov.rank = pp_parse_dims(shape, ov.dims, PERFPRED_MAX_RANK);
        assert_true(ov.rank > 0);
        opts.inputs = &ov;
        opts.n_inputs = 1;
    }
    opts.batch = batch;
    pp_graph *g = NULL;
    pp_err err = {0};
    perfpred_status st = pp_graph_load_full(pp_test_path(rel), &opts, &g, &err);
    if (st != PERFPRED_OK) {
        pp_graph_free(g);
        fail_msg("%s (input %s, batch %" PRId64 "): %s: %s", r->file, shape ? shape : "-", batch,
                 perfpred_status_str(st), err.msg);
    }
    assert_non_null(g);
    return g;
}

/* Compares the graph outputs with "1x1000" or "1x256x96x96;1x256x48x48"; returns mismatches. */
static int check_outputs(const pp_graph *g, const char *expected, char *why, size_t cap)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", expected);
    int n = 0, bad = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save), n++) {
        int64_t dims[PERFPRED_MAX_RANK];
        int rank = pp_parse_dims(tok, dims, PERFPRED_MAX_RANK);
        if (rank < 0) {
            snprintf(why, cap, "bad output_shape '%s' in reference.csv", expected);
            return 1;
        }
        if (n >= g->n_outputs) continue;
        const pp_tensor *t = &g->tensors[g->outputs[n]];
        int same = t->rank == rank;
        for (int d = 0; same && d < rank; d++) same = t->dims[d] == dims[d];
        if (!same) {
            char got[160] = "";
            size_t off = 0;
            for (int d = 0; d < t->rank && off < sizeof got; d++)
                off += (size_t)snprintf(got + off, sizeof got - off, "%s%" PRId64, d ? "x" : "",
                                        t->dims[d]);
            size_t used = strlen(why);
            snprintf(why + used, cap - used, " output %d '%s' is %s (rank %d), expected %s;", n,
                     t->name, t->rank < 0 ? "unknown" : got, t->rank, tok);
            bad++;
        }
    }
    if (n != g->n_outputs) {
        size_t used = strlen(why);
        snprintf(why + used, cap - used, " %d graph outputs, expected %d;", g->n_outputs, n);
        bad++;
    }
    return bad;
}

static int macs_match(const zoo_row *r, int64_t got, int64_t want)
{
    if (strcmp(r->macs_check, "exact") == 0) return got == want;
    double diff = (double)got - (double)want;
    if (diff < 0) diff = -diff;
    return diff <= 0.02 * (double)want;
}

/* One row: params exactly, MACs exactly (or within 2% where the row says rel0.02), input dtype,
 * every output shape. All mismatches of a row are reported together. */
static void zoo_should_match_reference(void **state)
{
    const zoo_row *r = *state;
    pp_graph *g = load_row(r, 0, r->input_shape);
    char why[1024] = "";
    int bad = 0;
    if (g->totals.params != r->params_graph) {
        size_t used = strlen(why);
        snprintf(why + used, sizeof why - used, " params %" PRId64 ", expected %" PRId64 ";",
                 g->totals.params, r->params_graph);
        bad++;
    }
    if (!macs_match(r, g->totals.macs, r->macs_hooks)) {
        size_t used = strlen(why);
        snprintf(why + used, sizeof why - used,
                 " macs %" PRId64 ", expected %" PRId64 " (%s, %s, %+.3f%%);", g->totals.macs, r->macs_hooks, r->macs_check, r->macs_note,
                 100.0 * ((double)g->totals.macs / (double)r->macs_hooks - 1.0));
        bad++;
    }
    int want_dt = strcmp(r->input_dtype, "int64") == 0 ? PP_DT_INT64 : PP_DT_FLOAT;
    int in = pp_graph_find(g, r->input_name);
    if (in < 0 || g->tensors[in].dtype != want_dt) {
        size_t used = strlen(why);
        snprintf(why + used, sizeof why - used, " input '%s' missing or not %s;", r->input_name,
                 r->input_dtype);
        bad++;
    }
    bad += check_outputs(g, r->output_shape, why, sizeof why);
    pp_graph_free(g);
    if (bad) fail_msg("%s at %s:%s", r->file, r->input_shape, why);
}

/* A symbolic batch of 8 (no explicit input shape) must multiply MACs by exactly 8 and leave the
 * parameter count alone: every op in these models is independent across the batch. */
static void zoo_should_scale_macs_with_batch(void **state)
{
    static const char *const files[] = {"resnet18.onnx", "mobilenet_v3_small.onnx",
                                        "vit_b_16.onnx", "efficientnet_b0.onnx"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const zoo_row *r = find_row(files[i], NULL);
        if (!r) fail_msg("%s: no row in reference.csv", files[i]);
        pp_graph *g = load_row(r, 8, NULL);
        int64_t macs = g->totals.macs, params = g->totals.params;
        int64_t out0 = g->n_outputs > 0 ? g->tensors[g->outputs[0]].dims[0] : -1;
        pp_graph_free(g);
        if (macs != 8 * r->macs_hooks || params != r->params_graph || out0 != 8)
            fail_msg("%s at batch 8: macs %" PRId64 " (expected %" PRId64 "), params %" PRId64
                     " (expected %" PRId64 "), output batch %" PRId64,
                     r->file, macs, 8 * r->macs_hooks, params, r->params_graph, out0);
    }
}

/* Token models: batch and sequence both symbolic; 8x128 must cost 8 times the 1x128 row. */
static void zoo_should_scale_text_macs_with_batch(void **state)
{
    static const char *const files[] = {"bert_mini_op17.onnx", "gpt2_mini_op13.onnx"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const zoo_row *r = find_row(files[i], "1x128");
        if (!r) fail_msg("%s: no 1x128 row in reference.csv", files[i]);
        pp_graph *g = load_row(r, 0, "8x128");
        int64_t macs = g->totals.macs;
        pp_graph_free(g);
        if (macs != 8 * r->macs_hooks)
            fail_msg("%s at 8x128: macs %" PRId64 ", expected %" PRId64, r->file, macs,
                     8 * r->macs_hooks);
    }
}

/* The reference itself: parsed, large enough to be the zoo, each file present once per shape. */
static void zoo_should_have_a_complete_reference(void **state)
{
    assert_true(g_n_rows >= 80);
    for (int i = 0; i < g_n_rows; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, ZOO_DIR "%.127s", g_rows[i].file);
        FILE *f = fopen(pp_test_path(rel), "rb");
        if (!f) fail_msg("%s listed in reference.csv but missing", g_rows[i].file);
        fclose(f);
        for (int j = 0; j < i; j++)
            if (strcmp(g_rows[i].file, g_rows[j].file) == 0 &&
                strcmp(g_rows[i].input_shape, g_rows[j].input_shape) == 0)
                fail_msg("%s at %s listed twice", g_rows[i].file, g_rows[i].input_shape);
    }
}

int main(void)
{
    if (load_reference() != 0) {
        fprintf(stderr, "test_zoo: %s\n", g_load_err);
        return 1;
    }
    static struct CMUnitTest tests[MAX_ROWS + 3];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest){"zoo_should_have_a_complete_reference",
                                     zoo_should_have_a_complete_reference, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"zoo_should_scale_macs_with_batch",
                                     zoo_should_scale_macs_with_batch, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"zoo_should_scale_text_macs_with_batch",
                                     zoo_should_scale_text_macs_with_batch, NULL, NULL, NULL};
    for (int i = 0; i < g_n_rows; i++) {
        zoo_row *r = &g_rows[i];
        snprintf(g_names[i], sizeof g_names[i], "zoo_should_match_reference_%.127s_%.63s", r->file,
                 r->input_shape);
        tests[n++] = (struct CMUnitTest){g_names[i], zoo_should_match_reference, NULL, NULL, r};
    }
    return _cmocka_run_group_tests("test_zoo", tests, n, NULL, NULL);
}
