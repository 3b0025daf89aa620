/* tests/test_networks.c: the NAS dataset importers (datasets/netsets.c) on small temporary copies
 * with planted bad rows, and the graph correction (fit/fit_networks.c) end to end on a few
 * hundred real HELP Raspberry Pi 4 rows: finite held-out metrics, a loadable artifact that
 * reproduces the fit's predictions, bit-identical weights for a repeated seed. */
#define _XOPEN_SOURCE 700 /* nftw, for removing the temporary folders */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fit/fit.h"

static const char *mk_root(void)
{
    static char root[4096];
    snprintf(root, sizeof root, "%s/pp_netsets_%ld", PP_BINARY_DIR, (long)getpid());
    mkdir(root, 0777);
    return root;
}

static void write_file(const char *root, const char *rel, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0777);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *SOURCE_MD =
    "# test copy\n- Repo: https://example.org/x\n- Commit: "
    "45f70eb92d0d735970a33b608d1544ad3c52f285 (2024-08-05)\n";

static int has_msg(const pp_net_table *t, int line, const char *what)
{
    char key[32];
    snprintf(key, sizeof key, ":%d: ", line);
    for (int i = 0; i < t->bad.n_kept; i++)
        if (strstr(t->bad.msgs[i], key) && strstr(t->bad.msgs[i], what)) return 1;
    return 0;
}

static void help_import_should_count_bad_rows_with_lines(void **state)
{
    (void)state;
    const char *root = mk_root();
    write_file(root, "help/SOURCE.md", SOURCE_MD);
    write_file(root, "help/help_nasbench201_latency.csv",
               "arch_idx,arch_str,raspi4_ms,eyeriss_ms,titan_rtx_32_ms,unknown_box_ms\n"
               "0,|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|"
               "skip_connect~2|,10.48,3.6,5.3,1\n"
               "1,|nor_conv_5x5~0|+|none~0|none~1|+|none~0|none~1|none~2|,1,1,1,1\n"
               "2,|none~0|+|none~0|none~1|+|none~0|none~1|nor_conv_3x3~2|,12ms,2,-4,1\n"
               "3,|none~0|+|none~0|none~1|+|none~0|none~1|nor_conv_3x3~2|,7\n");
    pp_netset_opts o = pp_datasets_netset_default_opts();
    o.root = root;
    pp_net_table *t = NULL;
    pp_netset_stats stats;
    pp_err err = {0};
    assert_int_equal(pp_datasets_netset_import("help-nb201", &o, &t, &stats, &err), PERFPRED_OK);
    /* eyeriss (simulated) and unknown_box (no descriptor) are skipped columns */
    assert_int_equal(stats.n_skipped_columns, 2);
    assert_non_null(strstr(stats.skipped, "eyeriss_ms"));
    assert_non_null(strstr(stats.skipped, "unknown_box_ms"));
    /* line 2: two good cells; line 3: bad cell string; line 4: two bad values; line 5: short */
    assert_int_equal(t->n, 2);
    assert_int_equal(t->bad.n, 4);
    assert_true(has_msg(t, 3, "nor_conv_5x5"));
    assert_true(has_msg(t, 4, "raspi4_ms"));
    assert_true(has_msg(t, 4, "titan_rtx_32_ms"));
    assert_true(has_msg(t, 5, "fields"));
    const pp_net_row *r = &t->rows[0];
    assert_string_equal(r->device, "rpi4");
    assert_int_equal(r->batch, 1);
    assert_non_null(strstr(r->model, ";prune")); /* HW-NAS-Bench's TFLite column */
    assert_rel_close(r->latency_ms, 10.48, 1e-12);
    assert_string_equal(r->date, "2024-08-05");
    assert_non_null(strstr(r->source, "help@45f70eb:help_nasbench201_latency.csv:2:raspi4_ms"));
    assert_int_equal(strncmp(r->family, "nb201-h", 7), 0);
    r = &t->rows[1];
    assert_string_equal(r->device, "titan-rtx");
    assert_int_equal(r->batch, 32);
    assert_null(strstr(r->model, ";")); /* PyTorch column: the network as exported */
    assert_true(isnan(r->energy_j));
    pp_measure_net_table_free(t);
    /* the device filter keeps one descriptor's rows */
    o.device = "raspi4";
    assert_int_equal(pp_datasets_netset_import("help-nb201", &o, &t, NULL, &err), PERFPRED_OK);
    assert_int_equal(t->n, 1);
    pp_measure_net_table_free(t);
    /* a missing arch column is a header error naming file:line */
    write_file(root, "help/help_nasbench201_latency.csv", "arch_idx,raspi4_ms\n0,1\n");
    o.device = NULL;
    pp_err_clear(&err);
    assert_int_equal(pp_datasets_netset_import("help-nb201", &o, &t, NULL, &err),
                     PERFPRED_ERR_PARSE);
    assert_null(t);
    assert_non_null(strstr(err.msg, ":1: missing column 'arch_str'"));
    assert_int_equal(pp_datasets_netset_import("help-nas", &o, &t, NULL, &err),
                     PERFPRED_ERR_INVALID_ARG);
}

