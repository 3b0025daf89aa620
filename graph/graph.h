/* graph/: the model IR. A graph owns one arena; tensors and nodes live in growable arrays inside it.
 * The ONNX loader fills it (graph inputs, initializers, nodes, small constant values), shape inference
 * resolves every tensor's dims and folds shape arithmetic, features and liveness fill pp_node_feat and
 * pp_graph_totals. Weight payloads are never kept: only shapes, and values of small tensors. */
#ifndef PP_GRAPH_H
#define PP_GRAPH_H

#include <stdint.h>

#include "perfpred.h"
#include "util/util.h"

#define PP_MAX_RANK PERFPRED_MAX_RANK
/* Tensors with at most this many elements keep their values (shape arithmetic, Resize scales,
 * ConstantOfShape fills); larger ones (weights) keep only dtype and dims. */
#define PP_CONST_MAX_ELEMS 4096

/* ONNX TensorProto.DataType values (kept numerically identical to onnx.proto). */
enum {
    PP_DT_UNDEFINED = 0, PP_DT_FLOAT = 1, PP_DT_UINT8 = 2, PP_DT_INT8 = 3, PP_DT_UINT16 = 4,
    PP_DT_INT16 = 5, PP_DT_INT32 = 6, PP_DT_INT64 = 7, PP_DT_STRING = 8, PP_DT_BOOL = 9,
    PP_DT_FLOAT16 = 10, PP_DT_DOUBLE = 11, PP_DT_UINT32 = 12, PP_DT_UINT64 = 13,
    PP_DT_COMPLEX64 = 14, PP_DT_COMPLEX128 = 15, PP_DT_BFLOAT16 = 16
};
/* bytes per element; 0 for unknown/string. Inline: tensor sizes ask it of ~10^3 tensors a
 * network. */
static inline int pp_dtype_size(int32_t dtype)
{
    /* by PP_DT_*: undefined, float, uint8, int8, uint16, int16, int32, int64, string, bool,
     * float16, double, uint32, uint64, complex64, complex128, bfloat16 */
    static const unsigned char size[] = {0, 4, 1, 1, 2, 2, 4, 8, 0, 1, 2, 8, 4, 8, 8, 16, 2};
    return dtype >= 0 && dtype < (int32_t)sizeof size ? size[dtype] : 0;
}
int pp_dtype_is_float(int32_t dtype);
const char *pp_dtype_name(int32_t dtype);

/* A (small) tensor value. Exactly one of ival / fval is set when n >= 0 and the value is known:
 * integer and bool dtypes use ival, floating dtypes use fval (doubles). */
typedef struct pp_value {
    int32_t dtype;
    int rank;
    int64_t dims[PP_MAX_RANK];
    int64_t n;          /* element count */
    int64_t *ival;
    double *fval;
} pp_value;

enum {
    PP_T_INITIALIZER = 1u << 0,  /* listed in graph.initializer */
    PP_T_GRAPH_INPUT = 1u << 1,  /* listed in graph.input */
    PP_T_GRAPH_OUTPUT = 1u << 2, /* listed in graph.output */
    PP_T_WEIGHT = 1u << 3,       /* initializer, or graph input used as a weight (export_params=False) */
    PP_T_CONST = 1u << 4,        /* value known (t->val valid) */
    PP_T_EXTERNAL = 1u << 5,     /* initializer with external data (shape only) */
    PP_T_SHAPE_KNOWN = 1u << 6   /* rank and every dim known (>= 0) */
};

typedef struct pp_tensor {
    const char *name;
    int32_t dtype;                        /* PP_DT_*; PP_DT_UNDEFINED until known */
    int rank;                             /* -1 until known */
    int64_t dims[PP_MAX_RANK];            /* -1 for an unknown dim */
    const char *dim_param[PP_MAX_RANK];   /* symbolic dim names from the file, or NULL */
    uint32_t flags;                       /* PP_T_* */
    int producer;                         /* index of the producing node, -1 for none */
    int n_consumers;                      /* filled by pp_graph_link */
    int consumer;                         /* pp_graph_link: the last node reading it (in node
                                           * order), -1 for none; the only one when n_consumers
                                           * is 1 */
    pp_value val;                         /* valid when flags & PP_T_CONST */
} pp_tensor;

