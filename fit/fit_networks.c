/* fit/fit_networks.c: the graph-level correction of docs/networks.md. Each network row is
 * built (cached per model ref), predicted layer by layer, and turned into a GNN sample whose target
 * is log(measured / layer sum); the GNN is trained on held-in architectures (hash-bucket split),
 * judged on held-out ones against the layer sum alone and a GNN trained on log(measured), and
 * saved as out_dir/gnn-latency.{bin,json}. (The few-shot study that pretrains on other devices
 * lives in lab/fewshot.c.) */
#include "fit/fit.h"
#include "predictor/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* ------------------------------------------------------------------ samples ---- */

perfpred_status pp_fit_net_layer_times(const perfpred_ctx *ctx, const perfpred_model *m,
                                       const char *device, double *per_node_ms,
                                       pp_fit_net_sums *sums, pp_err *err)
{
    const pp_graph *g = pp_model_graph(m);
    int cap = g->n_nodes + 1, nk = 0;
    perfpred_kernel *k = malloc((size_t)cap * sizeof *k);
    if (!k) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", g->path);
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.layer_sum_only = 1; /* the correction is trained on (and applied to) the uncorrected sum */
    pp.kernels = k;
    pp.kernels_cap = cap;
    pp.n_kernels = &nk;
    perfpred_prediction pr;
    char msg[PP_ERR_MSG];
    perfpred_status st = perfpred_predict(ctx, m, device, &pp, &pr, msg, sizeof msg);
    if (st) {
        free(k);
        return pp_err_set(err, st, "%s", msg);
    }
    if (nk > cap || !isfinite(pr.latency_ms.value) || !(pr.latency_ms.value > 0)) {
        free(k);
        if (nk > cap) return pp_err_set(err, PERFPRED_ERR_INTERNAL, "%s: kernels > nodes", g->path);
        return pp_err_set(err, PERFPRED_ERR_DEVICE,
                          "%s: device '%s' gives no layer sum (%s): the correction multiplies one",
                          g->path, device, pr.latency_ms.source ? pr.latency_ms.source : "");
    }
    for (int i = 0; i < g->n_nodes; i++) per_node_ms[i] = 0.0;
    for (int i = 0; i < nk; i++)
        if (k[i].first_node >= 0 && k[i].first_node < g->n_nodes)
            per_node_ms[k[i].first_node] += k[i].latency_ms;
    free(k);
    sums->layer_ms = pr.latency_ms.value;
    sums->layer_mj = pr.energy_mj.value;
    sums->n_kernels = pr.n_kernels;
    sums->kernel_bytes = pr.kernel_bytes;
    sums->cold_weight_bytes = pr.cold_weight_bytes;
    return PERFPRED_OK;
}

/* The energy target's base: the layer sum's energy where the descriptor has a power model, else
 * the layer sum's latency (docs/networks.md). */
static int calibrated_energy(const pp_fit_net_sums *s)
{
    return isfinite(s->layer_mj) && s->layer_mj > 0;
}
static double energy_base(const pp_fit_net_sums *s)
{
    return calibrated_energy(s) ? s->layer_mj : s->layer_ms;
}

perfpred_status pp_fit_net_sample(const perfpred_ctx *ctx, const perfpred_model *m,
                                  const char *device, pp_gnn_graph *out, pp_fit_net_sums *sums,
                                  pp_err *err)
{
    memset(out, 0, sizeof *out);
    const pp_graph *g = pp_model_graph(m);
    perfpred_device_info info;
    if (perfpred_device_find(ctx, device, &info))
        return pp_err_set(err, PERFPRED_ERR_DEVICE, "unknown device '%s'", device);
    double *per = malloc(((size_t)g->n_nodes + 1) * sizeof *per);
    if (!per) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", g->path);
    perfpred_status st = pp_fit_net_layer_times(ctx, m, device, per, sums, err);
    if (!st)
        st = pp_gnn_sample_from(g, per, sums->layer_ms, info.peak_tflops, info.memory_bandwidth_gbs,
                                out, err);
    free(per);
    return st;
}

/* ---------------------------------------------------------------- parameters ---- */

pp_fit_net_params pp_fit_net_default_params(void)
{
    pp_fit_net_params p;
    memset(&p, 0, sizeof p);
    p.max_train = 2500;
    p.max_val = 400;
    p.max_heldout = 0;
    p.heldout_pct = 10;
    p.val_pct = 10;
    p.direct_ablation = 1;
    p.write_artifacts = 1;
    p.gnn = pp_gnn_default_params();
    p.gnn.lr = 2e-3;
    p.gnn.epochs = 60;
    p.gnn.batch = 32;
    p.gnn.patience = 15;
    p.gnn.nthreads = 2;
    p.ensemble = 1;
    return p;
}

/* Trains p->ensemble models on the same split, the i-th with seed gnn.seed + i, chained into one
 * ensemble (pp_gnn_forward averages them); rep gets the first member's training report. */
