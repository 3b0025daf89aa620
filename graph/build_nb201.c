/* graph/build_nb201.c: NAS-Bench-201 networks from their cell strings (D-X-Y's TinyNetwork with
 * InferCell, C = 16, N = 5), plus the small graph-building kit every builder in graph/ shares:
 * generated tensor names, weights as shape-only initializers, a sticky first error, and one finish
 * step that links, infers shapes and computes features and liveness. */
#include "graph/builders.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------- the kit ---- */

#define BLD_NAME 96
/* ONNX opset the builders emit (ReduceMean with an axes attribute, Clip with min/max inputs). */
#define BLD_OPSET 17

static int bld_fail(pp_bld *b, perfpred_status st, const char *what)
{
    if (!b->st) b->st = pp_err_set(b->err, st, "%s: %s", b->g ? b->g->path : "builder", what);
    return -1;
}

/* Names are built by hand, not snprintf: a search builds ~10^4 names a network, and snprintf was
 * a third of the build. Both append to dst[off..], truncating as snprintf would (dst stays
 * NUL-terminated within cap), and return the new length. */
static size_t cat_str(char *dst, size_t cap, size_t off, const char *s)
{
    while (*s && off + 1 < cap) dst[off++] = *s++;
    dst[off] = '\0';
    return off;
}

static size_t cat_uint(char *dst, size_t cap, size_t off, unsigned v)
{
    char tmp[16];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n && off + 1 < cap) dst[off++] = tmp[--n];
    dst[off] = '\0';
    return off;
}

static int bld_new_tensor(pp_bld *b, const char *prefix)
{
    char name[BLD_NAME];
    cat_uint(name, sizeof name, cat_str(name, sizeof name, 0, prefix), (unsigned)b->counter++);
    int t = pp_graph_tensor(b->g, name);
    if (t < 0) return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    return t;
}

int pp_bld_begin(pp_bld *b, const char *path, int64_t n, int64_t c, int64_t h, int64_t w,
                 pp_err *err)
{
    memset(b, 0, sizeof *b);
    b->err = err;
    b->scope = "";
    b->g = pp_graph_new(path);
    if (!b->g) {
        b->st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
        return -1;
    }
    b->g->ir_version = 8;
    b->g->opset = BLD_OPSET;
    b->g->producer_name = "perfpred-builder";
    if (n < 1 || c < 1 || h < 1 || w < 1)
        return bld_fail(b, PERFPRED_ERR_INVALID_ARG, "input dims must be >= 1");
    int x = pp_graph_tensor(b->g, "input");
    if (x < 0) return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    int64_t dims[4] = {n, c, h, w};
    pp_tensor_set_shape(&b->g->tensors[x], PP_DT_FLOAT, 4, dims);
    b->g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    b->g->inputs = pp_arena_array(b->g->arena, 1, sizeof(int));
    if (!b->g->inputs) return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    b->g->inputs[0] = x;
    b->g->n_inputs = 1;
    return x;
}

int pp_bld_weight(pp_bld *b, int rank, const int64_t *dims)
{
    if (b->st) return -1;
    int t = bld_new_tensor(b, "w");
    if (t < 0) return -1;
    pp_tensor_set_shape(&b->g->tensors[t], PP_DT_FLOAT, rank, dims);
    b->g->tensors[t].flags |= PP_T_INITIALIZER | PP_T_WEIGHT;
    return t;
}

int pp_bld_scalar(pp_bld *b, double v)
{
    if (b->st) return -1;
    int t = bld_new_tensor(b, "c");
    if (t < 0) return -1;
    pp_tensor *T = &b->g->tensors[t];
    pp_tensor_set_shape(T, PP_DT_FLOAT, 0, NULL);
    T->val.fval = pp_arena_array(b->g->arena, 1, sizeof(double));
    if (!T->val.fval) return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    T->val.fval[0] = v;
    T->val.dtype = PP_DT_FLOAT;
    T->val.rank = 0;
    T->val.n = 1;
    T->flags |= PP_T_INITIALIZER | PP_T_CONST;
    return t;
}

