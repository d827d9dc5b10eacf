/* matmul.h — matrix products of a (quantized) weight matrix with float32 activations.
 *
 * A weight matrix is ggml's layout: n_out rows of n_in elements of one ggml type, rows contiguous
 * (row_bytes apart). steno_matmul computes, for T activation rows,
 *     Y[t][r] = Σ_k W[r][k] · X[t][k]        X: float32 [T][n_in], Y: float32 [T][ldy >= n_out]
 * by converting each X row once to the weight type's vec_dot_type (Q8_0/Q8_1/Q8_K/F16/...) and
 * calling the type's dot kernel per (row, t), as llama.cpp's CPU backend does
 * (ggml-cpu.c ggml_compute_forward_mul_mat). Rows are split among the pool's threads; each output is
 * computed by one kernel call, so Y does not depend on the thread count or on T.
 * For q4_0/q4_1/q5_0/q8_0/q4_K/q6_K weights on AVX2 CPUs the activation rows are taken in groups
 * of up to 8 (12 with AVX-512) by the rows kernels (kernels/gemv/dot_rows.h: each weight block
 * unpacked once per group, AVX-VNNI/AVX512-VNNI integer dots where the CPU has them); every output
 * is still bit-identical to the single-row kernel's (tests/unit/test_dot_rows.c).
 */
#ifndef STENO_KERNELS_MATMUL_H
#define STENO_KERNELS_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "core/threadpool.h"

/** Splits [0, n) into nth contiguous parts; part ith is [*lo, *hi). */
static inline void steno_split(long n, int ith, int nth, long *lo, long *hi) {
    long per = (n + nth - 1) / nth;
    *lo = per * ith;
    *hi = *lo + per;
    if (*lo > n) *lo = n;
    if (*hi > n) *hi = n;
}

/** Tasks a kernel splits its work into on pool (several per thread, so a late thread delays
 *  little; 1 without a pool). */
static inline int steno_n_tasks(const steno_pool *pool) {
    int n = steno_pool_threads(pool);
    return n > 1 ? 4 * n : 1;
}

/** A read-only view of a weight matrix (or vector: n_out = 1). */
typedef struct steno_mat {
    int type;           /* ggml type id (kernels/quant/quant.h) */
    int64_t n_in;       /* elements per row (ggml ne[0]) */
    int64_t n_out;      /* rows (ggml ne[1]) */
    size_t row_bytes;   /* bytes between rows */
    const void *data;   /* n_out rows; NULL for an absent tensor */
    const struct steno_xmat *x8; /* the same weights repacked for the LLM fast path (kernels/gemm/matmul_x8.h),
                                    or NULL */
} steno_mat;

/** Scratch space for the converted activations; grows on demand, freed by steno_work_free. */
typedef struct steno_work {
    void *buf;
    size_t cap;
} steno_work;

void steno_work_free(steno_work *w);
/** w's buffer grown to at least n bytes (contents kept), or NULL when out of memory. */
void *steno_work_get(steno_work *w, size_t n);

/** Y = X · Wᵀ as above. Returns 0, or -1 when out of memory or the type has no dot kernel. */
int steno_matmul(steno_pool *pool, steno_work *work, const steno_mat *W, const float *X, int T,
                 float *Y, int64_t ldy);

#define STENO_MATMUL_MAX_N 4

/** Y_m = X · W_mᵀ for nm (1..STENO_MATMUL_MAX_N) matrices of the same type and n_in (a layer's
 *  Q/K/V projections, or its gate and up projections): X is converted once and every thread takes
 *  rows of all of them in one pool job (one wake-up instead of nm). Each Y_m is bit-identical to
 *  steno_matmul(W_m). Returns 0, or -1 when out of memory, a type has no dot kernel, or the
 *  matrices differ in type or width (call steno_matmul per matrix then). */
int steno_matmul_n(steno_pool *pool, steno_work *work, int nm, const steno_mat *const *W, const float *X, int T,
                   float *const *Y, const int64_t *ldy);

/** Y = X · Wᵀ at evaluation precision: W's rows dequantized to float32 (64 at a time, per task)
 *  and multiplied with the float32 activations by OpenBLAS sgemm — no activation quantization.
 *  Not llama.cpp's arithmetic; used by the LLM contexts' STENO_LLM_COMPUTE_F32 mode to measure
 *  what a cache kind costs without the q8 activation noise. The caller keeps OpenBLAS at one
 *  thread (the pool runs the tasks). Same result for any thread count. Returns 0, or -1 when out
 *  of memory or the type cannot be dequantized. */
int steno_matmul_f32(steno_pool *pool, steno_work *work, const steno_mat *W, const float *X, int T,
                     float *Y, int64_t ldy);

/** Copies row r of W into dst as float32 (n_in values): the embedding lookup (ggml get_rows). */
void steno_mat_row_f32(const steno_mat *W, int64_t r, float *dst);

#endif
