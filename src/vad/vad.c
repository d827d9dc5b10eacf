/* vad.c — steno_vad_probs: audio framed as faster-whisper 1.2.1's vad.py does it
 * (get_speech_timestamps pads, SileroVADModel.__call__ frames), then silero_forward.
 *
 * faster-whisper pads the audio with zeros to the next multiple of 512 samples — a whole extra
 * frame when the length already is one — and prepends to each frame the last 64 samples of the
 * frame before it (zeros for the first). Its `context[-1] = 0` writes through a numpy view into
 * the audio, so the last frame's own last 64 samples are zeroed too; we reproduce that, since it
 * changes the last probability. The LSTM state runs through all frames (its batches of 10000
 * frames pass h and c on), which is one sequence; we run it in blocks of BLOCK frames so that
 * memory stays bounded (the inputs are 4.5 times the audio's size) whatever the length. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threadpool.h"
#include "vad/silero.h"

#define BLOCK 2048 /* frames per silero_forward call: 65 s of audio, 9 MB of scratch */

size_t steno_vad_n_frames(size_t n_samples) { return n_samples / SILERO_WINDOW + 1; }

/* Row i of the network's input: 64 samples of context, then the frame's 512 (zero past the end). */
static void frame_input(const float *samples, size_t n_samples, size_t i, size_t n_frames, float *row) {
    memset(row, 0, sizeof(float) * SILERO_INPUT);
    size_t start = i * SILERO_WINDOW;
    if (i > 0) memcpy(row, samples + start - SILERO_CONTEXT, sizeof(float) * SILERO_CONTEXT);
    size_t len = n_samples > start ? n_samples - start : 0;
    if (len > SILERO_WINDOW) len = SILERO_WINDOW;
    if (i + 1 == n_frames && len > SILERO_WINDOW - SILERO_CONTEXT) len = SILERO_WINDOW - SILERO_CONTEXT;
    if (len) memcpy(row + SILERO_CONTEXT, samples + start, sizeof(float) * len);
}

steno_status steno_vad_probs(const steno_vad *vad, const float *samples, size_t n_samples, int n_threads,
                             float **probs, size_t *n_probs) {
    if (probs) *probs = NULL;
    if (n_probs) *n_probs = 0;
    if (!vad || !probs || !n_probs || (!samples && n_samples > 0))
        return steno_fail(STENO_E_INVALID_ARG, "steno_vad_probs: NULL argument");
    size_t n_frames = steno_vad_n_frames(n_samples);
    size_t block = n_frames < BLOCK ? n_frames : BLOCK;
    float *x = malloc(sizeof(float) * SILERO_INPUT * block);
    float *xg = malloc(sizeof(float) * SILERO_N_GATES * block);
    float *p = malloc(sizeof(float) * n_frames);
    steno_pool *pool = NULL;
    if (!x || !xg || !p || (n_frames > 1 && n_threads != 1 && steno_pool_create(n_threads, &pool) != STENO_OK)) {
        free(x);
        free(xg);
        free(p);
        return steno_fail(STENO_E_NOMEM, "vad: out of memory (%zu samples)", n_samples);
    }
    /* The context of a frame is the previous frame's samples before the zeroing of the last
     * frame, which no frame takes context from; so rows can be built straight from samples. */
    float h[SILERO_HIDDEN] = {0}, c[SILERO_HIDDEN] = {0};
    for (size_t first = 0; first < n_frames; first += block) {
        size_t n = n_frames - first < block ? n_frames - first : block;
        for (size_t i = 0; i < n; i++) frame_input(samples, n_samples, first + i, n_frames, x + i * SILERO_INPUT);
        silero_forward(vad, x, n, h, c, pool, xg, p + first);
    }
    steno_pool_free(pool);
    free(x);
    free(xg);
    *probs = p;
    *n_probs = n_frames;
    return STENO_OK;
}
