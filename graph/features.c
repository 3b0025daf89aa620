/* graph/features.c: per-node features (op kind, MACs, FLOPs, parameter and activation bytes,
 * arithmetic intensity, conv/pool/gemm attributes), the graph totals, and the fixed-length vector
 * that layer regressors see. Runs on a linked graph whose tensor shapes are all known; a layer in a
 * benchmark plan and a node of a real model are described by exactly this code. */
#include "graph/graph.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* How a node's work is counted. Per-element costs are per OUTPUT element unless marked "in".
 *
 *   op                                   kind        cost
 *   Conv                                 conv/dwconv MACs = out_elems * C_in/group * prod(kernel);
 *                                                    FLOPs = 2*MACs + out_elems if bias
 *   ConvTranspose                        convt       MACs = in_elems * C_out/group * prod(kernel);
 *                                                    FLOPs = 2*MACs + out_elems if bias
 *   Gemm                                 linear      MACs = M*N*K; FLOPs = 2*MACs + M*N if C given
 *   MatMul (B weight/const | activation) linear|bmm  MACs = prod(broadcast batch) * M*N*K;
 *                                                    FLOPs = 2*MACs (1-D operands: numpy rules)
 *   MaxPool, AveragePool, LpPool         pool        out_elems * prod(kernel)
 *   GlobalAverage/Max/LpPool             globalpool  1 / in element
 *   BatchNormalization                   norm        2 (folded scale and shift)
 *   Layer/Instance/GroupNormalization,
 *   MeanVarianceNormalization            norm        8 (mean, centre, square, sum, scale, shift..)
 *   LpNormalization                      norm        3
 *   LRN                                  norm        size + 5 (window sum of squares, pow, divide)
 *   Softmax, LogSoftmax                  softmax     5 (max, subtract, exp, sum, divide/log)
 *   ReduceMean/Sum/Max/Min/Prod/LogSum   reduce      1 / in element
 *   ReduceL1/L2/SumSquare/LogSumExp      reduce      2 / in element
 *   Transpose, Concat, Slice, Split,
 *   Gather*, Scatter*, Pad, Expand, Tile,
 *   DepthToSpace, SpaceToDepth, Trilu,
 *   OneHot, Compress, ReverseSequence    datamove    0 (bytes only)
 *   ArgMax, ArgMin, TopK                 datamove    1 / in element (one compare each)
 *   CumSum                               datamove    1
 *   Resize, Upsample                     datamove    nearest 0; linear 2*2^r - 1; cubic 2*4^r - 1,
 *                                                    r = number of resized axes
 *   Reshape, Flatten, Squeeze,
 *   Unsqueeze, Identity, Dropout         reshape     0; a view: no bytes read or written
 *   Shape, Size, Constant,
 *   ConstantOfShape, Range, and any node
 *   whose value is known at load         shape       0, and no bytes, params or MACs (folded)
 *   Sum, Max, Min (variadic)             elemwise    n_inputs - 1;  Mean: n_inputs
 *   Clip, LeakyRelu, PRelu               elemwise    2
 *   HardSigmoid 3; HardSwish 4; Softsign 2
 *   Exp, Log, Sqrt, Pow, Erf, Sigmoid,
 *   Tanh, Softplus, Elu, Selu, Celu,
 *   trigonometric                        elemwise    4 (transcendental: a few FMA-equivalents)
 *   Gelu, Mish                           elemwise    8
 *   everything else (Add, Mul, Relu, Cast, Where, comparisons, unknown ops) elemwise 1
 *
 * "Folded" nodes are those shape inference marked (feat.folded), those whose outputs are all known
 * constants, and those whose every input is static (a weight, a known constant, or the output of a
 * folded node): a Transpose or Cast of a weight is done once at load by every runtime, and its
 * output is a parameter of its consumers (so MatMul(x, Transpose(W)) is a linear layer). */

enum cost {
    C_ELEM,     /* f per output element */
    C_IN,       /* f per input element */
    C_NONE,     /* no arithmetic */
    C_VIEW,     /* no arithmetic, no bytes */
    C_CONV,
    C_CONVT,
    C_GEMM,
    C_MATMUL,
    C_EINSUM,
    C_POOL,
    C_GLOBALPOOL,
    C_NORM,     /* f per output element + shape fields */
    C_LRN,
    C_SOFTMAX,
    C_REDUCE,   /* f per input element + m/k fields */
    C_VARIADIC,
    C_RESIZE
};

typedef struct op_rule {
    const char *op;
    pp_op_kind kind;
    enum cost cost;
    double f;
} op_rule;

