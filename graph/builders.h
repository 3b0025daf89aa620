/* graph/builders.h: model graphs built from NAS architecture encodings instead of ONNX files:
 * NAS-Bench-201 cells (build_nb201.c), FBNet block lists (build_fbnet.c) and once-for-all
 * MobileNetV3 subnets (build_ofa.c), and refs naming either or an .onnx file (build_ref.c), each the network its upstream PyTorch code defines, emitted as
 * the ONNX-IR that torch.onnx would produce (Conv, BatchNormalization, Relu, ...), linked, shape-
 * inferred, featurized and liveness-analysed like a loaded file. tools/export_nas_reference.py builds
 * the same networks in PyTorch; tests/test_builders.c compares MACs, parameters and output shapes.
 * Ownership: a built graph is the caller's (pp_graph_free). Parsers fill caller-owned structs. */
#ifndef PP_GRAPH_BUILDERS_H
#define PP_GRAPH_BUILDERS_H

#include <stdint.h>

#include "graph/graph.h"

/* ------------------------------------------------------------------- NAS-Bench-201 ---- */

/* Edge operations, numbered as Eagle's arch_vector and the NB201 search space list them. */
typedef enum pp_nb201_op {
    PP_NB201_NONE = 0,      /* "none": the edge multiplies by zero */
    PP_NB201_SKIP = 1,      /* "skip_connect": identity */
    PP_NB201_CONV1X1 = 2,   /* "nor_conv_1x1": ReLU-Conv1x1-BN */
    PP_NB201_CONV3X3 = 3,   /* "nor_conv_3x3": ReLU-Conv3x3-BN */
    PP_NB201_AVGPOOL = 4    /* "avg_pool_3x3": AveragePool 3x3, stride 1, pad 1, count_include_pad 0 */
} pp_nb201_op;
#define PP_NB201_EDGES 6

/* A cell: edges in the order of the NB201 string, node1<-0, node2<-0, node2<-1, node3<-0,
 * node3<-1, node3<-2 (the order of Eagle's arch_vector). */
typedef struct pp_nb201_arch {
    pp_nb201_op op[PP_NB201_EDGES];
} pp_nb201_arch;

/* Parses "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|".
 * Strict: three nodes, node j lists exactly the edges ~0..~j-1 in that order, known op names. */
perfpred_status pp_nb201_parse(const char *s, pp_nb201_arch *out, pp_err *err);
/* Writes the canonical string (the form pp_nb201_parse reads) into buf; returns buf. */
char *pp_nb201_format(const pp_nb201_arch *a, char *buf, size_t n);
const char *pp_nb201_op_name(pp_nb201_op op);

/* What a deployment does with 'none' edges (x * 0 added to a node's sum):
 *   AS_PYTORCH  every operation runs, a 'none' edge is Mul(x, 0) plus its Add (PyTorch eager,
 *               ONNX Runtime, PyTorch Mobile: HELP's GPU/CPU/phone columns, HW-NAS-Bench-360's
 *               onnx and torchmobile).
 *   FOLD        full constant propagation (TensorFlow's grappler: Eagle's LatBench): 'none' edges
 *               vanish, an edge from an all-zero node is zero, operations whose result reaches the
 *               cell output only through zero terms are removed.
 *   PRUNE       what HW-NAS-Bench's and HW-NAS-Bench-360's TFLite/LiteRT latencies fit best:
 *               'none' edges vanish and the nodes only they read are removed, but operations on a
 *               node whose every edge is 'none' still run (on a zero tensor).
 * Under FOLD and PRUNE a cell whose output no longer depends on its input makes the whole network
 * a constant (those TFLite latencies are ~0.01 ms). */
typedef enum pp_nb201_mode {
    PP_NB201_AS_PYTORCH = 0,
    PP_NB201_FOLD = 1,
    PP_NB201_PRUNE = 2
} pp_nb201_mode;

typedef struct pp_nb201_opts {
    int in_channels, height, width; /* input image (HW-NAS-Bench-360 swaps the stem's channels) */
    int num_classes;
    int channels;                   /* C of the first stage: 16 */
    int cells_per_stage;            /* N: 5 */
    int64_t batch;                  /* >= 1 */
    pp_nb201_mode mode;             /* how 'none' edges end up in the deployed graph */
    pp_node_memo *memo;             /* borrowed, may be NULL: results of earlier networks' layers */
} pp_nb201_opts;

