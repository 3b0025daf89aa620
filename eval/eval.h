/* eval/: predictions judged on measurements, and the plots. perfpred_eval (eval.c) predicts a
 * layer or network CSV and reports metrics by group; plot.c and compare_plot.c draw with gnuplot;
 * neusight_models.c rebuilds NeuSight's whole-model fx tables as graphs and judges them;
 * scaling_check.c judges the A100 layer models scaled to other GPUs (docs/scaling.md). Reports are
 * plain structs; nothing here prints. A pp_fx_graph's arrays live in its graph's arena. */
#ifndef PP_EVAL_H
#define PP_EVAL_H

#include <stdint.h>

#include "datasets/datasets.h"
#include "measure/measure.h"

/* ----------------------------------------------------------------------- gnuplot (plot.c) ---- */

/* gnuplot (eval/plot.c): text safe inside a single-quoted string (no quote, backslash or
 * control character); `gnuplot script` with stdout and stderr into log_path (its exit status, 127
 * when gnuplot is missing, -1 on a spawn error); the log's last non-empty line. */
int pp_eval_plot_safe(const char *s);
int pp_eval_gnuplot_run(const char *script, const char *log_path);
void pp_eval_plot_last_line(const char *path, char *out, size_t n);
/* write(user, terminal) writes the script for a terminal ("svg", "pngcairo", "png"); gnuplot runs
 * it, once more with gd's png where pngcairo is missing. Errors name gnuplot's last line. */
perfpred_status pp_eval_plot_draw(const char *script, const char *log_path, const char *terminal,
                                  int (*write)(void *user, const char *terminal), void *user,
                                  pp_err *err);

/* ------------------------------------------- NeuSight's whole models (neusight_models.c) ---- */


typedef struct pp_fx_build_params {
    int n_blocks; /* times the repeated block runs (the label's num_layer); <= 1: once */
    /* rows of the embedding tables the table cannot state (nn.Embedding weights are not listed):
     * word (vocab_size), position (max_position_embeddings / n_positions), token type
     * (type_vocab_size); 0 = unknown: such an Embedding node stays unmapped */
    int64_t vocab_rows, position_rows, token_type_rows;
} pp_fx_build_params;
pp_fx_build_params pp_eval_fx_build_default_params(void);

/* Fills the embedding rows from a HuggingFace config.json (vocab_size, max_position_embeddings or
 * n_positions, type_vocab_size; keys it lacks stay 0). */
perfpred_status pp_eval_fx_hf_config_read(const char *path, pp_fx_build_params *p, pp_err *err);

typedef enum pp_fx_class {
    PP_FXC_SOURCE = 0, /* placeholder, get_attr, output: no work of its own */
    PP_FXC_HOST,       /* a Python value (size, getitem of a size, getattr, finfo, int maths):
                          shape arithmetic an ONNX export folds; no tensor, no kernel */
    PP_FXC_MAPPED,     /* one or more graph nodes */
    PP_FXC_UNMAPPED, /* no graph node (reason in why[]); a tensor output enters as a graph input */
    PP_FXC_BAD       /* a bad row of the table */
} pp_fx_class;

typedef struct pp_fx_graph {
    pp_graph *g;             /* linked, shapes inferred and checked, features and liveness done */
    int n_rows;
    pp_fx_class *cls;        /* per table row */
    const char **why;        /* per row: reason it is unmapped, else NULL */
    int block_start, block_end;  /* rows of the repeated block, -1 when none */
    int n_blocks;            /* copies of the block built (1 when none) */
    int carried_row;         /* row whose tensor block k + 1 reads from block k's last row (the
                                hidden state), -1 when the copies are not chained */
    int *node_row, *node_copy;   /* per graph node: table row and block copy (0 outside it) */
} pp_fx_graph;

/* Builds the graph of t: every row mapped to ONNX-IR (Linear -> Reshape, Gemm(transB) with weight
 * and bias, Reshape; addmm -> Gemm; matmul/bmm -> MatMul; LayerNorm -> LayerNormalization;
 * Embedding -> Gather; elementwise functions -> Add, Mul, Pow, Tanh, Gelu, Where ...;
 * view/permute/transpose -> Reshape views; contiguous of a strided tensor -> a copy; split ->
 * Split; creation ops -> ConstantOfShape), the block rows repeated p->n_blocks times. Rows that do
 * not map are classed PP_FXC_UNMAPPED with a reason; it never fails on them. Every mapped node's
 * inferred output shape and dtype must equal the table's, else PERFPRED_ERR_SHAPE naming file:line.
 */
perfpred_status pp_eval_fx_graph_build(const pp_fx_table *t, const pp_fx_build_params *p,
                                       pp_fx_graph *out, pp_err *err);

/* ------------------------------------------------------------------ the check ---- */

/* Parses "<model>-inf-<seq>-<batch>" (the label's file name without extension). */
perfpred_status pp_eval_neusight_label_parse(const char *label, char *model, size_t model_n,
                                             int64_t *seq, int64_t *batch, pp_err *err);

/* Judges every inference label of p->gpu (or p->labels) on p->device; see perfpred_calibrate.h. Labels that
 * cannot be judged get a status and message in their entry; the call fails only on bad parameters,
 * an unreadable label folder, or a context that does not open. */
perfpred_status pp_eval_neusight_models(const perfpred_neusight_params *p,
                                        perfpred_neusight_report *out, pp_err *err);

/* ------------------------------------------------- cross-GPU scaling (scaling_check.c) ---- */

/* Habitat's rule with the compute term from the fp32 peak FLOP/s of the descriptors instead of
 * SMs x clock: t' = t (BW/BW')^g (F/F')^(1-g), g = ridge / (ridge + ai), ridge = F / BW of `from`.
 * Per-SM fp32 throughput differs between architectures (64 fp32 lanes per SM on GA100, GV100,
 * TU104, GP100; 128 on GH100, AD104, GP104), which SMs x clock cannot see. Less than one wave on
 * `to` (blocks <= its SMs): the ratio of per-SM FLOP/s, F/SM over F'/SM'. Where either descriptor
 * lacks the fp32 peak or the SM count this is pp_scale_kernel_time. */
double pp_eval_scale_flops(double t, const pp_device *from, const pp_device *to, double ai,
                           double blocks);
/* Habitat's original compute term, SMs x clock (clock ratio alone below one wave): the baseline
 * the report's "model", "twin" and "reverse" methods use. */
double pp_eval_scale_smclock(double t, const pp_device *from, const pp_device *to, double ai,
                             double blocks);

/* perfpred_scaling_check with the error record of the library. */
perfpred_status pp_eval_scaling_check(const perfpred_scaling_params *p,
                                      perfpred_scaling_report *out, pp_err *err);

#endif
