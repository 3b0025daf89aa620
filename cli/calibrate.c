/* cli/calibrate.c: `perfpred calibrate plan|import` and the dispatch of the calibrate steps, a
 * thin layer over include/perfpred_calibrate.h: parse options, call the library, print a table
 * (plain or markdown) or one JSON object (docs/calibration.md). The table helpers here (cli.h)
 * serve cli/calibrate_fit.c (calibrate fit) and cli/eval.c too; option reading is cli/options.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char calibrate_usage[] =
    "usage: perfpred calibrate run --device NAME [--budget-min 30] [--quick] [--resume] [options]\n"
    "         (this CPU in one command: figures, descriptor, layers, networks, fit, judgement;\n"
    "          --quick: whole networks only, the correction over the models in force;\n"
    "          calibrate run --help)\n"
    "       perfpred calibrate plan --device DEV -o PLAN.csv [options]\n"
    "       perfpred calibrate fit --device DEV --layers MEASURED.csv [options]\n"
    "       perfpred calibrate fit --device DEV --neusight DIR [options]\n"
    "       perfpred calibrate fit --device DEV --networks SOURCE [--datasets DIR] [options]\n"
    "         (the graph-level GNN correction from whole-network rows: help-nb201, help-fbnet,\n"
    "          help-ofa, hw-nas-bench-360, eagle, several joined by ',' (help-nb201,help-fbnet),\n"
    "          or a network CSV; --dry-run, --threads, --out,\n"
    "          --heldout-families F1,F2 to hold those families out instead of hash buckets,\n"
    "          or folds F1,F2;F3;F4,F5: one dry run per fold and the pooled held-out error;\n"
    "          --overhead (with folds): the in-network overhead correction instead,\n"
    "          latency = a x layer sum + c x kernels + d x MB the kernels move, judged on\n"
    "          the folds, then fitted on every row and written where it beats the layer sum;\n"
    "          every --networks fit also writes the 80 % latency intervals of its held-out\n"
    "          rows (folds: all folds' rows) into intervals.json, unless --dry-run;\n"
    "          GNN: --epochs N (60), --hidden H (32), --lr X (0.002), --weight-decay X (0),\n"
    "          --huber D: Huber loss on log(measured / layer sum) with threshold D and early\n"
    "          stopping on validation mean |error| (default: squared error),\n"
    "          --seed N: the GNN's initialization and minibatch order (default 1),\n"
    "          --ensemble K: K GNNs with seeds N..N+K-1, their corrections averaged (1),\n"
    "          --max-train N: training rows kept when there are more (default 2500))\n"
    "       perfpred calibrate import --dataset NAME --root DIR -o LAYERS.csv [options]\n"
    "       perfpred calibrate fit-stacks --data DIR [options]\n"
    "         (GPU runtime stacks from framework-tax-gpus; fit-stacks --help)\n"
    "       perfpred calibrate fit-power --data DIR [--dry-run] [--json]\n"
    "         (GPU board power from gpu-benches' roofline sweep; fit-power --help)\n"
    "       perfpred calibrate host --device GPU --rows FILE.csv [--write FILE.yaml]\n"
    "         (the dispatch scale of your GPU's host from stack_runner.py rows; host --help)\n"
    "\n"
    "Calibrating a device: plan -> the layer runner on the device -> fit -> eval\n"
    "(docs/calibration.md). `fit` writes the layer models that `perfpred --device DEV` then uses.\n"
    "\n"
    "plan: sample layer configurations from a model zoo and size them to a time budget\n"
    "  --device DEV            device the plan is for (costs: its layer models once it is\n"
    "                          calibrated, else its roofline, a lower bound)\n"
    "  -o, --out PLAN.csv      plan to write: layer CSV schema, measurement columns empty\n"
    "  --budget-min M          runner time the plan may take, minutes (default 20)\n"
    "  --models PATH[,PATH..]  zoo: folders (their reference.csv, else every *.onnx), model\n"
    "                          lists (.csv with file,family,input_name,input_shape) or .onnx\n"
    "                          files (default: the source tree's tests/fixtures/models)\n"
    "  --exclude-family F[,F]  leave these model families out (to hold them out of training)\n"
    "  --ops OP[,OP..]         only rows of these ONNX operators (Gelu: to add an operator a\n"
    "                          calibration lacks); a composite op is its one operator\n"
    "  --batch N[,N..]         batch sizes the zoo is loaded at (default 1,8)\n"
    "  --seed N                sampling seed (default 1); same seed and zoo, same plan\n"
    "  --perturb-share X       share of rows that perturb zoo configurations (default 0.5)\n"
    "  --rounds N              the runner's --rounds, for the time estimate (default 7)\n"
    "  --adaptive              after a first fit (nn-Meter): split the budget by zoo-time share\n"
    "                          x max(held-out MAPE, 5 %) of each kind from the fit's\n"
    "                          manifest.json, prefer configurations near the held-out rows\n"
    "                          with the largest errors, leave out configurations measured already\n"
    "  --manifest-dir DIR      folder of that manifest.json and its models (default: the\n"
    "                          device's artifacts)\n"
    "  --anchors MEASURED.csv[,..]\n"
    "                          for a plan measured in a later session: also time again\n"
    "                          --n-anchors N (40) configurations those files measured,\n"
    "                          half compute-, half memory-bound, each spread over its\n"
    "                          latencies (within --ops), out of the\n"
    "                          budget; then fit with --rescale-layers\n"
    "\n"
    "fit: one latency model per op kind; held-out configurations judged next to the roofline\n"
    "  --device DEV            device the rows were measured on\n"
    "  --layers FILE.csv[,..]  measured layer rows (docs/measurements.md), one or more\n"
    "                          files (repeatable), or\n"
    "  --neusight DIR          NeuSight's dataset folder: kernel sweeps of the A100 PCIe 40GB,\n"
    "                          V100, T4, P100 and P4, judged on its test rows; the roofline\n"
    "                          the models correct comes from the device's descriptor\n"
    "  --rescale-layers FILE.csv[,..]\n"
    "                          with --layers: rows of a later session that also timed at\n"
    "                          least 10 configurations of the --layers files again\n"
    "                          (anchors); each row is divided by that session's drift at\n"
    "                          its size, fitted on the anchors (Theil-Sen line of\n"
    "                          ln(later / earlier) on ln(earlier ms))\n"
    "  --rescale-by-class      one drift line per roofline class (compute-bound,\n"
    "                          memory-bound) where it has 10 anchors\n"
    "  --conv-gpu NAME         NeuSight GPU whose conv rows stand in (default: automatic)\n"
    "  --out DIR               artifacts folder (default: configs/artifacts/<device>)\n"
    "  --heldout-frac X        share of each kind's configurations held out (default 0.2)\n"
    "  --seed N                split and XGBoost seed (default 42)\n"
    "  --threads N             XGBoost threads (default 2)\n"
    "  --boost-rounds N        XGBoost boosting rounds (default: the layer models' 300)\n"
    "  --max-spread-pct P      leave out rows whose run-to-run spread exceeds P % of their\n"
    "                          latency (default: keep every row)\n"
    "  --dry-run               fit and report, write nothing\n"
    "\n"
    "import: public layer measurements into one layer CSV (docs/measurements.md), read in place\n"
    "  --dataset NAME          deepbench, mobile-ml-benchmark or neusight\n"
    "  --root DIR              the dataset folder (holding its SOURCE.md), e.g.\n"
    "                          ../shared/datasets/deepbench\n"
    "  -o, --out LAYERS.csv    layer CSV to write; then: calibrate fit --layers LAYERS.csv\n"
    "  --device DEV            only this device's rows (default: every device with a descriptor)\n"
    "  --runtime NAME          only rows of this runtime (mobile-ml-benchmark: tflite-gpu or\n"
    "                          pytorch-mobile-gpu)\n"
    "\n"
    "common:\n"
    "  --json                  one JSON object on stdout (docs/calibration.md)\n"
    "  --config-dir DIR        device descriptors and artifacts (default as perfpred --help)\n"
    "  -h, --help              this text\n"
    "\n"
    "exit codes: 0 ok; 1 usage error; 2 input file missing, unreadable or malformed (the\n"
    "message names file:line); 3 model unsupported; 4 unknown device or bad descriptor;\n"
    "5 artifact broken, out of memory or internal error\n";

/* ------------------------------------------------------------------ tables ---- */

