/* llama2c.h — readers for Andrej Karpathy's llama2.c files: the "legacy" (version 0) checkpoint
 * `model.bin` and the tokenizer `tokenizer.bin` (llama2.c run.c: read_checkpoint,
 * memory_map_weights, build_tokenizer).
 *
 * Checkpoint (little-endian, mmap'd read-only):
 *   7 × int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
 *              (vocab_size < 0 means an unshared classifier wcls follows at the end)
 *   float32 arrays, in order (head_size = dim / n_heads, kv_dim = n_kv_heads * head_size):
 *     token_embedding [vocab, dim]; rms_att [L, dim]; wq [L, dim, dim]; wk [L, kv_dim, dim];
 *     wv [L, kv_dim, dim]; wo [L, dim, dim]; rms_ffn [L, dim]; w1 [L, hidden, dim];
 *     w2 [L, dim, hidden]; w3 [L, hidden, dim]; rms_final [dim];
 *     freq_cis_real, freq_cis_imag [seq_len, head_size/2] (unused); wcls [vocab, dim] if unshared
 *   (matrices row-major [out, in], as run.c's matmul W(d,n) @ x(n)).
 * The file size must equal the header's size exactly. The "ak42" versioned exports are refused
 * with a clear message.
 *
 * Tokenizer: int32 max_token_length, then vocab_size × { float32 score; int32 len; len bytes }.
 *
 * Errors name the file: STENO_E_IO, STENO_E_FORMAT (bad header values, size mismatch,
 * truncated tokenizer), STENO_E_UNSUPPORTED (versioned checkpoints), STENO_E_NOMEM.
 */
#ifndef STENO_FORMATS_LLAMA2C_H
#define STENO_FORMATS_LLAMA2C_H

#include <stddef.h>
#include <stdint.h>

#include "steno.h"

typedef struct llama2c_config {
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared_classifier; /* 1 when wcls is the token embedding */
} llama2c_config;

/** Pointers into the mapping (float32, layouts as above). */
typedef struct llama2c_weights {
    const float *token_embedding, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3,
        *rms_final, *wcls;
} llama2c_weights;

typedef struct llama2c_file llama2c_file;

/** Maps and validates a checkpoint. *out owned by the caller (llama2c_close). */
steno_status llama2c_open(const char *path, llama2c_file **out);
/** Same from an in-memory image (not copied; must outlive the handle). data must be aligned for
 *  float (4 bytes; malloc and mmap give that): the weights are float pointers into it. A
 *  misaligned image is refused with STENO_E_INVALID_ARG. */
steno_status llama2c_open_buffer(const void *data, size_t size, const char *name, llama2c_file **out);
void llama2c_close(llama2c_file *f);
const llama2c_config *llama2c_get_config(const llama2c_file *f);
const llama2c_weights *llama2c_get_weights(const llama2c_file *f);

/** A llama2.c tokenizer: n pieces with scores. Pieces are owned, NUL-terminated copies (a piece may
 *  itself contain no NUL: lengths are kept in lens). */
typedef struct llama2c_tokenizer {
    int n;
    int max_token_length;
    float *scores;
    char **pieces;
    int *lens;
} llama2c_tokenizer;

/** Reads tokenizer.bin with exactly vocab_size entries (trailing bytes are an error). */
steno_status llama2c_tokenizer_load(const char *path, int vocab_size, llama2c_tokenizer **out);
steno_status llama2c_tokenizer_load_buffer(const void *data, size_t size, const char *name,
                                           int vocab_size, llama2c_tokenizer **out);
void llama2c_tokenizer_free(llama2c_tokenizer *t);

#endif
