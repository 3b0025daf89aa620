/* perfpred.h: the public header of libperfpred for predictions: load a model, open a context on
 * the device descriptors, predict, compare, advise a MIG slice, list devices, inspect a graph.
 * Calibration (plans, fits, evaluation reports) is in perfpred_calibrate.h.
 * Ownership: every handle returned by a *_load / *_new / *_open call is owned by the caller and
 * released with the matching *_free / *_close (NULL is a no-op). The library never prints and never
 * exits; it reports through status codes, per-handle messages and an optional log callback. */
#ifndef PERFPRED_H
#define PERFPRED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PERFPRED_VERSION "0.1.0"
#define PERFPRED_MAX_RANK 8

/* One status enum for the whole library; perfpred_status_str gives a fixed string per code. */
typedef enum perfpred_status {
    PERFPRED_OK = 0,
    PERFPRED_ERR_INVALID_ARG = 1, /* a caller error: NULL handle, bad option value */
    PERFPRED_ERR_IO = 2,          /* file missing, unreadable, unwritable */
    PERFPRED_ERR_PARSE = 3,       /* malformed file: not ONNX, truncated, bad YAML, bad CSV */
    PERFPRED_ERR_UNSUPPORTED = 4, /* op, opset, attribute value or feature not supported */
    PERFPRED_ERR_SHAPE = 5,       /* impossible or unresolvable shape */
    PERFPRED_ERR_GRAPH = 6,       /* cycle, dangling tensor name, duplicate producer */
    PERFPRED_ERR_DEVICE = 7,      /* unknown device, bad descriptor */
    PERFPRED_ERR_MODEL = 8,       /* trained artifact missing or corrupt */
    PERFPRED_ERR_NOMEM = 9,       /* allocation failed or size overflow */
    PERFPRED_ERR_INTERNAL = 10    /* a broken invariant: a bug in perfpred */
} perfpred_status;

const char *perfpred_status_str(perfpred_status s);
const char *perfpred_version(void);

typedef enum perfpred_log_level {
    PERFPRED_LOG_DEBUG = 0,
    PERFPRED_LOG_INFO = 1,
    PERFPRED_LOG_WARN = 2,
    PERFPRED_LOG_ERROR = 3
} perfpred_log_level;
typedef void (*perfpred_log_fn)(perfpred_log_level lvl, const char *msg, void *user);

/* ------------------------------------------------------------------ models ---- */

/* A loaded, shape-inferred model graph. Immutable after load: safe to share between threads. */
typedef struct perfpred_model perfpred_model;

typedef struct perfpred_input_override {
    const char *name;             /* graph input name */
    int rank;
    int64_t dims[PERFPRED_MAX_RANK];
} perfpred_input_override;

typedef struct perfpred_model_params {
    int64_t batch;                          /* value for symbolic/unknown leading dims; 0 = leave */
    const perfpred_input_override *inputs;  /* explicit input shapes, may be NULL */
    int n_inputs;
    int allow_unknown;  /* unknown ops become memory-bound element-wise ops instead of an error */
    perfpred_log_fn log;
    void *log_user;
} perfpred_model_params;

perfpred_model_params perfpred_model_default_params(void);

/* Loads path, infers shapes, computes per-node features and liveness.
 * On failure returns NULL and, if errbuf is not NULL, writes a message naming the file and node. */
perfpred_model *perfpred_model_load(const char *path, const perfpred_model_params *params,
                                    perfpred_status *status, char *errbuf, size_t errbuf_len);
void perfpred_model_free(perfpred_model *m);

typedef struct perfpred_model_totals {
    int64_t n_nodes;
    int64_t params;                 /* elements of weight tensors */
    int64_t param_bytes;
    int64_t macs;                   /* Conv, ConvTranspose, Gemm, MatMul multiply-accumulates */
    int64_t flops;
    int64_t activation_bytes;       /* sum of every node's output bytes */
    int64_t peak_activation_bytes;  /* max live activation bytes over the topological order */
    int64_t input_bytes;
    int n_unknown_ops;              /* ops treated as element-wise under allow_unknown */
} perfpred_model_totals;

