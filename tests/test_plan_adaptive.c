/* tests/test_plan_adaptive.c: `perfpred calibrate plan --adaptive` (nn-Meter's adaptive sampling)
 * on a toy device: a hand-written manifest whose conv error is 10x the others moves budget to conv
 * by the documented formula; configurations in the manifest's measured CSVs are left out; plans are
 * byte-identical per seed; after a real fit the held-out split is reproduced and rows are weighted. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fit/fit.h"
#include "plan/plan.h"

#define MODELS PP_SOURCE_DIR "/tests/fixtures/models"

static char g_tmp[1024], g_toy[1200], g_plain[1200];
static perfpred_plan_report g_plain_rep;

static const char *const zoo[] = {MODELS "/alexnet.onnx", MODELS "/mobilenet_v3_small.onnx"};

static const char TOY_YAML[] = PP_TEST_TOY_ROOFLINE_YAML;

static const char LAYER_HEADER[] = PP_TEST_LAYER_HEADER;

/* ------------------------------------------------------------------- helpers ---- */

static int has_models(void) { return access(zoo[0], R_OK) == 0 && access(zoo[1], R_OK) == 0; }

static perfpred_plan_params params(const char *out, uint64_t seed, const char *manifest_dir)
{
    perfpred_plan_params p = perfpred_plan_default_params();
    p.device = "toy-roofline";
    p.out_csv = out;
    p.config_dir = g_toy;
    p.models = zoo;
    p.n_models = 2;
    p.budget_min = 2.0;
    p.seed = seed;
    p.adaptive = manifest_dir != NULL;
    p.adaptive_dir = manifest_dir;
    return p;
}

static const perfpred_plan_kind *kind_of(const perfpred_plan_report *r, const char *kind)
{
    for (int i = 0; i < r->n_kinds; i++)
        if (strcmp(r->kinds[i].kind, kind) == 0) return &r->kinds[i];
    return NULL;
}

/* Plan rows as "op_type|inputs|attrs" keys (the plan's own columns), read with the CSV reader. */
typedef struct plan_keys {
    int n;
    char key[4096][256];
    char line[4096][1024];   /* the row as a measured CSV line (latency filled in) */
} plan_keys;

static int key_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    (void)err;
    plan_keys *k = user;
    if (is_header || k->n == 4096) return 0;
    /* columns as LAYER_HEADER: 5 op_type, 7 inputs, 8 attrs */
    snprintf(k->key[k->n], sizeof k->key[0], "%s|%s|%s", rec->fields[5], rec->fields[7],
             rec->fields[8]);
    pp_strbuf b = {0};
    for (int c = 0; c < rec->n_fields; c++) {
        char num[32];
        const char *v = rec->fields[c];
        if (c == 9) { /* latency_ms: a made-up measurement, varied per row */
            snprintf(num, sizeof num, "%g", 0.05 * (1 + (rec->line * 7919) % 13));
            v = num;
        } else if (c == 14) {
            v = "test:measured";
        } else if (c == 15) {
            v = "2024-01-01";
        }
        if (c) pp_strbuf_put(&b, ",");
        pp_strbuf_csv_field(&b, v);
    }
    snprintf(k->line[k->n], sizeof k->line[0], "%s", b.data ? b.data : "");
    free(b.data);
    k->n++;
    return 0;
}

static plan_keys *read_keys(const char *plan_csv)
{
    plan_keys *k = calloc(1, sizeof *k);
    assert_non_null(k);
    pp_err err = {0};
    assert_int_equal(pp_measure_csv_read(plan_csv, key_record, k, &err), PERFPRED_OK);
    return k;
}

static int has_key(const plan_keys *k, const char *key)
{
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->key[i], key) == 0) return 1;
    return 0;
}

/* A manifest for toy-roofline: latency models of the given kinds and held-out MAPEs, and the
 * measured CSV it names (NULL: none). */
