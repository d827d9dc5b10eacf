/* batched_pipeline.c — batched long-form transcription, as faster-whisper 1.2.1's
 * BatchedInferencePipeline.transcribe (faster_whisper/transcribe.py) with vad_filter=True:
 *   1. speech spans: get_speech_timestamps with VadOptions(max_speech_duration_s=chunk_length (30),
 *      min_silence_duration_ms=160) when the caller gives no VAD options, else the caller's with
 *      max_speech_duration_s forced to 30 (transcribe: vad_parameters);
 *   2. vad.py collect_chunks(max_duration=30): spans joined back to back into chunks of at most
 *      30 s; a chunk's offset is the speech before it (seconds on the joined timeline), its
 *      duration its samples / 16000;
 *   3. features per chunk (transcribe: feature_extractor(chunk)[..., :-1], pad_or_trim): each
 *      chunk is its own 30-s window, its log-mel normalized over the chunk alone;
 *   4. generate_segment_batched: every window decoded with the same prompt (the initial prompt's
 *      tokens if any, the SOT sequence, <|notimestamps|> when without_timestamps), no previous
 *      text, no prefix, only the first temperature, which does not change the decoding (no
 *      fallback, no no-speech skip; see steno_transcribe_batched); batch_size
 *      windows at a time, their decoder steps as rows of one step (whisper/longform/window_group.h);
 *   5. forward: _split_segments_by_timestamps per chunk (time_offset = the chunk's offset,
 *      segment_duration = its duration), each segment with the chunk's avg_logprob and
 *      no_speech_prob, its own compression ratio, seek = int(offset · 100), times rounded to
 *      3 decimals (_batched_segments_generator), then restore_speech_timestamps (whisper/longform/transcribe.h
 *      whisper_ts_map_segment). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/mel.h"
#include "core/blas_core.h"
#include "core/error.h"
#include "steno.h"
#include "whisper/longform/window_group.h"
#include "whisper/decoder/decoding.h"
#include "whisper/longform/language.h"
#include "whisper/longform/mel_input.h"
#include "whisper/decoder/prompt.h"
#include "whisper/handle.h"
#include "whisper/longform/transcribe.h"

#define CHUNK_LENGTH_S 30

typedef struct chunk {
    size_t at, n;      /* samples [at, at + n) of the joined speech */
    double offset;     /* seconds of speech before it */
    double duration;   /* n / 16000 */
} chunk;

/* vad.py collect_chunks, over spans already joined into one buffer (their order). A span that
 * does not fit closes the current chunk and starts the next (faster-whisper appends even an
 * empty first chunk when the first span alone exceeds max_duration). */
static int collect_chunks(const steno_speech_span *spans, int n_spans, chunk **out, int *n_out) {
    chunk *c = malloc(sizeof *c * (size_t)(n_spans + 1));
    if (!c) return -1;
    int k = 0;
    int64_t cur = 0, total = 0;
    size_t at = 0, cur_at = 0;
    const int64_t max_samples = (int64_t)CHUNK_LENGTH_S * STENO_SAMPLE_RATE;
    for (int i = 0; i < n_spans; i++) {
        const int64_t len = spans[i].end - spans[i].start;
        if (cur + len > max_samples) {
            c[k++] = (chunk){cur_at, (size_t)cur, (double)total / STENO_SAMPLE_RATE, (double)cur / STENO_SAMPLE_RATE};
            total += cur;
            cur_at = at;
            cur = len;
        } else {
            cur += len;
        }
        at += (size_t)len;
    }
    c[k++] = (chunk){cur_at, (size_t)cur, (double)total / STENO_SAMPLE_RATE, (double)cur / STENO_SAMPLE_RATE};
    *out = c;
    *n_out = k;
    return 0;
}

/* Python's round(x, 3): printf rounds the double's exact decimal expansion, ties to even. */
static double round3(double x) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.3f", x);
    return strtod(buf, NULL);
}

