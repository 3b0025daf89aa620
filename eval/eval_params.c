/* eval/eval_params.c: perfpred_eval_params, its check run before any work, and the release of an
 * evaluation report (include/perfpred_calibrate.h). */
#include <string.h>

#include "eval/eval.h"

perfpred_eval_params perfpred_eval_default_params(void)
{
    perfpred_eval_params p;
    memset(&p, 0, sizeof p);
    return p;
}

perfpred_status perfpred_eval_check_params(const perfpred_eval_params *p, char *errbuf, size_t n)
{
    if (!p) return pp_measure_bad_param(errbuf, n, "eval: %s is NULL", "params");
    if (!p->device || !*p->device) return pp_measure_bad_param(errbuf, n, "eval: %s is required",
                                                               "device");
    if ((p->layers_csv != NULL) == (p->networks_csv != NULL))
        return pp_measure_bad_param(errbuf, n, "eval: give exactly one of %s",
                                    "layers_csv and networks_csv");
    if (p->group_by) {
        int ok = p->layers_csv ? strcmp(p->group_by, "kind") == 0
                               : (strcmp(p->group_by, "family") == 0 ||
                                  strcmp(p->group_by, "model") == 0);
        if (!ok)
            return pp_measure_bad_param(errbuf, n, "eval: %s",
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
