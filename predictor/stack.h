/* predictor/stack.h: the runtime stack of a GPU as a whole model runs on it. A whole-model latency
 * is not the sum of isolated kernel times: the host issues each op (Python, the dispatcher,
 * cuDNN/cuBLAS set-up) while the GPU runs the one before, so a kernel starts at
 *   start_i = max(end_{i-1}, issued_i),  issued_i = call + sum_{j<=i} host_j,
 * and a back-to-back timing loop averages many such calls. A stack (PyTorch eager fp32 with TF32
 * convolutions, fp16, TorchScript, TensorRT) fixes the per-op host cost, which peak a kernel sees
 * (fp32, TF32 or fp16 tensor cores), how close kernels come to it, and the memory the runtime
 * holds beside the model (CUDA context and libraries by GPU architecture, allocator and
 * workspace over the live activations). Its parameters are fitted from whole-model measurements
 * (calibrate fit-stacks) and stored as configs/artifacts/stacks/<name>.json. */
#ifndef PP_STACK_H
#define PP_STACK_H

#include "devices/devices.h"
#include "graph/graph.h"
#include "predictor/allocator.h"
#include "predictor/interval.h"
#include "predictor/predictor.h"

/* Kernel classes: each has its own host cost and its own fraction of the peak. */
typedef enum pp_stack_class {
    PP_SK_CONV = 0, /* dense convolution, not 3x3 stride 1 */
    PP_SK_CONV3,    /* 3x3 stride-1 convolution (cuDNN may pick Winograd: above 1 is possible) */
    PP_SK_DW,       /* depthwise and grouped convolution */
    PP_SK_MATMUL,   /* Gemm / MatMul (cuBLAS) */
    PP_SK_MEM,      /* everything else: element-wise, pooling, normalization, softmax, copies */
    PP_SK__COUNT
} pp_stack_class;

pp_stack_class pp_stack_class_of(const pp_node_feat *f);

#define PP_STACK_MAX_CTX 12
#define PP_STACK_NAME 48