typedef struct window_job {
    whisper_decode_ctx *dc;
    const float *xa;
    const int *prompt;
    int n_prompt;
    const steno_transcribe_params *q;
    int seek;
    whisper_window_result *wr;
} window_job;

static steno_status run_window(void *arg) {
    window_job *j = arg;
    return whisper_decode_with_fallback(j->dc, j->xa, j->prompt, j->n_prompt, j->q, j->seek, j->wr);
}

static steno_status push_segment(steno_result *r, int *cap, const whisper_model *m, int seek, const int *tok, int nt,
                                 double start, double end, const whisper_window_result *wr, double temperature) {
    if (r->n_segments == *cap) {
        const int nc = *cap ? *cap * 2 : 16;
        steno_segment *s = realloc(r->segments, sizeof *s * (size_t)nc);
        if (!s) return steno_fail(STENO_E_NOMEM, "out of memory");
        r->segments = s;
        *cap = nc;
    }
    steno_segment *s = &r->segments[r->n_segments];
    memset(s, 0, sizeof *s);
    s->id = r->n_segments;
    s->seek = seek;
    s->start = round3(start);
    s->end = round3(end);
    s->temperature = temperature;
    s->avg_logprob = wr->avg_logprob;
    s->no_speech_prob = wr->no_speech_prob;
    s->text = whisper_decode_text(m, tok, nt);
    s->tokens = malloc(sizeof(int) * (size_t)(nt ? nt : 1));
    if (!s->text || !s->tokens) {
        free(s->text);
        free(s->tokens);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    memcpy(s->tokens, tok, sizeof(int) * (size_t)nt);
    s->n_tokens = nt;
    s->compression_ratio = whisper_compression_ratio(s->text);
    r->n_segments++;
    return STENO_OK;
}

/* forward + _split_segments_by_timestamps for one chunk's tokens. */
static steno_status chunk_segments(steno_result *r, int *cap, const whisper_model *m, const chunk *ch,
                                   const whisper_window_result *wr, double temperature) {
    const int *tok = wr->tokens, nt = wr->n_tokens, tb = m->special.timestamp_begin;
    const double time_precision = 0.02;
    const int seek = (int)(ch->offset * 100.0);
    const int single_timestamp_ending = nt >= 2 && tok[nt - 2] < tb && tok[nt - 1] >= tb;
    int consecutive = 0;
    for (int i = 1; i < nt; i++) consecutive += tok[i] >= tb && tok[i - 1] >= tb;
    steno_status st = STENO_OK;
    if (consecutive > 0) {
        int last_slice = 0;
        for (int i = 1; i <= nt && st == STENO_OK; i++) {
            const int is_cut = i < nt ? (tok[i] >= tb && tok[i - 1] >= tb) : single_timestamp_ending;
            if (!is_cut) continue;
            const int *sl = tok + last_slice, sn = i - last_slice;
            st = push_segment(r, cap, m, seek, sl, sn, ch->offset + (sl[0] - tb) * time_precision,
                              ch->offset + (sl[sn - 1] - tb) * time_precision, wr, temperature);
            last_slice = i;
        }
        return st;
    }
    double duration = ch->duration;
    int last_ts = -1;
    for (int i = 0; i < nt; i++)
        if (tok[i] >= tb) last_ts = tok[i];
    if (last_ts >= 0 && last_ts != tb) duration = (last_ts - tb) * time_precision;
    return push_segment(r, cap, m, seek, tok, nt, ch->offset, ch->offset + duration, wr, temperature);
}

typedef struct batched_run {
    const whisper_model *m;
    whisper_fast *fast;
    int N;                    /* batch size */
    whisper_decode_ctx *dc;   /* [N] */
    int n_dc;
    float *window;            /* [n_mels][3000] */
    float *xa;                /* [N][audio_ctx][D] */
    whisper_window_result *wr; /* [N] */
    window_job *jobs;
    void **args;
    whisper_fast_decoder **decs;
    steno_status *st;
    whisper_batch *batch;
    int *prompt, n_prompt;
} batched_run;

static void run_free(batched_run *b) {
    for (int i = 0; i < b->n_dc; i++) whisper_decode_ctx_free(&b->dc[i]);
    for (int i = 0; b->wr && i < b->N; i++) free(b->wr[i].tokens);
    free(b->dc);
    free(b->window);
    free(b->xa);
    free(b->wr);
    free(b->jobs);
    free(b->args);
    free(b->decs);
    free(b->st);
    free(b->prompt);
    whisper_batch_free(b->batch);
}

steno_status steno_transcribe_batched(steno_whisper *w, steno_whisper_state *state, const steno_vad *vad,
                                      const steno_vad_options *vad_opts, const float *samples, size_t n,
                                      int batch_size, const steno_transcribe_params *params, steno_result **out) {
    steno_clear_error();
    steno_clear_warning();
    if (!out) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no output pointer");
    *out = NULL;
    if (!w || !vad) return steno_fail(STENO_E_INVALID_ARG, "transcribe: no %s", w ? "VAD" : "model");
    if (!samples && n) return steno_fail(STENO_E_INVALID_ARG, "transcribe: samples NULL with n = %zu", n);
    if (batch_size < 1 || batch_size > STENO_MAX_BATCH_SIZE)
        return steno_fail(STENO_E_INVALID_ARG, "batch_size: %d (must be 1..%d)", batch_size, STENO_MAX_BATCH_SIZE);
    const steno_transcribe_params defaults = steno_transcribe_default_params();
    const steno_transcribe_params *p = params ? params : &defaults;
    if (p->word_timestamps)
        return steno_fail(STENO_E_INVALID_ARG, "word_timestamps: not available in batched mode (batch_size) yet");
    if (p->clip_timestamps && p->n_clip_timestamps > 0)
        return steno_fail(STENO_E_INVALID_ARG, "clip_timestamps: not available in batched mode (batch_size)");
    if (p->temperatures && p->n_temperatures < 1)
        return steno_fail(STENO_E_INVALID_ARG, "temperatures: an empty list");
    if (!state) state = whisper_handle_state(w);
    whisper_fast *fast = whisper_state_fast(state);
    if (!fast) return steno_fail(STENO_E_INVALID_ARG, "batch_size: batched mode needs the fast path");
    /* a batched step already reads each weight once for several windows' rows */
    if (p->draft_kind != STENO_WDRAFT_NONE)
        return steno_fail(STENO_E_INVALID_ARG, "batch_size: batched mode does not speculate (draft_kind)");
    const whisper_model *m = whisper_handle_model(w);

    steno_vad_options vo = vad_opts ? *vad_opts : steno_vad_default_options();
    if (!vad_opts) vo.min_silence_duration_ms = 160;
    vo.max_speech_duration_s = CHUNK_LENGTH_S;
    steno_speech_span *spans = NULL;
    int n_spans = 0;
    steno_status st = steno_vad_speech_timestamps(vad, samples, n, &vo, &spans, &n_spans);
    if (st != STENO_OK) return st;

    /* only the first temperature, no previous text, no prefix (generate_segment_batched). That
     * temperature is passed to CTranslate2 as sampling_temperature with sampling_topk left at 1:
     * its BestSampler takes the argmax (beam search: the best candidates) and never reads the
     * temperature, so decoding is the deterministic one at any temperature (checked with
     * faster-whisper 1.2.1: the same text and avg_logprob at 0, 1 and 2, beam 1 and 5); segments
     * report the temperature given. */
    steno_transcribe_params q = *p;
    const double t0 = p->temperatures ? p->temperatures[0] : 0.0, t_decode = 0.0;
    q.temperatures = &t_decode;
    q.n_temperatures = 1;
    q.condition_on_previous_text = 0;
    q.prefix = NULL;
    q.initial_prompt = NULL;
    q.on_segment = NULL;
    q.on_progress = NULL;
    q.verbose = 0;

    batched_run b = {0};
    steno_result *r = calloc(1, sizeof *r);
    float *speech = NULL;
    chunk *chunks = NULL;
    int n_chunks = 0, seg_cap = 0;
    whisper_ts_map map = {0};
    if (!r) {
        free(spans);
        return steno_fail(STENO_E_NOMEM, "out of memory");
    }
    r->duration = (double)n / STENO_SAMPLE_RATE;
    r->language_probability = 1.0;
    int lang_token;
    if ((st = whisper_resolve_language(m, p, &lang_token)) != STENO_OK) goto done;
    snprintf(r->language, sizeof r->language, "%s", lang_token >= 0 ? p->language : "en");
    if (n_spans == 0) { /* duration_after_vad 0: no features, no segment */
        r->text = calloc(1, 1);
        if (!r->text) st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    size_t kept = 0;
    for (int i = 0; i < n_spans; i++) kept += (size_t)(spans[i].end - spans[i].start);
    speech = malloc(sizeof(float) * kept);
    if (!speech || whisper_ts_map_init(&map, spans, n_spans) || collect_chunks(spans, n_spans, &chunks, &n_chunks)) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0, at = 0; i < (size_t)n_spans; i++) {
        const size_t len = (size_t)(spans[i].end - spans[i].start);
        memcpy(speech + at, samples + spans[i].start, sizeof(float) * len);
        at += len;
    }

    openblas_set_num_threads(1); /* the fast path threads its GEMMs on its own pool */
    const int A = whisper_fast_audio_ctx(fast), Da = m->n_audio_state, n_frames = 2 * m->n_audio_ctx;
    const int N = batch_size < n_chunks ? batch_size : n_chunks;
    b.m = m;
    b.fast = fast;
    b.N = N;
    b.dc = calloc((size_t)N, sizeof *b.dc);
    b.window = malloc(sizeof(float) * (size_t)m->n_mels * n_frames);
    b.xa = malloc(sizeof(float) * (size_t)N * A * Da);
    b.wr = calloc((size_t)N, sizeof *b.wr);
    b.jobs = calloc((size_t)N, sizeof *b.jobs);
    b.args = calloc((size_t)N, sizeof *b.args);
    b.decs = calloc((size_t)N, sizeof *b.decs);
    b.st = calloc((size_t)N, sizeof *b.st);
    if (!b.dc || !b.window || !b.xa || !b.wr || !b.jobs || !b.args || !b.decs || !b.st) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < N; i++) {
        if ((st = whisper_decode_ctx_init(&b.dc[i], m, fast, &q)) != STENO_OK) goto done;
        b.n_dc++;
        if (lang_token >= 0) b.dc[i].lang_token = lang_token;
        b.wr[i].tokens = malloc(sizeof(int) * (size_t)(m->n_text_ctx + 1));
        if (!b.wr[i].tokens) {
            st = steno_fail(STENO_E_NOMEM, "out of memory");
            goto done;
        }
        b.decs[i] = b.dc[i].fdec;
    }
    if ((st = whisper_batch_create(fast, N, N * b.dc[0].rows, &b.batch)) != STENO_OK) goto done;
    if (p->initial_prompt && *p->initial_prompt) { /* get_prompt(previous_tokens=encode(initial_prompt)) */
        int *ids = NULL, n_ids = 0;
        if ((st = whisper_prompt_encode(m->tokenizer, p->initial_prompt, 0, &ids, &n_ids)) != STENO_OK) goto done;
        b.prompt = malloc(sizeof(int) * (size_t)(m->n_text_ctx / 2));
        if (b.prompt) b.n_prompt = whisper_prompt_previous(ids, n_ids, n_ids, 0, 0, m->n_text_ctx, b.prompt);
        free(ids);
        if (!b.prompt) {
            st = steno_fail(STENO_E_NOMEM, "out of memory");
            goto done;
        }
    }

    int detect = m->multilingual && lang_token < 0;
    for (int c0 = 0; c0 < n_chunks; c0 += N) {
        const int nb = n_chunks - c0 < N ? n_chunks - c0 : N;
        if (p->should_abort && p->should_abort(p->user)) {
            st = steno_fail(STENO_E_ABORTED, "transcribe: aborted by the caller");
            goto done;
        }
        for (int i = 0; i < nb; i++) {
            const chunk *ch = &chunks[c0 + i];
            steno_mel mel = {0};
            if ((st = steno_log_mel(speech + ch->at, ch->n, STENO_CHUNK_SAMPLES, m->n_mels, &mel)) != STENO_OK) goto done;
            const whisper_mel_input in = {ch->n, &mel, NULL};
            const int content = whisper_mel_content_frames(&in);
            st = whisper_mel_window(&in, m->n_mels, 0, content < n_frames ? content : n_frames, b.window, n_frames);
            steno_mel_free(&mel);
            float *xa = b.xa + (size_t)i * A * Da;
            if (st == STENO_OK) st = whisper_fast_encode(fast, b.window, xa);
            if (st != STENO_OK) goto done;
            if (detect) { /* on the first chunk of speech (faster-whisper: the first 30 s of the chunks' features) */
                if ((st = whisper_detect_and_set_language(&b.dc[0], xa, r->language, &r->language_probability)) !=
                    STENO_OK)
                    goto done;
                for (int k = 1; k < N; k++) b.dc[k].lang_token = b.dc[0].lang_token;
                detect = 0;
            }
            b.jobs[i] = (window_job){&b.dc[i], xa, b.prompt, b.n_prompt, &q, (int)(ch->offset * 100.0), &b.wr[i]};
            b.args[i] = &b.jobs[i];
        }
        if ((st = whisper_batch_run(b.batch, nb, b.decs, run_window, b.args, b.st)) != STENO_OK) goto done;
        for (int i = 0; i < nb; i++) {
            const int first = r->n_segments;
            if ((st = chunk_segments(r, &seg_cap, m, &chunks[c0 + i], &b.wr[i], t0)) != STENO_OK) goto done;
            for (int k = first; k < r->n_segments; k++) {
                steno_segment *s = &r->segments[k];
                whisper_ts_map_segment(&map, &s->start, &s->end, NULL, 0);
                if (p->verbose && s->n_tokens > 0) {
                    char a[64], e[64];
                    whisper_format_ts(s->start, a, sizeof a);
                    whisper_format_ts(s->end, e, sizeof e);
                    printf("[%s --> %s] %s\n", a, e, s->text);
                    fflush(stdout);
                }
                if (p->on_segment && p->on_segment(p->user, s)) {
                    st = steno_fail(STENO_E_ABORTED, "transcribe: aborted by the caller");
                    goto done;
                }
            }
        }
        if (p->on_progress) p->on_progress(p->user, (double)(c0 + nb) / n_chunks);
    }
    size_t len = 1;
    for (int i = 0; i < r->n_segments; i++) len += strlen(r->segments[i].text);
    r->text = malloc(len);
    if (!r->text) {
        st = steno_fail(STENO_E_NOMEM, "out of memory");
        goto done;
    }
    r->text[0] = 0;
    for (int i = 0, at = 0; i < r->n_segments; i++) {
        const size_t l = strlen(r->segments[i].text);
        memcpy(r->text + at, r->segments[i].text, l + 1);
        at += (int)l;
    }
done:
    run_free(&b);
    free(spans);
    free(speech);
    free(chunks);
    whisper_ts_map_free(&map);
    if (st != STENO_OK) {
        steno_result_free(r);
        return st;
    }
    *out = r;
    return STENO_OK;
}
