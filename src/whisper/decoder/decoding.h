/* decoding.h — decoding one 30-s window (openai-whisper whisper/decoding.py: DecodingTask with
 * GreedyDecoder; whisper/transcribe.py: decode_with_fallback).
 *
 * The prompt (previous text, hotwords, SOT sequence, <|notimestamps|>, a forced prefix) is laid
 * out by whisper_prompt_build (prompt.h). At most n_text_ctx/2 tokens are sampled, forced ones
 * included. Temperature 0 takes the argmax; above 0 it samples from softmax(logits / T). The
 * no-speech probability is softmax(raw logits at the SOT position)[<|nocaptions|>].
 * avg_logprob = sum of sampled log-probabilities (eot included) / (n + 1), n counting the forced
 * tokens too (whose log-probability is 0), as CTranslate2 scores a prefix. */
#ifndef STENO_WHISPER_DECODING_H
#define STENO_WHISPER_DECODING_H

#include <stdint.h>

#include "whisper/fast.h"
#include "whisper/faithful.h"
#include "whisper/decoder/logit_filters.h"

typedef struct whisper_window_result {
    int *tokens; /* sampled tokens before the first eot (text + timestamps); capacity n_text_ctx */
    int n_tokens;
    double temperature, avg_logprob, no_speech_prob, compression_ratio;
} whisper_window_result;

struct whisper_search;

typedef struct whisper_decode_ctx {
    const whisper_model *m;
    whisper_fast *fast;           /* NULL: the faithful path */
    whisper_decoder dec;          /* faithful path state */
    whisper_fast_decoder *fdec;   /* fast path state */
    whisper_filters filters;
    int *blank_ids, n_blank;
    int *suppress_ids, n_suppress;
    float *logits;   /* [rows][n_vocab] logits of the last position of each decoder row */
    float *logprobs; /* [n_vocab] */
    float *row;      /* [n_vocab] */
    int *seq;        /* [n_text_ctx] the full token sequence of the window */
    uint64_t rng[4];  /* reseeded for each decoding attempt */
    int *prefix, n_prefix;     /* tokenized p->prefix (NULL: none) */
    int *hotwords, n_hotwords; /* tokenized p->hotwords (NULL: none) */
    int lang_token, task_token; /* multilingual SOT sequence: <|en|> and p->task's token unless
                                   the caller sets the language (transcribe.c) */
    int rows;         /* decoder rows: max(1, beam_size, best_of) */
    struct whisper_search *search; /* beam search / best-of state (beam.h); NULL when rows == 1 */
    struct whisper_spec *spec;     /* speculative decoding of greedy attempts (spec.h), owned; NULL: off */
} whisper_decode_ctx;

/** Prepares a decoding context on the faithful path (fast == NULL) or the fast path.
 *  p->suppress_tokens: NULL → {-1}; each -1 → config.json suppress_ids; the special tokens
 *  transcribe, translate, sot, sot_prev, sot_lm, no_speech are always added; an id outside
 *  -1..n_vocab−1 is STENO_E_INVALID_ARG. p->prefix and p->hotwords are tokenized here. */
steno_status whisper_decode_ctx_init(whisper_decode_ctx *c, const whisper_model *m, whisper_fast *fast,
                                     const steno_transcribe_params *p);
void whisper_decode_ctx_free(whisper_decode_ctx *c);

/** Decodes the window whose encoder output is xa, conditioned on prompt (previous text tokens,
 *  whisper_prompt_previous) and p's hotwords; the window at seek 0 also gets p's prefix
 *  (faster-whisper: prefix only where seek == 0), whose forced tokens begin res->tokens;
 *  retries along the temperature fallback ladder of p. res->tokens must hold n_text_ctx ints. window
 *  (the seek, in mel frames) and the attempt's index seed the sampler, so each attempt's draws
 *  depend only on (p->seed, window, attempt), not on how many draws came before. */
steno_status whisper_decode_with_fallback(whisper_decode_ctx *c, const float *xa, const int *prompt,
                                          int n_prompt, const steno_transcribe_params *p, int window,
                                          whisper_window_result *res);

/* Shared by the greedy loop (decoding.c) and the beam / best-of searches (beam.c). */

/** What whisper_decode_prefill laid out in c->seq. */
typedef struct whisper_prefill {
    int n;              /* tokens in c->seq, all fed to the decoder */
    int sample_begin;   /* index in c->seq where the window's output starts (the forced prefix) */
    int n_forced;       /* forced prefix tokens at sample_begin (0 without a prefix); the filters
                           see only the tokens sampled after them */
    double no_speech_prob; /* softmax(logits at <|startoftranscript|>)[<|nospeech|>] */
} whisper_prefill;

/** Writes the prompt, the SOT sequence and (use_prefix) the forced prefix into c->seq
 *  (whisper_prompt_build), clears the decoder and feeds the sequence to row 0: c->logits then
 *  holds the logits for the first sampled token; sets c->filters.after_prefix. */
steno_status whisper_decode_prefill(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                    whisper_prefill *out);

/** Draws a token from softmax(logits / temperature) with c->rng (argmax when temperature <= 0);
 *  probs: [n] scratch. */
int whisper_sample_token(whisper_decode_ctx *c, const float *logits, int n, double temperature, float *probs);

/** Fills res from a finished window: tokens [n] (before eot), avg_logprob = sum_logprob / (n + 1),
 *  the compression ratio of the decoded text. */
steno_status whisper_window_finish(whisper_decode_ctx *c, const int *tokens, int n, double sum_logprob,
                                   double temperature, whisper_window_result *res);

/** zlib compression ratio of text (len(bytes) / len(zlib.compress(bytes))), as
 *  openai-whisper's get_compression_ratio. Empty text gives 0. */
double whisper_compression_ratio(const char *text);

#endif
