/* transcribe.c — long-form transcription over 30-s windows, a port of openai-whisper's
 * whisper/transcribe.py: transcribe(), with word timestamps and the hallucination guard as
 * faster-whisper 1.2.1's generate_segments has them (whisper/output/alignment.h). clip_timestamps
 * restricts seek to [start, end) clips as in openai-whisper and faster-whisper (an end past the
 * audio is clamped to it, as faster-whisper does); the prompt of each window is
 * whisper_prompt_previous (prompt.h).
 *
 * The log-mel spectrogram of the whole input is computed once with 30 s of zero padding; each
 * window takes up to 3000 content frames at `seek`, padded with zeros (in log-mel space) to 3000.
 * After decoding a window, consecutive timestamp tokens split it into segments; seek advances to
 * the last complete timestamp, or by the whole window when the output ends with a single
 * timestamp or has no timestamp pair. The previous text tokens condition the next window unless
 * the window needed a temperature above 0.5. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "core/blas_core.h"
#include "core/error.h"
#include "text/utf8.h"
#include "whisper/output/alignment.h"
#include "whisper/decoder/decoding.h"
#include "whisper/decoder/prompt.h"
#include "whisper/longform/language.h"
#include "whisper/decoder/spec/spec.h"
#include "whisper/handle.h"
#include "whisper/longform/mel_input.h"
#include "whisper/longform/transcribe.h"

static void free_words(steno_word *w, int n) {
    for (int k = 0; k < n; k++) free(w[k].word);
    free(w);
}

void steno_result_free(steno_result *r) {
    if (!r) return;
    for (int i = 0; i < r->n_segments; i++) {
        free(r->segments[i].text);
        free(r->segments[i].tokens);
        free_words(r->segments[i].words, r->segments[i].n_words);
    }
    free(r->segments);
    free(r->text);
    free(r);
}

/* A growable int array. */
typedef struct ivec {
    int *v;
    int n, cap;
} ivec;

static int ivec_push(ivec *a, const int *x, int n) {
    if (a->n + n > a->cap) {
        int cap = a->cap ? a->cap : 256;
        while (cap < a->n + n) cap *= 2;
        int *v = realloc(a->v, sizeof(int) * (size_t)cap);
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    if (n) memcpy(a->v + a->n, x, sizeof(int) * (size_t)n);
    a->n += n;
    return 0;
}

char *whisper_decode_text(const whisper_model *m, const int *tokens, int n) {
    /* openai-whisper's Tokenizer.decode drops timestamp tokens; other specials cannot appear
     * before the first eot because the suppress set forbids them. */
    int *text_ids = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!text_ids) return NULL;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (tokens[i] < m->special.eot) text_ids[k++] = tokens[i];
    char *raw = steno_tokenizer_decode(m->tokenizer, text_ids, k, 1);
    free(text_ids);
    if (!raw) return NULL;
    char *s = steno_utf8_sanitize(raw, strlen(raw));
    free(raw);
    return s;
}

void whisper_format_ts(double t, char *buf, size_t n) {
    long ms = lround(t * 1000.0);
    long h = ms / 3600000;
    ms -= h * 3600000;
    long mi = ms / 60000;
    ms -= mi * 60000;
    long s = ms / 1000;
    ms -= s * 1000;
    if (h > 0) snprintf(buf, n, "%02ld:%02ld:%02ld.%03ld", h, mi, s, ms);
    else snprintf(buf, n, "%02ld:%02ld.%03ld", mi, s, ms);
}