perfpred_model_totals perfpred_model_get_totals(const perfpred_model *m);

/* Per-layer view of a loaded model (nodes in topological order); strings are model-owned. */
typedef struct perfpred_layer_info {
    const char *name, *op_type, *kind;
    int out_rank;                           /* first output's shape */
    int64_t out_dims[PERFPRED_MAX_RANK];
    int64_t macs, flops, params, in_bytes, out_bytes;
    double arith_intensity;
    int folded;                             /* shape arithmetic computed at load: no kernel */
    int unknown_op;                         /* treated as element-wise under allow_unknown */
} perfpred_layer_info;

int perfpred_model_n_layers(const perfpred_model *m);
perfpred_layer_info perfpred_model_layer(const perfpred_model *m, int i);
int perfpred_model_n_inputs(const perfpred_model *m);
/* Name of non-weight graph input i; its resolved shape goes to *rank and dims[PERFPRED_MAX_RANK]. */
const char *perfpred_model_input(const perfpred_model *m, int i, int *rank, int64_t *dims);


/* ------------------------------------------------------------- predictions ---- */

/* A context holds the device descriptors and the trained artifacts of a configs directory.
 * Opened once, then read-only: predictions from several threads on one context are safe.
 * Opening reads every descriptor and every artifact manifest (a corrupt one, or one naming a
 * missing file, fails the open); a device's XGBoost regressors are read by the first prediction
 * that needs them, so a corrupt model file fails that prediction (PERFPRED_ERR_MODEL, naming the
 * file) and every later one on a device that uses it. */
typedef struct perfpred_ctx perfpred_ctx;

typedef struct perfpred_ctx_params {
    const char *config_dir;  /* NULL: $PERFPRED_CONFIG_DIR, else the source or installed configs/ */
    perfpred_log_fn log;
    void *log_user;
} perfpred_ctx_params;

perfpred_ctx_params perfpred_ctx_default_params(void);
perfpred_ctx *perfpred_ctx_open(const perfpred_ctx_params *params, perfpred_status *status,
                                char *errbuf, size_t errbuf_len);
void perfpred_ctx_close(perfpred_ctx *ctx);

/* Where a figure comes from. */
typedef enum perfpred_provenance {
    PERFPRED_PROV_UNAVAILABLE = 0, /* the device descriptor lacks what the figure needs */
    PERFPRED_PROV_ESTIMATE = 1,    /* analytic (roofline, power model): uncalibrated */
    PERFPRED_PROV_CALIBRATED = 2,  /* trained on measurements of this device (or its parent) */
    PERFPRED_PROV_MIXED = 3,       /* a sum whose parts are partly calibrated, partly estimated
                                      (or, on a CPU, timed by another CPU's layer models) */
    PERFPRED_PROV_TRANSFERRED = 4  /* fitted on measurements of other devices of the same kind
                                      (a runtime stack fitted on other GPUs), not this one */
} perfpred_provenance;
const char *perfpred_provenance_str(perfpred_provenance p);

typedef struct perfpred_figure {
    double value;
    perfpred_provenance prov;
    const char *source;      /* context-owned text naming the model and data, or the estimate */
} perfpred_figure;

