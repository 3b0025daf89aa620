/* devices/db.c: the device database: loads descriptor files, resolves `base:` inheritance (cycle
 * and unknown-base errors name the `base:` line), checks required fields, derives MIG slices, and
 * indexes every canonical name and alias case-insensitively (a duplicate names both places). */
#include "devices/devices_internal.h"

#include <dirent.h>
#include <errno.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef PERFPRED_SOURCE_CONFIG_DIR
#error "PERFPRED_SOURCE_CONFIG_DIR must be defined by the build (see CMakeLists.txt)"
#endif
#ifndef PERFPRED_INSTALL_CONFIG_DIR
#error "PERFPRED_INSTALL_CONFIG_DIR must be defined by the build (see CMakeLists.txt)"
#endif

typedef struct idx_entry {
    const char *key;           /* lowercase */
    const pp_device *dev;
    pp_dev_pos at;             /* where the name was written (or the MIG profile it comes from) */
    int seq;                   /* reading order, so a duplicate is reported at its later place */
} idx_entry;

struct pp_device_db {
    pp_arena *a;
    pp_device **devs;          /* sorted by canonical name */
    int n;
    idx_entry *idx;            /* sorted by key */
    int n_idx, cap_idx;
};

/* ------------------------------------------------------------ the index ---- */

typedef struct build_ctx {
    pp_device_db *db;
    pp_err *err;
} build_ctx;

static perfpred_status idx_add(const char *key, const pp_device *dev, pp_dev_pos at, void *user)
{
    build_ctx *b = user;
    pp_device_db *db = b->db;
    if (!key) return pp_err_set(b->err, PERFPRED_ERR_NOMEM, "device index: out of memory");
    if (db->n_idx == db->cap_idx) {
        int nc = db->cap_idx ? db->cap_idx * 2 : 256;
        idx_entry *ni = pp_arena_array(db->a, (size_t)nc, sizeof *ni);
        if (!ni) return pp_err_set(b->err, PERFPRED_ERR_NOMEM, "device index: out of memory");
        if (db->n_idx) memcpy(ni, db->idx, (size_t)db->n_idx * sizeof *ni);
        db->idx = ni;
        db->cap_idx = nc;
    }
    idx_entry *e = &db->idx[db->n_idx];
    e->key = key;
    e->dev = dev;
    e->at = at;
    e->seq = db->n_idx++;
    return PERFPRED_OK;
}

static int idx_cmp(const void *x, const void *y)
{
    const idx_entry *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/* Sorts the index and reports the first duplicate key at its later place. */
static perfpred_status idx_sort_check(pp_device_db *db, pp_err *err)
{
    qsort(db->idx, (size_t)db->n_idx, sizeof *db->idx, idx_cmp);
    const idx_entry *worst = NULL, *first = NULL;
    for (int i = 1; i < db->n_idx; i++) {
        if (strcmp(db->idx[i].key, db->idx[i - 1].key) != 0) continue;
        /* runs are sorted by seq: the run's head is the first use */
        int h = i - 1;
        while (h > 0 && strcmp(db->idx[h - 1].key, db->idx[i].key) == 0) h--;
        if (!worst || db->idx[i].seq < worst->seq) {
            worst = &db->idx[i];
            first = &db->idx[h];
        }
    }
    if (!worst) return PERFPRED_OK;
    return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, worst->at,
                         "duplicate device name or alias '%s': already names '%s' (%s:%d:%d)",
                         worst->key, first->dev->name, first->at.file, first->at.line,
                         first->at.col);
}

/* ----------------------------------------------------------- inheritance ---- */

