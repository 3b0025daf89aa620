/* graph_gnn/gnn_io.c: saving and loading a GNN: a binary weights file (layout in graph_gnn.h: magic,
 * version, dims, float32 little-endian, FNV-1a 64 trailer) and a JSON manifest (cJSON) with the
 * provenance of the training: data, split, settings, epochs and errors. Both written atomically;
 * both read strictly (wrong size, checksum, unknown key or missing field is an error naming it). */
#include "graph_gnn/graph_gnn.h"

#include <cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W_MAGIC "PPGNNWTS"
#define W_VERSION 1u
#define W_HEADER 48u
#define M_FORMAT "perfpred-gnn"
#define M_VERSION 1
#define M_AGGREGATION "mean+max over in- and out-neighbours, direction flag"
#define M_READOUT "mean+max over nodes + global node"

/* ---- little-endian bytes ---- */
static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_f32(unsigned char *p, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    put_u32(p, v);
}
static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}
static float get_f32(const unsigned char *p)
{
    uint32_t v = get_u32(p);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static uint64_t fnv1a64(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static size_t n_stats(int F, int Fe, int G, int T)
{
    return 2 * ((size_t)F + (size_t)Fe + (size_t)G + (size_t)T);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Serializes the weights file into a malloc'd buffer. */
static unsigned char *weights_bytes(const pp_gnn *m, size_t *len)
{
    size_t nf = n_stats(m->n_feat, m->n_edge_feat, m->n_globals, m->n_targets) + m->n_params;
    size_t n = W_HEADER + 4 * nf + 8;
    unsigned char *b = malloc(n), *p;
    if (!b) return NULL;
    memcpy(b, W_MAGIC, 8);
    put_u32(b + 8, W_VERSION);
    put_u32(b + 12, W_HEADER);
    put_u32(b + 16, (uint32_t)m->n_feat);
    put_u32(b + 20, (uint32_t)m->n_edge_feat);
    put_u32(b + 24, (uint32_t)m->n_globals);
    put_u32(b + 28, (uint32_t)m->n_targets);
    put_u32(b + 32, (uint32_t)m->params.layers);
    put_u32(b + 36, (uint32_t)m->params.hidden);
    put_u32(b + 40, (uint32_t)m->n_params);
    put_u32(b + 44, m->trained ? 1u : 0u);
    p = b + W_HEADER;
#define PUT_ARR(a, cnt)                                               \
    for (size_t i_ = 0; i_ < (size_t)(cnt); i_++, p += 4) put_f32(p, (a)[i_])
    PUT_ARR(m->x_mean, m->n_feat);
    PUT_ARR(m->x_std, m->n_feat);
    PUT_ARR(m->e_mean, m->n_edge_feat);
    PUT_ARR(m->e_std, m->n_edge_feat);
    PUT_ARR(m->u_mean, m->n_globals);
    PUT_ARR(m->u_std, m->n_globals);
    PUT_ARR(m->y_mean, m->n_targets);
    PUT_ARR(m->y_std, m->n_targets);
    PUT_ARR(m->w, m->n_params);
#undef PUT_ARR
    put_u64(p, fnv1a64(b, (size_t)(p - b)));
    *len = n;
    return b;
}

/* Member i (2..K) of an ensemble saved beside path: "<stem>.<i><ext>" (gnn-latency.2.bin). */
static int member_path(char *out, size_t n, const char *path, int i)
{
    const char *base = base_name(path), *dot = strrchr(base, '.');
    size_t stem = dot ? (size_t)(dot - path) : strlen(path);
    int k = snprintf(out, n, "%.*s.%d%s", (int)stem, path, i, dot ? dot : "");
    return k > 0 && (size_t)k < n;
}

/* The manifest of one weights file; member_hash lists the checksums of an ensemble's members
 * 2..n_members + 1, saved at member_path(weights_path, i). */
static cJSON *manifest_json(const pp_gnn *m, const char *weights_path, size_t wlen, uint64_t hash,
                            const pp_gnn_provenance *prov, const uint64_t *member_hash,
                            int n_members)
{
    cJSON *root = cJSON_CreateObject(), *o;
    char hex[17], seed[24];
    snprintf(hex, sizeof hex, "%016" PRIx64, hash);
    snprintf(seed, sizeof seed, "%" PRIu64, m->params.seed);
    int ok = root != NULL;
    ok = ok && cJSON_AddStringToObject(root, "format", M_FORMAT);
    ok = ok && cJSON_AddNumberToObject(root, "version", M_VERSION);
    ok = ok && (o = cJSON_AddObjectToObject(root, "weights"));
    ok = ok && cJSON_AddStringToObject(o, "file", base_name(weights_path));
    ok = ok && cJSON_AddNumberToObject(o, "bytes", (double)wlen);
    ok = ok && cJSON_AddStringToObject(o, "fnv1a64", hex);
    ok = ok && (o = cJSON_AddObjectToObject(root, "architecture"));
    ok = ok && cJSON_AddNumberToObject(o, "node_features", m->n_feat);
    ok = ok && cJSON_AddNumberToObject(o, "edge_features", m->n_edge_feat);
    ok = ok && cJSON_AddNumberToObject(o, "global_features", m->n_globals);
    ok = ok && cJSON_AddNumberToObject(o, "targets", m->n_targets);
    ok = ok && cJSON_AddNumberToObject(o, "layers", m->params.layers);
    ok = ok && cJSON_AddNumberToObject(o, "hidden", m->params.hidden);
    ok = ok && cJSON_AddNumberToObject(o, "n_params", (double)m->n_params);
    ok = ok && cJSON_AddStringToObject(o, "aggregation", M_AGGREGATION);
    ok = ok && cJSON_AddStringToObject(o, "readout", M_READOUT);
    ok = ok && (o = cJSON_AddObjectToObject(root, "training"));
    ok = ok && cJSON_AddNumberToObject(o, "lr", m->params.lr);
    ok = ok && cJSON_AddNumberToObject(o, "weight_decay", m->params.weight_decay);
    ok = ok && cJSON_AddNumberToObject(o, "epochs", m->params.epochs);
    ok = ok && cJSON_AddNumberToObject(o, "batch", m->params.batch);
    ok = ok && cJSON_AddNumberToObject(o, "patience", m->params.patience);
    ok = ok && cJSON_AddNumberToObject(o, "huber_delta", m->params.huber_delta);
    ok = ok && cJSON_AddStringToObject(o, "seed", seed);
    ok = ok && cJSON_AddNumberToObject(o, "nthreads", m->params.nthreads);
    if (ok && n_members > 0) { /* members 2..K of a seed ensemble, averaged by pp_gnn_forward */
        ok = (o = cJSON_AddArrayToObject(root, "ensemble")) != NULL;
        for (int i = 0; ok && i < n_members; i++) {
            char wp[1200], mhex[17];
            snprintf(mhex, sizeof mhex, "%016" PRIx64, member_hash[i]);
            cJSON *e = cJSON_CreateObject();
            ok = e && cJSON_AddItemToArray(o, e) && member_path(wp, sizeof wp, weights_path, i + 2);
            ok = ok && cJSON_AddStringToObject(e, "file", base_name(wp));
            ok = ok && cJSON_AddStringToObject(e, "fnv1a64", mhex);
        }
    }
    ok = ok && cJSON_AddStringToObject(root, "data", prov && prov->data ? prov->data : "");
    ok = ok && cJSON_AddStringToObject(root, "split", prov && prov->split ? prov->split : "");
    ok = ok && (o = cJSON_AddArrayToObject(root, "target_names"));
    for (int t = 0; ok && t < m->n_targets; t++) {
        const char *name = prov && prov->target_names[t] ? prov->target_names[t] : "";
        cJSON *s = cJSON_CreateString(name);
        ok = s && cJSON_AddItemToArray(o, s);
    }
    int gated = 0;
    for (int t = 0; t < m->n_targets; t++) gated |= m->spread_gate[t] > 0;
    if (ok && gated && n_members > 0) { /* pp_gnn_agrees */
        ok = (o = cJSON_AddArrayToObject(root, "spread_gate")) != NULL;
        for (int t = 0; ok && t < m->n_targets; t++) {
            cJSON *v = cJSON_CreateNumber(m->spread_gate[t]);
            ok = v && cJSON_AddItemToArray(o, v);
        }
    }
    if (ok && m->trained) {
        const pp_gnn_report *r = &m->report;
        ok = ok && (o = cJSON_AddObjectToObject(root, "report"));
        ok = ok && cJSON_AddNumberToObject(o, "n_train", r->n_train);
        ok = ok && cJSON_AddNumberToObject(o, "n_val", r->n_val);
        ok = ok && cJSON_AddNumberToObject(o, "epochs_run", r->epochs_run);
        ok = ok && cJSON_AddNumberToObject(o, "best_epoch", r->best_epoch);
        ok = ok && cJSON_AddNumberToObject(o, "train_mse", r->train_mse);
        ok = ok && cJSON_AddNumberToObject(o, "val_mse", r->val_mse);
        for (int k = 0; k < 2; k++) {
            const double *vals = k ? r->val_mae : r->val_rmse;
            cJSON *a = ok ? cJSON_AddArrayToObject(o, k ? "val_mae" : "val_rmse") : NULL;
            ok = a != NULL;
            for (int t = 0; ok && t < m->n_targets; t++) {
                cJSON *v = cJSON_CreateNumber(vals[t]);
                ok = v && cJSON_AddItemToArray(a, v);
            }
        }
    } else if (ok) {
        ok = cJSON_AddNullToObject(root, "report") != NULL;
    }
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* One weights file and (manifest_path not NULL) its manifest; *hash_out (may be NULL) gets the
 * weights' checksum. */
/* Both files are serialized before either is written, so that running out of memory leaves no
 * weights file without its manifest (pp_calib would find the weights and fail every prediction on
 * the device); each file is then written to a temporary name and renamed. */
static perfpred_status save_one(const pp_gnn *m, const char *weights_path,
                                const char *manifest_path, const pp_gnn_provenance *prov,
                                const uint64_t *member_hash, int n_members, uint64_t *hash_out,
                                pp_err *err)
{
    size_t len, tl = 0;
    unsigned char *b = weights_bytes(m, &len);
    if (!b) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", weights_path);
    uint64_t hash = fnv1a64(b, len);
    char *withnl = NULL;
    if (manifest_path) {
        cJSON *root = manifest_json(m, weights_path, len, hash, prov, member_hash, n_members);
        char *text = root ? cJSON_Print(root) : NULL;
        cJSON_Delete(root);
        if (text) {
            tl = strlen(text);
            if ((withnl = malloc(tl + 2))) {
                memcpy(withnl, text, tl);
                withnl[tl] = '\n';
            }
            cJSON_free(text);
        }
        if (!withnl) {
            free(b);
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", manifest_path);
        }
    }
    perfpred_status st = pp_write_file_atomic(weights_path, b, len, err);
    free(b);
    if (!st && manifest_path) st = pp_write_file_atomic(manifest_path, withnl, tl + 1, err);
    free(withnl);
    if (!st && hash_out) *hash_out = hash;
    return st;
}

perfpred_status pp_gnn_save(const pp_gnn *m, const char *weights_path, const char *manifest_path,
                            const pp_gnn_provenance *prov, pp_err *err)
{
    if (!m || !weights_path)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn save: NULL model or path");
    int n_members = pp_gnn_members(m) - 1;
    if (n_members == 0) return save_one(m, weights_path, manifest_path, prov, NULL, 0, NULL, err);
    if (!manifest_path)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: an ensemble needs a manifest to list its members", weights_path);
    uint64_t *hash = calloc((size_t)n_members, sizeof *hash);
    if (!hash) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", weights_path);
    perfpred_status st = PERFPRED_OK;
    int i = 0;
    for (const pp_gnn *q = m->next; q && !st; q = q->next, i++) {
        char wp[1200], mp[1200];
        if (!member_path(wp, sizeof wp, weights_path, i + 2) ||
            !member_path(mp, sizeof mp, manifest_path, i + 2))
            st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", weights_path);
        else
            st = save_one(q, wp, mp, prov, NULL, 0, &hash[i], err);
    }
    /* the first member's manifest last: it is what names the members */
    if (!st) st = save_one(m, weights_path, manifest_path, prov, hash, n_members, NULL, err);
    free(hash);
    return st;
}

/* ------------------------------------------------------------------ loading ---- */

static perfpred_status load_weights(const char *path, const unsigned char *b, size_t len,
                                    pp_gnn **out, pp_err *err)
{
    if (len < W_HEADER + 8 || memcmp(b, W_MAGIC, 8) != 0)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: not a perfpred GNN weights file", path);
    uint32_t ver = get_u32(b + 8), hdr = get_u32(b + 12);
    if (ver != W_VERSION || hdr != W_HEADER)
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: weights version %" PRIu32 " (header %" PRIu32
                          " bytes); this build reads version %u",
                          path, ver, hdr, W_VERSION);
    uint32_t F = get_u32(b + 16), Fe = get_u32(b + 20), G = get_u32(b + 24), T = get_u32(b + 28);
    uint32_t L = get_u32(b + 32), H = get_u32(b + 36), np = get_u32(b + 40), flags = get_u32(b + 44);
    if (F < 1 || F > PP_GNN_MAX_FEAT || Fe > PP_GNN_MAX_FEAT || G > PP_GNN_MAX_FEAT || T < 1 ||
        T > PP_GNN_MAX_TARGETS || L < 1 || L > PP_GNN_MAX_LAYERS || H < 1 ||
        H > PP_GNN_MAX_HIDDEN || flags > 1)
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: impossible dims F=%" PRIu32 " Fe=%" PRIu32 " G=%" PRIu32
                          " T=%" PRIu32 " L=%" PRIu32 " H=%" PRIu32 " flags=%" PRIu32,
                          path, F, Fe, G, T, L, H, flags);
    size_t want = W_HEADER + 4 * (n_stats((int)F, (int)Fe, (int)G, (int)T) + np) + 8;
    if (len != want)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: %zu bytes, the header implies %zu", path,
                          len, want);
    if (get_u64(b + len - 8) != fnv1a64(b, len - 8))
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: checksum mismatch (corrupt file)", path);
    /* Every header field is checked against the file's length and the dims before anything is
     * allocated: what is allocated is then bounded by a small multiple of the file's size. */
    size_t implied = pp_gnn_param_count((int)F, (int)Fe, (int)G, (int)T, (int)L, (int)H);
    if (implied != np)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: %" PRIu32 " parameters, the dims imply %zu",
                          path, np, implied);
    pp_gnn_params p = pp_gnn_default_params();
    p.layers = (int)L;
    p.hidden = (int)H;
    pp_gnn *m;
    perfpred_status st = pp_gnn_new((int)F, (int)Fe, (int)G, (int)T, &p, &m, err);
    if (st) return st;
    const unsigned char *q = b + W_HEADER;
    int bad = 0;
#define GET_ARR(a, cnt, positive)                                                      \
    for (size_t i_ = 0; i_ < (size_t)(cnt); i_++, q += 4) {                         \
        (a)[i_] = get_f32(q);                                                        \
        if (!isfinite((a)[i_]) || ((positive) && !((a)[i_] > 0.0f))) bad = 1;        \
    }
    GET_ARR(m->x_mean, F, 0);
    GET_ARR(m->x_std, F, 1);
    GET_ARR(m->e_mean, Fe, 0);
    GET_ARR(m->e_std, Fe, 1);
    GET_ARR(m->u_mean, G, 0);
    GET_ARR(m->u_std, G, 1);
    GET_ARR(m->y_mean, T, 0);
    GET_ARR(m->y_std, T, 1);
    if (bad) {
        pp_gnn_free(m);
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: standardization statistics are not finite or a std is <= 0", path);
    }
    GET_ARR(m->w, np, 0);
#undef GET_ARR
    if (bad) {
        pp_gnn_free(m);
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: a weight is not finite", path);
    }
    m->trained = 0; /* the report comes from the manifest */
    (void)flags;
    *out = m;
    return PERFPRED_OK;
}

/* ---- strict JSON access: every error names the manifest and the key ---- */
typedef struct jctx {
    const char *path;
    pp_err *err;
} jctx;

/* o must hold every key of keys, and nothing outside keys and optional (NULL: none optional). */
static perfpred_status j_keys(jctx *c, const cJSON *o, const char *where, const char *const *keys,
                              const char *const *optional)
{
    if (!cJSON_IsObject(o))
        return pp_err_set(c->err, PERFPRED_ERR_PARSE, "%s: '%s' must be an object", c->path, where);
    for (const cJSON *it = o->child; it; it = it->next) {
        int known = 0;
        for (int i = 0; keys[i]; i++) known |= it->string && strcmp(it->string, keys[i]) == 0;
        for (int i = 0; optional && optional[i]; i++)
            known |= it->string && strcmp(it->string, optional[i]) == 0;
        if (!known)
            return pp_err_set(c->err, PERFPRED_ERR_PARSE, "%s: unknown key '%s' in '%s'", c->path,
                              it->string ? it->string : "?", where);
    }
    for (int i = 0; keys[i]; i++)
        if (!cJSON_GetObjectItemCaseSensitive(o, keys[i]))
            return pp_err_set(c->err, PERFPRED_ERR_PARSE, "%s: missing key '%s' in '%s'", c->path,
                              keys[i], where);
    return PERFPRED_OK;
}

static perfpred_status j_num(jctx *c, const cJSON *o, const char *key, double lo, double hi,
                             int integral, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi || (integral && v->valuedouble != floor(v->valuedouble)))
        return pp_err_set(c->err, PERFPRED_ERR_PARSE, "%s: '%s' must be %s in [%g, %g]", c->path,
                          key, integral ? "an integer" : "a number", lo, hi);
    *out = v->valuedouble;
    return PERFPRED_OK;
}

