#include "whisper/fast.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bigmem.h"
#include "core/error.h"
#include "core/fp16.h"
#include "kernels/attention/attention_amx.h"
#include "kernels/gemm/gemm_amx_bf16x3.h"
#include "whisper/decoder/spec/draft_weights.h"
#include "whisper/fast_internal.h"
#include "whisper/nn/linear_quant.h"
#include "whisper/decoder/kv_rows.h"

#define COL_CHUNK 64  /* the f16 GEMM's fixed column grid */
#define ROW_BLOCK 192 /* the f32 GEMM's fixed row grid (gemm_task) */
_Static_assert(COL_CHUNK == FASTQ_COL_CHUNK, "linear_quant.c shares conv_scratch's tiles");

/* ---------------------------------------------------------------- parallel GEMM / GEMV */

typedef struct gemm_job {
    whisper_fast *f;
    vec_dtype dt;
    const void *W; /* [N][K] */
    const float *b;
    const float *x; /* [T][K] */
    float *y;       /* [T][ldy] */
    int T, N, K, ldy;
    /* f32 only, on each row block while it is in cache: GELU on y, then res += y (res [T][N]) */
    int gelu;
    float *res;
} gemm_job;

/* y[r0..r1) = x[r0..r1) Wᵀ + b: one single-threaded sgemm, the bias preloaded (beta = 1) */
static void gemm_rows_f32(const gemm_job *j, int r0, int r1) {
    float *y = j->y + (size_t)r0 * j->ldy;
    for (int r = r0; r < r1; r++, y += j->ldy) {
        if (j->b) memcpy(y, j->b, sizeof(float) * j->N);
        else memset(y, 0, sizeof(float) * j->N);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r1 - r0, j->N, j->K, 1.0f, j->x + (size_t)r0 * j->K, j->K,
                (const float *)j->W, j->K, 1.0f, j->y + (size_t)r0 * j->ldy, j->ldy);
}

/* f32 weights: the rows (time steps) are cut into a fixed grid of ROW_BLOCK rows, and task t of n
 * computes blocks t, t+n, … with one single-threaded sgemm each (full N: the weights are packed
 * once per block, the block's rows once). A block's result depends only on the block, not on
 * which thread ran it, so the output is identical for any thread count (checked bit for bit by
 * test_fast_alloc and the thread test). OpenBLAS's summation order may depend on M: its SkylakeX
 * sgemm gives a row the same bits in any call of 8 rows or more, but its Haswell and Prescott
 * kernels do not (bench/gemm_rows.c), hence the fixed grid. 192 rows: 1500 time steps are 8 blocks,
 * even work for 1, 2, 4 or 8 threads, and larger calls than the 128-row grid before (one core of
 * the Emerald Rapids VM ran the encoder's products at 127 GFLOP/s in 128-row calls, 142 in 256).
 * f16 weights (decoder prefill): task t takes the column chunks t, t+n, … of a fixed grid, each
 * converted to f32 in a per-task scratch first. */
static void gemm_task(void *ctx, int t, int n) {
    gemm_job *j = ctx;
    if (j->dt == VEC_F32) {
        for (int r0 = t * ROW_BLOCK; r0 < j->T; r0 += n * ROW_BLOCK) {
            const int r1 = r0 + ROW_BLOCK < j->T ? r0 + ROW_BLOCK : j->T;
            gemm_rows_f32(j, r0, r1);
            const size_t off = (size_t)r0 * j->N, count = (size_t)(r1 - r0) * j->N; /* ldy == N here */
            if (j->gelu) vec_gelu(j->y + off, count);
            if (j->res) vec_add(j->res + off, j->y + off, count);
        }
        return;
    }
    const int n_chunks = (j->N + COL_CHUNK - 1) / COL_CHUNK;
    float *scratch = j->f->conv_scratch + (size_t)t * COL_CHUNK * 4 * j->f->m->n_text_state;
    for (int c = t; c < n_chunks; c += n) {
        const int c0 = c * COL_CHUNK, cn = j->N - c0 < COL_CHUNK ? j->N - c0 : COL_CHUNK;
        fast_gemm_f16_cols(j->W, j->b, j->x, j->T, j->K, c0, cn, scratch, j->y, j->ldy);
    }
}

typedef struct gemv_job {
    vec_dtype dt;
    const void *W;
    const float *b, *x;
    float *y;
    int N, K;
    int nx; /* inputs x [nx][K] → y [nx][N]; 1 for the single-row step */
    float *const *yrows; /* or input i → yrows[i][N] (nx > 1) */
    const uint16_t *P;   /* the float16 panel of W (fast_panel) or NULL */
} gemv_job;

/* Each output element is one vec_gemv dot product whatever the split, so the result of row r for
 * input i does not depend on the thread count nor on nx. */
static void gemv_task(void *ctx, int t, int n) {
    gemv_job *j = ctx;
    const int per = j->P ? ((j->N + n - 1) / n + 31) & ~31 : ((j->N + n - 1) / n + 7) & ~7; /* panel: whole blocks */
    const int r0 = t * per, r1 = r0 + per < j->N ? r0 + per : j->N;
    if (r0 >= r1) return;
    if (j->P) {
        float *yp[64];
        for (int i0 = 0; i0 < j->nx; i0 += 64) {
            const int in = j->nx - i0 < 64 ? j->nx - i0 : 64;
            for (int i = 0; i < in; i++) yp[i] = j->yrows ? j->yrows[i0 + i] : j->y + (size_t)(i0 + i) * j->N;
            vec_gemv_f16_panel_to(j->W, j->P, j->b, j->x + (size_t)i0 * j->K, j->K, in, j->K, r0, r1, yp);
        }
    } else if (j->yrows) vec_gemv_rows_to(j->dt, j->W, j->b, j->x, j->K, j->nx, j->K, r0, r1, j->yrows);
    else if (j->nx == 1) vec_gemv(j->dt, j->W, j->b, j->x, j->K, r0, r1, j->y);
    else vec_gemv_rows(j->dt, j->W, j->b, j->x, j->K, j->nx, j->K, r0, r1, j->y, j->N);
}

