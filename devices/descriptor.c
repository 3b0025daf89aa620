/* devices/descriptor.c: reads device descriptor YAML (libyaml's document API) into pp_dev_src
 * records. Strict: unknown keys (with a hint when only the unit differs), quoted or malformed
 * numbers, negative figures, duplicate keys and bad names are errors at file:line:col. The libyaml
 * tree is freed after each document; only copies in the caller's arena are kept. */
#include "devices/devices_internal.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ------------------------------------------------------------------ names ---- */

static const char *const kind_names[] = {"gpu", "edge-gpu", "cpu", "phone", "accel"};
static const char *const prec_names[PP_PREC__COUNT] = {"fp32", "tf32", "fp16", "bf16", "int8"};

/* Runtime stacks a descriptor may name (documented in configs/devices/README.md). */
static const char *const frameworks[] = {
    "pytorch-eager", "pytorch-compile", "pytorch-mobile", "pytorch-mobile-gpu", "tflite",
    "tflite-gpu",    "onnxruntime",     "tensorrt",       "tensorflow",         "openvino",
    "deepbench",     NULL};

const char *pp_device_kind_name(pp_device_kind k)
{
    return (unsigned)k < sizeof kind_names / sizeof kind_names[0] ? kind_names[k] : "unknown";
}

const char *pp_precision_name(pp_precision p)
{
    return (unsigned)p < PP_PREC__COUNT ? prec_names[p] : "unknown";
}

pp_memory_family pp_memory_family_of(const char *t)
{
    static const char *const types[] = {"hbm2",  "hbm2e",  "hbm3",    "hbm3e",  "gddr5",
                                        "gddr5x", "gddr6", "gddr6x",  "gddr7",  "lpddr4",
                                        "lpddr4x", "lpddr5", "lpddr5x", "ddr4", "ddr5", NULL};
    static const pp_memory_family fam[] = {
        PP_MEMFAM_HBM,   PP_MEMFAM_HBM,   PP_MEMFAM_HBM,   PP_MEMFAM_HBM,   PP_MEMFAM_GDDR,
        PP_MEMFAM_GDDR,  PP_MEMFAM_GDDR,  PP_MEMFAM_GDDR,  PP_MEMFAM_GDDR,  PP_MEMFAM_LPDDR,
        PP_MEMFAM_LPDDR, PP_MEMFAM_LPDDR, PP_MEMFAM_LPDDR, PP_MEMFAM_DDR,   PP_MEMFAM_DDR};
    for (int i = 0; t && types[i]; i++)
        if (strcmp(t, types[i]) == 0) return fam[i];
    return PP_MEMFAM_UNKNOWN;
}

const char *pp_memory_family_name(pp_memory_family f)
{
    static const char *const n[] = {"unknown", "hbm", "gddr", "lpddr", "ddr"};
    return (unsigned)f < 5 ? n[f] : "unknown";
}

int pp_precision_from_name(const char *s)
{
    for (int i = 0; s && i < PP_PREC__COUNT; i++)
        if (strcmp(s, prec_names[i]) == 0) return i;
    return -1;
}

static int kind_from_name(const char *s)
{
    for (int i = 0; i < (int)(sizeof kind_names / sizeof kind_names[0]); i++)
        if (strcmp(s, kind_names[i]) == 0) return i;
    return -1;
}

int pp_dev_valid_name(const char *s)
{
    if (!s || !*s || strlen(s) > 120) return 0;
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))) return 0;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
              ch == '-' || ch == '+'))
            return 0;
    }
    return 1;
}

