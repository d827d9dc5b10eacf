/* mel.c — Whisper's log-mel spectrogram (openai-whisper whisper/audio.py), see mel.h.
 *
 * The STFT runs in double precision with a mixed-radix FFT of 400 = 4·4·5·5 points; two real
 * frames share one complex FFT (frame a in the real part, frame b in the imaginary part) and are
 * separated afterwards. The mel projection uses the float32 filterbank values (as the reference
 * multiplies by the float32 mel_filters.npz) accumulated in double; the log and the clamp are done
 * in float32 in the reference's order, so results stay within float rounding of torch's.
 * Every frame is independent and the global max is order-free, so the result does not depend on how
 * frames are split across threads.
 */
#include "audio/mel.h"

#include "core/error.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N_FFT STENO_N_FFT
#define HOP STENO_HOP_LENGTH
#define N_BINS (N_FFT / 2 + 1)
#define SAMPLE_RATE 16000

/* ---- Slaney mel scale, as librosa.hz_to_mel / mel_to_hz (htk=False) ---- */

static const double F_SP = 200.0 / 3.0;
static const double MIN_LOG_HZ = 1000.0;
static const double MIN_LOG_MEL = 15.0; /* MIN_LOG_HZ / F_SP */

static double log_step(void) { return log(6.4) / 27.0; }

static double hz_to_mel(double hz) {
    if (hz >= MIN_LOG_HZ) return MIN_LOG_MEL + log(hz / MIN_LOG_HZ) / log_step();
    return hz / F_SP;
}

static double mel_to_hz(double mel) {
    if (mel >= MIN_LOG_MEL) return MIN_LOG_HZ * exp(log_step() * (mel - MIN_LOG_MEL));
    return F_SP * mel;
}

steno_status steno_mel_filters(int n_mels, float *out) {
    if (n_mels != 80 && n_mels != 128)
        return steno_fail(STENO_E_INVALID_ARG, "mel filterbank: n_mels must be 80 or 128, got %d", n_mels);
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "mel filterbank: NULL output");

    /* librosa.filters.mel(sr=16000, n_fft=400, n_mels, fmin=0, fmax=8000, htk=False, norm="slaney") */
    double fftfreqs[N_BINS];
    const double bin_hz = 1.0 / ((double)N_FFT * (1.0 / SAMPLE_RATE)); /* np.fft.rfftfreq */
    for (int k = 0; k < N_BINS; k++) fftfreqs[k] = k * bin_hz;

    const int n_pts = n_mels + 2;
    double mel_f[128 + 2];
    const double min_mel = hz_to_mel(0.0), max_mel = hz_to_mel(SAMPLE_RATE / 2.0);
    const double step = (max_mel - min_mel) / (n_pts - 1); /* np.linspace */
    for (int i = 0; i < n_pts; i++) mel_f[i] = mel_to_hz(i == n_pts - 1 ? max_mel : i * step + min_mel);

    for (int i = 0; i < n_mels; i++) {
        const double fdiff_lo = mel_f[i + 1] - mel_f[i], fdiff_hi = mel_f[i + 2] - mel_f[i + 1];
        const double enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        for (int k = 0; k < N_BINS; k++) {
            double lower = -(mel_f[i] - fftfreqs[k]) / fdiff_lo;
            double upper = (mel_f[i + 2] - fftfreqs[k]) / fdiff_hi;
            double w = fmax(0.0, fmin(lower, upper));
            /* librosa stores the triangle in a float32 array, then scales it in place */
            out[i * N_BINS + k] = (float)((double)(float)w * enorm);
        }
    }
    return STENO_OK;
}

/* ---- FFT of 400 points ---- */

typedef struct cplx {
    double re, im;
} cplx;

static const int FFT_FACTORS[] = {4, 4, 5, 5, 1};

/* One filterbank with each filter's non-zero bins [lo, hi). */
typedef struct mel_bank {
    int n_mels;
    float filters[128 * N_BINS]; /* [n_mels][N_BINS] */
    int lo[128], hi[128];
} mel_bank;

struct steno_mel_plan {
    cplx tw[N_FFT];       /* exp(-2πi m / 400) */
    double window[N_FFT]; /* periodic Hann, float32 values as torch.hann_window */
    mel_bank bank[2];     /* 80 and 128 bins */
};

typedef struct steno_mel_plan mel_plan;

/* Recursive decimation-in-time mixed-radix FFT (the kissfft structure): out[0..n) is the DFT of
 * in[0], in[stride], ... */
