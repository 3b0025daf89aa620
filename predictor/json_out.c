/* predictor/json_out.c: the documented --json objects (docs/json.md) built from the public structs:
 * DEVICE, PREDICTION (figures with their intervals), MIG, kernels, and compare's rows with their
 * Pareto flags and whether each ranking is decided. Used by perfpred_json (json_api.c) only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predictor/json_out.h"

cJSON *pp_json_num(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *pp_json_device(const perfpred_device_info *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "description", d->description ? d->description : "");
    cJSON_AddStringToObject(o, "kind", d->kind);
    if (d->parent) cJSON_AddStringToObject(o, "mig_parent", d->parent);
    if (d->mig_profile) {
        cJSON_AddStringToObject(o, "mig_profile", d->mig_profile);
        cJSON_AddNumberToObject(o, "mig_compute_slices", d->mig_compute_slices);
        cJSON_AddNumberToObject(o, "mig_memory_slices", d->mig_memory_slices);
        cJSON_AddNumberToObject(o, "mig_max_instances", d->mig_max_instances);
    }
    cJSON_AddNumberToObject(o, "memory_gb", d->memory_gb);
    cJSON_AddNumberToObject(o, "peak_tflops", d->peak_tflops);
    cJSON_AddNumberToObject(o, "memory_bandwidth_gbs", d->memory_bandwidth_gbs);
    cJSON_AddStringToObject(o, "runtime", d->runtime ? d->runtime : "");
    cJSON_AddStringToObject(o, "precision", d->precision ? d->precision : "");
    cJSON_AddBoolToObject(o, "calibrated_latency", d->calibrated_latency);
    cJSON_AddBoolToObject(o, "calibrated_energy", d->calibrated_energy);
    cJSON_AddBoolToObject(o, "calibrated_memory", d->calibrated_memory);
    cJSON_AddBoolToObject(o, "graph_correction", d->graph_correction);
    cJSON_AddBoolToObject(o, "overhead_correction", d->overhead_correction);
    if (d->calibration_source)
        cJSON_AddStringToObject(o, "calibration_source", d->calibration_source);
    if (d->calibration_device)
        cJSON_AddStringToObject(o, "calibration_device", d->calibration_device);
    if (d->stacks) cJSON_AddStringToObject(o, "stacks", d->stacks);
    return o;
}

/* INTERVAL = { "lo", "hi", "coverage", "n", "path", "log_lo", "log_hi", "checked_inside_pct",
 * "source" }; lo, hi, coverage null and n 0 when there is none (source says why) */
static cJSON *json_interval(const perfpred_interval *iv)
{
    cJSON *o = cJSON_CreateObject();
    int has = iv->n > 0;
    cJSON_AddItemToObject(o, "lo", pp_json_num(has ? iv->lo : NAN));
    cJSON_AddItemToObject(o, "hi", pp_json_num(has ? iv->hi : NAN));
    cJSON_AddItemToObject(o, "coverage", pp_json_num(has ? iv->coverage : NAN));
    cJSON_AddNumberToObject(o, "n", iv->n);
    if (has) {
        cJSON_AddStringToObject(o, "path", iv->path ? iv->path : "");
        cJSON_AddNumberToObject(o, "log_lo", iv->log_lo);
        cJSON_AddNumberToObject(o, "log_hi", iv->log_hi);
        cJSON_AddItemToObject(o, "checked_inside_pct", pp_json_num(iv->checked_pct));
    }
    cJSON_AddStringToObject(o, "source", iv->source ? iv->source : "");
    return o;
}

static cJSON *json_figure(const perfpred_figure *f, const char *unit, const perfpred_interval *iv)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "value", pp_json_num(f->value));
    cJSON_AddStringToObject(o, "unit", unit);
    cJSON_AddStringToObject(o, "provenance", perfpred_provenance_str(f->prov));
    cJSON_AddStringToObject(o, "source", f->source ? f->source : "");
    if (iv) {
        cJSON_AddItemToObject(o, "interval", json_interval(iv));
    } else {
        perfpred_interval none = {NAN, NAN, 0, NAN, NAN, 0, NAN, NULL,
                                  "no interval: only latencies carry one"};
        cJSON_AddItemToObject(o, "interval", json_interval(&none));
    }
    return o;
}