perfpred_status pp_dev_err_at(pp_err *err, perfpred_status st, pp_dev_pos at, const char *fmt, ...)
{
    char msg[PP_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pp_err_set(err, st, "%s:%d:%d: %s", at.file ? at.file : "?", at.line, at.col, msg);
}

/* ------------------------------------------------------------ YAML helpers ---- */

typedef struct pctx {
    const char *file;      /* arena copy */
    yaml_document_t *doc;
    pp_arena *a;
    pp_err *err;
} pctx;

static pp_dev_pos pos_of(const pctx *c, const yaml_node_t *n)
{
    pp_dev_pos p = {c->file, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
    return p;
}

static yaml_node_t *node_at(const pctx *c, int id) { return yaml_document_get_node(c->doc, id); }

static const char *scalar(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

#define FAIL(c, n, ...) pp_dev_err_at((c)->err, PERFPRED_ERR_DEVICE, pos_of((c), (n)), __VA_ARGS__)
#define NOMEM(c) pp_err_set((c)->err, PERFPRED_ERR_NOMEM, "%s: out of memory", (c)->file)

static perfpred_status get_string(pctx *c, yaml_node_t *v, const char *what, const char **out)
{
    if (v->type != YAML_SCALAR_NODE) return FAIL(c, v, "%s must be a string", what);
    if (v->data.scalar.length == 0) return FAIL(c, v, "%s must not be empty", what);
    if (strlen(scalar(v)) != v->data.scalar.length)
        return FAIL(c, v, "%s contains a NUL character", what);
    *out = pp_arena_strdup(c->a, scalar(v));
    return *out ? PERFPRED_OK : NOMEM(c);
}

static perfpred_status get_name(pctx *c, yaml_node_t *v, const char *what, const char **out)
{
    perfpred_status st = get_string(c, v, what, out);
    if (st) return st;
    if (!pp_dev_valid_name(*out))
        return FAIL(c, v,
                    "%s '%s': use lowercase letters, digits, '.', '_', '-', '+' (starting with a "
                    "letter or digit)",
                    what, *out);
    return PERFPRED_OK;
}

/* The physical range of each numeric figure, keyed by its key (peak_tflops.<precision> by
 * "peak_tflops"), so that a figure far outside what any device has (memory_gb: 1e308) is an error
 * here rather than an infinity or NaN in a prediction. Bounds are generous: about 100 times the
 * largest device of today. A new numeric key needs one entry; a key without one falls back to the
 * entry of its unit suffix ("*_us" ...), and a key with neither is refused (PERFPRED_ERR_INTERNAL)
 * so that no figure goes unbounded. */
typedef struct figure_range {
    const char *key;
    double lo, hi;
    const char *unit;
} figure_range;

static const figure_range figure_ranges[] = {
    {"peak_tflops", 0, 1e5, "TFLOP/s"},
    {"memory_bandwidth_gbs", 0, 1e6, "GB/s"},
    {"stream_bandwidth_gbs", 0, 1e6, "GB/s"},
    {"memory_gb", 0, 1e5, "GB"},
    {"clock_mhz", 0, 1e5, "MHz"},
    {"l2_mb", 0, 1e6, "MB"},
    {"idle_power_w", 0, 1e5, "W"},
    {"max_power_w", 0, 1e5, "W"},
    {"launch_overhead_us", 0, 1e6, "us"},
    {"gemm_gflops", 0, 1e8, "GFLOP/s"},
    {"conv_call_us", 0, 1e5, "us"},
    {"runtime_memory_overhead_mb", 0, 1e7, "MB"},
    {"workspace_mb", 0, 1e7, "MB"},
    {"compute_capability", 1, 20, "(CUDA compute capability)"},
    {"host_dispatch_scale", 0.05, 50, "x the fitted stacks' hosts"},
    /* by unit suffix, for a key without an entry of its own */
    {"*_tflops", 0, 1e5, "TFLOP/s"},
    {"*_gbs", 0, 1e6, "GB/s"},
    {"*_gb", 0, 1e5, "GB"},
    {"*_mb", 0, 1e7, "MB"},
    {"*_mhz", 0, 1e5, "MHz"},
    {"*_w", 0, 1e5, "W"},
    {"*_us", 0, 1e7, "us"},
    {"*_ms", 0, 1e4, "ms"},
};

static const figure_range *range_of(const char *what)
{
    size_t n = strcspn(what, "."); /* "peak_tflops.fp32" -> "peak_tflops" */
    const size_t nr = sizeof figure_ranges / sizeof figure_ranges[0];
    for (size_t i = 0; i < nr; i++)
        if (figure_ranges[i].key[0] != '*' && strlen(figure_ranges[i].key) == n &&
            strncmp(what, figure_ranges[i].key, n) == 0)
            return &figure_ranges[i];
    for (size_t i = 0; i < nr; i++) {
        const char *suf = figure_ranges[i].key + 1;
        size_t sl = strlen(suf);
        if (figure_ranges[i].key[0] == '*' && n > sl && strncmp(what + n - sl, suf, sl) == 0)
            return &figure_ranges[i];
    }
    return NULL;
}

static perfpred_status check_range(pctx *c, yaml_node_t *v, const char *what, double x)
{
    const figure_range *r = range_of(what);
    if (!r)
        return pp_dev_err_at(c->err, PERFPRED_ERR_INTERNAL, pos_of(c, v),
                             "%s has no physical range (add one to figure_ranges in "
                             "devices/descriptor.c)",
                             what);
    if (!(x >= r->lo && x <= r->hi))
        return FAIL(c, v, "%s = %s is outside its physical range [%g, %g] %s", what, scalar(v),
                    r->lo, r->hi, r->unit);
    return PERFPRED_OK;
}

/* A number must be a plain YAML scalar made of digits, sign, point and exponent only. */
static perfpred_status get_double(pctx *c, yaml_node_t *v, const char *what, double *out)
{
    if (v->type != YAML_SCALAR_NODE) return FAIL(c, v, "%s must be a number", what);
    const char *s = scalar(v);
    if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return FAIL(c, v, "%s must be a plain number, not the quoted string \"%s\"", what, s);
    int chars_ok = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789.eE+-", *p)) chars_ok = 0;
    if (!chars_ok || pp_parse_double(s, out) != 0) {
        const char *hint = "";
        if (strchr(s, ',')) hint = " (no thousands separators)";
        else if ((*s >= '0' && *s <= '9') || *s == '.')
            hint = " (write a plain number: the unit is in the key name)";
        return FAIL(c, v, "bad number '%s' for %s%s", s, what, hint);
    }
    if (*out < 0) return FAIL(c, v, "negative value %s for %s", s, what);
    return check_range(c, v, what, *out);
}

static perfpred_status get_int(pctx *c, yaml_node_t *v, const char *what, int min, int *out)
{
    if (v->type != YAML_SCALAR_NODE) return FAIL(c, v, "%s must be a whole number", what);
    const char *s = scalar(v);
    int64_t x;
    if (v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || pp_parse_i64(s, &x) != 0)
        return FAIL(c, v, "bad whole number '%s' for %s", s, what);
    if (x < min || x > INT_MAX) return FAIL(c, v, "%s = %s is out of range (>= %d)", what, s, min);
    *out = (int)x;
    return PERFPRED_OK;
}

static perfpred_status get_bool(pctx *c, yaml_node_t *v, const char *what, int *out)
{
    if (v->type == YAML_SCALAR_NODE && v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        if (strcmp(scalar(v), "true") == 0) return *out = 1, PERFPRED_OK;
        if (strcmp(scalar(v), "false") == 0) return *out = 0, PERFPRED_OK;
    }
    return FAIL(c, v, "%s must be true or false", what);
}

/* Unit suffixes of this schema's key names; an unknown key that differs from a known one only in
 * its unit (or lacks it) gets a "wrong unit" message instead of a bare "unknown key". */
static const char *const unit_suffixes[] = {"gbs", "gb", "mb", "mhz", "w", "us", "tflops", NULL};

static size_t stem_len(const char *k)
{
    const char *u = strrchr(k, '_');
    return u ? (size_t)(u - k) : strlen(k);
}

static int has_unit_suffix(const char *k)
{
    const char *u = strrchr(k, '_');
    if (!u) return 0;
    for (int i = 0; unit_suffixes[i]; i++)
        if (strcmp(u + 1, unit_suffixes[i]) == 0) return 1;
    return 0;
}

static perfpred_status unknown_key(pctx *c, yaml_node_t *k, const char *section,
                                   const char *const *known)
{
    const char *key = scalar(k);
    for (int i = 0; known[i]; i++) {
        if (!has_unit_suffix(known[i])) continue;
        size_t sl = stem_len(known[i]);
        int same_stem = stem_len(key) == sl && strncmp(key, known[i], sl) == 0;
        int no_unit = strlen(key) == sl && strncmp(key, known[i], sl) == 0;
        if (same_stem || no_unit)
            return FAIL(c, k, "wrong unit in key '%s' of %s: this schema writes it as '%s'", key,
                        section, known[i]);
    }
    char list[512] = "";
    size_t n = 0;
    for (int i = 0; known[i] && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", known[i]);
    return FAIL(c, k, "unknown key '%s' in %s (known: %s)", key, section, list);
}

typedef perfpred_status (*pair_fn)(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v,
                                   void *obj);

/* Visits the pairs of a mapping in order; keys must be scalars and unique. */
static perfpred_status each_pair(pctx *c, yaml_node_t *map, const char *what, pair_fn fn, void *obj)
{
    if (map->type != YAML_MAPPING_NODE) return FAIL(c, map, "%s must be a mapping", what);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
        if (!k || !v) return pp_err_set(c->err, PERFPRED_ERR_INTERNAL, "%s: bad YAML node", c->file);
        if (k->type != YAML_SCALAR_NODE) return FAIL(c, k, "keys of %s must be plain words", what);
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++) {
            yaml_node_t *qk = node_at(c, q->key);
            if (qk->type == YAML_SCALAR_NODE && strcmp(scalar(qk), scalar(k)) == 0)
                return FAIL(c, k, "duplicate key '%s' in %s (first at line %d)", scalar(k), what,
                            (int)qk->start_mark.line + 1);
        }
        perfpred_status st = fn(c, scalar(k), k, v, obj);
        if (st) return st;
    }
    return PERFPRED_OK;
}

static int key_index(const char *key, const char *const *keys)
{
    for (int i = 0; keys[i]; i++)
        if (strcmp(key, keys[i]) == 0) return i;
    return -1;
}

/* ------------------------------------------------------------- sections ---- */

static void mark(pctx *c, pp_dev_src *s, int f, yaml_node_t *k)
{
    s->set[f] = 1;
    s->field_at[f] = pos_of(c, k);
}

/* the precisions (pp_precision's order), then fp16 with fp16 accumulation */
static const char *const peak_keys[] = {"fp32", "tf32", "fp16", "bf16", "int8", "fp16_acc16", NULL};
_Static_assert(sizeof peak_keys / sizeof *peak_keys == PP_PREC__COUNT + 2,
               "peak_keys: one key per precision, then fp16_acc16");

static perfpred_status peak_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    pp_dev_src *s = o;
    int i = key_index(key, peak_keys);
    if (i < 0) return unknown_key(c, k, "hardware.peak_tflops", peak_keys);
    char what[64];
    snprintf(what, sizeof what, "peak_tflops.%s", key);
    int acc16 = i == PP_PREC__COUNT;
    perfpred_status st =
        get_double(c, v, what, acc16 ? &s->d.peak_fp16_acc16_tflops : &s->d.peak_tflops[i]);
    if (!st) mark(c, s, acc16 ? PP_F_FP16ACC16 : PP_F_PEAK + i, k);
    return st;
}

static const char *const hw_keys[] = {"peak_tflops", "memory_bandwidth_gbs", "memory_gb",
                                      "compute_units", "clock_mhz", "l2_mb", "idle_power_w",
                                      "max_power_w", "compute_capability", "memory_type",
                                      "stream_bandwidth_gbs", NULL};

static perfpred_status hw_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    pp_dev_src *s = o;
    pp_device *d = &s->d;
    perfpred_status st = PERFPRED_OK;
    switch (key_index(key, hw_keys)) {
    case 0: return each_pair(c, v, "hardware.peak_tflops", peak_pair, s);
    case 1: st = get_double(c, v, key, &d->memory_bandwidth_gbs), mark(c, s, PP_F_BW, k); break;
    case 2: st = get_double(c, v, key, &d->memory_gb), mark(c, s, PP_F_MEM, k); break;
    case 3: st = get_int(c, v, key, 0, &d->compute_units), mark(c, s, PP_F_CU, k); break;
    case 4: st = get_double(c, v, key, &d->clock_mhz), mark(c, s, PP_F_CLOCK, k); break;
    case 5: st = get_double(c, v, key, &d->l2_mb), mark(c, s, PP_F_L2, k); break;
    case 6: st = get_double(c, v, key, &d->idle_power_w), mark(c, s, PP_F_IDLE, k); break;
    case 7: st = get_double(c, v, key, &d->max_power_w), mark(c, s, PP_F_MAXP, k); break;
    case 8:
        st = get_double(c, v, key, &d->compute_capability), mark(c, s, PP_F_CC, k);
        break;
    case 9: {
        const char *t;
        if ((st = get_string(c, v, "hardware.memory_type", &t))) return st;
        if (pp_memory_family_of(t) == PP_MEMFAM_UNKNOWN)
            return FAIL(c, v,
                        "unknown hardware.memory_type '%s' (known: hbm2, hbm2e, hbm3, hbm3e, "
                        "gddr5, gddr5x, gddr6, gddr6x, gddr7, lpddr4, lpddr4x, lpddr5, lpddr5x, "
                        "ddr4, ddr5)",
                        t);
        d->memory_type = t;
        mark(c, s, PP_F_MEMTYPE, k);
        break;
    }
    case 10:
        st = get_double(c, v, key, &d->stream_bandwidth_gbs), mark(c, s, PP_F_STREAM, k);
        break;
    default: return unknown_key(c, k, "hardware", hw_keys);
    }
    return st;
}

