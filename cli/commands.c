/* cli/commands.c: inspect, predict, compare, mig and devices: load through the public API, print
 * a table or one JSON object (schema: docs/json.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* ---------------------------------------------------------------- formatting ---- */

const char *cli_fmt_count(double v, char *buf, size_t n)
{
    if (!isfinite(v)) snprintf(buf, n, "-");
    else if (fabs(v) >= 1e12) snprintf(buf, n, "%.2fT", v / 1e12);
    else if (fabs(v) >= 1e9) snprintf(buf, n, "%.2fG", v / 1e9);
    else if (fabs(v) >= 1e6) snprintf(buf, n, "%.2fM", v / 1e6);
    else if (fabs(v) >= 1e3) snprintf(buf, n, "%.2fK", v / 1e3);
    else snprintf(buf, n, "%.0f", v);
    return buf;
}

int cli_one_thread(const char *kind, const char *runtime, double layer_kernels)
{
    return kind && strcmp(kind, "cpu") == 0 && runtime && strcmp(runtime, "pytorch-eager") == 0 &&
           layer_kernels > 0;
}

const char *cli_fmt_bytes(double v, char *buf, size_t n)
{
    if (!isfinite(v)) snprintf(buf, n, "-");
    else if (v >= 1073741824.0) snprintf(buf, n, "%.2f GiB", v / 1073741824.0);
    else if (v >= 1048576.0) snprintf(buf, n, "%.2f MiB", v / 1048576.0);
    else if (v >= 1024.0) snprintf(buf, n, "%.1f KiB", v / 1024.0);
    else snprintf(buf, n, "%.0f B", v);
    return buf;
}

static const char *fmt_dims(int rank, const int64_t *dims, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int d = 0; d < rank && off < n; d++)
        off += (size_t)snprintf(buf + off, n - off, "%s%lld", d ? "x" : "", (long long)dims[d]);
    if (rank == 0) snprintf(buf, n, "scalar");
    return buf;
}

void cli_print_json(cJSON *root)
{
    char *s = cJSON_Print(root);
    if (s) {
        puts(s);
        free(s);
    }
    cJSON_Delete(root);
}

/* ------------------------------------------------------------------ loading ---- */

perfpred_model *cli_load_model(const cli_opts *o, int64_t batch, int *exit_code)
{
    perfpred_model_params p = perfpred_model_default_params();
    /* a symbolic batch dim defaults to 1 when --batch is not given (documented in --help) */
    p.batch = batch > 0 ? batch : 1;
    p.inputs = o->inputs;
    p.n_inputs = o->n_inputs;
    p.allow_unknown = o->allow_unknown;
    char err[1024];
    perfpred_status st;
    perfpred_model *m = perfpred_model_load(o->model, &p, &st, err, sizeof err);
    if (!m) {
        cli_error("%s", err);
        *exit_code = cli_exit_code(st);
    }
    return m;
}

perfpred_ctx *cli_open_ctx(const cli_opts *o, int *exit_code)
{
    perfpred_ctx_params p = perfpred_ctx_default_params();
    p.config_dir = o->config_dir;
    char err[1024];
    perfpred_status st;
    perfpred_ctx *ctx = perfpred_ctx_open(&p, &st, err, sizeof err);
    if (!ctx) {
        cli_error("%s", err);
        *exit_code = cli_exit_code(st);
    }
    return ctx;
}

/* ------------------------------------------------------------------ inspect ---- */

static void list_unknown_ops(const perfpred_model *m, FILE *f)
{
    int n = perfpred_model_n_layers(m), first = 1;
    for (int i = 0; i < n; i++) {
        perfpred_layer_info L = perfpred_model_layer(m, i);
        if (!L.unknown_op) continue;
        fprintf(f, "%s%s (%s)", first ? "note: unknown ops treated as element-wise: " : ", ",
                L.name, L.op_type);
        first = 0;
    }
    if (!first) fputc('\n', f);
}

