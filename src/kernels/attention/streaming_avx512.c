/* streaming_avx512.c — vec_attention (streaming-softmax attention over float32 K/V: the Whisper
 * encoder's self-attention, the decoder's) on 512-bit registers, bit-identical to streaming_avx2.c's
 * vec_avx2_attention: both are streaming_impl.h's body (the same chunks of 30 queries, key blocks
 * of 64, tiles of 6 queries, the same rescaling points) over their own helpers.
 *
 * Why the bits are the same: every output element of that kernel is a chain of lane-wise
 * operations (a score is the FMA chain over d of q[d]·Kt[d][j]; a probability is
 * exp8_nonpos(s − m) elementwise; an output value is the FMA chain over j of p[j]·V[j][d]),
 * so computing 16 lanes of a chain per instruction instead of 8 changes nothing. The two
 * reductions across lanes keep their order: the block maximum is exact in any order, and the
 * running sum l is accumulated in 8 lanes exactly as in streaming_avx2.c (each 16-probability vector is
 * added as its low half, then its high half), then hsum8. test_vec_avx512 compares the bits. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <math.h>

#include "kernels/attention/score_tile.h"
#include "kernels/prefetch.h"
#include "kernels/simd_avx512.h"
#include "kernels/gemv/vec_impl.h"

#define Z __attribute__((target(AVX512_TARGET)))
#define ZI AVX512I


/* o[0..dh) = o·scale + Σ_{j<n} p[j]·V[j] (dh a multiple of 16, <= 256) */
ZI void pv_accumulate_z(float *o, float scale, const float *p, const float *V, int ldv, int n, int nz) {
    __m512 acc[16];
    const __m512 vs = _mm512_set1_ps(scale);
    for (int c = 0; c < nz; c++) acc[c] = _mm512_mul_ps(_mm512_loadu_ps(o + 16 * c), vs);
    for (int j = 0; j < n; j++, V += ldv) {
        const __m512 pj = _mm512_set1_ps(p[j]);
        for (int c = 0; c < nz; c++) acc[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(V + 16 * c), acc[c]);
    }
    for (int c = 0; c < nz; c++) _mm512_storeu_ps(o + 16 * c, acc[c]);
}

/* pv_accumulate_z for the 6 queries of a full tile, 32 columns at a time, each V row read once
 * per tile (the same per-element operations and order) */
ZI void pv_tile_z(float *const *o, const float *scale, float p[][ATT_BLOCK], const float *V, int ldv, int n, int dh) {
    int c0 = 0;
    for (; c0 + 32 <= dh; c0 += 32) {
        __m512 a0[ATT_QB], a1[ATT_QB];
        for (int a = 0; a < ATT_QB; a++) {
            const __m512 vs = _mm512_set1_ps(scale[a]);
            a0[a] = _mm512_mul_ps(_mm512_loadu_ps(o[a] + c0), vs);
            a1[a] = _mm512_mul_ps(_mm512_loadu_ps(o[a] + c0 + 16), vs);
        }
        const float *v = V + c0;
        for (int j = 0; j < n; j++, v += ldv) {
            const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
            for (int a = 0; a < ATT_QB; a++) {
                const __m512 pj = _mm512_set1_ps(p[a][j]);
                a0[a] = _mm512_fmadd_ps(pj, v0, a0[a]);
                a1[a] = _mm512_fmadd_ps(pj, v1, a1[a]);
            }
        }
        for (int a = 0; a < ATT_QB; a++) {
            _mm512_storeu_ps(o[a] + c0, a0[a]);
            _mm512_storeu_ps(o[a] + c0 + 16, a1[a]);
        }
    }
    if (c0 < dh) { /* dh % 32 == 16 */
        __m512 a0[ATT_QB];
        for (int a = 0; a < ATT_QB; a++) a0[a] = _mm512_mul_ps(_mm512_loadu_ps(o[a] + c0), _mm512_set1_ps(scale[a]));
        const float *v = V + c0;
        for (int j = 0; j < n; j++, v += ldv) {
            const __m512 v0 = _mm512_loadu_ps(v);
            for (int a = 0; a < ATT_QB; a++) a0[a] = _mm512_fmadd_ps(_mm512_set1_ps(p[a][j]), v0, a0[a]);
        }
        for (int a = 0; a < ATT_QB; a++) _mm512_storeu_ps(o[a] + c0, a0[a]);
    }
}