int pp_bld_ints(pp_bld *b, int n, const int64_t *v)
{
    if (b->st) return -1;
    int t = bld_new_tensor(b, "c");
    if (t < 0) return -1;
    pp_tensor *T = &b->g->tensors[t];
    int64_t dims[1] = {n};
    pp_tensor_set_shape(T, PP_DT_INT64, 1, dims);
    T->val.ival = pp_arena_array(b->g->arena, (size_t)n, sizeof(int64_t));
    if (!T->val.ival) return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    memcpy(T->val.ival, v, (size_t)n * sizeof(int64_t));
    T->val.dtype = PP_DT_INT64;
    T->val.rank = 1;
    T->val.dims[0] = n;
    T->val.n = n;
    T->flags |= PP_T_INITIALIZER | PP_T_CONST;
    return t;
}

int pp_bld_node(pp_bld *b, const char *op_type, const int *in, int n_in)
{
    if (b->st) return -1;
    if (n_in < 1 || n_in > 8) return bld_fail(b, PERFPRED_ERR_INTERNAL, "bad input count");
    for (int i = 0; i < n_in; i++)
        if (in[i] < 0) return bld_fail(b, PERFPRED_ERR_INTERNAL, "missing input tensor");
    int y = bld_new_tensor(b, "t");
    if (y < 0) return -1;
    char node_name[BLD_NAME];
    size_t off = cat_str(node_name, sizeof node_name, 0, b->scope);
    if (b->scope[0]) off = cat_str(node_name, sizeof node_name, off, "/");
    off = cat_str(node_name, sizeof node_name, off, op_type);
    off = cat_str(node_name, sizeof node_name, off, "_");
    cat_uint(node_name, sizeof node_name, off, (unsigned)b->counter++);
    if (pp_graph_add_node_idx(b->g, node_name, op_type, "", in, n_in, &y, 1) < 0)
        return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    return y;
}

static pp_attr *last_attr(pp_bld *b, const char *name, int type)
{
    if (b->st) return NULL;
    pp_attr *a = pp_node_add_attr(b->g, b->g->n_nodes - 1, name, type);
    if (!a) bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    return a;
}

static void attr_ints(pp_bld *b, const char *name, int n, const int64_t *v)
{
    pp_attr *a = last_attr(b, name, PP_ATTR_INTS);
    if (!a) return;
    a->ints = pp_arena_array(b->g->arena, (size_t)n, sizeof(int64_t));
    if (!a->ints) {
        bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
        return;
    }
    memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
    a->n = n;
}

static void attr_int(pp_bld *b, const char *name, int64_t v)
{
    pp_attr *a = last_attr(b, name, PP_ATTR_INT);
    if (a) a->i = v;
}

static void attr_float(pp_bld *b, const char *name, double v)
{
    pp_attr *a = last_attr(b, name, PP_ATTR_FLOAT);
    if (a) a->f = v;
}

