/* plan/plan_perturb.c: the perturbations of `perfpred calibrate plan` (nn-Meter / Sponner
 * style): each zoo configuration scaled in batch, channels and spatial size within the zoo's
 * observed ranges of its kind, pooling rows given a grid of windows and dense convolutions a grid
 * of group counts. Variants are new candidates of the plan (plan.h), validated as they are
 * added. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

/* ------------------------------------------------------------------ perturbation ---- */

enum { AX_BATCH, AX_CIN, AX_COUT, AX_SPATIAL, AX__COUNT };
static const char *const axis_names[AX__COUNT] = {"batch", "cin", "cout", "spatial"};
static const double factors[] = {0.5, 0.75, 1.5, 2.0};
#define N_FACTORS (sizeof factors / sizeof factors[0])

/* Channel-first layouts: convolutions, pooling, batch-style norms, and rank-4 tensors elsewhere. */
static int is_nchw(const pp_layer_row *r)
{
    const pp_layer_input *x = &r->inputs[0];
    if (x->rank < 3) return 0;
    switch (r->kind) {
    case PP_OPK_CONV: case PP_OPK_DWCONV: case PP_OPK_CONVT: case PP_OPK_POOL:
    case PP_OPK_GLOBALPOOL: return 1;
    default: break;
    }
    if (strcmp(r->op_type, "BatchNormalization") == 0 ||
        strcmp(r->op_type, "InstanceNormalization") == 0 ||
        strcmp(r->op_type, "GroupNormalization") == 0 || strcmp(r->op_type, "LRN") == 0)
        return 1;
    return x->rank == 4 && r->kind != PP_OPK_NORM && r->kind != PP_OPK_SOFTMAX &&
           r->kind != PP_OPK_LINEAR && r->kind != PP_OPK_BMM;
}

/* The value an axis class perturbs in row r (0 when the class does not apply). */
static int64_t axis_value(const pp_layer_row *r, const pp_node_feat *f, int ax)
{
    const pp_layer_input *x = &r->inputs[0];
    int nchw = is_nchw(r);
    switch (ax) {
    case AX_BATCH: return x->rank >= 2 ? x->dims[0] : 0;
    case AX_CIN:
        if (x->rank < 1) return 0;
        return nchw ? x->dims[1] : x->dims[x->rank - 1];
    case AX_COUT:
        if (r->kind == PP_OPK_CONV || r->kind == PP_OPK_DWCONV || r->kind == PP_OPK_CONVT)
            return f->cout;
        if (r->kind == PP_OPK_LINEAR || r->kind == PP_OPK_BMM) return f->nn;
        return 0;
    case AX_SPATIAL:
        if (x->rank < 3) return 0;
        return nchw ? x->dims[2] : x->dims[1];
    default: return 0;
    }
}

typedef struct range {
    int64_t lo[AX__COUNT], hi[AX__COUNT];
} range;

/* Substitutes v -> nv in r for an axis class (see docs/calibration.md). Returns 1 if anything
 * changed. */
static int substitute(pp_layer_row *r, int ax, int64_t v, int64_t nv)
{
    int changed = 0, nchw = is_nchw(r);
    int r0 = r->inputs[0].rank;
    for (int k = 0; k < r->n_inputs; k++) {
        pp_layer_input *in = pp_layer_row_input_mut(r, k);
        if (in->role == '-') continue;
        for (int d = 0; d < in->rank; d++) {
            int hit = 0;
            switch (ax) {
            case AX_BATCH: hit = d == 0 && in->role == 'x' && in->rank == r0; break;
            case AX_CIN:
            case AX_COUT: hit = 1; break;
            case AX_SPATIAL: hit = in->role == 'x' && d >= (nchw ? 2 : 1); break;
            default: break;
            }
            if (hit && in->dims[d] == v) {
                in->dims[d] = nv;
                changed = 1;
            }
        }
    }
    if (ax == AX_CIN || ax == AX_COUT)
        for (int i = 0; i < r->n_attrs; i++)
            if (r->attrs[i].type == PP_ATTR_INT && strcmp(r->attrs[i].name, "group") == 0 &&
                r->attrs[i].i == v)
                r->attrs[i].i = nv;
    return changed;
}

static int64_t scaled(int64_t v, double f, int ax)
{
    double x = (double)v * f;
    if ((ax == AX_CIN || ax == AX_COUT) && v % 8 == 0 && x >= 8) return 8 * llround(x / 8.0);
    int64_t r = llround(x);
    return r < 1 ? 1 : r;
}

/* Adds r, a variant of base candidate b, unless its configuration is known already; tag names the
 * change in its source ("plan:perturb:<tag>:zoo:..."). */
