/* calibrate/fit_power.h: fits the GPU board power model (predictor/power.h) on gpu-benches'
 * roofline sweep (gpu-roofline/<gpu>.txt: for each arithmetic intensity, DRAM GB/s, GF/s, clock
 * and board watts) and judges it by leaving one GPU out: the transferred figures (static share of
 * max power, energy per byte of the DRAM family, energy per flop) are refitted on the other GPUs
 * and predict every point of the one left out. Points where the board hit its power limit or
 * lowered its clock are left out of the fits and judged with the prediction capped at max power.
 * Reports are plain structs; nothing here prints. */
#ifndef PP_FIT_POWER_H
#define PP_FIT_POWER_H

#include "devices/devices.h"
#include "predictor/power.h"

typedef struct pp_fitpower_gpu {
    char device[64];
    char file[64];            /* gpu-roofline file stem */
    int points, throttled;    /* points read; of them at the power limit or a lowered clock */
    double fit_mape;          /* this GPU's own fit, on its unthrottled points, % */
    double held_out_mape;     /* transferred figures fitted without it, all its points, % */
    double held_out_mape_throttled; /* the same on its throttled points only (NaN if none) */
} pp_fitpower_gpu;

typedef struct pp_fitpower_report {
    pp_power_set set;         /* fitted on every GPU */
    int n_gpus, n_lines_skipped;
    pp_fitpower_gpu gpu[PP_POWER_MAX_GPUS];
    double held_out_mape;     /* pooled over GPUs (each GPU's points weigh equally in total), % */
} pp_fitpower_report;

/* Reads <data_dir>/gpu-roofline/ (gpu-benches), fits, fills *rep. A file stem the mapping does
 * not know is an error naming it; a line that is not a sweep point is skipped and counted. */
perfpred_status pp_fitpower_run(const pp_device_db *db, const char *data_dir,
                                pp_fitpower_report *rep, pp_err *err);

/* The report as JSON text (malloc'd), stored beside the figures in the artifact. */
char *pp_fitpower_report_json(const pp_fitpower_report *rep);

#endif
