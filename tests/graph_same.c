/* tests/graph_same.c: see graph_same.h. */
#include "tests/graph_same.h"

#include <string.h>

static void same_value(const pp_value *a, const pp_value *b)
{
    assert_int_equal(a->dtype, b->dtype);
    assert_int_equal(a->rank, b->rank);
    assert_int_equal(a->n, b->n);
    assert_true(!a->ival == !b->ival && !a->fval == !b->fval);
    for (int64_t i = 0; i < a->n; i++) {
        if (a->fval || b->fval) assert_memory_equal(&a->fval[i], &b->fval[i], sizeof(double));
        if (a->ival || b->ival) assert_int_equal(a->ival[i], b->ival[i]);
    }
}

static void same_feat(const pp_node_feat *a, const pp_node_feat *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->folded, b->folded);
    const double da[] = {a->macs, a->flops, a->params, a->param_bytes, a->in_bytes, a->out_bytes,
                         a->arith_intensity};
    const double db[] = {b->macs, b->flops, b->params, b->param_bytes, b->in_bytes, b->out_bytes,
                         b->arith_intensity};
    assert_memory_equal(da, db, sizeof da);
    const int64_t ia[] = {a->out_elems, a->kernel[0], a->kernel[1], a->stride[0], a->stride[1],
                          a->dilation[0], a->dilation[1], a->pads[0], a->pads[1], a->pads[2],
                          a->pads[3], a->group, a->n, a->cin, a->hin, a->win, a->cout, a->hout,
                          a->wout, a->b, a->m, a->nn, a->k, a->op_code};
    const int64_t ib[] = {b->out_elems, b->kernel[0], b->kernel[1], b->stride[0], b->stride[1],
                          b->dilation[0], b->dilation[1], b->pads[0], b->pads[1], b->pads[2],
                          b->pads[3], b->group, b->n, b->cin, b->hin, b->win, b->cout, b->hout,
                          b->wout, b->b, b->m, b->nn, b->k, b->op_code};
    assert_memory_equal(ia, ib, sizeof ia);
}

static void same_node(const pp_node *a, const pp_node *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->op_type, b->op_type);
    assert_string_equal(a->domain, b->domain);
    assert_int_equal(a->n_inputs, b->n_inputs);
    assert_int_equal(a->n_outputs, b->n_outputs);
    assert_memory_equal(a->inputs, b->inputs, (size_t)a->n_inputs * sizeof(int));
    assert_memory_equal(a->outputs, b->outputs, (size_t)a->n_outputs * sizeof(int));
    assert_int_equal(a->unknown_op, b->unknown_op);
    assert_int_equal(a->n_attrs, b->n_attrs);
    for (int k = 0; k < a->n_attrs; k++) {
        const pp_attr *x = &a->attrs[k], *y = &b->attrs[k];
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->type, y->type);
        assert_int_equal(x->i, y->i);
        assert_memory_equal(&x->f, &y->f, sizeof x->f);
        assert_int_equal(x->n, y->n);
        if (x->type == PP_ATTR_INTS)
            assert_memory_equal(x->ints, y->ints, (size_t)x->n * sizeof(int64_t));
    }
    same_feat(&a->feat, &b->feat);
    assert_memory_equal(&a->feat, &b->feat, sizeof a->feat); /* padding included */
}

void pp_test_same_graph(const pp_graph *a, const pp_graph *b)
{
    assert_null(a->memo);
    assert_null(b->memo);
    assert_int_equal(a->n_tensors, b->n_tensors);
    assert_int_equal(a->n_nodes, b->n_nodes);
    assert_int_equal(a->n_inputs, b->n_inputs);
    assert_int_equal(a->n_outputs, b->n_outputs);
    assert_memory_equal(a->inputs, b->inputs, (size_t)a->n_inputs * sizeof(int));
    assert_memory_equal(a->outputs, b->outputs, (size_t)a->n_outputs * sizeof(int));
    for (int t = 0; t < a->n_tensors; t++) {
        const pp_tensor *x = &a->tensors[t], *y = &b->tensors[t];
        assert_string_equal(x->name, y->name);
        assert_int_equal(pp_graph_find(a, x->name), t);
        assert_int_equal(pp_graph_find(b, y->name), t);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->rank, y->rank);
        assert_memory_equal(x->dims, y->dims, sizeof x->dims);
        assert_memory_equal(x->dim_param, y->dim_param, sizeof x->dim_param);
        assert_int_equal(x->flags, y->flags);
        assert_int_equal(x->producer, y->producer);
        assert_int_equal(x->n_consumers, y->n_consumers);
        same_value(&x->val, &y->val);
    }
    for (int i = 0; i < a->n_nodes; i++) same_node(&a->nodes[i], &b->nodes[i]);
    assert_memory_equal(&a->totals, &b->totals, sizeof a->totals);
}
