/* layer_models/layer_graph.c: a layer measurement rebuilt as a single-node ONNX-IR graph, shape-inferred
 * and featurized by graph/, so that a benchmark layer and a node of a real model are described by
 * exactly the same code (pp_graph_features, pp_feat_vector). */
#include "layer_models/layer_models.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Tensor dtype of a math precision: TF32 is a math mode on float32 tensors. */
static int32_t precision_dtype(pp_precision p)
{
    switch (p) {
    case PP_PREC_FP16: return PP_DT_FLOAT16;
    case PP_PREC_BF16: return PP_DT_BFLOAT16;
    case PP_PREC_INT8: return PP_DT_INT8;
    default: return PP_DT_FLOAT;
    }
}

/* LayerNormalization and Gelu need opsets 17 and 20; nothing a layer row holds changed meaning
 * between 17 and 20, so every rebuilt graph claims 20. */
#define LAYER_GRAPH_OPSET 20

perfpred_status pp_layer_row_graph(const pp_layer_row *row, pp_graph **out, int *node,
                                   pp_err *err)
{
    *out = NULL;
    const char *where = row->source ? row->source : "layer row";
    if (row->n_inputs < 1 || row->n_inputs > PP_LAYER_MAX_ALL_INPUTS)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: %d inputs", where, row->n_inputs);
    pp_graph *g = pp_graph_new(where);
    if (!g) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", where);
    g->ir_version = 8;
    g->opset = LAYER_GRAPH_OPSET;
    int32_t dt = precision_dtype(row->precision);
    char names[PP_LAYER_MAX_ALL_INPUTS][16];
    const char *in_names[PP_LAYER_MAX_ALL_INPUTS];
    int n_act = 0;
    for (int i = 0; i < row->n_inputs; i++) {
        const pp_layer_input *in = pp_layer_row_input(row, i);
        if (in->role == '-') {
            in_names[i] = "";
            continue;
        }
        snprintf(names[i], sizeof names[i], "%c%d", in->role, i);
        in_names[i] = names[i];
        int t = pp_graph_tensor(g, names[i]);
        if (t < 0) goto oom;
        pp_tensor_set_shape(&g->tensors[t], dt, in->rank, in->dims);
        if (in->role == 'x') {
            g->tensors[t].flags |= PP_T_GRAPH_INPUT;
            n_act++;
        } else {
            g->tensors[t].flags |= PP_T_INITIALIZER | PP_T_WEIGHT;
        }
    }
    /* one output, but a Split as many as its parts (its `split` entries or `num_outputs`) */
    int n_out = 1;
    if (strcmp(row->op_type, "Split") == 0)
        for (int i = 0; i < row->n_attrs; i++) {
            const pp_layer_attr *a = &row->attrs[i];
            if (!strcmp(a->name, "split") && a->type == PP_ATTR_INTS && a->n > 0) n_out = a->n;
            if (!strcmp(a->name, "num_outputs") && a->type == PP_ATTR_INT && a->i > 0)
                n_out = (int)a->i;
        }
    if (n_out > PP_LAYER_MAX_OUTPUTS) {
        pp_graph_free(g);
        return pp_err_set(err, PERFPRED_ERR_UNSUPPORTED, "%s: %s with %d outputs (at most %d)",
                          where, row->op_type, n_out, PP_LAYER_MAX_OUTPUTS);
    }
    char out_buf[PP_LAYER_MAX_OUTPUTS][8];
    const char *out_name[PP_LAYER_MAX_OUTPUTS];
    for (int k = 0; k < n_out; k++) {
        snprintf(out_buf[k], sizeof out_buf[k], k ? "y%d" : "y", k);
        out_name[k] = out_buf[k];
    }
    int n = pp_graph_add_node(g, "layer", row->op_type, "", in_names, row->n_inputs, out_name,
                              n_out);
    if (n < 0) goto oom;
    g->inputs = pp_arena_array(g->arena, (size_t)n_act, sizeof(int));
    g->outputs = pp_arena_array(g->arena, (size_t)n_out, sizeof(int));
    if ((n_act && !g->inputs) || !g->outputs) goto oom;
    for (int i = 0; i < row->n_inputs; i++)
        if (pp_layer_row_input(row, i)->role == 'x')
            g->inputs[g->n_inputs++] = pp_graph_find(g, names[i]);
    for (int k = 0; k < n_out; k++) {
        int y = pp_graph_find(g, out_name[k]);
        if (y < 0) goto oom;
        g->tensors[y].flags |= PP_T_GRAPH_OUTPUT;
        g->outputs[g->n_outputs++] = y;
    }
    for (int i = 0; i < row->n_attrs; i++) {
        const pp_layer_attr *a = &row->attrs[i];
        pp_attr *at = pp_node_add_attr(g, n, a->name, a->type);
        if (!at) goto oom;
        switch (a->type) {
        case PP_ATTR_INT: at->i = a->i; break;
        case PP_ATTR_FLOAT: at->f = a->f; break;
        case PP_ATTR_STRING:
            at->s = pp_arena_strdup(g->arena, a->s);
            if (!at->s) goto oom;
            break;
        case PP_ATTR_INTS:
        case PP_ATTR_FLOATS:
            at->n = a->n;
            if (a->type == PP_ATTR_INTS) {
                at->ints = pp_arena_array(g->arena, (size_t)a->n, sizeof(int64_t));
                if (a->n && !at->ints) goto oom;
                if (a->n) memcpy(at->ints, a->ints, (size_t)a->n * sizeof(int64_t));
            } else {
                at->floats = pp_arena_array(g->arena, (size_t)a->n, sizeof(double));
                if (a->n && !at->floats) goto oom;
                if (a->n) memcpy(at->floats, a->floats, (size_t)a->n * sizeof(double));
            }
            break;
        default:
            pp_graph_free(g);
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: attribute %s has type %d", where,
                              a->name, a->type);
        }
    }
    pp_shape_opts opts;
    memset(&opts, 0, sizeof opts);
    perfpred_status st = pp_graph_link(g, err);
    if (st == PERFPRED_OK) st = pp_graph_infer_shapes(g, &opts, err);
    if (st == PERFPRED_OK) st = pp_graph_features(g, err);
    if (st != PERFPRED_OK) {
        pp_graph_free(g);
        return st;
    }
    if (g->n_nodes != 1) {
        pp_graph_free(g);
        return pp_err_set(err, PERFPRED_ERR_INTERNAL, "%s: single-node graph has %d nodes", where,
                          g->n_nodes);
    }
    if (g->nodes[0].feat.kind != row->kind) {
        perfpred_status s2 = pp_err_set(err, PERFPRED_ERR_UNSUPPORTED,
                                        "%s: %s node is op kind '%s' for graph/, the row says '%s'",
                                        where, row->op_type, pp_op_kind_name(g->nodes[0].feat.kind),
                                        pp_op_kind_name(row->kind));
        pp_graph_free(g);
        return s2;
    }
    *out = g;
    *node = 0;
    return PERFPRED_OK;
