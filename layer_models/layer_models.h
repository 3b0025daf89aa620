/* layer_models/: one XGBoost regressor per (device, op kind, target). A regressor predicts the log
 * of the ratio between the measured figure and an analytic base (roofline time, bytes), so it only
 * learns what the roofline misses and stays sane beyond its training sizes. A device's regressors
 * live in configs/artifacts/<device>/ as <kind>-<target>.ubj plus manifest.json (provenance).
 * A measured layer (pp_layer_row, the row of docs/measurements.md) is rebuilt here as a single-node
 * graph (layer_graph.c), so that a benchmark layer and a model node share one feature code. */
#ifndef PP_LAYER_MODELS_H
#define PP_LAYER_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "devices/devices.h"
#include "graph/graph.h"
#include "util/util.h"

typedef enum pp_lm_target {
    PP_LM_LATENCY = 0,  /* ms */
    PP_LM_ENERGY = 1,   /* J */
    PP_LM_MEMORY = 2,   /* bytes */
    PP_LM__COUNT
} pp_lm_target;
const char *pp_lm_target_name(pp_lm_target t);   /* "latency", "energy", "memory" */
int pp_lm_target_from_name(const char *s);       /* -1 if unknown */

/* The analytic base a regressor corrects (label = log(measured / base)):
 *   latency: t0 = max(flops / peak, bytes / bw) + floor           [ms]
 *   energy:  t0 / 1000                         [s; exp(model) is then the mean power in W]
 *   memory:  in_bytes + out_bytes + param_bytes                   [bytes]
 * bytes = in_bytes + out_bytes + param_bytes of the node's features. compute_units (SMs, cores)
 * only enters the wave features below. */
typedef struct pp_lm_base {
    double peak_tflops;  /* > 0 */
    double bw_gbs;       /* > 0 */
    double floor_ms;     /* >= 0: launch and timing floor */
    int compute_units;   /* > 0 */
    /* >= 0; 0 = none. The runtime's BLAS GEMM rate, on the footing of peak_tflops (per core x
     * compute_units): a convolution PyTorch's CPU runtime runs as im2col + BLAS GEMM instead of
     * oneDNN (pp_lm_torch_cpu_conv_blas) has compute time flops / blas_tflops, since a BLAS that
     * reaches a quarter of the FMA peak makes such a kernel 4x slower than its oneDNN twin.
     * Manifests without it (fitted before it existed, or off PyTorch CPUs) keep the old base. */
    double blas_tflops;
    /* >= 0; 0 = none. The clock rate of eager PyTorch's CPU pooling loop, on the same footing:
     * clock x compute_units, in 10^12 clocks a second. A pool kernel's compute time is then
     * pp_lm_torch_cpu_pool_clocks / pool_tflops. Manifests without it keep the memory roofline. */
    double pool_tflops;
    /* >= 0; 0 = none. What a call of a convolution eager PyTorch's CPU runtime hands oneDNN
     * costs however small (the descriptor's runtime.conv_call_us: primitive set-up and reorders,
     * 28 us on the Zen 4 guest against 1 us for an element-wise op): such a kernel's floor is
     * max(floor_ms, conv_call_ms). Manifests without it keep floor_ms alone. */
    double conv_call_ms;
} pp_lm_base;
double pp_lm_base_eval(const pp_lm_base *b, pp_lm_target t, const pp_node_feat *f);

/* 1 when eager PyTorch (1.13-2.x, fp32, NCHW, one thread) runs this convolution through its
 * native path, im2col (none for 1x1 unstrided) + the BLAS GEMM per sample and group, not through
 * oneDNN. ConvUtils.h's use_mkldnn: oneDNN takes a non-transposed convolution when (strided or
 * dilated or batch >= 16 or the kernel is not 1x1 or threads > 1) and (groups > 1 or both kernel
 * sides > 3 or batch > 1 or the input has more than 20480 elements). Transposed convolutions
 * always run natively. 0 for kinds that are not convolutions. */
int pp_lm_torch_cpu_conv_blas(const pp_node_feat *f);
/* 1 for a convolution (conv, dwconv) eager PyTorch hands oneDNN: not pp_lm_torch_cpu_conv_blas */
int pp_lm_torch_cpu_conv_onednn(const pp_node_feat *f);

