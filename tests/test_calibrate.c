/* tests/test_calibrate.c: measurement CSVs (strict reading, bad rows with file:line, round trips),
 * accuracy metrics against hand-computed values, the NeuSight importer on the real tables, and
 * layer rows rebuilt as single-node graphs (features as graph/ computes them for model nodes). */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit/fit.h"

#define NEUSIGHT_ROOT PP_SOURCE_DIR "/../shared/datasets/neusight"
#define A100_40 "NVIDIA A100-PCIE-40GB"

static const char *HEADER =
    "device,runtime,runtime_version,precision,op_kind,op_type,batch,inputs,attrs,latency_ms,"
    "latency_spread_ms,repetitions,energy_j,memory_bytes,source,date\n";

static int has_neusight(void) { return access(NEUSIGHT_ROOT "/SOURCE.md", R_OK) == 0; }

static const char *write_tmp(const char *text)
{
    const char *p = pp_test_tmpfile(text, strlen(text), ".csv");
    assert_non_null(p);
    return p;
}

/* Is there a kept bad-row message that starts with "<path>:<line>:" and mentions what? */
static int bad_has(const pp_bad_rows *b, const char *path, int line, const char *what)
{
    char prefix[4200];
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    for (int i = 0; i < b->n_kept; i++)
        if (strncmp(b->msgs[i], prefix, strlen(prefix)) == 0 && strstr(b->msgs[i], what)) return 1;
    return 0;
}

/* ------------------------------------------------------------------ layer CSV ---- */

static void layer_csv_should_read_good_rows(void **state)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s%s", HEADER,
             "a100-pcie-40gb,pytorch-eager,torch 2.1,fp32,linear,Gemm,1,x:58x13;w:141x13;w:141,"
             "transB:i=1,0.0545,0.001,100,0.5,4096,runner:1,2025-06-23\n",
             "host-cpu,pytorch-eager,,tf32,conv,Conv,8,\"x:8x3x32x32;w:16x3x3x3\","
             "\"kernel_shape:ints=3,3;pads:ints=1,1,1,1;alpha:f=0.5;mode:s=abc\",2.5,,,,,r2,2024-01-31\n");
    const char *path = write_tmp(text);
    pp_layer_table *t;
    pp_err err = {0};
    assert_int_equal(pp_measure_layer_csv_read(path, &t, &err), PERFPRED_OK);
    assert_int_equal(t->n, 2);
    assert_int_equal(t->bad.n, 0);
    const pp_layer_row *r = &t->rows[0];
    assert_string_equal(r->device, "a100-pcie-40gb");
    assert_int_equal(r->kind, PP_OPK_LINEAR);
    assert_int_equal(r->n_inputs, 3);
    assert_int_equal(r->inputs[1].role, 'w');
    assert_int_equal(r->inputs[1].dims[0], 141);
    assert_int_equal(r->inputs[1].dims[1], 13);
    assert_int_equal(r->n_attrs, 1);
    assert_string_equal(r->attrs[0].name, "transB");
    assert_int_equal(r->attrs[0].i, 1);
    assert_true(r->latency_ms == 0.0545);
    assert_true(r->latency_spread_ms == 0.001);
    assert_int_equal(r->repetitions, 100);
    assert_true(r->energy_j == 0.5);
    assert_int_equal(r->memory_bytes, 4096);
    assert_int_equal(r->line, 2);
    r = &t->rows[1];
    assert_int_equal(r->precision, PP_PREC_TF32);
    assert_int_equal(r->n_attrs, 4);
    assert_int_equal(r->attrs[1].type, PP_ATTR_INTS);
    assert_int_equal(r->attrs[1].n, 4);
    assert_true(r->attrs[2].f == 0.5);
    assert_string_equal(r->attrs[3].s, "abc");
    assert_true(isnan(r->latency_spread_ms));
    assert_int_equal(r->repetitions, -1);
    assert_true(isnan(r->energy_j));
    assert_int_equal(r->memory_bytes, -1);
    assert_string_equal(r->runtime_version, "");
    pp_measure_layer_table_free(t);
}

