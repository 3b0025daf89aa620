/* cli/eval.c: `perfpred eval`: measured layer or network rows predicted and judged (MAPE, RMSPE,
 * within +-10 %, Spearman, the rows' own spread) per group, plus NeuSight's A100 models, the
 * scaling check and the saved GNN correction on held-out rows (cli_netfit, cli/calibrate_fit.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char eval_usage[] =
    "usage: perfpred eval --device DEV --layers FILE.csv [options]\n"
    "       perfpred eval --device DEV --networks FILE.csv [options]\n"
    "       perfpred eval --neusight-models DIR [--device a100-pcie-40gb] [--json]\n"
    "       perfpred eval --scaling-check DIR [--json]   (A100 models scaled to NeuSight's GPUs)\n"
    "       perfpred eval --device DEV --gnn-heldout SOURCE [--datasets DIR] [--json]\n"
    "         (the saved graph-level correction on the held-out architectures of SOURCE:\n"
    "          help-nb201, help-fbnet, help-ofa, hw-nas-bench-360, eagle, or a network CSV;\n"
    "          --heldout-families F1,F2 as given to calibrate fit; --write-intervals:\n"
    "          store the 80 % latency intervals those rows give in the device's intervals.json)\n"
    "\n"
    "Predicts measured rows and reports MAPE, RMSPE, the share within +-10 %, Spearman's rank\n"
    "correlation and the measurements' own run-to-run spread (median IQR / latency), per\n"
    "group and overall. Layer rows are predicted through their single-node graphs, next to\n"
    "the roofline; network rows load their ONNX model at the row's batch and input shapes.\n"
    "\n"
    "  --device DEV            device to predict (its calibrated layer models, else roofline)\n"
    "  --layers FILE.csv       layer rows (docs/measurements.md), grouped by op kind\n"
    "  --networks FILE.csv     network rows, grouped by model family; one line per model too\n"
    "  --by kind|family|model  grouping (layers: kind; networks: family or model)\n"
    "  --plot FILE.png|.svg    predicted-vs-measured scatter (gnuplot): log-log, y = x, +-10 %\n"
    "  --markdown              tables in markdown (for the README)\n"
    "  --points                also list every layer row's prediction\n"
    "  --allow-unknown         networks: treat unknown ops as element-wise\n"
    "  --layer-sum-only        networks: the layer sum without the device's graph-level or\n"
    "                          overhead correction (its own effect: compare with and without)\n"
    "  --json                  one JSON object on stdout (docs/calibration.md)\n"
    "  --config-dir DIR        device descriptors and artifacts\n"
    "  -h, --help              this text\n"
    "\n"
    "exit codes: 0 ok; 1 usage error; 2 input file missing, unreadable or malformed (the\n"
    "message names file:line); 4 unknown device or bad descriptor; 5 internal error\n";

/* -------------------------------------------------------------------- eval ---- */

static void eval_table(const perfpred_eval_report *r, int markdown)
{
    int roof = !r->networks && r->overall.roofline.n > 0;
    const char *what = r->networks ? "group" : "kind";
    if (markdown) {
        printf("| %s | rows | MAPE %% | RMSPE %% | within ±10 %% | Spearman |%s spread %% |\n",
               what, roof ? " roofline MAPE % | roofline within ±10 % |" : "");
        printf("|---|---:|---:|---:|---:|---:|%s---:|\n", roof ? "---:|---:|" : "");
    } else {
        printf("%-14s %6s | %7s %8s %7s %9s |%s %8s\n", what, "rows", "MAPE%", "RMSPE%", "±10%",
               "Spearman", roof ? " roof MAPE    ±10% |" : "", "spread%");
    }
    for (int g = 0; g <= r->n_groups; g++) {
        const perfpred_eval_group *G = g < r->n_groups ? &r->groups[g] : &r->overall;
        if (markdown) {
            printf(g < r->n_groups ? "| %s | %d |" : "| **%s** | %d |", G->name, G->model.n);
            cli_metrics_cols(stdout, &G->model, 1);
            if (roof) cli_roof_cols(stdout, &G->roofline, 1);
            cli_spread_col(stdout, G->spread_pct, 1);
            printf("\n");
        } else {
            printf("%-14s %6d |", G->name, G->model.n);
            cli_metrics_cols(stdout, &G->model, 0);
            if (roof) cli_roof_cols(stdout, &G->roofline, 0);
            cli_spread_col(stdout, G->spread_pct, 0);
            printf("\n");
        }
    }
}

