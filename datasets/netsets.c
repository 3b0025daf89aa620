/* datasets/netsets.c: model refs resolved to analysed graphs (NAS encodings built by graph/build_*.c,
 * .onnx files loaded), held-out-architecture families by hash, and importers that read HELP,
 * HW-NAS-Bench-360 and Eagle's LatBench in place into network-measurement rows, mapping their
 * device columns to descriptors by name or alias. Bad values are counted with file:line. */
#include "datasets/datasets.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/devices.h"

/* "input:1x3x224x224;mask:1x128" -> overrides whose names point into buf. */
static perfpred_status parse_shapes(const char *s, char *buf, size_t n,
                                    perfpred_input_override *ov, int max, int *n_ov, pp_err *err)
{
    *n_ov = 0;
    if (strlen(s) >= n) return pp_err_set(err, PERFPRED_ERR_PARSE, "input_shapes too long");
    strcpy(buf, s);
    for (char *p = buf; *p;) {
        char *semi = strchr(p, ';');
        if (semi) *semi = '\0';
        char *colon = strrchr(p, ':');
        if (!colon || colon == p || *n_ov == max)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "input_shapes '%s': bad entry '%s'", s, p);
        *colon = '\0';
        perfpred_input_override *o = &ov[(*n_ov)++];
        memset(o, 0, sizeof *o);
        o->name = p;
        o->rank = pp_parse_dims(colon + 1, o->dims, PERFPRED_MAX_RANK);
        if (o->rank < 0)
            return pp_err_set(err, PERFPRED_ERR_PARSE, "input_shapes '%s': bad dims for '%s'", s, p);
        if (!semi) break;
        p = semi + 1;
    }
    return PERFPRED_OK;
}

perfpred_status pp_datasets_net_graph(const pp_net_row *row, const char *table_path, pp_graph **out,
                                      pp_err *err)
{
    *out = NULL;
    char shapes[1024];
    perfpred_input_override ov[8];
    pp_shape_opts o = {0};
    o.batch = row->batch;
    perfpred_status st = parse_shapes(row->input_shapes ? row->input_shapes : "", shapes,
                                      sizeof shapes, ov, 8, &o.n_inputs, err);
    if (st) return st;
    o.inputs = o.n_inputs ? ov : NULL;
    if (pp_net_ref_is_builtin(row->model) || row->model[0] == '/' || !table_path)
        return pp_net_graph_from_ref(row->model, &o, out, err);
    char path[4096];
    const char *slash = strrchr(table_path, '/');
    if (!slash) return pp_net_graph_from_ref(row->model, &o, out, err);
    if (snprintf(path, sizeof path, "%.*s/%s", (int)(slash - table_path), table_path, row->model) >=
        (int)sizeof path)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", row->model);
    return pp_net_graph_from_ref(path, &o, out, err);
}

int pp_datasets_family_bucket(const char *family)
{
    if (!family) return -1;
    const char *h = strrchr(family, '-');
    if (!h || h[1] != 'h' || !isdigit((unsigned char)h[2]) || !isdigit((unsigned char)h[3]) || h[4])
        return -1;
    return (h[2] - '0') * 10 + (h[3] - '0');
}

/* -------------------------------------------------------------------- tables ---- */

static pp_net_table *table_new(const char *path)
{
    pp_net_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->arena = pp_arena_new();
    if (!t->arena || !(t->path = pp_arena_strdup(t->arena, path))) {
        pp_measure_net_table_free(t);
        return NULL;
    }
    return t;
}