static void layer_csv_should_count_bad_rows_with_file_and_line(void **state)
{
    const char *good = "d,rt,,fp32,elemwise,Relu,1,x:4x4,,0.1,,,,,s,2025-01-01\n";
    char text[4096];
    snprintf(text, sizeof text,
             "%s%s"
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,0.1,,,,,s\n"              /* 3: missing field */
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,-0.1,,,,,s,2025-01-01\n"   /* 4: latency <= 0 */
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,nan,,,,,s,2025-01-01\n"    /* 5: NaN */
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,12ms,,,,,s,2025-01-01\n"   /* 6: unparsable */
             "d,rt,,fp32,elemwise,Relu,1,y:4x4,,0.1,,,,,s,2025-01-01\n"    /* 7: bad input role */
             "d,rt,,fp32,elemwise,Relu,0,x:4x4,,0.1,,,,,s,2025-01-01\n"    /* 8: batch 0 */
             "d,rt,,fp99,elemwise,Relu,1,x:4x4,,0.1,,,,,s,2025-01-01\n"    /* 9: precision */
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,k:q=1,0.1,,,,,s,2025-01-01\n"  /* 10: attr type */
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,0.1,,1.5,,,s,2025-01-01\n" /* 11: reps not int */
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,0.1,,,,,s,2025-13-01\n"    /* 12: date */
             "d,rt,,fp32,elemwise,Relu,1,x:4x0,,0.1,,,,,s,2025-01-01\n"    /* 13: zero dim */
             "\n"                                                         /* 14: blank: skipped */
             "%s",                                                        /* 15: good */
             HEADER, good, good);
    const char *path = write_tmp(text);
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", path);
    pp_layer_table *t;
    pp_err err = {0};
    assert_int_equal(pp_measure_layer_csv_read(saved, &t, &err), PERFPRED_OK);
    assert_int_equal(t->n, 2);
    assert_int_equal(t->bad.n, 11);
    assert_int_equal(t->bad.n_kept, 11);
    assert_true(bad_has(&t->bad, saved, 3, "15 fields"));
    assert_true(bad_has(&t->bad, saved, 4, "latency_ms"));
    assert_true(bad_has(&t->bad, saved, 5, "latency_ms"));
    assert_true(bad_has(&t->bad, saved, 6, "12ms"));
    assert_true(bad_has(&t->bad, saved, 7, "y:4x4"));
    assert_true(bad_has(&t->bad, saved, 8, "batch"));
    assert_true(bad_has(&t->bad, saved, 9, "fp99"));
    assert_true(bad_has(&t->bad, saved, 10, "unknown type"));
    assert_true(bad_has(&t->bad, saved, 11, "repetitions"));
    assert_true(bad_has(&t->bad, saved, 12, "date"));
    assert_true(bad_has(&t->bad, saved, 13, "dims"));
    assert_int_equal(t->rows[0].line, 2);
    assert_int_equal(t->rows[1].line, 15);
    pp_measure_layer_table_free(t);
}

/* HEADER and rows written to a file (its path in saved) and read as a layer table. */
static pp_layer_table *read_layer_rows(const char *rows, char *saved, size_t saved_n)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", HEADER, rows);
    snprintf(saved, saved_n, "%s", write_tmp(text));
    pp_layer_table *t = NULL;
    pp_err err = {0};
    assert_int_equal(pp_measure_layer_csv_read(saved, &t, &err), PERFPRED_OK);
    return t;
}

/* Row r rebuilt as a graph (the caller frees it); *y its node's output. */
static pp_graph *rebuilt(const pp_layer_row *r, const pp_tensor **y)
{
    pp_graph *g = NULL;
    int node = -1;
    pp_err err = {0};
    assert_int_equal(pp_layer_row_graph(r, &g, &node, &err), PERFPRED_OK);
    *y = &g->tensors[g->nodes[node].outputs[0]];
    return g;
}

/* A weight may come first only in a Concat (a ViT's class token), and only beside an activation;
 * such a row rebuilds with the weight in front. */
static void layer_csv_should_take_a_weight_first_only_in_a_concat(void **state)
{
    (void)state;
    char saved[4096];
    pp_layer_table *t = read_layer_rows(
        "d,rt,,fp32,datamove,Concat,1,w:1x1x768;x:1x49x768,axis:i=1,0.01,,,,,s,2025-01-01\n"
        "d,rt,,fp32,elemwise,Sub,1,w:1x1x768;x:1x49x768,,0.01,,,,,s,2025-01-01\n" /* 3 */
        "d,rt,,fp32,datamove,Concat,1,w:1x1x768;w:1x49x768,axis:i=1,0.01,,,,,s,2025-01-01\n",
        saved, sizeof saved);
    assert_int_equal(t->n, 1);
    assert_int_equal(t->bad.n, 2);
    assert_true(bad_has(&t->bad, saved, 3, "first input must be an activation"));
    assert_true(bad_has(&t->bad, saved, 4, "no input is an activation"));
    const pp_layer_row *r = &t->rows[0];
    assert_int_equal(r->inputs[0].role, 'w');
    assert_int_equal(r->inputs[1].role, 'x');
    const pp_tensor *y = NULL;
    pp_graph *g = rebuilt(r, &y);
    assert_int_equal(y->rank, 3);
    assert_true(y->dims[0] == 1 && y->dims[1] == 50 && y->dims[2] == 768);
    assert_int_equal(g->n_inputs, 1); /* the activation; the class token is a weight */
    assert_int_equal(g->nodes[0].feat.kind, PP_OPK_DATAMOVE);
    pp_graph_free(g);
    pp_measure_layer_table_free(t);
}

/* A Concat of 8 inputs (two past what a row holds in itself) reads, rebuilds and writes back as
 * it was. */
