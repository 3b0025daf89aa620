/* layer_models/lm_set.c: a device's regressors as a set: manifest.json (cJSON) naming the data
 * sources, feature names, hyper-parameters, base figures and held-out errors of each regressor; the
 * loader that checks the manifest against this build and answers per node, or says "not covered" so
 * that the predictor falls back to its roofline. A set opened deferred reads its regressors the
 * first time one is asked for (a context holds every calibrated device; a call uses one or two). */
#include "layer_models/layer_models.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MANIFEST_FORMAT "perfpred-layer-models/1"
#define LABEL_TEXT "log(measured / base)"

/* ---- writing ---- */
static cJSON *num_or_null(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

perfpred_status pp_lm_manifest_write(const char *dir, const pp_lm_manifest *m, pp_err *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/manifest.json", dir) >= (int)sizeof path)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", dir);
    cJSON *root = cJSON_CreateObject();
    if (!root) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    int ok = 1;
/* An item that is not attached (an earlier failure, or cJSON's copy of the key ran out of memory)
 * is freed here: cJSON_AddItemToObject leaves it to the caller. */
#define ADD(obj, key, item)                                                       \
    do {                                                                          \
        cJSON *item_ = (item);                                                    \
        if (!ok || !cJSON_AddItemToObject((obj), (key), item_)) {                 \
            cJSON_Delete(item_);                                                  \
            ok = 0;                                                               \
        }                                                                         \
    } while (0)
    ADD(root, "format", cJSON_CreateString(MANIFEST_FORMAT));
    ADD(root, "device", cJSON_CreateString(m->device));
    ADD(root, "runtime", cJSON_CreateString(m->runtime ? m->runtime : ""));
    ADD(root, "precision", cJSON_CreateString(m->precision ? m->precision : ""));
    ADD(root, "date", cJSON_CreateString(m->date ? m->date : ""));
    if (m->note) ADD(root, "note", cJSON_CreateString(m->note));
    cJSON *src = cJSON_CreateArray();
    ADD(root, "sources", src);
    for (int i = 0; ok && i < m->n_sources; i++) {
        const pp_lm_source *s = &m->sources[i];
        cJSON *o = cJSON_CreateObject();
        ok &= cJSON_AddItemToArray(src, o) != 0;
        if (!ok) break;
        ADD(o, "path", cJSON_CreateString(s->path));
        ADD(o, "repo", cJSON_CreateString(s->repo));
        ADD(o, "commit", cJSON_CreateString(s->commit));
        ADD(o, "gpu", cJSON_CreateString(s->gpu));
        ADD(o, "rows", cJSON_CreateNumber(s->rows));
        ADD(o, "role", cJSON_CreateString(s->role));
        const pp_lm_rescale *q = &s->rescale;
        if (q->on) {
            cJSON *rs = cJSON_CreateObject();
            ADD(o, "rescale", rs);
            if (!ok) break;
            ADD(rs, "log_a", cJSON_CreateNumber(q->log_a));
            ADD(rs, "slope", cJSON_CreateNumber(q->slope));
            for (int c = 0; ok && q->by_class && c < 2; c++) {
                cJSON *cl = cJSON_CreateObject();
                ADD(rs, c ? "memory_bound" : "compute_bound", cl);
                if (!ok) break;
                ADD(cl, "log_a", cJSON_CreateNumber(q->class_log_a[c]));
                ADD(cl, "slope", cJSON_CreateNumber(q->class_slope[c]));
            }
        }
    }
    cJSON *feat = cJSON_CreateArray();
    ADD(root, "features", feat);
    for (int i = 0; ok && i < PP_LM_NFEAT; i++)
        ok &= cJSON_AddItemToArray(feat, cJSON_CreateString(pp_lm_feature_name(i))) != 0;
    ADD(root, "label", cJSON_CreateString(LABEL_TEXT));
    cJSON *hp = cJSON_CreateObject();
    ADD(root, "hyperparameters", hp);
    if (ok) {
        const pp_lm_params *p = &m->params;
        ADD(hp, "library", cJSON_CreateString("xgboost (C API)"));
        ADD(hp, "objective", cJSON_CreateString("reg:squarederror"));
        ADD(hp, "tree_method", cJSON_CreateString(p->tree_method ? p->tree_method : ""));
        ADD(hp, "nthread", cJSON_CreateNumber(p->nthread));
        ADD(hp, "seed", cJSON_CreateNumber(p->seed));
        ADD(hp, "n_rounds", cJSON_CreateNumber(p->n_rounds));
        ADD(hp, "max_depth", cJSON_CreateNumber(p->max_depth));
        ADD(hp, "eta", cJSON_CreateNumber(p->eta));
        ADD(hp, "subsample", cJSON_CreateNumber(p->subsample));
        ADD(hp, "colsample_bytree", cJSON_CreateNumber(p->colsample_bytree));
        ADD(hp, "min_child_weight", cJSON_CreateNumber(p->min_child_weight));
        ADD(hp, "lambda", cJSON_CreateNumber(p->lambda));
        ADD(hp, "max_bin", cJSON_CreateNumber(p->max_bin));
    }
    cJSON *models = cJSON_CreateArray();
    ADD(root, "models", models);
    for (int i = 0; ok && i < m->n_entries; i++) {
        const pp_lm_entry *e = &m->entries[i];
        cJSON *o = cJSON_CreateObject();
        ok &= cJSON_AddItemToArray(models, o) != 0;
        if (!ok) break;
        ADD(o, "op_kind", cJSON_CreateString(pp_op_kind_name(e->kind)));
        ADD(o, "target", cJSON_CreateString(pp_lm_target_name(e->target)));
        ADD(o, "file", cJSON_CreateString(e->file));
        cJSON *b = cJSON_CreateObject();
        ADD(o, "base", b);
        if (!ok) break;
        ADD(b, "peak_tflops", cJSON_CreateNumber(e->base.peak_tflops));
        ADD(b, "bw_gbs", cJSON_CreateNumber(e->base.bw_gbs));
        ADD(b, "floor_ms", cJSON_CreateNumber(e->base.floor_ms));
        ADD(b, "compute_units", cJSON_CreateNumber(e->base.compute_units));
        if (e->base.blas_tflops > 0) ADD(b, "blas_tflops", cJSON_CreateNumber(e->base.blas_tflops));
        if (e->base.pool_tflops > 0) ADD(b, "pool_tflops", cJSON_CreateNumber(e->base.pool_tflops));
        if (e->base.conv_call_ms > 0)
            ADD(b, "conv_call_ms", cJSON_CreateNumber(e->base.conv_call_ms));
        cJSON *dom = cJSON_CreateObject();
        ADD(o, "domain", dom);
        for (int d = 0; ok && d < PP_LM_N_DOMAIN; d++) {
            cJSON *vals = cJSON_CreateArray();
            ADD(dom, pp_lm_domain_name(d), vals);
            for (int v = 0; ok && v < 32; v++)
                if (e->domain.seen[d] & (1u << v))
                    ok &= cJSON_AddItemToArray(vals, cJSON_CreateNumber(v)) != 0;
        }
        if (ok && e->domain.n_ops > 0) {
            cJSON *ops = cJSON_CreateArray();
            ADD(dom, "op_codes", ops);
            for (int k = 0; ok && k < e->domain.n_ops; k++)
                ok &= cJSON_AddItemToArray(ops, cJSON_CreateNumber(e->domain.ops[k])) != 0;
        }
        ADD(o, "rows_train", cJSON_CreateNumber(e->n_train));
        ADD(o, "rows_heldout", cJSON_CreateNumber(e->n_heldout));
        ADD(o, "heldout", cJSON_CreateString(e->heldout ? e->heldout : ""));
        ADD(o, "heldout_mape_pct", num_or_null(e->heldout_mape_pct));
        ADD(o, "roofline_mape_pct", num_or_null(e->roofline_mape_pct));
        if (e->note) ADD(o, "note", cJSON_CreateString(e->note));
    }
#undef ADD
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    size_t len = strlen(text);
    char *withnl = malloc(len + 2);
    perfpred_status st;
    if (!withnl) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    } else {
        memcpy(withnl, text, len);
        withnl[len] = '\n';
        st = pp_write_file_atomic(path, withnl, len + 1, err);
    }
    free(withnl);
    cJSON_free(text);
    return st;
}

