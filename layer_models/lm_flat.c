/* layer_models/lm_flat.c: an XGBoost tree ensemble as one flat node array, evaluated without XGBoost.
 * The trees come from XGBoost's own JSON model (XGBoosterSaveModelToBuffer, parsed with cJSON), so
 * no UBJSON is read here. Evaluation mirrors XGBoost 1.7's CPU predictor: a float sum started at the
 * base margin, trees added in order, missing (NaN) inputs take the default child, else
 * x < threshold goes left; then the objective's transform. No allocation per call. */
#include "layer_models/layer_models.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* One node in 16 bytes. Leaf: left < 0 and value is the leaf weight. */
typedef struct flat_node {
    float value;       /* split threshold, or leaf weight */
    int32_t feature;   /* split feature index */
    int32_t left;      /* absolute node index; -1 for a leaf */
    int32_t right_dl;  /* absolute right child index; bit 31 set: missing goes left */
} flat_node;

#define DL_BIT 0x40000000  /* a node index never reaches 2^30 (checked at build) */

struct pp_lm_flat {
    int n_trees, n_nodes, n_features;
    float base_margin;
    int transform;  /* 0 identity, 1 sigmoid, 2 exp */
    int32_t *roots;
    flat_node *nodes;
    /* a cache file mapped read-only: roots and nodes point into it (else both are malloc'd) */
    void *map;
    size_t map_len;
};

static perfpred_status fail(pp_err *err, const char *ctx, const char *what)
{
    return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: XGBoost JSON model: %s", ctx, what);
}

static const cJSON *path_get(const cJSON *o, const char *const *keys)
{
    for (; o && *keys; keys++) o = cJSON_GetObjectItemCaseSensitive(o, *keys);
    return o;
}

/* XGBoost writes parameters as strings ("5E-1"); strtod, whole string consumed. */
static int str_num(const cJSON *o, double *v)
{
    if (cJSON_IsNumber(o)) {
        *v = o->valuedouble;
        return 0;
    }
    if (!cJSON_IsString(o) || !o->valuestring || !*o->valuestring) return -1;
    char *end = NULL;
    *v = strtod(o->valuestring, &end);
    return *end == '\0' ? 0 : -1;
}

static int arr_len(const cJSON *a) { return cJSON_IsArray(a) ? cJSON_GetArraySize(a) : -1; }

void pp_lm_flat_free(pp_lm_flat *f)
{
    if (!f) return;
    if (f->map) {
        munmap(f->map, f->map_len);
    } else {
        free(f->roots);
        free(f->nodes);
    }
    free(f);
}