/* Clocks eager PyTorch's CPU pooling takes for a pooling node (0 for other kinds). ATen's NCHW max
 * and average pooling (cpu_max_pool, cpu_avg_pool, torch 1.13-2.x) visit each output's window
 * element by element in scalar code: per output PP_POOL_OUT_CLOCKS of bounds, stores and loop,
 * one clock an element, and for a max the branch on each new running maximum, mispredicted on
 * data in no order: the i-th element is a new maximum with probability 1/i, so H(n) - 1 misses
 * after the first (H the harmonic number), PP_BRANCH_MISS_CLOCKS each. On the Zen 4 guest's plan
 * rows (data/epyc-zen4-kvm-2vcpu) a MaxPool costs 3-37 ns an output, 10-70x its memory roofline,
 * and 0.9-1.45x these clocks at the reported 2.6 GHz (1x1 to 5x5 windows), where one clock an
 * element alone put them at 3.8-10x. */
#define PP_POOL_OUT_CLOCKS 8.0    /* the 1x1 windows' 3.1-3.4 ns an output there */
#define PP_BRANCH_MISS_CLOCKS 15.0 /* recent x86 and Arm cores: 12-20 clocks a mispredict */
double pp_lm_torch_cpu_pool_clocks(const pp_node_feat *f);

/* Regressor inputs: pp_feat_vector (graph/features.c) followed by PP_LM_N_EXTRA columns derived from
 * the same pp_node_feat and the base: log10 of compute time, memory time and base, the compute share;
 * for GEMM-like kernels (linear, bmm; conv as the implicit GEMM (N*Hout*Wout) x Cout x Cin*k*k/group)
 * the waves of 128x128 and 64x64 output tiles over the compute units (log2) and the last wave's
 * fill, how well M and N fill 128-, 64- and 32-wide tiles and K fills 8: what makes cuBLAS kernels
 * fast or slow beyond the roofline. A Transpose (datamove) puts its copy in the first four of those
 * columns: log2 of its contiguous runs, of the output's innermost extent and of the input stride
 * read along it, and the axes it moves (pp_node_feat.tr_*): one shape, different permutations,
 * 1-8x apart. Columns a kind lacks are NaN (missing for XGBoost; models fitted before a kind had
 * them never split on them). The last column is the operator (pp_node_feat.op_code): one kind's
 * operators differ in speed per byte. */
#define PP_LM_N_EXTRA 16
#define PP_LM_NFEAT (PP_FEATVEC_LEN + PP_LM_N_EXTRA)
void pp_lm_features(const pp_node_feat *f, const pp_lm_base *b, float out[PP_LM_NFEAT]);
const char *pp_lm_feature_name(int i);

/* Attribute values a regressor saw in training (kernel, stride, dilation, group of pp_node_feat;
 * values >= 31 count as 31): a node with a value the regressor never saw is not covered by it, so a
 * conv model trained on 3x3 kernels does not answer for a 7x7 one. Bit v of seen[i]: value v seen. */
#define PP_LM_N_DOMAIN 6
/* The operators a regressor saw (pp_node_feat.op_code), in the order first seen: a node of another
 * operator is not covered either (a model of Relu, Sigmoid and Erf rows does not guess a Mish).
 * n_ops 0 = any operator: manifests written before operators were recorded, or a kind with more
 * than PP_LM_MAX_OPS of them. */
#define PP_LM_MAX_OPS 96
typedef struct pp_lm_domain {
    uint32_t seen[PP_LM_N_DOMAIN];
    int n_ops;
    uint32_t ops[PP_LM_MAX_OPS];
} pp_lm_domain;
const char *pp_lm_domain_name(int i);  /* "kernel_h", "kernel_w", "stride_h", "stride_w", ... */
int pp_lm_domain_value(const pp_node_feat *f, int i);
int pp_lm_domain_contains(const pp_lm_domain *d, const pp_node_feat *f);

/* XGBoost hyper-parameters. Training is deterministic for a fixed seed and nthread. */
typedef struct pp_lm_params {
    int nthread;            /* > 0, set explicitly (XGBoost would take every core) */
    int seed;
    int n_rounds;
    int max_depth;
    double eta;
    double subsample;
    double colsample_bytree;
    double min_child_weight;
    double lambda;
    int max_bin;
    const char *tree_method;  /* "hist" or "exact" */
} pp_lm_params;
pp_lm_params pp_lm_default_params(void);
/* Rejects out-of-range values with a message naming the field. */
perfpred_status pp_lm_params_check(const pp_lm_params *p, pp_err *err);