void cli_put_num(FILE *f, const char *fmt, double v, int width)
{
    if (isfinite(v)) fprintf(f, fmt, width, v);
    else fprintf(f, "%*s", width, "-");
}

void cli_metrics_cols(FILE *f, const perfpred_metrics *m, int markdown)
{
    if (markdown) {
        if (m->n == 0) {
            fprintf(f, " - | - | - | - |");
            return;
        }
        fprintf(f, " %.1f | %.1f | %.1f | ", m->mape_pct, m->rmspe_pct, m->within10_pct);
        if (isfinite(m->spearman)) fprintf(f, "%.3f |", m->spearman);
        else fprintf(f, "- |");
        return;
    }
    cli_put_num(f, "%*.1f", m->n ? m->mape_pct : NAN, 7);
    cli_put_num(f, "%*.1f", m->n ? m->rmspe_pct : NAN, 8);
    cli_put_num(f, "%*.1f", m->n ? m->within10_pct : NAN, 7);
    cli_put_num(f, "%*.3f", m->n ? m->spearman : NAN, 9);
}

void cli_roof_cols(FILE *f, const perfpred_metrics *m, int markdown)
{
    if (markdown) {
        if (m->n == 0) fprintf(f, " - | - |");
        else fprintf(f, " %.1f | %.1f |", m->mape_pct, m->within10_pct);
        return;
    }
    fprintf(f, " |");
    cli_put_num(f, "%*.1f", m->n ? m->mape_pct : NAN, 9);
    cli_put_num(f, "%*.1f", m->n ? m->within10_pct : NAN, 7);
}

