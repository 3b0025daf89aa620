/* lab/fewshot.c: few-shot calibration of a new device in HELP's setting (docs/networks.md, "Few-shot:
 * a phone from 20 measurements"): a GNN pretrained on other devices' NAS rows, its globals carrying
 * a hardware embedding, fine-tuned on a handful of the target's measurements. A study, not product:
 * it links the library's internals (fit/fit.h: the sample cache it shares with
 * fit/fit_networks.c) and ships nothing. */
#include "lab/fewshot.h"
#include "predictor/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- few-shot ---- */

/* The architecture a row names, without deployment options: "nb201:<cell>@cifar10". */
static void arch_key(const char *model, char *out, size_t n)
{
    size_t l = strcspn(model, ";");
    if (!pp_net_ref_is_builtin(model)) l = strlen(model);
    if (l >= n) l = n - 1;
    memcpy(out, model, l);
    out[l] = '\0';
}

typedef struct fs_row {
    int row;          /* index into rows */
    int dev;          /* 0 = target, 1.. = pretrain devices */
    uint64_t arch;    /* hash of arch_key */
} fs_row;

/* log(measured / reference layer sum) of row r on its entry, NaN when unusable. */
static double fs_ratio(const pp_fit_netsample_cache *c, int ent, const pp_net_row *r)
{
    const pp_fit_netsample *e = &c->e[ent];
    if (e->state != PP_NS_OK || !(e->sum.layer_ms > 0)) return NAN;
    return log(r->latency_ms / e->sum.layer_ms);
}

/* Fine-tuning on the shots: Adam from the pretrained weights with an L2 pull back to them
 * (w -= lr (mhat / (sqrt(vhat) + eps) + pull (w - w0))), full batch, a fixed number of steps. */
static perfpred_status fine_tune(pp_gnn *g, const pp_gnn_graph *s, const int *idx, int n, int steps,
                                 double lr, double pull, pp_err *err)
{
    size_t np = g->n_params;
    float *w0 = malloc(np * sizeof *w0), *m = calloc(np, sizeof *m), *v = calloc(np, sizeof *v);
    if (!w0 || !m || !v) {
        free(w0);
        free(m);
        free(v);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "fine-tune: out of memory");
    }
    memcpy(w0, g->w, np * sizeof *w0);
    perfpred_status st = PERFPRED_OK;
    for (int t = 1; t <= steps && !st; t++) {
        double loss;
        if ((st = pp_gnn_loss_grad(g, s, idx, n, &loss, err))) break;
        double c1 = 1.0 / (1.0 - pow(0.9, t)), c2 = 1.0 / (1.0 - pow(0.999, t));
        for (size_t i = 0; i < np; i++) {
            float gr = g->grad[i];
            m[i] = 0.9f * m[i] + 0.1f * gr;
            v[i] = 0.999f * v[i] + 0.001f * gr * gr;
            double step = (m[i] * c1) / (sqrt(v[i] * c2) + 1e-8) + pull * (g->w[i] - w0[i]);
            g->w[i] -= (float)(lr * step);
        }
    }
    free(w0);
    free(m);
    free(v);
    return st;
}

static perfpred_status fs_metrics(const pp_gnn *g, const pp_gnn_graph *s, const int *idx, int n,
                                  const double *base, const double *meas, double offset,
                                  pp_metrics *out, pp_err *err)
{
    double *pred = malloc(((size_t)n + 1) * sizeof *pred), *ms = malloc(((size_t)n + 1) * sizeof *ms);
    if (!pred || !ms) {
        free(pred);
        free(ms);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < n && !st; i++) {
        double o[PP_GNN_MAX_TARGETS];
        st = pp_gnn_forward(g, &s[idx[i]], o, err);
        pred[i] = base[idx[i]] * exp(o[0] + offset);
        ms[i] = meas[idx[i]];
    }
    if (!st) st = pp_measure_metrics(pred, ms, n, out, err);
    free(pred);
    free(ms);
    return st;
}

