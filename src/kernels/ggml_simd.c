/* ggml_simd.c — see ggml_simd.h. ggml_v_expf and the reductions are transcribed from llama.cpp
 * (MIT licence, ggml/src/ggml-cpu/vec.h, vec.cpp, simd-mappings.h); each function performs the same
 * IEEE operations in the same order as the original, which is what makes the results identical. */
#include "kernels/ggml_simd.h"

#include <math.h>
#include <string.h>

#include "kernels/quant.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TGT __attribute__((target("avx2,fma,f16c")))

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
    int i = 0;
    double sum = 0;
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

TGT void steno_ggml_attn_values(int n, const int32_t *pos, const uint16_t *const *v_rows, const float *w, int n_dims,
                                float *acc, float *out) {
    memset(acc, 0, sizeof(float) * 32 * (size_t)n_dims);
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
    /* GGML_F32x8_REDUCE per output dimension: lane L = 8j + l of accumulator j */
    for (int d = 0; d < n_dims; d++) {
        float x[4][8];
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 8; l++) x[j][l] = acc[(size_t)(8 * j + l) * n_dims + d];
        for (int l = 0; l < 8; l++) {
            x[0][l] = x[0][l] + x[2][l];
            x[1][l] = x[1][l] + x[3][l];
        }
        for (int l = 0; l < 8; l++) x[0][l] = x[0][l] + x[1][l];
        float t0[4];
        for (int l = 0; l < 4; l++) t0[l] = x[0][l] + x[0][l + 4];
        out[d] = (t0[0] + t0[1]) + (t0[2] + t0[3]);
    }
}

#else
int steno_ggml_exact_available(void) { return 0; }
float steno_ggml_dot_f16(int n, const uint16_t *x, const uint16_t *y) { (void)n; (void)x; (void)y; return 0; }
double steno_ggml_soft_max(int n, float *y, const float *x, float max) { (void)n; (void)y; (void)x; (void)max; return 0; }
void steno_ggml_swiglu(float *h, const float *g, const float *u, int n) { (void)h; (void)g; (void)u; (void)n; }
void steno_ggml_attn_values(int n, const int32_t *pos, const uint16_t *const *v_rows, const float *w, int n_dims,
                            float *acc, float *out) {
    (void)n; (void)pos; (void)v_rows; (void)w; (void)n_dims; (void)acc; (void)out;
}
#endif
