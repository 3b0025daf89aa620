/* graph/ops_nn.c: shape rules for the neural-network ops: Conv/ConvTranspose (and the integer and
 * quantized variants), pooling (auto_pad, ceil_mode, dilations, MaxPool indices), Gemm and MatMul
 * (numpy batch broadcasting, 1-D operands), normalizations, softmax family, RNN/GRU/LSTM, Einsum,
 * losses, GridSample, RoiAlign, Det, DFT and STFT. Nothing here folds: these ops are real kernels. */
#include "graph/shape_internal.h"

#include <ctype.h>
#include <string.h>

/* ------------------------------------------------------------------ windows ---- */

#define MAX_SPATIAL (PP_MAX_RANK - 2)

/* Reads an INTS attribute of exactly `want` entries into out, or fills dflt when absent. */
static perfpred_status attr_list(pp_sctx *c, pp_node *n, const char *name, int want, int64_t dflt,
                                 int64_t *out, int *present)
{
    const int64_t *v;
    int64_t cnt = pp_sh_attr_ints(n, name, &v);
    if (present) *present = cnt >= 0;
    if (cnt < 0) {
        for (int i = 0; i < want; i++) out[i] = dflt;
        return PERFPRED_OK;
    }
    if (cnt != want)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute '%s' has %lld entries, expected %d",
                           name, (long long)cnt, want);
    memcpy(out, v, (size_t)want * sizeof *out);
    return PERFPRED_OK;
}

/* Output spatial dims of a convolution or pooling window over x's dims[2:]:
 *   NOTSET: out = floor_or_ceil((in + pad_begin + pad_end - ((k-1)*d + 1)) / s) + 1
 *   SAME_UPPER / SAME_LOWER: out = ceil(in / s);  VALID: out = ceil((in - ((k-1)*d + 1) + 1) / s)
 * With ceil_mode a last window that would start inside the end padding is dropped (PyTorch rule,
 * adopted by the ONNX reference). */
static perfpred_status window_out(pp_sctx *c, pp_node *n, const pp_tensor *x, const int64_t *k,
                                  int ceil_mode, int64_t *out)
{
    int nsp = x->rank - 2;
    int64_t s[MAX_SPATIAL], d[MAX_SPATIAL], p[2 * MAX_SPATIAL];
    perfpred_status st = attr_list(c, n, "strides", nsp, 1, s, NULL);
    if (!st) st = attr_list(c, n, "dilations", nsp, 1, d, NULL);
    if (!st) st = attr_list(c, n, "pads", 2 * nsp, 0, p, NULL);
    if (st) return st;
    const char *ap = pp_node_attr_s(n, "auto_pad", "NOTSET");
    int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    int valid = !strcmp(ap, "VALID");
    if (!same && !valid && strcmp(ap, "NOTSET") != 0)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "unsupported auto_pad '%s'", ap);
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->dims[2 + i];
        if (s[i] < 1 || d[i] < 1 || k[i] < 1)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "kernel, strides and dilations must be >= 1 (axis %d)", i);
        if (p[i] < 0 || p[i + nsp] < 0)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "negative pads on axis %d", i);
        int ovf = 0;
        int64_t ek = pp_ck_add(&ovf, pp_ck_mul(&ovf, k[i] - 1, d[i]), 1);
        if (same) {
            out[i] = in / s[i] + (in % s[i] != 0);
            continue;
        }
        int64_t pb = valid ? 0 : p[i], pe = valid ? 0 : p[i + nsp];
        int64_t span = pp_ck_sub(&ovf, pp_ck_add(&ovf, pp_ck_add(&ovf, in, pb), pe), ek);
        if (ovf)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "window arithmetic overflows on axis %d", i);
        if (span < 0)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "window of extent %lld does not fit input %s padded by %lld+%lld "
                               "(kernel %s)",
                               (long long)ek, pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1),
                               (long long)pb, (long long)pe, pp_sh_dims_str(nsp, k, b2, sizeof b2));
        int up = ceil_mode && !valid;
        out[i] = span / s[i] + (up && span % s[i] != 0) + 1;
        /* (out-1)*s <= span < 2^63, and in + pb was computed above without overflow */
        if (up && (out[i] - 1) * s[i] >= in + pb) out[i]--;
    }
    return PERFPRED_OK;
}

