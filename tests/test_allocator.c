/* tests/test_allocator.c: the caching-allocator replay of predictor/allocator.h on hand-made
 * traces, each figure worked by hand from the allocator's rules, and the eager trace of ResNet-18
 * against counts taken from the network's definition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "graph/graph.h"
#include "predictor/allocator.h"
#include "tests/helpers.h"

#define MIB (1024.0 * 1024.0)

static pp_alloc_params params(void)
{
    pp_alloc_params p = {0};
    p.scale = 1;
    p.with_weights = 1;
    return p;
}

/* A trace of activations: alloc sizes[i] as buffer i, and free it at once when freed[i]. */
static pp_alloc_stats replay(pp_alloc_sim *s, const pp_alloc_ev *ev, int n, int n_bufs,
                            const pp_alloc_params *p)
{
    pp_alloc_trace t = {(pp_alloc_ev *)ev, n, n_bufs, 0, 0};
    pp_err err = {0};
    assert_int_equal(pp_alloc_sim_run(s, &t, p, &err), PERFPRED_OK);
    return pp_alloc_sim_stats(s);
}

static void allocator_should_round_small_requests_into_2mib_segments(void **state)
{
    (void)state;
    pp_alloc_sim *s = pp_alloc_sim_new();
    pp_alloc_params p = params();
    /* 100 B -> 512 B block, small pool, one 2 MiB segment; a second 600 B -> 1024 B, same one */
    pp_alloc_ev ev[] = {{0, PP_ALLOC_ACT, 100}, {1, PP_ALLOC_ACT, 600}};
    pp_alloc_stats st = replay(s, ev, 2, 2, &p);
    assert_rel_close(st.peak_allocated, 512 + 1024, 1e-15);
    assert_rel_close(st.peak_reserved, 2 * MIB, 1e-15);
    /* everything freed at the end of the pass; the segment stays cached */
    assert_rel_close(st.allocated, 0, 1e-15);
    assert_rel_close(st.reserved, 2 * MIB, 1e-15);
    pp_alloc_sim_empty_cache(s);
    assert_rel_close(pp_alloc_sim_stats(s).reserved, 0, 1e-15);
    pp_alloc_sim_free(s);
}

static void allocator_should_split_a_20mib_segment_for_mid_sized_requests(void **state)
{
    (void)state;
    pp_alloc_sim *s = pp_alloc_sim_new();
    pp_alloc_params p = params();
    /* 11 MiB + 1 B: 11 MiB + 512 B in a segment of its own rounded to 12 MiB, whose rest (under
     * 1 MiB) is handed out with it; 3 MiB (< 10 MiB): a 20 MiB segment, whose 17 MiB rest
     * (> 1 MiB) stays free and takes the second 3 MiB */
    pp_alloc_ev ev[] = {{2, PP_ALLOC_ACT, (int64_t)(11 * MIB) + 1},
                        {0, PP_ALLOC_ACT, (int64_t)(3 * MIB)},
                        {1, PP_ALLOC_ACT, (int64_t)(3 * MIB)}};
    pp_alloc_stats st = replay(s, ev, 3, 3, &p);
    assert_rel_close(st.peak_reserved, 32 * MIB, 1e-15);
    assert_rel_close(st.peak_allocated, 12 * MIB + 6 * MIB, 1e-15);
    /* a later 11 MiB + 1 B takes the 20 MiB segment's 14 MiB rest: no new segment */
    pp_alloc_sim_empty_cache(s);
    pp_alloc_ev two[] = {{0, PP_ALLOC_ACT, (int64_t)(3 * MIB)},
                         {1, PP_ALLOC_ACT, (int64_t)(3 * MIB)},
                         {2, PP_ALLOC_ACT, (int64_t)(11 * MIB) + 1}};
    pp_alloc_sim_reset_peaks(s);
    st = replay(s, two, 3, 3, &p);
    assert_rel_close(st.peak_reserved, 20 * MIB, 1e-15);
    pp_alloc_sim_free(s);
}

