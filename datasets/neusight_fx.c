/* datasets/neusight_fx.c: NeuSight's torch.fx node tables, read strictly. The Python-repr columns
 * (_args, _kwargs, _input_nodes, shapes) go through a small literal parser; every row is checked
 * against the rows it reads (names defined above, input shapes equal to their producers' output
 * shapes); bad rows are kept, flagged and listed with file:line. eval/neusight_models.c turns
 * a table into a graph and judges it. */
#include "datasets/datasets.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ Python literals ==== */

typedef struct pvp {
    const char *p;
    pp_arena *a;
    char *why;
    size_t why_n;
    int depth, fail;
} pvp;

static pp_pv *pv_fail(pvp *s, const char *msg)
{
    if (!s->fail) snprintf(s->why, s->why_n, "%s at '%.24s'", msg, s->p);
    s->fail = 1;
    return NULL;
}

static void pv_skip(pvp *s)
{
    while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r') s->p++;
}

static int is_id0(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static int is_id(char c) { return is_id0(c) || (c >= '0' && c <= '9') || c == '.'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static pp_pv *pv_value(pvp *s);

/* Items up to `close` (a trailing comma allowed); dict items are key ':' value pairs. */
static int pv_items(pvp *s, char close, int dict, pp_pv *out)
{
    int cap = 0, n = 0;
    pp_pv *tmp = NULL;
    int per = dict ? 2 : 1;
    pv_skip(s);
    while (*s->p != close) {
        if (n + per > cap) {
            cap = cap ? cap * 2 : 8;
            pp_pv *t2 = realloc(tmp, (size_t)cap * sizeof *t2);
            if (!t2) {
                free(tmp);
                pv_fail(s, "out of memory");
                return -1;
            }
            tmp = t2;
        }
        pp_pv *v = pv_value(s);
        if (!v) break;
        tmp[n++] = *v;
        if (dict) {
            pv_skip(s);
            if (*s->p != ':') {
                pv_fail(s, "expected ':'");
                break;
            }
            s->p++;
            if (!(v = pv_value(s))) break;
            tmp[n++] = *v;
        }
        pv_skip(s);
        if (*s->p == ',') {
            s->p++;
            pv_skip(s);
        } else if (*s->p != close) {
            pv_fail(s, "expected ',' or a closing bracket");
            break;
        }
    }
    if (s->fail) {
        free(tmp);
        return -1;
    }
    s->p++;
    out->n = n / per;
    out->items = n ? pp_arena_array(s->a, (size_t)n, sizeof *tmp) : NULL;
    if (n && !out->items) {
        free(tmp);
        pv_fail(s, "out of memory");
        return -1;
    }
    if (n) memcpy(out->items, tmp, (size_t)n * sizeof *tmp);
    free(tmp);
    return 0;
}

static pp_pv *pv_value(pvp *s)
{
    pv_skip(s);
    if (++s->depth > 32) return pv_fail(s, "nested too deeply");
    pp_pv *v = pp_arena_alloc(s->a, sizeof *v);
    if (!v) return pv_fail(s, "out of memory");
    const char *p = s->p;
    char c = *p;
    if (c == '(' || c == '[' || c == '{') {
        s->p++;
        v->k = c == '(' ? PP_PV_TUPLE : c == '[' ? PP_PV_LIST : PP_PV_DICT;
        if (pv_items(s, c == '(' ? ')' : c == '[' ? ']' : '}', c == '{', v)) return NULL;
    } else if (c == '\'' || c == '"') {
        char buf[512];
        size_t k = 0;
        for (p++; *p && *p != c; p++) {
            if (*p == '\\' && p[1]) p++;
            if (k + 1 >= sizeof buf) return pv_fail(s, "string too long");
            buf[k++] = *p;
        }
        if (*p != c) return pv_fail(s, "unterminated string");
        buf[k] = '\0';
        s->p = p + 1;
        v->k = PP_PV_STR;
        if (!(v->s = pp_arena_strdup(s->a, buf))) return pv_fail(s, "out of memory");
    } else if (c == '.' && p[1] == '.' && p[2] == '.') {
        s->p += 3;
        v->k = PP_PV_NAME;
        v->s = "Ellipsis";
    } else if (is_digit(c) ||
               ((c == '-' || c == '+' || c == '.') && (is_digit(p[1]) || p[1] == '.'))) {
        const char *e = p + 1;
        int fl = c == '.';
        while (is_digit(*e) || *e == '.' || *e == 'e' || *e == 'E' ||
               ((*e == '-' || *e == '+') && (e[-1] == 'e' || e[-1] == 'E'))) {
            fl |= *e == '.' || *e == 'e' || *e == 'E';
            e++;
        }
        char num[64];
        if ((size_t)(e - p) >= sizeof num) return pv_fail(s, "number too long");
        memcpy(num, p, (size_t)(e - p));
        num[e - p] = '\0';
        if (fl) {
            v->k = PP_PV_FLOAT;
            if (pp_parse_double(num, &v->f)) return pv_fail(s, "bad number");
        } else {
            v->k = PP_PV_INT;
            if (pp_parse_i64(num, &v->i)) return pv_fail(s, "bad integer");
            v->f = (double)v->i;
        }
        s->p = e;
    } else if (is_id0(c) || ((c == '-' || c == '+') && is_id0(p[1]))) {
        int neg = c == '-';
        if (c == '-' || c == '+') p++;
        const char *e = p;
        while (is_id(*e)) e++;
        char *id = pp_arena_strndup(s->a, p, (size_t)(e - p));
        if (!id) return pv_fail(s, "out of memory");
        s->p = e;
        if (!strcmp(id, "inf") || !strcmp(id, "nan")) {
            v->k = PP_PV_FLOAT;
            v->f = id[0] == 'n' ? NAN : neg ? -INFINITY : INFINITY;
        } else if (c == '-' || c == '+') {
            return pv_fail(s, "sign before a name");
        } else if (!strcmp(id, "None")) {
            v->k = PP_PV_NONE;
        } else if (!strcmp(id, "True") || !strcmp(id, "False")) {
            v->k = PP_PV_BOOL;
            v->i = id[0] == 'T';
        } else if (*s->p == '(') {
            s->p++;
            v->k = PP_PV_CALL;
            v->s = id;
            if (pv_items(s, ')', 0, v)) return NULL;
        } else {
            v->k = PP_PV_NAME;
            v->s = id;
        }
    } else {
        return pv_fail(s, c ? "unexpected character" : "unexpected end");
    }
    s->depth--;
    return v;
}

pp_pv *pp_datasets_pv_parse(const char *text, pp_arena *a, char *why, size_t why_n)
{
    pvp s = {text, a, why, why_n, 0, 0};
    pp_pv *v = pv_value(&s);
    if (!v) return NULL;
    pv_skip(&s);
    if (*s.p) return pv_fail(&s, "trailing text");
    return v;
}

/* ================================================================ the node table ==== */

int pp_datasets_fx_find(const pp_fx_table *t, const char *name)
{
    return t ? pp_strmap_get(&t->index, name) : -1;
}

void pp_datasets_fx_free(pp_fx_table *t)
{
    if (!t) return;
    pp_strmap_free(&t->index);
    free(t->rows);
    pp_arena_free(t->arena);
    free(t);
}

enum {
    C_OP, C_TARGET, C_INPUT_NODES, C_ARGS, C_KWARGS, C_META, C_INPUT_SHAPES, C_INPUT_CONTIG,
    C_OUTPUT_SHAPE, C_DTYPE, C_LATENCY, C_FW_LATENCY, C_NAME, C__REQ
};
static const char *const req_cols[C__REQ] = {
    "op", "target", "_input_nodes", "_args", "_kwargs", "meta", "input_shapes",
    "input_contiguous", "output_shape", "dtype", "latency", "fw_latency", "Name"};
/* columns NeuSight writes that carry nothing perfpred needs */
static const char *const ignored_cols[] = {"users", "type", "_prev", "_next", "_erased",
                                           "_repr_fn", "contiguous", "bw_latency", "acc_latency"};

typedef struct fx_read {
    pp_fx_table *t;
    int col[C__REQ];
    int n_cols;
} fx_read;

static const struct {
    const char *name;
    int32_t dt;
} torch_dtypes[] = {
    {"torch.float32", PP_DT_FLOAT}, {"torch.float", PP_DT_FLOAT}, {"torch.float64", PP_DT_DOUBLE},
    {"torch.double", PP_DT_DOUBLE}, {"torch.float16", PP_DT_FLOAT16}, {"torch.half", PP_DT_FLOAT16},
    {"torch.bfloat16", PP_DT_BFLOAT16}, {"torch.int64", PP_DT_INT64}, {"torch.long", PP_DT_INT64},
    {"torch.int32", PP_DT_INT32}, {"torch.int", PP_DT_INT32}, {"torch.int16", PP_DT_INT16},
    {"torch.int8", PP_DT_INT8}, {"torch.uint8", PP_DT_UINT8}, {"torch.bool", PP_DT_BOOL},
};

static int dtype_of(const char *s, int32_t *out)
{
    for (size_t i = 0; i < sizeof torch_dtypes / sizeof torch_dtypes[0]; i++)
        if (!strcmp(s, torch_dtypes[i].name)) {
            *out = torch_dtypes[i].dt;
            return 0;
        }
    return -1;
}

static int header(const pp_csv_record *rec, fx_read *r, pp_err *err)
{
    for (int c = 0; c < C__REQ; c++) r->col[c] = -1;
    r->n_cols = rec->n_fields;
    for (int f = 0; f < rec->n_fields; f++) {
        const char *h = rec->fields[f];
        int known = 0;
        for (int c = 0; c < C__REQ; c++)
            if (!strcmp(h, req_cols[c])) {
                if (r->col[c] >= 0) {
                    pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: duplicate column '%s'", rec->path,
                               rec->line, h);
                    return -1;
                }
                r->col[c] = f;
                known = 1;
            }
        for (size_t k = 0; k < sizeof ignored_cols / sizeof ignored_cols[0]; k++)
            known |= !strcmp(h, ignored_cols[k]);
        if (!known) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: unknown column '%s'", rec->path, rec->line,
                       h);
            return -1;
        }
    }
    for (int c = 0; c < C__REQ; c++)
        if (r->col[c] < 0) {
            pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: required column '%s' is missing", rec->path,
                       rec->line, req_cols[c]);
            return -1;
        }
    return 0;
}

