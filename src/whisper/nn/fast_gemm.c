/* fast_gemm.c — the fast path's parallel products and row-parallel helpers on its pool: the
 * f32 GEMM on a fixed row grid, the f16 GEMM on a fixed column grid, the GEMVs of one or many
 * rows, LayerNorm and GELU. Every output element is computed by one task in a fixed order, so
 * results do not depend on the thread count (see fast.h). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "whisper/fast_internal.h"
#include "whisper/nn/linear_quant.h"

#define ROW_BLOCK 192 /* the f32 GEMM's fixed row grid (gemm_task) */
_Static_assert(FAST_COL_CHUNK == FASTQ_COL_CHUNK, "linear_quant.c shares conv_scratch's tiles");

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
    const int n_chunks = (j->N + FAST_COL_CHUNK - 1) / FAST_COL_CHUNK;
    float *scratch = j->f->conv_scratch + (size_t)t * FAST_COL_CHUNK * 4 * j->f->m->n_text_state;
    for (int c = t; c < n_chunks; c += n) {
        const int c0 = c * FAST_COL_CHUNK, cn = j->N - c0 < FAST_COL_CHUNK ? j->N - c0 : FAST_COL_CHUNK;
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
void fast_linear(whisper_fast *f, vec_dtype dt, const void *W, const float *b, const float *x, int T, int N, int K,
                 float *y) {
    if (dt == DT_Q) {
        fastq_linear(f->pool, f->n_threads, W, b, x, T, T > 1, y, f->qact, f->conv_scratch,
                     (size_t)FAST_COL_CHUNK * 4 * f->m->n_text_state, &f->xwork);
        return;
    }
    if (T == 1) {
        gemv_job j = {dt, W, b, x, y, N, K, 1, NULL, NULL};
        steno_pool_run(f->pool, gemv_task, &j, N >= 256 ? f->n_threads : 1);
        return;
    }
    gemm_job j = {f, dt, W, b, x, y, T, N, K, N, 0, NULL};
    const int n_chunks = dt == VEC_F32 ? (T + ROW_BLOCK - 1) / ROW_BLOCK : (N + FAST_COL_CHUNK - 1) / FAST_COL_CHUNK;
    steno_pool_run(f->pool, gemm_task, &j, n_chunks < f->n_threads ? n_chunks : f->n_threads);
}

/* The float32 branch of the encoder's linears (fast_encoder.c enc_linear): the row blocks of
 * gemm_task, each followed by its GELU and residual while it is in cache. */
void fast_linear_f32_fused(whisper_fast *f, const float *W, const float *b, const float *x, int T, int N, int K,
                           float *y, int gelu, float *res) {
    gemm_job j = {f, VEC_F32, W, b, x, y, T, N, K, N, gelu, res};
    const int n_blocks = (T + ROW_BLOCK - 1) / ROW_BLOCK;
    steno_pool_run(f->pool, gemm_task, &j, n_blocks < f->n_threads ? n_blocks : f->n_threads);
}

/* y[B][N] = x[B][K] Wᵀ + b for B independent rows (one token each): one pass over W for all rows,
 * every row bit-identical to fast_linear() with T = 1. */
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

