/* tests/test_devices.c: device descriptors: every shipped YAML loads, strict errors name
 * file:line:col, inheritance, MIG slice derivation and short names, YAML round trip. Expected
 * figures are literals from the vendor documents / MIG tables, never values the code computed. */
#include "tests/helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/devices.h"

static pp_device_db *load_shipped(void)
{
    pp_device_db *db = NULL;
    pp_err err = {0};
    perfpred_status st = pp_devices_load_dir(pp_test_path("configs/devices"), &db, &err);
    if (st != PERFPRED_OK) print_error("load_dir: %s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
    return db;
}

static const pp_device *must_find(const pp_device_db *db, const char *name)
{
    const pp_device *d = pp_devices_find(db, name);
    if (!d) print_error("device '%s' not found\n", name);
    assert_non_null(d);
    return d;
}

/* ------------------------------------------------------------ shipped set ---- */

static void load_dir_should_load_every_shipped_descriptor(void **state)
{
    pp_device_db *db = load_shipped();
    static const char *const expected[] = {
        "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "h100-sxm5-80gb",
        "h100-pcie-80gb", "v100-pcie-32gb", "v100-sxm2-16gb", "v100-sxm2-32gb", "t4", "l4",
        "p100-pcie-16gb", "p4", "jetson-nano", "jetson-tx1", "jetson-tx2", "jetson-xavier-nx",
        "jetson-agx-xavier", "jetson-orin-nano", "jetson-agx-orin", "rpi3", "rpi4", "rpi4-pytorch",
        "rpi5", "rpi5-onnxruntime", "rpi5-pytorch-mobile", "pixel2", "pixel3", "galaxy-a50",
        "galaxy-s7", "essential-ph1", "pixel4", "pixel4-gpu", "galaxy-s10", "mi8se",
        "galaxy-a03s", "moto-one-fusion", "iphone7", "iphonexs", "nnmeter-cortexa76-pixel4",
        "nnmeter-adreno640-mi9", "nnmeter-adreno630-pixel3xl", "nnmeter-myriadx-ncs2",
        "gtx-1080-ti", "rtx-2080-ti", "titan-rtx", "titan-x-pascal", "titan-x-maxwell",
        "titan-xp", "rtx-3090", "rtx-4090", "rtx-5090", "rtx-pro-6000-max-q", "xeon-gold-6226",
        "xeon-gold-6240", "xeon-silver-4114", "xeon-silver-4210r", "xeon-e5-2640",
        "core-i7-7820x", "core-i9-10940x", "core-i7-12700h", "host-cpu", "epyc-kvm-2vcpu"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        const pp_device *d = must_find(db, expected[i]);
        assert_string_equal(d->name, expected[i]);
    }
    /* 36 MIG slices: 6 profiles on each of the 4 A100 and 2 H100 cards */
    int n_mig = 0;
    for (int i = 0; i < pp_devices_count(db); i++) {
        const pp_device *d = pp_devices_at(db, i);
        assert_non_null(d->description);
        assert_non_null(d->vendor);
        assert_non_null(d->runtime_framework);
        assert_non_null(d->source_file);
        assert_ptr_equal(pp_devices_find(db, d->name), d);
        for (int k = 0; k < d->n_aliases; k++) assert_ptr_equal(pp_devices_find(db, d->aliases[k]), d);
        if (i > 0) assert_true(strcmp(pp_devices_at(db, i - 1)->name, d->name) < 0);
        n_mig += d->is_mig;
        assert_true(d->hostable ==
                    (strcmp(d->name, "host-cpu") == 0 || strcmp(d->name, "epyc-kvm-2vcpu") == 0 ||
                     strcmp(d->name, "xeon-kvm-2vcpu") == 0 ||
                     strcmp(d->name, "epyc-zen4-kvm-2vcpu") == 0));
    }
    assert_int_equal(n_mig, 36);
    assert_null(pp_devices_at(db, pp_devices_count(db)));
    pp_devices_free(db);
}

static void shipped_figures_should_match_the_datasheets(void **state)
{
    pp_device_db *db = load_shipped();
    const pp_device *a = must_find(db, "a100-sxm4-40gb");
    assert_rel_close(a->peak_tflops[PP_PREC_FP32], 19.5, 1e-12);
    assert_rel_close(a->peak_tflops[PP_PREC_TF32], 156, 1e-12);
    assert_rel_close(a->peak_tflops[PP_PREC_FP16], 312, 1e-12);
    assert_rel_close(a->memory_bandwidth_gbs, 1555, 1e-12);
    assert_int_equal(a->compute_units, 108);
    assert_rel_close(a->max_power_w, 400, 1e-12);
    assert_rel_close(a->idle_power_w, 0, 0);          /* not stated by NVIDIA */
    assert_string_equal(a->memory_type, "hbm2");     /* [A100-DS]: 40GB HBM2 */
    assert_int_equal(pp_memory_family_of(a->memory_type), PP_MEMFAM_HBM);
    assert_int_equal(pp_memory_family_of("gddr6x"), PP_MEMFAM_GDDR);
    assert_int_equal(pp_memory_family_of(NULL), PP_MEMFAM_UNKNOWN);
    assert_int_equal(a->kind, PP_DEV_GPU);
    assert_string_equal(a->runtime_framework, "pytorch-eager");
    assert_int_equal(a->runtime_precision, PP_PREC_FP32);
    assert_int_equal(a->n_mig_profiles, 6);
    assert_int_equal(a->mig_total_compute, 7);
    assert_int_equal(a->mig_total_memory, 8);
    const pp_device *h = must_find(db, "h100-pcie");
    assert_string_equal(h->name, "h100-pcie-80gb");
    assert_rel_close(h->peak_tflops[PP_PREC_FP32], 51, 1e-12);
    assert_int_equal(h->compute_units, 114);
    assert_rel_close(h->memory_gb, 80, 1e-12);        /* inherited from h100-sxm5-80gb */
    const pp_device *host = must_find(db, "host-cpu");
    assert_int_equal(host->kind, PP_DEV_CPU);
    assert_int_equal(host->compute_units, 2);
    assert_rel_close(host->peak_tflops[PP_PREC_FP32], 2 * 2.0e9 * 64 / 1e12, 1e-12);
    pp_devices_free(db);
}

/* ------------------------------------------------------------------ names ---- */

static void find_should_resolve_short_and_mig_names(void **state)
{
    pp_device_db *db = load_shipped();
    static const char *const cases[][2] = {
        {"a100", "a100-sxm4-40gb"},
        {"A100", "a100-sxm4-40gb"},
        {"a100-mig-3g", "a100-sxm4-40gb-mig-3g.20gb"},
        {"a100-mig-1g", "a100-sxm4-40gb-mig-1g.5gb"},
        {"a100-mig-2g", "a100-sxm4-40gb-mig-2g.10gb"},
        {"A100-MIG-7G", "a100-sxm4-40gb-mig-7g.40gb"},
        {"a100-40gb-mig-4g", "a100-sxm4-40gb-mig-4g.20gb"},
        {"a100-sxm4-40gb-mig-1g", "a100-sxm4-40gb-mig-1g.5gb"},
        {"a100-mig-1g.10gb", "a100-sxm4-40gb-mig-1g.10gb"},
        {"a100-mig-3g.20gb", "a100-sxm4-40gb-mig-3g.20gb"},
        {"a100-sxm4-40gb-mig-3g.20gb", "a100-sxm4-40gb-mig-3g.20gb"},
        {"a100-80gb", "a100-sxm4-80gb"},
        {"a100-80gb-mig-1g", "a100-sxm4-80gb-mig-1g.10gb"},
        {"a100-80gb-mig-1g.20gb", "a100-sxm4-80gb-mig-1g.20gb"},
        {"a100-pcie", "a100-pcie-40gb"},
        {"a100-pcie-mig-3g", "a100-pcie-40gb-mig-3g.20gb"},
        {"a100-80gb-pcie-mig-7g", "a100-pcie-80gb-mig-7g.80gb"},
        {"h100", "h100-sxm5-80gb"},
        {"h100-mig-1g", "h100-sxm5-80gb-mig-1g.10gb"},
        {"h100-mig-3g", "h100-sxm5-80gb-mig-3g.40gb"},
        {"h100-pcie-mig-2g", "h100-pcie-80gb-mig-2g.20gb"},
        {"raspi4", "rpi4"},
        {"samsung_a50", "galaxy-a50"},
        {"titanxp", "titan-xp"},
        {"cortexa76cpu_tflite21", "nnmeter-cortexa76-pixel4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pp_device *d = must_find(db, cases[i][0]);
        if (strcmp(d->name, cases[i][1]) != 0)
            print_error("'%s' -> '%s', expected '%s'\n", cases[i][0], d->name, cases[i][1]);
        assert_string_equal(d->name, cases[i][1]);
    }
    assert_null(pp_devices_find(db, "a100-mig-5g"));
    assert_null(pp_devices_find(db, "a100-mig-3g.21gb"));
    assert_null(pp_devices_find(db, "a100 "));
    assert_null(pp_devices_find(db, ""));
    assert_null(pp_devices_find(db, NULL));
    assert_null(pp_devices_find(NULL, "a100"));
    pp_devices_free(db);
}

/* ------------------------------------------------------------------- MIG ---- */

static void mig_slices_should_follow_the_guide_table(void **state)
{
    pp_device_db *db = load_shipped();
    const pp_device *a = must_find(db, "a100-sxm4-40gb");
    const pp_device *s = must_find(db, "a100-mig-3g");
    assert_true(s->is_mig);
    assert_ptr_equal(s->parent, a);
    assert_string_equal(s->base, "a100-sxm4-40gb");
    assert_string_equal(s->mig_profile, "3g.20gb");
    assert_int_equal(s->mig_compute_slices, 3);
    assert_int_equal(s->mig_memory_slices, 4);
    assert_int_equal(s->mig_total_compute, 7);
    assert_int_equal(s->mig_total_memory, 8);
    assert_int_equal(s->compute_units, 42);
    assert_rel_close(s->memory_gb, 19.62, 1e-12);                 /* nvidia-smi mig -lgip */
    assert_rel_close(s->memory_bandwidth_gbs, 1555.0 * 4 / 8, 1e-12);
    assert_rel_close(s->l2_mb, 40.0 * 4 / 8, 1e-12);
    assert_rel_close(s->peak_tflops[PP_PREC_FP32], 19.5 * 42 / 108, 1e-12);
    assert_rel_close(s->peak_tflops[PP_PREC_TF32], 156.0 * 42 / 108, 1e-12);
    assert_rel_close(s->max_power_w, 400.0 * 3 / 7, 1e-12);
    assert_rel_close(s->clock_mhz, 1410, 1e-12);
    assert_string_equal(s->runtime_framework, "pytorch-eager");
    assert_false(s->hostable);
    assert_int_equal(s->n_mig_profiles, 0);

    static const struct {
        const char *name;
        int sms, m;
        double gib;
    } a40[] = {{"a100-sxm4-40gb-mig-1g.5gb", 14, 1, 4.75}, {"a100-sxm4-40gb-mig-1g.10gb", 14, 2, 9.75},
               {"a100-sxm4-40gb-mig-2g.10gb", 28, 2, 9.75}, {"a100-sxm4-40gb-mig-3g.20gb", 42, 4, 19.62},
               {"a100-sxm4-40gb-mig-4g.20gb", 56, 4, 19.62}, {"a100-sxm4-40gb-mig-7g.40gb", 98, 8, 39.5}},
      h100[] = {{"h100-sxm5-80gb-mig-1g.10gb", 16, 1, 9.75}, {"h100-sxm5-80gb-mig-1g.20gb", 26, 2, 19.62},
                {"h100-sxm5-80gb-mig-2g.20gb", 32, 2, 19.62}, {"h100-sxm5-80gb-mig-3g.40gb", 60, 4, 39.5},
                {"h100-sxm5-80gb-mig-4g.40gb", 64, 4, 39.5}, {"h100-sxm5-80gb-mig-7g.80gb", 132, 8, 79.25}};
    for (int i = 0; i < 6; i++) {
        const pp_device *x = must_find(db, a40[i].name);
        assert_int_equal(x->compute_units, a40[i].sms);
        assert_int_equal(x->mig_memory_slices, a40[i].m);
        assert_rel_close(x->memory_gb, a40[i].gib, 1e-12);
        assert_rel_close(x->memory_bandwidth_gbs, 1555.0 * a40[i].m / 8, 1e-12);
        assert_rel_close(x->peak_tflops[PP_PREC_FP32], 19.5 * a40[i].sms / 108, 1e-12);
        const pp_device *y = must_find(db, h100[i].name);
        assert_int_equal(y->compute_units, h100[i].sms);
        assert_int_equal(y->mig_memory_slices, h100[i].m);
        assert_rel_close(y->memory_gb, h100[i].gib, 1e-12);
        assert_rel_close(y->memory_bandwidth_gbs, 3350.0 * h100[i].m / 8, 1e-12);
        assert_rel_close(y->peak_tflops[PP_PREC_FP16], 989.5 * h100[i].sms / 132, 1e-12);
    }
    pp_devices_free(db);
}

static void mig_slices_should_be_monotone_in_g_and_m(void **state)
{
    pp_device_db *db = load_shipped();
    int parents = 0, pairs = 0;
    for (int i = 0; i < pp_devices_count(db); i++) {
        const pp_device *p = pp_devices_at(db, i);
        if (p->n_mig_profiles == 0) continue;
        parents++;
        int n_slices = 0;
        for (int j = 0; j < pp_devices_count(db); j++) {
            const pp_device *a = pp_devices_at(db, j);
            if (!a->is_mig || a->parent != p) continue;
            n_slices++;
            assert_true(a->memory_gb <= p->memory_gb);
            assert_true(a->compute_units <= p->compute_units);
            for (int k = 0; k < pp_devices_count(db); k++) {
                const pp_device *b = pp_devices_at(db, k);
                if (!b->is_mig || b->parent != p || a == b) continue;
                if (a->mig_compute_slices > b->mig_compute_slices ||
                    a->mig_memory_slices > b->mig_memory_slices)
                    continue;
                pairs++;
                assert_true(a->compute_units <= b->compute_units);
                assert_true(a->memory_gb <= b->memory_gb);
                assert_true(a->memory_bandwidth_gbs <= b->memory_bandwidth_gbs);
                assert_true(a->l2_mb <= b->l2_mb);
                for (int q = 0; q < PP_PREC__COUNT; q++)
                    assert_true(a->peak_tflops[q] <= b->peak_tflops[q]);
                assert_true(a->max_power_w <= b->max_power_w);
            }
        }
        assert_int_equal(n_slices, p->n_mig_profiles);
    }
    assert_int_equal(parents, 6);
    assert_true(pairs > 6 * 10);
    pp_devices_free(db);
}

/* ------------------------------------------------------------ inheritance ---- */

static pp_device_db *load_fixture(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "tests/fixtures/devices/%s", name);
    const char *paths[] = {pp_test_path(rel)};
    pp_device_db *db = NULL;
    pp_err err = {0};
    perfpred_status st = pp_devices_load_files(paths, 1, &db, &err);
    if (st) print_error("%s: %s\n", name, err.msg);
    assert_int_equal(st, PERFPRED_OK);
    return db;
}

static void inheritance_should_override_only_written_fields(void **state)
{
    pp_device_db *db = load_fixture("inherit.yaml");
    const pp_device *p = must_find(db, "parent-gpu"), *c = must_find(db, "child-gpu");
    assert_string_equal(c->base, "parent-gpu");      /* `base: pg` names it by alias */
    assert_rel_close(c->memory_gb, 80, 1e-12);       /* overridden */
    assert_int_equal(c->runtime_precision, PP_PREC_FP16);
    assert_rel_close(c->peak_tflops[PP_PREC_FP32], 10, 1e-12);   /* inherited */
    assert_rel_close(c->memory_bandwidth_gbs, 1600, 1e-12);
    assert_int_equal(c->compute_units, 100);
    assert_rel_close(c->launch_overhead_us, 4, 1e-12);
    assert_string_equal(c->runtime_framework, "pytorch-eager");
    assert_string_equal(c->vendor, "Test");
    assert_int_equal(c->n_fusion, 2);
    assert_string_equal(c->fusion[0].ops[1], "Relu");
    /* never inherited: aliases, description, MIG table, artifacts */
    assert_int_equal(c->n_aliases, 0);
    assert_string_equal(c->description, "child");
    assert_int_equal(c->n_mig_profiles, 0);
    assert_null(pp_devices_find(db, "child-gpu-mig-1g"));
    assert_null(c->artifacts_dir);
    assert_string_equal(p->artifacts_dir, "artifacts/parent-gpu");
    assert_rel_close(p->memory_gb, 40, 1e-12);       /* the parent is untouched */

    /* shipped: a100-sxm4-80gb inherits the 40GB card's peaks, overrides memory and precision */
    pp_device_db *ship = load_shipped();
    const pp_device *a80 = must_find(ship, "a100-sxm4-80gb");
    assert_string_equal(a80->base, "a100-sxm4-40gb");
    assert_rel_close(a80->memory_gb, 80, 1e-12);
    assert_rel_close(a80->memory_bandwidth_gbs, 2039, 1e-12);
    assert_rel_close(a80->peak_tflops[PP_PREC_FP32], 19.5, 1e-12);
    assert_rel_close(a80->max_power_w, 400, 1e-12);
    assert_int_equal(a80->runtime_precision, PP_PREC_TF32);
    pp_devices_free(ship);
    pp_devices_free(db);
}

static void mig_memory_should_follow_m_when_the_profile_states_none(void **state)
{
    pp_device_db *db = load_fixture("inherit.yaml");
    const pp_device *p = must_find(db, "parent-gpu");
    const pp_device *s1 = must_find(db, "pg-mig-1g");
    assert_string_equal(s1->name, "parent-gpu-mig-1g.5gb");
    assert_ptr_equal(s1->parent, p);
    assert_rel_close(s1->memory_gb, 40.0 / 8, 1e-12);
    assert_rel_close(s1->memory_bandwidth_gbs, 1600.0 / 8, 1e-12);
    assert_rel_close(s1->l2_mb, 40.0 / 8, 1e-12);
    assert_rel_close(s1->peak_tflops[PP_PREC_FP32], 10.0 * 14 / 100, 1e-12);
    assert_rel_close(s1->peak_tflops[PP_PREC_FP16], 80.0 * 14 / 100, 1e-12);
    assert_rel_close(s1->idle_power_w, 35.0 / 7, 1e-12);
    assert_rel_close(s1->max_power_w, 350.0 / 7, 1e-12);
    assert_null(s1->artifacts_dir);
    const pp_device *s3 = must_find(db, "parent-gpu-mig-3g.20gb");
    assert_rel_close(s3->memory_gb, 40.0 * 4 / 8, 1e-12);
    assert_rel_close(s3->max_power_w, 350.0 * 3 / 7, 1e-12);
    /* two 3g profiles with equal m: the short name takes the first listed */
    assert_ptr_equal(must_find(db, "pg-mig-3g"), s3);
    assert_rel_close(must_find(db, "pg-mig-3g.21gb")->memory_gb, 21, 1e-12);
    assert_int_equal(p->n_mig_profiles, 3);
    assert_rel_close(p->mig_profiles[0].memory_gb, 5, 1e-12);
    pp_devices_free(db);
}

/* ---------------------------------------------------------------- errors ---- */

/* Loads a fixture that must fail with st; its message must contain every needle. */
static void expect_error(const char *fixture, perfpred_status st, const char *const *needles)
{
    char rel[256];
    snprintf(rel, sizeof rel, "tests/fixtures/devices/%s", fixture);
    const char *paths[] = {pp_test_path(rel)};
    pp_device_db *db = NULL;
    pp_err err = {0};
    perfpred_status got = pp_devices_load_files(paths, 1, &db, &err);
    if (got != st) print_error("%s: status %d (%s)\n", fixture, got, err.msg);
    assert_int_equal(got, st);
    assert_null(db);
    for (int i = 0; needles[i]; i++) {
        if (!strstr(err.msg, needles[i]))
            print_error("%s: message \"%s\" lacks \"%s\"\n", fixture, err.msg, needles[i]);
        assert_non_null(strstr(err.msg, needles[i]));
    }
}

static void errors_should_name_file_line_and_column(void **state)
{
    expect_error("unknown_key.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"unknown_key.yaml:8:3:", "unknown key 'bandwith_gbs'",
                                  "memory_bandwidth_gbs", NULL});
    expect_error("wrong_unit.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"wrong_unit.yaml:7:3:", "wrong unit", "'memory_bandwidth_gbs'",
                                  NULL});
    expect_error("bad_number.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"bad_number.yaml:7:14:", "bad number '1.5GB'", "memory_gb",
                                  NULL});
    expect_error("missing_field.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"missing_field.yaml:2:1:", "missing required field 'vendor'",
                                  NULL});
    expect_error("negative_bandwidth.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"negative_bandwidth.yaml:7:25:", "negative value -900",
                                  "memory_bandwidth_gbs", NULL});
    expect_error("base_cycle.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"base_cycle.yaml:8:7:", "cycle", "cyc-a -> cyc-b -> cyc-a",
                                  NULL});
    expect_error("unknown_base.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"unknown_base.yaml:4:7:", "unknown base 'no-such-device'", NULL});
    expect_error("duplicate_alias.yaml", PERFPRED_ERR_DEVICE,
                 (const char *[]){"duplicate_alias.yaml:10:18:", "'dup-shared'", "'dup-one'",
                                  "duplicate_alias.yaml:3:11", NULL});
}

