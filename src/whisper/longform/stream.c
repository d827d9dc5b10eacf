/* stream.c — live transcription by LocalAgreement-2, after ufal/whisper_streaming's
 * whisper_online.py (Macháček, Dabre, Bojar 2023, "Turning Whisper into Real-Time Transcription
 * System"):
 *   HypothesisBuffer.insert  → hyp_insert   (drop words already committed, n-gram overlap ≤ 5)
 *   HypothesisBuffer.flush   → hyp_flush    (commit the common prefix of the last two hypotheses)
 *   OnlineASRProcessor.prompt / process_iter / chunk_completed_segment / chunk_at / finish
 *   FasterWhisperASR.ts_words (words of segments with no_speech_prob > 0.9 skipped)
 * and its VAC idea (VACOnlineASRProcessor): a Silero VAD gates the buffer, so silence is neither
 * transcribed nor allowed to grow the buffer, and a pause ends the utterance. Differences, each
 * for a reason: the utterance end runs one last hypothesis over the audio up to the pause before
 * committing (VAC commits the previous hypothesis, which misses the audio since the last step);
 * the committed text survives the utterance end as the next prompt (VAC's init() drops it, losing
 * context); a buffer over 30 s (one Whisper window) is committed whole, bounding latency and cost.
 * The hypothesis is steno_transcribe_with_state (openai-whisper semantics, greedy by default). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "steno.h"

#define SR STENO_SAMPLE_RATE
#define VAD_FRAME 512
#define HARD_CAP_SAMPLES (30 * SR)
#define PROMPT_CHARS 200       /* whisper_online.py prompt(): a 200-character suffix */
#define COMMITTED_KEEP 256     /* committed words kept for the prompt (it needs ~40) */

typedef struct wd {
    double a, b; /* seconds on the stream's timeline */
    char *t;
} wd;

typedef struct wlist {
    wd *v;
    int n, cap;
} wlist;

#define LANG_KEEP_P 0.8 /* a detected language is kept from the first hypothesis this sure of it */

struct steno_stream {
    const steno_whisper *w;
    steno_whisper_state *st;
    const steno_vad *vad;
    steno_stream_options o;
    char language[16];
    float *buf; /* audio buffer: samples [buf_start, buf_start + n) of the stream */
    size_t n, cap;
    int64_t buf_start, iter_end; /* iter_end: stream end at the last hypothesis */
    int64_t vad_end;             /* frames up to here were classified */
    int64_t last_speech_end;     /* end of the last speech frame (-1: none yet) */
    int speech;                  /* the buffer holds speech not yet finished */
    int finished, failed;
    /* HypothesisBuffer */
    wlist committed_in_buffer, buffer, fresh;
    double last_committed_time;
    /* OnlineASRProcessor.commited (tail kept for the prompt) */
    wlist committed;
    /* this call's output */
    steno_stream_commit *out;
    char **out_text;
    int n_out, cap_out;
};

static void wl_clear(wlist *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i].t);
    l->n = 0;
}

static void wl_free(wlist *l) {
    wl_clear(l);
    free(l->v);
    l->v = NULL;
    l->cap = 0;
}

/* Appends (takes ownership of t). */
static int wl_push(wlist *l, double a, double b, char *t) {
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 32;
        wd *v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (wd){a, b, t};
    return 0;
}

static int wl_push_copy(wlist *l, const wd *x) {
    char *t = strdup(x->t);
    if (!t || wl_push(l, x->a, x->b, t) != 0) {
        free(t);
        return -1;
    }
    return 0;
}

/* Removes the first k words. */
static void wl_drop_front(wlist *l, int k) {
    if (k <= 0) return;
    for (int i = 0; i < k; i++) free(l->v[i].t);
    memmove(l->v, l->v + k, sizeof *l->v * (size_t)(l->n - k));
    l->n -= k;
}

/* Moves src's words into dst (dst emptied first); src ends empty. */
static void wl_move(wlist *dst, wlist *src) {
    wl_free(dst);
    *dst = *src;
    *src = (wlist){0};
}

steno_stream_options steno_stream_default_options(void) {
    return (steno_stream_options){.step_ms = 1000, .length_ms = 15000, .keep_ms = 200, .vad_silence_ms = 600,
                                  .vad_threshold = 0.5};
}

static steno_status nomem(void) { return steno_fail(STENO_E_NOMEM, "stream: out of memory"); }

