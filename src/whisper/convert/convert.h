/* convert.h — `steno convert`: any Whisper format to any other (ct2, ggml, hf, mlx), from the
 * weight table (formats/wtab/wtab.h) and the model's tokenizer and config (whisper/model/tokenizer_config.h).
 *
 * Float tensors keep their values exactly: the output float type is the source's (the type of the
 * token embedding: float32, float16 or bfloat16), and tensors another type in the source (the
 * float32 biases of a ggml file made from a float16 model) are rounded to it, which is exact for
 * values that were of that type; so CT2 → HF → ggml → MLX → CT2 gives back the same bytes for
 * every tensor of a float16 or float32 model. A ggml file holds its 1-D tensors and positional
 * embeddings in float32 (whisper.cpp creates them so: src/whisper.cpp whisper_model_load), an
 * MLX folder holds no encoder positional embedding (mlx-whisper computes the sinusoids itself),
 * and bfloat16 becomes float32 in ggml. Quantized sources (ggml q4_0..q8_0, CTranslate2 int8) are
 * dequantized (lossy only in that the output is not re-quantized) and written in float16, except
 * ggml → ggml, which copies the quantized blocks. f32 = 1 writes every float tensor as float32.
 *
 * Outputs (written under a temporary name and renamed, so a failed write leaves nothing):
 *   ct2  — DIR/model.bin (binary version 6, WhisperSpec revision 3, CTranslate2's fused
 *          projections and scalars), config.json, vocabulary.txt, tokenizer.json;
 *   ggml — FILE (convert-pt-to-ggml.py's layout, see ggml_export.h);
 *   hf   — DIR/model.safetensors, config.json (WhisperConfig), generation_config.json,
 *          tokenizer.json (transformers' names, convert_openai_to_hf.py);
 *   mlx  — DIR/weights.safetensors, config.json (ModelDimensions + model_type), tokenizer.json
 *          (an extra for steno: mlx-whisper uses its own .tiktoken files). */
#ifndef STENO_WHISPER_CONVERT_H
#define STENO_WHISPER_CONVERT_H

#include "steno.h"

/* steno_whisper_convert (steno.h) is this folder's entry point. */

#endif
