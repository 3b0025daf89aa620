/* predictor/stack.c: the runtime stack model of predictor/stack.h: kernel classes, the GPU time of
 * a kernel under a stack (peak by tensor-core mode, efficiency, waves), the host/GPU pipeline, the
 * context memory by architecture, and the JSON artifact that holds a fitted stack. */
#include "predictor/stack.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static const char *const class_names[PP_SK__COUNT] = {"conv", "conv3x3", "depthwise", "matmul",
                                                      "memory"};

pp_stack_class pp_stack_class_of(const pp_node_feat *f)
{
    switch (f->kind) {
    case PP_OPK_CONV:
    case PP_OPK_CONVT:
        if (f->group > 1) return PP_SK_DW;
        return f->kernel[0] == 3 && f->kernel[1] == 3 && f->stride[0] == 1 && f->stride[1] == 1
                   ? PP_SK_CONV3
                   : PP_SK_CONV;
    case PP_OPK_DWCONV: return PP_SK_DW;
    case PP_OPK_LINEAR:
    case PP_OPK_BMM: return PP_SK_MATMUL;
    default: return PP_SK_MEM;
    }
}

double pp_wave_factor(double blocks, int sms, int resident)
{
    if (!(blocks > 0) || sms <= 0 || resident <= 0) return 1.0;
    double x = blocks / ((double)sms * resident);
    return x >= 1 ? ceil(x) / x : 1.0 / x;
}

double pp_stack_blocks(const pp_node_feat *f)
{
    switch (f->kind) {
    case PP_OPK_CONV:
    case PP_OPK_CONVT:
    case PP_OPK_DWCONV:
        return ceil((double)(f->n * f->hout * (f->wout > 0 ? f->wout : 1)) / 64.0) *
               ceil((double)f->cout / 64.0);
    case PP_OPK_LINEAR:
    case PP_OPK_BMM:
        return (double)(f->b > 0 ? f->b : 1) * ceil((double)f->m / 64.0) *
               ceil((double)f->nn / 64.0);
    default: {
        /* reductions (global pooling, norms, softmax) spread their input over the blocks */
        double elems = fmax((double)f->out_elems, f->in_bytes / 4.0);
        return ceil(elems / 512.0);
    }
    }
}

int pp_stack_resident(pp_stack_class c) { return c == PP_SK_MEM ? 4 : 2; }

double pp_stack_peak_tflops(const pp_stack *s, const pp_device *d, pp_stack_class c)
{
    double fp32 = d->peak_tflops[PP_PREC_FP32], tf = 0;
    int tensor = c == PP_SK_CONV || c == PP_SK_CONV3 || c == PP_SK_MATMUL;
    if (tensor && s->precision == PP_PREC_FP16)
        tf = s->fp16_acc16 && d->peak_fp16_acc16_tflops > 0 ? d->peak_fp16_acc16_tflops
                                                            : d->peak_tflops[PP_PREC_FP16];
    else if (tensor && s->precision == PP_PREC_BF16)
        tf = d->peak_tflops[PP_PREC_BF16];
    else if (tensor && s->tf32_conv && (c != PP_SK_MATMUL || s->one_gemm))
        tf = d->peak_tflops[PP_PREC_TF32];
    /* GPUs without tensor cores for the stack's precision run it on the fp32 lanes */
    return tf > fp32 ? tf : fp32;
}

int pp_stack_rate_missing(const pp_stack *s, const pp_device *d)
{
    if (!(d->peak_tflops[PP_PREC_FP32] > 0)) return 1;
    if (s->precision == PP_PREC_FP16 && d->compute_capability >= 7.0)
        return !(d->peak_tflops[PP_PREC_FP16] > 0);
    if (s->precision == PP_PREC_BF16) return !(d->peak_tflops[PP_PREC_BF16] > 0);
    return s->tf32_conv && d->compute_capability >= 8.0 && !(d->peak_tflops[PP_PREC_TF32] > 0);
}

int pp_stack_on_tensor_cores(const pp_stack *s, const pp_device *d, pp_stack_class c)
{
    return c != PP_SK_MEM && pp_stack_peak_tflops(s, d, c) > d->peak_tflops[PP_PREC_FP32];
}

double pp_stack_sm_gclocks(const pp_device *d)
{
    if (d->compute_units > 0 && d->clock_mhz > 0) return d->compute_units * d->clock_mhz * 1e-3;
    double fp32 = d->peak_tflops[PP_PREC_FP32];
    return fp32 > 0 ? fp32 * 1e3 / (2.0 * (pp_stack_fp32_doubled(d) ? 128 : 64)) : 0;
}

/* a compute kernel's share on d's fp32 lanes: fp32_dual_eff where d doubled them, else 1 */
static double lanes_share(const pp_stack *s, const pp_device *d)
{
    return pp_stack_fp32_doubled(d) && s->fp32_dual_eff > 0 ? s->fp32_dual_eff : 1.0;
}

double pp_stack_tensor_share(const pp_stack *s, const pp_device *d, pp_stack_class c)
{
    if (!pp_stack_on_tensor_cores(s, d, c)) return c != PP_SK_MEM ? lanes_share(s, d) : 1.0;
    double gclk = pp_stack_sm_gclocks(d), share = 1.0;
    if (s->tc_feed > 0 && gclk > 0)
        share = 1.0 / (1.0 + pp_stack_peak_tflops(s, d, c) * 1e3 / gclk / s->tc_feed);
    double e = pp_stack_class_eff(s, c);
    return e * share > 1 ? 1 / e : share;
}

int pp_stack_off_tensor_cores(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k)
{
    if ((k->cls != PP_SK_CONV && k->cls != PP_SK_CONV3) || k->cin_g <= 0 ||
        k->cin_g % (s->precision == PP_PREC_FP32 ? 4 : 8) == 0)
        return 0; /* the cheap tests first: the fit asks this of every kernel it times */
    return strcmp(s->framework, "tensorrt") != 0 && pp_stack_on_tensor_cores(s, d, k->cls);
}

double pp_stack_kernel_peak_tflops(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k)
{
    return pp_stack_off_tensor_cores(s, d, k) ? d->peak_tflops[PP_PREC_FP32]
                                              : pp_stack_peak_tflops(s, d, k->cls);
}

double pp_stack_kernel_share(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k)
{
    return pp_stack_off_tensor_cores(s, d, k) ? lanes_share(s, d)
                                              : pp_stack_tensor_share(s, d, k->cls);
}

double pp_stack_compute_reach(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k)
{
    if (k->cls == PP_SK_MEM) return 0;
    double e = pp_stack_class_eff(s, k->cls) * pp_stack_kernel_share(s, d, k);
    return e > 0 && e < 1 ? e : 1;
}

double pp_stack_launch_blocks(const pp_device *d, pp_stack_class c, double blocks, double red)
{
    if (c == PP_SK_MEM || !(red > 0) || d->compute_units <= 0 || !(blocks > 0)) return blocks;
    double slots = (double)d->compute_units * pp_stack_resident(c);
    if (blocks >= slots) return blocks;
    double split = fmin(ceil(red / 256.0), floor(slots / blocks));
    return blocks * (split > 1 ? split : 1);
}

/* The DRAM is one queue, not waves: a kernel of `lb` launched blocks (`res` resident per SM)
 * streams through the SMs its blocks occupy (*active; 0 where d states no SMs or it launches
 * none), each at most what an SM of this GPU streams (the same on every MIG slice), within the
 * device's stream bandwidth. Returns that bandwidth in GB/s. */
static double kernel_stream_gbs(const pp_device *d, double lb, int res, double *active)
{
    double bw = pp_device_stream_gbs(d); /* what a streaming kernel reaches */
    *active = d->compute_units > 0 && lb > 0 ? fmin(d->compute_units, lb / res) : 0;
    return *active > 0 ? fmin(bw, pp_device_sm_stream_gbs(d) * *active) : bw;
}