/* The fitted figures of one stack; plain data, no pointers (copied freely). */
typedef struct pp_stack {
    char name[PP_STACK_NAME];      /* "pytorch-eager-fp32" */
    char framework[32];            /* "pytorch-eager", "torchscript", "tensorrt" */
    pp_precision precision;        /* tensors' precision: fp32 or fp16 */
    int tf32_conv;                 /* fp32 convolutions on TF32 tensor cores where the GPU has them */
    int fuse_epilogue;             /* an element-wise kernel that reads the only use of a
                                      conv/matmul's output runs in that kernel's epilogue */
    int bn_kernel;                 /* BatchNorm runs as a kernel of its own after its convolution,
                                      where the ONNX export folded it into the weights */
    int elide_concat;              /* a Concat of activations costs nothing: the builder has its
                                      producers write into its output (TensorRT's concatenation
                                      elision); derived from the framework
                                      (pp_stack_set_framework), not stored */
    int one_gemm;                  /* matrix products are priced as convolutions: TF32 where
                                      convolutions take it (TensorRT's TF32 builder flag covers
                                      every layer; PyTorch keeps matmul in fp32 since 1.12) and
                                      the conv class's efficiency (both run the same tensor-core
                                      GEMM kernels, and CNN rows hold too few matrix products to
                                      price them apart); derived from the framework, not stored */
    int fp16_acc16;                /* fp16 kernels may accumulate in fp16 (TensorRT's h884/h1688
                                      tactics), so they see the descriptor's fp16_acc16 peak where
                                      it states one; PyTorch's cuDNN and cuBLAS calls accumulate
                                      in fp32 */
    int timing_calls;              /* calls per timed loop (back-to-back mean); 1 = one call, synced */
    double call_us;                /* host cost of one call beyond its ops (Python forward) */
    double host_us[PP_SK__COUNT];  /* host cost to issue one kernel of each class */
    double host_bn_us;             /* host cost of the BatchNorm pass after a conv (bn_kernel):
                                      cuDNN's batch-norm set-up, about 3x an element-wise op's in
                                      torch.profiler (lab/op_host_profile.py); = host_us[memory]
                                      where the stack runs no such pass */
    double sync_us;                /* the final synchronize */
    double eff[PP_SK__COUNT];      /* fraction of the class's peak FLOP/s (PP_SK_MEM: of bandwidth) */
    double tc_feed;                /* on tensor cores (TF32, fp16) a kernel is fed at most tc_feed
                                      FLOP per SM per clock: its share of eff[c] x the tensor peak
                                      is 1 / (1 + F / tc_feed), F the GPU's dense tensor FLOP per
                                      SM per clock (pp_stack_tensor_share). VGG-16 at batch >= 64
                                      ran at 300-410 FLOP per SM-clock on every pre-Hopper card of
                                      framework-tax-gpus, fp16, whether its tensor cores do 512
                                      (GeForce, fp32 accumulation) or 1,024 a clock: the operands'
                                      path through shared memory and the issue slots bound it, not
                                      the datasheet's rate. <= 0: no bound (share 1), where no
                                      training row ran on tensor cores */
    double fp32_dual_eff;          /* on the fp32 lanes of a GPU that doubled them per SM
                                      (pp_stack_fp32_doubled: Ampere GA10x on, Ada, Hopper), a
                                      kernel reaches fp32_dual_eff x eff[c] of the fp32 peak:
                                      half of each SM's fp32 lanes share their issue with the
                                      integer ones (GA10x, Ada), and cuBLAS's SGEMM on this
                                      project's H200 reached 76 % of its peak, where GA100 and
                                      Volta reach about 95 % of theirs; 1 elsewhere (0 reads
                                      as 1) */
    double mem_feed;               /* what one SM streams from the DRAM, bytes per clock: a kernel
                                      whose SMs would each need `need` bytes a clock to reach the
                                      bandwidth (pp_stack_sm_need) adds tm x need / mem_feed to
                                      its memory time, the requests an SM keeps in flight over
                                      the DRAM's latency (Little's law); the harmonic mean of the
                                      two limits, as the tensor feed. 0: no such limit */
    double gpu_min_us;             /* shortest kernel on the GPU (launch to completion) */
    double l2_share;               /* a kernel reads an activation an earlier kernel wrote from the
                                      L2, not the DRAM, while the traffic since that write (the
                                      tensor itself included) is within l2_share x the L2
                                      (descriptor l2_mb; a MIG slice its share), and beyond that
                                      the share room / traffic of it: the BatchNorm pass, ReLU
                                      and residual add after a convolution find its output there.
                                      0: every byte from the DRAM (stacks fitted before it) */
    /* memory as NVML reports it: context(cc) + what the caching allocator reserved replaying
     * the run (predictor/allocator.h) */
    int n_ctx;
    double ctx_cc[PP_STACK_MAX_CTX]; /* compute capability of the architectures measured */
    double ctx_mb[PP_STACK_MAX_CTX]; /* CUDA context and libraries there (MiB) */
    int ctx_current[PP_STACK_MAX_CTX]; /* 1: measured with the current software (the project's own
                                          rows: PyTorch 2.x, CUDA 12+); 0: the 2022 public rows */
    double ws_factor;              /* cuDNN workspace of a dense convolution per byte of its output;
                                      TensorRT: the engine's activation block per byte of the eager
                                      liveness peak (predictor/allocator.h) */
    /* how far a prediction falls from what a GPU measures: split-conformal quantiles of
     * log(measured / predicted) over leave-one-GPU-out rows (each row predicted by a fit that
     * did not see its GPU); [0]: batch < 16, [1]: batch >= 16. n_interval = 0: none. */
    int n_interval;                /* rows they come from */
    double iv_coverage;            /* 0.8: the interval holds 80 % of held-out rows */
    double iv_lat_lo[2], iv_lat_hi[2];
    double iv_mem_lo, iv_mem_hi;
    int iv_n[2];                   /* rows of each batch class */
    double iv_checked_pct;         /* held-out rows inside when each GPU's bounds come from the
                                      other GPUs' rows (cross-fitted), percent */
    pp_interval_q latency_iv[2];   /* the above as predictions apply them (filled at load) */
    char trained_on[256];          /* the GPUs whose rows fitted it, comma-separated */
    char source[256];              /* the data it was fitted on */
    char tc_feed_source[192];      /* where tc_feed comes from when no training row ran on
                                      tensor cores (transferred from the sibling stacks); empty:
                                      fitted, or no bound */
} pp_stack;

