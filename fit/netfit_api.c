/* fit/netfit_api.c: the public face of the graph-level correction (fit/fit_networks.c):
 * load network rows from a dataset or CSV, train or judge the device's GNN correction, report the
 * held-out ablation. */
#include <stdlib.h>
#include <string.h>

#include "fit/fit.h"

perfpred_netfit_params perfpred_netfit_default_params(void)
{
    perfpred_netfit_params p;
    memset(&p, 0, sizeof p);
    p.threads = 2;
    p.seed = -1;
    return p;
}

/* Every family of the comma-separated list has rows of the device (a typo would otherwise hold
 * nothing out and train on everything). */
static perfpred_status check_families(const char *list, const pp_net_table *t, const char *device,
                                      pp_err *err)
{
    size_t len;
    for (const char *c = list, *q; (q = pp_list_item(&c, &len));) {
        int found = 0;
        for (int i = 0; i < t->n && !found; i++) {
            const pp_net_row *r = &t->rows[i];
            found = r->family && strlen(r->family) == len && !strncmp(r->family, q, len) &&
                    r->device && !strcmp(r->device, device);
        }
        if (!found || len == 0)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "%s: held-out family '%.*s' has no rows of device %s", t->path,
                              (int)len, q, device);
    }
    return PERFPRED_OK;
}

static void copy_target(perfpred_netfit_target *o, const pp_fit_net_target_report *t)
{
    o->present = t->present;
    o->n_train = t->n_train;
    o->n_val = t->n_val;
    o->n_heldout = t->n_heldout;
    o->layer_sum = pp_measure_metrics_public(&t->layer_sum);
    o->direct = pp_measure_metrics_public(&t->direct);
    o->corrected = pp_measure_metrics_public(&t->corrected);
    o->ungated = pp_measure_metrics_public(&t->ungated);
    o->n_gated = t->n_gated;
    o->spread_gate = t->spread_gate;
    o->n_fallback_fit = t->n_fallback_fit;
    o->fallback_scale = t->fallback_w[0];
    o->fallback_per_kernel_us = t->fallback_w[1] * 1e3;
    o->fallback_per_mb_us = t->fallback_w[2] * 1e3;
    o->fallback_per_cold_weight_mb_us = t->fallback_w[3] * 1e3;
}

perfpred_status perfpred_calibrate_fit_networks(const perfpred_netfit_params *p,
                                                perfpred_netfit_report *out, char *errbuf,
                                                size_t errbuf_len)
{
    pp_err err = {0};
    perfpred_status st = PERFPRED_OK;
    pp_net_table *rows = NULL;
    pp_device_db *db = NULL;
    pp_fit_net_report *rep = NULL;
    if (!p || !out || !p->device || !p->source) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG,
                        "perfpred_calibrate_fit_networks: device and source are required");
        goto done;
    }
    if (p->threads < 1 || p->threads > 256) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "threads must be 1 to 256 (got %d)",
                        p->threads);
        goto done;
    }
    memset(out, 0, sizeof *out);
    const char *cfg = p->config_dir ? p->config_dir : pp_default_config_dir();
    char devdir[4096];
    snprintf(devdir, sizeof devdir, "%s/devices", cfg);
    if ((st = pp_devices_load_config(devdir, &db, &err))) goto done;
    const pp_device *d = pp_devices_find(db, p->device);
    if (!d) {
        st = pp_err_set(&err, PERFPRED_ERR_DEVICE, "unknown device '%s'", p->device);
        goto done;
    }
    snprintf(out->device, sizeof out->device, "%s", d->name);
    char dir[4096];
    if (p->out_dir) snprintf(dir, sizeof dir, "%s", p->out_dir);
    else snprintf(dir, sizeof dir, "%s/artifacts/%s", cfg, d->name);

    pp_netset_opts no = pp_datasets_netset_default_opts();
    no.root = p->datasets_root;
    no.config_dir = p->config_dir;
    no.device = d->name;
    if ((st = pp_datasets_net_rows_load(p->source, &no, &rows, NULL, &err))) goto done;
    if (p->heldout_families &&
        (st = check_families(p->heldout_families, rows, d->name, &err)))
        goto done;

    pp_fit_net_params fp = pp_fit_net_default_params();
    fp.config_dir = p->config_dir;
    fp.gnn.nthreads = p->threads;
    fp.write_artifacts = !p->dry_run;
    char desc[512];
    snprintf(desc, sizeof desc, "%s rows of %s (perfpred calibrate fit --networks)", p->source,
             d->name);
    fp.data_desc = desc;
    fp.table_path = rows->path;
    fp.heldout_families = p->heldout_families;
    fp.heldout = p->heldout;
    if (p->epochs < 0 || p->hidden < 0 || p->lr < 0 || p->weight_decay < 0 ||
        !(p->huber_delta >= 0) || p->max_train < 0 || p->ensemble < 0) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "epochs, hidden, lr, weight_decay, "
                        "huber_delta, max_train and ensemble must not be negative");
        goto done;
    }
    if (p->ensemble > 0) fp.ensemble = p->ensemble;
    if (p->epochs) fp.gnn.epochs = p->epochs;
    if (p->hidden) fp.gnn.hidden = p->hidden;
    if (p->lr > 0) fp.gnn.lr = p->lr;
    if (p->weight_decay > 0) fp.gnn.weight_decay = p->weight_decay;
    fp.gnn.huber_delta = p->huber_delta;
    if (p->seed >= 0) fp.gnn.seed = (uint64_t)p->seed;
    if (p->max_train > 0) fp.max_train = p->max_train;
    fp.log.fn = p->log;
    fp.log.user = p->log_user;
    rep = calloc(1, sizeof *rep);
    if (!rep) {
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "out of memory");
        goto done;
    }
    st = p->evaluate_only ? pp_fit_networks_eval(d->name, rows->rows, rows->n, &fp, dir, rep, &err)
                          : pp_fit_networks(d->name, rows->rows, rows->n, &fp, dir, rep, &err);
    if (st) goto done;
    out->n_rows = rep->n_rows;
    out->n_used = rep->n_used;
    out->n_constant = rep->n_constant;
    out->n_failed = rep->n_failed;
    snprintf(out->first_failure, sizeof out->first_failure, "%s", rep->first_failure);
    copy_target(&out->latency, &rep->target[PP_FIT_NET_LATENCY]);
    copy_target(&out->energy, &rep->target[PP_FIT_NET_ENERGY]);
    out->seconds_train = rep->seconds_train;
    out->seconds_total = rep->seconds_total;
    snprintf(out->weights_path, sizeof out->weights_path, "%s", rep->weights_path);
    out->n_val = rep->gnn.n_val;
    out->best_epoch = rep->gnn.best_epoch;
    out->epochs_run = rep->gnn.epochs_run;
    out->val_rmse_latency = rep->gnn.n_val > 0 ? rep->gnn.val_rmse[0] : -1;
    out->val_mae_latency = rep->gnn.n_val > 0 ? rep->gnn.val_mae[0] : -1;
done:
    free(rep);
    pp_measure_net_table_free(rows);
    pp_devices_free(db);
    if (st && errbuf && errbuf_len) snprintf(errbuf, errbuf_len, "%s", err.msg);
    return st;
}
