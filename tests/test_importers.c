/* tests/test_importers.c: DeepBench and mobile-ml-benchmark rows into the layer schema. Hand-written
 * sheets in a scratch dataset folder pin every mapping (Gemm transposes, Conv width/height order,
 * TFLite SAME/VALID padding, groups from filter sizes, ceil-mode pools, us -> ms) and every kind of
 * bad row; the real datasets, where present, must give the row counts read off their CSVs by hand;
 * the public entry and the CLI filter, write and reject as documented. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "datasets/datasets.h"

#define DATASETS PP_SOURCE_DIR "/../shared/datasets"
#define CLI PP_BINARY_DIR "/perfpred"

static char g_tmp[1024];
static pp_device_db *g_db;

/* ------------------------------------------------------------------- helpers ---- */

static void mkdirs(const char *path)
{
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static void tmp_path(char *out, size_t n, const char *rel)
{
    snprintf(out, n, "%s/%s", g_tmp, rel);
}

/* "x:1x3x224x224;w:64x3x1x1" */
static void inputs_str(const pp_layer_row *r, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < r->n_inputs; i++) {
        k += (size_t)snprintf(out + k, n - k, "%s%c:", i ? ";" : "", r->inputs[i].role);
        if (r->inputs[i].rank == 0) k += (size_t)snprintf(out + k, n - k, "scalar");
        for (int d = 0; d < r->inputs[i].rank; d++)
            k += (size_t)snprintf(out + k, n - k, d ? "x%lld" : "%lld",
                                  (long long)r->inputs[i].dims[d]);
    }
}

/* The ints of attribute name as "a,b,c", or the int as "a"; "" when absent. */
static const char *attr_str(const pp_layer_row *r, const char *name)
{
    static char buf[128];
    buf[0] = '\0';
    for (int i = 0; i < r->n_attrs; i++) {
        if (strcmp(r->attrs[i].name, name) != 0) continue;
        if (r->attrs[i].type == PP_ATTR_INT) {
            snprintf(buf, sizeof buf, "%lld", (long long)r->attrs[i].i);
        } else {
            size_t k = 0;
            for (int j = 0; j < r->attrs[i].n; j++)
                k += (size_t)snprintf(buf + k, sizeof buf - k, j ? ",%lld" : "%lld",
                                      (long long)r->attrs[i].ints[j]);
        }
    }
    return buf;
}

/* The row of device dev read from CSV line `line`, or NULL. */
static const pp_layer_row *row_at(const pp_layer_table *t, const char *dev, int line)
{
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].line == line && strcmp(t->rows[i].device, dev) == 0) return &t->rows[i];
    return NULL;
}

static int bad_mentions(const pp_layer_table *t, const char *file_line, const char *text)
{
    for (int i = 0; i < t->bad.n_kept; i++)
        if (strstr(t->bad.msgs[i], file_line) && strstr(t->bad.msgs[i], text)) return 1;
    return 0;
}

static const pp_import_device *dev_entry(const pp_import_report *r, const char *dev)
{
    for (int i = 0; i < r->n_devices; i++)
        if (strcmp(r->devices[i].device, dev) == 0) return &r->devices[i];
    return NULL;
}

/* ------------------------------------------------------------ the scratch data ---- */

static const char DB_SOURCE[] =
    "# DeepBench (test copy)\n"
    "- Repo: https://github.com/baidu-research/DeepBench\n"
    "- Commit: da81ba7820739e2e506dc27f382d15be5479f98f (HEAD, 2020-08-11) for `results/**.xlsx`;\n"
    "  `results/DeepBench_NV_Jetson_TX1.xlsx` taken from commit "
    "4f453811290500838ce6d7fe5daa7853f8364750 (removed later).\n";

