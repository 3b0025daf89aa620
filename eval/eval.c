/* eval/eval.c: `perfpred eval`: predictions against measurements. Layer rows are rebuilt as
 * single-node graphs (the features a model node would have) and predicted through the public
 * predictor, next to the descriptor's roofline; network rows load their ONNX graph at the row's
 * batch and input shapes and are predicted whole. Metrics per op kind or model family, overall,
 * and the measurements' own run-to-run spread beside them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval.h"
#include "graph/builders.h"
#include "predictor/calib.h"
#include "predictor/predictor.h"

static void copy_trunc(char *dst, size_t n, const char *src)
{
    size_t k = strlen(src);
    if (k >= n) k = n - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
}

static void add_msg(perfpred_eval_report *r, const char *path, int line, const char *msg)
{
    if (r->n_msgs >= PERFPRED_REPORT_MSGS) return;
    char buf[1400];
    snprintf(buf, sizeof buf, "%s:%d: %s", path, line, msg);
    copy_trunc(r->msgs[r->n_msgs++], sizeof r->msgs[0], buf);
}

typedef struct eval_ctx {
    const perfpred_eval_params *p;
    perfpred_ctx *ctx;
    pp_device_db *db;
    const pp_device *dev;
    pp_arena *a;
    perfpred_eval_report *rep;
    const char **group_names;   /* distinct groups, in report order */
    int n_group_names;
    int *point_group;           /* group index of each point */
} eval_ctx;

static int row_device_matches(const eval_ctx *E, const char *name)
{
    return pp_devices_find(E->db, name) == E->dev;
}

/* Predicts row `line` of `path` with model m (freed here) into *pred; 0, with the row counted as
 * failed and its reason kept, when there is no usable latency. */
static int predict_row(eval_ctx *E, perfpred_model *m, const perfpred_predict_params *pp,
                       const char *path, int line, perfpred_prediction *pred)
{
    char msg[1024];
    perfpred_status ps = perfpred_predict(E->ctx, m, E->dev->name, pp, pred, msg, sizeof msg);
    perfpred_model_free(m);
    if (ps == PERFPRED_OK && pred->latency_ms.prov != PERFPRED_PROV_UNAVAILABLE &&
        isfinite(pred->latency_ms.value))
        return 1;
    E->rep->n_failed++;
    add_msg(E->rep, path, line,
            ps != PERFPRED_OK ? msg : "no latency: the descriptor lacks roofline figures");
    return 0;
}

/* ------------------------------------------------------------------- layer rows ---- */

static void layer_label(const pp_layer_row *r, char *out, size_t n)
{
    pp_strbuf b = {0};
    pp_strbuf_printf(&b, "%s ", r->op_type);
    for (int k = 0; k < r->n_inputs; k++) {
        const pp_layer_input *in = pp_layer_row_input(r, k);
        if (k) pp_strbuf_put(&b, ";");
        if (in->role == '-') {
            pp_strbuf_put(&b, "-");
            continue;
        }
        pp_strbuf_printf(&b, "%c:", in->role);
        if (in->rank == 0) pp_strbuf_put(&b, "scalar");
        for (int d = 0; d < in->rank; d++)
            pp_strbuf_printf(&b, d ? "x%lld" : "%lld", (long long)in->dims[d]);
    }
    copy_trunc(out, n, b.data && !b.oom ? b.data : r->op_type);
    free(b.data);
}

/* Rows read and the CSV reader's bad rows (count, and the first messages) into the report. */
static void report_rows_read(perfpred_eval_report *rep, int n_rows, const pp_bad_rows *bad)
{
    rep->n_rows_read = n_rows;
    rep->n_bad_rows = bad->n;
    for (int i = 0; i < bad->n_kept && rep->n_msgs < PERFPRED_REPORT_MSGS; i++)
        copy_trunc(rep->msgs[rep->n_msgs++], sizeof rep->msgs[0], bad->msgs[i]);
}

