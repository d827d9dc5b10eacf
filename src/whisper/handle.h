/* handle.h — the Whisper handle of include/steno.h (handle.c loads and frees it): struct
 * steno_whisper and struct steno_whisper_state, read by the transcription drivers
 * (longform/transcribe.c), and accessors for the code that needs only their parts. */
#ifndef STENO_WHISPER_HANDLE_H
#define STENO_WHISPER_HANDLE_H

#include "steno.h"
#include "whisper/fast.h"
#include "whisper/model/model.h"

/* The model (weights, tokenizer, the fast path's prepared weights) is read-only once loaded; every
 * buffer a transcription writes lives in a state. The handle's own state serves steno_transcribe;
 * steno_whisper_state_new makes more, one per concurrent request (whisper.cpp's whisper_context /
 * whisper_state split). */
struct steno_whisper_state {
    int n_threads;
    steno_pool *pool;   /* fast path */
    whisper_fast *fast; /* NULL on the faithful path */
};

struct steno_whisper {
    whisper_model *model;
    steno_whisper_state *state; /* the default state; its fast path owns the prepared weights */
};

/** The handle's model and default state, a state's fast path (NULL on the faithful path). */
const whisper_model *whisper_handle_model(const steno_whisper *w);
steno_whisper_state *whisper_handle_state(steno_whisper *w);
whisper_fast *whisper_state_fast(steno_whisper_state *s);

/** The model, and the fast-path state (NULL on the faithful path) and thread count of state s
 *  (NULL: the handle's default state). */
void whisper_handle_parts(const steno_whisper *w, steno_whisper_state *s, const whisper_model **m,
                          whisper_fast **fast, int *n_threads);

#endif
