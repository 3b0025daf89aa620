/* run/stages.c: the stages of `calibrate run` up to the fit: the probe and the descriptor, the
 * random architectures and the zoo's graphs, the layer plan, and the runners. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "devices/devices.h"
#include "measure/measure.h"
#include "predictor/predictor.h"
#include "run/run.h"

/* ---- probe ---- */

static double json_num(const cJSON *j, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void json_str(const cJSON *j, const char *k, char *dst, size_t n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    snprintf(dst, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* runners/host_probe.py's JSON into f (the framework's figures; on a board also its compute and
 * bandwidth figures). */
static perfpred_status read_host_figures(pp_run *R, const char *path, pp_run_figures *f,
                                         double *mm_gflops, double *py_triad)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err e = {0};
    if (pp_read_file(path, &buf, &len, &e) != PERFPRED_OK)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
    cJSON *j = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    if (!j || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "launch_overhead_us"))) {
        cJSON_Delete(j);
        return pp_run_fail(R, PERFPRED_ERR_PARSE,
                           "%s: not runners/host_probe.py output (launch_overhead_us missing)",
                           path);
    }
    f->launch_overhead_us = json_num(j, "launch_overhead_us");
    f->runtime_memory_mb = json_num(j, "runtime_memory_mb");
    /* absent from probes before it (a bundle's older figures.json): the descriptor then states
     * no call cost, and oneDNN convolutions keep the dispatch floor */
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "conv_call_us")))
        f->conv_call_us = json_num(j, "conv_call_us");
    *mm_gflops = json_num(j, "mm_gflops_1thread");
    *py_triad = json_num(j, "triad_gbs");
    char v[48];
    json_str(j, "torch", v, sizeof v);
    snprintf(f->framework_version, sizeof f->framework_version, "torch %s", v);
    json_str(j, "utc", f->date, sizeof f->date);
    json_str(j, "launch_overhead_src", f->src_launch, sizeof f->src_launch);
    json_str(j, "runtime_memory_src", f->src_mem, sizeof f->src_mem);
    json_str(j, "conv_call_src", f->src_conv, sizeof f->src_conv);
    cJSON_Delete(j);
    return PERFPRED_OK;
}

/* The report's figures, kept in work/probe.json so that a resumed run reports them too. */
static perfpred_status write_probe_json(pp_run *R, const pp_run_figures *f, const char *desc_path,
                                        int written, const char *borrow)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    cJSON_AddNumberToObject(j, "core_gflops", f->core_gflops);
    cJSON_AddNumberToObject(j, "triad_gbs", f->triad_gbs);
    cJSON_AddNumberToObject(j, "launch_overhead_us", f->launch_overhead_us);
    cJSON_AddStringToObject(j, "descriptor", desc_path);
    cJSON_AddBoolToObject(j, "descriptor_written", written);
    cJSON_AddStringToObject(j, "borrowed_from", borrow ? borrow : "");
    return pp_run_write_json(R, j, "probe.json");
}

void pp_run_load_probe(pp_run *R)
{
    char path[PP_RUN_PATH];
    uint8_t *buf = NULL;
    size_t len = 0;
    pp_err e = {0};
    if (pp_read_file(pp_run_path(R, path, sizeof path, "probe.json"), &buf, &len, &e)) return;
    cJSON *j = cJSON_ParseWithLength((const char *)buf, len);
    free(buf);
    if (!j) return;
    perfpred_run_report *o = R->out;
    o->core_gflops = json_num(j, "core_gflops");
    o->triad_gbs = json_num(j, "triad_gbs");
    o->launch_overhead_us = json_num(j, "launch_overhead_us");
    json_str(j, "descriptor", o->descriptor_path, sizeof o->descriptor_path);
    json_str(j, "borrowed_from", o->borrowed_from, sizeof o->borrowed_from);
    o->descriptor_written = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "descriptor_written"));
    cJSON_Delete(j);
}

/* Runs one runner with the command line a bundle's run.sh would give it (runner_args.c). */
static perfpred_status run_runner(pp_run *R, pp_run_runner which)
{
    pp_run_cmd *c = malloc(sizeof *c);
    if (!c) return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = pp_run_runner_cmd(R, which, 0, c);
    st = st == PERFPRED_OK ? pp_run_exec(R, c)
                           : pp_run_fail(R, st, "%s: its command line is too long", c->what);
    free(c);
    return st;
}