static void eagle_and_hwnb360_imports_should_convert_units(void **state)
{
    (void)state;
    const char *root = mk_root();
    write_file(root, "eagle-latbench-desktop-cpu/SOURCE.md",
               "- Repo: x, commit 53313d8dc7f3ef53fe8551824fdf9f55bd353677 (2021-03-09), path\n");
    write_file(root, "eagle-latbench-desktop-cpu/desktop-cpu-core-i7-7820x-fp32.csv",
               "arch_vector,arch_str,latency_s\n"
               "0 0 0 2 2 4,|none~0|+|none~0|none~1|+|nor_conv_1x1~0|nor_conv_1x1~1|"
               "avg_pool_3x3~2|,0.0015538465976715089\n"
               "1 0 0 2 2 4,|skip_connect~0|+|none~0|none~1|+|nor_conv_1x1~0|nor_conv_1x1~1|"
               "avg_pool_3x3~2|,nan\n");
    pp_netset_opts o = pp_datasets_netset_default_opts();
    o.root = root;
    pp_net_table *t = NULL;
    pp_err err = {0};
    assert_int_equal(pp_datasets_netset_import("eagle", &o, &t, NULL, &err), PERFPRED_OK);
    assert_int_equal(t->n, 1);
    assert_int_equal(t->bad.n, 1);
    assert_true(has_msg(t, 3, "latency_s"));
    assert_string_equal(t->rows[0].device, "core-i7-7820x");
    assert_rel_close(t->rows[0].latency_ms, 1.5538465976715089, 1e-12);
    assert_non_null(strstr(t->rows[0].model, ";fold"));
    assert_string_equal(t->rows[0].date, "2021-03-09");
    pp_measure_net_table_free(t);

    /* HW-NAS-Bench-360 needs HELP's 15,625-cell index: write every cell in index order */
    static const char *const ops[5] = {"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3",
                                       "avg_pool_3x3"};
    size_t cap = 15625 * 120 + 64, off = 0;
    char *csv = malloc(cap);
    assert_non_null(csv);
    off += (size_t)snprintf(csv, cap, "arch_idx,arch_str\n");
    for (int i = 0; i < 15625; i++) {
        int e[6], v = i;
        for (int k = 5; k >= 0; k--, v /= 5) e[k] = v % 5;
        off += (size_t)snprintf(csv + off, cap - off, "%d,|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|\n", i,
                                ops[e[0]], ops[e[1]], ops[e[2]], ops[e[3]], ops[e[4]], ops[e[5]]);
    }
    write_file(root, "help/SOURCE.md", SOURCE_MD);
    write_file(root, "help/help_nasbench201_latency.csv", csv);
    free(csv);
    write_file(root, "hw-nas-bench-360/SOURCE.md",
               "- Commit: a9b243e07fb8f0671ee56587696e7b8ef1ca702d (2026-05-27). Path: x\n");
    write_file(root, "hw-nas-bench-360/results/dataset.csv",
               "arch_idx,rep_arch_idx,device,framework,task,lat_ms_median,lat_ms_var,energy_mj,"
               "accuracy,status\n"
               "25,25,pi5,litert,cifar100,1.5,0.0001,2.5,52.9,ok\n"        /* kept */
               "26,25,pi5,litert,cifar100,1.5,0.0001,2.5,52.9,ok\n"        /* copy of 25 */
               "25,25,pi5,onnx,darcy,13.5,0.001,22.6,0.9,ok\n"             /* kept */
               "25,25,pi5,torchmobile,ninapro,4.3,0.0003,-4.7,90.7,ok\n"   /* bad energy */
               "25,25,pixel,litert,cifar100,1.0,,,52.9,ok\n"               /* no descriptor */
               "25,25,pi5,tensorrt,cifar100,1.0,,1,52.9,ok\n"              /* bad framework */
               "99999,25,pi5,litert,cifar100,1.0,,1,52.9,ok\n"             /* bad index */
               "9,9,pi5,onnx,cifar100,1.0,,1,52.9,failed\n");              /* status */
    assert_int_equal(pp_datasets_netset_import("hw-nas-bench-360", &o, &t, NULL, &err),
                     PERFPRED_OK);
    assert_int_equal(t->n, 2);
    assert_int_equal(t->bad.n, 4);
    assert_true(has_msg(t, 5, "energy_mj"));
    assert_true(has_msg(t, 7, "framework"));
    assert_true(has_msg(t, 8, "arch_idx"));
    assert_true(has_msg(t, 9, "status"));
    assert_string_equal(t->rows[0].device, "rpi5");
    assert_string_equal(t->rows[0].runtime, "tflite");
    /* cell 25 = |none~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2| */
    assert_string_equal(t->rows[0].model, "nb201:|none~0|+|none~0|none~1|+|skip_connect~0|none~1|"
                                          "none~2|@cifar100;prune");
    assert_rel_close(t->rows[0].energy_j, 2.5e-3, 1e-12); /* mJ -> J */
    assert_string_equal(t->rows[1].device, "rpi5-onnxruntime");
    assert_non_null(strstr(t->rows[1].model, "@darcy"));
    assert_null(strstr(t->rows[1].model, ";"));
    /* every imported ref resolves to a graph */
    for (int i = 0; i < t->n; i++) {
        pp_graph *g = NULL;
        assert_int_equal(pp_datasets_net_graph(&t->rows[i], NULL, &g, &err), PERFPRED_OK);
        pp_graph_free(g);
    }
    pp_measure_net_table_free(t);
    o.all_copies = 1;
    o.task = "cifar100";
    assert_int_equal(pp_datasets_netset_import("hw-nas-bench-360", &o, &t, NULL, &err),
                     PERFPRED_OK);
    assert_int_equal(t->n, 2); /* rows 2 and 3: the copy kept, the darcy row filtered out */
    pp_measure_net_table_free(t);
}

