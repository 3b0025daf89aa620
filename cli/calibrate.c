/* cli/calibrate.c: `perfpred calibrate plan|fit|import` and `perfpred eval`, a thin layer over the
 * calibration API of include/perfpred.h: parse options, call the library, print a table (plain or
 * markdown, ready for the README's accuracy table) or one JSON object (docs/calibration.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char calibrate_usage[] =
    "usage: perfpred calibrate plan --device DEV -o PLAN.csv [options]\n"
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

#define MAX_LIST 64

/* ------------------------------------------------------------------ parsing ---- */

typedef struct args {
    int argc;
    char **argv;
    int i;
} args;

static int is_opt(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

/* The value of the option at A->i (after '=' or the next argument), NULL after an error. */
static const char *value(args *A, const char *name)
{
    const char *a = A->argv[A->i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) == 0 && a[n] == '=') return a + n + 1;
    if (A->i + 1 >= A->argc) {
        cli_error("%s needs a value", name);
        return NULL;
    }
    return A->argv[++A->i];
}

static int parse_int(const char *s, const char *name, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_error("%s: '%s' is not an integer in [%ld, %ld]", name, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_num(const char *s, const char *name, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        cli_error("%s: '%s' is not a number in [%g, %g]", name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* Splits a comma-separated list in place (s is owned by argv). */
static int split_list(char *s, const char **out, int cap, const char *name)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == cap) {
            cli_error("%s: at most %d values", name, cap);
            return -1;
        }
        out[n++] = tok;
    }
    if (n == 0) cli_error("%s: empty list", name);
    return n ? n : -1;
}

/* A list option's value, split on ',' and appended to out[*n..MAX_LIST): 0, or -1 after saying why. */
static int list_value(args *A, const char *name, const char **out, int *n)
{
    const char *v = value(A, name);
    if (!v) return -1;
    int k = split_list((char *)v, out + *n, MAX_LIST - *n, name);
    if (k < 0) return -1;
    *n += k;
    return 0;
}

static void print_errbuf(const char *err, const char *fallback)
{
    cli_error("%s", err && *err ? err : fallback);
}

/* ------------------------------------------------------------------ tables ---- */

static void put_num(FILE *f, const char *fmt, double v, int width)
{
    if (isfinite(v)) fprintf(f, fmt, width, v);
    else fprintf(f, "%*s", width, "-");
}

static void metrics_cols(FILE *f, const perfpred_metrics *m, int markdown)
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
    put_num(f, "%*.1f", m->n ? m->mape_pct : NAN, 7);
    put_num(f, "%*.1f", m->n ? m->rmspe_pct : NAN, 8);
    put_num(f, "%*.1f", m->n ? m->within10_pct : NAN, 7);
    put_num(f, "%*.3f", m->n ? m->spearman : NAN, 9);
}

static void roof_cols(FILE *f, const perfpred_metrics *m, int markdown)
{
    if (markdown) {
        if (m->n == 0) fprintf(f, " - | - |");
        else fprintf(f, " %.1f | %.1f |", m->mape_pct, m->within10_pct);
        return;
    }
    fprintf(f, " |");
    put_num(f, "%*.1f", m->n ? m->mape_pct : NAN, 9);
    put_num(f, "%*.1f", m->n ? m->within10_pct : NAN, 7);
}

static void spread_col(FILE *f, double spread, int markdown)
{
    if (markdown) {
        if (isfinite(spread)) fprintf(f, " %.1f |", spread);
        else fprintf(f, " - |");
        return;
    }
    fprintf(f, " |");
    put_num(f, "%*.1f", spread, 8);
}

static cJSON *json_num(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *json_metrics(const perfpred_metrics *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "n", m->n);
    cJSON_AddItemToObject(o, "mape_pct", json_num(m->n ? m->mape_pct : NAN));
    cJSON_AddItemToObject(o, "rmspe_pct", json_num(m->n ? m->rmspe_pct : NAN));
    cJSON_AddItemToObject(o, "within10_pct", json_num(m->n ? m->within10_pct : NAN));
    cJSON_AddItemToObject(o, "spearman", json_num(m->n ? m->spearman : NAN));
    return o;
}

static cJSON *json_msgs(const char (*msgs)[256], int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(msgs[i]));
    return a;
}

/* -------------------------------------------------------------------- plan ---- */