/* ---- loading ---- */
struct pp_layer_models {
    pp_arena *arena;
    const char *dir;
    const char *device;
    const char *source;
    /* the machines the rows were measured on (the sources' "gpu": a runner's machine=) */
    const char *machines[PP_LM_MAX_SOURCES];
    int n_machines;
    /* every regressor is read (from the open, or the first use of a deferred set: that reads
     * them under the lock; its first failure sticks in load_err) */
    atomic_int loaded;
    pthread_mutex_t lock;
    pp_err load_err;
    unsigned char present[PP_OPK__COUNT][PP_LM__COUNT];
    pp_lm_model *models[PP_OPK__COUNT][PP_LM__COUNT];
    pp_lm_entry entries[PP_OPK__COUNT][PP_LM__COUNT];
};

void pp_layer_models_free(pp_layer_models *lm)
{
    if (!lm) return;
    for (int k = 0; k < PP_OPK__COUNT; k++)
        for (int t = 0; t < PP_LM__COUNT; t++) pp_lm_model_free(lm->models[k][t]);
    pthread_mutex_destroy(&lm->lock);
    pp_arena_free(lm->arena);
    free(lm);
}

static const char *get_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Two manifest sources from one measurement run: the same repo and commit (absent = "?"). */
static int same_run(const cJSON *a, const cJSON *b)
{
    const char *ra = get_str(a, "repo"), *rb = get_str(b, "repo");
    const char *ca = get_str(a, "commit"), *cb = get_str(b, "commit");
    return strcmp(ra ? ra : "?", rb ? rb : "?") == 0 && strcmp(ca ? ca : "?", cb ? cb : "?") == 0;
}

