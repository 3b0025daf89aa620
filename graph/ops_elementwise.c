/* graph/ops_elementwise.c: shape rules for element-wise ops: unary activations and math, Cast and
 * CastLike, Dropout, Clip, numpy-broadcasting binary and variadic ops (including opset<7 legacy
 * `broadcast`/`axis`), comparisons and logic, Where, quantization and random-like ops. Integer and
 * float arithmetic on constant inputs is folded. */
#include "graph/shape_internal.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ unary ---- */

typedef enum { U_NONE, U_NEG, U_ABS, U_FLOOR, U_CEIL, U_SQRT, U_NOT, U_IDENT, U_RECIP, U_ROUND,
               U_SIGN, U_RELU } unary_fold;

static const struct {
    const char *op;
    unary_fold f;
} unary_ops[] = {
    {"Neg", U_NEG}, {"Abs", U_ABS}, {"Floor", U_FLOOR}, {"Ceil", U_CEIL}, {"Sqrt", U_SQRT},
    {"Not", U_NOT}, {"Identity", U_IDENT}, {"Reciprocal", U_RECIP}, {"Round", U_ROUND},
    {"Sign", U_SIGN}, {"Relu", U_RELU},
};

static unary_fold unary_kind(const char *op)
{
    for (size_t k = 0; k < sizeof unary_ops / sizeof unary_ops[0]; k++)
        if (strcmp(unary_ops[k].op, op) == 0) return unary_ops[k].f;
    return U_NONE;
}

static double unary_f(unary_fold f, double x)
{
    switch (f) {
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_FLOOR: return floor(x);
    case U_CEIL: return ceil(x);
    case U_SQRT: return sqrt(x);
    case U_NOT: return x == 0.0;
    case U_RECIP: return 1.0 / x;
    case U_ROUND: return nearbyint(x); /* round half to even under the default rounding mode */
    case U_SIGN: return (x > 0) - (x < 0);
    case U_RELU: return x > 0 ? x : 0.0;
    default: return x;
    }
}

static int64_t unary_i(unary_fold f, int64_t x)
{
    switch (f) {
    case U_NEG: return x == INT64_MIN ? x : -x;
    case U_ABS: return x < 0 && x != INT64_MIN ? -x : x;
    case U_NOT: return x == 0;
    case U_SQRT: return x > 0 ? (int64_t)sqrt((double)x) : 0; /* NaN has no integer */
    case U_SIGN: return (x > 0) - (x < 0);
    case U_RELU: return x > 0 ? x : 0;
    default: return x; /* Floor, Ceil, Round, Identity of an integer */
    }
}

/* Same dtype and dims as input 0; folds the ops of unary_ops[]. */
static perfpred_status rule_unary(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_set_like(c, n, 0, x);
    if (st) return st;
    unary_fold f = unary_kind(n->op_type);
    if (f == U_NONE || !pp_sh_has_value(x)) return PERFPRED_OK;
    pp_value *v;
    int r = pp_sh_fold_begin(c, n, 0, &v);
    if (r <= 0) return r < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t i = 0; i < v->n; i++) {
        if (x->val.fval) pp_sh_store_f(v, i, unary_f(f, x->val.fval[i]));
        else pp_sh_store_i(v, i, unary_i(f, x->val.ival[i]));
    }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* IsNaN, IsInf: bool of the input's shape. */
static perfpred_status rule_unary_bool(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    return st ? st : pp_sh_set(c, n, 0, PP_DT_BOOL, x->rank, x->dims);
}

/* Clip: opset<11 min/max attributes, later optional inputs; shape of input 0. */
static perfpred_status rule_clip(pp_sctx *c, pp_node *n)
{
    perfpred_status st = pp_sh_arity(c, n, 1, 3);
    return st ? st : rule_unary(c, n);
}

/* Dropout: output like X; optional mask is bool from opset 10 (before: X's dtype). */
static perfpred_status rule_dropout(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_set_like(c, n, 0, x);
    if (!st) st = pp_sh_set(c, n, 1, c->opset >= 10 ? PP_DT_BOOL : x->dtype, x->rank, x->dims);
    return st;
}

