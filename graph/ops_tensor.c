/* graph/ops_tensor.c: shape rules for data-movement ops: Reshape, Flatten, Transpose, Squeeze,
 * Unsqueeze, Concat, Split, Slice, the Gather and Scatter families, Expand, Tile, Pad, Resize,
 * Upsample, DepthToSpace, SpaceToDepth, Trilu, OneHot, EyeLike, TopK, CumSum, ReverseSequence.
 * Ops that only move constant elements around are folded (shape arithmetic of PyTorch exports). */
#include "graph/shape_internal.h"

#include <math.h>
#include <string.h>

/* Folds output 0 as a row-major copy of input 0 (Reshape, Flatten, Squeeze, Unsqueeze, Identity). */
static perfpred_status fold_copy(pp_sctx *c, pp_node *n, const pp_tensor *x)
{
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t i = 0; i < v->n; i++) pp_sh_vcopy(v, i, &x->val, i);
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* Every present input has a value. */
static int foldable(pp_sctx *c, pp_node *n)
{
    return pp_sh_inputs_const(c, n);
}

/* ------------------------------------------------------------------ Reshape, Flatten ---- */

/* Reshape: 0 copies the input dim (unless allowzero), -1 is inferred; opset<5 takes `shape` attr. */
static perfpred_status rule_reshape(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *s;
    int64_t cnt;
    int present;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, "shape", &s, &cnt, &present);
    if (st) return st;
    if (!present) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "no target shape");
    if (cnt > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "target rank %lld exceeds %d",
                           (long long)cnt, PP_MAX_RANK);
    int allowzero = (int)pp_node_attr_i(n, "allowzero", 0);
    int64_t d[PP_MAX_RANK], known = 1;
    int infer = -1, has_zero = 0;
    for (int k = 0; k < cnt; k++) {
        if (s[k] == -1) {
            if (infer >= 0)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "target shape %s has two -1 entries",
                                   pp_sh_dims_str((int)cnt, s, b1, sizeof b1));
            infer = k;
            d[k] = 1;
            continue;
        }
        if (s[k] < -1)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "target shape has entry %lld",
                               (long long)s[k]);
        if (s[k] == 0 && !allowzero) {
            if (k >= x->rank)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                                   "target shape %s copies dim %d of input %s, which has no such dim",
                                   pp_sh_dims_str((int)cnt, s, b1, sizeof b1), k,
                                   pp_sh_dims_str(x->rank, x->dims, b2, sizeof b2));
            d[k] = x->dims[k];
        } else {
            d[k] = s[k];
            has_zero |= s[k] == 0;
        }
        if (pp_mul_overflow_i64(known, d[k], &known))
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "target shape overflows");
    }
    int64_t total = pp_sh_elems(x->rank, x->dims);
    if (infer >= 0) {
        if (has_zero && allowzero)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "allowzero with both 0 and -1 in %s",
                               pp_sh_dims_str((int)cnt, s, b1, sizeof b1));
        if (known == 0 || total % known != 0)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "cannot reshape %s (%lld elements) to %s",
                               pp_sh_dims_str(x->rank, x->dims, b2, sizeof b2), (long long)total,
                               pp_sh_dims_str((int)cnt, s, b1, sizeof b1));
        d[infer] = total / known;
    } else if (known != total) {
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "cannot reshape %s (%lld elements) to %s (%lld elements)",
                           pp_sh_dims_str(x->rank, x->dims, b2, sizeof b2), (long long)total,
                           pp_sh_dims_str((int)cnt, d, b1, sizeof b1), (long long)known);
    }
    if ((st = pp_sh_set(c, n, 0, x->dtype, (int)cnt, d))) return st;
    return pp_sh_has_value(x) ? fold_copy(c, n, x) : PERFPRED_OK;
}

static perfpred_status rule_flatten(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int64_t axis = pp_node_attr_i(n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "axis %lld out of range for rank %d",
                           (long long)pp_node_attr_i(n, "axis", 1), x->rank);
    int64_t d[2];
    d[0] = pp_sh_elems((int)axis, x->dims);
    d[1] = pp_sh_elems(x->rank - (int)axis, x->dims + axis);
    if ((st = pp_sh_set(c, n, 0, x->dtype, 2, d))) return st;
    return pp_sh_has_value(x) ? fold_copy(c, n, x) : PERFPRED_OK;
}