static const char RPI3_SHEET[] =
    "Precision,Int8 inputs 32 bit math,,\"Convolution results are still in float, since int8 "
    "isn't supported\"\n"                                                                  /* 1 */
    "Dense Matrix Multiplication,,M,N,K,A Transpose,B Transpose,,Time (msec),GIGAFLOPS\n"  /* 2 */
    ",,5124,700,2048,N,N,,815.305,18.0\n"                                                  /* 3 */
    ",,64,1,1216,T,N,,0.966738,0.16\n"                                                     /* 4 */
    ",,35,700,2048,N,N,,Not Supported,\n"                                                  /* 5 */
    ",,35,700,2048,N,N,(a note),7.8,1\n"                                                   /* 6 */
    ",,,,,,,,,\n"                                                                          /* 7 */
    "Sparse Matrix Multiplication,,M,N,K,A Transpose,B Transpose,Sparsity,,Sparse Time (msec)\n"
    ",,7680,1,2560,N,N,0.95,,8.455\n"                                                      /* 9 */
    "Convolution\n"                                                                        /* 10 */
    ",,W (input - time),H (input),C (channels),N (batch size),K  (number of filters),S (filter "
    "width),R (filter height),pad_w,pad_h,Horizontal Stride,Vertical Stride,Forward (msec),P,Q,"
    "FWD GIGAFLOPS\n"                                                                      /* 11 */
    ",,151,40,1,1,32,20,5,8,8,8,2,12.5,19,26,1\n"                                          /* 12 */
    ",,56,56,256,2,128,1,1,0,0,2,2,185.872,28,28,0.27\n"                                   /* 13 */
    ",,56,56,256,1,128,1,1,0,0,2,2,185.872,27,28,0.27\n"                                   /* 14 */
    ",,,* = a note\n"                                                                      /* 15 */
    "Recurrent Layers - Vanilla,,Hidden units,N,Timesteps,Time Forward (msec)\n"          /* 16 */
    ",,32,1,672,5\n";                                                                      /* 17 */

static const char MB_SOURCE[] =
    "# mobile-ml-benchmark (test copy)\n"
    "- Commit used: 40ba833a9ca560a3035a76a5c3da504082dec001 (2024-02-22, \"Upload dataste csv "
    "files\"), path `dataset/*.csv`.\n";

#define TF_CONV(h, c, o, s, k, f, g, fl)                                                      \
    "\"{'Input_shape': '" h "', 'Input_channel': " c ", 'Output_shape': '" o "', 'Stride': '" s \
    "', 'Kernel': '" k "', 'Filter': '" f "', 'Group': '" g "', 'FLOPS': '" fl "'}\""

static const char TFLITE_OPS[] =
    "model,operation,feature,pixel4|gpu|float,pixel4|gpu|kernel,zz|gpu|float,s10|gpu|float,"
    "s10|gpu|kernel\n"
    "m1,CONV_2D," TF_CONV("224", "3", "224", "1", "1", "64", "1", "19267584")
    ",320.4096,convolution_2d_0,1,343.532,k\n"                                             /* 2 */
    "m1,CONV_2D," TF_CONV("112", "16", "56", "2", "3", "32", "1", "28901376")
    ",100,k,1,200,k\n"                                                                     /* 3 */
    "m1,DEPTHWISE_CONV_2D," TF_CONV("31", "384", "14", "2", "5", "1", "1", "3763200")
    ",122.2272,k,1,125.13,k\n"                                                             /* 4 */
    "m1,MEAN,\"{'Input_shape': '7', 'Input_channel': 1024, 'Output_shape': '1024', 'Stride': '-', "
    "'Kernel': '0', 'Filter': '-', 'Group': '-', 'FLOPS': '50176'}\",16.2816,k,1,25.558,k\n" /* 5 */
    "m1,FULLY_CONNECTED,\"{'Input_shape': '-', 'Input_channel': 2048, 'Output_shape': '-', "
    "'Stride': '-', 'Kernel': '-', 'Filter': '1000', 'Group': '-', 'FLOPS': '4096000'}\","
    "159.5904,k,1,291.363,k\n"                                                             /* 6 */
    "m1,CONCATENATION,\"{'Input_shape': '28', 'Input_channel': 64, 'Output_shape': '28', "
    "'Stride': '-', 'Kernel': '4', 'Filter': '256', 'Group': '-', 'FLOPS': '-'}\",42.3,k,1,74.7,k\n"
    "m1,CONV_2D," TF_CONV("224", "3", "224", "1", "1", "64", "1", "100")
    ",320.4096,k,1,343.532,k\n"                                                            /* 8 */
    "m1,CONV_2D," TF_CONV("224", "3", "224", "1", "1", "64", "1", "19267584")
    ",,k,1,343.532,k\n"                                                                    /* 9 */
    "m1,CONV_2D," TF_CONV("224", "3", "224", "1", "1", "64", "1", "19267584")
    ",-5,k,1,nan,k\n"                                                                      /* 10 */
    "m1,MAX_POOL_2D,\"{'Input_shape': '114', 'Input_channel': 64, 'Output_shape': '56', "
    "'Stride': '2', 'Kernel': '3', 'Filter': '-', 'Group': '-', 'FLOPS': '1806336'}\","
    "126.8352,k,1,81.638,k\n";                                                             /* 11 */