/* Appends a copy of r (strings into t's arena). */
static perfpred_status table_add(pp_net_table *t, const pp_net_row *r, pp_err *err)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 1024;
        pp_net_row *nr = realloc(t->rows, (size_t)cap * sizeof *nr);
        if (!nr) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
        t->rows = nr;
        t->cap = cap;
    }
    pp_net_row c = *r;
    const char **s[] = {&c.model, &c.family, &c.device, &c.runtime, &c.runtime_version,
                        &c.input_shapes, &c.source, &c.date};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        const char *v = *s[i] ? *s[i] : "";
        if (!(*s[i] = pp_arena_strdup(t->arena, v)))
            return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", t->path);
    }
    t->rows[t->n++] = c;
    return PERFPRED_OK;
}

perfpred_status pp_datasets_net_table_append(pp_net_table *dst, const pp_net_table *src,
                                             pp_err *err)
{
    for (int i = 0; i < src->n; i++) {
        perfpred_status st = table_add(dst, &src->rows[i], err);
        if (st) return st;
    }
    dst->bad.n += src->bad.n;
    for (int i = 0; i < src->bad.n_kept && dst->bad.n_kept < PP_BAD_ROWS_KEPT; i++) {
        char *m = pp_arena_strdup(dst->arena, src->bad.msgs[i]);
        if (!m) return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory", dst->path);
        dst->bad.msgs[dst->bad.n_kept++] = m;
    }
    return PERFPRED_OK;
}

/* ----------------------------------------------------------------- importers ---- */

pp_netset_opts pp_datasets_netset_default_opts(void)
{
    pp_netset_opts o;
    memset(&o, 0, sizeof o);
    return o;
}

const char *pp_datasets_netset_root(void)
{
    const char *env = getenv("PERFPRED_DATASETS");
    if (env && *env) return env;
#ifdef PERFPRED_SOURCE_CONFIG_DIR
    return PERFPRED_SOURCE_CONFIG_DIR "/../../shared/datasets";
#else
    return "../shared/datasets";
#endif
}

/* Commit (40 hex) and the first YYYY-MM-DD after it in <dir>/SOURCE.md. */
typedef struct source_info {
    char commit[41];
    char date[11];
} source_info;

static perfpred_status read_source(const char *dir, source_info *si, pp_err *err)
{
    memset(si, 0, sizeof *si);
    char path[PP_SOURCE_MD_PATH], *buf;
    perfpred_status st = pp_datasets_source_md(dir, path, &buf, err);
    if (st) return st;
    const char *s = buf;
    size_t len = strlen(buf);
    size_t at = 0;
    for (size_t i = 0; i + 40 <= len && !si->commit[0]; i++) {
        size_t k = 0;
        while (i + k < len && isxdigit((unsigned char)s[i + k])) k++;
        if (k == 40 && (i == 0 || !isalnum((unsigned char)s[i - 1]))) {
            memcpy(si->commit, s + i, 40);
            at = i + 40;
        }
        i += k;
    }
    for (size_t i = at; si->commit[0] && i + 10 <= len && !si->date[0]; i++) {
        const char *d = s + i;
        if (isdigit((unsigned char)d[0]) && isdigit((unsigned char)d[1]) &&
            isdigit((unsigned char)d[2]) && isdigit((unsigned char)d[3]) && d[4] == '-' &&
            isdigit((unsigned char)d[5]) && isdigit((unsigned char)d[6]) && d[7] == '-' &&
            isdigit((unsigned char)d[8]) && isdigit((unsigned char)d[9]))
            memcpy(si->date, d, 10);
    }
    free(buf);
    if (!si->commit[0] || !si->date[0])
        return pp_err_set(err, PERFPRED_ERR_PARSE,
                          "%s: no commit hash (40 hex digits) followed by a YYYY-MM-DD date", path);
    return PERFPRED_OK;
}

static void stats_skip(pp_netset_stats *s, const char *name)
{
    s->n_skipped_columns++;
    size_t off = strlen(s->skipped);
    if (off + strlen(name) + 3 < sizeof s->skipped)
        snprintf(s->skipped + off, sizeof s->skipped - off, "%s%s", off ? ", " : "", name);
}

