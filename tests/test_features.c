/* tests/test_features.c: per-node features (MACs, FLOPs, params, bytes, attributes) on hand-built
 * graphs, tied weights, folded nodes, liveness (residual skip, view aliasing, outputs to the end),
 * the regressor feature vector, and the public model API on real and missing files. Every expected
 * value is worked out by hand in the comment beside it. */
#include "tests/helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph.h"
#include "onnx/onnx.pb-c.h"

/* ---------------------------------------------------------------- builders ---- */

#define SHAPE(...) \
    (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}

/* A tensor with a set shape and extra flags. */
static int tens(pp_graph *g, const char *name, int32_t dt, uint32_t flags, int rank,
                const int64_t *dims)
{
    int i = pp_graph_tensor(g, name);
    assert_true(i >= 0);
    pp_tensor_set_shape(&g->tensors[i], dt, rank, dims);
    g->tensors[i].flags |= flags;
    if (flags & PP_T_GRAPH_INPUT && !(flags & PP_T_WEIGHT)) {
        int *ni = pp_arena_array(g->arena, (size_t)g->n_inputs + 1, sizeof *ni);
        assert_non_null(ni);
        if (g->n_inputs) memcpy(ni, g->inputs, (size_t)g->n_inputs * sizeof *ni);
        ni[g->n_inputs++] = i;
        g->inputs = ni;
    }
    return i;
}

#define ACT(g, name, ...) tens(g, name, PP_DT_FLOAT, 0, SHAPE(__VA_ARGS__))
#define INPUT(g, name, ...) tens(g, name, PP_DT_FLOAT, PP_T_GRAPH_INPUT, SHAPE(__VA_ARGS__))
#define OUTPUT(g, name, ...) tens(g, name, PP_DT_FLOAT, PP_T_GRAPH_OUTPUT, SHAPE(__VA_ARGS__))
#define WEIGHT(g, name, ...) \
    tens(g, name, PP_DT_FLOAT, PP_T_WEIGHT | PP_T_INITIALIZER, SHAPE(__VA_ARGS__))

/* Adds a node; ins/outs are comma-separated tensor names ("x,,b": input 1 omitted). */
static int node(pp_graph *g, const char *name, const char *op, const char *ins, const char *outs)
{
    char buf[2][256];
    const char *names[2][16];
    int cnt[2] = {0, 0};
    const char *src[2] = {ins, outs};
    for (int s = 0; s < 2; s++) {
        snprintf(buf[s], sizeof buf[s], "%s", src[s]);
        if (!buf[s][0]) continue;
        char *p = buf[s];
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma) *comma = '\0';
            names[s][cnt[s]++] = p;
            if (!comma) break;
            p = comma + 1;
        }
    }
    int idx = pp_graph_add_node(g, name, op, "", names[0], cnt[0], names[1], cnt[1]);
    assert_true(idx >= 0);
    return idx;
}

static void attr_i(pp_graph *g, int n, const char *name, int64_t v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_INT);
    assert_non_null(a);
    a->i = v;
}

static void attr_ints(pp_graph *g, int n, const char *name, int cnt, const int64_t *v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_INTS);
    assert_non_null(a);
    a->n = cnt;
    a->ints = pp_arena_array(g->arena, (size_t)cnt, sizeof(int64_t));
    assert_non_null(a->ints);
    memcpy(a->ints, v, (size_t)cnt * sizeof(int64_t));
}
#define ATTR_INTS(g, n, name, ...) attr_ints(g, n, name, SHAPE(__VA_ARGS__))

static void attr_s(pp_graph *g, int n, const char *name, const char *v)
{
    pp_attr *a = pp_node_add_attr(g, n, name, PP_ATTR_STRING);
    assert_non_null(a);
    a->s = pp_arena_strdup(g->arena, v);
}

static void link_and_features(pp_graph *g)
{
    pp_err err = {0};
    perfpred_status st = pp_graph_link(g, &err);
    if (st) fail_msg("link: %s", err.msg);
    st = pp_graph_features(g, &err);
    if (st) fail_msg("features: %s", err.msg);
}

static const pp_node_feat *feat(const pp_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return &g->nodes[i].feat;
    fail_msg("no node '%s'", name);
    return NULL;
}

/* ------------------------------------------------------------------- conv ---- */

static void features_should_count_grouped_conv_with_bias(void **state)
{
    pp_graph *g = pp_graph_new("conv.onnx");
    INPUT(g, "x", 2, 8, 16, 16);
    WEIGHT(g, "w", 16, 2, 3, 3); /* C_in/group = 8/4 = 2 */
    WEIGHT(g, "b", 16);
    OUTPUT(g, "y", 2, 16, 16, 16);
    int n = node(g, "conv", "Conv", "x,w,b", "y");
    attr_i(g, n, "group", 4);
    ATTR_INTS(g, n, "pads", 1, 1, 1, 1);
    link_and_features(g);
    const pp_node_feat *f = feat(g, "conv");
    assert_int_equal(f->kind, PP_OPK_CONV);
    assert_int_equal(f->out_elems, 8192);               /* 2*16*16*16 */
    assert_rel_close(f->macs, 147456, 1e-12);           /* 8192 * 2 * 3*3 */
    assert_rel_close(f->flops, 303104, 1e-12);          /* 2*147456 + 8192 bias adds */
    assert_rel_close(f->params, 304, 1e-12);            /* 16*2*3*3 + 16 */
    assert_rel_close(f->param_bytes, 1216, 1e-12);      /* 304 * 4 */
    assert_rel_close(f->in_bytes, 16384, 1e-12);        /* 2*8*16*16 * 4 */
    assert_rel_close(f->out_bytes, 32768, 1e-12);       /* 8192 * 4 */
    assert_rel_close(f->arith_intensity, 303104.0 / (16384 + 32768 + 1216), 1e-12);
    assert_int_equal(f->group, 4);
    assert_int_equal(f->kernel[0], 3);
    assert_int_equal(f->kernel[1], 3);
    assert_int_equal(f->pads[0], 1);
    assert_int_equal(f->pads[3], 1);
    assert_int_equal(f->stride[0], 1);
    assert_int_equal(f->n, 2);
    assert_int_equal(f->cin, 8);
    assert_int_equal(f->hin, 16);
    assert_int_equal(f->cout, 16);
    assert_int_equal(f->wout, 16);
    assert_int_equal(g->totals.macs, 147456);
    assert_int_equal(g->totals.flops, 303104);
    assert_int_equal(g->totals.params, 304);
    assert_int_equal(g->totals.param_bytes, 1216);
    assert_int_equal(g->totals.activation_bytes, 32768);
    assert_int_equal(g->totals.input_bytes, 16384);
    pp_graph_free(g);
}

static void features_should_detect_depthwise_with_multiplier(void **state)
{
    pp_graph *g = pp_graph_new("dw.onnx");
    INPUT(g, "x", 1, 32, 10, 10);
    WEIGHT(g, "w", 64, 1, 3, 3); /* group = C_in = 32, multiplier 2 */
    OUTPUT(g, "y", 1, 64, 5, 5); /* (10 + 2 - 3)/2 + 1 = 5 */
    INPUT(g, "x1", 1, 1, 8, 8);
    WEIGHT(g, "w1", 4, 1, 3, 3);
    OUTPUT(g, "y1", 1, 4, 6, 6);
    int n = node(g, "dw", "Conv", "x,w", "y");
    attr_i(g, n, "group", 32);
    ATTR_INTS(g, n, "strides", 2, 2);
    ATTR_INTS(g, n, "pads", 1, 1, 1, 1);
    node(g, "single_channel", "Conv", "x1,w1", "y1"); /* group 1 == C_in 1: a plain conv */
    link_and_features(g);
    const pp_node_feat *f = feat(g, "dw");
    assert_int_equal(f->kind, PP_OPK_DWCONV);
    assert_rel_close(f->macs, 14400, 1e-12);  /* 64*5*5 = 1600 outputs * 1 * 9 */
    assert_rel_close(f->flops, 28800, 1e-12); /* no bias */
    assert_int_equal(f->stride[0], 2);
    assert_int_equal(f->stride[1], 2);
    assert_int_equal(f->group, 32);
    const pp_node_feat *f1 = feat(g, "single_channel");
    assert_int_equal(f1->kind, PP_OPK_CONV);
    assert_rel_close(f1->macs, 1296, 1e-12); /* 4*6*6 = 144 outputs * 1 * 9 */
    pp_graph_free(g);
}