typedef struct perfpred_device_info {
    const char *name;        /* canonical name; context-owned */
    const char *description;
    const char *kind;        /* "gpu", "edge-gpu", "cpu", "phone", "accel" */
    const char *parent;      /* MIG parent, or NULL */
    const char *mig_profile; /* "3g.20gb" or NULL */
    int mig_compute_slices, mig_memory_slices, mig_max_instances;
    double memory_gb;
    double peak_tflops;      /* at the runtime's precision */
    double memory_bandwidth_gbs;
    const char *runtime;     /* framework: "pytorch-eager", "tensorrt", "tflite", ... */
    const char *precision;   /* "fp32", "tf32", "fp16", "bf16", "int8" */
    int calibrated_latency;  /* layer models exist (own or inherited through MIG/scaling) */
    int calibrated_energy;
    int calibrated_memory;
    const char *calibration_source; /* which layer models answer and their data, or NULL */
    const char *calibration_device; /* the device whose layer models answer (itself, its MIG
                                       parent, or its calibration_from), or NULL */
    int graph_correction;    /* a graph-level GNN correction trained on this device's networks */
    int overhead_correction; /* an in-network overhead correction (perfpred_calibrate_fit_overhead);
                                a GNN correction, where both exist, is the one applied */
    const char *stacks;      /* GPUs: the fitted runtime stacks, each "name (calibrated)" where
                                this GPU's rows fitted it, else "name (transferred)", comma-
                                separated; NULL when none. Context-owned. */
} perfpred_device_info;

int perfpred_device_count(const perfpred_ctx *ctx);
perfpred_status perfpred_device_at(const perfpred_ctx *ctx, int i, perfpred_device_info *out);
/* Resolves short names ("a100-mig-3g") too. */
perfpred_status perfpred_device_find(const perfpred_ctx *ctx, const char *name,
                                     perfpred_device_info *out);
/* The resolved descriptor as YAML; free with perfpred_free. */
char *perfpred_device_describe(const perfpred_ctx *ctx, const char *name);
void perfpred_free(void *p);

typedef struct perfpred_kernel {
    int first_node;          /* index into the model's layers (perfpred_model_layer) */
    int n_nodes;             /* nodes fused into this kernel */
    char ops[64];            /* "Conv+Relu"; a composite op timed as its one operator ends in
                                "=Gelu" ("Div+Erf+Add+Mul+Mul=Gelu") */
    const char *kind;        /* op kind of the first node */
    double latency_ms;
    double flops, bytes;
    int memory_bound;        /* roofline side (1 = bandwidth bound) */
    perfpred_provenance prov;
} perfpred_kernel;

/* How sure a figure is: an interval from the calibration's own held-out residuals (split-conformal
 * quantiles of log(measured / predicted) on whole-model rows the models never trained on, per
 * device and answer path; docs/json.md, "Intervals"). n = 0 and lo = hi = NaN when there is none;
 * source then says why (an uncalibrated estimate, a transferred GPU runtime stack, a device
 * without held-out rows). */
typedef struct perfpred_interval {
    double lo, hi;           /* in the figure's unit; NaN when none */
    double coverage;         /* nominal share of measurements inside (0.8); 0 when none */
    double log_lo, log_hi;   /* the quantiles: lo = value x exp(log_lo) */
    int n;                   /* held-out rows they come from; 0 = no interval */
    double checked_pct;      /* share of held-out rows inside when the quantiles come from the
                                other half of the rows (cross-fitted), percent; NaN: unchecked */
    const char *path;        /* answer path: "layer", "overhead", "gnn", "gated"; NULL if none */
    const char *source;      /* context-owned or static text: the rows, or why there is none */
} perfpred_interval;

