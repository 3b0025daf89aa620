/* fit/fit_params.c: perfpred_fit_params with the documented defaults, and its libsvm-style check
 * run before any work (include/perfpred_calibrate.h). */
#include <math.h>
#include <string.h>

#include "fit/fit.h"

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
    if (!p) return pp_measure_bad_param(errbuf, n, "fit: %s is NULL", "params");
    if (!p->device || !*p->device) return pp_measure_bad_param(errbuf, n, "fit: %s is required",
                                                               "device");
    if ((p->n_layers_csvs > 0) == (p->neusight_root != NULL))
        return pp_measure_bad_param(errbuf, n, "fit: give exactly one of %s",
                                    "layers_csvs and neusight_root");
    if (p->n_layers_csvs < 0 || p->n_layers_csvs > 64 || (p->n_layers_csvs > 0 && !p->layers_csvs))
        return pp_measure_bad_param(errbuf, n, "fit: %s must list 1 to 64 files", "layers_csvs");
    for (int i = 0; i < p->n_layers_csvs; i++)
        if (!p->layers_csvs[i] || !*p->layers_csvs[i])
            return pp_measure_bad_param(errbuf, n, "fit: %s holds an empty path", "layers_csvs");
    if (p->n_rescaled_csvs < 0 || p->n_rescaled_csvs > PERFPRED_MAX_RESCALED ||
        (p->n_rescaled_csvs > 0 && !p->rescaled_csvs))
        return pp_measure_bad_param(errbuf, n, "fit: %s must list 0 to 8 files", "rescaled_csvs");
    if (p->n_rescaled_csvs > 0 && p->n_layers_csvs == 0)
        return pp_measure_bad_param(errbuf, n,
                                    "fit: %s need layers_csvs (the session they are rescaled to)",
                                    "rescaled_csvs");
    if (p->rescale_by_class && p->n_rescaled_csvs == 0)
        return pp_measure_bad_param(errbuf, n, "fit: %s goes with rescaled_csvs",
                                    "rescale_by_class");
    for (int i = 0; i < p->n_rescaled_csvs; i++)
        if (!p->rescaled_csvs[i] || !*p->rescaled_csvs[i])
            return pp_measure_bad_param(errbuf, n, "fit: %s holds an empty path", "rescaled_csvs");
    if (!(p->heldout_frac > 0 && p->heldout_frac <= 0.5))
        return pp_measure_bad_param(errbuf, n, "fit: %s must be in (0, 0.5]", "heldout_frac");
    if (p->seed < 0) return pp_measure_bad_param(errbuf, n, "fit: %s must be >= 0", "seed");
    if (p->nthread < 1 || p->nthread > 1024)
        return pp_measure_bad_param(errbuf, n, "fit: %s must be in [1, 1024]", "nthread");
    if (!(p->max_spread_pct >= 0) || !isfinite(p->max_spread_pct))
        return pp_measure_bad_param(errbuf, n, "fit: %s must be >= 0 (0: off)", "max_spread_pct");
    if (p->n_rounds < 0 || p->n_rounds > 100000)
        return pp_measure_bad_param(errbuf, n, "fit: %s must be in [0, 100000]", "n_rounds");
    return PERFPRED_OK;
}
