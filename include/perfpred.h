/* perfpred.h: the one public header of libperfpred.
 * Predicts inference latency, energy and peak memory of an ONNX model on a device.
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
    PERFPRED_PROV_MIXED = 3,       /* a sum whose parts are partly calibrated, partly estimated */
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
    double kernel_bytes;     /* bytes the kernels read and write (inputs, outputs, weights), summed */
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

/* A comparison drawn (calibrate/compare_plot.c): compare_json is perfpred_json's "compare" answer;
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

/* GPU runtime stacks (docs/gpu-stacks.md): fits PyTorch eager fp32/fp16, TorchScript and
 * TensorRT stacks on framework-tax-gpus' whole-model rows and writes
 * <config_dir>/artifacts/stacks/<stack>.json (write, then rename), unless dry_run. *report_json
 * (malloc'd, perfpred_free) gets one object per stack: the fitted figures, training and
 * leave-one-GPU-out errors per GPU, and the run folders' repeat disagreement. */
typedef struct perfpred_stackfit_params {
    const char *data_dir;    /* ../shared/datasets/framework-tax-gpus */
    const char *own_data_dir; /* the project's own GPUs in the same layout (data/gpu-stacks), or
                                 NULL; its folders are read after data_dir's */
    const char *models_dir;  /* torchvision ONNX exports (tests/fixtures/models) */
    const char *stack;       /* one stack ("tensorrt-fp16"), NULL = all six */
    int threads;             /* fits in parallel; 0 = 1 */
    int leave_one_out;       /* 1: refit without each GPU and predict it */
    int leave_family_out;    /* 1: also refit without each model family and predict it */
    int max_evals;           /* optimiser evaluations per fit; 0 = 4000 */
    int dry_run;             /* 1: report only, write nothing */
    const char *gpu_files;   /* comma-separated GPU file stems to read (e.g. "v100,3090"); NULL = all */
    const char *rows_dir;    /* with leave_one_out: writes <rows_dir>/<stack>.csv, every row with
                                its held-out prediction; NULL = none */
} perfpred_stackfit_params;
perfpred_stackfit_params perfpred_stackfit_default_params(void);
perfpred_status perfpred_calibrate_fit_stacks(const perfpred_ctx *ctx,
                                              const perfpred_stackfit_params *p,
                                              char **report_json, char *errbuf,
                                              size_t errbuf_len);

/* GPU board power (predictor/power.h, docs/gpu-stacks.md): fits p0 + energy per DRAM byte + energy
 * per flop on gpu-benches' roofline sweep (<data_dir>/gpu-roofline/ files, measured board watts),
 * judges it by leaving one GPU out, and writes <config_dir>/artifacts/gpu-power.json (write, then
 * rename) unless dry_run. *report_json (malloc'd, perfpred_free): per GPU the points, fit and
 * held-out errors and figures. */
perfpred_status perfpred_calibrate_fit_power(const perfpred_ctx *ctx, const char *data_dir,
                                             int dry_run, char **report_json, char *errbuf,
                                             size_t errbuf_len);

/* ------------------------------------------------------------- calibration ---- */
/* Turning a descriptor into a calibrated device (docs/calibration.md): a layer benchmark plan sized
 * to a time budget, per-op-kind layer models fitted on the runner's measurements, and accuracy
 * reports on measured layer or network rows. Reports are caller-owned structs; the only one holding
 * allocated storage is perfpred_eval_report (perfpred_eval_report_free). */

#define PERFPRED_MAX_KINDS 16     /* op kinds a report lists */
#define PERFPRED_REPORT_MSGS 16   /* kept messages (bad rows, skipped nodes) */

/* Accuracy against measurements: MAPE and RMSPE in percent, share of rows within +-10 % in
 * percent, Spearman's rank correlation (NaN when undefined); n = 0 and NaN figures when empty. */
typedef struct perfpred_metrics {
    int n;
    double mape_pct, rmspe_pct, within10_pct, spearman;
} perfpred_metrics;

/* The timing protocol a plan's cost estimate assumes (runners/timing.py Protocol defaults). */
typedef struct perfpred_runner_protocol {
    int rounds;              /* 7: visits per configuration */
    int burst;               /* 5: timed samples per visit */
    int warmup_calls;        /* 3: untimed calls after a (re)build ... */
    double warmup_ms;        /* 50: ... lasting at least this long */
    double min_sample_us;    /* 200: one sample = back-to-back calls lasting at least this */
    int max_inner;           /* 1000: cap on calls per sample */
} perfpred_runner_protocol;