/* pp_stack_unit_ms at a peak of peak_tflops */
static void unit_ms_at(const pp_device *d, pp_stack_class c, double peak_tflops, double flops,
                       double bytes, double blocks, double red, double *tc_ms, double *tm_ms)
{
    double peak = peak_tflops * 1e12, active;
    double lb = pp_stack_launch_blocks(d, c, blocks, red);
    int res = pp_stack_resident(c);
    double wf = pp_wave_factor(lb, d->compute_units, res);
    *tc_ms = c != PP_SK_MEM && peak > 0 ? flops / peak * wf * 1e3 : 0;
    double sbw = kernel_stream_gbs(d, lb, res, &active) * 1e9;
    *tm_ms = sbw > 0 ? bytes / sbw * 1e3 : 0;
}

void pp_stack_unit_ms(const pp_stack *s, const pp_device *d, pp_stack_class c, double flops,
                      double bytes, double blocks, double red, double *tc_ms, double *tm_ms)
{
    unit_ms_at(d, c, pp_stack_peak_tflops(s, d, c), flops, bytes, blocks, red, tc_ms, tm_ms);
}

double pp_stack_sm_need(const pp_device *d, pp_stack_class c, double blocks, double red)
{
    double gclk = pp_stack_sm_gclocks(d), active;
    int sms = d->compute_units;
    if (sms <= 0 || !(gclk > 0)) return 0;
    double bw = kernel_stream_gbs(d, pp_stack_launch_blocks(d, c, blocks, red),
                                  pp_stack_resident(c), &active);
    if (!(active > 0)) active = sms; /* no blocks known: the whole GPU streams */
    return bw / (active * gclk / sms);
}

double pp_stack_kernel_need(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k)
{
    if (!(s->mem_feed > 0)) return 0;
    double need = pp_stack_sm_need(d, k->cls, k->blocks, k->red);
    /* a 16-bit stack's feed is that of loads of 2-byte elements; a cast loads fp32 ones, twice
     * the bytes in flight for the same loads */
    return k->cast && pp_stack_byte_scale(s) < 1 ? need / 2 : need;
}

double pp_stack_gpu_ms(const pp_stack *s, const pp_device *d, pp_stack_class c, double flops,
                       double bytes, double blocks, double red)
{
    pp_stack_kernel k = {.cls = c, .blocks = blocks, .red = red};
    return pp_stack_kernel_gpu_ms(s, d, &k, flops, bytes);
}

double pp_stack_kernel_gpu_ms(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                              double flops, double bytes)
{
    double tc, tm;
    unit_ms_at(d, k->cls, pp_stack_kernel_peak_tflops(s, d, k), flops, bytes, k->blocks, k->red,
               &tc, &tm);
    double need = s->mem_feed > 0 ? pp_stack_sm_need(d, k->cls, k->blocks, k->red) : 0;
    return pp_stack_time_from_units(s, k->cls, pp_stack_kernel_share(s, d, k), tc, tm, need);
}

/* One call of the pipeline from host clock *h and GPU clock *g (both ms). */
static void one_call(const double *host_us, const double *gpu_ms, int n, double call_us, double *h,
                     double *g, double *busy)
{
    *h += call_us * 1e-3;
    for (int i = 0; i < n; i++) {
        *h += host_us[i] * 1e-3;
        double start = *g > *h ? *g : *h;
        *g = start + gpu_ms[i];
        *busy += gpu_ms[i];
    }
}

double pp_pipeline_ms(const double *host_us, const double *gpu_ms, int n, double call_us,
                      double sync_us, int calls, double *gpu_busy)
{
    if (calls < 1) calls = 1;
    double h = 0, g = 0, busy = 0, prev_end = 0, end = 0;
    int sim = calls < 3 ? calls : 3;
    for (int c = 0; c < sim; c++) {
        prev_end = end;
        one_call(host_us, gpu_ms, n, call_us, &h, &g, &busy);
        end = g > h ? g : h;
    }
    double total = end;
    if (calls > sim) {
        /* from the third call on, each call adds what the third added */
        total += (double)(calls - sim) * (end - prev_end);
        busy *= (double)calls / sim;
    }
    total += sync_us * 1e-3;
    if (gpu_busy) *gpu_busy = total > 0 ? fmin(1.0, busy / total) : 0;
    return total / calls;
}

double pp_stack_latency_units_ms(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                                 const double *tc_ms, const double *tm_ms, const double *need_bpc,
                                 int n, double *scratch, double *host_ms, double *gpu_ms)
{
    double *host = scratch, *gpu = scratch + n;
    double hs = d->host_dispatch_scale > 0 ? d->host_dispatch_scale : 1.0, hsum = 0, gsum = 0;
    int m = 0, fa = pp_stack_fused_attention(s, d);
    double share[PP_SK__COUNT];
    for (int c = 0; c < PP_SK__COUNT; c++) share[c] = pp_stack_tensor_share(s, d, c);
    for (int i = 0; i < n; i++) {
        /* a folded BatchNorm the stack folds too, or an element-wise op in the epilogue of the
         * conv or matmul whose output it reads: no launch */
        if (pp_stack_role(s, fa, &k[i]) != 2) continue;
        /* a bias add is dispatched in C++ within its convolution's op, whose one call the conv
         * class's host cost prices */
        host[m] = (k[i].bn ? (k[i].bias ? 0 : s->host_bn_us) : s->host_us[k[i].cls]) * hs;
        /* a fused attention's dispatch: its kernel and the views around it */
        if (fa && k[i].attn == PP_ATTN_CORE) host[m] += s->host_us[PP_SK_MEM] * hs;
        double need =
            need_bpc && s->mem_feed > 0 ? need_bpc[i] : pp_stack_kernel_need(s, d, &k[i]);
        double sh = pp_stack_off_tensor_cores(s, d, &k[i]) ? lanes_share(s, d) : share[k[i].cls];
        gpu[m] = isfinite(k[i].cal_ms) ? k[i].cal_ms
                                       : pp_stack_time_from_units(s, k[i].cls, sh,
                                                                  tc_ms[i], tm_ms[i], need);
        hsum += host[m];
        gsum += gpu[m];
        m++;
    }
    if (host_ms) *host_ms = (hsum + s->call_us * hs) * 1e-3;
    if (gpu_ms) *gpu_ms = gsum;
    return pp_pipeline_ms(host, gpu, m, s->call_us * hs, s->sync_us, s->timing_calls, NULL);
}

void pp_stack_set_framework(pp_stack *s, const char *framework)
{
    if (framework != s->framework) snprintf(s->framework, sizeof s->framework, "%s", framework);
    /* TensorRT's builder has a concatenation's producers write into their slices of its output
     * (its verbose build log: "Eliminating concatenation ..."), so no copy runs; PyTorch copies */
    s->elide_concat = strcmp(s->framework, "tensorrt") == 0;
    s->one_gemm = s->elide_concat;
}

void pp_stack_graph_replay(pp_stack *s)
{
    for (int c = 0; c < PP_SK__COUNT; c++) s->host_us[c] = 0;
    s->host_bn_us = 0;
    s->call_us = 0;
}

/* ------------------------------------------------------------- attention ---- */

int pp_stack_fused_attention(const pp_stack *s, const pp_device *d)
{
    /* TensorRT 8.6 on fuses multi-head attention into one kernel on Ampere and later (its
     * "MHA fusion"); the 2022 Torch-TensorRT rows hold no transformer to say otherwise */
    return (strcmp(s->framework, "pytorch-eager") == 0 || strcmp(s->framework, "tensorrt") == 0) &&
           pp_stack_current_software(d);
}

/* A tensor that no runtime computes (a weight or a folded constant). */
static int is_const(const pp_graph *g, int t)
{
    return t >= 0 && (g->tensors[t].flags & (PP_T_WEIGHT | PP_T_CONST | PP_T_INITIALIZER));
}

/* Who reads each tensor at run time (shape arithmetic, folded at load, does not): how many
 * nodes, and the first. */
