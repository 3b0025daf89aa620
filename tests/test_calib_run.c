/* tests/test_calib_run.c: `calibrate run` (run/): what it reads of the machine, the descriptor it
 * writes, and its stages with a stand-in Python (tests/fixtures/calib_run/fake_python.sh) that
 * answers each runner from canned real rows: an interrupted run resumes where it stopped, the
 * previous artifacts stay in force until the new ones are complete, and a bundle holds what a board
 * needs. */
#define _GNU_SOURCE
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void mkdirs(const char *path)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static char *tmpdir(void)
{
    char *d = strdup("/tmp/pp_calib_run_XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static void rmdir_all(const char *d)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", d);
}

/* A fake root holding proc/cpuinfo with this text. */
static char *fake_root(const char *cpuinfo)
{
    char *root = tmpdir(), p[1024];
    snprintf(p, sizeof p, "%s/proc", root);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/proc/cpuinfo", root);
    write_text(p, cpuinfo);
    return root;
}

/* A fake /proc and /sys of a 2-CPU Zen 3 guest, and of an ARM board. */
static void test_cpu_read_x86(void **state)
{
    (void)state;
    char p[1024];
    char *root =
        fake_root("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
                  "model name\t: AMD EPYC 7B13\ncpu MHz\t\t: 2445.404\n"
                  "flags\t\t: fpu sse2 avx fma avx2 hypervisor\n\n"
                  "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
                  "model name\t: AMD EPYC 7B13\ncpu MHz\t\t: 2445.404\n"
                  "flags\t\t: fpu sse2 avx fma avx2 avx512f hypervisor\n\n");
    snprintf(p, sizeof p, "%s/proc/meminfo", root);
    write_text(p, "MemTotal:       8388608 kB\nMemFree:         1000 kB\n");
    const char *lv[4] = {"1", "1", "2", "3"};
    const char *ty[4] = {"Data", "Instruction", "Unified", "Unified"};
    const char *sz[4] = {"32K", "32K", "512K", "32768K"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/sys/devices/system/cpu/cpu0/cache/index%d", root, i);
        mkdirs(p);
        char f[1100], v[64];
        snprintf(f, sizeof f, "%s/level", p);
        snprintf(v, sizeof v, "%s\n", lv[i]);
        write_text(f, v);
        snprintf(f, sizeof f, "%s/type", p);
        snprintf(v, sizeof v, "%s\n", ty[i]);
        write_text(f, v);
        snprintf(f, sizeof f, "%s/size", p);
        snprintf(v, sizeof v, "%s\n", sz[i]);
        write_text(f, v);
    }
    pp_run_cpu c;
    pp_run_cpu_read(root, &c);
    assert_string_equal(c.model_name, "AMD EPYC 7B13");
    assert_string_equal(c.vendor, "AuthenticAMD");
    assert_int_equal(c.family, 25);
    assert_int_equal(c.model, 1);
    assert_int_equal(c.logical_cpus, 2);
    assert_true(fabs(c.mhz - 2445.404) < 1e-9);
    /* the first CPU's flags: avx2 and fma, not the second's avx512f */
    assert_int_equal(c.simd_lanes, 8);
    assert_string_equal(c.isa, "avx2+fma");
    assert_int_equal(c.hypervisor, 1);
    assert_true(c.l1d_kib == 32 && c.l2_kib == 512 && c.l3_kib == 32768);
    assert_true(fabs(c.mem_gib - 8.0) < 1e-12);
    rmdir_all(root);
    free(root);
}

static void test_cpu_read_arm(void **state)
{
    (void)state;
    char *root =
        fake_root("processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
                  "CPU implementer\t: 0x41\nCPU part\t: 0xd08\n\n"
                  "processor\t: 1\nFeatures\t: fp asimd\nCPU part\t: 0xd08\n\n"
                  "processor\t: 2\nFeatures\t: fp asimd\nCPU part\t: 0xd08\n\n"
                  "processor\t: 3\nFeatures\t: fp asimd\nCPU part\t: 0xd08\n\n");
    pp_run_cpu c;
    pp_run_cpu_read(root, &c);
    assert_int_equal(c.logical_cpus, 4);
    assert_int_equal(c.simd_lanes, 4);
    assert_string_equal(c.isa, "asimd");
    assert_string_equal(c.vendor, "ARM");
    assert_string_equal(c.model_name, "ARM CPU part 0xd08");
    assert_int_equal(c.family, -1);
    assert_true(c.mem_gib == 0 && c.l2_kib == 0); /* absent: 0, never guessed */
    rmdir_all(root);
    free(root);
}

/* The micro-benchmarks give figures, and refuse what they cannot measure. */
static void test_microbenchmarks(void **state)
{
    (void)state;
    const char *isa = NULL;
    double g = pp_run_fma_gflops(1, &isa);
    assert_non_null(isa);
    assert_true(g > 0.1 && g < 1e5);
    double bw = pp_run_triad_gbs(2, 16, 2);
    assert_true(bw > 0.05 && bw < 1e5);
    assert_true(pp_run_triad_gbs(0, 16, 2) == 0);
    assert_true(pp_run_triad_gbs(1, 0, 2) == 0);
}

