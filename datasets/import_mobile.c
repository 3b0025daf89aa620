/* datasets/import_mobile.c: mobile-ml-benchmark's per-operation GPU latencies (Li, Paolieri,
 * Golubchik, EdgeSys 2024) as layer rows: TFLite GPU delegate ops (tflite_cnn_ops_gpu.csv) and
 * PyTorch Mobile Vulkan/Metal ops (torch_cnn_ops_gpu.csv), batch 1, fp16, one row per (op line,
 * phone). The `feature` column (a Python dict) gives the layer configuration; what it leaves open
 * (TFLite padding) is derived from the recorded output size, cross-checked against the recorded
 * FLOPS and tensor sizes; what it does not record at all makes the row not expressible. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/datasets.h"

#define MAX_DEVS 16
#define MAX_KEYS 16

typedef struct mb_file {
    const char *name;     /* file in the dataset folder */
    const char *runtime;  /* runtime column of its rows */
    int torch;
} mb_file;

static const mb_file mb_files[] = {
    {"tflite_cnn_ops_gpu.csv", "tflite-gpu", 0},
    {"torch_cnn_ops_gpu.csv", "pytorch-mobile-gpu", 1},
};

/* ------------------------------------------------------------ the feature dict ---- */

/* {'Input_shape': '224', 'Input_channel': 3, ...}: keys quoted, values quoted or bare. */
typedef struct feat_dict {
    int n;
    char key[MAX_KEYS][32];
    char val[MAX_KEYS][32];
} feat_dict;

static int parse_dict(const char *s, feat_dict *d, char *why, size_t why_n)
{
    d->n = 0;
    while (*s == ' ') s++;
    if (*s++ != '{') {
        snprintf(why, why_n, "feature is not a {...} dict");
        return -1;
    }
    while (*s == ' ') s++;
    if (*s == '}') return s[1] == '\0' ? 0 : (snprintf(why, why_n, "text after the dict"), -1);
    for (;;) {
        if (d->n == MAX_KEYS) {
            snprintf(why, why_n, "feature has more than %d keys", MAX_KEYS);
            return -1;
        }
        char *out[2] = {d->key[d->n], d->val[d->n]};
        for (int part = 0; part < 2; part++) {
            while (*s == ' ') s++;
            size_t k = 0;
            if (*s == '\'') {
                for (s++; *s && *s != '\''; s++)
                    if (k + 1 < 32) out[part][k++] = *s;
                if (*s != '\'') {
                    snprintf(why, why_n, "feature: unterminated quote");
                    return -1;
                }
                s++;
            } else if (part == 1) {
                for (; *s && *s != ',' && *s != '}' && *s != ' '; s++)
                    if (k + 1 < 32) out[part][k++] = *s;
            }
            out[part][k] = '\0';
            if (k == 0 && part == 0) {
                snprintf(why, why_n, "feature: a key is not a quoted name");
                return -1;
            }
            while (*s == ' ') s++;
            if (part == 0 && *s++ != ':') {
                snprintf(why, why_n, "feature: no ':' after '%s'", out[0]);
                return -1;
            }
        }
        for (int i = 0; i < d->n; i++)
            if (strcmp(d->key[i], d->key[d->n]) == 0) {
                snprintf(why, why_n, "feature: key '%s' twice", d->key[i]);
                return -1;
            }
        d->n++;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s == '}' && s[1] == '\0') return 0;
        snprintf(why, why_n, "feature: expected ',' or '}' after key '%s'", d->key[d->n - 1]);
        return -1;
    }
}

static const char *dict_get(const feat_dict *d, const char *key)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->key[i], key) == 0) return d->val[i];
    return NULL;
}

