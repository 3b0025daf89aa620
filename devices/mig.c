/* devices/mig.c: MIG profiles as derived descriptors. A slice with g of G compute slices and m of
 * M memory slices gets: memory, L2 and bandwidth x m/M (memory as stated by the profile where it
 * says so), the SM count stated by the profile, peak FLOP/s x SMs/parent SMs, power x g/G (an
 * assumption: NVIDIA publishes no per-slice power). Also generates the short names
 * "<parent alias>-mig-<g>g" (smallest-memory profile with that g) and "<alias>-mig-<profile>". */
#include "devices/devices_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<g>g.<n>gb" with an optional "+<suffix>" (e.g. "1g.10gb+me"); returns g or -1. */
static int profile_g(const char *s)
{
    char *end;
    long g = strtol(s, &end, 10);
    if (end == s || g <= 0 || g > 64 || end[0] != 'g' || end[1] != '.') return -1;
    const char *p = end + 2;
    if (*p < '0' || *p > '9') return -1;
    while (*p >= '0' && *p <= '9') p++;
    if (p[0] != 'g' || p[1] != 'b') return -1;
    p += 2;
    if (*p == '+') {
        p++;
        if (!*p) return -1;
        while (*p >= 'a' && *p <= 'z') p++;
    }
    return *p ? -1 : (int)g;
}

static char *cat3(pp_arena *a, const char *x, const char *y, const char *z)
{
    size_t n = strlen(x) + strlen(y) + strlen(z) + 1;
    char *s = pp_arena_alloc(a, n);
    if (s) snprintf(s, n, "%s%s%s", x, y, z);
    return s;
}

/* first[i] = the index of the first profile named like profile i (i itself when it is the
 * first): one sort of (name, index) pairs, n log n where a pairwise check was quadratic (20,000
 * profiles took seconds). -1 when out of memory. */
typedef struct named_index {
    const char *name;
    int i;
} named_index;

static int by_name_then_index(const void *x, const void *y)
{
    const named_index *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

static int first_of_names(const pp_dev_src *src, int *first)
{
    int n = src->n_profiles;
    named_index *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return -1;
    for (int i = 0; i < n; i++) v[i] = (named_index){src->profiles[i].name, i};
    qsort(v, (size_t)n, sizeof *v, by_name_then_index);
    for (int k = 0, g = 0; k < n; k++) {
        if (k > 0 && strcmp(v[k].name, v[g].name) != 0) g = k;
        first[v[k].i] = v[g].i;
    }
    free(v);
    return 0;
}

perfpred_status pp_dev_mig_derive(pp_arena *a, const pp_dev_src *src, pp_device *P,
                                  pp_device *out, pp_err *err)
{
    const int G = src->mig_total_compute, M = src->mig_total_memory;
    if (P->kind != PP_DEV_GPU)
        return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, src->mig_at,
                             "'%s': mig profiles are only valid on kind gpu", P->name);
    if (P->compute_units <= 0 || P->memory_gb <= 0 || P->memory_bandwidth_gbs <= 0)
        return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, src->mig_at,
                             "'%s': mig needs hardware.compute_units, memory_gb and "
                             "memory_bandwidth_gbs on the parent to scale slices from",
                             P->name);
    pp_mig_profile *prof = pp_arena_array(a, (size_t)src->n_profiles, sizeof *prof);
    int *first = pp_arena_array(a, (size_t)src->n_profiles, sizeof *first);
    if (!prof || !first || first_of_names(src, first) != 0)
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", P->name);

    for (int i = 0; i < src->n_profiles; i++) {
        const pp_dev_mig_src *p = &src->profiles[i];
        int g = profile_g(p->name);
        if (g < 0)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, p->at,
                                 "MIG profile name '%s' is not of the form <g>g.<n>gb", p->name);
        if (g != p->g)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, p->at,
                                 "MIG profile '%s' names %d compute slices but compute_slices is %d",
                                 p->name, g, p->g);
        if (p->g > G || p->m > M)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, p->at,
                                 "MIG profile '%s' uses %d/%d compute and %d/%d memory slices: "
                                 "more than the GPU has",
                                 p->name, p->g, G, p->m, M);
        if (p->compute_units > P->compute_units)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, p->at,
                                 "MIG profile '%s' has %d compute_units, more than the %d of '%s'",
                                 p->name, p->compute_units, P->compute_units, P->name);
        if (p->memory_gb > P->memory_gb)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, p->at,
                                 "MIG profile '%s' has memory_gb %g, more than the %g of '%s'",
                                 p->name, p->memory_gb, P->memory_gb, P->name);
        if (first[i] != i)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, p->at,
                                 "duplicate MIG profile '%s' (first at line %d)", p->name,
                                 src->profiles[first[i]].at.line);

        double fm = (double)p->m / M, fg = (double)p->g / G;
        double fsm = (double)p->compute_units / P->compute_units;
        pp_device *d = &out[i];
        *d = *P;
        memset(d->aliases, 0, sizeof d->aliases);
        d->n_aliases = 0;
        d->artifacts_dir = NULL;
        d->calibration_from = NULL;
        d->hostable = 0;
        d->mig_profiles = NULL;
        d->n_mig_profiles = 0;
        d->name = cat3(a, P->name, "-mig-", p->name);
        char desc[512];
        snprintf(desc, sizeof desc, "%s, MIG %s (%d/%d compute, %d/%d memory slices)",
                 P->description, p->name, p->g, G, p->m, M);
        d->description = pp_arena_strdup(a, desc);
        if (!d->name || !d->description)
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", P->name);
        d->base = P->name;
        d->parent = P;
        d->is_mig = 1;
        d->mig_compute_slices = p->g;
        d->mig_memory_slices = p->m;
        d->mig_total_compute = G;
        d->mig_total_memory = M;
        d->mig_profile = p->name;
        d->compute_units = p->compute_units;
        d->memory_gb = p->memory_gb > 0 ? p->memory_gb : P->memory_gb * fm;
        d->memory_bandwidth_gbs = P->memory_bandwidth_gbs * fm;
        d->stream_bandwidth_gbs = P->stream_bandwidth_gbs * fm;
        d->l2_mb = P->l2_mb * fm;
        for (int k = 0; k < PP_PREC__COUNT; k++) d->peak_tflops[k] = P->peak_tflops[k] * fsm;
        d->peak_fp16_acc16_tflops = P->peak_fp16_acc16_tflops * fsm;
        d->idle_power_w = P->idle_power_w * fg;
        d->max_power_w = P->max_power_w * fg;

        prof[i].name = p->name;
        prof[i].compute_slices = p->g;
        prof[i].memory_slices = p->m;
        prof[i].memory_gb = d->memory_gb;
        prof[i].compute_units = p->compute_units;
    }
    P->mig_profiles = prof;
    P->n_mig_profiles = src->n_profiles;
    P->mig_total_compute = G;
    P->mig_total_memory = M;
    return PERFPRED_OK;
}

