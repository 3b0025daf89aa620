/* fit/fit_stacks.c: fits a GPU runtime stack (predictor/stack.h) on framework-tax-gpus'
 * whole-model rows: per-op host costs, per-class efficiencies and the shortest kernel by
 * Nelder-Mead on the mean |log(predicted / measured)| latency, then memory: each row's caching
 * allocator segments are replayed (predictor/allocator.h) as its run made them, and the context
 * per GPU architecture is the median of what the rows leave beyond them. Leave-one-GPU-out refits
 * the stack without each GPU and predicts that GPU. */
#include "fit/fit.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "predictor/calib.h"

/* host_hi: the most one kernel may cost the host. Eager and TorchScript run each op through the
 * Python or TorchScript interpreter and the dispatcher (up to 400 us); TensorRT's runtime
 * launches an engine's kernels from C++ within one enqueue per call (a launch costs a few us),
 * so its per-kernel cost is at most 10 us and the call's own cost takes the rest. */
static const struct {
    const char *name, *framework, *suffix;
    pp_precision prec;
    int tf32, fuse, bn, acc16;
    double host_hi;
} stack_defs[] = {
    /* PyTorch's default allow_tf32 for cuDNN: convolutions on TF32 tensor cores on Ampere */
    /* eager and a traced (unfrozen) TorchScript run BatchNorm as a kernel of its own */
    /* PyTorch asks cuDNN and cuBLAS for fp32 accumulation of fp16 tensors */
    {"pytorch-eager-fp32", "pytorch-eager", "pretrained-fp32", PP_PREC_FP32, 1, 0, 1, 0, 400},
    {"pytorch-eager-fp16", "pytorch-eager", "pretrained-fp16", PP_PREC_FP16, 0, 0, 1, 0, 400},
    {"torchscript-fp32", "torchscript", "pretrained-torchscript", PP_PREC_FP32, 1, 0, 1, 0, 400},
    {"torchscript-fp16", "torchscript", "pretrained-torchscript-fp16", PP_PREC_FP16, 0, 0, 1, 0,
     400},
    /* TensorRT builds fp32 engines with TF32 allowed, folds BatchNorm into the convolution and
     * fuses bias/activation epilogues; in fp16 its tactics may accumulate in fp16 (VGG-16 runs at
     * 107 TFLOP/s by the direct count on the RTX 3090, whose fp32-accumulate rate is 71) */
    {"tensorrt-fp32", "tensorrt", "pretrained-trt", PP_PREC_FP32, 1, 1, 0, 0, 10},
    {"tensorrt-fp16", "tensorrt", "pretrained-trt-fp16", PP_PREC_FP16, 0, 1, 0, 1, 10},
};
#define N_STACKS ((int)(sizeof stack_defs / sizeof stack_defs[0]))

/* The share of the L2 a kernel may find an earlier kernel's output in (pp_stack.l2_share): the
 * whole of it, the datasheet's size; not fitted */
#define PP_FIT_L2_SHARE 1.0

/* GPU file stems (lower case) -> descriptors. The V100's form factor is not recorded: the SXM2
 * 32GB card is assumed (docs/gpu-stacks.md). */
static const char *const gpu_map[][2] = {
    {"1080ti", "gtx-1080-ti"},   {"2080ti", "rtx-2080-ti"},        {"3090", "rtx-3090"},
    {"3090-1", "rtx-3090"},      {"a6000", "rtx-a6000"},           {"rtx-8000", "quadro-rtx-8000"},
    {"titanx", "titan-x-pascal"}, {"v100", "v100-sxm2-32gb"},
    {"h100", "h100-sxm5-80gb"},  {"h200", "h200-sxm-141gb"}, /* the project's own (data/gpu-stacks) */
};

/* The authors' short names -> torchvision exports (SOURCE.md), checked by parameter count. */
static const char *const model_map[][2] = {
    {"vit32", "vit_b_32"},           {"efficientnet", "efficientnet_v2_m"},
    {"resnet18", "resnet18"},        {"alexnet", "alexnet"},
    {"squeezenet", "squeezenet1_0"}, {"vgg16", "vgg16"},
    {"densenet", "densenet161"},     {"inception", "inception_v3"},
    {"googlenet", "googlenet"},      {"shufflenet", "shufflenet_v2_x1_0"},
    {"mobilenet_v2", "mobilenet_v2"}, {"resnext50_32x4d", "resnext50_32x4d"},
    {"wide_resnet50_2", "wide_resnet50_2"}, {"mnasnet", "mnasnet1_0"},
    {"resnet50", "resnet50"},        {"efficientnet_b0", "efficientnet_b0"},
};
#define N_MODELS ((int)(sizeof model_map / sizeof model_map[0]))

/* Model families for leaving one out: a design and the models that share it (GoogLeNet is
 * Inception v1; MNASNet is built of MobileNetV2's inverted residuals). Indexed like model_map. */
static const char *const family_names[] = {"vit",        "efficientnet", "resnet",  "alexnet",
                                           "squeezenet", "vgg",          "densenet", "inception",
                                           "shufflenet", "mobilenet"};
static const int model_family[] = {0, 1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 2, 2, 9, 2, 1};
#define N_FAMILIES ((int)(sizeof family_names / sizeof family_names[0]))

pp_fit_stack_params pp_fit_stack_default_params(void)
{
    pp_fit_stack_params p = {0};
    p.threads = 1;
    p.leave_one_out = 1;
    return p;
}

/* ------------------------------------------------------------------ rows ---- */

typedef struct cfg {          /* one (model, batch) graph, as the stack sees it */
    int model;
    int64_t batch;
    pp_stack_kernel *k;
    int n;
    double w, act;            /* fp32 weight bytes, peak live activation bytes */
    pp_alloc_trace tr;        /* eager PyTorch's allocations of one pass */
} cfg;

/* Convolution workspace factors tried (the stack's ws_factor is one of them). */
static const double ws_grid[] = {0, 0.25, 0.5, 0.75, 1, 1.5, 2};
#define N_WS ((int)(sizeof ws_grid / sizeof ws_grid[0]))

typedef struct row {
    int gpu, cfg, folder;
    int file;                 /* the CSV file it came from (one process ran the file) */
    int sweep;                /* public framework-tax rows (2022 software): one process ran a
                                 model's batch sizes in the file's order without emptying the
                                 allocator's cache; the project's own rows (current software):
                                 its runners empty it before each configuration */
    int graph;                /* an eager stack's forward replayed as a CUDA graph (run folders
                                 *_<suffix>-graph): the same kernels with no host dispatch, so
                                 the row times the GPU's side of the pipeline alone; latency
                                 only, and apart from the eager rows' figures */
    const pp_device *dev;
    double lat_ms, mem_bytes;
    double res[N_WS];         /* allocator's reserved bytes after the row's pass, per ws_grid */
    double *tc, *tm, *nd;     /* unit times of cfg's kernels on dev; bytes per SM-clock */
} row;

typedef struct data {
    const pp_device_db *db;
    const pp_fit_stack_params *p;
    int si;
    row *rows;
    int n_rows, cap_rows;
    cfg *cfgs;
    int n_cfgs, cap_cfgs;
    const pp_device *gpus[PP_FIT_STACK_MAX_GPUS];
    int n_gpus;
    int64_t model_params[N_MODELS]; /* ONNX parameter count, 0 = not loaded */
    double torch_params[N_MODELS];  /* the export's PyTorch count (reference.csv), 0 = unknown */
    pp_fit_stack_report *rep;
    int cur_folder, cur_file, cur_sweep, cur_graph;
    const char *cur_path;
    int col[6];               /* model, batch_size, input_size, latency, max_memory, total_params */
    int max_kernels;
    const pp_device *ref;     /* whose fusion rules group the kernels */
} data;

static void skip(data *D, const char *fmt, const char *a, int line)
{
    D->rep->n_skipped++;
    if (!D->rep->skipped_why[0])
        snprintf(D->rep->skipped_why, sizeof D->rep->skipped_why, fmt, a, line);
}

/* Models whose rows under stack si time something other than the stack: Torch-TensorRT of 2022
 * (framework-tax's *-trt runs) compiled ShuffleNet V2 into engines with PyTorch segments between
 * them, whose switches cost the host milliseconds a call: 8.4-9.6 ms (Turing cards) and
 * 12.5-13.3 ms (RTX 3090) at every batch from 1 to 128, 7-10x ResNet-18's batch-1 time on the
 * same cards, where TensorRT's own engine of it would grow with the batch like the rest. */