/* ONNX AttributeProto.AttributeType values. */
enum {
    PP_ATTR_UNDEFINED = 0, PP_ATTR_FLOAT = 1, PP_ATTR_INT = 2, PP_ATTR_STRING = 3,
    PP_ATTR_TENSOR = 4, PP_ATTR_GRAPH = 5, PP_ATTR_FLOATS = 6, PP_ATTR_INTS = 7,
    PP_ATTR_STRINGS = 8, PP_ATTR_TENSORS = 9, PP_ATTR_GRAPHS = 10
};

typedef struct pp_attr {
    const char *name;
    int type;               /* PP_ATTR_* */
    int64_t i;              /* INT */
    double f;               /* FLOAT */
    const char *s;          /* STRING (NUL-terminated copy) */
    int64_t n;              /* element count of INTS / FLOATS / STRINGS */
    int64_t *ints;
    double *floats;
    const char **strings;
    pp_value t;             /* TENSOR (dims always; values when small) */
} pp_attr;

/* Coarse op kinds: what a per-kind regressor or roofline term is chosen by. */
typedef enum pp_op_kind {
    PP_OPK_UNKNOWN = 0,
    PP_OPK_CONV,        /* Conv with group == 1 (or grouped, not depthwise) */
    PP_OPK_DWCONV,      /* Conv with group == C_in == C_out/multiplier */
    PP_OPK_CONVT,       /* ConvTranspose */
    PP_OPK_LINEAR,      /* Gemm, or MatMul whose B is a weight */
    PP_OPK_BMM,         /* MatMul of two activations */
    PP_OPK_POOL,        /* MaxPool, AveragePool, LpPool */
    PP_OPK_GLOBALPOOL,  /* GlobalAveragePool, GlobalMaxPool, AdaptiveAvg exported as such */
    PP_OPK_ELEMWISE,    /* Add, Mul, Relu, Sigmoid, Erf, Where, Cast, Clip, ... */
    PP_OPK_NORM,        /* BatchNormalization, LayerNormalization, InstanceNorm, GroupNorm */
    PP_OPK_SOFTMAX,     /* Softmax, LogSoftmax */
    PP_OPK_REDUCE,      /* ReduceMean, ReduceSum, ReduceMax, ... */
    PP_OPK_DATAMOVE,    /* Transpose, Concat, Slice, Split, Gather, Pad, Resize, Expand, Tile */
    PP_OPK_RESHAPE,     /* Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout: views, no kernel */
    PP_OPK_SHAPE,       /* Shape, Constant, ConstantOfShape, Range folded at load: no runtime cost */
    PP_OPK__COUNT
} pp_op_kind;
const char *pp_op_kind_name(pp_op_kind k);           /* "conv", "dwconv", "linear", ... */
int pp_op_kind_from_name(const char *name);          /* -1 if unknown */

/* Per-node features: the one description shared by real model nodes and benchmark-plan layers. */
typedef struct pp_node_feat {
    pp_op_kind kind;
    int folded;                 /* output computed at load (constant): no runtime kernel */
    double macs;                /* multiply-accumulates (Conv, ConvTranspose, Gemm, MatMul) */
    double flops;               /* 2*macs + element-wise/normalization/reduction work */
    double params;              /* elements of weight inputs */
    double param_bytes;
    double in_bytes;            /* non-weight input activation bytes read */
    double out_bytes;           /* output bytes written */
    double arith_intensity;     /* flops / (in_bytes + out_bytes + param_bytes) */
    int64_t out_elems;
    /* conv / pool attributes (2-D; 1-D ops use index 0, 3-D keep the first two) */
    int64_t kernel[2], stride[2], dilation[2], pads[4], group;
    int64_t n, cin, hin, win, cout, hout, wout;
    /* gemm/matmul: out = [b] x (m x n), reduction k */
    int64_t b, m, nn, k;
    /* which operator: a 24-bit FNV-1a hash of the op type (pp_op_code), exact in a float. Kinds
     * group operators of one shape of work, but within a kind they can run at very different
     * speeds (an Erf against a HardSwish of the same size, a MaxPool against an AveragePool), so
     * the layer models see it; the GNN's feature vector does not. */
    uint32_t op_code;
    /* Transpose: the elements its copy moves in contiguous runs (the product of the trailing axes
     * perm keeps in place, 1 when the last axis moves), the output's innermost extent, the input
     * stride (elements) read along it, and the axes perm moves; 0 for other operators. The layer
     * models read them (pp_lm_features), the GNN's feature vector does not. */
    double tr_run, tr_inner, tr_stride;
    int tr_moved;
} pp_node_feat;

