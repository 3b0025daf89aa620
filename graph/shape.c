/* graph/shape.c: the shape-inference driver. Applies input overrides and the batch size, checks that
 * graph inputs are static, runs one rule per node in topological order (ops_*.c), marks folded nodes,
 * and checks that every consumed tensor ended with a known shape. Also the helpers rules share. */
#include "graph/shape_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ errors ---- */

perfpred_status pp_sh_error(pp_sctx *c, const pp_node *n, perfpred_status st, const char *fmt, ...)
{
    char msg[PP_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pp_err_set(c->err, st, "%s: node '%s' (%s): %s", c->g->path, n->name, n->op_type, msg);
}

perfpred_status pp_sh_data_dependent(pp_sctx *c, const pp_node *n, int i)
{
    const pp_tensor *t = pp_sh_in(c, n, i);
    return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                       "output shape is data-dependent: it needs the value of input %d ('%s'), "
                       "which is not a constant",
                       i, t ? t->name : "");
}

const char *pp_sh_dims_str(int rank, const int64_t *dims, char *buf, size_t len)
{
    size_t k = 0;
    if (len == 0) return buf;
    buf[0] = '\0';
    if (rank < 0) {
        snprintf(buf, len, "[unknown rank]");
        return buf;
    }
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int d = 0; d < rank && k < len; d++) {
        if (dims[d] < 0)
            k += (size_t)snprintf(buf + k, len - k, "%s?", d ? "," : "");
        else
            k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? "," : "", (long long)dims[d]);
    }
    if (k < len) snprintf(buf + k, len - k, "]");
    return buf;
}

/* ------------------------------------------------------------------ inputs / outputs ---- */

pp_tensor *pp_sh_in(pp_sctx *c, const pp_node *n, int i)
{
    if (i < 0 || i >= n->n_inputs || n->inputs[i] < 0) return NULL;
    return &c->g->tensors[n->inputs[i]];
}

pp_tensor *pp_sh_out(pp_sctx *c, const pp_node *n, int i)
{
    if (i < 0 || i >= n->n_outputs || n->outputs[i] < 0) return NULL;
    return &c->g->tensors[n->outputs[i]];
}

perfpred_status pp_sh_need(pp_sctx *c, const pp_node *n, int i, pp_tensor **t)
{
    pp_tensor *x = pp_sh_in(c, n, i);
    if (!x) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "required input %d is missing", i);
    if (!(x->flags & PP_T_SHAPE_KNOWN) || x->rank < 0) {
        char b[PP_DIMS_BUF];
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "input %d ('%s') has an unknown shape %s", i,
                           x->name, pp_sh_dims_str(x->rank, x->dims, b, sizeof b));
    }
    *t = x;
    return PERFPRED_OK;
}

perfpred_status pp_sh_arity(pp_sctx *c, const pp_node *n, int lo, int hi)
{
    int k = n->n_inputs;
    while (k > 0 && n->inputs[k - 1] < 0) k--;
    if (k < lo || k > hi)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "expects %d to %d inputs, has %d", lo, hi, k);
    return PERFPRED_OK;
}

int pp_sh_has_value(const pp_tensor *t)
{
    return (t->flags & PP_T_CONST) && t->val.n >= 0 &&
           (t->val.n == 0 || t->val.ival || t->val.fval);
}

int pp_sh_inputs_const(pp_sctx *c, const pp_node *n)
{
    for (int i = 0; i < n->n_inputs; i++) {
        const pp_tensor *t = pp_sh_in(c, n, i);
        if (t && !pp_sh_has_value(t)) return 0;
    }
    return 1;
}

int64_t pp_sh_elems(int rank, const int64_t *dims)
{
    int64_t e = 1;
    for (int d = 0; d < rank; d++)
        if (dims[d] < 0 || pp_mul_overflow_i64(e, dims[d], &e)) return -1;
    return e;
}

perfpred_status pp_sh_set(pp_sctx *c, const pp_node *n, int i, int32_t dtype, int rank,
                          const int64_t *dims)
{
    pp_tensor *t = pp_sh_out(c, n, i);
    if (!t) return PERFPRED_OK;
    char b[PP_DIMS_BUF];
    if (rank < 0 || rank > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED,
                           "output %d ('%s') would have rank %d; at most %d is supported", i,
                           t->name, rank, PP_MAX_RANK);
    for (int d = 0; d < rank; d++)
        if (dims[d] < 0)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "output %d ('%s') would have a negative dimension: %s", i, t->name,
                               pp_sh_dims_str(rank, dims, b, sizeof b));
    if (pp_sh_elems(rank, dims) < 0)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "output %d ('%s'): element count of %s overflows 64 bits", i, t->name,
                           pp_sh_dims_str(rank, dims, b, sizeof b));
    t->flags &= ~(uint32_t)PP_T_CONST;
    memset(&t->val, 0, sizeof t->val);
    t->val.n = -1;
    pp_tensor_set_shape(t, dtype, rank, dims);
    return PERFPRED_OK;
}