static void copy_field(pp_device *dst, const pp_device *src, int f)
{
    if (f >= PP_F_PEAK && f < PP_F_PEAK + PP_PREC__COUNT) {
        dst->peak_tflops[f - PP_F_PEAK] = src->peak_tflops[f - PP_F_PEAK];
        return;
    }
    switch (f) {
    case PP_F_VENDOR: dst->vendor = src->vendor; break;
    case PP_F_KIND: dst->kind = src->kind; break;
    case PP_F_BW: dst->memory_bandwidth_gbs = src->memory_bandwidth_gbs; break;
    case PP_F_MEM: dst->memory_gb = src->memory_gb; break;
    case PP_F_CU: dst->compute_units = src->compute_units; break;
    case PP_F_CLOCK: dst->clock_mhz = src->clock_mhz; break;
    case PP_F_L2: dst->l2_mb = src->l2_mb; break;
    case PP_F_IDLE: dst->idle_power_w = src->idle_power_w; break;
    case PP_F_MAXP: dst->max_power_w = src->max_power_w; break;
    case PP_F_FRAMEWORK: dst->runtime_framework = src->runtime_framework; break;
    case PP_F_PRECISION: dst->runtime_precision = src->runtime_precision; break;
    case PP_F_LAUNCH: dst->launch_overhead_us = src->launch_overhead_us; break;
    case PP_F_RTMEM: dst->runtime_memory_overhead_mb = src->runtime_memory_overhead_mb; break;
    case PP_F_WORKSPACE: dst->workspace_mb = src->workspace_mb; break;
    case PP_F_CC: dst->compute_capability = src->compute_capability; break;
    case PP_F_HOSTSCALE: dst->host_dispatch_scale = src->host_dispatch_scale; break;
    case PP_F_HOSTSRC: dst->host_dispatch_source = src->host_dispatch_source; break;
    case PP_F_MEMTYPE: dst->memory_type = src->memory_type; break;
    case PP_F_GEMM: dst->gemm_gflops = src->gemm_gflops; break;
    case PP_F_CONVCALL: dst->conv_call_us = src->conv_call_us; break;
    case PP_F_FP16ACC16: dst->peak_fp16_acc16_tflops = src->peak_fp16_acc16_tflops; break;
    case PP_F_STREAM: dst->stream_bandwidth_gbs = src->stream_bandwidth_gbs; break;
    case PP_F_FUSION:
        dst->n_fusion = src->n_fusion;
        memcpy(dst->fusion, src->fusion, sizeof dst->fusion);
        break;
    case PP_F_COMPOSITE:
        dst->n_composite = src->n_composite;
        memcpy(dst->composite, src->composite, sizeof dst->composite);
        break;
    default: PP_ASSERT(0 && "unknown inheritable field");
    }
}

/* Finds a parsed descriptor by canonical name or alias. */
static pp_dev_src *find_src(pp_dev_src *srcs, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(srcs[i].d.name, name) == 0) return &srcs[i];
        for (int k = 0; k < srcs[i].d.n_aliases; k++)
            if (strcmp(srcs[i].d.aliases[k], name) == 0) return &srcs[i];
    }
    return NULL;
}

static perfpred_status resolve(pp_dev_src *srcs, int n, pp_dev_src *s, pp_dev_src **chain,
                               int depth, pp_err *err)
{
    if (s->state == 2) return PERFPRED_OK;
    s->state = 1;
    chain[depth] = s;
    pp_device *r = s->resolved;
    pp_dev_src *b = NULL;
    if (s->d.base) {
        b = find_src(srcs, n, s->d.base);
        if (!b)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, s->base_at,
                                 "descriptor '%s': unknown base '%s'", s->d.name, s->d.base);
        if (b->has_mig_instance)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, s->base_at,
                                 "descriptor '%s': base '%s' is a MIG instance", s->d.name,
                                 b->d.name);
        if (b->state == 1) {
            char cyc[PP_ERR_MSG / 2] = "";
            size_t len = 0;
            int from = 0;
            while (chain[from] != b) from++;
            for (int i = from; i <= depth && len < sizeof cyc; i++)
                len += (size_t)snprintf(cyc + len, sizeof cyc - len, "%s -> ", chain[i]->d.name);
            if (len < sizeof cyc) snprintf(cyc + len, sizeof cyc - len, "%s", b->d.name);
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, s->base_at,
                                 "inheritance cycle through base: %s", cyc);
        }
        perfpred_status st = resolve(srcs, n, b, chain, depth + 1, err);
        if (st) return st;
        *r = *b->resolved;
        memcpy(s->rset, b->rset, sizeof s->rset);
    } else {
        memset(r, 0, sizeof *r);
    }
    for (int f = 0; f < PP_F__COUNT; f++)
        if (s->set[f]) {
            copy_field(r, &s->d, f);
            s->rset[f] = 1;
        }
    /* fields that belong to this descriptor alone */
    r->name = s->d.name;
    memcpy(r->aliases, s->d.aliases, sizeof r->aliases);
    r->n_aliases = s->d.n_aliases;
    r->description = s->d.description;
    r->source_file = s->d.source_file;
    r->base = b ? b->d.name : NULL;
    r->artifacts_dir = s->d.artifacts_dir;
    r->calibration_from = s->d.calibration_from;
    r->hostable = s->d.hostable;
    r->parent = NULL;
    r->mig_profiles = NULL;
    r->n_mig_profiles = 0;
    r->is_mig = s->has_mig_instance;
    r->mig_compute_slices = s->d.mig_compute_slices;
    r->mig_memory_slices = s->d.mig_memory_slices;
    r->mig_total_compute = s->d.mig_total_compute;
    r->mig_total_memory = s->d.mig_total_memory;
    r->mig_profile = s->d.mig_profile;
    if (s->has_mig_instance) r->base = s->mig_parent;
    s->state = 2;
    return PERFPRED_OK;
}

