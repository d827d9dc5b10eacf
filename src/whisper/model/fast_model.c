/* fast_model.c — the fast path's state: its copies of the model's weights in the decoder's
 * dtype (float16, float32 or the model's quantized matrices), the cross-attention projections of
 * every layer stacked, the per-state scratch, and states that share one set of weights
 * (whisper_fast_share). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigmem.h"
#include "core/error.h"
#include "core/fp16.h"
#include "kernels/attention/attention_amx.h"
#include "kernels/gemm/gemm_amx_bf16x3.h"
#include "kernels/gemm/matmul_x8.h"
#include "kernels/quant/wq.h"
#include "whisper/model/draft_weights.h"
#include "whisper/fast_internal.h"

/* The per-state buffers: the prefill GEMMs' f16 → f32 scratch and the encoder's activations,
 * sized for audio_ctx. Returns 0, or -1 when an allocation failed (the caller frees f). */
static int alloc_scratch(whisper_fast *f) {
    const whisper_model *m = f->m;
    const size_t D = (size_t)m->n_text_state, L = (size_t)m->n_text_layer, A = (size_t)f->A;
    const size_t Da = (size_t)m->n_audio_state;
    f->conv_scratch = malloc(sizeof(float) * (size_t)f->n_threads * FAST_COL_CHUNK * 4 * D);
    if (m->enc[0].fc1.w16) { /* the loader kept the encoder in float16 (linear_f16.c) */
        /* 64-byte aligned: the AMX path packs weight tiles here (misaligned tile loads cost 7-13 %) */
        f->enc_scratch = aligned_alloc(64, sizeof(float) * (size_t)f->n_threads * ENC_COL_CHUNK * 4 * Da);
        if (!f->enc_scratch) return -1;
        if (gemm_amx_available() && Da % 32 == 0) {
            const size_t halves = (size_t)gemm_amx_rows((int)A) * 4 * Da;
            f->amx_xh = aligned_alloc(64, sizeof(uint16_t) * halves);
            f->amx_xl = aligned_alloc(64, sizeof(uint16_t) * halves);
            if (!f->amx_xh || !f->amx_xl) return -1;
            const int dh = (int)Da / m->n_audio_head;
            if (dh % 32 == 0) {
                f->amx_kv = aligned_alloc(64, sizeof(uint16_t) * 4 * (size_t)m->n_audio_head *
                                                  att_amx_head_halves((int)A, dh));
                f->amx_att_scratch_bytes = (att_amx_scratch_bytes((int)A) + 63) & ~(size_t)63;
                f->amx_att_scratch = aligned_alloc(64, f->amx_att_scratch_bytes * (size_t)f->n_threads);
                if (!f->amx_kv || !f->amx_att_scratch) return -1;
            }
        }
    }
    const size_t T1 = 2 * A;
    size_t big = A * 4 * Da;
    if (T1 * m->n_mels * 3 > big) big = T1 * m->n_mels * 3;
    if (A * Da * 3 > big) big = A * Da * 3;
    if (A * L * D > big) big = A * L * D;
    f->big_floats = big;
    /* the encoder's activations in huge pages, zeroed (first touched) on two threads (core/bigmem.h) */
    f->big = steno_bigmem_alloc(sizeof(float) * big);
    f->h = steno_bigmem_alloc(sizeof(float) * A * Da);
    f->qkv = steno_bigmem_alloc(sizeof(float) * (A * 3 * Da > T1 * Da ? A * 3 * Da : T1 * Da)); /* also conv1's output */
    f->kt = steno_bigmem_alloc(sizeof(float) * (size_t)vec_attention_ldk((int)A) * Da);
    f->att = steno_bigmem_alloc(sizeof(float) * A * Da);
    if (m->wq_type) {
        const size_t bytes = (size_t)m->n_text_ctx * wq_act_bytes(m->wq_type, 4 * (int)D);
        f->qact = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        if (!f->qact) return -1;
        /* the encoder's widest product (fc2: A rows of 4·Da) sizes the x8 scratch once */
        const size_t rows = A > (size_t)m->n_text_ctx ? A : (size_t)m->n_text_ctx;
        const size_t K = 4 * (Da > D ? Da : D);
        if (m->tok_emb_q.x.data && !steno_work_get(&f->xwork, steno_matmul_x_work_bytes(m->wq_type, (int64_t)K, (int)rows)))
            return -1;
    }
    return f->conv_scratch && f->big && f->h && f->qkv && f->kt && f->att ? 0 : -1;
}