int cmd_inspect(const cli_opts *o)
{
    int rc = 0;
    perfpred_model *m = cli_load_model(o, o->n_batches ? o->batches[0] : 0, &rc);
    if (!m) return rc;
    perfpred_model_totals T = perfpred_model_get_totals(m);
    int n = perfpred_model_n_layers(m);
    if (o->json) {
        perfpred_model_free(m);
        return cli_run_json(o, NULL, "inspect");
    } else {
        char b1[32], b2[32], b3[32], b4[32], sh[96];
        printf("model: %s\n", o->model);
        for (int i = 0; i < perfpred_model_n_inputs(m); i++) {
            int rank;
            int64_t dims[PERFPRED_MAX_RANK];
            const char *name = perfpred_model_input(m, i, &rank, dims);
            printf("input: %s %s\n", name, fmt_dims(rank, dims, sh, sizeof sh));
        }
        printf("\n%-4s %-36s %-20s %-10s %-18s %10s %10s %10s\n", "#", "name", "op", "kind",
               "output", "MACs", "params", "out bytes");
        int shown = 0;
        for (int i = 0; i < n; i++) {
            perfpred_layer_info L = perfpred_model_layer(m, i);
            if (L.folded && !o->all) continue;
            printf("%-4d %-36.36s %-20.20s %-10s %-18.18s %10s %10s %10s\n", shown++, L.name,
                   L.op_type, L.kind, fmt_dims(L.out_rank, L.out_dims, sh, sizeof sh),
                   cli_fmt_count((double)L.macs, b1, sizeof b1),
                   cli_fmt_count((double)L.params, b2, sizeof b2),
                   cli_fmt_bytes((double)L.out_bytes, b3, sizeof b3));
        }
        printf("\n%d layers (%lld nodes, %d folded shape-arithmetic nodes hidden%s)\n", shown,
               (long long)T.n_nodes, n - shown, o->all ? ", shown with --all" : "; --all shows them");
        printf("params:           %s (%s)\n", cli_fmt_count((double)T.params, b1, sizeof b1),
               cli_fmt_bytes((double)T.param_bytes, b2, sizeof b2));
        printf("MACs:             %s\n", cli_fmt_count((double)T.macs, b1, sizeof b1));
        printf("FLOPs:            %s\n", cli_fmt_count((double)T.flops, b1, sizeof b1));
        printf("activations:      %s written, peak live %s\n",
               cli_fmt_bytes((double)T.activation_bytes, b3, sizeof b3),
               cli_fmt_bytes((double)T.peak_activation_bytes, b4, sizeof b4));
        list_unknown_ops(m, stdout);
    }
    perfpred_model_free(m);
    return EXIT_OK_;
}

/* ------------------------------------------------------------------ predict ---- */

static int cmp_kernel_time(const void *a, const void *b)
{
    const perfpred_kernel *x = a, *y = b;
    return (x->latency_ms < y->latency_ms) - (x->latency_ms > y->latency_ms);
}

static void print_figure_line(const char *label, const char *value, const perfpred_figure *f)
{
    printf("  %-12s %-14s [%s: %s]\n", label, value, perfpred_provenance_str(f->prov),
           f->source ? f->source : "");
}

