/* tests/test_scaling_check.c: the cross-GPU scaling check. On a toy NeuSight folder and three toy
 * descriptors with round figures every method's prediction is worked out by hand (a bandwidth-bound
 * row moves by the bandwidth ratio, a compute-bound one by SMs x clock or by FLOP/s, a sub-wave
 * one by clock or per-SM speed); on NeuSight's real tables the H100 and every other GPU are judged.
 * PP_SCALING_TABLE=1 prints the tables of docs/scaling.md. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/eval.h"
#include "predictor/predictor.h"

#define NEUSIGHT_ROOT PP_SOURCE_DIR "/../shared/datasets/neusight"
static int has_neusight(void) { return access(NEUSIGHT_ROOT "/SOURCE.md", R_OK) == 0; }

/* ------------------------------------------------------------- the toy setup ---- */

/* Source 10 TFLOP/s, 1000 GB/s, 10 SMs at 1000 MHz, 10 us launch (ridge 10 FLOP/byte).
 * "h100": twice the bandwidth, the same compute, 20 us launch.
 * "l4":   the same bandwidth, twice the SMs at the same clock, four times the FLOP/s. */
static const char *TOY_YAML =
    "name: a100-pcie-40gb\ndescription: toy source\nvendor: test\nkind: gpu\n"
    "hardware:\n  peak_tflops: {fp32: 10}\n  memory_bandwidth_gbs: 1000\n  compute_units: 10\n"
    "  clock_mhz: 1000\n"
    "runtime:\n  framework: pytorch-eager\n  precision: fp32\n  launch_overhead_us: 10\n"
    "---\n"
    "name: h100-sxm5-80gb\naliases: [h100]\ndescription: toy wide memory\nvendor: test\nkind: gpu\n"
    "hardware:\n  peak_tflops: {fp32: 10}\n  memory_bandwidth_gbs: 2000\n  compute_units: 10\n"
    "  clock_mhz: 1000\n"
    "runtime:\n  framework: pytorch-eager\n  precision: fp32\n  launch_overhead_us: 20\n"
    "---\n"
    "name: l4\ndescription: toy wide compute\nvendor: test\nkind: gpu\n"
    "hardware:\n  peak_tflops: {fp32: 40}\n  memory_bandwidth_gbs: 1000\n  compute_units: 20\n"
    "  clock_mhz: 1000\n"
    "runtime:\n  framework: pytorch-eager\n  precision: fp32\n  launch_overhead_us: 10\n"
    "---\n"
    "name: toy-edge\ndescription: not a NeuSight GPU\nvendor: test\nkind: gpu\n"
    "hardware:\n  peak_tflops: {fp32: 1}\n  memory_bandwidth_gbs: 100\n"
    "runtime:\n  framework: pytorch-eager\n  precision: fp32\n";

#define NS_HEAD "OPName,Latency,Device,Torch Version,CUDNN Version,CUDA Version,"
#define A100 "NVIDIA A100-PCIE-40GB"
#define H100 "NVIDIA H100 80GB HBM3"
#define L4 "NVIDIA L4"

/* Three shapes, each measured on the three GPUs (ms):
 *   bmm    B=1 M=N=K=128      (1 block: sub-wave everywhere)   0.05 / 0.04 / 0.06
 *   linear B=1 M=N=K=4096     (1024 blocks: compute bound)     30   / 28   / 14
 *   relu   B=H=1000           (977 blocks: bandwidth bound)    1.0  / 0.6  / 1.1 */
static const char *BMM_CSV = NS_HEAD "B,M,N,K\n"
    "bmm,0.05," A100 ",p2.1.0,8902,cu121,1,128,128,128\n"
    "bmm,0.04," H100 ",p2.1.0,8902,cu121,1,128,128,128\n"
    "bmm,0.06," L4 ",p2.1.0,8902,cu121,1,128,128,128\n";
static const char *LINEAR_CSV = NS_HEAD "B,M,N,K\n"
    "linear,30," A100 ",p2.1.0,8902,cu121,1,4096,4096,4096\n"
    "linear,28," H100 ",p2.1.0,8902,cu121,1,4096,4096,4096\n"
    "linear,14," L4 ",p2.1.0,8902,cu121,1,4096,4096,4096\n";
