/* predictor/calib.c: the calibrated side of a prediction: opens each descriptor's layer models
 * (configs/<artifacts>/manifest.json) at context open, reads their .ubj regressors the first time
 * a prediction needs them, does the same with each device's graph-level correction (manifest at
 * open, weights on first use) and in-network overhead correction (read at open), and answers which
 * device's models stand for a given device (itself, its MIG parent, or its calibration_from). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <pthread.h>
#include <sys/stat.h>

#include "graph_gnn/graph_gnn.h"
#include "layer_models/layer_models.h"
#include "predictor/calib.h"
#include "predictor/predictor.h"

typedef struct calib_entry {
    const pp_device *dev;
    pp_layer_models *lm;
} calib_entry;

/* A device's graph-level correction: its files (bin NULL when it has none), provenance text and
 * targets from the manifest at open; the model, or the error that loading it gave, once a
 * prediction needed it (under pp_calib.gnn_lock). */
typedef struct calib_gnn {
    char *bin, *man, *text;
    int targets;
    pp_gnn *model;
    pp_err err;
} calib_gnn;

/* A device's in-network overhead correction (overhead-latency.json) and its provenance text; or
 * (transferred) the one of the device whose layer models it borrows, scaled to it. */
typedef struct calib_overhead {
    double w[PP_OVERHEAD_TERMS];
    char *text, *whose; /* whose: whose correction it is and what it was fitted on */
    char *over;         /* layer_models_of: whose layer models its rows were summed with */
    int transferred;
} calib_overhead;

struct pp_calib {
    const pp_device_db *db;
    int n;
    calib_entry *e;
    /* per device (pp_devices_at order): whose models answer, and the provenance text */
    const pp_device **src;
    char **text;
    calib_gnn *gnn;      /* graph-level correction per device */
    pthread_mutex_t gnn_lock;
    calib_overhead *ovh; /* in-network overhead correction per device: text NULL when none */
};

/* The provenance text of correction w: its terms, then whose it is and what it was fitted on. */
static char *overhead_text(const double *w, const pp_device *d, const char *whose)
{
    char text[2048], mb[64] = "", cw[160] = "";
    if (w[2] > 0) snprintf(mb, sizeof mb, " + %.1f us per MB moved", w[2] * 1e3);
    if (w[3] > 0)
        snprintf(cw, sizeof cw, " + %.1f us per MB of weights of layers that fit the %g MiB "
                 "last-level cache alone, where the pass does not", w[3] * 1e3, d->l2_mb);
    snprintf(text, sizeof text, "layer sum x %.3f + %.1f us per kernel%s%s (%s)", w[0], w[1] * 1e3,
             mb, cw, whose);
    return strdup(text);
}

static const calib_entry *entry_of(const pp_calib *c, const pp_device *d);
static int device_index(const pp_calib *c, const pp_device *d);

/* For an eager-PyTorch CPU without layer models of its own that names no calibration_from: the
 * calibrated CPU its own in-network correction was fitted over, else the one of the same runtime
 * and precision nearest to its figures (pp_calib_nearest_cpu); NULL where none is or its
 * descriptor lacks the figures. A correction of its own (in-network or graph-level) was fitted
 * over the layer sums it borrowed, so it does not stop the borrowing. i: d's index. */
static const pp_device *nearest_cpu(const pp_calib *c, const pp_device *d, int i)
{
    if (d->is_mig || d->calibration_from || !pp_device_is_eager_pytorch_cpu(d) || entry_of(c, d))
        return NULL;
    /* a correction of its own, fitted over a calibrated CPU's layer sums (`calibrate run
     * --quick` on it), stays over that CPU's models */
    const pp_device *over = c->ovh[i].over ? pp_devices_find(c->db, c->ovh[i].over) : NULL;
    if (over && entry_of(c, over) && pp_device_is_eager_pytorch_cpu(over)) return over;
    return pp_calib_nearest_cpu(c, d);
}

const pp_device *pp_calib_nearest_cpu(const pp_calib *c, const pp_device *d)
{
    const pp_device *best = NULL;
    return pp_calib_cover_cpus(c, d, NULL, &best, 1) ? best : NULL;
}

