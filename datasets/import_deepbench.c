/* datasets/import_deepbench.c: Baidu DeepBench's kernel sheets (CSV per sheet, layout as in the
 * workbook) as layer rows: dense GEMM -> Gemm (activation A, weight B; M, N, K and transposes as
 * DeepBench states them), convolution forward -> Conv (NCHW, no bias). Sections are found by their
 * title cell, columns by their header text; precision per file, times in ms. Sparse GEMM, RNN and
 * all-reduce sections are not layers of a model and are passed over. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/datasets.h"

/* The result sheets of the snapshot (SOURCE.md). lookup is the name (or alias) of the descriptor
 * looked up in configs/devices; precision_line is the sheet's own "Precision" cell, checked so that
 * a changed sheet is not imported under a stale precision. date: the workbook's last save
 * (docProps/core.xml dcterms:modified), the closest the snapshot comes to a measurement date. */
typedef struct db_file {
    const char *rel;            /* under csv/results/ */
    const char *name;           /* DeepBench's name for the device */
    const char *lookup;
    const char *precision_line; /* NULL: the sheet has no Precision row */
    pp_precision gemm_prec, conv_prec;
    const char *skip;           /* not importable: why */
    int old_commit;             /* taken from the earlier commit SOURCE.md names (Jetson TX1) */
    const char *date;
} db_file;

#define INT8_SERVER "GEMM, Conv: Int8 multiplication, 32 bit accumulation"
#define INT8_DEVICE "Int8 inputs 32 bit math"
#define FP16_MIXED "16 bit inputs, 16 bit multiplication, 32 bit addition"
#define PSEUDO_FP16 "16 bit inputs, 32 bit multiplication, 32 bit addition"

