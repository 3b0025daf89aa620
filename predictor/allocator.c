/* predictor/allocator.c: eager PyTorch's allocation trace of a graph, and its replay through the
 * CUDA caching allocator's rules (predictor/allocator.h states both). */
#include "predictor/allocator.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "predictor/stack.h"

#define KIB 1024LL
#define MIB (1024LL * 1024LL)
#define SMALL_SIZE (1 * MIB)     /* kSmallSize: largest request of the small pool */
#define SMALL_BUFFER (2 * MIB)   /* kSmallBuffer: a small pool's segment */
#define LARGE_BUFFER (20 * MIB)  /* kLargeBuffer: segment for large requests under 10 MiB */
#define MIN_LARGE_ALLOC (10 * MIB)
#define ROUND_LARGE (2 * MIB)
#define MIN_BLOCK 512LL

/* ------------------------------------------------------------------ trace ---- */

/* Element-wise activations torchvision runs with inplace=True (and that write nothing new when
 * their input dies with them). */
static int inplace_op(const char *op)
{
    static const char *const ops[] = {"Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish",
                                      "Elu", "Selu", "Celu"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0) return 1;
    return 0;
}

/* Ops whose outputs are views of their first input in eager PyTorch (no allocation). */
static int view_node(const pp_node *n)
{
    return n->feat.kind == PP_OPK_RESHAPE || strcmp(n->op_type, "Split") == 0;
}

typedef struct tb {
    pp_alloc_ev *ev;
    int n, cap;
} tb;

static int push(tb *t, int32_t buf, int kind, int64_t bytes)
{
    if (t->n == t->cap) {
        int nc = t->cap ? 2 * t->cap : 256;
        pp_alloc_ev *ne = realloc(t->ev, (size_t)nc * sizeof *ne);
        if (!ne) return -1;
        t->ev = ne;
        t->cap = nc;
    }
    t->ev[t->n++] = (pp_alloc_ev){buf, kind, bytes};
    return 0;
}

/* Last node reading each root buffer (-1: none); graph outputs live to the end. */
static void last_readers(const pp_graph *g, const int *root, int *end)
{
    for (int t = 0; t < g->n_tensors; t++) end[t] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const pp_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t >= 0 && root[t] >= 0 && end[root[t]] < i) end[root[t]] = i;
        }
    }
    /* graph outputs live to the end; graph inputs too (the caller holds them) */
    for (int t = 0; t < g->n_tensors; t++)
        if ((g->tensors[t].flags & (PP_T_GRAPH_OUTPUT | PP_T_GRAPH_INPUT)) && root[t] >= 0)
            end[root[t]] = g->n_nodes;
}

/* Every weight a node reads, allocated once when the model moves to the GPU; *total (optional)
 * gets their bytes. -1 on OOM. */
static int push_weights(const pp_graph *g, tb *t, int64_t *total)
{
    int64_t w = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const pp_tensor *T = &g->tensors[i];
        if (!(T->flags & PP_T_WEIGHT) || (T->flags & PP_T_CONST) || T->n_consumers <= 0) continue;
        int64_t b = pp_tensor_bytes(T);
        if (b <= 0) continue;
        if (push(t, i, PP_ALLOC_WEIGHT, b)) return -1;
        w += b;
    }
    if (total) *total = w;
    return 0;
}

/* TensorRT: the module's weights, the input and the output, then the engine's copy of the weights
 * and its activation block (ws_factor x the liveness peak less the input and output). */
