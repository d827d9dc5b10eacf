/* speech_timestamps.c — steno_vad_speech_timestamps: faster-whisper 1.2.1's
 * faster_whisper/vad.py get_speech_timestamps (adapted there from snakers4/silero-vad), line for
 * line, over the probabilities of steno_vad_probs. Sample counts derived from milliseconds are
 * doubles, as in Python. A threshold is compared in float32: faster-whisper compares a
 * numpy.float32 probability with a Python float, which NumPy 2 (NEP 50) casts to float32, so
 * 0.35f < 0.35 is false there (it was true under NumPy 1's promotion to float64). "0 means unset"
 * for temp_end / prev_end / next_start is Python's truthiness of those integers. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "vad/silero.h"

steno_vad_options steno_vad_default_options(void) {
    steno_vad_options o = {0};
    o.threshold = 0.5;
    o.neg_threshold = -1.0; /* None: max(threshold - 0.15, 0.01) */
    o.min_speech_duration_ms = 0;
    o.max_speech_duration_s = INFINITY;
    o.min_silence_duration_ms = 2000;
    o.speech_pad_ms = 400;
    o.n_threads = 0;
    return o;
}

typedef struct span_list {
    steno_speech_span *v;
    int n, cap;
} span_list;

static int push(span_list *l, int64_t start, int64_t end) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        steno_speech_span *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return 0;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (steno_speech_span){start, end};
    return 1;
}

/* The state machine over the frames: speech begins at the first frame >= threshold and ends
 * after min_silence of frames < neg_threshold; spans longer than max_speech are split at the
 * last silence over 98 ms, else cut. Returns 0 on allocation failure. */
static int find_speeches(const float *probs, size_t n_probs, int64_t audio_length, const steno_vad_options *o,
                         span_list *out) {
    const double window = SILERO_WINDOW, sr = STENO_SAMPLE_RATE;
    double min_speech = sr * o->min_speech_duration_ms / 1000;
    double pad = sr * o->speech_pad_ms / 1000;
    double max_speech = sr * o->max_speech_duration_s - window - 2 * pad;
    double min_silence = sr * o->min_silence_duration_ms / 1000;
    double min_silence_at_max_speech = sr * 98 / 1000;
    float threshold = (float)o->threshold;
    float neg_threshold = (float)(o->neg_threshold >= 0 ? o->neg_threshold : fmax(o->threshold - 0.15, 0.01));

    int triggered = 0, have_current = 0;
    int64_t cur_start = 0, temp_end = 0, prev_end = 0, next_start = 0;
    for (size_t i = 0; i < n_probs; i++) {
        float p = probs[i];
        int64_t at = (int64_t)(SILERO_WINDOW * i);
        if (p >= threshold && temp_end) {
            temp_end = 0;
            if (next_start < prev_end) next_start = at;
        }
        if (p >= threshold && !triggered) {
            triggered = 1;
            have_current = 1;
            cur_start = at;
            continue;
        }
        if (triggered && (double)(at - cur_start) > max_speech) {
            if (prev_end) {
                if (!push(out, cur_start, prev_end)) return 0;
                have_current = 0;
                if (next_start < prev_end) {
                    triggered = 0;
                } else {
                    have_current = 1;
                    cur_start = next_start;
                }
                prev_end = next_start = temp_end = 0;
            } else {
                if (!push(out, cur_start, at)) return 0;
                have_current = 0;
                prev_end = next_start = temp_end = 0;
                triggered = 0;
                continue;
            }
        }
        if (p < neg_threshold && triggered) {
            if (!temp_end) temp_end = at;
            if ((double)(at - temp_end) > min_silence_at_max_speech) prev_end = temp_end;
            if ((double)(at - temp_end) < min_silence) continue;
            if ((double)(temp_end - cur_start) > min_speech && !push(out, cur_start, temp_end)) return 0;
            have_current = 0;
            prev_end = next_start = temp_end = 0;
            triggered = 0;
            continue;
        }
    }
    if (have_current && (double)(audio_length - cur_start) > min_speech && !push(out, cur_start, audio_length))
        return 0;
    return 1;
}

/* speech_pad_ms on each side, or half the gap when two spans are closer than twice that. */
static void pad_speeches(steno_speech_span *s, int n, int64_t audio_length, const steno_vad_options *o) {
    double pad = (double)STENO_SAMPLE_RATE * o->speech_pad_ms / 1000;
    for (int i = 0; i < n; i++) {
        if (i == 0) s[i].start = (int64_t)fmax(0, (double)s[i].start - pad);
        if (i != n - 1) {
            int64_t silence = s[i + 1].start - s[i].end;
            if ((double)silence < 2 * pad) {
                int64_t half = silence >= 0 ? silence / 2 : -((-silence + 1) / 2); /* Python's // */
                s[i].end += half;
                s[i + 1].start = s[i + 1].start - half > 0 ? s[i + 1].start - half : 0;
            } else {
                s[i].end = (int64_t)fmin((double)audio_length, (double)s[i].end + pad);
                s[i + 1].start = (int64_t)fmax(0, (double)s[i + 1].start - pad);
            }
        } else {
            s[i].end = (int64_t)fmin((double)audio_length, (double)s[i].end + pad);
        }
    }
}

steno_status steno_vad_spans_from_probs(const float *probs, size_t n_probs, size_t n_samples,
                                        const steno_vad_options *opts, steno_speech_span **spans, int *n_spans) {
    if (spans) *spans = NULL;
    if (n_spans) *n_spans = 0;
    if (!spans || !n_spans || (!probs && n_probs > 0))
        return steno_fail(STENO_E_INVALID_ARG, "steno_vad_spans_from_probs: NULL argument");
    steno_vad_options o = opts ? *opts : steno_vad_default_options();
    if (!(o.threshold >= 0 && o.threshold <= 1) || o.neg_threshold > 1 || o.min_speech_duration_ms < 0 ||
        !(o.max_speech_duration_s > 0) || o.min_silence_duration_ms < 0 || o.speech_pad_ms < 0)
        return steno_fail(STENO_E_INVALID_ARG, "vad options: a value is out of range");
    span_list l = {0};
    if (!find_speeches(probs, n_probs, (int64_t)n_samples, &o, &l)) {
        free(l.v);
        return steno_fail(STENO_E_NOMEM, "vad: out of memory");
    }
    pad_speeches(l.v, l.n, (int64_t)n_samples, &o);
    *spans = l.v;
    *n_spans = l.n;
    return STENO_OK;
}

steno_status steno_vad_speech_timestamps(const steno_vad *vad, const float *samples, size_t n_samples,
                                         const steno_vad_options *opts, steno_speech_span **spans, int *n_spans) {
    if (spans) *spans = NULL;
    if (n_spans) *n_spans = 0;
    float *probs = NULL;
    size_t n_probs = 0;
    steno_status s = steno_vad_probs(vad, samples, n_samples, opts ? opts->n_threads : 0, &probs, &n_probs);
    if (s == STENO_OK) s = steno_vad_spans_from_probs(probs, n_probs, n_samples, opts, spans, n_spans);
    free(probs);
    return s;
}
