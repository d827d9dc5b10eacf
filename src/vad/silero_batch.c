/* silero_batch.c — the Silero VAD's encoder (STFT, four convolutions, the LSTM's input projection)
 * over many frames at once, on AVX-512: bit-identical to silero.c's encode_frame.
 *
 * Why: frame by frame, each output is one dot product of a weight row with that frame's input, on
 * one 8-lane chain per four rows (silero.c dot4): ~4.6 G MAC/s per core, and the encoder took 0.86 s
 * of `steno vad` on a 10-minute file. Here the lanes run over 16 weight rows and an input value is
 * broadcast, so a weight vector serves three inputs (frames, or STFT/convolution positions) from
 * registers.
 *
 * The same bits: silero.c's dot(a, b, n) keeps 8 lanes, lane l summing a[k]·b[k] for k ≡ l (mod 8)
 * in increasing k (a multiply, then an add: no FMA), and finishes ((l0 + l4) + (l2 + l6)) +
 * ((l1 + l5) + (l3 + l7)). Here lane l of that sum is accumulator l (one per input, 16 rows wide),
 * fed in the same k order by the same multiply and add, and finished by the same additions. The
 * bias is added after, as there. test_vad_batch compares the two encoders bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "vad/silero_internal.h"

static void panel_free(silero_panel *p) {
    free(p->p);
    p->p = NULL;
}

static int panel_make(silero_panel *p, const float *W, int rows, int n) {
    const int nb = (rows + 15) / 16;
    p->rows = rows;
    p->n = n;
    p->p = aligned_alloc(64, sizeof(float) * (size_t)nb * 16 * n);
    if (!p->p) return -1;
    for (int b = 0; b < nb; b++)
        for (int k = 0; k < n; k++)
            for (int r = 0; r < 16; r++) {
                const int row = 16 * b + r;
                p->p[((size_t)b * n + k) * 16 + r] = row < rows ? W[(size_t)row * n + k] : 0.0f;
            }
    return 0;
}

void silero_batch_free(steno_vad *vad) {
    panel_free(&vad->pb);
    for (int l = 0; l < 4; l++) panel_free(&vad->pc[l]);
    panel_free(&vad->pih);
    vad->batched = 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* No multiply-add may become an FMA (silero.c's dot multiplies, then adds): GCC by attribute,
 * clang by pragma (it ignores the attribute) */
#if defined(__clang__)
#pragma clang fp contract(off)
#define NO_FMA_CONTRACT
#else
#define NO_FMA_CONTRACT , optimize("fp-contract=off")
#endif
#define Z __attribute__((target("avx2,fma,avx512f,avx512dq") NO_FMA_CONTRACT))
#define ZI __attribute__((target("avx2,fma,avx512f,avx512dq") NO_FMA_CONTRACT, always_inline)) static inline

/* y[g][0..16) = bias + dot(rows of the block, x[g]) for G inputs (a constant after inlining);
 * relu: max(·, 0) as silero.c's `v > 0 ? v : 0` (a NaN goes to 0 in both) */
ZI void block_g(const float *w, int n, const float *const *x, int G, const float *bias, int relu, float *const *y) {
    __m512 acc[3][8];
    for (int g = 0; g < G; g++)
        for (int l = 0; l < 8; l++) acc[g][l] = _mm512_setzero_ps();
    int k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; l++) {
            const __m512 wv = _mm512_load_ps(w + (size_t)(k + l) * 16);
            for (int g = 0; g < G; g++)
                acc[g][l] = _mm512_add_ps(acc[g][l], _mm512_mul_ps(wv, _mm512_set1_ps(x[g][k + l])));
        }
    for (; k < n; k++) { /* dot_finish's tail: lane k mod 8 */
        const __m512 wv = _mm512_load_ps(w + (size_t)k * 16);
        for (int g = 0; g < G; g++)
            acc[g][k & 7] = _mm512_add_ps(acc[g][k & 7], _mm512_mul_ps(wv, _mm512_set1_ps(x[g][k])));
    }
    const __m512 b = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
    for (int g = 0; g < G; g++) {
        const __m512 d = _mm512_add_ps(
            _mm512_add_ps(_mm512_add_ps(acc[g][0], acc[g][4]), _mm512_add_ps(acc[g][2], acc[g][6])),
            _mm512_add_ps(_mm512_add_ps(acc[g][1], acc[g][5]), _mm512_add_ps(acc[g][3], acc[g][7])));
        __m512 v = bias ? _mm512_add_ps(b, d) : d;
        if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
        _mm512_storeu_ps(y[g], v);
    }
}

