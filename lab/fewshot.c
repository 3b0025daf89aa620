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
    perfpred_ctx *ctx;
    if ((st = pp_fit_net_open_ctx(p.config_dir, &ctx, err))) return st;
    const int nd = n_pretrain + 1;
    const char *dev[65];
    perfpred_device_info info[65];
    for (int d = 0; d < nd; d++) {
        const char *name = d == 0 ? target_device : pretrain_devices[d - 1];
        if (!name || perfpred_device_find(ctx, name, &info[d])) {
            perfpred_ctx_close(ctx);
            return pp_err_set(err, PERFPRED_ERR_DEVICE, "few-shot: unknown device '%s'",
                              name ? name : "(null)");
        }
        dev[d] = info[d].name;
    }
    fs_row *fr = malloc(((size_t)n_rows + 1) * sizeof *fr);
    int n_fr = 0, *shots = NULL, *evalr = NULL, *pre = NULL, *val = NULL, *ent = NULL;
    pp_gnn_graph *smp = NULL;
    float *glob = NULL;
    double *base = NULL, *meas = NULL, offset[65];
    uint64_t *shot_arch = NULL;
    pp_gnn *g = NULL;
    pp_fit_netsample_cache c;
    memset(&c, 0, sizeof c);
    const char *ref_dev = NULL;
    if (!fr) goto oom;
    /* a device is one (descriptor, batch): every row must share the target's batch */
    int64_t batch = -1;
    for (int i = 0; i < n_rows && batch < 0; i++) {
        perfpred_device_info ri;
        if (rows[i].device && !perfpred_device_find(ctx, rows[i].device, &ri) &&
            !strcmp(ri.name, dev[0]))
            batch = rows[i].batch;
    }
    for (int i = 0; i < n_rows; i++) {
        perfpred_device_info ri;
        if (!rows[i].device || rows[i].batch != batch ||
            perfpred_device_find(ctx, rows[i].device, &ri))
            continue;
        for (int d = 0; d < nd; d++)
            if (!strcmp(ri.name, dev[d])) {
                char key[600];
                arch_key(rows[i].model, key, sizeof key);
                fr[n_fr].row = i;
                fr[n_fr].dev = d;
                fr[n_fr].arch = pp_fit_net_hash(key, PP_FIT_NET_HASH0);
                n_fr++;
                break;
            }
    }
    /* the reference device whose layer times every sample carries: the first (target, then the
     * pretraining devices in order) whose first buildable row gets a layer sum */
    for (int d = 0; d < nd && !ref_dev; d++) {
        for (int k = 0; k < n_fr && !ref_dev; k++) {
            if (fr[k].dev != d) continue;
            int e = pp_fit_netsample_cache_get(&c, &rows[fr[k].row]);
            if (e < 0) goto oom;
            pp_err e2 = {0};
            st = pp_fit_netsample_build(ctx, &c.e[e], &rows[fr[k].row], p.table_path, dev[d],
                                        NULL, 0, &e2);
            if (st == PERFPRED_ERR_DEVICE) {
                st = PERFPRED_OK;
                break; /* this device has no layer sum */
            }
            if (st) {
                *err = e2;
                goto done;
            }
            if (c.e[e].state == PP_NS_OK) ref_dev = dev[d];
        }
        /* entries built on another device's layer times */
        if (!ref_dev) pp_fit_netsample_cache_free(&c);
    }
    if (!ref_dev) {
        st = pp_err_set(err, PERFPRED_ERR_DEVICE,
                        "few-shot: neither the target nor a pretraining device gives a layer sum");
        goto done;
    }
    rep->direct = strcmp(ref_dev, dev[0]) != 0;
    /* samples for every candidate row (held-out buckets: target evaluation; others: pretraining) */
    ent = malloc(((size_t)n_fr + 1) * sizeof *ent);
    meas = malloc(((size_t)n_fr + 1) * sizeof *meas);
    base = malloc(((size_t)n_fr + 1) * sizeof *base);
    if (!ent || !meas || !base) goto oom;
    /* pretraining rows: per device, the first max_train / n_pretrain architectures by hash */
    int per_dev = p.max_train / n_pretrain > 8 ? p.max_train / n_pretrain : 8;
    pp_fit_net_keyed *ord = malloc(((size_t)n_fr + 1) * sizeof *ord);
    if (!ord) goto oom;
    for (int k = 0; k < n_fr; k++) {
        ord[k].key = fr[k].arch ^ (p.gnn.seed * 0x9e3779b97f4a7c15ull);
        ord[k].idx = k;
    }
    qsort(ord, (size_t)n_fr, sizeof *ord, pp_fit_net_cmp_keyed);
    int taken[65] = {0};
    int *use = calloc((size_t)n_fr + 1, sizeof *use); /* 1 pretrain/shot candidate, 2 evaluation */
    if (!use) {
        free(ord);
        goto oom;
    }
    for (int q = 0; q < n_fr; q++) {
        int k = ord[q].idx, b = pp_fit_net_row_bucket(&rows[fr[k].row]);
        if (fr[k].dev == 0) use[k] = b < p.heldout_pct ? 2 : 3; /* 3: shot candidate, lazily */
        else if (b >= p.heldout_pct && taken[fr[k].dev] < per_dev) {
            use[k] = 1;
            taken[fr[k].dev]++;
        }
    }
    free(ord);
    for (int k = 0; k < n_fr; k++) {
        ent[k] = -1;
        if (!use[k] || use[k] == 3) continue;
        const pp_net_row *r = &rows[fr[k].row];
        int e = pp_fit_netsample_cache_get(&c, r);
        if (e < 0) {
            free(use);
            goto oom;
        }
        if ((st = pp_fit_netsample_build(ctx, &c.e[e], r, p.table_path, ref_dev, NULL, 0, err))) {
            free(use);
            goto done;
        }
        double lr = fs_ratio(&c, e, r);
        if (!isfinite(lr)) continue;
        ent[k] = e;
        meas[k] = r->latency_ms;
        base[k] = c.e[e].sum.layer_ms;
    }
    /* shots: the first n_shots target architectures (hash order) measured on every device */
    shot_arch = calloc((size_t)n_shots, sizeof *shot_arch);
    double (*shot_val)[65] = calloc((size_t)n_shots, sizeof *shot_val);
    shots = malloc((size_t)n_shots * sizeof *shots);
    if (!shot_arch || !shot_val || !shots) {
        free(use);
        free(shot_val);
        goto oom;
    }
    {
        pp_fit_net_keyed *tk = malloc(((size_t)n_fr + 1) * sizeof *tk);
        int nt = 0;
        if (!tk) {
            free(use);
            free(shot_val);
            goto oom;
        }
        for (int k = 0; k < n_fr; k++)
            if (fr[k].dev == 0 && use[k] == 3) {
                tk[nt].key = fr[k].arch ^ (p.gnn.seed * 0xd1b54a32d192ed03ull);
                tk[nt++].idx = k;
            }
        qsort(tk, (size_t)nt, sizeof *tk, pp_fit_net_cmp_keyed);
        for (int q = 0; q < nt && rep->n_shots < n_shots; q++) {
            int k = tk[q].idx, ok = 1;
            double v[65];
            const pp_net_row *rk = &rows[fr[k].row];
            int ek = pp_fit_netsample_cache_get(&c, rk);
            if (ek < 0) {
                free(tk);
                free(use);
                free(shot_val);
                goto oom;
            }
            if ((st = pp_fit_netsample_build(ctx, &c.e[ek], rk, p.table_path, ref_dev, NULL, 0,
                                             err))) {
                free(tk);
                free(use);
                free(shot_val);
                goto done;
            }
            v[0] = fs_ratio(&c, ek, rk);
            ok = isfinite(v[0]);
            for (int d = 1; d < nd && ok; d++) {
                ok = 0;
                for (int j = 0; j < n_fr; j++)
                    if (fr[j].dev == d && fr[j].arch == fr[k].arch) {
                        const pp_net_row *r = &rows[fr[j].row];
                        int e = pp_fit_netsample_cache_get(&c, r);
                        if (e < 0) {
                            free(tk);
                            free(use);
                            free(shot_val);
                            goto oom;
                        }
                        st = pp_fit_netsample_build(ctx, &c.e[e], r, p.table_path, ref_dev, NULL, 0,
                                                    err);
                        if (st) {
                            free(tk);
                            free(use);
                            free(shot_val);
                            goto done;
                        }
                        v[d] = fs_ratio(&c, e, r);
                        ok = isfinite(v[d]);
                        break;
                    }
            }
            if (!ok) continue;
            ent[k] = ek;
            meas[k] = rk->latency_ms;
            base[k] = c.e[ek].sum.layer_ms;
            use[k] = 1;
            shots[rep->n_shots] = k;
            shot_arch[rep->n_shots] = fr[k].arch;
            for (int d = 0; d < nd; d++) shot_val[rep->n_shots][d] = v[d];
            rep->n_shots++;
        }
        free(tk);
    }
    if (rep->n_shots < n_shots) {
        free(use);
        free(shot_val);
        st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                        "few-shot: only %d of %d shot architectures are measured on every device",
                        rep->n_shots, n_shots);
        goto done;
    }
    /* hardware embedding: each device's shot log-ratios, centred; offset = their mean */
    const int G = PP_FIT_NET_N_GLOBALS + n_shots;
    for (int d = 0; d < nd; d++) {
        double s = 0;
        for (int q = 0; q < n_shots; q++) s += shot_val[q][d];
        offset[d] = s / n_shots;
    }
    smp = calloc((size_t)n_fr + 1, sizeof *smp);
    glob = malloc(((size_t)n_fr + 1) * (size_t)G * sizeof *glob);
    pre = malloc(((size_t)n_fr + 1) * sizeof *pre);
    val = malloc(((size_t)n_fr + 1) * sizeof *val);
    evalr = malloc(((size_t)n_fr + 1) * sizeof *evalr);
    if (!smp || !glob || !pre || !val || !evalr) {
        free(use);
        free(shot_val);
        goto oom;
    }
    int n_pre = 0, n_val = 0, seen[65] = {0};
    for (int k = 0; k < n_fr; k++) {
        if (ent[k] < 0 || use[k] == 3) continue;
        const pp_fit_netsample *e = &c.e[ent[k]];
        int d = fr[k].dev;
        smp[k] = e->s;
        smp[k].mem = NULL;
        smp[k].n_globals = G;
        float *u = glob + (size_t)k * (size_t)G;
        for (int j = 0; j < PP_FIT_NET_N_GLOBALS; j++) u[j] = e->s.globals[j];
        /* the sample's own device figures, not the reference device's */
        u[4] = info[d].peak_tflops > 0 ? (float)log(info[d].peak_tflops) : 0.0f;
        u[5] = info[d].memory_bandwidth_gbs > 0 ? (float)log(info[d].memory_bandwidth_gbs) : 0.0f;
        for (int q = 0; q < n_shots; q++)
            u[PP_FIT_NET_N_GLOBALS + q] = (float)(shot_val[q][d] - offset[d]);
        smp[k].globals = u;
        memset(smp[k].mask, 0, sizeof smp[k].mask);
        smp[k].y[0] = (float)(fs_ratio(&c, ent[k], &rows[fr[k].row]) - offset[d]);
        smp[k].mask[0] = 1;
        if (d == 0) {
            if (use[k] == 2) evalr[rep->n_eval++] = k;
            continue;
        }
        if (!seen[d]++) rep->n_pretrain_devices++;
        /* validation: one pretraining row in ten, by architecture hash */
        if ((fr[k].arch >> 7) % 10 == 0) val[n_val++] = k;
        else pre[n_pre++] = k;
    }
    free(use);
    free(shot_val);
    rep->n_pretrain_rows = n_pre + n_val;
    if (n_pre < 2 || rep->n_eval < 2) {
        st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                        "few-shot: %d pretraining and %d evaluation rows", n_pre, rep->n_eval);
        goto done;
    }
    st = pp_gnn_new(PP_GNN_GRAPH_NODE_FEAT, PP_GNN_GRAPH_EDGE_FEAT, G, 1, &p.gnn, &g, err);
    if (!st) st = pp_gnn_train(g, smp, n_fr, pre, n_pre, val, n_val, NULL, err);
    if (!st) st = fs_metrics(g, smp, evalr, rep->n_eval, base, meas, offset[0], &rep->before, err);
    if (!st) st = fine_tune(g, smp, shots, n_shots, 60, p.gnn.lr * 0.5, 1e-3, err);
    if (!st) st = fs_metrics(g, smp, evalr, rep->n_eval, base, meas, offset[0], &rep->after, err);
    if (!st && !rep->direct) {
        double *ones = malloc(((size_t)rep->n_eval + 1) * sizeof *ones);
        double *ms = malloc(((size_t)rep->n_eval + 1) * sizeof *ms);
        if (!ones || !ms) st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        for (int i = 0; !st && i < rep->n_eval; i++) {
            ones[i] = base[evalr[i]];
            ms[i] = meas[evalr[i]];
        }
        if (!st) st = pp_measure_metrics(ones, ms, rep->n_eval, &rep->layer_sum, err);
        free(ones);
        free(ms);
    }
    pp_log(&p.log, PERFPRED_LOG_INFO,
           "few-shot %s: reference layer times from %s, %d pretraining rows on %d devices, %d "
           "shots, %d evaluation rows",
           dev[0], ref_dev, rep->n_pretrain_rows, rep->n_pretrain_devices, n_shots, rep->n_eval);
    goto done;
oom:
    st = pp_err_set(err, PERFPRED_ERR_NOMEM, "few-shot: out of memory");
done:
    rep->seconds_total = pp_now_s() - t0;
    pp_gnn_free(g);
    free(fr);
    free(shots);
    free(evalr);
    free(pre);
    free(val);
    free(ent);
    free(smp);
    free(glob);
    free(base);
    free(meas);
    free(shot_arch);
    pp_fit_netsample_cache_free(&c);
    perfpred_ctx_close(ctx);
    return st;
}
