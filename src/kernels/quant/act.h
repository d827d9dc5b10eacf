/* act.h — activation quantizers (float32 rows → q8_0 / q8_1 / q8_K blocks), scalar reference
 * and AVX2 versions, plus a row-range entry point for callers that split rows among threads.
 *
 * The scalar functions (quant.c) are the reference: llama.cpp ggml-cpu/arch/x86/quants.c
 * quantize_row_q8_0 / quantize_row_q8_1 (AVX path: d = amax/127, id = 127/amax, q = round half to
 * even of x·id) and ggml-quants.c quantize_row_q8_K_ref (iscale = −127/max with max the signed value
 * of largest magnitude, first occurrence; q = nearest_int(iscale·x), also half to even; d = 1/iscale;
 * bsums = sums of 16). The AVX2 functions (act_avx2.c) produce the same bytes for every input:
 * blocks holding a NaN or an infinity, or whose scale overflows (subnormal amax), take the scalar
 * code, so even corrupt activations give identical output. quant.c installs the AVX2 versions as the
 * from_float of STENO_T_Q8_0/Q8_1/Q8_K when the CPU has AVX2+FMA+F16C.
 * Thread-safety: all functions are pure (read x, write y).
 */
#ifndef STENO_KERNELS_QUANT_ACT_H
#define STENO_KERNELS_QUANT_ACT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/quant/quant.h"

/* Scalar references (quant.c). n: elements, a multiple of 32 (q8_0, q8_1) or 256 (q8_K). */
void steno_quantize_q8_0_scalar(const float *x, void *y, int64_t n);
void steno_quantize_q8_1_scalar(const float *x, void *y, int64_t n);
void steno_quantize_q8_K_scalar(const float *x, void *y, int64_t n);

#if defined(__x86_64__) || defined(__i386__)
/* AVX2 versions (act_avx2.c); callable only when the CPU has AVX2+FMA+F16C. */
void steno_quantize_q8_0_avx2(const float *x, void *y, int64_t n);
void steno_quantize_q8_1_avx2(const float *x, void *y, int64_t n);
void steno_quantize_q8_K_avx2(const float *x, void *y, int64_t n);
/* F16C conversions of n floats (any n): round to nearest even, as steno_f32_to_f16. */
void steno_f32_to_f16_row_f16c(const float *x, uint16_t *y, int64_t n);
/** ggml's GELU table (see steno_gelu_ggml): 65 536 halves indexed by the half of x, built once
 *  (thread-safe). For the vectorized GEGLU (ggml_simd.c). */
const uint16_t *steno_gelu_ggml_table(void);

#endif

/** Quantizes rows r0 ≤ r < r1 of X (float32, row r at X + r·x_stride floats, n elements each) into
 *  type `type`'s blocks at Y + r·y_stride bytes, with that type's from_float (the AVX2 one when
 *  dispatched). For a thread pool: give each worker a disjoint [r0, r1); results do not depend on
 *  the split. Returns 0, or -1 when the type has no from_float or n is not a multiple of its block. */
int steno_quantize_rows(int type, const float *X, size_t x_stride, void *Y, size_t y_stride, int64_t n, int r0,
                        int r1);

/** y[i] = half(x[i]) for n floats (round to nearest even, bit-identical to steno_f32_to_f16);
 *  F16C when available. */
void steno_f32_to_f16_row(const float *x, uint16_t *y, int64_t n);

/** ggml's GELU table (see steno_gelu_ggml): 65 536 halves indexed by the half of x, built once
 *  (thread-safe). For the vectorized GEGLU (ggml_simd.c). */
const uint16_t *steno_gelu_ggml_table(void);

#endif
