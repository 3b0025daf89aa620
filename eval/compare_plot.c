/* eval/compare_plot.c: the picture of a comparison (perfpred_compare_plot): latency against
 * energy or peak memory, one point per device and batch, the latency interval as a horizontal bar,
 * the Pareto front of the two plotted figures joined. Drawn by gnuplot into a temporary file beside
 * the target, then renamed over it. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "eval/eval.h"

typedef struct pt {
    double x, lo, hi, y;
    char label[96];
} pt;

static int cmp_x(const void *a, const void *b)
{
    const pt *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
}

static double num(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* The rows that have both figures; *out malloc'd. */
static perfpred_status read_points(const cJSON *rows, int memory, pt **out, int *n, pp_err *err)
{
    int cap = cJSON_GetArraySize(rows);
    *n = 0;
    if (!(*out = calloc((size_t)cap + 1, sizeof **out)))
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    for (const cJSON *r = rows->child; r; r = r->next) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(r, "prediction");
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(p, "latency");
        const cJSON *dev = cJSON_GetObjectItemCaseSensitive(r, "device");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(dev, "name");
        pt *q = &(*out)[*n];
        q->x = num(lat, "value", NULL);
        q->y = memory ? num(p, "peak_memory", "value") / 1048576.0 : num(p, "energy", "value");
        if (!(q->x > 0) || !(q->y > 0) || !cJSON_IsString(name)) continue;
        q->lo = num(lat, "interval", "lo");
        q->hi = num(lat, "interval", "hi");
        if (!(q->lo > 0) || !(q->hi > 0)) q->lo = q->hi = q->x;
        snprintf(q->label, sizeof q->label, "%.80s b%.0f", name->valuestring, num(p, "batch", NULL));
        if (!pp_eval_plot_safe(q->label))
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "plot: device name '%s' cannot be quoted for gnuplot", q->label);
        (*n)++;
    }
    return PERFPRED_OK;
}

static int write_data(const char *path, pt *p, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    qsort(p, (size_t)n, sizeof *p, cmp_x);
    for (int i = 0; i < n; i++)
        fprintf(f, "%.9g %.9g %.9g %.9g \"%s\"\n", p[i].x, p[i].y, p[i].lo, p[i].hi, p[i].label);
    /* the front of (latency, y): by latency, every point lower in y than all faster ones */
    fprintf(f, "\n\n");
    double best = INFINITY;
    for (int i = 0; i < n; i++)
        if (p[i].y < best) {
            best = p[i].y;
            fprintf(f, "%.9g %.9g\n", p[i].x, p[i].y);
        }
    return fclose(f) == 0 ? 0 : -1;
}

static int write_script(const char *script, const char *data, const char *out, const char *term,
                        int memory, const char *title)
{
    FILE *f = fopen(script, "w");
    if (!f) return -1;
    fprintf(f, "set encoding utf8\n");
    if (strcmp(term, "svg") == 0)
        fprintf(f, "set terminal svg size 1000,700 dynamic noenhanced font 'sans,12'\n");
    else if (strcmp(term, "pngcairo") == 0)
        fprintf(f, "set terminal pngcairo size 1000,700 noenhanced font 'sans,11'\n");
    else
        fprintf(f, "set terminal png size 1000,700 noenhanced\n");
    fprintf(f, "set output '%s'\nset title '%s'\n", out, title);
    fprintf(f, "set logscale xy\nset grid\nset key top right box opaque\nset offsets graph 0.05, "
               "graph 0.15, graph 0.1, graph 0.1\n");
    fprintf(f, "set xlabel 'latency (ms); bars: 80 %% interval where the device has one'\n");
    fprintf(f, "set ylabel '%s'\n", memory ? "peak memory (MiB)" : "energy per inference (mJ)");
    fprintf(f, "plot '%s' index 0 using 1:2:3:4 with xerrorbars pt 7 ps 0.9 lc rgb '#2060a0' "
               "title 'device, batch', \\\n", data);
    fprintf(f, "     '%s' index 0 using 1:2:5 with labels left offset 0.7,0.5 font ',9' notitle, "
               "\\\n", data);
    fprintf(f, "     '%s' index 1 using 1:2 with lines lw 1.5 lc rgb '#c03030' title 'Pareto front "
               "(latency, %s)'\n", data, memory ? "memory" : "energy");
    return fclose(f) == 0 ? 0 : -1;
}

typedef struct cmp_script {
    const char *script, *data, *out, *title;
    int memory;
} cmp_script;