steno_status steno_stream_new(const steno_whisper *w, const steno_vad *vad, const steno_stream_options *opts,
                              steno_stream **out) {
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "steno_stream_new: out is NULL");
    *out = NULL;
    if (!w) return steno_fail(STENO_E_INVALID_ARG, "steno_stream_new: model is NULL");
    const steno_stream_options o = opts ? *opts : steno_stream_default_options();
    if (o.step_ms < 100 || o.step_ms > 30000)
        return steno_fail(STENO_E_INVALID_ARG, "stream: step_ms %d is outside 100..30000", o.step_ms);
    if (o.length_ms < 1000 || o.length_ms > 30000)
        return steno_fail(STENO_E_INVALID_ARG, "stream: length_ms %d is outside 1000..30000", o.length_ms);
    if (o.keep_ms < 0 || o.keep_ms > 5000)
        return steno_fail(STENO_E_INVALID_ARG, "stream: keep_ms %d is outside 0..5000", o.keep_ms);
    if (o.vad_silence_ms < 100 || o.vad_silence_ms > 10000)
        return steno_fail(STENO_E_INVALID_ARG, "stream: vad_silence_ms %d is outside 100..10000", o.vad_silence_ms);
    if (!(o.vad_threshold >= 0 && o.vad_threshold <= 1))
        return steno_fail(STENO_E_INVALID_ARG, "stream: vad_threshold %g is outside 0..1", o.vad_threshold);
    if (o.beam_size < 0 || o.beam_size > 64)
        return steno_fail(STENO_E_INVALID_ARG, "stream: beam_size %d is outside 0..64", o.beam_size);
    if (o.language && (strlen(o.language) >= 16 || !steno_whisper_has_language(w, o.language)))
        return steno_fail(STENO_E_INVALID_ARG, "stream: language '%s' is not one of the model's", o.language);
    steno_stream *s = calloc(1, sizeof *s);
    if (!s) return nomem();
    s->w = w;
    s->vad = vad;
    s->o = o;
    s->o.language = NULL;
    if (o.language) strcpy(s->language, o.language);
    else if (!steno_whisper_is_multilingual(w)) strcpy(s->language, "en");
    s->last_speech_end = -1;
    s->speech = vad ? 0 : 1;
    steno_status st = steno_whisper_state_new(w, o.n_threads, &s->st);
    if (st != STENO_OK) {
        free(s);
        return st;
    }
    *out = s;
    return STENO_OK;
}

void steno_stream_free(steno_stream *s) {
    if (!s) return;
    steno_whisper_state_free(s->st);
    free(s->buf);
    wl_free(&s->committed_in_buffer);
    wl_free(&s->buffer);
    wl_free(&s->fresh);
    wl_free(&s->committed);
    for (int i = 0; i < s->n_out; i++) free(s->out_text[i]);
    free(s->out_text);
    free(s->out);
    free(s);
}

double steno_stream_duration(const steno_stream *s) {
    return s ? (double)(s->buf_start + (int64_t)s->n) / SR : 0;
}

static void out_reset(steno_stream *s) {
    for (int i = 0; i < s->n_out; i++) free(s->out_text[i]);
    s->n_out = 0;
}

/* One commit from words v[0..n) (the output of one flush), and the words into s->committed. */
static steno_status emit(steno_stream *s, const wd *v, int n) {
    if (n == 0) return STENO_OK;
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(v[i].t);
    char *text = malloc(len);
    if (!text) return nomem();
    text[0] = '\0';
    for (int i = 0, at = 0; i < n; i++) {
        const size_t k = strlen(v[i].t);
        memcpy(text + at, v[i].t, k + 1);
        at += (int)k;
    }
    if (s->n_out == s->cap_out) {
        const int cap = s->cap_out ? 2 * s->cap_out : 4;
        steno_stream_commit *o = realloc(s->out, sizeof *o * (size_t)cap);
        if (o) s->out = o;
        char **t = realloc(s->out_text, sizeof *t * (size_t)cap);
        if (t) s->out_text = t;
        if (!o || !t) {
            free(text);
            return nomem();
        }
        s->cap_out = cap;
    }
    s->out_text[s->n_out] = text;
    s->out[s->n_out++] = (steno_stream_commit){v[0].a, v[n - 1].b, text};
    for (int i = 0; i < n; i++)
        if (wl_push_copy(&s->committed, &v[i]) != 0) return nomem();
    if (s->committed.n > 2 * COMMITTED_KEEP) wl_drop_front(&s->committed, s->committed.n - COMMITTED_KEEP);
    return STENO_OK;
}