static void allocator_should_hand_out_a_whole_block_when_the_rest_is_too_small(void **state)
{
    (void)state;
    pp_alloc_sim *s = pp_alloc_sim_new();
    pp_alloc_params p = params();
    /* 12 MiB segment, freed, then 11 MiB: the 1 MiB rest is not > 1 MiB, so the whole 12 MiB
     * block is handed out and counted allocated; nothing new is reserved */
    pp_alloc_ev ev[] = {{0, PP_ALLOC_ACT, (int64_t)(12 * MIB)}, {0, PP_ALLOC_ACT, 0},
                        {1, PP_ALLOC_ACT, (int64_t)(11 * MIB)}};
    pp_alloc_stats st = replay(s, ev, 3, 2, &p);
    assert_rel_close(st.peak_reserved, 12 * MIB, 1e-15);
    assert_rel_close(st.peak_allocated, 12 * MIB, 1e-15);
    pp_alloc_sim_free(s);
}

static void allocator_should_keep_a_sweeps_segments_unless_the_cache_is_emptied(void **state)
{
    (void)state;
    pp_alloc_params p = params();
    pp_alloc_ev small[] = {{0, PP_ALLOC_ACT, (int64_t)(12 * MIB)}};
    pp_alloc_ev big[] = {{0, PP_ALLOC_ACT, (int64_t)(14 * MIB)}};
    /* one process runs batch "12 MiB" then "14 MiB": the freed 12 MiB block cannot hold 14 */
    pp_alloc_sim *s = pp_alloc_sim_new();
    replay(s, small, 1, 1, &p);
    assert_rel_close(replay(s, big, 1, 1, &p).reserved, 26 * MIB, 1e-15);
    pp_alloc_sim_free(s);
    /* emptied between the two (the project's runners) */
    s = pp_alloc_sim_new();
    replay(s, small, 1, 1, &p);
    pp_alloc_sim_empty_cache(s);
    pp_alloc_sim_reset_peaks(s);
    pp_alloc_stats st = replay(s, big, 1, 1, &p);
    assert_rel_close(st.reserved, 14 * MIB, 1e-15);
    assert_rel_close(st.peak_reserved, 14 * MIB, 1e-15);
    pp_alloc_sim_free(s);
    /* past a 30 MiB capacity the cached 12 MiB segment goes back before the 14 MiB one comes */
    s = pp_alloc_sim_new();
    p.capacity = 30 * MIB;
    pp_alloc_ev bigger[] = {{0, PP_ALLOC_ACT, (int64_t)(20 * MIB)}};
    replay(s, small, 1, 1, &p);
    st = replay(s, bigger, 1, 1, &p);
    assert_rel_close(st.reserved, 20 * MIB, 1e-15);
    assert_int_equal(st.over, 0);
    pp_alloc_sim_free(s);
}

static void allocator_should_scale_workspace_and_keep_cublas_once(void **state)
{
    (void)state;
    pp_alloc_params p = params();
    p.ws_factor = 0.5;
    p.cublas_bytes = 4096.0 * 1024 * 2 + 16.0 * 1024 * 8; /* 8.125 MiB: a 20 MiB segment */
    /* weight 1 MiB (small pool), cuBLAS 8.125 MiB, a convolution's workspace 0.5 x 4 MiB */
    pp_alloc_ev ev[] = {{0, PP_ALLOC_WEIGHT, (int64_t)MIB},
                        {-1, PP_ALLOC_CUBLAS, 1},
                        {1, PP_ALLOC_WS, (int64_t)(4 * MIB)},
                        {1, PP_ALLOC_WS, 0}};
    pp_alloc_sim *s = pp_alloc_sim_new();
    pp_alloc_stats st = replay(s, ev, 4, 2, &p);
    /* 2 MiB (weight) + 20 MiB (cuBLAS; its 11.875 MiB rest takes the 2 MiB workspace) */
    assert_rel_close(st.peak_reserved, 22 * MIB, 1e-15);
    assert_rel_close(st.peak_allocated, MIB + 8.125 * MIB + 2 * MIB, 1e-15);
    assert_rel_close(st.allocated, MIB + 8.125 * MIB, 1e-15); /* weight and cuBLAS stay */
    /* a second pass (weights loaded, cuBLAS kept): nothing new */
    p.with_weights = 0;
    st = replay(s, ev, 4, 2, &p);
    assert_rel_close(st.reserved, 22 * MIB, 1e-15);
    assert_rel_close(st.allocated, MIB + 8.125 * MIB, 1e-15);
    pp_alloc_sim_free(s);
}

