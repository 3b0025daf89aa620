/* calibrate/neusight_models.h: NeuSight's whole-model labels judged by perfpred. A label is a
 * torch.fx node table (one transformer block plus embeddings and head, with the latency of every
 * node measured on the GPU) and a .json with the measured end-to-end latency of the whole model.
 * neusight_fx.c reads the table strictly; neusight_models.c rebuilds it as an ONNX-IR graph (the
 * block repeated num_layer times), predicts it and compares. Ownership: a pp_fx_table owns its
 * arena (pp_fx_table_free); a pp_fx_graph's arrays live in the arena of its graph, which is the
 * caller's (pp_graph_free, or pp_model_wrap to hand it over). */
#ifndef PP_NEUSIGHT_MODELS_H
#define PP_NEUSIGHT_MODELS_H

#include <stdint.h>

#include "calibrate/calibrate.h"
#include "graph/graph.h"
#include "util/util.h"

/* ------------------------------------------------------------------ the node table ---- */

typedef enum pp_fx_op {
    PP_FX_PLACEHOLDER = 0,  /* a model input */
    PP_FX_GET_ATTR,         /* a parameter or buffer of the module */
    PP_FX_CALL_FUNCTION,
    PP_FX_CALL_METHOD,
    PP_FX_CALL_MODULE,
    PP_FX_OUTPUT
} pp_fx_op;

/* A parsed Python literal of the _args / _kwargs / _input_nodes columns (repr() text). */
typedef enum pp_pv_kind {
    PP_PV_NONE = 0, PP_PV_BOOL, PP_PV_INT, PP_PV_FLOAT, PP_PV_STR,
    PP_PV_NAME,             /* identifier: a node name, torch.float32, Ellipsis ... */
    PP_PV_TUPLE, PP_PV_LIST,
    PP_PV_DICT,             /* items hold key, value, key, value ... (n pairs) */
    PP_PV_CALL              /* s(items...): slice(None, 5, None) */
} pp_pv_kind;

typedef struct pp_pv {
    pp_pv_kind k;
    int64_t i;              /* INT, BOOL */
    double f;               /* FLOAT (inf allowed) */
    const char *s;          /* STR, NAME, CALL callee */
    int n;
    struct pp_pv *items;
} pp_pv;

/* Parses one Python literal (repr() text); the whole string must be consumed. Nodes live in a.
 * Returns NULL with a reason in why on malformed text or OOM. */
pp_pv *pp_pv_parse(const char *text, pp_arena *a, char *why, size_t why_n);

typedef struct pp_fx_shape {
    int rank;
    int64_t dims[PP_MAX_RANK];
} pp_fx_shape;

/* One node of the table. A row with bad != 0 failed a check (listed in the table's bad rows with
 * file:line); whatever was parsed before the failure is kept so that its consumers can name it. */
typedef struct pp_fx_row {
    int line;                /* CSV line (header is line 1) */
    int bad;
    const char *why;         /* the reason when bad */
    pp_fx_op op;
    const char *name;        /* Name column: the fx node name */
    const char *target;      /* as in the file */
    const char *fn;          /* short callee: "add", "matmul", "view"; a module's class: "Linear" */
    pp_pv *args, *kwargs;
    int n_in;                /* _input_nodes, in order (input_shapes and input_contiguous align) */
    const char **in_names;
    int *in_row;             /* row index of each input node (an earlier row) */
    pp_fx_shape *in_shape;
    unsigned char *in_contig;
    pp_fx_shape out;         /* output_shape; a Python value or 0-d tensor is recorded as (1,) */
    int32_t dtype; /* PP_DT_*; PP_DT_UNDEFINED: the node returns a Python value or tuple */
    int in_block;            /* its nn_module_stack names the first repeated block (path ".0") */
    double latency_ms;       /* latency column (fw + bw + acc) */
    double fw_latency_ms;    /* forward latency (inference: equal to latency_ms) */
} pp_fx_row;

typedef struct pp_fx_table {
    pp_arena *arena;
    const char *path;
    int n, cap;
    pp_fx_row *rows;         /* malloc'd; strings and arrays in arena */
    pp_bad_rows bad;
    void *index;             /* name -> row hash (private) */
} pp_fx_table;

/* Reads a node table. Header problems (a required column missing, an unknown or duplicate column)
 * are PERFPRED_ERR_PARSE naming file:1. Bad data rows (malformed shape or literal, unknown op, an
 * input that no earlier row defines, input shapes that differ from their producers' output shapes,
 * duplicate names, bad numbers) are kept with bad = 1, counted and listed as "file:line: reason";
 * the call still succeeds. */