int pp_calib_cover_cpus(const pp_calib *c, const pp_device *d, const pp_device *src,
                        const pp_device **out, int max)
{
    if (!c || d->is_mig || !pp_device_is_eager_pytorch_cpu(d)) return 0;
    int n = 0, fam = pp_cpu_vendor_family(d->vendor);
    double dist[PP_CALIB_MAX_COVER];
    if (max > PP_CALIB_MAX_COVER) max = PP_CALIB_MAX_COVER;
    for (int pass = fam ? 0 : 1; pass < 2; pass++) {
        int first = n; /* this pass's entries sort among themselves, after the pass before */
        for (int k = 0; k < c->n; k++) {
            const pp_device *s = c->e[k].dev;
            if (s == d || s == src || !pp_device_is_eager_pytorch_cpu(s) ||
                s->runtime_precision != d->runtime_precision ||
                (pass == 0) != (fam && pp_cpu_vendor_family(s->vendor) == fam))
                continue;
            double x = pp_device_cpu_distance(d, s);
            if (!isfinite(x)) continue;
            int at = n;
            while (at > first && dist[at - 1] > x) at--;
            if (at >= max) continue;
            int last = n < max ? n : max - 1;
            for (int j = last; j > at; j--) {
                out[j] = out[j - 1];
                dist[j] = dist[j - 1];
            }
            out[at] = s;
            dist[at] = x;
            if (n < max) n++;
        }
    }
    return n;
}

/* Whose layer models answer for d: d itself, its MIG parent, or the descriptor it names in
 * calibration_from (for a slice: its parent's calibration_from). */
static const pp_device *resolve_source(const pp_calib *c, const pp_device *d)
{
    const pp_device *cand[3] = {d, NULL, NULL};
    int n = 1;
    if (d->is_mig && d->parent) {
        cand[n++] = d->parent;
        if (d->parent->calibration_from)
            cand[n++] = pp_devices_find(c->db, d->parent->calibration_from);
    } else if (d->calibration_from) {
        cand[n++] = pp_devices_find(c->db, d->calibration_from);
    }
    for (int i = 0; i < n; i++)
        if (entry_of(c, cand[i])) return cand[i];
    return NULL;
}

/* The "data" line of a correction's manifest, for provenance, and its targets (1 when the manifest
 * cannot tell: pp_gnn_load will then say what is wrong with it). */
static char *gnn_data_text(const char *manifest, const char *dev, int *n_targets)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err e = {0};
    char out[1024];
    snprintf(out, sizeof out, "graph-level GNN correction of %s", dev);
    *n_targets = 1;
    if (pp_read_file(manifest, &buf, &len, &e) == PERFPRED_OK) {
        cJSON *j = cJSON_ParseWithLength((const char *)buf, len);
        const cJSON *data = j ? cJSON_GetObjectItemCaseSensitive(j, "data") : NULL;
        const cJSON *d2 = cJSON_IsObject(data) ? cJSON_GetObjectItemCaseSensitive(data, "data")
                                                : data;
        const cJSON *arch = j ? cJSON_GetObjectItemCaseSensitive(j, "architecture") : NULL;
        const cJSON *t = arch ? cJSON_GetObjectItemCaseSensitive(arch, "targets") : NULL;
        if (cJSON_IsNumber(t) && t->valueint >= 1 && t->valueint <= PP_GNN_MAX_TARGETS)
            *n_targets = t->valueint;
        const cJSON *ens = j ? cJSON_GetObjectItemCaseSensitive(j, "ensemble") : NULL;
        int members = 1 + (cJSON_IsArray(ens) ? cJSON_GetArraySize(ens) : 0);
        char es[48] = "";
        if (members > 1) snprintf(es, sizeof es, " (mean of %d GNNs)", members);
        if (cJSON_IsString(d2) && d2->valuestring[0])
            snprintf(out, sizeof out,
                     "layer sum x graph-level GNN correction%s of %s, trained on %s (other model "
                     "families extrapolate)",
                     es, dev, d2->valuestring);
        cJSON_Delete(j);
    }
    free(buf);
    return strdup(out);
}