static perfpred_status check_required(const pp_dev_src *s, pp_err *err)
{
    static const struct {
        int f;
        const char *key;
    } req[] = {{PP_F_VENDOR, "vendor"},
               {PP_F_KIND, "kind"},
               {PP_F_FRAMEWORK, "runtime.framework"},
               {PP_F_PRECISION, "runtime.precision"}};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!s->rset[req[i].f])
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, s->at,
                                 "descriptor '%s' is missing required field '%s'%s", s->d.name,
                                 req[i].key, s->d.base ? " (not written here nor inherited)" : "");
    if (s->resolved->hostable && s->resolved->kind != PP_DEV_CPU)
        return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, s->at,
                             "descriptor '%s': hostable is only valid on kind cpu", s->d.name);
    return PERFPRED_OK;
}

/* --------------------------------------------------------------- loading ---- */

static int dev_cmp(const void *x, const void *y)
{
    const pp_device *a = *(const pp_device *const *)x, *b = *(const pp_device *const *)y;
    return strcmp(a->name, b->name);
}

static perfpred_status build(pp_device_db *db, pp_dev_src *srcs, int n, pp_err *err)
{
    build_ctx bc = {db, err};
    perfpred_status st;
    int n_devs = n;
    for (int i = 0; i < n; i++) {
        srcs[i].resolved = pp_arena_alloc(db->a, sizeof(pp_device));
        if (!srcs[i].resolved) return pp_err_set(err, PERFPRED_ERR_NOMEM, "devices: out of memory");
        srcs[i].resolved->name = srcs[i].d.name;   /* for duplicate messages before resolution */
        if (srcs[i].has_mig) n_devs += srcs[i].n_profiles;
    }
    /* names first, so that a duplicate is reported before it makes `base:` ambiguous */
    for (int i = 0; i < n; i++) {
        if ((st = idx_add(srcs[i].d.name, srcs[i].resolved, srcs[i].name_at, &bc))) return st;
        for (int k = 0; k < srcs[i].d.n_aliases; k++)
            if ((st = idx_add(srcs[i].d.aliases[k], srcs[i].resolved, srcs[i].alias_at[k], &bc)))
                return st;
    }
    if ((st = idx_sort_check(db, err))) return st;

    pp_dev_src **chain = calloc((size_t)n + 1, sizeof *chain);
    if (!chain) return pp_err_set(err, PERFPRED_ERR_NOMEM, "devices: out of memory");
    for (int i = 0; i < n && !st; i++) st = resolve(srcs, n, &srcs[i], chain, 0, err);
    free(chain);
    if (st) return st;
    for (int i = 0; i < n; i++)
        if ((st = check_required(&srcs[i], err))) return st;

    db->devs = pp_arena_array(db->a, (size_t)n_devs, sizeof *db->devs);
    if (!db->devs) return pp_err_set(err, PERFPRED_ERR_NOMEM, "devices: out of memory");
    for (int i = 0; i < n; i++) db->devs[db->n++] = srcs[i].resolved;

    for (int i = 0; i < n; i++) {
        pp_dev_src *s = &srcs[i];
        if (!s->has_mig) continue;
        pp_device *slices = pp_arena_array(db->a, (size_t)s->n_profiles, sizeof *slices);
        if (!slices) return pp_err_set(err, PERFPRED_ERR_NOMEM, "devices: out of memory");
        if ((st = pp_dev_mig_derive(db->a, s, s->resolved, slices, err))) return st;
        for (int k = 0; k < s->n_profiles; k++) {
            db->devs[db->n++] = &slices[k];
            if ((st = idx_add(slices[k].name, &slices[k], s->profiles[k].at, &bc))) return st;
        }
        if ((st = pp_dev_mig_aliases(db->a, s, s->resolved, slices, idx_add, &bc))) return st;
    }
    if ((st = idx_sort_check(db, err))) return st;
    qsort(db->devs, (size_t)db->n, sizeof *db->devs, dev_cmp);

    /* calibration_from must name a whole (non-MIG) descriptor other than itself */
    for (int i = 0; i < n; i++) {
        pp_dev_src *s = &srcs[i];
        if (!s->d.calibration_from) continue;
        const pp_device *f = pp_devices_find(db, s->d.calibration_from);
        if (!f || f->is_mig || f == s->resolved)
            return pp_dev_err_at(err, PERFPRED_ERR_DEVICE, s->calibration_from_at,
                                 "calibration_from '%s' is not another whole device descriptor",
                                 s->d.calibration_from);
        s->resolved->calibration_from = f->name;
    }
    /* a MIG instance read back from a dump is linked to its parent when that is loaded too */
    for (int i = 0; i < n; i++) {
        pp_dev_src *s = &srcs[i];
        if (!s->has_mig_instance) continue;
        const pp_device *p = pp_devices_find(db, s->mig_parent);
        if (p && !p->is_mig) s->resolved->parent = p;
    }
    return PERFPRED_OK;
}