/* framework-tax builds the model again for each batch size while the previous one is bound. Two
 * weights of 30 MiB (large requests of >= 10 MiB: a segment each, rounded to 2 MiB) and one
 * activation of 4 MiB (a 20 MiB segment): the first load reserves 60 + 20 MiB; a rebuild finds no
 * free 30 MiB block while the old weights are bound, reserves 60 MiB more, then frees the old
 * ones to the cache (140 MiB reserved, 60 allocated); a second rebuild takes the cached blocks
 * and reserves nothing. */
static void rebuild_should_hold_two_models_while_the_new_one_loads(void **state)
{
    (void)state;
    pp_alloc_params p = params();
    pp_alloc_ev ev[] = {{0, PP_ALLOC_WEIGHT, (int64_t)(30 * MIB)},
                        {1, PP_ALLOC_WEIGHT, (int64_t)(30 * MIB)},
                        {2, PP_ALLOC_ACT, (int64_t)(4 * MIB)}};
    pp_alloc_trace t = {ev, 3, 3, 0, 0};
    pp_alloc_sim *s = pp_alloc_sim_new();
    pp_alloc_stats st = replay(s, ev, 3, 3, &p);
    assert_rel_close(st.reserved, 80 * MIB, 1e-15);
    assert_rel_close(st.allocated, 60 * MIB, 1e-15);
    pp_err err = {0};
    assert_int_equal(pp_alloc_sim_rebuild(s, &t, &p, &err), PERFPRED_OK);
    st = pp_alloc_sim_stats(s);
    assert_rel_close(st.reserved, 140 * MIB, 1e-15);
    assert_rel_close(st.allocated, 60 * MIB, 1e-15);
    assert_rel_close(st.peak_allocated, 120 * MIB, 1e-15);
    p.with_weights = 0;
    st = replay(s, ev, 3, 3, &p);
    assert_rel_close(st.reserved, 140 * MIB, 1e-15);
    assert_int_equal(pp_alloc_sim_rebuild(s, &t, &p, &err), PERFPRED_OK);
    st = pp_alloc_sim_stats(s);
    assert_rel_close(st.reserved, 140 * MIB, 1e-15);
    assert_rel_close(st.allocated, 60 * MIB, 1e-15);
    /* emptying the cache returns the old instance's two segments and the activation's wholly
     * free 20 MiB one: the bound 60 MiB stay */
    pp_alloc_sim_empty_cache(s);
    assert_rel_close(pp_alloc_sim_stats(s).reserved, 60 * MIB, 1e-15);
    pp_alloc_sim_free(s);
}

