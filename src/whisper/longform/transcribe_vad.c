/* transcribe_vad.c — transcription behind a voice activity detector, as faster-whisper 1.2.1's
 * WhisperModel.transcribe with vad_filter=True (faster_whisper/transcribe.py; vad.py:
 * get_speech_timestamps, collect_chunks, SpeechTimestampsMap; transcribe.py:
 * restore_speech_timestamps):
 *   1. the speech spans of the input (steno_vad_speech_timestamps);
 *   2. their samples back to back (collect_chunks with no length limit), transcribed as one input;
 *   3. every time mapped back to the input's timeline by adding the silence removed before its
 *      span, rounded to 2 decimals (Python's round: ties to even on the double's exact value).
 *      A word's span is the one holding the middle of the word, so both ends of a word move
 *      together; a segment with words spans its first word's start to its last word's end; a
 *      segment without words maps its start, and its end with is_end (an end exactly at a span's
 *      end stays in that span).
 * As faster-whisper, clip_timestamps turn the VAD off (the caller chose the audio). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "steno.h"
#include "whisper/longform/transcribe.h"

typedef whisper_ts_map ts_map;

int whisper_ts_map_init(ts_map *m, const steno_speech_span *spans, int n) {
    m->n = n;
    m->chunk_end_sample = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    m->total_silence_before = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!m->chunk_end_sample || !m->total_silence_before) return -1;
    int64_t previous_end = 0, silent = 0;
    for (int i = 0; i < n; i++) {
        silent += spans[i].start - previous_end;
        previous_end = spans[i].end;
        m->chunk_end_sample[i] = spans[i].end - silent;
        m->total_silence_before[i] = (double)silent / STENO_SAMPLE_RATE;
    }
    return 0;
}

void whisper_ts_map_free(ts_map *m) {
    free(m->chunk_end_sample);
    free(m->total_silence_before);
}

/* SpeechTimestampsMap.get_chunk_index: bisect.bisect (right) over the span ends, at most the last
 * span; with is_end, a time exactly at a span's end belongs to that span. */
static int chunk_index(const ts_map *m, double t, int is_end) {
    const int64_t sample = (int64_t)(t * STENO_SAMPLE_RATE); /* int(): toward zero */
    if (is_end)
        for (int i = 0; i < m->n; i++)
            if (m->chunk_end_sample[i] == sample) return i;
    int lo = 0, hi = m->n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (sample < m->chunk_end_sample[mid]) hi = mid;
        else lo = mid + 1;
    }
    return lo < m->n - 1 ? lo : m->n - 1;
}

/* round(x, 2) as Python: printf rounds the double's exact decimal expansion, ties to even. */
static double round2(double x) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.2f", x);
    return strtod(buf, NULL);
}

static double original_time(const ts_map *m, double t, int index) { return round2(m->total_silence_before[index] + t); }

/* Maps a segment's times (and its words', in place). */
void whisper_ts_map_segment(const ts_map *m, double *start, double *end, steno_word *words, int n_words) {
    if (n_words > 0) {
        for (int k = 0; k < n_words; k++) {
            const int i = chunk_index(m, (words[k].start + words[k].end) / 2, 0);
            words[k].start = original_time(m, words[k].start, i);
            words[k].end = original_time(m, words[k].end, i);
        }
        *start = words[0].start;
        *end = words[n_words - 1].end;
    } else {
        *start = original_time(m, *start, chunk_index(m, *start, 0));
        *end = original_time(m, *end, chunk_index(m, *end, 1));
    }
}

typedef struct vad_run {
    const ts_map *map;
    const steno_transcribe_params *user; /* the caller's callbacks */
    steno_word *words;                   /* scratch for a mapped copy of a segment's words */
    int cap_words;
} vad_run;