static perfpred_status engine_trace(const pp_graph *g, pp_alloc_trace *out, pp_err *err)
{
    tb t = {0};
    int64_t w = 0, io = 0;
    if (push_weights(g, &t, &w)) goto oom;
    for (int i = 0; i < g->n_tensors; i++) {
        const pp_tensor *T = &g->tensors[i];
        if ((T->flags & (PP_T_GRAPH_INPUT | PP_T_GRAPH_OUTPUT)) &&
            !(T->flags & (PP_T_WEIGHT | PP_T_CONST))) {
            int64_t b = pp_tensor_bytes(T);
            if (b > 0 && push(&t, i, PP_ALLOC_ACT, b)) goto oom;
            if (b > 0) io += b;
        }
    }
    int64_t act = g->totals.peak_activation_bytes - io;
    if ((w > 0 && push(&t, -1, PP_ALLOC_ENGINE, w)) ||
        (act > 0 && (push(&t, g->n_tensors, PP_ALLOC_WS, act) ||
                     push(&t, g->n_tensors, PP_ALLOC_WS, 0))))
        goto oom;
    out->ev = t.ev;
    out->n = t.n;
    out->n_bufs = g->n_tensors + 1;
    return PERFPRED_OK;
oom:
    free(t.ev);
    return pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory building the allocation trace",
                      g->path);
}

