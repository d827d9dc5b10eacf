/* The Silero VAD's two encoders bit for bit: frames in batches (vad/silero_batch.c, AVX-512) against
 * frame by frame (silero.c encode_frame), through steno_vad_probs (the same LSTM after both), on two
 * dev clips (jfk.wav, an 8 kHz clip resampled by the loader) and on signals built here: digital
 * silence, white noise at -50 and -6 dBFS, a 440 Hz tone, a full-scale square wave, clicks, and
 * lengths that leave a partial batch (1, 15, 17, 33 frames), for 1 and 2 threads. On a CPU without
 * AVX-512 there is one encoder only, and the test says so. The weights: $STENO_VAD_MODEL, else the
 * model cache's silero_vad/ (scripts/fetch_vad.sh); missing weights fail the test. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "steno.h"
#include "test_util.h"
#include "vad/silero_internal.h"

static uint64_t g_rng = 0x853C49E6748FEA9Bull;

static int probs_equal(steno_vad *vad, const float *x, size_t n, int threads, const char *what) {
    float *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    const int was = vad->batched;
    vad->batched = 0;
    const steno_status s1 = steno_vad_probs(vad, x, n, threads, &a, &na);
    vad->batched = was;
    const steno_status s2 = steno_vad_probs(vad, x, n, threads, &b, &nb);
    int ok = s1 == STENO_OK && s2 == STENO_OK && na == nb && na == steno_vad_n_frames(n) &&
             memcmp(a, b, sizeof(float) * na) == 0;
    CHECK(ok, "%s (%zu samples, %d threads): the batched encoder's probabilities differ", what, n, threads);
    free(a);
    free(b);
    return ok;
}

int main(void) {
    const char *p = getenv("STENO_VAD_MODEL");
    char path[4096];
    if (!p || !*p) {
        const char *root = getenv("STENO_MODELS_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (root && *root) snprintf(path, sizeof path, "%s/silero_vad/silero_vad_v6.safetensors", root);
        else if (xdg && *xdg) snprintf(path, sizeof path, "%s/steno/models/silero_vad/silero_vad_v6.safetensors", xdg);
        else snprintf(path, sizeof path, "%s/.cache/steno/models/silero_vad/silero_vad_v6.safetensors", home ? home : ".");
        p = path;
    }
    steno_vad *vad = NULL;
    if (steno_vad_load(p, &vad) != STENO_OK) {
        CHECK(0, "Silero VAD weights at %s: %s (run scripts/fetch_vad.sh or set STENO_VAD_MODEL)", p, steno_errmsg());
        return test_summary("test_vad_batch");
    }
    if (!vad->batched) printf("test_vad_batch: no AVX-512 here: one encoder only, compared with itself\n");
    const char *clips[] = {"jfk.wav", "deepspeech_ru.wav"};
    for (int c = 0; c < 2; c++) {
        char f[4096];
        snprintf(f, sizeof f, "%s/audio/%s", test_shared_dir(), clips[c]);
        float *x = NULL;
        size_t n = 0;
        CHECK(steno_audio_load(f, &x, &n) == STENO_OK, "%s: %s", f, steno_errmsg());
        if (x) {
            for (int t = 1; t <= 2; t++) probs_equal(vad, x, n, t, clips[c]);
            free(x);
        }
    }
    const size_t N = 16000 * 6;
    float *x = malloc(sizeof(float) * N);
    for (int kind = 0; kind < 6; kind++) {
        for (size_t i = 0; i < N; i++) {
            const double u = rng_unit53(rng_xorshift64(&g_rng)) * 2.0 - 1.0;
            switch (kind) {
            case 0: x[i] = 0.0f; break;
            case 1: x[i] = (float)(u * 0.00316); break; /* -50 dBFS */
            case 2: x[i] = (float)(u * 0.5); break;     /* -6 dBFS */
            case 3: x[i] = (float)(0.3 * sin(2 * M_PI * 440.0 * (double)i / 16000.0)); break;
            case 4: x[i] = (i / 40) % 2 ? 1.0f : -1.0f; break;
            default: x[i] = i % 4000 == 0 ? 1.0f : 0.0f; break;
            }
        }
        char what[32];
        snprintf(what, sizeof what, "signal %d", kind);
        for (int t = 1; t <= 2; t++) probs_equal(vad, x, N, t, what);
    }
    const size_t lens[] = {512, 512 * 15, 512 * 17 + 100, 512 * 33};
    for (size_t i = 0; i < 4; i++) probs_equal(vad, x, lens[i], 2, "a partial batch");
    free(x);
    steno_vad_free(vad);
    return test_summary("test_vad_batch");
}