static int not_one_engine(int si, const char *model)
{
    return strcmp(stack_defs[si].framework, "tensorrt") == 0 && strcmp(model, "shufflenet") == 0;
}

static int model_index(const char *name)
{
    for (int i = 0; i < N_MODELS; i++)
        if (strcmp(model_map[i][0], name) == 0) return i;
    return -1;
}

static perfpred_status load_cfg(data *D, int model, int64_t batch, int *out, pp_err *err)
{
    for (int i = 0; i < D->n_cfgs; i++)
        if (D->cfgs[i].model == model && D->cfgs[i].batch == batch) return *out = i, PERFPRED_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.onnx", D->p->models_dir, model_map[model][1]);
    perfpred_model_params mp = perfpred_model_default_params();
    mp.batch = batch;
    perfpred_status st;
    char msg[512];
    perfpred_model *m = perfpred_model_load(path, &mp, &st, msg, sizeof msg);
    if (m) {
        /* framework-tax ran every vision model at 224 x 224 */
        const pp_graph *g = pp_model_graph(m);
        const pp_tensor *in = &g->tensors[g->inputs[0]];
        if (in->rank == 4 && (in->dims[2] != 224 || in->dims[3] != 224)) {
            char in_name[256];
            snprintf(in_name, sizeof in_name, "%s", in->name);
            perfpred_input_override ov = {in_name, 4, {batch, in->dims[1], 224, 224}};
            mp.inputs = &ov;
            mp.n_inputs = 1;
            perfpred_model_free(m);
            m = perfpred_model_load(path, &mp, &st, msg, sizeof msg);
        }
    }
    if (!m) return pp_err_set(err, st, "%s", msg);
    if (D->n_cfgs == D->cap_cfgs) {
        int nc = D->cap_cfgs ? 2 * D->cap_cfgs : 64;
        cfg *c = realloc(D->cfgs, (size_t)nc * sizeof *c);
        if (!c) {
            perfpred_model_free(m);
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        }
        D->cfgs = c;
        D->cap_cfgs = nc;
    }
    const pp_graph *g = pp_model_graph(m);
    cfg *c = &D->cfgs[D->n_cfgs];
    memset(c, 0, sizeof *c);
    c->model = model;
    c->batch = batch;
    c->w = (double)g->totals.param_bytes;
    c->act = (double)g->totals.peak_activation_bytes;
    D->model_params[model] = g->totals.params;
    st = pp_graph_stack_kernels(g, D->ref, &c->k, &c->n, err);
    if (!st)
        st = pp_alloc_trace_build(g, stack_defs[D->si].bn,
                                  strcmp(stack_defs[D->si].framework, "tensorrt") == 0, &c->tr, err);
    perfpred_model_free(m);
    if (st) {
        free(c->k);
        pp_alloc_trace_free(&c->tr);
        return st;
    }
    if (c->n > D->max_kernels) D->max_kernels = c->n;
    *out = D->n_cfgs++;
    return PERFPRED_OK;
}

static int gpu_slot(data *D, const pp_device *dev)
{
    for (int i = 0; i < D->n_gpus; i++)
        if (D->gpus[i] == dev) return i;
    if (D->n_gpus == PP_FIT_STACK_MAX_GPUS) return -1;
    D->gpus[D->n_gpus] = dev;
    return D->n_gpus++;
}

typedef struct file_ctx {
    data *D;
    const pp_device *dev;
    int gpu;
} file_ctx;

static int on_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    file_ctx *F = user;
    data *D = F->D;
    static const char *const cols[6] = {"model",   "batch_size", "input_size",
                                        "latency", "max_memory", "total_params"};
    if (is_header) {
        for (int c = 0; c < 6; c++) {
            D->col[c] = -1;
            for (int i = 0; i < rec->n_fields; i++)
                if (strcmp(rec->fields[i], cols[c]) == 0) D->col[c] = i;
            if (D->col[c] < 0)
                return pp_err_set(err, PERFPRED_ERR_PARSE, "%s:1: no column '%s'", rec->path,
                                  cols[c]), 1;
        }
        return 0;
    }
    const char *f[6];
    for (int c = 0; c < 6; c++) f[c] = D->col[c] < rec->n_fields ? rec->fields[D->col[c]] : "";
    int model = model_index(f[0]);
    if (model < 0) return 0; /* language and timm models: no torchvision export */
    if (not_one_engine(D->si, f[0])) {
        skip(D, "%s:%d: the run did not compile this model into one engine", rec->path,
             rec->line);
        return 0;
    }
    /* an empty max_memory (a run whose NVML reading failed) keeps the row for latency only */
    double batch, lat, mem = NAN, params, insz;
    if (!f[3][0] || pp_parse_double(f[1], &batch) || pp_parse_double(f[3], &lat) ||
        (f[4][0] && (pp_parse_double(f[4], &mem) || !(mem > 0))) ||
        pp_parse_double(f[5], &params) || pp_parse_double(f[2], &insz) || batch < 1 ||
        batch > 4096 || !(lat > 0)) {
        skip(D, "%s:%d: missing or bad number", rec->path, rec->line);
        return 0;
    }
    if (insz != 224) {
        skip(D, "%s:%d: input size other than 224", rec->path, rec->line);
        return 0;
    }
    if (F->gpu < 0 && (F->gpu = gpu_slot(D, F->dev)) < 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: more than %d GPUs", rec->path,
                          PP_FIT_STACK_MAX_GPUS), 1;
    int ci;
    perfpred_status st = load_cfg(D, model, (int64_t)batch, &ci, err);
    if (st) return 1;
    /* PyTorch counts parameters the ONNX graph drops (aux classifiers, folded BatchNorm) */
    double ref = D->torch_params[model] > 0 ? D->torch_params[model]
                                            : (double)D->model_params[model];
    if (fabs(ref - params) > 0.02 * params) {
        skip(D, "%s:%d: total_params differs from the export's by more than 2 %%", rec->path,
             rec->line);
        return 0;
    }
    /* the same configuration twice in one run folder (3090.csv and 3090-1.csv) is one row */
    for (int i = 0; i < D->n_rows; i++) {
        row *r = &D->rows[i];
        if (r->gpu == F->gpu && r->cfg == ci && r->folder == D->cur_folder) return 0;
    }
    if (D->n_rows == D->cap_rows) {
        int nc = D->cap_rows ? 2 * D->cap_rows : 256;
        row *r = realloc(D->rows, (size_t)nc * sizeof *r);
        if (!r) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory"), 1;
        D->rows = r;
        D->cap_rows = nc;
    }
    row *r = &D->rows[D->n_rows++];
    memset(r, 0, sizeof *r);
    r->gpu = F->gpu;
    r->dev = F->dev;
    r->cfg = ci;
    r->folder = D->cur_folder;
    r->file = D->cur_file;
    r->sweep = D->cur_sweep;
    r->graph = D->cur_graph;
    r->lat_ms = lat * 1e3;
    r->mem_bytes = mem;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int wanted_file(const data *D, const char *stem)
{
    if (!D->p->only_gpu_files) return 1;
    size_t len;
    const char *cur = D->p->only_gpu_files;
    for (const char *it; (it = pp_list_item(&cur, &len));)
        if (len == strlen(stem) && strncasecmp(it, stem, len) == 0) return 1;
    return 0;
}

static perfpred_status read_folder(data *D, const char *top, const char *folder, pp_err *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", top, folder);
    DIR *dp = opendir(dir);
    if (!dp) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open", dir);
    char *names[64];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".csv") == 0) names[n++] = strdup(e->d_name);
    }
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < n; i++) {
        if (!names[i]) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            continue;
        }
        char stem[64];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
        const char *dev_name = NULL;
        for (size_t m = 0; m < sizeof gpu_map / sizeof gpu_map[0]; m++)
            if (strcasecmp(gpu_map[m][0], stem) == 0) dev_name = gpu_map[m][1];
        if (!st && dev_name && wanted_file(D, stem)) {
            const pp_device *dev = pp_devices_find(D->db, dev_name);
            if (!dev) {
                st = pp_err_set(err, PERFPRED_ERR_DEVICE, "%s/%s: no descriptor '%s'", dir,
                                names[i], dev_name);
            } else {
                char path[4400];
                snprintf(path, sizeof path, "%s/%s", dir, names[i]);
                file_ctx F = {D, dev, -1};
                D->cur_file++;
                st = pp_measure_csv_read(path, on_record, &F, err);
            }
        }
        free(names[i]);
    }
    return st;
}