/* An integer >= lo under key; -1 with why filled when absent, "-" or not an integer. */
static int dict_int(const feat_dict *d, const char *key, int64_t lo, int64_t *out, char *why,
                    size_t why_n)
{
    const char *v = dict_get(d, key);
    if (!v) {
        snprintf(why, why_n, "feature lacks '%s'", key);
        return -1;
    }
    if (pp_parse_i64(v, out) != 0 || *out < lo) {
        snprintf(why, why_n, "feature '%s' = '%s' is not an integer >= %lld", key, v,
                 (long long)lo);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- row building ---- */



static void add_ints(pp_layer_row *row, const char *name, int n, const int64_t *v)
{
    pp_layer_attr *a = pp_measure_row_add_attr(row, name, PP_ATTR_INTS);
    a->n = n;
    for (int i = 0; i < n; i++) a->ints[i] = v[i];
}

/* Window attributes of a square KxK window, stride s, pads [b, b, e, e]. */
static void window(pp_layer_row *row, int64_t k, int64_t s, int64_t b, int64_t e)
{
    int64_t ks[2] = {k, k}, st[2] = {s, s}, pads[4] = {b, b, e, e};
    add_ints(row, "kernel_shape", 2, ks);
    add_ints(row, "strides", 2, st);
    add_ints(row, "pads", 4, pads);
}

/* A square conv on one C x H x H image: cout filters of K x K, stride S, pads b (begin) and e
 * (end), group groups, with a bias (both runtimes' rows have one); depthwise when group == C. */
static void conv_row(pp_layer_row *row, int64_t C, int64_t H, int64_t cout, int64_t group,
                     int64_t K, int64_t S, int64_t b, int64_t e)
{
    row->op_type = "Conv";
    row->kind = group > 1 && group == C ? PP_OPK_DWCONV : PP_OPK_CONV;
    pp_measure_row_add_input(row, 'x', 4, (const int64_t[]){1, C, H, H});
    pp_measure_row_add_input(row, 'w', 4, (const int64_t[]){cout, C / group, K, K});
    pp_measure_row_add_input(row, 'w', 1, (const int64_t[]){cout, 0, 0, 0});
    window(row, K, S, b, e);
    pp_measure_row_add_attr(row, "group", PP_ATTR_INT)->i = group;
}

/* A pooling window over one C x H x H image (type "MaxPool" or "AveragePool"). */
static void pool_row(pp_layer_row *row, const char *type, int64_t C, int64_t H, int64_t K,
                     int64_t S, int64_t b, int64_t e)
{
    row->op_type = type;
    row->kind = PP_OPK_POOL;
    pp_measure_row_add_input(row, 'x', 4, (const int64_t[]){1, C, H, H});
    window(row, K, S, b, e);
}

/* A fully connected layer of one row: C inputs, F outputs, with a bias. */
static void linear_row(pp_layer_row *row, int64_t C, int64_t F)
{
    row->op_type = "Gemm";
    row->kind = PP_OPK_LINEAR;
    pp_measure_row_add_input(row, 'x', 2, (const int64_t[]){1, C, 0, 0});
    pp_measure_row_add_input(row, 'w', 2, (const int64_t[]){F, C, 0, 0});
    pp_measure_row_add_input(row, 'w', 1, (const int64_t[]){F, 0, 0, 0});
    pp_measure_row_add_attr(row, "transB", PP_ATTR_INT)->i = 1;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* TFLite's two paddings, told apart by the recorded output size: VALID gives ceil((H - K + 1) / S),
 * SAME gives ceil(H / S) with max((O - 1) S + K - H, 0) padding, the odd one at the end. Where both
 * give O, VALID's (no padding) is the same as SAME's. -1 when neither gives O. */
static int tflite_pads(int64_t h, int64_t k, int64_t s, int64_t o, int64_t *b, int64_t *e)
{
    if (h >= k && o == ceil_div(h - k + 1, s)) {
        *b = *e = 0;
        return 0;
    }
    if (o == ceil_div(h, s)) {
        int64_t total = (o - 1) * s + k - h;
        if (total < 0) total = 0;
        *b = total / 2;
        *e = total - *b;
        return 0;
    }
    return -1;
}

/* Fills row's op from a TFLite line; 0 ok, -1 not expressible (why). *flops: the recorded FLOPS to
 * check against 2 x MACs (convolutions, FC) or window work (pools), -1 when nothing to check. */
static int tflite_row(const char *op, const feat_dict *d, pp_layer_row *row, int64_t *flops,
                      int *check, char *why, size_t why_n)
{
    int64_t H, C, O, S, K, F, G, b, e;
    *check = 0;
    *flops = -1;
    if (strcmp(op, "CONV_2D") == 0 || strcmp(op, "CONV_2D_GROUP") == 0 ||
        strcmp(op, "DEPTHWISE_CONV_2D") == 0) {
        int dw = op[0] == 'D';
        if (dict_int(d, "Input_shape", 1, &H, why, why_n) ||
            dict_int(d, "Input_channel", 1, &C, why, why_n) ||
            dict_int(d, "Output_shape", 1, &O, why, why_n) ||
            dict_int(d, "Stride", 1, &S, why, why_n) || dict_int(d, "Kernel", 1, &K, why, why_n) ||
            dict_int(d, "Filter", 1, &F, why, why_n) || dict_int(d, "Group", 1, &G, why, why_n) ||
            dict_int(d, "FLOPS", 1, flops, why, why_n))
            return -1;
        /* depthwise: Filter is the depth multiplier; otherwise the output channels */
        int64_t cout = dw ? C * F : F, group = dw ? C : G;
        if (C % group != 0 || cout % group != 0) {
            snprintf(why, why_n, "%lld groups do not divide %lld input and %lld output channels",
                     (long long)group, (long long)C, (long long)cout);
            return -1;
        }
        if (tflite_pads(H, K, S, O, &b, &e) != 0) {
            snprintf(why, why_n, "output size %lld is neither VALID nor SAME padding of %lld by a "
                     "%lld kernel at stride %lld", (long long)O, (long long)H, (long long)K,
                     (long long)S);
            return -1;
        }
        conv_row(row, C, H, cout, group, K, S, b, e);
        *check = 1; /* FLOPS = 2 x MACs */
        return 0;
    }
    if (strcmp(op, "MAX_POOL_2D") == 0 || strcmp(op, "AVERAGE_POOL_2D") == 0) {
        if (dict_int(d, "Input_shape", 1, &H, why, why_n) ||
            dict_int(d, "Input_channel", 1, &C, why, why_n) ||
            dict_int(d, "Output_shape", 1, &O, why, why_n) ||
            dict_int(d, "Stride", 1, &S, why, why_n) || dict_int(d, "Kernel", 1, &K, why, why_n) ||
            dict_int(d, "FLOPS", 1, flops, why, why_n))
            return -1;
        if (tflite_pads(H, K, S, O, &b, &e) != 0) {
            snprintf(why, why_n, "output size %lld is neither VALID nor SAME padding of %lld by a "
                     "%lld window at stride %lld", (long long)O, (long long)H, (long long)K,
                     (long long)S);
            return -1;
        }
        pool_row(row, op[0] == 'M' ? "MaxPool" : "AveragePool", C, H, K, S, b, e);
        /* TFLite averages over the valid cells only: ONNX count_include_pad = 0, the default */
        *check = 2; /* FLOPS = O^2 C K^2 */
        return 0;
    }
    if (strcmp(op, "MEAN") == 0) {
        if (dict_int(d, "Input_shape", 1, &H, why, why_n) ||
            dict_int(d, "Input_channel", 1, &C, why, why_n) ||
            dict_int(d, "Output_shape", 1, &O, why, why_n) ||
            dict_int(d, "FLOPS", 1, flops, why, why_n))
            return -1;
        if (O != C) {
            snprintf(why, why_n, "MEAN to %lld values of %lld channels is not a spatial mean",
                     (long long)O, (long long)C);
            return -1;
        }
        /* the mean over H and W of every channel: GlobalAveragePool's work and bytes */
        row->op_type = "GlobalAveragePool";
        row->kind = PP_OPK_GLOBALPOOL;
        pp_measure_row_add_input(row, 'x', 4, (const int64_t[]){1, C, H, H});
        *check = 3; /* FLOPS = H^2 C */
        return 0;
    }
    if (strcmp(op, "FULLY_CONNECTED") == 0) {
        if (dict_int(d, "Input_channel", 1, &C, why, why_n) ||
            dict_int(d, "Filter", 1, &F, why, why_n) || dict_int(d, "FLOPS", 1, flops, why, why_n))
            return -1;
        linear_row(row, C, F);
        *check = 1;
        return 0;
    }
    if (strcmp(op, "CONCATENATION") == 0) {
        snprintf(why, why_n, "CONCATENATION: the feature gives the first input's channels and the "
                 "total, not how the channels split among the inputs");
        return -1;
    }
    snprintf(why, why_n, "TFLite op '%s' is not one this importer maps", op);
    return -1;
}

/* A Vulkan prepacked convolution: its groups from the weight's recorded size, and every recorded
 * size checked against the shape; 0 ok, -1 not expressible (why). */
static int torch_conv_row(const feat_dict *d, pp_layer_row *row, char *why, size_t why_n)
{
    int64_t C, H, F, O, K, S, P, G, v;
    int64_t fsize, insz, outsz, flops;
    if (dict_int(d, "input_channel", 1, &C, why, why_n) ||
        dict_int(d, "input_shape", 1, &H, why, why_n) ||
        dict_int(d, "output_channel", 1, &F, why, why_n) ||
        dict_int(d, "output_shape", 1, &O, why, why_n) ||
        dict_int(d, "kernel_size", 1, &K, why, why_n) ||
        dict_int(d, "stride", 1, &S, why, why_n) || dict_int(d, "padding", 0, &P, why, why_n) ||
        dict_int(d, "filter_size", 1, &fsize, why, why_n) ||
        dict_int(d, "input_size", 1, &insz, why, why_n) ||
        dict_int(d, "output_size", 1, &outsz, why, why_n) ||
        dict_int(d, "flops", 1, &flops, why, why_n))
        return -1;
    /* groups from the weight's size (F x C/G x K x K); where recorded, they must agree */
    if ((F * C * K * K) % fsize != 0) {
        snprintf(why, why_n, "filter_size %lld does not divide %lld x %lld x %lld x %lld",
                 (long long)fsize, (long long)F, (long long)C, (long long)K, (long long)K);
        return -1;
    }
    G = F * C * K * K / fsize;
    if (dict_get(d, "groups")) {
        if (dict_int(d, "groups", 1, &v, why, why_n)) return -1;
        if (v != G) {
            snprintf(why, why_n, "groups %lld, but filter_size %lld says %lld", (long long)v,
                     (long long)fsize, (long long)G);
            return -1;
        }
    }
    if (C % G || F % G) {
        snprintf(why, why_n, "%lld groups do not divide %lld and %lld channels", (long long)G,
                 (long long)C, (long long)F);
        return -1;
    }
    if (H + 2 * P < K || O != (H + 2 * P - K) / S + 1 || insz != C * H * H ||
        outsz != F * O * O || flops != O * O * F * (C / G) * K * K) {
        snprintf(why, why_n, "sizes disagree: output %lld, input_size %lld, output_size %lld, "
                 "flops %lld for %lldx%lld input, %lld channels, %lld filters %lldx%lld, "
                 "stride %lld, padding %lld, %lld groups", (long long)O, (long long)insz,
                 (long long)outsz, (long long)flops, (long long)H, (long long)H, (long long)C,
                 (long long)F, (long long)K, (long long)K, (long long)S, (long long)P,
                 (long long)G);
        return -1;
    }
    conv_row(row, C, H, F, G, K, S, P, P); /* the prepacked context always holds a bias */
    return 0;
}

/* aten::max_pool2d, or avg_pool2d where the kernel is recorded, its recorded sizes checked
 * against the shape; 0 ok, -1 not expressible (why). */
static int torch_pool_row(const char *op, const feat_dict *d, pp_layer_row *row, char *why,
                          size_t why_n)
{
    int64_t C, H, O, K, S, P, insz, outsz;
    if (dict_int(d, "input_channel", 1, &C, why, why_n) ||
        dict_int(d, "input_shape", 1, &H, why, why_n) ||
        dict_int(d, "output_shape", 1, &O, why, why_n) ||
        dict_int(d, "kernel_size", 1, &K, why, why_n) ||
        dict_int(d, "stride", 1, &S, why, why_n) || dict_int(d, "padding", 0, &P, why, why_n) ||
        dict_int(d, "input_size", 1, &insz, why, why_n) ||
        dict_int(d, "output_size", 1, &outsz, why, why_n))
        return -1;
    if (H + 2 * P < K || insz != C * H * H || outsz != C * O * O) {
        snprintf(why, why_n, "input_size %lld / output_size %lld disagree with %lld channels "
                 "%lldx%lld -> %lldx%lld", (long long)insz, (long long)outsz, (long long)C,
                 (long long)H, (long long)H, (long long)O, (long long)O);
        return -1;
    }
    /* the recorded output size tells floor from ceil mode */
    int64_t fl = (H + 2 * P - K) / S + 1, ce = ceil_div(H + 2 * P - K, S) + 1;
    int ceil_mode;
    if (O == fl) ceil_mode = 0;
    else if (O == ce) ceil_mode = 1;
    else {
        snprintf(why, why_n, "output size %lld is neither floor nor ceil mode of %lld by %lld "
                 "at stride %lld, padding %lld", (long long)O, (long long)H, (long long)K,
                 (long long)S, (long long)P);
        return -1;
    }
    pool_row(row, op[5] == 'm' ? "MaxPool" : "AveragePool", C, H, K, S, P, P);
    if (ceil_mode) pp_measure_row_add_attr(row, "ceil_mode", PP_ATTR_INT)->i = 1;
    return 0;
}

/* Fills row's op from a PyTorch Mobile line; 0 ok, -1 not expressible (why). */
static int torch_row(const char *op, const feat_dict *d, pp_layer_row *row, char *why,
                     size_t why_n)
{
    int64_t C, H, F;
    if (strcmp(op, "vulkan_prepack::run_conv2d_context") == 0)
        return torch_conv_row(d, row, why, why_n);
    if (strcmp(op, "vulkan_prepack::run_linear_context") == 0) {
        int64_t flops;
        if (dict_int(d, "input_shape", 1, &C, why, why_n) ||
            dict_int(d, "output_shape", 1, &F, why, why_n) ||
            dict_int(d, "flops", 1, &flops, why, why_n))
            return -1;
        if (flops != (2 * C - 1) * F) { /* the profiler counts (2 in - 1) out */
            snprintf(why, why_n, "flops %lld is not (2 x %lld - 1) x %lld", (long long)flops,
                     (long long)C, (long long)F);
            return -1;
        }
        linear_row(row, C, F);
        return 0;
    }
    if (strcmp(op, "aten::max_pool2d") == 0 ||
        (strcmp(op, "aten::avg_pool2d") == 0 && dict_get(d, "kernel_size")))
        return torch_pool_row(op, d, row, why, why_n);
    if (strcmp(op, "aten::avg_pool2d") == 0 || strcmp(op, "aten::adaptive_avg_pool2d") == 0) {
        snprintf(why, why_n, "%s: the feature records neither kernel nor output size", op);
        return -1;
    }
    if (strcmp(op, "vulkan_prepack::run_batchnorm_context") == 0) {
        int64_t insz;
        if (dict_int(d, "input_channel", 1, &C, why, why_n) ||
            dict_int(d, "input_shape", 1, &H, why, why_n) ||
            dict_int(d, "input_size", 1, &insz, why, why_n))
            return -1;
        if (insz != C * H * H) {
            snprintf(why, why_n, "input_size %lld is not %lld x %lld x %lld", (long long)insz,
                     (long long)C, (long long)H, (long long)H);
            return -1;
        }
        row->op_type = "BatchNormalization";
        row->kind = PP_OPK_NORM;
        pp_measure_row_add_input(row, 'x', 4, (const int64_t[]){1, C, H, H});
        for (int i = 0; i < 4; i++)
            pp_measure_row_add_input(row, 'w', 1, (const int64_t[]){C, 0, 0, 0});
        return 0;
    }
    static const struct {
        const char *aten, *onnx;
    } unary[] = {{"aten::relu", "Relu"}, {"aten::sigmoid", "Sigmoid"},
                 {"aten::hardswish", "HardSwish"}};
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        if (strcmp(op, unary[i].aten) != 0) continue;
        int64_t flops;
        if (dict_int(d, "input_channel", 1, &C, why, why_n) ||
            dict_int(d, "input_shape", 1, &H, why, why_n) ||
            dict_int(d, "flops", 1, &flops, why, why_n))
            return -1;
        if (flops != C * H * H) {
            snprintf(why, why_n, "flops %lld is not %lld x %lld x %lld", (long long)flops,
                     (long long)C, (long long)H, (long long)H);
            return -1;
        }
        row->op_type = unary[i].onnx;
        row->kind = PP_OPK_ELEMWISE;
        pp_measure_row_add_input(row, 'x', 4, (const int64_t[]){1, C, H, H});
        return 0;
    }
    if (strcmp(op, "aten::add") == 0 || strcmp(op, "aten::mul") == 0) {
        snprintf(why, why_n, "%s: the second operand's shape is not recorded (a same-shape "
                 "residual or a broadcast scale)", op);
        return -1;
    }
    if (strcmp(op, "aten::clamp") == 0) {
        snprintf(why, why_n, "aten::clamp: the bounds are not recorded");
        return -1;
    }
    snprintf(why, why_n, "PyTorch op '%s' is not one this importer maps", op);
    return -1;
}

/* ------------------------------------------------------------------ the CSV files ---- */

typedef struct mb_dev {
    char name[32];            /* the column's device ("pixel4") */
    const char *device;       /* perfpred name, NULL without a descriptor */
    int col_lat, col_kernel;  /* -1 when absent */
    int keep;                 /* passes the filter */
} mb_dev;

typedef struct mb_read {
    const mb_file *f;
    const char *rel;          /* "dataset/<file>" for sources */
    const char *commit, *date;
    const pp_device_db *db;
    const pp_import_filter *filter;
    pp_layer_table *t;
    pp_import_report *rep;
    int col_model, col_op, col_feat;
    int n_devs;
    mb_dev devs[MAX_DEVS];
    int n_header;
} mb_read;

static int mb_header(mb_read *r, const pp_csv_record *rec, pp_err *err)
{
    r->col_model = r->col_op = r->col_feat = -1;
    r->n_header = rec->n_fields;
    for (int c = 0; c < rec->n_fields; c++) {
        const char *h = rec->fields[c];
        if (strcmp(h, "model") == 0) r->col_model = c;
        else if (strcmp(h, "operation") == 0) r->col_op = c;
        else if (strcmp(h, "feature") == 0) r->col_feat = c;
        else {
            const char *bar = strchr(h, '|');
            size_t n = bar ? (size_t)(bar - h) : 0;
            int is_lat = bar && strcmp(bar, "|gpu|float") == 0;
            int is_kernel = bar && strcmp(bar, "|gpu|kernel") == 0;
            if (!is_lat && !is_kernel) {
                pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: unknown column '%s' (want model, "
                           "operation, feature, <device>|gpu|float, <device>|gpu|kernel)",
                           rec->path, rec->line, h);
                return -1;
            }
            if (n == 0 || n >= sizeof r->devs[0].name) {
                pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: column '%s' names no device",
                           rec->path, rec->line, h);
                return -1;
            }
            int i;
            for (i = 0; i < r->n_devs; i++)
                if (strlen(r->devs[i].name) == n && strncmp(r->devs[i].name, h, n) == 0) break;
            if (i == r->n_devs) {
                if (r->n_devs == MAX_DEVS) {
                    pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: more than %d devices", rec->path,
                               rec->line, MAX_DEVS);
                    return -1;
                }
                mb_dev *d = &r->devs[r->n_devs++];
                memset(d, 0, sizeof *d);
                memcpy(d->name, h, n);
                d->col_lat = d->col_kernel = -1;
            }
            int *slot = is_lat ? &r->devs[i].col_lat : &r->devs[i].col_kernel;
            if (*slot >= 0) {
                pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: column '%s' appears twice", rec->path,
                           rec->line, h);
                return -1;
            }
            *slot = c;
        }
    }
    if (r->col_model < 0 || r->col_op < 0 || r->col_feat < 0) {
        pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: the header lacks model, operation or feature",
                   rec->path, rec->line);
        return -1;
    }
    for (int i = 0; i < r->n_devs; i++) {
        mb_dev *d = &r->devs[i];
        if (d->col_lat < 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: device %s has a kernel column but no "
                       "latency column", rec->path, rec->line, d->name);
            return -1;
        }
        /* the phones' GPU descriptors are "<dev>-gpu" or carry it as an alias */
        char look[48];
        snprintf(look, sizeof look, "%s-gpu", d->name);
        const pp_device *dev = pp_devices_find(r->db, look);
        d->device = dev ? dev->name : NULL;
        if (!dev) {
            pp_datasets_import_note(r->rep, "dataset/%s: device '%s' has no descriptor '%s' in "
                                    "configs/devices: its column is not imported", r->f->name, d->name,
                                    look);
            continue;
        }
        d->keep = (!r->filter->device || strcmp(r->filter->device, dev->name) == 0) &&
                  (!r->filter->runtime || strcmp(r->filter->runtime, r->f->runtime) == 0);
    }
    return 0;
}

