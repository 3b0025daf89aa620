/* tests/test_onnx_testdata.c: shape inference against Debian's libonnx-testdata. Every model is
 * loaded, its graph inputs get the dims of test_data_set_0/input_*.pb as overrides, shapes are
 * inferred, and every graph output's dims must equal those of output_*.pb. Unsupported ops must say
 * so (PERFPRED_ERR_UNSUPPORTED); data-dependent shapes must say so, and are then retried with the
 * small input values supplied as constants, which exercises the folding rules. */
#include "tests/helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"
#define MAX_IO 64

typedef struct counts {
    int models, matched, matched_with_values, unsupported, data_dependent, no_data;
    int failures;
    char unsupported_ops[8192];   /* "Op (n), ..." built at the end */
    char failure_log[16384];
} counts;

/* ---- unsupported reasons, counted by op (or by loader reason) ---- */
typedef struct reason {
    char what[96];
    int n;
} reason;
static reason reasons[256];
static int n_reasons;

static void count_reason(const char *msg)
{
    char what[96];
    const char *p = strstr(msg, "unsupported op '");
    if (p) {
        p += strlen("unsupported op '");
        size_t len = strcspn(p, "'");
        snprintf(what, sizeof what, "%.*s", (int)(len < 60 ? len : 60), p);
    } else if (strstr(msg, "opset ") && strstr(msg, "not supported")) {
        snprintf(what, sizeof what, "opset outside 7..17");
    } else if (strstr(msg, "is a sequence") || strstr(msg, "is an optional")) {
        snprintf(what, sizeof what, "sequence/optional values");
    } else if (strstr(msg, "subgraph")) {
        snprintf(what, sizeof what, "subgraphs (If/Loop/Scan)");
    } else {
        const char *colon = strchr(msg, ':');
        snprintf(what, sizeof what, "%.60s", colon ? colon + 2 : msg);
    }
    for (int i = 0; i < n_reasons; i++)
        if (!strcmp(reasons[i].what, what)) {
            reasons[i].n++;
            return;
        }
    if (n_reasons < 256) {
        snprintf(reasons[n_reasons].what, sizeof reasons[n_reasons].what, "%s", what);
        reasons[n_reasons++].n = 1;
    }
}

static void add_failure(counts *c, const char *model, const char *msg)
{
    size_t k = strlen(c->failure_log);
    c->failures++;
    if (k + 300 < sizeof c->failure_log)
        snprintf(c->failure_log + k, sizeof c->failure_log - k, "  %s: %.240s\n", model, msg);
}

/* ---- reading the protobufs ---- */

static Onnx__TensorProto *read_tensor(const char *path)
{
    uint8_t *buf;
    size_t len;
    pp_err err = {0};
    if (pp_read_file(path, &buf, &len, &err)) return NULL;
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, buf);
    free(buf);
    return t;
}

/* Graph input names that are not initializers, and graph output names, in file order. */
typedef struct model_io {
    int n_in, n_out;
    char *in[MAX_IO], *out[MAX_IO];
    int in_is_tensor[MAX_IO], out_is_tensor[MAX_IO];
} model_io;

static int read_io(const char *path, model_io *io)
{
    uint8_t *buf;
    size_t len;
    pp_err err = {0};
    memset(io, 0, sizeof *io);
    if (pp_read_file(path, &buf, &len, &err)) return -1;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!m || !m->graph) {
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        return -1;
    }
    const Onnx__GraphProto *gp = m->graph;
    for (size_t i = 0; i < gp->n_input && io->n_in < MAX_IO; i++) {
        int init = 0;
        for (size_t k = 0; k < gp->n_initializer && !init; k++)
            init = !strcmp(gp->initializer[k]->name, gp->input[i]->name);
        if (init) continue;
        io->in_is_tensor[io->n_in] =
            gp->input[i]->type &&
            gp->input[i]->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        io->in[io->n_in++] = strdup(gp->input[i]->name);
    }
    for (size_t i = 0; i < gp->n_output && io->n_out < MAX_IO; i++) {
        io->out_is_tensor[io->n_out] =
            gp->output[i]->type &&
            gp->output[i]->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        io->out[io->n_out++] = strdup(gp->output[i]->name);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return 0;
}

