/* predictor/predictor.c: the public prediction API. A context owns the device descriptors and the
 * calibrated layer models; a prediction groups a model's nodes into kernels by the runtime's
 * fusion rules, times each kernel (calibrated where a layer model answers, roofline otherwise,
 * scaled from the source device for MIG slices), and adds memory and energy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_gnn/graph_gnn.h"
#include "layer_models/layer_models.h"
#include "predictor/calib.h"
#include "predictor/interval.h"
#include "predictor/power.h"
#include "predictor/predictor.h"
#include "predictor/reuse.h"
#include "predictor/stack.h"

struct perfpred_ctx {
    pp_device_db *db;
    pp_calib *calib;
    pp_stack_set stacks; /* fitted GPU runtime stacks (configs/artifacts/stacks) */
    char **stack_text;   /* per device (pp_devices_at order): its stacks and their provenance */
    pp_power_set power;  /* fitted GPU board power (configs/artifacts/gpu-power.json) */
    char *config_dir;
    pp_logger log;
    pp_interval_set *intervals; /* held-out latency quantiles per device and answer path */
    pp_reuse *reuse;     /* predictions made, for identical calls (NULL: none kept) */
};

const pp_calib *pp_ctx_calib(const perfpred_ctx *ctx) { return ctx ? ctx->calib : NULL; }
const pp_device_db *pp_ctx_db(const perfpred_ctx *ctx) { return ctx ? ctx->db : NULL; }
const char *pp_ctx_config_dir(const perfpred_ctx *ctx) { return ctx ? ctx->config_dir : NULL; }
const pp_reuse *pp_ctx_reuse(const perfpred_ctx *ctx) { return ctx ? ctx->reuse : NULL; }
const char *pp_ctx_stack_text(const perfpred_ctx *ctx, const pp_device *d)
{
    for (int i = 0; ctx && ctx->stack_text && i < pp_devices_count(ctx->db); i++)
        if (pp_devices_at(ctx->db, i) == d) return ctx->stack_text[i];
    return NULL;
}

perfpred_ctx_params perfpred_ctx_default_params(void)
{
    perfpred_ctx_params p = {0};
    return p;
}

static void copy_err(const pp_err *e, char *buf, size_t len)
{
    if (buf && len) snprintf(buf, len, "%s", e->msg);
}

static int host_estimated(const pp_device *d);

/* What a prediction of stack s on d is labelled (stack_figures below): calibrated where s was fitted
 * on d's rows; an estimate where d's host dispatches at a scale nobody measured or d states no
 * rate for the stack's kernels; transferred otherwise. */
static const char *stack_label(const pp_stack *s, const pp_device *d)
{
    if (pp_stack_trained_on(s, d)) return "calibrated";
    if (host_estimated(d) ||
        pp_stack_rate_missing(s, d))
        return "estimate";
    return "transferred";
}

/* "pytorch-eager-fp32 (calibrated), tensorrt-fp16 (transferred)" for each GPU, once per context. */
static perfpred_status stack_texts(perfpred_ctx *ctx, pp_err *err)
{
    int nd = pp_devices_count(ctx->db);
    if (ctx->stacks.n == 0) return PERFPRED_OK;
    ctx->stack_text = calloc((size_t)nd + 1, sizeof *ctx->stack_text);
    if (!ctx->stack_text) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    size_t cap = (size_t)ctx->stacks.n * (PP_STACK_NAME + 16) + 1;
    for (int i = 0; i < nd; i++) {
        const pp_device *d = pp_devices_at(ctx->db, i);
        if (d->kind != PP_DEV_GPU && d->kind != PP_DEV_EDGE_GPU) continue;
        char *t = malloc(cap);
        if (!t) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        size_t off = 0;
        for (int k = 0; k < ctx->stacks.n; k++)
            off += (size_t)snprintf(t + off, cap - off, "%s%s (%s)", k ? ", " : "",
                                    ctx->stacks.s[k].name, stack_label(&ctx->stacks.s[k], d));
        ctx->stack_text[i] = t;
    }
    return PERFPRED_OK;
}

perfpred_ctx *perfpred_ctx_open(const perfpred_ctx_params *params, perfpred_status *status,
                                char *errbuf, size_t errbuf_len)
{
    perfpred_ctx_params p = params ? *params : perfpred_ctx_default_params();
    pp_err err = {0};
    perfpred_ctx *ctx = calloc(1, sizeof *ctx);
    perfpred_status st = PERFPRED_OK;
    if (!ctx) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        goto fail;
    }
    ctx->log.fn = p.log;
    ctx->log.user = p.log_user;
    const char *dir = p.config_dir ? p.config_dir : pp_default_config_dir();
    ctx->config_dir = strdup(dir);
    if (!ctx->config_dir) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        goto fail;
    }
    char devdir[4096];
    snprintf(devdir, sizeof devdir, "%s/devices", dir);
    st = pp_devices_load_config(devdir, &ctx->db, &err);
    if (st) goto fail;
    st = pp_calib_open(ctx->db, dir, &ctx->calib, &err);
    if (st) goto fail;
    st = pp_stack_set_load(dir, &ctx->stacks, &err);
    if (st) goto fail;
    st = pp_power_set_load(dir, &ctx->power, &err);
    if (st) goto fail;
    st = stack_texts(ctx, &err);
    if (!st) st = pp_interval_set_load(ctx->db, dir, &ctx->intervals, &err);
    if (st) goto fail;
    ctx->reuse = pp_reuse_new();
    pp_log(&ctx->log, PERFPRED_LOG_INFO, "loaded %d device descriptors from %s",
           pp_devices_count(ctx->db), devdir);
    if (status) *status = PERFPRED_OK;
    return ctx;
fail:
    if (status) *status = st;
    copy_err(&err, errbuf, errbuf_len);
    perfpred_ctx_close(ctx);
    return NULL;
}

void perfpred_ctx_close(perfpred_ctx *ctx)
{
    if (!ctx) return;
    pp_calib_close(ctx->calib);
    pp_interval_set_free(ctx->intervals);
    for (int i = 0; ctx->stack_text && i < pp_devices_count(ctx->db); i++)
        free(ctx->stack_text[i]);
    free(ctx->stack_text);
    pp_stack_set_free(&ctx->stacks);
    pp_devices_free(ctx->db);
    free(ctx->config_dir);
    pp_reuse_free(ctx->reuse);
    free(ctx);
}

void perfpred_free(void *p) { free(p); }

const char *perfpred_provenance_str(perfpred_provenance p)
{
    switch (p) {
    case PERFPRED_PROV_ESTIMATE: return "estimate";
    case PERFPRED_PROV_CALIBRATED: return "calibrated";
    case PERFPRED_PROV_MIXED: return "mixed";
    case PERFPRED_PROV_TRANSFERRED: return "transferred";
    default: return "unavailable";
    }
}

perfpred_predict_params perfpred_predict_default_params(void)
{
    perfpred_predict_params p = {0};
    return p;
}

/* The layer models' time of a composite kernel as its single operator (a layer row of it, as
 * calibrate plan writes one), where the device's models know that operator. */
static int eager_kernel_ms(const perfpred_ctx *ctx, const pp_device *src, const pp_graph *g,
                           const pp_kernel_group *k, double *ms)
{
    pp_layer_row row;
    pp_node_feat f;
    if (!k->eager_op || pp_composite_row(g, k->nodes[0], k->eager_op, &row, &f) != 0) return 0;
    return pp_calib_node_ms(ctx->calib, src, &f, ms);
}

typedef struct kernel_acc {
    double flops, bytes, ai, blocks;
    pp_op_kind kind;
} kernel_acc;

/* 1 when node chain[s] reads tensor t as an input that an earlier node of the chain read from
 * outside it, or that a node before chain[s - 1] wrote (chain[s - 1]'s output is the caller's) */
static int chain_reread(const pp_graph *g, const int *chain, int s, int t)
{
    for (int e = 0; e < s; e++) {
        const pp_node *n = &g->nodes[chain[e]];
        for (int a = 0; a < n->n_inputs; a++)
            if (n->inputs[a] == t) return 1;
        if (e < s - 1)
            for (int o = 0; o < n->n_outputs; o++)
                if (n->outputs[o] == t) return 1;
    }
    return 0;
}

/* Figures of a fused chain: flops add up; bytes are what the chain reads and writes outside
 * itself: the intermediate tensors stay on chip, and a tensor the chain has read already is not
 * read again (SiLU's Mul reads the x its Sigmoid read: one eager kernel reads x once). */
