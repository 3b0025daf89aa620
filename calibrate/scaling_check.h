/* calibrate/scaling_check.h: the cross-GPU scaling check (perfpred_scaling_check, docs/scaling.md).
 * NeuSight's kernel test rows of a target GPU are predicted from a calibrated source device through
 * Habitat's rule (predictor/roofline.c) and through a variant whose compute term is the fp32 peak
 * FLOP/s ratio, and compared with the target's measurements. */
#ifndef PP_SCALING_CHECK_H
#define PP_SCALING_CHECK_H

#include "devices/devices.h"
#include "perfpred.h"
#include "util/util.h"

/* Habitat's rule with the compute term from the fp32 peak FLOP/s of the descriptors instead of
 * SMs x clock: t' = t (BW/BW')^g (F/F')^(1-g), g = ridge / (ridge + ai), ridge = F / BW of `from`.
 * Per-SM fp32 throughput differs between architectures (64 fp32 lanes per SM on GA100, GV100,
 * TU104, GP100; 128 on GH100, AD104, GP104), which SMs x clock cannot see. Less than one wave on
 * `to` (blocks <= its SMs): the ratio of per-SM FLOP/s, F/SM over F'/SM'. Where either descriptor
 * lacks the fp32 peak or the SM count this is pp_scale_kernel_time. */
double pp_scaling_scale_flops(double t, const pp_device *from, const pp_device *to, double ai,
                              double blocks);
/* Habitat's original compute term, SMs x clock (clock ratio alone below one wave): the baseline
 * the report's "model", "twin" and "reverse" methods use. */
double pp_scaling_scale_smclock(double t, const pp_device *from, const pp_device *to, double ai,
                                double blocks);

/* perfpred_scaling_check with the error record of the library. */
perfpred_status pp_scaling_check(const perfpred_scaling_params *p, perfpred_scaling_report *out,
                                 pp_err *err);

#endif
