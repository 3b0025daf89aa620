/* run/runner_args.c: the runners' command lines, stated once. The local stages execute them
 * (stages.c) and a bundle's run.sh writes them shell-quoted (bundle.c), so the runner protocol
 * (no cache scrub, canaries, rounds and samples, the stage's minutes) cannot differ between the
 * two. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "run/run.h"

/* Appends one argument, formatted, to c's pool; past the pool or PP_RUN_MAX_ARGS it marks c
 * overflowed and adds nothing more. */
static void arg(pp_run_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(pp_run_cmd *c, const char *fmt, ...)
{
    if (c->overflow || c->argc >= PP_RUN_MAX_ARGS) {
        c->overflow = 1;
        return;
    }
    size_t room = sizeof c->pool - c->used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(c->pool + c->used, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room) {
        c->overflow = 1;
        return;
    }
    c->argv[c->argc++] = c->pool + c->used;
    c->argv[c->argc] = NULL;
    c->used += (size_t)n + 1;
}

/* What every timing runner is given: the device, its threads, the runner's own option (opt val),
 * canaries and the stage's minutes. Canaries: the layers, the networks and the judging networks
 * run minutes apart on a machine whose speed moves with its neighbours' load; each visit is scaled
 * to the run's quiet speed. */
static void protocol(pp_run_cmd *c, const pp_run *R, const char *opt, const char *val,
                     double minutes)
{
    arg(c, "--device-name");
    arg(c, "%s", R->device);
    arg(c, "--threads");
    arg(c, "%d", R->threads);
    arg(c, "%s", opt);
    arg(c, "%s", val);
    arg(c, "--canary");
    arg(c, "--budget-min");
    arg(c, "%.2f", minutes);
}

void pp_run_layer_protocol(perfpred_runner_protocol *p)
{
    p->warmup_ms = PP_RUN_LAYER_WARMUP_MS;
    p->rounds = PP_RUN_LAYER_ROUNDS;
    p->burst = PP_RUN_LAYER_BURST;
    p->warmup_calls = PP_RUN_LAYER_WARMUP_CALLS;
}

perfpred_status pp_run_runner_cmd(const pp_run *R, pp_run_runner which, int in_bundle,
                                  pp_run_cmd *c)
{
    memset(c, 0, sizeof *c);
    /* locally the scripts are the source tree's and the files the work folder's; in a bundle both
     * are relative to the bundle, where run.sh runs */
    const char *src = in_bundle ? "" : R->src_root, *work = in_bundle ? "" : R->work;
    const char *sep = in_bundle ? "" : "/";
    switch (which) {
    case PP_RUN_HOST_PROBE:
        c->what = "runners/host_probe.py";
        arg(c, "%s%s%s", src, sep, c->what);
        arg(c, "-o");
        arg(c, "%s%smeasurements/figures.json", work, sep);
        arg(c, "--threads");
        arg(c, "%d", R->threads);
        break;
    case PP_RUN_LAYER_RUNNER: {
        perfpred_runner_protocol lp = {0};
        pp_run_layer_protocol(&lp);
        c->what = "runners/layer_runner.py";
        c->budgeted = 1;
        arg(c, "%s%s%s", src, sep, c->what);
        arg(c, "%s%splan.csv", work, sep);
        arg(c, "-o");
        arg(c, "%s%smeasurements/layers.csv", work, sep);
        /* no cache scrub: a layer meets warm caches where its working set fits, as inside a
         * network where the layer before it just wrote its input; what a network adds beyond
         * that (weights that a long network pushed out, fresh pages) is the in-network
         * correction's */
        protocol(c, R, "--scrub-mb", "0", R->budget_layers);
        arg(c, "--warmup-ms");
        arg(c, "%g", lp.warmup_ms);
        arg(c, "--rounds");
        arg(c, "%d", lp.rounds);
        arg(c, "--burst");
        arg(c, "%d", lp.burst);
        arg(c, "--warmup-calls");
        arg(c, "%d", lp.warmup_calls);
        break;
    }
    case PP_RUN_TRAIN_NETWORKS:
    case PP_RUN_JUDGE_NETWORKS: {
        int judge = which == PP_RUN_JUDGE_NETWORKS;
        const char *set = judge ? "judge" : "train";
        c->what = "runners/network_runner.py";
        c->budgeted = 1;
        arg(c, "%s%s%s", src, sep, c->what);
        arg(c, "--reference");
        arg(c, "%s%sgraphs/%s/reference.csv", work, sep, set);
        arg(c, "--configs");
        arg(c, "%s%sgraphs/%s-configs.csv", work, sep, set);
        arg(c, "--graphs-dir");
        arg(c, "%s%sgraphs/zoo", work, sep);
        arg(c, "-o");
        arg(c, "%s%smeasurements/%s.csv", work, sep, judge ? "judge" : "networks");
        protocol(c, R, "--rounds", "5", judge ? R->budget_judge : R->budget_train);
        break;
    }
    default:
        c->what = "runner";
        c->overflow = 1;
    }
    return c->overflow ? PERFPRED_ERR_INTERNAL : PERFPRED_OK;
}

void pp_run_shell_quote(pp_strbuf *b, const char *s)
{
    /* letters, digits and these need no quotes in any POSIX shell */
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "_-+=./:,@%";
    if (*s && strspn(s, safe) == strlen(s)) {
        pp_strbuf_printf(b, "%s", s);
        return;
    }
    pp_strbuf_printf(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            pp_strbuf_printf(b, "'\\''");
        else
            pp_strbuf_printf(b, "%c", *p);
    }
    pp_strbuf_printf(b, "'");
}
