/* eval/neusight_models.c: the whole-model check. A node table (datasets/neusight_fx.c)
 * becomes an ONNX-IR graph with the shapes the table records, its transformer block repeated
 * num_layer times; every inference label of a GPU is then predicted through perfpred_predict with
 * the kernel breakdown and compared: the sum against the measured end-to-end latency, each node
 * against its own measured latency, and the same kernels timed by the roofline alone. */
#include "eval/eval.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/devices.h"
#include "predictor/predictor.h"

/* ================================================================ the graph ==== */

pp_fx_build_params pp_eval_fx_build_default_params(void)
{
    pp_fx_build_params p = {0};
    p.n_blocks = 1;
    return p;
}

typedef struct made_node {
    const char *name;
    int row, copy;
} made_node;

typedef struct bld {
    const pp_fx_table *t;
    const pp_fx_build_params *p;
    pp_fx_graph *fg;
    pp_graph *g;
    int failed;              /* sticky: OOM or a broken invariant (err set) */
    pp_err *err;
    int nc;                  /* copies of the block */
    const char **tname;      /* [row * nc + copy]: the row's output tensor (NULL: none) */
    int *n_split;            /* [row * nc + copy]: outputs of a split row */
    int row, copy, n_const;
    const char *cur;         /* output tensor name of (row, copy) */
    made_node *made;
    int n_made, cap_made;
    int *ins, n_ins, cap_ins, *outs, n_outs, cap_outs;
    char why[192];
} bld;

static int push_int(bld *b, int **arr, int *n, int *cap, int v)
{
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 16;
        int *a2 = realloc(*arr, (size_t)c * sizeof *a2);
        if (!a2) return -1;
        *arr = a2;
        *cap = c;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

static void *oom(bld *b)
{
    if (!b->failed) pp_err_set(b->err, PERFPRED_ERR_NOMEM, "%s: out of memory", b->t->path);
    b->failed = 1;
    return NULL;
}

static const char *bstr(bld *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *bstr(bld *b, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *s = pp_arena_strdup(b->g->arena, buf);
    return s ? s : oom(b);
}

static int unmapped(bld *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int unmapped(bld *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->why, sizeof b->why, fmt, ap);
    va_end(ap);
    return 0;
}

/* A new source tensor named name: dtype, shape and flags set. */
static const char *source(bld *b, const char *name, int32_t dt, int rank, const int64_t *dims,
                          uint32_t flags)
{
    if (!name) return NULL;
    int t = pp_graph_tensor(b->g, name);
    if (t < 0) return oom(b);
    pp_tensor_set_shape(&b->g->tensors[t], dt, rank, dims);
    b->g->tensors[t].flags |= flags;
    if ((flags & PP_T_GRAPH_INPUT) && push_int(b, &b->ins, &b->n_ins, &b->cap_ins, t))
        return oom(b);
    return b->g->tensors[t].name;
}

/* A weight of the current node, as NeuSight's kernel rows declare theirs (initializer, weight). */
static const char *weight(bld *b, const char *what, int rank, const int64_t *dims)
{
    return source(b, bstr(b, "%s.%s", b->cur, what), PP_DT_FLOAT, rank, dims,
                  PP_T_INITIALIZER | PP_T_WEIGHT);
}

/* A scalar operand (a Python number or host value): a 0-d weight, like NeuSight's 'addu' rows. */
static const char *scalar(bld *b, int32_t dt)
{
    return source(b, bstr(b, "%s/c%d", b->cur, b->n_const++), dt, 0, NULL,
                  PP_T_INITIALIZER | PP_T_WEIGHT);
}

/* A 1-D int64 constant with known values (shapes, slice bounds, split sizes). */
static const char *ints(bld *b, const char *what, int n, const int64_t *v)
{
    int64_t d[1] = {n};
    const char *name = source(b, bstr(b, "%s/%s", b->cur, what), PP_DT_INT64, 1, d,
                              PP_T_INITIALIZER | PP_T_CONST);
    if (!name) return NULL;
    pp_tensor *T = &b->g->tensors[pp_graph_find(b->g, name)];
    T->val.ival = pp_arena_array(b->g->arena, (size_t)n + 1, sizeof(int64_t));
    if (!T->val.ival) return oom(b);
    if (n) memcpy(T->val.ival, v, (size_t)n * sizeof *v);
    T->val.dtype = PP_DT_INT64;
    T->val.rank = 1;
    T->val.dims[0] = n;
    T->val.n = n;
    return name;
}

static const char *temp(bld *b, const char *what) { return bstr(b, "%s/%s", b->cur, what); }

/* Appends a node of the current row; part NULL names it after the row's tensor. */
static int node(bld *b, const char *part, const char *op, const char *const *in, int n_in,
                const char *const *out, int n_out)
{
    if (b->failed) return -1;
    for (int i = 0; i < n_in; i++)
        if (!in[i]) return -1;
    for (int i = 0; i < n_out; i++)
        if (!out[i]) return -1;
    const char *name = part ? bstr(b, "%s/%s", b->cur, part) : b->cur;
    if (!name) return -1;
    int k = pp_graph_add_node(b->g, name, op, "", in, n_in, out, n_out);
    if (k < 0) {
        oom(b);
        return -1;
    }
    if (b->n_made == b->cap_made) {
        int c = b->cap_made ? 2 * b->cap_made : 256;
        made_node *m2 = realloc(b->made, (size_t)c * sizeof *m2);
        if (!m2) {
            oom(b);
            return -1;
        }
        b->made = m2;
        b->cap_made = c;
    }
    b->made[b->n_made++] = (made_node){b->g->nodes[k].name, b->row, b->copy};
    return k;
}

static int node1(bld *b, const char *part, const char *op, const char *const *in, int n_in,
                 const char *out)
{
    return node(b, part, op, in, n_in, &out, 1);
}

static pp_attr *attr(bld *b, int k, const char *name, int type)
{
    if (k < 0) return NULL;
    pp_attr *a = pp_node_add_attr(b->g, k, name, type);
    return a ? a : oom(b);
}

static void attr_i(bld *b, int k, const char *name, int64_t v)
{
    pp_attr *a = attr(b, k, name, PP_ATTR_INT);
    if (a) a->i = v;
}

static void attr_ints(bld *b, int k, const char *name, int n, const int64_t *v)
{
    pp_attr *a = attr(b, k, name, PP_ATTR_INTS);
    if (!a) return;
    if (!(a->ints = pp_arena_array(b->g->arena, (size_t)n + 1, sizeof(int64_t)))) {
        oom(b);
        return;
    }
    memcpy(a->ints, v, (size_t)n * sizeof *v);
    a->n = n;
}

static int in_block(const pp_fx_graph *fg, int r)
{
    return fg->block_start >= 0 && r >= fg->block_start && r <= fg->block_end;
}

/* The tensor the current (row, copy) reads for row r: the same copy inside the block, the last
 * copy from after it, and the previous copy's last row where block k + 1 reads the hidden state. */
static const char *ref(const bld *b, int r)
{
    const pp_fx_graph *fg = b->fg;
    int cur_in = in_block(fg, b->row);
    if (cur_in && b->copy > 0 && r == fg->carried_row)
        return b->tname[fg->block_end * b->nc + b->copy - 1];
    int c = in_block(fg, r) ? (cur_in ? b->copy : b->nc - 1) : 0;
    return b->tname[r * b->nc + c];
}

static int64_t elems(const pp_fx_shape *s)
{
    int64_t e = 1;
    for (int d = 0; d < s->rank; d++) e *= s->dims[d];
    return e;
}

typedef struct operand {
    const char *tensor;      /* NULL for a scalar */
    int row;                 /* producing row, -1 for a scalar */
} operand;

/* Operand from an argument: a node with a tensor, or a number / host value (a scalar). */
static int operand_of(bld *b, const pp_pv *v, operand *o)
{
    o->tensor = NULL;
    o->row = -1;
    if (v->k == PP_PV_INT || v->k == PP_PV_FLOAT || v->k == PP_PV_BOOL) return 1;
    if (v->k != PP_PV_NAME) return unmapped(b, "an argument is neither a node nor a number");
    int r = pp_datasets_fx_find(b->t, v->s);
    if (r < 0) return unmapped(b, "argument '%s' is neither a node nor a number", v->s);
    if (b->fg->cls[r] == PP_FXC_HOST) return 1;
    if (b->n_split[r * b->nc] > 0) return unmapped(b, "argument '%s' is a tuple", v->s);
    if (!(o->tensor = ref(b, r)))
        return unmapped(b, "input '%s' (line %d) has no tensor", v->s, b->t->rows[r].line);
    o->row = r;
    return 1;
}

/* Argument k as a tensor (its row in *r). */
static const char *arg_tensor(bld *b, int k, int *r)
{
    const pp_fx_row *row = &b->t->rows[b->row];
    if (k >= row->args->n) {
        unmapped(b, "argument %d is missing", k);
        return NULL;
    }
    operand o;
    if (!operand_of(b, &row->args->items[k], &o)) return NULL;
    if (!o.tensor) {
        unmapped(b, "argument %d is not a tensor", k);
        return NULL;
    }
    *r = o.row;
    return o.tensor;
}

/* An integer keyword argument, or positional argument pos when absent. 1 found, 0 absent. */
static int int_arg(const pp_fx_row *row, const char *kw, int pos, int64_t *out)
{
    for (int i = 0; i < row->kwargs->n; i++) {
        const pp_pv *k = &row->kwargs->items[2 * i], *v = &row->kwargs->items[2 * i + 1];
        if (k->k == PP_PV_STR && !strcmp(k->s, kw)) {
            if (v->k != PP_PV_INT) return -1;
            *out = v->i;
            return 1;
        }
    }
    if (pos >= 0 && pos < row->args->n) {
        if (row->args->items[pos].k != PP_PV_INT) return -1;
        *out = row->args->items[pos].i;
        return 1;
    }
    return 0;
}

static int input_contiguous(const pp_fx_row *row, int r)
{
    for (int i = 0; i < row->n_in; i++)
        if (row->in_row[i] == r) return row->in_contig[i];
    return 1;
}

static int norm_axis(int64_t axis, int rank, int64_t *out)
{
    if (axis < -rank || axis >= rank) return -1;
    *out = axis < 0 ? axis + rank : axis;
    return 0;
}

/* ---- per-op mappings: each validates first, then emits; 1 mapped, 0 unmapped (b->why) ---- */

static int map_linear(bld *b, const pp_fx_row *row)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    const pp_fx_shape *in = &b->t->rows[r].out, *out = &row->out;
    if (in->rank < 1 || in->rank != out->rank)
        return unmapped(b, "Linear input/output ranks differ");
    int64_t N = in->dims[in->rank - 1], K = out->dims[out->rank - 1], M = N ? elems(in) / N : 0;
    int64_t w[2] = {K, N}, x2[2] = {M, N};
    /* nn.Linear runs addmm on the [M, N] view: Gemm(x, W^T, bias), as NeuSight's linear rows */
    const char *W = weight(b, "weight", 2, w), *B = weight(b, "bias", 1, &K);
    const char *a = x, *y = b->cur;
    if (in->rank != 2) {
        a = temp(b, "2d");
        y = temp(b, "mm");
        const char *i1[] = {x, ints(b, "shape2d", 2, x2)};
        node1(b, "to2d", "Reshape", i1, 2, a);
    }
    const char *ig[] = {a, W, B};
    attr_i(b, node1(b, in->rank != 2 ? "gemm" : NULL, "Gemm", ig, 3, y), "transB", 1);
    if (in->rank != 2) {
        const char *i2[] = {y, ints(b, "shape", out->rank, out->dims)};
        node1(b, NULL, "Reshape", i2, 2, b->cur);
    }
    return 1;
}

static int map_addmm(bld *b, const pp_fx_row *row)
{
    if (row->kwargs->n) return unmapped(b, "addmm with beta/alpha");
    int rb, r1, r2;
    const char *bias = arg_tensor(b, 0, &rb), *m1 = bias ? arg_tensor(b, 1, &r1) : NULL;
    const char *m2 = m1 ? arg_tensor(b, 2, &r2) : NULL;
    if (!m2) return 0;
    const char *in[] = {m1, m2, bias};
    node1(b, NULL, "Gemm", in, 3, b->cur);
    return 1;
}

static int map_matmul(bld *b, const pp_fx_row *row)
{
    int ra, rb;
    const char *x = arg_tensor(b, 0, &ra), *y = x ? arg_tensor(b, 1, &rb) : NULL;
    if (!y) return 0;
    if (row->args->n != 2) return unmapped(b, "matmul with %d arguments", row->args->n);
    const char *in[] = {x, y};
    node1(b, NULL, "MatMul", in, 2, b->cur);
    return 1;
}

static int map_layernorm(bld *b, const pp_fx_row *row)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    const pp_fx_shape *in = &b->t->rows[r].out;
    if (in->rank < 1) return unmapped(b, "LayerNorm of a scalar");
    /* HuggingFace's LayerNorm(hidden): normalised over the last dim, with weight and bias */
    int64_t H = in->dims[in->rank - 1];
    const char *ins[] = {x, weight(b, "weight", 1, &H), weight(b, "bias", 1, &H)};
    int k = node1(b, NULL, "LayerNormalization", ins, 3, b->cur);
    attr_i(b, k, "axis", -1);
    pp_attr *e = attr(b, k, "epsilon", PP_ATTR_FLOAT);
    if (e) e->f = 1e-5;
    return 1;
}