/* y[T][N] = x[T][K] Wᵀ + b with W [N][K] of dtype dt. */
static void linear(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int T, int N,
                   int K, float *y) {
    if (dt == DT_Q) {
        fastq_linear(f->pool, f->n_threads, W, b, x, T, T > 1, y, f->qact, f->conv_scratch,
                     (size_t)COL_CHUNK * 4 * f->m->n_text_state, &f->xwork);
        return;
    }
    if (T == 1) {
        gemv_job j = {dt, W, b, x, y, N, K, 1, NULL, NULL};
        steno_pool_run(f->pool, gemv_task, &j, N >= 256 ? f->n_threads : 1);
        return;
    }
    gemm_job j = {f, dt, W, b, x, y, T, N, K, N, 0, NULL};
    const int n_chunks = dt == VEC_F32 ? (T + ROW_BLOCK - 1) / ROW_BLOCK : (N + COL_CHUNK - 1) / COL_CHUNK;
    steno_pool_run(f->pool, gemm_task, &j, n_chunks < f->n_threads ? n_chunks : f->n_threads);
}

void fast_linear(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int T, int N, int K,
                 float *y) {
    linear(f, dt, W, b, x, T, N, K, y);
}

/* y[B][N] = x[B][K] Wᵀ + b for B independent rows (one token each): one pass over W for all rows,
 * every row bit-identical to linear() with T = 1. */
void fast_linear_rows_act(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int B, int N,
                          int K, float *y, void *act) {
    if (dt == DT_Q) {
        fastq_linear(f->pool, f->n_threads, W, b, x, B, 0, y, act, NULL, 0, &f->xwork);
        return;
    }
    gemv_job j = {dt, W, b, x, y, N, K, B, NULL, dt == VEC_F16 ? fast_panel(f, W, B) : NULL};
    steno_pool_run(f->pool, gemv_task, &j, N >= 256 ? f->n_threads : 1);
}

int fast_linear_rows_to(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int B, int N,
                        int K, float *const *yrows) {
    if (dt == DT_Q) return 0;
    gemv_job j = {dt, W, b, x, NULL, N, K, B, yrows, dt == VEC_F16 ? fast_panel(f, W, B) : NULL};
    steno_pool_run(f->pool, gemv_task, &j, N >= 256 ? f->n_threads : 1);
    return 1;
}

void fast_linear_rows(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int B, int N,
                      int K, float *y) {
    fast_linear_rows_act(f, dt, W, b, x, B, N, K, y, f->qact);
}

/* ---------------------------------------------------------------- row-parallel helpers */

typedef struct rows_job {
    const float *x, *gamma, *beta;
    float *y;
    int T, n;
    size_t total;
} rows_job;

static void ln_task(void *ctx, int t, int n) {
    rows_job *j = ctx;
    const int per = (j->T + n - 1) / n, r0 = t * per, r1 = r0 + per < j->T ? r0 + per : j->T;
    for (int r = r0; r < r1; r++) vec_layernorm(j->x + (size_t)r * j->n, j->gamma, j->beta, j->n, j->y + (size_t)r * j->n);
}

void fast_layernorm(whisper_fast *f, const nn_layernorm *ln, const float *x, int T, float *y) {
    rows_job j = {x, ln->gamma, ln->beta, y, T, ln->n, 0};
    steno_pool_run(f->pool, ln_task, &j, T >= 16 ? f->n_threads : 1);
}

static void gelu_task(void *ctx, int t, int n) {
    rows_job *j = ctx;
    const size_t per = ((j->total + n - 1) / n + 7) & ~(size_t)7, a = (size_t)t * per;
    if (a < j->total) vec_gelu(j->y + a, (a + per < j->total ? per : j->total - a));
}

void fast_gelu(whisper_fast *f, float *x, size_t total) {
    rows_job j = {0};
    j.y = x;
    j.total = total;
    steno_pool_run(f->pool, gelu_task, &j, total >= 4096 ? f->n_threads : 1);
}

/* ---------------------------------------------------------------- attention */

typedef struct attn_job {
    const float *q; /* [T][q_stride], scaled */
    int q_stride;
    const float *Kt;  /* [H][dh][ldk]: keys transposed */
    int ldk;
    const float *V;   /* head h at V + h·v_head_stride, rows ldv apart */
    size_t v_head_stride;
    int ldv;
    int nk, nq, dh, H, causal, q_pos0, q_blocks;
    float *out; /* [T][D] */
} attn_job;

