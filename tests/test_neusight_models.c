/* tests/test_neusight_models.c: NeuSight's whole-model labels: the Python-literal parser, strict
 * node tables (bad rows with file:line), fx nodes mapped to ONNX-IR (kinds, shapes, MACs worked by
 * hand), the repeated block, and the whole check on the real A100 inference labels. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval.h"

#define NEUSIGHT_ROOT PP_SOURCE_DIR "/../shared/datasets/neusight"
static int has_neusight(void) { return access(NEUSIGHT_ROOT "/SOURCE.md", R_OK) == 0; }

#define HDR                                                                                        \
    "op,target,_input_nodes,_args,_kwargs,meta,input_shapes,input_contiguous,output_shape,dtype,"  \
    "latency,fw_latency,Name\n"
#define META(stack) "\"{'nn_module_stack': OrderedDict([" stack "])}\""
#define MOD(path, cls) "('" path "', <class '" cls "'>)"

/* Writes text to a temporary .csv and reads it as a node table (the file is removed again). */
static pp_fx_table *table_of(const char *text, perfpred_status *st, pp_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", pp_test_tmpfile(text, strlen(text), ".csv"));
    pp_fx_table *t = NULL;
    *st = pp_datasets_fx_read(path, &t, err);
    unlink(path);
    return t;
}

/* A small attention-like model: Linear, gelu, shape arithmetic, views, matmul, softmax, LayerNorm,
 * an add of a Python number, a callee with no mapping and a node that reads it. */
static const char *const mini =
    HDR
    /* 2 */ "placeholder,x,{},(),{},{},[],[],\"(2, 4, 8)\",torch.float32,0.0,0.0,x\n"
    /* 3 */ "call_module,lin,{x: None},\"(x,)\",{},"
    META(MOD("lin", "torch.nn.modules.linear.Linear"))
    ",\"[[2, 4, 8]]\",[True],\"(2, 4, 16)\",torch.float32,0.5,0.5,lin\n"
    /* 4 */ "call_function,<built-in function gelu>,{lin: None},\"(lin,)\",{},{},\"[[2, 4, 16]]\","
    "[True],\"(2, 4, 16)\",torch.float32,0.1,0.1,gelu\n"
    /* 5 */ "call_method,size,{gelu: None},\"(gelu,)\",{},{},\"[[2, 4, 16]]\",[True],\"(1,)\",,"
    "0.006,0.006,size\n"
    /* 6 */ "call_method,view,\"{gelu: None, size: None}\",\"(gelu, size, 2, 8)\",{},{},"
    "\"[[2, 4, 16], [1]]\",\"[True, True]\",\"(2, 4, 2, 8)\",torch.float32,0.008,0.008,view\n"
    /* 7 */ "call_method,permute,{view: None},\"(view, 0, 2, 1, 3)\",{},{},\"[[2, 4, 2, 8]]\","
    "[True],\"(2, 2, 4, 8)\",torch.float32,0.008,0.008,permute\n"
    /* 8 */ "call_method,transpose,{permute: None},\"(permute, -1, -2)\",{},{},\"[[2, 2, 4, 8]]\","
    "[False],\"(2, 2, 8, 4)\",torch.float32,0.008,0.008,transpose\n"
    /* 9 */ "call_function,<built-in method matmul of type object at 0x7f00>,"
    "\"{permute: None, transpose: None}\",\"(permute, transpose)\",{},{},"
    "\"[[2, 2, 4, 8], [2, 2, 8, 4]]\",\"[False, False]\",\"(2, 2, 4, 4)\",torch.float32,0.2,0.2,"
    "matmul\n"
    /* 10 */ "call_function,<function softmax at 0x7f01>,{matmul: None},\"(matmul,)\","
    "\"{'dim': -1, '_stacklevel': 3, 'dtype': None}\",{},\"[[2, 2, 4, 4]]\",[True],"
    "\"(2, 2, 4, 4)\",torch.float32,0.05,0.05,softmax\n"
    /* 11 */ "call_module,norm,{x: None},\"(x,)\",{},"
    META(MOD("norm", "torch.nn.modules.normalization.LayerNorm"))
    ",\"[[2, 4, 8]]\",[True],\"(2, 4, 8)\",torch.float32,0.04,0.04,norm\n"
    /* 12 */ "call_function,<built-in function add>,{norm: None},\"(norm, 1.0)\",{},{},"
    "\"[[2, 4, 8]]\",[True],\"(2, 4, 8)\",torch.float32,0.02,0.02,add\n"
    /* 13 */ "call_function,<built-in method frobnicate of type object at 0x7f02>,{add: None},"
    "\"(add,)\",{},{},\"[[2, 4, 8]]\",[True],\"(2, 4, 8)\",torch.float32,0.03,0.03,frob\n"
    /* 14 */ "call_function,<built-in function mul>,\"{frob: None, add: None}\",\"(frob, add)\","
    "{},{},"
    "\"[[2, 4, 8], [2, 4, 8]]\",\"[True, True]\",\"(2, 4, 8)\",torch.float32,0.02,0.02,mul\n"
    /* 15 */ "output,output,\"{softmax: None, mul: None}\",\"((softmax, mul),)\",{},{},"
    "\"[[2, 2, 4, 4], [2, 4, 8]]\",\"[True, True]\",\"(2, 2, 4, 4)\",torch.float32,0.0,0.0,"
    "output\n";

