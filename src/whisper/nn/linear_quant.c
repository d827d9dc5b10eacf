#include "whisper/nn/linear_quant.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels/gemv/vec.h"

typedef struct q_job {
    const wq_mat *W;
    const float *b, *x;
    float *y;
    int T;
    const unsigned char *act;
    size_t act_row;
    float *tiles;
    size_t tile_stride;
} q_job;

/* Rows of W cut into n contiguous slices (multiples of 8); for each weight row, every activation
 * row: the weights are read once for all T rows. */
static void gemv_task(void *ctx, int t, int n) {
    const q_job *j = ctx;
    const int N = j->W->n_out;
    const int per = ((N + n - 1) / n + 7) & ~7, r0 = t * per, r1 = r0 + per < N ? r0 + per : N;
    for (int r = r0; r < r1; r++)
        for (int i = 0; i < j->T; i++) wq_gemv(j->W, j->act + j->act_row * i, j->b, r, r + 1, j->y + (size_t)i * N + r);
}

static void gemm_task(void *ctx, int t, int n) {
    const q_job *j = ctx;
    const int N = j->W->n_out, K = j->W->n_in;
    const int n_chunks = (N + FASTQ_COL_CHUNK - 1) / FASTQ_COL_CHUNK;
    float *tile = j->tiles + (size_t)t * j->tile_stride;
    for (int c = t; c < n_chunks; c += n) {
        const int c0 = c * FASTQ_COL_CHUNK, cn = N - c0 < FASTQ_COL_CHUNK ? N - c0 : FASTQ_COL_CHUNK;
        wq_dequant_rows(j->W, c0, c0 + cn, tile);
        for (int r = 0; r < j->T; r++) {
            float *yr = j->y + (size_t)r * N + c0;
            if (j->b) memcpy(yr, j->b + c0, sizeof(float) * cn);
            else memset(yr, 0, sizeof(float) * cn);
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->T, cn, K, 1.0f, j->x, K, tile, K, 1.0f, j->y + c0, N);
    }
}

/* The x8 product, one call for every T, gemm or not: each output takes the same operations whatever
 * T and the split, so when work cannot grow to all T rows the rows go in slices that fit what it
 * holds, with the same bits (work sized ahead for n_text_ctx rows never needs to grow). */
static void x8_linear(steno_pool *pool, const wq_mat *W, const float *b, const float *x, int T, float *y,
                      steno_work *work) {
    const int N = W->n_out, K = W->n_in;
    for (int t0 = 0; t0 < T;) {
        int n = T - t0;
        while (n > 1 && !steno_work_get(work, steno_matmul_x_work_bytes(W->type, K, n))) n = (n + 1) / 2;
        float *yt = y + (size_t)t0 * N;
        if (steno_matmul_x(pool, work, &W->x, x + (size_t)t0 * K, n, yt, N) != 0) {
            /* not even one row's scratch (a few KB): no result; NaN rather than stale values */
            for (size_t i = 0; i < (size_t)(T - t0) * N; i++) yt[i] = NAN;
            return;
        }
        if (b)
            for (int t = 0; t < n; t++) vec_add(yt + (size_t)t * N, b, (size_t)N);
        t0 += n;
    }
}

void fastq_linear(steno_pool *pool, int n_threads, const wq_mat *W, const float *b, const float *x, int T, int gemm,
                  float *y, void *act, float *tiles, size_t tile_stride, steno_work *work) {
    const int N = W->n_out, K = W->n_in;
    if (W->x.data) {
        steno_work local = {0};
        x8_linear(pool, W, b, x, T, y, work ? work : &local);
        steno_work_free(&local);
        return;
    }
    q_job j = {W, b, x, y, T, act, wq_act_bytes(W->type, K), tiles, tile_stride};
    if (gemm) {
        const int n_chunks = (N + FASTQ_COL_CHUNK - 1) / FASTQ_COL_CHUNK;
        steno_pool_run(pool, gemm_task, &j, n_chunks < n_threads ? n_chunks : n_threads);
        return;
    }
    for (int i = 0; i < T; i++) wq_act_prepare(W->type, x + (size_t)i * K, K, (unsigned char *)act + j.act_row * i);
    steno_pool_run(pool, gemv_task, &j, N >= 256 ? n_threads : 1);
}

size_t fastq_mat_bytes(const wq_mat *W) { return W->q ? wq_bytes(W->type, W->n_out, W->n_in) : 0; }
