/* predictor/device_info.c: the public API's view of a context's devices (perfpred_device_at,
 * perfpred_device_find, perfpred_device_describe): each descriptor's figures and what calibrates
 * it (its own layer models, the ones it borrows, a graph-level or in-network correction, the
 * GPU runtime stacks fitted on its rows). */
#include <string.h>

#include "predictor/calib.h"
#include "predictor/predictor.h"

static int mig_max_instances(const pp_device *d)
{
    if (!d->is_mig || d->mig_compute_slices <= 0 || d->mig_memory_slices <= 0) return 0;
    int a = d->mig_total_compute / d->mig_compute_slices;
    int b = d->mig_total_memory / d->mig_memory_slices;
    return a < b ? a : b;
}

static void fill_info(const perfpred_ctx *ctx, const pp_device *d, perfpred_device_info *o)
{
    memset(o, 0, sizeof *o);
    o->name = d->name;
    o->description = d->description;
    o->kind = pp_device_kind_name(d->kind);
    o->parent = d->parent ? d->parent->name : NULL;
    o->mig_profile = d->mig_profile;
    o->mig_compute_slices = d->mig_compute_slices;
    o->mig_memory_slices = d->mig_memory_slices;
    o->mig_max_instances = mig_max_instances(d);
    o->memory_gb = d->memory_gb;
    double tf = d->peak_tflops[d->runtime_precision];
    o->peak_tflops = tf > 0 ? tf : d->peak_tflops[PP_PREC_FP32];
    o->memory_bandwidth_gbs = d->memory_bandwidth_gbs;
    o->runtime = d->runtime_framework;
    o->precision = pp_precision_name(d->runtime_precision);
    const char *src = NULL;
    const pp_device *cs = pp_calib_source_device(pp_ctx_calib(ctx), d, &src);
    o->calibrated_latency = cs != NULL;
    o->calibration_source = cs ? src : NULL;
    o->calibration_device = cs ? cs->name : NULL;
    const char *gsrc = NULL;
    int gnn_targets = 0;
    if (pp_calib_has_gnn(pp_ctx_calib(ctx), d, &gsrc, &gnn_targets)) {
        o->graph_correction = 1;
        o->calibrated_energy = gnn_targets > 1;
        if (!o->calibration_source) o->calibration_source = gsrc;
    }
    o->overhead_correction = pp_calib_overhead(pp_ctx_calib(ctx), d, NULL) != NULL;
    o->stacks = pp_ctx_stack_text(ctx, d);
}

int perfpred_device_count(const perfpred_ctx *ctx)
{
    return ctx ? pp_devices_count(pp_ctx_db(ctx)) : 0;
}

perfpred_status perfpred_device_at(const perfpred_ctx *ctx, int i, perfpred_device_info *out)
{
    if (!ctx || !out || i < 0 || i >= pp_devices_count(pp_ctx_db(ctx)))
        return PERFPRED_ERR_INVALID_ARG;
    fill_info(ctx, pp_devices_at(pp_ctx_db(ctx), i), out);
    return PERFPRED_OK;
}

perfpred_status perfpred_device_find(const perfpred_ctx *ctx, const char *name,
                                     perfpred_device_info *out)
{
    if (!ctx || !name || !out) return PERFPRED_ERR_INVALID_ARG;
    const pp_device *d = pp_devices_find(pp_ctx_db(ctx), name);
    if (!d) return PERFPRED_ERR_DEVICE;
    fill_info(ctx, d, out);
    return PERFPRED_OK;
}

char *perfpred_device_describe(const perfpred_ctx *ctx, const char *name)
{
    if (!ctx || !name) return NULL;
    const pp_device *d = pp_devices_find(pp_ctx_db(ctx), name);
    return d ? pp_device_to_yaml(d) : NULL;
}
