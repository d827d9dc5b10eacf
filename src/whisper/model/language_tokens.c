/* language_tokens.c — the language tokens of a Whisper model (see language_tokens.h). */
#include "whisper/model/language_tokens.h"

#include <stdio.h>
#include <string.h>

int whisper_n_languages(const whisper_model *m) {
    /* <|en|> .. the token before <|translate|> (openai-whisper tokenizer.py: all_language_tokens) */
    return m->multilingual && m->special.translate > m->special.lang_first
               ? m->special.translate - m->special.lang_first
               : 0;
}

int whisper_language_token(const whisper_model *m, const char *code) {
    char tok[32];
    if (strlen(code) > sizeof tok - 5) return -1;
    snprintf(tok, sizeof tok, "<|%s|>", code);
    const int id = steno_tokenizer_token_id(m->tokenizer, tok);
    const int first = m->special.lang_first, n = whisper_n_languages(m);
    return id >= first && id < first + n ? id : -1;
}

void whisper_language_code(const whisper_model *m, int i, char *code) {
    size_t len = 0;
    const char *s = steno_tokenizer_token_bytes(m->tokenizer, m->special.lang_first + i, &len);
    code[0] = '\0';
    if (s && len >= 5 && len - 4 < 16 && !memcmp(s, "<|", 2) && !memcmp(s + len - 2, "|>", 2)) {
        memcpy(code, s + 2, len - 4);
        code[len - 4] = '\0';
    }
}