static int cmd_plan(int argc, char **argv)
{
    perfpred_plan_params p = perfpred_plan_default_params();
    const char *models[MAX_LIST], *excl[MAX_LIST], *ops[MAX_LIST], *anchors[MAX_LIST];
    int64_t batches[MAX_LIST];
    int json = 0;
    args A = {argc, argv, 0};
    for (A.i = 2; A.i < argc; A.i++) {
        const char *a = argv[A.i], *v;
        if (is_opt(a, "--device")) {
            if (!(p.device = value(&A, "--device"))) return EXIT_USAGE;
        } else if (is_opt(a, "--out") || strcmp(a, "-o") == 0) {
            if (!(p.out_csv = value(&A, strcmp(a, "-o") == 0 ? "-o" : "--out"))) return EXIT_USAGE;
        } else if (is_opt(a, "--budget-min")) {
            if (!(v = value(&A, "--budget-min")) ||
                parse_num(v, "--budget-min", 1e-3, 1e6, &p.budget_min))
                return EXIT_USAGE;
        } else if (is_opt(a, "--models")) {
            if (list_value(&A, "--models", models, &p.n_models)) return EXIT_USAGE;
            p.models = models;
        } else if (is_opt(a, "--exclude-family")) {
            if (list_value(&A, "--exclude-family", excl, &p.n_exclude_families)) return EXIT_USAGE;
            p.exclude_families = excl;
        } else if (is_opt(a, "--ops")) {
            if (list_value(&A, "--ops", ops, &p.n_ops)) return EXIT_USAGE;
            p.ops = ops;
        } else if (is_opt(a, "--batch")) {
            const char *items[MAX_LIST];
            if (!(v = value(&A, "--batch"))) return EXIT_USAGE;
            int n = split_list((char *)v, items, MAX_LIST, "--batch");
            if (n < 0) return EXIT_USAGE;
            for (int k = 0; k < n; k++) {
                int b;
                if (parse_int(items[k], "--batch", 1, 65536, &b)) return EXIT_USAGE;
                batches[k] = b;
            }
            p.batches = batches;
            p.n_batches = n;
        } else if (is_opt(a, "--seed")) {
            int s;
            if (!(v = value(&A, "--seed")) || parse_int(v, "--seed", 0, 2147483647, &s))
                return EXIT_USAGE;
            p.seed = (uint64_t)s;
        } else if (is_opt(a, "--perturb-share")) {
            if (!(v = value(&A, "--perturb-share")) ||
                parse_num(v, "--perturb-share", 0, 0.95, &p.perturb_share))
                return EXIT_USAGE;
        } else if (is_opt(a, "--rounds")) {
            if (!(v = value(&A, "--rounds")) ||
                parse_int(v, "--rounds", 1, 1000, &p.protocol.rounds))
                return EXIT_USAGE;
        } else if (is_opt(a, "--config-dir")) {
            if (!(p.config_dir = value(&A, "--config-dir"))) return EXIT_USAGE;
        } else if (strcmp(a, "--adaptive") == 0) {
            p.adaptive = 1;
        } else if (is_opt(a, "--manifest-dir")) {
            if (!(p.adaptive_dir = value(&A, "--manifest-dir"))) return EXIT_USAGE;
        } else if (is_opt(a, "--anchors")) {
            if (list_value(&A, "--anchors", anchors, &p.n_anchor_csvs)) return EXIT_USAGE;
            p.anchor_csvs = anchors;
        } else if (is_opt(a, "--n-anchors")) {
            if (!(v = value(&A, "--n-anchors")) ||
                parse_int(v, "--n-anchors", PERFPRED_RESCALE_MIN_ANCHORS, 1000, &p.n_anchors))
                return EXIT_USAGE;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else {
            cli_error("calibrate plan: unknown argument '%s' (perfpred calibrate --help)", a);
            return EXIT_USAGE;
        }
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
        print_errbuf(err, perfpred_status_str(st));
        return cli_exit_code(st);
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r.device);
        cJSON_AddStringToObject(o, "plan", p.out_csv);
        cJSON_AddNumberToObject(o, "rows", r.n_rows);
        cJSON_AddNumberToObject(o, "est_minutes", r.est_minutes);
        cJSON_AddNumberToObject(o, "budget_minutes", r.budget_minutes);
        cJSON_AddStringToObject(o, "costs", r.cost_from_layer_models ? "layer-models"
                                            : r.has_roofline           ? "roofline"
                                                                       : "50us-floor");
        cJSON_AddNumberToObject(o, "models_loaded", r.n_models);
        cJSON_AddNumberToObject(o, "model_failures", r.n_model_failures);
        cJSON_AddNumberToObject(o, "models_excluded", r.n_excluded_models);
        cJSON_AddNumberToObject(o, "zoo_nodes", r.n_nodes);
        cJSON_AddNumberToObject(o, "skipped_nodes", r.n_skipped_nodes);
        cJSON_AddNumberToObject(o, "anchor_rows", r.n_anchor_rows);
        cJSON_AddNumberToObject(o, "anchor_minutes", r.anchor_minutes);
        cJSON *ks = cJSON_AddArrayToObject(o, "kinds");
        for (int i = 0; i < r.n_kinds; i++) {
            const perfpred_plan_kind *k = &r.kinds[i];
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
            if (r.adaptive) {
                cJSON_AddItemToObject(j, "heldout_mape_pct", json_num(k->heldout_mape_pct));
                cJSON_AddNumberToObject(j, "measured_left_out", k->n_measured);
            }
            cJSON_AddItemToArray(ks, j);
        }
        if (r.adaptive) {
            cJSON *ad = cJSON_AddObjectToObject(o, "adaptive");
            cJSON_AddStringToObject(ad, "within_kind", r.adaptive_rows ? "heldout-row-errors"
                                                                       : "kind-only");
            cJSON_AddNumberToObject(ad, "measured_left_out", r.n_excluded_measured);
            cJSON_AddStringToObject(ad, "basis", r.adaptive_basis);
        }
        cJSON_AddItemToObject(o, "messages", json_msgs(r.msgs, r.n_msgs));
        cli_print_json(o);
        return EXIT_OK_;
    }
    printf("perfpred calibrate plan: %s, %d rows, estimated %.1f of %.1f minutes -> %s\n", r.device,
           r.n_rows, r.est_minutes, r.budget_minutes, p.out_csv);
    printf("zoo: %d model graphs loaded (%d failed, %d excluded by family), %d runtime nodes, "
           "%d not expressible as layer rows\n",
           r.n_models, r.n_model_failures, r.n_excluded_models, r.n_nodes, r.n_skipped_nodes);
    if (r.cost_from_layer_models)
        printf("costs: kernel times from %s's layer models (roofline where none covers a kernel)\n",
               r.device);
    else if (r.has_roofline)
        printf("costs: kernel times from %s's roofline, a lower bound (a layer running below peak "
               "takes longer: a plan made after a first fit is costed from its layer models)\n",
               r.device);
    else
        printf("costs: %s states no roofline figures: each call is costed at 50 us\n", r.device);
    if (r.n_anchor_rows)
        printf("anchors: %d configurations measured in %s%s, by roofline class and latency, %.2f "
               "minutes (for calibrate fit --rescale-layers)\n",
               r.n_anchor_rows, p.anchor_csvs[0], p.n_anchor_csvs > 1 ? " and more" : "",
               r.anchor_minutes);
    if (r.adaptive)
        printf("adaptive (%s): %s\nadaptive: %d configurations measured already left out\n",
               r.adaptive_rows ? "kind shares and held-out rows" : "kind shares only",
               r.adaptive_basis, r.n_excluded_measured);
    printf("\n%-11s %9s %8s %8s %10s %6s %6s %8s%s\n", "kind", "zoo nodes", "zoo time", "configs",
           "candidates", "rows", "of zoo", "minutes", r.adaptive ? "  held MAPE%  weight" : "");
    for (int i = 0; i < r.n_kinds; i++) {
        const perfpred_plan_kind *k = &r.kinds[i];
        printf("%-11s %9d %7.1f%% %8d %10d %6d %6d %8.2f", k->kind, k->n_zoo_nodes,
               100.0 * k->zoo_time_share, k->n_base, k->n_candidates, k->n_rows, k->n_rows_base,
               k->est_minutes);
        if (r.adaptive) {
            printf("  ");
            put_num(stdout, "%*.1f", k->heldout_mape_pct, 10);
            printf(" %7.3f", k->budget_weight);
        }
        printf("\n");
    }
    printf("%-11s %9d %8s %8s %10s %6d %6s %8.2f\n", "total", r.n_nodes, "", "", "", r.n_rows, "",
           r.est_minutes);
    if (r.n_msgs) printf("\n");
    for (int i = 0; i < r.n_msgs; i++) printf("note: %s\n", r.msgs[i]);
    printf("\nnext: /usr/bin/python3 runners/layer_runner.py %s -o MEASURED.csv --device-name %s\n",
           p.out_csv, r.device);
    return EXIT_OK_;
}

/* --------------------------------------------------------------------- fit ---- */

static void print_netfit_row(const char *what, const perfpred_metrics *m)
{
    if (m->n > 0)
        printf("  %-30s %6d %8.2f %8.2f %9.1f %9.4f\n", what, m->n, m->mape_pct, m->rmspe_pct,
               m->within10_pct, m->spearman);
}

/* What a gated row takes (perfpred_netfit_target.n_fallback_fit), for text output. */
static void gated_take(const perfpred_netfit_target *t, char *out, size_t n)
{
    if (t->n_fallback_fit > 0)
        snprintf(out, n, "the overhead correction refitted on the %d rows outside the held-out "
                 "ones: %.3f x layer sum + %.2f us per kernel + %.2f us per MB",
                 t->n_fallback_fit, t->fallback_scale, t->fallback_per_kernel_us,
                 t->fallback_per_mb_us);
    else
        snprintf(out, n, "the layer sum");
}

/* An ensemble's gate (perfpred_netfit_target.spread_gate): the rows it sent to the predictor's
 * answer without the correction, and the error had every row taken the correction. */
static void print_gate(const perfpred_netfit_target *t)
{
    if (!(t->spread_gate > 0)) return;
    char take[256];
    gated_take(t, take, sizeof take);
    print_netfit_row("  every row corrected", &t->ungated);
    printf("  (%d of %d rows were gated: their GNNs' log corrections spread wider than the "
           "%.4f of the validation rows; they took %s, as the predictor does)\n",
           t->n_gated, t->n_heldout, t->spread_gate, take);
}

static void add_gate_json(cJSON *j, const perfpred_netfit_target *t)
{
    if (!(t->spread_gate > 0)) return;
    cJSON_AddNumberToObject(j, "spread_gate", t->spread_gate);
    cJSON_AddNumberToObject(j, "rows_gated", t->n_gated);
    cJSON *g = cJSON_AddObjectToObject(j, "gated_rows_take");
    if (g && t->n_fallback_fit > 0) {
        cJSON_AddStringToObject(g, "what", "the overhead correction, refitted on the device's rows "
                                "outside the held-out ones");
        cJSON_AddNumberToObject(g, "rows", t->n_fallback_fit);
        cJSON_AddNumberToObject(g, "scale", t->fallback_scale);
        cJSON_AddNumberToObject(g, "per_kernel_us", t->fallback_per_kernel_us);
        cJSON_AddNumberToObject(g, "per_mb_us", t->fallback_per_mb_us);
    } else if (g) {
        cJSON_AddStringToObject(g, "what", "the layer sum");
    }
    cJSON_AddItemToObject(j, "corrected_every_row", json_metrics(&t->ungated));
}