static int get_num(const cJSON *o, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNull(v)) {
        *out = NAN;
        return 0;
    }
    if (!cJSON_IsNumber(v)) return -1;
    *out = v->valuedouble;
    return 0;
}

/* A model file name: no directories, ends in .ubj. */
static int safe_file_name(const char *s)
{
    size_t n = strlen(s);
    return n > 4 && !strchr(s, '/') && strcmp(s + n - 4, ".ubj") == 0 && s[0] != '.';
}

/* "domain": {"kernel_h": [3], ..., "op_codes": [...]}: every attribute listed, values 0..31; the
 * operators' codes (24-bit) optional (manifests before them: any operator). */
static int get_domain(const cJSON *o, pp_lm_domain *d)
{
    const cJSON *dom = cJSON_GetObjectItemCaseSensitive(o, "domain");
    if (!cJSON_IsObject(dom)) return -1;
    memset(d, 0, sizeof *d);
    for (int i = 0; i < PP_LM_N_DOMAIN; i++) {
        const cJSON *vals = cJSON_GetObjectItemCaseSensitive(dom, pp_lm_domain_name(i)), *v;
        if (!cJSON_IsArray(vals)) return -1;
        cJSON_ArrayForEach(v, vals)
        {
            if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 31 ||
                v->valuedouble != (double)(int)v->valuedouble)
                return -1;
            d->seen[i] |= 1u << (int)v->valuedouble;
        }
    }
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(dom, "op_codes"), *v;
    if (!ops) return 0;
    if (!cJSON_IsArray(ops) || cJSON_GetArraySize(ops) > PP_LM_MAX_OPS) return -1;
    cJSON_ArrayForEach(v, ops)
    {
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 0xFFFFFF ||
            v->valuedouble != (double)(uint32_t)v->valuedouble)
            return -1;
        d->ops[d->n_ops++] = (uint32_t)v->valuedouble;
    }
    return 0;
}