/* ------------------------------------------------------------------ Transpose ---- */

static perfpred_status rule_transpose(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int r = x->rank;
    int64_t perm[PP_MAX_RANK], d[PP_MAX_RANK];
    const int64_t *p;
    int64_t cnt = pp_sh_attr_ints(n, "perm", &p);
    int used[PP_MAX_RANK] = {0};
    if (cnt >= 0 && cnt != r)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "perm has %lld entries for rank %d",
                           (long long)cnt, r);
    for (int k = 0; k < r; k++) {
        perm[k] = cnt >= 0 ? p[k] : r - 1 - k;
        if (perm[k] < 0) perm[k] += r;
        if (perm[k] < 0 || perm[k] >= r || used[perm[k]]++)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "perm is not a permutation of 0..%d",
                               r - 1);
        d[k] = x->dims[perm[k]];
    }
    if ((st = pp_sh_set(c, n, 0, x->dtype, r, d)) || !pp_sh_has_value(x)) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    int64_t in_stride[PP_MAX_RANK], s = 1;
    for (int k = r - 1; k >= 0; k--) {
        in_stride[k] = s;
        s *= x->dims[k];
    }
    for (int64_t o = 0; o < v->n; o++) {
        int64_t rem = o, idx = 0;
        for (int k = r - 1; k >= 0; k--) {
            idx += (rem % d[k]) * in_stride[perm[k]];
            rem /= d[k];
        }
        pp_sh_vcopy(v, o, &x->val, idx);
    }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ Squeeze, Unsqueeze ---- */

static perfpred_status rule_squeeze(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *ax;
    int64_t cnt;
    int present;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, "axes", &ax, &cnt, &present);
    if (st) return st;
    int drop[PP_MAX_RANK] = {0};
    if (present && cnt > 0) { /* an empty axes list squeezes every 1, as no list does */
        for (int64_t k = 0; k < cnt; k++) {
            int a;
            if ((st = pp_sh_axis(c, n, ax[k], x->rank, &a))) return st;
            if (x->dims[a] != 1) {
                char b[PP_DIMS_BUF];
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "cannot squeeze axis %d of %s", a,
                                   pp_sh_dims_str(x->rank, x->dims, b, sizeof b));
            }
            drop[a] = 1;
        }
    } else {
        for (int k = 0; k < x->rank; k++) drop[k] = x->dims[k] == 1;
    }
    int64_t d[PP_MAX_RANK];
    int r = 0;
    for (int k = 0; k < x->rank; k++)
        if (!drop[k]) d[r++] = x->dims[k];
    if ((st = pp_sh_set(c, n, 0, x->dtype, r, d))) return st;
    return pp_sh_has_value(x) ? fold_copy(c, n, x) : PERFPRED_OK;
}

static perfpred_status rule_unsqueeze(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *ax;
    int64_t cnt;
    int present;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, "axes", &ax, &cnt, &present);
    if (st) return st;
    if (!present) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "axes are missing");
    if (x->rank + cnt > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "output rank %lld exceeds %d",
                           (long long)(x->rank + cnt), PP_MAX_RANK);
    int r = x->rank + (int)cnt;
    int ins[PP_MAX_RANK] = {0};
    for (int64_t k = 0; k < cnt; k++) {
        int a;
        if ((st = pp_sh_axis(c, n, ax[k], r, &a))) return st;
        if (ins[a]++)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "axis %d repeated", a);
    }
    int64_t d[PP_MAX_RANK];
    for (int k = 0, j = 0; k < r; k++) d[k] = ins[k] ? 1 : x->dims[j++];
    if ((st = pp_sh_set(c, n, 0, x->dtype, r, d))) return st;
    return pp_sh_has_value(x) ? fold_copy(c, n, x) : PERFPRED_OK;
}

/* ------------------------------------------------------------------ Concat, Split ---- */

