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
 * Opened once, then read-only: predictions from several threads on one context are safe. */
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
    PERFPRED_PROV_MIXED = 3        /* a sum whose parts are partly calibrated, partly estimated */
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
    const char *calibration_source; /* manifest's data source, or NULL */
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
    char ops[64];            /* "Conv+Relu" */
    const char *kind;        /* op kind of the first node */
    double latency_ms;
    double flops, bytes;
    int memory_bound;        /* roofline side (1 = bandwidth bound) */
    perfpred_provenance prov;
} perfpred_kernel;

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
} perfpred_prediction;

typedef struct perfpred_predict_params {
    perfpred_kernel *kernels;   /* optional per-kernel breakdown, in execution order */
    int kernels_cap;
    int *n_kernels;             /* set to the number of kernels (may exceed kernels_cap) */
} perfpred_predict_params;
perfpred_predict_params perfpred_predict_default_params(void);

perfpred_status perfpred_predict(const perfpred_ctx *ctx, const perfpred_model *m,
                                 const char *device, const perfpred_predict_params *params,
                                 perfpred_prediction *out, char *errbuf, size_t errbuf_len);

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

#ifdef __cplusplus
}
#endif
#endif