/* ------------------------------------------------------------------ Cast ---- */

static int dtype_from_string(const char *s)
{
    static const char *names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                  "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                  "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    for (int i = 1; i <= 16; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

static perfpred_status cast_to(pp_sctx *c, pp_node *n, pp_tensor *x, int32_t to)
{
    perfpred_status st = pp_sh_set(c, n, 0, to, x->rank, x->dims);
    if (st || !pp_sh_has_value(x)) return st;
    pp_value *v;
    int r = pp_sh_fold_begin(c, n, 0, &v);
    if (r <= 0) return r < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t i = 0; i < v->n; i++) pp_sh_vcopy(v, i, &x->val, i);
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

static perfpred_status rule_cast(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    const pp_attr *a = pp_node_attr(n, "to");
    int64_t to = -1;
    if (a && a->type == PP_ATTR_INT) to = a->i;
    else if (a && a->type == PP_ATTR_STRING && a->s) to = dtype_from_string(a->s);
    if (!a) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute 'to' is missing");
    if (to <= 0 || to > PP_DT_BFLOAT16)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "unsupported target type in 'to'");
    return cast_to(c, n, x, (int32_t)to);
}

static perfpred_status rule_castlike(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *like;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &like);
    return st ? st : cast_to(c, n, x, like->dtype);
}

/* ------------------------------------------------------------------ binary / variadic ---- */

typedef enum { B_NONE, B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MOD, B_MIN, B_MAX, B_EQ, B_LT, B_LE,
               B_GT, B_GE, B_AND, B_OR, B_XOR, B_SHL, B_SHR } binop;

static const struct {
    const char *op;
    binop b;
    int boolean_out;
} bin_ops[] = {
    {"Add", B_ADD, 0}, {"Sub", B_SUB, 0}, {"Mul", B_MUL, 0}, {"Div", B_DIV, 0},
    {"Pow", B_POW, 0}, {"Mod", B_MOD, 0}, {"Min", B_MIN, 0}, {"Max", B_MAX, 0},
    {"Sum", B_ADD, 0}, {"Mean", B_ADD, 0}, {"Equal", B_EQ, 1}, {"Less", B_LT, 1},
    {"LessOrEqual", B_LE, 1}, {"Greater", B_GT, 1}, {"GreaterOrEqual", B_GE, 1},
    {"And", B_AND, 1}, {"Or", B_OR, 1}, {"Xor", B_XOR, 1}, {"BitShift", B_NONE, 0},
};

static binop bin_kind(const pp_node *n, int *boolean_out)
{
    for (size_t k = 0; k < sizeof bin_ops / sizeof bin_ops[0]; k++)
        if (strcmp(bin_ops[k].op, n->op_type) == 0) {
            *boolean_out = bin_ops[k].boolean_out;
            if (strcmp(n->op_type, "BitShift") == 0)
                return strcmp(pp_node_attr_s(n, "direction", ""), "LEFT") == 0 ? B_SHL : B_SHR;
            return bin_ops[k].b;
        }
    *boolean_out = 0;
    return B_NONE;
}

