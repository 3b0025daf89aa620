/* tests/calib_fixture.c: the shared fixture of test_plan.c and test_fit_eval.c (calib_fixture.h). */
#include "tests/calib_fixture.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"

char g_tmp[1024];   /* this run's scratch folder */
char g_cfg[1200];   /* configs: the real descriptors, artifacts of our own */
char g_toy[1200];   /* configs: one toy device whose roofline is easy to do by hand */
char g_lin[1200];   /* 400 NeuSight linear rows (A100 PCIe 40GB) */

const char *const plan_models[2] = {MODELS "/alexnet.onnx",
                                          MODELS "/mobilenet_v3_small.onnx"};

static const char TOY_YAML[] = PP_TEST_TOY_ROOFLINE_YAML;

const char LAYER_HEADER[] = PP_TEST_LAYER_HEADER;

const char NET_HEADER[] =
    "model,family,device,runtime,runtime_version,precision,batch,input_shapes,latency_ms,"
    "latency_spread_ms,repetitions,energy_j,peak_memory_bytes,source,date\n";

/* ------------------------------------------------------------------- helpers ---- */

int has_models(void)
{
    return access(plan_models[0], R_OK) == 0 && access(plan_models[1], R_OK) == 0;
}
int has_neusight(void) { return access(NEUSIGHT_ROOT "/SOURCE.md", R_OK) == 0; }

void path_in(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_tmp, name);
}

char *ubj_listing(const char *dir)
{
    char names[64][256];
    int n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < 64) {
        size_t L = strlen(de->d_name);
        if (L > 4 && strcmp(de->d_name + L - 4, ".ubj") == 0)
            snprintf(names[n++], 256, "%s", de->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char t[256];
                memcpy(t, names[i], 256);
                memcpy(names[i], names[j], 256);
                memcpy(names[j], t, 256);
            }
    char *s = calloc(1, (size_t)n * 257 + 1);
    assert_non_null(s);
    for (int i = 0; i < n; i++) {
        strcat(s, names[i]);
        strcat(s, " ");
    }
    return s;
}

int run_cli(const char *args, char **out)
{
    char log[1300], cmd[8192];
    path_in(log, sizeof log, "cli.txt");
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>&1", CLI, args, log);
    int rc = system(cmd);
    *out = pp_test_read_text(log);
    if (!*out) *out = calloc(1, 1);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int plan_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    plan_rows *P = user;
    static const char *const cols[5] = {"op_kind", "op_type", "inputs", "attrs", "source"};
    if (is_header) {
        for (int c = 0; c < 5; c++) {
            P->col[c] = -1;
            for (int f = 0; f < rec->n_fields; f++)
                if (strcmp(rec->fields[f], cols[c]) == 0) P->col[c] = f;
            if (P->col[c] < 0) {
                pp_err_set(err, PERFPRED_ERR_PARSE, "no column %s", cols[c]);
                return -1;
            }
        }
        return 0;
    }
    if (P->n == 4096) return 0;
    pp_layer_row *r = &P->rows[P->n];
    memset(r, 0, sizeof *r);
    char why[256];
    int kind = pp_op_kind_from_name(rec->fields[P->col[0]]);
    r->kind = (pp_op_kind)kind;
    r->op_type = pp_arena_strdup(P->a, rec->fields[P->col[1]]);
    r->source = pp_arena_strdup(P->a, rec->fields[P->col[4]]);
    pp_layer_input ins[PP_LAYER_MAX_ALL_INPUTS];
    int n_in = pp_measure_parse_inputs(r->op_type, rec->fields[P->col[2]], ins,
                                       PP_LAYER_MAX_ALL_INPUTS, why, sizeof why);
    r->n_inputs = n_in >= 0 && pp_layer_row_set_inputs(r, ins, n_in, P->a) == 0 ? n_in : -1;
    r->n_attrs = pp_measure_parse_attrs(rec->fields[P->col[3]], P->a, r->attrs, PP_LAYER_MAX_ATTRS,
                                        why, sizeof why);
    r->precision = PP_PREC_FP32;
    r->line = rec->line;
    if (kind <= 0 || r->n_inputs < 1 || r->n_attrs < 0) {
        print_error("%s:%d: plan row does not parse: %s\n", rec->path, rec->line, why);
        pp_err_set(err, PERFPRED_ERR_PARSE, "bad plan row");
        return -1;
    }
    P->n++;
    return 0;
}

plan_rows *read_plan(const char *path)
{
    plan_rows *P = calloc(1, sizeof *P);
    assert_non_null(P);
    P->a = pp_arena_new();
    pp_err err = {0};
    assert_int_equal(pp_measure_csv_read(path, plan_record, P, &err), PERFPRED_OK);
    return P;
}

void free_plan(plan_rows *P)
{
    pp_arena_free(P->a);
    free(P);
}

perfpred_plan_params plan_params(const char *out, double budget, uint64_t seed)
{
    perfpred_plan_params p = perfpred_plan_default_params();
    p.device = "host-cpu";
    p.out_csv = out;
    p.models = plan_models;
    p.n_models = 2;
    p.budget_min = budget;
    p.seed = seed;
    return p;
}

/* ------------------------------------------------------------- setup/teardown ---- */

int group_setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "%s/pfe_test_%ld", PP_BINARY_DIR, (long)getpid());
    if (mkdir(g_tmp, 0755) != 0) return -1;
    snprintf(g_cfg, sizeof g_cfg, "%s/cfg", g_tmp);
    snprintf(g_toy, sizeof g_toy, "%s/toy", g_tmp);
    char p[1400];
    if (mkdir(g_cfg, 0755) || mkdir(g_toy, 0755)) return -1;
    snprintf(p, sizeof p, "%s/devices", g_cfg);
    if (symlink(PP_SOURCE_DIR "/configs/devices", p) != 0) return -1;
    snprintf(p, sizeof p, "%s/devices", g_toy);
    if (mkdir(p, 0755) != 0) return -1;
    snprintf(p, sizeof p, "%s/devices/toy.yaml", g_toy);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    fputs(TOY_YAML, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/models", g_tmp);
    if (symlink(MODELS, p) != 0) return -1;
    /* 400 real rows: every 16th row of NeuSight's A100 PCIe 40GB linear sweep */
    snprintf(g_lin, sizeof g_lin, "%s/linear400.csv", g_tmp);
    if (has_neusight()) {
        pp_layer_table *t = pp_measure_layer_table_new("NeuSight linear");
        pp_err err = {0};
        int n = 0;
        if (!t || pp_datasets_neusight_import(NEUSIGHT_ROOT, "linear", "NVIDIA A100-PCIE-40GB",
                                              PP_NEUSIGHT_TRAIN, t, &n, &err) != PERFPRED_OK || t->n < 6400)
            return -1;
        pp_layer_row *rows = malloc(400 * sizeof *rows);
        for (int i = 0; i < 400; i++) rows[i] = t->rows[i * 16];
        perfpred_status st = pp_measure_layer_csv_write(g_lin, rows, 400, &err);
        free(rows);
        pp_measure_layer_table_free(t);
        if (st != PERFPRED_OK) return -1;
    }
    return 0;
}

int group_teardown(void **state)
{
    (void)state;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}