typedef struct perfpred_plan_params {
    const char *device;                    /* required: descriptor name or alias */
    const char *out_csv;                   /* required: the plan CSV (written atomically) */
    const char *config_dir;                /* NULL: as perfpred_ctx_open */
    /* the model zoo: folders (their reference.csv, else every *.onnx), reference-style CSVs
     * (columns file, family, input_name, input_shape), or .onnx files;
     * NULL / 0: <config_dir>/../tests/fixtures/models */
    const char *const *models;
    int n_models;
    const char *const *exclude_families;   /* families left out of the base set (held out) */
    int n_exclude_families;
    const char *const *ops;                /* ONNX operators the rows are limited to (to add
                                              one a calibration lacks); NULL / 0: every one */
    int n_ops;
    const int64_t *batches;                /* NULL / 0: {1, 8} */
    int n_batches;
    double budget_min;                     /* runner time to fill, minutes (20) */
    uint64_t seed;                         /* 1 */
    double perturb_share;                  /* share of picked rows that are perturbations (0.5) */
    perfpred_runner_protocol protocol;
    perfpred_log_fn log;
    void *log_user;
    /* nn-Meter's adaptive resampling, for a plan after a first fit: each kind's share of the budget
     * follows zoo-time share x max(held-out MAPE, 5 %) from the fit's manifest.json, candidates near
     * the held-out rows with the largest errors are preferred, and configurations the manifest's
     * measured CSVs already hold are left out */
    int adaptive;                          /* 0 */
    const char *adaptive_dir;              /* folder of that manifest.json (its models also cost
                                              the rows when the device has none installed);
                                              NULL: the device's artifacts folder */
    /* anchors, for a plan measured in a later session: n_anchors configurations of these measured
     * layer CSVs (rows of the device, of the plan's --ops if given), half compute-bound and half
     * memory-bound by the roofline where they hold enough of each, each half spread evenly over its
     * latencies, are added to the plan so that `calibrate fit --rescale-layers` can rescale the
     * new rows to the session of those files; their time comes out of budget_min */
    const char *const *anchor_csvs;
    int n_anchor_csvs;
    int n_anchors;                         /* 0: 40 when anchor_csvs are given (10 to 1000) */
} perfpred_plan_params;

typedef struct perfpred_plan_kind {
    const char *kind;          /* op kind name (static string) */
    int n_zoo_nodes;           /* runtime nodes of this kind in the zoo */
    int n_base;                /* distinct configurations among them that make layer rows */
    int n_candidates;          /* base + valid perturbations */
    int n_rows, n_rows_base;   /* picked; of which zoo configurations */
    double zoo_time_share;     /* share of the zoo's estimated time, 0..1 */
    double est_minutes;        /* runner time of the picked rows */
    /* adaptive plans */
    double heldout_mape_pct;   /* the manifest's held-out MAPE of the kind; NaN when not fitted */
    double budget_weight;      /* the kind's weight in the budget split (plain: its zoo share) */
    int n_measured;            /* candidates left out: measured already */
} perfpred_plan_kind;

typedef struct perfpred_plan_report {
    char device[64];
    int n_models;              /* (model, batch) graphs loaded */
    int n_model_failures;      /* ... that failed to load (listed in msgs) */
    int n_excluded_models;     /* zoo entries of excluded families */
    int n_nodes;               /* runtime nodes seen (not folded, not views; a composite op
                                  such as GELU's five nodes counts once) */
    int n_skipped_nodes;       /* not expressible as a layer row (reasons in msgs) */
    int n_rows;
    double est_minutes, budget_minutes;
    int has_roofline;          /* 0: the descriptor lacks figures; each call costed at 50 us */
    int cost_from_layer_models;/* 1: the device's layer models (a calibrated device) gave kernel
                                  times where they cover the kernel; else the roofline */
    int n_kinds;
    perfpred_plan_kind kinds[PERFPRED_MAX_KINDS];
    int n_msgs;
    char msgs[PERFPRED_REPORT_MSGS][256];
    /* adaptive plans */
    int adaptive;              /* 1: made with perfpred_plan_params.adaptive */
    int adaptive_rows;         /* 1: within a kind, weighted by the errors of the fit's held-out
                                  rows (split reproduced from the measured CSVs); 0: by kind only */
    int n_excluded_measured;   /* candidates left out because their configuration was measured */
    char adaptive_basis[512];  /* what drove the resampling, in words */
    int n_anchor_rows;         /* anchors added (counted in n_rows and est_minutes) */
    double anchor_minutes;
} perfpred_plan_report;

perfpred_plan_params perfpred_plan_default_params(void);
/* Rejects out-of-range parameters (message names the field) before any work is done. */
perfpred_status perfpred_plan_check_params(const perfpred_plan_params *p, char *errbuf,
                                           size_t errbuf_len);
/* Builds the plan and writes p->out_csv (layer CSV schema, measurement columns empty). The same
 * parameters and zoo give the same bytes. */
perfpred_status perfpred_calibrate_plan(const perfpred_plan_params *p, perfpred_plan_report *out,
                                        char *errbuf, size_t errbuf_len);