/* Appends a segment; takes the words of ws (word timestamps) in every case. */
static steno_status add_segment(steno_result *r, int *cap, const whisper_model *m, int seek, whisper_wt_segment *ws,
                                const whisper_window_result *wr) {
    const double start = ws->start, end = ws->end;
    const int *tokens = ws->tokens;
    int n_tokens = ws->n_tokens;
    if (r->n_segments == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        steno_segment *s = realloc(r->segments, sizeof *s * (size_t)nc);
        if (!s) {
            whisper_wt_segments_clear(ws, 1);
            return steno_fail(STENO_E_NOMEM, "out of memory");
        }
        r->segments = s;
        *cap = nc;
    }
    steno_segment *s = &r->segments[r->n_segments];
    memset(s, 0, sizeof *s);
    s->id = r->n_segments;
    s->seek = seek;
    s->start = start;
    s->end = end;
    s->temperature = wr->temperature;
    s->avg_logprob = wr->avg_logprob;
    s->compression_ratio = wr->compression_ratio;
    s->no_speech_prob = wr->no_speech_prob;
    s->words = ws->words;
    s->n_words = ws->n_words;
    ws->words = NULL;
    ws->n_words = 0;
    s->text = whisper_decode_text(m, tokens, n_tokens);
    if (!s->text) {
        free_words(s->words, s->n_words);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    size_t len;
    steno_strip(s->text, &len);
    if (start == end || len == 0) { /* instantaneous or textless: keep the slot, clear it */
        s->text[0] = '\0';
        n_tokens = 0;
        free_words(s->words, s->n_words);
        s->words = NULL;
        s->n_words = 0;
    }
    s->tokens = malloc(sizeof(int) * (size_t)(n_tokens ? n_tokens : 1));
    if (!s->tokens) {
        free(s->text);
        free_words(s->words, s->n_words);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    memcpy(s->tokens, tokens, sizeof(int) * (size_t)n_tokens);
    s->n_tokens = n_tokens;
    r->n_segments++;
    return STENO_OK;
}

/* transcribe.py get_end: the end of the last word, else of the last segment; 0 when no segment. */
static int get_end(const whisper_wt_segment *segs, int n, double *end) {
    for (int i = n - 1; i >= 0; i--)
        if (segs[i].n_words > 0) {
            *end = segs[i].words[segs[i].n_words - 1].end;
            return 1;
        }
    if (n == 0) return 0;
    *end = segs[n - 1].end;
    return 1;
}

static const whisper_wt_segment *next_words_segment(const whisper_wt_segment *segs, int n) {
    for (int i = 0; i < n; i++)
        if (segs[i].n_words > 0) return &segs[i];
    return NULL;
}

/* The hallucination guard of faster-whisper's generate_segments (= openai transcribe.py): returns
 * 1 when the whole window is dropped and decoding resumes at *seek (leading silence before a
 * possible hallucination); otherwise it may cut the window's segments at a possible
 * hallucination surrounded by silence (*n shrinks, *seek moves to it). Times in seconds. */
static int skip_hallucination(whisper_wt_segment *segs, int *n, double threshold, double time_offset,
                              double segment_duration, int previous_seek, int content_frames,
                              double last_speech_timestamp, int *seek) {
    const double window_end_time = (previous_seek + 3000) / 100.0; /* N_FRAMES: a full window */
    const double content_duration = content_frames / 100.0;
    const whisper_wt_segment *first = next_words_segment(segs, *n);
    if (first && whisper_segment_is_anomaly(first)) {
        const double gap = first->start - time_offset;
        if (gap > threshold) {
            *seek = previous_seek + (int)nearbyint(gap * 100.0);
            if (*seek <= previous_seek) *seek = previous_seek + 1; /* a gap under 5 ms must still advance */
            return 1;
        }
    }
    double hal_last_end = last_speech_timestamp;
    for (int si = 0; si < *n; si++) {
        const whisper_wt_segment *sg = &segs[si];
        if (sg->n_words == 0) continue;
        if (whisper_segment_is_anomaly(sg)) {
            const whisper_wt_segment *next = next_words_segment(segs + si + 1, *n - si - 1);
            const double hal_next_start = next ? next->words[0].start : time_offset + segment_duration;
            const int silence_before =
                sg->start - hal_last_end > threshold || sg->start < threshold || sg->start - time_offset < 2.0;
            const int silence_after = hal_next_start - sg->end > threshold || whisper_segment_is_anomaly(next) ||
                                      window_end_time - sg->end < 2.0;
            if (silence_before && silence_after) {
                *seek = (int)nearbyint(fmax(time_offset + 1, sg->start) * 100.0);
                if (content_duration - sg->end < threshold) *seek = content_frames;
                whisper_wt_segments_clear(segs + si, *n - si);
                *n = si;
                break;
            }
        }
        hal_last_end = sg->end;
    }
    return 0;
}

steno_status steno_transcribe(steno_whisper *w, const float *samples, size_t n,
                              const steno_transcribe_params *params, steno_result **out) {
    return steno_transcribe_with_state(w, w ? w->state : NULL, samples, n, params, out);
}

static steno_status transcribe_mel(const steno_whisper *w, steno_whisper_state *state, const whisper_mel_input *in,
                                   const steno_transcribe_params *params, steno_result **out);

steno_status steno_transcribe_with_state(const steno_whisper *w, steno_whisper_state *state, const float *samples,
                                         size_t n, const steno_transcribe_params *params, steno_result **out) {
    steno_clear_error();
    steno_clear_warning();
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no output pointer");
    *out = NULL;
    if (!w) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no model");
    if (!state) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no state");
    if (!samples && n) return steno_fail(STENO_E_INVALID_ARG, "transcribe: samples NULL with n = %zu", n);
    steno_mel mel = {0};
    steno_status st = steno_log_mel(samples, n, STENO_CHUNK_SAMPLES, w->model->n_mels, &mel);
    if (st != STENO_OK) return st;
    const whisper_mel_input in = {n, &mel, NULL};
    st = transcribe_mel(w, state, &in, params, out);
    steno_mel_free(&mel);
    return st;
}

steno_status steno_transcribe_audio(steno_whisper *w, steno_audio *a, const steno_transcribe_params *params,
                                    steno_result **out) {
    return steno_transcribe_audio_with_state(w, w ? w->state : NULL, a, params, out);
}

steno_status steno_transcribe_audio_with_state(const steno_whisper *w, steno_whisper_state *state, steno_audio *a,
                                               const steno_transcribe_params *params, steno_result **out) {
    steno_clear_error();
    steno_clear_warning();
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no output pointer");
    *out = NULL;
    if (!w) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no model");
    if (!state) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no state");
    if (!a) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no audio");
    const whisper_mel_input in = {steno_audio_n_samples(a), NULL, a};
    return transcribe_mel(w, state, &in, params, out);
}

/* The loop of transcribe.py over windows of `in`. */
static steno_status transcribe_mel(const steno_whisper *w, steno_whisper_state *state, const whisper_mel_input *in,
                                   const steno_transcribe_params *params, steno_result **out) {
    const size_t n = in->n_samples;
    const steno_transcribe_params defaults = steno_transcribe_default_params();
    const whisper_model *m = w->model;
    const steno_transcribe_params *p = params ? params : &defaults;
    if (p->clip_timestamps && p->n_clip_timestamps < 0)
        return steno_fail(STENO_E_INVALID_ARG, "clip_timestamps: negative count %d", p->n_clip_timestamps);
    for (int i = 0; p->clip_timestamps && i < p->n_clip_timestamps; i++) {
        const double t = p->clip_timestamps[i];
        if (!isfinite(t) || t < 0)
            return steno_fail(STENO_E_INVALID_ARG, "clip_timestamps: value %d (%g) is not a time >= 0", i + 1, t);
        if (i % 2 && t < p->clip_timestamps[i - 1])
            return steno_fail(STENO_E_INVALID_ARG, "clip_timestamps: clip %d ends (%g s) before it starts (%g s)",
                              i / 2 + 1, t, p->clip_timestamps[i - 1]);
    }
    /* The faithful path lets OpenBLAS thread each GEMM; the fast path splits GEMMs over its own
     * pool on a fixed column grid and runs single-threaded OpenBLAS inside each task. */
    openblas_set_num_threads(state->fast ? 1 : state->n_threads);
    const int audio_ctx = state->fast ? whisper_fast_audio_ctx(state->fast) : m->n_audio_ctx;

    const int n_frames_window = 2 * m->n_audio_ctx; /* 3000 */
    const int input_stride = 2;                      /* mel frames per encoder position */
    const double time_precision = (double)input_stride * STENO_HOP_LENGTH / STENO_SAMPLE_RATE;

    int lang_token;
    steno_status st = whisper_resolve_language(m, p, &lang_token);
    if (st != STENO_OK) return st;
    int detect = m->multilingual && lang_token < 0; /* on the first window's encoder output */
    steno_result *r = calloc(1, sizeof *r);
    if (!r) return steno_fail(STENO_E_NOMEM, "out of memory");
    snprintf(r->language, sizeof r->language, "%s", lang_token >= 0 ? p->language : "en");
    r->language_probability = 1.0;
    r->word_timestamps = p->word_timestamps != 0;
    r->duration = (double)n / STENO_SAMPLE_RATE;

    whisper_decode_ctx dc;
    int dc_ready = 0, seg_cap = 0;
    ivec all_tokens = {0};
    float *window = NULL, *xa = NULL;
    int *initial = NULL, n_initial = 0, *clips = NULL, *prev = NULL;
    whisper_window_result wr = {0};
    whisper_wt_segment *cur = NULL; /* the window's segments before they join the result */
    double last_speech_timestamp = 0.0;
    if ((st = whisper_decode_ctx_init(&dc, m, state->fast, p)) != STENO_OK) goto done;
    dc_ready = 1;
    if (lang_token >= 0) dc.lang_token = lang_token;
    if (p->draft_kind != STENO_WDRAFT_NONE) { /* speculative decoding (spec.h) */
        const steno_whisper *dw = p->draft_model;
        if (!state->fast) {
            st = steno_fail(STENO_E_INVALID_ARG, "speculative decoding (draft_kind) needs the fast path");
            goto done;
        }
        if ((st = whisper_spec_create(&dc, p, dw ? dw->model : NULL, dw ? dw->state->fast : NULL, &dc.spec)) !=
            STENO_OK)
            goto done;
    }
    window = malloc(sizeof(float) * (size_t)m->n_mels * n_frames_window);
    xa = malloc(sizeof(float) * (size_t)audio_ctx * m->n_audio_state);
    wr.tokens = malloc(sizeof(int) * (size_t)(m->n_text_ctx + 1));
    cur = malloc(sizeof *cur * (size_t)(m->n_text_ctx + 1));
    if (!window || !xa || !wr.tokens || !cur) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    if (p->initial_prompt && *p->initial_prompt) {
        if ((st = whisper_prompt_encode(m->tokenizer, p->initial_prompt, 0, &initial, &n_initial)) != STENO_OK)
            goto done;
        if (ivec_push(&all_tokens, initial, n_initial)) {
            st = steno_fail(STENO_E_NOMEM, "out of memory");
            goto done;
        }
    }

    const int content_frames = whisper_mel_content_frames(in);
    if (detect && content_frames <= 0) { /* no window: detect on silence, as faster-whisper does */
        memset(window, 0, sizeof(float) * (size_t)m->n_mels * n_frames_window);
        st = state->fast ? whisper_fast_encode(state->fast, window, xa) : whisper_encode(m, window, xa);
        if (st == STENO_OK) st = whisper_detect_and_set_language(&dc, xa, r->language, &r->language_probability);
        if (st != STENO_OK) goto done;
    }
    /* clip_timestamps → frame pairs: round(ts · 100) (Python's round: half to even), an odd count
     * ends at the content end, ends past the content clamp to it (faster-whisper) */
    const int n_ts = p->clip_timestamps ? p->n_clip_timestamps : 0;
    const int n_clips = n_ts ? (n_ts + 1) / 2 : 1;
    clips = malloc(sizeof(int) * 2 * (size_t)n_clips);
    if (!clips) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    clips[0] = 0;
    clips[1] = content_frames;
    for (int i = 0; i < n_ts; i++) {
        const double f = nearbyint(p->clip_timestamps[i] * (STENO_SAMPLE_RATE / STENO_HOP_LENGTH));
        clips[i] = f < (double)content_frames ? (int)f : content_frames;
    }
    if (n_ts % 2) clips[n_ts] = content_frames;
    if (n_ts && p->clip_timestamps[0] * STENO_SAMPLE_RATE >= (double)n) {
        int all_past = 1;
        for (int i = 0; i < n_ts; i += 2) all_past &= p->clip_timestamps[i] * STENO_SAMPLE_RATE >= (double)n;
        if (all_past)
            steno_warn("clip_timestamps: every clip starts at or after the end of the audio (%.2f s): nothing to "
                       "transcribe", (double)n / STENO_SAMPLE_RATE);
    }
    prev = malloc(sizeof(int) * (size_t)(m->n_text_ctx / 2));
    if (!prev) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    int clip = 0, seek = clips[0], prompt_reset_since = 0;
    while (clip < n_clips) {
        if (seek < clips[2 * clip]) seek = clips[2 * clip];
        if (seek >= clips[2 * clip + 1]) {
            if (++clip < n_clips) seek = clips[2 * clip];
            continue;
        }
        const int clip_end = clips[2 * clip + 1];
        const double time_offset = (double)seek * STENO_HOP_LENGTH / STENO_SAMPLE_RATE;
        /* a reduced audio_ctx (Lab) shortens the window: the encoder sees 2·audio_ctx frames */
        const int window_frames = 2 * audio_ctx;
        int segment_size = content_frames - seek < window_frames ? content_frames - seek : window_frames;
        if (clip_end - seek < segment_size) segment_size = clip_end - seek;
        const double segment_duration = (double)segment_size * STENO_HOP_LENGTH / STENO_SAMPLE_RATE;
        if ((st = whisper_mel_window(in, m->n_mels, seek, segment_size, window, n_frames_window)) != STENO_OK)
            goto done;
        if (p->should_abort && p->should_abort(p->user)) {
            st = steno_fail(STENO_E_ABORTED, "transcribe: aborted by the caller");
            goto done;
        }
        st = state->fast ? whisper_fast_encode(state->fast, window, xa) : whisper_encode(m, window, xa);
        if (st == STENO_OK) st = whisper_spec_set_window(dc.spec, window);
        if (st != STENO_OK) goto done;
        if (detect) {
            if ((st = whisper_detect_and_set_language(&dc, xa, r->language, &r->language_probability)) != STENO_OK)
                goto done;
            detect = 0;
        }
        /* without condition_on_previous_text the reset after every window leaves only the initial
         * prompt, for the first window (openai-whisper, faster-whisper) */
        const int n_prompt = whisper_prompt_previous(all_tokens.v, all_tokens.n, n_initial, prompt_reset_since,
                                                     p->carry_initial_prompt, m->n_text_ctx, prev);
        if ((st = whisper_decode_with_fallback(&dc, xa, n_prompt ? prev : NULL, n_prompt, p, seek, &wr)) != STENO_OK)
            goto done;

        if (p->no_speech_threshold >= 0) {
            int skip = wr.no_speech_prob > p->no_speech_threshold;
            if (p->logprob_threshold > -1e30 && wr.avg_logprob > p->logprob_threshold) skip = 0;
            if (skip) {
                seek += segment_size;
                continue;
            }
        }

        const int previous_seek = seek, first_new = r->n_segments;
        const int *tok = wr.tokens, nt = wr.n_tokens, tb = m->special.timestamp_begin;
        const int single_timestamp_ending = nt >= 2 && tok[nt - 2] < tb && tok[nt - 1] >= tb;
        int n_consecutive = 0, n_cur = 0;
        for (int i = 1; i < nt; i++) n_consecutive += tok[i] >= tb && tok[i - 1] >= tb;
        if (n_consecutive > 0) {
            int last_slice = 0;
            for (int i = 1; i <= nt; i++) {
                const int is_cut = i < nt ? (tok[i] >= tb && tok[i - 1] >= tb) : single_timestamp_ending;
                if (!is_cut) continue;
                const int *sl = tok + last_slice;
                const int sn = i - last_slice;
                cur[n_cur++] = (whisper_wt_segment){sl, sn, time_offset + (sl[0] - tb) * time_precision,
                                                    time_offset + (sl[sn - 1] - tb) * time_precision, NULL, 0};
                last_slice = i;
            }
            if (single_timestamp_ending) seek += segment_size;
            else {
                const int advance = (tok[last_slice - 1] - tb) * input_stride;
                /* a timestamp past a shortened window must not skip unheard audio */
                seek += audio_ctx < m->n_audio_ctx && advance > segment_size ? segment_size : advance;
            }
        } else {
            double duration = segment_duration;
            int last_ts = -1;
            for (int i = 0; i < nt; i++)
                if (tok[i] >= tb) last_ts = tok[i];
            if (last_ts >= 0 && last_ts != tb) duration = (last_ts - tb) * time_precision;
            cur[n_cur++] = (whisper_wt_segment){tok, nt, time_offset, time_offset + duration, NULL, 0};
            seek += segment_size;
        }

        if (p->word_timestamps) {
            if ((st = whisper_add_word_timestamps(&dc, cur, n_cur, previous_seek, segment_size, p->prepend_punctuations,
                                                  p->append_punctuations, last_speech_timestamp)) != STENO_OK)
                goto done;
            double last_word_end;
            if (!single_timestamp_ending && get_end(cur, n_cur, &last_word_end) && last_word_end > time_offset)
                seek = (int)nearbyint(last_word_end * 100.0);
            if (p->hallucination_silence_threshold >= 0 &&
                skip_hallucination(cur, &n_cur, p->hallucination_silence_threshold, time_offset, segment_duration,
                                   previous_seek, content_frames, last_speech_timestamp, &seek)) {
                whisper_wt_segments_clear(cur, n_cur);
                continue;
            }
            if (get_end(cur, n_cur, &last_word_end)) last_speech_timestamp = last_word_end;
        }
        for (int i = 0; i < n_cur; i++) {
            if ((st = add_segment(r, &seg_cap, m, previous_seek, &cur[i], &wr)) != STENO_OK) {
                whisper_wt_segments_clear(cur + i + 1, n_cur - i - 1);
                goto done;
            }
        }

        for (int i = first_new; i < r->n_segments; i++) {
            const steno_segment *s = &r->segments[i];
            if (ivec_push(&all_tokens, s->tokens, s->n_tokens)) {
                st = steno_fail(STENO_E_NOMEM, "out of memory");
                goto done;
            }
            if (s->n_tokens == 0) continue;
            if (p->verbose) {
                char a[64], b[64];
                whisper_format_ts(s->start, a, sizeof a);
                whisper_format_ts(s->end, b, sizeof b);
                printf("[%s --> %s] %s\n", a, b, s->text);
                fflush(stdout);
            }
            if (p->on_segment && p->on_segment(p->user, s)) {
                st = steno_fail(STENO_E_ABORTED, "transcribe: aborted by the caller");
                goto done;
            }
        }
        if (!p->condition_on_previous_text || wr.temperature > 0.5) prompt_reset_since = all_tokens.n;
        if (p->on_progress && content_frames > 0)
            p->on_progress(p->user, (double)(seek < content_frames ? seek : content_frames) / content_frames);
    }

    r->text = whisper_decode_text(m, all_tokens.v + n_initial, all_tokens.n - n_initial);
    if (!r->text) st = steno_fail(STENO_E_NOMEM, "out of memory");
done:
    if (dc_ready) whisper_spec_add_stats(dc.spec, p->decode_stats);
    if (dc_ready) whisper_decode_ctx_free(&dc);
    free(all_tokens.v);
    free(window);
    free(xa);
    free(wr.tokens);
    free(cur);
    free(initial);
    free(clips);
    free(prev);
    if (st != STENO_OK) {
        steno_result_free(r);
        return st;
    }
    *out = r;
    return STENO_OK;
}
