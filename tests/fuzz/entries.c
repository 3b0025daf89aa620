/* tests/fuzz/entries.c: one entry per reader of files from elsewhere, shared by the libFuzzer
 * harnesses (tests/fuzz/fuzz_<name>.c) and the cmocka replay of their committed inputs
 * (tests/test_fuzz_replay.c), so that a crash found by fuzzing is replayed by the normal suite
 * through the same code. Each entry writes the bytes where the reader looks and calls it; the
 * reader may refuse them, it must never crash, leak or hang. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "tests/fuzz/entries.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <ftw.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <xgboost/c_api.h>

#include "fit/fit.h"
#include "datasets/datasets.h"
#include "devices/devices.h"
#include "graph/graph.h"
#include "graph_gnn/graph_gnn.h"
#include "layer_models/layer_models.h"
#include "predictor/calib.h"
#include "predictor/allocator.h"
#include "predictor/interval.h"
#include "predictor/power.h"
#include "predictor/stack.h"

static char scratch_dir[256];

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)remove(path); /* best effort */
    return 0;
}

static void remove_scratch(void)
{
    if (scratch_dir[0]) nftw(scratch_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A scratch folder for this process (made once, removed at exit): $TMPDIR, else
 * /dev/shm where it exists. Entries rewrite a file per input, and on ext4 replacing a file's
 * contents costs ~3.6 ms (the flush of auto_da_alloc) against ~0.05 ms on tmpfs. */
static const char *scratch(void)
{
    char *dir = scratch_dir;
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        struct stat sb;
        if (!t || !*t) t = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof scratch_dir, "%s/pp-fuzz-XXXXXX", t);
        if (!mkdtemp(dir)) abort();
        atexit(remove_scratch);
    }
    return dir;
}

static void put(const char *path, const uint8_t *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (len && fwrite(data, 1, len, f) != len) abort();
    if (fclose(f) != 0) abort();
}

static void put_text(const char *path, const char *text)
{
    put(path, (const uint8_t *)text, strlen(text));
}

static void mkdirs(const char *dir)
{
    if (pp_mkdir_p(dir, NULL) != PERFPRED_OK) abort();
}

/* The project's own descriptors, read once. */
static const pp_device_db *real_db(void)
{
    static pp_device_db *db;
    if (!db && pp_devices_load_dir(PP_SOURCE_DIR "/configs/devices", &db, NULL) != PERFPRED_OK)
        abort();
    return db;
}

static char *path_in(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", scratch(), rel);
    return buf;
}

int pp_fuzz_onnx(const uint8_t *data, size_t len)
{
    pp_graph *g = NULL;
    pp_err err = {0};
    /* what pp_graph_load_full does after reading the file */
    if (pp_onnx_load_buffer("fuzz.onnx", data, len, &g, &err) == PERFPRED_OK) {
        pp_shape_opts none = {0};
        if (!pp_graph_infer_shapes(g, &none, &err) && !pp_graph_features(g, &err) &&
            !pp_graph_liveness(g, &err)) {
            /* the GPU memory replay of every trace kind (eager, engine, autocast), against a
             * small device so that the allocator also returns its cache (predictor/allocator.h) */
            for (int mode = PP_TRACE_EAGER; mode <= PP_TRACE_AUTOCAST; mode++) {
                pp_alloc_trace t;
                if (pp_alloc_trace_build(g, 1, mode, &t, &err)) continue;
                pp_alloc_params p = {1, 0.5, 8519680, 64.0 * 1048576, 1};
                pp_alloc_stats st;
                (void)pp_alloc_fresh(&t, &p, &st, &err);
                pp_alloc_trace_free(&t);
            }
        }
    }
    pp_graph_free(g);
    return 0;
}

int pp_fuzz_yaml(const uint8_t *data, size_t len)
{
    char p[512];
    put(path_in(p, sizeof p, "fuzz.yaml"), data, len);
    const char *paths[1] = {p};
    pp_device_db *db = NULL;
    if (pp_devices_load_files(paths, 1, &db, NULL) == PERFPRED_OK) {
        for (int i = 0; i < pp_devices_count(db); i++) {
            free(pp_device_to_yaml(pp_devices_at(db, i)));
        }
    }
    pp_devices_free(db);
    return 0;
}