static perfpred_status eval_layers(eval_ctx *E, pp_err *err)
{
    perfpred_eval_report *rep = E->rep;
    pp_layer_table *t = NULL;
    perfpred_status st = pp_measure_layer_csv_read(E->p->layers_csv, &t, err);
    if (st != PERFPRED_OK) return st;
    report_rows_read(rep, t->n, &t->bad);
    rep->points = pp_arena_array(E->a, (size_t)t->n + 1, sizeof *rep->points);
    E->point_group = pp_arena_array(E->a, (size_t)t->n + 1, sizeof *E->point_group);
    E->group_names = pp_arena_array(E->a, PP_OPK__COUNT, sizeof *E->group_names);
    if (!rep->points || !E->point_group || !E->group_names) {
        pp_measure_layer_table_free(t);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "eval: out of memory");
    }
    /* groups: op kinds in enum order, those present only */
    int present[PP_OPK__COUNT] = {0}, gidx[PP_OPK__COUNT];
    for (int i = 0; i < t->n; i++)
        if (row_device_matches(E, t->rows[i].device)) present[t->rows[i].kind] = 1;
    for (int k = 0; k < PP_OPK__COUNT; k++) {
        gidx[k] = -1;
        if (present[k]) {
            gidx[k] = E->n_group_names;
            E->group_names[E->n_group_names++] = pp_op_kind_name((pp_op_kind)k);
        }
    }
    for (int i = 0; i < t->n && st == PERFPRED_OK; i++) {
        const pp_layer_row *r = &t->rows[i];
        if (!row_device_matches(E, r->device)) {
            rep->n_other_device++;
            continue;
        }
        pp_graph *g = NULL;
        int node;
        pp_err e = {0};
        if (pp_layer_row_graph(r, &g, &node, &e) != PERFPRED_OK ||
            pp_graph_liveness(g, &e) != PERFPRED_OK) {
            pp_graph_free(g);
            rep->n_failed++;
            add_msg(rep, t->path, r->line, e.msg);
            continue;
        }
        const pp_node_feat f = g->nodes[node].feat;
        perfpred_model *m = pp_model_wrap(g);
        if (!m) {
            pp_graph_free(g);
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "eval: out of memory");
            break;
        }
        /* a layer row is one kernel timed alone: its layer model judged, not a graph-level
         * correction (GNN, in-network overhead) applied to a one-node graph */
        perfpred_prediction pred;
        perfpred_predict_params pp = perfpred_predict_default_params();
        pp.layer_sum_only = 1;
        if (!predict_row(E, m, &pp, t->path, r->line, &pred)) continue;
        perfpred_eval_point *pt = &rep->points[rep->n_points];
        char label[256];
        layer_label(r, label, sizeof label);
        pt->label = pp_arena_strdup(E->a, label);
        pt->group = E->group_names[gidx[r->kind]];
        pt->line = r->line;
        pt->batch = r->batch;
        pt->measured_ms = r->latency_ms;
        pt->predicted_ms = pred.latency_ms.value;
        pt->roofline_ms = pp_roofline_ms(E->dev, f.kind, f.flops,
                                         f.in_bytes + f.out_bytes + f.param_bytes, NULL);
        if (!(E->dev->peak_tflops[PP_PREC_FP32] > 0 && E->dev->memory_bandwidth_gbs > 0))
            pt->roofline_ms = NAN;
        pt->spread_ms = r->latency_spread_ms;
        pt->prov = pred.n_calibrated_kernels > 0 ? PERFPRED_PROV_CALIBRATED : pred.latency_ms.prov;
        pt->n_kernels = 1;
        pt->kernel_bytes = pred.kernel_bytes;
        pt->cold_weight_bytes = pred.cold_weight_bytes;
        if (!pt->label) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "eval: out of memory");
            break;
        }
        E->point_group[rep->n_points++] = gidx[r->kind];
    }
    pp_measure_layer_table_free(t);
    return st;
}

/* ----------------------------------------------------------------- network rows ---- */

/* "input:8x3x224x224;mask:8x128" -> overrides (names in a). Returns the count or -1. */
static int parse_shapes(const char *s, pp_arena *a, perfpred_input_override *ov, int max)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        char part[512];
        if (len == 0 || len >= sizeof part || n == max) return -1;
        memcpy(part, p, len);
        part[len] = '\0';
        char *colon = strrchr(part, ':');
        if (!colon || colon == part) return -1;
        *colon = '\0';
        memset(&ov[n], 0, sizeof ov[n]);
        ov[n].name = pp_arena_strdup(a, part);
        if (!ov[n].name) return -1;
        if (strcmp(colon + 1, "scalar") == 0) ov[n].rank = 0;
        else if ((ov[n].rank = pp_parse_dims(colon + 1, ov[n].dims, PERFPRED_MAX_RANK)) < 1)
            return -1;
        n++;
        if (!semi) break;
        p = semi + 1;
    }
    return n;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Network rows measured on a machine other than the one(s) the device's own layer models were
 * measured on: the layer sums then describe that other machine (a device name reused on new
 * hardware). One message naming both and the first such row. */