/* A list/tuple of non-negative ints as a shape. */
static int pv_shape(const pp_pv *v, pp_fx_shape *s)
{
    if (!v || (v->k != PP_PV_TUPLE && v->k != PP_PV_LIST) || v->n > PP_MAX_RANK) return -1;
    s->rank = v->n;
    for (int i = 0; i < v->n; i++) {
        if (v->items[i].k != PP_PV_INT || v->items[i].i < 0) return -1;
        s->dims[i] = v->items[i].i;
    }
    return 0;
}

void pp_datasets_fx_shape_str(const pp_fx_shape *s, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < s->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)s->dims[i]);
    if (k < n) snprintf(buf + k, n - k, ")");
}

/* The module path ending in ".0" (the first block of a ModuleList) and the class of `target` from
 * meta's nn_module_stack: "('bert.encoder.layer.0', <class '...BertLayer'>), (...)". */
static int parse_meta(const char *meta, const char *target, pp_arena *a, int *in_block,
                      const char **cls)
{
    *in_block = 0;
    *cls = NULL;
    const char *p = strstr(meta, "'nn_module_stack'");
    if (!p) return 0;
    const char *end = strstr(p, "])"); /* OrderedDict([(path, <class ...>), ...]) */
    if (!end) return -1;
    while ((p = strstr(p, "('")) != NULL && p < end) {
        const char *ps = p + 2, *pe = strchr(ps, '\'');
        if (!pe || strncmp(pe, "', <class '", 11) != 0) return -1;
        const char *cs = pe + 11, *ce = strchr(cs, '\'');
        if (!ce) return -1;
        size_t pl = (size_t)(pe - ps);
        if (pl >= 2 && ps[pl - 1] == '0' && ps[pl - 2] == '.') *in_block = 1;
        if (target && strlen(target) == pl && !strncmp(ps, target, pl)) {
            const char *dot = cs;
            for (const char *q = cs; q < ce; q++)
                if (*q == '.') dot = q + 1;
            if (!(*cls = pp_arena_strndup(a, dot, (size_t)(ce - dot)))) return -1;
        }
        p = ce;
    }
    return 0;
}

