/* attention_amx.c — attention_amx.h on AMX tiles.
 *
 * Tile use as gemm_amx_bf16x3.c's: C0..C3 a 32 × 32 float32 block, T4/T5 two 16-row A tiles, T6/T7 two
 * B tiles; per 32 inputs xl·wh, xh·wh, xh·wl. Scores: A = the queries' halves (32 dimensions),
 * B = 16 keys × 16 dimension pairs, written straight into the score rows. Values: A = the
 * probabilities' halves (32 keys), B = 16 value columns × 16 key pairs; the 32 × 32 block goes
 * through a small buffer to be scaled by 1/l on its way out. */
#include "kernels/attention/attention_amx.h"

#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <math.h>
#include <string.h>

#include "kernels/gemm/amx_tiles.h"
#include "kernels/simd_avx512.h"

static inline int pad32(int T) { return (T + 31) & ~31; }

size_t att_amx_head_halves(int T, int dh) { return (size_t)pad32(T) * (size_t)dh; }

size_t att_amx_scratch_bytes(int T) {
    const size_t Tp = (size_t)pad32(T);
    return 32 * Tp * sizeof(float) + 2 * 32 * Tp * sizeof(uint16_t) + 32 * 32 * sizeof(float);
}

/* exp(x) for finite x ≤ 0 (below −87: about 1.6e-38), relative error under 2⁻²² (the Taylor
 * remainder r⁷/7! at |r| = ln2/2, plus roundings): the probabilities are kept to 16 bits (two
 * bfloat16 halves), so a shorter form than exp16_nonpos's serves (x = n·ln2 + r, degree 6, then
 * 2ⁿ by scalef instead of building the exponent bits); 1.98 against 2.3 ms per 1500-key head */
