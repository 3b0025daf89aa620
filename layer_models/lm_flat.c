/* layer_models/lm_flat.c: an XGBoost tree ensemble as one flat node array, evaluated without XGBoost.
 * The trees come from XGBoost's own JSON model (XGBoosterSaveModelToBuffer, parsed with cJSON), so
 * no UBJSON is read here. Evaluation mirrors XGBoost 1.7's CPU predictor: a float sum started at the
 * base margin, trees added in order, missing (NaN) inputs take the default child, else
 * x < threshold goes left; then the objective's transform. No allocation per call. */
#include "layer_models/layer_models.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    free(f->roots);
    free(f->nodes);
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

int pp_lm_flat_n_trees(const pp_lm_flat *f) { return f ? f->n_trees : 0; }
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