typedef struct perfpred_fit_params {
    const char *device;            /* required; a whole device (MIG slices scale from their parent) */
    const char *const *layers_csvs;/* measured layer rows (docs/measurements.md), one or more
                                      files (a first plan's rows and a second's), or ... */
    int n_layers_csvs;
    const char *const *rescaled_csvs; /* layer rows of a later session that also measured some of
                                         the layers_csvs configurations again (anchors): every
                                         row is divided by that session's drift at its size,
                                         fitted on the anchors (docs/calibration.md, "Rescaling
                                         a later session"); needs layers_csvs */
    int n_rescaled_csvs;               /* 0 to PERFPRED_MAX_RESCALED */
    int rescale_by_class;              /* 1: a drift line per roofline class (compute-bound,
                                          memory-bound by the descriptor's figures) where the class
                                          has PERFPRED_RESCALE_MIN_ANCHORS anchors, else the file's
                                          one line */
    const char *neusight_root;     /* ... NeuSight's dataset folder (GPUs NeuSight measured) */
    const char *neusight_conv_gpu; /* NeuSight GPU whose conv rows stand in; NULL: automatic */
    const char *out_dir;           /* NULL: <config_dir>/artifacts/<canonical device name> */
    const char *config_dir;        /* NULL: as perfpred_ctx_open */
    double heldout_frac;           /* 0.2: share of configurations held out per op kind */
    int seed;                      /* 42: split and XGBoost seed */
    int nthread;                   /* 2: XGBoost threads */
    int n_rounds;                  /* 0: the layer models' default boosting rounds */
    double max_spread_pct;         /* > 0: leave out rows whose run-to-run spread exceeds this
                                      percentage of their latency (0: keep every row) */
    int write_artifacts;           /* 1; 0 = report only */
    perfpred_log_fn log;
    void *log_user;
} perfpred_fit_params;

typedef struct perfpred_fit_kind {
    const char *kind;                     /* static string */
    int n_train, n_heldout;               /* rows */
    int n_train_configs, n_heldout_configs;
    perfpred_metrics model;               /* layer model on held-out rows, as the predictor
                                             answers: rows outside its training domain
                                             (n_heldout_roofline) take the roofline */
    int n_heldout_roofline;
    perfpred_metrics roofline;            /* its analytic base alone on the same rows */
    perfpred_metrics train;               /* layer model on its training rows (a check) */
    double spread_pct;                    /* median run-to-run spread / latency of the held-out
                                             rows, percent; NaN when no row reports one */
    int n_spread;
    double peak_tflops, bw_gbs, floor_ms; /* the base */
    double train_seconds;
    char note[160];
    int written;                          /* 1: the regressor is in the artifacts; 0: left out,
                                             because the roofline was closer on the held-out rows
                                             (the predictor then uses the roofline for this kind) */
} perfpred_fit_kind;

#define PERFPRED_MAX_RESCALED 8
#define PERFPRED_RESCALE_MIN_ANCHORS 10

/* One rescaled file: ln(later / earlier) = log_a + slope * ln(earlier ms) over its anchors
 * (Theil-Sen: the median of pairwise slopes, then the median intercept). */
typedef struct perfpred_fit_rescale {
    char file[256];
    int n_rows;               /* rows of the device, each divided by the drift at its size */
    int n_anchors;            /* of them, configurations the layers_csvs measured */
    double log_a, slope;
    double anchor_mad_pct;    /* median |anchor's rescaled / earlier - 1|, percent */
    /* with rescale_by_class: [0] compute-bound, [1] memory-bound rows */
    int by_class;
    int class_anchors[2];
    int class_own[2];         /* 1: the class has its own line; 0: it takes log_a and slope */
    double class_log_a[2], class_slope[2];
} perfpred_fit_rescale;

typedef struct perfpred_fit_report {
    char device[64];
    char out_dir[1024];
    int wrote_artifacts;
    int n_rows_read;          /* good rows in the file(s) */
    int n_bad_rows;           /* skipped by the CSV reader (msgs) */
    int n_other_device;       /* rows of other devices, ignored */
    int n_unusable;           /* rows graph/ cannot rebuild (msgs) */
    int n_noisy;              /* rows left out by max_spread_pct */
    int n_rescaled;
    perfpred_fit_rescale rescaled[PERFPRED_MAX_RESCALED];
    int n_kinds;
    perfpred_fit_kind kinds[PERFPRED_MAX_KINDS];
    perfpred_metrics model, roofline;   /* every held-out row */
    double spread_pct;
    int n_spread;
    double total_seconds;
    int n_msgs;
    char msgs[PERFPRED_REPORT_MSGS][256];
} perfpred_fit_report;

perfpred_fit_params perfpred_fit_default_params(void);
perfpred_status perfpred_fit_check_params(const perfpred_fit_params *p, char *errbuf,
                                          size_t errbuf_len);
/* Fits one latency model per op kind and, when p->write_artifacts, replaces the artifacts in the
 * output folder: model files and manifest.json are written to a temporary folder, moved in under
 * new names, and the manifest is replaced last, so an interrupted fit leaves the previous
 * artifacts in force. */
