/* graph/ops_shape.c: ops whose outputs are (mostly) known before run time: Constant, Shape, Size,
 * ConstantOfShape, Range, the window generators, MelWeightMatrix, and the data-dependent ops
 * (NonZero, Unique, Compress, NonMaxSuppression) that only resolve when their inputs are constants. */
#include "graph/shape_internal.h"

#include <math.h>
#include <string.h>

/* Constant: from `value` (tensor) or value_float(s) / value_int(s) / value_string(s). Idempotent:
 * the loader may already have materialized the output. */
static perfpred_status rule_constant(pp_sctx *c, pp_node *n)
{
    pp_tensor *o = pp_sh_out(c, n, 0);
    if (!o) return PERFPRED_OK;
    const pp_attr *a = n->n_attrs > 0 ? &n->attrs[0] : NULL;
    for (int k = 0; k < n->n_attrs; k++)
        if (!strncmp(n->attrs[k].name, "value", 5) || !strcmp(n->attrs[k].name, "sparse_value"))
            a = &n->attrs[k];
    if (!a) {
        if (o->flags & PP_T_SHAPE_KNOWN) return PERFPRED_OK;
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "has no value attribute");
    }
    perfpred_status st;
    int64_t len;
    pp_value *v;
    int r;
    if (!strcmp(a->name, "value") && a->type == PP_ATTR_TENSOR) {
        st = pp_sh_set(c, n, 0, a->t.dtype, a->t.rank, a->t.dims);
        if (st) return st;
        if (a->t.n >= 0 && (a->t.n == 0 || a->t.ival || a->t.fval)) {
            o->val = a->t; /* both live in g->arena */
            o->flags |= PP_T_CONST;
        }
        return PERFPRED_OK;
    }
    if (!strcmp(a->name, "value_float") && a->type == PP_ATTR_FLOAT) {
        if ((st = pp_sh_set(c, n, 0, PP_DT_FLOAT, 0, NULL))) return st;
        if ((r = pp_sh_fold_begin(c, n, 0, &v)) < 0) return c->err->status;
        if (r) {
            pp_sh_store_f(v, 0, a->f);
            pp_sh_fold_end(c, n, 0);
        }
        return PERFPRED_OK;
    }
    if (!strcmp(a->name, "value_int") && a->type == PP_ATTR_INT) {
        if ((st = pp_sh_set(c, n, 0, PP_DT_INT64, 0, NULL))) return st;
        if ((r = pp_sh_fold_begin(c, n, 0, &v)) < 0) return c->err->status;
        if (r) {
            v->ival[0] = a->i;
            pp_sh_fold_end(c, n, 0);
        }
        return PERFPRED_OK;
    }
    if ((!strcmp(a->name, "value_floats") && a->type == PP_ATTR_FLOATS) ||
        (!strcmp(a->name, "value_ints") && a->type == PP_ATTR_INTS)) {
        int fl = a->type == PP_ATTR_FLOATS;
        len = a->n;
        if ((st = pp_sh_set(c, n, 0, fl ? PP_DT_FLOAT : PP_DT_INT64, 1, &len))) return st;
        if ((r = pp_sh_fold_begin(c, n, 0, &v)) < 0) return c->err->status;
        if (r) {
            for (int64_t i = 0; i < len; i++) {
                if (fl) pp_sh_store_f(v, i, a->floats[i]);
                else v->ival[i] = a->ints[i];
            }
            pp_sh_fold_end(c, n, 0);
        }
        return PERFPRED_OK;
    }
    if (!strcmp(a->name, "value_string") && a->type == PP_ATTR_STRING)
        return pp_sh_set(c, n, 0, PP_DT_STRING, 0, NULL);
    if (!strcmp(a->name, "value_strings") && a->type == PP_ATTR_STRINGS) {
        len = a->n;
        return pp_sh_set(c, n, 0, PP_DT_STRING, 1, &len);
    }
    return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "unsupported value attribute '%s'",
                       a->name);
}

/* Shape(x) with opset-15 start/end (negative counts from the back, both clamped to [0, rank]). */
static perfpred_status rule_shape(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int64_t r = x->rank;
    int64_t s = pp_node_attr_i(n, "start", 0), e = pp_node_attr_i(n, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : (s > r ? r : s);
    e = e < 0 ? 0 : (e > r ? r : e);
    int64_t len = e > s ? e - s : 0;
    if ((st = pp_sh_set(c, n, 0, PP_DT_INT64, 1, &len))) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok < 0) return c->err->status;
    if (ok) {
        for (int64_t i = 0; i < len; i++) v->ival[i] = x->dims[s + i];
        pp_sh_fold_end(c, n, 0);
    }
    return PERFPRED_OK;
}