/* This machine's compute and bandwidth figures, from the C micro-benchmarks. */
static void measure_here(pp_run_figures *f)
{
    const pp_run_cpu *c = &f->cpu;
    const char *isa = "";
    f->core_gflops = pp_run_fma_gflops(5, &isa);
    snprintf(f->src_flops, sizeof f->src_flops,
             "%.1f GFLOP/s on one core from %s fp32 FMAs, 12 independent accumulators, best of 5 "
             "(run/probe.c, %s)",
             f->core_gflops, isa, f->date);
    int threads = c->logical_cpus > 0 ? c->logical_cpus : 1;
    double mib = 160;
    if (c->mem_gib > 0 && mib * 3 > c->mem_gib * 1024 / 8) mib = c->mem_gib * 1024 / 24;
    f->triad_gbs = pp_run_triad_gbs(threads, mib, 8);
    f->triad_threads = threads;
    snprintf(f->src_bw, sizeof f->src_bw,
             "triad a[i] = b[i] + s*c[i] over 3 x %.0f MiB, %d threads, best of 8, 12 bytes per "
             "element: %.1f GB/s (run/probe.c, %s)",
             mib, threads, f->triad_gbs, f->date);
}

perfpred_status pp_run_stage_probe(pp_run *R)
{
    pp_run_figures f;
    memset(&f, 0, sizeof f);
    char figs[PP_RUN_PATH], dir[PP_RUN_PATH], root[PP_RUN_PATH];
    pp_err e = {0};
    pp_run_path(R, dir, sizeof dir, "measurements");
    if (pp_mkdir_p(dir, &e) != PERFPRED_OK) return pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
    pp_run_path(R, figs, sizeof figs, "measurements/figures.json");
    perfpred_status st;
    if (!R->remote) {
        if ((st = run_runner(R, PP_RUN_HOST_PROBE)) != PERFPRED_OK) return st;
    }
    double mm = 0, py_triad = 0;
    if ((st = read_host_figures(R, figs, &f, &mm, &py_triad)) != PERFPRED_OK) return st;
    pp_run_path(R, root, sizeof root, "measurements/sys");
    pp_run_cpu_read(R->remote ? root : NULL, &f.cpu);
    f.gemm_gflops = mm;
    snprintf(f.src_gemm, sizeof f.src_gemm,
             "torch.mm 1024x1024 fp32 on one thread, best of 5: %.1f GFLOP/s "
             "(runners/host_probe.py, %s)",
             mm, f.date);
    if (R->remote) {
        f.core_gflops = mm;
        snprintf(f.src_flops, sizeof f.src_flops,
                 "%.1f GFLOP/s from torch.mm 1024x1024 fp32 on one core, best of 5, on the board "
                 "(runners/host_probe.py, %s; a BLAS figure, below the FMA peak)",
                 mm, f.date);
        f.triad_gbs = py_triad;
        snprintf(f.src_bw, sizeof f.src_bw,
                 "torch.add(b, c, alpha) over 3 x 256 MiB on every core, best of 8: %.1f GB/s "
                 "(runners/host_probe.py, %s)",
                 py_triad, f.date);
    } else {
        measure_here(&f);
    }
    pp_log(&R->lg, PERFPRED_LOG_INFO,
           "  %s, %d CPUs (%s): %.1f GFLOP/s per core, %.1f GB/s, %.2f us per op (%s)",
           f.cpu.model_name[0] ? f.cpu.model_name : "CPU", f.cpu.logical_cpus, f.cpu.isa,
           f.core_gflops, f.triad_gbs, f.launch_overhead_us, f.framework_version);
    if (!(f.core_gflops > 0) || !(f.triad_gbs > 0))
        return pp_run_fail(R, PERFPRED_ERR_INTERNAL,
                           "probe: the compute or bandwidth figure could not be measured (%g "
                           "GFLOP/s, %g GB/s)",
                           f.core_gflops, f.triad_gbs);

    perfpred_ctx *ctx = NULL;
    if ((st = pp_run_ctx_open(R, R->cfg, &ctx)) != PERFPRED_OK) return st;
    const char *near = pp_run_nearest_cpu(ctx, &f);
    char borrow[64] = "";
    if (near && strcmp(near, R->device) != 0) snprintf(borrow, sizeof borrow, "%s", near);
    const pp_device *d = pp_devices_find(pp_ctx_db(ctx), R->device);
    char existing[PP_RUN_PATH] = "";
    if (d && d->source_file) snprintf(existing, sizeof existing, "%s", d->source_file);
    perfpred_ctx_close(ctx);

    pp_strbuf b = {0};
    pp_run_descriptor_yaml(&b, R->device, &f, borrow[0] ? borrow : NULL);
    if (b.oom) {
        free(b.data);
        return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    }
    char ypath[PP_RUN_PATH];
    pp_run_path(R, ypath, sizeof ypath, "descriptor.yaml");
    st = pp_write_file_atomic(ypath, b.data, b.len, &e);
    int written = 0;
    if (st == PERFPRED_OK && !R->known) {
        /* a new device: its descriptor goes in now (nothing older to keep in force) */
        snprintf(existing, sizeof existing, "%s/devices/%s.yaml", R->cfg, R->device);
        st = pp_write_file_atomic(existing, b.data, b.len, &e);
        written = 1;
        R->known = 1;
    }
    free(b.data);
    if (st != PERFPRED_OK) return pp_run_fail(R, st, "%s", e.msg);
    pp_log(&R->lg, PERFPRED_LOG_INFO, "  descriptor: %s (%s)%s%s", existing,
           written ? "written" : "kept; the measured one is in descriptor.yaml",
           borrow[0] ? "; until calibrated, transferred from " : "", borrow);
    st = write_probe_json(R, &f, existing, written, borrow[0] ? borrow : NULL);
    /* a quick run needs layer models to correct: said now, before any network is timed */
    char from[64];
    int own = 0;
    if (st == PERFPRED_OK && R->quick) st = pp_run_quick_source(R, from, sizeof from, &own);
    return st;
}