/* key: an array of n numbers >= -1 into out[0..n), the rest of out[] -1; absent is an error
 * only when required, and otherwise leaves every out[] at -1. */
static perfpred_status j_per_target(jctx *c, const cJSON *o, const char *key, int required, int n,
                                    double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v && !required) {
        for (int i = 0; i < PP_GNN_MAX_TARGETS; i++) out[i] = -1.0;
        return PERFPRED_OK;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
        return pp_err_set(c->err, PERFPRED_ERR_PARSE, "%s: '%s' must list %d numbers", c->path,
                          key, n);
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < -1.0)
            return pp_err_set(c->err, PERFPRED_ERR_PARSE, "%s: '%s' must list numbers", c->path,
                              key);
        out[i] = it->valuedouble;
    }
    for (; i < PP_GNN_MAX_TARGETS; i++) out[i] = -1.0;
    return PERFPRED_OK;
}

static perfpred_status j_int(jctx *c, const cJSON *o, const char *key, double lo, double hi,
                             int *out)
{
    double d = 0;
    perfpred_status st = j_num(c, o, key, lo, hi, 1, &d);
    if (!st) *out = (int)d;
    return st;
}

static const char *j_str(jctx *c, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || !v->valuestring) {
        pp_err_set(c->err, PERFPRED_ERR_PARSE, "%s: '%s' must be a string", c->path, key);
        return NULL;
    }
    return v->valuestring;
}

