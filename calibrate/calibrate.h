/* calibrate/: measurements in, calibrated device out. Reads and writes the layer- and network-level
 * measurement CSVs of docs/measurements.md (libcsv, strict: bad rows are counted with file:line, never
 * guessed), imports NeuSight's kernel tables into layer rows, rebuilds each row as a single-node graph
 * so that graph/ describes it, computes accuracy metrics, and fits the A100 from NeuSight. */
#ifndef PP_CALIBRATE_H
#define PP_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>

#include "devices/devices.h"
#include "graph/graph.h"
#include "layer_models/layer_models.h"
#include "predictor/predictor.h"
#include "util/util.h"

/* ------------------------------------------------------------ CSV reading (csvio.c) ---- */

/* One record handed to a pp_csv_read callback: fields are NUL-terminated, owned by the reader and
 * valid only during the call. line is the 1-based line the record starts on (header is line 1). */
typedef struct pp_csv_record {
    const char *path;
    int line;
    int n_fields;
    const char *const *fields;
} pp_csv_record;

/* Called once for the header, then once per data record. A nonzero return stops reading and
 * pp_csv_read returns the status the callback put in err (it must set one). */
typedef int (*pp_csv_record_fn)(const pp_csv_record *rec, int is_header, void *user, pp_err *err);

/* Reads path with libcsv in strict mode (a malformed quote is an error naming file:line). Blank lines
 * are skipped. A file without a header line is PERFPRED_ERR_PARSE. */
perfpred_status pp_csv_read(const char *path, pp_csv_record_fn fn, void *user, pp_err *err);
perfpred_status pp_csv_read_buffer(const char *path_for_errors, const char *buf, size_t len,
                                   pp_csv_record_fn fn, void *user, pp_err *err);