/* ---- zoo ---- */

/* Whether reference.csv (the zoo's) has a row for the graph <name>.onnx. */
static int reference_has(const char *ref, const char *name)
{
    FILE *f = fopen(ref, "r");
    if (!f) return 0;
    char line[2048];
    size_t n = strlen(name);
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        if (strncmp(line, name, n) == 0 && strncmp(line + n, ".onnx,", 6) == 0) found = 1;
    fclose(f);
    return found;
}

/* Copies the zoo's graphs of the models in list (comma-separated) into work/graphs/zoo and
 * appends "<name>,1" to the configs file cfgs. */
static perfpred_status add_zoo_models(pp_run *R, const char *list, const char *cfgs)
{
    char ref[PP_RUN_PATH];
    snprintf(ref, sizeof ref, "%s/tests/fixtures/models/reference.csv", R->src_root);
    FILE *out = fopen(cfgs, "a");
    if (!out) return pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot append", cfgs);
    const char *cur = list;
    size_t len;
    const char *it;
    perfpred_status st = PERFPRED_OK;
    while (st == PERFPRED_OK && (it = pp_list_item(&cur, &len))) {
        char name[128], from[PP_RUN_PATH], to[PP_RUN_PATH], rel[256];
        snprintf(name, sizeof name, "%.*s", (int)len, it);
        if (!reference_has(ref, name)) {
            st = pp_run_fail(R, PERFPRED_ERR_IO, "%s: no graph of %s (the source tree's zoo)", ref,
                             name);
            break;
        }
        snprintf(from, sizeof from, "%s/tests/fixtures/models/%s.onnx", R->src_root, name);
        snprintf(rel, sizeof rel, "graphs/zoo/%s.onnx", name);
        st = pp_run_copy_file(R, from, pp_run_path(R, to, sizeof to, rel));
        if (st == PERFPRED_OK) fprintf(out, "%s,1\n", name);
    }
    if (fclose(out) != 0 && st == PERFPRED_OK)
        st = pp_run_fail(R, PERFPRED_ERR_IO, "%s: write failed", cfgs);
    return st;
}

/* work/graphs/<set>-configs.csv: the random architectures' configurations and the zoo's models. */
static perfpred_status configs_file(pp_run *R, const char *set, const char *zoo)
{
    char from[PP_RUN_PATH], to[PP_RUN_PATH], rel[64];
    snprintf(rel, sizeof rel, "graphs/%s/configs.csv", set);
    pp_run_path(R, from, sizeof from, rel);
    snprintf(rel, sizeof rel, "graphs/%s-configs.csv", set);
    pp_run_path(R, to, sizeof to, rel);
    perfpred_status st = pp_run_copy_file(R, from, to);
    return st == PERFPRED_OK ? add_zoo_models(R, zoo, to) : st;
}