static void literal_parser_should_read_python_reprs(void **state)
{
    pp_arena *a = pp_arena_new();
    char why[160];
    pp_pv *v = pp_datasets_pv_parse("(x, (slice(None, -1, None), 0), {'dim': -1, 'dtype': torch.float32}, "
                                    "-3.4028234663852886e+38, [1, 2,], 'it\\'s', ..., -inf)",
                                    a, why, sizeof why);
    assert_non_null(v);
    assert_int_equal(v->k, PP_PV_TUPLE);
    assert_int_equal(v->n, 8);
    assert_int_equal(v->items[0].k, PP_PV_NAME);
    assert_string_equal(v->items[0].s, "x");
    const pp_pv *ix = &v->items[1];
    assert_int_equal(ix->k, PP_PV_TUPLE);
    assert_int_equal(ix->items[0].k, PP_PV_CALL);
    assert_string_equal(ix->items[0].s, "slice");
    assert_int_equal(ix->items[0].n, 3);
    assert_int_equal(ix->items[0].items[0].k, PP_PV_NONE);
    assert_int_equal(ix->items[0].items[1].i, -1);
    assert_int_equal(ix->items[1].k, PP_PV_INT);
    const pp_pv *d = &v->items[2];
    assert_int_equal(d->k, PP_PV_DICT);
    assert_int_equal(d->n, 2);
    assert_string_equal(d->items[0].s, "dim");
    assert_int_equal(d->items[1].i, -1);
    assert_string_equal(d->items[3].s, "torch.float32");
    assert_int_equal(v->items[3].k, PP_PV_FLOAT);
    assert_rel_close(v->items[3].f, -3.4028234663852886e+38, 1e-15);
    assert_int_equal(v->items[4].k, PP_PV_LIST);
    assert_int_equal(v->items[4].n, 2);
    assert_string_equal(v->items[5].s, "it's");
    assert_string_equal(v->items[6].s, "Ellipsis");
    assert_int_equal(v->items[7].k, PP_PV_FLOAT);
    assert_true(isinf(v->items[7].f) && v->items[7].f < 0);
    assert_null(pp_datasets_pv_parse("(a, b", a, why, sizeof why));
    assert_non_null(strstr(why, "expected"));
    assert_null(pp_datasets_pv_parse("(a) extra", a, why, sizeof why));
    assert_non_null(strstr(why, "trailing"));
    assert_null(pp_datasets_pv_parse("<class 'x'>", a, why, sizeof why));
    pp_arena_free(a);
}

static int row_of(const pp_fx_table *t, const char *name)
{
    int r = pp_datasets_fx_find(t, name);
    assert_true(r >= 0);
    return r;
}

/* The graph node of row r (copy 0) with op type op, or -1. */
static int node_of(const pp_fx_graph *fg, int r, const char *op)
{
    for (int i = 0; i < fg->g->n_nodes; i++)
        if (fg->node_row[i] == r && fg->node_copy[i] == 0 && !strcmp(fg->g->nodes[i].op_type, op))
            return i;
    return -1;
}

static int n_nodes_of(const pp_fx_graph *fg, int r)
{
    int n = 0;
    for (int i = 0; i < fg->g->n_nodes; i++) n += fg->node_row[i] == r;
    return n;
}

