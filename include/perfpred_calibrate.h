/* perfpred_calibrate.h: the public header of libperfpred's calibration: a layer benchmark plan
 * for a device, layer models, runtime stacks, board power and graph-level corrections fitted on
 * measurements, imports of public datasets, and accuracy reports on held-out rows
 * (docs/calibration.md). Builds on perfpred.h, whose ownership rules hold here: reports are
 * caller-owned structs, nothing prints, errors come back as a status and errbuf text. */
#ifndef PERFPRED_CALIBRATE_H
#define PERFPRED_CALIBRATE_H

#include "perfpred.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* A GPU's host (docs/gpu-stacks.md, "Your own GPU's host"): the dispatch scale of the machine that
 * ran `runners/stack_runner.py` on this GPU, by the rule the shipped descriptors state: the median,
 * over its host-bound batch-1 rows of the ResNet family (resnet18, resnet50, resnext50_32x4d,
 * wide_resnet50_2) under eager fp32, of the scale that makes the pytorch-eager-fp32 stack predict
 * the measured time (host-bound: the stack's host time per call above its GPU time; the host time
 * scales with the dispatch scale, so the row's scale is the descriptor's x measured / predicted).
 * With out_yaml, writes a descriptor of one's own there (write, then rename): `base:` the device,
 * its calibration_from carried over, runtime.host_dispatch_scale and host_dispatch_source:
 * measured; read it with --device-file. *report_json (malloc'd, perfpred_free): every row read
 * with its prediction and its scale, the scale, the descriptor's own and what was written. */
typedef struct perfpred_host_params {
    const char *device;      /* the GPU the rows were measured on (a descriptor with stacks) */
    const char *rows_csv;    /* stack_runner.py's CSV of it (framework-tax-gpus' columns) */
    const char *models_dir;  /* the torchvision ONNX exports (tests/fixtures/models) */
    const char *out_yaml;    /* a descriptor of one's own to write, or NULL (report only) */
    const char *name;        /* its name; NULL = "<device>-host" */
} perfpred_host_params;
perfpred_status perfpred_calibrate_host(const perfpred_ctx *ctx, const perfpred_host_params *p,
                                        char **report_json, char *errbuf, size_t errbuf_len);

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
    double mean_abs_log;     /* mean |ln(predicted / measured)| */
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
    double cold_weight_bytes;      /* weights beyond the last-level cache (perfpred_prediction) */
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
    char source_device[64];        /* the device whose layer models answered ("" none) */
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


/* ------------------------------------------ held-out residuals -> intervals (fit/heldout.c) */
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

/* ------------------------------------------- graph-level correction (fit/netfit_api.c) ---- */

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
    double fallback_scale, fallback_per_kernel_us, fallback_per_mb_us,
        fallback_per_cold_weight_mb_us;
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

/* The in-network overhead correction of a device (fit/fit_overhead.c): latency = scale x
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
    double scale, per_kernel_us, per_mb_us, per_cold_weight_mb_us; /* fitted on the other
                                                                       folds' rows */
} perfpred_overhead_fold;

typedef struct perfpred_overhead_report {
    char device[64];
    int n_rows_read, n_used, n_failed; /* rows of the device, predicted, not predictable */
    char first_failure[256];
    int n_folds;
    perfpred_overhead_fold folds[PERFPRED_MAX_FOLDS];
    int n_pooled;
    double pooled_layer_sum_mape_pct, pooled_corrected_mape_pct;
    double scale, per_kernel_us, per_mb_us, per_cold_weight_mb_us; /* fitted on every row */
    int written;                       /* 0: dry run, the folds did not beat the layer sum, or
                                          out_of_range */
    int out_of_range;                  /* the fit's figures lie outside what a correction may
                                          state (scale 0.05 to 20, per kernel and per MB 0 to 100
                                          ms): the layer models are far from these networks */
    char path[1024];                   /* the artifact (written or not) */
    char layer_models_of[64];          /* the device whose layer models summed the rows (the
                                          device itself, or the CPU it borrows from); the
                                          artifact records it, so that the correction stays over
                                          those models */
} perfpred_overhead_report;

perfpred_overhead_params perfpred_overhead_default_params(void);
perfpred_status perfpred_calibrate_fit_overhead(const perfpred_overhead_params *p,
                                                perfpred_overhead_report *out, char *errbuf,
                                                size_t errbuf_len);