typedef struct readers {
    int *n, *first;
} readers;

static int readers_of(const pp_graph *g, readers *r)
{
    r->n = calloc((size_t)g->n_tensors + 1, sizeof *r->n);
    r->first = malloc(((size_t)g->n_tensors + 1) * sizeof *r->first);
    if (!r->n || !r->first) return -1;
    for (int t = 0; t < g->n_tensors; t++) r->first[t] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].feat.kind == PP_OPK_SHAPE) continue;
        for (int j = 0; j < g->nodes[i].n_inputs; j++) {
            int t = g->nodes[i].inputs[j];
            if (t < 0 || (j > 0 && g->nodes[i].inputs[j - 1] == t)) continue;
            if (r->n[t]++ == 0) r->first[t] = i;
        }
    }
    return 0;
}

/* The node that reads tensor t at run time, when exactly one does (-1 otherwise). */
static int sole_reader(const readers *rd, int t)
{
    return t >= 0 && rd->n[t] == 1 ? rd->first[t] : -1;
}

/* Node i is a head split or merge around an attention: a view or copy of one activation
 * (Transpose, Slice, Split, Gather, Reshape, ...), or its scale or bias (Div, Mul or Add with a
 * constant), whose output only the attention reads. */
static int attention_glue(const pp_graph *g, const readers *rd, int i)
{
    const pp_node *nd = &g->nodes[i];
    if (nd->n_outputs < 1 || nd->outputs[0] < 0) return 0;
    for (int o = 0; o < nd->n_outputs; o++)
        if (nd->outputs[o] >= 0 && rd->n[nd->outputs[o]] > 1) return 0;
    pp_op_kind kd = nd->feat.kind;
    if (kd == PP_OPK_DATAMOVE || kd == PP_OPK_RESHAPE) return 1;
    if (kd != PP_OPK_ELEMWISE || nd->n_inputs != 2) return 0;
    if (strcmp(nd->op_type, "Div") != 0 && strcmp(nd->op_type, "Mul") != 0 &&
        strcmp(nd->op_type, "Add") != 0)
        return 0;
    return is_const(g, nd->inputs[0]) || is_const(g, nd->inputs[1]);
}

/* The first activation input of node i (-1 when none). */
static int activation_input(const pp_graph *g, int i)
{
    const pp_node *nd = &g->nodes[i];
    for (int j = 0; j < nd->n_inputs; j++)
        if (nd->inputs[j] >= 0 && !is_const(g, nd->inputs[j])) return nd->inputs[j];
    return -1;
}

/* 1 when node i is a Transpose whose output one node reads: batch-first attention in PyTorch's
 * slow path (the one the export traces) turns its input sequence-first and its output back,
 * views the fast path does not take. */
static int lone_transpose(const pp_graph *g, const readers *rd, int i)
{
    const pp_node *nd = &g->nodes[i];
    return i >= 0 && strcmp(nd->op_type, "Transpose") == 0 && nd->n_outputs > 0 &&
           nd->outputs[0] >= 0 && rd->n[nd->outputs[0]] == 1;
}

static void absorb(const int *nk, int i, int *role)
{
    if (i >= 0 && nk[i] >= 0 && role[nk[i]] == PP_ATTN_NONE) role[nk[i]] = PP_ATTN_ABSORBED;
}

/* The projection node p is, or whose bias p adds (-1 when neither). */
static int projection_of(const pp_graph *g, int p)
{
    if (p < 0) return -1;
    if (g->nodes[p].feat.kind == PP_OPK_LINEAR) return p;
    if (strcmp(g->nodes[p].op_type, "Add") != 0) return -1;
    int in = activation_input(g, p);
    int q = in >= 0 ? g->tensors[in].producer : -1;
    return q >= 0 && g->nodes[q].feat.kind == PP_OPK_LINEAR ? q : -1;
}

/* Past reshapes (views), the node that produces t / the one node that reads t at run time. */
static int producer_past_views(const pp_graph *g, int t)
{
    for (int guard = 0; t >= 0 && guard < 8; guard++) {
        int p = g->tensors[t].producer;
        if (p < 0 || g->nodes[p].feat.kind != PP_OPK_RESHAPE) return p;
        t = activation_input(g, p);
    }
    return -1;
}

static int reader_past_views(const pp_graph *g, const readers *rd, int t)
{
    for (int guard = 0; t >= 0 && guard < 8; guard++) {
        int r = sole_reader(rd, t);
        if (r < 0 || g->nodes[r].feat.kind != PP_OPK_RESHAPE || g->nodes[r].n_outputs < 1)
            return r;
        t = g->nodes[r].outputs[0];
    }
    return -1;
}

/* Marks the kernels of the glue that feeds tensor t (back to the projection) absorbed. */
static void absorb_back(const pp_graph *g, const readers *rd, const int *nk, int t, int *role)
{
    for (int guard = 0; t >= 0 && guard < 64; guard++) {
        int p = g->tensors[t].producer;
        int proj = projection_of(g, p);
        if (proj >= 0) {
            /* the input projection: the transpose before it */
            int q = producer_past_views(g, activation_input(g, proj));
            if (q >= 0 && lone_transpose(g, rd, q)) absorb(nk, q, role);
            return;
        }
        if (p < 0 || !attention_glue(g, rd, p)) return;
        absorb(nk, p, role);
        t = activation_input(g, p);
    }
}

static double tensor_bytes(const pp_graph *g, int t)
{
    int64_t b = t >= 0 ? pp_tensor_bytes(&g->tensors[t]) : 0;
    return b > 0 ? (double)b : 0;
}

int pp_stack_attention(const pp_graph *g, const pp_kernel_group *k, int n, int *role,
                       double *flops, double *bytes)
{
    int any = 0;
    for (int i = 0; i < n; i++) {
        role[i] = PP_ATTN_NONE, flops[i] = bytes[i] = 0;
        any |= g->nodes[k[i].nodes[0]].feat.kind == PP_OPK_SOFTMAX;
    }
    if (!any) return 0; /* no attention: no reader index to build */
    int *nk = malloc(((size_t)g->n_nodes + 1) * sizeof *nk);
    readers rd = {0};
    if (!nk || readers_of(g, &rd)) {
        free(nk);
        free(rd.n);
        free(rd.first);
        return -1;
    }
    for (int i = 0; i < g->n_nodes; i++) nk[i] = -1;
    for (int i = 0; i < n; i++)
        for (int s = 0; s < k[i].n; s++) nk[k[i].nodes[s]] = i;
    int cores = 0;
    for (int i = 0; i < n; i++) {
        const pp_node *sm = &g->nodes[k[i].nodes[0]];
        if (sm->feat.kind != PP_OPK_SOFTMAX || sm->n_inputs < 1) continue;
        /* back from softmax through its scale or mask to Q K^T */
        int t = sm->inputs[0], a = -1, chain[8], nc = 0;
        for (int guard = 0; guard < 8 && t >= 0; guard++) {
            int p = g->tensors[t].producer;
            if (p < 0) break;
            if (g->nodes[p].feat.kind == PP_OPK_BMM) {
                a = p;
                break;
            }
            if (g->nodes[p].feat.kind != PP_OPK_ELEMWISE) break;
            chain[nc++] = p;
            t = activation_input(g, p);
        }
        /* forward: softmax's output is the first operand of the product with V */
        int last = k[i].nodes[k[i].n - 1];
        int so = g->nodes[last].n_outputs > 0 ? g->nodes[last].outputs[0] : -1;
        int b = sole_reader(&rd, so);
        if (a < 0 || nk[a] < 0 || b < 0 || nk[b] < 0 || g->nodes[b].feat.kind != PP_OPK_BMM ||
            g->nodes[b].n_inputs < 2 || g->nodes[b].inputs[0] != so || nk[a] == nk[b])
            continue;
        const pp_node *A = &g->nodes[a], *B = &g->nodes[b];
        role[nk[a]] = PP_ATTN_CORE;
        role[i] = role[nk[b]] = PP_ATTN_ABSORBED;
        for (int c = 0; c < nc; c++) absorb(nk, chain[c], role);
        absorb_back(g, &rd, nk, A->inputs[0], role);
        absorb_back(g, &rd, nk, A->inputs[1], role);
        absorb_back(g, &rd, nk, B->inputs[1], role);
        /* the merge of the heads after the product with V, up to the output projection */
        int t2 = B->n_outputs > 0 ? B->outputs[0] : -1;
        for (int guard = 0; guard < 64; guard++) {
            int r = sole_reader(&rd, t2);
            if (r >= 0 && g->nodes[r].feat.kind == PP_OPK_LINEAR) {
                /* the output projection (its bias added apart or not): the transpose after it */
                int o = g->nodes[r].n_outputs > 0 ? reader_past_views(g, &rd, g->nodes[r].outputs[0])
                                                  : -1;
                if (o >= 0 && projection_of(g, o) == r && g->nodes[o].n_outputs > 0)
                    o = reader_past_views(g, &rd, g->nodes[o].outputs[0]);
                if (o >= 0 && lone_transpose(g, &rd, o)) absorb(nk, o, role);
                break;
            }
            if (r < 0 || !attention_glue(g, &rd, r) || g->nodes[r].feat.kind == PP_OPK_ELEMWISE)
                break;
            absorb(nk, r, role);
            t2 = g->nodes[r].outputs[0];
        }
        flops[nk[a]] = (double)A->feat.flops + (double)B->feat.flops;
        bytes[nk[a]] = tensor_bytes(g, A->inputs[0]) + tensor_bytes(g, A->inputs[1]) +
                       tensor_bytes(g, B->inputs[1]) +
                       tensor_bytes(g, B->n_outputs > 0 ? B->outputs[0] : -1);
        cores++;
    }
    free(nk);
    free(rd.n);
    free(rd.first);
    return cores;
}