/* Descriptor for a dataset's device key: the key itself, else the key without '_'. */
static const pp_device *find_device(const pp_device_db *db, const char *key)
{
    const pp_device *d = pp_devices_find(db, key);
    if (d) return d;
    char k2[64];
    size_t j = 0;
    for (const char *p = key; *p && j + 1 < sizeof k2; p++)
        if (*p != '_') k2[j++] = *p;
    k2[j] = '\0';
    return pp_devices_find(db, k2);
}

typedef struct importer {
    const char *dataset;     /* "help-nb201", ... */
    const char *tag;         /* source prefix: "help", "hw-nas-bench-360", "eagle" */
    const char *file;        /* path relative to its dataset folder, for sources */
    const pp_netset_opts *opts;
    pp_device_db *db;
    const pp_device *only;   /* device filter, or NULL */
    source_info src;
    pp_net_table *t;
    pp_netset_stats *stats;
    int n_cols;
    /* per column: role */
    int *col_dev;            /* index into devs[] or -1 */
    int col_a, col_b, col_c, col_d, col_e, col_f; /* dataset-specific columns */
    int n_devs;
    struct {
        const pp_device *dev;
        int64_t batch;
        int fold;
        const char *column;
    } devs[64];
    /* hw-nas-bench-360: arch_idx -> NB201 string */
    char (*nb201_arch)[96];
    int n_nb201;
} importer;

static void importer_free(importer *im)
{
    free(im->col_dev);
    free(im->nb201_arch);
    pp_devices_free(im->db);
}

static int find_col(const pp_csv_record *rec, const char *name)
{
    for (int f = 0; f < rec->n_fields; f++)
        if (strcmp(rec->fields[f], name) == 0) return f;
    return -1;
}

static int missing_col(const pp_csv_record *rec, const char *name, pp_err *err)
{
    pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: missing column '%s'", rec->path, rec->line, name);
    return -1;
}

/* HELP header: arch columns plus "<dev>[_<batch>]_ms" device columns. */
static int help_header(importer *im, const pp_csv_record *rec, pp_err *err)
{
    im->n_cols = rec->n_fields;
    im->col_dev = malloc((size_t)rec->n_fields * sizeof(int));
    if (!im->col_dev) {
        pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
        return -1;
    }
    for (int f = 0; f < rec->n_fields; f++) {
        im->col_dev[f] = -1;
        const char *c = rec->fields[f];
        size_t len = strlen(c);
        if (len < 4 || strcmp(c + len - 3, "_ms") != 0) continue;
        char key[64];
        if (len - 3 >= sizeof key) continue;
        memcpy(key, c, len - 3);
        key[len - 3] = '\0';
        if (strcmp(key, "eyeriss") == 0 || strcmp(key, "fpga") == 0) {
            stats_skip(im->stats, c); /* simulator estimates, not measurements */
            continue;
        }
        int64_t batch = 1;
        const pp_device *d = find_device(im->db, key);
        if (!d) {
            char *us = strrchr(key, '_');
            int64_t b;
            if (us && pp_parse_i64(us + 1, &b) == 0 && b >= 1) {
                *us = '\0';
                d = find_device(im->db, key);
                batch = b;
            }
        }
        if (!d || (im->only && d != im->only) || im->n_devs == 64) {
            stats_skip(im->stats, c);
            continue;
        }
        int k = im->n_devs++;
        im->devs[k].dev = d;
        im->devs[k].batch = batch;
        /* HW-NAS-Bench's TFLite columns: 'none' edges pruned (PP_NB201_PRUNE) */
        im->devs[k].fold = strcmp(im->dataset, "help-nb201") == 0 &&
                           (strcmp(key, "raspi4") == 0 || strcmp(key, "pixel3") == 0);
        im->devs[k].column = pp_arena_strdup(im->t->arena, c);
        if (!im->devs[k].column) {
            pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            return -1;
        }
        im->col_dev[f] = k;
    }
    if (strcmp(im->dataset, "help-nb201") == 0) {
        if ((im->col_a = find_col(rec, "arch_str")) < 0) return missing_col(rec, "arch_str", err);
    } else if (strcmp(im->dataset, "help-fbnet") == 0) {
        if ((im->col_a = find_col(rec, "op_idx_list")) < 0)
            return missing_col(rec, "op_idx_list", err);
    } else {
        static const char *const cols[4] = {"ks", "e", "d", "r"};
        int *dst[4] = {&im->col_a, &im->col_b, &im->col_c, &im->col_d};
        for (int i = 0; i < 4; i++)
            if ((*dst[i] = find_col(rec, cols[i])) < 0) return missing_col(rec, cols[i], err);
    }
    return 0;
}

