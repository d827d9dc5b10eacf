/* linear_f16.c — the fast path's encoder linears over float16 weights.
 *
 * With float16 weights (the default: CTranslate2's files are float16, and the loader keeps the
 * fast path's matrices as they are) the encoder's products read the weights as halves: a fixed
 * grid of ENC_COL_CHUNK output columns, task t of n taking chunks t, t+n, …; each chunk's weight
 * rows are widened to float32 in the task's scratch (exact: every half is a float) and multiplied
 * with all T time steps in one single-threaded sgemm. Holding the encoder in float32 instead cost
 * 4 bytes a weight in memory that a new process must fault in and fill at load (82 MB for base:
 * on the development VM, whose host reclaims freed memory, first touches ran at 0.3-1 GB/s).
 *
 * Bits: a chunk's result depends only on the chunk, never on the thread that ran it, so the
 * output is identical for any thread count. OpenBLAS's SkylakeX sgemm gives an output the same
 * bits whatever the call's row or column range (bench/gemm_rows.c), so on such CPUs these are
 * the bits of the float32 encoder's row-block grid too; other OpenBLAS kernels may differ from it
 * in the last bit, and the fast path's parity gate (tests/py/test_fast_parity.py) holds either way.
 *
 * The epilogue (GELU, a residual add) runs on each chunk's columns right after its product, while
 * they are in cache: the same elementwise operations as separate passes, so the same bits.
 *
 * On a CPU with AMX-BF16 (kernels/gemm/gemm_amx_bf16x3.h) the products run on tiles instead, bf16x3: the input
 * split into bfloat16 halves once per linear, each chunk's weights packed into the task's scratch
 * (the bytes its float32 widening took). Not sgemm's bits (about 2⁻¹⁶ of Σ|x·w| apart): gated by
 * tokens like the float16 K/V (docs/WHISPER.md); identical for any thread count all the same.
 * The self-attention joins them here (fast_enc_attention_amx, kernels/attention/attention_amx.h). */
#include <cblas.h>
#include <string.h>

#include "kernels/attention/attention_amx.h"
#include "kernels/gemm/gemm_amx_bf16x3.h"
#include "whisper/fast_internal.h"

typedef struct enc_job {
    const uint16_t *W; /* [N][K] halves */
    const uint16_t *xh, *xl; /* AMX: x split (gemm_amx_split), else NULL */
    const float *b;    /* [N] or NULL */
    const float *x;    /* [T][K] */
    float *y;          /* [T][N] */
    float *res;        /* NULL, or [T][N] += y */
    float *scratch;    /* [n][ENC_COL_CHUNK][K] */
    int T, N, K, gelu;
} enc_job;

void fast_gemm_f16_cols(const uint16_t *W, const float *b, const float *x, int T, int K, int c0, int cn, float *w,
                        float *y, int ldy) {
    vec_f16_to_f32(W + (size_t)c0 * K, w, (size_t)cn * K);
    for (int r = 0; r < T; r++) {
        float *yr = y + (size_t)r * ldy + c0;
        if (b) memcpy(yr, b + c0, sizeof(float) * cn);
        else memset(yr, 0, sizeof(float) * cn);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, cn, K, 1.0f, x, K, w, K, 1.0f, y + c0, ldy);
}

static void enc_task(void *ctx, int t, int n) {
    const enc_job *j = ctx;
    const int n_chunks = (j->N + ENC_COL_CHUNK - 1) / ENC_COL_CHUNK;
    float *w = j->scratch + (size_t)t * ENC_COL_CHUNK * j->K;
    for (int c = t; c < n_chunks; c += n) {
        const int c0 = c * ENC_COL_CHUNK, cn = j->N - c0 < ENC_COL_CHUNK ? j->N - c0 : ENC_COL_CHUNK;
        if (j->xh) {
            uint16_t *bh = (uint16_t *)w, *bl = bh + gemm_amx_b_halves(j->K, cn);
            gemm_amx_pack_f16(j->W, j->K, c0, cn, bh, bl);
            gemm_amx_mul(j->xh, j->xl, j->T, j->K, bh, bl, cn, j->b ? j->b + c0 : NULL, j->y + c0, j->N);
        } else {
            fast_gemm_f16_cols(j->W, j->b, j->x, j->T, j->K, c0, cn, w, j->y, j->N);
        }
        if (!j->gelu && !j->res) continue;
        for (int r = 0; r < j->T; r++) {
            float *yr = j->y + (size_t)r * j->N + c0;
            if (j->gelu) vec_gelu(yr, (size_t)cn);
            if (j->res) vec_add(j->res + (size_t)r * j->N + c0, yr, (size_t)cn);
        }
    }
}

/* rows [0, T) of x (row stride ldx, K columns) split into bfloat16 halves, rows shared among tasks */
typedef struct split_job {
    const float *x;
    int ldx, T, K;
    uint16_t *xh, *xl;
} split_job;