/* 1 when node nd of g is a Conv whose weights torch.onnx folded a BatchNorm into */
static int bn_folded(const pp_graph *g, const pp_node *nd)
{
    const char *w = nd->n_inputs >= 2 && nd->inputs[1] >= 0 ? g->tensors[nd->inputs[1]].name : NULL;
    return w && strncmp(w, "onnx::Conv_", 11) == 0;
}

int pp_stack_bn_pass(const pp_graph *g, int conv, pp_stack_kernel *bn)
{
    const pp_node *nd = &g->nodes[conv];
    if (strcmp(nd->op_type, "Conv") != 0 || nd->n_inputs < 2 || nd->inputs[1] < 0 ||
        nd->n_outputs < 1 || nd->outputs[0] < 0)
        return 0;
    int folded = bn_folded(g, nd);
    /* a bias of its own on a dense conv: the cuDNN path's add_ (depthwise convolutions may take
     * PyTorch's own kernel, which adds the bias inside) */
    pp_stack_class c = pp_stack_class_of(&nd->feat);
    int bias = !folded && nd->n_inputs >= 3 && is_const(g, nd->inputs[2]) &&
               (c == PP_SK_CONV || c == PP_SK_CONV3);
    if (!folded && !bias) return 0;
    int64_t out = pp_tensor_elems(&g->tensors[nd->outputs[0]]);
    if (out <= 0) return 0;
    memset(bn, 0, sizeof *bn);
    bn->cls = PP_SK_MEM;
    bn->bn = 1;
    bn->bias = bias;
    bn->flops = (bias ? 1.0 : 2.0) * (double)out;
    bn->bytes = 8.0 * (double)out; /* read and write at fp32 */
    bn->blocks = ceil((double)out / 512);
    bn->cal_ms = NAN;
    return 1;
}

/* ONNX ops that run autocast's fp16 list (conv*, linear, matmul, prelu) or its fp32 list
 * (softmax, log_softmax, layer_norm, group_norm, exp, log, pow, reciprocal, sum, prod, cumsum,
 * norm, softplus, ...), from torch.amp's CUDA op lists */
static int autocast_fp16_op(const char *op)
{
    static const char *const l[] = {"Conv", "ConvTranspose", "Gemm", "MatMul", "PRelu"};
    for (size_t i = 0; i < sizeof l / sizeof *l; i++)
        if (strcmp(op, l[i]) == 0) return 1;
    return 0;
}

static int autocast_fp32_op(const char *op)
{
    static const char *const l[] = {"Softmax",  "LogSoftmax", "LayerNormalization",
                                    "GroupNormalization", "Exp", "Log", "Pow", "Reciprocal",
                                    "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2",
                                    "ReduceLogSumExp", "CumSum", "Softplus", "Cosh", "Sinh",
                                    "Tan", "Acos", "Asin"};
    for (size_t i = 0; i < sizeof l / sizeof *l; i++)
        if (strcmp(op, l[i]) == 0) return 1;
    return 0;
}

/* A floating-point tensor (shapes, indices and masks are no operands autocast casts) */
static int float_tensor(const pp_tensor *T)
{
    return T->dtype == PP_DT_FLOAT || T->dtype == PP_DT_DOUBLE;
}

/* A constant that takes part in type promotion: floating-point, with more than one element (a
 * 0-d or one-element tensor, a Python scalar in eager code, does not promote an fp16 tensor) */
static int promoting_const(const pp_graph *g, int t)
{
    return is_const(g, t) && float_tensor(&g->tensors[t]) && pp_tensor_elems(&g->tensors[t]) > 1;
}

/* The bias of nn.Linear exported on 3-d input: node i a MatMul of a weight, and the Add that is
 * the only reader of its output adding a constant to it. The constant; -1 where there is none. */
static int linear_bias_of(const pp_graph *g, int i)
{
    const pp_node *nd = &g->nodes[i];
    int o = nd->n_outputs > 0 ? nd->outputs[0] : -1;
    if (strcmp(nd->op_type, "MatMul") != 0 || nd->feat.kind != PP_OPK_LINEAR || o < 0 ||
        g->tensors[o].n_consumers != 1)
        return -1;
    for (int j = i + 1; j < g->n_nodes; j++) {
        const pp_node *a = &g->nodes[j];
        for (int k = 0; k < a->n_inputs; k++) {
            if (a->inputs[k] != o) continue;
            if (strcmp(a->op_type, "Add") != 0 || a->n_inputs != 2) return -1;
            int c = a->inputs[1 - k];
            return is_const(g, c) ? c : -1;
        }
    }
    return -1;
}

/* 1 when Add node nd adds such a bias (linear_bias_of): the rest of nn.Linear's addmm */
static int linear_bias_add(const pp_graph *g, const pp_node *nd)
{
    if (strcmp(nd->op_type, "Add") != 0 || nd->n_inputs != 2) return 0;
    for (int k = 0; k < 2; k++) {
        int a = nd->inputs[k], p = a >= 0 ? g->tensors[a].producer : -1;
        if (p >= 0 && linear_bias_of(g, p) == nd->inputs[1 - k]) return 1;
    }
    return 0;
}

void pp_stack_autocast_dtypes(const pp_graph *g, unsigned char *fp32)
{
    for (int t = 0; t < g->n_tensors; t++) {
        const pp_tensor *T = &g->tensors[t];
        /* the model's weights and its floating-point input are fp32; an integer input (token
         * ids) or constant (a shape) is no operand of a matrix product */
        fp32[t] = float_tensor(T) &&
                  (is_const(g, t) || (T->producer < 0 && (T->flags & PP_T_GRAPH_INPUT)));
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node *nd = &g->nodes[i];
        int o32 = 0;
        if (autocast_fp16_op(nd->op_type) || linear_bias_add(g, nd)) o32 = 0;
        else if (autocast_fp32_op(nd->op_type)) o32 = 1;
        else if (strcmp(nd->op_type, "Cast") == 0) o32 = pp_node_attr_i(nd, "to", 0) == PP_DT_FLOAT;
        else if (strcmp(nd->op_type, "BatchNormalization") == 0)
            /* cuDNN's batch norm keeps its input's precision whatever its parameters' */
            o32 = nd->n_inputs > 0 && nd->inputs[0] >= 0 && fp32[nd->inputs[0]];
        else
            /* type promotion: fp32 where any activation, or a constant that promotes, is */
            for (int k = 0; k < nd->n_inputs; k++) {
                int t = nd->inputs[k];
                if (t >= 0 && fp32[t] && (!is_const(g, t) || promoting_const(g, t))) o32 = 1;
            }
        for (int k = 0; k < nd->n_outputs; k++)
            if (nd->outputs[k] >= 0 && !is_const(g, nd->outputs[k])) fp32[nd->outputs[k]] = o32;
    }
}

