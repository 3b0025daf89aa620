/* predictor/power.c: GPU board power from the fitted sweep figures (power.h). */
#include "predictor/power.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static const pp_gpu_power *fitted(const pp_power_set *set, const pp_device *d)
{
    for (int i = 0; d && i < set->n; i++)
        if (pp_device_named(d, set->g[i].device)) return &set->g[i];
    return NULL;
}

static double family_pj(const pp_power_set *set, pp_memory_family f)
{
    if (f > PP_MEMFAM_UNKNOWN && f <= PP_MEMFAM_DDR && set->pj_per_byte_family[f] > 0)
        return set->pj_per_byte_family[f];
    /* an unknown or unfitted family: the mean of the fitted ones */
    double s = 0;
    int n = 0;
    for (int i = 1; i < 5; i++)
        if (set->pj_per_byte_family[i] > 0) s += set->pj_per_byte_family[i], n++;
    return n ? s / n : 0;
}

int pp_power_for(const pp_power_set *set, const pp_device *d, pp_power_params *out)
{
    memset(out, 0, sizeof *out);
    if (!set || set->n == 0 || !(d->max_power_w > 0)) return 0;
    out->max_w = d->max_power_w;
    const pp_gpu_power *g = fitted(set, d);
    if (g) {
        out->p0_w = g->p0_w;
        out->pj_per_byte = g->pj_per_byte;
        out->pj_per_flop = g->pj_per_flop;
        out->calibrated = 1;
        out->how = "board power fitted on this GPU's measured roofline sweep (gpu-benches); tensor "
                   "cores at full rate taken to reach max power";
        return 1;
    }
    const pp_gpu_power *pg = d->is_mig && d->parent ? fitted(set, d->parent) : NULL;
    if (pg && d->parent->max_power_w > 0) {
        /* a slice: the parent's energy per byte and per flop, its static share by compute */
        out->p0_w = pg->p0_w * d->max_power_w / d->parent->max_power_w;
        out->pj_per_byte = pg->pj_per_byte;
        out->pj_per_flop = pg->pj_per_flop;
        out->how = "board power of the parent GPU (fitted on its roofline sweep, gpu-benches), "
                   "static power shared by compute slices";
        return 1;
    }
    pp_memory_family f = pp_memory_family_of(d->memory_type);
    out->p0_w = set->idle_fraction * d->max_power_w;
    out->pj_per_byte = family_pj(set, f);
    out->pj_per_flop = set->pj_per_flop;
    out->how = f != PP_MEMFAM_UNKNOWN && set->pj_per_byte_family[f] > 0
                   ? "board power transferred from the GPUs of gpu-benches' roofline sweep "
                     "through this descriptor's max power and memory type"
                   : "board power transferred from the GPUs of gpu-benches' roofline sweep "
                     "through this descriptor's max power (its memory type was not fitted: "
                     "the mean energy per byte)";
    return 1;
}

double pp_power_w(const pp_power_params *pw, double bw_gbs, double gflops)
{
    double p = pw->p0_w + pw->pj_per_byte * bw_gbs * 1e-3 + pw->pj_per_flop * gflops * 1e-3;
    return pw->max_w > 0 && p > pw->max_w ? pw->max_w : p;
}

double pp_stack_energy_mj(const pp_stack *s, const pp_device *d, const pp_power_params *pw,
                          const pp_stack_kernel *k, int n, const double *scratch, double T_ms,
                          double *dyn_mj)
{
    const double *tc = scratch + 2 * n, *tm = scratch + 3 * n;
    double bf = pp_stack_byte_scale(s);
    double room_w = pw->max_w - pw->p0_w, dyn = 0;
    int fa = pp_stack_fused_attention(s, d);
    for (int i = 0; i < n; i++) {
        int role = pp_stack_role(s, fa, &k[i]);
        if (role == 0) continue;
        double fl, by;
        pp_stack_kernel_work(fa, &k[i], &fl, &by);
        double peak = pp_stack_kernel_peak_tflops(s, d, &k[i]);
        /* a convolution or matrix product at the rate it reaches on its units takes the board
         * to its power limit (its operands stream through shared memory and registers every
         * step, where the sweep's fp32 FMAs keep theirs in registers); other kernels pay the
         * sweep's energy per flop */
        double reach = pp_stack_compute_reach(s, d, &k[i]);
        double pj_flop =
            reach > 0 && peak > 0 && room_w > 0 ? room_w / (peak * reach) : pw->pj_per_flop;
        int fused = role == 1;
        /* pJ x 1e-9 = mJ; an epilogue computes in its producer and moves nothing of its own */
        double e = (pj_flop * fl + (fused ? 0 : pw->pj_per_byte * by * bf)) * 1e-9;
        if (!fused && room_w > 0) {
            double t = isfinite(k[i].cal_ms) ? k[i].cal_ms
                                             : pp_stack_time_from_units(
                                                   s, k[i].cls, pp_stack_kernel_share(s, d, &k[i]),
                                                   tc[i], tm[i], pp_stack_kernel_need(s, d, &k[i]));
            if (e > room_w * t) e = room_w * t; /* W x ms = mJ: the board throttles above max */
        }
        dyn += e;
    }
    if (dyn_mj) *dyn_mj = dyn;
    return pw->p0_w * T_ms + dyn;
}

/* ------------------------------------------------------------------ JSON ---- */