static const char TORCH_OPS[] =
    "model,operation,feature,pixel4|gpu|float,pixel4|gpu|kernel,onefusion|gpu|float,"
    "onefusion|gpu|kernel\n"
    "m2,vulkan_prepack::run_conv2d_context,\"{'input_channel': 384, 'input_shape': 28, "
    "'output_channel': 384, 'output_shape': 14, 'kernel_size': 5, 'stride': 2, 'padding': 2, "
    "'input_size': 301056, 'output_size': 75264, 'flops': 1881600, 'filter_size': 9600}\","
    "120.24,vulkan.conv2d_dw,390.88,vulkan.conv2d_dw\n"                                    /* 2 */
    "m2,aten::max_pool2d,\"{'input_channel': 64, 'input_shape': 112, 'output_shape': 56, "
    "'kernel_size': 3, 'stride': 2, 'padding': 0, 'input_size': 802816, 'output_size': 200704}\","
    "214.88,k,580.08,k\n"                                                                  /* 3 */
    "m2,aten::add,\"{'input_channel': 256, 'input_shape': 110, 'flops': 3097600}\",978.48,k,"
    "3094.6,k\n"                                                                           /* 4 */
    "m2,aten::relu,\"{'input_channel': 256, 'input_shape': 110, 'flops': 3097600}\",528.08,k,"
    "1436.75,k\n"                                                                          /* 5 */
    "m2,vulkan_prepack::run_linear_context,\"{'input_shape': 2048, 'output_shape': 1000, "
    "'flops': 4095000}\",1123.64,vulkan.addmm,2707.0,vulkan.addmm\n"                       /* 6 */
    "m2,vulkan_prepack::run_conv2d_context,\"{'input_channel': 64, 'input_shape': 56, "
    "'output_channel': 64, 'output_shape': 56, 'kernel_size': 3, 'stride': 1, 'padding': 1, "
    "'groups': 2, 'input_size': 200704, 'output_size': 200704, 'flops': 115605504, "
    "'filter_size': 36864}\",50,k,60,k\n";                                                 /* 7 */

static int group_setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "%s/imp_test_%ld", PP_BINARY_DIR, (long)getpid());
    if (mkdir(g_tmp, 0755) != 0) return -1;
    pp_err err = {0};
    return pp_devices_load_dir(PP_SOURCE_DIR "/configs/devices", &g_db, &err) == PERFPRED_OK ? 0
                                                                                             : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    pp_devices_free(g_db);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

/* <g_tmp>/<name>: a DeepBench folder with the hand-written Raspberry Pi 3 sheet, its Specs, and an
 * iPhone 6 sheet (no descriptor). */
