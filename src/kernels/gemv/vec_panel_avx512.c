/* vec_panel_avx512.c — the float16 batched GEMV of vec_avx512.c for many inputs (a batch's beam
 * rows: 40 in batched long-form mode), the same bits from a second layout of the weights.
 *
 * Why: vec_avx512_gemv_f16_batch keeps each output's 32 partial sums in the lanes of two
 * accumulators (lanes over the columns), so every FMA needs its own input vector: 18 loads per
 * 16 FMAs, and it ran at ~40 G MAC/s per core at 40 inputs, a third of this core's FMA rate. Here
 * the lanes run over 16 weight rows instead and an input value is broadcast: one widened weight
 * vector serves up to PANEL_G inputs, two of them (32 rows) take 2 loads and PANEL_G broadcasts
 * per 2·PANEL_G FMAs, as a GEMM micro-kernel does.
 *
 * The same bits: vec_avx512.c's output (r, i) is, per 32-column chunk c, the chains
 *   A[l] += w[r][32c + colA(l)] · x[32c + colA(l)],  B[l] += w[r][32c + colA(l) + 4] · x[...]
 * for lanes l = 0..15, colA(l) = (l & 3) + 8·(l >> 2), each from zero in chunk order, then
 * s[l] = A[l] + B[l], v[j] = s[j] + s[j + 8] and ((v0 + v4) + (v1 + v5)) + ((v2 + v6) + (v3 + v7)),
 * then b[r] (or 0.0f) plus that. Here each of the 32 partial chains (A or B, lane l) is one
 * accumulator per 16 rows running over the chunks in the same order, and the additions after it
 * are the same ones, made 16 rows at a time. test_vec_panel checks the bits against the row kernel.
 *
 * The panel (vec_f16_panel_pack): per block of 32 rows, per partial q = 4j + t (t = 0: A lane j,
 * 1: B lane j, 2: A lane j + 8, 3: B lane j + 8), per chunk c, the 32 rows' halves at that column:
 * each block is read front to back once per group of inputs. Rows past the last whole block, and
 * a call's rows outside whole blocks, go to vec_avx512_gemv_f16_batch.
 *
 * Two instruction mixes, the same bits (each accumulator's FMA chain is the same either way):
 * register broadcasts — one vbroadcastss per input serves both weight vectors (2 weight loads and
 * G broadcasts per 2·G FMAs) — or embedded ones, the two weight vectors in two passes with every
 * FMA reading its input as a {1to16} memory operand (2·G + 2 loads, no broadcast instruction).
 * On Zen 4 (AMD EPYC, 2 vCPUs) a broadcast instruction takes a vector-pipe slot beside the FMAs:
 * the embedded form ran 40.7 against 35.0 G MAC/s (384 × 51 864, 40 inputs, one thread;
 * +15–19 % at 10–20 inputs: bench/vec_isa_bench.c panel). On Intel a broadcast from memory is a
 * load-port µop only, and the embedded form's extra loads would meet two FMA ports with two
 * 512-bit load ports: the register form stays there. STENO_PANEL_EMBEDDED=0|1 chooses (tests
 * run both); unset, AMD CPUs take the embedded form. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "kernels/simd_avx512.h"
#include "kernels/gemv/vec_impl.h"

#define Z __attribute__((target(AVX512_TARGET)))
#define ZI AVX512I

#define PANEL_G 12       /* inputs per pass over a block: 24 accumulators + 2 weight vectors */
#define XP_FLOATS 32768  /* the inputs' broadcast copies (128 KiB on the stack: 64 inputs of 512) */
#define XS_MAX 4096
#define CHUNK 8          /* blocks per pass of the groups: 8 · 32 rows · n halves (192 KiB at n = 384) */

/* input g of a group of G as xp[(q·nc + c)·G + g] = x[32c + col(q)], q the partial order of the
 * panel: a step's G broadcasts read G adjacent floats at offsets the compiler knows */
static inline int panel_col(int q) {
    const int j = q >> 2, t = q & 3;
    const int l = j + ((t >> 1) << 3); /* A/B lane: j or j + 8 */
    return (l & 3) + 8 * (l >> 2) + ((t & 1) << 2);
}