/* Writes text to a temporary .yaml file, loads it, and checks status and message. */
/* Loads descriptor text written to a temporary file (removed again). */
static perfpred_status load_text(const char *text, pp_device_db **db, pp_err *err)
{
    const char *tmp = pp_test_tmpfile(text, strlen(text), ".yaml");
    assert_non_null(tmp);
    char path[4096];
    snprintf(path, sizeof path, "%s", tmp);
    const char *paths[] = {path};
    perfpred_status got = pp_devices_load_files(paths, 1, db, err);
    unlink(path);
    return got;
}

static void expect_text_error(const char *text, perfpred_status st, const char *needle)
{
    pp_device_db *db = NULL;
    pp_err err = {0};
    perfpred_status got = load_text(text, &db, &err);
    if (got != st || !strstr(err.msg, needle))
        print_error("status %d, message \"%s\", wanted \"%s\"\n", got, err.msg, needle);
    assert_int_equal(got, st);
    assert_non_null(strstr(err.msg, needle));
    assert_null(db);
}

#define HEAD "name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime: {framework: pytorch-eager, precision: fp32}\n"

/* Where a host's dispatch scale comes from: the H100 SXM5's and the H200's are measured on this
 * project's machines; the A100s (and their MIG slices) state theirs as transferred, between the two
 * measured ones (their geometric mean); a Jetson's, stated without a source, is an estimate. */