static void free_io(model_io *io)
{
    for (int i = 0; i < io->n_in; i++) free(io->in[i]);
    for (int i = 0; i < io->n_out; i++) free(io->out[i]);
}

/* Copies a small TensorProto's values into t->val (arena-owned) and marks it constant. */
static int attach_value(pp_graph *g, pp_tensor *t, const Onnx__TensorProto *tp)
{
    int64_t n = pp_tensor_elems(t);
    if (n < 0 || n > PP_CONST_MAX_ELEMS) return 0;
    int fl = pp_dtype_is_float(tp->data_type);
    int64_t *iv = fl ? NULL : pp_arena_array(g->arena, (size_t)n + 1, sizeof *iv);
    double *fv = fl ? pp_arena_array(g->arena, (size_t)n + 1, sizeof *fv) : NULL;
    if (!iv && !fv) return 0;
    const uint8_t *raw = tp->has_raw_data ? tp->raw_data.data : NULL;
    size_t rawlen = tp->has_raw_data ? tp->raw_data.len : 0;
    for (int64_t i = 0; i < n; i++) {
        switch (tp->data_type) {
        case PP_DT_INT64:
            if (raw && rawlen >= (size_t)(i + 1) * 8) memcpy(&iv[i], raw + i * 8, 8);
            else if ((size_t)i < tp->n_int64_data) iv[i] = tp->int64_data[i];
            else return 0;
            break;
        case PP_DT_INT32: case PP_DT_INT16: case PP_DT_INT8: case PP_DT_UINT8: case PP_DT_BOOL:
        case PP_DT_UINT16:
            if (raw) {
                int sz = pp_dtype_size(tp->data_type);
                if (rawlen < (size_t)(i + 1) * (size_t)sz) return 0;
                int64_t x = 0;
                if (sz == 4) { int32_t v; memcpy(&v, raw + i * 4, 4); x = v; }
                else if (sz == 2) { int16_t v; memcpy(&v, raw + i * 2, 2); x = tp->data_type == PP_DT_UINT16 ? (uint16_t)v : v; }
                else { x = tp->data_type == PP_DT_INT8 ? (int8_t)raw[i] : raw[i]; }
                iv[i] = x;
            } else if ((size_t)i < tp->n_int32_data) {
                iv[i] = tp->int32_data[i];
            } else {
                return 0;
            }
            break;
        case PP_DT_FLOAT:
            if (raw && rawlen >= (size_t)(i + 1) * 4) {
                float v;
                memcpy(&v, raw + i * 4, 4);
                fv[i] = v;
            } else if ((size_t)i < tp->n_float_data) {
                fv[i] = tp->float_data[i];
            } else {
                return 0;
            }
            break;
        case PP_DT_DOUBLE:
            if (raw && rawlen >= (size_t)(i + 1) * 8) memcpy(&fv[i], raw + i * 8, 8);
            else if ((size_t)i < tp->n_double_data) fv[i] = tp->double_data[i];
            else return 0;
            break;
        default:
            return 0;
        }
    }
    t->val.dtype = t->dtype;
    t->val.rank = t->rank;
    memcpy(t->val.dims, t->dims, sizeof t->dims);
    t->val.n = n;
    t->val.ival = iv;
    t->val.fval = fv;
    t->flags |= PP_T_CONST;
    return 1;
}

/* ---- one model ---- */

typedef enum { R_MATCH, R_MATCH_VALUES, R_UNSUPPORTED, R_DATA_DEP, R_FAIL, R_NODATA } result;

static int kept_declared; /* inputs whose data contradicts their declared static shape */