/* Gather(table, indices) along axis 0. */
static int gather(bld *b, const char *table, const char *idx, int idx_row)
{
    if (idx_row >= 0 && pp_dtype_is_float(b->t->rows[idx_row].dtype))
        return unmapped(b, "embedding indices are not integers");
    const char *in[] = {table, idx};
    attr_i(b, node1(b, NULL, "Gather", in, 2, b->cur), "axis", 0);
    return 1;
}

static int map_embedding(bld *b, const pp_fx_row *row)
{
    int r;
    const char *idx = arg_tensor(b, 0, &r);
    if (!idx) return 0;
    if (row->out.rank < 1) return unmapped(b, "embedding of rank 0");
    /* nn.Embedding's table is not a node of the table: its rows come from the model's config */
    const char *nm = row->target;
    int64_t rows = strstr(nm, "position") || strstr(nm, "wpe") ? b->p->position_rows
                   : strstr(nm, "token_type")                   ? b->p->token_type_rows
                                                                : b->p->vocab_rows;
    if (rows <= 0) return unmapped(b, "embedding table size unknown (no model config)");
    int64_t w[2] = {rows, row->out.dims[row->out.rank - 1]};
    return gather(b, weight(b, "weight", 2, w), idx, r);
}

static int map_embedding_fn(bld *b, const pp_fx_row *row)
{
    int ri, rw;
    const char *idx = arg_tensor(b, 0, &ri), *tab = idx ? arg_tensor(b, 1, &rw) : NULL;
    return tab ? gather(b, tab, idx, ri) : 0;
}

static int map_unary(bld *b, const pp_fx_row *row, const char *op)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    node1(b, NULL, op, &x, 1, b->cur);
    return 1;
}

static const char *scalar_or(bld *b, const operand *o, int32_t dt)
{
    return o->tensor ? o->tensor : scalar(b, dt);
}

static int32_t operand_dtype(const bld *b, const operand *o, int32_t dflt)
{
    return o->row >= 0 ? b->t->rows[o->row].dtype : dflt;
}

