/* dot_rows_impl.h — the body of the rows kernels (dot_rows.h), included once by each
 * quant_rows_<isa>.c with:
 *   RW_TGT          the target attribute of the isa
 *   RW_SFX          the suffix of the table function (avx2, avxvnni, avx512vnni)
 *   RW_DPBUSD(u, s) eight int32 lanes, lane i = Σ_{k<4} u[4i+k]·s[4i+k] (u unsigned, s signed
 *                   bytes, no saturation for the operands used here: see dot_rows.h)
 *   RW_DPWSSD(a, p, s)  a + vpmaddwd(p, s) (int16 pairs, exact)
 *   RW_DPBUSD_ACC(a, u, s)  (VNNI builds only) a + RW_DPBUSD(u, s): then q4_0/q5_0/q8_0 use the
 *                   offset form below instead of the sign trick
 *   RW_MAX_ROWS     8 or 12: the widest kernel (12 needs 32 vector registers)
 * Each kernel is the single-row kernel of quant_avx2.c with the activation loop inside the block
 * loop; the per-column operations and their order are that kernel's (see the comments there). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/quant/avx2_lanes.h"
#include "kernels/quant/blocks.h"
#include "kernels/gemv/dot_rows.h"

#define RW_CAT_(a, b) a##b
#define RW_CAT(a, b) RW_CAT_(a, b)
#define RW_INLINE RW_TGT static inline __attribute__((always_inline))

/* The first k (1..8) of eight floats at p (a masked load: nothing past p + k is read). */
RW_INLINE __m256 rw_load_n(const float *p, const int k) {
    if (k >= 8) return _mm256_loadu_ps(p);
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(k), idx));
}

/* The NR columns' block scale products dx·dy[c] (c < NR ≤ 12) in two vectors, one multiply per
 * 8 columns instead of one per column; RW_SCALE_OF broadcasts column c's in-lane (vpermilps of a
 * 128-bit half duplicated once per block). The same IEEE products as _mm256_mul_ps(set1(dx),
 * broadcast(dy[c])), so the sums keep their bits, and the multiply ports do two ops per block and
 * column instead of three. Used from RW_SCALES_FROM columns on; fewer keep the per-column multiply
 * (Zen 4, one thread, bench/matmul_rows.c: the q8_0 head 5–7 % faster at T = 8 and 16, q5_0 1–2 %;
 * at T = 4 q5_0 was 6 % slower; the git history of docs/PERFORMANCE.md). */
#define RW_SCALES_FROM 8

typedef struct {
    __m256 h[3]; /* columns 0..3, 4..7, 8..11, each 128-bit half in both lanes */
} rw_scales;

RW_INLINE void rw_scale_products(float dx, const float *yd, int NR, rw_scales *s) {
    const __m256 vdx = _mm256_set1_ps(dx);
    const __m256 a = _mm256_mul_ps(vdx, rw_load_n(yd, NR));
    s->h[0] = _mm256_permute2f128_ps(a, a, 0x00);
    if (NR > 4) s->h[1] = _mm256_permute2f128_ps(a, a, 0x11);
    if (NR > 8) {
        const __m256 b = _mm256_mul_ps(vdx, rw_load_n(yd + 8, NR - 8));
        s->h[2] = _mm256_permute2f128_ps(b, b, 0x00);
    }
}

#define RW_SCALE_OF(s, c)                                                                          \
    ((c) % 4 == 0   ? _mm256_permute_ps((s).h[(c) / 4], 0x00)                                       \
     : (c) % 4 == 1 ? _mm256_permute_ps((s).h[(c) / 4], 0x55)                                       \
     : (c) % 4 == 2 ? _mm256_permute_ps((s).h[(c) / 4], 0xAA)                                       \
                    : _mm256_permute_ps((s).h[(c) / 4], 0xFF))

#ifndef RW_DPBUSD_ACC
/* q4_0/q5_0/q8_0 × q8_0: q holds the weight bytes as signed values; per column
 * p = Σ|q|·sign(y, q) per lane (ggml's dot_i8), acc = fma(dx·dy, float(p), acc).
 * yq: the NR columns' 32 codes of this block, yd: their scales. */
