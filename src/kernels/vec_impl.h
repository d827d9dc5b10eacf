/* vec_impl.h — the kernel table behind vec.h (internal): one scalar and one AVX2 implementation. */
#ifndef STENO_KERNELS_VEC_IMPL_H
#define STENO_KERNELS_VEC_IMPL_H

#include "kernels/vec.h"

typedef struct vec_kernels {
    void (*gemv_f32)(const float *W, const float *b, const float *x, int n, int r0, int r1, float *y);
    void (*gemv_f16)(const uint16_t *W, const float *b, const float *x, int n, int r0, int r1, float *y);
    void (*layernorm)(const float *x, const float *gamma, const float *beta, int n, float *y);
    void (*gelu)(float *x, size_t n);
    void (*attention)(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk,
                      int dh, int nq, int causal, int q_pos0, float *out, int out_stride);
} vec_kernels;

extern const vec_kernels vec_scalar;
/* Defined only on x86-64 builds (vec_avx2.c). */
extern const vec_kernels vec_avx2;

#endif
