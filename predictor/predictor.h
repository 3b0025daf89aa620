/* predictor/: the one prediction path for every device. A model's nodes are grouped into kernels
 * by the runtime's fusion rules; each kernel gets a calibrated time (layer models of the device or
 * of the device it derives from) or a roofline estimate; MIG slices and derived descriptors scale
 * kernel times from their source device by memory-boundness (Habitat's rule).
 * This header is the folder's contract; its parts that other modules reach for alone are in
 * stack.h (GPU runtime stacks: host/GPU pipeline, waves, memory), allocator.h (PyTorch's caching
 * allocator replayed), power.h (board power), calib.h (calibrated artifacts of a device),
 * interval.h (latency intervals), reuse.h (repeated calls) and json_out.h (JSON answers). */
#ifndef PP_PREDICTOR_H
#define PP_PREDICTOR_H

#include "devices/devices.h"
#include "graph/graph.h"

/* Memory-boundness g in [0,1] of a kernel with arithmetic intensity ai on a device whose ridge
 * point is ridge (FLOP/byte): g = ridge / (ridge + ai). g -> 1 for ai << ridge (bandwidth bound),
 * 0.5 at the ridge, -> 0 for ai >> ridge. */
double pp_memory_boundness(double ai, double ridge);

/* Habitat scaling of a kernel time t measured/predicted on device `from` to device `to`:
 * t' = t * (BW/BW')^g * C^(1-g). C counts waves: with F the peak fp32 FLOP/s and S the SMs,
 * C = (F/S)/(F'/S') * ceil(blocks/S') / ceil(blocks/S), so a kernel that fits one wave on both
 * runs at the per-SM ratio (1 for a MIG slice) and a large one tends to F/F'. Without SM counts
 * or blocks, C = F/F'. */
/* pp_scale_kernel_time for a kernel that runs in the runtime's BLAS (blas != 0: linear, bmm, and
 * the convolutions eager PyTorch runs as im2col + GEMM, pp_lm_torch_cpu_conv_blas) or not: where
 * both devices are CPUs whose runtimes' GEMM rates were measured (gemm_gflops), a BLAS kernel
 * scales its compute by that ratio instead of the FMA peaks'. */
double pp_scale_kernel_time_blas(double t, const pp_device *from, const pp_device *to, double ai,
                                 double blocks, int blas);
double pp_scale_kernel_time(double t, const pp_device *from, const pp_device *to, double ai,
                            double blocks);
/* The bandwidth ratio a memory-bound kernel scales by from `from` to `to` (from's / to's): per
 * core between two CPUs (both state compute_units), whose layer models time one thread; else the
 * devices' bandwidths; 1 where either lacks one. */
double pp_bandwidth_ratio(const pp_device *from, const pp_device *to);

/* Thread blocks a kernel launches, estimated from its shape (128x128 output tiles for GEMM-like
 * kernels, 1024 elements per block otherwise). */
double pp_kernel_blocks(const pp_node_feat *f);

/* Roofline time in ms of flops and bytes on device d for op kind k, plus launch overhead. */
double pp_roofline_ms(const pp_device *d, pp_op_kind k, double flops, double bytes,
                      int *memory_bound);

/* The clocks a second d runs a pooling kernel's scalar loop at, clock x compute units, on an
 * eager-PyTorch CPU with a clock stated; else 0. Where it is > 0, pp_roofline_ms takes the loop's
 * clocks (pp_lm_torch_cpu_pool_clocks) as the kernel's flops and runs them at this rate. */
double pp_roofline_pool_clock_hz(const pp_device *d);

/* Bytes per element at the device runtime's precision relative to fp32 (1, 0.5, 0.25). */
double pp_precision_byte_factor(const pp_device *d);

/* A kernel: the nodes of a graph the runtime runs as one, by its fusion rules (runtime.fusion)
 * or as one composite op (runtime.composite_ops). */
typedef struct pp_kernel_group {
    int n;                               /* nodes, >= 1 */
    int nodes[PP_DEV_MAX_FUSION_LEN];    /* producer first */
    const char *eager_op;                /* a composite op's single ONNX operator ("Gelu",
                                            "HardSwish"), NULL for others */
} pp_kernel_group;

/* The kernels of g on device d, in the order of their first nodes; nodes that run no kernel
 * (folded, shapes, views) are in none. *out is malloc'd (free it). */
perfpred_status pp_graph_kernels(const pp_graph *g, const pp_device *d, pp_kernel_group **out,
                                 int *n_out, pp_err *err);

#endif