/* ---- one regressor ---- */
typedef struct pp_lm_model pp_lm_model;

/* Trains on n rows (feats[i], measured y[i] > 0). Rows whose base is not > 0 are an error. */
perfpred_status pp_lm_train(const pp_node_feat *feats, const double *y, int n, pp_op_kind kind,
                            pp_lm_target target, const pp_lm_base *base, const pp_lm_params *p,
                            pp_lm_model **out, pp_err *err);
/* Predicted figure (ms, J or bytes) for one node. Thread-safe (a mutex per regressor). */
perfpred_status pp_lm_model_predict(pp_lm_model *m, const pp_node_feat *f, double *out, pp_err *err);
/* Predictions for n nodes in one XGBoost call (same figures as n single calls). */
perfpred_status pp_lm_model_predict_many(pp_lm_model *m, const pp_node_feat *f, int n, double *out,
                                         pp_err *err);
/* What the predictor answers for those n nodes: out[i] (the regressor's predictions) stays where
 * node i lies in the model's domain, and becomes the roofline base where it does not (an unseen
 * operator, kernel, stride, dilation or group: lm_set then reports the roofline). Returns how
 * many were replaced. */
int pp_lm_model_gate(const pp_lm_model *m, const pp_node_feat *f, int n, double *out);
/* The same figures through XGBoost itself (a DMatrix and XGBoosterPredict under the regressor's
 * lock): the reference the flat evaluator is tested against, and the old path for bench/. */
perfpred_status pp_lm_model_predict_many_xgb(pp_lm_model *m, const pp_node_feat *f, int n,
                                             double *out, pp_err *err);
/* Predictions go through the regressor's trees flattened into a pp_lm_flat (same figures, no
 * DMatrix, no allocation, no lock): from the load on when the tree cache is on (pp_lm_cache_dir),
 * else after its first few calls through XGBoost (flattening costs a few model loads, which a
 * one-shot prediction should not pay in every process). pp_lm_model_flatten does it now
 * (idempotent, thread-safe); pp_lm_model_is_flat says whether it has happened. */
perfpred_status pp_lm_model_flatten(pp_lm_model *m, pp_err *err);
int pp_lm_model_is_flat(const pp_lm_model *m);
/* The model's flat trees (owned by it), NULL while XGBoost answers. */
const struct pp_lm_flat *pp_lm_model_flat(const pp_lm_model *m);
/* Process-wide switch for benchmarks: on != 0 sends every prediction through XGBoost (the path
 * before the flat evaluator). Default off. Not for use while predictions run on other threads. */
void pp_lm_use_xgboost(int on);
/* UBJSON model bytes (malloc'd copy; caller frees). */
perfpred_status pp_lm_model_to_ubj(pp_lm_model *m, uint8_t **buf, size_t *len, pp_err *err);
/* Saves atomically; path must end in ".ubj". An existing file is left intact on failure. */
perfpred_status pp_lm_model_save(pp_lm_model *m, const char *path, pp_err *err);
perfpred_status pp_lm_model_load(const char *path, pp_op_kind kind, pp_lm_target target,
                                 const pp_lm_base *base, const pp_lm_domain *domain,
                                 pp_lm_model **out, pp_err *err);
void pp_lm_model_free(pp_lm_model *m);
pp_op_kind pp_lm_model_kind(const pp_lm_model *m);
pp_lm_target pp_lm_model_target(const pp_lm_model *m);
const pp_lm_base *pp_lm_model_base(const pp_lm_model *m);
const pp_lm_domain *pp_lm_model_domain(const pp_lm_model *m);

/* ---- a tree ensemble as a flat array (lm_flat.c) ----
 * Built once from XGBoost's JSON model (XGBoosterSaveModelToBuffer, format json): per node the
 * feature, threshold, children and default direction for a missing value; leaf weights; the base
 * margin and the objective's transform. Evaluation allocates nothing, takes no lock, and gives the
 * same floats as XGBoost 1.7's CPU predictor (same summation order). Owned by its pp_lm_model. */
typedef struct pp_lm_flat pp_lm_flat;
/* json: len bytes (not NUL-terminated); ctx names the model in errors. Multi-class, dart,
 * categorical splits and unknown objectives are PERFPRED_ERR_MODEL. */
