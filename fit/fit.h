/* fit/: measurements in, calibrated device out. Layer models from NeuSight (fit_neusight.c) or the
 * project's CSVs (fit_layers.c), the in-network overhead correction (fit_overhead.c), the
 * graph-level GNN correction (fit_networks.c, net_samples.c, netfit_api.c), held-out residuals
 * into intervals (heldout.c), GPU runtime stacks (fit_stacks.c) and board power (fit_power.c). Each
 * fit writes its artifacts atomically with their provenance. The topmost calibration module: it
 * uses eval/ to judge what it fits. Reports are plain structs; nothing here prints. */
#ifndef PP_FIT_H
#define PP_FIT_H

#include <stdint.h>

#include "datasets/datasets.h"
#include "eval/eval.h"
#include "graph_gnn/graph_gnn.h"
#include "measure/measure.h"
#include "predictor/calib.h"
#include "predictor/power.h"
#include "predictor/stack.h"

/* ------------------------------------------------------ GPUs from NeuSight (fit_neusight.c) ---- */

/* The analytic roofline the NeuSight layer models correct, and that they are judged beside: by
 * default the A100 PCIe 40GB's, from the NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe 40GB
 * column: FP32 19.5 TFLOP/s, HBM2 1,555 GB/s; 108 SMs (A100 whitepaper). `calibrate fit --neusight`
 * takes them from the device descriptor instead (the same figures for a100-pcie-40gb). The
 * datasheet's TF32 figure (156 TFLOP/s dense) is not used: PyTorch 2.1 runs matmuls in plain fp32
 * (allow_tf32 = False), and NeuSight's conv rows name only FP32 SIMT kernels (winograd, scudnn,
 * sgemm, FFT gcgemm; no tensor-core kernel), so TF32 never ran. */
#define PP_A100_PCIE40_FP32_TFLOPS 19.5
#define PP_A100_PCIE40_BW_GBS 1555.0
#define PP_A100_SMS 108

typedef struct pp_fit_params {
    const char *device;          /* perfpred device name written to rows and manifest */
    const char *conv_gpu;        /* NeuSight GPU whose conv rows stand in (NULL = same GPU) */
    const char *date;            /* manifest date (NULL = today, UTC) */
    double conv_heldout_fraction;/* share of training rows held out, seeded: for conv (NeuSight has
                                    no conv test file), and for every kind's in-distribution check */
    int write_artifacts;         /* 0: evaluate only, write nothing */
    double peak_tflops;          /* the roofline's FP32 peak, TFLOP/s (default: the A100 PCIe 40GB's) */
    double bw_gbs;               /* its memory bandwidth, GB/s */
    int compute_units;           /* SMs, for the wave features */
    const char *figures_from;    /* where those three come from, for the manifest note */
    pp_lm_params lm;             /* XGBoost hyper-parameters, seed, nthread */
    pp_logger log;
} pp_fit_params;
pp_fit_params pp_fit_neusight_default_params(void);

typedef struct pp_fit_kind_report {
    pp_op_kind kind;
    int n_train;
    int n_heldout;
    int n_overlap;               /* held-out rows whose shape also occurs in training (excluded) */
    int heldout_is_split;        /* 1: held-out rows are a split of the training file (conv) */
    double floor_ms;             /* launch/timing floor used by the roofline */
    pp_metrics model;            /* XGBoost layer model on the held-out rows, as the predictor
                                    answers (rows outside its domain take the roofline) */
    int n_heldout_roofline;      /* those rows */
    pp_metrics roofline;         /* analytic roofline on the same rows */
    pp_metrics in_dist;          /* the recipe retrained without a seeded share of the training
                                    rows, judged on that share (interpolation, not extrapolation) */
    pp_metrics train;            /* layer model on its own training rows (not a result; a check) */
    double train_seconds;
    int written;                 /* 1: in the manifest (and saved unless a dry run); 0: the model
                                    lost to the roofline on the held-out rows, the kind keeps it */
} pp_fit_kind_report;

typedef struct pp_fit_report {
    int n_kinds;
    pp_fit_kind_report kinds[PP_OPK__COUNT];
    int n_bad_rows;              /* bad rows met while importing (listed in bad_msgs) */
    char bad_msgs[8][256];
    int n_bad_msgs;
    double total_seconds;
} pp_fit_report;

