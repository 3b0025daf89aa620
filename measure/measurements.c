/* measure/measurements.c: the layer-level and network-level measurement CSVs of
 * docs/measurements.md. Reading is strict: the header must name every column of the schema exactly
 * once; a data row with a missing field, unparsable number, NaN or non-positive latency is skipped,
 * counted and reported as file:line, never repaired. Writing is atomic. */
#include "measure/measure.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- column tables (the order is the order written) ---- */
enum {
    LC_DEVICE, LC_RUNTIME, LC_RUNTIME_VERSION, LC_PRECISION, LC_OP_KIND, LC_OP_TYPE, LC_BATCH,
    LC_INPUTS, LC_ATTRS, LC_LATENCY, LC_SPREAD, LC_REPS, LC_ENERGY, LC_MEMORY, LC_SOURCE, LC_DATE,
    LC__COUNT
};
static const char *const layer_cols[LC__COUNT] = {
    "device", "runtime", "runtime_version", "precision", "op_kind", "op_type", "batch", "inputs",
    "attrs", "latency_ms", "latency_spread_ms", "repetitions", "energy_j", "memory_bytes", "source",
    "date"};

enum {
    NC_MODEL, NC_FAMILY, NC_DEVICE, NC_RUNTIME, NC_RUNTIME_VERSION, NC_PRECISION, NC_BATCH,
    NC_INPUT_SHAPES, NC_LATENCY, NC_SPREAD, NC_REPS, NC_ENERGY, NC_PEAK_MEMORY, NC_SOURCE, NC_DATE,
    NC__COUNT
};
static const char *const net_cols[NC__COUNT] = {
    "model", "family", "device", "runtime", "runtime_version", "precision", "batch",
    "input_shapes", "latency_ms", "latency_spread_ms", "repetitions", "energy_j",
    "peak_memory_bytes", "source", "date"};

/* Maps header fields to schema columns: col_of[c] = field index of column c. */
static int map_header(const pp_csv_record *rec, const char *const *cols, int n_cols, int *col_of,
                      pp_err *err)
{
    for (int c = 0; c < n_cols; c++) col_of[c] = -1;
    for (int f = 0; f < rec->n_fields; f++) {
        int found = -1;
        for (int c = 0; c < n_cols; c++)
            if (strcmp(rec->fields[f], cols[c]) == 0) found = c;
        if (found < 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: unknown column '%s' (field %d)", rec->path,
                       rec->line, rec->fields[f], f + 1);
            return -1;
        }
        if (col_of[found] >= 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: duplicate column '%s'", rec->path,
                       rec->line, cols[found]);
            return -1;
        }
        col_of[found] = f;
    }
    for (int c = 0; c < n_cols; c++)
        if (col_of[c] < 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: missing column '%s'", rec->path, rec->line,
                       cols[c]);
            return -1;
        }
    return 0;
}

/* ---- field parsers: 0 ok, -1 bad (why filled) ---- */
static int why_set(char *why, size_t why_n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why_set(char *why, size_t why_n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_n, fmt, ap);
    va_end(ap);
    return -1;
}
#define WHY(...) why_set(why, why_n, __VA_ARGS__)

static int parse_pos_double(const char *s, const char *col, double *out, char *why, size_t why_n)
{
    if (!*s) return WHY("empty %s", col);
    if (pp_parse_double(s, out) != 0) return WHY("%s '%s' is not a finite number", col, s);
    if (!(*out > 0)) return WHY("%s %s is not > 0", col, s);
    return 0;
}

/* Optional: empty -> NaN. */
static int parse_opt_double(const char *s, const char *col, int allow_zero, double *out, char *why,
                            size_t why_n)
{
    if (!*s) {
        *out = NAN;
        return 0;
    }
    if (pp_parse_double(s, out) != 0) return WHY("%s '%s' is not a finite number", col, s);
    if (allow_zero ? !(*out >= 0) : !(*out > 0))
        return WHY("%s %s is not %s 0", col, s, allow_zero ? ">=" : ">");
    return 0;
}