static void write_manifest(const char *dir, const char *const *kinds, const double *mape, int n,
                           const char *measured_csv)
{
    char path[1400], buf[8192];
    mkdir(dir, 0755);
    int k = snprintf(buf, sizeof buf,
                     "{\n  \"format\": \"perfpred-layer-models/1\",\n  \"device\": "
                     "\"toy-roofline\",\n  \"date\": \"2024-01-01\",\n  \"sources\": [");
    if (measured_csv)
        k += snprintf(buf + k, sizeof buf - (size_t)k,
                      "{\"path\": \"%s\", \"repo\": \"test\", \"commit\": \"2024-01-01\", "
                      "\"gpu\": \"toy\", \"rows\": 10, \"role\": \"train\"}", measured_csv);
    k += snprintf(buf + k, sizeof buf - (size_t)k, "],\n  \"models\": [");
    for (int i = 0; i < n; i++)
        k += snprintf(buf + k, sizeof buf - (size_t)k,
                      "%s{\"op_kind\": \"%s\", \"target\": \"latency\", \"file\": \"%s-latency.ubj\", "
                      "\"rows_train\": 40, \"rows_heldout\": 10, \"heldout\": \"10 of 50 "
                      "configurations (20 %%), seeded split by configuration (seed 42)\", "
                      "\"heldout_mape_pct\": %g, \"roofline_mape_pct\": 80}",
                      i ? ", " : "", kinds[i], kinds[i], mape[i]);
    snprintf(buf + k, sizeof buf - (size_t)k, "]\n}\n");
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    pp_test_write_text(path, buf);
}

static const char *const six_kinds[] = {"conv", "dwconv", "linear", "pool", "globalpool",
                                        "elemwise"};

/* ------------------------------------------------------------- setup/teardown ---- */

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "%s/adapt_test_%ld", PP_BINARY_DIR, (long)getpid());
    snprintf(g_toy, sizeof g_toy, "%s/toy", g_tmp);
    char p[1400];
    snprintf(p, sizeof p, "%s/devices", g_toy);
    if (mkdir(g_tmp, 0755) || mkdir(g_toy, 0755) || mkdir(p, 0755)) return -1;
    snprintf(p, sizeof p, "%s/devices/toy.yaml", g_toy);
    FILE *f = fopen(p, "w");
    if (!f) return -1;
    fputs(TOY_YAML, f);
    fclose(f);
    if (!has_models()) return 0;
    snprintf(g_plain, sizeof g_plain, "%s/plain.csv", g_tmp);
    perfpred_plan_params pp = params(g_plain, 2, NULL);
    char err[1024];
    return perfpred_calibrate_plan(&pp, &g_plain_rep, err, sizeof err) == PERFPRED_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---------------------------------------------------------------------- tests ---- */

static void adaptive_plan_should_give_a_high_error_kind_a_larger_share(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char dir[1200], out[1200], err[1024];
    snprintf(dir, sizeof dir, "%s/m1", g_tmp);
    snprintf(out, sizeof out, "%s/adaptive1.csv", g_tmp);
    const double mape[6] = {50, 5, 5, 5, 5, 5}; /* conv errs 10x more than the others */
    write_manifest(dir, six_kinds, mape, 6, NULL);
    perfpred_plan_params p = params(out, 2, dir);
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.adaptive, 1);
    assert_int_equal(r.adaptive_rows, 0);
    assert_non_null(strstr(r.adaptive_basis, "by kind only"));
    assert_int_equal(g_plain_rep.adaptive, 0);
    /* weights: zoo share x max(MAPE, 5 %), normalised over the kinds with rows */
    double sum = 0;
    for (int i = 0; i < g_plain_rep.n_kinds; i++) {
        const perfpred_plan_kind *k = &g_plain_rep.kinds[i];
        if (k->n_candidates == 0) continue;
        sum += k->zoo_time_share * (strcmp(k->kind, "conv") == 0 ? 0.5 : 0.05);
    }
    const perfpred_plan_kind *pc = kind_of(&g_plain_rep, "conv"), *ac = kind_of(&r, "conv");
    assert_non_null(pc);
    assert_non_null(ac);
    assert_rel_close(pc->budget_weight, pc->zoo_time_share, 1e-9);
    assert_rel_close(ac->budget_weight, pc->zoo_time_share * 0.5 / sum, 1e-9);
    assert_rel_close(ac->heldout_mape_pct, 50, 1e-12);
    assert_true(isnan(pc->heldout_mape_pct));
    /* so conv gets more of the budget: time and rows */
    assert_true(ac->budget_weight > pc->budget_weight);
    assert_true(ac->est_minutes / r.est_minutes > pc->est_minutes / g_plain_rep.est_minutes);
    assert_true(ac->n_rows > pc->n_rows);
    const perfpred_plan_kind *al = kind_of(&r, "linear"), *pl = kind_of(&g_plain_rep, "linear");
    assert_true(al->budget_weight < pl->budget_weight);
}

