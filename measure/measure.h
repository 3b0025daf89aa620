/* measure/: the measurement schemas of docs/measurements.md and what judges predictions against
 * them. Reads and writes layer- and network-level measurement CSVs (libcsv, strict: bad rows are
 * counted with file:line, never guessed), builds rows for importers, and computes accuracy metrics
 * (MAPE, RMSPE, within +-10 %, Spearman) and robust lines. The lowest calibration module:
 * datasets/, plan/, eval/ and fit/ build on it (in that order); it includes nothing of theirs.
 * Ownership: a table owns its arena and rows (pp_measure_*_table_free); reports are plain structs.
 */
#ifndef PP_MEASURE_H
#define PP_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include "devices/devices.h"
#include "graph/graph.h"
#include "layer_models/layer_models.h"
#include "perfpred_calibrate.h"
#include "predictor/predictor.h"
#include "util/util.h"

/* ------------------------------------------------------------ CSV reading (csvio.c) ---- */

/* One record handed to a pp_measure_csv_read callback: fields are NUL-terminated, owned by the
 * reader and valid only during the call. line is the 1-based line the record starts on (header is
 * line 1). */
typedef struct pp_csv_record {
    const char *path;
    int line;
    int n_fields;
    const char *const *fields;
} pp_csv_record;

/* Called once for the header, then once per data record. A nonzero return stops reading and
 * pp_measure_csv_read returns the status the callback put in err (it must set one). */
typedef int (*pp_csv_record_fn)(const pp_csv_record *rec, int is_header, void *user, pp_err *err);

/* Reads path with libcsv in strict mode (a malformed quote is an error naming file:line). Blank lines
 * are skipped. A file without a header line is PERFPRED_ERR_PARSE. */
perfpred_status pp_measure_csv_read(const char *path, pp_csv_record_fn fn, void *user, pp_err *err);
/* The index of the header field `name` in a header record, or -1 */
int pp_measure_csv_column(const pp_csv_record *header, const char *name);
perfpred_status pp_measure_csv_read_buffer(const char *path_for_errors, const char *buf, size_t len,
                                           pp_csv_record_fn fn, void *user, pp_err *err);

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

pp_layer_table *pp_measure_layer_table_new(const char *path);
void pp_measure_layer_table_free(pp_layer_table *t);      /* NULL is a no-op */
/* Appends a copy of row (strings and all copied into the table's arena). */
perfpred_status pp_measure_layer_table_add(pp_layer_table *t, const pp_layer_row *row, pp_err *err);
/* Records a bad row: counts it and keeps the message if there is room. */
void pp_measure_bad_row(pp_bad_rows *b, pp_arena *a, const char *path, int line, const char *fmt,
                        ...)
    __attribute__((format(printf, 5, 6)));

/* Reads a layer CSV. Header problems (missing required column, unknown or duplicate column) are
 * PERFPRED_ERR_PARSE naming file:line. Bad data rows are skipped, counted in (*out)->bad and listed
 * with file:line; the call still succeeds. */
perfpred_status pp_measure_layer_csv_read(const char *path, pp_layer_table **out, pp_err *err);
/* Writes rows as a layer CSV (header included) atomically. */
perfpred_status pp_measure_layer_csv_write(const char *path, const pp_layer_row *rows, int n,
                                           pp_err *err);
/* The CSV text itself (malloc'd, NUL-terminated). */
perfpred_status pp_measure_layer_csv_format(const pp_layer_row *rows, int n, char **out,
                                            size_t *len, pp_err *err);

/* The inputs and attrs columns of a row, as the CSV writes them (docs/measurements.md). */
void pp_measure_put_inputs(pp_strbuf *b, const pp_layer_row *r);
void pp_measure_put_attr(pp_strbuf *b, const pp_layer_attr *a);  /* one `name:type=value` */

/* Row building for importers: appends an input (role, the first rank of dims) or an attribute
 * (zeroed, name and type set; the caller fills the value). */
void pp_measure_row_add_input(pp_layer_row *row, char role, int rank, const int64_t *dims);
pp_layer_attr *pp_measure_row_add_attr(pp_layer_row *row, const char *name, int type);

/* The configuration key of a row ("Conv|xx1x3x8x8|wx4x3x3x3|pads=,1,1,1,1"): op type, inputs with
 * roles and dims, attributes in row order. fit splits over it; the adaptive plan reproduces it. */
void pp_measure_config_key(const pp_layer_row *r, pp_strbuf *b);

