/* fit/fit_host.c: a GPU's host dispatch scale from whole-model rows of that GPU
 * (perfpred_calibrate_host, include/perfpred_calibrate.h): the rule the shipped descriptors' measured
 * hosts follow (docs/gpu-stacks.md), applied to a user's own stack_runner.py CSV, and a descriptor
 * of one's own that states it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fit/fit.h"
#include "predictor/calib.h"

/* The models the rule reads: their batch-1 eager rows are host-bound on every GPU measured. */
static const char *const host_models[] = {"resnet18", "resnet50", "resnext50_32x4d",
                                          "wide_resnet50_2"};
#define N_HOST_MODELS ((int)(sizeof host_models / sizeof host_models[0]))
#define HOST_MAX_ROWS 256

typedef struct host_row {
    int line, model, input_size;
    double measured_ms;
} host_row;

typedef struct host_read {
    int c_name, c_model, c_batch, c_size, c_lat, c_rt, c_prec, c_status;
    int n, n_read;
    host_row rows[HOST_MAX_ROWS];
} host_read;

static const char *field(const pp_csv_record *rec, int c)
{
    return c >= 0 && c < rec->n_fields ? rec->fields[c] : "";
}

static int host_model(const char *name)
{
    for (int i = 0; i < N_HOST_MODELS; i++)
        if (strcmp(name, host_models[i]) == 0) return i;
    return -1;
}

static int on_row(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    host_read *H = user;
    if (is_header) {
        H->c_name = pp_measure_csv_column(rec, "torchvision_name");
        H->c_model = pp_measure_csv_column(rec, "model");
        H->c_batch = pp_measure_csv_column(rec, "batch_size");
        H->c_size = pp_measure_csv_column(rec, "input_size");
        H->c_lat = pp_measure_csv_column(rec, "latency");
        H->c_rt = pp_measure_csv_column(rec, "runtime");
        H->c_prec = pp_measure_csv_column(rec, "precision");
        H->c_status = pp_measure_csv_column(rec, "status");
        const char *missing = H->c_name < 0 && H->c_model < 0 ? "torchvision_name"
                              : H->c_batch < 0                ? "batch_size"
                              : H->c_lat < 0                  ? "latency"
                              : H->c_rt < 0                   ? "runtime"
                              : H->c_prec < 0                 ? "precision"
                                                              : NULL;
        if (missing)
            return pp_err_set(err, PERFPRED_ERR_PARSE,
                              "%s: no column '%s' (runners/stack_runner.py writes "
                              "framework-tax-gpus' columns)",
                              rec->path, missing);
        return 0;
    }
    H->n_read++;
    const char *st = field(rec, H->c_status);
    if ((st[0] && strcmp(st, "ok") != 0) || strcmp(field(rec, H->c_rt), "pytorch-eager") != 0 ||
        strcmp(field(rec, H->c_prec), "fp32") != 0 || strcmp(field(rec, H->c_batch), "1") != 0)
        return 0;
    int m = host_model(field(rec, H->c_name >= 0 ? H->c_name : H->c_model));
    if (m < 0 && H->c_name >= 0) m = host_model(field(rec, H->c_model));
    if (m < 0) return 0;
    char *end;
    double s = strtod(field(rec, H->c_lat), &end);
    if (end == field(rec, H->c_lat) || *end || !(s > 0) || !isfinite(s))
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: latency '%s' is not a time in seconds",
                          rec->path, rec->line, field(rec, H->c_lat));
    long size = 0;
    const char *sz = field(rec, H->c_size);
    if (sz[0]) {
        size = strtol(sz, &end, 10);
        if (*end || size < 32 || size > 4096)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: input_size '%s' is not an image side",
                              rec->path, rec->line, sz);
    }
    if (H->n == HOST_MAX_ROWS)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s:%d: more than %d batch-1 eager fp32 rows of the ResNet family",
                          rec->path, rec->line, HOST_MAX_ROWS);
    H->rows[H->n++] = (host_row){rec->line, m, (int)size, s * 1e3};
    return 0;
}