/* Among profiles with the same g: fewest memory slices, then a name without '+' (media
 * extensions), then the first listed. */
static int is_representative(const pp_dev_src *src, int i)
{
    const pp_dev_mig_src *p = &src->profiles[i];
    for (int j = 0; j < src->n_profiles; j++) {
        const pp_dev_mig_src *q = &src->profiles[j];
        if (j == i || q->g != p->g) continue;
        if (q->m < p->m) return 0;
        if (q->m == p->m) {
            int pp = strchr(p->name, '+') != NULL, qp = strchr(q->name, '+') != NULL;
            if (qp < pp || (qp == pp && j < i)) return 0;
        }
    }
    return 1;
}

static perfpred_status emit(pp_device *d, const char *key, pp_dev_pos at, pp_dev_alias_fn add,
                            void *user)
{
    if (!key) return PERFPRED_ERR_NOMEM;
    if (d->n_aliases < PP_DEV_MAX_ALIASES) d->aliases[d->n_aliases++] = key;
    return add(key, d, at, user);
}

perfpred_status pp_dev_mig_aliases(pp_arena *a, const pp_dev_src *src, const pp_device *P,
                                   pp_device *slices, pp_dev_alias_fn add, void *user)
{
    const char *bases[PP_DEV_MAX_ALIASES + 1];
    int nb = 0;
    bases[nb++] = P->name;
    for (int i = 0; i < P->n_aliases; i++) bases[nb++] = P->aliases[i];

    for (int i = 0; i < src->n_profiles; i++) {
        const pp_dev_mig_src *p = &src->profiles[i];
        pp_device *d = &slices[i];
        perfpred_status st;
        if (is_representative(src, i)) {
            char suffix[32];
            snprintf(suffix, sizeof suffix, "-mig-%dg", p->g);
            for (int b = 0; b < nb; b++)
                if ((st = emit(d, cat3(a, bases[b], suffix, ""), p->at, add, user)))
                    return st;
        }
        for (int b = 1; b < nb; b++)
            if ((st = emit(d, cat3(a, bases[b], "-mig-", p->name), p->at, add, user)))
                return st;
    }
    return PERFPRED_OK;
}