static void layer_csv_should_keep_every_input_of_a_wide_concat(void **state)
{
    (void)state;
    char saved[4096];
    pp_layer_table *t = read_layer_rows(
        "d,rt,,fp32,datamove,Concat,1,x:1x64x8x8;x:1x1x8x8;x:1x2x8x8;x:1x3x8x8;x:1x4x8x8;"
        "x:1x5x8x8;x:1x6x8x8;x:1x7x8x8,axis:i=1,0.01,,,,,s,2025-01-01\n",
        saved, sizeof saved);
    assert_int_equal(t->n, 1);
    const pp_layer_row *r = &t->rows[0];
    assert_int_equal(r->n_inputs, 8);
    for (int k = 1; k < 8; k++) assert_int_equal(pp_layer_row_input(r, k)->dims[1], k);
    const pp_tensor *y = NULL;
    pp_graph *g = rebuilt(r, &y);
    assert_true(y->rank == 4 && y->dims[1] == 64 + 28 && y->dims[3] == 8);
    assert_int_equal(g->n_inputs, 8);
    pp_graph_free(g);
    char *out = NULL;
    size_t len = 0;
    pp_err err = {0};
    assert_int_equal(pp_measure_layer_csv_format(t->rows, 1, &out, &len, &err), PERFPRED_OK);
    assert_non_null(strstr(out, "x:1x64x8x8;x:1x1x8x8;x:1x2x8x8;x:1x3x8x8;x:1x4x8x8;x:1x5x8x8;"
                                "x:1x6x8x8;x:1x7x8x8,axis:i=1,"));
    free(out);
    /* its configuration key (a fit's split, the adaptive plan) names all eight inputs: the key
     * once read inputs[] past its six, out of bounds (UBSan; a crash in a Zen 4 guest's fit) */
    pp_strbuf key = {0};
    pp_measure_config_key(r, &key);
    assert_false(key.oom);
    assert_string_equal(key.data, "Concat|xx1x64x8x8|xx1x1x8x8|xx1x2x8x8|xx1x3x8x8|xx1x4x8x8"
                                  "|xx1x5x8x8|xx1x6x8x8|xx1x7x8x8|axis=1");
    free(key.data);
    pp_measure_layer_table_free(t);
}

static void layer_csv_should_count_lines_across_crlf_and_quoted_newlines(void **state)
{
    char text[2048];
    /* header CRLF; line 2-3: one record whose runtime_version holds a newline; line 4: bad */
    snprintf(text, sizeof text,
             "%.*s\r\n"
             "d,rt,\"two\nlines\",fp32,elemwise,Relu,1,x:4x4,,0.1,,,,,s,2025-01-01\r\n"
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,zero,,,,,s,2025-01-01\r\n"
             "d,rt,,fp32,elemwise,Relu,1,x:4x4,,0.2,,,,,s,2025-01-01",   /* 5: no final newline */
             (int)strlen(HEADER) - 1, HEADER);
    const char *p = write_tmp(text);
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", p);
    pp_layer_table *t;
    pp_err err = {0};
    assert_int_equal(pp_measure_layer_csv_read(saved, &t, &err), PERFPRED_OK);
    assert_int_equal(t->n, 2);
    assert_int_equal(t->bad.n, 1);
    assert_true(bad_has(&t->bad, saved, 4, "zero"));
    assert_string_equal(t->rows[0].runtime_version, "two\nlines");
    assert_int_equal(t->rows[0].line, 2);
    assert_int_equal(t->rows[1].line, 5);
    assert_true(t->rows[1].latency_ms == 0.2);
    pp_measure_layer_table_free(t);
}

static void layer_csv_should_reject_bad_headers(void **state)
{
    pp_layer_table *t = NULL;
    pp_err err = {0};
    /* missing column */
    const char *p = write_tmp("device,runtime\nx,y\n");
    assert_int_equal(pp_measure_layer_csv_read(p, &t, &err), PERFPRED_ERR_PARSE);
    assert_null(t);
    assert_non_null(strstr(err.msg, ":1: missing column 'runtime_version'"));
    /* unknown column */
    char text[1024];
    snprintf(text, sizeof text, "%.*s,speed\n", (int)strlen(HEADER) - 1, HEADER);
    p = write_tmp(text);
    assert_int_equal(pp_measure_layer_csv_read(p, &t, &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "unknown column 'speed'"));
    /* duplicate column */
    snprintf(text, sizeof text, "%.*s,date\n", (int)strlen(HEADER) - 1, HEADER);
    p = write_tmp(text);
    assert_int_equal(pp_measure_layer_csv_read(p, &t, &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "duplicate column 'date'"));
    /* empty file */
    p = write_tmp("");
    assert_int_equal(pp_measure_layer_csv_read(p, &t, &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "no header"));
}

static void layer_csv_should_reject_malformed_quotes_naming_line(void **state)
{
    char text[1024];
    snprintf(text, sizeof text, "%sd,rt,,fp32,elemwise,Relu,1,x:4x4,,0.1,,,,,s,2025-01-01\n"
                                "d,rt,\"a\"b,fp32,elemwise,Relu,1,x:4x4,,0.1,,,,,s,2025-01-01\n",
             HEADER);
    const char *p = write_tmp(text);
    pp_layer_table *t = NULL;
    pp_err err = {0};
    assert_int_equal(pp_measure_layer_csv_read(p, &t, &err), PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, ":3: malformed CSV"));
}

