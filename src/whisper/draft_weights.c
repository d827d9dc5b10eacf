/* draft_weights.c — the quant drafter's shared weights (draft_weights.h). */
#include "whisper/draft_weights.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static whisper_draft_weights *g_list; /* every built entry, under g_mu */

static void entry_free(whisper_draft_weights *w) {
    if (!w) return;
    for (int i = 0; i < w->nx; i++) steno_xmat_free(&w->xm[i]);
    free(w->xm);
    free(w->qdec);
    free(w->mats);
    free(w->qdata);
    free(w);
}

/* Re-quantizes f's float16/float32 decoder matrices and embedding into w's blocks, then repacks
 * them when every matrix has an x8 layout (q8_0 and q4_0 do). */
static steno_status build(const whisper_fast *f, int type, whisper_draft_weights *w) {
    const whisper_model *m = f->m;
    const int D = m->n_text_state, L = m->n_text_layer, V = m->n_vocab;
    const int shape[6][2] = {{3 * D, D}, {D, D}, {D, D}, {D, D}, {4 * D, D}, {D, 4 * D}};
    if (L < 1 || D < 1 || V < 1) return steno_fail(STENO_E_INVALID_ARG, "draft: empty decoder");
    if (f->dt != VEC_F16 && f->dt != VEC_F32)
        return steno_fail(STENO_E_INVALID_ARG, "draft: the quantized drafter needs float16 or float32 weights");
    if (wq_group(type) == 0 || D % wq_group(type) != 0)
        return steno_fail(STENO_E_INVALID_ARG, "draft: cannot quantize width %d to %s", D, wq_name(type));
    size_t total = 0;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < 6; k++) total += (wq_bytes(type, shape[k][0], shape[k][1]) + 63) & ~(size_t)63;
    total += (wq_bytes(type, V, D) + 63) & ~(size_t)63;
    w->bytes = total;
    w->qdata = aligned_alloc(64, total);
    w->mats = calloc((size_t)6 * L + 1, sizeof *w->mats);
    w->qdec = calloc((size_t)L, sizeof *w->qdec);
    /* ggml block types quantize row by row: the embedding goes through tmp CHUNK rows at a time
     * (its float copy alone would be n_vocab · D floats: 106 MB of first-touched pages for base) */
    enum { CHUNK = 4096 };
    const int mlx = type >= WQ_MLX_Q4_G32 && type <= WQ_MLX_Q8_G64;
    const size_t tmp_rows = mlx ? (size_t)(V > 4 * D ? V : 4 * D) : (size_t)(CHUNK > 4 * D ? CHUNK : 4 * D);
    float *tmp = malloc(sizeof(float) * tmp_rows * D);
    if (!w->qdata || !w->mats || !w->qdec || !tmp) {
        free(tmp);
        return steno_fail(STENO_E_NOMEM, "draft: out of memory");
    }
    unsigned char *p = w->qdata;
    for (int l = 0; l <= L; l++) {
        const void *src[6] = {0};
        int nk = 6;
        if (l < L) {
            const fast_layer *y = &f->dec[l];
            const void *s6[6] = {y->qkv, y->out, y->cross_q, y->cross_out, y->fc1, y->fc2};
            memcpy(src, s6, sizeof s6);
        } else {
            src[0] = f->emb;
            nk = 1;
        }
        for (int k = 0; k < nk; k++) {
            const int no = l < L ? shape[k][0] : V, ni = l < L ? shape[k][1] : D;
            wq_mat *mat = &w->mats[(size_t)6 * l + k];
            const int step = mlx ? no : (int)(tmp_rows * D / (size_t)ni);
            for (int r0 = 0; r0 < no; r0 += step) {
                const int nr = no - r0 < step ? no - r0 : step;
                const size_t cnt = (size_t)nr * ni, at = (size_t)r0 * ni;
                if (f->dt == VEC_F16) vec_f16_to_f32((const uint16_t *)src[k] + at, tmp, cnt);
                else memcpy(tmp, (const float *)src[k] + at, sizeof(float) * cnt);
                wq_mat part;
                wq_quantize(type, tmp, nr, ni, p + (mlx ? 0 : (size_t)r0 * steno_row_size(type, ni)), &part);
                if (r0 == 0) *mat = part;
            }
            mat->n_out = no;
            p += (wq_bytes(type, no, ni) + 63) & ~(size_t)63;
        }
        if (l < L) {
            const wq_mat *q = &w->mats[(size_t)6 * l];
            w->qdec[l] = (fast_layer){&q[0], &q[1], &q[2], &q[3], &q[4], &q[5]};
        }
    }
    free(tmp);
    const int nm = 6 * L + 1;
    w->xm = calloc((size_t)6 * (size_t)L + 1, sizeof *w->xm);
    if (!w->xm) return steno_fail(STENO_E_NOMEM, "draft: out of memory");
    int ok = 1;
    for (int i = 0; i < nm && ok; i++) {
        const wq_mat *q = &w->mats[i];
        const steno_mat sm = {q->type, q->n_in, q->n_out, q->q_row, q->q, NULL};
        ok = steno_xmat_supported(&sm) && steno_xmat_pack(&sm, &w->xm[i]) == 0;
        if (ok) w->nx = i + 1;
    }
    if (ok) {
        for (int i = 0; i < nm; i++)
            w->bytes += (size_t)w->xm[i].n_groups * (size_t)(w->xm[i].n_in / 32) * w->xm[i].block_bytes;
    } else { /* the rows kernels then (wq_gemv) */
        for (int i = 0; i < w->nx; i++) steno_xmat_free(&w->xm[i]);
        free(w->xm);
        w->xm = NULL;
        w->nx = 0;
    }
    return STENO_OK;
}

steno_status whisper_draft_weights_get(const whisper_fast *f, int type, const whisper_draft_weights **out) {
    *out = NULL;
    pthread_mutex_lock(&g_mu);
    for (whisper_draft_weights *w = g_list; w; w = w->next)
        if (w->key == f->dec && w->type == type) {
            *out = w;
            pthread_mutex_unlock(&g_mu);
            return STENO_OK;
        }
    whisper_draft_weights *w = calloc(1, sizeof *w);
    steno_status st = w ? build(f, type, w) : steno_fail(STENO_E_NOMEM, "draft: out of memory");
    if (st == STENO_OK) {
        w->key = f->dec;
        w->type = type;
        w->next = g_list;
        g_list = w;
        *out = w;
    } else {
        entry_free(w);
    }
    pthread_mutex_unlock(&g_mu);
    return st;
}

void whisper_draft_weights_release(const whisper_fast *f) {
    pthread_mutex_lock(&g_mu);
    for (whisper_draft_weights **pp = &g_list; *pp;) {
        whisper_draft_weights *w = *pp;
        if (w->key == f->dec) {
            *pp = w->next;
            entry_free(w);
        } else {
            pp = &w->next;
        }
    }
    pthread_mutex_unlock(&g_mu);
}
