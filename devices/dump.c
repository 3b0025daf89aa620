/* devices/dump.c: pp_device_to_yaml writes a resolved descriptor as a self-contained YAML
 * document in the schema of configs/devices/README.md: inherited fields are written out (the base
 * is named in a comment), a MIG slice carries a mig_instance: section naming its parent, and a
 * parent GPU lists its profiles. Numbers use the shortest form that reads back to the same double. */
#include "devices/devices_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_num(FILE *f, double v)
{
    char buf[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    fputs(buf, f);
}

/* Double-quoted YAML scalar. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p < 0x20) fprintf(f, "\\x%02x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void put_rules(FILE *f, const char *key, const pp_fusion_rule *rules, int n)
{
    fprintf(f, "  %s: [", key);
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s%s[", r ? ", " : "", rules[r].max_input_rank ? "{ops: " : "");
        for (int k = 0; k < rules[r].len; k++) fprintf(f, "%s%s", k ? ", " : "", rules[r].ops[k]);
        fputc(']', f);
        if (rules[r].max_input_rank) fprintf(f, ", max_input_rank: %d}", rules[r].max_input_rank);
    }
    fputs("]\n", f);
}

static void put_kv(FILE *f, const char *indent, const char *key, double v)
{
    fprintf(f, "%s%s: ", indent, key);
    put_num(f, v);
    fputc('\n', f);
}

char *pp_device_to_yaml(const pp_device *d)
{
    if (!d || !d->name) return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;

    fprintf(f, "# %s: resolved by perfpred (inherited and derived fields written out)\n", d->name);
    if (d->source_file) fprintf(f, "# from %s\n", d->source_file);
    if (d->base && !d->is_mig) fprintf(f, "# base: %s (flattened into the fields below)\n", d->base);
    if (d->is_mig)
        fputs("# MIG slice: SMs and memory per the profile table; bandwidth and L2 x m/M; peak\n"
              "# FLOP/s x SMs/parent SMs; power x g/G (an assumption: no per-slice power is "
              "published)\n",
              f);
    fprintf(f, "name: %s\n", d->name);
    fputs("aliases: [", f);
    for (int i = 0; i < d->n_aliases; i++) fprintf(f, "%s%s", i ? ", " : "", d->aliases[i]);
    fputs("]\n", f);
    fputs("description: ", f);
    put_str(f, d->description ? d->description : d->name);
    fputc('\n', f);
    if (d->vendor) {
        fputs("vendor: ", f);
        put_str(f, d->vendor);
        fputc('\n', f);
    }
    fprintf(f, "kind: %s\n", pp_device_kind_name(d->kind));

    fputs("hardware:\n  peak_tflops:\n", f);
    for (int p = 0; p < PP_PREC__COUNT; p++)
        put_kv(f, "    ", pp_precision_name((pp_precision)p), d->peak_tflops[p]);
    if (d->peak_fp16_acc16_tflops > 0) put_kv(f, "    ", "fp16_acc16", d->peak_fp16_acc16_tflops);
    put_kv(f, "  ", "memory_bandwidth_gbs", d->memory_bandwidth_gbs);
    if (d->stream_bandwidth_gbs > 0)
        put_kv(f, "  ", "stream_bandwidth_gbs", d->stream_bandwidth_gbs);
    put_kv(f, "  ", "memory_gb", d->memory_gb);
    fprintf(f, "  compute_units: %d\n", d->compute_units);
    put_kv(f, "  ", "clock_mhz", d->clock_mhz);
    put_kv(f, "  ", "l2_mb", d->l2_mb);
    put_kv(f, "  ", "idle_power_w", d->idle_power_w);
    put_kv(f, "  ", "max_power_w", d->max_power_w);
    if (d->compute_capability > 0) put_kv(f, "  ", "compute_capability", d->compute_capability);
    if (d->memory_type) fprintf(f, "  memory_type: %s\n", d->memory_type);

    fputs("runtime:\n", f);
    if (d->runtime_framework) fprintf(f, "  framework: %s\n", d->runtime_framework);
    fprintf(f, "  precision: %s\n", pp_precision_name(d->runtime_precision));
    put_kv(f, "  ", "launch_overhead_us", d->launch_overhead_us);
    put_kv(f, "  ", "runtime_memory_overhead_mb", d->runtime_memory_overhead_mb);
    put_kv(f, "  ", "workspace_mb", d->workspace_mb);
    if (d->gemm_gflops > 0) put_kv(f, "  ", "gemm_gflops", d->gemm_gflops);
    if (d->conv_call_us > 0) put_kv(f, "  ", "conv_call_us", d->conv_call_us);
    if (d->host_dispatch_scale > 0)
        put_kv(f, "  ", "host_dispatch_scale", d->host_dispatch_scale);
    if (d->host_dispatch_source)
        fprintf(f, "  host_dispatch_source: %s\n", pp_host_source_name(d->host_dispatch_source));
    put_rules(f, "fusion", d->fusion, d->n_fusion);
    if (d->n_composite) put_rules(f, "composite_ops", d->composite, d->n_composite);

    if (d->is_mig) {
        const char *parent = d->parent ? d->parent->name : d->base;
        fputs("mig_instance:\n", f);
        if (parent) fprintf(f, "  parent: %s\n", parent);
        if (d->mig_profile) fprintf(f, "  profile: %s\n", d->mig_profile);
        fprintf(f, "  compute_slices: %d\n  memory_slices: %d\n", d->mig_compute_slices,
                d->mig_memory_slices);
        fprintf(f, "  total_compute_slices: %d\n  total_memory_slices: %d\n", d->mig_total_compute,
                d->mig_total_memory);
    }
    if (d->n_mig_profiles > 0) {
        fprintf(f, "mig:\n  total_compute_slices: %d\n  total_memory_slices: %d\n  profiles:\n",
                d->mig_total_compute, d->mig_total_memory);
        for (int i = 0; i < d->n_mig_profiles; i++) {
            const pp_mig_profile *p = &d->mig_profiles[i];
            fprintf(f, "    - {name: %s, compute_slices: %d, memory_slices: %d, memory_gb: ",
                    p->name, p->compute_slices, p->memory_slices);
            put_num(f, p->memory_gb);
            fprintf(f, ", compute_units: %d}\n", p->compute_units);
        }
    }
    if (d->artifacts_dir) {
        fputs("artifacts: ", f);
        put_str(f, d->artifacts_dir);
        fputc('\n', f);
    }
    /* a comment, like base: the dump stands alone, and the named descriptor may not be beside it */
    if (d->calibration_from)
        fprintf(f, "# calibration_from: %s (its layer models answer, scaled to this device)\n",
                d->calibration_from);
    fprintf(f, "hostable: %s\n", d->hostable ? "true" : "false");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