static void chain_figures(const pp_graph *g, const int *chain, int len, double byte_factor,
                          kernel_acc *k)
{
    memset(k, 0, sizeof *k);
    const pp_node_feat *f0 = &g->nodes[chain[0]].feat;
    k->kind = f0->kind;
    k->blocks = pp_kernel_blocks(f0);
    for (int s = 0; s < len; s++) {
        const pp_node *n = &g->nodes[chain[s]];
        const pp_node_feat *f = &n->feat;
        k->flops += f->flops;
        k->bytes += f->in_bytes + f->out_bytes + f->param_bytes;
        if (s == 0) continue;
        int prev = g->nodes[chain[s - 1]].outputs[0];
        double tb = (double)pp_tensor_bytes(&g->tensors[prev]);
        if (tb > 0) k->bytes -= 2 * tb;
        /* in_bytes counts each distinct non-static input once, as here */
        for (int a = 0; a < n->n_inputs; a++) {
            int t = n->inputs[a], dup = 0;
            for (int b = 0; b < a && !dup; b++) dup = n->inputs[b] == t;
            if (t < 0 || t == prev || dup || pp_tensor_is_static(g, t) ||
                !chain_reread(g, chain, s, t))
                continue;
            double rb = (double)pp_tensor_bytes(&g->tensors[t]);
            if (rb > 0) k->bytes -= rb;
        }
    }
    k->bytes *= byte_factor;
    if (k->bytes < 0) k->bytes = 0;
    k->ai = k->bytes > 0 ? k->flops / k->bytes : 0;
}

/* 1 when kernel group G is one Concat whose inputs are all activations (tensors a node writes) */
static int concat_of_activations(const pp_graph *g, const pp_kernel_group *G)
{
    if (G->n != 1) return 0;
    const pp_node *nd = &g->nodes[G->nodes[0]];
    if (strcmp(nd->op_type, "Concat") != 0 || nd->n_inputs < 1) return 0;
    for (int i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] < 0 || g->tensors[nd->inputs[i]].producer < 0) return 0;
    return 1;
}

/* The stack's view of one kernel from its chain figures k taken with byte factor bf (bytes back
 * at fp32: bf is a power of two, so the division is exact). */
static void stack_kernel_of(const pp_graph *g, const pp_kernel_group *G, const kernel_acc *k,
                            double bf, pp_stack_kernel *S)
{
    const pp_node_feat *f = &g->nodes[G->nodes[0]].feat;
    S->cls = pp_stack_class_of(f);
    S->elementwise = k->kind == PP_OPK_ELEMWISE;
    S->concat = concat_of_activations(g, G);
    S->bn = 0;
    S->cast = 0;
    S->flops = k->flops;
    S->bytes = k->bytes / bf;
    S->blocks = pp_stack_blocks(f);
    int64_t cin_g = f->group > 0 ? f->cin / f->group : f->cin;
    S->red = 0;
    if (S->cls != PP_SK_MEM)
        S->red = f->kind == PP_OPK_LINEAR || f->kind == PP_OPK_BMM
                     ? (double)f->k
                     : (double)cin_g * (double)f->kernel[0] *
                           (double)(f->kernel[1] > 0 ? f->kernel[1] : 1);
    S->cin_g = S->cls == PP_SK_CONV || S->cls == PP_SK_CONV3 ? (int)cin_g : 0;
    S->cal_ms = NAN;
    S->attn = PP_ATTN_NONE;
    S->attn_flops = S->attn_bytes = 0;
}

/* The attentions among the n kernels (pp_stack_attention): *role, *fl and *by malloc'd, n each;
 * 0 on success. */
static int attention_of(const pp_graph *g, const pp_kernel_group *k, int n, int **role,
                        double **fl)
{
    *role = malloc(((size_t)n + 1) * sizeof **role);
    *fl = malloc(((size_t)n + 1) * 2 * sizeof **fl);
    if (!*role || !*fl || pp_stack_attention(g, k, n, *role, *fl, *fl + n) < 0) {
        free(*role);
        free(*fl);
        *role = NULL;
        *fl = NULL;
        return -1;
    }
    return 0;
}

perfpred_status pp_graph_stack_kernels(const pp_graph *g, const pp_device *d,
                                       pp_stack_kernel **out, int *n_out, pp_err *err)
{
    pp_kernel_group *kernels = NULL;
    int n = 0;
    *out = NULL;
    *n_out = 0;
    perfpred_status st = pp_graph_kernels(g, d, &kernels, &n, err);
    if (st) return st;
    /* each kernel, and a BatchNorm pass after each conv that had one folded in; each marked with
     * its part in an attention, for the stacks that run it fused */
    pp_stack_kernel *sk = malloc(((size_t)n * 2 + 1) * sizeof *sk);
    int *role = NULL;
    double *afl = NULL;
    if (!sk || attention_of(g, kernels, n, &role, &afl)) {
        free(kernels);
        free(sk);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        kernel_acc k;
        chain_figures(g, kernels[i].nodes, kernels[i].n, 1.0, &k);
        stack_kernel_of(g, &kernels[i], &k, 1.0, &sk[m]);
        sk[m].attn = role[i];
        sk[m].attn_flops = afl[i];
        sk[m].attn_bytes = afl[n + i];
        m++;
        m += pp_stack_bn_pass(g, kernels[i].nodes[0], &sk[m]);
    }
    pp_stack_mark_reuse(g, kernels, n, sk, m);
    free(role);
    free(afl);
    free(kernels);
    *out = sk;
    *n_out = m;
    return PERFPRED_OK;
}

/* Energy of one kernel under the board power model: P = idle + (max - idle) * u, with u the
 * kernel's busy fraction (roofline time over predicted time, at most 1). */
static double kernel_energy_mj(const pp_device *d, double t_ms, double roof_ms)
{
    double u = t_ms > 0 ? fmin(1.0, roof_ms / t_ms) : 0;
    double p = d->idle_power_w + (d->max_power_w - d->idle_power_w) * u;
    return p * t_ms; /* W * ms = mJ */
}

/* The descriptor scales the stack's host costs (a host unlike the fitted ones). */
static int scaled_host(const pp_device *d)
{
    return d->host_dispatch_scale > 0 && d->host_dispatch_scale != 1;
}

/* d's host dispatches at a scale of its own that no measurement made (a Jetson's Arm cores) */
static int host_estimated(const pp_device *d)
{
    return scaled_host(d) && d->host_dispatch_source == PP_HOST_ESTIMATE;
}

/* How a prediction runs a fitted stack otherwise than it was fitted: under autocast (its fp16
 * stack with autocast's casts), in bfloat16 (the fp16 stack at the bf16 rate), or replayed as a
 * CUDA graph (the eager stack with no host dispatch). */
typedef struct stack_mode {
    int amp, bf16, graph;
} stack_mode;

/* The name such a prediction reports (a literal: it outlives the call). */
static const char *derived_stack_name(const pp_stack *stk, stack_mode m)
{
    if (m.graph) {
        if (m.amp) return m.bf16 ? "pytorch-eager-amp-bf16-graph" : "pytorch-eager-amp-graph";
        if (m.bf16) return "pytorch-eager-bf16-graph";
        return stk->precision == PP_PREC_FP16 ? "pytorch-eager-fp16-graph"
                                              : "pytorch-eager-fp32-graph";
    }
    if (m.amp) return m.bf16 ? "pytorch-eager-amp-bf16" : "pytorch-eager-amp";
    if (!m.bf16) return stk->name;
    if (strcmp(stk->framework, "pytorch-eager") == 0) return "pytorch-eager-bf16";
    if (strcmp(stk->framework, "torchscript") == 0) return "torchscript-bf16";
    if (strcmp(stk->framework, "tensorrt") == 0) return "tensorrt-bf16";
    return "bf16";
}

/* A GPU prediction under a runtime stack: the host/GPU pipeline over the kernels, energy with the
 * pipeline's idle gaps at idle power, and memory as NVML reports it. */
