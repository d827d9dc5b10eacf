/* ggml_simd.c — see ggml_simd.h. ggml_v_expf and the reductions are transcribed from llama.cpp
 * (MIT licence, ggml/src/ggml-cpu/vec.h, vec.cpp, simd-mappings.h); each function performs the same
 * IEEE operations in the same order as the original, which is what makes the results identical. */
#include "kernels/ops/ggml_simd.h"

#include <math.h>
#include <string.h>

#include "kernels/quant/quant.h"
#include "kernels/quant/act.h"

#if defined(__x86_64__) || defined(__i386__)
#include "kernels/simd_avx2.h"
#define TGT AVX2

int steno_ggml_exact_available(void) { return strcmp(steno_kernels_isa(), "avx2") == 0; }

/* vec.h ggml_v_expf (AVX2 + FMA) */
TGT static inline __m256 v_expf(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b =
        _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
    const __m256i c =
        _mm256_castps_si256(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), n), _mm256_set1_ps(126), _CMP_GT_OQ));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    if (!_mm256_movemask_ps(_mm256_castsi256_ps(c))) return _mm256_fmadd_ps(j, k, k);
    const __m256i g = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)),
                                       _mm256_set1_epi32((int)0x82000000u));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
    const __m256i d =
        _mm256_castps_si256(_mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.f), n), _mm256_set1_ps(192), _CMP_GT_OQ));
    return _mm256_or_ps(
        _mm256_and_ps(_mm256_castsi256_ps(d), _mm256_mul_ps(s1, s1)),
        _mm256_andnot_ps(_mm256_castsi256_ps(d),
                         _mm256_or_ps(_mm256_and_ps(_mm256_castsi256_ps(c), _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1)),
                                      _mm256_andnot_ps(_mm256_castsi256_ps(c), _mm256_fmadd_ps(k, j, k)))));
}

/* GGML_F32x8_REDUCE of x[0..3] */
TGT static inline float reduce4(__m256 x0, __m256 x1, __m256 x2, __m256 x3) {
    x0 = _mm256_add_ps(x0, x2);
    x1 = _mm256_add_ps(x1, x3);
    x0 = _mm256_add_ps(x0, x1);
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(x0), _mm256_extractf128_ps(x0, 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    return _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
}

TGT float steno_ggml_dot_f16(int n, const uint16_t *x, const uint16_t *y) {
    double sumf = 0.0;
    const int np = n & ~31;
    __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < np; i += 32)
        for (int j = 0; j < 4; j++) {
            __m256 ax = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i + 8 * j)));
            __m256 ay = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i + 8 * j)));
            s[j] = _mm256_fmadd_ps(ax, ay, s[j]);
        }
    sumf = (double)reduce4(s[0], s[1], s[2], s[3]);
    for (int i = np; i < n; ++i) sumf += (double)(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
    return (float)sumf;
}

TGT double steno_ggml_soft_max(int n, float *y, const float *x, float max) {
    return steno_ggml_soft_max_from(n, y, x, max, 0.0);
}

TGT double steno_ggml_soft_max_from(int n, float *y, const float *x, float max, double sum) {
    int i = 0;
    for (; i + 7 < n; i += 8) {
        __m256 val = v_expf(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(max)));
        _mm256_storeu_ps(y + i, val);
        __m128 v2 = _mm_add_ps(_mm256_extractf128_ps(val, 1), _mm256_castps256_ps128(val));
        v2 = _mm_add_ps(v2, _mm_movehl_ps(v2, v2));
        v2 = _mm_add_ss(v2, _mm_movehdup_ps(v2));
        sum += (double)_mm_cvtss_f32(v2);
    }
    for (; i < n; ++i) {
        float val = expf(x[i] - max);
        sum += (double)val;
        y[i] = val;
    }
    return sum;
}

TGT void steno_ggml_swiglu(float *h, const float *g, const float *u, int n) {
    int i = 0;
    const __m256 one = _mm256_set1_ps(1), zero = _mm256_setzero_ps();
    for (; i + 7 < n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 e = v_expf(_mm256_sub_ps(zero, x));
        __m256 silu = _mm256_div_ps(x, _mm256_add_ps(one, e));
        _mm256_storeu_ps(h + i, _mm256_mul_ps(silu, _mm256_loadu_ps(u + i)));
    }
    for (; i < n; ++i) h[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* GGML_F32x8_REDUCE of the 32 lane accumulators, for 8 output dimensions at once: lane L = 8j + l
 * of accumulator j; the same additions in the same order as reduce4, element by element. */
TGT static inline void reduce_lanes8(const float *acc, size_t stride, float *out) {
    __m256 x0[8];
    for (int l = 0; l < 8; l++) {
        const __m256 a0 = _mm256_loadu_ps(acc + (size_t)(0 + l) * stride), a1 = _mm256_loadu_ps(acc + (size_t)(8 + l) * stride);
        const __m256 a2 = _mm256_loadu_ps(acc + (size_t)(16 + l) * stride), a3 = _mm256_loadu_ps(acc + (size_t)(24 + l) * stride);
        x0[l] = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
    }
    __m256 t0[4];
    for (int l = 0; l < 4; l++) t0[l] = _mm256_add_ps(x0[l], x0[l + 4]);
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(t0[0], t0[1]), _mm256_add_ps(t0[2], t0[3])));
}