static int write_cmp_script(void *user, const char *term)
{
    const cmp_script *c = user;
    return write_script(c->script, c->data, c->out, term, c->memory, c->title);
}

/* Runs gnuplot into tmp_out (pp_eval_plot_draw: pngcairo falls back to gd's png). */
static perfpred_status draw(const char *data, const char *tmp_out, const char *term, int memory,
                            const char *title, pp_err *err)
{
    char script[4200], logp[4200];
    if ((size_t)snprintf(script, sizeof script, "%s.gp", data) >= sizeof script ||
        (size_t)snprintf(logp, sizeof logp, "%s.log", data) >= sizeof logp)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "plot: path too long: %s", data);
    cmp_script c = {script, data, tmp_out, title, memory};
    perfpred_status st = pp_eval_plot_draw(script, logp, term, write_cmp_script, &c, err);
    unlink(script);
    unlink(logp);
    return st;
}

perfpred_status perfpred_compare_plot(const char *compare_json, const char *path, const char *y,
                                      char *errbuf, size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    cJSON *root = NULL;
    pt *p = NULL;
    int n = 0, fd = -1;
    char tmp_out[4200] = "", data[4200] = "";
    size_t L = path ? strlen(path) : 0;
    const char *term = L > 4 && !strcmp(path + L - 4, ".svg")   ? "svg"
                       : L > 4 && !strcmp(path + L - 4, ".png") ? "pngcairo"
                                                                : NULL;
    if (!compare_json || !path || !term) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "plot: %s: the file name must end in .svg "
                        "or .png", path ? path : "(none)");
        goto done;
    }
    if (y && strcmp(y, "energy") && strcmp(y, "memory")) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "plot: y axis '%s' (energy or memory)", y);
        goto done;
    }
    if (!pp_eval_plot_safe(path) || L > 4000) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "plot: %s: quotes, backslashes and control "
                        "characters are not allowed", path);
        goto done;
    }
    root = cJSON_Parse(compare_json);
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(root, "rows");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsArray(rows) || !cJSON_IsString(model)) {
        st = pp_err_set(&err, PERFPRED_ERR_PARSE, "plot: not a compare answer (docs/json.md)");
        goto done;
    }
    int memory = y && !strcmp(y, "memory");
    if ((st = read_points(rows, memory, &p, &n, &err))) goto done;
    if (n == 0 && !y) { /* no row has an energy: memory */
        free(p);
        memory = 1;
        if ((st = read_points(rows, memory, &p, &n, &err))) goto done;
    }
    if (n == 0) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "plot: no row has both a latency and %s",
                        memory ? "a peak memory" : "an energy");
        goto done;
    }
    /* write-then-rename: gnuplot draws into a file beside the target */
    /* (as pp_write_file_atomic names it; 0644 like any file the library writes) */
    snprintf(tmp_out, sizeof tmp_out, "%s.tmp.%ld", path, (long)getpid());
    if ((fd = open(tmp_out, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
        st = pp_err_set(&err, PERFPRED_ERR_IO, "plot: cannot write %s: %s", path, strerror(errno));
        tmp_out[0] = '\0';
        goto done;
    }
    close(fd);
    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir || !pp_eval_plot_safe(tmpdir) || strlen(tmpdir) > 4000) tmpdir = "/tmp";
    snprintf(data, sizeof data, "%s/perfpred-cmp-XXXXXX", tmpdir);
    if ((fd = mkstemp(data)) < 0) {
        st = pp_err_set(&err, PERFPRED_ERR_IO, "plot: cannot create a file in %s: %s", tmpdir,
                        strerror(errno));
        data[0] = '\0';
        goto done;
    }
    close(fd);
    if (write_data(data, p, n)) {
        st = pp_err_set(&err, PERFPRED_ERR_IO, "plot: cannot write %s", data);
        goto done;
    }
    char title[200];
    snprintf(title, sizeof title, "%.150s", model->valuestring);
    for (char *c = title; *c; c++)
        if (*c == '\'' || *c == '\\' || (unsigned char)*c < 0x20) *c = ' ';
    if ((st = draw(data, tmp_out, term, memory, title, &err))) goto done;
    if (rename(tmp_out, path) != 0) {
        st = pp_err_set(&err, PERFPRED_ERR_IO, "plot: cannot write %s: %s", path, strerror(errno));
        goto done;
    }
    tmp_out[0] = '\0';
done:
    if (tmp_out[0]) unlink(tmp_out);
    if (data[0]) unlink(data);
    free(p);
    cJSON_Delete(root);
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st;
}
