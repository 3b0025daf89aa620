/* devices/: device descriptors from YAML (libyaml, strict, errors at file:line:col), inheritance
 * through `base:`, MIG profiles as derived descriptors, short-name resolution. A pp_device is fully
 * resolved (inherited fields filled, MIG scaling applied) and owned by its pp_device_db. */
#ifndef PP_DEVICES_H
#define PP_DEVICES_H

#include <stdint.h>

#include "perfpred.h"
#include "util/util.h"

#define PP_DEV_MAX_FUSION 32      /* fusion rules per runtime */
#define PP_DEV_MAX_FUSION_LEN 6   /* ops per rule */
#define PP_DEV_MAX_ALIASES 8

typedef enum pp_device_kind {
    PP_DEV_GPU = 0,      /* datacenter / desktop GPU */
    PP_DEV_EDGE_GPU,     /* Jetson-class SoC with a GPU */
    PP_DEV_CPU,          /* server / desktop / board CPU (Raspberry Pi, Xeon, host-cpu) */
    PP_DEV_PHONE,        /* phone SoC (CPU or GPU path, see runtime) */
    PP_DEV_ACCEL         /* other accelerators (VPU, NPU) */
} pp_device_kind;
const char *pp_device_kind_name(pp_device_kind k);

typedef enum pp_precision {
    PP_PREC_FP32 = 0, PP_PREC_TF32, PP_PREC_FP16, PP_PREC_BF16, PP_PREC_INT8, PP_PREC__COUNT
} pp_precision;
const char *pp_precision_name(pp_precision p);
int pp_precision_from_name(const char *s);  /* -1 if unknown */

/* DRAM families: what sets the energy of a byte moved (stacked HBM beside the die, graphics DRAM
 * on the board, low-power or plain DDR). */
typedef enum pp_memory_family {
    PP_MEMFAM_UNKNOWN = 0, PP_MEMFAM_HBM, PP_MEMFAM_GDDR, PP_MEMFAM_LPDDR, PP_MEMFAM_DDR
} pp_memory_family;
/* The family of a hardware.memory_type ("hbm2e" -> PP_MEMFAM_HBM); UNKNOWN for NULL or a type
 * not listed. */
pp_memory_family pp_memory_family_of(const char *memory_type);
const char *pp_memory_family_name(pp_memory_family f);  /* "hbm", "gddr", ...; "unknown" */

typedef struct pp_fusion_rule {
    int len;
    const char *ops[PP_DEV_MAX_FUSION_LEN];  /* ONNX op_type sequence, producer first */
    int max_input_rank;  /* > 0: the rule applies only where the first node's first input has at
                            most this rank (PyTorch fuses nn.Linear's bias for 2-D and 3-D inputs
                            only); 0: any rank */
} pp_fusion_rule;

/* One MIG GPU-instance profile offered by a parent GPU (resolved: memory_gb stated or derived). */
typedef struct pp_mig_profile {
    const char *name;          /* "3g.20gb" */
    int compute_slices;        /* g */
    int memory_slices;         /* m */
    double memory_gb;          /* usable GiB of the instance */
    int compute_units;         /* SMs of the instance */
} pp_mig_profile;

/* Where a descriptor's runtime.host_dispatch_source says its host_dispatch_scale comes from. */
enum {
    PP_HOST_ESTIMATE = 0,   /* stated without a measurement (also: not stated) */
    PP_HOST_MEASURED,       /* whole-model rows of this GPU in its host */
    PP_HOST_TRANSFERRED     /* another GPU's measured host of the same kind */
};
const char *pp_host_source_name(int source); /* "estimate", "measured", "transferred" */

