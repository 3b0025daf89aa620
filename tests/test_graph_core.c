/* tests/test_graph_core.c: IR building, name lookup, linking (dangling names, cycles, order). */
#include "tests/helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"

static pp_graph *chain(void)
{
    pp_graph *g = pp_graph_new("chain.onnx");
    int x = pp_graph_tensor(g, "x");
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    /* added out of order: c consumes b's output, b consumes a's */
    const char *ci[] = {"b_out"}, *co[] = {"c_out"};
    const char *bi[] = {"a_out"}, *bo[] = {"b_out"};
    const char *ai[] = {"x"}, *ao[] = {"a_out"};
    pp_graph_add_node(g, "c", "Relu", "", ci, 1, co, 1);
    pp_graph_add_node(g, "b", "Relu", "", bi, 1, bo, 1);
    pp_graph_add_node(g, "a", "Relu", "", ai, 1, ao, 1);
    return g;
}

static void link_should_sort_nodes_topologically(void **state)
{
    pp_graph *g = chain();
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    assert_string_equal(g->nodes[0].name, "a");
    assert_string_equal(g->nodes[1].name, "b");
    assert_string_equal(g->nodes[2].name, "c");
    assert_int_equal(g->tensors[pp_graph_find(g, "b_out")].producer, 1);
    assert_int_equal(g->tensors[pp_graph_find(g, "a_out")].n_consumers, 1);
    pp_graph_free(g);
}

static void link_should_reject_dangling_input_naming_node(void **state)
{
    pp_graph *g = pp_graph_new("d.onnx");
    const char *in[] = {"nowhere"}, *out[] = {"y"};
    pp_graph_add_node(g, "lonely", "Relu", "", in, 1, out, 1);
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_ERR_GRAPH);
    assert_non_null(strstr(err.msg, "d.onnx"));
    assert_non_null(strstr(err.msg, "lonely"));
    assert_non_null(strstr(err.msg, "nowhere"));
    pp_graph_free(g);
}

static void link_should_reject_cycles(void **state)
{
    pp_graph *g = pp_graph_new("cyc.onnx");
    const char *i1[] = {"t2"}, *o1[] = {"t1"}, *i2[] = {"t1"}, *o2[] = {"t2"};
    pp_graph_add_node(g, "n1", "Relu", "", i1, 1, o1, 1);
    pp_graph_add_node(g, "n2", "Relu", "", i2, 1, o2, 1);
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_ERR_GRAPH);
    assert_non_null(strstr(err.msg, "cycle"));
    pp_graph_free(g);
}

static void link_should_reject_two_producers(void **state)
{
    pp_graph *g = pp_graph_new("dup.onnx");
    int x = pp_graph_tensor(g, "x");
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    const char *i[] = {"x"}, *o[] = {"y"};
    pp_graph_add_node(g, "p1", "Relu", "", i, 1, o, 1);
    pp_graph_add_node(g, "p2", "Relu", "", i, 1, o, 1);
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_ERR_GRAPH);
    assert_non_null(strstr(err.msg, "p2"));
    pp_graph_free(g);
}

static void tensor_lookup_should_survive_many_names(void **state)
{
    pp_graph *g = pp_graph_new(NULL);
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(pp_graph_tensor(g, name), i);
    }
    for (int i = 4999; i >= 0; i--) {
        snprintf(name, sizeof name, "t%d", i);
        assert_int_equal(pp_graph_find(g, name), i);
    }
    assert_int_equal(pp_graph_find(g, "t5000"), -1);
    pp_graph_free(g);
}

/* pp_graph_tensor finds and inserts in one probe: asking again for an earlier name, right as the
 * index grows (256 slots, then doubling) and among the collisions of thousands of names, must
 * give its index back and create nothing. */