void cli_spread_col(FILE *f, double spread, int markdown)
{
    if (markdown) {
        if (isfinite(spread)) fprintf(f, " %.1f |", spread);
        else fprintf(f, " - |");
        return;
    }
    fprintf(f, " |");
    cli_put_num(f, "%*.1f", spread, 8);
}

cJSON *cli_json_num(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *cli_json_metrics(const perfpred_metrics *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", m->n);
    cJSON_AddItemToObject(o, "mape_pct", cli_json_num(m->n ? m->mape_pct : NAN));
    cJSON_AddItemToObject(o, "rmspe_pct", cli_json_num(m->n ? m->rmspe_pct : NAN));
    cJSON_AddItemToObject(o, "within10_pct", cli_json_num(m->n ? m->within10_pct : NAN));
    cJSON_AddItemToObject(o, "spearman", cli_json_num(m->n ? m->spearman : NAN));
    cJSON_AddItemToObject(o, "mean_abs_log", cli_json_num(m->n ? m->mean_abs_log : NAN));
    return o;
}

cJSON *cli_json_msgs(const char (*msgs)[256], int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(msgs[i]));
    return a;
}

/* -------------------------------------------------------------------- plan ---- */

/* calibrate plan as one JSON object (docs/calibration.md). */
static void print_plan_json(const perfpred_plan_params *p, const perfpred_plan_report *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "plan", p->out_csv);
    cJSON_AddNumberToObject(o, "rows", r->n_rows);
    cJSON_AddNumberToObject(o, "est_minutes", r->est_minutes);
    cJSON_AddNumberToObject(o, "budget_minutes", r->budget_minutes);
    cJSON_AddStringToObject(o, "costs", r->cost_from_layer_models ? "layer-models"
                                        : r->has_roofline           ? "roofline"
                                                                   : "50us-floor");
    cJSON_AddNumberToObject(o, "models_loaded", r->n_models);
    cJSON_AddNumberToObject(o, "model_failures", r->n_model_failures);
    cJSON_AddNumberToObject(o, "models_excluded", r->n_excluded_models);
    cJSON_AddNumberToObject(o, "zoo_nodes", r->n_nodes);
    cJSON_AddNumberToObject(o, "skipped_nodes", r->n_skipped_nodes);
    cJSON_AddNumberToObject(o, "anchor_rows", r->n_anchor_rows);
    cJSON_AddNumberToObject(o, "anchor_minutes", r->anchor_minutes);
    cJSON *ks = cJSON_AddArrayToObject(o, "kinds");
    for (int i = 0; i < r->n_kinds; i++) {
        const perfpred_plan_kind *k = &r->kinds[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "kind", k->kind);
        cJSON_AddNumberToObject(j, "zoo_nodes", k->n_zoo_nodes);
        cJSON_AddNumberToObject(j, "zoo_time_share", k->zoo_time_share);
        cJSON_AddNumberToObject(j, "zoo_configs", k->n_base);
        cJSON_AddNumberToObject(j, "candidates", k->n_candidates);
        cJSON_AddNumberToObject(j, "rows", k->n_rows);
        cJSON_AddNumberToObject(j, "rows_from_zoo", k->n_rows_base);
        cJSON_AddNumberToObject(j, "est_minutes", k->est_minutes);
        cJSON_AddNumberToObject(j, "budget_weight", k->budget_weight);
        if (r->adaptive) {
            cJSON_AddItemToObject(j, "heldout_mape_pct", cli_json_num(k->heldout_mape_pct));
            cJSON_AddNumberToObject(j, "measured_left_out", k->n_measured);
        }
        cJSON_AddItemToArray(ks, j);
    }
    if (r->adaptive) {
        cJSON *ad = cJSON_AddObjectToObject(o, "adaptive");
        cJSON_AddStringToObject(ad, "within_kind", r->adaptive_rows ? "heldout-row-errors"
                                                                   : "kind-only");
        cJSON_AddNumberToObject(ad, "measured_left_out", r->n_excluded_measured);
        cJSON_AddStringToObject(ad, "basis", r->adaptive_basis);
    }
    cJSON_AddItemToObject(o, "messages", cli_json_msgs(r->msgs, r->n_msgs));
    cli_print_json(o);
}