/* Y[i][0..rows_padded) for inputs x[0..ni): every 16-row block of the panel against the inputs in
 * threes; bias (padded to the panel's rows) or NULL. */
Z static void dots(const silero_panel *p, const float *bias_pad, int relu, const float *const *x, int ni, float *Y,
                   int ldy) {
    const int nb = (p->rows + 15) / 16;
    for (int b = 0; b < nb; b++) {
        const float *w = p->p + (size_t)b * p->n * 16;
        const float *bb = bias_pad ? bias_pad + 16 * b : NULL;
        int i = 0;
        for (; i + 3 <= ni; i += 3) {
            float *y[3] = {Y + (size_t)i * ldy + 16 * b, Y + (size_t)(i + 1) * ldy + 16 * b,
                           Y + (size_t)(i + 2) * ldy + 16 * b};
            block_g(w, p->n, x + i, 3, bb, relu, y);
        }
        if (ni - i == 2) {
            float *y[2] = {Y + (size_t)i * ldy + 16 * b, Y + (size_t)(i + 1) * ldy + 16 * b};
            block_g(w, p->n, x + i, 2, bb, relu, y);
        } else if (ni - i == 1) {
            float *y[1] = {Y + (size_t)i * ldy + 16 * b};
            block_g(w, p->n, x + i, 1, bb, relu, y);
        }
    }
}

#define CHUNK 16 /* frames per pass: their inputs stay in L2 */
#define PADDED(r) (((r) + 15) / 16 * 16)

/* One convolution (kernel 3, zero padding 1) over CHUNK frames' [in][t_in] maps in src (frame
 * stride sstride): the receptive fields as inputs (silero.c conv3_relu's col order [i][k]), the
 * outputs to dst [frame][out][t_out]. Returns t_out. */
Z static int conv_frames(const steno_vad *vad, int l, const float *src, int sstride, int t_in, int nf, float *dst,
                         int dstride, float *cols, float *Y, const float *bias_pad) {
    const conv3 *cv = &vad->conv[l];
    const int t_out = (t_in + 2 - 3) / cv->stride + 1, n = cv->in * 3, ld = PADDED(cv->out);
    const float *xs[CHUNK * N_STFT_FRAMES] = {0};
    int m = 0;
    for (int f = 0; f < nf; f++)
        for (int t = 0; t < t_out; t++, m++) {
            float *col = cols + (size_t)m * n;
            const float *x = src + (size_t)f * sstride;
            for (int i = 0; i < cv->in; i++)
                for (int k = 0; k < 3; k++) {
                    const int s = t * cv->stride + k - 1;
                    col[i * 3 + k] = s >= 0 && s < t_in ? x[i * t_in + s] : 0.0f;
                }
            xs[m] = col;
        }
    dots(&vad->pc[l], bias_pad, 1, xs, m, Y, ld);
    for (int f = 0, q = 0; f < nf; f++)
        for (int t = 0; t < t_out; t++, q++)
            for (int o = 0; o < cv->out; o++) dst[(size_t)f * dstride + o * t_out + t] = Y[(size_t)q * ld + o];
    return t_out;
}

/* A chunk's scratch (~290 KiB: on the heap, not on a thread's stack) */
typedef struct chunk_scratch {
    float xp[CHUNK][SILERO_INPUT + 2 * PAD];
    float maps[2][CHUNK][N_FFT_BINS * N_STFT_FRAMES]; /* [129][4] magnitudes, then [c][t] maps */
    float cols[CHUNK * N_STFT_FRAMES * 129 * 3];
    float Y[CHUNK * N_STFT_FRAMES * 272];
} chunk_scratch;