/* An ONNX op type: a letter followed by letters and digits. */
static int valid_op(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))) return 0;
    for (; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* The op types of one rule: a YAML list of ONNX op types. */
static perfpred_status get_rule_ops(pctx *c, yaml_node_t *r, pp_fusion_rule *rule)
{
    if (r->type != YAML_SEQUENCE_NODE)
        return FAIL(c, r, "a fusion rule must be a list of ONNX op types, e.g. [Conv, Relu]");
    rule->len = 0;
    for (yaml_node_item_t *o = r->data.sequence.items.start; o < r->data.sequence.items.top; o++) {
        yaml_node_t *op = node_at(c, *o);
        if (rule->len >= PP_DEV_MAX_FUSION_LEN)
            return FAIL(c, op, "a fusion rule has at most %d ops", PP_DEV_MAX_FUSION_LEN);
        const char *name;
        perfpred_status st = get_string(c, op, "fusion op", &name);
        if (st) return st;
        if (!valid_op(name)) return FAIL(c, op, "'%s' is not an ONNX op type", name);
        rule->ops[rule->len++] = name;
    }
    if (rule->len < 2) return FAIL(c, r, "a fusion rule needs at least two ops");
    return PERFPRED_OK;
}

static const char *const rule_keys[] = {"ops", "max_input_rank", NULL};

static perfpred_status rule_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    pp_fusion_rule *rule = o;
    switch (key_index(key, rule_keys)) {
    case 0: return get_rule_ops(c, v, rule);
    case 1: return get_int(c, v, "max_input_rank", 1, &rule->max_input_rank);
    default: return unknown_key(c, k, "a fusion rule", rule_keys);
    }
}