static perfpred_status train_ensemble(const pp_fit_net_params *p, int T,
                                      const pp_gnn_graph *samples,
                                      int n_s, const int *train, int n_train, const int *val,
                                      int n_val, pp_gnn **out, pp_gnn_report *rep, pp_err *err)
{
    *out = NULL;
    pp_gnn **tail = out;
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < p->ensemble && !st; i++) {
        pp_gnn_params gp = p->gnn;
        gp.seed = p->gnn.seed + (uint64_t)i;
        pp_gnn *g = NULL;
        st = pp_gnn_new(PP_GNN_GRAPH_NODE_FEAT, PP_GNN_GRAPH_EDGE_FEAT, PP_FIT_NET_N_GLOBALS, T,
                        &gp,
                        &g, err);
        if (!st) {
            *tail = g;
            tail = &g->next;
            pp_gnn_report r;
            st = pp_gnn_train(g, samples, n_s, train, n_train, val, n_val, &r, err);
            if (i == 0 && rep) *rep = r;
        }
    }
    if (st) {
        pp_gnn_free(*out);
        *out = NULL;
    }
    return st;
}

/* Split of a row: 2 held out, 1 validation, 0 training. With p->heldout_families the listed
 * families are held out and validation takes the other families' models whose name hashes below
 * val_pct (whole families stay unseen only where they are listed); else family hash buckets. */
static int row_split(const pp_net_row *r, const pp_fit_net_params *p)
{
    if (p->heldout_families && p->heldout_families[0]) {
        if (pp_measure_family_listed(p->heldout_families, r->family)) return 2;
        uint64_t h = pp_fnv1a64(r->model ? r->model : "", PP_FNV64_BASIS);
        return (int)(h % 100) < p->val_pct ? 1 : 0;
    }
    int b = pp_fit_net_row_bucket(r);
    return b < p->heldout_pct ? 2 : b < p->heldout_pct + p->val_pct ? 1 : 0;
}

/* Deterministic subset: rows ordered by a seeded hash of their model ref, first max kept. */
static int pick(const pp_net_row *rows, const int *idx, int n, int max, uint64_t seed, int *out)
{
    pp_fit_net_keyed *k = malloc(((size_t)n + 1) * sizeof *k);
    if (!k) return -1;
    for (int i = 0; i < n; i++) {
        k[i].key = pp_fnv1a64(rows[idx[i]].model,
                                   PP_FNV64_BASIS ^ (seed * 0x9e3779b97f4a7c15ull));
        k[i].idx = idx[i];
    }
    qsort(k, (size_t)n, sizeof *k, pp_fit_net_cmp_keyed);
    int m = (max > 0 && max < n) ? max : n;
    for (int i = 0; i < m; i++) out[i] = k[i].idx;
    free(k);
    return m;
}

/* ------------------------------------------------------------- the device fit ---- */

typedef struct fit_set {
    int *train, *val, *held;      /* entry-sample indices into the sample array */
    int n_train, n_val, n_held;
} fit_set;

/* Where a fit's held-out latency residuals go (p.heldout), with each sample's network name. */
typedef struct resid_sink {
    perfpred_heldout *h;         /* NULL: none */
    const pp_fit_netsample_cache *c;
    const int *ent_of_samp;
} resid_sink;

/* Metrics of the three ablation rows for target t on held-out samples; gated samples take
 * fallback[s] (NULL: the layer sum). Latency residuals of what the predictor answers go to sink,
 * path "gnn" or "gated". */
static perfpred_status eval_heldout(const pp_gnn *corr, const pp_gnn *direct,
                                    const pp_gnn_graph *samples, const double *base,
                                    const double *fallback, const double *meas_t, const int *held,
                                    int n_held, int t, const resid_sink *sink,
                                    pp_fit_net_target_report *tr, pp_err *err)
{
    double *p_sum = malloc(((size_t)n_held + 1) * 4 * sizeof(double));
    double *meas = malloc(((size_t)n_held + 1) * sizeof(double));
    if (!p_sum || !meas) {
        free(p_sum);
        free(meas);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    double *p_cor = p_sum + n_held, *p_dir = p_cor + n_held, *p_all = p_dir + n_held;
    int n = 0;
    tr->n_gated = 0;
    tr->spread_gate = t < corr->n_targets ? corr->spread_gate[t] : 0;
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < n_held && !st; i++) {
        int s = held[i];
        if (!samples[s].mask[t]) continue;
        double o[PP_GNN_MAX_TARGETS], lo[PP_GNN_MAX_TARGETS], hi[PP_GNN_MAX_TARGETS];
        double od[PP_GNN_MAX_TARGETS];
        if ((st = pp_gnn_forward_range(corr, &samples[s], o, lo, hi, err))) break;
        p_sum[n] = base[s];
        p_all[n] = base[s] * exp(o[t]);
        /* as the predictor answers where the members disagree past the gate on any target */
        int agree = pp_gnn_agrees_all(corr, lo, hi);
        p_cor[n] = agree ? p_all[n] : fallback ? fallback[s] : base[s];
        tr->n_gated += !agree;
        if (direct) {
            if ((st = pp_gnn_forward(direct, &samples[s], od, err))) break;
            p_dir[n] = exp(od[t]);
        }
        meas[n] = meas_t[s];
        if (sink && sink->h && t == 0 &&
            perfpred_heldout_add(sink->h, agree ? "gnn" : "gated",
                                 sink->c->e[sink->ent_of_samp[s]].model, meas[n], p_cor[n]) ==
                PERFPRED_ERR_NOMEM)
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        n++;
    }
    if (!st && n > 0) {
        st = pp_measure_metrics(p_sum, meas, n, &tr->layer_sum, err);
        if (!st) st = pp_measure_metrics(p_cor, meas, n, &tr->corrected, err);
        if (!st) st = pp_measure_metrics(p_all, meas, n, &tr->ungated, err);
        if (!st && direct) st = pp_measure_metrics(p_dir, meas, n, &tr->direct, err);
    }
    tr->n_heldout = n;
    free(p_sum);
    free(meas);
    return st;
}

