/* wq.h — quantized weight matrices for the Whisper fast path: a typed view of a matrix stored in
 * one of whisper.cpp's ggml block formats or in MLX's affine format, the load-time quantizers
 * that produce them from float32, and the kernels that read them (row dot products against a
 * quantized activation, and dequantization of a tile of rows for the GEMMs).
 *
 * Formats (wq_mat.type):
 *   ggml block types, ids as in kernels/quant/quant.h (= ggml.h enum ggml_type): STENO_T_Q8_0, Q5_0,
 *   Q5_1, Q4_0, Q4_1. Rows of n_in/32 blocks (kernels/quant/blocks.h layout, byte-identical to
 *   whisper.cpp's ggml-*.bin tensors), q_row bytes apart. Quantized by ggml-quants.c
 *   quantize_row_*_ref (what whisper.cpp's `quantize` tool calls); dot products by the LLM side's
 *   kernels (quant.c vec_dot, quant_rows*.c rows kernels) against the activation quantized to
 *   q8_0 / q8_1 blocks as ggml does.
 *   MLX affine (mlx/ops.cpp affine_quantize, mlx.core.quantize mode "affine"): per group of G = 32
 *   or 64 consecutive values of a row, w ≈ scale·q + bias with q unsigned (4 or 8 bits), packed
 *   little-endian into uint32 words (element i of a word at bits i·bits); scales and biases are
 *   separate [n_out][n_in/G] float16 arrays, as in an mlx-community weights.safetensors (a bf16
 *   file's scales must be converted to f16 by its reader). The activation is quantized to q8_0
 *   blocks of 32; a group's dot is scale·Σ_b d_b·Σq·y + bias·Σ_b d_b·Σy, exact integer inner
 *   sums, floats in a fixed order: scalar, AVX2 and AVX512-VNNI give the same bits.
 *
 * Every output element is one dot product computed by one call in a fixed order, so a GEMV's
 * result does not depend on how rows are split among threads. */
#ifndef STENO_KERNELS_WQ_H
#define STENO_KERNELS_WQ_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/quant/quant.h"
#include "kernels/gemm/matmul_x8.h"

enum {
    WQ_MLX_Q4_G32 = 100,
    WQ_MLX_Q4_G64 = 101,
    WQ_MLX_Q8_G32 = 102,
    WQ_MLX_Q8_G64 = 103,
};

/** A quantized matrix W [n_out][n_in] (PyTorch layout: y = x Wᵀ). Read-only view; the storage
 *  belongs to whoever filled it (the model's arena, or an mmap'd file). q == NULL: no matrix.
 *  ggml types: q = row 0's first block, q_row = bytes between rows (>= n_in/32 · block size);
 *  scales/biases unused. MLX: q = uint32 words [n_out][q_row/4], q_row >= n_in·bits/8;
 *  scales, biases = float16 [n_out][n_in/G], row-major, contiguous. */
typedef struct wq_mat {
    int type;
    int n_out, n_in;
    const void *q;
    size_t q_row;
    const uint16_t *scales, *biases;
    /* The same codes repacked eight rows at a time (kernels/gemm/matmul_x8.h) where the loader made that copy
     * (x.data != NULL; q8_0, q5_0, q4_0, q4_1): the products then run the x8 kernels and their
     * arithmetic (whisper/nn/linear_quant.h). A matrix with q_row == 0 has only that copy (q == x.data,
     * not in ggml layout: wq_dequant_rows reads it, wq_gemv cannot); the Whisper loader keeps no
     * ggml rows where it made one. */
    steno_xmat x;
} wq_mat;

/** Parses a format name: "q8_0", "q5_0", "q5_1", "q4_0", "q4_1", "mlx-q4g32", "mlx-q4g64",
 *  "mlx-q8g32", "mlx-q8g64". Returns the type, or -1. */
int wq_parse(const char *name);
/** The name wq_parse accepts for type ("q8_0", "mlx-q4g32"); "?" for an unknown type. */
const char *wq_name(int type);
/** Elements per block (ggml: 32) or group (MLX: 32/64); 0 for an unknown type. n_in must be a
 *  multiple of it. */
int wq_group(int type);
/** Bytes wq_quantize writes for an [n_out][n_in] matrix (0 when n_in is not a multiple of the
 *  group or the type is unknown). */
size_t wq_bytes(int type, int n_out, int n_in);
/** Quantizes w [n_out][n_in] float32 into dst (wq_bytes bytes, any alignment ≥ 4) and fills
 *  *out as a view of it (MLX: words, then scales, then biases). ggml types: ggml-quants.c
 *  quantize_row_<type>_ref; MLX: mlx affine_quantize computed in float32, scale and bias rounded
 *  to float16 before the codes are chosen. Single-threaded; deterministic. */
void wq_quantize(int type, const float *w, int n_out, int n_in, void *dst, wq_mat *out);

/** Bytes of one activation row of n_in values as the kernels of type read it (a multiple of 64). */
size_t wq_act_bytes(int type, int n_in);
/** Quantizes x [n_in] into xa (wq_act_bytes bytes, 32-byte aligned): ggml types, the type's
 *  vec_dot_type (q8_0/q8_1, quant.c's quantizer) followed by the rows kernels' packed form when
 *  they run; MLX, q8_0 codes with each block's scale and scale·Σcodes as floats. */
void wq_act_prepare(int type, const float *x, int n_in, void *xa);
/** y[r - r0] = (b ? b[r] : 0) + W[r]·x for r in [r0, r1), x prepared by wq_act_prepare. */
void wq_gemv(const wq_mat *m, const void *xa, const float *b, int r0, int r1, float *y);
/** dst [r1 - r0][n_in] = the dequantized rows r0..r1-1 of W. */
void wq_dequant_rows(const wq_mat *m, int r0, int r1, float *dst);

/** The instruction set the MLX kernels run: "avx512vnni", "avx2" or "scalar". STENO_NO_AVX2=1
 *  forces scalar (as kernels/quant/quant.c), STENO_WQ_ISA=scalar|avx2|avx512vnni picks one when
 *  supported. Read once. */
const char *wq_mlx_isa(void);
/** Test hook: 0 scalar, 1 avx2, 2 avx512vnni; returns 0, or -1 (unchanged) when unsupported. */
int wq_mlx_set_isa(int isa);
/** Why isa cannot run here (NULL when it can). */
const char *wq_mlx_isa_missing(int isa);

/* MLX dot kernels, one per instruction set (wq_mlx*.c): the dot of weight row w (words), its
 * scales s and biases bb (f16, n/G each) with a prepared activation. bits 4 or 8; G 32 or 64. */
typedef float (*wq_mlx_dot_fn)(int n, int bits, int G, const uint32_t *w, const uint16_t *s, const uint16_t *bb,
                               const void *xa);
float wq_mlx_dot_scalar(int n, int bits, int G, const uint32_t *w, const uint16_t *s, const uint16_t *bb,
                        const void *xa);
float wq_mlx_dot_avx2(int n, int bits, int G, const uint32_t *w, const uint16_t *s, const uint16_t *bb,
                      const void *xa);
float wq_mlx_dot_avx512vnni(int n, int bits, int G, const uint32_t *w, const uint16_t *s, const uint16_t *bb,
                            const void *xa);

#endif