static void features_should_count_dilated_and_same_padded_conv(void **state)
{
    pp_graph *g = pp_graph_new("dil.onnx");
    INPUT(g, "x", 1, 4, 20, 20);
    WEIGHT(g, "w", 8, 4, 3, 3);
    OUTPUT(g, "y", 1, 8, 16, 16); /* 20 - ((3-1)*2 + 1) + 1 = 16 */
    INPUT(g, "s", 1, 3, 7, 7);
    WEIGHT(g, "ws", 4, 3, 2, 2);
    OUTPUT(g, "su", 1, 4, 4, 4); /* SAME: ceil(7/2) = 4 */
    OUTPUT(g, "sl", 1, 4, 4, 4);
    int n = node(g, "dilated", "Conv", "x,w", "y");
    ATTR_INTS(g, n, "dilations", 2, 2);
    n = node(g, "same_upper", "Conv", "s,ws", "su");
    ATTR_INTS(g, n, "strides", 2, 2);
    attr_s(g, n, "auto_pad", "SAME_UPPER");
    n = node(g, "same_lower", "Conv", "s,ws", "sl");
    ATTR_INTS(g, n, "strides", 2, 2);
    attr_s(g, n, "auto_pad", "SAME_LOWER");
    link_and_features(g);
    const pp_node_feat *f = feat(g, "dilated");
    assert_rel_close(f->macs, 73728, 1e-12); /* 8*16*16 = 2048 outputs * 4 * 9 */
    assert_int_equal(f->dilation[0], 2);
    assert_int_equal(f->dilation[1], 2);
    assert_int_equal(f->pads[0], 0);
    /* total pad = (4-1)*2 + 2 - 7 = 1 per axis: SAME_UPPER puts it at the end */
    f = feat(g, "same_upper");
    assert_rel_close(f->macs, 768, 1e-12); /* 4*4*4 = 64 outputs * 3 * 2*2 */
    assert_int_equal(f->pads[0], 0);
    assert_int_equal(f->pads[1], 0);
    assert_int_equal(f->pads[2], 1);
    assert_int_equal(f->pads[3], 1);
    f = feat(g, "same_lower");
    assert_int_equal(f->pads[0], 1);
    assert_int_equal(f->pads[1], 1);
    assert_int_equal(f->pads[2], 0);
    assert_int_equal(f->pads[3], 0);
    /* shared input s is read by two nodes but is one graph input */
    assert_int_equal(g->totals.input_bytes, (1 * 4 * 20 * 20 + 1 * 3 * 7 * 7) * 4);
    pp_graph_free(g);
}

static void features_should_treat_1d_conv_as_width_one(void **state)
{
    pp_graph *g = pp_graph_new("c1d.onnx");
    INPUT(g, "x", 1, 4, 10);
    WEIGHT(g, "w", 6, 4, 3);
    OUTPUT(g, "y", 1, 6, 8);
    node(g, "c1d", "Conv", "x,w", "y");
    link_and_features(g);
    const pp_node_feat *f = feat(g, "c1d");
    assert_rel_close(f->macs, 576, 1e-12); /* 6*8 = 48 outputs * 4 * 3 */
    assert_int_equal(f->kernel[0], 3);
    assert_int_equal(f->kernel[1], 1);
    assert_int_equal(f->hin, 10);
    assert_int_equal(f->win, 1);
    assert_int_equal(f->hout, 8);
    assert_int_equal(f->wout, 1);
    pp_graph_free(g);
}

static void features_should_count_grouped_conv_transpose(void **state)
{
    pp_graph *g = pp_graph_new("ct.onnx");
    INPUT(g, "x", 1, 8, 4, 4);
    WEIGHT(g, "w", 8, 2, 3, 3); /* [C_in, C_out/group, k, k], group 2 -> C_out 4 */
    WEIGHT(g, "b", 4);
    OUTPUT(g, "y", 1, 4, 8, 8); /* (4-1)*2 + 3 - 2 + 1 = 8 */
    int n = node(g, "up", "ConvTranspose", "x,w,b", "y");
    attr_i(g, n, "group", 2);
    ATTR_INTS(g, n, "strides", 2, 2);
    ATTR_INTS(g, n, "pads", 1, 1, 1, 1);
    ATTR_INTS(g, n, "output_padding", 1, 1);
    link_and_features(g);
    const pp_node_feat *f = feat(g, "up");
    assert_int_equal(f->kind, PP_OPK_CONVT);
    assert_rel_close(f->macs, 2304, 1e-12);  /* in_elems 8*4*4 = 128 * 2 * 9 */
    assert_rel_close(f->flops, 4864, 1e-12); /* 2*2304 + 4*8*8 bias adds */
    assert_rel_close(f->params, 148, 1e-12); /* 8*2*9 + 4 */
    assert_int_equal(f->cin, 8);
    assert_int_equal(f->cout, 4);
    assert_int_equal(f->hout, 8);
    pp_graph_free(g);
}

static void features_should_reject_conv_channel_mismatch_naming_node(void **state)
{
    pp_graph *g = pp_graph_new("bad.onnx");
    INPUT(g, "x", 1, 8, 4, 4);
    WEIGHT(g, "w", 4, 3, 1, 1); /* 3 * group 1 != 8 */
    OUTPUT(g, "y", 1, 4, 4, 4);
    node(g, "Conv_7", "Conv", "x,w", "y");
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_features(g, &err), PERFPRED_ERR_SHAPE);
    assert_non_null(strstr(err.msg, "bad.onnx"));
    assert_non_null(strstr(err.msg, "Conv_7"));
    pp_graph_free(g);
}

/* --------------------------------------------------------------- gemm/matmul ---- */

static void features_should_count_gemm_with_transposes(void **state)
{
    pp_graph *g = pp_graph_new("gemm.onnx");
    INPUT(g, "a", 4, 8);
    WEIGHT(g, "w", 16, 8); /* transB: B^T is [8, 16] */
    WEIGHT(g, "c", 16);
    OUTPUT(g, "y", 4, 16);
    INPUT(g, "at", 8, 4); /* transA: A^T is [4, 8] */
    WEIGHT(g, "w2", 8, 16);
    OUTPUT(g, "y2", 4, 16);
    int n = node(g, "fc", "Gemm", "a,w,c", "y");
    attr_i(g, n, "transB", 1);
    n = node(g, "fc_ta", "Gemm", "at,w2", "y2");
    attr_i(g, n, "transA", 1);
    link_and_features(g);
    const pp_node_feat *f = feat(g, "fc");
    assert_int_equal(f->kind, PP_OPK_LINEAR);
    assert_int_equal(f->m, 4);
    assert_int_equal(f->nn, 16);
    assert_int_equal(f->k, 8);
    assert_int_equal(f->b, 1);
    assert_rel_close(f->macs, 512, 1e-12);   /* 4*16*8 */
    assert_rel_close(f->flops, 1088, 1e-12); /* 2*512 + 4*16 bias */
    assert_rel_close(f->params, 144, 1e-12); /* 16*8 + 16 */
    f = feat(g, "fc_ta");
    assert_int_equal(f->m, 4);
    assert_int_equal(f->k, 8);
    assert_rel_close(f->flops, 1024, 1e-12); /* no C */
    pp_graph_free(g);
}