/* What the predictor answers on a gated row of a device that ships an in-network overhead
 * correction: that correction. Held-out rows must not fit it, so it is fitted here, as
 * perfpred_calibrate_fit_overhead fits it, on the device's rows outside the held-out ones (every
 * one, whether or not a cap left it out of training), into lt->fallback_w, and *fallback (the
 * caller frees) gets its latency for each of the n_samp samples, whose entries ent_of_samp names.
 * lt->n_fallback_fit = 0 and *fallback = NULL when the device ships none (gated rows then take the
 * layer sum) or too few rows fit. */
static perfpred_status fit_gated_fallback(const perfpred_ctx *ctx, const perfpred_device_info *info,
                                          const pp_net_row *rows, int n_rows,
                                          const pp_fit_net_params *p, pp_fit_netsample_cache *c,
                                          const int *ent_of_samp, int n_samp,
                                          pp_fit_net_target_report *lt, double **fallback,
                                          pp_err *err)
{
    lt->n_fallback_fit = 0;
    *fallback = NULL;
    if (!info->overhead_correction) return PERFPRED_OK;
    perfpred_eval_point *pt = calloc((size_t)n_rows + 1, sizeof *pt);
    if (!pt) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = PERFPRED_OK;
    int n = 0;
    for (int i = 0; i < n_rows && !st; i++) {
        const pp_net_row *r = &rows[i];
        perfpred_device_info ri;
        if (!r->device || perfpred_device_find(ctx, r->device, &ri) || strcmp(ri.name, info->name) ||
            row_split(r, p) == 2 || !(r->latency_ms > 0))
            continue;
        int e = pp_fit_netsample_cache_get(c, r);
        if (e < 0) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            break;
        }
        st = pp_fit_netsample_build(ctx, &c->e[e], r, p->table_path, info->name, NULL, 0, err);
        if (st) break;
        const pp_fit_netsample *E = &c->e[e];
        if (E->state != PP_NS_OK || !(E->sum.layer_ms > 0)) continue;
        pt[n].measured_ms = r->latency_ms;
        pt[n].predicted_ms = E->sum.layer_ms;
        pt[n].n_kernels = E->sum.n_kernels;
        pt[n].kernel_bytes = E->sum.kernel_bytes;
        pt[n].cold_weight_bytes = E->sum.cold_weight_bytes;
        n++;
    }
    const double *w = lt->fallback_w;
    if (!st && pp_fit_overhead_rows(pt, NULL, n, lt->fallback_w) == 0) {
        lt->n_fallback_fit = n;
        if (!(*fallback = malloc(((size_t)n_samp + 1) * sizeof **fallback))) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        } else {
            for (int i = 0; i < n_samp; i++) {
                const pp_fit_net_sums *s = &c->e[ent_of_samp[i]].sum;
                (*fallback)[i] =
                    pp_overhead_latency_ms(w, s->layer_ms, s->n_kernels, s->kernel_bytes,
                                           s->cold_weight_bytes);
            }
        }
    }
    free(pt);
    return st;
}

static int count_target(const pp_gnn_graph *s, const int *idx, int n, int t)
{
    int c = 0;
    for (int i = 0; i < n; i++) c += s[idx[i]].mask[t] != 0;
    return c;
}

static void add_metrics(cJSON *o, const char *name, const pp_metrics *m)
{
    cJSON *x = cJSON_AddObjectToObject(o, name);
    if (!x) return;
    cJSON_AddNumberToObject(x, "n", m->n);
    cJSON_AddNumberToObject(x, "mape_pct", m->mape_pct);
    cJSON_AddNumberToObject(x, "rmspe_pct", m->rmspe_pct);
    cJSON_AddNumberToObject(x, "within10_pct", m->within10_pct);
    cJSON_AddNumberToObject(x, "spearman", isnan(m->spearman) ? -2.0 : m->spearman);
}