TGT void steno_ggml_attn_values(int n, const int32_t *pos, const uint16_t *const *v_rows, const float *w, int n_dims,
                                float *acc, float *out) {
    memset(acc, 0, sizeof(float) * 32 * (size_t)n_dims);
    if (n_dims == 64) { /* the common head size: the row's 8 vectors stay in registers */
        for (int i = 0; i < n; i++) {
            if (w[i] == 0.0f) continue;
            float *a = acc + (size_t)(pos[i] & 31) * 64;
            const __m256 wv = _mm256_set1_ps(w[i]);
            const uint16_t *v = v_rows[i];
            for (int d = 0; d < 64; d += 8) {
                __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d)));
                _mm256_storeu_ps(a + d, _mm256_fmadd_ps(vv, wv, _mm256_loadu_ps(a + d)));
            }
        }
    } else {
        for (int i = 0; i < n; i++) {
            if (w[i] == 0.0f) continue; /* fma(v, 0, a) == a for finite v: skipping is exact */
            float *a = acc + (size_t)(pos[i] & 31) * n_dims;
            const __m256 wv = _mm256_set1_ps(w[i]);
            const uint16_t *v = v_rows[i];
            for (int d = 0; d < n_dims; d += 8) {
                __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + d)));
                _mm256_storeu_ps(a + d, _mm256_fmadd_ps(vv, wv, _mm256_loadu_ps(a + d)));
            }
        }
    }
    for (int d = 0; d < n_dims; d += 8) reduce_lanes8(acc + d, (size_t)n_dims, out + d);
}

TGT void steno_ggml_dot_f16_block(int n, const uint16_t *const *krows, int nr, const float *qf, size_t q_stride,
                                  int g, float scale, float *out, size_t out_stride) {
    if (n % 32 != 0 || n > 512 || nr > 8) {
        for (int r = 0; r < nr; r++) steno_ggml_dot_f16_multi(n, krows[r], qf, q_stride, g, scale, out + r, out_stride);
        return;
    }
    float kf[8 * 512];
    for (int r = 0; r < nr; r++)
        for (int i = 0; i < n; i += 8)
            _mm256_storeu_ps(kf + (size_t)r * n + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(krows[r] + i))));
    const __m256 sc = _mm256_set1_ps(scale);
    for (int h = 0; h < g; h++) {
        const float *q = qf + (size_t)h * q_stride;
        __m256 x[8];
        for (int r = 0; r < nr; r++) {
            const float *k = kf + (size_t)r * n;
            __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
            for (int i = 0; i < n; i += 32) {
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i), _mm256_loadu_ps(q + i), s0);
                s1 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i + 8), _mm256_loadu_ps(q + i + 8), s1);
                s2 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i + 16), _mm256_loadu_ps(q + i + 16), s2);
                s3 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i + 24), _mm256_loadu_ps(q + i + 24), s3);
            }
            x[r] = _mm256_add_ps(_mm256_add_ps(s0, s2), _mm256_add_ps(s1, s3)); /* reduce4's vertical adds */
        }
        for (int r = nr; r < 8; r++) x[r] = _mm256_setzero_ps();
        /* no tail: ggml's double sum is exactly the float reduction */
        float res[8];
        _mm256_storeu_ps(res, _mm256_mul_ps(hsum8x8(x), sc));
        for (int r = 0; r < nr; r++) out[(size_t)h * out_stride + r] = res[r];
    }
}

TGT void steno_ggml_geglu(float *h, const float *g, const float *u, int n) {
    const uint16_t *tab = steno_gelu_ggml_table();
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q))) { /* NaN: the scalar's canonical index */
            for (int k = 0; k < 8; k++) h[i + k] = steno_gelu_ggml(g[i + k]) * u[i + k];
            continue;
        }
        uint16_t idx[8], gv[8];
        _mm_storeu_si128((__m128i *)idx, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        for (int k = 0; k < 8; k++) gv[k] = tab[idx[k]];
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)gv));
        y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, hi, _CMP_GE_OQ));              /* x >= 10: x */
        y = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LE_OQ), y);                 /* x <= -10: 0 */
        _mm256_storeu_ps(h + i, _mm256_mul_ps(y, _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) h[i] = steno_gelu_ggml(g[i]) * u[i];
}