static void print_prediction(const perfpred_prediction *p, const perfpred_device_info *d)
{
    char v[64], b1[32], b2[32], b3[32], b4[32];
    if (isfinite(p->latency_ms.value)) snprintf(v, sizeof v, "%.3f ms", p->latency_ms.value);
    else snprintf(v, sizeof v, "-");
    print_figure_line("latency", v, &p->latency_ms);
    cli_print_interval(&p->latency_interval, "ms");
    if (p->correction_members > 1)
        printf("  %-12s %.3f to %.3f ms from the %d GNNs one by one (%s)\n", "",
               p->latency_members_lo_ms, p->latency_members_hi_ms, p->correction_members,
               p->correction_gated ? "they disagree more than on any validation network: the "
                                     "correction is not applied"
                                   : "how much they disagree");
    if (isfinite(p->energy_mj.value)) snprintf(v, sizeof v, "%.3f mJ", p->energy_mj.value);
    else snprintf(v, sizeof v, "-");
    print_figure_line("energy", v, &p->energy_mj);
    print_figure_line("peak memory", cli_fmt_bytes(p->peak_memory_bytes.value, v, sizeof v),
                      &p->peak_memory_bytes);
    if (p->stack) {
        printf("  %-12s context %s + weights %s + activations and workspace %s + allocator cache %s\n",
               "",
               cli_fmt_bytes(p->runtime_bytes, b4, sizeof b4),
               cli_fmt_bytes(p->weights_bytes, b1, sizeof b1),
               cli_fmt_bytes(p->activations_bytes, b2, sizeof b2),
               cli_fmt_bytes(p->workspace_bytes, b3, sizeof b3));
        printf("  %-12s allocator peak (torch max_memory_allocated) %s\n", "",
               cli_fmt_bytes(p->allocator_peak_bytes, b1, sizeof b1));
    } else {
        printf("  %-12s weights %s + activations %s + workspace %s + runtime %s\n", "",
               cli_fmt_bytes(p->weights_bytes, b1, sizeof b1),
               cli_fmt_bytes(p->activations_bytes, b2, sizeof b2),
               cli_fmt_bytes(p->workspace_bytes, b3, sizeof b3),
               cli_fmt_bytes(p->runtime_bytes, b4, sizeof b4));
    }
    if (d->memory_gb > 0)
        printf("  %-12s %s %.2f GiB of device memory\n", "", p->fits_in_memory ? "fits in" : "DOES NOT FIT in",
               d->memory_gb);
    /* a CPU borrowing another's layer models (calibration_from): their kernels are transferred */
    char cover[96] = "";
    if (p->n_covered_kernels > 0)
        snprintf(cover, sizeof cover, ", %d by other calibrated CPUs' models (transferred)",
                 p->n_covered_kernels);
    if (!p->stack && !d->mig_profile && d->calibration_device && d->name &&
        strcmp(d->calibration_device, d->name) != 0)
        printf("  %-12s %d kernels, %d timed by %s's layer models (transferred)%s\n", "kernels",
               p->n_kernels, p->n_calibrated_kernels, d->calibration_device, cover);
    else
        printf("  %-12s %d kernels, %d calibrated%s\n", "kernels", p->n_kernels,
               p->n_calibrated_kernels, cover);
    if (p->stack && p->n_launched_kernels != p->n_kernels)
        printf("  %-12s %d kernels a call under %s (BatchNorm passes, casts: in their ops' rows)\n",
               "launched", p->n_launched_kernels, p->stack);
    if (p->stack)
        printf("  %-12s host issues the ops in %.3f ms/call, the GPU runs them in %.3f ms: %s\n",
               "pipeline", p->host_ms, p->gpu_ms,
               p->host_ms > p->gpu_ms ? "host-bound (the GPU waits for the dispatch)"
                                      : "GPU-bound");
}

static int mig_parent_of(const perfpred_device_info *d, char *buf, size_t n)
{
    if (d->parent) {
        snprintf(buf, n, "%s", d->parent);
        return 1;
    }
    return 0;
}

static void print_mig_advice(const perfpred_mig_advice *a, const char *gpu);