static void tensor_should_return_the_existing_index_across_growth(void **state)
{
    pp_graph *g = pp_graph_new(NULL);
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(pp_graph_tensor(g, name), i);
        snprintf(name, sizeof name, "n%d", i / 2);
        assert_int_equal(pp_graph_tensor(g, name), i / 2);
        assert_int_equal(g->n_tensors, i + 1);
    }
    for (int i = 0; i < 3000; i += 7) {
        snprintf(name, sizeof name, "n%d", (i * 1237) % 3000);
        assert_int_equal(pp_graph_tensor(g, name), (i * 1237) % 3000);
    }
    assert_int_equal(g->n_tensors, 3000);
    pp_graph_free(g);
}

/* Nodes by tensor index: the same graph as by names; an index that names no tensor is refused. */
static void add_node_idx_should_build_what_add_node_builds(void **state)
{
    pp_graph *g = pp_graph_new("idx.onnx");
    int x = pp_graph_tensor(g, "x"), a = pp_graph_tensor(g, "a_out");
    int b = pp_graph_tensor(g, "b_out"), c = pp_graph_tensor(g, "c_out");
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    int bad = 99, omitted[2] = {b, -1};
    assert_int_equal(pp_graph_add_node_idx(g, "c", "Relu", "", &b, 1, &c, 1), 0);
    assert_int_equal(pp_graph_add_node_idx(g, "b", "Relu", "", &a, 1, &b, 1), 1);
    assert_int_equal(pp_graph_add_node_idx(g, "a", "Relu", "", &x, 1, &a, 1), 2);
    assert_int_equal(pp_graph_add_node_idx(g, "z", "Relu", "", &bad, 1, &c, 1), -1);
    assert_int_equal(g->n_nodes, 3);
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    pp_graph *h = chain();
    assert_int_equal(pp_graph_link(h, &err), PERFPRED_OK);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(g->nodes[i].name, h->nodes[i].name);
        assert_string_equal(g->nodes[i].op_type, h->nodes[i].op_type);
        assert_string_equal(g->tensors[g->nodes[i].inputs[0]].name,
                            h->tensors[h->nodes[i].inputs[0]].name);
        assert_string_equal(g->tensors[g->nodes[i].outputs[0]].name,
                            h->tensors[h->nodes[i].outputs[0]].name);
    }
    /* an omitted optional input stays -1 */
    int n = pp_graph_add_node_idx(g, "opt", "Clip", "", omitted, 2, NULL, 0);
    assert_true(n >= 0);
    assert_int_equal(g->nodes[n].inputs[1], -1);
    pp_graph_free(g);
    pp_graph_free(h);
}

/* After pp_graph_reserve, building up to the reserved counts moves neither array. */
static void reserve_should_keep_tensors_and_nodes_in_place(void **state)
{
    pp_graph *g = pp_graph_new(NULL);
    assert_int_equal(pp_graph_reserve(g, 1000, 400), 0);
    const pp_tensor *t0 = g->tensors;
    const pp_node *n0 = g->nodes;
    char name[32];
    int prev = pp_graph_tensor(g, "in");
    for (int i = 1; i + 1 < 1000; i += 2) {
        snprintf(name, sizeof name, "t%d", i);
        int t = pp_graph_tensor(g, name);
        assert_int_equal(t, i);
        if (g->n_nodes < 400)
            assert_true(pp_graph_add_node_idx(g, NULL, "Relu", "", &prev, 1, &t, 1) >= 0);
        snprintf(name, sizeof name, "u%d", i);
        prev = pp_graph_tensor(g, name);
    }
    assert_int_equal(g->n_tensors, 999);
    assert_ptr_equal(g->tensors, t0);
    assert_ptr_equal(g->nodes, n0);
    assert_int_equal(pp_graph_reserve(g, -1, 0), -1);
    pp_graph_free(g);
}