/* Optional: empty -> -1. */
static int parse_opt_i64(const char *s, const char *col, int64_t min, int64_t *out, char *why,
                         size_t why_n)
{
    if (!*s) {
        *out = -1;
        return 0;
    }
    if (pp_parse_i64(s, out) != 0) return WHY("%s '%s' is not an integer", col, s);
    if (*out < min) return WHY("%s %s is below %lld", col, s, (long long)min);
    return 0;
}

static int parse_date(const char *s, char *why, size_t why_n)
{
    int ok = strlen(s) == 10 && s[4] == '-' && s[7] == '-';
    for (int i = 0; ok && i < 10; i++)
        if (i != 4 && i != 7 && !isdigit((unsigned char)s[i])) ok = 0;
    if (ok) {
        int mo = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
        ok = mo >= 1 && mo <= 12 && d >= 1 && d <= 31;
    }
    return ok ? 0 : WHY("date '%s' is not YYYY-MM-DD", s);
}

static int parse_name(const char *s, const char *col, char *why, size_t why_n)
{
    if (!*s) return WHY("empty %s", col);
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.-+", *p))
            return WHY("%s '%s' holds '%c' (allowed: letters, digits, _ . - +)", col, s, *p);
    return 0;
}

static int parse_shape(const char *s, int *rank, int64_t *dims)
{
    if (strcmp(s, "scalar") == 0) {
        *rank = 0;
        return 0;
    }
    int r = pp_parse_dims(s, dims, PP_MAX_RANK);
    if (r < 1) return -1;
    *rank = r;
    return 0;
}

int pp_measure_weight_first_ok(const char *op_type)
{
    return op_type && strcmp(op_type, "Concat") == 0;
}

int pp_measure_parse_inputs(const char *op_type, const char *s, pp_layer_input *out, int max,
                            char *why, size_t why_n)
{
    if (!*s) return WHY("empty inputs");
    int n = 0;
    char part[256];
    const char *p = s;
    for (;;) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len >= sizeof part) return WHY("input %d too long", n + 1);
        memcpy(part, p, len);
        part[len] = '\0';
        if (n >= max) return WHY("more than %d inputs", max);
        pp_layer_input *in = &out[n];
        memset(in, 0, sizeof *in);
        if (strcmp(part, "-") == 0) {
            in->role = '-';
            in->rank = -1;
        } else {
            if (len < 3 || (part[0] != 'x' && part[0] != 'w') || part[1] != ':')
                return WHY("input %d '%s' is not x:<dims>, w:<dims> or -", n + 1, part);
            in->role = part[0];
            if (parse_shape(part + 2, &in->rank, in->dims) != 0)
                return WHY("input %d '%s': bad dims (want e.g. 8x512x768 or scalar)", n + 1, part);
        }
        n++;
        if (!semi) break;
        p = semi + 1;
    }
    if (out[0].role != 'x') {
        if (!pp_measure_weight_first_ok(op_type))
            return WHY("first input must be an activation (x:...)");
        int has_x = 0;
        for (int i = 0; i < n; i++) has_x |= out[i].role == 'x';
        if (!has_x) return WHY("%s: no input is an activation (x:...)", op_type);
    }
    return n;
}