static perfpred_status load_entry(pp_layer_models *lm, const cJSON *o, int idx, const char *path,
                                  int deferred, pp_err *err)
{
    const char *kind_s = get_str(o, "op_kind"), *target_s = get_str(o, "target");
    const char *file = get_str(o, "file");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "base");
    int kind = kind_s ? pp_op_kind_from_name(kind_s) : -1;
    int target = target_s ? pp_lm_target_from_name(target_s) : -1;
    pp_lm_entry e;
    memset(&e, 0, sizeof e);
    double rows_train = 0, rows_heldout = 0, cu = 0;
    if (kind <= 0 || target < 0 || !file || !safe_file_name(file) || !cJSON_IsObject(b) ||
        get_num(b, "peak_tflops", &e.base.peak_tflops) || get_num(b, "bw_gbs", &e.base.bw_gbs) ||
        get_num(b, "floor_ms", &e.base.floor_ms) || get_num(b, "compute_units", &cu) ||
        !(cu >= 1 && cu <= 1e6) || get_domain(o, &e.domain) ||
        get_num(o, "rows_train", &rows_train) ||
        get_num(o, "rows_heldout", &rows_heldout) ||
        get_num(o, "heldout_mape_pct", &e.heldout_mape_pct) ||
        get_num(o, "roofline_mape_pct", &e.roofline_mape_pct))
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: models[%d]: needs op_kind, target, file (<name>.ubj), base "
                          "{peak_tflops, bw_gbs, floor_ms, compute_units}, domain, rows_train, "
                          "rows_heldout, "
                          "heldout_mape_pct, roofline_mape_pct",
                          path, idx);
    if (lm->present[kind][target])
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: models[%d]: second %s/%s model", path, idx,
                          kind_s, target_s);
    e.base.compute_units = (int)cu;
    /* optional: absent in manifests fitted before it, and off PyTorch CPUs */
    if (cJSON_GetObjectItemCaseSensitive(b, "blas_tflops") &&
        (get_num(b, "blas_tflops", &e.base.blas_tflops) || !(e.base.blas_tflops >= 0) ||
         !isfinite(e.base.blas_tflops)))
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: models[%d]: base.blas_tflops must be a number >= 0", path, idx);
    if (cJSON_GetObjectItemCaseSensitive(b, "pool_tflops") &&
        (get_num(b, "pool_tflops", &e.base.pool_tflops) || !(e.base.pool_tflops >= 0) ||
         !isfinite(e.base.pool_tflops)))
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: models[%d]: base.pool_tflops must be a number >= 0", path, idx);
    if (cJSON_GetObjectItemCaseSensitive(b, "conv_call_ms") &&
        (get_num(b, "conv_call_ms", &e.base.conv_call_ms) || !(e.base.conv_call_ms >= 0) ||
         !isfinite(e.base.conv_call_ms)))
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: models[%d]: base.conv_call_ms must be a number >= 0", path, idx);
    e.kind = (pp_op_kind)kind;
    e.target = (pp_lm_target)target;
    e.n_train = (int)rows_train;
    e.n_heldout = (int)rows_heldout;
    e.file = pp_arena_strdup(lm->arena, file);
    const char *h = get_str(o, "heldout"), *note = get_str(o, "note");
    e.heldout = h ? pp_arena_strdup(lm->arena, h) : NULL;
    e.note = note ? pp_arena_strdup(lm->arena, note) : NULL;
    char mpath[4096];
    if (snprintf(mpath, sizeof mpath, "%s/%s", lm->dir, file) >= (int)sizeof mpath)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", lm->dir);
    lm->entries[kind][target] = e;
    lm->present[kind][target] = 1;
    /* a deferred set reads the file later, but a missing one is refused now, with the manifest */
    struct stat sb;
    if (deferred && (stat(mpath, &sb) != 0 || !S_ISREG(sb.st_mode)))
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: models[%d]: no model file %s", path, idx,
                          mpath);
    return PERFPRED_OK;
}

