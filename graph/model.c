/* graph/model.c: the public model handle of include/perfpred.h: load (parse, shapes, features,
 * liveness) with parameter checks and logging, totals, the per-layer table and the input list.
 * A perfpred_model is immutable once loaded, so any number of threads may read it. */
#include "graph/builders.h"
#include "graph/graph.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct perfpred_model {
    pp_graph *g;
    uint64_t serial;
};

const pp_graph *pp_model_graph(const perfpred_model *m) { return m ? m->g : NULL; }
uint64_t pp_model_serial(const perfpred_model *m) { return m ? m->serial : 0; }

static uint64_t new_serial(void)
{
    static atomic_uint_fast64_t next = 1;
    return atomic_fetch_add(&next, 1);
}

perfpred_model *pp_model_wrap(pp_graph *g)
{
    if (!g) return NULL;
    perfpred_model *m = calloc(1, sizeof *m);
    if (m) {
        m->g = g;
        m->serial = new_serial();
    }
    return m;
}

perfpred_model_params perfpred_model_default_params(void)
{
    perfpred_model_params p;
    memset(&p, 0, sizeof p);
    p.batch = 0;          /* leave symbolic leading dims to the overrides (error if unresolved) */
    p.allow_unknown = 0;  /* an op shape inference does not know is an error */
    return p;
}

/* libsvm-style parameter check, before any work is done. */
static perfpred_status check_params(const perfpred_model_params *p, pp_err *err)
{
    if (p->batch < 0)
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "batch must be >= 0 (got %lld)",
                          (long long)p->batch);
    if (p->n_inputs < 0 || (p->n_inputs > 0 && !p->inputs))
        return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "n_inputs is %d but inputs is %s",
                          p->n_inputs, p->inputs ? "set" : "NULL");
    for (int i = 0; i < p->n_inputs; i++) {
        const perfpred_input_override *o = &p->inputs[i];
        if (!o->name || !o->name[0])
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG, "input override %d has no name", i);
        if (o->rank < 0 || o->rank > PERFPRED_MAX_RANK)
            return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                              "input override '%s': rank %d is outside 0..%d", o->name, o->rank,
                              PERFPRED_MAX_RANK);
        for (int d = 0; d < o->rank; d++)
            if (o->dims[d] <= 0)
                return pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                                  "input override '%s': dim %d is %lld, must be > 0", o->name, d,
                                  (long long)o->dims[d]);
    }
    return PERFPRED_OK;
}

static void put_err(char *errbuf, size_t len, const char *msg)
{
    if (errbuf && len > 0) snprintf(errbuf, len, "%s", msg);
}