static perfpred_status rule_concat(pp_sctx *c, pp_node *n)
{
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    if (n->n_inputs < 1) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "has no inputs");
    pp_tensor *x0;
    perfpred_status st = pp_sh_need(c, n, 0, &x0);
    if (st) return st;
    const pp_attr *aa = pp_node_attr(n, "axis");
    if (!aa && c->opset >= 4) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute 'axis' is missing");
    int axis;
    if ((st = pp_sh_axis(c, n, aa ? aa->i : 1, x0->rank, &axis))) return st;
    int64_t d[PP_MAX_RANK];
    memcpy(d, x0->dims, sizeof d);
    d[axis] = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        pp_tensor *x;
        if ((st = pp_sh_need(c, n, i, &x))) return st;
        int ok = x->rank == x0->rank;
        for (int k = 0; ok && k < x->rank; k++) ok = k == axis || x->dims[k] == x0->dims[k];
        if (!ok)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "input %d %s does not match input 0 %s outside axis %d", i,
                               pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1),
                               pp_sh_dims_str(x0->rank, x0->dims, b2, sizeof b2), axis);
        int ovf = 0;
        d[axis] = pp_ck_add(&ovf, d[axis], x->dims[axis]);
        if (ovf) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "concatenated size overflows");
    }
    if ((st = pp_sh_set(c, n, 0, x0->dtype, x0->rank, d)) || !foldable(c, n)) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    int64_t outer = pp_sh_elems(axis, d), inner = pp_sh_elems(x0->rank - axis - 1, d + axis + 1);
    int64_t o = 0;
    for (int64_t a = 0; a < outer; a++)
        for (int i = 0; i < n->n_inputs; i++) {
            const pp_tensor *x = pp_sh_in(c, n, i);
            int64_t block = x->dims[axis] * inner;
            for (int64_t e = 0; e < block; e++) pp_sh_vcopy(v, o++, &x->val, a * block + e);
        }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* Split: `split` input (13+) or attribute; else equal parts over the outputs (num_outputs from 18
 * allows a smaller last part). */
static perfpred_status rule_split(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *sp;
    int64_t cnt;
    int present;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, "split", &sp, &cnt, &present);
    if (st) return st;
    int axis;
    if ((st = pp_sh_axis(c, n, pp_node_attr_i(n, "axis", 0), x->rank, &axis))) return st;
    int no = n->n_outputs;
    int64_t dim = x->dims[axis], sizes[256];
    if (no < 1 || no > 256)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "%d outputs (1..256 supported)", no);
    if (present && cnt > 0) {
        int64_t sum = 0;
        if (cnt != no)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "split has %lld entries for %d outputs",
                               (long long)cnt, no);
        for (int i = 0; i < no; i++) {
            if (sp[i] < 0) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "negative split size");
            int ovf = 0;
            sizes[i] = sp[i];
            sum = pp_ck_add(&ovf, sum, sp[i]);
            if (ovf) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "split sizes overflow");
        }
        if (sum != dim)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "split sizes sum to %lld, axis %d has %lld",
                               (long long)sum, axis, (long long)dim);
    } else {
        int has_num = pp_node_attr(n, "num_outputs") != NULL;
        if (dim % no != 0 && !has_num)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "axis %d of size %lld does not split into %d equal parts", axis,
                               (long long)dim, no);
        int64_t part = (dim + no - 1) / no;
        for (int i = 0; i < no; i++) {
            int64_t left = dim - part * i;
            sizes[i] = left < 0 ? 0 : (left < part ? left : part);
        }
    }
    int64_t d[PP_MAX_RANK], off = 0;
    memcpy(d, x->dims, sizeof d);
    int64_t outer = pp_sh_elems(axis, x->dims), inner = pp_sh_elems(x->rank - axis - 1, x->dims + axis + 1);
    for (int i = 0; i < no; i++) {
        d[axis] = sizes[i];
        if ((st = pp_sh_set(c, n, i, x->dtype, x->rank, d))) return st;
        if (pp_sh_has_value(x)) {
            pp_value *v;
            int ok = pp_sh_fold_begin(c, n, i, &v);
            if (ok < 0) return c->err->status;
            if (ok) {
                int64_t o = 0;
                for (int64_t a = 0; a < outer; a++)
                    for (int64_t e = 0; e < sizes[i] * inner; e++)
                        pp_sh_vcopy(v, o++, &x->val, (a * dim + off) * inner + e);
                pp_sh_fold_end(c, n, i);
            }
        }
        off += sizes[i];
    }
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ Slice ---- */

/* Slice: starts/ends/axes/steps from inputs (10+) or attributes (<10). Starts and ends are
 * clamped to [0, dim] for positive steps and to [-1, dim-1] for negative ones. */
