/* kvcache.h — the KV-cache contract of the LLM layers, and its two kinds: plain and rotating.
 *
 * One cache object per attention layer (as mlx-lm's list of caches). The contract (the same
 * operations as mlx-lm's KVCache / RotatingKVCache and the seed's Cache interface):
 *   offset            tokens processed so far = the absolute position of the next token;
 *   update_and_fetch  stores the keys and values of T new tokens (positions offset..offset+T-1)
 *                     and returns a view of everything attention may read: slots, the absolute
 *                     position held by each slot, the slots in temporal order, and the visibility
 *                     rule (window, keep) from which steno_kv_make_mask builds the attention mask of
 *                     the T new queries;
 *   trim / can_trim   rollback of the last n tokens (speculative decoding, regeneration);
 *   bytes_per_token, nbytes, state (raw storage for snapshots), reset.
 * Kinds:
 *   plain     slot = position; storage grows in steps of `step` slots (mlx-lm KVCache.step = 256).
 *             Rollback of any n <= offset.
 *   rotating  a ring: positions 0..keep-1 stay in slots 0..keep-1; position p >= keep lives in slot
 *             keep + (p - keep) mod R, R = ring slots. Query q sees keys p <= q with p < keep or
 *             q - p < max_size - keep, i.e. max_size keys including itself (mlx-lm RotatingKVCache
 *             with max_size/keep; llama.cpp's standard sliding window when keep = 0).
 *             R >= max_size - keep + reserve + (T_max - 1): a multi-token update of T tokens
 *             that crosses the ring boundary keeps, for each of its queries, that query's whole
 *             window (the role of mlx-lm's temporary concatenation in _update_concat; here the
 *             ring grows once, re-laying out the retained tokens, when a larger T arrives —
 *             llama.cpp likewise sizes sliding-window caches n_swa + n_ubatch). `reserve` extra
 *             slots retain history beyond the window so that a rollback after the ring has
 *             wrapped can restore exactly the window the next query needs: after single-token
 *             steps, rollback of up to reserve + 1 tokens always succeeds. trim(n) checks that
 *             every needed position is still held and otherwise refuses with an error naming the
 *             shortfall (it never silently attends to a shorter window).
 * Storage: rows of n_kv_heads × head_dim elements of `dtype` (f32, or f16 as llama.cpp's default
 * cache type). A future quantized kind (affine groups, TurboQuant) implements the same ops and
 * returns views whose dtype is a block type (kernels/quant.h): the attention kernel converts the
 * query to that type's vec_dot_type and calls its dot kernel, and dequantizes value rows, so it
 * needs no change.
 * Errors: STENO_E_NOMEM (growth), STENO_E_INVALID_ARG (trim beyond what is held, bad params).
 */
#ifndef STENO_LLM_KVCACHE_H
#define STENO_LLM_KVCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/attention.h"
#include "steno.h"

enum { STENO_KV_PLAIN = 0, STENO_KV_ROTATING = 1 };

/* steno_kv_view (what attention reads) and steno_kv_visible are defined in kernels/attention.h. */

typedef struct steno_kv_params {
    int kind;          /* STENO_KV_PLAIN or STENO_KV_ROTATING */
    int dtype;         /* STENO_T_F32 or STENO_T_F16 */
    int n_kv_heads;
    int head_dim_k, head_dim_v;
    int max_size;      /* rotating: keys visible per query, including keep (>= 1) */
    int keep;          /* rotating: leading positions never evicted (0 <= keep < max_size) */
    int reserve;       /* rotating: history retained beyond the window for rollback (>= 0) */
    int step;          /* plain: growth step in slots (<= 0: 256) */
    int max_tokens;    /* plain: refuse positions >= max_tokens (<= 0: no limit) */
} steno_kv_params;

/** Raw storage of a cache, for snapshots and tests (borrowed; valid until the next mutation). */
typedef struct steno_kv_state {
    int offset;
    int n_slots;
    const int32_t *pos;
    const uint8_t *k, *v;
    size_t k_row_bytes, v_row_bytes;
} steno_kv_state;

typedef struct steno_kv_cache steno_kv_cache;

typedef struct steno_kv_ops {
    const char *kind; /* "plain", "rotating" */
    int (*offset)(const steno_kv_cache *c);
    /** k: [T][n_kv_heads*head_dim_k], v: [T][n_kv_heads*head_dim_v] float32. */
    steno_status (*update_and_fetch)(steno_kv_cache *c, const float *k, const float *v, int T,
                                     steno_kv_view *view);
    /** 1 when trim(n) would succeed. */
    int (*can_trim)(const steno_kv_cache *c, int n);
    steno_status (*trim)(steno_kv_cache *c, int n);
    /** Bytes of K+V storage per cached token. */
    size_t (*bytes_per_token)(const steno_kv_cache *c);
    /** Bytes allocated for K+V now. */
    size_t (*nbytes)(const steno_kv_cache *c);
    void (*state)(const steno_kv_cache *c, steno_kv_state *st);
    void (*reset)(steno_kv_cache *c);
    void (*destroy)(steno_kv_cache *c);
} steno_kv_ops;

/** Common header of every cache kind (implementations embed it first). */
struct steno_kv_cache {
    const steno_kv_ops *ops;
    steno_kv_params p;
};

/** Creates a cache. Errors: STENO_E_INVALID_ARG (params), STENO_E_NOMEM. */
steno_status steno_kv_new(const steno_kv_params *p, steno_kv_cache **out);
void steno_kv_free(steno_kv_cache *c);

static inline int steno_kv_offset(const steno_kv_cache *c) { return c->ops->offset(c); }
static inline steno_status steno_kv_update_and_fetch(steno_kv_cache *c, const float *k, const float *v, int T,
                                                     steno_kv_view *view) {
    return c->ops->update_and_fetch(c, k, v, T, view);
}
static inline int steno_kv_can_trim(const steno_kv_cache *c, int n) { return c->ops->can_trim(c, n); }
static inline steno_status steno_kv_trim(steno_kv_cache *c, int n) { return c->ops->trim(c, n); }
static inline size_t steno_kv_bytes_per_token(const steno_kv_cache *c) { return c->ops->bytes_per_token(c); }

/** Attention mask of the T queries at positions q0..q0+T-1 over view's slots:
 *  mask[t * n_slots + s] = 0 (visible) or -INFINITY. mask holds T × view->n_slots floats. */
void steno_kv_make_mask(const steno_kv_view *view, int q0, int T, float *mask);

#endif
