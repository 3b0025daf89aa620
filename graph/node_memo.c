/* graph/node_memo.c: shape inference's and features' results for a node, kept across graphs by
 * what those passes read of it (opset, op type and domain, attributes by value, input dtypes, dims
 * and flags, which inputs repeat), so that a search that builds network after network of the same
 * few layers runs each layer's rules once. A key is compared word for word on every hit (its hash
 * only says where to look), and a node is entered only where its outputs came out known, not
 * constant and without symbolic dims, so a hit writes exactly what the rule wrote. */
#include "graph/graph.h"

#include <stdlib.h>
#include <string.h>

#define MEMO_MAX_IO 8        /* inputs / outputs a node may have to be entered */
#define MEMO_MAX_KEY 512     /* words of one key */
#define MEMO_MAX_ENTRIES 1024
#define MEMO_MAX_WORDS (MEMO_MAX_ENTRIES * 64)

typedef struct memo_out {
    int32_t dtype;
    int rank;
    int64_t dims[PP_MAX_RANK];
    uint32_t flags; /* PP_T_SHAPE_KNOWN: the bits the rule set */
} memo_out;

typedef struct memo_entry {
    uint64_t hash;
    size_t key;               /* offset of its key in words */
    int key_len;
    int n_out;
    memo_out out[MEMO_MAX_IO];
    int feat_ok;              /* feat holds the features computed with these static inputs */
    uint32_t in_static;       /* bit k: input k was static (a weight, a constant, a folded output) */
    pp_node_feat feat;
} memo_entry;

struct pp_node_memo {
    memo_entry *e;
    int n, cap;
    uint64_t *words;          /* the keys, one after another */
    size_t n_words, cap_words;
    int *slot;                /* open addressing: 1 + entry, 0 empty; 2 * MEMO_MAX_ENTRIES slots */
    int full;                 /* an entry did not fit: start over at the next graph */
    int64_t hits;             /* nodes given their shapes by an entry */
    int *node;                /* per node of the graph in hand: 1 + its entry, 0 for none */
    int cap_node;
    uint64_t key[MEMO_MAX_KEY]; /* the key of the node in hand (pp_node_memo_shapes to _put) */
    int key_len, key_node;
    uint64_t key_hash;
};

#define MEMO_SLOTS (2 * MEMO_MAX_ENTRIES)

pp_node_memo *pp_node_memo_new(void)
{
    pp_node_memo *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->slot = calloc(MEMO_SLOTS, sizeof *m->slot);
    if (!m->slot) {
        free(m);
        return NULL;
    }
    m->key_node = -1;
    return m;
}

void pp_node_memo_free(pp_node_memo *m)
{
    if (!m) return;
    free(m->e);
    free(m->words);
    free(m->slot);
    free(m->node);
    free(m);
}

int64_t pp_node_memo_hits(const pp_node_memo *m) { return m ? m->hits : 0; }

int pp_node_memo_begin(pp_node_memo *m, int n_nodes)
{
    if (m->full) {
        m->n = 0;
        m->n_words = 0;
        memset(m->slot, 0, MEMO_SLOTS * sizeof *m->slot);
        m->full = 0;
    }
    if (n_nodes > m->cap_node) {
        int *nn = realloc(m->node, (size_t)n_nodes * sizeof *nn);
        if (!nn) return -1;
        m->node = nn;
        m->cap_node = n_nodes;
    }
    if (n_nodes > 0) memset(m->node, 0, (size_t)n_nodes * sizeof *m->node);
    m->key_node = -1;
    return 0;
}

/* ---- keys ---- */

/* Words are written without a bound check each: every block checks first that it fits (a string
 * of at most KEY_STR bytes, an input, an attribute of at most KEY_VALS values). */
#define KEY_STR 64
#define KEY_VALS 16
#define KEY_BLOCK (2 + KEY_STR / 8 + 4 + KEY_VALS)

static int k_str(uint64_t *w, int n, const char *s)
{
    int at = n++;
    size_t len = 0;
    for (;;) {
        uint64_t v = 0;
        int i = 0;
        for (; i < 8 && s[len]; i++, len++) v |= (uint64_t)(unsigned char)s[len] << (8 * i);
        w[n++] = v;
        if (i < 8 || len >= KEY_STR) break;
    }
    if (s[len]) return -1;
    w[at] = len;
    return n;
}

static uint64_t k_f64(double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    return v;
}

/* every field shape inference or features may read into w, its length; 0 when the node is not
 * entered (a constant input of more than KEY_VALS values, symbolic dims, an attribute holding a
 * tensor, a graph or strings, too many inputs, outputs or words) */
