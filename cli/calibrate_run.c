/* cli/calibrate_run.c: `perfpred calibrate run`, one command that calibrates the CPU it runs on
 * (perfpred_calibrate_run, run/): options, progress lines and the final report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

const char cli_calibrate_run_usage[] =
    "usage: perfpred calibrate run --device NAME [--budget-min 30] [--quick] [--resume] [options]\n"
    "\n"
    "Calibrates the CPU this runs on, in one command: its figures and descriptor, a layer plan\n"
    "covering every op kind of the zoo and of random architectures, the PyTorch runners, the\n"
    "layer models and the in-network correction, then a judgement on random architectures and\n"
    "torchvision families no stage trained on, beside the measurements' own spread. A new NAME\n"
    "gets a descriptor (configs/devices/NAME.yaml); until its models exist it answers with the\n"
    "nearest calibrated CPU's, transferred.\n"
    "\n"
    "  --device NAME           the device (a new name, or a known CPU to calibrate again)\n"
    "  --budget-min M          minutes for the whole run (default 30, --quick 10; 5 to 600)\n"
    "  --quick                 time whole networks only (about 4 min on 2 cores): keep the\n"
    "                          layer models the device answers with (its own, or for a new\n"
    "                          NAME the nearest calibrated CPU's, transferred) and fit the\n"
    "                          in-network correction over them\n"
    "  --resume                continue a run that was interrupted (same options)\n"
    "  --work DIR              its folder (default ./perfpred-calibration-NAME)\n"
    "  --threads N             the runners' PyTorch threads (default 1)\n"
    "  --seed N                plan and random architectures (default 1)\n"
    "  --python PATH           the Python with torch and torchvision (default /usr/bin/python3)\n"
    "  --config-dir DIR        descriptors and artifacts (default: as every command)\n"
    "  --plan-only DIR         for a board without a perfpred build (a known descriptor):\n"
    "                          write DIR with the plan, graphs, runners and run.sh, and stop\n"
    "  --measurements DIR      that folder back from the board, with its measurements/\n"
    "  --install-anyway        install even where the previous calibration is closer on the\n"
    "                          judging networks (by default it stays, and the new one waits)\n"
    "  --json                  the report as JSON\n"
    "\n"
    "The device's previous artifacts stay in force until the new ones are complete, and\n"
    "after, where they are closer on the judging networks than the new ones.\n";

enum {
    OPT_DEVICE = 256,
    OPT_BUDGET,
    OPT_RESUME,
    OPT_WORK,
    OPT_THREADS,
    OPT_SEED,
    OPT_PYTHON,
    OPT_CONFIG_DIR,
    OPT_PLAN_ONLY,
    OPT_MEASUREMENTS,
    OPT_JSON,
    OPT_INSTALL_ANYWAY,
    OPT_QUICK
};

static const struct option run_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"budget-min", required_argument, NULL, OPT_BUDGET},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"work", required_argument, NULL, OPT_WORK},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"python", required_argument, NULL, OPT_PYTHON},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"plan-only", required_argument, NULL, OPT_PLAN_ONLY},
    {"measurements", required_argument, NULL, OPT_MEASUREMENTS},
    {"json", no_argument, NULL, OPT_JSON},
    {"install-anyway", no_argument, NULL, OPT_INSTALL_ANYWAY},
    {"quick", no_argument, NULL, OPT_QUICK},
    {NULL, 0, NULL, 0}};

static void run_log(perfpred_log_level lvl, const char *msg, void *user)
{
    int json = *(const int *)user;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    FILE *f = json ? stderr : stdout;
    fprintf(f, "%02d:%02d:%02d %s%s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
            lvl >= PERFPRED_LOG_WARN ? "warning: " : "", msg);
    fflush(f);
}

static cJSON *metrics_json(const perfpred_metrics *m)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "n", m->n);
    if (m->n > 0) {
        cJSON_AddNumberToObject(j, "mape_pct", m->mape_pct);
        cJSON_AddNumberToObject(j, "within10_pct", m->within10_pct);
        if (isfinite(m->spearman)) cJSON_AddNumberToObject(j, "spearman", m->spearman);
    }
    return j;
}

static void print_json(const perfpred_run_report *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "descriptor", r->descriptor_path);
    cJSON_AddBoolToObject(o, "descriptor_written", r->descriptor_written);
    cJSON_AddBoolToObject(o, "quick", r->quick);
    cJSON_AddStringToObject(o, "transferred_from", r->borrowed_from);
    cJSON_AddNumberToObject(o, "core_gflops", r->core_gflops);
    cJSON_AddNumberToObject(o, "triad_gbs", r->triad_gbs);
    cJSON_AddNumberToObject(o, "launch_overhead_us", r->launch_overhead_us);
    cJSON_AddNumberToObject(o, "layer_rows", r->n_layer_rows);
    if (r->n_layer_rows > 0)
        cJSON_AddNumberToObject(o, "layer_heldout_mape_pct", r->layer_heldout_mape_pct);
    cJSON_AddNumberToObject(o, "network_rows", r->n_network_rows);
    cJSON_AddBoolToObject(o, "correction_written", r->correction_written);
    cJSON_AddBoolToObject(o, "kept_previous", r->kept_previous);
    cJSON_AddStringToObject(o, "before_this_run", r->before_what);
    cJSON *js = cJSON_AddArrayToObject(o, "judge");
    for (int g = 0; g < r->n_judge; g++) {
        const perfpred_run_judge *J = &r->judge[g];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "set", J->name);
        if (isfinite(J->repeat_pct)) cJSON_AddNumberToObject(j, "repeat_pct", J->repeat_pct);
        cJSON_AddItemToObject(j, "layer_sum", metrics_json(&J->layer_sum));
        cJSON_AddItemToObject(j, "calibrated", metrics_json(&J->calibrated));
        cJSON_AddItemToObject(j, "before", metrics_json(&J->before));
        cJSON_AddItemToArray(js, j);
    }
    cJSON_AddStringToObject(o, "artifacts", r->artifacts_dir);
    cJSON_AddStringToObject(o, "report", r->report_path);
    cJSON_AddStringToObject(o, "plot", r->plot_path);
    cJSON_AddNumberToObject(o, "minutes", r->minutes);
    cli_print_json(o);
}

static void print_text(const perfpred_run_params *p, const perfpred_run_report *r)
{
    if (p->plan_only_dir) {
        printf("bundle written: %s\n  on the board: %s/run.sh\n  back here:    perfpred "
               "calibrate run --device %s --measurements %s\n",
               p->plan_only_dir, p->plan_only_dir, r->device, p->plan_only_dir);
        return;
    }
    if (r->kept_previous)
        printf("\n%s measured and fitted in %.1f min; what it answered before stays in force "
               "(closer on the judging networks); the new one: %s\n",
               r->device, r->minutes, r->artifacts_dir);
    else
        printf("\n%s %s in %.1f min: %s\n", r->device,
               r->quick ? "adapted (in-network correction over the layer models in force)"
                        : "calibrated",
               r->minutes, r->artifacts_dir);
    if (r->n_judge > 0) {
        printf("judged on networks of families and seeds no stage trained on (MAPE %%; repeat: "
               "the measurements' own\ndisagreement, two half-runs of each row)\n");
        printf("  %-22s %5s %9s %11s %11s %9s %9s %12s\n", "set", "rows", "repeat", "layer sum",
               "calibrated", "<=10 %", "Spearman", "before run");
        for (int g = 0; g < r->n_judge; g++) {
            const perfpred_run_judge *J = &r->judge[g];
            printf("  %-22s %5d %8.1f%% %10.1f%% %10.1f%% %8.0f%% %9.3f %11.1f%%\n", J->name,
                   J->calibrated.n, J->repeat_pct, J->layer_sum.mape_pct, J->calibrated.mape_pct,
                   J->calibrated.within10_pct, J->calibrated.spearman, J->before.mape_pct);
        }
        printf("  before this run: %s\n", r->before_what);
    } else if (r->report_path[0]) {
        /* resumed after the judge: its report as written then */
        FILE *f = fopen(r->report_path, "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) printf("  %s", line);
        if (f) fclose(f);
    }
    if (r->report_path[0]) printf("report: %s\n", r->report_path);
    if (r->plot_path[0]) printf("plot:   %s\n", r->plot_path);
}