/* Python-style modulo (sign of the divisor) unless fmod: C-style (sign of the dividend). */
static int64_t mod_i(int64_t a, int64_t b, int fmod_mode)
{
    if (b == -1) return 0; /* also avoids INT64_MIN % -1 */
    int64_t r = a % b;
    if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

static double mod_f(double a, double b, int fmod_mode)
{
    double r = fmod(a, b);
    if (!fmod_mode && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

static int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
    int64_t r = 1;
    while (e-- > 0) {
        if (pp_mul_overflow_i64(r, b, &r)) return 0;
    }
    return r;
}

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* One element of a folded binary op; returns -1 on integer division by zero. */
static int apply_bin(binop b, int fmod_mode, const pp_value *x, int64_t ix, const pp_value *y,
                     int64_t iy, pp_value *out, int64_t io)
{
    int fl = x->fval || y->fval;
    if (fl) {
        double a = pp_sh_vf(x, ix), d = pp_sh_vf(y, iy), r;
        switch (b) {
        case B_ADD: r = a + d; break;
        case B_SUB: r = a - d; break;
        case B_MUL: r = a * d; break;
        case B_DIV: r = a / d; break;
        case B_POW: r = pow(a, d); break;
        case B_MOD: r = mod_f(a, d, fmod_mode); break;
        case B_MIN: r = a < d ? a : d; break;
        case B_MAX: r = a > d ? a : d; break;
        case B_EQ: r = a == d; break;
        case B_LT: r = a < d; break;
        case B_LE: r = a <= d; break;
        case B_GT: r = a > d; break;
        case B_GE: r = a >= d; break;
        case B_AND: r = (a != 0) && (d != 0); break;
        case B_OR: r = (a != 0) || (d != 0); break;
        case B_XOR: r = (a != 0) != (d != 0); break;
        default: r = 0; break;
        }
        pp_sh_store_f(out, io, r);
        return 0;
    }
    int64_t a = x->ival[ix], d = y->ival[iy], r;
    switch (b) {
    case B_ADD: r = wrap_add(a, d); break;
    case B_SUB: r = wrap_sub(a, d); break;
    case B_MUL: r = wrap_mul(a, d); break;
    case B_DIV:
        if (d == 0) return -1;
        r = (a == INT64_MIN && d == -1) ? a : a / d; /* truncation, as ONNX Runtime */
        break;
    case B_POW: r = ipow(a, d); break;
    case B_MOD:
        if (d == 0) return -1;
        r = mod_i(a, d, fmod_mode);
        break;
    case B_MIN: r = a < d ? a : d; break;
    case B_MAX: r = a > d ? a : d; break;
    case B_EQ: r = a == d; break;
    case B_LT: r = a < d; break;
    case B_LE: r = a <= d; break;
    case B_GT: r = a > d; break;
    case B_GE: r = a >= d; break;
    case B_AND: r = a && d; break;
    case B_OR: r = a || d; break;
    case B_XOR: r = (a != 0) != (d != 0); break;
    case B_SHL: r = (d < 0 || d >= 64) ? 0 : (int64_t)((uint64_t)a << d); break;
    case B_SHR: r = (d < 0 || d >= 64) ? 0 : (int64_t)((uint64_t)a >> d); break;
    default: r = 0; break;
    }
    pp_sh_store_i(out, io, r);
    return 0;
}

/* Opset<7 binary ops with broadcast=1: B is matched against A starting at `axis` (default: B's
 * dims align with A's trailing dims) and the output has A's shape. Writes B's dims padded to A's
 * rank so the numpy index mapping applies to folding too. */
static perfpred_status legacy_broadcast(pp_sctx *c, pp_node *n, const pp_tensor *a,
                                        const pp_tensor *b, int64_t *bdims)
{
    char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
    int64_t axis = pp_node_attr_i(n, "axis", a->rank - b->rank);
    if (axis < 0) axis += a->rank;
    if (b->rank > a->rank || axis < 0 || axis + b->rank > a->rank)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                           "legacy broadcast of %s onto %s at axis %lld is impossible",
                           pp_sh_dims_str(b->rank, b->dims, b1, sizeof b1),
                           pp_sh_dims_str(a->rank, a->dims, b2, sizeof b2), (long long)axis);
    for (int k = 0; k < a->rank; k++) bdims[k] = 1;
    for (int k = 0; k < b->rank; k++) {
        int64_t bd = b->dims[k], ad = a->dims[axis + k];
        if (bd != ad && bd != 1)
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "legacy broadcast of %s onto %s at axis %lld: dim %d mismatch",
                               pp_sh_dims_str(b->rank, b->dims, b1, sizeof b1),
                               pp_sh_dims_str(a->rank, a->dims, b2, sizeof b2), (long long)axis, k);
        bdims[axis + k] = bd;
    }
    return PERFPRED_OK;
}