/* The exports' own PyTorch parameter counts (models_dir/reference.csv: model, params_torch). */
static int on_reference(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    data *D = user;
    (void)err;
    if (is_header) {
        D->col[0] = D->col[1] = -1;
        for (int i = 0; i < rec->n_fields; i++) {
            if (strcmp(rec->fields[i], "model") == 0) D->col[0] = i;
            if (strcmp(rec->fields[i], "params_torch") == 0) D->col[1] = i;
        }
        return 0;
    }
    if (D->col[0] < 0 || D->col[1] < 0 || D->col[0] >= rec->n_fields || D->col[1] >= rec->n_fields)
        return 0;
    for (int m = 0; m < N_MODELS; m++) {
        double v;
        if (strcmp(rec->fields[D->col[0]], model_map[m][1]) == 0 &&
            pp_parse_double(rec->fields[D->col[1]], &v) == 0)
            D->torch_params[m] = v;
    }
    return 0;
}

/* 0 when run folder `name` is not the stack's, 1 when it is, 2 when it holds the stack's
 * forwards replayed as CUDA graphs ("<date>_<suffix>-graph"; eager stacks only). */
static int folder_kind(const data *D, const char *name)
{
    const char *u = strrchr(name, '_'), *suffix = stack_defs[D->si].suffix;
    size_t len = strlen(suffix);
    if (!u || strncmp(u + 1, suffix, len) != 0) return 0;
    if (u[1 + len] == 0) return 1;
    return strcmp(stack_defs[D->si].framework, "pytorch-eager") == 0 &&
                   strcmp(u + 1 + len, "-graph") == 0
               ? 2
               : 0;
}

/* Run folders of the stack in top: "<date>_<suffix>" (and its graph replays), read in name order
 * and numbered from *folder_no on (a folder's number tells repeats of one configuration apart). */
static perfpred_status read_top(data *D, const char *top, int *folder_no, pp_err *err)
{
    DIR *dp = opendir(top);
    if (!dp) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open", top);
    char *names[128];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) && n < 128)
        if (folder_kind(D, e->d_name)) names[n++] = strdup(e->d_name);
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < n; i++) {
        D->cur_folder = (*folder_no)++;
        D->cur_graph = names[i] && folder_kind(D, names[i]) == 2;
        if (!st) st = names[i] ? read_folder(D, top, names[i], err)
                               : pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        free(names[i]);
    }
    D->cur_graph = 0;
    return st;
}

static perfpred_status read_data(data *D, pp_err *err)
{
    char ref[4096];
    snprintf(ref, sizeof ref, "%s/reference.csv", D->p->models_dir);
    FILE *rf = fopen(ref, "r");
    if (rf) {
        fclose(rf);
        perfpred_status rs = pp_measure_csv_read(ref, on_reference, D, err);
        if (rs) return rs;
    }
    int folder_no = 0;
    D->cur_sweep = 1;
    perfpred_status st = read_top(D, D->p->data_dir, &folder_no, err);
    D->cur_sweep = 0;
    if (!st && D->p->own_data_dir) st = read_top(D, D->p->own_data_dir, &folder_no, err);
    if (!st && D->n_rows == 0)
        st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: no usable rows for stack %s (folders *_%s)",
                        D->p->data_dir, stack_defs[D->si].name, stack_defs[D->si].suffix);
    return st;
}

/* ------------------------------------------------------------------ fit ---- */

#define NP (6 + PP_SK__COUNT * 2) /* call, host[5], eff[5], fp32_dual, tc_feed, host_bn, gpu_min,
                                   mem_feed */

/* Physical ranges of the fitted figures; the optimiser works on x with p = lo + (hi - lo) / (1 +
 * e^-x), so it can never leave them. Host: 0.5 us (a bare launch) to 400 us per op; efficiency
 * at most the peak, except 3x3 stride-1 convolutions, which Winograd F(2x2, 3x3) lets do 2.25x
 * fewer multiplies than the direct count; bandwidth 10-100 %; on doubled fp32 lanes 10-100 % of
 * the fp32 lanes' share; tensor cores fed 64-8,192 FLOP per SM per clock (the densest datasheet
 * rate, Hopper's fp8, is 8,192); a kernel 1-30 us at least; an SM streams 1-256 bytes a clock
 * from the DRAM (its L1 moves 64-128). */
static const double lo_[NP] = {0,    0.5, 0.5, 0.5, 0.5, 0.5, 0.02, 0.02,
                               0.02, 0.02, 0.1, 0.1, 64, 0.5, 1, 1};
static const double hi_[NP] = {3000, 400, 400, 400, 400, 400, 1.0, 2.25,
                               1.0,  1.0, 1.0, 1.0, 8192, 400, 30, 256};

static double from_x(const double *x, int i) { return lo_[i] + (hi_[i] - lo_[i]) / (1 + exp(-x[i])); }

static double to_x(double v, int i)
{
    double u = (v - lo_[i]) / (hi_[i] - lo_[i]);
    u = fmin(1 - 1e-6, fmax(1e-6, u));
    return log(u / (1 - u));
}

/* host_hi: the stack's bound on a kernel's host cost (stack_defs), below hi_'s. seen[0]: some
 * training row ran a conv or matmul on tensor cores; seen[1]: on doubled fp32 lanes. What no row
 * measured keeps the share 1, the datasheet's word. */
static void stack_from_x(const double *x, pp_stack *s, double host_hi, const int *seen)
{
    s->call_us = from_x(x, 0);
    for (int c = 0; c < PP_SK__COUNT; c++) {
        double h = from_x(x, 1 + c);
        s->host_us[c] = host_hi < hi_[1 + c] ? lo_[1 + c] + (h - lo_[1 + c]) *
                                                                 (host_hi - lo_[1 + c]) /
                                                                 (hi_[1 + c] - lo_[1 + c])
                                             : h;
        s->eff[c] = from_x(x, 1 + PP_SK__COUNT + c);
    }
    if (s->one_gemm) s->eff[PP_SK_MATMUL] = s->eff[PP_SK_CONV];
    /* every op pays at least an element-wise op's dispatch; a convolution or matrix product adds
     * its library's set-up (cuDNN, cuBLAS: 2-3x an add in torch.profiler, lab/op_host_profile.py).
     * Their parameters are the excess over the memory class's, so a fit whose rows hold few of a
     * class (a CNN family: one matrix product) cannot price it below an add */
    for (int c = 0; c < PP_SK__COUNT; c++) {
        if (c == PP_SK_MEM) continue;
        double cap = host_hi < hi_[1 + c] ? host_hi : hi_[1 + c];
        s->host_us[c] = fmin(cap, s->host_us[PP_SK_MEM] + s->host_us[c] - lo_[1 + c]);
    }
    s->fp32_dual_eff = seen[1] ? from_x(x, NP - 5) : 1.0;
    s->tc_feed = seen[0] ? from_x(x, NP - 4) : 0.0;
    /* the BatchNorm pass's own host cost; a stack that folds BatchNorm runs none */
    s->host_bn_us = s->bn_kernel ? from_x(x, NP - 3) : s->host_us[PP_SK_MEM];
    s->gpu_min_us = from_x(x, NP - 2);
    s->mem_feed = from_x(x, NP - 1);
}

typedef struct fit_job {
    data *D;
    int held;                 /* GPU left out, -1 = none */
    int held_family;          /* model family left out, -1 = none */
    pp_stack s;
    double *scratch;
    int evals;
    int tc_seen[2];           /* stack_from_x's seen: rows on tensor cores, rows on doubled
                                 fp32 lanes */
    double graph_w;           /* graph_weight */
} fit_job;

/* 1 when the fit leaving out GPU `held` and family `fam` (-1: none) must not see row r */
static int held_row(int held, int fam, const data *D, const row *r)
{
    return r->gpu == held || (fam >= 0 && model_family[D->cfgs[r->cfg].model] == fam);
}

/* What s predicts for row r; host_ms and gpu_ms (optional) as pp_stack_latency_units_ms's. A
 * graph row is the same kernels with no host dispatch. */