static void table_should_map_nodes_to_the_expected_graph(void **state)
{
    perfpred_status st;
    pp_err err = {0};
    pp_fx_table *t = table_of(mini, &st, &err);
    assert_int_equal(st, PERFPRED_OK);
    assert_int_equal(t->n, 14);
    assert_int_equal(t->bad.n, 0);
    assert_string_equal(t->rows[row_of(t, "matmul")].fn, "matmul");
    assert_string_equal(t->rows[row_of(t, "lin")].fn, "Linear");
    assert_int_equal(t->rows[row_of(t, "matmul")].line, 9);
    pp_fx_graph fg;
    assert_int_equal(pp_eval_fx_graph_build(t, NULL, &fg, &err), PERFPRED_OK);
    assert_int_equal(fg.block_start, -1);
    assert_int_equal(fg.n_blocks, 1);
    /* classes */
    assert_int_equal(fg.cls[row_of(t, "x")], PP_FXC_SOURCE);
    assert_int_equal(fg.cls[row_of(t, "size")], PP_FXC_HOST);
    assert_int_equal(fg.cls[row_of(t, "output")], PP_FXC_SOURCE);
    assert_int_equal(fg.cls[row_of(t, "frob")], PP_FXC_UNMAPPED);
    assert_non_null(strstr(fg.why[row_of(t, "frob")], "frobnicate"));
    const char *mapped[] = {"lin", "gelu", "view", "permute", "transpose", "matmul",
                            "softmax", "norm", "add", "mul"};
    for (size_t i = 0; i < sizeof mapped / sizeof mapped[0]; i++)
        assert_int_equal(fg.cls[row_of(t, mapped[i])], PP_FXC_MAPPED);
    /* Linear: Reshape [8, 8], Gemm with W [16, 8] and bias [16], Reshape back; 10 more nodes */
    assert_int_equal(n_nodes_of(&fg, row_of(t, "lin")), 3);
    assert_int_equal(fg.g->n_nodes, 12);
    const pp_graph *g = fg.g;
    int gemm = node_of(&fg, row_of(t, "lin"), "Gemm");
    assert_true(gemm >= 0);
    assert_int_equal(g->nodes[gemm].feat.kind, PP_OPK_LINEAR);
    assert_rel_close(g->nodes[gemm].feat.macs, 8.0 * 16 * 8, 1e-12); /* M=2*4, N=16, K=8 */
    assert_rel_close(g->nodes[gemm].feat.params, 16.0 * 8 + 16, 1e-12);
    int mm = node_of(&fg, row_of(t, "matmul"), "MatMul");
    assert_true(mm >= 0);
    assert_int_equal(g->nodes[mm].feat.kind, PP_OPK_BMM);
    assert_rel_close(g->nodes[mm].feat.macs, 4.0 * 4 * 4 * 8, 1e-12); /* batch 2*2, 4x4, K=8 */
    assert_int_equal(g->totals.macs, 1024 + 512);
    assert_true(node_of(&fg, row_of(t, "gelu"), "Gelu") >= 0);
    assert_true(node_of(&fg, row_of(t, "softmax"), "Softmax") >= 0);
    int ln = node_of(&fg, row_of(t, "norm"), "LayerNormalization");
    assert_true(ln >= 0);
    assert_int_equal(g->nodes[ln].feat.kind, PP_OPK_NORM);
    assert_int_equal(g->nodes[node_of(&fg, row_of(t, "permute"), "Reshape")].feat.kind,
                     PP_OPK_RESHAPE);
    assert_int_equal(g->nodes[node_of(&fg, row_of(t, "add"), "Add")].feat.kind, PP_OPK_ELEMWISE);
    /* shapes as the table records them */
    const pp_tensor *y = &g->tensors[pp_graph_find(g, "lin")];
    assert_int_equal(y->rank, 3);
    assert_int_equal(y->dims[2], 16);
    const pp_tensor *mm2d = &g->tensors[pp_graph_find(g, "lin/mm")];
    assert_int_equal(mm2d->rank, 2);
    assert_int_equal(mm2d->dims[0], 8);
    assert_int_equal(mm2d->dims[1], 16);
    /* the unmapped node's output enters as a graph input; mul still maps; outputs marked */
    const pp_tensor *frob = &g->tensors[pp_graph_find(g, "frob")];
    assert_true(frob->flags & PP_T_GRAPH_INPUT);
    assert_int_equal(frob->dims[2], 8);
    assert_true(g->tensors[pp_graph_find(g, "softmax")].flags & PP_T_GRAPH_OUTPUT);
    assert_true(g->tensors[pp_graph_find(g, "mul")].flags & PP_T_GRAPH_OUTPUT);
    assert_int_equal(g->n_outputs, 2);
    pp_graph_free(fg.g);
    pp_datasets_fx_free(t);
}

