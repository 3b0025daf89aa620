/* graph_gnn/: a graph-level GNN that predicts the log-ratio between a measured whole-network figure
 * and the sum of per-layer predictions (latency, energy, memory), after SeerNet/PerfSeer: edge-aware
 * messages with mean+max aggregation (SynMM), a global node read by every node update (GNPB), a
 * mean+max+global readout and one small MLP head per target. Written in the manner of kann: flat
 * parameter, gradient and Adam arrays; every op one function doing forward and backward; CSR
 * adjacency; an explicit seeded RNG; OpenBLAS sgemm for the dense products.
 *
 * The network (L layers, hidden width H; h^0 = standardized node features, g^0 = standardized
 * global features; messages travel both ways along every producer->consumer edge, marked by a
 * direction flag d: 0 = from a producer (in-neighbour), 1 = from a consumer (out-neighbour)):
 *   msg_{j->i}  = W_e^l [h_j^l ; e_ji ; d_ji] + b_e^l          (e = standardized edge features)
 *   m_i^l       = [ mean_{j in N(i)} msg_{j->i} ; max_{j in N(i)} msg_{j->i} ]  (0 if N(i) empty)
 *   h_i^{l+1}   = relu(W^l [h_i^l ; m_i^l ; g^l] + b^l)
 *   g^{l+1}     = relu(W_g^l [g^l ; mean_i h_i^{l+1} ; max_i h_i^{l+1}] + b_g^l)
 *   r           = [ mean_i h_i^L ; max_i h_i^L ; g^L ]
 *   o_t         = w2_t . relu(W1_t r + b1_t) + b2_t          (standardized target t)
 *   prediction_t = y_mean_t + y_std_t * o_t
 *   loss        = sum_{graphs b, targets t present} (o_bt - (y_bt - y_mean_t) / y_std_t)^2
 *                 / (number of present (b, t))
 *
 * Flat parameter layout (float32, matrices row-major [out][in]); din_0 = F, dg_0 = G, and
 * din_l = dg_l = H for l >= 1:
 *   for l in 0..L-1:  W_e^l [H][din_l+Fe+1], b_e^l [H], W^l [H][din_l+2H+dg_l], b^l [H],
 *                     W_g^l [H][dg_l+2H], b_g^l [H]
 *   for t in 0..T-1:  W1_t [H][3H], b1_t [H], w2_t [H], b2_t [1]
 * tests/gnn_reference.py builds the same network in PyTorch from this layout.
 *
 * Ownership: pp_gnn_new / pp_gnn_load return a model the caller frees with pp_gnn_free (NULL is a
 * no-op). A pp_gnn_graph points at arrays its creator owns; pp_gnn_sample_from_graph allocates one
 * block that pp_gnn_graph_clear frees. pp_gnn_forward only reads the model and allocates its own
 * scratch: concurrent forwards on one model are safe. pp_gnn_train and pp_gnn_loss_grad write the
 * model and set OpenBLAS's (process-wide) thread count. */
#ifndef PP_GRAPH_GNN_H
#define PP_GRAPH_GNN_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "util/util.h"

#define PP_GNN_MAX_TARGETS 3   /* latency, energy, memory */
#define PP_GNN_MAX_LAYERS 8
#define PP_GNN_MAX_HIDDEN 1024
#define PP_GNN_MAX_FEAT 4096   /* bound on F, Fe and G */
/* Node features of pp_gnn_sample_from_graph: [pp_feat_vector | one-hot op kind |
 * log(1 + per-node prediction in microseconds)]. */
#define PP_GNN_GRAPH_NODE_FEAT (PP_FEATVEC_LEN + PP_OPK__COUNT + 1)
#define PP_GNN_GRAPH_EDGE_FEAT 1 /* log2(1 + tensor bytes) */