static double row_latency_split(const pp_stack *s, const row *r, const cfg *c, double *scratch,
                                double *host_ms, double *gpu_ms)
{
    pp_stack g;
    if (r->graph) {
        g = *s;
        pp_stack_graph_replay(&g);
        s = &g;
    }
    return pp_stack_latency_units_ms(s, r->dev, c->k, r->tc, r->tm, r->nd, c->n, scratch, host_ms,
                                     gpu_ms);
}

static double row_latency(const pp_stack *s, const row *r, const cfg *c, double *scratch)
{
    return row_latency_split(s, r, c, scratch, NULL, NULL);
}

/* |predicted / measured - 1| of row r's latency under s, in % */
static double row_ape(const pp_stack *s, const row *r, const cfg *c, double *scratch)
{
    return fabs(row_latency(s, r, c, scratch) / r->lat_ms - 1) * 100;
}

/* The weight of each graph row in J's fit: the graph rows together weigh as much as one GPU's
 * rows on average (they are one more run of one GPU, and the only rows that time the kernels
 * without the host; counted as single rows among thousands they would not move the figures of
 * the GPU's side at all). */
static double graph_weight(const fit_job *J)
{
    const data *D = J->D;
    int n = 0, ng = 0;
    char seen[PP_FIT_STACK_MAX_GPUS] = {0};
    int gpus = 0;
    for (int i = 0; i < D->n_rows; i++) {
        const row *r = &D->rows[i];
        if (held_row(J->held, J->held_family, D, r)) continue;
        if (r->graph) {
            ng++;
            continue;
        }
        n++;
        if (!seen[r->gpu]) seen[r->gpu] = 1, gpus++;
    }
    return ng && gpus ? (double)n / gpus / ng : 1;
}

static double objective(fit_job *J, const double *x)
{
    data *D = J->D;
    stack_from_x(x, &J->s, stack_defs[D->si].host_hi, J->tc_seen);
    double sum = 0, n = 0;
    for (int i = 0; i < D->n_rows; i++) {
        const row *r = &D->rows[i];
        if (held_row(J->held, J->held_family, D, r)) continue;
        double p = row_latency(&J->s, r, &D->cfgs[r->cfg], J->scratch);
        double w = r->graph ? J->graph_w : 1;
        sum += w * fabs(log(p / r->lat_ms));
        n += w;
    }
    J->evals++;
    return n > 0 ? sum / n : 0;
}

/* Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5) from x0 with step h. */
static void nelder_mead(fit_job *J, double *x0, double h, int max_evals)
{
    double P[NP + 1][NP], f[NP + 1];
    for (int i = 0; i <= NP; i++) {
        memcpy(P[i], x0, sizeof P[i]);
        if (i > 0) P[i][i - 1] += h;
        f[i] = objective(J, P[i]);
    }
    int start = J->evals;
    while (J->evals - start < max_evals) {
        int lo = 0, hi = 0, nh = 0;
        for (int i = 1; i <= NP; i++) {
            if (f[i] < f[lo]) lo = i;
            if (f[i] > f[hi]) hi = i;
        }
        nh = lo == 0 ? 1 : 0;
        for (int i = 0; i <= NP; i++)
            if (i != hi && f[i] > f[nh]) nh = i;
        if (f[hi] - f[lo] < 1e-7) break;
        double cen[NP] = {0}, xr[NP], xe[NP], xc[NP];
        for (int i = 0; i <= NP; i++)
            if (i != hi)
                for (int j = 0; j < NP; j++) cen[j] += P[i][j] / NP;
        for (int j = 0; j < NP; j++) xr[j] = cen[j] + (cen[j] - P[hi][j]);
        double fr = objective(J, xr);
        if (fr < f[lo]) {
            for (int j = 0; j < NP; j++) xe[j] = cen[j] + 2 * (cen[j] - P[hi][j]);
            double fe = objective(J, xe);
            if (fe < fr) memcpy(P[hi], xe, sizeof xe), f[hi] = fe;
            else memcpy(P[hi], xr, sizeof xr), f[hi] = fr;
        } else if (fr < f[nh]) {
            memcpy(P[hi], xr, sizeof xr), f[hi] = fr;
        } else {
            for (int j = 0; j < NP; j++) xc[j] = cen[j] + 0.5 * (P[hi][j] - cen[j]);
            double fc = objective(J, xc);
            if (fc < f[hi]) {
                memcpy(P[hi], xc, sizeof xc), f[hi] = fc;
            } else {
                for (int i = 0; i <= NP; i++) {
                    if (i == lo) continue;
                    for (int j = 0; j < NP; j++) P[i][j] = P[lo][j] + 0.5 * (P[i][j] - P[lo][j]);
                    f[i] = objective(J, P[i]);
                }
            }
        }
    }
    int lo = 0;
    for (int i = 1; i <= NP; i++)
        if (f[i] < f[lo]) lo = i;
    memcpy(x0, P[lo], sizeof P[lo]);
}

/* The allocator's reserved bytes after each row's pass, for every workspace factor: a framework-tax
 * file's rows of one model replayed in order through one allocator (their sweep: its
 * main_pretrained.py builds the model again for each batch size while the previous one is still
 * bound, so each row after the first reloads the weights first), the project's own rows each in
 * a fresh one. The device's memory less 1 GiB for the context bounds what the allocator may hold
 * (past it, it returns its cache, as PyTorch does). */
static perfpred_status replay_rows(data *D, pp_err *err)
{
    pp_stack probe = {0};
    probe.precision = stack_defs[D->si].prec;
    char *done = calloc((size_t)D->n_rows + 1, 1);
    if (!done) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; !st && i < D->n_rows; i++) {
        if (done[i]) continue;
        const row *r0 = &D->rows[i];
        for (int k = 0; !st && k < N_WS; k++) {
            probe.ws_factor = ws_grid[k];
            double cap = r0->dev->memory_gb > 1 ? (r0->dev->memory_gb - 1) * 1073741824.0 : 0;
            pp_alloc_params ap = pp_stack_alloc_params(&probe, r0->dev, cap);
            pp_alloc_sim *sim = NULL;
            for (int j = i; !st && j < D->n_rows; j++) {
                row *r = &D->rows[j];
                if (j != i && (!r0->sweep || r->file != r0->file ||
                               D->cfgs[r->cfg].model != D->cfgs[r0->cfg].model))
                    continue;
                if (!sim && !(sim = pp_alloc_sim_new())) {
                    st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
                    break;
                }
                if (j != i) st = pp_alloc_sim_rebuild(sim, &D->cfgs[r->cfg].tr, &ap, err);
                if (!st) st = pp_alloc_sim_run(sim, &D->cfgs[r->cfg].tr, &ap, err);
                ap.with_weights = 0;
                r->res[k] = pp_alloc_sim_stats(sim).reserved;
                done[j] = 1;
                if (!r0->sweep) break;
            }
            pp_alloc_sim_free(sim);
        }
    }
    free(done);
    return st;
}

static int ws_index(double f)
{
    for (int k = 0; k < N_WS; k++)
        if (fabs(ws_grid[k] - f) < 1e-9) return k;
    return 0;
}

/* Context per architecture and software and the workspace factor, from the rows the fit may see
 * (held_row): for each factor of ws_grid, ctx(cc, software) = the median over the GPUs of that
 * architecture and software of each GPU's median (used - reserved - its SMs' local memory,
 * pp_stack_lmem_mb), so that a GPU with more rows
 * does not speak for the others; the factor kept is the one with the least mean
 * |log(predicted / used)|. */