steno_status whisper_fast_create(const whisper_model *m, vec_dtype dt, int audio_ctx, steno_pool *pool,
                                 whisper_fast **out) {
    *out = NULL;
    vec_init();
    if (audio_ctx <= 0) audio_ctx = m->n_audio_ctx;
    if (audio_ctx > m->n_audio_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "audio_ctx %d: must be 1..%d", audio_ctx, m->n_audio_ctx);
    whisper_fast *f = calloc(1, sizeof *f);
    if (!f) return steno_fail(STENO_E_NOMEM, "out of memory");
    f->m = m;
    f->dt = dt;
    f->A = audio_ctx;
    f->pool = pool;
    f->n_threads = steno_pool_threads(pool);
    const int D = m->n_text_state, L = m->n_text_layer, V = m->n_vocab;
    f->dec = calloc((size_t)L, sizeof *f->dec);
    f->cross_k_w = malloc(sizeof(float) * (size_t)L * D * D);
    f->cross_v_w = malloc(sizeof(float) * (size_t)L * D * D);
    f->cross_k_b = malloc(sizeof(float) * (size_t)L * D);
    f->cross_v_b = malloc(sizeof(float) * (size_t)L * D);
    if (!f->dec || !f->cross_k_w || !f->cross_v_w || !f->cross_k_b || !f->cross_v_b || alloc_scratch(f) != 0)
        goto nomem;
    if (f->amx_xh) { /* the second convolution joins the AMX linears when its weights are halves (float16 models) */
        const size_t n = (size_t)m->n_audio_state * 3 * m->n_audio_state;
        f->conv2_w16 = malloc(sizeof(uint16_t) * n);
        if (!f->conv2_w16) goto nomem;
        vec_f32_to_f16(m->conv2_w, f->conv2_w16, n);
        for (size_t i = 0; i < n; i++)
            if (steno_fp16_to_f32(f->conv2_w16[i]) != m->conv2_w[i] && !isnan(m->conv2_w[i])) {
                free(f->conv2_w16); /* a float32 model: keep sgemm, whose bits are exact for it */
                f->conv2_w16 = NULL;
                break;
            }
    }
    for (int l = 0; l < L; l++) {
        const nn_linear *kv = &m->dec[l].cross_kv;
        memcpy(f->cross_k_w + (size_t)l * D * D, kv->w, sizeof(float) * (size_t)D * D);
        memcpy(f->cross_v_w + (size_t)l * D * D, kv->w + (size_t)D * D, sizeof(float) * (size_t)D * D);
        for (int i = 0; i < D; i++) {
            f->cross_k_b[(size_t)l * D + i] = kv->b ? kv->b[i] : 0.0f;
            f->cross_v_b[(size_t)l * D + i] = kv->b ? kv->b[D + i] : 0.0f;
        }
    }
    if (m->wq_type) { /* quantized at load time (whisper_model_load_q) or read quantized */
        f->dt = DT_Q;
        for (int l = 0; l < L; l++) {
            const whisper_layer *y = &m->dec[l];
            f->dec[l] = (fast_layer){&y->attn_qkv.q, &y->attn_out.q, &y->cross_q.q, &y->cross_out.q, &y->fc1.q, &y->fc2.q};
        }
        f->emb = &m->tok_emb_q;
    } else if (dt == VEC_F32) {
        if (m->decoder_f16) {
            whisper_fast_free(f);
            return steno_fail(STENO_E_INVALID_ARG, "fast path: float32 weights need a float32 model");
        }
        for (int l = 0; l < L; l++) {
            const whisper_layer *y = &m->dec[l];
            f->dec[l] = (fast_layer){y->attn_qkv.w, y->attn_out.w, y->cross_q.w, y->cross_out.w, y->fc1.w, y->fc2.w};
        }
        f->emb = m->tok_emb;
    } else if (m->decoder_f16) { /* the loader already keeps the decoder in float16 */
        for (int l = 0; l < L; l++) {
            const whisper_layer *y = &m->dec[l];
            f->dec[l] = (fast_layer){y->attn_qkv.w16, y->attn_out.w16, y->cross_q.w16, y->cross_out.w16, y->fc1.w16,
                                     y->fc2.w16};
        }
        f->emb = m->tok_emb16;
    } else {
        const size_t per_layer = (size_t)D * D * (3 + 1 + 1 + 1 + 4 + 4);
        f->f16 = steno_bigmem_alloc(sizeof(uint16_t) * (per_layer * L + (size_t)V * D)); /* streamed per token */
        if (!f->f16) goto nomem;
        uint16_t *p = f->f16;
#define TO_F16(dst, src, count)                      \
    do {                                             \
        vec_f32_to_f16((src), p, (size_t)(count));   \
        (dst) = p;                                   \
        p += (size_t)(count);                        \
    } while (0)
        for (int l = 0; l < L; l++) {
            const whisper_layer *y = &m->dec[l];
            TO_F16(f->dec[l].qkv, y->attn_qkv.w, 3 * D * D);
            TO_F16(f->dec[l].out, y->attn_out.w, D * D);
            TO_F16(f->dec[l].cross_q, y->cross_q.w, D * D);
            TO_F16(f->dec[l].cross_out, y->cross_out.w, D * D);
            TO_F16(f->dec[l].fc1, y->fc1.w, 4 * D * D);
            TO_F16(f->dec[l].fc2, y->fc2.w, 4 * D * D);
        }
        TO_F16(f->emb, m->tok_emb, (size_t)V * D);
#undef TO_F16
    }
    if (f->dt == VEC_F16 && !(f->panels = fast_panels_new())) goto nomem;
    if (f->dt == VEC_F16 && D % VEC_SCREEN_BLOCK == 0) {
        f->emb_q = steno_bigmem_alloc((size_t)V * D);
        f->emb_s = malloc(sizeof(float) * V);
        f->emb_g = malloc(sizeof(float) * V);
        f->emb_c = malloc(sizeof(float) * V);
        if (!f->emb_q || !f->emb_s || !f->emb_g || !f->emb_c) goto nomem;
        fast_logit_screen_build(f);
    }
    *out = f;
    return STENO_OK;
nomem:
    whisper_fast_free(f);
    return steno_fail(STENO_E_NOMEM, "fast path: out of memory");
}