/* Kernel time on the GPU in ms under stack s on device d, without host cost: the class's peak
 * (tensor cores as the stack and device allow) times its efficiency, or the bandwidth, whichever
 * binds, stretched by wave quantisation (blocks in ceil(blocks / (SMs x resident)) waves), plus
 * the shortest kernel time. flops and bytes are the kernel's (bytes at the stack's precision). */
double pp_stack_gpu_ms(const pp_stack *s, const pp_device *d, pp_stack_class c, double flops,
                       double bytes, double blocks, double red);

/* The two parts of pp_stack_gpu_ms before the stack's efficiencies (ms): compute at the class's
 * peak stretched by the wave factor (tc = 0 for PP_SK_MEM), and traffic at the bandwidth the
 * SMs its blocks occupy reach, min(stream, active SMs x pp_device_sm_stream_gbs), no waves. A
 * fit computes them once per kernel and device, then tries efficiencies. */
void pp_stack_unit_ms(const pp_stack *s, const pp_device *d, pp_stack_class c, double flops,
                      double bytes, double blocks, double red, double *tc_ms, double *tm_ms);
/* Blocks a conv / matmul launches on d: its output tiles, times split-K slices (256 of the
 * reduction each) where the tiles alone leave SMs idle and the reduction is long enough; the
 * libraries' heuristics fill one wave that way. Other kernels: blocks unchanged. */
double pp_stack_launch_blocks(const pp_device *d, pp_stack_class c, double blocks, double red);
/* 1 when d lacks a rate s's kernels run at: no fp32 peak, or a GPU with tensor cores (compute
 * capability 7.0 on) whose descriptor states no tensor-core rate for s's fp16, or (8.0 on) for its
 * TF32 convolutions: pp_stack_peak_tflops then prices them on the fp32 lanes, which such a GPU
 * does not use for them. */
int pp_stack_rate_missing(const pp_stack *s, const pp_device *d);
/* 1 when class c runs on tensor cores under s on d (pp_stack_peak_tflops is their peak). */
int pp_stack_on_tensor_cores(const pp_stack *s, const pp_device *d, pp_stack_class c);
/* d's SMs x clock, in G SM-clocks per second: compute_units x clock_mhz / 1000; where the clock
 * is unknown, what the fp32 peak implies (2 FLOP per lane per clock, 64 lanes an SM, 128 where
 * pp_stack_fp32_doubled); 0 when neither is known. */
double pp_stack_sm_gclocks(const pp_device *d);
/* 1 when d's SMs have twice the fp32 lanes of their predecessors: compute capability 8.6 and up
 * (GA10x, Orin, Ada, Hopper, Blackwell); GA100 (8.0) and earlier have 64 per SM, or Pascal's
 * GP10x 128 of their own. */
static inline int pp_stack_fp32_doubled(const pp_device *d) { return d->compute_capability >= 8.6; }
/* The share of eff[c] class c keeps on d: on tensor cores 1 / (1 + F / tc_feed), F = the
 * stack's tensor peak on d / pp_stack_sm_gclocks(d) (FLOP per SM per clock: 512 for a GeForce
 * card's fp16 with fp32 accumulation, 1,024 for V100 fp16 or A100 TF32, 2,048 for A100 fp16,
 * about 3,800 for H100 fp16), and at most 1 / eff[c] there (a tensor-core kernel reaches at most
 * the dense peak by the direct count: Winograd's fewer multiplies, which let eff[conv3x3] pass 1,
 * are the fp32 lanes'); on the fp32 lanes of a doubled-fp32 GPU, fp32_dual_eff for a compute
 * class; else 1. A MIG slice scales its peak with its SMs, so it keeps its GPU's share. */
double pp_stack_tensor_share(const pp_stack *s, const pp_device *d, pp_stack_class c);
/* t = max(tc / (eff[c] x share), tm / eff[memory] + tm x need / mem_feed) + gpu_min, share
 * from pp_stack_tensor_share, need from pp_stack_sm_need (no second term where mem_feed is 0);
 * a matrix product takes eff[conv] where the stack has one_gemm */