static void fit_memory(const data *D, int held, int fam, pp_stack *s, double *buf)
{
    double best_err = INFINITY;
    pp_stack best = *s;
    for (int k = 0; k < N_WS; k++) {
        s->n_ctx = 0;
        s->ws_factor = ws_grid[k];
        for (int gi = 0; gi < 2 * D->n_gpus; gi++) {
            double cc = D->gpus[gi / 2]->compute_capability;
            int cur = gi % 2;
            if (gi / 2 == held || cc <= 0) continue;
            int seen = 0;
            for (int m = 0; m < s->n_ctx; m++)
                seen |= fabs(s->ctx_cc[m] - cc) < 1e-9 && s->ctx_current[m] == cur;
            if (seen || s->n_ctx == PP_STACK_MAX_CTX) continue;
            double per_gpu[PP_FIT_STACK_MAX_GPUS];
            int ng = 0;
            for (int g = 0; g < D->n_gpus; g++) {
                if (g == held || fabs(D->gpus[g]->compute_capability - cc) > 1e-9) continue;
                int n = 0;
                for (int i = 0; i < D->n_rows; i++) {
                    const row *r = &D->rows[i];
                    if (r->gpu != g || held_row(held, fam, D, r) || r->sweep == cur ||
                        isnan(r->mem_bytes))
                        continue;
                    buf[n++] = (r->mem_bytes - r->res[k]) / 1048576.0 - pp_stack_lmem_mb(r->dev);
                }
                if (n) per_gpu[ng++] = pp_measure_median(buf, n);
            }
            if (ng == 0) continue;
            s->ctx_cc[s->n_ctx] = cc;
            s->ctx_mb[s->n_ctx] = fmax(0, pp_measure_median(per_gpu, ng));
            s->ctx_current[s->n_ctx] = cur;
            s->n_ctx++;
        }
        double e = 0;
        int n = 0;
        for (int i = 0; i < D->n_rows; i++) {
            const row *r = &D->rows[i];
            if (held_row(held, fam, D, r) || isnan(r->mem_bytes)) continue;
            double ctx = pp_stack_context_bytes(s, r->dev, !r->sweep, NULL);
            e += fabs(log((ctx + r->res[k]) / r->mem_bytes));
            n++;
        }
        if (n && e / n < best_err) {
            best_err = e / n;
            best = *s;
        }
    }
    *s = best;
}

static double mem_pred(const pp_stack *s, const row *r, const cfg *c)
{
    (void)c;
    return pp_stack_context_bytes(s, r->dev, !r->sweep, NULL) + r->res[ws_index(s->ws_factor)];
}

static void fit_one(fit_job *J)
{
    data *D = J->D;
    const pp_fit_stack_params *p = D->p;
    memset(&J->s, 0, sizeof J->s);
    snprintf(J->s.name, sizeof J->s.name, "%s", stack_defs[D->si].name);
    pp_stack_set_framework(&J->s, stack_defs[D->si].framework);
    J->s.precision = stack_defs[D->si].prec;
    J->s.tf32_conv = stack_defs[D->si].tf32;
    J->s.fuse_epilogue = stack_defs[D->si].fuse;
    J->s.bn_kernel = stack_defs[D->si].bn;
    J->s.fp16_acc16 = stack_defs[D->si].acc16;
    J->s.l2_share = PP_FIT_L2_SHARE;
    J->s.timing_calls = 100; /* torch.utils.benchmark Timer: 100 back-to-back calls */
    J->s.sync_us = 0;        /* one synchronize per 100 calls: not identifiable from these rows */
    /* whether the training rows ran a conv or matmul on tensor cores, or on doubled fp32 lanes */
    J->tc_seen[0] = J->tc_seen[1] = 0;
    for (int i = 0; i < D->n_rows; i++) {
        const row *r = &D->rows[i];
        if (held_row(J->held, J->held_family, D, r)) continue;
        for (int c = 0; c < PP_SK__COUNT; c++) {
            if (pp_stack_on_tensor_cores(&J->s, r->dev, (pp_stack_class)c))
                J->tc_seen[0] = 1;
            else if (c != PP_SK_MEM && pp_stack_fp32_doubled(r->dev))
                J->tc_seen[1] = 1;
        }
    }
    J->graph_w = graph_weight(J);
    pp_stack base = J->s;
    /* three starts (host-bound, balanced, GPU-bound: call, per-op host, efficiency), the best
     * polished; deterministic */
    static const double starts[3][3] = {{200, 60, 0.3}, {50, 20, 0.6}, {10, 5, 0.9}};
    int budget = p->max_evals > 0 ? p->max_evals : 4000;
    double best[NP], fbest = INFINITY;
    for (int k = 0; k < 3; k++) {
        double x[NP];
        x[0] = to_x(starts[k][0], 0);
        for (int c = 0; c < PP_SK__COUNT; c++) {
            x[1 + c] = to_x(starts[k][1], 1 + c);
            x[1 + PP_SK__COUNT + c] = to_x(c == PP_SK_MEM ? 0.7 : starts[k][2],
                                           1 + PP_SK__COUNT + c);
        }
        x[NP - 5] = to_x(0.7, NP - 5);
        x[NP - 4] = to_x(700, NP - 4);
        x[NP - 3] = to_x(starts[k][1], NP - 3);
        x[NP - 2] = to_x(5, NP - 2);
        x[NP - 1] = to_x(32, NP - 1);
        nelder_mead(J, x, 1.0, budget / 4);
        double f = objective(J, x);
        if (f < fbest) {
            fbest = f;
            memcpy(best, x, sizeof best);
        }
    }
    double *x = best;
    nelder_mead(J, x, 0.3, budget / 4);
    stack_from_x(x, &base, stack_defs[D->si].host_hi, J->tc_seen);
    J->s = base;
    fit_memory(D, J->held, J->held_family, &J->s, J->scratch);
}

static void *fit_worker(void *arg)
{
    fit_job *J = arg;
    fit_one(J);
    return NULL;
}

/* Errors of s on the rows of GPU `gpu` (-1: any) and family `fam` (-1: any). */
static void mape_rows(const data *D, const pp_stack *s, int gpu, int fam, double *scratch,
                      pp_fit_stack_gpu *g, int train)
{
    double se = 0, sl = 0, sm = 0;
    int ns = 0, nl = 0, n = 0, nm = 0;
    for (int i = 0; i < D->n_rows; i++) {
        const row *r = &D->rows[i];
        if (r->graph || (gpu >= 0 && r->gpu != gpu) ||
            (fam >= 0 && model_family[D->cfgs[r->cfg].model] != fam))
            continue;
        const cfg *c = &D->cfgs[r->cfg];
        double e = row_ape(s, r, c, scratch);
        if (train) {
            se += e, n++;
            continue;
        }
        if (c->batch < 16) sl += e, ns++;
        else se += e, nl++;
        if (!isnan(r->mem_bytes)) sm += fabs(mem_pred(s, r, c) / r->mem_bytes - 1) * 100, nm++;
        n++;
    }
    if (train) {
        g->train_mape = n ? se / n : NAN;
        return;
    }
    g->n_rows = n;
    g->n_small = ns;
    g->n_large = nl;
    g->mape_small = ns ? sl / ns : NAN;
    g->mape_large = nl ? se / nl : NAN;
    g->mape_all = n ? (sl + se) / n : NAN;
    g->n_memory = nm;
    g->mape_memory = nm ? sm / nm : NAN;
}

/* Split-conformal bounds of v[0..n) (pp_interval_quantiles, which sorts v) for coverage cov,
 * widened to hold 0 (the prediction itself). 0 when n is too small for the level. */
static int conformal(double *v, int n, double cov, double *lo, double *hi)
{
    if (pp_interval_quantiles(v, n, cov, lo, hi)) return 0;
    *lo = fmin(0, *lo);
    *hi = fmax(0, *hi);
    return 1;
}

/* log(measured / held-out prediction) of every row: latency into lat[i], memory into mem[i]
 * (NaN without a memory reading); each row predicted by the fit that left its GPU out. */
static void held_out_residuals(const data *D, const fit_job *jobs, double *lat, double *mem)
{
    for (int i = 0; i < D->n_rows; i++) {
        const row *r = &D->rows[i];
        const cfg *c = &D->cfgs[r->cfg];
        const pp_stack *s = &jobs[r->gpu + 1].s;
        lat[i] = log(r->lat_ms / row_latency(s, r, c, jobs[0].scratch));
        mem[i] = isnan(r->mem_bytes) ? NAN : log(r->mem_bytes / mem_pred(s, r, c));
    }
}

/* Of those, the rows of GPUs other than skip (-1: all) in batch class cls (0: < 16, 1: >= 16;
 * 2: memory, every batch) into v; returns how many. */
static int residuals(const data *D, const double *lat, const double *mem, int skip, int cls,
                     double *v)
{
    int n = 0;
    for (int i = 0; i < D->n_rows; i++) {
        const row *r = &D->rows[i];
        if (r->graph || r->gpu == skip || (cls < 2 && (D->cfgs[r->cfg].batch >= 16) != cls) ||
            (cls == 2 && isnan(mem[i])))
            continue;
        v[n++] = cls < 2 ? lat[i] : mem[i];
    }
    return n;
}

