/* run/bundle.c: `calibrate run --plan-only DIR`: what a board with PyTorch but no perfpred build
 * needs to measure itself: the plan, the graphs and configurations, the runners, and run.sh, one
 * command that writes measurements/ (figures, layers, networks). `--measurements DIR` then reads
 * that folder back on a machine with perfpred. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/run.h"

/* Copies every *.py of src_root/runners into the bundle, and the one tool the runners import. */
static perfpred_status copy_runners(pp_run *R)
{
    char src[PP_RUN_PATH], dst[PP_RUN_PATH];
    pp_err e = {0};
    if (pp_mkdir_p(pp_run_path(R, dst, sizeof dst, "runners"), &e) != PERFPRED_OK ||
        pp_mkdir_p(pp_run_path(R, dst, sizeof dst, "tools"), &e) != PERFPRED_OK)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
    snprintf(src, sizeof src, "%s/runners", R->src_root);
    DIR *d = opendir(src);
    if (!d) return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot list: %s", src, strerror(errno));
    struct dirent *de;
    perfpred_status st = PERFPRED_OK;
    while (st == PERFPRED_OK && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 4 || strcmp(de->d_name + n - 3, ".py") != 0) continue;
        char from[PP_RUN_PATH * 2], to[PP_RUN_PATH * 2];
        snprintf(from, sizeof from, "%s/%s", src, de->d_name);
        snprintf(to, sizeof to, "%s/runners/%s", R->work, de->d_name);
        st = pp_run_copy_file(R, from, to);
    }
    closedir(d);
    if (st != PERFPRED_OK) return st;
    char from[PP_RUN_PATH], to[PP_RUN_PATH];
    snprintf(from, sizeof from, "%s/tools/export_models.py", R->src_root);
    return pp_run_copy_file(R, from, pp_run_path(R, to, sizeof to, "tools/export_models.py"));
}

/* One line of run.sh: `prefix"$PY" <the runner's arguments, quoted>`, the same command line the
 * local stage executes (runner_args.c). */
static perfpred_status runner_line(pp_run *R, pp_strbuf *b, pp_run_runner which,
                                   const char *prefix)
{
    pp_run_cmd *c = malloc(sizeof *c);
    if (!c) return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = pp_run_runner_cmd(R, which, 1, c);
    if (st == PERFPRED_OK) {
        pp_strbuf_printf(b, "%s\"$PY\"", prefix);
        for (int i = 0; i < c->argc; i++) {
            pp_strbuf_put(b, " ");
            pp_run_shell_quote(b, c->argv[i]);
        }
        pp_strbuf_put(b, "\n");
    } else {
        st = pp_run_fail(R, st, "%s: its command line is too long", c->what);
    }
    free(c);
    return st;
}

perfpred_status pp_run_write_bundle(pp_run *R)
{
    perfpred_status st = copy_runners(R);
    if (st != PERFPRED_OK) return st;
    pp_strbuf b = {0};
    pp_strbuf_printf(
        &b,
        "#!/bin/sh\n"
        "# run.sh: measures this board for `perfpred calibrate run --device %s --measurements "
        "DIR`\n"
        "# (written by calibrate run --plan-only). Needs python3 with torch and torchvision.\n"
        "# Rerun it after an interruption: each runner resumes from its journal.\n"
        "set -e\n"
        "cd \"$(dirname \"$0\")\"\n"
        "PY=\"${PYTHON:-python3}\"\n"
        "# the first of $PYTHON, python3 and /usr/bin/python3 that has torch\n"
        "\"$PY\" -c 'import torch' 2>/dev/null || PY=/usr/bin/python3\n"
        "\"$PY\" -c 'import torch, torchvision' || { echo \"run.sh: $PY lacks torch or "
        "torchvision (set PYTHON)\" >&2; exit 2; }\n"
        "# a runner whose --budget-min stopped it exits 3 with the rows so far written\n"
        "budgeted() { st=0; \"$@\" || st=$?; [ $st -eq 0 ] || [ $st -eq 3 ] || exit $st; }\n"
        "mkdir -p measurements/sys/proc measurements/sys/sys/devices/system/cpu/cpu0\n"
        "cp /proc/cpuinfo /proc/meminfo measurements/sys/proc/\n"
        "cp -r /sys/devices/system/cpu/cpu0/cache measurements/sys/sys/devices/system/cpu/cpu0/ "
        "2>/dev/null || true\n",
        R->device);
    static const pp_run_runner order[] = {PP_RUN_HOST_PROBE, PP_RUN_LAYER_RUNNER,
                                          PP_RUN_TRAIN_NETWORKS, PP_RUN_JUDGE_NETWORKS};
    for (size_t i = 0; st == PERFPRED_OK && i < sizeof order / sizeof order[0]; i++)
        if (!(R->quick && order[i] == PP_RUN_LAYER_RUNNER)) /* a quick run times no layers */
            st = runner_line(R, &b, order[i], order[i] == PP_RUN_HOST_PROBE ? "" : "budgeted ");
    if (st != PERFPRED_OK) {
        free(b.data);
        return st;
    }
    pp_strbuf_printf(&b,
                     "echo \"done: copy this folder back and run: perfpred calibrate run --device "
                     "%s --measurements <this folder>\"\n",
                     R->device);
    if (b.oom) {
        free(b.data);
        return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    }
    char path[PP_RUN_PATH];
    pp_err e = {0};
    st = pp_write_file_atomic(pp_run_path(R, path, sizeof path, "run.sh"), b.data, b.len, &e);
    free(b.data);
    if (st != PERFPRED_OK) return pp_run_fail(R, st, "%s", e.msg);
    if (chmod(path, 0755) != 0)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s: chmod: %s", path, strerror(errno));
    R->out->bundle_written = 1;
    pp_log(&R->lg, PERFPRED_LOG_INFO, "bundle: %s (copy it to the board and run ./run.sh there)",
           R->work);
    return PERFPRED_OK;
}
