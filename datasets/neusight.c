/* datasets/neusight.c: NeuSight's kernel tables (PyTorch 2.1 fp32, CUDA-event timed) as layer rows:
 * bmm -> MatMul of two activations, linear -> Gemm (nn.Linear with bias, transB), conv -> Conv (square
 * kernel and input, bias), elementwise ops -> Add/Mul/Div/Pow (scalar variants against a scalar
 * weight), Relu, Tanh, Gelu; ln -> LayerNormalization over the last dim; softmax -> Softmax(-1). */
#include "datasets/datasets.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const pp_datasets_neusight_ops[] = {"bmm", "linear", "conv", "add", "addu", "mul", "mulu",
                                       "div", "divu", "pow", "powu", "relu", "gelu", "tanh",
                                       "ln", "softmax", NULL};

#define DATASET_DIR "scripts/asplos/data/dataset"

static const struct {
    const char *gpu, *device;
} gpu_names[] = {
    {"NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"},
    {"NVIDIA A100 80GB PCIe", "a100-pcie-80gb"},
    {"NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"},  /* HBM3 80 GB is the SXM5 part */
    {"NVIDIA L4", "l4"},
    {"Tesla V100-PCIE-32GB", "v100-pcie-32gb"},
    {"Tesla T4", "t4"},
    {"Tesla P100-PCIE-16GB", "p100-pcie-16gb"},
    {"Tesla P4", "p4"},
};

const char *pp_datasets_neusight_device(const char *gpu)
{
    for (size_t i = 0; i < sizeof gpu_names / sizeof gpu_names[0]; i++)
        if (strcmp(gpu, gpu_names[i].gpu) == 0) return gpu_names[i].device;
    return NULL;
}

/* ---- per-op mapping ---- */
typedef enum shape_family { FAM_GEMM, FAM_CONV, FAM_2D } shape_family;

typedef struct op_map {
    const char *op;
    shape_family fam;
    const char *op_type;
    pp_op_kind kind;
    int scalar;      /* second operand is a scalar constant */
    int binary;      /* second operand is a [B,H] activation */
    const char *test_file;
} op_map;

static const op_map op_maps[] = {
    {"bmm", FAM_GEMM, "MatMul", PP_OPK_BMM, 0, 0, "bmm"},
    {"linear", FAM_GEMM, "Gemm", PP_OPK_LINEAR, 0, 0, "linear"},
    {"conv", FAM_CONV, "Conv", PP_OPK_CONV, 0, 0, NULL},
    {"add", FAM_2D, "Add", PP_OPK_ELEMWISE, 0, 1, "elem"},
    {"addu", FAM_2D, "Add", PP_OPK_ELEMWISE, 1, 0, "elem"},
    {"mul", FAM_2D, "Mul", PP_OPK_ELEMWISE, 0, 1, "elem"},
    {"mulu", FAM_2D, "Mul", PP_OPK_ELEMWISE, 1, 0, "elem"},
    {"div", FAM_2D, "Div", PP_OPK_ELEMWISE, 0, 1, "elem"},
    {"divu", FAM_2D, "Div", PP_OPK_ELEMWISE, 1, 0, "elem"},
    {"pow", FAM_2D, "Pow", PP_OPK_ELEMWISE, 0, 1, "elem"},
    {"powu", FAM_2D, "Pow", PP_OPK_ELEMWISE, 1, 0, "elem"},
    {"relu", FAM_2D, "Relu", PP_OPK_ELEMWISE, 0, 0, "elem"},
    {"gelu", FAM_2D, "Gelu", PP_OPK_ELEMWISE, 0, 0, "elem"},
    {"tanh", FAM_2D, "Tanh", PP_OPK_ELEMWISE, 0, 0, "elem"},
    {"ln", FAM_2D, "LayerNormalization", PP_OPK_NORM, 0, 0, "ln"},
    {"softmax", FAM_2D, "Softmax", PP_OPK_SOFTMAX, 0, 0, "softmax"},
};

static const op_map *find_op(const char *op)
{
    for (size_t i = 0; i < sizeof op_maps / sizeof op_maps[0]; i++)
        if (strcmp(op, op_maps[i].op) == 0) return &op_maps[i];
    return NULL;
}