/* ----------------------------------------------------------------- real data ---- */

static pp_net_table *real_rpi4(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/help/help_nasbench201_latency.csv", pp_datasets_netset_root());
    if (access(path, R_OK) != 0) return NULL;
    pp_netset_opts o = pp_datasets_netset_default_opts();
    o.device = "rpi4";
    pp_net_table *t = NULL;
    pp_err err = {0};
    if (pp_datasets_netset_import("help-nb201", &o, &t, NULL, &err) != PERFPRED_OK) fail_msg("%s",
                                                                                             err.msg);
    return t;
}

/* "help-nb201,help-fbnet" loads both datasets' rows into one table, as the two loads do apart;
 * anything but dataset names in a list is refused by name. */
static void rows_load_should_join_dataset_names(void **state)
{
    (void)state;
    pp_net_table *nb = real_rpi4();
    if (!nb) skip();
    pp_netset_opts o = pp_datasets_netset_default_opts();
    o.device = "rpi4";
    pp_net_table *fb = NULL, *both = NULL;
    pp_err err = {0};
    if (pp_datasets_net_rows_load("help-fbnet", &o, &fb, NULL, &err)) fail_msg("%s", err.msg);
    pp_netset_stats st;
    if (pp_datasets_net_rows_load("help-nb201,help-fbnet", &o, &both, &st, &err)) fail_msg("%s",
                                                                                           err.msg);
    assert_true(nb->n > 0 && fb->n > 0);
    assert_int_equal(both->n, nb->n + fb->n);
    assert_int_equal(st.n_rows, both->n);
    assert_string_equal(both->rows[0].model, nb->rows[0].model);
    assert_string_equal(both->rows[nb->n].model, fb->rows[0].model);
    assert_rel_close(both->rows[nb->n + fb->n - 1].latency_ms, fb->rows[fb->n - 1].latency_ms,
                     1e-15);
    pp_net_table *t = NULL;
    assert_int_equal(pp_datasets_net_rows_load("help-nb201,bogus", &o, &t, NULL, &err),
                     PERFPRED_ERR_INVALID_ARG);
    assert_null(t);
    assert_non_null(strstr(err.msg, "'bogus' is not one"));
    pp_measure_net_table_free(nb);
    pp_measure_net_table_free(fb);
    pp_measure_net_table_free(both);
}

