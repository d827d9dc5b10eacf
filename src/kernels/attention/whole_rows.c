/* whole_rows.c — vec_attention's whole-row path: attention without a causal mask over at most
 * VEC_ATT_ROW_MAX keys (the Whisper encoder's self-attention, 1500 keys; the float32 decoder's
 * cross-attention), in AVX2 and AVX-512 versions that give the same bits.
 *
 * For a tile of up to 6 queries: every score of the row (q · key j, the FMA chain over d), the
 * row's exact maximum m, p_j = exp(s_j − m) and their sum l, then o = (Σ_j p_j·V_j)·(1/l) with the
 * six output rows held in registers through all keys. The streaming kernel
 * (streaming_impl.h) does the same sums one 64-key block at a time, with a running maximum, a
 * rescale of l and of the output row whenever the maximum grows, and the output row loaded and
 * stored per block; on the encoder's 1500 × 1500 heads that bookkeeping cost more than the
 * products (71 GFLOP/s on one Emerald Rapids core; bench/attention_bench.c). Softmax over the
 * whole row is also what openai-whisper computes (model.py, qkv_attention: softmax of the full
 * score row, then @ v).
 *
 * Why both versions give the same bits: a score, p_j and an output value are each a chain of
 * lane-wise operations in a fixed order (the FMA chain over d; exp8_nonpos/exp16_nonpos, the same
 * operations lane for lane; the FMA chain over j from 0, then one multiply by 1/l); the maximum is
 * exact in any order; l is accumulated in 8 lanes over j in steps of 8 (the AVX-512 version adds
 * each 16-probability vector as its low half, then its high half) and reduced by hsum8. A query's
 * result does not depend on which other queries share its tile, so not on the thread split either.
 * test_vec_avx512 compares the two versions bit for bit. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#include "kernels/attention/score_tile.h"
#include "kernels/gemv/vec_impl.h"

#define QT ATT_TILE_Q /* queries per tile: the AVX-512 values pass holds 6 × 64 outputs in 24 registers */
#define AVX2I __attribute__((target("avx2,fma,f16c"), always_inline)) static inline
#define ZI AVX512I

/* ---------------------------------------------------------------- AVX2 */

/* the scores of one row → p_j = exp(s_j − max) for j < nk, 0 up to nk rounded to 8; returns Σ p */
AVX2I float softmax_avx2(float *p, int nk) {
    const int nr = (nk + 7) & ~7;
    for (int j = nk; j < nr; j++) p[j] = -INFINITY;
    __m256 vmx = _mm256_set1_ps(-INFINITY);
    for (int j = 0; j < nr; j += 8) vmx = _mm256_max_ps(vmx, _mm256_load_ps(p + j));
    const __m256 vm = _mm256_set1_ps(hmax8(vmx));
    __m256 vl = _mm256_setzero_ps();
    for (int j = 0; j < nr; j += 8) {
        __m256 pj = exp8_nonpos(_mm256_sub_ps(_mm256_load_ps(p + j), vm));
        _mm256_store_ps(p + j, pj);
        if (j + 8 > nk) {
            for (int k = nk; k < j + 8; k++) p[k] = 0.0f;
            pj = _mm256_load_ps(p + j);
        }
        vl = _mm256_add_ps(vl, pj);
    }
    return hsum8(vl);
}

