/* run/run.c: perfpred_calibrate_run: the stages of a calibration in order, each recorded in
 * work/state.json when it is complete, so that a run killed at any point continues with resume
 * (the runners resume from their own journals inside a stage). */
#define _DEFAULT_SOURCE /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "devices/devices.h"
#include "predictor/predictor.h"
#include "run/run.h"

perfpred_run_params perfpred_run_default_params(void)
{
    perfpred_run_params p = {0};
    p.budget_min = 30;
    p.threads = 1;
    p.seed = 1;
    return p;
}

const char *pp_run_path(const pp_run *R, char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", R->work, rel);
    return buf;
}

perfpred_status pp_run_fail(pp_run *R, perfpred_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(R->errbuf, R->errlen, fmt, ap);
    va_end(ap);
    return st;
}

int pp_run_stage_done(const pp_run *R, const char *stage)
{
    for (int i = 0; i < R->n_done; i++)
        if (strcmp(R->done[i], stage) == 0) return 1;
    return 0;
}

perfpred_status pp_run_write_json(pp_run *R, cJSON *j, const char *rel)
{
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    char path[PP_RUN_PATH];
    pp_err e = {0};
    perfpred_status st =
        pp_write_file_atomic(pp_run_path(R, path, sizeof path, rel), text, strlen(text), &e);
    free(text);
    return st == PERFPRED_OK ? st : pp_run_fail(R, st, "%s", e.msg);
}

static perfpred_status write_state(pp_run *R)
{
    cJSON *j = cJSON_CreateObject();
    cJSON *done = cJSON_CreateArray();
    if (!j || !done) {
        cJSON_Delete(j);
        cJSON_Delete(done);
        return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    }
    cJSON_AddStringToObject(j, "device", R->device);
    cJSON_AddNumberToObject(j, "budget_min", R->budget_min);
    cJSON_AddNumberToObject(j, "seed", (double)R->seed);
    cJSON_AddNumberToObject(j, "threads", R->threads);
    cJSON_AddBoolToObject(j, "bundle", R->remote || R->p->plan_only_dir != NULL);
    cJSON_AddBoolToObject(j, "quick", R->quick);
    cJSON_AddNumberToObject(j, "minutes", R->minutes_before + (pp_now_s() - R->t0) / 60.0);
    for (int i = 0; i < R->n_done; i++) cJSON_AddItemToArray(done, cJSON_CreateString(R->done[i]));
    cJSON_AddItemToObject(j, "done", done);
    return pp_run_write_json(R, j, "state.json");
}

perfpred_status pp_run_mark(pp_run *R, const char *stage)
{
    if (!pp_run_stage_done(R, stage) && R->n_done < PP_RUN_MAX_STAGES)
        snprintf(R->done[R->n_done++], sizeof R->done[0], "%s", stage);
    return write_state(R);
}

