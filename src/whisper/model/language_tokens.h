/* language_tokens.h — the language tokens of multilingual Whisper models: <|en|> .. the token
 * before <|translate|> (openai-whisper tokenizer.py all_language_tokens), contiguous in every
 * Whisper vocabulary (99, or 100 with <|yue|> in large-v3), so no table is needed: a token's code
 * is its text without "<|" and "|>". */
#ifndef STENO_WHISPER_LANGUAGE_TOKENS_H
#define STENO_WHISPER_LANGUAGE_TOKENS_H

#include "whisper/model/model.h"

/** Number of language tokens of m (0 for an English-only model). */
int whisper_n_languages(const whisper_model *m);

/** Token id of the language code ("de"), or -1 when m has no such language token. */
int whisper_language_token(const whisper_model *m, const char *code);

/** Writes the code of language token lang_first + i into code (at least 16 bytes). */
void whisper_language_code(const whisper_model *m, int i, char *code);

#endif
