/* cli/stacks.c: `perfpred calibrate fit-stacks`: fits the GPU runtime stacks on framework-tax-gpus
 * and prints each stack's figures with its leave-one-GPU-out errors (docs/gpu-stacks.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: perfpred calibrate fit-stacks --data DIR [options]\n"
    "  --data DIR        framework-tax-gpus (../shared/datasets/framework-tax-gpus)\n"
    "  --own-data DIR    the project's own GPUs in the same layout (data/gpu-stacks)\n"
    "  --models DIR      weightless torchvision ONNX exports (default tests/fixtures/models)\n"
    "  --stack NAME      one of pytorch-eager-fp32, pytorch-eager-fp16, torchscript-fp32,\n"
    "                    torchscript-fp16, tensorrt-fp32, tensorrt-fp16 (default: all six)\n"
    "  --gpus A,B        GPU files to read (file stems: 1080ti, 2080ti, 3090, A6000, RTX-8000,\n"
    "                    TitanX, v100; own: h100, h200); default all\n"
    "  --threads N       fits in parallel (default 1)\n"
    "  --no-holdout      skip the leave-one-GPU-out refits\n"
    "  --families        also leave each model family out (10 more fits per stack)\n"
    "  --max-evals N     optimiser evaluations per fit (default 4000)\n"
    "  --rows-dir DIR    write DIR/<stack>.csv: every row with its held-out prediction\n"
    "                    (with --families, also the fit without its family's)\n"
    "  --dry-run         report only; write no artifact\n"
    "  --config-dir DIR  where artifacts/stacks/<stack>.json is written\n"
    "  --json            the report as JSON\n";

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void print_report(const cJSON *all)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, all)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(r, "fitted");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(f, "host_us");
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(f, "efficiency");
        printf("%s: %g rows of %g models (%g skipped), GPUs %s\n",
               cJSON_GetObjectItemCaseSensitive(r, "stack")->valuestring, num(r, "rows"),
               num(r, "models"), num(r, "rows_skipped"),
               cJSON_GetObjectItemCaseSensitive(r, "trained_on")->valuestring);
        printf("  host us/op: call %.1f  conv %.1f  conv3x3 %.1f  depthwise %.1f  matmul %.1f  "
               "memory %.1f  batchnorm pass %.1f\n",
               num(f, "call_us"), num(h, "conv"), num(h, "conv3x3"), num(h, "depthwise"),
               num(h, "matmul"), num(h, "memory"), num(f, "host_bn_us"));
        printf("  efficiency: conv %.3f  conv3x3 %.3f  depthwise %.3f  matmul %.3f  bandwidth "
               "%.3f;  shortest kernel %.1f us;  workspace x%.2f\n",
               num(e, "conv"), num(e, "conv3x3"), num(e, "depthwise"), num(e, "matmul"),
               num(e, "memory"), num(f, "gpu_min_us"), num(f, "ws_factor"));
        printf("  tensor cores fed %.0f FLOP per SM per clock (0: no row on them);  share of "
               "efficiency on doubled fp32 lanes %.3f\n",
               num(f, "tensor_feed_flop_per_sm_clock"), num(f, "fp32_dual_issue_efficiency"));
        printf("  an SM streams %.1f bytes per clock from the DRAM\n",
               num(f, "memory_feed_bytes_per_sm_clock"));
        const cJSON *fs = cJSON_GetObjectItemCaseSensitive(f, "tensor_feed_source");
        if (cJSON_IsString(fs)) printf("  tensor feed %s\n", fs->valuestring);
        const cJSON *c;
        printf("  context MiB by compute capability:");
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(f, "context_mb"))
            printf("  %.1f%s: %.0f", num(c, "cc"), num(c, "current") > 0 ? "*" : "", num(c, "mb"));
        printf("\n  %-18s %5s | %12s %12s %10s | %9s %9s | %9s\n", "held-out GPU", "rows",
               "MAPE b<16 %", "MAPE b>=16 %", "memory %", "train %", "repeat %", "in 80% %");
        const cJSON *g;
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(r, "gpus"))
        {
            printf("  %-18s %5g | %12.1f %12.1f %10.1f | %9.1f %9.1f | %9.1f\n",
                   cJSON_GetObjectItemCaseSensitive(g, "device")->valuestring, num(g, "rows"),
                   num(g, "held_out_mape_batch_lt16_pct"), num(g, "held_out_mape_batch_ge16_pct"),
                   num(g, "held_out_mape_memory_pct"), num(g, "train_mape_latency_pct"),
                   num(g, "repeat_disagreement_pct"), num(g, "interval_coverage_pct"));
        }
        printf("  %-18s %5g | %12.1f %12.1f %10.1f | %9.1f %9.1f | %9.1f  (-1: none)\n",
               "pooled", num(r, "rows"), num(r, "leave_one_gpu_out_mape_batch_lt16_pct"),
               num(r, "leave_one_gpu_out_mape_batch_ge16_pct"),
               num(r, "leave_one_gpu_out_mape_memory_pct"), num(r, "train_mape_latency_pct"),
               num(r, "repeat_disagreement_pct"), num(r, "interval_coverage_pct"));
        if (cJSON_GetObjectItemCaseSensitive(r, "graph_rows"))
            printf("  replayed as CUDA graphs (the kernels alone; in no figure above): %g rows, "
                   "MAPE %.1f %% held out with their GPU, %.1f %% trained on\n",
                   num(r, "graph_rows"), num(r, "graph_held_out_mape_pct"),
                   num(r, "graph_train_mape_pct"));
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(r, "families");
        if (cJSON_IsArray(fam)) {
            printf("  %-18s %5s | %12s %12s %10s\n", "held-out family", "rows", "MAPE b<16 %",
                   "MAPE b>=16 %", "memory %");
            const cJSON *fr;
            cJSON_ArrayForEach(fr, fam)
                printf("  %-18s %5g | %12.1f %12.1f %10.1f\n",
                       cJSON_GetObjectItemCaseSensitive(fr, "family")->valuestring, num(fr, "rows"),
                       num(fr, "held_out_mape_batch_lt16_pct"),
                       num(fr, "held_out_mape_batch_ge16_pct"), num(fr, "held_out_mape_memory_pct"));
            printf("  %-18s %5s | %12.1f %12.1f %10.1f\n\n", "pooled (families)", "",
                   num(r, "leave_one_family_out_mape_batch_lt16_pct"),
                   num(r, "leave_one_family_out_mape_batch_ge16_pct"),
                   num(r, "leave_one_family_out_mape_memory_pct"));
        } else {
            printf("\n");
        }
    }
}

/* A fit's answer: its error, or its JSON report printed whole (json) or handed back in *out for
 * the caller to print as text and free. Returns the exit code. */
