/* eval/plot.c: the predicted-vs-measured figure of `perfpred eval`, drawn by gnuplot (Debian's
 * gnuplot-nox): log-log axes, the y = x line, a +-10 % band and one point set per group. The data and
 * script go to temporary files; gnuplot's messages are captured, never printed. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eval/eval.h"

extern char **environ;

static perfpred_status fail(char *errbuf, size_t n, perfpred_status st, const char *fmt,
                            const char *a, const char *b)
{
    if (errbuf && n) snprintf(errbuf, n, fmt, a, b);
    return st;
}

/* Text safe inside a gnuplot single-quoted string: no quote, backslash or control character. */
int pp_eval_plot_safe(const char *s)
{
    for (; *s; s++)
        if (*s == '\'' || *s == '\\' || (unsigned char)*s < 0x20) return 0;
    return 1;
}

/* Runs `gnuplot script`, its stdout and stderr into log_path. Returns the exit status, 127 when
 * gnuplot could not be started, -1 on a spawn error. */
int pp_eval_gnuplot_run(const char *script, const char *log_path)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) return -1;
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return rc == ENOENT ? 127 : -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void pp_eval_plot_last_line(const char *path, char *out, size_t n)
{
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    /* gnuplot echoes the failing command before the message: keep the last non-empty line */
    while (fgets(line, sizeof line, f)) {
        size_t k = strcspn(line, "\r\n");
        line[k] = '\0';
        if (k) snprintf(out, n, "%.*s", (int)(n > 1 ? n - 1 : 0), line);
    }
    fclose(f);
}

perfpred_status pp_eval_plot_draw(const char *script, const char *log_path, const char *terminal,
                                  int (*write)(void *user, const char *terminal), void *user,
                                  pp_err *err)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        if (write(user, terminal) != 0)
            return pp_err_set(err, PERFPRED_ERR_IO, "plot: cannot write %s", script);
        int rc = pp_eval_gnuplot_run(script, log_path);
        if (rc == 0) return PERFPRED_OK;
        char line[300];
        pp_eval_plot_last_line(log_path, line, sizeof line);
        if (rc == 127)
            return pp_err_set(err, PERFPRED_ERR_IO, "plot: gnuplot not found (install gnuplot-nox)");
        /* without the cairo terminals, fall back to gd's png */
        if (attempt == 0 && strcmp(terminal, "pngcairo") == 0 && strstr(line, "terminal")) {
            terminal = "png";
            continue;
        }
        return pp_err_set(err, PERFPRED_ERR_IO, "plot: gnuplot failed: %s",
                          line[0] ? line : "(no message)");
    }
    return PERFPRED_OK;
}

static int write_script(const char *script, const char *data, const perfpred_eval_report *r,
                        const char *path, const char *title, const char *terminal, double lo,
                        double hi)
{
    FILE *f = fopen(script, "w");
    if (!f) return -1;
    fprintf(f, "set encoding utf8\n");
    if (strcmp(terminal, "svg") == 0)
        fprintf(f, "set terminal svg size 900,800 dynamic noenhanced font 'sans,12'\n");
    else if (strcmp(terminal, "pngcairo") == 0)
        fprintf(f, "set terminal pngcairo size 900,800 noenhanced font 'sans,11'\n");
    else
        fprintf(f, "set terminal png size 900,800 noenhanced\n");
    fprintf(f, "set output '%s'\n", path);
    fprintf(f, "set title '%s'\n", title);
    fprintf(f, "set logscale xy\nset grid\nset key top left box opaque\nset size square\n");
    fprintf(f, "set xlabel 'measured latency (ms)'\nset ylabel 'predicted latency (ms)'\n");
    fprintf(f, "set xrange [%.6g:%.6g]\nset yrange [%.6g:%.6g]\nset samples 400\n", lo, hi, lo, hi);
    fprintf(f, "plot '+' using 1:(0.9*$1):(1.1*$1) with filledcurves lc rgb '#dddddd' "
               "title '+/-10 %%', \\\n");
    fprintf(f, "     x with lines lc rgb 'black' lw 1.5 title 'y = x'");
    for (int g = 0; g < r->n_groups; g++)
        fprintf(f, ", \\\n     '%s' index %d using 1:2 with points pt 7 ps 0.6 title '%s (%d)'",
                data, g, r->groups[g].name, r->groups[g].model.n);
    fprintf(f, "\n");
    return fclose(f) == 0 ? 0 : -1;
}

