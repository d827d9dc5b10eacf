/* draft_weights.c — the quant drafter's shared weights (draft_weights.h). */
#include "whisper/model/draft_weights.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static whisper_draft_weights *g_list; /* every built entry, under g_mu */

static void entry_free(whisper_draft_weights *w) {
    if (!w) return;
    free(w->qdec);
    free(w->mats);
    free(w->qdata);
    free(w);
}

/* Re-quantizes f's float16/float32 decoder matrices and embedding to type, CHUNK rows at a time
 * (the embedding's float copy alone would be n_vocab · D floats: 106 MB of first-touched pages for
 * base). A type with an x8 layout (q8_0, q4_0) keeps only that copy, as the Whisper loader does
 * (kernels/quant/wq.h): each chunk's ggml rows go through tmpq into their 8-row groups, which are laid
 * out group after group, so packing a chunk of a multiple of 8 rows at its groups' offset writes
 * the bytes packing the whole matrix would. Other types keep their ggml rows. */
static steno_status build(const whisper_fast *f, int type, whisper_draft_weights *w) {
    const whisper_model *m = f->m;
    const int D = m->n_text_state, L = m->n_text_layer, V = m->n_vocab;
    const int shape[6][2] = {{3 * D, D}, {D, D}, {D, D}, {D, D}, {4 * D, D}, {D, 4 * D}};
    if (L < 1 || D < 1 || V < 1) return steno_fail(STENO_E_INVALID_ARG, "draft: empty decoder");
    if (f->dt != VEC_F16 && f->dt != VEC_F32)
        return steno_fail(STENO_E_INVALID_ARG, "draft: the quantized drafter needs float16 or float32 weights");
    if (wq_group(type) == 0 || D % wq_group(type) != 0)
        return steno_fail(STENO_E_INVALID_ARG, "draft: cannot quantize width %d to %s", D, wq_name(type));
    const int mlx = type >= WQ_MLX_Q4_G32 && type <= WQ_MLX_Q8_G64;
    const steno_mat probe = {type, D, 8, steno_row_size(type, D), "", NULL}; /* only the type and width are read */
    const int x8 = !mlx && steno_xmat_supported(&probe);
    enum { CHUNK = 4096 }; /* rows; a multiple of 8 */
    size_t total = 0, max_chunk = 0;
    for (int k = 0; k < 7; k++) {
        const int no = k < 6 ? shape[k][0] : V, ni = k < 6 ? shape[k][1] : D;
        const steno_mat sm = {type, ni, no, steno_row_size(type, ni), "", NULL};
        const size_t b = ((x8 ? steno_xmat_bytes(&sm) : wq_bytes(type, no, ni)) + 63) & ~(size_t)63;
        total += k < 6 ? (size_t)L * b : b;
        const size_t rows = mlx ? (size_t)no : (size_t)(CHUNK < no ? CHUNK : no);
        if (rows * (size_t)ni > max_chunk) max_chunk = rows * (size_t)ni;
    }
    w->bytes = total;
    w->qdata = aligned_alloc(64, total);
    w->mats = calloc((size_t)6 * L + 1, sizeof *w->mats);
    w->qdec = calloc((size_t)L, sizeof *w->qdec);
    float *tmp = malloc(sizeof(float) * max_chunk);
    unsigned char *tmpq = x8 ? aligned_alloc(64, (wq_bytes(type, 1, (int)max_chunk) + 63) & ~(size_t)63) : NULL;
    if (!w->qdata || !w->mats || !w->qdec || !tmp || (x8 && !tmpq)) {
        free(tmp);
        free(tmpq);
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
            const steno_mat whole = {type, ni, no, steno_row_size(type, ni), "", NULL};
            const size_t xbytes = x8 ? steno_xmat_bytes(&whole) : 0, ng = (size_t)(no + 7) / 8;
            int step = mlx ? no : (int)(max_chunk / (size_t)ni < CHUNK ? max_chunk / (size_t)ni : CHUNK);
            if (x8) step &= ~7; /* whole 8-row groups per chunk (max_chunk holds at least 8 rows of any width) */
            for (int r0 = 0; r0 < no; r0 += step) {
                const int nr = no - r0 < step ? no - r0 : step;
                const size_t cnt = (size_t)nr * ni, at = (size_t)r0 * ni;
                if (f->dt == VEC_F16) vec_f16_to_f32((const uint16_t *)src[k] + at, tmp, cnt);
                else memcpy(tmp, (const float *)src[k] + at, sizeof(float) * cnt);
                wq_mat part;
                wq_quantize(type, tmp, nr, ni, x8 ? tmpq : p + (mlx ? 0 : (size_t)r0 * steno_row_size(type, ni)), &part);
                if (x8) {
                    const steno_mat rows = {type, ni, nr, part.q_row, part.q, NULL};
                    steno_xmat xpart;
                    steno_xmat_pack_into(&rows, &xpart, p + (size_t)(r0 / 8) * (xbytes / ng));
                }
                if (r0 == 0) *mat = part;
            }
            mat->n_out = no;
            if (x8) { /* only the x8 copy: q = x.data, q_row = 0 (kernels/quant/wq.h) */
                mat->x = (steno_xmat){type, ni, no, (int64_t)ng, xbytes / (ng * (size_t)(ni / 32)), p, 0};
                mat->q = p;
                mat->q_row = 0;
            }
            p += ((x8 ? xbytes : wq_bytes(type, no, ni)) + 63) & ~(size_t)63;
        }
        if (l < L) {
            const wq_mat *q = &w->mats[(size_t)6 * l];
            w->qdec[l] = (fast_layer){&q[0], &q[1], &q[2], &q[3], &q[4], &q[5]};
        }
    }
    free(tmp);
    free(tmpq);
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