/* Datasets of NAS-Bench-201 and HW-NAS-Bench-360: "cifar10" (3x32x32, 10 classes), "cifar100"
 * (3x32x32, 100), "imagenet16" (3x16x16, 120: ImageNet16-120), "ninapro" (1x52x16, 18), "darcy"
 * (1x88x88, 1). Fills in_channels, height, width, num_classes; leaves the rest. */
perfpred_status pp_nb201_dataset(const char *name, pp_nb201_opts *o, pp_err *err);
/* cifar10, C = 16, N = 5, batch 1, AS_PYTORCH. */
pp_nb201_opts pp_nb201_default_opts(void);

/* 1 when, under mode, the cell output no longer depends on the cell input (FOLD: it is always
 * zero; PRUNE: every path from the input passes a 'none' edge): the converted network is then a
 * constant, and pp_build_nb201 refuses it with PERFPRED_ERR_UNSUPPORTED. Always 0 for AS_PYTORCH. */
int pp_nb201_is_constant(const pp_nb201_arch *a, pp_nb201_mode mode);

/* The NB201 macro network (TinyNetwork): stem Conv3x3(C)+BN; N cells at C; residual reduction
 * block (ReLU-Conv3x3/2-BN, ReLU-Conv3x3-BN, shortcut AvgPool2x2/2 + Conv1x1) to 2C; N cells; the
 * same to 4C; N cells; BN, ReLU, GlobalAveragePool, Flatten, Gemm to num_classes. */
perfpred_status pp_build_nb201(const pp_nb201_arch *a, const pp_nb201_opts *o, pp_graph **out,
                               pp_err *err);
/* Internal switch for tests and the bench: 0 builds every cell of a stage afresh instead of
 * copying the first (the same graph either way); 1, the default, copies. */
void pp_nb201_copy_cells(int on);

/* --------------------------------------------------------------------------- FBNet ---- */

#define PP_FBNET_LAYERS 22
#define PP_FBNET_N_BLOCKS 9
/* Blocks in HW-NAS-Bench's order (op index 0..8): k3_e1, k3_e1_g2, k3_e3, k3_e6, k5_e1,
 * k5_e1_g2, k5_e3, k5_e6, skip. */
typedef struct pp_fbnet_arch {
    int op[PP_FBNET_LAYERS];  /* block index per searchable layer, 0..8 */
} pp_fbnet_arch;

/* Parses 22 blocks separated by ',' or ' ': op indices ("7,8,1,...") or names
 * ("k5_e6,skip,k3_e1_g2,..."), as HELP's op_idx_list and block_ops columns hold them. */
perfpred_status pp_fbnet_parse(const char *s, pp_fbnet_arch *out, pp_err *err);

/* imagenet = 0: HW-NAS-Bench's CIFAR-100 setting (HELP's data): 3x32x32 input, stride-1 stem,
 * stage strides 1,1,2,2,1,2,1, header 1x1 conv to 1504, 100 classes. imagenet = 1: 224x224,
 * stride-2 stem, strides 1,2,2,2,1,2,1, header 1984, 1000 classes.
 * Stages of 1,4,4,4,4,4,1 layers at 16,24,32,64,112,184,352 channels after a 16-channel stem. A
 * block k<K>_e<E>[_g2] is Conv1x1(group g)-BN-ReLU, [channel shuffle], depthwise ConvKxK-BN-ReLU,
 * Conv1x1(group g)-BN, plus the input when shapes allow; skip is identity, or Conv1x1-BN-ReLU when
 * it changes stride or width. */
perfpred_status pp_build_fbnet(const pp_fbnet_arch *a, int imagenet, int64_t batch,
                               pp_node_memo *memo, pp_graph **out, pp_err *err);

/* ----------------------------------------------------------------------------- OFA ---- */

#define PP_OFA_BLOCKS 20
#define PP_OFA_STAGES 5

typedef struct pp_ofa_arch {
    int ks[PP_OFA_BLOCKS];   /* depthwise kernel 3, 5 or 7 */
    int e[PP_OFA_BLOCKS];    /* expand ratio 3, 4 or 6 */
    int d[PP_OFA_STAGES];    /* blocks used per stage: 2, 3 or 4 (the first d of its 4) */
    int r;                   /* input resolution, 32..1024 */
} pp_ofa_arch;

/* Parses "ks=7,3,...;e=4,6,...;d=2,3,4,3,4;r=136" (lists also space-separated, as in HELP's CSV). */
perfpred_status pp_ofa_parse(const char *s, pp_ofa_arch *out, pp_err *err);

