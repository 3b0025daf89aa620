/* tests/test_shapes.c: shape inference and constant folding on hand-built graphs, one group per op
 * family, plus option handling and error messages. Every expected shape or value below is worked by
 * hand from the ONNX operator spec (or PyTorch's documented formula), never taken from the code. */
#include "tests/helpers.h"

#include <stdio.h>
#include <string.h>

#include "graph/graph.h"

/* ------------------------------------------------------------------ graph building ---- */

static pp_graph *G(const char *path, int64_t opset)
{
    pp_graph *g = pp_graph_new(path);
    assert_non_null(g);
    g->opset = opset;
    return g;
}

static void push_index(pp_graph *g, int **arr, int *n, int t)
{
    int *na = pp_arena_array(g->arena, (size_t)*n + 1, sizeof(int));
    assert_non_null(na);
    if (*n) memcpy(na, *arr, (size_t)*n * sizeof(int));
    na[(*n)++] = t;
    *arr = na;
}

/* Graph input; dims < 0 are unknown, params (may be NULL) name symbolic dims. */
static int input_p(pp_graph *g, const char *name, int32_t dt, int rank, const int64_t *dims,
                   const char *const *params)
{
    int t = pp_graph_tensor(g, name);
    assert_true(t >= 0);
    pp_tensor *T = &g->tensors[t];
    pp_tensor_set_shape(T, dt, rank, dims);
    for (int d = 0; params && d < rank; d++) T->dim_param[d] = params[d];
    T->flags |= PP_T_GRAPH_INPUT;
    push_index(g, &g->inputs, &g->n_inputs, t);
    return t;
}

static int input(pp_graph *g, const char *name, int32_t dt, int rank, const int64_t *dims)
{
    return input_p(g, name, dt, rank, dims, NULL);
}

static void output(pp_graph *g, const char *name)
{
    int t = pp_graph_tensor(g, name);
    g->tensors[t].flags |= PP_T_GRAPH_OUTPUT;
    push_index(g, &g->outputs, &g->n_outputs, t);
}

/* Small initializer with a value, as the loader leaves them. */
static void init_i(pp_graph *g, const char *name, int32_t dt, int rank, const int64_t *dims,
                   const int64_t *vals)
{
    int t = pp_graph_tensor(g, name);
    pp_tensor *T = &g->tensors[t];
    pp_tensor_set_shape(T, dt, rank, dims);
    T->flags |= PP_T_INITIALIZER | PP_T_WEIGHT | PP_T_CONST;
    int64_t n = pp_tensor_elems(T);
    T->val.dtype = dt;
    T->val.rank = rank;
    memcpy(T->val.dims, T->dims, sizeof T->dims);
    T->val.n = n;
    T->val.ival = pp_arena_array(g->arena, (size_t)n + 1, sizeof(int64_t));
    if (n) memcpy(T->val.ival, vals, (size_t)n * sizeof(int64_t));
}

static void init_f(pp_graph *g, const char *name, int rank, const int64_t *dims, const double *vals)
{
    int t = pp_graph_tensor(g, name);
    pp_tensor *T = &g->tensors[t];
    pp_tensor_set_shape(T, PP_DT_FLOAT, rank, dims);
    T->flags |= PP_T_INITIALIZER | PP_T_WEIGHT | PP_T_CONST;
    int64_t n = pp_tensor_elems(T);
    T->val.dtype = PP_DT_FLOAT;
    T->val.rank = rank;
    memcpy(T->val.dims, T->dims, sizeof T->dims);
    T->val.n = n;
    T->val.fval = pp_arena_array(g->arena, (size_t)n + 1, sizeof(double));
    if (n) memcpy(T->val.fval, vals, (size_t)n * sizeof(double));
}

/* Weight without a value (too large to keep). */
static void weight(pp_graph *g, const char *name, int rank, const int64_t *dims)
{
    int t = pp_graph_tensor(g, name);
    pp_tensor_set_shape(&g->tensors[t], PP_DT_FLOAT, rank, dims);
    g->tensors[t].flags |= PP_T_INITIALIZER | PP_T_WEIGHT;
}

/* Names are comma-separated; an empty name is an omitted optional input. */
static int split_names(const char *s, char buf[16][64], const char *ptr[16])
{
    int n = 0;
    if (!s) return 0;
    const char *p = s;
    for (;;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        assert_true(n < 16 && len < 64);
        memcpy(buf[n], p, len);
        buf[n][len] = '\0';
        ptr[n] = buf[n];
        n++;
        if (!e) break;
        p = e + 1;
    }
    return n;
}

static int N(pp_graph *g, const char *name, const char *op, const char *ins, const char *outs)
{
    char ib[16][64], ob[16][64];
    const char *ip[16], *op_[16];
    int ni = split_names(ins, ib, ip), no = split_names(outs, ob, op_);
    int k = pp_graph_add_node(g, name, op, "", ip, ni, op_, no);
    assert_true(k >= 0);
    return k;
}

static void A_i(pp_graph *g, int n, const char *name, int64_t v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_INT);
    a->i = v;
}

static void A_f(pp_graph *g, int n, const char *name, double v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_FLOAT);
    a->f = v;
}

static void A_s(pp_graph *g, int n, const char *name, const char *v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_STRING);
    a->s = pp_arena_strdup(g->arena, v);
}

static void A_ints(pp_graph *g, int n, const char *name, int cnt, const int64_t *v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_INTS);
    a->n = cnt;
    a->ints = pp_arena_array(g->arena, (size_t)cnt + 1, sizeof(int64_t));
    memcpy(a->ints, v, (size_t)cnt * sizeof(int64_t));
}

static void A_floats(pp_graph *g, int n, const char *name, int cnt, const double *v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_FLOATS);
    a->n = cnt;
    a->floats = pp_arena_array(g->arena, (size_t)cnt + 1, sizeof(double));
    memcpy(a->floats, v, (size_t)cnt * sizeof(double));
}

/* A one-element tensor attribute (ConstantOfShape value). */
static void A_scalar_tensor(pp_graph *g, int n, const char *name, int32_t dt, double v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_TENSOR);
    a->t.dtype = dt;
    a->t.rank = 1;
    a->t.dims[0] = 1;
    a->t.n = 1;
    if (pp_dtype_is_float(dt)) {
        a->t.fval = pp_arena_array(g->arena, 1, sizeof(double));
        a->t.fval[0] = v;
    } else {
        a->t.ival = pp_arena_array(g->arena, 1, sizeof(int64_t));
        a->t.ival[0] = (int64_t)v;
    }
}

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define F(...) ((const double[]){__VA_ARGS__})
#define NOPTS ((const pp_shape_opts *)NULL)

static perfpred_status run(pp_graph *g, const pp_shape_opts *o, pp_err *err)
{
    perfpred_status st = pp_graph_link(g, err);
    if (st) return st;
    return pp_graph_infer_shapes(g, o, err);
}