/* calibrate plan as text: the zoo, how rows were costed, anchors, then per kind the zoo's share
 * and the rows picked. */
static void print_plan_text(const perfpred_plan_params *p, const perfpred_plan_report *r)
{
    printf("perfpred calibrate plan: %s, %d rows, estimated %.1f of %.1f minutes -> %s\n",
           r->device, r->n_rows, r->est_minutes, r->budget_minutes, p->out_csv);
    printf("zoo: %d model graphs loaded (%d failed, %d excluded by family), %d runtime nodes, "
           "%d not expressible as layer rows\n",
           r->n_models, r->n_model_failures, r->n_excluded_models, r->n_nodes, r->n_skipped_nodes);
    if (r->cost_from_layer_models)
        printf("costs: kernel times from %s's layer models (roofline where none covers a kernel)\n",
               r->device);
    else if (r->has_roofline)
        printf("costs: kernel times from %s's roofline, a lower bound (a layer running below peak "
               "takes longer: a plan made after a first fit is costed from its layer models)\n",
               r->device);
    else
        printf("costs: %s states no roofline figures: each call is costed at 50 us\n", r->device);
    if (r->n_anchor_rows)
        printf("anchors: %d configurations measured in %s%s, by roofline class and latency, %.2f "
               "minutes (for calibrate fit --rescale-layers)\n",
               r->n_anchor_rows, p->anchor_csvs[0], p->n_anchor_csvs > 1 ? " and more" : "",
               r->anchor_minutes);
    if (r->adaptive)
        printf("adaptive (%s): %s\nadaptive: %d configurations measured already left out\n",
               r->adaptive_rows ? "kind shares and held-out rows" : "kind shares only",
               r->adaptive_basis, r->n_excluded_measured);
    printf("\n%-11s %9s %8s %8s %10s %6s %6s %8s%s\n", "kind", "zoo nodes", "zoo time", "configs",
           "candidates", "rows", "of zoo", "minutes", r->adaptive ? "  held MAPE%  weight" : "");
    for (int i = 0; i < r->n_kinds; i++) {
        const perfpred_plan_kind *k = &r->kinds[i];
        printf("%-11s %9d %7.1f%% %8d %10d %6d %6d %8.2f", k->kind, k->n_zoo_nodes,
               100.0 * k->zoo_time_share, k->n_base, k->n_candidates, k->n_rows, k->n_rows_base,
               k->est_minutes);
        if (r->adaptive) {
            printf("  ");
            cli_put_num(stdout, "%*.1f", k->heldout_mape_pct, 10);
            printf(" %7.3f", k->budget_weight);
        }
        printf("\n");
    }
    printf("%-11s %9d %8s %8s %10s %6d %6s %8.2f\n", "total", r->n_nodes, "", "", "", r->n_rows, "",
           r->est_minutes);
    if (r->n_msgs) printf("\n");
    for (int i = 0; i < r->n_msgs; i++) printf("note: %s\n", r->msgs[i]);
    printf("\nnext: /usr/bin/python3 runners/layer_runner.py %s -o MEASURED.csv --device-name %s\n",
           p->out_csv, r->device);
}

