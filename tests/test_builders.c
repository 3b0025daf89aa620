/* tests/test_builders.c: the NAS search-space builders (graph/build_*.c) against independent PyTorch
 * definitions: the ONNX files and reference.csv under tests/fixtures/nas come from tools/export_nas_reference.py
 * (MACs from Conv2d/Linear hooks, parameters incl. BatchNorm statistics, output shapes). Also the
 * strict parsers, the ref resolver and NB201's constant-folded form. */
#include "tests/graph_same.h"

#include <stdlib.h>
#include <string.h>

#include "fit/fit.h"

typedef struct ref_row {
    char name[64], ref[512];
    int64_t macs, params;
    char output[64];
} ref_row;

typedef struct ref_rows {
    int n;
    ref_row r[16];
} ref_rows;

static int ref_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    ref_rows *rr = user;
    if (is_header) return 0;
    if (rec->n_fields != 6 || rr->n == 16) {
        pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: bad reference row", rec->path, rec->line);
        return -1;
    }
    ref_row *r = &rr->r[rr->n++];
    snprintf(r->name, sizeof r->name, "%s", rec->fields[0]);
    snprintf(r->ref, sizeof r->ref, "%s", rec->fields[1]);
    snprintf(r->output, sizeof r->output, "%s", rec->fields[5]);
    if (pp_parse_i64(rec->fields[3], &r->macs) || pp_parse_i64(rec->fields[4], &r->params)) {
        pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: bad number", rec->path, rec->line);
        return -1;
    }
    return 0;
}

static void load_reference(ref_rows *rr)
{
    memset(rr, 0, sizeof *rr);
    pp_err err = {0};
    assert_int_equal(pp_measure_csv_read(pp_test_path("tests/fixtures/nas/reference.csv"),
                                         ref_record, rr, &err),
                     PERFPRED_OK);
    assert_true(rr->n >= 7);
}

static void out_shape(const pp_graph *g, char *buf, size_t n)
{
    const pp_tensor *t = &g->tensors[g->outputs[0]];
    size_t off = 0;
    buf[0] = '\0';
    for (int d = 0; d < t->rank; d++)
        off += (size_t)snprintf(buf + off, n - off, "%s%lld", d ? "x" : "", (long long)t->dims[d]);
}

/* op-type histogram of nodes that launch work, leaving out what exporters spell differently
 * (torch writes view() as Reshape where the builders write Flatten, and a zero Pad before the
 * reduction block's 2x2 average pool). */
static int count_op(const pp_graph *g, const char *op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].feat.folded && strcmp(g->nodes[i].op_type, op) == 0) n++;
    return n;
}

static void builders_should_match_pytorch_exports(void **state)
{
    (void)state;
    ref_rows rr;
    load_reference(&rr);
    static const char *const ops[] = {"Conv", "BatchNormalization", "Relu", "Add", "Mul",
                                      "AveragePool", "GlobalAveragePool", "Gemm", "Clip", "Div",
                                      "ReduceMean", "Transpose"};
    for (int i = 0; i < rr.n; i++) {
        const ref_row *r = &rr.r[i];
        pp_err err = {0};
        pp_graph *b = NULL, *o = NULL;
        if (pp_net_graph_from_ref(r->ref, NULL, &b, &err) != PERFPRED_OK)
            fail_msg("%s: %s", r->name, err.msg);
        char path[256];
        snprintf(path, sizeof path, "tests/fixtures/nas/%s.onnx", r->name);
        if (pp_graph_load_full(pp_test_path(path), NULL, &o, &err) != PERFPRED_OK)
            fail_msg("%s: %s", path, err.msg);
        /* the builder against the hooks and against the exported graph */
        assert_int_equal(b->totals.macs, r->macs);
        assert_int_equal(b->totals.params, r->params);
        assert_int_equal(o->totals.macs, r->macs);
        assert_int_equal(o->totals.params, r->params);
        char sb[64], so[64];
        out_shape(b, sb, sizeof sb);
        out_shape(o, so, sizeof so);
        assert_string_equal(sb, r->output);
        assert_string_equal(so, r->output);
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            int nb = count_op(b, ops[k]), no = count_op(o, ops[k]);
            if (nb != no) fail_msg("%s: %d %s nodes built, %d exported", r->name, nb, ops[k], no);
        }
        assert_int_equal(b->totals.input_bytes, o->totals.input_bytes);
        assert_rel_close((double)b->totals.peak_activation_bytes,
                         (double)o->totals.peak_activation_bytes, 0.25);
        pp_graph_free(b);
        pp_graph_free(o);
    }
}