perfpred_status pp_devices_load_files(const char *const *paths, int n, pp_device_db **out,
                                      pp_err *err)
{
    if (!out || (n > 0 && !paths) || n < 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "pp_devices_load_files: bad arguments");
    *out = NULL;
    pp_device_db *db = calloc(1, sizeof *db);
    if (!db || !(db->a = pp_arena_new())) {
        free(db);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "devices: out of memory");
    }
    pp_dev_src *srcs = NULL;
    int n_src = 0, cap = 0;
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < n && !st; i++) st = pp_dev_parse_file(paths[i], db->a, &srcs, &n_src, &cap, err);
    if (!st) st = build(db, srcs, n_src, err);
    if (st) {
        pp_devices_free(db);
        return st;
    }
    *out = db;
    return PERFPRED_OK;
}

static int str_cmp(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* A growing list of descriptor paths. */
typedef struct {
    char **p;
    int n, cap;
} path_list;

static void paths_free(path_list *L)
{
    for (int i = 0; i < L->n; i++) free(L->p[i]);
    free(L->p);
}

static perfpred_status paths_add(path_list *L, const char *a, const char *b, pp_err *err)
{
    if (L->n == L->cap) {
        int nc = L->cap ? L->cap * 2 : 64;
        char **np = realloc(L->p, (size_t)nc * sizeof *np);
        if (!np) return pp_err_set(err, PERFPRED_ERR_NOMEM, "devices: out of memory");
        L->p = np;
        L->cap = nc;
    }
    size_t sz = strlen(a) + (b ? strlen(b) + 1 : 0) + 1;
    if (!(L->p[L->n] = malloc(sz)))
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "devices: out of memory");
    snprintf(L->p[L->n++], sz, b ? "%s/%s" : "%s", a, b ? b : "");
    return PERFPRED_OK;
}

/* Every *.yaml of dir, sorted by name, onto L; none is an error. */
static perfpred_status collect_dir(const char *dir, path_list *L, pp_err *err)
{
    DIR *d = opendir(dir);
    if (!d) return pp_err_set(err, PERFPRED_ERR_IO, "%s: cannot open device directory", dir);
    int first = L->n;
    perfpred_status st = PERFPRED_OK;
    for (struct dirent *e; !st && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0) continue;
        st = paths_add(L, dir, e->d_name, err);
    }
    closedir(d);
    if (!st && L->n == first)
        st = pp_err_set(err, PERFPRED_ERR_DEVICE, "%s: no *.yaml descriptors", dir);
    if (!st) qsort(L->p + first, (size_t)(L->n - first), sizeof *L->p, str_cmp);
    return st;
}

/* dir's descriptors, then those of a ':'-separated list of files and folders (NULL: none). */
static perfpred_status load_with(const char *dir, const char *list, const char *what,
                                 pp_device_db **out, pp_err *err)
{
    if (!dir || !out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: NULL", what);
    *out = NULL;
    path_list L = {0};
    perfpred_status st = collect_dir(dir, &L, err);
    for (const char *c = list; !st && c && *c;) {
        const char *end = strchr(c, ':');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        char entry[4096];
        if (len >= sizeof entry) {
            st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                            "PERFPRED_DEVICES: an entry is longer than %zu characters",
                            sizeof entry - 1);
            break;
        }
        memcpy(entry, c, len);
        entry[len] = 0;
        c = end ? end + 1 : c + len;
        if (!len) continue;
        struct stat sb;
        if (stat(entry, &sb) != 0)
            st = pp_err_set(err, PERFPRED_ERR_IO, "PERFPRED_DEVICES: %s: %s", entry,
                            strerror(errno));
        else if (S_ISDIR(sb.st_mode))
            st = collect_dir(entry, &L, err);
        else
            st = paths_add(&L, entry, NULL, err);
    }
    if (!st) st = pp_devices_load_files((const char *const *)L.p, L.n, out, err);
    paths_free(&L);
    return st;
}