/* --heldout-families "a,b;c;d,e": one dry-run fit per ';'-separated fold, each fold's families held
 * out once, and the MAPE and share within +-10 % pooled over all folds' held-out rows (means
 * weighted by rows: exact, since each row is held out in one fold only). Latency only. */
static int netfit_folds(const perfpred_netfit_params *base, const char *folds, int json)
{
    const char *source = base->source;
    enum { MAX_FOLDS = 32 };
    char buf[4096], *fold[MAX_FOLDS];
    int nf = 0;
    if (snprintf(buf, sizeof buf, "%s", folds) >= (int)sizeof buf) {
        cli_error("--heldout-families: too long");
        return EXIT_USAGE;
    }
    int n_sep = 0;
    for (const char *q = folds; *q; q++) n_sep += *q == ';';
    if (n_sep >= MAX_FOLDS) {
        cli_error("--heldout-families: at most %d folds", MAX_FOLDS);
        return EXIT_USAGE;
    }
    for (char *q = buf, *e; q; q = e ? e + 1 : NULL) {
        e = strchr(q, ';');
        if (e) *e = '\0';
        if (!*q) {
            cli_error("--heldout-families: empty fold in '%s'", folds);
            return EXIT_USAGE;
        }
        fold[nf++] = q;
    }
    perfpred_netfit_report *r = calloc((size_t)nf, sizeof *r);
    perfpred_heldout *h = perfpred_heldout_new();
    if (!r || !h) {
        free(r);
        perfpred_heldout_free(h);
        return EXIT_INTERNAL;
    }
    for (int k = 0; k < nf; k++) {
        perfpred_netfit_params p = *base;
        p.heldout_families = fold[k];
        p.dry_run = 1;
        p.heldout = h;
        char err[1024] = "";
        perfpred_status st = perfpred_calibrate_fit_networks(&p, &r[k], err, sizeof err);
        if (st) {
            cli_error("fold %d (%s): %s", k + 1, fold[k], err);
            free(r);
            perfpred_heldout_free(h);
            return cli_exit_code(st);
        }
    }
    char data[640];
    snprintf(data, sizeof data, "%s rows of %s, %d folds of held-out families (perfpred calibrate "
             "fit --networks ... --heldout-families \"%.300s\")", source, r[0].device, nf, folds);
    int rc = EXIT_OK_;
    /* pooled: sum of n * metric over folds / sum of n */
    double pool[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
    int pool_n[4] = {0, 0, 0, 0}, n_gated = 0, gated = 0;
    for (int k = 0; k < nf; k++) {
        const perfpred_metrics *m[4] = {&r[k].latency.layer_sum, &r[k].latency.direct,
                                        &r[k].latency.corrected, &r[k].latency.ungated};
        n_gated += r[k].latency.n_gated;
        gated |= r[k].latency.spread_gate > 0;
        for (int a = 0; a < 4; a++) {
            if (m[a]->n <= 0) continue;
            pool[a][0] += m[a]->n * m[a]->mape_pct;
            pool[a][1] += m[a]->n * m[a]->within10_pct;
            pool_n[a] += m[a]->n;
        }
    }
    static const char *const what[4] = {"layer_sum", "gnn_direct", "corrected",
                                        "corrected_every_row"};
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r[0].device);
        cJSON_AddStringToObject(o, "source", source);
        cJSON *fs = cJSON_AddArrayToObject(o, "folds");
        for (int k = 0; k < nf; k++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "heldout_families", fold[k]);
            cJSON_AddNumberToObject(f, "heldout_rows", r[k].latency.n_heldout);
            cJSON_AddItemToObject(f, "layer_sum", json_metrics(&r[k].latency.layer_sum));
            if (r[k].latency.direct.n > 0)
                cJSON_AddItemToObject(f, "gnn_direct", json_metrics(&r[k].latency.direct));
            cJSON_AddItemToObject(f, "corrected", json_metrics(&r[k].latency.corrected));
            add_gate_json(f, &r[k].latency);
            cJSON_AddItemToArray(fs, f);
        }
        cJSON *pl = cJSON_AddObjectToObject(o, "pooled");
        for (int a = 0; a < 4; a++) {
            if (!pool_n[a] || (a == 3 && !gated)) continue;
            cJSON *j = cJSON_AddObjectToObject(pl, what[a]);
            cJSON_AddNumberToObject(j, "n", pool_n[a]);
            cJSON_AddNumberToObject(j, "mape_pct", pool[a][0] / pool_n[a]);
            cJSON_AddNumberToObject(j, "within10_pct", pool[a][1] / pool_n[a]);
        }
        cJSON_AddItemToObject(o, "intervals", cli_intervals(h, r[0].device, base->config_dir,
                                                            base->out_dir, data, !base->dry_run,
                                                            1, &rc));
        cli_print_json(o);
    } else {
        printf("calibrate fit (dry run, %d family folds): graph-level correction of %s from %s\n\n",
               nf, r[0].device, source);
        printf("latency MAPE %% on each fold's held-out families (never trained on):\n");
        printf("  %-56s %6s %10s %10s %12s", "held-out families", "rows", "layer sum",
               "GNN alone", "sum x corr.");
        if (gated) printf(" %8s %10s", "gated", "every row");
        printf("\n");
        for (int k = 0; k < nf; k++) {
            const perfpred_netfit_target *t = &r[k].latency;
            printf("  %-56.56s %6d %10.2f ", fold[k], t->n_heldout, t->layer_sum.mape_pct);
            if (t->direct.n > 0) printf("%10.2f", t->direct.mape_pct);
            else printf("%10s", "-");
            printf(" %12.2f", t->corrected.mape_pct);
            if (gated) printf(" %8d %10.2f", t->n_gated, t->ungated.mape_pct);
            printf("\n");
        }
        printf("  %-56s %6d %10.2f ", "pooled", pool_n[0], pool_n[0] ? pool[0][0] / pool_n[0] : 0);
        if (pool_n[1]) printf("%10.2f", pool[1][0] / pool_n[1]);
        else printf("%10s", "-");
        printf(" %12.2f", pool_n[2] ? pool[2][0] / pool_n[2] : 0);
        if (gated) printf(" %8d %10.2f", n_gated, pool_n[3] ? pool[3][0] / pool_n[3] : 0);
        printf("\n");
        if (gated) {
            printf("\ngated: rows whose GNNs' log corrections spread wider than on any validation "
                   "row; they take what the predictor answers there (\"every row\": every row "
                   "corrected):\n");
            for (int k = 0; k < nf; k++) {
                char take[256];
                gated_take(&r[k].latency, take, sizeof take);
                printf("  fold %d: %s\n", k + 1, take);
            }
        }
        printf("\nlatency intervals from the folds' held-out rows (what the predictor answers):\n");
        cli_intervals_print(h, r[0].device, base->config_dir, base->out_dir, data, !base->dry_run,
                            &rc);
        printf("\nno GNN written: folds are an evaluation; train the artifact with one "
               "--heldout-families list%s\n", base->dry_run ? " (dry run: no intervals either)" : "");
    }
    free(r);
    perfpred_heldout_free(h);
    return rc;
}