static void check_machines(eval_ctx *E, const pp_net_table *t)
{
    const pp_layer_models *lm = pp_calib_own_models(pp_ctx_calib(E->ctx), E->dev);
    int n_known = pp_layer_models_n_machines(lm);
    if (n_known == 0) return;
    int n_rows = 0, n_other = 0, first_line = 0;
    char first[256] = "", m[256];
    for (int i = 0; i < t->n; i++) {
        const pp_net_row *r = &t->rows[i];
        if (!row_device_matches(E, r->device) || !pp_measure_source_machine(r->source, m,
                                                                            sizeof m) ||
            !m[0])
            continue;
        n_rows++;
        int known = 0;
        for (int k = 0; k < n_known && !known; k++)
            known = strcmp(m, pp_layer_models_machine(lm, k)) == 0;
        if (known) continue;
        if (!n_other++) {
            snprintf(first, sizeof first, "%s", m);
            first_line = r->line;
        }
    }
    if (!n_other) return;
    char msg[1024];
    snprintf(msg, sizeof msg, "%d of %d rows measured on %s, %s's layer models on %s%s: "
             "layer sums of another machine", n_other, n_rows, first, E->dev->name,
             pp_layer_models_machine(lm, 0), n_known > 1 ? " and others" : "");
    add_msg(E->rep, t->path, first_line, msg);
}

static perfpred_status eval_networks(eval_ctx *E, pp_err *err)
{
    perfpred_eval_report *rep = E->rep;
    pp_net_table *t = NULL;
    perfpred_status st = pp_measure_net_csv_read(E->p->networks_csv, &t, err);
    if (st != PERFPRED_OK) return st;
    report_rows_read(rep, t->n, &t->bad);
    check_machines(E, t);
    int by_model = E->p->group_by && strcmp(E->p->group_by, "model") == 0;
    rep->points = pp_arena_array(E->a, (size_t)t->n + 1, sizeof *rep->points);
    E->point_group = pp_arena_array(E->a, (size_t)t->n + 1, sizeof *E->point_group);
    E->group_names = pp_arena_array(E->a, (size_t)t->n + 1, sizeof *E->group_names);
    const char **gname = pp_arena_array(E->a, (size_t)t->n + 1, sizeof *gname);
    if (!rep->points || !E->point_group || !E->group_names || !gname) {
        pp_measure_net_table_free(t);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "eval: out of memory");
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", E->p->networks_csv);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    for (int i = 0; i < t->n && st == PERFPRED_OK; i++) {
        const pp_net_row *r = &t->rows[i];
        if (!row_device_matches(E, r->device)) {
            rep->n_other_device++;
            continue;
        }
        char path[8200];
        if (r->model[0] == '/' || pp_net_ref_is_builtin(r->model))
            snprintf(path, sizeof path, "%.8000s", r->model);
        else snprintf(path, sizeof path, "%s/%.4000s", dir, r->model);
        perfpred_input_override ov[16];
        int n_ov = parse_shapes(r->input_shapes, E->a, ov, 16);
        if (n_ov < 0) {
            rep->n_failed++;
            add_msg(rep, t->path, r->line, "input_shapes: too many inputs or out of memory");
            continue;
        }
        perfpred_model_params mp = perfpred_model_default_params();
        mp.batch = r->batch;
        mp.inputs = n_ov ? ov : NULL;
        mp.n_inputs = n_ov;
        mp.allow_unknown = E->p->allow_unknown;
        mp.log = E->p->log;
        mp.log_user = E->p->log_user;
        char msg[1024];
        perfpred_status ls;
        perfpred_model *m = perfpred_model_load(path, &mp, &ls, msg, sizeof msg);
        if (!m) {
            rep->n_failed++;
            add_msg(rep, t->path, r->line, msg);
            continue;
        }
        perfpred_prediction pred;
        perfpred_predict_params pp = perfpred_predict_default_params();
        pp.layer_sum_only = E->p->layer_sum_only;
        if (!predict_row(E, m, &pp, t->path, r->line, &pred)) continue;
        perfpred_eval_point *pt = &rep->points[rep->n_points];
        char label[512], model_name[256];
        copy_trunc(model_name, sizeof model_name, base_name(r->model));
        size_t L = strlen(model_name);
        if (L > 5 && strcmp(model_name + L - 5, ".onnx") == 0) model_name[L - 5] = '\0';
        /* the batch, and the input shape where the row gives one (resolution variants) */
        const char *shape = r->input_shapes ? strchr(r->input_shapes, ':') : NULL;
        if (shape && shape[1])
            snprintf(label, sizeof label, "%s %.200s", model_name, shape + 1);
        else
            snprintf(label, sizeof label, "%s b%lld", model_name, (long long)r->batch);
        pt->label = pp_arena_strdup(E->a, label);
        pt->group = pp_arena_strdup(E->a, by_model ? model_name : r->family);
        pt->line = r->line;
        pt->batch = r->batch;
        pt->measured_ms = r->latency_ms;
        pt->predicted_ms = pred.latency_ms.value;
        pt->roofline_ms = NAN;
        pt->spread_ms = r->latency_spread_ms;
        pt->prov = pred.latency_ms.prov;
        pt->n_kernels = pred.n_kernels;
        pt->kernel_bytes = pred.kernel_bytes;
        pt->cold_weight_bytes = pred.cold_weight_bytes;
        if (!pt->label || !pt->group) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "eval: out of memory");
            break;
        }
        gname[rep->n_points++] = pt->group;
    }
    pp_measure_net_table_free(t);
    if (st != PERFPRED_OK) return st;
    /* groups: distinct names, sorted */
    int ng = 0;
    for (int i = 0; i < rep->n_points; i++) E->group_names[ng++] = gname[i];
    qsort(E->group_names, (size_t)ng, sizeof *E->group_names, cmp_cstr);
    int w = 0;
    for (int i = 0; i < ng; i++)
        if (w == 0 || strcmp(E->group_names[i], E->group_names[w - 1]) != 0)
            E->group_names[w++] = E->group_names[i];
    E->n_group_names = w;
    for (int i = 0; i < rep->n_points; i++) {
        const char *key = rep->points[i].group;
        const char **hit =
            bsearch(&key, E->group_names, (size_t)w, sizeof *E->group_names, cmp_cstr);
        E->point_group[i] = (int)(hit - E->group_names);
        rep->points[i].group = *hit;
    }
    return PERFPRED_OK;
}