static const db_file db_files[] = {
    {"DeepBench_NV_Jetson_TX1__Results.csv", "Jetson TX1", "jetson-tx1", NULL, PP_PREC_FP32,
     PP_PREC_FP32, NULL, 1, "2017-01-17"},
    {"inference/DeepBench_NV_T4__Results_-_Mixed_Precision.csv", "Tesla T4", "t4", INT8_SERVER,
     PP_PREC_INT8, PP_PREC_INT8, NULL, 0, "2019-10-07"},
    /* the sheet: "Convolution results are still in float, since int8 isn't supported" */
    {"inference/device/DeepBench_Raspberry_Pi_3__Kernels.csv", "Raspberry Pi 3", "rpi3",
     INT8_DEVICE, PP_PREC_INT8, PP_PREC_FP32, NULL, 0, "2017-07-14"},
    {"inference/device/DeepBench_iPhone_6__Kernels.csv", "iPhone 6", "iphone6", INT8_DEVICE,
     PP_PREC_INT8, PP_PREC_INT8, NULL, 0, "2017-07-14"},
    {"inference/device/DeepBench_iPhone_7__Kernels.csv", "iPhone 7", "iphone7", INT8_DEVICE,
     PP_PREC_INT8, PP_PREC_INT8, NULL, 0, "2017-07-14"},
    {"inference/server/DeepBench_NV_1080Ti__Results_-_Mixed_Precision.csv", "GTX 1080 Ti",
     "1080ti", INT8_SERVER, PP_PREC_INT8, PP_PREC_INT8, NULL, 0, "2017-11-10"},
    {"inference/server/DeepBench_NV_TitanX_Pascal__Results_-_Mixed_Precision.csv",
     "Titan X Pascal", "titan-x-pascal", INT8_SERVER, PP_PREC_INT8, PP_PREC_INT8, NULL, 0,
     "2017-11-10"},
    {"inference/server/DeepBench_NV_TitanXp__Results_-_Mixed_Precision.csv", "Titan Xp", "titanxp",
     INT8_SERVER, PP_PREC_INT8, PP_PREC_INT8, NULL, 0, "2017-11-10"},
    {"train/DeepBench_AMD_MI25__Results_FP32.csv", "AMD Radeon Instinct MI25", "mi25", "Float",
     PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2018-04-04"},
    {"train/DeepBench_AMD_VegaFE__Results_FP32.csv", "AMD Vega Frontier Edition", "vega-fe",
     "Float", PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2018-04-04"},
    {"train/DeepBench_IA_KNL7250__Results_-_FP32.csv", "Intel Xeon Phi 7250", "xeon-phi-7250",
     "Float", PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2017-12-07"},
    {"train/DeepBench_NV_1080Ti__Results_-_FP32.csv", "GTX 1080 Ti", "1080ti", "Float",
     PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2018-05-21"},
    {"train/DeepBench_NV_M40__Results_-_FP32.csv", "Tesla M40", "m40", "Float", PP_PREC_FP32,
     PP_PREC_FP32, NULL, 0, "2018-05-21"},
    {"train/DeepBench_NV_P100__Results_-_Psuedo_FP16.csv", "Tesla P100", "p100-pcie-16gb",
     PSEUDO_FP16, PP_PREC_FP16, PP_PREC_FP16,
     "fp16 tensors with fp32 math (\"pseudo FP16\"): a layer row's precision is fp32 (float32 "
     "tensors) or fp16 (fp16 math), neither is this", 0, "2018-05-21"},
    {"train/DeepBench_NV_P100__Results_FP32.csv", "Tesla P100", "p100-pcie-16gb", "Float",
     PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2018-05-21"},
    {"train/DeepBench_NV_T4__Results_-_FP16_ip_Mixed_math.csv", "Tesla T4", "t4", FP16_MIXED,
     PP_PREC_FP16, PP_PREC_FP16, NULL, 0, "2019-10-07"},
    {"train/DeepBench_NV_T4__Results_FP32.csv", "Tesla T4", "t4", "Float", PP_PREC_FP32,
     PP_PREC_FP32, NULL, 0, "2019-10-07"},
    {"train/DeepBench_NV_TitanX_Pascal__Results_-_FP32.csv", "Titan X Pascal", "titan-x-pascal",
     "Float", PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2018-05-23"},
    /* "TitanX" (CUDA 7.5) is the Maxwell card; the Pascal one has its own sheet */
    {"train/DeepBench_NV_TitanX__Results_-_FP32.csv", "Titan X (Maxwell)", "titanx-maxwell",
     "Float", PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2018-05-21"},
    {"train/DeepBench_NV_TitanXp__FP32.csv", "Titan Xp", "titanxp", "Float", PP_PREC_FP32,
     PP_PREC_FP32, NULL, 0, "2018-05-21"},
    /* a DGX-1 (SXM2); the Specs sheet does not say 16 or 32 GB, which differ in nothing else */
    {"train/DeepBench_NV_V100__Results_-_FP16_ip_Mixed_math.csv", "Tesla V100 (DGX-1)",
     "v100-sxm2-16gb", FP16_MIXED, PP_PREC_FP16, PP_PREC_FP16, NULL, 0, "2019-10-07"},
    {"train/DeepBench_NV_V100__Results_FP32.csv", "Tesla V100 (DGX-1)", "v100-sxm2-16gb", "Float",
     PP_PREC_FP32, PP_PREC_FP32, NULL, 0, "2019-10-07"},
};
#define N_DB_FILES (sizeof db_files / sizeof db_files[0])

/* ---------------------------------------------------------------------- headers ---- */

/* Header text without its parenthesised part, trimmed, lowercase, single spaces:
 * "K  (number of filters)" -> "k", "Horizontal Stride" -> "horizontal stride". */
static void norm_name(const char *s, char *out, size_t n)
{
    size_t k = 0;
    int space = 0;
    for (; *s && *s != '(' && k + 1 < n; s++) {
        if (isspace((unsigned char)*s)) {
            space = k > 0;
            continue;
        }
        if (space && k + 2 < n) out[k++] = ' ';
        space = 0;
        out[k++] = (char)tolower((unsigned char)*s);
    }
    out[k] = '\0';
}

enum { G_M, G_N, G_K, G_TA, G_TB, G_TIME, G_PADDED, G__COUNT };
static const char *const gemm_cols[G__COUNT] = {"m", "n", "k", "a transpose", "b transpose", "time",
                                                "padded kernels"};
enum {
    C_W, C_H, C_C, C_N, C_K, C_S, C_R, C_PADW, C_PADH, C_STRW, C_STRH, C_FWD, C_P, C_Q, C_PADDED,
    C_ALGO, C__COUNT
};
static const char *const conv_cols[C__COUNT] = {
    "w", "h", "c", "n", "k", "s", "r", "pad_w", "pad_h", "horizontal stride", "vertical stride",
    "forward", "p", "q", "padded kernels", "forward algorithm"};
#define G_REQUIRED 6   /* the first six */
#define C_REQUIRED 12  /* the first twelve */

#define MAX_COLS 64

typedef enum section { SEC_NONE, SEC_GEMM, SEC_CONV_HEADER, SEC_CONV, SEC_OTHER } section;

typedef struct db_read {
    const db_file *f;
    const char *device;        /* perfpred name */
    const char *rel;           /* "csv/results/<rel>" for sources */
    const char *path;
    const char *version;       /* runtime_version from the Specs sheet */
    const char *commit;
    int filtered;              /* count rows only */
    int seen_precision;
    section sec;
    int col[C__COUNT];         /* column of each field (GEMM uses the first G__COUNT), -1 absent */
    int labelled[MAX_COLS];    /* header cell non-empty */
    int n_header;
    int time_in_ms;            /* the time column's header names msec */
    pp_layer_table *t;
    pp_import_report *rep;
} db_read;

static int map_header(db_read *r, const pp_csv_record *rec, int conv, pp_err *err)
{
    const char *const *names = conv ? conv_cols : gemm_cols;
    int n = conv ? C__COUNT : G__COUNT, required = conv ? C_REQUIRED : G_REQUIRED;
    int time_col = conv ? C_FWD : G_TIME;
    for (int i = 0; i < C__COUNT; i++) r->col[i] = -1;
    memset(r->labelled, 0, sizeof r->labelled);
    r->n_header = rec->n_fields;
    r->time_in_ms = 0;
    for (int c = 2; c < rec->n_fields && c < MAX_COLS; c++) {
        char nm[64];
        norm_name(rec->fields[c], nm, sizeof nm);
        r->labelled[c] = nm[0] != '\0';
        for (int i = 0; i < n; i++) {
            if (strcmp(nm, names[i]) != 0) continue;
            if (r->col[i] >= 0) {
                pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: column '%s' appears twice", rec->path,
                           rec->line, names[i]);
                return -1;
            }
            r->col[i] = c;
            if (i == time_col) r->time_in_ms = strstr(rec->fields[c], "msec") != NULL;
        }
    }
    for (int i = 0; i < required; i++)
        if (r->col[i] < 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: the %s header lacks column '%s'",
                       rec->path, rec->line, conv ? "convolution" : "GEMM", names[i]);
            return -1;
        }
    return 0;
}

/* ------------------------------------------------------------------------- rows ---- */

static const char *field(const pp_csv_record *rec, int c)
{
    return c >= 0 && c < rec->n_fields ? rec->fields[c] : "";
}



static void add_ints(pp_layer_row *row, const char *name, int n, const int64_t *v)
{
    pp_layer_attr *a = pp_measure_row_add_attr(row, name, PP_ATTR_INTS);
    a->n = n;
    for (int i = 0; i < n; i++) a->ints[i] = v[i];
}

#define BAD(...)                                                                             \
    do {                                                                                     \
        pp_datasets_import_bad(r->rep, r->t, r->device, r->f->name, rec->path, rec->line, \
                               __VA_ARGS__);                                                 \
        return 0;                                                                            \
    } while (0)

/* One GEMM or convolution line. 0 (the line is handled, bad or not), -1 fatal (err set). */
static int data_row(db_read *r, const pp_csv_record *rec, int conv, pp_err *err)
{
    static const int gemm_keys[] = {G_M, G_N, G_K};
    static const int conv_keys[] = {C_W, C_H, C_C, C_N, C_K, C_S, C_R};
    const int *keys = conv ? conv_keys : gemm_keys;
    int n_keys = conv ? 7 : 3, n_key_cells = 0, any = 0;
    for (int i = 0; i < n_keys; i++) n_key_cells += field(rec, r->col[keys[i]])[0] != '\0';
    for (int c = 0; c < rec->n_fields; c++) any |= rec->fields[c][0] != '\0';
    if (n_key_cells < 2) { /* a note ("* = The backward pass ...") or a stray cell, no kernel */
        if (any) r->rep->n_ignored++;
        return 0;
    }
    if (r->filtered) {
        r->rep->n_filtered++;
        return 0;
    }
    for (int c = 2; c < rec->n_fields; c++)
        if (rec->fields[c][0] && (c >= MAX_COLS || c >= r->n_header || !r->labelled[c]))
            BAD("a note in an unlabelled column: '%s'", rec->fields[c]);
    int64_t v[C__COUNT];
    const int *need = conv ? (const int[]){C_W, C_H, C_C, C_N, C_K, C_S, C_R, C_PADW, C_PADH,
                                           C_STRW, C_STRH}
                           : (const int[]){G_M, G_N, G_K};
    int n_need = conv ? 11 : 3;
    const char *const *names = conv ? conv_cols : gemm_cols;
    for (int i = 0; i < n_need; i++) {
        const char *s = field(rec, r->col[need[i]]);
        int is_pad = conv && (need[i] == C_PADW || need[i] == C_PADH);
        if (!*s) BAD("%s is empty", names[need[i]]);
        if (pp_parse_i64(s, &v[need[i]]) != 0 || v[need[i]] < (is_pad ? 0 : 1))
            BAD("%s '%s' is not an integer >= %d", names[need[i]], s, is_pad ? 0 : 1);
    }
    int padded_col = r->col[conv ? C_PADDED : G_PADDED];
    if (padded_col >= 0) {
        const char *s = field(rec, padded_col);
        if (strcmp(s, "1") == 0)
            BAD("DeepBench padded this kernel (Padded Kernels = 1): the shapes it ran are not "
                "recorded");
        if (strcmp(s, "0") != 0) BAD("Padded Kernels '%s' is neither 0 nor 1", s);
    }
    const char *ts = field(rec, r->col[conv ? C_FWD : G_TIME]);
    double ms;
    if (!*ts) BAD("no %s time", conv ? "forward" : "GEMM");
    if (pp_parse_double(ts, &ms) != 0 || !(ms > 0))
        BAD("time '%s' is not a finite number > 0", ts);
    if (!r->time_in_ms) BAD("the time column's header states no unit");

    pp_layer_row row;
    memset(&row, 0, sizeof row);
    char source[1024];
    int k = snprintf(source, sizeof source, "deepbench@%.7s:%s:%d", r->commit, r->rel, rec->line);
    const char *app = field(rec, 1), *algo = conv ? field(rec, r->col[C_ALGO]) : "";
    if (*app && k > 0 && (size_t)k < sizeof source)
        k += snprintf(source + k, sizeof source - (size_t)k, ";app=%s", app);
    if (*algo && k > 0 && (size_t)k < sizeof source)
        snprintf(source + k, sizeof source - (size_t)k, ";algo=%s", algo);
    row.device = r->device;
    row.runtime = "deepbench";
    row.runtime_version = r->version;
    row.latency_ms = ms;
    row.latency_spread_ms = NAN;
    row.repetitions = -1;
    row.energy_j = NAN;
    row.memory_bytes = -1;
    row.source = source;
    row.date = r->f->date;
    row.line = rec->line;
    if (!conv) {
        const char *ta = field(rec, r->col[G_TA]), *tb = field(rec, r->col[G_TB]);
        if ((strcmp(ta, "N") && strcmp(ta, "T")) || (strcmp(tb, "N") && strcmp(tb, "T")))
            BAD("transposes '%s', '%s' are not N or T", ta, tb);
        int tra = ta[0] == 'T', trb = tb[0] == 'T';
        int64_t M = v[G_M], N = v[G_N], K = v[G_K];
        /* C[M,N] = op(A)[M,K] op(B)[K,N]; A stored K x M when transposed, B N x K */
        int64_t a[2] = {tra ? K : M, tra ? M : K}, b[2] = {trb ? N : K, trb ? K : N};
        row.precision = r->f->gemm_prec;
        row.kind = PP_OPK_LINEAR;
        row.op_type = "Gemm";
        row.batch = 1;
        pp_measure_row_add_input(&row, 'x', 2, a);
        pp_measure_row_add_input(&row, 'w', 2, b);
        if (tra) pp_measure_row_add_attr(&row, "transA", PP_ATTR_INT)->i = 1;
        if (trb) pp_measure_row_add_attr(&row, "transB", PP_ATTR_INT)->i = 1;
    } else {
        int64_t W = v[C_W], H = v[C_H], C = v[C_C], N = v[C_N], K = v[C_K], S = v[C_S], R = v[C_R];
        int64_t ph = v[C_PADH], pw = v[C_PADW], sh = v[C_STRH], sw = v[C_STRW];
        if (H + 2 * ph < R || W + 2 * pw < S) BAD("the %lldx%lld filter is larger than the padded "
                                                  "%lldx%lld input", (long long)R, (long long)S,
                                                  (long long)H, (long long)W);
        int64_t oh = (H + 2 * ph - R) / sh + 1, ow = (W + 2 * pw - S) / sw + 1;
        /* P and Q: output sizes the sheet computed, in either order (the device sheets put the
         * width first); the Jetson TX1 sheet's formula leaves halves (78.5): those check nothing */
        const char *ps = field(rec, r->col[C_P]), *qs = field(rec, r->col[C_Q]);
        int64_t P, Q;
        if (pp_parse_i64(ps, &P) == 0 && pp_parse_i64(qs, &Q) == 0) {
            if (!((P == oh && Q == ow) || (P == ow && Q == oh)))
                BAD("output sizes P = %lld, Q = %lld disagree with the configuration's %lld x %lld",
                    (long long)P, (long long)Q, (long long)oh, (long long)ow);
        }
        row.precision = r->f->conv_prec;
        row.kind = PP_OPK_CONV;
        row.op_type = "Conv";
        row.batch = N;
        int64_t x[4] = {N, C, H, W}, w[4] = {K, C, R, S};
        pp_measure_row_add_input(&row, 'x', 4, x);
        pp_measure_row_add_input(&row, 'w', 4, w);
        int64_t ks[2] = {R, S}, st[2] = {sh, sw}, pads[4] = {ph, pw, ph, pw}, dil[2] = {1, 1};
        add_ints(&row, "kernel_shape", 2, ks);
        add_ints(&row, "strides", 2, st);
        add_ints(&row, "pads", 4, pads);
        add_ints(&row, "dilations", 2, dil);
        pp_measure_row_add_attr(&row, "group", PP_ATTR_INT)->i = 1;
    }
    pp_node_feat feat;
    char why[512];
    if (pp_datasets_check_row(&row, &feat, why, sizeof why) != 0) BAD("%s", why);
    if (pp_measure_layer_table_add(r->t, &row, err) != PERFPRED_OK) return -1;
    r->rep->n_rows++;
    pp_datasets_import_device(r->rep, r->device, r->f->name)->n_rows++;
    return 0;
}

static int db_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    (void)is_header; /* the sheets have no header line: every line is read alike */
    db_read *r = user;
    char title[128];
    norm_name(field(rec, 0), title, sizeof title);
    if (strcmp(title, "precision") == 0 && !r->seen_precision) {
        r->seen_precision = 1;
        const char *want = r->f->precision_line;
        if (!want || strcmp(field(rec, 1), want) != 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: the sheet's precision is '%s', the "
                       "importer knows this file as '%s'", rec->path, rec->line, field(rec, 1),
                       want ? want : "(no Precision row)");
            return -1;
        }
        return 0;
    }
    if (title[0]) { /* a section title */
        if (strncmp(title, "dense matrix multiplication", 27) == 0) {
            r->sec = SEC_GEMM;
            return map_header(r, rec, 0, err);
        }
        r->sec = strcmp(title, "convolution") == 0 ? SEC_CONV_HEADER : SEC_OTHER;
        return 0;
    }
    switch (r->sec) {
    case SEC_GEMM: return data_row(r, rec, 0, err);
    case SEC_CONV: return data_row(r, rec, 1, err);
    case SEC_CONV_HEADER: {
        int any = 0;
        for (int c = 0; c < rec->n_fields; c++) any |= rec->fields[c][0] != '\0';
        if (!any) return 0;
        r->sec = SEC_CONV;
        return map_header(r, rec, 1, err);
    }
    default: return 0;
    }
}

/* ------------------------------------------------------------------- Specs sheet ---- */

typedef struct spec_read {
    char text[256];
} spec_read;

static int spec_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    (void)is_header;
    (void)err;
    spec_read *s = user;
    static const struct {
        const char *key, *label;
    } keys[] = {{"cuda version", "CUDA"}, {"cudnn version", "cuDNN"}, {"eigen version", "Eigen"},
                {"gemmlowp version", "gemmlowp"}, {"arm compute lib version", "ARM Compute Library"}};
    char k[64];
    norm_name(field(rec, 0), k, sizeof k);
    const char *v = field(rec, 1);
    if (!*v || strcmp(v, "-") == 0) return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strcmp(k, keys[i].key) != 0) continue;
        size_t L = strlen(s->text);
        snprintf(s->text + L, sizeof s->text - L, "%s%s %s", L ? "; " : "", keys[i].label, v);
    }
    return 0;
}