static int parse_attr_value(const char *type, const char *val, pp_arena *a, pp_layer_attr *at,
                            char *why, size_t why_n)
{
    if (strcmp(type, "i") == 0) {
        at->type = PP_ATTR_INT;
        if (pp_parse_i64(val, &at->i) != 0) return WHY("attribute %s: bad int '%s'", at->name, val);
    } else if (strcmp(type, "f") == 0) {
        at->type = PP_ATTR_FLOAT;
        if (pp_parse_double(val, &at->f) != 0)
            return WHY("attribute %s: bad float '%s'", at->name, val);
    } else if (strcmp(type, "s") == 0) {
        at->type = PP_ATTR_STRING;
        if (parse_name(val, at->name, why, why_n) != 0) return -1;
        at->s = pp_arena_strdup(a, val);
        if (!at->s) return WHY("out of memory");
    } else if (strcmp(type, "ints") == 0 || strcmp(type, "floats") == 0) {
        int is_int = type[0] == 'i';
        at->type = is_int ? PP_ATTR_INTS : PP_ATTR_FLOATS;
        char buf[64];
        const char *p = val;
        at->n = 0;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (len == 0 || len >= sizeof buf) return WHY("attribute %s: bad list '%s'", at->name, val);
            if (at->n >= PP_LAYER_MAX_INTS)
                return WHY("attribute %s: more than %d values", at->name, PP_LAYER_MAX_INTS);
            memcpy(buf, p, len);
            buf[len] = '\0';
            int bad = is_int ? pp_parse_i64(buf, &at->ints[at->n])
                             : pp_parse_double(buf, &at->floats[at->n]);
            if (bad) return WHY("attribute %s: bad value '%s'", at->name, buf);
            at->n++;
            if (!comma) break;
            p = comma + 1;
        }
    } else {
        return WHY("attribute %s: unknown type '%s' (i, f, s, ints, floats)", at->name, type);
    }
    return 0;
}

int pp_measure_parse_attrs(const char *s, pp_arena *a, pp_layer_attr *out, int max, char *why,
                           size_t why_n)
{
    int n = 0;
    if (!*s) return 0;
    char part[256];
    const char *p = s;
    for (;;) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len == 0 || len >= sizeof part) return WHY("attribute %d empty or too long", n + 1);
        if (n >= max) return WHY("more than %d attributes", max);
        memcpy(part, p, len);
        part[len] = '\0';
        char *colon = strchr(part, ':'), *eq = strchr(part, '=');
        if (!colon || !eq || eq < colon)
            return WHY("attribute '%s' is not name:type=value", part);
        *colon = '\0';
        *eq = '\0';
        if (parse_name(part, "attribute name", why, why_n) != 0) return -1;
        pp_layer_attr *at = &out[n];
        memset(at, 0, sizeof *at);
        for (int k = 0; k < n; k++)
            if (strcmp(out[k].name, part) == 0) return WHY("attribute %s given twice", part);
        at->name = pp_arena_strdup(a, part);
        if (!at->name) return WHY("out of memory");
        if (parse_attr_value(colon + 1, eq + 1, a, at, why, why_n) != 0) return -1;
        n++;
        if (!semi) break;
        p = semi + 1;
    }
    return n;
}

/* ---- layer tables ---- */
pp_layer_table *pp_measure_layer_table_new(const char *path)
{
    pp_layer_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->arena = pp_arena_new();
    if (!t->arena) {
        free(t);
        return NULL;
    }
    t->path = pp_arena_strdup(t->arena, path ? path : "(memory)");
    return t;
}

void pp_measure_layer_table_free(pp_layer_table *t)
{
    if (!t) return;
    free(t->rows);
    pp_arena_free(t->arena);
    free(t);
}

static const char *dup_or_null(pp_arena *a, const char *s, int *oom)
{
    if (!s) return NULL;
    const char *d = pp_arena_strdup(a, s);
    if (!d) *oom = 1;
    return d;
}

perfpred_status pp_measure_layer_table_add(pp_layer_table *t, const pp_layer_row *row, pp_err *err)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 256;
        pp_layer_row *r = realloc(t->rows, (size_t)cap * sizeof *r);
        if (!r) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
        t->rows = r;
        t->cap = cap;
    }
    pp_layer_row *d = &t->rows[t->n];
    *d = *row;
    int oom = 0;
    d->device = dup_or_null(t->arena, row->device, &oom);
    d->runtime = dup_or_null(t->arena, row->runtime, &oom);
    d->runtime_version = dup_or_null(t->arena, row->runtime_version ? row->runtime_version : "",
                                     &oom);
    d->op_type = dup_or_null(t->arena, row->op_type, &oom);
    d->source = dup_or_null(t->arena, row->source, &oom);
    d->date = dup_or_null(t->arena, row->date, &oom);
    for (int i = 0; i < row->n_attrs; i++) {
        d->attrs[i].name = dup_or_null(t->arena, row->attrs[i].name, &oom);
        d->attrs[i].s = dup_or_null(t->arena, row->attrs[i].s, &oom);
    }
    if (row->n_inputs > PP_LAYER_MAX_INPUTS) { /* the table's own copy, as of the strings */
        size_t k = (size_t)(row->n_inputs - PP_LAYER_MAX_INPUTS);
        d->more_inputs = pp_arena_array(t->arena, k, sizeof *d->more_inputs);
        if (d->more_inputs) memcpy(d->more_inputs, row->more_inputs, k * sizeof *d->more_inputs);
        else oom = 1;
    }
    if (oom) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
    t->n++;
    return PERFPRED_OK;
}