/* HypothesisBuffer.insert: the new hypothesis (times already on the stream's timeline) minus the
 * words that end before the last commit, minus a 1..5-word n-gram at its head that repeats the
 * tail of the committed words (the buffer's audio still holds them). */
static void hyp_insert(steno_stream *s, wlist *hyp) {
    wl_clear(&s->fresh);
    int k = 0;
    for (int i = 0; i < hyp->n; i++) {
        if (hyp->v[i].a > s->last_committed_time - 0.1) hyp->v[k++] = hyp->v[i];
        else free(hyp->v[i].t);
    }
    hyp->n = k;
    wl_move(&s->fresh, hyp);
    wlist *c = &s->committed_in_buffer, *f = &s->fresh;
    if (f->n >= 1 && fabs(f->v[0].a - s->last_committed_time) < 1 && c->n > 0) {
        const int m = c->n < f->n ? c->n : f->n;
        for (int i = 1; i <= (m < 5 ? m : 5); i++) {
            int same = 1;
            for (int j = 0; j < i && same; j++) same = strcmp(c->v[c->n - i + j].t, f->v[j].t) == 0;
            if (same) {
                wl_drop_front(f, i);
                break;
            }
        }
    }
}

/* HypothesisBuffer.flush: the longest common prefix (by word text) of the previous hypothesis
 * and this one is committed, with this one's times; this one becomes the previous. */
static steno_status hyp_flush(steno_stream *s) {
    wlist *f = &s->fresh, *b = &s->buffer;
    int k = 0;
    while (k < f->n && k < b->n && strcmp(f->v[k].t, b->v[k].t) == 0) k++;
    steno_status st = emit(s, f->v, k);
    if (st != STENO_OK) return st;
    if (k > 0) s->last_committed_time = f->v[k - 1].b;
    for (int i = 0; i < k; i++)
        if (wl_push_copy(&s->committed_in_buffer, &f->v[i]) != 0) return nomem();
    wl_drop_front(f, k);
    wl_move(b, f);
    return STENO_OK;
}

/* HypothesisBuffer.pop_commited */
static void hyp_pop_committed(steno_stream *s, double t) {
    int k = 0;
    while (k < s->committed_in_buffer.n && s->committed_in_buffer.v[k].b <= t) k++;
    wl_drop_front(&s->committed_in_buffer, k);
}

static double buf_offset(const steno_stream *s) { return (double)s->buf_start / SR; }

/* OnlineASRProcessor.prompt: up to 200 characters of the committed words that ended before the
 * buffer starts (the ones inside it are transcribed again). NULL when there are none. */
static char *make_prompt(const steno_stream *s) {
    const wlist *c = &s->committed;
    int k = c->n > 0 ? c->n - 1 : 0;
    while (k > 0 && c->v[k - 1].b > buf_offset(s)) k--;
    int first = k, len = 0;
    while (first > 0 && len < PROMPT_CHARS) {
        first--;
        len += (int)strlen(c->v[first].t) + 1;
    }
    if (first == k) return NULL;
    size_t total = 1;
    for (int i = first; i < k; i++) total += strlen(c->v[i].t);
    char *p = malloc(total);
    if (!p) return NULL;
    p[0] = '\0';
    for (int i = first; i < k; i++) strcat(p, c->v[i].t);
    return p;
}

/* OnlineASRProcessor.chunk_at: the buffer (audio and committed words) starts at t from now on. */
static void chunk_at(steno_stream *s, double t) {
    hyp_pop_committed(s, t);
    int64_t cut = (int64_t)((t - buf_offset(s)) * SR);
    if (cut <= 0) return;
    if ((size_t)cut > s->n) cut = (int64_t)s->n;
    memmove(s->buf, s->buf + cut, sizeof(float) * (s->n - (size_t)cut));
    s->n -= (size_t)cut;
    s->buf_start += cut;
}

/* OnlineASRProcessor.chunk_completed_segment: cut at the end of the latest segment (but the last)
 * that ends within the committed text. */
static void chunk_completed_segment(steno_stream *s, const steno_result *r) {
    if (s->committed.n == 0 || r->n_segments < 2) return;
    const double t = s->committed.v[s->committed.n - 1].b;
    int i = r->n_segments - 2;
    double e = r->segments[i].end + buf_offset(s);
    while (i > 0 && e > t) {
        i--;
        e = r->segments[i].end + buf_offset(s);
    }
    if (e <= t) chunk_at(s, e);
}