perfpred_status pp_lm_flat_from_json(const char *json, size_t len, const char *ctx,
                                     pp_lm_flat **out, pp_err *err);
void pp_lm_flat_free(pp_lm_flat *f);  /* NULL is a no-op */
int pp_lm_flat_n_features(const pp_lm_flat *f);
/* out[i] = transform(base_margin + sum of trees) for rows X + i * stride, i in [0, n); each row
 * holds pp_lm_flat_n_features floats (the vector kernels load them all). */
void pp_lm_flat_predict(const pp_lm_flat *f, const float *X, int n, int stride, float *out);
/* The kernel pp_lm_flat_predict runs, picked once from the CPU (__builtin_cpu_supports): the
 * portable loop (trees one at a time, a branch per node: the reference), or trees in lockstep,
 * 8 a step with AVX2 or 16 with AVX-512F, each lane walking its tree for the group's depth
 * (gathered nodes, children chosen by masks; the rows' features in registers when they are <= 64).
 * The vector kernels read a second copy of the trees in 8-byte nodes, made on their first use
 * (n_nodes x 8 bytes, owned by f); an ensemble that form cannot hold (a feature index past 4095,
 * a right child not right after its left one, a depth past 63: XGBoost writes none of these)
 * runs the portable loop. All give the same bits: each row adds its trees' leaves one by one in
 * tree order, in float, from the base margin, and a missing (NaN) feature takes the node's
 * default child. pp_lm_flat_kernel_cap limits the pick to at most max_level (process-wide, for
 * tests and bench/) and returns the level now in effect; pp_lm_flat_kernel says which it is, and
 * pp_lm_flat_kernel_of which runs for f. */
#define PP_LM_FLAT_PORTABLE 0
#define PP_LM_FLAT_AVX2 1
#define PP_LM_FLAT_AVX512 2
int pp_lm_flat_kernel_cap(int max_level);
int pp_lm_flat_kernel(void);
int pp_lm_flat_kernel_of(const pp_lm_flat *f);

/* ---- a regressor's memo of tree outputs by input row (lm_memo.c) ----
 * Made on a model's first flat prediction; rows are matched bit for bit, so an answer from the
 * memo is the one the trees give. 1024 rows, direct-mapped. Thread-safe. */
typedef struct pp_lm_memo pp_lm_memo;
pp_lm_memo *pp_lm_memo_new(void);      /* NULL on out of memory or while disabled: no memo */
void pp_lm_memo_free(pp_lm_memo *m);   /* NULL is a no-op */
/* 1 and *y set when row x (PP_LM_NFEAT floats) is held. */
int pp_lm_memo_get(pp_lm_memo *m, const float *x, float *y);
void pp_lm_memo_put(pp_lm_memo *m, const float *x, float y);
/* The same one step earlier, by a kernel's features (all sizeof(pp_node_feat) bytes compared) to
 * the model's final answer (what pp_lm_model_predict gives for them); 512 entries. A hit counts
 * as a row's lookup and hit in pp_lm_memo_counts; a miss is not counted (the row's is). */
int pp_lm_memo_get_feat(pp_lm_memo *m, const pp_node_feat *f, double *out);
void pp_lm_memo_put_feat(pp_lm_memo *m, const pp_node_feat *f, double out);
void pp_lm_memo_counts(const pp_lm_memo *m, long *hits, long *lookups);
/* Process-wide switch for benchmarks timing the trees themselves (off != 0: no lookups). */
void pp_lm_memo_disable(int off);
/* A regressor's memo (NULL before its first flat prediction). */
const pp_lm_memo *pp_lm_model_memo(const pp_lm_model *m);

/* ---- the flat trees' disk cache (lm_flat.c: format; lm_cache.c: files) ----
 * Reading a regressor through XGBoost and flattening it costs ~0.1 s a model; the flat arrays
 * read back in well under a millisecond. pp_lm_model_load keeps each regressor's flat trees in
 * <cache dir>/flat-trees/<hash of the .ubj's real path>.flat, written once (temp file, then
 * rename) and trusted only when magic, version, byte order, sizes, a checksum over the whole file,
 * the source .ubj's identity (size, inode, device, mtime and ctime in ns, XGBoost's version) and
 * the tree structure (children after their parent inside their tree, features inside the row) all
 * check; anything else is ignored and rewritten. A .ubj changed in the last 2 s is not cached yet
 * (git's racily-clean rule: a rewrite within one timestamp tick at the same size looks unchanged).
 * The cache dir: $PERFPRED_CACHE_DIR, else $XDG_CACHE_HOME/perfpred, else $HOME/.cache/perfpred;
 * PERFPRED_CACHE_DIR=off (or no usable dir) reads every model through XGBoost as before. */