int cmd_predict(const cli_opts *o)
{
    int rc = 0;
    perfpred_ctx *ctx = cli_open_ctx(o, &rc);
    if (!ctx) return rc;
    if (o->json) {
        rc = cli_run_json(o, ctx, "predict");
        perfpred_ctx_close(ctx);
        return rc;
    }
    perfpred_device_info dev;
    if (perfpred_device_find(ctx, o->devices[0], &dev) != PERFPRED_OK) {
        cli_error("unknown device '%s' (perfpred devices lists them)", o->devices[0]);
        perfpred_ctx_close(ctx);
        return EXIT_DEVICE;
    }
    perfpred_model *m = cli_load_model(o, o->n_batches ? o->batches[0] : 0, &rc);
    if (!m) {
        perfpred_ctx_close(ctx);
        return rc;
    }
    int cap = perfpred_model_n_layers(m) + 1;
    perfpred_kernel *ks = calloc((size_t)cap, sizeof *ks);
    int nk = 0;
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.kernels = ks;
    pp.kernels_cap = cap;
    pp.n_kernels = &nk;
    pp.layer_sum_only = o->layer_sum_only;
    pp.runtime = o->runtime;
    pp.precision = o->precision;
    perfpred_prediction p;
    char err[1024];
    perfpred_status st = ks ? perfpred_predict(ctx, m, o->devices[0], &pp, &p, err, sizeof err)
                            : PERFPRED_ERR_NOMEM;
    if (st) {
        cli_error("%s", ks ? err : "out of memory");
        rc = cli_exit_code(st);
        goto out;
    }
    /* MIG advice when the device is an A100/H100 or one of its slices */
    char gpu[128] = "";
    perfpred_mig_advice adv;
    int have_adv = 0;
    if (mig_parent_of(&dev, gpu, sizeof gpu) || dev.kind[0] == 'g') {
        if (!gpu[0]) snprintf(gpu, sizeof gpu, "%s", dev.name);
        have_adv = perfpred_mig_advise_params(ctx, m, gpu, 0, &pp, &adv, err, sizeof err) ==
                   PERFPRED_OK;
    }
    if (nk > cap) nk = cap;
    double total = p.latency_ms.value;
    {
        if (p.stack)
            printf("%s on %s (%s), batch %lld, runtime stack %s\n", o->model, dev.name,
                   dev.description ? dev.description : "", (long long)p.batch, p.stack);
        else
            printf("%s on %s (%s), batch %lld, runtime %s %s%s\n", o->model, dev.name,
                   dev.description ? dev.description : "", (long long)p.batch,
                   dev.runtime ? dev.runtime : "-", dev.precision ? dev.precision : "",
                   cli_one_thread(dev.kind, dev.runtime,
                                  p.n_calibrated_kernels + p.n_covered_kernels)
                       ? ", one thread"
                       : "");
        print_prediction(&p, &dev);
        list_unknown_ops(m, stdout);
        if (o->layers) {
            qsort(ks, (size_t)nk, sizeof *ks, cmp_kernel_time);
            int top = o->layers < nk ? o->layers : nk;
            printf("\ntop %d of %d kernels by time:\n", top, nk);
            printf("  %-36s %-24s %-9s %10s %7s %-7s %s\n", "first node", "ops", "kind", "ms",
                   "share", "bound", "provenance");
            for (int i = 0; i < top; i++) {
                perfpred_layer_info L = perfpred_model_layer(m, ks[i].first_node);
                printf("  %-36.36s %-24.24s %-9s %10.4f %6.1f%% %-7s %s\n", L.name, ks[i].ops,
                       ks[i].kind, ks[i].latency_ms,
                       total > 0 ? 100.0 * ks[i].latency_ms / total : 0,
                       ks[i].memory_bound ? "memory" : "compute", perfpred_provenance_str(ks[i].prov));
            }
        }
        if (have_adv) {
            printf("\n");
            print_mig_advice(&adv, gpu);
        }
    }
out:
    free(ks);
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    return rc;
}

/* ---------------------------------------------------------------------- mig ---- */