/* Reads every listed regressor that is not read yet; stops at the first failure. */
static perfpred_status load_models(pp_layer_models *lm, pp_err *err)
{
    for (int k = 0; k < PP_OPK__COUNT; k++)
        for (int t = 0; t < PP_LM__COUNT; t++) {
            if (!lm->present[k][t] || lm->models[k][t]) continue;
            const pp_lm_entry *e = &lm->entries[k][t];
            char mpath[4096]; /* its length was checked when the entry was read */
            snprintf(mpath, sizeof mpath, "%s/%s", lm->dir, e->file);
            perfpred_status st = pp_lm_model_load(mpath, e->kind, e->target, &e->base, &e->domain,
                                                  &lm->models[k][t], err);
            if (st != PERFPRED_OK) return st;
        }
    return PERFPRED_OK;
}

perfpred_status pp_layer_models_ready(const pp_layer_models *set, pp_err *err)
{
    if (!set) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "layer models: NULL set");
    /* read once: predictions after that only pay this load */
    if (atomic_load_explicit(&set->loaded, memory_order_acquire)) return PERFPRED_OK;
    /* the lock and the lazily filled tables are the object's own state, not its contents */
    pp_layer_models *lm = (pp_layer_models *)set;
    pthread_mutex_lock(&lm->lock);
    if (!atomic_load_explicit(&lm->loaded, memory_order_relaxed) &&
        lm->load_err.status == PERFPRED_OK && load_models(lm, &lm->load_err) == PERFPRED_OK)
        atomic_store_explicit(&lm->loaded, 1, memory_order_release);
    perfpred_status st = lm->load_err.status;
    if (st != PERFPRED_OK && err) *err = lm->load_err;
    pthread_mutex_unlock(&lm->lock);
    return st;
}

perfpred_status pp_layer_models_load(const char *dir, pp_layer_models **out, pp_err *err)
{
    return pp_layer_models_open(dir, 0, out, err);
}

perfpred_status pp_layer_models_open(const char *dir, int deferred, pp_layer_models **out,
                                     pp_err *err)
{
    *out = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/manifest.json", dir) >= (int)sizeof path)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", dir);
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st != PERFPRED_OK) return st;
    cJSON *root = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    if (!root) return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: not valid JSON", path);
    pp_layer_models *lm = calloc(1, sizeof *lm);
    if (!lm || !(lm->arena = pp_arena_new())) {
        free(lm);
        cJSON_Delete(root);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    if (pthread_mutex_init(&lm->lock, NULL) != 0) {
        pp_arena_free(lm->arena);
        free(lm);
        cJSON_Delete(root);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: cannot create a mutex", path);
    }
    atomic_init(&lm->loaded, 0);
    lm->dir = pp_arena_strdup(lm->arena, dir);
    const char *fmt = get_str(root, "format"), *device = get_str(root, "device");
    const cJSON *feat = cJSON_GetObjectItemCaseSensitive(root, "features");
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "models");
    const cJSON *sources = cJSON_GetObjectItemCaseSensitive(root, "sources");
    const char *label = get_str(root, "label");
    if (!fmt || strcmp(fmt, MANIFEST_FORMAT) != 0) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: format is not \"%s\"", path, MANIFEST_FORMAT);
        goto fail;
    }
    if (!device || !cJSON_IsArray(feat) || !cJSON_IsArray(models) || !cJSON_IsArray(sources) ||
        !label || strcmp(label, LABEL_TEXT) != 0) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL,
                        "%s: needs device, sources, features, label \"%s\" and models", path,
                        LABEL_TEXT);
        goto fail;
    }
    if (cJSON_GetArraySize(feat) != PP_LM_NFEAT) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: %d features, this build computes %d: retrain",
                        path, cJSON_GetArraySize(feat), PP_LM_NFEAT);
        goto fail;
    }
    for (int i = 0; i < PP_LM_NFEAT; i++) {
        const cJSON *f = cJSON_GetArrayItem(feat, i);
        if (!cJSON_IsString(f) || strcmp(f->valuestring, pp_lm_feature_name(i)) != 0) {
            st = pp_err_set(err, PERFPRED_ERR_MODEL,
                            "%s: feature %d is '%s', this build computes '%s': retrain", path, i,
                            cJSON_IsString(f) ? f->valuestring : "?", pp_lm_feature_name(i));
            goto fail;
        }
    }
    lm->device = pp_arena_strdup(lm->arena, device);
    const cJSON *s0 = cJSON_GetArrayItem(sources, 0);
    if (s0) {
        /* the first source, and how many other repo@commit the rows came from (a calibration
         * trained on several measurement runs names one and counts the rest) */
        const char *repo = get_str(s0, "repo"), *commit = get_str(s0, "commit");
        char text[512];
        snprintf(text, sizeof text, "%s@%s", repo ? repo : "?", commit ? commit : "?");
        int n_more = 0;
        for (const cJSON *so = s0->next; so; so = so->next) {
            int seen = 0;
            for (const cJSON *e = sources->child; e != so && !seen; e = e->next)
                seen = same_run(e, so);
            n_more += !seen;
        }
        if (n_more > 0) {
            size_t L = strlen(text);
            snprintf(text + L, sizeof text - L, " and %d more source%s", n_more,
                     n_more == 1 ? "" : "s");
        }
        lm->source = pp_arena_strdup(lm->arena, text);
    } else {
        lm->source = pp_arena_strdup(lm->arena, "(no source listed)");
    }
    const cJSON *so;
    cJSON_ArrayForEach(so, sources)
    {
        const char *m = cJSON_IsObject(so) ? get_str(so, "gpu") : NULL;
        if (!m || !*m || lm->n_machines == PP_LM_MAX_SOURCES) continue;
        int dup = 0;
        for (int k = 0; k < lm->n_machines && !dup; k++) dup = strcmp(lm->machines[k], m) == 0;
        if (!dup && !(lm->machines[lm->n_machines++] = pp_arena_strdup(lm->arena, m))) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    int idx = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, models)
    {
        if (!cJSON_IsObject(o)) {
            st = pp_err_set(err, PERFPRED_ERR_MODEL, "%s: models[%d] is not an object", path, idx);
            goto fail;
        }
        if ((st = load_entry(lm, o, idx, path, deferred, err)) != PERFPRED_OK) goto fail;
        idx++;
    }
    if (!deferred) {
        if ((st = load_models(lm, err)) != PERFPRED_OK) goto fail;
        atomic_store_explicit(&lm->loaded, 1, memory_order_relaxed);
    }
    cJSON_Delete(root);
    *out = lm;
    return PERFPRED_OK;
