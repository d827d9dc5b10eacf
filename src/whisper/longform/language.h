/* language.h — spoken-language detection and the language/task tokens of multilingual Whisper
 * models (openai-whisper whisper/decoding.py: detect_language; CTranslate2
 * models/whisper.cc: WhisperModel::detect_language, which faster-whisper 1.2.1 calls).
 *
 * Detection feeds [<|startoftranscript|>] to the decoder on a window's encoder output and takes
 * the softmax of the raw logits (no logit filters) restricted to the language tokens
 * <|en|> .. the token before <|translate|>; every other token is masked out. The language tokens
 * are contiguous in every Whisper vocabulary (99, or 100 with <|yue|> in large-v3), so no table of
 * languages is needed here: a token's code is its text without "<|" and "|>". */
#ifndef STENO_WHISPER_LANGUAGE_H
#define STENO_WHISPER_LANGUAGE_H

#include "whisper/decoder/decoding.h"
#include "whisper/model/language_tokens.h"

/** Language probabilities for the window whose encoder output is xa ([audio_ctx][D], float32).
 *  probs: [whisper_n_languages(m)] out, indexed as the language tokens (lang_first + i), summing
 *  to 1. Uses c's decoder state (the cross-attention K/V are recomputed from xa; the next
 *  whisper_decode_with_fallback sets them again). Errors: STENO_E_UNSUPPORTED for an
 *  English-only model, or the decoder's. */
steno_status whisper_detect_language(whisper_decode_ctx *c, const float *xa, float *probs);

/** Detects the language on xa (as whisper_detect_language) and makes the most probable one c's
 *  language token; code (16 bytes) and *prob receive it. */
steno_status whisper_detect_and_set_language(whisper_decode_ctx *c, const float *xa, char *code, double *prob);

/** Validates p->language and p->task against m and resolves the language token: *lang_token is
 *  the token of p->language on a multilingual model, -1 when it is to be detected (NULL) or the
 *  model is English-only. Errors (naming the value): STENO_E_INVALID_ARG for a task outside
 *  steno_task or a language the model lacks; STENO_E_UNSUPPORTED for translate or a language
 *  other than "en" on an English-only model. */
steno_status whisper_resolve_language(const whisper_model *m, const steno_transcribe_params *p, int *lang_token);

#endif