typedef struct pp_node {
    const char *name;        /* never NULL: "<op_type>_<index>" when the file has none */
    const char *op_type;
    const char *domain;      /* "" for the default ONNX domain (a static ""), else the arena's */
    int n_inputs, n_outputs;
    int *inputs;             /* tensor indices; -1 for an omitted optional input ("") */
    int *outputs;
    int n_attrs;
    int cap_attrs;           /* room in attrs that pp_node_add_attr made (0: exactly n_attrs) */
    pp_attr *attrs;
    int unknown_op;          /* treated as element-wise under allow_unknown */
    /* 1 + the index of an earlier node this one was built as a copy of (pp_graph_copy_node:
     * the same op and attribute array), 0 for none. A hint only: shape inference and features
     * reuse that node's results when pp_node_copy_source finds its inputs alike. */
    int copy_of;
    /* 1 + pp_node_copy_source(g, i) as the last shape inference found it, 0 for none: features
     * take it rather than compare the inputs again (linking resets it when it moves nodes). */
    int copy_src;
    pp_node_feat feat;
} pp_node;

typedef struct pp_graph_totals {
    int64_t params, param_bytes, macs, flops;
    int64_t activation_bytes, peak_activation_bytes, input_bytes;
    int peak_node;           /* node index after which the peak is reached, -1 if none */
    int n_unknown_ops;
} pp_graph_totals;

typedef struct pp_graph {
    pp_arena *arena;
    const char *path;        /* for error messages: "model.onnx" */
    int64_t ir_version;
    int64_t opset;           /* default-domain opset version */
    const char *producer_name;
    int n_tensors, cap_tensors;
    pp_tensor *tensors;
    int n_nodes, cap_nodes;
    pp_node *nodes;          /* topological order once pp_graph_link succeeded */
    int n_inputs;            /* graph inputs that are not weights, in file order */
    int *inputs;
    int n_outputs;
    int *outputs;
    pp_graph_totals totals;
    pp_strmap index;         /* tensor name -> tensor index (keys: the tensors' names) */
    /* nodes and tensors when pp_graph_link last succeeded (-1 before): while they are unchanged,
     * its producers and consumers hold (nodes are never rewired once added) */
    int linked_nodes, linked_tensors;
    /* borrowed, NULL but while a builder finishes a graph with one: shape inference and features
     * take the results of alike nodes of earlier graphs from it (node_memo.c) */
    struct pp_node_memo *memo;
} pp_graph;

/* 1 while the counts of pp_graph_link's last success hold: each tensor's producer, n_consumers
 * and consumer are current */
static inline int pp_graph_linked(const pp_graph *g)
{
    return g->linked_nodes == g->n_nodes && g->linked_tensors == g->n_tensors;
}

/* ---- building (graph.c) ---- */
pp_graph *pp_graph_new(const char *path);
void pp_graph_free(pp_graph *g);
/* Returns the index of the tensor called name, creating it (rank -1, dtype undefined) if new;
 * -1 on OOM. Creating a tensor or node may move g->tensors / g->nodes: hold indices, not pointers,
 * across these calls (and never write g->tensors[pp_graph_tensor(g, ..)]). */
int pp_graph_tensor(pp_graph *g, const char *name);
int pp_graph_find(const pp_graph *g, const char *name);  /* -1 if absent */
/* Appends a node; inputs/outputs are tensor names (NULL or "" = omitted optional input).
 * Attributes are added with pp_node_add_attr. Returns node index or -1 on OOM. */
int pp_graph_add_node(pp_graph *g, const char *name, const char *op_type, const char *domain,
                      const char *const *inputs, int n_inputs, const char *const *outputs,
                      int n_outputs);
/* The same with tensor indices (-1 = omitted optional input) for builders that hold them; -1 on
 * OOM or an index that names no tensor. */