static int map_binary(bld *b, const pp_fx_row *row, const char *op)
{
    if (row->args->n != 2) return unmapped(b, "%s with %d arguments", row->fn, row->args->n);
    if (row->kwargs->n) return unmapped(b, "%s with keyword arguments", row->fn);
    operand o[2];
    if (!operand_of(b, &row->args->items[0], &o[0]) || !operand_of(b, &row->args->items[1], &o[1]))
        return 0;
    if (!o[0].tensor && !o[1].tensor) return unmapped(b, "%s of two scalars", row->fn);
    int32_t dt = operand_dtype(b, o[0].tensor ? &o[0] : &o[1], row->dtype);
    const char *in[] = {scalar_or(b, &o[0], dt), scalar_or(b, &o[1], dt)};
    node1(b, NULL, op, in, 2, b->cur);
    return 1;
}

/* where(cond, x, y), masked_fill(x, mask, value) = Where(mask, value, x). */
static int map_where(bld *b, const pp_fx_row *row, int masked_fill)
{
    if (row->args->n != 3) return unmapped(b, "%s with %d arguments", row->fn, row->args->n);
    operand o[3];
    for (int i = 0; i < 3; i++)
        if (!operand_of(b, &row->args->items[i], &o[i])) return 0;
    int c = masked_fill ? 1 : 0, x = masked_fill ? 2 : 1, y = masked_fill ? 0 : 2;
    if (!o[c].tensor) return unmapped(b, "%s with a scalar condition", row->fn);
    const char *in[] = {o[c].tensor, scalar_or(b, &o[x], row->dtype),
                        scalar_or(b, &o[y], row->dtype)};
    node1(b, NULL, "Where", in, 3, b->cur);
    return 1;
}

static int map_softmax(bld *b, const pp_fx_row *row)
{
    int r;
    int64_t dim;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    if (int_arg(row, "dim", 1, &dim) != 1) return unmapped(b, "softmax without an integer dim");
    attr_i(b, node1(b, NULL, "Softmax", &x, 1, b->cur), "axis", dim);
    return 1;
}

/* A copy kernel: Transpose with the identity permutation (what contiguous() of a strided view and
 * reshape() of a non-viewable tensor launch). */
static const char *copy_of(bld *b, const char *x, int rank, const char *out)
{
    int64_t perm[PP_MAX_RANK];
    for (int d = 0; d < rank; d++) perm[d] = d;
    attr_ints(b, node1(b, out == b->cur ? NULL : "copy", "Transpose", &x, 1, out), "perm", rank,
              perm);
    return out;
}

/* view, reshape, permute, transpose, unsqueeze, squeeze, flatten: PyTorch views (no kernel), here a
 * Reshape to the recorded shape; reshape/flatten of a non-contiguous tensor copies first. */
static int map_view(bld *b, const pp_fx_row *row)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    const pp_fx_shape *in = &b->t->rows[r].out;
    if (elems(in) != elems(&row->out)) return unmapped(b, "%s changes the element count", row->fn);
    int copies = (!strcmp(row->fn, "reshape") || !strcmp(row->fn, "flatten")) &&
                 !input_contiguous(row, r);
    if (copies) x = copy_of(b, x, in->rank, temp(b, "contiguous"));
    const char *i2[] = {x, ints(b, "shape", row->out.rank, row->out.dims)};
    node1(b, NULL, "Reshape", i2, 2, b->cur);
    return 1;
}

static int map_contiguous(bld *b, const pp_fx_row *row)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    if (input_contiguous(row, r)) node1(b, NULL, "Identity", &x, 1, b->cur);
    else copy_of(b, x, b->t->rows[r].out.rank, b->cur);
    return 1;
}

static int map_expand(bld *b, const pp_fx_row *row)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    const char *in[] = {x, ints(b, "shape", row->out.rank, row->out.dims)};
    node1(b, NULL, "Expand", in, 2, b->cur);
    return 1;
}

/* to, type, type_as, float, long, bool ...: Identity when the dtype stays, else Cast. */
static int map_cast(bld *b, const pp_fx_row *row)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    if (b->t->rows[r].dtype == row->dtype) {
        node1(b, NULL, "Identity", &x, 1, b->cur);
        return 1;
    }
    attr_i(b, node1(b, NULL, "Cast", &x, 1, b->cur), "to", row->dtype);
    return 1;
}

/* split(x, size | sizes, dim) and chunk(x, chunks, dim) -> Split; outputs "<name>:<i>". */
static int map_split(bld *b, const pp_fx_row *row)
{
    int r;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    const pp_fx_shape *in = &b->t->rows[r].out;
    int64_t dim = 0, sizes[64];
    int n = 0;
    if (int_arg(row, "dim", 2, &dim) < 0 || norm_axis(dim, in->rank, &dim))
        return unmapped(b, "%s with a bad dim", row->fn);
    int64_t D = in->dims[dim];
    const pp_pv *s = row->args->n > 1 ? &row->args->items[1] : NULL;
    if (s && s->k == PP_PV_INT && s->i > 0) {
        int64_t part = !strcmp(row->fn, "chunk") ? (D + s->i - 1) / s->i : s->i;
        for (int64_t left = D; left > 0 && n < 64; left -= part)
            sizes[n++] = left < part ? left : part;
        if (part <= 0 || n * part < D) return unmapped(b, "%s into more than 64 parts", row->fn);
    } else if (s && s->k == PP_PV_LIST && s->n <= 64 && strcmp(row->fn, "chunk") != 0) {
        int64_t sum = 0;
        for (int i = 0; i < s->n; i++) {
            if (s->items[i].k != PP_PV_INT || s->items[i].i < 0)
                return unmapped(b, "split sizes are not integers");
            sum += sizes[n++] = s->items[i].i;
        }
        if (sum != D) return unmapped(b, "split sizes do not add up to the dim");
    } else {
        return unmapped(b, "%s without a size", row->fn);
    }
    const char *outs[64];
    for (int i = 0; i < n; i++) outs[i] = bstr(b, "%s:%d", b->cur, i);
    const char *in2[] = {x, ints(b, "split", n, sizes)};
    attr_i(b, node(b, NULL, "Split", in2, 2, outs, n), "axis", dim);
    b->n_split[b->row * b->nc + b->copy] = n;
    return 1;
}

/* getitem: an element of a split, or tensor indexing (a view when nothing is dropped, else Slice
 * then Reshape to the recorded shape). */