static const char *ELEM_CSV = NS_HEAD "B,H\n"
    "relu,1.0," A100 ",p2.1.0,8902,cu121,1000,1000\n"
    "relu,0.6," H100 ",p2.1.0,8902,cu121,1000,1000\n"
    "relu,1.1," L4 ",p2.1.0,8902,cu121,1000,1000\n";

typedef struct toy {
    char dir[4096];
    char root[4200], cfg[4200];
    char files[8][4500];
    int n_files;
    char dirs[8][4400];
    int n_dirs;
} toy;

static void toy_mkdir(toy *t, const char *path)
{
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(t->dirs[t->n_dirs++], sizeof t->dirs[0], "%s", path);
}

static void toy_write(toy *t, const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    snprintf(t->files[t->n_files++], sizeof t->files[0], "%s", path);
}

static void toy_setup(toy *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "%s/pp_scaling_XXXXXX", PP_BINARY_DIR);
    assert_non_null(mkdtemp(t->dir));
    char p[4400];
    snprintf(t->root, sizeof t->root, "%s/ns", t->dir);
    toy_mkdir(t, t->root);
    const char *parts[] = {"scripts", "asplos", "data", "dataset", "test"};
    snprintf(p, sizeof p, "%s", t->root);
    for (int i = 0; i < 5; i++) {
        size_t n = strlen(p);
        snprintf(p + n, sizeof p - n, "/%s", parts[i]);
        toy_mkdir(t, p);
    }
    char f[4500];
    snprintf(f, sizeof f, "%s/SOURCE.md", t->root);
    toy_write(t, f, "# toy\n- Repo: https://example.invalid/neusight\n"
                    "- Commit: 0123456789abcdef0123456789abcdef01234567 (2025-06-23)\n");
    snprintf(f, sizeof f, "%s/bmm.csv", p);
    toy_write(t, f, BMM_CSV);
    snprintf(f, sizeof f, "%s/linear.csv", p);
    toy_write(t, f, LINEAR_CSV);
    snprintf(f, sizeof f, "%s/elem.csv", p);
    toy_write(t, f, ELEM_CSV);
    snprintf(t->cfg, sizeof t->cfg, "%s/cfg", t->dir);
    toy_mkdir(t, t->cfg);
    snprintf(p, sizeof p, "%s/devices", t->cfg);
    toy_mkdir(t, p);
    snprintf(f, sizeof f, "%s/toy.yaml", p);
    toy_write(t, f, TOY_YAML);
}

static void toy_teardown(toy *t)
{
    for (int i = t->n_files - 1; i >= 0; i--) unlink(t->files[i]);
    for (int i = t->n_dirs - 1; i >= 0; i--) rmdir(t->dirs[i]);
    rmdir(t->dir);
}

/* ------------------------------------------------------------ hand formulas ---- */

/* A kernel time moved between devices: the work part (t - launch_from) times
 * bw_ratio^g x compute_ratio^(1-g), plus launch_to; g = ridge / (ridge + ai) on the `from` side. */
static double move(double t, double launch_from_ms, double launch_to_ms, double bw_ratio,
                   double compute_ratio, double ridge, double ai)
{
    double g = ridge / (ridge + ai);
    return (t - launch_from_ms) * pow(bw_ratio, g) * pow(compute_ratio, 1 - g) + launch_to_ms;
}

/* The three shapes' FLOPs and bytes, counted by hand from graph/features.c's table. */
static const double BMM_FLOPS = 2.0 * 128 * 128 * 128;              /* 2 MNK */
static const double BMM_BYTES = 4.0 * 3 * 128 * 128;                /* A, B, out */
static const double LIN_FLOPS = 2.0 * 4096 * 4096 * 4096 + 4096.0 * 4096; /* 2 MNK + bias */
static const double LIN_BYTES = 4.0 * (3.0 * 4096 * 4096 + 4096);   /* x, W, out, bias */
static const double RELU_FLOPS = 1e6;                               /* 1 per element */
static const double RELU_BYTES = 8e6;                               /* in + out */

static const perfpred_scaling_cell *cell_of(const perfpred_scaling_target *T, const char *kind)
{
    for (int i = 0; i < T->n_kinds; i++)
        if (strcmp(T->kinds[i].kind, kind) == 0) return &T->kinds[i];
    fail_msg("no '%s' cell for %s", kind, T->device);
    return NULL;
}

