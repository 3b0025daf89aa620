/* predictor/json_api.c: perfpred_json, the library's JSON entry point: one request object in, the
 * command's documented --json answer out (docs/json.md). The CLI's --json goes through it, so a
 * binding (python/perfpred) and the command line can never disagree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predictor/json_out.h"
#include "util/util.h"

#define REQ_MAX_LIST 64

typedef struct request {
    const char *command, *model, *runtime, *precision;
    const char *devices[REQ_MAX_LIST];
    int n_devices;
    int64_t batches[REQ_MAX_LIST];
    int n_batches;
    perfpred_input_override inputs[16];
    int n_inputs;
    int layers, layer_sum_only, allow_unknown, all;
    double slo_ms;
} request;

/* ------------------------------------------------------------ the request ---- */

static perfpred_status bad(pp_err *err, const char *fmt, const char *a)
{
    return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, fmt, a);
}

static perfpred_status get_bool(const cJSON *v, int *out, pp_err *err)
{
    if (cJSON_IsBool(v)) *out = cJSON_IsTrue(v);
    else if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 1e6)
        *out = (int)v->valuedouble;
    else return bad(err, "request: \"%s\" must be true or false", v->string);
    return PERFPRED_OK;
}

static perfpred_status get_string(const cJSON *v, const char **out, pp_err *err)
{
    if (!cJSON_IsString(v) || !v->valuestring[0])
        return bad(err, "request: \"%s\" must be a non-empty string", v->string);
    *out = v->valuestring;
    return PERFPRED_OK;
}

static perfpred_status get_batch(const cJSON *v, int64_t *out, pp_err *err)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e9 ||
        v->valuedouble != floor(v->valuedouble))
        return bad(err, "request: %s: a batch is a whole number from 1 to 10^9",
                   v->string ? v->string : "batch");
    *out = (int64_t)v->valuedouble;
    return PERFPRED_OK;
}

static perfpred_status get_devices(const cJSON *v, request *r, pp_err *err)
{
    if (cJSON_IsString(v)) return get_string(v, &r->devices[r->n_devices++], err);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > REQ_MAX_LIST)
        return bad(err, "request: \"%s\" must be a device name or a list of 1 to 64", "device");
    for (const cJSON *e = v->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return bad(err, "request: \"%s\": every device is a non-empty string", "device");
        r->devices[r->n_devices++] = e->valuestring;
    }
    return PERFPRED_OK;
}

static perfpred_status get_batches(const cJSON *v, request *r, pp_err *err)
{
    if (cJSON_IsNumber(v)) return get_batch(v, &r->batches[r->n_batches++], err);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > REQ_MAX_LIST)
        return bad(err, "request: \"%s\" must be a number or a list of 1 to 64", "batch");
    perfpred_status st = PERFPRED_OK;
    for (const cJSON *e = v->child; e && !st; e = e->next)
        st = get_batch(e, &r->batches[r->n_batches++], err);
    return st;
}

static perfpred_status get_inputs(const cJSON *v, request *r, pp_err *err)
{
    if (!cJSON_IsObject(v))
        return bad(err, "request: \"%s\" must be an object {name: [dims]}", "inputs");
    for (const cJSON *e = v->child; e; e = e->next) {
        if (r->n_inputs == (int)(sizeof r->inputs / sizeof r->inputs[0]))
            return bad(err, "request: at most 16 %s", "inputs");
        perfpred_input_override *o = &r->inputs[r->n_inputs++];
        o->name = e->string;
        int rank = cJSON_GetArraySize(e);
        if (!cJSON_IsArray(e) || rank < 1 || rank > PERFPRED_MAX_RANK)
            return bad(err, "request: inputs.%s: a list of 1 to 8 dims", e->string);
        o->rank = 0;
        for (const cJSON *d = e->child; d; d = d->next) {
            if (!cJSON_IsNumber(d) || d->valuedouble < 1 || d->valuedouble > 1e12 ||
                d->valuedouble != floor(d->valuedouble))
                return bad(err, "request: inputs.%s: dims are whole numbers >= 1", e->string);
            o->dims[o->rank++] = (int64_t)d->valuedouble;
        }
    }
    return PERFPRED_OK;
}