static int map_getitem(bld *b, const pp_fx_row *row)
{
    if (row->args->n != 2 || row->args->items[0].k != PP_PV_NAME)
        return unmapped(b, "getitem of something other than a node");
    int r = pp_datasets_fx_find(b->t, row->args->items[0].s);
    if (r < 0) return unmapped(b, "getitem of an unknown node");
    const pp_pv *ix = &row->args->items[1];
    int ns = b->n_split[r * b->nc +
                        (in_block(b->fg, r) ? (in_block(b->fg, b->row) ? b->copy : b->nc - 1) : 0)];
    if (ns > 0) {
        if (ix->k != PP_PV_INT || ix->i < 0 || ix->i >= ns)
            return unmapped(b, "split index out of range");
        const char *x = bstr(b, "%s:%lld", ref(b, r), (long long)ix->i);
        node1(b, NULL, "Identity", &x, 1, b->cur);
        return 1;
    }
    int rr;
    const char *x = arg_tensor(b, 0, &rr);
    if (!x) return 0;
    const pp_fx_shape *in = &b->t->rows[r].out, *out = &row->out;
    if (elems(in) == elems(out)) {
        const char *i2[] = {x, ints(b, "shape", out->rank, out->dims)};
        node1(b, NULL, "Reshape", i2, 2, b->cur);
        return 1;
    }
    const pp_pv *items = ix->k == PP_PV_TUPLE ? ix->items : ix;
    int n = ix->k == PP_PV_TUPLE ? ix->n : 1, consuming = 0;
    for (int i = 0; i < n; i++)
        consuming +=
            items[i].k == PP_PV_INT || (items[i].k == PP_PV_CALL && !strcmp(items[i].s, "slice"));
    int64_t starts[PP_MAX_RANK], ends[PP_MAX_RANK], axes[PP_MAX_RANK], kept[PP_MAX_RANK];
    int ia = 0, oa = 0;
    for (int i = 0; i <= n; i++) {
        const pp_pv *it = i < n ? &items[i] : NULL;
        int fill = !it                                                   ? in->rank - ia
                   : (it->k == PP_PV_NAME && !strcmp(it->s, "Ellipsis")) ? in->rank - consuming
                                                                         : -1;
        if (fill >= 0) {
            for (int k = 0; k < fill && ia < in->rank; k++, ia++, oa++) {
                starts[ia] = 0;
                ends[ia] = kept[ia] = in->dims[ia];
            }
            continue;
        }
        if (it->k == PP_PV_NONE) {
            oa++;
            continue;
        }
        if (ia >= in->rank) return unmapped(b, "too many indices");
        int64_t dim = in->dims[ia], start = 0, size;
        if (it->k == PP_PV_INT) {
            if (norm_axis(it->i, (int)dim, &start)) return unmapped(b, "index out of range");
            size = 1;
        } else if (it->k == PP_PV_CALL && !strcmp(it->s, "slice") && it->n == 3 &&
                   (it->items[2].k == PP_PV_NONE ||
                    (it->items[2].k == PP_PV_INT && it->items[2].i == 1))) {
            if (oa >= out->rank) return unmapped(b, "index does not match the output shape");
            size = out->dims[oa++];
            if (it->items[0].k == PP_PV_INT)
                start = it->items[0].i < 0 ? it->items[0].i + dim : it->items[0].i;
            if (start < 0) start = 0;
            if (start + size > dim) start = dim - size;
        } else {
            return unmapped(b, "advanced or strided indexing");
        }
        if (size > dim || start < 0) return unmapped(b, "index does not match the input shape");
        starts[ia] = start;
        ends[ia] = start + size;
        kept[ia] = size;
        ia++;
    }
    pp_fx_shape ks = {in->rank, {0}};
    memcpy(ks.dims, kept, sizeof kept);
    if (ia != in->rank || oa != out->rank || elems(&ks) != elems(out))
        return unmapped(b, "index does not match the recorded shapes");
    for (int d = 0; d < in->rank; d++) axes[d] = d;
    const char *sl = temp(b, "slice");
    const char *i1[] = {x, ints(b, "starts", in->rank, starts), ints(b, "ends", in->rank, ends),
                        ints(b, "axes", in->rank, axes)};
    node1(b, "slice", "Slice", i1, 4, sl);
    const char *i2[] = {sl, ints(b, "shape", out->rank, out->dims)};
    node1(b, NULL, "Reshape", i2, 2, b->cur);
    return 1;
}

static int map_cumsum(bld *b, const pp_fx_row *row)
{
    int r;
    int64_t dim;
    const char *x = arg_tensor(b, 0, &r);
    if (!x) return 0;
    if (int_arg(row, "dim", 1, &dim) != 1) return unmapped(b, "cumsum without an integer dim");
    const char *in[] = {x, ints(b, "axis", 1, &dim)};
    node1(b, NULL, "CumSum", in, 2, b->cur);
    return 1;
}

/* ones, zeros, full, arange, tensor ...: a tensor of the recorded shape whose values the model
 * fixes: ConstantOfShape, which perfpred folds (no kernel), as an ONNX export would. */
static int map_creation(bld *b, const pp_fx_row *row)
{
    const char *shape = ints(b, "shape", row->out.rank, row->out.dims);
    int k = node1(b, NULL, "ConstantOfShape", &shape, 1, b->cur);
    pp_attr *a = attr(b, k, "value", PP_ATTR_TENSOR);
    if (!a) return 1;
    a->t.dtype = row->dtype;
    a->t.rank = 1;
    a->t.dims[0] = 1;
    a->t.n = 1;
    if (pp_dtype_is_float(row->dtype)) a->t.fval = pp_arena_array(b->g->arena, 1, sizeof(double));
    else a->t.ival = pp_arena_array(b->g->arena, 1, sizeof(int64_t));
    if (!a->t.fval && !a->t.ival) oom(b);
    return 1;
}

static const struct {
    const char *fn, *op;
} unary_ops[] = {{"gelu", "Gelu"}, {"GELU", "Gelu"}, {"NewGELUActivation", "Gelu"},
                 {"GELUActivation", "Gelu"}, {"tanh", "Tanh"}, {"Tanh", "Tanh"}, {"relu", "Relu"},
                 {"ReLU", "Relu"}, {"sigmoid", "Sigmoid"}, {"Sigmoid", "Sigmoid"}, {"exp", "Exp"},
                 {"sqrt", "Sqrt"}, {"neg", "Neg"}, {"abs", "Abs"}, {"erf", "Erf"}, {"log", "Log"},
                 {"dropout", "Identity"}, {"Dropout", "Identity"}, {"Identity", "Identity"}};
static const struct {
    const char *fn, *op;
} binary_ops[] = {{"add", "Add"}, {"sub", "Sub"}, {"mul", "Mul"}, {"truediv", "Div"},
                  {"div", "Div"}, {"pow", "Pow"}, {"eq", "Equal"}, {"lt", "Less"},
                  {"gt", "Greater"}, {"le", "LessOrEqual"}, {"ge", "GreaterOrEqual"},
                  {"maximum", "Max"}, {"minimum", "Min"}, {"max", "Max"}, {"min", "Min"}};
/* Python-level callees whose results are Python values (shape arithmetic) when no tensor comes out
 */
static const char *const host_fns[] = {"size", "dim", "getitem", "getattr", "add", "sub", "mul",
                                       "truediv", "floordiv", "pow", "mod", "eq", "ne", "lt", "gt",
                                       "le", "ge", "neg", "torch.finfo", "torch.iinfo", "len",
                                       "numel", "and_", "or_", "not_"};
static const char *const view_fns[] = {"view", "reshape", "permute", "transpose", "unsqueeze",
                                       "squeeze", "flatten", "t"};
static const char *const cast_fns[] = {"to", "type", "type_as", "float", "long", "bool", "int",
                                       "half", "double"};
static const char *const creation_fns[] = {"ones", "zeros", "full", "empty", "arange", "tensor",
                                           "ones_like", "zeros_like", "full_like", "empty_like"};

static int in_list(const char *s, const char *const *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, l[i])) return 1;
    return 0;
}
#define IN_LIST(s, l) in_list((s), (l), sizeof(l) / sizeof((l)[0]))

static int is_host(const pp_fx_row *row)
{
    return row->dtype == PP_DT_UNDEFINED && row->op != PP_FX_CALL_MODULE &&
           IN_LIST(row->fn, host_fns);
}

