/* layer_models/lm_flat.c: an XGBoost tree ensemble as one flat node array, evaluated without XGBoost.
 * The trees come from XGBoost's own JSON model (XGBoosterSaveModelToBuffer, parsed with cJSON), so
 * no UBJSON is read here. Evaluation mirrors XGBoost 1.7's CPU predictor: a float sum started at the
 * base margin, trees added in order, missing (NaN) inputs take the default child, else
 * x < threshold goes left; then the objective's transform. No allocation per call. */
#include "layer_models/layer_models.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
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

struct flat_pack;
#define PACK_NONE ((struct flat_pack *)(uintptr_t)1)  /* trees the packed form cannot hold */

struct pp_lm_flat {
    int n_trees, n_nodes, n_features;
    float base_margin;
    int transform;  /* 0 identity, 1 sigmoid, 2 exp */
    int32_t *roots;
    flat_node *nodes;
    /* a cache file mapped read-only: roots and nodes point into it (else both are malloc'd) */
    void *map;
    size_t map_len;
    /* the vector kernels' copy of the trees, made on their first use (see flat_pack) */
    _Atomic(struct flat_pack *) pack;
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
    struct flat_pack *p = atomic_load(&f->pack);
    if (p && p != PACK_NONE) free(p);
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
 * rows, and every row still adds its trees in XGBoost's order (the float sums agree bit for bit).
 * The portable loop: the reference the vector kernels are tested against. */
#define FLAT_BLOCK 64
static void predict_portable(const pp_lm_flat *F, const float *X, int n, int stride, float *out)
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
    }
}

/* ---- the vector kernels' form of the trees ----
 * 8 bytes a node: the threshold (a leaf: its weight) and one word: feature (bits 0-11), missing
 * goes left (bit 12), leaf (bit 13), left child's offset from the node (bits 14-31); the right
 * child is the next node, as XGBoost allocates children in pairs. A leaf points at itself and
 * always "goes left", so a walk of D steps from the root of a tree of depth <= D ends at its leaf
 * with no test for having arrived. Trees outside this form (a feature past 4095, children apart,
 * an offset past 2^18) are left to the portable loop. */
#define PK_FEAT 0xfffu
#define PK_DL (1u << 12)
#define PK_LEAF (1u << 13)
#define PK_OFF_SHIFT 14
typedef struct pack_node {
    float value;
    uint32_t word;
} pack_node;
/* Per-tree arrays are padded to a multiple of 64 trees (PACK_TREES) with tree 0's entries: the
 * kernels load whole batches of roots (64 trees at a time with AVX-512, 32 with AVX2). */
#define PACK_TREES 64
typedef struct flat_pack {
    pack_node *nodes;  /* same indices as the flat's nodes */
    int32_t *root;     /* per tree (padded): its root's index */
    /* per tree (padded): value and word of [0] its root, [1] and [2] the root's left and right
     * children (a leaf root: itself), so that a walk's first two steps load instead of gather */
    float *tv[3];
    uint32_t *tw[3];
    uint8_t *depth;    /* per tree: its deepest leaf's depth (root 0) */
} flat_pack;