/* A list of rules, each a list of op types ([Conv, Relu]) or a mapping with the list and a
 * condition ({ops: [MatMul, Add], max_input_rank: 3}). */
static perfpred_status get_rules(pctx *c, yaml_node_t *v, const char *key, pp_fusion_rule *rules,
                                 int *n_rules)
{
    if (v->type != YAML_SEQUENCE_NODE)
        return FAIL(c, v, "runtime.%s must be a list of op-type lists, e.g. [[Conv, Relu]]", key);
    *n_rules = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *r = node_at(c, *it);
        if (*n_rules >= PP_DEV_MAX_FUSION)
            return FAIL(c, r, "more than %d %s rules", PP_DEV_MAX_FUSION, key);
        pp_fusion_rule *rule = &rules[*n_rules];
        memset(rule, 0, sizeof *rule);
        perfpred_status st;
        if (r->type == YAML_MAPPING_NODE) {
            if ((st = each_pair(c, r, "a fusion rule", rule_pair, rule))) return st;
            if (rule->len == 0) return FAIL(c, r, "a fusion rule mapping needs 'ops'");
        } else if ((st = get_rule_ops(c, r, rule))) {
            return st;
        }
        (*n_rules)++;
    }
    return PERFPRED_OK;
}

static const char *const rt_keys[] = {"framework", "precision", "launch_overhead_us",
                                      "runtime_memory_overhead_mb", "workspace_mb", "fusion",
                                      "composite_ops", "host_dispatch_scale",
                                      "host_dispatch_source", "gemm_gflops", "conv_call_us",
                                      NULL};