static result try_model(const char *dir, const char *name, int with_values, char *msg, size_t mlen)
{
    char path[1024], p2[1100];
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    model_io io;
    Onnx__TensorProto *ins[MAX_IO] = {0}, *outs[MAX_IO] = {0};
    pp_graph *g = NULL;
    result r = R_FAIL;
    perfpred_input_override ov[MAX_IO];
    int nov = 0;
    pp_err err = {0};

    pp_err_clear(&err);
    perfpred_status st = pp_onnx_load(path, &g, &err);
    if (st) {
        snprintf(msg, mlen, "%s", err.msg);
        return st == PERFPRED_ERR_UNSUPPORTED ? R_UNSUPPORTED : R_FAIL;
    }
    if (read_io(path, &io)) {
        snprintf(msg, mlen, "test harness could not decode the model");
        pp_graph_free(g);
        return R_FAIL;
    }
    for (int i = 0; i < io.n_in; i++) {
        snprintf(p2, sizeof p2, "%s/%s/test_data_set_0/input_%d.pb", dir, name, i);
        struct stat sb;
        if (stat(p2, &sb) != 0 || !io.in_is_tensor[i]) {
            snprintf(msg, mlen, "no tensor data for input %d", i);
            r = R_NODATA;
            goto done;
        }
        ins[i] = read_tensor(p2);
        if (!ins[i] || ins[i]->n_dims > PERFPRED_MAX_RANK) {
            snprintf(msg, mlen, "input_%d.pb is not a usable TensorProto", i);
            r = R_NODATA;
            goto done;
        }
        /* A few testdata pairs contradict the model (test_castlike_*: 'like' is declared
         * [3,4], its data is [1]; only its dtype matters). The declared static shape wins. */
        int t = pp_graph_find(g, io.in[i]);
        if (t >= 0 && g->tensors[t].rank >= 0 && g->tensors[t].rank != (int)ins[i]->n_dims &&
            (g->tensors[t].flags & PP_T_SHAPE_KNOWN)) {
            kept_declared += !with_values;
            continue;
        }
        ov[nov].name = io.in[i];
        ov[nov].rank = (int)ins[i]->n_dims;
        for (size_t d = 0; d < ins[i]->n_dims; d++) ov[nov].dims[d] = ins[i]->dims[d];
        nov++;
    }
    for (int i = 0; i < io.n_out; i++) {
        snprintf(p2, sizeof p2, "%s/%s/test_data_set_0/output_%d.pb", dir, name, i);
        if (!io.out_is_tensor[i] || !(outs[i] = read_tensor(p2))) {
            snprintf(msg, mlen, "no tensor data for output %d", i);
            r = R_NODATA;
            goto done;
        }
    }
    if (with_values) {
        for (int i = 0; i < io.n_in; i++) {
            int t = pp_graph_find(g, io.in[i]);
            if (t < 0) continue;
            pp_tensor *T = &g->tensors[t];
            if (T->rank >= 0 && T->rank != (int)ins[i]->n_dims) continue;
            int64_t dims[PERFPRED_MAX_RANK];
            for (size_t d = 0; d < ins[i]->n_dims; d++) dims[d] = ins[i]->dims[d];
            pp_tensor_set_shape(T, T->dtype, (int)ins[i]->n_dims, dims);
            attach_value(g, T, ins[i]);
        }
    }
    pp_shape_opts opts = {.inputs = ov, .n_inputs = nov};
    st = pp_graph_infer_shapes(g, &opts, &err);
    if (st) {
        snprintf(msg, mlen, "%s", err.msg);
        if (st == PERFPRED_ERR_UNSUPPORTED) r = R_UNSUPPORTED;
        else if (st == PERFPRED_ERR_SHAPE && strstr(err.msg, "data-dependent")) r = R_DATA_DEP;
        else r = R_FAIL;
        goto done;
    }
    for (int i = 0; i < io.n_out; i++) {
        int t = pp_graph_find(g, io.out[i]);
        const pp_tensor *T = t >= 0 ? &g->tensors[t] : NULL;
        int same = T && (T->flags & PP_T_SHAPE_KNOWN) && T->rank == (int)outs[i]->n_dims;
        for (int d = 0; same && d < T->rank; d++) same = T->dims[d] == outs[i]->dims[d];
        if (!same) {
            char want[256] = "[", got[256] = "[";
            for (size_t d = 0; d < outs[i]->n_dims; d++)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "," : "",
                         (long long)outs[i]->dims[d]);
            for (int d = 0; T && d < T->rank; d++)
                snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "",
                         (long long)T->dims[d]);
            snprintf(msg, mlen, "output '%s': inferred %s], expected %s]", io.out[i], got, want);
            r = R_FAIL;
            goto done;
        }
    }
    r = with_values ? R_MATCH_VALUES : R_MATCH;