static void attn_task(void *ctx, int t, int n) {
    attn_job *j = ctx;
    (void)n;
    const int h = t % j->H, qb = t / j->H;
    const int per = (j->nq + j->q_blocks - 1) / j->q_blocks, i0 = qb * per;
    const int i1 = i0 + per < j->nq ? i0 + per : j->nq;
    if (i0 >= i1) return;
    vec_attention(j->q + (size_t)i0 * j->q_stride + h * j->dh, j->q_stride,
                  j->Kt + (size_t)h * j->dh * j->ldk, j->ldk, j->V + h * j->v_head_stride, j->ldv, j->nk, j->dh, i1 - i0,
                  j->causal, j->q_pos0 + i0, j->out + (size_t)i0 * j->H * j->dh + h * j->dh, j->H * j->dh);
}

static void attention(whisper_fast *f, attn_job *j) {
    j->q_blocks = j->nq >= 64 ? 4 * f->n_threads : 1;
    steno_pool_run(f->pool, attn_task, j, j->H * j->q_blocks);
}

/* Cross-attention of the decoder step over float16 keys and values (vec_attention_f16), one task
 * per head, all nq queries in it. */
typedef struct attn16_job {
    const float *q; /* [nq][D], scaled */
    const uint16_t *Kb, *V; /* one layer: [H][nk16/16][dh][16] (vec_pack_keys_f16), [H][nk][dh] lane order */
    int nk16, nk, nq, dh, H;
    float *out; /* [nq][D] */
} attn16_job;

static void attn16_task(void *ctx, int t, int n) {
    (void)n;
    const attn16_job *j = ctx;
    const int D = j->H * j->dh;
    vec_attention_f16(j->q + t * j->dh, D, j->Kb + (size_t)t * j->dh * j->nk16, j->V + (size_t)t * j->nk * j->dh,
                      j->dh, j->nk, j->dh, j->nq, j->out + t * j->dh, D);
}

/* ---------------------------------------------------------------- logit screen */

/* The int8 copy of the tied embedding (kernels/gemv/vec.h vec_screen_rows), from the float16 values
 * the exact GEMV reads; one task per contiguous slice of rows. */
static void screen_build_task(void *ctx, int t, int n) {
    whisper_fast *f = ctx;
    const int V = f->m->n_vocab, D = f->m->n_text_state;
    const int per = (V + n - 1) / n, r0 = t * per, r1 = r0 + per < V ? r0 + per : V;
    for (int r = r0; r < r1; r++)
        vec_screen_build_row((const uint16_t *)f->emb + (size_t)r * D, D, f->emb_q + (size_t)r * D, &f->emb_s[r],
                             &f->emb_g[r], &f->emb_c[r]);
}

/* ---------------------------------------------------------------- creation */

/* The per-state buffers: the prefill GEMMs' f16 → f32 scratch and the encoder's activations,
 * sized for audio_ctx. Returns 0, or -1 when an allocation failed (the caller frees f). */