/* A graph built in order keeps its order, producers and consumers. */
static void link_should_keep_a_sorted_graph_as_it_is(void **state)
{
    pp_graph *g = pp_graph_new("sorted.onnx");
    int x = pp_graph_tensor(g, "x");
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    const char *ai[] = {"x"}, *ao[] = {"a_out"}, *bi[] = {"a_out", "x"}, *bo[] = {"b_out"};
    pp_graph_add_node(g, "a", "Relu", "", ai, 1, ao, 1);
    pp_graph_add_node(g, "b", "Add", "", bi, 2, bo, 1);
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    assert_string_equal(g->nodes[0].name, "a");
    assert_string_equal(g->nodes[1].name, "b");
    assert_int_equal(g->tensors[pp_graph_find(g, "a_out")].producer, 0);
    assert_int_equal(g->tensors[pp_graph_find(g, "b_out")].producer, 1);
    assert_int_equal(g->tensors[x].n_consumers, 2);
    pp_graph_free(g);
}

/* Two branches as an export writes them, each run to its end before the next (conv, relu; conv,
 * relu; then the join): the order the forward ran them in, kept. A breadth-first sort would have
 * put both convs before either relu (and kept both convs' outputs live at once). */
static void link_should_keep_the_order_a_forward_ran(void **state)
{
    pp_graph *g = pp_graph_new("branches.onnx");
    int x = pp_graph_tensor(g, "x");
    g->tensors[x].flags |= PP_T_GRAPH_INPUT;
    const char *x1[] = {"x"};
    const char *ca[] = {"ca"}, *ra[] = {"ra"}, *cb[] = {"cb"}, *rb[] = {"rb"}, *y[] = {"y"};
    const char *join[] = {"ra", "rb"};
    pp_graph_add_node(g, "conv_a", "Neg", "", x1, 1, ca, 1);
    pp_graph_add_node(g, "relu_a", "Relu", "", ca, 1, ra, 1);
    pp_graph_add_node(g, "conv_b", "Neg", "", x1, 1, cb, 1);
    pp_graph_add_node(g, "relu_b", "Relu", "", cb, 1, rb, 1);
    pp_graph_add_node(g, "add", "Add", "", join, 2, y, 1);
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    const char *want[] = {"conv_a", "relu_a", "conv_b", "relu_b", "add"};
    for (int i = 0; i < 5; i++) assert_string_equal(g->nodes[i].name, want[i]);
    assert_int_equal(g->tensors[pp_graph_find(g, "rb")].producer, 3);
    pp_graph_free(g);
}

/* Attributes added one by one (the array grows by doubling) keep every earlier one; a node whose
 * array was sized exactly by its maker (cap_attrs 0, as the ONNX loader leaves it) is copied,
 * never written past its end. */
static void add_attr_should_keep_earlier_attributes_as_it_grows(void **state)
{
    pp_graph *g = pp_graph_new(NULL);
    int x = pp_graph_tensor(g, "x"), y = pp_graph_tensor(g, "y");
    int n = pp_graph_add_node_idx(g, "n", "Custom", "", &x, 1, &y, 1);
    char name[16];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "a%d", i);
        pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_INT);
        assert_non_null(a);
        a->i = 100 + i;
        for (int j = 0; j <= i; j++) {
            snprintf(name, sizeof name, "a%d", j);
            assert_int_equal(pp_node_attr_i(&g->nodes[n], name, -1), 100 + j);
        }
    }
    assert_true(g->nodes[n].cap_attrs >= 20);
    /* an exact array of 2 made elsewhere, then one more through pp_node_add_attr */
    int m = pp_graph_add_node_idx(g, "m", "Custom", "", &y, 1, NULL, 0);
    pp_attr *exact = pp_arena_array(g->arena, 3, sizeof *exact); /* 3: a guard after 2 */
    exact[0].name = "p";
    exact[0].type = PP_ATTR_INT;
    exact[0].i = 1;
    exact[1].name = "q";
    exact[1].type = PP_ATTR_INT;
    exact[1].i = 2;
    exact[2].name = "guard";
    g->nodes[m].attrs = exact;
    g->nodes[m].n_attrs = 2;
    pp_attr *r = pp_node_add_attr(g, m, "r", PP_ATTR_INT);
    assert_non_null(r);
    r->i = 3;
    assert_true(r != &exact[2]);
    assert_string_equal(exact[2].name, "guard");
    assert_int_equal(pp_node_attr_i(&g->nodes[m], "p", -1), 1);
    assert_int_equal(pp_node_attr_i(&g->nodes[m], "q", -1), 2);
    assert_int_equal(pp_node_attr_i(&g->nodes[m], "r", -1), 3);
    pp_graph_free(g);
}