perfpred_status pp_sh_set_like(pp_sctx *c, const pp_node *n, int i, const pp_tensor *src)
{
    return pp_sh_set(c, n, i, src->dtype, src->rank, src->dims);
}

/* ------------------------------------------------------------------ values ---- */

static int dtype_foldable(int32_t dt)
{
    return dt != PP_DT_UNDEFINED && dt != PP_DT_STRING && dt != PP_DT_COMPLEX64 &&
           dt != PP_DT_COMPLEX128 && pp_dtype_size(dt) > 0;
}

int pp_sh_fold_begin(pp_sctx *c, const pp_node *n, int i, pp_value **v)
{
    pp_tensor *t = pp_sh_out(c, n, i);
    if (!t || !(t->flags & PP_T_SHAPE_KNOWN) || !dtype_foldable(t->dtype)) return 0;
    int64_t e = pp_sh_elems(t->rank, t->dims);
    if (e < 0 || e > PP_FOLD_MAX_ELEMS) return 0;
    pp_value *val = &t->val;
    memset(val, 0, sizeof *val);
    val->dtype = t->dtype;
    val->rank = t->rank;
    memcpy(val->dims, t->dims, sizeof val->dims);
    val->n = e;
    /* one spare element so an empty tensor still has a non-NULL array */
    if (pp_dtype_is_float(t->dtype))
        val->fval = pp_arena_array(c->g->arena, (size_t)e + 1, sizeof(double));
    else
        val->ival = pp_arena_array(c->g->arena, (size_t)e + 1, sizeof(int64_t));
    if (!val->fval && !val->ival) {
        val->n = -1;
        pp_sh_error(c, n, PERFPRED_ERR_NOMEM, "out of memory folding output %d", i);
        return -1;
    }
    *v = val;
    return 1;
}

void pp_sh_fold_end(pp_sctx *c, const pp_node *n, int i)
{
    pp_tensor *t = pp_sh_out(c, n, i);
    if (t) t->flags |= PP_T_CONST;
}

static int64_t sat_i64(double x)
{
    if (x != x) return 0;
    if (x >= 9.2233720368547748e18) return INT64_MAX;
    if (x <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)x;
}

double pp_sh_vf(const pp_value *v, int64_t i)
{
    return v->fval ? v->fval[i] : (double)v->ival[i];
}

int64_t pp_sh_vi(const pp_value *v, int64_t i)
{
    return v->ival ? v->ival[i] : sat_i64(v->fval[i]);
}

/* Integer stores wrap to the dtype's width like a C cast (what ONNX Cast does). */
static int64_t wrap_int(int32_t dt, int64_t x)
{
    switch (dt) {
    case PP_DT_BOOL: return x != 0;
    case PP_DT_INT8: return (int8_t)(uint8_t)((uint64_t)x & 0xffu);
    case PP_DT_UINT8: return (uint8_t)((uint64_t)x & 0xffu);
    case PP_DT_INT16: return (int16_t)(uint16_t)((uint64_t)x & 0xffffu);
    case PP_DT_UINT16: return (uint16_t)((uint64_t)x & 0xffffu);
    case PP_DT_INT32: return (int32_t)(uint32_t)((uint64_t)x & 0xffffffffu);
    case PP_DT_UINT32: return (uint32_t)((uint64_t)x & 0xffffffffu);
    default: return x;
    }
}

void pp_sh_store_f(pp_value *v, int64_t i, double x)
{
    if (v->fval) {
        v->fval[i] = (v->dtype == PP_DT_FLOAT) ? (double)(float)x : x;
        return;
    }
    if (v->dtype == PP_DT_BOOL) {
        v->ival[i] = x != 0.0;
        return;
    }
    v->ival[i] = wrap_int(v->dtype, sat_i64(x));
}