RW_INLINE void rw_signed_q8_0(__m256i q, float dx, const int8_t *yq, const float *yd, int NR, __m256 *acc) {
    const __m256i aq = _mm256_sign_epi8(q, q);
    const __m256 vdx = _mm256_set1_ps(dx);
    rw_scales sc;
    if (NR >= RW_SCALES_FROM) rw_scale_products(dx, yd, NR, &sc);
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
        __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(yq + 32 * c)), q);
        __m256i p = RW_DPBUSD(aq, sy);
        __m256 d = NR >= RW_SCALES_FROM ? RW_SCALE_OF(sc, c) : _mm256_mul_ps(vdx, _mm256_broadcast_ss(yd + c));
        acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[c]);
    }
}
/* The same with the scale products dx·dy[c] already in d[] (rw_products). */
RW_INLINE void rw_signed_q8_0_dd(__m256i q, const int8_t *yq, const float *d, int NR, __m256 *acc) {
    const __m256i aq = _mm256_sign_epi8(q, q);
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
        __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(yq + 32 * c)), q);
        acc[c] = _mm256_fmadd_ps(_mm256_broadcast_ss(d + c), _mm256_cvtepi32_ps(RW_DPBUSD(aq, sy)), acc[c]);
    }
}
#endif

#ifdef RW_DPBUSD_ACC
/* The offset form (VNNI): the weight bytes as unsigned u = w + K (K = RW_BIAS_*), and per column
 * p = vpdpbusd(−K·Σy, u, y) = Σ w·y per lane, with −K·Σy per lane precomputed by steno_rows_pack.
 * One instruction per column instead of vpsignb + vpdpbusd. Σ w·y equals the sign trick's
 * Σ|w|·sign(y, w) except where y = −128 meets w < 0 (sign(−128) wraps); q8_0_from_float emits
 * −128 only for a block with 0 < amax < 127/FLT_MAX (then id = inf), and such a block's fp16 scale
 * d = amax/127 is 0, so it adds fma(dx·0, p, acc) = acc for either p. So for any activation steno
 * quantizes, the result is the sign trick's to the bit (tests/unit/test_dot_rows.c). */
#define RW_BIAS_Q4_0 8
#define RW_BIAS_Q5_0 16
#define RW_BIAS_Q8_0 0 /* q8_0 weights use the activation offset below */
RW_INLINE void rw_offset_q8_0(__m256i u, float dx, const int8_t *yq, const int8_t *yb, const float *yd, int NR,
                              __m256 *acc) {
    const __m256 vdx = _mm256_set1_ps(dx);
    rw_scales sc;
    if (NR >= RW_SCALES_FROM) rw_scale_products(dx, yd, NR, &sc);
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
        __m256i p = RW_DPBUSD_ACC(_mm256_loadu_si256((const __m256i *)(yb + 32 * c)), u,
                                  _mm256_loadu_si256((const __m256i *)(yq + 32 * c)));
        __m256 d = NR >= RW_SCALES_FROM ? RW_SCALE_OF(sc, c) : _mm256_mul_ps(vdx, _mm256_broadcast_ss(yd + c));
        acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[c]);
    }
}
/* codes, then the bias lanes (32 bytes per block and column), then the scales */
#define RW_Q8_0_LAYOUT                                                                             \
    const int8_t *yq = vy, *yb = yq + (size_t)nb * NR * 32;                                        \
    const float *yd = (const float *)(yb + (size_t)nb * NR * 32);
#define RW_Q8_0_BLOCK(u, dx) rw_offset_q8_0((u), (dx), yq + (size_t)ib * NR * 32, yb + (size_t)ib * NR * 32, \
                                            yd + (size_t)ib * NR, NR, acc)