perfpred_status pp_devices_load_dir(const char *dir, pp_device_db **out, pp_err *err)
{
    return load_with(dir, NULL, "pp_devices_load_dir", out, err);
}

perfpred_status pp_devices_load_config(const char *dir, pp_device_db **out, pp_err *err)
{
    return load_with(dir, getenv("PERFPRED_DEVICES"), "pp_devices_load_config", out, err);
}

void pp_devices_free(pp_device_db *db)
{
    if (!db) return;
    pp_arena_free(db->a);
    free(db);
}

int pp_devices_count(const pp_device_db *db) { return db ? db->n : 0; }

const pp_device *pp_devices_at(const pp_device_db *db, int i)
{
    return db && i >= 0 && i < db->n ? db->devs[i] : NULL;
}

static int key_cmp(const void *k, const void *e)
{
    return strcmp((const char *)k, ((const idx_entry *)e)->key);
}

const pp_device *pp_devices_find(const pp_device_db *db, const char *name)
{
    if (!db || !name || !db->n_idx) return NULL;
    char low[256];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof low) return NULL;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    const idx_entry *e = bsearch(low, db->idx, (size_t)db->n_idx, sizeof *db->idx, key_cmp);
    return e ? e->dev : NULL;
}

int pp_device_named(const pp_device *d, const char *name)
{
    if (strcmp(name, d->name) == 0) return 1;
    for (int a = 0; a < d->n_aliases; a++)
        if (strcmp(name, d->aliases[a]) == 0) return 1;
    return 0;
}

double pp_device_stream_gbs(const pp_device *d)
{
    return d->stream_bandwidth_gbs > 0 ? d->stream_bandwidth_gbs
                                       : PP_STREAM_SHARE_OF_PEAK * d->memory_bandwidth_gbs;
}

double pp_device_sm_stream_gbs(const pp_device *d)
{
    const pp_device *p = d->is_mig && d->parent ? d->parent : d;
    double bw = pp_device_stream_gbs(p);
    double best = p->compute_units > 0 ? bw / p->compute_units : 0;
    for (int i = 0; i < p->n_mig_profiles && p->mig_total_memory > 0; i++) {
        const pp_mig_profile *m = &p->mig_profiles[i];
        if (m->compute_units > 0)
            best = fmax(best, bw * m->memory_slices / p->mig_total_memory / m->compute_units);
    }
    return best;
}

int pp_device_is_eager_pytorch_cpu(const pp_device *d)
{
    return d->kind == PP_DEV_CPU && d->runtime_framework &&
           strcmp(d->runtime_framework, "pytorch-eager") == 0;
}

/* |ln(x / y)|, or 0 where either is not stated */
static double log_gap(double x, double y) { return x > 0 && y > 0 ? fabs(log(x / y)) : 0; }

double pp_device_cpu_distance(const pp_device *a, const pp_device *b)
{
    int na = a->compute_units > 0 ? a->compute_units : 1;
    int nb = b->compute_units > 0 ? b->compute_units : 1;
    double ca = a->peak_tflops[PP_PREC_FP32] * 1e3 / na;
    double cb = b->peak_tflops[PP_PREC_FP32] * 1e3 / nb;
    double ba = a->memory_bandwidth_gbs / na, bb = b->memory_bandwidth_gbs / nb;
    if (!(ca > 0) || !(cb > 0) || !(ba > 0) || !(bb > 0)) return INFINITY;
    /* every ratio a transfer scales by: the fewer and smaller, the less it extrapolates */
    return log_gap(ca, cb) + log_gap(ba, bb) + log_gap(a->gemm_gflops, b->gemm_gflops) +
           log_gap(a->launch_overhead_us, b->launch_overhead_us);
}

int pp_cpu_vendor_family(const char *vendor)
{
    if (!vendor) return 0;
    char v[64];
    size_t n = 0;
    for (; vendor[n] && n + 1 < sizeof v; n++) v[n] = (char)tolower((unsigned char)vendor[n]);
    v[n] = 0;
    if (strstr(v, "intel")) return 1;
    if (strstr(v, "amd")) return 2;
    if (strstr(v, "arm") || strstr(v, "raspberry")) return 3;
    return 0;
}

const char *pp_default_config_dir(void)
{
    const char *env = getenv("PERFPRED_CONFIG_DIR");
    if (env && *env) return env;
    struct stat st;
    if (stat(PERFPRED_SOURCE_CONFIG_DIR, &st) == 0 && S_ISDIR(st.st_mode))
        return PERFPRED_SOURCE_CONFIG_DIR;
    return PERFPRED_INSTALL_CONFIG_DIR;
}