/* Parsers for the compound columns (exposed for tests and for the runner-side tools). The inputs
 * of a row of op_type: the first must be an activation, except where
 * pp_measure_weight_first_ok(op_type), which needs one activation among them. */
int pp_measure_parse_inputs(const char *op_type, const char *s, pp_layer_input *out, int max,
                            char *why, size_t why_n);
/* 1 for the operators whose first input may be a weight (a constant) in a layer row: Concat (a
 * ViT's class token joined before the patch tokens). The order of a Concat's inputs is its
 * output's layout, so the row keeps it rather than moving an activation first. */
int pp_measure_weight_first_ok(const char *op_type);
int pp_measure_parse_attrs(const char *s, pp_arena *a, pp_layer_attr *out, int max, char *why,
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

perfpred_status pp_measure_net_csv_read(const char *path, pp_net_table **out, pp_err *err);
/* The machine a runner row's source names ("...; machine=AMD EPYC (2 logical CPUs, x86_64); ...")
 * into out (truncated to n - 1 characters, possibly empty); 0 when the source names none. */
int pp_measure_source_machine(const char *source, char *out, size_t n);
/* 1 when family is an item of the comma-separated list. */
int pp_measure_family_listed(const char *list, const char *family);
perfpred_status pp_measure_net_csv_write(const char *path, const pp_net_row *rows, int n,
                                         pp_err *err);
void pp_measure_net_table_free(pp_net_table *t);

/* A parameter check's failure: fmt (one %s, the field) into errbuf, PERFPRED_ERR_INVALID_ARG. */
perfpred_status pp_measure_bad_param(char *errbuf, size_t n, const char *fmt, const char *field);

/* ------------------------------------------------------------------------ metrics (metrics.c) ---- */

/* Accuracy of predictions against measurements: MAPE and RMSPE in percent, the share of rows
 * within +-10 % in percent, Spearman's rank correlation (ties get the average rank; NaN when either
 * side is constant or n < 2), and the mean |ln(predicted / measured)| (infinite where a prediction
 * is not > 0): an error that weighs 2x too slow as 2x too fast; one row 10x too slow weighs as
 * much as 18 rows 50 % off in a MAPE, as 6 in this. */
typedef struct pp_metrics {
    int n;
    double mape_pct;
    double rmspe_pct;
    double within10_pct;
    double spearman;
    double mean_abs_log;
} pp_metrics;

/* Measurements must be finite and > 0, predictions finite (else PERFPRED_ERR_INVALID_ARG naming the
 * index); n >= 1. */
perfpred_status pp_measure_metrics(const double *pred, const double *meas, int n, pp_metrics *out,
                                   pp_err *err);
/* Per group: group[i] in [0, n_groups); out[g].n == 0 for an empty group (other fields NaN). */
perfpred_status pp_measure_metrics_by_group(const double *pred, const double *meas,
                                            const int *group, int n, int n_groups, pp_metrics *out,
                                            pp_err *err);
/* Spearman's rho with averaged tie ranks; NaN when undefined. */
double pp_measure_spearman(const double *a, const double *b, int n);
/* The same figures as the public API's struct. */
perfpred_metrics pp_measure_metrics_public(const pp_metrics *m);
/* No rows: n 0, every figure NaN (the public struct's too: pp_measure_metrics_none_public). */
pp_metrics pp_measure_metrics_none(void);
perfpred_metrics pp_measure_metrics_none_public(void);
/* Median of v[0..n), n >= 1; sorts v. */
double pp_measure_median(double *v, int n);
/* Theil-Sen line y = intercept + slope x: the median of the slopes of every pair with distinct x,
 * then the median of y - slope x. Robust to a few wild points (up to about 29 % of them).
 * -1 when n < 2, every x is equal, or out of memory. */
int pp_measure_theil_sen(const double *x, const double *y, int n, double *intercept, double *slope);
/* The roofline class --rescale-by-class fits a line for: 1 when the descriptor's fp32 peak and
 * bandwidth put the row's bytes above its FLOPs (memory-bound), else 0 (needs both figures). */
int pp_measure_rescale_class(const pp_device *d, const pp_node_feat *f);
/* The drift r divides a row of latency ms by (pp_lm_rescale; the row's class from d and f where r is
 * by class); 1 when r is off. */
double pp_measure_rescale_factor(const pp_lm_rescale *r, const pp_device *d, const pp_node_feat *f,
                                 double ms);

#endif