perfpred_status pp_lm_flat_from_json(const char *json, size_t len, const char *ctx,
                                     pp_lm_flat **out, pp_err *err)
{
    *out = NULL;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return fail(err, ctx, "not JSON");
    perfpred_status st = PERFPRED_OK;
    pp_lm_flat *F = calloc(1, sizeof *F);
    if (!F) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", ctx);
        goto done;
    }
    const cJSON *learner = cJSON_GetObjectItemCaseSensitive(root, "learner");
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(learner, "learner_model_param");
    double base_score = 0, num_class = 0, num_feature = 0;
    if (str_num(cJSON_GetObjectItemCaseSensitive(mp, "base_score"), &base_score) ||
        str_num(cJSON_GetObjectItemCaseSensitive(mp, "num_feature"), &num_feature)) {
        st = fail(err, ctx, "no learner_model_param");
        goto done;
    }
    const cJSON *nc = cJSON_GetObjectItemCaseSensitive(mp, "num_class");
    if (nc && str_num(nc, &num_class)) num_class = -1;
    if (num_class > 1 || num_class < 0) {
        st = fail(err, ctx, "multi-class models are not flattened");
        goto done;
    }
    const char *okeys[] = {"objective", "name", NULL};
    const cJSON *obj = path_get(learner, okeys);
    const char *oname = cJSON_IsString(obj) ? obj->valuestring : "";
    /* base_score is a probability or a mean; the margin XGBoost starts from is its link */
    if (!strcmp(oname, "reg:squarederror") || !strcmp(oname, "reg:linear") ||
        !strcmp(oname, "reg:pseudohubererror") || !strcmp(oname, "reg:absoluteerror") ||
        !strcmp(oname, "reg:squaredlogerror")) {
        F->transform = 0;
        F->base_margin = (float)base_score;
    } else if (!strcmp(oname, "reg:logistic") || !strcmp(oname, "binary:logistic")) {
        F->transform = 1;
        F->base_margin = (float)-log(1.0 / base_score - 1.0);
    } else if (!strcmp(oname, "count:poisson") || !strcmp(oname, "reg:gamma") ||
               !strcmp(oname, "reg:tweedie")) {
        F->transform = 2;
        F->base_margin = (float)log(base_score);
    } else {
        st = fail(err, ctx, "objective not supported by the flat evaluator");
        goto done;
    }
    const char *gkeys[] = {"gradient_booster", "name", NULL};
    const cJSON *gname = path_get(learner, gkeys);
    if (!cJSON_IsString(gname) || strcmp(gname->valuestring, "gbtree") != 0) {
        st = fail(err, ctx, "only gbtree boosters are flattened");
        goto done;
    }
    const char *tkeys[] = {"gradient_booster", "model", "trees", NULL};
    const cJSON *trees = path_get(learner, tkeys);
    int nt = arr_len(trees);
    if (nt < 0) {
        st = fail(err, ctx, "no trees");
        goto done;
    }
    long total = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, trees) {
        int n = arr_len(cJSON_GetObjectItemCaseSensitive(t, "left_children"));
        if (n < 1) {
            st = fail(err, ctx, "a tree without nodes");
            goto done;
        }
        total += n;
        if (total >= DL_BIT) {
            st = fail(err, ctx, "too many nodes");
            goto done;
        }
    }
    F->n_trees = nt;
    F->n_nodes = (int)total;
    F->n_features = (int)num_feature;
    F->roots = malloc((size_t)(nt ? nt : 1) * sizeof *F->roots);
    F->nodes = malloc((size_t)(total ? total : 1) * sizeof *F->nodes);
    if (!F->roots || !F->nodes) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", ctx);
        goto done;
    }
    int ti = 0, off = 0;
    cJSON_ArrayForEach(t, trees) {
        const cJSON *lc = cJSON_GetObjectItemCaseSensitive(t, "left_children");
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(t, "right_children");
        const cJSON *si = cJSON_GetObjectItemCaseSensitive(t, "split_indices");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(t, "split_conditions");
        const cJSON *dl = cJSON_GetObjectItemCaseSensitive(t, "default_left");
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(t, "split_type");
        int n = arr_len(lc);
        if (arr_len(rc) != n || arr_len(si) != n || arr_len(sc) != n || arr_len(dl) != n) {
            st = fail(err, ctx, "tree arrays of unequal length");
            goto done;
        }
        F->roots[ti++] = off;
        const cJSON *a = lc->child, *b = rc->child, *c = si->child, *d = sc->child, *e = dl->child;
        const cJSON *y = ty ? ty->child : NULL;
        for (int i = 0; i < n; i++, a = a->next, b = b->next, c = c->next, d = d->next, e = e->next) {
            flat_node *N = &F->nodes[off + i];
            int l = a->valueint, r = b->valueint, fi = c->valueint;
            if (y) {
                if (cJSON_IsNumber(y) && y->valueint != 0) {
                    st = fail(err, ctx, "categorical splits are not flattened");
                    goto done;
                }
                y = y->next;
            }
            if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b) || !cJSON_IsNumber(c) || !cJSON_IsNumber(d)) {
                st = fail(err, ctx, "non-numeric tree entry");
                goto done;
            }
            N->value = (float)d->valuedouble;
            if (l < 0) {
                N->left = -1;
                N->right_dl = 0;
                N->feature = 0;
                continue;
            }
            if (l >= n || r < 0 || r >= n || fi < 0 || fi >= F->n_features) {
                st = fail(err, ctx, "child or feature index out of range");
                goto done;
            }
            int dflt = cJSON_IsTrue(e) || (cJSON_IsNumber(e) && e->valueint != 0);
            N->feature = fi;
            N->left = off + l;
            N->right_dl = (off + r) | (dflt ? DL_BIT : 0);
        }
        off += n;
    }
done:
    cJSON_Delete(root);
    if (st != PERFPRED_OK) pp_lm_flat_free(F);
    else *out = F;
    return st;
}

int pp_lm_flat_n_features(const pp_lm_flat *f) { return f ? f->n_features : 0; }

/* Rows in blocks, trees outermost within a block: a tree's nodes stay in cache across the block's
 * rows, and every row still adds its trees in XGBoost's order (the float sums agree bit for bit). */