perfpred_status pp_fx_table_read(const char *path, pp_fx_table **out, pp_err *err);
perfpred_status pp_fx_table_read_buffer(const char *path_for_errors, const char *buf, size_t len,
                                        pp_fx_table **out, pp_err *err);
void pp_fx_table_free(pp_fx_table *t);                 /* NULL is a no-op */
int pp_fx_table_find(const pp_fx_table *t, const char *name);  /* row index, -1 if absent */
/* "(8, 512, 1024)" into buf; the op column's names, indexed by pp_fx_op. */
void pp_fx_shape_str(const pp_fx_shape *s, char *buf, size_t n);
extern const char *const pp_fx_op_names[];

/* ------------------------------------------------------------------ the graph ---- */

typedef struct pp_fx_build_params {
    int n_blocks; /* times the repeated block runs (the label's num_layer); <= 1: once */
    /* rows of the embedding tables the table cannot state (nn.Embedding weights are not listed):
     * word (vocab_size), position (max_position_embeddings / n_positions), token type
     * (type_vocab_size); 0 = unknown: such an Embedding node stays unmapped */
    int64_t vocab_rows, position_rows, token_type_rows;
} pp_fx_build_params;
pp_fx_build_params pp_fx_build_default_params(void);

/* Fills the embedding rows from a HuggingFace config.json (vocab_size, max_position_embeddings or
 * n_positions, type_vocab_size; keys it lacks stay 0). */
perfpred_status pp_fx_hf_config_read(const char *path, pp_fx_build_params *p, pp_err *err);

typedef enum pp_fx_class {
    PP_FXC_SOURCE = 0, /* placeholder, get_attr, output: no work of its own */
    PP_FXC_HOST,       /* a Python value (size, getitem of a size, getattr, finfo, int maths):
                          shape arithmetic an ONNX export folds; no tensor, no kernel */
    PP_FXC_MAPPED,     /* one or more graph nodes */
    PP_FXC_UNMAPPED, /* no graph node (reason in why[]); a tensor output enters as a graph input */
    PP_FXC_BAD       /* a bad row of the table */
} pp_fx_class;

typedef struct pp_fx_graph {
    pp_graph *g;             /* linked, shapes inferred and checked, features and liveness done */
    int n_rows;
    pp_fx_class *cls;        /* per table row */
    const char **why;        /* per row: reason it is unmapped, else NULL */
    int block_start, block_end;  /* rows of the repeated block, -1 when none */
    int n_blocks;            /* copies of the block built (1 when none) */
    int carried_row;         /* row whose tensor block k + 1 reads from block k's last row (the
                                hidden state), -1 when the copies are not chained */
    int *node_row, *node_copy;   /* per graph node: table row and block copy (0 outside it) */
} pp_fx_graph;

/* Builds the graph of t: every row mapped to ONNX-IR (Linear -> Reshape, Gemm(transB) with weight
 * and bias, Reshape; addmm -> Gemm; matmul/bmm -> MatMul; LayerNorm -> LayerNormalization;
 * Embedding -> Gather; elementwise functions -> Add, Mul, Pow, Tanh, Gelu, Where ...;
 * view/permute/transpose -> Reshape views; contiguous of a strided tensor -> a copy; split ->
 * Split; creation ops -> ConstantOfShape), the block rows repeated p->n_blocks times. Rows that do
 * not map are classed PP_FXC_UNMAPPED with a reason; it never fails on them. Every mapped node's
 * inferred output shape and dtype must equal the table's, else PERFPRED_ERR_SHAPE naming file:line.
 */
perfpred_status pp_fx_graph_build(const pp_fx_table *t, const pp_fx_build_params *p,
                                  pp_fx_graph *out, pp_err *err);

/* ------------------------------------------------------------------ the check ---- */

/* Parses "<model>-inf-<seq>-<batch>" (the label's file name without extension). */
perfpred_status pp_neusight_label_parse(const char *label, char *model, size_t model_n,
                                        int64_t *seq, int64_t *batch, pp_err *err);

/* Judges every inference label of p->gpu (or p->labels) on p->device; see perfpred.h. Labels that
 * cannot be judged get a status and message in their entry; the call fails only on bad parameters,
 * an unreadable label folder, or a context that does not open. */
perfpred_status pp_neusight_models_report(const perfpred_neusight_params *p,
                                          perfpred_neusight_report *out, pp_err *err);

#endif