perfpred_status perfpred_calibrate_fit(const perfpred_fit_params *p, perfpred_fit_report *out,
                                       char *errbuf, size_t errbuf_len);

/* Public layer measurements into one layer CSV (docs/measurements.md, "Imported datasets"), read in
 * place from their folder (never copied): "deepbench" (GEMM and convolution kernels of Jetson TX1,
 * Raspberry Pi 3, iPhone 7 and desktop/server GPUs), "mobile-ml-benchmark" (per-op latency on phone
 * GPUs, TFLite GPU delegate and PyTorch Mobile Vulkan/Metal), "neusight" (its kernel sweeps, the
 * training split). Every row is rebuilt as its single-node graph before it is written; rows that are
 * incomplete, inconsistent or not expressible are counted and listed (file:line), never guessed.
 * The report is caller-owned and holds no allocated storage. */
#define PERFPRED_IMPORT_MAX_DEVICES 32

typedef struct perfpred_import_params {
    const char *dataset;       /* required: "deepbench", "mobile-ml-benchmark" or "neusight" */
    const char *root;          /* required: the dataset folder (holding its SOURCE.md) */
    const char *out_csv;       /* required: the layer CSV, written atomically */
    const char *device;        /* NULL: every device the dataset has and a descriptor names;
                                  else only this device's rows (name or alias) */
    const char *runtime;       /* NULL: every runtime; else only rows of it ("tflite-gpu") */
    const char *config_dir;    /* NULL: as perfpred_ctx_open */
    perfpred_log_fn log;
    void *log_user;
} perfpred_import_params;

typedef struct perfpred_import_device {
    char device[64];           /* perfpred device name */
    char name[64];             /* the dataset's name for it */
    int n_rows, n_bad_rows;
} perfpred_import_device;

typedef struct perfpred_import_report {
    char dataset[32];
    int n_files;               /* data files read */
    int n_rows;                /* rows written */
    int n_bad_rows;            /* rows rejected; the first ones in msgs ("file:line: reason") */
    int n_filtered;            /* rows of other devices or runtimes, left out */
    int n_ignored;             /* lines holding no kernel (notes, stray cells) */
    int n_devices;
    perfpred_import_device devices[PERFPRED_IMPORT_MAX_DEVICES];
    int n_notes;               /* files skipped, dataset devices without a descriptor */
    char notes[PERFPRED_REPORT_MSGS][256];
    int n_msgs;
    char msgs[PERFPRED_REPORT_MSGS][256];
} perfpred_import_report;

perfpred_import_params perfpred_import_default_params(void);
/* Imports and writes p->out_csv; no row of the (filtered) dataset is PERFPRED_ERR_INVALID_ARG. */
perfpred_status perfpred_calibrate_import(const perfpred_import_params *p,
                                          perfpred_import_report *out, char *errbuf,
                                          size_t errbuf_len);

typedef struct perfpred_eval_params {
    const char *device;            /* required */
    const char *layers_csv;        /* exactly one of layers_csv / networks_csv */
    const char *networks_csv;
    const char *group_by;          /* layers: "kind" (default); networks: "family" (default) or
                                      "model" */
    const char *config_dir;        /* NULL: as perfpred_ctx_open */
    int allow_unknown;             /* networks: unknown ops as element-wise */
    perfpred_log_fn log;
    void *log_user;
    int layer_sum_only;            /* networks: leave out the device's graph-level or overhead
                                      correction */
} perfpred_eval_params;

typedef struct perfpred_eval_point {
    const char *label;             /* layers: "Conv x:1x64x56x56;w:..."; networks: model file */
    const char *group;             /* group name */
    int line;                      /* CSV line */
    int64_t batch;
    double measured_ms, predicted_ms;
    double roofline_ms;            /* layers: the descriptor's roofline; networks: NaN */
    double spread_ms;              /* NaN when not reported */
    perfpred_provenance prov;      /* of the prediction */
    int n_kernels;                 /* networks: kernels the prediction summed; layers: 1 */
    double kernel_bytes;           /* the bytes those kernels move (perfpred_prediction) */
} perfpred_eval_point;

typedef struct perfpred_eval_group {
    const char *name;
    perfpred_metrics model, roofline;
    double spread_pct;             /* median spread / latency, percent; NaN when none reported */
    int n_spread;
    int n_calibrated;              /* rows answered by a layer model (layers) or with a
                                      calibrated or mixed figure (networks) */
} perfpred_eval_group;

typedef struct perfpred_eval_report {
    char device[64];
    char source[256];              /* calibration source, or "uncalibrated (roofline)" */
    int networks;                  /* 1: network rows */
    int n_rows_read, n_bad_rows, n_other_device, n_failed;
    int n_groups;
    perfpred_eval_group *groups;
    perfpred_eval_group overall;
    int n_points;
    perfpred_eval_point *points;
    int n_msgs;
    char msgs[PERFPRED_REPORT_MSGS][256];
    void *store;                   /* owns groups, points and their strings */
} perfpred_eval_report;

