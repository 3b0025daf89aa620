/* plan/plan_select.c: which candidates of `perfpred calibrate plan` become rows: anchors
 * measured again, rows that cover the layer models' domain first, then per op kind in a seeded pick
 * order until the kind's share of the budget is spent; and the plan CSV they are written to. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

/* --------------------------------------------------------------------- selection ---- */

/* The structure of a dense convolution (or pooling window): kernel, stride and whether it is
 * grouped, packed into one value for pp_plan_cover_domain's joint pass; -1 where the candidate
 * has none. */
static int64_t structure_of(const cand *c)
{
    const pp_node_feat *f = &c->feat;
    if (f->kernel[0] <= 0 || f->kernel[1] <= 0 || f->stride[0] <= 0 || f->stride[1] <= 0) return -1;
    int64_t v = 0;
    const int64_t parts[] = {f->kernel[0], f->kernel[1], f->stride[0], f->stride[1]};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        v = v * 64 + (parts[i] > 63 ? 63 : parts[i]);
    return v * 2 + (c->kind == PP_OPK_CONV && f->group > 1);
}

/* Puts rows that cover the layer models' domain first: per op kind, for every value of every
 * domain attribute (kernel, stride, dilation, group: layer_models/, pp_lm_domain_value) that some
 * candidate has, the candidate with that value that drew the largest key, in candidate order.
 * A layer model answers only for attribute values it was trained on, so a small plan that left out
 * ResNet's 7x7 stem or ResNeXt's groups would leave them to the roofline; the window grid's
 * stride-1 pooling is covered the same way. Then the same, with the JOINT_ROWS largest keys, for
 * every combination of kernel, stride and grouped-or-not that some candidate has: covering each
 * value on its own let a plan time group 32 only as a 1x1 convolution and 3x3 only as dense ones,
 * and the conv model then put ResNeXt's 3x3 grouped convolutions at a fifth of their time
 * (docs/calibration.md). */
void pp_plan_cover_domain(plan *P)
{
    enum { NV = 32 };
    int best[PP_OPK__COUNT][PP_LM_N_DOMAIN][NV];
    for (int k = 0; k < PP_OPK__COUNT; k++)
        for (int d = 0; d < PP_LM_N_DOMAIN; d++)
            for (int v = 0; v < NV; v++) best[k][d][v] = -1;
    for (int i = 0; i < P->n; i++) {
        const cand *c = &P->c[i];
        if (c->valid != 1 || c->measured) continue;
        for (int d = 0; d < PP_LM_N_DOMAIN; d++) {
            int v = pp_lm_domain_value(&c->feat, d);
            if (v < 0 || v >= NV) continue;
            int *b = &best[c->kind][d][v];
            if (*b < 0 || c->key > P->c[*b].key) *b = i;
        }
    }
    /* keys of other candidates are below 1 (uniform) or at most 0 (weighted, adaptive) */
    int w = 0;
    for (int k = 0; k < PP_OPK__COUNT; k++)
        for (int d = 0; d < PP_LM_N_DOMAIN; d++)
            for (int v = 0; v < NV; v++) {
                int i = best[k][d][v];
                if (i >= 0 && P->c[i].key < 1.0) P->c[i].key = 2.0 - 1e-6 * w++;
            }
    /* JOINT_ROWS per combination, so that the model sees each one at a few sizes */
    enum { NS = 256, JOINT_ROWS = 4 };
    struct { int kind; int64_t s; int i[JOINT_ROWS]; } joint[NS];
    int nj = 0;
    for (int i = 0; i < P->n; i++) {
        const cand *c = &P->c[i];
        int64_t s = c->valid == 1 && !c->measured ? structure_of(c) : -1;
        if (s < 0) continue;
        int j = 0;
        while (j < nj && !(joint[j].kind == (int)c->kind && joint[j].s == s)) j++;
        if (j == nj) {
            if (nj == NS) continue;
            joint[nj].kind = (int)c->kind;
            joint[nj].s = s;
            for (int r = 0; r < JOINT_ROWS; r++) joint[nj].i[r] = -1;
            nj++;
        }
        /* keep the JOINT_ROWS largest keys, in descending order */
        int *top = joint[j].i, at = i;
        for (int r = 0; r < JOINT_ROWS && at >= 0; r++)
            if (top[r] < 0 || P->c[at].key > P->c[top[r]].key) {
                int t = top[r];
                top[r] = at;
                at = t;
            }
    }
    /* a domain row already among them counts as one of them */
    for (int r = 0; r < JOINT_ROWS; r++)
        for (int j = 0; j < nj; j++) {
            int i = joint[j].i[r];
            if (i >= 0 && P->c[i].key < 1.0) P->c[i].key = 2.0 - 1e-6 * w++;
        }
}

