/* calibrate/fit_stacks.h: fits GPU runtime stacks (predictor/stack.h) on whole-model measurements
 * (framework-tax-gpus: seven GPUs, PyTorch eager fp32/fp16, TorchScript, TensorRT) and judges them
 * by leaving one GPU out: the stack is refitted on the other GPUs' rows and predicts every row of
 * the one left out. Reports are plain structs; nothing here prints. */
#ifndef PP_FIT_STACKS_H
#define PP_FIT_STACKS_H

#include "devices/devices.h"
#include "predictor/stack.h"

#define PP_FITSTACK_MAX_GPUS 12
#define PP_FITSTACK_MAX_FAMILIES 16

typedef struct pp_fitstack_params {
    const char *data_dir;    /* ../shared/datasets/framework-tax-gpus */
    const char *own_data_dir; /* the project's own GPUs, same layout (data/gpu-stacks), or NULL */
    const char *models_dir;  /* weightless torchvision ONNX exports (tests/fixtures/models) */
    const char *stack;       /* one stack name, or NULL for all six */
    int threads;             /* leave-one-GPU-out fits in parallel (>= 1) */
    int leave_one_out;       /* 1: also the leave-one-GPU-out figures */
    int leave_family_out;    /* 1: also the leave-one-model-family-out figures */
    int max_evals;           /* Nelder-Mead evaluations per fit (0: 4000) */
    const char *only_gpu_files; /* tests: comma-separated GPU file stems to read, NULL = all */
    const char *rows_csv;    /* where to write every row with its held-out predictions, or NULL */
} pp_fitstack_params;
pp_fitstack_params pp_fitstack_default_params(void);

typedef struct pp_fitstack_gpu {
    char device[64];         /* descriptor name the GPU file maps to */
    int n_rows, n_small, n_large; /* rows; batch < 16; batch >= 16 */
    int n_memory;            /* rows with a memory reading */
    double mape_small, mape_large, mape_all, mape_memory; /* held out (leave_one_out), % */
    double train_mape;       /* of the all-GPU fit on this GPU's rows, % */
    double repeat_mape;      /* run folders measuring the same configuration twice, %, NaN if none */
    int n_repeat;
    double interval_coverage; /* % of its held-out rows inside the 80 % latency interval computed
                                 without them (NaN without leave_one_out) */
} pp_fitstack_gpu;

typedef struct pp_fitstack_report {
    pp_stack stack;          /* fitted on every GPU's rows */
    int n_rows, n_skipped, n_models;
    char skipped_why[256];   /* the first reason a row was skipped */
    int n_gpus;
    pp_fitstack_gpu gpu[PP_FITSTACK_MAX_GPUS];
    double train_mape, train_mape_memory;
    /* pooled over the held-out GPUs' rows */
    double logo_small, logo_large, logo_memory;
    double repeat_mape;      /* pooled over GPUs, NaN if no repeats */
    int n_repeat;
    double interval_coverage; /* pooled over GPUs, % */
    /* leave_family_out: each model family's rows predicted by a fit that saw none of them
     * (device holds the family's name; train and repeat figures NaN) */
    int n_families;
    pp_fitstack_gpu family[PP_FITSTACK_MAX_FAMILIES];
    double lofo_small, lofo_large, lofo_memory;
} pp_fitstack_report;

/* The six stacks and the run-folder suffix each reads ("pretrained-fp32", ...). */
int pp_fitstack_count(void);
const char *pp_fitstack_name(int i);

/* Fits stack `name` on the data; fills *rep. */
perfpred_status pp_fitstack_run(const pp_device_db *db, const pp_fitstack_params *p,
                                const char *name, pp_fitstack_report *rep, pp_err *err);

/* The report as JSON text (malloc'd), stored beside the stack in its artifact. */
char *pp_fitstack_report_json(const pp_fitstack_report *rep);

#endif
