/* calibrate/importers.h: public layer measurements read in place from ../shared/datasets into the
 * layer schema of docs/measurements.md: DeepBench's GEMM and convolution kernels (import_deepbench.c),
 * mobile-ml-benchmark's per-op mobile-GPU rows (import_mobile.c) and NeuSight's kernel sweeps
 * (through neusight.c), with the bookkeeping they share and perfpred_calibrate_import (import_common.c). */
#ifndef PP_IMPORTERS_H
#define PP_IMPORTERS_H

#include "calibrate/calibrate.h"

#define PP_IMPORT_MAX_DEVICES 32
#define PP_IMPORT_MAX_NOTES 16

/* Rows and bad rows of one perfpred device, with the dataset's own name for it. */
typedef struct pp_import_device {
    char device[64];      /* perfpred device name */
    char name[64];        /* the dataset's name ("Raspberry Pi 3", "pixel4") */
    int n_rows, n_bad;
} pp_import_device;

/* What an import did. Bad rows themselves (file:line: reason) are in the table's bad list; a bad
 * row of mobile-ml-benchmark is one (CSV line, device column) pair, as a good one is. */
typedef struct pp_import_report {
    int n_files;          /* data files read */
    int n_rows, n_bad;
    int n_filtered;       /* rows left out by the device / runtime filter */
    int n_ignored;        /* lines that hold no kernel (notes, stray cells) */
    int n_devices;
    pp_import_device devices[PP_IMPORT_MAX_DEVICES];
    int n_notes;          /* files skipped and why, dataset devices without a descriptor */
    char notes[PP_IMPORT_MAX_NOTES][256];
} pp_import_report;

/* Which rows to keep: device (canonical name, NULL = all), runtime (NULL = all). */
typedef struct pp_import_filter {
    const char *device;
    const char *runtime;
} pp_import_filter;

/* ---- shared bookkeeping (import_common.c) ---- */

/* The entry of device (created with the dataset's name when new; the last entry gathers devices
 * beyond PP_IMPORT_MAX_DEVICES). */
pp_import_device *pp_import_device_entry(pp_import_report *r, const char *device, const char *name);
void pp_import_note(pp_import_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a bad row: t->bad (file:line: reason) and the device's count (device may be NULL). */
void pp_import_bad(pp_import_report *r, pp_layer_table *t, const char *device, const char *name,
                   const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* Rebuilds row as its single-node graph (graph/ must accept it and give it row->kind); 0 with *feat
 * filled, -1 with the reason in why. */
int pp_import_check_row(const pp_layer_row *row, pp_node_feat *feat, char *why, size_t why_n);
/* Finds the first 40-hex commit after the text `after` in <root>/SOURCE.md and, when date is not
 * NULL, the first YYYY-MM-DD after the commit on the same line ("" when there is none). */
perfpred_status pp_import_source_commit(const char *root, const char *after, char commit[41],
                                        char date[11], pp_err *err);

/* ---- the datasets ---- */

/* DeepBench (<root>/csv/results/...): GEMM -> Gemm (activation A, weight B, DeepBench's M, N, K and
 * transposes), convolution -> Conv (NCHW, no bias), precision per file, times in ms. Devices are
 * looked up in db by the names listed in import_deepbench.c; files of devices without a descriptor,
 * and files whose precision the schema cannot express, are skipped with a note. */
perfpred_status pp_deepbench_import(const char *root, const pp_device_db *db,
                                    const pp_import_filter *filter, pp_layer_table *t,
                                    pp_import_report *rep, pp_err *err);

/* mobile-ml-benchmark (<root>/{tflite,torch}_cnn_ops_gpu.csv): per-op latency (us) on phone GPUs,
 * fp16, batch 1; the column device <dev> is looked up as "<dev>-gpu". */
perfpred_status pp_mobile_import(const char *root, const pp_device_db *db,
                                 const pp_import_filter *filter, pp_layer_table *t,
                                 pp_import_report *rep, pp_err *err);

#endif