/* Trains one latency layer model per op kind NeuSight measured on gpu (bmm, linear, elemwise, norm,
 * softmax; conv from params->conv_gpu), evaluates model and roofline on NeuSight's test rows of the
 * same GPU (conv: a held-out split), and, when params->write_artifacts, writes <kind>-latency.ubj
 * files and manifest.json into out_dir (created if missing) atomically. */
perfpred_status pp_fit_neusight(const char *neusight_root, const char *gpu, const char *out_dir,
                                const pp_fit_params *params, pp_fit_report *report, pp_err *err);

/* The in-network overhead correction's least squares (fit/fit_overhead.c): scale, per-kernel
 * ms and per-MB ms minimising sum_i (x_i . w - 1)^2 over the points with use[i] (use NULL: all),
 * x_i = (layer sum, kernels, 10^6 bytes moved, 10^6 bytes of cold weights) / measured, with the
 * terms after the scale >= 0: the least-squares fit over each subset of those three terms (the
 * scale always in), the best of those whose terms are all >= 0 and within what a correction may
 * state (PP_OVERHEAD_SCALE_MIN..MAX, terms up to PP_OVERHEAD_TERM_MAX_MS; where none is, the best
 * of the others, which the caller finds out of range) (predictor/calib.h, pp_overhead_latency_ms).
 * 0 ok, -1 too few rows. */
int pp_fit_overhead_rows(const perfpred_eval_point *pt, const int *use, int n,
                         double w_out[PP_OVERHEAD_TERMS]);

/* --------------------------------------------- the graph correction (fit_networks.c) ---- */

/* The correction's global features and the sample from a prediction's figures
 * (pp_gnn_sample_globals, pp_gnn_sample_from): graph_gnn/graph_gnn.h. */

/* What one uncorrected prediction sums: the layer sum, its energy (NaN when the descriptor has no
 * power model), and the kernels and the bytes they move (the overhead correction's terms). */
typedef struct pp_fit_net_sums {
    double layer_ms, layer_mj, kernel_bytes, cold_weight_bytes;
    int n_kernels;
} pp_fit_net_sums;

/* The per-node inputs the correction needs from one prediction: the sums above and per-node
 * times (a kernel's time on its first node, 0 elsewhere), from perfpred_predict on a context.
 * per_node_ms has pp_model_graph(m)->n_nodes entries (caller-allocated). Fails with
 * PERFPRED_ERR_DEVICE when the device has no latency (uncalibrated and no roofline figures). */
perfpred_status pp_fit_net_layer_times(const perfpred_ctx *ctx, const perfpred_model *m,
                                       const char *device, double *per_node_ms,
                                       pp_fit_net_sums *sums, pp_err *err);
/* The sample for (model, device): node and edge features of pp_gnn_sample_from_graph with the
 * per-node times above, and the globals above. Targets are left absent. Free with
 * pp_gnn_graph_clear. This is the input the predictor forms to apply a trained correction. */
perfpred_status pp_fit_net_sample(const perfpred_ctx *ctx, const perfpred_model *m,
                                  const char *device, pp_gnn_graph *out, pp_fit_net_sums *sums,
                                  pp_err *err);

/* --------------------------------------------- built networks (net_samples.c) ---- */

/* One built network, keyed by (model ref, batch, input shapes) and shared by every row naming it; a
 * cache of them grows by pp_fit_netsample_cache_get and is freed by pp_fit_netsample_cache_free (a
 * zeroed cache is empty). fit_networks.c and lab/fewshot.c build their samples through it. */
typedef enum { PP_NS_NEW = 0, PP_NS_OK, PP_NS_CONSTANT, PP_NS_FAILED } pp_fit_netsample_state;

typedef struct pp_fit_netsample {
    const char *model, *shapes;   /* borrowed from the rows */
    int64_t batch;
    pp_fit_netsample_state state;
    pp_gnn_graph s;               /* owns its memory (pp_gnn_graph_clear) */
    pp_fit_net_sums sum;
} pp_fit_netsample;

typedef struct pp_fit_netsample_cache {
    pp_fit_netsample *e;
    int n, cap;
    int *slot;                    /* open addressing: entry index + 1 */
    size_t nslot;
} pp_fit_netsample_cache;