static const char *const host_sources[] = {"estimate", "measured", "transferred", NULL};

const char *pp_host_source_name(int source)
{
    return source >= 0 && source <= PP_HOST_TRANSFERRED ? host_sources[source] : "estimate";
}

static perfpred_status rt_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    pp_dev_src *s = o;
    pp_device *d = &s->d;
    perfpred_status st = PERFPRED_OK;
    switch (key_index(key, rt_keys)) {
    case 0: {
        const char *fw;
        if ((st = get_string(c, v, "runtime.framework", &fw))) return st;
        int ok = 0;
        for (int i = 0; frameworks[i]; i++) ok |= strcmp(fw, frameworks[i]) == 0;
        if (!ok) {
            char list[400] = "";
            size_t n = 0;
            for (int i = 0; frameworks[i] && n < sizeof list; i++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
                                      frameworks[i]);
            return FAIL(c, v, "unknown runtime.framework '%s' (known: %s)", fw, list);
        }
        d->runtime_framework = fw;
        mark(c, s, PP_F_FRAMEWORK, k);
        break;
    }
    case 1: {
        int p = v->type == YAML_SCALAR_NODE ? pp_precision_from_name(scalar(v)) : -1;
        if (p < 0) return FAIL(c, v, "runtime.precision must be fp32, tf32, fp16, bf16 or int8");
        d->runtime_precision = (pp_precision)p;
        mark(c, s, PP_F_PRECISION, k);
        break;
    }
    case 2: st = get_double(c, v, key, &d->launch_overhead_us), mark(c, s, PP_F_LAUNCH, k); break;
    case 3:
        st = get_double(c, v, key, &d->runtime_memory_overhead_mb), mark(c, s, PP_F_RTMEM, k);
        break;
    case 4: st = get_double(c, v, key, &d->workspace_mb), mark(c, s, PP_F_WORKSPACE, k); break;
    case 5: st = get_rules(c, v, key, d->fusion, &d->n_fusion), mark(c, s, PP_F_FUSION, k); break;
    case 6:
        st = get_rules(c, v, key, d->composite, &d->n_composite), mark(c, s, PP_F_COMPOSITE, k);
        break;
    case 7:
        st = get_double(c, v, key, &d->host_dispatch_scale), mark(c, s, PP_F_HOSTSCALE, k);
        break;
    case 8: {
        const char *src;
        if ((st = get_string(c, v, "runtime.host_dispatch_source", &src))) return st;
        int i = key_index(src, host_sources);
        if (i < 0)
            return FAIL(c, v, "runtime.host_dispatch_source must be estimate, measured or "
                              "transferred, not '%s'", src);
        d->host_dispatch_source = i;
        mark(c, s, PP_F_HOSTSRC, k);
        break;
    }
    case 9: st = get_double(c, v, key, &d->gemm_gflops), mark(c, s, PP_F_GEMM, k); break;
    case 10: st = get_double(c, v, key, &d->conv_call_us), mark(c, s, PP_F_CONVCALL, k); break;
    default: return unknown_key(c, k, "runtime", rt_keys);
    }
    return st;
}