static const op_rule rules[] = {
    {"Conv", PP_OPK_CONV, C_CONV, 0},
    {"ConvTranspose", PP_OPK_CONVT, C_CONVT, 0},
    {"Gemm", PP_OPK_LINEAR, C_GEMM, 0},
    {"MatMul", PP_OPK_BMM, C_MATMUL, 0},
    {"Einsum", PP_OPK_BMM, C_EINSUM, 0},
    {"MaxPool", PP_OPK_POOL, C_POOL, 1},
    {"AveragePool", PP_OPK_POOL, C_POOL, 1},
    {"LpPool", PP_OPK_POOL, C_POOL, 1},
    {"GlobalAveragePool", PP_OPK_GLOBALPOOL, C_GLOBALPOOL, 1},
    {"GlobalMaxPool", PP_OPK_GLOBALPOOL, C_GLOBALPOOL, 1},
    {"GlobalLpPool", PP_OPK_GLOBALPOOL, C_GLOBALPOOL, 1},
    {"BatchNormalization", PP_OPK_NORM, C_NORM, 2},
    {"LayerNormalization", PP_OPK_NORM, C_NORM, 8},
    {"InstanceNormalization", PP_OPK_NORM, C_NORM, 8},
    {"GroupNormalization", PP_OPK_NORM, C_NORM, 8},
    {"MeanVarianceNormalization", PP_OPK_NORM, C_NORM, 8},
    {"LpNormalization", PP_OPK_NORM, C_NORM, 3},
    {"LRN", PP_OPK_NORM, C_LRN, 5},
    {"Softmax", PP_OPK_SOFTMAX, C_SOFTMAX, 5},
    {"LogSoftmax", PP_OPK_SOFTMAX, C_SOFTMAX, 5},
    {"ReduceMean", PP_OPK_REDUCE, C_REDUCE, 1},
    {"ReduceSum", PP_OPK_REDUCE, C_REDUCE, 1},
    {"ReduceMax", PP_OPK_REDUCE, C_REDUCE, 1},
    {"ReduceMin", PP_OPK_REDUCE, C_REDUCE, 1},
    {"ReduceProd", PP_OPK_REDUCE, C_REDUCE, 1},
    {"ReduceLogSum", PP_OPK_REDUCE, C_REDUCE, 1},
    {"ReduceL1", PP_OPK_REDUCE, C_REDUCE, 2},
    {"ReduceL2", PP_OPK_REDUCE, C_REDUCE, 2},
    {"ReduceSumSquare", PP_OPK_REDUCE, C_REDUCE, 2},
    {"ReduceLogSumExp", PP_OPK_REDUCE, C_REDUCE, 2},
    {"Transpose", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Concat", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Slice", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Split", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Gather", PP_OPK_DATAMOVE, C_NONE, 0},
    {"GatherElements", PP_OPK_DATAMOVE, C_NONE, 0},
    {"GatherND", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Scatter", PP_OPK_DATAMOVE, C_NONE, 0},
    {"ScatterElements", PP_OPK_DATAMOVE, C_NONE, 0},
    {"ScatterND", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Pad", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Expand", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Tile", PP_OPK_DATAMOVE, C_NONE, 0},
    {"DepthToSpace", PP_OPK_DATAMOVE, C_NONE, 0},
    {"SpaceToDepth", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Trilu", PP_OPK_DATAMOVE, C_NONE, 0},
    {"OneHot", PP_OPK_DATAMOVE, C_NONE, 0},
    {"Compress", PP_OPK_DATAMOVE, C_NONE, 0},
    {"ReverseSequence", PP_OPK_DATAMOVE, C_NONE, 0},
    {"ArgMax", PP_OPK_DATAMOVE, C_IN, 1},
    {"ArgMin", PP_OPK_DATAMOVE, C_IN, 1},
    {"TopK", PP_OPK_DATAMOVE, C_IN, 1},
    {"CumSum", PP_OPK_DATAMOVE, C_ELEM, 1},
    {"Resize", PP_OPK_DATAMOVE, C_RESIZE, 0},
    {"Upsample", PP_OPK_DATAMOVE, C_RESIZE, 0},
    {"Reshape", PP_OPK_RESHAPE, C_VIEW, 0},
    {"Flatten", PP_OPK_RESHAPE, C_VIEW, 0},
    {"Squeeze", PP_OPK_RESHAPE, C_VIEW, 0},
    {"Unsqueeze", PP_OPK_RESHAPE, C_VIEW, 0},
    {"Identity", PP_OPK_RESHAPE, C_VIEW, 0},
    {"Dropout", PP_OPK_RESHAPE, C_VIEW, 0},
    {"Shape", PP_OPK_SHAPE, C_NONE, 0},
    {"Size", PP_OPK_SHAPE, C_NONE, 0},
    {"Constant", PP_OPK_SHAPE, C_NONE, 0},
    {"ConstantOfShape", PP_OPK_SHAPE, C_NONE, 0},
    {"Range", PP_OPK_SHAPE, C_NONE, 0},
    {"Sum", PP_OPK_ELEMWISE, C_VARIADIC, 0},
    {"Max", PP_OPK_ELEMWISE, C_VARIADIC, 0},
    {"Min", PP_OPK_ELEMWISE, C_VARIADIC, 0},
    {"Mean", PP_OPK_ELEMWISE, C_VARIADIC, 1},
    {"Clip", PP_OPK_ELEMWISE, C_ELEM, 2},
    {"LeakyRelu", PP_OPK_ELEMWISE, C_ELEM, 2},
    {"PRelu", PP_OPK_ELEMWISE, C_ELEM, 2},
    {"HardSigmoid", PP_OPK_ELEMWISE, C_ELEM, 3},
    {"HardSwish", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Softsign", PP_OPK_ELEMWISE, C_ELEM, 2},
    {"Exp", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Log", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Sqrt", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Pow", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Erf", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Gelu", PP_OPK_ELEMWISE, C_ELEM, 8},   /* x * 0.5 * (1 + erf(x / sqrt 2)) */
    {"Sigmoid", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Tanh", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Softplus", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Elu", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Selu", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Celu", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Sin", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Cos", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Tan", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Asin", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Acos", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Atan", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Sinh", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Cosh", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Asinh", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Acosh", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Atanh", PP_OPK_ELEMWISE, C_ELEM, 4},
    {"Gelu", PP_OPK_ELEMWISE, C_ELEM, 8},
    {"Mish", PP_OPK_ELEMWISE, C_ELEM, 8},
};

static const op_rule default_rule = {"", PP_OPK_ELEMWISE, C_ELEM, 1};

#define N_RULES (sizeof rules / sizeof rules[0])
static const char *rule_names[N_RULES];
static pp_name_index rule_index;
static pthread_once_t rule_once = PTHREAD_ONCE_INIT;

static void rule_index_build(void)
{
    for (size_t i = 0; i < N_RULES; i++) rule_names[i] = rules[i].op;
    PP_ASSERT(pp_name_index_build(&rule_index, rule_names, (int)N_RULES) == 0);
}

static const op_rule *find_rule(const pp_node *n)
{
    if (n->unknown_op) return &default_rule;
    pthread_once(&rule_once, rule_index_build);
    int i = pp_name_index_find(&rule_index, n->op_type);
    return i < 0 ? &default_rule : &rules[i];
}

/* Integer index/shape tensors (int32/int64/bool/uint32/uint64) are never parameters. */
static int is_param_dtype(int32_t dt)
{
    return pp_dtype_is_float(dt) || dt == PP_DT_INT8 || dt == PP_DT_UINT8 || dt == PP_DT_INT16 ||
           dt == PP_DT_UINT16;
}

/* Static: known without running the model (weight, known constant, output of a folded or
 * shape-kind node). Nodes are visited in topological order, so producers are already classified. */
int pp_tensor_is_static(const pp_graph *g, int t)
{
    const pp_tensor *T = &g->tensors[t];
    if (T->flags & (PP_T_WEIGHT | PP_T_CONST)) return 1;
    if (T->producer >= 0) {
        const pp_node_feat *pf = &g->nodes[T->producer].feat;
        return pf->folded || pf->kind == PP_OPK_SHAPE;
    }
    return 0;
}

/* A static input that carries parameters: a weight, or a large/derived constant; small known
 * non-weight values (folded shape arithmetic, scalars) and integer tensors are not parameters. */
static int is_param_input(const pp_graph *g, int t)
{
    const pp_tensor *T = &g->tensors[t];
    if (!is_param_dtype(T->dtype)) return 0;
    if (T->flags & PP_T_WEIGHT) return 1;
    return !(T->flags & PP_T_CONST);
}

/* ---- per-node helpers ---- */
typedef struct fctx {
    pp_graph *g;
    int ni;
    pp_err *err;
} fctx;

static perfpred_status shape_err(const fctx *c, const char *what)
{
    const pp_node *n = &c->g->nodes[c->ni];
    return pp_err_set(c->err, PERFPRED_ERR_SHAPE, "%s: node '%s' (%s): %s", c->g->path, n->name,
                      n->op_type, what);
}

/* The tensor at input/output slot k with at least min_rank known dims, or NULL (error set). */
static const pp_tensor *slot(const fctx *c, int is_out, int k, int min_rank)
{
    const pp_node *n = &c->g->nodes[c->ni];
    int cnt = is_out ? n->n_outputs : n->n_inputs;
    int t = k < cnt ? (is_out ? n->outputs[k] : n->inputs[k]) : -1;
    char buf[160];
    if (t < 0) {
        snprintf(buf, sizeof buf, "%s %d is missing", is_out ? "output" : "input", k);
        shape_err(c, buf);
        return NULL;
    }
    const pp_tensor *T = &c->g->tensors[t];
    if (!(T->flags & PP_T_SHAPE_KNOWN) || T->rank < min_rank) {
        snprintf(buf, sizeof buf, "tensor '%s' needs a known shape of rank >= %d (has rank %d)",
                 T->name, min_rank, T->rank);
        shape_err(c, buf);
        return NULL;
    }
    return T;
}

static int has_input(const pp_node *n, int k) { return k < n->n_inputs && n->inputs[k] >= 0; }

static double elems(const pp_tensor *t)
{
    double e = 1;
    for (int d = 0; d < t->rank; d++) e *= (double)t->dims[d];
    return e;
}

static int64_t attr_int_at(const pp_node *n, const char *name, int idx, int64_t dflt)
{
    const pp_attr *a = pp_node_attr(n, name);
    if (!a || a->type != PP_ATTR_INTS || idx >= a->n) return dflt;
    return a->ints[idx];
}

/* Fills n/cin/hin/win from x and cout/hout/wout from y (rank >= 2; 1-D spatial keeps w = 1, 3-D
 * keeps the first two spatial dims). */
static void fill_nchw(pp_node_feat *f, const pp_tensor *x, const pp_tensor *y)
{
    f->n = x->dims[0];
    f->cin = x->dims[1];
    f->hin = x->rank > 2 ? x->dims[2] : 1;
    f->win = x->rank > 3 ? x->dims[3] : 1;
    if (y && y->rank >= 2) {
        f->cout = y->dims[1];
        f->hout = y->rank > 2 ? y->dims[2] : 1;
        f->wout = y->rank > 3 ? y->dims[3] : 1;
    }
}

/* Window attributes of Conv/ConvTranspose/pools: kernel (given), strides, dilations, pads, with
 * SAME_UPPER / SAME_LOWER / VALID auto_pad resolved from the actual input and output sizes. */
static perfpred_status fill_window(const fctx *c, pp_node_feat *f, const int64_t *kernel, int nsp,
                                   const pp_tensor *x, const pp_tensor *y, int transposed)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const char *ap = pp_node_attr_s(n, "auto_pad", "NOTSET");
    int same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
    if (!same_upper && !same_lower && strcmp(ap, "VALID") != 0 && strcmp(ap, "NOTSET") != 0)
        return pp_err_set(c->err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: node '%s' (%s): unsupported auto_pad '%s'", c->g->path, n->name,
                          n->op_type, ap);
    for (int d = 0; d < 2; d++) {
        f->kernel[d] = 1;
        f->stride[d] = 1;
        f->dilation[d] = 1;
        f->pads[d] = f->pads[d + 2] = 0;
    }
    int keep = nsp < 2 ? nsp : 2;
    for (int d = 0; d < keep; d++) {
        f->kernel[d] = kernel[d];
        f->stride[d] = attr_int_at(n, "strides", d, 1);
        f->dilation[d] = attr_int_at(n, "dilations", d, 1);
        if (same_upper || same_lower) {
            int64_t in = x->dims[2 + d], out = y->dims[2 + d];
            int64_t span = (kernel[d] - 1) * f->dilation[d] + 1, total;
            if (transposed)
                total = f->stride[d] * (in - 1) + attr_int_at(n, "output_padding", d, 0) + span -
                        out;
            else
                total = (out - 1) * f->stride[d] + span - in;
            if (total < 0) total = 0;
            int64_t small = total / 2, big = total - small;
            f->pads[d] = same_upper ? small : big;
            f->pads[d + 2] = same_upper ? big : small;
        } else if (strcmp(ap, "VALID") != 0) {
            f->pads[d] = attr_int_at(n, "pads", d, 0);
            f->pads[d + 2] = attr_int_at(n, "pads", d + nsp, 0);
        }
    }
    return PERFPRED_OK;
}

static perfpred_status feat_conv(const fctx *c, pp_node_feat *f, int transposed)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *x = slot(c, 0, 0, 3), *w, *y;
    if (!x || !(w = slot(c, 0, 1, 3)) || !(y = slot(c, 1, 0, 3))) return c->err->status;
    int r = x->rank, nsp = r - 2;
    if (w->rank != r || y->rank != r) return shape_err(c, "input, weight and output ranks differ");
    int64_t group = pp_node_attr_i(n, "group", 1);
    if (group < 1) return shape_err(c, "group must be >= 1");
    double kprod = 1;
    for (int d = 0; d < nsp; d++) kprod *= (double)w->dims[2 + d];
    if (!transposed) {
        /* W: [C_out, C_in/group, k...] */
        if (w->dims[1] * group != x->dims[1])
            return shape_err(c, "weight channels * group != input channels");
        f->macs = elems(y) * (double)w->dims[1] * kprod;
        f->kind = (group == x->dims[1] && group > 1) ? PP_OPK_DWCONV : PP_OPK_CONV;
    } else {
        /* W: [C_in, C_out/group, k...] */
        if (w->dims[0] != x->dims[1]) return shape_err(c, "weight rows != input channels");
        f->macs = elems(x) * (double)w->dims[1] * kprod;
        f->kind = PP_OPK_CONVT;
    }
    f->flops = 2 * f->macs + (has_input(n, 2) ? elems(y) : 0);
    f->group = group;
    fill_nchw(f, x, y);
    return fill_window(c, f, w->dims + 2, nsp, x, y, transposed);
}

static perfpred_status feat_gemm(const fctx *c, pp_node_feat *f)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *a = slot(c, 0, 0, 2), *b;
    if (!a || !(b = slot(c, 0, 1, 2))) return c->err->status;
    if (a->rank != 2 || b->rank != 2) return shape_err(c, "Gemm operands must be 2-D");
    int ta = pp_node_attr_i(n, "transA", 0) != 0, tb = pp_node_attr_i(n, "transB", 0) != 0;
    int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], nn = tb ? b->dims[0] : b->dims[1];
    if (k != kb) return shape_err(c, "Gemm reduction dims of A and B differ");
    f->b = 1;
    f->m = m;
    f->nn = nn;
    f->k = k;
    f->macs = (double)m * (double)nn * (double)k;
    f->flops = 2 * f->macs + (has_input(n, 2) ? (double)m * (double)nn : 0);
    f->kind = PP_OPK_LINEAR;
    return PERFPRED_OK;
}

/* numpy matmul: 1-D A is [1,K] with the 1 dropped after, 1-D B is [K,1]; batch dims broadcast. */
static perfpred_status feat_matmul(const fctx *c, pp_node_feat *f)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *a = slot(c, 0, 0, 1), *b;
    if (!a || !(b = slot(c, 0, 1, 1))) return c->err->status;
    int ra = a->rank, rb = b->rank;
    int64_t m = ra == 1 ? 1 : a->dims[ra - 2], k = a->dims[ra - 1];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - 2], nn = rb == 1 ? 1 : b->dims[rb - 1];
    if (k != kb) return shape_err(c, "MatMul reduction dims of A and B differ");
    int la = ra > 2 ? ra - 2 : 0, lb = rb > 2 ? rb - 2 : 0, lmax = la > lb ? la : lb;
    double batch = 1;
    for (int i = 0; i < lmax; i++) {
        int64_t da = i < la ? a->dims[la - 1 - i] : 1, db = i < lb ? b->dims[lb - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            return shape_err(c, "MatMul batch dims do not broadcast");
        batch *= (double)(da == 1 ? db : da);
    }
    f->b = (int64_t)batch;
    f->m = m;
    f->nn = nn;
    f->k = k;
    f->macs = batch * (double)m * (double)nn * (double)k;
    f->flops = 2 * f->macs;
    f->kind = pp_tensor_is_static(c->g, n->inputs[1]) ? PP_OPK_LINEAR : PP_OPK_BMM;
    return PERFPRED_OK;
}