/* The stack's prediction of one row on dev at batch 1 (at the row's image side, where given). */
static perfpred_status predict_row(const perfpred_ctx *ctx, const char *dev, const char *models_dir,
                                   const host_row *r, perfpred_prediction *out, pp_err *err)
{
    char path[4096], eb[512];
    snprintf(path, sizeof path, "%s/%s.onnx", models_dir, host_models[r->model]);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = 1;
    perfpred_status st;
    perfpred_model *m = perfpred_model_load(path, &mp, &st, eb, sizeof eb);
    if (m && r->input_size > 0) {
        int rank = 0;
        int64_t dims[PERFPRED_MAX_RANK];
        const char *in = perfpred_model_input(m, 0, &rank, dims);
        if (in && rank == 4 && (dims[2] != r->input_size || dims[3] != r->input_size)) {
            char name[256]; /* the name outlives the model it came from */
            snprintf(name, sizeof name, "%s", in);
            perfpred_input_override o = {name, 4, {1, dims[1], r->input_size, r->input_size}};
            mp.inputs = &o;
            mp.n_inputs = 1;
            perfpred_model_free(m);
            m = perfpred_model_load(path, &mp, &st, eb, sizeof eb);
        }
    }
    if (!m) return pp_err_set(err, st, "%s", eb);
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.runtime = "pytorch-eager";
    pp.precision = "fp32";
    st = perfpred_predict(ctx, m, dev, &pp, out, eb, sizeof eb);
    perfpred_model_free(m);
    if (st != PERFPRED_OK) return pp_err_set(err, st, "%s", eb);
    if (!out->stack)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: not a GPU with a runtime stack (no host dispatch to scale)", dev);
    return PERFPRED_OK;
}