cJSON *pp_json_prediction(const perfpred_prediction *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", p->device);
    cJSON_AddNumberToObject(o, "batch", (double)p->batch);
    cJSON *lat = json_figure(&p->latency_ms, "ms", &p->latency_interval);
    if (p->correction_members > 1) {
        cJSON *m = cJSON_AddObjectToObject(lat, "members");
        cJSON_AddNumberToObject(m, "n", p->correction_members);
        cJSON_AddNumberToObject(m, "lo", p->latency_members_lo_ms);
        cJSON_AddNumberToObject(m, "hi", p->latency_members_hi_ms);
        cJSON_AddBoolToObject(m, "gated", p->correction_gated);
    }
    cJSON_AddItemToObject(o, "latency", lat);
    cJSON_AddItemToObject(o, "energy", json_figure(&p->energy_mj, "mJ", NULL));
    cJSON_AddItemToObject(o, "peak_memory", json_figure(&p->peak_memory_bytes, "bytes", NULL));
    cJSON *mb = cJSON_AddObjectToObject(o, "memory_breakdown");
    cJSON_AddNumberToObject(mb, "weights_bytes", p->weights_bytes);
    cJSON_AddNumberToObject(mb, "activations_bytes", p->activations_bytes);
    cJSON_AddNumberToObject(mb, "workspace_bytes", p->workspace_bytes);
    cJSON_AddNumberToObject(mb, "runtime_bytes", p->runtime_bytes);
    cJSON_AddNumberToObject(o, "memory_capacity_bytes", p->memory_capacity_bytes);
    cJSON_AddBoolToObject(o, "fits_in_memory", p->fits_in_memory);
    cJSON_AddNumberToObject(o, "kernels", p->n_kernels);
    cJSON_AddNumberToObject(o, "calibrated_kernels", p->n_calibrated_kernels);
    if (p->n_covered_kernels > 0)
        cJSON_AddNumberToObject(o, "covered_kernels", p->n_covered_kernels);
    if (p->stack) {
        cJSON *s = cJSON_AddObjectToObject(o, "stack");
        cJSON_AddStringToObject(s, "name", p->stack);
        cJSON_AddNumberToObject(s, "host_ms", p->host_ms);
        cJSON_AddNumberToObject(s, "launched_kernels", p->n_launched_kernels);
        cJSON_AddNumberToObject(s, "gpu_ms", p->gpu_ms);
        cJSON_AddNumberToObject(mb, "allocator_peak_bytes", p->allocator_peak_bytes);
    }
    return o;
}

cJSON *pp_json_kernels(const perfpred_model *m, const perfpred_kernel *ks, int nk, double total)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < nk; i++) {
        cJSON *k = cJSON_CreateObject();
        perfpred_layer_info L = perfpred_model_layer(m, ks[i].first_node);
        cJSON_AddStringToObject(k, "name", L.name);
        cJSON_AddStringToObject(k, "ops", ks[i].ops);
        cJSON_AddStringToObject(k, "kind", ks[i].kind);
        cJSON_AddNumberToObject(k, "latency_ms", ks[i].latency_ms);
        cJSON_AddNumberToObject(k, "share", total > 0 ? ks[i].latency_ms / total : 0);
        cJSON_AddNumberToObject(k, "flops", ks[i].flops);
        cJSON_AddNumberToObject(k, "bytes", ks[i].bytes);
        cJSON_AddStringToObject(k, "bound", ks[i].memory_bound ? "memory" : "compute");
        cJSON_AddStringToObject(k, "provenance", perfpred_provenance_str(ks[i].prov));
        cJSON_AddItemToArray(arr, k);
    }
    return arr;
}

cJSON *pp_json_mig_advice(const perfpred_mig_advice *a, const char *gpu)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "gpu", gpu);
    if (a->slo_ms > 0) cJSON_AddNumberToObject(root, "slo_ms", a->slo_ms);
    else cJSON_AddNullToObject(root, "slo_ms");
    cJSON *arr = cJSON_AddArrayToObject(root, "profiles");
    for (int i = 0; i < a->n_options; i++) {
        const perfpred_mig_option *op = &a->options[i];
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "device", pp_json_device(&op->device));
        cJSON_AddItemToObject(r, "prediction", pp_json_prediction(&op->pred));
        cJSON_AddBoolToObject(r, "fits", op->fits);
        cJSON_AddBoolToObject(r, "meets_slo", op->meets_slo);
        cJSON_AddNumberToObject(r, "instances", op->instances);
        cJSON_AddItemToArray(arr, r);
    }
    if (a->dippm_choice >= 0)
        cJSON_AddStringToObject(root, "memory_rule_choice", a->options[a->dippm_choice].device.name);
    else cJSON_AddNullToObject(root, "memory_rule_choice");
    if (a->slo_choice >= 0)
        cJSON_AddStringToObject(root, "slo_choice", a->options[a->slo_choice].device.name);
    else cJSON_AddNullToObject(root, "slo_choice");
    cJSON_AddNumberToObject(root, "max_instances_under_slo", a->max_instances_under_slo);
    return root;
}

