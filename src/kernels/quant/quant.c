/* quant.c — ggml types: dequantization, activation quantization, scalar dot kernels, dispatch.
 * Sources: llama.cpp ggml/src/ggml-quants.c (dequantize_row_*, quantize_row_q8_K_ref),
 * ggml/src/ggml-cpu/arch/x86/quants.c (quantize_row_q8_0/q8_1: id = 127/amax, round half to even)
 * and ggml/src/ggml-cpu/quants.c (ggml_vec_dot_*_generic). See quant.h. */
#include "kernels/quant/quant.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/fp16.h"
#include "kernels/quant/act.h"
#include "kernels/quant/blocks.h"

#define H2F(h) steno_fp16_to_f32(h)

/* ------------------------------------------------------------------------------------------- */
/* Half / bfloat16 conversion                                                                    */

uint16_t steno_f32_to_f16(float f) {
    /* Round to nearest even, the same bits as F16C's vcvtps2ph with rounding mode 0 and as
     * ggml's ggml_compute_fp32_to_fp16 (Maratyszcza's FP16 library). */
    const float scale_to_inf = 0x1.0p+112f;
    const float scale_to_zero = 0x1.0p-110f;
    uint32_t w;
    memcpy(&w, &f, 4);
    float base = (fabsf(f) * scale_to_inf) * scale_to_zero;
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    uint32_t bbits = (bias >> 1) + 0x07800000u;
    float bf;
    memcpy(&bf, &bbits, 4);
    base = bf + base;
    uint32_t bits;
    memcpy(&bits, &base, 4);
    const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
    const uint32_t mantissa_bits = bits & 0x00000FFFu;
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

uint16_t steno_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 64); /* quiet NaN */
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

float steno_round_f16(float f) { return H2F(steno_f32_to_f16(f)); }

/* ggml's GELU table (ggml-cpu.c ggml_cpu_init): table[h] = half(gelu(float(h))) with gelu as
 * llama.cpp's build evaluates 0.5x(1 + tanh(√(2/π)·x·(1 + 0.044715x²))): the inner 1 + a·x·x fused
 * (fma(a·x, x, 1)), checked against all 65 536 entries of libggml-cpu's table. */
static uint16_t g_gelu_table[1 << 16];
static pthread_once_t g_gelu_once = PTHREAD_ONCE_INIT;

static void init_gelu_table(void) {
    const float GELU_COEF_A = 0.044715f;
    const float SQRT_2_OVER_PI = 0.79788456080286535587989211986876f;
    for (int i = 0; i < (1 << 16); i++) {
        float f = H2F((uint16_t)i);
        float g = 0.5f * f * (1.0f + tanhf(SQRT_2_OVER_PI * f * fmaf(GELU_COEF_A * f, f, 1.0f)));
        g_gelu_table[i] = steno_f32_to_f16(g);
    }
}

const uint16_t *steno_gelu_ggml_table(void) {
    pthread_once(&g_gelu_once, init_gelu_table);
    return g_gelu_table;
}

float steno_gelu_ggml(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    pthread_once(&g_gelu_once, init_gelu_table);
    return H2F(g_gelu_table[steno_f32_to_f16(x)]);
}

/* ------------------------------------------------------------------------------------------- */
/* Dequantization (ggml-quants.c dequantize_row_*)                                               */

static void f32_to_float(const void *vx, float *y, int64_t n) { memcpy(y, vx, (size_t)n * 4); }

static void f16_to_float(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, x + 2 * i, 2);
        y[i] = H2F(h);
    }
}

static void bf16_to_float(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, x + 2 * i, 2);
        y[i] = steno_bf16_to_f32(h);
    }
}