typedef struct pp_lm_src_id {
    uint64_t size, ino, dev;
    int64_t mtime_ns, ctime_ns;
    uint64_t xgb_version;   /* major << 32 | minor << 16 | patch of the XGBoost that flattened */
} pp_lm_src_id;
/* Serialized flat trees for source src (malloc'd, caller frees). */
perfpred_status pp_lm_flat_serialize(const pp_lm_flat *f, const pp_lm_src_id *src, uint8_t **buf,
                                     size_t *len, pp_err *err);
/* Back from those bytes; src NULL skips the identity check. Any mismatch or malformed tree is
 * PERFPRED_ERR_PARSE and *out NULL. Never trusts a length or index it has not checked. */
perfpred_status pp_lm_flat_deserialize(const uint8_t *buf, size_t len, const pp_lm_src_id *src,
                                       pp_lm_flat **out, pp_err *err);
/* The same checks on a read-only mapping of a cache file (mmap), which the flat then owns (and
 * unmaps; also on failure): its arrays point into the mapping, nothing is copied. The cache's
 * writer replaces files by rename, never in place, so a mapping always holds a whole file. */
perfpred_status pp_lm_flat_from_mapping(void *map, size_t len, const pp_lm_src_id *src,
                                        pp_lm_flat **out, pp_err *err);
/* The checksum the format uses, and (for the fuzz harness) rewriting it into buf. */
uint64_t pp_lm_cache_checksum(const uint8_t *p, size_t n);
void pp_lm_cache_seal(uint8_t *buf, size_t len);
/* 1 when every tree walk of f ends at a leaf inside its arrays (what the cache reader checks). */
int pp_lm_flat_is_sound(const pp_lm_flat *f);
/* The cache folder into buf (created if missing); -1 when caching is off or no folder is usable. */
int pp_lm_cache_dir(char *buf, size_t len);
/* The identity of the file at path; -1 if it cannot be stat'ed. */
int pp_lm_src_id_of(const char *path, pp_lm_src_id *id);
/* The cached flat trees of model file path, or NULL (no cache, stale, corrupt: ignored). */
pp_lm_flat *pp_lm_cache_load(const char *path);
/* Stores f as the cached trees of path; failures are silent (the cache is an optimisation). */
void pp_lm_cache_store(const char *path, const pp_lm_flat *f);

/* ---- a device's manifest ---- */
#define PP_LM_MAX_SOURCES 32

/* How `calibrate fit --rescale-layers` rescaled a file's rows to the first files' session: each row
 * of latency ms divided by exp(log_a + slope x), x = (ln ms - log_a) / (1 + slope), with the file's
 * line, or with --rescale-by-class the line of the row's roofline class ([0] compute-bound, [1]
 * memory-bound). */
typedef struct pp_lm_rescale {
    int on;                 /* 0: the rows as measured */
    double log_a, slope;
    int by_class;
    double class_log_a[2], class_slope[2];
} pp_lm_rescale;

typedef struct pp_lm_source {
    const char *path;       /* repository-relative data file */
    const char *repo;       /* upstream repository URL */
    const char *commit;
    const char *gpu;        /* device the rows were measured on */
    int rows;
    const char *role;       /* "train" or "test" */
    pp_lm_rescale rescale;  /* .on for a --rescale-layers file */
} pp_lm_source;

typedef struct pp_lm_entry {
    pp_op_kind kind;
    pp_lm_target target;
    const char *file;       /* "<kind>-<target>.ubj", relative to the artifacts dir */
    pp_lm_base base;
    pp_lm_domain domain;
    int n_train, n_heldout;
    const char *heldout;    /* what the held-out rows are */
    double heldout_mape_pct;
    double roofline_mape_pct;  /* the analytic base alone on the same rows */
    const char *note;       /* e.g. "trained on NVIDIA A100 80GB PCIe rows", or NULL */
} pp_lm_entry;