int pp_fuzz_layer_csv(const uint8_t *data, size_t len)
{
    char p[512];
    put(path_in(p, sizeof p, "fuzz-layers.csv"), data, len);
    pp_layer_table *t = NULL;
    (void)pp_measure_layer_csv_read(p, &t, NULL);
    pp_measure_layer_table_free(t);
    return 0;
}

int pp_fuzz_net_csv(const uint8_t *data, size_t len)
{
    char p[512];
    put(path_in(p, sizeof p, "fuzz-networks.csv"), data, len);
    pp_net_table *t = NULL;
    (void)pp_measure_net_csv_read(p, &t, NULL);
    pp_measure_net_table_free(t);
    return 0;
}

int pp_fuzz_gnn_weights(const uint8_t *data, size_t len)
{
    char p[512];
    put(path_in(p, sizeof p, "fuzz-gnn.bin"), data, len);
    pp_gnn *m = NULL;
    (void)pp_gnn_load(p, NULL, &m, NULL);
    pp_gnn_free(m);
    return 0;
}

/* A GNN's JSON manifest beside a valid weights file. */
int pp_fuzz_gnn_manifest(const uint8_t *data, size_t len)
{
    static char wp[512];
    if (!wp[0]) {
        pp_gnn_params prm = pp_gnn_default_params();
        prm.layers = 1;
        prm.hidden = 4;
        pp_gnn *m;
        if (pp_gnn_new(3, 1, 2, 2, &prm, &m, NULL) != PERFPRED_OK) abort();
        char mp0[512];
        if (pp_gnn_save(m, path_in(wp, sizeof wp, "gnn-latency.bin"),
                        path_in(mp0, sizeof mp0, "gnn-seed.json"), NULL, NULL) != PERFPRED_OK)
            abort();
        pp_gnn_free(m);
    }
    char mp[512];
    put(path_in(mp, sizeof mp, "gnn-latency.json"), data, len);
    pp_gnn *m = NULL;
    (void)pp_gnn_load(wp, mp, &m, NULL);
    pp_gnn_free(m);
    return 0;
}

/* Writes the input as artifacts/host-cpu/<file> of the config folder <sub>; its path goes to cfg. */
static void host_cpu_artifact(char *cfg, size_t n, const char *sub, const char *file,
                              const uint8_t *data, size_t len)
{
    char dir[600], p[700];
    path_in(cfg, n, sub);
    snprintf(dir, sizeof dir, "%s/artifacts/host-cpu", cfg);
    mkdirs(dir);
    snprintf(p, sizeof p, "%s/%s", dir, file);
    put(p, data, len);
}

/* configs/artifacts/host-cpu/overhead-latency.json of a config folder, read by pp_calib_open. */
int pp_fuzz_overhead(const uint8_t *data, size_t len)
{
    char cfg[512];
    host_cpu_artifact(cfg, sizeof cfg, "ovh-config", "overhead-latency.json", data, len);
    pp_calib *c = NULL;
    (void)pp_calib_open(real_db(), cfg, &c, NULL);
    pp_calib_close(c);
    return 0;
}

/* configs/artifacts/host-cpu/intervals.json of a config folder, read by pp_interval_set_load. */
int pp_fuzz_intervals(const uint8_t *data, size_t len)
{
    char cfg[512];
    host_cpu_artifact(cfg, sizeof cfg, "iv-config", "intervals.json", data, len);
    pp_interval_set *s = NULL;
    (void)pp_interval_set_load(real_db(), cfg, &s, NULL);
    pp_interval_set_free(s);
    return 0;
}

/* A tiny booster (PP_LM_NFEAT features, 3 rounds of depth 2 on 64 seeded rows) as UBJSON, and a
 * manifest naming it as the bmm latency model (a100-pcie-40gb's manifest, one model kept): the
 * valid pair the lm_set entry starts from. Built once. */