static void features_should_broadcast_matmul_and_follow_1d_rules(void **state)
{
    pp_graph *g = pp_graph_new("mm.onnx");
    INPUT(g, "a", 2, 1, 5, 3);
    INPUT(g, "b", 4, 3, 6);
    OUTPUT(g, "y", 2, 4, 5, 6); /* batch [2,1] x [4] -> [2,4] */
    INPUT(g, "v", 3);
    INPUT(g, "b2", 2, 3, 6);
    OUTPUT(g, "y2", 2, 6); /* [3] is [1,3]; the 1 is dropped */
    INPUT(g, "a3", 2, 5, 3);
    WEIGHT(g, "wv", 3);
    OUTPUT(g, "y3", 2, 5); /* [3] is [3,1]; the 1 is dropped */
    INPUT(g, "u", 3);
    tens(g, "dot", PP_DT_FLOAT, PP_T_GRAPH_OUTPUT, 0, NULL); /* a scalar */
    node(g, "bmm", "MatMul", "a,b", "y");
    node(g, "vec_mat", "MatMul", "v,b2", "y2");
    node(g, "mat_vec", "MatMul", "a3,wv", "y3");
    node(g, "dot", "MatMul", "u,v", "dot");
    link_and_features(g);
    const pp_node_feat *f = feat(g, "bmm");
    assert_int_equal(f->kind, PP_OPK_BMM);
    assert_int_equal(f->b, 8);
    assert_int_equal(f->m, 5);
    assert_int_equal(f->nn, 6);
    assert_int_equal(f->k, 3);
    assert_rel_close(f->macs, 720, 1e-12); /* 2*4 * 5*6*3 */
    assert_rel_close(f->params, 0, 1e-12);
    f = feat(g, "vec_mat");
    assert_int_equal(f->kind, PP_OPK_BMM);
    assert_rel_close(f->macs, 36, 1e-12); /* 2 * 1*6*3 */
    f = feat(g, "mat_vec");
    assert_int_equal(f->kind, PP_OPK_LINEAR);
    assert_rel_close(f->macs, 30, 1e-12); /* 2 * 5*1*3 */
    assert_rel_close(f->params, 3, 1e-12);
    f = feat(g, "dot");
    assert_rel_close(f->macs, 3, 1e-12);
    assert_int_equal(f->b, 1);
    assert_int_equal(g->totals.macs, 720 + 36 + 30 + 3);
    assert_int_equal(g->totals.flops, 2 * (720 + 36 + 30 + 3));
    pp_graph_free(g);
}

static void features_should_reject_matmul_reduction_mismatch(void **state)
{
    pp_graph *g = pp_graph_new("mm_bad.onnx");
    INPUT(g, "a", 2, 5, 3);
    INPUT(g, "b", 4, 6);
    OUTPUT(g, "y", 2, 5, 6);
    node(g, "mm_bad", "MatMul", "a,b", "y");
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_features(g, &err), PERFPRED_ERR_SHAPE);
    assert_non_null(strstr(err.msg, "mm_bad"));
    pp_graph_free(g);
}

/* Shapes that fit 64 bits whose product does not (2^21 x 2^21 x 2^21 MACs = 2^63): a shape error
 * (exit 3 in the CLI), not out of memory (exit 5) as it was. */
static void features_should_report_total_overflow_as_a_shape_error(void **state)
{
    pp_graph *g = pp_graph_new("huge.onnx");
    INPUT(g, "a", 2097152, 2097152);
    INPUT(g, "b", 2097152, 2097152);
    OUTPUT(g, "y", 2097152, 2097152);
    node(g, "mm_huge", "MatMul", "a,b", "y");
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_features(g, &err), PERFPRED_ERR_SHAPE);
    assert_non_null(strstr(err.msg, "huge.onnx: total"));
    assert_non_null(strstr(err.msg, "overflows 64 bits"));
    pp_graph_free(g);
}

static void features_should_count_tied_weights_once(void **state)
{
    /* GPT-style tied embedding: Gather(E, ids) and logits = h @ Transpose(E). */
    pp_graph *g = pp_graph_new("tied.onnx");
    WEIGHT(g, "E", 100, 16);
    tens(g, "ids", PP_DT_INT64, PP_T_GRAPH_INPUT, SHAPE(1, 7));
    ACT(g, "h", 1, 7, 16);
    ACT(g, "Et", 16, 100);
    OUTPUT(g, "logits", 1, 7, 100);
    node(g, "embed", "Gather", "E,ids", "h");
    int n = node(g, "tr", "Transpose", "E", "Et");
    ATTR_INTS(g, n, "perm", 1, 0);
    node(g, "lm_head", "MatMul", "h,Et", "logits");
    link_and_features(g);
    /* Transpose of a weight is done once at load: folded, and its output is a parameter */
    const pp_node_feat *f = feat(g, "tr");
    assert_int_equal(f->folded, 1);
    assert_int_equal(f->kind, PP_OPK_SHAPE);
    assert_rel_close(f->params + f->flops + f->in_bytes + f->out_bytes, 0, 1e-12);
    f = feat(g, "lm_head");
    assert_int_equal(f->kind, PP_OPK_LINEAR);
    assert_rel_close(f->macs, 11200, 1e-12); /* 7*100*16 */
    assert_rel_close(f->params, 1600, 1e-12);
    assert_rel_close(f->in_bytes, 448, 1e-12); /* h: 7*16*4 */
    f = feat(g, "embed");
    assert_int_equal(f->kind, PP_OPK_DATAMOVE);
    assert_rel_close(f->params, 1600, 1e-12);
    assert_rel_close(f->in_bytes, 56, 1e-12); /* ids: 7 int64 */
    /* the model has 1600 parameters, not 3200 */
    assert_int_equal(g->totals.params, 1600);
    assert_int_equal(g->totals.param_bytes, 6400);
    assert_int_equal(g->totals.input_bytes, 56);
    pp_graph_free(g);
}

/* ---------------------------------------------------------- other op kinds ---- */