AMXI __m512 exp_p16(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 y = _mm512_set1_ps(1.0f / 720.0f);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f / 120.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f / 24.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f / 6.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(0.5f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

AMXI __mmask16 live16(int j, int T) {
    return T - j >= 16 ? (__mmask16)0xFFFF : T - j <= 0 ? (__mmask16)0 : (__mmask16)((1u << (T - j)) - 1u);
}

AMXF void att_amx_pack_head(const float *kt, int ldk, const float *v, int ldv, int T, int dh, uint16_t *kh,
                            uint16_t *kl, uint16_t *vh, uint16_t *vl) {
    const int Tp = pad32(T), KBd = dh / 32, KBt = Tp / 32;
    uint32_t *kh32 = (uint32_t *)kh, *kl32 = (uint32_t *)kl, *vh32 = (uint32_t *)vh, *vl32 = (uint32_t *)vl;
    /* keys: word (key block nb, dimension block kb, pair p, key n) = dims 32kb+2p, +1 of key 16nb+n */
    for (int nb = 0; nb < Tp / 16; nb++) {
        const __mmask16 m = live16(nb * 16, T);
        for (int kb = 0; kb < KBd; kb++)
            for (int p = 0; p < 16; p++) {
                const int d = kb * 32 + 2 * p;
                __m256i h0, l0, h1, l1;
                split16(_mm512_maskz_loadu_ps(m, kt + (size_t)d * ldk + nb * 16), &h0, &l0);
                split16(_mm512_maskz_loadu_ps(m, kt + (size_t)(d + 1) * ldk + nb * 16), &h1, &l1);
                const size_t w = (((size_t)nb * KBd + kb) * 16 + p) * 16;
                _mm512_storeu_si512(kh32 + w, pair16(h0, h1));
                _mm512_storeu_si512(kl32 + w, pair16(l0, l1));
            }
    }
    /* values: word (column block cb, key block kb, pair p, column n) = keys 32kb+2p, +1 of column 16cb+n */
    for (int cb = 0; cb < dh / 16; cb++)
        for (int kb = 0; kb < KBt; kb++)
            for (int p = 0; p < 16; p++) {
                const int j = kb * 32 + 2 * p;
                const __m512 z = _mm512_setzero_ps();
                __m256i h0, l0, h1, l1;
                split16(j < T ? _mm512_loadu_ps(v + (size_t)j * ldv + cb * 16) : z, &h0, &l0);
                split16(j + 1 < T ? _mm512_loadu_ps(v + (size_t)(j + 1) * ldv + cb * 16) : z, &h1, &l1);
                const size_t w = (((size_t)cb * KBt + kb) * 16 + p) * 16;
                _mm512_storeu_si512(vh32 + w, pair16(h0, h1));
                _mm512_storeu_si512(vl32 + w, pair16(l0, l1));
            }
}

AMXF void att_amx_rows(const uint16_t *qh, const uint16_t *ql, int ldq, int nq, int T, int dh, const uint16_t *kh,
                       const uint16_t *kl, const uint16_t *vh, const uint16_t *vl, void *scratch, float *out,
                       int out_stride) {
    const int Tp = pad32(T), KBd = dh / 32, KBt = Tp / 32;
    float *s = scratch;
    uint16_t *ph = (uint16_t *)(s + (size_t)32 * Tp), *pl = ph + (size_t)32 * Tp;
    float *o = (float *)(pl + (size_t)32 * Tp);
    float inv[32];
    amx_tiles_on();

    const size_t kstep = (size_t)KBd * 512; /* halves per 16 keys */
    for (int n0 = 0; n0 < Tp; n0 += 32) {
        amx_zero4();
        const uint16_t *kh0 = kh + (size_t)(n0 / 16) * kstep, *kl0 = kl + (size_t)(n0 / 16) * kstep;
        AMX_BF16X3_BLOCKS(ql, qh, (size_t)ldq * 2, (size_t)16 * ldq, kh0, kh0 + kstep, kl0, kl0 + kstep, KBd)
        amx_store4(s + n0, Tp);
    }

    for (int r = 0; r < 32; r++) {
        float *row = s + (size_t)r * Tp;
        uint16_t *hr = ph + (size_t)r * Tp, *lr = pl + (size_t)r * Tp;
        if (r >= nq) { /* a padding query: zero probabilities, its output is not written */
            memset(hr, 0, sizeof(uint16_t) * Tp);
            memset(lr, 0, sizeof(uint16_t) * Tp);
            inv[r] = 0.0f;
            continue;
        }
        const int T16 = T & ~15; /* whole vectors of live keys, then one masked vector (and zeros) */
        __m512 vmx = _mm512_set1_ps(-INFINITY);
        for (int j = 0; j < T16; j += 16) vmx = _mm512_max_ps(vmx, _mm512_load_ps(row + j));
        if (T16 < T) vmx = _mm512_mask_max_ps(vmx, live16(T16, T), vmx, _mm512_load_ps(row + T16));
        const __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmx));
        __m512 vl = _mm512_setzero_ps();
        for (int j = 0; j < Tp; j += 16) {
            __m512 p = exp_p16(_mm512_sub_ps(_mm512_load_ps(row + j), vm));
            if (j >= T16) p = _mm512_maskz_mov_ps(live16(j, T), p);
            vl = _mm512_add_ps(vl, p);
            __m256i h, l;
            split16(p, &h, &l);
            _mm256_storeu_si256((__m256i *)(hr + j), h);
            _mm256_storeu_si256((__m256i *)(lr + j), l);
        }
        const float sum = _mm512_reduce_add_ps(vl);
        inv[r] = sum > 0.0f ? 1.0f / sum : 0.0f;
    }

    amx_stores_before_tile_loads(); /* the probabilities' halves above */
    const size_t vstep = (size_t)KBt * 512; /* halves per 16 value columns */
    for (int c0 = 0; c0 < dh; c0 += 32) {
        amx_zero4();
        const uint16_t *vh0 = vh + (size_t)(c0 / 16) * vstep, *vl0 = vl + (size_t)(c0 / 16) * vstep;
        AMX_BF16X3_BLOCKS(pl, ph, (size_t)Tp * 2, (size_t)16 * Tp, vh0, vh0 + vstep, vl0, vl0 + vstep, KBt)
        amx_store4(o, 32);
        for (int r = 0; r < nq; r++) {
            const __m512 sc = _mm512_set1_ps(inv[r]);
            float *orow = out + (size_t)r * out_stride + c0;
            _mm512_storeu_ps(orow, _mm512_mul_ps(_mm512_load_ps(o + r * 32), sc));
            _mm512_storeu_ps(orow + 16, _mm512_mul_ps(_mm512_load_ps(o + r * 32 + 16), sc));
        }
    }
    _tile_release();
}

#else

size_t att_amx_head_halves(int T, int dh) { return (size_t)((T + 31) & ~31) * (size_t)dh; }
size_t att_amx_scratch_bytes(int T) { return (size_t)((T + 31) & ~31) * 256 + 4096; }
void att_amx_pack_head(const float *kt, int ldk, const float *v, int ldv, int T, int dh, uint16_t *kh, uint16_t *kl,
                       uint16_t *vh, uint16_t *vl) {
    (void)kt, (void)ldk, (void)v, (void)ldv, (void)T, (void)dh, (void)kh, (void)kl, (void)vh, (void)vl;
    abort();
}
void att_amx_rows(const uint16_t *qh, const uint16_t *ql, int ldq, int nq, int T, int dh, const uint16_t *kh,
                  const uint16_t *kl, const uint16_t *vh, const uint16_t *vl, void *scratch, float *out,
                  int out_stride) {
    (void)qh, (void)ql, (void)ldq, (void)nq, (void)T, (void)dh, (void)kh, (void)kl, (void)vh, (void)vl;
    (void)scratch, (void)out, (void)out_stride;
    abort();
}

#endif