/* The working state of one lab_fewshot_fit call. Device 0 is the target, 1.. the pretraining
 * devices; fr lists the rows of those devices at the target's batch, and the per-candidate arrays
 * (ent, meas, base, use, smp) are indexed like fr. */
typedef struct fewshot {
    const pp_net_row *rows;
    const pp_fit_net_params *p;
    perfpred_ctx *ctx;
    int nd, n_shots;
    const char *dev[65];
    perfpred_device_info info[65];
    const char *ref_dev;      /* whose layer times every sample carries */
    fs_row *fr;
    int n_fr;
    pp_fit_netsample_cache c;
    int *ent;                 /* cache entry of a usable candidate, else -1 */
    double *meas, *base;      /* measured latency and reference layer sum */
    int *use;                 /* 1 pretraining or shot, 2 evaluation, 3 shot candidate */
    uint64_t *shot_arch;
    double (*shot_val)[65];   /* each shot's log-ratio on every device */
    int *shots;
    double offset[65];        /* each device's mean shot log-ratio */
    pp_gnn_graph *smp;
    float *glob;              /* the samples' globals with the hardware embedding */
    int *pre, *val, *evalr, n_pre, n_val;
    pp_gnn *g;
} fewshot;

/* Frees what the fit holds: use and shot_val first, as the fit drops them once the samples are
 * formed, then the rest in the order the fit always freed it. */
static void fewshot_free(fewshot *F)
{
    free(F->use);
    free(F->shot_val);
    pp_gnn_free(F->g);
    free(F->fr);
    free(F->shots);
    free(F->evalr);
    free(F->pre);
    free(F->val);
    free(F->ent);
    free(F->smp);
    free(F->glob);
    free(F->base);
    free(F->meas);
    free(F->shot_arch);
    pp_fit_netsample_cache_free(&F->c);
}

static perfpred_status fs_oom(pp_err *err)
{
    return pp_err_set(err, PERFPRED_ERR_NOMEM, "few-shot: out of memory");
}

/* The rows the study uses: those of the target and the pretraining devices at the target's batch
 * (a device is one (descriptor, batch)), each with its device and architecture hash. */
static void gather_rows(fewshot *F, int n_rows)
{
    const pp_net_row *rows = F->rows;
    int64_t batch = -1;
    for (int i = 0; i < n_rows && batch < 0; i++) {
        perfpred_device_info ri;
        if (rows[i].device && !perfpred_device_find(F->ctx, rows[i].device, &ri) &&
            !strcmp(ri.name, F->dev[0]))
            batch = rows[i].batch;
    }
    for (int i = 0; i < n_rows; i++) {
        perfpred_device_info ri;
        if (!rows[i].device || rows[i].batch != batch ||
            perfpred_device_find(F->ctx, rows[i].device, &ri))
            continue;
        for (int d = 0; d < F->nd; d++)
            if (!strcmp(ri.name, F->dev[d])) {
                char key[600];
                arch_key(rows[i].model, key, sizeof key);
                F->fr[F->n_fr].row = i;
                F->fr[F->n_fr].dev = d;
                F->fr[F->n_fr].arch = pp_fnv1a64(key, PP_FNV64_BASIS);
                F->n_fr++;
                break;
            }
    }
}

/* the reference device whose layer times every sample carries: the first (target, then the
 * pretraining devices in order) whose first buildable row gets a layer sum */
