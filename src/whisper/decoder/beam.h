/* beam.h — beam search at temperature 0 and best-of-N sampling at temperature > 0 over one
 * 30-s window, on either path (the decoder rows of fast.h / faithful.h).
 *
 * Sources followed: openai-whisper whisper/decoding.py (BeamSearchDecoder,
 * MaximumLikelihoodRanker, DecodingTask), whisper/transcribe.py (decode_with_fallback: beam at
 * T = 0, best_of at T > 0), and — where the two differ — CTranslate2 src/decoding.cc (BeamSearch,
 * GreedySearch with num_hypotheses), which faster-whisper 1.2.1 runs and which the beam gate is
 * judged against. docs/WHISPER.md "Beam search" lists the differences. */
#ifndef STENO_WHISPER_BEAM_H
#define STENO_WHISPER_BEAM_H

#include "whisper/decoder/decoding.h"

typedef struct whisper_search whisper_search;

/** Checks beam_size, best_of (0..64), patience (>= 0, and round(beam_size·patience) >= 1 for a
 *  beam), length_penalty (finite). Errors: STENO_E_INVALID_ARG naming the field. */
steno_status whisper_search_check(const steno_transcribe_params *p);

/** Decoder rows the parameters need: max(1, beam_size, best_of). */
int whisper_search_rows(const steno_transcribe_params *p);

/** Preallocates every buffer the searches of p use (none is allocated per step). */
steno_status whisper_search_create(const whisper_model *m, const steno_transcribe_params *p, whisper_search **out);
void whisper_search_free(whisper_search *s);

/** Whether the attempt at this temperature is a beam search (T = 0, beam_size >= 2) or a best-of
 *  (T > 0, best_of >= 2); otherwise the greedy single-sequence loop runs. */
int whisper_search_applies(const steno_transcribe_params *p, double temperature);

/** Runs the attempt (c->search must exist: c->rows > 1) and fills res like the greedy loop:
 *  the best hypothesis's tokens before eot, its avg_logprob = sum_logprob / (length + 1), the
 *  no-speech probability of the SOT position, the compression ratio. use_prefix: the window
 *  starts with p's forced prefix (every row carries it; CTranslate2's prefix in beam search). */
steno_status whisper_search_decode(whisper_decode_ctx *c, const int *prompt, int n_prompt, int use_prefix,
                                   double temperature, const steno_transcribe_params *p,
                                   whisper_window_result *res);

#endif