static void make_deepbench(const char *name, const char *rpi3_sheet, char *root, size_t n)
{
    char p[2048];
    tmp_path(root, n, name);
    snprintf(p, sizeof p, "%s/csv/results/inference/device", root);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/SOURCE.md", root);
    pp_test_write_text(p, DB_SOURCE);
    snprintf(p, sizeof p, "%s/csv/results/inference/device/DeepBench_Raspberry_Pi_3__Kernels.csv",
             root);
    pp_test_write_text(p, rpi3_sheet);
    snprintf(p, sizeof p, "%s/csv/results/inference/device/DeepBench_Raspberry_Pi_3__Specs.csv",
             root);
    pp_test_write_text(p, "CPU,1.2 GHZ quad-core ARM Cortex A53\nEigen Version,3.3.3\n"
                  "ARM Compute Lib version,17.05\n");
    snprintf(p, sizeof p, "%s/csv/results/inference/device/DeepBench_iPhone_6__Kernels.csv", root);
    pp_test_write_text(p, "Precision,Int8 inputs 32 bit math\n");
}

static void make_mobile(char *root, size_t n)
{
    char p[2048];
    tmp_path(root, n, "mobile");
    mkdirs(root);
    snprintf(p, sizeof p, "%s/SOURCE.md", root);
    pp_test_write_text(p, MB_SOURCE);
    snprintf(p, sizeof p, "%s/tflite_cnn_ops_gpu.csv", root);
    pp_test_write_text(p, TFLITE_OPS);
    snprintf(p, sizeof p, "%s/torch_cnn_ops_gpu.csv", root);
    pp_test_write_text(p, TORCH_OPS);
}

/* ------------------------------------------------------------------ DeepBench ---- */

static void deepbench_should_map_gemm_and_conv_rows(void **state)
{
    (void)state;
    char root[1200];
    make_deepbench("db1", RPI3_SHEET, root, sizeof root);
    pp_layer_table *t = pp_measure_layer_table_new("test");
    pp_import_report rep;
    memset(&rep, 0, sizeof rep);
    pp_import_filter f = {NULL, NULL};
    pp_err err = {0};
    assert_int_equal(pp_datasets_deepbench_import(root, g_db, &f, t, &rep, &err), PERFPRED_OK);
    assert_int_equal(rep.n_files, 1);
    assert_int_equal(t->n, 4);
    assert_int_equal(rep.n_rows, 4);
    assert_int_equal(rep.n_bad, 3);
    assert_int_equal(t->bad.n, 3);
    assert_int_equal(rep.n_ignored, 1); /* line 15's note */
    const pp_import_device *d = dev_entry(&rep, "rpi3");
    assert_non_null(d);
    assert_string_equal(d->name, "Raspberry Pi 3");
    assert_int_equal(d->n_rows, 4);
    assert_int_equal(d->n_bad, 3);
    /* the iPhone 6 sheet: no descriptor, a note */
    assert_int_equal(rep.n_notes, 1);
    assert_non_null(strstr(rep.notes[0], "iPhone 6"));

    char in[256];
    const pp_layer_row *r = row_at(t, "rpi3", 3);
    assert_non_null(r);
    assert_string_equal(r->op_type, "Gemm");
    assert_int_equal(r->kind, PP_OPK_LINEAR);
    assert_int_equal(r->precision, PP_PREC_INT8);
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:5124x2048;w:2048x700");
    assert_int_equal(r->n_attrs, 0);
    assert_rel_close(r->latency_ms, 815.305, 1e-12);
    assert_string_equal(r->runtime, "deepbench");
    assert_string_equal(r->runtime_version, "Eigen 3.3.3; ARM Compute Library 17.05");
    assert_string_equal(r->source, "deepbench@da81ba7:csv/results/inference/device/"
                                   "DeepBench_Raspberry_Pi_3__Kernels.csv:3");
    assert_string_equal(r->date, "2017-07-14");
    /* A transposed: stored K x M */
    r = row_at(t, "rpi3", 4);
    assert_non_null(r);
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:1216x64;w:1216x1");
    assert_string_equal(attr_str(r, "transA"), "1");
    assert_string_equal(attr_str(r, "transB"), "");
    /* conv: S is the filter width, R its height; strides and pads (h, w) */
    r = row_at(t, "rpi3", 12);
    assert_non_null(r);
    assert_string_equal(r->op_type, "Conv");
    assert_int_equal(r->kind, PP_OPK_CONV);
    assert_int_equal(r->precision, PP_PREC_FP32); /* the sheet: conv results still in float */
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:1x1x40x151;w:32x1x5x20");
    assert_string_equal(attr_str(r, "kernel_shape"), "5,20");
    assert_string_equal(attr_str(r, "strides"), "2,8");
    assert_string_equal(attr_str(r, "pads"), "8,8,8,8");
    assert_int_equal(r->batch, 1);
    assert_rel_close(r->latency_ms, 12.5, 1e-12);
    r = row_at(t, "rpi3", 13);
    assert_non_null(r);
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:2x256x56x56;w:128x256x1x1");
    assert_int_equal(r->batch, 2);
    /* bad rows name file:line and why */
    assert_true(bad_mentions(t, "Kernels.csv:5", "Not Supported"));
    assert_true(bad_mentions(t, "Kernels.csv:6", "unlabelled column"));
    assert_true(bad_mentions(t, "Kernels.csv:14", "P = 27"));
    /* the sparse and RNN sections give nothing */
    assert_null(row_at(t, "rpi3", 9));
    assert_null(row_at(t, "rpi3", 17));
    pp_measure_layer_table_free(t);
}