/* X of rank >= 3: [N, C, spatial...]. */
static perfpred_status need_nc(pp_sctx *c, pp_node *n, int i, pp_tensor **x)
{
    perfpred_status st = pp_sh_need(c, n, i, x);
    if (st) return st;
    if ((*x)->rank < 3) {
        char b[PP_DIMS_BUF];
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "input %d must be [N, C, spatial...], is %s",
                           i, pp_sh_dims_str((*x)->rank, (*x)->dims, b, sizeof b));
    }
    return PERFPRED_OK;
}

/* Conv family: X at input 0, W at input wi; output dtype odt (0 = X's). */
static perfpred_status conv_common(pp_sctx *c, pp_node *n, int wi, int32_t odt)
{
    pp_tensor *x, *w;
    perfpred_status st = need_nc(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, wi, &w);
    if (st) return st;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    int nsp = x->rank - 2;
    int64_t g = pp_node_attr_i(n, "group", 1);
    if (w->rank != x->rank || g < 1 || w->dims[1] * g != x->dims[1] || w->dims[0] % g != 0)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "channel mismatch: X %s, W %s, group %lld (need W[1]*group == X[1] and "
                           "W[0] divisible by group)",
                           pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1),
                           pp_sh_dims_str(w->rank, w->dims, b2, sizeof b2), (long long)g);
    int64_t k[MAX_SPATIAL], have;
    int kp;
    if ((st = attr_list(c, n, "kernel_shape", nsp, 0, k, &kp))) return st;
    for (int i = 0; i < nsp; i++) {
        have = w->dims[2 + i];
        if (kp && k[i] != have)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "kernel_shape disagrees with W %s",
                               pp_sh_dims_str(w->rank, w->dims, b2, sizeof b2));
        k[i] = have;
    }
    int64_t d[PP_MAX_RANK];
    d[0] = x->dims[0];
    d[1] = w->dims[0];
    if ((st = window_out(c, n, x, k, 0, d + 2))) return st;
    const pp_tensor *b = pp_sh_in(c, n, 2);
    if (wi == 1 && b && !strcmp(n->op_type, "Conv") &&
        (b->rank != 1 || b->dims[0] != w->dims[0]))
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "bias %s does not match %lld output channels",
                           pp_sh_dims_str(b->rank, b->dims, b1, sizeof b1), (long long)w->dims[0]);
    return pp_sh_set(c, n, 0, odt ? odt : x->dtype, x->rank, d);
}

static perfpred_status rule_conv(pp_sctx *c, pp_node *n)
{
    return conv_common(c, n, 1, 0);
}

static perfpred_status rule_conv_integer(pp_sctx *c, pp_node *n)
{
    return conv_common(c, n, 1, PP_DT_INT32);
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B]). */
static perfpred_status rule_qlinear_conv(pp_sctx *c, pp_node *n)
{
    const pp_tensor *yzp = pp_sh_in(c, n, 7), *x = pp_sh_in(c, n, 0);
    return conv_common(c, n, 3, yzp ? yzp->dtype : (x ? x->dtype : PP_DT_UINT8));
}

/* ConvTranspose: W is [C, M/group, k...]; out = s*(in-1) + output_padding + ((k-1)*d+1) - pads,
 * or in*s for SAME_*, or output_shape when given. */