typedef struct kind_pool {
    int *idx;        /* candidate indices in pick order */
    int n, next_try;
    double target_s, spent_s;
    int saturated;
} kind_pool;

/* Sort items: candidates by key (larger first) or by kind, ties by signature. */
typedef struct order_item {
    double key;
    const char *sig;
    int kind;
    int idx;
} order_item;

static int cmp_key_desc(const void *a, const void *b)
{
    const order_item *x = a, *y = b;
    if (x->key > y->key) return -1;
    if (x->key < y->key) return 1;
    return strcmp(x->sig, y->sig);
}

static int cmp_kind_sig(const void *a, const void *b)
{
    const order_item *x = a, *y = b;
    if (x->kind != y->kind) return x->kind - y->kind;
    return strcmp(x->sig, y->sig);
}

static order_item item_of(const plan *P, int i)
{
    order_item it = {P->c[i].key, P->c[i].sig, (int)P->c[i].kind, i};
    return it;
}

/* Pick order of a kind: zoo configurations by weighted random sampling without replacement
 * (Efraimidis-Spirakis, weight = occurrences in the zoo), perturbations uniformly at random,
 * interleaved so that about perturb_share of the picks are perturbations. */
static perfpred_status order_pool(plan *P, pp_op_kind k, kind_pool *pool, pp_err *err)
{
    int nb = 0, np = 0;
    for (int i = 0; i < P->n; i++)
        if (P->c[i].valid == 1 && !P->c[i].measured && P->c[i].kind == k) {
            if (P->c[i].is_base) nb++;
            else np++;
        }
    order_item *b = malloc((size_t)(nb + 1) * sizeof *b), *q = malloc((size_t)(np + 1) * sizeof *q);
    pool->idx = malloc((size_t)(nb + np + 1) * sizeof *pool->idx);
    if (!b || !q || !pool->idx) {
        free(b);
        free(q);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    }
    nb = np = 0;
    for (int i = 0; i < P->n; i++)
        if (P->c[i].valid == 1 && !P->c[i].measured && P->c[i].kind == k) {
            if (P->c[i].is_base) b[nb++] = item_of(P, i);
            else q[np++] = item_of(P, i);
        }
    qsort(b, (size_t)nb, sizeof *b, cmp_key_desc);
    qsort(q, (size_t)np, sizeof *q, cmp_key_desc);
    double share = P->p->perturb_share;
    int ib = 0, ip = 0, n = 0;
    while (ib < nb || ip < np) {
        /* take a perturbation while they are behind their share of the picks so far */
        int take_p = ip < np && (ib >= nb || (double)ip < share * (double)(n + 1));
        pool->idx[n++] = take_p ? q[ip++].idx : b[ib++].idx;
    }
    pool->n = n;
    free(b);
    free(q);
    return PERFPRED_OK;
}

/* Takes candidates of a pool in order while they fit its target and the total budget; a row too
 * expensive for what is left is passed over (smaller ones after it may still fit). */
static int fill_pool(plan *P, kind_pool *pool, double *total, double budget, int max_rows)
{
    int taken = 0;
    for (int j = pool->next_try; j < pool->n && taken < max_rows; j++) {
        cand *c = &P->c[pool->idx[j]];
        if (c->picked) continue;
        if (pool->spent_s + c->cost_s > pool->target_s || *total + c->cost_s > budget) continue;
        c->picked = 1;
        pool->spent_s += c->cost_s;
        *total += c->cost_s;
        taken++;
    }
    return taken;
}

