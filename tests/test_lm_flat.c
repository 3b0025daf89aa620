/* tests/test_lm_flat.c: the flat tree evaluator (layer_models/lm_flat.c) against XGBoost itself,
 * side by side in one run: every regressor shipped under configs/artifacts/, fed the features of
 * every node of real torchvision and transformer graphs (thousands of rows, several op kinds), must
 * agree with XGBoosterPredict through a DMatrix within 1e-6 relative; malformed JSON is refused. */
#include "tests/helpers.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layer_models/layer_models.h"

static const char *const graphs[] = {
    "tests/fixtures/models/resnet50.onnx",       "tests/fixtures/models/mobilenet_v2.onnx",
    "tests/fixtures/models/efficientnet_b0.onnx", "tests/fixtures/models/densenet121.onnx",
    "tests/fixtures/models/convnext_tiny.onnx",  "tests/fixtures/models/bert_mini_op17.onnx",
    "tests/fixtures/models/gpt2_mini_op17.onnx", "tests/fixtures/models/inception_v3.onnx",
    "tests/fixtures/models/googlenet.onnx",      "tests/fixtures/models/maxvit_t.onnx",
};

/* Node features of the graphs above (caller frees). */
static pp_node_feat *real_rows(int *n_out)
{
    int n = 0, cap = 0;
    pp_node_feat *rows = NULL;
    for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
        const char *p = pp_test_path(graphs[i]);
        if (access(p, R_OK) != 0) continue;
        pp_graph *g = NULL;
        pp_err err = {0};
        pp_shape_opts opts = {.batch = 1};
        if (pp_graph_load_full(p, &opts, &g, &err) != PERFPRED_OK) {
            pp_graph_free(g); /* a transformer without a fixed sequence length: the others suffice */
            continue;
        }
        if (n + g->n_nodes > cap) {
            cap = (n + g->n_nodes) * 2;
            rows = realloc(rows, (size_t)cap * sizeof *rows);
            assert_non_null(rows);
        }
        for (int k = 0; k < g->n_nodes; k++) rows[n++] = g->nodes[k].feat;
        pp_graph_free(g);
    }
    *n_out = n;
    return rows;
}

static void flat_trees_should_match_xgboost_on_every_shipped_artifact(void **state)
{
    (void)state;
    int n = 0;
    pp_node_feat *rows = real_rows(&n);
    assert_true(n >= 2000);
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    const char *root = pp_test_path("configs/artifacts");
    char rootbuf[1024];
    snprintf(rootbuf, sizeof rootbuf, "%s", root);
    DIR *dir = opendir(rootbuf);
    assert_non_null(dir);
    int n_models = 0, n_dirs = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.') continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s/manifest.json", rootbuf, de->d_name);
        if (access(path, R_OK) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", rootbuf, de->d_name);
        pp_layer_models *lm = NULL;
        pp_err err = {0};
        assert_int_equal(pp_layer_models_open(path, 0, &lm, &err), PERFPRED_OK);
        n_dirs++;
        for (int k = 0; k < PP_OPK__COUNT; k++)
            for (int t = 0; t < PP_LM__COUNT; t++) {
                const pp_lm_entry *e = pp_layer_models_entry(lm, (pp_op_kind)k, (pp_lm_target)t);
                if (!e) continue;
                char mpath[1700];
                snprintf(mpath, sizeof mpath, "%s/%s", path, e->file);
                pp_lm_model *m = NULL;
                assert_int_equal(pp_lm_model_load(mpath, e->kind, e->target, &e->base, &e->domain,
                                                  &m, &err),
                                 PERFPRED_OK);
                assert_false(pp_lm_model_is_flat(m));
                assert_int_equal(pp_lm_model_flatten(m, &err), PERFPRED_OK);
                assert_true(pp_lm_model_is_flat(m));
                assert_int_equal(pp_lm_model_predict_many(m, rows, n, a, &err), PERFPRED_OK);
                assert_int_equal(pp_lm_model_predict_many_xgb(m, rows, n, b, &err), PERFPRED_OK);
                for (int i = 0; i < n; i++) assert_rel_close(a[i], b[i], 1e-6);
                /* one row at a time as the predictor asks: the same figures */
                for (int i = 0; i < n; i += 97) {
                    double one;
                    assert_int_equal(pp_lm_model_predict(m, &rows[i], &one, &err), PERFPRED_OK);
                    assert_rel_close(one, b[i], 1e-6);
                }
                pp_lm_model_free(m);
                n_models++;
            }
        pp_layer_models_free(lm);
    }
    closedir(dir);
    assert_true(n_dirs >= 3);
    assert_true(n_models >= 25);
    free(a);
    free(b);
    free(rows);
}