perfpred_eval_params perfpred_eval_default_params(void);
perfpred_status perfpred_eval_check_params(const perfpred_eval_params *p, char *errbuf,
                                           size_t errbuf_len);
/* Predicts every row of the device and compares with the measurements. On success *out owns
 * storage: release it with perfpred_eval_report_free (also safe on a zeroed report). */
perfpred_status perfpred_eval(const perfpred_eval_params *p, perfpred_eval_report *out,
                              char *errbuf, size_t errbuf_len);
void perfpred_eval_report_free(perfpred_eval_report *r);
/* Predicted-vs-measured scatter (log-log, y = x, +-10 % band) drawn by gnuplot into path: .png
 * (pngcairo, else gd png) or .svg. */
perfpred_status perfpred_eval_plot(const perfpred_eval_report *r, const char *path,
                                   const char *title, char *errbuf, size_t errbuf_len);

/* ------------------------------------------------- whole models: NeuSight's labels ---- */
/* NeuSight's model-level labels (docs/a100-models.md): <model>-inf-<seq>-<batch>.csv is the
 * torch.fx node table of one transformer block plus embeddings and head, each node's latency
 * measured on the GPU; the .json beside it holds the measured end-to-end latency of the whole model
 * (num_layer blocks). perfpred rebuilds each table as a graph (the block repeated num_layer times),
 * predicts it and compares, whole model and per node. The report is caller-owned and holds no
 * allocated storage. */

#define PERFPRED_NS_MAX_MODELS 24   /* labels one report holds (more: the first ones, by name) */
#define PERFPRED_NS_OP_KINDS 6      /* linear, bmm, softmax, norm, elemwise, other */
#define PERFPRED_NS_LISTED 8        /* unmapped nodes listed per label */

typedef struct perfpred_neusight_params {
    const char *neusight_root;  /* required: NeuSight's dataset folder (SOURCE.md, scripts/) */
    const char *gpu;            /* label folder: "NVIDIA_A100-PCIE-40GB" */
    const char *device;         /* perfpred device predicted on: "a100-pcie-40gb" */
    const char *config_dir;     /* NULL: as perfpred_ctx_open */
    const char *const *labels;  /* label names ("bert_large-inf-512-8"); NULL / 0: every
                                   *-inf-*.csv of the folder that has its .json */
    int n_labels;
    int replicate_blocks;       /* 1: the table's block runs num_layer times, as in the measured
                                   model; 0: the table as it is (one block) */
    perfpred_log_fn log;
    void *log_user;
} perfpred_neusight_params;

/* Per-node comparison for one op kind: table nodes with a measured latency > 0 that perfpred runs
 * at least one kernel for; sums count block nodes num_layer times. */
typedef struct perfpred_neusight_op {
    const char *kind;           /* static string */
    int n;
    double measured_ms, predicted_ms, roofline_ms;
    double mape_pct, roofline_mape_pct;   /* per node; NaN when n = 0 */
} perfpred_neusight_op;

typedef struct perfpred_neusight_model {
    char label[96];             /* "bert_large-inf-512-8" */
    char model[48];             /* "bert_large" */
    int64_t seq, batch;
    int num_layer;              /* from the .json (blocks built when replicate_blocks) */
    perfpred_status status;     /* PERFPRED_OK, or why this label could not be judged (msg) */
    char msg[256];
    /* table rows: mapped to graph nodes, host-side Python values (shape arithmetic, no kernel),
     * sources (inputs, parameters, output), unmapped (listed), bad (rejected by the reader) */
    int n_rows, n_mapped, n_host, n_source, n_unmapped, n_bad;
    int block_first_line, block_last_line;  /* CSV lines of the repeated block, 0 when none */
    int n_graph_nodes, n_kernels, n_calibrated_kernels;
    double measured_e2e_ms;     /* .json fw_latency: the whole model, measured end to end */
    double measured_nodes_ms;   /* per-node latencies summed, block nodes x num_layer */
    /* parts of measured_nodes_ms: unmapped and bad rows, host-side rows, mapped rows that
     * perfpred runs no kernel for (views, folded constants) */
    double unmapped_ms, host_ms, no_kernel_ms;
    double predicted_ms, error_pct;         /* perfpred; (predicted - e2e) / e2e x 100 */
    double calibrated_ms;                   /* part of predicted_ms from layer-model kernels */
    double roofline_ms, roofline_error_pct; /* the same kernels timed by the roofline alone */
    int n_ops;
    perfpred_neusight_op ops[PERFPRED_NS_OP_KINDS];
    int n_listed;
    char unmapped[PERFPRED_NS_LISTED][192]; /* "file.csv:37: name (fn): reason" */
} perfpred_neusight_model;