#define RW_U_Q4_0(q) (q)                                   /* nibble, w = q − 8 */
#define RW_U_Q5_0(q, bits) _mm256_or_si256((q), _mm256_and_si256((bits), _mm256_set1_epi8(0x10))) /* w = u − 16 */
/* q8_0 weights: the other way round. The activation codes packed as unsigned bytes y + 128
 * (steno_rows_pack with the table's act_offset), the weight bytes w as they are (signed), and per
 * block c = −128·Σw per lane, two instructions shared by every column; per column
 * p = vpdpbusd(c, y + 128, w) = Σ w·y per lane, the same integers as above, with no bias lanes
 * to read. On Zen 4 (bench/matmul_rows.c, 2 threads, 4 interleaved runs) Gemma 3's head (640 ×
 * 262 144) took 4.8–5.6 → 4.1–4.7 ms at T = 1, the decode step's largest product; a matrix small
 * enough to stay in cache pays the two instructions at T = 1 (attn_v, 640 × 256: 6.1 → 6.4 µs).
 * For q4_0/q5_0 they cost more than the load they save (gemma3 ffn_up q5_0 67 → 76 µs at T = 1,
 * one thread), so those keep the form above. */
RW_INLINE void rw_actoff_q8_0(__m256i w, float dx, const uint8_t *yu, const float *yd, int NR, __m256 *acc) {
    const __m256 vdx = _mm256_set1_ps(dx);
    const __m256i c0 = _mm256_sub_epi32(_mm256_setzero_si256(), RW_DPBUSD(_mm256_set1_epi8((char)0x80), w));
    rw_scales sc;
    if (NR >= RW_SCALES_FROM) rw_scale_products(dx, yd, NR, &sc);
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
        __m256i p = RW_DPBUSD_ACC(c0, _mm256_loadu_si256((const __m256i *)(yu + 32 * c)), w);
        __m256 d = NR >= RW_SCALES_FROM ? RW_SCALE_OF(sc, c) : _mm256_mul_ps(vdx, _mm256_broadcast_ss(yd + c));
        acc[c] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[c]);
    }
}
RW_INLINE void rw_actoff_q8_0_dd(__m256i w, const uint8_t *yu, const float *d, int NR, __m256 *acc) {
    const __m256i c0 = _mm256_sub_epi32(_mm256_setzero_si256(), RW_DPBUSD(_mm256_set1_epi8((char)0x80), w));
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
        const __m256i p = RW_DPBUSD_ACC(c0, _mm256_loadu_si256((const __m256i *)(yu + 32 * c)), w);
        acc[c] = _mm256_fmadd_ps(_mm256_broadcast_ss(d + c), _mm256_cvtepi32_ps(p), acc[c]);
    }
}
/* codes (y + 128), then the scales */
#define RW_Q8_0A_LAYOUT                                                                            \
    const uint8_t *yq = vy;                                                                        \
    const float *yd = (const float *)(yq + (size_t)nb * NR * 32);
#define RW_Q8_0A_BLOCK(w, dx) rw_actoff_q8_0((w), (dx), yq + (size_t)ib * NR * 32, yd + (size_t)ib * NR, NR, acc)
#define RW_Q8_0A_BLOCK_DD(w, d) rw_actoff_q8_0_dd((w), yq + (size_t)ib * NR * 32, (d), NR, acc)
#define RW_ACT_OFFSET_Q8_0 1
#else
#define RW_BIAS_Q4_0 0
#define RW_BIAS_Q5_0 0
#define RW_BIAS_Q8_0 0
#define RW_Q8_0_LAYOUT                                                                             \
    const int8_t *yq = vy;                                                                         \
    const float *yd = (const float *)(yq + (size_t)nb * NR * 32);
#define RW_Q8_0_BLOCK(q, dx) rw_signed_q8_0((q), (dx), yq + (size_t)ib * NR * 32, yd + (size_t)ib * NR, NR, acc)
#define RW_Q8_0_BLOCK_DD(q, d) rw_signed_q8_0_dd((q), yq + (size_t)ib * NR * 32, (d), NR, acc)
#define RW_U_Q4_0(q) _mm256_sub_epi8((q), _mm256_set1_epi8(8))
#define RW_U_Q5_0(q, bits) _mm256_or_si256((q), _mm256_andnot_si256((bits), _mm256_set1_epi8((char)0xF0)))
#define RW_Q8_0A_LAYOUT RW_Q8_0_LAYOUT
#define RW_Q8_0A_BLOCK RW_Q8_0_BLOCK
#define RW_Q8_0A_BLOCK_DD RW_Q8_0_BLOCK_DD
#define RW_ACT_OFFSET_Q8_0 0
#endif
#define RW_U_Q8_0(w) (w) /* signed, in both forms */