static perfpred_status pick_reference(fewshot *F, pp_err *err)
{
    for (int d = 0; d < F->nd && !F->ref_dev; d++) {
        for (int k = 0; k < F->n_fr && !F->ref_dev; k++) {
            if (F->fr[k].dev != d) continue;
            const pp_net_row *r = &F->rows[F->fr[k].row];
            int e = pp_fit_netsample_cache_get(&F->c, r);
            if (e < 0) return fs_oom(err);
            pp_err e2 = {0};
            perfpred_status st = pp_fit_netsample_build(F->ctx, &F->c.e[e], r, F->p->table_path,
                                                        F->dev[d], NULL, 0, &e2);
            if (st == PERFPRED_ERR_DEVICE) break; /* this device has no layer sum */
            if (st) {
                *err = e2;
                return st;
            }
            if (F->c.e[e].state == PP_NS_OK) F->ref_dev = F->dev[d];
        }
        /* entries built on another device's layer times */
        if (!F->ref_dev) pp_fit_netsample_cache_free(&F->c);
    }
    if (F->ref_dev) return PERFPRED_OK;
    return pp_err_set(err, PERFPRED_ERR_DEVICE,
                      "few-shot: neither the target nor a pretraining device gives a layer sum");
}

/* What each row is for: the target's rows in held-out buckets evaluate, its others are shot
 * candidates (built lazily); pretraining rows: per device, the first max_train / n_pretrain
 * architectures by hash, outside the held-out buckets. */
static perfpred_status assign_uses(fewshot *F, int n_pretrain, pp_err *err)
{
    const pp_fit_net_params *p = F->p;
    int per_dev = p->max_train / n_pretrain > 8 ? p->max_train / n_pretrain : 8;
    pp_fit_net_keyed *ord = malloc(((size_t)F->n_fr + 1) * sizeof *ord);
    if (!ord) return fs_oom(err);
    for (int k = 0; k < F->n_fr; k++) {
        ord[k].key = F->fr[k].arch ^ (p->gnn.seed * 0x9e3779b97f4a7c15ull);
        ord[k].idx = k;
    }
    qsort(ord, (size_t)F->n_fr, sizeof *ord, pp_fit_net_cmp_keyed);
    int taken[65] = {0};
    F->use = calloc((size_t)F->n_fr + 1, sizeof *F->use);
    if (!F->use) {
        free(ord);
        return fs_oom(err);
    }
    for (int q = 0; q < F->n_fr; q++) {
        int k = ord[q].idx, b = pp_fit_net_row_bucket(&F->rows[F->fr[k].row]);
        if (F->fr[k].dev == 0) F->use[k] = b < p->heldout_pct ? 2 : 3; /* 3: shot candidate */
        else if (b >= p->heldout_pct && taken[F->fr[k].dev] < per_dev) {
            F->use[k] = 1;
            taken[F->fr[k].dev]++;
        }
    }
    free(ord);
    return PERFPRED_OK;
}

/* Samples of the pretraining and evaluation rows on the reference device's layer times; a row
 * without a usable log-ratio keeps ent -1. */
static perfpred_status build_candidates(fewshot *F, pp_err *err)
{
    for (int k = 0; k < F->n_fr; k++) {
        F->ent[k] = -1;
        if (!F->use[k] || F->use[k] == 3) continue;
        const pp_net_row *r = &F->rows[F->fr[k].row];
        int e = pp_fit_netsample_cache_get(&F->c, r);
        if (e < 0) return fs_oom(err);
        perfpred_status st = pp_fit_netsample_build(F->ctx, &F->c.e[e], r, F->p->table_path,
                                                    F->ref_dev, NULL, 0, err);
        if (st) return st;
        double lr = fs_ratio(&F->c, e, r);
        if (!isfinite(lr)) continue;
        F->ent[k] = e;
        F->meas[k] = r->latency_ms;
        F->base[k] = F->c.e[e].sum.layer_ms;
    }
    return PERFPRED_OK;
}

/* Target candidate k's log-ratio (its entry in *ek) and that of the same architecture on every
 * pretraining device, in v[]; *ok = 0 where one is missing or unusable. */