/* Finds configs/artifacts/<name>/gnn-latency.{bin,json} of every whole device that has them and
 * reads their manifests' provenance; the weights wait for pp_calib_gnn. */
static perfpred_status find_gnns(pp_calib *c, const char *config_dir, pp_err *err)
{
    if (!(c->gnn = calloc((size_t)pp_devices_count(c->db) + 1, sizeof *c->gnn)))
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < pp_devices_count(c->db); i++) {
        const pp_device *d = pp_devices_at(c->db, i);
        if (d->is_mig) continue;
        char bin[4096], man[4096];
        snprintf(bin, sizeof bin, "%s/artifacts/%s/gnn-latency.bin", config_dir, d->name);
        snprintf(man, sizeof man, "%s/artifacts/%s/gnn-latency.json", config_dir, d->name);
        struct stat sb;
        if (stat(bin, &sb) != 0) continue;
        calib_gnn *g = &c->gnn[i];
        if (!(g->bin = strdup(bin)) || !(g->man = strdup(man)) ||
            !(g->text = gnn_data_text(man, d->name, &g->targets)))
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    return PERFPRED_OK;
}

/* A finite number of a JSON object within [lo, hi], or NAN. */
static double json_num_in(const cJSON *o, const char *key, double lo, double hi)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= lo &&
                   v->valuedouble <= hi
               ? v->valuedouble
               : NAN;
}

/* Loads configs/artifacts/<name>/overhead-latency.json (perfpred_calibrate_fit_overhead) of every
 * whole device that has one; a malformed file is an error naming it. */
static perfpred_status load_overheads(pp_calib *c, const char *config_dir, pp_err *err)
{
    int nd = pp_devices_count(c->db);
    if (!(c->ovh = calloc((size_t)nd + 1, sizeof *c->ovh)))
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nd; i++) {
        const pp_device *d = pp_devices_at(c->db, i);
        if (d->is_mig) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/artifacts/%s/overhead-latency.json", config_dir, d->name);
        struct stat sb;
        if (stat(path, &sb) != 0) continue;
        uint8_t *buf = NULL;
        size_t len = 0;
        perfpred_status st = pp_read_file(path, &buf, &len, err);
        if (st) return st;
        cJSON *j = cJSON_ParseWithLength((const char *)buf, len);
        free(buf);
        const cJSON *fmt = j ? cJSON_GetObjectItemCaseSensitive(j, "format") : NULL;
        const cJSON *data = j ? cJSON_GetObjectItemCaseSensitive(j, "data") : NULL;
        /* version 1 had no per-megabyte term, version 2 none for cold weights */
        double ver = j ? json_num_in(j, "version", 1, 3) : NAN;
        double sc =
            j ? json_num_in(j, "scale", PP_OVERHEAD_SCALE_MIN, PP_OVERHEAD_SCALE_MAX) : NAN;
        double pk = j ? json_num_in(j, "per_kernel_ms", 0, PP_OVERHEAD_TERM_MAX_MS) : NAN;
        double pm =
            ver == 1 ? 0 : j ? json_num_in(j, "per_mb_ms", 0, PP_OVERHEAD_TERM_MAX_MS) : NAN;
        double pw = ver < 3 ? 0
                    : j     ? json_num_in(j, "per_cold_weight_mb_ms", 0, PP_OVERHEAD_TERM_MAX_MS)
                            : NAN;
        double rows = j ? json_num_in(j, "rows", 2, 1e9) : NAN;
        const cJSON *over = j ? cJSON_GetObjectItemCaseSensitive(j, "layer_models_of") : NULL;
        if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "perfpred-overhead") != 0 ||
            !cJSON_IsString(data) || isnan(ver) || isnan(sc) || isnan(pk) || isnan(pm) ||
            isnan(pw) || isnan(rows)) {
            cJSON_Delete(j);
            return pp_err_set(err, PERFPRED_ERR_MODEL,
                              "%s: not a perfpred-overhead version 1 to 3 file (format, version, "
                              "scale in [0.05, 20], per_kernel_ms, (version 2 on) per_mb_ms and "
                              "(version 3) per_cold_weight_mb_ms in [0, 100], rows, data)", path);
        }
        char whose[1200];
        snprintf(whose, sizeof whose, "in-network overhead of %s, fitted on %.0f rows of %s",
                 d->name, rows, data->valuestring);
        c->ovh[i] = (calib_overhead){{sc, pk, pm, pw}, NULL, strdup(whose), NULL, 0};
        int over_ok = !cJSON_IsString(over) || (c->ovh[i].over = strdup(over->valuestring));
        cJSON_Delete(j);
        if (c->ovh[i].whose) c->ovh[i].text = overhead_text(c->ovh[i].w, d, whose);
        if (!c->ovh[i].text || !over_ok)
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    return PERFPRED_OK;
}