static void layer_csv_should_round_trip_through_write(void **state)
{
    pp_layer_row r;
    memset(&r, 0, sizeof r);
    r.device = "dev";
    r.runtime = "pytorch-eager";
    r.runtime_version = "torch 2.1, \"quoted\"";
    r.precision = PP_PREC_FP16;
    r.kind = PP_OPK_NORM;
    r.op_type = "LayerNormalization";
    r.batch = 3;
    r.n_inputs = 3;
    r.inputs[0] = (pp_layer_input){'x', 3, {3, 7, 64}};
    r.inputs[1] = (pp_layer_input){'w', 1, {64}};
    r.inputs[2] = (pp_layer_input){'-', -1, {0}};
    r.n_attrs = 2;
    r.attrs[0].name = "epsilon";
    r.attrs[0].type = PP_ATTR_FLOAT;
    r.attrs[0].f = 1e-5;
    r.attrs[1].name = "axes";
    r.attrs[1].type = PP_ATTR_INTS;
    r.attrs[1].n = 2;
    r.attrs[1].ints[0] = -1;
    r.attrs[1].ints[1] = 2;
    r.latency_ms = 0.1 + 0.2; /* 0.30000000000000004: needs 17 digits */
    r.latency_spread_ms = NAN;
    r.repetitions = 50;
    r.energy_j = NAN;
    r.memory_bytes = 0;
    r.source = "src, with comma";
    r.date = "2025-02-03";
    char path[4096];
    snprintf(path, sizeof path, "%s/pp_test_roundtrip_%ld.csv", PP_BINARY_DIR, (long)getpid());
    pp_err err = {0};
    assert_int_equal(pp_measure_layer_csv_write(path, &r, 1, &err), PERFPRED_OK);
    pp_layer_table *t;
    assert_int_equal(pp_measure_layer_csv_read(path, &t, &err), PERFPRED_OK);
    assert_int_equal(t->n, 1);
    assert_int_equal(t->bad.n, 0);
    const pp_layer_row *q = &t->rows[0];
    assert_string_equal(q->runtime_version, r.runtime_version);
    assert_string_equal(q->source, r.source);
    assert_int_equal(q->precision, PP_PREC_FP16);
    assert_int_equal(q->n_inputs, 3);
    assert_int_equal(q->inputs[2].role, '-');
    assert_int_equal(q->inputs[0].dims[2], 64);
    assert_true(q->attrs[0].f == 1e-5);
    assert_int_equal(q->attrs[1].ints[0], -1);
    assert_true(q->latency_ms == r.latency_ms);
    assert_true(isnan(q->latency_spread_ms));
    assert_int_equal(q->repetitions, 50);
    assert_int_equal(q->memory_bytes, 0);
    pp_measure_layer_table_free(t);
    unlink(path);
}

/* ---------------------------------------------------------------- network CSV ---- */

static void net_csv_should_read_rows_and_count_bad_ones(void **state)
{
    const char *text =
        "model,family,device,runtime,runtime_version,precision,batch,input_shapes,latency_ms,"
        "latency_spread_ms,repetitions,energy_j,peak_memory_bytes,source,date\n"
        "models/resnet18.onnx,resnet,host-cpu,pytorch-eager,torch 1.13,fp32,8,input:8x3x224x224,"
        "41.5,0.8,30,,123456789,runner:host:1,2025-03-01\n"
        "models/resnet18.onnx,resnet,host-cpu,pytorch-eager,,fp32,8,input-8x3,41.5,,,,,r,2025-03-01\n"
        "models/resnet18.onnx,resnet,host-cpu,pytorch-eager,,fp32,8,,0,,,,,r,2025-03-01\n";
    const char *p = write_tmp(text);
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", p);
    pp_net_table *t;
    pp_err err = {0};
    assert_int_equal(pp_measure_net_csv_read(saved, &t, &err), PERFPRED_OK);
    assert_int_equal(t->n, 1);
    assert_int_equal(t->bad.n, 2);
    assert_true(bad_has(&t->bad, saved, 3, "input_shapes"));
    assert_true(bad_has(&t->bad, saved, 4, "latency_ms"));
    assert_string_equal(t->rows[0].family, "resnet");
    assert_int_equal(t->rows[0].batch, 8);
    assert_int_equal(t->rows[0].peak_memory_bytes, 123456789);
    assert_true(isnan(t->rows[0].energy_j));
    /* and back */
    char out[4096];
    snprintf(out, sizeof out, "%s/pp_test_net_%ld.csv", PP_BINARY_DIR, (long)getpid());
    assert_int_equal(pp_measure_net_csv_write(out, t->rows, t->n, &err), PERFPRED_OK);
    pp_net_table *t2;
    assert_int_equal(pp_measure_net_csv_read(out, &t2, &err), PERFPRED_OK);
    assert_int_equal(t2->n, 1);
    assert_true(t2->rows[0].latency_ms == 41.5);
    assert_string_equal(t2->rows[0].input_shapes, "input:8x3x224x224");
    pp_measure_net_table_free(t2);
    pp_measure_net_table_free(t);
    unlink(out);
}

/* -------------------------------------------------------------------- metrics ---- */