/* Einsum "ab,bc->ac" (optionally with "..."): MACs = product of the sizes of every index letter
 * and of the broadcast "..." dims of the output, for two operands; letters in the output and both
 * operands are batch (b), in the output and one operand rows (m) or columns (nn), absent from the
 * output contracted (k). One operand (a transpose or a sum) does no multiply-accumulate. */
static perfpred_status feat_einsum(const fctx *c, pp_node_feat *f)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const char *eq = pp_node_attr_s(n, "equation", NULL);
    const pp_tensor *y = slot(c, 1, 0, 0);
    if (!eq || !y) return eq ? c->err->status : shape_err(c, "Einsum has no equation");
    f->kind = PP_OPK_DATAMOVE;
    if (n->n_inputs != 2) return PERFPRED_OK; /* sums and transposes: data movement */
    const pp_tensor *op[2];
    for (int i = 0; i < 2; i++)
        if (!(op[i] = slot(c, 0, i, 0))) return c->err->status;
    int64_t size[128] = {0};
    unsigned char where[128] = {0}; /* bit 0: operand 0, bit 1: operand 1, bit 2: output */
    const char *p = eq;
    for (int t = 0; t < 3; t++) {
        const char *end = t < 2 ? strpbrk(p, t == 0 ? "," : "-") : p + strlen(p);
        if (!end) return shape_err(c, "Einsum equation is not of the form 'A,B->C'");
        int d = 0;
        for (const char *q = p; q < end; q++) {
            unsigned char ch = (unsigned char)*q;
            if (ch == '.' || ch == ' ') continue;
            if (ch >= 128) return shape_err(c, "Einsum equation has a non-ASCII letter");
            where[ch] |= (unsigned char)(1u << t);
            if (t < 2) {
                /* letters before "..." index leading dims, letters after it trailing dims */
                const char *dots = strstr(p, "...");
                int after = dots && dots < end && q > dots;
                int letters_after = 0;
                if (after)
                    for (const char *r2 = q + 1; r2 < end; r2++) letters_after += *r2 != '.' && *r2 != ' ';
                int idx = after ? op[t]->rank - 1 - letters_after : d;
                if (idx < 0 || idx >= op[t]->rank) return shape_err(c, "Einsum term does not match its operand's rank");
                if (op[t]->dims[idx] > size[ch]) size[ch] = op[t]->dims[idx];
            }
            d++;
        }
        p = t == 0 ? end + 1 : t == 1 ? end + 2 : end;
        if (t == 1 && strncmp(end, "->", 2) != 0) return shape_err(c, "Einsum equation has no '->'");
    }
    double macs = 1, b = 1, m = 1, nn = 1, k = 1;
    int out_letters = 0;
    for (int ch = 0; ch < 128; ch++) {
        if (!where[ch]) continue;
        double sz = (double)size[ch];
        macs *= sz;
        if (where[ch] & 4) {
            out_letters++;
            if ((where[ch] & 3) == 3) b *= sz;
            else if (where[ch] & 1) m *= sz;
            else nn *= sz;
        } else {
            k *= sz;
        }
    }
    /* "..." dims of the output: what the letters do not account for */
    double out = elems(y), lettered = b * m * nn;
    if (out_letters < y->rank && lettered > 0) {
        macs *= out / lettered;
        b *= out / lettered;
    }
    f->b = (int64_t)b;
    f->m = (int64_t)m;
    f->nn = (int64_t)nn;
    f->k = (int64_t)k;
    f->macs = macs;
    f->flops = 2 * macs;
    f->kind = pp_tensor_is_static(c->g, n->inputs[1]) ? PP_OPK_LINEAR : PP_OPK_BMM;
    return PERFPRED_OK;
}