perfpred_status pp_run_stage_zoo(pp_run *R)
{
    char script[PP_RUN_PATH], dir[PP_RUN_PATH], seed[32], seed2[32];
    pp_err e = {0};
    if (pp_mkdir_p(pp_run_path(R, dir, sizeof dir, "graphs/zoo"), &e) != PERFPRED_OK)
        return pp_run_fail(R, PERFPRED_ERR_IO, "%s", e.msg);
    snprintf(script, sizeof script, "%s/runners/random_arch.py", R->src_root);
    snprintf(seed, sizeof seed, "%llu", R->seed);
    snprintf(seed2, sizeof seed2, "%llu", R->seed + 1000);
    /* training architectures: the plan's zoo and the correction's networks */
    perfpred_status st = pp_run_python(
        R, "runners/random_arch.py (training set)", 0, script, "--seed", seed, "--n-cnn",
        PP_RUN_TRAIN_CNN, "--n-tf", PP_RUN_TRAIN_TF, "--out-dir",
        pp_run_path(R, dir, sizeof dir, "graphs/train"), "--batches", "1,2,4,8",
        "--configs-per-model", "1", (const char *)NULL);
    if (st != PERFPRED_OK) return st;
    /* judging architectures: another seed, seen by no stage before the judge */
    st = pp_run_python(R, "runners/random_arch.py (judging set)", 0, script, "--seed", seed2,
                       "--n-cnn", "30", "--n-tf", "10", "--out-dir",
                       pp_run_path(R, dir, sizeof dir, "graphs/judge"), "--batches", "1,2,4,8",
                       "--configs-per-model", "1", (const char *)NULL);
    if (st != PERFPRED_OK) return st;
    if ((st = configs_file(R, "train", PP_RUN_TRAIN_ZOO)) != PERFPRED_OK) return st;
    return configs_file(R, "judge", PP_RUN_JUDGE_ZOO);
}

/* ---- plan ---- */

/* Operators a first plan may miss, or give a row or two, because the zoo's time share gives them
 * little, though networks run them (composite ops, transformer blocks' glue, MobileNetV2's ReLU6
 * as Clip): planned on their own where the first plan has fewer than PP_RUN_MIN_OP_ROWS rows of
 * them. The fit holds a share of each kind's rows out; an operator whose only row is held out
 * leaves the model without it (its domain), and its kernels take the roofline (run 5 on the Zen 4
 * guest: one Clip row, held out; MobileNetV2's 35 Clips "mixed"). */
static const char *const COVER_OPS[] = {"Gelu",   "HardSwish", "Split",     "Div",  "Sigmoid",
                                        "Softmax", "ReduceMean", "Transpose", "Concat", "Pow",
                                        "Sqrt",   "Erf",       "Clip",      "Gather", "Slice"};
#define N_COVER_OPS ((int)(sizeof COVER_OPS / sizeof COVER_OPS[0]))
#define PP_RUN_MIN_OP_ROWS 3

typedef struct op_count {
    int col;
    int *count; /* per COVER_OPS */
} op_count;

static int count_op_row(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    op_count *C = user;
    (void)err;
    if (is_header) {
        C->col = pp_measure_csv_column(rec, "op_type");
        return 0;
    }
    if (C->col < 0 || C->col >= rec->n_fields) return 0;
    for (int k = 0; k < N_COVER_OPS; k++)
        if (strcmp(rec->fields[C->col], COVER_OPS[k]) == 0) C->count[k]++;
    return 0;
}

/* How many rows of each of COVER_OPS the plan CSV has (by its op_type column); an unreadable plan
 * counts none, so every cover operator is planned. */
static void ops_in_plan(const char *plan, int *count)
{
    op_count C = {-1, count};
    pp_err e = {0};
    pp_measure_csv_read(plan, count_op_row, &C, &e);
}

static void plan_log(perfpred_log_level lvl, const char *msg, void *user)
{
    pp_run *R = user;
    if (lvl >= PERFPRED_LOG_WARN) pp_log(&R->lg, lvl, "  plan: %s", msg);
}

static perfpred_status one_plan(pp_run *R, const char *out, double minutes, const char *const *ops,
                                int n_ops, perfpred_plan_report *rep)
{
    char fixtures[PP_RUN_PATH], train[PP_RUN_PATH];
    snprintf(fixtures, sizeof fixtures, "%s/tests/fixtures/models", R->src_root);
    pp_run_path(R, train, sizeof train, "graphs/train/reference.csv");
    const char *models[2] = {fixtures, train};
    const char *held[8];
    int n_held = 0;
    const char *cur = PP_RUN_HELD_FAMILIES;
    size_t len;
    const char *it;
    char names[8][32];
    while (n_held < 8 && (it = pp_list_item(&cur, &len))) {
        snprintf(names[n_held], sizeof names[0], "%.*s", (int)len, it);
        held[n_held] = names[n_held];
        n_held++;
    }
    perfpred_plan_params pp = perfpred_plan_default_params();
    pp.device = R->device;
    pp.out_csv = out;
    pp.config_dir = R->cfg;
    pp.models = models;
    pp.n_models = 2;
    pp_run_layer_protocol(&pp.protocol); /* the layer runner's, as runner_args.c gives it */
    pp.exclude_families = held;
    pp.n_exclude_families = n_held;
    pp.ops = ops;
    pp.n_ops = n_ops;
    pp.budget_min = minutes;
    pp.seed = R->seed;
    pp.log = plan_log;
    pp.log_user = R;
    char eb[512];
    perfpred_status st = perfpred_calibrate_plan(&pp, rep, eb, sizeof eb);
    if (st != PERFPRED_OK) return pp_run_fail(R, st, "plan: %s", eb);
    return PERFPRED_OK;
}