/* out_dir/gnn-latency.eval.json: the held-out ablation and how the inputs were formed. */
static perfpred_status write_eval(const char *path, const char *device,
                                  const perfpred_device_info *info, const pp_fit_net_report *r,
                                  const pp_fit_net_params *p, pp_err *err)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(root, "format", "perfpred-gnn-eval");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "device", device);
    cJSON_AddStringToObject(root, "data", p->data_desc ? p->data_desc : "");
    cJSON *in = cJSON_AddObjectToObject(root, "inputs");
    if (in) {
        cJSON_AddStringToObject(in, "node_features",
                                "pp_gnn_sample_from_graph: pp_feat_vector, one-hot op kind, "
                                "log(1 + 1000 * per-node ms); per-node ms = perfpred_predict "
                                "kernel latency on its first_node, 0 elsewhere");
        cJSON_AddStringToObject(in, "globals",
                                "pp_gnn_sample_globals: log batch, log1p MACs, log1p params, log1p "
                                "activation bytes, log peak TFLOP/s, log bandwidth GB/s, log layer "
                                "sum ms");
        cJSON_AddNumberToObject(in, "peak_tflops", info->peak_tflops);
        cJSON_AddNumberToObject(in, "bandwidth_gbs", info->memory_bandwidth_gbs);
        cJSON_AddStringToObject(in, "layer_sum_source", info->calibrated_latency
                                                            ? "calibrated layer models"
                                                            : "roofline estimate (uncalibrated)");
        cJSON_AddStringToObject(in, "apply", "latency = layer_sum * exp(output[0]); energy (J) = "
                                             "energy_base_mJ * exp(output[1]) / 1000");
        cJSON_AddStringToObject(in, "energy_base", r->energy_base ? r->energy_base : "");
    }
    if (p->heldout_families && p->heldout_families[0])
        cJSON_AddStringToObject(root, "heldout_families", p->heldout_families);
    cJSON_AddNumberToObject(root, "ensemble", p->ensemble);
    cJSON_AddNumberToObject(root, "rows", r->n_rows);
    cJSON_AddNumberToObject(root, "rows_used", r->n_used);
    cJSON_AddNumberToObject(root, "rows_constant", r->n_constant);
    cJSON_AddNumberToObject(root, "rows_failed", r->n_failed);
    static const char *const tn[2] = {"latency", "energy"};
    cJSON *ts = cJSON_AddObjectToObject(root, "heldout");
    for (int t = 0; ts && t < 2; t++) {
        const pp_fit_net_target_report *tr = &r->target[t];
        if (!tr->present) continue;
        cJSON *o = cJSON_AddObjectToObject(ts, tn[t]);
        if (!o) continue;
        cJSON_AddNumberToObject(o, "n_train", tr->n_train);
        cJSON_AddNumberToObject(o, "n_val", tr->n_val);
        add_metrics(o, "layer_sum", &tr->layer_sum);
        if (tr->direct.n) add_metrics(o, "gnn_direct", &tr->direct);
        if (tr->spread_gate > 0) {
            add_metrics(o, "corrected_every_row", &tr->ungated);
            cJSON_AddNumberToObject(o, "spread_gate", tr->spread_gate);
            cJSON_AddNumberToObject(o, "rows_gated", tr->n_gated);
            cJSON *fb = cJSON_AddObjectToObject(o, "gated_rows_take");
            if (fb && tr->n_fallback_fit) {
                cJSON_AddStringToObject(fb, "what", "the overhead correction, fitted on the "
                                        "device's rows outside the held-out ones");
                cJSON_AddNumberToObject(fb, "rows", tr->n_fallback_fit);
                cJSON_AddNumberToObject(fb, "scale", tr->fallback_w[0]);
                cJSON_AddNumberToObject(fb, "per_kernel_ms", tr->fallback_w[1]);
                cJSON_AddNumberToObject(fb, "per_mb_ms", tr->fallback_w[2]);
                cJSON_AddNumberToObject(fb, "per_cold_weight_mb_ms", tr->fallback_w[3]);
            } else if (fb) {
                cJSON_AddStringToObject(fb, "what", "the layer sum");
            }
        }
        add_metrics(o, "layer_sum_x_correction", &tr->corrected);
    }
    cJSON_AddNumberToObject(root, "train_seconds", r->seconds_train);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = pp_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return st;
}

/* The working state of one pp_fit_networks call: the device's rows split three ways, the samples
 * built from them (one cache entry per network) and the models trained on them; net_fit_free
 * releases it all. */
typedef struct net_fit {
    int *split_idx[3], split_n[3]; /* row indices per split: 0 training, 1 validation, 2 held out */
    int *chosen, n_chosen, *ent_of; /* the rows kept, in split order, and their cache entries */
    pp_fit_netsample_cache c;
    pp_gnn_graph *samples, *direct_s; /* per used row: the correction's and the direct GNN's */
    double *base, *ebase, *meas[2], *fallback; /* layer sums (ebase: energy), measurements */
    int *samp_of_ent, *ent_of_samp, *lists;
    fit_set fs;                     /* the used rows' samples per split (into lists) */
    int n_s, have_energy, any_calib_energy;
    pp_gnn *corr, *dir;
} net_fit;

static void net_fit_free(net_fit *W)
{
    pp_gnn_free(W->corr);
    pp_gnn_free(W->dir);
    free(W->samples);
    free(W->direct_s);
    free(W->base);
    free(W->meas[0]);
    free(W->meas[1]);
    free(W->samp_of_ent);
    free(W->ent_of_samp);
    free(W->fallback);
    free(W->lists);
    free(W->chosen);
    free(W->ent_of);
    for (int s = 0; s < 3; s++) free(W->split_idx[s]);
    pp_fit_netsample_cache_free(&W->c);
}

static perfpred_status net_oom(pp_err *err)
{
    return pp_err_set(err, PERFPRED_ERR_NOMEM, "fit networks: out of memory");
}

