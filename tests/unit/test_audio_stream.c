/* test_audio_stream.c — steno_audio (src/audio/source.c): a file read a window at a time must give
 * the very bits of steno_audio_load + steno_log_mel, and steno_transcribe_audio the very result of
 * steno_transcribe (issue #15 item 6).
 *
 *   - synthetic 16-bit WAVs (noise with a fixed seed, so the samples are exact) of lengths around
 *     every boundary the code has: below and at the 200-sample reflection, odd/even frame counts,
 *     the scan's 131072-sample reads, several 30-s windows; every window start of a transcription
 *     pattern (0, odd seeks, the last window, a window before the previous one) for 80 and 128
 *     bins: memcmp against the whole spectrogram;
 *   - steno_audio_open_memory over the same bytes, and stdin;
 *   - transcription of shared/audio/jfk.wav and of 75 s of three dev clips back to back
 *     (tiny.en): steno_transcribe_audio equals steno_transcribe in every token, time and text, also
 *     with clip_timestamps that go backwards (word timestamps read the encoder output, not the
 *     audio, so they add nothing here); the sanitizer build keeps only the clip_timestamps run;
 *   - errors: a missing file, a file that is not audio. */
#include "audio/mel.h"
#include "audio/source.h"
#include "steno.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "rng.h"

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* A 16 kHz mono 16-bit WAV of samples (clipped to int16) at path. */
static int write_wav(const char *path, const int16_t *s, size_t n) {
    unsigned char h[44] = "RIFF....WAVEfmt ";
    put32(h + 4, (uint32_t)(36 + 2 * n));
    put32(h + 16, 16);
    h[20] = 1, h[22] = 1;
    put32(h + 24, 16000);
    put32(h + 28, 32000);
    h[32] = 2, h[34] = 16;
    memcpy(h + 36, "data", 4);
    put32(h + 40, (uint32_t)(2 * n));
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(h, 1, 44, f) == 44 && fwrite(s, 2, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static uint32_t rng = 12345;
static int16_t noise(size_t i) {
    rng_lcg_nr(&rng);
    /* a slow envelope, so that the maxima differ along the file */
    const double env = 0.2 + 0.8 * fabs(sin((double)i / 40000.0));
    return (int16_t)((int)((rng >> 16) % 20001) - 10000) * env;
}

/* Compares audio_mel_window with the whole log-mel for a list of window starts. */
static void check_windows(const char *path, steno_audio *a, const float *samples, size_t n, int n_mels) {
    steno_mel mel = {0};
    CHECK(steno_log_mel(samples, n, STENO_CHUNK_SAMPLES, n_mels, &mel) == STENO_OK, "%s", steno_errmsg());
    const int content = (int)(n / STENO_HOP_LENGTH);
    CHECK(mel.n_frames - 3000 == content, "%s: content frames %d vs %d", path, mel.n_frames - 3000, content);
    const int seeks[] = {0, 1, 2, 3, 1499, 2999, 3000, 3001, 4567, 9001, 1, content - 1, content - 3000, content / 2,
                         0};
    float *win = malloc(sizeof(float) * (size_t)n_mels * 3000);
    for (size_t k = 0; k < sizeof seeks / sizeof *seeks && win; k++) {
        const int seek = seeks[k];
        if (seek < 0 || seek >= content) continue;
        const int count = content - seek < 3000 ? content - seek : 3000;
        CHECK(audio_mel_window(a, n_mels, seek, count, win, 3000) == STENO_OK, "%s", steno_errmsg());
        int same = 1;
        for (int m = 0; m < n_mels && same; m++)
            same = memcmp(win + (size_t)m * 3000, mel.data + (size_t)m * mel.n_frames + seek,
                          sizeof(float) * (size_t)count) == 0;
        CHECK(same, "%s (%zu samples, %d bins): window at frame %d differs from steno_log_mel", path, n, n_mels,
              seek);
    }
    free(win);
    steno_mel_free(&mel);
}

static void check_length(size_t n) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/steno_test_stream_%d_%zu.wav", (int)getpid(), n);
    int16_t *s = malloc(sizeof(int16_t) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) s[i] = noise(i);
    CHECK(write_wav(path, s, n) == 0, "cannot write %s", path);
    free(s);
    float *samples = NULL;
    size_t got = 0;
    CHECK(steno_audio_load(path, &samples, &got) == STENO_OK, "%s", steno_errmsg());
    CHECK(got == n, "%s: %zu samples loaded", path, got);
    steno_audio *a = NULL;
    CHECK(steno_audio_open(path, &a) == STENO_OK, "%s", steno_errmsg());
    if (a && samples) {
        CHECK(steno_audio_n_samples(a) == n, "%s: steno_audio has %zu samples", path, steno_audio_n_samples(a));
        check_windows(path, a, samples, n, 80);
        check_windows(path, a, samples, n, 128);
    }
    steno_audio_close(a);
    /* the same bytes from memory */
    char *bytes = test_read_all(path);
    a = NULL;
    if (bytes) {
        CHECK(steno_audio_open_memory(bytes, 44 + 2 * n, "upload.wav", &a) == STENO_OK, "%s", steno_errmsg());
        if (a && samples) check_windows("memory", a, samples, n, 80);
        steno_audio_close(a);
    }
    free(bytes);
    free(samples);
    unlink(path);
}

static int same_result(const steno_result *x, const steno_result *y, const char *what) {
    int ok = x->n_segments == y->n_segments && strcmp(x->text, y->text) == 0 && x->duration == y->duration;
    for (int i = 0; ok && i < x->n_segments; i++) {
        const steno_segment *a = &x->segments[i], *b = &y->segments[i];
        ok = a->seek == b->seek && a->start == b->start && a->end == b->end && a->n_tokens == b->n_tokens &&
             memcmp(a->tokens, b->tokens, sizeof(int) * (size_t)a->n_tokens) == 0 && strcmp(a->text, b->text) == 0 &&
             a->avg_logprob == b->avg_logprob && a->no_speech_prob == b->no_speech_prob;
    }
    CHECK(ok, "%s: steno_transcribe_audio differs from steno_transcribe (%d vs %d segments)", what, y->n_segments,
          x->n_segments);
    return ok;
}

static void check_transcribe(steno_whisper *w, const char *path, const steno_transcribe_params *p, const char *what) {
    float *samples = NULL;
    size_t n = 0;
    steno_result *r1 = NULL, *r2 = NULL;
    steno_audio *a = NULL;
    CHECK(steno_audio_load(path, &samples, &n) == STENO_OK, "%s", steno_errmsg());
    CHECK(steno_transcribe(w, samples, n, p, &r1) == STENO_OK, "%s", steno_errmsg());
    CHECK(steno_audio_open(path, &a) == STENO_OK, "%s", steno_errmsg());
    CHECK(a && steno_transcribe_audio(w, a, p, &r2) == STENO_OK, "%s", steno_errmsg());
    if (r1 && r2 && same_result(r1, r2, what))
        printf("%s: %zu samples, %d segments, identical: %.60s...\n", what, n, r1->n_segments, r1->text);
    steno_result_free(r1);
    steno_result_free(r2);
    steno_audio_close(a);
    free(samples);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
    const size_t lengths[] = {0, 1, 150, 200, 201, 399, 400, 480, 16000, 131072, 131072 + 161, 16000 * 31 + 7,
                              16000 * 65 + 3};
    const char *san = getenv("STENO_SANITIZE");
    const int sanitized = san && strcmp(san, "1") == 0;
    /* sanitized, the 65-s file's windows take a minute; 31 s already spans two windows */
    const size_t n_lengths = sizeof lengths / sizeof *lengths - (sanitized ? 1 : 0);
    if (sanitized) printf("STENO_SANITIZE=1: lengths up to %zu samples\n", lengths[n_lengths - 1]);
    const double t0 = now_s();
    for (size_t i = 0; i < n_lengths; i++) check_length(lengths[i]);
    printf("window checks on %zu lengths: %.1f s\n", n_lengths, now_s() - t0);

    steno_audio *a = NULL;
    CHECK(steno_audio_open("/nonexistent/x.wav", &a) == STENO_E_IO && !a, "missing file: %s", steno_errmsg());
    CHECK(strstr(steno_errmsg(), "/nonexistent/x.wav") != NULL, "the error names the file: %s", steno_errmsg());
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/unit/test_audio_stream.c",
             getenv("STENO_SOURCE") ? getenv("STENO_SOURCE") : ".");
    CHECK(steno_audio_open(path, &a) == STENO_E_FORMAT && !a, "a C file: %s", steno_errmsg());
    steno_audio_close(NULL);

    /* end to end: 75 s of three clips back to back (several windows), jfk.wav */
    steno_whisper *w = NULL;
    CHECK(steno_whisper_load(test_model_dir(), 2, &w) == STENO_OK, "%s", steno_errmsg());
    const char *clips[] = {"jfk.wav", "ls_dev-clean_1272-128104-0004_8k.wav", "asterisk_en_demo-congrats.wav"};
    int16_t *cat = NULL;
    size_t n_cat = 0;
    for (int c = 0; c < 3; c++) {
        snprintf(path, sizeof path, "%s/audio/%s", test_shared_dir(), clips[c]);
        float *s = NULL;
        size_t n = 0;
        CHECK(steno_audio_load(path, &s, &n) == STENO_OK, "%s", steno_errmsg());
        int16_t *grown = realloc(cat, sizeof(int16_t) * (n_cat + n + 1));
        if (grown) {
            cat = grown;
            for (size_t i = 0; i < n; i++) cat[n_cat + i] = (int16_t)lrintf(s[i] * 32768.0f);
            n_cat += n;
        }
        free(s);
    }
    snprintf(path, sizeof path, "/tmp/steno_test_stream_%d_cat.wav", (int)getpid());
    CHECK(write_wav(path, cat, n_cat) == 0, "cannot write %s", path);
    free(cat);
    if (w) {
        steno_transcribe_params p = steno_transcribe_default_params();
        /* sanitized, whole 75 s takes minutes: the clip case below still decodes windows at the
         * end and restarts the reader for a window before the previous one */
        if (sanitized) printf("STENO_SANITIZE=1: the whole 75-s and jfk.wav transcriptions are left out\n");
        else check_transcribe(w, path, &p, "three clips");
        const double clips_back[] = {40.0, 52.0, 3.0, 9.5};
        p = steno_transcribe_default_params();
        p.clip_timestamps = clips_back;
        p.n_clip_timestamps = 4;
        check_transcribe(w, path, &p, "clip_timestamps 40,52,3,9.5");
        char jfk[4096];
        snprintf(jfk, sizeof jfk, "%s/audio/jfk.wav", test_shared_dir());
        p = steno_transcribe_default_params();
        if (!sanitized) check_transcribe(w, jfk, &p, "jfk.wav");
        steno_language_prob lp[1];
        int n_lp = 0;
        CHECK(steno_audio_open(jfk, &a) == STENO_OK, "%s", steno_errmsg());
        CHECK(steno_detect_language_audio(w, a, lp, 1, &n_lp) == STENO_E_UNSUPPORTED,
              "an English-only model cannot detect the language");
        steno_audio_close(a);
    }
    unlink(path);
    steno_whisper_free(w);
    printf("test_audio_stream: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
