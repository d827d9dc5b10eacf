/* f16_avx2.c — vec_attention_f16 (attention over float16 K/V: the Whisper decoder's self- and
 * cross-attention on the fast path) on AVX2 + FMA + F16C, compiled with target attributes so the
 * rest of the build stays baseline x86-64; its AVX-512 version is vec_avx512_attention_f16 in
 * streaming_avx512.c, the scalar one vec.c's. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#include "kernels/prefetch.h"
#include "kernels/simd_avx2.h"
#include "kernels/gemv/vec_impl.h"

/* vec_attention_f16: keys in blocks of 16 columns, each widened by ld_h16_scaled (2^-112) against
 * the query scaled by 2^112, so every product is exact; then the row's maximum, exponentials and
 * sum, and the values likewise with p scaled by 2^112. A query with |q| >= 2^15 (where the scaled
 * copy could overflow) runs the scalar kernel. */
AVX2 void vec_avx2_attention_f16(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv, int nk,
                                int dh, int nq, float *out, int out_stride) {
    if (dh % 16 || dh > 256 || nk > VEC_ATTENTION_F16_MAX_KEYS || nk <= 0 || daz_set()) {
        vec_scalar.attention_f16(q, q_stride, Kb, V, ldv, nk, dh, nq, out, out_stride);
        return;
    }
    float s[VEC_ATTENTION_F16_MAX_KEYS + 16] __attribute__((aligned(32)));
    float qs[256];
    const int nk16 = (nk + 15) & ~15;
    for (int i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * q_stride;
        float *o = out + (size_t)i * out_stride;
        int big = 0;
        for (int d = 0; d < dh; d++) {
            big |= !(fabsf(qi[d]) < 0x1p15f);
            qs[d] = qi[d] * 0x1p112f;
        }
        if (big) {
            vec_scalar.attention_f16(qi, q_stride, Kb, V, ldv, nk, dh, 1, o, out_stride);
            continue;
        }
        __m256 vmx = _mm256_set1_ps(-INFINITY);
        for (int j = 0; j < nk16; j += 16) {
            __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), t0 = _mm256_setzero_ps(),
                   t1 = _mm256_setzero_ps();
            const uint16_t *kp = Kb + (size_t)j * dh; /* block j/16: [dh][16] */
            if (j + 2 * 16 < nk16) vec_prefetch_bytes(kp + 2 * 16 * dh, sizeof(uint16_t) * 16 * dh);
            for (int d = 0; d < dh; d += 2, kp += 32) { /* two chains per half-block */
                __m256 k0, k1, k2, k3;
                ld_h16_scaled(kp, &k0, &k1);
                ld_h16_scaled(kp + 16, &k2, &k3);
                const __m256 q0 = _mm256_broadcast_ss(qs + d), q1 = _mm256_broadcast_ss(qs + d + 1);
                s0 = _mm256_fmadd_ps(q0, k0, s0);
                s1 = _mm256_fmadd_ps(q0, k1, s1);
                t0 = _mm256_fmadd_ps(q1, k2, t0);
                t1 = _mm256_fmadd_ps(q1, k3, t1);
            }
            s0 = _mm256_add_ps(s0, t0);
            s1 = _mm256_add_ps(s1, t1);
            _mm256_store_ps(s + j, s0);
            _mm256_store_ps(s + j + 8, s1);
        }
        for (int j = nk; j < nk16; j++) s[j] = -INFINITY;
        for (int j = 0; j < nk16; j += 8) vmx = _mm256_max_ps(vmx, _mm256_load_ps(s + j));
        const __m256 vm = _mm256_set1_ps(hmax8(vmx)), two112 = _mm256_set1_ps(0x1p112f);
        __m256 vl = _mm256_setzero_ps();
        for (int j = 0; j < nk16; j += 8) {
            const __m256 p = exp8(_mm256_sub_ps(_mm256_load_ps(s + j), vm));
            vl = _mm256_add_ps(vl, p);
            _mm256_store_ps(s + j, _mm256_mul_ps(p, two112));
        }
        const float l = hsum8(vl);
        __m256 acc[32];
        const int nv = dh / 8;
        for (int c = 0; c < nv; c++) acc[c] = _mm256_setzero_ps();
        const uint16_t *v = V;
        for (int j = 0; j < nk; j++, v += ldv) {
            const __m256 pj = _mm256_broadcast_ss(s + j);
            for (int c = 0; c < nv; c += 2) {
                __m256 v0, v1;
                ld_h16_scaled(v + 8 * c, &v0, &v1);
                acc[c] = _mm256_fmadd_ps(pj, v0, acc[c]);
                acc[c + 1] = _mm256_fmadd_ps(pj, v1, acc[c + 1]);
            }
        }
        const __m256 inv = _mm256_set1_ps(l > 0.0f ? 1.0f / l : 0.0f);
        for (int c = 0; c < nv; c++) _mm256_storeu_ps(o + 8 * c, _mm256_mul_ps(acc[c], inv));
    }
}

#endif
