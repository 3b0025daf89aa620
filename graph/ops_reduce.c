/* graph/ops_reduce.c: shape rules for reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/
 * LogSum/LogSumExp with keepdims and noop_with_empty_axes; axes as attribute or, from opset 13 for
 * ReduceSum and 18 for the rest, as input) and ArgMax/ArgMin. Sum/Prod/Max/Min/Mean of constants
 * fold, since exports compute element counts with ReduceProd over Shape. */
#include "graph/shape_internal.h"

#include <math.h>
#include <string.h>

typedef enum { R_OTHER, R_SUM, R_PROD, R_MAX, R_MIN, R_MEAN } reduce_fold;

static reduce_fold reduce_kind(const char *op)
{
    if (!strcmp(op, "ReduceSum")) return R_SUM;
    if (!strcmp(op, "ReduceProd")) return R_PROD;
    if (!strcmp(op, "ReduceMax")) return R_MAX;
    if (!strcmp(op, "ReduceMin")) return R_MIN;
    if (!strcmp(op, "ReduceMean")) return R_MEAN;
    return R_OTHER;
}

static perfpred_status fold_reduce(pp_sctx *c, pp_node *n, const pp_tensor *x, const int *red,
                                   reduce_fold f)
{
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    int64_t od[PP_MAX_RANK]; /* output dims with reduced axes kept as 1 */
    for (int k = 0; k < x->rank; k++) od[k] = red[k] ? 1 : x->dims[k];
    int64_t *cnt = pp_arena_array(c->g->arena, (size_t)v->n + 1, sizeof *cnt);
    if (!cnt) return pp_sh_error(c, n, PERFPRED_ERR_NOMEM, "out of memory folding");
    for (int64_t i = 0; i < x->val.n; i++) {
        int64_t rem = i, o = 0, stride = 1;
        for (int k = x->rank - 1; k >= 0; k--) {
            int64_t coord = rem % x->dims[k];
            rem /= x->dims[k];
            if (!red[k]) o += coord * stride;
            stride *= od[k];
        }
        int first = cnt[o]++ == 0;
        if (v->fval) {
            double a = v->fval[o], b = pp_sh_vf(&x->val, i);
            switch (f) {
            case R_PROD: a = first ? b : a * b; break;
            case R_MAX: a = first || b > a ? b : a; break;
            case R_MIN: a = first || b < a ? b : a; break;
            default: a = first ? b : a + b; break;
            }
            v->fval[o] = a;
        } else {
            int64_t a = v->ival[o], b = pp_sh_vi(&x->val, i);
            switch (f) {
            case R_PROD: a = first ? b : (int64_t)((uint64_t)a * (uint64_t)b); break;
            case R_MAX: a = first || b > a ? b : a; break;
            case R_MIN: a = first || b < a ? b : a; break;
            default: a = first ? b : (int64_t)((uint64_t)a + (uint64_t)b); break;
            }
            v->ival[o] = a;
        }
    }
    for (int64_t o = 0; o < v->n; o++) {
        if (cnt[o] == 0) { /* reduction over an empty axis: the identity element */
            if (f == R_PROD) pp_sh_store_i(v, o, 1);
            else if (f == R_MAX || f == R_MIN) return PERFPRED_OK; /* undefined: leave unfolded */
        } else if (f == R_MEAN) {
            if (v->fval) pp_sh_store_f(v, o, v->fval[o] / (double)cnt[o]);
            else v->ival[o] /= cnt[o];
        } else if (v->fval) {
            pp_sh_store_f(v, o, v->fval[o]); /* round to the output precision */
        } else {
            pp_sh_store_i(v, o, v->ival[o]);
        }
    }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

static perfpred_status rule_reduce(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *ax;
    int64_t cnt;
    int present;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, "axes", &ax, &cnt, &present);
    if (st) return st;
    int keep = pp_node_attr_i(n, "keepdims", 1) != 0;
    int noop = pp_node_attr_i(n, "noop_with_empty_axes", 0) != 0;
    int red[PP_MAX_RANK] = {0};
    if (!present || cnt == 0) {
        if (noop) {
            if ((st = pp_sh_set_like(c, n, 0, x))) return st;
            return PERFPRED_OK;
        }
        for (int k = 0; k < x->rank; k++) red[k] = 1;
    } else {
        for (int64_t i = 0; i < cnt; i++) {
            int a;
            if ((st = pp_sh_axis(c, n, ax[i], x->rank, &a))) return st;
            red[a] = 1;
        }
    }
    int64_t d[PP_MAX_RANK];
    int r = 0;
    for (int k = 0; k < x->rank; k++) {
        if (!red[k]) d[r++] = x->dims[k];
        else if (keep) d[r++] = 1;
    }
    if ((st = pp_sh_set(c, n, 0, x->dtype, r, d))) return st;
    reduce_fold f = reduce_kind(n->op_type);
    if (f == R_OTHER || !pp_sh_has_value(x)) return PERFPRED_OK;
    return fold_reduce(c, n, x, red, f);
}

/* ArgMax/ArgMin: int64, dims[axis] becomes 1 (keepdims) or disappears. */
static perfpred_status rule_arg(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int axis;
    if ((st = pp_sh_axis(c, n, pp_node_attr_i(n, "axis", 0), x->rank, &axis))) return st;
    int keep = pp_node_attr_i(n, "keepdims", 1) != 0;
    int64_t d[PP_MAX_RANK];
    int r = 0;
    for (int k = 0; k < x->rank; k++) {
        if (k != axis) d[r++] = x->dims[k];
        else if (keep) d[r++] = 1;
    }
    return pp_sh_set(c, n, 0, PP_DT_INT64, r, d);
}

const pp_op_entry pp_ops_reduce[] = {
    {"ReduceSum", rule_reduce},   {"ReduceMean", rule_reduce},   {"ReduceMax", rule_reduce},
    {"ReduceMin", rule_reduce},   {"ReduceProd", rule_reduce},   {"ReduceL1", rule_reduce},
    {"ReduceL2", rule_reduce},    {"ReduceSumSquare", rule_reduce},
    {"ReduceLogSum", rule_reduce}, {"ReduceLogSumExp", rule_reduce},
    {"ArgMax", rule_arg},         {"ArgMin", rule_arg},
    {NULL, NULL},
};