static perfpred_status stack_figures(const pp_graph *g, const pp_device *d, const pp_stack *stk,
                                     stack_mode mode, const pp_power_set *power, int n_groups,
                                     const pp_stack_kernel *sk, int n, double *scratch,
                                     double roof_sum_ms, int ncal, perfpred_prediction *out,
                                     pp_err *err)
{
    /* under autocast, in bf16 or replayed as a graph a stack prices what its rows did not run:
     * transferred */
    int own = pp_stack_trained_on(stk, d) && !mode.amp && !mode.bf16 && !mode.graph;
    out->stack = derived_stack_name(stk, mode);
    out->n_kernels = n_groups;
    out->n_calibrated_kernels = ncal;
    out->latency_members_lo_ms = out->latency_members_hi_ms = NAN;
    double T = pp_stack_latency_ms(stk, d, sk, n, scratch, &out->host_ms, &out->gpu_ms);
    out->latency_ms.value = T;
    out->latency_ms.prov = own ? PERFPRED_PROV_CALIBRATED : PERFPRED_PROV_TRANSFERRED;
    out->latency_ms.source =
        own ? "runtime stack: host dispatch / GPU pipeline fitted on whole-model measurements of "
              "this GPU and others (framework-tax-gpus, data/gpu-stacks)"
        : mode.graph
            ? "runtime stack: the eager stack's kernels (fitted on whole-model measurements, the "
              "H200's CUDA-graph replays among them; framework-tax-gpus, data/gpu-stacks) "
              "replayed as a CUDA graph: no host dispatch per op"
        : mode.amp ? "runtime stack: the fp16 stack's host dispatch / GPU pipeline, fitted on "
                "whole-model measurements of .half() models (framework-tax-gpus, data/gpu-stacks), "
                "over autocast's ops and the casts of its fp32 weights and input; no AMP "
                "measurement fitted it"
        : mode.bf16 ? "runtime stack: the fp16 stack's host dispatch / GPU pipeline, fitted on "
                 "whole-model measurements of .half() models (framework-tax-gpus, "
                 "data/gpu-stacks), at the descriptor's bf16 tensor-core rate; no bf16 "
                 "measurement fitted it"
        : scaled_host(d) && d->host_dispatch_source == PP_HOST_TRANSFERRED
            ? "runtime stack: host dispatch / GPU pipeline fitted on other GPUs' whole-model "
              "measurements (framework-tax-gpus, data/gpu-stacks), applied through this "
              "descriptor's figures; the host's dispatch scaled by its host_dispatch_scale, "
              "transferred from a measured host of the same kind"
        : scaled_host(d) && d->host_dispatch_source == PP_HOST_MEASURED
            ? "runtime stack: host dispatch / GPU pipeline fitted on other GPUs' whole-model "
              "measurements (framework-tax-gpus, data/gpu-stacks), applied through this "
              "descriptor's figures; the host's dispatch scaled by its host_dispatch_scale, "
              "measured on this GPU's host (perfpred calibrate host)"
        : scaled_host(d)
            ? "runtime stack: host dispatch / GPU pipeline fitted on other GPUs' whole-model "
              "measurements (framework-tax-gpus, data/gpu-stacks), applied through this "
              "descriptor's figures; the host's dispatch scaled by its host_dispatch_scale, an "
              "estimate no measurement made (perfpred calibrate host measures it)"
            : "runtime stack: host dispatch / GPU pipeline fitted on other GPUs' whole-model "
              "measurements (framework-tax-gpus, data/gpu-stacks), applied through this "
              "descriptor's figures; the host dispatches as the 2022 desktop hosts those rows "
              "came from (the descriptor states no host_dispatch_scale: perfpred calibrate host "
              "measures yours)";
    /* a host whose dispatch scale nobody measured (a Jetson's Arm cores) sets the pace of every
     * small batch: the stack's GPU side is a transfer, the whole an estimate */
    if (!own && !mode.graph && host_estimated(d))
        out->latency_ms.prov = PERFPRED_PROV_ESTIMATE;
    if (!own && pp_stack_rate_missing(stk, d)) {
        out->latency_ms.prov = PERFPRED_PROV_ESTIMATE;
        out->latency_ms.source =
            "runtime stack fitted on other GPUs' whole-model measurements (framework-tax-gpus, "
            "data/gpu-stacks), but this descriptor states no rate for the stack's precision on "
            "this GPU's tensor cores (or no fp32 peak): its convolutions and matrix products are "
            "priced on the fp32 lanes, an estimate (set hardware.peak_tflops in a descriptor of "
            "your own)";
    }
    pp_power_params pw;
    if (pp_power_for(power, d, &pw)) {
        out->energy_mj.value = pp_stack_energy_mj(stk, d, &pw, sk, n, scratch, T, NULL);
        out->energy_mj.prov = pw.calibrated && own ? PERFPRED_PROV_CALIBRATED
                                                   : PERFPRED_PROV_TRANSFERRED;
        out->energy_mj.source = pw.how;
    } else if (d->max_power_w > 0) {
        double busy = fmin(roof_sum_ms, out->gpu_ms);
        out->energy_mj.value = d->idle_power_w * T + (d->max_power_w - d->idle_power_w) * busy;
        out->energy_mj.prov = PERFPRED_PROV_ESTIMATE;
        out->energy_mj.source = "board power model idle + (max - idle) x roofline utilisation over "
                                "the pipeline, idle gaps at idle power (uncalibrated)";
    } else {
        out->energy_mj.value = NAN;
        out->energy_mj.prov = PERFPRED_PROV_UNAVAILABLE;
        out->energy_mj.source = "the descriptor states no board power";
    }
    double sbf = pp_stack_byte_scale(stk);
    pp_alloc_trace tr;
    pp_stack_mem mem;
    int trace = strcmp(stk->framework, "tensorrt") == 0 ? PP_TRACE_ENGINE
                : mode.amp                             ? PP_TRACE_AUTOCAST
                                                       : PP_TRACE_EAGER;
    perfpred_status mst = pp_alloc_trace_build(g, stk->bn_kernel, trace, &tr, err);
    if (mst) return mst;
    mst = pp_stack_memory(stk, d, &tr, &mem, err);
    pp_alloc_trace_free(&tr);
    if (mst) return mst;
    out->peak_memory_bytes.value = mem.used;
    out->weights_bytes = (double)g->totals.param_bytes * (mode.amp ? 1.0 : sbf);
    out->allocator_peak_bytes = mem.allocated;
    out->activations_bytes = fmax(0, mem.allocated - out->weights_bytes);
    out->runtime_bytes = mem.ctx;
    out->workspace_bytes = mem.reserved - mem.allocated;
    out->peak_memory_bytes.prov =
        own && mem.ctx_exact ? PERFPRED_PROV_CALIBRATED : PERFPRED_PROV_TRANSFERRED;
    /* what both sources say after the context's */
#define MEM_REST                                                                                  \
    "with the local memory of this device's SMs, + the segments PyTorch's caching allocator "     \
    "reserves replaying the run (weights, activations, cuDNN and cuBLAS workspace)"
    out->peak_memory_bytes.source =
        mem.ctx_exact ? "device memory in use (NVML): CUDA context and libraries of this GPU "
                        "architecture, " MEM_REST
                        ", fitted on framework-tax-gpus and data/gpu-stacks"
                      : "device memory in use (NVML): context of the nearest measured GPU "
                        "architecture, " MEM_REST " (framework-tax-gpus, data/gpu-stacks)";
#undef MEM_REST
    return PERFPRED_OK;
}

/* The GPU runtime stack a prediction runs under: the one asked for, else the descriptor's. NULL
 * (no error) for other devices, or when nothing was asked and no stack fits the descriptor's. */
static perfpred_status pick_stack(const perfpred_ctx *ctx, const pp_device *d,
                                  const perfpred_predict_params *pp, const pp_stack **out,
                                  stack_mode *mode, pp_err *err)
{
    *out = NULL;
    memset(mode, 0, sizeof *mode);
    int asked = pp->runtime || pp->precision;
    if (d->kind != PP_DEV_GPU && d->kind != PP_DEV_EDGE_GPU) {
        if (!asked) return PERFPRED_OK;
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: --runtime/--precision choose a GPU runtime stack; this device "
                          "is calibrated for its descriptor's runtime (%s %s) only",
                          d->name, d->runtime_framework ? d->runtime_framework : "?",
                          pp_precision_name(d->runtime_precision));
    }
    const char *fw = pp->runtime ? pp->runtime : d->runtime_framework;
    if (fw && strcmp(fw, "cuda-graph") == 0) {
        /* eager PyTorch's kernels captured once and replayed (torch.cuda.CUDAGraph) */
        mode->graph = 1;
        fw = "pytorch-eager";
    }
    int prec = pp->precision ? pp_precision_from_name(pp->precision) : (int)d->runtime_precision;
    if (pp->precision && (strcmp(pp->precision, "amp") == 0 ||
                          strcmp(pp->precision, "amp-bf16") == 0)) {
        /* autocast is eager PyTorch's: the fp16 stack's kernels and dispatch, and the casts */
        if (!fw || strcmp(fw, "pytorch-eager") != 0)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "%s: --precision %s is PyTorch eager's autocast; runtime '%s' "
                              "has none (use --runtime pytorch-eager, or --precision fp16)",
                              d->name, pp->precision, fw ? fw : "?");
        mode->amp = 1;
        mode->bf16 = strcmp(pp->precision, "amp-bf16") == 0;
        prec = PP_PREC_FP16;
    } else if (prec == PP_PREC_BF16) {
        mode->bf16 = 1;
        prec = PP_PREC_FP16;
    }
    /* bf16 runs at its own tensor-core rate, on Ampere and later only; no row ran it: the
     * fp16 stack prices it, its kernels moving the same 2-byte elements */
    if (mode->bf16 && !(d->peak_tflops[PP_PREC_BF16] > 0))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "%s: --precision %s: the descriptor states no bf16 tensor-core rate "
                          "(hardware.peak_tflops.bf16; bfloat16 needs compute capability 8.0 or "
                          "later)",
                          d->name, pp->precision);
    if (prec >= 0) *out = pp_stack_for(&ctx->stacks, fw, (pp_precision)prec);
    if (*out || !asked) return PERFPRED_OK;
    char list[600] = "";
    size_t n = 0;
    for (int i = 0; i < ctx->stacks.n && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s %s", i ? ", " : "",
                              ctx->stacks.s[i].framework,
                              pp_precision_name(ctx->stacks.s[i].precision));
    return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                      "%s: no fitted runtime stack '%s %s' (there are: %s)", d->name,
                      fw ? fw : "?", pp->precision ? pp->precision : pp_precision_name(prec),
                      n ? list : "none");
}