static void fill_row_common(importer *im, pp_net_row *r, const pp_device *d, int64_t batch,
                            char *source, size_t sn, int line, const char *column)
{
    memset(r, 0, sizeof *r);
    r->device = d->name;
    r->runtime = d->runtime_framework ? d->runtime_framework : "";
    r->runtime_version = "";
    r->precision = d->runtime_precision;
    r->batch = batch;
    r->input_shapes = "";
    r->latency_spread_ms = NAN;
    r->repetitions = -1;
    r->energy_j = NAN;
    r->peak_memory_bytes = -1;
    snprintf(source, sn, "%s@%.7s:%s:%d:%s", im->tag, im->src.commit, im->file, line, column);
    r->source = source;
    r->date = im->src.date;
    r->line = line;
}

static int help_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    importer *im = user;
    if (is_header) return help_header(im, rec, err);
    pp_net_table *t = im->t;
    if (rec->n_fields != im->n_cols) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%d fields, the header has %d",
                           rec->n_fields, im->n_cols);
        return 0;
    }
    char ref[600], fam[64];
    pp_err e;
    if (strcmp(im->dataset, "help-nb201") == 0) {
        pp_nb201_arch a;
        if (pp_nb201_parse(rec->fields[im->col_a], &a, &e)) {
            pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%s", e.msg);
            return 0;
        }
        char canon[160];
        snprintf(ref, sizeof ref, "nb201:%s@cifar10", pp_nb201_format(&a, canon, sizeof canon));
    } else if (strcmp(im->dataset, "help-fbnet") == 0) {
        pp_fbnet_arch a;
        if (pp_fbnet_parse(rec->fields[im->col_a], &a, &e)) {
            pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%s", e.msg);
            return 0;
        }
        size_t off = (size_t)snprintf(ref, sizeof ref, "fbnet:");
        for (int i = 0; i < PP_FBNET_LAYERS; i++)
            off += (size_t)snprintf(ref + off, sizeof ref - off, "%s%d", i ? "," : "", a.op[i]);
    } else {
        char tmp[600];
        snprintf(tmp, sizeof tmp, "ks=%s;e=%s;d=%s;r=%s", rec->fields[im->col_a],
                 rec->fields[im->col_b], rec->fields[im->col_c], rec->fields[im->col_d]);
        pp_ofa_arch a;
        if (pp_ofa_parse(tmp, &a, &e)) {
            pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%s", e.msg);
            return 0;
        }
        size_t off = (size_t)snprintf(ref, sizeof ref, "ofa:ks=");
        for (int i = 0; i < PP_OFA_BLOCKS; i++)
            off += (size_t)snprintf(ref + off, sizeof ref - off, "%s%d", i ? "," : "", a.ks[i]);
        off += (size_t)snprintf(ref + off, sizeof ref - off, ";e=");
        for (int i = 0; i < PP_OFA_BLOCKS; i++)
            off += (size_t)snprintf(ref + off, sizeof ref - off, "%s%d", i ? "," : "", a.e[i]);
        off += (size_t)snprintf(ref + off, sizeof ref - off, ";d=");
        for (int i = 0; i < PP_OFA_STAGES; i++)
            off += (size_t)snprintf(ref + off, sizeof ref - off, "%s%d", i ? "," : "", a.d[i]);
        snprintf(ref + off, sizeof ref - off, ";r=%d", a.r);
    }
    if (pp_net_ref_family(ref, fam, sizeof fam) != 0) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "no family for '%s'", ref);
        return 0;
    }
    for (int f = 0; f < rec->n_fields; f++) {
        int k = im->col_dev[f];
        if (k < 0) continue;
        double v;
        if (pp_parse_double(rec->fields[f], &v) != 0 || !(v > 0)) {
            pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line,
                               "column %s: latency '%s' is not a number > 0", im->devs[k].column,
                               rec->fields[f]);
            continue;
        }
        pp_net_row r;
        char source[256], fref[620];
        fill_row_common(im, &r, im->devs[k].dev, im->devs[k].batch, source, sizeof source,
                        rec->line, im->devs[k].column);
        snprintf(fref, sizeof fref, "%s%s", ref, im->devs[k].fold ? ";prune" : "");
        r.model = fref;
        r.family = fam;
        r.latency_ms = v;
        if (table_add(t, &r, err)) return -1;
        im->stats->n_rows++;
    }
    return 0;
}

