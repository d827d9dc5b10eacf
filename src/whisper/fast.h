/* fast.h — the fast Whisper path on CPU, gated token-exact against the faithful path
 * (faithful.h) behind the same decoding loop. Techniques (seed: mlx-bun
 * src/models/whisper/fast.ts), adapted to CPU:
 *   S1  fused attention with a streaming softmax (kernels/gemv/vec.h vec_attention) for encoder
 *       self-attention, decoder self-attention and cross-attention: no T×T score matrix, no mask
 *       tensor; causality comes from loop bounds;
 *   -   Q/K/V projected by one GEMM per layer (CTranslate2 already stores them fused);
 *   S3  cross-attention K/V of all decoder layers from one GEMM pair per 30-s window (K weights
 *       of every layer stacked, V likewise), stored head-split and contiguous; the self-attention
 *       KV cache is preallocated to n_text_ctx, head-split;
 *   S2  the single-token decoder step is planned once (every buffer sized at creation) and
 *       replayed: no heap allocation per step, logits only for the last position;
 *   -   decoder weights held in float16 (or float32) and read by AVX2 GEMV kernels with
 *       float32 accumulation (runtime dispatch, scalar fallback), so a step reads half the bytes;
 *       with float16 weights the step also reads the cross-attention K/V as float16, and greedy
 *       steps screen the logits through an int8 copy of the embedding with the chosen token
 *       exact (whisper_fast_decoder_set_screen);
 *   -   one thread pool; every output element is reduced by one task in a fixed order, so tokens
 *       are identical for any thread count;
 *   -   audio_ctx < 1500 (Lab): the encoder sees only the first 2·audio_ctx mel frames;
 *   -   quantized weights (Lab, model->wq_type: ggml q8_0/q5_0/q5_1/q4_0/q4_1 or MLX affine):
 *       encoder and decoder linears and the embedding read in place by linear_quant.c (GEMV on
 *       q8-quantized activations, GEMM on per-task dequantized tiles of 64 rows).
 * The S4 logit filters live in logit_filters.c and are shared by both paths. */
#ifndef STENO_WHISPER_FAST_H
#define STENO_WHISPER_FAST_H

#include "core/threadpool.h"
#include "kernels/gemv/vec.h"
#include "whisper/decoder/attention_capture.h"
#include "whisper/model/model.h"

typedef struct whisper_fast whisper_fast;

/** Prepares the fast path's weights from m (m must outlive it). dt: VEC_F16 or VEC_F32 for the
 *  decoder weights; ignored when m->wq_type (the model's quantized matrices are used). audio_ctx: 0 or n_audio_ctx for the full window, else fewer encoder
 *  positions (Lab). Errors: STENO_E_NOMEM, STENO_E_INVALID_ARG (audio_ctx out of range). */
steno_status whisper_fast_create(const whisper_model *m, vec_dtype dt, int audio_ctx, steno_pool *pool,
                                 whisper_fast **out);
void whisper_fast_free(whisper_fast *f);

/** A second fast-path state over src's weights (read-only, shared, not copied) with its own
 *  encoder and GEMM scratch and its own pool: one per concurrent request (steno_whisper_state).
 *  src must outlive it; any number of shares may run at once, each on one thread at a time.
 *  Errors: STENO_E_NOMEM. */
steno_status whisper_fast_share(const whisper_fast *src, steno_pool *pool, whisper_fast **out);

/** Encoder positions used (audio_ctx). */
int whisper_fast_audio_ctx(const whisper_fast *f);

/** Threads of f's pool. */
int whisper_fast_threads(const whisper_fast *f);

/** mel [n_mels][3000] → xa [audio_ctx][D]. */
steno_status whisper_fast_encode(whisper_fast *f, const float *mel, float *xa);

typedef struct whisper_fast_decoder whisper_fast_decoder;