enum {
    OPT_DEVICE = 256, OPT_BUDGET_MIN, OPT_MODELS, OPT_EXCLUDE_FAMILY, OPT_OPS, OPT_BATCH, OPT_SEED,
    OPT_PERTURB_SHARE, OPT_ROUNDS, OPT_CONFIG_DIR, OPT_ADAPTIVE, OPT_MANIFEST_DIR, OPT_ANCHORS,
    OPT_N_ANCHORS, OPT_JSON, OPT_DATASET, OPT_ROOT, OPT_RUNTIME
};

static const struct option plan_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"out", required_argument, NULL, 'o'},
    {"budget-min", required_argument, NULL, OPT_BUDGET_MIN},
    {"models", required_argument, NULL, OPT_MODELS},
    {"exclude-family", required_argument, NULL, OPT_EXCLUDE_FAMILY},
    {"ops", required_argument, NULL, OPT_OPS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"seed", required_argument, NULL, OPT_SEED},
    {"perturb-share", required_argument, NULL, OPT_PERTURB_SHARE},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"adaptive", no_argument, NULL, OPT_ADAPTIVE},
    {"manifest-dir", required_argument, NULL, OPT_MANIFEST_DIR},
    {"anchors", required_argument, NULL, OPT_ANCHORS},
    {"n-anchors", required_argument, NULL, OPT_N_ANCHORS},
    {"json", no_argument, NULL, OPT_JSON},
    {NULL, 0, NULL, 0}
};

/* What the plan parameters' lists point into (words of argv). */
typedef struct plan_lists {
    const char *models[CLI_MAX_LIST], *excl[CLI_MAX_LIST], *ops[CLI_MAX_LIST];
    const char *anchors[CLI_MAX_LIST];
    int64_t batches[CLI_MAX_LIST];
} plan_lists;

/* --batch N[,N..]: replaces the batches given before. */
static int plan_batches(char *v, perfpred_plan_params *p, plan_lists *L)
{
    const char *items[CLI_MAX_LIST];
    int n = cli_split_list(v, items, CLI_MAX_LIST, "--batch");
    if (n < 0) return -1;
    for (int k = 0; k < n; k++) {
        int b;
        if (cli_parse_int(items[k], "--batch", 1, 65536, &b)) return -1;
        L->batches[k] = b;
    }
    p->batches = L->batches;
    p->n_batches = n;
    return 0;
}

/* One plan option c with its value v into p (lists into L): 0, or -1 after saying why. */
static int plan_opt(int c, char *v, perfpred_plan_params *p, plan_lists *L, int *json)
{
    int s;
    switch (c) {
    case OPT_DEVICE: p->device = v; return 0;
    case 'o': p->out_csv = v; return 0;
    case OPT_BUDGET_MIN: return cli_parse_num(v, "--budget-min", 1e-3, 1e6, &p->budget_min);
    case OPT_MODELS:
        p->models = L->models;
        return cli_list_value(v, "--models", L->models, &p->n_models);
    case OPT_EXCLUDE_FAMILY:
        p->exclude_families = L->excl;
        return cli_list_value(v, "--exclude-family", L->excl, &p->n_exclude_families);
    case OPT_OPS:
        p->ops = L->ops;
        return cli_list_value(v, "--ops", L->ops, &p->n_ops);
    case OPT_BATCH: return plan_batches(v, p, L);
    case OPT_SEED:
        if (cli_parse_int(v, "--seed", 0, 2147483647, &s)) return -1;
        p->seed = (uint64_t)s;
        return 0;
    case OPT_PERTURB_SHARE:
        return cli_parse_num(v, "--perturb-share", 0, 0.95, &p->perturb_share);
    case OPT_ROUNDS: return cli_parse_int(v, "--rounds", 1, 1000, &p->protocol.rounds);
    case OPT_CONFIG_DIR: p->config_dir = v; return 0;
    case OPT_ADAPTIVE: p->adaptive = 1; return 0;
    case OPT_MANIFEST_DIR: p->adaptive_dir = v; return 0;
    case OPT_ANCHORS:
        p->anchor_csvs = L->anchors;
        return cli_list_value(v, "--anchors", L->anchors, &p->n_anchor_csvs);
    case OPT_N_ANCHORS:
        return cli_parse_int(v, "--n-anchors", PERFPRED_RESCALE_MIN_ANCHORS, 1000, &p->n_anchors);
    case OPT_JSON: *json = 1; return 0;
    }
    return -1;
}