oom:
    pp_graph_free(g);
    return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", where);
}

perfpred_status pp_layer_row_features(const pp_layer_row *row, pp_node_feat *out, pp_err *err)
{
    pp_graph *g;
    int node;
    perfpred_status st = pp_layer_row_graph(row, &g, &node, err);
    if (st != PERFPRED_OK) return st;
    *out = g->nodes[node].feat;
    pp_graph_free(g);
    return PERFPRED_OK;
}

int pp_layer_row_set_inputs(pp_layer_row *r, const pp_layer_input *in, int n, pp_arena *a)
{
    if (n < 0 || n > PP_LAYER_MAX_ALL_INPUTS) return -1;
    int inl = n < PP_LAYER_MAX_INPUTS ? n : PP_LAYER_MAX_INPUTS;
    memcpy(r->inputs, in, (size_t)inl * sizeof *in);
    r->more_inputs = NULL;
    if (n > PP_LAYER_MAX_INPUTS) {
        r->more_inputs = pp_arena_array(a, (size_t)(n - inl), sizeof *in);
        if (!r->more_inputs) return -1;
        memcpy(r->more_inputs, in + inl, (size_t)(n - inl) * sizeof *in);
    }
    r->n_inputs = n;
    return 0;
}

int pp_composite_row(const pp_graph *g, int first_node, const char *eager_op, pp_layer_row *row,
                     pp_node_feat *feat)
{
    memset(row, 0, sizeof *row);
    if (!eager_op || first_node < 0 || first_node >= g->n_nodes) return -1;
    const pp_node *first = &g->nodes[first_node];
    int t = first->n_inputs > 0 ? first->inputs[0] : -1;
    if (t < 0 || g->tensors[t].rank < 0) return -1;
    const pp_tensor *x = &g->tensors[t];
    for (int d = 0; d < x->rank; d++)
        if (x->dims[d] < 1) return -1;
    row->op_type = eager_op;
    row->kind = PP_OPK_ELEMWISE;
    row->precision = x->dtype == PP_DT_FLOAT16    ? PP_PREC_FP16
                     : x->dtype == PP_DT_BFLOAT16 ? PP_PREC_BF16
                                                  : PP_PREC_FP32;
    row->batch = x->rank > 0 ? x->dims[0] : 1;
    row->n_inputs = 1;
    row->inputs[0].role = 'x';
    row->inputs[0].rank = x->rank;
    memcpy(row->inputs[0].dims, x->dims, (size_t)x->rank * sizeof x->dims[0]);
    row->latency_ms = row->latency_spread_ms = row->energy_j = NAN;
    row->repetitions = row->memory_bytes = -1;
    row->source = first->name;
    pp_err e = {0};
    return feat && pp_layer_row_features(row, feat, &e) != PERFPRED_OK ? -1 : 0;
}