perfpred_model *perfpred_model_load(const char *path, const perfpred_model_params *params,
                                    perfpred_status *status, char *errbuf, size_t errbuf_len)
{
    perfpred_model_params dflt = perfpred_model_default_params();
    const perfpred_model_params *p = params ? params : &dflt;
    pp_logger lg = {p->log, p->log_user};
    pp_err err;
    pp_err_clear(&err);
    put_err(errbuf, errbuf_len, "");

    perfpred_status st;
    perfpred_model *m = NULL;
    pp_graph *g = NULL;
    if (!path) {
        st = pp_err_set(&err, PERFPRED_ERR_INVALID_ARG, "perfpred_model_load: NULL path");
        goto fail;
    }
    if ((st = check_params(p, &err))) {
        char msg[PP_ERR_MSG];
        snprintf(msg, sizeof msg, "%s", err.msg);
        pp_err_set(&err, st, "%s: %s", path, msg);
        goto fail;
    }
    pp_log(&lg, PERFPRED_LOG_DEBUG, "%s: loading (batch %lld, %d input overrides%s)", path,
           (long long)p->batch, p->n_inputs, p->allow_unknown ? ", unknown ops allowed" : "");
    pp_shape_opts so = {p->batch, p->inputs, p->n_inputs, p->allow_unknown, NULL};
    /* a search-space architecture (nb201:, fbnet:, ofa:) is built, a file is read */
    if ((st = pp_net_ref_is_builtin(path) ? pp_net_graph_from_ref(path, &so, &g, &err)
                                          : pp_graph_load_full(path, &so, &g, &err)))
        goto fail;
    m = calloc(1, sizeof *m);
    if (!m) {
        pp_graph_free(g);
        st = pp_err_set(&err, PERFPRED_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    m->g = g;
    m->serial = new_serial();
    const pp_graph_totals *t = &g->totals;
    if (t->n_unknown_ops > 0) {
        int shown = 0;
        for (int i = 0; i < g->n_nodes && shown < 8; i++)
            if (g->nodes[i].unknown_op) {
                const pp_node *n = &g->nodes[i];
                pp_log(&lg, PERFPRED_LOG_WARN,
                       "%s: node '%s': unknown op '%s%s%s' treated as element-wise", path, n->name,
                       n->domain, n->domain[0] ? "." : "", n->op_type);
                shown++;
            }
        if (t->n_unknown_ops > shown)
            pp_log(&lg, PERFPRED_LOG_WARN, "%s: %d more unknown ops treated as element-wise", path,
                   t->n_unknown_ops - shown);
    }
    pp_log(&lg, PERFPRED_LOG_INFO,
           "%s: %d nodes, %lld params, %lld MACs, peak activations %lld bytes", path, g->n_nodes,
           (long long)t->params, (long long)t->macs, (long long)t->peak_activation_bytes);
    if (status) *status = PERFPRED_OK;
    return m;
fail:
    pp_log(&lg, PERFPRED_LOG_ERROR, "%s", err.msg);
    put_err(errbuf, errbuf_len, err.msg);
    if (status) *status = st;
    return NULL;
}

void perfpred_model_free(perfpred_model *m)
{
    if (!m) return;
    pp_graph_free(m->g);
    free(m);
}

perfpred_model_totals perfpred_model_get_totals(const perfpred_model *m)
{
    perfpred_model_totals r;
    memset(&r, 0, sizeof r);
    if (!m || !m->g) return r;
    const pp_graph_totals *t = &m->g->totals;
    r.n_nodes = m->g->n_nodes;
    r.params = t->params;
    r.param_bytes = t->param_bytes;
    r.macs = t->macs;
    r.flops = t->flops;
    r.activation_bytes = t->activation_bytes;
    r.peak_activation_bytes = t->peak_activation_bytes;
    r.input_bytes = t->input_bytes;
    r.n_unknown_ops = t->n_unknown_ops;
    return r;
}

int perfpred_model_n_layers(const perfpred_model *m) { return m && m->g ? m->g->n_nodes : 0; }

static int64_t round_i64(double v) { return v >= 9.2e18 ? INT64_MAX : (int64_t)(v + 0.5); }

/* Index out of range (or NULL model): a zeroed struct with name NULL. */
perfpred_layer_info perfpred_model_layer(const perfpred_model *m, int i)
{
    perfpred_layer_info L;
    memset(&L, 0, sizeof L);
    if (!m || !m->g || i < 0 || i >= m->g->n_nodes) return L;
    const pp_graph *g = m->g;
    const pp_node *n = &g->nodes[i];
    const pp_node_feat *f = &n->feat;
    L.name = n->name;
    L.op_type = n->op_type;
    L.kind = pp_op_kind_name(f->kind);
    for (int o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] < 0) continue;
        const pp_tensor *t = &g->tensors[n->outputs[o]];
        L.out_rank = t->rank > 0 ? t->rank : 0;
        for (int d = 0; d < L.out_rank; d++) L.out_dims[d] = t->dims[d];
        break;
    }
    L.macs = round_i64(f->macs);
    L.flops = round_i64(f->flops);
    L.params = round_i64(f->params);
    L.in_bytes = round_i64(f->in_bytes);
    L.out_bytes = round_i64(f->out_bytes);
    L.arith_intensity = f->arith_intensity;
    L.folded = f->folded;
    L.unknown_op = n->unknown_op;
    return L;
}

int perfpred_model_n_inputs(const perfpred_model *m) { return m && m->g ? m->g->n_inputs : 0; }

/* Non-weight graph input i (file order): name, and its resolved shape in *rank / dims. */
const char *perfpred_model_input(const perfpred_model *m, int i, int *rank, int64_t *dims)
{
    if (!m || !m->g || i < 0 || i >= m->g->n_inputs) return NULL;
    const pp_tensor *t = &m->g->tensors[m->g->inputs[i]];
    int r = t->rank > 0 ? t->rank : 0;
    if (rank) *rank = r;
    if (dims)
        for (int d = 0; d < r; d++) dims[d] = t->dims[d];
    return t->name;
}