static int map_call(bld *b, const pp_fx_row *row)
{
    const char *fn = row->fn;
    if (row->dtype == PP_DT_UNDEFINED && strcmp(fn, "split") && strcmp(fn, "chunk"))
        return unmapped(b, "returns no tensor");
    if (!strcmp(fn, "clone")) {
        int r;
        const char *x = arg_tensor(b, 0, &r);
        if (!x) return 0;
        copy_of(b, x, b->t->rows[r].out.rank, b->cur);
        return 1;
    }
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (!strcmp(fn, unary_ops[i].fn)) return map_unary(b, row, unary_ops[i].op);
    if (row->op == PP_FX_CALL_MODULE) {
        if (!strcmp(fn, "Linear")) return map_linear(b, row);
        if (!strcmp(fn, "LayerNorm")) return map_layernorm(b, row);
        if (!strcmp(fn, "Embedding")) return map_embedding(b, row);
        return unmapped(b, "module class '%s' has no mapping", fn);
    }
    if ((!strcmp(fn, "max") || !strcmp(fn, "min")) && row->args->n != 2)
        return unmapped(b, "%s as a reduction", fn);
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
        if (!strcmp(fn, binary_ops[i].fn)) return map_binary(b, row, binary_ops[i].op);
    if (!strcmp(fn, "addmm")) return map_addmm(b, row);
    if (!strcmp(fn, "matmul") || !strcmp(fn, "bmm") || !strcmp(fn, "mm")) return map_matmul(b, row);
    if (!strcmp(fn, "softmax")) return map_softmax(b, row);
    if (!strcmp(fn, "where")) return map_where(b, row, 0);
    if (!strcmp(fn, "masked_fill") || !strcmp(fn, "masked_fill_")) return map_where(b, row, 1);
    if (!strcmp(fn, "contiguous")) return map_contiguous(b, row);
    if (!strcmp(fn, "expand")) return map_expand(b, row);
    if (!strcmp(fn, "getitem")) return map_getitem(b, row);
    if (!strcmp(fn, "split") || !strcmp(fn, "chunk")) return map_split(b, row);
    if (!strcmp(fn, "cumsum")) return map_cumsum(b, row);
    if (!strcmp(fn, "embedding")) return map_embedding_fn(b, row);
    if (IN_LIST(fn, view_fns)) return map_view(b, row);
    if (IN_LIST(fn, cast_fns)) return map_cast(b, row);
    if (IN_LIST(fn, creation_fns)) return map_creation(b, row);
    return unmapped(b, "%s '%s' has no mapping", pp_datasets_fx_op_names[row->op], fn);
}

/* Marks every tensor the output row names as a graph output. */
static void mark_outputs(bld *b, const pp_pv *v)
{
    if (v->k == PP_PV_NAME) {
        int r = pp_datasets_fx_find(b->t, v->s);
        const char *t = r >= 0 ? ref(b, r) : NULL;
        int k = t ? pp_graph_find(b->g, t) : -1;
        if (k >= 0 && !(b->g->tensors[k].flags & PP_T_GRAPH_OUTPUT)) {
            b->g->tensors[k].flags |= PP_T_GRAPH_OUTPUT;
            if (push_int(b, &b->outs, &b->n_outs, &b->cap_outs, k)) oom(b);
        }
        return;
    }
    int n = v->k == PP_PV_DICT ? 2 * v->n : v->n;
    if (v->k == PP_PV_TUPLE || v->k == PP_PV_LIST || v->k == PP_PV_DICT)
        for (int i = 0; i < n; i++) mark_outputs(b, &v->items[i]);
}

static void build_row(bld *b, int r, int c)
{
    const pp_fx_row *row = &b->t->rows[r];
    pp_fx_graph *fg = b->fg;
    b->row = r;
    b->copy = c;
    b->n_const = 0;
    b->why[0] = '\0';
    if (row->bad) {
        fg->cls[r] = PP_FXC_BAD;
        return;
    }
    b->cur = c == 0 ? row->name : bstr(b, "%s@%d", row->name, c);
    if (!b->cur) return;
    const char **slot = &b->tname[r * b->nc + c];
    pp_fx_class cls;
    switch (row->op) {
    case PP_FX_PLACEHOLDER:
    case PP_FX_GET_ATTR:
        cls = PP_FXC_SOURCE;
        if (row->dtype != PP_DT_UNDEFINED)
            *slot = source(b, b->cur, row->dtype, row->out.rank, row->out.dims,
                           row->op == PP_FX_PLACEHOLDER ? PP_T_GRAPH_INPUT
                                                        : PP_T_INITIALIZER | PP_T_WEIGHT);
        break;
    case PP_FX_OUTPUT:
        cls = PP_FXC_SOURCE;
        mark_outputs(b, row->args);
        break;
    default:
        if (is_host(row)) {
            cls = PP_FXC_HOST;
        } else if (map_call(b, row)) {
            cls = PP_FXC_MAPPED;
            if (row->dtype != PP_DT_UNDEFINED || b->n_split[r * b->nc + c]) *slot = b->cur;
        } else {
            /* its output (when a tensor) enters the graph as an input of the recorded shape */
            cls = PP_FXC_UNMAPPED;
            if (row->dtype != PP_DT_UNDEFINED)
                *slot =
                    source(b, b->cur, row->dtype, row->out.rank, row->out.dims, PP_T_GRAPH_INPUT);
            if (c == 0 && !(fg->why[r] = pp_arena_strdup(b->g->arena, b->why))) oom(b);
        }
        break;
    }
    if (c == 0) fg->cls[r] = cls;
}

/* Graph nodes are found again by the address of their (arena-owned) name after linking. */
static int cmp_made(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const made_node *)a)->name;
    uintptr_t y = (uintptr_t)((const made_node *)b)->name;
    return x < y ? -1 : x > y;
}

/* The repeated block: rows whose module stack names a ".0" block, first to last; the hidden state
 * it carries is the first input of its first row that comes from before it. */
static void find_block(const pp_fx_table *t, pp_fx_graph *fg)
{
    fg->block_start = fg->block_end = fg->carried_row = -1;
    for (int r = 0; r < t->n; r++)
        if (!t->rows[r].bad && t->rows[r].in_block) {
            if (fg->block_start < 0) fg->block_start = r;
            fg->block_end = r;
        }
    if (fg->block_start < 0) return;
    const pp_fx_row *first = &t->rows[fg->block_start], *last = &t->rows[fg->block_end];
    for (int i = 0; i < first->n_in; i++) {
        const pp_fx_row *x = &t->rows[first->in_row[i]];
        if (first->in_row[i] >= fg->block_start || x->bad) continue;
        int same = x->dtype == last->dtype && x->out.rank == last->out.rank;
        for (int d = 0; same && d < x->out.rank; d++) same = x->out.dims[d] == last->out.dims[d];
        if (same) fg->carried_row = first->in_row[i];
        break;
    }
}

/* Every mapped row's output must come out of shape inference as the table recorded it. */
static perfpred_status check_shapes(bld *b)
{
    const pp_fx_table *t = b->t;
    pp_graph *g = b->g;
    for (int r = 0; r < t->n; r++) {
        const pp_fx_row *row = &t->rows[r];
        if (b->fg->cls[r] != PP_FXC_MAPPED || row->dtype == PP_DT_UNDEFINED) continue;
        int ncopy = in_block(b->fg, r) ? b->nc : 1;
        for (int c = 0; c < ncopy; c++) {
            int k = pp_graph_find(g, b->tname[r * b->nc + c]);
            if (k < 0)
                return pp_err_set(b->err, PERFPRED_ERR_INTERNAL, "%s:%d: no tensor", t->path,
                                  row->line);
            const pp_tensor *T = &g->tensors[k];
            int same = T->dtype == row->dtype &&
                       (T->rank == row->out.rank ||
                        (T->rank == 0 && row->out.rank == 1 && row->out.dims[0] == 1));
            for (int d = 0; same && T->rank && d < T->rank; d++)
                same = T->dims[d] == row->out.dims[d];
            if (!same) {
                char b1[96], b2[96];
                pp_fx_shape s = {T->rank > 0 ? T->rank : 0, {0}};
                if (T->rank > 0) memcpy(s.dims, T->dims, sizeof s.dims);
                pp_datasets_fx_shape_str(&s, b1, sizeof b1);
                pp_datasets_fx_shape_str(&row->out, b2, sizeof b2);
                return pp_err_set(
                    b->err, PERFPRED_ERR_SHAPE,
                    "%s:%d: node '%s' (%s): graph/ infers %s %s, the table says %s %s", t->path,
                    row->line, row->name, row->fn, pp_dtype_name(T->dtype), b1,
                    pp_dtype_name(row->dtype), b2);
            }
        }
    }
    return PERFPRED_OK;
}