/* --------------------------------------------------------------------- metrics ---- */

static double median_spread(const perfpred_eval_point *pts, const int *grp, int n, int g,
                            double *tmp, int *n_spread)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if ((g < 0 || grp[i] == g) && isfinite(pts[i].spread_ms))
            tmp[k++] = 100.0 * pts[i].spread_ms / pts[i].measured_ms;
    *n_spread = k;
    return k ? pp_measure_median(tmp, k) : NAN;
}

static perfpred_status summarize(eval_ctx *E, pp_err *err)
{
    perfpred_eval_report *rep = E->rep;
    int n = rep->n_points, ng = E->n_group_names;
    double *pred = malloc((size_t)n * sizeof *pred), *meas = malloc((size_t)n * sizeof *meas);
    double *roof = malloc((size_t)n * sizeof *roof), *tmp = malloc((size_t)n * sizeof *tmp);
    pp_metrics *gm = malloc((size_t)(ng ? ng : 1) * sizeof *gm);
    perfpred_status st = PERFPRED_OK;
    rep->groups = pp_arena_array(E->a, (size_t)(ng ? ng : 1), sizeof *rep->groups);
    if (!pred || !meas || !roof || !tmp || !gm || !rep->groups) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "eval: out of memory");
        goto done;
    }
    rep->n_groups = ng;
    int have_roof = 1;
    for (int i = 0; i < n; i++) {
        pred[i] = rep->points[i].predicted_ms;
        meas[i] = rep->points[i].measured_ms;
        roof[i] = rep->points[i].roofline_ms;
        if (!isfinite(roof[i])) have_roof = 0;
    }
    const perfpred_metrics none = pp_measure_metrics_none_public();
    if ((st = pp_measure_metrics_by_group(pred, meas, E->point_group, n, ng, gm, err))) goto done;
    for (int g = 0; g < ng; g++) {
        perfpred_eval_group *G = &rep->groups[g];
        G->name = E->group_names[g];
        G->model = pp_measure_metrics_public(&gm[g]);
        G->roofline = none;
        G->spread_pct = median_spread(rep->points, E->point_group, n, g, tmp, &G->n_spread);
        for (int i = 0; i < n; i++)
            if (E->point_group[i] == g)
                G->n_calibrated += rep->points[i].prov == PERFPRED_PROV_CALIBRATED ||
                                   rep->points[i].prov == PERFPRED_PROV_MIXED;
    }
    pp_metrics m;
    if ((st = pp_measure_metrics(pred, meas, n, &m, err))) goto done;
    rep->overall.name = "overall";
    rep->overall.model = pp_measure_metrics_public(&m);
    rep->overall.roofline = none;
    rep->overall.spread_pct = median_spread(rep->points, E->point_group, n, -1, tmp,
                                            &rep->overall.n_spread);
    for (int g = 0; g < ng; g++) rep->overall.n_calibrated += rep->groups[g].n_calibrated;
    if (have_roof && !rep->networks) {
        if ((st = pp_measure_metrics_by_group(roof, meas, E->point_group, n, ng, gm,
                                              err))) goto done;
        for (int g = 0; g < ng; g++) rep->groups[g].roofline = pp_measure_metrics_public(&gm[g]);
        if ((st = pp_measure_metrics(roof, meas, n, &m, err))) goto done;
        rep->overall.roofline = pp_measure_metrics_public(&m);
    }