typedef struct pp_gnn_params {
    int layers;          /* L, message-passing layers: default 3 */
    int hidden;          /* H: default 32 */
    double lr;           /* Adam step size: default 1e-3 (beta1 0.9, beta2 0.999, eps 1e-8) */
    double weight_decay; /* decoupled (AdamW) decay per step, times lr: default 0 */
    int epochs;          /* maximum passes over the training split: default 300 */
    int batch;           /* graphs per minibatch: default 16 */
    int patience;        /* stop after this many epochs without a better validation error: 30 */
    double huber_delta;  /* 0 (default): squared-error loss, early stopping on validation MSE;
                          * > 0: Huber loss with this threshold in target units (a log ratio:
                          * 0.05 is about 5 %), early stopping on validation mean |error|, for
                          * targets whose noise has heavy tails */
    uint64_t seed;       /* initialization and minibatch shuffling: default 1 */
    int nthreads;        /* OpenBLAS threads during training: default 1 (0 = leave as set) */
    perfpred_log_fn log; /* per-epoch progress at PERFPRED_LOG_DEBUG; NULL = silent */
    void *log_user;
} pp_gnn_params;

pp_gnn_params pp_gnn_default_params(void);
/* Rejects out-of-range values, naming the field. */
perfpred_status pp_gnn_check_params(const pp_gnn_params *p, pp_err *err);

/* One sample: a whole network. Edges are stored by consumer (CSR): the producers of node i are
 * col_idx[row_ptr[i] .. row_ptr[i+1]-1], and edge k has features edge_feat[k*n_edge_feat ..]. */
typedef struct pp_gnn_graph {
    int n_nodes, n_feat;         /* N >= 1, F */
    int n_edges, n_edge_feat;    /* E >= 0, Fe */
    int n_globals;               /* G */
    const float *x;              /* [N][F] node features */
    const int *row_ptr;          /* [N+1], row_ptr[0] = 0, nondecreasing, row_ptr[N] = E */
    const int *col_idx;          /* [E] producer node of each edge, 0 <= j < N */
    const float *edge_feat;      /* [E][Fe] (may be NULL when E*Fe = 0) */
    const float *globals;        /* [G] (may be NULL when G = 0) */
    /* [N] or NULL: x_like[i] = an earlier node whose row of x is row i's bits, -1 for none. A hint
     * where to look (the forward checks the bits); pp_gnn_sample_from_graph sets it for copies
     * and for nodes of the same feature bytes and time as an earlier one. */
    const int *x_like;
    float y[PP_GNN_MAX_TARGETS];         /* targets: log(measured / layer-sum) */
    unsigned char mask[PP_GNN_MAX_TARGETS]; /* 1 where y[t] is present */
    void *mem;                   /* block owned by the sample (pp_gnn_graph_clear), or NULL */
} pp_gnn_graph;

/* Builds a sample from a shape-inferred, featurized graph: one GNN node per runtime node (folded
 * and shape-kind nodes skipped, the rest numbered in g->nodes order), features pp_feat_vector(node),
 * a one-hot of its pp_op_kind, then log(1 + 1000 * per_node_pred_ms[node]) (per_node_pred_ms
 * indexes g->nodes; each runtime node's prediction must be finite and >= 0); one edge per
 * (producer, distinct input tensor, consumer) between runtime nodes with feature
 * log2(1 + tensor bytes); globals copied (n_globals may be 0). Targets are left absent (mask 0)
 * for the caller to set. Free with pp_gnn_graph_clear. */
perfpred_status pp_gnn_sample_from_graph(const pp_graph *g, const double *per_node_pred_ms,
                                         const double *globals, int n_globals, pp_gnn_graph *out,
                                         pp_err *err);
void pp_gnn_graph_clear(pp_gnn_graph *s); /* frees s->mem and zeroes s; NULL is a no-op */

/* ---- the whole-network correction's sample (gnn_sample.c; trained by fit/) ---- */
/* Global features of a correction sample, in this order (natural logs; a figure the descriptor
 * lacks is 0):
 *   0 log(batch)             1 log(1 + MACs)            2 log(1 + parameters)
 *   3 log(1 + activation bytes, sum of node outputs)     4 log(peak TFLOP/s at the runtime's precision)
 *   5 log(memory bandwidth GB/s)                         6 log(layer sum in ms) */
#define PP_FIT_NET_N_GLOBALS 7
void pp_gnn_sample_globals(int64_t batch, const pp_graph_totals *tot, double peak_tflops,
                           double bandwidth_gbs, double layer_sum_ms, double out[PP_FIT_NET_N_GLOBALS]);
/* The sample a trained correction is applied to (fit/fit.h, pp_fit_net_sample, builds it for
 * training), from figures the caller already has (for a predictor that applies the correction
 * inside its own prediction and must not call perfpred_predict again): per_node_ms indexes g->nodes
 * as above, layer_sum_ms is the uncorrected sum, peak and bandwidth as perfpred_device_info gives
 * them (peak_tflops at the runtime's precision, else fp32). */