static int mb_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    mb_read *r = user;
    if (is_header) return mb_header(r, rec, err);
    int n_keep = 0;
    for (int i = 0; i < r->n_devs; i++) {
        if (!r->devs[i].device) continue;
        if (r->devs[i].keep) n_keep++;
        else r->rep->n_filtered++;
    }
    if (n_keep == 0) return 0;
    char why[512] = "";
    int bad = 0;
    if (rec->n_fields != r->n_header) {
        snprintf(why, sizeof why, "%d fields, the header has %d", rec->n_fields, r->n_header);
        bad = 1;
    }
    const char *op = bad ? "" : rec->fields[r->col_op], *model = bad ? "" : rec->fields[r->col_model];
    feat_dict d;
    pp_layer_row base;
    memset(&base, 0, sizeof base);
    int64_t flops = -1;
    int check = 0;
    if (!bad && parse_dict(rec->fields[r->col_feat], &d, why, sizeof why) != 0) bad = 1;
    if (!bad) {
        int rc = r->f->torch ? torch_row(op, &d, &base, why, sizeof why)
                             : tflite_row(op, &d, &base, &flops, &check, why, sizeof why);
        bad = rc != 0;
    }
    pp_node_feat feat;
    if (!bad) {
        base.device = "check";
        base.runtime = r->f->runtime;
        base.runtime_version = "";
        base.precision = PP_PREC_FP16;
        base.batch = 1;
        base.source = "row";
        base.date = r->date;
        base.latency_ms = 1;
        if (pp_datasets_check_row(&base, &feat, why, sizeof why) != 0) bad = 1;
    }
    if (!bad && check) {
        /* the recorded FLOPS against graph/'s count of the rebuilt node */
        const int64_t *x = base.inputs[0].dims;
        double want = check == 1 ? 2.0 * feat.macs
                    : check == 2 ? (double)feat.out_elems * (double)base.attrs[0].ints[0] *
                                       (double)base.attrs[0].ints[1]
                                 : (double)x[1] * (double)x[2] * (double)x[3];
        if ((double)flops != want) {
            snprintf(why, sizeof why, "FLOPS %lld disagree with the configuration's %.0f",
                     (long long)flops, want);
            bad = 1;
        }
    }
    for (int i = 0; i < r->n_devs; i++) {
        const mb_dev *dv = &r->devs[i];
        if (!dv->device || !dv->keep) continue;
        if (bad) {
            pp_datasets_import_bad(r->rep, r->t, dv->device, dv->name, rec->path, rec->line,
                                   "%s: %s", dv->name, why);
            continue;
        }
        const char *ls = rec->fields[dv->col_lat];
        double us;
        if (!*ls) {
            pp_datasets_import_bad(r->rep, r->t, dv->device, dv->name, rec->path, rec->line,
                                   "%s: no latency", dv->name);
            continue;
        }
        if (pp_parse_double(ls, &us) != 0 || !(us > 0)) {
            pp_datasets_import_bad(r->rep, r->t, dv->device, dv->name, rec->path, rec->line,
                                   "%s: latency '%s' is not a finite number > 0", dv->name, ls);
            continue;
        }
        pp_layer_row row = base;
        char source[1024];
        int k = snprintf(source, sizeof source, "mobile-ml-benchmark@%.7s:%s:%d;model=%s",
                         r->commit, r->rel, rec->line, model);
        if (dv->col_kernel >= 0 && *rec->fields[dv->col_kernel] && k > 0 &&
            (size_t)k < sizeof source)
            snprintf(source + k, sizeof source - (size_t)k, ";kernel=%s",
                     rec->fields[dv->col_kernel]);
        row.device = dv->device;
        row.latency_ms = us / 1000.0; /* the dataset's latencies are microseconds */
        row.latency_spread_ms = NAN;
        row.repetitions = -1;
        row.energy_j = NAN;
        row.memory_bytes = -1;
        row.source = source;
        row.line = rec->line;
        if (pp_measure_layer_table_add(r->t, &row, err) != PERFPRED_OK) return -1;
        r->rep->n_rows++;
        pp_datasets_import_device(r->rep, dv->device, dv->name)->n_rows++;
    }
    return 0;
}

