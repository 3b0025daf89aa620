/* eval/scaling_check.c: does Habitat's rule carry kernel times across GPUs? Every NeuSight
 * kernel test row of a target GPU is predicted from the calibrated source device (its layer models,
 * its roofline where they do not cover the row), scaled as predictor.c scales a kernel, and judged
 * against the target's measurement per op kind, beside the variants listed in perfpred_calibrate.h. */
#include "eval/eval.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "predictor/calib.h"
#include "predictor/predictor.h"

/* GPUs of NeuSight's kernel tables, in the order a default report lists them; each maps to a
 * perfpred device through pp_datasets_neusight_device (neusight.c owns that mapping). */
static const char *const ns_gpus[] = {
    "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA L4",
    "Tesla V100-PCIE-32GB",  "Tesla T4",              "Tesla P100-PCIE-16GB",  "Tesla P4",
};
#define N_NS_GPUS ((int)(sizeof ns_gpus / sizeof ns_gpus[0]))

static const pp_op_kind sc_kinds[PERFPRED_SC_KINDS] = {PP_OPK_BMM, PP_OPK_LINEAR, PP_OPK_ELEMWISE,
                                                       PP_OPK_NORM, PP_OPK_SOFTMAX};

static const char *const method_names[PERFPRED_SCALE__COUNT] = {
    "model", "model-flops", "twin", "twin-flops", "roofline", "unscaled", "source-model",
    "reverse", "reverse-flops"};

const char *perfpred_scaling_method_str(perfpred_scaling_method m)
{
    return (int)m >= 0 && m < PERFPRED_SCALE__COUNT ? method_names[m] : NULL;
}

perfpred_scaling_params perfpred_scaling_default_params(void)
{
    perfpred_scaling_params p;
    memset(&p, 0, sizeof p);
    p.source = "a100-pcie-40gb";
    return p;
}

/* The compute term as SMs x clock (Habitat's original rule, what the predictor used before
 * docs/scaling.md showed FLOP/s to be right across architectures): the baseline the report
 * calls "model" / "twin" / "reverse". */
double pp_eval_scale_smclock(double t, const pp_device *from, const pp_device *to, double ai,
                             double blocks)
{
    double pf = from->peak_tflops[PP_PREC_FP32];
    double bw = from->memory_bandwidth_gbs * 1e9;
    double g = pp_memory_boundness(ai, bw > 0 && pf > 0 ? pf * 1e12 / bw : 0);
    double bw_ratio = (to->memory_bandwidth_gbs > 0 && from->memory_bandwidth_gbs > 0)
                          ? from->memory_bandwidth_gbs / to->memory_bandwidth_gbs
                          : 1.0;
    double cf = from->clock_mhz > 0 ? from->clock_mhz : 1, ct = to->clock_mhz > 0 ? to->clock_mhz : 1;
    double c_ratio = 1.0;
    if (from->compute_units > 0 && to->compute_units > 0)
        c_ratio = blocks <= to->compute_units
                      ? cf / ct
                      : (from->compute_units * cf) / (to->compute_units * ct);
    return t * pow(bw_ratio, g) * pow(c_ratio, 1.0 - g);
}

/* The compute term as the fp32 FLOP/s ratio: the predictor's rule (pp_scale_kernel_time). */
double pp_eval_scale_flops(double t, const pp_device *from, const pp_device *to, double ai,
                           double blocks)
{
    return pp_scale_kernel_time(t, from, to, ai, blocks);
}

/* ------------------------------------------------------------------ the run ---- */

/* One judged target row. pred[m] is compared with ref[m]; NaN pred = the method has no answer. */
typedef struct sc_row {
    int kind;                    /* index into sc_kinds */
    int calibrated, subwave;
    double g;
    double pred[PERFPRED_SCALE__COUNT], ref[PERFPRED_SCALE__COUNT];
} sc_row;

/* A source-GPU measurement looked up by shape. */
typedef struct sc_twin {
    char *key;
    double ms;
    int order;
} sc_twin;