static perfpred_status parse(const cJSON *o, const char *path, pp_power_set *s, pp_err *err)
{
    perfpred_status st;
    if ((st = pp_artifact_num(o, path, "idle_fraction", 0, 1, &s->idle_fraction, err)) ||
        (st = pp_artifact_num(o, path, "pj_per_flop", 0, 1e4, &s->pj_per_flop, err)) ||
        (st = pp_artifact_str(o, path, "source", s->source, sizeof s->source, err)))
        return st;
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(o, "pj_per_byte");
    if (!cJSON_IsObject(fam))
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: field 'pj_per_byte' missing (an object by memory family)", path);
    for (int f = 1; f < 5; f++) {
        const char *name = pp_memory_family_name((pp_memory_family)f);
        if (!cJSON_GetObjectItemCaseSensitive(fam, name)) continue; /* not fitted */
        char what[48];
        snprintf(what, sizeof what, "pj_per_byte.%s", name);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(fam, name);
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || v->valuedouble > 1e4)
            return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: field '%s' outside (0, 1e4]", path,
                              what);
        s->pj_per_byte_family[f] = v->valuedouble;
    }
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(o, "gpus");
    if (!cJSON_IsArray(gpus) || cJSON_GetArraySize(gpus) < 1 ||
        cJSON_GetArraySize(gpus) > PP_POWER_MAX_GPUS)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: field 'gpus' must list 1 to %d GPUs",
                          path, PP_POWER_MAX_GPUS);
    const cJSON *e;
    cJSON_ArrayForEach(e, gpus)
    {
        pp_gpu_power *g = &s->g[s->n];
        double pts = 0, fitted_p0 = 0;
        if ((st = pp_artifact_str(e, path, "device", g->device, sizeof g->device, err)) ||
            (st = pp_artifact_num(e, path, "p0_w", 0, 1e5, &g->p0_w, err)) ||
            (st = pp_artifact_num(e, path, "pj_per_byte", 0, 1e4, &g->pj_per_byte, err)) ||
            (st = pp_artifact_num(e, path, "pj_per_flop", 0, 1e4, &g->pj_per_flop, err)) ||
            (st = pp_artifact_num(e, path, "p0_fitted", 0, 1, &fitted_p0, err)) ||
            (st = pp_artifact_num(e, path, "points", 1, 1e9, &pts, err)) ||
            (st = pp_artifact_num(e, path, "fit_mape_pct", 0, 1e4, &g->fit_mape_pct, err)))
            return st;
        g->p0_fitted = fitted_p0 > 0.5;
        g->points = (int)pts;
        s->n++;
    }
    return PERFPRED_OK;
}

perfpred_status pp_power_load(const char *path, pp_power_set *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *text;
    size_t len;
    perfpred_status st = pp_read_file(path, &text, &len, err);
    if (st) return st;
    if (len > (1u << 20)) {
        free(text);
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: larger than 1 MiB", path);
    }
    cJSON *o = cJSON_ParseWithLength((const char *)text, len);
    free(text);
    if (!o) return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: not valid JSON", path);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "power");
    st = cJSON_IsObject(p) ? parse(p, path, out, err)
                           : pp_err_set(err, PERFPRED_ERR_MODEL, "%s: no 'power' object", path);
    cJSON_Delete(o);
    if (st) memset(out, 0, sizeof *out);
    return st;
}

perfpred_status pp_power_set_load(const char *config_dir, pp_power_set *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/artifacts/gpu-power.json", config_dir) >= (int)sizeof path)
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: config path too long", config_dir);
    FILE *f = fopen(path, "rb");
    if (!f) return PERFPRED_OK; /* no artifact: energy stays the descriptor's estimate */
    fclose(f);
    return pp_power_load(path, out, err);
}

perfpred_status pp_power_save(const pp_power_set *s, const char *path, const char *report_json,
                              pp_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *p = root ? cJSON_AddObjectToObject(root, "power") : NULL;
    cJSON *fam = p ? cJSON_AddObjectToObject(p, "pj_per_byte") : NULL;
    cJSON *gpus = p ? cJSON_AddArrayToObject(p, "gpus") : NULL;
    if (!fam || !gpus) goto nomem;
    cJSON_AddNumberToObject(p, "idle_fraction", s->idle_fraction);
    cJSON_AddNumberToObject(p, "pj_per_flop", s->pj_per_flop);
    cJSON_AddStringToObject(p, "source", s->source);
    for (int f = 1; f < 5; f++)
        if (s->pj_per_byte_family[f] > 0)
            cJSON_AddNumberToObject(fam, pp_memory_family_name((pp_memory_family)f),
                                    s->pj_per_byte_family[f]);
    for (int i = 0; i < s->n; i++) {
        const pp_gpu_power *g = &s->g[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) goto nomem;
        cJSON_AddItemToArray(gpus, e);
        cJSON_AddStringToObject(e, "device", g->device);
        cJSON_AddNumberToObject(e, "p0_w", g->p0_w);
        cJSON_AddNumberToObject(e, "pj_per_byte", g->pj_per_byte);
        cJSON_AddNumberToObject(e, "pj_per_flop", g->pj_per_flop);
        cJSON_AddNumberToObject(e, "p0_fitted", g->p0_fitted);
        cJSON_AddNumberToObject(e, "points", g->points);
        cJSON_AddNumberToObject(e, "fit_mape_pct", g->fit_mape_pct);
    }
    return pp_artifact_write(root, report_json, path, err);
nomem:
    cJSON_Delete(root);
    return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
}