/* Softmax step of query row p (scores of keys [0, jl) of this block; jn the block's key count)
 * against the running (m, l); p becomes the probabilities, zero past jl up to jn rounded to 16.
 * Returns the rescale factor of the previous output. */
ZI float softmax_block(float *p, int jl, float *m, float *l) {
    const int jr = (jl + 7) & ~7, jz = (jl + 15) & ~15;
    for (int j = jl; j < jz; j++) p[j] = -INFINITY;
    __m512 vmx = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < jz; j += 16) vmx = _mm512_max_ps(vmx, _mm512_load_ps(p + j));
    const float bm = _mm512_reduce_max_ps(vmx); /* a maximum: exact in any order */
    float scale = 1.0f;
    if (bm > *m) {
        scale = expf(*m - bm);
        *l *= scale;
        *m = bm;
    }
    const __m512 vm = _mm512_set1_ps(*m);
    __m256 vl = _mm256_setzero_ps();
    for (int j = 0; j < jz; j += 16) {
        /* lanes at or past jl back to an exact 0, as streaming_avx2.c sets them */
        const __mmask16 live = jl - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (jl - j)) - 1u);
        const __m512 pj = _mm512_maskz_mov_ps(live, exp16_nonpos(_mm512_sub_ps(_mm512_load_ps(p + j), vm)));
        _mm512_store_ps(p + j, pj);
        vl = _mm256_add_ps(vl, _mm512_castps512_ps256(pj));
        if (j + 8 < jr) vl = _mm256_add_ps(vl, _mm512_extractf32x8_ps(pj, 1));
    }
    *l += hsum8(vl);
    return scale;
}

#define ST_TGT Z
#define ST_NAME vec_avx512_attention
#define ST_LANES 16
#define ST_VEC __m512
#define ST_ZERO() _mm512_setzero_ps()
#define ST_SET1(x) _mm512_set1_ps(x)
#define ST_LOADU(p) _mm512_loadu_ps(p)
#define ST_STOREU(p, v) _mm512_storeu_ps(p, v)
#define ST_MUL(a, b) _mm512_mul_ps(a, b)
#define ST_ALIGN 64
#define ST_FALLBACK vec_avx2.attention
#define ST_ROWS vec_avx512_attention_rows
#define ST_SCORES(qa, Kt, ldk, dh, jn, s, lds, qn) att_scores_avx512(qa, Kt, ldk, dh, jn, s, lds, qn, 0)
#define ST_SOFTMAX(p, jl, m, l) softmax_block(p, jl, m, l)
#define ST_PV(o, scale, p, V, ldv, n, nv) pv_accumulate_z(o, scale, p, V, ldv, n, nv)
#define ST_JOINT_DH(nv) 1 /* pv_tile_z takes any dh (a multiple of 16) */
#define ST_PV_TILE(o, scale, p, V, ldv, n, nv, dh) pv_tile_z(o, scale, p, V, ldv, n, dh)
#include "kernels/attention/streaming_impl.h"

/* 32 halves stored in vec_f32_to_f16_lanes' lane order (two groups of 16) as floats in natural
 * order: lo = the first group's elements 0-15, hi = the second's */
ZI void widen_lanes32(const uint16_t *p, __m512 *lo, __m512 *hi) {
    const __m512i idx = _mm512_set_epi16(31, 30, 29, 28, 23, 22, 21, 20, 27, 26, 25, 24, 19, 18, 17, 16, /* hi */
                                         15, 14, 13, 12, 7, 6, 5, 4, 11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i v = _mm512_permutexvar_epi16(idx, _mm512_loadu_si512((const void *)p));
    *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(v));
    *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1));
}

