/* plan/plan.c: `perfpred calibrate plan`: a layer benchmark plan sized to a time budget. Every
 * runtime node of a model zoo becomes a layer row of docs/measurements.md, de-duplicated by its
 * configuration; perturbations of channels, spatial size and batch (nn-Meter / Sponner style) densify
 * around them inside the zoo's observed ranges, and pooling rows get a grid of windows; rows are
 * picked per op kind, weighted by the kind's share of zoo time (--adaptive: and its held-out error,
 * plan_adaptive.c), until the runner's estimated time fills the budget. Deterministic per seed.
 * This file reads the zoo into candidates and drives the steps; plan_perturb.c perturbs,
 * plan_select.c picks and writes. */
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

/* ------------------------------------------------------------------------ helpers ---- */

/* splitmix64: the plan's one seeded generator. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double rng_unit(uint64_t *s)
{
    return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0;
}

static int name_chars_ok(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("_.-+", *s)))
            return 0;
    return 1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Ops the PyTorch layer runner builds (runners/layers.py SUPPORTED_OPS, views left out: they run
 * no kernel and are never planned). A test checks this list against the runner's. */
static const char *const runner_ops[] = {
    "Conv", "ConvTranspose", "Gemm", "MatMul", "MaxPool", "AveragePool", "LpPool",
    "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "GroupNormalization", "Softmax", "LogSoftmax", "LRN", "ReduceMean",
    "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare",
    "ReduceLogSumExp", "ReduceLogSum", "Transpose", "Concat", "Split", "Slice", "Gather", "Pad",
    "Expand", "Tile", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth", "ArgMax", "ArgMin",
    "CumSum", "Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Erf", "Reciprocal", "Floor", "Ceil",
    "Round", "Sign", "Sin", "Cos", "Softsign", "Softplus", "Mish", "HardSwish", "Selu", "Log",
    "Sqrt", "Gelu", "LeakyRelu", "Elu", "Celu", "HardSigmoid", "Clip", "PRelu", "Cast", "Add",
    "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Greater", "Less", "GreaterOrEqual",
    "LessOrEqual", "Sum", "Mean", "Where", NULL};

static int runner_builds(const char *op)
{
    for (int i = 0; runner_ops[i]; i++)
        if (strcmp(runner_ops[i], op) == 0) return 1;
    return 0;
}

/* How ONNX value inputs travel in a layer row: as attributes of the same name (a row holds shapes,
 * never values; graph/ and the runner read these attributes when the input is absent).
 * type: 'I' ints, 'F' floats, 'f' one float, 'i' one int, '-' dropped (Resize's roi). */
typedef struct value_input {
    const char *op;
    int index;
    const char *attr;
    char type;
} value_input;

static const value_input value_inputs[] = {
    {"Slice", 1, "starts", 'I'}, {"Slice", 2, "ends", 'I'}, {"Slice", 3, "axes", 'I'},
    {"Slice", 4, "steps", 'I'}, {"Pad", 1, "pads", 'I'}, {"Pad", 2, "value", 'f'},
    {"Pad", 3, "axes", 'I'}, {"Resize", 1, "roi", '-'}, {"Resize", 2, "scales", 'F'},
    {"Resize", 3, "sizes", 'I'}, {"Upsample", 1, "scales", 'F'}, {"Split", 1, "split", 'I'},
    {"Tile", 1, "repeats", 'I'}, {"Expand", 1, "shape", 'I'}, {"Clip", 1, "min", 'f'},
    {"Clip", 2, "max", 'f'}, {"CumSum", 1, "axis", 'i'}, {"Squeeze", 1, "axes", 'I'},
    {"Unsqueeze", 1, "axes", 'I'}, {"Reshape", 1, "shape", 'I'},
};

static const value_input *value_input_of(const char *op, int index)
{
    static const value_input reduce_axes = {"Reduce*", 1, "axes", 'I'};
    if (strncmp(op, "Reduce", 6) == 0 && index == 1) return &reduce_axes;
    for (size_t i = 0; i < sizeof value_inputs / sizeof value_inputs[0]; i++)
        if (value_inputs[i].index == index && strcmp(value_inputs[i].op, op) == 0)
            return &value_inputs[i];
    return NULL;
}

/* ------------------------------------------------------------------ the plan state ---- */

/* Copies src into dst[n], truncating (never a format-truncation case for the compiler). */
static void copy_trunc(char *dst, size_t n, const char *src)
{
    size_t k = strlen(src);
    if (k >= n) k = n - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
}

/* Fills a reason buffer and returns -1, so that checks read `return WHY(...)`. */
static int why_set(char *why, size_t why_n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int why_set(char *why, size_t why_n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_n, fmt, ap);
    va_end(ap);
    return -1;
}
#define WHY(...) why_set(why, why_n, __VA_ARGS__)

static void note_msg(perfpred_plan_report *r, const char *fmt, const char *a, const char *b)
{
    if (r->n_msgs >= PERFPRED_REPORT_MSGS) return;
    char buf[8192];
    snprintf(buf, sizeof buf, fmt, a, b);
    copy_trunc(r->msgs[r->n_msgs++], sizeof r->msgs[0], buf);
}

/* Reasons are aggregated with numbers folded to N ("Concat: N inputs ..."); the first node met
 * with its full reason is kept as the example. */