void pp_sh_store_i(pp_value *v, int64_t i, int64_t x)
{
    if (v->fval) {
        v->fval[i] = (v->dtype == PP_DT_FLOAT) ? (double)(float)x : (double)x;
        return;
    }
    v->ival[i] = wrap_int(v->dtype, x);
}

void pp_sh_vcopy(pp_value *dst, int64_t di, const pp_value *src, int64_t si)
{
    if (src->fval) pp_sh_store_f(dst, di, src->fval[si]);
    else pp_sh_store_i(dst, di, src->ival[si]);
}

/* ------------------------------------------------------------------ shape helpers ---- */

perfpred_status pp_sh_axis(pp_sctx *c, const pp_node *n, int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "axis %lld is out of range for rank %d",
                           (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return PERFPRED_OK;
}

perfpred_status pp_sh_broadcast(pp_sctx *c, const pp_node *n, int ra, const int64_t *da, int rb,
                                const int64_t *db, int *r, int64_t *d)
{
    int R = ra > rb ? ra : rb;
    int64_t tmp[PP_MAX_RANK];
    for (int k = 0; k < R; k++) {
        int ia = k - (R - ra), ib = k - (R - rb);
        int64_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
        if (x == y || y == 1) tmp[k] = x;
        else if (x == 1) tmp[k] = y;
        else {
            char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "shapes %s and %s do not broadcast",
                               pp_sh_dims_str(ra, da, b1, sizeof b1),
                               pp_sh_dims_str(rb, db, b2, sizeof b2));
        }
    }
    memcpy(d, tmp, (size_t)R * sizeof *d);
    *r = R;
    return PERFPRED_OK;
}

int64_t pp_sh_bcast_index(int R, const int64_t *od, int64_t o, int r, const int64_t *id)
{
    int64_t idx = 0, stride = 1;
    for (int k = R - 1; k >= 0; k--) {
        int64_t coord = od[k] ? o % od[k] : 0;
        o = od[k] ? o / od[k] : 0;
        int j = k - (R - r);
        if (j >= 0) {
            if (id[j] != 1) idx += coord * stride;
            stride *= id[j];
        }
    }
    return idx;
}

int64_t pp_sh_attr_ints(const pp_node *n, const char *name, const int64_t **vals)
{
    const pp_attr *a = pp_node_attr(n, name);
    if (!a) return -1;
    if (a->type == PP_ATTR_INTS) {
        *vals = a->ints;
        return a->n;
    }
    if (a->type == PP_ATTR_INT) {
        *vals = &a->i;
        return 1;
    }
    return -1;
}

perfpred_status pp_sh_ints(pp_sctx *c, const pp_node *n, int i, const char *attr,
                           const int64_t **vals, int64_t *count, int *present)
{
    pp_tensor *t = pp_sh_in(c, n, i);
    *present = 0;
    *vals = NULL;
    *count = 0;
    if (t) {
        if (!pp_sh_has_value(t)) return pp_sh_data_dependent(c, n, i);
        if (t->val.fval || pp_dtype_is_float(t->dtype))
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "input %d ('%s') must be an integer tensor, not %s", i, t->name,
                               pp_dtype_name(t->dtype));
        if (t->val.rank > 1)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "input %d ('%s') must be a 1-D list, has rank %d", i, t->name,
                               t->val.rank);
        *vals = t->val.ival;
        *count = t->val.n;
        *present = 1;
        return PERFPRED_OK;
    }
    if (attr) {
        const pp_attr *a = pp_node_attr(n, attr);
        if (a) {
            if (a->type != PP_ATTR_INTS && a->type != PP_ATTR_INT)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute '%s' must be ints", attr);
            *count = pp_sh_attr_ints(n, attr, vals);
            *present = 1;
        }
    }
    return PERFPRED_OK;
}

static perfpred_status scalar_input(pp_sctx *c, const pp_node *n, int i, const pp_tensor **t)
{
    const pp_tensor *x = pp_sh_in(c, n, i);
    if (!x) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "required input %d is missing", i);
    if (!pp_sh_has_value(x)) return pp_sh_data_dependent(c, n, i);
    if (x->val.n != 1)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "input %d ('%s') must hold one element, holds %lld", i, x->name,
                           (long long)x->val.n);
    *t = x;
    return PERFPRED_OK;
}

perfpred_status pp_sh_scalar_i(pp_sctx *c, const pp_node *n, int i, int64_t *out)
{
    const pp_tensor *x = NULL;
    perfpred_status st = scalar_input(c, n, i, &x);
    if (st) return st;
    *out = pp_sh_vi(&x->val, 0);
    return PERFPRED_OK;
}