/* eff[c] of s, a matrix product's being the convolution's where the stack has one_gemm */
static inline double pp_stack_class_eff(const pp_stack *s, pp_stack_class c)
{
    return s->eff[s->one_gemm && c == PP_SK_MATMUL ? PP_SK_CONV : c];
}

static inline double pp_stack_time_from_units(const pp_stack *s, pp_stack_class c, double share,
                                              double tc_ms, double tm_ms, double need)
{
    double e = pp_stack_class_eff(s, c) * share;
    double a = c != PP_SK_MEM ? tc_ms / e : 0, b = tm_ms / s->eff[PP_SK_MEM];
    if (s->mem_feed > 0) b += tm_ms * need / s->mem_feed;
    return (a > b ? a : b) + s->gpu_min_us * 1e-3;
}

/* The bytes per SM per clock that each SM a kernel of `blocks` blocks (class c, reduction `red`)
 * occupies on d must stream for it to reach the bandwidth pp_stack_unit_ms gives it (the
 * device's stream bandwidth, or the SMs' share of it); 0 where d states no SMs or clock. The
 * DRAM bandwidth per SM-clock: GTX 1080 Ti 10.9, H100 12.8, H200 18.4, V100 7.4, RTX 2080 Ti 5.9,
 * RTX A6000 5.1 (datasheet figures). */
double pp_stack_sm_need(const pp_device *d, pp_stack_class c, double blocks, double red);

/* Waves a kernel of `blocks` thread blocks runs in on `sms` SMs holding `resident` blocks each,
 * as a fraction of a full GPU's ideal time: ceil(x)/x for x = blocks / (sms x resident) >= 1, and
 * 1/x below one wave (each block has its slot; the rest of the GPU idles). */
double pp_wave_factor(double blocks, int sms, int resident);

/* Thread blocks of a kernel under the stack model: 64x64 output tiles for convolutions and
 * matrix products, 512 elements (of its output or, for reductions, its input) per block
 * otherwise. */
double pp_stack_blocks(const pp_node_feat *f);
/* Blocks resident per SM for a class (2 GEMM tiles, 4 element-wise blocks). */
int pp_stack_resident(pp_stack_class c);

/* The peak FLOP/s (TFLOP/s) a class sees on d under s. */
double pp_stack_peak_tflops(const pp_stack *s, const pp_device *d, pp_stack_class c);

/* Two-stage pipeline: n kernels with host issue costs host_us[i] (already scaled to the host)
 * and GPU times gpu_ms[i]; `calls` back-to-back calls (sync at the end only), each starting
 * with call_us on the host. Returns the mean time per call in ms, sync included once; *gpu_busy
 * (optional) the GPU's busy share of it. Exact simulation for calls <= 3; beyond, the last
 * call's increment is extrapolated (the max-plus recurrence is periodic from there). */
double pp_pipeline_ms(const double *host_us, const double *gpu_ms, int n, double call_us,
                      double sync_us, int calls, double *gpu_busy);

/* One kernel as the stack model sees it. bytes are at fp32 (an fp16 stack halves them). cal_ms is
 * a calibrated GPU time from layer models measured under this very stack, or NaN. */
typedef struct pp_stack_kernel {
    pp_stack_class cls;
    int elementwise;         /* an element-wise op */
    int epilogue;            /* element-wise and reading the only use of a conv or matmul
                                kernel's output, or of an epilogue's (a residual add, then
                                its ReLU; pp_stack_reuse_kernel): a stack that fuses
                                epilogues runs it inside that kernel */
    int concat;              /* a Concat whose inputs are all activations (an elision candidate) */
    int bn;                  /* the BatchNorm pass the export folded into the conv before it, or
                                the bias add after a dense conv with a bias of its own (`bias`):
                                a kernel only where the stack has bn_kernel */
    int bias;                /* that pass is PyTorch's in-place bias add: its cuDNN convolution
                                takes no bias and adds it after (`output.add_(bias)` in
                                ATen's Convolution.cpp), one more kernel inside the conv's op */
    double flops, bytes, blocks, cal_ms;
    double red;              /* reduction length of a conv / matmul (Cin kh kw, or K); 0 else */
    int cin_g;               /* a dense convolution's input channels per group; 0 else */
    int attn;                /* PP_ATTN_*: its part in an attention a runtime may fuse */
    double attn_flops, attn_bytes; /* a PP_ATTN_CORE's work when fused (bytes at fp32) */
    /* the two largest activations it reads that kernels before it wrote (pp_stack_mark_reuse):
     * their bytes and the traffic since each was written, the tensor itself included (both at
     * fp32); 0 where none */
    double in_bytes[2], in_dist[2];
    int cast;                /* autocast's fp32 -> fp16 copy of an operand (pp_stack_cast_kernel) */
} pp_stack_kernel;