/* Reads work/state.json: the stages done, after checking that it describes the same run. */
static perfpred_status read_state(pp_run *R, int *exists)
{
    char path[PP_RUN_PATH];
    pp_run_path(R, path, sizeof path, "state.json");
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err e = {0};
    *exists = 0;
    if (access(path, F_OK) != 0) return PERFPRED_OK;
    *exists = 1;
    if (pp_read_file(path, &buf, &len, &e) != PERFPRED_OK)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
    cJSON *j = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    const cJSON *dev = j ? cJSON_GetObjectItemCaseSensitive(j, "device") : NULL;
    const cJSON *bud = j ? cJSON_GetObjectItemCaseSensitive(j, "budget_min") : NULL;
    const cJSON *seed = j ? cJSON_GetObjectItemCaseSensitive(j, "seed") : NULL;
    const cJSON *thr = j ? cJSON_GetObjectItemCaseSensitive(j, "threads") : NULL;
    const cJSON *done = j ? cJSON_GetObjectItemCaseSensitive(j, "done") : NULL;
    const cJSON *mins = j ? cJSON_GetObjectItemCaseSensitive(j, "minutes") : NULL;
    /* absent in the state of runs before --quick: a full run */
    int quick = cJSON_IsTrue(j ? cJSON_GetObjectItemCaseSensitive(j, "quick") : NULL);
    perfpred_status st = PERFPRED_OK;
    if (!cJSON_IsString(dev) || !cJSON_IsNumber(bud) || !cJSON_IsNumber(seed) ||
        !cJSON_IsNumber(thr) || !cJSON_IsArray(done))
        st = pp_run_fail(R, PERFPRED_ERR_PARSE,
                         "%s: not a calibrate run state (device, budget_min, seed, threads, done "
                         "expected); remove the folder to start again",
                         path);
    else if (strcmp(dev->valuestring, R->device) != 0 ||
             (!R->remote && (bud->valuedouble != R->budget_min ||
                             (unsigned long long)seed->valuedouble != R->seed ||
                             thr->valueint != R->threads || quick != R->quick)))
        st = pp_run_fail(R, PERFPRED_ERR_INVALID_ARG,
                         "%s: the run there is for --device %s --budget-min %g --seed %.0f "
                         "--threads %d%s; resume it with those, or use another --work folder",
                         path, dev->valuestring, bud->valuedouble, seed->valuedouble,
                         thr->valueint, quick ? " --quick" : " (without --quick)");
    else {
        /* a bundle's measurements: the run's parameters are the bundle's */
        R->budget_min = bud->valuedouble;
        R->seed = (unsigned long long)seed->valuedouble;
        R->threads = thr->valueint;
        R->quick = quick;
        /* a bundle's minutes were the board's; a resumed run adds to its own */
        if (!R->remote && cJSON_IsNumber(mins) && mins->valuedouble >= 0)
            R->minutes_before = mins->valuedouble;
        const cJSON *it;
        cJSON_ArrayForEach(it, done)
        {
            if (cJSON_IsString(it) && R->n_done < PP_RUN_MAX_STAGES)
                snprintf(R->done[R->n_done++], sizeof R->done[0], "%s", it->valuestring);
        }
    }
    cJSON_Delete(j);
    return st;
}

/* Runs argv (argv[0] the interpreter) and judges its exit status. */
static perfpred_status run_python(pp_run *R, const char *what, int budgeted, char *argv[])
{
    char eb[512];
    int rc = pp_run_spawn(argv, eb, sizeof eb);
    if (rc < 0) return pp_run_fail(R, PERFPRED_ERR_IO, "%s: %s", what, eb);
    /* the runners exit 3 when their --budget-min stopped them: the rows so far are written */
    if (rc == 3 && budgeted) {
        pp_log(&R->lg, PERFPRED_LOG_WARN, "%s: its time budget ran out; the rows measured so far "
               "are kept", what);
        return PERFPRED_OK;
    }
    if (rc != 0)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s: %s exited with status %d (command: %s %s ...)",
                           what, argv[1] ? argv[1] : R->python, rc, R->python,
                           argv[1] ? argv[1] : "");
    return PERFPRED_OK;
}

perfpred_status pp_run_python(pp_run *R, const char *what, int budgeted, ...)
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)R->python;
    va_list ap;
    va_start(ap, budgeted);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 63) argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return run_python(R, what, budgeted, argv);
}

perfpred_status pp_run_exec(pp_run *R, const pp_run_cmd *c)
{
    char *argv[PP_RUN_MAX_ARGS + 2];
    argv[0] = (char *)R->python;
    for (int i = 0; i <= c->argc; i++) argv[i + 1] = (char *)c->argv[i]; /* with its NULL */
    return run_python(R, c->what, c->budgeted, argv);
}

perfpred_status pp_run_copy_file(pp_run *R, const char *from, const char *to)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err e = {0};
    perfpred_status st = pp_read_file(from, &buf, &len, &e);
    if (st == PERFPRED_OK) st = pp_write_file_atomic(to, buf, len, &e);
    free(buf);
    if (st != PERFPRED_OK) return pp_run_fail(R, st, "%s", e.msg);
    return PERFPRED_OK;
}

perfpred_status pp_run_ctx_open(pp_run *R, const char *config_dir, perfpred_ctx **out)
{
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = config_dir;
    perfpred_status st = PERFPRED_OK;
    char eb[512] = "";
    *out = perfpred_ctx_open(&cp, &st, eb, sizeof eb);
    return *out ? PERFPRED_OK : pp_run_fail(R, st, "%s", eb);
}