int pp_bld_conv(pp_bld *b, int x, int64_t cin, int64_t cout, int k, int stride, int pad,
                int64_t group, int bias)
{
    if (b->st) return -1;
    if (group < 1 || cin % group || cout % group)
        return bld_fail(b, PERFPRED_ERR_INTERNAL, "conv channels do not divide into groups");
    int64_t wd[4] = {cout, cin / group, k, k}, bd[1] = {cout};
    int in[3] = {x, -1, -1};
    in[1] = pp_bld_weight(b, 4, wd);
    if (bias) in[2] = pp_bld_weight(b, 1, bd);
    int y = pp_bld_node(b, "Conv", in, bias ? 3 : 2);
    int64_t ks[2] = {k, k}, st[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    int64_t dil[2] = {1, 1};
    attr_ints(b, "dilations", 2, dil);
    attr_int(b, "group", group);
    attr_ints(b, "kernel_shape", 2, ks);
    attr_ints(b, "pads", 4, pads);
    attr_ints(b, "strides", 2, st);
    return b->st ? -1 : y;
}

int pp_bld_bn(pp_bld *b, int x, int64_t c)
{
    int64_t d[1] = {c};
    int in[5] = {x, -1, -1, -1, -1};
    for (int i = 1; i < 5; i++) in[i] = pp_bld_weight(b, 1, d); /* scale, B, mean, var */
    int y = pp_bld_node(b, "BatchNormalization", in, 5);
    attr_float(b, "epsilon", 1e-5);
    attr_float(b, "momentum", 0.9);
    return b->st ? -1 : y;
}

int pp_bld_unary(pp_bld *b, const char *op_type, int x)
{
    int in[1] = {x};
    return pp_bld_node(b, op_type, in, 1);
}

int pp_bld_binary(pp_bld *b, const char *op_type, int x, int y)
{
    int in[2] = {x, y};
    return pp_bld_node(b, op_type, in, 2);
}

int pp_bld_avgpool(pp_bld *b, int x, int k, int stride, int pad)
{
    int y = pp_bld_unary(b, "AveragePool", x);
    int64_t ks[2] = {k, k}, st[2] = {stride, stride}, pads[4] = {pad, pad, pad, pad};
    attr_int(b, "ceil_mode", 0);
    attr_ints(b, "kernel_shape", 2, ks);
    attr_ints(b, "pads", 4, pads);
    attr_ints(b, "strides", 2, st);
    return b->st ? -1 : y;
}

int pp_bld_gemm(pp_bld *b, int x, int64_t in_f, int64_t out_f)
{
    int64_t wd[2] = {out_f, in_f}, bd[1] = {out_f};
    int in[3] = {x, -1, -1};
    in[1] = pp_bld_weight(b, 2, wd);
    in[2] = pp_bld_weight(b, 1, bd);
    int y = pp_bld_node(b, "Gemm", in, 3);
    attr_float(b, "alpha", 1.0);
    attr_float(b, "beta", 1.0);
    attr_int(b, "transB", 1);
    return b->st ? -1 : y;
}

perfpred_status pp_bld_finish(pp_bld *b, int y, pp_graph **out)
{
    *out = NULL;
    if (!b->st && y < 0) bld_fail(b, PERFPRED_ERR_INTERNAL, "no output tensor");
    if (!b->st) {
        b->g->outputs = pp_arena_array(b->g->arena, 1, sizeof(int));
        if (!b->g->outputs) bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    }
    if (!b->st) {
        b->g->outputs[0] = y;
        b->g->n_outputs = 1;
        b->g->tensors[y].flags |= PP_T_GRAPH_OUTPUT;
        pp_shape_opts none = {0};
        b->g->memo = b->memo;
        if ((b->st = pp_graph_link(b->g, b->err)) == PERFPRED_OK &&
            (b->st = pp_graph_infer_shapes(b->g, &none, b->err)) == PERFPRED_OK &&
            (b->st = pp_graph_features(b->g, b->err)) == PERFPRED_OK)
            b->st = pp_graph_liveness(b->g, b->err);
        b->g->memo = NULL;
    }
    if (b->st) {
        pp_graph_free(b->g);
        b->g = NULL;
        return b->st;
    }
    *out = b->g;
    b->g = NULL;
    return PERFPRED_OK;
}

/* -------------------------------------------------------------------- NAS-Bench-201 ---- */

static const char *const nb201_names[] = {"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3",
                                          "avg_pool_3x3"};

const char *pp_nb201_op_name(pp_nb201_op op)
{
    return (op >= 0 && op <= PP_NB201_AVGPOOL) ? nb201_names[op] : "?";
}

/* edge index of (node j, input i): j = 1..3, i < j */
static int edge_index(int j, int i) { return (j - 1) * j / 2 + i; }

perfpred_status pp_nb201_parse(const char *s, pp_nb201_arch *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    if (!s) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "nb201: NULL architecture");
    const char *p = s;
    for (int j = 1; j <= 3; j++) {
        if (j > 1) {
            if (*p != '+')
                return pp_err_set(err, PERFPRED_ERR_PARSE,
                                  "nb201 '%s': expected '+' before node %d at offset %d", s, j,
                                  (int)(p - s));
            p++;
        }
        if (*p != '|')
            return pp_err_set(err, PERFPRED_ERR_PARSE, "nb201 '%s': expected '|' at offset %d", s,
                              (int)(p - s));
        p++;
        for (int i = 0; i < j; i++) {
            const char *tilde = strchr(p, '~');
            if (!tilde)
                return pp_err_set(err, PERFPRED_ERR_PARSE,
                                  "nb201 '%s': node %d edge %d has no '~'", s, j, i);
            int op = -1;
            for (int k = 0; k <= PP_NB201_AVGPOOL; k++)
                if ((size_t)(tilde - p) == strlen(nb201_names[k]) &&
                    strncmp(p, nb201_names[k], (size_t)(tilde - p)) == 0)
                    op = k;
            if (op < 0)
                return pp_err_set(err, PERFPRED_ERR_PARSE,
                                  "nb201 '%s': unknown operation '%.*s' (none, skip_connect, "
                                  "nor_conv_1x1, nor_conv_3x3, avg_pool_3x3)",
                                  s, (int)(tilde - p), p);
            if (tilde[1] != '0' + i || tilde[2] != '|')
                return pp_err_set(err, PERFPRED_ERR_PARSE,
                                  "nb201 '%s': node %d must list inputs ~0..~%d in order, edge "
                                  "%d reads '%.2s'",
                                  s, j, j - 1, i, tilde + 1);
            out->op[edge_index(j, i)] = (pp_nb201_op)op;
            p = tilde + 3;
        }
    }
    if (*p)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "nb201 '%s': trailing text at offset %d", s,
                          (int)(p - s));
    return PERFPRED_OK;
}