static flat_pack *pack_build(const pp_lm_flat *F)
{
    if (F->n_features > (int)PK_FEAT + 1 || F->n_trees < 1) return PACK_NONE;
    size_t n_pad = ((size_t)F->n_trees + PACK_TREES - 1) / PACK_TREES * PACK_TREES;
    flat_pack *P = malloc(sizeof *P + (size_t)F->n_nodes * sizeof(pack_node) + n_pad * 28 +
                          (size_t)F->n_trees);
    if (!P) return NULL;
    P->nodes = (pack_node *)(void *)(P + 1);
    P->root = (int32_t *)(void *)(P->nodes + F->n_nodes);
    for (int k = 0; k < 3; k++) {
        P->tv[k] = (float *)(void *)(P->root + (1 + 2 * k) * n_pad);
        P->tw[k] = (uint32_t *)(void *)(P->root + (2 + 2 * k) * n_pad);
    }
    P->depth = (uint8_t *)(P->root + 7 * n_pad);
    /* children lie after their parents (structure_ok): depths in one forward pass, a node's the
     * most of its parents' + 1 (a hostile cache may give a node two parents, or none) */
    uint8_t *d = calloc((size_t)F->n_nodes, 1);
    if (!d) {
        free(P);
        return NULL;
    }
    for (int t = 0; t < F->n_trees; t++) {
        int32_t lo = F->roots[t], hi = t + 1 < F->n_trees ? F->roots[t + 1] : F->n_nodes;
        int deepest = 0;
        for (int32_t i = lo; i < hi; i++) {
            const flat_node *N = &F->nodes[i];
            pack_node *Q = &P->nodes[i];
            Q->value = N->value;
            if (N->left < 0) {
                Q->word = PK_LEAF;
                deepest = d[i] > deepest ? d[i] : deepest;
                continue;
            }
            int32_t r = N->right_dl & ~DL_BIT, off = N->left - i;
            if (r != N->left + 1 || off >= 1 << (32 - PK_OFF_SHIFT) || d[i] >= 64) {
                free(d);
                free(P);
                return PACK_NONE;
            }
            uint8_t c = (uint8_t)(d[i] + 1);
            d[N->left] = d[N->left] > c ? d[N->left] : c;
            d[r] = d[r] > c ? d[r] : c;
            Q->word = (uint32_t)N->feature | ((N->right_dl & DL_BIT) ? PK_DL : 0) |
                      (uint32_t)off << PK_OFF_SHIFT;
        }
        P->depth[t] = (uint8_t)deepest;
    }
    free(d);
    for (size_t t = 0; t < n_pad; t++) {
        int32_t r = F->roots[t < (size_t)F->n_trees ? t : 0];
        int32_t top[3] = {r, r, r};
        if (!(P->nodes[r].word & PK_LEAF)) {
            top[1] = r + (int32_t)(P->nodes[r].word >> PK_OFF_SHIFT);
            top[2] = top[1] + 1;
        }
        P->root[t] = r;
        for (int k = 0; k < 3; k++) {
            P->tv[k][t] = P->nodes[top[k]].value;
            P->tw[k][t] = P->nodes[top[k]].word;
        }
    }
    return P;
}

/* The packed trees, built by the first caller (racing builders: one wins, the others free theirs);
 * NULL when they cannot be had (the portable loop answers). */
static const flat_pack *pack_of(const pp_lm_flat *F)
{
    pp_lm_flat *M = (pp_lm_flat *)F; /* the pack is a cache beside the const trees */
    flat_pack *p = atomic_load_explicit(&M->pack, memory_order_acquire);
    if (!p) {
        flat_pack *mine = pack_build(F), *expected = NULL;
        if (!mine) return NULL; /* out of memory: try again next time */
        if (atomic_compare_exchange_strong(&M->pack, &expected, mine)) {
            p = mine;
        } else {
            if (mine != PACK_NONE) free(mine);
            p = expected;
        }
    }
    return p == PACK_NONE ? NULL : p;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define PP_FLAT_VEC 1
#include <immintrin.h>

static int group_depth(const flat_pack *P, int t0, int cnt)
{
    int D = 0;
    for (int l = 0; l < cnt; l++) D = P->depth[t0 + l] > D ? P->depth[t0 + l] : D;
    return D;
}

/* The trees of the n_groups groups of `lanes` from tree t0 on: cnt[g] each (0 past the last
 * tree); returns the deepest group's depth, the steps every group of them walks. */
static int groups_from(const pp_lm_flat *F, const flat_pack *P, int t0, int lanes, int n_groups,
                       int *cnt)
{
    int D = 0;
    for (int g = 0; g < n_groups; g++) {
        int c = F->n_trees - t0 - lanes * g;
        cnt[g] = c < 0 ? 0 : c > lanes ? lanes : c;
        int d = cnt[g] ? group_depth(P, t0 + lanes * g, cnt[g]) : 0;
        D = d > D ? d : D;
    }
    return D;
}

/* Trees in lockstep, one row at a time: lane l walks tree t0 + l for D steps (the group's depth).
 * A step gathers each lane's node, looks its feature up in the row and moves the lane to its
 * child: x < threshold or (x missing and the node's dl) or a leaf stays left, else right, as the
 * portable loop decides. Lanes always hold a node of their tree, so every gather stays inside the
 * array; the row is read only by lanes at a split, whose features the builders checked
 * (structure_ok). The leaves are then added one by one in tree order, in float, from the row's
 * running sum: the portable loop's bits. Lanes past the last tree walk tree 0 and are not added.
 * Four groups of 16 walk side by side: a step waits on its gathers, and the other groups' fill
 * the wait (about 2x one group at a time on a Xeon). The first two steps read the roots and
 * their children from per-tree arrays instead of gathering them. */

#define G512 4
typedef struct row512 {
    __m512 x0, x1, x2, x3;  /* the row's first 64 features, when in_regs */
    const float *x;
    int in_regs;
} row512;

/* One step from the nodes at (their thresholds thr and words w) to their children; *went_left
 * says which lanes took the left one (or stayed at a leaf). */
__attribute__((target("avx512f"), always_inline)) static inline __m512i
decide512(__m512i at, __m512 thr, __m512i w, const row512 *R, __mmask16 *went_left)
{
    __mmask16 leaf = _mm512_test_epi32_mask(w, _mm512_set1_epi32(PK_LEAF));
    __m512 v;
    if (R->in_regs) {
        /* feature bits 0-5: the permutes read bits 0-4, bit 5 picks the pair */
        v = _mm512_mask_blend_ps(_mm512_test_epi32_mask(w, _mm512_set1_epi32(32)),
                                 _mm512_permutex2var_ps(R->x0, w, R->x1),
                                 _mm512_permutex2var_ps(R->x2, w, R->x3));
    } else {
        v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), (__mmask16)~leaf,
                                     _mm512_and_si512(w, _mm512_set1_epi32(PK_FEAT)), R->x, 4);
    }
    __mmask16 left = _mm512_cmp_ps_mask(v, thr, _CMP_LT_OQ) |
                     (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) &
                      _mm512_test_epi32_mask(w, _mm512_set1_epi32(PK_DL))) |
                     leaf;
    *went_left = left;
    at = _mm512_add_epi32(at, _mm512_srli_epi32(w, PK_OFF_SHIFT));
    return _mm512_mask_add_epi32(at, (__mmask16)~left, at, _mm512_set1_epi32(1));
}