static perfpred_status rule_size(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_set(c, n, 0, PP_DT_INT64, 0, NULL);
    if (st) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok < 0) return c->err->status;
    if (ok) {
        v->ival[0] = pp_sh_elems(x->rank, x->dims);
        pp_sh_fold_end(c, n, 0);
    }
    return PERFPRED_OK;
}

/* Reads a constant 1-D shape tensor (input i) into dims; every entry must be >= 0. */
static perfpred_status shape_input(pp_sctx *c, pp_node *n, int i, int *rank, int64_t *dims)
{
    const int64_t *v;
    int64_t cnt;
    int present;
    perfpred_status st = pp_sh_ints(c, n, i, NULL, &v, &cnt, &present);
    if (st) return st;
    if (!present) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "input %d is missing", i);
    if (cnt > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "shape of rank %lld exceeds %d",
                           (long long)cnt, PP_MAX_RANK);
    for (int64_t k = 0; k < cnt; k++) {
        if (v[k] < 0) {
            char b[PP_DIMS_BUF];
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "shape input %s has a negative entry",
                               pp_sh_dims_str((int)cnt, v, b, sizeof b));
        }
        dims[k] = v[k];
    }
    *rank = (int)cnt;
    return PERFPRED_OK;
}

/* ConstantOfShape(shape): `value` is a one-element tensor (default float32 0). */
static perfpred_status rule_constant_of_shape(pp_sctx *c, pp_node *n)
{
    int rank = 0;
    int64_t dims[PP_MAX_RANK];
    perfpred_status st = shape_input(c, n, 0, &rank, dims);
    if (st) return st;
    const pp_attr *a = pp_node_attr(n, "value");
    int32_t dt = PP_DT_FLOAT;
    double fv = 0.0;
    int64_t iv = 0;
    int known = 1;
    if (a) {
        if (a->type != PP_ATTR_TENSOR || (a->t.n >= 0 && a->t.n != 1))
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "'value' must be a one-element tensor");
        dt = a->t.dtype;
        if (a->t.fval) fv = a->t.fval[0];
        else if (a->t.ival) iv = a->t.ival[0];
        else known = 0;
    }
    if ((st = pp_sh_set(c, n, 0, dt, rank, dims)) || !known) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok < 0) return c->err->status;
    if (ok) {
        for (int64_t i = 0; i < v->n; i++) {
            if (a && a->t.ival) pp_sh_store_i(v, i, iv);
            else pp_sh_store_f(v, i, fv);
        }
        pp_sh_fold_end(c, n, 0);
    }
    return PERFPRED_OK;
}

/* Range(start, limit, delta): max(ceil((limit - start) / delta), 0) elements. */
static perfpred_status rule_range(pp_sctx *c, pp_node *n)
{
    pp_tensor *s;
    perfpred_status st = pp_sh_need(c, n, 0, &s);
    if (st) return st;
    int64_t len;
    int fl = pp_dtype_is_float(s->dtype);
    double fs = 0, fd = 0;
    int64_t is = 0, id = 0;
    if (fl) {
        double fl_lim;
        if ((st = pp_sh_scalar_f(c, n, 0, &fs)) || (st = pp_sh_scalar_f(c, n, 1, &fl_lim)) ||
            (st = pp_sh_scalar_f(c, n, 2, &fd)))
            return st;
        if (fd == 0.0) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "delta is zero");
        double cnt = ceil((fl_lim - fs) / fd);
        if (!(cnt < 9e18)) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "length overflows");
        len = cnt > 0 ? (int64_t)cnt : 0;
    } else {
        int64_t il;
        if ((st = pp_sh_scalar_i(c, n, 0, &is)) || (st = pp_sh_scalar_i(c, n, 1, &il)) ||
            (st = pp_sh_scalar_i(c, n, 2, &id)))
            return st;
        if (id == 0) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "delta is zero");
        int ovf = 0;
        int64_t diff = pp_ck_sub(&ovf, il, is);
        if (ovf) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "length overflows");
        int64_t q = diff / id, rem = diff % id;
        if (rem != 0 && ((rem > 0) == (id > 0))) q++;
        len = q > 0 ? q : 0;
    }
    if ((st = pp_sh_set(c, n, 0, s->dtype, 1, &len))) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok < 0) return c->err->status;
    if (ok) {
        for (int64_t i = 0; i < len; i++) {
            if (fl) pp_sh_store_f(v, i, fs + (double)i * fd);
            else pp_sh_store_i(v, i, (int64_t)((uint64_t)is + (uint64_t)i * (uint64_t)id));
        }
        pp_sh_fold_end(c, n, 0);
    }
    return PERFPRED_OK;
}