static void adaptive_plan_should_leave_out_measured_configurations(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char dir[1200], out[1200], csv[1400], err[1024];
    snprintf(dir, sizeof dir, "%s/m2", g_tmp);
    snprintf(out, sizeof out, "%s/adaptive2.csv", g_tmp);
    mkdir(dir, 0755);
    /* ten rows of the plain plan, "measured" */
    plan_keys *plain = read_keys(g_plain);
    assert_true(plain->n >= 10);
    pp_strbuf b = {0};
    pp_strbuf_put(&b, LAYER_HEADER);
    for (int i = 0; i < 10; i++) {
        pp_strbuf_put(&b, plain->line[i * 7 % plain->n]);
        pp_strbuf_put(&b, "\n");
    }
    snprintf(csv, sizeof csv, "%s/measured.csv", dir);
    pp_test_write_text(csv, b.data);
    free(b.data);
    const double mape[6] = {20, 20, 20, 20, 20, 20};
    write_manifest(dir, six_kinds, mape, 6, "measured.csv"); /* relative: found in dir */
    perfpred_plan_params p = params(out, 2, dir);
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_excluded_measured, 10);
    int per_kind = 0;
    for (int i = 0; i < r.n_kinds; i++) per_kind += r.kinds[i].n_measured;
    assert_int_equal(per_kind, 10);
    /* the toy fit's models are not there: kind shares only, and it says so */
    assert_int_equal(r.adaptive_rows, 0);
    assert_non_null(strstr(r.adaptive_basis, "did not load"));
    plan_keys *ad = read_keys(out);
    assert_true(ad->n > 0);
    for (int i = 0; i < 10; i++) assert_false(has_key(ad, plain->key[i * 7 % plain->n]));
    /* equal errors everywhere: the same shares as the plain plan */
    for (int i = 0; i < r.n_kinds; i++) {
        const perfpred_plan_kind *pk = kind_of(&g_plain_rep, r.kinds[i].kind);
        assert_non_null(pk);
        assert_rel_close(r.kinds[i].budget_weight, pk->budget_weight, 1e-9);
    }
    free(plain);
    free(ad);
}

static void adaptive_plan_should_give_the_same_bytes_for_a_seed(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char dir[1200], out[3][1200], err[1024];
    snprintf(dir, sizeof dir, "%s/m1", g_tmp); /* the 10x conv manifest */
    const double mape[6] = {50, 5, 5, 5, 5, 5};
    write_manifest(dir, six_kinds, mape, 6, NULL);
    uint64_t seeds[3] = {2, 2, 3};
    for (int i = 0; i < 3; i++) {
        snprintf(out[i], sizeof out[i], "%s/seed%d.csv", g_tmp, i);
        perfpred_plan_params p = params(out[i], seeds[i], dir);
        perfpred_plan_report r;
        assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    }
    char *a = pp_test_read_text(out[0]), *b = pp_test_read_text(out[1]);
    char *c = pp_test_read_text(out[2]);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_string_equal(a, b);
    assert_true(strcmp(a, c) != 0);
    free(a);
    free(b);
    free(c);
}

/* The adaptive state of the fit in dir, for the toy device (its descriptors into *db). */
static pp_adapt *toy_adapt(const char *dir, pp_device_db **db)
{
    pp_err e = {0};
    char devdir[1400];
    snprintf(devdir, sizeof devdir, "%s/devices", g_toy);
    assert_int_equal(pp_devices_load_dir(devdir, db, &e), PERFPRED_OK);
    pp_adapt *a = NULL;
    assert_int_equal(pp_plan_adapt_load(dir, g_toy, pp_devices_find(*db, "toy-roofline"), &a, &e),
                     PERFPRED_OK);
    return a;
}