/* The 80 % interval from every GPU's held-out rows into the stack, and its coverage checked by
 * cross-fitting: each GPU's rows against bounds computed without them. */
static perfpred_status intervals(const data *D, const fit_job *jobs, pp_fit_stack_report *rep,
                                 pp_err *err)
{
    const double cov = 0.8;
    size_t nr = (size_t)D->n_rows + 1;
    double *v = malloc(3 * nr * sizeof *v), *lat = v + nr, *mem = v + 2 * nr;
    if (!v) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    held_out_residuals(D, jobs, lat, mem);
    pp_stack *s = &rep->stack;
    int ok = 1, n = 0;
    for (int cls = 0; cls < 3 && ok; cls++) {
        int m = residuals(D, lat, mem, -1, cls, v);
        n += cls < 2 ? m : 0;
        if (cls < 2) s->iv_n[cls] = m;
        ok = cls < 2 ? conformal(v, m, cov, &s->iv_lat_lo[cls], &s->iv_lat_hi[cls])
                     : conformal(v, m, cov, &s->iv_mem_lo, &s->iv_mem_hi);
    }
    s->n_interval = ok ? n : 0;
    s->iv_coverage = ok ? cov : 0;
    int in_all = 0, n_all = 0;
    for (int gi = 0; ok && gi < D->n_gpus; gi++) {
        double lo[2] = {0}, hi[2] = {0};
        int fine = 1;
        for (int cls = 0; cls < 2; cls++) {
            int m = residuals(D, lat, mem, gi, cls, v);
            fine &= conformal(v, m, cov, &lo[cls], &hi[cls]);
        }
        int in = 0, cnt = 0;
        for (int i = 0; fine && i < D->n_rows; i++) {
            const row *r = &D->rows[i];
            if (r->gpu != gi || r->graph) continue;
            int cls = D->cfgs[r->cfg].batch >= 16;
            in += lat[i] >= lo[cls] && lat[i] <= hi[cls];
            cnt++;
        }
        rep->gpu[gi].interval_coverage = cnt ? 100.0 * in / cnt : NAN;
        in_all += in;
        n_all += cnt;
    }
    rep->interval_coverage = n_all ? 100.0 * in_all / n_all : NAN;
    s->iv_checked_pct = n_all ? rep->interval_coverage : 0;
    free(v);
    return PERFPRED_OK;
}

/* Configurations measured in two run folders: |a - b| / mean(a, b), per GPU. */
static void repeats(const data *D, pp_fit_stack_report *rep)
{
    double tot = 0;
    int ntot = 0;
    for (int gi = 0; gi < D->n_gpus; gi++) {
        double s = 0;
        int n = 0;
        for (int i = 0; i < D->n_rows; i++)
            for (int j = i + 1; j < D->n_rows; j++) {
                const row *a = &D->rows[i], *b = &D->rows[j];
                if (a->gpu != gi || b->gpu != gi || a->cfg != b->cfg || a->folder == b->folder ||
                    a->graph || b->graph)
                    continue;
                s += fabs(a->lat_ms - b->lat_ms) / (0.5 * (a->lat_ms + b->lat_ms)) * 100;
                n++;
            }
        rep->gpu[gi].n_repeat = n;
        rep->gpu[gi].repeat_mape = n ? s / n : NAN;
        tot += s;
        ntot += n;
    }
    rep->n_repeat = ntot;
    rep->repeat_mape = ntot ? tot / ntot : NAN;
}

static void free_data(data *D)
{
    for (int i = 0; i < D->n_rows; i++) free(D->rows[i].tc);
    for (int i = 0; i < D->n_cfgs; i++) {
        free(D->cfgs[i].k);
        pp_alloc_trace_free(&D->cfgs[i].tr);
    }
    free(D->rows);
    free(D->cfgs);
}

static perfpred_status unit_times(data *D, pp_err *err)
{
    pp_stack probe = {0};
    probe.precision = stack_defs[D->si].prec;
    probe.tf32_conv = stack_defs[D->si].tf32;
    probe.fp16_acc16 = stack_defs[D->si].acc16;
    probe.l2_share = PP_FIT_L2_SHARE;
    pp_stack_set_framework(&probe, stack_defs[D->si].framework);
    for (int i = 0; i < D->n_rows; i++) {
        row *r = &D->rows[i];
        const cfg *c = &D->cfgs[r->cfg];
        r->tc = malloc(((size_t)c->n + 1) * 3 * sizeof *r->tc);
        if (!r->tc) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        r->tm = r->tc + c->n;
        r->nd = r->tc + 2 * c->n; /* each kernel's bytes per SM-clock: fixed by the row's GPU */
        for (int k = 0; k < c->n; k++)
            r->nd[k] = pp_stack_sm_need(r->dev, c->k[k].cls, c->k[k].blocks, c->k[k].red);
        /* the project's own rows ran attention fused (eager PyTorch 2.x, no autograd) */
        pp_stack_kernel_units(&probe, r->dev, c->k, c->n, r->tc, r->tm);
    }
    return PERFPRED_OK;
}

/* Every row with what the fit that did not see its GPU predicts, and where family folds ran
 * (fam_jobs: the fit without fams[k] is fam_jobs[k]), the fit that did not see its family (write,
 * then rename). */
