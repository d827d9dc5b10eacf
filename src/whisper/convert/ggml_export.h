/* ggml_export.h — writes a loaded Whisper model as a whisper.cpp ggml model file (the legacy
 * "ggml" container that whisper.cpp's src/whisper.cpp: whisper_model_load reads and
 * models/convert-pt-to-ggml.py writes), so that whisper.cpp can run the very weights steno runs.
 *
 * Layout (little-endian, every integer int32):
 *   magic 0x67676d6c ("ggml");
 *   hparams: n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx,
 *            n_text_state, n_text_head, n_text_layer, n_mels, ftype (1 = f16 weights, 0 = f32);
 *   mel filters: n_mels, 201, then n_mels × 201 float32 (Slaney filterbank, steno_mel_filters);
 *   vocabulary: count, then count × { len, len raw bytes }: the byte-level BPE tokens of ranks
 *            0 .. eot-1 (what convert-pt-to-ggml.py writes from gpt2.tiktoken or
 *            multilingual.tiktoken; whisper.cpp synthesizes <|endoftext|> and the other special
 *            and timestamp tokens itself);
 *   tensors until end of file: { n_dims, name_len, ttype (0 f32, 1 f16), ne[n_dims] (ggml order:
 *            the fastest-varying axis first, i.e. PyTorch's shape reversed), name, data }.
 *
 * Tensors carry openai-whisper's state_dict names (encoder.conv1.weight,
 * encoder.blocks.0.attn.query.weight, decoder.token_embedding.weight, ...). Following
 * convert-pt-to-ggml.py with use_f16: tensors of 2 or more dimensions are float16 except the two
 * positional embeddings; 1-D tensors and the conv biases (written as [n_state, 1]) are float32.
 *
 * CTranslate2's fused projections are split back: self_attention/linear_0 [3D][D] → attn.query,
 * attn.key, attn.value; cross attention/linear_1 [2D][D] → cross_attn.key, cross_attn.value. The
 * key projections have no bias in openai-whisper (CTranslate2 stores a zero one), and whisper.cpp
 * rejects a key bias, so none is written.
 *
 * Weights may be held as float32 (nn_linear.w, tok_emb) or only as float16 (w16, tok_emb16, as
 * whisper_model_load_ex(decoder_f16) keeps the decoder); float16 sources are copied bit-exactly
 * into an f16 file. float32 → float16 rounds to nearest even (numpy's astype(float16)), which is
 * exact for weights that came from a float16 model.
 */
#ifndef STENO_WHISPER_GGML_EXPORT_H
#define STENO_WHISPER_GGML_EXPORT_H

#include "steno.h"
#include "whisper/model/model.h"

/** Writes m to path as a whisper.cpp ggml file with float16 weights (ftype 1), exactly as
 *  convert-pt-to-ggml.py lays out an openai checkpoint. The file is written to "<path>.tmp" and
 *  renamed over path on success, so a failed write never leaves a truncated model behind.
 *  Errors: STENO_E_IO (cannot create/write/rename, message names path), STENO_E_NOMEM,
 *  STENO_E_INVALID_ARG (NULL arguments), STENO_E_UNSUPPORTED (big-endian host, or dimensions
 *  that do not fit whisper.cpp's int32 fields). */
steno_status whisper_write_ggml(const whisper_model *m, const char *path);

/** As whisper_write_ggml; use_f16 = 0 writes every tensor as float32 (ftype 0, the "use-f32"
 *  mode of convert-pt-to-ggml.py). */
steno_status whisper_write_ggml_ex(const whisper_model *m, const char *path, int use_f16);

#endif