void pp_fit_netsample_cache_free(pp_fit_netsample_cache *c);
/* Index of the entry for a row (created in state PP_NS_NEW when absent), -1 on OOM. */
int pp_fit_netsample_cache_get(pp_fit_netsample_cache *c, const pp_net_row *r);
/* Builds an entry's sample on device (once). Failures are recorded in the entry, not returned:
 * the caller counts them, and the first one's message goes to fail[fail_n] when fail is empty
 * (fail may be NULL); only OOM and a device without latency stop the fit. */
perfpred_status pp_fit_netsample_build(const perfpred_ctx *ctx, pp_fit_netsample *e,
                                       const pp_net_row *r, const char *table_path,
                                       const char *device, char *fail, size_t fail_n, pp_err *err);

/* Bucket 0..99 of a row: its family's hash bucket, else a hash of the family name. */
int pp_fit_net_row_bucket(const pp_net_row *r);
/* A row index under a sort key; pp_fit_net_cmp_keyed orders by key, then index (for qsort). */
typedef struct pp_fit_net_keyed {
    uint64_t key;
    int idx;
} pp_fit_net_keyed;
int pp_fit_net_cmp_keyed(const void *a, const void *b);
/* A context on config_dir (NULL: the default), its failure as err. */
perfpred_status pp_fit_net_open_ctx(const char *config_dir, perfpred_ctx **ctx, pp_err *err);

#define PP_FIT_NET_LATENCY 0
#define PP_FIT_NET_ENERGY 1

#define PP_FIT_NET_MAX_ENSEMBLE 16

typedef struct pp_fit_net_params {
    int max_train;        /* training rows, chosen deterministically by hash bucket: 2500 */
    int max_val;          /* validation rows (early stopping): 400 */
    int max_heldout;      /* held-out rows evaluated: 0 = all */
    int heldout_pct;      /* families in hash buckets [0, heldout_pct) are held out: 10 */
    int val_pct;          /* buckets [heldout_pct, heldout_pct + val_pct) validate: 10 */
    int direct_ablation;  /* also train the DIPPM-style model on log(measured): 1 */
    int write_artifacts;  /* write out_dir/gnn-latency.{bin,json}: 1 */
    pp_gnn_params gnn;    /* defaults: 3 layers, hidden 32, lr 2e-3, 60 epochs, batch 32,
                             patience 15, seed 1, nthreads 2 */
    int ensemble;         /* models trained with seeds gnn.seed, gnn.seed + 1, ..., whose
                             predictions are averaged (pp_gnn_forward): 1 (1..16) */
    const char *config_dir;   /* descriptors and layer models; NULL = default */
    const char *data_desc;    /* provenance for the manifest (dataset, file, commit) */
    const char *table_path;   /* where relative .onnx refs live (NULL: working directory) */
    const char *heldout_families; /* comma-separated families held out instead of the hash
                                     buckets (validation: other families' models by name hash
                                     below val_pct); NULL: buckets */
    perfpred_heldout *heldout;    /* NULL, or gets the held-out rows' latency residuals of what
                                     the predictor answers ("gnn", or "gated" past the gate) */
    pp_logger log;
} pp_fit_net_params;
pp_fit_net_params pp_fit_net_default_params(void);

typedef struct pp_fit_net_target_report {
    int present;              /* the rows measure this target */
    int n_train, n_val, n_heldout;
    pp_metrics layer_sum;     /* the predictor alone (energy: its base, see docs/networks.md) */
    pp_metrics direct;        /* GNN alone on log(measured) (n = 0 when not trained) */
    pp_metrics corrected;     /* layer sum x exp(correction); on gated rows what the predictor
                                 answers there: the overhead correction (fallback_w) where the
                                 device ships one, else the layer sum */
    pp_metrics ungated;       /* layer sum x exp(correction) on every row */
    int n_gated;              /* rows whose ensemble members spread past the gate */
    double spread_gate;       /* the gate (pp_gnn.spread_gate, log units); 0: none */
    int n_fallback_fit;       /* latency: rows the gated rows' overhead correction was fitted on
                                 (the device's rows outside the held-out ones); 0: layer sum */
    double fallback_w[PP_OVERHEAD_TERMS]; /* its scale, ms per kernel, per 10^6 bytes moved and per
                                             10^6 bytes of cold weights */
} pp_fit_net_target_report;

