/* layer_models/lm_memo.c: a regressor's memo of tree outputs by input row. The flat trees are a
 * pure function of the row's PP_LM_NFEAT floats, so a row seen before (the same conv shape in
 * another block of the network, in the next architecture of a search, on another MIG slice of the
 * same GPU) is answered from here, bit for bit, without walking the trees. Direct-mapped: a new
 * row takes an older one's slot. Thread-safe: striped mutexes, held for a compare and a copy. */
#include "layer_models/layer_models.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MEMO_SLOTS 1024 /* a power of two */
#define MEMO_STRIPES 16

typedef struct memo_slot {
    int used;
    float y;
    float x[PP_LM_NFEAT];
} memo_slot;

/* A step earlier: the model's answer by the kernel's features themselves (their bytes), which
 * skips building the row (roofline terms, logs, tiles) as well as the trees. */
#define FEAT_SLOTS 512 /* a power of two */
typedef struct feat_slot {
    int used;
    double out;
    pp_node_feat f;
} feat_slot;

struct pp_lm_memo {
    pthread_mutex_t lock[MEMO_STRIPES];
    long hits[MEMO_STRIPES], lookups[MEMO_STRIPES];
    memo_slot slot[MEMO_SLOTS];
    feat_slot fslot[FEAT_SLOTS];
};

static atomic_int memo_off;
void pp_lm_memo_disable(int off) { atomic_store(&memo_off, off != 0); }

pp_lm_memo *pp_lm_memo_new(void)
{
    if (atomic_load_explicit(&memo_off, memory_order_relaxed)) return NULL;
    pp_lm_memo *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    for (int i = 0; i < MEMO_STRIPES; i++)
        if (pthread_mutex_init(&m->lock[i], NULL) != 0) {
            while (i-- > 0) pthread_mutex_destroy(&m->lock[i]);
            free(m);
            return NULL;
        }
    return m;
}

void pp_lm_memo_free(pp_lm_memo *m)
{
    if (!m) return;
    for (int i = 0; i < MEMO_STRIPES; i++) pthread_mutex_destroy(&m->lock[i]);
    free(m);
}

/* FNV-1a over the row's bits: rows are compared bit for bit (-0 and 0, NaN payloads differ) */
static unsigned slot_of(const float *x)
{
    uint32_t w[PP_LM_NFEAT];
    memcpy(w, x, sizeof w);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < PP_LM_NFEAT; i++) h = (h ^ w[i]) * 0x100000001b3ull;
    return (unsigned)(h ^ (h >> 29)) & (MEMO_SLOTS - 1);
}

int pp_lm_memo_get(pp_lm_memo *m, const float *x, float *y)
{
    if (!m || atomic_load_explicit(&memo_off, memory_order_relaxed)) return 0;
    unsigned s = slot_of(x), k = s % MEMO_STRIPES;
    pthread_mutex_lock(&m->lock[k]);
    m->lookups[k]++;
    int hit = m->slot[s].used && memcmp(m->slot[s].x, x, sizeof m->slot[s].x) == 0;
    if (hit) {
        *y = m->slot[s].y;
        m->hits[k]++;
    }
    pthread_mutex_unlock(&m->lock[k]);
    return hit;
}

void pp_lm_memo_put(pp_lm_memo *m, const float *x, float y)
{
    if (!m || atomic_load_explicit(&memo_off, memory_order_relaxed)) return;
    unsigned s = slot_of(x), k = s % MEMO_STRIPES;
    pthread_mutex_lock(&m->lock[k]);
    m->slot[s].used = 1;
    m->slot[s].y = y;
    memcpy(m->slot[s].x, x, sizeof m->slot[s].x);
    pthread_mutex_unlock(&m->lock[k]);
}

/* FNV-1a over the features' 64-bit words (padding included: pp_graph_features writes it) */
static unsigned feat_slot_of(const pp_node_feat *f)
{
    uint64_t w[sizeof *f / 8], h = 0xcbf29ce484222325ull;
    memcpy(w, f, sizeof w);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) h = (h ^ w[i]) * 0x100000001b3ull;
    return (unsigned)(h ^ (h >> 29) ^ (h >> 47)) & (FEAT_SLOTS - 1);
}

int pp_lm_memo_get_feat(pp_lm_memo *m, const pp_node_feat *f, double *out)
{
    if (!m || atomic_load_explicit(&memo_off, memory_order_relaxed)) return 0;
    unsigned s = feat_slot_of(f), k = s % MEMO_STRIPES;
    pthread_mutex_lock(&m->lock[k]);
    int hit = m->fslot[s].used && memcmp(&m->fslot[s].f, f, sizeof *f) == 0;
    if (hit) {
        *out = m->fslot[s].out;
        m->lookups[k]++; /* counted as the row's lookup and hit it stands for */
        m->hits[k]++;
    }
    pthread_mutex_unlock(&m->lock[k]);
    return hit;
}

void pp_lm_memo_put_feat(pp_lm_memo *m, const pp_node_feat *f, double out)
{
    if (!m || atomic_load_explicit(&memo_off, memory_order_relaxed)) return;
    unsigned s = feat_slot_of(f), k = s % MEMO_STRIPES;
    pthread_mutex_lock(&m->lock[k]);
    m->fslot[s].used = 1;
    m->fslot[s].out = out;
    memcpy(&m->fslot[s].f, f, sizeof *f);
    pthread_mutex_unlock(&m->lock[k]);
}

void pp_lm_memo_counts(const pp_lm_memo *memo, long *hits, long *lookups)
{
    *hits = *lookups = 0;
    if (!memo) return;
    pp_lm_memo *m = (pp_lm_memo *)memo; /* the counters' locks, not the memo's contents */
    for (int k = 0; k < MEMO_STRIPES; k++) {
        pthread_mutex_lock(&m->lock[k]);
        *hits += m->hits[k];
        *lookups += m->lookups[k];
        pthread_mutex_unlock(&m->lock[k]);
    }
}