/* calibrate fit --networks SRC (train) and eval --gnn-heldout SRC (judge the saved correction) */
static int netfit(const perfpred_netfit_params *params, int json, int write_intervals)
{
    const char *source = params->source, *heldout_families = params->heldout_families;
    const int evaluate_only = params->evaluate_only;
    perfpred_netfit_report *r = calloc(1, sizeof *r);
    perfpred_heldout *h = perfpred_heldout_new();
    if (!r || !h) {
        free(r);
        perfpred_heldout_free(h);
        return EXIT_INTERNAL;
    }
    perfpred_netfit_params pp = *params;
    pp.heldout = h;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_fit_networks(&pp, r, err, sizeof err);
    if (st) {
        cli_error("%s", err);
        free(r);
        perfpred_heldout_free(h);
        return cli_exit_code(st);
    }
    /* training writes the intervals of its held-out rows with its artifact; judging a saved
     * artifact writes them only when asked (eval --write-intervals) */
    int write = evaluate_only ? write_intervals : !params->dry_run;
    char data[640];
    snprintf(data, sizeof data, "%s rows of %s held out by %s (perfpred %s)", source, r->device,
             heldout_families ? heldout_families : "family hash bucket",
             evaluate_only ? "eval --gnn-heldout" : "calibrate fit --networks");
    int rc = EXIT_OK_;
    const perfpred_netfit_target *T[2] = {&r->latency, &r->energy};
    const char *names[2] = {"latency", "energy"};
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r->device);
        cJSON_AddStringToObject(o, "source", source);
        if (heldout_families) cJSON_AddStringToObject(o, "heldout_families", heldout_families);
        cJSON_AddNumberToObject(o, "rows", r->n_rows);
        cJSON_AddNumberToObject(o, "rows_used", r->n_used);
        cJSON_AddNumberToObject(o, "rows_failed", r->n_failed);
        for (int t = 0; t < 2; t++) {
            if (!T[t]->present) continue;
            cJSON *j = cJSON_AddObjectToObject(o, names[t]);
            cJSON_AddNumberToObject(j, "heldout_rows", T[t]->n_heldout);
            cJSON_AddItemToObject(j, "layer_sum", json_metrics(&T[t]->layer_sum));
            if (T[t]->direct.n > 0) cJSON_AddItemToObject(j, "gnn_direct", json_metrics(&T[t]->direct));
            cJSON_AddItemToObject(j, "corrected", json_metrics(&T[t]->corrected));
            add_gate_json(j, T[t]);
        }
        if (r->weights_path[0]) cJSON_AddStringToObject(o, "artifact", r->weights_path);
        if (!evaluate_only) {
            cJSON *v = cJSON_AddObjectToObject(o, "validation");
            cJSON_AddNumberToObject(v, "rows", r->n_val);
            cJSON_AddNumberToObject(v, "best_epoch", r->best_epoch);
            cJSON_AddNumberToObject(v, "epochs_run", r->epochs_run);
            if (r->val_rmse_latency >= 0)
                cJSON_AddNumberToObject(v, "rmse_log_latency", r->val_rmse_latency);
            if (r->val_mae_latency >= 0)
                cJSON_AddNumberToObject(v, "mae_log_latency", r->val_mae_latency);
            cJSON_AddStringToObject(v, "criterion", params->huber_delta > 0 ? "mae" : "mse");
            cJSON_AddNumberToObject(v, "huber_delta", params->huber_delta);
            cJSON_AddNumberToObject(o, "ensemble", params->ensemble > 0 ? params->ensemble : 1);
        }
        cJSON_AddItemToObject(o, "intervals", cli_intervals(h, r->device, params->config_dir,
                                                            params->out_dir, data, write, 1, &rc));
        cli_print_json(o);
    } else {
        printf("%s: graph-level correction of %s from %s: %d rows, %d used, %d failed%s%s\n",
               evaluate_only ? "eval" : "calibrate fit", r->device, source, r->n_rows, r->n_used,
               r->n_failed, r->n_failed ? ": " : "", r->first_failure);
        for (int t = 0; t < 2; t++) {
            if (!T[t]->present) continue;
            if (heldout_families)
                printf("\n%s, held-out families %s (never trained on):\n", names[t],
                       heldout_families);
            else
                printf("\n%s, held-out families/architectures (never trained on):\n", names[t]);
            printf("  %-30s %6s %8s %8s %9s %9s\n", "", "rows", "MAPE %", "RMSPE %", "+-10 %",
                   "Spearman");
            print_netfit_row("layer sum alone", &T[t]->layer_sum);
            print_netfit_row("GNN alone (DIPPM-style)", &T[t]->direct);
            print_netfit_row("layer sum x exp(correction)", &T[t]->corrected);
            print_gate(T[t]);
        }
        if (!evaluate_only) {
            if (params->huber_delta > 0)
                printf("\nHuber loss, threshold %g; validation (early stopping on mean |error|)",
                       params->huber_delta);
            else
                printf("\nvalidation (early stopping)");
            printf(": %d rows, best epoch %d of %d", r->n_val, r->best_epoch, r->epochs_run);
            long long seed = params->seed < 0 ? 1 : params->seed; /* the default: 1 */
            if (params->ensemble > 1)
                printf(" (the first of %d GNNs, seeds %lld..%lld, averaged)", params->ensemble,
                       seed, seed + params->ensemble - 1);
            if (r->val_rmse_latency >= 0)
                printf(", RMSE of log(measured / layer sum) %.4f", r->val_rmse_latency);
            if (r->val_mae_latency >= 0) printf(", mean |error| %.4f", r->val_mae_latency);
            printf("\ntraining %.0f s; %s\n", r->seconds_train,
                   r->weights_path[0] ? r->weights_path : "dry run: nothing written");
        }
        printf("\nlatency intervals from the held-out rows (what the predictor answers):\n");
        cli_intervals_print(h, r->device, params->config_dir, params->out_dir, data, write, &rc);
    }
    free(r);
    perfpred_heldout_free(h);
    return rc;
}

/* calibrate fit --networks FILE.csv --overhead --heldout-families FOLDS */
static int fit_overhead(const perfpred_overhead_params *params, int json)
{
    perfpred_overhead_report r;
    perfpred_overhead_params P = *params, *p = &P;
    if (!(P.heldout = perfpred_heldout_new())) return EXIT_INTERNAL;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_fit_overhead(p, &r, err, sizeof err);
    if (st != PERFPRED_OK) {
        print_errbuf(err, perfpred_status_str(st));
        perfpred_heldout_free(P.heldout);
        return cli_exit_code(st);
    }
    char data[640];
    snprintf(data, sizeof data, "%s rows of %s: layer sum on every row, the correction on each "
             "fold's held-out families (perfpred calibrate fit --networks ... --overhead "
             "--heldout-families \"%.300s\")", p->networks_csv, r.device, p->folds);
    int rc = EXIT_OK_;
    if (json) {
        cJSON *o = cJSON_CreateObject(), *folds = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "device", r.device);
        cJSON_AddStringToObject(o, "networks", p->networks_csv);
        cJSON_AddNumberToObject(o, "rows_used", r.n_used);
        cJSON_AddNumberToObject(o, "rows_failed", r.n_failed);
        cJSON_AddItemToObject(o, "folds", folds);
        for (int k = 0; k < r.n_folds; k++) {
            const perfpred_overhead_fold *f = &r.folds[k];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "heldout_families", f->families);
            cJSON_AddNumberToObject(j, "heldout_rows", f->n_rows);
            cJSON_AddItemToObject(j, "layer_sum_mape_pct", json_num(f->layer_sum_mape_pct));
            cJSON_AddItemToObject(j, "corrected_mape_pct", json_num(f->corrected_mape_pct));
            cJSON_AddItemToObject(j, "scale", json_num(f->scale));
            cJSON_AddItemToObject(j, "per_kernel_us", json_num(f->per_kernel_us));
            cJSON_AddItemToObject(j, "per_mb_us", json_num(f->per_mb_us));
            cJSON_AddItemToArray(folds, j);
        }
        cJSON_AddItemToObject(o, "pooled_layer_sum_mape_pct", json_num(r.pooled_layer_sum_mape_pct));
        cJSON_AddItemToObject(o, "pooled_corrected_mape_pct", json_num(r.pooled_corrected_mape_pct));
        cJSON_AddItemToObject(o, "scale", json_num(r.scale));
        cJSON_AddItemToObject(o, "per_kernel_us", json_num(r.per_kernel_us));
        cJSON_AddItemToObject(o, "per_mb_us", json_num(r.per_mb_us));
        cJSON_AddBoolToObject(o, "written", r.written);
        cJSON_AddStringToObject(o, "artifact", r.path);
        cJSON_AddItemToObject(o, "intervals", cli_intervals(P.heldout, r.device, p->config_dir,
                                                            p->out_dir, data, !p->dry_run, 1, &rc));
        cli_print_json(o);
        perfpred_heldout_free(P.heldout);
        return rc;
    }
    printf("calibrate fit (in-network overhead): %s from %s: %d rows used, %d failed\n", r.device,
           p->networks_csv, r.n_used, r.n_failed);
    if (r.n_failed) printf("first failure: %s\n", r.first_failure);
    printf("\nlatency = a x layer sum + c x kernels + d x MB moved (10^6 bytes the kernels read and "
           "write);\nMAPE %% on each fold's held-out families (a, c, d fitted on the other rows):\n");
    printf("  %-56s %6s %10s %10s %7s %7s %7s\n", "held-out families", "rows", "layer sum",
           "corrected", "a", "c us", "d us/MB");
    for (int k = 0; k < r.n_folds; k++) {
        const perfpred_overhead_fold *f = &r.folds[k];
        printf("  %-56.56s %6d %10.2f %10.2f %7.3f %7.1f %7.2f\n", f->families, f->n_rows,
               f->layer_sum_mape_pct, f->corrected_mape_pct, f->scale, f->per_kernel_us,
               f->per_mb_us);
    }
    printf("  %-56s %6d %10.2f %10.2f\n", "pooled", r.n_pooled, r.pooled_layer_sum_mape_pct,
           r.pooled_corrected_mape_pct);
    printf("\nfitted on every row: a = %.4f, c = %.2f us per kernel, d = %.2f us per MB\n", r.scale,
           r.per_kernel_us, r.per_mb_us);
    if (r.written)
        printf("written: %s (applied where the device has no GNN correction)\n", r.path);
    else if (p->dry_run)
        printf("dry run: nothing written\n");
    else
        printf("not written: over the folds it does not beat the layer sum\n");
    printf("\nlatency intervals from the held-out rows:\n");
    cli_intervals_print(P.heldout, r.device, p->config_dir, p->out_dir, data, !p->dry_run, &rc);
    perfpred_heldout_free(P.heldout);
    return rc;
}

