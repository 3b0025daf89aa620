/* tests/test_lm_flat.c: the flat tree evaluator (layer_models/lm_flat.c) against XGBoost itself,
 * side by side in one run: every regressor shipped under configs/artifacts/, fed the features of
 * every node of real torchvision and transformer graphs (thousands of rows, several op kinds), must
 * agree with XGBoosterPredict through a DMatrix within 1e-6 relative; the vector kernels (AVX2,
 * AVX-512, as the CPU has them) give the portable loop's bits on those rows, with missing features,
 * and on random ensembles; malformed JSON is refused. */
#include "tests/helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
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

/* The trees through the cache's bytes (serialize, then read back from a copy and from a mapping)
 * give XGBoost's figures b as the flat trees do. */
static void cache_round_trip_should_keep_the_figures(const pp_lm_model *m, const char *path,
                                                     const pp_node_feat *rows, int n, const double *b)
{
    pp_lm_src_id id;
    assert_int_equal(pp_lm_src_id_of(path, &id), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err err = {0};
    pp_lm_flat *g = NULL;
    const pp_lm_flat *f = pp_lm_model_flat(m);
    assert_non_null(f);
    assert_int_equal(pp_lm_flat_serialize(f, &id, &buf, &len, &err), PERFPRED_OK);
    assert_int_equal(pp_lm_flat_deserialize(buf, len, &id, &g, &err), PERFPRED_OK);
    float X[64 * PP_LM_NFEAT], y[64];
    const pp_lm_base *base = pp_lm_model_base(m);
    for (int i0 = 0; i0 < n; i0 += 64 * 7) {
        int c = n - i0 < 64 ? n - i0 : 64;
        for (int i = 0; i < c; i++) pp_lm_features(&rows[i0 + i], base, X + i * PP_LM_NFEAT);
        pp_lm_flat_predict(g, X, c, PP_LM_NFEAT, y);
        for (int i = 0; i < c; i++)
            assert_rel_close(pp_lm_base_eval(base, pp_lm_model_target(m), &rows[i0 + i]) *
                                 exp((double)y[i]),
                             b[i0 + i], 1e-6);
    }
    pp_lm_flat_free(g);
    free(buf);
}

/* The kernels this CPU has, from the widest down (PP_LM_FLAT_PORTABLE last). */
static int kernel_levels(int *lv)
{
    int n = 0, top = pp_lm_flat_kernel_cap(PP_LM_FLAT_AVX512);
    for (int l = top; l >= PP_LM_FLAT_PORTABLE; l--) lv[n++] = l;
    return n;
}

/* Every kernel gives the portable loop's bits on rows X (n of them, nf floats each), fed in
 * chunks of sizes that are not multiples of the lane widths, as well as all at once; packable:
 * the vector kernels run for f (else it is left to the portable loop). */
static void kernels_should_agree_on(const pp_lm_flat *f, const float *X, int n, int nf,
                                    int packable)
{
    static const int chunks[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 100};
    float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
    assert_true(want && got);
    pp_lm_flat_kernel_cap(PP_LM_FLAT_PORTABLE);
    assert_int_equal(pp_lm_flat_kernel(), PP_LM_FLAT_PORTABLE);
    pp_lm_flat_predict(f, X, n, nf, want);
    int lv[3], nl = kernel_levels(lv);
    for (int k = 0; k < nl; k++) {
        assert_int_equal(pp_lm_flat_kernel_cap(lv[k]), lv[k]);
        if (packable) assert_int_equal(pp_lm_flat_kernel_of(f), lv[k]);
        else assert_int_equal(pp_lm_flat_kernel_of(f), PP_LM_FLAT_PORTABLE);
        memset(got, 0xff, (size_t)n * sizeof *got);
        pp_lm_flat_predict(f, X, n, nf, got);
        for (int i = 0; i < n; i++)
            if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
                fail_msg("kernel %d, row %d of %d: %a, portable %a", lv[k], i, n, got[i], want[i]);
        int c = chunks[k % 13];
        for (int i0 = 0, j = k; i0 < n; i0 += c, c = chunks[++j % 13]) {
            int m = n - i0 < c ? n - i0 : c;
            pp_lm_flat_predict(f, X + (size_t)i0 * nf, m, nf, got + i0);
        }
        assert_memory_equal(got, want, (size_t)n * sizeof *got);
    }
    pp_lm_flat_kernel_cap(PP_LM_FLAT_AVX512);
    free(want);
    free(got);
}

/* Every fourth of the model's rows of real nodes (their figures against XGBoost's are checked on
 * all of them; the kernels against each other on a quarter, hundreds of rows through every tree,
 * at a quarter of the time under ASan), then the same rows with features missing
 * (NaN): every fifth row one feature in three, every fifth row all of them, the rest a
 * pseudo-random few. */
static void kernels_should_agree_on_real_rows(const pp_lm_model *m, const pp_node_feat *rows,
                                              int n_rows)
{
    const pp_lm_flat *f = pp_lm_model_flat(m);
    assert_non_null(f);
    assert_int_equal(pp_lm_flat_n_features(f), PP_LM_NFEAT);
    int n = (n_rows + 3) / 4;
    float *X = malloc((size_t)2 * n * PP_LM_NFEAT * sizeof *X);
    assert_non_null(X);
    for (int i = 0; i < n; i++)
        pp_lm_features(&rows[4 * i], pp_lm_model_base(m), X + (size_t)i * PP_LM_NFEAT);
    memcpy(X + (size_t)n * PP_LM_NFEAT, X, (size_t)n * PP_LM_NFEAT * sizeof *X);
    uint32_t s = 12345;
    for (int i = 0; i < n; i++) {
        float *x = X + (size_t)(n + i) * PP_LM_NFEAT;
        for (int j = 0; j < PP_LM_NFEAT; j++) {
            s = s * 1103515245u + 12345u;
            int drop = i % 5 == 0 ? j % 3 == 0 : i % 5 == 1 ? 1 : (s >> 16) % 7 == 0;
            if (drop) x[j] = NAN;
        }
    }
    kernels_should_agree_on(f, X, 2 * n, PP_LM_NFEAT, 1);
    free(X);
}

static void flat_trees_should_match_xgboost_on_every_shipped_artifact(void **state)
{
    (void)state;
    /* models read through XGBoost here; the cache's copy of the trees is checked below */
    setenv("PERFPRED_CACHE_DIR", "off", 1);
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
                cache_round_trip_should_keep_the_figures(m, mpath, rows, n, b);
                kernels_should_agree_on_real_rows(m, rows, n);
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

/* one tree: f0 < 0.5 ? (f1 < 2 ? 1 : 2) : 3; missing f0 goes right, missing f1 goes left */
static const char toy_json[] =
    "{\"learner\":{\"learner_model_param\":{\"base_score\":\"5E-1\",\"num_class\":\"0\","
    "\"num_feature\":\"2\"},\"objective\":{\"name\":\"reg:squarederror\"},"
    "\"gradient_booster\":{\"name\":\"gbtree\",\"model\":{\"trees\":[{"
    "\"left_children\":[1,3,-1,-1,-1],\"right_children\":[2,4,-1,-1,-1],"
    "\"split_indices\":[0,1,0,0,0],\"split_conditions\":[0.5,2,3,1,2],"
    "\"default_left\":[0,1,0,0,0],\"split_type\":[0,0,0,0,0]}]}}}}";

static void flat_trees_should_follow_default_direction_for_missing_values(void **state)
{
    (void)state;
    const char *json = toy_json;
    pp_lm_flat *f = NULL;
    pp_err err = {0};
    assert_int_equal(pp_lm_flat_from_json(json, strlen(json), "toy", &f, &err), PERFPRED_OK);
    float X[5][2] = {{0, 1}, {0, 5}, {1, 0}, {NAN, 0}, {0, NAN}}, out[5];
    float want[5] = {1.5f, 2.5f, 3.5f, 3.5f, 1.5f};
    int lv[3], nl = kernel_levels(lv);
    for (int k = 0; k < nl; k++) {
        pp_lm_flat_kernel_cap(lv[k]);
        memset(out, 0, sizeof out);
        pp_lm_flat_predict(f, &X[0][0], 5, 2, out);
        for (int i = 0; i < 5; i++) assert_true(out[i] == want[i]);
    }
    pp_lm_flat_kernel_cap(PP_LM_FLAT_AVX512);
    pp_lm_flat_free(f);
}

/* A random ensemble as XGBoost's JSON: trees of depth up to 7 (some a lone leaf), random features
 * among nf, thresholds and default directions; children in pairs as XGBoost allocates them, or
 * with swap, also right before left (a form the vector kernels leave to the portable loop). */
static char *random_model_json(int n_trees, int nf, uint32_t seed, int swap_some)
{
    size_t cap = 4 << 20, len = 0;
    char *j = malloc(cap);
    assert_non_null(j);
#define OUT(...) (len += (size_t)snprintf(j + len, cap - len, __VA_ARGS__), assert_true(len < cap))
    OUT("{\"learner\":{\"learner_model_param\":{\"base_score\":\"2.5E-1\",\"num_class\":\"0\","
        "\"num_feature\":\"%d\"},\"objective\":{\"name\":\"reg:squarederror\"},"
        "\"gradient_booster\":{\"name\":\"gbtree\",\"model\":{\"trees\":[", nf);
    uint32_t s = seed;
#define RND() (s = s * 1664525u + 1013904223u, s >> 8)
    for (int t = 0; t < n_trees; t++) {
        int lc[255], rc[255], fi[255], dl[255], depth[255], nn = 1;
        float th[255];
        depth[0] = 0;
        for (int i = 0; i < nn; i++) {
            int split = depth[i] < 7 && (i == 0 ? t % 9 != 4 : RND() % 8 != 0);
            th[i] = (float)((int)(RND() % 2001) - 1000) / 256.0f;
            fi[i] = (int)(RND() % (uint32_t)nf);
            dl[i] = (int)(RND() & 1);
            if (!split) {
                lc[i] = rc[i] = -1;
                continue;
            }
            int a = nn++, b = nn++, swap = swap_some && (RND() & 1);
            lc[i] = swap ? b : a;
            rc[i] = swap ? a : b;
            depth[a] = depth[b] = depth[i] + 1;
        }
        OUT("%s{\"left_children\":[", t ? "," : "");
        for (int i = 0; i < nn; i++) OUT("%s%d", i ? "," : "", lc[i]);
        OUT("],\"right_children\":[");
        for (int i = 0; i < nn; i++) OUT("%s%d", i ? "," : "", rc[i]);
        OUT("],\"split_indices\":[");
        for (int i = 0; i < nn; i++) OUT("%s%d", i ? "," : "", fi[i]);
        OUT("],\"split_conditions\":[");
        for (int i = 0; i < nn; i++) OUT("%s%.9g", i ? "," : "", (double)th[i]);
        OUT("],\"default_left\":[");
        for (int i = 0; i < nn; i++) OUT("%s%d", i ? "," : "", dl[i]);
        OUT("]}");
    }
    OUT("]}}}}");
#undef RND
#undef OUT
    return j;
}

/* Random ensembles: tree counts around the lane widths, rows of few features (one register), of
 * up to 64 (looked up in registers), and of more (the row gathered from memory, up to the packed
 * form's 4096 and past it); children in XGBoost's pairs and not; values near the thresholds,
 * equal to them, and missing. Every kernel gives the portable loop's bits. */
static void flat_kernels_should_match_the_portable_loop_on_random_trees(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 3, 0},   {7, 16, 0},   {8, 17, 0},  {9, 40, 0},
                                    {16, 33, 0}, {17, 64, 0},  {33, 65, 0}, {40, 100, 0},
                                    {100, 40, 0}, {5, 4096, 0}, {9, 40, 1},  {40, 100, 1},
                                    {3, 4097, 0}, {0, 4, 0}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int nt = shapes[k][0], nf = shapes[k][1], swap = shapes[k][2], n = 203;
        char *json = random_model_json(nt, nf, 7u + (uint32_t)k, swap);
        pp_lm_flat *f = NULL;
        pp_err err = {0};
        assert_int_equal(pp_lm_flat_from_json(json, strlen(json), "random", &f, &err), PERFPRED_OK);
        free(json);
        float *X = malloc((size_t)n * nf * sizeof *X);
        assert_non_null(X);
        uint32_t s = 99u + (uint32_t)k;
        for (int i = 0; i < n * nf; i++) {
            s = s * 1664525u + 1013904223u;
            uint32_t r = s >> 8;
            X[i] = r % 11 == 0 ? NAN : r % 13 == 0 ? (float)((int)(r >> 4) % 2001 - 1000) / 256.0f
                                     : (float)((int)(r % 4001) - 2000) / 500.0f;
        }
        kernels_should_agree_on(f, X, n, nf, nt > 0 && nf <= 4096 && !swap);
        free(X);
        pp_lm_flat_free(f);
    }
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

/* Sets the file's mtime to t (s since the epoch): old enough to be cached (lm_cache.c's racy
 * rule). */
static void age(const char *path, time_t t)
{
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* A temp folder (its path into root) holding the cache folder and a copy of one shipped
 * regressor; cache_teardown removes it. */
static void cache_setup(char *root, char *cache, char *ubj, const char *kind_file, size_t cap)
{
    char tmpl[] = "/tmp/pp_lm_cache_XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    snprintf(root, cap, "%s", tmpl);
    snprintf(cache, cap, "%s/cache", tmpl);
    snprintf(ubj, cap, "%s/%s", tmpl, kind_file);
    setenv("PERFPRED_CACHE_DIR", cache, 1);
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err err = {0};
    char src[1024];
    snprintf(src, sizeof src, "%s", pp_test_path("configs/artifacts/host-cpu"));
    char dir_path[1400];
    snprintf(dir_path, sizeof dir_path, "%s/%s", src, kind_file);
    assert_int_equal(pp_read_file(dir_path, &buf, &len, &err), PERFPRED_OK);
    assert_int_equal(pp_write_file_atomic(ubj, buf, len, &err), PERFPRED_OK);
    free(buf);
    age(ubj, 1500000000);
}

static void cache_teardown(const char *root)
{
    setenv("PERFPRED_CACHE_DIR", "off", 1);
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* The one file in the cache folder (its path into out). */
static void cache_file(const char *cache, char *out, size_t cap)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/flat-trees", cache);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(out, cap, "%s/%s", dir, de->d_name);
            n++;
        }
    closedir(d);
    assert_int_equal(n, 1);
}

static pp_lm_model *load_host_model(const char *path, const char *kind)
{
    pp_layer_models *lm = NULL;
    pp_err err = {0};
    assert_int_equal(pp_layer_models_open(pp_test_path("configs/artifacts/host-cpu"), 1, &lm, &err),
                     PERFPRED_OK);
    const pp_lm_entry *e = pp_layer_models_entry(lm, (pp_op_kind)pp_op_kind_from_name(kind),
                                                 PP_LM_LATENCY);
    assert_non_null(e);
    pp_lm_model *m = NULL;
    assert_int_equal(pp_lm_model_load(path, e->kind, e->target, &e->base, &e->domain, &m, &err),
                     PERFPRED_OK);
    pp_layer_models_free(lm);
    return m;
}

static const char *host_file(const char *kind)
{
    static char name[256];
    DIR *d = opendir(pp_test_path("configs/artifacts/host-cpu"));
    assert_non_null(d);
    struct dirent *de;
    name[0] = '\0';
    size_t kl = strlen(kind);
    while ((de = readdir(d)))
        if (strncmp(de->d_name, kind, kl) == 0 && de->d_name[kl] == '-' &&
            strstr(de->d_name, ".ubj"))
            snprintf(name, sizeof name, "%s", de->d_name);
    closedir(d);
    assert_true(name[0] != '\0');
    return name;
}

static void predict_rows(pp_lm_model *m, const pp_node_feat *rows, int n, double *out)
{
    pp_err err = {0};
    assert_int_equal(pp_lm_model_predict_many(m, rows, n, out, &err), PERFPRED_OK);
}

/* A load writes the cache, the next load reads it (a valid cache of other trees planted under the
 * model's name and identity answers: the file is what is read), a corrupt or stale one is ignored
 * and rewritten, and every load gives XGBoost's figures. */
static void tree_cache_should_be_read_validated_and_rebuilt(void **state)
{
    (void)state;
    char root[1024], cache[1024], ubj[1024], cf[1600];
    char conv_name[256];
    snprintf(conv_name, sizeof conv_name, "%s", host_file("conv"));
    cache_setup(root, cache, ubj, conv_name, sizeof cache);
    int n = 0;
    pp_node_feat *rows = real_rows(&n);
    double *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
    assert_non_null(want);
    assert_non_null(got);
    pp_err err = {0};

    pp_lm_model *m = load_host_model(ubj, "conv");  /* first load: through XGBoost, cache written */
    assert_true(pp_lm_model_is_flat(m));
    assert_int_equal(pp_lm_model_predict_many_xgb(m, rows, n, want, &err), PERFPRED_OK);
    pp_lm_model_free(m);
    cache_file(cache, cf, sizeof cf);

    m = load_host_model(ubj, "conv");  /* warm: from the cache */
    assert_true(pp_lm_model_is_flat(m));
    predict_rows(m, rows, n, got);
    for (int i = 0; i < n; i++) assert_rel_close(got[i], want[i], 1e-6);
    /* the reference path reads the booster on demand */
    assert_int_equal(pp_lm_model_predict_many_xgb(m, rows, 50, got, &err), PERFPRED_OK);
    for (int i = 0; i < 50; i++) assert_rel_close(got[i], want[i], 1e-6);
    pp_lm_model_free(m);

    /* plant another model's valid trees under this one's identity: they are what answers */
    char other[1400];
    snprintf(other, sizeof other, "%s/%s", pp_test_path("configs/artifacts/host-cpu"),
             host_file("linear"));
    setenv("PERFPRED_CACHE_DIR", "off", 1);
    pp_lm_model *lin = load_host_model(other, "linear");
    assert_int_equal(pp_lm_model_flatten(lin, &err), PERFPRED_OK);
    setenv("PERFPRED_CACHE_DIR", cache, 1);
    pp_lm_src_id id;
    assert_int_equal(pp_lm_src_id_of(ubj, &id), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(pp_lm_flat_serialize(pp_lm_model_flat(lin), &id, &buf, &len, &err),
                     PERFPRED_OK);
    pp_lm_model_free(lin);
    assert_int_equal(pp_write_file_atomic(cf, buf, len, &err), PERFPRED_OK);
    m = load_host_model(ubj, "conv");
    predict_rows(m, rows, n, got);
    int differ = 0;
    for (int i = 0; i < n; i++) differ += fabs(got[i] - want[i]) > 1e-6 * fabs(want[i]);
    assert_true(differ > n / 10);
    pp_lm_model_free(m);

    /* corrupt: one flipped byte deep in the nodes; ignored, and rewritten with the right trees */
    buf[len - 100] ^= 0x40;
    assert_int_equal(pp_write_file_atomic(cf, buf, len, &err), PERFPRED_OK);
    free(buf);
    m = load_host_model(ubj, "conv");
    predict_rows(m, rows, n, got);
    for (int i = 0; i < n; i++) assert_rel_close(got[i], want[i], 1e-6);
    pp_lm_model_free(m);
    m = load_host_model(ubj, "conv");
    predict_rows(m, rows, n, got);
    for (int i = 0; i < n; i++) assert_rel_close(got[i], want[i], 1e-6);
    pp_lm_model_free(m);

    /* stale: the source's mtime moves; the cache's identity no longer matches and is replaced */
    assert_int_equal(pp_read_file(cf, &buf, &len, &err), PERFPRED_OK);
    struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
    assert_int_equal(utimensat(AT_FDCWD, ubj, ts, 0), 0);
    pp_lm_flat *stale = NULL;
    assert_int_equal(pp_lm_src_id_of(ubj, &id), 0);
    assert_int_equal(pp_lm_flat_deserialize(buf, len, &id, &stale, &err), PERFPRED_ERR_PARSE);
    assert_null(stale);
    free(buf);
    m = load_host_model(ubj, "conv");
    predict_rows(m, rows, n, got);
    for (int i = 0; i < n; i++) assert_rel_close(got[i], want[i], 1e-6);
    pp_lm_model_free(m);
    assert_int_equal(pp_read_file(cf, &buf, &len, &err), PERFPRED_OK);
    assert_int_equal(pp_lm_flat_deserialize(buf, len, &id, &stale, &err), PERFPRED_OK);
    pp_lm_flat_free(stale);
    free(buf);
    cache_teardown(root);
    free(want);
    free(got);
    free(rows);
}

/* Hostile cache bytes: every truncation, flipped bytes, and sealed (checksum-correct) files whose
 * trees point backwards, outside their tree or outside the row are refused. */
static void tree_cache_should_refuse_hostile_bytes(void **state)
{
    (void)state;
    const char *json = toy_json;
    pp_lm_flat *f = NULL, *g = NULL;
    pp_err err = {0};
    assert_int_equal(pp_lm_flat_from_json(json, strlen(json), "toy", &f, &err), PERFPRED_OK);
    pp_lm_src_id id = {1, 2, 3, 4, 5, 6};
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(pp_lm_flat_serialize(f, &id, &buf, &len, &err), PERFPRED_OK);
    assert_int_equal(pp_lm_flat_deserialize(buf, len, &id, &g, &err), PERFPRED_OK);
    float X[2] = {0, 5}, y = 0;
    pp_lm_flat_predict(g, X, 1, 2, &y);
    assert_true(y == 2.5f);
    pp_lm_flat_free(g);
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_equal(pp_lm_flat_deserialize(buf, cut, &id, &g, &err), PERFPRED_ERR_PARSE);
        assert_null(g);
    }
    uint8_t *bad = malloc(len);
    assert_non_null(bad);
    for (size_t i = 0; i < len; i++) {
        memcpy(bad, buf, len);
        bad[i] ^= 0x01;
        assert_int_equal(pp_lm_flat_deserialize(bad, len, &id, &g, &err), PERFPRED_ERR_PARSE);
        assert_null(g);
    }
    /* sealed edits of the nodes: node k at offset len - 16 * (5 - k); fields value, feature,
     * left, right|dl */
    const struct {
        int node, field;
        int32_t v;
    } edits[] = {{0, 2, 0}, {1, 2, 1}, {0, 3, 5}, {1, 1, 2}, {1, 1, -1}, {0, 3, -7}, {2, 2, -2}};
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        memcpy(bad, buf, len);
        memcpy(bad + len - 16 * (5 - edits[k].node) + 4 * edits[k].field, &edits[k].v, 4);
        pp_lm_cache_seal(bad, len);
        assert_int_equal(pp_lm_flat_deserialize(bad, len, &id, &g, &err), PERFPRED_ERR_PARSE);
        assert_null(g);
    }
    /* the identity: another source size is stale */
    pp_lm_src_id other = id;
    other.size++;
    assert_int_equal(pp_lm_flat_deserialize(buf, len, &other, &g, &err), PERFPRED_ERR_PARSE);
    free(bad);
    free(buf);
    pp_lm_flat_free(f);
}