static perfpred_status write_rows(const data *D, const fit_job *jobs, const fit_job *fam_jobs,
                                  const int *fams, int n_fam, const char *path, pp_err *err)
{
    pp_strbuf b = {0};
    pp_strbuf_put(&b, "stack,device,run_folder,model,batch,latency_ms,predicted_ms,host_ms,gpu_ms,"
                      "memory_mib,predicted_memory_mib,graph,family,family_predicted_ms,"
                      "family_host_ms\n");
    for (int i = 0; i < D->n_rows; i++) {
        const row *r = &D->rows[i];
        const cfg *c = &D->cfgs[r->cfg];
        const pp_stack *s = &jobs[r->gpu + 1].s;
        double h, g;
        double p = row_latency_split(s, r, c, jobs[0].scratch, &h, &g);
        pp_strbuf_printf(&b, "%s,%s,%d,%s,%lld,%.4f,%.4f,%.4f,%.4f,%.1f,%.1f,%d,%s,",
                         stack_defs[D->si].name, r->dev->name, r->folder, model_map[c->model][1],
                         (long long)c->batch, r->lat_ms, p, h, g, r->mem_bytes / 1048576.0,
                         mem_pred(s, r, c) / 1048576.0, r->graph,
                         family_names[model_family[c->model]]);
        int k = 0;
        while (k < n_fam && fams[k] != model_family[c->model]) k++;
        if (k < n_fam) {
            double fp = row_latency_split(&fam_jobs[k].s, r, c, jobs[0].scratch, &h, &g);
            pp_strbuf_printf(&b, "%.4f,%.4f\n", fp, h);
        } else {
            pp_strbuf_put(&b, ",\n");
        }
    }
    if (b.oom) {
        free(b.data);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    perfpred_status st = pp_write_file_atomic(path, b.data, b.len, err);
    free(b.data);
    return st;
}

perfpred_status pp_fit_stack_run(const pp_device_db *db, const pp_fit_stack_params *p,
                                 const char *name, pp_fit_stack_report *rep, pp_err *err)
{
    memset(rep, 0, sizeof *rep);
    data D = {0};
    D.db = db;
    D.p = p;
    D.rep = rep;
    D.si = -1;
    for (int i = 0; i < N_STACKS; i++)
        if (strcmp(stack_defs[i].name, name) == 0) D.si = i;
    if (D.si < 0) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "unknown stack '%s'", name);
    /* kernels are grouped by the fusion rules of the desktop GPUs (all share gtx-1080-ti's) */
    const pp_device *ref = pp_devices_find(db, "gtx-1080-ti");
    if (!ref) return pp_err_set(err, PERFPRED_ERR_DEVICE, "no descriptor gtx-1080-ti");
    D.ref = ref;
    perfpred_status st = read_data(&D, err);
    if (!st) st = unit_times(&D, err);
    if (!st) st = replay_rows(&D, err);
    /* jobs: every row; each GPU left out; each model family left out */
    int fams[N_FAMILIES], n_fam = 0;
    for (int f = 0; !st && p->leave_family_out && f < N_FAMILIES; f++)
        for (int i = 0; i < D.n_rows; i++)
            if (model_family[D.cfgs[D.rows[i].cfg].model] == f) {
                fams[n_fam++] = f;
                break;
            }
    int n_logo = p->leave_one_out ? D.n_gpus : 0, nj = 1 + n_logo + n_fam;
    fit_job *jobs = st ? NULL : calloc((size_t)nj, sizeof *jobs);
    if (!st && !jobs) st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    for (int j = 0; !st && j < nj; j++) {
        jobs[j].D = &D;
        jobs[j].held = j >= 1 && j <= n_logo ? j - 1 : -1;
        jobs[j].held_family = j > n_logo ? fams[j - 1 - n_logo] : -1;
        size_t n_buf = (size_t)(D.max_kernels > D.n_rows ? D.max_kernels : D.n_rows) * 4 + 8;
        if (!(jobs[j].scratch = malloc(n_buf * sizeof(double))))
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        int threads = p->threads > 0 ? p->threads : 1;
        for (int j0 = 0; j0 < nj; j0 += threads) {
            pthread_t th[64];
            int started = 0, nb = nj - j0 < threads ? nj - j0 : threads;
            for (int t = 0; t < nb && t < 64; t++)
                if (pthread_create(&th[t], NULL, fit_worker, &jobs[j0 + t]) == 0) started++;
                else fit_one(&jobs[j0 + t]);
            for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
        }
        rep->stack = jobs[0].s;
        rep->n_rows = D.n_rows;
        rep->n_gpus = D.n_gpus;
        size_t off = 0;
        for (int gi = 0; gi < D.n_gpus; gi++) {
            snprintf(rep->gpu[gi].device, sizeof rep->gpu[gi].device, "%s", D.gpus[gi]->name);
            off += (size_t)snprintf(rep->stack.trained_on + off,
                                    off < sizeof rep->stack.trained_on
                                        ? sizeof rep->stack.trained_on - off
                                        : 0,
                                    "%s%s", gi ? "," : "", D.gpus[gi]->name);
        }
        for (int m = 0; m < N_MODELS; m++) rep->n_models += D.model_params[m] > 0;
        int n_graph = 0;
        for (int i = 0; i < D.n_rows; i++) n_graph += D.rows[i].graph;
        char gtext[96] = "";
        if (n_graph)
            snprintf(gtext, sizeof gtext, " (%d of them replayed as CUDA graphs, *_%s-graph)",
                     n_graph, stack_defs[D.si].suffix);
        snprintf(rep->stack.source, sizeof rep->stack.source,
                 "framework-tax-gpus (github.com/JaredFern/Framework-Tax@5284969)%s%s, run "
                 "folders *_%s: %d rows of %d torchvision models%s",
                 p->own_data_dir ? " and this project's " : "",
                 p->own_data_dir ? p->own_data_dir : "", stack_defs[D.si].suffix, D.n_rows,
                 rep->n_models, gtext);
        double tl = 0, tm = 0, ls = 0, ll = 0, lm = 0;
        int nls = 0, nll = 0, nlm = 0;
        for (int gi = 0; gi < D.n_gpus; gi++) {
            pp_fit_stack_gpu *g = &rep->gpu[gi];
            mape_rows(&D, &rep->stack, gi, -1, jobs[0].scratch, g, 1);
            if (p->leave_one_out) {
                mape_rows(&D, &jobs[gi + 1].s, gi, -1, jobs[0].scratch, g, 0);
                if (g->n_small) ls += g->mape_small * g->n_small, nls += g->n_small;
                if (g->n_large) ll += g->mape_large * g->n_large, nll += g->n_large;
                if (g->n_memory) lm += g->mape_memory * g->n_memory, nlm += g->n_memory;
            } else {
                g->mape_small = g->mape_large = g->mape_all = g->mape_memory = NAN;
                for (int i = 0; i < D.n_rows; i++)
                    g->n_rows += D.rows[i].gpu == gi && !D.rows[i].graph;
            }
        }
        int ntm = 0, ntl = 0;
        double gt = 0, gl = 0;
        for (int i = 0; i < D.n_rows; i++) {
            const row *r = &D.rows[i];
            const cfg *c = &D.cfgs[r->cfg];
            double e = row_ape(&rep->stack, r, c, jobs[0].scratch);
            if (r->graph) {
                /* graph rows apart: trained on, and held out with their GPU */
                gt += e;
                if (p->leave_one_out) gl += row_ape(&jobs[r->gpu + 1].s, r, c, jobs[0].scratch);
                rep->n_graph++;
                continue;
            }
            tl += e, ntl++;
            if (!isnan(r->mem_bytes))
                tm += fabs(mem_pred(&rep->stack, r, c) / r->mem_bytes - 1) * 100, ntm++;
        }
        rep->n_rows -= rep->n_graph;
        rep->graph_train_mape = rep->n_graph ? gt / rep->n_graph : NAN;
        rep->graph_logo_mape = rep->n_graph && p->leave_one_out ? gl / rep->n_graph : NAN;
        rep->train_mape = ntl ? tl / ntl : NAN;
        rep->train_mape_memory = ntm ? tm / ntm : NAN;
        rep->logo_small = nls ? ls / nls : NAN;
        rep->logo_large = nll ? ll / nll : NAN;
        rep->logo_memory = nlm ? lm / nlm : NAN;
        double fs = 0, fl = 0, fm = 0;
        int nfs = 0, nfl = 0, nfm = 0;
        rep->lofo_small = rep->lofo_large = rep->lofo_memory = NAN;
        for (int k = 0; k < n_fam && k < PP_FIT_STACK_MAX_FAMILIES; k++) {
            pp_fit_stack_gpu *g = &rep->family[rep->n_families++];
            snprintf(g->device, sizeof g->device, "%s", family_names[fams[k]]);
            mape_rows(&D, &jobs[1 + n_logo + k].s, -1, fams[k], jobs[0].scratch, g, 0);
            g->train_mape = g->repeat_mape = NAN;
            if (g->n_small) fs += g->mape_small * g->n_small, nfs += g->n_small;
            if (g->n_large) fl += g->mape_large * g->n_large, nfl += g->n_large;
            if (g->n_memory) fm += g->mape_memory * g->n_memory, nfm += g->n_memory;
        }
        if (n_fam) {
            rep->lofo_small = nfs ? fs / nfs : NAN;
            rep->lofo_large = nfl ? fl / nfl : NAN;
            rep->lofo_memory = nfm ? fm / nfm : NAN;
        }
        repeats(&D, rep);
        rep->interval_coverage = NAN;
        for (int gi = 0; gi < D.n_gpus; gi++) rep->gpu[gi].interval_coverage = NAN;
        if (p->leave_one_out) st = intervals(&D, jobs, rep, err);
        if (!st && p->rows_csv && p->leave_one_out)
            st = write_rows(&D, jobs, jobs + 1 + n_logo, fams, n_fam, p->rows_csv, err);
    }
    for (int j = 0; jobs && j < nj; j++) free(jobs[j].scratch);
    free(jobs);
    free_data(&D);
    return st;
}

static void add_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