int cli_calibrate_run(int argc, char **argv)
{
    perfpred_run_params p = perfpred_run_default_params();
    int json = 0, budget_given = 0;
    cli_getopt G;
    cli_getopt_init(&G, argc - 1, argv + 1, "-:", run_options);
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        int v;
        switch (c) {
        case OPT_DEVICE: p.device = optarg; break;
        case OPT_BUDGET:
            if (cli_parse_num(optarg, "--budget-min", 5, 600, &p.budget_min)) return EXIT_USAGE;
            budget_given = 1;
            break;
        case OPT_RESUME: p.resume = 1; break;
        case OPT_WORK: p.work_dir = optarg; break;
        case OPT_THREADS:
            if (cli_parse_int(optarg, "--threads", 1, 256, &p.threads)) return EXIT_USAGE;
            break;
        case OPT_SEED:
            if (cli_parse_int(optarg, "--seed", 0, 1000000000, &v)) return EXIT_USAGE;
            p.seed = (uint64_t)v;
            break;
        case OPT_PYTHON: p.python = optarg; break;
        case OPT_CONFIG_DIR: p.config_dir = optarg; break;
        case OPT_PLAN_ONLY: p.plan_only_dir = optarg; break;
        case OPT_MEASUREMENTS: p.measurements_dir = optarg; break;
        case OPT_JSON: json = 1; break;
        case OPT_INSTALL_ANYWAY: p.install_anyway = 1; break;
        case OPT_QUICK: p.quick = 1; break;
        case ':': cli_error("%s needs a value", G.word); return EXIT_USAGE;
        default:
            cli_error("calibrate run: unknown argument '%s' (perfpred calibrate run --help)",
                      G.word);
            return EXIT_USAGE;
        }
    }
    if (!p.device) {
        cli_error("calibrate run: --device NAME is required (perfpred calibrate run --help)");
        return EXIT_USAGE;
    }
    /* whole networks only: a train and a judge set of about a minute each on 2 cores */
    if (p.quick && !budget_given) p.budget_min = 10;
    p.log = run_log;
    p.log_user = &json;
    perfpred_run_report *r = calloc(1, sizeof *r);
    if (!r) return EXIT_INTERNAL;
    char err[1024] = "";
    perfpred_status st = perfpred_calibrate_run(&p, r, err, sizeof err);
    if (st != PERFPRED_OK) {
        cli_print_errbuf(err, perfpred_status_str(st));
        if (!p.plan_only_dir && !p.measurements_dir)
            fprintf(stderr, "what was measured is kept: add --resume to continue\n");
        free(r);
        return cli_exit_code(st);
    }
    if (json) print_json(r);
    else print_text(&p, r);
    free(r);
    return EXIT_OK_;
}
