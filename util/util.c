/* util/util.c: arena, errors, strict number parsing, atomic file writes, logging hook, a growing
 * text buffer with CSV quoting and shortest round-trip number formatting. */
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void pp_assert_fail(const char *file, int line, const char *expr)
{
    fprintf(stderr, "perfpred: internal invariant failed at %s:%d: %s\n", file, line, expr);
    abort();
}

/* ---- arena ---- */
typedef struct pp_chunk {
    struct pp_chunk *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
} pp_chunk;

struct pp_arena {
    pp_chunk *head;
    size_t total;
};

pp_arena *pp_arena_new(void) { return calloc(1, sizeof(pp_arena)); }

void pp_arena_free(pp_arena *a)
{
    if (!a) return;
    for (pp_chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

/* n bytes (rounded up to 16) from the arena, not zeroed; NULL on OOM */
static void *arena_take(pp_arena *a, size_t n)
{
    if (!a) return NULL;
    if (n == 0) n = 1;
    if (n > SIZE_MAX - 15) return NULL;
    n = (n + 15) & ~(size_t)15;
    pp_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        if (cap > SIZE_MAX - sizeof(pp_chunk)) return NULL;
        pp_chunk *nc = malloc(sizeof(pp_chunk) + cap);
        if (!nc) return NULL;
        nc->cap = cap;
        nc->used = 0;
        /* big one-off blocks go behind the current chunk so its free space is not wasted */
        if (c && n > 65536) {
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->total += n;
    return p;
}

void *pp_arena_alloc(pp_arena *a, size_t n)
{
    void *p = arena_take(a, n);
    if (p) memset(p, 0, n ? n : 1);
    return p;
}

void *pp_arena_array(pp_arena *a, size_t n, size_t sz)
{
    if (sz && n > SIZE_MAX / sz) return NULL;
    return pp_arena_alloc(a, n * sz);
}

char *pp_arena_strndup(pp_arena *a, const char *s, size_t n)
{
    if (!s) return NULL;
    if (n == SIZE_MAX) return NULL;
    char *d = arena_take(a, n + 1); /* every byte the string uses is written below */
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *pp_arena_strdup(pp_arena *a, const char *s)
{
    return s ? pp_arena_strndup(a, s, strlen(s)) : NULL;
}

size_t pp_arena_used(const pp_arena *a) { return a ? a->total : 0; }

/* ---- errors ---- */
perfpred_status pp_err_set(pp_err *err, perfpred_status status, const char *fmt, ...)
{
    if (err) {
        err->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

void pp_err_clear(pp_err *err)
{
    if (err) {
        err->status = PERFPRED_OK;
        err->msg[0] = '\0';
    }
}

const char *perfpred_status_str(perfpred_status s)
{
    switch (s) {
    case PERFPRED_OK: return "ok";
    case PERFPRED_ERR_INVALID_ARG: return "invalid argument";
    case PERFPRED_ERR_IO: return "i/o error";
    case PERFPRED_ERR_PARSE: return "malformed input";
    case PERFPRED_ERR_UNSUPPORTED: return "unsupported";
    case PERFPRED_ERR_SHAPE: return "shape error";
    case PERFPRED_ERR_GRAPH: return "invalid graph";
    case PERFPRED_ERR_DEVICE: return "device error";
    case PERFPRED_ERR_MODEL: return "trained model error";
    case PERFPRED_ERR_NOMEM: return "out of memory";
    case PERFPRED_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *perfpred_version(void) { return PERFPRED_VERSION; }

/* ---- strict parsing ---- */
int pp_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0' || end == s) return -1;
    *out = (int64_t)v;
    return 0;
}

int pp_parse_double(const char *s, double *out)
{
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end != '\0' || end == s || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

const char *pp_list_item(const char **cursor, size_t *len)
{
    const char *q = *cursor;
    if (!q || !*q) return NULL;
    const char *e = strchr(q, ',');
    *len = e ? (size_t)(e - q) : strlen(q);
    *cursor = e ? e + 1 : q + *len;
    return q;
}

int pp_parse_dims(const char *s, int64_t *dims, int max_rank)
{
    if (!s || !*s) return -1;
    int rank = 0;
    const char *p = s;
    for (;;) {
        if (rank >= max_rank) return -1;
        char *end;
        if (*p < '0' || *p > '9') return -1;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v <= 0) return -1;
        dims[rank++] = (int64_t)v;
        if (*end == '\0') break;
        if (*end != 'x' && *end != 'X' && *end != ',') return -1;
        p = end + 1;
    }
    return rank;
}

/* ---- files ---- */
perfpred_status pp_read_file(const char *path, uint8_t **buf, size_t *len, pp_err *err)
{
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    if (!b) {
        fclose(f);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n == cap) {
            if (cap > SIZE_MAX / 2) break;
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                fclose(f);
                return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(b);
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: read error", path);
    }
    if (n == cap) { /* room for the terminating NUL */
        uint8_t *nb = realloc(b, cap + 1);
        if (!nb) {
            free(b);
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
        }
        b = nb;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return PERFPRED_OK;
}

double pp_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

perfpred_status pp_mkdir_p(const char *dir, pp_err *err)
{
    char buf[4096];
    size_t n = dir ? strlen(dir) : 0;
    if (n == 0 || n >= sizeof buf)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "bad folder name");
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot create folder: %s", buf,
                              strerror(errno));
        buf[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: not a folder", dir);
    return PERFPRED_OK;
}

perfpred_status pp_write_file_atomic(const char *path, const void *data, size_t len, pp_err *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    const unsigned char *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return pp_err_set(err, PERFPRED_ERR_IO, "%s: write failed: %s", tmp, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot flush: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot rename into place: %s", path, strerror(e));
    }
    return PERFPRED_OK;
}

/* ---- logging ---- */
void pp_log(const pp_logger *lg, perfpred_log_level lvl, const char *fmt, ...)
{
    if (!lg || !lg->fn) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    lg->fn(lvl, buf, lg->user);
}

int pp_solve(int k, double *A, double *b, double *x)
{
    if (k < 1 || k > 16) return -1;
    double scale = 0;
    for (int i = 0; i < k; i++) scale = fmax(scale, fabs(A[i * k + i]));
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(A[r * k + c]) > fabs(A[piv * k + c])) piv = r;
        if (!(fabs(A[piv * k + c]) > 1e-12 * scale)) return -1;
        for (int j = 0; j < k; j++) {
            double t = A[c * k + j];
            A[c * k + j] = A[piv * k + j];
            A[piv * k + j] = t;
        }
        double t = b[c];
        b[c] = b[piv];
        b[piv] = t;
        for (int r = c + 1; r < k; r++) {
            double f = A[r * k + c] / A[c * k + c];
            for (int j = c; j < k; j++) A[r * k + j] -= f * A[c * k + j];
            b[r] -= f * b[c];
        }
    }
    for (int c = k - 1; c >= 0; c--) {
        double s = b[c];
        for (int j = c + 1; j < k; j++) s -= A[c * k + j] * x[j];
        x[c] = s / A[c * k + c];
    }
    return 0;
}

/* ---- text buffer ---- */
static int strbuf_reserve(pp_strbuf *b, size_t extra)
{
    if (b->oom) return -1;
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = 1;
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

void pp_strbuf_put(pp_strbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (strbuf_reserve(b, n) != 0) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void pp_strbuf_printf(pp_strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (strbuf_reserve(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void pp_strbuf_csv_field(pp_strbuf *b, const char *s)
{
    if (!s) s = "";
    if (!strpbrk(s, ",\"\r\n")) {
        pp_strbuf_put(b, s);
        return;
    }
    size_t n = strlen(s);
    if (strbuf_reserve(b, 2 * n + 2) != 0) return;
    char *p = b->data + b->len;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') *p++ = '"';
        *p++ = s[i];
    }
    *p++ = '"';
    *p = '\0';
    b->len = (size_t)(p - b->data);
}

void pp_fmt_double(char *out, size_t n, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v) return;
    }
}

/* ---- string map ---- */

/* Rehashes m into ncap slots (a power of two). */
static int strmap_rehash(pp_strmap *m, size_t ncap)
{
    const char **k2 = calloc(ncap, sizeof *k2);
    int *v2 = malloc(ncap * sizeof *v2); /* read only where a key is set */
    if (!k2 || !v2) {
        free(k2);
        free(v2);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t h = (size_t)pp_fnv1a64(m->keys[i], PP_FNV64_BASIS) & (ncap - 1);
        while (k2[h]) h = (h + 1) & (ncap - 1);
        k2[h] = m->keys[i];
        v2[h] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k2;
    m->vals = v2;
    m->cap = ncap;
    return 0;
}

int pp_strmap_reserve(pp_strmap *m, size_t n)
{
    if (n > SIZE_MAX / 4 / sizeof(const char *)) return -1;
    size_t cap = m->cap ? m->cap : 256;
    while (2 * n > cap) cap *= 2;
    return cap == m->cap ? 0 : strmap_rehash(m, cap);
}

static int strmap_get_h(const pp_strmap *m, const char *key, uint64_t hash)
{
    if (!key || !m->cap) return -1;
    size_t h = (size_t)hash & (m->cap - 1);
    while (m->keys[h]) {
        if (strcmp(m->keys[h], key) == 0) return m->vals[h];
        h = (h + 1) & (m->cap - 1);
    }
    return -1;
}

int pp_strmap_probe_h(const pp_strmap *m, const char *key, uint64_t hash, size_t *slot)
{
    size_t h = (size_t)hash & (m->cap - 1);
    while (m->keys[h]) {
        if (strcmp(m->keys[h], key) == 0) return m->vals[h];
        h = (h + 1) & (m->cap - 1);
    }
    *slot = h;
    return -1;
}

void pp_strmap_put_at(pp_strmap *m, size_t slot, const char *key, int val)
{
    m->keys[slot] = key;
    m->vals[slot] = val;
    m->n++;
}

int pp_strmap_get(const pp_strmap *m, const char *key)
{
    return key ? strmap_get_h(m, key, pp_fnv1a64(key, PP_FNV64_BASIS)) : -1;
}

int pp_strmap_put(pp_strmap *m, const char *key, int val)
{
    uint64_t hash = pp_fnv1a64(key, PP_FNV64_BASIS);
    if (pp_strmap_reserve(m, m->n + 1) != 0) return -1;
    size_t h = (size_t)hash & (m->cap - 1);
    while (m->keys[h]) h = (h + 1) & (m->cap - 1);
    m->keys[h] = key;
    m->vals[h] = val;
    m->n++;
    return 0;
}

void pp_strmap_free(pp_strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- name index ---- */

int pp_name_index_build(pp_name_index *x, const char *const *names, int n)
{
    memset(x, 0, sizeof *x);
    if (n < 0 || n > PP_NAME_SLOTS / 2) return -1;
    x->names = names;
    x->n = n;
    for (int i = 0; i < n; i++) {
        uint32_t k = pp_fnv1a32(names[i], PP_FNV32_BASIS) & (PP_NAME_SLOTS - 1);
        for (;; k = (k + 1) & (PP_NAME_SLOTS - 1)) {
            if (!x->slot[k]) {
                x->slot[k] = (short)(i + 1);
                break;
            }
            if (strcmp(names[x->slot[k] - 1], names[i]) == 0) break;  /* keep the first */
        }
    }
    return 0;
}

int pp_name_index_find(const pp_name_index *x, const char *name)
{
    if (!x->n) return -1;
    for (uint32_t k = pp_fnv1a32(name, PP_FNV32_BASIS) & (PP_NAME_SLOTS - 1);; k = (k + 1) & (PP_NAME_SLOTS - 1)) {
        int i = x->slot[k] - 1;
        if (i < 0) return -1;
        if (strcmp(x->names[i], name) == 0) return i;
    }
}
