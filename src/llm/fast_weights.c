/* fast_weights.c — the fast path's weights (model.h llm_fast_prepare): x8 copies (kernels/gemm/matmul_x8.h) of every
 * q4_0/q4_1/q5_0/q8_0/q4_K/q6_K projection and of the output head, made once per model by its first
 * STENO_LLM_COMPUTE_FAST context and kept until steno_llm_free. All copies share one block in
 * 2 MiB pages (core/bigmem.h): a decode step streams them all, and 4 KiB pages cost a page walk
 * per 4 KiB read. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigmem.h"
#include "kernels/quant/quant.h"

#include "llm/model.h"

struct llm_fast {
    steno_xmat *mats;
    int n;
    uint8_t *arena; /* every mats[i].data, each at a 64-byte boundary */
};

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

static pthread_mutex_t g_fast_mu = PTHREAD_MUTEX_INITIALIZER;

/* The weight types the fast path takes: every type with x8 kernels (q4_0, q4_1, q8_0, q4_K, q5_0,
 * q6_K), each through the gate (tests/unit/test_llm_fast.c; docs/LLM.md "The fast path").
 * STENO_FAST_TYPES, a comma-separated list of type names, replaces the list (for measuring one type's
 * share). */
static int fast_type(const steno_mat *W) {
    if (!steno_xmat_supported(W)) return 0;
    const char *env = getenv("STENO_FAST_TYPES");
    if (!env || !*env) return 1;
    const char *name = steno_type_name(W->type);
    const size_t len = strlen(name);
    for (const char *p = env; (p = strstr(p, name)) != NULL; p += len)
        if ((p == env || p[-1] == ',') && (p[len] == ',' || p[len] == 0)) return 1;
    return 0;
}

/* the model's matrices a forward pass multiplies with (the output head last) */
static int list_mats(steno_llm *m, steno_mat **out) {
    int n = 0;
    for (int l = 0; l < m->hp.n_layer; l++) {
        llm_layer *L = &m->layers[l];
        steno_mat *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        for (int i = 0; i < 7; i++)
            if (out) out[n++] = ws[i];
            else n++;
    }
    if (out) out[n] = &m->output;
    return n + 1;
}

int llm_fast_prepare(const steno_llm *cm) {
    /* The model is shared read-only by its contexts; the x8 copies are a cache built once under
     * the lock, before any FAST context exists, and only FAST contexts read them. */
    steno_llm *m = (steno_llm *)cm;
    pthread_mutex_lock(&g_fast_mu);
    int rc = 0;
    if (!m->fast) {
        const int n = list_mats(m, NULL);
        steno_mat **ws = malloc(sizeof *ws * (size_t)n);
        struct llm_fast *f = calloc(1, sizeof *f);
        if (f) f->mats = calloc((size_t)n, sizeof *f->mats);
        if (!ws || !f || !f->mats) rc = -1;
        if (rc == 0) {
            list_mats(m, ws);
            size_t total = 0;
            for (int i = 0; i < n; i++)
                if (fast_type(ws[i])) total += round64(steno_xmat_bytes(ws[i]));
            if (total && !(f->arena = steno_bigmem_alloc(total))) rc = -1;
            for (size_t at = 0, i = 0; (int)i < n && rc == 0; i++) {
                if (!fast_type(ws[i])) continue;
                if (steno_xmat_pack_into(ws[i], &f->mats[f->n], f->arena + at) != 0) rc = -1;
                else at += round64(steno_xmat_bytes(ws[i])), f->n++;
            }
        }
        if (rc == 0) {
            /* publish: the same walk, assigning each packed copy to its matrix */
            for (int i = 0, k = 0; i < n; i++)
                if (fast_type(ws[i])) ws[i]->x8 = &f->mats[k++];
            m->fast = f;
        } else if (f) {
            for (int i = 0; i < f->n; i++) steno_xmat_free(&f->mats[i]);
            steno_bigmem_free(f->arena);
            free(f->mats);
            free(f);
        }
        free(ws);
    }
    pthread_mutex_unlock(&g_fast_mu);
    return rc;
}

void llm_fast_free(steno_llm *m) {
    if (!m->fast) return;
    for (int i = 0; i < m->fast->n; i++) steno_xmat_free(&m->fast->mats[i]);
    steno_bigmem_free(m->fast->arena);
    free(m->fast->mats);
    free(m->fast);
    m->fast = NULL;
}