steno_status whisper_fast_share(const whisper_fast *src, steno_pool *pool, whisper_fast **out) {
    *out = NULL;
    whisper_fast *f = malloc(sizeof *f);
    if (!f) return steno_fail(STENO_E_NOMEM, "out of memory");
    *f = *src; /* the weight pointers; every buffer below is replaced by this state's own */
    f->shared = 1;
    f->pool = pool;
    f->n_threads = steno_pool_threads(pool);
    f->conv_scratch = f->enc_scratch = f->big = f->h = f->qkv = f->kt = f->att = NULL;
    f->amx_xh = f->amx_xl = f->amx_kv = NULL;
    f->amx_att_scratch = NULL;
    f->qact = NULL;
    f->xwork = (steno_work){0};
    f->def_hook = NULL;
    f->def_hook_ctx = NULL;
    f->enc_hook = NULL;
    f->enc_hook_ctx = NULL;
    if (alloc_scratch(f) != 0) {
        whisper_fast_free(f);
        return steno_fail(STENO_E_NOMEM, "fast path: out of memory");
    }
    *out = f;
    return STENO_OK;
}

void whisper_fast_free(whisper_fast *f) {
    if (!f) return;
    if (!f->shared) {
        whisper_draft_weights_release(f); /* the quant drafters' copies of these weights */
        free(f->dec);
        free(f->cross_k_w);
        free(f->cross_v_w);
        free(f->cross_k_b);
        free(f->cross_v_b);
        free(f->conv2_w16);
        steno_bigmem_free(f->f16);
        steno_bigmem_free(f->emb_q);
        free(f->emb_s);
        free(f->emb_g);
        free(f->emb_c);
        fast_panels_free(f->panels);
    }
    free(f->conv_scratch);
    free(f->enc_scratch);
    free(f->amx_xh);
    free(f->amx_xl);
    free(f->amx_kv);
    free(f->amx_att_scratch);
    steno_bigmem_free(f->big);
    steno_bigmem_free(f->h);
    steno_bigmem_free(f->qkv);
    steno_bigmem_free(f->kt);
    steno_bigmem_free(f->att);
    free(f->qact);
    steno_work_free(&f->xwork);
    free(f);
}

int whisper_fast_audio_ctx(const whisper_fast *f) { return f->A; }

int whisper_fast_threads(const whisper_fast *f) { return f->n_threads; }
