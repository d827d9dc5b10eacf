/* streaming_avx2.c — vec_attention (streaming-softmax attention over float32 K/V, see
 * streaming_impl.h) on 8-lane AVX2 + FMA registers, compiled with target attributes so the rest of
 * the build stays baseline x86-64. The reference for the bits of streaming_avx512.c. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#include "kernels/attention/score_tile.h"
#include "kernels/simd_avx2.h"
#include "kernels/gemv/vec_impl.h"

/* o[0..8nv) = o·scale + Σ_{j<n} p[j]·V[j]; inlined with nv a constant (8 for dh 64) so the
 * accumulators stay in registers. */
AVX2 static inline __attribute__((always_inline)) void pv_accumulate(float *o, float scale, const float *p,
                                                                     const float *V, int ldv, int n, int nv) {
    __m256 acc[32];
    const __m256 vs = _mm256_set1_ps(scale);
    for (int c = 0; c < nv; c++) acc[c] = _mm256_mul_ps(_mm256_loadu_ps(o + 8 * c), vs);
    for (int j = 0; j < n; j++, V += ldv) {
        const __m256 pj = _mm256_broadcast_ss(p + j);
        for (int c = 0; c < nv; c++) acc[c] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(V + 8 * c), acc[c]);
    }
    for (int c = 0; c < nv; c++) _mm256_storeu_ps(o + 8 * c, acc[c]);
}

/* The same sums for the qn queries of a full tile at once (dh a multiple of 16):
 * o_a = o_a·scale_a + Σ_{j<n} p_a[j]·V[j], by pairs of 8-float columns, so each V row is read
 * once per tile instead of once per query — the per-query loop is bound by its loads (9 per 8
 * FMAs), this one does 12 FMAs per 8 loads. Per output element the operations and their order are
 * pv_accumulate's, so the results are bit-identical. */
AVX2 static inline __attribute__((always_inline)) void pv_tile(float *const *o, const float *scale,
                                                               float p[][ATT_BLOCK], const float *V, int ldv,
                                                               int n, int nv, int qn) {
    for (int c0 = 0; c0 < nv; c0 += 2) {
        __m256 a0[ATT_QB], a1[ATT_QB];
        for (int a = 0; a < qn; a++) {
            const __m256 vs = _mm256_set1_ps(scale[a]);
            a0[a] = _mm256_mul_ps(_mm256_loadu_ps(o[a] + 8 * c0), vs);
            a1[a] = _mm256_mul_ps(_mm256_loadu_ps(o[a] + 8 * c0 + 8), vs);
        }
        const float *v = V + 8 * c0;
        for (int j = 0; j < n; j++, v += ldv) {
            const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
            for (int a = 0; a < qn; a++) {
                const __m256 pj = _mm256_broadcast_ss(&p[a][j]);
                a0[a] = _mm256_fmadd_ps(pj, v0, a0[a]);
                a1[a] = _mm256_fmadd_ps(pj, v1, a1[a]);
            }
        }
        for (int a = 0; a < qn; a++) {
            _mm256_storeu_ps(o[a] + 8 * c0, a0[a]);
            _mm256_storeu_ps(o[a] + 8 * c0 + 8, a1[a]);
        }
    }
}

/* Softmax step of query row p (scores of keys [0, jl) of this block) against the running (m, l):
 * p becomes the probabilities, zero from jl up to jl rounded to 8. Returns the rescale factor of
 * the previous output. */
AVX2 static inline __attribute__((always_inline)) float softmax_block(float *p, int jl, float *m, float *l) {
    const int jr = (jl + 7) & ~7;
    for (int j = jl; j < jr; j++) p[j] = -INFINITY;
    __m256 vmx = _mm256_set1_ps(-INFINITY);
    for (int j = 0; j < jr; j += 8) vmx = _mm256_max_ps(vmx, _mm256_load_ps(&p[j]));
    const float bm = hmax8(vmx);
    float scale = 1.0f;
    if (bm > *m) {
        scale = expf(*m - bm);
        *l *= scale;
        *m = bm;
    }
    const __m256 vm = _mm256_set1_ps(*m);
    __m256 vl = _mm256_setzero_ps();
    /* s − m <= 0 (m is the running maximum): exp8_nonpos, then the padding past the query's last
     * key back to an exact 0, as exp8 gives for −inf */
    for (int j = 0; j < jr; j += 8) {
        __m256 pj = exp8_nonpos(_mm256_sub_ps(_mm256_load_ps(&p[j]), vm));
        _mm256_store_ps(&p[j], pj);
        if (j + 8 > jl) {
            for (int k = jl; k < j + 8; k++) p[k] = 0.0f;
            pj = _mm256_load_ps(&p[j]);
        }
        vl = _mm256_add_ps(vl, pj);
    }
    *l += hsum8(vl);
    return scale;
}

#define ST_TGT AVX2
#define ST_NAME vec_avx2_attention
#define ST_LANES 8
#define ST_VEC __m256
#define ST_ZERO() _mm256_setzero_ps()
#define ST_SET1(x) _mm256_set1_ps(x)
#define ST_LOADU(p) _mm256_loadu_ps(p)
#define ST_STOREU(p, v) _mm256_storeu_ps(p, v)
#define ST_MUL(a, b) _mm256_mul_ps(a, b)
#define ST_ALIGN 32
#define ST_FALLBACK vec_scalar.attention
#define ST_ROWS vec_avx2_attention_rows
#define ST_SCORES(qa, Kt, ldk, dh, jn, s, lds, qn) att_scores_avx2(qa, Kt, ldk, dh, jn, s, lds, qn)
#define ST_SOFTMAX(p, jl, m, l) softmax_block(p, jl, m, l)
#define ST_PV(o, scale, p, V, ldv, n, nv) pv_accumulate(o, scale, p, V, ldv, n, nv)
#define ST_JOINT_DH(nv) ((nv) % 2 == 0) /* pv_tile works in pairs of 8-float columns */
#define ST_PV_TILE(o, scale, p, V, ldv, n, nv, dh) pv_tile(o, scale, p, V, ldv, n, nv, ATT_QB)
#include "kernels/attention/streaming_impl.h"
#endif