static perfpred_status rule_slice(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *st_v, *en_v, *ax_v, *sp_v;
    int64_t ns, ne, na, nsp;
    int ps, pe, pa, psp;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, "starts", &st_v, &ns, &ps);
    if (!st) st = pp_sh_ints(c, n, 2, "ends", &en_v, &ne, &pe);
    if (!st) st = pp_sh_ints(c, n, 3, "axes", &ax_v, &na, &pa);
    if (!st) st = pp_sh_ints(c, n, 4, NULL, &sp_v, &nsp, &psp);
    if (st) return st;
    if (!ps || !pe || ns != ne || (pa && na != ns) || (psp && nsp != ns))
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "starts/ends/axes/steps are missing or of different lengths");
    int r = x->rank;
    int64_t start[PP_MAX_RANK], step[PP_MAX_RANK], d[PP_MAX_RANK];
    int seen[PP_MAX_RANK] = {0};
    for (int k = 0; k < r; k++) {
        start[k] = 0;
        step[k] = 1;
        d[k] = x->dims[k];
    }
    for (int64_t i = 0; i < ns; i++) {
        int a;
        if ((st = pp_sh_axis(c, n, pa ? ax_v[i] : i, r, &a))) return st;
        if (seen[a]++) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "axis %d repeated", a);
        int64_t dim = x->dims[a], s = st_v[i], e = en_v[i], p = psp ? sp_v[i] : 1;
        if (p == 0) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "step is zero on axis %d", a);
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        /* count = ceil(span / |step|) written so that huge steps cannot overflow */
        if (p > 0) {
            s = s < 0 ? 0 : (s > dim ? dim : s);
            e = e < 0 ? 0 : (e > dim ? dim : e);
            d[a] = e > s ? 1 + (e - s - 1) / p : 0;
        } else {
            int64_t q = p == INT64_MIN ? INT64_MAX : -p;
            s = s < 0 ? 0 : (s > dim - 1 ? dim - 1 : s);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
            d[a] = s > e ? 1 + (s - e - 1) / q : 0;
        }
        start[a] = s;
        step[a] = p;
    }
    if ((st = pp_sh_set(c, n, 0, x->dtype, r, d)) || !pp_sh_has_value(x)) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t o = 0; o < v->n; o++) {
        int64_t rem = o, idx = 0, stride = 1;
        for (int k = r - 1; k >= 0; k--) {
            int64_t coord = rem % d[k];
            rem /= d[k];
            idx += (start[k] + coord * step[k]) * stride;
            stride *= x->dims[k];
        }
        pp_sh_vcopy(v, o, &x->val, idx);
    }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ Gather family ---- */

static perfpred_status rule_gather(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *ix;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &ix);
    if (st) return st;
    int axis;
    if (x->rank < 1) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "data must have rank >= 1");
    if ((st = pp_sh_axis(c, n, pp_node_attr_i(n, "axis", 0), x->rank, &axis))) return st;
    int r = x->rank + ix->rank - 1;
    if (r > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "output rank %d exceeds %d", r,
                           PP_MAX_RANK);
    int64_t d[PP_MAX_RANK];
    int k = 0;
    for (int i = 0; i < axis; i++) d[k++] = x->dims[i];
    for (int i = 0; i < ix->rank; i++) d[k++] = ix->dims[i];
    for (int i = axis + 1; i < x->rank; i++) d[k++] = x->dims[i];
    if ((st = pp_sh_set(c, n, 0, x->dtype, r, d)) || !foldable(c, n)) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    int64_t outer = pp_sh_elems(axis, x->dims), inner = pp_sh_elems(x->rank - axis - 1, x->dims + axis + 1);
    int64_t nidx = ix->val.n, ad = x->dims[axis], o = 0;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < nidx; j++) {
            int64_t id = pp_sh_vi(&ix->val, j);
            if (id < -ad || id >= ad)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                                   "constant index %lld out of range for axis %d of size %lld",
                                   (long long)id, axis, (long long)ad);
            if (id < 0) id += ad;
            for (int64_t e = 0; e < inner; e++)
                pp_sh_vcopy(v, o++, &x->val, (a * ad + id) * inner + e);
        }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

static perfpred_status rule_gather_elements(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *ix;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &ix);
    if (st) return st;
    int axis;
    if ((st = pp_sh_axis(c, n, pp_node_attr_i(n, "axis", 0), x->rank, &axis))) return st;
    if (ix->rank != x->rank)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "indices rank %d differs from data rank %d",
                           ix->rank, x->rank);
    return pp_sh_set(c, n, 0, x->dtype, ix->rank, ix->dims);
}