typedef struct sc_run {
    const perfpred_scaling_params *p;
    perfpred_scaling_report *out;
    pp_logger log;
    pp_device_db *db;
    pp_calib *calib;
    const pp_device *src;
    int src_calibrated;
    const char *ops[32];         /* NeuSight operators whose test file is present */
    int n_ops;
    sc_twin *twins;
    int n_twins;
    pp_strbuf csv;
} sc_run;

static void add_msg(perfpred_scaling_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_msg(perfpred_scaling_report *r, const char *fmt, ...)
{
    if (r->n_msgs >= PERFPRED_REPORT_MSGS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msgs[r->n_msgs++], sizeof r->msgs[0], fmt, ap);
    va_end(ap);
}

/* Shape key of a row: op type, then each input's role and dims ("Add|x:8x16|x:8x16"). Two rows with
 * the same key are the same PyTorch call (the importer fixes the attributes of each op kind). */
static int row_key(const pp_layer_row *row, char *out, size_t n)
{
    size_t off = 0;
    int k = snprintf(out, n, "%s", row->op_type);
    if (k < 0 || (size_t)k >= n) return -1;
    off = (size_t)k;
    for (int i = 0; i < row->n_inputs; i++) {
        const pp_layer_input *in = pp_layer_row_input(row, i);
        k = snprintf(out + off, n - off, "|%c:", in->role);
        if (k < 0 || (size_t)k >= n - off) return -1;
        off += (size_t)k;
        for (int d = 0; d < in->rank; d++) {
            k = snprintf(out + off, n - off, "%s%lld", d ? "x" : "", (long long)in->dims[d]);
            if (k < 0 || (size_t)k >= n - off) return -1;
            off += (size_t)k;
        }
    }
    return 0;
}

static int cmp_twin(const void *a, const void *b)
{
    const sc_twin *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->order - y->order;
}

/* The measured source time of a shape; the first row in file order when the source GPU measured
 * the shape more than once. NaN when it did not measure it. */
static double twin_ms(const sc_run *R, const char *key)
{
    int lo = 0, hi = R->n_twins;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(R->twins[mid].key, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < R->n_twins && strcmp(R->twins[lo].key, key) == 0 ? R->twins[lo].ms : NAN;
}

/* Every available operator's test rows of one NeuSight GPU. */
static perfpred_status import_gpu(sc_run *R, const char *gpu, pp_layer_table **out, pp_err *err)
{
    pp_layer_table *t = pp_measure_layer_table_new("NeuSight test rows");
    if (!t) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < R->n_ops && st == PERFPRED_OK; i++)
        st = pp_datasets_neusight_import(R->p->neusight_root, R->ops[i], gpu, PP_NEUSIGHT_TEST, t,
                                         NULL, err);
    if (st != PERFPRED_OK) {
        pp_measure_layer_table_free(t);
        return st;
    }
    *out = t;
    return PERFPRED_OK;
}

static perfpred_status load_twins(sc_run *R, pp_err *err)
{
    pp_layer_table *t = NULL;
    perfpred_status st = import_gpu(R, R->out->source_gpu, &t, err);
    if (st != PERFPRED_OK) return st;
    R->twins = calloc((size_t)t->n + 1, sizeof *R->twins);
    if (!R->twins) {
        pp_measure_layer_table_free(t);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < t->n; i++) {
        char key[512];
        if (row_key(&t->rows[i], key, sizeof key) != 0) continue;
        sc_twin *w = &R->twins[R->n_twins];
        if (!(w->key = strdup(key))) {
            pp_measure_layer_table_free(t);
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        }
        w->ms = t->rows[i].latency_ms;
        w->order = i;
        R->n_twins++;
    }
    R->out->n_source_rows = t->n;
    if (t->bad.n)
        add_msg(R->out, "%s: %d test rows rejected by the importer (first: %s)", R->out->source_gpu,
                t->bad.n, t->bad.n_kept ? t->bad.msgs[0] : "not kept");
    pp_measure_layer_table_free(t);
    qsort(R->twins, (size_t)R->n_twins, sizeof *R->twins, cmp_twin);
    return PERFPRED_OK;
}

static int has_roofline(const pp_device *d)
{
    return d->peak_tflops[PP_PREC_FP32] > 0 && d->memory_bandwidth_gbs > 0;
}

/* A kernel time moved from one device to another the way predictor.c moves it: the work part
 * (time less the source's launch overhead) is scaled, the target's launch overhead added. */
static double move_time(double t, const pp_device *from, const pp_device *to, double ai,
                        double blocks, int flops_variant)
{
    if (!isfinite(t)) return NAN;
    double launch_from = from->launch_overhead_us * 1e-3;
    double work = t > launch_from ? t - launch_from : 0;
    double s = flops_variant ? pp_eval_scale_flops(work, from, to, ai, blocks)
                             : pp_eval_scale_smclock(work, from, to, ai, blocks);
    return s + to->launch_overhead_us * 1e-3;
}

/* Predictions of one target row by every method. */
static void judge_row(const sc_run *R, const pp_device *tgt, const pp_layer_row *row,
                      const pp_node_feat *f, int kind, sc_row *o, double *model_ms, double *twin)
{
    const pp_device *src = R->src;
    memset(o, 0, sizeof *o);
    o->kind = kind;
    for (int m = 0; m < PERFPRED_SCALE__COUNT; m++) o->pred[m] = o->ref[m] = NAN;
    /* as predictor.c's chain_figures for a one-node kernel */
    double bytes = (f->in_bytes + f->out_bytes + f->param_bytes) * pp_precision_byte_factor(tgt);
    double ai = bytes > 0 ? f->flops / bytes : 0;
    double blocks = pp_kernel_blocks(f);
    double ridge = src->memory_bandwidth_gbs > 0
                       ? src->peak_tflops[PP_PREC_FP32] * 1e12 / (src->memory_bandwidth_gbs * 1e9)
                       : 0;
    o->g = pp_memory_boundness(ai, ridge);
    o->subwave = tgt->compute_units > 0 && blocks <= tgt->compute_units;

    double t = NAN;
    if (R->src_calibrated && pp_calib_node_ms(R->calib, src, f, &t)) o->calibrated = 1;
    else if (has_roofline(src)) t = pp_roofline_ms(src, f->kind, f->flops, bytes, NULL);
    *model_ms = t;
    char key[512];
    *twin = row_key(row, key, sizeof key) == 0 ? twin_ms(R, key) : NAN;
    double meas = row->latency_ms;

    o->pred[PERFPRED_SCALE_MODEL] = move_time(t, src, tgt, ai, blocks, 0);
    o->pred[PERFPRED_SCALE_MODEL_FLOPS] = move_time(t, src, tgt, ai, blocks, 1);
    o->pred[PERFPRED_SCALE_TWIN] = move_time(*twin, src, tgt, ai, blocks, 0);
    o->pred[PERFPRED_SCALE_TWIN_FLOPS] = move_time(*twin, src, tgt, ai, blocks, 1);
    if (has_roofline(tgt))
        o->pred[PERFPRED_SCALE_ROOFLINE] = pp_roofline_ms(tgt, f->kind, f->flops, bytes, NULL);
    o->pred[PERFPRED_SCALE_UNSCALED] = t;
    for (int m = PERFPRED_SCALE_MODEL; m <= PERFPRED_SCALE_UNSCALED; m++) o->ref[m] = meas;
    if (isfinite(*twin)) {
        o->pred[PERFPRED_SCALE_SOURCE_MODEL] = t;
        o->pred[PERFPRED_SCALE_REVERSE] = move_time(meas, tgt, src, ai, blocks, 0);
        o->pred[PERFPRED_SCALE_REVERSE_FLOPS] = move_time(meas, tgt, src, ai, blocks, 1);
        for (int m = PERFPRED_SCALE_SOURCE_MODEL; m <= PERFPRED_SCALE_REVERSE_FLOPS; m++)
            o->ref[m] = *twin;
    }
}


/* Fills cell from the rows of kind (kind < 0: every row). buf holds 3 * n doubles. */
static perfpred_status fill_cell(const sc_row *rows, int n, int kind, perfpred_scaling_cell *c,
                                 double *buf, pp_err *err)
{
    double *pred = buf, *ref = buf + n, *gs = buf + 2 * (size_t)n;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (kind >= 0 && rows[i].kind != kind) continue;
        c->n_rows++;
        c->n_calibrated += rows[i].calibrated;
        c->n_subwave += rows[i].subwave;
        c->n_twins += isfinite(rows[i].ref[PERFPRED_SCALE_REVERSE]) ? 1 : 0;
        gs[k++] = rows[i].g;
    }
    c->median_g = k > 0 ? pp_measure_median(gs, k) : NAN;
    for (int m = 0; m < PERFPRED_SCALE__COUNT; m++) {
        int j = 0;
        for (int i = 0; i < n; i++) {
            if (kind >= 0 && rows[i].kind != kind) continue;
            if (!isfinite(rows[i].pred[m]) || !isfinite(rows[i].ref[m])) continue;
            pred[j] = rows[i].pred[m];
            ref[j] = rows[i].ref[m];
            j++;
        }
        c->m[m] = pp_measure_metrics_none_public();
        c->median_ratio[m] = NAN;
        if (j == 0) continue;
        pp_metrics pm;
        perfpred_status st = pp_measure_metrics(pred, ref, j, &pm, err);
        if (st != PERFPRED_OK) return st;
        c->m[m] = pp_measure_metrics_public(&pm);
        for (int i = 0; i < j; i++) gs[i] = pred[i] / ref[i];
        c->median_ratio[m] = pp_measure_median(gs, j);
    }
    return PERFPRED_OK;
}

