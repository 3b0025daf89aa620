/* predictor/power.h: board power of a GPU while a model runs, fitted on measured power.
 *
 * A GPU draws a static part whenever it is clocked up (leakage, clocks, fans: also in the gaps a
 * host-bound pipeline leaves between kernels) and a dynamic part per byte it moves from DRAM and
 * per operation it executes:
 *   P = p0 + e_byte x DRAM bytes/s + e_flop x FLOP/s,  at most the board's max_power_w
 * (above it the board throttles its clock). gpu-benches' roofline sweep measures P over a range
 * of arithmetic intensities on four GPUs; fitted there, e_byte comes out near 120 pJ/B for HBM on
 * the A100 and H200 alike and e_flop near 5.5 pJ per fp32 flop, and p0 near 16 % of the board's
 * power. A GPU the sweep did not measure takes p0 = idle_fraction x max_power_w, e_byte of its
 * DRAM family (descriptor hardware.memory_type) and e_flop from the fit, labelled transferred.
 *
 * Convolutions and matrix products: the sweep runs fp32 FMAs whose operands stay in registers.
 * A GEMM-class kernel streams its operands through shared memory every step: at the rate it
 * reaches on its units (pp_stack_compute_reach: the stack's efficiency x its share of the tensor
 * or doubled fp32 peak) it takes the board to its power limit, so each of its flops costs
 * (max_power_w - p0) / (peak x reach). The project's H100 drew up to 750 W (its limit: 700)
 * running eager CNNs at batch >= 32 at a quarter of its TF32 peak (docs/gpu-stacks.md, "Energy").
 *
 * Stored as configs/artifacts/gpu-power.json (calibrate fit-power). */
#ifndef PP_POWER_H
#define PP_POWER_H

#include "predictor/stack.h"

#define PP_POWER_MAX_GPUS 16

/* One GPU's figures as the sweep fitted them. */
typedef struct pp_gpu_power {
    char device[64];     /* canonical descriptor name */
    double p0_w;         /* clocked up, no traffic */
    double pj_per_byte;  /* per DRAM byte */
    double pj_per_flop;  /* per fp32 flop on the CUDA cores */
    int p0_fitted;       /* 0: p0 = idle_fraction x max power (the sweep's traffic did not vary) */
    int points;          /* sweep points it was fitted on */
    double fit_mape_pct; /* on those points */
} pp_gpu_power;

typedef struct pp_power_set {
    int n;                                   /* 0 = no artifact: energy stays an estimate */
    pp_gpu_power g[PP_POWER_MAX_GPUS];
    double idle_fraction;                    /* p0 / max_power_w, transferred */
    double pj_per_byte_family[5];            /* by pp_memory_family; 0 = not fitted */
    double pj_per_flop;                      /* transferred */
    char source[256];
} pp_power_set;

/* The figures that apply to device d, and how they were obtained. */
typedef struct pp_power_params {
    double p0_w, pj_per_byte, pj_per_flop, max_w;
    int calibrated;           /* 1: d itself was fitted */
    const char *how;          /* one line for the prediction's source */
} pp_power_params;

/* 0 when the set has nothing for d (no artifact, or d states no max_power_w). */
int pp_power_for(const pp_power_set *set, const pp_device *d, pp_power_params *out);

/* Energy (mJ) of one call of n kernels under stack s that takes T_ms per call: p0 for the whole
 * call plus each kernel's dynamic energy, the latter at most (max - p0) x its GPU time. The kernel
 * times and fusion are those of pp_stack_latency_ms, whose scratch (4n doubles, as it left them)
 * is read here. *dyn_mj (optional) gets the dynamic part. */
double pp_stack_energy_mj(const pp_stack *s, const pp_device *d, const pp_power_params *pw,
                          const pp_stack_kernel *k, int n, const double *scratch, double T_ms,
                          double *dyn_mj);

/* Power (W) the model gives for a steady kernel moving bw_gbs and computing gflops (fp32). */
double pp_power_w(const pp_power_params *pw, double bw_gbs, double gflops);

/* Artifact. Load is strict (a missing or out-of-range field names the file and the field); a
 * missing file under config_dir leaves set->n = 0 and is not an error. Save writes path.tmp, then
 * renames; report_json (may be NULL) is stored beside the figures. */
perfpred_status pp_power_load(const char *path, pp_power_set *out, pp_err *err);
perfpred_status pp_power_set_load(const char *config_dir, pp_power_set *out, pp_err *err);
perfpred_status pp_power_save(const pp_power_set *set, const char *path, const char *report_json,
                              pp_err *err);

#endif