static void deepbench_should_refuse_a_sheet_whose_precision_changed(void **state)
{
    (void)state;
    char root[1200], sheet[sizeof RPI3_SHEET + 64];
    snprintf(sheet, sizeof sheet, "Precision,Float\n%s", strchr(RPI3_SHEET, '\n') + 1);
    make_deepbench("db2", sheet, root, sizeof root);
    pp_layer_table *t = pp_measure_layer_table_new("test");
    pp_import_report rep;
    memset(&rep, 0, sizeof rep);
    pp_import_filter f = {NULL, NULL};
    pp_err err = {0};
    assert_int_equal(pp_datasets_deepbench_import(root, g_db, &f, t, &rep, &err),
                     PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "Kernels.csv:1"));
    assert_non_null(strstr(err.msg, "Float"));
    pp_measure_layer_table_free(t);
}

/* The real sheets, counted by hand from the CSVs: the Raspberry Pi 3 has 13 GEMM lines and 17
 * convolutions of which the first is "Not Supported"; the iPhone 7 has 13 GEMM lines and 17
 * convolutions without a time; the inference T4 sheet has 75 GEMM and 107 convolution lines, 4 and
 * 67 of them with Padded Kernels = 1. */
static void deepbench_should_import_the_real_sheets(void **state)
{
    (void)state;
    if (access(DATASETS "/deepbench/SOURCE.md", R_OK) != 0) skip();
    pp_layer_table *t = pp_measure_layer_table_new("test");
    pp_import_report rep;
    memset(&rep, 0, sizeof rep);
    pp_import_filter f = {NULL, NULL};
    pp_err err = {0};
    assert_int_equal(pp_datasets_deepbench_import(DATASETS "/deepbench", g_db, &f, t, &rep, &err),
                     PERFPRED_OK);
    const pp_import_device *d = dev_entry(&rep, "rpi3");
    assert_non_null(d);
    assert_int_equal(d->n_rows, 29);
    assert_int_equal(d->n_bad, 1);
    d = dev_entry(&rep, "iphone7");
    assert_non_null(d);
    assert_int_equal(d->n_rows, 13);
    assert_int_equal(d->n_bad, 17);
    /* the T4 has an int8 inference sheet and fp16 / fp32 training sheets */
    int t4_int8 = 0, t4_fp16 = 0, t4_fp32 = 0;
    for (int i = 0; i < t->n; i++) {
        if (strcmp(t->rows[i].device, "t4") != 0) continue;
        t4_int8 += t->rows[i].precision == PP_PREC_INT8;
        t4_fp16 += t->rows[i].precision == PP_PREC_FP16;
        t4_fp32 += t->rows[i].precision == PP_PREC_FP32;
    }
    assert_int_equal(t4_int8, 75 + 107 - 4 - 67);
    assert_true(t4_fp16 > 0 && t4_fp32 > 0);
    /* devices without a descriptor and the pseudo-FP16 sheet are notes, not rows */
    int notes_m40 = 0, notes_fp16 = 0;
    for (int i = 0; i < rep.n_notes; i++) {
        notes_m40 += strstr(rep.notes[i], "Tesla M40") != NULL;
        notes_fp16 += strstr(rep.notes[i], "Psuedo_FP16") != NULL;
    }
    assert_int_equal(notes_m40, 1);
    assert_int_equal(notes_fp16, 1);
    assert_null(dev_entry(&rep, "m40"));
    pp_measure_layer_table_free(t);
}