static int take_report(const char *cmd, perfpred_status st, char *text, const char *err, int json,
                       cJSON **out)
{
    *out = NULL;
    if (st) {
        cli_error("calibrate %s: %s", cmd, err);
        return cli_exit_code(st);
    }
    cJSON *r = cJSON_Parse(text);
    perfpred_free(text);
    if (!r) {
        cli_error("calibrate %s: report is not JSON (internal error)", cmd);
        return EXIT_INTERNAL;
    }
    if (json) cli_print_json(r);
    else *out = r;
    return EXIT_OK_;
}

/* One fit on a context of config_dir: what the library call takes, beside the context. */
typedef struct fit_call {
    const perfpred_stackfit_params *stacks;
    const char *data;
    int dry;
    const perfpred_host_params *host;
} fit_call;

typedef perfpred_status (*fit_fn)(const perfpred_ctx *ctx, const fit_call *a, char **text,
                                  char *err, size_t n);

static perfpred_status call_stacks(const perfpred_ctx *ctx, const fit_call *a, char **text,
                                   char *err, size_t n)
{
    return perfpred_calibrate_fit_stacks(ctx, a->stacks, text, err, n);
}

static perfpred_status call_power(const perfpred_ctx *ctx, const fit_call *a, char **text,
                                  char *err, size_t n)
{
    return perfpred_calibrate_fit_power(ctx, a->data, a->dry, text, err, n);
}

