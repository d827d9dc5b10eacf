/* vec_impl.h — the kernel table behind vec.h (internal): a scalar, an AVX2 and an AVX-512 implementation. */
#ifndef STENO_KERNELS_VEC_IMPL_H
#define STENO_KERNELS_VEC_IMPL_H

#include "kernels/gemv/vec.h"

typedef struct vec_kernels {
    void (*gemv_f32)(const float *W, const float *b, const float *x, int n, int r0, int r1, float *y);
    void (*gemv_f16)(const uint16_t *W, const float *b, const float *x, int n, int r0, int r1, float *y);
    void (*layernorm)(const float *x, const float *gamma, const float *beta, int n, float *y);
    void (*gelu)(float *x, size_t n);
    void (*attention)(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk,
                      int dh, int nq, int causal, int q_pos0, float *out, int out_stride);
    void (*f32_to_f16_lanes)(const float *src, uint16_t *dst, size_t n);
    void (*attention_f16)(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv, int nk,
                          int dh, int nq, float *out, int out_stride);
    double (*sum_exp)(const float *x, int n, float m);
    void (*gemv_f16_rows)(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y);
    /* gemv_f16_rows for nx inputs X [nx][ldx], each listed row read once (NULL: one call per input) */
    void (*gemv_f16_rows_multi)(const uint16_t *W, const float *X, int ldx, int nx, int n, const int *rows,
                                const uint16_t *need, int count, float *const *Y);
    /* vec_gemv_rows over float16 weights, weight rows walked in blocks of `block`; input i's
     * outputs go to Y[i][r0..r1) (NULL: the generic loop of vec_gemv calls) */
    void (*gemv_f16_batch)(const uint16_t *W, const float *b, const float *X, int ldx, int nx, int n, int r0, int r1,
                           float *const *Y, int block);
    /* gemv_f16_batch's outputs from W's panel P (vec_f16_panel_pack; NULL: no panel kernel) */
    void (*gemv_f16_panel)(const uint16_t *W, const uint16_t *P, const float *b, const float *X, int ldx, int nx,
                           int n, int r0, int r1, float *const *Y);
    /* Σ_b sb[b]·(w_b·qx_b) over blocks of 32 (n a multiple of 32) */
    float (*dot_i8_blocks)(const int8_t *w, const int8_t *qx, const uint8_t *ax, const float *sb, int n);
    void (*screen_build_row)(const uint16_t *w16, int n, int8_t *q, float *s, float *g, float *c);
    void (*f16_to_f32)(const uint16_t *src, float *dst, size_t n);
} vec_kernels;

extern const vec_kernels vec_scalar;
/* Defined only on x86-64 builds (vec_avx2.c). */
extern const vec_kernels vec_avx2;
/* vec_avx2 with the float16 GEMVs and GELU of vec_avx512.c and the attention of streaming_avx512.c (x86-64 builds only; AVX512F/BW/DQ/VL CPUs) */
extern const vec_kernels vec_avx512;
void vec_avx512_gemv_f16(const uint16_t *W, const float *b, const float *x, int n, int r0, int r1, float *y);
void vec_avx512_gemv_f16_rows(const uint16_t *W, const float *x, int n, const int *rows, int count, float *y);
void vec_avx512_gemv_f16_rows_multi(const uint16_t *W, const float *X, int ldx, int nx, int n, const int *rows,
                                    const uint16_t *need, int count, float *const *Y);
void vec_avx512_gelu(float *x, size_t n);
void vec_avx512_attention_f16(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv, int nk,
                              int dh, int nq, float *out, int out_stride);
/* vec_attention_f16 on AVX2 (attention/f16_avx2.c). */
void vec_avx2_attention_f16(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv, int nk,
                            int dh, int nq, float *out, int out_stride);
/* The streaming kernels of vec_attention (attention/streaming_impl.h), bit-identical. */
void vec_avx2_attention(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk,
                        int dh, int nq, int causal, int q_pos0, float *out, int out_stride);
void vec_avx512_attention(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk,
                          int dh, int nq, int causal, int q_pos0, float *out, int out_stride);
/* The whole-row path of vec_attention (whole_rows.c): not causal, nk <= VEC_ATT_ROW_MAX,
 * dh a multiple of 16 up to 256; the two versions give the same bits. */
#define VEC_ATT_ROW_MAX 1536
#define VEC_ATT_ROWS(causal, nk, dh) (!(causal) && (nk) <= VEC_ATT_ROW_MAX && (dh) % 16 == 0 && (dh) <= 256)
void vec_avx2_attention_rows(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk,
                             int dh, int nq, float *out, int out_stride);
void vec_avx512_attention_rows(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv,
                               int nk, int dh, int nq, float *out, int out_stride);
void vec_avx512_gemv_f16_batch(const uint16_t *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                               int r1, float *const *Y, int block);
void vec_avx512_gemv_f16_panel(const uint16_t *W, const uint16_t *P, const float *b, const float *X, int ldx,
                               int nx, int n, int r0, int r1, float *const *Y);

#endif