/* Opset 20: LayerNormalization (17) and Gelu (20), as layer_models/layer_graph.c rebuilds kernel rows.
 */
#define FX_GRAPH_OPSET 20

perfpred_status pp_eval_fx_graph_build(const pp_fx_table *t, const pp_fx_build_params *p,
                                       pp_fx_graph *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    pp_fx_build_params dp = pp_eval_fx_build_default_params();
    if (!p) p = &dp;
    if (!t) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "pp_eval_fx_graph_build: NULL table");
    bld b = {0};
    b.t = t;
    b.p = p;
    b.fg = out;
    b.err = err;
    b.g = pp_graph_new(t->path);
    perfpred_status st = PERFPRED_OK;
    if (!b.g) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
    b.g->ir_version = 8;
    b.g->opset = FX_GRAPH_OPSET;
    b.g->producer_name = "perfpred-neusight-fx";
    out->g = b.g;
    out->n_rows = t->n;
    find_block(t, out);
    b.nc = out->block_start >= 0 && p->n_blocks > 1 ? p->n_blocks : 1;
    out->n_blocks = b.nc;
    size_t cells = (size_t)(t->n ? t->n : 1) * (size_t)b.nc;
    out->cls = pp_arena_array(b.g->arena, (size_t)t->n + 1, sizeof *out->cls);
    out->why = pp_arena_array(b.g->arena, (size_t)t->n + 1, sizeof *out->why);
    b.tname = pp_arena_array(b.g->arena, cells, sizeof *b.tname);
    b.n_split = pp_arena_array(b.g->arena, cells, sizeof *b.n_split);
    if (!out->cls || !out->why || !b.tname || !b.n_split) oom(&b);
    for (int r = 0; r < t->n && !b.failed; r++) {
        if (in_block(out, r) && r != out->block_start) continue;
        if (r == out->block_start) {
            for (int c = 0; c < b.nc && !b.failed; c++)
                for (int rr = out->block_start; rr <= out->block_end && !b.failed; rr++)
                    build_row(&b, rr, c);
        } else {
            build_row(&b, r, 0);
        }
    }
    if (b.failed) {
        st = err->status;
        goto done;
    }
    b.g->inputs = pp_arena_array(b.g->arena, (size_t)b.n_ins + 1, sizeof(int));
    b.g->outputs = pp_arena_array(b.g->arena, (size_t)b.n_outs + 1, sizeof(int));
    if (!b.g->inputs || !b.g->outputs) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
        goto done;
    }
    if (b.n_ins) memcpy(b.g->inputs, b.ins, (size_t)b.n_ins * sizeof(int));
    if (b.n_outs) memcpy(b.g->outputs, b.outs, (size_t)b.n_outs * sizeof(int));
    b.g->n_inputs = b.n_ins;
    b.g->n_outputs = b.n_outs;
    pp_shape_opts so = {0};
    if ((st = pp_graph_link(b.g, err)) || (st = pp_graph_infer_shapes(b.g, &so, err)) ||
        (st = check_shapes(&b)) || (st = pp_graph_features(b.g, err)) ||
        (st = pp_graph_liveness(b.g, err)))
        goto done;
    out->node_row = pp_arena_array(b.g->arena, (size_t)b.g->n_nodes + 1, sizeof(int));
    out->node_copy = pp_arena_array(b.g->arena, (size_t)b.g->n_nodes + 1, sizeof(int));
    if (!out->node_row || !out->node_copy) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
        goto done;
    }
    if (b.n_made) qsort(b.made, (size_t)b.n_made, sizeof *b.made, cmp_made);
    for (int i = 0; i < b.g->n_nodes; i++) {
        made_node key = {b.g->nodes[i].name, 0, 0};
        const made_node *m = bsearch(&key, b.made, (size_t)b.n_made, sizeof key, cmp_made);
        if (!m) {
            st = pp_err_set(err, PERFPRED_ERR_INTERNAL, "%s: graph node '%s' has no table row",
                            t->path, b.g->nodes[i].name);
            goto done;
        }
        out->node_row[i] = m->row;
        out->node_copy[i] = m->copy;
    }
done:
    free(b.made);
    free(b.ins);
    free(b.outs);
    if (st != PERFPRED_OK) {
        pp_graph_free(b.g);
        memset(out, 0, sizeof *out);
    }
    return st;
}

/* ================================================================ the check ==== */

perfpred_neusight_params perfpred_neusight_default_params(void)
{
    perfpred_neusight_params p = {0};
    p.gpu = "NVIDIA_A100-PCIE-40GB";
    p.device = "a100-pcie-40gb";
    p.replicate_blocks = 1;
    return p;
}

perfpred_status pp_eval_neusight_label_parse(const char *label, char *model, size_t model_n,
                                             int64_t *seq, int64_t *batch, pp_err *err)
{
    const char *m = strstr(label, "-inf-");
    const char *s = m ? m + 5 : NULL, *dash = s ? strchr(s, '-') : NULL;
    char num[32];
    if (!m || m == label || !dash || (size_t)(m - label) >= model_n ||
        (size_t)(dash - s) >= sizeof num)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "label '%s' is not <model>-inf-<seq>-<batch>", label);
    memcpy(model, label, (size_t)(m - label));
    model[m - label] = '\0';
    memcpy(num, s, (size_t)(dash - s));
    num[dash - s] = '\0';
    if (pp_parse_i64(num, seq) || *seq < 1 || pp_parse_i64(dash + 1, batch) || *batch < 1)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "label '%s': sequence length and batch must be integers >= 1", label);
    return PERFPRED_OK;
}

static int json_rows(const cJSON *o, const char *key, int64_t *out, const char *path, pp_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e12 ||
        v->valuedouble != floor(v->valuedouble)) {
        pp_err_set(err, PERFPRED_ERR_PARSE, "%s: '%s' is not a positive integer", path, key);
        return -1;
    }
    *out = (int64_t)v->valuedouble;
    return 0;
}

perfpred_status pp_eval_fx_hf_config_read(const char *path, pp_fx_build_params *p, pp_err *err)
{
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st != PERFPRED_OK) return st;
    cJSON *o = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: not a JSON object", path);
    }
    int rc = json_rows(o, "vocab_size", &p->vocab_rows, path, err) ||
             json_rows(o, "max_position_embeddings", &p->position_rows, path, err) ||
             json_rows(o, "n_positions", &p->position_rows, path, err) ||
             json_rows(o, "type_vocab_size", &p->token_type_rows, path, err);
    cJSON_Delete(o);
    return rc ? err->status : PERFPRED_OK;
}

/* The label's .json: {num_layer, e2e_latency, fw_latency, bwall_latency}, nothing else. */
static perfpred_status read_e2e(const char *path, int *num_layer, double *fw_ms, pp_err *err)
{
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st != PERFPRED_OK) return st;
    cJSON *o = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    st = PERFPRED_OK;
    if (!o || !cJSON_IsObject(o)) {
        st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: not a JSON object", path);
        goto done;
    }
    static const char *const keys[] = {"num_layer", "e2e_latency", "fw_latency", "bwall_latency"};
    for (const cJSON *it = o->child; it; it = it->next) {
        int known = 0;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            known |= !strcmp(it->string, keys[k]);
        if (!known) {
            st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: unknown key '%s'", path, it->string);
            goto done;
        }
    }
    const cJSON *nl = cJSON_GetObjectItemCaseSensitive(o, "num_layer");
    const cJSON *fw = cJSON_GetObjectItemCaseSensitive(o, "fw_latency");
    *num_layer = 0;
    if (nl && !cJSON_IsNull(nl)) {
        if (!cJSON_IsNumber(nl) || nl->valuedouble < 0 || nl->valuedouble > 100000 ||
            nl->valuedouble != floor(nl->valuedouble)) {
            st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: num_layer is not an integer >= 0", path);
            goto done;
        }
        *num_layer = (int)nl->valuedouble;
    }
    if (!fw || !cJSON_IsNumber(fw) || !(fw->valuedouble > 0) || !isfinite(fw->valuedouble)) {
        st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: fw_latency is missing or not > 0", path);
        goto done;
    }
    *fw_ms = fw->valuedouble;