/* Binary and variadic broadcasting ops (Add ... BitShift, Sum, Mean, Min, Max). */
static perfpred_status rule_broadcast(pp_sctx *c, pp_node *n)
{
    int present = 0;
    for (int i = 0; i < n->n_inputs; i++) present += pp_sh_in(c, n, i) != NULL;
    int variadic = !strcmp(n->op_type, "Sum") || !strcmp(n->op_type, "Mean") ||
                   !strcmp(n->op_type, "Min") || !strcmp(n->op_type, "Max");
    if (present != n->n_inputs || n->n_inputs < 1 || (!variadic && n->n_inputs != 2))
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "expects %s inputs, has %d present",
                           variadic ? "one or more" : "2", present);
    pp_tensor *ins[64];
    int64_t eff[64][PP_MAX_RANK];
    int effr[64];
    if (n->n_inputs > 64)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "more than 64 inputs");
    int rank = 0;
    int64_t dims[PP_MAX_RANK];
    for (int i = 0; i < n->n_inputs; i++) {
        perfpred_status st = pp_sh_need(c, n, i, &ins[i]);
        if (st) return st;
        effr[i] = ins[i]->rank;
        memcpy(eff[i], ins[i]->dims, sizeof eff[i]);
    }
    int legacy = c->opset < 7 && !variadic && pp_node_attr_i(n, "broadcast", 0) == 1;
    if (legacy) {
        perfpred_status st = legacy_broadcast(c, n, ins[0], ins[1], eff[1]);
        if (st) return st;
        effr[1] = ins[0]->rank;
    }
    rank = effr[0];
    memcpy(dims, eff[0], sizeof dims);
    for (int i = 1; i < n->n_inputs; i++) {
        perfpred_status st = pp_sh_broadcast(c, n, rank, dims, effr[i], eff[i], &rank, dims);
        if (st) return st;
    }
    int boolean_out;
    binop b = bin_kind(n, &boolean_out);
    perfpred_status st = pp_sh_set(c, n, 0, boolean_out ? PP_DT_BOOL : ins[0]->dtype, rank, dims);
    if (st || b == B_NONE || !pp_sh_inputs_const(c, n)) return st;
    if (!strcmp(n->op_type, "Mean") && !pp_dtype_is_float(ins[0]->dtype)) return PERFPRED_OK;

    pp_value *v;
    int r = pp_sh_fold_begin(c, n, 0, &v);
    if (r <= 0) return r < 0 ? c->err->status : PERFPRED_OK;
    int fmod_mode = (int)pp_node_attr_i(n, "fmod", 0);
    for (int64_t o = 0; o < v->n; o++) {
        const pp_value *x = &ins[0]->val;
        int64_t ix = pp_sh_bcast_index(rank, dims, o, effr[0], eff[0]);
        if (n->n_inputs == 1) {
            pp_sh_vcopy(v, o, x, ix);
            continue;
        }
        for (int i = 1; i < n->n_inputs; i++) {
            int64_t iy = pp_sh_bcast_index(rank, dims, o, effr[i], eff[i]);
            if (apply_bin(b, fmod_mode, x, ix, &ins[i]->val, iy, v, o))
                return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                                   "integer division by zero in constant inputs");
            x = v; /* accumulate left to right */
            ix = o;
        }
    }
    if (!strcmp(n->op_type, "Mean"))
        for (int64_t o = 0; o < v->n; o++) pp_sh_store_f(v, o, v->fval[o] / n->n_inputs);
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* PRelu: output has X's shape; slope broadcasts unidirectionally (opset<7: per-channel legacy). */
static perfpred_status rule_prelu(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *s;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &s);
    if (st) return st;
    if (c->opset >= 7) {
        int r;
        int64_t d[PP_MAX_RANK];
        st = pp_sh_broadcast(c, n, x->rank, x->dims, s->rank, s->dims, &r, d);
        if (st) return st;
        if (r != x->rank || memcmp(d, x->dims, (size_t)r * sizeof *d) != 0) {
            char b1[PP_DIMS_BUF], b2[PP_DIMS_BUF];
            return pp_sh_error(c, n, PERFPRED_ERR_SHAPE,
                               "slope %s does not broadcast to X %s",
                               pp_sh_dims_str(s->rank, s->dims, b1, sizeof b1),
                               pp_sh_dims_str(x->rank, x->dims, b2, sizeof b2));
        }
    }
    return pp_sh_set_like(c, n, 0, x);
}