static void features_should_follow_documented_flop_conventions(void **state)
{
    pp_graph *g = pp_graph_new("ops.onnx");
    INPUT(g, "x", 2, 5, 8); /* 80 elements */
    WEIGHT(g, "gamma", 8);
    WEIGHT(g, "beta", 8);
    ACT(g, "ln", 2, 5, 8);
    ACT(g, "sm", 2, 5, 8);
    ACT(g, "sg", 2, 5, 8);
    tens(g, "half", PP_DT_FLOAT, PP_T_CONST, 0, NULL); /* a known scalar, not a weight */
    ACT(g, "ad", 2, 5, 8);
    ACT(g, "rm", 2, 5, 1);
    ACT(g, "sum3", 2, 5, 8);
    INPUT(g, "img", 1, 2, 8, 8); /* 128 elements */
    ACT(g, "mp", 1, 2, 4, 4);
    ACT(g, "gp", 1, 2, 1, 1);
    tens(g, "shp", PP_DT_INT64, PP_T_WEIGHT | PP_T_INITIALIZER | PP_T_CONST, SHAPE(2));
    OUTPUT(g, "flat", 10, 8);
    OUTPUT(g, "out2", 1, 2, 1, 1);
    OUTPUT(g, "out3", 2, 5, 1);
    int n = node(g, "ln", "LayerNormalization", "x,gamma,beta", "ln");
    attr_i(g, n, "axis", -1);
    n = node(g, "sm", "Softmax", "ln", "sm");
    attr_i(g, n, "axis", -1);
    node(g, "sg", "Sigmoid", "sm", "sg");
    node(g, "ad", "Mul", "sg,half", "ad");
    n = node(g, "rm", "ReduceMean", "ad", "rm");
    ATTR_INTS(g, n, "axes", -1);
    node(g, "sum3", "Sum", "ad,sg,sm", "sum3");
    node(g, "flat", "Reshape", "sum3,shp", "flat");
    node(g, "out3", "Identity", "rm", "out3");
    n = node(g, "mp", "MaxPool", "img", "mp");
    ATTR_INTS(g, n, "kernel_shape", 2, 2);
    ATTR_INTS(g, n, "strides", 2, 2);
    node(g, "gp", "GlobalAveragePool", "mp", "gp");
    node(g, "out2", "Relu", "gp", "out2");
    link_and_features(g);

    const pp_node_feat *f = feat(g, "ln");
    assert_int_equal(f->kind, PP_OPK_NORM);
    assert_rel_close(f->flops, 640, 1e-12); /* 8 per element * 80 */
    assert_int_equal(f->m, 10);             /* rows 2*5 */
    assert_int_equal(f->nn, 8);             /* normalised over the last axis */
    assert_rel_close(f->params, 16, 1e-12);
    f = feat(g, "sm");
    assert_int_equal(f->kind, PP_OPK_SOFTMAX);
    assert_rel_close(f->flops, 400, 1e-12); /* 5 per element */
    assert_int_equal(f->m, 10);
    assert_int_equal(f->nn, 8);
    f = feat(g, "sg");
    assert_int_equal(f->kind, PP_OPK_ELEMWISE);
    assert_rel_close(f->flops, 320, 1e-12); /* 4 per element */
    f = feat(g, "ad");
    assert_rel_close(f->flops, 80, 1e-12);
    assert_rel_close(f->in_bytes, 320, 1e-12); /* the scalar constant is not read as activation */
    assert_rel_close(f->params, 0, 1e-12);     /* and is not a parameter */
    f = feat(g, "rm");
    assert_int_equal(f->kind, PP_OPK_REDUCE);
    assert_rel_close(f->flops, 80, 1e-12); /* 1 per input element */
    assert_int_equal(f->m, 10);
    assert_int_equal(f->k, 8);
    f = feat(g, "sum3");
    assert_rel_close(f->flops, 160, 1e-12); /* (3 - 1) adds per element */
    assert_rel_close(f->in_bytes, 960, 1e-12);
    f = feat(g, "flat");
    assert_int_equal(f->kind, PP_OPK_RESHAPE);
    assert_rel_close(f->flops + f->in_bytes + f->out_bytes + f->params, 0, 1e-12);
    assert_int_equal(f->out_elems, 80);
    f = feat(g, "out3");
    assert_int_equal(f->kind, PP_OPK_RESHAPE);
    f = feat(g, "mp");
    assert_int_equal(f->kind, PP_OPK_POOL);
    assert_rel_close(f->flops, 128, 1e-12); /* 32 outputs * 2*2 window */
    assert_int_equal(f->kernel[0], 2);
    assert_int_equal(f->stride[1], 2);
    f = feat(g, "gp");
    assert_int_equal(f->kind, PP_OPK_GLOBALPOOL);
    assert_rel_close(f->flops, 32, 1e-12); /* 1 per input element: 2*4*4 */
    assert_int_equal(f->kernel[0], 4);
    /* the int64 shape initializer is neither a parameter nor an activation */
    assert_int_equal(g->totals.params, 16);
    /* 640 + 400 + 320 + 80 + 80 + 160 + 128 + 32 + relu 2 */
    assert_int_equal(g->totals.flops, 1842);
    assert_int_equal(g->totals.macs, 0);
    pp_graph_free(g);
}

static void features_should_price_norms_and_resize(void **state)
{
    pp_graph *g = pp_graph_new("norm.onnx");
    INPUT(g, "x", 1, 2, 4, 4); /* 32 elements */
    WEIGHT(g, "scale", 2);
    WEIGHT(g, "bias", 2);
    WEIGHT(g, "mean", 2);
    WEIGHT(g, "var", 2);
    tens(g, "scales", PP_DT_FLOAT, PP_T_CONST, SHAPE(4));
    OUTPUT(g, "bn", 1, 2, 4, 4);
    OUTPUT(g, "lrn", 1, 2, 4, 4);
    OUTPUT(g, "up_lin", 1, 2, 8, 8); /* 128 elements, 2 axes resized */
    OUTPUT(g, "up_near", 1, 2, 8, 8);
    node(g, "bn", "BatchNormalization", "x,scale,bias,mean,var", "bn");
    int n = node(g, "lrn", "LRN", "x", "lrn");
    attr_i(g, n, "size", 5);
    n = node(g, "up_lin", "Resize", "x,,scales", "up_lin");
    attr_s(g, n, "mode", "linear");
    node(g, "up_near", "Resize", "x,,scales", "up_near");
    link_and_features(g);
    const pp_node_feat *f = feat(g, "bn");
    assert_int_equal(f->kind, PP_OPK_NORM);
    assert_rel_close(f->flops, 64, 1e-12); /* 2 per element */
    assert_rel_close(f->params, 8, 1e-12);
    assert_int_equal(f->cin, 2);
    assert_int_equal(f->hin, 4);
    f = feat(g, "lrn");
    assert_rel_close(f->flops, 320, 1e-12); /* (size 5 + 5) per element */
    f = feat(g, "up_lin");
    assert_int_equal(f->kind, PP_OPK_DATAMOVE);
    assert_rel_close(f->flops, 896, 1e-12); /* 2*2^2 - 1 = 7 per output element * 128 */
    assert_rel_close(f->in_bytes, 128, 1e-12); /* x only: the scales are a known constant */
    f = feat(g, "up_near");
    assert_rel_close(f->flops, 0, 1e-12);
    pp_graph_free(g);
}

/* A Transpose's copy, worked by hand: x is 2 x 3 x 4 x 5 (strides 60, 20, 5, 1) */
static void features_should_describe_a_transpose_copy(void **state)
{
    (void)state;
    pp_graph *g = pp_graph_new("transpose.onnx");
    INPUT(g, "x", 2, 3, 4, 5);
    INPUT(g, "y", 2, 3, 4);
    OUTPUT(g, "heads", 2, 4, 3, 5);
    OUTPUT(g, "last", 2, 3, 5, 4);
    OUTPUT(g, "rev", 4, 3, 2);
    OUTPUT(g, "same", 2, 3, 4, 5);
    int n = node(g, "heads", "Transpose", "x", "heads");
    ATTR_INTS(g, n, "perm", 0, 2, 1, 3);
    n = node(g, "last", "Transpose", "x", "last");
    ATTR_INTS(g, n, "perm", 0, 1, 3, 2);
    node(g, "rev", "Transpose", "y", "rev"); /* no perm: the axes reversed */
    n = node(g, "same", "Transpose", "x", "same");
    ATTR_INTS(g, n, "perm", 0, 1, 2, 3);
    tens(g, "s", PP_DT_FLOAT, PP_T_GRAPH_INPUT, 0, NULL);
    tens(g, "s_t", PP_DT_FLOAT, PP_T_GRAPH_OUTPUT, 0, NULL);
    node(g, "scalar", "Transpose", "s", "s_t");
    link_and_features(g);
    /* the last axis stays: runs of 5, read at stride 1; axes 1 and 2 move */
    const pp_node_feat *f = feat(g, "heads");
    assert_rel_close(f->tr_run, 5, 0);
    assert_rel_close(f->tr_inner, 5, 0);
    assert_rel_close(f->tr_stride, 1, 0);
    assert_int_equal(f->tr_moved, 2);
    /* the last two axes swap: single elements, the output's inner 4 read 5 apart */
    f = feat(g, "last");
    assert_rel_close(f->tr_run, 1, 0);
    assert_rel_close(f->tr_inner, 4, 0);
    assert_rel_close(f->tr_stride, 5, 0);
    assert_int_equal(f->tr_moved, 2);
    /* (2, 3, 4) reversed: the output's inner axis is the input's first, 3 x 4 apart */
    f = feat(g, "rev");
    assert_rel_close(f->tr_run, 1, 0);
    assert_rel_close(f->tr_inner, 2, 0);
    assert_rel_close(f->tr_stride, 12, 0);
    assert_int_equal(f->tr_moved, 2);
    f = feat(g, "same");
    assert_int_equal(f->tr_moved, 0);
    f = feat(g, "scalar"); /* rank 0: a feature like any, nothing moved */
    assert_int_equal(f->tr_moved, 0);
    assert_int_equal(f->kind, PP_OPK_DATAMOVE);
    pp_graph_free(g);
}