static void run_ok(pp_graph *g)
{
    pp_err err = {0};
    perfpred_status st = run(g, NULL, &err);
    if (st) print_error("unexpected error: %s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
}

static const pp_tensor *T(pp_graph *g, const char *name)
{
    int t = pp_graph_find(g, name);
    assert_true(t >= 0);
    return &g->tensors[t];
}

/* "[2,60]" */
static void shape_of(const pp_tensor *t, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < t->rank; d++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    snprintf(buf + k, len - k, "]");
}

#define assert_shape(g, name, want)                                                           \
    do {                                                                                      \
        char b_[256];                                                                         \
        const pp_tensor *t_ = T(g, name);                                                     \
        assert_true(t_->flags & PP_T_SHAPE_KNOWN);                                            \
        shape_of(t_, b_, sizeof b_);                                                          \
        assert_string_equal(b_, want);                                                        \
    } while (0)

/* "2,-1" from a constant's values (integers, or floats printed with %g) */
static void values_of(const pp_tensor *t, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < t->val.n && k < len; i++) {
        if (t->val.fval)
            k += (size_t)snprintf(buf + k, len - k, "%s%g", i ? "," : "", t->val.fval[i]);
        else
            k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "",
                                  (long long)t->val.ival[i]);
    }
}

#define assert_values(g, name, want)                                                          \
    do {                                                                                      \
        char b_[4096];                                                                        \
        const pp_tensor *t_ = T(g, name);                                                     \
        assert_true(t_->flags & PP_T_CONST);                                                  \
        values_of(t_, b_, sizeof b_);                                                         \
        assert_string_equal(b_, want);                                                        \
    } while (0)

static int node_index(pp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name)) return i;
    fail_msg("no node %s", name);
    return -1;
}

static int folded(pp_graph *g, const char *name)
{
    const pp_node *n = &g->nodes[node_index(g, name)];
    return n->feat.folded && n->feat.kind == PP_OPK_SHAPE;
}

static void expect_error(pp_graph *g, const pp_shape_opts *o, perfpred_status want,
                         const char *const *needles)
{
    pp_err err = {0};
    perfpred_status st = run(g, o, &err);
    if (st != want) print_error("status %d, message: %s\n", st, err.msg);
    assert_int_equal(st, want);
    for (; *needles; needles++) {
        if (!strstr(err.msg, *needles)) print_error("'%s' not in: %s\n", *needles, err.msg);
        assert_non_null(strstr(err.msg, *needles));
    }
}
#define NEEDLES(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ------------------------------------------------------------------ shape arithmetic ---- */

/* torch: x.view(x.size(0), -1) exports Shape -> Gather -> Unsqueeze -> Concat -> Reshape. */
static void pytorch_view_chain_should_fold_to_a_constant_shape(void **state)
{
    pp_graph *g = G("view.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 4, D(2, 3, 4, 5));
    init_i(g, "zero", PP_DT_INT64, 0, NULL, D(0));
    init_i(g, "ax0", PP_DT_INT64, 1, D(1), D(0));
    init_i(g, "minus1", PP_DT_INT64, 1, D(1), D(-1));
    N(g, "shape", "Shape", "x", "s");
    int ga = N(g, "gather", "Gather", "s,zero", "b");
    A_i(g, ga, "axis", 0);
    N(g, "unsq", "Unsqueeze", "b,ax0", "b1");
    int cc = N(g, "concat", "Concat", "b1,minus1", "target");
    A_i(g, cc, "axis", 0);
    N(g, "reshape", "Reshape", "x,target", "y");
    output(g, "y");
    run_ok(g);
    assert_shape(g, "s", "[4]");
    assert_values(g, "s", "2,3,4,5");
    assert_shape(g, "b", "[]");
    assert_values(g, "b", "2");
    assert_values(g, "b1", "2");
    assert_values(g, "target", "2,-1");
    assert_shape(g, "y", "[2,60]");
    assert_true(folded(g, "shape") && folded(g, "gather") && folded(g, "unsq") &&
                folded(g, "concat"));
    assert_false(folded(g, "reshape"));
    assert_false(T(g, "y")->flags & PP_T_CONST);
    pp_graph_free(g);
}

/* shufflenet_v2 channel shuffle with shapes computed from the input (opset 15 Shape start/end). */
static void channel_shuffle_should_fold_its_shapes(void **state)
{
    pp_graph *g = G("shuffle.onnx", 15);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 116, 28, 28));
    init_i(g, "g_c", PP_DT_INT64, 1, D(2), D(2, 58));
    init_i(g, "m1", PP_DT_INT64, 1, D(1), D(-1));
    int s0 = N(g, "shape_n", "Shape", "x", "n");
    A_i(g, s0, "end", 1);
    int s1 = N(g, "shape_hw", "Shape", "x", "hw");
    A_i(g, s1, "start", -2);
    int c1 = N(g, "cat1", "Concat", "n,g_c,hw", "shape5");
    A_i(g, c1, "axis", 0);
    N(g, "r1", "Reshape", "x,shape5", "x5");
    int tr = N(g, "tr", "Transpose", "x5", "x5t");
    A_ints(g, tr, "perm", 5, D(0, 2, 1, 3, 4));
    int c2 = N(g, "cat2", "Concat", "n,m1,hw", "shape4");
    A_i(g, c2, "axis", 0);
    N(g, "r2", "Reshape", "x5t,shape4", "y");
    output(g, "y");
    run_ok(g);
    assert_values(g, "n", "1");
    assert_values(g, "hw", "28,28");
    assert_values(g, "shape5", "1,2,58,28,28");
    assert_shape(g, "x5", "[1,2,58,28,28]");
    assert_shape(g, "x5t", "[1,58,2,28,28]");
    assert_values(g, "shape4", "1,-1,28,28");
    assert_shape(g, "y", "[1,116,28,28]");
    assert_true(folded(g, "cat1") && folded(g, "cat2") && folded(g, "shape_hw"));
    assert_false(folded(g, "tr"));
    pp_graph_free(g);
}

/* Swin: a roll as Slice+Concat, and an attention mask built from ConstantOfShape/Range/Where/
 * Equal/Sub, all on constants, must fold. */
static void window_mask_arithmetic_should_fold(void **state)
{
    pp_graph *g = G("swin.onnx", 13);
    init_i(g, "seq", PP_DT_INT64, 1, D(6), D(0, 1, 2, 3, 4, 5));
    init_i(g, "m2", PP_DT_INT64, 1, D(1), D(-2));
    init_i(g, "big", PP_DT_INT64, 1, D(1), D(INT64_MAX));
    init_i(g, "zero1", PP_DT_INT64, 1, D(1), D(0));
    init_i(g, "ax0", PP_DT_INT64, 1, D(1), D(0));
    init_i(g, "ax1", PP_DT_INT64, 1, D(1), D(1));
    N(g, "tail", "Slice", "seq,m2,big,ax0", "t");
    N(g, "head", "Slice", "seq,zero1,m2,ax0", "h");
    int cc = N(g, "roll", "Concat", "t,h", "rolled");
    A_i(g, cc, "axis", 0);
    /* region ids: 1 where index < 2 else 0, over a [4] window */
    init_i(g, "hw", PP_DT_INT64, 1, D(1), D(4));
    init_i(g, "r0", PP_DT_INT64, 0, NULL, D(0));
    init_i(g, "r4", PP_DT_INT64, 0, NULL, D(4));
    init_i(g, "r1", PP_DT_INT64, 0, NULL, D(1));
    init_i(g, "two", PP_DT_INT64, 0, NULL, D(2));
    init_f(g, "one_f", 0, NULL, F(1.0));
    int cs = N(g, "zeros", "ConstantOfShape", "hw", "z");
    A_scalar_tensor(g, cs, "value", PP_DT_FLOAT, 0.0);
    N(g, "range", "Range", "r0,r4,r1", "idx");
    N(g, "less", "Less", "idx,two", "lt");
    N(g, "where", "Where", "lt,one_f,z", "ids");
    N(g, "u1", "Unsqueeze", "ids,ax1", "col");   /* [4,1] */
    N(g, "u0", "Unsqueeze", "ids,ax0", "row");   /* [1,4] */
    N(g, "sub", "Sub", "col,row", "diff");       /* [4,4] */
    init_f(g, "zf", 0, NULL, F(0.0));
    init_f(g, "neg", 0, NULL, F(-100.0));
    N(g, "eq", "Equal", "diff,zf", "same");
    N(g, "mask", "Where", "same,zf,neg", "m");
    output(g, "rolled");
    output(g, "m");
    run_ok(g);
    assert_values(g, "t", "4,5");
    assert_values(g, "h", "0,1,2,3");
    assert_values(g, "rolled", "4,5,0,1,2,3");
    assert_values(g, "idx", "0,1,2,3");
    assert_values(g, "lt", "1,1,0,0");
    assert_values(g, "ids", "1,1,0,0");
    assert_shape(g, "diff", "[4,4]");
    assert_values(g, "diff", "0,0,1,1,0,0,1,1,-1,-1,0,0,-1,-1,0,0");
    assert_shape(g, "m", "[4,4]");
    assert_values(g, "m", "0,0,-100,-100,0,0,-100,-100,-100,-100,0,0,-100,-100,0,0");
    const char *all[] = {"tail", "head", "roll", "zeros", "range", "less", "where", "u1", "u0",
                         "sub", "eq", "mask"};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) assert_true(folded(g, all[i]));
    pp_graph_free(g);
}