static perfpred_status shot_ratios(fewshot *F, int k, int *ek, double *v, int *ok, pp_err *err)
{
    const pp_net_row *rk = &F->rows[F->fr[k].row];
    *ek = pp_fit_netsample_cache_get(&F->c, rk);
    if (*ek < 0) return fs_oom(err);
    perfpred_status st = pp_fit_netsample_build(F->ctx, &F->c.e[*ek], rk, F->p->table_path,
                                                F->ref_dev, NULL, 0, err);
    if (st) return st;
    v[0] = fs_ratio(&F->c, *ek, rk);
    *ok = isfinite(v[0]);
    for (int d = 1; d < F->nd && *ok; d++) {
        *ok = 0;
        for (int j = 0; j < F->n_fr; j++)
            if (F->fr[j].dev == d && F->fr[j].arch == F->fr[k].arch) {
                const pp_net_row *r = &F->rows[F->fr[j].row];
                int e = pp_fit_netsample_cache_get(&F->c, r);
                if (e < 0) return fs_oom(err);
                st = pp_fit_netsample_build(F->ctx, &F->c.e[e], r, F->p->table_path, F->ref_dev,
                                            NULL, 0, err);
                if (st) return st;
                v[d] = fs_ratio(&F->c, e, r);
                *ok = isfinite(v[d]);
                break;
            }
    }
    return PERFPRED_OK;
}

/* shots: the first n_shots target architectures (hash order) measured on every device */
static perfpred_status pick_shots(fewshot *F, lab_fewshot_report *rep, pp_err *err)
{
    int n_shots = F->n_shots;
    F->shot_arch = calloc((size_t)n_shots, sizeof *F->shot_arch);
    F->shot_val = calloc((size_t)n_shots, sizeof *F->shot_val);
    F->shots = malloc((size_t)n_shots * sizeof *F->shots);
    if (!F->shot_arch || !F->shot_val || !F->shots) return fs_oom(err);
    pp_fit_net_keyed *tk = malloc(((size_t)F->n_fr + 1) * sizeof *tk);
    int nt = 0;
    if (!tk) return fs_oom(err);
    for (int k = 0; k < F->n_fr; k++)
        if (F->fr[k].dev == 0 && F->use[k] == 3) {
            tk[nt].key = F->fr[k].arch ^ (F->p->gnn.seed * 0xd1b54a32d192ed03ull);
            tk[nt++].idx = k;
        }
    qsort(tk, (size_t)nt, sizeof *tk, pp_fit_net_cmp_keyed);
    for (int q = 0; q < nt && rep->n_shots < n_shots; q++) {
        int k = tk[q].idx, ek, ok = 1;
        double v[65];
        perfpred_status st = shot_ratios(F, k, &ek, v, &ok, err);
        if (st) {
            free(tk);
            return st;
        }
        if (!ok) continue;
        F->ent[k] = ek;
        F->meas[k] = F->rows[F->fr[k].row].latency_ms;
        F->base[k] = F->c.e[ek].sum.layer_ms;
        F->use[k] = 1;
        F->shots[rep->n_shots] = k;
        F->shot_arch[rep->n_shots] = F->fr[k].arch;
        for (int d = 0; d < F->nd; d++) F->shot_val[rep->n_shots][d] = v[d];
        rep->n_shots++;
    }
    free(tk);
    if (rep->n_shots < n_shots)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "few-shot: only %d of %d shot architectures are measured on every device",
                          rep->n_shots, n_shots);
    return PERFPRED_OK;
}

/* The samples with their globals: the row's own device figures and the hardware embedding (each
 * device's shot log-ratios, centred; offset = their mean), targets centred by the same offset;
 * the target's held-out rows evaluate, one pretraining row in ten validates. */