static int alloc_scratch(whisper_fast *f) {
    const whisper_model *m = f->m;
    const size_t D = (size_t)m->n_text_state, L = (size_t)m->n_text_layer, A = (size_t)f->A;
    const size_t Da = (size_t)m->n_audio_state;
    f->conv_scratch = malloc(sizeof(float) * (size_t)f->n_threads * COL_CHUNK * 4 * D);
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
        steno_pool_run(pool, screen_build_task, f, f->n_threads);
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

/* ---------------------------------------------------------------- encoder */

/* An encoder linear, y [T][n_out] = x l + b: its quantized copy when the model keeps one, else its
 * float16 one (linear_f16.c), else float32. Then, elementwise: GELU on y when gelu, and
 * res += y when res is not NULL; the float16 and float32 GEMMs do both on each chunk or row block
 * right after its product, while it is in cache (the same operations as separate passes, so the
 * same bits). */
static void enc_linear(whisper_fast *f, const nn_linear *l, const float *x, int T, float *y, int gelu, float *res) {
    const int N = l->n_out;
    if (l->q.q) {
        linear(f, DT_Q, &l->q, l->b, x, T, N, l->n_in, y);
        if (gelu) fast_gelu(f, y, (size_t)T * N);
        if (res) vec_add(res, y, (size_t)T * N);
        return;
    }
    if (l->w16) {
        fast_enc_linear16(f, l->w16, l->b, x, T, N, l->n_in, y, gelu, res);
        return;
    }
    gemm_job j = {f, VEC_F32, l->w, l->b, x, y, T, N, l->n_in, N, gelu, res};
    const int n_blocks = (T + ROW_BLOCK - 1) / ROW_BLOCK;
    steno_pool_run(f->pool, gemm_task, &j, n_blocks < f->n_threads ? n_blocks : f->n_threads);
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
    linear(f, VEC_F32, m->conv1_w, m->conv1_b, col, T1, D, C * 3, y1);
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
        linear(f, VEC_F32, m->conv2_w, m->conv2_b, col, T2, D, D * 3, xa);
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
            attn_job aj = {f->qkv, 3 * D, f->kt, ldk, f->big, (size_t)T2 * dh, dh, T2, T2, dh, H, 0, 0, 0, f->att};
            attention(f, &aj);
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

/* ---------------------------------------------------------------- decoder */

steno_status whisper_fast_decoder_create(whisper_fast *f, whisper_fast_decoder **out) {
    return whisper_fast_decoder_create_rows(f, 1, out);
}

steno_status whisper_fast_decoder_create_rows(whisper_fast *f, int rows, whisper_fast_decoder **out) {
    *out = NULL;
    if (rows < 1 || rows > f->m->n_text_ctx)
        return steno_fail(STENO_E_INVALID_ARG, "fast decoder: %d rows (must be 1..%d)", rows, f->m->n_text_ctx);
    const whisper_model *m = f->m;
    const size_t D = (size_t)m->n_text_state, N = (size_t)m->n_text_ctx, L = (size_t)m->n_text_layer;
    const size_t A = (size_t)f->A;
    whisper_fast_decoder *d = calloc(1, sizeof *d);
    if (!d) return steno_fail(STENO_E_NOMEM, "out of memory");
    d->f = f;
    d->step_hook = f->def_hook; /* whisper_fast_set_step_hook (cross-request batching, step_batcher.h) */
    d->step_hook_ctx = f->def_hook_ctx;
    d->ldk_self = vec_attention_ldk((int)N);
    d->ldk_cross = vec_attention_ldk((int)A);
    d->k_slot = L * (size_t)d->ldk_self * D;
    d->v_slot = L * N * D;
    steno_status st = whisper_kv_rows_init(&d->kv, rows);
    if (st != STENO_OK) {
        free(d);
        return st;
    }
    d->self_k = calloc(d->k_slot * (size_t)rows, sizeof(float));
    d->self_v = malloc(sizeof(float) * d->v_slot * (size_t)rows);
    d->cross_k = calloc(L * (size_t)d->ldk_cross * D, sizeof(float));
    d->cross_v = malloc(sizeof(float) * L * A * D);
    const int dh = (int)D / m->n_text_head;
    if (f->dt != VEC_F32 && dh % 16 == 0 && A <= VEC_ATTENTION_F16_MAX_KEYS) {
        d->cross_k16 = malloc(sizeof(uint16_t) * L * (size_t)d->ldk_cross * D);
        d->cross_v16 = malloc(sizeof(uint16_t) * L * A * D);
        if (!d->cross_k16 || !d->cross_v16) {
            whisper_fast_decoder_free(d);
            return steno_fail(STENO_E_NOMEM, "fast decoder: out of memory");
        }
    }
    d->x = malloc(sizeof(float) * N * D);
    d->h = malloc(sizeof(float) * N * D);
    d->qkv = malloc(sizeof(float) * N * 3 * D);
    d->q = malloc(sizeof(float) * N * D);
    d->att = malloc(sizeof(float) * N * D);
    d->mlp = malloc(sizeof(float) * N * 4 * D);
    if (f->emb_q) {
        d->sq = malloc((size_t)FAST_SCREEN_MAX * D);
        d->sa = malloc((size_t)FAST_SCREEN_MAX * D);
        d->sb = malloc(sizeof(float) * FAST_SCREEN_MAX * (D / VEC_SCREEN_BLOCK));
        d->hi = malloc(sizeof(float) * FAST_SCREEN_MAX * m->n_vocab);
        d->need = malloc(sizeof(uint16_t) * m->n_vocab);
        d->rows = malloc(sizeof(int) * m->n_vocab);
        if (!d->sq || !d->sa || !d->sb || !d->hi || !d->need || !d->rows) {
            whisper_fast_decoder_free(d);
            return steno_fail(STENO_E_NOMEM, "fast decoder: out of memory");
        }
    }
    if (!d->self_k || !d->self_v || !d->cross_k || !d->cross_v || !d->x || !d->h || !d->qkv || !d->q || !d->att ||
        !d->mlp) {
        whisper_fast_decoder_free(d);
        return steno_fail(STENO_E_NOMEM, "fast decoder: out of memory");
    }
    *out = d;
    return STENO_OK;
}

void whisper_fast_decoder_free(whisper_fast_decoder *d) {
    if (!d) return;
    whisper_kv_rows_free(&d->kv);
    free(d->self_k);
    free(d->self_v);
    free(d->cross_k);
    free(d->cross_v);
    free(d->cross_k16);
    free(d->cross_v16);
    free(d->x);
    free(d->h);
    free(d->qkv);
    free(d->q);
    free(d->att);
    free(d->mlp);
    free(d->sq);
    free(d->sa);
    free(d->sb);
    free(d->hi);
    free(d->rows);
    free(d->need);
    free(d);
}

/* The cross-attention projection of all layers, tmp [A][L·D], split into heads, one pool task per
 * (layer, head) i: keys transposed into cross_k [i·dh + d][ldk] and packed as halves
 * (vec_pack_keys_f16), or values into cross_v [i][A][dh] and their halves in lane order. */
typedef struct scatter_job {
    whisper_fast_decoder *d;
    const float *tmp;
    int A, LD, dh, keys;
} scatter_job;

static void scatter_task(void *ctx, int i, int n) {
    (void)n;
    const scatter_job *j = ctx;
    whisper_fast_decoder *d = j->d;
    const int A = j->A, LD = j->LD, dh = j->dh, ldk = d->ldk_cross;
    const float *src = j->tmp + (size_t)i * dh;
    if (j->keys) {
        float *kt = d->cross_k + (size_t)i * dh * ldk;
        for (int t0 = 0; t0 < A; t0 += 16) { /* 16 positions at a time: each row of kt gets 64 bytes */
            const int t1 = t0 + 16 < A ? t0 + 16 : A;
            for (int c = 0; c < dh; c++)
                for (int t = t0; t < t1; t++) kt[(size_t)c * ldk + t] = src[(size_t)t * LD + c];
        }
        if (d->cross_k16) vec_pack_keys_f16(kt, ldk, dh, A, d->cross_k16 + (size_t)i * dh * ldk);
    } else {
        float *v = d->cross_v + (size_t)i * A * dh;
        for (int t = 0; t < A; t++) memcpy(v + (size_t)t * dh, src + (size_t)t * LD, sizeof(float) * dh);
        if (d->cross_v16) vec_f32_to_f16_lanes(v, d->cross_v16 + (size_t)i * A * dh, (size_t)A * dh);
    }
}

void whisper_fast_decoder_set_audio(whisper_fast_decoder *d, const float *xa) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, L = m->n_text_layer, H = m->n_text_head, A = f->A;
    float *tmp = f->big; /* the encoder is done with it until the next window */
    scatter_job j = {d, tmp, A, L * D, D / H, 1};
    linear(f, VEC_F32, f->cross_k_w, f->cross_k_b, xa, A, L * D, D, tmp);
    steno_pool_run(f->pool, scatter_task, &j, L * H);
    linear(f, VEC_F32, f->cross_v_w, f->cross_v_b, xa, A, L * D, D, tmp);
    j.keys = 0;
    steno_pool_run(f->pool, scatter_task, &j, L * H);
    d->n_past = 0;
}

void whisper_fast_decoder_reset(whisper_fast_decoder *d) { d->n_past = 0; }

void whisper_fast_decoder_set_capture(whisper_fast_decoder *d, const whisper_xattn_capture *c) { d->capture = c; }

/* Cross-attention of nq queries for layer l over the window's K/V: the float16 copies when the
 * decoder keeps them and halves are wanted (the single-token steps), else the float32 ones (the
 * prompt, whose queries share 6-query tiles, and the f32 gate). */
void fast_cross_attention(whisper_fast_decoder *d, steno_pool *pool, int l, const float *q, int nq, int halves,
                          float *out) {
    whisper_fast *f = d->f;
    const int D = f->m->n_text_state, H = f->m->n_text_head, dh = D / H, A = f->A;
    if (halves && d->cross_k16) {
        attn16_job j = {q, d->cross_k16 + (size_t)l * D * d->ldk_cross, d->cross_v16 + (size_t)l * A * D,
                        d->ldk_cross, A, nq, dh, H, out};
        steno_pool_run(pool, attn16_task, &j, H);
        return;
    }
    attn_job cj = {q, D, d->cross_k + (size_t)l * D * d->ldk_cross, d->ldk_cross,
                   d->cross_v + (size_t)l * H * A * dh, (size_t)A * dh, dh, A, nq, dh, H, 0, 0, 0, out};
    cj.q_blocks = nq >= 64 ? 4 * f->n_threads : 1; /* as attention(), on the given pool */
    steno_pool_run(pool, attn_task, &cj, cj.H * cj.q_blocks);
}

void whisper_fast_decoder_set_screen(whisper_fast_decoder *d, const float *allow) { d->screen_allow = allow; }

int whisper_fast_decoder_screened_rows(const whisper_fast_decoder *d) { return d->n_exact; }

/* Rows whose upper bound comes within this many nats of the best allowed lower bound are
 * recomputed exactly: the argmax needs only margin 0; 4 more keeps exact every token with more
 * than e^-4 ≈ 2 % of the best one's probability. */
#define SCREEN_MARGIN 4.0f

typedef struct screen_job {
    whisper_fast_decoder *d;
    vec_screen_x x[FAST_SCREEN_MAX];
    int nx;
    float *logits; /* [nx][n_vocab] */
    /* the exact pass: one position at a time */
    const float *h; /* its layer-normed state [D] */
    const float *hi;
    float *out;     /* its logits */
    float thr;
    float best[64][FAST_SCREEN_MAX];
    int count[64];
    float thr_pos[FAST_SCREEN_MAX]; /* the union pass: each position's threshold */
} screen_job;

static void screen_task(void *ctx, int t, int n) {
    screen_job *j = ctx;
    const whisper_fast *f = j->d->f;
    const int eot = f->m->special.eot, D = f->m->n_text_state, V = f->m->n_vocab;
    const int per = (eot + n - 1) / n, r0 = t * per, r1 = r0 + per < eot ? r0 + per : eot;
    const vec_screen_rows w = {f->emb_q, f->emb_s, f->emb_g, f->emb_c};
    if (r0 < r1)
        vec_screen_i8_multi(&w, j->x, j->nx, D, r0, r1, j->d->screen_allow, j->logits, j->d->hi, (size_t)V, j->best[t]);
    else
        for (int i = 0; i < j->nx; i++) j->best[t][i] = -INFINITY;
}

/* the text rows (below eot) whose upper bound reaches thr; the special and timestamp rows went
 * through fast_logit_screen_rows' pass over all positions */
static void exact_task(void *ctx, int t, int n) {
    screen_job *j = ctx;
    whisper_fast_decoder *d = j->d;
    const whisper_fast *f = d->f;
    const int eot = f->m->special.eot, D = f->m->n_text_state;
    const int per = (eot + n - 1) / n, r0 = t * per, r1 = r0 + per < eot ? r0 + per : eot;
    int *rows = d->rows + (r0 < eot ? r0 : 0), c = 0;
    for (int r = r0; r < r1; r++)
        if (j->hi[r] >= j->thr) rows[c++] = r;
    vec_gemv_f16_rows((const uint16_t *)f->emb, j->h, D, rows, c, j->out);
    j->count[t] = c;
}

/* The exact pass of nx > 1 positions: the text rows any position needs (its upper bound reaches
 * its threshold), each read once for the positions that need it (vec_gemv_f16_rows_multi with a
 * mask per row); every position gets exact values for its own rows only, so its logits are what
 * its own call gives (the other rows keep their screened values). On base a verify pass's
 * positions recompute ~6 500 text rows each, ~36 000 distinct ones for 8 positions. */
static void union_task(void *ctx, int t, int n) {
    screen_job *j = ctx;
    whisper_fast_decoder *d = j->d;
    const whisper_fast *f = d->f;
    const int V = f->m->n_vocab, eot = f->m->special.eot, D = f->m->n_text_state, nx = j->nx;
    const int per = (eot + n - 1) / n, r0 = t * per, r1 = r0 + per < eot ? r0 + per : eot;
    int *rows = d->rows + (r0 < eot ? r0 : 0), c = 0, taken = 0;
    uint16_t *need = d->need + (r0 < eot ? r0 : 0);
    for (int r = r0; r < r1; r++) {
        unsigned bits = 0;
        for (int i = 0; i < nx; i++) bits |= (unsigned)(d->hi[(size_t)i * V + r] >= j->thr_pos[i]) << i;
        if (bits) need[c] = (uint16_t)bits, rows[c++] = r, taken += __builtin_popcount(bits);
    }
    float *out[FAST_SCREEN_MAX] = {0};
    for (int i = 0; i < nx; i++) out[i] = j->logits + (size_t)i * V;
    vec_gemv_f16_rows_multi((const uint16_t *)f->emb, d->h, D, nx, D, rows, need, c, out);
    j->count[t] = taken;
}

/* The step's logits in two passes (greedy decoding at temperature 0). Each text row is first
 * bounded from the int8 copy of the embedding (20 of the 40 MB the float16 GEMV reads, and no
 * float16 conversion): z ± b with |exact − z| <= b (kernels/gemv/vec.h). Every row whose upper bound
 * reaches the best lower bound among the allowed rows minus SCREEN_MARGIN, and every special and
 * timestamp row, is then recomputed from the float16 weights by the same kernel as logits_at,
 * bit for bit. The row that wins under any filter that removes only disallowed rows, timestamps
 * or all text is therefore exactly the one logits_at would give, and so is the timestamp rule
 * (it compares the timestamps' log-sum-exp with the best text logit); rows left screened are at
 * least SCREEN_MARGIN nats below the best one and carry their screened value, which moves the
 * log-sum-exp (the reported log-probabilities) by a few 1e-5 nats at most in practice.
 * B positions (a verify pass) share one read of the int8 rows; each position's logits are the
 * ones its own call would give, bit for bit. */
void fast_logit_screen_rows(whisper_fast_decoder *d, const float *x, int B, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, V = m->n_vocab;
    const int nt = f->n_threads < 64 ? f->n_threads : 64;
    d->n_exact = 0;
    for (int b0 = 0; b0 < B; b0 += FAST_SCREEN_MAX) {
        const int nx = B - b0 < FAST_SCREEN_MAX ? B - b0 : FAST_SCREEN_MAX;
        screen_job j;
        j.d = d;
        j.nx = nx;
        j.logits = logits + (size_t)b0 * V;
        for (int i = 0; i < nx; i++) {
            vec_layernorm(x + (size_t)(b0 + i) * D, m->dec_ln.gamma, m->dec_ln.beta, D, d->h + (size_t)i * D);
            j.x[i].qx = d->sq + (size_t)i * D;
            j.x[i].ax = d->sa + (size_t)i * D;
            j.x[i].sb = d->sb + (size_t)i * (D / VEC_SCREEN_BLOCK);
            vec_screen_prepare(d->h + (size_t)i * D, D, &j.x[i]);
        }
        steno_pool_run(f->pool, screen_task, &j, nt);
        /* every special and timestamp row, exact for all nx positions in one pass over their
         * float16 weights (vec_gemv_rows_to: each value the one vec_gemv_f16_rows gives) */
        const int eot = m->special.eot;
        if (eot < V) {
            float *yr[FAST_SCREEN_MAX];
            for (int i = 0; i < nx; i++) yr[i] = j.logits + (size_t)i * V + eot;
            fast_linear_rows_to(f, VEC_F16, (const uint16_t *)f->emb + (size_t)eot * D, NULL, d->h, nx, V - eot, D, yr);
            d->n_exact += nx * (V - eot);
        }
        if (nx > 1) {
            for (int i = 0; i < nx; i++) {
                float best = -INFINITY;
                for (int t = 0; t < nt; t++) best = j.best[t][i] > best ? j.best[t][i] : best;
                j.thr_pos[i] = best - SCREEN_MARGIN; /* as below */
            }
            steno_pool_run(f->pool, union_task, &j, nt);
            for (int t = 0; t < nt; t++) d->n_exact += j.count[t];
            continue;
        }
        for (int i = 0; i < nx; i++) {
            float best = -INFINITY;
            for (int t = 0; t < nt; t++) best = j.best[t][i] > best ? j.best[t][i] : best;
            j.thr = best - SCREEN_MARGIN; /* -inf when no text row is allowed: every row exact */
            j.h = d->h + (size_t)i * D;
            j.hi = d->hi + (size_t)i * V;
            j.out = j.logits + (size_t)i * V;
            steno_pool_run(f->pool, exact_task, &j, nt);
            for (int t = 0; t < nt; t++) d->n_exact += j.count[t];
        }
    }
}

void fast_logit_screen(whisper_fast_decoder *d, const float *x, float *logits) {
    fast_logit_screen_rows(d, x, 1, logits);
}

steno_status whisper_fast_decoder_forward(whisper_fast_decoder *d, const int *tokens, int T, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H;
    const int off = d->n_past;
    const vec_dtype dt = f->dt;
    if (T <= 0 || off + T > N)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: %d tokens at position %d exceed n_text_ctx %d", T, off, N);
    if (T == 1 && d->step_hook && !d->capture) return d->step_hook(d->step_hook_ctx, d, tokens, 1, logits);
    for (int t = 0; t < T; t++) {
        if (tokens[t] < 0 || tokens[t] >= m->n_vocab)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[t]);
        float *xr = d->x + (size_t)t * D;
        if (dt == DT_Q) wq_dequant_rows(f->emb, tokens[t], tokens[t] + 1, xr);
        else if (dt == VEC_F16) vec_f16_to_f32((const uint16_t *)f->emb + (size_t)tokens[t] * D, xr, (size_t)D);
        else memcpy(xr, (const float *)f->emb + (size_t)tokens[t] * D, sizeof(float) * D);
        vec_add(xr, m->dec_pos + (size_t)(off + t) * D, (size_t)D);
    }
    const float scale = 1.0f / sqrtf((float)dh);
    for (int l = 0; l < m->n_text_layer; l++) {
        const whisper_layer *L = &m->dec[l];
        const fast_layer *FL = &f->dec[l];
        float *Kc = d->self_k + d->k_slot * d->kv.slot[0] + (size_t)l * D * d->ldk_self;
        float *Vc = d->self_v + d->v_slot * d->kv.slot[0] + (size_t)l * H * N * dh;

        fast_layernorm(f, &L->attn_ln, d->x, T, d->h);
        linear(f, dt, FL->qkv, L->attn_qkv.b, d->h, T, 3 * D, D, d->qkv);
        for (int t = 0; t < T; t++) {
            const float *r = d->qkv + (size_t)t * 3 * D;
            for (int i = 0; i < D; i++) d->q[(size_t)t * D + i] = r[i] * scale;
            for (int i = 0; i < D; i++) Kc[(size_t)i * d->ldk_self + off + t] = r[D + i];
            for (int h = 0; h < H; h++)
                memcpy(Vc + ((size_t)h * N + off + t) * dh, r + 2 * D + h * dh, sizeof(float) * dh);
        }
        attn_job sj = {d->q, D, Kc, d->ldk_self, Vc, (size_t)N * dh, dh, off + T, T, dh, H, 1, off, 0, d->att};
        attention(f, &sj);
        linear(f, dt, FL->out, L->attn_out.b, d->att, T, D, D, d->h);
        vec_add(d->x, d->h, (size_t)T * D);

        fast_layernorm(f, &L->cross_ln, d->x, T, d->h);
        linear(f, dt, FL->cross_q, L->cross_q.b, d->h, T, D, D, d->q);
        for (size_t i = 0; i < (size_t)T * D; i++) d->q[i] *= scale;
        whisper_xattn_capture_layer(d->capture, l, T, d->q, D, 1.0f, d->cross_k + (size_t)l * D * d->ldk_cross,
                                    d->ldk_cross, 1, dh);
        fast_cross_attention(d, f->pool, l, d->q, T, T == 1, d->att);
        linear(f, dt, FL->cross_out, L->cross_out.b, d->att, T, D, D, d->h);
        vec_add(d->x, d->h, (size_t)T * D);

        fast_layernorm(f, &L->mlp_ln, d->x, T, d->h);
        linear(f, dt, FL->fc1, L->fc1.b, d->h, T, 4 * D, D, d->mlp);
        fast_gelu(f, d->mlp, (size_t)T * 4 * D);
        linear(f, dt, FL->fc2, L->fc2.b, d->mlp, T, D, 4 * D, d->h);
        vec_add(d->x, d->h, (size_t)T * D);
    }
    d->n_past = off + T;
    if (T == 1 && d->screen_allow && f->emb_q) fast_logit_screen(d, d->x, logits);
    else whisper_fast_decoder_logits_at(d, T - 1, logits);
    return STENO_OK;
}

