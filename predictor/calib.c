/* predictor/calib.c: the calibrated side of a prediction: loads each descriptor's layer models
 * (configs/<artifacts>/manifest.json + .ubj regressors) once at context open, and answers which
 * device's models stand for a given device (itself, its MIG parent, or its calibration_from). */
#include <stdlib.h>
#include <string.h>

#include "layer_models/layer_models.h"
#include "predictor/calib.h"

typedef struct calib_entry {
    const pp_device *dev;
    pp_layer_models *lm;
} calib_entry;

struct pp_calib {
    const pp_device_db *db;
    int n;
    calib_entry *e;
    /* per device (pp_devices_at order): whose models answer, and the provenance text */
    const pp_device **src;
    char **text;
};

static const calib_entry *entry_of(const pp_calib *c, const pp_device *d);

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

perfpred_status pp_calib_open(const pp_device_db *db, const char *config_dir, pp_calib **out,
                              pp_err *err)
{
    *out = NULL;
    pp_calib *c = calloc(1, sizeof *c);
    int nd = pp_devices_count(db);
    if (!c || !(c->e = calloc((size_t)nd + 1, sizeof *c->e))) {
        free(c);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    c->db = db;
    for (int i = 0; i < nd; i++) {
        const pp_device *d = pp_devices_at(db, i);
        if (d->is_mig) continue; /* slices answer through their parent */
        /* the descriptor's artifacts folder, else where `perfpred calibrate fit` writes:
         * configs/artifacts/<canonical name>/ */
        char dir[4096];
        if (d->artifacts_dir) snprintf(dir, sizeof dir, "%s/%s", config_dir, d->artifacts_dir);
        else snprintf(dir, sizeof dir, "%s/artifacts/%s", config_dir, d->name);
        pp_layer_models *lm = NULL;
        perfpred_status st = pp_layer_models_load(dir, &lm, err);
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
    /* provenance texts, made once so that predictions only read them */
    c->src = calloc((size_t)nd + 1, sizeof *c->src);
    c->text = calloc((size_t)nd + 1, sizeof *c->text);
    if (!c->src || !c->text) {
        pp_calib_close(c);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nd; i++) {
        const pp_device *d = pp_devices_at(db, i);
        const pp_device *s = resolve_source(c, d);
        c->src[i] = s;
        if (!s) continue;
        const char *data = pp_layer_models_source(entry_of(c, s)->lm);
        char buf[1024];
        if (s == d) snprintf(buf, sizeof buf, "layer models of %s (%s)", d->name, data);
        else
            snprintf(buf, sizeof buf,
                     "layer models of %s (%s), scaled to %s by Habitat's rule", s->name, data,
                     d->is_mig ? "this MIG slice" : "this device");
        if (!(c->text[i] = strdup(buf))) {
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

const pp_device *pp_calib_source_device(const pp_calib *c, const pp_device *d, const char **source)
{
    if (!c || !d) return NULL;
    for (int i = 0; i < pp_devices_count(c->db); i++)
        if (pp_devices_at(c->db, i) == d) {
            if (source) *source = c->text[i];
            return c->src[i];
        }
    return NULL;
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