/* The arguments and parameters pp_fit_networks refuses, before it opens anything. */
static perfpred_status check_net_params(const char *device, const pp_net_row *rows, int n_rows,
                                        const pp_fit_net_params *p, pp_err *err)
{
    if (!device || !rows || n_rows < 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "fit networks: NULL device or rows");
    if (p->heldout_pct < 1 || p->val_pct < 1 || p->heldout_pct + p->val_pct > 90)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "fit networks: heldout_pct %d and val_pct %d must be >= 1 and sum <= 90",
                          p->heldout_pct, p->val_pct);
    perfpred_status st = pp_gnn_check_params(&p->gnn, err);
    if (st) return st;
    if (p->ensemble < 1 || p->ensemble > PP_FIT_NET_MAX_ENSEMBLE)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "fit networks: ensemble %d must be 1..%d", p->ensemble,
                          PP_FIT_NET_MAX_ENSEMBLE);
    return PERFPRED_OK;
}

/* rows of the device, split by family bucket (row_split), each split capped by a seeded pick */
static perfpred_status split_device_rows(const perfpred_ctx *ctx, const char *dev,
                                         const pp_net_row *rows, int n_rows,
                                         const pp_fit_net_params *p, net_fit *W,
                                         pp_fit_net_report *rep, pp_err *err)
{
    for (int s = 0; s < 3; s++)
        if (!(W->split_idx[s] = malloc(((size_t)n_rows + 1) * sizeof(int)))) return net_oom(err);
    for (int i = 0; i < n_rows; i++) {
        perfpred_device_info ri;
        if (!rows[i].device || perfpred_device_find(ctx, rows[i].device, &ri) ||
            strcmp(ri.name, dev) != 0)
            continue;
        rep->n_rows++;
        int s = row_split(&rows[i], p);
        W->split_idx[s][W->split_n[s]++] = i;
    }
    if (W->split_n[0] == 0 || W->split_n[2] == 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "fit networks: device '%s' has %d training and %d held-out rows among "
                          "%d given; need both",
                          dev, W->split_n[0], W->split_n[2], n_rows);
    int caps[3] = {p->max_train, p->max_val, p->max_heldout};
    for (int s = 0; s < 3; s++) {
        int m = pick(rows, W->split_idx[s], W->split_n[s], caps[s], p->gnn.seed + (uint64_t)s,
                     W->split_idx[s]);
        if (m < 0) return net_oom(err);
        W->split_n[s] = m;
    }
    return PERFPRED_OK;
}

/* samples, one per distinct network: each kept row's cache entry, built on the device */
static perfpred_status build_net_samples(const perfpred_ctx *ctx, const char *dev,
                                         const pp_net_row *rows, const pp_fit_net_params *p,
                                         net_fit *W, pp_fit_net_report *rep, pp_err *err)
{
    double ts0 = pp_now_s();
    W->n_chosen = W->split_n[0] + W->split_n[1] + W->split_n[2];
    W->chosen = malloc(((size_t)W->n_chosen + 1) * sizeof *W->chosen);
    W->ent_of = malloc(((size_t)W->n_chosen + 1) * sizeof *W->ent_of);
    if (!W->chosen || !W->ent_of) return net_oom(err);
    int k = 0;
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < W->split_n[s]; i++) W->chosen[k++] = W->split_idx[s][i];
    for (int i = 0; i < W->n_chosen; i++) {
        const pp_net_row *r = &rows[W->chosen[i]];
        int e = pp_fit_netsample_cache_get(&W->c, r);
        if (e < 0) return net_oom(err);
        W->ent_of[i] = e;
        perfpred_status st = pp_fit_netsample_build(ctx, &W->c.e[e], r, p->table_path, dev,
                                                    rep->first_failure, sizeof rep->first_failure,
                                                    err);
        if (st) return st;
    }
    rep->seconds_samples = pp_now_s() - ts0;
    return PERFPRED_OK;
}

/* Row r's sample at index at: a shallow copy of its entry's arrays (the cache owns them) with the
 * row's targets, log(measured / layer sum) for the correction and log(measured) for the direct
 * ablation, energy beside latency where the row measures it. */
static void set_row_sample(net_fit *W, const pp_net_row *r, int ent, int at)
{
    const pp_fit_netsample *e = &W->c.e[ent];
    pp_gnn_graph *g = &W->samples[at];
    *g = e->s;
    g->mem = NULL; /* the cache owns the arrays */
    memset(g->mask, 0, sizeof g->mask);
    W->base[at] = e->sum.layer_ms;
    W->ent_of_samp[at] = ent;
    g->y[0] = (float)log(r->latency_ms / e->sum.layer_ms);
    g->mask[0] = 1;
    W->meas[0][at] = r->latency_ms;
    if (isfinite(r->energy_j) && r->energy_j > 0) {
        double eb = energy_base(&e->sum);
        W->any_calib_energy |= calibrated_energy(&e->sum);
        W->ebase[at] = eb;
        W->meas[1][at] = r->energy_j * 1e3;
        g->y[1] = (float)log(r->energy_j * 1e3 / eb);
        g->mask[1] = 1;
        W->have_energy = 1;
    }
    W->direct_s[at] = *g;
    W->direct_s[at].y[0] = (float)log(r->latency_ms);
    if (g->mask[1]) W->direct_s[at].y[1] = (float)log(r->energy_j * 1e3);
}

/* per-row samples of the rows whose network built (constant and failed ones counted), in split
 * order, and the training, validation and held-out lists over them; too few is an error */