/* NonZero: [rank, count of non-zeros]; only when the input is a constant. */
static perfpred_status rule_nonzero(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    if (!pp_sh_has_value(x)) return pp_sh_data_dependent(c, n, 0);
    int64_t cnt = 0;
    for (int64_t i = 0; i < x->val.n; i++) cnt += pp_sh_vf(&x->val, i) != 0.0;
    int r = x->rank > 0 ? x->rank : 1;
    int64_t d[2] = {r, cnt};
    if ((st = pp_sh_set(c, n, 0, PP_DT_INT64, 2, d))) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok < 0) return c->err->status;
    if (ok) {
        int64_t j = 0;
        for (int64_t i = 0; i < x->val.n; i++) {
            if (pp_sh_vf(&x->val, i) == 0.0) continue;
            int64_t rem = i;
            for (int k = x->rank - 1; k >= 0; k--) {
                v->ival[k * cnt + j] = rem % x->dims[k];
                rem /= x->dims[k];
            }
            j++;
        }
        pp_sh_fold_end(c, n, 0);
    }
    return PERFPRED_OK;
}

/* Unique without axis on a constant: Y, indices and counts have one entry per distinct value,
 * inverse_indices one per input element. Anything else is data-dependent. */
static perfpred_status rule_unique(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    if (!pp_sh_has_value(x)) return pp_sh_data_dependent(c, n, 0);
    if (pp_node_attr(n, "axis"))
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED,
                           "Unique with 'axis' on a constant input is not supported");
    int64_t k = 0;
    for (int64_t i = 0; i < x->val.n; i++) {
        int seen = 0;
        for (int64_t j = 0; j < i && !seen; j++)
            seen = pp_sh_vf(&x->val, j) == pp_sh_vf(&x->val, i);
        k += !seen;
    }
    int64_t total = x->val.n;
    if ((st = pp_sh_set(c, n, 0, x->dtype, 1, &k)) || (st = pp_sh_set(c, n, 1, PP_DT_INT64, 1, &k)) ||
        (st = pp_sh_set(c, n, 2, PP_DT_INT64, 1, &total)) ||
        (st = pp_sh_set(c, n, 3, PP_DT_INT64, 1, &k)))
        return st;
    return PERFPRED_OK;
}

/* Compress(input, condition): the selected count comes from the constant condition. */
static perfpred_status rule_compress(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *cond;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &cond);
    if (st) return st;
    if (!pp_sh_has_value(cond)) return pp_sh_data_dependent(c, n, 1);
    const pp_attr *ax = pp_node_attr(n, "axis");
    int64_t limit = ax ? 0 : pp_sh_elems(x->rank, x->dims);
    int axis = 0;
    if (ax) {
        if ((st = pp_sh_axis(c, n, ax->i, x->rank, &axis))) return st;
        limit = x->dims[axis];
    }
    int64_t cnt = 0;
    for (int64_t i = 0; i < cond->val.n && i < limit; i++) cnt += pp_sh_vf(&cond->val, i) != 0.0;
    if (!ax) return pp_sh_set(c, n, 0, x->dtype, 1, &cnt);
    int64_t d[PP_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    d[axis] = cnt;
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

static perfpred_status rule_nms(pp_sctx *c, pp_node *n)
{
    return pp_sh_data_dependent(c, n, 1);
}

/* HannWindow, HammingWindow, BlackmanWindow(size): [size] of output_datatype (float32). */
static perfpred_status rule_window(pp_sctx *c, pp_node *n)
{
    int64_t size;
    perfpred_status st = pp_sh_scalar_i(c, n, 0, &size);
    if (st) return st;
    int64_t dt = pp_node_attr_i(n, "output_datatype", PP_DT_FLOAT);
    return pp_sh_set(c, n, 0, (int32_t)dt, 1, &size);
}

/* MelWeightMatrix(num_mel_bins, dft_length, ...): [floor(dft_length / 2) + 1, num_mel_bins]. */
static perfpred_status rule_mel(pp_sctx *c, pp_node *n)
{
    int64_t bins, dft;
    perfpred_status st = pp_sh_scalar_i(c, n, 0, &bins);
    if (!st) st = pp_sh_scalar_i(c, n, 1, &dft);
    if (st) return st;
    int64_t d[2] = {dft / 2 + 1, bins};
    return pp_sh_set(c, n, 0, (int32_t)pp_node_attr_i(n, "output_datatype", PP_DT_FLOAT), 2, d);
}

const pp_op_entry pp_ops_shape[] = {
    {"Constant", rule_constant},
    {"Shape", rule_shape},
    {"Size", rule_size},
    {"ConstantOfShape", rule_constant_of_shape},
    {"Range", rule_range},
    {"NonZero", rule_nonzero},
    {"Unique", rule_unique},
    {"Compress", rule_compress},
    {"NonMaxSuppression", rule_nms},
    {"HannWindow", rule_window},
    {"HammingWindow", rule_window},
    {"BlackmanWindow", rule_window},
    {"MelWeightMatrix", rule_mel},
    {NULL, NULL},
};