typedef struct layer_read {
    pp_layer_table *t;
    int col_of[LC__COUNT];
} layer_read;

/* Fills row from a record; 0 ok, -1 bad row (why filled). Strings point into the record. */
static int layer_row_from_record(const pp_csv_record *rec, const int *col_of, pp_arena *a,
                                 pp_layer_row *row, char *why, size_t why_n)
{
    const char *f[LC__COUNT];
    for (int c = 0; c < LC__COUNT; c++) f[c] = rec->fields[col_of[c]];
    memset(row, 0, sizeof *row);
    row->line = rec->line;
    if (parse_name(f[LC_DEVICE], "device", why, why_n) ||
        parse_name(f[LC_RUNTIME], "runtime", why, why_n) ||
        parse_name(f[LC_OP_TYPE], "op_type", why, why_n))
        return -1;
    row->device = f[LC_DEVICE];
    row->runtime = f[LC_RUNTIME];
    row->runtime_version = f[LC_RUNTIME_VERSION];
    row->op_type = f[LC_OP_TYPE];
    int prec = pp_precision_from_name(f[LC_PRECISION]);
    if (prec < 0) return WHY("unknown precision '%s'", f[LC_PRECISION]);
    row->precision = (pp_precision)prec;
    int kind = pp_op_kind_from_name(f[LC_OP_KIND]);
    if (kind <= 0) return WHY("unknown op_kind '%s'", f[LC_OP_KIND]);
    row->kind = (pp_op_kind)kind;
    if (pp_parse_i64(f[LC_BATCH], &row->batch) != 0 || row->batch < 1)
        return WHY("batch '%s' is not an integer >= 1", f[LC_BATCH]);
    pp_layer_input ins[PP_LAYER_MAX_ALL_INPUTS];
    int n = pp_measure_parse_inputs(row->op_type, f[LC_INPUTS], ins, PP_LAYER_MAX_ALL_INPUTS, why,
                                    why_n);
    if (n < 0) return -1;
    if (pp_layer_row_set_inputs(row, ins, n, a) != 0) return WHY("out of memory");
    n = pp_measure_parse_attrs(f[LC_ATTRS], a, row->attrs, PP_LAYER_MAX_ATTRS, why, why_n);
    if (n < 0) return -1;
    row->n_attrs = n;
    if (parse_pos_double(f[LC_LATENCY], "latency_ms", &row->latency_ms, why, why_n) ||
        parse_opt_double(f[LC_SPREAD], "latency_spread_ms", 1, &row->latency_spread_ms, why,
                         why_n) ||
        parse_opt_i64(f[LC_REPS], "repetitions", 1, &row->repetitions, why, why_n) ||
        parse_opt_double(f[LC_ENERGY], "energy_j", 0, &row->energy_j, why, why_n) ||
        parse_opt_i64(f[LC_MEMORY], "memory_bytes", 0, &row->memory_bytes, why, why_n))
        return -1;
    if (!*f[LC_SOURCE]) return WHY("empty source");
    row->source = f[LC_SOURCE];
    if (parse_date(f[LC_DATE], why, why_n) != 0) return -1;
    row->date = f[LC_DATE];
    return 0;
}

