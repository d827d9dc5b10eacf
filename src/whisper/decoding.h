/* decoding.h — decoding one 30-s window (openai-whisper whisper/decoding.py: DecodingTask with
 * GreedyDecoder; whisper/transcribe.py: decode_with_fallback).
 *
 * The SOT sequence is [<|startofprev|>, prompt[-(n_text_ctx/2 − 1):]...]? + [<|startoftranscript|>]
 * (+ language and task tokens for multilingual models) (+ <|notimestamps|>). At most
 * n_text_ctx/2 tokens are sampled. Temperature 0 takes the argmax; above 0 it samples from
 * softmax(logits / T). The no-speech probability is softmax(raw logits at the SOT position)
 * [<|nocaptions|>]. avg_logprob = sum of sampled log-probabilities (eot included) / (n + 1). */
#ifndef STENO_WHISPER_DECODING_H
#define STENO_WHISPER_DECODING_H

#include <stdint.h>

#include "whisper/fast.h"
#include "whisper/forward.h"
#include "whisper/logit_filters.h"

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
    int rows;         /* decoder rows: max(1, beam_size, best_of) */
    struct whisper_search *search; /* beam search / best-of state (beam.h); NULL when rows == 1 */
} whisper_decode_ctx;

/** Prepares a decoding context on the faithful path (fast == NULL) or the fast path. suppress (NULL → the "-1" set from config.json suppress_ids; the
 *  special tokens transcribe, translate, sot, sot_prev, sot_lm, no_speech are always added). */
steno_status whisper_decode_ctx_init(whisper_decode_ctx *c, const whisper_model *m, whisper_fast *fast,
                                     const steno_transcribe_params *p);
void whisper_decode_ctx_free(whisper_decode_ctx *c);

/** Decodes the window whose encoder output is xa, conditioned on prompt (previous text tokens),
 *  with the temperature fallback ladder of p. res->tokens must hold n_text_ctx ints. window
 *  (the seek, in mel frames) and the attempt's index seed the sampler, so each attempt's draws
 *  depend only on (p->seed, window, attempt), not on how many draws came before. */
steno_status whisper_decode_with_fallback(whisper_decode_ctx *c, const float *xa, const int *prompt,
                                          int n_prompt, const steno_transcribe_params *p, int window,
                                          whisper_window_result *res);

/* Shared by the greedy loop (decoding.c) and the beam / best-of searches (beam.c). */

/** Writes the SOT sequence for prompt into c->seq, clears the decoder and feeds the sequence to
 *  row 0: c->logits then holds the logits for the first sampled token. *sample_begin: the
 *  sequence's length; *no_speech_prob: softmax(logits at <|startoftranscript|>)[<|nospeech|>]. */
steno_status whisper_decode_prefill(whisper_decode_ctx *c, const int *prompt, int n_prompt, int *sample_begin,
                                    double *no_speech_prob);

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