char *pp_nb201_format(const pp_nb201_arch *a, char *buf, size_t n)
{
    if (!n) return buf;
    size_t off = 0; /* cut at n - 1 bytes as snprintf would: a search formats one a network */
    buf[0] = '\0';
    for (int j = 1; j <= 3; j++) {
        off = cat_str(buf, n, off, j > 1 ? "+|" : "|");
        for (int i = 0; i < j; i++) {
            off = cat_str(buf, n, off, pp_nb201_op_name(a->op[edge_index(j, i)]));
            off = cat_str(buf, n, off, "~");
            off = cat_uint(buf, n, off, (unsigned)i);
            off = cat_str(buf, n, off, "|");
        }
    }
    return buf;
}

pp_nb201_opts pp_nb201_default_opts(void)
{
    pp_nb201_opts o = {3, 32, 32, 10, 16, 5, 1, PP_NB201_AS_PYTORCH, NULL};
    return o;
}

perfpred_status pp_nb201_dataset(const char *name, pp_nb201_opts *o, pp_err *err)
{
    static const struct {
        const char *name;
        int c, h, w, k;
    } ds[] = {{"cifar10", 3, 32, 32, 10},   {"cifar100", 3, 32, 32, 100},
              {"imagenet16", 3, 16, 16, 120}, {"ninapro", 1, 52, 16, 18},
              {"darcy", 1, 88, 88, 1}};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
        if (strcmp(name, ds[i].name) == 0) {
            o->in_channels = ds[i].c;
            o->height = ds[i].h;
            o->width = ds[i].w;
            o->num_classes = ds[i].k;
            return PERFPRED_OK;
        }
    return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                      "nb201: unknown dataset '%s' (cifar10, cifar100, imagenet16, ninapro, darcy)",
                      name);
}

/* zero[j]: under FOLD, node j of the cell is always zero (node 0 never is). */
static void zero_nodes(const pp_nb201_arch *a, int zero[4])
{
    zero[0] = 0;
    for (int j = 1; j <= 3; j++) {
        zero[j] = 1;
        for (int i = 0; i < j; i++)
            if (a->op[edge_index(j, i)] != PP_NB201_NONE && !zero[i]) zero[j] = 0;
    }
}

/* dep[j]: under PRUNE, node j depends on the cell input through edges that are not 'none'. */
static void dep_nodes(const pp_nb201_arch *a, int dep[4])
{
    dep[0] = 1;
    for (int j = 1; j <= 3; j++) {
        dep[j] = 0;
        for (int i = 0; i < j; i++)
            if (a->op[edge_index(j, i)] != PP_NB201_NONE && dep[i]) dep[j] = 1;
    }
}

int pp_nb201_is_constant(const pp_nb201_arch *a, pp_nb201_mode mode)
{
    int v[4];
    if (mode == PP_NB201_FOLD) {
        zero_nodes(a, v);
        return v[3];
    }
    if (mode == PP_NB201_PRUNE) {
        dep_nodes(a, v);
        return !v[3];
    }
    return 0;
}

/* ReLU-Conv-BN: the nor_conv_* edges and the reduction block's branches. */
static int relu_conv_bn(pp_bld *b, int x, int64_t cin, int64_t cout, int k, int stride)
{
    int r = pp_bld_unary(b, "Relu", x);
    int c = pp_bld_conv(b, r, cin, cout, k, stride, k / 2, 1, 0);
    return pp_bld_bn(b, c, cout);
}

/* One cell's edge operations. Identical operations on one node (the ReLU every conv edge from it
 * starts with, an average pool, the multiply by zero) are emitted once: torch.onnx's common-
 * subexpression pass merges them in the exported graph, and so do the converters that deploy it. */
typedef struct cell_memo {
    int relu[4], pool[4], zero[4];
} cell_memo;