static void eval_points(const perfpred_eval_report *r, int markdown)
{
    if (markdown) {
        printf("\n| %s | measured ms | predicted ms | error %% | provenance |\n"
               "|---|---:|---:|---:|---|\n",
               r->networks ? "model" : "layer");
        for (int i = 0; i < r->n_points; i++) {
            const perfpred_eval_point *p = &r->points[i];
            printf("| %s | %.4g | %.4g | %+.1f | %s |\n", p->label, p->measured_ms, p->predicted_ms,
                   100.0 * (p->predicted_ms - p->measured_ms) / p->measured_ms,
                   perfpred_provenance_str(p->prov));
        }
        return;
    }
    printf("\n%-40s %12s %12s %8s  %s\n", r->networks ? "model" : "layer", "measured ms",
           "predicted ms", "error%", "provenance");
    for (int i = 0; i < r->n_points; i++) {
        const perfpred_eval_point *p = &r->points[i];
        printf("%-40.40s %12.4g %12.4g %+8.1f  %s\n", p->label, p->measured_ms, p->predicted_ms,
               100.0 * (p->predicted_ms - p->measured_ms) / p->measured_ms,
               perfpred_provenance_str(p->prov));
    }
}

static cJSON *json_group(const perfpred_eval_group *G, int roof)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", G->name);
    cJSON_AddItemToObject(j, "model", cli_json_metrics(&G->model));
    if (roof) cJSON_AddItemToObject(j, "roofline", cli_json_metrics(&G->roofline));
    cJSON_AddItemToObject(j, "spread_pct", cli_json_num(G->spread_pct));
    cJSON_AddNumberToObject(j, "calibrated_rows", G->n_calibrated);
    return j;
}

/* perfpred eval --neusight-models DIR: NeuSight's A100 model traces (BERT, GPT-2, GPT-3, OPT)
 * predicted whole and per operator; see docs/a100-models.md. */
static int eval_neusight_models(const char *root, const char *device, const char *config_dir,
                                int json)
{
    perfpred_neusight_params p = perfpred_neusight_default_params();
    p.neusight_root = root;
    if (device) p.device = device;
    p.config_dir = config_dir;
    perfpred_neusight_report *r = calloc(1, sizeof *r);
    if (!r) return EXIT_INTERNAL;
    char err[1024] = "";
    perfpred_status st = perfpred_neusight_models_report(&p, r, err, sizeof err);
    if (st) {
        cli_error("%s", err);
        free(r);
        return cli_exit_code(st);
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r->device);
        cJSON_AddStringToObject(o, "calibration_source", r->source);
        cJSON *arr = cJSON_AddArrayToObject(o, "models");
        for (int i = 0; i < r->n_models; i++) {
            const perfpred_neusight_model *m = &r->models[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "label", m->label);
            cJSON_AddStringToObject(j, "status", perfpred_status_str(m->status));
            cJSON_AddNumberToObject(j, "batch", (double)m->batch);
            cJSON_AddNumberToObject(j, "seq", (double)m->seq);
            cJSON_AddItemToObject(j, "measured_e2e_ms", cli_json_num(m->measured_e2e_ms));
            cJSON_AddItemToObject(j, "predicted_ms", cli_json_num(m->predicted_ms));
            cJSON_AddItemToObject(j, "error_pct", cli_json_num(m->error_pct));
            cJSON_AddItemToObject(j, "roofline_ms", cli_json_num(m->roofline_ms));
            cJSON_AddItemToObject(j, "roofline_error_pct", cli_json_num(m->roofline_error_pct));
            cJSON_AddItemToArray(arr, j);
        }
        cJSON_AddItemToObject(o, "e2e", cli_json_metrics(&r->e2e));
        cJSON_AddItemToObject(o, "roofline_e2e", cli_json_metrics(&r->roofline_e2e));
        cli_print_json(o);
    } else {
        printf("NeuSight A100 inference labels on %s (layer models: %s)\n\n", r->device, r->source);
        printf("| model | batch | seq | measured e2e ms | predicted ms | error %% | roofline-only error %% |\n");
        printf("|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < r->n_models; i++) {
            const perfpred_neusight_model *m = &r->models[i];
            if (m->status) {
                printf("| %s | - | - | - | - | %s | |\n", m->label, m->msg);
                continue;
            }
            printf("| %s | %lld | %lld | %.1f | %.1f | %+.1f | %+.1f |\n", m->model,
                   (long long)m->batch, (long long)m->seq, m->measured_e2e_ms, m->predicted_ms,
                   m->error_pct, m->roofline_error_pct);
        }
        printf("\nend to end over %d labels: perfpred MAPE %.2f %% (Spearman %.3f); roofline alone "
               "MAPE %.2f %%\n", r->e2e.n, r->e2e.mape_pct, r->e2e.spearman,
               r->roofline_e2e.mape_pct);
    }
    free(r);
    return EXIT_OK_;
}