#define MIN_ROWS_PER_KIND 8

perfpred_status pp_plan_select_rows(plan *P, pp_err *err)
{
    kind_pool pools[PP_OPK__COUNT];
    memset(pools, 0, sizeof pools);
    perfpred_status st = PERFPRED_OK;
    double budget = P->budget_s, total = 0, zoo_total = 0;
    int n_kinds = 0;
    for (int k = 1; k < PP_OPK__COUNT && st == PERFPRED_OK; k++) {
        if ((st = order_pool(P, (pp_op_kind)k, &pools[k], err))) break;
        if (pools[k].n) {
            n_kinds++;
            zoo_total += P->kind_zoo_ms[k];
        }
    }
    if (st == PERFPRED_OK && n_kinds > 0) {
        /* share of the budget: 70 % by the kind's weight (its share of zoo time; adaptive: see
         * pp_plan_adapt_kind_weights), 30 % spread evenly, so that cheap but frequent kinds still
         * get enough rows to train a regressor on */
        double share[PP_OPK__COUNT] = {0};
        int use[PP_OPK__COUNT] = {0};
        for (int k = 1; k < PP_OPK__COUNT; k++) {
            use[k] = pools[k].n > 0;
            share[k] = zoo_total > 0 ? P->kind_zoo_ms[k] / zoo_total : 1.0 / n_kinds;
        }
        pp_plan_adapt_kind_weights(P->adapt, share, use, P->kind_weight);
        for (int k = 1; k < PP_OPK__COUNT; k++)
            if (use[k]) pools[k].target_s = budget * (0.7 * P->kind_weight[k] + 0.3 / n_kinds);
        /* coverage first: a few rows of every kind, whatever its share, each kind spending at
         * most its target or an even share of the budget, so that the first kinds' domain rows
         * (pp_plan_cover_domain) cannot take a small budget from the others */
        for (int k = 1; k < PP_OPK__COUNT; k++) {
            if (!pools[k].n) continue;
            double t = pools[k].target_s;
            pools[k].target_s = fmax(t, budget / n_kinds);
            fill_pool(P, &pools[k], &total, budget, MIN_ROWS_PER_KIND);
            pools[k].target_s = fmax(t, pools[k].spent_s);
        }
        for (int k = 1; k < PP_OPK__COUNT; k++)
            if (pools[k].n) fill_pool(P, &pools[k], &total, budget, 1 << 30);
        /* what a kind could not use goes to the kinds that still have rows, by their weights */
        for (int pass = 0; pass < 64; pass++) {
            double left = budget - total, wsum = 0;
            for (int k = 1; k < PP_OPK__COUNT; k++) {
                int open = 0;
                for (int j = 0; j < pools[k].n && !open; j++) {
                    const cand *c = &P->c[pools[k].idx[j]];
                    open = !c->picked && total + c->cost_s <= budget;
                }
                pools[k].saturated = !open;
                if (open) wsum += pools[k].target_s;
            }
            if (wsum <= 0 || left <= 0) break;
            int taken = 0;
            for (int k = 1; k < PP_OPK__COUNT; k++) {
                if (!pools[k].n || pools[k].saturated) continue;
                pools[k].target_s += left * pools[k].target_s / wsum;
                taken += fill_pool(P, &pools[k], &total, budget, 1 << 30);
            }
            if (!taken) break;
        }
    }
    for (int k = 0; k < PP_OPK__COUNT; k++) free(pools[k].idx);
    return st;
}

/* ---------------------------------------------------------------------- anchors ---- */

typedef struct anchor_cand {
    const pp_layer_row *r;
    const char *path;
    const char *sig;
    double cost_s;
    int cls;               /* roofline class: 0 compute-bound, 1 memory-bound */
} anchor_cand;