static perfpred_status j_expect_int(jctx *c, const cJSON *o, const char *key, long want)
{
    int v;
    perfpred_status st = j_int(c, o, key, 0, 2147483647.0, &v);
    if (st) return st;
    if (v != want)
        return pp_err_set(c->err, PERFPRED_ERR_MODEL, "%s: '%s' is %d, the weights file has %ld",
                          c->path, key, v, want);
    return PERFPRED_OK;
}

static perfpred_status apply_manifest(pp_gnn *m, const char *mpath, const char *wpath,
                                      size_t wlen, uint64_t whash, const cJSON *root, pp_err *err)
{
    jctx c = {mpath, err};
    static const char *const top[] = {"format", "version", "weights", "architecture", "training",
                                      "data", "split", "target_names", "report", NULL};
    static const char *const wk[] = {"file", "bytes", "fnv1a64", NULL};
    static const char *const ak[] = {"node_features", "edge_features", "global_features",
                                     "targets", "layers", "hidden", "n_params", "aggregation",
                                     "readout", NULL};
    static const char *const tk[] = {"lr", "weight_decay", "epochs", "batch", "patience", "seed",
                                     "nthreads", NULL};
    static const char *const t_opt[] = {"huber_delta", NULL}; /* absent before the option */
    static const char *const rk[] = {"n_train", "n_val", "epochs_run", "best_epoch", "train_mse",
                                     "val_mse", "val_rmse", NULL};
    static const char *const r_opt[] = {"val_mae", NULL}; /* absent before it was kept */
    perfpred_status st;
    const char *s;
    /* members 2..K of an ensemble, and its gate */
    static const char *const top_opt[] = {"ensemble", "spread_gate", NULL};
    if ((st = j_keys(&c, root, "manifest", top, top_opt))) return st;
    if (!(s = j_str(&c, root, "format"))) return err ? err->status : PERFPRED_ERR_PARSE;
    if (strcmp(s, M_FORMAT) != 0)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: format '%s', want '%s'", mpath, s, M_FORMAT);
    if ((st = j_expect_int(&c, root, "version", M_VERSION))) return st;
    if (!j_str(&c, root, "data") || !j_str(&c, root, "split"))
        return err ? err->status : PERFPRED_ERR_PARSE;

    const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "weights");
    if ((st = j_keys(&c, w, "weights", wk, NULL))) return st;
    if (!(s = j_str(&c, w, "file"))) return err ? err->status : PERFPRED_ERR_PARSE;
    if (strcmp(s, base_name(wpath)) != 0)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: describes weights '%s', not '%s'", mpath, s,
                          base_name(wpath));
    double bytes = 0;
    if ((st = j_num(&c, w, "bytes", 0, 9007199254740992.0, 1, &bytes))) return st;
    if ((size_t)bytes != wlen)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: weights of %.0f bytes, '%s' has %zu", mpath,
                          bytes, wpath, wlen);
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, whash);
    if (!(s = j_str(&c, w, "fnv1a64"))) return err ? err->status : PERFPRED_ERR_PARSE;
    if (strcmp(s, hex) != 0)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: weights checksum %s, '%s' has %s", mpath, s,
                          wpath, hex);

    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "architecture");
    if ((st = j_keys(&c, a, "architecture", ak, NULL))) return st;
    if ((st = j_expect_int(&c, a, "node_features", m->n_feat)) ||
        (st = j_expect_int(&c, a, "edge_features", m->n_edge_feat)) ||
        (st = j_expect_int(&c, a, "global_features", m->n_globals)) ||
        (st = j_expect_int(&c, a, "targets", m->n_targets)) ||
        (st = j_expect_int(&c, a, "layers", m->params.layers)) ||
        (st = j_expect_int(&c, a, "hidden", m->params.hidden)) ||
        (st = j_expect_int(&c, a, "n_params", (long)m->n_params)))
        return st;
    if (!(s = j_str(&c, a, "aggregation")) || strcmp(s, M_AGGREGATION) != 0 ||
        !(s = j_str(&c, a, "readout")) || strcmp(s, M_READOUT) != 0)
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: architecture aggregation/readout is not the one this build runs",
                          mpath);

    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "training");
    pp_gnn_params p = m->params;
    if ((st = j_keys(&c, t, "training", tk, t_opt)) ||
        (st = j_num(&c, t, "lr", 1e-300, 1e300, 0, &p.lr)) ||
        (st = j_num(&c, t, "weight_decay", 0, 1e300, 0, &p.weight_decay)) ||
        (st = j_int(&c, t, "epochs", 1, 2147483647.0, &p.epochs)) ||
        (st = j_int(&c, t, "batch", 1, 2147483647.0, &p.batch)) ||
        (st = j_int(&c, t, "patience", 1, 2147483647.0, &p.patience)) ||
        (st = j_int(&c, t, "nthreads", 0, 1024, &p.nthreads)))
        return st;
    p.huber_delta = 0.0; /* absent: squared error */
    if (cJSON_GetObjectItemCaseSensitive(t, "huber_delta") &&
        (st = j_num(&c, t, "huber_delta", 0, 1e300, 0, &p.huber_delta)))
        return st;
    if (!(s = j_str(&c, t, "seed"))) return err ? err->status : PERFPRED_ERR_PARSE;
    {
        char *end;
        if (*s < '0' || *s > '9')
            return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: 'seed' must be decimal digits", mpath);
        unsigned long long v = strtoull(s, &end, 10);
        if (*end != '\0')
            return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: 'seed' must be decimal digits", mpath);
        p.seed = (uint64_t)v;
    }
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(root, "target_names");
    if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) != m->n_targets)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: 'target_names' must list %d strings", mpath,
                          m->n_targets);
    for (const cJSON *it = names->child; it; it = it->next)
        if (!cJSON_IsString(it))
            return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: 'target_names' must list strings",
                              mpath);

    const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "report");
    pp_gnn_report rep;
    memset(&rep, 0, sizeof rep);
    int trained = 0;
    if (!cJSON_IsNull(r)) {
        if ((st = j_keys(&c, r, "report", rk, r_opt)) ||
            (st = j_int(&c, r, "n_train", 1, 2147483647.0, &rep.n_train)) ||
            (st = j_int(&c, r, "n_val", 0, 2147483647.0, &rep.n_val)) ||
            (st = j_int(&c, r, "epochs_run", 1, 2147483647.0, &rep.epochs_run)) ||
            (st = j_int(&c, r, "best_epoch", 1, 2147483647.0, &rep.best_epoch)) ||
            (st = j_num(&c, r, "train_mse", -1, 1e300, 0, &rep.train_mse)) ||
            (st = j_num(&c, r, "val_mse", -1, 1e300, 0, &rep.val_mse)))
            return st;
        if ((st = j_per_target(&c, r, "val_rmse", 1, m->n_targets, rep.val_rmse)) ||
            (st = j_per_target(&c, r, "val_mae", 0, m->n_targets, rep.val_mae)))
            return st;
        trained = 1;
    }
    if ((st = pp_gnn_check_params(&p, err))) return st;
    m->params.lr = p.lr;
    m->params.weight_decay = p.weight_decay;
    m->params.epochs = p.epochs;
    m->params.batch = p.batch;
    m->params.patience = p.patience;
    m->params.huber_delta = p.huber_delta;
    m->params.seed = p.seed;
    m->params.nthreads = p.nthreads;
    double gate[PP_GNN_MAX_TARGETS];
    if ((st = j_per_target(&c, root, "spread_gate", 0, m->n_targets, gate))) return st;
    if (cJSON_GetObjectItemCaseSensitive(root, "spread_gate") &&
        !cJSON_GetObjectItemCaseSensitive(root, "ensemble"))
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: 'spread_gate' without an 'ensemble'",
                          mpath);
    m->report = rep;
    m->trained = trained;
    for (int i = 0; i < PP_GNN_MAX_TARGETS; i++) /* a float (pp_gnn_set_spread_gate) */
        m->spread_gate[i] = gate[i] > 0 ? (double)(float)gate[i] : 0;
    return PERFPRED_OK;
}