/* Swin writes its image mask by slice assignment, exported as ScatterND on a constant. */
static void scatter_nd_on_constants_should_fold(void **state)
{
    pp_graph *g = G("scatter.onnx", 13);
    init_i(g, "shape", PP_DT_INT64, 1, D(2), D(3, 2));
    int k = N(g, "zeros", "ConstantOfShape", "shape", "z");
    A_scalar_tensor(g, k, "value", PP_DT_INT64, 0);
    init_i(g, "rows", PP_DT_INT64, 2, D(2, 1), D(2, -3));      /* rows 2 and 0 */
    init_i(g, "upd", PP_DT_INT64, 2, D(2, 2), D(5, 6, 7, 8));
    N(g, "scatter", "ScatterND", "z,rows,upd", "m");
    init_i(g, "cell", PP_DT_INT64, 2, D(1, 2), D(1, 1));
    init_i(g, "one", PP_DT_INT64, 1, D(1), D(9));
    k = N(g, "scatter_add", "ScatterND", "m,cell,one", "m2");
    A_s(g, k, "reduction", "add");
    run_ok(g);
    assert_shape(g, "m", "[3,2]");
    assert_values(g, "m", "7,8,0,0,5,6");
    assert_values(g, "m2", "7,8,0,9,5,6");
    assert_true(folded(g, "scatter") && folded(g, "scatter_add"));
    pp_graph_free(g);

    g = G("scatterbad.onnx", 13);
    input(g, "d", PP_DT_FLOAT, 2, D(3, 2));
    input(g, "i", PP_DT_INT64, 2, D(2, 1));
    input(g, "u", PP_DT_FLOAT, 2, D(2, 3));
    N(g, "bad_scatter", "ScatterND", "d,i,u", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("bad_scatter", "[3,2]", "[2,1]", "[2,3]"));
    pp_graph_free(g);
}

static void integer_arithmetic_should_fold_like_onnx(void **state)
{
    pp_graph *g = G("arith.onnx", 13);
    init_i(g, "a", PP_DT_INT64, 1, D(4), D(7, -7, 7, -7));
    init_i(g, "b", PP_DT_INT64, 1, D(4), D(2, 2, -3, 3));
    init_f(g, "f", 1, D(3), F(2.7, -2.7, 0.5));
    N(g, "div", "Div", "a,b", "q");          /* truncation toward zero */
    N(g, "mod", "Mod", "a,b", "r");          /* fmod=0: sign of the divisor */
    int fm = N(g, "fmod", "Mod", "a,b", "rf");
    A_i(g, fm, "fmod", 1);
    N(g, "mul", "Mul", "a,b", "p");
    N(g, "max", "Max", "a,b", "mx");
    int ca = N(g, "cast", "Cast", "f", "fi");
    A_i(g, ca, "to", PP_DT_INT64);
    N(g, "floor", "Floor", "f", "ff");
    N(g, "ceil", "Ceil", "f", "fc");
    N(g, "neg", "Neg", "a", "na");
    N(g, "abs", "Abs", "a", "aa");
    N(g, "size", "Size", "a", "sz");
    N(g, "rp", "ReduceProd", "b", "prod");
    run_ok(g);
    assert_values(g, "q", "3,-3,-2,-2");
    assert_values(g, "r", "1,1,-2,2");
    assert_values(g, "rf", "1,-1,1,-1");
    assert_values(g, "p", "14,-14,-21,-21");
    assert_values(g, "mx", "7,2,7,3");
    assert_values(g, "fi", "2,-2,0");
    assert_values(g, "ff", "2,-3,0");
    assert_values(g, "fc", "3,-2,1");
    assert_values(g, "na", "-7,7,-7,7");
    assert_values(g, "aa", "7,7,7,7");
    assert_values(g, "sz", "4");
    assert_shape(g, "prod", "[1]");   /* keepdims=1 by default */
    assert_values(g, "prod", "-36");
    assert_true(T(g, "fi")->dtype == PP_DT_INT64);
    pp_graph_free(g);
}

static void division_by_zero_in_constants_should_name_the_node(void **state)
{
    pp_graph *g = G("dz.onnx", 13);
    init_i(g, "a", PP_DT_INT64, 1, D(1), D(4));
    init_i(g, "z", PP_DT_INT64, 1, D(1), D(0));
    N(g, "bad_div", "Div", "a,z", "q");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("dz.onnx", "bad_div", "division by zero"));
    pp_graph_free(g);
}

