/* silero.h — the Silero VAD v6 network at 16 kHz (snakers4/silero-vad, as shipped in
 * faster-whisper 1.2.1's assets/silero_vad_v6.onnx and converted by tools/convert_silero_vad.py).
 * The public handle steno_vad (include/steno.h) is this model: immutable once loaded. */
#ifndef STENO_VAD_SILERO_H
#define STENO_VAD_SILERO_H

#include <stddef.h>

#include "steno.h"

/* faster-whisper's SileroVADModel.__call__(num_samples=512, context_size_samples=64). */
#define SILERO_WINDOW 512   /* samples per frame: one speech probability per 32 ms */
#define SILERO_CONTEXT 64   /* samples of the previous frame prepended to each frame */
#define SILERO_INPUT (SILERO_CONTEXT + SILERO_WINDOW)
#define SILERO_HIDDEN 128   /* LSTM hidden and cell size */

#define SILERO_N_GATES (4 * SILERO_HIDDEN)

typedef struct steno_pool steno_pool;

/** Speech probabilities of frames whose 576-sample inputs (context + window) are given, running
 *  the LSTM over them in order from state (h, c) (each [SILERO_HIDDEN], updated in place), so
 *  that consecutive calls continue one sequence. x is [n_frames][SILERO_INPUT]; xg is scratch of
 *  [n_frames][SILERO_N_GATES]; probs gets n_frames values. The per-frame encoder runs on pool
 *  (NULL: the calling thread); results are identical for any thread count. Never fails. */
void silero_forward(const steno_vad *vad, const float *x, size_t n_frames, float *h, float *c, steno_pool *pool,
                    float *xg, float *probs);

#endif