/* The block loop of q4_0/q5_0/q8_0 (x: the weight blocks, fp16 scale d first; WVEC(ib): block ib's
 * weight bytes as the form wants them). From RW_PRODUCTS_FROM columns on, the scale products
 * dx·dy[c] of RW_PRODUCTS_CH blocks are computed first into a stack buffer, and the dots then
 * broadcast them from memory (an embedded-broadcast operand of the fma: a load, not a shuffle).
 * The same IEEE products, so the same bits. Zen 4, one thread, the VNNI q8_0 kernel on rows of 640
 * in L2, best of 5 interleaved runs, cycles per block and column: 1.83 → 1.59 at T = 9, 1.78 →
 * 1.55 at 8, 1.70 → 1.47 at 12, 1.79 → 1.60 at 7, 1.90 → 1.80 at 5, equal at 4, slower below
 * (rw_scale_products' shuffles were the bound: 1.37 with no scales at all; products stored and read
 * back within one block, through store forwarding, were slower than the shuffles); in
 * bench/matmul_rows.c Gemma 3's attn_v (q8_0) 12–13 % faster from T = 8, its ffn_up (q5_0) 3–7 %
 * with the AVX2 kernels. The VNNI q4_0/q5_0 kernels (one bias load per column already) ran 2–6 %
 * slower with it, and keep the shuffles (RW_Q4_LOOP). */
#define RW_PRODUCTS_FROM 5
#define RW_PRODUCTS_CH 32 /* 2 KiB of stack */
RW_INLINE void rw_products(float dx, const float *yd, int NR, float *d) {
    const __m256 vdx = _mm256_set1_ps(dx);
    _mm256_store_ps(d, _mm256_mul_ps(vdx, rw_load_n(yd, NR)));
    if (NR > 8) _mm256_store_ps(d + 8, _mm256_mul_ps(vdx, rw_load_n(yd + 8, NR - 8)));
}
/* YD_STRIDE: floats of activation scales per block (NR; q4_1: NR d, then NR s) */
#define RW_PLAIN_LOOP(WVEC, BLOCK)                                                                 \
    for (int ib = 0; ib < nb; ++ib) BLOCK(WVEC(ib), _cvtsh_ss(x[ib].d));
#define RW_BLOCK_LOOP(WVEC, BLOCK, BLOCK_DD, YD_STRIDE)                                            \
    if (NR >= RW_PRODUCTS_FROM) {                                                                  \
        float dd[RW_PRODUCTS_CH * 16] __attribute__((aligned(32)));                                \
        for (int ib0 = 0; ib0 < nb; ib0 += RW_PRODUCTS_CH) {                                       \
            const int ie = ib0 + RW_PRODUCTS_CH < nb ? ib0 + RW_PRODUCTS_CH : nb;                  \
            for (int ib = ib0; ib < ie; ++ib)                                                      \
                rw_products(_cvtsh_ss(x[ib].d), yd + (size_t)ib * (YD_STRIDE), NR, dd + (ib - ib0) * 16); \
            for (int ib = ib0; ib < ie; ++ib) BLOCK_DD(WVEC(ib), dd + (ib - ib0) * 16);            \
        }                                                                                          \
    } else                                                                                         \
        RW_PLAIN_LOOP(WVEC, BLOCK)
/* q4_0/q5_0: the VNNI offset form keeps its shuffles (above) */
#ifdef RW_DPBUSD_ACC
#define RW_Q4_LOOP(WVEC) RW_PLAIN_LOOP(WVEC, RW_Q8_0_BLOCK)
#else
#define RW_Q4_LOOP(WVEC) RW_BLOCK_LOOP(WVEC, RW_Q8_0_BLOCK, RW_Q8_0_BLOCK_DD, NR)
#endif
#define RW_W_Q4_0(ib) RW_U_Q4_0(avx2_unpack_nibbles(x[ib].qs))
/* signed: (q | hbit << 4) − 16 == q | (hbit ? 0 : 0xF0); unsigned: q | hbit << 4 */
#define RW_W_Q5_0(ib) RW_U_Q5_0(avx2_unpack_nibbles(x[ib].qs), avx2_bytes_from_bits_32(x[ib].qh))
#define RW_W_Q8_0(ib) RW_U_Q8_0(_mm256_loadu_si256((const __m256i *)x[ib].qs))