static int nb201_edge(pp_bld *b, pp_nb201_op op, int i, const int *node, int64_t C, cell_memo *m)
{
    switch (op) {
    case PP_NB201_NONE:
        if (m->zero[i] < 0) m->zero[i] = pp_bld_binary(b, "Mul", node[i], pp_bld_scalar(b, 0.0));
        return m->zero[i];
    case PP_NB201_SKIP: return node[i];
    case PP_NB201_CONV1X1:
    case PP_NB201_CONV3X3: {
        int k = op == PP_NB201_CONV1X1 ? 1 : 3;
        if (m->relu[i] < 0) m->relu[i] = pp_bld_unary(b, "Relu", node[i]);
        return pp_bld_bn(b, pp_bld_conv(b, m->relu[i], C, C, k, 1, k / 2, 1, 0), C);
    }
    case PP_NB201_AVGPOOL:
        if (m->pool[i] < 0) m->pool[i] = pp_bld_avgpool(b, node[i], 3, 1, 1);
        return m->pool[i];
    }
    return -1;
}

/* InferCell: node_j = sum_i op_ji(node_i), summed left to right as Python's sum() does.
 * FOLD drops zero terms (a 'none' edge, or any edge from an all-zero node) and the nodes only they
 * read; PRUNE drops 'none' edges and the nodes only they read, keeps operations on a node whose
 * every edge is 'none' (a zero tensor, written Mul(input, 0)). */
static int nb201_cell(pp_bld *b, const pp_nb201_arch *a, int x, int64_t C, pp_nb201_mode mode)
{
    int zero[4] = {0, 0, 0, 0}, live[4] = {1, 1, 1, 1}, node[4] = {x, -1, -1, -1};
    cell_memo m;
    memset(&m, 0xff, sizeof m); /* all -1 */
    if (mode == PP_NB201_FOLD) zero_nodes(a, zero);
    if (mode != PP_NB201_AS_PYTORCH) { /* needed: read by a needed node through a kept edge */
        live[0] = live[1] = live[2] = 0;
        for (int j = 3; j >= 1; j--)
            for (int i = 0; i < j; i++)
                if (live[j] && a->op[edge_index(j, i)] != PP_NB201_NONE && !zero[i]) live[i] = 1;
    }
    for (int j = 1; j <= 3; j++) {
        if (!live[j] || zero[j]) continue;
        int acc = -1;
        for (int i = 0; i < j; i++) {
            pp_nb201_op op = a->op[edge_index(j, i)];
            if (mode != PP_NB201_AS_PYTORCH && (op == PP_NB201_NONE || zero[i])) continue;
            int t = nb201_edge(b, op, i, node, C, &m);
            acc = acc < 0 ? t : pp_bld_binary(b, "Add", acc, t);
        }
        if (acc < 0) acc = nb201_edge(b, PP_NB201_NONE, 0, node, C, &m); /* PRUNE: zero node */
        node[j] = acc;
    }
    return node[3];
}

/* The cells of a stage are the same cell on tensors of the same shape: the first is built, the
 * others copy its nodes and tensors (names renumbered as the builder would have numbered them,
 * attribute arrays shared, pp_graph_copy_node), and shape inference and features reuse the first
 * cell's results for them (copy_of). The graph is the one building each cell gives
 * (tests/test_builders.c compares the two). */
#define SPAN_TENSORS 96 /* a cell adds at most ~60 tensors and ~25 nodes; a larger one is built */
#define SPAN_NODES 48

/* A generated name cut as the copies renumber it: text[0..len) then the number num (+ the
 * counter's advance); for a tensor, hash = pp_fnv1a64 of that text, continued over the digits. */
typedef struct span_name {
    const char *text;
    unsigned len, num;
    uint64_t hash;
} span_name;

typedef struct cell_span {
    int x, y;             /* the first cell's input and output tensors */
    int t0, t1, n0, n1;   /* the tensors [t0, t1) and nodes [n0, n1) it added */
    int c0, c1;           /* b->counter before and after it */
    int ok;               /* its nodes read only x and its own tensors: it can be copied */
    span_name tn[SPAN_TENSORS]; /* tensor names */
    span_name nn[SPAN_NODES];   /* node names after the scope's '/' */
} cell_span;

static atomic_int no_stamp;
void pp_nb201_copy_cells(int on) { atomic_store(&no_stamp, !on); }