static void nb201_parse_should_round_trip_and_reject_malformed(void **state)
{
    (void)state;
    const char *s = "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_1x1~2|";
    pp_nb201_arch a;
    pp_err err = {0};
    assert_int_equal(pp_nb201_parse(s, &a, &err), PERFPRED_OK);
    assert_int_equal(a.op[0], PP_NB201_CONV3X3);
    assert_int_equal(a.op[1], PP_NB201_NONE);
    assert_int_equal(a.op[2], PP_NB201_AVGPOOL);
    assert_int_equal(a.op[3], PP_NB201_SKIP);
    assert_int_equal(a.op[5], PP_NB201_CONV1X1);
    char buf[200];
    assert_string_equal(pp_nb201_format(&a, buf, sizeof buf), s);
    static const char *const bad[] = {
        "|nor_conv_3x3~0|+|none~0|avg_pool_3x3~1|",                                  /* 2 nodes */
        "|nor_conv_5x5~0|+|none~0|none~1|+|none~0|none~1|none~2|",                   /* op */
        "|none~0|+|none~1|none~0|+|none~0|none~1|none~2|",                           /* order */
        "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|x",                          /* trailing */
        "|none~0|+|none~0|none~1|+|none~0|none~1|",                                  /* short */
        "none~0|+|none~0|none~1|+|none~0|none~1|none~2|"};                           /* no '|' */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_err_clear(&err);
        assert_int_equal(pp_nb201_parse(bad[i], &a, &err), PERFPRED_ERR_PARSE);
        assert_non_null(strstr(err.msg, "nb201"));
    }
    pp_err_clear(&err);
    pp_nb201_parse("|nor_conv_5x5~0|+|none~0|none~1|+|none~0|none~1|none~2|", &a, &err);
    assert_non_null(strstr(err.msg, "nor_conv_5x5"));
}

static void fbnet_and_ofa_parsers_should_be_strict(void **state)
{
    (void)state;
    pp_fbnet_arch f;
    pp_err err = {0};
    assert_int_equal(pp_fbnet_parse("7 8 1 8 4 8 8 8 7 4 1 4 7 3 2 7 3 2 4 2 4 5", &f, &err),
                     PERFPRED_OK);
    assert_int_equal(f.op[0], 7);
    assert_int_equal(f.op[21], 5);
    pp_fbnet_arch g;
    assert_int_equal(pp_fbnet_parse("k5_e6,skip,k3_e1_g2,skip,k5_e1,skip,skip,skip,k5_e6,k5_e1,"
                                    "k3_e1_g2,k5_e1,k5_e6,k3_e6,k3_e3,k5_e6,k3_e6,k3_e3,k5_e1,"
                                    "k3_e3,k5_e1,k5_e1_g2",
                                    &g, &err),
                     PERFPRED_OK);
    assert_memory_equal(f.op, g.op, sizeof f.op);
    assert_int_equal(pp_fbnet_parse("7,8,1", &f, &err), PERFPRED_ERR_PARSE);
    assert_int_equal(pp_fbnet_parse("9,8,1,8,4,8,8,8,7,4,1,4,7,3,2,7,3,2,4,2,4,5", &f, &err),
                     PERFPRED_ERR_PARSE);
    assert_int_equal(pp_fbnet_parse("7,8,1,8,4,8,8,8,7,4,1,4,7,3,2,7,3,2,4,2,4,5,", &f, &err),
                     PERFPRED_ERR_PARSE);
    pp_ofa_arch o;
    const char *ok = "ks=7 3 5 3 3 7 3 7 3 7 3 7 3 7 7 3 5 5 7 3;e=4 6 3 4 4 4 4 6 3 6 6 4 4 6 6 4 "
                     "3 6 6 4;d=2 3 4 3 4;r=136";
    assert_int_equal(pp_ofa_parse(ok, &o, &err), PERFPRED_OK);
    assert_int_equal(o.r, 136);
    assert_int_equal(o.d[4], 4);
    assert_int_equal(pp_ofa_parse("ks=7,3;e=4;d=2;r=136", &o, &err), PERFPRED_ERR_PARSE);
    pp_err_clear(&err);
    assert_int_equal(pp_ofa_parse("ks=7,3,5,3,3,7,3,7,3,7,3,7,3,7,7,3,5,5,7,3;e=4,6,3,4,4,4,4,6,3,"
                                  "6,6,4,4,6,6,4,3,6,6,4;d=2,3,4,3,5;r=136",
                                  &o, &err),
                     PERFPRED_ERR_PARSE);
    assert_non_null(strstr(err.msg, "d[4]"));
    assert_int_equal(pp_ofa_parse("ks=7,3,5,3,3,7,3,7,3,7,3,7,3,7,7,3,5,5,7,3;e=4,6,3,4,4,4,4,6,3,"
                                  "6,6,4,4,6,6,4,3,6,6,4;d=2,3,4,3,4",
                                  &o, &err),
                     PERFPRED_ERR_PARSE);
}