static perfpred_status rule_conv_transpose(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *w;
    perfpred_status st = need_nc(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &w);
    if (st) return st;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    int nsp = x->rank - 2;
    int64_t g = pp_node_attr_i(n, "group", 1);
    if (w->rank != x->rank || g < 1 || w->dims[0] != x->dims[1])
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "channel mismatch: X %s, W %s (need W[0] == X[1])",
                           pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1),
                           pp_sh_dims_str(w->rank, w->dims, b2, sizeof b2));
    int64_t k[MAX_SPATIAL], s[MAX_SPATIAL], dl[MAX_SPATIAL], p[2 * MAX_SPATIAL], op[MAX_SPATIAL];
    int kp;
    if ((st = attr_list(c, n, "kernel_shape", nsp, 0, k, &kp)) ||
        (st = attr_list(c, n, "strides", nsp, 1, s, NULL)) ||
        (st = attr_list(c, n, "dilations", nsp, 1, dl, NULL)) ||
        (st = attr_list(c, n, "pads", 2 * nsp, 0, p, NULL)) ||
        (st = attr_list(c, n, "output_padding", nsp, 0, op, NULL)))
        return st;
    for (int i = 0; i < nsp; i++) {
        if (kp && k[i] != w->dims[2 + i])
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "kernel_shape disagrees with W %s",
                               pp_sh_dims_str(w->rank, w->dims, b2, sizeof b2));
        k[i] = w->dims[2 + i];
        if (s[i] < 1 || dl[i] < 1)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "strides and dilations must be >= 1");
    }
    int64_t d[PP_MAX_RANK];
    d[0] = x->dims[0];
    if (pp_mul_overflow_i64(w->dims[1], g, &d[1]))
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "channel count overflows");
    const int64_t *os;
    int64_t nos = pp_sh_attr_ints(n, "output_shape", &os);
    const char *ap = pp_node_attr_s(n, "auto_pad", "NOTSET");
    int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
    int valid = !strcmp(ap, "VALID");
    if (!same && !valid && strcmp(ap, "NOTSET") != 0)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "unsupported auto_pad '%s'", ap);
    if (nos >= 0) {
        if (nos != nsp && nos != nsp + 2)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "output_shape has %lld entries for %d "
                               "spatial dims", (long long)nos, nsp);
        for (int i = 0; i < nsp; i++) d[2 + i] = os[nos - nsp + i];
    } else {
        for (int i = 0; i < nsp; i++) {
            int64_t in = x->dims[2 + i];
            int ovf = 0;
            if (same) {
                d[2 + i] = pp_ck_mul(&ovf, in, s[i]);
            } else {
                int64_t pads = valid ? 0 : pp_ck_add(&ovf, p[i], p[i + nsp]);
                int64_t ek = pp_ck_add(&ovf, pp_ck_mul(&ovf, k[i] - 1, dl[i]), 1);
                int64_t span = pp_ck_add(&ovf, pp_ck_mul(&ovf, s[i], in - 1), op[i]);
                d[2 + i] = pp_ck_sub(&ovf, pp_ck_add(&ovf, span, ek), pads);
            }
            if (ovf)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "output size overflows on axis %d", i);
        }
    }
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

/* MaxPool / AveragePool / LpPool: Y [N, C, out...]; MaxPool's optional Indices are int64. */
static perfpred_status rule_pool(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = need_nc(c, n, 0, &x);
    if (st) return st;
    int nsp = x->rank - 2, kp;
    int64_t k[MAX_SPATIAL], d[PP_MAX_RANK];
    if ((st = attr_list(c, n, "kernel_shape", nsp, 0, k, &kp))) return st;
    if (!kp) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute 'kernel_shape' is missing");
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    if ((st = window_out(c, n, x, k, pp_node_attr_i(n, "ceil_mode", 0) != 0, d + 2))) return st;
    if ((st = pp_sh_set(c, n, 0, x->dtype, x->rank, d))) return st;
    return pp_sh_set(c, n, 1, PP_DT_INT64, x->rank, d);
}