done:
    cJSON_Delete(o);
    return st;
}

static const char *const op_groups[PERFPRED_NS_OP_KINDS] = {"linear", "bmm", "softmax",
                                                            "norm",   "elemwise", "other"};

static int op_group(const char *kind)
{
    for (int i = 0; i < PERFPRED_NS_OP_KINDS - 1; i++)
        if (kind && !strcmp(kind, op_groups[i])) return i;
    return PERFPRED_NS_OP_KINDS - 1;
}

static void fill_metrics(const double *pred, const double *meas, int n, double *mape)
{
    pp_metrics m;
    pp_err e = {0};
    *mape = NAN;
    if (n > 0 && pp_measure_metrics(pred, meas, n, &m, &e) == PERFPRED_OK) *mape = m.mape_pct;
}

typedef struct judge {
    const perfpred_ctx *ctx;
    const pp_device *dev;        /* for the roofline-only figures */
    const perfpred_neusight_params *p;
    char dir[4096];              /* the label folder */
    pp_logger log;
} judge;

/* Per-row sums over the kernels perfpred predicts (block copy 0: every copy is the same). */
typedef struct row_acc {
    double pred, roof, best;
    int nk;
    const char *kind;            /* kind of the row's longest kernel */
} row_acc;

static void fill_from_prediction(const judge *J, const pp_fx_table *t, const pp_fx_graph *fg,
                                 const perfpred_kernel *ks, int nk, row_acc *acc,
                                 perfpred_neusight_model *m)
{
    for (int i = 0; i < nk; i++) {
        const perfpred_kernel *K = &ks[i];
        int kind = pp_op_kind_from_name(K->kind);
        double roof = pp_roofline_ms(J->dev, kind < 0 ? PP_OPK_ELEMWISE : (pp_op_kind)kind,
                                     K->flops, K->bytes, NULL);
        m->roofline_ms += roof;
        if (K->prov == PERFPRED_PROV_CALIBRATED) m->calibrated_ms += K->latency_ms;
        int r = fg->node_row[K->first_node];
        if (fg->node_copy[K->first_node] != 0) continue;
        row_acc *a = &acc[r];
        a->pred += K->latency_ms;
        a->roof += roof;
        a->nk++;
        if (K->latency_ms >= a->best) {
            a->best = K->latency_ms;
            a->kind = K->kind;
        }
    }
    const char *file = strrchr(t->path, '/');
    file = file ? file + 1 : t->path;
    double *pv = malloc(3 * (size_t)(t->n + 1) * sizeof *pv);
    if (!pv) return;
    double *mv = pv + t->n + 1, *rv = mv + t->n + 1;
    for (int g = 0; g < PERFPRED_NS_OP_KINDS; g++) {
        perfpred_neusight_op *o = &m->ops[g];
        o->kind = op_groups[g];
        int n = 0;
        for (int r = 0; r < t->n; r++) {
            const pp_fx_row *row = &t->rows[r];
            double mult = fg->block_start >= 0 && r >= fg->block_start && r <= fg->block_end
                              ? fg->n_blocks : 1;
            if (g == 0) {
                double ms = row->fw_latency_ms * mult;
                m->measured_nodes_ms += ms;
                switch (fg->cls[r]) {
                case PP_FXC_SOURCE: m->n_source++; break;
                case PP_FXC_HOST: m->n_host++; m->host_ms += ms; break;
                case PP_FXC_MAPPED:
                    m->n_mapped++;
                    if (acc[r].nk == 0) m->no_kernel_ms += ms;
                    break;
                case PP_FXC_UNMAPPED:
                case PP_FXC_BAD:
                    if (fg->cls[r] == PP_FXC_BAD) m->n_bad++;
                    else m->n_unmapped++;
                    m->unmapped_ms += ms;
                    if (m->n_listed < PERFPRED_NS_LISTED)
                        snprintf(m->unmapped[m->n_listed++], sizeof m->unmapped[0],
                                 "%s:%d: %s (%s): %s", file, row->line, row->name ? row->name : "?",
                                 row->fn ? row->fn : "?",
                                 fg->cls[r] == PP_FXC_BAD ? row->why : fg->why[r]);
                    break;
                }
            }
            if (fg->cls[r] != PP_FXC_MAPPED || acc[r].nk == 0 || !(row->fw_latency_ms > 0) ||
                op_group(acc[r].kind) != g)
                continue;
            pv[n] = acc[r].pred;
            mv[n] = row->fw_latency_ms;
            rv[n] = acc[r].roof;
            n++;
            o->measured_ms += row->fw_latency_ms * mult;
            o->predicted_ms += acc[r].pred * mult;
            o->roofline_ms += acc[r].roof * mult;
        }
        o->n = n;
        fill_metrics(pv, mv, n, &o->mape_pct);
        fill_metrics(rv, mv, n, &o->roofline_mape_pct);
    }
    m->n_ops = PERFPRED_NS_OP_KINDS;
    free(pv);
}

/* Copies src into dst (n bytes), cut short when it does not fit. */
static void copy_cut(char *dst, size_t n, const char *src)
{
    size_t k = strlen(src);
    if (k >= n) k = n - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
}

static void fail_model(perfpred_neusight_model *m, perfpred_status st, const pp_err *e)
{
    m->status = st;
    copy_cut(m->msg, sizeof m->msg, e->msg);
}

