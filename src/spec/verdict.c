/* verdict.c — see verdict.h. */
#include "spec/verdict.h"

#include <pthread.h>
#include <string.h>

#define VERDICTS 32

typedef struct {
    int key[STENO_SPEC_VKEY];
    steno_spec_cost cost;
} verdict;

static verdict g_verdicts[VERDICTS];
static int g_n;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static verdict *find(const int *key) {
    for (int i = 0; i < g_n; i++)
        if (!memcmp(g_verdicts[i].key, key, sizeof(int) * STENO_SPEC_VKEY)) return &g_verdicts[i];
    return NULL;
}

int steno_spec_verdict_get(const int key[STENO_SPEC_VKEY], steno_spec_cost *out) {
    pthread_mutex_lock(&g_mu);
    const verdict *v = find(key);
    if (v) *out = v->cost;
    pthread_mutex_unlock(&g_mu);
    return v != NULL;
}

void steno_spec_verdict_put(const int key[STENO_SPEC_VKEY], const steno_spec_cost *c) {
    pthread_mutex_lock(&g_mu);
    verdict *v = find(key);
    if (!v) v = &g_verdicts[g_n < VERDICTS ? g_n++ : VERDICTS - 1];
    memcpy(v->key, key, sizeof v->key);
    v->cost = *c;
    pthread_mutex_unlock(&g_mu);
}

void steno_spec_verdict_clear(void) {
    pthread_mutex_lock(&g_mu);
    g_n = 0;
    pthread_mutex_unlock(&g_mu);
}