int pp_graph_add_node_idx(pp_graph *g, const char *name, const char *op_type, const char *domain,
                          const int *inputs, int n_inputs, const int *outputs, int n_outputs);
/* Room for n_tensors tensors and n_nodes nodes in all, so that building up to them moves nothing
 * (a builder that knows its size saves the copies of growing). 0, or -1 on OOM. */
int pp_graph_reserve(pp_graph *g, int n_tensors, int n_nodes);
/* For builders that repeat a block: a new tensor called name with src's dtype, shape, flags and
 * value (the value's arrays shared, both in g's arena), not yet produced; -1 on OOM or when name
 * is taken. */
int pp_graph_copy_tensor(pp_graph *g, int src, const char *name);
/* The same with name's length (strlen) and hash (pp_fnv1a64 from PP_FNV64_BASIS) given: a builder
 * that makes names from a prefix and a number hashes the prefix once. */
int pp_graph_copy_tensor_h(pp_graph *g, int src, const char *name, size_t len, uint64_t hash);
/* A new node called name doing what node src does (op type, domain and attribute array shared
 * with src, so adding an attribute to either later copies the array first) on the given tensors
 * (as many as src has); sets copy_of. -1 on OOM or a bad index. */
int pp_graph_copy_node(pp_graph *g, int src, const char *name, const int *inputs,
                       const int *outputs);
/* The node that node i copies (its copy_of) when that node comes earlier, has the same op, domain,
 * attribute array and counts, and every input of the two is absent in both or of the same dtype,
 * shape and flags, known and not constant: then shape inference gives their outputs the same
 * shapes. -1 otherwise. */
int pp_node_copy_source(const pp_graph *g, int i);
pp_attr *pp_node_add_attr(pp_graph *g, int node, const char *name, int type);
const pp_attr *pp_node_attr(const pp_node *n, const char *name); /* NULL if absent */
int64_t pp_node_attr_i(const pp_node *n, const char *name, int64_t dflt);
double pp_node_attr_f(const pp_node *n, const char *name, double dflt);
const char *pp_node_attr_s(const pp_node *n, const char *name, const char *dflt);
/* Sets a tensor's shape; rank <= PP_MAX_RANK. */
void pp_tensor_set_shape(pp_tensor *t, int32_t dtype, int rank, const int64_t *dims);
/* -1 if any dim is unknown (or the product overflows). Inline: liveness, features, kernel
 * figures and the GNN sample ask it of ~10^3 tensors a network. */
static inline int64_t pp_tensor_elems(const pp_tensor *t)
{
    if (t->rank < 0) return -1;
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] < 0 || pp_mul_overflow_i64(n, t->dims[d], &n)) return -1;
    return n;
}

/* -1 if unknown */
static inline int64_t pp_tensor_bytes(const pp_tensor *t)
{
    int64_t n = pp_tensor_elems(t), b;
    int sz = pp_dtype_size(t->dtype);
    if (n < 0 || sz == 0 || pp_mul_overflow_i64(n, sz, &b)) return -1;
    return b;
}
/* Sets producers, checks dangling names (an input no one produces that is neither graph input nor
 * initializer), duplicate producers and cycles, and sorts nodes topologically: nodes already in an
 * order where every input is made before its node keep it, others are ordered by Kahn (FIFO, file
 * order among ready nodes). Errors name g->path and the node. */
perfpred_status pp_graph_link(pp_graph *g, pp_err *err);

/* ---- ONNX (onnx_load.c) ---- */
/* Parses an ONNX ModelProto file into a new graph and links it. Weight payloads are skipped
 * before they are copied. Errors name the file and, where one is involved, the node. */
perfpred_status pp_onnx_load(const char *path, pp_graph **out, pp_err *err);
perfpred_status pp_onnx_load_buffer(const char *path_for_errors, const uint8_t *buf, size_t len,
                                    pp_graph **out, pp_err *err);
/* The loader's pre-pass, exposed for tests and tools: copies the ModelProto in buf without the
 * payloads of tensors of more than PP_CONST_MAX_ELEMS elements (and without training_info); the
 * copy (*out, malloc'd, caller frees) is never longer than buf. */