/* HELP's NB201 table read for its arch_idx -> cell string column (HW-NAS-Bench-360 needs it). */
static int nb201_index_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    importer *im = user;
    if (is_header) {
        if ((im->col_e = find_col(rec, "arch_idx")) < 0) return missing_col(rec, "arch_idx", err);
        if ((im->col_f = find_col(rec, "arch_str")) < 0) return missing_col(rec, "arch_str", err);
        im->nb201_arch = calloc(15625, sizeof *im->nb201_arch);
        if (!im->nb201_arch) {
            pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            return -1;
        }
        return 0;
    }
    int64_t idx;
    pp_err e;
    pp_nb201_arch a;
    if (rec->n_fields <= im->col_e || rec->n_fields <= im->col_f ||
        pp_parse_i64(rec->fields[im->col_e], &idx) != 0 || idx < 0 || idx >= 15625 ||
        pp_nb201_parse(rec->fields[im->col_f], &a, &e) != PERFPRED_OK) {
        pp_err_set(err, PERFPRED_ERR_PARSE, "%s:%d: bad arch_idx or arch_str", rec->path, rec->line);
        return -1;
    }
    pp_nb201_format(&a, im->nb201_arch[idx], sizeof im->nb201_arch[idx]);
    if ((int)idx + 1 > im->n_nb201) im->n_nb201 = (int)idx + 1;
    return 0;
}

enum { H3_ARCH, H3_REP, H3_DEV, H3_FW, H3_TASK, H3_LAT, H3_ENERGY, H3_STATUS, H3__COUNT };