static void q4_0_to_float(const void *vx, float *y, int64_t n) {
    const block_q4_0 *x = vx;
    for (int64_t i = 0; i < n / 32; i++) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < 16; j++) {
            y[i * 32 + j] = ((x[i].qs[j] & 0x0F) - 8) * d;
            y[i * 32 + j + 16] = ((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

static void q4_1_to_float(const void *vx, float *y, int64_t n) {
    const block_q4_1 *x = vx;
    for (int64_t i = 0; i < n / 32; i++) {
        const float d = H2F(x[i].d), m = H2F(x[i].m);
        for (int j = 0; j < 16; j++) {
            y[i * 32 + j] = (x[i].qs[j] & 0x0F) * d + m;
            y[i * 32 + j + 16] = (x[i].qs[j] >> 4) * d + m;
        }
    }
}

static void q5_0_to_float(const void *vx, float *y, int64_t n) {
    const block_q5_0 *x = vx;
    for (int64_t i = 0; i < n / 32; i++) {
        const float d = H2F(x[i].d);
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
            const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10;
            const uint8_t xh1 = ((qh >> (j + 12))) & 0x10;
            y[i * 32 + j] = (((x[i].qs[j] & 0x0F) | xh0) - 16) * d;
            y[i * 32 + j + 16] = (((x[i].qs[j] >> 4) | xh1) - 16) * d;
        }
    }
}

static void q5_1_to_float(const void *vx, float *y, int64_t n) {
    const block_q5_1 *x = vx;
    for (int64_t i = 0; i < n / 32; i++) {
        const float d = H2F(x[i].d), m = H2F(x[i].m);
        uint32_t qh;
        memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; j++) {
            const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10;
            const uint8_t xh1 = ((qh >> (j + 12))) & 0x10;
            y[i * 32 + j] = ((x[i].qs[j] & 0x0F) | xh0) * d + m;
            y[i * 32 + j + 16] = ((x[i].qs[j] >> 4) | xh1) * d + m;
        }
    }
}

static void q8_0_to_float(const void *vx, float *y, int64_t n) {
    const block_q8_0 *x = vx;
    for (int64_t i = 0; i < n / 32; i++) {
        const float d = H2F(x[i].d);
        for (int j = 0; j < 32; j++) y[i * 32 + j] = x[i].qs[j] * d;
    }
}

/* Unpacks the 8 6-bit scales and 8 6-bit mins of a q4_K/q5_K super-block (get_scale_min_k4). */
static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
    }
}