static perfpred_status feat_pool(const fctx *c, pp_node_feat *f)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *x = slot(c, 0, 0, 3), *y;
    if (!x || !(y = slot(c, 1, 0, 3))) return c->err->status;
    int nsp = x->rank - 2;
    const pp_attr *ks = pp_node_attr(n, "kernel_shape");
    if (!ks || ks->type != PP_ATTR_INTS || ks->n != nsp)
        return shape_err(c, "kernel_shape is missing or does not match the spatial rank");
    double kprod = 1;
    for (int d = 0; d < nsp; d++) kprod *= (double)ks->ints[d];
    f->flops = elems(y) * kprod;
    f->kind = PP_OPK_POOL;
    fill_nchw(f, x, y);
    return fill_window(c, f, ks->ints, nsp, x, y, 0);
}

static perfpred_status feat_globalpool(const fctx *c, pp_node_feat *f)
{
    const pp_tensor *x = slot(c, 0, 0, 3), *y;
    if (!x || !(y = slot(c, 1, 0, 2))) return c->err->status;
    f->flops = elems(x);
    f->kind = PP_OPK_GLOBALPOOL;
    fill_nchw(f, x, y);
    for (int d = 0; d < 2; d++) {
        f->kernel[d] = 2 + d < x->rank ? x->dims[2 + d] : 1;
        f->stride[d] = f->dilation[d] = 1;
    }
    return PERFPRED_OK;
}

