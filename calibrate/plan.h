/* calibrate/plan.h: internal to `perfpred calibrate plan`: the plan state that plan.c builds
 * from the zoo, plan_perturb.c densifies with perturbed configurations and plan_select.c picks
 * rows from, anchors and writes. Candidates, their signatures and the arena are owned by the plan
 * (plan.c frees them). */
#ifndef PP_PLAN_H
#define PP_PLAN_H

#include "calibrate/calibrate.h"
#include "calibrate/plan_adaptive.h"
#include "predictor/predictor.h"

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
    int *slots;               /* open-addressing hash: sig -> cand index, -1 empty */
    size_t n_slots;
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
