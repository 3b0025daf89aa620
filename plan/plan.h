/* plan/: `perfpred calibrate plan`, the layer benchmark plan of a device. plan.c builds the
 * candidates from the zoo, plan_perturb.c densifies them with perturbed configurations,
 * plan_select.c picks rows within the runner's time budget, adds anchors and writes the plan CSV;
 * plan_adaptive.c (`--adaptive`) reads what a first fit says (per-kind held-out errors, per-row
 * errors near which to resample, configurations measured already). Candidates, their signatures
 * and the arena are owned by the plan (plan.c frees them). */
#ifndef PP_PLAN_H
#define PP_PLAN_H

#include "measure/measure.h"
#include "predictor/predictor.h"

/* ------------------------------------------------------- adaptive plans (plan_adaptive.c) ---- */

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
 * (pp_plan_adapt_basis says what was). */
perfpred_status pp_plan_adapt_load(const char *dir, const char *config_dir, const pp_device *dev,
                                   pp_adapt **out, pp_err *err);
void pp_plan_adapt_free(pp_adapt *a);   /* NULL is a no-op */

/* The kind's held-out MAPE in percent from the manifest, NaN when the manifest has no model for
 * it (or no held-out rows). */
double pp_plan_adapt_kind_mape(const pp_adapt *a, pp_op_kind k);
/* 1 when a plan signature (pp_plan_put_sig) is a configuration measured already. */
int pp_plan_adapt_measured(const pp_adapt *a, const char *sig);
/* 1 when held-out rows with errors are known for kind k. */
int pp_plan_adapt_has_rows(const pp_adapt *a, pp_op_kind k);
/* Resampling weight of a candidate (kind f->kind): PP_ADAPT_FLOOR + sum over the kind's held-out
 * rows j of the same operator (op_code) of |pred_j / meas_j - 1| exp(-d_j^2 / (2 h^2)), d_j the
 * pp_feat_vector distance. */
double pp_plan_adapt_row_weight(const pp_adapt *a, const pp_node_feat *f);
/* Budget weights of the kinds in use (use[k] != 0): w = share; with a, w = share x max(held-out
 * MAPE, PP_ADAPT_FLOOR), a kind without a model counting as the worst one, renormalised to sum 1.
 * a may be NULL (plain plans). */
void pp_plan_adapt_kind_weights(const pp_adapt *a, const double *share, const int *use, double *w);
/* What drove the resampling, in words (owned by a). */
const char *pp_plan_adapt_basis(const pp_adapt *a);

/* The plan's signature of a layer row: op type, inputs, attributes sorted by name (plan.c). */
void pp_plan_put_sig(pp_strbuf *b, const pp_layer_row *r);

/* ------------------------------------------------------------ the plan state (plan.c) ---- */

typedef struct cand {
    const char *sig;          /* "op_type\tinputs\tattrs" (arena) */
    const char *source;       /* provenance written to the row's source column */
    int64_t batch;
    pp_op_kind kind;
    int is_base;
    int valid;                /* -1 not yet checked, 0 rejected, 1 rebuilds as a layer row */
    int n_occ;                /* zoo nodes with this configuration (base) */
    double zoo_ms;            /* their estimated time */
    int out_rank;             /* base: the model node's output shape, checked on rebuild */
    int64_t out_dims[PP_MAX_RANK];
    pp_node_feat feat;        /* of the rebuilt row (valid == 1) */
    double cost_s;            /* runner time estimate */
    double key;               /* pick order within its kind (larger first) */
    int picked;
    int measured;             /* adaptive: measured already, never picked */
} cand;

/* Skipped-node reasons, aggregated by (op type, reason), with the first message as example. */
typedef struct skip_reason {
    char key[96];
    char example[200];
    int count;
} skip_reason;

#define MAX_SKIP_REASONS 64

typedef struct plan {
    const perfpred_plan_params *p;
    const pp_device *dev;
    int has_roof;
    pp_layer_models *lm;      /* the device's layer models, when it is calibrated already */
    long n_lm_costed;         /* kernel times the layer models answered */
    pp_arena *arena;
    cand *c;
    int n, cap;
    pp_strmap map;            /* sig -> cand index (keys: the candidates' sigs, in arena) */
    skip_reason skips[MAX_SKIP_REASONS];
    int n_skips;
    perfpred_plan_report *rep;
    double kind_zoo_ms[PP_OPK__COUNT];
    int kind_zoo_nodes[PP_OPK__COUNT];
    pp_logger log;
    double mem_cap_bytes;
    pp_adapt *adapt;          /* adaptive plans: what the first fit says */
    double kind_weight[PP_OPK__COUNT]; /* budget weight of each kind (select_rows) */
    double budget_s;          /* runner time for the picked rows: the budget less the anchors' */
    pp_layer_table **anchor_tables; /* the measured CSVs anchors come from */
    int n_anchor_tables;
    pp_layer_row *anchors;    /* rows measured again, written after the picked rows */
    int n_anchors;
    double anchor_s;
} plan;

/* plan.c: the candidate map (signature -> index, -1 when absent; cand_add copies sig, returns
 * the new index or -1 with err set), a signature parsed back into a row (0, or -1 with why
 * filled), a candidate rebuilt as a single-node graph (sets c->valid, c->feat, c->cost_s), the
 * runner's seconds for a row, and whether the plan takes rows of an operator (--ops). */
int pp_plan_map_find(const plan *P, const char *sig);
int pp_plan_cand_add(plan *P, const char *sig, pp_err *err);
int pp_plan_sig_to_row(const char *sig, pp_arena *a, pp_layer_row *r, char *why, size_t why_n);
void pp_plan_validate(plan *P, cand *c, char *why, size_t why_n);
double pp_plan_row_cost_s(plan *P, const pp_node_feat *f);
int pp_plan_op_wanted(const plan *P, const char *op);

/* plan_perturb.c: variants of the first n_base candidates (the zoo's) within the zoo's observed
 * ranges per kind, plus the pooling window and convolution group grids; appended as candidates. */
perfpred_status pp_plan_perturb(plan *P, int n_base, pp_err *err);

/* plan_select.c, in the order plan.c calls them: anchors (their time out of the budget), domain
 * rows first in the pick order, rows picked per kind to fill the budget, the plan CSV written. */
perfpred_status pp_plan_pick_anchors(plan *P, pp_err *err);
void pp_plan_cover_domain(plan *P);
perfpred_status pp_plan_select_rows(plan *P, pp_err *err);
perfpred_status pp_plan_write(plan *P, pp_err *err);

#endif