static pp_fit_net_params small_params(void)
{
    pp_fit_net_params p = pp_fit_net_default_params();
    p.max_train = 150;
    p.max_val = 30;
    p.max_heldout = 60;
    p.gnn.hidden = 16;
    p.gnn.layers = 2;
    p.gnn.epochs = 6;
    p.gnn.nthreads = 1;
    p.gnn.seed = 7;
    p.data_desc = "HELP help_nasbench201_latency.csv raspi4_ms (test subset)";
    return p;
}

static void read_all(const char *path, uint8_t **buf, size_t *len)
{
    pp_err err = {0};
    assert_int_equal(pp_read_file(path, buf, len, &err), PERFPRED_OK);
}

/* 1 when the two files hold the same bytes */
static int same_bytes(const char *p1, const char *p2)
{
    uint8_t *a, *b;
    size_t la, lb;
    read_all(p1, &a, &la);
    read_all(p2, &b, &lb);
    int same = la == lb && memcmp(a, b, la) == 0;
    free(a);
    free(b);
    return same;
}

static void fit_should_train_on_real_rows_and_save_a_loadable_artifact(void **state)
{
    (void)state;
    pp_net_table *t = real_rpi4();
    if (!t) skip();
    assert_int_equal(t->n, 15625);
    char dir1[4096], dir2[4096];
    snprintf(dir1, sizeof dir1, "%s/pp_fit_net_%ld/a", PP_BINARY_DIR, (long)getpid());
    snprintf(dir2, sizeof dir2, "%s/pp_fit_net_%ld/b", PP_BINARY_DIR, (long)getpid());
    pp_fit_net_params p = small_params();
    pp_fit_net_report r;
    pp_err err = {0};
    if (pp_fit_networks("raspi4", t->rows, t->n, &p, dir1, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.n_rows, 15625);
    assert_true(r.n_used >= 200 && r.n_used <= 240);
    assert_int_equal(r.n_failed, 0);
    const pp_fit_net_target_report *lt = &r.target[PP_FIT_NET_LATENCY];
    assert_true(lt->present);
    assert_false(r.target[PP_FIT_NET_ENERGY].present);
    assert_true(lt->n_heldout > 30);
    const pp_metrics *ms[3] = {&lt->layer_sum, &lt->direct, &lt->corrected};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(ms[k]->n, lt->n_heldout);
        assert_true(isfinite(ms[k]->mape_pct) && isfinite(ms[k]->spearman));
    }
    /* the roofline layer sum of rpi4 is several times too fast; the correction must fix most of it */
    assert_true(lt->layer_sum.mape_pct > 50.0);
    assert_true(lt->corrected.mape_pct < lt->layer_sum.mape_pct / 2);

    /* the artifact loads and reproduces a held-out prediction through the public inputs */
    pp_gnn *g = NULL;
    assert_int_equal(pp_gnn_load(r.weights_path, r.manifest_path, &g, &err), PERFPRED_OK);
    assert_int_equal(g->n_globals, PP_FIT_NET_N_GLOBALS);
    assert_int_equal(g->n_targets, 1);
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, NULL, 0);
    assert_non_null(ctx);
    int checked = 0;
    for (int i = 0; i < t->n && checked < 3; i++) {
        const pp_net_row *row = &t->rows[i];
        if (pp_datasets_family_bucket(row->family) >= p.heldout_pct) continue;
        pp_graph *gr = NULL;
        if (pp_datasets_net_graph(row, NULL, &gr, &err) == PERFPRED_ERR_UNSUPPORTED) continue;
        perfpred_model *m = pp_model_wrap(gr);
        pp_gnn_graph s;
        pp_fit_net_sums sums;
        double o[PP_GNN_MAX_TARGETS];
        assert_int_equal(pp_fit_net_sample(ctx, m, "rpi4", &s, &sums, &err), PERFPRED_OK);
        assert_int_equal(pp_gnn_forward(g, &s, o, &err), PERFPRED_OK);
        double pred = sums.layer_ms * exp(o[0]);
        assert_true(isfinite(pred) && pred > 0);
        /* within a factor of 3 of the measurement (the uncorrected sum is ~10x off) */
        assert_true(pred / row->latency_ms < 3.0 && row->latency_ms / pred < 3.0);
        pp_gnn_graph_clear(&s);
        perfpred_model_free(m);
        checked++;
    }
    assert_int_equal(checked, 3);
    perfpred_ctx_close(ctx);
    pp_gnn_free(g);

    /* judging the saved artifact again gives the fit's held-out figures exactly */
    pp_fit_net_report re;
    assert_int_equal(pp_fit_networks_eval("rpi4", t->rows, t->n, &p, dir1, &re, &err), PERFPRED_OK);
    assert_int_equal(re.target[0].n_heldout, lt->n_heldout);
    assert_true(re.target[0].corrected.mape_pct == lt->corrected.mape_pct);
    assert_true(re.target[0].corrected.spearman == lt->corrected.spearman);
    assert_true(re.target[0].layer_sum.mape_pct == lt->layer_sum.mape_pct);
    assert_int_equal(re.target[0].direct.n, 0);

    /* same data, same seed: the same weight bytes */
    pp_fit_net_report r2;
    p.direct_ablation = 0;
    if (pp_fit_networks("rpi4", t->rows, t->n, &p, dir2, &r2, &err)) fail_msg("%s", err.msg);
    assert_true(same_bytes(r.weights_path, r2.weights_path));
    /* a different seed changes them */
    p.gnn.seed = 8;
    if (pp_fit_networks("rpi4", t->rows, t->n, &p, dir2, &r2, &err)) fail_msg("%s", err.msg);
    assert_false(same_bytes(r.weights_path, r2.weights_path));
    char evalp[4200];
    snprintf(evalp, sizeof evalp, "%s/gnn-latency.eval.json", dir1);
    assert_int_equal(access(evalp, R_OK), 0);

    /* an ensemble of 2 (seeds 7 and 8, one split): its first member is the seed-7 model byte for
     * byte, the second is saved beside it, and the saved pair judges as the fit did */
    p.gnn.seed = 7;
    p.ensemble = 2;
    pp_fit_net_report r3;
    if (pp_fit_networks("rpi4", t->rows, t->n, &p, dir2, &r3, &err)) fail_msg("%s", err.msg);
    assert_true(same_bytes(r.weights_path, r3.weights_path));
    assert_int_equal(pp_gnn_load(r3.weights_path, r3.manifest_path, &g, &err), PERFPRED_OK);
    assert_int_equal(pp_gnn_members(g), 2);
    assert_true(g->next->params.seed == 8);
    /* its gate is the members' widest spread on the validation rows, saved with it; a single
     * model has none */
    assert_true(r3.target[0].spread_gate > 0 && g->spread_gate[0] == r3.target[0].spread_gate);
    assert_true(lt->spread_gate == 0 && lt->n_gated == 0);
    assert_true(lt->ungated.mape_pct == lt->corrected.mape_pct);
    pp_gnn_free(g);
    /* rows past the gate take the layer sum: the gated error is not the every-row one exactly
     * when some row was gated */
    const pp_fit_net_target_report *t3 = &r3.target[0];
    assert_true(t3->n_gated >= 0 && t3->n_gated <= t3->n_heldout);
    assert_int_equal(t3->corrected.mape_pct != t3->ungated.mape_pct, t3->n_gated > 0);
    assert_int_equal(pp_fit_networks_eval("rpi4", t->rows, t->n, &p, dir2, &re, &err), PERFPRED_OK);
    assert_int_equal(re.target[0].n_gated, t3->n_gated);
    assert_true(re.target[0].ungated.mape_pct == t3->ungated.mape_pct);
    assert_true(re.target[0].corrected.mape_pct == r3.target[0].corrected.mape_pct);
    assert_true(r3.target[0].corrected.mape_pct != lt->corrected.mape_pct);
    p.ensemble = PP_FIT_NET_MAX_ENSEMBLE + 1;
    assert_int_equal(pp_fit_networks("rpi4", t->rows, t->n, &p, dir2, &r3, &err),
                     PERFPRED_ERR_INVALID_ARG);
    pp_measure_net_table_free(t);
}

