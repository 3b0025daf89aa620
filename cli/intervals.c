/* cli/intervals.c: what the fit commands say about the latency intervals their held-out rows give
 * (perfpred_heldout), and writing them beside the device's artifacts (intervals.json). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *const paths[] = {"layer", "overhead", "gnn", "gated"};

cJSON *cli_intervals(const perfpred_heldout *h, const char *device, const char *config_dir,
                     const char *out_dir, const char *data, int write, int json, int *rc)
{
    *rc = EXIT_OK_;
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        *rc = EXIT_INTERNAL;
        return NULL;
    }
    int any = 0;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        perfpred_interval iv = perfpred_heldout_interval(h, paths[i]);
        if (iv.n == 0) continue;
        any = 1;
        cJSON *j = cJSON_AddObjectToObject(o, paths[i]);
        cJSON_AddNumberToObject(j, "n", iv.n);
        cJSON_AddNumberToObject(j, "coverage", iv.coverage);
        cJSON_AddNumberToObject(j, "log_lo", iv.log_lo);
        cJSON_AddNumberToObject(j, "log_hi", iv.log_hi);
        if (isfinite(iv.checked_pct)) cJSON_AddNumberToObject(j, "checked_inside_pct", iv.checked_pct);
        if (!json)
            printf("  %-9s %5d rows: measured / predicted in [%.3f, %.3f] (80 %%); cross-fitted "
                   "check %s%.1f %% inside\n",
                   paths[i], iv.n, exp(iv.log_lo), exp(iv.log_hi),
                   isfinite(iv.checked_pct) ? "" : "n/a ",
                   isfinite(iv.checked_pct) ? iv.checked_pct : 0.0);
    }
    if (!any && !json) printf("  no answer path has the %d held-out rows an interval needs\n", 9);
    if (write && any) {
        char err[1024] = "";
        int n = 0;
        perfpred_status st = perfpred_heldout_write(h, device, out_dir, config_dir, data, &n, err,
                                                    sizeof err);
        if (st) {
            cli_error("%s", err);
            *rc = cli_exit_code(st);
        } else if (!json) {
            printf("  written: %d path%s into intervals.json in %s\n", n, n == 1 ? "" : "s",
                   out_dir ? out_dir : "the device's artifacts folder (configs/artifacts/DEVICE)");
        }
        cJSON_AddBoolToObject(o, "written", st == PERFPRED_OK);
    } else {
        cJSON_AddBoolToObject(o, "written", 0);
    }
    return o;
}

void cli_intervals_print(const perfpred_heldout *h, const char *device, const char *config_dir,
                         const char *out_dir, const char *data, int write, int *rc)
{
    cJSON_Delete(cli_intervals(h, device, config_dir, out_dir, data, write, 0, rc));
}