static uint8_t *lm_ubj, *lm_manifest;
static size_t lm_ubj_len, lm_manifest_len;

static void lm_seed(void)
{
    if (lm_ubj) return;
    float x[64 * PP_LM_NFEAT], y[64];
    uint64_t r = 88172645463325252ULL;
    for (int i = 0; i < 64 * PP_LM_NFEAT; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        x[i] = (float)(r % 1000) / 100.0f;
    }
    for (int i = 0; i < 64; i++) y[i] = x[i * PP_LM_NFEAT] * 0.1f;
    DMatrixHandle dm;
    BoosterHandle b;
    if (XGDMatrixCreateFromMat(x, 64, PP_LM_NFEAT, NAN, &dm) || XGDMatrixSetFloatInfo(dm, "label", y, 64) ||
        XGBoosterCreate(&dm, 1, &b) || XGBoosterSetParam(b, "max_depth", "2") ||
        XGBoosterSetParam(b, "nthread", "1") || XGBoosterSetParam(b, "verbosity", "0"))
        abort();
    for (int it = 0; it < 3; it++)
        if (XGBoosterUpdateOneIter(b, it, dm)) abort();
    bst_ulong n;
    const char *raw;
    if (XGBoosterSaveModelToBuffer(b, "{\"format\": \"ubj\"}", &n, &raw)) abort();
    lm_ubj_len = (size_t)n;
    if (!(lm_ubj = malloc(lm_ubj_len))) abort();
    memcpy(lm_ubj, raw, lm_ubj_len);
    XGBoosterFree(b);
    XGDMatrixFree(dm);
    uint8_t *mb;
    size_t ml;
    if (pp_read_file(PP_SOURCE_DIR "/configs/artifacts/a100-pcie-40gb/manifest.json", &mb, &ml,
                     NULL))
        abort();
    cJSON *root = cJSON_ParseWithLength((const char *)mb, ml);
    free(mb);
    cJSON *models = root ? cJSON_GetObjectItemCaseSensitive(root, "models") : NULL;
    if (!cJSON_IsArray(models)) abort();
    while (cJSON_GetArraySize(models) > 1) cJSON_DeleteItemFromArray(models, 1);
    cJSON *m0 = cJSON_GetArrayItem(models, 0);
    cJSON_ReplaceItemInObjectCaseSensitive(m0, "file", cJSON_CreateString("bmm-latency-tiny.ubj"));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) abort();
    lm_manifest = (uint8_t *)text;
    lm_manifest_len = strlen(text);
}

/* Layer models through lm_set (manifest, then the XGBoost model it names): the first byte picks
 * whether the rest replaces the manifest or the model file. */
int pp_fuzz_lm_set(const uint8_t *data, size_t len)
{
    lm_seed();
    char dir[512], mp[700], up[700];
    path_in(dir, sizeof dir, "lm");
    mkdirs(dir);
    snprintf(mp, sizeof mp, "%s/manifest.json", dir);
    snprintf(up, sizeof up, "%s/bmm-latency-tiny.ubj", dir);
    int which = len ? data[0] & 1 : 0; /* 0: manifest, 1: model */
    const uint8_t *rest = len ? data + 1 : data;
    size_t rlen = len ? len - 1 : 0;
    put(mp, which == 0 ? rest : lm_manifest, which == 0 ? rlen : lm_manifest_len);
    put(up, which == 1 ? rest : lm_ubj, which == 1 ? rlen : lm_ubj_len);
    /* the flat-tree cache has its own entry (lm_cache): no cache files per input here */
    setenv("PERFPRED_CACHE_DIR", "off", 1);
    pp_layer_models *lm = NULL;
    if (pp_layer_models_open(dir, 0, &lm, NULL) == PERFPRED_OK)
        (void)pp_layer_models_ready(lm, NULL);
    pp_layer_models_free(lm);
    return 0;
}

/* The flat-tree cache reader (lm_flat.c): the first byte's low bit picks whether the checksum is
 * rewritten over the rest first (so that mutations reach the size and tree-structure checks); trees
 * that pass are walked on rows of zeros, NaNs and the input's own floats. */