/* host-cpu's own network rows (data/host-cpu/networks.csv): an explicit list of held-out families
 * holds out exactly their rows, the others train; a family with no rows is refused by name. */
static void fit_should_hold_out_the_listed_families(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/data/host-cpu/networks.csv", PP_SOURCE_DIR);
    pp_net_table *t = NULL;
    pp_err err = {0};
    if (pp_measure_net_csv_read(path, &t, &err)) fail_msg("%s", err.msg);
    int n_listed = 0;
    for (int i = 0; i < t->n; i++)
        n_listed += !strcmp(t->rows[i].family, "squeezenet") || !strcmp(t->rows[i].family, "googlenet");
    assert_true(n_listed >= 4 && n_listed < t->n / 4);
    pp_fit_net_params p = small_params();
    p.max_train = 0x7fffffff;
    p.max_val = 0x7fffffff;
    p.max_heldout = 0;
    p.write_artifacts = 0;
    p.direct_ablation = 0;
    p.table_path = t->path;
    p.heldout_families = "squeezenet,googlenet";
    p.data_desc = "data/host-cpu/networks.csv (test)";
    pp_fit_net_report r;
    if (pp_fit_networks("host-cpu", t->rows, t->n, &p, NULL, &r, &err)) fail_msg("%s", err.msg);
    const pp_fit_net_target_report *lt = &r.target[PP_FIT_NET_LATENCY];
    assert_int_equal(lt->n_heldout, n_listed);
    assert_int_equal(lt->n_train + lt->n_val + lt->n_heldout, r.n_used);
    assert_true(lt->n_val > 0);
    assert_true(isfinite(lt->corrected.mape_pct) && isfinite(lt->layer_sum.mape_pct));
    pp_measure_net_table_free(t);

    /* the public entry point checks the list against the rows */
    perfpred_netfit_params pp = perfpred_netfit_default_params();
    pp.device = "host-cpu";
    pp.source = path;
    pp.dry_run = 1;
    pp.threads = 1;
    pp.heldout_families = "squeezenet,squeezenett";
    perfpred_netfit_report rep;
    char msg[512] = "";
    assert_int_equal(perfpred_calibrate_fit_networks(&pp, &rep, msg, sizeof msg),
                     PERFPRED_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "'squeezenett'"));
    assert_non_null(strstr(msg, "networks.csv"));
}