/* Short callee of a call_function target: "<built-in function add>" -> "add", "<built-in method
 * matmul of type object at 0x..>" -> "matmul", "<function softmax at 0x..>" -> "softmax",
 * "<class 'torch.finfo'>" -> "torch.finfo", "<method 'x' of ...>" -> "x"; else the last dotted
 * part. */
static const char *short_fn(pp_arena *a, const char *target)
{
    static const char *const pre[] = {"<built-in function ", "<built-in method ", "<function ",
                                      "<class '", "<method '"};
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
        size_t n = strlen(pre[i]);
        if (strncmp(target, pre[i], n) != 0) continue;
        const char *s = target + n, *e = s;
        while (*e && *e != ' ' && *e != '>' && *e != '\'') e++;
        return pp_arena_strndup(a, s, (size_t)(e - s));
    }
    const char *dot = strrchr(target, '.');
    return dot ? dot + 1 : target;
}

const char *const pp_datasets_fx_op_names[] = {"placeholder", "get_attr", "call_function", "call_method",
                                       "call_module", "output"};

/* Fills row from the record; returns 0, or -1 with a reason in why (row->bad), or -2 on OOM. */
static int row_from_record(fx_read *r, const pp_csv_record *rec, pp_fx_row *row, char *why,
                           size_t wn)
{
    pp_fx_table *t = r->t;
    pp_arena *a = t->arena;
    const char *f[C__REQ];
    for (int c = 0; c < C__REQ; c++) f[c] = rec->fields[r->col[c]];
    char pw[160];
#define BAD(...) do { snprintf(why, wn, __VA_ARGS__); return -1; } while (0)
    if (!f[C_NAME][0]) BAD("empty Name");
    for (const char *q = f[C_NAME]; *q; q++)
        if (!is_id(*q) || *q == '.') BAD("Name '%s' is not an identifier", f[C_NAME]);
    if (!(row->name = pp_arena_strdup(a, f[C_NAME])) ||
        !(row->target = pp_arena_strdup(a, f[C_TARGET])))
        return -2;
    int op = -1;
    for (int k = 0; k < 6; k++)
        if (!strcmp(f[C_OP], pp_datasets_fx_op_names[k])) op = k;
    if (op < 0) BAD("unknown op '%s'", f[C_OP]);
    row->op = (pp_fx_op)op;
    if (pp_strmap_get(&t->index, row->name) >= 0) BAD("duplicate Name '%s'", row->name);
    if (f[C_DTYPE][0] && dtype_of(f[C_DTYPE], &row->dtype)) BAD("unknown dtype '%s'", f[C_DTYPE]);
    if (pp_parse_double(f[C_LATENCY], &row->latency_ms) || row->latency_ms < 0)
        BAD("latency '%s' is not a number >= 0", f[C_LATENCY]);
    if (pp_parse_double(f[C_FW_LATENCY], &row->fw_latency_ms) || row->fw_latency_ms < 0)
        BAD("fw_latency '%s' is not a number >= 0", f[C_FW_LATENCY]);
    pp_pv *v;
    if (!(v = pp_datasets_pv_parse(f[C_OUTPUT_SHAPE], a, pw, sizeof pw)) || pv_shape(v, &row->out))
        BAD("output_shape '%s' is not a shape", f[C_OUTPUT_SHAPE]);
    if (!(row->args = pp_datasets_pv_parse(f[C_ARGS], a, pw,
                                           sizeof pw)) || row->args->k != PP_PV_TUPLE)
        BAD("_args: %s", row->args ? "not a tuple" : pw);
    if (!(row->kwargs = pp_datasets_pv_parse(f[C_KWARGS], a, pw,
                                             sizeof pw)) || row->kwargs->k != PP_PV_DICT)
        BAD("_kwargs: %s", row->kwargs ? "not a dict" : pw);
    pp_pv *nodes = pp_datasets_pv_parse(f[C_INPUT_NODES], a, pw, sizeof pw);
    if (!nodes || nodes->k != PP_PV_DICT) BAD("_input_nodes: %s", nodes ? "not a dict" : pw);
    pp_pv *shapes = pp_datasets_pv_parse(f[C_INPUT_SHAPES], a, pw, sizeof pw);
    if (!shapes || shapes->k != PP_PV_LIST) BAD("input_shapes: %s", shapes ? "not a list" : pw);
    pp_pv *contig = pp_datasets_pv_parse(f[C_INPUT_CONTIG], a, pw, sizeof pw);
    if (!contig || contig->k != PP_PV_LIST) BAD("input_contiguous: %s", contig ? "not a list" : pw);
    int n = nodes->n;
    if (shapes->n != n || contig->n != n)
        BAD("%d input nodes but %d input_shapes and %d input_contiguous", n, shapes->n, contig->n);
    row->n_in = n;
    if (n) {
        row->in_names = pp_arena_array(a, (size_t)n, sizeof *row->in_names);
        row->in_row = pp_arena_array(a, (size_t)n, sizeof *row->in_row);
        row->in_shape = pp_arena_array(a, (size_t)n, sizeof *row->in_shape);
        row->in_contig = pp_arena_array(a, (size_t)n, 1);
        if (!row->in_names || !row->in_row || !row->in_shape || !row->in_contig) return -2;
    }
    for (int i = 0; i < n; i++) {
        const pp_pv *key = &nodes->items[2 * i];
        if (key->k != PP_PV_NAME || nodes->items[2 * i + 1].k != PP_PV_NONE)
            BAD("_input_nodes entry %d is not 'name: None'", i);
        row->in_names[i] = key->s;
        if ((row->in_row[i] = pp_strmap_get(&t->index, key->s)) < 0)
            BAD("input '%s' is not defined by an earlier row", key->s);
        if (pv_shape(&shapes->items[i], &row->in_shape[i]))
            BAD("input_shapes entry %d is not a shape", i);
        if (contig->items[i].k != PP_PV_BOOL) BAD("input_contiguous entry %d is not True/False", i);
        row->in_contig[i] = (unsigned char)contig->items[i].i;
        const pp_fx_row *src = &t->rows[row->in_row[i]];
        int same = !src->bad && src->out.rank == row->in_shape[i].rank;
        for (int d = 0; same && d < src->out.rank; d++)
            same = src->out.dims[d] == row->in_shape[i].dims[d];
        if (!src->bad && !same) {
            char b1[96], b2[96];
            pp_datasets_fx_shape_str(&row->in_shape[i], b1, sizeof b1);
            pp_datasets_fx_shape_str(&src->out, b2, sizeof b2);
            BAD("input '%s' has shape %s here but its row (line %d) says %s", key->s, b1, src->line,
                b2);
        }
    }
    const char *cls = NULL;
    if (parse_meta(f[C_META], row->op == PP_FX_CALL_MODULE ? row->target : NULL, a,
                   &row->in_block, &cls))
        BAD("meta: malformed nn_module_stack");
    if (row->op == PP_FX_CALL_MODULE) {
        if (!cls) BAD("meta names no class for module '%s'", row->target);
        row->fn = cls;
    } else if (row->op == PP_FX_CALL_FUNCTION) {
        if (!(row->fn = short_fn(a, row->target))) return -2;
    } else {
        row->fn = row->target;
    }
#undef BAD
    return 0;
}