/* o_a[0..dh) = (Σ_{j<nk} p_a[j]·V_j)·inv_a, 16 columns of every query per pass over the keys */
AVX2I void values_avx2(float *const *o, const float *inv, float (*p)[VEC_ATT_ROW_MAX], const float *V, int ldv,
                       int nk, int dh, int qn) {
    for (int c0 = 0; c0 < dh; c0 += 16) {
        __m256 a0[QT], a1[QT];
        for (int a = 0; a < qn; a++) a0[a] = a1[a] = _mm256_setzero_ps();
        const float *v = V + c0;
        for (int j = 0; j < nk; j++, v += ldv) {
            const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8);
            for (int a = 0; a < qn; a++) {
                const __m256 pj = _mm256_broadcast_ss(&p[a][j]);
                a0[a] = _mm256_fmadd_ps(pj, v0, a0[a]);
                a1[a] = _mm256_fmadd_ps(pj, v1, a1[a]);
            }
        }
        for (int a = 0; a < qn; a++) {
            const __m256 s = _mm256_set1_ps(inv[a]);
            _mm256_storeu_ps(o[a] + c0, _mm256_mul_ps(a0[a], s));
            _mm256_storeu_ps(o[a] + c0 + 8, _mm256_mul_ps(a1[a], s));
        }
    }
}

AVX2I void tile_avx2(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk, int dh,
                     float *out, int out_stride, float (*s)[VEC_ATT_ROW_MAX], int qn) {
    const float *qa[QT];
    float *oa[QT];
    float inv[QT];
    for (int a = 0; a < qn; a++) qa[a] = q + (size_t)a * q_stride, oa[a] = out + (size_t)a * out_stride;
    att_scores_avx2(qa, Kt, ldk, dh, nk, s[0], VEC_ATT_ROW_MAX, qn);
    for (int a = 0; a < qn; a++) {
        const float l = softmax_avx2(s[a], nk);
        inv[a] = l > 0.0f ? 1.0f / l : 0.0f;
    }
    values_avx2(oa, inv, s, V, ldv, nk, dh, qn);
}

__attribute__((target("avx2,fma,f16c"))) void vec_avx2_attention_rows(const float *q, int q_stride, const float *Kt,
                                                                      int ldk, const float *V, int ldv, int nk,
                                                                      int dh, int nq, float *out, int out_stride) {
    float s[QT][VEC_ATT_ROW_MAX] __attribute__((aligned(64)));
    for (int i = 0; i < nq; i += QT) {
        const float *qi = q + (size_t)i * q_stride;
        float *oi = out + (size_t)i * out_stride;
        switch (nq - i < QT ? nq - i : QT) { /* constant tile heights keep the accumulators in registers */
        case 6: tile_avx2(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 6); break;
        case 5: tile_avx2(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 5); break;
        case 4: tile_avx2(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 4); break;
        case 3: tile_avx2(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 3); break;
        case 2: tile_avx2(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 2); break;
        default: tile_avx2(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 1); break;
        }
    }
}

/* ---------------------------------------------------------------- AVX-512 */

/* softmax_avx2 on 16 lanes; l in softmax_avx2's 8-lane order */
ZI float softmax_z(float *p, int nk) {
    const int nr = (nk + 7) & ~7, nk16 = (nk + 15) & ~15;
    for (int j = nk; j < nk16; j++) p[j] = -INFINITY;
    __m512 vmx = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < nk16; j += 16) vmx = _mm512_max_ps(vmx, _mm512_load_ps(p + j));
    const __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmx)); /* a maximum: exact in any order */
    __m256 vl = _mm256_setzero_ps();
    for (int j = 0; j < nk16; j += 16) {
        const __mmask16 live = nk - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (nk - j)) - 1u);
        const __m512 pj = _mm512_maskz_mov_ps(live, exp16_nonpos(_mm512_sub_ps(_mm512_load_ps(p + j), vm)));
        _mm512_store_ps(p + j, pj);
        vl = _mm256_add_ps(vl, _mm512_castps512_ps256(pj));
        if (j + 8 < nr) vl = _mm256_add_ps(vl, _mm512_extractf32x8_ps(pj, 1));
    }
    return hsum8(vl);
}

/* values_avx2's sums: 64 columns of the 6 queries per pass over the keys (24 accumulators), then
 * 32 and 16 for the rest of dh */