/* One command that calibrates a CPU (`perfpred calibrate run`, run/): the machine's figures and a
 * descriptor written from them (each figure with its source), a layer plan that covers every op
 * kind of the zoo and of random architectures (runners/random_arch.py), the layer and network
 * runners, the layer models and the in-network overhead correction, and a judgement on random
 * architectures of a seed no stage saw, beside the measurements' own spread. State lives in
 * work_dir: a run killed at any point continues with resume; the device's previous artifacts stay
 * in force until the new ones are complete (they replace them by a rename). plan_only_dir writes a
 * bundle for a board without a perfpred build (plan, runners, one command); measurements_dir takes
 * that bundle's results back (probe, measurement and runner stages then read them). */
typedef struct perfpred_run_params {
    const char *device;           /* required: the device's name (new, or a known CPU) */
    const char *config_dir;       /* NULL: as perfpred_ctx_open */
    const char *work_dir;         /* NULL: ./perfpred-calibration-<device> */
    double budget_min;            /* 30: minutes the measuring stages may take in all */
    int resume;                   /* 1: continue from work_dir's state (parameters must match) */
    int threads;                  /* runner threads (torch.set_num_threads), default 1 */
    const char *python;           /* NULL: /usr/bin/python3 */
    const char *plan_only_dir;    /* write a bundle there and stop */
    const char *measurements_dir; /* a bundle's results (its measurements/ folder) */
    uint64_t seed;                /* 1: the plan's and the random architectures' seed */
    int install_anyway;           /* 1: install the new calibration even where the device's
                                     previous one is closer on the judging networks (by default
                                     the previous one stays, and the new one waits beside it) */
    int quick;                    /* 1: time no layers; keep the layer models the device
                                     answers with now (its own, or those its descriptor's
                                     calibration_from names: for a new device the nearest
                                     calibrated CPU's) and fit only the in-network correction
                                     over them on whole networks (minutes, not half an hour) */
    perfpred_log_fn log;
    void *log_user;
} perfpred_run_params;

typedef struct perfpred_run_judge {
    char name[32];                /* "random CNNs", "random transformers", "torchvision", "all" */
    perfpred_metrics layer_sum;   /* the layer models alone */
    perfpred_metrics calibrated;  /* with the in-network correction where one was written */
    perfpred_metrics before;      /* what the device answered before this run (report's
                                     before_what: the nearest calibrated CPU's models,
                                     transferred, for a new device) */
    double repeat_pct;            /* the measurements' disagreement with themselves: each row
                                     timed as two half-runs (even and odd rounds, the median of
                                     their per-visit minima), the mean |A - B| / ((A + B) / 2) in
                                     percent: what a MAPE cannot go below; NaN when unknown */
    int n_repeat;                 /* rows with both halves */
} perfpred_run_judge;

#define PERFPRED_RUN_MAX_JUDGE 4
typedef struct perfpred_run_report {
    char device[64];
    char descriptor_path[1024];
    int descriptor_written;       /* 1: this run wrote it; 0: the device was known */
    int quick;                    /* a --quick run: no layers timed, the correction refitted */
    char borrowed_from[64];       /* nearest calibrated CPU ("" none) */
    char before_what[160];        /* what perfpred_run_judge.before is, in words */
    double core_gflops, triad_gbs, launch_overhead_us;
    int n_plan_rows, n_layer_rows, n_network_rows, n_judge_rows;
    double layer_heldout_mape_pct;/* the layer fit's held-out rows, pooled */
    int correction_written;       /* the in-network correction beat the layer sum on its folds */
    int n_judge;
    perfpred_run_judge judge[PERFPRED_RUN_MAX_JUDGE];
    double minutes;               /* wall time of the run, its earlier (interrupted) invocations
                                     included */
    char artifacts_dir[1024], report_path[1024], plot_path[1024];
    int bundle_written;           /* plan_only: the bundle is complete */
    int kept_previous;            /* 1: the previous calibration was closer on the judging
                                     networks and stays in force (the new one: artifacts_dir) */
} perfpred_run_report;

perfpred_run_params perfpred_run_default_params(void);
perfpred_status perfpred_calibrate_run(const perfpred_run_params *p, perfpred_run_report *out,
                                       char *errbuf, size_t errbuf_len);

#ifdef __cplusplus
}
#endif
#endif