static int fx_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    fx_read *r = user;
    pp_fx_table *t = r->t;
    if (is_header) return header(rec, r, err);
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 128;
        pp_fx_row *nr = realloc(t->rows, (size_t)cap * sizeof *nr);
        if (!nr) {
            pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
            return -1;
        }
        t->rows = nr;
        t->cap = cap;
    }
    pp_fx_row *row = &t->rows[t->n];
    memset(row, 0, sizeof *row);
    row->line = rec->line;
    char why[320];
    int rc;
    if (rec->n_fields != r->n_cols) {
        snprintf(why, sizeof why, "%d fields, the header has %d", rec->n_fields, r->n_cols);
        rc = -1;
    } else {
        rc = row_from_record(r, rec, row, why, sizeof why);
    }
    if (rc == -2) {
        pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
        return -1;
    }
    if (rc == -1) {
        row->bad = 1;
        row->why = pp_arena_strdup(t->arena, why);
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%s", why);
    }
    /* a bad row still claims its name (if unclaimed) so that its consumers can say where it is */
    if (row->name && pp_strmap_get(&t->index, row->name) < 0 &&
        pp_strmap_put(&t->index, row->name, t->n)) {
        pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
        return -1;
    }
    t->n++;
    return 0;
}

perfpred_status pp_datasets_fx_read_buffer(const char *path, const char *buf, size_t len,
                                           pp_fx_table **out, pp_err *err)
{
    *out = NULL;
    pp_fx_table *t = calloc(1, sizeof *t);
    fx_read r = {0};
    if (!t || !(t->arena = pp_arena_new()) || !(t->path = pp_arena_strdup(t->arena, path))) {
        pp_datasets_fx_free(t);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    r.t = t;
    perfpred_status st = pp_measure_csv_read_buffer(path, buf, len, fx_record, &r, err);
    if (st != PERFPRED_OK) {
        pp_datasets_fx_free(t);
        return st;
    }
    *out = t;
    return PERFPRED_OK;
}

perfpred_status pp_datasets_fx_read(const char *path, pp_fx_table **out, pp_err *err)
{
    uint8_t *buf;
    size_t len;
    *out = NULL;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st != PERFPRED_OK) return st;
    st = pp_datasets_fx_read_buffer(path, (const char *)buf, len, out, err);
    free(buf);
    return st;
}