static void host_dispatch_source_should_be_stated_and_inherited(void **state)
{
    (void)state;
    pp_device_db *db = load_shipped();
    const pp_device *h = must_find(db, "h100-sxm5-80gb");
    assert_int_equal(h->host_dispatch_source, PP_HOST_MEASURED);
    assert_true(h->host_dispatch_scale > 0.3 && h->host_dispatch_scale < 0.5);
    const pp_device *h2 = must_find(db, "h200-sxm-141gb");
    assert_int_equal(h2->host_dispatch_source, PP_HOST_MEASURED);
    assert_true(h2->host_dispatch_scale > 0.3 && h2->host_dispatch_scale < 0.5);
    const pp_device *m = must_find(db, "a100-mig-1g");
    assert_int_equal(m->host_dispatch_source, PP_HOST_TRANSFERRED);
    double lo = fmin(h->host_dispatch_scale, h2->host_dispatch_scale);
    double hi = fmax(h->host_dispatch_scale, h2->host_dispatch_scale);
    assert_true(m->host_dispatch_scale >= lo && m->host_dispatch_scale <= hi);
    assert_int_equal(must_find(db, "a100-pcie-80gb")->host_dispatch_source, PP_HOST_TRANSFERRED);
    const pp_device *j = must_find(db, "jetson-orin-nano");
    assert_int_equal(j->host_dispatch_source, PP_HOST_ESTIMATE);
    assert_true(j->host_dispatch_scale > 1);
    assert_string_equal(pp_host_source_name(PP_HOST_TRANSFERRED), "transferred");
    assert_string_equal(pp_host_source_name(7), "estimate");
    pp_devices_free(db);
}