/* The descriptor the probe writes loads under the strict parser with the figures it was given. */
static void test_descriptor_loads(void **state)
{
    (void)state;
    pp_run_figures f;
    memset(&f, 0, sizeof f);
    f.cpu.logical_cpus = 4;
    f.cpu.mem_gib = 7.6;
    f.cpu.l3_kib = 16384;
    f.cpu.mhz = 3000;
    snprintf(f.cpu.model_name, sizeof f.cpu.model_name, "Test CPU");
    snprintf(f.cpu.vendor, sizeof f.cpu.vendor, "GenuineIntel");
    snprintf(f.cpu.isa, sizeof f.cpu.isa, "avx2+fma");
    f.core_gflops = 100;
    f.triad_gbs = 30;
    f.launch_overhead_us = 1.5;
    f.gemm_gflops = 40;
    f.runtime_memory_mb = 240;
    snprintf(f.src_flops, sizeof f.src_flops, "a test figure");
    snprintf(f.src_bw, sizeof f.src_bw, "a test figure");
    snprintf(f.src_gemm, sizeof f.src_gemm, "a test figure");
    pp_strbuf b = {0};
    pp_run_descriptor_yaml(&b, "new-cpu", &f, "epyc-kvm-2vcpu");
    assert_false(b.oom);
    assert_non_null(strstr(b.data, "# measured: a test figure"));

    char *cfg = tmpdir(), p[1024], cmd[3000];
    snprintf(p, sizeof p, "%s/devices", cfg);
    mkdirs(p);
    snprintf(cmd, sizeof cmd, "cp '%s/configs/devices/epyc-kvm-2vcpu.yaml' '%s/devices/'",
             PP_SOURCE_DIR, cfg);
    assert_int_equal(system(cmd), 0);
    snprintf(p, sizeof p, "%s/devices/new-cpu.yaml", cfg);
    write_text(p, b.data);
    free(b.data);
    perfpred_ctx_params cp = perfpred_ctx_default_params();
    cp.config_dir = cfg;
    perfpred_status st;
    char eb[512] = "";
    perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, eb, sizeof eb);
    if (!ctx) fail_msg("%s", eb);
    const pp_device *d = pp_devices_find(pp_ctx_db(ctx), "new-cpu");
    assert_non_null(d);
    assert_true(fabs(d->peak_tflops[PP_PREC_FP32] - 0.4) < 1e-9); /* 4 x 100 GFLOP/s */
    assert_true(fabs(d->memory_bandwidth_gbs - 30) < 1e-9);
    assert_true(fabs(d->launch_overhead_us - 1.5) < 1e-9);
    assert_true(fabs(d->gemm_gflops - 40) < 1e-9);
    assert_int_equal(d->compute_units, 4);
    assert_true(fabs(d->l2_mb - 16) < 1e-9);
    assert_string_equal(d->calibration_from, "epyc-kvm-2vcpu");
    perfpred_ctx_close(ctx);
    rmdir_all(cfg);
    free(cfg);
}

/* ---- the stages, with the stand-in Python ---- */

typedef struct run_env {
    char *root;
    char cfg[600], work[600], log[700], mark[700], fake[600];
} run_env;

/* The zoo models a run's stages copy (run.h's PP_RUN_TRAIN_ZOO and PP_RUN_JUDGE_ZOO) and the
 * plans read: a small zoo, so that each run's two plans load a dozen graphs, not the ninety of the
 * source tree's (under ASan those loads were a third of this test's time). */
static const char *const MINI_ZOO[] = {
    "resnet18",  "mobilenet_v2", "efficientnet_b0",    "convnext_tiny",  "vit_b_32",
    "densenet121", "googlenet",  "mnasnet0_5",         "regnet_x_400mf", "shufflenet_v2_x1_0",
    "squeezenet1_0", "mobilenet_v3_small",
};

/* E->root as a source tree beside the config folder, which `calibrate run` takes for its runners
 * and zoo (run.c): the source tree's runners/ and tools/ linked, and tests/fixtures/models holding
 * MINI_ZOO's graphs (linked) and their reference.csv rows. */
static void mini_source_tree(const run_env *E)
{
    char cmd[4000], models[700], ref[800];
    snprintf(models, sizeof models, "%s/tests/fixtures/models", E->root);
    mkdirs(models);
    snprintf(cmd, sizeof cmd,
             "ln -s '%s/runners' '%s/runners' && ln -s '%s/tools' '%s/tools' && "
             "head -n 1 '%s/tests/fixtures/models/reference.csv' > '%s/reference.csv'",
             PP_SOURCE_DIR, E->root, PP_SOURCE_DIR, E->root, PP_SOURCE_DIR, models);
    assert_int_equal(system(cmd), 0);
    snprintf(ref, sizeof ref, "%s/reference.csv", models);
    for (size_t i = 0; i < sizeof MINI_ZOO / sizeof *MINI_ZOO; i++) {
        snprintf(cmd, sizeof cmd,
                 "ln -s '%s/tests/fixtures/models/%s.onnx' '%s/' && "
                 "grep '^%s\\.onnx,' '%s/tests/fixtures/models/reference.csv' >> '%s'",
                 PP_SOURCE_DIR, MINI_ZOO[i], models, MINI_ZOO[i], PP_SOURCE_DIR, ref);
        assert_int_equal(system(cmd), 0);
    }
}