static const char *const blocks =
    HDR
    /* 2 */ "placeholder,x,{},(),{},{},[],[],\"(4, 8)\",torch.float32,0.0,0.0,x\n"
    /* 3 */ "call_module,emb_norm,{x: None},\"(x,)\",{},"
    META(MOD("emb_norm", "torch.nn.modules.normalization.LayerNorm"))
    ",\"[[4, 8]]\",[True],\"(4, 8)\",torch.float32,0.01,0.01,emb_norm\n"
    /* 4 */ "call_module,enc.layer.0.fc,{emb_norm: None},\"(emb_norm,)\",{},"
    META(MOD("enc", "m.Enc") ", " MOD("enc.layer.0", "m.Layer") ", "
         MOD("enc.layer.0.fc", "torch.nn.modules.linear.Linear"))
    ",\"[[4, 8]]\",[True],\"(4, 8)\",torch.float32,0.1,0.1,enc_layer_0_fc\n"
    /* 5 */ "call_function,<built-in method relu of type object at 0x1>,{enc_layer_0_fc: None},"
    "\"(enc_layer_0_fc,)\",{}," META(MOD("enc", "m.Enc") ", " MOD("enc.layer.0", "m.Layer"))
    ",\"[[4, 8]]\",[True],\"(4, 8)\",torch.float32,0.01,0.01,relu\n"
    /* 6 */ "call_function,<built-in function add>,\"{relu: None, emb_norm: None}\","
    "\"(relu, emb_norm)\",{}," META(MOD("enc", "m.Enc") ", " MOD("enc.layer.0", "m.Layer"))
    ",\"[[4, 8], [4, 8]]\",\"[True, True]\",\"(4, 8)\",torch.float32,0.01,0.01,add\n"
    /* 7 */ "call_module,head,{add: None},\"(add,)\",{},"
    META(MOD("head", "torch.nn.modules.linear.Linear"))
    ",\"[[4, 8]]\",[True],\"(4, 2)\",torch.float32,0.02,0.02,head\n"
    /* 8 */ "output,output,{head: None},\"(head,)\",{},{},\"[[4, 2]]\",[True],\"(4, 2)\","
    "torch.float32,0.0,0.0,output\n";

static const char *input_name(const pp_graph *g, const char *node, int k)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, node)) return g->tensors[g->nodes[i].inputs[k]].name;
    return "(no such node)";
}

static void graph_should_repeat_the_block_and_chain_the_copies(void **state)
{
    perfpred_status st;
    pp_err err = {0};
    pp_fx_table *t = table_of(blocks, &st, &err);
    assert_int_equal(st, PERFPRED_OK);
    assert_int_equal(t->bad.n, 0);
    assert_false(t->rows[row_of(t, "emb_norm")].in_block);
    assert_true(t->rows[row_of(t, "relu")].in_block);
    pp_fx_build_params p = pp_eval_fx_build_default_params();
    p.n_blocks = 3;
    pp_fx_graph fg;
    assert_int_equal(pp_eval_fx_graph_build(t, &p, &fg, &err), PERFPRED_OK);
    assert_int_equal(fg.block_start, row_of(t, "enc_layer_0_fc"));
    assert_int_equal(fg.block_end, row_of(t, "add"));
    assert_int_equal(fg.carried_row, row_of(t, "emb_norm"));
    assert_int_equal(fg.n_blocks, 3);
    const pp_graph *g = fg.g;
    /* LayerNorm + 3 x (Gemm, Relu, Add) + head Gemm */
    assert_int_equal(g->n_nodes, 11);
    assert_int_equal(g->totals.macs, 3 * 4 * 8 * 8 + 4 * 2 * 8);
    /* block 1 reads block 0's output, for the Linear and for the residual add; the head reads
     * the last block */
    assert_string_equal(input_name(g, "enc_layer_0_fc", 0), "emb_norm");
    assert_string_equal(input_name(g, "enc_layer_0_fc@1", 0), "add");
    assert_string_equal(input_name(g, "add@1", 1), "add");
    assert_string_equal(input_name(g, "add@2", 1), "add@1");
    assert_string_equal(input_name(g, "head", 0), "add@2");
    int copies[3] = {0, 0, 0};
    for (int i = 0; i < g->n_nodes; i++)
        if (fg.node_row[i] == row_of(t, "relu")) copies[fg.node_copy[i]]++;
    assert_int_equal(copies[0] + copies[1] + copies[2], 3);
    assert_int_equal(copies[2], 1);
    pp_graph_free(fg.g);
    /* without repetition the table is built as it is */
    p.n_blocks = 1;
    assert_int_equal(pp_eval_fx_graph_build(t, &p, &fg, &err), PERFPRED_OK);
    assert_int_equal(fg.g->n_nodes, 5);
    pp_graph_free(fg.g);
    pp_datasets_fx_free(t);
}