steno_status whisper_fast_decoder_create(whisper_fast *f, whisper_fast_decoder **out);
void whisper_fast_decoder_free(whisper_fast_decoder *d);
/** Cross-attention K/V of every layer from xa [audio_ctx][D]; clears the self-attention cache. */
void whisper_fast_decoder_set_audio(whisper_fast_decoder *d, const float *xa);
void whisper_fast_decoder_reset(whisper_fast_decoder *d);
/** As whisper_decoder_forward with all_positions = 0: logits [n_vocab] of the last position. */
steno_status whisper_fast_decoder_forward(whisper_fast_decoder *d, const int *tokens, int T, float *logits);
/** Records cross-attention scores in the next forwards (NULL stops; word timestamps). */
void whisper_fast_decoder_set_capture(whisper_fast_decoder *d, const whisper_xattn_capture *c);

/** Logit screen of the single-token forward (f16 weights; a no-op with f32 weights, the
 *  token-exact gate). allow: [n_vocab] row of the caller's static filter mask (0: the token may
 *  be chosen, −inf: never; the special and timestamp tokens from eot on are always computed
 *  exactly), or NULL: every logit exact (the default). With a mask, text logits are first bounded
 *  from an int8 copy of the embedding, and those that could come within 4 nats of the best
 *  allowed one are recomputed exactly from the float16 weights (decoder/logit_screen.c): the argmax
 *  under that mask plus the timestamp rules, and the timestamp-probability rule, are exactly
 *  those of the unscreened logits; the other rows keep values within a proven bound of theirs.
 *  Precondition of that guarantee: a text row that allow permits is never removed by the
 *  caller's filter unless the filter removes every text row (true of mask_blank, the static
 *  suppress set plus the blank ids, under openai's timestamp rules). The log-sum-exp, hence the
 *  log-probabilities and avg_logprob, is approximate (within 2.4e-4 over a 10-minute file): a
 *  window right at the logprob threshold may fall back where unscreened logits would not.
 *  Meant for greedy decoding at temperature 0 (the sampler and beam search read exact logits).
 *  allow must outlive its use. */
void whisper_fast_decoder_set_screen(whisper_fast_decoder *d, const float *allow);

/** Rows computed exactly at the last screened step (the screen's work; tests, benchmarks). */
int whisper_fast_decoder_screened_rows(const whisper_fast_decoder *d);
/** Logits of position t of the last forward call. */
void whisper_fast_decoder_logits_at(whisper_fast_decoder *d, int t, float *logits);

/* Several rows (beam hypotheses, best-of samples) over one window. Row 0 is the row that
 * whisper_fast_decoder_forward feeds; each row owns a self-attention cache, while the
 * cross-attention K/V of the window are computed once and shared by every row (their queries
 * attend to the one encoder output by broadcasting). All rows are at the same position. */

/** As whisper_fast_decoder_create with `rows` rows (1..n_text_ctx); the single-row API is rows = 1.
 *  Errors: STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status whisper_fast_decoder_create_rows(whisper_fast *f, int rows, whisper_fast_decoder **out);
int whisper_fast_decoder_rows(const whisper_fast_decoder *d);

/** One token per row for rows 0..B-1 (tokens [B]) at position n_past (>= 1: after a prefill of
 *  row 0 and a reorder), then n_past + 1. logits: [B][n_vocab]. Each f16 weight matrix is read
 *  once for all rows; each row's logits are bit-identical to whisper_fast_decoder_forward of the
 *  same token on a single row holding the same cache, with the logit screen off (the row step
 *  never screens). Allocates nothing.
 *  Errors: STENO_E_INVALID_ARG (B outside 1..rows, position past n_text_ctx, token id). */
steno_status whisper_fast_decoder_step_rows(whisper_fast_decoder *d, const int *tokens, int B, float *logits);

/** Gather: rows 0..B-1 continue from the caches of rows src[0..B-1] (positions 0..n_past-1);
 *  rows B.. are spare. Copies only duplicated sources (whisper/decoder/kv_rows.h). Allocates nothing.
 *  Errors: STENO_E_INVALID_ARG (B or a source out of range). */