/* eval --layer-sum-only: rpi5 carries a graph-level correction; with the flag each network row is
 * predicted as the public API predicts it without the correction, and without the flag with it. */
static void eval_layer_sum_only_should_leave_out_the_correction(void **state)
{
    (void)state;
    const char *root = mk_root();
    char csv[4200], onnx[2][4200];
    snprintf(onnx[0], sizeof onnx[0], "%s/tests/fixtures/models/resnet18.onnx", PP_SOURCE_DIR);
    snprintf(onnx[1], sizeof onnx[1], "%s/tests/fixtures/models/mobilenet_v2.onnx", PP_SOURCE_DIR);
    char text[12000];
    snprintf(text, sizeof text,
             "model,family,device,runtime,runtime_version,precision,batch,input_shapes,latency_ms,"
             "latency_spread_ms,repetitions,energy_j,peak_memory_bytes,source,date\n"
             "%s,resnet,rpi5,pytorch-eager,,fp32,1,,300,,,,,test,2026-01-01\n"
             "%s,mobilenet,rpi5,pytorch-eager,,fp32,2,input:2x3x160x160,90,,,,,test,2026-01-01\n",
             onnx[0], onnx[1]);
    write_file(root, "lso.csv", text);
    snprintf(csv, sizeof csv, "%s/lso.csv", root);
    perfpred_eval_report r[2];
    char err[1024];
    for (int k = 0; k < 2; k++) {
        perfpred_eval_params p = perfpred_eval_default_params();
        p.device = "rpi5";
        p.networks_csv = csv;
        p.layer_sum_only = k;
        assert_int_equal(perfpred_eval(&p, &r[k], err, sizeof err), PERFPRED_OK);
        assert_int_equal(r[k].n_points, 2);
    }
    perfpred_ctx *ctx = perfpred_ctx_open(NULL, NULL, NULL, 0);
    assert_non_null(ctx);
    const int64_t batch[2] = {1, 2};
    for (int i = 0; i < 2; i++) {
        perfpred_input_override ov = {"input", 4, {2, 3, 160, 160}};
        perfpred_model_params mp = perfpred_model_default_params();
        mp.batch = batch[i];
        if (i == 1) {
            mp.inputs = &ov;
            mp.n_inputs = 1;
        }
        perfpred_status st;
        perfpred_model *m = perfpred_model_load(onnx[i], &mp, &st, err, sizeof err);
        assert_non_null(m);
        for (int k = 0; k < 2; k++) {
            perfpred_predict_params pp = perfpred_predict_default_params();
            pp.layer_sum_only = k;
            perfpred_prediction pred;
            assert_int_equal(perfpred_predict(ctx, m, "rpi5", &pp, &pred, err, sizeof err),
                             PERFPRED_OK);
            assert_true(fabs(r[k].points[i].predicted_ms / pred.latency_ms.value - 1.0) < 1e-12);
        }
        /* the correction changes the figure */
        assert_true(fabs(r[0].points[i].predicted_ms / r[1].points[i].predicted_ms - 1.0) > 1e-3);
        perfpred_model_free(m);
    }
    perfpred_ctx_close(ctx);
    perfpred_eval_report_free(&r[0]);
    perfpred_eval_report_free(&r[1]);
}