static perfpred_status embed_samples(fewshot *F, lab_fewshot_report *rep, pp_err *err)
{
    int n_shots = F->n_shots, n_fr = F->n_fr;
    const int G = PP_FIT_NET_N_GLOBALS + n_shots;
    for (int d = 0; d < F->nd; d++) {
        double s = 0;
        for (int q = 0; q < n_shots; q++) s += F->shot_val[q][d];
        F->offset[d] = s / n_shots;
    }
    F->smp = calloc((size_t)n_fr + 1, sizeof *F->smp);
    F->glob = malloc(((size_t)n_fr + 1) * (size_t)G * sizeof *F->glob);
    F->pre = malloc(((size_t)n_fr + 1) * sizeof *F->pre);
    F->val = malloc(((size_t)n_fr + 1) * sizeof *F->val);
    F->evalr = malloc(((size_t)n_fr + 1) * sizeof *F->evalr);
    if (!F->smp || !F->glob || !F->pre || !F->val || !F->evalr) return fs_oom(err);
    int seen[65] = {0};
    for (int k = 0; k < n_fr; k++) {
        if (F->ent[k] < 0 || F->use[k] == 3) continue;
        const pp_fit_netsample *e = &F->c.e[F->ent[k]];
        int d = F->fr[k].dev;
        pp_gnn_graph *s = &F->smp[k];
        *s = e->s;
        s->mem = NULL;
        s->n_globals = G;
        float *u = F->glob + (size_t)k * (size_t)G;
        for (int j = 0; j < PP_FIT_NET_N_GLOBALS; j++) u[j] = e->s.globals[j];
        /* the sample's own device figures, not the reference device's */
        u[4] = F->info[d].peak_tflops > 0 ? (float)log(F->info[d].peak_tflops) : 0.0f;
        u[5] = F->info[d].memory_bandwidth_gbs > 0 ? (float)log(F->info[d].memory_bandwidth_gbs)
                                                   : 0.0f;
        for (int q = 0; q < n_shots; q++)
            u[PP_FIT_NET_N_GLOBALS + q] = (float)(F->shot_val[q][d] - F->offset[d]);
        s->globals = u;
        memset(s->mask, 0, sizeof s->mask);
        s->y[0] = (float)(fs_ratio(&F->c, F->ent[k], &F->rows[F->fr[k].row]) - F->offset[d]);
        s->mask[0] = 1;
        if (d == 0) {
            if (F->use[k] == 2) F->evalr[rep->n_eval++] = k;
            continue;
        }
        if (!seen[d]++) rep->n_pretrain_devices++;
        /* validation: one pretraining row in ten, by architecture hash */
        if ((F->fr[k].arch >> 7) % 10 == 0) F->val[F->n_val++] = k;
        else F->pre[F->n_pre++] = k;
    }
    return PERFPRED_OK;
}

/* Pretrains, judges on the evaluation rows, fine-tunes on the shots and judges again; the layer
 * sum alone beside them where the target has its own. */
static perfpred_status pretrain_and_adapt(fewshot *F, lab_fewshot_report *rep, pp_err *err)
{
    const pp_fit_net_params *p = F->p;
    const int G = PP_FIT_NET_N_GLOBALS + F->n_shots;
    perfpred_status st =
        pp_gnn_new(PP_GNN_GRAPH_NODE_FEAT, PP_GNN_GRAPH_EDGE_FEAT, G, 1, &p->gnn, &F->g, err);
    if (!st)
        st = pp_gnn_train(F->g, F->smp, F->n_fr, F->pre, F->n_pre, F->val, F->n_val, NULL, err);
    if (!st)
        st = fs_metrics(F->g, F->smp, F->evalr, rep->n_eval, F->base, F->meas, F->offset[0],
                        &rep->before, err);
    if (!st) st = fine_tune(F->g, F->smp, F->shots, F->n_shots, 60, p->gnn.lr * 0.5, 1e-3, err);
    if (!st)
        st = fs_metrics(F->g, F->smp, F->evalr, rep->n_eval, F->base, F->meas, F->offset[0],
                        &rep->after, err);
    if (!st && !rep->direct) {
        double *ones = malloc(((size_t)rep->n_eval + 1) * sizeof *ones);
        double *ms = malloc(((size_t)rep->n_eval + 1) * sizeof *ms);
        if (!ones || !ms) st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        for (int i = 0; !st && i < rep->n_eval; i++) {
            ones[i] = F->base[F->evalr[i]];
            ms[i] = F->meas[F->evalr[i]];
        }
        if (!st) st = pp_measure_metrics(ones, ms, rep->n_eval, &rep->layer_sum, err);
        free(ones);
        free(ms);
    }
    pp_log(&p->log, PERFPRED_LOG_INFO,
           "few-shot %s: reference layer times from %s, %d pretraining rows on %d devices, %d "
           "shots, %d evaluation rows",
           F->dev[0], F->ref_dev, rep->n_pretrain_rows, rep->n_pretrain_devices, F->n_shots,
           rep->n_eval);
    return st;
}