/* --------------------------------------------------------- mobile-ml-benchmark ---- */

static void mobile_should_map_tflite_and_torch_ops(void **state)
{
    (void)state;
    char root[1200];
    make_mobile(root, sizeof root);
    pp_layer_table *t = pp_measure_layer_table_new("test");
    pp_import_report rep;
    memset(&rep, 0, sizeof rep);
    pp_import_filter f = {NULL, NULL};
    pp_err err = {0};
    assert_int_equal(pp_datasets_mobile_import(root, g_db, &f, t, &rep, &err), PERFPRED_OK);
    assert_int_equal(rep.n_files, 2);
    /* pixel4: 6 TFLite + 4 PyTorch rows; bad: lines 7, 8, 9, 10 and torch 4, 7 */
    const pp_import_device *d = dev_entry(&rep, "pixel4-gpu");
    assert_non_null(d);
    assert_int_equal(d->n_rows, 10);
    assert_int_equal(d->n_bad, 6);
    d = dev_entry(&rep, "galaxy-s10-gpu");
    assert_non_null(d);
    assert_int_equal(d->n_rows, 7);
    assert_int_equal(d->n_bad, 3);
    d = dev_entry(&rep, "moto-one-fusion-gpu");
    assert_non_null(d);
    assert_int_equal(d->n_rows, 4);
    assert_int_equal(d->n_bad, 2);
    assert_int_equal(rep.n_notes, 1); /* zz|gpu|float: no descriptor zz-gpu */
    assert_non_null(strstr(rep.notes[0], "'zz'"));
    assert_int_equal(t->n, 21);

    char in[256];
    const pp_layer_row *r = NULL;
    for (int i = 0; i < t->n && !r; i++)
        if (t->rows[i].line == 2 && strcmp(t->rows[i].device, "pixel4-gpu") == 0 &&
            strcmp(t->rows[i].runtime, "tflite-gpu") == 0)
            r = &t->rows[i];
    assert_non_null(r);
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:1x3x224x224;w:64x3x1x1;w:64");
    assert_rel_close(r->latency_ms, 0.3204096, 1e-12); /* us -> ms */
    assert_int_equal(r->precision, PP_PREC_FP16);
    assert_string_equal(r->source, "mobile-ml-benchmark@40ba833:dataset/tflite_cnn_ops_gpu.csv:2;"
                                   "model=m1;kernel=convolution_2d_0");
    assert_string_equal(r->date, "2024-02-22");
    /* SAME with an odd total: 112 -> 56 by a 3x3 window at stride 2 pads 0 before, 1 after */
    r = row_at(t, "galaxy-s10-gpu", 3);
    assert_non_null(r);
    assert_string_equal(attr_str(r, "pads"), "0,0,1,1");
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:1x16x112x112;w:32x16x3x3;w:32");
    /* depthwise: Filter is the multiplier */
    r = row_at(t, "galaxy-s10-gpu", 4);
    assert_non_null(r);
    assert_int_equal(r->kind, PP_OPK_DWCONV);
    assert_string_equal(attr_str(r, "group"), "384");
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:1x384x31x31;w:384x1x5x5;w:384");
    r = row_at(t, "galaxy-s10-gpu", 5);
    assert_non_null(r);
    assert_string_equal(r->op_type, "GlobalAveragePool");
    r = row_at(t, "galaxy-s10-gpu", 6);
    assert_non_null(r);
    inputs_str(r, in, sizeof in);
    assert_string_equal(in, "x:1x2048;w:1000x2048;w:1000");
    assert_string_equal(attr_str(r, "transB"), "1");
    /* pixel4 had no latency on line 9, s10 did (the torch file has no line 9) */
    assert_non_null(row_at(t, "galaxy-s10-gpu", 9));
    assert_null(row_at(t, "pixel4-gpu", 9));
    r = row_at(t, "galaxy-s10-gpu", 11);
    assert_non_null(r);
    assert_string_equal(r->op_type, "MaxPool");
    assert_string_equal(attr_str(r, "pads"), "0,0,0,0");
    /* PyTorch: groups from filter_size, ceil mode from the output size */
    r = row_at(t, "moto-one-fusion-gpu", 2);
    assert_non_null(r);
    assert_string_equal(r->runtime, "pytorch-mobile-gpu");
    assert_int_equal(r->kind, PP_OPK_DWCONV);
    assert_string_equal(attr_str(r, "group"), "384");
    assert_string_equal(attr_str(r, "pads"), "2,2,2,2");
    assert_rel_close(r->latency_ms, 0.39088, 1e-12);
    r = row_at(t, "moto-one-fusion-gpu", 3);
    assert_non_null(r);
    assert_string_equal(attr_str(r, "ceil_mode"), "1");
    r = row_at(t, "moto-one-fusion-gpu", 5);
    assert_non_null(r);
    assert_string_equal(r->op_type, "Relu");
    r = row_at(t, "moto-one-fusion-gpu", 6);
    assert_non_null(r);
    assert_string_equal(r->op_type, "Gemm");
    assert_null(row_at(t, "moto-one-fusion-gpu", 4));
    assert_null(row_at(t, "moto-one-fusion-gpu", 7));
    /* why */
    assert_true(bad_mentions(t, "tflite_cnn_ops_gpu.csv:7", "CONCATENATION"));
    assert_true(bad_mentions(t, "tflite_cnn_ops_gpu.csv:8", "FLOPS 100"));
    assert_true(bad_mentions(t, "tflite_cnn_ops_gpu.csv:9", "pixel4: no latency"));
    assert_true(bad_mentions(t, "tflite_cnn_ops_gpu.csv:10", "pixel4: latency '-5'"));
    assert_true(bad_mentions(t, "tflite_cnn_ops_gpu.csv:10", "s10: latency 'nan'"));
    assert_true(bad_mentions(t, "torch_cnn_ops_gpu.csv:4", "second operand"));
    assert_true(bad_mentions(t, "torch_cnn_ops_gpu.csv:7", "groups 2"));
    pp_measure_layer_table_free(t);
}