int pp_fuzz_lm_cache(const uint8_t *data, size_t len)
{
    if (!len) return 0;
    size_t n = len - 1;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, n);
    if (data[0] & 1) pp_lm_cache_seal(buf, n);
    pp_lm_flat *f = NULL;
    if (pp_lm_flat_deserialize(buf, n, NULL, &f, NULL) == PERFPRED_OK) {
        int nf = pp_lm_flat_n_features(f);
        float *x = calloc((size_t)nf * 3, sizeof *x), y[3];
        if (x) {
            for (int i = 0; i < nf; i++) {
                x[nf + i] = NAN;
                float v = 0;
                if (n >= 4) memcpy(&v, buf + (size_t)(4 * i) % (n - 3), 4);
                x[2 * nf + i] = v;
            }
            pp_lm_flat_predict(f, x, 3, nf, y);
        }
        free(x);
    }
    pp_lm_flat_free(f);
    free(buf);
    return 0;
}

/* ---- dataset importers: a SOURCE.md and the fuzzed file where the importer reads it ---- */

static const char *importer_root(const char *name, const char *source_md)
{
    static char roots[4][512];
    static const char *names[4];
    for (int i = 0; i < 4; i++) {
        if (names[i] && strcmp(names[i], name) == 0) return roots[i];
        if (!names[i]) {
            char rel[256];
            snprintf(rel, sizeof rel, "ds-%s", name);
            path_in(roots[i], sizeof roots[i], rel);
            mkdirs(roots[i]);
            char p[700];
            snprintf(p, sizeof p, "%s/SOURCE.md", roots[i]);
            put_text(p, source_md);
            names[i] = name;
            return roots[i];
        }
    }
    abort();
}

int pp_fuzz_deepbench(const uint8_t *data, size_t len)
{
    const char *root = importer_root(
        "deepbench", "# DeepBench\n- Commit: da81ba7820739e2e506dc27f382d15be5479f98f (HEAD, "
                     "2020-08-11)\n  `results/DeepBench_NV_Jetson_TX1.xlsx` taken from commit "
                     "4f453811290500838ce6d7fe5daa7853f8364750 (removed later).\n");
    char dir[700], p[900];
    snprintf(dir, sizeof dir, "%s/csv/results", root);
    mkdirs(dir);
    snprintf(p, sizeof p, "%s/DeepBench_NV_Jetson_TX1__Results.csv", dir);
    put(p, data, len);
    pp_layer_table *t = pp_measure_layer_table_new("deepbench");
    pp_import_report *rep = calloc(1, sizeof *rep);
    pp_import_filter flt = {0};
    if (t && rep) (void)pp_datasets_deepbench_import(root, real_db(), &flt, t, rep, NULL);
    free(rep);
    pp_measure_layer_table_free(t);
    return 0;
}

int pp_fuzz_mobile(const uint8_t *data, size_t len)
{
    const char *root = importer_root(
        "mobile", "# mobile-ml-benchmark\n- Commit used: 40ba833a9ca560a3035a76a5c3da504082dec001 "
                  "(2024-02-22, \"Upload dataste csv files\"), path `dataset/*.csv`.\n");
    char p[900];
    snprintf(p, sizeof p, "%s/tflite_cnn_ops_gpu.csv", root);
    put(p, data, len);
    pp_layer_table *t = pp_measure_layer_table_new("mobile");
    pp_import_report *rep = calloc(1, sizeof *rep);
    pp_import_filter flt = {0};
    if (t && rep) (void)pp_datasets_mobile_import(root, real_db(), &flt, t, rep, NULL);
    free(rep);
    pp_measure_layer_table_free(t);
    return 0;
}