/* A config folder with the shipped epyc-kvm-2vcpu (its descriptor and models: the nearest
 * calibrated CPU) and nothing else, in a small source tree (mini_source_tree). */
static void env_setup(run_env *E)
{
    E->root = tmpdir();
    mini_source_tree(E);
    snprintf(E->cfg, sizeof E->cfg, "%s/configs", E->root);
    snprintf(E->work, sizeof E->work, "%s/work", E->root);
    snprintf(E->log, sizeof E->log, "%s/calls.log", E->root);
    snprintf(E->mark, sizeof E->mark, "%s/failed-once", E->root);
    snprintf(E->fake, sizeof E->fake, "%s/tests/fixtures/calib_run/fake_python.sh", PP_SOURCE_DIR);
    char cmd[4000];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/devices' '%s/artifacts' && cp '%s/configs/devices/epyc-kvm-2vcpu.yaml' "
             "'%s/devices/' && cp -r '%s/configs/artifacts/epyc-kvm-2vcpu' '%s/artifacts/'",
             E->cfg, E->cfg, PP_SOURCE_DIR, E->cfg, PP_SOURCE_DIR, E->cfg);
    assert_int_equal(system(cmd), 0);
    setenv("PP_FAKE_SRC", PP_SOURCE_DIR, 1);
    setenv("PP_FAKE_LOG", E->log, 1);
    setenv("PP_FAKE_MARK", E->mark, 1);
}

static perfpred_run_params env_params(const run_env *E, const char *device)
{
    perfpred_run_params p = perfpred_run_default_params();
    p.device = device;
    p.config_dir = E->cfg;
    p.work_dir = E->work;
    p.python = E->fake;
    p.budget_min = 10;
    return p;
}

/* How many times the log holds the runner's name. */
static int calls(const run_env *E, const char *runner)
{
    FILE *f = fopen(E->log, "r");
    if (!f) return 0;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        n += strcmp(line, runner) == 0;
    }
    fclose(f);
    return n;
}