/* By class, then by latency. */
static int cmp_anchor_latency(const void *a, const void *b)
{
    const anchor_cand *p = a, *q = b;
    if (p->cls != q->cls) return p->cls - q->cls;
    double x = p->r->latency_ms, y = q->r->latency_ms;
    return (x > y) - (x < y);
}

/* Anchors: configurations the anchor CSVs measured on this device (of the plan's operators), one
 * row each, n of them, half from each roofline class, at evenly spaced ranks of latency within
 * it, so that the drift a later session shows can be fitted over sizes and classes (calibrate
 * fit --rescale-layers, --rescale-by-class). Their configurations are left
 * out of the picked rows (measured already), and their time out of the budget. */
perfpred_status pp_plan_pick_anchors(plan *P, pp_err *err)
{
    const perfpred_plan_params *p = P->p;
    P->budget_s = p->budget_min * 60.0;
    if (p->n_anchor_csvs == 0) return PERFPRED_OK;
    P->anchor_tables = calloc((size_t)p->n_anchor_csvs, sizeof *P->anchor_tables);
    if (!P->anchor_tables) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    size_t total = 0;
    for (int f = 0; f < p->n_anchor_csvs; f++) {
        perfpred_status st = pp_measure_layer_csv_read(p->anchor_csvs[f], &P->anchor_tables[f],
                                                       err);
        if (st != PERFPRED_OK) return st;
        P->n_anchor_tables++;
        total += (size_t)P->anchor_tables[f]->n;
    }
    anchor_cand *c = malloc((total + 1) * sizeof *c);
    if (!c) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    int m = 0;
    perfpred_status st = PERFPRED_OK;
    for (int f = 0; f < P->n_anchor_tables && st == PERFPRED_OK; f++) {
        const pp_layer_table *t = P->anchor_tables[f];
        for (int i = 0; i < t->n; i++) {
            const pp_layer_row *r = &t->rows[i];
            pp_node_feat feat;
            pp_err e = {0};
            if (!pp_device_named(P->dev, r->device) || !(r->latency_ms > 0) ||
                !isfinite(r->latency_ms) || r->kind == PP_OPK_RESHAPE || r->kind == PP_OPK_SHAPE ||
                !pp_plan_op_wanted(P, r->op_type) ||
                pp_layer_row_features(r, &feat, &e) != PERFPRED_OK)
                continue;
            pp_strbuf b = {0};
            pp_plan_put_sig(&b, r);
            char *sig = b.oom || !b.data ? NULL : pp_arena_strdup(P->arena, b.data);
            free(b.data);
            if (!sig) {
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
                break;
            }
            int dup = 0;
            for (int j = 0; j < m && !dup; j++) dup = strcmp(c[j].sig, sig) == 0;
            int cls = P->has_roof ? pp_measure_rescale_class(P->dev, &feat) : 0;
            if (!dup)
                c[m++] = (anchor_cand){r, p->anchor_csvs[f], sig, pp_plan_row_cost_s(P, &feat),
                                       cls};
        }
    }
    if (st == PERFPRED_OK && m < PERFPRED_RESCALE_MIN_ANCHORS)
        st = pp_err_set(err, PERFPRED_ERR_PARSE,
                        "plan: anchors: %s%s hold%s %d measured configurations of %s%s; anchors "
                        "need at least %d", p->anchor_csvs[0],
                        p->n_anchor_csvs > 1 ? " and the other files" : "",
                        p->n_anchor_csvs > 1 ? "" : "s", m, P->dev->name,
                        p->n_ops > 0 ? " among the plan's operators" : "",
                        PERFPRED_RESCALE_MIN_ANCHORS);
    int want = p->n_anchors > 0 ? p->n_anchors : 40;
    int n = want < m ? want : m;
    if (st == PERFPRED_OK && !(P->anchors = pp_arena_alloc(P->arena, (size_t)n * sizeof *P->anchors)))
        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    if (st == PERFPRED_OK) {
        /* half of them from each roofline class (a class with fewer candidates gives the rest to
         * the other), so that --rescale-by-class finds anchors for both; within a class, evenly
         * spaced ranks of latency */
        qsort(c, (size_t)m, sizeof *c, cmp_anchor_latency);
        int m_cls[2] = {0, 0}, n_cls[2];
        for (int i = 0; i < m; i++) m_cls[c[i].cls]++;
        n_cls[0] = (int)fmin(m_cls[0], fmax(n / 2, n - m_cls[1])); /* n <= m_cls[0] + m_cls[1] */
        n_cls[1] = n - n_cls[0];
        for (int i = 0; i < n && st == PERFPRED_OK; i++) {
            int cls = i < n_cls[0] ? 0 : 1, j = cls ? i - n_cls[0] : i;
            const anchor_cand *a =
                &c[(cls ? m_cls[0] : 0) + (int)((j + 0.5) * m_cls[cls] / n_cls[cls])];
            pp_layer_row *r = &P->anchors[P->n_anchors++];
            *r = *a->r;
            r->runtime_version = "";
            r->latency_ms = NAN;
            r->latency_spread_ms = NAN;
            r->repetitions = -1;
            r->energy_j = NAN;
            r->memory_bytes = -1;
            r->date = "";
            char src[1400];
            snprintf(src, sizeof src, "anchor:%s:%d", a->path, a->r->line);
            if (!(r->source = pp_arena_strdup(P->arena, src)))
                st = pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
            P->anchor_s += a->cost_s;
            int k = pp_plan_map_find(P, a->sig);
            if (k >= 0) P->c[k].measured = 1;
        }
    }
    free(c);
    if (st == PERFPRED_OK && P->anchor_s >= P->budget_s)
        st = pp_err_set(err, PERFPRED_ERR_INVALID_ARG,
                        "plan: the %d anchors alone take %.1f of the %g minutes: raise --budget-min "
                        "or lower --n-anchors", P->n_anchors, P->anchor_s / 60.0, p->budget_min);
    P->budget_s -= P->anchor_s;
    return st;
}