static void table_should_list_bad_rows_with_file_and_line(void **state)
{
    const char *text =
        HDR
        /* 2 */ "placeholder,x,{},(),{},{},[],[],\"(2, 4)\",torch.float32,0.0,0.0,x\n"
        /* 3 */ "call_function,<built-in function add>,{x: None},\"(x, 1)\",{},{},\"[[2, 4]]\","
        "[True],\"(2, x)\",torch.float32,0.01,0.01,add\n"
        /* 4 */ "call_something,f,{x: None},\"(x,)\",{},{},\"[[2, 4]]\",[True],\"(2, 4)\","
        "torch.float32,0.01,0.01,f\n"
        /* 5 */ "call_function,<built-in function mul>,{ghost: None},\"(ghost, 2)\",{},{},"
        "\"[[2, 4]]\",[True],\"(2, 4)\",torch.float32,0.01,0.01,mul\n"
        /* 6 */ "call_function,<built-in method relu of type object at 0x1>,{x: None},\"(x,)\",{},"
        "{},\"[[3, 3]]\",[True],\"(2, 4)\",torch.float32,0.01,0.01,relu\n"
        /* 7 */ "call_function,<built-in method tanh of type object at 0x1>,{x: None},\"(x,)\",{},"
        "{},\"[[2, 4]]\",[True],\"(2, 4)\",torch.float32,fast,0.01,tanh\n"
        /* 8 */ "call_function,<built-in method sigmoid of type object at 0x1>,{add: None},"
        "\"(add,)\",{},{},\"[[2, 4]]\",[True],\"(2, 4)\",torch.float32,0.01,0.01,sig\n"
        /* 9 */ "placeholder,y,{},()\n";
    perfpred_status st;
    pp_err err = {0};
    pp_fx_table *t = table_of(text, &st, &err);
    assert_int_equal(st, PERFPRED_OK);
    assert_int_equal(t->n, 8);
    assert_int_equal(t->bad.n, 6);
    const char *want[] = {".csv:3: output_shape", ".csv:4: unknown op",
                          ".csv:5: input 'ghost'", ".csv:6: input 'x' has shape (3, 3)",
                          ".csv:7: latency 'fast'", ".csv:9: 4 fields"};
    for (int i = 0; i < 6; i++) {
        assert_non_null(t->bad.msgs[i]);
        if (!strstr(t->bad.msgs[i], want[i])) fail_msg("'%s' lacks '%s'", t->bad.msgs[i], want[i]);
    }
    assert_false(t->rows[row_of(t, "sig")].bad);
    /* the graph still builds: bad rows and their consumers stay out of it, listed */
    pp_fx_graph fg;
    assert_int_equal(pp_eval_fx_graph_build(t, NULL, &fg, &err), PERFPRED_OK);
    assert_int_equal(fg.cls[row_of(t, "add")], PP_FXC_BAD);
    assert_int_equal(fg.cls[row_of(t, "sig")], PP_FXC_UNMAPPED);
    assert_non_null(strstr(fg.why[row_of(t, "sig")], "line 3"));
    assert_int_equal(fg.g->n_nodes, 0);
    pp_graph_free(fg.g);
    pp_datasets_fx_free(t);

    /* header problems fail the whole file, naming line 1 */
    const char *unknown = "op,target,_input_nodes,_args,_kwargs,meta,input_shapes,input_contiguous,"
                          "output_shape,dtype,latency,fw_latency,Name,colour\n";
    assert_null(table_of(unknown, &st, &err));
    assert_int_equal(st, PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, ".csv:1: unknown column 'colour'"));
    const char *missing = "op,target,_input_nodes,_args,_kwargs,meta,input_shapes,input_contiguous,"
                          "output_shape,latency,fw_latency,Name\n";
    assert_null(table_of(missing, &st, &err));
    assert_int_equal(st, PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'dtype'"));
}

