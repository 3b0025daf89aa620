/* util/: what every module shares: the arena that owns a loaded model, the per-handle
 * error record, strict number parsing and the logging hook. Nothing here prints or exits. */
#ifndef PP_UTIL_H
#define PP_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "perfpred.h"

/* Invariant check that never compiles away (NDEBUG does not disable it). */
#define PP_ASSERT(x)                                                              \
    do {                                                                          \
        if (!(x)) pp_assert_fail(__FILE__, __LINE__, #x);                         \
    } while (0)
void pp_assert_fail(const char *file, int line, const char *expr);

/* ---- arena: bump allocator in chunks; everything is freed by one pp_arena_free ---- */
typedef struct pp_arena pp_arena;
pp_arena *pp_arena_new(void);
void pp_arena_free(pp_arena *a);                 /* NULL is a no-op */
void *pp_arena_alloc(pp_arena *a, size_t n);     /* 16-byte aligned, zeroed; NULL on OOM */
void *pp_arena_array(pp_arena *a, size_t n, size_t sz); /* overflow-checked n*sz */
char *pp_arena_strdup(pp_arena *a, const char *s);
char *pp_arena_strndup(pp_arena *a, const char *s, size_t n);
size_t pp_arena_used(const pp_arena *a);         /* bytes handed out, for tests */

/* ---- errors: a status plus a message with context, owned by the caller ---- */
#define PP_ERR_MSG 1024
typedef struct pp_err {
    perfpred_status status;
    char msg[PP_ERR_MSG];
} pp_err;
/* Sets err (if not NULL) and returns status, so callers can `return pp_err_set(...)`. */
perfpred_status pp_err_set(pp_err *err, perfpred_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pp_err_clear(pp_err *err);

/* ---- strict parsing: whole string must be a number; no silent defaults ---- */
int pp_parse_i64(const char *s, int64_t *out);   /* 0 ok, -1 bad */
int pp_parse_double(const char *s, double *out); /* 0 ok, -1 bad (also rejects nan/inf) */
/* "1x3x224x224" -> dims; returns rank or -1 */
int pp_parse_dims(const char *s, int64_t *dims, int max_rank);
/* Comma-separated lists: returns the item at *cursor (its length in *len, possibly 0) and moves
 * *cursor past it and its comma; NULL at the end.
 *   for (const char *c = list, *it; (it = pp_list_item(&c, &len));) ... */
const char *pp_list_item(const char **cursor, size_t *len);

/* ---- checked size arithmetic ---- */
/* 1 if overflow; inline: shape and feature code calls it per dimension */
static inline int pp_mul_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

/* ---- hashing ---- */
/* FNV-1a of the NUL-terminated s, continuing from h: start from PP_FNV32_BASIS / PP_FNV64_BASIS, or
 * from an earlier result to hash several strings as one. Inline: name lookups call it per probe. */
#define PP_FNV32_BASIS 2166136261u
#define PP_FNV64_BASIS 1469598103934665603ull
static inline uint32_t pp_fnv1a32(const char *s, uint32_t h)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}
static inline uint64_t pp_fnv1a64(const char *s, uint64_t h)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ---- files ---- */
/* Reads a whole file into a malloc'd buffer (caller frees). */
/* The whole file in *buf (malloc'd, caller frees), *len bytes, always followed by a NUL byte so
 * that a text file can be read as a string. */
perfpred_status pp_read_file(const char *path, uint8_t **buf, size_t *len, pp_err *err);
/* Creates dir and its missing parents (mode 0755); an existing folder is fine. */
perfpred_status pp_mkdir_p(const char *dir, pp_err *err);
/* Seconds on the monotonic clock (for durations in reports). */
double pp_now_s(void);

/* Solves the k x k system A x = b (A row-major, k <= 16) by Gaussian elimination with partial
 * pivoting; A and b are overwritten. -1 when A is singular at its own scale. */
int pp_solve(int k, double *A, double *b, double *x);
/* Writes data to path atomically: path.tmp.<pid>, fsync, rename. */
perfpred_status pp_write_file_atomic(const char *path, const void *data, size_t len, pp_err *err);

/* ---- logging hook ---- */
typedef struct pp_logger {
    perfpred_log_fn fn;
    void *user;
} pp_logger;
void pp_log(const pp_logger *lg, perfpred_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Growing text buffer for writers (malloc'd; free data with free()). */
typedef struct pp_strbuf {
    char *data;
    size_t len, cap;
    int oom;        /* sticky: an append failed */
} pp_strbuf;
void pp_strbuf_put(pp_strbuf *b, const char *s);
void pp_strbuf_printf(pp_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as one CSV field: quoted (with doubled quotes) when it holds , " CR or LF. */
void pp_strbuf_csv_field(pp_strbuf *b, const char *s);
/* Shortest decimal text that strtod reads back to exactly v ("%.15g".."%.17g"). */
void pp_fmt_double(char *out, size_t n, double v);

/* A growable map from strings to ints >= 0 (names to indices: a graph's tensors, a table's rows):
 * open addressing with linear probing on FNV-1a (64-bit), capacity a power of two (256 first) kept
 * at most half full. Keys are borrowed: each key's string must outlive the map, unchanged (an
 * arena's copy). A zeroed pp_strmap is empty; pp_strmap_free empties it again. */
typedef struct pp_strmap {
    const char **keys; /* NULL: empty slot */
    int *vals;
    size_t cap, n;
} pp_strmap;
/* The value of key, or -1 when absent (or key is NULL). */
int pp_strmap_get(const pp_strmap *m, const char *key);
/* Adds key -> val; key must be absent (pp_strmap_get first). 0, or -1 out of memory (m unchanged). */
int pp_strmap_put(pp_strmap *m, const char *key, int val);
/* Room for n keys without growing. 0, or -1 out of memory or too large (m unchanged). */
int pp_strmap_reserve(pp_strmap *m, size_t n);
/* Lookup and insert in one probe, with key's hash given (pp_fnv1a64(key, PP_FNV64_BASIS), as a
 * caller that continued it over a shared prefix has it: the NAS-Bench-201 builder's copies): the
 * value of key, or -1 with *slot the free slot where pp_strmap_put_at puts it. Room for one more
 * key first (pp_strmap_reserve(m, m->n + 1)); a put or a growth in between makes the slot stale
 * (probe again). */
int pp_strmap_probe_h(const pp_strmap *m, const char *key, uint64_t hash, size_t *slot);
void pp_strmap_put_at(pp_strmap *m, size_t slot, const char *key, int val);
void pp_strmap_free(pp_strmap *m);

/* A fixed set of names looked up by exact match (op types in the graph's rule tables): FNV-1a,
 * open addressing in PP_NAME_SLOTS slots, built once; at most PP_NAME_SLOTS / 2 names. The names
 * array must outlive the index. */
#define PP_NAME_SLOTS 1024
typedef struct pp_name_index {
    const char *const *names;
    int n;
    short slot[PP_NAME_SLOTS];   /* name index + 1; 0 empty */
} pp_name_index;
/* 0, or -1 when there are too many names (the index then finds none). */
int pp_name_index_build(pp_name_index *x, const char *const *names, int n);
/* Index of name (the first of equal names), -1 when absent. */
int pp_name_index_find(const pp_name_index *x, const char *name);

#endif
