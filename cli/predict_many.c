/* cli/predict_many.c: `perfpred predict-many`, a thin layer over perfpred_predict_many: reads a list
 * of NAS-Bench-201 cells or ONNX paths (one a line), streams one CSV or JSON-lines row per
 * (line, batch, device) to stdout, a progress line on stderr when it is a terminal, and an error
 * naming file:line for each bad line while the rest go on. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

static const char many_usage[] =
    "usage: perfpred predict-many --device DEV1,DEV2,... (--nb201 cells.txt | --onnx-list files.txt)\n"
    "                             [--batch 1,8] [--threads N] [--csv | --json] [--config-dir DIR]\n"
    "                             [--runtime R] [--precision P] [--device-file FILE]\n"
    "  --nb201 FILE      one NAS-Bench-201 cell a line (|nor_conv_3x3~0|+|...|, or nb201:CELL@DATASET)\n"
    "  --onnx-list FILE  one .onnx path a line\n"
    "  --threads N       worker threads (default 1); each prediction runs on one\n"
    "  --csv             CSV rows (default);  --json: one JSON object a line\n"
    "  --runtime, --precision  GPUs: the runtime stack, as perfpred --help says (a CPU or board\n"
    "                    asked for one gives an error row)\n"
    "  --device-file FILE  a descriptor of your own beside the shipped ones (perfpred --help)\n"
    "Blank lines and lines starting with # are skipped. A bad line is reported on stderr as\n"
    "FILE:LINE: message and as a row with status 'error'; the others go on. Exit code 0 when every\n"
    "row succeeded, 2 when some line failed, else as perfpred --help says.\n";

typedef struct list {
    char *text;      /* the file, lines cut in place */
    const char **items;
    int *line;       /* file line of each item */
    int n;
} list;

static void list_free(list *l)
{
    free(l->text);
    free(l->items);
    free(l->line);
}

/* Reads path's non-blank, non-comment lines (trimmed), cut in place. */
static int list_read(const char *path, list *l)
{
    memset(l, 0, sizeof *l);
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    l->text = malloc(cap);
    for (size_t got; l->text && (got = fread(l->text + len, 1, cap - len - 1, f)) > 0;) {
        len += got;
        if (len + 1 == cap) {
            char *t = realloc(l->text, cap *= 2);
            if (!t) free(l->text);
            l->text = t;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!l->text || bad) {
        cli_error("%s: %s", path, bad ? "read error" : "out of memory");
        list_free(l);
        return -1;
    }
    l->text[len] = '\0';
    int n_lines = 1;
    for (size_t i = 0; i < len; i++) n_lines += l->text[i] == '\n';
    l->items = malloc((size_t)n_lines * sizeof *l->items);
    l->line = malloc((size_t)n_lines * sizeof *l->line);
    if (!l->items || !l->line) {
        cli_error("%s: out of memory", path);
        list_free(l);
        return -1;
    }
    char *p = l->text;
    for (int ln = 1; p; ln++) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        while (*p == ' ' || *p == '\t') p++;
        char *e = p + strlen(p);
        while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = '\0';
        if (*p && *p != '#') {
            l->items[l->n] = p;
            l->line[l->n++] = ln;
        }
        p = nl ? nl + 1 : NULL;
    }
    return 0;
}

