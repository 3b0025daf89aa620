/* cli/main.c: command dispatch, option parsing, usage and exit codes of the perfpred CLI.
 * `perfpred --device D model.onnx` predicts; subcommands inspect, compare, mig, devices. */
#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char usage_text[] =
    "perfpred " PERFPRED_VERSION " - predict inference latency, energy and peak memory of an ONNX\n"
    "model on a device, before deploying it.\n"
    "\n"
    "usage:\n"
    "  perfpred --device DEV model.onnx [--batch N] [--input NAME=1x3x224x224] [--layers [N]]\n"
    "  perfpred inspect model.onnx [--batch N] [--input NAME=DIMS] [--all]\n"
    "  perfpred compare --device DEV1,DEV2,... model.onnx [--batch 1,8,32]\n"
    "                   [--plot out.svg [--plot-y energy|memory]]\n"
    "  perfpred mig model.onnx [--device a100|a100-80gb|h100|...] [--slo-ms X] [--batch N]\n"
    "  perfpred devices [show NAME]\n"
    "  perfpred predict-many --device DEV,.. --nb201 cells.txt|--onnx-list files.txt\n"
    "                        [--batch 1,8] [--threads N] [--csv|--json] [--runtime R]\n"
    "                        [--precision P]   (docs/predict-many.md)\n"
    "  perfpred calibrate plan|fit|import ...   (see perfpred calibrate --help)\n"
    "  perfpred eval --device DEV --layers|--networks FILE.csv [--plot out.png]\n"
    "model.onnx may also name a search-space network perfpred builds: nb201:CELL@cifar10,\n"
    "fbnet:BLOCKS@cifar100, ofa:ks=..;e=..;d=..;r=.. (docs/networks.md)\n"
    "\n"
    "options:\n"
    "  --device LIST       device name or alias (a100, a100-mig-3g, jetson-orin-nano, rpi4, ...);\n"
    "                      compare takes a comma-separated list\n"
    "  --batch N[,N..]     value for the symbolic batch dim of the inputs (default 1;\n"
    "                      compare: a list)\n"
    "  --input NAME=DIMS   shape of one graph input, e.g. input_ids=1x128 (repeatable)\n"
    "  --layers [N]        add the per-kernel breakdown (top N by time, default 15)\n"
    "  --slo-ms X          latency objective for `mig`\n"
    "  --plot FILE         compare: draw latency (with its interval) against energy or peak\n"
    "                      memory with gnuplot, .svg or .png; the Pareto front joined\n"
    "  --plot-y WHAT       energy (default where the rows have it) or memory\n"
    "  --runtime R         GPUs: the runtime stack's framework: pytorch-eager, torchscript,\n"
    "                      tensorrt (default: the descriptor's; perfpred devices show NAME\n"
    "                      lists a GPU's stacks); cuda-graph: eager PyTorch's kernels\n"
    "                      replayed as a CUDA graph (no host dispatch per op)\n"
    "  --precision P       GPUs: fp32, fp16 or bf16 (default: the descriptor's); amp,\n"
    "                      amp-bf16: PyTorch eager under autocast (the fp16 stack, weights\n"
    "                      kept fp32 and cast on every call); bf16 takes the fp16 stack at\n"
    "                      the bf16 tensor-core rate\n"
    "  --allow-unknown     treat unknown ops as memory-bound element-wise ops (listed)\n"
    "  --layer-sum-only    the layer sum alone: leave out the device's graph-level or\n"
    "                      in-network overhead correction (where one is calibrated)\n"
    "  --json              machine-readable output (schema in docs/json.md)\n"
    "  --config-dir DIR    device descriptors and artifacts (default: $PERFPRED_CONFIG_DIR,\n"
    "                      else the source tree's or the installed configs/)\n"
    "  --device-file FILE  a descriptor of your own (YAML: configs/devices/README.md), read\n"
    "                      beside the shipped ones, whose `base:` it may name (any command;\n"
    "                      repeatable; a file or folder list in $PERFPRED_DEVICES does the same)\n"
    "  --all               inspect: list folded shape-arithmetic nodes too\n"
    "  -h, --help          this text;  --version  the version\n"
    "\n"
    "Every figure says where it comes from: 'calibrated' (trained layer models, data named) or\n"
    "'estimate' (roofline / power model from the descriptor, uncalibrated).\n"
    "\n"
    "exit codes:\n"
    "  0 ok   1 usage error   2 input file missing, unreadable or malformed\n"
    "  3 model unsupported (op, shape, graph)   4 unknown device or bad descriptor\n"
    "  5 trained artifact broken, out of memory or internal error\n";

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("perfpred: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_exit_code(perfpred_status st)
{
    switch (st) {
    case PERFPRED_OK: return EXIT_OK_;
    case PERFPRED_ERR_INVALID_ARG: return EXIT_USAGE;
    case PERFPRED_ERR_IO:
    case PERFPRED_ERR_PARSE: return EXIT_INPUT;
    case PERFPRED_ERR_UNSUPPORTED:
    case PERFPRED_ERR_SHAPE:
    case PERFPRED_ERR_GRAPH: return EXIT_MODEL;
    case PERFPRED_ERR_DEVICE: return EXIT_DEVICE;
    default: return EXIT_INTERNAL;
    }
}

int cli_precision_ok(const char *v)
{
    static const char *const ok[] = {"fp32", "fp16", "bf16", "amp", "amp-bf16"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (strcmp(v, ok[i]) == 0) return 1;
    cli_error("--precision: '%s' (GPU stacks are fp32, fp16 or bf16; amp, amp-bf16: PyTorch "
              "eager's autocast)",
              v);
    return 0;
}

static int parse_i64_list(const char *s, int64_t *out, int cap, const char *what)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        errno = 0;
        long long v = strtoll(tok, &end, 10);
        if (errno || *end || end == tok || v <= 0 || n == cap) {
            cli_error("%s: '%s' is not a positive integer (or too many values)", what, tok);
            return -1;
        }
        out[n++] = v;
    }
    if (n == 0) cli_error("%s: empty list", what);
    return n ? n : -1;
}