/* The Jetsons with tensor cores state their rates, derived from the module data sheets' SMs and
 * clocks and the architecture's dense fp16 FLOP per SM per clock: Volta 8 tensor cores x 64 FMA x
 * 2 = 1,024, Ampere (A100-class, as Orin's INT8 figures show) 2,048; TF32 half of fp16, bf16 the
 * same. The Orin GPUs' sparse INT8 figures (Orin Nano data sheet 40 TOPS, the AGX Orin technical
 * brief 170) are 4x the fp16 rate. */
static void jetson_tensor_rates_should_follow_their_sms_and_clocks(void **state)
{
    (void)state;
    pp_device_db *db = load_shipped();
    static const struct {
        const char *name;
        int sms;
        double mhz, per_sm_clock, int8_sparse_tops;
        int ampere;
    } J[] = {{"jetson-xavier-nx", 6, 1100, 1024, 0, 0},
             {"jetson-agx-xavier", 8, 1377, 1024, 0, 0},
             {"jetson-orin-nano", 8, 625, 2048, 40, 1},
             {"jetson-agx-orin", 16, 1300, 2048, 170, 1}};
    for (size_t i = 0; i < sizeof J / sizeof *J; i++) {
        const pp_device *d = must_find(db, J[i].name);
        assert_int_equal(d->compute_units, J[i].sms);
        assert_rel_close(d->clock_mhz, J[i].mhz, 1e-12);
        double fp16 = J[i].sms * J[i].per_sm_clock * J[i].mhz * 1e-6;
        assert_rel_close(d->peak_tflops[PP_PREC_FP16], fp16, 0.01);
        if (J[i].int8_sparse_tops > 0)
            assert_rel_close(4 * d->peak_tflops[PP_PREC_FP16], J[i].int8_sparse_tops, 0.03);
        assert_rel_close(d->peak_tflops[PP_PREC_TF32], J[i].ampere ? fp16 / 2 : 0, 0.01);
        assert_rel_close(d->peak_tflops[PP_PREC_BF16], J[i].ampere ? fp16 : 0, 0.01);
    }
    /* Maxwell and Pascal Tegra GPUs have no tensor cores: fp16 twice fp32 on the lanes */
    const pp_device *tx2 = must_find(db, "jetson-tx2");
    assert_rel_close(tx2->peak_tflops[PP_PREC_FP16], 2 * tx2->peak_tflops[PP_PREC_FP32], 0.01);
    assert_rel_close(tx2->peak_tflops[PP_PREC_TF32], 0, 1e-12);
    pp_devices_free(db);
}