static int exists(const char *dir, const char *rel)
{
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return access(p, F_OK) == 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* calibrate run --plan-only E->root/<name> for device: the bundle written (E->work is its folder). */
static void write_bundle(run_env *E, const char *name, const char *device,
                         perfpred_run_report *r)
{
    char eb[1024] = "";
    snprintf(E->work, sizeof E->work, "%s/%s", E->root, name);
    perfpred_run_params p = env_params(E, device);
    p.work_dir = NULL;
    p.plan_only_dir = E->work;
    if (perfpred_calibrate_run(&p, r, eb, sizeof eb) != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(r->bundle_written, 1);
}

static void test_run_resume_and_install(void **state)
{
    (void)state;
    run_env E;
    env_setup(&E);
    perfpred_run_params p = env_params(&E, "new-cpu");
    perfpred_run_report *r = calloc(1, sizeof *r);
    char eb[1024] = "";

    /* the training networks' runner dies: the stages before it are recorded, nothing installed */
    setenv("PP_FAKE_FAIL", "network_runner.py", 1);
    perfpred_status st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    assert_int_equal(st, PERFPRED_ERR_IO);
    assert_non_null(strstr(eb, "network_runner"));
    assert_true(exists(E.cfg, "devices/new-cpu.yaml"));
    assert_false(exists(E.cfg, "artifacts/new-cpu"));
    char state_path[700];
    snprintf(state_path, sizeof state_path, "%s/state.json", E.work);
    char *s = slurp(state_path);
    assert_non_null(s);
    assert_non_null(strstr(s, "\"layers\""));
    assert_null(strstr(s, "\"networks\""));
    free(s);

    /* again without --resume: refused, nothing lost */
    eb[0] = 0;
    assert_int_equal(perfpred_calibrate_run(&p, r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "--resume"));
    /* resumed with another budget: refused, naming the run's own */
    p.resume = 1;
    p.budget_min = 20;
    assert_int_equal(perfpred_calibrate_run(&p, r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "--budget-min 10"));

    /* resumed: only what was left runs */
    p.budget_min = 10;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(calls(&E, "host_probe.py"), 1);
    assert_int_equal(calls(&E, "random_arch.py"), 2);
    assert_int_equal(calls(&E, "layer_runner.py"), 1);
    assert_int_equal(calls(&E, "network_runner.py"), 3); /* failed, train, judge */
    assert_true(exists(E.cfg, "artifacts/new-cpu/manifest.json"));
    assert_false(exists(E.cfg, "artifacts/.new-cpu.new"));
    assert_string_equal(r->borrowed_from, "epyc-kvm-2vcpu");
    assert_non_null(strstr(r->before_what, "transferred"));
    assert_true(r->n_judge >= 1);
    assert_string_equal(r->judge[r->n_judge - 1].name, "all");
    assert_int_equal(r->judge[r->n_judge - 1].calibrated.n, 24); /* the judging rows */
    assert_int_equal(r->judge[r->n_judge - 1].before.n, 24);
    /* the repeat from the stand-in's journal (fake_python.sh works out these figures): the
     * canary-scaled resnet18 agrees with itself */
    const perfpred_run_judge *all = &r->judge[r->n_judge - 1];
    assert_int_equal(all->n_repeat, 3);
    assert_true(fabs(all->repeat_pct - 100 * (1 / 10.5 + 2 / 21.0 + 0) / 3) < 1e-9);
    assert_true(r->n_layer_rows > 200);
    assert_true(exists(E.work, "report.txt"));
    /* resumed once more: nothing runs, and the report says where the results are */
    assert_int_equal(perfpred_calibrate_run(&p, r, eb, sizeof eb), PERFPRED_OK);
    assert_int_equal(calls(&E, "network_runner.py"), 3);
    assert_non_null(strstr(r->artifacts_dir, "artifacts/new-cpu"));
    assert_non_null(strstr(r->report_path, "report.txt"));

    /* a second calibration that dies before its fit leaves the first one in force, unchanged */
    char man[700];
    snprintf(man, sizeof man, "%s/artifacts/new-cpu/manifest.json", E.cfg);
    char *before = slurp(man);
    assert_non_null(before);
    unlink(E.mark);
    snprintf(E.work, sizeof E.work, "%s/work2", E.root);
    p = env_params(&E, "new-cpu");
    assert_int_equal(perfpred_calibrate_run(&p, r, eb, sizeof eb), PERFPRED_ERR_IO);
    char *after = slurp(man);
    assert_non_null(after);
    assert_string_equal(before, after);
    free(after);

    /* a complete second calibration whose layers and training networks all ran 3x slower (the
     * judging networks did not): the first is closer on the judging networks, so it stays and the
     * new one waits beside it ... */
    unsetenv("PP_FAKE_FAIL");
    setenv("PP_FAKE_SLOW", "1", 1);
    snprintf(E.work, sizeof E.work, "%s/work3", E.root);
    p = env_params(&E, "new-cpu");
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(r->kept_previous, 1);
    const perfpred_run_judge *all3 = &r->judge[r->n_judge - 1];
    assert_true(all3->before.mape_pct < all3->calibrated.mape_pct);
    after = slurp(man);
    assert_non_null(after);
    assert_string_equal(before, after);
    free(after);
    assert_true(exists(E.cfg, "artifacts/.new-cpu.new/manifest.json"));
    /* ... until asked: the install stage runs again on --resume --install-anyway */
    p.resume = 1;
    p.install_anyway = 1;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(r->kept_previous, 0);
    after = slurp(man);
    assert_non_null(after);
    assert_true(strcmp(before, after) != 0);
    assert_false(exists(E.cfg, "artifacts/.new-cpu.new"));
    free(before);
    free(after);
    unsetenv("PP_FAKE_SLOW");

    /* a bundle for a known device: the plan, the graphs, the runners and one command */
    unsetenv("PP_FAKE_FAIL");
    write_bundle(&E, "bundle", "new-cpu", r);
    assert_true(exists(E.work, "run.sh") && exists(E.work, "plan.csv") &&
                exists(E.work, "runners/layer_runner.py") &&
                exists(E.work, "tools/export_models.py") &&
                exists(E.work, "graphs/judge-configs.csv") && exists(E.work, "state.json"));
    /* its plan holds at least 3 rows of an operator the networks run but the first plan gives few
     * (MobileNetV2's ReLU6, Clip), so that the fit's held-out share cannot take them all */
    char planp[700];
    snprintf(planp, sizeof planp, "%s/plan.csv", E.work);
    char *plan = slurp(planp);
    assert_non_null(plan);
    int n_clip = 0;
    for (const char *q = plan; (q = strstr(q, ",Clip,")); q++) n_clip++;
    if (n_clip < 3) print_error("%d Clip rows in %s\n", n_clip, planp);
    assert_true(n_clip >= 3);
    free(plan);
    /* its runners time canaries, as the local stages do */
    char runsh[700];
    snprintf(runsh, sizeof runsh, "%s/run.sh", E.work);
    char *sh = slurp(runsh);
    assert_non_null(sh);
    const char *lr = strstr(sh, "runners/layer_runner.py");
    const char *nr = strstr(sh, "runners/network_runner.py");
    assert_non_null(lr);
    assert_non_null(nr);
    assert_true(strstr(lr, "--canary") && strstr(lr, "--canary") < nr);
    assert_non_null(strstr(nr, "--canary"));
    free(sh);
    /* and for a device no descriptor names: refused (its plan needs figures) */
    snprintf(E.work, sizeof E.work, "%s/bundle2", E.root);
    p = env_params(&E, "unknown-board");
    p.work_dir = NULL;
    p.plan_only_dir = E.work;
    assert_int_equal(perfpred_calibrate_run(&p, r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "unknown-board"));

    free(r);
    rmdir_all(E.root);
    free(E.root);
}

/* The judge's repeat scales each visit by its minute's canary level, as the runners scale the rows:
 * a machine twice as slow in the odd rounds' minutes (samples and canaries both 2x) leaves the
 * halves equal, while a visit's own canary, which also carries what the visit before left in the
 * caches (here 500 or 1500 us by turns, whatever the speed), or no scaling at all, would not. */
static void repeat_should_scale_by_the_minutes_canary_level(void **state)
{
    (void)state;
    char *dir = tmpdir(), path[1024];
    snprintf(path, sizeof path, "%s/judge.csv.partial.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"identity\": {\"configs\": []}, \"type\": \"setup\"}\n", f);
    for (int r = 0; r < 4; r++) {
        double speed = r % 2 ? 2 : 1, t = 1000 + 300 * r;
        /* A's canary 500 us in even rounds and 1500 in odd ones, B's the other way round */
        double ca = (r % 2 ? 1500e3 : 500e3) * speed, cb = (r % 2 ? 500e3 : 1500e3) * speed;
        fprintf(f,
                "{\"canary_ns\": %.1f, \"key\": \"randcnn_s9_i0.onnx|1x3x64x64|b1\", "
                "\"round\": %d, \"samples_ns\": [%.1f, %.1f], \"t\": %.3f, \"type\": \"visit\"}\n",
                ca, r, 10e6 * speed, 11e6 * speed, t);
        fprintf(f,
                "{\"canary_ns\": %.1f, \"key\": \"googlenet.onnx|1x3x224x224|b1\", "
                "\"round\": %d, \"samples_ns\": [%.1f], \"t\": %.3f, \"type\": \"visit\"}\n",
                cb, r, 20e6 * speed, t + 1);
    }
    fclose(f);
    double pct[PERFPRED_RUN_MAX_JUDGE];
    int count[PERFPRED_RUN_MAX_JUDGE];
    pp_run_journal_repeat(path, pct, count);
    assert_int_equal(count[0], 1); /* random CNNs */
    assert_int_equal(count[1], 0);
    assert_true(isnan(pct[1]));
    assert_int_equal(count[2], 1); /* torchvision */
    assert_int_equal(count[3], 2);
    if (!(pct[3] < 1e-9)) print_error("repeat %.6f %%\n", pct[3]);
    assert_true(pct[3] < 1e-9);
    unlink(path);
    rmdir_all(dir);
    free(dir);
}

/* configs/devices/NAME.yaml in E's config folder: epyc-kvm-2vcpu's descriptor under another name,
 * without aliases or calibration_from, edited further by the sed expressions in extra ("" none). */
static void copy_descriptor(const run_env *E, const char *name, const char *extra)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "sed -e 's/^name: epyc-kvm-2vcpu$/name: %s/' -e '/^aliases:/d' "
             "-e '/^calibration_from:/d' %s '%s/devices/epyc-kvm-2vcpu.yaml' > "
             "'%s/devices/%s.yaml'",
             name, extra, E->cfg, E->cfg, name);
    assert_int_equal(system(cmd), 0);
}