/* 1 when kernel k, a convolution whose class runs on tensor cores on d under s, runs off them:
 * cuDNN's tensor-core kernels need input channels in multiples of 4 (TF32) or 8 (fp16, bf16)
 * (NVIDIA's deep-learning performance guide: a network's first layer, 3 channels, is the usual
 * case), and PyTorch passes its tensors unpadded, so such a convolution runs on the fp32 lanes.
 * TensorRT's builder pads the channels (its reformatting layers): 0 there. */
int pp_stack_off_tensor_cores(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k);
/* The peak (TFLOP/s) and pp_stack_tensor_share that kernel k runs at on d: its class's, or the
 * fp32 lanes' where pp_stack_off_tensor_cores */
double pp_stack_kernel_peak_tflops(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k);
double pp_stack_kernel_share(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k);
/* pp_stack_gpu_ms of kernel k (its flops and DRAM bytes as given), at its own peak and share */
double pp_stack_kernel_gpu_ms(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                              double flops, double bytes);
/* The share of its peak on d (pp_stack_kernel_peak_tflops) that a convolution or matrix product k
 * under s reaches when computing is all it waits for: eff[class] x pp_stack_kernel_share (tensor
 * cores fed at the stack's rate, doubled fp32 lanes at their share), at most 1; 0 for the memory
 * class. power.c charges such a kernel at that rate the board's full power. */
double pp_stack_compute_reach(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k);

/* Attention as the export writes it: Q K^T (a matrix product of two activations), a scale or
 * mask, softmax, times V, with the views and copies that split the heads off the projection and
 * merge them back. PyTorch 2.x without autograd runs nn.MultiheadAttention's fast path
 * (_native_multi_head_attention) and scaled_dot_product_attention as one fused kernel between the
 * projections, the head split and merge as views; the 2022 public rows ran every op. */
enum {
    PP_ATTN_NONE = 0,
    PP_ATTN_ABSORBED, /* no kernel when fused: a view, the scale, softmax, the second product */
    PP_ATTN_CORE      /* Q K^T; fused, the one attention kernel: both products' FLOPs, Q, K and V
                         read and the output written; its host pays a memory op's dispatch more
                         for the views around it */
};
/* Marks the attentions among g's kernels (pp_graph_kernels order): role[i] (PP_ATTN_*), and for a
 * core its fused flops and bytes (fp32). Returns how many cores, -1 when out of memory. */
int pp_stack_attention(const pp_graph *g, const pp_kernel_group *k, int n, int *role,
                       double *flops, double *bytes);
/* Sets s->framework and what follows from it (elide_concat: TensorRT). */
void pp_stack_set_framework(pp_stack *s, const char *framework);
/* s's kernels replayed as a CUDA graph (torch.cuda.CUDAGraph): the host launches the whole graph
 * once a call, so no op pays a dispatch and the GPU runs the kernels back to back. Zeroes s's
 * host costs (per kernel, BatchNorm pass, call); its kernels, efficiencies and shortest kernel
 * stay. */
void pp_stack_graph_replay(pp_stack *s);
/* 1 when s runs attention fused on d: eager PyTorch or TensorRT under the current software
 * (pp_stack_current_software). */
int pp_stack_fused_attention(const pp_stack *s, const pp_device *d);
/* The FLOPs and bytes (fp32) kernel k does under s on d: a fused core's attn_* figures. */
/* Bytes s moves per fp32 byte: its tensors' precision (fp16 and bf16 0.5, fp32 1) */
static inline double pp_stack_byte_scale(const pp_stack *s)
{
    return s->precision == PP_PREC_FP16 || s->precision == PP_PREC_BF16 ? 0.5 : 1.0;
}