perfpred_status pp_onnx_strip_payloads(const char *path_for_errors, const uint8_t *buf, size_t len,
                                       uint8_t **out, size_t *out_len, pp_err *err);

/* ---- shape inference (shape.c, ops_*.c) ---- */
typedef struct pp_shape_opts {
    int64_t batch;                               /* 0 = none */
    const perfpred_input_override *inputs;
    int n_inputs;
    int allow_unknown;
    struct pp_node_memo *memo;                   /* for the builders (pp_net_graph_from_ref) */
} pp_shape_opts;
/* Applies overrides to graph inputs, then infers dtype and dims of every tensor in topological
 * order, folding constant shape arithmetic. Every tensor ends PP_T_SHAPE_KNOWN or it is an error
 * naming the node. */
perfpred_status pp_graph_infer_shapes(pp_graph *g, const pp_shape_opts *opts, pp_err *err);

/* ---- node memo (node_memo.c) ---- */
/* Shape inference's and features' results by what they read of a node (opset, op, attributes by
 * value, input dtypes, dims and flags), kept across graphs: a search that builds one network
 * after another runs each distinct layer's rules once. Owned by its caller, one thread at a time;
 * a builder lends it to its graph while it finishes (pp_graph.memo). Entries are compared word for
 * word; a node is entered only when its outputs came out known, not constant, without symbolic
 * dims, and none of its inputs is a constant, so a hit writes what the rules would write. */
typedef struct pp_node_memo pp_node_memo;
pp_node_memo *pp_node_memo_new(void); /* NULL on OOM */
void pp_node_memo_free(pp_node_memo *m); /* NULL: no-op */
int64_t pp_node_memo_hits(const pp_node_memo *m); /* nodes it gave their shapes so far */
/* For the passes over g (g->memo set): shape inference begins a graph of n_nodes (-1 on OOM: run
 * without); _shapes: 1 when node ni's outputs were given their shapes, else 0 and the rule runs,
 * then _shapes_put enters it; _feat: 1 when its features were given, else 0 and they are computed,
 * then _feat_put (folded_before: shape inference had folded it) enters them. */
int pp_node_memo_begin(pp_node_memo *m, int n_nodes);
int pp_node_memo_shapes(pp_graph *g, int ni);
void pp_node_memo_shapes_put(pp_graph *g, int ni);
int pp_node_memo_feat(pp_graph *g, int ni);
void pp_node_memo_feat_put(pp_graph *g, int ni, int folded_before);

/* ---- features and liveness (features.c, liveness.c) ---- */
/* Fills every node's feat and g->totals (params, macs, flops, bytes). */
perfpred_status pp_graph_features(pp_graph *g, pp_err *err);
/* 1 when tensor t is static (a weight, a constant, or the output of folded or shape arithmetic):
 * a node's in_bytes leave such inputs out. */
int pp_tensor_is_static(const pp_graph *g, int t);
/* Peak live activation bytes over the topological order: a tensor is live from its producer until its
 * last consumer; graph inputs live from the start, graph outputs to the end; weights excluded. */
perfpred_status pp_graph_liveness(pp_graph *g, pp_err *err);
/* Fixed-length numeric feature vector for regressors (log-scaled sizes + attributes), identical for a
 * benchmark-plan layer and a real node. Returns PP_FEATVEC_LEN. */
#define PP_FEATVEC_LEN 24
int pp_feat_vector(const pp_node_feat *f, float out[PP_FEATVEC_LEN]);
uint32_t pp_op_code(const char *op_type);
const char *pp_feat_vector_name(int i);

/* The graph behind a public model handle (graph/model.c). */
const pp_graph *pp_model_graph(const perfpred_model *m);
/* A number no other model of this process has had (0 for NULL): predictions are reused by it. */
uint64_t pp_model_serial(const perfpred_model *m);
/* A public handle that takes ownership of g (shapes, features and liveness already computed);
 * for graphs built in memory (benchmark layers, tests). NULL on OOM (g is then still the caller's). */
perfpred_model *pp_model_wrap(pp_graph *g);

/* Load + shapes + features + liveness in one call. */
perfpred_status pp_graph_load_full(const char *path, const pp_shape_opts *opts, pp_graph **out,
                                   pp_err *err);

#endif
