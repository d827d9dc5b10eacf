/* fast_verify.h — the fast path's pieces of speculative decoding (whisper/decoder/spec/spec.h drives them):
 *   - the target's verify pass: B drafted tokens at consecutive positions in one pass, each
 *     weight read once for all of them, every position's logits bit-identical to a single-token
 *     step of the same token on the same cache (the rows GEMV of
 *     whisper_fast_decoder_step_rows, one causal attention per position); a rejection rolls the
 *     self-attention cache back by resetting n_past (the columns past it are overwritten later);
 *   - the drafters' decoder: the first n_layers layers of a whisper_fast's weights (all of them
 *     for `quant` and `model`), the final norm and the output head, with its own self-attention
 *     cache and the cross-attention K/V of another decoder (the target's: no second projection
 *     per window). Drafts need not be exact: the prompt runs through the GEMM path and the head of
 *     float16 weights reads the int8 screening copy of the embedding (decoder/logit_screen.c).
 * Technique: speculative decoding (Leviathan et al. 2023, arXiv 2211.17192; greedy acceptance),
 * with self-speculation by early layers (Elhoushi et al. 2024, LayerSkip, arXiv 2404.16710) and by a
 * re-quantized copy of the model (QSpec, arXiv 2410.11305). */
#ifndef STENO_WHISPER_FAST_SPEC_H
#define STENO_WHISPER_FAST_SPEC_H

#include "whisper/fast.h"

/** Feeds tokens [B] (1 <= B, n_past + B <= n_text_ctx) at positions n_past .. n_past+B−1 of row 0
 *  and writes logits [B][n_vocab]: row b is bit-identical to whisper_fast_decoder_forward of
 *  tokens[b] alone after tokens[0..b−1] (no capture), the logit screen included when it is set
 *  (each position screened on its own). n_past becomes
 *  n_past + B. Bypasses a step hook. Allocates nothing. Not thread-safe per decoder.
 *  Errors: STENO_E_INVALID_ARG (B, position, token id). */
steno_status whisper_fast_decoder_verify(whisper_fast_decoder *d, const int *tokens, int B, float *logits);
/** Tokens in row 0's self-attention cache. */
int whisper_fast_decoder_n_past(const whisper_fast_decoder *d);
/** Keeps the first n_past (<= the current count) positions of the cache: the next forward writes
 *  position n_past. */
void whisper_fast_decoder_rollback(whisper_fast_decoder *d, int n_past);

typedef struct whisper_fast_draft whisper_fast_draft;

/** A drafter over f's weights (f must outlive it): its first n_layers decoder layers (1..all),
 *  on f's own weights (quant_type 0) or on a copy of them quantized at creation to quant_type
 *  (kernels/quant/wq.h: STENO_T_Q8_0, STENO_T_Q4_0, ...; f must hold float16 or float32 weights), the
 *  final norm and the tied output head. Errors: STENO_E_INVALID_ARG (n_layers, quant_type over
 *  quantized weights), STENO_E_NOMEM. */
steno_status whisper_fast_draft_create(whisper_fast *f, int n_layers, int quant_type, whisper_fast_draft **out);
void whisper_fast_draft_free(whisper_fast_draft *r);
/** The decoder whose window cross-attention K/V the drafter reads (same model dimensions and
 *  audio_ctx as the drafter's weights; it must outlive its use); empties the drafter's cache. */
void whisper_fast_draft_set_cross(whisper_fast_draft *r, whisper_fast_decoder *xsrc);
int whisper_fast_draft_n_past(const whisper_fast_draft *r);
void whisper_fast_draft_rollback(whisper_fast_draft *r, int n_past);
/** Copies positions r's n_past .. n−1 of d's self-attention cache (row 0; n <= d's n_past) into
 *  r's, for r's layers, and sets r's n_past to n: the drafter then needs no forward over tokens
 *  the target has already seen. For drafters over the target's own model (quant, layers): with
 *  the target's weights (layers) these are the very keys and values r would compute; with a
 *  quantized copy (quant) the target's are the better ones, and a draft need not be exact.
 *  Returns 0, or -1 (nothing changed) when r and d differ in model dimensions. */
int whisper_fast_draft_sync(whisper_fast_draft *r, const whisper_fast_decoder *d, int n);
/** Feeds tokens [T] at positions n_past.. and writes approximate logits [n_vocab] of the last one
 *  (text rows screened through int8 with float16 weights; exact elsewhere).
 *  Errors: STENO_E_INVALID_ARG (no cross source, position, token id). */
steno_status whisper_fast_draft_forward(whisper_fast_draft *r, const int *tokens, int T, float *logits);
/** Bytes of the drafter's own weights (the quantized copy; 0 when it reads f's). */
size_t whisper_fast_draft_bytes(const whisper_fast_draft *r);

#endif
