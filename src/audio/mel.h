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

#endif