__attribute__((target("avx512f"), always_inline)) static inline __m512i
step512(__m512i at, const void *base, const row512 *R)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    __m512i a0 = _mm512_i32gather_epi64(_mm512_castsi512_si256(at), base, 8);
    __m512i a1 = _mm512_i32gather_epi64(_mm512_extracti64x4_epi64(at, 1), base, 8);
    __mmask16 unused;
    return decide512(at, _mm512_castsi512_ps(_mm512_permutex2var_epi32(a0, ev, a1)),
                     _mm512_permutex2var_epi32(a0, od, a1), R, &unused);
}

__attribute__((target("avx512f"))) static void predict_avx512(const pp_lm_flat *F,
                                                             const flat_pack *P, const float *X,
                                                             int n, int stride, float *out)
{
    const void *base = P->nodes;
    /* rows of <= 64 features sit in four registers and are looked up with permutes */
    int nf = F->n_features;
    __mmask16 m[4];
    for (int q = 0; q < 4; q++)
        m[q] = (__mmask16)(nf >= 16 * (q + 1) ? 0xffff
                           : nf <= 16 * q    ? 0
                                             : (1u << (nf - 16 * q)) - 1);
    row512 R = {.in_regs = nf <= 64};
    for (int r0 = 0; r0 < n; r0 += FLAT_BLOCK) {
        int r1 = r0 + FLAT_BLOCK < n ? r0 + FLAT_BLOCK : n;
        for (int r = r0; r < r1; r++) out[r] = F->base_margin;
        for (int t0 = 0; t0 < F->n_trees; t0 += 16 * G512) {
            int cnt[G512], D = groups_from(F, P, t0, 16, G512, cnt);
            for (int r = r0; r < r1; r++) {
                R.x = X + (size_t)r * stride;
                if (R.in_regs) {
                    R.x0 = _mm512_maskz_loadu_ps(m[0], R.x);
                    R.x1 = _mm512_maskz_loadu_ps(m[1], R.x + 16);
                    R.x2 = _mm512_maskz_loadu_ps(m[2], R.x + 32);
                    R.x3 = _mm512_maskz_loadu_ps(m[3], R.x + 48);
                }
                __m512i at[G512];
                for (int g = 0; g < G512; g++) {
                    int t = t0 + 16 * g;
                    at[g] = _mm512_loadu_si512(P->root + t);
                    if (D < 1) continue;
                    __mmask16 l;
                    at[g] = decide512(at[g], _mm512_loadu_ps(P->tv[0] + t),
                                      _mm512_loadu_si512(P->tw[0] + t), &R, &l);
                    if (D < 2) continue;
                    __m512 thr = _mm512_mask_blend_ps(l, _mm512_loadu_ps(P->tv[2] + t),
                                                      _mm512_loadu_ps(P->tv[1] + t));
                    __m512i w = _mm512_mask_blend_epi32(l, _mm512_loadu_si512(P->tw[2] + t),
                                                        _mm512_loadu_si512(P->tw[1] + t));
                    at[g] = decide512(at[g], thr, w, &R, &l);
                }
                for (int step = 2; step < D; step++)
                    for (int g = 0; g < G512; g++) at[g] = step512(at[g], base, &R);
                float leaves[16 * G512];
                for (int g = 0; g < G512; g++)
                    _mm512_storeu_ps(leaves + 16 * g, _mm512_i32gather_ps(at[g], base, 8));
                float s = out[r];
                for (int g = 0; g < G512; g++)
                    for (int l = 0; l < cnt[g]; l++) s += leaves[16 * g + l];
                out[r] = s;
            }
        }
    }
}

