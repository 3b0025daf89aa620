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
        "mkdir -p measurements/sys/proc measurements/sys/sys/devices/system/cpu/cpu0\n"
        "cp /proc/cpuinfo /proc/meminfo measurements/sys/proc/\n"
        "cp -r /sys/devices/system/cpu/cpu0/cache measurements/sys/sys/devices/system/cpu/cpu0/ "
        "2>/dev/null || true\n"
        "\"$PY\" runners/host_probe.py -o measurements/figures.json --threads %d\n"
        "st=0\n"
        "\"$PY\" runners/layer_runner.py plan.csv -o measurements/layers.csv --device-name %s "
        "--threads %d --scrub-mb 0 --canary --budget-min %.2f || st=$?\n"
        "[ $st -eq 0 ] || [ $st -eq 3 ] || exit $st\n"
        "for set in train judge; do\n"
        "  out=measurements/networks.csv; min=%.2f\n"
        "  [ $set = judge ] && out=measurements/judge.csv && min=%.2f\n"
        "  st=0\n"
        "  \"$PY\" runners/network_runner.py --reference graphs/$set/reference.csv "
        "--configs graphs/$set-configs.csv --graphs-dir graphs/zoo -o $out --device-name %s "
        "--threads %d --rounds 5 --canary --budget-min $min || st=$?\n"
        "  [ $st -eq 0 ] || [ $st -eq 3 ] || exit $st\n"
        "done\n"
        "echo \"done: copy this folder back and run: perfpred calibrate run --device %s "
        "--measurements <this folder>\"\n",
        R->device, R->threads, R->device, R->threads, R->budget_layers, R->budget_train,
        R->budget_judge, R->device, R->threads, R->device);
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