static perfpred_status form_samples(const char *dev, const pp_net_row *rows, net_fit *W,
                                    pp_fit_net_report *rep, pp_err *err)
{
    size_t n_chosen = (size_t)W->n_chosen;
    W->samples = calloc(n_chosen + 1, sizeof *W->samples);
    W->direct_s = calloc(n_chosen + 1, sizeof *W->direct_s);
    W->base = calloc((n_chosen + 1) * 2, sizeof *W->base);
    W->meas[0] = calloc(n_chosen + 1, sizeof(double));
    W->meas[1] = calloc(n_chosen + 1, sizeof(double));
    W->samp_of_ent = malloc(((size_t)W->c.n + 1) * sizeof(int));
    W->ent_of_samp = malloc((n_chosen + 1) * sizeof(int));
    if (!W->samples || !W->direct_s || !W->base || !W->meas[0] || !W->meas[1] ||
        !W->samp_of_ent || !W->ent_of_samp)
        return net_oom(err);
    W->ebase = W->base + n_chosen + 1; /* energy base in mJ */
    fit_set *fs = &W->fs;
    W->lists = malloc((n_chosen + 1) * sizeof(int));
    if (!W->lists) return net_oom(err);
    fs->train = W->lists;
    int n_s = 0, pos = 0;
    for (int s = 0; s < 3; s++) {
        int *dst = W->lists + n_s, cnt = 0;
        for (int i = 0; i < W->split_n[s]; i++, pos++) {
            const pp_fit_netsample *e = &W->c.e[W->ent_of[pos]];
            if (e->state == PP_NS_CONSTANT) {
                rep->n_constant++;
                continue;
            }
            if (e->state != PP_NS_OK) {
                rep->n_failed++;
                continue;
            }
            set_row_sample(W, &rows[W->chosen[pos]], W->ent_of[pos], n_s + cnt);
            cnt++;
        }
        if (s == 0) fs->n_train = cnt;
        if (s == 1) {
            fs->val = dst;
            fs->n_val = cnt;
        }
        if (s == 2) {
            fs->held = dst;
            fs->n_held = cnt;
        }
        for (int i = 0; i < cnt; i++) dst[i] = n_s + i;
        n_s += cnt;
    }
    W->n_s = n_s;
    rep->n_used = n_s;
    rep->energy_base = !W->have_energy ? NULL
                       : W->any_calib_energy
                           ? "the predictor's energy (descriptor power model)"
                           : "layer-sum latency x 1 W (the descriptor has no power model): the "
                             "correction carries the board's average power";
    int seen_n = 0;
    for (int i = 0; i < W->c.n; i++) W->samp_of_ent[i] = 0;
    for (int i = 0; i < W->n_chosen; i++)
        if (W->c.e[W->ent_of[i]].state == PP_NS_OK && !W->samp_of_ent[W->ent_of[i]]++) seen_n++;
    rep->n_archs = seen_n;
    if (fs->n_train < 2 || fs->n_held < 1)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "fit networks: '%s': %d usable training and %d held-out rows (%d "
                          "constant, %d failed%s%s)",
                          dev, fs->n_train, fs->n_held, rep->n_constant, rep->n_failed,
                          rep->first_failure[0] ? ": " : "", rep->first_failure);
    return PERFPRED_OK;
}

/* Trains the correction (and the direct ablation) on the training rows, validation rows for early
 * stopping and the ensemble's gate, and judges both on the held-out rows, gated rows taking what
 * the predictor would answer for them. */
static perfpred_status train_and_evaluate(const perfpred_ctx *ctx,
                                          const perfpred_device_info *info,
                                          const pp_net_row *rows, int n_rows,
                                          const pp_fit_net_params *p, net_fit *W,
                                          pp_fit_net_report *rep, pp_err *err)
{
    const fit_set *fs = &W->fs;
    perfpred_status st;
    if ((st = fit_gated_fallback(ctx, info, rows, n_rows, p, &W->c, W->ent_of_samp, W->n_s,
                                 &rep->target[0], &W->fallback, err)))
        return st;
    int T = W->have_energy ? 2 : 1;
    double tt0 = pp_now_s();
    st = train_ensemble(p, T, W->samples, W->n_s, fs->train, fs->n_train, fs->val, fs->n_val,
                        &W->corr, &rep->gnn, err);
    if (!st) st = pp_gnn_set_spread_gate(W->corr, W->samples, fs->val, fs->n_val, err);
    rep->seconds_train = pp_now_s() - tt0;
    if (!st && p->direct_ablation) {
        tt0 = pp_now_s();
        st = train_ensemble(p, T, W->direct_s, W->n_s, fs->train, fs->n_train, fs->val,
                            fs->n_val, &W->dir, &rep->gnn_direct, err);
        rep->seconds_train_direct = pp_now_s() - tt0;
    }
    for (int t = 0; !st && t < T; t++) {
        pp_fit_net_target_report *tr = &rep->target[t];
        tr->present = 1;
        tr->n_train = count_target(W->samples, fs->train, fs->n_train, t);
        tr->n_val = count_target(W->samples, fs->val, fs->n_val, t);
        resid_sink sink = {p->heldout, &W->c, W->ent_of_samp};
        st = eval_heldout(W->corr, W->dir, W->samples, t == 0 ? W->base : W->ebase,
                          t == 0 ? W->fallback : NULL, W->meas[t], fs->held, fs->n_held, t,
                          &sink, tr, err);
    }
    pp_log(&p->log, PERFPRED_LOG_INFO,
           "fit networks %s: %d rows, %d used (%d train, %d val, %d held out), %d constant, %d "
           "failed; samples %.1f s, training %.1f s + %.1f s",
           info->name, rep->n_rows, rep->n_used, fs->n_train, fs->n_val, fs->n_held,
           rep->n_constant, rep->n_failed, rep->seconds_samples, rep->seconds_train,
           rep->seconds_train_direct);
    return st;
}