#define FLAT_BLOCK 64
void pp_lm_flat_predict(const pp_lm_flat *F, const float *X, int n, int stride, float *out)
{
    for (int r0 = 0; r0 < n; r0 += FLAT_BLOCK) {
        int r1 = r0 + FLAT_BLOCK < n ? r0 + FLAT_BLOCK : n;
        for (int r = r0; r < r1; r++) out[r] = F->base_margin;
        for (int t = 0; t < F->n_trees; t++) {
            const flat_node *nodes = F->nodes;
            int32_t root = F->roots[t];
            for (int r = r0; r < r1; r++) {
                const float *x = X + (size_t)r * stride;
                const flat_node *N = &nodes[root];
                while (N->left >= 0) {
                    float v = x[N->feature];
                    int32_t next;
                    if (isnan(v)) next = (N->right_dl & DL_BIT) ? N->left : (N->right_dl & ~DL_BIT);
                    else next = v < N->value ? N->left : (N->right_dl & ~DL_BIT);
                    N = &nodes[next];
                }
                out[r] += N->value;
            }
        }
        if (F->transform == 1)
            for (int r = r0; r < r1; r++) out[r] = 1.0f / (1.0f + expf(-out[r]));
        else if (F->transform == 2)
            for (int r = r0; r < r1; r++) out[r] = expf(out[r]);
    }
}

/* ---- the serialized form the tree cache stores (lm_cache.c) ----
 * head, then n_trees int32 roots, then n_nodes 16-byte nodes, all in host byte order (the endian
 * word refuses a file from another byte order). The checksum covers every byte after itself. */
#define CACHE_MAGIC "PPFLAT\0\1"
#define CACHE_VERSION 1u
typedef struct cache_head {
    char magic[8];
    uint64_t checksum;
    uint32_t version, endian, node_size, head_size;
    int32_t n_trees, n_nodes, n_features, transform;
    float base_margin;
    uint32_t pad;
    pp_lm_src_id src;
} cache_head;

/* 64-bit multiply-xor over 8-byte words, 4 lanes (a corruption check, not a MAC: the reader
 * validates the structure as well). */
uint64_t pp_lm_cache_checksum(const uint8_t *p, size_t n)
{
    const uint64_t K = 0x9E3779B97F4A7C15ull;
    uint64_t h[4] = {n, K, ~(uint64_t)n, K >> 1};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * l, 8);
            h[l] = (h[l] ^ w) * K;
            h[l] ^= h[l] >> 29;
        }
    uint64_t r = h[0] ^ (h[1] * 3) ^ (h[2] * 5) ^ (h[3] * 7);
    for (; i < n; i++) r = (r ^ p[i]) * 0x100000001B3ull;
    r ^= r >> 31;
    return r * K;
}

static size_t cache_size(int32_t n_trees, int32_t n_nodes)
{
    return sizeof(cache_head) + (size_t)n_trees * sizeof(int32_t) + (size_t)n_nodes * sizeof(flat_node);
}

perfpred_status pp_lm_flat_serialize(const pp_lm_flat *F, const pp_lm_src_id *src, uint8_t **buf,
                                     size_t *len, pp_err *err)
{
    *buf = NULL;
    *len = 0;
    size_t n = cache_size(F->n_trees, F->n_nodes);
    uint8_t *b = calloc(1, n);
    if (!b) return pp_err_set(err, PERFPRED_ERR_NOMEM, "flat trees: out of memory");
    cache_head h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, 8);
    h.version = CACHE_VERSION;
    h.endian = 0x01020304u;
    h.node_size = sizeof(flat_node);
    h.head_size = sizeof(cache_head);
    h.n_trees = F->n_trees;
    h.n_nodes = F->n_nodes;
    h.n_features = F->n_features;
    h.transform = F->transform;
    h.base_margin = F->base_margin;
    h.src = *src;
    memcpy(b, &h, sizeof h);
    memcpy(b + sizeof h, F->roots, (size_t)F->n_trees * sizeof(int32_t));
    memcpy(b + sizeof h + (size_t)F->n_trees * sizeof(int32_t), F->nodes,
           (size_t)F->n_nodes * sizeof(flat_node));
    pp_lm_cache_seal(b, n);
    *buf = b;
    *len = n;
    return PERFPRED_OK;
}

void pp_lm_cache_seal(uint8_t *buf, size_t len)
{
    if (len < sizeof(cache_head)) return;
    uint64_t c = pp_lm_cache_checksum(buf + 16, len - 16);
    memcpy(buf + offsetof(cache_head, checksum), &c, sizeof c);
}

/* Every tree walk ends at a leaf inside the array: a root is the first node of its tree, a split's
 * children lie after it and before the next tree's root, its feature inside the row. */