perfpred_status pp_sh_scalar_f(pp_sctx *c, const pp_node *n, int i, double *out)
{
    const pp_tensor *x = NULL;
    perfpred_status st = scalar_input(c, n, i, &x);
    if (st) return st;
    *out = pp_sh_vf(&x->val, 0);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ driver ---- */

static const pp_op_entry *const all_tables[] = {pp_ops_elementwise, pp_ops_nn, pp_ops_tensor,
                                                pp_ops_shape, pp_ops_reduce};

/* The rule tables flattened in table order and indexed by op type, once per process: the first
 * table that names an op type answers, as a scan of the tables in order would. */
#define MAX_RULES (PP_NAME_SLOTS / 2)
static const char *rule_names[MAX_RULES];
static pp_op_rule rule_fns[MAX_RULES];
static pp_name_index rule_index;
static pthread_once_t rule_once = PTHREAD_ONCE_INIT;

static void rule_index_build(void)
{
    int n = 0;
    for (size_t k = 0; k < sizeof all_tables / sizeof all_tables[0]; k++)
        for (const pp_op_entry *e = all_tables[k]; e->op_type; e++) {
            PP_ASSERT(n < MAX_RULES);
            rule_names[n] = e->op_type;
            rule_fns[n++] = e->rule;
        }
    PP_ASSERT(pp_name_index_build(&rule_index, rule_names, n) == 0);
}

static pp_op_rule find_rule(const pp_node *n)
{
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return NULL;
    pthread_once(&rule_once, rule_index_build);
    int i = pp_name_index_find(&rule_index, n->op_type);
    return i < 0 ? NULL : rule_fns[i];
}

/* --allow-unknown: every output takes the dtype and shape of the largest input (by elements; the
 * first on ties), the cheapest honest guess for an unknown element-wise-like op. */
static perfpred_status unknown_rule(pp_sctx *c, pp_node *n)
{
    const pp_tensor *best = NULL;
    int64_t best_e = -1;
    for (int i = 0; i < n->n_inputs; i++) {
        const pp_tensor *t = pp_sh_in(c, n, i);
        if (!t || !(t->flags & PP_T_SHAPE_KNOWN)) continue;
        int64_t e = pp_tensor_elems(t);
        if (e > best_e) {
            best = t;
            best_e = e;
        }
    }
    if (!best)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "unknown op with no input of known shape: cannot guess its output shape");
    for (int o = 0; o < n->n_outputs; o++) {
        perfpred_status st = pp_sh_set_like(c, n, o, best);
        if (st) return st;
    }
    n->unknown_op = 1;
    c->g->totals.n_unknown_ops++;
    return PERFPRED_OK;
}

/* Names of the non-weight graph inputs (what a user would override), for error messages. */
static void known_inputs(const pp_graph *g, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->n_inputs && k + 1 < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s'%s'", k ? ", " : "",
                              g->tensors[g->inputs[i]].name);
    if (!buf[0]) snprintf(buf, len, "none");
}

static perfpred_status apply_overrides(pp_graph *g, const pp_shape_opts *o, pp_err *err)
{
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    if (o->n_inputs < 0 || (o->n_inputs > 0 && !o->inputs))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: bad input override list", g->path);
    if (o->batch < 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: batch size %lld is negative",
                          g->path, (long long)o->batch);
    for (int k = 0; k < o->n_inputs; k++) {
        const perfpred_input_override *ov = &o->inputs[k];
        int ti = ov->name ? pp_graph_find(g, ov->name) : -1;
        if (ti < 0 || !(g->tensors[ti].flags & PP_T_GRAPH_INPUT)) {
            char known[600];
            known_inputs(g, known, sizeof known);
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "%s: --input '%s': the model has no graph input of that name "
                              "(inputs: %s)",
                              g->path, ov->name ? ov->name : "(null)", known);
        }
        pp_tensor *t = &g->tensors[ti];
        if (ov->rank < 0 || ov->rank > PP_MAX_RANK)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "%s: --input '%s': rank %d is out of range (0..%d)", g->path,
                              t->name, ov->rank, PP_MAX_RANK);
        for (int d = 0; d < ov->rank; d++)
            if (ov->dims[d] < 0)
                return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                                  "%s: --input '%s': dimension %d is negative (%s)", g->path,
                                  t->name, d, pp_sh_dims_str(ov->rank, ov->dims, b1, sizeof b1));
        if (t->rank >= 0 && t->rank != ov->rank)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "%s: --input '%s': override %s has rank %d but the model declares "
                              "rank %d %s",
                              g->path, t->name, pp_sh_dims_str(ov->rank, ov->dims, b1, sizeof b1),
                              ov->rank, t->rank, pp_sh_dims_str(t->rank, t->dims, b2, sizeof b2));
        int same = t->rank == ov->rank;
        for (int d = 0; same && d < ov->rank; d++) same = t->dims[d] == ov->dims[d];
        if (!same) {
            /* a value read from the file no longer matches the new shape */
            t->flags &= ~(uint32_t)PP_T_CONST;
            t->val.n = -1;
        }
        pp_tensor_set_shape(t, t->dtype, ov->rank, ov->dims);
    }
    if (o->batch > 0) {
        for (int i = 0; i < g->n_inputs; i++) {
            pp_tensor *t = &g->tensors[g->inputs[i]];
            if ((t->flags & PP_T_WEIGHT) || t->rank < 1 || t->dims[0] >= 0) continue;
            int64_t d[PP_MAX_RANK];
            memcpy(d, t->dims, sizeof d);
            d[0] = o->batch;
            pp_tensor_set_shape(t, t->dtype, t->rank, d);
        }
    }
    return PERFPRED_OK;
}