/* A one-row cell: the method's ratio is pred / ref and its MAPE |ratio - 1| x 100. */
static void check_method(const perfpred_scaling_cell *c, perfpred_scaling_method m, double pred,
                         double ref)
{
    assert_int_equal(c->m[m].n, 1);
    assert_rel_close(c->median_ratio[m], pred / ref, 1e-9);
    assert_rel_close(c->m[m].mape_pct, fabs(pred / ref - 1) * 100, 1e-9);
    assert_true(isnan(c->m[m].spearman));
}

/* Every method on one shape of one toy target. src/tgt: peak TFLOP/s, GB/s, SMs, launch us;
 * hab/flo: the compute ratios (source over target) of the two variants for this shape, and
 * rhab/rflo of the way back. */
typedef struct toy_dev {
    double tf, bw, sms, launch_us;
} toy_dev;

static void check_shape(const perfpred_scaling_cell *c, toy_dev s, toy_dev t, double flops,
                        double bytes, double meas_src, double meas_tgt, double hab, double flo,
                        double rhab, double rflo)
{
    double ai = flops / bytes;
    double ridge_s = s.tf * 1e12 / (s.bw * 1e9), ridge_t = t.tf * 1e12 / (t.bw * 1e9);
    double ls = s.launch_us * 1e-3, lt = t.launch_us * 1e-3;
    double roof_s = fmax(flops / (s.tf * 1e12), bytes / (s.bw * 1e9)) * 1e3 + ls;
    double roof_t = fmax(flops / (t.tf * 1e12), bytes / (t.bw * 1e9)) * 1e3 + lt;
    double bwr = s.bw / t.bw;
    assert_int_equal(c->n_rows, 1);
    assert_int_equal(c->n_twins, 1);
    assert_int_equal(c->n_calibrated, 0);   /* toy source: no layer models, its roofline */
    assert_rel_close(c->median_g, ridge_s / (ridge_s + ai), 1e-12);
    check_method(c, PERFPRED_SCALE_MODEL, move(roof_s, ls, lt, bwr, hab, ridge_s, ai), meas_tgt);
    check_method(c, PERFPRED_SCALE_MODEL_FLOPS, move(roof_s, ls, lt, bwr, flo, ridge_s, ai),
                 meas_tgt);
    check_method(c, PERFPRED_SCALE_TWIN, move(meas_src, ls, lt, bwr, hab, ridge_s, ai), meas_tgt);
    check_method(c, PERFPRED_SCALE_TWIN_FLOPS, move(meas_src, ls, lt, bwr, flo, ridge_s, ai),
                 meas_tgt);
    check_method(c, PERFPRED_SCALE_ROOFLINE, roof_t, meas_tgt);
    check_method(c, PERFPRED_SCALE_UNSCALED, roof_s, meas_tgt);
    check_method(c, PERFPRED_SCALE_SOURCE_MODEL, roof_s, meas_src);
    check_method(c, PERFPRED_SCALE_REVERSE, move(meas_tgt, lt, ls, 1 / bwr, rhab, ridge_t, ai),
                 meas_src);
    check_method(c, PERFPRED_SCALE_REVERSE_FLOPS,
                 move(meas_tgt, lt, ls, 1 / bwr, rflo, ridge_t, ai), meas_src);
}

/* ------------------------------------------------------------------- tests ---- */

static void scale_flops_should_move_by_bandwidth_and_peak_ratios(void **state)
{
    (void)state;
    pp_device a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.peak_tflops[PP_PREC_FP32] = 10;
    a.memory_bandwidth_gbs = 1000;
    a.compute_units = 10;
    a.clock_mhz = 1000;
    b = a;
    b.peak_tflops[PP_PREC_FP32] = 40;
    b.memory_bandwidth_gbs = 500;
    b.compute_units = 20;
    /* ai = 0: g = 1, the time moves by exactly the bandwidth ratio 1000/500 */
    assert_rel_close(pp_eval_scale_flops(3.0, &a, &b, 0, 1e6), 6.0, 1e-15);
    assert_rel_close(pp_eval_scale_smclock(3.0, &a, &b, 0, 1e6), 6.0, 1e-15);
    /* ai = 90 against ridge 10: g = 0.1; many waves: FLOP/s ratio 10/40 vs SMs x clock 10/20 */
    assert_rel_close(pp_eval_scale_flops(3.0, &a, &b, 90, 1e6),
                     3.0 * pow(2.0, 0.1) * pow(0.25, 0.9), 1e-12);
    assert_rel_close(pp_eval_scale_smclock(3.0, &a, &b, 90, 1e6),
                     3.0 * pow(2.0, 0.1) * pow(0.5, 0.9), 1e-12);
    /* the predictor's rule is the FLOP/s one */
    assert_rel_close(pp_scale_kernel_time(3.0, &a, &b, 90, 1e6),
                     pp_eval_scale_flops(3.0, &a, &b, 90, 1e6), 1e-15);
    /* one block: per-SM FLOP/s (10/10) / (40/20) = 0.5; Habitat: clock ratio 1 */
    assert_rel_close(pp_eval_scale_flops(3.0, &a, &b, 90, 1),
                     3.0 * pow(2.0, 0.1) * pow(0.5, 0.9), 1e-12);
    assert_rel_close(pp_eval_scale_smclock(3.0, &a, &b, 90, 1), 3.0 * pow(2.0, 0.1), 1e-12);
}