static void csv_num(pp_strbuf *b, double v)
{
    char num[40] = "";
    if (isfinite(v)) pp_fmt_double(num, sizeof num, v);
    pp_strbuf_printf(b, ",%s", num);
}

static void csv_header(pp_strbuf *b)
{
    pp_strbuf_put(b, "target,gpu,kind,op_type,source,flops,bytes,arith_intensity,g,blocks,"
                     "calibrated,measured_ms,twin_ms,model_ms");
    for (int m = 0; m < PERFPRED_SCALE__COUNT; m++)
        pp_strbuf_printf(b, ",pred_%s_ms", method_names[m]);
    pp_strbuf_put(b, "\n");
}

static void csv_row(pp_strbuf *b, const pp_device *tgt, const char *gpu, const pp_layer_row *row,
                    const pp_node_feat *f, const sc_row *o, double model_ms, double twin)
{
    pp_strbuf_csv_field(b, tgt->name);
    pp_strbuf_put(b, ",");
    pp_strbuf_csv_field(b, gpu);
    pp_strbuf_printf(b, ",%s,%s,", pp_op_kind_name(sc_kinds[o->kind]), row->op_type);
    pp_strbuf_csv_field(b, row->source);
    double bytes = (f->in_bytes + f->out_bytes + f->param_bytes) * pp_precision_byte_factor(tgt);
    csv_num(b, f->flops);
    csv_num(b, bytes);
    csv_num(b, bytes > 0 ? f->flops / bytes : 0);
    csv_num(b, o->g);
    csv_num(b, pp_kernel_blocks(f));
    pp_strbuf_printf(b, ",%d", o->calibrated);
    csv_num(b, row->latency_ms);
    csv_num(b, twin);
    csv_num(b, model_ms);
    for (int m = 0; m < PERFPRED_SCALE__COUNT; m++) csv_num(b, o->pred[m]);
    pp_strbuf_put(b, "\n");
}