static void metrics_should_match_hand_computed_values(void **state)
{
    /* relative errors +0.1, -0.1, +1.0, -0.5, 0 */
    const double meas[] = {100, 200, 50, 10, 4};
    const double pred[] = {110, 180, 100, 5, 4};
    pp_metrics m;
    pp_err err = {0};
    assert_int_equal(pp_measure_metrics(pred, meas, 5, &m, &err), PERFPRED_OK);
    assert_int_equal(m.n, 5);
    assert_rel_close(m.mape_pct, 100.0 * (0.1 + 0.1 + 1.0 + 0.5 + 0) / 5, 1e-12); /* 34 % */
    assert_rel_close(m.rmspe_pct, 100.0 * sqrt((0.01 + 0.01 + 1.0 + 0.25) / 5), 1e-12);
    assert_rel_close(m.within10_pct, 60.0, 1e-12); /* +-0.1 count as within, and the exact one */
    /* ranks: meas 4 5 3 2 1, pred 4 5 3 2 1 -> identical order */
    assert_rel_close(m.spearman, 1.0, 1e-12);
    /* |ln(pred / meas)|: ln 1.1, ln(10 / 9), ln 2, ln 2 (2x slow and 2x fast weigh the same), 0 */
    assert_rel_close(m.mean_abs_log, (log(1.1) + log(10.0 / 9.0) + 2 * log(2.0)) / 5, 1e-12);
    /* one row 10x slow among rows 50 % off: the MAPE ranks it worst, the log error does not */
    const double meas2[] = {1, 1, 1, 1, 1, 1, 1, 1}, slow[] = {10, 1, 1, 1, 1, 1, 1, 1},
                 off[] = {1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5};
    pp_metrics a, b;
    assert_int_equal(pp_measure_metrics(slow, meas2, 8, &a, &err), PERFPRED_OK);
    assert_int_equal(pp_measure_metrics(off, meas2, 8, &b, &err), PERFPRED_OK);
    assert_rel_close(a.mape_pct, 112.5, 1e-12);       /* 900 % / 8 against 50 % */
    assert_rel_close(b.mape_pct, 50.0, 1e-12);
    assert_rel_close(a.mean_abs_log, log(10.0) / 8, 1e-12); /* 0.29 against ln 1.5 = 0.41 */
    assert_rel_close(b.mean_abs_log, log(1.5), 1e-12);
    /* a prediction that is not > 0 has an infinite log error */
    const double zero[] = {0, 1, 1, 1};
    assert_int_equal(pp_measure_metrics(zero, meas2, 4, &a, &err), PERFPRED_OK);
    assert_true(isinf(a.mean_abs_log));
}

static void spearman_should_average_tied_ranks(void **state)
{
    /* a ranks {1, 2.5, 2.5, 4}, b ranks {1, 3, 2, 4}: rho = 4.5 / sqrt(4.5 * 5) = sqrt(0.9) */
    const double a[] = {1, 2, 2, 3}, b[] = {10, 30, 20, 40};
    assert_rel_close(pp_measure_spearman(a, b, 4), sqrt(0.9), 1e-12);
    const double up[] = {1, 2, 3, 4}, down[] = {40, 30, 20, 10};
    assert_rel_close(pp_measure_spearman(up, down, 4), -1.0, 1e-12);
    const double flat[] = {5, 5, 5, 5};
    assert_true(isnan(pp_measure_spearman(a, flat, 4)));
    assert_true(isnan(pp_measure_spearman(a, b, 1)));
}

static void metrics_should_split_by_group_and_reject_bad_input(void **state)
{
    const double meas[] = {1, 2, 4, 8};
    const double pred[] = {1.5, 2, 2, 8};
    const int group[] = {0, 1, 0, 1};
    pp_metrics m[3];
    pp_err err = {0};
    assert_int_equal(pp_measure_metrics_by_group(pred, meas, group, 4, 3, m, &err), PERFPRED_OK);
    assert_int_equal(m[0].n, 2);
    assert_rel_close(m[0].mape_pct, 100.0 * (0.5 + 0.5) / 2, 1e-12);
    assert_true(m[0].within10_pct == 0.0);
    assert_int_equal(m[1].n, 2);
    assert_true(m[1].mape_pct == 0.0);
    assert_true(m[1].within10_pct == 100.0);
    assert_int_equal(m[2].n, 0);
    assert_true(isnan(m[2].mape_pct));
    const double zero[] = {1, 0};
    assert_int_equal(pp_measure_metrics(pred, zero, 2, m, &err), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "measurement 1"));
    const double nanp[] = {NAN, 1};
    assert_int_equal(pp_measure_metrics(nanp, meas, 2, m, &err), PERFPRED_ERR_INVALID_ARG);
    const int badg[] = {0, 5, 0, 0};
    assert_int_equal(pp_measure_metrics_by_group(pred, meas, badg, 4, 3, m, &err),
                     PERFPRED_ERR_INVALID_ARG);
}

/* ------------------------------------------------------ layer rows as graphs ---- */

static pp_layer_row base_row(const char *op_type, pp_op_kind kind)
{
    pp_layer_row r;
    memset(&r, 0, sizeof r);
    r.device = "d";
    r.runtime = "rt";
    r.precision = PP_PREC_FP32;
    r.kind = kind;
    r.op_type = op_type;
    r.batch = 1;
    r.latency_ms = 1;
    r.source = "unit";
    r.date = "2025-01-01";
    return r;
}