/* The same with 8 lanes. The 8-byte gathers come back, after the in-lane shuffles, in lane order
 * 0 1 4 5 2 3 6 7 (P); the walk keeps its indices in that order and swaps the middle quarters
 * (its own inverse) for the gathers. Rows are gathered: AVX2 has no two-register permute. */
#define G256 4
#define SWAP_MID(v) _mm256_permute4x64_epi64((v), _MM_SHUFFLE(3, 1, 2, 0))
#define LOAD_I(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define LOAD_F(p) _mm256_castsi256_ps(SWAP_MID(LOAD_I(p)))
__attribute__((target("avx2"), always_inline)) static inline __m256i
decide256(__m256i atp, __m256 thr, __m256i w, const float *x, __m256 *went_left)
{
    const __m256i leaf_bit = _mm256_set1_epi32(PK_LEAF), dl_bit = _mm256_set1_epi32(PK_DL);
    __m256i leaf = _mm256_cmpeq_epi32(_mm256_and_si256(w, leaf_bit), leaf_bit);
    __m256 v = _mm256_mask_i32gather_ps(
        _mm256_setzero_ps(), x, _mm256_and_si256(w, _mm256_set1_epi32(PK_FEAT)),
        _mm256_castsi256_ps(_mm256_xor_si256(leaf, _mm256_set1_epi32(-1))), 4);
    __m256 left = _mm256_or_ps(
        _mm256_or_ps(_mm256_cmp_ps(v, thr, _CMP_LT_OQ), _mm256_castsi256_ps(leaf)),
        _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q),
                      _mm256_castsi256_ps(
                          _mm256_cmpeq_epi32(_mm256_and_si256(w, dl_bit), dl_bit))));
    *went_left = left;
    atp = _mm256_add_epi32(atp, _mm256_srli_epi32(w, PK_OFF_SHIFT));
    return _mm256_add_epi32(atp, _mm256_andnot_si256(_mm256_castps_si256(left),
                                                     _mm256_set1_epi32(1)));
}