/* GeForce whitepapers state fp16 tensor rates with fp32 accumulation at half the fp16-accumulate
 * rate: [TU-WP] RTX 2080 Ti 53.8 / 107.6, [GA102-WP] RTX 3090 71 / 142, [ADA-WP] RTX 4090 165.2 /
 * 330.3. The RTX A6000 (base: rtx-3090) runs both at 154.8 and writes its own; the RTX 5090 states
 * neither; a datacenter card states no separate rate (0: the fp16 figure's). */
static void fp16_accumulate_rates_should_be_the_whitepapers_and_not_leak_to_children(void **state)
{
    (void)state;
    pp_device_db *db = load_shipped();
    assert_rel_close(must_find(db, "rtx-2080-ti")->peak_fp16_acc16_tflops, 107.6, 1e-12);
    assert_rel_close(must_find(db, "rtx-3090")->peak_fp16_acc16_tflops, 142, 1e-12);
    assert_rel_close(must_find(db, "rtx-4090")->peak_fp16_acc16_tflops, 330.3, 1e-12);
    assert_rel_close(must_find(db, "rtx-4090-compile")->peak_fp16_acc16_tflops, 330.3, 1e-12);
    assert_rel_close(must_find(db, "rtx-a6000")->peak_fp16_acc16_tflops, 154.8, 1e-12);
    assert_true(must_find(db, "rtx-5090")->peak_fp16_acc16_tflops == 0);
    assert_true(must_find(db, "a100-sxm4-40gb")->peak_fp16_acc16_tflops == 0);
    assert_true(must_find(db, "v100-sxm2-32gb")->peak_fp16_acc16_tflops == 0);
    pp_devices_free(db);
    /* a MIG slice takes its share of the SMs: 200 x 14 / 98 */
    const char *text = HEAD "hardware:\n  peak_tflops: {fp16: 100, fp16_acc16: 200}\n"
                            "  memory_gb: 80\n  memory_bandwidth_gbs: 2000\n  compute_units: 98\n"
                            "mig:\n  total_compute_slices: 7\n  total_memory_slices: 8\n  profiles:\n"
                            "    - {name: 1g.10gb, compute_slices: 1, memory_slices: 1, "
                            "compute_units: 14}\n";
    pp_device_db *one = NULL;
    pp_err err = {0};
    assert_int_equal(load_text(text, &one, &err), PERFPRED_OK);
    assert_rel_close(must_find(one, "t")->peak_fp16_acc16_tflops, 200, 1e-12);
    assert_rel_close(must_find(one, "t-mig-1g.10gb")->peak_fp16_acc16_tflops, 200.0 * 14 / 98,
                     1e-12);
    pp_devices_free(one);
    /* a misspelt key is named with the keys the section knows */
    expect_text_error(HEAD "hardware:\n  peak_tflops: {fp16_acc32: 1}\n", PERFPRED_ERR_DEVICE,
                      "fp16_acc16");
}

/* gpu-benches' gpu-stream "scale" maxima: A100 40GB 1381, A100 80GB 1732, H200 3165 GB/s; the
 * A100 PCIe 80GB (base: a100-pcie-40gb) was not measured and states 0, so it streams at 0.888 x
 * 1935; a 3g.20gb slice holds 4 of 8 memory slices: 1381 / 2. */
static void stream_bandwidth_should_be_measured_or_a_share_of_the_datasheet(void **state)
{
    (void)state;
    pp_device_db *db = load_shipped();
    assert_rel_close(pp_device_stream_gbs(must_find(db, "a100-sxm4-40gb")), 1381, 1e-12);
    assert_rel_close(pp_device_stream_gbs(must_find(db, "a100-sxm4-80gb")), 1732, 1e-12);
    assert_rel_close(pp_device_stream_gbs(must_find(db, "h200-sxm-141gb")), 3165, 1e-12);
    assert_rel_close(pp_device_stream_gbs(must_find(db, "a100-pcie-80gb")), 0.888 * 1935, 1e-12);
    assert_rel_close(pp_device_stream_gbs(must_find(db, "h100-sxm5-80gb")), 0.888 * 3350, 1e-12);
    assert_rel_close(pp_device_stream_gbs(must_find(db, "a100-sxm4-40gb-mig-3g.20gb")), 690.5,
                     1e-12);
    pp_devices_free(db);
}

static void parser_should_be_strict(void **state)
{
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  composite_ops: [[Sigmoid, 3Mul]]\n",
                      PERFPRED_ERR_DEVICE, "'3Mul' is not an ONNX op type");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  composite_ops: [[Sigmoid]]\n",
                      PERFPRED_ERR_DEVICE, "at least two ops");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  host_dispatch_source: guessed\n",
                      PERFPRED_ERR_DEVICE, "must be estimate, measured or transferred, not 'guessed'");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  fusion: [{ops: [MatMul, Add], max_rank: 3}]\n",
                      PERFPRED_ERR_DEVICE, "max_rank");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  fusion: [{max_input_rank: 3}]\n",
                      PERFPRED_ERR_DEVICE, "needs 'ops'");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  fusion: [{ops: [MatMul, Add], max_input_rank: 0}]\n",
                      PERFPRED_ERR_DEVICE, "max_input_rank");
    expect_text_error(HEAD "hardware: {memory_gb: \"40\"}\n", PERFPRED_ERR_DEVICE, "quoted");
    expect_text_error(HEAD "hardware:\n  memory_bandwidth_gbs: 1,555\n", PERFPRED_ERR_DEVICE,
                      "no thousands separators");
    expect_text_error(HEAD "hardware: {memory_bandwidth_gbs: \"1,555\"}\n", PERFPRED_ERR_DEVICE,
                      "memory_bandwidth_gbs");
    expect_text_error(HEAD "hardware: {compute_units: 1.5}\n", PERFPRED_ERR_DEVICE,
                      "bad whole number '1.5'");
    expect_text_error(HEAD "hardware: {clock_mhz: 0x10}\n", PERFPRED_ERR_DEVICE, "bad number");
    expect_text_error(HEAD "hardware: {clock_mhz: nan}\n", PERFPRED_ERR_DEVICE, "bad number");
    expect_text_error(HEAD "hardware: {clock_ghz: 1.4}\n", PERFPRED_ERR_DEVICE,
                      "this schema writes it as 'clock_mhz'");
    expect_text_error(HEAD "hardware: {memory_bandwidth: 900}\n", PERFPRED_ERR_DEVICE,
                      "wrong unit");
    expect_text_error(HEAD "hardware: {peak_tflops: {fp64: 9.7}}\n", PERFPRED_ERR_DEVICE,
                      "unknown key 'fp64'");
    expect_text_error(HEAD "vendor: again\n", PERFPRED_ERR_DEVICE, "duplicate key 'vendor'");
    expect_text_error(HEAD "hostable: yes\n", PERFPRED_ERR_DEVICE, "true or false");
    expect_text_error(HEAD "hostable: true\n", PERFPRED_ERR_DEVICE, "only valid on kind cpu");
    expect_text_error("name: A100\ndescription: t\n", PERFPRED_ERR_DEVICE, "lowercase");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: tpu\n", PERFPRED_ERR_DEVICE,
                      "kind must be");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\n"
                      "runtime: {framework: pytorch, precision: fp32}\n",
                      PERFPRED_ERR_DEVICE, "unknown runtime.framework 'pytorch'");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\n"
                      "runtime: {framework: tflite}\n",
                      PERFPRED_ERR_DEVICE, "missing required field 'runtime.precision'");
    expect_text_error(HEAD "runtime2: {}\n", PERFPRED_ERR_DEVICE, "unknown key 'runtime2'");
    expect_text_error("description: no name\n", PERFPRED_ERR_DEVICE, "field 'name'");
    expect_text_error("# only a comment\n", PERFPRED_ERR_DEVICE, "no device descriptor");
    expect_text_error(HEAD "artifacts: ../outside\n", PERFPRED_ERR_DEVICE, "relative directory");
    expect_text_error(HEAD "base: t\n", PERFPRED_ERR_DEVICE, "t -> t");
    expect_text_error("name: t\n description: broken indentation\n", PERFPRED_ERR_PARSE, ":2:");
}

