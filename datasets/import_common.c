/* datasets/import_common.c: what the dataset importers share (per-device bookkeeping, bad rows,
 * the rebuild check every imported row passes, SOURCE.md commits) and the public entry
 * perfpred_calibrate_import: one dataset in, one layer CSV out, with NeuSight's sweeps going through
 * datasets/neusight.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datasets/datasets.h"

static void copy_trunc(char *dst, size_t n, const char *src)
{
    size_t k = strlen(src);
    if (k >= n) k = n - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
}

pp_import_device *pp_datasets_import_device(pp_import_report *r, const char *device,
                                            const char *name)
{
    for (int i = 0; i < r->n_devices; i++)
        if (strcmp(r->devices[i].device, device) == 0) return &r->devices[i];
    if (r->n_devices == PP_IMPORT_MAX_DEVICES) return &r->devices[PP_IMPORT_MAX_DEVICES - 1];
    pp_import_device *d = &r->devices[r->n_devices++];
    memset(d, 0, sizeof *d);
    copy_trunc(d->device, sizeof d->device, device);
    copy_trunc(d->name, sizeof d->name, name ? name : device);
    return d;
}

void pp_datasets_import_note(pp_import_report *r, const char *fmt, ...)
{
    if (r->n_notes == PP_IMPORT_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->n_notes++], sizeof r->notes[0], fmt, ap);
    va_end(ap);
}

void pp_datasets_import_bad(pp_import_report *r, pp_layer_table *t, const char *device,
                            const char *name, const char *path, int line, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    pp_measure_bad_row(&t->bad, t->arena, path, line, "%s", why);
    r->n_bad++;
    if (device) pp_datasets_import_device(r, device, name)->n_bad++;
}

int pp_datasets_check_row(const pp_layer_row *row, pp_node_feat *feat, char *why, size_t why_n)
{
    pp_err e = {0};
    if (pp_layer_row_features(row, feat, &e) != PERFPRED_OK) {
        /* the message starts with the row's source; the caller names file:line already */
        const char *m = e.msg;
        size_t k = row->source ? strlen(row->source) : 0;
        if (k && strncmp(m, row->source, k) == 0 && m[k] == ':') m += k + 1;
        while (*m == ' ') m++;
        /* a long message is cut to why_n: the start names the problem */
        if (snprintf(why, why_n, "graph/ cannot rebuild the row: %s", m) < 0 && why_n) why[0] = '\0';
        return -1;
    }
    return 0;
}

static int is_hex40(const char *s)
{
    for (int i = 0; i < 40; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return !((s[40] >= '0' && s[40] <= '9') || (s[40] >= 'a' && s[40] <= 'f'));
}

static int is_date(const char *s)
{
    for (int i = 0; i < 10; i++) {
        int digit = s[i] >= '0' && s[i] <= '9';
        if ((i == 4 || i == 7) ? s[i] != '-' : !digit) return 0;
    }
    return 1;
}

perfpred_status pp_datasets_source_md(const char *root, char path[PP_SOURCE_MD_PATH], char **text,
                                      pp_err *err)
{
    *text = NULL;
    if (snprintf(path, PP_SOURCE_MD_PATH, "%s/SOURCE.md", root) >= PP_SOURCE_MD_PATH)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "%s: path too long", root);
    uint8_t *buf;
    size_t len;
    perfpred_status st = pp_read_file(path, &buf, &len, err);
    if (st == PERFPRED_OK) *text = (char *)buf; /* pp_read_file ends it with a NUL */
    return st;
}