static int layer_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    layer_read *lr = user;
    if (is_header) return map_header(rec, layer_cols, LC__COUNT, lr->col_of, err);
    if (rec->n_fields != LC__COUNT) {
        pp_measure_bad_row(&lr->t->bad, lr->t->arena, rec->path, rec->line,
                           "%d fields, the header has %d", rec->n_fields, LC__COUNT);
        return 0;
    }
    pp_layer_row row;
    char why[256];
    if (layer_row_from_record(rec, lr->col_of, lr->t->arena, &row, why, sizeof why) != 0) {
        pp_measure_bad_row(&lr->t->bad, lr->t->arena, rec->path, rec->line, "%s", why);
        return 0;
    }
    return pp_measure_layer_table_add(lr->t, &row, err) == PERFPRED_OK ? 0 : -1;
}

perfpred_status pp_measure_layer_csv_read(const char *path, pp_layer_table **out, pp_err *err)
{
    *out = NULL;
    layer_read lr = {0};
    lr.t = pp_measure_layer_table_new(path);
    if (!lr.t) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    perfpred_status st = pp_measure_csv_read(path, layer_record, &lr, err);
    if (st != PERFPRED_OK) {
        pp_measure_layer_table_free(lr.t);
        return st;
    }
    *out = lr.t;
    return PERFPRED_OK;
}

/* ---- layer writing ---- */
static void put_dims(pp_strbuf *b, int rank, const int64_t *dims)
{
    if (rank == 0) {
        pp_strbuf_put(b, "scalar");
        return;
    }
    for (int d = 0; d < rank; d++) pp_strbuf_printf(b, d ? "x%lld" : "%lld", (long long)dims[d]);
}

static void put_opt_double(pp_strbuf *b, double v)
{
    if (isnan(v)) return;
    char num[40];
    pp_fmt_double(num, sizeof num, v);
    pp_strbuf_put(b, num);
}

static void put_opt_i64(pp_strbuf *b, int64_t v)
{
    if (v >= 0) pp_strbuf_printf(b, "%lld", (long long)v);
}

void pp_measure_put_attr(pp_strbuf *b, const pp_layer_attr *a)
{
    char num[40];
    pp_strbuf_put(b, a->name);
    switch (a->type) {
    case PP_ATTR_INT: pp_strbuf_printf(b, ":i=%lld", (long long)a->i); break;
    case PP_ATTR_FLOAT:
        pp_fmt_double(num, sizeof num, a->f);
        pp_strbuf_printf(b, ":f=%s", num);
        break;
    case PP_ATTR_STRING: pp_strbuf_printf(b, ":s=%s", a->s); break;
    case PP_ATTR_INTS:
        pp_strbuf_put(b, ":ints=");
        for (int k = 0; k < a->n; k++)
            pp_strbuf_printf(b, k ? ",%lld" : "%lld", (long long)a->ints[k]);
        break;
    case PP_ATTR_FLOATS:
        pp_strbuf_put(b, ":floats=");
        for (int k = 0; k < a->n; k++) {
            pp_fmt_double(num, sizeof num, a->floats[k]);
            pp_strbuf_printf(b, k ? ",%s" : "%s", num);
        }
        break;
    default: break;
    }
}

void pp_measure_put_inputs(pp_strbuf *b, const pp_layer_row *r)
{
    for (int k = 0; k < r->n_inputs; k++) {
        const pp_layer_input *in = pp_layer_row_input(r, k);
        if (k) pp_strbuf_put(b, ";");
        if (in->role == '-') {
            pp_strbuf_put(b, "-");
            continue;
        }
        pp_strbuf_printf(b, "%c:", in->role);
        put_dims(b, in->rank, in->dims);
    }
}

void pp_measure_row_add_input(pp_layer_row *row, char role, int rank, const int64_t *dims)
{
    PP_ASSERT(row->n_inputs < PP_LAYER_MAX_INPUTS); /* importers' rows: a handful of inputs */
    pp_layer_input *in = &row->inputs[row->n_inputs++];
    memset(in, 0, sizeof *in);
    in->role = role;
    in->rank = rank;
    for (int i = 0; i < rank; i++) in->dims[i] = dims[i];
}