perfpred_status pp_gnn_sample_from(const pp_graph *g, const double *per_node_ms,
                                   double layer_sum_ms, double peak_tflops, double bandwidth_gbs,
                                   pp_gnn_graph *out, pp_err *err);

/* Structural check: sizes, CSR order and bounds, finite values. `what` names it in errors. */
perfpred_status pp_gnn_graph_check(const pp_gnn_graph *s, const char *what, pp_err *err);

/* What training achieved; errors are in target units (log-ratios), over present targets only. */
typedef struct pp_gnn_report {
    int n_train, n_val;
    int epochs_run;                  /* epochs completed */
    int best_epoch;                  /* 1-based epoch whose weights were kept */
    double train_mse;                /* masked MSE of the kept weights on the training split */
    double val_mse;                  /* same on the validation split; -1 without one */
    double val_rmse[PP_GNN_MAX_TARGETS]; /* per target; -1 where no validation value is present */
    double val_mae[PP_GNN_MAX_TARGETS];  /* mean |error| per target, the same way (-1 in a model
                                            loaded from a manifest written before it was kept) */
} pp_gnn_report;

typedef struct pp_gnn_layer_off {
    int din, dg;                 /* input widths of h^l and g^l */
    size_t we, be, w, b, wg, bg; /* offsets into the flat parameter array */
} pp_gnn_layer_off;

typedef struct pp_gnn_head_off {
    size_t w1, b1, w2, b2;
} pp_gnn_head_off;

/* The model. Fields are readable by the module and its tests; change them only through the API
 * (tests write w directly to load reference weights). */
typedef struct pp_gnn {
    int n_feat, n_edge_feat, n_globals, n_targets;  /* F, Fe, G, T */
    pp_gnn_params params;                           /* layers, hidden and the training settings */
    size_t n_params;
    float *w, *grad, *adam_m, *adam_v;              /* [n_params] each */
    long adam_t;                                    /* Adam steps taken */
    pp_gnn_layer_off layer[PP_GNN_MAX_LAYERS];
    pp_gnn_head_off head[PP_GNN_MAX_TARGETS];
    /* standardization: z = (v - mean) / std; identity (0, 1) until training sets them */
    float *x_mean, *x_std;                          /* [F] */
    float *e_mean, *e_std;                          /* [Fe] */
    float *u_mean, *u_std;                          /* [G] */
    float y_mean[PP_GNN_MAX_TARGETS], y_std[PP_GNN_MAX_TARGETS];
    int trained;                                    /* report is valid */
    pp_gnn_report report;
    /* The ensemble's gate, per target: the widest member spread (highest minus lowest member
     * output, target units) over the validation rows of its training run. Members that spread
     * wider on a sample disagree beyond anything they were seen to (pp_gnn_agrees). <= 0: no gate
     * (a single model, or none recorded). Kept on the first member and in its manifest. */
    double spread_gate[PP_GNN_MAX_TARGETS];
    /* Seed ensemble: the next member, or NULL. pp_gnn_forward averages the members' outputs (each
     * through its own standardization); training and gradients see this model alone. The chain
     * belongs to the first member: pp_gnn_free frees it whole. */
    struct pp_gnn *next;
    /* Forward workspaces kept for pp_gnn_forward_fast (gnn_fast.c): made on the first fast forward
     * of the ensemble's first member, reused by every later one, freed by pp_gnn_free. */
    _Atomic(struct pp_gnn_pool *) pool;
} pp_gnn;

/* Allocates a model for F node, Fe edge and G global features and T targets (1..3) and initializes
 * its weights from params->seed (He-uniform, biases 0). NULL params = defaults. */
perfpred_status pp_gnn_new(int n_feat, int n_edge_feat, int n_globals, int n_targets,
                           const pp_gnn_params *params, pp_gnn **out, pp_err *err);
void pp_gnn_free(pp_gnn *gnn);
/* The length of the flat parameter array of a model with these dims (nothing is allocated): what a
 * weights file's header must agree with before the loader allocates anything. Dims must be within
 * the PP_GNN_MAX_* bounds (then the count fits easily in a size_t). */