int pp_stack_autocast_casts(const pp_graph *g, const unsigned char *fp32, int i, int *tensor)
{
    const pp_node *nd = &g->nodes[i];
    if (nd->feat.folded || !autocast_fp16_op(nd->op_type)) return 0;
    int n = 0, folded = strcmp(nd->op_type, "Conv") == 0 && bn_folded(g, nd);
    for (int k = 0; k < nd->n_inputs && n < PP_STACK_MAX_CASTS; k++) {
        int t = nd->inputs[k];
        if (t < 0 || !fp32[t] || (folded && k == 2) || pp_tensor_elems(&g->tensors[t]) <= 0)
            continue;
        tensor[n++] = t;
    }
    int b = linear_bias_of(g, i);
    if (b >= 0 && n < PP_STACK_MAX_CASTS && pp_tensor_elems(&g->tensors[b]) > 0) tensor[n++] = b;
    return n;
}

void pp_stack_cast_kernel(int64_t elems, pp_stack_kernel *k)
{
    memset(k, 0, sizeof *k);
    k->cls = PP_SK_MEM;
    k->elementwise = 1;
    k->cast = 1;
    k->flops = (double)elems;
    k->bytes = 12.0 * (double)elems; /* 6 bytes an element moved, at fp32 */
    k->blocks = ceil((double)elems / 512);
    k->cal_ms = NAN;
}

double pp_stack_dram_bytes(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                           double bytes, double bf)
{
    if (!(s->l2_share > 0) || !(d->l2_mb > 0)) return bytes;
    double room = s->l2_share * d->l2_mb * 1048576.0, hit = 0;
    /* what a kernel wrote last is what the L2 holds; of a tensor that the traffic since has
     * pushed past its size, the share that the L2's size is of that traffic (its replacement
     * keeps part of a stream that overflows it, as on the H200's 50 MB: ResNet-50's residual
     * adds on 103 MB tensors ran at 4.4 TB/s in torch.profiler, past its DRAM's 3.2) */
    for (int j = 0; j < 2; j++)
        if (k->in_bytes[j] > 0 && k->in_dist[j] > 0)
            hit += k->in_bytes[j] * bf * fmin(1.0, room / (k->in_dist[j] * bf));
    return hit < bytes ? bytes - hit : 0;
}

void pp_stack_kernel_units(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k, int n,
                           double *tc, double *tm)
{
    double bf = pp_stack_byte_scale(s), fl, by;
    int fa = pp_stack_fused_attention(s, d);
    for (int i = 0; i < n; i++) {
        pp_stack_kernel_work(fa, &k[i], &fl, &by);
        unit_ms_at(d, k[i].cls, pp_stack_kernel_peak_tflops(s, d, &k[i]), fl,
                   pp_stack_dram_bytes(s, d, &k[i], by * bf, bf), k[i].blocks, k[i].red, &tc[i],
                   &tm[i]);
    }
}

/* The tensor whose bytes t holds: a view (the output of a node in no kernel group) holds its
 * first input's */
static int reuse_root(const pp_graph *g, const int *in_group, int t)
{
    for (int guard = 0; t >= 0 && guard < 64; guard++) {
        int p = g->tensors[t].producer;
        if (p < 0 || in_group[p] || g->nodes[p].n_inputs < 1) return t;
        t = g->nodes[p].inputs[0];
    }
    return t;
}

/* Keeps the two largest reads of kernel S */
static void reuse_add(pp_stack_kernel *S, double bytes, double dist)
{
    int j = S->in_bytes[0] <= S->in_bytes[1] ? 0 : 1;
    if (bytes > S->in_bytes[j]) S->in_bytes[j] = bytes, S->in_dist[j] = dist;
}

int pp_stack_reuse_init(pp_stack_reuse *r, const pp_graph *g, const pp_kernel_group *k, int n)
{
    r->in_group = calloc((size_t)g->n_nodes + 1, sizeof *r->in_group);
    r->wpos = malloc(((size_t)g->n_tensors + 1) * sizeof *r->wpos);
    r->epi = calloc((size_t)n + 1, 1);
    r->traffic = 0;
    r->k = k;
    if (!r->in_group || !r->wpos || !r->epi) {
        pp_stack_reuse_free(r);
        return -1;
    }
    for (int i = 0; i < n; i++)
        for (int s = 0; s < k[i].n; s++) r->in_group[k[i].nodes[s]] = i + 1;
    for (int t = 0; t < g->n_tensors; t++) r->wpos[t] = -1;
    return 0;
}

void pp_stack_reuse_free(pp_stack_reuse *r)
{
    free(r->in_group);
    free(r->wpos);
    free(r->epi);
    r->in_group = NULL;
    r->wpos = NULL;
    r->epi = NULL;
}

void pp_stack_reuse_kernel(pp_stack_reuse *r, const pp_graph *g, const pp_kernel_group *G,
                           pp_stack_kernel *S)
{
    S->in_bytes[0] = S->in_bytes[1] = S->in_dist[0] = S->in_dist[1] = 0;
    S->epilogue = 0;
    if (!r->in_group) return;
    int gi = r->in_group[G->nodes[0]];
    if (S->elementwise) {
        /* an epilogue: it reads the only use of a conv or matmul kernel's output, or of
         * an epilogue's (TensorRT runs a bottleneck's conv, residual add and ReLU as one
         * kernel: "conv3 + add + relu") */
        const pp_node *nd = &g->nodes[G->nodes[0]];
        for (int a = 0; a < nd->n_inputs && !S->epilogue; a++) {
            int t = nd->inputs[a], p = t >= 0 ? g->tensors[t].producer : -1;
            int pg = p >= 0 ? r->in_group[p] : 0;
            S->epilogue =
                pg > 0 && pg != gi && g->tensors[t].n_consumers == 1 &&
                (r->epi[pg] ||
                 pp_stack_class_of(&g->nodes[r->k[pg - 1].nodes[0]].feat) != PP_SK_MEM);
        }
        if (gi > 0) r->epi[gi] = (unsigned char)S->epilogue;
    }
    int seen[8], n_seen = 0; /* a tensor two of its nodes read is read once (SiLU's x) */
    for (int s = 0; s < G->n; s++) {
        const pp_node *nd = &g->nodes[G->nodes[s]];
        for (int a = 0; a < nd->n_inputs; a++) {
            int t = nd->inputs[a], p = t >= 0 ? g->tensors[t].producer : -1;
            if (t < 0 || (p >= 0 && r->in_group[p] == gi)) continue; /* made inside it */
            int root = reuse_root(g, r->in_group, t), dup = 0;
            int64_t e = root >= 0 ? pp_tensor_elems(&g->tensors[root]) : 0;
            if (root < 0 || r->wpos[root] < 0 || e <= 0) continue;
            for (int j = 0; j < n_seen && !dup; j++) dup = seen[j] == root;
            if (dup) continue;
            if (n_seen < 8) seen[n_seen++] = root;
            double b = 4.0 * (double)e;
            reuse_add(S, b, r->traffic - r->wpos[root] + b);
        }
    }
    r->traffic += S->bytes;
    for (int s = 0; s < G->n; s++) {
        const pp_node *nd = &g->nodes[G->nodes[s]];
        for (int o = 0; o < nd->n_outputs; o++)
            if (nd->outputs[o] >= 0) r->wpos[nd->outputs[o]] = r->traffic;
    }
}