static void fold_should_drop_zero_edges_and_dead_operations(void **state)
{
    (void)state;
    pp_err err = {0};
    pp_graph *full = NULL, *folded = NULL, *plain = NULL;
    /* node1 = conv3x3(x) only feeds a 'none' edge: dead once folded; node3 = skip(x) + pool(node2) */
    const char *cell = "|nor_conv_3x3~0|+|skip_connect~0|none~1|+|none~0|none~1|avg_pool_3x3~2|";
    char ref[256];
    snprintf(ref, sizeof ref, "nb201:%s@cifar10", cell);
    assert_int_equal(pp_net_graph_from_ref(ref, NULL, &full, &err), PERFPRED_OK);
    snprintf(ref, sizeof ref, "nb201:%s@cifar10;fold", cell);
    assert_int_equal(pp_net_graph_from_ref(ref, NULL, &folded, &err), PERFPRED_OK);
    /* the same network written without the dead conv: node1 = skip(x) is what reaches the output */
    snprintf(ref, sizeof ref, "nb201:%s@cifar10",
             "|skip_connect~0|+|none~0|skip_connect~1|+|none~0|none~1|avg_pool_3x3~2|");
    assert_int_equal(pp_net_graph_from_ref(ref, NULL, &plain, &err), PERFPRED_OK);
    assert_true(folded->totals.macs < full->totals.macs);
    /* dead conv gone: only stem, reduction blocks and classifier convolutions remain */
    assert_int_equal(folded->totals.macs, plain->totals.macs);
    assert_int_equal(count_op(folded, "Mul"), 0);
    assert_int_equal(count_op(full, "Mul"), 15 * 2); /* Mul(node1, 0) once for two edges */
    assert_int_equal(count_op(folded, "AveragePool"), 15 + 2);
    pp_graph_free(full);
    pp_graph_free(folded);
    pp_graph_free(plain);
    /* a cell whose output is always zero folds the whole network away */
    pp_nb201_arch a;
    assert_int_equal(pp_nb201_parse("|avg_pool_3x3~0|+|nor_conv_3x3~0|skip_connect~1|+|none~0|"
                                    "none~1|none~2|",
                                    &a, &err),
                     PERFPRED_OK);
    assert_int_equal(pp_nb201_is_constant(&a, PP_NB201_FOLD), 1);
    assert_int_equal(pp_nb201_is_constant(&a, PP_NB201_PRUNE), 1);
    assert_int_equal(pp_nb201_is_constant(&a, PP_NB201_AS_PYTORCH), 0);
    pp_graph *g = NULL;
    assert_int_equal(pp_net_graph_from_ref("nb201:|avg_pool_3x3~0|+|nor_conv_3x3~0|skip_connect~1|"
                                           "+|none~0|none~1|none~2|;fold",
                                           NULL, &g, &err),
                     PERFPRED_ERR_UNSUPPORTED);
    assert_null(g);
    /* node 2 is zero; FOLD: conv(node 2) is zero too, PRUNE: it runs (on a zero tensor) */
    assert_int_equal(pp_nb201_parse("|avg_pool_3x3~0|+|none~0|none~1|+|none~0|none~1|"
                                    "nor_conv_1x1~2|",
                                    &a, &err),
                     PERFPRED_OK);
    assert_int_equal(pp_nb201_is_constant(&a, PP_NB201_FOLD), 1);
    assert_int_equal(pp_nb201_is_constant(&a, PP_NB201_PRUNE), 1); /* no path from the input */
    assert_int_equal(pp_nb201_parse("|avg_pool_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|"
                                    "nor_conv_3x3~2|",
                                    &a, &err),
                     PERFPRED_OK);
    assert_int_equal(pp_nb201_is_constant(&a, PP_NB201_PRUNE), 0);
    pp_nb201_opts o = pp_nb201_default_opts();
    o.mode = PP_NB201_PRUNE;
    assert_int_equal(pp_build_nb201(&a, &o, &g, &err), PERFPRED_OK);
    /* per cell: the conv3x3 on the zero node 2 and its zero tensor; node 1 (pool) is dead */
    assert_int_equal(count_op(g, "AveragePool"), 2);
    assert_int_equal(count_op(g, "Mul"), 15);
    int convs = count_op(g, "Conv");
    pp_graph_free(g);
    o.mode = PP_NB201_FOLD;
    assert_int_equal(pp_build_nb201(&a, &o, &g, &err), PERFPRED_OK);
    assert_int_equal(count_op(g, "Conv"), convs - 15);
    assert_int_equal(count_op(g, "Mul"), 0);
    pp_graph_free(g);
}