static void fft_rec(const mel_plan *p, cplx *out, const cplx *in, int n, int stride, const int *factors) {
    const int radix = factors[0], m = n / radix;
    if (m == 1) {
        for (int q = 0; q < radix; q++) out[q] = in[q * stride];
    } else {
        for (int q = 0; q < radix; q++) fft_rec(p, out + q * m, in + q * stride, m, stride * radix, factors + 1);
    }
    const int tstep = N_FFT / n; /* W_n^e = W_400^(e·tstep); q·k·tstep < 400 */
    for (int k = 0; k < m; k++) {
        cplx y[5];
        y[0] = out[k];
        for (int q = 1; q < radix; q++) {
            const cplx a = out[q * m + k], w = p->tw[q * k * tstep];
            y[q] = (cplx){a.re * w.re - a.im * w.im, a.re * w.im + a.im * w.re};
        }
        if (radix == 4) {
            /* DFT-4 needs no multiplies: W_4 = -i */
            const cplx s02 = {y[0].re + y[2].re, y[0].im + y[2].im}, d02 = {y[0].re - y[2].re, y[0].im - y[2].im};
            const cplx s13 = {y[1].re + y[3].re, y[1].im + y[3].im}, d13 = {y[1].re - y[3].re, y[1].im - y[3].im};
            out[k] = (cplx){s02.re + s13.re, s02.im + s13.im};
            out[k + m] = (cplx){d02.re + d13.im, d02.im - d13.re};
            out[k + 2 * m] = (cplx){s02.re - s13.re, s02.im - s13.im};
            out[k + 3 * m] = (cplx){d02.re - d13.im, d02.im + d13.re};
        } else {
            /* DFT-5 with its symmetric pairs (y1 ± y4, y2 ± y3), as kissfft's kf_bfly5 */
            const cplx ya = p->tw[N_FFT / 5], yb = p->tw[2 * N_FFT / 5];
            const cplx s7 = {y[1].re + y[4].re, y[1].im + y[4].im}, s10 = {y[1].re - y[4].re, y[1].im - y[4].im};
            const cplx s8 = {y[2].re + y[3].re, y[2].im + y[3].im}, s9 = {y[2].re - y[3].re, y[2].im - y[3].im};
            out[k] = (cplx){y[0].re + s7.re + s8.re, y[0].im + s7.im + s8.im};
            const cplx s5 = {y[0].re + s7.re * ya.re + s8.re * yb.re, y[0].im + s7.im * ya.re + s8.im * yb.re};
            const cplx s6 = {s10.im * ya.im + s9.im * yb.im, -(s10.re * ya.im + s9.re * yb.im)};
            out[k + m] = (cplx){s5.re - s6.re, s5.im - s6.im};
            out[k + 4 * m] = (cplx){s5.re + s6.re, s5.im + s6.im};
            const cplx s11 = {y[0].re + s7.re * yb.re + s8.re * ya.re, y[0].im + s7.im * yb.re + s8.im * ya.re};
            const cplx s12 = {-s10.im * yb.im + s9.im * ya.im, s10.re * yb.im - s9.re * ya.im};
            out[k + 2 * m] = (cplx){s11.re + s12.re, s11.im + s12.im};
            out[k + 3 * m] = (cplx){s11.re - s12.re, s11.im - s12.im};
        }
    }
}

/* ---- log-mel ---- */

steno_status steno_mel_plan_new(steno_mel_plan **out) {
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "log-mel: NULL output");
    mel_plan *plan = malloc(sizeof *plan);
    if (!plan) return steno_fail(STENO_E_NOMEM, "log-mel: out of memory");
    for (int m = 0; m < N_FFT; m++) {
        const double a = 2.0 * M_PI * m / N_FFT;
        plan->tw[m] = (cplx){cos(a), -sin(a)};
        plan->window[m] = (double)(float)(0.5 - 0.5 * cos(a));
    }
    for (int b = 0; b < 2; b++) {
        mel_bank *k = &plan->bank[b];
        k->n_mels = b ? 128 : 80;
        steno_mel_filters(k->n_mels, k->filters);
        for (int m = 0; m < k->n_mels; m++) {
            const float *w = k->filters + (size_t)m * N_BINS;
            int lo = 0, hi = N_BINS;
            while (lo < hi && w[lo] == 0.0f) lo++;
            while (hi > lo && w[hi - 1] == 0.0f) hi--;
            k->lo[m] = lo;
            k->hi[m] = hi;
        }
    }
    *out = plan;
    return STENO_OK;
}

void steno_mel_plan_free(steno_mel_plan *p) { free(p); }

/* Sample i of the reflect-padded signal (torch.stft center=True, pad_mode="reflect"): index i is
 * relative to the unpadded start, so i ranges over [-N_FFT/2, len + N_FFT/2). */
