/* silero.c — Silero VAD v6 (16 kHz) forward pass, read from the ONNX graph of faster-whisper
 * 1.2.1's assets/silero_vad_v6.onnx (tools/convert_silero_vad.py checks that graph op by op):
 *
 *   x [576] --reflection pad 128|128--> [832]
 *     --STFT: conv with the fixed basis [258, 1, 256], stride 128--> [258, 5], frame 0 dropped
 *     --magnitude sqrt(re^2 + im^2)--> [129, 4]
 *     --conv3 (129->128, s1) ReLU, conv3 (128->64, s2) ReLU, conv3 (64->64, s2) ReLU,
 *       conv3 (64->128, s1) ReLU--> [128, 1]
 *     --LSTM (hidden 128; state carried from frame to frame)--> ReLU
 *     --1x1 conv (128->1)--> sigmoid = speech probability
 *
 * The encoder and the LSTM's input projection depend only on their frame, so frames run in
 * parallel; the recurrence then runs in frame order. Every dot product sums in one fixed order
 * (8 lanes, then the lanes pairwise), so results do not depend on the thread count. */
#include "vad/silero.h"

#include <math.h>
#include <stdio.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"
#include "core/threadpool.h"
#include "formats/safetensors.h"
#include "vad/silero_internal.h"


/* dot()'s tail from element k (lane k mod 8) and its pairwise finish of the 8 lanes */
static float dot_finish(float *lane, const float *a, const float *b, int k, int n) {
    for (; k < n; k++) lane[k & 7] += a[k] * b[k];
    return ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
}

static float dot(const float *a, const float *b, int n) {
    float lane[8] = {0};
    int k = 0;
    for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; l++) lane[l] += a[k + l] * b[k + l];
    return dot_finish(lane, a, b, k, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Four of dot()'s sums at once, each lane the same multiply then add (no FMA in this target, so
 * none is contracted) and the same pairwise finish: the same bits. Four independent chains instead
 * of one keep the adds' latency hidden (the encoder ran at ~2 MACs per cycle on one chain). */
__attribute__((target("avx2"))) static void dot4_avx2(const float *const *a, const float *b, int n, float *out) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    int k = 0;
    for (; k + 8 <= n; k += 8) {
        const __m256 x = _mm256_loadu_ps(b + k);
        s0 = _mm256_add_ps(s0, _mm256_mul_ps(_mm256_loadu_ps(a0 + k), x));
        s1 = _mm256_add_ps(s1, _mm256_mul_ps(_mm256_loadu_ps(a1 + k), x));
        s2 = _mm256_add_ps(s2, _mm256_mul_ps(_mm256_loadu_ps(a2 + k), x));
        s3 = _mm256_add_ps(s3, _mm256_mul_ps(_mm256_loadu_ps(a3 + k), x));
    }
    const __m256 s[4] = {s0, s1, s2, s3};
    for (int i = 0; i < 4; i++) {
        float lane[8];
        _mm256_storeu_ps(lane, s[i]);
        out[i] = dot_finish(lane, a[i], b, k, n);
    }
}
#endif

/* out[i] = dot(a[i], b, n) for i < 4 */
static void dot4(const float *const *a, const float *b, int n, float *out) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (steno_cpu_has_avx2_fma_f16c()) {
        dot4_avx2(a, b, n, out);
        return;
    }
#endif
    for (int i = 0; i < 4; i++) out[i] = dot(a[i], b, n);
}

/* y[g] = bias[g] + dot(W row g, x) for the N_GATES rows of W [N_GATES][SILERO_HIDDEN] */
static void gates4(const float *W, const float *bias, const float *x, float *y) {
    for (int g = 0; g < N_GATES; g += 4) { /* N_GATES = 4 · 128 */
        const float *w[4] = {W + (size_t)g * SILERO_HIDDEN, W + (size_t)(g + 1) * SILERO_HIDDEN,
                             W + (size_t)(g + 2) * SILERO_HIDDEN, W + (size_t)(g + 3) * SILERO_HIDDEN};
        float d[4];
        dot4(w, x, SILERO_HIDDEN, d);
        for (int i = 0; i < 4; i++) y[g + i] = bias[g + i] + d[i];
    }
}

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* out[o][t] = relu(b[o] + sum_{i,k} w[o][i][k] x[i][t*s + k - 1]), zero padding 1 each side.
 * col is scratch of in*3 floats: one output position's receptive field in w's [i][k] order. */