/* perfpred eval --scaling-check DIR: the A100 layer models scaled by Habitat's rule to every GPU
 * NeuSight measured test rows on; see docs/scaling.md. */
static int eval_scaling(const char *root, const char *config_dir, int json)
{
    perfpred_scaling_params p = perfpred_scaling_default_params();
    p.neusight_root = root;
    p.config_dir = config_dir;
    perfpred_scaling_report *r = calloc(1, sizeof *r);
    if (!r) return EXIT_INTERNAL;
    char err[1024] = "";
    perfpred_status st = perfpred_scaling_check(&p, r, err, sizeof err);
    if (st) {
        cli_error("%s", err);
        free(r);
        return cli_exit_code(st);
    }
    static const int cols[] = {PERFPRED_SCALE_MODEL_FLOPS, PERFPRED_SCALE_MODEL,
                               PERFPRED_SCALE_ROOFLINE, PERFPRED_SCALE_UNSCALED};
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "source", r->source);
        cJSON_AddStringToObject(o, "calibration_source", r->calibration);
        cJSON *arr = cJSON_AddArrayToObject(o, "targets");
        for (int t = 0; t < r->n_targets; t++) {
            const perfpred_scaling_target *T = &r->targets[t];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "device", T->device);
            cJSON_AddNumberToObject(j, "rows", T->all.n_rows);
            for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
                cJSON_AddItemToObject(j, perfpred_scaling_method_str(cols[c]),
                                      cli_json_metrics(&T->all.m[cols[c]]));
            cJSON_AddItemToArray(arr, j);
        }
        cli_print_json(o);
    } else {
        printf("NeuSight test kernels of other GPUs predicted from %s's layer models (%s)\n\n",
               r->source, r->calibration);
        printf("| target | rows | perfpred (FLOP/s rule) MAPE %% | SMs x clock rule MAPE %% | target roofline MAPE %% | unscaled MAPE %% |\n");
        printf("|---|---|---|---|---|---|\n");
        for (int t = 0; t < r->n_targets; t++) {
            const perfpred_scaling_target *T = &r->targets[t];
            printf("| %s | %d", T->device, T->all.n_rows);
            for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
                printf(" | %.1f", T->all.m[cols[c]].mape_pct);
            printf(" |\n");
        }
    }
    free(r);
    return EXIT_OK_;
}

/* eval --layers / --networks as one JSON object (docs/calibration.md); plot: the plot written, or
 * NULL. */