/* --quick times no layer: the layer models the device answers with stay (another CPU's through
 * its descriptor's calibration_from, or its own) and only the in-network correction is fitted over
 * them. "new-cpu" here is epyc-kvm-2vcpu's descriptor under another name, borrowing its models (a
 * written descriptor's figures would be this machine's, and the transfer's scale with them); the
 * stand-in's networks all run 3x what those models sum to, so the correction has a real gap to
 * close on networks it never saw. */
static void test_quick_run_should_fit_only_the_correction(void **state)
{
    (void)state;
    run_env E;
    env_setup(&E);
    unsetenv("PP_FAKE_FAIL");
    unsetenv("PP_FAKE_SLOW");
    setenv("PP_FAKE_SLOW_NETS", "1", 1);
    char cmd[2400];
    snprintf(cmd, sizeof cmd,
             "sed -e 's/^name: epyc-kvm-2vcpu$/name: new-cpu/' -e '/^aliases:/d' "
             "'%s/devices/epyc-kvm-2vcpu.yaml' > '%s/devices/new-cpu.yaml' && "
             "echo 'calibration_from: epyc-kvm-2vcpu' >> '%s/devices/new-cpu.yaml'",
             E.cfg, E.cfg, E.cfg);
    assert_int_equal(system(cmd), 0);
    perfpred_run_report *r = calloc(1, sizeof *r);
    char eb[1024] = "";
    perfpred_run_params p = env_params(&E, "new-cpu");
    p.quick = 1;
    perfpred_status st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(r->quick, 1);
    assert_int_equal(calls(&E, "host_probe.py"), 1);
    assert_int_equal(calls(&E, "layer_runner.py"), 0);
    assert_int_equal(calls(&E, "network_runner.py"), 2);
    assert_int_equal(r->n_layer_rows, 0);
    assert_false(exists(E.work, "plan.csv"));
    /* the models stay epyc-kvm-2vcpu's; the new folder holds the correction alone */
    assert_non_null(strstr(r->before_what, "transferred: epyc-kvm-2vcpu's"));
    assert_int_equal(r->correction_written, 1);
    assert_true(exists(E.cfg, "artifacts/new-cpu/overhead-latency.json"));
    assert_false(exists(E.cfg, "artifacts/new-cpu/manifest.json"));
    /* judged: the borrowed models alone predict about a third of what the networks took;
     * corrected, near the measurements */
    const perfpred_run_judge *all = &r->judge[r->n_judge - 1];
    assert_int_equal(all->calibrated.n, 24);
    if (!(all->before.mape_pct > 50 && all->calibrated.mape_pct < 25))
        fail_msg("before %.1f %%, after %.1f %%", all->before.mape_pct, all->calibrated.mape_pct);
    char state_path[700];
    snprintf(state_path, sizeof state_path, "%s/state.json", E.work);
    char *s = slurp(state_path);
    assert_non_null(s);
    assert_non_null(strstr(s, "\"quick\":\ttrue"));
    free(s);
    /* resumed without --quick: refused, naming it */
    p.quick = 0;
    p.resume = 1;
    assert_int_equal(perfpred_calibrate_run(&p, r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "--quick"));

    /* a device with models of its own keeps them byte for byte, with a new correction */
    char man[700], ovh[700];
    snprintf(man, sizeof man, "%s/artifacts/epyc-kvm-2vcpu/manifest.json", E.cfg);
    snprintf(ovh, sizeof ovh, "%s/artifacts/epyc-kvm-2vcpu/overhead-latency.json", E.cfg);
    char *man0 = slurp(man), *ovh0 = slurp(ovh);
    assert_non_null(man0);
    assert_non_null(ovh0);
    snprintf(E.work, sizeof E.work, "%s/work-own", E.root);
    p = env_params(&E, "epyc-kvm-2vcpu");
    p.quick = 1;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(calls(&E, "layer_runner.py"), 0);
    assert_non_null(strstr(r->before_what, "previous calibration"));
    assert_int_equal(r->kept_previous, 0); /* its old correction knew no 3x */
    char *man1 = slurp(man), *ovh1 = slurp(ovh);
    assert_non_null(man1);
    assert_non_null(ovh1);
    assert_string_equal(man0, man1);
    assert_true(strcmp(ovh0, ovh1) != 0);
    /* back to its correction before (the 3x one would go with its models to new-cpu2 below) */
    pp_test_write_text(ovh, ovh0);
    free(man0);
    free(man1);
    free(ovh0);
    free(ovh1);

    /* a bundle of a quick run: run.sh times no layers, and the import is a quick run (the
     * bundle's state says so) that judges against the correction in force */
    snprintf(E.work, sizeof E.work, "%s/qbundle", E.root);
    p = env_params(&E, "new-cpu");
    p.work_dir = NULL;
    p.plan_only_dir = E.work;
    p.quick = 1;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_false(exists(E.work, "plan.csv"));
    char runsh[700];
    snprintf(runsh, sizeof runsh, "%s/run.sh", E.work);
    char *sh = slurp(runsh);
    assert_non_null(sh);
    assert_null(strstr(sh, "layer_runner.py"));
    assert_non_null(strstr(sh, "network_runner.py"));
    free(sh);
    snprintf(cmd, sizeof cmd, "PYTHON='%s' sh '%s/run.sh' > /dev/null", E.fake, E.work);
    assert_int_equal(system(cmd), 0);
    p = env_params(&E, "new-cpu");
    p.work_dir = NULL;
    p.measurements_dir = E.work;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(r->quick, 1);
    assert_int_equal(calls(&E, "layer_runner.py"), 0);
    assert_non_null(strstr(r->before_what, "previous calibration"));

    /* a quick run whose correction lands farther off on the judging networks than the transfer
     * (epyc-kvm-2vcpu's models and its correction, scaled; its training networks ran 3x the
     * judging ones' time): the transfer stays in force */
    unsetenv("PP_FAKE_SLOW_NETS");
    setenv("PP_FAKE_SLOW", "1", 1);
    snprintf(cmd, sizeof cmd,
             "sed -e 's/^name: new-cpu$/name: new-cpu2/' '%s/devices/new-cpu.yaml' > "
             "'%s/devices/new-cpu2.yaml'",
             E.cfg, E.cfg);
    assert_int_equal(system(cmd), 0);
    snprintf(E.work, sizeof E.work, "%s/work-keep", E.root);
    p = env_params(&E, "new-cpu2");
    p.quick = 1;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(r->kept_previous, 1);
    assert_non_null(strstr(r->before_what, "transferred"));
    assert_false(exists(E.cfg, "artifacts/new-cpu2/overhead-latency.json"));
    assert_true(exists(E.cfg, "artifacts/.new-cpu2.new/overhead-latency.json"));
    unsetenv("PP_FAKE_SLOW");

    /* a CPU with no models of its own and none to borrow (no calibration_from, and no bandwidth
     * to find the nearest calibrated CPU by): refused before anything is timed */
    copy_descriptor(&E, "lonely-cpu", "-e '/memory_bandwidth_gbs:/d'");
    int probes = calls(&E, "host_probe.py");
    snprintf(E.work, sizeof E.work, "%s/work-lonely", E.root);
    p = env_params(&E, "lonely-cpu");
    p.quick = 1;
    assert_int_equal(perfpred_calibrate_run(&p, r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "lonely-cpu has no layer models"));
    assert_int_equal(calls(&E, "host_probe.py"), probes);

    /* a known CPU that names no calibration_from borrows the calibrated CPU nearest to its figures
     * (a copy of epyc-kvm-2vcpu's: epyc-kvm-2vcpu); its quick run's correction records whose
     * layer models summed its rows, and that record, not the nearest rule, keeps it on them */
    copy_descriptor(&E, "near-cpu", "");
    setenv("PP_FAKE_SLOW_NETS", "1", 1);
    snprintf(E.work, sizeof E.work, "%s/work-near", E.root);
    p = env_params(&E, "near-cpu");
    p.quick = 1;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    unsetenv("PP_FAKE_SLOW_NETS");
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_non_null(strstr(r->before_what, "transferred: epyc-kvm-2vcpu's"));
    assert_int_equal(r->correction_written, 1);
    snprintf(ovh, sizeof ovh, "%s/artifacts/near-cpu/overhead-latency.json", E.cfg);
    char *near = slurp(ovh);
    assert_non_null(near);
    assert_non_null(strstr(near, "\"layer_models_of\":\t\"epyc-kvm-2vcpu\""));
    /* a second calibrated CPU, far from near-cpu's figures (a tenth of the bandwidth) */
    copy_descriptor(&E, "twin-cpu",
                    "-e 's/memory_bandwidth_gbs: 33.8/memory_bandwidth_gbs: 3.38/'");
    snprintf(cmd, sizeof cmd, "cp -r '%s/artifacts/epyc-kvm-2vcpu' '%s/artifacts/twin-cpu'", E.cfg,
             E.cfg);
    assert_int_equal(system(cmd), 0);
    const char *src_of[2];
    char *pinned = NULL;
    for (int k = 0; k < 2; k++) {
        perfpred_ctx_params cp = perfpred_ctx_default_params();
        cp.config_dir = E.cfg;
        perfpred_ctx *ctx = perfpred_ctx_open(&cp, &st, eb, sizeof eb);
        if (!ctx) fail_msg("%s", eb);
        perfpred_device_info info;
        assert_int_equal(perfpred_device_find(ctx, "near-cpu", &info), PERFPRED_OK);
        assert_int_equal(info.overhead_correction, 1);
        src_of[k] = !info.calibration_device                           ? "none"
                    : !strcmp(info.calibration_device, "twin-cpu")       ? "twin-cpu"
                    : !strcmp(info.calibration_device, "epyc-kvm-2vcpu") ? "epyc-kvm-2vcpu"
                                                                         : "other";
        perfpred_ctx_close(ctx);
        if (k == 0) { /* the record names another calibrated CPU: that one answers */
            char *at = strstr(near, "epyc-kvm-2vcpu\"");
            assert_non_null(at);
            size_t pre = (size_t)(at - near);
            pinned = malloc(strlen(near) + 16);
            assert_non_null(pinned);
            sprintf(pinned, "%.*stwin-cpu%s", (int)pre, near, at + strlen("epyc-kvm-2vcpu"));
            pp_test_write_text(ovh, pinned);
        }
    }
    assert_string_equal(src_of[0], "epyc-kvm-2vcpu");
    assert_string_equal(src_of[1], "twin-cpu");
    free(near);
    free(pinned);
    /* twin-cpu goes: the probe below, on this machine (slow under a sanitizer), must find only
     * epyc-kvm-2vcpu to borrow */
    snprintf(cmd, sizeof cmd, "rm -rf '%s/artifacts/twin-cpu' '%s/devices/twin-cpu.yaml'", E.cfg,
             E.cfg);
    assert_int_equal(system(cmd), 0);

    /* a new device: its descriptor written from this machine's figures, naming the nearest
     * calibrated CPU, whose models the correction goes over (how close they come depends on this
     * machine, so only where the parts go is checked) */
    snprintf(E.work, sizeof E.work, "%s/work-new", E.root);
    p = env_params(&E, "brand-new-cpu");
    p.quick = 1;
    st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    assert_int_equal(r->descriptor_written, 1);
    assert_string_equal(r->borrowed_from, "epyc-kvm-2vcpu");
    assert_int_equal(calls(&E, "layer_runner.py"), 0);
    assert_false(exists(E.cfg, "artifacts/brand-new-cpu/manifest.json"));

    free(r);
    rmdir_all(E.root);
    free(E.root);
}