static void scaling_check_should_match_hand_computation(void **state)
{
    (void)state;
    toy t;
    toy_setup(&t);
    char rows_csv[4500];
    snprintf(rows_csv, sizeof rows_csv, "%s/rows.csv", t.dir);
    perfpred_scaling_params p = perfpred_scaling_default_params();
    p.neusight_root = t.root;
    p.config_dir = t.cfg;
    p.rows_csv = rows_csv;
    static perfpred_scaling_report r;
    char eb[1024] = "";
    perfpred_status st = perfpred_scaling_check(&p, &r, eb, sizeof eb);
    if (st) print_error("%s\n", eb);
    assert_int_equal(st, PERFPRED_OK);
    assert_string_equal(r.source, "a100-pcie-40gb");
    assert_string_equal(r.source_gpu, A100);
    assert_string_equal(r.calibration, "uncalibrated (roofline)");
    assert_int_equal(r.n_source_rows, 3);
    /* default targets: NeuSight's GPUs with a descriptor, in NeuSight order; toy-edge is none */
    assert_int_equal(r.n_targets, 2);
    const perfpred_scaling_target *h = &r.targets[0], *l = &r.targets[1];
    assert_string_equal(h->device, "h100-sxm5-80gb");
    assert_string_equal(h->gpu, H100);
    assert_string_equal(l->device, "l4");
    assert_rel_close(h->bw_ratio, 2.0, 1e-15);
    assert_rel_close(h->smclock_ratio, 1.0, 1e-15);
    assert_rel_close(l->smclock_ratio, 2.0, 1e-15);
    assert_rel_close(l->flops_ratio, 4.0, 1e-15);
    /* ln.csv and softmax.csv are missing from the toy folder: said, not an error */
    int said = 0;
    for (int i = 0; i < r.n_msgs; i++) {
        said += strstr(r.msgs[i], "softmax.csv is missing") != NULL;
    }
    assert_int_equal(said, 1);

    toy_dev src = {10, 1000, 10, 10}, hd = {10, 2000, 10, 20}, ld = {40, 1000, 20, 10};
    assert_int_equal(h->n_kinds, 3);
    assert_string_equal(h->kinds[0].kind, "bmm");
    assert_string_equal(h->kinds[1].kind, "linear");
    assert_string_equal(h->kinds[2].kind, "elemwise");
    /* "h100": equal compute, so every compute ratio is 1 and only the bandwidth term moves */
    check_shape(cell_of(h, "bmm"), src, hd, BMM_FLOPS, BMM_BYTES, 0.05, 0.04, 1, 1, 1, 1);
    check_shape(cell_of(h, "linear"), src, hd, LIN_FLOPS, LIN_BYTES, 30, 28, 1, 1, 1, 1);
    check_shape(cell_of(h, "elemwise"), src, hd, RELU_FLOPS, RELU_BYTES, 1.0, 0.6, 1, 1, 1, 1);
    /* "l4": equal bandwidth. Many waves: SMs x clock 10/20, FLOP/s 10/40 (and back 2, 4); one
     * block: clock 1 vs per-SM FLOP/s (10/10)/(40/20) = 0.5 (back: 1 vs 2) */
    check_shape(cell_of(l, "bmm"), src, ld, BMM_FLOPS, BMM_BYTES, 0.05, 0.06, 1, 0.5, 1, 2);
    /* linear: 32 x 32 = 1024 tiles run in ceil(1024/20) = 52 waves on l4's 20 SMs and 103 on
     * the source's 10, so the FLOP/s rule's per-SM ratio 0.5 counts waves: 0.5 x 52/103 (back:
     * 2 x 103/52); the relu's 977 blocks take 49 and 98 waves, exactly half */
    check_shape(cell_of(l, "linear"), src, ld, LIN_FLOPS, LIN_BYTES, 30, 14, 0.5,
                0.5 * 52.0 / 103.0, 2, 2 * 103.0 / 52.0);
    check_shape(cell_of(l, "elemwise"), src, ld, RELU_FLOPS, RELU_BYTES, 1.0, 1.1, 0.5, 0.25, 2,
                4);
    assert_int_equal(cell_of(l, "bmm")->n_subwave, 1);
    assert_int_equal(cell_of(l, "linear")->n_subwave, 0);

    /* the plain statements of the rule, within the (1-g) or g residue */
    double tw = cell_of(h, "elemwise")->median_ratio[PERFPRED_SCALE_TWIN] * 0.6;
    assert_rel_close(tw, (1.0 - 0.01) * 0.5 + 0.02, 0.03);       /* bandwidth ratio 1/2 */
    tw = cell_of(l, "linear")->median_ratio[PERFPRED_SCALE_TWIN] * 14;
    assert_rel_close(tw, (30 - 0.01) * 0.5 + 0.01, 0.03);         /* SMs x clock ratio 1/2 */
    tw = cell_of(l, "linear")->median_ratio[PERFPRED_SCALE_TWIN_FLOPS] * 14;
    assert_rel_close(tw, (30 - 0.01) * 0.25 + 0.01, 0.03);        /* FLOP/s ratio 1/4 */

    /* "all" pools the three rows */
    assert_int_equal(l->all.n_rows, 3);
    assert_string_equal(l->all.kind, "all");
    assert_int_equal(l->all.m[PERFPRED_SCALE_TWIN].n, 3);
    double mape = 0;
    for (int i = 0; i < 3; i++) mape += l->kinds[i].m[PERFPRED_SCALE_TWIN].mape_pct / 3;
    assert_rel_close(l->all.m[PERFPRED_SCALE_TWIN].mape_pct, mape, 1e-12);

    /* the rows file: a header and one line per judged row */
    FILE *f = fopen(rows_csv, "r");
    assert_non_null(f);
    char line[4096];
    int n = 0;
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "target,gpu,kind,op_type,source,"));
    assert_non_null(strstr(line, ",pred_twin_ms,"));
    while (fgets(line, sizeof line, f)) n++;
    fclose(f);
    assert_int_equal(n, 6);
    unlink(rows_csv);
    toy_teardown(&t);
}

