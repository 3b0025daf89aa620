/* graph/shape_internal.h: private contract between the shape-inference driver (shape.c) and the
 * per-family op rules (ops_*.c). One rule per op type computes output dtypes and dims and, for the
 * shape-arithmetic ops, folds constant inputs into constant output values stored in g->arena. */
#ifndef PP_SHAPE_INTERNAL_H
#define PP_SHAPE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

/* Folded values are kept up to this many elements. Larger than PP_CONST_MAX_ELEMS on purpose: the
 * shifted-window masks of Swin-style exports are built by shape arithmetic on ~10^5-element tensors
 * and must still fold. Beyond it, outputs get shapes only (the node then runs as a real kernel). */
#define PP_FOLD_MAX_ELEMS ((int64_t)1 << 18)

/* The state of one inference pass; tensors are never created during the pass, so pointers into
 * g->tensors stay valid while rules run. */
typedef struct pp_sctx {
    pp_graph *g;
    pp_err *err;
    int64_t opset;   /* default-domain opset; 17 when the graph does not say */
} pp_sctx;

typedef perfpred_status (*pp_op_rule)(pp_sctx *c, pp_node *n);
typedef struct pp_op_entry {
    const char *op_type;
    pp_op_rule rule;
} pp_op_entry;

/* Rule tables, each terminated by {NULL, NULL}. */
extern const pp_op_entry pp_ops_elementwise[];
extern const pp_op_entry pp_ops_nn[];
extern const pp_op_entry pp_ops_tensor[];
extern const pp_op_entry pp_ops_shape[];
extern const pp_op_entry pp_ops_reduce[];

/* ---- errors: every message starts "<file>: node '<name>' (<op>): " ---- */
perfpred_status pp_sh_error(pp_sctx *c, const pp_node *n, perfpred_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* PERFPRED_ERR_SHAPE for an output shape that depends on a runtime value of input i. The message
 * contains the phrase "data-dependent" (callers and tests may rely on it). */
perfpred_status pp_sh_data_dependent(pp_sctx *c, const pp_node *n, int i);
/* "[1,3,224,224]" (unknown dims print as '?'); returns buf. */
const char *pp_sh_dims_str(int rank, const int64_t *dims, char *buf, size_t len);
#define PP_DIMS_BUF 192

/* ---- inputs and outputs ---- */
pp_tensor *pp_sh_in(pp_sctx *c, const pp_node *n, int i);   /* NULL if omitted or absent */
pp_tensor *pp_sh_out(pp_sctx *c, const pp_node *n, int i);  /* NULL if omitted or absent */
/* A required input whose shape is known; error naming the node otherwise. */
perfpred_status pp_sh_need(pp_sctx *c, const pp_node *n, int i, pp_tensor **t);
/* Requires n_inputs within [lo, hi] counting only present trailing inputs. */
perfpred_status pp_sh_arity(pp_sctx *c, const pp_node *n, int lo, int hi);
/* Value known (PP_T_CONST with arrays). */
int pp_sh_has_value(const pp_tensor *t);
/* Every present input has a value. */
int pp_sh_inputs_const(pp_sctx *c, const pp_node *n);

/* Sets output i (no-op when omitted): dims must be >= 0 and rank <= PP_MAX_RANK. */
perfpred_status pp_sh_set(pp_sctx *c, const pp_node *n, int i, int32_t dtype, int rank,
                          const int64_t *dims);
perfpred_status pp_sh_set_like(pp_sctx *c, const pp_node *n, int i, const pp_tensor *src);

/* ---- folding: after pp_sh_set, fold_begin allocates output i's value (zeroed) in g->arena.
 * Returns 1 with *v set, 0 when the value cannot be kept (omitted output, too large, non-numeric
 * dtype), -1 on OOM with the error set. fold_end marks the output PP_T_CONST. ---- */
int pp_sh_fold_begin(pp_sctx *c, const pp_node *n, int i, pp_value **v);
void pp_sh_fold_end(pp_sctx *c, const pp_node *n, int i);

/* Element access with conversion (values are int64 for integer/bool dtypes, double for floats). */
double pp_sh_vf(const pp_value *v, int64_t i);
int64_t pp_sh_vi(const pp_value *v, int64_t i);
void pp_sh_store_f(pp_value *v, int64_t i, double x);   /* converts to v->dtype (cast semantics) */
void pp_sh_store_i(pp_value *v, int64_t i, int64_t x);
void pp_sh_vcopy(pp_value *dst, int64_t di, const pp_value *src, int64_t si);

/* ---- shape helpers ---- */
/* axis in [-rank, rank-1] -> [0, rank-1]; error naming the node otherwise. */
perfpred_status pp_sh_axis(pp_sctx *c, const pp_node *n, int64_t axis, int rank, int *out);
/* Numpy multidirectional broadcast of a and b; error naming both shapes on mismatch. */
perfpred_status pp_sh_broadcast(pp_sctx *c, const pp_node *n, int ra, const int64_t *da, int rb,
                                const int64_t *db, int *r, int64_t *d);
/* Flat index into an input of shape (r, id) broadcast to output (R, od) at output flat index o. */
int64_t pp_sh_bcast_index(int R, const int64_t *od, int64_t o, int r, const int64_t *id);
/* Overflow-checked element count of dims; -1 on overflow. */
int64_t pp_sh_elems(int rank, const int64_t *dims);
/* Integer list taken from input i when present (must be a constant, else a data-dependent error),
 * otherwise from INTS attribute attr (attr may be NULL). *present = 0 when neither exists. */
perfpred_status pp_sh_ints(pp_sctx *c, const pp_node *n, int i, const char *attr,
                           const int64_t **vals, int64_t *count, int *present);
/* Scalar (or 1-element) constant input i as int64 / double; data-dependent error if not constant. */
perfpred_status pp_sh_scalar_i(pp_sctx *c, const pp_node *n, int i, int64_t *out);
perfpred_status pp_sh_scalar_f(pp_sctx *c, const pp_node *n, int i, double *out);
/* Checked int64 arithmetic for dims computed from attribute values: on overflow *ovf is set and 0
 * returned, so a whole formula is evaluated and checked once. */
static inline int64_t pp_ck_add(int *ovf, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}
static inline int64_t pp_ck_sub(int *ovf, int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}
static inline int64_t pp_ck_mul(int *ovf, int64_t a, int64_t b)
{
    int64_t r;
    if (pp_mul_overflow_i64(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}

/* Integer list from an INTS attribute; returns count, -1 if absent. */
int64_t pp_sh_attr_ints(const pp_node *n, const char *name, const int64_t **vals);

#endif