static void tensor_bytes_should_be_unknown_until_all_dims_are(void **state)
{
    pp_graph *g = pp_graph_new(NULL);
    int ia = pp_graph_tensor(g, "a");
    pp_tensor *t = &g->tensors[ia];
    int64_t d[] = {2, -1, 4};
    pp_tensor_set_shape(t, PP_DT_FLOAT, 3, d);
    assert_int_equal(pp_tensor_bytes(t), -1);
    assert_false(t->flags & PP_T_SHAPE_KNOWN);
    d[1] = 3;
    pp_tensor_set_shape(t, PP_DT_FLOAT16, 3, d);
    assert_int_equal(pp_tensor_bytes(t), 2 * 3 * 4 * 2);
    assert_true(t->flags & PP_T_SHAPE_KNOWN);
    pp_graph_free(g);
}

/* pp_read_file ends what it read with a NUL byte, also when the file fills its first buffer */
static void read_file_should_end_with_a_nul(void **state)
{
    (void)state;
    static char big[1 << 16];
    memset(big, 'a', sizeof big);
    const size_t sizes[3] = {0, 5, sizeof big};
    for (int i = 0; i < 3; i++) {
        const char *tmp = pp_test_tmpfile(big, sizes[i], ".txt");
        assert_non_null(tmp);
        char path[4096];
        snprintf(path, sizeof path, "%s", tmp);
        uint8_t *buf;
        size_t len;
        pp_err err = {0};
        assert_int_equal(pp_read_file(path, &buf, &len, &err), PERFPRED_OK);
        unlink(path);
        assert_int_equal(len, sizes[i]);
        assert_int_equal(buf[len], 0);
        assert_int_equal(strlen((const char *)buf), sizes[i]);
        free(buf);
    }
}

/* "a,bb,,c" walks as a, bb, (empty), c; an empty list has no items */
static void list_items_should_walk_commas(void **state)
{
    (void)state;
    const char *want[4] = {"a", "bb", "", "c"};
    const char *c = "a,bb,,c", *q;
    size_t len;
    int n = 0;
    while ((q = pp_list_item(&c, &len))) {
        assert_true(n < 4);
        assert_int_equal(len, strlen(want[n]));
        assert_memory_equal(q, want[n], len);
        n++;
    }
    assert_int_equal(n, 4);
    c = "";
    assert_null(pp_list_item(&c, &len));
    c = "solo";
    assert_non_null(q = pp_list_item(&c, &len));
    assert_int_equal(len, 4);
    assert_null(pp_list_item(&c, &len));
}

static void parse_dims_should_be_strict(void **state)
{
    int64_t d[8];
    assert_int_equal(pp_parse_dims("1x3x224x224", d, 8), 4);
    assert_int_equal(d[2], 224);
    assert_int_equal(pp_parse_dims("1x3x", d, 8), -1);
    assert_int_equal(pp_parse_dims("1xx3", d, 8), -1);
    assert_int_equal(pp_parse_dims("0x3", d, 8), -1);
    assert_int_equal(pp_parse_dims("1x-3", d, 8), -1);
    int64_t v;
    assert_int_equal(pp_parse_i64("12a", &v), -1);
    assert_int_equal(pp_parse_i64("", &v), -1);
    double f;
    assert_int_equal(pp_parse_double("nan", &f), -1);
    assert_int_equal(pp_parse_double("1.5e3", &f), 0);
    assert_rel_close(f, 1500.0, 1e-12);
}

