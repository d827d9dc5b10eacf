/* fast_enc_gemm.c — the fast path's encoder linears over float16 weights.
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
 * they are in cache: the same elementwise operations as separate passes, so the same bits. */
#include <cblas.h>
#include <string.h>

#include "whisper/fast_internal.h"

typedef struct enc_job {
    const uint16_t *W; /* [N][K] halves */
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
        fast_gemm_f16_cols(j->W, j->b, j->x, j->T, j->K, c0, cn, w, j->y, j->N);
        if (!j->gelu && !j->res) continue;
        for (int r = 0; r < j->T; r++) {
            float *yr = j->y + (size_t)r * j->N + c0;
            if (j->gelu) vec_gelu(yr, (size_t)cn);
            if (j->res) vec_add(j->res + (size_t)r * j->N + c0, yr, (size_t)cn);
        }
    }
}

void fast_enc_linear16(whisper_fast *f, const uint16_t *W, const float *b, const float *x, int T, int N, int K,
                       float *y, int gelu, float *res) {
    enc_job j = {W, b, x, y, res, f->enc_scratch, T, N, K, gelu};
    const int n_chunks = (N + ENC_COL_CHUNK - 1) / ENC_COL_CHUNK;
    steno_pool_run(f->pool, enc_task, &j, n_chunks < f->n_threads ? n_chunks : f->n_threads);
}