static double ratio(double a, double b) { return a > 0 && b > 0 ? a / b : NAN; }

static perfpred_status run_target(sc_run *R, const pp_device *tgt, const char *gpu,
                                  perfpred_scaling_target *T, pp_err *err)
{
    memset(T, 0, sizeof *T);
    snprintf(T->device, sizeof T->device, "%s", tgt->name);
    snprintf(T->gpu, sizeof T->gpu, "%s", gpu);
    const pp_device *s = R->src;
    T->bw_ratio = ratio(tgt->memory_bandwidth_gbs, s->memory_bandwidth_gbs);
    T->smclock_ratio = ratio(tgt->compute_units * tgt->clock_mhz, s->compute_units * s->clock_mhz);
    T->flops_ratio = ratio(tgt->peak_tflops[PP_PREC_FP32], s->peak_tflops[PP_PREC_FP32]);

    pp_layer_table *t = NULL;
    perfpred_status st = import_gpu(R, gpu, &t, err);
    if (st != PERFPRED_OK) return st;
    T->n_bad_rows = t->bad.n;
    if (t->bad.n)
        add_msg(R->out, "%s: %d test rows rejected by the importer (first: %s)", gpu, t->bad.n,
                t->bad.n_kept ? t->bad.msgs[0] : "not kept");
    sc_row *rows = calloc((size_t)t->n + 1, sizeof *rows);
    double *buf = calloc(3 * (size_t)t->n + 1, sizeof *buf);
    int n = 0;
    if (!rows || !buf) {
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < t->n; i++) {
        const pp_layer_row *row = &t->rows[i];
        int kind = -1;
        for (int k = 0; k < PERFPRED_SC_KINDS; k++)
            if (sc_kinds[k] == row->kind) kind = k;
        pp_node_feat f;
        pp_err e2 = {0};
        if (kind < 0 || pp_layer_row_features(row, &f, &e2) != PERFPRED_OK) {
            if (T->n_failed++ == 0)
                add_msg(R->out, "%s",
                        kind < 0 ? "row of an op kind the check does not judge" : e2.msg);
            continue;
        }
        double model_ms, twin;
        judge_row(R, tgt, row, &f, kind, &rows[n], &model_ms, &twin);
        if (R->p->rows_csv) csv_row(&R->csv, tgt, gpu, row, &f, &rows[n], model_ms, twin);
        n++;
    }
    for (int k = 0; k < PERFPRED_SC_KINDS; k++) {
        perfpred_scaling_cell c;
        memset(&c, 0, sizeof c);
        c.kind = pp_op_kind_name(sc_kinds[k]);
        if ((st = fill_cell(rows, n, k, &c, buf, err)) != PERFPRED_OK) goto done;
        if (c.n_rows > 0) T->kinds[T->n_kinds++] = c;
    }
    T->all.kind = "all";
    st = fill_cell(rows, n, -1, &T->all, buf, err);
    pp_log(&R->log, PERFPRED_LOG_INFO, "scaling check: %s (%s): %d rows, %d with a %s twin",
           tgt->name, gpu, n, T->all.n_twins, R->out->source_gpu);
done:
    free(rows);
    free(buf);
    pp_measure_layer_table_free(t);
    return st;
}