static void trace_should_hold_resnet18s_weights_and_one_workspace_per_convolution(void **state)
{
    (void)state;
    pp_shape_opts o = {0};
    o.batch = 2;
    pp_graph *g = NULL;
    pp_err err = {0};
    assert_int_equal(pp_graph_load_full(pp_test_path("examples/resnet18.onnx"), &o, &g, &err),
                     PERFPRED_OK);
    pp_alloc_trace t;
    assert_int_equal(pp_alloc_trace_build(g, 1, 0, &t, &err), PERFPRED_OK);
    double w = 0;
    int ws = 0, cublas = 0, allocs = 0, frees = 0;
    for (int i = 0; i < t.n; i++) {
        const pp_alloc_ev *e = &t.ev[i];
        if (e->kind == PP_ALLOC_WEIGHT) w += (double)e->bytes;
        if (e->kind == PP_ALLOC_WS && e->bytes > 0) ws++;
        if (e->kind == PP_ALLOC_CUBLAS) cublas++;
        if (e->kind == PP_ALLOC_ACT && e->bytes > 0) allocs++;
        if (e->kind == PP_ALLOC_ACT && e->bytes == 0) frees++;
    }
    /* torchvision's ResNet-18: 11,689,512 parameters (fp32); the export folds its 20
     * BatchNorms (4,800 channels: weight and bias each, 9,600) into convolution biases (4,800):
     * 11,689,512 - 9,600 + 4,800 = 11,684,712 */
    assert_rel_close(w, 11684712.0 * 4, 1e-12);
    assert_int_equal(ws, 20); /* 17 3x3/7x7 convolutions + 3 downsampling 1x1 */
    assert_int_equal(cublas, 1); /* the classifier's Gemm */
    assert_true(t.has_matmul);
    /* every activation freed once, but the input and the output (the caller's) */
    assert_int_equal(allocs - frees, 2);
    pp_alloc_trace_free(&t);

    /* TensorRT: the module's weights, then the engine's copy of them (kept) and its activation
     * block, ws_factor x the liveness peak less the input and output (freed, cached) */
    assert_int_equal(pp_alloc_trace_build(g, 1, 1, &t, &err), PERFPRED_OK);
    double eng = 0, blk = 0, io = 2.0 * 3 * 224 * 224 * 4 + 2.0 * 1000 * 4;
    for (int i = 0; i < t.n; i++) {
        if (t.ev[i].kind == PP_ALLOC_ENGINE) eng += (double)t.ev[i].bytes;
        if (t.ev[i].kind == PP_ALLOC_WS) blk += (double)t.ev[i].bytes;
    }
    assert_rel_close(eng, 11684712.0 * 4, 1e-12);
    assert_rel_close(blk, (double)g->totals.peak_activation_bytes - io, 1e-12);
    pp_alloc_sim *s = pp_alloc_sim_new();
    pp_alloc_params p = params();
    p.ws_factor = 0.5;
    assert_int_equal(pp_alloc_sim_run(s, &t, &p, &err), PERFPRED_OK);
    /* blocks round up (512 B, or a whole block whose rest is under 1 MiB), so allocated exceeds
     * the bytes by less than 1 MiB per large request plus 512 B per weight tensor (42) */
    double one = pp_alloc_sim_stats(s).allocated, want = 2 * 11684712.0 * 4;
    assert_true(one >= want && one < want + 2 * MIB + 42 * 512);
    double peak = pp_alloc_sim_stats(s).peak_allocated;
    assert_true(peak >= want + 0.5 * blk + io && peak < want + 0.5 * blk + io + 5 * MIB);
    /* a second engine (another shape in the same process) adds its own copy of the weights */
    p.with_weights = 0;
    assert_int_equal(pp_alloc_sim_run(s, &t, &p, &err), PERFPRED_OK);
    double two = pp_alloc_sim_stats(s).allocated - one;
    assert_true(two >= eng && two < eng + MIB);
    pp_alloc_sim_free(s);
    pp_alloc_trace_free(&t);
    pp_graph_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(allocator_should_round_small_requests_into_2mib_segments),
        cmocka_unit_test(allocator_should_split_a_20mib_segment_for_mid_sized_requests),
        cmocka_unit_test(allocator_should_hand_out_a_whole_block_when_the_rest_is_too_small),
        cmocka_unit_test(allocator_should_keep_a_sweeps_segments_unless_the_cache_is_emptied),
        cmocka_unit_test(allocator_should_scale_workspace_and_keep_cublas_once),
        cmocka_unit_test(rebuild_should_hold_two_models_while_the_new_one_loads),
        cmocka_unit_test(trace_should_hold_resnet18s_weights_and_one_workspace_per_convolution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