typedef struct eval_script {
    const char *script, *data;
    const perfpred_eval_report *r;
    const char *path, *title;
    double lo, hi;
} eval_script;

static int write_eval_script(void *user, const char *terminal)
{
    const eval_script *e = user;
    return write_script(e->script, e->data, e->r, e->path, e->title, terminal, e->lo, e->hi);
}

perfpred_status perfpred_eval_plot(const perfpred_eval_report *r, const char *path,
                                   const char *title, char *errbuf, size_t errbuf_len)
{
    if (!r || !path || r->n_points < 1 || !r->points)
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG, "plot: %s%s", "no points",
                    "");
    size_t L = strlen(path);
    const char *terminal;
    if (L > 4 && strcmp(path + L - 4, ".png") == 0) terminal = "pngcairo";
    else if (L > 4 && strcmp(path + L - 4, ".svg") == 0) terminal = "svg";
    else
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG,
                    "plot: %s: the file name must end in .png or .svg%s", path, "");
    char ttl[256];
    snprintf(ttl, sizeof ttl, "%s", title ? title : "");
    if (!pp_eval_plot_safe(path))
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG,
                    "plot: %s: quotes, backslashes and control characters are not allowed%s",
                    path, "");
    for (char *c = ttl; *c; c++)
        if (*c == '\'' || *c == '\\' || (unsigned char)*c < 0x20) *c = ' ';
    for (int g = 0; g < r->n_groups; g++)
        if (!pp_eval_plot_safe(r->groups[g].name))
            return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG,
                        "plot: group name '%s' cannot be quoted for gnuplot%s", r->groups[g].name,
                        "");
    const char *tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir || !pp_eval_plot_safe(tmpdir)) tmpdir = "/tmp";
    char data[4096], script[4200], logp[4200];
    snprintf(data, sizeof data, "%.4000s/perfpred-plot-XXXXXX", tmpdir);
    int fd = mkstemp(data);
    if (fd < 0)
        return fail(errbuf, errbuf_len, PERFPRED_ERR_IO, "plot: cannot create a file in %s: %s",
                    tmpdir, strerror(errno));
    FILE *f = fdopen(fd, "w");
    double lo = INFINITY, hi = 0;
    /* one block per group, separated by two blank lines (gnuplot's `index`) */
    for (int g = 0; f && g < r->n_groups; g++) {
        if (g) fprintf(f, "\n\n");
        int any = 0;
        for (int i = 0; i < r->n_points; i++) {
            const perfpred_eval_point *p = &r->points[i];
            if (strcmp(p->group, r->groups[g].name) != 0) continue;
            if (!(p->measured_ms > 0) || !(p->predicted_ms > 0)) continue;
            fprintf(f, "%.9g %.9g\n", p->measured_ms, p->predicted_ms);
            lo = fmin(lo, fmin(p->measured_ms, p->predicted_ms));
            hi = fmax(hi, fmax(p->measured_ms, p->predicted_ms));
            any = 1;
        }
        /* an empty block would shift later indices: keep it, with a point outside the range */
        if (!any) fprintf(f, "nan nan\n");
    }
    if (!f || fclose(f) != 0) {
        if (!f) close(fd);
        unlink(data);
        return fail(errbuf, errbuf_len, PERFPRED_ERR_IO, "plot: cannot write %s%s", data, "");
    }
    if (!(hi > 0) || !isfinite(lo)) {
        unlink(data);
        return fail(errbuf, errbuf_len, PERFPRED_ERR_INVALID_ARG, "plot: %s%s",
                    "no positive latencies to draw", "");
    }
    /* decade-aligned limits with a margin */
    lo = pow(10, floor(log10(lo) - 0.05));
    hi = pow(10, ceil(log10(hi) + 0.05));
    snprintf(script, sizeof script, "%s.gp", data);
    snprintf(logp, sizeof logp, "%s.log", data);
    eval_script es = {script, data, r, path, ttl, lo, hi};
    pp_err err = {0};
    perfpred_status st = pp_eval_plot_draw(script, logp, terminal, write_eval_script, &es, &err);
    if (st) fail(errbuf, errbuf_len, st, "%s%s", err.msg, "");
    unlink(data);
    unlink(script);
    unlink(logp);
    return st;
}