/* The NeuSight GPU whose rows stand for device d, or NULL. */
static const char *gpu_of(const pp_device *d)
{
    for (int i = 0; i < N_NS_GPUS; i++) {
        const char *dev = pp_datasets_neusight_device(ns_gpus[i]);
        if (dev && strcmp(dev, d->name) == 0) return ns_gpus[i];
    }
    return NULL;
}

/* Operators of pp_datasets_neusight_ops that have a test file under the root. */
static perfpred_status find_ops(sc_run *R, pp_err *err)
{
    char missing[16][64];   /* test files already said to be missing (elem.csv serves 11 ops) */
    int n_missing = 0;
    for (int i = 0; pp_datasets_neusight_ops[i]; i++) {
        char rel[1024], path[4096];
        pp_err e2 = {0};
        if (pp_datasets_neusight_path(pp_datasets_neusight_ops[i], ns_gpus[0], PP_NEUSIGHT_TEST,
                                      rel, sizeof rel, &e2) != PERFPRED_OK)
            continue;   /* conv: NeuSight has no test file */
        if (snprintf(path, sizeof path, "%s/%s", R->p->neusight_root, rel) >= (int)sizeof path)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long",
                              R->p->neusight_root);
        if (access(path, R_OK) != 0) {
            const char *file = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
            int seen = 0;
            for (int j = 0; j < n_missing; j++) seen |= strcmp(missing[j], file) == 0;
            if (!seen && n_missing < 16) {
                snprintf(missing[n_missing++], sizeof missing[0], "%.63s", file);
                add_msg(R->out, "%s/scripts/asplos/data/dataset/test/%s is missing: its operators "
                        "are not judged", R->p->neusight_root, file);
            }
            continue;
        }
        if (R->n_ops < (int)(sizeof R->ops / sizeof R->ops[0]))
            R->ops[R->n_ops++] = pp_datasets_neusight_ops[i];
    }
    if (R->n_ops == 0)
        return pp_err_set(err, PERFPRED_ERR_IO,
                          "%s/scripts/asplos/data/dataset/test: no NeuSight kernel test file",
                          R->p->neusight_root);
    return PERFPRED_OK;
}