/* GatherND: indices[..., k] pick slices of data after batch_dims b:
 * out = indices.shape[:-1] + data.shape[b + k:]. */
static perfpred_status rule_gather_nd(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *ix;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &ix);
    if (st) return st;
    int64_t b = pp_node_attr_i(n, "batch_dims", 0);
    if (ix->rank < 1 || b < 0 || b >= ix->rank || b >= x->rank)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "bad ranks for batch_dims %lld", (long long)b);
    int64_t k = ix->dims[ix->rank - 1];
    if (k < 1 || k > x->rank - b)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "index depth %lld too large for data rank %d and batch_dims %lld",
                           (long long)k, x->rank, (long long)b);
    int64_t d[PP_MAX_RANK];
    int r = 0;
    if (ix->rank - 1 + x->rank - (b + k) > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "output rank exceeds %d", PP_MAX_RANK);
    for (int i = 0; i < ix->rank - 1; i++) d[r++] = ix->dims[i];
    for (int64_t i = b + k; i < x->rank; i++) d[r++] = x->dims[i];
    return pp_sh_set(c, n, 0, x->dtype, r, d);
}

/* ScatterElements, Scatter, Trilu, CumSum, ReverseSequence: data's shape. */
static perfpred_status rule_like_data(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    return st ? st : pp_sh_set_like(c, n, 0, x);
}

/* ScatterND(data, indices [..., k], updates): data's shape. Folded on constants, since Swin's
 * shifted-window masks are written by slice assignment (img_mask[h, w] = cnt). */
static perfpred_status rule_scatter_nd(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *ix, *up;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &ix);
    if (!st) st = pp_sh_need(c, n, 2, &up);
    if (st) return st;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF], b3[PP_DIMS_BUF];
    int64_t k = ix->rank > 0 ? ix->dims[ix->rank - 1] : -1;
    /* updates must be indices.shape[:-1] + data.shape[k:] */
    int ok = k >= 1 && k <= x->rank && up->rank == ix->rank - 1 + x->rank - (int)k;
    for (int i = 0; ok && i < ix->rank - 1; i++) ok = up->dims[i] == ix->dims[i];
    for (int i = 0; ok && i < x->rank - k; i++) ok = up->dims[ix->rank - 1 + i] == x->dims[k + i];
    if (!ok)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "data %s, indices %s and updates %s do not fit together",
                           pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1),
                           pp_sh_dims_str(ix->rank, ix->dims, b2, sizeof b2),
                           pp_sh_dims_str(up->rank, up->dims, b3, sizeof b3));
    if ((st = pp_sh_set_like(c, n, 0, x)) || !foldable(c, n)) return st;
    const char *red = pp_node_attr_s(n, "reduction", "none");
    int mode = !strcmp(red, "none") ? 0 : !strcmp(red, "add") ? 1 : !strcmp(red, "mul") ? 2 : -1;
    if (mode < 0) return PERFPRED_OK; /* max/min (opset 18): shape only */
    pp_value *v;
    int r = pp_sh_fold_begin(c, n, 0, &v);
    if (r <= 0) return r < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t i = 0; i < v->n; i++) pp_sh_vcopy(v, i, &x->val, i);
    int64_t slice = pp_sh_elems(x->rank - (int)k, x->dims + k);
    int64_t nupd = k ? ix->val.n / k : 0;
    for (int64_t j = 0; j < nupd; j++) {
        int64_t off = 0;
        for (int64_t m = 0; m < k; m++) {
            int64_t id = pp_sh_vi(&ix->val, j * k + m), dim = x->dims[m];
            if (id < -dim || id >= dim)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                                   "constant index %lld out of range for dim %lld of %s",
                                   (long long)id, (long long)m,
                                   pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1));
            off = off * dim + (id < 0 ? id + dim : id);
        }
        for (int64_t e = 0; e < slice; e++) {
            int64_t o = off * slice + e, u = j * slice + e;
            if (mode == 0) {
                pp_sh_vcopy(v, o, &up->val, u);
            } else if (v->fval) {
                double a = v->fval[o], b = pp_sh_vf(&up->val, u);
                pp_sh_store_f(v, o, mode == 1 ? a + b : a * b);
            } else {
                uint64_t a = (uint64_t)v->ival[o], b = (uint64_t)pp_sh_vi(&up->val, u);
                pp_sh_store_i(v, o, (int64_t)(mode == 1 ? a + b : a * b));
            }
        }
    }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ Expand, Tile, Pad ---- */