/* Where(cond, X, Y): three-way broadcast, dtype of X. */
static perfpred_status rule_where(pp_sctx *c, pp_node *n)
{
    pp_tensor *t[3];
    for (int i = 0; i < 3; i++) {
        perfpred_status st = pp_sh_need(c, n, i, &t[i]);
        if (st) return st;
    }
    int r;
    int64_t d[PP_MAX_RANK];
    perfpred_status st = pp_sh_broadcast(c, n, t[0]->rank, t[0]->dims, t[1]->rank, t[1]->dims, &r, d);
    if (!st) st = pp_sh_broadcast(c, n, r, d, t[2]->rank, t[2]->dims, &r, d);
    if (!st) st = pp_sh_set(c, n, 0, t[1]->dtype, r, d);
    if (st || !pp_sh_inputs_const(c, n)) return st;
    pp_value *v;
    int ok = pp_sh_fold_begin(c, n, 0, &v);
    if (ok <= 0) return ok < 0 ? c->err->status : PERFPRED_OK;
    for (int64_t o = 0; o < v->n; o++) {
        int64_t ic = pp_sh_bcast_index(r, d, o, t[0]->rank, t[0]->dims);
        int pick = pp_sh_vf(&t[0]->val, ic) != 0.0 ? 1 : 2;
        pp_sh_vcopy(v, o, &t[pick]->val, pp_sh_bcast_index(r, d, o, t[pick]->rank, t[pick]->dims));
    }
    pp_sh_fold_end(c, n, 0);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------ quantization, random ---- */

/* QuantizeLinear(x, y_scale, [y_zero_point]): x's shape, zero point's dtype (uint8 by default). */
static perfpred_status rule_quantize(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    const pp_tensor *zp = pp_sh_in(c, n, 2);
    return pp_sh_set(c, n, 0, zp ? zp->dtype : PP_DT_UINT8, x->rank, x->dims);
}

/* DequantizeLinear(x, x_scale, [x_zero_point]): x's shape, the scale's dtype. */
static perfpred_status rule_dequantize(pp_sctx *c, pp_node *n)
{
    pp_tensor *x, *s;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_need(c, n, 1, &s);
    return st ? st : pp_sh_set(c, n, 0, s->dtype, x->rank, x->dims);
}

static perfpred_status rule_dynamic_quantize(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (!st) st = pp_sh_set(c, n, 0, PP_DT_UINT8, x->rank, x->dims);
    if (!st) st = pp_sh_set(c, n, 1, PP_DT_FLOAT, 0, NULL);
    if (!st) st = pp_sh_set(c, n, 2, PP_DT_UINT8, 0, NULL);
    return st;
}

/* Bernoulli, RandomUniformLike, RandomNormalLike: input's shape, `dtype` attribute or input's. */
static perfpred_status rule_random_like(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    int64_t dt = pp_node_attr_i(n, "dtype", x->dtype);
    if (dt <= 0 || dt > PP_DT_BFLOAT16)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "bad 'dtype' %lld", (long long)dt);
    return pp_sh_set(c, n, 0, (int32_t)dt, x->rank, x->dims);
}

/* RandomNormal, RandomUniform: `shape` attribute, `dtype` attribute (float32 by default). */
static perfpred_status rule_random(pp_sctx *c, pp_node *n)
{
    const int64_t *d;
    int64_t r = pp_sh_attr_ints(n, "shape", &d);
    if (r < 0) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "attribute 'shape' is missing");
    if (r > PP_MAX_RANK)
        return pp_sh_error(c, n, PERFPRED_ERR_UNSUPPORTED, "rank %lld exceeds %d", (long long)r,
                           PP_MAX_RANK);
    int64_t dt = pp_node_attr_i(n, "dtype", PP_DT_FLOAT);
    if (dt <= 0 || dt > PP_DT_BFLOAT16)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "bad 'dtype' %lld", (long long)dt);
    return pp_sh_set(c, n, 0, (int32_t)dt, (int)r, d);
}