/* rows x cols view of a normalisation or softmax: cols = prod(dims[axis..]) (or dims[axis] when
 * single_axis), rows = elems / cols. */
static void fill_rows_cols(pp_node_feat *f, const pp_tensor *x, int64_t axis, int single_axis)
{
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank) return;
    double cols = 1;
    int last = single_axis ? (int)axis + 1 : x->rank;
    for (int d = (int)axis; d < last; d++) cols *= (double)x->dims[d];
    f->b = 1;
    f->nn = (int64_t)cols;
    f->m = cols > 0 ? (int64_t)(elems(x) / cols) : 0;
}

static perfpred_status feat_norm(const fctx *c, pp_node_feat *f, const op_rule *r)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *x = slot(c, 0, 0, 1), *y;
    if (!x || !(y = slot(c, 1, 0, 1))) return c->err->status;
    double per = r->f;
    if (r->cost == C_LRN) per += (double)pp_node_attr_i(n, "size", 1);
    f->flops = per * elems(y);
    f->kind = PP_OPK_NORM;
    if (strcmp(n->op_type, "LayerNormalization") == 0)
        fill_rows_cols(f, x, pp_node_attr_i(n, "axis", -1), 0);
    else if (x->rank >= 2)
        fill_nchw(f, x, y);
    return PERFPRED_OK;
}