static void graph_should_reject_a_recorded_shape_it_cannot_reproduce(void **state)
{
    /* the matmul row (line 9) records (2, 2, 4, 5): [2,2,4,8] x [2,2,8,4] gives (2, 2, 4, 4) */
    char text[8192];
    snprintf(text, sizeof text, "%s", mini);
    char *mm = strstr(text, "\"(2, 2, 4, 4)\",torch.float32,0.2,0.2,matmul");
    assert_non_null(mm);
    mm[11] = '5';
    perfpred_status st;
    pp_err err = {0};
    pp_fx_table *t = table_of(text, &st, &err);
    assert_int_equal(st, PERFPRED_OK);
    /* softmax now reads a (2, 2, 4, 5) input but records [[2, 2, 4, 4]]: a bad row of line 10 */
    assert_int_equal(t->bad.n, 1);
    assert_non_null(strstr(t->bad.msgs[0], ".csv:10: input 'matmul'"));
    pp_fx_graph fg;
    assert_int_equal(pp_eval_fx_graph_build(t, NULL, &fg, &err), PERFPRED_ERR_SHAPE);
    assert_non_null(strstr(err.msg, ".csv:9: node 'matmul'"));
    assert_non_null(strstr(err.msg, "(2, 2, 4, 4)"));
    assert_null(fg.g);
    pp_datasets_fx_free(t);
}

static void label_and_config_should_parse_strictly(void **state)
{
    char model[48];
    int64_t seq, batch;
    pp_err err = {0};
    assert_int_equal(pp_eval_neusight_label_parse("gpt2_large-inf-1024-4", model, sizeof model,
                                                  &seq, &batch, &err),
                     PERFPRED_OK);
    assert_string_equal(model, "gpt2_large");
    assert_int_equal(seq, 1024);
    assert_int_equal(batch, 4);
    assert_int_equal(pp_eval_neusight_label_parse("gpt2_large-train-1024-4", model, sizeof model,
                                                  &seq, &batch, &err),
                     PERFPRED_ERR_PARSE);
    assert_int_equal(pp_eval_neusight_label_parse("opt-inf-2048-x", model, sizeof model, &seq,
                                                  &batch, &err),
                     PERFPRED_ERR_PARSE);
    const char *cfg = "{\"vocab_size\": 50257, \"n_positions\": 1024, \"n_embd\": 1280}";
    char path[4096];
    snprintf(path, sizeof path, "%s", pp_test_tmpfile(cfg, strlen(cfg), ".json"));
    pp_fx_build_params p = pp_eval_fx_build_default_params();
    assert_int_equal(pp_eval_fx_hf_config_read(path, &p, &err), PERFPRED_OK);
    unlink(path);
    assert_int_equal(p.vocab_rows, 50257);
    assert_int_equal(p.position_rows, 1024);
    assert_int_equal(p.token_type_rows, 0);
    const char *bad = "{\"vocab_size\": 1.5}";
    snprintf(path, sizeof path, "%s", pp_test_tmpfile(bad, strlen(bad), ".json"));
    assert_int_equal(pp_eval_fx_hf_config_read(path, &p, &err), PERFPRED_ERR_PARSE);
    unlink(path);
    assert_non_null(strstr(err.msg, "vocab_size"));
}