typedef struct perfpred_prediction {
    const char *device;      /* canonical device name */
    int64_t batch;           /* the model's leading input dim */
    perfpred_figure latency_ms;
    perfpred_figure energy_mj;          /* per inference */
    perfpred_figure peak_memory_bytes;
    double weights_bytes, activations_bytes, workspace_bytes, runtime_bytes;
    double memory_capacity_bytes;
    int fits_in_memory;
    int n_kernels, n_calibrated_kernels;
    int n_launched_kernels;  /* under a runtime stack: the kernels it launches per call (eager's
                                BatchNorm passes and autocast's casts in, epilogues, views and
                                fused-away ops out); elsewhere n_kernels */
    double kernel_bytes;     /* bytes the kernels read and write (inputs, outputs, weights), summed */
    double cold_weight_bytes; /* outside a runtime stack: the weights a pass reads from beyond the
                                device's last-level cache (all of them where weights and peak live
                                activations exceed it, else 0; the in-network correction's term) */
    int correction_members;  /* GNNs whose corrections were averaged into latency_ms (0: none) */
    double latency_members_lo_ms, latency_members_hi_ms; /* with more than one: the lowest and
                                the highest latency a single member would give (how much they
                                disagree, not a confidence interval); else NaN */
    int correction_gated;    /* 1: the members disagreed on this network more than on any of
                                their validation networks, so latency_ms and energy_mj are what
                                answers without the correction (members and lo/hi still say how
                                far apart they were) */
    /* GPUs with a runtime stack (docs/gpu-stacks.md): latency_ms is the host/GPU pipeline over
     * the kernels, peak_memory_bytes the device memory in use as NVML reports it: runtime_bytes
     * (context and libraries) + the caching allocator's segments, replayed over the run; of these
     * weights_bytes, activations_bytes (live activations and cuDNN/cuBLAS workspace at the
     * allocator's peak) and workspace_bytes (segments cached but not in use at that peak).
     * stack is NULL for other devices. */
    const char *stack;       /* "pytorch-eager-fp32"; context-owned */
    double host_ms;          /* the host's dispatch time per call (ops x per-op cost) */
    double gpu_ms;           /* the kernels' time on the GPU per call */
    double allocator_peak_bytes; /* the allocator's peak in use (torch max_memory_allocated) */
    perfpred_interval latency_interval; /* how sure latency_ms is (n = 0: no interval) */
    int n_covered_kernels;   /* CPUs: compute-bound kernels the layer models answering for the
                                device do not cover (a kernel size they never saw), timed by the
                                nearest other calibrated CPU's models that do, scaled through the
                                two descriptors (transferred); not in n_calibrated_kernels */
} perfpred_prediction;

typedef struct perfpred_predict_params {
    perfpred_kernel *kernels;   /* optional per-kernel breakdown, in execution order */
    int kernels_cap;
    int *n_kernels;             /* set to the number of kernels (may exceed kernels_cap) */
    int layer_sum_only;         /* 1: leave out the device's graph-level or in-network overhead
                                   correction (the sum it corrects, as used to train it) */
    const char *runtime;        /* GPUs: the stack's framework ("pytorch-eager", "torchscript",
                                   "tensorrt"); NULL = the descriptor's runtime.framework */
    const char *precision;      /* "fp32" or "fp16"; NULL = the descriptor's runtime.precision.
                                   A GPU with no fitted stack for the pair is an error
                                   (PERFPRED_ERR_INVALID_ARG) that lists the stacks there are. */
} perfpred_predict_params;
perfpred_predict_params perfpred_predict_default_params(void);

perfpred_status perfpred_predict(const perfpred_ctx *ctx, const perfpred_model *m,
                                 const char *device, const perfpred_predict_params *params,
                                 perfpred_prediction *out, char *errbuf, size_t errbuf_len);

/* ---- JSON in, JSON out (predictor/json_api.c): what the CLI's --json prints, for bindings ----
 * request is one JSON object: {"command": "predict" | "compare" | "mig" | "devices" | "device" |
 * "inspect", "model": path, "device": name | [names], "batch": n | [n...], "inputs": {name:
 * [dims]}, "layers": bool, "runtime", "precision", "slo_ms", "layer_sum_only", "allow_unknown",
 * "all"} (docs/json.md lists which command takes what; an unknown key is an error). The answer is
 * the command's documented --json object, malloc'd: free it with perfpred_free. On failure NULL,
 * *status and errbuf say why (the same message the CLI prints). ctx may be NULL for "inspect". */
char *perfpred_json(const perfpred_ctx *ctx, const char *request, perfpred_status *status,
                    char *errbuf, size_t errbuf_len);

/* A comparison drawn (eval/compare_plot.c): compare_json is perfpred_json's "compare" answer;
 * path ends in .svg or .png; y is "energy", "memory" or NULL (energy where the rows have it, else
 * memory). Latency on x with its interval as a bar, one point per device and batch, the Pareto
 * front of (latency, y) joined; log-log. gnuplot draws into a file beside path, renamed over it. */