size_t pp_gnn_param_count(int n_feat, int n_edge_feat, int n_globals, int n_targets, int layers,
                          int hidden);
/* Re-initializes weights (and clears Adam state) from seed. */
void pp_gnn_init_weights(pp_gnn *gnn, uint64_t seed);

/* Predicts every target of one sample (in target units: log-ratios); for an ensemble, the mean of
 * its members' predictions. */
perfpred_status pp_gnn_forward(const pp_gnn *gnn, const pp_gnn_graph *s, double *out, pp_err *err);
/* The same, and per target the smallest and largest member prediction (lo, hi: NULL to skip; equal
 * to out for a single model). */
perfpred_status pp_gnn_forward_range(const pp_gnn *gnn, const pp_gnn_graph *s, double *out,
                                     double *lo, double *hi, pp_err *err);
/* The same figures as pp_gnn_forward_range, bit for bit (the same forward code), for predictions:
 * the workspaces live in a pool owned by the model, so a call allocates nothing once the pool
 * holds one as large as the graph (one per thread predicting at once); each member's forward runs
 * on the calling thread. The first call sets OpenBLAS to one thread (process-wide): a prediction
 * never wakes a BLAS pool, and predictions on several threads scale with the cores. Thread-safe. */
perfpred_status pp_gnn_forward_fast(const pp_gnn *gnn, const pp_gnn_graph *s, double *out,
                                    double *lo, double *hi, pp_err *err);
/* Process-wide switch for benchmarks: on != 0 sends pp_gnn_forward_fast to pp_gnn_forward_range
 * (a workspace allocated and zeroed per member and call: the path before the pool). Default off. */
void pp_gnn_use_reference(int on);
/* Frees a pool (pp_gnn_free calls it); NULL is a no-op. */
void pp_gnn_pool_free(struct pp_gnn_pool *pool);
/* One member's forward with a workspace the caller keeps (gnn.c; the pool's building block). */
typedef struct pp_gnn_fwd pp_gnn_fwd;
perfpred_status pp_gnn_fwd_new(const pp_gnn *m, int cap_n, int cap_e, pp_gnn_fwd **out,
                               pp_err *err);
int pp_gnn_fwd_fits(const pp_gnn_fwd *f, const pp_gnn_graph *s);
/* out[t], t < m->n_targets, in target units; checks the sample's widths against m. */
perfpred_status pp_gnn_fwd_run(const pp_gnn *m, pp_gnn_fwd *f, const pp_gnn_graph *s, double *out,
                               pp_err *err);
/* The same for a sample that already passed pp_gnn_graph_check: checks only the widths against
 * m. first (NULL: none) is the ensemble's first member's workspace, which ran on this same s just
 * before: its classes of equal rows (which depend on s alone) are taken instead of recomputed. */
perfpred_status pp_gnn_fwd_run_member(const pp_gnn *m, pp_gnn_fwd *f, const pp_gnn_fwd *first,
                                      const pp_gnn_graph *s, double *out, pp_err *err);
void pp_gnn_fwd_free(pp_gnn_fwd *f);  /* NULL is a no-op */
/* Makes f's later runs forward-only predictions over wt, m's weights as pp_gnn_weights_t gives
 * them (owned by the caller, alive as long as f): every linear op through pp_gnn_op_linear_t,
 * aggregate and pool without the argmax that only a backward pass needs. The outputs agree with
 * the BLAS forward within float rounding (sums in another order, fused multiply-adds): the same
 * bits on any x86-64 with AVX2+FMA or AVX-512, the portable loops' bits elsewhere. */
void pp_gnn_fwd_use_weights_t(pp_gnn_fwd *f, const float *wt);
/* A malloc'd copy of m->w (n_params floats) with every weight matrix [n][k] transposed to [k][n]
 * at the same offset; biases as they are. NULL on out of memory. Read once: later changes to
 * m->w are not seen (predictions do not change a loaded model). */
float *pp_gnn_weights_t(const pp_gnn *m);

/* Members of the ensemble that starts at gnn (1 for a single model, 0 for NULL). */
int pp_gnn_members(const pp_gnn *gnn);
/* 1 when the members' outputs for target t, lo..hi from pp_gnn_forward_range, spread no wider than
 * gnn->spread_gate[t], or there is no gate; else 0. */