static void print_eval_json(const perfpred_eval_report *r, const char *file, int points,
                            const char *plot)
{
    int roof = !r->networks && r->overall.roofline.n > 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "rows_file", file);
    cJSON_AddStringToObject(o, "rows", r->networks ? "networks" : "layers");
    cJSON_AddStringToObject(o, "calibration_source", r->source);
    if (r->source_device[0]) cJSON_AddStringToObject(o, "calibration_device", r->source_device);
    cJSON_AddNumberToObject(o, "rows_read", r->n_rows_read);
    cJSON_AddNumberToObject(o, "bad_rows", r->n_bad_rows);
    cJSON_AddNumberToObject(o, "other_device_rows", r->n_other_device);
    cJSON_AddNumberToObject(o, "failed_rows", r->n_failed);
    cJSON *gs = cJSON_AddArrayToObject(o, "groups");
    for (int g = 0; g < r->n_groups; g++)
        cJSON_AddItemToArray(gs, json_group(&r->groups[g], roof));
    cJSON_AddItemToObject(o, "overall", json_group(&r->overall, roof));
    if (r->networks || points) {
        cJSON *ps = cJSON_AddArrayToObject(o, "points");
        for (int i = 0; i < r->n_points; i++) {
            const perfpred_eval_point *q = &r->points[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "label", q->label);
            cJSON_AddStringToObject(j, "group", q->group);
            cJSON_AddNumberToObject(j, "line", q->line);
            cJSON_AddNumberToObject(j, "batch", (double)q->batch);
            cJSON_AddNumberToObject(j, "measured_ms", q->measured_ms);
            cJSON_AddNumberToObject(j, "predicted_ms", q->predicted_ms);
            if (roof) cJSON_AddItemToObject(j, "roofline_ms", cli_json_num(q->roofline_ms));
            cJSON_AddItemToObject(j, "spread_ms", cli_json_num(q->spread_ms));
            cJSON_AddStringToObject(j, "provenance", perfpred_provenance_str(q->prov));
            cJSON_AddItemToArray(ps, j);
        }
    }
    if (plot) cJSON_AddStringToObject(o, "plot", plot);
    cJSON_AddItemToObject(o, "messages", cli_json_msgs(r->msgs, r->n_msgs));
    cli_print_json(o);
}

/* eval --layers / --networks as text: per group the errors and the rows' spread (markdown: a
 * README table), then every row when asked or for networks; plot: the plot written, or NULL. */
static void print_eval_text(const perfpred_eval_report *r, const char *file, int markdown,
                            int points, const char *plot)
{
    int roof = !r->networks && r->overall.roofline.n > 0;
    printf("perfpred eval: %s on %d %s rows of %s%s\n", r->device, r->n_points,
           r->networks ? "network" : "layer", file, markdown ? "  " : "");
    printf("predictions: %s (%d of %d rows calibrated)%s\n", r->source,
           r->overall.n_calibrated, r->n_points, markdown ? "  " : "");
    if (r->n_bad_rows || r->n_other_device || r->n_failed)
        printf("skipped: %d bad rows, %d rows of other devices, %d rows not predicted%s\n",
               r->n_bad_rows, r->n_other_device, r->n_failed, markdown ? "  " : "");
    printf("\n");
    eval_table(r, markdown);
    if (r->networks || points) eval_points(r, markdown);
    for (int i = 0; i < r->n_msgs; i++) printf("%snote: %s\n", i ? "" : "\n", r->msgs[i]);
    if (!markdown)
        printf("\nspread: median of the rows' run-to-run IQR / latency (what the measurement "
               "itself can resolve)%s\n", roof ? "; roof: the descriptor's roofline" : "");
    if (plot) printf("plot: %s\n", plot);
}