static inline void pp_stack_kernel_work(int fused, const pp_stack_kernel *k, double *flops,
                                        double *bytes)
{
    int core = fused && k->attn == PP_ATTN_CORE;
    *flops = core ? k->attn_flops : k->flops;
    *bytes = core ? k->attn_bytes : k->bytes;
}

/* How kernel k runs under s, given whether s fuses attention on the device
 * (pp_stack_fused_attention): 0 not at all (a folded BatchNorm the stack folds too, a fused
 * attention's absorbed op, an elided concatenation), 1 in the epilogue of the conv/matmul whose
 * output it reads (no launch of its own), 2 as a kernel of its own. */
static inline int pp_stack_role(const pp_stack *s, int fused_attn, const pp_stack_kernel *k)
{
    if (k->bn && !s->bn_kernel) return 0;
    if (k->concat && s->elide_concat) return 0;
    if (fused_attn && k->attn == PP_ATTN_ABSORBED) return 0;
    return s->fuse_epilogue && k->epilogue ? 1 : 2;
}

/* 1 when node `conv` of g is a Conv into whose weights torch.onnx folded a BatchNorm (eval-mode
 * export with constant folding names such a weight "onnx::Conv_<n>"); that BatchNorm still runs
 * as a kernel in eager PyTorch. *bn gets the pass: element-wise over the conv's output (read and
 * write, a scale and a shift per element). Also 1 for a dense (not grouped) Conv with a bias of
 * its own (a named weight and a constant bias): eager PyTorch's cuDNN path adds that bias in
 * place after the convolution, a pass with bn->bias set (one add per element). */
int pp_stack_bn_pass(const pp_graph *g, int conv, pp_stack_kernel *bn);

/* PyTorch eager under autocast (AMP, `torch.autocast("cuda")` around an fp32 model): an op on
 * autocast's fp16 list (convolutions, linear layers, matrix products) runs in fp16, one on its fp32
 * list (softmax, layer_norm, exp, pow, sum, ...) in fp32, and any other op in the widest precision
 * of its inputs (type promotion; BatchNorm keeps its input's). Before an fp16-list op runs, each
 * of its fp32 operands is cast to an fp16 copy, one copy kernel each (read 4 bytes, write 2 per
 * element, dispatched as an op of its own): the weights, on every call (the cast cache lives
 * inside one autocast region), the model's fp32 input, and activations an fp32 op wrote (a
 * layer_norm's output before the next linear layer).
 * pp_stack_autocast_dtypes marks each tensor of g that is fp32 under autocast (fp32[n_tensors]);
 * pp_stack_autocast_casts gives node i's casts: how many (at most PP_STACK_MAX_CASTS), the tensors
 * cast in tensor[]. The bias torch.onnx folded in from a BatchNorm is no operand of the
 * eager conv (BatchNorm applies it), and a MatMul's bias is the Add that alone reads its output
 * (nn.Linear's addmm). */
#define PP_STACK_MAX_CASTS 3
void pp_stack_autocast_dtypes(const pp_graph *g, unsigned char *fp32);
int pp_stack_autocast_casts(const pp_graph *g, const unsigned char *fp32, int i, int *tensor);
/* The copy kernel of a cast of `elems` fp32 elements to fp16, as an fp16 stack counts bytes (at
 * fp32: pp_stack_byte_scale halves them back to the 6 bytes an element moves). */
void pp_stack_cast_kernel(int64_t elems, pp_stack_kernel *k);

/* Fills in_bytes / in_dist of sk[0..m), the stack kernels of g's n kernel groups k in order (each
 * group's kernel, then its BatchNorm pass where sk has one): walking them in order, the traffic
 * (every kernel's bytes at fp32) since each activation was written. A view's output (a node in no
 * group) is its first input's. */
void pp_stack_mark_reuse(const pp_graph *g, const pp_kernel_group *k, int n, pp_stack_kernel *sk,
                         int m);
