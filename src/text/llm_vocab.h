/* llm_vocab.h — LLM vocabularies and tokenizers: SentencePiece-style BPE with byte fallback
 * (llama2.c tokenizer.bin; GGUF tokenizer.ggml.model = "llama", e.g. Gemma 3) and byte-level BPE
 * (GGUF "gpt2", e.g. SmolLM2), with special tokens.
 *
 * Behaviour follows llama.cpp src/llama-vocab.cpp (the reference for GGUF models):
 *   - special-token partition (tokenizer_st_partition): control, user-defined and unknown tokens,
 *     longest first, are cut out of the text before the tokenizer runs; control and unknown ones
 *     only when parse_special is set, user-defined ones always;
 *   - SPM (llm_tokenizer_spm_session): spaces escaped as U+2581 when the vocabulary does
 *     (GGUF), an optional space prefix at the start and after a special token, UTF-8 characters
 *     merged best score first (leftmost on ties), characters missing from the vocabulary as
 *     <0xXX> byte tokens — for llama2.c's tokenizer.bin this is run.c's encode() exactly (dummy
 *     " " prefix, raw spaces);
 *   - byte-level BPE (llm_tokenizer_bpe_session): the pre-tokenizer of tokenizer.ggml.pre
 *     (bpe_pre.c: llama.cpp's expressions and hand-written splitters, applied in sequence, each to
 *     the words of the previous), GPT-2's bytes_to_unicode mapping, merges lowest rank first
 *     (leftmost on ties);
 *   - token_to_piece: control/unknown tokens print only with `special`, U+2581 → ' ', byte tokens
 *     → the byte, byte-level BPE text → bytes.
 * Errors name the file and the key (STENO_E_FORMAT), e.g. "model.gguf: tokenizer.ggml.tokens has
 * 100 entries but the model has 49152 rows".
 */
#ifndef STENO_TEXT_LLM_VOCAB_H
#define STENO_TEXT_LLM_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"

struct gguf_file;
struct llama2c_tokenizer;
struct text_bpe_pre;

enum { STENO_VOCAB_SPM = 1, STENO_VOCAB_BPE = 2 };

/* Token attributes (llama.h llama_token_attr). */
enum {
    STENO_TOK_UNKNOWN = 1 << 0,
    STENO_TOK_UNUSED = 1 << 1,
    STENO_TOK_NORMAL = 1 << 2,
    STENO_TOK_CONTROL = 1 << 3,
    STENO_TOK_USER_DEFINED = 1 << 4,
    STENO_TOK_BYTE = 1 << 5
};

typedef struct steno_strmap steno_strmap; /* text → int, open addressing */

typedef struct steno_vocab {
    int type;                /* STENO_VOCAB_SPM or _BPE */
    int n;                   /* tokens */
    char **text;             /* n NUL-terminated texts (owned) */
    int *len;                /* n byte lengths */
    float *score;            /* n scores (SPM merge priority; 0 when absent) */
    uint8_t *attr;           /* n STENO_TOK_* masks */
    steno_strmap *ids;       /* text → id */
    int bos, eos, eot, unk, pad; /* -1 when absent */
    int add_bos, add_eos;
    int add_space_prefix;    /* SPM: prefix ' ' at the start / after a special token */
    int escape_whitespace;   /* SPM: ' ' ↔ U+2581 (GGUF); 0 for llama2.c */
    int llama2c;             /* decode strips the leading space of the piece after BOS (run.c) */
    int byte_tok[256];       /* token of each byte (<0xXX>, or the byte-level char for BPE), -1 */
    int *special;            /* ids partitioned before tokenizing, longest text first */
    int n_special;
    int *eog;                /* end-of-generation ids (eos, eot, <|im_end|>, <end_of_turn>, ...) */
    int n_eog;
    /* byte-level BPE */
    steno_strmap *merges;    /* "left right" → rank */
    struct text_bpe_pre *pre_split; /* the pre-tokenizer of tokenizer.ggml.pre (bpe_pre.c) */
    int ignore_merges;       /* a pre-tokenized word that is a token is taken whole (llama3, ...) */
    int pre_add_bos;         /* llama.cpp's add_bos for this pre type, before add_bos_token */
    int pre_raw;             /* TEXT_PRE_* of text/pretok/bpe_pre.h (SentencePiece-style BPE types) */
    char *pre;               /* tokenizer.ggml.pre (owned) */
} steno_vocab;

/** Reads the vocabulary from GGUF metadata (tokenizer.ggml.*). n_vocab_model is the model's
 *  vocabulary size (rows of the token embedding); the token list must not be longer. */
steno_status steno_vocab_from_gguf(const struct gguf_file *f, int n_vocab_model, steno_vocab **out);
/** Wraps a llama2.c tokenizer (BOS 1, EOS 2, <unk> 0, <0xXX> byte tokens). name is for messages. */
steno_status steno_vocab_from_llama2c(const struct llama2c_tokenizer *t, const char *name, steno_vocab **out);
void steno_vocab_free(steno_vocab *v);

/** Token id of text, or -1. */
int steno_vocab_find(const steno_vocab *v, const char *text, size_t len);

/** Tokenizes UTF-8 text (len bytes). add_special: BOS (and EOS) as the vocabulary asks
 *  (llama.cpp add_special); parse_special: control tokens written in the text become tokens.
 *  *tokens is malloc'd (caller frees), *n its length. Errors: STENO_E_NOMEM. */
steno_status steno_vocab_tokenize(const steno_vocab *v, const char *text, size_t len, int add_special,
                                  int parse_special, int **tokens, int *n);

/** Writes the bytes of token's piece into buf (at most cap bytes) and returns their count, or the
 *  negative count needed when cap is too small. special: also print control tokens. prev is the
 *  previous token (-1 if none): llama2.c vocabularies drop the leading space after BOS. */
int steno_vocab_piece(const steno_vocab *v, int token, int prev, int special, char *buf, int cap);

/** 1 if token ends generation (EOS, EOT and the model's other end-of-turn tokens). */
int steno_vocab_is_eog(const steno_vocab *v, int token);

/* Internal: the tokenizers of one raw-text fragment (spm.c, bpe_gguf.c). They append to a
 * growable int vector. */
typedef struct steno_ivec {
    int *v;
    int n, cap;
} steno_ivec;
int steno_ivec_push(steno_ivec *a, int x);
int steno_spm_tokenize(const steno_vocab *v, const char *text, size_t len, steno_ivec *out);
int steno_bpe_tokenize(const steno_vocab *v, const char *text, size_t len, steno_ivec *out);
/** Sets up the pre-tokenizer for tokenizer.ggml.pre (bpe_gguf.c), replacing any earlier one, and
 *  sets ignore_merges and pre_add_bos. 0 ok; -1 unknown pre (*why NULL) or one steno refuses
 *  (*why says why). why may be NULL. */
int steno_bpe_init_pre(steno_vocab *v, const char *pre, const char **why);
void steno_bpe_free_pre(steno_vocab *v);

/* strmap (vocab.c) */
steno_strmap *steno_strmap_new(size_t expected);
void steno_strmap_free(steno_strmap *m);
/** Inserts (a copy of) key → value; keeps the first value for a repeated key. 0 ok, -1 no memory. */
int steno_strmap_put(steno_strmap *m, const char *key, size_t len, int value);
/** Value for key, or -1. */
int steno_strmap_get(const steno_strmap *m, const char *key, size_t len);

#endif