typedef struct out_state {
    const char *file;
    const list *l;
    int json, progress;
    long done, total;
    int last_bad_item;
    double last_tick;
} out_state;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static int on_row(const perfpred_many_row *r, void *user)
{
    out_state *o = user;
    int line = o->l->line[r->item];
    if (r->status != PERFPRED_OK && r->item != o->last_bad_item) {
        if (o->progress) fputs("\r\033[K", stderr);
        fprintf(stderr, "perfpred: %s:%d: %s\n", o->file, line, r->error);
        o->last_bad_item = r->item;
    }
    const perfpred_prediction *p = r->pred;
    if (o->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "line", line);
        cJSON_AddStringToObject(j, "item", r->item_text);
        cJSON_AddStringToObject(j, "device", r->device);
        cJSON_AddNumberToObject(j, "batch", (double)r->batch);
        cJSON_AddStringToObject(j, "status", p ? "ok" : "error");
        if (p) {
            cJSON_AddNumberToObject(j, "latency_ms", p->latency_ms.value);
            cJSON_AddStringToObject(j, "latency_provenance", perfpred_provenance_str(p->latency_ms.prov));
            cJSON_AddNumberToObject(j, "energy_mj", p->energy_mj.value);
            cJSON_AddNumberToObject(j, "peak_memory_bytes", p->peak_memory_bytes.value);
        } else {
            cJSON_AddStringToObject(j, "error", r->error);
        }
        char *s = cJSON_PrintUnformatted(j);
        if (s) puts(s);
        free(s);
        cJSON_Delete(j);
    } else {
        printf("%d,", line);
        csv_field(r->item_text);
        putchar(',');
        csv_field(r->device);
        printf(",%lld,", (long long)r->batch);
        if (p) {
            /* a figure the device cannot give (no power model: energy) is an empty field */
            double v[3] = {p->latency_ms.value, p->energy_mj.value, p->peak_memory_bytes.value};
            for (int k = 0; k < 3; k++) {
                if (isfinite(v[k])) printf(k == 2 ? "%.0f" : "%.9g", v[k]);
                if (k == 0) printf(",%s", perfpred_provenance_str(p->latency_ms.prov));
                putchar(',');
            }
            fputs("ok,\n", stdout);
        } else {
            fputs(",,,,error,", stdout);
            csv_field(r->error);
            putchar('\n');
        }
    }
    o->done++;
    double t = now_s();
    if (t - o->last_tick > 0.1 || o->done == o->total) {
        fflush(stdout);
        if (o->progress) fprintf(stderr, "\r\033[Kpredict-many: %ld / %ld", o->done, o->total);
        o->last_tick = t;
    }
    return ferror(stdout) ? 1 : 0; /* a closed pipe stops the run */
}

static int parse_list(char *s, const char **out, int cap, const char *what)
{
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == cap) {
            cli_error("%s: at most %d values", what, cap);
            return -1;
        }
        out[n++] = tok;
    }
    if (n == 0) cli_error("%s: empty list", what);
    return n ? n : -1;
}

/* A positive integer, or -1 after saying why not. */
static long long positive(const char *tok, const char *what)
{
    char *end;
    errno = 0;
    long long v = strtoll(tok, &end, 10);
    if (errno || *end || end == tok || v < 1) {
        cli_error("%s: '%s' is not a positive integer", what, tok);
        return -1;
    }
    return v;
}

enum {
    OPT_JSON = 256, OPT_CSV, OPT_DEVICE, OPT_NB201, OPT_ONNX_LIST, OPT_CONFIG_DIR, OPT_THREADS,
    OPT_BATCH, OPT_RUNTIME, OPT_PRECISION
};

/* Values only as the next word: "--device=rpi4" is an unknown option here (no_equals). */
static const struct option many_options[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"csv", no_argument, NULL, OPT_CSV},
    {"help", no_argument, NULL, 'h'},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"nb201", required_argument, NULL, OPT_NB201},
    {"onnx-list", required_argument, NULL, OPT_ONNX_LIST},
    {"config-dir", required_argument, NULL, OPT_CONFIG_DIR},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"runtime", required_argument, NULL, OPT_RUNTIME},
    {"precision", required_argument, NULL, OPT_PRECISION},
    {NULL, 0, NULL, 0}
};