/* The config dir, the device, the source tree and every path the stages use. */
static perfpred_status setup(pp_run *R)
{
    const perfpred_run_params *p = R->p;
    perfpred_ctx *ctx = NULL;
    perfpred_status st = pp_run_ctx_open(R, p->config_dir, &ctx);
    if (st != PERFPRED_OK) return st;
    const pp_device *d = pp_devices_find(pp_ctx_db(ctx), p->device);
    R->known = d != NULL;
    snprintf(R->device, sizeof R->device, "%s", d ? d->name : p->device);
    if (d && d->kind == PP_DEV_CPU && !pp_device_is_eager_pytorch_cpu(d)) {
        /* copies: the descriptor's strings go with the context */
        char name[64], fw[64];
        snprintf(name, sizeof name, "%s", d->name);
        snprintf(fw, sizeof fw, "%s", d->runtime_framework ? d->runtime_framework : "none");
        perfpred_ctx_close(ctx);
        return pp_run_fail(R, PERFPRED_ERR_INVALID_ARG,
                           "--device %s: its runtime is %s, and calibrate run measures PyTorch "
                           "eager: calibrate a descriptor whose runtime.framework is pytorch-eager "
                           "(base: %s; e.g. rpi4-pytorch for rpi4)",
                           name, fw, name);
    }
    if (d && (d->kind != PP_DEV_CPU || d->is_mig)) {
        const char *kind = pp_device_kind_name(d->kind); /* a static string */
        perfpred_ctx_close(ctx);
        return pp_run_fail(R, PERFPRED_ERR_INVALID_ARG,
                           "--device %s: calibrate run calibrates CPUs (this is a %s); see "
                           "docs/calibration.md for GPUs",
                           p->device, kind);
    }
    char *real = realpath(pp_ctx_config_dir(ctx), NULL);
    const char *cfg = real ? real : pp_ctx_config_dir(ctx);
    if (strlen(cfg) + 1 > sizeof R->cfg) {
        free(real);
        perfpred_ctx_close(ctx);
        return pp_run_fail(R, PERFPRED_ERR_INVALID_ARG, "config dir path too long: %s", cfg);
    }
    snprintf(R->cfg, sizeof R->cfg, "%s", cfg);
    free(real);
    perfpred_ctx_close(ctx);
    if (!pp_dev_valid_name(R->device))
        return pp_run_fail(R, PERFPRED_ERR_INVALID_ARG,
                           "--device '%s': a new device's name takes lowercase letters, digits "
                           "and . _ - + only, from a letter or digit, at most 120 characters",
                           p->device);
    /* runners/ and the zoo: beside the config dir (a source tree), else the tree perfpred was
     * built from */
    snprintf(R->src_root, sizeof R->src_root, "%.500s/..", R->cfg);
    char probe[PP_RUN_PATH];
    snprintf(probe, sizeof probe, "%s/runners/layer_runner.py", R->src_root);
#ifdef PERFPRED_SOURCE_CONFIG_DIR
    if (access(probe, R_OK) != 0)
        snprintf(R->src_root, sizeof R->src_root, "%s/..", PERFPRED_SOURCE_CONFIG_DIR);
#endif
    snprintf(R->art, sizeof R->art, "%s/artifacts/%s", R->cfg, R->device);
    snprintf(R->newart, sizeof R->newart, "%s/artifacts/.%s.new", R->cfg, R->device);
    const char *w = p->measurements_dir ? p->measurements_dir
                    : p->plan_only_dir  ? p->plan_only_dir
                    : p->work_dir       ? p->work_dir
                                        : NULL;
    if (w && strlen(w) + 1 > sizeof R->work)
        return pp_run_fail(R, PERFPRED_ERR_INVALID_ARG, "work folder path too long: %s", w);
    if (w) snprintf(R->work, sizeof R->work, "%s", w);
    else snprintf(R->work, sizeof R->work, "perfpred-calibration-%s", R->device);
    pp_run_path(R, R->stage_cfg, sizeof R->stage_cfg, "cfg");
    R->python = p->python ? p->python : "/usr/bin/python3";
    R->remote = p->measurements_dir != NULL;
    R->budget_min = p->budget_min;
    R->seed = p->seed;
    R->threads = p->threads;
    R->quick = p->quick != 0;
    return PERFPRED_OK;
}