static int conv3_relu(const conv3 *cv, const float *x, int t_in, float *out, float *col) {
    int t_out = (t_in + 2 - 3) / cv->stride + 1;
    for (int t = 0; t < t_out; t++) {
        for (int i = 0; i < cv->in; i++)
            for (int k = 0; k < 3; k++) {
                int src = t * cv->stride + k - 1;
                col[i * 3 + k] = src >= 0 && src < t_in ? x[i * t_in + src] : 0.0f;
            }
        const int n = cv->in * 3;
        int o = 0;
        for (; o + 4 <= cv->out; o += 4) {
            const float *w[4] = {cv->w + (size_t)o * n, cv->w + (size_t)(o + 1) * n, cv->w + (size_t)(o + 2) * n,
                                 cv->w + (size_t)(o + 3) * n};
            float d[4];
            dot4(w, col, n, d);
            for (int i = 0; i < 4; i++) {
                const float v = cv->b[o + i] + d[i];
                out[(o + i) * t_out + t] = v > 0.0f ? v : 0.0f;
            }
        }
        for (; o < cv->out; o++) {
            float v = cv->b[o] + dot(cv->w + (size_t)o * n, col, n);
            out[o * t_out + t] = v > 0.0f ? v : 0.0f;
        }
    }
    return t_out;
}

/* One frame's encoder output projected by the LSTM's input weights: xg[4H] = W_ih e + b_ih. */
static void encode_frame(const steno_vad *vad, const float *x, float *xg) {
    float xp[SILERO_INPUT + 2 * PAD];
    float a[128 * N_STFT_FRAMES], b[128 * N_STFT_FRAMES], col[129 * 3];
    /* ReflectionPad1d: the edge sample is not repeated. */
    memcpy(xp + PAD, x, sizeof(float) * SILERO_INPUT);
    for (int j = 0; j < PAD; j++) {
        xp[PAD - 1 - j] = x[j + 1];
        xp[PAD + SILERO_INPUT + j] = x[SILERO_INPUT - 2 - j];
    }
    float mag[N_FFT_BINS * N_STFT_FRAMES];
    for (int t = 0; t < N_STFT_FRAMES; t++) {
        const float *seg = xp + (t + 1) * STFT_HOP;
        int f = 0;
        for (; f + 2 <= N_FFT_BINS; f += 2) { /* the real and imaginary rows of two bins */
            const float *bs = vad->basis;
            const float *w[4] = {bs + (size_t)f * STFT_KERNEL, bs + (size_t)(f + N_FFT_BINS) * STFT_KERNEL,
                                 bs + (size_t)(f + 1) * STFT_KERNEL, bs + (size_t)(f + 1 + N_FFT_BINS) * STFT_KERNEL};
            float d[4];
            dot4(w, seg, STFT_KERNEL, d);
            mag[f * N_STFT_FRAMES + t] = sqrtf(d[0] * d[0] + d[1] * d[1]);
            mag[(f + 1) * N_STFT_FRAMES + t] = sqrtf(d[2] * d[2] + d[3] * d[3]);
        }
        for (; f < N_FFT_BINS; f++) {
            float re = dot(vad->basis + (size_t)f * STFT_KERNEL, seg, STFT_KERNEL);
            float im = dot(vad->basis + (size_t)(f + N_FFT_BINS) * STFT_KERNEL, seg, STFT_KERNEL);
            mag[f * N_STFT_FRAMES + t] = sqrtf(re * re + im * im);
        }
    }
    int t = conv3_relu(&vad->conv[0], mag, N_STFT_FRAMES, a, col);
    t = conv3_relu(&vad->conv[1], a, t, b, col);
    t = conv3_relu(&vad->conv[2], b, t, a, col);
    conv3_relu(&vad->conv[3], a, t, b, col); /* [128][1] */
    gates4(vad->w_ih, vad->b_ih, b, xg);
}

typedef struct encode_job {
    const steno_vad *vad;
    const float *x;
    size_t n_frames;
    float *xg;
} encode_job;

static void encode_task(void *ctx, int task, int n_tasks) {
    encode_job *j = ctx;
    size_t lo = j->n_frames * (size_t)task / (size_t)n_tasks, hi = j->n_frames * (size_t)(task + 1) / (size_t)n_tasks;
    if (j->vad->batched && silero_encode_frames(j->vad, j->x + lo * SILERO_INPUT, hi - lo, j->xg + lo * N_GATES) == 0)
        return;
    for (size_t i = lo; i < hi; i++) encode_frame(j->vad, j->x + i * SILERO_INPUT, j->xg + i * N_GATES);
}

