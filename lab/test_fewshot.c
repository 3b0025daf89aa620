/* lab/test_fewshot.c: the few-shot study (lab/fewshot.c) on real HELP NAS-Bench-201 rows of
 * three devices: it pretrains on two, adapts to the third from 5 shots, and refuses unknown
 * devices and too few shots. Skipped where ../shared/datasets/help is absent. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lab/fewshot.h"

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

static void fewshot_should_pretrain_on_other_devices_and_adapt(void **state)
{
    (void)state;
    pp_net_table *all = real_rpi4();
    if (!all) skip();
    static const char *const more[2] = {"pixel3", "xeon-gold-6226"};
    pp_err err = {0};
    for (int i = 0; i < 2; i++) {
        pp_netset_opts o = pp_datasets_netset_default_opts();
        o.device = more[i];
        pp_net_table *t = NULL;
        assert_int_equal(pp_datasets_netset_import("help-nb201", &o, &t, NULL, &err), PERFPRED_OK);
        assert_int_equal(pp_datasets_net_table_append(all, t, &err), PERFPRED_OK);
        pp_measure_net_table_free(t);
    }
    assert_int_equal(all->n, 3 * 15625);
    pp_fit_net_params p = small_params();
    p.max_train = 80;
    p.gnn.epochs = 3;
    const char *pre[2] = {"rpi4", "gold_6226"};
    lab_fewshot_report r;
    if (lab_fewshot_fit("pixel3", 5, pre, 2, all->rows, all->n, &p, &r, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(r.direct, 1); /* pixel3 has no layer sum: rpi4's layer times are the reference */
    assert_int_equal(r.n_shots, 5);
    assert_int_equal(r.n_pretrain_devices, 2);
    assert_true(r.n_pretrain_rows >= 80 && r.n_pretrain_rows <= 90);
    assert_true(r.n_eval > 1000); /* pixel3's held-out cells that run (not constant) */
    assert_int_equal(r.before.n, r.n_eval);
    assert_int_equal(r.after.n, r.n_eval);
    assert_true(isfinite(r.before.spearman) && isfinite(r.after.spearman));
    assert_true(r.after.spearman > 0.5);
    /* unknown devices and too few shots are errors */
    const char *bad[1] = {"no-such-board"};
    assert_int_equal(lab_fewshot_fit("pixel3", 5, bad, 1, all->rows, all->n, &p, &r, &err),
                     PERFPRED_ERR_DEVICE);
    assert_int_equal(lab_fewshot_fit("pixel3", 1, pre, 2, all->rows, all->n, &p, &r, &err),
                     PERFPRED_ERR_INVALID_ARG);
    pp_measure_net_table_free(all);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fewshot_should_pretrain_on_other_devices_and_adapt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