/* Resolves the targets: named ones (checked), or every NeuSight GPU with a descriptor. */
static perfpred_status pick_targets(sc_run *R, const pp_device **tg, const char **gpus, int *n,
                                    pp_err *err)
{
    const perfpred_scaling_params *p = R->p;
    *n = 0;
    if (p->n_targets == 0) {
        for (int i = 0; i < N_NS_GPUS; i++) {
            const char *dev = pp_datasets_neusight_device(ns_gpus[i]);
            const pp_device *d = dev ? pp_devices_find(R->db, dev) : NULL;
            if (!d || d == R->src || *n >= PERFPRED_SC_MAX_TARGETS) continue;
            tg[*n] = d;
            gpus[(*n)++] = ns_gpus[i];
        }
        if (*n == 0)
            return pp_err_set(err, PERFPRED_ERR_DEVICE,
                              "no descriptor in the configs stands for a NeuSight GPU other than "
                              "the source '%s'", R->src->name);
        return PERFPRED_OK;
    }
    for (int i = 0; i < p->n_targets; i++) {
        const char *name = p->targets[i];
        const pp_device *d = name ? pp_devices_find(R->db, name) : NULL;
        if (!d)
            return pp_err_set(err, PERFPRED_ERR_DEVICE,
                              "scaling check: unknown target device '%s' (perfpred devices lists "
                              "them)", name ? name : "(null)");
        if (d == R->src)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "scaling check: target '%s' is the source device", name);
        for (int j = 0; j < *n; j++)
            if (tg[j] == d)
                return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                                  "scaling check: target '%s' named twice", d->name);
        const char *gpu = gpu_of(d);
        if (!gpu)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "scaling check: NeuSight measured no GPU that '%s' stands for (its "
                              "test files hold A100 PCIe 40/80GB, H100 SXM5, L4, V100 PCIe, T4, "
                              "P100 PCIe, P4)", d->name);
        tg[*n] = d;
        gpus[(*n)++] = gpu;
    }
    return PERFPRED_OK;
}

