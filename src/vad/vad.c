/* vad.c — steno_vad_probs: audio framed as faster-whisper 1.2.1's vad.py does it
 * (get_speech_timestamps pads, SileroVADModel.__call__ frames), then silero_forward.
 *
 * faster-whisper pads the audio with zeros to the next multiple of 512 samples — a whole extra
 * frame when the length already is one — and prepends to each frame the last 64 samples of the
 * frame before it (zeros for the first). Its `context[-1] = 0` writes through a numpy view into
 * the audio, so the last frame's own last 64 samples are zeroed too; we reproduce that, since it
 * changes the last probability. The LSTM state runs through all frames (its batches of 10000
 * frames pass h and c on), which is one sequence. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vad/silero.h"

size_t steno_vad_n_frames(size_t n_samples) { return n_samples / SILERO_WINDOW + 1; }

steno_status steno_vad_probs(const steno_vad *vad, const float *samples, size_t n_samples, int n_threads,
                             float **probs, size_t *n_probs) {
    if (probs) *probs = NULL;
    if (n_probs) *n_probs = 0;
    if (!vad || !probs || !n_probs || (!samples && n_samples > 0))
        return steno_fail(STENO_E_INVALID_ARG, "steno_vad_probs: NULL argument");
    size_t n_frames = steno_vad_n_frames(n_samples);
    if (n_frames > SIZE_MAX / (sizeof(float) * SILERO_INPUT))
        return steno_fail(STENO_E_INVALID_ARG, "steno_vad_probs: %zu samples is too many", n_samples);
    float *x = calloc(n_frames * SILERO_INPUT, sizeof(float));
    float *p = malloc(sizeof(float) * n_frames);
    if (!x || !p) {
        free(x);
        free(p);
        return steno_fail(STENO_E_NOMEM, "vad: out of memory (%zu samples)", n_samples);
    }
    for (size_t i = 0; i < n_frames; i++) {
        float *row = x + i * SILERO_INPUT;
        size_t start = i * SILERO_WINDOW;
        size_t len = n_samples > start ? n_samples - start : 0;
        if (len > SILERO_WINDOW) len = SILERO_WINDOW;
        if (i + 1 == n_frames && len > SILERO_WINDOW - SILERO_CONTEXT) len = SILERO_WINDOW - SILERO_CONTEXT;
        if (len) memcpy(row + SILERO_CONTEXT, samples + start, sizeof(float) * len);
        if (i > 0) memcpy(row, row - SILERO_INPUT + SILERO_WINDOW, sizeof(float) * SILERO_CONTEXT);
    }
    float h[SILERO_HIDDEN] = {0}, c[SILERO_HIDDEN] = {0};
    steno_status s = silero_forward(vad, x, n_frames, h, c, n_threads, p);
    free(x);
    if (s != STENO_OK) {
        free(p);
        return s;
    }
    *probs = p;
    *n_probs = n_frames;
    return STENO_OK;
}