void whisper_fast_decoder_logits_at(whisper_fast_decoder *d, int t, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state;
    vec_layernorm(d->x + (size_t)t * D, m->dec_ln.gamma, m->dec_ln.beta, D, d->h);
    linear(f, f->dt, f->emb, NULL, d->h, 1, m->n_vocab, D, logits);
}

int whisper_fast_decoder_rows(const whisper_fast_decoder *d) { return d->kv.rows; }

/* Self-attention of B rows, one query each, every row against its own slot's cache. */
typedef struct self_rows_job {
    const whisper_fast_decoder *d;
    int l, nk, H, dh, D, N;
    const float *q; /* [B][D] scaled */
    float *out;     /* [B][D] */
} self_rows_job;

static void self_rows_task(void *ctx, int t, int n) {
    (void)n;
    const self_rows_job *j = ctx;
    const whisper_fast_decoder *d = j->d;
    const int h = t % j->H, b = t / j->H, s = d->kv.slot[b];
    const float *Kc = d->self_k + d->k_slot * s + (size_t)j->l * j->D * d->ldk_self;
    const float *Vc = d->self_v + d->v_slot * s + (size_t)j->l * j->H * j->N * j->dh;
    vec_attention(j->q + (size_t)b * j->D + h * j->dh, j->D, Kc + (size_t)h * j->dh * d->ldk_self, d->ldk_self,
                  Vc + (size_t)h * j->N * j->dh, j->dh, j->nk, j->dh, 1, 1, j->nk - 1,
                  j->out + (size_t)b * j->D + h * j->dh, j->D);
}