static void prepare_p(const float *x, int n, int g, int G, float *xp) {
    const int nc = n / 32;
    for (int q = 0; q < 32; q++) {
        const int col = panel_col(q);
        for (int c = 0; c < nc; c++) xp[(q * nc + c) * G + g] = x[32 * c + col];
    }
}

/* One block of 32 rows (panel P) against G inputs (a constant after inlining); outputs at
 * Y[g][r .. r + 32). acc/tmp buffers in L1: t1 = s[j], t2 = s[j + 8], v[j]. */
ZI void panel_block(const uint16_t *P, const uint16_t *pf, const float *xp, int G, int nc, const float *b,
                    float *const *Y, int r, int EB) {
    __m512 v[8][PANEL_G][2], t1[PANEL_G][2] = {{_mm512_setzero_ps()}};
    for (int j = 0; j < 8; j++) {
        for (int t = 0; t < 4; t++) {
            const int q = 4 * j + t;
            const uint16_t *w = P + (size_t)q * nc * 32;
            const float *xq = xp + (size_t)q * nc * G;
            __m512 acc[PANEL_G][2];
            for (int g = 0; g < G; g++) acc[g][0] = acc[g][1] = _mm512_setzero_ps();
            if (EB) {
                /* each broadcast feeds one FMA, so GCC folds it into the FMA's memory operand
                 * (both passes unrolled: acc's indices stay constants, in registers) */
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++) {
#pragma GCC unroll 4
                    for (int c = 0; c < nc; c++) {
                        if (pf && !h) _mm_prefetch((const char *)(pf + (size_t)q * nc * 32 + 32 * c), _MM_HINT_T1);
                        const __m512 wh = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 32 * c + 16 * h)));
                        for (int g = 0; g < G; g++)
                            acc[g][h] = _mm512_fmadd_ps(wh, _mm512_set1_ps(xq[c * G + g]), acc[g][h]);
                    }
                }
            } else {
#pragma GCC unroll 4
                for (int c = 0; c < nc; c++) {
                    /* the next block's line at the same place (one line per chunk): the hardware
                     * prefetchers alone left the first group waiting on every partial's first load */
                    if (pf) _mm_prefetch((const char *)(pf + (size_t)q * nc * 32 + 32 * c), _MM_HINT_T1);
                    const __m512 w0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 32 * c)));
                    const __m512 w1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 32 * c + 16)));
                    for (int g = 0; g < G; g++) {
                        const __m512 xb = _mm512_set1_ps(xq[c * G + g]);
                        acc[g][0] = _mm512_fmadd_ps(w0, xb, acc[g][0]);
                        acc[g][1] = _mm512_fmadd_ps(w1, xb, acc[g][1]);
                    }
                }
            }
            for (int g = 0; g < G; g++)
                for (int h = 0; h < 2; h++) {
                    if (t == 0 || t == 2) t1[g][h] = acc[g][h]; /* A[l] */
                    else if (t == 1) v[j][g][h] = _mm512_add_ps(t1[g][h], acc[g][h]); /* s[j] = A + B */
                    else v[j][g][h] = _mm512_add_ps(v[j][g][h], _mm512_add_ps(t1[g][h], acc[g][h])); /* + s[j+8] */
                }
        }
    }
    for (int g = 0; g < G; g++)
        for (int h = 0; h < 2; h++) {
            const __m512 y = _mm512_add_ps(
                _mm512_add_ps(_mm512_add_ps(v[0][g][h], v[4][g][h]), _mm512_add_ps(v[1][g][h], v[5][g][h])),
                _mm512_add_ps(_mm512_add_ps(v[2][g][h], v[6][g][h]), _mm512_add_ps(v[3][g][h], v[7][g][h])));
            const __m512 bb = b ? _mm512_loadu_ps(b + r + 16 * h) : _mm512_setzero_ps();
            _mm512_storeu_ps(Y[g] + r + 16 * h, _mm512_add_ps(bb, y));
        }
}

/* the instruction mix (see the top): STENO_PANEL_EMBEDDED, read per call so that a test may switch */
static int panel_embedded(void) {
    const char *e = getenv("STENO_PANEL_EMBEDDED");
    if (e && *e) return strcmp(e, "0") != 0;
    return steno_cpu_is_amd();
}