typedef struct pp_device {
    const char *name;          /* canonical: "a100-sxm4-40gb", "a100-sxm4-40gb-mig-3g.20gb" */
    const char *aliases[PP_DEV_MAX_ALIASES];
    int n_aliases;
    const char *description;   /* "NVIDIA A100 SXM4 40GB" */
    const char *vendor;
    pp_device_kind kind;
    const char *source_file;   /* descriptor path */
    const char *base;          /* name of the parent descriptor, or NULL */

    /* vendor figures (0 = not stated by the vendor / not applicable) */
    double peak_tflops[PP_PREC__COUNT];  /* dense, per precision (tensor cores where used) */
    double peak_fp16_acc16_tflops;  /* dense fp16 tensor-core rate accumulating in fp16, where it
                                       differs from peak_tflops[fp16] (which accumulates in fp32):
                                       GeForce cards run fp32 accumulation at half rate. 0 = the
                                       same as the fp16 figure (datacenter and workstation cards) */
    double memory_bandwidth_gbs;
    double stream_bandwidth_gbs;  /* measured: the best a read-one-write-one kernel reaches
                                     (gpu-benches' gpu-stream "scale"); 0 = not measured */
    double memory_gb;
    int compute_units;         /* SMs for NVIDIA GPUs, cores for CPUs */
    double clock_mhz;          /* boost clock */
    double l2_mb;              /* L2 / last-level cache */
    double compute_capability; /* NVIDIA GPUs: 8.0 for the A100 (architecture: which libraries'
                                  kernels the CUDA context loads); 0 = not stated */
    double idle_power_w;
    double max_power_w;        /* board power (TDP) */
    const char *memory_type;   /* DRAM technology: "hbm2e", "gddr6", "lpddr5", ... (NULL = not
                                  stated); its family (pp_memory_family) sets the energy per byte
                                  a GPU power model transfers */

    /* MIG: a derived descriptor of a parent GPU (is_mig = 0 for whole devices) */
    int is_mig;
    int mig_compute_slices;    /* g of mig_total_compute */
    int mig_memory_slices;     /* m of mig_total_memory */
    int mig_total_compute;     /* 7 on A100/H100 */
    int mig_total_memory;      /* 8 on A100/H100 */
    const char *mig_profile;   /* "3g.20gb" */
    const struct pp_device *parent;   /* resolved parent for MIG profiles (scaling source) */

    /* runtime stack this descriptor stands for */
    const char *runtime_framework;     /* "pytorch-eager", "tensorrt", "onnxruntime", "tflite" */
    pp_precision runtime_precision;
    double launch_overhead_us;         /* per kernel */
    double gemm_gflops;                /* CPUs: the fp32 GEMM rate the runtime reaches on one
                                          thread (a large product), GFLOP/s; 0 unknown. What a
                                          CPU-to-CPU transfer scales compute by (the FMA peak
                                          is not what PyTorch's kernels reach) */
    double conv_call_us;               /* eager-PyTorch CPUs: what one call of a convolution
                                          PyTorch hands oneDNN costs however small (primitive
                                          set-up and reorders; the probe's 1x8x4x4 3x3
                                          depthwise), us; 0 unknown */
    double runtime_memory_overhead_mb; /* context, allocator, libraries */
    double workspace_mb;               /* cuDNN/cuBLAS workspace held during inference */
    double host_dispatch_scale;        /* the host CPU's time per dispatched op against the x86
                                          desktop hosts the GPU stacks were fitted on (1 = same;
                                          0 = not stated, taken as 1) */
    int host_dispatch_source;          /* PP_HOST_* : where host_dispatch_scale comes from */
    int n_fusion;
    pp_fusion_rule fusion[PP_DEV_MAX_FUSION];
    /* exporter decompositions of one framework op (GELU as Div, Erf, Add, Mul, Mul; SiLU as
     * Sigmoid, Mul): one kernel, matched only when each later node's other inputs are constants or
     * inputs of the first node (so x * sigmoid(x) matches and an SE block's x * sigmoid(s) does not) */
    int n_composite;
    pp_fusion_rule composite[PP_DEV_MAX_FUSION];

    const char *artifacts_dir; /* where trained artifacts live (relative to configs/), or NULL */
    /* a calibrated descriptor whose layer models answer for this one, scaled by Habitat's rule
     * (e.g. a100-sxm4-40gb from a100-pcie-40gb); never inherited; NULL when none */
    const char *calibration_from;
    int hostable;              /* 1 if the descriptor may be measured by the host runner */

    /* On a MIG-capable parent GPU: the profiles it offers (each also exists as a derived device
     * "<name>-mig-<profile>"); mig_total_compute/mig_total_memory are set on the parent too.
     * NULL / 0 elsewhere. Owned by the db. */
    const pp_mig_profile *mig_profiles;
    int n_mig_profiles;
} pp_device;

typedef struct pp_device_db pp_device_db;