pp_layer_attr *pp_measure_row_add_attr(pp_layer_row *row, const char *name, int type)
{
    pp_layer_attr *a = &row->attrs[row->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = type;
    return a;
}

perfpred_status pp_measure_layer_csv_format(const pp_layer_row *rows, int n, char **out,
                                            size_t *len, pp_err *err)
{
    pp_strbuf b = {0};
    for (int c = 0; c < LC__COUNT; c++) {
        if (c) pp_strbuf_put(&b, ",");
        pp_strbuf_put(&b, layer_cols[c]);
    }
    pp_strbuf_put(&b, "\n");
    for (int i = 0; i < n; i++) {
        const pp_layer_row *r = &rows[i];
        pp_strbuf tmp = {0};
        pp_strbuf_csv_field(&b, r->device);
        pp_strbuf_put(&b, ",");
        pp_strbuf_csv_field(&b, r->runtime);
        pp_strbuf_put(&b, ",");
        pp_strbuf_csv_field(&b, r->runtime_version);
        pp_strbuf_printf(&b, ",%s,%s,", pp_precision_name(r->precision), pp_op_kind_name(r->kind));
        pp_strbuf_csv_field(&b, r->op_type);
        pp_strbuf_printf(&b, ",%lld,", (long long)r->batch);
        pp_measure_put_inputs(&tmp, r);
        pp_strbuf_csv_field(&b, tmp.data);
        pp_strbuf_put(&b, ",");
        tmp.len = 0;
        if (tmp.data) tmp.data[0] = '\0';
        for (int k = 0; k < r->n_attrs; k++) {
            if (k) pp_strbuf_put(&tmp, ";");
            pp_measure_put_attr(&tmp, &r->attrs[k]);
        }
        pp_strbuf_csv_field(&b, tmp.data);
        if (tmp.oom) b.oom = 1;
        free(tmp.data);
        pp_strbuf_put(&b, ",");
        put_opt_double(&b, r->latency_ms);
        pp_strbuf_put(&b, ",");
        put_opt_double(&b, r->latency_spread_ms);
        pp_strbuf_put(&b, ",");
        put_opt_i64(&b, r->repetitions);
        pp_strbuf_put(&b, ",");
        put_opt_double(&b, r->energy_j);
        pp_strbuf_put(&b, ",");
        put_opt_i64(&b, r->memory_bytes);
        pp_strbuf_put(&b, ",");
        pp_strbuf_csv_field(&b, r->source);
        pp_strbuf_put(&b, ",");
        pp_strbuf_csv_field(&b, r->date);
        pp_strbuf_put(&b, "\n");
    }
    if (b.oom) {
        free(b.data);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "layer CSV: out of memory");
    }
    *out = b.data;
    *len = b.len;
    return PERFPRED_OK;
}

perfpred_status pp_measure_layer_csv_write(const char *path, const pp_layer_row *rows, int n,
                                           pp_err *err)
{
    char *text;
    size_t len;
    perfpred_status st = pp_measure_layer_csv_format(rows, n, &text, &len, err);
    if (st != PERFPRED_OK) return st;
    st = pp_write_file_atomic(path, text, len, err);
    free(text);
    return st;
}

/* ---- network tables ---- */
void pp_measure_net_table_free(pp_net_table *t)
{
    if (!t) return;
    free(t->rows);
    pp_arena_free(t->arena);
    free(t);
}

static int parse_input_shapes(const char *s, char *why, size_t why_n)
{
    if (!*s) return 0;
    char part[256];
    const char *p = s;
    for (;;) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len == 0 || len >= sizeof part) return WHY("input_shapes: empty or too long entry");
        memcpy(part, p, len);
        part[len] = '\0';
        char *colon = strrchr(part, ':');
        int64_t dims[PP_MAX_RANK];
        int rank;
        if (!colon || colon == part || parse_shape(colon + 1, &rank, dims) != 0)
            return WHY("input_shapes entry '%s' is not name:dims", part);
        if (!semi) break;
        p = semi + 1;
    }
    return 0;
}