void pp_overhead_transfer(const double *w, const pp_device *from, const pp_device *to,
                          double *out)
{
    out[0] = w[0];
    out[1] = w[1];
    if (from->launch_overhead_us > 0 && to->launch_overhead_us > 0)
        out[1] *= to->launch_overhead_us / from->launch_overhead_us;
    double bw = pp_bandwidth_ratio(from, to);
    out[2] = w[2] * bw;
    out[3] = w[3] * bw;
}

/* d (at index i), which borrows the layer models of s and has no in-network correction of its
 * own, takes s's, scaled by the two descriptors (pp_overhead_transfer): the correction maps those
 * models' layers, timed alone on s, to a whole pass on s, and goes with them. A MIG slice answers
 * through its parent. -1 on OOM. */
static int transfer_overhead(pp_calib *c, const pp_device *d, const pp_device *s, int i)
{
    int si = device_index(c, s);
    if (s == d || d->is_mig || si < 0 || c->ovh[i].text || !c->ovh[si].text) return 0;
    calib_overhead *o = &c->ovh[i];
    pp_overhead_transfer(c->ovh[si].w, s, d, o->w);
    char whose[2400], pk[160], pm[160];
    if (s->launch_overhead_us > 0 && d->launch_overhead_us > 0)
        snprintf(pk, sizeof pk, "per kernel by the hosts' cost per op, %g -> %g us",
                 s->launch_overhead_us, d->launch_overhead_us);
    else
        snprintf(pk, sizeof pk, "per kernel as it is (a descriptor states no cost per op)");
    if (s->memory_bandwidth_gbs > 0 && d->memory_bandwidth_gbs > 0)
        snprintf(pm, sizeof pm, "per MB by memory bandwidth%s, x %.3g",
                 s->kind == PP_DEV_CPU && d->kind == PP_DEV_CPU ? " per core" : "",
                 pp_bandwidth_ratio(s, d));
    else
        snprintf(pm, sizeof pm, "per MB as it is (a descriptor states no bandwidth)");
    snprintf(whose, sizeof whose, "%s; scaled to this device: %s, %s", c->ovh[si].whose, pk, pm);
    o->transferred = 1;
    return (o->text = overhead_text(o->w, d, whose)) ? 0 : -1;
}