static perfpred_status check_sources(pp_graph *g, pp_err *err)
{
    char b[PP_DIMS_BUF];
    for (int i = 0; i < g->n_tensors; i++) {
        pp_tensor *t = &g->tensors[i];
        int source = (t->flags & (PP_T_GRAPH_INPUT | PP_T_INITIALIZER)) && t->producer < 0;
        if (!source) continue;
        int weight = (t->flags & (PP_T_WEIGHT | PP_T_INITIALIZER)) != 0;
        if (t->rank < 0)
            return weight ? pp_err_set(err, PERFPRED_ERR_SHAPE,
                                       "%s: weight '%s' has no declared shape; weights must have "
                                       "static shapes",
                                       g->path, t->name)
                          : pp_err_set(err, PERFPRED_ERR_SHAPE,
                                       "%s: input '%s' has no declared shape; set it with --input "
                                       "%s=AxBxC",
                                       g->path, t->name, t->name);
        for (int d = 0; d < t->rank; d++) {
            if (t->dims[d] >= 0) continue;
            const char *p = t->dim_param[d] ? t->dim_param[d] : "?";
            if (weight)
                return pp_err_set(err, PERFPRED_ERR_SHAPE,
                                  "%s: weight '%s' has no static shape: dim %d is '%s' in %s; "
                                  "weights must have static shapes",
                                  g->path, t->name, d, p,
                                  pp_sh_dims_str(t->rank, t->dims, b, sizeof b));
            return pp_err_set(err, PERFPRED_ERR_SHAPE,
                              "%s: input '%s' has an unresolved symbolic dim %d ('%s') in %s; set "
                              "it with --input %s=AxBxC or --batch N",
                              g->path, t->name, d, p, pp_sh_dims_str(t->rank, t->dims, b, sizeof b),
                              t->name);
        }
        if (t->dtype == PP_DT_UNDEFINED)
            return pp_err_set(err, PERFPRED_ERR_SHAPE, "%s: %s '%s' has no element type", g->path,
                              weight ? "weight" : "input", t->name);
    }
    return PERFPRED_OK;
}

/* Resets a node output before its rule runs, so a rule that forgets an output is caught and stale
 * value_info hints never survive. */
static void reset_output(pp_tensor *t)
{
    t->flags &= ~(uint32_t)(PP_T_CONST | PP_T_SHAPE_KNOWN);
    memset(&t->val, 0, sizeof t->val);
    t->val.n = -1;
    t->rank = -1;
    t->dtype = PP_DT_UNDEFINED;
    for (int d = 0; d < PP_MAX_RANK; d++) {
        t->dims[d] = -1;
        t->dim_param[d] = NULL;
    }
}

/* A node built as a copy of an earlier one whose inputs are alike (pp_node_copy_source): its
 * outputs get the shapes that node's rule gave its own, when the rule left them known, not
 * constant, and the node neither folded nor unknown. 0: nothing copied, run the rule. */
