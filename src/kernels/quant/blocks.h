/* blocks.h — the block structs of the ggml quantized types (private to src/kernels/).
 * Byte layout from llama.cpp ggml/src/ggml-common.h; halves are stored as raw uint16_t. */
#ifndef STENO_KERNELS_QUANT_BLOCKS_H
#define STENO_KERNELS_QUANT_BLOCKS_H

#include <stdint.h>

#include "kernels/quant/quant.h"

typedef struct { uint16_t d; uint8_t qs[16]; } block_q4_0;                 /* 18 bytes */
typedef struct { uint16_t d, m; uint8_t qs[16]; } block_q4_1;              /* 20 bytes */
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0;  /* 22 bytes */
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1; /* 24 bytes */
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;                  /* 34 bytes */
typedef struct { uint16_t d, s; int8_t qs[32]; } block_q8_1;               /* 36 bytes */
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } block_q4_K; /* 144 */
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } block_q6_K; /* 210 */
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } block_q8_K; /* 292 bytes */

_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K");

/* Scalar and AVX2 dot kernels (quant.c / quant_avx2.c). */
float steno_dot_f32_scalar(int n, const void *x, const void *y);
float steno_dot_f16_scalar(int n, const void *x, const void *y);
float steno_dot_bf16_scalar(int n, const void *x, const void *y);
float steno_dot_q4_0_scalar(int n, const void *x, const void *y);
float steno_dot_q4_1_scalar(int n, const void *x, const void *y);
float steno_dot_q5_0_scalar(int n, const void *x, const void *y);
float steno_dot_q5_1_scalar(int n, const void *x, const void *y);
float steno_dot_q8_0_scalar(int n, const void *x, const void *y);
float steno_dot_q4_K_scalar(int n, const void *x, const void *y);
float steno_dot_q6_K_scalar(int n, const void *x, const void *y);

#if defined(__x86_64__) || defined(__i386__)
#define STENO_HAVE_X86 1
float steno_dot_f16_avx2(int n, const void *x, const void *y);
void steno_f16_axpy_avx2(int n, float a, const void *x, float *y);
void steno_f16_to_f32_avx2(const void *x, float *y, int64_t n);
float steno_dot_q4_0_avx2(int n, const void *x, const void *y);
float steno_dot_q4_1_avx2(int n, const void *x, const void *y);
float steno_dot_q5_0_avx2(int n, const void *x, const void *y);
float steno_dot_q5_1_avx2(int n, const void *x, const void *y);
float steno_dot_q8_0_avx2(int n, const void *x, const void *y);
float steno_dot_q4_K_avx2(int n, const void *x, const void *y);
float steno_dot_q6_K_avx2(int n, const void *x, const void *y);
void steno_dot4_q4_0_avx2(int n, const void *x, const void *y, size_t ys, float *out);
void steno_dot4_q4_1_avx2(int n, const void *x, const void *y, size_t ys, float *out);
void steno_dot4_q5_0_avx2(int n, const void *x, const void *y, size_t ys, float *out);
void steno_dot4_q8_0_avx2(int n, const void *x, const void *y, size_t ys, float *out);
void steno_dot4_q4_K_avx2(int n, const void *x, const void *y, size_t ys, float *out);
void steno_dot4_q6_K_avx2(int n, const void *x, const void *y, size_t ys, float *out);
#endif

#endif