steno_status whisper_fast_decoder_step_rows(whisper_fast_decoder *d, const int *tokens, int B, float *logits) {
    whisper_fast *f = d->f;
    const whisper_model *m = f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H, V = m->n_vocab;
    const int off = d->n_past;
    const vec_dtype dt = f->dt;
    if (B < 1 || B > d->kv.rows)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: %d rows (the decoder has %d)", B, d->kv.rows);
    if (off < 1 || off + 1 > N)
        return steno_fail(STENO_E_INVALID_ARG, "decoder: a row step at position %d (needs 1..%d)", off, N - 1);
    if (d->step_hook) return d->step_hook(d->step_hook_ctx, d, tokens, B, logits);
    for (int b = 0; b < B; b++) {
        if (tokens[b] < 0 || tokens[b] >= V)
            return steno_fail(STENO_E_INVALID_ARG, "decoder: token id %d out of range", tokens[b]);
        float *xr = d->x + (size_t)b * D;
        if (dt == DT_Q) wq_dequant_rows(f->emb, tokens[b], tokens[b] + 1, xr);
        else if (dt == VEC_F16) vec_f16_to_f32((const uint16_t *)f->emb + (size_t)tokens[b] * D, xr, (size_t)D);
        else memcpy(xr, (const float *)f->emb + (size_t)tokens[b] * D, sizeof(float) * D);
        vec_add(xr, m->dec_pos + (size_t)off * D, (size_t)D);
    }
    const float scale = 1.0f / sqrtf((float)dh);
    for (int l = 0; l < m->n_text_layer; l++) {
        const whisper_layer *L = &m->dec[l];
        const fast_layer *FL = &f->dec[l];

        fast_layernorm(f, &L->attn_ln, d->x, B, d->h);
        fast_linear_rows(f, dt, FL->qkv, L->attn_qkv.b, d->h, B, 3 * D, D, d->qkv);
        for (int b = 0; b < B; b++) {
            const int s = d->kv.slot[b];
            float *Kc = d->self_k + d->k_slot * s + (size_t)l * D * d->ldk_self;
            float *Vc = d->self_v + d->v_slot * s + (size_t)l * H * N * dh;
            const float *r = d->qkv + (size_t)b * 3 * D;
            for (int i = 0; i < D; i++) d->q[(size_t)b * D + i] = r[i] * scale;
            for (int i = 0; i < D; i++) Kc[(size_t)i * d->ldk_self + off] = r[D + i];
            for (int h = 0; h < H; h++) memcpy(Vc + ((size_t)h * N + off) * dh, r + 2 * D + h * dh, sizeof(float) * dh);
        }
        self_rows_job sj = {d, l, off + 1, H, dh, D, N, d->q, d->att};
        steno_pool_run(f->pool, self_rows_task, &sj, H * B);
        fast_linear_rows(f, dt, FL->out, L->attn_out.b, d->att, B, D, D, d->h);
        vec_add(d->x, d->h, (size_t)B * D);

        /* every row's query attends to the one encoder output of the window (broadcast) */
        fast_layernorm(f, &L->cross_ln, d->x, B, d->h);
        fast_linear_rows(f, dt, FL->cross_q, L->cross_q.b, d->h, B, D, D, d->q);
        for (size_t i = 0; i < (size_t)B * D; i++) d->q[i] *= scale;
        fast_cross_attention(d, f->pool, l, d->q, B, 1, d->att);
        fast_linear_rows(f, dt, FL->cross_out, L->cross_out.b, d->att, B, D, D, d->h);
        vec_add(d->x, d->h, (size_t)B * D);

        fast_layernorm(f, &L->mlp_ln, d->x, B, d->h);
        fast_linear_rows(f, dt, FL->fc1, L->fc1.b, d->h, B, 4 * D, D, d->mlp);
        fast_gelu(f, d->mlp, (size_t)B * 4 * D);
        fast_linear_rows(f, dt, FL->fc2, L->fc2.b, d->mlp, B, D, 4 * D, d->h);
        vec_add(d->x, d->h, (size_t)B * D);
    }
    d->n_past = off + 1;
    for (int b = 0; b < B; b++)
        vec_layernorm(d->x + (size_t)b * D, m->dec_ln.gamma, m->dec_ln.beta, D, d->h + (size_t)b * D);
    fast_linear_rows(f, dt, f->emb, NULL, d->h, B, V, D, logits);
    return STENO_OK;
}

static void fast_copy_slot(void *ctx, int from, int to) {
    whisper_fast_decoder *d = ctx;
    const whisper_model *m = d->f->m;
    const int D = m->n_text_state, N = m->n_text_ctx, H = m->n_text_head, dh = D / H, L = m->n_text_layer;
    const size_t np = (size_t)d->n_past;
    const float *ks = d->self_k + d->k_slot * from, *vs = d->self_v + d->v_slot * from;
    float *kd = d->self_k + d->k_slot * to, *vd = d->self_v + d->v_slot * to;
    for (size_t i = 0; i < (size_t)L * D; i++) memcpy(kd + i * d->ldk_self, ks + i * d->ldk_self, sizeof(float) * np);
    for (size_t i = 0; i < (size_t)L * H; i++) memcpy(vd + i * N * dh, vs + i * N * dh, sizeof(float) * np * dh);
}

steno_status whisper_fast_decoder_reorder(whisper_fast_decoder *d, const int *src, int B) {
    return whisper_kv_rows_reorder(&d->kv, src, B, fast_copy_slot, d);
}