static void flat_trees_should_follow_default_direction_for_missing_values(void **state)
{
    (void)state;
    /* one tree: f0 < 0.5 ? (f1 < 2 ? 1 : 2) : 3; missing f0 goes right, missing f1 goes left */
    const char *json =
        "{\"learner\":{\"learner_model_param\":{\"base_score\":\"5E-1\",\"num_class\":\"0\","
        "\"num_feature\":\"2\"},\"objective\":{\"name\":\"reg:squarederror\"},"
        "\"gradient_booster\":{\"name\":\"gbtree\",\"model\":{\"trees\":[{"
        "\"left_children\":[1,3,-1,-1,-1],\"right_children\":[2,4,-1,-1,-1],"
        "\"split_indices\":[0,1,0,0,0],\"split_conditions\":[0.5,2,3,1,2],"
        "\"default_left\":[0,1,0,0,0],\"split_type\":[0,0,0,0,0]}]}}}}";
    pp_lm_flat *f = NULL;
    pp_err err = {0};
    assert_int_equal(pp_lm_flat_from_json(json, strlen(json), "toy", &f, &err), PERFPRED_OK);
    float X[5][2] = {{0, 1}, {0, 5}, {1, 0}, {NAN, 0}, {0, NAN}}, out[5];
    pp_lm_flat_predict(f, &X[0][0], 5, 2, out);
    float want[5] = {1.5f, 2.5f, 3.5f, 3.5f, 1.5f};
    for (int i = 0; i < 5; i++) assert_true(out[i] == want[i]);
    pp_lm_flat_free(f);
}

static void flat_trees_should_refuse_malformed_models(void **state)
{
    (void)state;
    const char *bad[] = {
        "not json",
        "{\"learner\":{}}",
        /* child index out of range */
        "{\"learner\":{\"learner_model_param\":{\"base_score\":\"0\",\"num_feature\":\"1\"},"
        "\"objective\":{\"name\":\"reg:squarederror\"},\"gradient_booster\":{\"name\":\"gbtree\","
        "\"model\":{\"trees\":[{\"left_children\":[7,-1],\"right_children\":[1,-1],"
        "\"split_indices\":[0,0],\"split_conditions\":[1,2],\"default_left\":[0,0]}]}}}}",
        /* an objective the evaluator does not know */
        "{\"learner\":{\"learner_model_param\":{\"base_score\":\"0\",\"num_feature\":\"1\"},"
        "\"objective\":{\"name\":\"rank:pairwise\"},\"gradient_booster\":{\"name\":\"gbtree\","
        "\"model\":{\"trees\":[]}}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_lm_flat *f = NULL;
        pp_err err = {0};
        assert_int_equal(pp_lm_flat_from_json(bad[i], strlen(bad[i]), "bad", &f, &err),
                         PERFPRED_ERR_MODEL);
        assert_null(f);
        assert_non_null(strstr(err.msg, "bad"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flat_trees_should_match_xgboost_on_every_shipped_artifact),
        cmocka_unit_test(flat_trees_should_follow_default_direction_for_missing_values),
        cmocka_unit_test(flat_trees_should_refuse_malformed_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