static void layer_row_graph_should_count_like_graph_features(void **state)
{
    pp_err err = {0};
    pp_node_feat f;
    /* Gemm [58,13] x [141,13]^T + bias[141] */
    pp_layer_row r = base_row("Gemm", PP_OPK_LINEAR);
    r.n_inputs = 3;
    r.inputs[0] = (pp_layer_input){'x', 2, {58, 13}};
    r.inputs[1] = (pp_layer_input){'w', 2, {141, 13}};
    r.inputs[2] = (pp_layer_input){'w', 1, {141}};
    r.n_attrs = 1;
    r.attrs[0].name = "transB";
    r.attrs[0].type = PP_ATTR_INT;
    r.attrs[0].i = 1;
    assert_int_equal(pp_layer_row_features(&r, &f, &err), PERFPRED_OK);
    assert_int_equal(f.kind, PP_OPK_LINEAR);
    assert_rel_close(f.macs, 58.0 * 13 * 141, 1e-12);
    assert_rel_close(f.flops, 2.0 * 58 * 13 * 141 + 58 * 141, 1e-12);
    assert_rel_close(f.param_bytes, 4.0 * (141 * 13 + 141), 1e-12);
    assert_rel_close(f.in_bytes, 4.0 * 58 * 13, 1e-12);
    assert_rel_close(f.out_bytes, 4.0 * 58 * 141, 1e-12);

    /* bmm [6,27,21] x [6,21,390] */
    r = base_row("MatMul", PP_OPK_BMM);
    r.n_inputs = 2;
    r.inputs[0] = (pp_layer_input){'x', 3, {6, 27, 21}};
    r.inputs[1] = (pp_layer_input){'x', 3, {6, 21, 390}};
    assert_int_equal(pp_layer_row_features(&r, &f, &err), PERFPRED_OK);
    assert_int_equal(f.kind, PP_OPK_BMM);
    assert_rel_close(f.macs, 6.0 * 27 * 21 * 390, 1e-12);
    assert_true(f.param_bytes == 0.0);
    assert_rel_close(f.in_bytes, 4.0 * (6 * 27 * 21 + 6 * 21 * 390), 1e-12);

    /* Conv 38x893x5x5, 326 filters 3x3, stride 1, pad 1 -> 38x326x5x5 */
    r = base_row("Conv", PP_OPK_CONV);
    r.precision = PP_PREC_TF32;
    r.n_inputs = 3;
    r.inputs[0] = (pp_layer_input){'x', 4, {38, 893, 5, 5}};
    r.inputs[1] = (pp_layer_input){'w', 4, {326, 893, 3, 3}};
    r.inputs[2] = (pp_layer_input){'w', 1, {326}};
    r.n_attrs = 2;
    r.attrs[0].name = "kernel_shape";
    r.attrs[0].type = PP_ATTR_INTS;
    r.attrs[0].n = 2;
    r.attrs[0].ints[0] = r.attrs[0].ints[1] = 3;
    r.attrs[1].name = "pads";
    r.attrs[1].type = PP_ATTR_INTS;
    r.attrs[1].n = 4;
    for (int i = 0; i < 4; i++) r.attrs[1].ints[i] = 1;
    assert_int_equal(pp_layer_row_features(&r, &f, &err), PERFPRED_OK);
    assert_int_equal(f.kind, PP_OPK_CONV);
    assert_int_equal(f.hout, 5);
    assert_int_equal(f.cout, 326);
    assert_rel_close(f.macs, 38.0 * 326 * 5 * 5 * 893 * 9, 1e-12);
    assert_rel_close(f.out_bytes, 4.0 * 38 * 326 * 25, 1e-12);
}

static void layer_row_graph_should_reject_a_kind_graph_disagrees_with(void **state)
{
    pp_layer_row r = base_row("Relu", PP_OPK_SOFTMAX);
    r.n_inputs = 1;
    r.inputs[0] = (pp_layer_input){'x', 2, {4, 4}};
    r.source = "bad.csv:7";
    pp_node_feat f;
    pp_err err = {0};
    assert_int_equal(pp_layer_row_features(&r, &f, &err), PERFPRED_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "bad.csv:7"));
    assert_non_null(strstr(err.msg, "elemwise"));
    /* an impossible shape is an error naming the row */
    r = base_row("Add", PP_OPK_ELEMWISE);
    r.n_inputs = 2;
    r.inputs[0] = (pp_layer_input){'x', 2, {4, 4}};
    r.inputs[1] = (pp_layer_input){'x', 2, {3, 5}};
    r.source = "bad.csv:9";
    assert_int_not_equal(pp_layer_row_features(&r, &f, &err), PERFPRED_OK);
    assert_non_null(strstr(err.msg, "bad.csv:9"));
}

/* -------------------------------------------------------------- NeuSight import ---- */

