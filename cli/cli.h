/* cli/: the perfpred command line, a thin layer over include/perfpred.h and
 * include/perfpred_calibrate.h. Only the CLI prints and chooses exit codes; they are documented in
 * usage() and the README. */
#ifndef PP_CLI_H
#define PP_CLI_H

#include <getopt.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "perfpred_calibrate.h"

/* Exit codes (documented in --help and README). */
enum {
    EXIT_OK_ = 0,
    EXIT_USAGE = 1,     /* bad command line */
    EXIT_INPUT = 2,     /* a file is missing, unreadable or malformed (model, CSV, descriptor) */
    EXIT_MODEL = 3,     /* the model uses an unsupported op or has an impossible shape */
    EXIT_DEVICE = 4,    /* unknown device or bad device descriptor */
    EXIT_INTERNAL = 5   /* trained artifact broken, out of memory, internal error */
};

#define CLI_MAX_INPUTS 16
#define CLI_MAX_LIST 64

typedef struct cli_opts {
    const char *model;
    const char *devices[CLI_MAX_LIST];
    int n_devices;
    int64_t batches[CLI_MAX_LIST];
    int n_batches;
    perfpred_input_override inputs[CLI_MAX_INPUTS];
    char input_names[CLI_MAX_INPUTS][256];   /* storage the overrides' names point into */
    int n_inputs;
    int json;
    int allow_unknown;
    int layer_sum_only;   /* leave out the device's graph-level / in-network overhead correction */
    int layers;           /* --layers [N]: top-N kernels; 0 = off */
    int all;              /* inspect --all: folded shape nodes too */
    double slo_ms;
    const char *config_dir;
    const char *runtime;    /* --runtime: GPU stack framework */
    const char *precision;  /* --precision fp32|fp16|bf16|amp|amp-bf16 */
    const char *plot;       /* compare --plot FILE (.svg/.png) */
    const char *plot_y;     /* --plot-y energy|memory */
    const char *positional[4];
    int n_positional;
} cli_opts;

int cli_exit_code(perfpred_status st);
/* 1 when v is a --precision the GPU stacks take (fp32, fp16, bf16, amp, amp-bf16); else says
 * why on stderr and returns 0 */
int cli_precision_ok(const char *v);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Human formatting into a caller buffer: 11.7M, 1.82G; bytes as KiB/MiB/GiB. */
const char *cli_fmt_count(double v, char *buf, size_t n);
const char *cli_fmt_bytes(double v, char *buf, size_t n);
void cli_print_json(cJSON *root); /* prints and deletes */
/* 1 for an answer on an eager-PyTorch CPU (device kind, runtime) that layer models timed
 * (layer_kernels: its calibrated and covered kernels): one thread's, as they were timed */
int cli_one_thread(const char *kind, const char *runtime, double layer_kernels);

perfpred_model *cli_load_model(const cli_opts *o, int64_t batch, int *exit_code);
perfpred_ctx *cli_open_ctx(const cli_opts *o, int *exit_code);

int cmd_inspect(const cli_opts *o);
int cmd_predict(const cli_opts *o);
int cmd_compare(const cli_opts *o);
int cmd_mig(const cli_opts *o);
int cmd_devices(const cli_opts *o);
int cli_fit_stacks_main(int argc, char **argv);
int cli_fit_power_main(int argc, char **argv);  /* calibrate fit-power (cli/stacks.c) */
int cli_calibrate_host_main(int argc, char **argv); /* calibrate host (cli/stacks.c) */
int cli_calibrate_run(int argc, char **argv);   /* calibrate run (cli/calibrate_run.c) */
extern const char cli_calibrate_run_usage[];

/* cli/compare.c: --json through the library's JSON entry point (perfpred_json), so the CLI and the
 * bindings print the same answer. cli_json_answer builds the request from o, returns the parsed
 * answer (NULL after printing the error, *rc its exit code); cli_run_json prints it. ctx may be NULL
 * for inspect. */
cJSON *cli_json_answer(const cli_opts *o, const perfpred_ctx *ctx, const char *command, int *rc);
int cli_run_json(const cli_opts *o, const perfpred_ctx *ctx, const char *command);
/* "               [a, b] ms, 80 % interval (...)" or "no interval: why" under a latency line */
void cli_print_interval(const perfpred_interval *iv, const char *unit);