/* Appends src's rows (not its header) to dst. */
static perfpred_status append_rows(pp_run *R, const char *src, const char *dst)
{
    FILE *in = fopen(src, "r"), *out = in ? fopen(dst, "a") : NULL;
    if (!in || !out) {
        if (in) fclose(in);
        return pp_run_fail(R, PERFPRED_ERR_IO, "cannot append %s to %s", src, dst);
    }
    char line[16384];
    int first = 1;
    while (fgets(line, sizeof line, in)) {
        if (!first) fputs(line, out);
        first = 0;
    }
    fclose(in);
    return fclose(out) == 0 ? PERFPRED_OK
                            : pp_run_fail(R, PERFPRED_ERR_IO, "%s: write failed", dst);
}

perfpred_status pp_run_stage_plan(pp_run *R)
{
    char main_csv[PP_RUN_PATH], ops_csv[PP_RUN_PATH], plan[PP_RUN_PATH], tmp[PP_RUN_PATH + 8];
    pp_run_path(R, main_csv, sizeof main_csv, "plan-main.csv");
    pp_run_path(R, ops_csv, sizeof ops_csv, "plan-ops.csv");
    pp_run_path(R, plan, sizeof plan, "plan.csv");
    /* a roofline costs a row below what the runner takes: plan 80 % of the layers' minutes */
    double minutes = 0.8 * R->budget_layers;
    perfpred_plan_report *rep = calloc(1, sizeof *rep);
    if (!rep) return pp_run_fail(R, PERFPRED_ERR_NOMEM, "out of memory");
    perfpred_status st = one_plan(R, main_csv, 0.85 * minutes, NULL, 0, rep);
    int n_main = rep->n_rows;
    int has[N_COVER_OPS] = {0};
    const char *missing[N_COVER_OPS];
    int n_missing = 0;
    if (st == PERFPRED_OK) {
        ops_in_plan(main_csv, has);
        for (int i = 0; i < N_COVER_OPS; i++)
            if (has[i] < PP_RUN_MIN_OP_ROWS) missing[n_missing++] = COVER_OPS[i];
        snprintf(tmp, sizeof tmp, "%s.tmp", plan);
        st = pp_run_copy_file(R, main_csv, tmp);
    }
    int n_ops_rows = 0;
    if (st == PERFPRED_OK && n_missing > 0) {
        memset(rep, 0, sizeof *rep);
        /* operators the zoo does not have give no rows: that is not an error */
        perfpred_status s2 = one_plan(R, ops_csv, 0.15 * minutes, missing, n_missing, rep);
        if (s2 == PERFPRED_OK && rep->n_rows > 0) {
            n_ops_rows = rep->n_rows;
            st = append_rows(R, ops_csv, tmp);
        } else if (s2 != PERFPRED_OK) {
            pp_log(&R->lg, PERFPRED_LOG_WARN, "  %s", R->errbuf);
            R->errbuf[0] = 0;
        }
    }
    free(rep);
    if (st == PERFPRED_OK && rename(tmp, plan) != 0)
        st = pp_run_fail(R, PERFPRED_ERR_IO, "%s: cannot rename into place", plan);
    if (st == PERFPRED_OK)
        pp_log(&R->lg, PERFPRED_LOG_INFO,
               "  %d layer rows (%d more for operators the first plan had fewer than %d of)",
               n_main + n_ops_rows, n_ops_rows, PP_RUN_MIN_OP_ROWS);
    return st;
}

/* ---- the runners ---- */

perfpred_status pp_run_stage_layers(pp_run *R)
{
    return run_runner(R, PP_RUN_LAYER_RUNNER);
}

perfpred_status pp_run_stage_networks(pp_run *R)
{
    return run_runner(R, PP_RUN_TRAIN_NETWORKS);
}

perfpred_status pp_run_stage_judgenets(pp_run *R)
{
    return run_runner(R, PP_RUN_JUDGE_NETWORKS);
}
