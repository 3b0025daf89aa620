/* cli/compare.c: --json through the library's JSON entry point (perfpred_json), and `compare`,
 * whose table is printed from that same answer: rows sorted by latency, Pareto flags, each
 * latency's interval and whether its ranking against the next row is decided; --plot draws it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static cJSON *request_of(const cli_opts *o, const char *command)
{
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "command", command);
    if (o->model) cJSON_AddStringToObject(q, "model", o->model);
    int list = strcmp(command, "compare") == 0;
    if (o->n_devices == 1 && !list) {
        cJSON_AddStringToObject(q, "device", o->devices[0]);
    } else if (o->n_devices > 0) {
        cJSON *d = cJSON_AddArrayToObject(q, "device");
        for (int i = 0; i < o->n_devices; i++) cJSON_AddItemToArray(d, cJSON_CreateString(o->devices[i]));
    }
    if (o->n_batches == 1 && !list) {
        cJSON_AddNumberToObject(q, "batch", (double)o->batches[0]);
    } else if (o->n_batches > 0) {
        cJSON *b = cJSON_AddArrayToObject(q, "batch");
        for (int i = 0; i < o->n_batches; i++)
            cJSON_AddItemToArray(b, cJSON_CreateNumber((double)o->batches[i]));
    }
    if (o->n_inputs > 0) {
        cJSON *in = cJSON_AddObjectToObject(q, "inputs");
        for (int i = 0; i < o->n_inputs; i++) {
            cJSON *d = cJSON_AddArrayToObject(in, o->inputs[i].name);
            for (int k = 0; k < o->inputs[i].rank; k++)
                cJSON_AddItemToArray(d, cJSON_CreateNumber((double)o->inputs[i].dims[k]));
        }
    }
    if (o->layers) cJSON_AddTrueToObject(q, "layers");
    if (o->runtime) cJSON_AddStringToObject(q, "runtime", o->runtime);
    if (o->precision) cJSON_AddStringToObject(q, "precision", o->precision);
    if (o->slo_ms > 0) cJSON_AddNumberToObject(q, "slo_ms", o->slo_ms);
    if (o->layer_sum_only) cJSON_AddTrueToObject(q, "layer_sum_only");
    if (o->allow_unknown) cJSON_AddTrueToObject(q, "allow_unknown");
    if (o->all) cJSON_AddTrueToObject(q, "all");
    return q;
}

/* The answer text (perfpred_free), or NULL after printing the library's message. */
static char *json_text(const cli_opts *o, const perfpred_ctx *ctx, const char *command, int *rc)
{
    cJSON *q = request_of(o, command);
    char *req = q ? cJSON_PrintUnformatted(q) : NULL;
    cJSON_Delete(q);
    *rc = EXIT_OK_;
    if (!req) {
        cli_error("out of memory");
        *rc = EXIT_INTERNAL;
        return NULL;
    }
    char err[1024] = "";
    perfpred_status st;
    char *ans = perfpred_json(ctx, req, &st, err, sizeof err);
    free(req);
    if (!ans) {
        cli_error("%s", err);
        *rc = cli_exit_code(st);
    }
    return ans;
}

cJSON *cli_json_answer(const cli_opts *o, const perfpred_ctx *ctx, const char *command, int *rc)
{
    char *t = json_text(o, ctx, command, rc);
    if (!t) return NULL;
    cJSON *a = cJSON_Parse(t);
    perfpred_free(t);
    if (!a) {
        cli_error("internal error: the library's JSON answer does not parse");
        *rc = EXIT_INTERNAL;
    }
    return a;
}

int cli_run_json(const cli_opts *o, const perfpred_ctx *ctx, const char *command)
{
    int rc;
    char *t = json_text(o, ctx, command, &rc);
    if (t) puts(t);
    perfpred_free(t);
    return rc;
}

void cli_print_interval(const perfpred_interval *iv, const char *unit)
{
    if (iv->n > 0)
        printf("  %-12s [%.3f, %.3f] %s, %.0f %% interval (%s path, %d held-out rows; cross-fitted "
               "check %.1f %% inside)\n",
               "", iv->lo, iv->hi, unit, 100 * iv->coverage, iv->path ? iv->path : "?", iv->n,
               iv->checked_pct);
    else
        printf("  %-12s %s\n", "", iv->source ? iv->source : "no interval");
}

/* ------------------------------------------------------------------ compare ---- */

static double num_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsString(x) ? x->valuestring : "";
}

static void fmt_num(double v, const char *f, char *buf, size_t n)
{
    if (isfinite(v)) snprintf(buf, n, f, v);
    else snprintf(buf, n, "-");
}