int pp_gnn_agrees(const pp_gnn *gnn, int t, double lo, double hi);
/* 1 when they agree on every target (lo, hi: per target): whether a prediction takes the
 * correction at all. */
int pp_gnn_agrees_all(const pp_gnn *gnn, const double *lo, const double *hi);
/* Sets gnn->spread_gate[t] for every target from samples[idx[0..n-1]]: the widest member spread
 * among those where the target is present, rounded up to a float (0 for a single model or no
 * such sample). */
perfpred_status pp_gnn_set_spread_gate(pp_gnn *gnn, const pp_gnn_graph *samples, const int *idx,
                                       int n, pp_err *err);

/* Zeroes gnn->grad, then accumulates the gradient of the masked MSE over samples[idx[0..n-1]]
 * (idx NULL: samples 0..n-1) and stores that loss (standardized units) in *loss. */
perfpred_status pp_gnn_loss_grad(pp_gnn *gnn, const pp_gnn_graph *samples, const int *idx, int n,
                                 double *loss, pp_err *err);

/* Trains on samples[train_idx[..]] with early stopping on samples[val_idx[..]] (n_val may be 0:
 * then all epochs run and the last weights are kept). Standardization statistics come from the
 * training split; weights are re-initialized from gnn->params.seed, so the result depends only on
 * the data, the params and the OpenBLAS thread count. Fills gnn->report (and *report if given). */
perfpred_status pp_gnn_train(pp_gnn *gnn, const pp_gnn_graph *samples, int n_samples,
                             const int *train_idx, int n_train, const int *val_idx, int n_val,
                             pp_gnn_report *report, pp_err *err);

/* ---- save / load (gnn_io.c) ----
 * Weights file, little-endian:
 *   0   char[8]  magic "PPGNNWTS"
 *   8   u32      version (1)
 *   12  u32      header bytes (48)
 *   16  u32 F, 20 u32 Fe, 24 u32 G, 28 u32 T, 32 u32 L, 36 u32 H, 40 u32 n_params
 *   44  u32      flags (bit 0: trained)
 *   48  f32      x_mean[F] x_std[F] e_mean[Fe] e_std[Fe] u_mean[G] u_std[G] y_mean[T] y_std[T]
 *       f32      params[n_params] (layout above)
 *   end u64      FNV-1a 64 of every preceding byte
 * Manifest (JSON): format "perfpred-gnn", version 1, the weights file's name, size and FNV-1a,
 * architecture (dims, layers, hidden, n_params), training settings, the data and split
 * descriptions and the report (epochs, best epoch, train/validation errors). */
typedef struct pp_gnn_provenance {
    const char *data;   /* where the training measurements come from (device, runtime, files) */
    const char *split;  /* how train/validation were chosen */
    const char *target_names[PP_GNN_MAX_TARGETS]; /* e.g. "latency"; NULL entries are omitted */
} pp_gnn_provenance;

/* Writes weights_path and (if not NULL) manifest_path, each atomically. prov may be NULL: the
 * manifest then records empty data and split descriptions. An ensemble's members 2..K go to
 * <weights stem>.<i>.bin and <manifest stem>.<i>.json (gnn-latency.2.bin, gnn-latency.2.json)
 * first, each with its own manifest, and the first member's manifest, written last, lists their
 * files and checksums ("ensemble"); it needs a manifest_path. */
perfpred_status pp_gnn_save(const pp_gnn *gnn, const char *weights_path, const char *manifest_path,
                            const pp_gnn_provenance *prov, pp_err *err);
/* Reads a weights file; with a manifest, also checks that it describes this file (name, size,
 * checksum, dims) and restores params and report from it, and loads the ensemble members it lists
 * (each checked against its own manifest and the checksum listed). */
perfpred_status pp_gnn_load(const char *weights_path, const char *manifest_path, pp_gnn **out,
                            pp_err *err);

/* ---- ops (gnn_ops.c), exposed for gradient checks ----
 * Each op does forward (backward = 0) or backward (backward = 1). Backward passes accumulate (+=)
 * into the gradients of their inputs unless noted; matrices are row-major with the given leading
 * dimensions, so ops read and write column blocks of wider buffers in place. */

/* y[m][n] = x[m][k] w[n][k]^T + b   (b may be NULL)
 * backward: dw += dy^T x, db += sum_rows dy, dx += dy w   (dx, db may be NULL) */
