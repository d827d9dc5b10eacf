/* source.h — what the Whisper side needs of a steno_audio (steno.h): its log-mel spectrogram one
 * window at a time, with the same bits as steno_log_mel over the whole file (source.c). */
#ifndef STENO_AUDIO_SOURCE_H
#define STENO_AUDIO_SOURCE_H

#include <stddef.h>
#include "steno.h"

/** Frames [t0, t0 + count) of log_mel_spectrogram(audio, n_mels, padding=480000), normalized, into
 *  dst[m * stride + (t − t0)]; t0 + count must not pass the content frames (n_samples / 160). Not
 *  thread-safe on one steno_audio (it moves a decoding pass along the file; a window before the
 *  previous one restarts it). Errors: decoding errors (steno_audio_load's), STENO_E_IO when the
 *  file no longer holds the samples the scan saw, STENO_E_NOMEM. */
steno_status audio_mel_window(steno_audio *a, int n_mels, int t0, int count, float *dst, size_t stride);

/** The name errors give for the audio ("stdin", the path, the memory name). */
const char *audio_name(const steno_audio *a);

#endif