static perfpred_status feat_softmax(const fctx *c, pp_node_feat *f, const op_rule *r)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *x = slot(c, 0, 0, 0), *y;
    if (!x || !(y = slot(c, 1, 0, 0))) return c->err->status;
    f->flops = r->f * elems(y);
    f->kind = PP_OPK_SOFTMAX;
    /* opset >= 13: one axis (default -1); before: input flattened to 2-D at axis (default 1) */
    int modern = c->g->opset == 0 || c->g->opset >= 13;
    fill_rows_cols(f, x, pp_node_attr_i(n, "axis", modern ? -1 : 1), modern);
    return PERFPRED_OK;
}

static perfpred_status feat_reduce(const fctx *c, pp_node_feat *f, const op_rule *r)
{
    const pp_tensor *x = slot(c, 0, 0, 0), *y;
    if (!x || !(y = slot(c, 1, 0, 0))) return c->err->status;
    double in = elems(x), out = elems(y);
    f->flops = r->f * in;
    f->kind = PP_OPK_REDUCE;
    f->b = 1;
    f->m = (int64_t)out;
    f->k = out > 0 ? (int64_t)(in / out) : 0;
    return PERFPRED_OK;
}

/* A Transpose's copy: contiguous runs, the output's innermost extent and the stride it reads the
 * input at (pp_node_feat.tr_*); the shape rule checked perm already */
static perfpred_status feat_transpose(const fctx *c, pp_node_feat *f)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *x = slot(c, 0, 0, 0);
    if (!x) return c->err->status;
    int r = x->rank;
    if (r == 0) return PERFPRED_OK; /* a scalar: nothing moves */
    const pp_attr *a = pp_node_attr(n, "perm");
    int64_t perm[PP_MAX_RANK];
    for (int k = 0; k < r; k++) {
        perm[k] = a && a->type == PP_ATTR_INTS && a->n == r ? a->ints[k] : r - 1 - k;
        if (perm[k] < 0) perm[k] += r;
        if (perm[k] < 0 || perm[k] >= r) return PERFPRED_OK; /* the shape rule reports it */
    }
    int kept = 0;
    while (kept < r && perm[r - 1 - kept] == r - 1 - kept) kept++;
    f->tr_run = 1;
    for (int k = r - kept; k < r; k++) f->tr_run *= (double)x->dims[k];
    f->tr_inner = (double)x->dims[perm[r - 1]];
    f->tr_stride = 1;
    for (int k = (int)perm[r - 1] + 1; k < r; k++) f->tr_stride *= (double)x->dims[k];
    f->tr_moved = 0;
    for (int k = 0; k < r; k++) f->tr_moved += perm[k] != k;
    return PERFPRED_OK;
}

static perfpred_status feat_resize(const fctx *c, pp_node_feat *f)
{
    const pp_node *n = &c->g->nodes[c->ni];
    const pp_tensor *x = slot(c, 0, 0, 1), *y;
    if (!x || !(y = slot(c, 1, 0, 1))) return c->err->status;
    if (x->rank != y->rank) return shape_err(c, "input and output ranks differ");
    int resized = 0;
    for (int d = 0; d < x->rank; d++) resized += x->dims[d] != y->dims[d];
    const char *mode = pp_node_attr_s(n, "mode", "nearest");
    double taps = 0;
    if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
        taps = ldexp(1.0, resized);
    else if (strcmp(mode, "cubic") == 0 || strcmp(mode, "bicubic") == 0)
        taps = ldexp(1.0, 2 * resized);
    f->flops = taps > 1 ? (2 * taps - 1) * elems(y) : 0;
    f->kind = PP_OPK_DATAMOVE;
    if (x->rank >= 2) fill_nchw(f, x, y);
    return PERFPRED_OK;
}

/* Bytes of tensor t, or an error naming the node when its shape or dtype is unknown. */
static perfpred_status tensor_bytes(const fctx *c, int t, double *out)
{
    int64_t b = pp_tensor_bytes(&c->g->tensors[t]);
    if (b < 0) {
        char buf[200];
        snprintf(buf, sizeof buf, "tensor '%s' has an unknown shape or dtype",
                 c->g->tensors[t].name);
        return shape_err(c, buf);
    }
    *out = (double)b;
    return PERFPRED_OK;
}

static int seen_before(const int *arr, int k, int t)
{
    for (int i = 0; i < k; i++)
        if (arr[i] == t) return 1;
    return 0;
}

/* Node ni built as a copy of node src (pp_node_copy_source: the same op, attributes and input
 * shapes): it gets src's features when every input is as static as src's, the outputs have the
 * same shapes and neither node is folded, so that every figure below would come out the same. */
static int copy_features(pp_graph *g, int ni, int src)
{
    pp_node *n = &g->nodes[ni];
    const pp_node *S = &g->nodes[src];
    if (n->feat.folded || S->feat.folded || S->feat.kind == PP_OPK_SHAPE) return 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 &&
            pp_tensor_is_static(g, n->inputs[i]) != pp_tensor_is_static(g, S->inputs[i]))
            return 0;
    for (int o = 0; o < n->n_outputs; o++) {
        int a = n->outputs[o], b = S->outputs[o];
        if (a < 0 || b < 0) {
            if (a != b) return 0;
            continue;
        }
        const pp_tensor *A = &g->tensors[a], *B = &g->tensors[b];
        if (A->dtype != B->dtype || A->rank != B->rank || (A->flags & PP_T_CONST) ||
            (B->flags & PP_T_CONST) || A->rank < 0 ||
            memcmp(A->dims, B->dims, (size_t)A->rank * sizeof A->dims[0]) != 0)
            return 0;
    }
    memcpy(&n->feat, &S->feat, sizeof n->feat); /* padding too: users compare with memcmp */
    return 1;
}

