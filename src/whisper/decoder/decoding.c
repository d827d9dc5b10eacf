#include "whisper/decoder/decoding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "core/error.h"
#include "text/utf8.h"
#include "whisper/decoder/beam.h"
#include "whisper/decoder/prompt.h"
#include "whisper/decoder/spec/spec.h"

/* numpy.arange(0.0, 1.0 + 1e-6, 0.2): start + i·step in double, so the third is 0.6000000000000001,
 * exactly as openai-whisper reports it */
static const double k_default_temperatures[] = {0.0, 0.2, 2 * 0.2, 3 * 0.2, 4 * 0.2, 5 * 0.2};

/* xoshiro256** (Blackman & Vigna), seeded through splitmix64: reproducible sampling. */
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t rng_next(uint64_t s[4]) {
    const uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}
static void rng_seed(uint64_t s[4], uint64_t seed) {
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        s[i] = z ^ (z >> 31);
    }
}

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

steno_status whisper_decode_ctx_init(whisper_decode_ctx *c, const whisper_model *m, whisper_fast *fast,
                                     const steno_transcribe_params *p) {
    memset(c, 0, sizeof *c);
    c->m = m;
    c->fast = fast;
    steno_status st = whisper_search_check(p);
    if (st != STENO_OK) return st;
    c->rows = whisper_search_rows(p);
    st = fast ? whisper_fast_decoder_create_rows(fast, c->rows, &c->fdec) : whisper_decoder_init_rows(&c->dec, m, c->rows);
    if (st != STENO_OK) return st;
    if (c->rows > 1 && (st = whisper_search_create(m, p, &c->search)) != STENO_OK) {
        whisper_decode_ctx_free(c);
        return st;
    }
    const whisper_special *sp = &m->special;
    /* suppress_tokens: -1 stands for the non-speech set (config.json suppress_ids, which
     * CTranslate2 uses for -1 too); NULL is {-1}. */
    static const int minus_one = -1;
    const int *list = p->suppress_tokens ? p->suppress_tokens : &minus_one;
    const int n_list = p->suppress_tokens ? p->n_suppress_tokens : 1;
    c->suppress_ids = malloc(sizeof(int) * (size_t)(n_list + m->config.n_suppress_ids + 6));
    int *blank = NULL, n_blank = 0;
    st = steno_tokenizer_encode(m->tokenizer, " ", &blank, &n_blank);
    c->blank_ids = malloc(sizeof(int) * (size_t)(n_blank + 1));
    c->logits = malloc(sizeof(float) * (size_t)m->n_vocab * (size_t)c->rows);
    c->logprobs = malloc(sizeof(float) * (size_t)m->n_vocab);
    c->row = malloc(sizeof(float) * (size_t)m->n_vocab);
    c->seq = malloc(sizeof(int) * (size_t)(m->n_text_ctx + 1));
    if (st != STENO_OK || !c->suppress_ids || !c->blank_ids || !c->logits || !c->logprobs || !c->row ||
        !c->seq) {
        free(blank);
        whisper_decode_ctx_free(c);
        return st != STENO_OK ? st : steno_fail(STENO_E_NOMEM, "decoder: out of memory");
    }
    int expanded = 0;
    for (int i = 0; i < n_list; i++) {
        if (list[i] == -1) {
            if (!expanded)
                for (int k = 0; k < m->config.n_suppress_ids; k++)
                    c->suppress_ids[c->n_suppress++] = m->config.suppress_ids[k];
            expanded = 1;
            continue;
        }
        if (list[i] < 0 || list[i] >= m->n_vocab) {
            free(blank);
            whisper_decode_ctx_free(c);
            return steno_fail(STENO_E_INVALID_ARG, "suppress_tokens: token id %d out of range (-1 or 0..%d)",
                              list[i], m->n_vocab - 1);
        }
        c->suppress_ids[c->n_suppress++] = list[i];
    }
    const int always[] = {sp->transcribe, sp->translate, sp->sot, sp->sot_prev, sp->sot_lm, sp->no_speech};
    for (int i = 0; i < 6; i++) c->suppress_ids[c->n_suppress++] = always[i];
    qsort(c->suppress_ids, (size_t)c->n_suppress, sizeof(int), cmp_int);
    int u = 0;
    for (int i = 0; i < c->n_suppress; i++)
        if (u == 0 || c->suppress_ids[u - 1] != c->suppress_ids[i]) c->suppress_ids[u++] = c->suppress_ids[i];
    c->n_suppress = u;
    /* faster-whisper's prefix and hotwords: tokenized once, cut to n_text_ctx/2 − 1 tokens */
    if ((p->prefix && *p->prefix &&
         (st = whisper_prompt_encode(m->tokenizer, p->prefix, m->n_text_ctx, &c->prefix, &c->n_prefix)) != STENO_OK) ||
        (p->hotwords && *p->hotwords &&
         (st = whisper_prompt_encode(m->tokenizer, p->hotwords, m->n_text_ctx, &c->hotwords, &c->n_hotwords)) !=
             STENO_OK)) {
        free(blank);
        whisper_decode_ctx_free(c);
        return st;
    }
    memcpy(c->blank_ids, blank, sizeof(int) * (size_t)n_blank);
    free(blank);
    c->blank_ids[n_blank] = sp->eot;
    c->n_blank = n_blank + 1;

    c->lang_token = sp->lang_first;
    c->task_token = p->task == STENO_TASK_TRANSLATE ? sp->translate : sp->transcribe;

    whisper_filters *f = &c->filters;
    f->n_vocab = m->n_vocab;
    f->eot = sp->eot;
    f->no_timestamps = sp->no_timestamps;
    f->timestamp_begin = sp->timestamp_begin;
    f->suppress_blank = p->suppress_blank;
    f->blank_ids = c->blank_ids;
    f->n_blank_ids = c->n_blank;
    f->suppress_ids = c->suppress_ids;
    f->n_suppress_ids = c->n_suppress;
    f->timestamps = !p->without_timestamps;
    /* time precision = 30 s / n_audio_ctx = 0.02 s per timestamp step */
    const double precision = 30.0 / m->n_audio_ctx;
    f->max_initial_timestamp_index =
        p->max_initial_timestamp >= 0 ? (int)lround(p->max_initial_timestamp / precision) : -1;
    if ((st = whisper_filters_build(f)) != STENO_OK) {
        whisper_decode_ctx_free(c);
        return st;
    }
    return STENO_OK;
}