static void mig_tables_should_be_checked(void **state)
{
#define GPU HEAD "hardware: {memory_gb: 40, memory_bandwidth_gbs: 1555, compute_units: 108}\n"
    expect_text_error(GPU "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                          "[{name: 3g.20gb, compute_slices: 2, memory_slices: 4, compute_units: 28}]}\n",
                      PERFPRED_ERR_DEVICE, "names 3 compute slices");
    expect_text_error(GPU "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                          "[{name: 8g.50gb, compute_slices: 8, memory_slices: 8, compute_units: 98}]}\n",
                      PERFPRED_ERR_DEVICE, "more than the GPU has");
    expect_text_error(GPU "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                          "[{name: 1g.5gb, compute_slices: 1, memory_slices: 1, compute_units: 200}]}\n",
                      PERFPRED_ERR_DEVICE, "more than the 108");
    expect_text_error(GPU "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                          "[{name: 1g.5gb, compute_slices: 1, memory_slices: 1}]}\n",
                      PERFPRED_ERR_DEVICE, "missing required field 'compute_units'");
    expect_text_error(GPU "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                          "[{name: 1g.5gb, compute_slices: 1, memory_slices: 1, compute_units: 14},"
                          " {name: 1g.5gb, compute_slices: 1, memory_slices: 1, compute_units: 14}]}\n",
                      PERFPRED_ERR_DEVICE, "duplicate MIG profile");
    expect_text_error(GPU "aliases: [t-mig-1g]\n"
                          "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                          "[{name: 1g.5gb, compute_slices: 1, memory_slices: 1, compute_units: 14}]}\n",
                      PERFPRED_ERR_DEVICE, "duplicate device name or alias 't-mig-1g'");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: cpu\n"
                      "runtime: {framework: pytorch-eager, precision: fp32}\n"
                      "hardware: {memory_gb: 4, memory_bandwidth_gbs: 10, compute_units: 4}\n"
                      "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                      "[{name: 1g.5gb, compute_slices: 1, memory_slices: 1, compute_units: 1}]}\n",
                      PERFPRED_ERR_DEVICE, "only valid on kind gpu");
#undef GPU
}

/* A figure beyond any device (1e308) used to load and turn predictions into inf and NaN; each
 * numeric figure now has a physical range, named in the error with its place. */
static void figures_should_be_within_their_physical_range(void **state)
{
    expect_text_error(HEAD "hardware: {memory_gb: 1e308}\n", PERFPRED_ERR_DEVICE,
                      "memory_gb = 1e308 is outside its physical range [0, 100000] GB");
    expect_text_error(HEAD "hardware:\n  peak_tflops: {fp32: 1e308}\n", PERFPRED_ERR_DEVICE,
                      ":7:23: peak_tflops.fp32 = 1e308 is outside its physical range");
    expect_text_error(HEAD "hardware: {memory_bandwidth_gbs: 2e6}\n", PERFPRED_ERR_DEVICE,
                      "[0, 1e+06] GB/s");
    expect_text_error(HEAD "hardware: {clock_mhz: 1e6}\n", PERFPRED_ERR_DEVICE, "clock_mhz");
    expect_text_error(HEAD "hardware: {l2_mb: 1e9}\n", PERFPRED_ERR_DEVICE, "l2_mb");
    expect_text_error(HEAD "hardware: {idle_power_w: 1e6}\n", PERFPRED_ERR_DEVICE, "idle_power_w");
    expect_text_error(HEAD "hardware: {max_power_w: 1e6}\n", PERFPRED_ERR_DEVICE, "max_power_w");
    expect_text_error(HEAD "hardware: {memory_type: hbm9}\n", PERFPRED_ERR_DEVICE,
                      "unknown hardware.memory_type 'hbm9'");
    expect_text_error(HEAD "hardware: {memory_type: [hbm2]}\n", PERFPRED_ERR_DEVICE,
                      "memory_type must be a string");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  launch_overhead_us: 1e300\n",
                      PERFPRED_ERR_DEVICE, "launch_overhead_us = 1e300 is outside");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  workspace_mb: 1e300\n",
                      PERFPRED_ERR_DEVICE, "workspace_mb = 1e300");
    expect_text_error("name: t\ndescription: t\nvendor: T\nkind: gpu\nruntime:\n"
                      "  framework: pytorch-eager\n  runtime_memory_overhead_mb: 1e300\n",
                      PERFPRED_ERR_DEVICE, "runtime_memory_overhead_mb = 1e300");
    expect_text_error(HEAD "hardware: {memory_gb: 40, memory_bandwidth_gbs: 1555, "
                           "compute_units: 108}\n"
                           "mig: {total_compute_slices: 7, total_memory_slices: 8, profiles: "
                           "[{name: 1g.5gb, compute_slices: 1, memory_slices: 1, "
                           "compute_units: 14, memory_gb: 1e308}]}\n",
                      PERFPRED_ERR_DEVICE, "memory_gb = 1e308 is outside");
    expect_text_error(HEAD "hardware: {memory_gb: 1e400}\n", PERFPRED_ERR_DEVICE, "bad number");
}

/* 20,000 MIG profiles took 3.6 s in a pairwise duplicate check; with a sort it is milliseconds.
 * The test checks the answer (the duplicate found is the later one, naming the first's line) on
 * a table big enough that a quadratic check would take seconds under the sanitizers. */
