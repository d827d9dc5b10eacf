/* whisper_bpe.h — Whisper's byte-level BPE tokenizer (GPT-2 style; tiktoken ranks), as in
 * openai-whisper's whisper/tokenizer.py and the HF tokenizer.json shipped with CTranslate2 models.
 *
 * Decoding maps each token string of vocabulary.txt back to bytes through GPT-2's byte↔unicode
 * table. Encoding splits text with GPT-2's pre-tokenizer regex (PCRE2, Unicode properties) and
 * applies BPE merges by rank (tokenizer.json "model.merges").
 */
#ifndef STENO_TEXT_TOKENIZER_H
#define STENO_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"

typedef struct steno_tokenizer steno_tokenizer;

/** Loads <model_dir>/vocabulary.txt (one token per line, id = line index; or vocabulary.json) and
 *  <model_dir>/tokenizer.json (merges). Errors name the file: STENO_E_IO, STENO_E_FORMAT. */
steno_status steno_tokenizer_load(const char *model_dir, steno_tokenizer **out);
void steno_tokenizer_free(steno_tokenizer *t);

/** The token's vocabulary form (GPT-2 byte-level text, "Ġthe"; special tokens literal), or NULL
 *  for an id outside the vocabulary. Points into t. */
const char *steno_tokenizer_token_str(const steno_tokenizer *t, int id);

/** The BPE merges as (left id, right id) pairs in priority order (rank, then ids): *pairs
 *  malloc'd, caller frees. Errors: STENO_E_NOMEM. */
steno_status steno_tokenizer_merges(const steno_tokenizer *t, int (**pairs)[2], int *n);

/** A tokenizer from tiktoken ranks: tok[i] (tok_len[i] raw bytes) is the token of rank/id i for
 *  i < n_base, followed by the special tokens specials[0..n_specials) (literal text). The merges
 *  are derived from the ranks (every split of a token into two tokens merges at that token's
 *  rank), which encodes as tiktoken does. The inputs are copied. Used for whisper.cpp ggml files
 *  (whose vocabulary section is these ranks) and .tiktoken files. Errors: STENO_E_FORMAT (fewer
 *  than 256 ranks, no single-byte token for some byte), STENO_E_NOMEM. */
steno_status steno_tokenizer_from_ranks(const uint8_t *const *tok, const int32_t *tok_len, int n_base,
                                        const char *const *specials, int n_specials, steno_tokenizer **out);

/** Number of tokens (vocabulary size). */
int steno_tokenizer_n_vocab(const steno_tokenizer *t);

/** Id of an exact token string such as "<|endoftext|>" or "<|en|>", or -1. */
int steno_tokenizer_token_id(const steno_tokenizer *t, const char *token);

/** The raw bytes of one token (byte-level decoded; special tokens give their literal text).
 *  *len receives the byte count. Returned pointer is owned by the tokenizer. NULL for a bad id. */
const char *steno_tokenizer_token_bytes(const steno_tokenizer *t, int id, size_t *len);

/** Concatenated bytes of ids (skipping ids >= eot, i.e. special and timestamp tokens, when
 *  skip_special is 1), malloc'd, NUL-terminated. Invalid UTF-8 sequences are kept as-is
 *  (callers replace them where they print). Returns NULL on allocation failure. */
char *steno_tokenizer_decode(const steno_tokenizer *t, const int *ids, int n, int skip_special);

/** Encodes UTF-8 text (no special tokens) into BPE ids. *ids malloc'd (caller frees), *n its
 *  length. Errors: STENO_E_NOMEM, STENO_E_INVALID_ARG (invalid UTF-8). */
steno_status steno_tokenizer_encode(const steno_tokenizer *t, const char *text, int **ids, int *n);

#endif