void whisper_decode_ctx_free(whisper_decode_ctx *c) {
    whisper_search_free(c->search);
    whisper_spec_free(c->spec);
    if (c->fast) whisper_fast_decoder_free(c->fdec);
    else whisper_decoder_free(&c->dec);
    whisper_filters_free(&c->filters);
    free(c->suppress_ids);
    free(c->blank_ids);
    free(c->logits);
    free(c->logprobs);
    free(c->row);
    free(c->seq);
    free(c->prefix);
    free(c->hotwords);
    memset(c, 0, sizeof *c);
}

double whisper_compression_ratio(const char *text) {
    const size_t n = strlen(text);
    uLongf cap = compressBound((uLong)n);
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf) return 0.0;
    double r = 0.0;
    if (compress2(buf, &cap, (const Bytef *)text, (uLong)n, Z_DEFAULT_COMPRESSION) == Z_OK && cap)
        r = (double)n / (double)cap;
    free(buf);
    return r;
}

int whisper_sample_token(whisper_decode_ctx *c, const float *logits, int n, double temperature, float *probs) {
    uint64_t *rng = c->rng;
    if (temperature <= 0.0) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (logits[i] > logits[best]) best = i; /* first maximum, like torch.argmax */
        return best;
    }
    float mx = -INFINITY;
    for (int i = 0; i < n; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        probs[i] = logits[i] == -INFINITY ? 0.0f : (float)exp(((double)logits[i] - mx) / temperature);
        sum += probs[i];
    }
    const double u = (double)(rng_next(rng) >> 11) * 0x1.0p-53 * sum;
    double acc = 0.0;
    int last = 0;
    for (int i = 0; i < n; i++) {
        if (probs[i] <= 0.0f) continue;
        acc += probs[i];
        last = i;
        if (u < acc) return i;
    }
    return last;
}