static void span_begin(const pp_bld *b, cell_span *s, int x)
{
    s->ok = 0;
    if (b->st) return; /* b->g may be NULL (pp_graph_new out of memory) */
    s->x = x;
    s->t0 = b->g->n_tensors;
    s->n0 = b->g->n_nodes;
    s->c0 = b->counter;
}

/* name split before its trailing digits; 0 where it has none or the number does not fit */
static int span_cut(const char *name, span_name *sn)
{
    size_t len = strlen(name), d = len;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') d--;
    if (d == len || len - d > 9 || len >= BLD_NAME) return 0;
    unsigned v = 0;
    for (size_t i = d; i < len; i++) v = v * 10 + (unsigned)(name[i] - '0');
    sn->text = name;
    sn->len = (unsigned)d;
    sn->num = v;
    sn->hash = PP_FNV64_BASIS;
    for (size_t i = 0; i < d; i++) sn->hash = (sn->hash ^ (unsigned char)name[i]) * 1099511628211ull;
    return 1;
}

static void span_end(const pp_bld *b, cell_span *s, int y)
{
    if (b->st) return; /* s->ok stays 0; b->g may be NULL */
    const pp_graph *g = b->g;
    s->y = y;
    s->t1 = g->n_tensors;
    s->n1 = g->n_nodes;
    s->c1 = b->counter;
    s->ok = !b->st && (y == s->x || (y >= s->t0 && y < s->t1)) && s->t1 - s->t0 <= SPAN_TENSORS &&
            s->n1 - s->n0 <= SPAN_NODES;
    for (int i = s->n0; i < s->n1 && s->ok; i++) {
        const pp_node *n = &g->nodes[i];
        const char *slash = strrchr(n->name, '/');
        s->ok = n->n_inputs <= 8 && n->n_outputs <= 8 && slash &&
                span_cut(slash + 1, &s->nn[i - s->n0]);
        for (int k = 0; k < n->n_inputs && s->ok; k++)
            s->ok = n->inputs[k] == s->x || (n->inputs[k] >= s->t0 && n->inputs[k] < s->t1);
    }
    for (int t = s->t0; t < s->t1 && s->ok; t++) s->ok = span_cut(g->tensors[t].name, &s->tn[t - s->t0]);
}

/* at dst + off: sn's text with its number raised by dc (what the builder would have numbered);
 * returns the new length */
static size_t renumber(char *dst, size_t cap, size_t off, const span_name *sn, unsigned dc)
{
    for (size_t i = 0; i < sn->len && off + 1 < cap; i++) dst[off++] = sn->text[i];
    dst[off] = '\0';
    return cat_uint(dst, cap, off, sn->num + dc);
}

static int span_map(const cell_span *s, int t, int x, int dt)
{
    return t == s->x ? x : (t >= s->t0 && t < s->t1) ? t + dt : t;
}

/* Another cell like the one s spans, on x; returns its output tensor. */
static int nb201_copy_cell(pp_bld *b, const cell_span *s, int x)
{
    if (b->st) return -1;
    pp_graph *g = b->g;
    int dt = g->n_tensors - s->t0;
    unsigned dc = (unsigned)(b->counter - s->c0);
    char name[BLD_NAME];
    for (int t = s->t0; t < s->t1; t++) {
        const span_name *sn = &s->tn[t - s->t0];
        size_t len = renumber(name, sizeof name, 0, sn, dc);
        if (pp_graph_copy_tensor_h(g, t, name, len, pp_fnv1a64(name + sn->len, sn->hash)) !=
            t + dt)
            return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    }
    size_t scope_len = cat_str(name, sizeof name, cat_str(name, sizeof name, 0, b->scope), "/");
    for (int i = s->n0; i < s->n1; i++) {
        const pp_node *n = &g->nodes[i];
        int in[8], out[8];
        for (int k = 0; k < n->n_inputs; k++) in[k] = span_map(s, n->inputs[k], x, dt);
        for (int k = 0; k < n->n_outputs; k++) out[k] = span_map(s, n->outputs[k], x, dt);
        renumber(name, sizeof name, scope_len, &s->nn[i - s->n0], dc);
        if (pp_graph_copy_node(g, i, name, in, out) < 0)
            return bld_fail(b, PERFPRED_ERR_NOMEM, "out of memory");
    }
    b->counter += s->c1 - s->c0;
    return span_map(s, s->y, x, dt);
}