typedef struct perfpred_neusight_report {
    char device[64];
    char source[256];           /* the device's layer-model source, or "uncalibrated (roofline)" */
    int n_models, n_failed;     /* labels judged / labels with status != OK */
    perfpred_neusight_model models[PERFPRED_NS_MAX_MODELS];
    perfpred_metrics e2e, roofline_e2e;   /* over judged labels: predicted vs measured e2e */
} perfpred_neusight_report;

/* gpu "NVIDIA_A100-PCIE-40GB", device "a100-pcie-40gb", replicate_blocks 1; root left NULL. */
perfpred_neusight_params perfpred_neusight_default_params(void);
perfpred_status perfpred_neusight_models_report(const perfpred_neusight_params *p,
                                                perfpred_neusight_report *out, char *errbuf,
                                                size_t errbuf_len);

/* ------------------------------------------ cross-GPU scaling check: NeuSight's kernels ---- */
/* How well does Habitat's rule carry kernel times from the calibrated GPU to another one
 * (docs/scaling.md)? Every NeuSight kernel test row (bmm, linear, element-wise, layer norm,
 * softmax; PyTorch 2.1 eager fp32) of a target GPU is predicted from the source device and
 * compared with the target's measurement, per op kind, by several methods side by side. The report
 * is caller-owned and holds no allocated storage. */

#define PERFPRED_SC_MAX_TARGETS 8   /* target devices one report holds */
#define PERFPRED_SC_KINDS 5         /* bmm, linear, elemwise, norm, softmax */

typedef enum perfpred_scaling_method {
    /* the source's layer model (its roofline where no model covers the row), scaled to the target
     * as the predictor does: t' = t (BW/BW')^g (SM clk / SM' clk')^(1-g), launch overheads
     * swapped */
    PERFPRED_SCALE_MODEL = 0,
    PERFPRED_SCALE_MODEL_FLOPS,   /* the same with the compute term as the fp32 peak FLOP/s ratio */
    /* the source GPU's own measurement of the same shape ("twin") scaled: the rule alone, free of
     * layer-model error (rows whose shape the source GPU measured too) */
    PERFPRED_SCALE_TWIN,
    PERFPRED_SCALE_TWIN_FLOPS,
    PERFPRED_SCALE_ROOFLINE,      /* the target's own roofline from its descriptor */
    PERFPRED_SCALE_UNSCALED,      /* the source's layer-model time as it is: how far apart the
                                     cards are */
    /* the source's layer model against the source's own measurement on the twin shapes: the part of
     * PERFPRED_SCALE_MODEL's error the scaling is not to blame for */
    PERFPRED_SCALE_SOURCE_MODEL,
    /* the other direction: the target's measurement scaled to the source, against the source's
     * measurement of the same shape */
    PERFPRED_SCALE_REVERSE,
    PERFPRED_SCALE_REVERSE_FLOPS,
    PERFPRED_SCALE__COUNT
} perfpred_scaling_method;
/* "model", "model-flops", "twin", "twin-flops", "roofline", "unscaled", "source-model",
 * "reverse", "reverse-flops"; NULL for an unknown value. */
const char *perfpred_scaling_method_str(perfpred_scaling_method m);

typedef struct perfpred_scaling_params {
    const char *neusight_root;    /* required: NeuSight's dataset folder (SOURCE.md, scripts/) */
    const char *source;           /* calibrated device kernels are timed on: "a100-pcie-40gb" */
    const char *const *targets;   /* devices to judge (names or aliases); NULL / 0: every GPU of
                                     NeuSight's test files that has a descriptor, but the source */
    int n_targets;
    const char *config_dir;       /* NULL: as perfpred_ctx_open */
    const char *rows_csv;         /* NULL, or a path: every judged row with each method's
                                     prediction, written atomically */
    perfpred_log_fn log;
    void *log_user;
} perfpred_scaling_params;

/* One (target, op kind) cell. m[method] are the metrics of that method on this cell's rows (n = 0
 * and NaN figures where the method has no row: no twin, or a descriptor without figures). */
typedef struct perfpred_scaling_cell {
    const char *kind;            /* static string: "bmm", "linear", "elemwise", "norm", "softmax",
                                    or "all" */
    int n_rows;                  /* target test rows judged */
    int n_twins;                 /* ... whose shape the source GPU measured too */
    int n_calibrated;            /* ... the source's layer model answered (else its roofline) */
    int n_subwave;               /* ... with no more thread blocks than the target has SMs */
    double median_g;             /* median memory-boundness g on the source (1 = bandwidth bound) */
    perfpred_metrics m[PERFPRED_SCALE__COUNT];
    /* median of predicted / measured per method: > 1 predicts too slow, < 1 too fast; NaN when
     * the method has no row */
    double median_ratio[PERFPRED_SCALE__COUNT];
} perfpred_scaling_cell;