static void constant_node_should_work_without_the_loader(void **state)
{
    pp_graph *g = G("const.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(6, 4));
    int k = N(g, "c", "Constant", NULL, "shp");
    A_ints(g, k, "value_ints", 3, D(2, -1, 4));
    N(g, "r", "Reshape", "x,shp", "y");
    int k2 = N(g, "c2", "Constant", NULL, "pi");
    A_f(g, k2, "value_float", 3.0);
    run_ok(g);
    assert_values(g, "shp", "2,-1,4");
    assert_shape(g, "y", "[2,3,4]");
    assert_shape(g, "pi", "[]");
    assert_values(g, "pi", "3");
    assert_true(folded(g, "c"));
    pp_graph_free(g);
}

static void range_expand_tile_transpose_should_fold(void **state)
{
    pp_graph *g = G("fold2.onnx", 13);
    init_i(g, "s", PP_DT_INT64, 0, NULL, D(10));
    init_i(g, "l", PP_DT_INT64, 0, NULL, D(1));
    init_i(g, "d", PP_DT_INT64, 0, NULL, D(-3));
    N(g, "range", "Range", "s,l,d", "r");          /* 10, 7, 4: ceil((1-10)/-3) = 3 */
    init_i(g, "v", PP_DT_INT64, 2, D(2, 1), D(1, 2));
    init_i(g, "eshape", PP_DT_INT64, 1, D(2), D(2, 3));
    N(g, "expand", "Expand", "v,eshape", "e");     /* [[1,1,1],[2,2,2]] */
    init_i(g, "reps", PP_DT_INT64, 1, D(2), D(1, 2));
    N(g, "tile", "Tile", "e,reps", "tl");          /* [2,6] */
    N(g, "tr", "Transpose", "e", "et");            /* default perm reverses: [3,2] */
    int sq = N(g, "sq", "Squeeze", "v", "vs");    /* no axes: drop the 1 */
    (void)sq;
    run_ok(g);
    assert_values(g, "r", "10,7,4");
    assert_values(g, "e", "1,1,1,2,2,2");
    assert_shape(g, "tl", "[2,6]");
    assert_values(g, "tl", "1,1,1,1,1,1,2,2,2,2,2,2");
    assert_shape(g, "et", "[3,2]");
    assert_values(g, "et", "1,2,1,2,1,2");
    assert_shape(g, "vs", "[2]");
    assert_values(g, "vs", "1,2");
    pp_graph_free(g);
}

/* ------------------------------------------------------------------ data movement ---- */

static void slice_should_handle_negative_and_clamped_steps(void **state)
{
    pp_graph *g = G("slice.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 3, D(20, 10, 5));
    /* spec test_slice_neg_steps: starts 20,10,4 ends 0,0,1 steps -1,-3,-2 -> 19 x 3 x 2 */
    init_i(g, "st", PP_DT_INT64, 1, D(3), D(20, 10, 4));
    init_i(g, "en", PP_DT_INT64, 1, D(3), D(0, 0, 1));
    init_i(g, "ax", PP_DT_INT64, 1, D(3), D(0, 1, 2));
    init_i(g, "sp", PP_DT_INT64, 1, D(3), D(-1, -3, -2));
    N(g, "s1", "Slice", "x,st,en,ax,sp", "y1");
    /* out of bounds: starts 1000 on axis 1 -> empty */
    init_i(g, "st2", PP_DT_INT64, 1, D(1), D(1000));
    init_i(g, "en2", PP_DT_INT64, 1, D(1), D(1001));
    init_i(g, "ax2", PP_DT_INT64, 1, D(1), D(1));
    N(g, "s2", "Slice", "x,st2,en2,ax2", "y2");
    /* constant: [0..9][-1 : -11 : -2] = 9,7,5,3,1 */
    init_i(g, "v", PP_DT_INT64, 1, D(10), D(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
    init_i(g, "st3", PP_DT_INT64, 1, D(1), D(-1));
    init_i(g, "en3", PP_DT_INT64, 1, D(1), D(-11));
    init_i(g, "sp3", PP_DT_INT64, 1, D(1), D(-2));
    N(g, "s3", "Slice", "v,st3,en3,,sp3", "y3");
    run_ok(g);
    assert_shape(g, "y1", "[19,3,2]");
    assert_shape(g, "y2", "[20,0,5]");
    assert_values(g, "y3", "9,7,5,3,1");
    pp_graph_free(g);

    /* opset 9: starts/ends/axes are attributes */
    g = G("slice9.onnx", 9);
    input(g, "x", PP_DT_FLOAT, 2, D(4, 6));
    int k = N(g, "s", "Slice", "x", "y");
    A_ints(g, k, "starts", 2, D(1, 0));
    A_ints(g, k, "ends", 2, D(-1, 3));
    A_ints(g, k, "axes", 2, D(0, 1));
    run_ok(g);
    assert_shape(g, "y", "[2,3]");
    pp_graph_free(g);
}

static void squeeze_unsqueeze_should_take_axes_from_attr_or_input(void **state)
{
    pp_graph *g = G("sq11.onnx", 11);
    input(g, "x", PP_DT_FLOAT, 3, D(3, 1, 5));
    int k = N(g, "u", "Unsqueeze", "x", "u");
    A_ints(g, k, "axes", 2, D(0, -1));        /* output rank 5: [1,3,1,5,1] */
    k = N(g, "s", "Squeeze", "u", "s");
    A_ints(g, k, "axes", 2, D(0, 2));         /* [3,5,1] */
    run_ok(g);
    assert_shape(g, "u", "[1,3,1,5,1]");
    assert_shape(g, "s", "[3,5,1]");
    pp_graph_free(g);

    g = G("sq13.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 3, D(3, 1, 5));
    init_i(g, "ax", PP_DT_INT64, 1, D(2), D(1, 4));
    N(g, "u", "Unsqueeze", "x,ax", "u");      /* [3,1,1,5,1] */
    init_i(g, "ax2", PP_DT_INT64, 1, D(1), D(2));
    N(g, "s", "Squeeze", "u,ax2", "s");       /* [3,1,5,1] */
    N(g, "s_all", "Squeeze", "u", "sa");      /* [3,5] */
    run_ok(g);
    assert_shape(g, "u", "[3,1,1,5,1]");
    assert_shape(g, "s", "[3,1,5,1]");
    assert_shape(g, "sa", "[3,5]");
    pp_graph_free(g);

    g = G("sqbad.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(3, 4));
    init_i(g, "ax", PP_DT_INT64, 1, D(1), D(0));
    N(g, "squeeze_it", "Squeeze", "x,ax", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("squeeze_it", "[3,4]"));
    pp_graph_free(g);
}

static void split_should_take_sizes_from_attr_input_or_equal_parts(void **state)
{
    pp_graph *g = G("split.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(6, 10));
    init_i(g, "sizes", PP_DT_INT64, 1, D(2), D(3, 7));
    int k = N(g, "s1", "Split", "x,sizes", "a,b");
    A_i(g, k, "axis", 1);
    N(g, "s2", "Split", "x", "c,d,e");
    run_ok(g);
    assert_shape(g, "a", "[6,3]");
    assert_shape(g, "b", "[6,7]");
    assert_shape(g, "c", "[2,10]");
    assert_shape(g, "e", "[2,10]");
    pp_graph_free(g);

    g = G("split11.onnx", 11);
    input(g, "x", PP_DT_FLOAT, 1, D(5));
    k = N(g, "s", "Split", "x", "a,b");
    A_ints(g, k, "split", 2, D(1, 4));
    run_ok(g);
    assert_shape(g, "b", "[4]");
    pp_graph_free(g);

    g = G("splitbad.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 1, D(5));
    N(g, "uneven", "Split", "x", "a,b");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("uneven", "5"));
    pp_graph_free(g);
}

static void reshape_should_copy_zeros_infer_minus_one_and_honour_allowzero(void **state)
{
    pp_graph *g = G("reshape.onnx", 14);
    input(g, "x", PP_DT_FLOAT, 3, D(2, 3, 4));
    init_i(g, "s1", PP_DT_INT64, 1, D(2), D(0, -1));
    N(g, "r1", "Reshape", "x,s1", "y1");
    input(g, "e", PP_DT_FLOAT, 2, D(0, 3));
    init_i(g, "s2", PP_DT_INT64, 1, D(2), D(3, 0));
    int k = N(g, "r2", "Reshape", "e,s2", "y2");
    A_i(g, k, "allowzero", 1);
    run_ok(g);
    assert_shape(g, "y1", "[2,12]");
    assert_shape(g, "y2", "[3,0]");
    pp_graph_free(g);

    g = G("rbad.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 3, D(2, 3, 4));
    init_i(g, "s", PP_DT_INT64, 1, D(2), D(5, 5));
    N(g, "bad_reshape", "Reshape", "x,s", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE,
                 NEEDLES("rbad.onnx", "bad_reshape", "Reshape", "[2,3,4]", "[5,5]"));
    pp_graph_free(g);
}

static void concat_should_reject_mismatched_inputs(void **state)
{
    pp_graph *g = G("cat.onnx", 13);
    input(g, "a", PP_DT_FLOAT, 2, D(2, 3));
    input(g, "b", PP_DT_FLOAT, 2, D(4, 3));
    int k = N(g, "good", "Concat", "a,b", "y");
    A_i(g, k, "axis", -2);
    k = N(g, "bad_cat", "Concat", "a,b", "z");
    A_i(g, k, "axis", 1);
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("bad_cat", "[4,3]", "[2,3]"));
    assert_shape(g, "y", "[6,3]");
    pp_graph_free(g);
}

static void gather_family_should_follow_the_spec(void **state)
{
    pp_graph *g = G("gather.onnx", 13);
    input(g, "data", PP_DT_FLOAT, 3, D(5, 4, 3));
    input(g, "idx", PP_DT_INT64, 2, D(2, 2));
    int k = N(g, "g", "Gather", "data,idx", "y");
    A_i(g, k, "axis", 1);                      /* [5] + [2,2] + [3] */
    input(g, "d3", PP_DT_FLOAT, 3, D(2, 2, 2));
    input(g, "i3", PP_DT_INT64, 2, D(2, 1));
    k = N(g, "gnd", "GatherND", "d3,i3", "z"); /* spec: batch_dims=1 example -> [2,2] */
    A_i(g, k, "batch_dims", 1);
    input(g, "i4", PP_DT_INT64, 3, D(2, 2, 2));
    N(g, "gnd0", "GatherND", "d3,i4", "z0");   /* indices[:-1] [2,2] + data[2:] [2] */
    input(g, "ie", PP_DT_INT64, 3, D(1, 2, 2));
    N(g, "ge", "GatherElements", "d3,ie", "w");
    run_ok(g);
    assert_shape(g, "y", "[5,2,2,3]");
    assert_shape(g, "z", "[2,2]");
    assert_shape(g, "z0", "[2,2,2]");
    assert_shape(g, "w", "[1,2,2]");
    pp_graph_free(g);
}

static void pad_should_read_pads_from_attr_or_input(void **state)
{
    pp_graph *g = G("pad11.onnx", 11);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 3, 4, 5));
    init_i(g, "pads", PP_DT_INT64, 1, D(8), D(0, 0, 1, 2, 0, 0, 3, -1));
    N(g, "p", "Pad", "x,pads", "y");
    run_ok(g);
    assert_shape(g, "y", "[1,3,8,6]");
    pp_graph_free(g);

    g = G("pad10.onnx", 10);
    input(g, "x", PP_DT_FLOAT, 2, D(3, 2));
    int k = N(g, "p", "Pad", "x", "y");
    A_ints(g, k, "pads", 4, D(0, 2, 0, 0));    /* spec example: [3,2] -> [3,4] */
    run_ok(g);
    assert_shape(g, "y", "[3,4]");
    pp_graph_free(g);
}

static void resize_should_use_scales_or_sizes(void **state)
{
    pp_graph *g = G("resize.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 1, 4, 4));
    /* float32 0.6: floor(4 * 0.6000000238) = 2 */
    init_f(g, "down", 1, D(4), F(1.0, 1.0, (double)0.6f, (double)0.6f));
    N(g, "r1", "Resize", "x,,down", "y1");
    init_f(g, "up", 1, D(4), F(1.0, 1.0, 2.0, 3.0));
    N(g, "r2", "Resize", "x,,up", "y2");
    init_f(g, "noscale", 1, D(0), NULL);
    init_i(g, "sizes", PP_DT_INT64, 1, D(4), D(1, 1, 7, 9));
    N(g, "r3", "Resize", "x,,noscale,sizes", "y3");
    run_ok(g);
    assert_shape(g, "y1", "[1,1,2,2]");
    assert_shape(g, "y2", "[1,1,8,12]");
    assert_shape(g, "y3", "[1,1,7,9]");
    pp_graph_free(g);

    g = G("resize10.onnx", 10);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 3, 5, 5));
    init_f(g, "sc", 1, D(4), F(1.0, 1.0, 2.0, 0.5));
    N(g, "r", "Resize", "x,sc", "y");          /* opset 10: scales is input 1 */
    int k = N(g, "u", "Upsample", "x", "z");   /* scales attribute (opset 7/8 form) */
    A_floats(g, k, "scales", 4, F(1.0, 1.0, 3.0, 3.0));
    run_ok(g);
    assert_shape(g, "y", "[1,3,10,2]");
    assert_shape(g, "z", "[1,3,15,15]");
    pp_graph_free(g);

    g = G("resizedd.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 1, 4, 4));
    input(g, "scales", PP_DT_FLOAT, 1, D(4));
    N(g, "dyn_resize", "Resize", "x,,scales", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("dyn_resize", "data-dependent", "scales"));
    pp_graph_free(g);
}

static void depth_space_and_flatten_should_follow_the_spec(void **state)
{
    pp_graph *g = G("d2s.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 8, 2, 3));
    int k = N(g, "d2s", "DepthToSpace", "x", "y");
    A_i(g, k, "blocksize", 2);
    k = N(g, "s2d", "SpaceToDepth", "y", "z");
    A_i(g, k, "blocksize", 2);
    k = N(g, "fl", "Flatten", "x", "f");
    A_i(g, k, "axis", -1);
    k = N(g, "fl0", "Flatten", "x", "f0");
    A_i(g, k, "axis", 0);
    run_ok(g);
    assert_shape(g, "y", "[1,2,4,6]");
    assert_shape(g, "z", "[1,8,2,3]");
    assert_shape(g, "f", "[16,3]");
    assert_shape(g, "f0", "[1,48]");
    pp_graph_free(g);
}

/* ------------------------------------------------------------------ neural-network ops ---- */

static void conv_should_handle_pads_strides_dilations_and_auto_pad(void **state)
{
    pp_graph *g = G("conv.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 3, 7, 7));
    weight(g, "w", 4, D(8, 3, 3, 3));
    weight(g, "b", 1, D(8));
    int k = N(g, "same", "Conv", "x,w,b", "y1");
    A_s(g, k, "auto_pad", "SAME_UPPER");
    A_ints(g, k, "strides", 2, D(2, 2));       /* ceil(7/2) = 4 */
    k = N(g, "valid", "Conv", "x,w", "y2");
    A_s(g, k, "auto_pad", "VALID");
    A_ints(g, k, "strides", 2, D(2, 2));       /* ceil((7-3+1)/2) = 3 */
    k = N(g, "dil", "Conv", "x,w", "y3");
    A_ints(g, k, "dilations", 2, D(2, 2));     /* 7 - 5 + 1 = 3 */
    k = N(g, "asym", "Conv", "x,w", "y4");
    A_ints(g, k, "pads", 4, D(1, 0, 1, 0));
    A_ints(g, k, "strides", 2, D(2, 2));       /* spec test_conv_with_strides_and_asymmetric_padding style:
                                                  H: (7+2-3)/2+1 = 4, W: (7-3)/2+1 = 3 */
    weight(g, "wd", 4, D(6, 1, 3, 3));
    input(g, "x6", PP_DT_FLOAT, 4, D(2, 6, 5, 5));
    k = N(g, "dw", "Conv", "x6,wd", "y5");
    A_i(g, k, "group", 6);
    A_ints(g, k, "pads", 4, D(1, 1, 1, 1));
    run_ok(g);
    assert_shape(g, "y1", "[1,8,4,4]");
    assert_shape(g, "y2", "[1,8,3,3]");
    assert_shape(g, "y3", "[1,8,3,3]");
    assert_shape(g, "y4", "[1,8,4,3]");
    assert_shape(g, "y5", "[2,6,5,5]");
    pp_graph_free(g);
}

static void conv_channel_mismatch_should_name_node_and_shapes(void **state)
{
    pp_graph *g = G("bad_conv.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 4, 8, 8));
    weight(g, "w", 4, D(16, 3, 3, 3));
    N(g, "conv_7", "Conv", "x,w", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE,
                 NEEDLES("bad_conv.onnx", "conv_7", "Conv", "[1,4,8,8]", "[16,3,3,3]"));
    pp_graph_free(g);
}

static void conv_transpose_should_handle_output_padding_and_output_shape(void **state)
{
    pp_graph *g = G("convt.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 1, 3, 3));
    weight(g, "w", 4, D(1, 2, 3, 3));
    int k = N(g, "op", "ConvTranspose", "x,w", "y1");
    A_ints(g, k, "strides", 2, D(3, 2));
    A_ints(g, k, "output_padding", 2, D(1, 1));  /* spec test_convtranspose_pad: [1,2,10,8] */
    k = N(g, "os", "ConvTranspose", "x,w", "y2");
    A_ints(g, k, "strides", 2, D(3, 2));
    A_ints(g, k, "output_shape", 2, D(10, 8));
    k = N(g, "plain", "ConvTranspose", "x,w", "y3"); /* spec test_convtranspose: [1,2,5,5] */
    k = N(g, "same", "ConvTranspose", "x,w", "y4");
    A_s(g, k, "auto_pad", "SAME_UPPER");
    A_ints(g, k, "strides", 2, D(2, 2));             /* in * stride = 6 */
    input(g, "x4", PP_DT_FLOAT, 4, D(1, 4, 5, 5));
    weight(g, "wg", 4, D(4, 3, 3, 3));
    k = N(g, "grouped", "ConvTranspose", "x4,wg", "y5");
    A_i(g, k, "group", 2);                           /* channels 3*2 = 6 */
    A_ints(g, k, "strides", 2, D(2, 2));
    A_ints(g, k, "pads", 4, D(1, 1, 1, 1));          /* 2*4 + 3 - 2 = 9 */
    run_ok(g);
    assert_shape(g, "y1", "[1,2,10,8]");
    assert_shape(g, "y2", "[1,2,10,8]");
    assert_shape(g, "y3", "[1,2,5,5]");
    assert_shape(g, "y4", "[1,2,6,6]");
    assert_shape(g, "y5", "[1,6,9,9]");
    pp_graph_free(g);
}

static void pooling_should_handle_ceil_mode_auto_pad_and_indices(void **state)
{
    pp_graph *g = G("pool.onnx", 12);
    input(g, "x", PP_DT_FLOAT, 4, D(1, 1, 4, 4));
    int k = N(g, "ceil", "MaxPool", "x", "y1,idx");
    A_ints(g, k, "kernel_shape", 2, D(3, 3));
    A_ints(g, k, "strides", 2, D(2, 2));
    A_i(g, k, "ceil_mode", 1);                 /* spec test_maxpool_2d_ceil: 2x2 */
    k = N(g, "lower", "AveragePool", "x", "y2");
    A_ints(g, k, "kernel_shape", 2, D(2, 2));
    A_s(g, k, "auto_pad", "SAME_LOWER");       /* ceil(4/1) = 4 */
    input(g, "x5", PP_DT_FLOAT, 4, D(1, 1, 5, 5));
    k = N(g, "torch_ceil", "MaxPool", "x5", "y3");
    A_ints(g, k, "kernel_shape", 2, D(2, 2));
    A_ints(g, k, "strides", 2, D(2, 2));
    A_ints(g, k, "pads", 4, D(1, 1, 1, 1));
    A_i(g, k, "ceil_mode", 1);  /* ceil((5+2-2)/2)+1 = 4, last window starts in padding -> 3 */
    k = N(g, "dil", "MaxPool", "x5", "y4");
    A_ints(g, k, "kernel_shape", 2, D(2, 2));
    A_ints(g, k, "dilations", 2, D(2, 2));    /* 5 - 3 + 1 = 3 */
    N(g, "gap", "GlobalAveragePool", "x5", "y5");
    input(g, "x1", PP_DT_FLOAT, 3, D(1, 3, 32));
    k = N(g, "p1d", "AveragePool", "x1", "y6");
    A_ints(g, k, "kernel_shape", 1, D(2));     /* spec test_averagepool_1d_default: 31 */
    run_ok(g);
    assert_shape(g, "y1", "[1,1,2,2]");
    assert_shape(g, "idx", "[1,1,2,2]");
    assert_int_equal(T(g, "idx")->dtype, PP_DT_INT64);
    assert_shape(g, "y2", "[1,1,4,4]");
    assert_shape(g, "y3", "[1,1,3,3]");
    assert_shape(g, "y4", "[1,1,3,3]");
    assert_shape(g, "y5", "[1,1,1,1]");
    assert_shape(g, "y6", "[1,3,31]");
    pp_graph_free(g);
}

static void matmul_should_broadcast_batches_and_handle_1d(void **state)
{
    pp_graph *g = G("mm.onnx", 13);
    input(g, "a", PP_DT_FLOAT, 4, D(2, 1, 3, 4));
    input(g, "b", PP_DT_FLOAT, 3, D(5, 4, 6));
    input(g, "v", PP_DT_FLOAT, 1, D(4));
    input(g, "m", PP_DT_FLOAT, 2, D(3, 4));
    N(g, "bb", "MatMul", "a,b", "y1");
    N(g, "vb", "MatMul", "v,b", "y2");
    N(g, "mv", "MatMul", "m,v", "y3");
    N(g, "vv", "MatMul", "v,v", "y4");
    input(g, "ga", PP_DT_FLOAT, 2, D(4, 3));
    weight(g, "gb", 2, D(5, 4));
    weight(g, "gc", 1, D(5));
    int k = N(g, "gemm", "Gemm", "ga,gb,gc", "y5");
    A_i(g, k, "transA", 1);
    A_i(g, k, "transB", 1);
    run_ok(g);
    assert_shape(g, "y1", "[2,5,3,6]");
    assert_shape(g, "y2", "[5,6]");
    assert_shape(g, "y3", "[3]");
    assert_shape(g, "y4", "[]");
    assert_shape(g, "y5", "[3,5]");
    pp_graph_free(g);

    g = G("mmbad.onnx", 13);
    input(g, "a", PP_DT_FLOAT, 3, D(2, 3, 4));
    input(g, "b", PP_DT_FLOAT, 3, D(3, 4, 5));
    N(g, "bad_batch", "MatMul", "a,b", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("bad_batch", "[2]", "[3]"));
    pp_graph_free(g);
}

static void broadcast_mismatch_should_name_both_shapes(void **state)
{
    pp_graph *g = G("bc.onnx", 13);
    input(g, "a", PP_DT_FLOAT, 3, D(2, 3, 4));
    input(g, "b", PP_DT_FLOAT, 2, D(3, 1));
    input(g, "c", PP_DT_FLOAT, 1, D(5));
    N(g, "ok_add", "Add", "a,b", "y");
    N(g, "bad_add", "Add", "a,c", "z");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("bc.onnx", "bad_add", "[2,3,4]", "[5]"));
    assert_shape(g, "y", "[2,3,4]");
    pp_graph_free(g);
}

static void legacy_broadcast_should_align_at_axis(void **state)
{
    pp_graph *g = G("legacy.onnx", 6);
    input(g, "a", PP_DT_FLOAT, 4, D(2, 3, 4, 5));
    input(g, "b", PP_DT_FLOAT, 1, D(3));
    int k = N(g, "add", "Add", "a,b", "y");
    A_i(g, k, "broadcast", 1);
    A_i(g, k, "axis", 1);
    run_ok(g);
    assert_shape(g, "y", "[2,3,4,5]");
    pp_graph_free(g);
}

static void normalizations_should_shape_their_optional_outputs(void **state)
{
    pp_graph *g = G("norm.onnx", 17);
    input(g, "x", PP_DT_FLOAT, 3, D(2, 5, 8));
    weight(g, "sc", 1, D(8));
    int k = N(g, "ln", "LayerNormalization", "x,sc", "y,mean,inv");
    A_i(g, k, "axis", 1);
    input(g, "xc", PP_DT_FLOAT, 4, D(2, 5, 3, 3));
    weight(g, "s5", 1, D(5));
    weight(g, "b5", 1, D(5));
    weight(g, "m5", 1, D(5));
    weight(g, "v5", 1, D(5));
    k = N(g, "bn", "BatchNormalization", "xc,s5,b5,m5,v5", "yb,rm,rv");
    A_i(g, k, "training_mode", 1);
    N(g, "drop", "Dropout", "x", "yd,mask");
    N(g, "sm", "Softmax", "x", "ys");
    run_ok(g);
    assert_shape(g, "y", "[2,5,8]");
    assert_shape(g, "mean", "[2,1,1]");
    assert_shape(g, "inv", "[2,1,1]");
    assert_shape(g, "yb", "[2,5,3,3]");
    assert_shape(g, "rm", "[5]");
    assert_shape(g, "mask", "[2,5,8]");
    assert_int_equal(T(g, "mask")->dtype, PP_DT_BOOL);
    assert_shape(g, "ys", "[2,5,8]");
    pp_graph_free(g);
}

static void recurrent_and_einsum_should_follow_the_spec(void **state)
{
    pp_graph *g = G("rnn.onnx", 14);
    input(g, "x", PP_DT_FLOAT, 3, D(7, 2, 10));          /* [seq, batch, input] */
    weight(g, "w", 3, D(2, 4 * 16, 10));
    weight(g, "r", 3, D(2, 4 * 16, 16));
    int k = N(g, "lstm", "LSTM", "x,w,r", "y,yh,yc");
    A_i(g, k, "hidden_size", 16);
    A_s(g, k, "direction", "bidirectional");
    input(g, "xb", PP_DT_FLOAT, 3, D(2, 7, 10));         /* layout 1: [batch, seq, input] */
    weight(g, "wg", 3, D(1, 3 * 8, 10));
    weight(g, "rg", 3, D(1, 3 * 8, 8));
    k = N(g, "gru", "GRU", "xb,wg,rg", "gy,gyh");
    A_i(g, k, "layout", 1);
    input(g, "p", PP_DT_FLOAT, 3, D(2, 3, 4));
    input(g, "q", PP_DT_FLOAT, 3, D(2, 4, 5));
    k = N(g, "bmm", "Einsum", "p,q", "e1");
    A_s(g, k, "equation", "bij, bjk -> bik");
    input(g, "s", PP_DT_FLOAT, 2, D(3, 4));
    k = N(g, "tr", "Einsum", "s", "e2");
    A_s(g, k, "equation", "ba");                          /* implicit output "ab": [4,3] */
    input(g, "d", PP_DT_FLOAT, 3, D(3, 5, 5));
    k = N(g, "diag", "Einsum", "d", "e3");
    A_s(g, k, "equation", "...ii->...i");
    run_ok(g);
    assert_shape(g, "y", "[7,2,2,16]");
    assert_shape(g, "yh", "[2,2,16]");
    assert_shape(g, "yc", "[2,2,16]");
    assert_shape(g, "gy", "[2,7,1,8]");
    assert_shape(g, "gyh", "[2,1,8]");
    assert_shape(g, "e1", "[2,3,5]");
    assert_shape(g, "e2", "[4,3]");
    assert_shape(g, "e3", "[3,5]");
    pp_graph_free(g);
}

static void reductions_should_honour_keepdims_and_axes_forms(void **state)
{
    pp_graph *g = G("reduce.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 3, D(2, 3, 4));
    init_i(g, "ax", PP_DT_INT64, 1, D(1), D(1));
    int k = N(g, "rs", "ReduceSum", "x,ax", "y1");
    A_i(g, k, "keepdims", 0);
    k = N(g, "rm", "ReduceMean", "x", "y2");
    A_ints(g, k, "axes", 1, D(-1));
    init_i(g, "none", PP_DT_INT64, 1, D(0), NULL);
    k = N(g, "noop", "ReduceSum", "x,none", "y3");
    A_i(g, k, "noop_with_empty_axes", 1);
    N(g, "all", "ReduceMax", "x", "y4");
    k = N(g, "am", "ArgMax", "x", "y5");
    A_i(g, k, "axis", 2);
    A_i(g, k, "keepdims", 0);
    init_i(g, "kk", PP_DT_INT64, 1, D(1), D(2));
    N(g, "topk", "TopK", "x,kk", "tv,ti");
    run_ok(g);
    assert_shape(g, "y1", "[2,4]");
    assert_shape(g, "y2", "[2,3,1]");
    assert_shape(g, "y3", "[2,3,4]");
    assert_shape(g, "y4", "[1,1,1]");
    assert_shape(g, "y5", "[2,3]");
    assert_int_equal(T(g, "y5")->dtype, PP_DT_INT64);
    assert_shape(g, "tv", "[2,3,2]");
    assert_shape(g, "ti", "[2,3,2]");
    pp_graph_free(g);
}

/* ------------------------------------------------------------------ options and errors ---- */

static pp_graph *symbolic_graph(void)
{
    pp_graph *g = G("sym.onnx", 13);
    const char *params[] = {"batch", NULL, "height", "width"};
    input_p(g, "images", PP_DT_FLOAT, 4, D(-1, 3, -1, -1), params);
    N(g, "relu", "Relu", "images", "y");
    output(g, "y");
    return g;
}

static void unresolved_symbolic_dim_should_suggest_overrides(void **state)
{
    pp_graph *g = symbolic_graph();
    pp_shape_opts o = {.batch = 8};
    expect_error(g, &o, PERFPRED_ERR_SHAPE,
                 NEEDLES("sym.onnx", "images", "height", "--input images=AxBxC", "--batch"));
    pp_graph_free(g);
}

static void overrides_and_batch_should_resolve_inputs(void **state)
{
    pp_graph *g;
    g = symbolic_graph();
    perfpred_input_override ov2 = {.name = "images", .rank = 4, .dims = {1, 3, 224, 160}};
    pp_shape_opts o = {.batch = 0, .inputs = &ov2, .n_inputs = 1};
    pp_err err = {0};
    assert_int_equal(run(g, &o, &err), PERFPRED_OK);
    assert_shape(g, "y", "[1,3,224,160]");
    pp_graph_free(g);

    /* batch replaces the symbolic leading dim of a partially static input */
    g = G("b.onnx", 13);
    const char *params[] = {"N", NULL};
    input_p(g, "x", PP_DT_FLOAT, 2, D(-1, 10), params);
    weight(g, "w", 2, D(10, 4));
    N(g, "mm", "MatMul", "x,w", "y");
    output(g, "y");
    pp_shape_opts ob = {.batch = 16};
    assert_int_equal(run(g, &ob, &err), PERFPRED_OK);
    assert_shape(g, "x", "[16,10]");
    assert_shape(g, "y", "[16,4]");
    pp_graph_free(g);
}

static void unknown_override_name_should_list_known_inputs(void **state)
{
    pp_graph *g = symbolic_graph();
    perfpred_input_override ov = {.name = "image", .rank = 4, .dims = {1, 3, 8, 8}};
    pp_shape_opts o = {.inputs = &ov, .n_inputs = 1};
    expect_error(g, &o, PERFPRED_ERR_INVALID_ARG, NEEDLES("sym.onnx", "'image'", "'images'"));
    pp_graph_free(g);

    g = symbolic_graph();
    perfpred_input_override ov2 = {.name = "images", .rank = 3, .dims = {3, 8, 8}};
    pp_shape_opts o2 = {.inputs = &ov2, .n_inputs = 1};
    expect_error(g, &o2, PERFPRED_ERR_INVALID_ARG, NEEDLES("images", "rank 3", "rank 4"));
    pp_graph_free(g);
}

static void weights_without_static_shape_should_fail(void **state)
{
    pp_graph *g = G("w.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(1, 10));
    weight(g, "w", 2, D(10, -1));
    N(g, "mm", "MatMul", "x,w", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("w.onnx", "weight 'w'", "static"));
    pp_graph_free(g);
}

static void unknown_op_should_fail_unless_allowed(void **state)
{
    pp_graph *g = G("unk.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(4, 8));
    input(g, "s", PP_DT_FLOAT, 1, D(8));
    N(g, "weird_1", "FancyOp", "s,x", "y");
    N(g, "relu", "Relu", "y", "z");
    expect_error(g, NOPTS, PERFPRED_ERR_UNSUPPORTED,
                 NEEDLES("unk.onnx: node 'weird_1': unsupported op 'FancyOp' (domain '')",
                         "--allow-unknown"));
    assert_int_equal(pp_graph_infer_shapes(g, NULL, NULL), PERFPRED_ERR_UNSUPPORTED); /* no record */
    pp_shape_opts o = {.allow_unknown = 1};
    pp_err err = {0};
    assert_int_equal(pp_graph_infer_shapes(g, &o, &err), PERFPRED_OK);
    assert_shape(g, "y", "[4,8]");   /* the largest input */
    assert_shape(g, "z", "[4,8]");
    assert_int_equal(g->nodes[node_index(g, "weird_1")].unknown_op, 1);
    assert_int_equal(g->totals.n_unknown_ops, 1);
    pp_graph_free(g);

    g = G("dom.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 1, D(3));
    const char *in[] = {"x"}, *out[] = {"y"};
    pp_graph_add_node(g, "ms_op", "Gelu", "com.microsoft", in, 1, out, 1);
    expect_error(g, NOPTS, PERFPRED_ERR_UNSUPPORTED,
                 NEEDLES("node 'ms_op': unsupported op 'Gelu' (domain 'com.microsoft')"));
    pp_graph_free(g);
}

static void data_dependent_shapes_should_be_explicit_errors(void **state)
{
    pp_graph *g = G("nz.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(3, 3));
    N(g, "nonzero_3", "NonZero", "x", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("nz.onnx", "nonzero_3", "data-dependent"));
    pp_graph_free(g);

    g = G("nzc.onnx", 13);
    init_i(g, "c", PP_DT_INT64, 2, D(2, 3), D(1, 0, 2, 0, 0, 3));
    N(g, "nz", "NonZero", "c", "y");
    run_ok(g);
    assert_shape(g, "y", "[2,3]");
    assert_values(g, "y", "0,0,1,0,2,2");
    pp_graph_free(g);

    g = G("rs.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(3, 4));
    input(g, "shape", PP_DT_INT64, 1, D(2));
    N(g, "dyn", "Reshape", "x,shape", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("dyn", "data-dependent", "'shape'"));
    pp_graph_free(g);
}

static void size_overflow_should_be_an_error(void **state)
{
    pp_graph *g = G("ovf.onnx", 13);
    init_i(g, "s", PP_DT_INT64, 1, D(3), D((int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31));
    N(g, "huge", "ConstantOfShape", "s", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("huge", "overflow"));
    pp_graph_free(g);

    g = G("ovf2.onnx", 13);
    input(g, "x", PP_DT_FLOAT, 2, D(1 << 20, 1 << 20));
    init_i(g, "r", PP_DT_INT64, 1, D(2), D((int64_t)1 << 40, 1));
    N(g, "tile_big", "Tile", "x,r", "y");
    expect_error(g, NOPTS, PERFPRED_ERR_SHAPE, NEEDLES("tile_big"));
    pp_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pytorch_view_chain_should_fold_to_a_constant_shape),
        cmocka_unit_test(channel_shuffle_should_fold_its_shapes),
        cmocka_unit_test(window_mask_arithmetic_should_fold),
        cmocka_unit_test(scatter_nd_on_constants_should_fold),
        cmocka_unit_test(integer_arithmetic_should_fold_like_onnx),
        cmocka_unit_test(division_by_zero_in_constants_should_name_the_node),
        cmocka_unit_test(constant_node_should_work_without_the_loader),
        cmocka_unit_test(range_expand_tile_transpose_should_fold),
        cmocka_unit_test(slice_should_handle_negative_and_clamped_steps),
        cmocka_unit_test(squeeze_unsqueeze_should_take_axes_from_attr_or_input),
        cmocka_unit_test(split_should_take_sizes_from_attr_input_or_equal_parts),
        cmocka_unit_test(reshape_should_copy_zeros_infer_minus_one_and_honour_allowzero),
        cmocka_unit_test(concat_should_reject_mismatched_inputs),
        cmocka_unit_test(gather_family_should_follow_the_spec),
        cmocka_unit_test(pad_should_read_pads_from_attr_or_input),
        cmocka_unit_test(resize_should_use_scales_or_sizes),
        cmocka_unit_test(depth_space_and_flatten_should_follow_the_spec),
        cmocka_unit_test(conv_should_handle_pads_strides_dilations_and_auto_pad),
        cmocka_unit_test(conv_channel_mismatch_should_name_node_and_shapes),
        cmocka_unit_test(conv_transpose_should_handle_output_padding_and_output_shape),
        cmocka_unit_test(pooling_should_handle_ceil_mode_auto_pad_and_indices),
        cmocka_unit_test(matmul_should_broadcast_batches_and_handle_1d),
        cmocka_unit_test(broadcast_mismatch_should_name_both_shapes),
        cmocka_unit_test(legacy_broadcast_should_align_at_axis),
        cmocka_unit_test(normalizations_should_shape_their_optional_outputs),
        cmocka_unit_test(recurrent_and_einsum_should_follow_the_spec),
        cmocka_unit_test(reductions_should_honour_keepdims_and_axes_forms),
        cmocka_unit_test(unresolved_symbolic_dim_should_suggest_overrides),
        cmocka_unit_test(overrides_and_batch_should_resolve_inputs),
        cmocka_unit_test(unknown_override_name_should_list_known_inputs),
        cmocka_unit_test(weights_without_static_shape_should_fail),
        cmocka_unit_test(unknown_op_should_fail_unless_allowed),
        cmocka_unit_test(data_dependent_shapes_should_be_explicit_errors),
        cmocka_unit_test(size_overflow_should_be_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
