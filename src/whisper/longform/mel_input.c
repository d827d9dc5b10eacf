/* mel_input.c — the two sources of log-mel windows (mel_input.h). */
#include "whisper/longform/mel_input.h"

#include <string.h>

#include "audio/source.h"

int whisper_mel_content_frames(const whisper_mel_input *in) { return (int)(in->n_samples / STENO_HOP_LENGTH); }

steno_status whisper_mel_window(const whisper_mel_input *in, int n_mels, int seek, int count, float *window,
                                int n_frames_window) {
    if (in->audio) {
        steno_status st = audio_mel_window(in->audio, n_mels, seek, count, window, (size_t)n_frames_window);
        if (st != STENO_OK) return st;
    } else {
        for (int c = 0; c < n_mels; c++)
            memcpy(window + (size_t)c * n_frames_window, in->mel->data + (size_t)c * in->mel->n_frames + seek,
                   sizeof(float) * (size_t)count);
    }
    for (int c = 0; c < n_mels; c++)
        memset(window + (size_t)c * n_frames_window + count, 0, sizeof(float) * (size_t)(n_frames_window - count));
    return STENO_OK;
}