/* The memo answers rows it has seen with the trees' own floats: a second pass over thousands of
 * real rows (more than the memo holds: slots are shared and replaced) hits, and gives what the
 * trees give with the memo off and what XGBoost gives. */
static void memo_should_answer_seen_rows_as_the_trees_do(void **state)
{
    (void)state;
    setenv("PERFPRED_CACHE_DIR", "off", 1);
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", pp_test_path("configs/artifacts/host-cpu"),
             host_file("conv"));
    pp_lm_model *m = load_host_model(path, "conv");
    pp_err err = {0};
    assert_int_equal(pp_lm_model_flatten(m, &err), PERFPRED_OK);
    int n = 0;
    pp_node_feat *rows = real_rows(&n);
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b),
           *c = malloc((size_t)n * sizeof *c), *x = malloc((size_t)n * sizeof *x);
    assert_true(a && b && c && x);
    predict_rows(m, rows, n, a);
    long h0, l0, h1, l1;
    pp_lm_memo_counts(pp_lm_model_memo(m), &h0, &l0);
    assert_int_equal(l0, n);
    predict_rows(m, rows, n, b);
    pp_lm_memo_counts(pp_lm_model_memo(m), &h1, &l1);
    assert_int_equal(l1 - l0, n);
    assert_true(h1 - h0 > n / 4);
    pp_lm_memo_disable(1);
    predict_rows(m, rows, n, c);
    pp_lm_memo_disable(0);
    assert_int_equal(pp_lm_model_predict_many_xgb(m, rows, n, x, &err), PERFPRED_OK);
    for (int i = 0; i < n; i++) {
        assert_memory_equal(&a[i], &c[i], sizeof a[i]);
        assert_memory_equal(&b[i], &c[i], sizeof b[i]);
        assert_rel_close(b[i], x[i], 1e-6);
    }
    pp_lm_model_free(m);
    free(a);
    free(b);
    free(c);
    free(x);
    free(rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flat_trees_should_match_xgboost_on_every_shipped_artifact),
        cmocka_unit_test(flat_trees_should_follow_default_direction_for_missing_values),
        cmocka_unit_test(flat_kernels_should_match_the_portable_loop_on_random_trees),
        cmocka_unit_test(flat_trees_should_refuse_malformed_models),
        cmocka_unit_test(tree_cache_should_be_read_validated_and_rebuilt),
        cmocka_unit_test(tree_cache_should_refuse_hostile_bytes),
        cmocka_unit_test(memo_should_answer_seen_rows_as_the_trees_do),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
