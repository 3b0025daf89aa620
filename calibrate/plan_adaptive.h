/* calibrate/plan_adaptive.h: internal to `perfpred calibrate plan --adaptive` (plan.c and
 * plan_select.c call, plan_adaptive.c answers): what a first fit's manifest.json says about a
 * device's layer models, reduced to per-kind held-out errors, per-row errors near which to
 * resample, and the configurations measured already. */
#ifndef PP_PLAN_ADAPTIVE_H
#define PP_PLAN_ADAPTIVE_H

#include "calibrate/calibrate.h"

/* A kind's error floor (5 %): a near-perfect kind keeps a share of the budget. */
#define PP_ADAPT_FLOOR 0.05
/* Kernel width in pp_feat_vector units (log2 of sizes): rows a factor ~4 apart in every size
 * barely see each other. */
#define PP_ADAPT_BANDWIDTH 2.0

typedef struct pp_adapt pp_adapt;

/* Reads <dir>/manifest.json of device dev, the measured layer CSVs it names (a relative path is
 * looked for under the working folder, then <config_dir>/.., then dir), reproduces the fit's
 * held-out split from them and, where the layer models in dir load, their error on each held-out
 * row. A missing or foreign manifest is an error; missing CSVs or models only narrow what is used
 * (pp_adapt_basis says what was). */
perfpred_status pp_adapt_load(const char *dir, const char *config_dir, const pp_device *dev,
                              pp_adapt **out, pp_err *err);
void pp_adapt_free(pp_adapt *a);   /* NULL is a no-op */

/* The kind's held-out MAPE in percent from the manifest, NaN when the manifest has no model for
 * it (or no held-out rows). */
double pp_adapt_kind_mape(const pp_adapt *a, pp_op_kind k);
/* 1 when a plan signature (pp_plan_put_sig) is a configuration measured already. */
int pp_adapt_measured(const pp_adapt *a, const char *sig);
/* 1 when held-out rows with errors are known for kind k. */
int pp_adapt_has_rows(const pp_adapt *a, pp_op_kind k);
/* Resampling weight of a candidate (kind f->kind): PP_ADAPT_FLOOR + sum over the kind's held-out
 * rows j of the same operator (op_code) of |pred_j / meas_j - 1| exp(-d_j^2 / (2 h^2)), d_j the
 * pp_feat_vector distance. */
double pp_adapt_row_weight(const pp_adapt *a, const pp_node_feat *f);
/* Budget weights of the kinds in use (use[k] != 0): w = share; with a, w = share x max(held-out
 * MAPE, PP_ADAPT_FLOOR), a kind without a model counting as the worst one, renormalised to sum 1.
 * a may be NULL (plain plans). */
void pp_adapt_kind_weights(const pp_adapt *a, const double *share, const int *use, double *w);
/* What drove the resampling, in words (owned by a). */
const char *pp_adapt_basis(const pp_adapt *a);

/* The plan's signature of a layer row: op type, inputs, attributes sorted by name (plan.c). */
void pp_plan_put_sig(pp_strbuf *b, const pp_layer_row *r);

#endif