typedef struct perfpred_scaling_target {
    char device[64];             /* canonical name: "h100-sxm5-80gb" */
    char gpu[64];                /* NeuSight's name: "NVIDIA H100 80GB HBM3" */
    /* target over source, from the descriptors */
    double bw_ratio, smclock_ratio, flops_ratio;
    int n_bad_rows;              /* rows NeuSight's importer rejected */
    int n_failed;                /* rows graph/ could not rebuild (msgs) */
    int n_kinds;                 /* kinds with rows, in the order above */
    perfpred_scaling_cell kinds[PERFPRED_SC_KINDS];
    perfpred_scaling_cell all;
} perfpred_scaling_target;

typedef struct perfpred_scaling_report {
    char source[64];             /* canonical source device */
    char source_gpu[64];         /* its NeuSight name ("" when NeuSight did not measure it) */
    char calibration[256];       /* the source's layer-model data, or "uncalibrated (roofline)" */
    int n_source_rows;           /* the source GPU's test rows (twins are looked up among them) */
    int n_targets;
    perfpred_scaling_target targets[PERFPRED_SC_MAX_TARGETS];
    int n_msgs;
    char msgs[PERFPRED_REPORT_MSGS][256];
} perfpred_scaling_report;

/* source "a100-pcie-40gb", every NeuSight test GPU as target; root left NULL. */
perfpred_scaling_params perfpred_scaling_default_params(void);
perfpred_status perfpred_scaling_check(const perfpred_scaling_params *p,
                                       perfpred_scaling_report *out, char *errbuf,
                                       size_t errbuf_len);


/* ------------------------------------------ held-out residuals -> intervals (calibrate/heldout.c) */
/* A collector of held-out residuals log(measured / predicted), per answer path ("layer",
 * "overhead", "gnn", "gated"), filled by the fit commands (perfpred_netfit_params.heldout,
 * perfpred_overhead_params.heldout) over one fit or several folds. */
typedef struct perfpred_heldout perfpred_heldout;
perfpred_heldout *perfpred_heldout_new(void);
void perfpred_heldout_free(perfpred_heldout *h);
/* One held-out row: model names the network (rows of one model fall on the same side of the
 * coverage check). measured and predicted > 0. */
perfpred_status perfpred_heldout_add(perfpred_heldout *h, const char *path, const char *model,
                                     double measured, double predicted);
/* The 80 % interval the rows of path give (lo/hi = exp of the quantiles, as factors of a
 * prediction; source NULL): n = 0 when too few rows (fewer than 9). */
perfpred_interval perfpred_heldout_interval(const perfpred_heldout *h, const char *path);
/* Writes every path with enough rows into <dir>/intervals.json (dir NULL:
 * <config_dir>/artifacts/<device>), replacing those paths' entries and keeping the others,
 * write-then-rename. data names the rows and the command, stored beside the quantiles.
 * *n_written (may be NULL) gets how many paths were written. */
perfpred_status perfpred_heldout_write(const perfpred_heldout *h, const char *device,
                                       const char *dir, const char *config_dir, const char *data,
                                       int *n_written, char *errbuf, size_t errbuf_len);

/* ------------------------------------------- graph-level correction (calibrate/netfit_api.c) ---- */

/* Trains (or, with evaluate_only, judges) a device's graph-level GNN correction from whole-network
 * measurements: a dataset name (help-nb201, help-fbnet, help-ofa, hw-nas-bench-360, eagle: read in
 * place under datasets_root) or a network-measurement CSV (docs/measurements.md). Whole model
 * families (NAS architectures by hash bucket) are held out; the report gives the ablation on them.
 * Artifacts: <out_dir>/gnn-latency.{bin,json} (+ .eval.json; an ensemble's members 2..K as
 * gnn-latency.<i>.{bin,json}, written before the first member's manifest that lists them), each
 * written atomically. */
typedef struct perfpred_netfit_params {
    const char *device;          /* required */
    const char *source;          /* required: dataset name or CSV path */
    const char *datasets_root;   /* NULL: $PERFPRED_DATASETS, else ../shared/datasets */
    const char *out_dir;         /* NULL: <config dir>/artifacts/<canonical device name> */
    const char *config_dir;      /* NULL: as perfpred_ctx_open */
    int evaluate_only;           /* 1: judge the correction saved in out_dir, train nothing */
    int dry_run;                 /* 1: train and report, write nothing */
    int threads;                 /* OpenBLAS threads for training (default 2) */
    perfpred_log_fn log;
    void *log_user;
    perfpred_heldout *heldout;   /* NULL, or collects the held-out rows' residuals per answer
                                    path (perfpred_heldout_write turns them into intervals) */
    const char *heldout_families; /* comma-separated families to hold out (training never sees
                                     them; evaluation is on them); NULL: family hash buckets */
    int epochs, hidden;          /* GNN size and training length; 0: defaults (60, 32) */
    double lr, weight_decay;     /* Adam step and decoupled decay; 0: defaults (2e-3, 0) */
    double huber_delta;          /* > 0: Huber loss with this threshold on log(measured / layer
                                    sum), early stopping on validation mean |error|;
                                    0: squared error (default) */
    long long seed;              /* GNN initialization, minibatch order and capped row subsets;
                                    < 0: the default (1) */
    int max_train;               /* training rows kept (by a seeded hash of the model ref) when
                                    there are more; 0: the default (2500) */
    int ensemble;                /* GNNs trained with seeds seed, seed + 1, ... and averaged
                                    (their mean log correction); 0: the default (1), at most 16 */
} perfpred_netfit_params;
perfpred_netfit_params perfpred_netfit_default_params(void);