/* The real files, counted independently: 5,556 TFLite lines of which 301 are CONCATENATION, on six
 * phones (mi8se, a03s and iphone7 only in this file); 7,286 PyTorch lines of which 1,477 are
 * aten::add, aten::mul, aten::clamp or pools without a recorded window (onefusion only there). */
static void mobile_should_import_the_real_files(void **state)
{
    (void)state;
    if (access(DATASETS "/mobile-ml-benchmark/SOURCE.md", R_OK) != 0) skip();
    pp_layer_table *t = pp_measure_layer_table_new("test");
    pp_import_report rep;
    memset(&rep, 0, sizeof rep);
    pp_import_filter f = {NULL, NULL};
    pp_err err = {0};
    assert_int_equal(pp_datasets_mobile_import(DATASETS "/mobile-ml-benchmark", g_db, &f, t, &rep,
                                               &err),
                     PERFPRED_OK);
    static const char *const tflite_only[] = {"mi8se-gpu", "galaxy-a03s-gpu", "iphone7-gpu"};
    for (int i = 0; i < 3; i++) {
        const pp_import_device *d = dev_entry(&rep, tflite_only[i]);
        assert_non_null(d);
        assert_int_equal(d->n_rows, 5556 - 301);
        assert_int_equal(d->n_bad, 301);
    }
    const pp_import_device *d = dev_entry(&rep, "moto-one-fusion-gpu");
    assert_non_null(d);
    assert_int_equal(d->n_rows, 7286 - 1477);
    assert_int_equal(d->n_bad, 1477);
    d = dev_entry(&rep, "pixel4-gpu");
    assert_non_null(d);
    assert_int_equal(d->n_rows, 5556 - 301 + 7286 - 1477);
    pp_measure_layer_table_free(t);
}