/* Every figure a prediction gives is finite, or marked unavailable: descriptor figures at the
 * edge of their ranges (a peak of 1e-307 TFLOP/s) can still overflow a division, and an infinity
 * or a NaN must be an error, never an answer (the CLI printed null and exited 0). */
static perfpred_status check_finite(const pp_device *d, const perfpred_prediction *out, pp_err *err)
{
    const struct {
        const char *what;
        const perfpred_figure *v;
    } vals[] = {{"latency", &out->latency_ms},
                {"energy", &out->energy_mj},
                {"peak memory", &out->peak_memory_bytes}};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (vals[i].v->prov != PERFPRED_PROV_UNAVAILABLE && !isfinite(vals[i].v->value))
            return pp_err_set(err, PERFPRED_ERR_DEVICE,
                              "%s: the predicted %s on '%s' is not finite (%g): the descriptor's "
                              "figures are outside what the model can compute with",
                              d->source_file ? d->source_file : d->name, vals[i].what, d->name,
                              vals[i].v->value);
    return PERFPRED_OK;
}

/* What every prediction ends with: the device's capacity, whether the peak fits, and the check
 * that every figure is finite. */
static perfpred_status finish_prediction(const pp_device *d, perfpred_prediction *out, pp_err *err)
{
    out->memory_capacity_bytes = d->memory_gb * 1073741824.0; /* descriptors state GiB */
    out->fits_in_memory =
        d->memory_gb <= 0 || out->peak_memory_bytes.value <= out->memory_capacity_bytes;
    return check_finite(d, out, err);
}

/* What predict_graph settles before its kernel loop: the device whose layer models time the
 * kernels (src) and whose figures they are scaled from (timed_on), the runtime stack, if any. */
typedef struct predict_setup {
    const perfpred_ctx *ctx;
    const pp_graph *g;
    const pp_device *d, *src, *timed_on;
    const perfpred_predict_params *pp;
    const pp_stack *stk;
    const char *calib_src; /* what src's layer models were fitted on */
    double bf;             /* bytes against fp32 (pp_precision_byte_factor) */
    int stack_cal;         /* stk is the stack src's layer models were measured in */
    stack_mode mode;       /* amp: PyTorch eager under autocast, stk its fp16 stack, each op on
                              autocast's fp16 list casting its fp32 operands first; bf16 and
                              graph: stk is view */
    pp_stack view;         /* the fitted stack at the bf16 tensor-core rate, and/or with no host
                              dispatch (a CUDA graph's replay) */
    unsigned char *amp32;  /* amp: the tensors that are fp32 (pp_stack_autocast_dtypes) */
    int can_roof;          /* both devices have the figures a roofline needs */
} predict_setup;

/* The graph-level correction of a layer sum: its outputs (log-ratios) and the ensemble's range;
 * corrected = 0 where it was not applied (none, no layer sum, or the members disagree). */
typedef struct gnn_corr {
    const pp_gnn *gnn;
    const char *src;
    double v[PP_GNN_MAX_TARGETS], lo[PP_GNN_MAX_TARGETS], hi[PP_GNN_MAX_TARGETS];
    int corrected;
} gnn_corr;

/* What the kernel loop sums, and where it puts each kernel: the stack's view of it (sk, and the
 * pipeline's scratch beside it) and its time on its first node, which the GNN reads (node_ms). */
typedef struct kernel_sums {
    pp_stack_kernel *sk;
    int *sk_group;  /* where the breakdown is asked under a stack: the kernel group of each sk */
    int *attn;      /* where the stack runs attention fused on d: each kernel's part in one */
    double *attn_fl; /* a core's fused flops [n_groups], then its bytes (fp32) */
    int n_groups, cur; /* the kernels, and the one being timed */
    double *scratch, *node_ms;
    double *cal_ms; /* per node: the layer models' figure for a kernel it leads, NAN until asked */
    int n_sk;
    pp_stack_reuse reuse; /* what the L2 may hold of the kernels' outputs so far */
    double roof_sum_ms, total_ms, energy_mj, total_bytes;
    int nk, ncal, untimed;
    /* CPUs: other calibrated CPUs that time the kernels src's models do not cover (looked up at
     * the first such kernel), and how many kernels they timed */
    const pp_device *cover[PP_CALIB_MAX_COVER];
    int n_cover, cover_known, ncover;
} kernel_sums;

/* One kernel's time t on d as it is worked out, the layer models' own figure cal_ms, its
 * roofline on d (mb: memory-bound), and whether a layer model timed it and as which operator. */
typedef struct kernel_time {
    double t, cal_ms, roof_d;
    int mb, calibrated, as_eager;
    int covered; /* calibrated by another CPU's models (kernel_sums.cover), not src's */
} kernel_time;

/* The source device, the runtime stack and the GNN a prediction on d uses; errors where the
 * calibration is broken or the stack asked for does not exist. */
static perfpred_status predict_setup_of(const perfpred_ctx *ctx, const pp_graph *g,
                                        const pp_device *d, const perfpred_predict_params *pp,
                                        predict_setup *P, gnn_corr *gc, pp_err *err)
{
    memset(P, 0, sizeof *P);
    memset(gc, 0, sizeof *gc);
    P->ctx = ctx;
    P->g = g;
    P->d = d;
    P->pp = pp;
    const pp_device *src = pp_calib_source_device(ctx->calib, d, &P->calib_src);
    P->src = src;
    perfpred_status rst = pp_calib_ready(ctx->calib, src, err);
    if (rst != PERFPRED_OK) return rst;
    /* kernels are timed on the device whose figures or models we trust most, then scaled */
    const pp_device *timed_on = src ? src : (d->is_mig && d->parent ? d->parent : d);
    P->timed_on = timed_on;
    P->bf = pp_precision_byte_factor(d);

    const pp_stack *stk = NULL;
    if ((rst = pick_stack(ctx, d, pp, &stk, &P->mode, err))) return rst;
    if (stk && (P->mode.bf16 || P->mode.graph)) {
        P->view = *stk;
        if (P->mode.bf16) P->view.precision = PP_PREC_BF16;
        if (P->mode.graph) pp_stack_graph_replay(&P->view);
        stk = &P->view;
    }
    P->stk = stk;
    /* layer models answer under the stack they were measured in (NeuSight: PyTorch eager fp32) */
    P->stack_cal = stk && src && src->runtime_framework &&
                   strcmp(stk->framework, src->runtime_framework) == 0 &&
                   stk->precision == PP_PREC_FP32 &&
                   (src->runtime_precision == PP_PREC_FP32 ||
                    src->runtime_precision == PP_PREC_TF32);

    if (!pp->layer_sum_only && (rst = pp_calib_gnn(ctx->calib, d, &gc->gnn, &gc->src, err)))
        return rst;
    /* a roofline needs both figures of the device the kernels are timed on */
    P->can_roof = timed_on->peak_tflops[PP_PREC_FP32] > 0 && timed_on->memory_bandwidth_gbs > 0 &&
                  d->peak_tflops[PP_PREC_FP32] > 0 && d->memory_bandwidth_gbs > 0;
    if (P->mode.amp) { /* last: the caller frees it once it has what it set up */
        P->amp32 = malloc((size_t)g->n_tensors + 1);
        if (!P->amp32) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        pp_stack_autocast_dtypes(g, P->amp32);
    }
    return PERFPRED_OK;
}

/* The layer models' figure for a kernel led by node i: that of the node i was built as a copy of
 * (copy_of) when it was asked already and the two have the same features bit for bit (all that
 * the models read), else asked now. 0 when no model answers. */
static int node_cal_ms(const predict_setup *P, kernel_sums *sums, int i, double *ms)
{
    const pp_node *n = &P->g->nodes[i];
    int s = n->copy_of - 1;
    if (sums->cal_ms && s >= 0 && s < i && !isnan(sums->cal_ms[s]) &&
        memcmp(&n->feat, &P->g->nodes[s].feat, sizeof n->feat) == 0) {
        *ms = sums->cal_ms[s];
        return 1;
    }
    if (!pp_calib_node_ms(P->ctx->calib, P->src, &n->feat, ms)) return 0;
    if (sums->cal_ms) sums->cal_ms[i] = *ms;
    return 1;
}