static int make_key(const pp_graph *g, const pp_node *n, uint64_t *w)
{
    if (n->n_inputs > MEMO_MAX_IO || n->n_outputs > MEMO_MAX_IO || n->unknown_op) return 0;
    int k = 0;
    w[k++] = (uint64_t)g->opset;
    w[k++] = (uint64_t)n->n_inputs | (uint64_t)n->n_outputs << 16 | (uint64_t)n->n_attrs << 32;
    if ((k = k_str(w, k, n->op_type)) < 0 || (k = k_str(w, k, n->domain)) < 0) return 0;
    for (int i = 0; i < n->n_inputs; i++) {
        if (k > MEMO_MAX_KEY - KEY_BLOCK) return 0;
        int t = n->inputs[i], rep = 0;
        for (int j = 0; j < i; j++)
            if (n->inputs[j] == t) rep = j + 1;
        if (t < 0) {
            w[k++] = UINT64_MAX;
            continue;
        }
        const pp_tensor *T = &g->tensors[t];
        if (T->rank < 0 || T->rank > PP_MAX_RANK) return 0;
        w[k++] = (uint64_t)(uint32_t)T->dtype | (uint64_t)T->rank << 32 | (uint64_t)rep << 40;
        w[k++] = T->flags;
        for (int d = 0; d < T->rank; d++) {
            if (T->dim_param[d]) return 0;
            w[k++] = (uint64_t)T->dims[d];
        }
        if (T->flags & PP_T_CONST) { /* a small constant: its value, as the rules may read it */
            const pp_value *v = &T->val;
            if (v->n < 0 || v->n > KEY_VALS || v->rank != T->rank || v->dtype != T->dtype ||
                (v->n > 0 && !v->ival == !v->fval) ||
                memcmp(v->dims, T->dims, (size_t)T->rank * sizeof *T->dims) != 0)
                return 0;
            w[k++] = (uint64_t)v->n | (uint64_t)(v->ival != NULL) << 32;
            for (int64_t j = 0; j < v->n; j++)
                w[k++] = v->ival ? (uint64_t)v->ival[j] : k_f64(v->fval[j]);
        }
    }
    if (k > MEMO_MAX_KEY - KEY_BLOCK) return 0;
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        for (int i = 0; i < n->n_inputs; i++)
            if (t >= 0 && n->inputs[i] == t) return 0;
        w[k++] = t < 0 ? UINT64_MAX : g->tensors[t].flags & ~(uint32_t)(PP_T_CONST | PP_T_SHAPE_KNOWN);
    }
    for (int a = 0; a < n->n_attrs; a++) {
        const pp_attr *A = &n->attrs[a];
        if (k > MEMO_MAX_KEY - KEY_BLOCK - KEY_STR / 8 - 2 || (k = k_str(w, k, A->name)) < 0) return 0;
        w[k++] = (uint64_t)A->type;
        switch (A->type) {
        case PP_ATTR_INT: w[k++] = (uint64_t)A->i; break;
        case PP_ATTR_FLOAT: w[k++] = k_f64(A->f); break;
        case PP_ATTR_STRING:
            if ((k = k_str(w, k, A->s ? A->s : "")) < 0) return 0;
            break;
        case PP_ATTR_INTS:
            if (A->n < 0 || A->n > KEY_VALS) return 0;
            w[k++] = (uint64_t)A->n;
            for (int64_t j = 0; j < A->n; j++) w[k++] = (uint64_t)A->ints[j];
            break;
        case PP_ATTR_FLOATS:
            if (A->n < 0 || A->n > KEY_VALS) return 0;
            w[k++] = (uint64_t)A->n;
            for (int64_t j = 0; j < A->n; j++) w[k++] = k_f64(A->floats[j]);
            break;
        default: return 0; /* tensors, graphs, string lists: not entered */
        }
    }
    return k;
}

/* where to look; the whole key is compared. Four lanes: one chain of multiplies over a ~40-word
 * key waited on each multiply's latency. */
static uint64_t hash_key(const uint64_t *w, int n)
{
    const uint64_t K = 0x9e3779b97f4a7c15ull;
    uint64_t a[4] = {(uint64_t)n, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                     0x27d4eb2f165667c5ull};
    int i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++) a[j] = (a[j] + w[i + j]) * K;
    for (; i < n; i++) a[0] = (a[0] + w[i]) * K;
    uint64_t h = (((a[0] * K) ^ a[1]) * K ^ a[2]) * K ^ a[3];
    h *= K;
    return h ^ h >> 29;
}

static int find(const pp_node_memo *m, const uint64_t *key, int len, uint64_t h)
{
    for (size_t s = h & (MEMO_SLOTS - 1);; s = (s + 1) & (MEMO_SLOTS - 1)) {
        int e = m->slot[s];
        if (!e) return -1;
        const memo_entry *E = &m->e[e - 1];
        if (E->hash == h && E->key_len == len &&
            memcmp(m->words + E->key, key, (size_t)len * sizeof *key) == 0)
            return e - 1;
    }
}

/* ---- shape inference ---- */

