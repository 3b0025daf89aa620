/* datasets/: public measurements read in place from ../shared/datasets (never copied) into the
 * schemas of measure/: NeuSight's kernel sweeps and torch.fx node tables (neusight.c,
 * neusight_fx.c), DeepBench and mobile-ml-benchmark layer rows (import_deepbench.c,
 * import_mobile.c, with perfpred_calibrate_import in import_common.c), and whole-network tables of
 * HELP, HW-NAS-Bench-360 and Eagle with the graphs of their rows (netsets.c). Provenance comes from
 * each dataset's SOURCE.md. Ownership: tables are the caller's (pp_measure_*_table_free,
 * pp_datasets_fx_free); graphs from the resolver are the caller's (pp_graph_free). */
#ifndef PP_DATASETS_H
#define PP_DATASETS_H

#include <stdint.h>

#include "graph/builders.h"
#include "measure/measure.h"

/* ------------------------------------------------------------- NeuSight import (neusight.c) ---- */

typedef enum pp_neusight_split {
    PP_NEUSIGHT_TRAIN = 0,   /* data/dataset/train/collect/<op>/p2.1.0/<GPU>.csv */
    PP_NEUSIGHT_TEST = 1     /* data/dataset/test/<file>.csv, rows of that GPU and op */
} pp_neusight_split;

/* NeuSight operator names this importer knows: bmm, linear, conv, add, addu, mul, mulu, div, divu,
 * pow, powu, relu, gelu, tanh, ln, softmax. NULL-terminated list. */
extern const char *const pp_datasets_neusight_ops[];

/* <root>/SOURCE.md, a dataset's provenance, as NUL-terminated text (caller frees); its path goes
 * to path, for messages. */
#define PP_SOURCE_MD_PATH 4096
perfpred_status pp_datasets_source_md(const char *root, char path[PP_SOURCE_MD_PATH], char **text,
                                      pp_err *err);

/* Provenance read from <root>/SOURCE.md ("- Repo: <url>", "- Commit: <40 hex> (YYYY-MM-DD)"). */
typedef struct pp_neusight_source {
    char repo[256];
    char commit[41];
    char date[11];      /* commit date: the date imported rows carry */
} pp_neusight_source;
perfpred_status pp_datasets_neusight_source(const char *root, pp_neusight_source *out, pp_err *err);

/* perfpred device name for a NeuSight GPU name ("NVIDIA A100-PCIE-40GB" -> "a100-pcie-40gb"),
 * or NULL when the GPU is not one NeuSight measured. */
const char *pp_datasets_neusight_device(const char *gpu);

/* Repository-relative path of the file holding op rows for split (e.g.
 * "scripts/asplos/data/dataset/train/collect/linear/p2.1.0/NVIDIA A100-PCIE-40GB.csv"). */
perfpred_status pp_datasets_neusight_path(const char *op, const char *gpu, pp_neusight_split split,
                                          char *out, size_t n, pp_err *err);

/* Appends the rows of one operator for one GPU to t (rows whose Device column differs are skipped;
 * for test files, also rows of other ops). Bad rows are counted in t->bad with file:line.
 * *n_added (may be NULL) receives the number of rows appended. */
perfpred_status pp_datasets_neusight_import(const char *root, const char *op, const char *gpu,
                                            pp_neusight_split split, pp_layer_table *t,
                                            int *n_added, pp_err *err);
/* Imports every operator NeuSight has for gpu (conv from conv_gpu when not NULL) and writes them as
 * one layer CSV at out_csv. *n_rows (may be NULL) receives the row count. */
perfpred_status pp_datasets_neusight_export_csv(const char *root, const char *gpu,
                                                const char *conv_gpu, pp_neusight_split split,
                                                const char *out_csv, int *n_rows, pp_err *err);

/* ------------------------------------------------- DeepBench, mobile-ml-benchmark (import_*.c) ---- */

#define PP_IMPORT_MAX_DEVICES 32
#define PP_IMPORT_MAX_NOTES 16

/* Rows and bad rows of one perfpred device, with the dataset's own name for it. */
typedef struct pp_import_device {
    char device[64];      /* perfpred device name */
    char name[64];        /* the dataset's name ("Raspberry Pi 3", "pixel4") */
    int n_rows, n_bad;
} pp_import_device;

/* What an import did. Bad rows themselves (file:line: reason) are in the table's bad list; a bad
 * row of mobile-ml-benchmark is one (CSV line, device column) pair, as a good one is. */
typedef struct pp_import_report {
    int n_files;          /* data files read */
    int n_rows, n_bad;
    int n_filtered;       /* rows left out by the device / runtime filter */
    int n_ignored;        /* lines that hold no kernel (notes, stray cells) */
    int n_devices;
    pp_import_device devices[PP_IMPORT_MAX_DEVICES];
    int n_notes;          /* files skipped and why, dataset devices without a descriptor */
    char notes[PP_IMPORT_MAX_NOTES][256];
} pp_import_report;

/* Which rows to keep: device (canonical name, NULL = all), runtime (NULL = all). */
typedef struct pp_import_filter {
    const char *device;
    const char *runtime;
} pp_import_filter;

/* ---- shared bookkeeping (import_common.c) ---- */

/* The entry of device (created with the dataset's name when new; the last entry gathers devices
 * beyond PP_IMPORT_MAX_DEVICES). */
pp_import_device *pp_datasets_import_device(pp_import_report *r, const char *device,
                                            const char *name);
void pp_datasets_import_note(pp_import_report *r, const char *fmt,
                             ...) __attribute__((format(printf, 2, 3)));