/* OnlineASRProcessor.process_iter: one hypothesis over the whole buffer. */
static steno_status process_iter(steno_stream *s) {
    s->iter_end = s->buf_start + (int64_t)s->n;
    char *prompt = make_prompt(s);
    steno_transcribe_params p = steno_transcribe_default_params();
    p.word_timestamps = 1;
    p.condition_on_previous_text = 1;
    p.initial_prompt = prompt;
    p.language = s->language[0] ? s->language : NULL;
    p.beam_size = s->o.beam_size;
    p.should_abort = s->o.should_abort;
    p.user = s->o.user;
    steno_result *r = NULL;
    steno_status st = steno_transcribe_with_state(s->w, s->st, s->buf, s->n, &p, &r);
    free(prompt);
    if (st != STENO_OK) return st;
    /* the language detected on the speech so far is kept once it is likely (p >= LANG_KEEP_P): the
     * first hypothesis may hold ~1 s of speech, too little to tell German from English, and a
     * wrong language kept would decode the whole stream in it (whisper_online detects on every
     * hypothesis; this keeps detecting until one is confident) */
    if (!s->language[0] && r->language[0] && r->n_segments > 0 && r->language_probability >= LANG_KEEP_P)
        snprintf(s->language, sizeof s->language, "%s", r->language);
    wlist hyp = {0};
    const double off = buf_offset(s);
    for (int i = 0; i < r->n_segments && st == STENO_OK; i++) {
        const steno_segment *g = &r->segments[i];
        if (g->no_speech_prob > 0.9) continue; /* FasterWhisperASR.ts_words */
        for (int j = 0; j < g->n_words; j++) {
            char *t = strdup(g->words[j].word);
            if (!t || wl_push(&hyp, g->words[j].start + off, g->words[j].end + off, t) != 0) {
                free(t);
                st = nomem();
                break;
            }
        }
    }
    if (st == STENO_OK) {
        hyp_insert(s, &hyp);
        st = hyp_flush(s);
    }
    wl_free(&hyp);
    if (st == STENO_OK && s->n > (size_t)s->o.length_ms * SR / 1000) chunk_completed_segment(s, r);
    steno_result_free(r);
    return st;
}

/* The end of an utterance (a pause, the 30-s cap, the end of the stream): everything the last
 * hypothesis holds beyond the commits is committed (OnlineASRProcessor.finish), and the buffer
 * restarts with its last keep_ms (silence or the stream's end). */
static steno_status end_utterance(steno_stream *s) {
    steno_status st = emit(s, s->buffer.v, s->buffer.n);
    if (st != STENO_OK) return st;
    if (s->buffer.n > 0) s->last_committed_time = s->buffer.v[s->buffer.n - 1].b;
    wl_clear(&s->buffer);
    wl_clear(&s->fresh);
    wl_clear(&s->committed_in_buffer);
    const size_t keep = (size_t)s->o.keep_ms * SR / 1000;
    if (s->n > keep) chunk_at(s, (double)(s->buf_start + (int64_t)(s->n - keep)) / SR);
    if (s->last_committed_time < buf_offset(s)) s->last_committed_time = buf_offset(s);
    s->speech = s->vad ? 0 : 1;
    return STENO_OK;
}

/* Classifies the whole 512-sample frames not yet seen (and, at the end, the partial one) with
 * up to 0.5 s of the audio before them as the network's warm-up: the Silero state is not carried
 * across calls, and the frames before the new ones give it context. */
static steno_status vad_update(steno_stream *s, int final) {
    const int64_t end = s->buf_start + (int64_t)s->n;
    if (!s->vad || s->vad_end >= end) return STENO_OK;
    int64_t from = s->vad_end - 16 * VAD_FRAME;
    if (from < s->buf_start) from = s->buf_start;
    int64_t len = end - from;
    if (!final) len -= len % VAD_FRAME;
    if (len <= 0 || from + len <= s->vad_end) return STENO_OK;
    float *probs = NULL;
    size_t n_probs = 0;
    steno_status st = steno_vad_probs(s->vad, s->buf + (from - s->buf_start), (size_t)len, s->o.n_threads, &probs,
                                      &n_probs);
    if (st != STENO_OK) return st;
    for (size_t i = 0; i * VAD_FRAME < (size_t)len; i++) {
        const int64_t f0 = from + (int64_t)i * VAD_FRAME, f1 = f0 + VAD_FRAME;
        if (f1 <= s->vad_end || i >= n_probs) continue;
        if (probs[i] >= (float)s->o.vad_threshold) {
            s->last_speech_end = f1 < end ? f1 : end;
            s->speech = 1;
        }
    }
    free(probs);
    s->vad_end = from + len;
    return STENO_OK;
}

