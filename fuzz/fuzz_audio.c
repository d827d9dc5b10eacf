/* fuzz_audio.c — libFuzzer target for steno_audio_load_memory() (src/audio/decode.c): any bytes,
 * through every demuxer and decoder FFmpeg has, the bounds of issue 19, swresample.
 *
 * Invariants: on failure *samples is NULL, *n_samples 0 and the message is one line naming the
 * input; on success every sample is finite and in [-1, 1] (s16 / 32768), the count stays within
 * STENO_AUDIO_MAX_SECONDS, and a second decode of the same bytes gives the same samples, bit for
 * bit (the decoder keeps no state between calls).
 * Build: CC=clang cmake -S . -B build-fuzz -DSTENO_FUZZ=ON && cmake --build build-fuzz --target fuzz_audio
 * Run:   scripts/fuzz.sh audio 10 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steno.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    float *x = NULL;
    size_t n = 7;
    steno_status st = steno_audio_load_memory(data, size, "fuzz.bin", &x, &n);
    if (st != STENO_OK) {
        const char *msg = steno_errmsg();
        if (x || n != 0) abort();
        if (strncmp(msg, "fuzz.bin: ", 10) != 0 || strchr(msg, '\n')) abort();
        return 0;
    }
    if (!x || n > (size_t)STENO_AUDIO_MAX_SECONDS * STENO_SAMPLE_RATE) abort();
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || x[i] < -1.0f || x[i] > 1.0f) abort();
    float *y = NULL;
    size_t ny = 0;
    if (steno_audio_load_memory(data, size, "fuzz.bin", &y, &ny) != STENO_OK) abort();
    if (ny != n || memcmp(x, y, n * sizeof *x) != 0) abort();
    free(x);
    free(y);
    return 0;
}