char *pp_fit_stack_report_json(const pp_fit_stack_report *rep)
{
    cJSON *o = cJSON_CreateObject(), *gpus = cJSON_CreateArray();
    if (!o || !gpus) {
        cJSON_Delete(o);
        cJSON_Delete(gpus);
        return NULL;
    }
    cJSON_AddNumberToObject(o, "rows", rep->n_rows);
    cJSON_AddNumberToObject(o, "rows_skipped", rep->n_skipped);
    cJSON_AddNumberToObject(o, "models", rep->n_models);
    add_num(o, "train_mape_latency_pct", rep->train_mape);
    add_num(o, "train_mape_memory_pct", rep->train_mape_memory);
    add_num(o, "leave_one_gpu_out_mape_batch_lt16_pct", rep->logo_small);
    add_num(o, "leave_one_gpu_out_mape_batch_ge16_pct", rep->logo_large);
    add_num(o, "leave_one_gpu_out_mape_memory_pct", rep->logo_memory);
    add_num(o, "repeat_disagreement_pct", rep->repeat_mape);
    cJSON_AddNumberToObject(o, "repeat_pairs", rep->n_repeat);
    add_num(o, "interval_coverage_pct", rep->interval_coverage);
    if (rep->n_graph) {
        cJSON_AddNumberToObject(o, "graph_rows", rep->n_graph);
        add_num(o, "graph_train_mape_pct", rep->graph_train_mape);
        add_num(o, "graph_held_out_mape_pct", rep->graph_logo_mape);
    }
    for (int i = 0; i < rep->n_gpus; i++) {
        const pp_fit_stack_gpu *g = &rep->gpu[i];
        cJSON *e = cJSON_CreateObject();
        if (!e) break;
        cJSON_AddStringToObject(e, "device", g->device);
        cJSON_AddNumberToObject(e, "rows", g->n_rows);
        add_num(e, "held_out_mape_batch_lt16_pct", g->mape_small);
        add_num(e, "held_out_mape_batch_ge16_pct", g->mape_large);
        add_num(e, "held_out_mape_memory_pct", g->mape_memory);
        add_num(e, "train_mape_latency_pct", g->train_mape);
        add_num(e, "repeat_disagreement_pct", g->repeat_mape);
        add_num(e, "interval_coverage_pct", g->interval_coverage);
        cJSON_AddItemToArray(gpus, e);
    }
    cJSON_AddItemToObject(o, "gpus", gpus);
    if (rep->n_families) {
        add_num(o, "leave_one_family_out_mape_batch_lt16_pct", rep->lofo_small);
        add_num(o, "leave_one_family_out_mape_batch_ge16_pct", rep->lofo_large);
        add_num(o, "leave_one_family_out_mape_memory_pct", rep->lofo_memory);
        cJSON *fams = cJSON_AddArrayToObject(o, "families");
        for (int i = 0; fams && i < rep->n_families; i++) {
            const pp_fit_stack_gpu *g = &rep->family[i];
            cJSON *e = cJSON_CreateObject();
            if (!e) break;
            cJSON_AddStringToObject(e, "family", g->device);
            cJSON_AddNumberToObject(e, "rows", g->n_rows);
            add_num(e, "held_out_mape_batch_lt16_pct", g->mape_small);
            add_num(e, "held_out_mape_batch_ge16_pct", g->mape_large);
            add_num(e, "held_out_mape_memory_pct", g->mape_memory);
            cJSON_AddItemToArray(fams, e);
        }
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}

perfpred_stackfit_params perfpred_stackfit_default_params(void)
{
    perfpred_stackfit_params p = {0};
    p.threads = 1;
    p.leave_one_out = 1;
    return p;
}

/* A TF32 stack none of whose rows ran on tensor cores (TensorRT fp32: its Turing and Pascal
 * cards have no TF32, and the RTX 3090's TF32 rate is its fp32 lanes') would price an A100's TF32
 * convolutions at the datasheet's peak. A tensor core is fed through the same shared-memory path
 * whatever the precision, and a TF32 operand is twice an fp16 one: its feed is taken from the
 * same framework's fp16 stack times the TF32 / fp16 feed ratio of the frameworks fitted on both
 * (eager 532 / 1,321, TorchScript 553 / 1,585 on 2026-11-29: 0.40 and 0.35, about the operands'
 * 1/2), read from the artifacts in `dir`. Nothing changes where those are missing. */
void pp_fit_stack_transfer_feed(const char *dir, pp_stack *s)
{
    if (s->tc_feed > 0 || !s->tf32_conv || s->precision != PP_PREC_FP32) return;
    double feed[N_STACKS] = {0}, log_ratio = 0, f16 = 0;
    char path[4096], from[96] = "";
    for (int i = 0; i < N_STACKS; i++) {
        pp_stack o;
        pp_err e = {0};
        snprintf(path, sizeof path, "%s/artifacts/stacks/%s.json", dir, stack_defs[i].name);
        if (strcmp(stack_defs[i].name, s->name) != 0 && pp_stack_load(path, &o, &e) == PERFPRED_OK)
            feed[i] = o.tc_feed;
    }
    int n = 0;
    for (int i = 0; i < N_STACKS; i++) {
        if (stack_defs[i].prec != PP_PREC_FP16 || !(feed[i] > 0)) continue;
        if (strcmp(stack_defs[i].framework, s->framework) == 0) {
            f16 = feed[i];
            snprintf(from, sizeof from, "%s", stack_defs[i].name);
            continue;
        }
        for (int j = 0; j < N_STACKS; j++)
            if (stack_defs[j].prec == PP_PREC_FP32 && feed[j] > 0 &&
                strcmp(stack_defs[j].framework, stack_defs[i].framework) == 0) {
                log_ratio += log(feed[j] / feed[i]);
                n++;
            }
    }
    if (!(f16 > 0) || n == 0) return;
    double r = exp(log_ratio / n);
    s->tc_feed = f16 * r;
    int w = snprintf(s->tc_feed_source, sizeof s->tc_feed_source,
                     "transferred: %.48s's feed %d x %.3f, the TF32 / fp16 feed ratio of %d other "
                     "framework(s); no training row ran on TF32 tensor cores",
                     from, (int)lround(f16), r, n);
    if (w < 0) s->tc_feed_source[0] = 0;
}

perfpred_status perfpred_calibrate_fit_stacks(const perfpred_ctx *ctx,
                                              const perfpred_stackfit_params *pub,
                                              char **report_json, char *errbuf,
                                              size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    cJSON *all = NULL;
    pp_fit_stack_report *rep = NULL;
    if (report_json) *report_json = NULL;
    if (!ctx || !pub || !pub->data_dir || !pub->models_dir || !report_json) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "perfpred_calibrate_fit_stacks: NULL argument");
        goto done;
    }
    pp_fit_stack_params p = pp_fit_stack_default_params();
    p.data_dir = pub->data_dir;
    p.own_data_dir = pub->own_data_dir;
    p.models_dir = pub->models_dir;
    p.threads = pub->threads > 0 ? pub->threads : 1;
    p.leave_one_out = pub->leave_one_out;
    p.leave_family_out = pub->leave_family_out;
    p.max_evals = pub->max_evals;
    p.only_gpu_files = pub->gpu_files;
    all = cJSON_CreateArray();
    rep = malloc(sizeof *rep);
    if (!all || !rep) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    /* a rows folder that cannot be made fails now, not after the fits */
    if (pub->rows_dir && (st = pp_mkdir_p(pub->rows_dir, &err))) goto done;
    int any = 0;
    for (int i = 0; i < N_STACKS && !st; i++) {
        if (pub->stack && strcmp(pub->stack, stack_defs[i].name) != 0) continue;
        any = 1;
        char rows[4096];
        if (pub->rows_dir) {
            snprintf(rows, sizeof rows, "%s/%s.csv", pub->rows_dir, stack_defs[i].name);
            p.rows_csv = rows;
        }
        if ((st = pp_fit_stack_run(pp_ctx_db(ctx), &p, stack_defs[i].name, rep, &err))) break;
        pp_fit_stack_transfer_feed(pp_ctx_config_dir(ctx), &rep->stack);
        char *text = pp_fit_stack_report_json(rep);
        cJSON *r = text ? cJSON_Parse(text) : NULL;
        cJSON *sj = pp_stack_json(&rep->stack);
        if (!r || !sj) {
            free(text), cJSON_Delete(r), cJSON_Delete(sj);
            st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
            break;
        }
        cJSON_AddStringToObject(r, "stack", stack_defs[i].name);
        cJSON_AddStringToObject(r, "trained_on", rep->stack.trained_on);
        if (rep->skipped_why[0]) cJSON_AddStringToObject(r, "first_skip", rep->skipped_why);
        cJSON_AddItemToObject(r, "fitted", sj);
        cJSON_AddItemToArray(all, r);
        if (!pub->dry_run) {
            char path[4096];
            snprintf(path, sizeof path, "%s/artifacts/stacks", pp_ctx_config_dir(ctx));
            if (!(st = pp_mkdir_p(path, &err))) {
                snprintf(path, sizeof path, "%s/artifacts/stacks/%s.json",
                         pp_ctx_config_dir(ctx), stack_defs[i].name);
                st = pp_stack_save(&rep->stack, path, text, &err);
            }
        }
        free(text);
    }
    if (!st && !any)
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG,
                        "unknown stack '%s' (pytorch-eager-fp32, pytorch-eager-fp16, "
                        "torchscript-fp32, torchscript-fp16, tensorrt-fp32, tensorrt-fp16)",
                        pub->stack);
    if (!st && !(*report_json = cJSON_Print(all)))
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
done:
    cJSON_Delete(all);
    free(rep);
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st;
}