perfpred_status perfpred_compare_plot(const char *compare_json, const char *path, const char *y,
                                      char *errbuf, size_t errbuf_len);

/* ---- many predictions: architecture searches, zoos (predictor/many.c) ----
 * Every item (an .onnx path, or an architecture: "nb201:<cell>[@dataset]", a bare NAS-Bench-201
 * cell "|nor_conv_3x3~0|+|...|", "fbnet:...", "ofa:...") at every batch size on every device.
 * An item is built once per batch and predicted on each device; rows stream out through on_row as
 * they are done (with threads = 1 in input order: item, then batch, then device). An item that
 * cannot be built or predicted gives rows with its error and the rest go on. */
typedef struct perfpred_many_row {
    int item;                       /* index into items */
    const char *item_text;          /* items[item] */
    const char *device;             /* as given in devices */
    int64_t batch;
    perfpred_status status;         /* PERFPRED_OK: pred holds the prediction */
    const char *error;              /* else the message (names the item); valid during the call */
    const perfpred_prediction *pred;
} perfpred_many_row;
/* Called under a lock, one row at a time, on the worker thread that made it; nonzero stops the
 * run (rows in progress still finish). */
typedef int (*perfpred_many_fn)(const perfpred_many_row *row, void *user);

typedef struct perfpred_many_params {
    const char *const *items;
    int n_items;
    const char *const *devices;
    int n_devices;
    const int64_t *batches;         /* NULL / 0: batch 1 */
    int n_batches;
    int threads;                    /* 1 (default): on the calling thread; N > 1: N workers, each
                                       prediction on one of them */
    const perfpred_predict_params *predict;  /* NULL: defaults (no kernel breakdown) */
    perfpred_many_fn on_row;        /* required */
    void *user;
} perfpred_many_params;
perfpred_many_params perfpred_many_default_params(void);

/* Runs them all. Returns PERFPRED_OK when the run went through (rows may still carry errors:
 * *n_failed counts them, may be NULL), or the error that stopped it (bad params, unknown device,
 * out of memory) with errbuf saying why. */
perfpred_status perfpred_predict_many(const perfpred_ctx *ctx, const perfpred_many_params *p,
                                      int *n_failed, char *errbuf, size_t errbuf_len);

/* MIG advice for a GPU with MIG profiles ("a100", "a100-80gb", "h100"). */
typedef struct perfpred_mig_option {
    perfpred_device_info device;
    perfpred_prediction pred;
    int fits;                /* predicted peak memory <= profile memory */
    int meets_slo;           /* fits and latency <= slo (1 when no SLO was given and it fits) */
    int instances;           /* how many of this profile one GPU holds */
} perfpred_mig_option;

typedef struct perfpred_mig_advice {
    int n_options;           /* profiles, smallest first (by memory, then compute) */
    perfpred_mig_option options[16];
    int dippm_choice;        /* smallest profile whose memory holds the peak (-1: none) */
    int slo_choice;          /* smallest profile meeting the SLO (-1: none / no SLO) */
    double slo_ms;           /* 0 when none */
    int max_instances_under_slo; /* instances of slo_choice (or dippm_choice without an SLO) */
} perfpred_mig_advice;

perfpred_status perfpred_mig_advise(const perfpred_ctx *ctx, const perfpred_model *m,
                                    const char *gpu, double slo_ms, perfpred_mig_advice *out,
                                    char *errbuf, size_t errbuf_len);
/* The same under the runtime stack params->runtime / params->precision choose (NULL: defaults). */
perfpred_status perfpred_mig_advise_params(const perfpred_ctx *ctx, const perfpred_model *m,
                                           const char *gpu, double slo_ms,
                                           const perfpred_predict_params *params,
                                           perfpred_mig_advice *out, char *errbuf,
                                           size_t errbuf_len);

#ifdef __cplusplus
}
#endif
#endif