perfpred_status pp_datasets_source_commit(const char *root, const char *after, char commit[41],
                                          char date[11], pp_err *err)
{
    commit[0] = '\0';
    if (date) date[0] = '\0';
    char path[PP_SOURCE_MD_PATH], *text;
    perfpred_status st = pp_datasets_source_md(root, path, &text, err);
    if (st != PERFPRED_OK) return st;
    const char *p = strstr(text, after);
    if (p) {
        for (p += strlen(after); *p && !is_hex40(p); p++) {}
        if (*p) {
            memcpy(commit, p, 40);
            commit[40] = '\0';
            const char *q = p + 40;
            for (; date && *q && *q != '\n'; q++)
                if (strlen(q) >= 10 && is_date(q)) {
                    memcpy(date, q, 10);
                    date[10] = '\0';
                    break;
                }
        }
    }
    free(text);
    if (!commit[0])
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: no 40-hex commit after '%s'", path, after);
    if (date && !date[0])
        return pp_err_set(err, PERFPRED_ERR_PARSE, "%s: no YYYY-MM-DD date after commit %.7s",
                          path, commit);
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------------ NeuSight ---- */

/* GPUs of NeuSight's training sweeps (datasets/neusight.c maps them to perfpred names). */
static const char *const neusight_gpus[] = {
    "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA L4",
    "Tesla V100-PCIE-32GB", "Tesla T4", "Tesla P100-PCIE-16GB", "Tesla P4", NULL};

/* Every operator file NeuSight has for each GPU (training split); rows are then checked like the
 * other datasets' (rebuilt as graphs). */
static perfpred_status neusight_import(const char *root, const pp_import_filter *f,
                                       pp_layer_table *t, pp_import_report *rep, pp_err *err)
{
    for (int g = 0; neusight_gpus[g]; g++) {
        const char *dev = pp_datasets_neusight_device(neusight_gpus[g]);
        if (!dev) continue;
        if (f->device && strcmp(f->device, dev) != 0) continue;
        for (int o = 0; pp_datasets_neusight_ops[o]; o++) {
            char rel[1024], path[4096];
            perfpred_status st = pp_datasets_neusight_path(pp_datasets_neusight_ops[o],
                                                           neusight_gpus[g], PP_NEUSIGHT_TRAIN, rel,
                                                           sizeof rel, err);
            if (st != PERFPRED_OK) return st;
            snprintf(path, sizeof path, "%s/%s", root, rel);
            if (access(path, R_OK) != 0) continue; /* not every GPU ran every sweep */
            int before_bad = t->bad.n, before = t->n, n = 0;
            st = pp_datasets_neusight_import(root, pp_datasets_neusight_ops[o], neusight_gpus[g],
                                             PP_NEUSIGHT_TRAIN, t, &n, err);
            if (st != PERFPRED_OK) return st;
            rep->n_files++;
            pp_import_device *d = pp_datasets_import_device(rep, dev, neusight_gpus[g]);
            d->n_bad += t->bad.n - before_bad;
            rep->n_bad += t->bad.n - before_bad;
            /* rebuild check; rows failing it are moved to the bad list */
            int w = before;
            for (int i = before; i < t->n; i++) {
                pp_node_feat feat;
                char why[512];
                pp_layer_row *r = &t->rows[i];
                if (f->runtime && strcmp(r->runtime, f->runtime) != 0) {
                    rep->n_filtered++;
                    continue;
                }
                if (pp_datasets_check_row(r, &feat, why, sizeof why) != 0) {
                    pp_datasets_import_bad(rep, t, dev, neusight_gpus[g], path, r->line, "%s", why);
                    continue;
                }
                t->rows[w++] = *r;
            }
            t->n = w;
            d->n_rows += w - before;
            rep->n_rows += w - before;
        }
    }
    return PERFPRED_OK;
}

/* ------------------------------------------------------------------- public entry ---- */

perfpred_import_params perfpred_import_default_params(void)
{
    perfpred_import_params p;
    memset(&p, 0, sizeof p);
    return p;
}

static void to_public(const pp_import_report *r, const pp_layer_table *t,
                      perfpred_import_report *out)
{
    out->n_files = r->n_files;
    out->n_rows = r->n_rows;
    out->n_bad_rows = r->n_bad;
    out->n_filtered = r->n_filtered;
    out->n_ignored = r->n_ignored;
    for (int i = 0; i < r->n_devices && out->n_devices < PERFPRED_IMPORT_MAX_DEVICES; i++) {
        perfpred_import_device *d = &out->devices[out->n_devices++];
        copy_trunc(d->device, sizeof d->device, r->devices[i].device);
        copy_trunc(d->name, sizeof d->name, r->devices[i].name);
        d->n_rows = r->devices[i].n_rows;
        d->n_bad_rows = r->devices[i].n_bad;
    }
    for (int i = 0; i < r->n_notes && out->n_notes < PERFPRED_REPORT_MSGS; i++)
        copy_trunc(out->notes[out->n_notes++], sizeof out->notes[0], r->notes[i]);
    for (int i = 0; i < t->bad.n_kept && out->n_msgs < PERFPRED_REPORT_MSGS; i++)
        copy_trunc(out->msgs[out->n_msgs++], sizeof out->msgs[0], t->bad.msgs[i]);
}

perfpred_status perfpred_calibrate_import(const perfpred_import_params *p,
                                          perfpred_import_report *out, char *errbuf,
                                          size_t errbuf_len)
{
    if (errbuf && errbuf_len) errbuf[0] = '\0';
    const char *missing = !p                            ? "params"
                          : !p->dataset || !*p->dataset ? "dataset"
                          : !p->root || !*p->root       ? "root"
                          : !p->out_csv || !*p->out_csv ? "out_csv"
                          : !out                        ? "report"
                                                        : NULL;
    if (missing) {
        if (errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "import: %s is required", missing);
        return PERFPRED_ERR_INVALID_ARG;
    }
    int which = strcmp(p->dataset, "deepbench") == 0             ? 0
                : strcmp(p->dataset, "mobile-ml-benchmark") == 0 ? 1
                : strcmp(p->dataset, "neusight") == 0            ? 2
                                                                 : -1;
    if (which < 0) {
        if (errbuf && errbuf_len)
            snprintf(errbuf, errbuf_len, "import: unknown dataset '%s' (deepbench, "
                     "mobile-ml-benchmark or neusight)", p->dataset);
        return PERFPRED_ERR_INVALID_ARG;
    }
    memset(out, 0, sizeof *out);
    copy_trunc(out->dataset, sizeof out->dataset, p->dataset);
    pp_err err = {0};
    pp_logger log = {p->log, p->log_user};
    pp_device_db *db = NULL;
    pp_layer_table *t = NULL;
    pp_import_report *rep = calloc(1, sizeof *rep);
    perfpred_status st = PERFPRED_OK;
    if (!rep) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "import: out of memory");
        goto done;
    }
    const char *cfg = p->config_dir ? p->config_dir : pp_default_config_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/devices", cfg);
    if ((st = pp_devices_load_config(path, &db, &err))) goto done;
    pp_import_filter f = {NULL, p->runtime};
    if (p->device) {
        const pp_device *d = pp_devices_find(db, p->device);
        if (!d) {
            st = pp_err_set(&err, PERFPRED_ERR_DEVICE,
                            "unknown device '%s' (perfpred devices lists them)", p->device);
            goto done;
        }
        f.device = d->name;
    }
    if (!(t = pp_measure_layer_table_new(p->dataset))) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "import: out of memory");
        goto done;
    }
    if (which == 0) st = pp_datasets_deepbench_import(p->root, db, &f, t, rep, &err);
    else if (which == 1) st = pp_datasets_mobile_import(p->root, db, &f, t, rep, &err);
    else st = neusight_import(p->root, &f, t, rep, &err);
    if (st != PERFPRED_OK) goto done;
    to_public(rep, t, out);
    if (t->n == 0) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG,
                        "import: no row of %s%s%s%s%s under %s (%d bad, %d of other devices or "
                        "runtimes)", p->dataset, f.device ? " for device " : "",
                        f.device ? f.device : "", f.runtime ? " with runtime " : "",
                        f.runtime ? f.runtime : "", p->root, rep->n_bad, rep->n_filtered);
        goto done;
    }
    if ((st = pp_measure_layer_csv_write(p->out_csv, t->rows, t->n, &err))) goto done;
    pp_log(&log, PERFPRED_LOG_INFO, "import %s: %d rows (%d bad) from %d files -> %s", p->dataset,
           t->n, rep->n_bad, rep->n_files, p->out_csv);
done:
    if (st != PERFPRED_OK && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    pp_measure_layer_table_free(t);
    pp_devices_free(db);
    free(rep);
    return st;
}
