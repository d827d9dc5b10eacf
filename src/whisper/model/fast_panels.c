/* fast_panels.c — float16 panels of the decoder's weights (kernels/gemv/vec.h vec_f16_panel_pack) for
 * steps with many rows: the batched long-form mode's 8 windows × 5 beams, a cross-request batch.
 * A panel is a second copy of a matrix (the embedding and every decoder linear: tiny.en 56 MB,
 * base 97 MB), so none is made until a step first has VEC_PANEL_MIN_INPUTS rows; then all are
 * packed at once, on the pool, under a mutex (whisper_fast states that share weights share them).
 * The products from a panel are bit-identical to the row kernel's, so nothing else changes.
 * A decoder whose panels would pass FAST_PANEL_MAX_BYTES (medium: ~810 MB, large: ~1.4 GB) gets
 * none: the row kernel serves it, and memory stays what it was. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/bigmem.h"
#include "whisper/fast_internal.h"

#define FAST_PANEL_MAX_BYTES ((size_t)512 << 20) /* tiny.en 56 MB, base 97, small ~280 */

typedef struct panel_mat {
    const uint16_t *W; /* the weights [N][K] */
    uint16_t *P;       /* its panel */
    int N, K;
} panel_mat;

struct fast_panels {
    pthread_mutex_t mu;
    atomic_int state; /* 0: not built, 1: built, -1: out of memory (the row kernel serves) */
    panel_mat *mats;
    int n;
    uint16_t *store;
};

fast_panels *fast_panels_new(void) {
    fast_panels *p = calloc(1, sizeof *p);
    if (p) pthread_mutex_init(&p->mu, NULL);
    return p;
}

void fast_panels_free(fast_panels *p) {
    if (!p) return;
    steno_bigmem_free(p->store);
    free(p->mats);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

typedef struct pack_job {
    const fast_panels *p;
    int total_blocks; /* 32-row blocks over all matrices */
} pack_job;

/* task t packs its share of the blocks (each block its own 32 rows: any split gives the same panel) */
static void pack_task(void *ctx, int t, int n) {
    const pack_job *j = ctx;
    const int per = (j->total_blocks + n - 1) / n, b0 = t * per, b1 = b0 + per < j->total_blocks ? b0 + per : j->total_blocks;
    int base = 0;
    for (int i = 0; i < j->p->n && base < b1; i++) {
        const panel_mat *m = &j->p->mats[i];
        const int nb = m->N / 32, lo = b0 > base ? b0 - base : 0, hi = b1 - base < nb ? b1 - base : nb;
        if (lo < hi)
            vec_f16_panel_pack(m->W + (size_t)lo * 32 * m->K, (hi - lo) * 32, m->K, m->P + (size_t)lo * 32 * m->K);
        base += nb;
    }
}

static int build(whisper_fast *f, fast_panels *p) {
    const whisper_model *m = f->m;
    const int L = m->n_text_layer, D = m->n_text_state;
    p->mats = calloc((size_t)6 * L + 1, sizeof *p->mats);
    if (!p->mats) return -1;
    size_t total = 0;
    int blocks = 0;
#define ADD(w, rows, cols)                                                                       \
    do {                                                                                         \
        const size_t h = vec_f16_panel_halves((rows), (cols));                                   \
        if (h) {                                                                                 \
            p->mats[p->n++] = (panel_mat){(const uint16_t *)(w), (uint16_t *)(uintptr_t)total, (rows), (cols)}; \
            total += h;                                                                          \
            blocks += (rows) / 32;                                                               \
        }                                                                                        \
    } while (0)
    ADD(f->emb, m->n_vocab, D);
    for (int l = 0; l < L; l++) {
        const fast_layer *y = &f->dec[l];
        ADD(y->qkv, 3 * D, D);
        ADD(y->out, D, D);
        ADD(y->cross_q, D, D);
        ADD(y->cross_out, D, D);
        ADD(y->fc1, 4 * D, D);
        ADD(y->fc2, D, 4 * D);
    }
#undef ADD
    if (!p->n || sizeof(uint16_t) * total > FAST_PANEL_MAX_BYTES) {
        p->n = 0; /* none: fast_panel gives NULL */
        return 1;
    }
    p->store = steno_bigmem_alloc(sizeof(uint16_t) * total);
    if (!p->store) return -1;
    for (int i = 0; i < p->n; i++) p->mats[i].P = p->store + (size_t)(uintptr_t)p->mats[i].P;
    pack_job j = {p, blocks};
    steno_pool_run(f->pool, pack_task, &j, f->n_threads);
    return 1;
}

const uint16_t *fast_panel(whisper_fast *f, const void *W, int nx) {
    fast_panels *p = f->panels;
    if (!p || f->dt != VEC_F16 || nx < VEC_PANEL_MIN_INPUTS) return NULL;
    int s = atomic_load(&p->state);
    if (!s) {
        pthread_mutex_lock(&p->mu);
        s = atomic_load(&p->state);
        if (!s) {
            s = build(f, p);
            atomic_store(&p->state, s);
        }
        pthread_mutex_unlock(&p->mu);
    }
    if (s != 1) return NULL;
    for (int i = 0; i < p->n; i++)
        if (p->mats[i].W == W) return p->mats[i].P;
    return NULL;
}