/* runtime_version from <prefix>__Specs.csv beside a result sheet ("" when there is none). */
static perfpred_status read_specs(const char *root, const char *rel, spec_read *s, pp_err *err)
{
    memset(s, 0, sizeof *s);
    const char *cut = strstr(rel, "__");
    if (!cut) return PERFPRED_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/csv/results/%.*s__Specs.csv", root, (int)(cut - rel), rel);
    if (access(path, R_OK) != 0) return PERFPRED_OK;
    return pp_measure_csv_read(path, spec_record, s, err);
}

/* ---------------------------------------------------------------------- entry ---- */

perfpred_status pp_datasets_deepbench_import(const char *root, const pp_device_db *db,
                                             const pp_import_filter *filter, pp_layer_table *t,
                                             pp_import_report *rep, pp_err *err)
{
    char commit[41], old_commit[41], date[11];
    perfpred_status st = pp_datasets_source_commit(root, "- Commit: ", commit, date, err);
    if (st == PERFPRED_OK)
        st = pp_datasets_source_commit(root, "Jetson_TX1.xlsx` taken from commit", old_commit, NULL,
                                       err);
    if (st != PERFPRED_OK) return st;
    int found = 0;
    for (size_t i = 0; i < N_DB_FILES; i++) {
        const db_file *f = &db_files[i];
        char rel[1024], path[4096];
        snprintf(rel, sizeof rel, "csv/results/%s", f->rel);
        snprintf(path, sizeof path, "%s/%s", root, rel);
        if (access(path, R_OK) != 0) continue;
        found++;
        const pp_device *d = pp_devices_find(db, f->lookup);
        if (!d) {
            pp_datasets_import_note(rep,
                                    "%s: DeepBench device '%s' has no descriptor in configs/devices "
                                    "(looked up as '%s'): not imported", rel, f->name, f->lookup);
            continue;
        }
        if (f->skip) {
            if (!filter->device || strcmp(filter->device, d->name) == 0)
                pp_datasets_import_note(rep, "%s: not imported: %s", rel, f->skip);
            continue;
        }
        spec_read spec;
        if ((st = read_specs(root, f->rel, &spec, err))) return st;
        db_read r;
        memset(&r, 0, sizeof r);
        r.f = f;
        r.device = d->name;
        r.rel = rel;
        r.path = path;
        r.version = spec.text;
        r.commit = f->old_commit ? old_commit : commit;
        r.filtered = (filter->device && strcmp(filter->device, d->name) != 0) ||
                     (filter->runtime && strcmp(filter->runtime, "deepbench") != 0);
        r.t = t;
        r.rep = rep;
        if ((st = pp_measure_csv_read(path, db_record, &r, err))) return st;
        if (!r.filtered) rep->n_files++;
        if (f->precision_line && !r.seen_precision)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: no Precision row (expected '%s')",
                              path, f->precision_line);
    }
    if (!found)
        return pp_err_set(err, PERFPRED_ERR_IO, "%s/csv/results: none of DeepBench's %d result "
                          "sheets is there", root, (int)N_DB_FILES);
    return PERFPRED_OK;
}