/* mig.profiles[i] */
static const char *const prof_keys[] = {"name", "compute_slices", "memory_slices", "memory_gb",
                                        "compute_units", NULL};

typedef struct prof_ctx {
    pp_dev_mig_src *p;
    int have[5];
} prof_ctx;

static perfpred_status prof_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    prof_ctx *pc = o;
    int i = key_index(key, prof_keys);
    perfpred_status st;
    switch (i) {
    case 0: st = get_name(c, v, "profile name", &pc->p->name); break;
    case 1: st = get_int(c, v, "compute_slices", 1, &pc->p->g); break;
    case 2: st = get_int(c, v, "memory_slices", 1, &pc->p->m); break;
    case 3: st = get_double(c, v, "memory_gb", &pc->p->memory_gb); break;
    case 4: st = get_int(c, v, "compute_units", 1, &pc->p->compute_units); break;
    default: return unknown_key(c, k, "a MIG profile", prof_keys);
    }
    if (!st) pc->have[i] = 1;
    return st;
}

static const char *const mig_keys[] = {"total_compute_slices", "total_memory_slices", "profiles",
                                       NULL};

static perfpred_status mig_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    pp_dev_src *s = o;
    switch (key_index(key, mig_keys)) {
    case 0: return get_int(c, v, "mig.total_compute_slices", 1, &s->mig_total_compute);
    case 1: return get_int(c, v, "mig.total_memory_slices", 1, &s->mig_total_memory);
    case 2: break;
    default: return unknown_key(c, k, "mig", mig_keys);
    }
    if (v->type != YAML_SEQUENCE_NODE) return FAIL(c, v, "mig.profiles must be a list");
    int n = (int)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n == 0) return FAIL(c, v, "mig.profiles is empty");
    s->profiles = pp_arena_array(c->a, (size_t)n, sizeof *s->profiles);
    if (!s->profiles) return NOMEM(c);
    s->n_profiles = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *pn = node_at(c, *it);
        prof_ctx pc = {&s->profiles[s->n_profiles], {0}};
        pc.p->at = pos_of(c, pn);
        perfpred_status st = each_pair(c, pn, "a MIG profile", prof_pair, &pc);
        if (st) return st;
        static const int required[] = {0, 1, 2, 4};
        for (int r = 0; r < 4; r++)
            if (!pc.have[required[r]])
                return FAIL(c, pn, "MIG profile is missing required field '%s'",
                            prof_keys[required[r]]);
        s->n_profiles++;
    }
    return PERFPRED_OK;
}