void pp_stack_reuse_bn(pp_stack_reuse *r, const pp_graph *g, const pp_kernel_group *G,
                       pp_stack_kernel *B)
{
    B->in_bytes[0] = B->in_bytes[1] = B->in_dist[0] = B->in_dist[1] = 0;
    if (!r->in_group) return;
    int out = g->nodes[G->nodes[0]].outputs[0];
    int64_t e = out >= 0 ? pp_tensor_elems(&g->tensors[out]) : 0;
    if (e > 0) reuse_add(B, 4.0 * (double)e, 4.0 * (double)e); /* just written */
    r->traffic += B->bytes;
    if (out >= 0) r->wpos[out] = r->traffic;
}

void pp_stack_mark_reuse(const pp_graph *g, const pp_kernel_group *k, int n, pp_stack_kernel *sk,
                         int m)
{
    pp_stack_reuse r;
    pp_stack_reuse_init(&r, g, k, n); /* out of memory: no reuse, every byte from the DRAM */
    for (int i = 0, j = 0; i < n && j < m; i++, j++) {
        pp_stack_reuse_kernel(&r, g, &k[i], &sk[j]);
        if (j + 1 < m && sk[j + 1].bn) pp_stack_reuse_bn(&r, g, &k[i], &sk[++j]);
    }
    pp_stack_reuse_free(&r);
}

double pp_stack_latency_ms(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k, int n,
                           double *scratch, double *host_ms, double *gpu_ms)
{
    double *tc = scratch + 2 * n, *tm = scratch + 3 * n;
    pp_stack_kernel_units(s, d, k, n, tc, tm);
    return pp_stack_latency_units_ms(s, d, k, tc, tm, NULL, n, scratch, host_ms, gpu_ms);
}

int pp_stack_kernel_gpu_times(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                              int n, const double *scratch, double *out)
{
    /* pp_stack_latency_units_ms keeps the launched kernels' GPU times, in order, at scratch + n */
    int fa = pp_stack_fused_attention(s, d), m = 0;
    for (int i = 0; i < n; i++) {
        double t = pp_stack_role(s, fa, &k[i]) == 2 ? scratch[n + m++] : 0;
        if (out) out[i] = t;
    }
    return m;
}

double pp_stack_cublas_bytes(double cc)
{
    return cc >= 9.0 ? 4096.0 * 8 * 1024 : 4096.0 * 1024 * 2 + 16.0 * 1024 * 8;
}

pp_alloc_params pp_stack_alloc_params(const pp_stack *s, const pp_device *d, double capacity)
{
    pp_alloc_params p = {0};
    p.scale = pp_stack_byte_scale(s);
    p.ws_factor = s->ws_factor;
    p.cublas_bytes = pp_stack_cublas_bytes(d->compute_capability);
    p.capacity = capacity;
    p.with_weights = 1;
    return p;
}

perfpred_status pp_stack_memory(const pp_stack *s, const pp_device *d, const pp_alloc_trace *t,
                                pp_stack_mem *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    out->ctx = pp_stack_context_bytes(s, d, pp_stack_current_software(d), &out->ctx_exact);
    double cap = d->memory_gb > 0 ? d->memory_gb * 1073741824.0 - out->ctx : 0;
    pp_alloc_params p = pp_stack_alloc_params(s, d, cap > 0 ? cap : 0);
    pp_alloc_stats st;
    perfpred_status rc = pp_alloc_fresh(t, &p, &st, err);
    if (rc) return rc;
    out->reserved = st.peak_reserved;
    out->allocated = st.peak_allocated;
    out->used = out->ctx + out->reserved;
    return PERFPRED_OK;
}

int pp_stack_current_software(const pp_device *d)
{
    return d->host_dispatch_source == PP_HOST_MEASURED ||
           d->host_dispatch_source == PP_HOST_TRANSFERRED;
}

/* Resident threads an SM keeps, by compute capability (CUDA C++ Programming Guide, "Technical
 * Specifications per Compute Capability"). */
static int threads_per_sm(double cc)
{
    if (cc <= 0) return 0;
    if (fabs(cc - 7.5) < 1e-6) return 1024;
    if (fabs(cc - 8.6) < 1e-6 || fabs(cc - 8.9) < 1e-6 || cc >= 12.0 - 1e-6) return 1536;
    return 2048;
}

double pp_stack_lmem_mb(const pp_device *d)
{
    return d->compute_units > 0 ? threads_per_sm(d->compute_capability) * 512.0 *
                                      d->compute_units / 1048576.0
                                : 0;
}

double pp_stack_context_bytes(const pp_stack *s, const pp_device *d, int current, int *exact)
{
    return (pp_stack_context_mb(s, d->compute_capability, current, exact) + pp_stack_lmem_mb(d)) *
           1048576.0;
}

double pp_stack_context_mb(const pp_stack *s, double cc, int current, int *exact)
{
    int best = -1, any = 0;
    for (int i = 0; i < s->n_ctx; i++) any |= s->ctx_current[i] == current;
    for (int i = 0; i < s->n_ctx; i++) {
        if (any && s->ctx_current[i] != current) continue;
        if (best < 0) {
            best = i;
            continue;
        }
        /* same architecture generation (major version) first, then the nearest */
        double di = fabs(s->ctx_cc[i] - cc) + (floor(s->ctx_cc[i]) != floor(cc) ? 100 : 0);
        double db = fabs(s->ctx_cc[best] - cc) + (floor(s->ctx_cc[best]) != floor(cc) ? 100 : 0);
        if (di < db - 1e-9 || (fabs(di - db) <= 1e-9 && s->ctx_cc[i] > s->ctx_cc[best])) best = i;
    }
    if (exact) *exact = best >= 0 && any && fabs(s->ctx_cc[best] - cc) < 1e-9;
    return best >= 0 ? s->ctx_mb[best] : 0;
}

/* ------------------------------------------------------------------ JSON ---- */

perfpred_status pp_artifact_num(const cJSON *o, const char *path, const char *key, double lo,
                                double hi, double *out, pp_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: field '%s' missing or outside %g to %g", path, key, lo, hi);
    *out = v->valuedouble;
    return PERFPRED_OK;
}

perfpred_status pp_artifact_str(const cJSON *o, const char *path, const char *key, char *out,
                                size_t cap, pp_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= cap)
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: field '%s' missing, empty or longer than %zu", path, key, cap - 1);
    snprintf(out, cap, "%s", v->valuestring);
    return PERFPRED_OK;
}

static perfpred_status class_array(const cJSON *o, const char *path, const char *key, double lo,
                                   double hi, double *out, pp_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsObject(a))
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: field '%s' missing (an object by class)",
                          path, key);
    for (int c = 0; c < PP_SK__COUNT; c++) {
        char what[64];
        snprintf(what, sizeof what, "%s.%s", key, class_names[c]);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, class_names[c]);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
            v->valuedouble > hi)
            return pp_err_set(err, PERFPRED_ERR_MODEL,
                              "%s: field '%s' missing or outside %g to %g", path, what, lo, hi);
        out[c] = v->valuedouble;
    }
    return PERFPRED_OK;
}

