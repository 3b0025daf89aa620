/* tests/calib_fixture.h: what test_plan.c and test_fit_eval.c share: a scratch folder with the real
 * descriptors and a toy device, 400 real NeuSight linear rows, plan CSVs read back as layer rows,
 * the CLI run with its output captured, and the cmocka group setup and teardown that make them. */
#ifndef PP_TESTS_CALIB_FIXTURE_H
#define PP_TESTS_CALIB_FIXTURE_H

#include "tests/helpers.h"

#include <stdint.h>

#include "fit/fit.h"
#include "layer_models/layer_models.h"

#define NEUSIGHT_ROOT PP_SOURCE_DIR "/../shared/datasets/neusight"
#define MODELS PP_SOURCE_DIR "/tests/fixtures/models"
#ifdef PP_CLI_PATH
#define CLI PP_CLI_PATH
#else
#define CLI PP_BINARY_DIR "/perfpred"
#endif

extern char g_tmp[1024];   /* this run's scratch folder */
extern char g_cfg[1200];   /* configs: the real descriptors, artifacts of our own */
extern char g_toy[1200];   /* configs: one toy device whose roofline is easy to do by hand */
extern char g_lin[1200];   /* 400 NeuSight linear rows (A100 PCIe 40GB) */
extern const char *const plan_models[2];
extern const char LAYER_HEADER[];
extern const char NET_HEADER[];

int has_models(void);
int has_neusight(void);
/* name inside g_tmp */
void path_in(char *out, size_t n, const char *name);
/* .ubj files of a folder, sorted, joined by spaces (caller frees). */
char *ubj_listing(const char *dir);
/* Runs the CLI with shell words args; output (stdout and stderr) into *out (caller frees). */
int run_cli(const char *args, char **out);

/* The rows of a plan CSV as layer rows (LM's parsers), with the columns the runner reads. */
typedef struct plan_rows {
    pp_arena *a;
    int n;
    pp_layer_row rows[4096];
    int col[5]; /* op_kind, op_type, inputs, attrs, source */
} plan_rows;
plan_rows *read_plan(const char *path);
void free_plan(plan_rows *P);
/* host-cpu's plan over plan_models into out. */
perfpred_plan_params plan_params(const char *out, double budget, uint64_t seed);

/* cmocka group setup (the scratch folder, the toy device, the NeuSight rows) and teardown. */
int group_setup(void **state);
int group_teardown(void **state);

#endif
