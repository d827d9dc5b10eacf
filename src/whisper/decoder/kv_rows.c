#include "whisper/decoder/kv_rows.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

steno_status whisper_kv_rows_init(whisper_kv_rows *k, int rows) {
    memset(k, 0, sizeof *k);
    if (rows < 1) return steno_fail(STENO_E_INVALID_ARG, "decoder rows: %d (must be >= 1)", rows);
    k->rows = rows;
    k->slot = malloc(sizeof(int) * (size_t)rows);
    k->next = malloc(sizeof(int) * (size_t)rows);
    k->used = malloc((size_t)rows);
    if (!k->slot || !k->next || !k->used) {
        whisper_kv_rows_free(k);
        return steno_fail(STENO_E_NOMEM, "decoder rows: out of memory");
    }
    for (int i = 0; i < rows; i++) k->slot[i] = i;
    return STENO_OK;
}

void whisper_kv_rows_free(whisper_kv_rows *k) {
    free(k->slot);
    free(k->next);
    free(k->used);
    memset(k, 0, sizeof *k);
}

steno_status whisper_kv_rows_reorder(whisper_kv_rows *k, const int *src, int B, whisper_kv_copy_fn copy,
                                     void *ctx) {
    const int R = k->rows;
    if (B < 1 || B > R) return steno_fail(STENO_E_INVALID_ARG, "reorder: %d rows of %d", B, R);
    for (int i = 0; i < B; i++)
        if (src[i] < 0 || src[i] >= R)
            return steno_fail(STENO_E_INVALID_ARG, "reorder: source row %d out of 0..%d", src[i], R - 1);
    memset(k->used, 0, (size_t)R);
    for (int i = 0; i < B; i++) { /* the first taker of each source renames its slot */
        const int s = k->slot[src[i]];
        k->next[i] = k->used[s] ? -1 : s;
        k->used[s] = 1;
    }
    int free_slot = 0;
    for (int i = 0; i < B; i++) {
        if (k->next[i] >= 0) continue;
        while (k->used[free_slot]) free_slot++; /* exists: B <= R slots, at most B used */
        copy(ctx, k->slot[src[i]], free_slot);
        k->next[i] = free_slot;
        k->used[free_slot] = 1;
    }
    for (int i = B; i < R; i++) { /* spare rows: the slots nobody took */
        while (k->used[free_slot]) free_slot++;
        k->next[i] = free_slot;
        k->used[free_slot] = 1;
    }
    memcpy(k->slot, k->next, sizeof(int) * (size_t)R);
    return STENO_OK;
}