static void adaptive_plan_should_weight_rows_after_a_real_fit(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char dir[1200], out[1200], csv[1400], err[1024];
    snprintf(dir, sizeof dir, "%s/m4", g_tmp);
    snprintf(out, sizeof out, "%s/adaptive4.csv", g_tmp);
    snprintf(csv, sizeof csv, "%s/measured4.csv", g_tmp);
    /* every row of the plain plan "measured", then fitted */
    plan_keys *plain = read_keys(g_plain);
    pp_strbuf b = {0};
    pp_strbuf_put(&b, LAYER_HEADER);
    for (int i = 0; i < plain->n; i++) {
        pp_strbuf_put(&b, plain->line[i]);
        pp_strbuf_put(&b, "\n");
    }
    pp_test_write_text(csv, b.data);
    free(b.data);
    const char *files[1] = {csv};
    perfpred_fit_params f = pp_test_fit_params("toy-roofline", files, 1, g_toy, dir);
    perfpred_fit_report fr;
    assert_int_equal(perfpred_calibrate_fit(&f, &fr, err, sizeof err), PERFPRED_OK);
    assert_true(fr.wrote_artifacts);
    perfpred_plan_params p = params(out, 2, dir);
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.adaptive_rows, 1);
    assert_non_null(strstr(r.adaptive_basis, "split reproduced"));
    /* every plain-plan configuration was measured: none comes back */
    assert_int_equal(r.n_excluded_measured, plain->n);
    plan_keys *ad = read_keys(out);
    for (int i = 0; i < ad->n; i++) assert_false(has_key(plain, ad->key[i]));
    /* the kinds' MAPEs are the fit's */
    for (int i = 0; i < fr.n_kinds; i++) {
        const perfpred_plan_kind *k = kind_of(&r, fr.kinds[i].kind);
        assert_non_null(k);
        assert_rel_close(k->heldout_mape_pct, fr.kinds[i].model.mape_pct, 1e-9);
    }
    /* a held-out row's own configuration weighs at least floor + its error; the weight is the
     * floor far from every held-out row */
    pp_device_db *db = NULL;
    pp_err e = {0};
    pp_adapt *a = toy_adapt(dir, &db);
    assert_true(pp_plan_adapt_has_rows(a, PP_OPK_CONV));
    pp_node_feat far;
    memset(&far, 0, sizeof far);
    far.kind = PP_OPK_CONV;
    far.macs = far.flops = 1e30; /* no held-out row anywhere near */
    far.n = far.cin = far.cout = 1 << 30;
    assert_rel_close(pp_plan_adapt_row_weight(a, &far), PP_ADAPT_FLOOR, 1e-6);
    /* near is per operator: the measured conv rows themselves weigh more than the floor (some are
     * held-out rows with errors), and the same rows as another operator weigh the floor */
    pp_layer_table *t = NULL;
    assert_int_equal(pp_measure_layer_csv_read(csv, &t, &e), PERFPRED_OK);
    double most = 0;
    int n_conv = 0;
    for (int i = 0; i < t->n; i++) {
        pp_node_feat nf;
        if (pp_layer_row_features(&t->rows[i], &nf, &e) != PERFPRED_OK || nf.kind != PP_OPK_CONV)
            continue;
        n_conv++;
        assert_int_equal(nf.op_code, pp_op_code("Conv"));
        double w = pp_plan_adapt_row_weight(a, &nf);
        if (w > most) most = w;
        nf.op_code = pp_op_code("ConvInteger");
        assert_rel_close(pp_plan_adapt_row_weight(a, &nf), PP_ADAPT_FLOOR, 1e-9);
    }
    assert_true(n_conv > 0);
    assert_true(most > PP_ADAPT_FLOOR + 1e-3);
    pp_measure_layer_table_free(t);
    pp_plan_adapt_free(a);
    pp_devices_free(db);
    free(plain);
    free(ad);
}