static void q4_K_to_float(const void *vx, float *y, int64_t n) {
    const block_q4_K *x = vx;
    for (int64_t i = 0; i < n / 256; i++) {
        const uint8_t *q = x[i].qs;
        const float d = H2F(x[i].d), min = H2F(x[i].dmin);
        int is = 0;
        uint8_t sc, m;
        for (int j = 0; j < 256; j += 64) {
            scale_min_k4(is + 0, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            scale_min_k4(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
            q += 32;
            is += 2;
        }
    }
}

static void q6_K_to_float(const void *vx, float *y, int64_t n) {
    const block_q6_K *x = vx;
    for (int64_t i = 0; i < n / 256; i++) {
        const float d = H2F(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int nn = 0; nn < 256; nn += 128) {
            for (int l = 0; l < 32; ++l) {
                int is = l / 16;
                const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

/* ------------------------------------------------------------------------------------------- */
/* Activation quantization                                                                       */

static void f32_from_float(const float *x, void *y, int64_t n) { memcpy(y, x, (size_t)n * 4); }

static void f16_from_float(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = steno_f32_to_f16(x[i]);
        memcpy(y + 2 * i, &h, 2);
    }
}

#ifdef STENO_HAVE_X86
static void f16_from_float_f16c(const float *x, void *vy, int64_t n) { steno_f32_to_f16_row_f16c(x, vy, n); }
#endif

static void bf16_from_float(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = steno_f32_to_bf16(x[i]);
        memcpy(y + 2 * i, &h, 2);
    }
}

/* Rounds half to even into int8; NaN (from a corrupt model) becomes 0, never undefined behaviour. */
static inline int8_t round_i8(float v) {
    if (!(v == v)) return 0;
    v = nearbyintf(v);
    return (int8_t)(v > 127.f ? 127.f : v < -128.f ? -128.f : v);
}

/* ggml-cpu/arch/x86/quants.c quantize_row_q8_0 (AVX path): d = amax/127, id = 127/amax,
 * q = round-half-even(x*id). nearbyintf rounds half to even in the default rounding mode. */
void steno_quantize_q8_0_scalar(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / 32; i++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[i * 32 + j]));
        const float d = amax / 127.f;
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        y[i].d = steno_f32_to_f16(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = round_i8(x[i * 32 + j] * id);
    }
}

void steno_quantize_q8_1_scalar(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / 32; i++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[i * 32 + j]));
        const float d = amax / 127.f;
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        y[i].d = steno_f32_to_f16(d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            y[i].qs[j] = round_i8(x[i * 32 + j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = steno_f32_to_f16(d * (float)sum);
    }
}

static inline int nearest_int(float fval) {
    if (!(fabsf(fval) <= 4194303.f)) return fval > 0 ? 127 : fval < 0 ? -128 : 0; /* inf/NaN: corrupt input */
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

/* ggml-quants.c quantize_row_q8_K_ref (also what the x86 CPU backend calls). */
void steno_quantize_q8_K_scalar(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / 256; i++) {
        float max = 0, amax = 0;
        for (int j = 0; j < 256; ++j) {
            float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            y[i].d = 0;
            memset(y[i].qs, 0, 256);
            memset(y[i].bsums, 0, sizeof y[i].bsums);
            x += 256;
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < 256; ++j) {
            int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? (v > -128 ? v : -128) : 127);
        }
        for (int j = 0; j < 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[j * 16 + ii];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
        x += 256;
    }
}

/* ------------------------------------------------------------------------------------------- */
/* Scalar dot products (ggml-cpu/quants.c ggml_vec_dot_*_generic)                                */

float steno_dot_f32_scalar(int n, const void *vx, const void *vy) {
    /* Sequential float sum, as llama2.c run.c matmul(): the llama2.c golden depends on it. */
    const float *x = vx, *y = vy;
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

float steno_dot_f16_scalar(int n, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)(H2F(x[i]) * H2F(y[i]));
    return (float)s;
}

float steno_dot_bf16_scalar(int n, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)(steno_bf16_to_f32(x[i]) * steno_bf16_to_f32(y[i]));
    return (float)s;
}

float steno_dot_q4_0_scalar(int n, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int ib = 0; ib < n / 32; ++ib) {
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi0 += ((x[ib].qs[j] & 0x0F) - 8) * y[ib].qs[j];
            sumi1 += ((x[ib].qs[j] >> 4) - 8) * y[ib].qs[j + 16];
        }
        sumf += (sumi0 + sumi1) * H2F(x[ib].d) * H2F(y[ib].d);
    }
    return sumf;
}

float steno_dot_q4_1_scalar(int n, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float sumf = 0;
    for (int ib = 0; ib < n / 32; ++ib) {
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            sumi0 += (x[ib].qs[j] & 0x0F) * y[ib].qs[j];
            sumi1 += (x[ib].qs[j] >> 4) * y[ib].qs[j + 16];
        }
        sumf += (H2F(x[ib].d) * H2F(y[ib].d)) * (sumi0 + sumi1) + H2F(x[ib].m) * H2F(y[ib].s);
    }
    return sumf;
}

float steno_dot_q5_0_scalar(int n, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int ib = 0; ib < n / 32; ++ib) {
        uint32_t qh;
        memcpy(&qh, x[ib].qh, 4);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            const uint8_t xh0 = ((qh & (1u << (j + 0))) >> (j + 0)) << 4;
            const uint8_t xh1 = ((qh & (1u << (j + 16))) >> (j + 12));
            const int32_t x0 = (int8_t)(((x[ib].qs[j] & 0x0F) | xh0) - 16);
            const int32_t x1 = (int8_t)(((x[ib].qs[j] >> 4) | xh1) - 16);
            sumi0 += x0 * y[ib].qs[j];
            sumi1 += x1 * y[ib].qs[j + 16];
        }
        sumf += (H2F(x[ib].d) * H2F(y[ib].d)) * (sumi0 + sumi1);
    }
    return sumf;
}