static void print_mig_advice(const perfpred_mig_advice *a, const char *gpu)
{
    char b1[32], e[32];
    printf("MIG profiles of %s%s:\n", gpu, a->slo_ms > 0 ? "" : " (no --slo-ms given)");
    printf("  %-16s %5s %9s %11s %11s %12s %-5s %-4s %9s\n", "profile", "g/7", "memory", "latency ms",
           "energy mJ", "peak mem", "fits", "SLO", "instances");
    for (int i = 0; i < a->n_options; i++) {
        const perfpred_mig_option *op = &a->options[i];
        if (isfinite(op->pred.energy_mj.value)) snprintf(e, sizeof e, "%.3f", op->pred.energy_mj.value);
        else snprintf(e, sizeof e, "-");
        char mem[32];
        snprintf(mem, sizeof mem, "%.2f GiB", op->device.memory_gb);
        printf("  %-16s %5d %9s %11.3f %11s %12s %-5s %-4s %9d\n",
               op->device.mig_profile ? op->device.mig_profile : op->device.name,
               op->device.mig_compute_slices, mem, op->pred.latency_ms.value, e,
               cli_fmt_bytes(op->pred.peak_memory_bytes.value, b1, sizeof b1),
               op->fits ? "yes" : "no", a->slo_ms > 0 ? (op->meets_slo ? "yes" : "no") : "-",
               op->instances);
    }
    if (a->dippm_choice >= 0)
        printf("memory rule (DIPPM): smallest profile that holds the predicted peak memory: %s\n",
               a->options[a->dippm_choice].device.name);
    else printf("memory rule (DIPPM): no profile holds the predicted peak memory\n");
    if (a->slo_ms > 0) {
        if (a->slo_choice >= 0)
            printf("latency SLO %.3f ms: smallest profile that meets it: %s; one GPU hosts up to %d "
                   "instances under the SLO\n",
                   a->slo_ms, a->options[a->slo_choice].device.name, a->max_instances_under_slo);
        else printf("latency SLO %.3f ms: no profile meets it\n", a->slo_ms);
    } else if (a->dippm_choice >= 0) {
        printf("one GPU hosts up to %d instances of the model (memory rule)\n",
               a->max_instances_under_slo);
    }
}

int cmd_mig(const cli_opts *o)
{
    int rc = 0;
    if (o->n_devices > 1) {
        cli_error("mig: one GPU with --device (default a100)");
        return EXIT_USAGE;
    }
    perfpred_ctx *ctx = cli_open_ctx(o, &rc);
    if (!ctx) return rc;
    if (o->json) {
        rc = cli_run_json(o, ctx, "mig");
        perfpred_ctx_close(ctx);
        return rc;
    }
    const char *gpu = o->n_devices ? o->devices[0] : "a100";
    perfpred_model *m = cli_load_model(o, o->n_batches ? o->batches[0] : 0, &rc);
    if (!m) {
        perfpred_ctx_close(ctx);
        return rc;
    }
    perfpred_mig_advice a;
    char err[1024];
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.runtime = o->runtime;
    pp.precision = o->precision;
    perfpred_status st =
        perfpred_mig_advise_params(ctx, m, gpu, o->slo_ms, &pp, &a, err, sizeof err);
    if (st) {
        cli_error("%s", err);
        rc = cli_exit_code(st);
    } else {
        printf("%s, batch %lld\n", o->model, a.n_options ? (long long)a.options[0].pred.batch : 0LL);
        print_mig_advice(&a, gpu);
        printf("latency: %s; memory: %s; energy: %s\n",
               a.n_options ? perfpred_provenance_str(a.options[0].pred.latency_ms.prov) : "-",
               a.n_options ? perfpred_provenance_str(a.options[0].pred.peak_memory_bytes.prov)
                           : "-",
               a.n_options ? perfpred_provenance_str(a.options[0].pred.energy_mj.prov) : "-");
    }
    perfpred_model_free(m);
    perfpred_ctx_close(ctx);
    return rc;
}

/* ------------------------------------------------------------------ devices ---- */

/* the "calibrated" column: what answers for this device's latency (and energy) */
static const char *cal_text_base(const perfpred_device_info *d, char *buf, size_t n)
{
    if (d->graph_correction)
        snprintf(buf, n, "%s (graph-level correction)",
                 d->calibrated_energy ? "latency, energy" : "latency");
    else if (d->overhead_correction)
        snprintf(buf, n, "latency (in-network overhead correction)");
    else if (d->calibrated_latency && strcmp(d->calibration_device, d->name) == 0)
        snprintf(buf, n, "latency");
    else if (d->calibrated_latency)
        snprintf(buf, n, "latency (scaled from %s)", d->calibration_device);
    else if (d->peak_tflops > 0 && d->memory_bandwidth_gbs > 0)
        snprintf(buf, n, "no (roofline estimate)");
    else
        snprintf(buf, n, "no (descriptor lacks rates)");
    return buf;
}