static perfpred_status rule_global_pool(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = need_nc(c, n, 0, &x);
    if (st) return st;
    int64_t d[PP_MAX_RANK];
    for (int i = 0; i < x->rank; i++) d[i] = i < 2 ? x->dims[i] : 1;
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

/* MaxUnpool(X, I, [output_shape]): out = (in-1)*s + k - pad_begin - pad_end unless given. */
static perfpred_status rule_max_unpool(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = need_nc(c, n, 0, &x);
    if (st) return st;
    int64_t d[PP_MAX_RANK];
    if (pp_sh_in(c, n, 2)) {
        const int64_t *v;
        int64_t cnt;
        int present;
        if ((st = pp_sh_ints(c, n, 2, NULL, &v, &cnt, &present))) return st;
        if (cnt != x->rank)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "output_shape must have %d entries",
                               x->rank);
        return pp_sh_set(c, n, 0, x->dtype, x->rank, v);
    }
    int nsp = x->rank - 2, kp;
    int64_t k[MAX_SPATIAL], s[MAX_SPATIAL], p[2 * MAX_SPATIAL];
    if ((st = attr_list(c, n, "kernel_shape", nsp, 0, k, &kp)) ||
        (st = attr_list(c, n, "strides", nsp, 1, s, NULL)) ||
        (st = attr_list(c, n, "pads", 2 * nsp, 0, p, NULL)))
        return st;
    if (!kp) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute 'kernel_shape' is missing");
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    for (int i = 0; i < nsp; i++) {
        int ovf = 0;
        int64_t grown = pp_ck_add(&ovf, pp_ck_mul(&ovf, x->dims[2 + i] - 1, s[i]), k[i]);
        d[2 + i] = pp_ck_sub(&ovf, grown, pp_ck_add(&ovf, p[i], p[i + nsp]));
        if (ovf) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "output size overflows on axis %d", i);
    }
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

/* ------------------------------------------------------------------ matrix products ---- */

static perfpred_status rule_gemm(pp_sctx *c, pp_node *n)
{
    pp_tensor *a, *b;
    perfpred_status st = pp_sh_need(c, n, 0, &a);
    if (!st) st = pp_sh_need(c, n, 1, &b);
    if (st) return st;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    if (a->rank != 2 || b->rank != 2)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "A %s and B %s must be 2-D",
                           pp_sh_dims_str(a->rank, a->dims, b1, sizeof b1),
                           pp_sh_dims_str(b->rank, b->dims, b2, sizeof b2));
    int ta = pp_node_attr_i(n, "transA", 0) != 0, tb = pp_node_attr_i(n, "transB", 0) != 0;
    int64_t m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1];
    int64_t kb = b->dims[tb ? 1 : 0], nn = b->dims[tb ? 0 : 1];
    if (k != kb)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "inner dims differ: A %s (transA=%d), B %s (transB=%d)",
                           pp_sh_dims_str(2, a->dims, b1, sizeof b1), ta,
                           pp_sh_dims_str(2, b->dims, b2, sizeof b2), tb);
    int64_t d[2] = {m, nn};
    const pp_tensor *cc = pp_sh_in(c, n, 2);
    if (cc) {
        int r;
        int64_t bd[PP_MAX_RANK];
        st = pp_sh_broadcast(c, n, 2, d, cc->rank, cc->dims, &r, bd);
        if (st || r != 2 || bd[0] != m || bd[1] != nn)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "C %s does not broadcast to [%lld,%lld]",
                               pp_sh_dims_str(cc->rank, cc->dims, b1, sizeof b1), (long long)m,
                               (long long)nn);
    }
    return pp_sh_set(c, n, 0, a->dtype, 2, d);
}

/* numpy matmul: 1-D A is [1,K] and 1-D B is [K,1] with the added dim removed afterwards; the batch
 * dims broadcast. */
static perfpred_status matmul_common(pp_sctx *c, pp_node *n, int ia, int ib, int32_t odt)
{
    pp_tensor *a, *b;
    perfpred_status st = pp_sh_need(c, n, ia, &a);
    if (!st) st = pp_sh_need(c, n, ib, &b);
    if (st) return st;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    if (a->rank < 1 || b->rank < 1)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "operands must have rank >= 1");
    int64_t am = a->rank > 1 ? a->dims[a->rank - 2] : 1, ak = a->dims[a->rank - 1];
    int64_t bk = b->rank > 1 ? b->dims[b->rank - 2] : b->dims[0];
    int64_t bn = b->rank > 1 ? b->dims[b->rank - 1] : 1;
    if (ak != bk)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "inner dims differ: A %s, B %s",
                           pp_sh_dims_str(a->rank, a->dims, b1, sizeof b1),
                           pp_sh_dims_str(b->rank, b->dims, b2, sizeof b2));
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0, r;
    int64_t d[PP_MAX_RANK + 2];
    if ((st = pp_sh_broadcast(c, n, ra, a->dims, rb, b->dims, &r, d))) return st;
    if (a->rank > 1) d[r++] = am;
    if (b->rank > 1) d[r++] = bn;
    return pp_sh_set(c, n, 0, odt ? odt : a->dtype, r, d);
}