float steno_dot_q5_1_scalar(int n, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    float sumf = 0;
    for (int ib = 0; ib < n / 32; ++ib) {
        uint32_t qh;
        memcpy(&qh, x[ib].qh, 4);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < 16; ++j) {
            const uint8_t xh0 = ((qh >> (j + 0)) << 4) & 0x10;
            const uint8_t xh1 = ((qh >> (j + 12))) & 0x10;
            const int32_t x0 = (x[ib].qs[j] & 0xF) | xh0;
            const int32_t x1 = (x[ib].qs[j] >> 4) | xh1;
            sumi0 += x0 * y[ib].qs[j];
            sumi1 += x1 * y[ib].qs[j + 16];
        }
        sumf += (H2F(x[ib].d) * H2F(y[ib].d)) * (sumi0 + sumi1) + H2F(x[ib].m) * H2F(y[ib].s);
    }
    return sumf;
}

float steno_dot_q8_0_scalar(int n, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float sumf = 0;
    for (int ib = 0; ib < n / 32; ++ib) {
        int sumi = 0;
        for (int j = 0; j < 32; j++) sumi += x[ib].qs[j] * y[ib].qs[j];
        sumf += sumi * (H2F(x[ib].d) * H2F(y[ib].d));
    }
    return sumf;
}

float steno_dot_q4_K_scalar(int n, const void *vx, const void *vy) {
    /* llama.cpp's repacked q4_K×8 GEMV arithmetic (see quant_avx2.c): exact integer sums per
     * super-block, fused into the float accumulators; bit-identical to the AVX2 kernel. */
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    float acc = 0, accm = 0;
    for (int i = 0; i < n / 256; ++i) {
        const uint8_t *q4 = x[i].qs;
        const int8_t *q8 = y[i].qs;
        int32_t sumi = 0, summ = 0;
        for (int j = 0; j < 4; ++j) { /* 4 × 64 elements: low nibbles then high nibbles */
            uint8_t sc0, m0, sc1, m1;
            scale_min_k4(2 * j + 0, x[i].scales, &sc0, &m0);
            scale_min_k4(2 * j + 1, x[i].scales, &sc1, &m1);
            int32_t s0 = 0, s1 = 0;
            for (int l = 0; l < 32; ++l) {
                s0 += (q4[l] & 0xF) * q8[l];
                s1 += (q4[l] >> 4) * q8[l + 32];
            }
            sumi += sc0 * s0 + sc1 * s1;
            summ += m0 * (y[i].bsums[4 * j + 0] + y[i].bsums[4 * j + 1]) +
                    m1 * (y[i].bsums[4 * j + 2] + y[i].bsums[4 * j + 3]);
            q4 += 32;
            q8 += 64;
        }
        acc = fmaf((float)sumi, H2F(x[i].d) * y[i].d, acc);
        accm = fmaf((float)summ, H2F(x[i].dmin) * y[i].d, accm);
    }
    return acc - accm;
}

float steno_dot_q6_K_scalar(int n, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    float sumf = 0;
    for (int i = 0; i < n / 256; ++i) {
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *q8 = y[i].qs, *sc = x[i].scales;
        int32_t sumi = 0;
        for (int nn = 0; nn < 256; nn += 128) {
            int32_t s[8] = {0};
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                s[is + 0] += q1 * q8[l + 0];
                s[is + 2] += q2 * q8[l + 32];
                s[is + 4] += q3 * q8[l + 64];
                s[is + 6] += q4 * q8[l + 96];
            }
            for (int k = 0; k < 8; k++) sumi += sc[k] * s[k];
            ql += 64;
            qh += 32;
            q8 += 128;
            sc += 8;
        }
        sumf += H2F(x[i].d) * y[i].d * (float)sumi;
    }
    return sumf;
}