RW_INLINE void rw_q4_0(int n, const void *vx, const void *vy, float *out, const int NR) {
    const block_q4_0 *x = vx;
    const int nb = n / 32;
    RW_Q8_0_LAYOUT
    __m256 acc[STENO_ROWS_MAX];
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) acc[c] = _mm256_setzero_ps();
    RW_Q4_LOOP(RW_W_Q4_0)
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) out[c] = avx2_hsum_ps(acc[c]);
}

RW_INLINE void rw_q5_0(int n, const void *vx, const void *vy, float *out, const int NR) {
    const block_q5_0 *x = vx;
    const int nb = n / 32;
    RW_Q8_0_LAYOUT
    __m256 acc[STENO_ROWS_MAX];
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) acc[c] = _mm256_setzero_ps();
    RW_Q4_LOOP(RW_W_Q5_0)
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) out[c] = avx2_hsum_ps(acc[c]);
}

RW_INLINE void rw_q8_0(int n, const void *vx, const void *vy, float *out, const int NR) {
    const block_q8_0 *x = vx;
    const int nb = n / 32;
    RW_Q8_0A_LAYOUT
    __m256 acc[STENO_ROWS_MAX];
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) acc[c] = _mm256_setzero_ps();
    RW_BLOCK_LOOP(RW_W_Q8_0, RW_Q8_0A_BLOCK, RW_Q8_0A_BLOCK_DD, NR)
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) out[c] = avx2_hsum_ps(acc[c]);
}

/* q4_1 × q8_1: nibbles 0..15 times signed bytes; summs = Σ m·s in block order (one lane per
 * column: lane c does the scalar kernel's mul and add), added after the hsum. Block ib: pd, the
 * scale products ahead (RW_BLOCK_LOOP; SmolLM2's ffn_up/ffn_down, bench/matmul_rows.c, one
 * thread: 8–10 % faster at T = 8, 12 and 16 with AVX512-VNNI, 4–13 % at T = 5..8 with AVX2, equal
 * below), or NULL: a multiply per column. */
RW_INLINE void rw_q4_1_block(__m256i q, float dx, float mx, const int8_t *y, const float *d, const float *pd, int NR,
                             __m256 *acc, __m256 *summs) {
    const __m256 vdx = _mm256_set1_ps(dx), vmx = _mm256_set1_ps(mx);
    summs[0] = _mm256_add_ps(summs[0], _mm256_mul_ps(vmx, rw_load_n(d + NR, NR)));
    if (NR > 8) summs[1] = _mm256_add_ps(summs[1], _mm256_mul_ps(vmx, rw_load_n(d + NR + 8, NR - 8)));
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
        __m256i p = RW_DPBUSD(q, _mm256_loadu_si256((const __m256i *)(y + 32 * c)));
        __m256 dd = pd ? _mm256_broadcast_ss(pd + c) : _mm256_mul_ps(vdx, _mm256_broadcast_ss(d + c));
        acc[c] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(p), acc[c]);
    }
}
#define RW_W_Q4_1(ib) avx2_unpack_nibbles(x[ib].qs)
#define RW_Q4_1_AT(q, dx, pd)                                                                      \
    rw_q4_1_block((q), (dx), _cvtsh_ss(x[ib].m), yq + (size_t)ib * NR * 32, yd + (size_t)ib * NR * 2, (pd), NR, acc, summs)
#define RW_Q4_1_BLOCK(q, dx) RW_Q4_1_AT(q, dx, NULL)
#define RW_Q4_1_BLOCK_DD(q, pd) RW_Q4_1_AT(q, 0.0f, pd)