static perfpred_status rule_matmul(pp_sctx *c, pp_node *n)
{
    return matmul_common(c, n, 0, 1, 0);
}

static perfpred_status rule_matmul_integer(pp_sctx *c, pp_node *n)
{
    return matmul_common(c, n, 0, 1, PP_DT_INT32);
}

static perfpred_status rule_qlinear_matmul(pp_sctx *c, pp_node *n)
{
    const pp_tensor *yzp = pp_sh_in(c, n, 7), *a = pp_sh_in(c, n, 0);
    return matmul_common(c, n, 0, 3, yzp ? yzp->dtype : (a ? a->dtype : PP_DT_UINT8));
}

/* ------------------------------------------------------------------ normalization ---- */

/* BatchNormalization: Y like X. Optional outputs: opset>=14 running mean/var (mean's shape);
 * before, mean, var (mean's shape), saved mean, saved var (scale's shape). */
static perfpred_status rule_batchnorm(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *scale, *mean;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &scale);
    if (!st) st = pp_sh_need(c, n, 3, &mean);
    if (st) return st;
    if (x->rank >= 2 && scale->rank == 1 && scale->dims[0] != x->dims[1]) {
        char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scale %s does not match channels of X %s",
                           pp_sh_dims_str(1, scale->dims, b1, sizeof b1),
                           pp_sh_dims_str(x->rank, x->dims, b2, sizeof b2));
    }
    if ((st = pp_sh_set_like(c, n, 0, x)) || (st = pp_sh_set_like(c, n, 1, mean)) ||
        (st = pp_sh_set_like(c, n, 2, mean)) || (st = pp_sh_set_like(c, n, 3, scale)) ||
        (st = pp_sh_set_like(c, n, 4, scale)))
        return st;
    return PERFPRED_OK;
}

/* LayerNormalization: Y like X; Mean and InvStdDev keep dims before `axis` and are 1 after. */
static perfpred_status rule_layernorm(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int axis;
    if ((st = pp_sh_axis(c, n, pp_node_attr_i(n, "axis", -1), x->rank, &axis))) return st;
    int64_t d[PP_MAX_RANK];
    for (int k = 0; k < x->rank; k++) d[k] = k < axis ? x->dims[k] : 1;
    int32_t u = (int32_t)pp_node_attr_i(n, "stash_type", PP_DT_FLOAT);
    if ((st = pp_sh_set_like(c, n, 0, x)) || (st = pp_sh_set(c, n, 1, u, x->rank, d)) ||
        (st = pp_sh_set(c, n, 2, u, x->rank, d)))
        return st;
    return PERFPRED_OK;
}

/* InstanceNormalization, GroupNormalization, MVN, LRN, Softmax family: Y like X. */
static perfpred_status rule_like_x(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    const pp_attr *a = pp_node_attr(n, "axis");
    int axis;
    if (a && a->type == PP_ATTR_INT && x->rank > 0 &&
        (!strcmp(n->op_type, "Softmax") || !strcmp(n->op_type, "LogSoftmax") ||
         !strcmp(n->op_type, "Hardmax")) &&
        (st = pp_sh_axis(c, n, a->i, x->rank, &axis)))
        return st;
    return pp_sh_set_like(c, n, 0, x);
}

/* ------------------------------------------------------------------ recurrent ---- */

/* RNN / GRU / LSTM: X [seq, batch, in] (layout 0) or [batch, seq, in] (layout 1); W is
 * [dirs, gates*hidden, in]. Y [seq, dirs, batch, hidden] or [batch, seq, dirs, hidden];
 * Y_h (and LSTM's Y_c) [dirs, batch, hidden] or [batch, dirs, hidden]. */