/* ------------------------------------------------------------------------------------------- */
/* Traits and dispatch                                                                           */

static steno_type_traits g_traits[STENO_T_COUNT] = {
    [STENO_T_F32] = {"f32", 1, 4, STENO_T_F32, f32_to_float, f32_from_float, steno_dot_f32_scalar},
    [STENO_T_F16] = {"f16", 1, 2, STENO_T_F16, f16_to_float, f16_from_float, steno_dot_f16_scalar},
    [STENO_T_BF16] = {"bf16", 1, 2, STENO_T_BF16, bf16_to_float, bf16_from_float,
                      steno_dot_bf16_scalar},
    [STENO_T_Q4_0] = {"q4_0", 32, 18, STENO_T_Q8_0, q4_0_to_float, NULL, steno_dot_q4_0_scalar},
    [STENO_T_Q4_1] = {"q4_1", 32, 20, STENO_T_Q8_1, q4_1_to_float, NULL, steno_dot_q4_1_scalar},
    [STENO_T_Q5_0] = {"q5_0", 32, 22, STENO_T_Q8_0, q5_0_to_float, NULL, steno_dot_q5_0_scalar},
    [STENO_T_Q5_1] = {"q5_1", 32, 24, STENO_T_Q8_1, q5_1_to_float, NULL, steno_dot_q5_1_scalar},
    [STENO_T_Q8_0] = {"q8_0", 32, 34, STENO_T_Q8_0, q8_0_to_float, steno_quantize_q8_0_scalar,
                      steno_dot_q8_0_scalar},
    [STENO_T_Q8_1] = {"q8_1", 32, 36, -1, NULL, steno_quantize_q8_1_scalar, NULL},
    [STENO_T_Q4_K] = {"q4_K", 256, 144, STENO_T_Q8_K, q4_K_to_float, NULL, steno_dot_q4_K_scalar},
    [STENO_T_Q6_K] = {"q6_K", 256, 210, STENO_T_Q8_K, q6_K_to_float, NULL, steno_dot_q6_K_scalar},
    [STENO_T_Q8_K] = {"q8_K", 256, 292, -1, NULL, steno_quantize_q8_K_scalar, NULL},
};

static int g_isa = -1; /* 0 scalar, 1 avx2 */

static void init_dispatch(void) {
    if (g_isa >= 0) return;
    int isa = 0;
#ifdef STENO_HAVE_X86
    const char *e = getenv("STENO_NO_AVX2");
    if (!(e && *e && strcmp(e, "0") != 0) && steno_cpu_has_avx2_fma_f16c()) isa = 1;
    if (isa) {
        g_traits[STENO_T_F16].vec_dot = steno_dot_f16_avx2;
        g_traits[STENO_T_F16].to_float = steno_f16_to_f32_avx2;
        g_traits[STENO_T_Q4_0].vec_dot = steno_dot_q4_0_avx2;
        g_traits[STENO_T_Q4_1].vec_dot = steno_dot_q4_1_avx2;
        g_traits[STENO_T_Q5_0].vec_dot = steno_dot_q5_0_avx2;
        g_traits[STENO_T_Q5_1].vec_dot = steno_dot_q5_1_avx2;
        g_traits[STENO_T_Q8_0].vec_dot = steno_dot_q8_0_avx2;
        g_traits[STENO_T_Q4_K].vec_dot = steno_dot_q4_K_avx2;
        g_traits[STENO_T_Q6_K].vec_dot = steno_dot_q6_K_avx2;
        g_traits[STENO_T_Q4_0].vec_dot4 = steno_dot4_q4_0_avx2;
        g_traits[STENO_T_Q4_1].vec_dot4 = steno_dot4_q4_1_avx2;
        g_traits[STENO_T_Q5_0].vec_dot4 = steno_dot4_q5_0_avx2;
        g_traits[STENO_T_Q8_0].vec_dot4 = steno_dot4_q8_0_avx2;
        g_traits[STENO_T_Q4_K].vec_dot4 = steno_dot4_q4_K_avx2;
        g_traits[STENO_T_Q6_K].vec_dot4 = steno_dot4_q6_K_avx2;
        /* activation quantizers: byte-identical to the scalar ones (act.h) */
        g_traits[STENO_T_Q8_0].from_float = steno_quantize_q8_0_avx2;
        g_traits[STENO_T_Q8_1].from_float = steno_quantize_q8_1_avx2;
        g_traits[STENO_T_Q8_K].from_float = steno_quantize_q8_K_avx2;
        g_traits[STENO_T_F16].from_float = f16_from_float_f16c;
    }
#endif
    g_isa = isa;
}