/* --batch N[,N..] appended to batches[*n..CLI_MAX_LIST): 0, or -1 after saying why. */
static int many_batches(char *v, int64_t *batches, int *n)
{
    char *save = NULL;
    for (char *tok = strtok_r(v, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long long b = positive(tok, "--batch");
        if (b < 1) return -1;
        if (*n == CLI_MAX_LIST) {
            cli_error("--batch: at most %d values", CLI_MAX_LIST);
            return -1;
        }
        batches[(*n)++] = b;
    }
    return 0;
}

int cli_predict_many_main(int argc, char **argv)
{
    const char *devices[CLI_MAX_LIST], *files[2] = {NULL, NULL}, *config_dir = NULL;
    perfpred_predict_params pp = perfpred_predict_default_params();
    int64_t batches[CLI_MAX_LIST];
    int n_devices = 0, n_batches = 0, threads = 1, json = 0;
    cli_getopt G;
    cli_getopt_init(&G, argc, argv, "-:h", many_options);
    G.no_equals = 1;
    for (int c; (c = cli_getopt_next(&G)) != -1;) {
        long long v;
        switch (c) {
        case OPT_JSON: json = 1; break;
        case OPT_CSV: json = 0; break;
        case 'h': fputs(many_usage, stdout); return EXIT_OK_;
        case OPT_DEVICE:
            if ((n_devices = parse_list(optarg, devices, CLI_MAX_LIST, "--device")) < 0)
                return EXIT_USAGE;
            break;
        case OPT_NB201: files[0] = optarg; break;
        case OPT_ONNX_LIST: files[1] = optarg; break;
        case OPT_CONFIG_DIR: config_dir = optarg; break;
        case OPT_THREADS:
            v = positive(optarg, "--threads");
            if (v < 1 || v > 1024) {
                if (v > 1024) cli_error("--threads: at most 1024");
                return EXIT_USAGE;
            }
            threads = (int)v;
            break;
        case OPT_BATCH:
            if (many_batches(optarg, batches, &n_batches)) return EXIT_USAGE;
            break;
        case OPT_RUNTIME: pp.runtime = optarg; break;
        case OPT_PRECISION:
            if (!cli_precision_ok(optarg)) return EXIT_USAGE;
            pp.precision = optarg;
            break;
        default: /* a positional or unknown word, or an option without its value */
            if (G.at + 1 < argc)
                cli_error("predict-many: unknown option '%s'\n%s", G.word, many_usage);
            else
                cli_error("predict-many: unknown or incomplete option '%s'\n%s", G.word,
                          many_usage);
            return EXIT_USAGE;
        }
    }
    if (n_devices == 0 || (!files[0] == !files[1])) {
        cli_error("predict-many: --device and exactly one of --nb201, --onnx-list are required\n%s",
                  many_usage);
        return EXIT_USAGE;
    }
    const char *file = files[0] ? files[0] : files[1];
    list l;
    if (list_read(file, &l)) return EXIT_INPUT;
    cli_opts co;
    memset(&co, 0, sizeof co);
    co.config_dir = config_dir;
    int code = EXIT_OK_;
    perfpred_ctx *ctx = cli_open_ctx(&co, &code);
    if (!ctx) {
        list_free(&l);
        return code;
    }
    out_state o = {.file = file, .l = &l, .json = json, .progress = isatty(2), .last_bad_item = -1};
    o.total = (long)l.n * n_devices * (n_batches ? n_batches : 1);
    if (!json)
        puts("line,item,device,batch,latency_ms,latency_provenance,energy_mj,peak_memory_bytes,"
             "status,error");
    perfpred_many_params p = perfpred_many_default_params();
    p.items = l.items;
    p.n_items = l.n;
    p.devices = devices;
    p.n_devices = n_devices;
    p.batches = batches;
    p.n_batches = n_batches;
    p.threads = threads;
    p.predict = &pp;
    p.on_row = on_row;
    p.user = &o;
    int n_failed = 0;
    char err[1024];
    perfpred_status st = perfpred_predict_many(ctx, &p, &n_failed, err, sizeof err);
    fflush(stdout);
    if (o.progress) fputs("\r\033[K", stderr);
    if (st) {
        cli_error("%s", err);
        code = cli_exit_code(st);
    } else if (n_failed) {
        fprintf(stderr, "perfpred: predict-many: %d of %ld rows failed\n", n_failed, o.total);
        code = EXIT_INPUT;
    }
    perfpred_ctx_close(ctx);
    list_free(&l);
    return code;
}