static perfpred_status rule_rnn(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *w;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &w);
    if (st) return st;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    int gates = !strcmp(n->op_type, "LSTM") ? 4 : (!strcmp(n->op_type, "GRU") ? 3 : 1);
    int dirs = !strcmp(pp_node_attr_s(n, "direction", "forward"), "bidirectional") ? 2 : 1;
    int layout = (int)pp_node_attr_i(n, "layout", 0);
    if (x->rank != 3 || w->rank != 3 || w->dims[0] != dirs || w->dims[2] != x->dims[2] ||
        w->dims[1] % gates != 0)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "X %s and W %s do not match (%d gates, %d "
                           "directions)",
                           pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1),
                           pp_sh_dims_str(w->rank, w->dims, b2, sizeof b2), gates, dirs);
    int64_t h = pp_node_attr_i(n, "hidden_size", w->dims[1] / gates);
    if (h != w->dims[1] / gates)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "hidden_size %lld disagrees with W %s",
                           (long long)h, pp_sh_dims_str(3, w->dims, b2, sizeof b2));
    int64_t seq = x->dims[layout ? 1 : 0], batch = x->dims[layout ? 0 : 1];
    int64_t y[4], yh[3];
    if (layout) {
        y[0] = batch; y[1] = seq; y[2] = dirs; y[3] = h;
        yh[0] = batch; yh[1] = dirs; yh[2] = h;
    } else {
        y[0] = seq; y[1] = dirs; y[2] = batch; y[3] = h;
        yh[0] = dirs; yh[1] = batch; yh[2] = h;
    }
    if ((st = pp_sh_set(c, n, 0, x->dtype, 4, y)) || (st = pp_sh_set(c, n, 1, x->dtype, 3, yh)) ||
        (st = pp_sh_set(c, n, 2, x->dtype, 3, yh)))
        return st;
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ Einsum ---- */

/* Einsum: each input term maps letters to dims ("..." takes the remaining dims, broadcast across
 * terms); the output is the explicit "->" term, or the implicit one: "..." dims, then the letters
 * used exactly once in ASCII order. */
