/* whisper_bpe_internal.h — the Whisper BPE tokenizer's tables, shared by whisper_bpe.c (lookup,
 * encode, decode) and whisper_bpe_build.c (building the tables from files or from ranks). */
#ifndef STENO_TEXT_WHISPER_BPE_INTERNAL_H
#define STENO_TEXT_WHISPER_BPE_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "text/whisper_bpe.h"


typedef struct {
    uint64_t key;   /* (left << 32) | right; 0 = empty slot (ids are never both 0 and merged) */
    int32_t rank;
    int32_t merged;
} merge_slot;

struct steno_tokenizer {
    int n_vocab;
    char *arena;          /* vocab-form strings then byte-form strings, NUL-separated */
    size_t *str_off;      /* vocab-form string of id i: arena + str_off[i] (NUL-terminated) */
    size_t *bytes_off;    /* raw bytes of id i: arena + bytes_off[i], length bytes_len[i] */
    uint32_t *bytes_len;
    int32_t *hash;        /* open addressing over vocab-form strings: id or -1 */
    size_t hash_cap;      /* power of two */
    merge_slot *merges;
    size_t merges_cap;    /* power of two */
    int n_merges;
    int base_id[256];     /* id of the single-byte token of each byte */
    int eot;              /* id of <|endoftext|> (skip_special threshold) */
    pcre2_code *re;
};

/* GPT-2's pre-tokenizer pattern (see whisper_bpe.c for why \s is spelled out). */
extern const char wbpe_gpt2_pattern[];

void wbpe_bytes_to_unicode(int b2u[256]);
int wbpe_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
int wbpe_utf8_valid(const char *s, size_t n);
int wbpe_utf8_encode(uint32_t cp, char *out);
int wbpe_vocab_lookup(const steno_tokenizer *t, const char *s, size_t n);
void wbpe_vocab_insert(steno_tokenizer *t, int id);
void wbpe_merge_insert(steno_tokenizer *t, int a, int b, int rank, int merged);

#endif