static int copy_shapes(pp_graph *g, const pp_node *n, const pp_node *src)
{
    if (src->unknown_op || src->feat.folded) return 0;
    for (int o = 0; o < n->n_outputs; o++) {
        int a = n->outputs[o], b = src->outputs[o];
        if ((a < 0) != (b < 0)) return 0;
        uint32_t known = b >= 0 ? g->tensors[b].flags & (PP_T_SHAPE_KNOWN | PP_T_CONST) : 0;
        if (b >= 0 && (known != PP_T_SHAPE_KNOWN || a == b)) return 0;
    }
    for (int o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] < 0) continue;
        pp_tensor *t = &g->tensors[n->outputs[o]];
        const pp_tensor *f = &g->tensors[src->outputs[o]];
        t->dtype = f->dtype;
        t->rank = f->rank;
        memcpy(t->dims, f->dims, sizeof t->dims);
        memcpy(t->dim_param, f->dim_param, sizeof t->dim_param);
        t->val = f->val;
        t->flags = (t->flags & ~(uint32_t)PP_T_CONST) | PP_T_SHAPE_KNOWN;
    }
    return 1;
}

perfpred_status pp_graph_infer_shapes(pp_graph *g, const pp_shape_opts *opts, pp_err *err)
{
    pp_err scratch; /* rules read c->err->status, so there is always a record */
    if (!err) err = &scratch;
    pp_err_clear(err);
    if (!g) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "shape inference: NULL graph");
    pp_shape_opts none = {0};
    if (!opts) opts = &none;
    perfpred_status st = apply_overrides(g, opts, err);
    if (!st) st = check_sources(g, err);
    if (st) return st;

    pp_sctx c = {g, err, g->opset > 0 ? g->opset : 17};
    g->totals.n_unknown_ops = 0;
    if (g->memo && pp_node_memo_begin(g->memo, g->n_nodes)) g->memo = NULL; /* OOM: without */
    for (int i = 0; i < g->n_nodes; i++) {
        pp_node *n = &g->nodes[i];
        n->unknown_op = 0;
        n->feat.folded = 0;
        int src = n->copy_of ? pp_node_copy_source(g, i) : -1;
        n->copy_src = src + 1;
        if (src >= 0 && copy_shapes(g, n, &g->nodes[src])) continue;
        if (g->memo && pp_node_memo_shapes(g, i)) continue;
        pp_op_rule rule = find_rule(n);
        if (!rule && !opts->allow_unknown)
            return pp_err_set(err, PERFPRED_ERR_UNSUPPORTED,
                              "%s: node '%s': unsupported op '%s' (domain '%s'); use "
                              "--allow-unknown to treat it as element-wise",
                              g->path, n->name, n->op_type, n->domain);
        int is_constant = rule && strcmp(n->op_type, "Constant") == 0 && !n->domain[0];
        for (int o = 0; o < n->n_outputs; o++) {
            pp_tensor *t = pp_sh_out(&c, n, o);
            if (t && !is_constant) reset_output(t);
        }
        st = rule ? rule(&c, n) : unknown_rule(&c, n);
        if (st) return st;
        int any = 0, all_const = 1;
        for (int o = 0; o < n->n_outputs; o++) {
            pp_tensor *t = pp_sh_out(&c, n, o);
            if (!t) continue;
            any = 1;
            if (!(t->flags & PP_T_SHAPE_KNOWN))
                return pp_sh_error(&c, n, PERFPRED_ERR_INTERNAL,
                                   "output %d ('%s') was left without a shape", o, t->name);
            if (!(t->flags & PP_T_CONST)) all_const = 0;
        }
        if (any && all_const && !n->unknown_op) {
            n->feat.folded = 1;
            n->feat.kind = PP_OPK_SHAPE;
        }
        if (g->memo) pp_node_memo_shapes_put(g, i);
    }

    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            const pp_tensor *t = pp_sh_in(&c, n, k);
            if (t && !(t->flags & PP_T_SHAPE_KNOWN))
                return pp_sh_error(&c, n, PERFPRED_ERR_SHAPE, "input %d ('%s') has no known shape",
                                   k, t->name);
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const pp_tensor *t = &g->tensors[g->outputs[i]];
        if (t->flags & PP_T_SHAPE_KNOWN) continue;
        if (t->producer >= 0)
            return pp_sh_error(&c, &g->nodes[t->producer], PERFPRED_ERR_SHAPE,
                               "graph output '%s' has no known shape", t->name);
        return pp_err_set(err, PERFPRED_ERR_SHAPE, "%s: graph output '%s' has no known shape",
                          g->path, t->name);
    }
    return PERFPRED_OK;
}