__attribute__((target("avx2"), always_inline)) static inline __m256i
step256(__m256i atp, const long long *base, const float *x)
{
#define PICK(a, b, imm) _mm256_shuffle_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), (imm))
    __m256i at = SWAP_MID(atp);
    __m256i a0 = _mm256_i32gather_epi64(base, _mm256_castsi256_si128(at), 8);
    __m256i a1 = _mm256_i32gather_epi64(base, _mm256_extracti128_si256(at, 1), 8);
    __m256 unused;
    return decide256(atp, PICK(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                     _mm256_castps_si256(PICK(a0, a1, _MM_SHUFFLE(3, 1, 3, 1))), x, &unused);
#undef PICK
}

__attribute__((target("avx2"))) static void predict_avx2(const pp_lm_flat *F, const flat_pack *P,
                                                        const float *X, int n, int stride,
                                                        float *out)
{
    const long long *base = (const long long *)(const void *)P->nodes;
    for (int r0 = 0; r0 < n; r0 += FLAT_BLOCK) {
        int r1 = r0 + FLAT_BLOCK < n ? r0 + FLAT_BLOCK : n;
        for (int r = r0; r < r1; r++) out[r] = F->base_margin;
        for (int t0 = 0; t0 < F->n_trees; t0 += 8 * G256) {
            int cnt[G256], D = groups_from(F, P, t0, 8, G256, cnt);
            for (int r = r0; r < r1; r++) {
                const float *x = X + (size_t)r * stride;
                __m256i atp[G256];
                for (int g = 0; g < G256; g++) {
                    int t = t0 + 8 * g;
                    atp[g] = SWAP_MID(LOAD_I(P->root + t));
                    if (D < 1) continue;
                    __m256 l;
                    atp[g] = decide256(atp[g], LOAD_F(P->tv[0] + t),
                                       SWAP_MID(LOAD_I(P->tw[0] + t)), x, &l);
                    if (D < 2) continue;
                    __m256 thr = _mm256_blendv_ps(LOAD_F(P->tv[2] + t), LOAD_F(P->tv[1] + t), l);
                    __m256i w = _mm256_castps_si256(
                        _mm256_blendv_ps(_mm256_castsi256_ps(SWAP_MID(LOAD_I(P->tw[2] + t))),
                                         _mm256_castsi256_ps(SWAP_MID(LOAD_I(P->tw[1] + t))), l));
                    atp[g] = decide256(atp[g], thr, w, x, &l);
                }
                for (int step = 2; step < D; step++)
                    for (int g = 0; g < G256; g++) atp[g] = step256(atp[g], base, x);
                float leaves[8 * G256];
                for (int g = 0; g < G256; g++)
                    _mm256_storeu_ps(leaves + 8 * g,
                                     _mm256_i32gather_ps((const float *)(const void *)base,
                                                         SWAP_MID(atp[g]), 8));
                float s = out[r];
                for (int g = 0; g < G256; g++)
                    for (int l = 0; l < cnt[g]; l++) s += leaves[8 * g + l];
                out[r] = s;
            }
        }
    }
}
#undef SWAP_MID
#undef LOAD_I
#undef LOAD_F

static int cpu_level(void)
{
    static _Atomic int level = -1;
    int l = level;
    if (l < 0) {
        __builtin_cpu_init();
        level = l = __builtin_cpu_supports("avx512f") ? PP_LM_FLAT_AVX512
                    : __builtin_cpu_supports("avx2")  ? PP_LM_FLAT_AVX2
                                                      : PP_LM_FLAT_PORTABLE;
    }
    return l;
}
#else
static int cpu_level(void) { return PP_LM_FLAT_PORTABLE; }
#endif

static atomic_int level_cap = PP_LM_FLAT_AVX512;

int pp_lm_flat_kernel_cap(int max_level)
{
    atomic_store(&level_cap, max_level);
    return pp_lm_flat_kernel();
}

int pp_lm_flat_kernel(void)
{
    int cap = atomic_load_explicit(&level_cap, memory_order_relaxed), l = cpu_level();
    return l < cap ? l : cap < 0 ? PP_LM_FLAT_PORTABLE : cap;
}

int pp_lm_flat_kernel_of(const pp_lm_flat *F)
{
    int level = pp_lm_flat_kernel();
    return level != PP_LM_FLAT_PORTABLE && pack_of(F) ? level : PP_LM_FLAT_PORTABLE;
}

void pp_lm_flat_predict(const pp_lm_flat *F, const float *X, int n, int stride, float *out)
{
    int level = pp_lm_flat_kernel();
    const flat_pack *P = level != PP_LM_FLAT_PORTABLE ? pack_of(F) : NULL;
    if (!P) level = PP_LM_FLAT_PORTABLE;
    switch (level) {
#ifdef PP_FLAT_VEC
    case PP_LM_FLAT_AVX512: predict_avx512(F, P, X, n, stride, out); break;
    case PP_LM_FLAT_AVX2: predict_avx2(F, P, X, n, stride, out); break;
#endif
    default: predict_portable(F, X, n, stride, out); break;
    }
    if (F->transform == 1)
        for (int r = 0; r < n; r++) out[r] = 1.0f / (1.0f + expf(-out[r]));
    else if (F->transform == 2)
        for (int r = 0; r < n; r++) out[r] = expf(out[r]);
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