static perfpred_status rule_expand(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *s;
    int64_t cnt;
    int present;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, NULL, &s, &cnt, &present);
    if (st) return st;
    if (!present) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "shape input is missing");
    if (cnt > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "shape rank %lld exceeds %d",
                           (long long)cnt, PP_MAX_RANK);
    int r;
    int64_t d[PP_MAX_RANK];
    if ((st = pp_sh_broadcast(c, n, x->rank, x->dims, (int)cnt, s, &r, d))) return st;
    if ((st = pp_sh_set(c, n, 0, x->dtype, r, d)) || !pp_sh_has_value(x)) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t o = 0; o < v->n; o++)
        pp_sh_vcopy(v, o, &x->val, pp_sh_bcast_index(r, d, o, x->rank, x->dims));
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

static perfpred_status rule_tile(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *rep;
    int64_t cnt;
    int present;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, NULL, &rep, &cnt, &present);
    if (st) return st;
    if (!present || cnt != x->rank)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "repeats must have %d entries", x->rank);
    int64_t d[PP_MAX_RANK];
    for (int k = 0; k < x->rank; k++) {
        if (rep[k] < 0) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "negative repeat");
        if (pp_mul_overflow_i64(x->dims[k], rep[k], &d[k]))
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "tiled dim overflows");
    }
    if ((st = pp_sh_set(c, n, 0, x->dtype, x->rank, d)) || !pp_sh_has_value(x)) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t o = 0; o < v->n; o++) {
        int64_t rem = o, idx = 0, stride = 1;
        for (int k = x->rank - 1; k >= 0; k--) {
            idx += ((rem % d[k]) % x->dims[k]) * stride;
            rem /= d[k];
            stride *= x->dims[k];
        }
        pp_sh_vcopy(v, o, &x->val, idx);
    }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* Pad: pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...] from input 1 (11+) or the `pads`
 * (`paddings` in opset 1) attribute; optional axes input (18). Negative pads crop. */
static perfpred_status rule_pad(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    const int64_t *p, *ax;
    int64_t cnt, na;
    int present, pa;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_ints(c, n, 1, pp_node_attr(n, "paddings") ? "paddings" : "pads", &p, &cnt, &present);
    if (!st) st = pp_sh_ints(c, n, 3, NULL, &ax, &na, &pa);
    if (st) return st;
    int r = x->rank, naxes = pa ? (int)na : r;
    if (!present || cnt != 2 * (int64_t)naxes)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "pads must have %d entries, has %lld",
                           2 * naxes, (long long)(present ? cnt : 0));
    int64_t d[PP_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    for (int i = 0; i < naxes; i++) {
        int a = i;
        if (pa && (st = pp_sh_axis(c, n, ax[i], r, &a))) return st;
        int ovf = 0;
        d[a] = pp_ck_add(&ovf, pp_ck_add(&ovf, x->dims[a], p[i]), p[i + naxes]);
        if (ovf) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "padded size overflows on axis %d", a);
    }
    return pp_sh_set(c, n, 0, x->dtype, r, d);
}

/* ------------------------------------------------------------------ Resize, Upsample ---- */

/* Constant float list from input i; *count = -1 when the input is omitted or empty. */
static perfpred_status float_list(pp_sctx *c, pp_node *n, int i, const pp_value **v)
{
    const pp_tensor *t = pp_sh_in(c, n, i);
    *v = NULL;
    if (!t) return PERFPRED_OK;
    if ((t->flags & PP_T_SHAPE_KNOWN) && pp_tensor_elems(t) == 0) return PERFPRED_OK;
    if (!pp_sh_has_value(t)) return pp_sh_data_dependent(c, n, i);
    *v = &t->val;
    return PERFPRED_OK;
}

/* out = floor(in * scale) per axis (ONNX Resize/Upsample); the float32 scale is widened to double
 * exactly as the reference implementation does. */