static perfpred_status rule_einsum(pp_sctx *c, pp_node *n)
{
    const char *eq = pp_node_attr_s(n, "equation", NULL);
    if (!eq) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute 'equation' is missing");
    char buf[512];
    size_t L = 0;
    for (const char *p = eq; *p && L + 1 < sizeof buf; p++)
        if (!isspace((unsigned char)*p)) buf[L++] = *p;
    buf[L] = '\0';
    char *arrow = strstr(buf, "->");
    char *rhs = NULL;
    if (arrow) {
        *arrow = '\0';
        rhs = arrow + 2;
    }
    int64_t ldim[128];
    int lcount[128] = {0};
    for (int i = 0; i < 128; i++) ldim[i] = -1;
    int er = 0, any_ell = 0;
    int64_t ed[PP_MAX_RANK];
    int term = 0;
    perfpred_status st;
    char b1[PP_DIMS_BUF];
    for (char *t = buf;; term++) {
        char *comma = strchr(t, ',');
        if (comma) *comma = '\0';
        pp_tensor *x;
        if (term >= n->n_inputs)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "equation '%s' has more terms than inputs",
                               eq);
        if ((st = pp_sh_need(c, n, term, &x))) return st;
        int letters = 0, ell = 0;
        for (char *p = t; *p; p++) {
            if (isalpha((unsigned char)*p)) letters++;
            else if (!strncmp(p, "...", 3)) {
                ell++;
                p += 2;
            } else {
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "bad character '%c' in equation '%s'",
                                   *p, eq);
            }
        }
        int nell = x->rank - letters;
        if (ell > 1 || (!ell && nell != 0) || nell < 0)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "term '%s' does not fit input %d %s", t,
                               term, pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1));
        int pos = 0;
        for (char *p = t; *p; p++) {
            if (*p == '.') {
                if ((st = pp_sh_broadcast(c, n, er, ed, nell, x->dims + pos, &er, ed))) return st;
                any_ell = 1;
                pos += nell;
                p += 2;
                continue;
            }
            int ch = (unsigned char)*p;
            int64_t dim = x->dims[pos++];
            if (ldim[ch] < 0 || ldim[ch] == 1) ldim[ch] = dim;
            else if (dim != ldim[ch] && dim != 1)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "label '%c' has sizes %lld and %lld",
                                   ch, (long long)ldim[ch], (long long)dim);
            lcount[ch]++;
        }
        if (!comma) break;
        t = comma + 1;
    }
    if (term + 1 != n->n_inputs)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "equation '%s' has %d terms for %d inputs", eq,
                           term + 1, n->n_inputs);
    int64_t d[PP_MAX_RANK];
    int r = 0;
    pp_tensor *x0 = pp_sh_in(c, n, 0);
    if (rhs) {
        for (char *p = rhs; *p; p++) {
            if (*p == '.' && !strncmp(p, "...", 3)) {
                for (int k = 0; k < er && r < PP_MAX_RANK; k++) d[r++] = ed[k];
                p += 2;
                continue;
            }
            int ch = (unsigned char)*p;
            if (!isalpha(ch) || ldim[ch] < 0)
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                                   "output label '%c' does not appear in the inputs", *p);
            if (r >= PP_MAX_RANK)
                return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "output rank exceeds %d",
                                   PP_MAX_RANK);
            d[r++] = ldim[ch];
        }
    } else {
        if (any_ell)
            for (int k = 0; k < er; k++) d[r++] = ed[k];
        for (int ch = 0; ch < 128; ch++)
            if (lcount[ch] == 1) {
                if (r >= PP_MAX_RANK)
                    return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "output rank exceeds %d",
                                       PP_MAX_RANK);
                d[r++] = ldim[ch];
            }
    }
    return pp_sh_set(c, n, 0, x0->dtype, r, d);
}

/* ------------------------------------------------------------------ losses and misc ---- */

/* NegativeLogLikelihoodLoss(input [N,C,d...], target [N,d...]) and SoftmaxCrossEntropyLoss:
 * reduction none -> target's shape, else a scalar; SCE's log_prob has the scores' shape. */
static perfpred_status rule_loss(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *t;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &t);
    if (st) return st;
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    int ok = x->rank >= 2 && t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int k = 1; ok && k < t->rank; k++) ok = t->dims[k] == x->dims[k + 1];
    if (!ok)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "scores %s and labels %s do not match",
                           pp_sh_dims_str(x->rank, x->dims, b1, sizeof b1),
                           pp_sh_dims_str(t->rank, t->dims, b2, sizeof b2));
    const char *red = pp_node_attr_s(n, "reduction", "mean");
    if (!strcmp(red, "none")) st = pp_sh_set(c, n, 0, x->dtype, t->rank, t->dims);
    else if (!strcmp(red, "mean") || !strcmp(red, "sum")) st = pp_sh_set(c, n, 0, x->dtype, 0, NULL);
    else return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "unsupported reduction '%s'", red);
    if (!st) st = pp_sh_set_like(c, n, 1, x);
    return st;
}

/* GridSample(X [N,C,spatial...], grid [N, out..., r]) -> [N, C, out...]. */
static perfpred_status rule_grid_sample(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *g;
    perfpred_status st = need_nc(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &g);
    if (st) return st;
    if (g->rank != x->rank || g->dims[0] != x->dims[0])
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "grid does not match X");
    int64_t d[PP_MAX_RANK];
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    for (int k = 1; k < g->rank - 1; k++) d[k + 1] = g->dims[k];
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

/* RoiAlign(X [N,C,H,W], rois [R,4], batch_indices [R]) -> [R, C, output_height, output_width]. */
static perfpred_status rule_roi_align(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *rois;
    perfpred_status st = need_nc(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &rois);
    if (st) return st;
    if (rois->rank != 2 || rois->dims[1] != 4)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "rois must be [R, 4]");
    int64_t d[4] = {rois->dims[0], x->dims[1], pp_node_attr_i(n, "output_height", 1),
                    pp_node_attr_i(n, "output_width", 1)};
    return pp_sh_set(c, n, 0, x->dtype, 4, d);
}