static void report_should_judge_the_smallest_a100_label(void **state)
{
    if (!has_neusight()) skip();
    /* bert_large-inf-512-8.csv is the smallest A100-PCIE-40GB inference label (47,386 bytes) */
    const char *labels[] = {"bert_large-inf-512-8"};
    perfpred_neusight_params p = perfpred_neusight_default_params();
    p.neusight_root = NEUSIGHT_ROOT;
    p.labels = labels;
    p.n_labels = 1;
    static perfpred_neusight_report r;
    char eb[1024];
    assert_int_equal(perfpred_neusight_models_report(&p, &r, eb, sizeof eb), PERFPRED_OK);
    assert_string_equal(r.device, "a100-pcie-40gb");
    assert_int_equal(r.n_models, 1);
    assert_int_equal(r.n_failed, 0);
    const perfpred_neusight_model *m = &r.models[0];
    assert_int_equal(m->status, PERFPRED_OK);
    assert_string_equal(m->model, "bert_large");
    assert_int_equal(m->seq, 512);
    assert_int_equal(m->batch, 8);
    /* the label's .json */
    assert_int_equal(m->num_layer, 24);
    assert_rel_close(m->measured_e2e_ms, 205.5055358886719, 1e-12);
    /* NeuSight's aggregator.py repeats rows bert_encoder_layer_0_attention_self_query (line 34)
     * to bert_encoder_layer_0_output_layer_norm (line 74) */
    assert_int_equal(m->block_first_line, 34);
    assert_int_equal(m->block_last_line, 74);
    /* every row is accounted for; what is unmapped is listed and small */
    assert_int_equal(m->n_rows, 79);
    assert_int_equal(m->n_mapped + m->n_host + m->n_source + m->n_unmapped + m->n_bad, m->n_rows);
    int n_un = m->n_unmapped + m->n_bad;
    assert_int_equal(m->n_listed, n_un < PERFPRED_NS_LISTED ? n_un : PERFPRED_NS_LISTED);
    assert_true(m->unmapped_ms < 0.05 * m->measured_nodes_ms);
    /* per-node sums as NeuSight's summary.csv aggregates the same label (label_Linear, label_BMM,
     * label_VECsoftmax, label_VECln columns of bert_large 512 8 on NVIDIA_A100-PCIE-40GB) */
    assert_string_equal(m->ops[0].kind, "linear");
    assert_int_equal(m->ops[0].n, 8); /* q, k, v, out, ffn1, ffn2, pooler, classifier */
    assert_rel_close(m->ops[0].measured_ms, 247.3154, 1e-5);
    assert_string_equal(m->ops[1].kind, "bmm");
    assert_rel_close(m->ops[1].measured_ms, 37.82737, 1e-5);
    assert_string_equal(m->ops[2].kind, "softmax");
    assert_rel_close(m->ops[2].measured_ms, 5.057740, 1e-5);
    assert_string_equal(m->ops[3].kind, "norm");
    assert_rel_close(m->ops[3].measured_ms, 2.943590, 1e-5);
    /* finite predictions, mostly from the calibrated layer models */
    assert_true(isfinite(m->predicted_ms) && m->predicted_ms > 0);
    assert_true(isfinite(m->error_pct) && fabs(m->error_pct) < 50);
    assert_true(isfinite(m->roofline_ms) && m->roofline_ms > 0);
    assert_true(isfinite(m->roofline_error_pct));
    assert_true(m->calibrated_ms > 0.9 * m->predicted_ms);
    assert_true(m->n_calibrated_kernels > 0 && m->n_calibrated_kernels <= m->n_kernels);
    for (int k = 0; k < m->n_ops; k++)
        if (m->ops[k].n > 0) assert_true(isfinite(m->ops[k].mape_pct));
    assert_int_equal(r.e2e.n, 1);
    assert_rel_close(r.e2e.mape_pct, fabs(m->error_pct), 1e-9);
}