static int structure_ok(const pp_lm_flat *F)
{
    if (F->n_trees == 0) return F->n_nodes == 0;
    for (int t = 0; t < F->n_trees; t++) {
        int32_t lo = F->roots[t], hi = t + 1 < F->n_trees ? F->roots[t + 1] : F->n_nodes;
        if (t == 0 && lo != 0) return 0;
        if (lo < 0 || hi <= lo || hi > F->n_nodes) return 0;
        for (int32_t i = lo; i < hi; i++) {
            const flat_node *N = &F->nodes[i];
            if (N->left < 0) {
                if (N->left != -1) return 0;
                continue;
            }
            int32_t r = N->right_dl & ~DL_BIT;
            if ((N->right_dl & ~(DL_BIT | (DL_BIT - 1))) != 0) return 0;
            if (N->left <= i || N->left >= hi || r <= i || r >= hi) return 0;
            if (N->feature < 0 || N->feature >= F->n_features) return 0;
        }
    }
    return 1;
}

/* The checks of the cache format; with map, roots and nodes point into buf (a mapping the flat
 * then owns), else they are copied. */
static perfpred_status from_bytes(const uint8_t *buf, size_t len, const pp_lm_src_id *src, void *map,
                                  pp_lm_flat **out, pp_err *err)
{
    *out = NULL;
    cache_head h;
    if (len < sizeof h) return pp_err_set(err, PERFPRED_ERR_PARSE, "tree cache: truncated");
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, CACHE_MAGIC, 8) != 0 || h.version != CACHE_VERSION ||
        h.endian != 0x01020304u || h.node_size != sizeof(flat_node) ||
        h.head_size != sizeof(cache_head))
        return pp_err_set(err, PERFPRED_ERR_PARSE, "tree cache: not a version %u cache of this "
                          "build", CACHE_VERSION);
    if (h.n_trees < 0 || h.n_nodes < 0 || h.n_nodes >= DL_BIT || h.n_features < 1 ||
        h.n_features > 1 << 20 || h.transform < 0 || h.transform > 2 ||
        len != cache_size(h.n_trees, h.n_nodes))
        return pp_err_set(err, PERFPRED_ERR_PARSE, "tree cache: sizes do not add up");
    if (pp_lm_cache_checksum(buf + 16, len - 16) != h.checksum)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "tree cache: checksum mismatch");
    if (src && memcmp(&h.src, src, sizeof *src) != 0)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "tree cache: stale (its source changed)");
    pp_lm_flat *F = calloc(1, sizeof *F);
    if (!F) return pp_err_set(err, PERFPRED_ERR_NOMEM, "tree cache: out of memory");
    F->n_trees = h.n_trees;
    F->n_nodes = h.n_nodes;
    F->n_features = h.n_features;
    F->transform = h.transform;
    F->base_margin = h.base_margin;
    const uint8_t *roots = buf + sizeof h, *nodes = roots + (size_t)h.n_trees * sizeof(int32_t);
    if (map) {
        /* the header is 96 bytes and roots 4-byte words: both arrays stay aligned */
        F->roots = (int32_t *)(void *)roots;
        F->nodes = (flat_node *)(void *)nodes;
    } else {
        F->roots = malloc((size_t)(h.n_trees ? h.n_trees : 1) * sizeof *F->roots);
        F->nodes = malloc((size_t)(h.n_nodes ? h.n_nodes : 1) * sizeof *F->nodes);
        if (!F->roots || !F->nodes) {
            pp_lm_flat_free(F);
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "tree cache: out of memory");
        }
        memcpy(F->roots, roots, (size_t)h.n_trees * sizeof(int32_t));
        memcpy(F->nodes, nodes, (size_t)h.n_nodes * sizeof(flat_node));
    }
    if (!structure_ok(F)) {
        if (map) F->roots = NULL, F->nodes = NULL;
        pp_lm_flat_free(F);
        return pp_err_set(err, PERFPRED_ERR_PARSE, "tree cache: malformed trees");
    }
    F->map = map;
    F->map_len = map ? len : 0;
    *out = F;
    return PERFPRED_OK;
}

perfpred_status pp_lm_flat_deserialize(const uint8_t *buf, size_t len, const pp_lm_src_id *src,
                                       pp_lm_flat **out, pp_err *err)
{
    return from_bytes(buf, len, src, NULL, out, err);
}

perfpred_status pp_lm_flat_from_mapping(void *map, size_t len, const pp_lm_src_id *src,
                                        pp_lm_flat **out, pp_err *err)
{
    perfpred_status st = from_bytes(map, len, src, map, out, err);
    if (st) munmap(map, len);
    return st;
}

int pp_lm_flat_is_sound(const pp_lm_flat *f) { return f && structure_ok(f); }