/* The runners' command lines in `p`'s log (fake_python.sh, PP_FAKE_ARGV), in order: the script
 * from its folder runners/ on (locally the source tree's, in a bundle the bundle's), and `strip`
 * (the work folder with its '/', or NULL) removed wherever a word starts with it; random_arch.py's
 * (not a runner a bundle runs) left out. */
static int runner_lines(const char *p, const char *strip, char out[8][1024])
{
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char line[2048];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char buf[1024] = "";
        size_t len = 0;
        for (char *w = strtok(line, " "); w; w = strtok(NULL, " ")) {
            if (!len && strstr(w, "/runners/")) w = strstr(w, "/runners/") + 1;
            if (strip && strncmp(w, strip, strlen(strip)) == 0) w += strlen(strip);
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "", w);
            assert_true(len < sizeof buf);
        }
        if (strncmp(buf, "runners/random_arch.py", 22) == 0) continue;
        assert_true(n < 8);
        snprintf(out[n++], sizeof out[0], "%s", buf);
    }
    fclose(f);
    return n;
}

/* The local stages and a bundle's run.sh start the runners with the same arguments: the protocol
 * (no scrub, canaries, five rounds, the stage's share of 10 minutes) written here by hand. */
static void test_local_and_bundle_runner_args_should_agree(void **state)
{
    (void)state;
    static const char *const want[4] = {
        "runners/host_probe.py -o measurements/figures.json --threads 1",
        "runners/layer_runner.py plan.csv -o measurements/layers.csv --device-name new-cpu "
        "--threads 1 --scrub-mb 0 --canary --budget-min 4.50 --warmup-ms 5 --rounds 4 --burst 2 "
        "--warmup-calls 1",
        "runners/network_runner.py --reference graphs/train/reference.csv --configs "
        "graphs/train-configs.csv --graphs-dir graphs/zoo -o measurements/networks.csv "
        "--device-name new-cpu --threads 1 --rounds 5 --canary --budget-min 2.00",
        "runners/network_runner.py --reference graphs/judge/reference.csv --configs "
        "graphs/judge-configs.csv --graphs-dir graphs/zoo -o measurements/judge.csv "
        "--device-name new-cpu --threads 1 --rounds 5 --canary --budget-min 2.00",
    };
    run_env E;
    env_setup(&E);
    unsetenv("PP_FAKE_FAIL");
    unsetenv("PP_FAKE_SLOW");
    char argv_log[700], work[700], got[8][1024];
    perfpred_run_report *r = calloc(1, sizeof *r);
    char eb[1024] = "";

    /* locally: absolute paths to the source tree's runners and the work folder */
    snprintf(argv_log, sizeof argv_log, "%s/argv-local.log", E.root);
    setenv("PP_FAKE_ARGV", argv_log, 1);
    perfpred_run_params p = env_params(&E, "new-cpu");
    perfpred_status st = perfpred_calibrate_run(&p, r, eb, sizeof eb);
    if (st != PERFPRED_OK) fail_msg("%s", eb);
    snprintf(work, sizeof work, "%s/", E.work);
    assert_int_equal(runner_lines(argv_log, work, got), 4);
    for (int i = 0; i < 4; i++) assert_string_equal(got[i], want[i]);

    /* a bundle's run.sh, run by the stand-in: paths relative to the bundle */
    write_bundle(&E, "bundle", "new-cpu", r);
    snprintf(argv_log, sizeof argv_log, "%s/argv-bundle.log", E.root);
    setenv("PP_FAKE_ARGV", argv_log, 1);
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "PYTHON='%s' sh '%s/run.sh' > /dev/null", E.fake, E.work);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(runner_lines(argv_log, NULL, got), 4);
    for (int i = 0; i < 4; i++) assert_string_equal(got[i], want[i]);
    assert_true(exists(E.work, "measurements/judge.csv"));
    unsetenv("PP_FAKE_ARGV");

    free(r);
    rmdir_all(E.root);
    free(E.root);
}