typedef struct pp_lm_manifest {
    const char *device;
    const char *runtime;
    const char *precision;
    const char *date;
    const char *note;
    int n_sources;
    pp_lm_source sources[PP_LM_MAX_SOURCES];
    pp_lm_params params;
    int n_entries;
    pp_lm_entry entries[PP_OPK__COUNT * PP_LM__COUNT];
} pp_lm_manifest;

/* Writes <dir>/manifest.json atomically (cJSON), with the feature names of this build. */
perfpred_status pp_lm_manifest_write(const char *dir, const pp_lm_manifest *m, pp_err *err);

/* ---- a device's regressors, loaded from its artifacts dir ---- */
typedef struct pp_layer_models pp_layer_models;

/* Reads <dir>/manifest.json and every regressor it lists. A manifest whose feature names differ from
 * this build's is PERFPRED_ERR_MODEL (the artifacts were trained on other features). */
perfpred_status pp_layer_models_load(const char *dir, pp_layer_models **out, pp_err *err);
/* The same checks of the manifest, and every listed model file must exist; with deferred != 0 the
 * regressors themselves are read on first use (pp_layer_models_ready, or the first prediction).
 * Reading the A100's 7 MB of trees takes ~0.1 s: a context that knows every calibrated device
 * should not pay that for a device the call never predicts on. */
perfpred_status pp_layer_models_open(const char *dir, int deferred, pp_layer_models **out,
                                     pp_err *err);
/* Reads the regressors of a deferred set if that has not happened yet; PERFPRED_OK at once for a
 * set opened eagerly. A corrupt or unreadable file is an error naming it, and stays the answer to
 * every later call. Thread-safe. */
perfpred_status pp_layer_models_ready(const pp_layer_models *lm, pp_err *err);
void pp_layer_models_free(pp_layer_models *lm);   /* NULL is a no-op */

/* Return codes of pp_layer_models_predict. */
#define PP_LM_OK 0          /* *out holds the calibrated prediction */
#define PP_LM_UNCOVERED 1   /* no regressor for this op kind and target, or the node's attributes are
                               outside what it was trained on: fall back to the roofline */
#define PP_LM_ERROR (-1)    /* XGBoost failed, or a deferred set could not read a model file; err
                               says why */
/* Thread-safe. */
int pp_layer_models_predict(const pp_layer_models *lm, const pp_node_feat *f, pp_lm_target target,
                            double *out, pp_err *err);
int pp_layer_models_covers(const pp_layer_models *lm, pp_op_kind kind, pp_lm_target target);
const char *pp_layer_models_device(const pp_layer_models *lm);
/* Manifest text naming where the training data came from ("NeuSight <repo>@<commit>"). */
const char *pp_layer_models_source(const pp_layer_models *lm);
/* The distinct machines the training rows were measured on (the manifest sources' "gpu": a
 * runner row's machine=, or a dataset's GPU name); i in [0, n). */
int pp_layer_models_n_machines(const pp_layer_models *lm);
const char *pp_layer_models_machine(const pp_layer_models *lm, int i);
/* The entry (base, held-out error, note) of a covered kind, else NULL. */
const pp_lm_entry *pp_layer_models_entry(const pp_layer_models *lm, pp_op_kind kind,
                                         pp_lm_target target);

/* ------------------------------------------------ layer measurements as rows ---- */

/* A row holds its first PP_LAYER_MAX_INPUTS inputs itself and the rest, up to
 * PP_LAYER_MAX_ALL_INPUTS in all (a DenseNet Concat joins up to 49 tensors), in more_inputs: rows
 * are many (tens of thousands in a table), rows with more inputs than 6 few. */
#define PP_LAYER_MAX_INPUTS 6
#define PP_LAYER_MAX_ALL_INPUTS 64
#define PP_LAYER_MAX_OUTPUTS 16 /* outputs of a rebuilt row (a Split's parts) */
#define PP_LAYER_MAX_ATTRS 8
#define PP_LAYER_MAX_INTS 8

/* One node input of a layer row, in ONNX input order. */
typedef struct pp_layer_input {
    char role;              /* 'x' activation (graph input), 'w' weight (initializer), '-' omitted */
    int rank;               /* 0 for a scalar */
    int64_t dims[PP_MAX_RANK];
} pp_layer_input;