/* The same one kernel at a time, as a prediction meets them: init over the n groups (-1 when out
 * of memory: every read then counts as from the DRAM), then for each group in order its kernel
 * (pp_stack_reuse_kernel, S->bytes set) and its BatchNorm pass where it has one. */
typedef struct pp_stack_reuse {
    int *in_group;  /* per node: 1 + its kernel group, 0 for none */
    const pp_kernel_group *k; /* the groups */
    unsigned char *epi; /* per group (1-based): 1 when it is an epilogue */
    double *wpos;   /* per tensor: the traffic when it was last written, -1 never */
    double traffic; /* bytes (fp32) the kernels so far moved */
} pp_stack_reuse;
int pp_stack_reuse_init(pp_stack_reuse *r, const pp_graph *g, const pp_kernel_group *k, int n);
void pp_stack_reuse_kernel(pp_stack_reuse *r, const pp_graph *g, const pp_kernel_group *G,
                           pp_stack_kernel *S);
void pp_stack_reuse_bn(pp_stack_reuse *r, const pp_graph *g, const pp_kernel_group *G,
                       pp_stack_kernel *B);
void pp_stack_reuse_free(pp_stack_reuse *r);
/* The bytes kernel k moves to and from the DRAM under s on d, when it moves `bytes` in all (at the
 * stack's precision, bf: that precision's bytes per fp32 byte): of each read it records, the share
 * min(1, room / (in_dist x bf)) comes from the L2 instead, room = s->l2_share x the L2. */
double pp_stack_dram_bytes(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                           double bytes, double bf);

/* The kernels of g on d (pp_graph_kernels) as the stack model sees them, cal_ms NaN, each folded
 * BatchNorm as a pass after its conv (pp_stack_bn_pass). *out is malloc'd (free it). */
perfpred_status pp_graph_stack_kernels(const pp_graph *g, const pp_device *d,
                                       pp_stack_kernel **out, int *n_out, pp_err *err);

/* Mean latency per call (ms) of n kernels under s on d: GPU times (cal_ms where given, else
 * pp_stack_gpu_ms), host costs scaled by d's host_dispatch_scale, epilogue fusion where the
 * stack fuses, then pp_pipeline_ms. host_ms / gpu_ms (optional) get the per-call host and GPU
 * totals. scratch holds 4n doubles. */
double pp_stack_latency_ms(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k, int n,
                           double *scratch, double *host_ms, double *gpu_ms);
/* After pp_stack_latency_ms(s, d, k, n, scratch, ...), with the scratch as it left it: each
 * kernel's GPU time in that pipeline into out[0..n) (out NULL: none), 0 for one that launches
 * nothing (folded, fused into an epilogue or an attention, an elided concatenation). Returns the
 * kernels that launch. */
int pp_stack_kernel_gpu_times(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                              int n, const double *scratch, double *out);
/* The unit times (pp_stack_unit_ms) of n kernels under s on d, each at the work it does there
 * (pp_stack_kernel_work: a fused attention's core its fused figures; bytes halved for fp16). */
/* pp_stack_sm_need for kernel k where s has a memory feed; 0 where it has none. An autocast cast
 * under an fp16 stack needs half: its loads are fp32 wide, where the feed is that of fp16 ones. */
double pp_stack_kernel_need(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k);
void pp_stack_kernel_units(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k, int n,
                           double *tc, double *tm);
/* The same from unit times already computed on d (pp_stack_kernel_units), as a fit calls it,
 * and each kernel's pp_stack_sm_need on d (NULL: computed here); scratch holds 2n doubles. */
double pp_stack_latency_units_ms(const pp_stack *s, const pp_device *d, const pp_stack_kernel *k,
                                 const double *tc_ms, const double *tm_ms, const double *need_bpc,
                                 int n, double *scratch, double *host_ms, double *gpu_ms);

/* cuBLAS's workspace as PyTorch sizes it by default (CUBLAS_WORKSPACE_CONFIG unset): 32 MiB on
 * compute capability 9.x (Hopper), 4096 KiB x 2 + 16 KiB x 8 before it. */
double pp_stack_cublas_bytes(double cc);
/* The replay parameters of s on d: tensors at the stack's precision, its workspace factor,
 * cuBLAS's workspace for d, capacity bytes (0: none). */