static void features_should_give_folded_nodes_no_cost(void **state)
{
    pp_graph *g = pp_graph_new("fold.onnx");
    INPUT(g, "x", 1, 3, 4, 4); /* 48 floats, 192 bytes */
    tens(g, "s", PP_DT_INT64, PP_T_CONST, SHAPE(4));
    tens(g, "i0", PP_DT_INT64, PP_T_CONST, SHAPE(1));
    tens(g, "d", PP_DT_INT64, PP_T_CONST, SHAPE(1));
    tens(g, "sh", PP_DT_INT64, 0, SHAPE(2)); /* folded by shape inference, value not flagged */
    ACT(g, "y", 1, 48);
    OUTPUT(g, "z", 1, 48);
    node(g, "shape", "Shape", "x", "s");
    node(g, "pick", "Gather", "s,i0", "d");
    int c = node(g, "cat", "Concat", "d,d", "sh");
    attr_i(g, c, "axis", 0);
    g->nodes[c].feat.folded = 1; /* as pp_graph_infer_shapes marks it */
    node(g, "view", "Reshape", "x,sh", "y");
    node(g, "act", "Relu", "y", "z");
    OUTPUT(g, "nx", 1, 3, 4, 4);
    int pre = node(g, "premarked", "Neg", "x", "nx");
    g->nodes[pre].feat.folded = 1; /* reads an activation, but shape inference said folded */
    link_and_features(g);
    const char *folded[] = {"shape", "pick", "cat", "premarked"};
    for (int i = 0; i < 4; i++) {
        const pp_node_feat *f = feat(g, folded[i]);
        assert_int_equal(f->kind, PP_OPK_SHAPE);
        assert_rel_close(f->macs + f->flops + f->in_bytes + f->out_bytes + f->params, 0, 1e-12);
    }
    assert_int_equal(feat(g, "pick")->folded, 1); /* its outputs are all constants */
    assert_int_equal(feat(g, "cat")->folded, 1);  /* every input is static */
    assert_int_equal(feat(g, "premarked")->folded, 1); /* the preset flag survives */
    const pp_node_feat *f = feat(g, "act");
    assert_rel_close(f->flops, 48, 1e-12);
    assert_rel_close(f->in_bytes, 192, 1e-12);
    assert_int_equal(g->totals.flops, 48);
    assert_int_equal(g->totals.macs, 0);
    assert_int_equal(g->totals.params, 0);
    assert_int_equal(g->totals.activation_bytes, 192); /* Relu's output; the view writes nothing */
    assert_int_equal(g->totals.input_bytes, 192);
    pp_graph_free(g);
}

static void features_should_treat_unknown_ops_as_elementwise(void **state)
{
    pp_graph *g = pp_graph_new("unk.onnx");
    INPUT(g, "x", 4, 25);
    OUTPUT(g, "y", 4, 25);
    int n = node(g, "mystery", "FancyOp", "x", "y");
    g->nodes[n].unknown_op = 1;
    link_and_features(g);
    const pp_node_feat *f = feat(g, "mystery");
    assert_int_equal(f->kind, PP_OPK_ELEMWISE);
    assert_rel_close(f->flops, 100, 1e-12);
    assert_rel_close(f->in_bytes, 400, 1e-12);
    assert_rel_close(f->out_bytes, 400, 1e-12);
    assert_int_equal(g->totals.n_unknown_ops, 1);
    pp_graph_free(g);
}

/* -------------------------------------------------------------- liveness ---- */

static void run_liveness(pp_graph *g)
{
    link_and_features(g);
    pp_err err = {0};
    perfpred_status st = pp_graph_liveness(g, &err);
    if (st) fail_msg("liveness: %s", err.msg);
}

static void liveness_should_keep_residual_skip_live_across_branch(void **state)
{
    pp_graph *g = pp_graph_new("res.onnx");
    INPUT(g, "x", 1, 8, 4, 4); /* 512 B */
    /* export_params=False: weights arrive as graph inputs flagged as weights; never activations */
    tens(g, "w1", PP_DT_FLOAT, PP_T_GRAPH_INPUT | PP_T_WEIGHT, SHAPE(16, 8, 1, 1));
    tens(g, "w2", PP_DT_FLOAT, PP_T_GRAPH_INPUT | PP_T_WEIGHT, SHAPE(8, 16, 1, 1));
    ACT(g, "c1", 1, 16, 4, 4); /* 1024 B */
    ACT(g, "r1", 1, 16, 4, 4); /* 1024 B */
    ACT(g, "c2", 1, 8, 4, 4);  /* 512 B */
    ACT(g, "s", 1, 8, 4, 4);   /* 512 B */
    OUTPUT(g, "y", 1, 8, 4, 4);
    node(g, "conv1", "Conv", "x,w1", "c1");
    node(g, "relu1", "Relu", "c1", "r1");
    node(g, "conv2", "Conv", "r1,w2", "c2");
    node(g, "add", "Add", "c2,x", "s");
    node(g, "relu2", "Relu", "s", "y");
    run_liveness(g);
    /* live during each node (x stays until add):
     *   conv1: x + c1           = 512 + 1024        = 1536
     *   relu1: x + c1 + r1      = 512 + 1024 + 1024 = 2560  <- peak
     *   conv2: x + r1 + c2      = 512 + 1024 + 512  = 2048
     *   add:   x + c2 + s       = 1536
     *   relu2: s + y            = 1024
     * (were x freed after conv1, the peak would be 2048 at relu1) */
    assert_int_equal(g->totals.peak_activation_bytes, 2560);
    assert_int_equal(g->totals.peak_node, 1);
    assert_string_equal(g->nodes[1].name, "relu1");
    assert_int_equal(g->totals.input_bytes, 512);
    pp_graph_free(g);
}

static void liveness_should_alias_views_along_a_chain(void **state)
{
    pp_graph *g = pp_graph_new("chain.onnx");
    INPUT(g, "x", 1, 250); /* 1000 B */
    ACT(g, "a", 1, 500);   /* 2000 B */
    tens(g, "shp", PP_DT_INT64, PP_T_WEIGHT | PP_T_INITIALIZER | PP_T_CONST, SHAPE(2));
    ACT(g, "av", 10, 50);
    ACT(g, "avv", 10, 50);
    OUTPUT(g, "b", 10, 50); /* 2000 B */
    int n = node(g, "cat", "Concat", "x,x", "a");
    attr_i(g, n, "axis", 1);
    node(g, "reshape", "Reshape", "a,shp", "av");
    node(g, "flatten", "Flatten", "av", "avv");
    node(g, "relu", "Relu", "avv", "b");
    run_liveness(g);
    /*   cat:     x + a           = 3000
     *   reshape: a (av aliases)  = 2000
     *   flatten: a (avv aliases) = 2000
     *   relu:    a + b           = 4000  <- peak: a lives until relu reads avv
     * (views as copies would peak at 4000 already at reshape; views that do not extend a's
     * lifetime would peak at 3000 at cat) */
    assert_int_equal(g->totals.peak_activation_bytes, 4000);
    assert_int_equal(g->totals.peak_node, 3);
    pp_graph_free(g);
}