static void note_skip(plan *P, const char *op, const char *reason, const char *example, int count)
{
    char key[96];
    int k = snprintf(key, sizeof key, "%s: ", op);
    for (const char *r = reason; *r && k > 0 && (size_t)k + 1 < sizeof key; r++) {
        if (*r >= '0' && *r <= '9') {
            while (r[1] >= '0' && r[1] <= '9') r++;
            key[k++] = 'N';
        } else {
            key[k++] = *r;
        }
    }
    key[k > 0 && (size_t)k < sizeof key ? k : (int)sizeof key - 1] = '\0';
    for (int i = 0; i < P->n_skips; i++)
        if (strcmp(P->skips[i].key, key) == 0) {
            P->skips[i].count += count;
            return;
        }
    if (P->n_skips == MAX_SKIP_REASONS) return;
    skip_reason *s = &P->skips[P->n_skips++];
    snprintf(s->key, sizeof s->key, "%s", key);
    copy_trunc(s->example, sizeof s->example, example ? example : "");
    s->count = count;
}

int pp_plan_map_find(const plan *P, const char *sig)
{
    return pp_strmap_get(&P->map, sig);
}

/* Appends a candidate (sig copied) and indexes it; returns its index or -1 (err set). */
int pp_plan_cand_add(plan *P, const char *sig, pp_err *err)
{
    /* a zoo gives thousands of configurations: start at 4096 slots */
    if (pp_strmap_reserve(&P->map, (size_t)P->n + 1 > 2048 ? (size_t)P->n + 1 : 2048) != 0) {
        pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
        return -1;
    }
    if (P->n == P->cap) {
        int cap = P->cap ? 2 * P->cap : 1024;
        cand *c = realloc(P->c, (size_t)cap * sizeof *c);
        if (!c) {
            pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
            return -1;
        }
        P->c = c;
        P->cap = cap;
    }
    cand *c = &P->c[P->n];
    memset(c, 0, sizeof *c);
    c->sig = pp_arena_strdup(P->arena, sig);
    if (!c->sig) {
        pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
        return -1;
    }
    c->valid = -1;
    /* the key is the arena's copy of sig */
    if (pp_strmap_put(&P->map, c->sig, P->n) != 0) {
        pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
        return -1;
    }
    return P->n++;
}

/* --------------------------------------------------------- text of rows and nodes ---- */


static int cmp_attr_name(const void *x, const void *y)
{
    return strcmp(((const pp_layer_attr *)x)->name, ((const pp_layer_attr *)y)->name);
}

/* The signature of a row: op type, inputs and attributes (sorted by name), tab-separated; the
 * inputs and attrs parts are exactly the CSV columns. */
void pp_plan_put_sig(pp_strbuf *b, const pp_layer_row *r)
{
    pp_layer_attr sorted[PP_LAYER_MAX_ATTRS];
    memcpy(sorted, r->attrs, (size_t)r->n_attrs * sizeof sorted[0]);
    qsort(sorted, (size_t)r->n_attrs, sizeof sorted[0], cmp_attr_name);
    pp_strbuf_put(b, r->op_type);
    pp_strbuf_put(b, "\t");
    pp_measure_put_inputs(b, r);
    pp_strbuf_put(b, "\t");
    for (int i = 0; i < r->n_attrs; i++) {
        if (i) pp_strbuf_put(b, ";");
        pp_measure_put_attr(b, &sorted[i]);
    }
}

/* Parses a signature back into a row (attribute strings in a). 0 ok, -1 (why filled). */
int pp_plan_sig_to_row(const char *sig, pp_arena *a, pp_layer_row *r, char *why, size_t why_n)
{
    memset(r, 0, sizeof *r);
    const char *t1 = strchr(sig, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t1 || !t2) return WHY("malformed signature");
    char ins[1024], attrs[1024];
    if ((size_t)(t2 - t1 - 1) >= sizeof ins || strlen(t2 + 1) >= sizeof attrs)
        return WHY("inputs or attributes too long for a layer row");
    memcpy(ins, t1 + 1, (size_t)(t2 - t1 - 1));
    ins[t2 - t1 - 1] = '\0';
    snprintf(attrs, sizeof attrs, "%s", t2 + 1);
    r->op_type = pp_arena_strndup(a, sig, (size_t)(t1 - sig));
    if (!r->op_type) return WHY("out of memory");
    pp_layer_input in[PP_LAYER_MAX_ALL_INPUTS];
    int n = pp_measure_parse_inputs(r->op_type, ins, in, PP_LAYER_MAX_ALL_INPUTS, why, why_n);
    if (n < 0) return -1;
    if (pp_layer_row_set_inputs(r, in, n, a) != 0) return WHY("out of memory");
    n = pp_measure_parse_attrs(attrs, a, r->attrs, PP_LAYER_MAX_ATTRS, why, why_n);
    if (n < 0) return -1;
    r->n_attrs = n;
    return 0;
}

/* Static inputs (known without running the model) become weights of the rebuilt node, as
 * graph/features.c classifies them. */
static int tensor_is_static(const pp_graph *g, int t)
{
    const pp_tensor *T = &g->tensors[t];
    if (T->flags & (PP_T_WEIGHT | PP_T_CONST)) return 1;
    if (T->producer >= 0) {
        const pp_node_feat *pf = &g->nodes[T->producer].feat;
        return pf->folded || pf->kind == PP_OPK_SHAPE;
    }
    return 0;
}