static perfpred_status add_variant(plan *P, int b_idx, const pp_layer_row *r, const char *tag,
                                   int64_t batch, pp_strbuf *sig, pp_err *err)
{
    char why[256];
    sig->len = 0;
    if (sig->data) sig->data[0] = '\0';
    pp_plan_put_sig(sig, r);
    if (sig->oom) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    if (pp_plan_map_find(P, sig->data) >= 0) return PERFPRED_OK;
    int ci = pp_plan_cand_add(P, sig->data, err);
    if (ci < 0) return err->status;
    cand *c = &P->c[ci];
    const cand *b = &P->c[b_idx];
    char src[640];
    /* "plan:perturb:cin*0.5:zoo:resnet50.onnx@b1:/layer1/.../Conv" */
    snprintf(src, sizeof src, "plan:perturb:%s:%s", tag,
             b->source + (strncmp(b->source, "plan:", 5) == 0 ? 5 : 0));
    c->source = pp_arena_strdup(P->arena, src);
    if (!c->source) return pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
    c->kind = b->kind;
    c->batch = batch;
    pp_plan_validate(P, c, why, sizeof why);
    double bytes = c->feat.in_bytes + c->feat.out_bytes + c->feat.param_bytes;
    if (c->valid == 1 && bytes > P->mem_cap_bytes) c->valid = 0;
    return PERFPRED_OK;
}

/* The window grid of pooling rows: kernel 2, 3 and 5, stride 1 and 2, padded by (kernel - 1) / 2
 * as the common CNNs pad (VGG's 2/2, ResNet's 3/2/1, Inception's 3/1/1, YOLO's SPP 5/1/2). A zoo
 * shows only some of these (a held-out family may be the only one with stride 1), and the layer
 * models answer only for attribute values they were trained on (pp_plan_cover_domain). */
static const int window_kernels[] = {2, 3, 5};
static const int window_strides[] = {1, 2};

/* Index of a row's attribute called name, or -1. */
static int attr_index(const pp_layer_row *r, const char *name)
{
    for (int i = 0; i < r->n_attrs; i++)
        if (strcmp(r->attrs[i].name, name) == 0) return i;
    return -1;
}

/* Sets a square ints attribute (count n, every value v), adding it when the row lacks it. */
static int set_square_attr(pp_layer_row *r, const char *name, int n, int64_t v)
{
    int ai = attr_index(r, name);
    pp_layer_attr *a = ai >= 0 ? &r->attrs[ai] : NULL;
    if (!a) {
        if (r->n_attrs >= PP_LAYER_MAX_ATTRS) return -1;
        a = pp_measure_row_add_attr(r, name, PP_ATTR_INTS);
    }
    if (a->type != PP_ATTR_INTS || n > PP_LAYER_MAX_INTS) return -1;
    a->n = n;
    for (int i = 0; i < n; i++) a->ints[i] = v;
    return 0;
}

static perfpred_status perturb_window(plan *P, int i, const pp_layer_row *base, pp_strbuf *sig,
                                      pp_err *err)
{
    int sp = base->inputs[0].rank - 2; /* spatial dims of an NCHW pooling input */
    if (base->kind != PP_OPK_POOL || sp < 1 || sp > 3 ||
        (strcmp(base->op_type, "MaxPool") != 0 && strcmp(base->op_type, "AveragePool") != 0))
        return PERFPRED_OK;
    int ap = attr_index(base, "auto_pad");
    if (ap >= 0 && base->attrs[ap].type == PP_ATTR_STRING &&
        strcmp(base->attrs[ap].s, "NOTSET") != 0)
        return PERFPRED_OK; /* padding follows the shape, not the pads */
    perfpred_status st = PERFPRED_OK;
    for (size_t ki = 0; ki < sizeof window_kernels / sizeof window_kernels[0] && !st; ki++)
        for (size_t si = 0; si < sizeof window_strides / sizeof window_strides[0] && !st; si++) {
            int k = window_kernels[ki], s = window_strides[si], pad = (k - 1) / 2;
            pp_layer_row r = *base;
            if (set_square_attr(&r, "kernel_shape", sp, k) ||
                set_square_attr(&r, "strides", sp, s) || set_square_attr(&r, "pads", 2 * sp, pad))
                continue;
            char tag[48];
            snprintf(tag, sizeof tag, "window=k%ds%dp%d", k, s, pad);
            st = add_variant(P, i, &r, tag, P->c[i].batch, sig, err);
        }
    return st;
}

/* Group counts of the grouped-convolution grid, for dense convolutions whose channels they
 * divide: ResNeXt's 32 and the smaller counts of RegNet-style blocks. A zoo may hold grouped
 * convolutions of one family only. */
static const int group_counts[] = {2, 4, 8, 16, 32};