static perfpred_status scaled_dims(pp_sctx *c, pp_node *n, const pp_tensor *x, const pp_value *s,
                                   const int64_t *axes, int64_t naxes, const pp_value *roi,
                                   int64_t *d)
{
    int64_t cnt = axes ? naxes : x->rank;
    if (s->n != cnt)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scales has %lld entries, expected %lld",
                           (long long)s->n, (long long)cnt);
    int crop = !strcmp(pp_node_attr_s(n, "coordinate_transformation_mode", ""),
                       "tf_crop_and_resize");
    memcpy(d, x->dims, PP_MAX_RANK * sizeof *d);
    for (int64_t i = 0; i < cnt; i++) {
        int a = (int)i;
        perfpred_status st;
        if (axes && (st = pp_sh_axis(c, n, axes[i], x->rank, &a))) return st;
        double sc = pp_sh_vf(s, i), extent = 1.0;
        if (!(sc > 0.0)) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scale %g is not positive", sc);
        if (crop && roi && roi->n == 2 * cnt) extent = pp_sh_vf(roi, cnt + i) - pp_sh_vf(roi, i);
        double o = floor((double)x->dims[a] * extent * sc);
        if (!(o < 9e18)) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scaled dim overflows");
        d[a] = (int64_t)o;
    }
    return PERFPRED_OK;
}

static perfpred_status rule_resize(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    const pp_value *roi = NULL, *scales = NULL, *sizes = NULL;
    if (c->opset < 11) {
        st = float_list(c, n, 1, &scales);
    } else {
        const pp_tensor *rt = pp_sh_in(c, n, 1);
        if (rt && pp_sh_has_value(rt)) roi = &rt->val;
        const pp_tensor *szt = pp_sh_in(c, n, 3);
        if (szt && pp_tensor_elems(szt) != 0) st = float_list(c, n, 3, &sizes);
        else st = float_list(c, n, 2, &scales);
    }
    if (st) return st;
    const int64_t *axes;
    int64_t naxes = pp_sh_attr_ints(n, "axes", &axes);
    if (naxes < 0) axes = NULL;
    int64_t d[PP_MAX_RANK];
    if (sizes) {
        int64_t cnt = axes ? naxes : x->rank;
        if (sizes->n != cnt || sizes->fval)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "sizes must be %lld integers",
                               (long long)cnt);
        memcpy(d, x->dims, sizeof d);
        for (int64_t i = 0; i < cnt; i++) {
            int a = (int)i;
            if (axes && (st = pp_sh_axis(c, n, axes[i], x->rank, &a))) return st;
            d[a] = sizes->ival[i];
        }
        const char *policy = pp_node_attr_s(n, "keep_aspect_ratio_policy", "stretch");
        if (strcmp(policy, "stretch") != 0)
            return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "keep_aspect_ratio_policy '%s'",
                               policy);
    } else if (scales) {
        if (!scales->fval)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scales must be floating point");
        if ((st = scaled_dims(c, n, x, scales, axes, naxes, roi, d))) return st;
    } else {
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "neither scales nor sizes is given");
    }
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

/* Upsample: `scales` attribute (7, 8) or input (9). */
static perfpred_status rule_upsample(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int64_t d[PP_MAX_RANK];
    const pp_value *s = NULL;
    pp_value tmp;
    if (pp_sh_in(c, n, 1)) {
        if ((st = float_list(c, n, 1, &s))) return st;
    } else {
        const pp_attr *a = pp_node_attr(n, "scales");
        if (!a || a->type != PP_ATTR_FLOATS)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scales are missing");
        memset(&tmp, 0, sizeof tmp);
        tmp.dtype = PP_DT_FLOAT;
        tmp.n = a->n;
        tmp.fval = a->floats;
        s = &tmp;
    }
    if (!s) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scales are empty");
    if ((st = scaled_dims(c, n, x, s, NULL, 0, NULL, d))) return st;
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

/* ------------------------------------------------------------------ block rearrangements ---- */

static perfpred_status rule_depth_space(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int64_t b = pp_node_attr_i(n, "blocksize", 0);
    char buf[PP_DIMS_BUF];
    if (x->rank != 4 || b < 1)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "needs a 4-D input and blocksize >= 1, got %s",
                           pp_sh_dims_str(x->rank, x->dims, buf, sizeof buf));
    int64_t d[4] = {x->dims[0], 0, 0, 0};
    int ovf = 0;
    int64_t bb = pp_ck_mul(&ovf, b, b);
    pp_ck_mul(&ovf, x->dims[2], b);
    pp_ck_mul(&ovf, x->dims[3], b);
    pp_ck_mul(&ovf, bb, x->dims[1]);
    if (ovf) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "blocksize %lld overflows", (long long)b);
    if (!strcmp(n->op_type, "DepthToSpace")) {
        if (x->dims[1] % bb)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "channels of %s not divisible by %lld",
                               pp_sh_dims_str(4, x->dims, buf, sizeof buf), (long long)bb);
        d[1] = x->dims[1] / bb;
        d[2] = x->dims[2] * b;
        d[3] = x->dims[3] * b;
    } else {
        if (x->dims[2] % b || x->dims[3] % b)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "spatial dims of %s not divisible by %lld",
                               pp_sh_dims_str(4, x->dims, buf, sizeof buf), (long long)b);
        d[1] = x->dims[1] * bb;
        d[2] = x->dims[2] / b;
        d[3] = x->dims[3] / b;
    }
    return pp_sh_set(c, n, 0, x->dtype, 4, d);
}

