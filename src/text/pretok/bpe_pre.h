/* bpe_pre.h — byte-level BPE pre-tokenizers by tokenizer.ggml.pre, as llama.cpp applies them
 * (src/llama-vocab.cpp llm_tokenizer_bpe, src/unicode.cpp unicode_regex_split at commit 0c1e57098).
 * A pre-tokenizer is a list of expressions; each splits every word left by the previous one into
 * its matches and the text between them. */
#ifndef STENO_TEXT_BPE_PRE_H
#define STENO_TEXT_BPE_PRE_H

#include <stddef.h>

typedef struct text_bpe_pre text_bpe_pre;

/* SentencePiece-style BPE types (llama.cpp's byte_encode = false: gemma4, sarvam-moe, whitespace). */
enum {
    TEXT_PRE_RAW = 1,       /* words are merged as raw UTF-8, missing bytes as <0xXX> tokens */
    TEXT_PRE_ESCAPE = 2,    /* ' ' is written U+2581 before splitting (escape_whitespaces) */
    TEXT_PRE_NL_WHOLE = 4,  /* a word of newlines that is a token is taken whole (gemma4) */
    TEXT_PRE_FORCE_BOS = 8  /* BOS added even when add_bos_token says not (gemma4) */
};

/* llama.cpp's per-type settings that change token ids. */
typedef struct {
    int ignore_merges; /* a word that is a token as a whole is that token (llama3, tekken, ...) */
    int add_bos;       /* llama.cpp's add_bos before tokenizer.ggml.add_bos_token overrides it */
    int raw;           /* TEXT_PRE_* */
} text_bpe_pre_opts;

/** Builds the pre-tokenizer named by tokenizer.ggml.pre. NULL when the name is unknown or one
 *  steno does not reproduce (*why then says which, or is NULL for an unknown name, or OOM). */
text_bpe_pre *text_bpe_pre_new(const char *name, text_bpe_pre_opts *opts, const char **why);
void text_bpe_pre_free(text_bpe_pre *p);

/** Splits valid UTF-8 text into words: (*off)[i], (*len)[i] are byte ranges in text, in order,
 *  covering it. Arrays are malloc'd (caller frees). 0 ok, -1 out of memory. */
int text_bpe_pre_split(const text_bpe_pre *p, const char *text, size_t len, size_t **off, size_t **wlen, int *n);

#endif