#define QG 5 /* queries that share each widened key block and value row: a beam of 5 over one window */

/* The score row of one query in s [nk16] → its probabilities exp(s − max), in place; returns
 * their sum l (8-lane running sum, then hsum8: vec_avx2_attention_f16's order). */
ZI float softmax_row(float *s, int nk) {
    const int nk16 = (nk + 15) & ~15;
    for (int j = nk; j < nk16; j++) s[j] = -INFINITY;
    __m512 vmx = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < nk16; j += 16) vmx = _mm512_max_ps(vmx, _mm512_load_ps(s + j));
    const __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmx));
    __m256 vl = _mm256_setzero_ps();
    for (int j = 0; j < nk16; j += 16) {
        const __m512 p = exp16(_mm512_sub_ps(_mm512_load_ps(s + j), vm));
        vl = _mm256_add_ps(vl, _mm512_castps512_ps256(p));
        vl = _mm256_add_ps(vl, _mm512_extractf32x8_ps(p, 1));
        _mm512_store_ps(s + j, p);
    }
    return hsum8(vl);
}

/* G queries (a constant after inlining) over one head's keys and values: each key block and value
 * row is widened once for all of them; every query's chains are the single-query kernel's. */
ZI void attn16_group(const float *const *qs, float *const *os, int G, const uint16_t *Kb, const uint16_t *V, int ldv,
                     int nk, int dh, float (*s)[VEC_ATTENTION_F16_MAX_KEYS + 16]) {
    const int nk16 = (nk + 15) & ~15, nz = dh / 16;
    for (int j = 0; j < nk16; j += 16) {
        __m512 S[QG], T[QG];
        for (int a = 0; a < G; a++) S[a] = T[a] = _mm512_setzero_ps();
        const uint16_t *kp = Kb + (size_t)j * dh; /* block j/16: [dh][16] */
        if (j + 2 * 16 < nk16) vec_prefetch_bytes(kp + 2 * 16 * dh, sizeof(uint16_t) * 16 * dh); /* 2 blocks ahead */
        for (int d = 0; d < dh; d += 2, kp += 32) {
            __m512 k0, k1;
            widen_lanes32(kp, &k0, &k1);
            for (int a = 0; a < G; a++) {
                S[a] = _mm512_fmadd_ps(_mm512_set1_ps(qs[a][d]), k0, S[a]);
                T[a] = _mm512_fmadd_ps(_mm512_set1_ps(qs[a][d + 1]), k1, T[a]);
            }
        }
        for (int a = 0; a < G; a++) _mm512_store_ps(s[a] + j, _mm512_add_ps(S[a], T[a]));
    }
    __m512 inv[QG];
    for (int a = 0; a < G; a++) {
        const float l = softmax_row(s[a], nk);
        inv[a] = _mm512_set1_ps(l > 0.0f ? 1.0f / l : 0.0f);
    }
    /* Σ_j p_j v_j: 32 output values of every query per pass over the keys (one value row widened
     * once for all), each output the FMA chain over j in key order */
    int c = 0;
    for (; c + 2 <= nz; c += 2) {
        __m512 A[QG], B[QG];
        for (int a = 0; a < G; a++) A[a] = B[a] = _mm512_setzero_ps();
        const uint16_t *v = V + 16 * c;
        for (int j = 0; j < nk; j++, v += ldv) {
            __m512 v0, v1;
            widen_lanes32(v, &v0, &v1);
            for (int a = 0; a < G; a++) {
                const __m512 pj = _mm512_set1_ps(s[a][j]);
                A[a] = _mm512_fmadd_ps(pj, v0, A[a]);
                B[a] = _mm512_fmadd_ps(pj, v1, B[a]);
            }
        }
        for (int a = 0; a < G; a++) {
            _mm512_storeu_ps(os[a] + 16 * c, _mm512_mul_ps(A[a], inv[a]));
            _mm512_storeu_ps(os[a] + 16 * c + 16, _mm512_mul_ps(B[a], inv[a]));
        }
    }
    if (c < nz) {
        const __m256i idx16 = _mm256_set_epi16(15, 14, 13, 12, 7, 6, 5, 4, 11, 10, 9, 8, 3, 2, 1, 0);
        __m512 A[QG];
        for (int a = 0; a < G; a++) A[a] = _mm512_setzero_ps();
        const uint16_t *v = V + 16 * c;
        for (int j = 0; j < nk; j++, v += ldv) {
            const __m512 v0 = _mm512_cvtph_ps(_mm256_permutexvar_epi16(idx16, _mm256_loadu_si256((const __m256i *)v)));
            for (int a = 0; a < G; a++) A[a] = _mm512_fmadd_ps(_mm512_set1_ps(s[a][j]), v0, A[a]);
        }
        for (int a = 0; a < G; a++) _mm512_storeu_ps(os[a] + 16 * c, _mm512_mul_ps(A[a], inv[a]));
    }
}

