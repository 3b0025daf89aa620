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

#ifdef __cplusplus
}
#endif
#endif