static perfpred_status perturb_group(plan *P, int i, const pp_layer_row *base, pp_strbuf *sig,
                                     pp_err *err)
{
    if (base->kind != PP_OPK_CONV || strcmp(base->op_type, "Conv") != 0 || base->n_inputs < 2 ||
        base->inputs[0].rank != 4 || base->inputs[1].rank != 4)
        return PERFPRED_OK;
    pp_layer_row r0 = *base;
    int gi0 = attr_index(&r0, "group");
    pp_layer_attr *ga = gi0 >= 0 ? &r0.attrs[gi0] : NULL;
    if (ga && (ga->type != PP_ATTR_INT || ga->i != 1)) return PERFPRED_OK;
    if (!ga) {
        if (r0.n_attrs >= PP_LAYER_MAX_ATTRS) return PERFPRED_OK;
        ga = pp_measure_row_add_attr(&r0, "group", PP_ATTR_INT);
    }
    int64_t cin = base->inputs[0].dims[1], cout = base->inputs[1].dims[0];
    perfpred_status st = PERFPRED_OK;
    for (size_t gi = 0; gi < sizeof group_counts / sizeof group_counts[0] && !st; gi++) {
        int g = group_counts[gi];
        /* at least 4 channels per group on each side: fewer is depthwise-like, another kind */
        if (cin % g || cout % g || cin / g < 4 || cout / g < 4) continue;
        pp_layer_row r = r0;
        r.attrs[ga - r0.attrs].i = g;
        r.inputs[1].dims[1] = cin / g;
        char tag[32];
        snprintf(tag, sizeof tag, "group=%d", g);
        st = add_variant(P, i, &r, tag, P->c[i].batch, sig, err);
    }
    return st;
}

static perfpred_status perturb(plan *P, int n_base, const range *rg, pp_err *err)
{
    char why[256];
    pp_strbuf sig = {0};
    perfpred_status st = PERFPRED_OK;
    for (int i = 0; i < n_base && st == PERFPRED_OK; i++) {
        if (P->c[i].valid != 1) continue;
        pp_layer_row base;
        if (pp_plan_sig_to_row(P->c[i].sig, P->arena, &base, why, sizeof why) != 0) continue;
        base.kind = P->c[i].kind;
        const range *R = &rg[base.kind];
        for (int ax = 0; ax < AX__COUNT && st == PERFPRED_OK; ax++) {
            int64_t v = axis_value(&base, &P->c[i].feat, ax);
            if (v < 1) continue;
            for (size_t fi = 0; fi < N_FACTORS && st == PERFPRED_OK; fi++) {
                int64_t nv = scaled(v, factors[fi], ax);
                if (nv == v || nv < R->lo[ax] || nv > R->hi[ax]) continue;
                pp_layer_row r = base;
                /* inputs past the sixth are base's (arena): the variant changes its own copy */
                if (base.more_inputs) {
                    pp_layer_input all[PP_LAYER_MAX_ALL_INPUTS];
                    for (int k = 0; k < base.n_inputs; k++) all[k] = *pp_layer_row_input(&base, k);
                    if (pp_layer_row_set_inputs(&r, all, base.n_inputs, P->arena) != 0) {
                        st = pp_err_set(err, PERFPRED_ERR_NOMEM, "plan: out of memory");
                        break;
                    }
                }
                if (!substitute(&r, ax, v, nv)) continue;
                char tag[48];
                snprintf(tag, sizeof tag, "%s*%g", axis_names[ax], factors[fi]);
                int64_t b = P->c[i].batch;
                st = add_variant(P, i, &r, tag, ax == AX_BATCH && b == v ? nv : b, &sig, err);
            }
        }
        if (st == PERFPRED_OK) st = perturb_window(P, i, &base, &sig, err);
        if (st == PERFPRED_OK) st = perturb_group(P, i, &base, &sig, err);
    }
    free(sig.data);
    return st;
}

/* The zoo's observed ranges per kind and axis class, over the base candidates that rebuild. */
static void zoo_ranges(plan *P, int n_base, range *rg)
{
    char why[256];
    for (int k = 0; k < PP_OPK__COUNT; k++)
        for (int ax = 0; ax < AX__COUNT; ax++) {
            rg[k].lo[ax] = INT64_MAX;
            rg[k].hi[ax] = 0;
        }
    for (int i = 0; i < n_base; i++) {
        if (P->c[i].valid != 1) continue;
        pp_layer_row r;
        if (pp_plan_sig_to_row(P->c[i].sig, P->arena, &r, why, sizeof why) != 0) continue;
        r.kind = P->c[i].kind;
        for (int ax = 0; ax < AX__COUNT; ax++) {
            int64_t v = axis_value(&r, &P->c[i].feat, ax);
            if (v < 1) continue;
            /* input and output channels share one range */
            int a2 = ax == AX_COUT ? AX_CIN : ax;
            range *R = &rg[r.kind];
            if (v < R->lo[a2]) R->lo[a2] = v;
            if (v > R->hi[a2]) R->hi[a2] = v;
        }
    }
    for (int k = 0; k < PP_OPK__COUNT; k++) {
        rg[k].lo[AX_COUT] = rg[k].lo[AX_CIN];
        rg[k].hi[AX_COUT] = rg[k].hi[AX_CIN];
    }
}

perfpred_status pp_plan_perturb(plan *P, int n_base, pp_err *err)
{
    range rg[PP_OPK__COUNT];
    zoo_ranges(P, n_base, rg);
    return perturb(P, n_base, rg, err);
}