static void liveness_should_keep_graph_outputs_to_the_end(void **state)
{
    pp_graph *g = pp_graph_new("outs.onnx");
    INPUT(g, "x", 100); /* 400 B each */
    OUTPUT(g, "o1", 100);
    ACT(g, "a", 100);
    OUTPUT(g, "o2", 100);
    ACT(g, "unused", 1000); /* 4000 B, read by no one: freed right after its producer */
    node(g, "early_out", "Relu", "x", "o1");
    node(g, "mid", "Relu", "x", "a");
    node(g, "late_out", "Relu", "a", "o2");
    node(g, "dead", "Tile", "o2", "unused");
    run_liveness(g);
    /*   early_out: x + o1              = 800
     *   mid:       x + o1 + a          = 1200
     *   late_out:  o1 + a + o2         = 1200
     *   dead:      o1 + o2 + unused    = 4800  <- peak */
    assert_int_equal(g->totals.peak_activation_bytes, 4800);
    assert_int_equal(g->totals.peak_node, 3);
    pp_graph_free(g);

    /* the same without the dead node: the peak 1200 is first reached at mid, and o1 counts there */
    g = pp_graph_new("outs2.onnx");
    INPUT(g, "x", 100);
    OUTPUT(g, "o1", 100);
    ACT(g, "a", 100);
    OUTPUT(g, "o2", 100);
    node(g, "early_out", "Relu", "x", "o1");
    node(g, "mid", "Relu", "x", "a");
    node(g, "late_out", "Relu", "a", "o2");
    run_liveness(g);
    assert_int_equal(g->totals.peak_activation_bytes, 1200);
    assert_int_equal(g->totals.peak_node, 1);
    pp_graph_free(g);
}

static void liveness_should_require_features_first(void **state)
{
    pp_graph *g = pp_graph_new("nofeat.onnx");
    INPUT(g, "x", 4);
    OUTPUT(g, "y", 4);
    node(g, "r", "Relu", "x", "y");
    pp_err err = {0};
    assert_int_equal(pp_graph_link(g, &err), PERFPRED_OK);
    assert_int_equal(pp_graph_liveness(g, &err), PERFPRED_ERR_INTERNAL);
    assert_non_null(strstr(err.msg, "pp_graph_features"));
    pp_graph_free(g);
}

/* --------------------------------------------------------- feature vector ---- */

static void feat_vector_should_have_stable_length_and_names(void **state)
{
    assert_int_equal(PP_FEATVEC_LEN, 24);
    for (int i = 0; i < PP_FEATVEC_LEN; i++) {
        const char *a = pp_feat_vector_name(i);
        assert_non_null(a);
        for (int j = 0; j < i; j++) assert_string_not_equal(a, pp_feat_vector_name(j));
    }
    assert_null(pp_feat_vector_name(PP_FEATVEC_LEN));
    assert_null(pp_feat_vector_name(-1));
    assert_string_equal(pp_feat_vector_name(0), "log2_macs");
    assert_string_equal(pp_feat_vector_name(23), "log2_k");

    pp_node_feat f;
    memset(&f, 0, sizeof f);
    float v[PP_FEATVEC_LEN];
    assert_int_equal(pp_feat_vector(&f, v), PP_FEATVEC_LEN);
    for (int i = 0; i < PP_FEATVEC_LEN; i++) assert_true(v[i] == 0.0f); /* unused fields are 0 */
    f.macs = 1023;        /* log2(1024) = 10 */
    f.flops = 3;          /* log2(4) = 2 */
    f.arith_intensity = 7; /* log2(8) = 3 */
    f.kernel[0] = 3;
    f.kernel[1] = 5;
    f.stride[1] = 2;
    f.dilation[0] = 1;
    f.dilation[1] = 2;
    f.group = 8;           /* log2(8) = 3 */
    f.cin = 15;            /* log2(16) = 4 */
    f.nn = 255;            /* log2(256) = 8 */
    assert_int_equal(pp_feat_vector(&f, v), PP_FEATVEC_LEN);
    assert_rel_close(v[0], 10, 1e-6);
    assert_rel_close(v[1], 2, 1e-6);
    assert_rel_close(v[6], 3, 1e-6);
    assert_rel_close(v[7], 3, 1e-6);
    assert_rel_close(v[8], 5, 1e-6);
    assert_rel_close(v[10], 2, 1e-6);
    assert_rel_close(v[11], 2, 1e-6);
    assert_rel_close(v[12], 3, 1e-6);
    assert_rel_close(v[14], 4, 1e-6);
    assert_rel_close(v[22], 8, 1e-6);
    assert_true(v[2] == 0.0f && v[13] == 0.0f && v[20] == 0.0f);
    assert_int_equal(pp_feat_vector(NULL, v), -1);
}

/* ------------------------------------------------------------ public model ---- */

/* A tiny ONNX model built with the generated protobuf-c code (so the test needs no fixture file):
 *   x[N,3,8,8] -> Conv(W1[4,3,3,3], B1[4], pads 1) -> Relu -> GlobalAveragePool -> Flatten
 *              -> Gemm(W2[10,4], B2[10], transB) -> y[N,10]                                    */
typedef struct mbuild {
    Onnx__NodeProto node[8];
    Onnx__NodeProto *nodep[8];
    int n_node;
    Onnx__AttributeProto attr[16];
    Onnx__AttributeProto *attrp[16];
    int n_attr;
    Onnx__TensorProto init[8];
    Onnx__TensorProto *initp[8];
    void *init_data[8];
    int n_init;
    Onnx__ValueInfoProto vi[4];
    Onnx__ValueInfoProto *vip[4];
    Onnx__TypeProto tp[4];
    Onnx__TypeProto__Tensor tt[4];
    Onnx__TensorShapeProto shp[4];
    Onnx__TensorShapeProto__Dimension dim[4][8];
    Onnx__TensorShapeProto__Dimension *dimp[4][8];
    int n_vi;
} mbuild;

static Onnx__ValueInfoProto *mb_value(mbuild *b, char *name, const char *dim0_param, int rank,
                                      const int64_t *dims)
{
    int k = b->n_vi++;
    onnx__value_info_proto__init(&b->vi[k]);
    onnx__type_proto__init(&b->tp[k]);
    onnx__type_proto__tensor__init(&b->tt[k]);
    onnx__tensor_shape_proto__init(&b->shp[k]);
    for (int d = 0; d < rank; d++) {
        Onnx__TensorShapeProto__Dimension *D = &b->dim[k][d];
        onnx__tensor_shape_proto__dimension__init(D);
        if (d == 0 && dim0_param) {
            D->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            D->dim_param = (char *)dim0_param;
        } else {
            D->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            D->dim_value = dims[d];
        }
        b->dimp[k][d] = D;
    }
    b->shp[k].n_dim = (size_t)rank;
    b->shp[k].dim = b->dimp[k];
    b->tt[k].has_elem_type = 1;
    b->tt[k].elem_type = PP_DT_FLOAT;
    b->tt[k].shape = &b->shp[k];
    b->tp[k].value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    b->tp[k].tensor_type = &b->tt[k];
    b->vi[k].name = name;
    b->vi[k].type = &b->tp[k];
    b->vip[k] = &b->vi[k];
    return &b->vi[k];
}