static int parse_devices(const char *s, cli_opts *o)
{
    static char store[4096];
    size_t used = strlen(store);
    if (used + strlen(s) + 2 > sizeof store) {
        cli_error("--device: list too long");
        return -1;
    }
    char *buf = store + used + (used ? 1 : 0);
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->n_devices == CLI_MAX_LIST) {
            cli_error("--device: at most %d devices", CLI_MAX_LIST);
            return -1;
        }
        o->devices[o->n_devices++] = tok;
    }
    return 0;
}

static int parse_input(const char *s, cli_opts *o)
{
    const char *eq = strrchr(s, '=');
    if (!eq || eq == s || o->n_inputs == CLI_MAX_INPUTS) {
        cli_error("--input: expected NAME=DIMS (e.g. input=1x3x224x224), got '%s'", s);
        return -1;
    }
    perfpred_input_override *in = &o->inputs[o->n_inputs];
    size_t nlen = (size_t)(eq - s);
    if (nlen >= sizeof o->input_names[0]) {
        cli_error("--input: name too long in '%s'", s);
        return -1;
    }
    memcpy(o->input_names[o->n_inputs], s, nlen);
    o->input_names[o->n_inputs][nlen] = '\0';
    in->name = o->input_names[o->n_inputs];
    int rank = 0;
    const char *p = eq + 1;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v <= 0 || rank == PERFPRED_MAX_RANK) {
            cli_error("--input: bad dims '%s' (want positive integers joined by x)", eq + 1);
            return -1;
        }
        in->dims[rank++] = v;
        if (*end == 'x' || *end == 'X') end++;
        else if (*end) {
            cli_error("--input: bad dims '%s' (want positive integers joined by x)", eq + 1);
            return -1;
        }
        p = end;
    }
    if (rank == 0) {
        cli_error("--input: no dims in '%s'", s);
        return -1;
    }
    in->rank = rank;
    o->n_inputs++;
    return 0;
}

/* --layers [N]: v the value (NULL: none given, 15), at most 100000. */
static int parse_layers(const char *v, cli_opts *o)
{
    int64_t n[1] = {15};
    if (v && parse_i64_list(v, n, 1, "--layers") < 0) return -1;
    o->layers = (int)(n[0] > 100000 ? 100000 : n[0]);
    return 0;
}

enum {
    OPT_DEVICE = 256, OPT_BATCH, OPT_INPUT, OPT_SLO_MS, OPT_RUNTIME, OPT_PRECISION, OPT_CONFIG_DIR,
    OPT_LAYERS, OPT_JSON, OPT_PLOT, OPT_PLOT_Y, OPT_ALLOW_UNKNOWN, OPT_LAYER_SUM_ONLY, OPT_ALL
};