fail:
    cJSON_Delete(root);
    pp_layer_models_free(lm);
    return st;
}

int pp_layer_models_covers(const pp_layer_models *lm, pp_op_kind kind, pp_lm_target target)
{
    return lm && kind > 0 && kind < PP_OPK__COUNT && target >= 0 && target < PP_LM__COUNT &&
           lm->present[kind][target];
}

int pp_layer_models_predict(const pp_layer_models *lm, const pp_node_feat *f, pp_lm_target target,
                            double *out, pp_err *err)
{
    if (!pp_layer_models_covers(lm, f->kind, target)) return PP_LM_UNCOVERED;
    if (!pp_lm_domain_contains(&lm->entries[f->kind][target].domain, f)) return PP_LM_UNCOVERED;
    if (pp_layer_models_ready(lm, err) != PERFPRED_OK) return PP_LM_ERROR;
    return pp_lm_model_predict(lm->models[f->kind][target], f, out, err) == PERFPRED_OK
               ? PP_LM_OK
               : PP_LM_ERROR;
}

const char *pp_layer_models_device(const pp_layer_models *lm) { return lm ? lm->device : NULL; }
const char *pp_layer_models_source(const pp_layer_models *lm) { return lm ? lm->source : NULL; }

int pp_layer_models_n_machines(const pp_layer_models *lm) { return lm ? lm->n_machines : 0; }

const char *pp_layer_models_machine(const pp_layer_models *lm, int i)
{
    return lm && i >= 0 && i < lm->n_machines ? lm->machines[i] : NULL;
}

const pp_lm_entry *pp_layer_models_entry(const pp_layer_models *lm, pp_op_kind kind,
                                         pp_lm_target target)
{
    if (!pp_layer_models_covers(lm, kind, target)) return NULL;
    return &lm->entries[kind][target];
}