static void mb_init(mbuild *b, char *name, int rank, const int64_t *dims)
{
    int k = b->n_init++;
    Onnx__TensorProto *t = &b->init[k];
    onnx__tensor_proto__init(t);
    size_t n = 1;
    for (int d = 0; d < rank; d++) n *= (size_t)dims[d];
    t->name = name;
    t->n_dims = (size_t)rank;
    t->dims = (int64_t *)dims;
    t->has_data_type = 1;
    t->data_type = PP_DT_FLOAT;
    b->init_data[k] = calloc(n, sizeof(float));
    assert_non_null(b->init_data[k]);
    t->has_raw_data = 1;
    t->raw_data.len = n * sizeof(float);
    t->raw_data.data = b->init_data[k];
    b->initp[k] = t;
}

static Onnx__NodeProto *mb_node(mbuild *b, char *name, char *op, int n_in, char **in, int n_out,
                                char **out)
{
    Onnx__NodeProto *n = &b->node[b->n_node];
    onnx__node_proto__init(n);
    n->name = name;
    n->op_type = op;
    n->n_input = (size_t)n_in;
    n->input = in;
    n->n_output = (size_t)n_out;
    n->output = out;
    n->attribute = &b->attrp[b->n_attr];
    b->nodep[b->n_node++] = n;
    return n;
}

/* Attributes must be added right after their node (they are a contiguous slice). */
static void mb_attr(mbuild *b, Onnx__NodeProto *n, char *name, int cnt, int64_t *ints, int64_t i)
{
    Onnx__AttributeProto *a = &b->attr[b->n_attr];
    onnx__attribute_proto__init(a);
    a->name = name;
    a->has_type = 1;
    if (ints) {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->n_ints = (size_t)cnt;
        a->ints = ints;
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = i;
    }
    b->attrp[b->n_attr++] = a;
    n->n_attribute++;
}

/* Writes the model to a temporary file; returns its path (static buffer of pp_test_tmpfile). */
static const char *write_small_cnn(void)
{
    static mbuild b;
    memset(&b, 0, sizeof b);
    static const int64_t x_dims[] = {1, 3, 8, 8}, y_dims[] = {1, 10};
    static const int64_t w1[] = {4, 3, 3, 3}, b1[] = {4}, w2[] = {10, 4}, b2[] = {10};
    static int64_t pads[] = {1, 1, 1, 1};
    static char *conv_in[] = {"x", "W1", "B1"}, *conv_out[] = {"c"};
    static char *relu_in[] = {"c"}, *relu_out[] = {"r"};
    static char *gap_in[] = {"r"}, *gap_out[] = {"p"};
    static char *flat_in[] = {"p"}, *flat_out[] = {"f"};
    static char *gemm_in[] = {"f", "W2", "B2"}, *gemm_out[] = {"y"};
    mb_init(&b, "W1", 4, w1);
    mb_init(&b, "B1", 1, b1);
    mb_init(&b, "W2", 2, w2);
    mb_init(&b, "B2", 1, b2);
    Onnx__NodeProto *n = mb_node(&b, "conv0", "Conv", 3, conv_in, 1, conv_out);
    mb_attr(&b, n, "pads", 4, pads, 0);
    mb_node(&b, "relu0", "Relu", 1, relu_in, 1, relu_out);
    mb_node(&b, "gap", "GlobalAveragePool", 1, gap_in, 1, gap_out);
    n = mb_node(&b, "flatten", "Flatten", 1, flat_in, 1, flat_out);
    mb_attr(&b, n, "axis", 0, NULL, 1);
    n = mb_node(&b, "fc", "Gemm", 3, gemm_in, 1, gemm_out);
    mb_attr(&b, n, "transB", 0, NULL, 1);
    Onnx__ValueInfoProto *in = mb_value(&b, "x", "N", 4, x_dims);
    Onnx__ValueInfoProto *out = mb_value(&b, "y", "N", 2, y_dims);

    Onnx__GraphProto gp;
    onnx__graph_proto__init(&gp);
    gp.name = "small_cnn";
    gp.n_node = (size_t)b.n_node;
    gp.node = b.nodep;
    gp.n_initializer = (size_t)b.n_init;
    gp.initializer = b.initp;
    gp.n_input = 1;
    gp.input = &in;
    gp.n_output = 1;
    gp.output = &out;
    Onnx__OperatorSetIdProto op;
    onnx__operator_set_id_proto__init(&op);
    op.domain = "";
    op.has_version = 1;
    op.version = 17;
    Onnx__OperatorSetIdProto *opp = &op;
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.producer_name = "test_features";
    m.n_opset_import = 1;
    m.opset_import = &opp;
    m.graph = &gp;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    onnx__model_proto__pack(&m, buf);
    const char *path = pp_test_tmpfile(buf, len, ".onnx");
    free(buf);
    for (int i = 0; i < b.n_init; i++) free(b.init_data[i]);
    assert_non_null(path);
    return path;
}

static void model_load_should_expose_totals_layers_and_inputs(void **state)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", write_small_cnn());
    perfpred_model_params p = perfpred_model_default_params();
    p.batch = 2; /* resolves the symbolic N */
    perfpred_status st = PERFPRED_ERR_INTERNAL;
    char errbuf[1024];
    perfpred_model *m = perfpred_model_load(path, &p, &st, errbuf, sizeof errbuf);
    unlink(path);
    if (!m) fail_msg("load: %s", errbuf);
    assert_int_equal(st, PERFPRED_OK);
    perfpred_model_totals t = perfpred_model_get_totals(m);
    assert_int_equal(t.n_nodes, 5);
    /* conv: 2*4*8*8 = 512 outputs * 3*3*3 = 13824 MACs; gemm: 2*10*4 = 80 MACs */
    assert_int_equal(t.macs, 13904);
    /* conv 2*13824 + 512 bias; relu 512; gap 512 (in elems); gemm 2*80 + 20 bias */
    assert_int_equal(t.flops, 28160 + 512 + 512 + 180);
    assert_int_equal(t.params, 4 * 3 * 3 * 3 + 4 + 10 * 4 + 10); /* 162 */
    assert_int_equal(t.param_bytes, 162 * 4);
    assert_int_equal(t.input_bytes, 2 * 3 * 8 * 8 * 4);                 /* 1536 */
    assert_int_equal(t.activation_bytes, 2048 + 2048 + 32 + 80);          /* flatten is a view */
    /* live: conv x+c = 3584; relu c+r = 4096; gap r+p = 2080; flatten p; gemm p+y = 112 */
    assert_int_equal(t.peak_activation_bytes, 4096);
    assert_int_equal(t.n_unknown_ops, 0);

    assert_int_equal(perfpred_model_n_layers(m), 5);
    perfpred_layer_info L = perfpred_model_layer(m, 0);
    assert_string_equal(L.name, "conv0");
    assert_string_equal(L.op_type, "Conv");
    assert_string_equal(L.kind, "conv");
    assert_int_equal(L.out_rank, 4);
    assert_int_equal(L.out_dims[0], 2);
    assert_int_equal(L.out_dims[1], 4);
    assert_int_equal(L.out_dims[3], 8);
    assert_int_equal(L.macs, 13824);
    assert_int_equal(L.params, 112);
    assert_int_equal(L.in_bytes, 1536);
    assert_int_equal(L.out_bytes, 2048);
    L = perfpred_model_layer(m, 3);
    assert_string_equal(L.kind, "reshape");
    assert_int_equal(L.out_rank, 2);
    assert_int_equal(L.out_dims[1], 4);
    L = perfpred_model_layer(m, 4);
    assert_string_equal(L.kind, "linear");
    assert_int_equal(L.flops, 180);
    assert_null(perfpred_model_layer(m, 5).name);
    assert_null(perfpred_model_layer(m, -1).name);

    assert_int_equal(perfpred_model_n_inputs(m), 1);
    int rank = -1;
    int64_t dims[PERFPRED_MAX_RANK];
    assert_string_equal(perfpred_model_input(m, 0, &rank, dims), "x");
    assert_int_equal(rank, 4);
    assert_int_equal(dims[0], 2);
    assert_int_equal(dims[1], 3);
    assert_null(perfpred_model_input(m, 1, &rank, dims));
    assert_non_null(pp_model_graph(m));
    assert_int_equal(pp_model_graph(m)->totals.peak_node, 1); /* relu0 */
    perfpred_model_free(m);
}