static perfpred_status load_file(const char *weights_path, const char *manifest_path,
                                 pp_gnn **out, uint64_t *hash, pp_err *err);

/* Loads the members a manifest's "ensemble" lists (files beside the first member's, each with its
 * own manifest, pp_gnn_save's names) and chains them after m. */
static perfpred_status load_members(pp_gnn *m, const char *mpath, const char *wpath,
                                    const cJSON *root, pp_err *err)
{
    const cJSON *ens = cJSON_GetObjectItemCaseSensitive(root, "ensemble");
    if (!ens) return PERFPRED_OK;
    if (!cJSON_IsArray(ens) || cJSON_GetArraySize(ens) < 1)
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "%s: 'ensemble' must list the members' files and checksums", mpath);
    jctx c = {mpath, err};
    static const char *const ek[] = {"file", "fnv1a64", NULL};
    pp_gnn *tail = m;
    int i = 2;
    for (const cJSON *e = ens->child; e; e = e->next, i++) {
        perfpred_status st = j_keys(&c, e, "ensemble member", ek, NULL);
        if (st) return st;
        const char *file = j_str(&c, e, "file"), *hex = j_str(&c, e, "fnv1a64");
        if (!file || !hex) return err ? err->status : PERFPRED_ERR_PARSE;
        char wp[1200], mp[1200];
        if (!member_path(wp, sizeof wp, wpath, i) || !member_path(mp, sizeof mp, mpath, i))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", mpath);
        if (strcmp(file, base_name(wp)) != 0)
            return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: ensemble member %d is '%s', want '%s'",
                              mpath, i, file, base_name(wp));
        pp_gnn *q = NULL;
        uint64_t h = 0;
        if ((st = load_file(wp, mp, &q, &h, err))) return st;
        char have[17];
        snprintf(have, sizeof have, "%016" PRIx64, h);
        if (strcmp(have, hex) != 0) {
            pp_gnn_free(q);
            return pp_err_set(err, PERFPRED_ERR_MODEL,
                              "%s: ensemble member '%s' has checksum %s, the manifest lists %s "
                              "(written by another fit?)",
                              mpath, wp, have, hex);
        }
        if (q->next || q->n_targets != m->n_targets || q->n_feat != m->n_feat ||
            q->n_edge_feat != m->n_edge_feat || q->n_globals != m->n_globals) {
            pp_gnn_free(q);
            return pp_err_set(err, PERFPRED_ERR_MODEL,
                              "%s: ensemble member '%s' has other inputs or targets than the first",
                              mpath, wp);
        }
        tail->next = q;
        tail = q;
    }
    return PERFPRED_OK;
}