/* A constant value input as an attribute. 0 ok, 1 absent (empty tensor), -1 not expressible. */
static int value_attr(const pp_tensor *t, const value_input *vi, pp_arena *a, pp_layer_attr *at,
                      char *why, size_t why_n)
{
    if (!(t->flags & PP_T_CONST) || (!t->val.ival && !t->val.fval))
        return WHY("input '%s' is computed at run time", vi->attr);
    if (t->val.n == 0) return 1;
    memset(at, 0, sizeof *at);
    at->name = pp_arena_strdup(a, vi->attr);
    if (!at->name) return WHY("out of memory");
    int64_t n = t->val.n;
    if (vi->type == 'f' || vi->type == 'i') {
        if (n != 1) return WHY("input '%s' is not a scalar", vi->attr);
        if (vi->type == 'f') {
            at->type = PP_ATTR_FLOAT;
            at->f = t->val.fval ? t->val.fval[0] : (double)t->val.ival[0];
            if (!isfinite(at->f)) return WHY("input '%s' is not finite", vi->attr);
        } else {
            if (!t->val.ival) return WHY("input '%s' is not an integer", vi->attr);
            at->type = PP_ATTR_INT;
            at->i = t->val.ival[0];
        }
        return 0;
    }
    if (n > PP_LAYER_MAX_INTS)
        return WHY("input '%s' has more than %d values", vi->attr, PP_LAYER_MAX_INTS);
    at->n = (int)n;
    if (vi->type == 'I') {
        if (!t->val.ival) return WHY("input '%s' is not an integer list", vi->attr);
        at->type = PP_ATTR_INTS;
        for (int64_t k = 0; k < n; k++) at->ints[k] = t->val.ival[k];
    } else {
        at->type = PP_ATTR_FLOATS;
        for (int64_t k = 0; k < n; k++) {
            at->floats[k] = t->val.fval ? t->val.fval[k] : (double)t->val.ival[k];
            if (!isfinite(at->floats[k])) return WHY("input '%s' is not finite", vi->attr);
        }
    }
    return 0;
}

static int attr_from_node(const pp_attr *src, pp_arena *a, pp_layer_attr *at, char *why,
                          size_t why_n)
{
    memset(at, 0, sizeof *at);
    if (!name_chars_ok(src->name)) return WHY("attribute name '%s'", src->name);
    at->name = pp_arena_strdup(a, src->name);
    at->type = src->type;
    switch (src->type) {
    case PP_ATTR_INT: at->i = src->i; break;
    case PP_ATTR_FLOAT: at->f = src->f; break;
    case PP_ATTR_STRING:
        if (!src->s || !name_chars_ok(src->s))
            return WHY("attribute %s: string value not expressible", src->name);
        at->s = pp_arena_strdup(a, src->s);
        break;
    case PP_ATTR_INTS:
    case PP_ATTR_FLOATS:
        if (src->n < 1 || src->n > PP_LAYER_MAX_INTS)
            return WHY("attribute %s has %lld values (1..%d expressible)",
                       src->name, (long long)src->n, PP_LAYER_MAX_INTS);
        at->n = (int)src->n;
        for (int k = 0; k < at->n; k++) {
            if (src->type == PP_ATTR_INTS) at->ints[k] = src->ints[k];
            else at->floats[k] = src->floats[k];
        }
        break;
    default:
        snprintf(why, why_n, "attribute %s of type %d", src->name, src->type);
        return -1;
    }
    if (!at->name || (src->type == PP_ATTR_STRING && !at->s)) return WHY("out of memory");
    return 0;
}

static int is_commutative(const char *op)
{
    static const char *const ops[] = {"Add", "Mul", "Max", "Min", "Sum", "Mean", "Equal", NULL};
    for (int i = 0; ops[i]; i++)
        if (strcmp(op, ops[i]) == 0) return 1;
    return 0;
}

/* A model node as a layer row (strings in a). 0 ok; -1 with a short reason (why) and detail. */
static int node_to_row(const pp_graph *g, const pp_node *n, pp_arena *a, pp_layer_row *r,
                       char *why, size_t why_n)
{
    memset(r, 0, sizeof *r);
    r->op_type = n->op_type;
    r->kind = n->feat.kind;
    if (n->n_inputs > PP_LAYER_MAX_ALL_INPUTS)
        return WHY("%d inputs (a layer row holds %d)", n->n_inputs, PP_LAYER_MAX_ALL_INPUTS);
    pp_layer_input ins[PP_LAYER_MAX_ALL_INPUTS];
    int n_in = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int t = n->inputs[k];
        const value_input *vi = value_input_of(n->op_type, k);
        if (vi) {
            if (t >= 0 && vi->type != '-') {
                if (r->n_attrs == PP_LAYER_MAX_ATTRS)
                    return WHY("more than %d attributes", PP_LAYER_MAX_ATTRS);
                int rc = value_attr(&g->tensors[t], vi, a, &r->attrs[r->n_attrs], why, why_n);
                if (rc < 0) return -1;
                if (rc == 0) r->n_attrs++;
            }
            ins[n_in].role = '-';
            ins[n_in].rank = -1;
            n_in++;
            continue;
        }
        pp_layer_input *in = &ins[n_in++];
        memset(in, 0, sizeof *in);
        if (t < 0) {
            in->role = '-';
            in->rank = -1;
            continue;
        }
        const pp_tensor *T = &g->tensors[t];
        if (T->rank < 0) return WHY("input %d has an unknown shape", k);
        for (int d = 0; d < T->rank; d++)
            if (T->dims[d] < 1) return WHY("input %d has an empty dimension", k);
        in->role = tensor_is_static(g, t) ? 'w' : 'x';
        in->rank = T->rank;
        memcpy(in->dims, T->dims, sizeof in->dims);
    }
    while (n_in > 0 && ins[n_in - 1].role == '-') n_in--;

    if (n_in == 0 || ins[0].role != 'x') {
        int has_x = 0;
        for (int k = 0; k < n_in; k++) has_x |= ins[k].role == 'x';
        if (n_in >= 2 && ins[1].role == 'x' && is_commutative(n->op_type)) {
            pp_layer_input t = ins[0];
            ins[0] = ins[1];
            ins[1] = t;
        } else if (!has_x || !pp_measure_weight_first_ok(n->op_type)) {
            snprintf(why, why_n, "first input is a constant");
            return -1;
        }
    }
    if (pp_layer_row_set_inputs(r, ins, n_in, a) != 0) return WHY("out of memory");
    for (int i = 0; i < n->n_attrs; i++) {
        if (r->n_attrs == PP_LAYER_MAX_ATTRS)
            return WHY("more than %d attributes", PP_LAYER_MAX_ATTRS);
        for (int k = 0; k < r->n_attrs; k++)
            if (strcmp(r->attrs[k].name, n->attrs[i].name) == 0)
                return WHY("attribute %s given twice", n->attrs[i].name);
        if (attr_from_node(&n->attrs[i], a, &r->attrs[r->n_attrs], why, why_n) != 0) return -1;
        r->n_attrs++;
    }
    /* graph/ reads Slice steps and Pad axes only as inputs: rows need the defaults */
    for (int i = 0; i < r->n_attrs; i++) {
        const pp_layer_attr *at = &r->attrs[i];
        if (strcmp(n->op_type, "Slice") == 0 && strcmp(at->name, "steps") == 0) {
            for (int k = 0; k < at->n; k++)
                if (at->ints[k] != 1) return WHY("Slice steps other than 1");
            r->attrs[i] = r->attrs[--r->n_attrs];
            i--;
        } else if (strcmp(n->op_type, "Pad") == 0 && strcmp(at->name, "axes") == 0)
            return WHY("Pad with axes");
    }
    return 0;
}