perfpred_status pp_alloc_trace_build(const pp_graph *g, int bn_eager, int mode,
                                     pp_alloc_trace *out, pp_err *err)
{
    memset(out, 0, sizeof *out);
    if (mode == PP_TRACE_ENGINE) return engine_trace(g, out, err);
    int autocast = mode == PP_TRACE_AUTOCAST;
    out->fp32_weights = autocast;
    unsigned char *fp32 = autocast ? malloc((size_t)g->n_tensors + 1) : NULL;
    unsigned char *cached = autocast ? calloc((size_t)g->n_tensors + 1, 1) : NULL;
    int *held = autocast ? malloc(((size_t)g->n_nodes * PP_STACK_MAX_CASTS + 1) * sizeof *held)
                         : NULL;
    int n_held = 0;
    int nt = g->n_tensors, nn = g->n_nodes;
    int *root = calloc((size_t)nt + 1, sizeof *root);
    int *root1 = calloc((size_t)nt + 1, sizeof *root1);
    int *end = calloc((size_t)nt + 1, sizeof *end);
    tb t = {0};
    perfpred_status st = PERFPRED_OK;
    if (!root || !root1 || !end || (autocast && (!fp32 || !cached || !held)) ||
        push_weights(g, &t, NULL))
        goto oom;
    if (fp32) pp_stack_autocast_dtypes(g, fp32);

    for (int i = 0; i < nt; i++) {
        const pp_tensor *T = &g->tensors[i];
        root[i] = -1;
        if (T->flags & (PP_T_CONST | PP_T_WEIGHT)) continue;
        if (T->producer >= 0) {
            const pp_node_feat *pf = &g->nodes[T->producer].feat;
            if (!pf->folded && pf->kind != PP_OPK_SHAPE) root[i] = i;
        } else if (T->flags & PP_T_GRAPH_INPUT) {
            root[i] = i;
        }
    }
    for (int i = 0; i < nn; i++) {
        const pp_node *n = &g->nodes[i];
        if (!view_node(n) || n->feat.folded || n->n_inputs < 1 || n->inputs[0] < 0) continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0) root[n->outputs[k]] = root[n->inputs[0]];
    }
    /* in place: the activation's input buffer has no reader after it (by the roots above, kept in
     * root1); a second pass in topological order then maps the output, and views of it, to that
     * buffer */
    last_readers(g, root, end);
    memcpy(root1, root, (size_t)nt * sizeof *root);
    for (int i = 0; i < nn; i++) {
        const pp_node *n = &g->nodes[i];
        if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->feat.folded) continue;
        int in = root[n->inputs[0]];
        if (view_node(n)) {
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0) root[n->outputs[k]] = in;
            continue;
        }
        int r1 = root1[n->inputs[0]]; /* the input's buffer before any in-place merge */
        if (inplace_op(n->op_type) && in >= 0 && r1 >= 0 && n->outputs[0] >= 0 && end[r1] == i &&
            !(g->tensors[in].flags & PP_T_GRAPH_INPUT))
            root[n->outputs[0]] = in;
    }
    last_readers(g, root, end);

    int next_buf = nt;
    for (int i = 0; i < nt; i++)
        if (root[i] == i && g->tensors[i].producer < 0) {
            int64_t b = pp_tensor_bytes(&g->tensors[i]);
            if (b > 0 && push(&t, i, fp32 && fp32[i] ? PP_ALLOC_ACT32 : PP_ALLOC_ACT, b)) goto oom;
        }
    for (int i = 0; i < nn; i++) {
        const pp_node *n = &g->nodes[i];
        pp_stack_kernel bn;
        int tmp = -1;
        /* autocast's fp16 copies of the op's fp32 operands (4 bytes an element at fp32 scale:
         * the pass's 0.5 makes them fp16): an activation's held while the op runs, a weight's
         * kept in autocast's cast cache to the end of the pass */
        int ct[PP_STACK_MAX_CASTS], cast_buf[PP_STACK_MAX_CASTS];
        int nc = fp32 ? pp_stack_autocast_casts(g, fp32, i, ct) : 0;
        for (int c = 0; c < nc; c++) {
            cast_buf[c] = -1;
            int w = (g->tensors[ct[c]].flags & (PP_T_CONST | PP_T_WEIGHT)) != 0;
            if (w && cached[ct[c]]) continue;
            cast_buf[c] = next_buf++;
            if (push(&t, cast_buf[c], PP_ALLOC_ACT, 4 * pp_tensor_elems(&g->tensors[ct[c]])))
                goto oom;
            if (w) {
                cached[ct[c]] = 1;
                held[n_held++] = cast_buf[c];
                cast_buf[c] = -1;
            }
        }
        if (bn_eager && pp_stack_bn_pass(g, i, &bn) && !bn.bias) { /* a bias adds in place */
            /* eager: the convolution's own output, then BatchNorm's, then the first dies */
            tmp = next_buf++;
            if (push(&t, tmp, PP_ALLOC_ACT, pp_tensor_bytes(&g->tensors[n->outputs[0]])))
                goto oom;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            int o = n->outputs[k];
            if (o < 0 || root[o] != o) continue;
            int64_t b = pp_tensor_bytes(&g->tensors[o]);
            if (b < 0) {
                st = pp_err_set(err, PERFPRED_ERR_SHAPE,
                                "%s: node '%s': tensor '%s' has an unknown shape or dtype",
                                g->path, n->name, g->tensors[o].name);
                goto done;
            }
            if (b > 0 && push(&t, o, fp32 && fp32[o] ? PP_ALLOC_ACT32 : PP_ALLOC_ACT, b)) goto oom;
        }
        int mm = n->feat.kind == PP_OPK_LINEAR || n->feat.kind == PP_OPK_BMM;
        if (mm && !out->has_matmul && push(&t, -1, PP_ALLOC_CUBLAS, 1)) goto oom;
        if (mm) out->has_matmul = 1;
        if (n->feat.kind == PP_OPK_CONV && n->feat.group <= 1 && n->n_outputs > 0 &&
            n->outputs[0] >= 0) {
            /* cuDNN's workspace for the algorithm its heuristics pick, held while it runs */
            int w = next_buf++;
            if (push(&t, w, PP_ALLOC_WS, pp_tensor_bytes(&g->tensors[n->outputs[0]])) ||
                push(&t, w, PP_ALLOC_WS, 0))
                goto oom;
        }
        if (tmp >= 0 && push(&t, tmp, PP_ALLOC_ACT, 0)) goto oom;
        for (int c = 0; c < nc; c++)
            if (cast_buf[c] >= 0 && push(&t, cast_buf[c], PP_ALLOC_ACT, 0)) goto oom;
        for (int k = 0; k < n->n_inputs; k++) {
            int r = n->inputs[k] >= 0 ? root[n->inputs[k]] : -1;
            if (r < 0 || end[r] != i) continue;
            end[r] = -2; /* freed once, however many inputs alias it */
            if (push(&t, r, PP_ALLOC_ACT, 0)) goto oom;
        }
    }
    for (int h = 0; h < n_held; h++) /* autocast's cast cache empties as its region ends */
        if (push(&t, held[h], PP_ALLOC_ACT, 0)) goto oom;
    out->ev = t.ev;
    out->n = t.n;
    out->n_bufs = next_buf;
    t.ev = NULL;
    goto done;
oom:
    st = pp_err_set(err, PERFPRED_ERR_NOMEM, "%s: out of memory building the allocation trace",
                    g->path);