/* mig_instance: one slice as written by pp_device_to_yaml */
static const char *const inst_keys[] = {"parent", "profile", "compute_slices", "memory_slices",
                                        "total_compute_slices", "total_memory_slices", NULL};

typedef struct inst_ctx {
    pp_dev_src *s;
    int have[6];
} inst_ctx;

static perfpred_status inst_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    inst_ctx *ic = o;
    pp_device *d = &ic->s->d;
    int i = key_index(key, inst_keys);
    perfpred_status st;
    switch (i) {
    case 0: st = get_name(c, v, "mig_instance.parent", &ic->s->mig_parent); break;
    case 1: st = get_name(c, v, "mig_instance.profile", &d->mig_profile); break;
    case 2: st = get_int(c, v, key, 1, &d->mig_compute_slices); break;
    case 3: st = get_int(c, v, key, 1, &d->mig_memory_slices); break;
    case 4: st = get_int(c, v, key, 1, &d->mig_total_compute); break;
    case 5: st = get_int(c, v, key, 1, &d->mig_total_memory); break;
    default: return unknown_key(c, k, "mig_instance", inst_keys);
    }
    if (!st) ic->have[i] = 1;
    return st;
}

static perfpred_status get_aliases(pctx *c, yaml_node_t *v, pp_dev_src *s)
{
    if (v->type != YAML_SEQUENCE_NODE) return FAIL(c, v, "aliases must be a list of names");
    s->d.n_aliases = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *an = node_at(c, *it);
        if (s->d.n_aliases >= PP_DEV_MAX_ALIASES)
            return FAIL(c, an, "more than %d aliases", PP_DEV_MAX_ALIASES);
        perfpred_status st = get_name(c, an, "alias", &s->d.aliases[s->d.n_aliases]);
        if (st) return st;
        s->alias_at[s->d.n_aliases++] = pos_of(c, an);
    }
    return PERFPRED_OK;
}

/* An artifacts directory is relative to configs/ and stays inside it. */
static int valid_rel_dir(const char *s)
{
    if (*s == '/' || strstr(s, "\\")) return 0;
    const char *p = s;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.')) return 0;
        p += n;
        if (*p == '/') p++;
    }
    return 1;
}

static const char *const top_keys[] = {"name",     "aliases",   "description", "vendor",
                                       "kind",     "base",      "hardware",    "runtime",
                                       "mig",      "mig_instance", "artifacts", "hostable",
                                       "calibration_from", NULL};

static perfpred_status top_pair(pctx *c, const char *key, yaml_node_t *k, yaml_node_t *v, void *o)
{
    pp_dev_src *s = o;
    pp_device *d = &s->d;
    perfpred_status st = PERFPRED_OK;
    switch (key_index(key, top_keys)) {
    case 0:
        st = get_name(c, v, "name", &d->name);
        s->name_at = pos_of(c, v);
        break;
    case 1: st = get_aliases(c, v, s); break;
    case 2:
        st = get_string(c, v, "description", &d->description);
        s->has_description = 1;
        s->description_at = pos_of(c, v);
        break;
    case 3:
        st = get_string(c, v, "vendor", &d->vendor);
        mark(c, s, PP_F_VENDOR, k);
        break;
    case 4: {
        int kd = v->type == YAML_SCALAR_NODE ? kind_from_name(scalar(v)) : -1;
        if (kd < 0) return FAIL(c, v, "kind must be gpu, edge-gpu, cpu, phone or accel");
        d->kind = (pp_device_kind)kd;
        mark(c, s, PP_F_KIND, k);
        break;
    }
    case 5:
        st = get_name(c, v, "base", &d->base);
        s->base_at = pos_of(c, v);
        break;
    case 6: st = each_pair(c, v, "hardware", hw_pair, s); break;
    case 7: st = each_pair(c, v, "runtime", rt_pair, s); break;
    case 8:
        s->has_mig = 1;
        s->mig_at = pos_of(c, k);
        st = each_pair(c, v, "mig", mig_pair, s);
        if (!st && (!s->mig_total_compute || !s->mig_total_memory || !s->n_profiles))
            return FAIL(c, k,
                        "mig needs total_compute_slices, total_memory_slices and profiles");
        break;
    case 9: {
        inst_ctx ic = {s, {0}};
        s->has_mig_instance = 1;
        s->mig_instance_at = pos_of(c, k);
        if ((st = each_pair(c, v, "mig_instance", inst_pair, &ic))) return st;
        for (int i = 0; inst_keys[i]; i++)
            if (!ic.have[i])
                return FAIL(c, v, "mig_instance is missing required field '%s'", inst_keys[i]);
        if (d->mig_compute_slices > d->mig_total_compute ||
            d->mig_memory_slices > d->mig_total_memory)
            return FAIL(c, v, "mig_instance slices exceed the totals");
        d->is_mig = 1;
        break;
    }
    case 10:
        if ((st = get_string(c, v, "artifacts", &d->artifacts_dir))) return st;
        if (!valid_rel_dir(d->artifacts_dir))
            return FAIL(c, v, "artifacts '%s' must be a relative directory under configs/",
                        d->artifacts_dir);
        break;
    case 11: st = get_bool(c, v, "hostable", &d->hostable); break;
    case 12:
        st = get_name(c, v, "calibration_from", &d->calibration_from);
        s->calibration_from_at = pos_of(c, v);
        break;
    default: return unknown_key(c, k, "a device descriptor", top_keys);
    }
    return st;
}