/* A drift line ln(later / earlier) = log_a + slope ln(ms) at 0.1, 1 and 10 ms. */
static void print_drift(double log_a, double slope)
{
    static const double at[3] = {0.1, 1.0, 10.0};
    for (int k = 0; k < 3; k++)
        printf("%.3f at %g ms%s", exp(log_a + slope * log(at[k])), at[k], k < 2 ? ", " : "");
}

static int cmd_fit(int argc, char **argv)
{
    perfpred_fit_params p = perfpred_fit_default_params();
    const char *files[MAX_LIST], *rescaled[MAX_LIST];
    const char *networks = NULL, *datasets = NULL, *heldout_families = NULL;
    perfpred_netfit_params gnn = perfpred_netfit_default_params();
    int json = 0, gnn_opts = 0, overhead = 0;
    args A = {argc, argv, 0};
    for (A.i = 2; A.i < argc; A.i++) {
        const char *a = argv[A.i], *v;
        if (is_opt(a, "--device")) {
            if (!(p.device = value(&A, "--device"))) return EXIT_USAGE;
        } else if (is_opt(a, "--layers")) {
            if (list_value(&A, "--layers", files, &p.n_layers_csvs)) return EXIT_USAGE;
            p.layers_csvs = files;
        } else if (is_opt(a, "--rescale-layers")) {
            if (list_value(&A, "--rescale-layers", rescaled, &p.n_rescaled_csvs)) return EXIT_USAGE;
            p.rescaled_csvs = rescaled;
        } else if (strcmp(a, "--rescale-by-class") == 0) {
            p.rescale_by_class = 1;
        } else if (is_opt(a, "--neusight")) {
            if (!(p.neusight_root = value(&A, "--neusight"))) return EXIT_USAGE;
        } else if (is_opt(a, "--networks")) {
            if (!(networks = value(&A, "--networks"))) return EXIT_USAGE;
        } else if (is_opt(a, "--heldout-families")) {
            if (!(heldout_families = value(&A, "--heldout-families"))) return EXIT_USAGE;
        } else if (is_opt(a, "--epochs")) {
            if (!(v = value(&A, "--epochs")) || parse_int(v, "--epochs", 1, 100000, &gnn.epochs))
                return EXIT_USAGE;
            gnn_opts = 1;
        } else if (is_opt(a, "--hidden")) {
            if (!(v = value(&A, "--hidden")) || parse_int(v, "--hidden", 2, 1024, &gnn.hidden))
                return EXIT_USAGE;
            gnn_opts = 1;
        } else if (is_opt(a, "--lr")) {
            if (!(v = value(&A, "--lr")) || parse_num(v, "--lr", 1e-6, 1.0, &gnn.lr))
                return EXIT_USAGE;
            gnn_opts = 1;
        } else if (is_opt(a, "--weight-decay")) {
            if (!(v = value(&A, "--weight-decay")) ||
                parse_num(v, "--weight-decay", 0, 1.0, &gnn.weight_decay))
                return EXIT_USAGE;
            gnn_opts = 1;
        } else if (is_opt(a, "--max-train")) {
            if (!(v = value(&A, "--max-train")) ||
                parse_int(v, "--max-train", 2, 1000000, &gnn.max_train))
                return EXIT_USAGE;
            gnn_opts = 1;
        } else if (is_opt(a, "--huber")) {
            if (!(v = value(&A, "--huber")) || parse_num(v, "--huber", 1e-4, 10.0, &gnn.huber_delta))
                return EXIT_USAGE;
            gnn_opts = 1;
        } else if (is_opt(a, "--ensemble")) {
            if (!(v = value(&A, "--ensemble")) || parse_int(v, "--ensemble", 1, 16, &gnn.ensemble))
                return EXIT_USAGE;
            gnn_opts = 1;
        } else if (is_opt(a, "--datasets")) {
            if (!(datasets = value(&A, "--datasets"))) return EXIT_USAGE;
        } else if (is_opt(a, "--conv-gpu")) {
            if (!(p.neusight_conv_gpu = value(&A, "--conv-gpu"))) return EXIT_USAGE;
        } else if (is_opt(a, "--out") || strcmp(a, "-o") == 0) {
            if (!(p.out_dir = value(&A, strcmp(a, "-o") == 0 ? "-o" : "--out"))) return EXIT_USAGE;
        } else if (is_opt(a, "--heldout-frac")) {
            if (!(v = value(&A, "--heldout-frac")) ||
                parse_num(v, "--heldout-frac", 0.01, 0.5, &p.heldout_frac))
                return EXIT_USAGE;
        } else if (is_opt(a, "--seed")) {
            if (!(v = value(&A, "--seed")) || parse_int(v, "--seed", 0, 2147483647, &p.seed))
                return EXIT_USAGE;
            gnn.seed = p.seed;
        } else if (is_opt(a, "--threads")) {
            if (!(v = value(&A, "--threads")) || parse_int(v, "--threads", 1, 1024, &p.nthread))
                return EXIT_USAGE;
        } else if (is_opt(a, "--boost-rounds")) {
            if (!(v = value(&A, "--boost-rounds")) ||
                parse_int(v, "--boost-rounds", 1, 100000, &p.n_rounds))
                return EXIT_USAGE;
        } else if (is_opt(a, "--max-spread-pct")) {
            if (!(v = value(&A, "--max-spread-pct")) ||
                parse_num(v, "--max-spread-pct", 0, 1e6, &p.max_spread_pct))
                return EXIT_USAGE;
        } else if (is_opt(a, "--config-dir")) {
            if (!(p.config_dir = value(&A, "--config-dir"))) return EXIT_USAGE;
        } else if (strcmp(a, "--dry-run") == 0) {
            p.write_artifacts = 0;
        } else if (strcmp(a, "--overhead") == 0) {
            overhead = 1;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else {
            cli_error("calibrate fit: unknown argument '%s' (perfpred calibrate --help)", a);
            return EXIT_USAGE;
        }
    }
    if (!p.device) {
        cli_error("calibrate fit: --device is required");
        return EXIT_USAGE;
    }
    if (networks) {
        if (p.n_layers_csvs > 0 || p.n_rescaled_csvs > 0 || p.neusight_root) {
            cli_error("calibrate fit: --networks trains the graph-level correction alone");
            return EXIT_USAGE;
        }
        if (overhead) {
            if (!heldout_families || gnn_opts || datasets) {
                cli_error("calibrate fit: --overhead needs --heldout-families \"a,b;c;...\" (the "
                          "folds that judge it) and takes no GNN options or --datasets");
                return EXIT_USAGE;
            }
            perfpred_overhead_params op = perfpred_overhead_default_params();
            op.device = p.device;
            op.networks_csv = networks;
            op.folds = heldout_families;
            op.config_dir = p.config_dir;
            op.out_dir = p.out_dir;
            op.dry_run = !p.write_artifacts;
            return fit_overhead(&op, json);
        }
        gnn.device = p.device;
        gnn.source = networks;
        gnn.datasets_root = datasets;
        gnn.out_dir = p.out_dir;
        gnn.config_dir = p.config_dir;
        gnn.heldout_families = heldout_families;
        gnn.dry_run = !p.write_artifacts;
        if (p.nthread > 0) gnn.threads = p.nthread;
        if (heldout_families && strchr(heldout_families, ';'))
            return netfit_folds(&gnn, heldout_families, json);
        return netfit(&gnn, json, 0);
    }
    if (heldout_families || gnn_opts || overhead) {
        cli_error("calibrate fit: --heldout-families, --epochs, --hidden, --lr, --weight-decay, "
                  "--huber, --max-train and --ensemble go with --networks");
        return EXIT_USAGE;
    }
    if ((p.n_layers_csvs > 0) == (p.neusight_root != NULL)) {
        cli_error("calibrate fit: give --layers MEASURED.csv or --neusight DIR (one of them)");
        return EXIT_USAGE;
    }
    perfpred_fit_report r;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_fit(&p, &r, err, sizeof err);
    if (st != PERFPRED_OK) {
        print_errbuf(err, perfpred_status_str(st));
        return cli_exit_code(st);
    }
    char src[2048] = "";
    if (p.neusight_root) snprintf(src, sizeof src, "%s", p.neusight_root);
    for (int i = 0; i < p.n_layers_csvs; i++) {
        size_t L = strlen(src);
        snprintf(src + L, sizeof src - L, "%s%s", i ? "," : "", p.layers_csvs[i]);
    }
    for (int i = 0; i < p.n_rescaled_csvs; i++) {
        size_t L = strlen(src);
        snprintf(src + L, sizeof src - L, ",%s (rescaled)", p.rescaled_csvs[i]);
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r.device);
        cJSON_AddStringToObject(o, "data", src);
        cJSON_AddBoolToObject(o, "wrote_artifacts", r.wrote_artifacts);
        if (r.wrote_artifacts) cJSON_AddStringToObject(o, "artifacts", r.out_dir);
        cJSON_AddNumberToObject(o, "rows_read", r.n_rows_read);
        cJSON_AddNumberToObject(o, "bad_rows", r.n_bad_rows);
        cJSON_AddNumberToObject(o, "other_device_rows", r.n_other_device);
        cJSON_AddNumberToObject(o, "unusable_rows", r.n_unusable);
        cJSON_AddNumberToObject(o, "noisy_rows", r.n_noisy);
        cJSON_AddNumberToObject(o, "heldout_frac", p.heldout_frac);
        cJSON_AddNumberToObject(o, "seed", p.seed);
        cJSON *rs = cJSON_AddArrayToObject(o, "rescaled");
        for (int i = 0; i < r.n_rescaled; i++) {
            const perfpred_fit_rescale *q = &r.rescaled[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "file", q->file);
            cJSON_AddNumberToObject(j, "rows", q->n_rows);
            cJSON_AddNumberToObject(j, "anchors", q->n_anchors);
            cJSON_AddNumberToObject(j, "log_a", q->log_a);
            cJSON_AddNumberToObject(j, "slope", q->slope);
            cJSON_AddNumberToObject(j, "anchor_mad_pct", q->anchor_mad_pct);
            if (q->by_class) {
                cJSON *cl = cJSON_AddArrayToObject(j, "classes");
                for (int c = 0; c < 2; c++) {
                    cJSON *e = cJSON_CreateObject();
                    cJSON_AddStringToObject(e, "class", c ? "memory" : "compute");
                    cJSON_AddNumberToObject(e, "anchors", q->class_anchors[c]);
                    cJSON_AddBoolToObject(e, "own_line", q->class_own[c]);
                    cJSON_AddNumberToObject(e, "log_a", q->class_log_a[c]);
                    cJSON_AddNumberToObject(e, "slope", q->class_slope[c]);
                    cJSON_AddItemToArray(cl, e);
                }
            }
            cJSON_AddItemToArray(rs, j);
        }
        cJSON *ks = cJSON_AddArrayToObject(o, "kinds");
        for (int i = 0; i < r.n_kinds; i++) {
            const perfpred_fit_kind *k = &r.kinds[i];
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "kind", k->kind);
            cJSON_AddNumberToObject(j, "train_rows", k->n_train);
            cJSON_AddNumberToObject(j, "heldout_rows", k->n_heldout);
            cJSON_AddNumberToObject(j, "train_configs", k->n_train_configs);
            cJSON_AddNumberToObject(j, "heldout_configs", k->n_heldout_configs);
            cJSON_AddNumberToObject(j, "heldout_roofline_rows", k->n_heldout_roofline);
            cJSON_AddItemToObject(j, "model", json_metrics(&k->model));
            cJSON_AddItemToObject(j, "roofline", json_metrics(&k->roofline));
            cJSON_AddItemToObject(j, "train", json_metrics(&k->train));
            cJSON_AddItemToObject(j, "spread_pct", json_num(k->spread_pct));
            cJSON *b = cJSON_AddObjectToObject(j, "base");
            cJSON_AddNumberToObject(b, "peak_tflops", k->peak_tflops);
            cJSON_AddNumberToObject(b, "bw_gbs", k->bw_gbs);
            cJSON_AddNumberToObject(b, "floor_ms", k->floor_ms);
            cJSON_AddNumberToObject(j, "train_seconds", k->train_seconds);
            cJSON_AddBoolToObject(j, "written", k->written);
            if (k->note[0]) cJSON_AddStringToObject(j, "note", k->note);
            cJSON_AddItemToArray(ks, j);
        }
        cJSON *ov = cJSON_AddObjectToObject(o, "overall");
        cJSON_AddItemToObject(ov, "model", json_metrics(&r.model));
        cJSON_AddItemToObject(ov, "roofline", json_metrics(&r.roofline));
        cJSON_AddItemToObject(ov, "spread_pct", json_num(r.spread_pct));
        cJSON_AddNumberToObject(o, "seconds", r.total_seconds);
        cJSON_AddItemToObject(o, "messages", json_msgs(r.msgs, r.n_msgs));
        cli_print_json(o);
        return EXIT_OK_;
    }
    printf("perfpred calibrate fit: %s from %s: %d rows read (%d bad, %d of other devices, %d "
           "unusable, %d too noisy)\n",
           r.device, src, r.n_rows_read, r.n_bad_rows, r.n_other_device, r.n_unusable, r.n_noisy);
    if (p.n_layers_csvs)
        printf("held out per op kind: %.0f%% of its configurations (seed %d); repeats of a "
               "configuration stay together\n", 100.0 * p.heldout_frac, p.seed);
    for (int i = 0; i < r.n_rescaled; i++) {
        const perfpred_fit_rescale *q = &r.rescaled[i];
        printf("rescaled: %s: %d rows, drift fitted on %d anchors: later / earlier = ", q->file,
               q->n_rows, q->n_anchors);
        print_drift(q->log_a, q->slope);
        printf("; anchors after rescaling: median |error| %.1f %%\n", q->anchor_mad_pct);
        for (int c = 0; q->by_class && c < 2; c++) {
            printf("  %s-bound rows: %d anchors, ", c ? "memory" : "compute", q->class_anchors[c]);
            if (!q->class_own[c]) {
                printf("too few (or no usable line): the file's line\n");
                continue;
            }
            printf("own line: ");
            print_drift(q->class_log_a[c], q->class_slope[c]);
            printf("\n");
        }
    }
    printf("\n%-10s %6s %6s | %7s %8s %7s %9s | %9s %7s | %8s | %7s\n", "kind", "train", "held",
           "MAPE%", "RMSPE%", "±10%", "Spearman", "roof MAPE", "±10%", "spread%", "train%");
    for (int i = 0; i < r.n_kinds; i++) {
        const perfpred_fit_kind *k = &r.kinds[i];
        printf("%-10s %6d %6d |", k->kind, k->n_train, k->n_heldout);
        metrics_cols(stdout, &k->model, 0);
        roof_cols(stdout, &k->roofline, 0);
        spread_col(stdout, k->spread_pct, 0);
        printf(" |");
        put_num(stdout, "%*.1f", k->train.n ? k->train.mape_pct : NAN, 8);
        printf("\n");
    }
    if (r.model.n > 0) { /* NeuSight's fit reports per kind only */
        printf("%-10s %6s %6d |", "overall", "", r.model.n);
        metrics_cols(stdout, &r.model, 0);
        roof_cols(stdout, &r.roofline, 0);
        spread_col(stdout, r.spread_pct, 0);
        printf(" |\n");
    }
    for (int i = 0; i < r.n_kinds; i++)
        if (r.kinds[i].note[0]) printf("note: %s: %s\n", r.kinds[i].kind, r.kinds[i].note);
    for (int i = 0; i < r.n_kinds; i++)
        if (r.kinds[i].n_heldout_roofline > 0)
            printf("note: %s: held-out rows outside the model's domain (an operator, kernel, "
                   "stride, dilation or group it never saw): %d of %d, judged with the roofline, "
                   "which predictions use there\n",
                   r.kinds[i].kind, r.kinds[i].n_heldout_roofline, r.kinds[i].n_heldout);
    for (int i = 0; i < r.n_msgs; i++) printf("note: %s\n", r.msgs[i]);
    printf(
        "MAPE/RMSPE/±10%%/Spearman: layer model on held-out rows; roof: the roofline it corrects; "
        "spread: median run-to-run IQR / latency of those rows; train%%: MAPE on training rows\n");
    if (r.wrote_artifacts)
        printf("artifacts: %s/manifest.json (%.1f s)\n", r.out_dir, r.total_seconds);
    else printf("dry run: nothing written (%.1f s)\n", r.total_seconds);
    return EXIT_OK_;
}