/* Whether a kernel runs in the runtime's BLAS on both devices: GEMMs always; a convolution where
 * both are eager-PyTorch CPUs and PyTorch's rule sends it to im2col + GEMM (its first node is the
 * convolution; fused followers ride along). */
static int runs_blas(const pp_graph *g, const pp_kernel_group *G, pp_op_kind kind,
                     const pp_device *from, const pp_device *to)
{
    if (kind == PP_OPK_LINEAR || kind == PP_OPK_BMM) return 1;
    if (!pp_device_is_eager_pytorch_cpu(from) || !pp_device_is_eager_pytorch_cpu(to)) return 0;
    return pp_lm_torch_cpu_conv_blas(&g->nodes[G->nodes[0]].feat);
}

/* The work a roofline prices for kernel k on dev: its flops, but for a pooling kernel on an
 * eager-PyTorch CPU the clocks of ATen's scalar window loop (and its followers' flops) */
static double roof_work(const pp_device *dev, const pp_graph *g, const pp_kernel_group *G,
                        const kernel_acc *k)
{
    if (k->kind != PP_OPK_POOL || !(pp_roofline_pool_clock_hz(dev) > 0)) return k->flops;
    const pp_node_feat *lead = &g->nodes[G->nodes[0]].feat;
    double rest = k->flops - lead->flops;
    return pp_lm_torch_cpu_pool_clocks(lead) + (rest > 0 ? rest : 0);
}

/* A kernel's fixed time on dev, in ms: the launch overhead, or (with_call) for a convolution an
 * eager-PyTorch CPU hands oneDNN the call's cost where the descriptor states a larger one
 * (conv_call_us) */
static double fixed_ms(const pp_device *dev, const pp_graph *g, const pp_kernel_group *G,
                       int with_call)
{
    double us = dev->launch_overhead_us;
    if (with_call && dev->conv_call_us > us && pp_device_is_eager_pytorch_cpu(dev) &&
        pp_lm_torch_cpu_conv_onednn(&g->nodes[G->nodes[0]].feat))
        us = dev->conv_call_us;
    return us * 1e-3;
}

/* pp_roofline_ms for kernel k, with the kernel's fixed time in place of the launch overhead */
static double roof_ms(const pp_device *dev, const pp_graph *g, const pp_kernel_group *G,
                      const kernel_acc *k, int *mb)
{
    return pp_roofline_ms(dev, k->kind, roof_work(dev, g, G, k), k->bytes, mb) -
           dev->launch_overhead_us * 1e-3 + fixed_ms(dev, g, G, 1);
}

/* A kernel src's models do not cover, timed by the nearest other calibrated CPU whose models do
 * (pp_calib_cover_cpus; a composite first as its one operator): that CPU, else NULL. */
static const pp_device *cover_kernel(const predict_setup *P, const pp_kernel_group *G,
                                     kernel_sums *sums, kernel_time *kt)
{
    if (!sums->cover_known) {
        sums->n_cover = pp_calib_cover_cpus(pp_ctx_calib(P->ctx), P->d, P->src, sums->cover,
                                            PP_CALIB_MAX_COVER);
        sums->cover_known = 1;
    }
    for (int c = 0; c < sums->n_cover; c++) {
        const pp_device *s = sums->cover[c];
        kt->as_eager = eager_kernel_ms(P->ctx, s, P->g, G, &kt->cal_ms);
        if (kt->as_eager ||
            pp_calib_node_ms(pp_ctx_calib(P->ctx), s, &P->g->nodes[G->nodes[0]].feat, &kt->cal_ms))
            return s;
    }
    return NULL;
}

/* A kernel's time outside any stack: src's layer model where one answers (a composite first as
 * the one operator the runtime runs), on a CPU else, for a kernel its roofline prices
 * compute-bound, the model of the nearest other calibrated CPU that covers it, else timed_on's
 * roofline; then scaled to d. A CPU roofline's compute side is every core at the FMA peak, where
 * the layer models time one thread at what oneDNN reaches (2-5x off); its memory side (bandwidth
 * and cost per op) is near what one thread sees, while another CPU's memory-bound rows carry that
 * CPU's cache state (warm or scrubbed), which its own correction, not this CPU's, absorbs. */
static void time_kernel(const predict_setup *P, const pp_kernel_group *G, const kernel_acc *k,
                        kernel_sums *sums, kernel_time *kt)
{
    const pp_device *d = P->d, *timed_on = P->timed_on;
    kt->mb = 0;
    double roof_src = roof_ms(timed_on, P->g, G, k, &kt->mb);
    kt->t = roof_src;
    kt->cal_ms = 0;
    kt->calibrated = kt->as_eager = kt->covered = 0;
    if (P->src && eager_kernel_ms(P->ctx, P->src, P->g, G, &kt->cal_ms)) {
        /* a composite op, timed as the one operator the runtime runs */
        kt->t = kt->cal_ms;
        kt->calibrated = kt->as_eager = 1;
    } else if (P->src && node_cal_ms(P, sums, G->nodes[0], &kt->cal_ms)) {
        /* fused followers of a calibrated kernel ride along in its epilogue */
        kt->t = kt->cal_ms;
        kt->calibrated = 1;
    } else if (P->src && !P->stk && !kt->mb) {
        const pp_device *s = cover_kernel(P, G, sums, kt);
        if (s) {
            timed_on = s;
            kt->t = kt->cal_ms;
            kt->calibrated = kt->covered = 1;
        } else {
            kt->as_eager = 0;
        }
    }
    if (!kt->calibrated && !P->can_roof) sums->untimed++;
    if (timed_on != d) {
        /* scale the kernel's work, not its fixed time: each device adds its own. A oneDNN call's
         * cost is swapped only where both descriptors state one: a source that states none has it
         * inside its models' times, which then scale with the rest */
        /* a CPU whose descriptor states no cost per op keeps the source's: the same runtime's
         * dispatch, which no roofline figure prices */
        const pp_device *fd =
            d->kind == PP_DEV_CPU && !(d->launch_overhead_us > 0) ? P->timed_on : d;
        int calls = (timed_on->conv_call_us > 0) == (fd->conv_call_us > 0);
        double fixed_src = fixed_ms(timed_on, P->g, G, calls);
        double fixed_d = fixed_ms(fd, P->g, G, calls);
        double work = kt->t > fixed_src ? kt->t - fixed_src : 0;
        kt->t = pp_scale_kernel_time_blas(work, timed_on, d, k->ai, k->blocks,
                                          runs_blas(P->g, G, k->kind, timed_on, d)) +
                fixed_d;
    }
    /* roof_ms is a function of its arguments: on the device timed, its answer above */
    kt->roof_d = P->timed_on == d ? roof_src : roof_ms(d, P->g, G, k, &kt->mb);
}

/* The next entry of the stack's kernels, taken, as part of the kernel group being timed. */
static pp_stack_kernel *push_sk(kernel_sums *sums)
{
    if (sums->sk_group) sums->sk_group[sums->n_sk] = sums->cur;
    return &sums->sk[sums->n_sk++];
}

/* Under a runtime stack: the stack's view of the kernel (and of a BatchNorm pass after it), and
 * the kernel's time as the stack runs it, which replaces kt->t. */