static void ref_resolver_should_apply_batch_and_reject_bad_refs(void **state)
{
    (void)state;
    pp_err err = {0};
    pp_graph *g = NULL;
    pp_shape_opts o = {0};
    o.batch = 8;
    assert_int_equal(pp_net_graph_from_ref("nb201:|nor_conv_3x3~0|+|none~0|skip_connect~1|+|"
                                           "skip_connect~0|none~1|nor_conv_1x1~2|@imagenet16",
                                           &o, &g, &err),
                     PERFPRED_OK);
    const pp_tensor *in = &g->tensors[g->inputs[0]];
    assert_int_equal(in->dims[0], 8);
    assert_int_equal(in->dims[2], 16);
    char s[64];
    out_shape(g, s, sizeof s);
    assert_string_equal(s, "8x120");
    pp_graph_free(g);
    g = NULL;
    static const char *const bad[] = {
        "nb201:|none~0|+|none~0|none~1|+|none~0|none~1|none~2|@cifar1000",
        "nb201:|none~0|+|none~0|none~1|+|none~0|none~1|none~2|;fast",
        "nb201:|skip_connect~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|;fold;prune",
        "fbnet:7,8,1,8,4,8,8,8,7,4,1,4,7,3,2,7,3,2,4,2,4,5@mnist",
        "resnet:18",
        ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pp_err_clear(&err);
        assert_int_not_equal(pp_net_graph_from_ref(bad[i], NULL, &g, &err), PERFPRED_OK);
        assert_null(g);
        assert_true(strlen(err.msg) > 0);
    }
    /* an .onnx ref goes through the loader */
    assert_int_equal(pp_net_graph_from_ref(pp_test_path("tests/fixtures/nas/fbnet_arch0.onnx"), NULL,
                                           &g, &err),
                     PERFPRED_OK);
    assert_int_equal(g->totals.macs, 67605376);
    pp_graph_free(g);
}