void pp_gnn_op_linear(int backward, int m, int k, int n, const float *x, float *dx, int ldx,
                      const float *w, float *dw, int ldw, const float *b, float *db, float *y,
                      const float *dy, int ldy);
/* C[m][n] += op(A)[m][k] op(B)[k][n], row-major, op = transpose where trans_* != 0: OpenBLAS's
 * cblas_sgemm, loaded on first use (gnn_blas.c), or plain loops without it. */
void pp_gnn_sgemm(int trans_a, int trans_b, int m, int n, int k, const float *a, int lda,
                  const float *b, int ldb, float *c, int ldc);
/* openblas_set_num_threads(n) for n > 0 (nothing without OpenBLAS). */
void pp_gnn_blas_threads(int n);
/* Forward only, weights transposed: y[i][0..n) = b + sum_c x[i][c] wt[c][0..n) (gnn_infer.c). */
void pp_gnn_op_linear_t(int m, int k, int n, const float *x, int ldx, const float *wt,
                        const float *b, float *y, int ldy);
/* on != 0: the forward-only ops take their portable loops (a separate multiply and add a step)
 * instead of the AVX-512 / AVX2 kernels (fused multiply-adds in the linear op: the same sums within
 * float rounding, not the same bits; aggregate and pool give the same bits), and a forward-only
 * pass computes every row (no classes of equal rows): the reference the fast path is checked
 * against. For tests and benches. Process-wide. */
void pp_gnn_infer_plain(int on);
int pp_gnn_infer_is_plain(void);
/* 1 when pp_gnn_op_linear_t at 32 outputs runs a fused multiply-add kernel now (x86-64 with
 * AVX-512F or AVX2+FMA, not forced plain), 0 when it runs the portable loop. */
int pp_gnn_infer_fused(void);
/* on == 0: a forward-only pass computes every row instead of one per class of equal rows, with
 * the same kernels (the same bits: tests check the classes with it). Default on. Process-wide. */
void pp_gnn_infer_classes(int on);
int pp_gnn_infer_has_classes(void);
/* pp_gnn_op_linear_t over the rows rows[0..m) of x and y only (all of [0, m) for NULL). */
void pp_gnn_op_linear_rows_t(int m, const int *rows, int k, int n, const float *x, int ldx,
                             const float *wt, const float *b, float *y, int ldy);
/* The same with row i's sums starting from row y0_map[i] of y0 (ldy0 floats apart) instead of a
 * bias: a call over columns [0, k0) into y0, then this one over the columns after them (x and wt
 * advanced by k0), gives the bits of one call over all columns, each output being summed in column
 * order either way. Rows that share their first columns share their start. */
void pp_gnn_op_linear_rows_from_t(int m, const int *rows, int k, int n, const float *x, int ldx,
                                  const float *wt, const float *y0, const int *y0_map, int ldy0,
                                  float *y, int ldy);
/* Two calls of pp_gnn_op_linear_rows_t over the same rows of x: ya = ba + x wta, yb = bb + x wtb
 * (n outputs each), the same bits. finite_w != 0 (the caller checked that wta's and wtb's first k
 * rows are finite): where the AVX2 kernel runs at n = 32, each row is summed over its nonzero
 * columns only and a row that ends with a zero output is summed again over all (gnn_infer.c says
 * why that gives the same bits, and why AVX-512 machines sum every column). */
void pp_gnn_op_linear2_rows_t(int m, const int *rows, int k, int n, const float *x, int ldx,
                              const float *wta, const float *ba, float *ya, int ldya,
                              const float *wtb, const float *bb, float *yb, int ldyb,
                              int finite_w);
/* pp_gnn_op_linear2_rows_t's zero skipping: 0 off (every column summed), 1 where it pays (the
 * default: AVX2 machines, and AVX-512 on AMD Zen 4 with its own kernel), 2 the AVX2 kernel
 * wherever AVX2 and FMA run, AVX-512 machines included, 3 the AVX-512 kernel on every AVX-512
 * machine (2 and 3 for tests: the same bits). Process-wide. */
void pp_gnn_infer_sparse(int mode);
/* pp_gnn_op_aggregate's forward without argmax (the same bits), vector kernels where h = 32. */
void pp_gnn_aggregate_t(int n_nodes, int h, const int *slot_ptr, const int *slot_nb,
                        const float *P, const float *Q, float *M, int ldm);