/* ResNetBasicblock(C_in, C_out, stride 2): downsample(x) + conv_b(conv_a(x)). */
static int nb201_reduction(pp_bld *b, int x, int64_t cin, int64_t cout)
{
    int a = relu_conv_bn(b, x, cin, cout, 3, 2);
    int bb = relu_conv_bn(b, a, cout, cout, 3, 1);
    int p = pp_bld_avgpool(b, x, 2, 2, 0);
    int r = pp_bld_conv(b, p, cin, cout, 1, 1, 0, 1, 0);
    return pp_bld_binary(b, "Add", r, bb);
}

perfpred_status pp_build_nb201(const pp_nb201_arch *a, const pp_nb201_opts *o, pp_graph **out,
                               pp_err *err)
{
    *out = NULL;
    if (!a || !o) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "nb201: NULL argument");
    char arch[160], path[200];
    pp_nb201_format(a, arch, sizeof arch);
    cat_str(path, sizeof path, cat_str(path, sizeof path, 0, "nb201:"), arch);
    for (int e = 0; e < PP_NB201_EDGES; e++)
        if ((int)a->op[e] < 0 || a->op[e] > PP_NB201_AVGPOOL)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: edge %d has op %d", path, e,
                              (int)a->op[e]);
    if (o->channels < 1 || o->cells_per_stage < 0 || o->num_classes < 1 || o->batch < 1 ||
        o->in_channels < 1 || o->height < 4 || o->width < 4)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: bad options (C %d, N %d, classes %d, batch %lld, input %dx%dx%d)",
                          path, o->channels, o->cells_per_stage, o->num_classes,
                          (long long)o->batch, o->in_channels, o->height, o->width);
    if (o->mode < PP_NB201_AS_PYTORCH || o->mode > PP_NB201_PRUNE)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: mode %d", path, (int)o->mode);
    if (pp_nb201_is_constant(a, o->mode))
        return pp_err_set(err, PERFPRED_ERR_UNSUPPORTED,
                          "%s: the cell output does not depend on its input once 'none' edges are "
                          "folded away, so the converted network is a constant and nothing runs",
                          path);
    pp_bld b;
    int x = pp_bld_begin(&b, path, o->batch, o->in_channels, o->height, o->width, err);
    b.memo = o->memo;
    /* room for the whole network up front, so that building it moves no array: at most 9
     * tensors and 4 nodes an edge (Relu, Conv + weight, BN + 4 weights, Add), 40 and 16 a
     * reduction block, 40 and 12 for the stem and head */
    int n_cells = 3 * o->cells_per_stage;
    if (x >= 0 && o->cells_per_stage <= 10000 &&
        pp_graph_reserve(b.g, 1 + 40 + n_cells * PP_NB201_EDGES * 9 + 2 * 40,
                         12 + n_cells * PP_NB201_EDGES * 4 + 2 * 16))
        bld_fail(&b, PERFPRED_ERR_NOMEM, "out of memory");
    int64_t C = o->channels;
    b.scope = "stem";
    x = pp_bld_bn(&b, pp_bld_conv(&b, x, o->in_channels, C, 3, 1, 1, 1, 0), C);
    char scope[32];
    int cell = 0;
    cell_span span = {0};
    for (int stage = 0; stage < 3; stage++) {
        int64_t Cs = C << stage;
        if (stage > 0) {
            cat_uint(scope, sizeof scope, cat_str(scope, sizeof scope, 0, "cells."), (unsigned)cell++);
            b.scope = scope;
            x = nb201_reduction(&b, x, Cs / 2, Cs);
        }
        for (int i = 0; i < o->cells_per_stage; i++) {
            cat_uint(scope, sizeof scope, cat_str(scope, sizeof scope, 0, "cells."), (unsigned)cell++);
            b.scope = scope;
            if (i > 0 && span.ok && !atomic_load_explicit(&no_stamp, memory_order_relaxed)) {
                x = nb201_copy_cell(&b, &span, x);
                continue;
            }
            span_begin(&b, &span, x);
            x = nb201_cell(&b, a, x, Cs, o->mode);
            span_end(&b, &span, x);
        }
    }
    b.scope = "head";
    int64_t Cl = C << 2;
    x = pp_bld_unary(&b, "Relu", pp_bld_bn(&b, x, Cl));
    x = pp_bld_unary(&b, "GlobalAveragePool", x);
    x = pp_bld_unary(&b, "Flatten", x);
    x = pp_bld_gemm(&b, x, Cl, o->num_classes);
    return pp_bld_finish(&b, x, out);
}