typedef struct net_read {
    pp_net_table *t;
    int col_of[NC__COUNT];
} net_read;

static int net_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    net_read *nr = user;
    pp_net_table *t = nr->t;
    if (is_header) return map_header(rec, net_cols, NC__COUNT, nr->col_of, err);
    if (rec->n_fields != NC__COUNT) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%d fields, the header has %d",
                           rec->n_fields, NC__COUNT);
        return 0;
    }
    const char *f[NC__COUNT];
    for (int c = 0; c < NC__COUNT; c++) f[c] = rec->fields[nr->col_of[c]];
    pp_net_row r;
    memset(&r, 0, sizeof r);
    r.line = rec->line;
    char why[256];
    size_t why_n = sizeof why;
    int bad = 0;
    int prec = pp_precision_from_name(f[NC_PRECISION]);
    if (!*f[NC_MODEL]) bad = WHY("empty model");
    else if (parse_name(f[NC_FAMILY], "family", why, why_n) ||
             parse_name(f[NC_DEVICE], "device", why, why_n) ||
             parse_name(f[NC_RUNTIME], "runtime", why, why_n))
        bad = -1;
    else if (prec < 0) bad = WHY("unknown precision '%s'", f[NC_PRECISION]);
    else if (pp_parse_i64(f[NC_BATCH], &r.batch) != 0 || r.batch < 1)
        bad = WHY("batch '%s' is not an integer >= 1", f[NC_BATCH]);
    else if (parse_input_shapes(f[NC_INPUT_SHAPES], why, why_n) ||
             parse_pos_double(f[NC_LATENCY], "latency_ms", &r.latency_ms, why, why_n) ||
             parse_opt_double(f[NC_SPREAD], "latency_spread_ms", 1, &r.latency_spread_ms, why,
                              why_n) ||
             parse_opt_i64(f[NC_REPS], "repetitions", 1, &r.repetitions, why, why_n) ||
             parse_opt_double(f[NC_ENERGY], "energy_j", 0, &r.energy_j, why, why_n) ||
             parse_opt_i64(f[NC_PEAK_MEMORY], "peak_memory_bytes", 0, &r.peak_memory_bytes, why,
                           why_n))
        bad = -1;
    else if (!*f[NC_SOURCE]) bad = WHY("empty source");
    else if (parse_date(f[NC_DATE], why, why_n)) bad = -1;
    if (bad) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%s", why);
        return 0;
    }
    r.precision = (pp_precision)prec;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        pp_net_row *nr2 = realloc(t->rows, (size_t)cap * sizeof *nr2);
        if (!nr2) {
            pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
            return -1;
        }
        t->rows = nr2;
        t->cap = cap;
    }
    const char **dst[] = {&r.model, &r.family, &r.device, &r.runtime, &r.runtime_version,
                          &r.input_shapes, &r.source, &r.date};
    const int src[] = {NC_MODEL, NC_FAMILY, NC_DEVICE, NC_RUNTIME, NC_RUNTIME_VERSION,
                       NC_INPUT_SHAPES, NC_SOURCE, NC_DATE};
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        *dst[i] = pp_arena_strdup(t->arena, f[src[i]]);
        if (!*dst[i]) {
            pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
            return -1;
        }
    }
    t->rows[t->n++] = r;
    return 0;
}