void steno_f16_axpy(int n, float a, const void *vx, float *y) {
    if (g_isa < 0) init_dispatch();
#ifdef STENO_HAVE_X86
    if (g_isa == 1) {
        steno_f16_axpy_avx2(n, a, vx, y);
        return;
    }
#endif
    const uint8_t *x = vx;
    for (int i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, x + 2 * i, 2);
        y[i] += a * H2F(h);
    }
}

void steno_f32_to_f16_row(const float *x, uint16_t *y, int64_t n) {
    if (g_isa < 0) init_dispatch();
#ifdef STENO_HAVE_X86
    if (g_isa == 1) {
        steno_f32_to_f16_row_f16c(x, y, n);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) y[i] = steno_f32_to_f16(x[i]);
}

int steno_quantize_rows(int type, const float *X, size_t x_stride, void *Y, size_t y_stride, int64_t n, int r0,
                        int r1) {
    const steno_type_traits *t = steno_type_get(type);
    if (!t || !t->from_float || n % t->block_size != 0) return -1;
    for (int r = r0; r < r1; r++) t->from_float(X + (size_t)r * x_stride, (uint8_t *)Y + (size_t)r * y_stride, n);
    return 0;
}

const steno_type_traits *steno_type_get(int type) {
    if (type < 0 || type >= STENO_T_COUNT || g_traits[type].name == NULL) return NULL;
    if (g_isa < 0) {
        /* Benign race: every thread computes the same table. Models call this at load time. */
        init_dispatch();
    }
    return &g_traits[type];
}

const char *steno_kernels_isa(void) {
    init_dispatch();
    return g_isa == 1 ? "avx2" : "scalar";
}

const char *steno_type_name(int type) {
    static const char *names[] = {
        [0] = "f32",   [1] = "f16",   [2] = "q4_0",    [3] = "q4_1",    [6] = "q5_0",
        [7] = "q5_1",  [8] = "q8_0",  [9] = "q8_1",    [10] = "q2_K",   [11] = "q3_K",
        [12] = "q4_K", [13] = "q5_K", [14] = "q6_K",   [15] = "q8_K",   [16] = "iq2_xxs",
        [17] = "iq2_xs", [18] = "iq3_xxs", [19] = "iq1_s", [20] = "iq4_nl", [21] = "iq3_s",
        [22] = "iq2_s", [23] = "iq4_xs", [24] = "i8", [25] = "i16", [26] = "i32", [27] = "i64",
        [28] = "f64", [29] = "iq1_m", [30] = "bf16", [34] = "tq1_0", [35] = "tq2_0",
        [39] = "mxfp4"};
    static _Thread_local char buf[32];
    if (type >= 0 && type < (int)(sizeof names / sizeof names[0]) && names[type]) return names[type];
    snprintf(buf, sizeof buf, "type %d", type);
    return buf;
}

size_t steno_row_size(int type, int64_t n) {
    const steno_type_traits *t = steno_type_get(type);
    if (!t || n < 0 || n % t->block_size != 0) return 0;
    return (size_t)(n / t->block_size) * t->type_size;
}
