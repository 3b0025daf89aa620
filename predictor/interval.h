/* predictor/interval.h: how sure a latency is. An interval comes from the calibration's own
 * held-out residuals r = log(measured / predicted) on whole-model rows the models never trained
 * on, per device and per answer path (split-conformal: order statistics of r). The quantiles live
 * in configs/artifacts/<device>/intervals.json (written by the fit commands, write-then-rename);
 * a prediction on a path with quantiles gets [v exp(log_lo), v exp(log_hi)], any other path says
 * it has none and why. */
#ifndef PP_INTERVAL_H
#define PP_INTERVAL_H

#include "devices/devices.h"

/* The answer paths of a latency (JSON keys of intervals.json). */
typedef enum pp_ipath {
    PP_IPATH_LAYER = 0, /* calibrated layer sum, no correction */
    PP_IPATH_OVERHEAD,  /* layer sum through the in-network overhead correction */
    PP_IPATH_GNN,       /* layer sum x exp(GNN correction), members agreeing */
    PP_IPATH_GATED,     /* the members disagreed past the gate: the answer without the GNN */
    PP_IPATH__COUNT
} pp_ipath;
const char *pp_ipath_name(int p);
int pp_ipath_parse(const char *s); /* -1 when unknown */

#define PP_INTERVAL_COVERAGE 0.8
/* Fewest residuals giving a finite two-sided 80 % conformal interval: ceil((n + 1) 0.9) <= n. */
#define PP_INTERVAL_MIN_ROWS 9

/* Quantiles of one path: plain data. A GPU runtime stack (or any other answer path) carries one
 * of these and calls pp_interval_apply. */
typedef struct pp_interval_q {
    int n;                 /* held-out residuals the quantiles come from (0: none) */
    double log_lo, log_hi; /* quantiles of log(measured / predicted) */
    double coverage;       /* nominal: 0.8 */
    int check_n;           /* rows of the cross-fitted coverage check */
    double check_pct;      /* share of them inside, percent (NaN: not checked) */
    char source[640];      /* the rows' data and the command that produced them */
} pp_interval_q;

/* Split-conformal quantiles of r[0..n) for nominal coverage c: with sorted residuals,
 * lo = r_(floor((n + 1)(1 - c) / 2)), hi = r_(ceil((n + 1)(1 + c) / 2)) (1-based order
 * statistics). Returns -1 (q untouched) when n is too small for finite ones. r is sorted in place. */
int pp_interval_quantiles(double *r, int n, double c, double *log_lo, double *log_hi);

/* The coverage check: rows split in two by key parity (a hash of the model, so both batches of a
 * network fall on one side); quantiles from one half, the other half counted inside, and the other
 * way round. Returns the share inside in percent (NaN when a half is too small), *n_checked the
 * rows counted. */
double pp_interval_crossfit(const double *r, const unsigned *key, int n, double c, int *n_checked);

/* Fills out from q for a predicted value v: lo = v exp(log_lo), hi = v exp(log_hi); path is a
 * static or context-owned string, source context-owned (q->source, kept alive by its owner). */
void pp_interval_apply(const pp_interval_q *q, double v, const char *path, perfpred_interval *out);
/* No interval: lo = hi = NaN, n = 0, source = why (static or context-owned). */
void pp_interval_none(perfpred_interval *out, const char *why);

/* The intervals of every device in a configs folder, read at context open. */
typedef struct pp_interval_set pp_interval_set;
/* Reads <config_dir>/<artifacts>/intervals.json of every descriptor (a missing file is no error, a
 * malformed one is, naming file and key). */
perfpred_status pp_interval_set_load(const pp_device_db *db, const char *config_dir,
                                     pp_interval_set **out, pp_err *err);
void pp_interval_set_free(pp_interval_set *s);
/* Quantiles of device d on path p, or NULL (d's own file only: a MIG slice or a derived
 * descriptor is judged by no held-out row of its own). */
const pp_interval_q *pp_interval_find(const pp_interval_set *s, const pp_device *d, int p);

/* The latency interval of a non-stack prediction on d: path from how it was answered
 * (gnn_applied, gated, overhead_applied; else the layer sum), none for an estimate. */
void pp_interval_attach(const pp_interval_set *s, const pp_device *d, perfpred_provenance prov,
                        int gnn_applied, int gated, int overhead_applied, double value,
                        perfpred_interval *out);

/* One entry's JSON, as intervals.json and any other artifact store it: { "n", "coverage",
 * "log_lo", "log_hi", "check": { "n", "inside_pct" }?, "data"? }. pp_interval_parse_entry reads
 * one (errors name path and key; q->source gets a sentence with the data); pp_interval_entry_json
 * makes one (a new cJSON object, the caller owns it; data = q->source). */
struct cJSON;
perfpred_status pp_interval_parse_entry(const char *path, const char *key, const struct cJSON *e,
                                        pp_interval_q *q, pp_err *err);
struct cJSON *pp_interval_entry_json(const pp_interval_q *q);

/* Writing: merges entries into dir/intervals.json (other paths' entries kept), write-then-rename. */
perfpred_status pp_interval_write(const char *dir, const char *device, const pp_interval_q *q,
                                  const int *paths, int n, pp_err *err);

#endif
