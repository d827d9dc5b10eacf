/* source.c — steno_audio: an audio file read twice, never held whole.
 *
 * openai-whisper's log-mel spectrogram clamps every value to (global max − 8), so no window can be
 * computed before the whole file has been seen. steno_audio_open therefore decodes the file once
 * (the scan), keeping only the samples the next STFT frames need, and records the sample count and
 * the maximum for both filterbanks; each 30-s window is then decoded again and computed on request
 * (audio_mel_window). Every frame depends only on its own 400 samples and on its pair partner
 * (mel.h), so the windows hold steno_log_mel's very bits for the same samples, and memory is
 * bounded by one window (~2 MB) whatever the length of the file. Decoding twice costs little next
 * to the encoder: WAV and FLAC decode at thousands of times real time. */
#include "audio/source.h"

#include "audio/mel.h"
#include "audio/stream.h"
#include "core/error.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HOP STENO_HOP_LENGTH
#define HALF (STENO_N_FFT / 2)
/* samples decoded per read of the scan */
#define SCAN_BLOCK ((size_t)1 << 17)

struct steno_audio {
    char *path;                /* NULL: data[0..size) */
    const unsigned char *data; /* borrowed (steno_audio_open_memory) or owned (stdin) */
    size_t size;
    unsigned char *owned;
    char *name;
    size_t n;       /* samples */
    float max[2];   /* log10 mel maxima over the whole padded signal: 80 and 128 bins */
    steno_mel_plan *plan;
    /* the window reader: samples [x0, x0 + nx) of a second decoding pass */
    audio_stream *rd;
    float *buf;
    size_t x0, nx, cap;
    int rd_eof;
};

static steno_status open_stream(const steno_audio *a, audio_stream **out) {
    return a->path ? audio_stream_open_path(a->path, out) : audio_stream_open_memory(a->data, a->size, a->name, out);
}

static size_t n_frames_of(size_t n) { return (n + STENO_CHUNK_SAMPLES) / HOP; }

/* Drops the samples before `from` (an input index >= x0). */
static void drop_before(steno_audio *a, size_t from) {
    if (from <= a->x0) return;
    const size_t k = from - a->x0 < a->nx ? from - a->x0 : a->nx;
    memmove(a->buf, a->buf + k, sizeof(float) * (a->nx - k));
    a->nx -= k;
    a->x0 += k;
}

static int reserve(steno_audio *a, size_t cap) {
    if (cap <= a->cap) return 0;
    float *b = realloc(a->buf, sizeof(float) * cap);
    if (!b) return -1;
    a->buf = b;
    a->cap = cap;
    return 0;
}

/* The scan: every frame's log10 mel value once, for the maxima; keeps the samples from the first
 * one the next pair of frames reads. */
static steno_status scan(steno_audio *a) {
    audio_stream *s = NULL;
    steno_status st = open_stream(a, &s);
    if (st != STENO_OK) return st;
    if (reserve(a, SCAN_BLOCK + 2 * HOP + 2 * HALF)) {
        audio_stream_close(s);
        return steno_fail(STENO_E_NOMEM, "%s: out of memory", a->name);
    }
    a->max[0] = a->max[1] = -INFINITY;
    a->x0 = a->nx = 0;
    size_t t = 0; /* the next (even) frame */
    for (int eof = 0; !eof;) {
        size_t got;
        const size_t want = a->cap - a->nx;
        if ((st = audio_stream_read(s, a->buf + a->nx, want, &got)) != STENO_OK) break;
        a->nx += got;
        eof = got < want;
        const size_t have = a->x0 + a->nx;
        /* the pair (t, t+1) is complete once sample 160 (t+1) + 199 is in, or at the end */
        size_t t_end = t;
        if (eof) {
            /* frames from here on read only zeros (see mel.h): one value stands for them */
            t_end = (have + HALF) / HOP + 2;
            t_end += t_end & 1;
            if (t_end > n_frames_of(have)) t_end = n_frames_of(have);
            if (t_end < n_frames_of(have)) {
                const float z = steno_mel_silence_log10();
                if (z > a->max[0]) a->max[0] = z;
                if (z > a->max[1]) a->max[1] = z;
            }
        } else {
            while ((t_end + 1) * HOP + HALF <= have) t_end += 2;
        }
        if (t_end > t) {
            /* before the end the input length is unknown: n = what is in (no frame computed here
             * reads past it), and every frame has its pair partner */
            const steno_mel_signal sig = {a->buf, a->x0, a->nx, have, have + STENO_CHUNK_SAMPLES};
            steno_mel_max_frames(a->plan, &sig, eof ? (int)n_frames_of(have) : INT32_MAX, (int)t, (int)t_end, a->max);
            t = t_end;
        }
        if (t * HOP > HALF) drop_before(a, t * HOP - HALF);
    }
    if (st == STENO_OK) {
        a->n = a->x0 + a->nx;
        audio_stream_warn_partial(s);
    }
    audio_stream_close(s);
    a->x0 = a->nx = 0;
    return st;
}

