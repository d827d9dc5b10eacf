/* score_tile.h — the score tile of the float32 attention kernels (the streaming kernels
 * of streaming_impl.h, whole_rows.c's whole-row path):
 * s[a][0..jn rounded up to 16) = q_a · key j for qn <= ATT_TILE_Q queries, reading the transposed
 * keys Kt [dh][ldk] from the tile's first key, so no horizontal sums. Every score is the FMA chain
 * over d in order from 0, whichever version computes it. Score row a starts at s + a·lds. Inlined
 * with qn (and prefetch) constants, so the accumulators stay in registers. Internal. */
#ifndef STENO_KERNELS_ATTENTION_TILE_H
#define STENO_KERNELS_ATTENTION_TILE_H

#if defined(__x86_64__) && defined(__GNUC__)
#include "kernels/simd_avx512.h"

#define ATT_TILE_Q 6 /* queries per tile: 12 accumulators + 2 loads + 1 broadcast */
/* The streaming kernels (streaming_impl.h): keys per block, queries per tile, queries per chunk */
#define ATT_BLOCK 64
#define ATT_QB ATT_TILE_Q
#define ATT_QC 30 /* a multiple of ATT_QB; 1500 = 50 chunks */

/* 6 queries × 16 keys (two 8-lane registers) per step */
__attribute__((target("avx2,fma,f16c"), always_inline)) static inline void
att_scores_avx2(const float *const *qa, const float *Kt, int ldk, int dh, int jn, float *s, int lds, int qn) {
    for (int jt = 0; jt < jn; jt += 16) {
        __m256 s0[ATT_TILE_Q], s1[ATT_TILE_Q];
        for (int a = 0; a < qn; a++) s0[a] = s1[a] = _mm256_setzero_ps();
        const float *kp = Kt + jt;
        for (int d = 0; d < dh; d++, kp += ldk) {
            const __m256 k0 = _mm256_loadu_ps(kp), k1 = _mm256_loadu_ps(kp + 8);
            for (int a = 0; a < qn; a++) {
                const __m256 qd = _mm256_broadcast_ss(qa[a] + d);
                s0[a] = _mm256_fmadd_ps(qd, k0, s0[a]);
                s1[a] = _mm256_fmadd_ps(qd, k1, s1[a]);
            }
        }
        for (int a = 0; a < qn; a++) {
            _mm256_store_ps(s + (size_t)a * lds + jt, s0[a]);
            _mm256_store_ps(s + (size_t)a * lds + jt + 8, s1[a]);
        }
    }
}

/* 32 keys (two zmm) per step, 16 for an odd last group: the keys att_scores_avx2 reads. prefetch:
 * the keys of the step after next are prefetched (a row of Kt is ldk floats from the next: the
 * long rows of the whole-row path are 64 streams, too many for the hardware prefetcher). */
AVX512I void att_scores_avx512(const float *const *qa, const float *Kt, int ldk, int dh, int jn, float *s, int lds,
                               int qn, int prefetch) {
    int jt = 0;
    for (; jt + 16 < jn; jt += 32) {
        __m512 s0[ATT_TILE_Q], s1[ATT_TILE_Q];
        for (int a = 0; a < qn; a++) s0[a] = s1[a] = _mm512_setzero_ps();
        const float *kp = Kt + jt;
        for (int d = 0; d < dh; d++, kp += ldk) {
            const __m512 k0 = _mm512_loadu_ps(kp), k1 = _mm512_loadu_ps(kp + 16);
            if (prefetch) {
                _mm_prefetch((const char *)(kp + 64), _MM_HINT_T0);
                _mm_prefetch((const char *)(kp + 80), _MM_HINT_T0);
            }
            for (int a = 0; a < qn; a++) {
                const __m512 qd = _mm512_set1_ps(qa[a][d]);
                s0[a] = _mm512_fmadd_ps(qd, k0, s0[a]);
                s1[a] = _mm512_fmadd_ps(qd, k1, s1[a]);
            }
        }
        for (int a = 0; a < qn; a++) {
            _mm512_store_ps(s + (size_t)a * lds + jt, s0[a]);
            _mm512_store_ps(s + (size_t)a * lds + jt + 16, s1[a]);
        }
    }
    if (jt < jn) {
        __m512 s0[ATT_TILE_Q];
        for (int a = 0; a < qn; a++) s0[a] = _mm512_setzero_ps();
        const float *kp = Kt + jt;
        for (int d = 0; d < dh; d++, kp += ldk) {
            const __m512 k0 = _mm512_loadu_ps(kp);
            for (int a = 0; a < qn; a++) s0[a] = _mm512_fmadd_ps(_mm512_set1_ps(qa[a][d]), k0, s0[a]);
        }
        for (int a = 0; a < qn; a++) _mm512_store_ps(s + (size_t)a * lds + jt, s0[a]);
    }
}
#endif

#endif