/* The two paths behind one decoding loop. */
static steno_status step(whisper_decode_ctx *c, const int *tokens, int T, float *logits) {
    return c->fast ? whisper_fast_decoder_forward(c->fdec, tokens, T, logits)
                   : whisper_decoder_forward(&c->dec, tokens, T, logits, 0);
}
static void logits_at(whisper_decode_ctx *c, int t, float *logits) {
    if (c->fast) whisper_fast_decoder_logits_at(c->fdec, t, logits);
    else whisper_decoder_logits_at(&c->dec, t, logits);
}

steno_status whisper_decode_prefill(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                    whisper_prefill *out) {
    const whisper_model *m = c->m;
    const whisper_special *sp = &m->special;
    const int N = m->n_text_ctx, V = m->n_vocab;
    int sot_seq[3], n_sot = 0;
    sot_seq[n_sot++] = sp->sot;
    if (m->multilingual) {
        sot_seq[n_sot++] = c->lang_token;
        sot_seq[n_sot++] = c->task_token;
    }
    const whisper_prompt_in pin = {
        .n_text_ctx = N, .sot_prev = sp->sot_prev, .no_timestamps = sp->no_timestamps,
        .timestamp_begin = sp->timestamp_begin, .sot_seq = sot_seq, .n_sot_seq = n_sot,
        .hotwords = c->hotwords, .n_hotwords = c->n_hotwords, .previous = prompt, .n_previous = n_prompt,
        .prefix = use_prefix ? c->prefix : NULL, .n_prefix = use_prefix ? c->n_prefix : 0,
        .without_timestamps = !c->filters.timestamps};
    whisper_prompt_layout lay;
    steno_status st = whisper_prompt_build(&pin, c->seq, N + 1, &lay);
    if (st != STENO_OK) return st;
    out->n = lay.n;
    out->sample_begin = lay.sample_begin;
    out->n_forced = lay.n_forced;
    c->filters.after_prefix = lay.n_forced > 0;
    if (c->fast) whisper_fast_decoder_set_screen(c->fdec, NULL); /* decode_once may set it after */
    if (c->fast) whisper_fast_decoder_reset(c->fdec);
    else whisper_decoder_reset(&c->dec);
    if ((st = step(c, c->seq, lay.n, c->logits)) != STENO_OK) return st;
    logits_at(c, lay.sot_index, c->row);
    whisper_log_softmax(c->row, V, c->logprobs);
    out->no_speech_prob = exp((double)c->logprobs[sp->no_speech]);
    return STENO_OK;
}

steno_status whisper_window_finish(whisper_decode_ctx *c, const int *tokens, int n, double sum_logprob,
                                   double temperature, whisper_window_result *res) {
    const whisper_model *m = c->m;
    if (res->tokens != tokens) memmove(res->tokens, tokens, sizeof(int) * (size_t)n);
    res->n_tokens = n;
    res->temperature = temperature;
    res->avg_logprob = sum_logprob / (n + 1);
    char *raw = steno_tokenizer_decode(m->tokenizer, res->tokens, n, 1);
    char *text = raw ? steno_utf8_sanitize(raw, strlen(raw)) : NULL;
    free(raw);
    if (!text) return steno_fail(STENO_E_NOMEM, "decoder: out of memory");
    size_t len;
    const char *s = steno_strip(text, &len);
    memmove(text, s, len);
    text[len] = '\0';
    res->compression_ratio = whisper_compression_ratio(text);
    free(text);
    return STENO_OK;
}

/* One DecodingTask.run at one temperature with one sequence (GreedyDecoder). Forced prefix
 * tokens are part of the output and count toward the n_text_ctx/2 limit (CTranslate2 returns
 * them with the result); the filters see only the tokens sampled after them. */
