/* mel_input.h — where a transcription's 30-s log-mel windows come from: the whole spectrogram
 * computed up front (samples in memory: steno_transcribe), or an opened steno_audio that computes
 * each window as it is reached (steno_transcribe_audio). Both give the same bits (audio/source.c). */
#ifndef STENO_WHISPER_MEL_INPUT_H
#define STENO_WHISPER_MEL_INPUT_H

#include <stddef.h>
#include "audio/mel.h"
#include "steno.h"

typedef struct whisper_mel_input {
    size_t n_samples;
    const steno_mel *mel; /* log_mel_spectrogram(samples, padding=480000), or NULL: */
    steno_audio *audio;   /* ... computed a window at a time */
} whisper_mel_input;

/** The content frames: n_samples / 160 (the spectrogram less its 3000 frames of padding). */
int whisper_mel_content_frames(const whisper_mel_input *in);

/** The window of `seek`: count content frames from frame seek, then zeros (in log-mel space) up to
 *  n_frames_window, into window[n_mels][n_frames_window]. Errors: the audio's decoding errors. */
steno_status whisper_mel_window(const whisper_mel_input *in, int n_mels, int seek, int count, float *window,
                                int n_frames_window);

#endif