perfpred_status pp_calib_open(const pp_device_db *db, const char *config_dir, pp_calib **out,
                              pp_err *err)
{
    perfpred_status st_gnn;
    *out = NULL;
    pp_calib *c = calloc(1, sizeof *c);
    int nd = pp_devices_count(db);
    if (!c || !(c->e = calloc((size_t)nd + 1, sizeof *c->e))) {
        free(c);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    c->db = db;
    pthread_mutex_init(&c->gnn_lock, NULL);
    for (int i = 0; i < nd; i++) {
        const pp_device *d = pp_devices_at(db, i);
        if (d->is_mig) continue; /* slices answer through their parent */
        /* the descriptor's artifacts folder, else where `perfpred calibrate fit` writes:
         * configs/artifacts/<canonical name>/ */
        char dir[4096];
        if (d->artifacts_dir) snprintf(dir, sizeof dir, "%s/%s", config_dir, d->artifacts_dir);
        else snprintf(dir, sizeof dir, "%s/artifacts/%s", config_dir, d->name);
        pp_layer_models *lm = NULL;
        perfpred_status st = pp_layer_models_open(dir, 1, &lm, err);
        if (st == PERFPRED_ERR_IO) {
            /* a descriptor may name the folder before anything was calibrated into it */
            pp_err_clear(err);
            continue;
        }
        if (st) {
            pp_calib_close(c);
            return st;
        }
        c->e[c->n].dev = d;
        c->e[c->n].lm = lm;
        c->n++;
    }
    if ((st_gnn = find_gnns(c, config_dir, err)) || (st_gnn = load_overheads(c, config_dir, err))) {
        pp_calib_close(c);
        return st_gnn;
    }
    /* provenance texts, made once so that predictions only read them */
    c->src = calloc((size_t)nd + 1, sizeof *c->src);
    c->text = calloc((size_t)nd + 1, sizeof *c->text);
    if (!c->src || !c->text) {
        pp_calib_close(c);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nd; i++) {
        const pp_device *d = pp_devices_at(db, i);
        const pp_device *s = resolve_source(c, d), *near = s ? NULL : nearest_cpu(c, d, i);
        if (near) s = near;
        c->src[i] = s;
        if (!s) continue;
        const char *data = pp_layer_models_source(entry_of(c, s)->lm);
        char buf[1024];
        if (s == d) snprintf(buf, sizeof buf, "layer models of %s (%s)", d->name, data);
        else if (near)
            snprintf(buf, sizeof buf,
                     "layer models of %s (%s), %s (it names no calibration_from), scaled to this "
                     "device per core by Habitat's rule", s->name, data,
                     c->ovh[i].over && !strcmp(c->ovh[i].over, s->name)
                         ? "the calibrated CPU its own in-network correction was fitted over"
                         : "the calibrated CPU nearest to this descriptor's figures");
        else
            snprintf(buf, sizeof buf,
                     "layer models of %s (%s), scaled to %s by Habitat's rule", s->name, data,
                     d->is_mig ? "this MIG slice" : "this device");
        if (!(c->text[i] = strdup(buf)) || transfer_overhead(c, d, s, i)) {
            pp_calib_close(c);
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        }
    }
    *out = c;
    return PERFPRED_OK;
}

void pp_calib_close(pp_calib *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) pp_layer_models_free(c->e[i].lm);
    for (int i = 0; c->text && i < pp_devices_count(c->db); i++) free(c->text[i]);
    for (int i = 0; c->gnn && i < pp_devices_count(c->db); i++) {
        pp_gnn_free(c->gnn[i].model);
        free(c->gnn[i].text);
        free(c->gnn[i].bin);
        free(c->gnn[i].man);
    }
    free(c->gnn);
    pthread_mutex_destroy(&c->gnn_lock);
    for (int i = 0; c->ovh && i < pp_devices_count(c->db); i++) {
        free(c->ovh[i].text);
        free(c->ovh[i].whose);
        free(c->ovh[i].over);
    }
    free(c->ovh);
    free(c->text);
    free(c->src);
    free(c->e);
    free(c);
}

static const calib_entry *entry_of(const pp_calib *c, const pp_device *d)
{
    for (int i = 0; c && d && i < c->n; i++)
        if (c->e[i].dev == d) return &c->e[i];
    return NULL;
}

/* Position of d among the context's devices (the order of the per-device tables), or -1. */
static int device_index(const pp_calib *c, const pp_device *d)
{
    for (int i = 0; c && d && i < pp_devices_count(c->db); i++)
        if (pp_devices_at(c->db, i) == d) return i;
    return -1;
}

const pp_device *pp_calib_source_device(const pp_calib *c, const pp_device *d, const char **source)
{
    int i = device_index(c, d);
    if (i < 0) return NULL;
    if (source) *source = c->text[i];
    return c->src[i];
}

perfpred_status pp_calib_ready(const pp_calib *c, const pp_device *d, pp_err *err)
{
    const calib_entry *e = entry_of(c, d);
    return e ? pp_layer_models_ready(e->lm, err) : PERFPRED_OK;
}