perfpred_status pp_measure_net_csv_read(const char *path, pp_net_table **out, pp_err *err)
{
    *out = NULL;
    net_read nr = {0};
    nr.t = calloc(1, sizeof *nr.t);
    if (!nr.t || !(nr.t->arena = pp_arena_new())) {
        free(nr.t);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    nr.t->path = pp_arena_strdup(nr.t->arena, path);
    perfpred_status st = pp_measure_csv_read(path, net_record, &nr, err);
    if (st != PERFPRED_OK) {
        pp_measure_net_table_free(nr.t);
        return st;
    }
    *out = nr.t;
    return PERFPRED_OK;
}

perfpred_status pp_measure_net_csv_write(const char *path, const pp_net_row *rows, int n,
                                         pp_err *err)
{
    pp_strbuf b = {0};
    for (int c = 0; c < NC__COUNT; c++) {
        if (c) pp_strbuf_put(&b, ",");
        pp_strbuf_put(&b, net_cols[c]);
    }
    pp_strbuf_put(&b, "\n");
    for (int i = 0; i < n; i++) {
        const pp_net_row *r = &rows[i];
        const char *s1[] = {r->model, r->family, r->device, r->runtime, r->runtime_version};
        for (int k = 0; k < 5; k++) {
            pp_strbuf_csv_field(&b, s1[k]);
            pp_strbuf_put(&b, ",");
        }
        pp_strbuf_printf(&b, "%s,%lld,", pp_precision_name(r->precision), (long long)r->batch);
        pp_strbuf_csv_field(&b, r->input_shapes);
        pp_strbuf_put(&b, ",");
        put_opt_double(&b, r->latency_ms);
        pp_strbuf_put(&b, ",");
        put_opt_double(&b, r->latency_spread_ms);
        pp_strbuf_put(&b, ",");
        put_opt_i64(&b, r->repetitions);
        pp_strbuf_put(&b, ",");
        put_opt_double(&b, r->energy_j);
        pp_strbuf_put(&b, ",");
        put_opt_i64(&b, r->peak_memory_bytes);
        pp_strbuf_put(&b, ",");
        pp_strbuf_csv_field(&b, r->source);
        pp_strbuf_put(&b, ",");
        pp_strbuf_csv_field(&b, r->date);
        pp_strbuf_put(&b, "\n");
    }
    if (b.oom) {
        free(b.data);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    perfpred_status st = pp_write_file_atomic(path, b.data, b.len, err);
    free(b.data);
    return st;
}

int pp_measure_source_machine(const char *source, char *out, size_t n)
{
    const char *m = source ? strstr(source, "machine=") : NULL;
    if (!m || n == 0) return 0;
    m += strlen("machine=");
    size_t k = strcspn(m, ";");
    if (k >= n) k = n - 1;
    memcpy(out, m, k);
    out[k] = '\0';
    return 1;
}

/* Configuration of a row: op type, inputs and attributes (attributes in row order; rows of one
 * runner plan write them identically). Repeats of one configuration share a side of a fit's split,
 * and the adaptive plan reproduces that split from the same keys. */
void pp_measure_config_key(const pp_layer_row *r, pp_strbuf *b)
{
    char num[40];
    pp_strbuf_put(b, r->op_type);
    for (int i = 0; i < r->n_inputs; i++) {
        const pp_layer_input *in = pp_layer_row_input(r, i); /* a Concat's may pass inputs[] */
        pp_strbuf_printf(b, "|%c", in->role);
        for (int d = 0; d < in->rank; d++) pp_strbuf_printf(b, "x%lld", (long long)in->dims[d]);
    }
    for (int i = 0; i < r->n_attrs; i++) {
        const pp_layer_attr *a = &r->attrs[i];
        pp_strbuf_printf(b, "|%s=", a->name);
        switch (a->type) {
        case PP_ATTR_INT: pp_strbuf_printf(b, "%lld", (long long)a->i); break;
        case PP_ATTR_FLOAT:
            pp_fmt_double(num, sizeof num, a->f);
            pp_strbuf_put(b, num);
            break;
        case PP_ATTR_STRING: pp_strbuf_put(b, a->s); break;
        default:
            for (int k = 0; k < a->n; k++) {
                if (a->type == PP_ATTR_INTS) pp_strbuf_printf(b, ",%lld", (long long)a->ints[k]);
                else {
                    pp_fmt_double(num, sizeof num, a->floats[k]);
                    pp_strbuf_printf(b, ",%s", num);
                }
            }
        }
    }
}

int pp_measure_family_listed(const char *list, const char *family)
{
    if (!list || !family || !family[0]) return 0;
    size_t n = strlen(family), len;
    for (const char *c = list, *q; (q = pp_list_item(&c, &len));)
        if (len == n && !strncmp(q, family, n)) return 1;
    return 0;
}