static const struct option predict_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"input", required_argument, NULL, OPT_INPUT},
    {"slo-ms", required_argument, NULL, OPT_SLO_MS},
    {"runtime", required_argument, NULL, OPT_RUNTIME},
    {"precision", required_argument, NULL, OPT_PRECISION},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"layers", optional_argument, NULL, OPT_LAYERS},
    {"json", no_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"plot-y", required_argument, NULL, OPT_PLOT_Y},
    {"allow-unknown", no_argument, NULL, OPT_ALLOW_UNKNOWN},
    {"layer-sum-only", no_argument, NULL, OPT_LAYER_SUM_ONLY},
    {"all", no_argument, NULL, OPT_ALL},
    {NULL, 0, NULL, 0}
};

/* One option c with its value v into o: 0, or -1 after saying why. */
static int take_opt(int c, const char *v, cli_opts *o)
{
    char *end;
    switch (c) {
    case OPT_DEVICE: return parse_devices(v, o);
    case OPT_BATCH: {
        int n = parse_i64_list(v, o->batches, CLI_MAX_LIST, "--batch");
        if (n < 0) return -1;
        o->n_batches = n;
        return 0;
    }
    case OPT_INPUT: return parse_input(v, o);
    case OPT_SLO_MS:
        errno = 0;
        o->slo_ms = strtod(v, &end);
        if (errno || *end || end == v || !(o->slo_ms > 0)) {
            cli_error("--slo-ms: '%s' is not a positive number of milliseconds", v);
            return -1;
        }
        return 0;
    case OPT_RUNTIME: o->runtime = v; return 0;
    case OPT_PRECISION:
        o->precision = v;
        return cli_precision_ok(v) ? 0 : -1;
    case OPT_CONFIG_DIR: o->config_dir = v; return 0;
    case OPT_LAYERS: return parse_layers(v, o);
    case OPT_JSON: o->json = 1; return 0;
    case OPT_PLOT: o->plot = v; return 0;
    case OPT_PLOT_Y:
        o->plot_y = v;
        if (strcmp(v, "energy") != 0 && strcmp(v, "memory") != 0) {
            cli_error("--plot-y: '%s' (energy or memory)", v);
            return -1;
        }
        return 0;
    case OPT_ALLOW_UNKNOWN: o->allow_unknown = 1; return 0;
    case OPT_LAYER_SUM_ONLY: o->layer_sum_only = 1; return 0;
    case OPT_ALL: o->all = 1; return 0;
    }
    return -1;
}

/* argv[1..argc): options (a value as the next word or after '=') and up to 4 positional words, in
 * any order. */
static int parse_opts(int argc, char **argv, cli_opts *o)
{
    cli_getopt G;
    cli_getopt_init(&G, argc, argv, "-:", predict_options);
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        if (c == '?') {
            cli_error("unknown option '%s' (perfpred --help lists them)", G.word);
            return -1;
        }
        if (c == ':') {
            cli_error("%s needs a value", G.word);
            return -1;
        }
        if (c == 1) {
            if (o->n_positional == 4) {
                cli_error("too many arguments ('%s')", optarg);
                return -1;
            }
            o->positional[o->n_positional++] = optarg;
            continue;
        }
        /* --layers takes N as the next word too, when that word starts with a digit */
        if (c == OPT_LAYERS && !optarg && optind < argc && argv[optind][0] >= '0' &&
            argv[optind][0] <= '9')
            optarg = argv[optind++];
        if (take_opt(c, optarg, o)) return -1;
    }
    return 0;
}

static int need_model(cli_opts *o, const char *cmd)
{
    if (o->n_positional != 1) {
        cli_error("%s: expected exactly one model file (got %d arguments)", cmd, o->n_positional);
        return -1;
    }
    o->model = o->positional[0];
    return 0;
}

int cli_calibrate_main(int argc, char **argv);
int cli_eval_main(int argc, char **argv);
int cli_predict_many_main(int argc, char **argv);

/* Takes every --device-file FILE (or --device-file=FILE) out of argv, for any command, and appends
 * FILE to $PERFPRED_DEVICES, which every command's device loader reads (devices/devices.h).
 * Returns 0, or the exit code after printing the error. */
