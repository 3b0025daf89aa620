/* calibrate/calibrate_api.c: the public face of calibration (include/perfpred.h): parameter makers
 * with the documented defaults, libsvm-style parameter checks run before any work, and the release
 * of an evaluation report. The work itself lives in plan.c, fit_layers.c, eval.c and plot.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calibrate/calibrate.h"

static perfpred_status bad(char *errbuf, size_t n, const char *fmt, const char *field)
{
    if (errbuf && n) snprintf(errbuf, n, fmt, field);
    return PERFPRED_ERR_INVALID_ARG;
}

/* ------------------------------------------------------------------------------ plan ---- */

perfpred_plan_params perfpred_plan_default_params(void)
{
    perfpred_plan_params p;
    memset(&p, 0, sizeof p);
    p.budget_min = 20.0;
    p.seed = 1;
    p.perturb_share = 0.5;
    /* runners/timing.py Protocol() */
    p.protocol.rounds = 7;
    p.protocol.burst = 5;
    p.protocol.warmup_calls = 3;
    p.protocol.warmup_ms = 50.0;
    p.protocol.min_sample_us = 200.0;
    p.protocol.max_inner = 1000;
    return p;
}

perfpred_status perfpred_plan_check_params(const perfpred_plan_params *p, char *errbuf, size_t n)
{
    if (!p) return bad(errbuf, n, "plan: %s is NULL", "params");
    if (!p->device || !*p->device) return bad(errbuf, n, "plan: %s is required", "device");
    if (!p->out_csv || !*p->out_csv) return bad(errbuf, n, "plan: %s is required", "out_csv");
    if (p->n_anchor_csvs < 0 || p->n_anchor_csvs > 64 || (p->n_anchor_csvs > 0 && !p->anchor_csvs))
        return bad(errbuf, n, "plan: %s must list 0 to 64 files", "anchor_csvs");
    for (int i = 0; i < p->n_anchor_csvs; i++)
        if (!p->anchor_csvs[i] || !*p->anchor_csvs[i])
            return bad(errbuf, n, "plan: %s holds an empty path", "anchor_csvs");
    if (p->n_anchors != 0 && (p->n_anchors < PERFPRED_RESCALE_MIN_ANCHORS || p->n_anchors > 1000))
        return bad(errbuf, n, "plan: %s must be 0 (40) or in [10, 1000]", "n_anchors");
    if (!(p->budget_min > 0) || !isfinite(p->budget_min) || p->budget_min > 1e6)
        return bad(errbuf, n, "plan: %s must be in (0, 1e6] minutes", "budget_min");
    if (!(p->perturb_share >= 0 && p->perturb_share < 1))
        return bad(errbuf, n, "plan: %s must be in [0, 1)", "perturb_share");
    if (p->n_models < 0 || (p->n_models > 0 && !p->models))
        return bad(errbuf, n, "plan: %s does not match its count", "models");
    if (p->n_exclude_families < 0 || (p->n_exclude_families > 0 && !p->exclude_families))
        return bad(errbuf, n, "plan: %s does not match its count", "exclude_families");
    if (p->n_batches < 0 || (p->n_batches > 0 && !p->batches))
        return bad(errbuf, n, "plan: %s does not match its count", "batches");
    for (int i = 0; i < p->n_batches; i++)
        if (p->batches[i] < 1 || p->batches[i] > 65536)
            return bad(errbuf, n, "plan: %s must be in [1, 65536]", "batches");
    const perfpred_runner_protocol *r = &p->protocol;
    if (r->rounds < 1 || r->rounds > 1000)
        return bad(errbuf, n, "plan: %s out of range", "protocol.rounds");
    if (r->burst < 1 || r->burst > 1000)
        return bad(errbuf, n, "plan: %s out of range", "protocol.burst");
    if (r->warmup_calls < 0)
        return bad(errbuf, n, "plan: %s must be >= 0", "protocol.warmup_calls");
    if (!(r->warmup_ms >= 0)) return bad(errbuf, n, "plan: %s must be >= 0", "protocol.warmup_ms");
    if (!(r->min_sample_us >= 0))
        return bad(errbuf, n, "plan: %s must be >= 0", "protocol.min_sample_us");
    if (r->max_inner < 1) return bad(errbuf, n, "plan: %s must be >= 1", "protocol.max_inner");
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------------------- fit ---- */

perfpred_fit_params perfpred_fit_default_params(void)
{
    perfpred_fit_params p;
    memset(&p, 0, sizeof p);
    p.heldout_frac = 0.2;
    p.seed = 42;
    p.nthread = 2;
    p.n_rounds = 0;
    p.write_artifacts = 1;
    return p;
}

perfpred_status perfpred_fit_check_params(const perfpred_fit_params *p, char *errbuf, size_t n)
{
    if (!p) return bad(errbuf, n, "fit: %s is NULL", "params");
    if (!p->device || !*p->device) return bad(errbuf, n, "fit: %s is required", "device");
    if ((p->n_layers_csvs > 0) == (p->neusight_root != NULL))
        return bad(errbuf, n, "fit: give exactly one of %s", "layers_csvs and neusight_root");
    if (p->n_layers_csvs < 0 || p->n_layers_csvs > 64 || (p->n_layers_csvs > 0 && !p->layers_csvs))
        return bad(errbuf, n, "fit: %s must list 1 to 64 files", "layers_csvs");
    for (int i = 0; i < p->n_layers_csvs; i++)
        if (!p->layers_csvs[i] || !*p->layers_csvs[i])
            return bad(errbuf, n, "fit: %s holds an empty path", "layers_csvs");
    if (p->n_rescaled_csvs < 0 || p->n_rescaled_csvs > PERFPRED_MAX_RESCALED ||
        (p->n_rescaled_csvs > 0 && !p->rescaled_csvs))
        return bad(errbuf, n, "fit: %s must list 0 to 8 files", "rescaled_csvs");
    if (p->n_rescaled_csvs > 0 && p->n_layers_csvs == 0)
        return bad(errbuf, n, "fit: %s need layers_csvs (the session they are rescaled to)",
                   "rescaled_csvs");
    if (p->rescale_by_class && p->n_rescaled_csvs == 0)
        return bad(errbuf, n, "fit: %s goes with rescaled_csvs", "rescale_by_class");
    for (int i = 0; i < p->n_rescaled_csvs; i++)
        if (!p->rescaled_csvs[i] || !*p->rescaled_csvs[i])
            return bad(errbuf, n, "fit: %s holds an empty path", "rescaled_csvs");
    if (!(p->heldout_frac > 0 && p->heldout_frac <= 0.5))
        return bad(errbuf, n, "fit: %s must be in (0, 0.5]", "heldout_frac");
    if (p->seed < 0) return bad(errbuf, n, "fit: %s must be >= 0", "seed");
    if (p->nthread < 1 || p->nthread > 1024)
        return bad(errbuf, n, "fit: %s must be in [1, 1024]", "nthread");
    if (!(p->max_spread_pct >= 0) || !isfinite(p->max_spread_pct))
        return bad(errbuf, n, "fit: %s must be >= 0 (0: off)", "max_spread_pct");
    if (p->n_rounds < 0 || p->n_rounds > 100000)
        return bad(errbuf, n, "fit: %s must be in [0, 100000]", "n_rounds");
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------------------ eval ---- */

perfpred_eval_params perfpred_eval_default_params(void)
{
    perfpred_eval_params p;
    memset(&p, 0, sizeof p);
    return p;
}

perfpred_status perfpred_eval_check_params(const perfpred_eval_params *p, char *errbuf, size_t n)
{
    if (!p) return bad(errbuf, n, "eval: %s is NULL", "params");
    if (!p->device || !*p->device) return bad(errbuf, n, "eval: %s is required", "device");
    if ((p->layers_csv != NULL) == (p->networks_csv != NULL))
        return bad(errbuf, n, "eval: give exactly one of %s", "layers_csv and networks_csv");
    if (p->group_by) {
        int ok = p->layers_csv ? strcmp(p->group_by, "kind") == 0
                               : (strcmp(p->group_by, "family") == 0 ||
                                  strcmp(p->group_by, "model") == 0);
        if (!ok)
            return bad(errbuf, n, "eval: %s",
                       p->layers_csv ? "layer rows group by kind"
                                     : "network rows group by family or model");
    }
    return PERFPRED_OK;
}

void perfpred_eval_report_free(perfpred_eval_report *r)
{
    if (!r) return;
    pp_arena_free(r->store);
    memset(r, 0, sizeof *r);
}