static int hwnb_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    importer *im = user;
    pp_net_table *t = im->t;
    static const char *const cols[H3__COUNT] = {"arch_idx",      "rep_arch_idx", "device",
                                                "framework",     "task",         "lat_ms_median",
                                                "energy_mj",     "status"};
    if (is_header) {
        im->n_cols = rec->n_fields;
        im->col_dev = malloc(H3__COUNT * sizeof(int));
        if (!im->col_dev) {
            pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
            return -1;
        }
        for (int c = 0; c < H3__COUNT; c++)
            if ((im->col_dev[c] = find_col(rec, cols[c])) < 0) return missing_col(rec, cols[c], err);
        /* pi5 runtimes -> descriptors (pixel: no descriptor says which Pixel it was) */
        static const char *const fw[3] = {"litert", "onnx", "torchmobile"};
        static const char *const names[3] = {"rpi5", "rpi5-onnxruntime", "rpi5-pytorch-mobile"};
        for (int i = 0; i < 3; i++) {
            const pp_device *d = pp_devices_find(im->db, names[i]);
            int k = im->n_devs++;
            im->devs[k].dev = (d && (!im->only || d == im->only)) ? d : NULL;
            im->devs[k].fold = i == 0; /* LiteRT: 'none' edges pruned (PP_NB201_PRUNE) */
            im->devs[k].column = fw[i];
            im->devs[k].batch = 1;
            if (!im->devs[k].dev) stats_skip(im->stats, names[i]);
        }
        stats_skip(im->stats, "pixel");
        return 0;
    }
    if (rec->n_fields != im->n_cols) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%d fields, the header has %d",
                           rec->n_fields, im->n_cols);
        return 0;
    }
    const char *f[H3__COUNT];
    for (int c = 0; c < H3__COUNT; c++) f[c] = rec->fields[im->col_dev[c]];
    if (strcmp(f[H3_DEV], "pi5") != 0) return 0; /* counted once as a skipped column */
    int k = -1;
    for (int i = 0; i < im->n_devs; i++)
        if (strcmp(f[H3_FW], im->devs[i].column) == 0) k = i;
    if (k < 0) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "unknown framework '%s'",
                           f[H3_FW]);
        return 0;
    }
    if (!im->devs[k].dev) return 0;
    if (im->opts->task && strcmp(im->opts->task, f[H3_TASK]) != 0) return 0;
    int64_t idx, rep;
    double lat, emj = NAN;
    pp_nb201_opts o;
    pp_err e;
    const char *why = NULL;
    if (pp_parse_i64(f[H3_ARCH], &idx) || idx < 0 || idx >= im->n_nb201 ||
        !im->nb201_arch[idx][0])
        why = "arch_idx is not a NAS-Bench-201 index";
    else if (pp_parse_i64(f[H3_REP], &rep) || rep < 0 || rep >= im->n_nb201)
        why = "rep_arch_idx is not a NAS-Bench-201 index";
    else if (pp_nb201_dataset(f[H3_TASK], &o, &e))
        why = "unknown task";
    else if (strcmp(f[H3_STATUS], "ok") != 0)
        why = "status is not 'ok'";
    else if (pp_parse_double(f[H3_LAT], &lat) || !(lat > 0))
        why = "lat_ms_median is not a number > 0";
    else if (f[H3_ENERGY][0] && (pp_parse_double(f[H3_ENERGY], &emj) || !(emj > 0)))
        why = "energy_mj is not a number > 0";
    if (why) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%s", why);
        return 0;
    }
    if (!im->opts->all_copies && idx != rep) return 0;
    char ref[200], fam[64], source[256];
    snprintf(ref, sizeof ref, "nb201:%s@%s%s", im->nb201_arch[idx], f[H3_TASK],
             im->devs[k].fold ? ";prune" : "");
    char rep_ref[200];
    snprintf(rep_ref, sizeof rep_ref, "nb201:%s", im->nb201_arch[rep]);
    if (pp_net_ref_family(rep_ref, fam, sizeof fam) != 0) return 0;
    pp_net_row r;
    fill_row_common(im, &r, im->devs[k].dev, 1, source, sizeof source, rec->line, f[H3_FW]);
    r.model = ref;
    r.family = fam;
    r.latency_ms = lat;
    r.energy_j = emj * 1e-3; /* mJ per inference -> J per batch of one */
    if (table_add(t, &r, err)) return -1;
    im->stats->n_rows++;
    return 0;
}