/* The measuring stages' shares of the budget (the rest: probe, export, fits); a quick run times
 * whole networks only. */
static void split_budget(pp_run *R)
{
    R->budget_layers = R->quick ? 0 : 0.45 * R->budget_min;
    R->budget_train = (R->quick ? 0.4 : 0.2) * R->budget_min;
    R->budget_judge = (R->quick ? 0.4 : 0.2) * R->budget_min;
}

static perfpred_status check_params(const perfpred_run_params *p, char *errbuf, size_t n)
{
    if (!p || !p->device || !p->device[0]) {
        snprintf(errbuf, n, "calibrate run: --device is required");
        return PERFPRED_ERR_INVALID_ARG;
    }
    if (!(p->budget_min >= 5 && p->budget_min <= 600)) {
        snprintf(errbuf, n, "calibrate run: --budget-min %g: from 5 to 600 minutes", p->budget_min);
        return PERFPRED_ERR_INVALID_ARG;
    }
    if (p->threads < 1 || p->threads > 256) {
        snprintf(errbuf, n, "calibrate run: --threads %d: from 1 to 256", p->threads);
        return PERFPRED_ERR_INVALID_ARG;
    }
    if (p->plan_only_dir && p->measurements_dir) {
        snprintf(errbuf, n, "calibrate run: --plan-only and --measurements exclude each other");
        return PERFPRED_ERR_INVALID_ARG;
    }
    return PERFPRED_OK;
}

typedef struct stage {
    const char *name, *what;
    perfpred_status (*fn)(pp_run *R);
    int remote_skips; /* measured on the board: nothing to do here */
    int quick_skips;  /* a quick run times no layers */
} stage;

static const stage STAGES[] = {
    {"probe", "the machine's figures and its descriptor", pp_run_stage_probe, 0, 0},
    {"zoo", "random architectures and the zoo's graphs", pp_run_stage_zoo, 1, 0},
    {"plan", "the layer plan", pp_run_stage_plan, 1, 1},
    {"layers", "timing the layers", pp_run_stage_layers, 1, 1},
    {"networks", "timing whole networks that train the in-network correction",
     pp_run_stage_networks, 1, 0},
    {"judgenets", "timing networks that only judge", pp_run_stage_judgenets, 1, 0},
    {"fit", "layer models and the in-network correction", pp_run_stage_fit, 0, 0},
    {"judge", "judging on networks no stage trained on", pp_run_stage_judge, 0, 0},
    {"install", "the new calibration in force", pp_run_stage_install, 0, 0},
};
#define N_STAGES ((int)(sizeof STAGES / sizeof STAGES[0]))

/* Minutes the stages from i on will take, for the ETA. */
static double minutes_left(const pp_run *R, int from)
{
    double m = 0;
    for (int i = from; i < N_STAGES; i++) {
        if (pp_run_stage_done(R, STAGES[i].name) || (R->remote && STAGES[i].remote_skips) ||
            (R->quick && STAGES[i].quick_skips))
            continue;
        const char *s = STAGES[i].name;
        m += !strcmp(s, "layers")     ? R->budget_layers
             : !strcmp(s, "networks") ? R->budget_train
             : !strcmp(s, "judgenets") ? R->budget_judge
             : !strcmp(s, "zoo")      ? 1.5
             : !strcmp(s, "probe")    ? 0.3
                                      : 0.5;
    }
    return m;
}

