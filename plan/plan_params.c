/* plan/plan_params.c: perfpred_plan_params with the documented defaults, and its libsvm-style
 * check run before any work (include/perfpred_calibrate.h). */
#include <math.h>
#include <string.h>

#include "plan/plan.h"

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
    if (!p) return pp_measure_bad_param(errbuf, n, "plan: %s is NULL", "params");
    if (!p->device || !*p->device) return pp_measure_bad_param(errbuf, n, "plan: %s is required",
                                                               "device");
    if (!p->out_csv || !*p->out_csv) return pp_measure_bad_param(errbuf, n, "plan: %s is required",
                                                                 "out_csv");
    if (p->n_anchor_csvs < 0 || p->n_anchor_csvs > 64 || (p->n_anchor_csvs > 0 && !p->anchor_csvs))
        return pp_measure_bad_param(errbuf, n, "plan: %s must list 0 to 64 files", "anchor_csvs");
    for (int i = 0; i < p->n_anchor_csvs; i++)
        if (!p->anchor_csvs[i] || !*p->anchor_csvs[i])
            return pp_measure_bad_param(errbuf, n, "plan: %s holds an empty path", "anchor_csvs");
    if (p->n_anchors != 0 && (p->n_anchors < PERFPRED_RESCALE_MIN_ANCHORS || p->n_anchors > 1000))
        return pp_measure_bad_param(errbuf, n, "plan: %s must be 0 (40) or in [10, 1000]",
                                    "n_anchors");
    if (!(p->budget_min > 0) || !isfinite(p->budget_min) || p->budget_min > 1e6)
        return pp_measure_bad_param(errbuf, n, "plan: %s must be in (0, 1e6] minutes",
                                    "budget_min");
    if (!(p->perturb_share >= 0 && p->perturb_share < 1))
        return pp_measure_bad_param(errbuf, n, "plan: %s must be in [0, 1)", "perturb_share");
    if (p->n_models < 0 || (p->n_models > 0 && !p->models))
        return pp_measure_bad_param(errbuf, n, "plan: %s does not match its count", "models");
    if (p->n_exclude_families < 0 || (p->n_exclude_families > 0 && !p->exclude_families))
        return pp_measure_bad_param(errbuf, n, "plan: %s does not match its count",
                                    "exclude_families");
    if (p->n_batches < 0 || (p->n_batches > 0 && !p->batches))
        return pp_measure_bad_param(errbuf, n, "plan: %s does not match its count", "batches");
    for (int i = 0; i < p->n_batches; i++)
        if (p->batches[i] < 1 || p->batches[i] > 65536)
            return pp_measure_bad_param(errbuf, n, "plan: %s must be in [1, 65536]", "batches");
    const perfpred_runner_protocol *r = &p->protocol;
    if (r->rounds < 1 || r->rounds > 1000)
        return pp_measure_bad_param(errbuf, n, "plan: %s out of range", "protocol.rounds");
    if (r->burst < 1 || r->burst > 1000)
        return pp_measure_bad_param(errbuf, n, "plan: %s out of range", "protocol.burst");
    if (r->warmup_calls < 0)
        return pp_measure_bad_param(errbuf, n, "plan: %s must be >= 0", "protocol.warmup_calls");
    if (!(r->warmup_ms >= 0)) return pp_measure_bad_param(errbuf, n, "plan: %s must be >= 0",
                                                          "protocol.warmup_ms");
    if (!(r->min_sample_us >= 0))
        return pp_measure_bad_param(errbuf, n, "plan: %s must be >= 0", "protocol.min_sample_us");
    if (r->max_inner < 1) return pp_measure_bad_param(errbuf, n, "plan: %s must be >= 1",
                                                      "protocol.max_inner");
    return PERFPRED_OK;
}