static perfpred_status rule_det(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "input must end in a square matrix");
    return pp_sh_set(c, n, 0, x->dtype, x->rank - 2, x->dims);
}

/* DFT(input [..., n, 1|2], [dft_length]): last dim 2; dims[axis] = dft_length, or its
 * floor(/2)+1 when onesided. */
static perfpred_status rule_dft(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    if (x->rank < 2) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "input rank must be >= 2");
    int64_t axis = pp_node_attr_i(n, "axis", 1);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis > x->rank - 2)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "axis %lld out of range for rank %d",
                           (long long)pp_node_attr_i(n, "axis", 1), x->rank);
    int64_t d[PP_MAX_RANK], len = x->dims[axis];
    memcpy(d, x->dims, sizeof d);
    if (pp_sh_in(c, n, 1) && (st = pp_sh_scalar_i(c, n, 1, &len))) return st;
    d[axis] = pp_node_attr_i(n, "onesided", 0) ? len / 2 + 1 : len;
    d[x->rank - 1] = 2;
    return pp_sh_set(c, n, 0, x->dtype, x->rank, d);
}

/* STFT(signal [B, L, 1|2], frame_step, [window], [frame_length]) -> [B, frames, bins, 2]. */
static perfpred_status rule_stft(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int64_t step, fl = -1;
    if ((st = pp_sh_scalar_i(c, n, 1, &step))) return st;
    const pp_tensor *w = pp_sh_in(c, n, 2);
    if (pp_sh_in(c, n, 3)) {
        if ((st = pp_sh_scalar_i(c, n, 3, &fl))) return st;
    } else if (w && w->rank == 1) {
        fl = w->dims[0];
    }
    if (x->rank != 3 || step < 1 || fl < 1 || fl > x->dims[1])
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "bad signal, frame_step or frame_length");
    int64_t bins = pp_node_attr_i(n, "onesided", 1) ? fl / 2 + 1 : fl;
    int64_t d[4] = {x->dims[0], (x->dims[1] - fl) / step + 1, bins, 2};
    return pp_sh_set(c, n, 0, x->dtype, 4, d);
}

const pp_op_entry pp_ops_nn[] = {
    {"Conv", rule_conv},
    {"ConvInteger", rule_conv_integer},
    {"QLinearConv", rule_qlinear_conv},
    {"ConvTranspose", rule_conv_transpose},
    {"MaxPool", rule_pool},
    {"AveragePool", rule_pool},
    {"LpPool", rule_pool},
    {"GlobalAveragePool", rule_global_pool},
    {"GlobalMaxPool", rule_global_pool},
    {"GlobalLpPool", rule_global_pool},
    {"MaxUnpool", rule_max_unpool},
    {"Gemm", rule_gemm},
    {"MatMul", rule_matmul},
    {"MatMulInteger", rule_matmul_integer},
    {"QLinearMatMul", rule_qlinear_matmul},
    {"BatchNormalization", rule_batchnorm},
    {"LayerNormalization", rule_layernorm},
    {"InstanceNormalization", rule_like_x},
    {"GroupNormalization", rule_like_x},
    {"MeanVarianceNormalization", rule_like_x},
    {"LRN", rule_like_x},
    {"Softmax", rule_like_x},
    {"LogSoftmax", rule_like_x},
    {"Hardmax", rule_like_x},
    {"RNN", rule_rnn},
    {"GRU", rule_rnn},
    {"LSTM", rule_rnn},
    {"Einsum", rule_einsum},
    {"NegativeLogLikelihoodLoss", rule_loss},
    {"SoftmaxCrossEntropyLoss", rule_loss},
    {"GridSample", rule_grid_sample},
    {"RoiAlign", rule_roi_align},
    {"Det", rule_det},
    {"DFT", rule_dft},
    {"STFT", rule_stft},
    {NULL, NULL},
};
