/* linear_quant.h — the fast path's linear layers on quantized weights (kernels/quant/wq.h): whisper.cpp's
 * ggml block formats and MLX affine, read in place (no float copy of the weights is made).
 *   - q8_0, q5_0, q4_0, q4_1 (the types with an x8 copy, wq_mat.x): every product, single-token
 *     step, batched rows, prompt and encoder alike, is kernels/gemm/matmul_x8.h's steno_matmul_x — the
 *     activation rows quantized to q8_0/q8_1 blocks, each block's exact integer dot added with one
 *     fmaf (matmul_x8.h "Arithmetic"; the LLM fast path's kernels: AVX512-VNNI, AVX-VNNI or AVX2, the
 *     same bits on each). Each output takes the same operations whatever T, so a batched row equals
 *     the single-token step and the encoder's GEMMs run on integer dot products too (whisper.cpp
 *     also quantizes the activations of its quantized matmuls). The loader keeps no ggml rows of
 *     a matrix with an x8 copy (wq_mat.q_row 0, q pointing at the x8 data; the token embedding's
 *     lookups dequantize from it);
 *   - other types, single-token steps and batched rows (GEMV): the activation rows are quantized once per call
 *     (q8_0/q8_1 blocks, as ggml does), then every output element is one wq_gemv dot product of one
 *     weight row, rows cut among the pool's tasks;
 *   - prompts and the encoder (GEMM, T > 1): the weight rows are cut into a fixed grid of
 *     FASTQ_COL_CHUNK rows; a task dequantizes one chunk into its own float32 tile and runs one
 *     single-threaded sgemm on it with all T activation rows (float32 activations, as whisper.cpp's
 *     CPU backend does for large batches after dequantizing a block).
 * Both are identical for any thread count: an output element is computed by one call whose inputs
 * do not depend on the split. */
#ifndef STENO_WHISPER_FAST_QUANT_H
#define STENO_WHISPER_FAST_QUANT_H

#include "core/threadpool.h"
#include "kernels/quant/wq.h"

#define FASTQ_COL_CHUNK 64

/** y[T][N] = x[T][K] Wᵀ + b (b [N] or NULL), W [N][K] quantized. With W->x.data: the x8 product
 *  in work (the caller's scratch, grown as needed; sized ahead by steno_matmul_x_work_bytes it
 *  allocates nothing; NULL: a scratch of this call), gemm, act and tiles unused; where work cannot
 *  grow, slices of the rows with the same bits. Otherwise gemm 0: T independent rows by GEMV, act holds
 *  T · wq_act_bytes(W->type, K) bytes (64-byte aligned); gemm 1: tiles holds n_threads ·
 *  FASTQ_COL_CHUNK · K floats (tile_stride floats apart). Not reentrant on one work or pool. */
void fastq_linear(steno_pool *pool, int n_threads, const wq_mat *W, const float *b, const float *x, int T, int gemm,
                  float *y, void *act, float *tiles, size_t tile_stride, steno_work *work);

/** Bytes of the matrices of a model's quantized linears as stored (for reports). */
size_t fastq_mat_bytes(const wq_mat *W);

#endif