perfpred_status pp_eval_scaling_check(const perfpred_scaling_params *p,
                                      perfpred_scaling_report *out, pp_err *err)
{
    if (!p || !out)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "perfpred_scaling_check: NULL argument");
    memset(out, 0, sizeof *out);
    if (!p->neusight_root || !*p->neusight_root)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "perfpred_scaling_check: neusight_root is required");
    if (!p->source || !*p->source)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "perfpred_scaling_check: source is required");
    if (p->n_targets < 0 || p->n_targets > PERFPRED_SC_MAX_TARGETS ||
        (p->n_targets > 0 && !p->targets))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "perfpred_scaling_check: n_targets must be 0..%d with targets set",
                          PERFPRED_SC_MAX_TARGETS);
    sc_run R;
    memset(&R, 0, sizeof R);
    R.p = p;
    R.out = out;
    R.log.fn = p->log;
    R.log.user = p->log_user;
    pp_neusight_source nsrc;
    perfpred_status st = pp_datasets_neusight_source(p->neusight_root, &nsrc, err);
    if (st != PERFPRED_OK) return st;
    const char *cfg = p->config_dir ? p->config_dir : pp_default_config_dir();
    char devdir[4096];
    if (snprintf(devdir, sizeof devdir, "%s/devices", cfg) >= (int)sizeof devdir)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", cfg);
    const pp_device *tg[PERFPRED_SC_MAX_TARGETS];
    const char *gpus[PERFPRED_SC_MAX_TARGETS];
    int n_tg = 0;
    if ((st = pp_devices_load_config(devdir, &R.db, err)) != PERFPRED_OK) goto done;
    if ((st = pp_calib_open(R.db, cfg, &R.calib, err)) != PERFPRED_OK) goto done;
    R.src = pp_devices_find(R.db, p->source);
    if (!R.src) {
        st = pp_err_set(err, PERFPRED_ERR_DEVICE,
                        "scaling check: unknown source device '%s' (perfpred devices lists them)",
                        p->source);
        goto done;
    }
    const char *calsrc = NULL;
    const pp_device *cal = pp_calib_source_device(R.calib, R.src, &calsrc);
    if (cal && cal != R.src) {
        st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                        "scaling check: source '%s' borrows the layer models of '%s': name '%s' "
                        "as the source", R.src->name, cal->name, cal->name);
        goto done;
    }
    R.src_calibrated = cal != NULL;
    if (R.src_calibrated && (st = pp_calib_ready(R.calib, cal, err)) != PERFPRED_OK) goto done;
    if (!R.src_calibrated && !has_roofline(R.src)) {
        st = pp_err_set(err, PERFPRED_ERR_DEVICE,
                        "scaling check: source '%s' has neither layer models nor the fp32 peak "
                        "and memory bandwidth a roofline needs (%s)", R.src->name,
                        R.src->source_file ? R.src->source_file : "descriptor");
        goto done;
    }
    snprintf(out->source, sizeof out->source, "%s", R.src->name);
    snprintf(out->calibration, sizeof out->calibration, "%s",
             R.src_calibrated && calsrc ? calsrc : "uncalibrated (roofline)");
    if ((st = pick_targets(&R, tg, gpus, &n_tg, err)) != PERFPRED_OK) goto done;
    if ((st = find_ops(&R, err)) != PERFPRED_OK) goto done;
    const char *sg = gpu_of(R.src);
    if (sg) {
        snprintf(out->source_gpu, sizeof out->source_gpu, "%s", sg);
        if ((st = load_twins(&R, err)) != PERFPRED_OK) goto done;
    } else {
        add_msg(out, "NeuSight measured no GPU that '%s' stands for: no twin or reverse rows",
                R.src->name);
    }
    if (p->rows_csv) csv_header(&R.csv);
    for (int i = 0; i < n_tg; i++) {
        if ((st = run_target(&R, tg[i], gpus[i], &out->targets[i], err)) != PERFPRED_OK) goto done;
        out->n_targets++;
    }
    if (p->rows_csv) {
        if (R.csv.oom) st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", p->rows_csv);
        else st = pp_write_file_atomic(p->rows_csv, R.csv.data, R.csv.len, err);
    }
done:
    for (int i = 0; i < R.n_twins; i++) free(R.twins[i].key);
    free(R.twins);
    free(R.csv.data);
    pp_calib_close(R.calib);
    pp_devices_free(R.db);
    return st;
}

perfpred_status perfpred_scaling_check(const perfpred_scaling_params *p,
                                       perfpred_scaling_report *out, char *errbuf,
                                       size_t errbuf_len)
{
    pp_err e = {0};
    perfpred_status st = pp_eval_scaling_check(p, out, &e);
    if (st != PERFPRED_OK && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", e.msg);
    return st;
}