typedef struct pp_fit_net_report {
    int n_rows;               /* rows of the device given */
    int n_used;               /* rows with a sample */
    int n_constant;           /* fold refs whose network is a constant (nothing runs): excluded */
    int n_failed;             /* rows whose graph or prediction failed (first message kept) */
    char first_failure[256];
    int n_archs;              /* distinct architectures among used rows */
    const char *energy_base;  /* how the energy base was formed */
    pp_fit_net_target_report target[2];  /* PP_FIT_NET_LATENCY, PP_FIT_NET_ENERGY */
    pp_gnn_report gnn, gnn_direct;
    double seconds_samples, seconds_train, seconds_train_direct, seconds_total;
    char weights_path[1024], manifest_path[1024];
} pp_fit_net_report;

/* Trains the correction for one device on rows[] (rows of other devices are ignored): builds each
 * row's graph (cached per model ref), predicts its layer times, forms samples with targets
 * log(measured / layer sum) for latency and, where rows measure it, energy; splits by family hash
 * bucket (held-out architectures, then validation), trains, evaluates the three ablation rows on the
 * held-out rows and, with write_artifacts, saves out_dir/gnn-latency.bin and .json atomically. */
perfpred_status pp_fit_networks(const char *device, const pp_net_row *rows, int n_rows,
                                const pp_fit_net_params *params, const char *out_dir,
                                pp_fit_net_report *report, pp_err *err);

/* Judges a saved correction (artifact_dir/gnn-latency.{bin,json}) on the device's rows in held-out
 * family buckets (params->heldout_pct; the buckets pp_fit_networks never trains on): fills
 * report->target[] layer_sum and corrected metrics (direct stays empty) and the row counts. */
perfpred_status pp_fit_networks_eval(const char *device, const pp_net_row *rows, int n_rows,
                                     const pp_fit_net_params *params, const char *artifact_dir,
                                     pp_fit_net_report *report, pp_err *err);

/* ----------------------------------------------------------- GPU stacks (fit_stacks.c) ---- */

/* Fits GPU runtime stacks (predictor/stack.h) on whole-model measurements
 * (framework-tax-gpus: seven GPUs, PyTorch eager fp32/fp16, TorchScript, TensorRT) and judges them
 * by leaving one GPU out: the stack is refitted on the other GPUs' rows and predicts every row of
 * the one left out. Reports are plain structs; nothing here prints. */

#define PP_FIT_STACK_MAX_GPUS 12
#define PP_FIT_STACK_MAX_FAMILIES 16

typedef struct pp_fit_stack_params {
    const char *data_dir;    /* ../shared/datasets/framework-tax-gpus */
    const char *own_data_dir; /* the project's own GPUs, same layout (data/gpu-stacks), or NULL */
    const char *models_dir;  /* weightless torchvision ONNX exports (tests/fixtures/models) */
    const char *stack;       /* one stack name, or NULL for all six */
    int threads;             /* leave-one-GPU-out fits in parallel (>= 1) */
    int leave_one_out;       /* 1: also the leave-one-GPU-out figures */
    int leave_family_out;    /* 1: also the leave-one-model-family-out figures */
    int max_evals;           /* Nelder-Mead evaluations per fit (0: 4000) */
    const char *only_gpu_files; /* tests: comma-separated GPU file stems to read, NULL = all */
    const char *rows_csv;    /* where to write every row with its held-out predictions, or NULL */
} pp_fit_stack_params;
pp_fit_stack_params pp_fit_stack_default_params(void);

typedef struct pp_fit_stack_gpu {
    char device[64];         /* descriptor name the GPU file maps to */
    int n_rows, n_small, n_large; /* rows; batch < 16; batch >= 16 */
    int n_memory;            /* rows with a memory reading */
    double mape_small, mape_large, mape_all, mape_memory; /* held out (leave_one_out), % */
    double train_mape;       /* of the all-GPU fit on this GPU's rows, % */
    double repeat_mape;      /* run folders measuring the same configuration twice, %, NaN if none */
    int n_repeat;
    double interval_coverage; /* % of its held-out rows inside the 80 % latency interval computed
                                 without them (NaN without leave_one_out) */
} pp_fit_stack_gpu;