static perfpred_status call_host(const perfpred_ctx *ctx, const fit_call *a, char **text,
                                 char *err, size_t n)
{
    return perfpred_calibrate_host(ctx, a->host, text, err, n);
}

/* Opens the context, runs fn and takes its report (take_report). Returns the exit code. */
static int run_fit(const char *cmd, const char *config_dir, fit_fn fn, const fit_call *a, int json,
                   cJSON **out)
{
    *out = NULL;
    cli_opts o = {0};
    o.config_dir = config_dir;
    int code;
    perfpred_ctx *ctx = cli_open_ctx(&o, &code);
    if (!ctx) return code;
    char *text = NULL, err[1024];
    perfpred_status st = fn(ctx, a, &text, err, sizeof err);
    perfpred_ctx_close(ctx);
    return take_report(cmd, st, text, err, json, out);
}

enum {
    OPT_DATA = 256, OPT_OWN_DATA, OPT_MODELS, OPT_STACK, OPT_GPUS, OPT_ROWS_DIR, OPT_CONFIG_DIR,
    OPT_THREADS, OPT_MAX_EVALS, OPT_NO_HOLDOUT, OPT_FAMILIES, OPT_DRY_RUN, OPT_JSON, OPT_DEVICE,
    OPT_ROWS, OPT_WRITE, OPT_NAME
};

/* Values only as the next word: "--data=DIR" is an unknown argument here (no_equals). */
static const struct option stacks_options[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"own-data", required_argument, NULL, OPT_OWN_DATA},
    {"models", required_argument, NULL, OPT_MODELS},
    {"stack", required_argument, NULL, OPT_STACK},
    {"gpus", required_argument, NULL, OPT_GPUS},
    {"rows-dir", required_argument, NULL, OPT_ROWS_DIR},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"max-evals", required_argument, NULL, OPT_MAX_EVALS},
    {"no-holdout", no_argument, NULL, OPT_NO_HOLDOUT},
    {"families", no_argument, NULL, OPT_FAMILIES},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
};

int cli_fit_stacks_main(int argc, char **argv)
{
    perfpred_stackfit_params p = perfpred_stackfit_default_params();
    p.models_dir = "tests/fixtures/models";
    const char *config_dir = NULL;
    int json = 0;
    cli_getopt G;
    cli_getopt_init(&G, argc - 1, argv + 1, "-:h", stacks_options);
    G.no_equals = 1;
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        char *end;
        long v;
        switch (c) {
        case OPT_DATA: p.data_dir = optarg; break;
        case OPT_OWN_DATA: p.own_data_dir = optarg; break;
        case OPT_MODELS: p.models_dir = optarg; break;
        case OPT_STACK: p.stack = optarg; break;
        case OPT_GPUS: p.gpu_files = optarg; break;
        case OPT_ROWS_DIR: p.rows_dir = optarg; break;
        case OPT_CONFIG_DIR: config_dir = optarg; break;
        case OPT_THREADS:
        case OPT_MAX_EVALS:
            v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 1000000) {
                cli_error("calibrate fit-stacks: %s takes a whole number >= 1, not '%s'", G.word,
                          optarg);
                return EXIT_USAGE;
            }
            if (c == OPT_THREADS) p.threads = (int)v;
            else p.max_evals = (int)v;
            break;
        case OPT_NO_HOLDOUT: p.leave_one_out = 0; break;
        case OPT_FAMILIES: p.leave_family_out = 1; break;
        case OPT_DRY_RUN: p.dry_run = 1; break;
        case OPT_JSON: json = 1; break;
        case 'h': fputs(usage, stdout); return EXIT_OK_;
        default: /* a positional or unknown word, or an option without its value */
            cli_error("calibrate fit-stacks: unknown or incomplete argument '%s'\n%s", G.word,
                      usage);
            return EXIT_USAGE;
        }
    }
    if (!p.data_dir) {
        cli_error("calibrate fit-stacks: --data DIR is required\n%s", usage);
        return EXIT_USAGE;
    }
    cJSON *all;
    fit_call a = {.stacks = &p};
    int rc = run_fit("fit-stacks", config_dir, call_stacks, &a, json, &all);
    if (all) {
        print_report(all);
        cJSON_Delete(all);
    }
    return rc;
}