int pp_calib_node_ms(const pp_calib *c, const pp_device *d, const pp_node_feat *f, double *ms)
{
    const calib_entry *e = entry_of(c, d);
    if (!e) return 0;
    pp_err err = {0};
    double v = 0;
    if (pp_layer_models_predict(e->lm, f, PP_LM_LATENCY, &v, &err) != PP_LM_OK) return 0;
    *ms = v;
    return 1;
}

double pp_calib_floor_ms(const pp_calib *c, const pp_device *d, pp_op_kind k)
{
    const calib_entry *e = entry_of(c, d);
    const pp_lm_entry *m = e ? pp_layer_models_entry(e->lm, k, PP_LM_LATENCY) : NULL;
    return m && m->base.floor_ms > 0 ? m->base.floor_ms : 0;
}

/* d's correction entry, or NULL when it has none */
static calib_gnn *gnn_of(const pp_calib *c, const pp_device *d)
{
    int i = c && c->gnn ? device_index(c, d) : -1;
    return i >= 0 && c->gnn[i].bin ? &c->gnn[i] : NULL;
}

int pp_calib_has_gnn(const pp_calib *c, const pp_device *d, const char **source, int *n_targets)
{
    const calib_gnn *g = gnn_of(c, d);
    if (!g) return 0;
    if (source) *source = g->text;
    if (n_targets) *n_targets = g->targets;
    return 1;
}

perfpred_status pp_calib_gnn(const pp_calib *c, const pp_device *d, const struct pp_gnn **out,
                             const char **source, pp_err *err)
{
    *out = NULL;
    calib_gnn *g = gnn_of(c, d); /* its lazily filled model is the context's state, not contents */
    if (!g) return PERFPRED_OK;
    pthread_mutex_lock(&((pp_calib *)c)->gnn_lock);
    if (!g->model && g->err.status == PERFPRED_OK) pp_gnn_load(g->bin, g->man, &g->model, &g->err);
    perfpred_status st = g->err.status;
    if (st != PERFPRED_OK && err) *err = g->err;
    *out = g->model;
    pthread_mutex_unlock(&((pp_calib *)c)->gnn_lock);
    if (source) *source = g->text;
    return st;
}

const struct pp_layer_models *pp_calib_own_models(const pp_calib *c, const pp_device *d)
{
    /* by name: d may come from another load of the same descriptors */
    const calib_entry *e = c && d ? entry_of(c, pp_devices_find(c->db, d->name)) : NULL;
    return e ? e->lm : NULL;
}

const char *pp_calib_overhead_answer(const pp_calib *c, const pp_device *d, double *w)
{
    int i = c && c->ovh ? device_index(c, d) : -1;
    if (i < 0 || !c->ovh[i].text) return NULL;
    if (w) memcpy(w, c->ovh[i].w, sizeof c->ovh[i].w);
    return c->ovh[i].text;
}

const char *pp_calib_overhead(const pp_calib *c, const pp_device *d, double *w)
{
    int i = c && c->ovh ? device_index(c, d) : -1;
    return i >= 0 && !c->ovh[i].transferred ? pp_calib_overhead_answer(c, d, w) : NULL;
}

double pp_overhead_cold_weight_bytes(const pp_device *d, const pp_graph *g, double bf,
                                     double weights_bytes, double activations_bytes)
{
    double llc = d ? d->l2_mb * 1048576.0 : 0, s = 0;
    if (!(llc > 0) || weights_bytes + activations_bytes <= llc) return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node_feat *f = &g->nodes[i].feat;
        if (f->param_bytes > 0 && (f->param_bytes + f->in_bytes + f->out_bytes) * bf <= llc)
            s += f->param_bytes * bf;
    }
    return s;
}

double pp_overhead_latency_ms(const double *w, double layer_ms, int n_kernels, double kernel_bytes,
                              double cold_weight_bytes)
{
    return w[0] * layer_ms + w[1] * n_kernels + (w[2] * kernel_bytes + w[3] * cold_weight_bytes) *
                                                    1e-6;
}