static int take_device_files(int *argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *file = NULL;
        if (strcmp(argv[i], "--device-file") == 0) {
            if (i + 1 >= *argc) {
                cli_error("--device-file needs a descriptor file");
                return EXIT_USAGE;
            }
            file = argv[++i];
        } else if (strncmp(argv[i], "--device-file=", 14) == 0) {
            file = argv[i] + 14;
        } else {
            argv[out++] = argv[i];
            continue;
        }
        if (!*file || strchr(file, ':')) {
            cli_error("--device-file '%s': give a file path without ':'", file);
            return EXIT_USAGE;
        }
        if (access(file, R_OK) != 0) {
            cli_error("--device-file %s: %s", file, strerror(errno));
            return EXIT_INPUT;
        }
        const char *old = getenv("PERFPRED_DEVICES");
        size_t n = (old ? strlen(old) + 1 : 0) + strlen(file) + 1;
        char *v = malloc(n);
        if (!v) {
            cli_error("out of memory");
            return EXIT_INTERNAL;
        }
        snprintf(v, n, "%s%s%s", old && *old ? old : "", old && *old ? ":" : "", file);
        int rc = setenv("PERFPRED_DEVICES", v, 1);
        free(v);
        if (rc != 0) {
            cli_error("--device-file '%s': %s", file, strerror(errno));
            return EXIT_INTERNAL;
        }
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

int main(int argc, char **argv)
{
#if defined(__GLIBC__)
    /* Each network a command predicts is built, predicted and freed; glibc hands the freed top of
     * the heap back to the kernel past 128 KiB, so the next network faults the same pages in
     * again (predict-many on NAS-Bench-201 cells spent a third of its time in page faults, and
     * 123 us of system time a cell). Up to 64 MiB stays with the process instead, unless the
     * user set glibc's own trim threshold (GLIBC_TUNABLES=glibc.malloc.trim_threshold=N). */
    const char *tun = getenv("GLIBC_TUNABLES");
    if (!tun || !strstr(tun, "glibc.malloc.trim_threshold")) mallopt(M_TRIM_THRESHOLD, 64 << 20);
    /* Setting a threshold also ends glibc's raising of its mmap threshold, which then stays at
     * 128 KiB: a network's arrays past it (an NB201 network's tensors, ~240 KB) were mapped and
     * unmapped, and faulted in, network after network whenever the heap's top did not happen to
     * hold them (0.3 s of system time for 6,000 cells on epyc-kvm-2vcpu). Up to 32 MiB (glibc's
     * most) comes from the heap, unless the user set glibc.malloc.mmap_threshold. */
    if (!tun || !strstr(tun, "glibc.malloc.mmap_threshold")) mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
    int drc = take_device_files(&argc, argv);
    if (drc) return drc;
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            if (i > 1 && (strcmp(argv[1], "calibrate") == 0 || strcmp(argv[1], "eval") == 0 ||
                          strcmp(argv[1], "predict-many") == 0))
                break;
            fputs(usage_text, stdout);
            return EXIT_OK_;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("perfpred %s\n", perfpred_version());
            return EXIT_OK_;
        }
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "calibrate") == 0) return cli_calibrate_main(argc - 1, argv + 1);
    if (strcmp(cmd, "eval") == 0) return cli_eval_main(argc - 1, argv + 1);
    if (strcmp(cmd, "predict-many") == 0) return cli_predict_many_main(argc - 1, argv + 1);

    cli_opts o;
    memset(&o, 0, sizeof o);
    int known = strcmp(cmd, "inspect") == 0 || strcmp(cmd, "compare") == 0 ||
                strcmp(cmd, "mig") == 0 || strcmp(cmd, "devices") == 0 ||
                strcmp(cmd, "predict") == 0;
    if (!known && cmd[0] != '-' && !strstr(cmd, ".onnx") && argc == 2) {
        cli_error("unknown command '%s' (perfpred --help lists them)", cmd);
        return EXIT_USAGE;
    }
    /* a command's options start after its name; an implied predict's at argv[1] */
    if (known ? parse_opts(argc - 1, argv + 1, &o) : parse_opts(argc, argv, &o)) return EXIT_USAGE;

    if (strcmp(cmd, "devices") == 0) return cmd_devices(&o);
    if (strcmp(cmd, "inspect") == 0) return need_model(&o, "inspect") ? EXIT_USAGE : cmd_inspect(&o);
    if (strcmp(cmd, "compare") == 0) {
        if (need_model(&o, "compare")) return EXIT_USAGE;
        if (o.n_devices == 0) {
            cli_error("compare: --device DEV1,DEV2,... is required");
            return EXIT_USAGE;
        }
        return cmd_compare(&o);
    }
    if (o.plot || o.plot_y) {
        cli_error("--plot and --plot-y go with compare");
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "mig") == 0) return need_model(&o, "mig") ? EXIT_USAGE : cmd_mig(&o);
    /* predict (explicit or implied) */
    if (need_model(&o, "predict")) return EXIT_USAGE;
    if (o.n_devices != 1) {
        cli_error("predict: give one device with --device (or use `perfpred compare`)");
        return EXIT_USAGE;
    }
    if (o.n_batches > 1) {
        cli_error("predict: one --batch value (use `perfpred compare` for several)");
        return EXIT_USAGE;
    }
    return cmd_predict(&o);
}