/* The op-type index behind shape inference's and features' rule lookup (util.c). */
static void name_index_should_find_each_name_and_the_first_of_equal_names(void **state)
{
    (void)state;
    static const char *const names[] = {"Conv", "Relu", "MatMul", "Relu", "Add", ""};
    static pp_name_index x;
    assert_int_equal(pp_name_index_build(&x, names, 6), 0);
    assert_int_equal(pp_name_index_find(&x, "Conv"), 0);
    assert_int_equal(pp_name_index_find(&x, "MatMul"), 2);
    assert_int_equal(pp_name_index_find(&x, "Relu"), 1);  /* the first of the two */
    assert_int_equal(pp_name_index_find(&x, "Add"), 4);
    assert_int_equal(pp_name_index_find(&x, ""), 5);
    assert_int_equal(pp_name_index_find(&x, "conv"), -1);
    assert_int_equal(pp_name_index_find(&x, "ConvTranspose"), -1);
    /* past half the slots the index refuses and finds nothing */
    static const char *many[PP_NAME_SLOTS / 2 + 1];
    static char text[PP_NAME_SLOTS / 2 + 1][16];
    for (int i = 0; i <= PP_NAME_SLOTS / 2; i++) {
        snprintf(text[i], sizeof text[i], "op%d", i);
        many[i] = text[i];
    }
    assert_int_equal(pp_name_index_build(&x, many, PP_NAME_SLOTS / 2 + 1), -1);
    assert_int_equal(pp_name_index_find(&x, "op0"), -1);
    assert_int_equal(pp_name_index_build(&x, many, PP_NAME_SLOTS / 2), 0);
    for (int i = 0; i < PP_NAME_SLOTS / 2; i++) assert_int_equal(pp_name_index_find(&x, many[i]), i);
}

/* The growable map: every key found across growth (256 slots first, at most half full), absent keys
 * and NULL not, reserve keeping what is there, free leaving an empty map that works again. */
static void strmap_should_find_every_key_across_growth(void **state)
{
    (void)state;
    static char keys[1000][8];
    pp_strmap m = {0};
    assert_int_equal(pp_strmap_get(&m, "k0"), -1);
    for (int i = 0; i < 1000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        assert_int_equal(pp_strmap_put(&m, keys[i], 3 * i), 0);
        if (i == 127) assert_int_equal(m.cap, 256);
        if (i == 128) assert_int_equal(m.cap, 512); /* 129 keys: more than half of 256 */
    }
    assert_int_equal(m.n, 1000);
    assert_int_equal(m.cap, 2048);
    for (int i = 0; i < 1000; i++) assert_int_equal(pp_strmap_get(&m, keys[i]), 3 * i);
    assert_int_equal(pp_strmap_get(&m, "k1000"), -1);
    assert_int_equal(pp_strmap_get(&m, "k"), -1);
    assert_int_equal(pp_strmap_get(&m, ""), -1);
    assert_int_equal(pp_strmap_get(&m, NULL), -1);
    assert_int_equal(pp_strmap_reserve(&m, 3000), 0);
    assert_int_equal(m.cap, 8192);
    assert_int_equal(pp_strmap_get(&m, "k999"), 2997);
    assert_int_equal(pp_strmap_reserve(&m, 10), 0); /* never shrinks */
    assert_int_equal(m.cap, 8192);
    pp_strmap_free(&m);
    assert_int_equal(m.cap, 0);
    assert_int_equal(pp_strmap_get(&m, "k1"), -1);
    assert_int_equal(pp_strmap_put(&m, "", 7), 0);
    assert_int_equal(pp_strmap_get(&m, ""), 7);
    /* one probe: a present key gives its value and leaves the slot alone; an absent one gives the
     * slot where it goes, and put there it is found */
    size_t slot = 12345;
    assert_int_equal(pp_strmap_reserve(&m, m.n + 1), 0);
    assert_int_equal(pp_strmap_probe_h(&m, "", pp_fnv1a64("", PP_FNV64_BASIS), &slot), 7);
    assert_int_equal(slot, 12345);
    assert_int_equal(pp_strmap_probe_h(&m, "k5", pp_fnv1a64("k5", PP_FNV64_BASIS), &slot), -1);
    assert_true(slot < m.cap && !m.keys[slot]);
    pp_strmap_put_at(&m, slot, "k5", 15);
    assert_int_equal(m.n, 2);
    assert_int_equal(pp_strmap_get(&m, "k5"), 15);
    pp_strmap_free(&m);
}