/* ------------------------------------------------------------- public entry, CLI ---- */

static void import_should_filter_and_write_a_layer_csv(void **state)
{
    (void)state;
    char root[1200], out[1200];
    make_mobile(root, sizeof root);
    tmp_path(out, sizeof out, "pixel4_tflite.csv");
    perfpred_import_params p = perfpred_import_default_params();
    p.dataset = "mobile-ml-benchmark";
    p.root = root;
    p.out_csv = out;
    p.device = "pixel4-gpu";
    p.runtime = "tflite-gpu";
    p.config_dir = PP_SOURCE_DIR "/configs";
    perfpred_import_report r;
    char err[1024];
    assert_int_equal(perfpred_calibrate_import(&p, &r, err, sizeof err), PERFPRED_OK);
    assert_int_equal(r.n_rows, 6);
    assert_int_equal(r.n_bad_rows, 4);
    assert_int_equal(r.n_devices, 1);
    assert_string_equal(r.devices[0].device, "pixel4-gpu");
    assert_true(r.n_filtered > 0);
    assert_int_equal(r.n_msgs, 4);
    pp_layer_table *t = NULL;
    pp_err e = {0};
    assert_int_equal(pp_measure_layer_csv_read(out, &t, &e), PERFPRED_OK);
    assert_int_equal(t->n, 6);
    assert_int_equal(t->bad.n, 0);
    for (int i = 0; i < t->n; i++) {
        assert_string_equal(t->rows[i].device, "pixel4-gpu");
        assert_string_equal(t->rows[i].runtime, "tflite-gpu");
    }
    pp_measure_layer_table_free(t);
    /* a device the dataset does not have: nothing to write, an error */
    p.device = "rpi3";
    assert_int_equal(perfpred_calibrate_import(&p, &r, err, sizeof err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "no row"));
    p.device = "no-such-device";
    assert_int_equal(perfpred_calibrate_import(&p, &r, err, sizeof err), PERFPRED_ERR_DEVICE);
    p.device = NULL;
    p.dataset = "deepbench2";
    assert_int_equal(perfpred_calibrate_import(&p, &r, err, sizeof err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "deepbench2"));
}

static int run_cli(const char *args)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1", CLI, args);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void cli_import_should_use_documented_exit_codes(void **state)
{
    (void)state;
    if (access(CLI, X_OK) != 0) skip();
    char root[1200], out[1200], args[4096];
    make_deepbench("db3", RPI3_SHEET, root, sizeof root);
    tmp_path(out, sizeof out, "cli_rpi3.csv");
    snprintf(args, sizeof args, "calibrate import --dataset deepbench --root '%s' -o '%s' "
             "--device rpi3 --config-dir '%s/configs'", root, out, PP_SOURCE_DIR);
    assert_int_equal(run_cli(args), 0);
    assert_int_equal(access(out, R_OK), 0);
    assert_int_equal(run_cli("calibrate import --dataset deepbench -o x.csv"), 1);
    assert_int_equal(run_cli("calibrate import --dataset nope --root . -o x.csv"), 1);
    snprintf(args, sizeof args, "calibrate import --dataset deepbench --root '%s/none' -o '%s'",
             g_tmp, out);
    assert_int_equal(run_cli(args), 2);
    snprintf(args, sizeof args, "calibrate import --dataset deepbench --root '%s' -o '%s' "
             "--device no-such-device", root, out);
    assert_int_equal(run_cli(args), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deepbench_should_map_gemm_and_conv_rows),
        cmocka_unit_test(deepbench_should_refuse_a_sheet_whose_precision_changed),
        cmocka_unit_test(deepbench_should_import_the_real_sheets),
        cmocka_unit_test(mobile_should_map_tflite_and_torch_ops),
        cmocka_unit_test(mobile_should_import_the_real_files),
        cmocka_unit_test(import_should_filter_and_write_a_layer_csv),
        cmocka_unit_test(cli_import_should_use_documented_exit_codes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