static void stack_time(const predict_setup *P, const pp_kernel_group *G, const kernel_acc *k,
                       kernel_sums *sums, kernel_time *kt)
{
    const pp_graph *g = P->g;
    const pp_device *d = P->d;
    const pp_stack *stk = P->stk;
    if (P->mode.amp && !(sums->attn && sums->attn[sums->cur] == PP_ATTN_ABSORBED)) {
        /* autocast's casts of the op's fp32 operands run first, each its own op (none for a
         * product the fused attention absorbs: its softmax never leaves the kernel) */
        int ct[PP_STACK_MAX_CASTS];
        int nc = pp_stack_autocast_casts(g, P->amp32, G->nodes[0], ct);
        for (int c = 0; c < nc; c++)
            pp_stack_cast_kernel(pp_tensor_elems(&g->tensors[ct[c]]), push_sk(sums));
    }
    pp_stack_kernel *S = push_sk(sums);
    stack_kernel_of(g, G, k, P->bf, S);
    /* under autocast a memory kernel that writes fp32 (an fp32 op's, or promoted by an fp32
     * operand: layer_norm, softmax, the residual stream after an fp32 embedding) moves fp32 bytes,
     * where the fp16 stack halves every kernel's */
    const pp_node *last = &g->nodes[G->nodes[G->n - 1]];
    if (P->mode.amp && S->cls == PP_SK_MEM && last->n_outputs > 0 && last->outputs[0] >= 0 &&
        P->amp32[last->outputs[0]])
        S->bytes *= 2;
    if (sums->attn) {
        S->attn = sums->attn[sums->cur];
        S->attn_flops = sums->attn_fl[sums->cur];
        S->attn_bytes = sums->attn_fl[sums->n_groups + sums->cur];
    }
    pp_stack_reuse_kernel(&sums->reuse, g, G, S);
    /* under the stack its layer models were measured in, a device keeps its calibrated
     * kernel times; every kernel they do not cover, memory-bound ones included, and every
     * kernel elsewhere, take the stack's fitted model (depthwise convolutions run far below
     * any roofline, and no eager memory pass streams at the datasheet's bandwidth) */
    /* layer models timed on the fp32 lanes (the source's runtime precision) do not time
     * a convolution the stack runs on TF32 tensor cores: the stack's model does */
    int tf32_conv = P->stack_cal && (S->cls == PP_SK_CONV || S->cls == PP_SK_CONV3) &&
                    P->src->runtime_precision == PP_PREC_FP32 &&
                    pp_stack_kernel_peak_tflops(stk, d, S) > d->peak_tflops[PP_PREC_FP32];
    /* a fused attention's kernels are not the operators the layer models timed */
    int keep = P->stack_cal && kt->calibrated && !tf32_conv &&
               S->attn == PP_ATTN_NONE;
    if (keep) {
        /* an event-timed operator holds its host dispatch (the model's timing floor),
         * which the pipeline charges to the host: the GPU runs the rest, at least the
         * stack's shortest kernel */
        pp_op_kind fk = kt->as_eager ? k->kind : g->nodes[G->nodes[0]].feat.kind;
        double w = fmax(0, kt->cal_ms - pp_calib_floor_ms(P->ctx->calib, P->src, fk));
        if (P->timed_on != d)
            w = pp_scale_kernel_time_blas(w, P->timed_on, d, k->ai, k->blocks,
                                          runs_blas(g, G, k->kind, P->timed_on, d));
        kt->t = w + stk->gpu_min_us * 1e-3;
    }
    S->cal_ms = keep ? kt->t : NAN;
    if (!keep) {
        double fl, by;
        pp_stack_kernel_work(sums->attn != NULL, S, &fl, &by);
        double sbf = pp_stack_byte_scale(stk);
        kt->t = pp_stack_role(stk, sums->attn != NULL, S) != 2
                    ? 0 /* no kernel of its own: a view or part of the fused attention, a
                           concatenation its producers write, an epilogue */
                    : pp_stack_kernel_gpu_ms(stk, d, S, fl,
                                             pp_stack_dram_bytes(stk, d, S, by * sbf, sbf));
        kt->calibrated = 0;
    }
    sums->roof_sum_ms += fmin(kt->roof_d, kt->t);
    pp_stack_kernel *B = &sums->sk[sums->n_sk];
    if (pp_stack_bn_pass(g, G->nodes[0], B)) {
        pp_stack_reuse_bn(&sums->reuse, g, G, B);
        /* no layer model times it: the stack's model does, as above */
        int bmb;
        double rb = pp_roofline_ms(d, PP_OPK_ELEMWISE, B->flops, B->bytes * P->bf, &bmb);
        B->cal_ms = NAN;
        if (stk->bn_kernel) sums->roof_sum_ms += rb;
        push_sk(sums);
    }
}

/* The caller's entry for one kernel in the per-kernel breakdown (perfpred_predict_params). */
static void record_kernel(const pp_graph *g, const pp_kernel_group *G, const kernel_acc *k,
                          const kernel_time *kt, perfpred_kernel *K)
{
    memset(K, 0, sizeof *K);
    K->first_node = G->nodes[0];
    K->n_nodes = G->n;
    size_t off = 0;
    for (int s = 0; s < G->n && off < sizeof K->ops - 1; s++)
        off += (size_t)snprintf(K->ops + off, sizeof K->ops - off, "%s%s", s ? "+" : "",
                                g->nodes[G->nodes[s]].op_type);
    if (kt->as_eager && off < sizeof K->ops - 1)
        snprintf(K->ops + off, sizeof K->ops - off, "=%s", G->eager_op);
    K->kind = pp_op_kind_name(k->kind);
    K->latency_ms = kt->t;
    K->flops = k->flops;
    K->bytes = k->bytes;
    K->memory_bound = kt->mb;
    K->prov = kt->covered      ? PERFPRED_PROV_TRANSFERRED
              : kt->calibrated ? PERFPRED_PROV_CALIBRATED
                               : PERFPRED_PROV_ESTIMATE;
}

/* Times every kernel group in order and sums time, energy and bytes over them. */
static void run_kernels(const predict_setup *P, const pp_kernel_group *kernels, int n_groups,
                        kernel_sums *sums)
{
    const pp_device *d = P->d;
    const perfpred_predict_params *pp = P->pp;
    for (int gi = 0; gi < n_groups; gi++) {
        const pp_kernel_group *G = &kernels[gi];
        kernel_acc k;
        chain_figures(P->g, G->nodes, G->n, P->bf, &k);
        kernel_time kt;
        time_kernel(P, G, &k, sums, &kt);
        sums->cur = gi;
        if (sums->sk) stack_time(P, G, &k, sums, &kt);
        sums->total_ms += kt.t;
        sums->total_bytes += k.bytes;
        if (sums->node_ms) sums->node_ms[G->nodes[0]] = kt.t;
        if (d->max_power_w > 0) sums->energy_mj += kernel_energy_mj(d, kt.t, kt.roof_d);
        if (pp->kernels && sums->nk < pp->kernels_cap)
            record_kernel(P->g, G, &k, &kt, &pp->kernels[sums->nk]);
        sums->nk++;
        sums->ncal += kt.calibrated && !kt.covered;
        sums->ncover += kt.covered;
    }
}

/* A stack prediction's latency interval: the stack's quantiles from rows of GPUs its fits did
 * not see, none where the host's dispatch scale is only an estimate. */
static void stack_interval(const pp_device *d, const pp_stack *stk, stack_mode mode,
                           perfpred_prediction *out)
{
    if (mode.graph)
        pp_interval_none(&out->latency_interval,
                         "no interval: one GPU's CUDA-graph replays (the H200's) are too few to "
                         "judge a replayed stack on GPUs it did not see");
    else if (host_estimated(d) &&
        out->latency_ms.prov != PERFPRED_PROV_CALIBRATED) /* not a GPU the stack saw */
        pp_interval_none(&out->latency_interval,
                         "no interval: the host's dispatch scale is an estimate, and no "
                         "held-out rows judge estimated hosts");
    else if (out->latency_ms.prov == PERFPRED_PROV_ESTIMATE)
        pp_interval_none(&out->latency_interval,
                         "no interval: the descriptor lacks the rate the stack's kernels run at");
    else if (stk->latency_iv[out->batch >= 16].n > 0)
        pp_interval_apply(&stk->latency_iv[out->batch >= 16], out->latency_ms.value, "stack",
                          &out->latency_interval);
    else
        pp_interval_none(&out->latency_interval,
                         "no interval: this runtime stack was fitted without held-out GPUs");
}

/* graph-level correction: prediction = layer sum x exp(GNN output), trained on whole-network
 * measurements of this device against this same layer sum */
static perfpred_status gnn_correct(const pp_graph *g, const pp_device *d, const kernel_sums *sums,
                                   gnn_corr *gc, perfpred_prediction *out, pp_err *err)
{
    pp_gnn_graph sample;
    double tf = d->peak_tflops[d->runtime_precision];
    if (!(tf > 0)) tf = d->peak_tflops[PP_PREC_FP32];
    perfpred_status st = pp_gnn_sample_from(g, sums->node_ms, sums->total_ms, tf,
                                            d->memory_bandwidth_gbs, &sample, err);
    if (!st) st = pp_gnn_forward_fast(gc->gnn, &sample, gc->v, gc->lo, gc->hi, err);
    pp_gnn_graph_clear(&sample);
    if (st) return st;
    /* members that disagree past the ensemble's gate: the correction is extrapolating, the
     * prediction is what answers without it */
    gc->corrected = pp_gnn_agrees_all(gc->gnn, gc->lo, gc->hi);
    out->correction_gated = !gc->corrected;
    return PERFPRED_OK;
}

/* The latency outside a runtime stack: the layer sum, corrected by the GNN or else by the
 * in-network overhead correction where the device has one; unavailable where no roofline timed
 * a kernel. Reads out's weights and activations (layer_sum_memory). Returns the overhead
 * correction's source, NULL where it did not answer. */
