/* measure/csvio.c: CSV reading shared by the measurement readers: libcsv in strict mode fed one
 * line at a time so that every record knows the line it starts on; the bad-row bookkeeping and the
 * parameter-check message of the calibration modules. */
#include "measure/measure.h"

#include <csv.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ---- */
/* libcsv's parser state between records (ROW_NOT_BEGUN in libcsv.c; csv.h exposes pstate but not
 * the names of its values). */
enum { LIBCSV_ROW_NOT_BEGUN = 0 };

typedef struct reader {
    const char *path;
    pp_csv_record_fn fn;
    void *user;
    pp_err *err;
    int line;           /* line being fed */
    int rec_line;       /* line the current record started on, 0 = none begun */
    int row_line;       /* line of the first segment fed since the last record ended */
    int seen_header;
    int stop;           /* callback asked to stop, or out of memory */
    perfpred_status status;
    char *text;         /* field bytes of the current record, NUL-separated */
    size_t text_len, text_cap;
    size_t *offs;
    int n_fields, cap_fields;
    const char **ptrs;
    int cap_ptrs;
} reader;

static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->stop) return;
    if (!r->rec_line) r->rec_line = r->row_line ? r->row_line : r->line;
    if (r->text_len + len + 1 > r->text_cap) {
        size_t cap = r->text_cap ? r->text_cap : 1024;
        while (cap < r->text_len + len + 1) cap *= 2;
        char *t = realloc(r->text, cap);
        if (!t) goto oom;
        r->text = t;
        r->text_cap = cap;
    }
    if (r->n_fields == r->cap_fields) {
        int cap = r->cap_fields ? 2 * r->cap_fields : 32;
        size_t *o = realloc(r->offs, (size_t)cap * sizeof *o);
        if (!o) goto oom;
        r->offs = o;
        r->cap_fields = cap;
    }
    r->offs[r->n_fields++] = r->text_len;
    if (len && s) memcpy(r->text + r->text_len, s, len);
    r->text_len += len;
    r->text[r->text_len++] = '\0';
    return;
oom:
    r->stop = 1;
    r->status = pp_err_set(r->err, PERFPRED_ERR_NOMEM, "%s:%d: out of memory", r->path, r->line);
}

static void on_record(int c, void *data)
{
    reader *r = data;
    (void)c;
    if (r->stop) return;
    if (r->cap_ptrs < r->n_fields) {
        const char **p = realloc(r->ptrs, (size_t)r->n_fields * sizeof *p);
        if (!p) {
            r->stop = 1;
            r->status = pp_err_set(r->err, PERFPRED_ERR_NOMEM, "%s: out of memory", r->path);
            return;
        }
        r->ptrs = p;
        r->cap_ptrs = r->n_fields;
    }
    for (int i = 0; i < r->n_fields; i++) r->ptrs[i] = r->text + r->offs[i];
    pp_csv_record rec = {r->path, r->rec_line ? r->rec_line : r->line, r->n_fields, r->ptrs};
    r->row_line = 0;
    int is_header = !r->seen_header;
    r->seen_header = 1;
    if (r->fn(&rec, is_header, r->user, r->err) != 0) {
        r->stop = 1;
        r->status = (r->err && r->err->status != PERFPRED_OK) ? r->err->status
                                                                : PERFPRED_ERR_PARSE;
    }
    r->n_fields = 0;
    r->text_len = 0;
    r->rec_line = 0;
}

int pp_measure_csv_column(const pp_csv_record *header, const char *name)
{
    for (int i = 0; i < header->n_fields; i++)
        if (strcmp(header->fields[i], name) == 0) return i;
    return -1;
}

perfpred_status pp_measure_csv_read_buffer(const char *path, const char *buf, size_t len,
                                           pp_csv_record_fn fn, void *user, pp_err *err)
{
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    reader r = {0};
    r.path = path;
    r.fn = fn;
    r.user = user;
    r.err = err;
    r.status = PERFPRED_OK;
    size_t pos = 0;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) pos = 3; /* UTF-8 byte-order mark */
    r.line = 0;
    while (pos < len && !r.stop) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t seg = nl ? (size_t)(nl - (buf + pos)) + 1 : len - pos;
        r.line++;
        /* A record that starts in this segment starts on this line, even when its first field is
         * a quoted one that ends lines later (on_field only sees the field when it ends). */
        if (p.pstate == LIBCSV_ROW_NOT_BEGUN) r.row_line = r.line;
        /* libcsv grows its field buffer by blk_size bytes at a time (128 by default: a 10 MB
         * field was ~80,000 reallocs, minutes under ASan); growing by the larger of the segment
         * and the buffer itself keeps the growth geometric and a segment to one realloc. */
        csv_set_blk_size(&p, seg > p.entry_size ? seg + 1 : p.entry_size + 1);
        if (csv_parse(&p, buf + pos, seg, on_field, on_record, &r) != seg && !r.stop) {
            r.status = pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: malformed CSV: %s", path, r.line,
                                  csv_strerror(csv_error(&p)));
            r.stop = 1;
        }
        pos += seg;
    }
    if (!r.stop && csv_fini(&p, on_field, on_record, &r) != 0 && !r.stop) {
        r.status = pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: malformed CSV (unterminated quote)",
                              path, r.rec_line ? r.rec_line : r.row_line ? r.row_line : r.line);
        r.stop = 1;
    }
    csv_free(&p);
    free(r.text);
    free(r.offs);
    free(r.ptrs);
    if (r.status == PERFPRED_OK && !r.seen_header)
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s:1: empty file: no header line", path);
    return r.status;
}

perfpred_status pp_measure_csv_read(const char *path, pp_csv_record_fn fn, void *user, pp_err *err)
{
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st != PERFPRED_OK) return st;
    st = pp_measure_csv_read_buffer(path, (const char *)buf, len, fn, user, err);
    free(buf);
    return st;
}

void pp_measure_bad_row(pp_bad_rows *b, pp_arena *a, const char *path, int line, const char *fmt,
                        ...)
{
    b->n++;
    if (b->n_kept >= PP_BAD_ROWS_KEPT) return;
    char msg[512];
    int k = snprintf(msg, sizeof msg, "%s:%d: ", path ? path : "(memory)", line);
    if (k < 0 || (size_t)k >= sizeof msg) k = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    char *s = pp_arena_strdup(a, msg);
    if (s) b->msgs[b->n_kept++] = s;
}

perfpred_status pp_measure_bad_param(char *errbuf, size_t n, const char *fmt, const char *field)
{
    if (errbuf && n) snprintf(errbuf, n, fmt, field);
    return PERFPRED_ERR_INVALID_ARG;
}