static void families_should_hash_architectures_not_datasets(void **state)
{
    (void)state;
    char a[64], b[64], c[64];
    const char *cell = "|nor_conv_3x3~0|+|none~0|skip_connect~1|+|skip_connect~0|none~1|nor_conv_1x1~2|";
    char r1[256], r2[256];
    snprintf(r1, sizeof r1, "nb201:%s@cifar10", cell);
    snprintf(r2, sizeof r2, "nb201:%s@darcy;prune", cell);
    assert_int_equal(pp_net_ref_family(r1, a, sizeof a), 0);
    assert_int_equal(pp_net_ref_family(r2, b, sizeof b), 0);
    assert_string_equal(a, b);
    assert_int_equal(strncmp(a, "nb201-h", 7), 0);
    int bucket = pp_datasets_family_bucket(a);
    assert_true(bucket >= 0 && bucket < 100);
    assert_int_equal(pp_net_ref_family("models/resnet18.onnx", c, sizeof c), 0);
    assert_string_equal(c, "resnet18");
    assert_int_equal(pp_datasets_family_bucket(c), -1);
    /* buckets spread: 200 FBNet encodings land in more than 50 of 100 buckets */
    int seen[100] = {0}, distinct = 0;
    for (int i = 0; i < 200; i++) {
        char ref[128];
        size_t off = (size_t)snprintf(ref, sizeof ref, "fbnet:");
        for (int l = 0; l < PP_FBNET_LAYERS; l++)
            off += (size_t)snprintf(ref + off, sizeof ref - off, "%s%d", l ? "," : "",
                                    (i * 7 + l * l * 3 + (i >> l)) % 9);
        assert_int_equal(pp_net_ref_family(ref, a, sizeof a), 0);
        int k = pp_datasets_family_bucket(a);
        if (!seen[k]++) distinct++;
    }
    assert_true(distinct > 50);
}

/* ---- copied cells (build_nb201.c): the same graph as cells built one by one ---- */

/* Knuth's MMIX step: the tests' random stream */
static uint64_t lcg(uint64_t r) { return r * 6364136223846793005ull + 1442695040888963407ull; }

/* A random NAS-Bench-201 cell: each edge one of the five ops */
static pp_nb201_arch random_cell(uint64_t *r)
{
    pp_nb201_arch a;
    for (int e = 0; e < PP_NB201_EDGES; e++) {
        *r = lcg(*r);
        a.op[e] = (pp_nb201_op)((*r >> 33) % 5);
    }
    return a;
}

static void nb201_copied_cells_should_give_the_graph_of_built_cells(void **state)
{
    (void)state;
    static const char *const tails[] = {"@cifar10", "@imagenet16;fold", "@cifar100;prune",
                                        "@ninapro", "@darcy;fold"};
    uint64_t r = 12345;
    int n_built = 0, n_reused = 0;
    for (int it = 0; it < 400; it++) {
        pp_nb201_arch a = random_cell(&r);
        char cell[160], ref[200];
        pp_nb201_format(&a, cell, sizeof cell);
        snprintf(ref, sizeof ref, "nb201:%s%s", cell, tails[it % 5]);
        pp_shape_opts o = {.batch = it % 3 ? 1 : 4};
        pp_err e1 = {0}, e2 = {0};
        pp_graph *copied = NULL, *built = NULL;
        pp_nb201_copy_cells(0);
        perfpred_status s2 = pp_net_graph_from_ref(ref, &o, &built, &e2);
        pp_nb201_copy_cells(1);
        perfpred_status s1 = pp_net_graph_from_ref(ref, &o, &copied, &e1);
        assert_int_equal(s1, s2);
        if (s1 == PERFPRED_OK) {
            pp_test_same_graph(copied, built);
            n_built++;
            for (int i = 0; i < copied->n_nodes; i++) {
                assert_int_equal(built->nodes[i].copy_of, 0);
                n_reused += pp_node_copy_source(copied, i) >= 0;
            }
        } else {
            assert_string_equal(e1.msg, e2.msg);
        }
        pp_graph_free(copied);
        pp_graph_free(built);
    }
    /* most networks were built, and their copies did reuse the first cell's results */
    assert_true(n_built > 300);
    assert_true(n_reused > 20 * n_built);
}

