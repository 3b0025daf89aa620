/* predictor/allocator.h: device memory as PyTorch's CUDA caching allocator holds it. NVML's "used"
 * is the CUDA context and libraries plus every segment the allocator reserved; the allocator keeps
 * freed blocks cached and reserves new segments by fixed rules, so what it holds is not the live
 * bytes but what a replay of the run's allocations through those rules reserves.
 *
 * The replay follows c10/cuda/CUDACachingAllocator.cpp (defaults, PyTorch 1.x-2.x):
 *   size      = max(512, ceil512(request))
 *   pool      = small when size <= 1 MiB, else large
 *   block     = the smallest cached free block of the pool that holds size (best fit)
 *   segment   = none fits: cudaMalloc of 2 MiB (small), 20 MiB (large, size < 10 MiB), else
 *               size rounded up to 2 MiB; reserved grows by it and never shrinks but for
 *               empty_cache, which returns the segments wholly free (also done, then
 *               retried, when a segment would pass the device's memory)
 *   split     = the rest of a block stays a free block when >= 512 B (small) / > 1 MiB (large);
 *               else the whole block is handed out (and counted allocated)
 *   free      = a block merges with free neighbours of its segment
 *
 * The trace is what eager PyTorch allocates for a graph: every weight once, the inputs, each
 * kernel's output when it runs (views alias their input; an activation whose input dies with it
 * runs in place, as torchvision's inplace=True modules do; a BatchNorm the export folded into its
 * convolution allocates its own output in eager mode), each buffer freed after its last reader.
 * A TensorRT engine (Torch-TensorRT, one engine per input shape) instead keeps its own copy of
 * the weights while it exists (PyTorch's module stays loaded beside it) and runs all its
 * activations in one block planned with reuse and fusion: ws_factor x the eager liveness peak,
 * taken from PyTorch's allocator for each call. */
#ifndef PP_ALLOCATOR_H
#define PP_ALLOCATOR_H

#include <stdint.h>

#include "graph/graph.h"

/* What an allocation holds. */
enum {
    PP_ALLOC_ACT = 0, /* an activation (input, output of a kernel) */
    PP_ALLOC_WEIGHT,  /* a weight: allocated once per model load, never freed */
    PP_ALLOC_WS,      /* a convolution's workspace (bytes = its output's) or a TensorRT
                         engine's activation block (bytes = the eager liveness peak); the replay
                         takes ws_factor x bytes, freed right after the kernel / the call */
    PP_ALLOC_CUBLAS,  /* cuBLAS's workspace, on the first matrix product; kept for good */
    PP_ALLOC_ENGINE,  /* a compiled engine's copy of the weights: allocated by the pass that
                         builds it, never freed */
    PP_ALLOC_ACT32    /* autocast: an activation that is fp32 whatever the pass's precision
                         (the model's input, what autocast's fp32 ops and type promotion write;
                         pp_stack_autocast_dtypes) */
};
/* What pp_alloc_trace_build traces. */
enum {
    PP_TRACE_EAGER = 0, /* eager PyTorch */
    PP_TRACE_ENGINE,    /* a TensorRT engine */
    PP_TRACE_AUTOCAST   /* eager PyTorch under autocast: the weights stay fp32, activations
                           are fp16 or fp32 as autocast writes them, and each op on autocast's fp16 list allocates fp16 copies of its fp32
                           operands (pp_stack_autocast_casts): an activation's while it runs, a
                           weight's once, kept in autocast's cast cache to the end of the pass
                           (it caches leaf tensors that require grad: a module's parameters
                           unless frozen with requires_grad_(False)) */
};
/* One event of a trace: alloc of `bytes` (fp32) for buffer `buf`, or its free (bytes = 0). */
typedef struct pp_alloc_ev {
    int32_t buf;
    int32_t kind;    /* PP_ALLOC_* */
    int64_t bytes;   /* > 0: allocation at fp32; 0: free */
} pp_alloc_ev;

/* Eager PyTorch's allocations for one forward pass of a graph (malloc'd; pp_alloc_trace_free). */
typedef struct pp_alloc_trace {
    pp_alloc_ev *ev;
    int n, n_bufs;
    int has_matmul;  /* a Gemm/MatMul runs: cuBLAS is initialised (its handle joins the context) */
    int fp32_weights; /* autocast: weights take 4 bytes whatever the pass's scale */
} pp_alloc_trace;

/* Builds the trace of g (shapes, features and liveness done). bn_eager: each BatchNorm the export
 * folded into a convolution allocates its own output, as eager PyTorch runs it. mode: PP_TRACE_*
 * (PP_TRACE_ENGINE: the TensorRT trace above instead, bn_eager unused). */
perfpred_status pp_alloc_trace_build(const pp_graph *g, int bn_eager, int mode,
                                     pp_alloc_trace *out, pp_err *err);
void pp_alloc_trace_free(pp_alloc_trace *t);

/* The allocator's state: segments and blocks; statistics in bytes. */
typedef struct pp_alloc_sim pp_alloc_sim;
pp_alloc_sim *pp_alloc_sim_new(void);
void pp_alloc_sim_free(pp_alloc_sim *s);
/* How a pass is replayed. */
typedef struct pp_alloc_params {
    double scale;        /* bytes per fp32 byte of tensors: 1, or 0.5 for fp16 */
    double ws_factor;    /* a convolution's workspace per byte of its output (TensorRT: the
                            engine's activation block per byte of the eager liveness peak) */
    double cublas_bytes; /* cuBLAS workspace (0: none) */
    double capacity;     /* bytes the allocator may reserve (0: no limit); past it, it returns
                            its wholly free cached segments to the driver and retries, as
                            PyTorch does before it reports out of memory */
    int with_weights;    /* the first pass of a model: its weights are allocated first */
} pp_alloc_params;
/* Replays one pass of t: weights (first pass only), then the pass; every activation is freed by
 * its end. PERFPRED_ERR_NOMEM on allocation failure. */
perfpred_status pp_alloc_sim_run(pp_alloc_sim *s, const pp_alloc_trace *t,
                                 const pp_alloc_params *p, pp_err *err);
/* The model built again while the loaded one is still bound (framework-tax builds a new model for
 * each batch size of its sweep, and the old one is freed only once the new one replaces it):
 * every weight of t is allocated anew, then the previous instance's weights are freed to the
 * cache. Run the pass after it with with_weights = 0. */
perfpred_status pp_alloc_sim_rebuild(pp_alloc_sim *s, const pp_alloc_trace *t,
                                     const pp_alloc_params *p, pp_err *err);
/* torch.cuda.empty_cache(): returns every wholly free segment. */
void pp_alloc_sim_empty_cache(pp_alloc_sim *s);
/* torch.cuda.reset_peak_memory_stats() */
void pp_alloc_sim_reset_peaks(pp_alloc_sim *s);
typedef struct pp_alloc_stats {
    double reserved, allocated;           /* now */
    double peak_reserved, peak_allocated; /* since the last reset */
    int over;                             /* requests past 2^60 B, or reservations past the
                                             capacity even after the cache was returned (out
                                             of memory on a GPU) */
} pp_alloc_stats;
pp_alloc_stats pp_alloc_sim_stats(const pp_alloc_sim *s);

/* A fresh process that loads the model and runs one pass (what a deployment and this project's
 * runners see): reserved and allocated peaks in bytes. */
perfpred_status pp_alloc_fresh(const pp_alloc_trace *t, const pp_alloc_params *p,
                               pp_alloc_stats *out, pp_err *err);

#endif