static perfpred_status run_stages(pp_run *R)
{
    int last = N_STAGES;
    if (R->p->plan_only_dir) last = 3; /* probe is the board's; zoo and plan here */
    for (int i = 0; i < last; i++) {
        const stage *S = &STAGES[i];
        if (R->p->plan_only_dir && i == 0) continue;
        if (pp_run_stage_done(R, S->name)) continue;
        if ((R->remote && S->remote_skips) || (R->quick && S->quick_skips)) {
            perfpred_status st = pp_run_mark(R, S->name);
            if (st != PERFPRED_OK) return st;
            continue;
        }
        pp_log(&R->lg, PERFPRED_LOG_INFO, "[%d/%d] %s: %s (at most %.0f min left: the budgets)",
               i + 1, N_STAGES, S->name,
               R->quick && S->fn == pp_run_stage_fit ? "the in-network correction over the layer "
                                                       "models in force"
                                                     : S->what,
               minutes_left(R, i));
        perfpred_status st = S->fn(R);
        if (st != PERFPRED_OK) return st;
        if (R->out->kept_previous) continue; /* install waits for --install-anyway */
        if ((st = pp_run_mark(R, S->name)) != PERFPRED_OK) return st;
    }
    if (R->p->plan_only_dir) return pp_run_write_bundle(R);
    pp_run_load_probe(R);
    /* a run resumed after its last stage: where its results are */
    perfpred_run_report *o = R->out;
    if (!o->artifacts_dir[0] && !o->kept_previous)
        snprintf(o->artifacts_dir, sizeof o->artifacts_dir, "%s", R->art);
    char rep[PP_RUN_PATH];
    if (!o->report_path[0] && access(pp_run_path(R, rep, sizeof rep, "report.txt"), R_OK) == 0)
        snprintf(o->report_path, sizeof o->report_path, "%s", rep);
    return PERFPRED_OK;
}

perfpred_status perfpred_calibrate_run(const perfpred_run_params *p, perfpred_run_report *out,
                                       char *errbuf, size_t errbuf_len)
{
    char dummy[8];
    if (!errbuf || errbuf_len == 0) {
        errbuf = dummy;
        errbuf_len = sizeof dummy;
    }
    errbuf[0] = 0;
    if (!out) {
        snprintf(errbuf, errbuf_len, "calibrate run: no report to fill");
        return PERFPRED_ERR_INVALID_ARG;
    }
    memset(out, 0, sizeof *out);
    perfpred_status st = check_params(p, errbuf, errbuf_len);
    if (st != PERFPRED_OK) return st;
    pp_run *R = calloc(1, sizeof *R);
    if (!R) {
        snprintf(errbuf, errbuf_len, "out of memory");
        return PERFPRED_ERR_NOMEM;
    }
    R->p = p;
    R->out = out;
    R->lg = (pp_logger){p->log, p->log_user};
    R->errbuf = errbuf;
    R->errlen = errbuf_len;
    R->t0 = pp_now_s();
    if ((st = setup(R)) != PERFPRED_OK) goto done;
    snprintf(out->device, sizeof out->device, "%s", R->device);
    pp_err e = {0};
    if ((st = pp_mkdir_p(R->work, &e)) != PERFPRED_OK) {
        pp_run_fail(R, st, "%s", e.msg);
        goto done;
    }
    int exists = 0;
    if ((st = read_state(R, &exists)) != PERFPRED_OK) goto done;
    out->quick = R->quick; /* a bundle's, when importing one */
    split_budget(R);
    if (exists && !p->resume && !p->measurements_dir) {
        st = pp_run_fail(R, PERFPRED_ERR_INVALID_ARG,
                         "%s holds a calibration run already (state.json): add --resume to "
                         "continue it, or remove the folder (or pass --work DIR) to start again",
                         R->work);
        goto done;
    }
    if (p->plan_only_dir && !R->known) {
        st = pp_run_fail(R, PERFPRED_ERR_INVALID_ARG,
                         "--plan-only: no descriptor for %s; a board's figures are measured on "
                         "the board, so its plan is costed from a descriptor: use a shipped one "
                         "(perfpred devices) or write configs/devices/%s.yaml "
                         "(configs/devices/README.md)",
                         R->device, R->device);
        goto done;
    }
    if (R->quick && R->known) {
        /* a known device without models to correct: refused before anything is measured */
        char from[64];
        int own = 0;
        if ((st = pp_run_quick_source(R, from, sizeof from, &own)) != PERFPRED_OK) goto done;
    }
    if (p->measurements_dir && !exists) {
        st = pp_run_fail(R, PERFPRED_ERR_IO,
                         "--measurements %s: no state.json there; pass the folder that "
                         "--plan-only wrote, with the board's measurements/ inside",
                         p->measurements_dir);
        goto done;
    }
    st = run_stages(R);
done:
    out->minutes = R->minutes_before + (pp_now_s() - R->t0) / 60.0;
    free(R);
    return st;
}