static perfpred_status parse_stack(const cJSON *o, const char *path, pp_stack *s, pp_err *err)
{
    memset(s, 0, sizeof *s);
    char prec[16];
    double d = 0;
    perfpred_status st;
    if ((st = pp_artifact_str(o, path, "name", s->name, sizeof s->name, err)) ||
        (st = pp_artifact_str(o, path, "framework", s->framework, sizeof s->framework, err)) ||
        (st = pp_artifact_str(o, path, "precision", prec, sizeof prec, err)))
        return st;
    pp_stack_set_framework(s, s->framework);
    int p = pp_precision_from_name(prec);
    if (p != PP_PREC_FP32 && p != PP_PREC_FP16)
        return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: precision '%s' (fp32 or fp16)", path,
                          prec);
    s->precision = (pp_precision)p;
    if ((st = pp_artifact_num(o, path, "tf32_conv", 0, 1, &d, err))) return st;
    s->tf32_conv = d > 0.5;
    if ((st = pp_artifact_num(o, path, "fuse_epilogue", 0, 1, &d, err))) return st;
    s->fuse_epilogue = d > 0.5;
    if ((st = pp_artifact_num(o, path, "bn_kernel", 0, 1, &d, err))) return st;
    s->bn_kernel = d > 0.5;
    s->fp32_dual_eff = 1; /* optional: stacks fitted before it had none */
    if (cJSON_GetObjectItemCaseSensitive(o, "fp32_dual_issue_efficiency") &&
        (st = pp_artifact_num(o, path, "fp32_dual_issue_efficiency", 0.01, 1, &s->fp32_dual_eff,
                              err)))
        return st;
    s->mem_feed = 0; /* optional: stacks fitted before it had no per-SM limit */
    if (cJSON_GetObjectItemCaseSensitive(o, "memory_feed_bytes_per_sm_clock") &&
        (st = pp_artifact_num(o, path, "memory_feed_bytes_per_sm_clock", 0, 1e4, &s->mem_feed,
                              err)))
        return st;
    s->l2_share = 0; /* optional: stacks fitted before it read every byte from the DRAM */
    if (cJSON_GetObjectItemCaseSensitive(o, "l2_reuse_share") &&
        (st = pp_artifact_num(o, path, "l2_reuse_share", 0, 1, &s->l2_share, err)))
        return st;
    d = 0; /* optional: stacks fitted before it accumulate in fp32 */
    if (cJSON_GetObjectItemCaseSensitive(o, "fp16_accumulate") &&
        (st = pp_artifact_num(o, path, "fp16_accumulate", 0, 1, &d, err)))
        return st;
    s->fp16_acc16 = d > 0.5;
    if ((st = pp_artifact_num(o, path, "timing_calls", 1, 1e6, &d, err))) return st;
    s->timing_calls = (int)d;
    if ((st = pp_artifact_num(o, path, "call_us", 0, 1e6, &s->call_us, err)) ||
        (st = pp_artifact_num(o, path, "sync_us", 0, 1e6, &s->sync_us, err)) ||
        (st = pp_artifact_num(o, path, "gpu_min_us", 0, 1e4, &s->gpu_min_us, err)) ||
        (st = pp_artifact_num(o, path, "ws_factor", 0, 16, &s->ws_factor, err)) ||
        (st = pp_artifact_num(o, path, "tensor_feed_flop_per_sm_clock", 0, 1e5, &s->tc_feed,
                              err)) ||
        (st = class_array(o, path, "host_us", 0, 1e5, s->host_us, err)) ||
        (st = pp_artifact_num(o, path, "host_bn_us", 0, 1e5, &s->host_bn_us, err)) ||
        (st = class_array(o, path, "efficiency", 1e-4, 10, s->eff, err)) ||
        (st = pp_artifact_str(o, path, "trained_on", s->trained_on, sizeof s->trained_on, err)) ||
        (st = pp_artifact_str(o, path, "source", s->source, sizeof s->source, err)))
        return st;
    if (cJSON_GetObjectItemCaseSensitive(o, "tensor_feed_source") && /* optional */
        (st = pp_artifact_str(o, path, "tensor_feed_source", s->tc_feed_source,
                              sizeof s->tc_feed_source, err)))
        return st;
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(o, "interval");
    if (iv) { /* optional: artifacts fitted before intervals have none */
        double n = 0;
        if (!cJSON_IsObject(iv))
            return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: field 'interval' must be an object",
                              path);
        if ((st = pp_artifact_num(iv, path, "rows", 1, 1e9, &n, err)) ||
            (st = pp_artifact_num(iv, path, "coverage", 0.01, 0.999, &s->iv_coverage, err)) ||
            (st = pp_artifact_num(iv, path, "latency_log_lo_batch_lt16", -10, 0,
                                  &s->iv_lat_lo[0], err)) ||
            (st = pp_artifact_num(iv, path, "latency_log_hi_batch_lt16", 0, 10,
                                  &s->iv_lat_hi[0], err)) ||
            (st = pp_artifact_num(iv, path, "latency_log_lo_batch_ge16", -10, 0,
                                  &s->iv_lat_lo[1], err)) ||
            (st = pp_artifact_num(iv, path, "latency_log_hi_batch_ge16", 0, 10,
                                  &s->iv_lat_hi[1], err)) ||
            (st = pp_artifact_num(iv, path, "memory_log_lo", -10, 0, &s->iv_mem_lo, err)) ||
            (st = pp_artifact_num(iv, path, "memory_log_hi", 0, 10, &s->iv_mem_hi, err)) ||
            (st = pp_artifact_num(iv, path, "checked_pct", 0, 100, &s->iv_checked_pct, err)))
            return st;
        s->n_interval = (int)n;
        for (int c = 0; c < 2; c++) {
            /* the rows per batch class came after the bounds: without them (an artifact of the
             * first interval fits) the bounds stay in the report and predictions carry none */
            const char *key = c ? "rows_batch_ge16" : "rows_batch_lt16";
            double nc = 0;
            if (cJSON_GetObjectItemCaseSensitive(iv, key) &&
                (st = pp_artifact_num(iv, path, key, 0, n, &nc, err)))
                return st;
            s->iv_n[c] = (int)nc;
            pp_interval_q *q = &s->latency_iv[c];
            q->n = s->iv_n[c];
            q->log_lo = s->iv_lat_lo[c];
            q->log_hi = s->iv_lat_hi[c];
            q->coverage = s->iv_coverage;
            q->check_n = s->n_interval;
            q->check_pct = s->iv_checked_pct;
            char src[sizeof q->source]; /* s->name and q->source lie in one struct */
            snprintf(src, sizeof src,
                     "leave-one-GPU-out rows (framework-tax-gpus, data/gpu-stacks) at batch %s "
                     "16 (%d rows, "
                     "each predicted by the %s stack fitted without its GPU; calibrate "
                     "fit-stacks)",
                     c ? ">=" : "<", s->iv_n[c], s->name);
            memcpy(q->source, src, sizeof src);
        }
    }
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(o, "context_mb");
    if (!cJSON_IsArray(ctx) || cJSON_GetArraySize(ctx) < 1 ||
        cJSON_GetArraySize(ctx) > PP_STACK_MAX_CTX)
        return pp_err_set(err, PERFPRED_ERR_MODEL,
                          "%s: field 'context_mb' must list 1 to %d {cc, mb} entries", path,
                          PP_STACK_MAX_CTX);
    const cJSON *e;
    cJSON_ArrayForEach(e, ctx)
    {
        if ((st = pp_artifact_num(e, path, "cc", 1, 20, &s->ctx_cc[s->n_ctx], err)) ||
            (st = pp_artifact_num(e, path, "mb", 0, 1e5, &s->ctx_mb[s->n_ctx], err)) ||
            (st = pp_artifact_num(e, path, "current", 0, 1, &d, err)))
            return st;
        if (d != 0 && d != 1)
            return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: field 'current' must be 0 or 1",
                              path);
        s->ctx_current[s->n_ctx] = (int)d;
        s->n_ctx++;
    }
    return PERFPRED_OK;
}