/* get_active_subnet() of OFA's ofa_mbv3_d234_e346_k357_w1.2 (the supernet HELP evaluates):
 * ConvLayer 3x3/2 to 24 (h-swish), a 24->24 depthwise block with residual, five stages (32, 48,
 * 96, 136, 192 channels; strides 2,2,2,1,2; ReLU,ReLU,h-swish,h-swish,h-swish; squeeze-excite in
 * stages 2, 4, 5) of MBConv blocks (Conv1x1 to make_divisible(C*e, 8), depthwise KxK, [SE], Conv1x1),
 * final 1x1 to 1152 (h-swish), spatial mean, 1x1 to 1536 without BN (h-swish), Linear to 1000.
 * h-swish and h-sigmoid are written as OFA writes them: x * relu6(x + 3) / 6. */
perfpred_status pp_build_ofa(const pp_ofa_arch *a, int64_t batch, pp_node_memo *memo, pp_graph **out,
                             pp_err *err);
/* (memo: borrowed, may be NULL; the results of earlier networks' layers, as pp_nb201_opts.memo) */

/* ------------------------------------------------------------ the shared building kit ---- */
/* Emits ONNX-IR nodes with generated tensor names; the first error sticks (later calls return
 * -1 and do nothing), so a builder checks once at the end. Defined in build_nb201.c. */
typedef struct pp_bld {
    pp_graph *g;
    pp_err *err;
    perfpred_status st;
    int counter;             /* for unique tensor and node names */
    const char *scope;       /* prefix of node names ("cell3") */
    pp_node_memo *memo;      /* borrowed, may be NULL: lent to the graph while it finishes */
} pp_bld;

/* New graph named path with one float input "input" of [n, c, h, w]. Returns the input tensor
 * index (-1 on error, recorded in b). */
int pp_bld_begin(pp_bld *b, const char *path, int64_t n, int64_t c, int64_t h, int64_t w,
                 pp_err *err);
/* A weight (initializer) of the given shape. */
int pp_bld_weight(pp_bld *b, int rank, const int64_t *dims);
/* A float scalar constant (an initializer with its value; not a parameter). */
int pp_bld_scalar(pp_bld *b, double v);
/* An int64 vector constant (reshape targets). */
int pp_bld_ints(pp_bld *b, int n, const int64_t *v);
/* A node with inputs in[0..n_in) and one new output; returns the output tensor index. */
int pp_bld_node(pp_bld *b, const char *op_type, const int *in, int n_in);
/* Conv without bias unless bias != 0: weight [cout][cin/group][k][k]. */
int pp_bld_conv(pp_bld *b, int x, int64_t cin, int64_t cout, int k, int stride, int pad,
                int64_t group, int bias);
int pp_bld_bn(pp_bld *b, int x, int64_t c);
int pp_bld_unary(pp_bld *b, const char *op_type, int x);
int pp_bld_binary(pp_bld *b, const char *op_type, int x, int y);
int pp_bld_avgpool(pp_bld *b, int x, int k, int stride, int pad);
int pp_bld_gemm(pp_bld *b, int x, int64_t in, int64_t out);  /* Gemm transB=1 with bias */
/* Marks y as the graph output, links, infers shapes, computes features and liveness. On success
 * *out holds the graph; on any error (sticky or from the passes) the graph is freed. */
perfpred_status pp_bld_finish(pp_bld *b, int y, pp_graph **out);

/* ------------------------------------------------------------ model refs (build_ref.c) ---- */

/* A ref names a network:
 *   nb201:<cell>[@cifar10|cifar100|imagenet16|ninapro|darcy][;fold|;prune]   (default cifar10)
 *   fbnet:<22 blocks>[@cifar100|imagenet]                              (default cifar100)
 *   ofa:ks=<20>;e=<20>;d=<5>;r=<resolution>
 *   <path>.onnx                                                        (pp_graph_load_full)
 * ";fold" and ";prune" build the NB201 network as a converter leaves it (pp_nb201_mode).
 * opts->batch (0 = 1) sets the batch of built networks; per-input overrides apply to files only.
 * A fold/prune ref whose network is a constant is PERFPRED_ERR_UNSUPPORTED (nothing runs). */
perfpred_status pp_net_graph_from_ref(const char *ref, const pp_shape_opts *opts, pp_graph **out,
                                      pp_err *err);
/* 1 when ref names a built search-space network rather than a file. */
int pp_net_ref_is_builtin(const char *ref);
/* Family of a search-space architecture for held-out-architecture splits: "<space>-hNN", NN the
 * FNV-1a 64 hash of the canonical architecture (no dataset, no options) modulo 100. Files get
 * their stem. Returns 0, or -1 when ref is not understood. */
int pp_net_ref_family(const char *ref, char *out, size_t n);

#endif