typedef struct pp_fit_stack_report {
    pp_stack stack;          /* fitted on every GPU's rows */
    int n_rows, n_skipped, n_models;
    char skipped_why[256];   /* the first reason a row was skipped */
    int n_gpus;
    pp_fit_stack_gpu gpu[PP_FIT_STACK_MAX_GPUS];
    double train_mape, train_mape_memory;
    /* pooled over the held-out GPUs' rows */
    double logo_small, logo_large, logo_memory;
    double repeat_mape;      /* pooled over GPUs, NaN if no repeats */
    int n_repeat;
    double interval_coverage; /* pooled over GPUs, % */
    /* leave_family_out: each model family's rows predicted by a fit that saw none of them
     * (device holds the family's name; train and repeat figures NaN) */
    int n_families;
    pp_fit_stack_gpu family[PP_FIT_STACK_MAX_FAMILIES];
    double lofo_small, lofo_large, lofo_memory;
    /* rows of the stack's forwards replayed as CUDA graphs (their GPU's kernels alone), kept out
     * of every figure above: their MAPE under the fit on every row and under the fit that left
     * their GPU out (NaN without such rows) */
    int n_graph;
    double graph_train_mape, graph_logo_mape;
} pp_fit_stack_report;

/* Fits stack `name` on the data; fills *rep. */
perfpred_status pp_fit_stack_run(const pp_device_db *db, const pp_fit_stack_params *p,
                                 const char *name, pp_fit_stack_report *rep, pp_err *err);

/* A TF32 stack none of whose training rows ran on tensor cores (tc_feed 0; TensorRT fp32) takes
 * its feed from the same framework's fp16 stack times the geometric mean TF32 / fp16 feed ratio
 * of the other frameworks fitted in both, read from `config_dir`/artifacts/stacks, and says so in
 * s->tc_feed_source. Anything else, or a sibling missing: s unchanged. */
void pp_fit_stack_transfer_feed(const char *config_dir, pp_stack *s);

/* The report as JSON text (malloc'd), stored beside the stack in its artifact. */
char *pp_fit_stack_report_json(const pp_fit_stack_report *rep);

/* ------------------------------------------------------------- board power (fit_power.c) ---- */

/* Fits the GPU board power model (predictor/power.h) on gpu-benches'
 * roofline sweep (gpu-roofline/<gpu>.txt: for each arithmetic intensity, DRAM GB/s, GF/s, clock
 * and board watts) and judges it by leaving one GPU out: the transferred figures (static share of
 * max power, energy per byte of the DRAM family, energy per flop) are refitted on the other GPUs
 * and predict every point of the one left out. Points where the board hit its power limit or
 * lowered its clock are left out of the fits and judged with the prediction capped at max power.
 * Reports are plain structs; nothing here prints. */

typedef struct pp_fit_power_gpu {
    char device[64];
    char file[64];            /* gpu-roofline file stem */
    int points, throttled;    /* points read; of them at the power limit or a lowered clock */
    double fit_mape;          /* this GPU's own fit, on its unthrottled points, % */
    double held_out_mape;     /* transferred figures fitted without it, all its points, % */
    double held_out_mape_throttled; /* the same on its throttled points only (NaN if none) */
} pp_fit_power_gpu;

typedef struct pp_fit_power_report {
    pp_power_set set;         /* fitted on every GPU */
    int n_gpus, n_lines_skipped;
    pp_fit_power_gpu gpu[PP_POWER_MAX_GPUS];
    double held_out_mape;     /* pooled over GPUs (each GPU's points weigh equally in total), % */
} pp_fit_power_report;

/* Reads <data_dir>/gpu-roofline/ (gpu-benches), fits, fills *rep. A file stem the mapping does
 * not know is an error naming it; a line that is not a sweep point is skipped and counted. */
perfpred_status pp_fit_power_run(const pp_device_db *db, const char *data_dir,
                                 pp_fit_power_report *rep, pp_err *err);

/* The report as JSON text (malloc'd), stored beside the figures in the artifact. */
char *pp_fit_power_report_json(const pp_fit_power_report *rep);

#endif