/* ---- the node memo (node_memo.c): the graph of a network built without one ---- */

static void node_memo_should_give_the_graph_built_without_it(void **state)
{
    (void)state;
    /* 5 datasets x 3 modes x 2 batches: more distinct layers than the memo holds, so it also
     * starts over when full */
    static const char *const data[] = {"@cifar10", "@imagenet16", "@cifar100", "@ninapro", "@darcy"};
    static const char *const modes[] = {"", ";fold", ";prune"};
    pp_node_memo *memo = pp_node_memo_new();
    assert_non_null(memo);
    uint64_t r = 777;
    int n_built = 0;
    for (int it = 0; it < 600; it++) {
        pp_nb201_arch a = random_cell(&r);
        char cell[160], ref[400];
        pp_nb201_format(&a, cell, sizeof cell);
        snprintf(ref, sizeof ref, "nb201:%s%s%s", cell, data[(r >> 20) % 5], modes[(r >> 24) % 3]);
        if (it % 10 == 7 || it % 10 == 9) { /* the other builders lend it too */
            int off = snprintf(ref, sizeof ref, it % 10 == 7 ? "fbnet:" : "ofa:ks=");
            for (int k = 0; k < (it % 10 == 7 ? 22 : 20); k++) {
                r = lcg(r);
                off += snprintf(ref + off, sizeof ref - (size_t)off, "%s%d",
                                k ? (it % 10 == 7 ? "," : " ") : "",
                                it % 10 == 7 ? (int)((r >> 33) % 9) : 3 + 2 * (int)((r >> 33) % 3));
            }
            if (it % 10 == 9)
                snprintf(ref + off, sizeof ref - (size_t)off, ";e=%s;d=3 2 4 3 2;r=%d",
                         (r >> 40) % 2 ? "4 6 3 4 4 4 4 6 3 6 6 4 4 6 6 4 3 6 6 4"
                                       : "3 3 3 3 4 4 4 4 6 6 6 6 3 3 3 3 4 4 4 4",
                         (r >> 50) % 2 ? 160 : 224);
        }
        pp_shape_opts plain = {.batch = (r >> 28) % 2 ? 1 : 3}, with = plain;
        with.memo = memo;
        pp_nb201_copy_cells(it % 4 != 3); /* now and then every cell built, through the memo */
        pp_err e1 = {0}, e2 = {0};
        pp_graph *g1 = NULL, *g2 = NULL;
        perfpred_status s1 = pp_net_graph_from_ref(ref, &with, &g1, &e1);
        perfpred_status s2 = pp_net_graph_from_ref(ref, &plain, &g2, &e2);
        pp_nb201_copy_cells(1);
        assert_int_equal(s1, s2);
        if (ref[0] != 'n') assert_int_equal(s1, PERFPRED_OK);
        if (s1 == PERFPRED_OK) {
            pp_test_same_graph(g1, g2); /* memo detached, features with their padding */
            n_built++;
        } else {
            assert_string_equal(e1.msg, e2.msg);
        }
        pp_graph_free(g1);
        pp_graph_free(g2);
    }
    assert_true(n_built > 450);
    /* most layers came from the memo: ~75 of ~220 nodes a network go through the rules */
    assert_true(pp_node_memo_hits(memo) > 40 * n_built);
    pp_node_memo_free(memo);
    pp_node_memo_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(builders_should_match_pytorch_exports),
        cmocka_unit_test(nb201_parse_should_round_trip_and_reject_malformed),
        cmocka_unit_test(fbnet_and_ofa_parsers_should_be_strict),
        cmocka_unit_test(fold_should_drop_zero_edges_and_dead_operations),
        cmocka_unit_test(ref_resolver_should_apply_batch_and_reject_bad_refs),
        cmocka_unit_test(families_should_hash_architectures_not_datasets),
        cmocka_unit_test(nb201_copied_cells_should_give_the_graph_of_built_cells),
        cmocka_unit_test(node_memo_should_give_the_graph_built_without_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