/* The descriptor of one's own: the device under another name, on the measured host. */
static perfpred_status write_yaml(const perfpred_host_params *p, const pp_device *d,
                                  const char *name, double scale, int n_bound, pp_err *err)
{
    /* the description in YAML double quotes: no quote or backslash of its own */
    char desc[256];
    snprintf(desc, sizeof desc, "%s", d->description ? d->description : d->name);
    for (char *c = desc; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) *c = '\'';
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char date[16];
    strftime(date, sizeof date, "%Y-%m-%d", &tm);
    pp_strbuf b = {0};
    pp_strbuf_printf(&b,
                     "# %s: %s on the host that measured %s (written by `perfpred calibrate host` "
                     "on %s):\n"
                     "# host_dispatch_scale is the median over its %d host-bound batch-1 rows of "
                     "the ResNet family\n"
                     "# (eager fp32) of the scale that makes the pytorch-eager-fp32 stack predict "
                     "the measured time.\n"
                     "# Read it beside the shipped descriptors: perfpred --device-file THIS_FILE "
                     "--device %s ...\n"
                     "name: %s\n"
                     "description: \"%s, on a measured host\"\n"
                     "base: %s\n",
                     name, d->name, p->rows_csv, date, n_bound, name, name, desc, d->name);
    /* base: does not carry calibration_from (configs/devices/README.md): stated again */
    if (d->calibration_from) pp_strbuf_printf(&b, "calibration_from: %s\n", d->calibration_from);
    pp_strbuf_printf(&b,
                     "runtime:\n"
                     "  host_dispatch_scale: %.6g\n"
                     "  host_dispatch_source: measured\n",
                     scale);
    /* nor its MIG profiles: stated again, so that its slices run on this host too */
    if (d->n_mig_profiles > 0) {
        pp_strbuf_printf(&b,
                         "mig:\n"
                         "  total_compute_slices: %d\n"
                         "  total_memory_slices: %d\n"
                         "  profiles:\n",
                         d->mig_total_compute, d->mig_total_memory);
        for (int i = 0; i < d->n_mig_profiles; i++) {
            const pp_mig_profile *m = &d->mig_profiles[i];
            pp_strbuf_printf(&b,
                             "    - {name: %s, compute_slices: %d, memory_slices: %d, "
                             "memory_gb: %.6g, compute_units: %d}\n",
                             m->name, m->compute_slices, m->memory_slices, m->memory_gb,
                             m->compute_units);
        }
    }
    if (b.oom) {
        free(b.data);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    perfpred_status st = pp_write_file_atomic(p->out_yaml, b.data, b.len, err);
    free(b.data);
    return st;
}

static perfpred_status host_scale(const perfpred_ctx *ctx, const perfpred_host_params *p,
                                  cJSON *o, pp_err *err)
{
    const pp_device *d = pp_devices_find(pp_ctx_db(ctx), p->device);
    if (!d) return pp_err_set(err, PERFPRED_ERR_DEVICE, "unknown device '%s'", p->device);
    if (d->kind != PP_DEV_GPU || d->is_mig)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: give the whole GPU the rows were measured on (a GPU descriptor, "
                          "not a MIG slice or another kind of device)",
                          d->name);
    char name[160];
    snprintf(name, sizeof name, "%s", p->name ? p->name : "");
    if (!name[0]) snprintf(name, sizeof name, "%s-host", d->name);
    if (!pp_dev_valid_name(name))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "--name '%s': a device name takes lowercase letters, digits and . _ - + "
                          "only, from a letter or digit, at most 120 characters",
                          name);
    host_read *H = calloc(1, sizeof *H);
    if (!H) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = pp_measure_csv_read(p->rows_csv, on_row, H, err);
    if (st == PERFPRED_OK && H->n == 0)
        st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                        "%s: no batch-1 pytorch-eager fp32 row of resnet18, resnet50, "
                        "resnext50_32x4d or wide_resnet50_2 among its %d rows",
                        p->rows_csv, H->n_read);
    double s0 = d->host_dispatch_scale > 0 ? d->host_dispatch_scale : 1.0;
    double scales[HOST_MAX_ROWS];
    int n_bound = 0;
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (int i = 0; st == PERFPRED_OK && i < H->n; i++) {
        perfpred_prediction pr;
        const host_row *r = &H->rows[i];
        st = predict_row(ctx, d->name, p->models_dir, r, &pr, err);
        if (st != PERFPRED_OK) break;
        int bound = pr.host_ms > pr.gpu_ms;
        double s = s0 * r->measured_ms / pr.latency_ms.value;
        if (bound) scales[n_bound++] = s;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "line", r->line);
        cJSON_AddStringToObject(j, "model", host_models[r->model]);
        cJSON_AddNumberToObject(j, "measured_ms", r->measured_ms);
        cJSON_AddNumberToObject(j, "predicted_ms", pr.latency_ms.value);
        cJSON_AddNumberToObject(j, "host_ms", pr.host_ms);
        cJSON_AddNumberToObject(j, "gpu_ms", pr.gpu_ms);
        cJSON_AddBoolToObject(j, "host_bound", bound);
        cJSON_AddNumberToObject(j, "scale", s);
        cJSON_AddItemToArray(rows, j);
    }
    free(H);
    if (st != PERFPRED_OK) return st;
    cJSON_AddStringToObject(o, "device", d->name);
    cJSON_AddNumberToObject(o, "descriptor_scale", s0);
    cJSON_AddStringToObject(o, "descriptor_source", pp_host_source_name(d->host_dispatch_source));
    cJSON_AddNumberToObject(o, "host_bound_rows", n_bound);
    if (n_bound < 2)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: %d of its ResNet-family rows are host-bound on %s (the stack's host "
                          "time above its GPU time); the rule needs 2: time them at batch 1",
                          p->rows_csv, n_bound, d->name);
    double scale = pp_measure_median(scales, n_bound);
    cJSON_AddNumberToObject(o, "scale", scale);
    if (!(scale >= 0.05 && scale <= 50)) /* the range a descriptor takes */
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: a host dispatch scale of %.4g is not a host like the fitted ones "
                          "(0.05 to 50): are these rows of %s?",
                          p->rows_csv, scale, d->name);
    if (p->out_yaml) {
        st = write_yaml(p, d, name, scale, n_bound, err);
        if (st != PERFPRED_OK) return st;
        cJSON_AddStringToObject(o, "written", p->out_yaml);
        cJSON_AddStringToObject(o, "name", name);
    }
    return PERFPRED_OK;
}

perfpred_status perfpred_calibrate_host(const perfpred_ctx *ctx, const perfpred_host_params *p,
                                        char **report_json, char *errbuf, size_t errbuf_len)
{
    pp_err e = {0};
    if (report_json) *report_json = NULL;
    perfpred_status st;
    cJSON *o = NULL;
    if (!ctx || !p || !p->device || !p->rows_csv || !p->models_dir || !report_json) {
        st = pp_err_set(&e, PERFPRED_ERR_INVALID_ARG,
                        "calibrate host: context, device, rows and models folder are required");
    } else if (!(o = cJSON_CreateObject())) {
        st = pp_err_set(&e, PERFPRED_ERR_NOMEM, "out of memory");
    } else {
        st = host_scale(ctx, p, o, &e);
        if (st == PERFPRED_OK && !(*report_json = cJSON_PrintUnformatted(o)))
            st = pp_err_set(&e, PERFPRED_ERR_NOMEM, "out of memory");
    }
    cJSON_Delete(o);
    if (errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", st ? e.msg : "");
    return st;
}
