/* lab/fewshot.h: the few-shot study (HELP's setting) over the library's network-fit internals.
 * Not part of libperfpred: built into lab_fewshot and its test (lab/CMakeLists.txt).
 * Ownership: the report is a caller-owned struct; rows stay the caller's. */
#ifndef LAB_FEWSHOT_H
#define LAB_FEWSHOT_H

#include "fit/fit.h"

typedef struct lab_fewshot_report {
    int n_pretrain_rows, n_pretrain_devices;
    int n_shots, n_eval;
    int direct;               /* 1: the target has no layer sum of its own (reference device's) */
    pp_metrics before;        /* pretrained model on the evaluation rows (shots excluded) */
    pp_metrics after;         /* after fine-tuning on the shots */
    pp_metrics layer_sum;     /* the predictor alone, when the device has a layer sum */
    double seconds_total;
} lab_fewshot_report;

/* Few-shot calibration of a new device (HELP's setting): pretrains the model on the rows of
 * pretrain_devices (globals include the descriptor figures and a hardware embedding: the device's
 * log-ratios of the shot architectures, centred), picks n_shots architectures of the target by
 * hash, fine-tunes on them and reports Spearman and MAPE on the target's held-out architectures
 * (hash buckets below heldout_pct, never seen in pretraining). Every sample carries the layer times
 * of one reference device (the target when it has a layer sum, else the first pretraining device
 * that has one); the target is log(measured / reference layer sum) minus the device's mean over its
 * shots. Only rows at the target's batch size are used. */
perfpred_status lab_fewshot_fit(const char *target_device, int n_shots,
                                const char *const *pretrain_devices, int n_pretrain,
                                const pp_net_row *rows, int n_rows,
                                const pp_fit_net_params *params, lab_fewshot_report *report,
                                pp_err *err);

#endif