static int eagle_record(const pp_csv_record *rec, int is_header, void *user, pp_err *err)
{
    importer *im = user;
    pp_net_table *t = im->t;
    if (is_header) {
        im->n_cols = rec->n_fields;
        if ((im->col_a = find_col(rec, "arch_str")) < 0) return missing_col(rec, "arch_str", err);
        if ((im->col_b = find_col(rec, "latency_s")) < 0) return missing_col(rec, "latency_s", err);
        const pp_device *d = pp_devices_find(im->db, "core-i7-7820x");
        im->devs[0].dev = (d && (!im->only || d == im->only)) ? d : NULL;
        if (!im->devs[0].dev) stats_skip(im->stats, "core-i7-7820x");
        return 0;
    }
    if (!im->devs[0].dev) return 0;
    if (rec->n_fields != im->n_cols) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%d fields, the header has %d",
                           rec->n_fields, im->n_cols);
        return 0;
    }
    pp_nb201_arch a;
    pp_err e;
    double s;
    if (pp_nb201_parse(rec->fields[im->col_a], &a, &e)) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line, "%s", e.msg);
        return 0;
    }
    if (pp_parse_double(rec->fields[im->col_b], &s) || !(s > 0)) {
        pp_measure_bad_row(&t->bad, t->arena, rec->path, rec->line,
                           "latency_s '%s' is not a number > 0", rec->fields[im->col_b]);
        return 0;
    }
    char canon[160], ref[200], fam[64], source[256];
    /* Eagle's LatBench runs TensorFlow, whose grappler folds 'none' edges away */
    snprintf(ref, sizeof ref, "nb201:%s@cifar10;fold", pp_nb201_format(&a, canon, sizeof canon));
    if (pp_net_ref_family(ref, fam, sizeof fam) != 0) return 0;
    pp_net_row r;
    fill_row_common(im, &r, im->devs[0].dev, 1, source, sizeof source, rec->line, "latency_s");
    r.model = ref;
    r.family = fam;
    r.latency_ms = s * 1e3;
    if (table_add(t, &r, err)) return -1;
    im->stats->n_rows++;
    return 0;
}

perfpred_status pp_datasets_netset_import(const char *dataset, const pp_netset_opts *opts,
                                          pp_net_table **out, pp_netset_stats *stats, pp_err *err)
{
    *out = NULL;
    pp_netset_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    pp_netset_opts o = opts ? *opts : pp_datasets_netset_default_opts();
    if (!dataset) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "netset: NULL dataset name");
    const char *root = o.root ? o.root : pp_datasets_netset_root();
    const char *folder, *file, *tag;
    pp_csv_record_fn fn;
    if (!strcmp(dataset, "help-nb201") || !strcmp(dataset, "help-fbnet") ||
        !strcmp(dataset, "help-ofa")) {
        folder = "help";
        tag = "help";
        file = !strcmp(dataset, "help-nb201")   ? "help_nasbench201_latency.csv"
               : !strcmp(dataset, "help-fbnet") ? "help_fbnet_latency.csv"
                                                : "help_ofa_latency.csv";
        fn = help_record;
    } else if (!strcmp(dataset, "hw-nas-bench-360")) {
        folder = "hw-nas-bench-360";
        tag = "hw-nas-bench-360";
        file = "results/dataset.csv";
        fn = hwnb_record;
    } else if (!strcmp(dataset, "eagle")) {
        folder = "eagle-latbench-desktop-cpu";
        tag = "eagle";
        file = "desktop-cpu-core-i7-7820x-fp32.csv";
        fn = eagle_record;
    } else {
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                          "netset: unknown dataset '%s' (help-nb201, help-fbnet, help-ofa, "
                          "hw-nas-bench-360, eagle)",
                          dataset);
    }
    importer im;
    memset(&im, 0, sizeof im);
    im.dataset = dataset;
    im.tag = tag;
    im.file = file;
    im.opts = &o;
    im.stats = stats;
    char dir[2048], path[4096], devdir[4096];
    if (snprintf(dir, sizeof dir, "%s/%s", root, folder) >= (int)sizeof dir ||
        snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path ||
        snprintf(devdir, sizeof devdir, "%s/devices",
                 o.config_dir ? o.config_dir : pp_default_config_dir()) >= (int)sizeof devdir)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "netset: path too long under %s", root);
    perfpred_status st = read_source(dir, &im.src, err);
    if (!st) st = pp_devices_load_config(devdir, &im.db, err);
    if (!st && o.device && !(im.only = pp_devices_find(im.db, o.device)))
        st = pp_err_set(err, PERFPRED_ERR_DEVICE, "netset: unknown device '%s'", o.device);
    if (!st && !(im.t = table_new(path))) st = pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory");
    if (!st && fn == hwnb_record) {
        char nb[4096];
        if (snprintf(nb, sizeof nb, "%s/help/help_nasbench201_latency.csv", root) >= (int)sizeof nb)
            st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "netset: path too long");
        else
            st = pp_measure_csv_read(nb, nb201_index_record, &im, err);
        if (!st && im.n_nb201 != 15625)
            st = pp_err_set(err, PERFPRED_ERR_PARSE, "%s: %d cells, expected 15625", nb,
                            im.n_nb201);
        free(im.col_dev);
        im.col_dev = NULL;
    }
    if (!st) st = pp_measure_csv_read(path, fn, &im, err);
    if (st) {
        pp_measure_net_table_free(im.t);
        importer_free(&im);
        return st;
    }
    importer_free(&im);
    *out = im.t;
    return PERFPRED_OK;
}