static void mig_duplicate_check_should_find_the_first_repeat_in_a_long_table(void **state)
{
    enum { N = 20000 };
    size_t cap = (size_t)N * 100 + 4096;
    char *text = malloc(cap);
    assert_non_null(text);
    int off = snprintf(text, cap, "%s",
                       HEAD "hardware: {memory_gb: 40, memory_bandwidth_gbs: 1555, "
                            "compute_units: 108}\n"
                            "mig:\n  total_compute_slices: 7\n  total_memory_slices: 8\n"
                            "  profiles:\n");
    int first_line = 11; /* the line of profile 0 */
    for (int i = 0; i < N; i++) {
        int n = i == N - 2 ? 17 : i == N - 1 ? 5 : i; /* the repeats come last */
        off += snprintf(text + off, cap - (size_t)off,
                        "  - {name: 1g.%dgb, compute_slices: 1, memory_slices: 1, "
                        "compute_units: 14}\n", n);
    }
    char want[128];
    snprintf(want, sizeof want, "duplicate MIG profile '1g.17gb' (first at line %d)",
             first_line + 17);
    expect_text_error(text, PERFPRED_ERR_DEVICE, want);
    free(text);
}

static void load_should_report_missing_paths(void **state)
{
    pp_device_db *db = NULL;
    pp_err err = {0};
    assert_int_equal(pp_devices_load_dir("/nonexistent/perfpred-devices", &db, &err),
                     PERFPRED_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/perfpred-devices"));
    assert_null(db);
    const char *paths[] = {"/nonexistent/x.yaml"};
    assert_int_equal(pp_devices_load_files(paths, 1, &db, &err), PERFPRED_ERR_IO);
    assert_null(db);
    pp_devices_free(NULL);
    assert_int_equal(pp_devices_count(NULL), 0);
}

/* ------------------------------------------------------------- round trip ---- */

static void assert_same_device(const pp_device *a, const pp_device *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->description, b->description);
    assert_string_equal(a->vendor, b->vendor);
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->n_aliases, b->n_aliases);
    for (int i = 0; i < a->n_aliases; i++) assert_string_equal(a->aliases[i], b->aliases[i]);
    for (int p = 0; p < PP_PREC__COUNT; p++)
        assert_true(a->peak_tflops[p] == b->peak_tflops[p]);   /* bit-exact through the text */
    assert_true(a->peak_fp16_acc16_tflops == b->peak_fp16_acc16_tflops);
    assert_true(a->stream_bandwidth_gbs == b->stream_bandwidth_gbs);
    assert_true(a->memory_bandwidth_gbs == b->memory_bandwidth_gbs);
    assert_true(a->memory_gb == b->memory_gb);
    assert_int_equal(a->compute_units, b->compute_units);
    assert_true(a->clock_mhz == b->clock_mhz);
    assert_true(a->l2_mb == b->l2_mb);
    assert_true(a->idle_power_w == b->idle_power_w);
    assert_true(a->max_power_w == b->max_power_w);
    assert_int_equal(a->is_mig, b->is_mig);
    assert_int_equal(a->mig_compute_slices, b->mig_compute_slices);
    assert_int_equal(a->mig_memory_slices, b->mig_memory_slices);
    assert_int_equal(a->mig_total_compute, b->mig_total_compute);
    assert_int_equal(a->mig_total_memory, b->mig_total_memory);
    if (a->mig_profile) assert_string_equal(a->mig_profile, b->mig_profile);
    else assert_null(b->mig_profile);
    assert_string_equal(a->runtime_framework, b->runtime_framework);
    assert_int_equal(a->runtime_precision, b->runtime_precision);
    assert_true(a->launch_overhead_us == b->launch_overhead_us);
    assert_true(a->runtime_memory_overhead_mb == b->runtime_memory_overhead_mb);
    assert_true(a->workspace_mb == b->workspace_mb);
    assert_int_equal(a->n_fusion, b->n_fusion);
    for (int r = 0; r < a->n_fusion; r++) {
        assert_int_equal(a->fusion[r].len, b->fusion[r].len);
        assert_int_equal(a->fusion[r].max_input_rank, b->fusion[r].max_input_rank);
        for (int k = 0; k < a->fusion[r].len; k++)
            assert_string_equal(a->fusion[r].ops[k], b->fusion[r].ops[k]);
    }
    assert_int_equal(a->n_composite, b->n_composite);
    for (int r = 0; r < a->n_composite; r++) {
        assert_int_equal(a->composite[r].len, b->composite[r].len);
        for (int k = 0; k < a->composite[r].len; k++)
            assert_string_equal(a->composite[r].ops[k], b->composite[r].ops[k]);
    }
    if (a->artifacts_dir) assert_string_equal(a->artifacts_dir, b->artifacts_dir);
    else assert_null(b->artifacts_dir);
    assert_int_equal(a->hostable, b->hostable);
    assert_int_equal(a->n_mig_profiles, b->n_mig_profiles);
    for (int i = 0; i < a->n_mig_profiles; i++) {
        assert_string_equal(a->mig_profiles[i].name, b->mig_profiles[i].name);
        assert_true(a->mig_profiles[i].memory_gb == b->mig_profiles[i].memory_gb);
        assert_int_equal(a->mig_profiles[i].compute_units, b->mig_profiles[i].compute_units);
    }
}

static void to_yaml_should_round_trip_every_device(void **state)
{
    pp_device_db *db = load_shipped();
    for (int i = 0; i < pp_devices_count(db); i++) {
        const pp_device *d = pp_devices_at(db, i);
        char *text = pp_device_to_yaml(d);
        assert_non_null(text);
        const char *tmp = pp_test_tmpfile(text, strlen(text), ".yaml");
        assert_non_null(tmp);
        char path[4096];
        snprintf(path, sizeof path, "%s", tmp);
        const char *paths[] = {path};
        pp_device_db *back = NULL;
        pp_err err = {0};
        perfpred_status st = pp_devices_load_files(paths, 1, &back, &err);
        unlink(path);
        if (st) print_error("%s: reload failed: %s\n--\n%s\n", d->name, err.msg, text);
        assert_int_equal(st, PERFPRED_OK);
        const pp_device *e = must_find(back, d->name);
        assert_same_device(d, e);
        if (d->is_mig) {
            /* the slice names its parent; alone in the file, the parent is not linked */
            char want[256];
            snprintf(want, sizeof want, "parent: %s\n", d->parent->name);
            assert_non_null(strstr(text, want));
            assert_string_equal(e->base, d->parent->name);
            assert_null(e->parent);
        }
        /* a MIG parent's dump brings back all its slices with the same figures */
        for (int k = 0; k < d->n_mig_profiles; k++) {
            char slice[256];
            snprintf(slice, sizeof slice, "%s-mig-%s", d->name, d->mig_profiles[k].name);
            const pp_device *s0 = must_find(db, slice), *s1 = must_find(back, slice);
            assert_ptr_equal(s1->parent, e);
            assert_same_device(s0, s1);
        }
        if (d->base && !d->is_mig) assert_non_null(strstr(text, d->base));
        pp_devices_free(back);
        free(text);
    }
    assert_null(pp_device_to_yaml(NULL));
    pp_devices_free(db);
}