/* ------------------------------------------------------------------------ the zoo ---- */

typedef struct zoo_entry {
    char *path, *family, *input_name; /* input_name NULL: batch via symbolic dims */
    int rank;
    int64_t dims[PP_MAX_RANK];
} zoo_entry;

typedef struct zoo {
    zoo_entry *e;
    int n, cap;
} zoo;

static void zoo_free(zoo *z)
{
    for (int i = 0; i < z->n; i++) {
        free(z->e[i].path);
        free(z->e[i].family);
        free(z->e[i].input_name);
    }
    free(z->e);
    memset(z, 0, sizeof *z);
}

static perfpred_status zoo_add(zoo *z, const char *path, const char *family,
                               const char *input_name, int rank, const int64_t *dims, pp_err *err)
{
    if (z->n == z->cap) {
        int cap = z->cap ? 2 * z->cap : 64;
        zoo_entry *e = realloc(z->e, (size_t)cap * sizeof *e);
        if (!e) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
        z->e = e;
        z->cap = cap;
    }
    zoo_entry *e = &z->e[z->n];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    e->family = strdup(family);
    e->input_name = input_name ? strdup(input_name) : NULL;
    e->rank = rank;
    if (rank > 0) memcpy(e->dims, dims, (size_t)rank * sizeof dims[0]);
    if (!e->path || !e->family || (input_name && !e->input_name)) {
        free(e->path);
        free(e->family);
        free(e->input_name);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    }
    z->n++;
    return PERFPRED_OK;
}

/* Family of a bare .onnx file: the leading letters of its name ("resnet50" -> "resnet"). */
static void family_of_file(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t k = 0;
    while (base[k] && k + 1 < n &&
           ((base[k] >= 'a' && base[k] <= 'z') || (base[k] >= 'A' && base[k] <= 'Z'))) {
        out[k] = base[k];
        k++;
    }
    out[k] = '\0';
    if (k == 0) snprintf(out, n, "model");
}

typedef struct ref_read {
    zoo *z;
    const char *dir;
    int col[4]; /* file, family, input_name, input_shape */
} ref_read;

static int ref_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    ref_read *rr = user;
    static const char *const cols[4] = {"file", "family", "input_name", "input_shape"};
    if (is_header) {
        for (int c = 0; c < 4; c++) {
            rr->col[c] = -1;
            for (int f = 0; f < rec->n_fields; f++)
                if (strcmp(rec->fields[f], cols[c]) == 0) rr->col[c] = f;
            if (rr->col[c] < 0) {
                pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: missing column '%s' (a model list "
                           "needs file, family, input_name, input_shape)", rec->path, rec->line,
                           cols[c]);
                return -1;
            }
        }
        return 0;
    }
    for (int c = 0; c < 4; c++)
        if (rr->col[c] >= rec->n_fields || !*rec->fields[rr->col[c]]) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: empty or missing %s", rec->path, rec->line,
                       cols[c]);
            return -1;
        }
    int64_t dims[PP_MAX_RANK];
    int rank = pp_parse_dims(rec->fields[rr->col[3]], dims, PP_MAX_RANK);
    if (rank < 1) {
        pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: input_shape '%s' is not like 1x3x224x224",
                   rec->path, rec->line, rec->fields[rr->col[3]]);
        return -1;
    }
    const char *file = rec->fields[rr->col[0]];
    char path[4096];
    if (file[0] == '/') snprintf(path, sizeof path, "%s", file);
    else snprintf(path, sizeof path, "%s/%s", rr->dir, file);
    perfpred_status st = zoo_add(rr->z, path, rec->fields[rr->col[1]], rec->fields[rr->col[2]],
                                 rank, dims, err);
    return st == PERFPRED_OK ? 0 : -1;
}