static void scaling_check_should_reject_bad_requests(void **state)
{
    (void)state;
    toy t;
    toy_setup(&t);
    static perfpred_scaling_report r;
    char eb[1024];
    perfpred_scaling_params p = perfpred_scaling_default_params();
    p.config_dir = t.cfg;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "neusight_root"));
    assert_int_equal(perfpred_scaling_check(NULL, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);

    char missing[4300];
    snprintf(missing, sizeof missing, "%s/nowhere", t.dir);
    p.neusight_root = missing;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_IO);
    assert_non_null(strstr(eb, "nowhere/SOURCE.md"));

    p.neusight_root = t.root;
    p.source = "no-such-gpu";
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_DEVICE);
    assert_non_null(strstr(eb, "no-such-gpu"));
    p.source = "a100-pcie-40gb";

    const char *self[] = {"a100-pcie-40gb"};
    p.targets = self;
    p.n_targets = 1;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "is the source"));

    const char *edge[] = {"toy-edge"};
    p.targets = edge;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "'toy-edge'"));

    const char *twice[] = {"h100", "h100-sxm5-80gb"};
    p.targets = twice;
    p.n_targets = 2;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(eb, "named twice"));

    const char *unknown[] = {"h100", "gpu-from-mars"};
    p.targets = unknown;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_DEVICE);
    assert_non_null(strstr(eb, "gpu-from-mars"));

    p.n_targets = PERFPRED_SC_MAX_TARGETS + 1;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_ERR_INVALID_ARG);

    /* one named target: only it */
    const char *one[] = {"l4"};
    p.targets = one;
    p.n_targets = 1;
    assert_int_equal(perfpred_scaling_check(&p, &r, eb, sizeof eb), PERFPRED_OK);
    assert_int_equal(r.n_targets, 1);
    assert_string_equal(r.targets[0].device, "l4");

    assert_string_equal(perfpred_scaling_method_str(PERFPRED_SCALE_TWIN_FLOPS), "twin-flops");
    assert_null(perfpred_scaling_method_str(PERFPRED_SCALE__COUNT));
    toy_teardown(&t);
}