/* Each segment reaches the caller's on_segment with the input's times, as it will be in the result. */
static int on_segment_mapped(void *arg, const steno_segment *s) {
    vad_run *v = arg;
    steno_segment copy = *s;
    if (s->n_words > v->cap_words) {
        steno_word *w = realloc(v->words, sizeof *w * (size_t)s->n_words);
        if (!w) return 1; /* stop: the transcription then fails as aborted */
        v->words = w;
        v->cap_words = s->n_words;
    }
    if (s->n_words) memcpy(v->words, s->words, sizeof *s->words * (size_t)s->n_words);
    copy.words = s->n_words ? v->words : NULL;
    whisper_ts_map_segment(v->map, &copy.start, &copy.end, copy.words, copy.n_words);
    if (v->user->verbose && copy.n_tokens > 0) { /* as steno_transcribe prints, with these times */
        char a[64], b[64];
        whisper_format_ts(copy.start, a, sizeof a);
        whisper_format_ts(copy.end, b, sizeof b);
        printf("[%s --> %s] %s\n", a, b, copy.text);
        fflush(stdout);
    }
    return v->user->on_segment ? v->user->on_segment(v->user->user, &copy) : 0;
}

static int should_abort_fw(void *arg) {
    const vad_run *v = arg;
    return v->user->should_abort(v->user->user);
}

static void on_progress_fw(void *arg, double fraction) {
    const vad_run *v = arg;
    v->user->on_progress(v->user->user, fraction);
}

steno_status steno_transcribe_vad(steno_whisper *w, steno_whisper_state *state, const steno_vad *vad,
                                  const steno_vad_options *vad_opts, const float *samples, size_t n,
                                  const steno_transcribe_params *params, steno_result **out) {
    steno_clear_error();
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no output pointer");
    *out = NULL;
    if (!w || !vad) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no %s", w ? "VAD" : "model");
    if (!samples && n) return steno_fail(STENO_E_INVALID_ARG, "transcribe: samples NULL with n = %zu", n);
    const steno_transcribe_params defaults = steno_transcribe_default_params();
    const steno_transcribe_params *p = params ? params : &defaults;
    if (p->clip_timestamps && p->n_clip_timestamps > 0) /* faster-whisper: VAD ignored with clips */
        return state ? steno_transcribe_with_state(w, state, samples, n, p, out) : steno_transcribe(w, samples, n, p, out);

    steno_speech_span *spans = NULL;
    int n_spans = 0;
    steno_status st = steno_vad_speech_timestamps(vad, samples, n, vad_opts, &spans, &n_spans);
    if (st != STENO_OK) return st;
    size_t kept = 0;
    for (int i = 0; i < n_spans; i++) kept += (size_t)(spans[i].end - spans[i].start);
    float *speech = malloc(sizeof(float) * (kept ? kept : 1));
    ts_map map = {0};
    if (!speech || whisper_ts_map_init(&map, spans, n_spans)) {
        free(speech);
        free(spans);
        whisper_ts_map_free(&map);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    size_t at = 0;
    for (int i = 0; i < n_spans; i++) {
        const size_t len = (size_t)(spans[i].end - spans[i].start);
        memcpy(speech + at, samples + spans[i].start, sizeof(float) * len);
        at += len;
    }
    free(spans);

    vad_run v = {&map, p, NULL, 0};
    steno_transcribe_params q = *p;
    if (n_spans > 0) { /* no span: nothing is transcribed and nothing needs mapping */
        q.user = &v;
        q.on_segment = p->on_segment || p->verbose ? on_segment_mapped : NULL;
        q.verbose = 0; /* printed by on_segment_mapped, with the input's times */
        q.should_abort = p->should_abort ? should_abort_fw : NULL;
        q.on_progress = p->on_progress ? on_progress_fw : NULL;
    }
    steno_result *r = NULL;
    st = state ? steno_transcribe_with_state(w, state, speech, kept, &q, &r) : steno_transcribe(w, speech, kept, &q, &r);
    free(speech);
    free(v.words);
    if (st == STENO_OK) {
        for (int i = 0; n_spans > 0 && i < r->n_segments; i++) {
            steno_segment *s = &r->segments[i];
            whisper_ts_map_segment(&map, &s->start, &s->end, s->words, s->n_words);
        }
        r->duration = (double)n / STENO_SAMPLE_RATE; /* the input's, as faster-whisper's info.duration */
        *out = r;
    }
    whisper_ts_map_free(&map);
    return st;
}