/* Multinomial(input [batch, classes]) -> [batch, sample_size] of `dtype` (int32 by default). */
static perfpred_status rule_multinomial(pp_sctx *c, pp_node *n)
{
    pp_tensor *x;
    perfpred_status st = pp_sh_need(c, n, 0, &x);
    if (st) return st;
    if (x->rank != 2) return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "input must be [batch, classes]");
    int64_t d[2] = {x->dims[0], pp_node_attr_i(n, "sample_size", 1)};
    int64_t dt = pp_node_attr_i(n, "dtype", PP_DT_INT32);
    if (dt != PP_DT_INT32 && dt != PP_DT_INT64)
        return pp_sh_error(c, n, PERFPRED_ERR_SHAPE, "bad 'dtype' %lld", (long long)dt);
    return pp_sh_set(c, n, 0, (int32_t)dt, 2, d);
}

const pp_op_entry pp_ops_elementwise[] = {
    /* unary, same dtype and shape */
    {"Relu", rule_unary}, {"LeakyRelu", rule_unary}, {"Sigmoid", rule_unary},
    {"HardSigmoid", rule_unary}, {"HardSwish", rule_unary}, {"Tanh", rule_unary},
    {"Erf", rule_unary}, {"Gelu", rule_unary} /* opset 20; NeuSight and newer exporters */,
    {"Exp", rule_unary}, {"Log", rule_unary}, {"Sqrt", rule_unary},
    {"Reciprocal", rule_unary}, {"Neg", rule_unary}, {"Abs", rule_unary}, {"Floor", rule_unary},
    {"Ceil", rule_unary}, {"Round", rule_unary}, {"Sign", rule_unary}, {"Sin", rule_unary},
    {"Cos", rule_unary}, {"Tan", rule_unary}, {"Asin", rule_unary}, {"Acos", rule_unary},
    {"Atan", rule_unary}, {"Sinh", rule_unary}, {"Cosh", rule_unary}, {"Asinh", rule_unary},
    {"Acosh", rule_unary}, {"Atanh", rule_unary}, {"Not", rule_unary}, {"Elu", rule_unary},
    {"Selu", rule_unary}, {"Celu", rule_unary}, {"Softplus", rule_unary},
    {"Softsign", rule_unary}, {"Mish", rule_unary}, {"ThresholdedRelu", rule_unary},
    {"Shrink", rule_unary}, {"Identity", rule_unary}, {"Clip", rule_clip},
    {"BitwiseNot", rule_unary}, {"LpNormalization", rule_unary},
    {"IsNaN", rule_unary_bool}, {"IsInf", rule_unary_bool}, {"Dropout", rule_dropout},
    {"Cast", rule_cast}, {"CastLike", rule_castlike},
    /* broadcasting */
    {"Add", rule_broadcast}, {"Sub", rule_broadcast}, {"Mul", rule_broadcast},
    {"Div", rule_broadcast}, {"Pow", rule_broadcast}, {"Mod", rule_broadcast},
    {"Min", rule_broadcast}, {"Max", rule_broadcast}, {"Sum", rule_broadcast},
    {"Mean", rule_broadcast}, {"Equal", rule_broadcast}, {"Less", rule_broadcast},
    {"LessOrEqual", rule_broadcast}, {"Greater", rule_broadcast},
    {"GreaterOrEqual", rule_broadcast}, {"And", rule_broadcast}, {"Or", rule_broadcast},
    {"Xor", rule_broadcast}, {"BitShift", rule_broadcast}, {"BitwiseAnd", rule_broadcast},
    {"BitwiseOr", rule_broadcast}, {"BitwiseXor", rule_broadcast}, {"PRelu", rule_prelu},
    {"Where", rule_where},
    /* quantization, random */
    {"QuantizeLinear", rule_quantize}, {"DequantizeLinear", rule_dequantize},
    {"DynamicQuantizeLinear", rule_dynamic_quantize}, {"Bernoulli", rule_random_like},
    {"RandomUniformLike", rule_random_like}, {"RandomNormalLike", rule_random_like},
    {"RandomNormal", rule_random}, {"RandomUniform", rule_random},
    {"Multinomial", rule_multinomial},
    {NULL, NULL},
};