/* ------------------------------------------------------------ NeuSight's data ---- */

static void assert_finite_metrics(const perfpred_metrics *m)
{
    assert_true(m->n > 1);
    assert_true(isfinite(m->mape_pct) && m->mape_pct >= 0);
    assert_true(isfinite(m->rmspe_pct) && m->rmspe_pct >= m->mape_pct * 0.999);
    assert_true(isfinite(m->within10_pct) && m->within10_pct >= 0 && m->within10_pct <= 100);
    assert_true(isfinite(m->spearman) && m->spearman > -1.0001 && m->spearman < 1.0001);
}

static void scaling_check_should_report_h100_kernels(void **state)
{
    (void)state;
    if (!has_neusight()) skip();
    perfpred_scaling_params p = perfpred_scaling_default_params();
    p.neusight_root = NEUSIGHT_ROOT;
    const char *tg[] = {"h100"};
    p.targets = tg;
    p.n_targets = 1;
    static perfpred_scaling_report r;
    char eb[1024] = "";
    perfpred_status st = perfpred_scaling_check(&p, &r, eb, sizeof eb);
    if (st) print_error("%s\n", eb);
    assert_int_equal(st, PERFPRED_OK);
    assert_string_equal(r.source_gpu, "NVIDIA A100-PCIE-40GB");
    assert_non_null(strstr(r.calibration, "NeuSight"));
    assert_int_equal(r.n_targets, 1);
    const perfpred_scaling_target *T = &r.targets[0];
    assert_string_equal(T->device, "h100-sxm5-80gb");
    /* NeuSight's test files hold H100 bmm and linear rows only (no element-wise, ln, softmax) */
    assert_int_equal(T->n_kinds, 2);
    assert_string_equal(T->kinds[0].kind, "bmm");
    assert_int_equal(T->kinds[0].n_rows, 2477);
    assert_int_equal(T->kinds[0].n_twins, 2281);
    assert_string_equal(T->kinds[1].kind, "linear");
    assert_int_equal(T->kinds[1].n_rows, 1040);
    assert_int_equal(T->kinds[1].n_twins, 1040);
    assert_int_equal(T->n_failed, 0);
    for (int k = 0; k <= T->n_kinds; k++) {
        const perfpred_scaling_cell *c = k < T->n_kinds ? &T->kinds[k] : &T->all;
        assert_int_equal(c->n_calibrated, c->n_rows);   /* the A100 models cover bmm and linear */
        for (int m = 0; m < PERFPRED_SCALE__COUNT; m++) {
            assert_finite_metrics(&c->m[m]);
            assert_true(isfinite(c->median_ratio[m]) && c->median_ratio[m] > 0);
        }
        assert_int_equal(c->m[PERFPRED_SCALE_MODEL].n, c->n_rows);
        assert_int_equal(c->m[PERFPRED_SCALE_TWIN].n, c->n_twins);
    }
    /* H100's SMs run 128 fp32 lanes where the A100's run 64: SMs x clock sees 1.7x of the 3.4x
     * FLOP/s, so the rule predicts GEMMs too slow and the FLOP/s variant does better */
    const perfpred_scaling_cell *lin = &T->kinds[1];
    assert_true(lin->median_ratio[PERFPRED_SCALE_MODEL] > 1.3);
    assert_true(lin->m[PERFPRED_SCALE_MODEL_FLOPS].mape_pct <
                lin->m[PERFPRED_SCALE_MODEL].mape_pct);
}