static const char *cal_text(const perfpred_device_info *d, char *buf, size_t n)
{
    /* GPUs: how many of their runtime stacks were fitted on their own rows */
    int own = 0, all = 0;
    for (const char *p = d->stacks; p && (p = strchr(p, '(')); p++) {
        all++;
        own += strncmp(p, "(calibrated)", 12) == 0;
    }
    size_t len = strlen(cal_text_base(d, buf, n));
    if (all && len < n)
        snprintf(buf + len, n - len, "; runtime stacks fitted on its rows: %d of %d", own, all);
    return buf;
}

int cmd_devices(const cli_opts *o)
{
    int rc = 0;
    perfpred_ctx *ctx = cli_open_ctx(o, &rc);
    if (!ctx) return rc;
    if (o->n_positional >= 1 && strcmp(o->positional[0], "show") == 0) {
        if (o->n_positional != 2) {
            cli_error("devices show: expected one device name");
            perfpred_ctx_close(ctx);
            return EXIT_USAGE;
        }
        perfpred_device_info d;
        if (perfpred_device_find(ctx, o->positional[1], &d) != PERFPRED_OK) {
            cli_error("unknown device '%s' (perfpred devices lists them)", o->positional[1]);
            perfpred_ctx_close(ctx);
            return EXIT_DEVICE;
        }
        if (o->json) {
            const char *one[1] = {o->positional[1]};
            cli_opts q = *o;
            memcpy(q.devices, one, sizeof one);
            q.n_devices = 1;
            int rc2 = cli_run_json(&q, ctx, "device");
            perfpred_ctx_close(ctx);
            return rc2;
        } else {
            char *y = perfpred_device_describe(ctx, o->positional[1]);
            if (y) fputs(y, stdout);
            perfpred_free(y);
            if (d.stacks) printf("# runtime stacks (--runtime, --precision): %s\n", d.stacks);
            /* autocast and bf16 are no fitted stacks: the fp16 ones, with autocast's casts, at
             * the bf16 rate (docs/gpu-stacks.md, "Autocast") */
            if (d.stacks && strstr(d.stacks, "pytorch-eager-fp16"))
                printf("# and from the fp16 stacks: --precision amp (PyTorch eager's autocast); "
                       "bf16 and amp-bf16 where the descriptor states a bf16 rate\n");
        }
        perfpred_ctx_close(ctx);
        return EXIT_OK_;
    }
    if (o->n_positional) {
        cli_error("devices: unknown argument '%s' (devices [show NAME])", o->positional[0]);
        perfpred_ctx_close(ctx);
        return EXIT_USAGE;
    }
    int n = perfpred_device_count(ctx);
    if (o->json) {
        rc = cli_run_json(o, ctx, "devices");
    } else {
        printf("%-38s %-8s %9s %10s %10s %-22s %s\n", "name", "kind", "memory", "peak TF/s",
               "BW GB/s", "runtime", "calibrated");
        for (int i = 0; i < n; i++) {
            perfpred_device_info d;
            perfpred_device_at(ctx, i, &d);
            char mem[32];
            if (d.memory_gb > 0) snprintf(mem, sizeof mem, "%.1f GiB", d.memory_gb);
            else snprintf(mem, sizeof mem, "-");
            char rt[64], calbuf[128];
            snprintf(rt, sizeof rt, "%s %s", d.runtime ? d.runtime : "-", d.precision ? d.precision : "");
            printf("%-38s %-8s %9s %10.2f %10.1f %-22.22s %s\n", d.name, d.kind, mem, d.peak_tflops,
                   d.memory_bandwidth_gbs, rt,
                   cal_text(&d, calbuf, sizeof calbuf));
        }
        printf("\n%d devices; `perfpred devices show NAME` prints one resolved descriptor and its "
               "GPU runtime stacks\n", n);
    }
    perfpred_ctx_close(ctx);
    return rc;
}