ZI void values_z(float *const *o, const float *inv, float (*p)[VEC_ATT_ROW_MAX], const float *V, int ldv, int nk,
                 int dh, int qn) {
    int c0 = 0;
    for (; c0 + 64 <= dh; c0 += 64) {
        __m512 a0[QT], a1[QT], a2[QT], a3[QT];
        for (int a = 0; a < qn; a++) a0[a] = a1[a] = a2[a] = a3[a] = _mm512_setzero_ps();
        const float *v = V + c0;
        for (int j = 0; j < nk; j++, v += ldv) {
            const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
            const __m512 v2 = _mm512_loadu_ps(v + 32), v3 = _mm512_loadu_ps(v + 48);
            for (int a = 0; a < qn; a++) {
                const __m512 pj = _mm512_set1_ps(p[a][j]);
                a0[a] = _mm512_fmadd_ps(pj, v0, a0[a]);
                a1[a] = _mm512_fmadd_ps(pj, v1, a1[a]);
                a2[a] = _mm512_fmadd_ps(pj, v2, a2[a]);
                a3[a] = _mm512_fmadd_ps(pj, v3, a3[a]);
            }
        }
        for (int a = 0; a < qn; a++) {
            const __m512 s = _mm512_set1_ps(inv[a]);
            _mm512_storeu_ps(o[a] + c0, _mm512_mul_ps(a0[a], s));
            _mm512_storeu_ps(o[a] + c0 + 16, _mm512_mul_ps(a1[a], s));
            _mm512_storeu_ps(o[a] + c0 + 32, _mm512_mul_ps(a2[a], s));
            _mm512_storeu_ps(o[a] + c0 + 48, _mm512_mul_ps(a3[a], s));
        }
    }
    for (; c0 < dh; c0 += 16) {
        __m512 a0[QT];
        for (int a = 0; a < qn; a++) a0[a] = _mm512_setzero_ps();
        const float *v = V + c0;
        for (int j = 0; j < nk; j++, v += ldv) {
            const __m512 v0 = _mm512_loadu_ps(v);
            for (int a = 0; a < qn; a++) a0[a] = _mm512_fmadd_ps(_mm512_set1_ps(p[a][j]), v0, a0[a]);
        }
        for (int a = 0; a < qn; a++) _mm512_storeu_ps(o[a] + c0, _mm512_mul_ps(a0[a], _mm512_set1_ps(inv[a])));
    }
}

ZI void tile_z(const float *q, int q_stride, const float *Kt, int ldk, const float *V, int ldv, int nk, int dh,
               float *out, int out_stride, float (*s)[VEC_ATT_ROW_MAX], int qn) {
    const float *qa[QT];
    float *oa[QT];
    float inv[QT];
    for (int a = 0; a < qn; a++) qa[a] = q + (size_t)a * q_stride, oa[a] = out + (size_t)a * out_stride;
    att_scores_avx512(qa, Kt, ldk, dh, nk, s[0], VEC_ATT_ROW_MAX, qn, 1);
    for (int a = 0; a < qn; a++) {
        const float l = softmax_z(s[a], nk);
        inv[a] = l > 0.0f ? 1.0f / l : 0.0f;
    }
    values_z(oa, inv, s, V, ldv, nk, dh, qn);
}

__attribute__((target(AVX512_TARGET))) void vec_avx512_attention_rows(const float *q, int q_stride, const float *Kt,
                                                                      int ldk, const float *V, int ldv, int nk,
                                                                      int dh, int nq, float *out, int out_stride) {
    float s[QT][VEC_ATT_ROW_MAX] __attribute__((aligned(64)));
    for (int i = 0; i < nq; i += QT) {
        const float *qi = q + (size_t)i * q_stride;
        float *oi = out + (size_t)i * out_stride;
        switch (nq - i < QT ? nq - i : QT) {
        case 6: tile_z(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 6); break;
        case 5: tile_z(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 5); break;
        case 4: tile_z(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 4); break;
        case 3: tile_z(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 3); break;
        case 2: tile_z(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 2); break;
        default: tile_z(qi, q_stride, Kt, ldk, V, ldv, nk, dh, oi, out_stride, s, 1); break;
        }
    }
}
#endif