done:
    free(t.ev);
    free(root);
    free(root1);
    free(end);
    free(fp32);
    free(cached);
    free(held);
    return st;
}

void pp_alloc_trace_free(pp_alloc_trace *t)
{
    if (!t) return;
    free(t->ev);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- replay ---- */

typedef struct blk {
    int64_t off, size;
    int seg, prev, next; /* neighbours within the segment, -1 at its ends */
    int free, live;      /* live: the index holds a block (else it is on the spare list) */
    int fpos;            /* its place in the free list, -1 when not free */
} blk;

typedef struct seg {
    int64_t size;
    int small, alive;
} seg;

struct pp_alloc_sim {
    blk *b;
    int nb, cap_b;
    int *spare;
    int n_spare;
    int *fl;             /* the free blocks (the best-fit search scans only these) */
    int n_fl;
    seg *s;
    int ns, cap_s;
    int cublas; /* cuBLAS's workspace is allocated */
    int *wb;    /* the loaded model's weight blocks (a rebuild frees them) */
    int n_wb, cap_wb;
    pp_alloc_stats st;
};

pp_alloc_sim *pp_alloc_sim_new(void) { return calloc(1, sizeof(pp_alloc_sim)); }

void pp_alloc_sim_free(pp_alloc_sim *s)
{
    if (!s) return;
    free(s->b);
    free(s->spare);
    free(s->fl);
    free(s->s);
    free(s->wb);
    free(s);
}

static int new_block(pp_alloc_sim *s)
{
    if (s->n_spare > 0) return s->spare[--s->n_spare];
    if (s->nb == s->cap_b) {
        int nc = s->cap_b ? 2 * s->cap_b : 256;
        blk *nbk = realloc(s->b, (size_t)nc * sizeof *nbk);
        if (!nbk) return -1;
        s->b = nbk;
        int *nsp = realloc(s->spare, (size_t)nc * sizeof *nsp);
        if (!nsp) return -1;
        s->spare = nsp;
        int *nfl = realloc(s->fl, (size_t)nc * sizeof *nfl);
        if (!nfl) return -1;
        s->fl = nfl;
        s->cap_b = nc;
    }
    return s->nb++;
}

static void set_free(pp_alloc_sim *s, int i, int free_)
{
    blk *k = &s->b[i];
    k->free = free_;
    if (free_ && k->fpos < 0) {
        k->fpos = s->n_fl;
        s->fl[s->n_fl++] = i;
    } else if (!free_ && k->fpos >= 0) {
        int last = s->fl[--s->n_fl];
        s->fl[k->fpos] = last;
        s->b[last].fpos = k->fpos;
        k->fpos = -1;
    }
}

static void drop_block(pp_alloc_sim *s, int i)
{
    set_free(s, i, 0);
    s->b[i].live = 0;
    s->spare[s->n_spare++] = i;
}

static int64_t round_size(int64_t n) { return n < MIN_BLOCK ? MIN_BLOCK : (n + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK; }

static int64_t segment_size(int64_t n)
{
    if (n <= SMALL_SIZE) return SMALL_BUFFER;
    if (n < MIN_LARGE_ALLOC) return LARGE_BUFFER;
    return (n + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

/* best fit among the pool's free blocks: smallest, then the earliest segment and offset */
static int find_free(const pp_alloc_sim *s, int small, int64_t n)
{
    int best = -1;
    for (int f = 0; f < s->n_fl; f++) {
        int i = s->fl[f];
        const blk *k = &s->b[i];
        if (k->size < n || s->s[k->seg].small != small) continue;
        if (best < 0 || k->size < s->b[best].size ||
            (k->size == s->b[best].size &&
             (k->seg < s->b[best].seg || (k->seg == s->b[best].seg && k->off < s->b[best].off))))
            best = i;
    }
    return best;
}

static void release_cached(pp_alloc_sim *s);

/* Returns the block index handed out, -1 on OOM. */
static int sim_malloc(pp_alloc_sim *s, int64_t request, double capacity)
{
    int64_t n = round_size(request);
    int small = n <= SMALL_SIZE;
    int i = find_free(s, small, n);
    if (i < 0) {
        if (s->ns == s->cap_s) {
            int nc = s->cap_s ? 2 * s->cap_s : 64;
            seg *nsg = realloc(s->s, (size_t)nc * sizeof *nsg);
            if (!nsg) return -1;
            s->s = nsg;
            s->cap_s = nc;
        }
        int64_t sz = segment_size(n);
        if (capacity > 0 && s->st.reserved + (double)sz > capacity) {
            release_cached(s);
            if (s->st.reserved + (double)sz > capacity) s->st.over++;
        }
        i = new_block(s);
        if (i < 0) return -1;
        s->s[s->ns] = (seg){sz, small, 1};
        s->b[i] = (blk){0, sz, s->ns, -1, -1, 0, 1, -1};
        set_free(s, i, 1); /* cached until handed out below */
        s->ns++;
        s->st.reserved += (double)sz;
        if (s->st.reserved > s->st.peak_reserved) s->st.peak_reserved = s->st.reserved;
    }
    int64_t rest = s->b[i].size - n;
    if (small ? rest >= MIN_BLOCK : rest > SMALL_SIZE) {
        int j = new_block(s);
        if (j < 0) return -1;
        blk *k = &s->b[i];
        s->b[j] = (blk){k->off + n, rest, k->seg, i, k->next, 0, 1, -1};
        set_free(s, j, 1);
        if (k->next >= 0) s->b[k->next].prev = j;
        k->next = j;
        k->size = n;
    }
    set_free(s, i, 0);
    s->st.allocated += (double)s->b[i].size;
    if (s->st.allocated > s->st.peak_allocated) s->st.peak_allocated = s->st.allocated;
    return i;
}

static void sim_release(pp_alloc_sim *s, int i)
{
    blk *k = &s->b[i];
    set_free(s, i, 1);
    s->st.allocated -= (double)k->size;
    if (k->next >= 0 && s->b[k->next].free) {
        int j = k->next;
        k->size += s->b[j].size;
        k->next = s->b[j].next;
        if (k->next >= 0) s->b[k->next].prev = i;
        drop_block(s, j);
    }
    if (k->prev >= 0 && s->b[k->prev].free) {
        int p = k->prev;
        s->b[p].size += k->size;
        s->b[p].next = k->next;
        if (k->next >= 0) s->b[k->next].prev = p;
        drop_block(s, i);
    }
}

/* The bytes asked for `want`: past 2^60 B (no device holds it) the request stays 2^60 B and
 * counts as over. */
static int64_t request_of(pp_alloc_sim *s, double want)
{
    if (want > 0x1p60) {
        s->st.over++;
        return (int64_t)1 << 60;
    }
    return (int64_t)llround(want);
}

/* Allocates a weight of t's model and records its block; -1 on failure. */
static int load_weight(pp_alloc_sim *s, int64_t n, double capacity)
{
    if (s->n_wb == s->cap_wb) {
        int nc = s->cap_wb ? 2 * s->cap_wb : 256;
        int *w = realloc(s->wb, (size_t)nc * sizeof *w);
        if (!w) return -1;
        s->wb = w;
        s->cap_wb = nc;
    }
    int i = sim_malloc(s, n, capacity);
    if (i >= 0) s->wb[s->n_wb++] = i;
    return i;
}

/* Bytes per fp32 byte of event v: the pass's scale, but 1 for autocast's weights and fp32
 * activations */
static double ev_scale(const pp_alloc_trace *t, const pp_alloc_params *p, const pp_alloc_ev *v)
{
    if (v->kind == PP_ALLOC_ACT32 || (t->fp32_weights && v->kind == PP_ALLOC_WEIGHT)) return 1.0;
    return p->scale;
}

perfpred_status pp_alloc_sim_rebuild(pp_alloc_sim *s, const pp_alloc_trace *t,
                                     const pp_alloc_params *p, pp_err *err)
{
    int *old = s->wb, n_old = s->n_wb;
    s->wb = NULL;
    s->n_wb = s->cap_wb = 0;
    int e;
    for (e = 0; e < t->n; e++) {
        const pp_alloc_ev *v = &t->ev[e];
        if (v->kind != PP_ALLOC_WEIGHT || v->bytes <= 0) continue;
        double want = (double)v->bytes * ev_scale(t, p, v);
        if (!(want >= 1)) continue;
        if (load_weight(s, request_of(s, want), p->capacity) < 0) break;
    }
    /* the previous instance goes once the new one is bound: its blocks return to the cache */
    for (int k = 0; k < n_old; k++) sim_release(s, old[k]);
    free(old);
    return e < t->n ? pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory replaying allocations")
                    : PERFPRED_OK;
}

perfpred_status pp_alloc_sim_run(pp_alloc_sim *s, const pp_alloc_trace *t,
                                 const pp_alloc_params *p, pp_err *err)
{
    int *map = malloc(((size_t)t->n_bufs + 1) * sizeof *map);
    if (!map) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory replaying allocations");
    for (int i = 0; i < t->n_bufs; i++) map[i] = -1;
    int e;
    for (e = 0; e < t->n; e++) {
        const pp_alloc_ev *v = &t->ev[e];
        if (v->kind == PP_ALLOC_WEIGHT && !p->with_weights) continue;
        if (v->kind == PP_ALLOC_CUBLAS) {
            /* once per process: the handle's workspace stays allocated */
            if (s->cublas || !(p->cublas_bytes > 0)) continue;
            if (sim_malloc(s, (int64_t)llround(p->cublas_bytes), p->capacity) < 0) break;
            s->cublas = 1;
            continue;
        }
        if (v->bytes > 0) {
            double f = v->kind == PP_ALLOC_WS ? p->ws_factor : 1.0;
            double want = (double)v->bytes * ev_scale(t, p, v) * f;
            if (!(want >= 1)) continue; /* no workspace: nothing allocated, nothing to free */
            int64_t n = request_of(s, want);
            int i = v->kind == PP_ALLOC_WEIGHT ? load_weight(s, n, p->capacity)
                                               : sim_malloc(s, n, p->capacity);
            if (i < 0) break;
            if (v->kind != PP_ALLOC_WEIGHT && v->kind != PP_ALLOC_ENGINE && v->buf >= 0 &&
                v->buf < t->n_bufs)
                map[v->buf] = i;
        } else if (v->buf >= 0 && v->buf < t->n_bufs && map[v->buf] >= 0) {
            sim_release(s, map[v->buf]);
            map[v->buf] = -1;
        }
    }
    /* the pass's inputs and outputs go when the caller drops them */
    for (int i = 0; i < t->n_bufs; i++)
        if (map[i] >= 0) sim_release(s, map[i]);
    free(map);
    return e < t->n ? pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory replaying allocations")
                    : PERFPRED_OK;
}

void pp_alloc_sim_empty_cache(pp_alloc_sim *s) { release_cached(s); }

static void release_cached(pp_alloc_sim *s)
{
    for (int i = 0; i < s->nb; i++) {
        blk *k = &s->b[i];
        if (!k->live || !k->free || k->prev >= 0 || k->next >= 0) continue;
        /* a free block that spans its segment: the segment goes back to the driver */
        s->st.reserved -= (double)s->s[k->seg].size;
        s->s[k->seg].alive = 0;
        drop_block(s, i);
    }
}

void pp_alloc_sim_reset_peaks(pp_alloc_sim *s)
{
    s->st.peak_reserved = s->st.reserved;
    s->st.peak_allocated = s->st.allocated;
}

pp_alloc_stats pp_alloc_sim_stats(const pp_alloc_sim *s) { return s->st; }

perfpred_status pp_alloc_fresh(const pp_alloc_trace *t, const pp_alloc_params *p,
                               pp_alloc_stats *out, pp_err *err)
{
    pp_alloc_sim *s = pp_alloc_sim_new();
    if (!s) return pp_err_set(err, PERFPRED_ERR_NOMEM, "out of memory replaying allocations");
    pp_alloc_params q = *p;
    q.with_weights = 1;
    perfpred_status st = pp_alloc_sim_run(s, t, &q, err);
    *out = s->st;
    pp_alloc_sim_free(s);
    return st;
}
