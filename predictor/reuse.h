/* predictor/reuse.h: predictions a context has already made, kept for the next identical call.
 * A prediction is a pure function of the model (immutable once loaded; its batch and input
 * overrides are fixed at load), the device, the context's calibrations (read-only once opened)
 * and the prediction parameters, so one with the same key is returned as computed, bit for bit:
 * repeated calls, `compare` asking the same device again, `mig` after a predict. */
#ifndef PP_REUSE_H
#define PP_REUSE_H

#include <stdint.h>

#include "devices/devices.h"

typedef struct pp_reuse pp_reuse;

/* A table of PP_REUSE_SLOTS predictions (direct-mapped: a newer key takes an older one's slot).
 * NULL on out of memory: every call then computes, as it would without the table. */
#define PP_REUSE_SLOTS 256
pp_reuse *pp_reuse_new(void);
void pp_reuse_free(pp_reuse *r);   /* NULL is a no-op */

/* Whether (model_serial, d, p) is cacheable at all: not when the per-kernel breakdown is asked
 * (p->kernels), a runtime/precision name is longer than the key holds, or reuse is disabled. */
int pp_reuse_cacheable(const perfpred_predict_params *p);
/* 1 and *out set (and *p->n_kernels where asked) when the table holds the key; else 0. */
int pp_reuse_get(pp_reuse *r, uint64_t model_serial, const pp_device *d,
                 const perfpred_predict_params *p, perfpred_prediction *out);
void pp_reuse_put(pp_reuse *r, uint64_t model_serial, const pp_device *d,
                  const perfpred_predict_params *p, const perfpred_prediction *out);
/* Process-wide switch for benchmarks timing the computation itself: off != 0 makes every call
 * uncacheable. Default on. */
void pp_reuse_disable(int off);
/* A context's table (predictor/predictor.c). */
const pp_reuse *pp_ctx_reuse(const perfpred_ctx *ctx);
/* Hits and lookups since the table was made (benchmarks, tests). */
void pp_reuse_counts(const pp_reuse *r, long *hits, long *lookups);

#endif
