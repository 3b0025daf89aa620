/* predictor/json_out.h: the --json answer objects of docs/json.md, built from the public structs
 * (predictor/json_out.c) for perfpred_json (predictor/json_api.c). Every builder returns a new
 * cJSON tree the caller owns. */
#ifndef PP_JSON_OUT_H
#define PP_JSON_OUT_H

#include <cjson/cJSON.h>

#include "perfpred.h"

cJSON *pp_json_num(double v); /* null when not finite */
cJSON *pp_json_device(const perfpred_device_info *d);
cJSON *pp_json_prediction(const perfpred_prediction *p);
/* kernels in execution order; share = latency_ms / total */
cJSON *pp_json_kernels(const perfpred_model *m, const perfpred_kernel *ks, int nk, double total);
cJSON *pp_json_mig_advice(const perfpred_mig_advice *a, const char *gpu);

/* One (device, batch) prediction of compare. */
typedef struct pp_cmp_row {
    perfpred_device_info dev;
    perfpred_prediction p;
    int pareto;
} pp_cmp_row;
/* Sets the Pareto flags, sorts rows by latency (in place) and builds {"model", "rows"}; each row's
 * "ranking" says whether it is decided against the next one (intervals disjoint). */
cJSON *pp_json_compare(const char *model, pp_cmp_row *rows, int nr);

#endif