/* Intervals of a fit's held-out rows (cli/intervals.c): per answer path n, quantiles and the
 * cross-fitted check, written into intervals.json when write (errors set *rc). cli_intervals
 * returns them as JSON (printing nothing when json); cli_intervals_print prints them. */
cJSON *cli_intervals(const perfpred_heldout *h, const char *device, const char *config_dir,
                     const char *out_dir, const char *data, int write, int json, int *rc);
void cli_intervals_print(const perfpred_heldout *h, const char *device, const char *config_dir,
                         const char *out_dir, const char *data, int write, int *rc);

/* cli/calibrate.c: option parsing shared by every command, and metric tables shared by
 * `perfpred calibrate` (cli/calibrate.c, cli/calibrate_fit.c) and `perfpred eval` (cli/eval.c).
 *
 * Options are read by glibc's getopt_long, one struct option table per command, through
 * cli_getopt_next, which keeps the CLI's rules: words are read in order (optstring "-:..."), a
 * positional word comes back as 1 with the word in optarg, so positionals may sit anywhere and the
 * first bad word is the one reported; a value is "--name VALUE" or "--name=VALUE" (the next word
 * even when it starts with '-'); and what getopt_long would accept beyond that is refused as an
 * unknown word: an abbreviated name (getopt's unique prefixes), "--" (not an end of options here),
 * a short option with anything glued to it ("-oFILE", "-o=FILE"), a value given to a flag, and,
 * with no_equals, "--name=VALUE". Parsers print the error themselves. */
typedef struct cli_getopt {
    int argc;
    char **argv;
    const char *shortopts;          /* getopt's optstring; starts "-:" (in order, ':' on no value) */
    const struct option *longopts;  /* ended by a row of zeros; no val may be 1, '?' or ':' */
    int no_equals;                  /* 1: "--name=VALUE" is an unknown word (value: next word) */
    int at;                         /* argv index of the word just read */
    const char *word;               /* that word as typed: the option for messages */
} cli_getopt;
/* Reads argv[1..argc) from the start: optind = 0, which under glibc resets getopt's whole state
 * (also the half-read word a previous command may have left), not just the index. */
void cli_getopt_init(cli_getopt *G, int argc, char **argv, const char *shortopts,
                     const struct option *longopts);
/* The next word: an option's val with its value in optarg (NULL when it has none), 1 for a
 * positional word (in optarg), -1 at the end, '?' for a word that is no option here and ':' for an
 * option whose value is missing (both: G->word). Prints nothing. */
int cli_getopt_next(cli_getopt *G);
/* A strict integer or number in [lo, hi] into *out: 0, or -1 after saying why. */
int cli_parse_int(const char *s, const char *name, long lo, long hi, int *out);
int cli_parse_num(const char *s, const char *name, double lo, double hi, double *out);
/* Splits a comma-separated list in place (s is owned by argv): the count, or -1 after saying
 * why. */
int cli_split_list(char *s, const char **out, int cap, const char *name);
/* A list option's value v (owned by argv), split on ',' and appended to out[*n..CLI_MAX_LIST):
 * 0, or -1 after saying why. */
int cli_list_value(char *v, const char *name, const char **out, int *n);
void cli_print_errbuf(const char *err, const char *fallback); /* fallback when err is empty */
/* Table columns, plain (fixed widths) or markdown; '-' where a value is not finite or n is 0:
 * v with fmt ("%*.1f") at width; MAPE, RMSPE, within +-10 %, Spearman; the roofline's MAPE and
 * within +-10 %; the rows' spread. */
void cli_put_num(FILE *f, const char *fmt, double v, int width);
void cli_metrics_cols(FILE *f, const perfpred_metrics *m, int markdown);
void cli_roof_cols(FILE *f, const perfpred_metrics *m, int markdown);
void cli_spread_col(FILE *f, double spread, int markdown);
/* JSON values (new items, owned by the caller): a number or null when not finite; metrics as
 * {n, mape_pct, rmspe_pct, within10_pct, spearman}; messages as an array of strings. */
cJSON *cli_json_num(double v);
cJSON *cli_json_metrics(const perfpred_metrics *m);
cJSON *cli_json_msgs(const char (*msgs)[256], int n);

/* calibrate fit (cli/calibrate_fit.c). cli_netfit fits the graph-level correction, or judges the
 * saved one (params->evaluate_only: eval --gnn-heldout), and prints the held-out errors. */
int cli_calibrate_fit(int argc, char **argv);
int cli_netfit(const perfpred_netfit_params *params, int json, int write_intervals);

#endif