static perfpred_status parse_request(const cJSON *root, request *r, pp_err *err)
{
    memset(r, 0, sizeof *r);
    if (!cJSON_IsObject(root)) return bad(err, "request: %s", "not a JSON object");
    perfpred_status st = PERFPRED_OK;
    for (const cJSON *v = root->child; v && !st; v = v->next) {
        const char *k = v->string;
        if (!strcmp(k, "command")) st = get_string(v, &r->command, err);
        else if (!strcmp(k, "model")) st = get_string(v, &r->model, err);
        else if (!strcmp(k, "runtime")) st = get_string(v, &r->runtime, err);
        else if (!strcmp(k, "precision")) st = get_string(v, &r->precision, err);
        else if (!strcmp(k, "device")) st = get_devices(v, r, err);
        else if (!strcmp(k, "batch")) st = get_batches(v, r, err);
        else if (!strcmp(k, "inputs")) st = get_inputs(v, r, err);
        else if (!strcmp(k, "layers")) st = get_bool(v, &r->layers, err);
        else if (!strcmp(k, "layer_sum_only")) st = get_bool(v, &r->layer_sum_only, err);
        else if (!strcmp(k, "allow_unknown")) st = get_bool(v, &r->allow_unknown, err);
        else if (!strcmp(k, "all")) st = get_bool(v, &r->all, err);
        else if (!strcmp(k, "slo_ms")) {
            if (cJSON_IsNull(v)) continue;
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || !isfinite(v->valuedouble))
                st = bad(err, "request: \"%s\" must be a number >= 0", k);
            else r->slo_ms = v->valuedouble;
        } else {
            st = bad(err, "request: unknown key \"%s\" (docs/json.md lists the keys)", k);
        }
    }
    if (st) return st;
    if (!r->command) return bad(err, "request: \"%s\" is required", "command");
    int needs_model = strcmp(r->command, "devices") != 0 && strcmp(r->command, "device") != 0;
    if (needs_model && !r->model) return bad(err, "request: %s needs \"model\"", r->command);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------ the commands ---- */

static perfpred_model *load_model(const request *r, int64_t batch, perfpred_status *st, pp_err *err)
{
    perfpred_model_params p = perfpred_model_default_params();
    /* a symbolic batch dim is 1 unless a batch is given (docs/usage.md) */
    p.batch = batch > 0 ? batch : 1;
    p.inputs = r->inputs;
    p.n_inputs = r->n_inputs;
    p.allow_unknown = r->allow_unknown;
    perfpred_model *m = perfpred_model_load(r->model, &p, st, err->msg, sizeof err->msg);
    if (!m) err->status = *st;
    return m;
}

static perfpred_status find_device(const perfpred_ctx *ctx, const char *name,
                                   perfpred_device_info *d, pp_err *err)
{
    if (perfpred_device_find(ctx, name, d) != PERFPRED_OK)
        return pp_err_set(err, PERFPRED_ERR_DEVICE,
                          "unknown device '%s' (perfpred devices lists them)", name);
    return PERFPRED_OK;
}

static cJSON *json_dims(int rank, const int64_t *dims)
{
    cJSON *a = cJSON_CreateArray();
    for (int d = 0; d < rank; d++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)dims[d]));
    return a;
}

static perfpred_status cmd_inspect(const request *r, cJSON **out, pp_err *err)
{
    perfpred_status st;
    perfpred_model *m = load_model(r, r->n_batches ? r->batches[0] : 0, &st, err);
    if (!m) return st;
    perfpred_model_totals T = perfpred_model_get_totals(m);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", r->model);
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (int i = 0; i < perfpred_model_n_inputs(m); i++) {
        int rank;
        int64_t dims[PERFPRED_MAX_RANK];
        const char *name = perfpred_model_input(m, i, &rank, dims);
        cJSON *in = cJSON_CreateObject();
        cJSON_AddStringToObject(in, "name", name);
        cJSON_AddItemToObject(in, "shape", json_dims(rank, dims));
        cJSON_AddItemToArray(ins, in);
    }
    cJSON *t = cJSON_AddObjectToObject(root, "totals");
    cJSON_AddNumberToObject(t, "nodes", (double)T.n_nodes);
    cJSON_AddNumberToObject(t, "params", (double)T.params);
    cJSON_AddNumberToObject(t, "param_bytes", (double)T.param_bytes);
    cJSON_AddNumberToObject(t, "macs", (double)T.macs);
    cJSON_AddNumberToObject(t, "flops", (double)T.flops);
    cJSON_AddNumberToObject(t, "activation_bytes", (double)T.activation_bytes);
    cJSON_AddNumberToObject(t, "peak_activation_bytes", (double)T.peak_activation_bytes);
    cJSON_AddNumberToObject(t, "input_bytes", (double)T.input_bytes);
    cJSON_AddNumberToObject(t, "unknown_ops", T.n_unknown_ops);
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (int i = 0; i < perfpred_model_n_layers(m); i++) {
        perfpred_layer_info L = perfpred_model_layer(m, i);
        if (L.folded && !r->all) continue;
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "name", L.name);
        cJSON_AddStringToObject(l, "op", L.op_type);
        cJSON_AddStringToObject(l, "kind", L.kind);
        cJSON_AddItemToObject(l, "output_shape", json_dims(L.out_rank, L.out_dims));
        cJSON_AddNumberToObject(l, "macs", (double)L.macs);
        cJSON_AddNumberToObject(l, "flops", (double)L.flops);
        cJSON_AddNumberToObject(l, "params", (double)L.params);
        cJSON_AddNumberToObject(l, "in_bytes", (double)L.in_bytes);
        cJSON_AddNumberToObject(l, "out_bytes", (double)L.out_bytes);
        cJSON_AddNumberToObject(l, "arith_intensity", L.arith_intensity);
        cJSON_AddBoolToObject(l, "folded", L.folded);
        cJSON_AddBoolToObject(l, "unknown_op", L.unknown_op);
        cJSON_AddItemToArray(layers, l);
    }
    perfpred_model_free(m);
    *out = root;
    return PERFPRED_OK;
}