/* vec_attention_f16 (the decoder step's cross-attention over float16 K/V) on 16 lanes,
 * bit-identical to f16_avx2.c's vec_avx2_attention_f16: per key, the two FMA chains over even and odd
 * d and their sum; the maximum; exp8 of s − max and the 8-lane running sum in its order; per output
 * value the FMA chain over keys; then ·1/l. Halves are widened exactly by vcvtph2ps (the AVX2
 * kernel scales by 2^±112 instead, which gives the same products, but its subnormal floats cost a
 * microcode assist per FMA on Intel). The inputs that kernel sends to the scalar one go there.
 * Queries go through in groups of up to QG (the beams or sampled candidates of one window share
 * its K/V): widening the halves, not the FMAs, bounds the one-query loop. */
Z void vec_avx512_attention_f16(const float *q, int q_stride, const uint16_t *Kb, const uint16_t *V, int ldv, int nk,
                                int dh, int nq, float *out, int out_stride) {
    if (dh % 16 || dh > 256 || nk > VEC_ATTENTION_F16_MAX_KEYS || nk <= 0 || (_mm_getcsr() & 0x0040)) {
        vec_avx2.attention_f16(q, q_stride, Kb, V, ldv, nk, dh, nq, out, out_stride);
        return;
    }
    float s[QG][VEC_ATTENTION_F16_MAX_KEYS + 16] __attribute__((aligned(64)));
    const float *qs[QG];
    float *os[QG];
    int G = 0;
    for (int i = 0; i < nq; i++) {
        const float *qi = q + (size_t)i * q_stride;
        float *o = out + (size_t)i * out_stride;
        int big = 0;
        for (int d = 0; d < dh; d++) big |= !(fabsf(qi[d]) < 0x1p15f);
        if (big) { /* the AVX2 kernel runs this query through the scalar one */
            vec_avx2.attention_f16(qi, q_stride, Kb, V, ldv, nk, dh, 1, o, out_stride);
        } else {
            qs[G] = qi;
            os[G++] = o;
        }
        if (G == QG || (i == nq - 1 && G > 0)) {
            switch (G) { /* constant group sizes keep the accumulators in registers */
            case 5: attn16_group(qs, os, 5, Kb, V, ldv, nk, dh, s); break;
            case 4: attn16_group(qs, os, 4, Kb, V, ldv, nk, dh, s); break;
            case 3: attn16_group(qs, os, 3, Kb, V, ldv, nk, dh, s); break;
            case 2: attn16_group(qs, os, 2, Kb, V, ldv, nk, dh, s); break;
            default: attn16_group(qs, os, 1, Kb, V, ldv, nk, dh, s); break;
            }
            G = 0;
        }
    }
}
#endif
