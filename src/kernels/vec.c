#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "kernels/vec_impl.h"

/* ---------------- scalar kernels (the portable reference) ---------------- */

static void gemv_f32_scalar(const float *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++) {
        const float *w = W + (size_t)r * n;
        float acc[8] = {0};
        int k = 0;
        for (; k + 8 <= n; k += 8)
            for (int i = 0; i < 8; i++) acc[i] += w[k + i] * x[k + i];
        float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
        for (; k < n; k++) s += w[k] * x[k];
        y[r] = (b ? b[r] : 0.0f) + s;
    }
}

static void gemv_f16_scalar(const uint16_t *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    for (int r = r0; r < r1; r++) {
        const uint16_t *w = W + (size_t)r * n;
        float acc[8] = {0};
        int k = 0;
        for (; k + 8 <= n; k += 8)
            for (int i = 0; i < 8; i++) acc[i] += steno_fp16_to_f32(w[k + i]) * x[k + i];
        float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
        for (; k < n; k++) s += steno_fp16_to_f32(w[k]) * x[k];
        y[r] = (b ? b[r] : 0.0f) + s;
    }
}

static void layernorm_scalar(const float *x, const float *gamma, const float *beta, int n, float *y) {
    float mean = 0.0f, var = 0.0f;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= n;
    const float inv = 1.0f / sqrtf(var + 1e-5f);
    for (int i = 0; i < n; i++) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
}

static void gelu_scalar(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}

#define ATT_BLOCK 64

static void attention_scalar(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv,
                             int nk, int dh, int nq, int causal, int q_pos0, float *out, int out_stride) {
    float s[ATT_BLOCK];
    for (int i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * q_stride;
        float *o = out + (size_t)i * out_stride;
        const int limit = causal ? (q_pos0 + i + 1 < nk ? q_pos0 + i + 1 : nk) : nk;
        float m = -INFINITY, l = 0.0f;
        for (int d = 0; d < dh; d++) o[d] = 0.0f;
        for (int j0 = 0; j0 < limit; j0 += ATT_BLOCK) {
            const int jn = limit - j0 < ATT_BLOCK ? limit - j0 : ATT_BLOCK;
            float bm = -INFINITY;
            for (int j = 0; j < jn; j++) {
                float acc = 0.0f;
                for (int d = 0; d < dh; d++) acc += qi[d] * Kt[(size_t)d * ldk + j0 + j];
                s[j] = acc;
                bm = acc > bm ? acc : bm;
            }
            if (bm > m) { /* a new running maximum rescales what was summed so far, once per block */
                const float scale = expf(m - bm);
                for (int d = 0; d < dh; d++) o[d] *= scale;
                l *= scale;
                m = bm;
            }
            for (int j = 0; j < jn; j++) {
                const float p = expf(s[j] - m);
                const float *v = V + (size_t)(j0 + j) * ldv;
                l += p;
                for (int d = 0; d < dh; d++) o[d] += p * v[d];
            }
        }
        const float inv = l > 0.0f ? 1.0f / l : 0.0f;
        for (int d = 0; d < dh; d++) o[d] *= inv;
    }
}

const vec_kernels vec_scalar = {gemv_f32_scalar, gemv_f16_scalar, layernorm_scalar, gelu_scalar,
                                attention_scalar};

/* ---------------- dispatch ---------------- */

static const vec_kernels *g_k = &vec_scalar;
static atomic_int g_init = 0;

int vec_init(void) {
    if (atomic_load(&g_init)) return g_k != &vec_scalar;
#if defined(__x86_64__) && defined(__GNUC__)
    const char *no = getenv("STENO_NO_SIMD");
    __builtin_cpu_init();
    if (!(no && *no && strcmp(no, "0") != 0) && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
        g_k = &vec_avx2;
#endif
    atomic_store(&g_init, 1);
    return g_k != &vec_scalar;
}

void vec_gemv(vec_dtype dt, const void *W, const float *b, const float *x, int n, int r0, int r1, float *y) {
    if (dt == VEC_F16) g_k->gemv_f16((const uint16_t *)W, b, x, n, r0, r1, y);
    else g_k->gemv_f32((const float *)W, b, x, n, r0, r1, y);
}

void vec_gemv_rows(vec_dtype dt, const void *W, const float *b, const float *X, int ldx, int nx, int n, int r0,
                   int r1, float *Y, int ldy) {
    const size_t row_bytes = (size_t)n * (dt == VEC_F16 ? 2 : 4);
    int block = (int)(8192 / (row_bytes ? row_bytes : 1)); /* ~8 KiB of weights: stays in L1 across inputs */
    if (block < 1) block = 1;
    for (int a = r0; a < r1; a += block) {
        const int e = a + block < r1 ? a + block : r1;
        for (int i = 0; i < nx; i++) vec_gemv(dt, W, b, X + (size_t)i * ldx, n, a, e, Y + (size_t)i * ldy);
    }
}

void vec_layernorm(const float *x, const float *gamma, const float *beta, int n, float *y) {
    g_k->layernorm(x, gamma, beta, n, y);
}

void vec_gelu(float *x, size_t n) { g_k->gelu(x, n); }

void vec_add(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

void vec_attention(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk, int dh,
                   int nq, int causal, int q_pos0, float *out, int out_stride) {
    g_k->attention(q, q_stride, Kt, ldk, V, ldv, nk, dh, nq, causal, q_pos0, out, out_stride);
}

void vec_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = steno_fp16_to_f32(src[i]);
}

void vec_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x;
        memcpy(&x, &src[i], 4);
        const uint32_t sign = (x >> 16) & 0x8000u;
        uint32_t absx = x & 0x7fffffffu;
        uint16_t h;
        if (absx >= 0x7f800000u) { /* inf / nan */
            h = (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
        } else if (absx >= 0x477ff000u) { /* rounds to >= 65520: overflow */
            h = (uint16_t)(sign | 0x7c00u);
        } else if (absx < 0x38800000u) { /* subnormal half (or zero) */
            float f;
            memcpy(&f, &absx, 4);
            h = (uint16_t)(sign | (uint16_t)lrintf(f * 16777216.0f)); /* 2^24: units of the smallest subnormal */
        } else {
            uint32_t mant = absx & 0x7fffffu, exp = (absx >> 23) - 127 + 15;
            uint32_t hm = mant >> 13, rem = mant & 0x1fffu;
            uint32_t v = (exp << 10) | hm;
            if (rem > 0x1000u || (rem == 0x1000u && (hm & 1u))) v++;
            h = (uint16_t)(sign | v);
        }
        dst[i] = h;
    }
}