static void judge_label(const judge *J, const char *label, perfpred_neusight_model *m)
{
    pp_err e = {0};
    char path[4200], cfg[4200];
    perfpred_status st;
    snprintf(m->label, sizeof m->label, "%s", label);
    if ((st = pp_eval_neusight_label_parse(label, m->model, sizeof m->model, &m->seq, &m->batch,
                                           &e)))
        return fail_model(m, st, &e);
    snprintf(path, sizeof path, "%s/%s.json", J->dir, label);
    if ((st = read_e2e(path, &m->num_layer, &m->measured_e2e_ms, &e))) return fail_model(m, st, &e);

    pp_fx_build_params bp = pp_eval_fx_build_default_params();
    bp.n_blocks = J->p->replicate_blocks ? m->num_layer : 1;
    snprintf(cfg, sizeof cfg, "%s/scripts/asplos/data/DLmodel_configs/%s.json", J->p->neusight_root,
             m->model);
    if (access(cfg, R_OK) == 0) {
        if ((st = pp_eval_fx_hf_config_read(cfg, &bp, &e))) return fail_model(m, st, &e);
    } else {
        pp_log(&J->log, PERFPRED_LOG_WARN, "%s: no model config at %s: embeddings stay unmapped",
               label, cfg);
    }
    snprintf(path, sizeof path, "%s/%s.csv", J->dir, label);
    pp_fx_table *t = NULL;
    if ((st = pp_datasets_fx_read(path, &t, &e))) return fail_model(m, st, &e);
    pp_fx_graph fg;
    if ((st = pp_eval_fx_graph_build(t, &bp, &fg, &e))) {
        pp_datasets_fx_free(t);
        return fail_model(m, st, &e);
    }
    m->n_rows = t->n;
    if (fg.block_start >= 0) {
        m->block_first_line = t->rows[fg.block_start].line;
        m->block_last_line = t->rows[fg.block_end].line;
    }
    m->n_graph_nodes = fg.g->n_nodes;
    perfpred_model *model = pp_model_wrap(fg.g);
    int cap = fg.g->n_nodes + 1, nk = 0;
    perfpred_kernel *ks = calloc((size_t)cap, sizeof *ks);
    row_acc *acc = calloc((size_t)t->n + 1, sizeof *acc);
    if (!model || !ks || !acc) {
        if (!model) pp_graph_free(fg.g);
        pp_err_set(&e, PERFPRED_ERR_NOMEM, "%s: out of memory", label);
        fail_model(m, PERFPRED_ERR_NOMEM, &e);
        goto done;
    }
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.kernels = ks;
    pp.kernels_cap = cap;
    pp.n_kernels = &nk;
    perfpred_prediction pred;
    char eb[512];
    if ((st = perfpred_predict(J->ctx, model, J->p->device, &pp, &pred, eb, sizeof eb))) {
        pp_err_set(&e, st, "%s: %s", label, eb);
        fail_model(m, st, &e);
        goto done;
    }
    if (nk > cap || !isfinite(pred.latency_ms.value)) {
        m->status = PERFPRED_ERR_INTERNAL;
        snprintf(m->msg, sizeof m->msg, "%s: %d kernels for %d nodes, latency %g", label, nk, cap,
                 pred.latency_ms.value);
        goto done;
    }
    m->n_kernels = pred.n_kernels;
    m->n_calibrated_kernels = pred.n_calibrated_kernels;
    m->predicted_ms = pred.latency_ms.value;
    fill_from_prediction(J, t, &fg, ks, nk, acc, m);
    m->error_pct = 100.0 * (m->predicted_ms - m->measured_e2e_ms) / m->measured_e2e_ms;
    m->roofline_error_pct = 100.0 * (m->roofline_ms - m->measured_e2e_ms) / m->measured_e2e_ms;
    pp_log(&J->log, PERFPRED_LOG_INFO,
           "%s: measured %.1f ms, predicted %.1f ms (%+.1f %%), roofline %.1f ms (%+.1f %%)", label,
           m->measured_e2e_ms, m->predicted_ms, m->error_pct, m->roofline_ms,
           m->roofline_error_pct);
done:
    free(ks);
    free(acc);
    perfpred_model_free(model);
    pp_datasets_fx_free(t);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Inference labels of the folder: <label>.csv with <label>.json beside it, sorted by name. */
static perfpred_status list_labels(const judge *J, char ***out, int *n, pp_err *err)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(J->dir);
    if (!d) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open the label folder", J->dir);
    char **names = NULL;
    int cap = 0;
    perfpred_status st = PERFPRED_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".csv") || !strstr(de->d_name, "-inf-"))
            continue;
        char json[4400];
        snprintf(json, sizeof json, "%s/%.*s.json", J->dir, (int)(len - 4), de->d_name);
        if (access(json, R_OK) != 0) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **n2 = realloc(names, (size_t)cap * sizeof *n2);
            if (!n2) {
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
                break;
            }
            names = n2;
        }
        if (!(names[*n] = strndup(de->d_name, len - 4))) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (names) qsort(names, (size_t)*n, sizeof *names, cmp_str);
    *out = names;
    return st;
}

perfpred_status pp_eval_neusight_models(const perfpred_neusight_params *p,
                                        perfpred_neusight_report *out, pp_err *err)
{
    if (!p || !out)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "neusight report: NULL argument");
    memset(out, 0, sizeof *out);
    if (!p->neusight_root || !p->gpu || !p->device)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "neusight report: neusight_root, gpu and device are required");
    if (p->n_labels < 0 || (p->n_labels > 0 && !p->labels))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "neusight report: bad label list");
    judge J = {0};
    J.p = p;
    J.log.fn = p->log;
    J.log.user = p->log_user;
    snprintf(J.dir, sizeof J.dir, "%s/scripts/asplos/label/%s", p->neusight_root, p->gpu);
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = p->config_dir;
    cp.log = p->log;
    cp.log_user = p->log_user;
    char eb[1024];
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, eb, sizeof eb);
    if (!ctx) return pp_err_set(err, st, "%s", eb);
    pp_device_db *db = NULL;
    char **found = NULL;
    int n_found = 0;
    perfpred_device_info info;
    char devdir[4200];
    snprintf(devdir, sizeof devdir, "%s/devices",
             p->config_dir ? p->config_dir : pp_default_config_dir());
    if (perfpred_device_find(ctx, p->device, &info) != PERFPRED_OK) {
        st = pp_err_set(err, PERFPRED_ERR_DEVICE, "unknown device '%s'", p->device);
        goto done;
    }
    if ((st = pp_devices_load_config(devdir, &db, err))) goto done;
    if (!(J.dev = pp_devices_find(db, p->device))) {
        st = pp_err_set(err, PERFPRED_ERR_DEVICE, "%s: no descriptor '%s'", devdir, p->device);
        goto done;
    }
    J.ctx = ctx;
    snprintf(out->device, sizeof out->device, "%s", info.name);
    snprintf(out->source, sizeof out->source, "%s",
             info.calibration_source ? info.calibration_source : "uncalibrated (roofline)");
    const char *const *labels = p->labels;
    int n = p->n_labels;
    if (n == 0) {
        if ((st = list_labels(&J, &found, &n_found, err))) goto done;
        labels = (const char *const *)found;
        n = n_found;
        if (n == 0) {
            st = pp_err_set(err, PERFPRED_ERR_IO,
                            "%s: no inference labels (*-inf-*.csv with .json)", J.dir);
            goto done;
        }
    }
    if (n > PERFPRED_NS_MAX_MODELS) {
        pp_log(&J.log, PERFPRED_LOG_WARN, "%d labels; the report holds the first %d", n,
               PERFPRED_NS_MAX_MODELS);
        n = PERFPRED_NS_MAX_MODELS;
    }
    double pred[PERFPRED_NS_MAX_MODELS], roof[PERFPRED_NS_MAX_MODELS], meas[PERFPRED_NS_MAX_MODELS];
    int judged = 0;
    for (int i = 0; i < n; i++) {
        perfpred_neusight_model *m = &out->models[out->n_models++];
        judge_label(&J, labels[i], m);
        if (m->status != PERFPRED_OK) {
            out->n_failed++;
            pp_log(&J.log, PERFPRED_LOG_WARN, "%s", m->msg);
            continue;
        }
        pred[judged] = m->predicted_ms;
        roof[judged] = m->roofline_ms;
        meas[judged++] = m->measured_e2e_ms;
    }
    out->e2e.mape_pct = out->e2e.rmspe_pct = out->e2e.within10_pct = out->e2e.spearman = NAN;
    out->roofline_e2e = out->e2e;
    pp_metrics pm;
    pp_err me = {0};
    if (judged > 0 && pp_measure_metrics(pred, meas, judged, &pm, &me) == PERFPRED_OK)
        out->e2e = pp_measure_metrics_public(&pm);
    if (judged > 0 && pp_measure_metrics(roof, meas, judged, &pm, &me) == PERFPRED_OK)
        out->roofline_e2e = pp_measure_metrics_public(&pm);
    st = PERFPRED_OK;
done:
    for (int i = 0; i < n_found; i++) free(found[i]);
    free(found);
    pp_devices_free(db);
    perfpred_ctx_close(ctx);
    return st;
}

perfpred_status perfpred_neusight_models_report(const perfpred_neusight_params *p,
                                                perfpred_neusight_report *out, char *errbuf,
                                                size_t errbuf_len)
{
    pp_err e = {0};
    perfpred_status st = pp_eval_neusight_models(p, out, &e);
    if (st != PERFPRED_OK && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", e.msg);
    return st;
}