/* Growing text buffer for writers (malloc'd; free data with free()). */
typedef struct pp_strbuf {
    char *data;
    size_t len, cap;
    int oom;        /* sticky: an append failed */
} pp_strbuf;
void pp_strbuf_put(pp_strbuf *b, const char *s);
void pp_strbuf_printf(pp_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as one CSV field: quoted (with doubled quotes) when it holds , " CR or LF. */
void pp_strbuf_csv_field(pp_strbuf *b, const char *s);
/* Shortest decimal text that strtod reads back to exactly v ("%.15g".."%.17g"). */
void pp_fmt_double(char *out, size_t n, double v);

/* gnuplot (calibrate/plot.c): text safe inside a single-quoted string (no quote, backslash or
 * control character); `gnuplot script` with stdout and stderr into log_path (its exit status, 127
 * when gnuplot is missing, -1 on a spawn error); the log's last non-empty line. */
int pp_plot_safe(const char *s);
int pp_plot_run_gnuplot(const char *script, const char *log_path);
void pp_plot_last_line(const char *path, char *out, size_t n);
/* write(user, terminal) writes the script for a terminal ("svg", "pngcairo", "png"); gnuplot runs
 * it, once more with gd's png where pngcairo is missing. Errors name gnuplot's last line. */
perfpred_status pp_plot_draw(const char *script, const char *log_path, const char *terminal,
                             int (*write)(void *user, const char *terminal), void *user,
                             pp_err *err);

/* Bad-row bookkeeping shared by the readers: every bad row is counted; the first
 * PP_BAD_ROWS_KEPT messages ("file:line: reason") are kept. */
#define PP_BAD_ROWS_KEPT 64
typedef struct pp_bad_rows {
    int n;
    int n_kept;
    char *msgs[PP_BAD_ROWS_KEPT];   /* arena-owned by the table that holds this record */
} pp_bad_rows;

/* ------------------------------------------------ layer measurements (measurements.c) ---- */

/* pp_layer_row and its parts: layer_models/layer_models.h (rebuilt as graphs there too). */

typedef struct pp_layer_table {
    pp_arena *arena;
    const char *path;            /* file read, or a description for in-memory tables */
    int n, cap;
    pp_layer_row *rows;          /* malloc'd array (grows); strings in arena */
    pp_bad_rows bad;
} pp_layer_table;

pp_layer_table *pp_layer_table_new(const char *path);
void pp_layer_table_free(pp_layer_table *t);      /* NULL is a no-op */
/* Appends a copy of row (strings and all copied into the table's arena). */
perfpred_status pp_layer_table_add(pp_layer_table *t, const pp_layer_row *row, pp_err *err);
/* Records a bad row: counts it and keeps the message if there is room. */
void pp_bad_rows_add(pp_bad_rows *b, pp_arena *a, const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Reads a layer CSV. Header problems (missing required column, unknown or duplicate column) are
 * PERFPRED_ERR_PARSE naming file:line. Bad data rows are skipped, counted in (*out)->bad and listed
 * with file:line; the call still succeeds. */
perfpred_status pp_layer_csv_read(const char *path, pp_layer_table **out, pp_err *err);
/* Writes rows as a layer CSV (header included) atomically. */
perfpred_status pp_layer_csv_write(const char *path, const pp_layer_row *rows, int n, pp_err *err);
/* The CSV text itself (malloc'd, NUL-terminated). */
perfpred_status pp_layer_csv_format(const pp_layer_row *rows, int n, char **out, size_t *len,
                                    pp_err *err);

/* The inputs and attrs columns of a row, as the CSV writes them (docs/measurements.md). */
void pp_layer_put_inputs(pp_strbuf *b, const pp_layer_row *r);
void pp_layer_put_attr(pp_strbuf *b, const pp_layer_attr *a);  /* one `name:type=value` */

/* Row building for importers: appends an input (role, the first rank of dims) or an attribute
 * (zeroed, name and type set; the caller fills the value). */
void pp_layer_row_add_input(pp_layer_row *row, char role, int rank, const int64_t *dims);
pp_layer_attr *pp_layer_row_add_attr(pp_layer_row *row, const char *name, int type);

/* The configuration key of a row ("Conv|xx1x3x8x8|wx4x3x3x3|pads=,1,1,1,1"): op type, inputs with
 * roles and dims, attributes in row order. fit splits over it; the adaptive plan reproduces it. */
void pp_layer_row_config_key(const pp_layer_row *r, pp_strbuf *b);

/* Parsers for the compound columns (exposed for tests and for the runner-side tools). */
int pp_layer_parse_inputs(const char *s, pp_layer_input *out, int max, char *why, size_t why_n);
int pp_layer_parse_attrs(const char *s, pp_arena *a, pp_layer_attr *out, int max, char *why,
                         size_t why_n);

/* ------------------------------------------------- network measurements (measurements.c) ---- */

typedef struct pp_net_row {
    const char *model;           /* path to the ONNX graph (relative to the CSV's folder or absolute) */
    const char *family;          /* model family for held-out-family splits ("resnet", "nb201") */
    const char *device, *runtime, *runtime_version;
    pp_precision precision;
    int64_t batch;
    const char *input_shapes;    /* "input:1x3x224x224;mask:1x128" or "" = as in the file */
    double latency_ms, latency_spread_ms;  /* spread NaN = not reported */
    int64_t repetitions;         /* -1 = not reported */
    double energy_j;             /* NaN = not reported */
    int64_t peak_memory_bytes;   /* -1 = not reported */
    const char *source, *date;
    int line;
} pp_net_row;

typedef struct pp_net_table {
    pp_arena *arena;
    const char *path;
    int n, cap;
    pp_net_row *rows;
    pp_bad_rows bad;
} pp_net_table;

perfpred_status pp_net_csv_read(const char *path, pp_net_table **out, pp_err *err);
/* The machine a runner row's source names ("...; machine=AMD EPYC (2 logical CPUs, x86_64); ...")
 * into out (truncated to n - 1 characters, possibly empty); 0 when the source names none. */
int pp_source_machine(const char *source, char *out, size_t n);
/* 1 when family is an item of the comma-separated list (fit_networks.c). */
int pp_family_listed(const char *list, const char *family);
perfpred_status pp_net_csv_write(const char *path, const pp_net_row *rows, int n, pp_err *err);
void pp_net_table_free(pp_net_table *t);

/* ------------------------------------------------------------- NeuSight import (neusight.c) ---- */

typedef enum pp_neusight_split {
    PP_NEUSIGHT_TRAIN = 0,   /* data/dataset/train/collect/<op>/p2.1.0/<GPU>.csv */
    PP_NEUSIGHT_TEST = 1     /* data/dataset/test/<file>.csv, rows of that GPU and op */
} pp_neusight_split;

/* NeuSight operator names this importer knows: bmm, linear, conv, add, addu, mul, mulu, div, divu,
 * pow, powu, relu, gelu, tanh, ln, softmax. NULL-terminated list. */
extern const char *const pp_neusight_ops[];

/* <root>/SOURCE.md, a dataset's provenance, as NUL-terminated text (caller frees); its path goes
 * to path, for messages. */
#define PP_SOURCE_MD_PATH 4096
perfpred_status pp_read_source_md(const char *root, char path[PP_SOURCE_MD_PATH], char **text,
                                  pp_err *err);

/* Provenance read from <root>/SOURCE.md ("- Repo: <url>", "- Commit: <40 hex> (YYYY-MM-DD)"). */
typedef struct pp_neusight_source {
    char repo[256];
    char commit[41];
    char date[11];      /* commit date: the date imported rows carry */
} pp_neusight_source;
perfpred_status pp_neusight_read_source(const char *root, pp_neusight_source *out, pp_err *err);

/* perfpred device name for a NeuSight GPU name ("NVIDIA A100-PCIE-40GB" -> "a100-pcie-40gb"),
 * or NULL when the GPU is not one NeuSight measured. */
const char *pp_neusight_device_name(const char *gpu);

/* Repository-relative path of the file holding op rows for split (e.g.
 * "scripts/asplos/data/dataset/train/collect/linear/p2.1.0/NVIDIA A100-PCIE-40GB.csv"). */
perfpred_status pp_neusight_rel_path(const char *op, const char *gpu, pp_neusight_split split,
                                     char *out, size_t n, pp_err *err);

/* Appends the rows of one operator for one GPU to t (rows whose Device column differs are skipped;
 * for test files, also rows of other ops). Bad rows are counted in t->bad with file:line.
 * *n_added (may be NULL) receives the number of rows appended. */
perfpred_status pp_neusight_import(const char *root, const char *op, const char *gpu,
                                   pp_neusight_split split, pp_layer_table *t, int *n_added,
                                   pp_err *err);
/* Imports every operator NeuSight has for gpu (conv from conv_gpu when not NULL) and writes them as
 * one layer CSV at out_csv. *n_rows (may be NULL) receives the row count. */
perfpred_status pp_neusight_export_csv(const char *root, const char *gpu, const char *conv_gpu,
                                       pp_neusight_split split, const char *out_csv, int *n_rows,
                                       pp_err *err);

/* ------------------------------------------------------------------------ metrics (metrics.c) ---- */

/* Accuracy of predictions against measurements: MAPE and RMSPE in percent, the share of rows
 * within +-10 % in percent, Spearman's rank correlation (ties get the average rank; NaN when either
 * side is constant or n < 2). */
typedef struct pp_metrics {
    int n;
    double mape_pct;
    double rmspe_pct;
    double within10_pct;
    double spearman;
} pp_metrics;

/* Measurements must be finite and > 0, predictions finite (else PERFPRED_ERR_INVALID_ARG naming the
 * index); n >= 1. */
perfpred_status pp_metrics_compute(const double *pred, const double *meas, int n, pp_metrics *out,
                                   pp_err *err);
/* Per group: group[i] in [0, n_groups); out[g].n == 0 for an empty group (other fields NaN). */
perfpred_status pp_metrics_by_group(const double *pred, const double *meas, const int *group, int n,
                                    int n_groups, pp_metrics *out, pp_err *err);
/* Spearman's rho with averaged tie ranks; NaN when undefined. */
double pp_spearman(const double *a, const double *b, int n);
/* The same figures as the public API's struct. */
perfpred_metrics pp_metrics_public(const pp_metrics *m);
/* Median of v[0..n), n >= 1; sorts v. */
double pp_median(double *v, int n);
/* Theil-Sen line y = intercept + slope x: the median of the slopes of every pair with distinct x,
 * then the median of y - slope x. Robust to a few wild points (up to about 29 % of them).
 * -1 when n < 2, every x is equal, or out of memory. */
int pp_theil_sen(const double *x, const double *y, int n, double *intercept, double *slope);
/* The roofline class --rescale-by-class fits a line for: 1 when the descriptor's fp32 peak and
 * bandwidth put the row's bytes above its FLOPs (memory-bound), else 0 (needs both figures). */
int pp_rescale_class(const pp_device *d, const pp_node_feat *f);
/* The drift r divides a row of latency ms by (pp_lm_rescale; the row's class from d and f where r is
 * by class); 1 when r is off. */
double pp_rescale_factor(const pp_lm_rescale *r, const pp_device *d, const pp_node_feat *f,
                         double ms);

/* ------------------------------------------------------ GPUs from NeuSight (fit_neusight.c) ---- */

/* The analytic roofline the NeuSight layer models correct, and that they are judged beside: by
 * default the A100 PCIe 40GB's, from the NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe 40GB
 * column: FP32 19.5 TFLOP/s, HBM2 1,555 GB/s; 108 SMs (A100 whitepaper). `calibrate fit --neusight`
 * takes them from the device descriptor instead (the same figures for a100-pcie-40gb). The
 * datasheet's TF32 figure (156 TFLOP/s dense) is not used: PyTorch 2.1 runs matmuls in plain fp32
 * (allow_tf32 = False), and NeuSight's conv rows name only FP32 SIMT kernels (winograd, scudnn,
 * sgemm, FFT gcgemm; no tensor-core kernel), so TF32 never ran. */
#define PP_A100_PCIE40_FP32_TFLOPS 19.5
#define PP_A100_PCIE40_BW_GBS 1555.0
#define PP_A100_SMS 108

typedef struct pp_fit_params {
    const char *device;          /* perfpred device name written to rows and manifest */
    const char *conv_gpu;        /* NeuSight GPU whose conv rows stand in (NULL = same GPU) */
    const char *date;            /* manifest date (NULL = today, UTC) */
    double conv_heldout_fraction;/* share of training rows held out, seeded: for conv (NeuSight has
                                    no conv test file), and for every kind's in-distribution check */
    int write_artifacts;         /* 0: evaluate only, write nothing */
    double peak_tflops;          /* the roofline's FP32 peak, TFLOP/s (default: the A100 PCIe 40GB's) */
    double bw_gbs;               /* its memory bandwidth, GB/s */
    int compute_units;           /* SMs, for the wave features */
    const char *figures_from;    /* where those three come from, for the manifest note */
    pp_lm_params lm;             /* XGBoost hyper-parameters, seed, nthread */
    pp_logger log;
} pp_fit_params;
pp_fit_params pp_fit_default_params(void);

typedef struct pp_fit_kind_report {
    pp_op_kind kind;
    int n_train;
    int n_heldout;
    int n_overlap;               /* held-out rows whose shape also occurs in training (excluded) */
    int heldout_is_split;        /* 1: held-out rows are a split of the training file (conv) */
    double floor_ms;             /* launch/timing floor used by the roofline */
    pp_metrics model;            /* XGBoost layer model on the held-out rows, as the predictor
                                    answers (rows outside its domain take the roofline) */
    int n_heldout_roofline;      /* those rows */
    pp_metrics roofline;         /* analytic roofline on the same rows */
    pp_metrics in_dist;          /* the recipe retrained without a seeded share of the training
                                    rows, judged on that share (interpolation, not extrapolation) */
    pp_metrics train;            /* layer model on its own training rows (not a result; a check) */
    double train_seconds;
    int written;                 /* 1: in the manifest (and saved unless a dry run); 0: the model
                                    lost to the roofline on the held-out rows, the kind keeps it */
} pp_fit_kind_report;

typedef struct pp_fit_report {
    int n_kinds;
    pp_fit_kind_report kinds[PP_OPK__COUNT];
    int n_bad_rows;              /* bad rows met while importing (listed in bad_msgs) */
    char bad_msgs[8][256];
    int n_bad_msgs;
    double total_seconds;
} pp_fit_report;

/* Trains one latency layer model per op kind NeuSight measured on gpu (bmm, linear, elemwise, norm,
 * softmax; conv from params->conv_gpu), evaluates model and roofline on NeuSight's test rows of the
 * same GPU (conv: a held-out split), and, when params->write_artifacts, writes <kind>-latency.ubj
 * files and manifest.json into out_dir (created if missing) atomically. */
perfpred_status pp_calibrate_fit_neusight(const char *neusight_root, const char *gpu,
                                          const char *out_dir, const pp_fit_params *params,
                                          pp_fit_report *report, pp_err *err);

/* The in-network overhead correction's least squares (calibrate/fit_overhead.c): scale, per-kernel
 * ms and per-MB ms minimising sum_i (x_i . w - 1)^2 over the points with use[i] (use NULL: all),
 * x_i = (layer sum, kernels, 10^6 bytes moved) / measured, with the per-kernel and per-MB terms >= 0:
 * the least-squares fit over each subset of those two terms (the scale always in), the best of
 * those whose terms are all >= 0. 0 ok, -1 too few rows. */
int pp_overhead_fit_rows(const perfpred_eval_point *pt, const int *use, int n, double w_out[3]);

#endif