int pp_node_memo_shapes(pp_graph *g, int ni)
{
    pp_node_memo *m = g->memo;
    m->key_node = -1;
    int len = make_key(g, &g->nodes[ni], m->key);
    if (len <= 0) return 0;
    m->key_len = len;
    m->key_hash = hash_key(m->key, len);
    m->key_node = ni;
    int e = find(m, m->key, len, m->key_hash);
    if (e < 0) return 0;
    const memo_entry *E = &m->e[e];
    pp_node *n = &g->nodes[ni];
    for (int o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] < 0) continue;
        pp_tensor *t = &g->tensors[n->outputs[o]];
        const memo_out *f = &E->out[o];
        /* what resetting the output and running the rule leave (shape.c: reset_output) */
        t->flags = (t->flags & ~(uint32_t)(PP_T_CONST | PP_T_SHAPE_KNOWN)) | f->flags;
        memset(&t->val, 0, sizeof t->val);
        t->val.n = -1;
        t->dtype = f->dtype;
        t->rank = f->rank;
        memcpy(t->dims, f->dims, sizeof t->dims);
        for (int d = 0; d < PP_MAX_RANK; d++) t->dim_param[d] = NULL;
    }
    m->node[ni] = e + 1;
    m->key_node = -1;
    m->hits++;
    return 1;
}

void pp_node_memo_shapes_put(pp_graph *g, int ni)
{
    pp_node_memo *m = g->memo;
    if (m->key_node != ni || m->full) return;
    m->key_node = -1;
    const pp_node *n = &g->nodes[ni];
    if (n->unknown_op || n->feat.folded) return;
    memo_entry E;
    memset(&E, 0, sizeof E);
    E.n_out = n->n_outputs;
    for (int o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] < 0) continue;
        const pp_tensor *t = &g->tensors[n->outputs[o]];
        if ((t->flags & (PP_T_CONST | PP_T_SHAPE_KNOWN)) != PP_T_SHAPE_KNOWN || t->val.n != -1 ||
            t->val.ival || t->val.fval || t->val.dtype || t->val.rank)
            return;
        for (int d = 0; d < PP_MAX_RANK; d++)
            if (t->dim_param[d] || t->val.dims[d]) return;
        E.out[o].dtype = t->dtype;
        E.out[o].rank = t->rank;
        memcpy(E.out[o].dims, t->dims, sizeof t->dims);
        E.out[o].flags = PP_T_SHAPE_KNOWN;
    }
    if (m->n == MEMO_MAX_ENTRIES || m->n_words + (size_t)m->key_len > MEMO_MAX_WORDS) {
        m->full = 1;
        return;
    }
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 64;
        memo_entry *ne = realloc(m->e, (size_t)cap * sizeof *ne);
        if (!ne) return;
        m->e = ne;
        m->cap = cap;
    }
    if (m->n_words + (size_t)m->key_len > m->cap_words) {
        size_t cap = m->cap_words ? 2 * m->cap_words : 4096;
        while (cap < m->n_words + (size_t)m->key_len) cap *= 2;
        uint64_t *nw = realloc(m->words, cap * sizeof *nw);
        if (!nw) return;
        m->words = nw;
        m->cap_words = cap;
    }
    E.hash = m->key_hash;
    E.key = m->n_words;
    E.key_len = m->key_len;
    memcpy(m->words + m->n_words, m->key, (size_t)m->key_len * sizeof *m->key);
    m->n_words += (size_t)m->key_len;
    size_t s = m->key_hash & (MEMO_SLOTS - 1);
    while (m->slot[s]) s = (s + 1) & (MEMO_SLOTS - 1);
    m->e[m->n] = E;
    m->slot[s] = ++m->n;
    m->node[ni] = m->n;
}

/* ---- features ---- */

static uint32_t static_bits(const pp_graph *g, const pp_node *n)
{
    uint32_t bits = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0) continue;
        const pp_tensor *T = &g->tensors[t];
        int st = (T->flags & (PP_T_WEIGHT | PP_T_CONST)) != 0;
        if (!st && T->producer >= 0) {
            const pp_node_feat *pf = &g->nodes[T->producer].feat;
            st = pf->folded || pf->kind == PP_OPK_SHAPE;
        }
        bits |= (uint32_t)st << i;
    }
    return bits;
}

int pp_node_memo_feat(pp_graph *g, int ni)
{
    const pp_node_memo *m = g->memo;
    int e = m->node[ni] - 1;
    if (e < 0 || !m->e[e].feat_ok) return 0;
    pp_node *n = &g->nodes[ni];
    if (n->feat.folded || static_bits(g, n) != m->e[e].in_static) return 0;
    memcpy(&n->feat, &m->e[e].feat, sizeof n->feat); /* padding too: users compare with memcmp */
    return 1;
}

void pp_node_memo_feat_put(pp_graph *g, int ni, int folded_before)
{
    pp_node_memo *m = g->memo;
    int e = m->node[ni] - 1;
    if (e < 0 || m->e[e].feat_ok || folded_before) return;
    const pp_node *n = &g->nodes[ni];
    m->e[e].in_static = static_bits(g, n);
    memcpy(&m->e[e].feat, &n->feat, sizeof n->feat);
    m->e[e].feat_ok = 1;
}