static inline double padded_sample(const steno_mel_signal *s, long long i) {
    const long long len = (long long)s->len;
    if (i < 0) i = -i;
    else if (i >= len) i = 2 * (len - 1) - i;
    return (size_t)i < s->n ? (double)s->x[(size_t)i - s->x0] : 0.0;
}

static void frame_into(const mel_plan *p, const steno_mel_signal *s, int t, double *re_or_im, size_t stride) {
    const long long start = (long long)t * HOP - N_FFT / 2;
    for (int k = 0; k < N_FFT; k++) re_or_im[k * stride] = padded_sample(s, start + k) * p->window[k];
}

/* The power spectra of frames t and t+1 (t+1 only when pair): one complex FFT of frame t in the
 * real part and frame t+1 in the imaginary part. */
static void stft_pair(const mel_plan *p, const steno_mel_signal *s, int t, int pair, double power[2][N_BINS]) {
    cplx in[N_FFT], out[N_FFT];
    frame_into(p, s, t, &in[0].re, 2);
    if (pair) frame_into(p, s, t + 1, &in[0].im, 2);
    else for (int k = 0; k < N_FFT; k++) in[k].im = 0.0;
    fft_rec(p, out, in, N_FFT, 1, FFT_FACTORS);
    /* Z = A + iB with A, B the spectra of the two real frames:
     * A[k] = (Z[k] + conj Z[N-k]) / 2, B[k] = (Z[k] - conj Z[N-k]) / 2i */
    for (int k = 0; k < N_BINS; k++) {
        const cplx z = out[k], zc = out[(N_FFT - k) % N_FFT];
        const double ar = 0.5 * (z.re + zc.re), ai = 0.5 * (z.im - zc.im);
        const double br = 0.5 * (z.im + zc.im), bi = -0.5 * (z.re - zc.re);
        power[0][k] = ar * ar + ai * ai;
        power[1][k] = br * br + bi * bi;
    }
}

/* log10(max(mel power, 1e-10)) of one frame's power spectrum, in float32 as the reference; into
 * col[m * stride] when col is not NULL; returns the frame's max. */
static float project(const mel_bank *k, const double *power, float *col, size_t stride) {
    const float floor_ = 1e-10f; /* torch.clamp(min=1e-10) on a float32 tensor */
    float max = -INFINITY;
    for (int m = 0; m < k->n_mels; m++) {
        const float *w = k->filters + (size_t)m * N_BINS;
        double acc = 0.0;
        for (int b = k->lo[m]; b < k->hi[m]; b++) acc += (double)w[b] * power[b];
        float v = (float)acc;
        if (!(v >= floor_)) v = floor_;
        v = log10f(v);
        if (v > max) max = v;
        if (col) col[(size_t)m * stride] = v;
    }
    return max;
}

static const mel_bank *bank_of(const mel_plan *p, int n_mels) { return &p->bank[n_mels == 128]; }

/* Frames are computed in the pairs (2k, 2k+1), the last frame of an odd count alone: the pairing
 * changes the rounding, so every caller must use the same one to get the same bits. */
float steno_mel_log10_frames(const steno_mel_plan *p, const steno_mel_signal *s, int n_mels, int n_frames, int t0,
                             int t1, float *out, size_t stride) {
    const mel_bank *k = bank_of(p, n_mels);
    double power[2][N_BINS];
    float max = -INFINITY;
    for (int t = t0 & ~1; t < t1; t += 2) {
        const int pair = t + 1 < n_frames;
        stft_pair(p, s, t, pair, power);
        for (int f = 0; f <= pair && t + f < t1; f++) {
            if (t + f < t0) continue;
            const float v = project(k, power[f], out ? out + (t + f - t0) : NULL, stride);
            if (v > max) max = v;
        }
    }
    return max;
}

void steno_mel_max_frames(const steno_mel_plan *p, const steno_mel_signal *s, int n_frames, int t0, int t1,
                          float max[2]) {
    double power[2][N_BINS];
    for (int t = t0 & ~1; t < t1; t += 2) {
        const int pair = t + 1 < n_frames;
        stft_pair(p, s, t, pair, power);
        for (int f = 0; f <= pair && t + f < t1; f++) {
            if (t + f < t0) continue;
            for (int b = 0; b < 2; b++) {
                const float v = project(&p->bank[b], power[f], NULL, 0);
                if (v > max[b]) max[b] = v;
            }
        }
    }
}

float steno_mel_silence_log10(void) { return log10f(1e-10f); }

