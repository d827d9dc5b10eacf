/* tokenizer_config.h — what a Whisper model needs besides its weights: the tokenizer and the decoding
 * config (suppressed tokens, language tokens, alignment heads), from the model's own files when it
 * has them, else derived from the vocabulary as openai-whisper does.
 *
 * Sources, in order:
 *   tokenizer: <dir>/vocabulary.{txt,json} + tokenizer.json (CTranslate2), <dir>/tokenizer.json
 *     alone (Hugging Face), the ggml file's vocabulary section, or <dir>/{multilingual,gpt2}.tiktoken
 *     (an mlx-community folder holds no tokenizer; mlx-whisper ships the .tiktoken files); the
 *     special tokens after the ranks are synthesized in openai-whisper's order (whisper/tokenizer.py:
 *     get_encoding): <|endoftext|>, <|startoftranscript|>, one per language (99, or 100 with
 *     <|yue|> when the vocabulary has 51 866 tokens), <|translate|>, <|transcribe|>,
 *     <|startoflm|>, <|startofprev|>, <|nocaptions|>, <|notimestamps|>, <|0.00|> .. <|30.00|>.
 *   config: a CTranslate2 directory's config.json (which must parse); otherwise derived:
 *     suppress_ids = openai-whisper's Tokenizer.non_speech_tokens plus <|startoftranscript|>,
 *     <|translate|>, <|transcribe|>, <|startoflm|>, <|startofprev|>, <|nocaptions|> (what
 *     transformers' generation_config.json suppress_tokens and CTranslate2's config list);
 *     suppress_ids_begin = [220, eot]; lang_ids = the language tokens; alignment_heads from
 *     generation_config.json when present, else openai-whisper's default (every head of the last
 *     half of the decoder layers, whisper/model.py: Whisper.__init__). */
#ifndef STENO_WHISPER_MODEL_SIDE_H
#define STENO_WHISPER_MODEL_SIDE_H

#include "formats/whisper_config.h"
#include "formats/wtab/wtab.h"
#include "text/whisper_bpe.h"

/** Loads or derives the tokenizer and config of the model read into w from path (a directory,
 *  or the ggml file). Errors name path: STENO_E_FORMAT (no tokenizer found, a vocabulary that
 *  does not fit n_vocab), STENO_E_IO, STENO_E_NOMEM. On success the caller owns *tok and *cfg. */
steno_status whisper_side_load(const wtab *w, const char *path, whisper_config *cfg, steno_tokenizer **tok);

/** The special-token strings following n_base ranks for a vocabulary of n_vocab tokens (see
 *  above; empty strings pad the ranks up to <|endoftext|>). *out is malloc'd, its strings static or
 *  in *arena (malloc'd); *n their count. Errors: STENO_E_FORMAT when n_vocab is not a Whisper
 *  vocabulary size for n_base. */
steno_status whisper_special_strings(int n_vocab, int n_base, const char ***out, int *n, char **arena);

/** openai-whisper's Tokenizer.non_speech_tokens for tok (sorted, unique), malloc'd. */
steno_status whisper_non_speech_tokens(const steno_tokenizer *tok, int **ids, int *n);

/** The i-th language code of openai-whisper's LANGUAGES (language_names.c), NULL past 100. */
const char *whisper_language_code_at(int i);

#endif