static void split_task(void *ctx, int t, int n) {
    const split_job *j = ctx;
    const int per = (j->T + n - 1) / n, r0 = t * per, r1 = r0 + per < j->T ? r0 + per : j->T;
    if (r0 < r1) gemm_amx_split(j->x, j->ldx, j->K, r0, r1, j->xh, j->xl);
}

void fast_enc_linear16(whisper_fast *f, const uint16_t *W, const float *b, const float *x, int T, int N, int K,
                       float *y, int gelu, float *res) {
    enc_job j = {W, NULL, NULL, b, x, y, res, f->enc_scratch, T, N, K, gelu};
    if (f->amx_xh && K % 32 == 0 && N % 32 == 0 && T <= f->A && gemm_amx_available()) {
        /* bf16x3 on AMX tiles (kernels/gemm/gemm_amx_bf16x3.h): x split once here, each chunk's weights packed
         * in the task's scratch (cn·K·4 bytes, the size of its float32 widening) */
        split_job s = {x, K, T, K, f->amx_xh, f->amx_xl};
        const size_t pad = (size_t)(gemm_amx_rows(T) - T) * K; /* whole tiles: the pad rows zero, not stale */
        memset(f->amx_xh + (size_t)T * K, 0, sizeof(uint16_t) * pad);
        memset(f->amx_xl + (size_t)T * K, 0, sizeof(uint16_t) * pad);
        steno_pool_run(f->pool, split_task, &s, f->n_threads);
        j.xh = f->amx_xh;
        j.xl = f->amx_xl;
    }
    const int n_chunks = (N + ENC_COL_CHUNK - 1) / ENC_COL_CHUNK;
    steno_pool_run(f->pool, enc_task, &j, n_chunks < f->n_threads ? n_chunks : f->n_threads);
}

/* ---------------------------------------------------------------- self-attention on AMX tiles */

typedef struct amx_att_job {
    whisper_fast *f;
    const float *kt, *vp; /* prepare_qkv's keys [D][ldk] (transposed) and values [H][T][dh] */
    int T, Tp, D, dh, H, ldk;
    float *out; /* [T][D] */
} amx_att_job;

static uint16_t *head_pack(const amx_att_job *j, int which, int h) {
    const size_t per = att_amx_head_halves(j->T, j->dh);
    return j->f->amx_kv + ((size_t)which * j->H + h) * per;
}

static void amx_pack_task(void *ctx, int h, int n) {
    (void)n;
    const amx_att_job *j = ctx;
    att_amx_pack_head(j->kt + (size_t)h * j->dh * j->ldk, j->ldk, j->vp + (size_t)h * j->T * j->dh, j->dh, j->T, j->dh,
                      head_pack(j, 0, h), head_pack(j, 1, h), head_pack(j, 2, h), head_pack(j, 3, h));
}

/* task t of n: blocks (head, 32 queries) t, t + n, …, in the task's own scratch */
static void amx_rows_task(void *ctx, int t, int n) {
    const amx_att_job *j = ctx;
    const int qb = j->Tp / 32;
    void *scratch = (char *)j->f->amx_att_scratch + (size_t)t * j->f->amx_att_scratch_bytes;
    for (int i = t; i < j->H * qb; i += n) {
        const int h = i / qb, q0 = (i % qb) * 32, nq = j->T - q0 < 32 ? j->T - q0 : 32;
        att_amx_rows(j->f->amx_xh + (size_t)q0 * j->D + (size_t)h * j->dh, j->f->amx_xl + (size_t)q0 * j->D + (size_t)h * j->dh,
                     j->D, nq, j->T, j->dh, head_pack(j, 0, h), head_pack(j, 1, h), head_pack(j, 2, h),
                     head_pack(j, 3, h), scratch, j->out + (size_t)q0 * j->D + (size_t)h * j->dh, j->D);
    }
}

int fast_enc_attention_amx(whisper_fast *f, const float *qkv, int T, int D, int dh, int H, const float *kt, int ldk,
                           const float *vp, float *out) {
    if (!f->amx_kv || dh % 32 || T > f->A || !gemm_amx_available()) return 0;
    const int Tp = gemm_amx_rows(T);
    memset(f->amx_xh + (size_t)T * D, 0, sizeof(uint16_t) * (size_t)(Tp - T) * D);
    memset(f->amx_xl + (size_t)T * D, 0, sizeof(uint16_t) * (size_t)(Tp - T) * D);
    split_job q = {qkv, 3 * D, T, D, f->amx_xh, f->amx_xl}; /* the scaled queries: qkv's first D columns */
    steno_pool_run(f->pool, split_task, &q, f->n_threads);
    amx_att_job j = {f, kt, vp, T, Tp, D, dh, H, ldk, out};
    steno_pool_run(f->pool, amx_pack_task, &j, H);
    steno_pool_run(f->pool, amx_rows_task, &j, f->n_threads);
    return 1;
}