/* Loads every *.yaml under dir (sorted by name), resolves inheritance and MIG profiles.
 * Errors name file:line:col (unknown key, bad number, missing field, wrong unit, base cycle). */
perfpred_status pp_devices_load_dir(const char *dir, pp_device_db **out, pp_err *err);
/* The descriptors a context uses: every *.yaml under dir (sorted), then the user's own named by
 * $PERFPRED_DEVICES, a ':'-separated list of descriptor files and directories (each directory's
 * *.yaml sorted), in that order, as one set: a user's descriptor may take a shipped one as its
 * `base:`, and a name or alias that is already taken is an error naming both places. An entry
 * that does not exist is an error naming it. Every command loads its devices through this. */
perfpred_status pp_devices_load_config(const char *dir, pp_device_db **out, pp_err *err);
/* Loads one file (for tests); inheritance may refer only to descriptors in the same file set. */
perfpred_status pp_devices_load_files(const char *const *paths, int n, pp_device_db **out,
                                      pp_err *err);
void pp_devices_free(pp_device_db *db);
int pp_devices_count(const pp_device_db *db);
const pp_device *pp_devices_at(const pp_device_db *db, int i);      /* sorted by name */
/* Whether s may name a descriptor: lowercase letters, digits, '.', '_', '-', '+', starting with a
 * letter or digit, at most 120 characters (what the loader takes). */
int pp_dev_valid_name(const char *s);

/* Canonical name or alias ("a100", "a100-mig-3g", "a100-80gb-mig-1g"), case-insensitive. */
const pp_device *pp_devices_find(const pp_device_db *db, const char *name);
/* 1 when name is d's canonical name or one of its aliases, exactly as a measurement row writes it. */
int pp_device_named(const pp_device *d, const char *name);
/* The share of the datasheet bandwidth a streaming kernel reaches on a GPU nobody measured: the
 * median over the seven NVIDIA GPUs of gpu-benches' gpu-stream (scale: A100 40GB 0.888, A100 80GB
 * 0.849, A40 0.945, H100 PCIe 0.852, H200 0.659, L40 0.944, V100 0.893). */
#define PP_STREAM_SHARE_OF_PEAK 0.888
/* The bandwidth a streaming kernel reaches on d, GB/s: its measured stream_bandwidth_gbs, else
 * PP_STREAM_SHARE_OF_PEAK x memory_bandwidth_gbs. */
double pp_device_stream_gbs(const pp_device *d);
/* The most a single SM of d streams, GB/s: the largest share of the full GPU's stream bandwidth
 * per SM that the GPU itself or any of its MIG profiles gives its SMs (the A100's 1g.10gb: 2/8 of
 * the bandwidth on 14 of 108 SMs, 1.9x the whole GPU's even share). The SM is the same on every
 * slice, so a kernel whose blocks occupy a SMs streams at most a times this anywhere. */
double pp_device_sm_stream_gbs(const pp_device *d);
/* 1 when d is a CPU whose runtime stack is eager PyTorch (the runners' stack): what the CPU
 * calibration (`calibrate run`), its BLAS convolutions and their transfer assume. */
int pp_device_is_eager_pytorch_cpu(const pp_device *d);
/* How far apart two CPUs are for borrowing one's layer models for the other: the sum of |ln| of
 * the ratios a transfer scales by, their fp32 peak per core and memory bandwidth per core
 * (INFINITY where either lacks one), and where both state them their runtime's GEMM rate
 * (gemm_gflops) and cost per op (launch_overhead_us). */
double pp_device_cpu_distance(const pp_device *a, const pp_device *b);
/* The CPU maker a vendor string names, for preferring a borrowed CPU of the same one (its
 * libraries take the same code paths): 1 Intel ("Intel", "GenuineIntel"), 2 AMD ("AMD",
 * "AuthenticAMD"), 3 Arm (an "ARM" vendor_id, or a board maker such as "Raspberry Pi"), 0 unknown
 * or NULL. Case-insensitive. */
int pp_cpu_vendor_family(const char *vendor);
/* malloc'd YAML text of the resolved descriptor (every field, inherited ones included). */
char *pp_device_to_yaml(const pp_device *d);

/* Default configs directory: $PERFPRED_CONFIG_DIR, else the source tree's configs/ if present,
 * else the installed share/perfpred/configs. */
const char *pp_default_config_dir(void);

#endif