static const char power_usage[] =
    "usage: perfpred calibrate fit-power --data DIR [options]\n"
    "  --data DIR        gpu-benches (../shared/datasets/gpu-benches): reads gpu-roofline/*.txt\n"
    "  --dry-run         report only; write no artifact\n"
    "  --config-dir DIR  where artifacts/gpu-power.json is written\n"
    "  --json            the report as JSON\n";

static const struct option power_options[] = {
    {"data", required_argument, NULL, OPT_DATA},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
};

int cli_fit_power_main(int argc, char **argv)
{
    const char *data = NULL, *config_dir = NULL;
    int json = 0, dry = 0;
    cli_getopt G;
    cli_getopt_init(&G, argc - 1, argv + 1, "-:h", power_options);
    G.no_equals = 1;
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        switch (c) {
        case OPT_DATA: data = optarg; break;
        case OPT_CONFIG_DIR: config_dir = optarg; break;
        case OPT_DRY_RUN: dry = 1; break;
        case OPT_JSON: json = 1; break;
        case 'h': fputs(power_usage, stdout); return EXIT_OK_;
        default: /* a positional or unknown word, or an option without its value */
            cli_error("calibrate fit-power: unknown or incomplete argument '%s'\n%s", G.word,
                      power_usage);
            return EXIT_USAGE;
        }
    }
    if (!data) {
        cli_error("calibrate fit-power: --data DIR is required\n%s", power_usage);
        return EXIT_USAGE;
    }
    cJSON *r;
    fit_call a = {.data = data, .dry = dry};
    int rc = run_fit("fit-power", config_dir, call_power, &a, json, &r);
    if (!r) return rc;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(r, "fitted");
    printf("board power P = p0 + e_byte x DRAM bytes/s + e_flop x fp32 flop/s, at most max power\n"
           "transferred: p0 = %.3f x max power, e_flop %.2f pJ", num(f, "idle_fraction"),
           num(f, "pj_per_flop"));
    const cJSON *c;
    cJSON_ArrayForEach(c, f)
        if (strncmp(c->string, "pj_per_byte_", 12) == 0)
            printf(", e_byte %s %.1f pJ", c->string + 12, c->valuedouble);
    printf("\n  %-16s %-14s %6s %5s | %7s %7s %9s | %8s %8s\n", "GPU", "sweep file", "points",
           "thr.", "p0 W", "pJ/B", "pJ/flop", "fit %", "held %");
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(r, "gpus"))
    {
        printf("  %-16s %-14s %6g %5g | %7.1f%s %6.1f %9.2f | %8.1f %8.1f\n",
               cJSON_GetObjectItemCaseSensitive(g, "device")->valuestring,
               cJSON_GetObjectItemCaseSensitive(g, "file")->valuestring, num(g, "points"),
               num(g, "throttled_points"), num(g, "p0_w"),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(g, "p0_fitted")) ? " " : "*",
               num(g, "pj_per_byte"), num(g, "pj_per_flop"), num(g, "fit_mape_pct"),
               num(g, "held_out_mape_pct"));
    }
    printf("  leave one GPU out, pooled: %.1f %% (power of every sweep point, capped at max "
           "power)\n  * p0 from the transferred share: the sweep kept this GPU's traffic constant\n"
           "%s\n",
           num(r, "leave_one_gpu_out_mape_pct"),
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "written"))
               ? "written: artifacts/gpu-power.json"
               : "dry run: nothing written");
    cJSON_Delete(r);
    return EXIT_OK_;
}

