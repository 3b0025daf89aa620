/* calibrate/netsets.h: whole-network measurements of NAS search spaces and the graph-level
 * correction trained on them. netsets.c builds the graphs of measured rows (model refs resolved by
 * graph/build_ref.c) and imports HELP, HW-NAS-Bench-360 and Eagle's LatBench
 * into pp_net_row tables read in place; fit_networks.c trains the GNN correction of
 * docs/networks.md (latency = layer sum x exp(correction)) per device (the few-shot study is
 * lab/fewshot.c).
 * Ownership: tables from the importers are the caller's (pp_net_table_free); graphs from the
 * resolver are the caller's (pp_graph_free); reports are caller-owned structs. */
#ifndef PP_NETSETS_H
#define PP_NETSETS_H

#include <stdint.h>

#include "calibrate/calibrate.h"
#include "graph/builders.h"
#include "graph_gnn/graph_gnn.h"

/* ------------------------------------------------------------------- model refs ---- */

/* Refs (pp_net_graph_from_ref, pp_net_ref_is_builtin, pp_net_ref_family): graph/builders.h. */
/* The graph of a network row: its ref with the row's batch and input_shapes; a relative .onnx
 * path is taken relative to the folder of table_path (NULL: the working directory). */
perfpred_status pp_net_row_graph(const pp_net_row *row, const char *table_path, pp_graph **out,
                                 pp_err *err);

/* The hash bucket 0..99 of a family written by pp_net_ref_family ("nb201-h07" -> 7), or -1 for a
 * family without one. */
int pp_net_family_bucket(const char *family);

/* --------------------------------------------------------------------- importers ---- */

/* Datasets understood by pp_netset_import, read in place from <root>/<folder>:
 *   "help-nb201"  help/help_nasbench201_latency.csv (15,625 NB201 cells x 27 columns)
 *   "help-fbnet"  help/help_fbnet_latency.csv       (5,000 FBNet archs x 23 columns)
 *   "help-ofa"    help/help_ofa_latency.csv         (5,000 OFA subnets x 12 columns)
 *   "hw-nas-bench-360"  hw-nas-bench-360/results/dataset.csv (Raspberry Pi 5, three runtimes,
 *                 three tasks, latency and energy; measured representative cells only)
 *   "eagle"       eagle-latbench-desktop-cpu/desktop-cpu-core-i7-7820x-fp32.csv (i7-7820X)
 * HELP columns "<dev>[_<batch>]_ms" map to descriptors by name or alias (with '_' dropped when the
 * name itself is unknown: titan_xp -> titanxp); eyeriss and fpga (simulator estimates) and columns
 * without a descriptor are skipped and listed in the stats. NAS-Bench-201 rows measured through a
 * converter get the mode their latencies fit (docs/networks.md): HW-NAS-Bench's TFLite raspi4 and
 * pixel3 and HW-NAS-Bench-360's LiteRT ";prune", Eagle's TensorFlow ";fold". Bad rows are counted
 * in (*out)->bad with file:line. */
typedef struct pp_netset_opts {
    const char *root;        /* datasets folder; NULL = pp_netset_default_root() */
    const char *config_dir;  /* device descriptors; NULL = pp_default_config_dir() */
    const char *device;      /* keep only rows of this device (name or alias); NULL = all */
    const char *task;        /* HW-NAS-Bench-360 task (cifar100, ninapro, darcy); NULL = all */
    int all_copies;          /* HW-NAS-Bench-360: also the 15,625-row expansion of each measured
                                cell to its isomorphic copies (default 0: measured rows only) */
} pp_netset_opts;
pp_netset_opts pp_netset_default_opts(void);
/* $PERFPRED_DATASETS, else <source tree>/../shared/datasets. */
const char *pp_netset_default_root(void);

typedef struct pp_netset_stats {
    int n_rows;               /* rows appended */
    int n_skipped_columns;    /* device columns skipped (no descriptor, simulated, filtered) */
    char skipped[512];        /* their names, comma-separated (truncated) */
} pp_netset_stats;

perfpred_status pp_netset_import(const char *dataset, const pp_netset_opts *opts,
                                 pp_net_table **out, pp_netset_stats *stats, pp_err *err);
/* A dataset name above, several of them joined by ',' (their rows in one table), or the path of a
 * network-measurement CSV (docs/measurements.md, read by pp_net_csv_read; opts and stats other
 * than n_rows then do not apply). */
perfpred_status pp_net_rows_load(const char *source, const pp_netset_opts *opts, pp_net_table **out,
                                 pp_netset_stats *stats, pp_err *err);
/* Appends the rows of src to dst (strings copied into dst's arena; bad-row records merged). */
perfpred_status pp_net_table_append(pp_net_table *dst, const pp_net_table *src, pp_err *err);

/* --------------------------------------------------------- the graph correction ---- */

/* The correction's global features and the sample from a prediction's figures
 * (pp_fitnet_globals, pp_fitnet_sample_from): graph_gnn/graph_gnn.h. */

/* What one uncorrected prediction sums: the layer sum, its energy (NaN when the descriptor has no
 * power model), and the kernels and the bytes they move (the overhead correction's terms). */
typedef struct pp_fitnet_sums {
    double layer_ms, layer_mj, kernel_bytes;
    int n_kernels;
} pp_fitnet_sums;

/* The per-node inputs the correction needs from one prediction: the sums above and per-node
 * times (a kernel's time on its first node, 0 elsewhere), from perfpred_predict on a context.
 * per_node_ms has pp_model_graph(m)->n_nodes entries (caller-allocated). Fails with
 * PERFPRED_ERR_DEVICE when the device has no latency (uncalibrated and no roofline figures). */