RW_INLINE void rw_q4_1(int n, const void *vx, const void *vy, float *out, const int NR) {
    const block_q4_1 *x = vx;
    const int nb = n / 32;
    const int8_t *yq = vy;
    const float *yd = (const float *)(yq + (size_t)nb * NR * 32); /* per block: NR d, then NR s */
    __m256 acc[STENO_ROWS_MAX];
    __m256 summs[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}; /* columns 0..7, 8..11 */
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) acc[c] = _mm256_setzero_ps();
    RW_BLOCK_LOOP(RW_W_Q4_1, RW_Q4_1_BLOCK, RW_Q4_1_BLOCK_DD, NR * 2)
    float sm[16];
    _mm256_storeu_ps(sm, summs[0]);
    _mm256_storeu_ps(sm + 8, summs[1]);
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) out[c] = avx2_hsum_ps(acc[c]) + sm[c];
}

/* q4_K × q8_K: per super-block the exact integer sums Σ scale·(q·q8) and Σ min·bsum (their lane
 * split does not matter: both are reduced to one int32), then the single-row kernel's fmaf steps. */
RW_INLINE void rw_q4_K(int n, const void *vx, const void *vy, float *out, const int NR) {
    const block_q4_K *x = vx;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    float acc[STENO_ROWS_MAX], accm[STENO_ROWS_MAX];
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) acc[c] = accm[c] = 0;
    for (int i = 0; i < n / 256; ++i) {
        /* the 6-bit scales and mins in registers (ggml's utmp decoding, the same values as
         * scale_min_k4): building them in a byte array and loading that as a vector stalled on
         * store forwarding once per super-block (measured) */
        uint32_t u[4];
        memcpy(u, x[i].scales, 12);
        u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
        const uint32_t uaux = u[1] & 0x3f3f3f3fu;
        u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
        u[2] = uaux;
        u[0] &= 0x3f3f3f3fu;
        const uint64_t sc = (uint64_t)u[0] | (uint64_t)u[1] << 32; /* byte k: scale k */
        const __m128i mn8 = _mm_set_epi32(0, 0, (int)u[3], (int)u[2]); /* byte k: min k */
        /* mins16[2k] = mins16[2k+1] = min k: Σ_k min_k·(bsums[2k] + bsums[2k+1]) as one vpmaddwd */
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
        __m256i lo[4], hi[4], s16[8];
        for (int j = 0; j < 4; j++) {
            __m256i b = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * j));
            lo[j] = _mm256_and_si256(b, m4);
            hi[j] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
            s16[2 * j] = _mm256_set1_epi16((short)((sc >> (16 * j)) & 0xff));
            s16[2 * j + 1] = _mm256_set1_epi16((short)((sc >> (16 * j + 8)) & 0xff));
        }
        const float xd = _cvtsh_ss(x[i].d), xm = _cvtsh_ss(x[i].dmin);
        _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
            const block_q8_K *y = (const block_q8_K *)vy + (size_t)i * NR + c;
            /* four independent int32 partial sums (one serial vpdpwssd chain is latency-bound
             * with one column); their sum is the exact total either way */
            __m256i part[4];
            for (int j = 0; j < 4; ++j) {
                __m256i plo = _mm256_maddubs_epi16(lo[j], _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j)));
                __m256i phi = _mm256_maddubs_epi16(hi[j], _mm256_loadu_si256((const __m256i *)(y->qs + 64 * j + 32)));
                part[j] = RW_DPWSSD(_mm256_madd_epi16(plo, s16[2 * j]), phi, s16[2 * j + 1]);
            }
            const __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(part[0], part[1]), _mm256_add_epi32(part[2], part[3]));
            const __m256i summ = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y->bsums), mins16);
            acc[c] = fmaf((float)avx2_hsum_i32(sumi), xd * y->d, acc[c]);
            accm[c] = fmaf((float)avx2_hsum_i32(summ), xm * y->d, accm[c]);
        }
    }
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) out[c] = acc[c] - accm[c];
}

static const uint8_t rw_k_scale_shuffle[128] = {
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
    4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7,
    8, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11,
    12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15};