static perfpred_predict_params predict_params(const request *r, const perfpred_device_info *d)
{
    perfpred_predict_params pp = perfpred_predict_default_params();
    pp.layer_sum_only = r->layer_sum_only;
    /* a stack choice applies to GPUs; the other devices keep their runtime */
    if (!d || (d->kind && strstr(d->kind, "gpu"))) {
        pp.runtime = r->runtime;
        pp.precision = r->precision;
    }
    return pp;
}

static perfpred_status cmd_predict(const perfpred_ctx *ctx, const request *r, cJSON **out,
                                   pp_err *err)
{
    if (r->n_devices != 1 || r->n_batches > 1)
        return bad(err, "request: predict takes one \"device\" and one \"batch\" (compare takes "
                        "lists)%s", "");
    perfpred_device_info dev;
    perfpred_status st = find_device(ctx, r->devices[0], &dev, err);
    if (st) return st;
    perfpred_model *m = load_model(r, r->n_batches ? r->batches[0] : 0, &st, err);
    if (!m) return st;
    int cap = perfpred_model_n_layers(m) + 1, nk = 0;
    perfpred_kernel *ks = calloc((size_t)cap, sizeof *ks);
    perfpred_predict_params pp = predict_params(r, NULL);
    pp.kernels = ks;
    pp.kernels_cap = cap;
    pp.n_kernels = &nk;
    perfpred_prediction p;
    st = ks ? perfpred_predict(ctx, m, r->devices[0], &pp, &p, err->msg, sizeof err->msg)
            : pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    if (st) {
        err->status = st;
        goto done;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", r->model);
    cJSON_AddItemToObject(root, "device", pp_json_device(&dev));
    cJSON_AddItemToObject(root, "prediction", pp_json_prediction(&p));
    if (r->layers)
        cJSON_AddItemToObject(root, "kernels",
                              pp_json_kernels(m, ks, nk < cap ? nk : cap, p.latency_ms.value));
    /* MIG advice when the device is a GPU with MIG profiles or one of its slices; a GPU without
     * profiles has none (not an error) */
    const char *gpu = dev.parent ? dev.parent : dev.kind[0] == 'g' ? dev.name : NULL;
    perfpred_mig_advice *adv = gpu ? malloc(sizeof *adv) : NULL;
    char e2[256];
    if (adv && perfpred_mig_advise_params(ctx, m, gpu, 0, &pp, adv, e2, sizeof e2) == PERFPRED_OK)
        cJSON_AddItemToObject(root, "mig", pp_json_mig_advice(adv, gpu));
    free(adv);
    *out = root;
done:
    free(ks);
    perfpred_model_free(m);
    return st;
}

static perfpred_status cmd_compare(const perfpred_ctx *ctx, const request *r, cJSON **out,
                                   pp_err *err)
{
    perfpred_status st = PERFPRED_OK;
    if (r->n_devices < 1) return bad(err, "request: compare needs \"device\": [names]%s", "");
    perfpred_device_info info;
    for (int d = 0; d < r->n_devices && !st; d++) st = find_device(ctx, r->devices[d], &info, err);
    if (st) return st;
    int nb = r->n_batches ? r->n_batches : 1, nr = 0;
    pp_cmp_row *rows = calloc((size_t)nb * (size_t)r->n_devices, sizeof *rows);
    if (!rows) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    for (int b = 0; b < nb && !st; b++) {
        perfpred_model *m = load_model(r, r->n_batches ? r->batches[b] : 0, &st, err);
        if (!m) break;
        for (int d = 0; d < r->n_devices && !st; d++) {
            pp_cmp_row *row = &rows[nr];
            perfpred_device_find(ctx, r->devices[d], &row->dev);
            perfpred_predict_params pp = predict_params(r, &row->dev);
            st = perfpred_predict(ctx, m, r->devices[d], &pp, &row->p, err->msg, sizeof err->msg);
            if (st) err->status = st;
            else nr++;
        }
        perfpred_model_free(m);
    }
    if (!st) *out = pp_json_compare(r->model, rows, nr);
    free(rows);
    return st;
}

static perfpred_status cmd_mig(const perfpred_ctx *ctx, const request *r, cJSON **out, pp_err *err)
{
    if (r->n_devices > 1) return bad(err, "mig: one GPU with --device (default a100)%s", "");
    const char *gpu = r->n_devices ? r->devices[0] : "a100";
    perfpred_status st;
    perfpred_model *m = load_model(r, r->n_batches ? r->batches[0] : 0, &st, err);
    if (!m) return st;
    perfpred_mig_advice *a = malloc(sizeof *a);
    perfpred_predict_params pp = predict_params(r, NULL);
    st = a ? perfpred_mig_advise_params(ctx, m, gpu, r->slo_ms, &pp, a, err->msg, sizeof err->msg)
           : pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    if (st) {
        err->status = st;
    } else {
        *out = pp_json_mig_advice(a, gpu);
        cJSON_AddStringToObject(*out, "model", r->model);
    }
    free(a);
    perfpred_model_free(m);
    return st;
}

static perfpred_status cmd_devices(const perfpred_ctx *ctx, const request *r, cJSON **out,
                                   pp_err *err)
{
    if (strcmp(r->command, "device") == 0) {
        if (r->n_devices != 1) return bad(err, "request: device takes one \"device\"%s", "");
        perfpred_device_info d;
        perfpred_status st = find_device(ctx, r->devices[0], &d, err);
        if (!st) *out = pp_json_device(&d);
        return st;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < perfpred_device_count(ctx); i++) {
        perfpred_device_info d;
        perfpred_device_at(ctx, i, &d);
        cJSON_AddItemToArray(arr, pp_json_device(&d));
    }
    *out = arr;
    return PERFPRED_OK;
}

char *perfpred_json(const perfpred_ctx *ctx, const char *request_text, perfpred_status *status,
                    char *errbuf, size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    cJSON *req = NULL, *ans = NULL;
    char *text = NULL;
    request r;
    if (!request_text) {
        st = bad(&err, "perfpred_json: %s", "NULL request");
        goto done;
    }
    const char *end = NULL; /* where parsing stopped (not cJSON's global error pointer) */
    if (!(req = cJSON_ParseWithOpts(request_text, &end, 1))) {
        st = pp_err_set(&err, PERFPRED_ERR_PARSE, "request: not valid JSON at offset %ld: '%.40s'",
                        end ? (long)(end - request_text) : 0L, end ? end : "");
        goto done;
    }
    if ((st = parse_request(req, &r, &err))) goto done;
    if (!ctx && strcmp(r.command, "inspect") != 0) {
        st = bad(&err, "perfpred_json: %s needs a context", r.command);
        goto done;
    }
    if (!strcmp(r.command, "inspect")) st = cmd_inspect(&r, &ans, &err);
    else if (!strcmp(r.command, "predict")) st = cmd_predict(ctx, &r, &ans, &err);
    else if (!strcmp(r.command, "compare")) st = cmd_compare(ctx, &r, &ans, &err);
    else if (!strcmp(r.command, "mig")) st = cmd_mig(ctx, &r, &ans, &err);
    else if (!strcmp(r.command, "devices") || !strcmp(r.command, "device"))
        st = cmd_devices(ctx, &r, &ans, &err);
    else
        st = bad(&err, "request: unknown command '%s' (predict, compare, mig, devices, device, "
                       "inspect)", r.command);
    if (!st && !(text = ans ? cJSON_Print(ans) : NULL))
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
done:
    cJSON_Delete(req);
    cJSON_Delete(ans);
    if (status) *status = st;
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st ? NULL : text;
}