perfpred_status pp_stack_load(const char *path, pp_stack *out, pp_err *err)
{
    uint8_t *text;
    size_t len;
    perfpred_status st = pp_read_file(path, &text, &len, err);
    if (st) return st;
    if (len > (1u << 24)) {
        free(text);
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: larger than 16 MiB", path);
    }
    cJSON *o = cJSON_Parse((const char *)text);
    free(text);
    if (!o) return pp_err_set(err, PERFPRED_ERR_MODEL, "%s: not valid JSON", path);
    const cJSON *stack = cJSON_GetObjectItemCaseSensitive(o, "stack");
    st = cJSON_IsObject(stack)
             ? parse_stack(stack, path, out, err)
             : pp_err_set(err, PERFPRED_ERR_MODEL, "%s: no 'stack' object", path);
    cJSON_Delete(o);
    return st;
}

static cJSON *class_obj(const double *v)
{
    cJSON *o = cJSON_CreateObject();
    for (int c = 0; o && c < PP_SK__COUNT; c++) cJSON_AddNumberToObject(o, class_names[c], v[c]);
    return o;
}

cJSON *pp_stack_json(const pp_stack *s)
{
    cJSON *o = cJSON_CreateObject(), *ctx = cJSON_CreateArray();
    cJSON *host = class_obj(s->host_us), *eff = class_obj(s->eff);
    if (!o || !ctx || !host || !eff) goto nomem;
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddStringToObject(o, "framework", s->framework);
    cJSON_AddStringToObject(o, "precision", pp_precision_name(s->precision));
    cJSON_AddNumberToObject(o, "tf32_conv", s->tf32_conv);
    cJSON_AddNumberToObject(o, "fuse_epilogue", s->fuse_epilogue);
    cJSON_AddNumberToObject(o, "bn_kernel", s->bn_kernel);
    cJSON_AddNumberToObject(o, "fp16_accumulate", s->fp16_acc16);
    cJSON_AddNumberToObject(o, "timing_calls", s->timing_calls);
    cJSON_AddNumberToObject(o, "call_us", s->call_us);
    cJSON_AddNumberToObject(o, "sync_us", s->sync_us);
    cJSON_AddNumberToObject(o, "gpu_min_us", s->gpu_min_us);
    cJSON_AddNumberToObject(o, "l2_reuse_share", s->l2_share);
    cJSON_AddNumberToObject(o, "ws_factor", s->ws_factor);
    cJSON_AddNumberToObject(o, "tensor_feed_flop_per_sm_clock", s->tc_feed);
    cJSON_AddNumberToObject(o, "memory_feed_bytes_per_sm_clock", s->mem_feed);
    if (s->tc_feed_source[0]) cJSON_AddStringToObject(o, "tensor_feed_source", s->tc_feed_source);
    cJSON_AddNumberToObject(o, "fp32_dual_issue_efficiency",
                            s->fp32_dual_eff > 0 ? s->fp32_dual_eff : 1.0);
    cJSON_AddItemToObject(o, "host_us", host);
    cJSON_AddNumberToObject(o, "host_bn_us", s->host_bn_us);
    cJSON_AddItemToObject(o, "efficiency", eff);
    host = eff = NULL;
    for (int i = 0; i < s->n_ctx; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e) goto nomem;
        cJSON_AddNumberToObject(e, "cc", s->ctx_cc[i]);
        cJSON_AddNumberToObject(e, "mb", s->ctx_mb[i]);
        cJSON_AddNumberToObject(e, "current", s->ctx_current[i]);
        cJSON_AddItemToArray(ctx, e);
    }
    cJSON_AddItemToObject(o, "context_mb", ctx);
    if (s->n_interval > 0) {
        cJSON *iv = cJSON_AddObjectToObject(o, "interval");
        if (!iv) goto nomem;
        cJSON_AddNumberToObject(iv, "rows", s->n_interval);
        cJSON_AddNumberToObject(iv, "rows_batch_lt16", s->iv_n[0]);
        cJSON_AddNumberToObject(iv, "rows_batch_ge16", s->iv_n[1]);
        cJSON_AddNumberToObject(iv, "coverage", s->iv_coverage);
        cJSON_AddNumberToObject(iv, "latency_log_lo_batch_lt16", s->iv_lat_lo[0]);
        cJSON_AddNumberToObject(iv, "latency_log_hi_batch_lt16", s->iv_lat_hi[0]);
        cJSON_AddNumberToObject(iv, "latency_log_lo_batch_ge16", s->iv_lat_lo[1]);
        cJSON_AddNumberToObject(iv, "latency_log_hi_batch_ge16", s->iv_lat_hi[1]);
        cJSON_AddNumberToObject(iv, "memory_log_lo", s->iv_mem_lo);
        cJSON_AddNumberToObject(iv, "memory_log_hi", s->iv_mem_hi);
        cJSON_AddNumberToObject(iv, "checked_pct", s->iv_checked_pct);
        cJSON_AddStringToObject(iv, "source", "split-conformal quantiles of log(measured / "
                                              "predicted), leave-one-GPU-out rows");
    }
    cJSON_AddStringToObject(o, "trained_on", s->trained_on);
    cJSON_AddStringToObject(o, "source", s->source);
    return o;
nomem:
    cJSON_Delete(o);
    cJSON_Delete(ctx);
    cJSON_Delete(host);
    cJSON_Delete(eff);
    return NULL;
}

perfpred_status pp_stack_save(const pp_stack *s, const char *path, const char *report_json,
                              pp_err *err)
{
    cJSON *root = cJSON_CreateObject(), *o = pp_stack_json(s);
    if (!root || !o) {
        cJSON_Delete(root);
        cJSON_Delete(o);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    }
    cJSON_AddItemToObject(root, "stack", o);
    return pp_artifact_write(root, report_json, path, err);
}

perfpred_status pp_artifact_write(cJSON *root, const char *report_json, const char *path,
                                  pp_err *err)
{
    cJSON *report = report_json ? cJSON_Parse(report_json) : NULL;
    if (report) cJSON_AddItemToObject(root, "report", report);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print's NUL becomes the file's last newline */
    perfpred_status st = pp_write_file_atomic(path, text, len + 1, err);
    free(text);
    return st;
}

int pp_stack_trained_on(const pp_stack *s, const pp_device *d)
{
    size_t len;
    const char *cur = s->trained_on;
    for (const char *it; (it = pp_list_item(&cur, &len));) {
        char name[128];
        if (len == 0 || len >= sizeof name) continue;
        memcpy(name, it, len);
        name[len] = '\0';
        if (pp_device_named(d, name)) return 1;
    }
    return 0;
}

static int cmp_stack(const void *a, const void *b)
{
    return strcmp(((const pp_stack *)a)->name, ((const pp_stack *)b)->name);
}

perfpred_status pp_stack_set_load(const char *config_dir, pp_stack_set *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/artifacts/stacks", config_dir);
    DIR *dp = opendir(dir);
    if (!dp) return PERFPRED_OK; /* no stacks: GPUs keep the kernel sum */
    perfpred_status st = PERFPRED_OK;
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(dp))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
        if (out->n == cap) {
            int nc = cap ? cap * 2 : 8;
            pp_stack *ns = realloc(out->s, (size_t)nc * sizeof *ns);
            if (!ns) {
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
                break;
            }
            out->s = ns;
            cap = nc;
        }
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if ((st = pp_stack_load(path, &out->s[out->n], err))) break;
        out->n++;
    }
    closedir(dp);
    if (st) {
        pp_stack_set_free(out);
        return st;
    }
    if (out->n > 1) qsort(out->s, (size_t)out->n, sizeof *out->s, cmp_stack);
    return PERFPRED_OK;
}

void pp_stack_set_free(pp_stack_set *set)
{
    if (!set) return;
    free(set->s);
    set->s = NULL;
    set->n = 0;
}

const pp_stack *pp_stack_for(const pp_stack_set *set, const char *framework, pp_precision p)
{
    /* tf32 is the fp32 stack with TF32 convolutions; bf16 has no fitted stack */
    if (p == PP_PREC_TF32) p = PP_PREC_FP32;
    for (int i = 0; set && framework && i < set->n; i++)
        if (strcmp(set->s[i].framework, framework) == 0 && set->s[i].precision == p)
            return &set->s[i];
    return NULL;
}