perfpred_status pp_datasets_neusight_path(const char *op, const char *gpu, pp_neusight_split split,
                                          char *out, size_t n, pp_err *err)
{
    const op_map *m = find_op(op);
    if (!m) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "NeuSight: unknown operator '%s'", op);
    int k;
    if (split == PP_NEUSIGHT_TRAIN) {
        k = snprintf(out, n, DATASET_DIR "/train/collect/%s/p2.1.0/%s.csv", op, gpu);
    } else {
        if (!m->test_file)
            return pp_err_set(err, PERFPRED_ERR_UNSUPPORTED,
                              "NeuSight has no test file for '%s' (hold out training rows instead)",
                              op);
        k = snprintf(out, n, DATASET_DIR "/test/%s.csv", m->test_file);
    }
    if (k < 0 || (size_t)k >= n)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "NeuSight: path too long for '%s'", gpu);
    return PERFPRED_OK;
}

/* ---- SOURCE.md ---- */
perfpred_status pp_datasets_neusight_source(const char *root, pp_neusight_source *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    char path[PP_SOURCE_MD_PATH], *text;
    perfpred_status st = pp_datasets_source_md(root, path, &text, err);
    if (st != PERFPRED_OK) return st;
    int line = 0;
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        line++;
        const char *r = strstr(p, "- Repo: "), *c = strstr(p, "- Commit: ");
        if (r == p && !out->repo[0]) {
            r += 8;
            size_t k = strcspn(r, " \t");
            if (k == 0 || k >= sizeof out->repo) break;
            memcpy(out->repo, r, k);
        } else if (c == p && !out->commit[0]) {
            c += 10;
            int ok = 1;
            for (int i = 0; i < 40; i++)
                if (!isxdigit((unsigned char)c[i])) ok = 0;
            if (!ok || strncmp(c + 40, " (", 2) != 0 || strlen(c) < 53 || c[52] != ')') {
                free(text);
                return pp_err_set(err, PERFPRED_ERR_PARSE,
                                  "%s:%d: want '- Commit: <40 hex> (YYYY-MM-DD)'", path, line);
            }
            memcpy(out->commit, c, 40);
            memcpy(out->date, c + 42, 10);
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    if (!out->repo[0] || !out->commit[0])
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: no '- Repo:' or '- Commit:' line", path);
    return PERFPRED_OK;
}

/* ---- import ---- */
enum { NS_OPNAME, NS_LATENCY, NS_DEVICE, NS_TORCH, NS_CUDNN, NS_CUDA, NS__FIXED };
static const char *const ns_fixed[NS__FIXED] = {"OPName", "Latency", "Device", "Torch Version",
                                                "CUDNN Version", "CUDA Version"};
static const char *const ns_gemm[] = {"B", "M", "N", "K"};
static const char *const ns_conv[] = {"B", "Input_Channel", "Output_Channel", "Kernel_Szie",
                                      "Input_Size", "Stride", "Padding"};
static const char *const ns_2d[] = {"B", "H"};

typedef struct ns_read {
    const op_map *m;
    const char *gpu, *device;
    const char *rel;            /* repository-relative path, for source */
    const pp_neusight_source *src;
    pp_neusight_split split;
    pp_layer_table *t;
    int fixed[NS__FIXED];
    int shape[7];
    int n_shape, n_header;
    int n_added;
} ns_read;

static int ns_header(ns_read *r, const pp_csv_record *rec, pp_err *err)
{
    const char *const *shape = r->m->fam == FAM_GEMM ? ns_gemm
                             : r->m->fam == FAM_CONV ? ns_conv : ns_2d;
    r->n_shape = r->m->fam == FAM_GEMM ? 4 : r->m->fam == FAM_CONV ? 7 : 2;
    r->n_header = rec->n_fields;
    for (int i = 0; i < NS__FIXED + r->n_shape; i++) {
        const char *name = i < NS__FIXED ? ns_fixed[i] : shape[i - NS__FIXED];
        int c = pp_measure_csv_column(rec, name);
        if (c < 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: NeuSight header lacks column '%s'",
                       rec->path, rec->line, name);
            return -1;
        }
        if (i < NS__FIXED) r->fixed[i] = c;
        else r->shape[i - NS__FIXED] = c;
    }
    return 0;
}