static const char *layer_sum_latency(const predict_setup *P, const kernel_sums *sums,
                                     const gnn_corr *gc, perfpred_prediction *out)
{
    const pp_device *d = P->d;
    double total_ms = sums->total_ms;
    int nk = sums->nk, ncal = sums->ncal + sums->ncover, untimed = sums->untimed;
    int corrected = gc->corrected;
    /* every kernel from the layer models of another device (calibration_from; the kernels those
     * do not cover from another calibrated CPU's), scaled to this one: transferred, also where
     * an in-network correction of this device's own follows (a MIG slice's parent is the same
     * chip); a device's own models with some kernels from another CPU's: mixed */
    int borrowed = P->src && P->src != d && !(d->is_mig && d->parent == P->src);
    perfpred_provenance all_cal = borrowed          ? PERFPRED_PROV_TRANSFERRED
                                  : sums->ncover > 0 ? PERFPRED_PROV_MIXED
                                                     : PERFPRED_PROV_CALIBRATED;
    /* else the in-network overhead correction: scale x layer sum + a fixed time per kernel, per
     * megabyte moved and per megabyte of weights the pass finds beyond the last-level cache,
     * fitted on whole-network measurements of this device against this same sum; for a device
     * that borrows another's layer models and has none of its own, that device's, scaled */
    double ovh[PP_OVERHEAD_TERMS] = {1, 0, 0, 0};
    const char *ovh_src = corrected || P->pp->layer_sum_only || untimed || ncal == 0
                              ? NULL
                              : pp_calib_overhead_answer(P->ctx->calib, d, ovh);

    out->n_kernels = out->n_launched_kernels = nk;
    out->kernel_bytes = sums->total_bytes;
    out->cold_weight_bytes = pp_overhead_cold_weight_bytes(d, P->g, P->bf, out->weights_bytes,
                                                           out->activations_bytes);
    out->latency_members_lo_ms = out->latency_members_hi_ms = NAN;
    if (corrected || out->correction_gated) {
        out->correction_members = pp_gnn_members(gc->gnn);
        if (out->correction_members > 1) {
            out->latency_members_lo_ms = total_ms * exp(gc->lo[0]);
            out->latency_members_hi_ms = total_ms * exp(gc->hi[0]);
        }
    }
    out->n_calibrated_kernels = sums->ncal;
    out->n_covered_kernels = sums->ncover;
    out->latency_ms.value = total_ms;
    if (untimed) {
        out->latency_ms.value = NAN;
        out->latency_ms.prov = PERFPRED_PROV_UNAVAILABLE;
        out->latency_ms.source = "the device is not calibrated and its descriptor lacks "
                                 "peak_tflops.fp32 or memory_bandwidth_gbs for a roofline";
    } else if (corrected) {
        out->latency_ms.value = total_ms * exp(gc->v[0]);
        out->latency_ms.prov = PERFPRED_PROV_CALIBRATED;
        out->latency_ms.source = gc->src;
    } else if (ovh_src) {
        out->latency_ms.value = pp_overhead_latency_ms(ovh, total_ms, nk, sums->total_bytes,
                                                       out->cold_weight_bytes);
        out->latency_ms.prov = ncal == nk ? all_cal : PERFPRED_PROV_MIXED;
        out->latency_ms.source = ovh_src;
    } else if (ncal == 0) {
        out->latency_ms.prov = PERFPRED_PROV_ESTIMATE;
        out->latency_ms.source = "roofline estimate from the device descriptor (uncalibrated)";
    } else if (ncal == nk) {
        out->latency_ms.prov = all_cal;
        out->latency_ms.source = P->calib_src;
    } else {
        out->latency_ms.prov = PERFPRED_PROV_MIXED;
        out->latency_ms.source = P->calib_src;
    }
    return ovh_src;
}

/* The energy outside a runtime stack: the GNN's where it corrects energy too, else the board
 * power model summed over the kernels, else unavailable. */
static void layer_sum_energy(const pp_device *d, const kernel_sums *sums, const gnn_corr *gc,
                             perfpred_prediction *out)
{
    if (gc->corrected && gc->gnn->n_targets > 1) {
        /* the correction's energy base is the layer sum x 1 W: it carries the board's power */
        out->energy_mj.value = sums->total_ms * exp(gc->v[1]);
        out->energy_mj.prov = PERFPRED_PROV_CALIBRATED;
        out->energy_mj.source = gc->src;
    } else if (d->max_power_w > 0 && !sums->untimed) {
        out->energy_mj.value = sums->energy_mj;
        out->energy_mj.prov = PERFPRED_PROV_ESTIMATE;
        out->energy_mj.source = "board power model idle + (max - idle) x roofline utilisation "
                                "(uncalibrated)";
    } else {
        out->energy_mj.value = NAN;
        out->energy_mj.prov = PERFPRED_PROV_UNAVAILABLE;
        out->energy_mj.source = sums->untimed ? "no latency to integrate power over"
                                              : "the descriptor states no board power";
    }
}

/* The peak memory outside a runtime stack: the descriptor's runtime figures on top of the
 * graph's weights and peak live activations. A CPU whose descriptor states no runtime memory
 * takes that of the CPU whose layer models it borrows (src): the same runtime's resident set. */
static void layer_sum_memory(const pp_graph *g, const pp_device *d, const pp_device *src,
                             double bf, perfpred_prediction *out)
{
    int borrow = d->kind == PP_DEV_CPU && !(d->runtime_memory_overhead_mb > 0) && src &&
                 src != d && src->kind == PP_DEV_CPU && src->runtime_memory_overhead_mb > 0;
    out->weights_bytes = (double)g->totals.param_bytes * bf;
    out->activations_bytes = (double)g->totals.peak_activation_bytes * bf;
    out->workspace_bytes = d->workspace_mb * 1048576.0;
    out->runtime_bytes = (borrow ? src : d)->runtime_memory_overhead_mb * 1048576.0;
    out->peak_memory_bytes.value =
        out->weights_bytes + out->activations_bytes + out->workspace_bytes + out->runtime_bytes;
    out->peak_memory_bytes.prov = PERFPRED_PROV_ESTIMATE;
    out->peak_memory_bytes.source =
        borrow ? "weights + peak live activations + runtime workspace and overhead, the "
                 "runtime's own resident memory that of the CPU whose layer models it borrows "
                 "(uncalibrated)"
               : "weights + peak live activations + runtime workspace and overhead (uncalibrated)";
}

static perfpred_status predict_set_up(const predict_setup *P, gnn_corr *gc,
                                      perfpred_prediction *out, pp_err *err);

/* A prediction of g on d: the kernels timed one by one, then a runtime stack's host/GPU pipeline
 * over them, or else their sum with the device's correction; memory and energy beside. */
static perfpred_status predict_graph(const perfpred_ctx *ctx, const pp_graph *g,
                                     const pp_device *d, const perfpred_predict_params *pp,
                                     perfpred_prediction *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    out->device = d->name;
    out->batch = 1;
    if (g->n_inputs > 0 && g->tensors[g->inputs[0]].rank > 0)
        out->batch = g->tensors[g->inputs[0]].dims[0];

    predict_setup P;
    gnn_corr gc;
    perfpred_status rst = predict_setup_of(ctx, g, d, pp, &P, &gc, err);
    if (rst != PERFPRED_OK) return rst;
    rst = predict_set_up(&P, &gc, out, err);
    free(P.amp32);
    return rst;
}

/* A stack prediction's kernels as it launches them (out->n_launched_kernels) and, where the
 * breakdown is asked, each row's time as the pipeline ran it: a kernel's own, with the BatchNorm
 * pass eager runs after a convolution and the casts autocast runs before an op, so that the rows
 * add up to out->gpu_ms. */
static void stack_breakdown(const pp_device *d, const pp_stack *stk, const kernel_sums *sums,
                            const perfpred_predict_params *pp, perfpred_prediction *out)
{
    double *t = pp->kernels && sums->sk_group
                    ? malloc(((size_t)sums->n_sk + 1) * sizeof *t)
                    : NULL; /* none asked, or none to spare: the rows keep their kernels' own times */
    out->n_launched_kernels =
        pp_stack_kernel_gpu_times(stk, d, sums->sk, sums->n_sk, sums->scratch, t);
    if (!t) return;
    int nrec = sums->nk < pp->kernels_cap ? sums->nk : pp->kernels_cap;
    for (int i = 0; i < nrec; i++) pp->kernels[i].latency_ms = 0;
    for (int i = 0; i < sums->n_sk; i++)
        if (sums->sk_group[i] < nrec) pp->kernels[sums->sk_group[i]].latency_ms += t[i];
    free(t);
}