static void print_compare(const cli_opts *o, const cJSON *ans)
{
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(ans, "rows");
    int nr = cJSON_GetArraySize(rows), undecided = 0, one_thread = 0;
    printf("%s: %d predictions, sorted by latency; * = Pareto-optimal in (latency, energy, "
           "memory)\n\n", o->model, nr);
    printf("  %-34s %6s %11s %-21s %10s %11s %11s %-4s %-11s %s\n", "device", "batch", "latency ms",
           "80 % interval", "items/s", "energy mJ", "peak mem", "fits", "latency is",
           "faster than next?");
    for (const cJSON *r = rows ? rows->child : NULL; r; r = r->next) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "prediction");
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(p, "latency");
        const cJSON *iv = cJSON_GetObjectItemCaseSensitive(lat, "interval");
        char l[32], in[48], thr[32], e[32], mem[32];
        fmt_num(num_at(lat, "value", NULL), "%.3f", l, sizeof l);
        double lo = num_at(iv, "lo", NULL), hi = num_at(iv, "hi", NULL);
        if (isfinite(lo) && isfinite(hi)) snprintf(in, sizeof in, "[%.3f, %.3f]", lo, hi);
        else snprintf(in, sizeof in, "none");
        fmt_num(num_at(r, "throughput_per_s", NULL), "%.1f", thr, sizeof thr);
        fmt_num(num_at(p, "energy", "value"), "%.3f", e, sizeof e);
        cli_fmt_bytes(num_at(p, "peak_memory", "value"), mem, sizeof mem);
        double cov = num_at(p, "covered_kernels", NULL); /* absent where none */
        one_thread += cli_one_thread(str_at(r, "device", "kind"), str_at(r, "device", "runtime"),
                                     num_at(p, "calibrated_kernels", NULL) +
                                         (isfinite(cov) ? cov : 0));
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(r, "ranking");
        const char *vs = "";
        if (cJSON_IsObject(rk)) {
            int dec = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rk, "decided"));
            undecided += !dec;
            vs = dec ? "yes"
                 : strstr(str_at(rk, "why", NULL), "overlap") ? "not decided: overlap"
                                                              : "not decided: no interval";
        }
        printf("%c %-34.34s %6.0f %11s %-21s %10s %11s %11s %-4s %-11s %s\n",
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "pareto")) ? '*' : ' ',
               str_at(r, "device", "name"), num_at(p, "batch", NULL), l, in, thr, e, mem,
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "fits_in_memory")) ? "yes" : "NO",
               str_at(lat, "provenance", NULL), vs);
    }
    printf("\nintervals: 80 %% split-conformal, from held-out whole-model rows (GPUs: the stack's "
           "leave-one-GPU-out fits; none: uncalibrated estimates, estimated hosts and devices "
           "without such rows); a row is "
           "decided faster than the next only where both intervals exist and do not overlap%s\n",
           undecided ? " (elsewhere the order above is within what perfpred can tell)" : "");
    printf("energy and memory carry their own provenance (--json); memory on GPUs with a runtime "
           "stack is device memory in use (NVML), elsewhere an estimate; '-' = not available (the "
           "descriptor lacks the figures: see perfpred devices show NAME)\n");
    if (one_thread)
        printf("eager-PyTorch CPU rows are one thread's, as the CPU layer models were timed\n");
}

/* A --plot path that cannot work fails before any prediction: its suffix, and its folder. */
static int check_plot_path(const char *path)
{
    size_t L = strlen(path);
    if (L < 5 || (strcmp(path + L - 4, ".svg") != 0 && strcmp(path + L - 4, ".png") != 0)) {
        cli_error("--plot: %s: the file name must end in .svg or .png", path);
        return EXIT_USAGE;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (access(dir, W_OK) != 0) {
        cli_error("--plot: cannot write %s: %s", path, strerror(errno));
        return EXIT_INPUT;
    }
    return EXIT_OK_;
}

int cmd_compare(const cli_opts *o)
{
    int rc = o->plot ? check_plot_path(o->plot) : 0;
    if (rc) return rc;
    perfpred_ctx *ctx = cli_open_ctx(o, &rc);
    if (!ctx) return rc;
    char *text = json_text(o, ctx, "compare", &rc);
    perfpred_ctx_close(ctx);
    if (!text) return rc;
    cJSON *ans = o->json ? NULL : cJSON_Parse(text);
    if (o->json) {
        puts(text);
    } else if (!ans) {
        cli_error("internal error: the library's JSON answer does not parse");
        rc = EXIT_INTERNAL;
    } else {
        print_compare(o, ans);
    }
    cJSON_Delete(ans);
    if (!rc && o->plot) {
        char err[1024] = "";
        perfpred_status st = perfpred_compare_plot(text, o->plot, o->plot_y, err, sizeof err);
        if (st) {
            cli_error("%s", err);
            rc = cli_exit_code(st);
        } else if (!o->json) {
            printf("plot: %s\n", o->plot);
        }
    }
    perfpred_free(text);
    return rc;
}