#define BAD(...)                                                                  \
    do {                                                                          \
        pp_measure_bad_row(&r->t->bad, r->t->arena, rec->path, rec->line, __VA_ARGS__); \
        return 0;                                                                 \
    } while (0)



static void set_ints2(pp_layer_row *row, const char *name, int64_t v, int n)
{
    pp_layer_attr *a = pp_measure_row_add_attr(row, name, PP_ATTR_INTS);
    a->n = n;
    for (int i = 0; i < n; i++) a->ints[i] = v;
}

static int ns_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    ns_read *r = user;
    if (is_header) return ns_header(r, rec, err);
    if (rec->n_fields != r->n_header)
        BAD("%d fields, the header has %d", rec->n_fields, r->n_header);
    const char *const *f = rec->fields;
    if (strcmp(f[r->fixed[NS_DEVICE]], r->gpu) != 0) return 0;
    if (strcmp(f[r->fixed[NS_OPNAME]], r->m->op) != 0) {
        if (r->split == PP_NEUSIGHT_TEST) return 0;  /* test files mix operators */
        BAD("OPName '%s' in the '%s' file", f[r->fixed[NS_OPNAME]], r->m->op);
    }
    double lat;
    if (pp_parse_double(f[r->fixed[NS_LATENCY]], &lat) != 0 || !(lat > 0))
        BAD("Latency '%s' is not a finite number > 0", f[r->fixed[NS_LATENCY]]);
    int64_t v[7];
    for (int i = 0; i < r->n_shape; i++)
        if (pp_parse_i64(f[r->shape[i]], &v[i]) != 0 || v[i] < (r->m->fam == FAM_CONV && i == 6 ? 0 : 1))
            BAD("shape field %d '%s' is not a valid integer", i + 1, f[r->shape[i]]);

    pp_layer_row row;
    memset(&row, 0, sizeof row);
    char version[128], source[1024];
    snprintf(version, sizeof version, "torch %s; %s; cudnn %s", f[r->fixed[NS_TORCH]],
             f[r->fixed[NS_CUDA]], f[r->fixed[NS_CUDNN]]);
    snprintf(source, sizeof source, "neusight@%.7s:%s:%d", r->src->commit, r->rel, rec->line);
    row.device = r->device;
    row.runtime = "pytorch-eager";
    row.runtime_version = version;
    row.precision = PP_PREC_FP32;
    row.kind = r->m->kind;
    row.op_type = r->m->op_type;
    row.batch = v[0];
    row.latency_ms = lat;
    row.latency_spread_ms = NAN;
    row.repetitions = -1;
    row.energy_j = NAN;
    row.memory_bytes = -1;
    row.source = source;
    row.date = r->src->date;
    switch (r->m->fam) {
    case FAM_GEMM: {
        int64_t B = v[0], M = v[1], N = v[2], K = v[3];
        if (r->m->kind == PP_OPK_BMM) {
            /* torch.bmm(A[B,M,N], W[B,N,K]): both operands are activations */
            pp_measure_row_add_input(&row, 'x', 3, (const int64_t[]){B, M, N, 0});
            pp_measure_row_add_input(&row, 'x', 3, (const int64_t[]){B, N, K, 0});
        } else {
            /* nn.Linear(N -> K) on [B,M,N]: PyTorch runs addmm on the [B*M, N] view, which is the
             * Gemm(A, W^T, bias) ONNX exports for a 2-D input */
            int64_t BM;
            if (pp_mul_overflow_i64(B, M, &BM)) BAD("B*M overflows");
            pp_measure_row_add_input(&row, 'x', 2, (const int64_t[]){BM, N, 0, 0});
            pp_measure_row_add_input(&row, 'w', 2, (const int64_t[]){K, N, 0, 0});
            pp_measure_row_add_input(&row, 'w', 1, (const int64_t[]){K, 0, 0, 0});
            pp_measure_row_add_attr(&row, "transB", PP_ATTR_INT)->i = 1;
        }
        break;
    }
    case FAM_CONV: {
        int64_t B = v[0], ci = v[1], co = v[2], k = v[3], s = v[4], st = v[5], pad = v[6];
        /* fp32, not TF32: the Kernels column names only FP32 SIMT kernels (winograd, scudnn,
         * sgemm, FFT gcgemm), none of cuDNN's tensor-core ones */
        pp_measure_row_add_input(&row, 'x', 4, (const int64_t[]){B, ci, s, s});
        pp_measure_row_add_input(&row, 'w', 4, (const int64_t[]){co, ci, k, k});
        pp_measure_row_add_input(&row, 'w', 1, (const int64_t[]){co, 0, 0, 0});
        set_ints2(&row, "kernel_shape", k, 2);
        set_ints2(&row, "strides", st, 2);
        set_ints2(&row, "pads", pad, 4);
        set_ints2(&row, "dilations", 1, 2);
        pp_measure_row_add_attr(&row, "group", PP_ATTR_INT)->i = 1;
        break;
    }
    case FAM_2D: {
        int64_t B = v[0], H = v[1];
        pp_measure_row_add_input(&row, 'x', 2, (const int64_t[]){B, H, 0, 0});
        if (r->m->binary) pp_measure_row_add_input(&row, 'x', 2, (const int64_t[]){B, H, 0, 0});
        if (r->m->scalar) pp_measure_row_add_input(&row, 'w', 0, (const int64_t[]){0, 0, 0, 0});
        if (r->m->kind == PP_OPK_NORM) {
            pp_measure_row_add_input(&row, 'w', 1, (const int64_t[]){H, 0, 0, 0});
            pp_measure_row_add_input(&row, 'w', 1, (const int64_t[]){H, 0, 0, 0});
            pp_measure_row_add_attr(&row, "axis", PP_ATTR_INT)->i = -1;
            pp_measure_row_add_attr(&row, "epsilon", PP_ATTR_FLOAT)->f = 1e-5;
        } else if (r->m->kind == PP_OPK_SOFTMAX) {
            pp_measure_row_add_attr(&row, "axis", PP_ATTR_INT)->i = -1;
        }
        break;
    }
    }
    row.line = rec->line;
    if (pp_measure_layer_table_add(r->t, &row, err) != PERFPRED_OK) return -1;
    r->n_added++;
    return 0;
}