/* The prediction P sets up, into out. */
static perfpred_status predict_set_up(const predict_setup *P, gnn_corr *gc,
                                      perfpred_prediction *out, pp_err *err)
{
    const perfpred_ctx *ctx = P->ctx;
    const pp_graph *g = P->g;
    const pp_device *d = P->d;
    const perfpred_predict_params *pp = P->pp;
    const pp_stack *stk = P->stk;
    pp_kernel_group *kernels = NULL;
    int n_groups = 0;
    perfpred_status kst = pp_graph_kernels(g, d, &kernels, &n_groups, err);
    if (kst != PERFPRED_OK) return kst;
    kernel_sums sums;
    memset(&sums, 0, sizeof sums);
    sums.node_ms = gc->gnn ? calloc((size_t)g->n_nodes + 1, sizeof *sums.node_ms) : NULL;
    /* the stack's view of each kernel (and of a BatchNorm pass after each conv that had one
     * folded in), then 4 doubles of pipeline scratch per entry */
    /* (and under autocast up to PP_STACK_MAX_CASTS casts before each) */
    size_t per = 2 + (P->mode.amp ? PP_STACK_MAX_CASTS : 0);
    sums.sk = stk ? malloc(((size_t)n_groups * per + 1) * sizeof *sums.sk) : NULL;
    sums.scratch = stk ? malloc(((size_t)n_groups * per + 1) * 4 * sizeof *sums.scratch) : NULL;
    sums.sk_group = stk && pp->kernels
                        ? malloc(((size_t)n_groups * per + 1) * sizeof *sums.sk_group)
                        : NULL;
    sums.n_groups = n_groups;
    int attn_fail = stk && pp_stack_fused_attention(stk, d) &&
                    attention_of(g, kernels, n_groups, &sums.attn, &sums.attn_fl);
    if ((gc->gnn && !sums.node_ms) || (stk && (!sums.sk || !sums.scratch)) ||
        (stk && pp->kernels && !sums.sk_group) || attn_fail) {
        free(kernels);
        free(sums.node_ms);
        free(sums.sk);
        free(sums.scratch);
        free(sums.sk_group);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    /* no room for the copies' shortcut is no error: every kernel asks its models then */
    sums.cal_ms = P->src ? malloc((size_t)g->n_nodes * sizeof *sums.cal_ms + 1) : NULL;
    for (int i = 0; sums.cal_ms && i < g->n_nodes; i++) sums.cal_ms[i] = NAN;
    if (stk) pp_stack_reuse_init(&sums.reuse, g, kernels, n_groups); /* -1: no reuse known */
    run_kernels(P, kernels, n_groups, &sums);
    pp_stack_reuse_free(&sums.reuse);
    free(sums.attn);
    free(sums.attn_fl);
    free(sums.cal_ms);
    free(kernels);
    if (pp->n_kernels) *pp->n_kernels = sums.nk;
    if (stk) {
        perfpred_status sst = stack_figures(g, d, stk, P->mode, &ctx->power, n_groups, sums.sk,
                                            sums.n_sk, sums.scratch, sums.roof_sum_ms, sums.ncal,
                                            out, err);
        if (!sst) stack_breakdown(d, stk, &sums, pp, out);
        free(sums.sk_group);
        free(sums.sk);
        free(sums.scratch);
        free(sums.node_ms);
        stack_interval(d, stk, P->mode, out);
        return sst ? sst : finish_prediction(d, out, err);
    }

    if (gc->gnn && !sums.untimed && sums.total_ms > 0) {
        perfpred_status st = gnn_correct(g, d, &sums, gc, out, err);
        if (st) {
            free(sums.node_ms);
            return st;
        }
    }
    free(sums.node_ms);
    layer_sum_memory(g, d, P->src, P->bf, out); /* before the latency: its cold-weight term reads it */
    const char *ovh_src = layer_sum_latency(P, &sums, gc, out);
    layer_sum_energy(d, &sums, gc, out);
    pp_interval_attach(ctx->intervals, d, out->latency_ms.prov, gc->corrected,
                       out->correction_gated, ovh_src != NULL, out->latency_ms.value,
                       &out->latency_interval);
    return finish_prediction(d, out, err);
}

/* predict_graph, or the context's copy of its answer to the same call (predictor/reuse.c). */
static perfpred_status predict_model(const perfpred_ctx *ctx, const perfpred_model *m,
                                     const pp_device *d, const perfpred_predict_params *pp,
                                     perfpred_prediction *out, pp_err *err)
{
    uint64_t serial = pp_model_serial(m);
    if (pp_reuse_get(ctx->reuse, serial, d, pp, out)) return PERFPRED_OK;
    perfpred_status st = predict_graph(ctx, pp_model_graph(m), d, pp, out, err);
    if (st == PERFPRED_OK) pp_reuse_put(ctx->reuse, serial, d, pp, out);
    return st;
}

perfpred_status perfpred_predict(const perfpred_ctx *ctx, const perfpred_model *m,
                                 const char *device, const perfpred_predict_params *params,
                                 perfpred_prediction *out, char *errbuf, size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st;
    if (!ctx || !m || !device || !out) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "perfpred_predict: NULL argument");
    } else {
        const pp_device *d = pp_devices_find(ctx->db, device);
        if (!d) {
            st = pp_err_set(&err, PERFPRED_ERR_DEVICE,
                            "unknown device '%s' (perfpred devices lists them)", device);
        } else {
            perfpred_predict_params p = params ? *params : perfpred_predict_default_params();
            st = predict_model(ctx, m, d, &p, out, &err);
        }
    }
    if (st) copy_err(&err, errbuf, errbuf_len);
    return st;
}

/* ---------------------------------------------------------------------- MIG ---- */

static int cmp_profiles(const void *a, const void *b)
{
    const perfpred_mig_option *x = a, *y = b;
    if (x->device.memory_gb != y->device.memory_gb)
        return x->device.memory_gb < y->device.memory_gb ? -1 : 1;
    if (x->device.mig_compute_slices != y->device.mig_compute_slices)
        return x->device.mig_compute_slices < y->device.mig_compute_slices ? -1 : 1;
    return strcmp(x->device.name, y->device.name);
}

perfpred_status perfpred_mig_advise(const perfpred_ctx *ctx, const perfpred_model *m,
                                    const char *gpu, double slo_ms, perfpred_mig_advice *out,
                                    char *errbuf, size_t errbuf_len)
{
    return perfpred_mig_advise_params(ctx, m, gpu, slo_ms, NULL, out, errbuf, errbuf_len);
}

perfpred_status perfpred_mig_advise_params(const perfpred_ctx *ctx, const perfpred_model *m,
                                           const char *gpu, double slo_ms,
                                           const perfpred_predict_params *params,
                                           perfpred_mig_advice *out, char *errbuf,
                                           size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    if (!ctx || !m || !gpu || !out) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "perfpred_mig_advise: NULL argument");
        goto done;
    }
    memset(out, 0, sizeof *out);
    out->dippm_choice = out->slo_choice = -1;
    out->slo_ms = slo_ms > 0 ? slo_ms : 0;
    const pp_device *parent = pp_devices_find(ctx->db, gpu);
    if (!parent) {
        st = pp_err_set(&err, PERFPRED_ERR_DEVICE, "unknown device '%s'", gpu);
        goto done;
    }
    if (parent->is_mig) parent = parent->parent;
    for (int i = 0; i < pp_devices_count(ctx->db); i++) {
        const pp_device *d = pp_devices_at(ctx->db, i);
        if (!d->is_mig || d->parent != parent) continue;
        if (out->n_options == (int)(sizeof out->options / sizeof out->options[0])) break;
        perfpred_mig_option *o = &out->options[out->n_options];
        if ((st = perfpred_device_find(ctx, d->name, &o->device))) {
            pp_err_set(&err, st, "device '%s' not found", d->name);
            goto done;
        }
        perfpred_predict_params p = perfpred_predict_default_params();
        if (params) {
            p.runtime = params->runtime;
            p.precision = params->precision;
        }
        st = predict_model(ctx, m, d, &p, &o->pred, &err);
        if (st) goto done;
        o->fits = o->pred.fits_in_memory;
        o->meets_slo = o->fits && (slo_ms <= 0 || o->pred.latency_ms.value <= slo_ms);
        o->instances = o->fits ? o->device.mig_max_instances : 0;
        out->n_options++;
    }
    if (out->n_options == 0) {
        st = pp_err_set(&err, PERFPRED_ERR_DEVICE, "device '%s' has no MIG profiles", gpu);
        goto done;
    }
    qsort(out->options, (size_t)out->n_options, sizeof out->options[0], cmp_profiles);
    for (int i = 0; i < out->n_options; i++) {
        if (out->dippm_choice < 0 && out->options[i].fits) out->dippm_choice = i;
        if (slo_ms > 0 && out->slo_choice < 0 && out->options[i].meets_slo) out->slo_choice = i;
    }
    int pick = slo_ms > 0 ? out->slo_choice : out->dippm_choice;
    /* the most instances of any single profile that meets the SLO (or fits, without one) */
    for (int i = 0; i < out->n_options; i++)
        if (out->options[i].meets_slo && out->options[i].instances > out->max_instances_under_slo)
            out->max_instances_under_slo = out->options[i].instances;
    if (pick < 0) out->max_instances_under_slo = 0;
done:
    if (st) copy_err(&err, errbuf, errbuf_len);
    return st;
}