static const char host_usage[] =
    "usage: perfpred calibrate host --device GPU --rows FILE.csv [options]\n"
    "  The dispatch speed of the machine that ran runners/stack_runner.py on GPU: the median,\n"
    "  over the host-bound batch-1 rows of resnet18, resnet50, resnext50_32x4d and\n"
    "  wide_resnet50_2 under eager fp32, of the host_dispatch_scale that makes the\n"
    "  pytorch-eager-fp32 stack predict the measured time (docs/gpu-stacks.md).\n"
    "  --device GPU      the GPU the rows were measured on (the whole GPU, not a MIG slice)\n"
    "  --rows FILE.csv   stack_runner.py's CSV (framework-tax-gpus' columns)\n"
    "  --write FILE.yaml a descriptor of one's own: GPU on this host (base: GPU), for\n"
    "                    --device-file; written, then renamed into place\n"
    "  --name NAME       its name (default GPU-host)\n"
    "  --models DIR      weightless torchvision ONNX exports (default tests/fixtures/models)\n"
    "  --config-dir DIR  descriptors and artifacts (default: as every command)\n"
    "  --json            the report as JSON\n";

static const struct option host_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"rows", required_argument, NULL, OPT_ROWS},
    {"write", required_argument, NULL, OPT_WRITE},
    {"name", required_argument, NULL, OPT_NAME},
    {"models", required_argument, NULL, OPT_MODELS},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
};

int cli_calibrate_host_main(int argc, char **argv)
{
    perfpred_host_params p = {0};
    p.models_dir = "tests/fixtures/models";
    const char *config_dir = NULL;
    int json = 0;
    cli_getopt G;
    cli_getopt_init(&G, argc - 1, argv + 1, "-:h", host_options);
    G.no_equals = 1;
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        switch (c) {
        case OPT_DEVICE: p.device = optarg; break;
        case OPT_ROWS: p.rows_csv = optarg; break;
        case OPT_WRITE: p.out_yaml = optarg; break;
        case OPT_NAME: p.name = optarg; break;
        case OPT_MODELS: p.models_dir = optarg; break;
        case OPT_CONFIG_DIR: config_dir = optarg; break;
        case OPT_JSON: json = 1; break;
        case 'h': fputs(host_usage, stdout); return EXIT_OK_;
        default: /* a positional or unknown word, or an option without its value */
            cli_error("calibrate host: unknown or incomplete argument '%s'\n%s", G.word,
                      host_usage);
            return EXIT_USAGE;
        }
    }
    if (!p.device || !p.rows_csv) {
        cli_error("calibrate host: --device GPU and --rows FILE.csv are required\n%s", host_usage);
        return EXIT_USAGE;
    }
    cJSON *r;
    fit_call a = {.host = &p};
    int rc = run_fit("host", config_dir, call_host, &a, json, &r);
    if (!r) return rc;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(r, "rows");
    printf("%s: %d batch-1 eager fp32 rows of the ResNet family in %s\n",
           cJSON_GetObjectItemCaseSensitive(r, "device")->valuestring, cJSON_GetArraySize(rows),
           p.rows_csv);
    printf("  %-16s %5s %12s %13s %8s %8s %6s %7s\n", "model", "line", "measured ms",
           "predicted ms", "host ms", "GPU ms", "bound", "scale");
    const cJSON *x;
    cJSON_ArrayForEach(x, rows)
    {
        printf("  %-16s %5g %12.3f %13.3f %8.3f %8.3f %6s %7.3f\n",
               cJSON_GetObjectItemCaseSensitive(x, "model")->valuestring, num(x, "line"),
               num(x, "measured_ms"), num(x, "predicted_ms"), num(x, "host_ms"), num(x, "gpu_ms"),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "host_bound")) ? "host" : "GPU",
               num(x, "scale"));
    }
    printf("host_dispatch_scale %.3f: the median of the %g host-bound rows; the descriptor states "
           "%.3f (%s)\n",
           num(r, "scale"), num(r, "host_bound_rows"), num(r, "descriptor_scale"),
           cJSON_GetObjectItemCaseSensitive(r, "descriptor_source")->valuestring);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(r, "written");
    if (cJSON_IsString(w))
        printf("written: %s; predict with: perfpred --device-file %s --device %s MODEL.onnx\n",
               w->valuestring, w->valuestring,
               cJSON_GetObjectItemCaseSensitive(r, "name")->valuestring);
    cJSON_Delete(r);
    return EXIT_OK_;
}