perfpred_status pp_datasets_neusight_import(const char *root, const char *op, const char *gpu,
                                            pp_neusight_split split, pp_layer_table *t,
                                            int *n_added, pp_err *err)
{
    if (n_added) *n_added = 0;
    ns_read r;
    memset(&r, 0, sizeof r);
    r.m = find_op(op);
    if (!r.m) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "NeuSight: unknown operator '%s'", op);
    r.device = pp_datasets_neusight_device(gpu);
    if (!r.device)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "NeuSight: unknown GPU '%s'", gpu);
    pp_neusight_source src;
    perfpred_status st = pp_datasets_neusight_source(root, &src, err);
    if (st != PERFPRED_OK) return st;
    char rel[1024], path[4096];
    st = pp_datasets_neusight_path(op, gpu, split, rel, sizeof rel, err);
    if (st != PERFPRED_OK) return st;
    if (snprintf(path, sizeof path, "%s/%s", root, rel) >= (int)sizeof path)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", root);
    r.gpu = gpu;
    r.rel = rel;
    r.src = &src;
    r.split = split;
    r.t = t;
    st = pp_measure_csv_read(path, ns_record, &r, err);
    if (n_added) *n_added = r.n_added;
    return st;
}

perfpred_status pp_datasets_neusight_export_csv(const char *root, const char *gpu,
                                                const char *conv_gpu, pp_neusight_split split,
                                                const char *out_csv, int *n_rows, pp_err *err)
{
    if (n_rows) *n_rows = 0;
    pp_layer_table *t = pp_measure_layer_table_new("NeuSight import");
    if (!t) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; pp_datasets_neusight_ops[i] && st == PERFPRED_OK; i++) {
        const char *op = pp_datasets_neusight_ops[i];
        const op_map *m = find_op(op);
        if (split == PP_NEUSIGHT_TEST && !m->test_file) continue;
        const char *g = (m->fam == FAM_CONV && conv_gpu) ? conv_gpu : gpu;
        st = pp_datasets_neusight_import(root, op, g, split, t, NULL, err);
    }
    if (st == PERFPRED_OK) st = pp_measure_layer_csv_write(out_csv, t->rows, t->n, err);
    if (st == PERFPRED_OK && n_rows) *n_rows = t->n;
    pp_measure_layer_table_free(t);
    return st;
}