enum {
    OPT_DEVICE = 256, OPT_WRITE_INTERVALS, OPT_GNN_HELDOUT, OPT_HELDOUT_FAMILIES,
    OPT_LAYER_SUM_ONLY, OPT_DATASETS, OPT_SCALING_CHECK, OPT_NEUSIGHT_MODELS, OPT_LAYERS,
    OPT_NETWORKS, OPT_BY, OPT_PLOT, OPT_CONFIG_DIR, OPT_JSON, OPT_MARKDOWN, OPT_POINTS,
    OPT_ALLOW_UNKNOWN
};

static const struct option eval_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"write-intervals", no_argument, NULL, OPT_WRITE_INTERVALS},
    {"gnn-heldout", required_argument, NULL, OPT_GNN_HELDOUT},
    {"heldout-families", required_argument, NULL, OPT_HELDOUT_FAMILIES},
    {"layer-sum-only", no_argument, NULL, OPT_LAYER_SUM_ONLY},
    {"datasets", required_argument, NULL, OPT_DATASETS},
    {"scaling-check", required_argument, NULL, OPT_SCALING_CHECK},
    {"neusight-models", required_argument, NULL, OPT_NEUSIGHT_MODELS},
    {"layers", required_argument, NULL, OPT_LAYERS},
    {"networks", required_argument, NULL, OPT_NETWORKS},
    {"by", required_argument, NULL, OPT_BY},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"markdown", no_argument, NULL, OPT_MARKDOWN},
    {"points", no_argument, NULL, OPT_POINTS},
    {"allow-unknown", no_argument, NULL, OPT_ALLOW_UNKNOWN},
    {NULL, 0, NULL, 0}
};

/* eval's command line: the eval parameters and what picks another check than --layers or
 * --networks. */
typedef struct eval_args {
    perfpred_eval_params p;
    const char *plot, *neusight_models, *scaling, *gnn_heldout, *datasets, *heldout_families;
    int json, markdown, points, write_intervals;
} eval_args;

/* One eval option c with its value v into a. */
static void eval_opt(int c, const char *v, eval_args *a)
{
    switch (c) {
    case OPT_DEVICE: a->p.device = v; break;
    case OPT_WRITE_INTERVALS: a->write_intervals = 1; break;
    case OPT_GNN_HELDOUT: a->gnn_heldout = v; break;
    case OPT_HELDOUT_FAMILIES: a->heldout_families = v; break;
    case OPT_LAYER_SUM_ONLY: a->p.layer_sum_only = 1; break;
    case OPT_DATASETS: a->datasets = v; break;
    case OPT_SCALING_CHECK: a->scaling = v; break;
    case OPT_NEUSIGHT_MODELS: a->neusight_models = v; break;
    case OPT_LAYERS: a->p.layers_csv = v; break;
    case OPT_NETWORKS: a->p.networks_csv = v; break;
    case OPT_BY: a->p.group_by = v; break;
    case OPT_PLOT: a->plot = v; break;
    case OPT_CONFIG_DIR: a->p.config_dir = v; break;
    case OPT_JSON: a->json = 1; break;
    case OPT_MARKDOWN: a->markdown = 1; break;
    case OPT_POINTS: a->points = 1; break;
    case OPT_ALLOW_UNKNOWN: a->p.allow_unknown = 1; break;
    }
}

/* argv[1..argc) of eval into a: 0, or -1 after saying why. */
static int eval_parse(int argc, char **argv, eval_args *a)
{
    cli_getopt G;
    cli_getopt_init(&G, argc, argv, "-:", eval_options);
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        if (c == ':') {
            cli_error("%s needs a value", G.word);
            return -1;
        }
        if (c == 1 || c == '?') {
            cli_error("eval: unknown argument '%s' (perfpred eval --help)", G.word);
            return -1;
        }
        eval_opt(c, optarg, a);
    }
    return 0;
}