void steno_mel_normalize(float *v, size_t n, float max) {
    /* log_spec = maximum(log_spec, log_spec.max() - 8.0); (log_spec + 4.0) / 4.0, in float32 */
    const float lo = max - 8.0f;
    for (size_t i = 0; i < n; i++) {
        const float x = v[i] > lo ? v[i] : lo;
        v[i] = (x + 4.0f) / 4.0f;
    }
}

typedef struct mel_job {
    const mel_plan *plan;
    const steno_mel_signal *sig;
    int n_mels;
    int n_frames; /* frames kept */
    int t0, t1;   /* this job's frames [t0, t1) */
    float *mel;   /* [n_mels][n_frames], log10 of the clamped mel power on return */
    float max;    /* max of this job's log10 values */
} mel_job;

static void *mel_worker(void *arg) {
    mel_job *j = arg;
    j->max = steno_mel_log10_frames(j->plan, j->sig, j->n_mels, j->n_frames, j->t0, j->t1, j->mel + j->t0,
                                    (size_t)j->n_frames);
    return NULL;
}

#define MEL_MAX_THREADS 8
/* below this many frames a thread costs more than it saves */
#define MEL_FRAMES_PER_THREAD 2000

steno_status steno_log_mel(const float *samples, size_t n, size_t pad_samples, int n_mels, steno_mel *out) {
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "log-mel: NULL output");
    out->n_mels = 0;
    out->n_frames = 0;
    out->data = NULL;
    if (n_mels != 80 && n_mels != 128)
        return steno_fail(STENO_E_INVALID_ARG, "log-mel: n_mels must be 80 or 128, got %d", n_mels);
    if (!samples && n > 0) return steno_fail(STENO_E_INVALID_ARG, "log-mel: NULL samples");
    if (pad_samples > SIZE_MAX - n) return steno_fail(STENO_E_INVALID_ARG, "log-mel: length overflows");
    const size_t len = n + pad_samples;
    /* reflect padding of n_fft/2 needs more than n_fft/2 samples (torch raises otherwise) */
    if (len <= N_FFT / 2)
        return steno_fail(STENO_E_INVALID_ARG,
                          "log-mel: %zu samples (with padding) is too short; at least %d are needed", len,
                          N_FFT / 2 + 1);
    if (len / HOP > (size_t)INT32_MAX / 128)
        return steno_fail(STENO_E_INVALID_ARG, "log-mel: %zu samples is too long", len);
    const int n_frames = (int)(len / HOP);

    mel_plan *plan = NULL;
    float *mel = malloc(sizeof(float) * (size_t)n_mels * (size_t)n_frames);
    if (!mel || steno_mel_plan_new(&plan) != STENO_OK) {
        free(mel);
        return steno_fail(STENO_E_NOMEM, "log-mel: out of memory for %d frames", n_frames);
    }
    const steno_mel_signal sig = {samples, 0, n, n, len};

    int n_threads = n_frames / MEL_FRAMES_PER_THREAD;
    if (n_threads < 1) n_threads = 1;
    if (n_threads > MEL_MAX_THREADS) n_threads = MEL_MAX_THREADS;
    mel_job jobs[MEL_MAX_THREADS];
    pthread_t tids[MEL_MAX_THREADS];
    int started[MEL_MAX_THREADS] = {0};
    for (int i = 0; i < n_threads; i++) {
        /* even frame boundaries keep the pairing the same for any thread count */
        int t0 = (int)((long long)n_frames * i / n_threads) & ~1;
        int t1 = i == n_threads - 1 ? n_frames : (int)((long long)n_frames * (i + 1) / n_threads) & ~1;
        jobs[i] = (mel_job){plan, &sig, n_mels, n_frames, t0, t1, mel, -INFINITY};
        if (i > 0) started[i] = pthread_create(&tids[i], NULL, mel_worker, &jobs[i]) == 0;
    }
    mel_worker(&jobs[0]);
    for (int i = 1; i < n_threads; i++) {
        if (started[i]) pthread_join(tids[i], NULL);
        else mel_worker(&jobs[i]);
    }
    float max = -INFINITY;
    for (int i = 0; i < n_threads; i++)
        if (jobs[i].max > max) max = jobs[i].max;
    steno_mel_normalize(mel, (size_t)n_mels * (size_t)n_frames, max);
    steno_mel_plan_free(plan);
    out->n_mels = n_mels;
    out->n_frames = n_frames;
    out->data = mel;
    return STENO_OK;
}

void steno_mel_free(steno_mel *m) {
    if (!m) return;
    free(m->data);
    m->data = NULL;
    m->n_mels = 0;
    m->n_frames = 0;
}