perfpred_status pp_datasets_mobile_import(const char *root, const pp_device_db *db,
                                          const pp_import_filter *filter, pp_layer_table *t,
                                          pp_import_report *rep, pp_err *err)
{
    char commit[41], date[11];
    perfpred_status st = pp_datasets_source_commit(root, "Commit used: ", commit, date, err);
    if (st != PERFPRED_OK) return st;
    int found = 0;
    for (size_t i = 0; i < sizeof mb_files / sizeof mb_files[0]; i++) {
        char path[4096], rel[256];
        snprintf(path, sizeof path, "%s/%s", root, mb_files[i].name);
        if (access(path, R_OK) != 0) continue;
        found++;
        snprintf(rel, sizeof rel, "dataset/%s", mb_files[i].name);
        mb_read *r = calloc(1, sizeof *r);
        if (!r) return pp_err_set(err, PERFPRED_ERR_NOMEM, "import: out of memory");
        r->f = &mb_files[i];
        r->rel = rel;
        r->commit = commit;
        r->date = date;
        r->db = db;
        r->filter = filter;
        r->t = t;
        r->rep = rep;
        st = pp_measure_csv_read(path, mb_record, r, err);
        free(r);
        if (st != PERFPRED_OK) return st;
        rep->n_files++;
    }
    if (!found)
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: neither tflite_cnn_ops_gpu.csv nor "
                          "torch_cnn_ops_gpu.csv is there", root);
    return PERFPRED_OK;
}