done:
    for (int i = 0; i < MAX_IO; i++) {
        if (ins[i]) onnx__tensor_proto__free_unpacked(ins[i], NULL);
        if (outs[i]) onnx__tensor_proto__free_unpacked(outs[i], NULL);
    }
    free_io(&io);
    pp_graph_free(g);
    return r;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_suite(counts *c, const char *suite)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", TESTDATA, suite);
    DIR *d = opendir(dir);
    if (!d) return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[1024], msg[PP_ERR_MSG + 64], label[600];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[i]);
        if (stat(path, &sb) != 0) {
            free(names[i]);
            continue;
        }
        snprintf(label, sizeof label, "%s/%s", suite, names[i]);
        c->models++;
        msg[0] = '\0';
        result r = try_model(dir, names[i], 0, msg, sizeof msg);
        if (r == R_DATA_DEP) {
            char first[sizeof msg];
            snprintf(first, sizeof first, "%s", msg);
            r = try_model(dir, names[i], 1, msg, sizeof msg);
            if (r == R_DATA_DEP || r == R_UNSUPPORTED) snprintf(msg, sizeof msg, "%s", first);
            if (r == R_UNSUPPORTED) r = R_DATA_DEP;
        }
        switch (r) {
        case R_MATCH: c->matched++; break;
        case R_MATCH_VALUES: c->matched_with_values++; break;
        case R_UNSUPPORTED: c->unsupported++; count_reason(msg); break;
        case R_DATA_DEP: c->data_dependent++; break;
        case R_NODATA: c->no_data++; break;
        case R_FAIL: add_failure(c, label, msg); break;
        }
        if (getenv("PP_TESTDATA_VERBOSE"))
            printf("%-70s %d %s\n", label, (int)r, r == R_MATCH ? "" : msg);
        free(names[i]);
    }
    free(names);
}

static void testdata_models_should_match_reference_output_shapes(void **state)
{
    struct stat sb;
    if (stat(TESTDATA, &sb) != 0) {
        print_message("libonnx-testdata is not installed (%s): skipped\n", TESTDATA);
        skip();
    }
    counts *c = calloc(1, sizeof *c);
    assert_non_null(c);
    const char *suites[] = {"node", "pytorch-converted", "pytorch-operator", "simple", "real"};
    for (size_t i = 0; i < sizeof suites / sizeof *suites; i++) run_suite(c, suites[i]);

    size_t k = 0;
    for (int i = 0; i < n_reasons && k + 120 < sizeof c->unsupported_ops; i++)
        k += (size_t)snprintf(c->unsupported_ops + k, sizeof c->unsupported_ops - k, "%s%s (%d)",
                              i ? ", " : "", reasons[i].what, reasons[i].n);
    printf("libonnx-testdata: %d models, %d matched, %d matched with constant inputs, "
           "%d unsupported, %d data-dependent, %d without tensor data, %d failed "
           "(%d inputs kept their declared shape: data contradicts it)\n",
           c->models, c->matched, c->matched_with_values, c->unsupported, c->data_dependent,
           c->no_data, c->failures, kept_declared);
    printf("unsupported: %s\n", c->unsupported_ops);
    if (c->failures) printf("failures:\n%s", c->failure_log);
    fflush(stdout);
    int failures = c->failures, matched = c->matched + c->matched_with_values, models = c->models;
    free(c);
    assert_int_equal(failures, 0);
    /* the large majority of the suite must be inferred, not skipped */
    assert_true(matched * 10 >= models * 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(testdata_models_should_match_reference_output_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