done:
    free(pred);
    free(meas);
    free(roof);
    free(tmp);
    free(gm);
    return st;
}

/* ----------------------------------------------------------------- entry point ---- */

perfpred_status perfpred_eval(const perfpred_eval_params *p, perfpred_eval_report *out,
                              char *errbuf, size_t errbuf_len)
{
    perfpred_status st = perfpred_eval_check_params(p, errbuf, errbuf_len);
    if (st != PERFPRED_OK) return st;
    if (!out) return PERFPRED_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    pp_err err = {0};
    eval_ctx E;
    memset(&E, 0, sizeof E);
    E.p = p;
    E.rep = out;
    out->networks = p->networks_csv != NULL;
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = p->config_dir;
    cp.log = p->log;
    cp.log_user = p->log_user;
    char msg[1024] = "";
    E.ctx = perfpred_ctx_open(&cp, &st, msg, sizeof msg);
    if (!E.ctx) {
        pp_err_set(&err, st, "%s", msg);
        goto done;
    }
    const char *cfg = p->config_dir ? p->config_dir : pp_default_config_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/devices", cfg);
    if ((st = pp_devices_load_config(path, &E.db, &err))) goto done;
    E.dev = pp_devices_find(E.db, p->device);
    if (!E.dev) {
        st = pp_err_set(&err, PERFPRED_ERR_DEVICE,
                        "unknown device '%s' (perfpred devices lists them)", p->device);
        goto done;
    }
    perfpred_device_info info;
    if ((st = perfpred_device_find(E.ctx, E.dev->name, &info))) {
        pp_err_set(&err, st, "unknown device '%s'", p->device);
        goto done;
    }
    snprintf(out->device, sizeof out->device, "%s", E.dev->name);
    copy_trunc(out->source, sizeof out->source,
               info.calibrated_latency && info.calibration_source ? info.calibration_source
                                                                   : "uncalibrated (roofline)");
    copy_trunc(out->source_device, sizeof out->source_device,
               info.calibration_device ? info.calibration_device : "");
    if (!(out->store = E.a = pp_arena_new())) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "eval: out of memory");
        goto done;
    }
    st = p->layers_csv ? eval_layers(&E, &err) : eval_networks(&E, &err);
    if (st != PERFPRED_OK) goto done;
    if (out->n_points == 0) {
        st = pp_err_set(&err, PERFPRED_ERR_PARSE,
                        "%s: no row of device %s could be predicted (%d rows read, %d of other "
                        "devices, %d failed, %d bad)%s%s",
                        p->layers_csv ? p->layers_csv : p->networks_csv, E.dev->name,
                        out->n_rows_read, out->n_other_device, out->n_failed, out->n_bad_rows,
                        out->n_msgs > 0 ? "; the first: " : "", out->n_msgs > 0 ? out->msgs[0] : "");
        goto done;
    }
    st = summarize(&E, &err);
done:
    if (st != PERFPRED_OK) {
        if (errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
        perfpred_eval_report_free(out);
    }
    pp_devices_free(E.db);
    perfpred_ctx_close(E.ctx);
    return st;
}