/* After a fit with a rescaled file, the adaptive plan judges its rows as the fit used them: the
 * manifest records the drift, and rows that the fit made exact again weigh the floor. (Judged as
 * measured, the later session's held-out rows would be 1.2-1.5x off and weigh far more.) */
static void adaptive_plan_should_judge_rescaled_rows_as_the_fit_did(void **state)
{
    (void)state;
    char dir[1200], early[1400], later[1400], err[1024];
    snprintf(dir, sizeof dir, "%s/m5", g_tmp);
    snprintf(early, sizeof early, "%s/early5.csv", g_tmp);
    snprintf(later, sizeof later, "%s/later5.csv", g_tmp);
    pp_test_write_toy_sessions(early, later, log(1.5) + 0.1 * log(0.1), -0.1);
    const char *files[1] = {early}, *rescaled[1] = {later};
    perfpred_fit_params f = pp_test_rescale_fit_params("toy-roofline", files, rescaled, g_toy, dir);
    perfpred_fit_report fr;
    assert_int_equal(perfpred_calibrate_fit(&f, &fr, err, sizeof err), PERFPRED_OK);
    char mpath[1400];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
    char *man = pp_test_read_text(mpath);
    assert_non_null(strstr(man, "\"rescale\""));
    free(man);
    pp_device_db *db = NULL;
    pp_err e = {0};
    pp_adapt *a = toy_adapt(dir, &db);
    assert_true(pp_plan_adapt_has_rows(a, PP_OPK_ELEMWISE));
    pp_layer_table *t = NULL;
    assert_int_equal(pp_measure_layer_csv_read(later, &t, &e), PERFPRED_OK);
    for (int by_class = 0; by_class < 2; by_class++) {
        if (by_class) { /* the same with a line per roofline class, which the manifest records */
            pp_plan_adapt_free(a);
            pp_devices_free(db);
            f.rescale_by_class = 1;
            assert_int_equal(perfpred_calibrate_fit(&f, &fr, err, sizeof err), PERFPRED_OK);
            man = pp_test_read_text(mpath);
            assert_non_null(strstr(man, "\"memory_bound\""));
            free(man);
            a = toy_adapt(dir, &db);
        }
        for (int i = 0; i < t->n; i++) {
            pp_node_feat nf;
            assert_int_equal(pp_layer_row_features(&t->rows[i], &nf, &e), PERFPRED_OK);
            assert_true(pp_plan_adapt_row_weight(a, &nf) < PP_ADAPT_FLOOR + 1e-3);
        }
    }
    pp_measure_layer_table_free(t);
    pp_plan_adapt_free(a);
    pp_devices_free(db);
}

static void adaptive_plan_should_refuse_a_missing_or_foreign_manifest(void **state)
{
    (void)state;
    if (!has_models()) skip();
    char dir[1200], out[1200], err[1024];
    snprintf(out, sizeof out, "%s/adaptive5.csv", g_tmp);
    snprintf(dir, sizeof dir, "%s/none", g_tmp);
    perfpred_plan_params p = params(out, 2, dir);
    perfpred_plan_report r;
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_ERR_IO);
    assert_non_null(strstr(err, "manifest.json"));
    snprintf(dir, sizeof dir, "%s/m5", g_tmp);
    mkdir(dir, 0755);
    char path[1400];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    pp_test_write_text(path, "{\"device\": \"rpi3\", \"models\": []}\n");
    p = params(out, 2, dir);
    assert_int_equal(perfpred_calibrate_plan(&p, &r, err, sizeof err), PERFPRED_ERR_MODEL);
    assert_non_null(strstr(err, "rpi3"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(adaptive_plan_should_give_a_high_error_kind_a_larger_share),
        cmocka_unit_test(adaptive_plan_should_leave_out_measured_configurations),
        cmocka_unit_test(adaptive_plan_should_give_the_same_bytes_for_a_seed),
        cmocka_unit_test(adaptive_plan_should_weight_rows_after_a_real_fit),
        cmocka_unit_test(adaptive_plan_should_judge_rescaled_rows_as_the_fit_did),
        cmocka_unit_test(adaptive_plan_should_refuse_a_missing_or_foreign_manifest),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
