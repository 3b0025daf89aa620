/* tests/test_gnn_fast.c: the pooled forward that predictions use (graph_gnn/gnn_fast.c) against the
 * reference forward, side by side in one run, on the GNNs shipped under configs/artifacts/ (rpi4,
 * rpi5, epyc's five-member ensemble) and samples built from real graphs of several sizes (the pool
 * grows, then reuses its workspaces), and from several threads at once. */
#include "tests/helpers.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fit/fit.h"
#include "graph_gnn/graph_gnn.h"

static const char *const devices[] = {"rpi4", "rpi5", "epyc-kvm-2vcpu"};
/* small, large, then small again: the pool must grow and then reuse */
static const char *const graphs[] = {
    "tests/fixtures/models/mobilenet_v2.onnx", "tests/fixtures/models/resnet50.onnx",
    "tests/fixtures/models/densenet121.onnx", "tests/fixtures/models/squeezenet1_0.onnx",
    "tests/fixtures/models/efficientnet_b0.onnx"};
#define N_GRAPHS (sizeof graphs / sizeof graphs[0])

static pp_gnn *load_gnn(const char *device)
{
    char wp[1024], mp[1024];
    snprintf(wp, sizeof wp, "%s/configs/artifacts/%s/gnn-latency.bin", PP_SOURCE_DIR, device);
    snprintf(mp, sizeof mp, "%s/configs/artifacts/%s/gnn-latency.json", PP_SOURCE_DIR, device);
    if (access(wp, R_OK) != 0) return NULL;
    pp_gnn *g = NULL;
    pp_err err = {0};
    assert_int_equal(pp_gnn_load(wp, mp, &g, &err), PERFPRED_OK);
    return g;
}

/* A sample as the predictor builds one: per-node times from the roofline-like figure 1 us per
 * MFLOP plus 5 us, layer sum their total. */
static int build_sample(const char *rel, pp_gnn_graph *s)
{
    const char *p = pp_test_path(rel);
    if (access(p, R_OK) != 0) return 0;
    pp_graph *g = NULL;
    pp_err err = {0};
    pp_shape_opts opts = {.batch = 1};
    assert_int_equal(pp_graph_load_full(p, &opts, &g, &err), PERFPRED_OK);
    double *ms = calloc((size_t)g->n_nodes + 1, sizeof *ms), sum = 0;
    assert_non_null(ms);
    for (int i = 0; i < g->n_nodes; i++) {
        ms[i] = 0.005 + g->nodes[i].feat.flops * 1e-9;
        sum += ms[i];
    }
    assert_int_equal(pp_gnn_sample_from(g, ms, sum, 1.0, 20.0, s, &err), PERFPRED_OK);
    free(ms);
    pp_graph_free(g);
    return 1;
}

static void fast_forward_should_equal_reference_forward_on_shipped_gnns(void **state)
{
    (void)state;
    pp_gnn_graph s[N_GRAPHS];
    int n_s = 0;
    for (size_t i = 0; i < N_GRAPHS; i++)
        if (build_sample(graphs[i], &s[n_s])) n_s++;
    assert_true(n_s >= 3);
    int n_models = 0, n_cmp = 0;
    double max_diff = 0;
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
        pp_gnn *g = load_gnn(devices[d]);
        if (!g) continue;
        n_models++;
        for (int rep = 0; rep < 2; rep++)
            for (int i = 0; i < n_s; i++) {
                double a[PP_GNN_MAX_TARGETS], alo[PP_GNN_MAX_TARGETS], ahi[PP_GNN_MAX_TARGETS];
                double b[PP_GNN_MAX_TARGETS], blo[PP_GNN_MAX_TARGETS], bhi[PP_GNN_MAX_TARGETS];
                pp_err err = {0};
                assert_int_equal(pp_gnn_forward_fast(g, &s[i], a, alo, ahi, &err), PERFPRED_OK);
                assert_int_equal(pp_gnn_forward_range(g, &s[i], b, blo, bhi, &err), PERFPRED_OK);
                for (int t = 0; t < g->n_targets; t++) {
                    assert_true(isfinite(a[t]));
                    /* the forward-only pass sums in another order than BLAS: float rounding
                     * apart, the same outputs (log-ratios: 1e-5 is 0.001% of a latency) */
                    assert_true(fabs(a[t] - b[t]) <= 1e-5 + 1e-5 * fabs(b[t]));
                    assert_true(fabs(alo[t] - blo[t]) <= 1e-5 + 1e-5 * fabs(blo[t]));
                    assert_true(fabs(ahi[t] - bhi[t]) <= 1e-5 + 1e-5 * fabs(bhi[t]));
                    if (fabs(a[t] - b[t]) > max_diff) max_diff = fabs(a[t] - b[t]);
                    n_cmp++;
                    /* a second run gives the same bits */
                    double a2[PP_GNN_MAX_TARGETS];
                    assert_int_equal(pp_gnn_forward_fast(g, &s[i], a2, NULL, NULL, &err),
                                     PERFPRED_OK);
                    assert_true(a2[t] == a[t]);
                }
            }
        pp_gnn_free(g);
    }
    assert_true(n_models >= 2);
    print_message("fast vs reference forward: %d outputs, largest difference %.3g\n", n_cmp,
                  max_diff);
    /* a fast path that ignored the weights or the graph would not be this close everywhere */
    assert_true(n_cmp >= 6);
    for (int i = 0; i < n_s; i++) pp_gnn_graph_clear(&s[i]);
}

typedef struct job {
    const pp_gnn *g;
    const pp_gnn_graph *s;
    int n_s;
    double want[N_GRAPHS];
    int bad;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    for (int rep = 0; rep < 20; rep++)
        for (int i = 0; i < j->n_s; i++) {
            double o[PP_GNN_MAX_TARGETS];
            pp_err err = {0};
            if (pp_gnn_forward_fast(j->g, &j->s[i], o, NULL, NULL, &err) != PERFPRED_OK ||
                o[0] != j->want[i])
                j->bad++;
        }
    return NULL;
}

static void fast_forward_should_be_thread_safe(void **state)
{
    (void)state;
    pp_gnn *g = load_gnn("epyc-kvm-2vcpu");
    if (!g) skip();
    pp_gnn_graph s[N_GRAPHS];
    int n_s = 0;
    for (size_t i = 0; i < N_GRAPHS; i++)
        if (build_sample(graphs[i], &s[n_s])) n_s++;
    double warm[PP_GNN_MAX_TARGETS];
    assert_int_equal(pp_gnn_forward_fast(g, &s[0], warm, NULL, NULL, NULL), PERFPRED_OK);
    job jobs[4];
    for (int t = 0; t < 4; t++) {
        jobs[t].g = g;
        jobs[t].s = s;
        jobs[t].n_s = n_s;
        jobs[t].bad = 0;
        for (int i = 0; i < n_s; i++) {
            double o[PP_GNN_MAX_TARGETS];
            /* each thread must give what one thread alone gives, bit for bit */
            assert_int_equal(pp_gnn_forward_fast(g, &s[i], o, NULL, NULL, NULL), PERFPRED_OK);
            jobs[t].want[i] = o[0];
        }
    }
    pthread_t th[4];
    for (int t = 0; t < 4; t++) assert_int_equal(pthread_create(&th[t], NULL, run_job, &jobs[t]), 0);
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].bad, 0);
    }
    pp_gnn_free(g);
    for (int i = 0; i < n_s; i++) pp_gnn_graph_clear(&s[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fast_forward_should_equal_reference_forward_on_shipped_gnns),
        cmocka_unit_test(fast_forward_should_be_thread_safe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