/* The whole blocks [a, e) of the panel. Its own frame holds the inputs' copies, and it calls no
 * other kernel: the row kernel's frame (~270 KiB) never sits on top of this one. */
__attribute__((noinline)) Z static void panel_rows(const uint16_t *P, const float *b, const float *X, int ldx, int nx,
                                                   int n, int a, int e, float *const *Y) {
    float xbuf[XP_FLOATS] __attribute__((aligned(64)));
    const int eb = panel_embedded();
    const int nc = n / 32, cap = XP_FLOATS / n < 64 ? XP_FLOATS / n : 64;
    for (int i0 = 0; i0 < nx; i0 += cap) {
        const int in = nx - i0 < cap ? nx - i0 : cap;
        /* groups of equal size (40 inputs: 4 of 10, not 12 + 12 + 12 + 4: a small group pays two
         * weight loads for few FMAs) */
        const int ng = (in + PANEL_G - 1) / PANEL_G, gs = (in + ng - 1) / ng;
        for (int g0 = 0; g0 < in; g0 += gs) {
            const int G = in - g0 < gs ? in - g0 : gs;
            for (int g = 0; g < G; g++) prepare_p(X + (size_t)(i0 + g0 + g) * ldx, n, g, G, xbuf + (size_t)g0 * n);
        }
        /* CHUNK blocks (L2-sized) at a time, each group of inputs through all of them: a group's
         * inputs stay in L1 while the blocks come from L2, and only the first group reads (and
         * asks ahead for) the blocks from memory */
        for (int c0 = a; c0 < e; c0 += 32 * CHUNK) {
            const int c1 = c0 + 32 * CHUNK < e ? c0 + 32 * CHUNK : e;
            for (int g0 = 0; g0 < in; g0 += gs) {
                const float *xg = xbuf + (size_t)g0 * n;
                float *const *yg = Y + i0 + g0;
                for (int r = c0; r < c1; r += 32) {
                    const uint16_t *blk = P + (size_t)r * n, *next = !g0 && r + 32 < e ? blk + (size_t)32 * n : NULL;
#define PANEL_BLOCK(G)                                                                                 \
    (eb ? panel_block(blk, next, xg, G, nc, b, yg, r, 1) : panel_block(blk, next, xg, G, nc, b, yg, r, 0))
                    switch (in - g0 < gs ? in - g0 : gs) { /* constant sizes keep acc in registers */
                    case 12: PANEL_BLOCK(12); break;
                    case 11: PANEL_BLOCK(11); break;
                    case 10: PANEL_BLOCK(10); break;
                    case 9: PANEL_BLOCK(9); break;
                    case 8: PANEL_BLOCK(8); break;
                    case 7: PANEL_BLOCK(7); break;
                    case 6: PANEL_BLOCK(6); break;
                    case 5: PANEL_BLOCK(5); break;
                    case 4: PANEL_BLOCK(4); break;
                    case 3: PANEL_BLOCK(3); break;
                    case 2: PANEL_BLOCK(2); break;
                    default: PANEL_BLOCK(1); break;
                    }
#undef PANEL_BLOCK
                }
            }
        }
    }
}

Z void vec_avx512_gemv_f16_panel(const uint16_t *W, const uint16_t *P, const float *b, const float *X, int ldx,
                                 int nx, int n, int r0, int r1, float *const *Y) {
    const int a = (r0 + 31) / 32 * 32, e = r1 / 32 * 32; /* the whole blocks inside [r0, r1) */
    const int block = n > 0 && 8192 / (2 * n) > 0 ? 8192 / (2 * n) : 1; /* vec_gemv_rows_to's */
    if (n % 32 || n > XS_MAX || a >= e) {
        vec_avx512_gemv_f16_batch(W, b, X, ldx, nx, n, r0, r1, Y, block);
        return;
    }
    if (r0 < a) vec_avx512_gemv_f16_batch(W, b, X, ldx, nx, n, r0, a, Y, block);
    if (e < r1) vec_avx512_gemv_f16_batch(W, b, X, ldx, nx, n, e, r1, Y, block);
    panel_rows(P, b, X, ldx, nx, n, a, e, Y);
}
#endif