Z static void encode_chunk(const steno_vad *vad, const float *x, int nf, float *xg, chunk_scratch *S) {
    float (*xp)[SILERO_INPUT + 2 * PAD] = S->xp;
    float (*maps)[CHUNK][N_FFT_BINS * N_STFT_FRAMES] = S->maps;
    float *cols = S->cols, *Y = S->Y;
    float bias[4][128], bih[N_GATES];
    for (int l = 0; l < 4; l++) {
        memset(bias[l], 0, sizeof bias[l]);
        memcpy(bias[l], vad->conv[l].b, sizeof(float) * vad->conv[l].out);
    }
    memcpy(bih, vad->b_ih, sizeof bih);
    const float *segs[CHUNK * N_STFT_FRAMES] = {0};
    for (int f = 0; f < nf; f++) { /* ReflectionPad1d as encode_frame */
        const float *s = x + (size_t)f * SILERO_INPUT;
        float *p = xp[f];
        memcpy(p + PAD, s, sizeof(float) * SILERO_INPUT);
        for (int j = 0; j < PAD; j++) {
            p[PAD - 1 - j] = s[j + 1];
            p[PAD + SILERO_INPUT + j] = s[SILERO_INPUT - 2 - j];
        }
        for (int t = 0; t < N_STFT_FRAMES; t++) segs[f * N_STFT_FRAMES + t] = p + (t + 1) * STFT_HOP;
    }
    /* STFT: rows 0..128 real, 129..257 imaginary, per (frame, t) segment */
    dots(&vad->pb, NULL, 0, segs, nf * N_STFT_FRAMES, Y, 272);
    for (int f = 0; f < nf; f++)
        for (int t = 0; t < N_STFT_FRAMES; t++) {
            const float *y = Y + (size_t)(f * N_STFT_FRAMES + t) * 272;
            for (int b = 0; b < N_FFT_BINS; b++)
                maps[0][f][b * N_STFT_FRAMES + t] = sqrtf(y[b] * y[b] + y[b + N_FFT_BINS] * y[b + N_FFT_BINS]);
        }
    const int stride = N_FFT_BINS * N_STFT_FRAMES;
    int t = conv_frames(vad, 0, maps[0][0], stride, N_STFT_FRAMES, nf, maps[1][0], stride, cols, Y, bias[0]);
    t = conv_frames(vad, 1, maps[1][0], stride, t, nf, maps[0][0], stride, cols, Y, bias[1]);
    t = conv_frames(vad, 2, maps[0][0], stride, t, nf, maps[1][0], stride, cols, Y, bias[2]);
    conv_frames(vad, 3, maps[1][0], stride, t, nf, maps[0][0], stride, cols, Y, bias[3]); /* [128][1] */
    const float *es[CHUNK];
    for (int f = 0; f < nf; f++) es[f] = maps[0][f];
    dots(&vad->pih, bih, 0, es, nf, xg, N_GATES);
}

int silero_encode_frames(const steno_vad *vad, const float *x, size_t n, float *xg) {
    chunk_scratch *S = aligned_alloc(64, (sizeof(chunk_scratch) + 63) & ~(size_t)63);
    if (!S) return -1;
    for (size_t f = 0; f < n; f += CHUNK) {
        const int nf = n - f < CHUNK ? (int)(n - f) : CHUNK;
        encode_chunk(vad, x + f * SILERO_INPUT, nf, xg + f * N_GATES, S);
    }
    free(S);
    return 0;
}

int silero_batch_init(steno_vad *vad) {
    vad->batched = 0;
    if (!steno_cpu_avx512_allowed() || !steno_cpu_has_avx512_skx()) return 0;
    int bad = panel_make(&vad->pb, vad->basis, 2 * N_FFT_BINS, STFT_KERNEL);
    for (int l = 0; l < 4; l++) bad |= panel_make(&vad->pc[l], vad->conv[l].w, vad->conv[l].out, vad->conv[l].in * 3);
    bad |= panel_make(&vad->pih, vad->w_ih, N_GATES, SILERO_HIDDEN);
    if (bad) {
        silero_batch_free(vad);
        return -1;
    }
    vad->batched = 1;
    return 0;
}
#else
int silero_encode_frames(const steno_vad *vad, const float *x, size_t n, float *xg) {
    (void)vad, (void)x, (void)n, (void)xg; /* never called: batched stays 0 */
    return -1;
}

int silero_batch_init(steno_vad *vad) {
    vad->batched = 0;
    return 0;
}
#endif