/* Records a bad row: t->bad (file:line: reason) and the device's count (device may be NULL). */
void pp_datasets_import_bad(pp_import_report *r, pp_layer_table *t, const char *device,
                            const char *name, const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* Rebuilds row as its single-node graph (graph/ must accept it and give it row->kind); 0 with *feat
 * filled, -1 with the reason in why. */
int pp_datasets_check_row(const pp_layer_row *row, pp_node_feat *feat, char *why, size_t why_n);
/* Finds the first 40-hex commit after the text `after` in <root>/SOURCE.md and, when date is not
 * NULL, the first YYYY-MM-DD after the commit on the same line ("" when there is none). */
perfpred_status pp_datasets_source_commit(const char *root, const char *after, char commit[41],
                                          char date[11], pp_err *err);

/* ---- the datasets ---- */

/* DeepBench (<root>/csv/results/...): GEMM -> Gemm (activation A, weight B, DeepBench's M, N, K and
 * transposes), convolution -> Conv (NCHW, no bias), precision per file, times in ms. Devices are
 * looked up in db by the names listed in import_deepbench.c; files of devices without a descriptor,
 * and files whose precision the schema cannot express, are skipped with a note. */
perfpred_status pp_datasets_deepbench_import(const char *root, const pp_device_db *db,
                                             const pp_import_filter *filter, pp_layer_table *t,
                                             pp_import_report *rep, pp_err *err);

/* mobile-ml-benchmark (<root>/{tflite,torch}_cnn_ops_gpu.csv): per-op latency (us) on phone GPUs,
 * fp16, batch 1; the column device <dev> is looked up as "<dev>-gpu". */
perfpred_status pp_datasets_mobile_import(const char *root, const pp_device_db *db,
                                          const pp_import_filter *filter, pp_layer_table *t,
                                          pp_import_report *rep, pp_err *err);

/* ---------------------------------------------- NeuSight's fx node tables (neusight_fx.c) ---- */

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
pp_pv *pp_datasets_pv_parse(const char *text, pp_arena *a, char *why, size_t why_n);

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
    pp_strmap index;         /* Name -> row index (keys: the rows' names, in arena) */
} pp_fx_table;

/* Reads a node table. Header problems (a required column missing, an unknown or duplicate column)
 * are PERFPRED_ERR_PARSE naming file:1. Bad data rows (malformed shape or literal, unknown op, an
 * input that no earlier row defines, input shapes that differ from their producers' output shapes,
 * duplicate names, bad numbers) are kept with bad = 1, counted and listed as "file:line: reason";
 * the call still succeeds. */
perfpred_status pp_datasets_fx_read(const char *path, pp_fx_table **out, pp_err *err);
perfpred_status pp_datasets_fx_read_buffer(const char *path_for_errors, const char *buf, size_t len,
                                           pp_fx_table **out, pp_err *err);
void pp_datasets_fx_free(pp_fx_table *t);                 /* NULL is a no-op */
int pp_datasets_fx_find(const pp_fx_table *t, const char *name);  /* row index, -1 if absent */
/* "(8, 512, 1024)" into buf; the op column's names, indexed by pp_fx_op. */
void pp_datasets_fx_shape_str(const pp_fx_shape *s, char *buf, size_t n);
extern const char *const pp_datasets_fx_op_names[];

/* ------------------------------------------------ whole-network sets (netsets.c) ---- */


/* Refs (pp_net_graph_from_ref, pp_net_ref_is_builtin, pp_net_ref_family): graph/builders.h. */
/* The graph of a network row: its ref with the row's batch and input_shapes; a relative .onnx
 * path is taken relative to the folder of table_path (NULL: the working directory). */
perfpred_status pp_datasets_net_graph(const pp_net_row *row, const char *table_path, pp_graph **out,
                                      pp_err *err);

/* The hash bucket 0..99 of a family written by pp_net_ref_family ("nb201-h07" -> 7), or -1 for a
 * family without one. */
int pp_datasets_family_bucket(const char *family);

/* --------------------------------------------------------------------- importers ---- */

/* Datasets understood by pp_datasets_netset_import, read in place from <root>/<folder>:
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
    const char *root;        /* datasets folder; NULL = pp_datasets_netset_root() */
    const char *config_dir;  /* device descriptors; NULL = pp_default_config_dir() */
    const char *device;      /* keep only rows of this device (name or alias); NULL = all */
    const char *task;        /* HW-NAS-Bench-360 task (cifar100, ninapro, darcy); NULL = all */
    int all_copies;          /* HW-NAS-Bench-360: also the 15,625-row expansion of each measured
                                cell to its isomorphic copies (default 0: measured rows only) */
} pp_netset_opts;
pp_netset_opts pp_datasets_netset_default_opts(void);
/* $PERFPRED_DATASETS, else <source tree>/../shared/datasets. */
const char *pp_datasets_netset_root(void);

typedef struct pp_netset_stats {
    int n_rows;               /* rows appended */
    int n_skipped_columns;    /* device columns skipped (no descriptor, simulated, filtered) */
    char skipped[512];        /* their names, comma-separated (truncated) */
} pp_netset_stats;

perfpred_status pp_datasets_netset_import(const char *dataset, const pp_netset_opts *opts,
                                          pp_net_table **out, pp_netset_stats *stats, pp_err *err);
/* A dataset name above, several of them joined by ',' (their rows in one table), or the path of a
 * network-measurement CSV (docs/measurements.md, read by pp_measure_net_csv_read; opts and stats
 * other than n_rows then do not apply). */
perfpred_status pp_datasets_net_rows_load(const char *source, const pp_netset_opts *opts,
                                          pp_net_table **out, pp_netset_stats *stats, pp_err *err);

/* Appends the rows of src to dst (strings copied into dst's arena; bad-row records merged). */
perfpred_status pp_datasets_net_table_append(pp_net_table *dst, const pp_net_table *src,
                                             pp_err *err);

#endif