/* ------------------------------------------------------------------ misc ---- */

static perfpred_status rule_onehot(pp_sctx *c, pp_node *n)
{
    pp_tensor *ix, *vals;
    perfpred_status st = pp_sh_need(c, n, 0, &ix);
    if (!st) st = pp_sh_need(c, n, 2, &vals);
    if (st) return st;
    double depth;
    if ((st = pp_sh_scalar_f(c, n, 1, &depth))) return st;
    if (!(depth >= 1 && depth < 9e18))
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "depth %g is not positive", depth);
    int r = ix->rank + 1, axis;
    if (r > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "output rank %d exceeds %d", r, PP_MAX_RANK);
    if ((st = pp_sh_axis(c, n, pp_node_attr_i(n, "axis", -1), r, &axis))) return st;
    int64_t d[PP_MAX_RANK];
    for (int k = 0, j = 0; k < r; k++) d[k] = k == axis ? (int64_t)depth : ix->dims[j++];
    return pp_sh_set(c, n, 0, vals->dtype, r, d);
}

static perfpred_status rule_eyelike(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    if (x->rank != 2) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "input must be 2-D");
    return pp_sh_set(c, n, 0, (int32_t)pp_node_attr_i(n, "dtype", x->dtype), 2, x->dims);
}

/* TopK: K from input 1 (10+) or attribute k; values and int64 indices with dims[axis] = K. */
static perfpred_status rule_topk(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int64_t k;
    if (pp_sh_in(c, n, 1)) {
        if ((st = pp_sh_scalar_i(c, n, 1, &k))) return st;
    } else {
        k = pp_node_attr_i(n, "k", -1);
    }
    int axis;
    if ((st = pp_sh_axis(c, n, pp_node_attr_i(n, "axis", -1), x->rank, &axis))) return st;
    if (k < 0 || k > x->dims[axis])
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "K = %lld outside [0, %lld]", (long long)k,
                           (long long)x->dims[axis]);
    int64_t d[PP_MAX_RANK];
    memcpy(d, x->dims, sizeof d);
    d[axis] = k;
    if ((st = pp_sh_set(c, n, 0, x->dtype, x->rank, d))) return st;
    return pp_sh_set(c, n, 1, PP_DT_INT64, x->rank, d);
}

const pp_op_entry pp_ops_tensor[] = {
    {"Reshape", rule_reshape},
    {"Flatten", rule_flatten},
    {"Transpose", rule_transpose},
    {"Squeeze", rule_squeeze},
    {"Unsqueeze", rule_unsqueeze},
    {"Concat", rule_concat},
    {"Split", rule_split},
    {"Slice", rule_slice},
    {"Gather", rule_gather},
    {"GatherElements", rule_gather_elements},
    {"GatherND", rule_gather_nd},
    {"ScatterND", rule_scatter_nd},
    {"ScatterElements", rule_like_data},
    {"Scatter", rule_like_data},
    {"Trilu", rule_like_data},
    {"CumSum", rule_like_data},
    {"ReverseSequence", rule_like_data},
    {"Expand", rule_expand},
    {"Tile", rule_tile},
    {"Pad", rule_pad},
    {"Resize", rule_resize},
    {"Upsample", rule_upsample},
    {"DepthToSpace", rule_depth_space},
    {"SpaceToDepth", rule_depth_space},
    {"OneHot", rule_onehot},
    {"EyeLike", rule_eyelike},
    {"TopK", rule_topk},
    {NULL, NULL},
};
