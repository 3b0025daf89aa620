/* predictor/reuse.c: a context's table of predictions already made (reuse.h), keyed by the model's
 * serial (never reused, unlike its address), the device descriptor, and every prediction
 * parameter that changes a figure. Thread-safe: one mutex, held for a key compare and a copy. */
#include "predictor/reuse.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Every field of perfpred_predict_params is either in the key or makes a call uncacheable: a new
 * field must be added to one of them (this assert fails the build until it is). */
_Static_assert(sizeof(perfpred_predict_params) == 6 * sizeof(void *),
               "perfpred_predict_params changed: add the new field to predictor/reuse.c's key");

#define NAME_CAP 48

typedef struct reuse_key {
    uint64_t model;
    const pp_device *dev;
    int layer_sum_only;
    char runtime[NAME_CAP], precision[NAME_CAP]; /* "" = NULL (the descriptor's) */
} reuse_key;

typedef struct reuse_slot {
    int used;
    reuse_key key;
    perfpred_prediction pred;
} reuse_slot;

static atomic_int reuse_off;
void pp_reuse_disable(int off) { atomic_store(&reuse_off, off != 0); }

struct pp_reuse {
    pthread_mutex_t lock;
    long hits, lookups;
    reuse_slot slot[PP_REUSE_SLOTS];
};

pp_reuse *pp_reuse_new(void)
{
    pp_reuse *r = calloc(1, sizeof *r);
    if (r && pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return NULL;
    }
    return r;
}

void pp_reuse_free(pp_reuse *r)
{
    if (!r) return;
    pthread_mutex_destroy(&r->lock);
    free(r);
}

int pp_reuse_cacheable(const perfpred_predict_params *p)
{
    return !atomic_load_explicit(&reuse_off, memory_order_relaxed) && !p->kernels &&
           (!p->runtime || strlen(p->runtime) < NAME_CAP) &&
           (!p->precision || strlen(p->precision) < NAME_CAP);
}

static void make_key(uint64_t model, const pp_device *d, const perfpred_predict_params *p,
                     reuse_key *k)
{
    memset(k, 0, sizeof *k); /* the key is compared with memcmp: no stray bytes */
    k->model = model;
    k->dev = d;
    k->layer_sum_only = p->layer_sum_only != 0;
    if (p->runtime) strcpy(k->runtime, p->runtime);     /* length checked by pp_reuse_cacheable */
    if (p->precision) strcpy(k->precision, p->precision);
}

static unsigned slot_of(const reuse_key *k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *b = (const unsigned char *)k;
    for (size_t i = 0; i < sizeof *k; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return (unsigned)(h ^ (h >> 32)) % PP_REUSE_SLOTS;
}

int pp_reuse_get(pp_reuse *r, uint64_t model_serial, const pp_device *d,
                 const perfpred_predict_params *p, perfpred_prediction *out)
{
    if (!r || !pp_reuse_cacheable(p)) return 0;
    reuse_key k;
    make_key(model_serial, d, p, &k);
    unsigned s = slot_of(&k);
    pthread_mutex_lock(&r->lock);
    r->lookups++;
    int hit = r->slot[s].used && memcmp(&r->slot[s].key, &k, sizeof k) == 0;
    if (hit) {
        *out = r->slot[s].pred;
        r->hits++;
    }
    pthread_mutex_unlock(&r->lock);
    if (hit && p->n_kernels) *p->n_kernels = out->n_kernels;
    return hit;
}

void pp_reuse_put(pp_reuse *r, uint64_t model_serial, const pp_device *d,
                  const perfpred_predict_params *p, const perfpred_prediction *out)
{
    if (!r || !pp_reuse_cacheable(p)) return;
    reuse_key k;
    make_key(model_serial, d, p, &k);
    unsigned s = slot_of(&k);
    pthread_mutex_lock(&r->lock);
    r->slot[s].used = 1;
    r->slot[s].key = k;
    r->slot[s].pred = *out;
    pthread_mutex_unlock(&r->lock);
}

void pp_reuse_counts(const pp_reuse *r, long *hits, long *lookups)
{
    if (!r) {
        *hits = *lookups = 0;
        return;
    }
    pthread_mutex_t *lock = (pthread_mutex_t *)&r->lock; /* the counters' lock, not the table's contents */
    pthread_mutex_lock(lock);
    *hits = r->hits;
    *lookups = r->lookups;
    pthread_mutex_unlock(lock);
}
