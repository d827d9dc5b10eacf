/* test_whisper.h — fixtures shared by the Whisper unit tests (include after test_util.h). */
#ifndef STENO_TEST_WHISPER_H
#define STENO_TEST_WHISPER_H

#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "whisper/model/model.h"

/** The first 30-s log-mel window of shared/audio/jfk.wav for m: [n_mels][3000] float32, zero
 *  padded past the audio (malloc'd; the caller frees). NULL (and a CHECK failure) on error. */
static inline float *test_jfk_window(const whisper_model *m) {
    char path[4096];
    snprintf(path, sizeof path, "%s/audio/jfk.wav", test_shared_dir());
    float *samples = NULL;
    size_t n = 0;
    steno_mel mel = {0};
    float *window = NULL;
    CHECK(steno_audio_load(path, &samples, &n) == STENO_OK, "%s", steno_errmsg());
    if (samples && steno_log_mel(samples, n, STENO_CHUNK_SAMPLES, m->n_mels, &mel) == STENO_OK) {
        window = calloc((size_t)m->n_mels * 3000, sizeof(float));
        for (int c = 0; window && c < m->n_mels; c++)
            memcpy(window + (size_t)c * 3000, mel.data + (size_t)c * mel.n_frames, 3000 * sizeof(float));
        steno_mel_free(&mel);
    }
    CHECK(window != NULL, "jfk.wav: no log-mel window");
    free(samples);
    return window;
}

#endif
