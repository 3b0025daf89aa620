/* predictor/roofline.c: the analytic parts of a prediction: roofline kernel times, thread-block
 * estimates, memory-boundness and Habitat's cross-device scaling rule. Pure functions of a device
 * descriptor and a kernel's figures. */
#include <math.h>

#include "predictor/predictor.h"

double pp_precision_byte_factor(const pp_device *d)
{
    switch (d->runtime_precision) {
    case PP_PREC_FP16:
    case PP_PREC_BF16: return 0.5;
    case PP_PREC_INT8: return 0.25;
    default: return 1.0;
    }
}

static int is_matrix_kind(pp_op_kind k)
{
    return k == PP_OPK_CONV || k == PP_OPK_DWCONV || k == PP_OPK_CONVT || k == PP_OPK_LINEAR ||
           k == PP_OPK_BMM;
}

/* Peak FLOP/s a kernel of kind k can reach: matrix kernels run at the runtime's precision (tensor
 * cores where the descriptor states them); everything else at the fp32 vector rate (fp16 for
 * half-precision runtimes when stated). Depthwise convolutions do not use tensor cores. */
static double peak_flops(const pp_device *d, pp_op_kind k)
{
    /* eager PyTorch on a CPU walks each pooling window in scalar code (ATen's cpu_max_pool and
     * cpu_avg_pool over NCHW): its work is the loop's clocks, at the clock of each core, not the
     * vector FMA rate */
    double pool_hz = k == PP_OPK_POOL ? pp_roofline_pool_clock_hz(d) : 0;
    if (pool_hz > 0) return pool_hz;
    double tf = 0;
    if (is_matrix_kind(k) && k != PP_OPK_DWCONV) tf = d->peak_tflops[d->runtime_precision];
    if (tf <= 0) tf = d->peak_tflops[PP_PREC_FP32];
    return tf * 1e12;
}

double pp_roofline_pool_clock_hz(const pp_device *d)
{
    if (!(d->clock_mhz > 0) || !pp_device_is_eager_pytorch_cpu(d)) return 0;
    return d->clock_mhz * 1e6 * (d->compute_units > 0 ? d->compute_units : 1);
}

double pp_roofline_ms(const pp_device *d, pp_op_kind k, double flops, double bytes,
                      int *memory_bound)
{
    double peak = peak_flops(d, k);
    double bw = d->memory_bandwidth_gbs * 1e9;
    double tc = peak > 0 ? flops / peak : 0;
    double tm = bw > 0 ? bytes / bw : 0;
    if (memory_bound) *memory_bound = tm >= tc;
    return fmax(tc, tm) * 1e3 + d->launch_overhead_us * 1e-3;
}

double pp_memory_boundness(double ai, double ridge)
{
    if (!(ridge > 0)) return 1.0;
    if (!(ai >= 0)) ai = 0;
    return ridge / (ridge + ai);
}

double pp_kernel_blocks(const pp_node_feat *f)
{
    switch (f->kind) {
    case PP_OPK_CONV:
    case PP_OPK_CONVT:
        /* implicit GEMM: M = N*Hout*Wout rows, N = Cout columns, 128x128 tiles */
        return ceil((double)(f->n * f->hout * (f->wout > 0 ? f->wout : 1)) / 128.0) *
               ceil((double)f->cout / 128.0);
    case PP_OPK_LINEAR:
    case PP_OPK_BMM:
        return (double)(f->b > 0 ? f->b : 1) * ceil((double)f->m / 128.0) *
               ceil((double)f->nn / 128.0);
    default:
        return ceil((double)f->out_elems / 1024.0);
    }
}

/* Between two CPUs a kernel's figures go per core: the CPU layer models time one thread (the
 * runners' protocol), whatever cores either machine has. */
static int per_core(const pp_device *from, const pp_device *to)
{
    return from->kind == PP_DEV_CPU && to->kind == PP_DEV_CPU && from->compute_units > 0 &&
           to->compute_units > 0;
}

double pp_bandwidth_ratio(const pp_device *from, const pp_device *to)
{
    if (!(to->memory_bandwidth_gbs > 0) || !(from->memory_bandwidth_gbs > 0)) return 1.0;
    double r = from->memory_bandwidth_gbs / to->memory_bandwidth_gbs;
    return per_core(from, to) ? r * to->compute_units / from->compute_units : r;
}

/* t scaled from `from` to `to` as a kernel of arithmetic intensity ai: its memory-bound share g
 * (against from's ridge) by the bandwidth ratio, the rest by c_ratio. */
static double scale_by(double t, const pp_device *from, const pp_device *to, double ai,
                       double c_ratio)
{
    double pf = from->peak_tflops[PP_PREC_FP32], bw = from->memory_bandwidth_gbs * 1e9;
    double g = pp_memory_boundness(ai, bw > 0 && pf > 0 ? pf * 1e12 / bw : 0);
    return t * pow(pp_bandwidth_ratio(from, to), g) * pow(c_ratio, 1.0 - g);
}

double pp_scale_kernel_time_blas(double t, const pp_device *from, const pp_device *to, double ai,
                                 double blocks, int blas)
{
    /* GEMM calls of the runtime's BLAS. oneDNN convolutions stay on the FMA ratio: on
     * xeon-kvm-2vcpu, where the BLAS reaches 33 GFLOP/s and the FMA loop 118, oneDNN convolution
     * rows reached up to 173 and the BLAS ones at most 32 (layers-run2.csv; docs/accuracy.md) */
    if (!blas || !(from->gemm_gflops > 0) || !(to->gemm_gflops > 0))
        return pp_scale_kernel_time(t, from, to, ai, blocks);
    return scale_by(t, from, to, ai, from->gemm_gflops / to->gemm_gflops);
}

double pp_scale_kernel_time(double t, const pp_device *from, const pp_device *to, double ai,
                            double blocks)
{
    double pf = from->peak_tflops[PP_PREC_FP32], pt = to->peak_tflops[PP_PREC_FP32];
    /* compute side: the fp32 FLOP/s ratio (the precision the source's kernels were measured at).
     * For a MIG slice it is the SM ratio; across architectures it also counts FP32 lanes per SM,
     * which SMs x clock misses (docs/scaling.md: H100 GEMMs 68 % off with SMs x clock, 19 % with
     * FLOP/s). Without FLOP/s figures there is no ridge either: g = 1, bandwidth alone. */
    double c_ratio = 1.0;
    if (pf > 0 && pt > 0 && per_core(from, to)) {
        c_ratio = (pf / from->compute_units) / (pt / to->compute_units);
    } else if (pf > 0 && pt > 0) {
        c_ratio = pf / pt;
        /* waves, not a continuous SM ratio: the kernel's blocks (one per SM at a time, 128x128
         * GEMM tiles) run in ceil(blocks / SMs) waves on each device, each wave at the per-SM
         * speed; a kernel that fits one wave on both runs at the per-SM ratio */
        if (from->compute_units > 0 && to->compute_units > 0 && blocks > 0) {
            double per_sm = (pf / from->compute_units) / (pt / to->compute_units);
            c_ratio = per_sm * ceil(blocks / to->compute_units) / ceil(blocks / from->compute_units);
        }
    }
    return scale_by(t, from, to, ai, c_ratio);
}