int pp_fuzz_neusight(const uint8_t *data, size_t len)
{
    const char *root = importer_root(
        "neusight", "# NeuSight\n- Repo: https://github.com/sitar-lab/NeuSight\n- Commit: "
                    "6945927d9afcca2b9daf021f8395e53edc5b4eef (2025-06-23). Plain git blobs.\n");
    char rel[1024], p[2048];
    if (pp_datasets_neusight_path("linear", "NVIDIA A100-PCIE-40GB", PP_NEUSIGHT_TRAIN, rel,
                                  sizeof rel, NULL) != PERFPRED_OK)
        abort();
    snprintf(p, sizeof p, "%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdirs(p);
    *slash = '/';
    put(p, data, len);
    pp_layer_table *t = pp_measure_layer_table_new("neusight");
    if (t)
        (void)pp_datasets_neusight_import(root, "linear", "NVIDIA A100-PCIE-40GB",
                                          PP_NEUSIGHT_TRAIN, t, NULL, NULL);
    pp_measure_layer_table_free(t);
    return 0;
}

/* A GPU runtime stack or board power artifact (configs/artifacts/stacks/, gpu-power.json): the
 * first byte picks the reader, the rest is the file. */
int pp_fuzz_gpu_artifacts(const uint8_t *data, size_t len)
{
    if (len == 0) return 0;
    char p[512];
    put(path_in(p, sizeof p, "artifact.json"), data + 1, len - 1);
    if (data[0] & 1) {
        pp_power_set set;
        (void)pp_power_load(p, &set, NULL);
    } else {
        pp_stack s;
        (void)pp_stack_load(p, &s, NULL);
    }
    return 0;
}

/* gpu-benches' roofline sweep as calibrate fit-power reads it: the input is the A100's file,
 * beside a fixed, valid H200 file. */
int pp_fuzz_power_sweep(const uint8_t *data, size_t len)
{
    char dir[512], p[640];
    path_in(dir, sizeof dir, "sweep/gpu-roofline");
    mkdirs(dir);
    snprintf(p, sizeof p, "%s/h200.txt", dir);
    static const char h200[] = /* synthetic: p0 100 W, 120 pJ/B, 5 pJ/flop */
        "0 1056 blocks 0 its 0.250 Fl/B 4000 GB/s 1000 GF/s 1980 Mhz 585 W 50C\n"
        "0 1056 blocks 4 its 1.250 Fl/B 4000 GB/s 5000 GF/s 1980 Mhz 605 W 50C\n"
        "0 1056 blocks 40 its 10.250 Fl/B 2000 GB/s 20500 GF/s 1980 Mhz 442 W 50C\n"
        "0 1056 blocks 80 its 20.250 Fl/B 1000 GB/s 20250 GF/s 1980 Mhz 321 W 50C\n"
        "0 1056 blocks 160 its 40.250 Fl/B 500 GB/s 20125 GF/s 1980 Mhz 261 W 50C\n";
    put_text(p, h200);
    snprintf(p, sizeof p, "%s/alex_a100_40.txt", dir);
    put(p, data, len);
    pp_fit_power_report *rep = malloc(sizeof *rep);
    if (!rep) abort();
    path_in(dir, sizeof dir, "sweep");
    (void)pp_fit_power_run(real_db(), dir, rep, NULL);
    free(rep);
    return 0;
}

const pp_fuzz_entry pp_fuzz_entries[] = {
    {"onnx", pp_fuzz_onnx},
    {"yaml", pp_fuzz_yaml},
    {"layer_csv", pp_fuzz_layer_csv},
    {"net_csv", pp_fuzz_net_csv},
    {"gnn_weights", pp_fuzz_gnn_weights},
    {"gnn_manifest", pp_fuzz_gnn_manifest},
    {"overhead", pp_fuzz_overhead},
    {"lm_set", pp_fuzz_lm_set},
    {"lm_cache", pp_fuzz_lm_cache},
    {"deepbench", pp_fuzz_deepbench},
    {"mobile", pp_fuzz_mobile},
    {"neusight", pp_fuzz_neusight},
    {"gpu_artifacts", pp_fuzz_gpu_artifacts},
    {"power_sweep", pp_fuzz_power_sweep},
    {"intervals", pp_fuzz_intervals},
    {NULL, NULL},
};
