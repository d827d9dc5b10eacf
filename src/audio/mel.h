/* mel.h — Whisper's log-mel spectrogram, exactly as openai-whisper computes it
 * (whisper/audio.py: log_mel_spectrogram, mel_filters).
 *
 *   STFT: n_fft 400, hop 160, periodic Hann window, reflect padding of n_fft/2 on both sides
 *         (torch.stft center=True), magnitudes squared, the last frame dropped;
 *   mel:  Slaney-style filterbank (librosa.filters.mel(sr=16000, n_fft=400, n_mels, htk=False,
 *         norm="slaney")), 80 or 128 bins;
 *   log:  log10(max(mel, 1e-10)), clamped to (global max − 8), then (x + 4) / 4.
 */
#ifndef STENO_AUDIO_MEL_H
#define STENO_AUDIO_MEL_H

#include <stddef.h>
#include "steno.h"

#define STENO_N_FFT 400
#define STENO_HOP_LENGTH 160
#define STENO_CHUNK_SAMPLES 480000 /* 30 s at 16 kHz */
#define STENO_N_FRAMES 3000        /* mel frames per 30-s window */

/** A log-mel spectrogram: data is [n_mels][n_frames] row-major float32, owned (free with
 *  steno_mel_free). */
typedef struct steno_mel {
    int n_mels;
    int n_frames;
    float *data;
} steno_mel;

/** Slaney mel filterbank, [n_mels][n_fft/2 + 1] row-major float32 into out (caller-allocated,
 *  n_mels * 201 floats). n_mels must be 80 or 128. Follows librosa.filters.mel (htk=False,
 *  norm="slaney"), which produced whisper/assets/mel_filters.npz. */
steno_status steno_mel_filters(int n_mels, float *out);

/** Computes log_mel_spectrogram(samples, n_mels, padding=pad_samples): the samples are followed by
 *  pad_samples zeros before the STFT (openai-whisper pads N_SAMPLES = 480000 in transcribe()).
 *  n_frames = (n + pad_samples) / 160 (the STFT's last frame is dropped). n may be 0. */
steno_status steno_log_mel(const float *samples, size_t n, size_t pad_samples, int n_mels,
                           steno_mel *out);

void steno_mel_free(steno_mel *m);

/* ---- frame by frame: the same values, for a signal seen through a bounded buffer ---- */

/** FFT tables, the Hann window and both filterbanks (80 and 128 bins); read-only once made, so
 *  one plan may serve several threads. Free with steno_mel_plan_free. Errors: STENO_E_NOMEM. */
typedef struct steno_mel_plan steno_mel_plan;
steno_status steno_mel_plan_new(steno_mel_plan **out);
void steno_mel_plan_free(steno_mel_plan *p);

/** The signal the STFT sees, through a window: x[0..nx) holds input samples [x0, x0 + nx); the
 *  input has n real samples, then zeros up to len = n + padding. A frame t reads samples
 *  [160 t − 200, 160 t + 200) (indices below 0 reflect to their mirror image, 1..200), so the
 *  caller keeps in x every real sample the frames asked for read (x0 = 0 while frames 0 and 1
 *  are; samples at or past n are never read from x). */
typedef struct steno_mel_signal {
    const float *x;
    size_t x0, nx;
    size_t n, len;
} steno_mel_signal;

/** log10(max(mel power, 1e-10)) of frames [t0, t1) of a signal of n_frames frames, into
 *  out[m * stride + (t − t0)] (out may be NULL: only the max), before the clamp and scaling;
 *  returns the largest value. Frames are computed in the pairs (2k, 2k+1) steno_log_mel uses (the
 *  pairing affects rounding), so any split of a frame range gives steno_log_mel's bits. */
float steno_mel_log10_frames(const steno_mel_plan *p, const steno_mel_signal *s, int n_mels, int n_frames, int t0,
                             int t1, float *out, size_t stride);

/** The max of steno_mel_log10_frames over frames [t0, t1) for both filterbanks at once (one FFT
 *  per pair): max[0] for 80 bins, max[1] for 128, updated in place (start them at -INFINITY). */
void steno_mel_max_frames(const steno_mel_plan *p, const steno_mel_signal *s, int n_frames, int t0, int t1,
                          float max[2]);

/** The value of a frame whose samples are all zero: log10f(1e-10f). */
float steno_mel_silence_log10(void);

/** openai-whisper's last step, in place: max(v, max − 8), then (v + 4) / 4, in float32. */
void steno_mel_normalize(float *v, size_t n, float max);

#endif
