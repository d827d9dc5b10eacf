/* kv_rows.h — which physical KV-cache slot each decoder row (beam hypothesis or best-of sample)
 * uses, and the gather that reorders rows after a beam-search step (openai-whisper
 * decoding.py: PyTorchInference.rearrange_kv_cache; CTranslate2 decoding.cc: the gather of the
 * decoder state by the beam's origin indices).
 *
 * A decoder with R rows owns R slots, each a whole self-attention cache. Row i reads and writes
 * slot[i]. After a step, row i must continue the hypothesis of row src[i]. Instead of copying
 * every row's cache (R · n_past positions per layer per step), the first row that takes a given
 * source inherits its slot by renaming; only a source taken twice needs a copy, into a slot no
 * new row refers to. Such a slot is never a source, so copies can run in any order. The plan
 * allocates nothing (its arrays are sized at init). */
#ifndef STENO_WHISPER_KV_ROWS_H
#define STENO_WHISPER_KV_ROWS_H

#include "steno.h"

typedef struct whisper_kv_rows {
    int rows;             /* R */
    int *slot;            /* [R] row → slot; a permutation of 0..R-1 */
    int *next;            /* [R] scratch: the new mapping */
    unsigned char *used;  /* [R] scratch */
} whisper_kv_rows;

/** slot[i] = i for R rows (R >= 1). Errors: STENO_E_NOMEM, STENO_E_INVALID_ARG (R < 1). */
steno_status whisper_kv_rows_init(whisper_kv_rows *k, int rows);
void whisper_kv_rows_free(whisper_kv_rows *k);

/** Callback copying positions [0, n_past) of slot `from` into slot `to`. */
typedef void (*whisper_kv_copy_fn)(void *ctx, int from, int to);

/** Rows 0..B-1 take the caches of rows src[0..B-1] (each in [0, R)); rows B..R-1 become spare.
 *  Calls copy for each duplicated source. Errors: STENO_E_INVALID_ARG (B or a src out of range;
 *  the mapping is then unchanged). */
steno_status whisper_kv_rows_reorder(whisper_kv_rows *k, const int *src, int B, whisper_kv_copy_fn copy,
                                     void *ctx);

#endif