pp_alloc_params pp_stack_alloc_params(const pp_stack *s, const pp_device *d, double capacity);

/* Memory of one model under s on d, as a fresh process that loads it and runs one pass sees it. */
typedef struct pp_stack_mem {
    double used;      /* NVML's used: ctx + reserved */
    double ctx;       /* CUDA context and libraries of the nearest measured architecture */
    double reserved;  /* the caching allocator's segments (torch max_memory_reserved) */
    double allocated; /* its peak of blocks handed out (torch max_memory_allocated) */
    int ctx_exact;    /* the context was measured on d's own architecture and software */
} pp_stack_mem;
perfpred_status pp_stack_memory(const pp_stack *s, const pp_device *d, const pp_alloc_trace *t,
                                pp_stack_mem *out, pp_err *err);

/* Context memory (MiB) for a GPU of compute capability cc under current (1) or 2022 (0)
 * software, less the local memory every context holds per SM (pp_stack_lmem_mb): among the
 * architectures measured with that software (all, when none was), the one of the same generation
 * (major version) nearest to cc, else the nearest of any (ties: the newer). *exact = 1 when cc
 * itself was measured with it. 0 when the stack has none. */
double pp_stack_context_mb(const pp_stack *s, double cc, int current, int *exact);
/* The local memory a CUDA context allocates for d's SMs, MiB: the driver sizes it context-wide
 * as max resident threads per SM x SMs x bytes per thread, with at least 512 bytes a thread (the
 * syscall stack) for any launch (NVIDIA's driver team on the developer forums, threads 289339 and
 * 39558); this takes that least, so a MIG slice's context holds its own SMs' share. Threads per SM
 * from the CUDA guide by compute capability. 0 for a device with no stated SMs or architecture. */
double pp_stack_lmem_mb(const pp_device *d);
/* pp_stack_context_mb for d (its architecture and software) plus its local memory, bytes. */
double pp_stack_context_bytes(const pp_stack *s, const pp_device *d, int current, int *exact);
/* 1 when d runs the current software: its host's dispatch was measured on, or transferred from,
 * the project's own current-PyTorch host (runtime.host_dispatch_source). */
int pp_stack_current_software(const pp_device *d);

/* Read / write the JSON artifact. Read is strict: a missing or out-of-range field is an error
 * naming the file and the field. Write goes to path.tmp, then renames. */
perfpred_status pp_stack_load(const char *path, pp_stack *out, pp_err *err);
perfpred_status pp_stack_save(const pp_stack *s, const char *path, const char *report_json,
                              pp_err *err);
/* The stack as the artifact's "stack" object (a new cJSON tree, the caller's; NULL on OOM). */
struct cJSON;
struct cJSON *pp_stack_json(const pp_stack *s);

/* A field of a GPU artifact's JSON object (the stacks here, predictor/power.h's board power): a
 * finite number in [lo, hi], or a non-empty string shorter than cap; otherwise PERFPRED_ERR_MODEL
 * naming path and key. */
perfpred_status pp_artifact_num(const struct cJSON *o, const char *path, const char *key, double lo,
                                double hi, double *out, pp_err *err);
perfpred_status pp_artifact_str(const struct cJSON *o, const char *path, const char *key, char *out,
                                size_t cap, pp_err *err);
/* Writes root (taken: freed here) to path, with report_json (if given and valid JSON) as its
 * "report": printed, then written to path.tmp and renamed. */
perfpred_status pp_artifact_write(struct cJSON *root, const char *report_json, const char *path,
                                  pp_err *err);

/* 1 when d (by canonical name or alias) is among the GPUs whose rows fitted s. */
int pp_stack_trained_on(const pp_stack *s, const pp_device *d);

/* All stacks of a config dir (configs/artifacts/stacks/NAME.json), sorted by name. */
typedef struct pp_stack_set {
    int n;
    pp_stack *s;
} pp_stack_set;
perfpred_status pp_stack_set_load(const char *config_dir, pp_stack_set *out, pp_err *err);
void pp_stack_set_free(pp_stack_set *set);
/* By framework + precision (tf32 finds the fp32 stack); NULL when absent. */
const pp_stack *pp_stack_for(const pp_stack_set *set, const char *framework, pp_precision p);

#endif