/* Element sizes as the ONNX TensorProto data types define them (0: undefined, string, out of
 * range); pp_tensor_bytes is the elements times that, -1 for unknown dims, strings and products
 * past 64 bits. */
static void tensor_bytes_should_agree_with_dtype_size(void **state)
{
    (void)state;
    static const struct {
        int32_t dt;
        int bytes;
    } S[] = {{PP_DT_UNDEFINED, 0}, {PP_DT_FLOAT, 4},  {PP_DT_UINT8, 1},     {PP_DT_INT8, 1},
             {PP_DT_UINT16, 2},    {PP_DT_INT16, 2},  {PP_DT_INT32, 4},     {PP_DT_INT64, 8},
             {PP_DT_STRING, 0},    {PP_DT_BOOL, 1},   {PP_DT_FLOAT16, 2},   {PP_DT_DOUBLE, 8},
             {PP_DT_UINT32, 4},    {PP_DT_UINT64, 8}, {PP_DT_COMPLEX64, 8}, {PP_DT_COMPLEX128, 16},
             {PP_DT_BFLOAT16, 2},  {17, 0},           {-1, 0},              {40, 0}};
    pp_tensor t;
    memset(&t, 0, sizeof t);
    t.rank = 2;
    t.dims[0] = 3;
    t.dims[1] = 5;
    for (size_t i = 0; i < sizeof S / sizeof *S; i++) {
        assert_int_equal(pp_dtype_size(S[i].dt), S[i].bytes);
        t.dtype = S[i].dt;
        assert_int_equal(pp_tensor_bytes(&t), S[i].bytes > 0 ? 15 * S[i].bytes : -1);
    }
    t.dtype = PP_DT_FLOAT;
    assert_int_equal(pp_tensor_elems(&t), 15);
    t.dims[1] = -1;
    assert_int_equal(pp_tensor_bytes(&t), -1);
    t.dims[0] = t.dims[1] = INT64_C(1) << 31;
    assert_int_equal(pp_tensor_elems(&t), INT64_C(1) << 62);
    assert_int_equal(pp_tensor_bytes(&t), -1); /* 2^62 x 4 bytes overflows */
    t.rank = -1;
    assert_int_equal(pp_tensor_bytes(&t), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(name_index_should_find_each_name_and_the_first_of_equal_names),
        cmocka_unit_test(link_should_sort_nodes_topologically),
        cmocka_unit_test(tensor_bytes_should_agree_with_dtype_size),
        cmocka_unit_test(link_should_reject_dangling_input_naming_node),
        cmocka_unit_test(link_should_reject_cycles),
        cmocka_unit_test(link_should_reject_two_producers),
        cmocka_unit_test(tensor_lookup_should_survive_many_names),
        cmocka_unit_test(tensor_should_return_the_existing_index_across_growth),
        cmocka_unit_test(add_node_idx_should_build_what_add_node_builds),
        cmocka_unit_test(reserve_should_keep_tensors_and_nodes_in_place),
        cmocka_unit_test(link_should_keep_a_sorted_graph_as_it_is),
        cmocka_unit_test(link_should_keep_the_order_a_forward_ran),
        cmocka_unit_test(add_attr_should_keep_earlier_attributes_as_it_grows),
        cmocka_unit_test(tensor_bytes_should_be_unknown_until_all_dims_are),
        cmocka_unit_test(parse_dims_should_be_strict),
        cmocka_unit_test(list_items_should_walk_commas),
        cmocka_unit_test(read_file_should_end_with_a_nul),
        cmocka_unit_test(strmap_should_find_every_key_across_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