static const uint8_t rw_mask6[5][32] = {
    {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
    {15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
     15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15},
    {12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
     12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12},
    {48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48,
     48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 48},
    {192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192,
     192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192, 192}};

/* q6_K × q8_K: llama.cpp's AVX2 lanes (quant_avx2.c q6_K_block_lanes): the eight 6-bit vectors and
 * their int16 scales are built once per super-block; per column the lanes are
 * Σ_k scale_k·maddubs(q_k, q8_k) − 32·Σ scale·bsum, then fma(d, float(lanes), acc). The lane of
 * every term is the single-row kernel's. */
RW_INLINE void rw_q6_K(int n, const void *vx, const void *vy, float *out, const int NR) {
    const block_q6_K *x = vx;
    /* the byte masks from memory: GCC otherwise builds them with movabs + vpbroadcastq from a
     * general register, which stalled the AVX-512 build's 4- and 7-column kernels (measured) */
    const __m256i m3 = _mm256_loadu_si256((const __m256i *)rw_mask6[0]), m15 = _mm256_loadu_si256((const __m256i *)rw_mask6[1]);
    const __m256i m12 = _mm256_loadu_si256((const __m256i *)rw_mask6[2]), m48 = _mm256_loadu_si256((const __m256i *)rw_mask6[3]);
    const __m256i m192 = _mm256_loadu_si256((const __m256i *)rw_mask6[4]);
    __m256 acc[STENO_ROWS_MAX];
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) acc[c] = _mm256_setzero_ps();
    for (int i = 0; i < n / 256; ++i) {
        const uint8_t *q4 = x[i].ql, *qh = x[i].qh;
        const __m128i scales = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i scales_16 = _mm256_cvtepi8_epi16(scales);
        __m256i q[8], s16[8];
        for (int j = 0; j < 2; ++j) {
            const __m256i q4bits1 = _mm256_loadu_si256((const __m256i *)(q4 + 64 * j));
            const __m256i q4bits2 = _mm256_loadu_si256((const __m256i *)(q4 + 64 * j + 32));
            const __m256i q4bitsH = _mm256_loadu_si256((const __m256i *)(qh + 32 * j));
            const __m256i q4h_0 = _mm256_slli_epi16(_mm256_and_si256(q4bitsH, m3), 4);
            const __m256i q4h_1 = _mm256_slli_epi16(_mm256_and_si256(q4bitsH, m12), 2);
            const __m256i q4h_2 = _mm256_and_si256(q4bitsH, m48);
            const __m256i q4h_3 = _mm256_srli_epi16(_mm256_and_si256(q4bitsH, m192), 2);
            q[4 * j + 0] = _mm256_or_si256(_mm256_and_si256(q4bits1, m15), q4h_0);
            q[4 * j + 1] = _mm256_or_si256(_mm256_and_si256(q4bits2, m15), q4h_1);
            q[4 * j + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits1, 4), m15), q4h_2);
            q[4 * j + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4bits2, 4), m15), q4h_3);
            for (int k = 0; k < 4; k++)
                s16[4 * j + k] = _mm256_cvtepi8_epi16(
                    _mm_shuffle_epi8(scales, _mm_loadu_si128((const __m128i *)rw_k_scale_shuffle + 4 * j + k)));
        }
        const float xd = _cvtsh_ss(x[i].d);
        _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) {
            const block_q8_K *y = (const block_q8_K *)vy + (size_t)i * NR + c;
            const __m256i q8sums = _mm256_loadu_si256((const __m256i *)y->bsums);
            const __m256i q8sclsub = _mm256_slli_epi32(_mm256_madd_epi16(q8sums, scales_16), 5);
            __m256i part[4]; /* independent partial lanes, as for q4_K (exact int32 sums) */
            for (int k = 0; k < 4; k++) {
                __m256i p0 = _mm256_maddubs_epi16(q[2 * k], _mm256_loadu_si256((const __m256i *)(y->qs + 64 * k)));
                __m256i p1 = _mm256_maddubs_epi16(q[2 * k + 1], _mm256_loadu_si256((const __m256i *)(y->qs + 64 * k + 32)));
                part[k] = RW_DPWSSD(_mm256_madd_epi16(s16[2 * k], p0), s16[2 * k + 1], p1);
            }
            const __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(part[0], part[1]), _mm256_add_epi32(part[2], part[3]));
            const float d = y->d * xd;
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi, q8sclsub)), acc[c]);
        }
    }
    _Pragma("GCC unroll 12") for (int c = 0; c < NR; c++) out[c] = avx2_hsum_ps(acc[c]);
}