/* ---------------------------------------------------------------- misc ---- */

static void default_config_dir_should_prefer_the_environment(void **state)
{
    const char *old = getenv("PERFPRED_CONFIG_DIR");
    char saved[4096] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("PERFPRED_CONFIG_DIR", "/tmp/perfpred-configs-test", 1);
    assert_string_equal(pp_default_config_dir(), "/tmp/perfpred-configs-test");
    unsetenv("PERFPRED_CONFIG_DIR");
    /* the source tree's configs/ exists in a build tree, so it wins over the install dir */
    char want[4096];
    snprintf(want, sizeof want, "%s/configs", PP_SOURCE_DIR);
    assert_string_equal(pp_default_config_dir(), want);
    if (old) setenv("PERFPRED_CONFIG_DIR", saved, 1);
}

/* A user's descriptors named by $PERFPRED_DEVICES join the shipped set: a file and a folder,
 * one taking a shipped descriptor as its base; a missing entry and a taken name are errors. */
static void user_descriptors_should_join_the_shipped_set(void **state)
{
    (void)state;
    char dir[] = "/tmp/pp_user_devices_XXXXXX", file[256], sub[256], inner[300], env[600];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/oldhost.yaml", dir);
    pp_test_write_text(file, "name: a100-oldhost\n"
                             "description: A100 SXM4 80GB in an older host\n"
                             "base: a100-sxm4-80gb\n"
                             "runtime:\n"
                             "  host_dispatch_scale: 1.0\n");
    snprintf(sub, sizeof sub, "%s/more", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(inner, sizeof inner, "%s/board.yaml", sub);
    pp_test_write_text(inner, "name: my-board\n"
                              "description: a board of my own\n"
                              "base: rpi4\n");
    const char *old = getenv("PERFPRED_DEVICES");
    char saved[4096] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    snprintf(env, sizeof env, "%s:%s", file, sub);
    setenv("PERFPRED_DEVICES", env, 1);
    pp_device_db *db = NULL, *shipped = load_shipped();
    pp_err err = {0};
    perfpred_status st = pp_devices_load_config(pp_test_path("configs/devices"), &db, &err);
    if (st) print_error("%s\n", err.msg);
    assert_int_equal(st, PERFPRED_OK);
    assert_int_equal(pp_devices_count(db), pp_devices_count(shipped) + 2);
    const pp_device *u = must_find(db, "a100-oldhost"), *b = must_find(db, "a100-sxm4-80gb");
    assert_true(u->host_dispatch_scale == 1.0);
    assert_true(b->host_dispatch_scale == 0.40); /* configs/devices/a100.yaml */
    /* the A100 80GB datasheet's 19.5 TFLOP/s fp32 and 2,039 GB/s, inherited */
    assert_true(fabs(u->peak_tflops[PP_PREC_FP32] - 19.5) < 1e-9);
    assert_true(fabs(u->memory_bandwidth_gbs - 2039) < 1e-9);
    must_find(db, "my-board");
    pp_devices_free(db);
    /* an entry that is not there */
    snprintf(env, sizeof env, "%s:%s/nope.yaml", file, dir);
    setenv("PERFPRED_DEVICES", env, 1);
    assert_int_equal(pp_devices_load_config(pp_test_path("configs/devices"), &db, &err),
                     PERFPRED_ERR_IO);
    assert_non_null(strstr(err.msg, "nope.yaml"));
    assert_null(db);
    /* a name the shipped set already has, reported at the user's file */
    pp_test_write_text(inner, "name: rpi4\n"
                              "description: a second rpi4\n"
                              "base: rpi5\n");
    setenv("PERFPRED_DEVICES", sub, 1);
    assert_int_not_equal(pp_devices_load_config(pp_test_path("configs/devices"), &db, &err),
                         PERFPRED_OK);
    assert_non_null(strstr(err.msg, "duplicate"));
    assert_non_null(strstr(err.msg, "board.yaml"));
    assert_null(db);
    /* unset: the shipped set alone */
    unsetenv("PERFPRED_DEVICES");
    assert_int_equal(pp_devices_load_config(pp_test_path("configs/devices"), &db, &err),
                     PERFPRED_OK);
    assert_int_equal(pp_devices_count(db), pp_devices_count(shipped));
    pp_devices_free(db);
    pp_devices_free(shipped);
    if (old) setenv("PERFPRED_DEVICES", saved, 1);
    unlink(inner);
    rmdir(sub);
    unlink(file);
    rmdir(dir);
}

static void names_should_map_both_ways(void **state)
{
    assert_int_equal(pp_precision_from_name("bf16"), PP_PREC_BF16);
    assert_int_equal(pp_precision_from_name("fp64"), -1);
    assert_int_equal(pp_precision_from_name(NULL), -1);
    assert_string_equal(pp_precision_name(PP_PREC_INT8), "int8");
    assert_string_equal(pp_device_kind_name(PP_DEV_EDGE_GPU), "edge-gpu");
    assert_string_equal(pp_device_kind_name((pp_device_kind)99), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(load_dir_should_load_every_shipped_descriptor),
        cmocka_unit_test(shipped_figures_should_match_the_datasheets),
        cmocka_unit_test(find_should_resolve_short_and_mig_names),
        cmocka_unit_test(mig_slices_should_follow_the_guide_table),
        cmocka_unit_test(mig_slices_should_be_monotone_in_g_and_m),
        cmocka_unit_test(inheritance_should_override_only_written_fields),
        cmocka_unit_test(mig_memory_should_follow_m_when_the_profile_states_none),
        cmocka_unit_test(errors_should_name_file_line_and_column),
        cmocka_unit_test(fp16_accumulate_rates_should_be_the_whitepapers_and_not_leak_to_children),
        cmocka_unit_test(jetson_tensor_rates_should_follow_their_sms_and_clocks),
        cmocka_unit_test(stream_bandwidth_should_be_measured_or_a_share_of_the_datasheet),
        cmocka_unit_test(parser_should_be_strict),
        cmocka_unit_test(mig_tables_should_be_checked),
        cmocka_unit_test(figures_should_be_within_their_physical_range),
        cmocka_unit_test(mig_duplicate_check_should_find_the_first_repeat_in_a_long_table),
        cmocka_unit_test(load_should_report_missing_paths),
        cmocka_unit_test(to_yaml_should_round_trip_every_device),
        cmocka_unit_test(default_config_dir_should_prefer_the_environment),
        cmocka_unit_test(names_should_map_both_ways),
        cmocka_unit_test(user_descriptors_should_join_the_shipped_set),
        cmocka_unit_test(host_dispatch_source_should_be_stated_and_inherited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
