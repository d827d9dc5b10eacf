/* matmul_f32.c — see matmul.h (steno_matmul_f32): the evaluation-precision product. */
#include <cblas.h>

#include "kernels/gemm/matmul.h"
#include "core/blas_core.h"
#include "kernels/quant/quant.h"

/* Rows of W dequantized per sgemm: 64 rows × n_in floats per task (≤ 0.5 MiB at n_in = 2048) stay
 * in L2 while the T activation rows stream past. */
#define F32_TILE 64

typedef struct {
    const steno_mat *W;
    const float *X;
    int T;
    float *Y;
    int64_t ldy;
    float *scratch; /* [n_tasks][F32_TILE][n_in] */
    steno_to_float_fn to_float;
} f32_job;

/* Task t of n takes tiles t, t+n, …: each output is one sgemm over one fixed tile, so Y does not
 * depend on the thread count (OpenBLAS runs single-threaded inside the pool's tasks). */
static void f32_task(void *arg, int t, int n) {
    const f32_job *j = arg;
    const int64_t K = j->W->n_in, N = j->W->n_out;
    float *w = j->scratch + (size_t)t * F32_TILE * (size_t)K;
    const int64_t n_tiles = (N + F32_TILE - 1) / F32_TILE;
    for (int64_t tile = t; tile < n_tiles; tile += n) {
        const int64_t r0 = tile * F32_TILE, rn = N - r0 < F32_TILE ? N - r0 : F32_TILE;
        for (int64_t r = 0; r < rn; r++)
            j->to_float((const uint8_t *)j->W->data + (size_t)(r0 + r) * j->W->row_bytes, w + (size_t)r * K, K);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->T, (int)rn, (int)K, 1.0f, j->X, (int)K, w, (int)K,
                    0.0f, j->Y + r0, (int)j->ldy);
    }
}

int steno_matmul_f32(steno_pool *pool, steno_work *work, const steno_mat *W, const float *X, int T, float *Y,
                     int64_t ldy) {
    const steno_type_traits *tw = steno_type_get(W->type);
    if (!tw || !tw->to_float) return -1;
    const int64_t n_tiles = (W->n_out + F32_TILE - 1) / F32_TILE;
    const int n_tasks = (int)(n_tiles < steno_n_tasks(pool) ? n_tiles : steno_n_tasks(pool));
    if (n_tasks <= 0) return 0;
    openblas_set_num_threads(1); /* the pool runs the tasks; Whisper may have raised it */
    float *scratch = steno_work_get(work, (size_t)n_tasks * F32_TILE * (size_t)W->n_in * sizeof(float));
    if (!scratch) return -1;
    f32_job j = {W, X, T, Y, ldy, scratch, tw->to_float};
    if (n_tasks == 1) f32_task(&j, 0, 1);
    else steno_pool_run(pool, f32_task, &j, n_tasks);
    return 0;
}