static perfpred_status zoo_read_csv(zoo *z, const char *csv, pp_err *err)
{
    ref_read rr;
    memset(&rr, 0, sizeof rr);
    rr.z = z;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", csv);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    rr.dir = dir;
    return pp_measure_csv_read(csv, ref_record, &rr, err);
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static perfpred_status zoo_add_onnx(zoo *z, const char *path, pp_err *err)
{
    char fam[64];
    family_of_file(path, fam, sizeof fam);
    return zoo_add(z, path, fam, NULL, 0, NULL, err);
}

static perfpred_status zoo_read_dir(zoo *z, const char *dir, pp_err *err)
{
    char ref[4096];
    snprintf(ref, sizeof ref, "%s/reference.csv", dir);
    FILE *f = fopen(ref, "r");
    if (f) {
        fclose(f);
        return zoo_read_csv(z, ref, err);
    }
    DIR *d = opendir(dir);
    if (!d) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open the model folder", dir);
    char **names = NULL;
    int n = 0, cap = 0;
    perfpred_status st = PERFPRED_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!ends_with(de->d_name, ".onnx")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) {
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            st = pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (st == PERFPRED_OK) qsort(names, (size_t)n, sizeof *names, cmp_cstr);
    for (int i = 0; i < n && st == PERFPRED_OK; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        st = zoo_add_onnx(z, path, err);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (st == PERFPRED_OK && n == 0)
        st = pp_err_set(err, PERFPRED_ERR_IO, "%s: no reference.csv and no .onnx files", dir);
    return st;
}

static perfpred_status zoo_read(zoo *z, const char *src, pp_err *err)
{
    DIR *d = opendir(src);
    if (d) {
        closedir(d);
        return zoo_read_dir(z, src, err);
    }
    if (ends_with(src, ".csv")) return zoo_read_csv(z, src, err);
    if (ends_with(src, ".onnx")) {
        FILE *f = fopen(src, "rb");
        if (!f) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open", src);
        fclose(f);
        return zoo_add_onnx(z, src, err);
    }
    return pp_err_set(err, PERFPRED_ERR_IO,
                      "%s: not a folder, a model list (.csv) or an ONNX file (.onnx)", src);
}

/* ------------------------------------------------------------------- costing rows ---- */

/* Kernel time on the device: its layer models where it is calibrated already (a second plan, after
 * a first fit, is costed from measurements), else the predictor's roofline, else 50 us when the
 * descriptor lacks the figures a roofline needs. */
static double kernel_ms(plan *P, const pp_node_feat *f)
{
    double v;
    pp_err e = {0};
    if (P->lm && pp_layer_models_predict(P->lm, f, PP_LM_LATENCY, &v, &e) == PP_LM_OK &&
        isfinite(v) && v > 0) {
        P->n_lm_costed++;
        return v;
    }
    if (!P->has_roof) return 0.05;
    return pp_roofline_ms(P->dev, f->kind, f->flops, f->in_bytes + f->out_bytes + f->param_bytes,
                          NULL);
}

/* Seconds the layer runner spends on a row (runners/timing.py): every visit of every round
 * rebuilds the layer (a plan of more than 64 rows overflows the runner's cache), fills its tensors
 * (~0.5 GB/s), warms up (max(warmup_calls calls, warmup_ms)), runs one untimed call, then `burst`
 * samples of `inner` calls lasting at least min_sample_us each; 2 ms of Python per visit. */
double pp_plan_row_cost_s(plan *P, const pp_node_feat *f)
{
    const perfpred_runner_protocol *r = &P->p->protocol;
    double t = kernel_ms(P, f) * 1e-3;
    double bytes = f->in_bytes + f->out_bytes + f->param_bytes;
    double sample = fmax(t, fmin(r->min_sample_us * 1e-6, r->max_inner * t));
    double visit = fmax(r->warmup_calls * t, r->warmup_ms * 1e-3) + bytes / 0.5e9 + t +
                   r->burst * sample + 2e-3;
    return r->rounds * visit;
}

/* --------------------------------------------------------------- validation ---- */

/* Rebuilds a candidate as a single-node graph (graph/ describes it as it would a model node);
 * checks its kind and, for zoo configurations, its output shape. Sets c->valid and c->feat. */
void pp_plan_validate(plan *P, cand *c, char *why, size_t why_n)
{
    pp_layer_row row;
    c->valid = 0;
    if (pp_plan_sig_to_row(c->sig, P->arena, &row, why, why_n) != 0) return;
    row.kind = c->kind;
    row.precision = P->dev->runtime_precision;
    row.source = "plan row";
    pp_graph *g = NULL;
    int node;
    pp_err err = {0};
    if (pp_layer_row_graph(&row, &g, &node, &err) != PERFPRED_OK) {
        copy_trunc(why, why_n, err.msg);
        return;
    }
    const pp_tensor *y = &g->tensors[g->nodes[node].outputs[0]];
    if (c->is_base && (y->rank != c->out_rank ||
                       memcmp(y->dims, c->out_dims, (size_t)(y->rank > 0 ? y->rank : 0) *
                                                        sizeof y->dims[0]) != 0)) {
        snprintf(why, why_n, "the rebuilt node's output shape differs from the model's");
        pp_graph_free(g);
        return;
    }
    c->feat = g->nodes[node].feat;
    pp_graph_free(g);
    c->valid = 1;
    c->cost_s = pp_plan_row_cost_s(P, &c->feat);
}

/* ------------------------------------------------------------------ zoo to base ---- */

/* 1 when the plan takes rows of this operator (all when no --ops list was given). */
int pp_plan_op_wanted(const plan *P, const char *op)
{
    if (P->p->n_ops <= 0) return 1;
    for (int i = 0; i < P->p->n_ops; i++)
        if (P->p->ops[i] && strcmp(P->p->ops[i], op) == 0) return 1;
    return 0;
}

/* A zoo kernel as a layer row: a composite op (GELU exported as five nodes) as the one operator
 * PyTorch runs, every other node as itself (fused followers too: their own rows). */
static perfpred_status add_row(plan *P, const pp_graph *g, const pp_node *n, const pp_node *last,
                               const pp_layer_row *row, double ms, const char *base,
                               int64_t batch, pp_strbuf *sig, pp_err *err)
{
    sig->len = 0;
    if (sig->data) sig->data[0] = '\0';
    pp_plan_put_sig(sig, row);
    if (sig->oom) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    int ci = pp_plan_map_find(P, sig->data);
    if (ci >= 0) {
        P->c[ci].n_occ++;
        P->c[ci].zoo_ms += ms;
        return PERFPRED_OK;
    }
    if ((ci = pp_plan_cand_add(P, sig->data, err)) < 0) return err->status;
    cand *c = &P->c[ci];
    char src[512];
    snprintf(src, sizeof src, "plan:zoo:%s@b%lld:%s", base, (long long)batch, n->name);
    c->source = pp_arena_strdup(P->arena, src);
    c->batch = batch;
    c->kind = row->kind;
    c->is_base = 1;
    c->n_occ = 1;
    c->zoo_ms = ms;
    const pp_tensor *y = &g->tensors[last->outputs[0]];
    c->out_rank = y->rank;
    memcpy(c->out_dims, y->dims, sizeof c->out_dims);
    if (!c->source) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    return PERFPRED_OK;
}

static perfpred_status add_graph(plan *P, const pp_graph *g, const char *file, int64_t batch,
                                 pp_err *err)
{
    char why[256];
    pp_strbuf sig = {0};
    pp_kernel_group *ks = NULL;
    int nk = 0;
    perfpred_status st = pp_graph_kernels(g, P->dev, &ks, &nk, err);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    for (int gi = 0; gi < nk && st == PERFPRED_OK; gi++) {
        const pp_kernel_group *K = &ks[gi];
        const pp_node *last = &g->nodes[K->nodes[K->n - 1]];
        pp_layer_row row;
        pp_node_feat ef;
        if (K->eager_op && last->n_outputs > 0 && last->outputs[0] >= 0 &&
            pp_composite_row(g, K->nodes[0], K->eager_op, &row, &ef) == 0) {
            const pp_node *n = &g->nodes[K->nodes[0]];
            P->rep->n_nodes++;
            double ms = kernel_ms(P, &ef);
            P->kind_zoo_ms[ef.kind] += ms;
            P->kind_zoo_nodes[ef.kind]++;
            if (pp_plan_op_wanted(P, row.op_type) && runner_builds(row.op_type))
                st = add_row(P, g, n, last, &row, ms, base, batch, &sig, err);
            continue;
        }
        for (int s = 0; s < K->n && st == PERFPRED_OK; s++) {
            const pp_node *n = &g->nodes[K->nodes[s]];
            pp_op_kind k = n->feat.kind;
            if (n->n_outputs < 1 || n->outputs[0] < 0) continue;
            P->rep->n_nodes++;
            double ms = kernel_ms(P, &n->feat);
            P->kind_zoo_ms[k] += ms;
            P->kind_zoo_nodes[k]++;
            if (!pp_plan_op_wanted(P, n->op_type)) continue;
            if (k == PP_OPK_UNKNOWN || n->unknown_op || (n->domain && *n->domain)) {
                P->rep->n_skipped_nodes++;
                note_skip(P, n->op_type, "op kind unknown to graph/", n->name, 1);
                continue;
            }
            if (!runner_builds(n->op_type)) {
                P->rep->n_skipped_nodes++;
                note_skip(P, n->op_type, "the PyTorch layer runner does not build it", n->name, 1);
                continue;
            }
            if (node_to_row(g, n, P->arena, &row, why, sizeof why) != 0) {
                P->rep->n_skipped_nodes++;
                char ex[512];
                snprintf(ex, sizeof ex, "%s: %s", n->name, why);
                note_skip(P, n->op_type, why, ex, 1);
                continue;
            }
            st = add_row(P, g, n, n, &row, ms, base, batch, &sig, err);
        }
    }
    free(ks);
    free(sig.data);
    return st;
}

static int family_excluded(const perfpred_plan_params *p, const char *fam)
{
    for (int i = 0; i < p->n_exclude_families; i++)
        if (strcmp(p->exclude_families[i], fam) == 0) return 1;
    return 0;
}

static perfpred_status load_zoo(plan *P, const zoo *z, pp_err *err)
{
    static const int64_t default_batches[] = {1, 8};
    const int64_t *batches = P->p->n_batches ? P->p->batches : default_batches;
    int nb = P->p->n_batches ? P->p->n_batches : 2;
    /* (file, shape) pairs already loaded: reference lists repeat files with other shapes */
    char **seen = calloc((size_t)z->n * (size_t)nb + 1, sizeof *seen);
    int n_seen = 0;
    if (!seen) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < z->n && st == PERFPRED_OK; i++) {
        const zoo_entry *e = &z->e[i];
        if (family_excluded(P->p, e->family)) {
            P->rep->n_excluded_models++;
            continue;
        }
        for (int b = 0; b < nb && st == PERFPRED_OK; b++) {
            perfpred_input_override ov;
            memset(&ov, 0, sizeof ov);
            pp_shape_opts opts;
            memset(&opts, 0, sizeof opts);
            char key[4096 + 160];
            int off = snprintf(key, sizeof key, "%s|", e->path);
            if (e->input_name) {
                ov.name = e->input_name;
                ov.rank = e->rank;
                memcpy(ov.dims, e->dims, sizeof ov.dims);
                ov.dims[0] = batches[b];
                opts.inputs = &ov;
                opts.n_inputs = 1;
                for (int d = 0; d < ov.rank && off > 0 && (size_t)off < sizeof key; d++)
                    off += snprintf(key + off, sizeof key - (size_t)off, "%lldx",
                                    (long long)ov.dims[d]);
            } else {
                opts.batch = batches[b];
                snprintf(key + off, sizeof key - (size_t)off, "b%lld", (long long)batches[b]);
            }
            int dup = 0;
            for (int k = 0; k < n_seen && !dup; k++) dup = strcmp(seen[k], key) == 0;
            if (dup) continue;
            if (!(seen[n_seen] = strdup(key))) {
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
                break;
            }
            n_seen++;
            pp_graph *g = NULL;
            pp_err lerr = {0};
            if (pp_graph_load_full(e->path, &opts, &g, &lerr) != PERFPRED_OK) {
                P->rep->n_model_failures++;
                char bs[32];
                snprintf(bs, sizeof bs, "%lld", (long long)batches[b]);
                note_msg(P->rep, "model not loaded at batch %s: %s", bs, lerr.msg);
                pp_log(&P->log, PERFPRED_LOG_WARN, "plan: %s", lerr.msg);
                continue;
            }
            P->rep->n_models++;
            int64_t batch = g->n_inputs > 0 && g->tensors[g->inputs[0]].rank > 0
                                ? g->tensors[g->inputs[0]].dims[0]
                                : batches[b];
            st = add_graph(P, g, e->path, batch, err);
            pp_log(&P->log, PERFPRED_LOG_DEBUG, "plan: %s at batch %lld: %d nodes", e->path,
                   (long long)batch, g->n_nodes);
            pp_graph_free(g);
        }
    }
    for (int k = 0; k < n_seen; k++) free(seen[k]);
    free(seen);
    return st;
}


static void fill_report(plan *P)
{
    perfpred_plan_report *r = P->rep;
    double zoo_total = 0, est = 0;
    for (int k = 1; k < PP_OPK__COUNT; k++) zoo_total += P->kind_zoo_ms[k];
    for (int k = 1; k < PP_OPK__COUNT && r->n_kinds < PERFPRED_MAX_KINDS; k++) {
        perfpred_plan_kind pk;
        memset(&pk, 0, sizeof pk);
        pk.kind = pp_op_kind_name((pp_op_kind)k);
        pk.n_zoo_nodes = P->kind_zoo_nodes[k];
        pk.zoo_time_share = zoo_total > 0 ? P->kind_zoo_ms[k] / zoo_total : 0;
        double s = 0;
        pk.heldout_mape_pct = P->adapt ? pp_plan_adapt_kind_mape(P->adapt, (pp_op_kind)k) : NAN;
        pk.budget_weight = P->kind_weight[k];
        for (int i = 0; i < P->n; i++) {
            const cand *c = &P->c[i];
            if (c->kind != (pp_op_kind)k || c->valid != 1) continue;
            pk.n_base += c->is_base;
            pk.n_candidates++;
            pk.n_measured += c->measured;
            if (c->picked) {
                pk.n_rows++;
                pk.n_rows_base += c->is_base;
                s += c->cost_s;
            }
        }
        pk.est_minutes = s / 60.0;
        est += s;
        if (pk.n_zoo_nodes || pk.n_candidates) r->kinds[r->n_kinds++] = pk;
        r->n_rows += pk.n_rows;
        r->n_excluded_measured += pk.n_measured;
    }
    r->n_anchor_rows = P->n_anchors;
    r->anchor_minutes = P->anchor_s / 60.0;
    r->n_rows += P->n_anchors;
    r->est_minutes = (est + P->anchor_s) / 60.0;
    r->budget_minutes = P->p->budget_min;
    r->has_roofline = P->has_roof;
    r->cost_from_layer_models = P->n_lm_costed > 0;
    /* skip reasons, most frequent first */
    for (int i = 0; i < P->n_skips; i++)
        for (int j = i + 1; j < P->n_skips; j++)
            if (P->skips[j].count > P->skips[i].count) {
                skip_reason t = P->skips[i];
                P->skips[i] = P->skips[j];
                P->skips[j] = t;
            }
    for (int i = 0; i < P->n_skips && r->n_msgs < PERFPRED_REPORT_MSGS; i++) {
        const skip_reason *s = &P->skips[i];
        char buf[512];
        snprintf(buf, sizeof buf, "skipped %d node%s: %s%s%s%s", s->count,
                 s->count == 1 ? "" : "s", s->key, s->example[0] ? " (e.g. " : "", s->example,
                 s->example[0] ? ")" : "");
        copy_trunc(r->msgs[r->n_msgs++], sizeof r->msgs[0], buf);
    }
}

perfpred_status perfpred_calibrate_plan(const perfpred_plan_params *p, perfpred_plan_report *out,
                                        char *errbuf, size_t errbuf_len)
{
    perfpred_status st = perfpred_plan_check_params(p, errbuf, errbuf_len);
    if (st != PERFPRED_OK) return st;
    if (!out) return PERFPRED_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    pp_err err = {0};
    plan P;
    memset(&P, 0, sizeof P);
    P.p = p;
    P.rep = out;
    P.log.fn = p->log;
    P.log.user = p->log_user;
    zoo z = {0};
    pp_device_db *db = NULL;
    const char *cfg = p->config_dir ? p->config_dir : pp_default_config_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/devices", cfg);
    if ((st = pp_devices_load_config(path, &db, &err))) goto done;
    P.dev = pp_devices_find(db, p->device);
    if (!P.dev) {
        st = pp_err_set(&err, PERFPRED_ERR_DEVICE,
                        "unknown device '%s' (perfpred devices lists them)", p->device);
        goto done;
    }
    snprintf(out->device, sizeof out->device, "%s", P.dev->name);
    P.has_roof = P.dev->peak_tflops[PP_PREC_FP32] > 0 && P.dev->memory_bandwidth_gbs > 0;
    /* perturbed rows must fit the device comfortably: a quarter of its memory, at most 4 GiB */
    P.mem_cap_bytes = 4.0 * 1073741824.0;
    if (P.dev->memory_gb > 0)
        P.mem_cap_bytes = fmin(P.mem_cap_bytes, P.dev->memory_gb * 1073741824.0 / 4);
    if (!(P.arena = pp_arena_new())) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "plan: out of memory");
        goto done;
    }
    /* where the predictor finds the device's layer models: its artifacts folder, else
     * artifacts/<name>; none yet is the usual first plan */
    if (P.dev->artifacts_dir) snprintf(path, sizeof path, "%s/%s", cfg, P.dev->artifacts_dir);
    else snprintf(path, sizeof path, "%s/artifacts/%s", cfg, P.dev->name);
    pp_err lerr = {0};
    perfpred_status lst = pp_layer_models_load(path, &P.lm, &lerr);
    if (lst != PERFPRED_OK && lst != PERFPRED_ERR_IO)
        note_msg(out, "layer models not used for costs (%s): %s", path, lerr.msg);
    if (P.lm && strcmp(pp_layer_models_device(P.lm), P.dev->name) != 0) {
        pp_layer_models_free(P.lm); /* another device's models (a shared folder) */
        P.lm = NULL;
    }
    if (p->adaptive) {
        if ((st = pp_plan_adapt_load(p->adaptive_dir ? p->adaptive_dir : path, cfg, P.dev, &P.adapt,
                                     &err)))
            goto done;
        /* the first fit's models, kept elsewhere, cost the rows too */
        if (!P.lm && p->adaptive_dir && pp_layer_models_load(p->adaptive_dir, &P.lm, &lerr) ==
                                            PERFPRED_OK &&
            strcmp(pp_layer_models_device(P.lm), P.dev->name) != 0) {
            pp_layer_models_free(P.lm);
            P.lm = NULL;
        }
        out->adaptive = 1;
        copy_trunc(out->adaptive_basis, sizeof out->adaptive_basis, pp_plan_adapt_basis(P.adapt));
    }
    if (p->n_models > 0) {
        for (int i = 0; i < p->n_models && st == PERFPRED_OK; i++)
            st = zoo_read(&z, p->models[i], &err);
    } else {
        snprintf(path, sizeof path, "%s/../tests/fixtures/models", cfg);
        DIR *d = opendir(path);
        if (!d) {
            st = pp_err_set(&err, PERFPRED_ERR_IO,
                            "no model zoo at %s: give the models to sample from (--models)", path);
            goto done;
        }
        closedir(d);
        st = zoo_read(&z, path, &err);
    }
    if (st) goto done;
    if ((st = load_zoo(&P, &z, &err))) goto done;
    if (out->n_models == 0) {
        st = pp_err_set(&err, PERFPRED_ERR_IO, "plan: no model of the zoo could be loaded (%d "
                        "entries, %d excluded by family)", z.n, out->n_excluded_models);
        goto done;
    }
    int n_base = P.n;
    char why[256];
    for (int i = 0; i < n_base; i++) {
        pp_plan_validate(&P, &P.c[i], why, sizeof why);
        if (P.c[i].valid != 1) {
            char op[64];
            const char *tab = strchr(P.c[i].sig, '\t');
            snprintf(op, sizeof op, "%.*s", (int)(tab - P.c[i].sig), P.c[i].sig);
            out->n_skipped_nodes += P.c[i].n_occ;
            note_skip(&P, op, "graph/ cannot rebuild it as a layer row", why, P.c[i].n_occ);
        }
    }
    uint64_t rng = p->seed * 0x9E3779B97F4A7C15ull + 0x243F6A8885A308D3ull;
    if ((st = pp_plan_perturb(&P, n_base, &err))) goto done;
    /* pick-order keys, drawn in candidate order (itself fixed by the zoo order); adaptive:
     * measured configurations are left out, and where held-out rows are known a candidate's
     * weight is multiplied by its closeness to the ones with large errors */
    for (int i = 0; i < P.n; i++) {
        double u = rng_unit(&rng);
        cand *c = &P.c[i];
        c->key = c->is_base ? log(u) / (double)(c->n_occ > 0 ? c->n_occ : 1) : u;
        if (!P.adapt || c->valid != 1) continue;
        c->measured = pp_plan_adapt_measured(P.adapt, c->sig);
        if (pp_plan_adapt_has_rows(P.adapt, c->kind)) {
            double w = pp_plan_adapt_row_weight(P.adapt, &c->feat);
            c->key = log(u) / (w * (double)(c->is_base && c->n_occ > 0 ? c->n_occ : 1));
            out->adaptive_rows = 1;
        }
    }
    if ((st = pp_plan_pick_anchors(&P, &err))) goto done;
    pp_plan_cover_domain(&P);
    if ((st = pp_plan_select_rows(&P, &err))) goto done;
    fill_report(&P);
    if (out->n_rows == 0) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG,
                        "plan: no row fits a budget of %g minutes (the cheapest costs more)",
                        p->budget_min);
        goto done;
    }
    st = pp_plan_write(&P, &err);
    pp_log(&P.log, PERFPRED_LOG_INFO, "plan: %d rows, %.1f of %.1f minutes, written to %s",
           out->n_rows, out->est_minutes, p->budget_min, p->out_csv);
done:
    if (st != PERFPRED_OK && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    zoo_free(&z);
    free(P.c);
    pp_strmap_free(&P.map);
    pp_arena_free(P.arena);
    pp_layer_models_free(P.lm);
    pp_plan_adapt_free(P.adapt);
    for (int i = 0; i < P.n_anchor_tables; i++) pp_measure_layer_table_free(P.anchor_tables[i]);
    free(P.anchor_tables);
    pp_devices_free(db);
    return st;
}