perfpred_status lab_fewshot_fit(const char *target_device, int n_shots,
                                const char *const *pretrain_devices, int n_pretrain,
                                const pp_net_row *rows, int n_rows,
                                const pp_fit_net_params *params, lab_fewshot_report *report,
                                pp_err *err)
{
    pp_fit_net_params p = params ? *params : pp_fit_net_default_params();
    lab_fewshot_report rep_local, *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof *rep);
    double t0 = pp_now_s();
    if (!target_device || !rows || n_shots < 2 || n_shots > 256 || n_pretrain < 1 ||
        n_pretrain > 64 || !pretrain_devices)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "few-shot: need a target, 2..256 shots and 1..64 pretraining devices");
    perfpred_status st = pp_gnn_check_params(&p.gnn, err);
    if (st) return st;
    fewshot F;
    memset(&F, 0, sizeof F);
    F.rows = rows;
    F.p = &p;
    F.n_shots = n_shots;
    if ((st = pp_fit_net_open_ctx(p.config_dir, &F.ctx, err))) return st;
    F.nd = n_pretrain + 1;
    for (int d = 0; d < F.nd; d++) {
        const char *name = d == 0 ? target_device : pretrain_devices[d - 1];
        if (!name || perfpred_device_find(F.ctx, name, &F.info[d])) {
            perfpred_ctx_close(F.ctx);
            return pp_err_set(err, PERFPRED_ERR_DEVICE, "few-shot: unknown device '%s'",
                              name ? name : "(null)");
        }
        F.dev[d] = F.info[d].name;
    }
    F.fr = malloc(((size_t)n_rows + 1) * sizeof *F.fr);
    if (!F.fr) {
        st = fs_oom(err);
        goto done;
    }
    gather_rows(&F, n_rows);
    if ((st = pick_reference(&F, err))) goto done;
    rep->direct = strcmp(F.ref_dev, F.dev[0]) != 0;
    /* samples for every candidate row (held-out buckets: target evaluation; others: pretraining) */
    F.ent = malloc(((size_t)F.n_fr + 1) * sizeof *F.ent);
    F.meas = malloc(((size_t)F.n_fr + 1) * sizeof *F.meas);
    F.base = malloc(((size_t)F.n_fr + 1) * sizeof *F.base);
    if (!F.ent || !F.meas || !F.base) {
        st = fs_oom(err);
        goto done;
    }
    if ((st = assign_uses(&F, n_pretrain, err)) || (st = build_candidates(&F, err)) ||
        (st = pick_shots(&F, rep, err)) || (st = embed_samples(&F, rep, err)))
        goto done;
    free(F.use);
    free(F.shot_val);
    F.use = NULL;
    F.shot_val = NULL;
    rep->n_pretrain_rows = F.n_pre + F.n_val;
    if (F.n_pre < 2 || rep->n_eval < 2) {
        st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                        "few-shot: %d pretraining and %d evaluation rows", F.n_pre, rep->n_eval);
        goto done;
    }
    st = pretrain_and_adapt(&F, rep, err);
done:
    rep->seconds_total = pp_now_s() - t0;
    fewshot_free(&F);
    perfpred_ctx_close(F.ctx);
    return st;
}