perfpred_status pp_gnn_load(const char *weights_path, const char *manifest_path, pp_gnn **out,
                            pp_err *err)
{
    if (!out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn load: out is NULL");
    *out = NULL;
    if (!weights_path) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "gnn load: NULL path");
    return load_file(weights_path, manifest_path, out, NULL, err);
}

/* pp_gnn_load, also giving the weights file's checksum (hash may be NULL). */
static perfpred_status load_file(const char *weights_path, const char *manifest_path,
                                 pp_gnn **out, uint64_t *hash, pp_err *err)
{
    uint8_t *wb;
    size_t wlen;
    perfpred_status st = pp_read_file(weights_path, &wb, &wlen, err);
    if (st) return st;
    uint64_t whash = fnv1a64(wb, wlen);
    if (hash) *hash = whash;
    pp_gnn *m = NULL;
    if ((st = load_weights(weights_path, wb, wlen, &m, err))) {
        free(wb);
        return st;
    }
    if (manifest_path) {
        uint8_t *mb;
        size_t mlen;
        if ((st = pp_read_file(manifest_path, &mb, &mlen, err))) {
            free(wb);
            pp_gnn_free(m);
            return st;
        }
        const char *end = NULL;
        cJSON *root = cJSON_ParseWithLengthOpts((const char *)mb, mlen, &end, 0);
        if (!root) {
            size_t at = end ? (size_t)(end - (const char *)mb) : 0;
            st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: invalid JSON near byte %zu",
                            manifest_path, at);
        } else {
            st = apply_manifest(m, manifest_path, weights_path, wlen, whash, root, err);
            if (!st) st = load_members(m, manifest_path, weights_path, root, err);
            cJSON_Delete(root);
        }
        free(mb);
        if (st) {
            free(wb);
            pp_gnn_free(m);
            return st;
        }
    }
    free(wb);
    *out = m;
    return PERFPRED_OK;
}