steno_status whisper_fast_decoder_reorder(whisper_fast_decoder *d, const int *src, int B);


/* Rows of several decoders in one step (batched long-form transcription, whisper/longform/window_group.h; the
 * server's cross-request batching can feed the same group). Each decoder keeps its own window's
 * cross-attention K/V and its own self-attention caches and position; the weight GEMVs of the
 * step read every weight once for all rows. */

/** A single-token step (whisper_fast_decoder_forward with T = 1 and no capture, or
 *  whisper_fast_decoder_step_rows with B rows) handed to whoever batches it: the hook must fill
 *  logits [B][n_vocab] as that call would (whisper_fast_group_step) and return its status. */
typedef steno_status (*whisper_fast_step_hook)(void *ctx, whisper_fast_decoder *d, const int *tokens, int B,
                                               float *logits);
/** Routes d's single-token steps to hook (NULL: d computes them itself, the default). With a
 *  hook the logit screen is not used (every logit exact). */
void whisper_fast_decoder_set_step_hook(whisper_fast_decoder *d, whisper_fast_step_hook hook, void *ctx);
/** The hook every decoder created from f from now on starts with (whisper_fast_decoder_create*;
 *  NULL: none, the default): how a request's decoding loops, created inside the transcription
 *  call, join a cross-request batch (step_batcher.h). Decoders already created keep theirs. Not
 *  thread-safe against decoder creation on f. */
void whisper_fast_set_step_hook(whisper_fast *f, whisper_fast_step_hook hook, void *ctx);

/** An encoder pass (whisper_fast_encode of f) handed to whoever runs it: the hook must fill xa
 *  exactly as whisper_fast_encode on the same weights would (any pool: the result does not depend
 *  on the thread count) and return its status. */
typedef steno_status (*whisper_fast_encode_hook)(void *ctx, const float *mel, float *xa);
/** Routes f's whisper_fast_encode calls to hook (NULL: f encodes itself, the default): the
 *  cross-request batcher runs every member's encoder passes on its pool, one at a time
 *  (step_batcher.h). Not thread-safe against whisper_fast_encode on f. */
void whisper_fast_set_encode_hook(whisper_fast *f, whisper_fast_encode_hook hook, void *ctx);

typedef struct whisper_fast_group whisper_fast_group;
/** Scratch for steps of up to max_rows rows in all (about (10·D + n_vocab) floats a row).
 *  Errors: STENO_E_INVALID_ARG, STENO_E_NOMEM. */
steno_status whisper_fast_group_create(whisper_fast *f, int max_rows, whisper_fast_group **out);
void whisper_fast_group_free(whisper_fast_group *g);
/** One token per row for rows 0..n_rows[i]-1 of each decoder ds[i] (tokens[i] [n_rows[i]]), each
 *  decoder at its own position n_past (then n_past + 1); logits[i]: [n_rows[i]][n_vocab]. The
 *  decoders must come from f's model (the same dtype and audio_ctx; shares allowed). Each row's
 *  logits are bit-identical to whisper_fast_decoder_step_rows on its decoder alone, and so to
 *  whisper_fast_decoder_forward of one token without the screen, whatever n, the other rows and
 *  the thread count. Uses f's pool. Allocates nothing.
 *  Errors: STENO_E_INVALID_ARG (rows, position, token id, more than max_rows rows in all). */
steno_status whisper_fast_group_step(whisper_fast_group *g, whisper_fast_decoder *const *ds, const int *n_rows, int n,
                                     const int *const *tokens, float *const *logits);
/** The checks whisper_fast_group_step makes of one decoder (i: its index, for the message) with B
 *  rows and tokens [B], without the row budget: a batcher runs them before it puts a member's
 *  rows with others', so that one member's bad step fails that member alone.
 *  Errors: STENO_E_INVALID_ARG (another model, rows, position, token id). */
steno_status whisper_fast_group_check(const whisper_fast_group *g, const whisper_fast_decoder *d, int i, int B,
                                      const int *tokens);

#endif