void silero_forward(const steno_vad *vad, const float *x, size_t n_frames, float *h, float *c, steno_pool *pool,
                    float *xg, float *probs) {
    encode_job job = {vad, x, n_frames, xg};
    if (pool && n_frames > 1) steno_pool_run(pool, encode_task, &job, steno_pool_threads(pool));
    else encode_task(&job, 0, 1);
    /* The LSTM cell (PyTorch's nn.LSTM): gates i, f, g, o; c = f c + i g; h = o tanh(c). */
    for (size_t i = 0; i < n_frames; i++) {
        float gates[N_GATES];
        const float *g_in = xg + i * N_GATES;
        gates4(vad->w_hh, vad->b_hh, h, gates);
        for (int g = 0; g < N_GATES; g++) gates[g] = g_in[g] + gates[g];
        float r[SILERO_HIDDEN]; /* the decoder's ReLU of h */
        for (int k = 0; k < SILERO_HIDDEN; k++) {
            float ig = sigmoidf(gates[k]), fg = sigmoidf(gates[SILERO_HIDDEN + k]);
            float gg = tanhf(gates[2 * SILERO_HIDDEN + k]), og = sigmoidf(gates[3 * SILERO_HIDDEN + k]);
            c[k] = fg * c[k] + ig * gg;
            h[k] = og * tanhf(c[k]);
            r[k] = h[k] > 0.0f ? h[k] : 0.0f;
        }
        probs[i] = sigmoidf(vad->dec_b[0] + dot(vad->dec_w, r, SILERO_HIDDEN));
    }
}

/* ---- loading ------------------------------------------------------------------------------- */

static const int CONV_IN[4] = {129, 128, 64, 64}, CONV_OUT[4] = {128, 64, 64, 128}, CONV_STRIDE[4] = {1, 2, 2, 1};

steno_status steno_vad_load(const char *path, steno_vad **out) {
    if (!path || !out) return steno_fail(STENO_E_INVALID_ARG, "steno_vad_load: NULL argument");
    *out = NULL;
    steno_vad *v = calloc(1, sizeof *v);
    if (!v) return steno_fail(STENO_E_NOMEM, "%s: out of memory", path);
    steno_status s = steno_safetensors_open(path, 16u << 20, &v->st);
    const size_t basis[] = {258, 1, 256}, gates_hh[] = {N_GATES, SILERO_HIDDEN}, gates[] = {N_GATES};
    const size_t dec_w[] = {1, 128, 1}, one[] = {1};
    if (s == STENO_OK) s = steno_safetensors_f32(v->st, "encoder.feature_extractor.forward_basis_buffer", basis, 3, &v->basis);
    for (int l = 0; l < 4 && s == STENO_OK; l++) {
        char name[64];
        const size_t w[] = {(size_t)CONV_OUT[l], (size_t)CONV_IN[l], 3}, b[] = {(size_t)CONV_OUT[l]};
        v->conv[l] = (conv3){NULL, NULL, CONV_IN[l], CONV_OUT[l], CONV_STRIDE[l]};
        snprintf(name, sizeof name, "encoder.conv_layers.%d.weight", l);
        s = steno_safetensors_f32(v->st, name, w, 3, &v->conv[l].w);
        snprintf(name, sizeof name, "encoder.conv_layers.%d.bias", l);
        if (s == STENO_OK) s = steno_safetensors_f32(v->st, name, b, 1, &v->conv[l].b);
    }
    if (s == STENO_OK) s = steno_safetensors_f32(v->st, "decoder.rnn.weight_ih", gates_hh, 2, &v->w_ih);
    if (s == STENO_OK) s = steno_safetensors_f32(v->st, "decoder.rnn.weight_hh", gates_hh, 2, &v->w_hh);
    if (s == STENO_OK) s = steno_safetensors_f32(v->st, "decoder.rnn.bias_ih", gates, 1, &v->b_ih);
    if (s == STENO_OK) s = steno_safetensors_f32(v->st, "decoder.rnn.bias_hh", gates, 1, &v->b_hh);
    if (s == STENO_OK) s = steno_safetensors_f32(v->st, "decoder.conv1d.weight", dec_w, 3, &v->dec_w);
    if (s == STENO_OK) s = steno_safetensors_f32(v->st, "decoder.conv1d.bias", one, 1, &v->dec_b);
    if (s != STENO_OK) {
        steno_vad_free(v);
        return s;
    }
    silero_batch_init(v); /* out of memory there: the frame-by-frame encoder serves */
    *out = v;
    return STENO_OK;
}

void steno_vad_free(steno_vad *vad) {
    if (!vad) return;
    silero_batch_free(vad);
    steno_safetensors_close(vad->st);
    free(vad);
}