/* ------------------------------------------------------------------ import ---- */

static int cmd_import(int argc, char **argv)
{
    perfpred_import_params p = perfpred_import_default_params();
    int json = 0;
    args A = {argc, argv, 0};
    for (A.i = 2; A.i < argc; A.i++) {
        const char *a = argv[A.i];
        if (is_opt(a, "--dataset")) {
            if (!(p.dataset = value(&A, "--dataset"))) return EXIT_USAGE;
        } else if (is_opt(a, "--root")) {
            if (!(p.root = value(&A, "--root"))) return EXIT_USAGE;
        } else if (is_opt(a, "--out") || strcmp(a, "-o") == 0) {
            if (!(p.out_csv = value(&A, strcmp(a, "-o") == 0 ? "-o" : "--out"))) return EXIT_USAGE;
        } else if (is_opt(a, "--device")) {
            if (!(p.device = value(&A, "--device"))) return EXIT_USAGE;
        } else if (is_opt(a, "--runtime")) {
            if (!(p.runtime = value(&A, "--runtime"))) return EXIT_USAGE;
        } else if (is_opt(a, "--config-dir")) {
            if (!(p.config_dir = value(&A, "--config-dir"))) return EXIT_USAGE;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else {
            cli_error("calibrate import: unknown argument '%s' (perfpred calibrate --help)", a);
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
        print_errbuf(err, perfpred_status_str(st));
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
        cJSON_AddItemToObject(o, "notes", json_msgs(r->notes, r->n_notes));
        cJSON_AddItemToObject(o, "messages", json_msgs(r->msgs, r->n_msgs));
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
    if (strcmp(argv[1], "fit") == 0) return cmd_fit(argc, argv);
    if (strcmp(argv[1], "import") == 0) return cmd_import(argc, argv);
    if (strcmp(argv[1], "fit-stacks") == 0) return cli_fit_stacks_main(argc, argv);
    if (strcmp(argv[1], "fit-power") == 0) return cli_fit_power_main(argc, argv);
    cli_error("calibrate: unknown step '%s' (plan, fit, fit-stacks, fit-power or import; perfpred calibrate "
              "--help)",
              argv[1]);
    return EXIT_USAGE;
}

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
            metrics_cols(stdout, &G->model, 1);
            if (roof) roof_cols(stdout, &G->roofline, 1);
            spread_col(stdout, G->spread_pct, 1);
            printf("\n");
        } else {
            printf("%-14s %6d |", G->name, G->model.n);
            metrics_cols(stdout, &G->model, 0);
            if (roof) roof_cols(stdout, &G->roofline, 0);
            spread_col(stdout, G->spread_pct, 0);
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
    cJSON_AddItemToObject(j, "model", json_metrics(&G->model));
    if (roof) cJSON_AddItemToObject(j, "roofline", json_metrics(&G->roofline));
    cJSON_AddItemToObject(j, "spread_pct", json_num(G->spread_pct));
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
            cJSON_AddItemToObject(j, "measured_e2e_ms", json_num(m->measured_e2e_ms));
            cJSON_AddItemToObject(j, "predicted_ms", json_num(m->predicted_ms));
            cJSON_AddItemToObject(j, "error_pct", json_num(m->error_pct));
            cJSON_AddItemToObject(j, "roofline_ms", json_num(m->roofline_ms));
            cJSON_AddItemToObject(j, "roofline_error_pct", json_num(m->roofline_error_pct));
            cJSON_AddItemToArray(arr, j);
        }
        cJSON_AddItemToObject(o, "e2e", json_metrics(&r->e2e));
        cJSON_AddItemToObject(o, "roofline_e2e", json_metrics(&r->roofline_e2e));
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
                                      json_metrics(&T->all.m[cols[c]]));
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

int cli_eval_main(int argc, char **argv)
{
    perfpred_eval_params p = perfpred_eval_default_params();
    int json = 0, markdown = 0, points = 0;
    const char *plot = NULL;
    args A = {argc, argv, 0};
    for (A.i = 1; A.i < argc; A.i++) {
        const char *a = argv[A.i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(eval_usage, stdout);
            return EXIT_OK_;
        }
    }
    const char *neusight_models = NULL, *scaling = NULL, *gnn_heldout = NULL, *datasets = NULL;
    const char *heldout_families = NULL;
    int write_intervals = 0;
    for (A.i = 1; A.i < argc; A.i++) {
        const char *a = argv[A.i];
        if (is_opt(a, "--device")) {
            if (!(p.device = value(&A, "--device"))) return EXIT_USAGE;
        } else if (strcmp(a, "--write-intervals") == 0) {
            write_intervals = 1;
        } else if (is_opt(a, "--gnn-heldout")) {
            if (!(gnn_heldout = value(&A, "--gnn-heldout"))) return EXIT_USAGE;
        } else if (is_opt(a, "--heldout-families")) {
            if (!(heldout_families = value(&A, "--heldout-families"))) return EXIT_USAGE;
        } else if (strcmp(a, "--layer-sum-only") == 0) {
            p.layer_sum_only = 1;
        } else if (is_opt(a, "--datasets")) {
            if (!(datasets = value(&A, "--datasets"))) return EXIT_USAGE;
        } else if (is_opt(a, "--scaling-check")) {
            if (!(scaling = value(&A, "--scaling-check"))) return EXIT_USAGE;
        } else if (is_opt(a, "--neusight-models")) {
            if (!(neusight_models = value(&A, "--neusight-models"))) return EXIT_USAGE;
        } else if (is_opt(a, "--layers")) {
            if (!(p.layers_csv = value(&A, "--layers"))) return EXIT_USAGE;
        } else if (is_opt(a, "--networks")) {
            if (!(p.networks_csv = value(&A, "--networks"))) return EXIT_USAGE;
        } else if (is_opt(a, "--by")) {
            if (!(p.group_by = value(&A, "--by"))) return EXIT_USAGE;
        } else if (is_opt(a, "--plot")) {
            if (!(plot = value(&A, "--plot"))) return EXIT_USAGE;
        } else if (is_opt(a, "--config-dir")) {
            if (!(p.config_dir = value(&A, "--config-dir"))) return EXIT_USAGE;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--markdown") == 0) {
            markdown = 1;
        } else if (strcmp(a, "--points") == 0) {
            points = 1;
        } else if (strcmp(a, "--allow-unknown") == 0) {
            p.allow_unknown = 1;
        } else {
            cli_error("eval: unknown argument '%s' (perfpred eval --help)", a);
            return EXIT_USAGE;
        }
    }
    if (gnn_heldout) {
        if (!p.device) {
            cli_error("eval --gnn-heldout: --device is required");
            return EXIT_USAGE;
        }
        perfpred_netfit_params np = perfpred_netfit_default_params();
        np.device = p.device;
        np.source = gnn_heldout;
        np.datasets_root = datasets;
        np.config_dir = p.config_dir;
        np.heldout_families = heldout_families;
        np.evaluate_only = 1;
        return netfit(&np, json, write_intervals);
    }
    if (heldout_families) {
        cli_error("eval: --heldout-families goes with --gnn-heldout");
        return EXIT_USAGE;
    }
    if (scaling) {
        if (neusight_models || p.layers_csv || p.networks_csv || plot || markdown || points ||
            p.group_by || p.device) {
            cli_error("eval --scaling-check takes only --config-dir and --json");
            return EXIT_USAGE;
        }
        return eval_scaling(scaling, p.config_dir, json);
    }
    if (neusight_models) {
        if (p.layers_csv || p.networks_csv || plot || markdown || points || p.group_by) {
            cli_error("eval --neusight-models takes only --device, --config-dir and --json");
            return EXIT_USAGE;
        }
        return eval_neusight_models(neusight_models, p.device, p.config_dir, json);
    }
    if (!p.device) {
        cli_error("eval: --device is required");
        return EXIT_USAGE;
    }
    if ((p.layers_csv != NULL) == (p.networks_csv != NULL)) {
        cli_error("eval: give --layers FILE.csv or --networks FILE.csv (one of them)");
        return EXIT_USAGE;
    }
    if (p.group_by) {
        int ok = p.layers_csv
                     ? strcmp(p.group_by, "kind") == 0
                     : strcmp(p.group_by, "family") == 0 || strcmp(p.group_by, "model") == 0;
        if (!ok) {
            cli_error("eval: --by %s: layer rows group by kind, network rows by family or model",
                      p.group_by);
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
    perfpred_status st = perfpred_eval(&p, &r, err, sizeof err);
    if (st != PERFPRED_OK) {
        print_errbuf(err, perfpred_status_str(st));
        return cli_exit_code(st);
    }
    const char *file = p.layers_csv ? p.layers_csv : p.networks_csv;
    int rc = EXIT_OK_;
    if (plot) {
        char title[256];
        snprintf(title, sizeof title, "%s: %s latency, predicted vs measured (%d rows)", r.device,
                 r.networks ? "network" : "layer", r.n_points);
        st = perfpred_eval_plot(&r, plot, title, err, sizeof err);
        if (st != PERFPRED_OK) {
            print_errbuf(err, perfpred_status_str(st));
            rc = cli_exit_code(st);
        }
    }
    int roof = !r.networks && r.overall.roofline.n > 0;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", r.device);
        cJSON_AddStringToObject(o, "rows_file", file);
        cJSON_AddStringToObject(o, "rows", r.networks ? "networks" : "layers");
        cJSON_AddStringToObject(o, "calibration_source", r.source);
        cJSON_AddNumberToObject(o, "rows_read", r.n_rows_read);
        cJSON_AddNumberToObject(o, "bad_rows", r.n_bad_rows);
        cJSON_AddNumberToObject(o, "other_device_rows", r.n_other_device);
        cJSON_AddNumberToObject(o, "failed_rows", r.n_failed);
        cJSON *gs = cJSON_AddArrayToObject(o, "groups");
        for (int g = 0; g < r.n_groups; g++)
            cJSON_AddItemToArray(gs, json_group(&r.groups[g], roof));
        cJSON_AddItemToObject(o, "overall", json_group(&r.overall, roof));
        if (r.networks || points) {
            cJSON *ps = cJSON_AddArrayToObject(o, "points");
            for (int i = 0; i < r.n_points; i++) {
                const perfpred_eval_point *q = &r.points[i];
                cJSON *j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "label", q->label);
                cJSON_AddStringToObject(j, "group", q->group);
                cJSON_AddNumberToObject(j, "line", q->line);
                cJSON_AddNumberToObject(j, "batch", (double)q->batch);
                cJSON_AddNumberToObject(j, "measured_ms", q->measured_ms);
                cJSON_AddNumberToObject(j, "predicted_ms", q->predicted_ms);
                if (roof) cJSON_AddItemToObject(j, "roofline_ms", json_num(q->roofline_ms));
                cJSON_AddItemToObject(j, "spread_ms", json_num(q->spread_ms));
                cJSON_AddStringToObject(j, "provenance", perfpred_provenance_str(q->prov));
                cJSON_AddItemToArray(ps, j);
            }
        }
        if (plot && rc == EXIT_OK_) cJSON_AddStringToObject(o, "plot", plot);
        cJSON_AddItemToObject(o, "messages", json_msgs(r.msgs, r.n_msgs));
        cli_print_json(o);
    } else {
        printf("perfpred eval: %s on %d %s rows of %s%s\n", r.device, r.n_points,
               r.networks ? "network" : "layer", file, markdown ? "  " : "");
        printf("predictions: %s (%d of %d rows calibrated)%s\n", r.source,
               r.overall.n_calibrated, r.n_points, markdown ? "  " : "");
        if (r.n_bad_rows || r.n_other_device || r.n_failed)
            printf("skipped: %d bad rows, %d rows of other devices, %d rows not predicted%s\n",
                   r.n_bad_rows, r.n_other_device, r.n_failed, markdown ? "  " : "");
        printf("\n");
        eval_table(&r, markdown);
        if (r.networks || points) eval_points(&r, markdown);
        for (int i = 0; i < r.n_msgs; i++) printf("%snote: %s\n", i ? "" : "\n", r.msgs[i]);
        if (!markdown)
            printf("\nspread: median of the rows' run-to-run IQR / latency (what the measurement "
                   "itself can resolve)%s\n", roof ? "; roof: the descriptor's roofline" : "");
        if (plot && rc == EXIT_OK_) printf("plot: %s\n", plot);
    }
    perfpred_eval_report_free(&r);
    return rc;
}