typedef struct log_capture {
    int n_error;
    char last[512];
} log_capture;

static void capture_log(perfpred_log_level lvl, const char *msg, void *user)
{
    log_capture *c = user;
    if (lvl == PERFPRED_LOG_ERROR) c->n_error++;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

static void model_load_should_report_missing_file_with_path(void **state)
{
    const char *path = "/nonexistent-dir/missing-model.onnx";
    log_capture cap = {0};
    perfpred_model_params p = perfpred_model_default_params();
    p.log = capture_log;
    p.log_user = &cap;
    perfpred_status st = PERFPRED_OK;
    char errbuf[512];
    perfpred_model *m = perfpred_model_load(path, &p, &st, errbuf, sizeof errbuf);
    assert_null(m);
    assert_int_equal(st, PERFPRED_ERR_IO);
    assert_non_null(strstr(errbuf, path));
    assert_int_equal(cap.n_error, 1);
    assert_non_null(strstr(cap.last, path));
    /* a tiny errbuf is truncated, never overrun */
    char tiny[8];
    m = perfpred_model_load(path, NULL, &st, tiny, sizeof tiny);
    assert_null(m);
    assert_int_equal(strlen(tiny), 7);
}

static void model_load_should_check_params_before_reading(void **state)
{
    perfpred_status st = PERFPRED_OK;
    char errbuf[256];
    assert_null(perfpred_model_load(NULL, NULL, &st, errbuf, sizeof errbuf));
    assert_int_equal(st, PERFPRED_ERR_INVALID_ARG);
    perfpred_model_params p = perfpred_model_default_params();
    p.batch = -2;
    assert_null(perfpred_model_load("whatever.onnx", &p, &st, errbuf, sizeof errbuf));
    assert_int_equal(st, PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(errbuf, "batch"));
    p.batch = 0;
    perfpred_input_override o = {"x", 2, {1, 0}};
    p.inputs = &o;
    p.n_inputs = 1;
    assert_null(perfpred_model_load("whatever.onnx", &p, &st, errbuf, sizeof errbuf));
    assert_int_equal(st, PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(errbuf, "'x'"));
    /* NULL handles are harmless */
    perfpred_model_free(NULL);
    perfpred_model_totals t = perfpred_model_get_totals(NULL);
    assert_int_equal(t.n_nodes, 0);
    assert_int_equal(perfpred_model_n_layers(NULL), 0);
    assert_null(perfpred_model_layer(NULL, 0).name);
    assert_null(perfpred_model_input(NULL, 0, NULL, NULL));
}
/* The feature vector's log2(1 + v), table or call, is (float)log2(1 + v) bit for bit: whole
 * numbers below, at and above the table's end, fractions, zero and negatives. */
static void feat_vector_should_give_log2_1p_bit_for_bit(void **state)
{
    (void)state;
    static const double extra[] = {0.0, -3.0, 0.5, 4095.5, 1e-300, 1e15, 123456789.0};
    int n_cases = 0;
    for (int v = -2; v < 4200 + (int)(sizeof extra / sizeof extra[0]); v++) {
        int from_extra = v >= 4200;
        double d = from_extra ? extra[v - 4200] : (double)v;
        pp_node_feat f;
        memset(&f, 0, sizeof f);
        f.macs = d;
        f.cin = from_extra ? (int64_t)d : v;
        float out[PP_FEATVEC_LEN];
        assert_int_equal(pp_feat_vector(&f, out), PP_FEATVEC_LEN);
        float want_d = d > 0 ? (float)log2(1.0 + d) : 0.0f;
        float want_i = f.cin > 0 ? (float)log2(1.0 + (double)f.cin) : 0.0f;
        assert_memory_equal(&out[0], &want_d, sizeof want_d);  /* log2_macs */
        assert_memory_equal(&out[14], &want_i, sizeof want_i); /* log2_cin */
        n_cases++;
    }
    assert_true(n_cases > 4200);
}

/* Liveness reads each tensor's last consumer from the graph's links; a graph changed since it
 * was linked (here: marked so) has the readers walked node by node. Both give the same peak and
 * peak node, on models with views, branches and concatenations. */
static void liveness_should_be_the_same_from_links_and_from_a_walk(void **state)
{
    (void)state;
    static const char *const models[] = {"examples/resnet18.onnx",
                                         "tests/fixtures/models/vit_b_32.onnx",
                                         "tests/fixtures/models/googlenet.onnx",
                                         "tests/fixtures/models/densenet121.onnx",
                                         "tests/fixtures/models/efficientnet_b0.onnx"};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        for (int64_t batch = 1; batch <= 8; batch *= 8) {
            pp_graph *g = NULL;
            pp_err err = {0};
            pp_shape_opts opts = {.batch = batch};
            assert_int_equal(pp_graph_load_full(pp_test_path(models[m]), &opts, &g, &err),
                             PERFPRED_OK);
            assert_true(pp_graph_linked(g));
            int64_t peak = g->totals.peak_activation_bytes;
            int node = g->totals.peak_node;
            assert_true(peak > 0 && node >= 0);
            g->linked_nodes = -1; /* as if a node had been added since */
            g->totals.peak_activation_bytes = -1;
            g->totals.peak_node = -2;
            assert_int_equal(pp_graph_liveness(g, &err), PERFPRED_OK);
            assert_int_equal(g->totals.peak_activation_bytes, peak);
            assert_int_equal(g->totals.peak_node, node);
            pp_graph_free(g);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(feat_vector_should_give_log2_1p_bit_for_bit),
        cmocka_unit_test(features_should_count_grouped_conv_with_bias),
        cmocka_unit_test(features_should_detect_depthwise_with_multiplier),
        cmocka_unit_test(features_should_count_dilated_and_same_padded_conv),
        cmocka_unit_test(features_should_treat_1d_conv_as_width_one),
        cmocka_unit_test(features_should_count_grouped_conv_transpose),
        cmocka_unit_test(features_should_reject_conv_channel_mismatch_naming_node),
        cmocka_unit_test(features_should_count_gemm_with_transposes),
        cmocka_unit_test(features_should_broadcast_matmul_and_follow_1d_rules),
        cmocka_unit_test(features_should_reject_matmul_reduction_mismatch),
        cmocka_unit_test(features_should_report_total_overflow_as_a_shape_error),
        cmocka_unit_test(features_should_count_tied_weights_once),
        cmocka_unit_test(features_should_follow_documented_flop_conventions),
        cmocka_unit_test(features_should_price_norms_and_resize),
        cmocka_unit_test(features_should_describe_a_transpose_copy),
        cmocka_unit_test(features_should_give_folded_nodes_no_cost),
        cmocka_unit_test(features_should_treat_unknown_ops_as_elementwise),
        cmocka_unit_test(liveness_should_keep_residual_skip_live_across_branch),
        cmocka_unit_test(liveness_should_alias_views_along_a_chain),
        cmocka_unit_test(liveness_should_keep_graph_outputs_to_the_end),
        cmocka_unit_test(liveness_should_require_features_first),
        cmocka_unit_test(feat_vector_should_have_stable_length_and_names),
        cmocka_unit_test(model_load_should_report_missing_file_with_path),
        cmocka_unit_test(model_load_should_check_params_before_reading),
        cmocka_unit_test(model_load_should_expose_totals_layers_and_inputs),
        cmocka_unit_test(liveness_should_be_the_same_from_links_and_from_a_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