/* The whole set: every A100-PCIE-40GB inference label (docs/a100-models.md prints this table). */
static void report_should_judge_every_a100_inference_label(void **state)
{
    if (!has_neusight()) skip();
    perfpred_neusight_params p = perfpred_neusight_default_params();
    p.neusight_root = NEUSIGHT_ROOT;
    static perfpred_neusight_report r;
    char eb[1024];
    assert_int_equal(perfpred_neusight_models_report(&p, &r, eb, sizeof eb), PERFPRED_OK);
    /* BERT-large seq512 b8/16, GPT-2 large seq1024 b4/8, GPT-3 2.7B and XL seq2048 b2/8, OPT-1.3B
     * seq2048 b2/8 (SOURCE.md); the SwitchXL labels have no .csv */
    assert_int_equal(r.n_models, 10);
    assert_int_equal(r.n_failed, 0);
    print_message("| model | batch | seq | layers | measured e2e ms | per-node sum ms "
                  "| predicted ms | error %% | calibrated share %% | roofline ms "
                  "| roofline error %% | MAPE linear | bmm | softmax | norm | elemwise "
                  "| other |\n");
    for (int i = 0; i < r.n_models; i++) {
        const perfpred_neusight_model *m = &r.models[i];
        assert_int_equal(m->status, PERFPRED_OK);
        assert_int_equal(m->n_mapped + m->n_host + m->n_source + m->n_unmapped + m->n_bad,
                         m->n_rows);
        assert_true(m->unmapped_ms < 0.05 * m->measured_nodes_ms);
        assert_true(isfinite(m->error_pct) && fabs(m->error_pct) < 50);
        assert_true(isfinite(m->roofline_error_pct));
        /* the rows NeuSight's aggregator.py repeats: bert query..output LayerNorm, gpt
         * transformer_h_0_ln_1..add_15, opt self_attn_layer_norm..view_11 */
        int first = !strcmp(m->model, "bert_large") ? 34 : !strncmp(m->model, "opt", 3) ? 65 : 21;
        int last = !strcmp(m->model, "bert_large") ? 74 : !strncmp(m->model, "opt", 3) ? 128 : 122;
        assert_int_equal(m->block_first_line, first);
        assert_int_equal(m->block_last_line, last);
        char mape[6][16];
        for (int k = 0; k < 6; k++)
            snprintf(mape[k], sizeof mape[k], "%.1f / %.1f", m->ops[k].mape_pct,
                     m->ops[k].roofline_mape_pct);
        print_message("| %s | %lld | %lld | %d | %.1f | %.1f | %.1f | %+.1f | %.1f | %.1f | %+.1f "
                      "| %s | %s | %s | %s | %s | %s |\n",
                      m->model, (long long)m->batch, (long long)m->seq, m->num_layer,
                      m->measured_e2e_ms, m->measured_nodes_ms, m->predicted_ms, m->error_pct,
                      100 * m->calibrated_ms / m->predicted_ms, m->roofline_ms,
                      m->roofline_error_pct, mape[0], mape[1], mape[2], mape[3], mape[4], mape[5]);
    }
    print_message("e2e: perfpred MAPE %.2f %%, roofline alone %.2f %% (%d labels)\n",
                  r.e2e.mape_pct, r.roofline_e2e.mape_pct, r.e2e.n);
    assert_int_equal(r.e2e.n, 10);
    assert_true(r.e2e.mape_pct < r.roofline_e2e.mape_pct);
}

static void report_should_refuse_missing_parameters(void **state)
{
    perfpred_neusight_params p = perfpred_neusight_default_params();
    static perfpred_neusight_report r;
    char eb[256];
    assert_int_equal(perfpred_neusight_models_report(&p, &r, eb, sizeof eb),
                     PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "neusight_root"));
    p.neusight_root = "/nonexistent/neusight";
    assert_int_equal(perfpred_neusight_models_report(&p, &r, eb, sizeof eb), PERFPRED_ERR_IO);
    assert_non_null(strstr(eb, "/nonexistent/neusight/scripts/asplos/label/NVIDIA_A100-PCIE-40GB"));
    if (!has_neusight()) return;
    p.neusight_root = NEUSIGHT_ROOT;
    p.device = "no-such-gpu";
    assert_int_equal(perfpred_neusight_models_report(&p, &r, eb, sizeof eb), PERFPRED_ERR_DEVICE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(literal_parser_should_read_python_reprs),
        cmocka_unit_test(table_should_map_nodes_to_the_expected_graph),
        cmocka_unit_test(graph_should_repeat_the_block_and_chain_the_copies),
        cmocka_unit_test(table_should_list_bad_rows_with_file_and_line),
        cmocka_unit_test(graph_should_reject_a_recorded_shape_it_cannot_reproduce),
        cmocka_unit_test(label_and_config_should_parse_strictly),
        cmocka_unit_test(report_should_judge_the_smallest_a100_label),
        cmocka_unit_test(report_should_judge_every_a100_inference_label),
        cmocka_unit_test(report_should_refuse_missing_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
