/* lab/fewshot_main.c: lab_fewshot, the command behind docs/networks.md's few-shot figures. Loads
 * a NAS dataset's rows (read in place from ../shared/datasets), runs lab_fewshot_fit and prints
 * the held-out metrics before and after fine-tuning. Exit codes: 0 done, 1 the study failed, 2 bad arguments. */
#include "lab/fewshot.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: lab_fewshot --target DEV --pretrain DEV1,DEV2,... [--shots N] [--dataset NAME]\n"
          "                   [--max-train N] [--epochs N] [--patience N] [--threads N] [--seed N]\n"
          "defaults: --shots 20 --dataset help-nb201, the network fit's parameters otherwise\n",
          f);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static void print_metrics(const char *what, const pp_metrics *m)
{
    printf("%-10s %6d rows  MAPE %6.2f %%  within 10 %% %5.1f %%  Spearman %.3f\n", what, m->n,
           m->mape_pct, m->within10_pct, m->spearman);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"target", required_argument, NULL, 't'},   {"pretrain", required_argument, NULL, 'p'},
        {"shots", required_argument, NULL, 'n'},    {"dataset", required_argument, NULL, 'd'},
        {"max-train", required_argument, NULL, 'm'}, {"epochs", required_argument, NULL, 'e'},
        {"patience", required_argument, NULL, 'P'}, {"threads", required_argument, NULL, 'j'},
        {"seed", required_argument, NULL, 's'},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *target = NULL, *pretrain = NULL, *dataset = "help-nb201";
    int shots = 20, v;
    pp_fit_net_params p = pp_fit_net_default_params();
    for (int c; (c = getopt_long(argc, argv, "h", opts, NULL)) != -1;) {
        int bad = 0;
        switch (c) {
        case 't': target = optarg; break;
        case 'p': pretrain = optarg; break;
        case 'd': dataset = optarg; break;
        case 'n': bad = parse_int(optarg, 2, 256, &shots); break;
        case 'm': bad = parse_int(optarg, 1, 1000000, &p.max_train); break;
        case 'e': bad = parse_int(optarg, 1, 100000, &p.gnn.epochs); break;
        case 'P': bad = parse_int(optarg, 1, 100000, &p.gnn.patience); break;
        case 'j': bad = parse_int(optarg, 1, 256, &p.gnn.nthreads); break;
        case 's':
            bad = parse_int(optarg, 0, 1 << 30, &v);
            if (!bad) p.gnn.seed = (uint64_t)v;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "lab_fewshot: bad value '%s'\n", optarg);
            return 2;
        }
    }
    if (!target || !pretrain || optind != argc) {
        usage(stderr);
        return 2;
    }
    const char *pre[64];
    char names[64][64];
    int n_pre = 0;
    size_t len;
    for (const char *cur = pretrain, *it; (it = pp_list_item(&cur, &len));) {
        if (n_pre == 64 || len >= sizeof names[0]) {
            fprintf(stderr, "lab_fewshot: at most 64 pretraining devices of < 64 characters\n");
            return 2;
        }
        memcpy(names[n_pre], it, len);
        names[n_pre][len] = '\0';
        pre[n_pre] = names[n_pre];
        n_pre++;
    }
    /* every row of the dataset, as docs/networks.md's figures were made: lab_fewshot_fit keeps
     * those of the devices named, at the target's batch */
    pp_err err = {0};
    pp_net_table *all = NULL;
    int rc = 1;
    pp_netset_opts o = pp_datasets_netset_default_opts();
    if (pp_datasets_netset_import(dataset, &o, &all, NULL, &err)) goto out;
    lab_fewshot_report r;
    if (lab_fewshot_fit(target, shots, pre, n_pre, all->rows, all->n, &p, &r, &err)) goto out;
    printf("few-shot %s: %d shots, %d pretraining rows on %d devices, %s layer times, %.0f s\n",
           target, r.n_shots, r.n_pretrain_rows, r.n_pretrain_devices,
           r.direct ? "a pretraining device's" : "its own", r.seconds_total);
    if (!r.direct) print_metrics("layer sum", &r.layer_sum);
    print_metrics("before", &r.before);
    print_metrics("after", &r.after);
    rc = 0;
out:
    if (rc) fprintf(stderr, "lab_fewshot: %s\n", err.msg);
    pp_measure_net_table_free(all);
    return rc;
}