/* The same for the nodes nodes[0..n_nodes) only (all of [0, n_nodes) for NULL), message s reading
 * row slot_q[s] of Q (row s for NULL). */
void pp_gnn_aggregate_rows_t(int n_nodes, const int *nodes, int h, const int *slot_ptr,
                             const int *slot_nb, const int *slot_q, const float *P, const float *Q,
                             float *M, int ldm);
/* X = relu(X) in place, then out = [mean_i X[i] ; max_i X[i]]: pp_gnn_op_relu then pp_gnn_op_pool
 * without argmax, in one pass (the same bits), vector kernels where h = 32. */
void pp_gnn_relu_pool_t(int n, int h, float *X, int ldx, float *out);
/* The same over the rows rows[0..n) of X (a row may be named more than once; NULL: 0..n-1), in
 * that order: relu in place on each row named, the same mean and max as over a matrix that held
 * a copy of row rows[i] at i. */
void pp_gnn_relu_pool_rows_t(int n, const int *rows, int h, float *X, int ldx, float *out);
/* The same over class rows (rows[i] <= i and rows[rows[i]] = rows[i], as node classes give; n >= 1):
 * a row is relu'd in place where it first comes (rows[i] = i) and read as it is after, the same
 * bits as pp_gnn_relu_pool_rows_t with fewer loads and stores. */
void pp_gnn_relu_pool_cls_t(int n, const int *rows, int h, float *X, int ldx, float *out);
/* y = max(y, 0) in place; backward: dy *= [y > 0] in place (dL/dy becomes dL/dpre) */
void pp_gnn_op_relu(int backward, int m, int n, float *y, float *dy, int ld);
/* m_i = [mean_{s in slots(i)} (P[nb_s] + Q_s) ; max_s (P[nb_s] + Q_s)], 0 for a node without
 * slots; argmax[i*h + c] keeps the winning slot (-1 when none); NULL argmax (forward only):
 * the same figures, not kept.
 * backward: dQ_s += dM_mean[i]/deg_i + [s = argmax] dM_max[i]; dP[nb_s] += the same. */
void pp_gnn_op_aggregate(int backward, int n_nodes, int h, const int *slot_ptr, const int *slot_nb,
                         const float *P, float *dP, const float *Q, float *dQ, float *M,
                         const float *dM, int ldm, int *argmax);
/* out = [mean_i X[i] ; max_i X[i]] over n rows of width h; argmax[c] keeps the winning row (NULL
 * in a forward-only pass).
 * backward: dX[i] += dout_mean/n + [i = argmax] dout_max. */
void pp_gnn_op_pool(int backward, int n, int h, const float *X, float *dX, int ldx, float *out,
                    const float *dout, int *argmax);
/* C[i][0..d) = g for n rows; backward: dg += sum_i dC[i][0..d). */
void pp_gnn_op_broadcast(int backward, int n, int d, const float *g, float *dg, float *C,
                         const float *dC, int ldc);
/* returns scale * sum_t mask_t (o_t - y_t)^2; backward: do_t += 2 scale mask_t (o_t - y_t) */
double pp_gnn_op_mse(int backward, int t, const float *o, float *d_o, const float *y,
                     const unsigned char *mask, double scale);
/* returns scale * sum_t mask_t h_t(o_t - y_t), h_t(r) = r^2 for |r| <= delta_t, else
 * delta_t (2 |r| - delta_t) (squared error near zero, absolute error beyond delta_t);
 * backward: do_t += scale mask_t h_t'(o_t - y_t) */
double pp_gnn_op_huber(int backward, int t, const float *o, float *d_o, const float *y,
                       const unsigned char *mask, const float *delta, double scale);

/* xoshiro256** seeded through splitmix64: the only randomness in the module. */
typedef struct pp_gnn_rng {
    uint64_t s[4];
} pp_gnn_rng;
void pp_gnn_rng_seed(pp_gnn_rng *r, uint64_t seed);
uint64_t pp_gnn_rng_next(pp_gnn_rng *r);
double pp_gnn_rng_uniform(pp_gnn_rng *r);  /* [0, 1) with 53 random bits */
int pp_gnn_rng_below(pp_gnn_rng *r, int n); /* uniform in [0, n), n >= 1, unbiased */

#endif