TGT void steno_ggml_dot_f16_multi(int n, const uint16_t *k, const float *qf, size_t q_stride, int g, float scale,
                                  float *out, size_t out_stride) {
    float kf[512];
    if (n > 512 || (n & 7)) {
        /* rare head sizes: one query at a time, from the halves (qf holds f16-exact values) */
        for (int h = 0; h < g; h++) {
            const float *q = qf + (size_t)h * q_stride;
            double sumf = 0.0;
            const int np = n & ~31;
            __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
            for (int i = 0; i < np; i += 32)
                for (int j = 0; j < 4; j++)
                    s[j] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i + 8 * j))),
                                           _mm256_loadu_ps(q + i + 8 * j), s[j]);
            sumf = (double)reduce4(s[0], s[1], s[2], s[3]);
            for (int i = np; i < n; ++i) sumf += (double)(_cvtsh_ss(k[i]) * q[i]);
            out[(size_t)h * out_stride] = (float)sumf * scale;
        }
        return;
    }
    for (int i = 0; i < n; i += 8) _mm256_storeu_ps(kf + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + i))));
    const int np = n & ~31;
    for (int h = 0; h < g; h++) {
        const float *q = qf + (size_t)h * q_stride;
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
        for (int i = 0; i < np; i += 32) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(kf + i), _mm256_loadu_ps(q + i), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(kf + i + 8), _mm256_loadu_ps(q + i + 8), s1);
            s2 = _mm256_fmadd_ps(_mm256_loadu_ps(kf + i + 16), _mm256_loadu_ps(q + i + 16), s2);
            s3 = _mm256_fmadd_ps(_mm256_loadu_ps(kf + i + 24), _mm256_loadu_ps(q + i + 24), s3);
        }
        double sumf = (double)reduce4(s0, s1, s2, s3);
        for (int i = np; i < n; ++i) sumf += (double)(kf[i] * q[i]);
        out[(size_t)h * out_stride] = (float)sumf * scale;
    }
}

/* float(half(v)) for 8 lanes; a NaN becomes the canonical quiet NaN of steno_round_f16 (vcvtps2ph
 * would keep its payload). */
TGT static inline __m256 round_f16_8(__m256 v) {
    const __m256 r = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (__builtin_expect(!_mm256_movemask_ps(nan), 1)) return r;
    const __m256 qnan = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)));
    return _mm256_blendv_ps(r, qnan, nan);
}

TGT static inline float round_f16_1(float v) {
    return v != v ? steno_round_f16(v) : _cvtsh_ss((unsigned short)_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
}

TGT void steno_ggml_round_f16_row(int n, const float *x, float *y) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, round_f16_8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) y[i] = round_f16_1(x[i]);
}

TGT void steno_ggml_probs_f16(int n, const float *dense, const int32_t *pos, int first, float inv, float *w) {
    if (pos[n - 1] - pos[0] == n - 1) { /* contiguous positions: dense[pos[0] - first ...] in order */
        const float *src = dense + (pos[0] - first);
        const __m256 iv = _mm256_set1_ps(inv);
        int k = 0;
        for (; k + 8 <= n; k += 8) _mm256_storeu_ps(w + k, round_f16_8(_mm256_mul_ps(_mm256_loadu_ps(src + k), iv)));
        for (; k < n; k++) w[k] = round_f16_1(src[k] * inv);
        return;
    }
    for (int k = 0; k < n; k++) w[k] = round_f16_1(dense[pos[k] - first] * inv);
}

#else
int steno_ggml_exact_available(void) { return 0; }
float steno_ggml_dot_f16(int n, const uint16_t *x, const uint16_t *y) { (void)n; (void)x; (void)y; return 0; }
double steno_ggml_soft_max(int n, float *y, const float *x, float max) { (void)n; (void)y; (void)x; (void)max; return 0; }
double steno_ggml_soft_max_from(int n, float *y, const float *x, float max, double sum) {
    (void)n; (void)y; (void)x; (void)max; return sum;
}
void steno_ggml_swiglu(float *h, const float *g, const float *u, int n) { (void)h; (void)g; (void)u; (void)n; }
void steno_ggml_attn_values(int n, const int32_t *pos, const uint16_t *const *v_rows, const float *w, int n_dims,
                            float *acc, float *out) {
    (void)n; (void)pos; (void)v_rows; (void)w; (void)n_dims; (void)acc; (void)out;
}
void steno_ggml_dot_f16_multi(int n, const uint16_t *k, const float *qf, size_t q_stride, int g, float scale,
                              float *out, size_t out_stride) {
    (void)n; (void)k; (void)qf; (void)q_stride; (void)g; (void)scale; (void)out; (void)out_stride;
}
void steno_ggml_round_f16_row(int n, const float *x, float *y) { (void)n; (void)x; (void)y; }
void steno_ggml_geglu(float *h, const float *g, const float *u, int n) { (void)h; (void)g; (void)u; (void)n; }
void steno_ggml_dot_f16_block(int n, const uint16_t *const *krows, int nr, const float *qf, size_t q_stride, int g,
                              float scale, float *out, size_t out_stride) {
    (void)n; (void)krows; (void)nr; (void)qf; (void)q_stride; (void)g; (void)scale; (void)out; (void)out_stride;
}
void steno_ggml_probs_f16(int n, const float *dense, const int32_t *pos, int first, float inv, float *w) {
    (void)n; (void)dense; (void)pos; (void)first; (void)inv; (void)w;
}
#endif
