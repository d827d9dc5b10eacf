/* faithful.h — the faithful Whisper forward passes in float32 (openai-whisper whisper/model.py:
 * AudioEncoder.forward, TextDecoder.forward with its kv_cache hooks).
 *
 * Encoder: mel [n_mels][2·n_audio_ctx] → conv1(k3,p1)+GELU → conv2(k3,s2,p1)+GELU → + sinusoids
 *          → n_audio_layer × pre-LN block(self-attention, MLP) → ln_post → xa [n_audio_ctx][D].
 * Decoder: tokens → token embedding + positional embedding[offset:] → n_text_layer × pre-LN
 *          block(causal self-attention with KV cache, cross-attention on xa, MLP) → LN → logits
 *          against the tied token embedding.
 * Cross-attention K/V are computed once per 30-s window (whisper_decoder_set_audio), not per step. */
#ifndef STENO_WHISPER_FORWARD_H
#define STENO_WHISPER_FORWARD_H

#include "whisper/decoder/attention_capture.h"
#include "whisper/decoder/kv_rows.h"
#include "whisper/model/model.h"

/** Runs the encoder. mel: [n_mels][2·n_audio_ctx] float32 row-major; xa: [n_audio_ctx][D] out. */
steno_status whisper_encode(const whisper_model *m, const float *mel, float *xa);

/** Decoder state for one sequence: self-attention KV cache preallocated to n_text_ctx and the
 *  cross-attention K/V of the current window. */
typedef struct whisper_decoder {
    const whisper_model *m;
    int n_past;      /* tokens already in the self-attention cache */
    whisper_kv_rows kv; /* row → slot (beam search, best-of: whisper_decoder_init_rows) */
    float *self_k;   /* per slot: [n_text_layer][n_text_ctx][D] */
    float *self_v;
    float *cross_k;  /* [n_text_layer][n_audio_ctx][D] */
    float *cross_v;
    float *x, *h, *qkv, *attn, *mlp, *scores; /* scratch sized for n_text_ctx tokens */
    const whisper_xattn_capture *capture; /* NULL, or cross-attention scores to record (attention_capture.h) */
} whisper_decoder;

steno_status whisper_decoder_init(whisper_decoder *d, const whisper_model *m);
/** As whisper_decoder_init with `rows` rows (1..n_text_ctx), each with its own self-attention
 *  cache; row 0 is the one whisper_decoder_forward feeds. */
steno_status whisper_decoder_init_rows(whisper_decoder *d, const whisper_model *m, int rows);
void whisper_decoder_free(whisper_decoder *d);

/** Computes every layer's cross-attention K/V from xa [n_audio_ctx][D] and clears the cache. */
void whisper_decoder_set_audio(whisper_decoder *d, const float *xa);

/** Clears the self-attention cache (n_past = 0) keeping the window's cross K/V. */
void whisper_decoder_reset(whisper_decoder *d);

/** Feeds T tokens at positions n_past..n_past+T-1 and appends them to the cache.
 *  logits: [T][n_vocab] when all_positions, else [n_vocab] for the last position only.
 *  Errors: STENO_E_INVALID_ARG when n_past + T exceeds n_text_ctx or a token is out of range. */
steno_status whisper_decoder_forward(whisper_decoder *d, const int *tokens, int T, float *logits,
                                     int all_positions);

/** Logits [n_vocab] at position t (0-based within the last whisper_decoder_forward call),
 *  recomputed from the residual stream that call left in d->x. */
void whisper_decoder_logits_at(whisper_decoder *d, int t, float *logits);

/** One token per row for rows 0..B-1 at position n_past (>= 1), as one batch of B rows through
 *  every matrix product (openai-whisper runs its beams the same way, as a batch). Each row's
 *  query attends to its own cache and, by broadcasting, to the window's one cross K/V.
 *  logits: [B][n_vocab]. Errors: STENO_E_INVALID_ARG. */
steno_status whisper_decoder_step_rows(whisper_decoder *d, const int *tokens, int B, float *logits);

/** Gather: rows 0..B-1 continue from the caches of rows src[0..B-1] (whisper/decoder/kv_rows.h). */
steno_status whisper_decoder_reorder(whisper_decoder *d, const int *src, int B);

#endif