static int cmd_plan(int argc, char **argv)
{
    perfpred_plan_params p = perfpred_plan_default_params();
    plan_lists L;
    int json = 0;
    cli_getopt G;
    cli_getopt_init(&G, argc - 1, argv + 1, "-:o:", plan_options);
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        if (c == ':') {
            cli_error("%s needs a value", G.word);
            return EXIT_USAGE;
        }
        if (c == 1 || c == '?') {
            cli_error("calibrate plan: unknown argument '%s' (perfpred calibrate --help)", G.word);
            return EXIT_USAGE;
        }
        if (plan_opt(c, optarg, &p, &L, &json)) return EXIT_USAGE;
    }
    if (!p.device) {
        cli_error("calibrate plan: --device is required");
        return EXIT_USAGE;
    }
    if (!p.out_csv) {
        cli_error("calibrate plan: -o PLAN.csv is required");
        return EXIT_USAGE;
    }
    if (p.adaptive_dir && !p.adaptive) {
        cli_error("calibrate plan: --manifest-dir goes with --adaptive");
        return EXIT_USAGE;
    }
    if (p.n_anchors && !p.n_anchor_csvs) {
        cli_error("calibrate plan: --n-anchors goes with --anchors");
        return EXIT_USAGE;
    }
    perfpred_plan_report r;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_plan(&p, &r, err, sizeof err);
    if (st != PERFPRED_OK) {
        cli_print_errbuf(err, perfpred_status_str(st));
        return cli_exit_code(st);
    }
    if (json) {
        print_plan_json(&p, &r);
        return EXIT_OK_;
    }
    print_plan_text(&p, &r);
    return EXIT_OK_;
}

/* ------------------------------------------------------------------ import ---- */

static const struct option import_options[] = {
    {"dataset", required_argument, NULL, OPT_DATASET},
    {"root", required_argument, NULL, OPT_ROOT},
    {"out", required_argument, NULL, 'o'},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"runtime", required_argument, NULL, OPT_RUNTIME},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {NULL, 0, NULL, 0}
};