perfpred_status pp_fitnet_layer_times(const perfpred_ctx *ctx, const perfpred_model *m,
                                      const char *device, double *per_node_ms,
                                      pp_fitnet_sums *sums, pp_err *err);
/* The sample for (model, device): node and edge features of pp_gnn_sample_from_graph with the
 * per-node times above, and the globals above. Targets are left absent. Free with
 * pp_gnn_graph_clear. This is the input the predictor forms to apply a trained correction. */
perfpred_status pp_fitnet_sample(const perfpred_ctx *ctx, const perfpred_model *m,
                                 const char *device, pp_gnn_graph *out, pp_fitnet_sums *sums,
                                 pp_err *err);

/* --------------------------------------------- built networks (net_samples.c) ---- */

/* One built network, keyed by (model ref, batch, input shapes) and shared by every row naming it;
 * a cache of them grows by pp_netsample_cache_get and is freed by pp_netsample_cache_free (a
 * zeroed cache is empty). fit_networks.c and lab/fewshot.c build their samples through it. */
typedef enum { PP_NS_NEW = 0, PP_NS_OK, PP_NS_CONSTANT, PP_NS_FAILED } pp_netsample_state;

typedef struct pp_netsample {
    const char *model, *shapes;   /* borrowed from the rows */
    int64_t batch;
    pp_netsample_state state;
    pp_gnn_graph s;               /* owns its memory (pp_gnn_graph_clear) */
    pp_fitnet_sums sum;
} pp_netsample;

typedef struct pp_netsample_cache {
    pp_netsample *e;
    int n, cap;
    int *slot;                    /* open addressing: entry index + 1 */
    size_t nslot;
} pp_netsample_cache;

void pp_netsample_cache_free(pp_netsample_cache *c);
/* Index of the entry for a row (created in state PP_NS_NEW when absent), -1 on OOM. */
int pp_netsample_cache_get(pp_netsample_cache *c, const pp_net_row *r);
/* Builds an entry's sample on device (once). Failures are recorded in the entry, not returned:
 * the caller counts them, and the first one's message goes to fail[fail_n] when fail is empty
 * (fail may be NULL); only OOM and a device without latency stop the fit. */
perfpred_status pp_netsample_build(const perfpred_ctx *ctx, pp_netsample *e, const pp_net_row *r,
                                   const char *table_path, const char *device, char *fail,
                                   size_t fail_n, pp_err *err);

/* FNV-1a of s continuing from h (PP_NET_HASH0 to start): the rows' stable hashes. */
#define PP_NET_HASH0 1469598103934665603ull
uint64_t pp_net_hash(const char *s, uint64_t h);
/* Bucket 0..99 of a row: its family's hash bucket, else a hash of the family name. */
int pp_net_row_bucket(const pp_net_row *r);
/* A row index under a sort key; pp_net_cmp_keyed orders by key, then index (for qsort). */
typedef struct pp_net_keyed {
    uint64_t key;
    int idx;
} pp_net_keyed;
int pp_net_cmp_keyed(const void *a, const void *b);
/* A context on config_dir (NULL: the default), its failure as err. */
perfpred_status pp_net_open_ctx(const char *config_dir, perfpred_ctx **ctx, pp_err *err);

#define PP_FITNET_LATENCY 0
#define PP_FITNET_ENERGY 1

#define PP_FITNET_MAX_ENSEMBLE 16

typedef struct pp_fitnet_params {
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
} pp_fitnet_params;
pp_fitnet_params pp_fitnet_default_params(void);

typedef struct pp_fitnet_target_report {
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
    double fallback_w[3];     /* its scale, ms per kernel, ms per 10^6 bytes moved */
} pp_fitnet_target_report;

typedef struct pp_fitnet_report {
    int n_rows;               /* rows of the device given */
    int n_used;               /* rows with a sample */
    int n_constant;           /* fold refs whose network is a constant (nothing runs): excluded */
    int n_failed;             /* rows whose graph or prediction failed (first message kept) */
    char first_failure[256];
    int n_archs;              /* distinct architectures among used rows */
    const char *energy_base;  /* how the energy base was formed */
    pp_fitnet_target_report target[2];  /* PP_FITNET_LATENCY, PP_FITNET_ENERGY */
    pp_gnn_report gnn, gnn_direct;
    double seconds_samples, seconds_train, seconds_train_direct, seconds_total;
    char weights_path[1024], manifest_path[1024];
} pp_fitnet_report;

/* Trains the correction for one device on rows[] (rows of other devices are ignored): builds each
 * row's graph (cached per model ref), predicts its layer times, forms samples with targets
 * log(measured / layer sum) for latency and, where rows measure it, energy; splits by family hash
 * bucket (held-out architectures, then validation), trains, evaluates the three ablation rows on the
 * held-out rows and, with write_artifacts, saves out_dir/gnn-latency.bin and .json atomically. */
perfpred_status pp_fit_networks(const char *device, const pp_net_row *rows, int n_rows,
                                const pp_fitnet_params *params, const char *out_dir,
                                pp_fitnet_report *report, pp_err *err);

/* Judges a saved correction (artifact_dir/gnn-latency.{bin,json}) on the device's rows in held-out
 * family buckets (params->heldout_pct; the buckets pp_fit_networks never trains on): fills
 * report->target[] layer_sum and corrected metrics (direct stays empty) and the row counts. */
perfpred_status pp_eval_networks(const char *device, const pp_net_row *rows, int n_rows,
                                 const pp_fitnet_params *params, const char *artifact_dir,
                                 pp_fitnet_report *report, pp_err *err);

#endif