/* --------------------------------------------------------------------- output ---- */

perfpred_status pp_plan_write(plan *P, pp_err *err)
{
    int n = 0;
    for (int i = 0; i < P->n; i++) n += P->c[i].picked;
    order_item *idx = malloc((size_t)(n + 1) * sizeof *idx);
    pp_layer_row *rows = malloc((size_t)(n + P->n_anchors + 1) * sizeof *rows);
    if (!idx || !rows) {
        free(idx);
        free(rows);
        return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    }
    n = 0;
    for (int i = 0; i < P->n; i++)
        if (P->c[i].picked) idx[n++] = item_of(P, i);
    qsort(idx, (size_t)n, sizeof *idx, cmp_kind_sig);
    perfpred_status st = PERFPRED_OK;
    char why[256];
    for (int j = 0; j < n; j++) {
        const cand *c = &P->c[idx[j].idx];
        pp_layer_row *r = &rows[j];
        if (pp_plan_sig_to_row(c->sig, P->arena, r, why, sizeof why) != 0) {
            st = pp_err_set(err, PERFPRED_ERR_INTERNAL, "plan: row '%s' does not parse back: %s",
                            c->sig, why);
            break;
        }
        r->device = P->dev->name;
        r->runtime = P->dev->runtime_framework ? P->dev->runtime_framework : "";
        r->runtime_version = "";
        r->precision = P->dev->runtime_precision;
        r->kind = c->kind;
        r->batch = c->batch > 0 ? c->batch : 1;
        r->latency_ms = NAN;
        r->latency_spread_ms = NAN;
        r->repetitions = -1;
        r->energy_j = NAN;
        r->memory_bytes = -1;
        r->source = c->source;
        r->date = "";
    }
    for (int j = 0; j < P->n_anchors; j++) rows[n + j] = P->anchors[j];
    if (st == PERFPRED_OK) st = pp_measure_layer_csv_write(P->p->out_csv, rows, n + P->n_anchors,
                                                           err);
    free(idx);
    free(rows);
    return st;
}
