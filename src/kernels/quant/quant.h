/* quant.h — ggml tensor types: block layouts, dequantization, activation quantization and
 * dot-product kernels (CPU, scalar reference + AVX2 with runtime dispatch).
 *
 * Type ids are the ones GGUF files store (ggml.h enum ggml_type). Block layouts and the arithmetic
 * of every kernel follow llama.cpp's ggml/src/ggml-common.h (block_q4_0 ... block_q8_K),
 * ggml/src/ggml-quants.c (dequantize_row_*, quantize_row_q8_*_ref) and
 * ggml/src/ggml-cpu/quants.c (ggml_vec_dot_*_generic), so that a matrix-vector product here sees
 * the same quantized operands as llama.cpp's CPU backend:
 *
 *   weight type   activation ("vec_dot") type    one block
 *   F32           F32                            1 float
 *   F16           F16  (activation rounded)      1 half
 *   BF16          BF16 (activation rounded)      1 bfloat16
 *   Q4_0          Q8_0                           32 elems: f16 d; u8 qs[16]       x = (q-8)*d
 *   Q4_1          Q8_1                           32 elems: f16 d, m; u8 qs[16]    x = q*d + m
 *   Q5_0          Q8_0                           32 elems: f16 d; u8 qh[4]; u8 qs[16]  x=(q-16)*d
 *   Q5_1          Q8_1                           32 elems: f16 d, m; u8 qh[4]; u8 qs[16]
 *   Q8_0          Q8_0                           32 elems: f16 d; i8 qs[32]       x = q*d
 *   Q4_K          Q8_K                           256 elems: f16 d, dmin; u8 scales[12]; u8 qs[128]
 *                 (accumulated as llama.cpp's repacked q4_K×8 GEMV does, see quant_avx2.c)
 *   Q5_K          Q8_K                           256 elems: f16 d, dmin; scales[12]; qh[32]; qs[128]
 *   Q6_K          Q8_K                           256 elems: u8 ql[128]; u8 qh[64]; i8 sc[16]; f16 d
 *   (Q8_1, Q8_K exist only as activation types: f16 d, s; i8 qs[32] / f32 d; i8 qs[256]; i16 bsums[16])
 *
 * Within a block the integer sums are exact; blocks are accumulated in float in block order, so a
 * row's dot product does not depend on how rows are split among threads.
 */
#ifndef STENO_KERNELS_QUANT_H
#define STENO_KERNELS_QUANT_H

#include <stddef.h>
#include <stdint.h>

enum {
    STENO_T_F32 = 0,
    STENO_T_F16 = 1,
    STENO_T_Q4_0 = 2,
    STENO_T_Q4_1 = 3,
    STENO_T_Q5_0 = 6,
    STENO_T_Q5_1 = 7,
    STENO_T_Q8_0 = 8,
    STENO_T_Q8_1 = 9,
    STENO_T_Q4_K = 12,
    STENO_T_Q5_K = 13,
    STENO_T_Q6_K = 14,
    STENO_T_Q8_K = 15,
    STENO_T_BF16 = 30,
    STENO_T_COUNT = 40
};

#define STENO_QK 32   /* elements per block of the 32-element types */
#define STENO_QK_K 256 /* elements per super-block of the K types */

/** Converts n values of x (of a ggml type) to float32 y[n]; n is a multiple of the block size. */
typedef void (*steno_to_float_fn)(const void *x, float *y, int64_t n);
/** Quantizes n float32 values into the activation type; n a multiple of the block size. */
typedef void (*steno_from_float_fn)(const float *x, void *y, int64_t n);
/** Dot product of n elements: x a weight row of the type, y the activation row already converted
 *  to the type's vec_dot_type. */
typedef float (*steno_vec_dot_fn)(int n, const void *x, const void *y);

/** Four dot products of one weight row x with the activation rows y, y + ys, y + 2ys, y + 3ys
 *  (bytes); out[c] is bit-identical to vec_dot(n, x, y + c·ys). Optional (NULL). */
typedef void (*steno_vec_dot4_fn)(int n, const void *x, const void *y, size_t ys, float *out);

typedef struct steno_type_traits {
    const char *name;      /* "q4_K" etc. (ggml's names) */
    int block_size;        /* elements per block */
    size_t type_size;      /* bytes per block */
    int vec_dot_type;      /* activation type for vec_dot (-1: not usable as a weight) */
    steno_to_float_fn to_float;     /* NULL for activation-only types */
    steno_from_float_fn from_float; /* set for types usable as vec_dot_type */
    steno_vec_dot_fn vec_dot;       /* NULL for activation-only types */
    steno_vec_dot4_fn vec_dot4;     /* NULL when only the single-row kernel exists */
} steno_type_traits;

/** Traits of a type id, or NULL when steno does not support it (unknown or not implemented). */
const steno_type_traits *steno_type_get(int type);
/** Name of a type id for messages ("q4_K", or "type 99" for unknown; static storage). */
const char *steno_type_name(int type);
/** Bytes of one row of n elements (n a multiple of the block size; 0 when not). */
size_t steno_row_size(int type, int64_t n);

/** Float32 → IEEE half, round to nearest even (what F16C's vcvtps2ph does). */
uint16_t steno_f32_to_f16(float f);
/** Float32 → bfloat16, round to nearest even (ggml's GGML_FP32_TO_BF16). */
uint16_t steno_f32_to_bf16(float f);
/** Rounds a float32 through half precision and back. */
float steno_round_f16(float f);

/** GELU (tanh approximation) exactly as ggml's CPU backend evaluates it with GGML_GELU_FP16:
 *  x <= -10 → 0, x >= 10 → x, otherwise table[half(x)] with table[h] = half(gelu_f32(float(h)))
 *  (ggml-cpu/vec.h ggml_vec_gelu_f32; the table of ggml-cpu.c, rebuilt bit for bit). */
float steno_gelu_ggml(float x);

/** y[i] += a * x[i] for n halves x (the weighted sum of f16 value rows in attention). */
void steno_f16_axpy(int n, float a, const void *x, float *y);

/** Names the instruction set the dot kernels dispatch to ("avx2" or "scalar"). STENO_NO_AVX2=1 in
 *  the environment forces the scalar kernels (read once). */
const char *steno_kernels_isa(void);

#endif