/* ---------------------------------------------------------------- files ---- */

static perfpred_status push_src(pctx *c, pp_dev_src **srcs, int *n, int *cap, pp_dev_src **out)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 32;
        pp_dev_src *ns = pp_arena_array(c->a, (size_t)nc, sizeof *ns);
        if (!ns) return NOMEM(c);
        if (*n) memcpy(ns, *srcs, (size_t)*n * sizeof *ns);
        *srcs = ns;
        *cap = nc;
    }
    *out = &(*srcs)[(*n)++];
    memset(*out, 0, sizeof **out);
    return PERFPRED_OK;
}

static perfpred_status parse_document(pctx *c, yaml_node_t *root, pp_dev_src *s)
{
    s->at = pos_of(c, root);
    s->d.source_file = c->file;
    if (root->type != YAML_MAPPING_NODE)
        return FAIL(c, root, "a descriptor must be a mapping of keys (name:, description:, ...)");
    perfpred_status st = each_pair(c, root, "a device descriptor", top_pair, s);
    if (st) return st;
    if (!s->d.name) return FAIL(c, root, "descriptor is missing required field 'name'");
    if (!s->has_description)
        return FAIL(c, root, "descriptor '%s' is missing required field 'description'", s->d.name);
    if (s->has_mig_instance && (s->d.base || s->has_mig))
        return pp_dev_err_at(c->err, PERFPRED_ERR_DEVICE, s->mig_instance_at,
                             "descriptor '%s': mig_instance cannot be combined with base or mig",
                             s->d.name);
    return PERFPRED_OK;
}

perfpred_status pp_dev_parse_file(const char *path, pp_arena *a, pp_dev_src **srcs, int *n,
                                  int *cap, pp_err *err)
{
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st) return st;
    pctx c = {pp_arena_strdup(a, path), NULL, a, err};
    if (!c.file) {
        free(buf);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        free(buf);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: cannot initialise libyaml", path);
    }
    yaml_parser_set_input_string(&parser, buf, len);
    int n_docs = 0;
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&parser, &doc)) {
            pp_dev_pos at = {c.file, (int)parser.problem_mark.line + 1,
                             (int)parser.problem_mark.column + 1};
            st = pp_dev_err_at(err, PERFPRED_ERR_PARSE, at, "YAML syntax error: %s%s%s",
                               parser.problem ? parser.problem : "unknown problem",
                               parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (!root) {
            yaml_document_delete(&doc);
            break;
        }
        c.doc = &doc;
        pp_dev_src *s = NULL;
        st = push_src(&c, srcs, n, cap, &s);
        if (!st) st = parse_document(&c, root, s);
        yaml_document_delete(&doc);
        if (st) break;
        n_docs++;
    }
    yaml_parser_delete(&parser);
    free(buf);
    if (!st && n_docs == 0) {
        pp_dev_pos at = {c.file, 1, 1};
        st = pp_dev_err_at(err, PERFPRED_ERR_DEVICE, at, "no device descriptor in file");
    }
    return st;
}