/* out_dir/gnn-latency.{bin,json} with the provenance of the data and of the split, and the
 * held-out ablation beside them (gnn-latency.eval.json). */
static perfpred_status write_net_artifacts(const char *dev, const perfpred_device_info *info,
                                           const pp_fit_net_params *p, const net_fit *W,
                                           const char *out_dir, pp_fit_net_report *rep,
                                           pp_err *err)
{
    if (!out_dir) return pp_err_set(err, PERFPRED_ERR_IO, "fit networks: no artifacts folder");
    perfpred_status st = pp_mkdir_p(out_dir, err);
    if (st) return st;
    const fit_set *fs = &W->fs;
    char split[1024], evalp[1100];
    if (p->heldout_families && p->heldout_families[0])
        snprintf(split, sizeof split,
                 "held-out families: %.400s (%d rows, never trained on); validation "
                 "(early stopping): models of the other families whose name hashes below "
                 "%d %% (%d rows); training: the rest (%d rows), at most %d",
                 p->heldout_families, fs->n_held, p->val_pct, fs->n_val, fs->n_train,
                 p->max_train);
    else
        snprintf(split, sizeof split,
                 "held-out architectures: family hash buckets [0, %d) (%d rows, never "
                 "trained on); validation (early stopping): buckets [%d, %d) (%d rows); "
                 "training: the rest (%d rows), at most %d, chosen by seeded hash of the "
                 "model ref",
                 p->heldout_pct, fs->n_held, p->heldout_pct, p->heldout_pct + p->val_pct,
                 fs->n_val, fs->n_train, p->max_train);
    pp_gnn_provenance prov = {p->data_desc ? p->data_desc : "", split,
                              {"latency", W->have_energy ? "energy" : NULL, NULL}};
    snprintf(rep->weights_path, sizeof rep->weights_path, "%s/gnn-latency.bin", out_dir);
    snprintf(rep->manifest_path, sizeof rep->manifest_path, "%s/gnn-latency.json", out_dir);
    snprintf(evalp, sizeof evalp, "%s/gnn-latency.eval.json", out_dir);
    st = pp_gnn_save(W->corr, rep->weights_path, rep->manifest_path, &prov, err);
    if (!st) st = write_eval(evalp, dev, info, rep, p, err);
    return st;
}

perfpred_status pp_fit_networks(const char *device, const pp_net_row *rows, int n_rows,
                                const pp_fit_net_params *params, const char *out_dir,
                                pp_fit_net_report *report, pp_err *err)
{
    pp_fit_net_params p = params ? *params : pp_fit_net_default_params();
    pp_fit_net_report rep_local, *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof *rep);
    double t0 = pp_now_s();
    perfpred_status st = check_net_params(device, rows, n_rows, &p, err);
    if (st) return st;
    perfpred_ctx *ctx;
    if ((st = pp_fit_net_open_ctx(p.config_dir, &ctx, err))) return st;
    perfpred_device_info info;
    if (perfpred_device_find(ctx, device, &info)) {
        perfpred_ctx_close(ctx);
        return pp_err_set(err, PERFPRED_ERR_DEVICE, "fit networks: unknown device '%s'", device);
    }
    const char *dev = info.name;
    net_fit W;
    memset(&W, 0, sizeof W);
    st = split_device_rows(ctx, dev, rows, n_rows, &p, &W, rep, err);
    if (!st) st = build_net_samples(ctx, dev, rows, &p, &W, rep, err);
    if (!st) st = form_samples(dev, rows, &W, rep, err);
    if (!st) st = train_and_evaluate(ctx, &info, rows, n_rows, &p, &W, rep, err);
    if (!st && p.write_artifacts) st = write_net_artifacts(dev, &info, &p, &W, out_dir, rep, err);
    rep->seconds_total = pp_now_s() - t0;
    net_fit_free(&W);
    perfpred_ctx_close(ctx);
    return st;
}

/* ------------------------------------------------------- judging a saved artifact ---- */