static perfpred_status node_features_calc(pp_graph *g, int ni, pp_err *err)
{
    pp_node *n = &g->nodes[ni];
    pp_node_feat *f = &n->feat;
    int folded = f->folded;
    memset(f, 0, sizeof *f);
    f->op_code = pp_op_code(n->op_type);
    fctx c = {g, ni, err};
    perfpred_status st;

    int n_out = 0, all_const = 1, n_in = 0, all_static = 1;
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        if (t < 0) continue;
        n_out++;
        if (!(g->tensors[t].flags & PP_T_CONST)) all_const = 0;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0) continue;
        n_in++;
        if (!pp_tensor_is_static(g, t)) all_static = 0;
    }
    if (n_out > 0 && (all_const || (n_in > 0 && all_static))) folded = 1;

    for (int o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) {
            int64_t e = pp_tensor_elems(&g->tensors[n->outputs[o]]);
            if (e > 0) f->out_elems += e;
        }
    const op_rule *r = find_rule(n);
    if (folded || r->kind == PP_OPK_SHAPE) {
        f->kind = PP_OPK_SHAPE;
        f->folded = folded;
        return PERFPRED_OK;
    }
    f->kind = r->kind;

    /* bytes: distinct non-static inputs read, parameter inputs, outputs written */
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        double b = 0;
        if (t < 0 || seen_before(n->inputs, i, t)) continue;
        if (!pp_tensor_is_static(g, t)) {
            if ((st = tensor_bytes(&c, t, &b))) return st;
            f->in_bytes += b;
        } else if (is_param_input(g, t)) {
            if ((st = tensor_bytes(&c, t, &b))) return st;
            f->param_bytes += b;
            f->params += (double)pp_tensor_elems(&g->tensors[t]);
        }
    }
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        double b = 0; /* set by tensor_bytes; GCC -O3 cannot see that through the inlining */
        if (t < 0) continue;
        if ((st = tensor_bytes(&c, t, &b))) return st;
        f->out_bytes += b;
    }

    switch (r->cost) {
    case C_CONV: st = feat_conv(&c, f, 0); break;
    case C_CONVT: st = feat_conv(&c, f, 1); break;
    case C_GEMM: st = feat_gemm(&c, f); break;
    case C_MATMUL: st = feat_matmul(&c, f); break;
    case C_EINSUM: st = feat_einsum(&c, f); break;
    case C_POOL: st = feat_pool(&c, f); break;
    case C_GLOBALPOOL: st = feat_globalpool(&c, f); break;
    case C_NORM:
    case C_LRN: st = feat_norm(&c, f, r); break;
    case C_SOFTMAX: st = feat_softmax(&c, f, r); break;
    case C_REDUCE: st = feat_reduce(&c, f, r); break;
    case C_RESIZE: st = feat_resize(&c, f); break;
    case C_IN: {
        const pp_tensor *x = slot(&c, 0, 0, 0);
        if (!x) return err->status;
        f->flops = r->f * elems(x);
        st = PERFPRED_OK;
        break;
    }
    case C_VARIADIC: {
        const pp_tensor *y = slot(&c, 1, 0, 0);
        if (!y) return err->status;
        f->flops = (n_in - 1 + r->f) * elems(y);
        if (f->flops < 0) f->flops = 0;
        st = PERFPRED_OK;
        break;
    }
    case C_ELEM:
        f->flops = r->f * (double)f->out_elems;
        st = PERFPRED_OK;
        break;
    case C_VIEW:
        /* a view launches no kernel and moves no bytes; liveness aliases its buffer */
        f->in_bytes = f->out_bytes = 0;
        st = PERFPRED_OK;
        break;
    case C_NONE:
    default:
        st = strcmp(n->op_type, "Transpose") == 0 ? feat_transpose(&c, f) : PERFPRED_OK;
        break;
    }
    if (st) return st;
    double denom = f->in_bytes + f->out_bytes + f->param_bytes;
    f->arith_intensity = denom > 0 ? f->flops / denom : 0;
    return PERFPRED_OK;
}

/* A copy takes its source's features, a node of an earlier graph's memo entry its features
 * (pp_node_memo_feat), anything else computes them (and enters them in the memo). */
static perfpred_status node_features(pp_graph *g, int ni, pp_err *err)
{
    pp_node *n = &g->nodes[ni];
    if (n->copy_of) {
        /* shape inference's answer when it had one: the inputs have not changed since */
        int src = n->copy_src ? n->copy_src - 1 : pp_node_copy_source(g, ni);
        if (src >= 0 && copy_features(g, ni, src)) return PERFPRED_OK;
    }
    if (!g->memo) return node_features_calc(g, ni, err);
    if (pp_node_memo_feat(g, ni)) return PERFPRED_OK;
    int folded_before = n->feat.folded;
    perfpred_status st = node_features_calc(g, ni, err);
    if (!st) pp_node_memo_feat_put(g, ni, folded_before);
    return st;
}

/* A double total as int64, or an overflow error: a shape error (the shapes are what is too big). */
static perfpred_status to_i64(const pp_graph *g, double v, const char *what, int64_t *out,
                              pp_err *err)
{
    if (!(v >= 0) || v >= 9.2e18)
        return pp_err_set(err, PERFPRED_ERR_SHAPE, "%s: total %s overflows 64 bits", g->path, what);
    *out = (int64_t)llround(v);
    return PERFPRED_OK;
}