static void fit_should_refuse_a_device_without_layer_sum(void **state)
{
    (void)state;
    pp_net_row rows[40];
    char models[40][200], fams[40][32];
    static const char *const ops[5] = {"none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3",
                                       "avg_pool_3x3"};
    for (int i = 0; i < 40; i++) {
        memset(&rows[i], 0, sizeof rows[i]);
        snprintf(models[i], sizeof models[i], "nb201:|%s~0|+|%s~0|%s~1|+|%s~0|%s~1|%s~2|",
                 ops[1 + i % 4], ops[(i / 4) % 5], ops[1 + (i / 3) % 4], ops[i % 5],
                 ops[(i / 7) % 5], ops[1 + (i / 2) % 4]);
        rows[i].model = models[i];
        assert_int_equal(pp_net_ref_family(models[i], fams[i], sizeof fams[i]), 0);
        rows[i].family = fams[i];
        rows[i].device = "pixel3"; /* no roofline figures, no layer models */
        rows[i].batch = 1;
        rows[i].input_shapes = "";
        rows[i].latency_ms = 1.0 + i;
        rows[i].energy_j = NAN;
    }
    pp_fit_net_params p = small_params();
    p.write_artifacts = 0;
    p.heldout_pct = 30;
    p.val_pct = 10;
    pp_err err = {0};
    perfpred_status st = pp_fit_networks("pixel3", rows, 40, &p, NULL, NULL, &err);
    assert_int_equal(st, PERFPRED_ERR_DEVICE);
    assert_non_null(strstr(err.msg, "layer sum"));
    assert_int_equal(pp_fit_networks("no-such-board", rows, 40, &p, NULL, NULL, &err),
                     PERFPRED_ERR_DEVICE);
    p.heldout_pct = 0;
    assert_int_equal(pp_fit_networks("pixel3", rows, 40, &p, NULL, NULL, &err),
                     PERFPRED_ERR_INVALID_ARG);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes the temporary dataset copies and artifacts this run wrote under the build folder. */
static int remove_temp_dirs(void **state)
{
    (void)state;
    static const char *const prefixes[2] = {"pp_netsets", "pp_fit_net"};
    for (int i = 0; i < 2; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s_%ld", PP_BINARY_DIR, prefixes[i], (long)getpid());
        if (access(dir, F_OK) == 0) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(help_import_should_count_bad_rows_with_lines),
        cmocka_unit_test(eagle_and_hwnb360_imports_should_convert_units),
        cmocka_unit_test(fit_should_train_on_real_rows_and_save_a_loadable_artifact),
        cmocka_unit_test(rows_load_should_join_dataset_names),
        cmocka_unit_test(fit_should_hold_out_the_listed_families),
        cmocka_unit_test(eval_layer_sum_only_should_leave_out_the_correction),
        cmocka_unit_test(fit_should_refuse_a_device_without_layer_sum),
    };
    return cmocka_run_group_tests(tests, NULL, remove_temp_dirs);
}