static steno_status audio_open(steno_audio *a, steno_audio **out) {
    steno_status st;
    if (!a->name) st = steno_fail(STENO_E_NOMEM, "out of memory");
    else if ((st = steno_mel_plan_new(&a->plan)) == STENO_OK) st = scan(a);
    if (st == STENO_OK && a->n > (size_t)INT32_MAX / 128 * HOP - STENO_CHUNK_SAMPLES)
        st = steno_fail(STENO_E_INVALID_ARG, "%s: %zu samples is too long", a->name, a->n);
    if (st != STENO_OK) {
        steno_audio_close(a);
        return st;
    }
    *out = a;
    return STENO_OK;
}

steno_status steno_audio_open(const char *path, steno_audio **out) {
    steno_clear_error();
    steno_clear_warning();
    if (!path || !out) return steno_fail(STENO_E_INVALID_ARG, "steno_audio_open: NULL argument");
    *out = NULL;
    steno_audio *a = calloc(1, sizeof *a);
    if (!a) return steno_fail(STENO_E_NOMEM, "out of memory");
    if (strcmp(path, "-") == 0) {
        steno_status st = audio_read_stdin(&a->owned, &a->size);
        if (st != STENO_OK) {
            free(a);
            return st;
        }
        a->data = a->owned;
        a->name = strdup("stdin");
    } else {
        a->path = strdup(path);
        a->name = a->path ? strdup(path) : NULL;
    }
    return audio_open(a, out);
}

steno_status steno_audio_open_memory(const void *data, size_t size, const char *name, steno_audio **out) {
    steno_clear_error();
    steno_clear_warning();
    if ((!data && size) || !out) return steno_fail(STENO_E_INVALID_ARG, "steno_audio_open_memory: NULL argument");
    *out = NULL;
    steno_audio *a = calloc(1, sizeof *a);
    if (!a) return steno_fail(STENO_E_NOMEM, "out of memory");
    a->data = data;
    a->size = size;
    a->name = strdup(name && *name ? name : "memory");
    return audio_open(a, out);
}

size_t steno_audio_n_samples(const steno_audio *a) { return a ? a->n : 0; }

const char *audio_name(const steno_audio *a) { return a->name; }

void steno_audio_close(steno_audio *a) {
    if (!a) return;
    audio_stream_close(a->rd);
    steno_mel_plan_free(a->plan);
    free(a->buf);
    free(a->owned);
    free(a->path);
    free(a->name);
    free(a);
}

steno_status audio_mel_window(steno_audio *a, int n_mels, int t0, int count, float *dst, size_t stride) {
    if (count <= 0) return STENO_OK;
    const size_t n_frames = n_frames_of(a->n);
    size_t t_end = (size_t)(t0 + count - 1) | 1; /* the pair partner of the last frame */
    if (t_end >= n_frames) t_end = n_frames - 1;
    const size_t first = (size_t)(t0 & ~1) * HOP;
    const size_t lo = first > HALF ? first - HALF : 0; /* frames 0 and 1 reflect samples 1..200 */
    size_t hi = t_end * HOP + HALF;
    if (hi > a->n) hi = a->n;
    steno_status st;
    if (!a->rd || lo < a->x0) { /* a window before the buffer (clip_timestamps out of order) */
        audio_stream_close(a->rd);
        a->rd = NULL;
        a->x0 = a->nx = 0;
        a->rd_eof = 0;
        if ((st = open_stream(a, &a->rd)) != STENO_OK) return st;
    }
    drop_before(a, lo);
    if (hi > a->x0 + a->nx) {
        while (a->x0 + a->nx < hi && !a->rd_eof) {
            if (a->x0 + a->nx < lo) { /* still before the window: what was read is discarded */
                a->x0 += a->nx;
                a->nx = 0;
            }
            const size_t need = hi - (a->x0 + a->nx);
            const size_t want = need < SCAN_BLOCK ? need : SCAN_BLOCK;
            if (reserve(a, a->nx + want)) return steno_fail(STENO_E_NOMEM, "%s: out of memory", a->name);
            size_t got;
            if ((st = audio_stream_read(a->rd, a->buf + a->nx, want, &got)) != STENO_OK) return st;
            a->nx += got;
            a->rd_eof = got < want;
        }
        if (a->x0 + a->nx < hi)
            return steno_fail(STENO_E_IO, "%s: the audio changed while it was being read (%zu samples, then %zu)",
                              a->name, a->n, a->x0 + a->nx);
        drop_before(a, lo);
    }
    const steno_mel_signal sig = {a->buf, a->x0, a->nx, a->n, a->n + STENO_CHUNK_SAMPLES};
    steno_mel_log10_frames(a->plan, &sig, n_mels, (int)n_frames, t0, t0 + count, dst, stride);
    for (int m = 0; m < n_mels; m++) steno_mel_normalize(dst + (size_t)m * stride, (size_t)count, a->max[n_mels == 128]);
    return STENO_OK;
}