/* eval --gnn-heldout, --scaling-check or --neusight-models, each with the options it takes. */
static int eval_other(const eval_args *a)
{
    const perfpred_eval_params *p = &a->p;
    if (a->gnn_heldout) {
        if (!p->device) {
            cli_error("eval --gnn-heldout: --device is required");
            return EXIT_USAGE;
        }
        perfpred_netfit_params np = perfpred_netfit_default_params();
        np.device = p->device;
        np.source = a->gnn_heldout;
        np.datasets_root = a->datasets;
        np.config_dir = p->config_dir;
        np.heldout_families = a->heldout_families;
        np.evaluate_only = 1;
        return cli_netfit(&np, a->json, a->write_intervals);
    }
    if (a->heldout_families) {
        cli_error("eval: --heldout-families goes with --gnn-heldout");
        return EXIT_USAGE;
    }
    if (a->scaling) {
        if (a->neusight_models || p->layers_csv || p->networks_csv || a->plot || a->markdown ||
            a->points || p->group_by || p->device) {
            cli_error("eval --scaling-check takes only --config-dir and --json");
            return EXIT_USAGE;
        }
        return eval_scaling(a->scaling, p->config_dir, a->json);
    }
    if (p->layers_csv || p->networks_csv || a->plot || a->markdown || a->points || p->group_by) {
        cli_error("eval --neusight-models takes only --device, --config-dir and --json");
        return EXIT_USAGE;
    }
    return eval_neusight_models(a->neusight_models, p->device, p->config_dir, a->json);
}

/* eval --layers or --networks: the rows predicted and judged, printed, plotted when asked. */
static int eval_rows(const eval_args *a)
{
    const perfpred_eval_params *p = &a->p;
    const char *plot = a->plot;
    if (!p->device) {
        cli_error("eval: --device is required");
        return EXIT_USAGE;
    }
    if ((p->layers_csv != NULL) == (p->networks_csv != NULL)) {
        cli_error("eval: give --layers FILE.csv or --networks FILE.csv (one of them)");
        return EXIT_USAGE;
    }
    if (p->group_by) {
        int ok = p->layers_csv
                     ? strcmp(p->group_by, "kind") == 0
                     : strcmp(p->group_by, "family") == 0 || strcmp(p->group_by, "model") == 0;
        if (!ok) {
            cli_error("eval: --by %s: layer rows group by kind, network rows by family or model",
                      p->group_by);
            return EXIT_USAGE;
        }
    }
    if (plot) {
        size_t L = strlen(plot);
        if (L < 5 || (strcmp(plot + L - 4, ".png") != 0 && strcmp(plot + L - 4, ".svg") != 0)) {
            cli_error("eval: --plot %s: the file name must end in .png or .svg", plot);
            return EXIT_USAGE;
        }
    }
    perfpred_eval_report r;
    char err[1024] = "";
    perfpred_status st = perfpred_eval(p, &r, err, sizeof err);
    if (st != PERFPRED_OK) {
        cli_print_errbuf(err, perfpred_status_str(st));
        return cli_exit_code(st);
    }
    const char *file = p->layers_csv ? p->layers_csv : p->networks_csv;
    int rc = EXIT_OK_;
    if (plot) {
        char title[256];
        snprintf(title, sizeof title, "%s: %s latency, predicted vs measured (%d rows)", r.device,
                 r.networks ? "network" : "layer", r.n_points);
        st = perfpred_eval_plot(&r, plot, title, err, sizeof err);
        if (st != PERFPRED_OK) {
            cli_print_errbuf(err, perfpred_status_str(st));
            rc = cli_exit_code(st);
        }
    }
    const char *plot_written = plot && rc == EXIT_OK_ ? plot : NULL;
    if (a->json) print_eval_json(&r, file, a->points, plot_written);
    else print_eval_text(&r, file, a->markdown, a->points, plot_written);
    perfpred_eval_report_free(&r);
    return rc;
}

int cli_eval_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(eval_usage, stdout);
            return EXIT_OK_;
        }
    eval_args a = {.p = perfpred_eval_default_params()};
    if (eval_parse(argc, argv, &a)) return EXIT_USAGE;
    if (a.gnn_heldout || a.heldout_families || a.scaling || a.neusight_models)
        return eval_other(&a);
    return eval_rows(&a);
}