static int cmd_import(int argc, char **argv)
{
    perfpred_import_params p = perfpred_import_default_params();
    int json = 0;
    cli_getopt G;
    cli_getopt_init(&G, argc - 1, argv + 1, "-:o:", import_options);
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        switch (c) {
        case OPT_DATASET: p.dataset = optarg; break;
        case OPT_ROOT: p.root = optarg; break;
        case 'o': p.out_csv = optarg; break;
        case OPT_DEVICE: p.device = optarg; break;
        case OPT_RUNTIME: p.runtime = optarg; break;
        case OPT_CONFIG_DIR: p.config_dir = optarg; break;
        case OPT_JSON: json = 1; break;
        case ':': cli_error("%s needs a value", G.word); return EXIT_USAGE;
        default:
            cli_error("calibrate import: unknown argument '%s' (perfpred calibrate --help)",
                      G.word);
            return EXIT_USAGE;
        }
    }
    if (!p.dataset || !p.root || !p.out_csv) {
        cli_error("calibrate import: --dataset, --root and -o LAYERS.csv are required");
        return EXIT_USAGE;
    }
    if (strcmp(p.dataset, "deepbench") && strcmp(p.dataset, "mobile-ml-benchmark") &&
        strcmp(p.dataset, "neusight")) {
        cli_error("calibrate import: --dataset %s: deepbench, mobile-ml-benchmark or neusight",
                  p.dataset);
        return EXIT_USAGE;
    }
    perfpred_import_report *r = calloc(1, sizeof *r);
    if (!r) return EXIT_INTERNAL;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_import(&p, r, err, sizeof err);
    if (st != PERFPRED_OK) {
        cli_print_errbuf(err, perfpred_status_str(st));
        free(r);
        return cli_exit_code(st);
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "dataset", r->dataset);
        cJSON_AddStringToObject(o, "root", p.root);
        cJSON_AddStringToObject(o, "layers", p.out_csv);
        cJSON_AddNumberToObject(o, "files", r->n_files);
        cJSON_AddNumberToObject(o, "rows", r->n_rows);
        cJSON_AddNumberToObject(o, "bad_rows", r->n_bad_rows);
        cJSON_AddNumberToObject(o, "filtered_rows", r->n_filtered);
        cJSON_AddNumberToObject(o, "ignored_lines", r->n_ignored);
        cJSON *ds = cJSON_AddArrayToObject(o, "devices");
        for (int i = 0; i < r->n_devices; i++) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "device", r->devices[i].device);
            cJSON_AddStringToObject(j, "dataset_name", r->devices[i].name);
            cJSON_AddNumberToObject(j, "rows", r->devices[i].n_rows);
            cJSON_AddNumberToObject(j, "bad_rows", r->devices[i].n_bad_rows);
            cJSON_AddItemToArray(ds, j);
        }
        cJSON_AddItemToObject(o, "notes", cli_json_msgs(r->notes, r->n_notes));
        cJSON_AddItemToObject(o, "messages", cli_json_msgs(r->msgs, r->n_msgs));
        cli_print_json(o);
        free(r);
        return EXIT_OK_;
    }
    printf("perfpred calibrate import: %s from %s: %d rows from %d files -> %s\n", r->dataset,
           p.root, r->n_rows, r->n_files, p.out_csv);
    printf("%d bad rows, %d rows of other devices or runtimes left out, %d lines without a "
           "kernel\n\n", r->n_bad_rows, r->n_filtered, r->n_ignored);
    printf("%-24s %-28s %7s %7s\n", "device", "dataset's name", "rows", "bad");
    for (int i = 0; i < r->n_devices; i++)
        printf("%-24s %-28s %7d %7d\n", r->devices[i].device, r->devices[i].name,
               r->devices[i].n_rows, r->devices[i].n_bad_rows);
    if (r->n_notes) printf("\n");
    for (int i = 0; i < r->n_notes; i++) printf("note: %s\n", r->notes[i]);
    if (r->n_msgs) printf("\nfirst bad rows:\n");
    for (int i = 0; i < r->n_msgs; i++) printf("  %s\n", r->msgs[i]);
    printf("\nnext: perfpred calibrate fit --device DEV --layers %s\n", p.out_csv);
    free(r);
    return EXIT_OK_;
}

int cli_calibrate_main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "run") == 0) {
        for (int i = 2; i < argc; i++)
            if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                fputs(cli_calibrate_run_usage, stdout);
                return EXIT_OK_;
            }
        return cli_calibrate_run(argc, argv);
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(calibrate_usage, stdout);
            return EXIT_OK_;
        }
    if (argc < 2) {
        fputs(calibrate_usage, stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "plan") == 0) return cmd_plan(argc, argv);
    if (strcmp(argv[1], "fit") == 0) return cli_calibrate_fit(argc, argv);
    if (strcmp(argv[1], "import") == 0) return cmd_import(argc, argv);
    if (strcmp(argv[1], "fit-stacks") == 0) return cli_fit_stacks_main(argc, argv);
    if (strcmp(argv[1], "fit-power") == 0) return cli_fit_power_main(argc, argv);
    if (strcmp(argv[1], "host") == 0) return cli_calibrate_host_main(argc, argv);
    cli_error("calibrate: unknown step '%s' (run, plan, fit, fit-stacks, fit-power, host or "
              "import; perfpred calibrate --help)",
              argv[1]);
    return EXIT_USAGE;
}