/* Words a shell would split or expand are quoted, and only those. */
static void test_shell_quote_should_quote_only_what_needs_it(void **state)
{
    (void)state;
    pp_strbuf b = {0};
    pp_run_shell_quote(&b, "graphs/train-configs.csv");
    pp_strbuf_put(&b, "|");
    pp_run_shell_quote(&b, "my box");
    pp_strbuf_put(&b, "|");
    pp_run_shell_quote(&b, "it's $HOME");
    pp_strbuf_put(&b, "|");
    pp_run_shell_quote(&b, "");
    assert_false(b.oom);
    assert_string_equal(b.data, "graphs/train-configs.csv|'my box'|'it'\\''s $HOME'|''");
    free(b.data);
}

static void test_bad_params(void **state)
{
    (void)state;
    perfpred_run_report r;
    char eb[256];
    perfpred_run_params p = perfpred_run_default_params();
    assert_int_equal(perfpred_calibrate_run(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "--device"));
    p.device = "x";
    p.budget_min = 2;
    assert_int_equal(perfpred_calibrate_run(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "--budget-min"));
    p.budget_min = 30;
    p.device = "rpi4"; /* a CPU whose runtime is TFLite */
    assert_int_equal(perfpred_calibrate_run(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "tflite"));
    p.device = "rtx-3090";
    assert_int_equal(perfpred_calibrate_run(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "CPUs"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_read_x86),       cmocka_unit_test(test_cpu_read_arm),
        cmocka_unit_test(test_microbenchmarks),    cmocka_unit_test(test_descriptor_loads),
        cmocka_unit_test(test_run_resume_and_install), cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_local_and_bundle_runner_args_should_agree),
        cmocka_unit_test(test_shell_quote_should_quote_only_what_needs_it),
        cmocka_unit_test(test_quick_run_should_fit_only_the_correction),
        cmocka_unit_test(repeat_should_scale_by_the_minutes_canary_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