/* One ONNX attribute of a layer row: `name:type=value`, type one of i, f, s, ints, floats. */
typedef struct pp_layer_attr {
    const char *name;
    int type;               /* PP_ATTR_INT, _FLOAT, _STRING, _INTS, _FLOATS */
    int64_t i;
    double f;
    const char *s;
    int n;                  /* element count of ints / floats */
    int64_t ints[PP_LAYER_MAX_INTS];
    double floats[PP_LAYER_MAX_INTS];
} pp_layer_attr;

/* A layer measurement: enough to rebuild a single-node graph, plus the measured figures and where
 * they come from. Strings are owned by the table's arena. Optional figures: NaN / -1 = not reported. */
typedef struct pp_layer_row {
    const char *device;          /* perfpred device name ("a100-pcie-40gb") */
    const char *runtime;         /* runtime framework ("pytorch-eager") */
    const char *runtime_version; /* free text, may be "" */
    pp_precision precision;      /* math precision; tensors are float32 for fp32/tf32 */
    pp_op_kind kind;             /* as graph/features.c classifies the node (checked on rebuild) */
    const char *op_type;         /* ONNX op type */
    int64_t batch;               /* batch the layer ran at (informational) */
    int n_inputs;
    pp_layer_input inputs[PP_LAYER_MAX_INPUTS]; /* the first min(n_inputs, 6): read any input with
                                                   pp_layer_row_input */
    pp_layer_input *more_inputs; /* inputs 6 .. n_inputs - 1, NULL when n_inputs <= 6; owned by
                                    the arena of the row's strings (a table's, a plan's) */
    int n_attrs;
    pp_layer_attr attrs[PP_LAYER_MAX_ATTRS];
    double latency_ms;           /* median (or the source's statistic, see source), > 0 */
    double latency_spread_ms;    /* NaN = not reported */
    int64_t repetitions;         /* -1 = not reported */
    double energy_j;             /* NaN = not reported */
    int64_t memory_bytes;        /* -1 = not reported */
    const char *source;          /* "neusight@6945927:<path>:<line>" or a runner id */
    const char *date;            /* YYYY-MM-DD */
    int line;                    /* line in the CSV it was read from, 0 if built in memory */
} pp_layer_row;

/* Input i (0 <= i < r->n_inputs) of a row, wherever the row holds it. */
static inline const pp_layer_input *pp_layer_row_input(const pp_layer_row *r, int i)
{
    return i < PP_LAYER_MAX_INPUTS ? &r->inputs[i] : &r->more_inputs[i - PP_LAYER_MAX_INPUTS];
}
static inline pp_layer_input *pp_layer_row_input_mut(pp_layer_row *r, int i)
{
    return i < PP_LAYER_MAX_INPUTS ? &r->inputs[i] : &r->more_inputs[i - PP_LAYER_MAX_INPUTS];
}
/* Sets r's n inputs from in: the first PP_LAYER_MAX_INPUTS into the row, the rest copied into a
 * (more_inputs). 0, or -1 when n is outside 0..PP_LAYER_MAX_ALL_INPUTS or a is out of memory. */
int pp_layer_row_set_inputs(pp_layer_row *r, const pp_layer_input *in, int n, pp_arena *a);

/* ------------------------------------------------- a row as a graph node (layer_graph.c) ---- */

/* Builds the single-node graph of row (tensors x0.., weights w<i>, output y), links it, infers
 * shapes and computes features. *node is the index of its one node. Errors name the row's source.
 * The kind graph/ assigns must equal row->kind (else PERFPRED_ERR_UNSUPPORTED): a benchmark layer
 * and a model node are described by the same code. */
perfpred_status pp_layer_row_graph(const pp_layer_row *row, pp_graph **out, int *node, pp_err *err);
/* Just the node's features (the graph is built and freed). */
perfpred_status pp_layer_row_features(const pp_layer_row *row, pp_node_feat *out, pp_err *err);
/* The layer row of a composite kernel of g (one whose first node is first_node and whose one
 * operator is eager_op, as pp_graph_kernels groups it) as that operator over the first node's
 * first input: what the runtime runs, and what a plan has the runner time; with feat, also the
 * row's features (pp_layer_row_features). Returns 0, or -1 when eager_op is NULL, that input's
 * shape is unknown or the row does not rebuild. */
int pp_composite_row(const pp_graph *g, int first_node, const char *eager_op, pp_layer_row *row,
                     pp_node_feat *feat);

#endif