static steno_status decode_once(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                double temperature, whisper_window_result *res) {
    const whisper_model *m = c->m;
    const int N = m->n_text_ctx, V = m->n_vocab, eot = m->special.eot;
    whisper_prefill pf;
    steno_status st = whisper_decode_prefill(c, prompt, n_prompt, use_prefix, &pf);
    if (st != STENO_OK) return st;
    res->no_speech_prob = pf.no_speech_prob;
    /* greedy at temperature 0 needs the exact argmax and the probability mass: the fast path may
     * screen the logits (fast.h whisper_fast_decoder_set_screen); the sampler reads them all */
    if (c->fast) whisper_fast_decoder_set_screen(c->fdec, temperature == 0.0 ? c->filters.mask_blank : NULL);
    const int sample_len = N / 2, filter_begin = pf.sample_begin + pf.n_forced;
    int n = pf.n;
    double sum_logprob = 0.0;
    /* speculative decoding (spec.c) takes the greedy attempts: the same tokens, fewer target passes */
    if (c->spec && temperature == 0.0) st = whisper_spec_sample(c, &pf, &n, &sum_logprob);
    for (int i = pf.n_forced; !(c->spec && temperature == 0.0) && i < sample_len; i++) {
        if (i > pf.n_forced && (st = step(c, c->seq + n - 1, 1, c->logits)) != STENO_OK) {
            if (c->fast) whisper_fast_decoder_set_screen(c->fdec, NULL);
            return st;
        }
        const whisper_filtered fr = whisper_apply_filters(&c->filters, c->seq + filter_begin, n - filter_begin,
                                                          c->logits);
        const int next = temperature > 0.0 ? whisper_sample_token(c, c->logits, V, temperature, c->row) : fr.argmax;
        sum_logprob += (double)c->logits[next] - fr.lse;
        c->seq[n++] = next;
        if (next == eot || n > N) break;
    }
    if (c->fast) whisper_fast_decoder_set_screen(c->fdec, NULL);
    if (st != STENO_OK) return st;
    int n_text = 0;
    while (pf.sample_begin + n_text < n && c->seq[pf.sample_begin + n_text] != eot) n_text++;
    return whisper_window_finish(c, c->seq + pf.sample_begin, n_text, sum_logprob, temperature, res);
}

steno_status whisper_decode_with_fallback(whisper_decode_ctx *c, const float *xa, const int *prompt,
                                          int n_prompt, const steno_transcribe_params *p, int window,
                                          whisper_window_result *res) {
    const double *temps = p->temperatures ? p->temperatures : k_default_temperatures;
    const int n_temps = p->temperatures ? p->n_temperatures : 6;
    if (c->fast) whisper_fast_decoder_set_audio(c->fdec, xa);
    else whisper_decoder_set_audio(&c->dec, xa);
    struct timespec t0, t1, c0, c1;
    if (p->decode_stats) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    }
    for (int ti = 0; ti < n_temps; ti++) {
        rng_seed(c->rng, p->seed ^ ((uint64_t)(uint32_t)window << 20) ^ (uint64_t)ti);
        /* the prefix applies to the window at seek 0 only (faster-whisper) */
        steno_status st = whisper_search_applies(p, temps[ti])
                              ? whisper_search_decode(c, prompt, n_prompt, window == 0, temps[ti], p, res)
                              : decode_once(c, prompt, n_prompt, window == 0, temps[ti], res);
        if (st != STENO_OK) return st;
        if (p->decode_stats) p->decode_stats->tokens += res->n_tokens + 1; /* eot included */
        int needs_fallback = 0;
        if (p->compression_ratio_threshold > 0 && res->compression_ratio > p->compression_ratio_threshold)
            needs_fallback = 1; /* too repetitive */
        const int use_logprob = p->logprob_threshold > -1e30;
        if (use_logprob && res->avg_logprob < p->logprob_threshold) needs_fallback = 1;
        if (p->no_speech_threshold >= 0 && res->no_speech_prob > p->no_speech_threshold && use_logprob &&
            res->avg_logprob < p->logprob_threshold)
            needs_fallback = 0; /* silence: the caller skips the window */
        if (!needs_fallback) break;
    }
    whisper_spec_window_done(c->spec, res->tokens, res->n_tokens);
    if (p->decode_stats) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        p->decode_stats->decode_seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        p->decode_stats->decode_cpu_seconds +=
            (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    }
    return STENO_OK;
}