static void neusight_source_should_name_repo_commit_and_date(void **state)
{
    if (!has_neusight()) skip();
    pp_neusight_source s;
    pp_err err = {0};
    assert_int_equal(pp_datasets_neusight_source(NEUSIGHT_ROOT, &s, &err), PERFPRED_OK);
    assert_string_equal(s.repo, "https://github.com/sitar-lab/NeuSight");
    assert_string_equal(s.commit, "6945927d9afcca2b9daf021f8395e53edc5b4eef");
    assert_string_equal(s.date, "2025-06-23");
}

static void neusight_import_should_map_linear_rows_to_gemm(void **state)
{
    if (!has_neusight()) skip();
    pp_layer_table *t = pp_measure_layer_table_new("ns");
    pp_err err = {0};
    int n = 0;
    assert_int_equal(pp_datasets_neusight_import(NEUSIGHT_ROOT, "linear", A100_40,
                                                 PP_NEUSIGHT_TRAIN, t, &n, &err),
                     PERFPRED_OK);
    /* 6,461 lines = header + 6,460 rows (SOURCE.md: ~6.4k per GPU) */
    assert_int_equal(n, 6460);
    assert_int_equal(t->bad.n, 0);
    /* line 2: linear,0.05450666695833206,...,B=1,M=58,N=13,K=141 */
    const pp_layer_row *r = &t->rows[0];
    assert_string_equal(r->device, "a100-pcie-40gb");
    assert_string_equal(r->op_type, "Gemm");
    assert_int_equal(r->kind, PP_OPK_LINEAR);
    assert_true(r->latency_ms == 0.05450666695833206);
    assert_int_equal(r->inputs[0].dims[0], 58);
    assert_int_equal(r->inputs[0].dims[1], 13);
    assert_int_equal(r->inputs[1].dims[0], 141);
    assert_int_equal(r->inputs[2].dims[0], 141);
    assert_non_null(strstr(r->source, "neusight@6945927:"));
    assert_non_null(strstr(r->source, "linear/p2.1.0/NVIDIA A100-PCIE-40GB.csv:2"));
    assert_string_equal(r->date, "2025-06-23");
    pp_node_feat f;
    assert_int_equal(pp_layer_row_features(r, &f, &err), PERFPRED_OK);
    assert_rel_close(f.macs, 58.0 * 13 * 141, 1e-12);
    pp_measure_layer_table_free(t);
}

static void neusight_import_should_filter_test_rows_by_gpu_and_op(void **state)
{
    if (!has_neusight()) skip();
    pp_layer_table *t = pp_measure_layer_table_new("ns");
    pp_err err = {0};
    int n = 0;
    /* test/elem.csv holds every elementwise op of every GPU; A100-PCIE-40GB has 65 relu rows */
    assert_int_equal(pp_datasets_neusight_import(NEUSIGHT_ROOT, "relu", A100_40, PP_NEUSIGHT_TEST,
                                                 t, &n, &err),
                     PERFPRED_OK);
    assert_int_equal(n, 65);
    int n_ln = 0;
    assert_int_equal(pp_datasets_neusight_import(NEUSIGHT_ROOT, "ln", A100_40, PP_NEUSIGHT_TEST, t,
                                                 &n_ln, &err),
                     PERFPRED_OK);
    assert_int_equal(n_ln, 79);
    assert_int_equal(t->n, 65 + 79);
    for (int i = 0; i < t->n; i++) {
        assert_string_equal(t->rows[i].op_type, i < 65 ? "Relu" : "LayerNormalization");
        pp_node_feat f;
        assert_int_equal(pp_layer_row_features(&t->rows[i], &f, &err), PERFPRED_OK);
    }
    /* conv has no test file */
    assert_int_equal(pp_datasets_neusight_import(NEUSIGHT_ROOT, "conv", A100_40, PP_NEUSIGHT_TEST,
                                                 t, &n, &err),
                     PERFPRED_ERR_UNSUPPORTED);
    assert_int_equal(pp_datasets_neusight_import(NEUSIGHT_ROOT, "linear", "NVIDIA Z9",
                                                 PP_NEUSIGHT_TEST, t, &n, &err),
                     PERFPRED_ERR_INVALID_ARG);
    pp_measure_layer_table_free(t);
}

static void neusight_conv_rows_should_rebuild_as_conv_nodes(void **state)
{
    if (!has_neusight()) skip();
    pp_layer_table *t = pp_measure_layer_table_new("ns");
    pp_err err = {0};
    int n = 0;
    assert_int_equal(pp_datasets_neusight_import(NEUSIGHT_ROOT, "conv", "NVIDIA A100 80GB PCIe",
                                                 PP_NEUSIGHT_TRAIN, t, &n, &err),
                     PERFPRED_OK);
    assert_true(n > 4000);
    /* line 2: B=38, Cin=893, Cout=326, k=3, S=5, stride 1, pad 1 */
    const pp_layer_row *r = &t->rows[0];
    assert_string_equal(r->device, "a100-pcie-80gb");
    assert_int_equal(r->precision, PP_PREC_FP32);
    pp_node_feat f;
    assert_int_equal(pp_layer_row_features(r, &f, &err), PERFPRED_OK);
    assert_rel_close(f.macs, 38.0 * 326 * 5 * 5 * 893 * 9, 1e-12);
    int failed = 0;
    for (int i = 0; i < t->n; i++)
        if (pp_layer_row_features(&t->rows[i], &f, &err) != PERFPRED_OK) failed++;
    assert_int_equal(failed, 0);
    pp_measure_layer_table_free(t);
}

