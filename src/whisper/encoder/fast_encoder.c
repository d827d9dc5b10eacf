/* fast_encoder.c — the fast path's audio encoder (openai-whisper model.py AudioEncoder): the two
 * convolutions as GEMMs over im2col rows, then the residual attention blocks with the fused
 * attention, the linears on f's pool in fixed grids (fast_gemm.c, linear_f16.c, linear_quant.c). */
#include <math.h>
#include <string.h>

#include "kernels/gemm/gemm_amx_bf16x3.h"
#include "whisper/fast_internal.h"

/* An encoder linear, y [T][n_out] = x l + b: its quantized copy when the model keeps one, else its
 * float16 one (linear_f16.c), else float32. Then, elementwise: GELU on y when gelu, and
 * res += y when res is not NULL; the float16 and float32 GEMMs do both on each chunk or row block
 * right after its product, while it is in cache (the same operations as separate passes, so the
 * same bits). */
static void enc_linear(whisper_fast *f, const nn_linear *l, const float *x, int T, float *y, int gelu, float *res) {
    const int N = l->n_out;
    if (l->q.q) {
        fast_linear(f, DT_Q, &l->q, l->b, x, T, N, l->n_in, y);
        if (gelu) fast_gelu(f, y, (size_t)T * N);
        if (res) vec_add(res, y, (size_t)T * N);
        return;
    }
    if (l->w16) {
        fast_enc_linear16(f, l->w16, l->b, x, T, N, l->n_in, y, gelu, res);
        return;
    }
    fast_linear_f32_fused(f, l->w, l->b, x, T, N, l->n_in, y, gelu, res);
}

/* prepare_qkv: in qkv [T][3D], scales the queries in place, transposes the keys into kt [D][ldk]
 * (row h·dh + d is dimension d of head h) and copies the values into vp [H][T][dh], each head's
 * values contiguous: read in place (row stride 3·D floats, 6 KiB for base) the value rows of a
 * key block alias in L1 and the attention ran 1.6× slower (measured on one 1500-key head); the
 * copy costs one pass over T·D floats per layer, split over the pool by time steps. */
typedef struct qkv_job {
    float *qkv, *kt, *vp;
    int T, D, dh, ldk;
    float scale;
} qkv_job;

/* time steps [t·per, (t+1)·per) of prepare_qkv, per a multiple of 16 (whole 64-byte lines of kt) */
static void qkv_task(void *ctx, int task, int n) {
    const qkv_job *j = ctx;
    const int D = j->D, dh = j->dh, T = j->T, per = ((T + n - 1) / n + 15) & ~15;
    const int t1 = (task + 1) * per < T ? (task + 1) * per : T;
    for (int t = task * per; t < t1; t++) {
        float *r = j->qkv + (size_t)t * 3 * D;
        for (int i = 0; i < D; i++) r[i] *= j->scale;
        for (int i = 0; i < D; i++) j->kt[(size_t)i * j->ldk + t] = r[D + i];
        for (int h0 = 0; h0 < D; h0 += dh)
            memcpy(j->vp + (size_t)h0 * T + (size_t)t * dh, r + 2 * D + h0, sizeof(float) * dh);
    }
}

static void prepare_qkv(whisper_fast *f, float *qkv, int T, int D, int dh, float scale, float *kt, int ldk,
                        float *vp) {
    qkv_job j = {qkv, kt, vp, T, D, dh, ldk, scale};
    steno_pool_run(f->pool, qkv_task, &j, f->n_threads);
}

steno_status whisper_fast_encode(whisper_fast *f, const float *mel, float *xa) {
    if (f->enc_hook) return f->enc_hook(f->enc_hook_ctx, mel, xa); /* whisper_fast_set_encode_hook */
    const whisper_model *m = f->m;
    const int D = m->n_audio_state, C = m->n_mels, H = m->n_audio_head, dh = D / H;
    const int T2 = f->A, T1 = 2 * T2, W = 2 * m->n_audio_ctx; /* W: frames per mel row */
    float *col = f->big, *y1 = f->qkv, *h = f->h;

    for (int t = 0; t < T1; t++) {
        float *row = col + (size_t)t * C * 3;
        for (int c = 0; c < C; c++)
            for (int k = 0; k < 3; k++) {
                const int s = t + k - 1;
                row[c * 3 + k] = (s >= 0 && s < T1) ? mel[(size_t)c * W + s] : 0.0f;
            }
    }
    fast_linear(f, VEC_F32, m->conv1_w, m->conv1_b, col, T1, D, C * 3, y1);
    fast_gelu(f, y1, (size_t)T1 * D);
    for (int t = 0; t < T2; t++) {
        float *row = col + (size_t)t * D * 3;
        for (int k = 0; k < 3; k++) {
            const int s = 2 * t + k - 1;
            const float *src = (s >= 0 && s < T1) ? y1 + (size_t)s * D : NULL;
            for (int c = 0; c < D; c++) row[c * 3 + k] = src ? src[c] : 0.0f;
        }
    }
    if (f->conv2_w16 && gemm_amx_available()) {
        fast_enc_linear16(f, f->conv2_w16, m->conv2_b, col, T2, D, D * 3, xa, 1, NULL); /* with the GELU */
    } else {
        fast_linear(f, VEC_F32, m->conv2_w, m->conv2_b, col, T2, D, D * 3, xa);
        fast_gelu(f, xa, (size_t)T2 * D);
    }
    vec_add(xa, m->enc_pos, (size_t)T2 * D);

    const float scale = 1.0f / sqrtf((float)dh);
    for (int l = 0; l < m->n_audio_layer; l++) {
        const whisper_layer *L = &m->enc[l];
        fast_layernorm(f, &L->attn_ln, xa, T2, h);
        enc_linear(f, &L->attn_qkv, h, T2, f->qkv, 0, NULL);
        const int ldk = vec_attention_ldk(T2);
        prepare_qkv(f, f->qkv, T2, D, dh, scale, f->kt, ldk, f->big); /* f->big: free until fc1 */
        if (!fast_enc_attention_amx(f, f->qkv, T2, D, dh, H, f->kt, ldk, f->big, f->att)) {
            fast_attn_job aj = {f->qkv, 3 * D, f->kt, ldk, f->big, (size_t)T2 * dh, dh, T2, T2, dh, H, 0, 0, 0, f->att};
            fast_attention(f, &aj);
        }
        enc_linear(f, &L->attn_out, f->att, T2, h, 0, xa); /* and the residual: xa += h */

        fast_layernorm(f, &L->mlp_ln, xa, T2, h);
        enc_linear(f, &L->fc1, h, T2, f->big, 1, NULL);
        enc_linear(f, &L->fc2, f->big, T2, h, 0, xa);
    }
    fast_layernorm(f, &m->enc_ln_post, xa, T2, h);
    memcpy(xa, h, sizeof(float) * (size_t)T2 * D);
    return STENO_OK;
}