/* ------------------------------------------------------------------ compare ---- */

/* a dominates b when it is no worse on every figure both have and better on one; a row without a
 * latency neither dominates nor is Pareto-optimal */
static int dominates(const pp_cmp_row *a, const pp_cmp_row *b)
{
    if (!isfinite(a->p.latency_ms.value)) return 0;
    double av[3] = {a->p.latency_ms.value, a->p.energy_mj.value, a->p.peak_memory_bytes.value};
    double bv[3] = {b->p.latency_ms.value, b->p.energy_mj.value, b->p.peak_memory_bytes.value};
    int better = 0;
    for (int k = 0; k < 3; k++) {
        if (!isfinite(av[k]) || !isfinite(bv[k])) continue;
        if (av[k] > bv[k]) return 0;
        if (av[k] < bv[k]) better = 1;
    }
    return better;
}

/* by latency; rows without one (uncalibrated device lacking figures) last */
static int cmp_rows(const void *a, const void *b)
{
    const pp_cmp_row *x = a, *y = b;
    int fx = isfinite(x->p.latency_ms.value), fy = isfinite(y->p.latency_ms.value);
    if (fx != fy) return fy - fx;
    if (!fx) return strcmp(x->dev.name, y->dev.name);
    return (x->p.latency_ms.value > y->p.latency_ms.value) -
           (x->p.latency_ms.value < y->p.latency_ms.value);
}

/* Whether a row's latency is below the next one's with its interval: decided when both have an
 * interval and they are disjoint; not decided when they overlap or one has none. */
static cJSON *json_ranking(const pp_cmp_row *a, const pp_cmp_row *b)
{
    cJSON *o = cJSON_CreateObject();
    const perfpred_interval *x = &a->p.latency_interval, *y = &b->p.latency_interval;
    const char *why;
    int decided = 0;
    if (!isfinite(a->p.latency_ms.value) || !isfinite(b->p.latency_ms.value)) {
        why = "a latency is missing";
    } else if (x->n == 0 || y->n == 0) {
        why = "no interval on one side: the ranking rests on bare numbers";
    } else if (x->hi < y->lo) {
        decided = 1;
        why = "the intervals do not overlap";
    } else {
        why = "the intervals overlap";
    }
    cJSON_AddStringToObject(o, "next", b->dev.name);
    cJSON_AddNumberToObject(o, "next_batch", (double)b->p.batch);
    cJSON_AddBoolToObject(o, "decided", decided);
    cJSON_AddStringToObject(o, "why", why);
    return o;
}

cJSON *pp_json_compare(const char *model, pp_cmp_row *rows, int nr)
{
    for (int i = 0; i < nr; i++) {
        rows[i].pareto = isfinite(rows[i].p.latency_ms.value);
        for (int j = 0; j < nr && rows[i].pareto; j++)
            if (j != i && dominates(&rows[j], &rows[i])) rows[i].pareto = 0;
    }
    qsort(rows, (size_t)nr, sizeof *rows, cmp_rows);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", model);
    cJSON *arr = cJSON_AddArrayToObject(root, "rows");
    for (int i = 0; arr && i < nr; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "device", pp_json_device(&rows[i].dev));
        cJSON_AddItemToObject(r, "prediction", pp_json_prediction(&rows[i].p));
        double lat = rows[i].p.latency_ms.value;
        cJSON_AddItemToObject(r, "throughput_per_s",
                              pp_json_num(isfinite(lat) && lat > 0 ? 1e3 * (double)rows[i].p.batch / lat
                                                                   : NAN));
        cJSON_AddBoolToObject(r, "pareto", rows[i].pareto);
        if (i + 1 < nr) cJSON_AddItemToObject(r, "ranking", json_ranking(&rows[i], &rows[i + 1]));
        else cJSON_AddNullToObject(r, "ranking");
        cJSON_AddItemToArray(arr, r);
    }
    return root;
}