static void neusight_export_should_write_a_readable_layer_csv(void **state)
{
    if (!has_neusight()) skip();
    char out[4096];
    snprintf(out, sizeof out, "%s/pp_test_neusight_%ld.csv", PP_BINARY_DIR, (long)getpid());
    pp_err err = {0};
    int n = 0;
    assert_int_equal(pp_datasets_neusight_export_csv(NEUSIGHT_ROOT, A100_40, NULL, PP_NEUSIGHT_TEST,
                                                     out, &n, &err),
                     PERFPRED_OK);
    /* A100-PCIE-40GB test rows: bmm 2281 + linear 1040 + elementwise 708 + ln 79 + softmax 79 */
    assert_int_equal(n, 2281 + 1040 + 708 + 79 + 79);
    pp_layer_table *t;
    assert_int_equal(pp_measure_layer_csv_read(out, &t, &err), PERFPRED_OK);
    assert_int_equal(t->n, n);
    assert_int_equal(t->bad.n, 0);
    pp_measure_layer_table_free(t);
    unlink(out);
}

typedef struct csv_seen {
    int n;
    int line[8];
    size_t len0[8]; /* length of each record's first field */
} csv_seen;

static int csv_note(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    csv_seen *s = user;
    if (s->n < 8) {
        s->line[s->n] = rec->line;
        s->len0[s->n] = strlen(rec->fields[0]);
    }
    s->n++;
    return 0;
}

/* A record whose first field is quoted over several lines starts on the line of its opening
 * quote; it was reported on the line where that field ended. */
static void csv_should_give_a_multi_line_record_the_line_it_starts_on(void **state)
{
    const char *text = "a,b\n\"one\ntwo\nthree\",x\n\ny,\"p\nq\"\nlast,z";
    csv_seen s = {0};
    assert_int_equal(pp_measure_csv_read_buffer("m.csv", text, strlen(text), csv_note, &s, NULL),
                     PERFPRED_OK);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.line[0], 1);
    assert_int_equal(s.line[1], 2); /* the quote opens on line 2 and closes on line 4 */
    assert_int_equal(s.line[2], 6);
    assert_int_equal(s.line[3], 8);
    /* an unterminated quote names the line where it opens */
    const char *bad = "a,b\nx,y\n\"open\nstill\n";
    pp_err err = {0};
    assert_int_equal(pp_measure_csv_read_buffer("u.csv", bad, strlen(bad), csv_note, &s, &err),
                     PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "u.csv:3:"));
}

/* A 10 MB field is read whole (libcsv's buffer now grows geometrically; it grew 128 bytes at a
 * time, which made this minutes under ASan). */
static void csv_should_read_a_ten_megabyte_field(void **state)
{
    size_t n = 10u << 20;
    char *text = malloc(n + 64);
    assert_non_null(text);
    size_t off = (size_t)sprintf(text, "a,b\n\"");
    memset(text + off, 'x', n);
    off += n;
    off += (size_t)sprintf(text + off, "\",1\n");
    csv_seen s = {0};
    assert_int_equal(pp_measure_csv_read_buffer("big.csv", text, off, csv_note, &s, NULL),
                     PERFPRED_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.len0[1], n);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layer_csv_should_read_good_rows),
        cmocka_unit_test(csv_should_give_a_multi_line_record_the_line_it_starts_on),
        cmocka_unit_test(csv_should_read_a_ten_megabyte_field),
        cmocka_unit_test(layer_csv_should_count_bad_rows_with_file_and_line),
        cmocka_unit_test(layer_csv_should_take_a_weight_first_only_in_a_concat),
        cmocka_unit_test(layer_csv_should_keep_every_input_of_a_wide_concat),
        cmocka_unit_test(layer_csv_should_count_lines_across_crlf_and_quoted_newlines),
        cmocka_unit_test(layer_csv_should_reject_bad_headers),
        cmocka_unit_test(layer_csv_should_reject_malformed_quotes_naming_line),
        cmocka_unit_test(layer_csv_should_round_trip_through_write),
        cmocka_unit_test(net_csv_should_read_rows_and_count_bad_ones),
        cmocka_unit_test(metrics_should_match_hand_computed_values),
        cmocka_unit_test(spearman_should_average_tied_ranks),
        cmocka_unit_test(metrics_should_split_by_group_and_reject_bad_input),
        cmocka_unit_test(layer_row_graph_should_count_like_graph_features),
        cmocka_unit_test(layer_row_graph_should_reject_a_kind_graph_disagrees_with),
        cmocka_unit_test(neusight_source_should_name_repo_commit_and_date),
        cmocka_unit_test(neusight_import_should_map_linear_rows_to_gemm),
        cmocka_unit_test(neusight_import_should_filter_test_rows_by_gpu_and_op),
        cmocka_unit_test(neusight_conv_rows_should_rebuild_as_conv_nodes),
        cmocka_unit_test(neusight_export_should_write_a_readable_layer_csv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