perfpred_status pp_graph_features(pp_graph *g, pp_err *err)
{
    pp_err local;
    if (!err) err = &local; /* helpers read err->status back */
    if (!g) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "pp_graph_features: NULL graph");
    perfpred_status st;
    double macs = 0, flops = 0, act = 0, params = 0, pbytes = 0, inb = 0;
    int n_unknown = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if ((st = node_features(g, i, err))) return st;
        const pp_node *n = &g->nodes[i];
        macs += n->feat.macs;
        flops += n->feat.flops;
        act += n->feat.out_bytes;
        n_unknown += n->unknown_op != 0;
    }
    /* parameters: each weight tensor once, however many nodes read it (tied embeddings) */
    for (int t = 0; t < g->n_tensors; t++) {
        const pp_tensor *T = &g->tensors[t];
        if (!(T->flags & PP_T_WEIGHT) || T->n_consumers == 0 || !is_param_dtype(T->dtype)) continue;
        int64_t b = pp_tensor_bytes(T);
        if (b < 0)
            return pp_err_set(err, PERFPRED_ERR_SHAPE,
                              "%s: weight '%s' has an unknown shape or dtype", g->path, T->name);
        params += (double)pp_tensor_elems(T);
        pbytes += (double)b;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        const pp_tensor *T = &g->tensors[g->inputs[i]];
        if (T->flags & (PP_T_WEIGHT | PP_T_CONST)) continue;
        int64_t b = pp_tensor_bytes(T);
        if (b < 0)
            return pp_err_set(err, PERFPRED_ERR_SHAPE,
                              "%s: input '%s' has an unknown shape or dtype", g->path, T->name);
        inb += (double)b;
    }
    pp_graph_totals *tt = &g->totals;
    if ((st = to_i64(g, macs, "MACs", &tt->macs, err)) ||
        (st = to_i64(g, flops, "FLOPs", &tt->flops, err)) ||
        (st = to_i64(g, act, "activation bytes", &tt->activation_bytes, err)) ||
        (st = to_i64(g, params, "parameters", &tt->params, err)) ||
        (st = to_i64(g, pbytes, "parameter bytes", &tt->param_bytes, err)) ||
        (st = to_i64(g, inb, "input bytes", &tt->input_bytes, err)))
        return st;
    tt->n_unknown_ops = n_unknown;
    return PERFPRED_OK;
}

/* ---- the regressor feature vector ---- */
static const char *const featvec_names[PP_FEATVEC_LEN] = {
    "log2_macs",      "log2_flops",   "log2_in_bytes", "log2_out_bytes", "log2_param_bytes",
    "log2_out_elems", "log2_arith_intensity",          "kernel_h",       "kernel_w",
    "stride_h",       "stride_w",     "dilation",      "log2_group",     "log2_n",
    "log2_cin",       "log2_hin",     "log2_win",      "log2_cout",      "log2_hout",
    "log2_wout",      "log2_b",       "log2_m",        "log2_nn",        "log2_k"};

const char *pp_feat_vector_name(int i)
{
    return (i >= 0 && i < PP_FEATVEC_LEN) ? featvec_names[i] : NULL;
}

uint32_t pp_op_code(const char *op_type)
{
    return pp_fnv1a32(op_type ? op_type : "", PP_FNV32_BASIS) & 0xFFFFFFu;
}

/* log2(1 + v) for the small whole numbers most fields hold (channels, sizes, batch), computed once
 * by the same expression: a table lookup instead of a log2 call, the same bits */
#define LG1P_TABLE 4096
static float lg1p_table[LG1P_TABLE];
static pthread_once_t lg1p_once = PTHREAD_ONCE_INIT;

static void lg1p_build(void)
{
    for (int v = 1; v < LG1P_TABLE; v++) lg1p_table[v] = (float)log2(1.0 + (double)v);
}

static float lg1p(double x)
{
    if (x > 0 && x < LG1P_TABLE && x == (double)(int)x) return lg1p_table[(int)x];
    return x > 0 ? (float)log2(1.0 + x) : 0.0f;
}

/* Sizes enter as log2(1+x) so that one regressor spans tiny and huge layers; window attributes
 * enter raw (they are small integers); fields a kind does not use are 0. */
int pp_feat_vector(const pp_node_feat *f, float out[PP_FEATVEC_LEN])
{
    if (!f || !out) return -1;
    pthread_once(&lg1p_once, lg1p_build);
    int i = 0;
    out[i++] = lg1p(f->macs);
    out[i++] = lg1p(f->flops);
    out[i++] = lg1p(f->in_bytes);
    out[i++] = lg1p(f->out_bytes);
    out[i++] = lg1p(f->param_bytes);
    out[i++] = lg1p((double)f->out_elems);
    out[i++] = lg1p(f->arith_intensity);
    out[i++] = (float)f->kernel[0];
    out[i++] = (float)f->kernel[1];
    out[i++] = (float)f->stride[0];
    out[i++] = (float)f->stride[1];
    out[i++] = (float)(f->dilation[0] > f->dilation[1] ? f->dilation[0] : f->dilation[1]);
    out[i++] = f->group > 1 ? (float)log2((double)f->group) : 0.0f;
    out[i++] = lg1p((double)f->n);
    out[i++] = lg1p((double)f->cin);
    out[i++] = lg1p((double)f->hin);
    out[i++] = lg1p((double)f->win);
    out[i++] = lg1p((double)f->cout);
    out[i++] = lg1p((double)f->hout);
    out[i++] = lg1p((double)f->wout);
    out[i++] = lg1p((double)f->b);
    out[i++] = lg1p((double)f->m);
    out[i++] = lg1p((double)f->nn);
    out[i++] = lg1p((double)f->k);
    PP_ASSERT(i == PP_FEATVEC_LEN);
    return PP_FEATVEC_LEN;
}