static void print_tables(const perfpred_scaling_report *r)
{
    static const perfpred_scaling_method cols[] = {
        PERFPRED_SCALE_MODEL,    PERFPRED_SCALE_MODEL_FLOPS,  PERFPRED_SCALE_TWIN,
        PERFPRED_SCALE_TWIN_FLOPS, PERFPRED_SCALE_ROOFLINE,   PERFPRED_SCALE_UNSCALED,
        PERFPRED_SCALE_SOURCE_MODEL, PERFPRED_SCALE_REVERSE, PERFPRED_SCALE_REVERSE_FLOPS};
    int nc = (int)(sizeof cols / sizeof cols[0]);
    print_message("\nsource %s (%s): %s\n\n", r->source, r->source_gpu, r->calibration);
    print_message("| target | BW x | SMxclk x | FP32 x |\n|---|---|---|---|\n");
    for (int i = 0; i < r->n_targets; i++)
        print_message("| %s | %.3f | %.3f | %.3f |\n", r->targets[i].device,
                      r->targets[i].bw_ratio, r->targets[i].smclock_ratio,
                      r->targets[i].flops_ratio);
    for (int table = 0; table < 3; table++) {
        const char *what[] = {"MAPE %", "median predicted / measured", "within +-10 %"};
        print_message("\n%s\n\n| target | kind | rows | twins | g |", what[table]);
        for (int c = 0; c < nc; c++) print_message(" %s |", perfpred_scaling_method_str(cols[c]));
        print_message("\n|---|---|---|---|---|");
        for (int c = 0; c < nc; c++) print_message("---|");
        print_message("\n");
        for (int i = 0; i < r->n_targets; i++) {
            const perfpred_scaling_target *T = &r->targets[i];
            for (int k = 0; k <= T->n_kinds; k++) {
                const perfpred_scaling_cell *cl = k < T->n_kinds ? &T->kinds[k] : &T->all;
                print_message("| %s | %s | %d | %d | %.2f |", k ? "" : T->device, cl->kind,
                              cl->n_rows, cl->n_twins, cl->median_g);
                for (int c = 0; c < nc; c++) {
                    double v = table == 0   ? cl->m[cols[c]].mape_pct
                               : table == 1 ? cl->median_ratio[cols[c]]
                                            : cl->m[cols[c]].within10_pct;
                    print_message(table == 1 ? " %.2f |" : " %.1f |", v);
                }
                print_message("\n");
            }
        }
    }
}

static void scaling_check_should_judge_every_neusight_gpu(void **state)
{
    (void)state;
    if (!has_neusight()) skip();
    perfpred_scaling_params p = perfpred_scaling_default_params();
    p.neusight_root = NEUSIGHT_ROOT;
    static perfpred_scaling_report r;
    char eb[1024] = "";
    perfpred_status st = perfpred_scaling_check(&p, &r, eb, sizeof eb);
    if (st) print_error("%s\n", eb);
    assert_int_equal(st, PERFPRED_OK);
    const char *want[] = {"a100-pcie-80gb", "h100-sxm5-80gb", "l4", "v100-pcie-32gb", "t4",
                          "p100-pcie-16gb", "p4"};
    assert_int_equal(r.n_targets, 7);
    for (int i = 0; i < 7; i++) {
        const perfpred_scaling_target *T = &r.targets[i];
        assert_string_equal(T->device, want[i]);
        assert_int_equal(T->n_failed, 0);
        assert_true(T->all.n_rows > 1000);
        assert_finite_metrics(&T->all.m[PERFPRED_SCALE_MODEL]);
        assert_finite_metrics(&T->all.m[PERFPRED_SCALE_TWIN]);
        assert_finite_metrics(&T->all.m[PERFPRED_SCALE_REVERSE]);
    }
    /* the A100 80GB PCIe is the same chip with 24 % more bandwidth: the rule must hold there
     * (measured: about 6 % MAPE; the unscaled A100 model is off by about 10 %) */
    const perfpred_scaling_target *a80 = &r.targets[0];
    assert_int_equal(a80->n_kinds, 5);
    assert_true(a80->all.m[PERFPRED_SCALE_TWIN].mape_pct < 10);
    assert_true(a80->all.m[PERFPRED_SCALE_MODEL].mape_pct < 10);
    /* element-wise rows are bandwidth bound: the bandwidth term must beat the unscaled time */
    const perfpred_scaling_cell *ew = cell_of(a80, "elemwise");
    assert_true(ew->median_g > 0.9);
    assert_true(ew->m[PERFPRED_SCALE_TWIN].mape_pct < ew->m[PERFPRED_SCALE_UNSCALED].mape_pct);
    const char *env = getenv("PP_SCALING_TABLE");
    if (env && *env) print_tables(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scale_flops_should_move_by_bandwidth_and_peak_ratios),
        cmocka_unit_test(scaling_check_should_match_hand_computation),
        cmocka_unit_test(scaling_check_should_reject_bad_requests),
        cmocka_unit_test(scaling_check_should_report_h100_kernels),
        cmocka_unit_test(scaling_check_should_judge_every_neusight_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