static const char *const netset_names[] = {"help-nb201", "help-fbnet", "help-ofa",
                                           "hw-nas-bench-360", "eagle"};

static int is_netset_name(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof netset_names / sizeof netset_names[0]; i++)
        if (strlen(netset_names[i]) == len && !strncmp(s, netset_names[i], len)) return 1;
    return 0;
}

/* "help-nb201,help-fbnet": the rows of several datasets in one table (dataset names only: a CSV's
 * relative model paths belong to its own folder). */
static perfpred_status load_several(const char *source, const pp_netset_opts *opts,
                                    pp_net_table **out, pp_netset_stats *stats, pp_err *err)
{
    pp_net_table *all = NULL;
    perfpred_status st = PERFPRED_OK;
    if (stats) memset(stats, 0, sizeof *stats);
    size_t len;
    for (const char *c = source, *q; (q = pp_list_item(&c, &len));) {
        char name[64];
        if (!is_netset_name(q, len) || len >= sizeof name) {
            st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                            "'%s': only dataset names combine with ',' (help-nb201, help-fbnet, "
                            "help-ofa, hw-nas-bench-360, eagle); '%.*s' is not one",
                            source, (int)len, q);
            break;
        }
        memcpy(name, q, len);
        name[len] = '\0';
        pp_net_table *t = NULL;
        pp_netset_stats s1;
        if ((st = pp_datasets_netset_import(name, opts, &t, &s1, err))) break;
        if (stats) {
            stats->n_rows += s1.n_rows;
            stats->n_skipped_columns += s1.n_skipped_columns;
        }
        if (!all) {
            all = t;
        } else {
            st = pp_datasets_net_table_append(all, t, err);
            pp_measure_net_table_free(t);
            if (st) break;
        }
    }
    if (st) {
        pp_measure_net_table_free(all);
        return st;
    }
    *out = all;
    return PERFPRED_OK;
}

perfpred_status pp_datasets_net_rows_load(const char *source, const pp_netset_opts *opts,
                                          pp_net_table **out, pp_netset_stats *stats, pp_err *err)
{
    if (!out) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "net rows: NULL out");
    *out = NULL;
    if (!source) return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "net rows: NULL source");
    if (is_netset_name(source, strlen(source))) return pp_datasets_netset_import(source, opts, out,
                                                                                 stats, err);
    if (strchr(source, ',') && is_netset_name(source, (size_t)(strchr(source, ',') - source)))
        return load_several(source, opts, out, stats, err);
    if (stats) memset(stats, 0, sizeof *stats);
    perfpred_status st = pp_measure_net_csv_read(source, out, err);
    if (!st && stats) stats->n_rows = (*out)->n;
    return st;
}
