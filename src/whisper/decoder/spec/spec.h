/* spec.h — speculative decoding of the greedy Whisper decoder (docs/WHISPER.md "Speculative
 * decoding"; Leviathan et al. 2023, arXiv 2211.17192, greedy acceptance; prompt lookup as
 * llama.cpp's lookup / transformers' prompt_lookup_num_tokens).
 *
 * Each round a drafter proposes up to k tokens after the window's sequence; the target feeds the
 * last sampled token and the k drafts in one verify pass (fast_verify.h), whose logits at each
 * position are bit-identical to a plain single-token step's; the logit filters and timestamp
 * rules (logit_filters.h) are applied to each position's logits with that position's own prefix,
 * exactly as the plain loop does, and the drafts are accepted while they equal the filtered
 * argmax; the first mismatch is replaced by the target's token and the target's cache rolls back
 * to the accepted length. The sampled tokens are therefore those of plain greedy decoding.
 * With float16 weights the plain step screens the text logits through int8 (fast.h
 * whisper_fast_decoder_set_screen); the verify pass screens each position the same way, so the
 * logits, the log-probabilities, avg_logprob and hence every fallback decision are plain
 * decoding's bit for bit. The adaptive draft length (num_draft_tokens 0) also watches the clock:
 * while drafted rounds emit tokens more slowly than plain steps it takes plain steps (timing picks
 * only the draft length, never a token).
 *
 * Only greedy attempts at temperature 0 speculate: a sampled fallback attempt would need
 * rejection sampling, whose draws differ from the plain sampler's for the same seed (the text
 * would follow the same distribution but not be the same text), and beam search already reads
 * each weight once for all its hypotheses per step. */
#ifndef STENO_WHISPER_SPEC_H
#define STENO_WHISPER_SPEC_H

#include "whisper/decoder/decoding.h"

typedef struct whisper_spec whisper_spec;

/** A speculative decoder for the decoding context c (fast path, one row: c->fdec), with the
 *  drafter of p->draft_kind: its weights (re-quantized or the first layers of c->fast's, or
 *  draft_m's through draft_fast, that model's fast path state). The drafter reads c->fdec's
 *  cross-attention K/V (quant, layers) or its own (model: whisper_spec_set_window encodes each
 *  window). Errors: STENO_E_INVALID_ARG (a parameter out of range, another vocabulary,
 *  quantized target weights for quant, the faithful path), STENO_E_NOMEM. */
steno_status whisper_spec_create(whisper_decode_ctx *c, const steno_transcribe_params *p, const whisper_model *draft_m,
                                 whisper_fast *draft_fast, whisper_spec **out);
void whisper_spec_free(whisper_spec *s);

/** The window's mel [n_mels][3000] for a drafter with its own encoder (model); a no-op for the
 *  others. Call after the target's encoder, before whisper_decode_with_fallback. */
steno_status whisper_spec_set_window(whisper_spec *s, const float *mel);

/** The greedy sampling loop of one attempt after whisper_decode_prefill (pf): appends to c->seq
 *  from *n (pf->n) on, adds the log-probabilities to *sum_logprob, as decoding.c's plain loop at
 *  temperature 0 does, token for token. */
steno_status whisper_spec_sample(whisper_decode_ctx *c, const whisper_prefill *pf, int *n, double *sum_logprob);

/** The final tokens of a window (the ngram drafter's history of previous windows). */
void whisper_spec_window_done(whisper_spec *s, const int *tokens, int n);

/** Counts of the rounds so far (target_calls, rounds, drafted, accepted) added into st. */
void whisper_spec_add_stats(const whisper_spec *s, steno_decode_stats *st);

#endif
