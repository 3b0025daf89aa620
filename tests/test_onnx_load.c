/* tests/test_onnx_load.c: the ONNX loader. Models are built here with the protobuf-c code (or as
 * hand-encoded bytes for malformed ones), loaded, and every field is checked in the IR; truncated,
 * random and mutated buffers must fail cleanly; weight bytes must not change what loading costs. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"

/* ---------------------------------------------------------------- model builder ----
 * Every allocation goes into one pool, freed by tb_free() at the end of a test. */
#define POOL_MAX 16384
static void *pool[POOL_MAX];
static int npool;

static void *tb(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    assert_non_null(p);
    assert_true(npool < POOL_MAX);
    pool[npool++] = p;
    return p;
}

static void tb_free(void)
{
    while (npool) free(pool[--npool]);
}

static char *tstr(const char *s)
{
    char *d = tb(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

/* "a,b,,c" -> {"a","b","","c"} */
static size_t split(const char *list, char ***out)
{
    size_t n = 0;
    if (!list) {
        *out = NULL;
        return 0;
    }
    n = 1;
    for (const char *p = list; *p; p++) n += *p == ',';
    char **v = tb(n * sizeof *v);
    const char *s = list;
    for (size_t i = 0; i < n; i++) {
        const char *e = strchr(s, ',');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        v[i] = tb(l + 1);
        memcpy(v[i], s, l);
        s = e ? e + 1 : s + l;
    }
    *out = v;
    return n;
}

static Onnx__TensorProto *mk_tensor(const char *name, int dt, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = tb(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = name ? tstr(name) : NULL;
    t->has_data_type = 1;
    t->data_type = dt;
    t->n_dims = (size_t)rank;
    t->dims = tb((size_t)rank * sizeof(int64_t));
    for (int d = 0; d < rank; d++) t->dims[d] = dims[d];
    return t;
}

static void set_float_data(Onnx__TensorProto *t, size_t n, const float *v)
{
    t->n_float_data = n;
    t->float_data = tb(n * sizeof(float));
    memcpy(t->float_data, v, n * sizeof(float));
}

static void set_int64_data(Onnx__TensorProto *t, size_t n, const int64_t *v)
{
    t->n_int64_data = n;
    t->int64_data = tb(n * sizeof(int64_t));
    memcpy(t->int64_data, v, n * sizeof(int64_t));
}

static void set_int32_data(Onnx__TensorProto *t, size_t n, const int32_t *v)
{
    t->n_int32_data = n;
    t->int32_data = tb(n * sizeof(int32_t));
    memcpy(t->int32_data, v, n * sizeof(int32_t));
}

static void set_raw(Onnx__TensorProto *t, const void *data, size_t len)
{
    t->has_raw_data = 1;
    t->raw_data.len = len;
    t->raw_data.data = tb(len);
    memcpy(t->raw_data.data, data, len);
}

/* rank -1: no shape. dims[d] < 0 with params[d] set: dim_param; without: an unset dim. */
static Onnx__ValueInfoProto *mk_vi(const char *name, int elem, int rank, const int64_t *dims,
                                   const char *const *params)
{
    Onnx__ValueInfoProto *vi = tb(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = tstr(name);
    Onnx__TypeProto *tp = tb(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = tb(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    if (rank < 0) return vi;
    Onnx__TensorShapeProto *sh = tb(sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)rank;
    sh->dim = tb((size_t)rank * sizeof *sh->dim);
    for (int d = 0; d < rank; d++) {
        Onnx__TensorShapeProto__Dimension *dm = tb(sizeof *dm);
        onnx__tensor_shape_proto__dimension__init(dm);
        if (dims[d] >= 0) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = dims[d];
        } else if (params && params[d]) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dm->dim_param = tstr(params[d]);
        }
        sh->dim[d] = dm;
    }
    tt->shape = sh;
    return vi;
}

#define MAX_ATTRS 8
static Onnx__NodeProto *mk_node(const char *name, const char *op, const char *ins,
                                const char *outs)
{
    Onnx__NodeProto *n = tb(sizeof *n);
    onnx__node_proto__init(n);
    n->name = name ? tstr(name) : NULL;
    n->op_type = tstr(op);
    n->n_input = split(ins, &n->input);
    n->n_output = split(outs, &n->output);
    n->attribute = tb(MAX_ATTRS * sizeof *n->attribute);
    return n;
}

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type)
{
    assert_true(n->n_attribute < MAX_ATTRS);
    Onnx__AttributeProto *a = tb(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = tstr(name);
    a->has_type = 1;
    a->type = (Onnx__AttributeProto__AttributeType)type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

static void attr_i(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(n, name, PP_ATTR_INT);
    a->has_i = 1;
    a->i = v;
}

static void attr_f(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = add_attr(n, name, PP_ATTR_FLOAT);
    a->has_f = 1;
    a->f = v;
}

static void attr_s(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = add_attr(n, name, PP_ATTR_STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)tstr(v);
    a->s.len = strlen(v);
}

static void attr_ints(Onnx__NodeProto *n, const char *name, size_t k, const int64_t *v)
{
    Onnx__AttributeProto *a = add_attr(n, name, PP_ATTR_INTS);
    a->n_ints = k;
    a->ints = tb(k * sizeof(int64_t));
    memcpy(a->ints, v, k * sizeof(int64_t));
}

static void attr_floats(Onnx__NodeProto *n, const char *name, size_t k, const float *v)
{
    Onnx__AttributeProto *a = add_attr(n, name, PP_ATTR_FLOATS);
    a->n_floats = k;
    a->floats = tb(k * sizeof(float));
    memcpy(a->floats, v, k * sizeof(float));
}

static void attr_strings(Onnx__NodeProto *n, const char *name, size_t k, const char *const *v)
{
    Onnx__AttributeProto *a = add_attr(n, name, PP_ATTR_STRINGS);
    a->n_strings = k;
    a->strings = tb(k * sizeof *a->strings);
    for (size_t i = 0; i < k; i++) {
        a->strings[i].data = (uint8_t *)tstr(v[i]);
        a->strings[i].len = strlen(v[i]);
    }
}

static void attr_t(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t)
{
    add_attr(n, name, PP_ATTR_TENSOR)->t = t;
}

#define MAX_ITEMS 64
typedef struct mb {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto *ops[4];
} mb;

static mb *mb_new(int64_t opset)
{
    mb *b = tb(sizeof *b);
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.producer_name = tstr("pp-test");
    b->m.graph = &b->g;
    b->g.name = tstr("g");
    b->g.node = tb(MAX_ITEMS * sizeof *b->g.node);
    b->g.initializer = tb(MAX_ITEMS * sizeof *b->g.initializer);
    b->g.input = tb(MAX_ITEMS * sizeof *b->g.input);
    b->g.output = tb(MAX_ITEMS * sizeof *b->g.output);
    b->g.value_info = tb(MAX_ITEMS * sizeof *b->g.value_info);
    b->m.opset_import = b->ops;
    Onnx__OperatorSetIdProto *o = tb(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = tstr("");
    o->has_version = 1;
    o->version = opset;
    b->ops[b->m.n_opset_import++] = o;
    return b;
}

static void mb_opset(mb *b, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = tb(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = tstr(domain);
    o->has_version = 1;
    o->version = version;
    assert_true(b->m.n_opset_import < 4);
    b->ops[b->m.n_opset_import++] = o;
}

static Onnx__NodeProto *mb_node(mb *b, const char *name, const char *op, const char *ins,
                                const char *outs)
{
    Onnx__NodeProto *n = mk_node(name, op, ins, outs);
    assert_true(b->g.n_node < MAX_ITEMS);
    b->g.node[b->g.n_node++] = n;
    return n;
}

static Onnx__TensorProto *mb_init(mb *b, const char *name, int dt, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = mk_tensor(name, dt, rank, dims);
    assert_true(b->g.n_initializer < MAX_ITEMS);
    b->g.initializer[b->g.n_initializer++] = t;
    return t;
}

static void mb_input(mb *b, Onnx__ValueInfoProto *vi) { b->g.input[b->g.n_input++] = vi; }
static void mb_output(mb *b, Onnx__ValueInfoProto *vi) { b->g.output[b->g.n_output++] = vi; }
static void mb_vinfo(mb *b, Onnx__ValueInfoProto *vi) { b->g.value_info[b->g.n_value_info++] = vi; }

static uint8_t *mb_pack(mb *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = tb(*len);
    assert_int_equal(onnx__model_proto__pack(&b->m, buf), *len);
    return buf;
}

static perfpred_status mb_load(mb *b, const char *name, pp_graph **g, pp_err *err)
{
    size_t len;
    uint8_t *buf = mb_pack(b, &len);
    pp_err_clear(err);
    return pp_onnx_load_buffer(name, buf, len, g, err);
}

static pp_graph *mb_load_ok(mb *b, const char *name)
{
    pp_graph *g = NULL;
    pp_err err = {0};
    perfpred_status st = mb_load(b, name, &g, &err);
    if (st != PERFPRED_OK) print_error("unexpected failure: %s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
    assert_non_null(g);
    return g;
}

/* Expects a failure with status st whose message names the file and contains every needle. */
static void mb_load_fails(mb *b, const char *name, perfpred_status st, const char *needle1,
                          const char *needle2)
{
    pp_graph *g = (pp_graph *)1;
    pp_err err = {0};
    perfpred_status got = mb_load(b, name, &g, &err);
    if (got != st) print_error("status %d, message: %s\n", (int)got, err.msg);
    assert_int_equal(got, st);
    assert_null(g);
    assert_non_null(strstr(err.msg, name));
    if (needle1 && !strstr(err.msg, needle1)) print_error("'%s' not in: %s\n", needle1, err.msg);
    if (needle1) assert_non_null(strstr(err.msg, needle1));
    if (needle2 && !strstr(err.msg, needle2)) print_error("'%s' not in: %s\n", needle2, err.msg);
    if (needle2) assert_non_null(strstr(err.msg, needle2));
}

static const pp_tensor *T(const pp_graph *g, const char *name)
{
    int i = pp_graph_find(g, name);
    if (i < 0) print_error("no tensor '%s'\n", name);
    assert_true(i >= 0);
    return &g->tensors[i];
}

static const pp_node *N(const pp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, name)) return &g->nodes[i];
    print_error("no node '%s'\n", name);
    fail();
    return NULL;
}

static void assert_dims(const pp_tensor *t, int rank, const int64_t *dims)
{
    assert_int_equal(t->rank, rank);
    for (int d = 0; d < rank; d++) assert_int_equal(t->dims[d], dims[d]);
}

/* x[1,3,16,16] -> Conv(W, B) -> LeakyRelu -> Reshape(shape) -> y; W is large (4800 elements),
 * B small in raw_data, shape small in int64_data. The Reshape node has no name. */
static mb *three_node_model(void)
{
    mb *b = mb_new(13);
    int64_t xd[] = {1, 3, 16, 16};
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 4, xd, NULL));
    int64_t wd[] = {64, 3, 5, 5};
    Onnx__TensorProto *w = mb_init(b, "W", PP_DT_FLOAT, 4, wd);
    float *wv = tb(4800 * sizeof(float));
    for (int i = 0; i < 4800; i++) wv[i] = (float)i;
    set_raw(w, wv, 4800 * sizeof(float));
    int64_t bd[] = {64};
    Onnx__TensorProto *bias = mb_init(b, "B", PP_DT_FLOAT, 1, bd);
    float bv[64];
    for (int i = 0; i < 64; i++) bv[i] = 0.5f * (float)i - 3.0f;
    set_raw(bias, bv, sizeof bv);
    int64_t sd[] = {2};
    Onnx__TensorProto *shape = mb_init(b, "shape", PP_DT_INT64, 1, sd);
    int64_t sv[] = {1, -1};
    set_int64_data(shape, 2, sv);
    Onnx__NodeProto *conv = mb_node(b, "conv1", "Conv", "x,W,B", "c");
    int64_t ks[] = {5, 5}, pads[] = {2, 2, 2, 2}, st[] = {1, 1};
    attr_ints(conv, "kernel_shape", 2, ks);
    attr_ints(conv, "pads", 4, pads);
    attr_ints(conv, "strides", 2, st);
    attr_i(conv, "group", 1);
    attr_s(conv, "auto_pad", "NOTSET");
    Onnx__NodeProto *lr = mb_node(b, "act", "LeakyRelu", "c", "r");
    attr_f(lr, "alpha", 0.25f);
    float fl[] = {1.5f, -2.0f};
    attr_floats(lr, "test_floats", 2, fl);
    const char *ss[] = {"alpha", "beta"};
    attr_strings(lr, "test_strings", 2, ss);
    mb_node(b, "", "Reshape", "r,shape", "y");
    mb_output(b, mk_vi("y", PP_DT_FLOAT, 2, (int64_t[]){1, 16384}, NULL));
    return b;
}

static void onnx_load_should_read_nodes_initializers_and_attributes(void **state)
{
    pp_graph *g = mb_load_ok(three_node_model(), "three.onnx");
    assert_string_equal(g->path, "three.onnx");
    assert_int_equal(g->ir_version, 8);
    assert_int_equal(g->opset, 13);
    assert_string_equal(g->producer_name, "pp-test");
    assert_int_equal(g->n_nodes, 3);
    assert_string_equal(g->nodes[0].name, "conv1");
    assert_string_equal(g->nodes[0].op_type, "Conv");
    assert_string_equal(g->nodes[0].domain, "");
    assert_string_equal(g->nodes[1].name, "act");
    assert_string_equal(g->nodes[2].name, "Reshape_2");
    assert_string_equal(g->nodes[2].op_type, "Reshape");

    const pp_node *c = &g->nodes[0];
    assert_int_equal(c->n_inputs, 3);
    assert_int_equal(c->inputs[0], pp_graph_find(g, "x"));
    assert_int_equal(c->inputs[1], pp_graph_find(g, "W"));
    assert_int_equal(c->inputs[2], pp_graph_find(g, "B"));
    assert_int_equal(c->n_outputs, 1);
    assert_int_equal(T(g, "c")->producer, 0);
    assert_int_equal(T(g, "c")->n_consumers, 1);
    assert_int_equal(c->n_attrs, 5);
    const pp_attr *a = pp_node_attr(c, "kernel_shape");
    assert_non_null(a);
    assert_int_equal(a->type, PP_ATTR_INTS);
    assert_int_equal(a->n, 2);
    assert_int_equal(a->ints[0], 5);
    assert_int_equal(a->ints[1], 5);
    a = pp_node_attr(c, "pads");
    assert_int_equal(a->n, 4);
    assert_int_equal(a->ints[3], 2);
    assert_int_equal(pp_node_attr_i(c, "group", -7), 1);
    assert_string_equal(pp_node_attr_s(c, "auto_pad", "?"), "NOTSET");
    const pp_node *l = &g->nodes[1];
    assert_rel_close(pp_node_attr_f(l, "alpha", 0), 0.25, 1e-12);
    a = pp_node_attr(l, "test_floats");
    assert_int_equal(a->type, PP_ATTR_FLOATS);
    assert_int_equal(a->n, 2);
    assert_rel_close(a->floats[0], 1.5, 1e-12);
    assert_rel_close(a->floats[1], -2.0, 1e-12);
    a = pp_node_attr(l, "test_strings");
    assert_int_equal(a->type, PP_ATTR_STRINGS);
    assert_int_equal(a->n, 2);
    assert_string_equal(a->strings[0], "alpha");
    assert_string_equal(a->strings[1], "beta");

    const pp_tensor *w = T(g, "W");
    assert_int_equal(w->flags & (PP_T_INITIALIZER | PP_T_WEIGHT | PP_T_CONST | PP_T_SHAPE_KNOWN),
                     PP_T_INITIALIZER | PP_T_WEIGHT | PP_T_SHAPE_KNOWN);
    assert_int_equal(w->dtype, PP_DT_FLOAT);
    assert_dims(w, 4, (int64_t[]){64, 3, 5, 5});
    assert_null(w->val.fval);
    assert_null(w->val.ival);
    const pp_tensor *bt = T(g, "B");
    assert_true(bt->flags & PP_T_CONST);
    assert_true(bt->flags & PP_T_WEIGHT);
    assert_int_equal(bt->val.n, 64);
    assert_non_null(bt->val.fval);
    assert_null(bt->val.ival);
    assert_rel_close(bt->val.fval[0], -3.0, 1e-12);
    assert_rel_close(bt->val.fval[63], 28.5, 1e-12);
    const pp_tensor *s = T(g, "shape");
    assert_true(s->flags & PP_T_CONST);
    assert_int_equal(s->dtype, PP_DT_INT64);
    assert_int_equal(s->val.rank, 1);
    assert_int_equal(s->val.dims[0], 2);
    assert_int_equal(s->val.ival[0], 1);
    assert_int_equal(s->val.ival[1], -1);

    const pp_tensor *x = T(g, "x");
    assert_int_equal(x->flags & (PP_T_GRAPH_INPUT | PP_T_WEIGHT | PP_T_SHAPE_KNOWN),
                     PP_T_GRAPH_INPUT | PP_T_SHAPE_KNOWN);
    assert_dims(x, 4, (int64_t[]){1, 3, 16, 16});
    assert_int_equal(g->n_inputs, 1);
    assert_int_equal(g->inputs[0], pp_graph_find(g, "x"));
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(g->outputs[0], pp_graph_find(g, "y"));
    assert_true(T(g, "y")->flags & PP_T_GRAPH_OUTPUT);
    assert_dims(T(g, "y"), 2, (int64_t[]){1, 16384});
    assert_int_equal(T(g, "r")->rank, -1);   /* no hint: unknown until shape inference */
    pp_graph_free(g);
    tb_free();
}

static void onnx_load_should_decode_every_value_encoding(void **state)
{
    mb *b = mb_new(13);
    int64_t d3[] = {3}, d2[] = {2}, d22[] = {2, 2};
    /* float16 in int32_data: 1.0, -2.0, 65504 (max), and a subnormal in raw_data */
    set_int32_data(mb_init(b, "h", PP_DT_FLOAT16, 1, d3), 3, (int32_t[]){0x3c00, 0xc000, 0x7bff});
    set_raw(mb_init(b, "hsub", PP_DT_FLOAT16, 1, (int64_t[]){1}), (uint8_t[]){0x01, 0x00}, 2);
    /* bfloat16 raw: 0x3fc0 = 1.5, 0xc040 = -3.0 */
    set_raw(mb_init(b, "bf", PP_DT_BFLOAT16, 1, d2), (uint8_t[]){0xc0, 0x3f, 0x40, 0xc0}, 4);
    set_raw(mb_init(b, "i8", PP_DT_INT8, 1, d3), (uint8_t[]){0xff, 0x05, 0x80}, 3);
    set_raw(mb_init(b, "u8", PP_DT_UINT8, 1, d2), (uint8_t[]){0xff, 0x07}, 2);
    set_raw(mb_init(b, "bool", PP_DT_BOOL, 1, d3), (uint8_t[]){1, 0, 1}, 3);
    set_raw(mb_init(b, "i32", PP_DT_INT32, 1, d2), (uint8_t[]){0xfe, 0xff, 0xff, 0xff, 1, 2, 0, 0}, 8);
    set_raw(mb_init(b, "i64", PP_DT_INT64, 1, (int64_t[]){1}),
            (uint8_t[]){0, 0, 0, 0, 1, 0, 0, 0}, 8);
    set_int32_data(mb_init(b, "u16", PP_DT_UINT16, 1, d2), 2, (int32_t[]){65535, 7});
    set_int32_data(mb_init(b, "i16", PP_DT_INT16, 1, d2), 2, (int32_t[]){-300, 300});
    Onnx__TensorProto *dd = mb_init(b, "f64", PP_DT_DOUBLE, 2, d22);
    dd->n_double_data = 4;
    dd->double_data = tb(4 * sizeof(double));
    dd->double_data[0] = 0.125;
    dd->double_data[3] = -1e300;
    Onnx__TensorProto *u64 = mb_init(b, "u32", PP_DT_UINT32, 1, d2);
    u64->n_uint64_data = 2;
    u64->uint64_data = tb(2 * sizeof(uint64_t));
    u64->uint64_data[0] = 4000000000u;
    u64->uint64_data[1] = 9;
    set_float_data(mb_init(b, "scalar", PP_DT_FLOAT, 0, NULL), 1, (float[]){2.5f});
    mb_init(b, "empty", PP_DT_INT64, 1, (int64_t[]){0});
    pp_graph *g = mb_load_ok(b, "values.onnx");
    assert_int_equal(g->n_nodes, 0);
    const pp_tensor *t = T(g, "h");
    assert_int_equal(t->dtype, PP_DT_FLOAT16);
    assert_rel_close(t->val.fval[0], 1.0, 0);
    assert_rel_close(t->val.fval[1], -2.0, 0);
    assert_rel_close(t->val.fval[2], 65504.0, 0);
    assert_rel_close(T(g, "hsub")->val.fval[0], ldexp(1.0, -24), 0);
    t = T(g, "bf");
    assert_rel_close(t->val.fval[0], 1.5, 0);
    assert_rel_close(t->val.fval[1], -3.0, 0);
    t = T(g, "i8");
    assert_int_equal(t->val.ival[0], -1);
    assert_int_equal(t->val.ival[1], 5);
    assert_int_equal(t->val.ival[2], -128);
    assert_int_equal(T(g, "u8")->val.ival[0], 255);
    t = T(g, "bool");
    assert_int_equal(t->val.ival[0], 1);
    assert_int_equal(t->val.ival[1], 0);
    assert_int_equal(t->val.ival[2], 1);
    t = T(g, "i32");
    assert_int_equal(t->val.ival[0], -2);
    assert_int_equal(t->val.ival[1], 513);
    assert_int_equal(T(g, "i64")->val.ival[0], 4294967296LL);
    assert_int_equal(T(g, "u16")->val.ival[0], 65535);
    assert_int_equal(T(g, "i16")->val.ival[0], -300);
    t = T(g, "f64");
    assert_int_equal(t->val.n, 4);
    assert_rel_close(t->val.fval[0], 0.125, 0);
    assert_rel_close(t->val.fval[3], -1e300, 0);
    assert_int_equal(T(g, "u32")->val.ival[0], 4000000000LL);
    t = T(g, "scalar");
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->val.n, 1);
    assert_true(t->flags & PP_T_SHAPE_KNOWN);
    assert_rel_close(t->val.fval[0], 2.5, 0);
    t = T(g, "empty");
    assert_true(t->flags & PP_T_CONST);
    assert_int_equal(t->val.n, 0);
    pp_graph_free(g);
    tb_free();
}

static mb *constant_model(void)
{
    mb *b = mb_new(13);
    Onnx__TensorProto *v = mk_tensor("", PP_DT_INT64, 1, (int64_t[]){3});
    set_int64_data(v, 3, (int64_t[]){4, 5, 6});
    attr_t(mb_node(b, "k_tensor", "Constant", NULL, "kt"), "value", v);
    attr_f(mb_node(b, "k_float", "Constant", NULL, "kf"), "value_float", 0.75f);
    attr_ints(mb_node(b, "k_ints", "Constant", NULL, "ki"), "value_ints", 2, (int64_t[]){-1, 9});
    attr_i(mb_node(b, "k_int", "Constant", NULL, "kn"), "value_int", 42);
    attr_floats(mb_node(b, "k_floats", "Constant", NULL, "kfs"), "value_floats", 1, (float[]){3.f});
    /* large: dims only, the payload is dropped before decoding */
    Onnx__TensorProto *big = mk_tensor(NULL, PP_DT_FLOAT, 2, (int64_t[]){100, 50});
    float *bv = tb(5000 * sizeof(float));
    set_float_data(big, 5000, bv);
    attr_t(mb_node(b, "k_big", "Constant", NULL, "kb"), "value", big);
    mb_node(b, "use", "Concat", "kt,ki", "cat");
    mb_output(b, mk_vi("cat", PP_DT_INT64, -1, NULL, NULL));
    return b;
}

static void onnx_load_should_materialize_constant_nodes(void **state)
{
    pp_graph *g = mb_load_ok(constant_model(), "const.onnx");
    assert_int_equal(g->n_nodes, 7);
    const pp_tensor *t = T(g, "kt");
    assert_int_equal(t->flags & (PP_T_CONST | PP_T_SHAPE_KNOWN | PP_T_WEIGHT),
                     PP_T_CONST | PP_T_SHAPE_KNOWN);
    assert_int_equal(t->dtype, PP_DT_INT64);
    assert_dims(t, 1, (int64_t[]){3});
    assert_int_equal(t->val.ival[2], 6);
    assert_true(t->producer >= 0);
    assert_string_equal(g->nodes[t->producer].name, "k_tensor");
    t = T(g, "kf");
    assert_int_equal(t->dtype, PP_DT_FLOAT);
    assert_int_equal(t->rank, 0);
    assert_rel_close(t->val.fval[0], 0.75, 0);
    t = T(g, "ki");
    assert_dims(t, 1, (int64_t[]){2});
    assert_int_equal(t->val.ival[0], -1);
    assert_int_equal(t->val.ival[1], 9);
    t = T(g, "kn");
    assert_int_equal(t->dtype, PP_DT_INT64);
    assert_int_equal(t->rank, 0);
    assert_int_equal(t->val.ival[0], 42);
    assert_rel_close(T(g, "kfs")->val.fval[0], 3.0, 0);
    t = T(g, "kb");
    assert_false(t->flags & PP_T_CONST);
    assert_true(t->flags & PP_T_SHAPE_KNOWN);
    assert_dims(t, 2, (int64_t[]){100, 50});
    const pp_attr *a = pp_node_attr(N(g, "k_big"), "value");
    assert_int_equal(a->type, PP_ATTR_TENSOR);
    assert_int_equal(a->t.n, 5000);
    assert_int_equal(a->t.dims[1], 50);
    assert_null(a->t.fval);
    a = pp_node_attr(N(g, "k_tensor"), "value");
    assert_int_equal(a->t.n, 3);
    assert_int_equal(a->t.ival[0], 4);
    pp_graph_free(g);
    tb_free();

    mb *b = mb_new(13);
    attr_s(mb_node(b, "k_str", "Constant", NULL, "s"), "value_string", "hi");
    mb_load_fails(b, "cstr.onnx", PERFPRED_ERR_UNSUPPORTED, "k_str", "value_string");
    tb_free();
    b = mb_new(13);
    mb_node(b, "k_none", "Constant", NULL, "s");
    mb_load_fails(b, "cnone.onnx", PERFPRED_ERR_PARSE, "k_none", NULL);
    tb_free();
    b = mb_new(13);
    Onnx__NodeProto *k = mb_node(b, "k_sparse", "Constant", NULL, "s");
    Onnx__AttributeProto *sa = add_attr(k, "sparse_value", 11);
    Onnx__SparseTensorProto *sp = tb(sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    sa->sparse_tensor = sp;
    mb_load_fails(b, "csparse.onnx", PERFPRED_ERR_UNSUPPORTED, "k_sparse", "sparse_value");
    tb_free();
}

static Onnx__StringStringEntryProto *kv(const char *k, const char *v)
{
    Onnx__StringStringEntryProto *e = tb(sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = tstr(k);
    e->value = tstr(v);
    return e;
}

static void onnx_load_should_take_shapes_of_external_data_without_opening_it(void **state)
{
    mb *b = mb_new(13);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 2, (int64_t[]){1, 512}, NULL));
    Onnx__TensorProto *w = mb_init(b, "fc.weight", PP_DT_FLOAT, 2, (int64_t[]){1000, 512});
    Onnx__TensorProto *bias = mb_init(b, "fc.bias", PP_DT_FLOAT, 1, (int64_t[]){1000});
    Onnx__TensorProto *ts[] = {w, bias};
    for (int i = 0; i < 2; i++) {
        ts[i]->has_data_location = 1;
        ts[i]->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        ts[i]->n_external_data = 3;
        ts[i]->external_data = tb(3 * sizeof *ts[i]->external_data);
        ts[i]->external_data[0] = kv("location", "no_such_dir/weights.bin");
        ts[i]->external_data[1] = kv("offset", i ? "2048000" : "0");
        ts[i]->external_data[2] = kv("length", i ? "4000" : "2048000");
    }
    Onnx__NodeProto *gemm = mb_node(b, "fc", "Gemm", "x,fc.weight,fc.bias", "y");
    attr_i(gemm, "transB", 1);
    mb_output(b, mk_vi("y", PP_DT_FLOAT, 2, (int64_t[]){1, 1000}, NULL));
    size_t len;
    uint8_t *buf = mb_pack(b, &len);
    const char *path = pp_test_tmpfile(buf, len, ".onnx");
    assert_non_null(path);
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    pp_graph *g = NULL;
    pp_err err = {0};
    perfpred_status st = pp_onnx_load(p, &g, &err);
    if (st) print_error("%s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
    const pp_tensor *t = T(g, "fc.weight");
    uint32_t want = PP_T_INITIALIZER | PP_T_WEIGHT | PP_T_EXTERNAL | PP_T_SHAPE_KNOWN;
    assert_int_equal(t->flags & (want | PP_T_CONST), want);
    assert_dims(t, 2, (int64_t[]){1000, 512});
    t = T(g, "fc.bias");   /* small, but its data is elsewhere: shape only */
    assert_int_equal(t->flags & (want | PP_T_CONST), want);
    assert_int_equal(t->dims[0], 1000);
    assert_int_equal(g->n_inputs, 1);
    pp_graph_free(g);
    unlink(p);
    tb_free();
}

static mb *noparams_model(void)
{
    mb *b = mb_new(13);
    const char *np[] = {"N", NULL, NULL, NULL};
    mb_input(b, mk_vi("input", PP_DT_FLOAT, 4, (int64_t[]){-1, 3, 32, 32}, np));
    mb_input(b, mk_vi("conv.weight", PP_DT_FLOAT, 4, (int64_t[]){8, 3, 3, 3}, NULL));
    mb_input(b, mk_vi("conv.bias", PP_DT_FLOAT, 1, (int64_t[]){8}, NULL));
    const char *bn[] = {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"};
    for (int i = 0; i < 4; i++) mb_input(b, mk_vi(bn[i], PP_DT_FLOAT, 1, (int64_t[]){8}, NULL));
    mb_input(b, mk_vi("fc.weight", PP_DT_FLOAT, 2, (int64_t[]){10, 8}, NULL));
    mb_input(b, mk_vi("fc.bias", PP_DT_FLOAT, 1, (int64_t[]){10}, NULL));
    mb_input(b, mk_vi("emb.weight", PP_DT_FLOAT, 2, (int64_t[]){100, 10}, NULL));
    mb_input(b, mk_vi("ids", PP_DT_INT64, 1, (int64_t[]){1}, NULL));           /* data: int */
    mb_input(b, mk_vi("mask", PP_DT_FLOAT, 2, (int64_t[]){1, 10}, NULL));      /* data: Relu */
    const char *sp[] = {"N", NULL};
    mb_input(b, mk_vi("bias2", PP_DT_FLOAT, 2, (int64_t[]){-1, 10}, sp));      /* data: symbolic */
    mb_input(b, mk_vi("scale", PP_DT_FLOAT, 1, (int64_t[]){10}, NULL));        /* weight of Mul */
    mb_input(b, mk_vi("unused", PP_DT_FLOAT, 1, (int64_t[]){10}, NULL));       /* no consumer */
    mb_input(b, mk_vi("shared", PP_DT_FLOAT, 1, (int64_t[]){10}, NULL));  /* weight via Identity */
    mb_input(b, mk_vi("via_id", PP_DT_FLOAT, 1, (int64_t[]){10}, NULL));  /* data via Identity */
    mb_node(b, "conv", "Conv", "input,conv.weight,conv.bias", "c");
    mb_node(b, "bn", "BatchNormalization",
            "c,bn.weight,bn.bias,bn.running_mean,bn.running_var", "n");
    mb_node(b, "pool", "GlobalAveragePool", "n", "p");
    mb_node(b, "flat", "Flatten", "p", "f");
    mb_node(b, "fc", "Gemm", "f,fc.weight,fc.bias", "o");
    mb_node(b, "add", "Add", "o,mask", "o2");
    mb_node(b, "add2", "Add", "o2,bias2", "o3");
    mb_node(b, "mul", "Mul", "o3,scale", "out");
    mb_node(b, "emb", "Gather", "emb.weight,ids", "e");
    mb_node(b, "mr", "Relu", "mask", "m2");
    /* PyTorch's sharing of equal parameters: one input, several Identity nodes */
    mb_node(b, "id1", "Identity", "shared", "sa");
    mb_node(b, "id2", "Identity", "shared", "sb");
    mb_node(b, "id3", "Identity", "sb", "sc");
    mb_node(b, "fc2", "Gemm", "f,fc.weight,sa", "o_b");
    mb_node(b, "fc3", "Gemm", "f,fc.weight,sc", "o_c");
    mb_node(b, "id4", "Identity", "via_id", "vi");
    mb_node(b, "vr", "Relu", "vi", "vo");
    mb_output(b, mk_vi("o_b", PP_DT_FLOAT, 2, (int64_t[]){-1, 10}, sp));
    mb_output(b, mk_vi("o_c", PP_DT_FLOAT, 2, (int64_t[]){-1, 10}, sp));
    mb_output(b, mk_vi("vo", PP_DT_FLOAT, 1, (int64_t[]){10}, NULL));
    mb_output(b, mk_vi("out", PP_DT_FLOAT, 2, (int64_t[]){-1, 10}, sp));
    mb_output(b, mk_vi("e", PP_DT_FLOAT, 2, (int64_t[]){1, 10}, NULL));
    mb_output(b, mk_vi("m2", PP_DT_FLOAT, 2, (int64_t[]){1, 10}, NULL));
    return b;
}

static void onnx_load_should_flag_parameter_inputs_of_export_params_false(void **state)
{
    pp_graph *g = mb_load_ok(noparams_model(), "noparams.onnx");
    const char *weights[] = {"conv.weight", "conv.bias", "bn.weight", "bn.bias",
                             "bn.running_mean", "bn.running_var", "fc.weight", "fc.bias",
                             "emb.weight", "scale", "shared"};
    for (size_t i = 0; i < sizeof weights / sizeof *weights; i++) {
        const pp_tensor *t = T(g, weights[i]);
        if (!(t->flags & PP_T_WEIGHT)) print_error("%s is not a weight\n", weights[i]);
        assert_int_equal(t->flags & (PP_T_WEIGHT | PP_T_GRAPH_INPUT | PP_T_INITIALIZER),
                         PP_T_WEIGHT | PP_T_GRAPH_INPUT);
    }
    /* Identity outputs of a weight are weights (aliases), of data are data */
    assert_true(T(g, "sa")->flags & PP_T_WEIGHT);
    assert_true(T(g, "sc")->flags & PP_T_WEIGHT);
    assert_false(T(g, "vi")->flags & PP_T_WEIGHT);
    const char *data[] = {"input", "ids", "mask", "bias2", "unused", "via_id"};
    assert_int_equal(g->n_inputs, 6);
    for (int i = 0; i < 6; i++) {
        const pp_tensor *t = T(g, data[i]);
        if (t->flags & PP_T_WEIGHT) print_error("%s is a weight\n", data[i]);
        assert_false(t->flags & PP_T_WEIGHT);
        assert_int_equal(g->inputs[i], pp_graph_find(g, data[i]));   /* file order */
    }
    pp_graph_free(g);
    tb_free();

    /* the first input is the data even when it is static and feeds a MatMul */
    mb *b = mb_new(13);
    mb_input(b, mk_vi("a", PP_DT_FLOAT, 2, (int64_t[]){4, 4}, NULL));
    mb_input(b, mk_vi("b", PP_DT_FLOAT, 2, (int64_t[]){4, 4}, NULL));
    mb_node(b, "mm", "MatMul", "a,b", "y");
    mb_output(b, mk_vi("y", PP_DT_FLOAT, 2, (int64_t[]){4, 4}, NULL));
    g = mb_load_ok(b, "mm.onnx");
    assert_false(T(g, "a")->flags & PP_T_WEIGHT);
    assert_true(T(g, "b")->flags & PP_T_WEIGHT);
    assert_int_equal(g->n_inputs, 1);
    pp_graph_free(g);
    tb_free();

    /* an input that is also an initializer (keep_initializers_as_inputs) is a weight */
    b = mb_new(11);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 2, (int64_t[]){-1, 4}, (const char *[]){"batch", NULL}));
    mb_input(b, mk_vi("w", PP_DT_FLOAT, 2, (int64_t[]){4, 4}, NULL));
    set_float_data(mb_init(b, "w", PP_DT_FLOAT, 2, (int64_t[]){4, 4}), 16, (float[16]){0});
    mb_node(b, "mm", "MatMul", "x,w", "y");
    mb_output(b, mk_vi("y", PP_DT_FLOAT, -1, NULL, NULL));
    g = mb_load_ok(b, "kiai.onnx");
    assert_int_equal(T(g, "w")->flags & (PP_T_WEIGHT | PP_T_INITIALIZER | PP_T_GRAPH_INPUT),
                     PP_T_WEIGHT | PP_T_INITIALIZER | PP_T_GRAPH_INPUT);
    assert_int_equal(g->n_inputs, 1);
    assert_int_equal(g->inputs[0], pp_graph_find(g, "x"));
    pp_graph_free(g);
    tb_free();

    /* initializers listed first: the data is the first input without one, even when static */
    b = mb_new(13);
    mb_input(b, mk_vi("w", PP_DT_FLOAT, 2, (int64_t[]){4, 4}, NULL));
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 2, (int64_t[]){4, 4}, NULL));
    set_float_data(mb_init(b, "w", PP_DT_FLOAT, 2, (int64_t[]){4, 4}), 16, (float[16]){0});
    mb_node(b, "mm", "MatMul", "x,w", "y");
    g = mb_load_ok(b, "wfirst.onnx");
    assert_false(T(g, "x")->flags & PP_T_WEIGHT);
    assert_int_equal(g->n_inputs, 1);
    assert_int_equal(g->inputs[0], pp_graph_find(g, "x"));
    pp_graph_free(g);
    tb_free();
}

static void onnx_load_should_record_value_info_and_symbolic_dims(void **state)
{
    mb *b = mb_new(17);
    const char *xp[] = {"batch", NULL, NULL, "width"};
    /* dim 2 is set neither way: unknown without a name */
    mb_input(b, mk_vi("x", PP_DT_FLOAT16, 4, (int64_t[]){-1, 3, -1, -1}, xp));
    mb_input(b, mk_vi("norank", PP_DT_INT64, -1, NULL, NULL));
    mb_node(b, "r", "Relu", "x", "h");
    mb_node(b, "sh", "Shape", "norank", "s");
    mb_node(b, "t", "Transpose", "h", "y");
    const char *hp[] = {"batch", NULL, NULL, "width"};
    mb_vinfo(b, mk_vi("h", PP_DT_FLOAT16, 4, (int64_t[]){-1, 3, 7, -1}, hp));
    /* a value_info for a graph input does not override its declaration */
    mb_vinfo(b, mk_vi("x", PP_DT_FLOAT16, 4, (int64_t[]){2, 3, 5, 5}, NULL));
    mb_output(b, mk_vi("y", PP_DT_FLOAT16, 4, (int64_t[]){-1, 3, 7, -1}, hp));
    mb_output(b, mk_vi("s", PP_DT_INT64, 1, (int64_t[]){-1}, NULL));
    pp_graph *g = mb_load_ok(b, "sym.onnx");
    assert_int_equal(g->opset, 17);
    const pp_tensor *x = T(g, "x");
    assert_int_equal(x->dtype, PP_DT_FLOAT16);
    assert_dims(x, 4, (int64_t[]){-1, 3, -1, -1});
    assert_false(x->flags & PP_T_SHAPE_KNOWN);
    assert_string_equal(x->dim_param[0], "batch");
    assert_null(x->dim_param[1]);
    assert_null(x->dim_param[2]);
    assert_string_equal(x->dim_param[3], "width");
    const pp_tensor *nr = T(g, "norank");
    assert_int_equal(nr->dtype, PP_DT_INT64);
    assert_int_equal(nr->rank, -1);
    const pp_tensor *h = T(g, "h");
    assert_int_equal(h->dtype, PP_DT_FLOAT16);
    assert_dims(h, 4, (int64_t[]){-1, 3, 7, -1});
    assert_string_equal(h->dim_param[3], "width");
    assert_int_equal(h->flags & (PP_T_GRAPH_INPUT | PP_T_GRAPH_OUTPUT | PP_T_WEIGHT), 0);
    assert_int_equal(g->n_inputs, 2);
    assert_int_equal(g->n_outputs, 2);
    assert_int_equal(g->outputs[1], pp_graph_find(g, "s"));
    pp_graph_free(g);
    tb_free();
}

/* ---------------------------------------------------------------- malformed input ---- */

static void onnx_load_should_reject_every_truncation_of_a_model(void **state)
{
    size_t len;
    uint8_t *buf = mb_pack(three_node_model(), &len);
    for (size_t k = 0; k < len; k++) {
        /* a private copy of exactly k bytes, so ASan sees any read past the end */
        uint8_t *cut = malloc(k ? k : 1);
        memcpy(cut, buf, k);
        pp_graph *g = NULL;
        pp_err err = {0};
        perfpred_status st = pp_onnx_load_buffer("trunc.onnx", k ? cut : NULL, k, &g, &err);
        if (st != PERFPRED_ERR_PARSE) print_error("prefix %zu of %zu: %d %s\n", k, len, st, err.msg);
        assert_int_equal(st, PERFPRED_ERR_PARSE);
        assert_null(g);
        assert_non_null(strstr(err.msg, "trunc.onnx: not a valid ONNX model ("));
        free(cut);
    }
    pp_graph *g = NULL;
    pp_err err = {0};
    assert_int_equal(pp_onnx_load_buffer("trunc.onnx", buf, len, &g, &err), PERFPRED_OK);
    pp_graph_free(g);
    tb_free();
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void onnx_load_should_survive_random_and_mutated_bytes(void **state)
{
    /* pure noise: never a model */
    for (int it = 0; it < 3000; it++) {
        size_t n = 1 + rng() % 400;
        uint8_t *b = malloc(n);
        for (size_t i = 0; i < n; i++) b[i] = (uint8_t)rng();
        pp_graph *g = NULL;
        pp_err err = {0};
        perfpred_status st = pp_onnx_load_buffer("noise.onnx", b, n, &g, &err);
        if (st != PERFPRED_ERR_PARSE) print_error("iteration %d: %d %s\n", it, st, err.msg);
        assert_int_equal(st, PERFPRED_ERR_PARSE);
        assert_non_null(strstr(err.msg, "noise.onnx: not a valid ONNX model ("));
        free(b);
    }
    /* valid models with a few bytes changed: any outcome but a crash; failures name the file.
     * The models are mostly structure (W of the first one is stripped of its payload). */
    mb *models[3] = {three_node_model(), constant_model(), noparams_model()};
    models[0]->g.initializer[0]->has_raw_data = 0;
    models[1]->g.node[5]->attribute[0]->t->n_float_data = 0;   /* k_big */
    size_t lens[3];
    uint8_t *packed[3];
    for (int i = 0; i < 3; i++) packed[i] = mb_pack(models[i], &lens[i]);
    int ok = 0, failed = 0;
    for (int it = 0; it < 6000; it++) {
        size_t len = lens[it % 3];
        const uint8_t *model = packed[it % 3];
        uint8_t *b = malloc(len);
        memcpy(b, model, len);
        int flips = 1 + (int)(rng() % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = rng() % len;
            b[at] = (rng() & 1) ? (uint8_t)rng() : (uint8_t)(b[at] ^ (1u << (rng() % 8)));
        }
        pp_graph *g = NULL;
        pp_err err = {0};
        perfpred_status st = pp_onnx_load_buffer("mutant.onnx", b, len, &g, &err);
        if (st == PERFPRED_OK) {
            assert_non_null(g);
            ok++;
        } else {
            assert_null(g);
            assert_non_null(strstr(err.msg, "mutant.onnx"));
            failed++;
        }
        pp_graph_free(g);
        free(b);
    }
    print_message("mutants: %d loaded, %d rejected\n", ok, failed);
    assert_true(failed > 0);
    tb_free();
}

static void onnx_load_should_reject_files_that_are_not_onnx(void **state)
{
    struct {
        const char *what;
        const void *data;
        size_t len;
    } cases[4];
    const char *text = "This is a text file, not a model.\nSecond line: 1 2 3\n";
    cases[0].what = "text";
    cases[0].data = text;
    cases[0].len = strlen(text);
    cases[1].what = "empty";
    cases[1].data = "";
    cases[1].len = 0;
    /* a TensorProto and a GraphProto: valid protobufs of other ONNX messages */
    Onnx__TensorProto *tp = mk_tensor("t", PP_DT_FLOAT, 2, (int64_t[]){2, 3});
    set_float_data(tp, 6, (float[6]){1, 2, 3, 4, 5, 6});
    size_t tl = onnx__tensor_proto__get_packed_size(tp);
    uint8_t *tbuf = tb(tl);
    onnx__tensor_proto__pack(tp, tbuf);
    cases[2].what = "tensorproto";
    cases[2].data = tbuf;
    cases[2].len = tl;
    mb *b = three_node_model();
    size_t gl = onnx__graph_proto__get_packed_size(&b->g);
    uint8_t *gbuf = tb(gl);
    onnx__graph_proto__pack(&b->g, gbuf);
    cases[3].what = "graphproto";
    cases[3].data = gbuf;
    cases[3].len = gl;
    for (int i = 0; i < 4; i++) {
        const char *p = pp_test_tmpfile(cases[i].data, cases[i].len, ".onnx");
        assert_non_null(p);
        char path[4096];
        snprintf(path, sizeof path, "%s", p);
        pp_graph *g = (pp_graph *)1;
        pp_err err = {0};
        perfpred_status st = pp_onnx_load(path, &g, &err);
        if (st != PERFPRED_ERR_PARSE) print_error("%s: %d %s\n", cases[i].what, st, err.msg);
        assert_int_equal(st, PERFPRED_ERR_PARSE);
        assert_null(g);
        assert_non_null(strstr(err.msg, path));
        assert_non_null(strstr(err.msg, "not a valid ONNX model"));
        unlink(path);
    }
    pp_graph *g = NULL;
    pp_err err = {0};
    assert_int_equal(pp_onnx_load(PP_BINARY_DIR "/no_such_model.onnx", &g, &err), PERFPRED_ERR_IO);
    assert_non_null(strstr(err.msg, "no_such_model.onnx"));
    assert_int_equal(pp_onnx_load(PP_BINARY_DIR, &g, &err), PERFPRED_ERR_IO);
    assert_non_null(strstr(err.msg, "directory"));
    tb_free();
}

/* Files written by the onnx Python package (tools/make_malformed_onnx.py): an independent encoder. */
static void onnx_load_should_reject_malformed_fixtures_with_clear_errors(void **state)
{
    static const struct {
        const char *file;
        perfpred_status st;
        const char *needle;
    } cases[] = {
        {"control.onnx", PERFPRED_OK, NULL},
        {"opset18.onnx", PERFPRED_ERR_UNSUPPORTED, "opset 18"},
        {"opset6.onnx", PERFPRED_ERR_UNSUPPORTED, "opset 6"},
        {"if_subgraph.onnx", PERFPRED_ERR_UNSUPPORTED, "node 'my_if' (If)"},
        {"undeclared_domain.onnx", PERFPRED_ERR_PARSE, "node 'stray_node'"},
        {"string_constant.onnx", PERFPRED_ERR_UNSUPPORTED, "node 'str_const'"},
        {"rank9_initializer.onnx", PERFPRED_ERR_UNSUPPORTED, "initializer 'rank9'"},
        {"negative_dim.onnx", PERFPRED_ERR_PARSE, "initializer 'neg'"},
        {"short_raw_data.onnx", PERFPRED_ERR_PARSE, "initializer 'short'"},
        {"sparse_initializer.onnx", PERFPRED_ERR_UNSUPPORTED, "sparse"},
        {"cycle.onnx", PERFPRED_ERR_GRAPH, "cycle"},
        {"truncated.onnx", PERFPRED_ERR_PARSE, "not a valid ONNX model"},
        {"text.onnx", PERFPRED_ERR_PARSE, "not a valid ONNX model"},
        {"empty.onnx", PERFPRED_ERR_PARSE, "not a valid ONNX model"},
        {"tensorproto.onnx", PERFPRED_ERR_PARSE, "not a valid ONNX model"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char rel[256], path[4096];
        snprintf(rel, sizeof rel, "tests/fixtures/malformed/%s", cases[i].file);
        snprintf(path, sizeof path, "%s", pp_test_path(rel));
        pp_graph *g = NULL;
        pp_err err = {0};
        perfpred_status st = pp_onnx_load(path, &g, &err);
        if (st != cases[i].st) print_error("%s: status %d: %s\n", cases[i].file, st, err.msg);
        assert_int_equal(st, cases[i].st);
        if (st == PERFPRED_OK) {
            assert_int_equal(g->n_nodes, 3);
            assert_true(T(g, "W")->flags & PP_T_CONST);
            assert_rel_close(T(g, "W")->val.fval[15], 15.0, 0);
            assert_rel_close(T(g, "b")->val.fval[2], 2.0, 0);
            assert_string_equal(T(g, "x")->dim_param[0], "N");
            pp_graph_free(g);
            continue;
        }
        assert_null(g);
        assert_non_null(strstr(err.msg, path));
        if (!strstr(err.msg, cases[i].needle)) print_error("'%s' not in: %s\n", cases[i].needle, err.msg);
        assert_non_null(strstr(err.msg, cases[i].needle));
    }
}

static void onnx_load_should_check_opsets(void **state)
{
    mb *b = mb_new(18);
    mb_load_fails(b, "op18.onnx", PERFPRED_ERR_UNSUPPORTED, "opset 18", NULL);
    tb_free();
    b = mb_new(6);
    mb_load_fails(b, "op6.onnx", PERFPRED_ERR_UNSUPPORTED, "opset 6", NULL);
    tb_free();
    for (int v = 7; v <= 17; v += 10) {
        b = mb_new(v);
        pp_graph *g = mb_load_ok(b, "opok.onnx");
        assert_int_equal(g->opset, v);
        pp_graph_free(g);
        tb_free();
    }
    /* "ai.onnx" is the default domain; other domains are only recorded on their nodes */
    b = mb_new(12);
    b->ops[0]->domain = tstr("ai.onnx");
    mb_opset(b, "com.example", 1);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    Onnx__NodeProto *n = mb_node(b, "custom", "Frobnicate", "x", "y");
    n->domain = tstr("com.example");
    Onnx__NodeProto *r = mb_node(b, "relu", "Relu", "y", "z");
    r->domain = tstr("ai.onnx");
    mb_output(b, mk_vi("z", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    pp_graph *g = mb_load_ok(b, "dom.onnx");
    assert_int_equal(g->opset, 12);
    assert_string_equal(N(g, "custom")->domain, "com.example");
    assert_string_equal(N(g, "relu")->domain, "");
    pp_graph_free(g);
    tb_free();
    /* a node in a domain opset_import does not declare */
    b = mb_new(13);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    mb_node(b, "stray", "Thing", "x", "y")->domain = tstr("org.undeclared");
    mb_load_fails(b, "undecl.onnx", PERFPRED_ERR_PARSE, "stray", "org.undeclared");
    tb_free();
    /* no default-domain opset at all; the default domain twice */
    b = mb_new(13);
    b->ops[0]->domain = tstr("com.example");
    /* nothing in the default domain: a model of another operator set, which perfpred does not model */
    mb_load_fails(b, "noop.onnx", PERFPRED_ERR_UNSUPPORTED, "com.example", NULL);
    tb_free();
    b = mb_new(13);
    b->ops[0]->domain = tstr("com.example");
    mb_node(b, "relu", "Relu", "x", "y");
    /* a default-domain node without a default-domain import is malformed */
    mb_load_fails(b, "nodefault.onnx", PERFPRED_ERR_PARSE, "opset_import", NULL);
    tb_free();
    b = mb_new(13);
    mb_opset(b, "ai.onnx", 13);
    mb_load_fails(b, "twice.onnx", PERFPRED_ERR_PARSE, "twice", NULL);
    tb_free();
    /* no ir_version; no graph */
    b = mb_new(13);
    b->m.has_ir_version = 0;
    mb_load_fails(b, "noir.onnx", PERFPRED_ERR_PARSE, "ir_version", NULL);
    tb_free();
    b = mb_new(13);
    b->m.graph = NULL;
    mb_load_fails(b, "nograph.onnx", PERFPRED_ERR_PARSE, "no graph", NULL);
    tb_free();
}

static void onnx_load_should_reject_cycles_and_dangling_names(void **state)
{
    mb *b = mb_new(13);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    mb_node(b, "n1", "Add", "x,t2", "t1");
    mb_node(b, "n2", "Relu", "t1", "t2");
    mb_output(b, mk_vi("t2", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    mb_load_fails(b, "cycle.onnx", PERFPRED_ERR_GRAPH, "cycle", "'n1'");
    tb_free();
    b = mb_new(13);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    mb_node(b, "lonely", "Add", "x,ghost", "y");
    mb_output(b, mk_vi("y", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    mb_load_fails(b, "dangling.onnx", PERFPRED_ERR_GRAPH, "lonely", "ghost");
    tb_free();
    b = mb_new(13);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    mb_node(b, "p1", "Relu", "x", "y");
    mb_node(b, "p2", "Sigmoid", "x", "y");
    mb_load_fails(b, "dup.onnx", PERFPRED_ERR_GRAPH, "p2", "'y'");
    tb_free();
}

static void onnx_load_should_reject_subgraphs_naming_the_node(void **state)
{
    mb *b = mb_new(13);
    mb_input(b, mk_vi("c", PP_DT_BOOL, 0, NULL, NULL));
    Onnx__NodeProto *n = mb_node(b, "branchy", "If", "c", "y");
    Onnx__AttributeProto *a = add_attr(n, "then_branch", PP_ATTR_GRAPH);
    Onnx__GraphProto *sub = tb(sizeof *sub);
    onnx__graph_proto__init(sub);
    sub->name = tstr("then");
    a->g = sub;
    mb_load_fails(b, "if.onnx", PERFPRED_ERR_UNSUPPORTED, "branchy", "subgraph");
    tb_free();
    /* sparse initializers */
    b = mb_new(13);
    Onnx__SparseTensorProto *sp = tb(sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    sp->values = mk_tensor("sp", PP_DT_FLOAT, 1, (int64_t[]){1});
    b->g.sparse_initializer = tb(sizeof *b->g.sparse_initializer);
    b->g.sparse_initializer[0] = sp;
    b->g.n_sparse_initializer = 1;
    mb_load_fails(b, "sparse.onnx", PERFPRED_ERR_UNSUPPORTED, "sparse", NULL);
    tb_free();
    /* attribute without type */
    b = mb_new(13);
    mb_input(b, mk_vi("x", PP_DT_FLOAT, 1, (int64_t[]){4}, NULL));
    n = mb_node(b, "untyped", "Relu", "x", "y");
    add_attr(n, "mystery", PP_ATTR_INT)->has_type = 0;
    mb_load_fails(b, "untyped.onnx", PERFPRED_ERR_PARSE, "untyped", "mystery");
    tb_free();
}

static void onnx_load_should_reject_bad_tensors_naming_them(void **state)
{
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    mb *b = mb_new(13);
    set_float_data(mb_init(b, "rank9", PP_DT_FLOAT, 9, nine), 1, (float[]){1});
    mb_load_fails(b, "rank9.onnx", PERFPRED_ERR_UNSUPPORTED, "rank9", "9 dims");
    tb_free();
    b = mb_new(13);
    mb_init(b, "neg", PP_DT_FLOAT, 2, (int64_t[]){4, -2});
    mb_load_fails(b, "neg.onnx", PERFPRED_ERR_PARSE, "'neg'", "negative");
    tb_free();
    b = mb_new(13);
    mb_input(b, mk_vi("x9", PP_DT_FLOAT, 9, nine, NULL));
    mb_load_fails(b, "in9.onnx", PERFPRED_ERR_UNSUPPORTED, "x9", NULL);
    tb_free();
    b = mb_new(13);
    mb_input(b, mk_vi("xn", PP_DT_FLOAT, 2, (int64_t[]){3, 0}, NULL));
    b->g.input[0]->type->tensor_type->shape->dim[1]->dim_value = -5;
    mb_load_fails(b, "inneg.onnx", PERFPRED_ERR_PARSE, "xn", "negative");
    tb_free();
    b = mb_new(13);
    set_raw(mb_init(b, "short", PP_DT_FLOAT, 1, (int64_t[]){4}), (float[3]){0}, 12);
    mb_load_fails(b, "short.onnx", PERFPRED_ERR_PARSE, "'short'", "raw_data");
    tb_free();
    b = mb_new(13);
    set_int64_data(mb_init(b, "few", PP_DT_INT64, 1, (int64_t[]){3}), 2, (int64_t[]){1, 2});
    mb_load_fails(b, "few.onnx", PERFPRED_ERR_PARSE, "'few'", "int64_data");
    tb_free();
    b = mb_new(13);
    mb_init(b, "nodata", PP_DT_FLOAT, 1, (int64_t[]){2});
    mb_load_fails(b, "nodata.onnx", PERFPRED_ERR_PARSE, "'nodata'", NULL);
    tb_free();
    b = mb_new(13);
    mb_init(b, "untyped", PP_DT_FLOAT, 1, (int64_t[]){0})->has_data_type = 0;
    mb_load_fails(b, "notype.onnx", PERFPRED_ERR_PARSE, "'untyped'", "data type");
    tb_free();
    b = mb_new(13);
    mb_init(b, "f8", 17, 1, (int64_t[]){0});
    mb_load_fails(b, "f8.onnx", PERFPRED_ERR_UNSUPPORTED, "'f8'", "17");
    tb_free();
    b = mb_new(13);
    Onnx__TensorProto *both = mb_init(b, "both", PP_DT_FLOAT, 1, (int64_t[]){1});
    set_float_data(both, 1, (float[]){1});
    set_raw(both, (float[]){1}, 4);
    mb_load_fails(b, "both.onnx", PERFPRED_ERR_PARSE, "'both'", NULL);
    tb_free();
    b = mb_new(13);
    mb_init(b, "", PP_DT_FLOAT, 1, (int64_t[]){0});
    mb_load_fails(b, "anon.onnx", PERFPRED_ERR_PARSE, "initializer #0", NULL);
    tb_free();
    b = mb_new(13);
    Onnx__ValueInfoProto *seq = mk_vi("s", PP_DT_FLOAT, -1, NULL, NULL);
    seq->type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    Onnx__TypeProto__Sequence *sq = tb(sizeof *sq);
    onnx__type_proto__sequence__init(sq);
    seq->type->sequence_type = sq;
    mb_input(b, seq);
    mb_load_fails(b, "seq.onnx", PERFPRED_ERR_UNSUPPORTED, "'s'", "sequence");
    tb_free();
}

/* ---------------------------------------------------------------- cost of weights ---- */

/* The three-node model plus a large Constant and a training_info graph with its own weights;
 * without payloads, it is what the pre-pass must turn the full model into. */
static mb *strip_model(int with_payloads)
{
    mb *b = three_node_model();
    if (!with_payloads) b->g.initializer[0]->has_raw_data = 0;   /* W: 4800 elements */
    Onnx__TensorProto *big = mk_tensor(NULL, PP_DT_FLOAT, 1, (int64_t[]){5000});
    if (with_payloads) set_float_data(big, 5000, tb(5000 * sizeof(float)));
    attr_t(mb_node(b, "k_big", "Constant", NULL, "kb"), "value", big);
    if (with_payloads) {
        Onnx__TrainingInfoProto *ti = tb(sizeof *ti);
        onnx__training_info_proto__init(ti);
        Onnx__GraphProto *init = tb(sizeof *init);
        onnx__graph_proto__init(init);
        init->n_initializer = 1;
        init->initializer = tb(sizeof *init->initializer);
        init->initializer[0] = mk_tensor("W_init", PP_DT_FLOAT, 1, (int64_t[]){3});
        set_float_data(init->initializer[0], 3, (float[]){1, 2, 3});
        ti->initialization = init;
        b->m.n_training_info = 1;
        b->m.training_info = tb(sizeof *b->m.training_info);
        b->m.training_info[0] = ti;
    }
    return b;
}

static void strip_should_drop_exactly_the_large_payloads(void **state)
{
    size_t lw, ln;
    uint8_t *with = mb_pack(strip_model(1), &lw);
    uint8_t *without = mb_pack(strip_model(0), &ln);
    assert_true(lw > ln + 4 * (4800 + 5000));
    uint8_t *out = NULL;
    size_t lo = 0;
    pp_err err = {0};
    /* byte for byte what protobuf-c writes for the model without payloads: the lengths of the
     * enclosing tensor, attribute, node, graph messages are re-encoded */
    assert_int_equal(pp_onnx_strip_payloads("s.onnx", with, lw, &out, &lo, &err), PERFPRED_OK);
    assert_int_equal(lo, ln);
    assert_memory_equal(out, without, ln);
    free(out);
    /* small tensors (B, shape) keep their values: nothing to drop in the stripped model */
    assert_int_equal(pp_onnx_strip_payloads("s.onnx", without, ln, &out, &lo, &err), PERFPRED_OK);
    assert_int_equal(lo, ln);
    assert_memory_equal(out, without, ln);
    free(out);
    /* a truncated model is an error, not a shorter copy */
    assert_int_equal(pp_onnx_strip_payloads("s.onnx", with, lw - 1, &out, &lo, &err),
                     PERFPRED_ERR_PARSE);
    assert_null(out);
    assert_non_null(strstr(err.msg, "s.onnx: not a valid ONNX model"));
    tb_free();
}
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The same graph with 64 MB of weights inline and with none: the arena, which holds everything a
 * loaded model keeps, must not see the difference. Time is printed, never asserted. */
static void onnx_load_should_not_scale_with_weight_bytes(void **state)
{
    const size_t nw = 16u * 1024 * 1024;   /* 16M floats = 64 MB */
    double secs[2];
    size_t used[2];
    for (int with = 1; with >= 0; with--) {
        mb *b = three_node_model();
        Onnx__TensorProto *big = mb_init(b, "big", PP_DT_FLOAT, 2, (int64_t[]){4096, 4096});
        if (with) {
            big->has_raw_data = 1;
            big->raw_data.len = nw * sizeof(float);
            big->raw_data.data = tb(nw * sizeof(float));
            for (size_t i = 0; i < nw * sizeof(float); i += 4096) big->raw_data.data[i] = (uint8_t)i;
        }
        mb_input(b, mk_vi("x2", PP_DT_FLOAT, 2, (int64_t[]){-1, 4096}, (const char *[]){"n", 0}));
        mb_node(b, "fc", "MatMul", "x2,big", "y2");
        mb_output(b, mk_vi("y2", PP_DT_FLOAT, 2, (int64_t[]){-1, 4096}, (const char *[]){"n", 0}));
        size_t len;
        uint8_t *buf = mb_pack(b, &len);
        if (with) assert_true(len > nw * sizeof(float));
        else assert_true(len < 100000);
        const char *p = pp_test_tmpfile(buf, len, with ? "_w.onnx" : "_n.onnx");
        assert_non_null(p);
        char path[4096];
        snprintf(path, sizeof path, "%s", p);
        tb_free();
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            pp_graph *g = NULL;
            pp_err err = {0};
            double t0 = now_s();
            perfpred_status st = pp_onnx_load(path, &g, &err);
            double t1 = now_s();
            if (st) print_error("%s\n", err.msg);
            assert_int_equal(st, PERFPRED_OK);
            if (t1 - t0 < best) best = t1 - t0;
            const pp_tensor *t = T(g, "big");
            assert_dims(t, 2, (int64_t[]){4096, 4096});
            assert_int_equal(t->flags & (PP_T_WEIGHT | PP_T_CONST), PP_T_WEIGHT);
            used[with] = pp_arena_used(g->arena);
            pp_graph_free(g);
        }
        secs[with] = best;
        unlink(path);
    }
    print_message("load with 64 MB of weights: %.3f ms, without: %.3f ms, ratio %.2f; arena %zu vs "
                  "%zu bytes\n",
                  secs[1] * 1e3, secs[0] * 1e3, secs[1] / secs[0], used[1], used[0]);
    size_t diff = used[1] > used[0] ? used[1] - used[0] : used[0] - used[1];
    assert_true(diff <= 4096);
}

/* ---------------------------------------------------------------- real exports ---- */
static void onnx_load_should_load_torchvision_resnet18(void **state)
{
    const char *path = pp_test_path("tests/fixtures/models/resnet18.onnx");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        print_message("tests/fixtures/models/resnet18.onnx not present: skipped\n");
        skip();
    }
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    pp_graph *g = NULL;
    pp_err err = {0};
    perfpred_status st = pp_onnx_load(p, &g, &err);
    if (st) print_error("%s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
    assert_true(g->n_nodes > 0);
    int convs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Conv")) continue;
        convs++;
        assert_true(n->n_inputs >= 2);
        const pp_tensor *w = &g->tensors[n->inputs[1]];
        if (!(w->flags & PP_T_WEIGHT)) print_error("%s: weight %s not flagged\n", n->name, w->name);
        assert_true(w->flags & PP_T_WEIGHT);
        assert_int_equal(w->rank, 4);
        assert_true(w->flags & PP_T_SHAPE_KNOWN);
    }
    assert_int_equal(convs, 20);   /* stem, 16 in the basic blocks, 3 downsample projections */
    assert_true(g->n_inputs >= 1);
    assert_false(g->tensors[g->inputs[0]].flags & PP_T_WEIGHT);
    pp_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(onnx_load_should_read_nodes_initializers_and_attributes),
        cmocka_unit_test(onnx_load_should_decode_every_value_encoding),
        cmocka_unit_test(onnx_load_should_materialize_constant_nodes),
        cmocka_unit_test(onnx_load_should_take_shapes_of_external_data_without_opening_it),
        cmocka_unit_test(onnx_load_should_flag_parameter_inputs_of_export_params_false),
        cmocka_unit_test(onnx_load_should_record_value_info_and_symbolic_dims),
        cmocka_unit_test(onnx_load_should_reject_every_truncation_of_a_model),
        cmocka_unit_test(onnx_load_should_survive_random_and_mutated_bytes),
        cmocka_unit_test(onnx_load_should_reject_files_that_are_not_onnx),
        cmocka_unit_test(onnx_load_should_reject_malformed_fixtures_with_clear_errors),
        cmocka_unit_test(onnx_load_should_check_opsets),
        cmocka_unit_test(onnx_load_should_reject_cycles_and_dangling_names),
        cmocka_unit_test(onnx_load_should_reject_subgraphs_naming_the_node),
        cmocka_unit_test(onnx_load_should_reject_bad_tensors_naming_them),
        cmocka_unit_test(strip_should_drop_exactly_the_large_payloads),
        cmocka_unit_test(onnx_load_should_not_scale_with_weight_bytes),
        cmocka_unit_test(onnx_load_should_load_torchvision_resnet18),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