/* One step: classify the new audio, then drop silence, end an utterance, or run a hypothesis. */
static steno_status step(steno_stream *s) {
    steno_status st = vad_update(s, 0);
    if (st != STENO_OK) return st;
    const int64_t end = s->buf_start + (int64_t)s->n;
    if (!s->speech) { /* nothing but silence since the last utterance: keep keep_ms of it */
        s->iter_end = end;
        const size_t keep = (size_t)s->o.keep_ms * SR / 1000;
        if (s->n > keep) chunk_at(s, (double)(end - (int64_t)keep) / SR);
        if (s->last_committed_time < buf_offset(s)) s->last_committed_time = buf_offset(s);
        return STENO_OK;
    }
    st = process_iter(s);
    if (st != STENO_OK) return st;
    const int paused = s->vad && s->last_speech_end >= 0 &&
                       end - s->last_speech_end >= (int64_t)s->o.vad_silence_ms * SR / 1000;
    if (paused || s->n > HARD_CAP_SAMPLES) return end_utterance(s);
    return STENO_OK;
}

static steno_status check(steno_stream *s, const char *fn, const steno_stream_commit **commits, int *n_commits) {
    if (commits) *commits = NULL;
    if (n_commits) *n_commits = 0;
    if (!s) return steno_fail(STENO_E_INVALID_ARG, "%s: stream is NULL", fn);
    if (s->finished) return steno_fail(STENO_E_INVALID_ARG, "%s: the stream was finished", fn);
    if (s->failed) return steno_fail(STENO_E_INVALID_ARG, "%s: the stream failed before", fn);
    out_reset(s);
    return STENO_OK;
}

static steno_status done(steno_stream *s, steno_status st, const steno_stream_commit **commits, int *n_commits) {
    if (st != STENO_OK) {
        s->failed = 1;
        out_reset(s);
        return st;
    }
    if (commits) *commits = s->out;
    if (n_commits) *n_commits = s->n_out;
    return STENO_OK;
}

/* Appends n samples and runs a hypothesis once step_ms of new audio is in. */
static steno_status push_piece(steno_stream *s, const float *samples, size_t n) {
    if (s->n + n > s->cap) {
        size_t cap = s->cap ? s->cap : (size_t)SR;
        while (cap < s->n + n) cap *= 2;
        float *b = realloc(s->buf, sizeof(float) * cap);
        if (!b) return nomem();
        s->buf = b;
        s->cap = cap;
    }
    if (n) memcpy(s->buf + s->n, samples, sizeof(float) * n);
    s->n += n;
    if (s->buf_start + (int64_t)s->n - s->iter_end >= (int64_t)s->o.step_ms * SR / 1000) return step(s);
    return STENO_OK;
}

steno_status steno_stream_push(steno_stream *s, const float *samples, size_t n,
                               const steno_stream_commit **commits, int *n_commits) {
    steno_status st = check(s, "steno_stream_push", commits, n_commits);
    if (st != STENO_OK) return st;
    if (!samples && n > 0) return steno_fail(STENO_E_INVALID_ARG, "steno_stream_push: samples is NULL");
    /* A caller far behind (a pipe faster than real time) catches up at most length_ms / 2 per
     * hypothesis: one hypothesis over minutes of audio would commit it all as one unconfirmed
     * piece, and with half a buffer per take every word is still seen by two hypotheses before
     * the buffer reaches its 30-s cap (length_ms 15 s: commits of 40 s with whole takes) */
    const size_t take = (size_t)s->o.length_ms * SR / 2000;
    do {
        const size_t k = n < take ? n : take;
        st = push_piece(s, samples, k);
        samples = samples ? samples + k : samples;
        n -= k;
    } while (st == STENO_OK && n > 0);
    return done(s, st, commits, n_commits);
}

steno_status steno_stream_finish(steno_stream *s, const steno_stream_commit **commits, int *n_commits) {
    steno_status st = check(s, "steno_stream_finish", commits, n_commits);
    if (st != STENO_OK) return st;
    st = vad_update(s, 1);
    if (st == STENO_OK && s->speech && s->buf_start + (int64_t)s->n > s->iter_end) st = process_iter(s);
    if (st == STENO_OK) st = end_utterance(s);
    s->finished = 1;
    return done(s, st, commits, n_commits);
}