typedef struct perfpred_netfit_target {
    int present, n_train, n_val, n_heldout;
    perfpred_metrics layer_sum;  /* the predictor alone */
    perfpred_metrics direct;     /* GNN alone on log(measured), DIPPM-style (n = 0: not trained) */
    perfpred_metrics corrected;  /* layer sum x exp(correction); on rows where an ensemble's members
                                    disagree past its gate (n_gated), what the predictor answers
                                    there: the overhead correction where the device ships one
                                    (refitted without the held-out rows, fallback_*), else the
                                    layer sum */
    perfpred_metrics ungated;    /* layer sum x exp(correction) on every row */
    int n_gated;
    double spread_gate;          /* the widest spread of the members' log corrections on the
                                    validation rows; 0: no gate (a single GNN) */
    int n_fallback_fit;          /* latency: rows that overhead correction was fitted on (the
                                    device's rows outside the held-out ones); 0: layer sum */
    double fallback_scale, fallback_per_kernel_us, fallback_per_mb_us;
} perfpred_netfit_target;

typedef struct perfpred_netfit_report {
    char device[64];
    int n_rows, n_used, n_constant, n_failed;
    char first_failure[256];
    perfpred_netfit_target latency, energy;
    double seconds_train, seconds_total;
    char weights_path[1024];
    int n_val, best_epoch, epochs_run; /* early stopping on the validation rows */
    double val_rmse_latency;           /* RMSE of log(measured / layer sum) there; -1: none */
    double val_mae_latency;            /* mean |error| of that log there; -1: none */
} perfpred_netfit_report;

perfpred_status perfpred_calibrate_fit_networks(const perfpred_netfit_params *p,
                                                perfpred_netfit_report *out, char *errbuf,
                                                size_t errbuf_len);

/* The in-network overhead correction of a device (calibrate/fit_overhead.c): latency = scale x
 * layer sum + per_kernel x kernels + per_mb x megabytes the kernels move (10^6 bytes), what a
 * forward pass spends that layers timed one at a time do not see: a fixed cost per kernel (module
 * calls, allocation) and one per byte (fresh pages for new activations, write-backs). Fitted on
 * whole-network rows of a network CSV by least squares on the relative error with per_kernel and
 * per_mb >= 0 (the best fit over the subsets of those two terms that keeps them >= 0). It is judged first
 * on folds of held-out model families (each fold fitted on the other rows), then fitted on every
 * row and written atomically to <out_dir or config_dir/artifacts/<device>>/overhead-latency.json,
 * unless dry_run, and only where the folds' pooled error beats the layer sum's. */
#define PERFPRED_MAX_FOLDS 16
typedef struct perfpred_overhead_params {
    const char *device;
    const char *networks_csv;
    const char *folds;       /* required: families of each held-out fold, "a,b;c;d,e" */
    const char *config_dir;  /* NULL: the default */
    const char *out_dir;     /* NULL: config_dir/artifacts/<device> */
    int dry_run;
    perfpred_heldout *heldout; /* NULL, or collects the folds' held-out residuals: path "layer"
                                  (every row: the layer models never saw a whole network) and
                                  "overhead" (each fold's rows, fitted on the other folds) */
} perfpred_overhead_params;

typedef struct perfpred_overhead_fold {
    char families[256];
    int n_rows;
    double layer_sum_mape_pct, corrected_mape_pct;
    double scale, per_kernel_us, per_mb_us; /* fitted on the other folds' rows */
} perfpred_overhead_fold;

typedef struct perfpred_overhead_report {
    char device[64];
    int n_rows_read, n_used, n_failed; /* rows of the device, predicted, not predictable */
    char first_failure[256];
    int n_folds;
    perfpred_overhead_fold folds[PERFPRED_MAX_FOLDS];
    int n_pooled;
    double pooled_layer_sum_mape_pct, pooled_corrected_mape_pct;
    double scale, per_kernel_us, per_mb_us; /* fitted on every row */
    int written;                       /* 0: dry run, or the folds did not beat the layer sum */
    char path[1024];                   /* the artifact (written or not) */
} perfpred_overhead_report;

perfpred_overhead_params perfpred_overhead_default_params(void);
perfpred_status perfpred_calibrate_fit_overhead(const perfpred_overhead_params *p,
                                                perfpred_overhead_report *out, char *errbuf,
                                                size_t errbuf_len);

#ifdef __cplusplus
}
#endif
#endif
