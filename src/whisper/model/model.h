/* model.h — Whisper weights and dimensions (openai-whisper whisper/model.py: ModelDimensions,
 * AudioEncoder, TextDecoder), loaded from any supported model format (formats/wtab/wtab_readers.h)
 * and held in float32.
 *
 * CTranslate2 stores the decoder self-attention Q/K/V as one fused Linear [3D][D]
 * (self_attention/linear_0) and the cross-attention K/V as one fused Linear [2D][D]
 * (attention/linear_1); the key projection, which has no bias in openai-whisper, carries a zero
 * bias there. Dimensions are read from the tensors' shapes, never assumed. */
#ifndef STENO_WHISPER_MODEL_H
#define STENO_WHISPER_MODEL_H

#include "formats/whisper_config.h"
#include "formats/wtab/wtab.h"
#include "steno.h"
#include "text/whisper_bpe.h"
#include "whisper/nn/nn.h"

typedef struct whisper_layer {
    nn_layernorm attn_ln;
    nn_linear attn_qkv;  /* [3D][D]: Q rows, then K, then V */
    nn_linear attn_out;  /* [D][D] */
    nn_layernorm cross_ln; /* decoder only */
    nn_linear cross_q;     /* [D][D] */
    nn_linear cross_kv;    /* [2D][D]: K rows, then V */
    nn_linear cross_out;   /* [D][D] */
    nn_layernorm mlp_ln;
    nn_linear fc1;         /* [4D][D] */
    nn_linear fc2;         /* [D][4D] */
} whisper_layer;

/** Special token ids (openai-whisper whisper/tokenizer.py: Tokenizer). */
typedef struct whisper_special {
    int eot, sot, sot_prev, sot_lm, no_speech, no_timestamps, timestamp_begin, translate,
        transcribe, lang_first; /* lang_first: <|en|>, the first language token */
} whisper_special;

typedef struct whisper_model {
    int n_mels, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer;
    int n_vocab, n_text_ctx, n_text_state, n_text_head, n_text_layer;
    int multilingual;

    const float *conv1_w; /* [D][n_mels][3] */
    const float *conv1_b; /* [D] */
    const float *conv2_w; /* [D][D][3] */
    const float *conv2_b;
    const float *enc_pos; /* [n_audio_ctx][D] sinusoids */
    whisper_layer *enc;   /* [n_audio_layer] */
    nn_layernorm enc_ln_post;

    const float *tok_emb; /* [n_vocab][D]; also the output projection (tied); NULL if f16 only */
    const uint16_t *tok_emb16; /* float16 copy, or NULL */
    wq_mat tok_emb_q;     /* quantized copy when wq_type (tok_emb and tok_emb16 NULL) */
    int wq_type;          /* 0, or the kernels/quant/wq.h type of every quantized matrix: the encoder's and
                             decoder's linears and the token embedding (conv, cross-attention K/V,
                             norms, biases and positions stay float32); faithful can't run */
    int decoder_f16;      /* the linears of encoder and decoder and the token embedding held only as
                             float16 (fast path); faithful can't run */
    const float *dec_pos; /* [n_text_ctx][D] */
    whisper_layer *dec;   /* [n_text_layer] */
    nn_layernorm dec_ln;

    whisper_config config;
    steno_tokenizer *tokenizer;
    whisper_special special;

    float *arena;      /* all float32 weights, owned */
    uint16_t *arena16; /* float16 matrices when decoder_f16, owned */
    unsigned char *arena_q; /* quantized matrices of a wq_type without an x8 layout (q5_1, MLX), owned */
    unsigned char *arena_x; /* the x8 copies (wq_mat.x), the only copy of q8_0/q5_0/q4_0/q4_1 matrices, owned */
} whisper_model;

/** Loads the Whisper model at path in float32: a model directory (CTranslate2, Hugging Face
 *  transformers, mlx-community) or a whisper.cpp ggml file, the format detected from the files
 *  (formats/wtab/wtab_readers.h: wtab_open), with its tokenizer and config (whisper/model/tokenizer_config.h).
 *  Quantized weights (ggml q4_0..q8_0, CTranslate2 int8) are dequantized here into the float32
 *  arena: the f32 paths run no quantized kernel. Errors name the file and the reason. */
steno_status whisper_model_load(const char *path, whisper_model **out);

/** As whisper_model_load_q from an already read weight table; path names the model for the
 *  tokenizer/config lookup and errors. w is only read and may be freed afterwards. */
steno_status whisper_model_load_table(const wtab *w, const char *path, int decoder_f16, int wq_type,
                                      whisper_model **out);

/** As whisper_model_load; with decoder_f16 the encoder's linears (Q/K/V, output, MLP) and the
 *  decoder's matrices (self-attention, cross-attention Q and output, MLP, token embedding) are kept
 *  only as float16 (w16 / tok_emb16), halving their memory, for the fast path. The convolutions
 *  and the cross-attention K/V weights stay float32 (the per-window GEMM). */
steno_status whisper_model_load_ex(const char *path, int decoder_f16, whisper_model **out);
/** As whisper_model_load_ex; with wq_type (kernels/quant/wq.h: STENO_T_Q8_0 ... WQ_MLX_Q8_G64; 0 for
 *  none) the linears of encoder and decoder and the token embedding are quantized at load time
 *  (wq_quantize, one tensor at a time through a float32 scratch of one tensor) and kept only in
 *  that form (nn_linear.q, tok_emb_q): no float copy of them stays in memory. A reader of an
 *  already quantized file could fill the same wq_mat views with its own blocks instead (not yet:
 *  ggml's quantized tensors are dequantized by the table, then quantized again here).
 *  Errors: STENO_E_INVALID_ARG (unknown type, or a width not a multiple of its group). */
steno_status whisper_model_load_q(const char *path, int decoder_f16, int wq_type, whisper_model **out);
void whisper_model_free(whisper_model *m);

#endif