/* One function per (type, nr): nr a constant, so the column loops unroll and the accumulators stay
 * in registers. */
#define RW_ONE(T, K)                                                                               \
    RW_TGT static void RW_CAT(rw_##T##_, K)(int n, const void *x, const void *y, float *out) {     \
        rw_##T(n, x, y, out, K);                                                                   \
    }
#if RW_MAX_ROWS > 8
#define RW_WIDE(T) RW_ONE(T, 9) RW_ONE(T, 10) RW_ONE(T, 11) RW_ONE(T, 12)
#define RW_WIDE_FNS(T) , rw_##T##_9, rw_##T##_10, rw_##T##_11, rw_##T##_12
#else
#define RW_WIDE(T)
#define RW_WIDE_FNS(T)
#endif
#define RW_TABLE(T)                                                                                \
    RW_ONE(T, 1) RW_ONE(T, 2) RW_ONE(T, 3) RW_ONE(T, 4) RW_ONE(T, 5) RW_ONE(T, 6) RW_ONE(T, 7)     \
    RW_ONE(T, 8) RW_WIDE(T)                                                                        \
    static const steno_rows_kernels rw_table_##T = {                                               \
        RW_MAX_ROWS, RW_BIAS_OF_##T, RW_ACT_OFFSET_OF_##T, {NULL, rw_##T##_1, rw_##T##_2, rw_##T##_3, rw_##T##_4, rw_##T##_5, rw_##T##_6, \
                      rw_##T##_7, rw_##T##_8 RW_WIDE_FNS(T)}};

#define RW_BIAS_OF_q4_0 RW_BIAS_Q4_0
#define RW_BIAS_OF_q5_0 RW_BIAS_Q5_0
#define RW_BIAS_OF_q8_0 RW_BIAS_Q8_0
#define RW_BIAS_OF_q4_1 0
#define RW_BIAS_OF_q4_K 0
#define RW_BIAS_OF_q6_K 0
#define RW_ACT_OFFSET_OF_q8_0 RW_ACT_OFFSET_Q8_0
#define RW_ACT_OFFSET_OF_q4_0 0
#define RW_ACT_OFFSET_OF_q5_0 0
#define RW_ACT_OFFSET_OF_q4_1 0
#define RW_ACT_OFFSET_OF_q4_K 0
#define RW_ACT_OFFSET_OF_q6_K 0
RW_TABLE(q4_0)
RW_TABLE(q4_1)
RW_TABLE(q5_0)
RW_TABLE(q8_0)
RW_TABLE(q4_K)
RW_TABLE(q6_K)

#if RW_MAX_ROWS <= 8
/* With 16 vector registers the one-column q6_K kernel spills the eight unpacked vectors and
 * scales it builds up front, and measured 5-9 % slower than quant_avx2.c's kernel, which unpacks
 * as it goes. One packed column is the plain row (steno_rows_pack with nr = 1 copies the blocks
 * unchanged), so that slot is the single-row kernel itself. */
RW_TGT static void rw_q6_K_row(int n, const void *x, const void *y, float *out) { out[0] = steno_dot_q6_K_avx2(n, x, y); }
static const steno_rows_kernels rw_table_q6_K_1 = {
    RW_MAX_ROWS, 0, 0, {NULL, rw_q6_K_row, rw_q6_K_2, rw_q6_K_3, rw_q6_K_4, rw_q6_K_5, rw_q6_K_6, rw_q6_K_7, rw_q6_K_8}};
#define RW_Q6_K_TABLE rw_table_q6_K_1
#else
#define RW_Q6_K_TABLE rw_table_q6_K
#endif

const steno_rows_kernels *RW_CAT(steno_rows_table_, RW_SFX)(int type) {
    switch (type) {
    case STENO_T_Q4_0: return &rw_table_q4_0;
    case STENO_T_Q4_1: return &rw_table_q4_1;
    case STENO_T_Q5_0: return &rw_table_q5_0;
    case STENO_T_Q8_0: return &rw_table_q8_0;
    case STENO_T_Q4_K: return &rw_table_q4_K;
    case STENO_T_Q6_K: return &RW_Q6_K_TABLE;
    default: return NULL;
    }
}