perfpred_status pp_fit_networks_eval(const char *device, const pp_net_row *rows, int n_rows,
                                     const pp_fit_net_params *params, const char *artifact_dir,
                                     pp_fit_net_report *report, pp_err *err)
{
    pp_fit_net_params p = params ? *params : pp_fit_net_default_params();
    pp_fit_net_report rep_local, *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof *rep);
    double t0 = pp_now_s();
    if (!device || !rows || !artifact_dir || n_rows < 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "eval networks: NULL argument");
    snprintf(rep->weights_path, sizeof rep->weights_path, "%s/gnn-latency.bin", artifact_dir);
    snprintf(rep->manifest_path, sizeof rep->manifest_path, "%s/gnn-latency.json", artifact_dir);
    pp_gnn *g = NULL;
    perfpred_status st = pp_gnn_load(rep->weights_path, rep->manifest_path, &g, err);
    if (st) return st;
    if (g->n_globals != PP_FIT_NET_N_GLOBALS || g->n_feat != PP_GNN_GRAPH_NODE_FEAT) {
        st = pp_err_set(err, PERFPRED_ERR_MODEL,
                        "%s: %d globals and %d node features, the correction takes %d and %d",
                        rep->weights_path, g->n_globals, g->n_feat, PP_FIT_NET_N_GLOBALS,
                        PP_GNN_GRAPH_NODE_FEAT);
        pp_gnn_free(g);
        return st;
    }
    perfpred_ctx *ctx;
    if ((st = pp_fit_net_open_ctx(p.config_dir, &ctx, err))) {
        pp_gnn_free(g);
        return st;
    }
    perfpred_device_info info;
    pp_fit_netsample_cache c;
    memset(&c, 0, sizeof c);
    pp_gnn_graph *smp = NULL;
    double *base = NULL, *meas[2] = {NULL, NULL}, *fallback = NULL;
    int *held = NULL, *ent_of_samp = NULL, n = 0, have_energy = 0;
    if (perfpred_device_find(ctx, device, &info)) {
        st = pp_err_set(err, PERFPRED_ERR_DEVICE, "eval networks: unknown device '%s'", device);
        goto done;
    }
    smp = calloc((size_t)n_rows + 1, sizeof *smp);
    base = calloc(((size_t)n_rows + 1) * 2, sizeof *base);
    meas[0] = calloc((size_t)n_rows + 1, sizeof(double));
    meas[1] = calloc((size_t)n_rows + 1, sizeof(double));
    held = malloc(((size_t)n_rows + 1) * sizeof *held);
    ent_of_samp = malloc(((size_t)n_rows + 1) * sizeof *ent_of_samp);
    if (!smp || !base || !meas[0] || !meas[1] || !held || !ent_of_samp) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "eval networks: out of memory");
        goto done;
    }
    double *ebase = base + n_rows + 1;
    int n_held = 0;
    for (int i = 0; i < n_rows; i++) {
        const pp_net_row *r = &rows[i];
        perfpred_device_info ri;
        if (!r->device || perfpred_device_find(ctx, r->device, &ri) || strcmp(ri.name, info.name))
            continue;
        rep->n_rows++;
        if (row_split(r, &p) == 2) held[n_held++] = i; /* held-out families only */
    }
    /* the subset pp_fit_networks evaluates with the same max_heldout and seed */
    if ((n_held = pick(rows, held, n_held, p.max_heldout, p.gnn.seed + 2, held)) < 0) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "eval networks: out of memory");
        goto done;
    }
    for (int h = 0; h < n_held; h++) {
        const pp_net_row *r = &rows[held[h]];
        int e = pp_fit_netsample_cache_get(&c, r);
        if (e < 0) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "eval networks: out of memory");
            goto done;
        }
        if ((st = pp_fit_netsample_build(ctx, &c.e[e], r, p.table_path, info.name,
                                         rep->first_failure, sizeof rep->first_failure, err)))
            goto done;
        if (c.e[e].state == PP_NS_CONSTANT) rep->n_constant++;
        if (c.e[e].state == PP_NS_FAILED) rep->n_failed++;
        if (c.e[e].state != PP_NS_OK) continue;
        smp[n] = c.e[e].s;
        smp[n].mem = NULL;
        memset(smp[n].mask, 0, sizeof smp[n].mask);
        smp[n].mask[0] = 1;
        base[n] = c.e[e].sum.layer_ms;
        ent_of_samp[n] = e;
        meas[0][n] = r->latency_ms;
        if (g->n_targets > 1 && isfinite(r->energy_j) && r->energy_j > 0) {
            ebase[n] = energy_base(&c.e[e].sum);
            meas[1][n] = r->energy_j * 1e3;
            smp[n].mask[1] = 1;
            have_energy = 1;
        }
        n++;
    }
    for (int i = 0; i < n; i++) held[i] = i;
    rep->n_used = n;
    if (n < 1) {
        st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                        "eval networks: no held-out row of '%s' to judge (%d rows, %d constant, "
                        "%d failed)",
                        info.name, rep->n_rows, rep->n_constant, rep->n_failed);
        goto done;
    }
    if ((st = fit_gated_fallback(ctx, &info, rows, n_rows, &p, &c, ent_of_samp, n,
                                 &rep->target[0], &fallback, err)))
        goto done;
    for (int t = 0; t < (have_energy ? 2 : 1) && !st; t++) {
        rep->target[t].present = 1;
        resid_sink sink = {p.heldout, &c, ent_of_samp};
        st = eval_heldout(g, NULL, smp, t == 0 ? base : ebase, t == 0 ? fallback : NULL, meas[t],
                          held, n, t, &sink, &rep->target[t], err);
    }
done:
    rep->seconds_total = pp_now_s() - t0;
    free(smp);
    free(base);
    free(meas[0]);
    free(meas[1]);
    free(held);
    free(ent_of_samp);
    free(fallback);
    pp_fit_netsample_cache_free(&c);
    perfpred_ctx_close(ctx);
    pp_gnn_free(g);
    return st;
}
